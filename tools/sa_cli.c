/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Shared parts of the SA subcommands (see sa_cli.h). */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/layout_print.h"
#include "tools/sa_cli.h"

void sa_cli_opts_init(struct sa_cli_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout_ms = 1000;
	o->retries = 3;
}

bool sa_cli_number(const char *s, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end || x > max)
		return false;
	*v = x;
	return true;
}

int sa_cli_bad_value(const char *cmd, const char *arg)
{
	fprintf(stderr, "madcm %s: bad value '%s'\n", cmd, arg ? arg : "");
	return 2;
}

/* One common option: 1 when handled, 0 when not ours, -1 on a bad value. */
static int common_opt(struct sa_cli_opts *o, int c, const char *arg, const char *cmd)
{
	uint64_t v;

	switch (c) {
	case 'C':
		o->ca = arg;
		return 1;
	case 'P':
		if (!sa_cli_number(arg, 254, &v) || v == 0)
			goto bad;
		o->port = (int)v;
		return 1;
	case SA_CLI_OPT_TIMEOUT:
		if (!sa_cli_number(arg, 3600000, &v) || v == 0)
			goto bad;
		o->timeout_ms = (unsigned)v;
		return 1;
	case SA_CLI_OPT_RETRIES:
		if (!sa_cli_number(arg, 100, &v))
			goto bad;
		o->retries = (unsigned)v;
		return 1;
	case SA_CLI_OPT_JSON:
		o->json = true;
		return 1;
	case SA_CLI_OPT_HOSTS:
		o->hosts = arg;
		return 1;
	default:
		return 0;
	}
bad:
	sa_cli_bad_value(cmd, arg);
	return -1;
}

int sa_cli_getopt(struct sa_cli_opts *o, int argc, char **argv, const struct option *longopts,
		  const char *cmd, void (*usage)(FILE *out))
{
	int opt;

	while ((opt = getopt_long(argc, argv, SA_CLI_SHORT_OPTS, longopts, NULL)) != -1) {
		switch (common_opt(o, opt, optarg, cmd)) {
		case 1:
			continue;
		case -1:
			return SA_CLI_USAGE;
		}
		if (opt == 'h') {
			usage(stdout);
			return SA_CLI_HELP;
		}
		if (opt == '?' || opt == ':') {
			usage(stderr);
			return SA_CLI_USAGE;
		}
		return opt;
	}
	return SA_CLI_END;
}

int sa_cli_open(const struct sa_cli_opts *o, struct sa_client **c, struct mad_port_attr *port,
		const char *cmd)
{
	struct sa_client_params p = {0};
	int rc;

	p.ca = o->ca;
	p.port = o->port;
	p.timeout_ms = o->timeout_ms;
	p.retries = o->retries;
	rc = sa_client_open(c, &p);
	if (rc) {
		fprintf(stderr, "madcm %s: cannot open %s port %d: %s\n", cmd,
			o->ca ? o->ca : "(first active)", o->port, strerror(-rc));
		return rc;
	}
	if (port)
		sa_client_port(*c, port);
	return 0;
}

bool sa_cli_gid(const char *s, uint8_t gid[16])
{
	return s && strchr(s, ':') && inet_pton(AF_INET6, s, gid) == 1;
}

void sa_cli_format_gid(char out[64], const uint8_t gid[16])
{
	if (!inet_ntop(AF_INET6, gid, out, 64))
		strcpy(out, "?");
}

/* Look `name` up in the address file; 0, -ENOENT, or -errno of fopen. */
static int hosts_lookup(const struct sa_cli_opts *o, const char *name, uint8_t gid[16],
			const char **path_out)
{
	const char *path = o->hosts ? o->hosts : getenv("MADCM_HOSTS");
	char line[512];
	FILE *f;
	int rc = -ENOENT;

	if (!path || !*path)
		path = SA_CLI_DEFAULT_HOSTS;
	*path_out = path;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *n, *g, *save;

		if (hash)
			*hash = '\0';
		n = strtok_r(line, " \t\r\n", &save);
		g = n ? strtok_r(NULL, " \t\r\n", &save) : NULL;
		if (!n || !g || strcmp(n, name))
			continue;
		if (sa_cli_gid(g, gid))
			rc = 0;
		else
			rc = -EINVAL;
		break;
	}
	fclose(f);
	return rc;
}

int sa_cli_addr(const struct sa_cli_opts *o, const char *s, struct sa_cli_addr *a, const char *cmd)
{
	const char *path;
	uint64_t v;
	int rc;

	memset(a, 0, sizeof(*a));
	if (sa_cli_gid(s, a->gid)) {
		a->is_gid = true;
		return 0;
	}
	if (isdigit((unsigned char)s[0]) && sa_cli_number(s, 0xffff, &v)) {
		if (v == 0 || v >= 0xc000) {
			fprintf(stderr, "madcm %s: '%s' is not a unicast LID\n", cmd, s);
			return -EINVAL;
		}
		a->lid = (uint16_t)v;
		return 0;
	}
	rc = hosts_lookup(o, s, a->gid, &path);
	if (rc == 0) {
		a->is_gid = true;
		return 0;
	}
	if (rc == -EINVAL)
		fprintf(stderr, "madcm %s: %s: bad GID for '%s'\n", cmd, path, s);
	else if (rc == -ENOENT)
		fprintf(stderr, "madcm %s: '%s' is neither a GID, a LID nor a name in %s\n", cmd, s,
			path);
	else
		fprintf(stderr, "madcm %s: '%s' is not a GID or LID, and %s: %s\n", cmd, s, path,
			strerror(-rc));
	return rc ? rc : -EINVAL;
}

void sa_cli_print_record(FILE *out, const struct mad_layout *l, const uint8_t *rec, bool json)
{
	struct layout_print_opts po = {0};

	po.json = json;
	po.first = true;
	if (json) {
		fputc('{', out);
		layout_print(out, l, rec, l->size, &po);
		fputs("}\n", out);
	} else {
		po.indent = 2;
		fprintf(out, "%s:\n", l->name);
		layout_print(out, l, rec, l->size, &po);
	}
}

const char *sa_cli_strerror(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such record (SA status: no records)";
	case -ETIMEDOUT:
		return "no answer from the SA (timed out after all retries)";
	case -EINVAL:
		return "the SA refused the request as invalid";
	case -EBUSY:
		return "the SA is busy or out of resources";
	case -EACCES:
		return "the SA denied the request";
	case -E2BIG:
		return "too many records for a Get";
	case -ENETDOWN:
		return "no SM known on this port (SM LID 0)";
	default:
		return strerror(-err);
	}
}
