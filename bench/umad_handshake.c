/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * umad_handshake: the handshake floor of a user-space CM on a RoCE port,
 * for the kernel test bed's bench phase (tests/kernel/guest/bench.sh).
 *
 * It does what any CM that sends and receives its MADs through ib_umad on
 * QP1 must do for N connections, and nothing else: the client writes N
 * REQs (CM class, method Send, to the peer's QP1 with a GRH), the server
 * answers each with a QP created, moved to INIT, RTR and RTS, and a REP;
 * the client moves its QP to RTR and RTS and writes the RTU.  No CM state,
 * no timers, no events, no threads.  Its connect step, printed in cmtime's
 * format, is then the fastest a CM through umad can make cmtime's connect
 * step on these VMs: the bench prints it next to the kernel's CM and
 * madcm's.  The client's QPs are made beforehand, as cmtime's client makes
 * them in its "create qp" step; the server's inside the step, as cmtime's
 * server makes one per CONNECT_REQUEST, each with the two completion
 * channels and CQs librdmacm's rdma_create_qp() gives it (-S: one shared
 * CQ, what this floor did before 2026-12-06's fourth session).
 *
 *   umad_handshake server -d DEV -b IPV4 [-c N] [-S] [-Q]
 *   umad_handshake client -d DEV -b IPV4 -s PEER_IPV4 [-c N] [-Q]
 *
 * -Q sends the MADs from a UD QP of its own (mad/umad_qp.h, as madcm's
 * MADCM_MAD_SEND=qp), one address handle per peer, instead of writing them
 * to umad, whose every write resolves the peer's MAC; reads stay on umad.
 * The floor of a CM that may put a source QP other than 1 on the wire.
 *
 * IPV4 picks the RoCE v2 GID ::ffff:IPV4 of port 1; the peer's is
 * ::ffff:PEER_IPV4.  The server answers N REQs and exits.  Needs the port's
 * CM class free (no ib_cm), as madcm does.  Nothing is resent: a MAD lost
 * ends the run with the count done after 10 s without progress.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/umad.h>
#include <infiniband/verbs.h>

#include "mad/addr.h"
#include "mad/umad_qp.h"

#define CM_CLASS 0x07
#define CM_VERSION 2
#define METHOD_SEND 0x03
#define ATTR_REQ 0x0010
#define ATTR_REP 0x0013
#define ATTR_RTU 0x0014
#define MAD_LEN 256
#define GSI_QKEY 0x80010000u
#define IDLE_MS 10000

static const char *dev_name;
static unsigned n_conn = 300;
static uint8_t sgid[16], dgid[16];
static int sgid_index = -1;
static int port_id, agent;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
/* -S: the server's QPs share one CQ, as before; default: CQs of their own. */
static int shared_cq;
/* -Q: MADs sent from this UD QP rather than written to umad. */
static int use_qp;
static struct umad_qp *send_qp;
static unsigned long umad_writes; /* -Q: sends the QP refused, written to umad */

/* What rdma_create_qp(id, NULL, attr) makes for a QP given no CQs. */
struct qp_cqs {
	struct ibv_comp_channel *ch[2];
	struct ibv_cq *cq[2];
};

static void die(const char *what, int err)
{
	fprintf(stderr, "umad_handshake: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ::ffff:a.b.c.d, a RoCE v2 GID of an IPv4 address. */
static void v4_gid(const char *ip, uint8_t *gid)
{
	struct in_addr a;

	if (inet_pton(AF_INET, ip, &a) != 1)
		die(ip, EINVAL);
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &a, 4);
}

/* The index of sgid among port 1's RoCE v2 GIDs (sysfs, as madcm reads it). */
static int find_sgid_index(void)
{
	for (int i = 0; i < 256; i++) {
		char path[256], type[32] = "";
		union ibv_gid g;
		FILE *f;

		if (ibv_query_gid(ctx, 1, i, &g))
			break;
		if (memcmp(g.raw, sgid, 16))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d",
			 dev_name, i);
		f = fopen(path, "r");
		if (f && fgets(type, sizeof(type), f) && !strncmp(type, "RoCE v2", 7)) {
			fclose(f);
			return i;
		}
		if (f)
			fclose(f);
	}
	die("no RoCE v2 GID for -b on port 1", ENOENT);
	return -1;
}

static void open_all(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	long mask[16 / sizeof(long)] = {0};

	for (int i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		die(dev_name, ENODEV);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq", errno);
	sgid_index = find_sgid_index();
	port_id = umad_open_port((char *)dev_name, 1);
	if (port_id < 0)
		die("umad_open_port", port_id);
	mask[0] = 1L << METHOD_SEND;
	agent = umad_register(port_id, CM_CLASS, CM_VERSION, 0, mask);
	if (agent < 0)
		die("umad_register (CM class taken: ib_cm loaded?)", agent);
	if (use_qp && !(send_qp = umad_qp_open(dev_name, 1, 0)))
		die("umad_qp_open (-Q)", EPERM);
}

/*
 * A QP and INIT.  With own (the server's, unless -S), a completion channel
 * and a CQ each for its send and receive queues first, as librdmacm's
 * rdma_create_qp() makes them when the caller gives none, which cmtime's
 * server does for every CONNECT_REQUEST: both CMs' turns pay for them.
 */
static struct ibv_qp *qp_new(struct qp_cqs *own)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = cq,
	    .recv_cq = cq,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1};
	struct ibv_qp *qp;

	for (int k = 0; own && k < 2; k++) {
		own->ch[k] = ibv_create_comp_channel(ctx);
		own->cq[k] = own->ch[k] ? ibv_create_cq(ctx, 1, NULL, own->ch[k], 0) : NULL;
		if (!own->cq[k])
			die("CQ of a QP", errno);
	}
	if (own) {
		ia.send_cq = own->cq[0];
		ia.recv_cq = own->cq[1];
	}
	qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp", errno);
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify INIT", errno);
	return qp;
}

