/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Driver of tests/integration/addr_sa.sh, run attached to a simulated
 * host (fabsim run HOST -- addr_sa_tool ...):
 *
 *   register IP...    ServiceRecords mapping each IP to this port's GID
 *   unregister IP...  delete them
 *   resolve IP        print the GID the SA has for IP
 *   file IP|NAME      through madcm_addrs_* ($MADCM_ADDR_FILE, netlink):
 *                     an IP's GID, or a name's addresses, one a line
 *   local             this port's own addresses (madcm_addrs_ip), IPv4
 *                     then IPv6
 *   canon GID         GID in the short text form the others print
 *
 * Exit status 0, 2 when the address or name is unknown (-ENOENT), 1 on
 * any other error.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/addr.h"
#include "lib/addr_sa.h"
#include "sa/client.h"

static int parse_ip(const char *s, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		ss->ss_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

static void print_gid(const uint8_t gid[16])
{
	char text[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, gid, text, sizeof(text));
	printf("%s\n", text);
}

static void print_addr(const struct sockaddr_storage *ss)
{
	char text[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, text, sizeof(text));
	else
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, text,
			  sizeof(text));
	printf("%s\n", text);
}

static int status(int rc, const char *what, const char *arg)
{
	if (rc == 0)
		return 0;
	fprintf(stderr, "addr_sa_tool %s %s: %s\n", what, arg ? arg : "",
		rc == -ENOENT ? "unknown" : strerror(-rc));
	return rc == -ENOENT ? 2 : 1;
}

static int cmd_file(const char *arg)
{
	struct madcm_addrs *a;
	struct sockaddr_storage ss, out[16];
	uint8_t gid[16];
	char err[256];
	int rc, n;

	rc = madcm_addrs_open(&a, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "addr_sa_tool: %s\n", err);
		return 1;
	}
	if (parse_ip(arg, &ss) == 0) {
		rc = madcm_addrs_gid(a, (struct sockaddr *)&ss, gid);
		if (rc == 0)
			print_gid(gid);
	} else {
		n = madcm_addrs_name(a, arg, AF_UNSPEC, out, 16);
		for (int i = 0; i < n; i++)
			print_addr(&out[i]);
		rc = n > 0 ? 0 : n == 0 ? -ENOENT : n;
	}
	madcm_addrs_close(a);
	return status(rc, "file", arg);
}

int main(int argc, char **argv)
{
	struct sa_client_params p = {0};
	struct mad_port_attr pa;
	struct sa_client *c;
	struct sockaddr_storage ss;
	const char *cmd;
	uint8_t gid[16];
	int rc = 0, ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: addr_sa_tool register|unregister|resolve|file|local ...\n");
		return 1;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "file"))
		return argc == 3 ? cmd_file(argv[2]) : 1;
	if (!strcmp(cmd, "canon")) {
		if (argc != 3 || inet_pton(AF_INET6, argv[2], gid) != 1)
			return 1;
		print_gid(gid);
		return 0;
	}

	p.timeout_ms = 500;
	p.retries = 3;
	rc = sa_client_open(&c, &p);
	if (rc)
		return status(rc, "open", "the first active port");
	sa_client_port(c, &pa);

	if (!strcmp(cmd, "local")) {
		struct madcm_addrs *a;
		char err[256];

		rc = madcm_addrs_open(&a, err, sizeof(err));
		if (rc == 0) {
			if (madcm_addrs_ip(a, pa.gid, AF_INET, &ss) == 0)
				print_addr(&ss);
			if (madcm_addrs_ip(a, pa.gid, AF_INET6, &ss) == 0)
				print_addr(&ss);
			rc = madcm_addrs_ip(a, pa.gid, AF_UNSPEC, &ss);
			madcm_addrs_close(a);
		} else {
			fprintf(stderr, "addr_sa_tool: %s\n", err);
		}
		ret = status(rc, cmd, NULL);
		goto out;
	}
	for (int i = 2; i < argc; i++) {
		if (parse_ip(argv[i], &ss)) {
			fprintf(stderr, "addr_sa_tool: '%s' is not an IP address\n", argv[i]);
			ret = 1;
			break;
		}
		if (!strcmp(cmd, "register"))
			rc = madcm_addr_sa_register(c, (struct sockaddr *)&ss, pa.gid, pa.pkey0,
						    0xffffffffu);
		else if (!strcmp(cmd, "unregister"))
			rc = madcm_addr_sa_unregister(c, (struct sockaddr *)&ss, pa.gid, pa.pkey0);
		else if (!strcmp(cmd, "resolve")) {
			rc = madcm_addr_sa_resolve(c, (struct sockaddr *)&ss, gid, NULL);
			if (rc == 0)
				print_gid(gid);
		} else {
			fprintf(stderr, "addr_sa_tool: unknown command '%s'\n", cmd);
			ret = 1;
			break;
		}
		ret = status(rc, cmd, argv[i]);
		if (ret)
			break;
	}
out:
	sa_client_close(c);
	return ret;
}
