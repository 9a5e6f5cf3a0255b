/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * verbs_check: behaviours of the soft verbs that a connection manager
 * depends on, each stated as a check, run on a simulated host (under
 * `fabsim run HOST --`).  Plain libibverbs calls only: the same program
 * would run on a real HCA.
 *
 *   verbs_check loopback            failure and success cases, two QPs of
 *                                   one process talking through the port
 *   verbs_check server FILE         RC responder for the link-down test;
 *                                   writes "lid qpn psn" to FILE, reads
 *                                   the client's from FILE.cli
 *   verbs_check client FILE         RC requester: streams SENDs until a
 *                                   completion fails; prints its status
 *   verbs_check server FILE N       the same responder, exiting after N
 *                                   messages
 *   verbs_check read-send FILE N    RC requester for `server FILE N`: N
 *                                   times an RDMA READ of the server's
 *                                   buffer and, behind it, a SEND from a
 *                                   buffer registered without
 *                                   LOCAL_WRITE (as rping's send buffer);
 *                                   every completion must succeed, also
 *                                   when READ responses are duplicated
 *   verbs_check stream FILE N       RC requester for `server FILE N`: N
 *                                   SENDs, each followed by an RDMA WRITE
 *                                   and an RDMA READ, up to 8 in flight;
 *                                   every completion must succeed
 *   verbs_check mcast-recv MGID SEC [noattach]
 *                                   join MGID through the SA, attach (or
 *                                   not), print how many messages came
 *   verbs_check mcast-send MGID N   join MGID, send N datagrams to it
 *   verbs_check churn N             create, bring to RTS, destroy N QPs
 *   verbs_check hold N [SEC]        create N QPs, wait SEC, exit without
 *                                   cleanup
 *   verbs_check ud-server FILE N    UD responder: writes "lid qpn psn" to
 *                                   FILE, answers N requests each on an AH
 *                                   made from its WC (QPN from the
 *                                   immediate data), exits at once
 *   verbs_check ud-client FILE N    UD requester: sends N requests to the
 *                                   server in FILE, waits for N replies
 *   verbs_check qpn-unique N        create and destroy N QPs one after
 *                                   another; fails if a QPN repeats
 *   verbs_check daemon-stats        what fabsimd holds for the soft verbs
 *
 * Exit status 0 when every check passed; failures are printed.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>

#include "sim/proto.h"
#include "sim/verbs_proto.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			printf("FAIL %s:%d: ", __func__, __LINE__);                                \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

#define BUFSZ 65536

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_port_attr port;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void open_dev(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);

	if (!l || !l[0]) {
		fprintf(stderr, "no verbs device\n");
		exit(77);
	}
	ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	if (!ctx || ibv_query_port(ctx, 1, &port)) {
		fprintf(stderr, "cannot open device\n");
		exit(1);
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		exit(1);
}

struct ep {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t psn;
};

static struct ibv_comp_channel *ep_channel; /* for the next ep's CQ, if set */

static void ep_create_wrs(struct ep *e, enum ibv_qp_type type, int qp_access, int mr_access,
			  uint32_t send_wr, uint32_t recv_wr)
{
	struct ibv_qp_init_attr ia = {
	    .cap = {.max_send_wr = send_wr,
		    .max_recv_wr = recv_wr,
		    .max_send_sge = 2,
		    .max_recv_sge = 2,
		    .max_inline_data = 64},
	    .qp_type = type,
	};
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = qp_access, .qkey = 0x1234};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	memset(e, 0, sizeof(*e));
	e->buf = calloc(1, BUFSZ);
	e->cq = ibv_create_cq(ctx, 256, NULL, ep_channel, 0);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &ia);
	e->mr = ibv_reg_mr(pd, e->buf, BUFSZ, mr_access);
	if (!e->buf || !e->cq || !e->qp || !e->mr) {
		fprintf(stderr, "ep_create: %s\n", strerror(errno));
		exit(1);
	}
	e->psn = (uint32_t)(rand() & 0xffffff);
	mask |= type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	if (ibv_modify_qp(e->qp, &a, mask)) {
		fprintf(stderr, "to INIT failed\n");
		exit(1);
	}
}

static void ep_create(struct ep *e, enum ibv_qp_type type, int qp_access, int mr_access)
{
	ep_create_wrs(e, type, qp_access, mr_access, 64, 64);
}

static void ep_destroy(struct ep *e)
{
	ibv_destroy_qp(e->qp);
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	free(e->buf);
}

static int ep_rtr(struct ep *e, uint16_t dlid, uint32_t dqpn, uint32_t rq_psn)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = IBV_MTU_1024,
	    .dest_qp_num = dqpn,
	    .rq_psn = rq_psn,
	    .max_dest_rd_atomic = 4,
	    .min_rnr_timer = 1,
	    .ah_attr = {.dlid = dlid, .port_num = 1},
	};

	if (e->qp->qp_type == IBV_QPT_UD)
		return ibv_modify_qp(e->qp, &a, IBV_QP_STATE);
	return ibv_modify_qp(e->qp, &a,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int ep_rts(struct ep *e, uint8_t timeout, uint8_t retry, uint8_t rnr)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTS,
	    .sq_psn = e->psn,
	    .timeout = timeout,
	    .retry_cnt = retry,
	    .rnr_retry = rnr,
	    .max_rd_atomic = 4,
	};

	if (e->qp->qp_type != IBV_QPT_RC)
		return ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return ibv_modify_qp(e->qp, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Connect a <-> b through the port (loopback on our own LID). */
static void connect_pair(struct ep *a, struct ep *b, uint8_t timeout, uint8_t retry, uint8_t rnr)
{
	if (ep_rtr(a, port.lid, b->qp->qp_num, b->psn) ||
	    ep_rtr(b, port.lid, a->qp->qp_num, a->psn) || ep_rts(a, timeout, retry, rnr) ||
	    ep_rts(b, timeout, retry, rnr)) {
		fprintf(stderr, "connect_pair failed\n");
		exit(1);
	}
}

static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, double ms)
{
	double end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		usleep(100);
	} while (now_ms() < end);
	return 0;
}

static int post_recv(struct ep *e, uint64_t id, uint32_t len)
{
	struct ibv_sge sg = {
	    .addr = (uintptr_t)e->buf + BUFSZ / 2, .length = len, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sg, .num_sge = 1}, *bad;

	return ibv_post_recv(e->qp, &wr, &bad);
}

