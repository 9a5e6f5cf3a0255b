/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm mcast join|leave|show [MGID]: MCMemberRecord Set (create or join),
 * Delete (leave) and GetTable, for this port.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_wire.h"
#include "tools/sa_cli.h"

/* rdma_cm's Q_Key for UDP port space groups (librdmacm RDMA_UDP_QKEY). */
#define DEFAULT_QKEY 0x01234567u

enum { OPT_STATE = 0x200, OPT_QKEY, OPT_PKEY, OPT_SL, OPT_TCLASS, OPT_FLOW_LABEL, OPT_SCOPE };

/* clang-format off */
static void usage(FILE *out)
{
	fputs("Usage: madcm mcast join|leave MGID [OPTIONS]\n"
	      "       madcm mcast show [MGID] [OPTIONS]\n"
	      "Join (creating when needed) or leave a multicast group for this port, or list\n"
	      "the SA's member records (all groups, or one).\n"
	      "\n"
	      SA_CLI_OPTS_HELP
	      "      --state S      full (default), nonmember, sendonly (send-only non member),\n"
	      "                     sendonlyfull (send-only full member)\n"
	      "      --qkey Q       Q_Key when creating (default 0x01234567)\n"
	      "      --pkey P       P_Key (default: this port's P_Key at index 0)\n"
	      "      --sl N, --tclass N, --flow-label N   when creating (default 0)\n",
	      out);
}
/* clang-format on */

static int parse_state(const char *s, uint8_t *st)
{
	if (!strcmp(s, "full"))
		*st = SA_JOIN_FULL_MEMBER;
	else if (!strcmp(s, "nonmember") || !strcmp(s, "non"))
		*st = SA_JOIN_NON_MEMBER;
	else if (!strcmp(s, "sendonly") || !strcmp(s, "sendonlynonmember"))
		*st = SA_JOIN_SEND_ONLY_NON_MEMBER;
	else if (!strcmp(s, "sendonlyfull"))
		*st = SA_JOIN_SEND_ONLY_FULL_MEMBER;
	else
		return -EINVAL;
	return 0;
}

static void print_member(const struct sa_mcmember *m, bool json)
{
	uint8_t rec[SA_MCMR_SIZE];

	sa_mcmember_encode(m, rec);
	sa_cli_print_record(stdout, &sa_mcmr_layout, rec, json);
}

int cmd_mcast(int argc, char **argv)
{
	static const struct option longopts[] = {
	    SA_CLI_LONG_OPTS,
	    {"state", required_argument, NULL, OPT_STATE},
	    {"qkey", required_argument, NULL, OPT_QKEY},
	    {"pkey", required_argument, NULL, OPT_PKEY},
	    {"sl", required_argument, NULL, OPT_SL},
	    {"tclass", required_argument, NULL, OPT_TCLASS},
	    {"flow-label", required_argument, NULL, OPT_FLOW_LABEL},
	    {0}};
	struct sa_cli_opts o;
	struct sa_mcmember m, out;
	struct mad_port_attr pa;
	struct sa_client *c;
	const char *verb;
	bool have_mgid = false, have_pkey = false;
	uint64_t mask, v;
	int opt, rc;

	sa_cli_opts_init(&o);
	memset(&m, 0, sizeof(m));
	m.join_state = SA_JOIN_FULL_MEMBER;
	m.qkey = DEFAULT_QKEY;
	while ((opt = sa_cli_getopt(&o, argc, argv, longopts, "mcast", usage)) >= 0) {
		switch (opt) {
		case OPT_STATE:
			if (parse_state(optarg, &m.join_state))
				goto bad;
			break;
		case OPT_QKEY:
			if (!sa_cli_number(optarg, UINT32_MAX, &v))
				goto bad;
			m.qkey = (uint32_t)v;
			break;
		case OPT_PKEY:
			if (!sa_cli_number(optarg, 0xffff, &v))
				goto bad;
			m.pkey = (uint16_t)v;
			have_pkey = true;
			break;
		case OPT_SL:
			if (!sa_cli_number(optarg, 15, &v))
				goto bad;
			m.sl = (uint8_t)v;
			break;
		case OPT_TCLASS:
			if (!sa_cli_number(optarg, 0xff, &v))
				goto bad;
			m.tclass = (uint8_t)v;
			break;
		case OPT_FLOW_LABEL:
			if (!sa_cli_number(optarg, 0xfffff, &v))
				goto bad;
			m.flow_label = (uint32_t)v;
			break;
		}
	}
	if (opt != SA_CLI_END)
		return sa_cli_exit(opt);
	if (argc - optind < 1 || argc - optind > 2) {
		usage(stderr);
		return 2;
	}
	verb = argv[optind];
	if (argc - optind == 2) {
		if (!sa_cli_gid(argv[optind + 1], m.mgid)) {
			fprintf(stderr, "madcm mcast: '%s' is not a GID\n", argv[optind + 1]);
			return 2;
		}
		have_mgid = true;
	}
	if (strcmp(verb, "show") && !have_mgid) {
		usage(stderr);
		return 2;
	}
	if (strcmp(verb, "join") && strcmp(verb, "leave") && strcmp(verb, "show")) {
		fprintf(stderr, "madcm mcast: unknown action '%s'\n", verb);
		return 2;
	}
	if (sa_cli_open(&o, &c, &pa, "mcast"))
		return 1;
	memcpy(m.port_gid, pa.gid, 16);
	if (!have_pkey)
		m.pkey = sa_cli_port_pkey(&pa);

	if (!strcmp(verb, "join")) {
		struct sa_mcmember *cur;
		unsigned ncur = 0;

		/*
		 * A create must carry Q_Key, P_Key, SL, FlowLabel and TClass
		 * (IBA 15.2.5.17, as OpenSM checks it); a join to an existing
		 * group must not contradict them, so it names only the group,
		 * the port and the join state.
		 */
		mask = SA_MCMR_COMP_MGID | SA_MCMR_COMP_PORT_GID | SA_MCMR_COMP_JOIN_STATE;
		if (sa_mcmember_query(c, &m, SA_MCMR_COMP_MGID, &cur, &ncur) == 0)
			free(cur);
		if (ncur == 0)
			mask |= SA_MCMR_COMP_Q_KEY | SA_MCMR_COMP_P_KEY | SA_MCMR_COMP_SL |
				SA_MCMR_COMP_FLOW_LABEL | SA_MCMR_COMP_TCLASS;
		rc = sa_mcmember_join(c, &m, mask, &out);
		if (rc == 0)
			print_member(&out, o.json);
	} else if (!strcmp(verb, "leave")) {
		mask = SA_MCMR_COMP_MGID | SA_MCMR_COMP_PORT_GID | SA_MCMR_COMP_JOIN_STATE;
		rc = sa_mcmember_leave(c, &m, mask, &out);
	} else {
		struct sa_mcmember *all;
		unsigned n;

		mask = have_mgid ? SA_MCMR_COMP_MGID : 0;
		rc = sa_mcmember_query(c, &m, mask, &all, &n);
		for (unsigned i = 0; rc == 0 && i < n; i++)
			print_member(&all[i], o.json);
		if (rc == 0)
			free(all);
	}
	if (rc)
		fprintf(stderr, "madcm mcast %s: %s\n", verb, sa_cli_strerror(rc));
	sa_client_close(c);
	return rc ? 1 : 0;
bad:
	return sa_cli_bad_value("mcast", optarg);
}
