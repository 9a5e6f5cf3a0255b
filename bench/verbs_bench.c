/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * verbs_bench: speed of the soft verbs between two simulated hosts,
 * printed next to a plain UNIX-socket ping-pong on the same machine.
 *
 *   fabsim run h1 -- verbs_bench [PEER_HOST] [ITERS]
 *
 * It starts its peer itself (re-executing with FABSIM_HOST=PEER_HOST,
 * default h2) and exchanges QP numbers over a socketpair.  Printed:
 *   - UNIX socket ping-pong round trip (blocking read/write)
 *   - RC SEND ping-pong round trip, woken by completion events
 *   - RC SEND ping-pong round trip, busy polling the CQ
 *     (these three as median and p99 of single round trips, and the
 *     RC / UNIX ratio of medians and median, p10 and p90 of per-block
 *     ratios)
 *   - RDMA WRITE latency: post to completion (the target's HCA answers,
 *     its application does nothing)
 *   - QP create -> RTS time (median and p99)
 *
 * The three ping-pongs are interleaved in short blocks (BLOCK round trips
 * of each kind in turn, ITERS / BLOCK times), not run one after another:
 * on a small shared VM the speed of the machine drifts by several times
 * within seconds, so a baseline measured at another moment than the RC
 * ping-pong makes their ratio meaningless.
 *
 * Numbers only; nothing is asserted.  VERBS_BENCH_ONLY=unix,events,poll,
 * write,churn (a comma-separated subset) runs only those parts, for
 * profiling one of them.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

struct info {
	uint32_t lid, qpn, psn, rkey;
	uint64_t addr;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *ch;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *buf;
static struct ibv_port_attr port;

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The pct-th percentile of n samples, sorting them in place. */
static double pct(double *v, int n, int pct)
{
	size_t i = (size_t)n * (size_t)pct / 100;

	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[i < (size_t)n ? i : (size_t)n - 1];
}

/* Whether a part of the benchmark runs (VERBS_BENCH_ONLY, all if unset). */
static bool part(const char *name)
{
	const char *only = getenv("VERBS_BENCH_ONLY");
	size_t n = strlen(name);

	if (!only || !*only)
		return true;
	for (const char *p = only; (p = strstr(p, name)); p += n)
		if ((p == only || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
	fprintf(stderr, "verbs_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void xfer(int fd, void *p, size_t n, bool out)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = out ? write(fd, b, n) : read(fd, b, n);

		if (r == 0) {
			fprintf(stderr, "verbs_bench: peer closed the socket\n");
			exit(1);
		}
		if (r < 0)
			die(out ? "write" : "read");
		b += r;
		n -= (size_t)r;
	}
}

static void setup(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = {
	    .cap = {.max_send_wr = 64,
		    .max_recv_wr = 64,
		    .max_send_sge = 1,
		    .max_recv_sge = 1,
		    .max_inline_data = 64},
	    .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT,
	    .port_num = 1,
	    .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
	};

	if (!l || !l[0])
		die("no device");
	ctx = ibv_open_device(l[0]);
	if (!ctx || ibv_query_port(ctx, 1, &port))
		die("open");
	pd = ibv_alloc_pd(ctx);
	ch = ibv_create_comp_channel(ctx);
	cq = ibv_create_cq(ctx, 128, NULL, ch, 0);
	buf = calloc(1, 4096);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	if (!pd || !ch || !cq || !buf || !mr || !qp)
		die("resources");
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
}

static void connect_to(const struct info *r, uint32_t my_psn)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = IBV_MTU_2048,
	    .dest_qp_num = r->qpn,
	    .rq_psn = r->psn,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 1,
	    .ah_attr = {.dlid = (uint16_t)r->lid, .port_num = 1},
	};

	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

static void post_recv(void)
{
	struct ibv_sge sg = {.addr = (uintptr_t)buf + 2048, .length = 64, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sg, .num_sge = 1}, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("post_recv");
}

static unsigned int nposted;

/* SENDs are signalled one in 16 (enough to reclaim SQ slots), as latency
 * benchmarks do, so completion events are for the receives; RDMA WRITEs
 * always, their completion is what is measured. */
static void post_send(enum ibv_wr_opcode op, const struct info *r)
{
	struct ibv_sge sg = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sg,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_INLINE},
			   *bad;

	if (op != IBV_WR_SEND || ++nposted % 16 == 0)
		wr.send_flags |= IBV_SEND_SIGNALED;

	if (r) {
		wr.wr.rdma.remote_addr = r->addr;
		wr.wr.rdma.rkey = r->rkey;
	}
	if (ibv_post_send(qp, &wr, &bad))
		die("post_send");
}

/* Wait for one completion of the given opcode (others are counted). */
static void wait_op(enum ibv_wc_opcode want, bool events)
{
	struct ibv_wc wc;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			die("poll");
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "completion: %s\n", ibv_wc_status_str(wc.status));
				exit(1);
			}
			if (wc.opcode == want)
				return;
			continue;
		}
		if (events) {
			struct ibv_cq *ecq;
			void *ectx;

			if (ibv_req_notify_cq(cq, 0))
				die("notify");
			/* Re-check: a completion may have raced the arming. */
			n = ibv_poll_cq(cq, 1, &wc);
			if (n == 1) {
				if (wc.status != IBV_WC_SUCCESS)
					exit(1);
				if (wc.opcode == want)
					return;
				continue;
			}
			if (ibv_get_cq_event(ch, &ecq, &ectx))
				die("get_cq_event");
			ibv_ack_cq_events(ecq, 1);
		}
	}
}