static int post(struct ep *e, enum ibv_wr_opcode op, uint32_t len, uint64_t raddr, uint32_t rkey,
		uint32_t lkey_delta)
{
	struct ibv_sge sg = {
	    .addr = (uintptr_t)e->buf, .length = len, .lkey = e->mr->lkey + lkey_delta};
	struct ibv_send_wr wr = {.wr_id = 7,
				 .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.imm_data = htobe32(0xabcd);
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
		wr.wr.atomic.swap = 99;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(e->qp, &wr, &bad);
}

static const int ALL_REMOTE = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/* The transitions refuse missing and extra attributes with EINVAL. */
static void check_modify_masks(void)
{
	struct ep a;
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_RTR,
				 .path_mtu = IBV_MTU_1024,
				 .dest_qp_num = 5,
				 .ah_attr = {.dlid = port.lid, .port_num = 1}};
	int full = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	struct ibv_qp_init_attr ia;

	ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	CHECK(ibv_modify_qp(a.qp, &at, full & ~IBV_QP_MIN_RNR_TIMER) == EINVAL,
	      "RTR without min_rnr_timer accepted");
	CHECK(ibv_modify_qp(a.qp, &at, full & ~IBV_QP_AV) == EINVAL, "RTR without AV accepted");
	CHECK(ibv_modify_qp(a.qp, &at, full & ~IBV_QP_DEST_QPN) == EINVAL,
	      "RTR without dest QPN accepted");
	CHECK(ibv_modify_qp(a.qp, &at, full | IBV_QP_SQ_PSN) == EINVAL,
	      "RTR with an SQ PSN accepted");
	at.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN) == EINVAL,
	      "INIT -> RTS accepted");
	CHECK(a.qp->state == IBV_QPS_INIT, "state changed by a refused modify");
	at.qp_state = IBV_QPS_RTR;
	at.rq_psn = 0x123456;
	at.max_dest_rd_atomic = 2;
	at.min_rnr_timer = 12;
	CHECK(ibv_modify_qp(a.qp, &at, full) == 0, "valid RTR refused");
	memset(&at, 0, sizeof(at));
	CHECK(ibv_query_qp(a.qp, &at, full, &ia) == 0, "query_qp");
	CHECK(at.qp_state == IBV_QPS_RTR && at.rq_psn == 0x123456 && at.dest_qp_num == 5 &&
		  at.path_mtu == IBV_MTU_1024 && at.min_rnr_timer == 12 &&
		  at.max_dest_rd_atomic == 2 && at.ah_attr.dlid == port.lid,
	      "query_qp does not return what was set");
	ep_destroy(&a);
}

static void check_data_ops(void)
{
	struct ep a, b;
	struct ibv_wc wc;
	uint64_t *word;

	ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	ep_create(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	connect_pair(&a, &b, 14, 7, 7);
	/* SEND with immediate, 3000 bytes: three 1024-byte packets. */
	for (int i = 0; i < 3000; i++)
		a.buf[i] = (uint8_t)i;
	CHECK(post_recv(&b, 11, 4096) == 0, "post_recv");
	CHECK(post(&a, IBV_WR_SEND_WITH_IMM, 3000, 0, 0, 0) == 0, "post send");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
	      "send completion");
	CHECK(wait_wc(b.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		  wc.byte_len == 3000 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		  be32toh(wc.imm_data) == 0xabcd && wc.src_qp == a.qp->qp_num,
	      "recv completion (status %d len %u)", wc.status, wc.byte_len);
	CHECK(!memcmp(a.buf, b.buf + BUFSZ / 2, 3000), "SEND data differs");
	/* RDMA WRITE 5000 bytes into b: b never calls verbs for it. */
	memset(a.buf, 0x5a, 5000);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 5000, (uintptr_t)b.buf + 100, b.mr->rkey, 0) == 0,
	      "post write");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_RDMA_WRITE,
	      "write completion %d", wc.status);
	CHECK(b.buf[100] == 0x5a && b.buf[5099] == 0x5a && b.buf[5100] == 0, "RDMA WRITE data");
	/* RDMA READ back 4000 bytes. */
	memset(b.buf + 20000, 0x77, 4000);
	memset(a.buf, 0, 8192);
	CHECK(post(&a, IBV_WR_RDMA_READ, 4000, (uintptr_t)b.buf + 20000, b.mr->rkey, 0) == 0,
	      "post read");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 4000,
	      "read completion %d", wc.status);
	CHECK(a.buf[0] == 0x77 && a.buf[3999] == 0x77 && a.buf[4000] == 0, "RDMA READ data");
	/* Atomics on an 8-byte aligned word of b. */
	word = (uint64_t *)(void *)(b.buf + 40000);
	*word = 5;
	CHECK(post(&a, IBV_WR_ATOMIC_CMP_AND_SWP, 8, (uintptr_t)word, b.mr->rkey, 0) == 0,
	      "post cmp_swp");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_COMP_SWAP,
	      "cmp_swp completion");
	CHECK(*word == 99 && *(uint64_t *)(void *)a.buf == 5, "CMP_AND_SWP result");
	CHECK(post(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, (uintptr_t)word, b.mr->rkey, 0) == 0,
	      "post fetch_add");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_FETCH_ADD,
	      "fetch_add completion");
	CHECK(*word == 104 && *(uint64_t *)(void *)a.buf == 99, "FETCH_AND_ADD result");
	/* Bad lkey: local protection error, and the QP goes to ERR. */
	CHECK(post(&a, IBV_WR_SEND, 10, 0, 0, 0x100) == 0, "post bad lkey");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_LOC_PROT_ERR, "bad lkey gave %s",
	      ibv_wc_status_str(wc.status));
	ep_destroy(&a);
	ep_destroy(&b);
}

/*
 * A QP may have no send queue or no receive queue (0 WRs), as on rxe and
 * mlx5 (qperf's rc_bw makes such QPs): it works in the other direction,
 * and a post to the empty one fails with ENOMEM.
 */
