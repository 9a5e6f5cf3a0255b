/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm service register|query|delete: ServiceRecord Set, GetTable and
 * Delete.  A record is named by its ServiceID, ServiceGID (default: this
 * port) and ServiceP_Key (default: this port's P_Key at index 0).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_wire.h"
#include "tools/sa_cli.h"

enum { OPT_ID = 0x200, OPT_NAME, OPT_GID, OPT_PKEY, OPT_LEASE, OPT_DATA8, OPT_DATA64 };

/* clang-format off */
static void usage(FILE *out)
{
	fputs("Usage: madcm service register --id ID [--name NAME] [OPTIONS]\n"
	      "       madcm service query [--id ID] [--name NAME] [--gid GID] [OPTIONS]\n"
	      "       madcm service delete --id ID [OPTIONS]\n"
	      "Register, look up or remove a ServiceRecord at the SA.\n"
	      "\n"
	      SA_CLI_OPTS_HELP
	      "      --id ID        ServiceID (64 bits)\n"
	      "      --name NAME    ServiceName (up to 64 bytes)\n"
	      "      --gid GID      ServiceGID (register/delete default: this port)\n"
	      "      --pkey P       ServiceP_Key (default: this port's P_Key at index 0)\n"
	      "      --lease S      ServiceLease in seconds (default: infinite)\n"
	      "      --data8 I=V    ServiceData8[I] (0..15), repeatable\n"
	      "      --data64 I=V   ServiceData64[I] (0..1), repeatable\n",
	      out);
}
/* clang-format on */

static bool index_value(const char *s, unsigned max_i, uint64_t max_v, unsigned *i, uint64_t *v)
{
	char buf[64];
	char *eq;
	uint64_t x;

	if (strlen(s) >= sizeof(buf))
		return false;
	strcpy(buf, s);
	eq = strchr(buf, '=');
	if (!eq)
		return false;
	*eq = '\0';
	if (!sa_cli_number(buf, max_i, &x) || !sa_cli_number(eq + 1, max_v, v))
		return false;
	*i = (unsigned)x;
	return true;
}

static void print_service(const struct sa_service *s, bool json)
{
	uint8_t rec[SA_SR_SIZE];

	sa_service_encode(s, rec);
	sa_cli_print_record(stdout, &sa_sr_layout, rec, json);
}

int cmd_service(int argc, char **argv)
{
	static const struct option longopts[] = {SA_CLI_LONG_OPTS,
						 {"id", required_argument, NULL, OPT_ID},
						 {"name", required_argument, NULL, OPT_NAME},
						 {"gid", required_argument, NULL, OPT_GID},
						 {"pkey", required_argument, NULL, OPT_PKEY},
						 {"lease", required_argument, NULL, OPT_LEASE},
						 {"data8", required_argument, NULL, OPT_DATA8},
						 {"data64", required_argument, NULL, OPT_DATA64},
						 {0}};
	struct sa_cli_opts o;
	struct sa_service s;
	struct mad_port_attr pa;
	struct sa_client *c;
	const char *verb;
	bool have_gid = false, have_pkey = false;
	uint64_t mask = 0, v;
	unsigned idx;
	int opt, rc;

	sa_cli_opts_init(&o);
	memset(&s, 0, sizeof(s));
	s.lease = SA_SR_LEASE_INFINITE;
	while ((opt = sa_cli_getopt(&o, argc, argv, longopts, "service", usage)) >= 0) {
		switch (opt) {
		case OPT_ID:
			if (!sa_cli_number(optarg, UINT64_MAX, &v))
				goto bad;
			s.id = v;
			mask |= SA_SR_COMP_SERVICE_ID;
			break;
		case OPT_NAME:
			if (strlen(optarg) > SA_SR_NAME_LEN)
				goto bad;
			strcpy(s.name, optarg);
			mask |= SA_SR_COMP_SERVICE_NAME;
			break;
		case OPT_GID:
			if (!sa_cli_gid(optarg, s.gid))
				goto bad;
			have_gid = true;
			break;
		case OPT_PKEY:
			if (!sa_cli_number(optarg, 0xffff, &v))
				goto bad;
			s.pkey = (uint16_t)v;
			have_pkey = true;
			break;
		case OPT_LEASE:
			if (!sa_cli_number(optarg, UINT32_MAX, &v))
				goto bad;
			s.lease = (uint32_t)v;
			break;
		case OPT_DATA8:
			if (!index_value(optarg, 15, 0xff, &idx, &v))
				goto bad;
			s.data8[idx] = (uint8_t)v;
			mask |= SA_SR_COMP_SERVICE_DATA8(idx);
			break;
		case OPT_DATA64:
			if (!index_value(optarg, 1, UINT64_MAX, &idx, &v))
				goto bad;
			s.data64[idx] = v;
			mask |= SA_SR_COMP_SERVICE_DATA64(idx);
			break;
		}
	}
	if (opt != SA_CLI_END)
		return sa_cli_exit(opt);
	if (argc - optind != 1) {
		usage(stderr);
		return 2;
	}
	verb = argv[optind];
	if (strcmp(verb, "register") && strcmp(verb, "query") && strcmp(verb, "delete")) {
		fprintf(stderr, "madcm service: unknown action '%s'\n", verb);
		return 2;
	}
	if (strcmp(verb, "query") && !(mask & SA_SR_COMP_SERVICE_ID)) {
		fprintf(stderr, "madcm service %s: --id is required\n", verb);
		return 2;
	}
	if (sa_cli_open(&o, &c, &pa, "service"))
		return 1;
	if (!have_gid && strcmp(verb, "query"))
		memcpy(s.gid, pa.gid, 16);
	if (!have_pkey)
		s.pkey = sa_cli_port_pkey(&pa);
	if (have_gid || strcmp(verb, "query"))
		mask |= SA_SR_COMP_SERVICE_GID;
	if (have_pkey || strcmp(verb, "query"))
		mask |= SA_SR_COMP_SERVICE_P_KEY;

	if (!strcmp(verb, "register")) {
		rc = sa_service_register(c, &s, mask | SA_SR_COMP_SERVICE_LEASE);
	} else if (!strcmp(verb, "delete")) {
		rc = sa_service_delete(c, &s, mask);
	} else {
		struct sa_service *all;
		unsigned n;

		rc = sa_service_query(c, &s, mask, &all, &n);
		if (rc == 0 && n == 0)
			rc = -ENOENT;
		for (unsigned i = 0; rc == 0 && i < n; i++)
			print_service(&all[i], o.json);
		free(all);
	}
	if (rc)
		fprintf(stderr, "madcm service %s: %s\n", verb, sa_cli_strerror(rc));
	sa_client_close(c);
	return rc ? 1 : 0;
bad:
	return sa_cli_bad_value("service", optarg);
}