/* RTR then RTS towards the peer's QP, as a CM moves it on REQ (server) or REP (client). */
static void qp_connect(struct ibv_qp *qp, uint32_t dqpn, uint32_t rpsn, uint32_t spsn)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = IBV_MTU_1024,
	    .dest_qp_num = dqpn,
	    .rq_psn = rpsn,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 12,
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.sgid_index = (uint8_t)sgid_index, .hop_limit = 64}},
	};

	memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify RTR", errno);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = spsn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS", errno);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* One CM-class Send to the peer's QP1: index, QPN and PSN in its first data bytes. */
static void send_mad(uint16_t attr, uint32_t i, uint32_t qpn, uint32_t psn)
{
	static char buf[sizeof(struct ib_user_mad) + MAD_LEN] __attribute__((aligned(8)));
	uint8_t *mad = umad_get_mad(buf);
	ib_mad_addr_t *a = umad_get_mad_addr(buf);
	int rc;

	memset(buf, 0, sizeof(buf));
	mad[0] = 1;
	mad[1] = CM_CLASS;
	mad[2] = CM_VERSION;
	mad[3] = METHOD_SEND;
	put32(mad + 12, i + 1);		/* TID, low half */
	mad[16] = (uint8_t)(attr >> 8); /* attribute ID */
	mad[17] = (uint8_t)attr;
	put32(mad + 24, i);
	put32(mad + 28, qpn);
	put32(mad + 32, psn);
	if (send_qp) {
		struct mad_addr d = {.lid = 0xffff,
				     .qpn = 1,
				     .qkey = GSI_QKEY,
				     .grh_present = true,
				     .hop_limit = 64,
				     .gid_index = (uint8_t)sgid_index};

		memcpy(d.gid, dgid, 16);
		if (!umad_qp_send(send_qp, mad, MAD_LEN, &d, (uint8_t)sgid_index))
			return;
		umad_writes++; /* refused (a full queue ...): written to umad below */
	}
	umad_set_addr(buf, 0xffff, 1, 0, (int)GSI_QKEY);
	/* Filled in place: libibumad 44's umad_set_grh() leaves gid_index 0. */
	a->grh_present = 1;
	memcpy(a->gid, dgid, 16);
	a->gid_index = (uint8_t)sgid_index;
	a->hop_limit = 64;
	rc = umad_send(port_id, agent, buf, MAD_LEN, 0, 0);
	if (rc < 0)
		die("umad_send", rc);
}

/* The next CM Send with attribute `attr`: 0, or -ETIMEDOUT after IDLE_MS. */
static int recv_mad(uint16_t attr, uint32_t *i, uint32_t *qpn, uint32_t *psn)
{
	static char buf[sizeof(struct ib_user_mad) + MAD_LEN] __attribute__((aligned(8)));

	for (;;) {
		int len = MAD_LEN, rc = umad_recv(port_id, buf, &len, IDLE_MS);
		uint8_t *mad = umad_get_mad(buf);

		if (rc == -ETIMEDOUT)
			return rc;
		if (rc < 0)
			die("umad_recv", rc);
		if (umad_status(buf) || len < 36 || mad[1] != CM_CLASS ||
		    ((mad[16] << 8) | mad[17]) != attr)
			continue;
		/* The server learns the client's GID from the REQ's GRH. */
		if (umad_get_mad_addr(buf)->grh_present)
			memcpy(dgid, umad_get_mad_addr(buf)->gid, 16);
		*i = get32(mad + 24);
		*qpn = get32(mad + 28);
		*psn = get32(mad + 32);
		if (*i < n_conn)
			return 0;
	}
}