static void check_zero_queues(void)
{
	struct ep a, b;
	struct ibv_wc wc;

	ep_create_wrs(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE, 16, 0); /* sends only */
	ep_create_wrs(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE, 0, 16); /* receives only */
	connect_pair(&a, &b, 14, 7, 7);
	CHECK(post_recv(&a, 1, 64) == ENOMEM, "post_recv on 0 receive WRs accepted");
	CHECK(post(&b, IBV_WR_SEND, 10, 0, 0, 0) == ENOMEM, "post_send on 0 send WRs accepted");
	CHECK(post_recv(&b, 2, 4096) == 0, "post_recv");
	memset(a.buf, 0x3c, 2000);
	CHECK(post(&a, IBV_WR_SEND, 2000, 0, 0, 0) == 0, "post send");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
	      "send completion (0-WR queues)");
	CHECK(wait_wc(b.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		  wc.byte_len == 2000,
	      "recv completion (0-WR queues)");
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 3000, (uintptr_t)b.buf + 100, b.mr->rkey, 0) == 0,
	      "post write");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS,
	      "write completion (0-WR queues)");
	ep_destroy(&a);
	ep_destroy(&b);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* A SEND from ep `to_send` after `ms`, unless called off first. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool off;
	int ms;
	struct ep *to_send;
} later = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, NULL};

static void *send_later(void *arg)
{
	struct timespec end;
	bool off;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_nsec += (long)later.ms * 1000000L;
	end.tv_sec += end.tv_nsec / 1000000000L;
	end.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&later.lock);
	while (!later.off && pthread_cond_timedwait(&later.cond, &later.lock, &end) == 0)
		;
	off = later.off;
	pthread_mutex_unlock(&later.lock);
	if (!off && post(later.to_send, IBV_WR_SEND, 10, 0, 0, 0))
		fprintf(stderr, "send_later: post failed\n");
	return NULL;
}

static bool send_later_start(pthread_t *t, struct ep *e, int ms)
{
	later.off = false;
	later.ms = ms;
	later.to_send = e;
	return !pthread_create(t, NULL, send_later, NULL);
}

static void send_later_stop(pthread_t t, bool call_off)
{
	pthread_mutex_lock(&later.lock);
	later.off = call_off;
	pthread_cond_signal(&later.cond);
	pthread_mutex_unlock(&later.lock);
	pthread_join(t, NULL);
}

/*
 * A signal caught while ibv_get_cq_event waits acts as on the kernel's
 * read() of the channel: with SA_RESTART the wait goes on, without it
 * the call fails with EINTR (qperf ends its tests so: a SIGALRM handler
 * without SA_RESTART; it hung when the wait went on).
 */