enum kind { K_UNIX, K_EVENTS, K_POLL, NKINDS };

static const struct {
	const char *part;  /* its VERBS_BENCH_ONLY name */
	const char *label; /* its line in the output */
} kinds[NKINDS] = {
    [K_UNIX] = {"unix", "UNIX socket ping-pong (blocking):"},
    [K_EVENTS] = {"events", "RC SEND ping-pong (completion events):"},
    [K_POLL] = {"poll", "RC SEND ping-pong (busy polling):"},
};

/* Round trips of one kind in a row: short, so that all kinds see the
 * machine in the same state, but long enough that switching kinds (the
 * peer moving from a socket read to a CQ wait) is a small part of it. */
#define BLOCK 50

static int block_len(int iters)
{
	return iters < BLOCK ? iters : BLOCK;
}

static int nblocks(int iters)
{
	return iters / block_len(iters);
}

/* The passive half of one round trip: wait for the ping, answer it. */
static void serve_one(int fd, enum kind k)
{
	uint64_t v;

	if (k == K_UNIX) {
		xfer(fd, &v, sizeof(v), false);
		xfer(fd, &v, sizeof(v), true);
		return;
	}
	wait_op(IBV_WC_RECV, k == K_EVENTS);
	post_recv();
	post_send(IBV_WR_SEND, NULL);
}

/* The active half of one round trip, timed. */
static double ping_one(int fd, enum kind k)
{
	double t0 = now_us();
	uint64_t v = 0;

	if (k == K_UNIX) {
		xfer(fd, &v, sizeof(v), true);
		xfer(fd, &v, sizeof(v), false);
	} else {
		post_send(IBV_WR_SEND, NULL);
		wait_op(IBV_WC_RECV, k == K_EVENTS);
		post_recv();
	}
	return now_us() - t0;
}

static int serve(int fd, int iters)
{
	struct info me, peer;

	setup();
	me = (struct info){port.lid, qp->qp_num, 0x1000, mr->rkey, (uintptr_t)buf};
	xfer(fd, &peer, sizeof(peer), false);
	for (int i = 0; i < 64; i++)
		post_recv();
	connect_to(&peer, me.psn);
	xfer(fd, &me, sizeof(me), true);
	/* The ping-pongs, in the same interleaved order as the client. */
	for (int b = 0; b < nblocks(iters); b++)
		for (int k = 0; k < NKINDS; k++)
			for (int i = 0; part(kinds[k].part) && i < block_len(iters); i++)
				serve_one(fd, (enum kind)k);
	/* RDMA WRITE: nothing to do; wait until the client says done. */
	{
		char c;

		xfer(fd, &c, 1, false);
	}
	return 0;
}

static void qp_churn(int n)
{
	double *t = calloc((size_t)n, sizeof(*t));
	struct info self = {port.lid, 0, 1, 0, 0};

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
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
					.port_num = 1,
					.qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
		struct ibv_qp *save = qp;
		double t0 = now_us();

		qp = ibv_create_qp(pd, &ia);
		if (!qp || ibv_modify_qp(qp, &a,
					 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS))
			die("churn");
		self.qpn = qp->qp_num;
		connect_to(&self, 1);
		t[i] = now_us() - t0;
		ibv_destroy_qp(qp);
		qp = save;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%-44s median %8.2f us   p99 %8.2f us   (%d QPs)\n", "QP create -> RTS:", t[n / 2],
	       t[n * 99 / 100], n);
	free(t);
}

/*
 * Run the interleaved ping-pongs: per block, BLOCK round trips of each
 * enabled kind in turn.  Prints every kind's median and p99, then RC over
 * UNIX two ways: the ratio of the overall medians, and the median of the
 * ratios of the medians of each block (each block's RC against the UNIX
 * baseline measured just before it).
 */