static void print_step(const char *name, uint64_t ns, unsigned n)
{
	/* cmtime's columns (total ms, max ms, min us, us / conn); no per-connection max or min
	 * here. */
	printf("%-13s: %11.2f %10.2f %10.2f %10.2f\n", name, ns / 1e6, ns / 1e6, 0.0,
	       n ? ns / 1e3 / n : 0.0);
}

static int client(void)
{
	struct ibv_qp **qp = calloc(n_conn, sizeof(*qp));
	uint8_t *up = calloc(n_conn, 1);
	uint32_t i, dqpn, psn, done = 0;
	uint64_t t0, t1;

	if (!qp || !up)
		die("client", ENOMEM);
	t0 = now_ns();
	for (i = 0; i < n_conn; i++)
		qp[i] = qp_new(NULL);
	t1 = now_ns();
	printf("step              total ms     max ms     min us  us / conn\n");
	print_step("create qp", t1 - t0, n_conn);
	t0 = now_ns();
	for (i = 0; i < n_conn; i++)
		send_mad(ATTR_REQ, i, qp[i]->qp_num, i * 7 + 1);
	while (done < n_conn && !recv_mad(ATTR_REP, &i, &dqpn, &psn)) {
		if (up[i])
			continue; /* a duplicate: none are sent, but never twice */
		qp_connect(qp[i], dqpn, psn, i * 7 + 1);
		send_mad(ATTR_RTU, i, qp[i]->qp_num, 0);
		up[i] = 1;
		done++;
	}
	t1 = now_ns();
	print_step("connect", t1 - t0, done);
	for (i = 0; i < n_conn; i++)
		ibv_destroy_qp(qp[i]);
	free(qp);
	free(up);
	return done == n_conn ? 0 : 1;
}

static int server(void)
{
	struct ibv_qp **qp = calloc(n_conn, sizeof(*qp));
	struct qp_cqs *cqs = calloc(n_conn, sizeof(*cqs));
	uint32_t i, dqpn, psn, done = 0, rtus = 0;

	if (!qp || !cqs)
		die("server", ENOMEM);
	while (done < n_conn && !recv_mad(ATTR_REQ, &i, &dqpn, &psn)) {
		if (qp[i])
			continue;
		qp[i] = qp_new(shared_cq ? NULL : &cqs[i]);
		qp_connect(qp[i], dqpn, psn, i * 11 + 1);
		send_mad(ATTR_REP, i, qp[i]->qp_num, i * 11 + 1);
		done++;
	}
	/* The RTUs, read as a CM reads them (and counted: all should come). */
	while (rtus < done && !recv_mad(ATTR_RTU, &i, &dqpn, &psn))
		rtus++;
	printf("server: %u REQs answered, %u RTUs read\n", done, rtus);
	for (i = 0; i < n_conn; i++) {
		if (qp[i])
			ibv_destroy_qp(qp[i]);
		for (int k = 0; k < 2; k++) {
			if (cqs[i].cq[k])
				ibv_destroy_cq(cqs[i].cq[k]);
			if (cqs[i].ch[k])
				ibv_destroy_comp_channel(cqs[i].ch[k]);
		}
	}
	free(qp);
	free(cqs);
	return done == n_conn && rtus == done ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *local = NULL, *peer = NULL;
	int c, rc;

	optind = 2;
	while ((c = getopt(argc, argv, "d:b:s:c:SQ")) != -1) {
		switch (c) {
		case 'd':
			dev_name = optarg;
			break;
		case 'b':
			local = optarg;
			break;
		case 's':
			peer = optarg;
			break;
		case 'c':
			n_conn = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'S':
			shared_cq = 1;
			break;
		case 'Q':
			use_qp = 1;
			break;
		default:
			return 2;
		}
	}
	if (!dev_name || !local || !n_conn || n_conn > 100000 ||
	    (strcmp(mode, "server") && (strcmp(mode, "client") || !peer))) {
		fprintf(stderr,
			"usage: umad_handshake server -d DEV -b IPV4 [-c N] [-S] [-Q]\n"
			"       umad_handshake client -d DEV -b IPV4 -s PEER_IPV4 [-c N] [-Q]\n");
		return 2;
	}
	v4_gid(local, sgid);
	open_all();
	rc = strcmp(mode, "server") ? (v4_gid(peer, dgid), client()) : server();
	if (send_qp) {
		fprintf(stderr, "umad_handshake: -Q: %lu MADs written to umad instead\n",
			umad_writes);
		umad_qp_close(send_qp);
	}
	umad_unregister(port_id, agent);
	umad_close_port(port_id);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return rc;
}
