/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm torture: an adversarial CM peer.  Runs the cases of
 * tools/torture_cases.c against the CM of TARGET (a port GID, LID or
 * address-file name) and says for each whether the target answered as IBA
 * vol 1 ch. 12 and the kernel's ib_cm require, deviated, stayed silent, or
 * died.  See madcm-torture(1) and docs/cm-torture.md.
 */
#include "config.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_wire.h"
#include "tools/sa_cli.h"
#include "tools/torture.h"

#define TT_DEFAULT_SID 0x0000000001061C06ull	/* rdma_cm TCP port 7174: rping */
#define TT_DEFAULT_UNUSED 0x0000000001060001ull /* rdma_cm TCP port 1 */

static const char *const verdict_names[] = {
    [TT_AS_REQUIRED] = "as-required", [TT_DEVIATED] = "deviated", [TT_SILENT] = "silent",
    [TT_DIED] = "target-died",	      [TT_SKIPPED] = "skipped",
};

static void usage(FILE *out)
{
	fputs("Usage: madcm torture [OPTIONS] TARGET\n"
	      "\n"
	      "Run adversarial CM cases against the CM of TARGET (a port GID, LID or name\n"
	      "in the address file) and report, for each, whether it answered as the spec\n"
	      "and the kernel require.\n"
	      "\n" SA_CLI_OPTS_HELP
	      "      --service-id ID  service ID the target listens on (default 0x1061c06)\n"
	      "      --unused-sid ID  service ID nobody listens on (default 0x1060001)\n"
	      "      --dst-ip ADDR    IPv4 address in the IP CM header of REQs (default 0.0.0.0)\n"
	      "      --wait MS        how long silence must last (default 300)\n"
	      "      --answer MS      how long an answer may take (default 2000)\n"
	      "      --flood N        REQs of the req-flood case (default 64)\n"
	      "      --case NAME      run only this case (repeatable)\n"
	      "      --list           list the cases and what they require, run nothing\n"
	      "      --verbose        print every MAD sent and received on stderr\n",
	      out);
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

/* The target's CM still works: a DREQ for no connection gets its DREP. */
static bool alive(struct tt *tt)
{
	for (int i = 0; i < 2; i++) {
		uint8_t mad[CM_MAD_SIZE];
		uint8_t *msg = mad + CM_MSG_OFFSET;
		uint32_t lid = tt_random32();

		cm_mad_init(mad, sizeof(mad), &cm_dreq_layout, CM_METHOD_SEND, ++tt->tid);
		mad_set(msg, cm_dreq_fields, CM_DREQ_LOCAL_COMM_ID, lid);
		mad_set(msg, cm_dreq_fields, CM_DREQ_REMOTE_COMM_ID, tt_random32());
		mad_set(msg, cm_dreq_fields, CM_DREQ_REMOTE_QPN_EECN, 2);
		tt_send(tt, mad, sizeof(mad));
		if (tt_wait(tt, CM_ATTR_DREP, lid, tt->answer_ms))
			return true;
	}
	return false;
}

static int resolve(struct sa_cli_opts *o, const struct sa_cli_addr *dst, struct tt *tt)
{
	struct sa_path_query q = {0};
	struct mad_port_attr pa;
	struct sa_client *c;
	struct sa_path p;
	unsigned n = 0;
	uint16_t st = 0;
	int rc;

	if (sa_cli_open(o, &c, &pa, "torture"))
		return -1;
	memcpy(q.rec.sgid, pa.gid, 16);
	q.comp_mask = SA_PR_COMP_SGID;
	if (dst->is_gid) {
		memcpy(q.rec.dgid, dst->gid, 16);
		q.comp_mask |= SA_PR_COMP_DGID;
	} else {
		q.rec.slid = pa.lid;
		q.rec.dlid = dst->lid;
		q.comp_mask = SA_PR_COMP_SLID | SA_PR_COMP_DLID;
	}
	rc = sa_path_query(c, &q, &p, 1, &n, &st);
	sa_client_close(c);
	if (rc || n == 0) {
		fprintf(stderr, "madcm torture: no path to the target: %s\n",
			rc ? sa_cli_strerror(rc) : "none");
		return -1;
	}
	tt->dlid = p.dlid;
	memcpy(tt->dgid, p.dgid, 16);
	tt->sl = p.sl;
	tt->mtu = p.mtu;
	tt->pkey = p.pkey;
	return 0;
}

static bool selected(char **names, int n, const char *name)
{
	if (n == 0)
		return true;
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

enum {
	OPT_SID = 0x200,
	OPT_UNUSED,
	OPT_DST_IP,
	OPT_WAIT,
	OPT_ANSWER,
	OPT_FLOOD,
	OPT_CASE,
	OPT_LIST
};

/* `only`: room for the --case names (argc of them), freed by the caller on every return. */
static int torture_run(int argc, char **argv, char **only)
{
	static const struct option longopts[] = {
	    SA_CLI_LONG_OPTS,
	    {"service-id", required_argument, NULL, OPT_SID},
	    {"unused-sid", required_argument, NULL, OPT_UNUSED},
	    {"dst-ip", required_argument, NULL, OPT_DST_IP},
	    {"wait", required_argument, NULL, OPT_WAIT},
	    {"answer", required_argument, NULL, OPT_ANSWER},
	    {"flood", required_argument, NULL, OPT_FLOOD},
	    {"case", required_argument, NULL, OPT_CASE},
	    {"list", no_argument, NULL, OPT_LIST},
	    {"verbose", no_argument, NULL, 'v'},
	    {NULL, 0, NULL, 0},
	};
	static struct tt tt;
	struct sa_cli_opts o;
	struct sa_cli_addr dst;
	struct tt_result *res;
	unsigned count[TT_SKIPPED + 1] = {0};
	bool list = false, dead = false;
	int nonly = 0, opt, rc;
	uint64_t v;
	char gid[64];

	sa_cli_opts_init(&o);
	memset(&tt, 0, sizeof(tt));
	tt.service_id = TT_DEFAULT_SID;
	tt.unused_sid = TT_DEFAULT_UNUSED;
	tt.wait_ms = 300;
	tt.answer_ms = 2000;
	tt.flood = 64;
	while ((opt = sa_cli_getopt(&o, argc, argv, longopts, "torture", usage)) >= 0) {
		switch (opt) {
		case OPT_SID:
		case OPT_UNUSED:
			if (!sa_cli_number(optarg, UINT64_MAX, &v))
				return sa_cli_bad_value("torture", optarg);
			*(opt == OPT_SID ? &tt.service_id : &tt.unused_sid) = v;
			break;
		case OPT_DST_IP:
			if (inet_pton(AF_INET, optarg, &tt.dst_ip) != 1)
				return sa_cli_bad_value("torture", optarg);
			break;
		case OPT_WAIT:
		case OPT_ANSWER:
			if (!sa_cli_number(optarg, 600000, &v) || v == 0)
				return sa_cli_bad_value("torture", optarg);
			*(opt == OPT_WAIT ? &tt.wait_ms : &tt.answer_ms) = (unsigned)v;
			break;
		case OPT_FLOOD:
			if (!sa_cli_number(optarg, 100000, &v) || v == 0)
				return sa_cli_bad_value("torture", optarg);
			tt.flood = (unsigned)v;
			break;
		case OPT_CASE:
			for (unsigned i = 0; i < tt_ncases && strcmp(tt_cases[i].name, optarg); i++)
				if (i + 1 == tt_ncases) {
					fprintf(stderr,
						"madcm torture: no case '%s' (see --list)\n",
						optarg);
					return 2;
				}
			only[nonly++] = optarg;
			break;
		case OPT_LIST:
			list = true;
			break;
		case 'v':
			tt.verbose = true;
			break;
		}
	}
	if (opt != SA_CLI_END)
		return sa_cli_exit(opt);
	if (list) {
		for (unsigned i = 0; i < tt_ncases; i++)
			printf("%s\n    sent:     %s\n    required: %s\n", tt_cases[i].name,
			       tt_cases[i].what, tt_cases[i].required);
		return 0;
	}
	if (argc - optind != 1) {
		usage(stderr);
		return 2;
	}
	if (sa_cli_addr(&o, argv[optind], &dst, "torture"))
		return 2;
	if (resolve(&o, &dst, &tt))
		return 1;
	rc = tt_open(&tt, o.ca, o.port);
	if (rc) {
		fprintf(stderr, "madcm torture: cannot open the port: %s\n", sa_cli_strerror(rc));
		return 1;
	}
	tt.next_qpn = tt_random32() & 0xffffff;
	tt.dst.lid = tt.dlid;
	tt.dst.sl = tt.sl;
	tt.dst.qpn = 1;
	tt.dst.qkey = MAD_QP1_QKEY;
	if (!alive(&tt)) {
		fprintf(stderr, "madcm torture: the target's CM does not answer a DREQ\n");
		tt_close(&tt);
		return 1;
	}
	res = calloc(tt_ncases, sizeof(*res));
	if (!res) {
		tt_close(&tt);
		return 1;
	}
	for (unsigned i = 0; i < tt_ncases; i++) {
		if (!selected(only, nonly, tt_cases[i].name))
			continue;
		if (dead) {
			res[i].v = TT_SKIPPED;
			snprintf(res[i].got, sizeof(res[i].got), "not run: the target died");
		} else {
			if (tt.verbose)
				fprintf(stderr, "torture: case %s\n", tt_cases[i].name);
			tt_cases[i].run(&tt, &res[i]);
			if (res[i].v != TT_SKIPPED && !alive(&tt)) {
				size_t l = strlen(res[i].got);

				res[i].v = TT_DIED;
				snprintf(res[i].got + l, sizeof(res[i].got) - l,
					 "; then no DREP to a DREQ for no connection");
				dead = true;
			}
		}
		count[res[i].v]++;
	}
	sa_cli_format_gid(gid, tt.dgid);
	if (o.json) {
		bool first = true;

		printf("{\"target\": {\"gid\": \"%s\", \"lid\": %u, \"service_id\": "
		       "\"0x%016llx\"},\n \"cases\": [",
		       gid, tt.dlid, (unsigned long long)tt.service_id);
		for (unsigned i = 0; i < tt_ncases; i++) {
			if (!selected(only, nonly, tt_cases[i].name))
				continue;
			printf("%s\n  {\"name\": ", first ? "" : ",");
			first = false;
			json_str(stdout, tt_cases[i].name);
			printf(", \"sent\": ");
			json_str(stdout, tt_cases[i].what);
			printf(", \"required\": ");
			json_str(stdout, tt_cases[i].required);
			printf(", \"result\": \"%s\", \"got\": ", verdict_names[res[i].v]);
			json_str(stdout, res[i].got);
			printf("}");
		}
		printf("\n ],\n \"summary\": {");
		for (int k = 0; k <= TT_SKIPPED; k++)
			printf("%s\"%s\": %u", k ? ", " : "", verdict_names[k], count[k]);
		printf("}}\n");
	} else {
		printf("target %s (LID %u), service ID 0x%llx\n\n", gid, tt.dlid,
		       (unsigned long long)tt.service_id);
		printf("%-20s %-12s %s\n", "CASE", "RESULT", "WHAT CAME BACK");
		for (unsigned i = 0; i < tt_ncases; i++) {
			if (!selected(only, nonly, tt_cases[i].name))
				continue;
			printf("%-20s %-12s %s\n", tt_cases[i].name, verdict_names[res[i].v],
			       res[i].got);
			printf("%-20s %-12s required: %s\n", "", "", tt_cases[i].required);
		}
		printf("\n");
		for (int k = 0; k <= TT_SKIPPED; k++)
			printf("%s%u %s", k ? ", " : "", count[k], verdict_names[k]);
		printf("\n");
	}
	free(res);
	tt_close(&tt);
	return count[TT_DEVIATED] || count[TT_SILENT] || count[TT_DIED] ? 1 : 0;
}

int cmd_torture(int argc, char **argv)
{
	char **only = calloc((size_t)argc, sizeof(char *));
	int rc;

	if (!only)
		return 1;
	rc = torture_run(argc, argv, only);
	free(only);
	return rc;
}
