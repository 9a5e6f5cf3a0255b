/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm path [SRC] DST: PathRecords from the SA, printed as `saquery -p`
 * prints them (same field names and values) or as JSON with the IBA
 * names.  SRC and DST are GIDs, LIDs or names from the address file;
 * without SRC the local port is the source.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_wire.h"
#include "tools/sa_cli.h"

#define MAX_PATHS 256

enum {
	OPT_PKEY = 0x200,
	OPT_SL,
	OPT_SERVICE_ID,
	OPT_QOS_CLASS,
	OPT_MTU,
	OPT_RATE,
	OPT_REVERSIBLE,
	OPT_NUMB_PATH,
	OPT_GET,
	OPT_TCLASS,
	OPT_FLOW_LABEL,
	OPT_PLT,
	OPT_HOP_LIMIT,
};

/* clang-format off */
static void usage(FILE *out)
{
	fputs("Usage: madcm path [OPTIONS] [SRC] DST\n"
	      "Ask the SA for the paths from SRC (default: this port) to DST, each a GID,\n"
	      "a LID or a name from the address file; print them as saquery -p does.\n"
	      "\n"
	      SA_CLI_OPTS_HELP
	      "      --pkey P       only paths in partition P\n"
	      "      --sl N         only paths on service level N\n"
	      "      --service-id ID, --qos-class N, --tclass N, --flow-label N,\n"
	      "      --hop-limit N  match these components too\n"
	      "      --mtu [SEL]N   MTU enum (1=256 .. 5=4096); SEL one of > < = (default =)\n"
	      "      --rate [SEL]N  rate enum (e.g. 3 = 10 Gb/s); SEL as for --mtu\n"
	      "      --packet-life-time [SEL]N\n"
	      "      --reversible   only reversible paths\n"
	      "      --numb-path N  at most N paths per direction (NumbPath component)\n"
	      "      --get          one SA Get instead of a GetTable\n",
	      out);
}
/* clang-format on */

/* "[>|<|=]N" into selector and value. */
static bool sel_value(const char *s, uint8_t *sel, uint8_t *val)
{
	uint64_t v;

	*sel = SA_SEL_EQ;
	if (*s == '>') {
		*sel = SA_SEL_GT;
		s++;
	} else if (*s == '<') {
		*sel = SA_SEL_LT;
		s++;
	} else if (*s == '=') {
		s++;
	} else if (!strcmp(s, "max")) {
		*sel = SA_SEL_MAX;
		*val = 0;
		return true;
	}
	if (!sa_cli_number(s, 63, &v))
		return false;
	*val = (uint8_t)v;
	return true;
}

/* The saquery -p block: packed bytes printed as the SA sends them. */
static void print_saquery(const struct sa_path *p)
{
	char dgid[64], sgid[64];
	uint32_t hop_flow_raw =
	    ((uint32_t)p->raw_traffic << 31) | (p->flow_label << 8) | p->hop_limit;

	sa_cli_format_gid(dgid, p->dgid);
	sa_cli_format_gid(sgid, p->sgid);
	printf("PathRecord dump:\n"
	       "\t\tservice_id..............0x%016" PRIx64 "\n"
	       "\t\tdgid....................%s\n"
	       "\t\tsgid....................%s\n"
	       "\t\tdlid....................%u\n"
	       "\t\tslid....................%u\n"
	       "\t\thop_flow_raw............0x%X\n"
	       "\t\ttclass..................0x%X\n"
	       "\t\tnum_path_revers.........0x%X\n"
	       "\t\tpkey....................0x%X\n"
	       "\t\tqos_class...............0x%X\n"
	       "\t\tsl......................0x%X\n"
	       "\t\tmtu.....................0x%X\n"
	       "\t\trate....................0x%X\n"
	       "\t\tpkt_life................0x%X\n"
	       "\t\tpreference..............0x%X\n"
	       "\t\tresv2...................0x000000000000\n",
	       p->service_id, dgid, sgid, p->dlid, p->slid, hop_flow_raw, p->tclass,
	       ((unsigned)p->reversible << 7) | p->numb_path, p->pkey, p->qos_class, p->sl,
	       ((unsigned)p->mtu_selector << 6) | p->mtu,
	       ((unsigned)p->rate_selector << 6) | p->rate,
	       ((unsigned)p->packet_life_time_selector << 6) | p->packet_life_time, p->preference);
}

static void set_end(struct sa_path_query *q, const struct sa_cli_addr *a, bool src)
{
	if (a->is_gid) {
		memcpy(src ? q->rec.sgid : q->rec.dgid, a->gid, 16);
		q->comp_mask |= src ? SA_PR_COMP_SGID : SA_PR_COMP_DGID;
	} else {
		if (src)
			q->rec.slid = a->lid;
		else
			q->rec.dlid = a->lid;
		q->comp_mask |= src ? SA_PR_COMP_SLID : SA_PR_COMP_DLID;
	}
}