static void check_cq_event_signal(void)
{
	struct ibv_comp_channel *chan = ibv_create_comp_channel(ctx);
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	struct itimerval it = {.it_value = {.tv_usec = 50 * 1000}};
	struct ibv_cq *cq = NULL;
	struct ep a, b;
	pthread_t t;
	void *cctx;
	int rc;

	if (!chan) {
		CHECK(0, "ibv_create_comp_channel");
		return;
	}
	ep_channel = chan;
	ep_create(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	ep_channel = NULL;
	ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	connect_pair(&a, &b, 14, 7, 7);
	sigaction(SIGALRM, &sa, &old);
	CHECK(ibv_req_notify_cq(b.cq, 0) == 0, "req_notify");
	CHECK(post_recv(&b, 1, 64) == 0, "post_recv");
	/* A completion after 10 s ends the wait if the signal does not. */
	if (!send_later_start(&t, &a, 10000)) {
		CHECK(0, "pthread_create");
		goto out;
	}
	setitimer(ITIMER_REAL, &it, NULL);
	errno = 0;
	rc = ibv_get_cq_event(chan, &cq, &cctx);
	CHECK(rc == -1 && errno == EINTR,
	      "get_cq_event through a signal without SA_RESTART: %d (%s)", rc, strerror(errno));
	send_later_stop(t, true);
	if (!rc)
		ibv_ack_cq_events(b.cq, 1);
	/* With SA_RESTART: the completion 300 ms later ends it. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	if (rc && ibv_req_notify_cq(b.cq, 0) == 0 && send_later_start(&t, &a, 300)) {
		alarms = 0;
		setitimer(ITIMER_REAL, &it, NULL);
		rc = ibv_get_cq_event(chan, &cq, &cctx);
		CHECK(rc == 0 && cq == b.cq && alarms == 1,
		      "get_cq_event through a SA_RESTART signal: %d (%s), %d alarm(s)", rc,
		      strerror(errno), (int)alarms);
		send_later_stop(t, false);
		if (!rc)
			ibv_ack_cq_events(b.cq, 1);
	}
out:
	sigaction(SIGALRM, &old, NULL);
	ep_destroy(&a);
	ep_destroy(&b);
	ibv_destroy_comp_channel(chan);
}

/* An RC send that cannot be delivered fails with `want` after about
 * 4.096 us * 2^timeout * (retry_cnt + 1). */
static void expect_send_error(struct ep *a, enum ibv_wc_status want, double expect_ms,
			      const char *what)
{
	struct ibv_wc wc = {0};
	double t0 = now_ms(), dt;

	CHECK(post(a, IBV_WR_SEND, 100, 0, 0, 0) == 0, "%s: post", what);
	CHECK(wait_wc(a->cq, &wc, expect_ms * 4 + 2000) == 1, "%s: no completion", what);
	dt = now_ms() - t0;
	CHECK(wc.status == want, "%s: got %s, want %s", what, ibv_wc_status_str(wc.status),
	      ibv_wc_status_str(want));
	if (expect_ms > 0)
		CHECK(dt > expect_ms * 0.7 && dt < expect_ms * 3 + 200,
		      "%s: after %.1f ms, expected about %.1f ms", what, dt, expect_ms);
	printf("ok %s: %s after %.1f ms (expected ~%.1f)\n", what, ibv_wc_status_str(wc.status), dt,
	       expect_ms);
}

static void check_failures(void)
{
	struct ep a, b;
	struct ibv_wc wc;
	/* timeout 12: 16.8 ms; retry_cnt 2: three tries */
	const double t12 = 4.096e-3 * 4096 * 3;
	int n;

	/* Wrong destination QPN: nobody answers. */
	ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	ep_create(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	ep_rtr(&a, port.lid, b.qp->qp_num ^ 0x400000, b.psn);
	ep_rts(&a, 12, 2, 7);
	expect_send_error(&a, IBV_WC_RETRY_EXC_ERR, t12, "wrong dest QPN");
	ep_destroy(&a);
	ep_destroy(&b);

	/* Wrong PSN: the responder expects another one.  Ahead of it: NAK
	 * sequence error, retries; behind it: a duplicate, whose ACK names
	 * a PSN never sent.  Either way the data is not delivered. */
	for (int delta = -1000; delta <= 1000; delta += 2000) {
		ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
		ep_create(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
		if (ep_rtr(&a, port.lid, b.qp->qp_num, b.psn) ||
		    ep_rtr(&b, port.lid, a.qp->qp_num,
			   (uint32_t)(a.psn + (uint32_t)delta) & 0xffffff) ||
		    ep_rts(&a, 12, 2, 7) || ep_rts(&b, 12, 2, 7))
			CHECK(0, "connect");
		post_recv(&b, 1, 4096);
		expect_send_error(&a, IBV_WC_RETRY_EXC_ERR, delta > 0 ? t12 : 0,
				  delta > 0 ? "PSN behind the responder's"
					    : "PSN ahead of the responder's");
		CHECK(ibv_poll_cq(b.cq, 1, &wc) == 0, "wrong PSN: data was delivered");
		ep_destroy(&a);
		ep_destroy(&b);
	}

	/* Peer QP in RESET: packets are dropped silently. */
	ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	ep_create(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	connect_pair(&a, &b, 12, 2, 7);
	{
		struct ibv_qp_attr r = {.qp_state = IBV_QPS_RESET};

		CHECK(ibv_modify_qp(b.qp, &r, IBV_QP_STATE) == 0, "to RESET");
	}
	expect_send_error(&a, IBV_WC_RETRY_EXC_ERR, t12, "peer QP in RESET");
	ep_destroy(&a);
	ep_destroy(&b);

	/* No receive posted: RNR NAKs, then RNR retry exceeded. */
	ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	ep_create(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	connect_pair(&a, &b, 14, 7, 2);
	expect_send_error(&a, IBV_WC_RNR_RETRY_EXC_ERR, 0, "RNR retry exceeded");
	ep_destroy(&a);
	ep_destroy(&b);

	/* RDMA WRITE to a QP without remote write access. */
	ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	ep_create(&b, IBV_QPT_RC, IBV_ACCESS_REMOTE_READ, ALL_REMOTE);
	connect_pair(&a, &b, 14, 7, 7);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 64, (uintptr_t)b.buf, b.mr->rkey, 0) == 0, "post");
	CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_REM_ACCESS_ERR,
	      "write without QP access: %s", ibv_wc_status_str(wc.status));
	CHECK(b.buf[0] == 0, "memory written despite no access");
	ep_destroy(&a);
	ep_destroy(&b);

	/* ... to an MR without remote write, and with a bad R_Key. */
	for (int variant = 0; variant < 3; variant++) {
		ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
		ep_create(&b, IBV_QPT_RC, ALL_REMOTE,
			  variant == 0 ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ
				       : ALL_REMOTE);
		connect_pair(&a, &b, 14, 7, 7);
		memset(a.buf, 1, 64);
		CHECK(post(&a, IBV_WR_RDMA_WRITE, 64,
			   (uintptr_t)b.buf + (variant == 2 ? BUFSZ - 8 : 0),
			   b.mr->rkey + (variant == 1 ? 0x1000 : 0), 0) == 0,
		      "post");
		CHECK(wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_REM_ACCESS_ERR,
		      "write variant %d: %s", variant, ibv_wc_status_str(wc.status));
		CHECK(b.buf[0] == 0, "memory written despite no access");
		ep_destroy(&a);
		ep_destroy(&b);
	}

	/* ERR flushes outstanding receives with WR_FLUSH_ERR. */
	ep_create(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	for (int i = 0; i < 3; i++)
		post_recv(&b, 100 + i, 64);
	{
		struct ibv_qp_attr e = {.qp_state = IBV_QPS_ERR};

		CHECK(ibv_modify_qp(b.qp, &e, IBV_QP_STATE) == 0, "to ERR");
	}
	n = 0;
	while (wait_wc(b.cq, &wc, 200)) {
		CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 100u + n,
		      "flush completion %d", n);
		n++;
	}
	CHECK(n == 3, "%d flushed receives, want 3", n);
	ep_destroy(&b);
}

static void check_ud(void)
{
	struct ep a, b;
	struct ibv_ah_attr aa = {.dlid = port.lid, .port_num = 1};
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ibv_sge sg;
	struct ibv_send_wr wr = {0}, *bad;

	ep_create(&a, IBV_QPT_UD, 0, ALL_REMOTE);
	ep_create(&b, IBV_QPT_UD, 0, ALL_REMOTE);
	ep_rtr(&a, 0, 0, 0);
	ep_rtr(&b, 0, 0, 0);
	ep_rts(&a, 0, 0, 0);
	ep_rts(&b, 0, 0, 0);
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah != NULL, "create_ah");
	post_recv(&b, 1, 2048);
	memcpy(a.buf, "hello", 6);
	sg = (struct ibv_sge){.addr = (uintptr_t)a.buf, .length = 6, .lkey = a.mr->lkey};
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b.qp->qp_num;
	wr.wr.ud.remote_qkey = 0x4321; /* wrong Q_Key: dropped */
	CHECK(ibv_post_send(a.qp, &wr, &bad) == 0, "post");
	CHECK(wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS, "ud send");
	CHECK(wait_wc(b.cq, &wc, 300) == 0, "UD with a wrong Q_Key was delivered");
	wr.wr.ud.remote_qkey = 0x1234;
	CHECK(ibv_post_send(a.qp, &wr, &bad) == 0, "post");
	CHECK(wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS, "ud send");
	CHECK(wait_wc(b.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS && wc.byte_len == 40 + 6 &&
		  wc.src_qp == a.qp->qp_num && wc.slid == port.lid,
	      "UD receive (len %u)", wc.byte_len);
	CHECK(!memcmp(b.buf + BUFSZ / 2 + 40, "hello", 6), "UD payload after 40 bytes");
	{
		struct ibv_ah *back = ibv_create_ah_from_wc(
		    pd, &wc, (struct ibv_grh *)(void *)(b.buf + BUFSZ / 2), 1);

		CHECK(back != NULL, "create_ah_from_wc");
		if (back)
			ibv_destroy_ah(back);
	}
	ibv_destroy_ah(ah);
	ep_destroy(&a);
	ep_destroy(&b);
}

/* RTS -> SQD drains the send queue (IBV_EVENT_SQ_DRAINED when asked);
 * sends posted meanwhile wait for SQD -> RTS. */
static void check_sqd(void)
{
	struct ep a, b;
	struct ibv_wc wc;
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1};
	struct pollfd pfd = {.events = POLLIN};
	struct ibv_async_event ev;
	bool drained = false;

	ep_create(&a, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	ep_create(&b, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	connect_pair(&a, &b, 14, 7, 7);
	post_recv(&b, 1, 4096);
	CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0,
	      "RTS -> SQD");
	pfd.fd = ctx->async_fd;
	while (poll(&pfd, 1, 1000) == 1 && !ibv_get_async_event(ctx, &ev)) {
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_SQ_DRAINED && ev.element.qp == a.qp) {
			drained = true;
			break;
		}
	}
	CHECK(drained, "no IBV_EVENT_SQ_DRAINED");
	CHECK(post(&a, IBV_WR_SEND, 10, 0, 0, 0) == 0, "post in SQD");
	CHECK(wait_wc(b.cq, &wc, 200) == 0, "sent while in SQD");
	at.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE) == 0, "SQD -> RTS");
	CHECK(wait_wc(b.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS, "send after SQD -> RTS");
	ep_destroy(&a);
	ep_destroy(&b);
}

static int cmd_loopback(void)
{
	open_dev();
	check_modify_masks();
	check_data_ops();
	check_zero_queues();
	check_cq_event_signal();
	check_failures();
	check_sqd();
	check_ud();
	printf("%s: %d failure(s)\n", __func__, failures);
	return failures ? 1 : 0;
}

/* ---- two processes: link down in the middle of a transfer ------------- */

static void write_info(const char *path, struct ep *e)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		exit(1);
	/* The buffer for RDMA READs (read-send) follows the address. */
	fprintf(f, "%u %u %u %" PRIu64 " %u\n", port.lid, e->qp->qp_num, e->psn,
		(uint64_t)(uintptr_t)e->buf, e->mr->rkey);
	fclose(f);
	rename(tmp, path);
}