static void ping_pongs(int fd, int iters)
{
	int nb = nblocks(iters), bl = block_len(iters), n = nb * bl;
	double *all[NKINDS] = {0}, *blk[NKINDS] = {0}, *ratio[NKINDS] = {0};
	double med[NKINDS] = {0};
	bool on[NKINDS];

	for (int k = 0; k < NKINDS; k++) {
		on[k] = part(kinds[k].part);
		all[k] = calloc((size_t)n, sizeof(double));
		blk[k] = calloc((size_t)bl, sizeof(double));
		ratio[k] = calloc((size_t)nb, sizeof(double));
		if (!all[k] || !blk[k] || !ratio[k])
			die("calloc");
	}
	for (int b = 0; b < nb; b++) {
		double bmed[NKINDS] = {0};

		for (int k = 0; k < NKINDS; k++) {
			for (int i = 0; on[k] && i < bl; i++)
				all[k][b * bl + i] = blk[k][i] = ping_one(fd, (enum kind)k);
			if (on[k])
				bmed[k] = pct(blk[k], bl, 50);
		}
		for (int k = K_EVENTS; k < NKINDS; k++)
			ratio[k][b] = bmed[K_UNIX] > 0 ? bmed[k] / bmed[K_UNIX] : 0;
	}
	printf("%d blocks of %d round trips of each kind, interleaved\n", nb, bl);
	for (int k = 0; k < NKINDS; k++) {
		if (!on[k])
			continue;
		med[k] = pct(all[k], n, 50);
		printf("%-44s median %8.2f us   p99 %8.2f us   round trip\n", kinds[k].label,
		       med[k], pct(all[k], n, 99));
	}
	if (on[K_UNIX] && (on[K_EVENTS] || on[K_POLL])) {
		printf("%-44s", "RC SEND / UNIX, ratio of medians:");
		for (int k = K_EVENTS; k < NKINDS; k++)
			if (on[k])
				printf(" %8.2fx (%s)", med[k] / med[K_UNIX], kinds[k].part);
		printf("\n%-44s", "RC SEND / UNIX, median of per-block ratios:");
		for (int k = K_EVENTS; k < NKINDS; k++)
			if (on[k])
				printf(" %8.2fx (%s)", pct(ratio[k], nb, 50), kinds[k].part);
		/* How much the blocks disagree: their p10 and p90. */
		printf("\n%-44s", "  per-block ratios, p10 .. p90:");
		for (int k = K_EVENTS; k < NKINDS; k++)
			if (on[k])
				printf("  %.2f .. %.2f (%s)", pct(ratio[k], nb, 10),
				       pct(ratio[k], nb, 90), kinds[k].part);
		printf("\n");
	}
	for (int k = 0; k < NKINDS; k++) {
		free(all[k]);
		free(blk[k]);
		free(ratio[k]);
	}
}

int main(int argc, char **argv)
{
	const char *peer_host = argc > 1 ? argv[1] : "h2";
	int iters = argc > 2 ? atoi(argv[2]) : 2000;
	struct info me, peer;
	int sv[2], status;
	double t0, wr_rt;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 3 && !strcmp(argv[1], "--serve"))
		return serve(atoi(argv[2]), atoi(argv[3]));
	if (iters < 10)
		iters = 10;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char fdarg[16], itarg[16];

		close(sv[0]);
		snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
		snprintf(itarg, sizeof(itarg), "%d", iters);
		setenv("FABSIM_HOST", peer_host, 1);
		execl("/proc/self/exe", argv[0], "--serve", fdarg, itarg, (char *)NULL);
		die("exec");
	}
	close(sv[1]);
	setup();
	me = (struct info){port.lid, qp->qp_num, 0x2000, mr->rkey, (uintptr_t)buf};
	xfer(sv[0], &me, sizeof(me), true);
	xfer(sv[0], &peer, sizeof(peer), false);
	for (int i = 0; i < 64; i++)
		post_recv();
	connect_to(&peer, me.psn);
	printf("verbs_bench: LID %u -> LID %u (%s), %d iterations\n", port.lid, peer.lid, peer_host,
	       nblocks(iters) * block_len(iters));

	ping_pongs(sv[0], iters);

	if (part("write")) {
		t0 = now_us();
		for (int i = 0; i < iters; i++) {
			post_send(IBV_WR_RDMA_WRITE, &peer);
			wait_op(IBV_WC_RDMA_WRITE, false);
		}
		wr_rt = now_us() - t0;
		printf("%-44s %8.2f us post to completion (target idle)\n",
		       "RDMA WRITE 8 bytes:", wr_rt / iters);
	}
	xfer(sv[0], "x", 1, true);
	waitpid(pid, &status, 0);

	if (part("churn"))
		qp_churn(2000);
	return 0;
}