int cmd_path(int argc, char **argv)
{
	static const struct option longopts[] = {
	    SA_CLI_LONG_OPTS,
	    {"pkey", required_argument, NULL, OPT_PKEY},
	    {"sl", required_argument, NULL, OPT_SL},
	    {"service-id", required_argument, NULL, OPT_SERVICE_ID},
	    {"qos-class", required_argument, NULL, OPT_QOS_CLASS},
	    {"tclass", required_argument, NULL, OPT_TCLASS},
	    {"flow-label", required_argument, NULL, OPT_FLOW_LABEL},
	    {"hop-limit", required_argument, NULL, OPT_HOP_LIMIT},
	    {"mtu", required_argument, NULL, OPT_MTU},
	    {"rate", required_argument, NULL, OPT_RATE},
	    {"packet-life-time", required_argument, NULL, OPT_PLT},
	    {"reversible", no_argument, NULL, OPT_REVERSIBLE},
	    {"numb-path", required_argument, NULL, OPT_NUMB_PATH},
	    {"get", no_argument, NULL, OPT_GET},
	    {0}};
	struct sa_cli_opts o;
	struct sa_path_query q;
	struct sa_cli_addr src, dst;
	struct mad_port_attr pa;
	struct sa_client *c;
	struct sa_path *paths;
	uint16_t st = 0;
	unsigned n = 0;
	uint64_t v;
	int opt, rc;

	sa_cli_opts_init(&o);
	memset(&q, 0, sizeof(q));
	q.table = true;
	q.no_cache = true;
	while ((opt = sa_cli_getopt(&o, argc, argv, longopts, "path", usage)) >= 0) {
		switch (opt) {
		case OPT_PKEY:
			if (!sa_cli_number(optarg, 0xffff, &v))
				goto bad;
			q.rec.pkey = (uint16_t)v;
			q.comp_mask |= SA_PR_COMP_P_KEY;
			break;
		case OPT_SL:
			if (!sa_cli_number(optarg, 15, &v))
				goto bad;
			q.rec.sl = (uint8_t)v;
			q.comp_mask |= SA_PR_COMP_SL;
			break;
		case OPT_SERVICE_ID:
			if (!sa_cli_number(optarg, UINT64_MAX, &v))
				goto bad;
			q.rec.service_id = v;
			q.comp_mask |= SA_PR_COMP_SERVICE_ID;
			break;
		case OPT_QOS_CLASS:
			if (!sa_cli_number(optarg, 0xfff, &v))
				goto bad;
			q.rec.qos_class = (uint16_t)v;
			q.comp_mask |= SA_PR_COMP_QOS_CLASS;
			break;
		case OPT_TCLASS:
			if (!sa_cli_number(optarg, 0xff, &v))
				goto bad;
			q.rec.tclass = (uint8_t)v;
			q.comp_mask |= SA_PR_COMP_TCLASS;
			break;
		case OPT_FLOW_LABEL:
			if (!sa_cli_number(optarg, 0xfffff, &v))
				goto bad;
			q.rec.flow_label = (uint32_t)v;
			q.comp_mask |= SA_PR_COMP_FLOW_LABEL;
			break;
		case OPT_HOP_LIMIT:
			if (!sa_cli_number(optarg, 0xff, &v))
				goto bad;
			q.rec.hop_limit = (uint8_t)v;
			q.comp_mask |= SA_PR_COMP_HOP_LIMIT;
			break;
		case OPT_MTU:
			if (!sel_value(optarg, &q.rec.mtu_selector, &q.rec.mtu))
				goto bad;
			q.comp_mask |= SA_PR_COMP_MTU_SELECTOR | SA_PR_COMP_MTU;
			break;
		case OPT_RATE:
			if (!sel_value(optarg, &q.rec.rate_selector, &q.rec.rate))
				goto bad;
			q.comp_mask |= SA_PR_COMP_RATE_SELECTOR | SA_PR_COMP_RATE;
			break;
		case OPT_PLT:
			if (!sel_value(optarg, &q.rec.packet_life_time_selector,
				       &q.rec.packet_life_time))
				goto bad;
			q.comp_mask |=
			    SA_PR_COMP_PACKET_LIFE_TIME_SELECTOR | SA_PR_COMP_PACKET_LIFE_TIME;
			break;
		case OPT_REVERSIBLE:
			q.rec.reversible = true;
			q.comp_mask |= SA_PR_COMP_REVERSIBLE;
			break;
		case OPT_NUMB_PATH:
			if (!sa_cli_number(optarg, 127, &v))
				goto bad;
			q.rec.numb_path = (uint8_t)v;
			q.comp_mask |= SA_PR_COMP_NUMB_PATH;
			break;
		case OPT_GET:
			q.table = false;
			break;
		}
	}
	if (opt != SA_CLI_END)
		return sa_cli_exit(opt);
	if (argc - optind < 1 || argc - optind > 2) {
		usage(stderr);
		return 2;
	}
	if (sa_cli_addr(&o, argv[argc - 1], &dst, "path"))
		return 2;
	if (argc - optind == 2 && sa_cli_addr(&o, argv[optind], &src, "path"))
		return 2;
	if (sa_cli_open(&o, &c, &pa, "path"))
		return 1;
	if (argc - optind == 1) {
		memset(&src, 0, sizeof(src));
		src.is_gid = dst.is_gid;
		memcpy(src.gid, pa.gid, 16);
		src.lid = pa.lid;
	}
	set_end(&q, &src, true);
	set_end(&q, &dst, false);
	paths = calloc(MAX_PATHS, sizeof(*paths));
	if (!paths) {
		sa_client_close(c);
		return 1;
	}
	rc = sa_path_query(c, &q, paths, MAX_PATHS, &n, &st);
	if (rc) {
		fprintf(stderr, "madcm path: %s", sa_cli_strerror(rc));
		if (st)
			fprintf(stderr, " (MAD status 0x%04x)", st);
		fputc('\n', stderr);
	}
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		if (o.json) {
			uint8_t rec[SA_PR_SIZE];

			sa_path_encode(&paths[i], rec);
			sa_cli_print_record(stdout, &sa_pr_layout, rec, true);
		} else {
			print_saquery(&paths[i]);
		}
	}
	free(paths);
	sa_client_close(c);
	if (rc == 0 && n == 0) {
		fprintf(stderr, "madcm path: no path\n");
		return 1;
	}
	return rc ? 1 : 0;
bad:
	return sa_cli_bad_value("path", optarg);
}