static uint64_t peer_addr;
static unsigned peer_rkey;

static void read_info(const char *path, unsigned *lid, unsigned *qpn, unsigned *psn)
{
	for (int i = 0; i < 300; i++) {
		FILE *f = fopen(path, "r");

		if (f) {
			int n = fscanf(f, "%u %u %u %" SCNu64 " %u", lid, qpn, psn, &peer_addr,
				       &peer_rkey);

			fclose(f);
			if (n == 5)
				return;
		}
		usleep(100000);
	}
	fprintf(stderr, "no peer info in %s\n", path);
	exit(1);
}

static int read_send(struct ep *e, long n);
static int stream(struct ep *e, long n);

/* server: limit 0 runs until the QP fails or 60 s pass; client: limit 0
 * streams SENDs, otherwise runs read_send (or, with mixed, stream) for
 * limit rounds. */
static int cmd_pair(const char *file, bool server, long limit, bool mixed)
{
	char mine[4096], theirs[4096];
	unsigned lid, qpn, psn;
	struct ep e;
	struct ibv_wc wc;
	long sent = 0, done = 0;

	open_dev();
	ep_create(&e, IBV_QPT_RC, ALL_REMOTE, ALL_REMOTE);
	snprintf(mine, sizeof(mine), "%s%s", file, server ? "" : ".cli");
	snprintf(theirs, sizeof(theirs), "%s%s", file, server ? ".cli" : "");
	/* The server is ready (RTR, receives posted) before the client
	 * learns its address, as a CM's REP/RTU exchange would ensure. */
	if (!server)
		write_info(mine, &e);
	read_info(theirs, &lid, &qpn, &psn);
	if (ep_rtr(&e, (uint16_t)lid, qpn, psn) || ep_rts(&e, 12, 3, 7)) {
		fprintf(stderr, "connect failed\n");
		return 1;
	}
	if (server) {
		/* Keep receives posted; exit when the QP fails or after 60 s. */
		for (int i = 0; i < 32; i++)
			post_recv(&e, 0, 4096);
		write_info(mine, &e);
		for (double end = now_ms() + 60000; now_ms() < end;) {
			if (!wait_wc(e.cq, &wc, 100))
				continue;
			if (wc.status != IBV_WC_SUCCESS) {
				printf("server: %s\n", ibv_wc_status_str(wc.status));
				break;
			}
			post_recv(&e, 0, 4096);
			if (++done == limit)
				break;
		}
		printf("server: %ld received\n", done);
		/*
		 * The client's last WRITE and READ follow its last SEND: the
		 * QP answers them only while it exists, so stay until the
		 * client says it is done (FILE.cli.done), at most 60 s.
		 */
		if (limit) {
			char fin[4200];

			snprintf(fin, sizeof(fin), "%s.done", theirs);
			for (double end = now_ms() + 60000; now_ms() < end && access(fin, F_OK);)
				(void)wait_wc(e.cq, &wc, 100);
		}
		return 0;
	}
	if (limit) {
		char fin[4200];
		int rc = mixed ? stream(&e, limit) : read_send(&e, limit);
		FILE *f;

		snprintf(fin, sizeof(fin), "%s.done", mine);
		f = fopen(fin, "w");
		if (f)
			fclose(f);
		return rc;
	}
	/* Client: keep up to 8 SENDs in flight until one fails. */
	for (double end = now_ms() + 60000; now_ms() < end;) {
		while (sent - done < 8 && !post(&e, IBV_WR_SEND, 2048, 0, 0, 0))
			sent++;
		if (!wait_wc(e.cq, &wc, 100))
			continue;
		done++;
		if (wc.status != IBV_WC_SUCCESS) {
			struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
			struct ibv_async_event ev;

			printf("client: %ld ok, then %s\n", done - 1, ibv_wc_status_str(wc.status));
			/* The port went down: the async fd says so too. */
			while (poll(&pfd, 1, 2000) == 1 && !ibv_get_async_event(ctx, &ev)) {
				printf("client: async event %s\n",
				       ibv_event_type_str(ev.event_type));
				ibv_ack_async_event(&ev);
				if (ev.event_type == IBV_EVENT_PORT_ERR)
					break;
			}
			return wc.status == IBV_WC_RETRY_EXC_ERR ? 0 : 1;
		}
		if (done == 200) {
			printf("client: streaming\n");
			fflush(stdout);
		}
	}
	printf("client: no failure within 60 s\n");
	return 1;
}

/* N rounds of an RDMA READ and a SEND behind it, posted together.  With
 * READ responses duplicated on the way (a `dup` fault; on a real fabric a
 * READ resent after a timeout is answered twice), the duplicate arrives
 * when the SEND is at the head of the send queue: it must be ignored, not
 * checked against the SEND's buffer, which has no LOCAL_WRITE. */
static int read_send(struct ep *e, long n)
{
	static uint8_t msg[256];
	struct ibv_mr *smr = ibv_reg_mr(pd, msg, sizeof(msg), 0);
	struct ibv_wc wc;
	long ok = 0;

	if (!smr) {
		perror("ibv_reg_mr");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		struct ibv_sge rsg = {.addr = (uintptr_t)e->buf,
				      .length = 512,
				      .lkey = e->mr->lkey},
			       ssg = {.addr = (uintptr_t)msg,
				      .length = sizeof(msg),
				      .lkey = smr->lkey};
		struct ibv_send_wr swr = {.wr_id = 2,
					  .sg_list = &ssg,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED},
				   rwr = {.wr_id = 1,
					  .next = &swr,
					  .sg_list = &rsg,
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		rwr.wr.rdma.remote_addr = peer_addr;
		rwr.wr.rdma.rkey = peer_rkey;
		if (ibv_post_send(e->qp, &rwr, &bad)) {
			perror("ibv_post_send");
			return 1;
		}
		for (int k = 0; k < 2; k++) {
			if (!wait_wc(e->cq, &wc, 5000)) {
				printf("read-send: round %ld: no completion\n", i);
				return 1;
			}
			if (wc.status != IBV_WC_SUCCESS) {
				printf("read-send: round %ld: %s %s\n", i,
				       wc.wr_id == 1 ? "READ" : "SEND",
				       ibv_wc_status_str(wc.status));
				return 1;
			}
			ok++;
		}
	}
	printf("read-send: %ld completions, all successful\n", ok);
	ibv_dereg_mr(smr);
	return 0;
}

/* n SENDs, each followed by an RDMA WRITE and an RDMA READ of the
 * server's buffer, up to 8 operations in flight: many packets on the wire
 * both ways at any moment, for tests that change the fabric underneath. */
static int stream(struct ep *e, long n)
{
	static const enum ibv_wr_opcode ops[3] = {IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ};
	long posted = 0, done = 0, total = 3 * n;
	struct ibv_wc wc;

	while (done < total) {
		while (posted < total && posted - done < 8) {
			enum ibv_wr_opcode op = ops[posted % 3];

			if (post(e, op, op == IBV_WR_SEND ? 2048 : 4096, peer_addr, peer_rkey, 0)) {
				perror("ibv_post_send");
				return 1;
			}
			posted++;
		}
		if (!wait_wc(e->cq, &wc, 30000)) {
			printf("stream: no completion after %ld\n", done);
			return 1;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			printf("stream: %ld ok, then %s\n", done, ibv_wc_status_str(wc.status));
			return 1;
		}
		done++;
	}
	printf("stream: %ld completions, all successful\n", done);
	return 0;
}

/* ---- multicast ---------------------------------------------------------- */

static int parse_gid(const char *s, uint8_t gid[16])
{
	for (int i = 0; i < 16; i++) {
		unsigned v;

		while (*s == ':')
			s++;
		if (sscanf(s, "%2x", &v) != 1)
			return -1;
		gid[i] = (uint8_t)v;
		s += 2;
	}
	return 0;
}

/* Join MGID through the SA (SubnAdmSet MCMemberRecord); returns its MLID. */
static int sa_join(const uint8_t mgid[16], union ibv_gid *mine)
{
	int mgmt_classes[] = {IB_SA_CLASS};
	struct ibmad_port *mp;
	ib_portid_t sm = {0};
	ib_sa_call_t sa = {0};
	uint8_t data[IB_SA_DATA_SIZE] = {0};
	uint8_t *r;

	mp = mad_rpc_open_port(NULL, 1, mgmt_classes, 1);
	if (!mp)
		return -1;
	sm.lid = port.sm_lid;
	sm.qp = 1;
	sm.qkey = IB_DEFAULT_QP1_QKEY;
	mad_set_array(data, 0, IB_SA_MCM_MGID_F, (void *)mgid);
	mad_set_array(data, 0, IB_SA_MCM_PORTGID_F, mine->raw);
	mad_set_field(data, 0, IB_SA_MCM_QKEY_F, 0x1234);
	mad_set_field(data, 0, IB_SA_MCM_PKEY_F, 0xffff);
	mad_set_field(data, 0, IB_SA_MCM_TCLASS_F, 0);
	mad_set_field(data, 0, IB_SA_MCM_SL_F, 0);
	mad_set_field(data, 0, IB_SA_MCM_FLOW_LABEL_F, 0);
	mad_set_field(data, 0, IB_SA_MCM_JOIN_STATE_F, 1);
	sa.attrid = IB_SA_ATTR_MCRECORD;
	sa.method = IB_MAD_METHOD_SET;
	/* MGID, PortGID, Q_Key, TClass, P_Key, SL, FlowLabel, JoinState */
	sa.mask = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 6 | 1 << 7 | 1 << 12 | 1 << 13 | 1 << 16;
	r = sa_rpc_call(mp, data, &sm, &sa, 2000);
	mad_rpc_close_port(mp);
	if (!r)
		return -1;
	return (int)mad_get_field(data, 0, IB_SA_MCM_MLID_F);
}

static int cmd_mcast(const char *mgids, int arg, bool send, bool attach)
{
	uint8_t mgid[16];
	union ibv_gid mine, g;
	struct ep e;
	struct ibv_wc wc;
	int mlid, n = 0;

	if (parse_gid(mgids, mgid))
		return 2;
	open_dev();
	ibv_query_gid(ctx, 1, 0, &mine);
	mlid = -1;
	for (int i = 0; i < 5 && mlid < 0; i++)
		mlid = sa_join(mgid, &mine);
	if (mlid < 0xc000) {
		printf("SA join failed\n");
		return 1;
	}
	ep_create(&e, IBV_QPT_UD, 0, ALL_REMOTE);
	ep_rtr(&e, 0, 0, 0);
	ep_rts(&e, 0, 0, 0);
	memcpy(g.raw, mgid, 16);
	if (!send && attach)
		CHECK(ibv_attach_mcast(e.qp, &g, (uint16_t)mlid) == 0, "attach");
	if (send) {
		struct ibv_ah_attr aa = {.dlid = (uint16_t)mlid, .is_global = 1, .port_num = 1};
		struct ibv_ah *ah;
		struct ibv_sge sg = {.addr = (uintptr_t)e.buf, .length = 32, .lkey = e.mr->lkey};
		struct ibv_send_wr wr = {.sg_list = &sg,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		aa.grh.dgid = g;
		aa.grh.hop_limit = 1;
		ah = ibv_create_ah(pd, &aa);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = 0x1234;
		for (int i = 0; i < arg; i++) {
			CHECK(ibv_post_send(e.qp, &wr, &bad) == 0, "post");
			CHECK(wait_wc(e.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS, "send");
			usleep(20000);
		}
		printf("sent %d to mlid 0x%x\n", arg, mlid);
		return failures ? 1 : 0;
	}
	for (int i = 0; i < 64; i++)
		post_recv(&e, (uint64_t)i, 2048);
	printf("ready mlid 0x%x\n", mlid);
	fflush(stdout);
	for (double end = now_ms() + arg * 1000.0; now_ms() < end;)
		if (wait_wc(e.cq, &wc, 50) && wc.status == IBV_WC_SUCCESS) {
			CHECK(wc.wc_flags & IBV_WC_GRH, "no GRH on multicast");
			CHECK(!memcmp(e.buf + BUFSZ / 2 + 24, mgid, 16),
			      "GRH DGID is not the MGID");
			n++;
		}
	printf("received %d\n", n);
	return failures ? 1 : 0;
}

/* ---- UD request/reply, the reply on an AH made from the WC ------------- */

#define UD_MSG 64

static void ud_up(struct ep *e)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};

	ep_create(e, IBV_QPT_UD, 0, IBV_ACCESS_LOCAL_WRITE);
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE)) {
		fprintf(stderr, "UD to RTR failed\n");
		exit(1);
	}
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = e->psn;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		fprintf(stderr, "UD to RTS failed\n");
		exit(1);
	}
}

/* Receive i lands at buf + BUFSZ/2 + i * (GRH + UD_MSG). */
static int ud_post_recv(struct ep *e, int i)
{
	uint32_t len = sizeof(struct ibv_grh) + UD_MSG;
	struct ibv_sge sg = {.addr = (uintptr_t)e->buf + BUFSZ / 2 + (uint64_t)i * len,
			     .length = len,
			     .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sg, .num_sge = 1}, *bad;

	return ibv_post_recv(e->qp, &wr, &bad);
}

static int ud_send(struct ep *e, struct ibv_ah *ah, uint32_t qpn, int i, bool signaled)
{
	struct ibv_sge sg = {.addr = (uintptr_t)e->buf + (uint64_t)i * UD_MSG,
			     .length = UD_MSG,
			     .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = (uint64_t)i,
				 .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = signaled ? IBV_SEND_SIGNALED : 0},
			   *bad;

	wr.imm_data = htobe32(e->qp->qp_num);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = 0x1234;
	return ibv_post_send(e->qp, &wr, &bad);
}

/* As udaddy's server: every request received, then every reply sent on
 * an AH made from the first request's WC, then exit: the replies are
 * completed, so they are on the wire, whatever becomes of this process. */
static int cmd_ud_server(const char *file, int n)
{
	struct ibv_ah *ah = NULL;
	struct ibv_wc wc;
	uint32_t rqpn = 0;
	struct ep e;
	int got = 0, sent = 0;

	open_dev();
	ud_up(&e);
	for (int i = 0; i < n; i++)
		ud_post_recv(&e, i);
	write_info(file, &e);
	while (got < n) {
		if (!wait_wc(e.cq, &wc, 10000)) {
			printf("server: %d of %d requests\n", got, n);
			return 1;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) {
			printf("server: %s\n", ibv_wc_status_str(wc.status));
			return 1;
		}
		if (!ah) {
			uint32_t len = sizeof(struct ibv_grh) + UD_MSG;

			ah = ibv_create_ah_from_wc(
			    pd, &wc, (struct ibv_grh *)(e.buf + BUFSZ / 2 + wc.wr_id * len), 1);
			rqpn = be32toh(wc.imm_data);
			if (!ah) {
				printf("server: ibv_create_ah_from_wc: %s\n", strerror(errno));
				return 1;
			}
		}
		got++;
	}
	for (int i = 0; i < n; i++)
		if (ud_send(&e, ah, rqpn, i, true))
			return 1;
	while (sent < n) {
		if (!wait_wc(e.cq, &wc, 10000) || wc.status != IBV_WC_SUCCESS) {
			printf("server: %d of %d replies completed\n", sent, n);
			return 1;
		}
		sent++;
	}
	printf("server: %d requests, %d replies\n", got, sent);
	return 0;
}

static int cmd_ud_client(const char *file, int n)
{
	struct ibv_ah_attr aa = {.port_num = 1};
	unsigned lid, qpn, psn;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ep e;
	int got = 0;

	open_dev();
	ud_up(&e);
	for (int i = 0; i < n; i++)
		ud_post_recv(&e, i);
	read_info(file, &lid, &qpn, &psn);
	aa.dlid = (uint16_t)lid;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		return 1;
	for (int i = 0; i < n; i++)
		if (ud_send(&e, ah, qpn, i, false))
			return 1;
	while (got < n && wait_wc(e.cq, &wc, 3000)) {
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) {
			printf("client: %s\n", ibv_wc_status_str(wc.status));
			return 1;
		}
		got++;
	}
	printf("client: %d of %d replies\n", got, n);
	return got == n ? 0 : 1;
}

/* ---- QP churn and leaks ------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmd_churn(int n, bool destroy, int hold_sec)
{
	struct ibv_cq *cq;
	double *t = calloc((size_t)n, sizeof(*t));
	struct ibv_qp **keep = calloc((size_t)n, sizeof(*keep));

	open_dev();
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!cq || !t || !keep)
		return 1;
	for (int i = 0; i < n; i++) {
		struct ibv_qp_init_attr ia = {
		    .send_cq = cq,
		    .recv_cq = cq,
		    .qp_type = IBV_QPT_RC,
		    .cap = {.max_send_wr = 16,
			    .max_recv_wr = 16,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		};
		struct ep e;
		double t0 = now_ms();

		e.qp = ibv_create_qp(pd, &ia);
		if (!e.qp) {
			printf("create_qp %d: %s\n", i, strerror(errno));
			return 1;
		}
		{
			struct ibv_qp_attr a = {
			    .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = ALL_REMOTE};

			if (ibv_modify_qp(e.qp, &a,
					  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS))
				return 1;
		}
		e.psn = 1;
		if (ep_rtr(&e, port.lid, e.qp->qp_num, 1) || ep_rts(&e, 14, 7, 7))
			return 1;
		t[i] = (now_ms() - t0) * 1000.0;
		if (destroy)
			ibv_destroy_qp(e.qp);
		else
			keep[i] = e.qp;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	printf("qp create->RTS: %d QPs, median %.2f us, p99 %.2f us\n", n, t[n / 2],
	       t[n * 99 / 100]);
	if (!destroy) {
		printf("holding %d QPs, exiting without cleanup\n", n);
		fflush(stdout);
		if (hold_sec > 0)
			sleep((unsigned)hold_sec);
		_exit(0);
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(t);
	free(keep);
	return 0;
}

/* A freed QPN is not handed out again soon (IBA 12.9.8.3.1: a QPN in
 * TimeWait must not be reused; HCAs allocate round-robin over the 24-bit
 * space): n QPs created and destroyed one after another get n numbers. */
static int daemon_stats(struct fsp_verbs_stats *st);

static int cmd_qpn_unique(int n)
{
	struct fsp_verbs_stats st;
	uint8_t *seen = calloc(1u << 24, 1);
	struct ibv_cq *cq;
	int repeats = 0;

	open_dev();
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!cq || !seen)
		return 1;
	for (int i = 0; i < n; i++) {
		struct ibv_qp_init_attr ia = {
		    .send_cq = cq,
		    .recv_cq = cq,
		    .qp_type = i % 2 ? IBV_QPT_UD : IBV_QPT_RC,
		    .cap = {.max_send_wr = 4,
			    .max_recv_wr = 4,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		};
		struct ibv_qp *qp = ibv_create_qp(pd, &ia);

		if (!qp) {
			printf("create_qp %d: %s\n", i, strerror(errno));
			return 1;
		}
		if (seen[qp->qp_num & 0xffffff]++ && repeats++ < 5)
			printf("QPN 0x%06x handed out again at QP %d\n", qp->qp_num, i);
		ibv_destroy_qp(qp);
	}
	printf("qpn-unique: %d QPs, %d repeated QPNs\n", n, repeats);
	/* Blocks whose QPs are all gone went back: this process (the only
	 * one) holds at most the one it takes QPNs from. */
	if (!daemon_stats(&st)) {
		printf("qpn-unique: the daemon holds %" PRIu64 " QPN blocks\n", st.qpn_blocks);
		if (st.qpn_blocks > 1)
			repeats++;
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(seen);
	return repeats ? 1 : 0;
}

/* Ask fabsimd (FSP_VERBS_STATS) what it holds for verbs clients. */
static int daemon_stats(struct fsp_verbs_stats *st)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct {
		struct fsp_hdr h;
		union {
			struct fsp_hello hello;
			struct fsp_verbs_stats st;
			uint8_t raw[4096];
		} u;
	} m;
	const char *dir = getenv("FABSIM_DIR");
	int fd, ret = 1;

	if (!dir)
		return 77;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, FSP_SOCK_NAME);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0)
		return 1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto out;
	memset(&m, 0, sizeof(m));
	m.h.type = FSP_HELLO;
	m.h.seq = 1;
	m.h.len = sizeof(m.h) + sizeof(m.u.hello);
	m.u.hello.version = FSP_VERSION;
	m.u.hello.kind = FSP_KIND_CTL;
	m.u.hello.pid = getpid();
	if (send(fd, &m, m.h.len, 0) < 0 || recv(fd, &m, sizeof(m), 0) <= 0)
		goto out;
	memset(&m, 0, sizeof(m));
	m.h.type = FSP_VERBS_STATS;
	m.h.seq = 2;
	m.h.len = sizeof(m.h);
	if (send(fd, &m, m.h.len, 0) < 0 ||
	    recv(fd, &m, sizeof(m), 0) < (ssize_t)(sizeof(m.h) + sizeof(m.u.st)) || m.h.status < 0)
		goto out;
	*st = m.u.st;
	ret = 0;
out:
	close(fd);
	return ret;
}

static int cmd_daemon_stats(void)
{
	struct fsp_verbs_stats st;
	int ret = daemon_stats(&st);

	if (ret)
		return ret;
	printf("conns %" PRIu64 " qpn_blocks %" PRIu64 " mcast_members %" PRIu64 " pkts %" PRIu64
	       " drop_route %" PRIu64 " drop_noqp %" PRIu64 " drop_bad %" PRIu64
	       " drop_fault %" PRIu64 " grants %" PRIu64 " refusals %" PRIu64 " gen %" PRIu64 "\n",
	       st.conns, st.qpn_blocks, st.mcast_members, st.pkts, st.drop_route, st.drop_noqp,
	       st.drop_bad, st.drop_fault, st.grants, st.refusals, st.gen);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand((unsigned)getpid());
	if (argc >= 2 && !strcmp(argv[1], "loopback"))
		return cmd_loopback();
	if (argc >= 3 && !strcmp(argv[1], "server"))
		return cmd_pair(argv[2], true, argc >= 4 ? atol(argv[3]) : 0, false);
	if (argc >= 3 && !strcmp(argv[1], "client"))
		return cmd_pair(argv[2], false, 0, false);
	if (argc >= 4 && !strcmp(argv[1], "read-send"))
		return cmd_pair(argv[2], false, atol(argv[3]), false);
	if (argc >= 4 && !strcmp(argv[1], "stream"))
		return cmd_pair(argv[2], false, atol(argv[3]), true);
	if (argc >= 4 && !strcmp(argv[1], "mcast-recv"))
		return cmd_mcast(argv[2], atoi(argv[3]), false,
				 !(argc >= 5 && !strcmp(argv[4], "noattach")));
	if (argc >= 4 && !strcmp(argv[1], "mcast-send"))
		return cmd_mcast(argv[2], atoi(argv[3]), true, false);
	if (argc >= 3 && !strcmp(argv[1], "churn"))
		return cmd_churn(atoi(argv[2]), true, 0);
	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return cmd_churn(atoi(argv[2]), false, argc >= 4 ? atoi(argv[3]) : 0);
	if (argc >= 4 && !strcmp(argv[1], "ud-server"))
		return cmd_ud_server(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "ud-client"))
		return cmd_ud_client(argv[2], atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "qpn-unique"))
		return cmd_qpn_unique(atoi(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "daemon-stats"))
		return cmd_daemon_stats();
	fprintf(stderr, "usage: see the comment at the top of verbs_check.c\n");
	return 2;
}
