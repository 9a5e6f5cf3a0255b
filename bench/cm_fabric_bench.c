/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * cm_fabric_bench: the CM runtime on the simulated fabric, with real (soft
 * verbs) QPs.  Prints, from one run:
 *   - the umad round-trip floor: a plain libibumad ping-pong (vendor class
 *     0x09 Get / GetResp) between the two hosts;
 *   - connect latency one connection at a time, REQ sent -> ESTABLISHED on
 *     the active side (REP received, QP to RTR and RTS, RTU sent), median
 *     and p99, and REQ sent -> REP received alone, next to the floor
 *     measured alongside (ten pings before every tenth connect), with the
 *     wake-ups (voluntary context switches) each thread paid per connect:
 *     with the application moving its QPs (cm_runtime_init_qp_attr), with
 *     the runtime's loop thread moving them (auto QP, as the kernel's
 *     rdma_cm does: what a librdmacm user will see), and without verbs;
 *   - connections per second with N handshakes in flight at once;
 *   - engine memory per connection.
 * It asserts nothing.
 *
 *   cm_fabric_bench [--n N] [--seq S] [--pings P] [--only ROW]
 *                                                    # all by itself: starts a
 *        fabric with `fabsim up --gen b2b` in a temporary directory ($FABSIM,
 *        else ../sim/fabsim next to this program), runs both sides, stops it
 *   cm_fabric_bench server                            # on one fabric host
 *   cm_fabric_bench client --dgid GID [--dlid LID] ...  # on another
 */
#include "config.h"

#include "bench_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/random.h>
#include <sys/wait.h>

#include <infiniband/umad.h>
#include <infiniband/verbs.h>

#include "cm/runtime.h"

#define SERVICE (0x0000000001060000ull + 18516)
#define SERVICE_CM_ONLY (SERVICE + 1)
#define SERVICE_ON_LOOP (SERVICE + 2) /* CM only, answered on the loop thread */
#define SERVICE_LOOP_QP (SERVICE + 3) /* verbs, QPs moved by the loop threads */
#define ON_LOOP_USER 2
#define LOOP_QP_USER 3
#define FIRST_SLOT 16 /* server QP slots: above the listeners' cookies */

/* Active side, on-loop run: when each connection reached ESTABLISHED. */
const char *bench_prog = "cm_fabric_bench";

static uint64_t *est_at;
static unsigned est_n;
#define EST_BASE (1ull << 40)

static unsigned n_flight = 1000, n_seq = 200, n_pings = 2000;
static uint8_t dgid[16];
static int dlid = -1;
static atomic_bool stop;
static int server_pid = -1, fabsimd_pid = -1; /* for wake-up counts (same machine) */

/*
 * Wake-ups: voluntary context switches (a thread went to sleep, then was
 * woken) per thread of a process, from /proc, grouped as the application's
 * main thread, the madcm loop thread(s) ("madcm-loop") and the others (soft
 * verbs, the ping responder).  Latency here is mostly wake-ups, so each
 * row prints how many each side paid per connection.
 */
enum { W_APP, W_LOOP, W_OTHER, W__N };

struct wakes {
	uint64_t v[3][W__N];   /* client, server, fabsimd */
	uint64_t cpu[3][W__N]; /* ns on a CPU (schedstat) */
	uint64_t probe;	       /* ns this thread spent reading /proc so far */
};

static uint64_t probe_ns; /* the CPU time wakes_get() itself costs, in total */

static void proc_wakes(int pid, uint64_t out[W__N], uint64_t cpu[W__N])
{
	char path[64], line[128], comm[32];
	struct dirent *de;
	DIR *d;

	memset(out, 0, sizeof(uint64_t) * W__N);
	memset(cpu, 0, sizeof(uint64_t) * W__N);
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		int tid = atoi(de->d_name);
		unsigned long long n = 0;
		int kind;
		FILE *f;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
		f = fopen(path, "r");
		comm[0] = 0;
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		kind = tid == pid ? W_APP : strstr(comm, "madcm-loop") ? W_LOOP : W_OTHER;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &n) == 1)
				break;
		if (f)
			fclose(f);
		out[kind] += n;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
		f = fopen(path, "r");
		n = 0;
		if (f && fscanf(f, "%llu", &n) == 1)
			cpu[kind] += n;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

static void wakes_get(struct wakes *w)
{
	uint64_t t0 = bench_thread_cpu_ns();

	proc_wakes(getpid(), w->v[0], w->cpu[0]);
	proc_wakes(server_pid, w->v[1], w->cpu[1]);
	proc_wakes(fabsimd_pid, w->v[2], w->cpu[2]);
	probe_ns += bench_thread_cpu_ns() - t0;
	w->probe = probe_ns;
}

/* The wake-ups since *a, less those in *excl (NULL: none), per one of n. */
static void wakes_print(const struct wakes *a, const struct wakes *excl, unsigned n,
			const char *per)
{
	struct wakes b;
	double d[3][W__N], cpu[3] = {0};

	if (!n)
		return;
	wakes_get(&b);
	for (int p = 0; p < 3; p++)
		for (int k = 0; k < W__N; k++) {
			d[p][k] = (double)(b.v[p][k] - a->v[p][k] - (excl ? excl->v[p][k] : 0)) / n;
			cpu[p] +=
			    (double)(b.cpu[p][k] - a->cpu[p][k] - (excl ? excl->cpu[p][k] : 0)) /
			    n / 1000.0;
		}
	/* Reading /proc is not what is measured: take it out. */
	cpu[0] -= (double)(b.probe - a->probe) / n / 1000.0;
	printf("  wake-ups per %s: client app %.1f loop %.1f other %.1f", per, d[0][W_APP],
	       d[0][W_LOOP], d[0][W_OTHER]);
	if (server_pid > 0)
		printf("; server app %.1f loop %.1f other %.1f", d[1][W_APP], d[1][W_LOOP],
		       d[1][W_OTHER]);
	if (fabsimd_pid > 0)
		printf("; fabsimd %.1f", d[2][W_APP] + d[2][W_LOOP] + d[2][W_OTHER]);
	printf("\n  CPU time per %s: client %.1f us", per, cpu[0]);
	if (server_pid > 0)
		printf(", server %.1f us", cpu[1]);
	if (fabsimd_pid > 0)
		printf(", fabsimd %.1f us", cpu[2]);
	printf("\n");
}

static uint32_t rand24(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)bench_now_ns();
	return v & 0xffffff;
}

/* ---- verbs ---- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static void dev_open(struct dev *d)
{
	struct ibv_device **l = ibv_get_device_list(NULL);

	if (!l || !l[0])
		bench_die("no verbs device", ENODEV);
	d->ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	if (!d->ctx)
		bench_die("ibv_open_device", errno);
	d->pd = ibv_alloc_pd(d->ctx);
	d->cq = d->pd ? ibv_create_cq(d->ctx, 4096, NULL, NULL, 0) : NULL;
	if (!d->cq)
		bench_die("pd/cq", errno);
}

static void dev_close(struct dev *d)
{
	ibv_destroy_cq(d->cq);
	ibv_dealloc_pd(d->pd);
	ibv_close_device(d->ctx);
}

static struct ibv_qp *qp_new(struct dev *d)
{
	struct ibv_qp_init_attr ia = {0};

	ia.send_cq = ia.recv_cq = d->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	return ibv_create_qp(d->pd, &ia);
}

/*
 * Move a QP with the engine's attributes; `rq_psn` >= 0 replaces RTR's
 * receive PSN, for the passive side before its accept (the PSN its REP
 * will announce).
 */
static int qp_move_psn(struct cm_runtime *rt, uint32_t id, struct ibv_qp *qp, enum ibv_qp_state s,
		       int64_t rq_psn)
{
	struct ibv_qp_attr a;
	int mask, rc = cm_runtime_init_qp_attr(rt, id, s, &a, &mask);

	if (rc)
		return rc;
	if (s == IBV_QPS_RTR && rq_psn >= 0)
		a.rq_psn = (uint32_t)rq_psn;
	return ibv_modify_qp(qp, &a, mask) ? -EIO : 0;
}

static int qp_move(struct cm_runtime *rt, uint32_t id, struct ibv_qp *qp, enum ibv_qp_state s)
{
	return qp_move_psn(rt, id, qp, s, -1);
}

static struct cm_runtime *
rt_open(bool sa, unsigned max, bool (*hook)(void *, struct cm_runtime *, const struct cm_event *))
{
	struct cm_runtime_params p = {0};
	struct cm_runtime *rt;
	int rc;

	p.on_loop_event = hook;
	p.sa = sa;
	p.sa_retries = 5;
	p.max_conns = max;
	rc = cm_runtime_open(&rt, &p);
	if (rc)
		bench_die("cm_runtime_open", rc);
	return rt;
}

/* ---- umad ping-pong ---- */

/* The client's ping port, open for the whole run: pings go between connects too. */
static struct bench_pinger pg;

/* One umad round trip (Get, GetResp) to the server's responder: ns, or 0 if lost. */
static uint64_t ping_once(void)
{
	uint8_t *mad = umad_get_mad(pg.buf);
	unsigned i = pg.seq++;
	uint64_t t0;
	int len = 256;

	memset(pg.buf, 0, pg.sz);
	mad[0] = 1; /* base version */
	mad[1] = PING_CLASS;
	mad[2] = PING_VERSION;
	mad[3] = 0x01;	      /* Get */
	mad[15] = (uint8_t)i; /* TID low byte; the port owns the high bits */
	mad[14] = (uint8_t)(i >> 8);
	mad[17] = 0x10; /* some attribute */
	umad_set_addr(pg.buf, dlid, 1, 0, 0x80010000);
	t0 = bench_now_ns();
	if (umad_send(pg.port, pg.agent, pg.buf, 256, 1000, 0) < 0)
		return 0;
	if (umad_recv(pg.port, pg.rbuf, &len, 2000) < 0 || umad_status(pg.rbuf))
		return 0;
	return bench_now_ns() - t0;
}

static double ping_floor(double *p99)
{
	uint64_t *t = calloc(n_pings, sizeof(*t));
	unsigned ok = 0;
	double med;

	if (!t)
		bench_die("ping", ENOMEM);
	for (unsigned i = 0; i < n_pings + 100; i++) {
		uint64_t d = ping_once();

		if (d && i >= 100) /* the first 100 warm up */
			t[ok++] = d;
	}
	med = bench_pct_us(t, ok, 50);
	*p99 = bench_pct_us(t, ok, 99);
	if (ok < n_pings)
		printf("  (%u of %u pings answered)\n", ok, n_pings);
	free(t);
	return med;
}

/* ---- server ---- */

/* The fast path (runtime on_loop_event): accept and DREP without leaving the loop. */
static bool server_hook(void *arg, struct cm_runtime *rt, const struct cm_event *ev)
{
	static uint32_t qpn = 0x600000;
	struct cm_accept_cmd ac = {0};

	(void)arg;
	if (ev->user != ON_LOOP_USER)
		return false;
	switch (ev->type) {
	case CM_EV_REQ_RCVD:
		ac.qpn = qpn++ & 0xffffff;
		ac.starting_psn = rand24();
		ac.rnr_retry_count = 7;
		cm_runtime_accept(rt, ev->id, ON_LOOP_USER, &ac);
		break;
	case CM_EV_DREQ_RCVD:
		cm_runtime_disconnect(rt, ev->id);
		break;
	default:
		break;
	}
	return true;
}

static void on_term(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

static int server(void)
{
	struct cm_runtime *rt = rt_open(false, 1u << 17, server_hook);
	struct dev d;
	pthread_t th;
	struct ibv_qp **qps = calloc(1u << 17, sizeof(*qps));
	uint64_t next = FIRST_SLOT;
	int rc;

	if (!qps)
		bench_die("server", ENOMEM);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	dev_open(&d);
	if (pthread_create(&th, NULL, bench_ping_responder, &stop))
		bench_die("pthread_create", errno);
	rc = cm_runtime_listen(rt, SERVICE, ~0ull, 0);
	if (rc >= 0)
		rc = cm_runtime_listen(rt, SERVICE_CM_ONLY, ~0ull, 1);
	if (rc >= 0)
		rc = cm_runtime_listen(rt, SERVICE_ON_LOOP, ~0ull, ON_LOOP_USER);
	if (rc >= 0)
		rc = cm_runtime_listen(rt, SERVICE_LOOP_QP, ~0ull, LOOP_QP_USER);
	if (rc < 0)
		bench_die("listen", rc);
	printf("server listening\n");
	fflush(stdout);
	while (!atomic_load(&stop)) {
		struct cm_event ev;
		struct cm_accept_cmd ac = {0};
		struct ibv_qp *qp;
		uint64_t slot;

		if (cm_runtime_wait_event(rt, &ev, 100))
			continue;
		switch (ev.type) {
		case CM_EV_REQ_RCVD:
			if (ev.user == 1) {
				/* CM only: a made-up QPN, no verbs on the path. */
				ac.qpn = 0x800000 | (uint32_t)(next++ & 0x7fffff);
				ac.starting_psn = rand24();
				ac.rnr_retry_count = 7;
				cm_runtime_accept(rt, ev.id, 0, &ac);
				break;
			}
			slot = next++ % (1u << 17);
			if (slot < FIRST_SLOT)
				slot = next = FIRST_SLOT, next++;
			qp = qp_new(&d);
			if (qp && ev.user == LOOP_QP_USER) {
				/* As rdma_accept in the kernel: the loop moves the QP, then REPs.
				 */
				ac.starting_psn = rand24();
				ac.responder_resources = ev.req.initiator_depth;
				ac.initiator_depth = ev.req.responder_resources;
				ac.rnr_retry_count = 7;
				if (cm_runtime_accept_qp(rt, ev.id, slot, &ac, qp, CM_RT_QP_INIT)) {
					ibv_destroy_qp(qp);
					break;
				}
				if (qps[slot])
					ibv_destroy_qp(qps[slot]);
				qps[slot] = qp;
				break;
			}
			ac.starting_psn = rand24();
			/* As rdma_accept: RTR and RTS, then the REP. */
			if (!qp || qp_move(rt, ev.id, qp, IBV_QPS_INIT) ||
			    qp_move_psn(rt, ev.id, qp, IBV_QPS_RTR, ac.starting_psn) ||
			    qp_move(rt, ev.id, qp, IBV_QPS_RTS)) {
				cm_runtime_reject(rt, ev.id, CM_REJ_NO_QP);
				if (qp)
					ibv_destroy_qp(qp);
				break;
			}
			ac.qpn = qp->qp_num;
			ac.responder_resources = ev.req.initiator_depth;
			ac.initiator_depth = ev.req.responder_resources;
			ac.rnr_retry_count = 7;
			if (qps[slot])
				ibv_destroy_qp(qps[slot]);
			qps[slot] = qp;
			cm_runtime_accept(rt, ev.id, slot, &ac);
			break;
		case CM_EV_DREQ_RCVD:
			cm_runtime_disconnect(rt, ev.id);
			break;
		case CM_EV_TIMEWAIT_EXIT:
		case CM_EV_REP_ERROR:
		case CM_EV_REJ_RCVD:
			if (ev.user >= FIRST_SLOT && ev.user < (1u << 17) && qps[ev.user]) {
				ibv_destroy_qp(qps[ev.user]);
				qps[ev.user] = NULL;
			}
			break;
		default:
			break;
		}
	}
	pthread_join(th, NULL);
	cm_runtime_close(rt);
	for (uint32_t i = 0; i < 1u << 17; i++)
		if (qps[i])
			ibv_destroy_qp(qps[i]);
	free(qps);
	dev_close(&d);
	return 0;
}

/* ---- client ---- */

/* On-loop run: RTU right from the loop, and note the time. */
static bool client_hook(void *arg, struct cm_runtime *rt, const struct cm_event *ev)
{
	(void)arg;
	if (ev->user < EST_BASE || ev->type != CM_EV_REP_RCVD)
		return false;
	if (cm_runtime_rtu(rt, ev->id) == 0 && ev->user - EST_BASE < est_n)
		est_at[ev->user - EST_BASE] = bench_now_ns();
	return false; /* the application still hears of it */
}

/* The path (rdma_resolve_route's work): from the SA, then from the cache. */
static void connect_tmpl(struct cm_runtime *rt, struct cm_connect_cmd *c)
{
	uint64_t t = bench_now_ns(), hit[100];
	int rc;

	memset(c, 0, sizeof(*c));
	rc = cm_runtime_resolve_path(rt, dgid, 0, &c->primary);
	if (rc)
		bench_die("path from the SA", rc);
	t = bench_now_ns() - t;
	for (unsigned i = 0; i < 100; i++) {
		struct cm_path p;

		hit[i] = bench_now_ns();
		if (cm_runtime_resolve_path(rt, dgid, 0, &p))
			bench_die("path from the cache", EIO);
		hit[i] = bench_now_ns() - hit[i];
	}
	printf("path lookup: from the SA %.1f us, cached: median %.2f us\n", t / 1000.0,
	       bench_pct_us(hit, 100, 50));
	c->service_id = SERVICE;
	c->qp_type = CM_QPT_RC;
	c->responder_resources = 1;
	c->initiator_depth = 1;
	c->remote_cm_response_timeout = 16;
	c->local_cm_response_timeout = 16;
	c->retry_count = 7;
	c->rnr_retry_count = 7;
	c->max_cm_retries = 15;
}

/* The active side's half of a handshake, after REP: RTR, RTS, RTU. */
static int finish(struct cm_runtime *rt, uint32_t id, struct ibv_qp *qp)
{
	int rc = qp_move(rt, id, qp, IBV_QPS_RTR);

	if (!rc)
		rc = qp_move(rt, id, qp, IBV_QPS_RTS);
	if (!rc)
		rc = cm_runtime_rtu(rt, id);
	return rc;
}

/* Disconnect every id and wait for the DREPs (TimeWait is not waited out). */
static void disconnect_all(struct cm_runtime *rt, const uint32_t *ids, unsigned n)
{
	struct cm_rt_cmd *c = calloc(n, sizeof(*c));
	unsigned left = n;
	uint64_t end = bench_now_ns() + 30000000000ull;

	if (!c)
		bench_die("disconnect", ENOMEM);
	for (unsigned i = 0; i < n; i++) {
		c[i].op = CM_RT_DISCONNECT;
		c[i].id = ids[i];
	}
	cm_runtime_exec_batch(rt, c, n);
	free(c);
	while (left && bench_now_ns() < end) {
		struct cm_event ev;

		if (cm_runtime_wait_event(rt, &ev, 100))
			continue;
		if (ev.type == CM_EV_DREP_RCVD || ev.type == CM_EV_DREQ_ERROR)
			left--;
	}
}

/*
 * Wait for event `want` (REP_RCVD, or ESTABLISHED with auto QP) of
 * connection `id`: 0, -ECONNREFUSED (REJ, timeout, QP error), -errno.
 */
static int wait_for(struct cm_runtime *rt, uint32_t id, enum cm_event_type want)
{
	struct cm_event ev;
	int rc;

	for (;;) {
		rc = cm_runtime_wait_event(rt, &ev, 10000);
		if (rc)
			return rc;
		if (ev.id != id)
			continue;
		if (ev.type == want)
			return 0;
		if (ev.type == CM_EV_REQ_ERROR || ev.type == CM_EV_REJ_RCVD ||
		    ev.type == CM_EV_CONNECT_ERROR)
			return -ECONNREFUSED;
	}
}

static int wait_rep(struct cm_runtime *rt, uint32_t id)
{
	return wait_for(rt, id, CM_EV_REP_RCVD);
}

/*
 * Medians (and p99) of one-at-a-time connects next to the floor; rep may be
 * NULL.  The floor is the median of the pings made between the connects
 * (fl, nfl): on a shared machine the load changes from second to second,
 * and a floor measured at another moment than the connects misleads.
 */
static void print_latency(uint64_t *rep, uint64_t *lat, unsigned ok, uint64_t *fl, unsigned nfl,
			  double first_floor)
{
	double lat_med = bench_pct_us(lat, ok, 50), floor_med = bench_pct_us(fl, nfl, 50);

	printf("  floor alongside (pings between the connects): median %.1f us\n", floor_med);
	if (rep) {
		double rep_med = bench_pct_us(rep, ok, 50);

		printf("  REQ sent -> REP received: median %.1f us (%.2fx the floor alongside, "
		       "%.2fx the first)\n",
		       rep_med, floor_med > 0 ? rep_med / floor_med : 0,
		       first_floor > 0 ? rep_med / first_floor : 0);
	}
	printf("  REQ sent -> ESTABLISHED : median %.1f us, p99 %.1f us (%.2fx the floor "
	       "alongside, %.2fx the first)\n",
	       lat_med, bench_pct_us(lat, ok, 99), floor_med > 0 ? lat_med / floor_med : 0,
	       first_floor > 0 ? lat_med / first_floor : 0);
}

/* What every client row works with. */
struct run {
	struct cm_runtime *rt;
	struct cm_connect_cmd tmpl;
	struct ibv_qp **qp; /* [0, seq): app moves; [seq, 2 seq): loop moves; then in flight */
	uint32_t *ids;
	uint64_t *lat, *rep;
	uint64_t *fl; /* the pings between this row's connects */
	unsigned nq, nfl;
	struct wakes ping_wakes; /* theirs, not counted for the connects */
	double floor_med;
};

/*
 * Pings alongside a row's connects, for its floor: before every tenth
 * connect, ten pings in a row (their wake-ups are taken out of the
 * connects'; reading them from /proc costs too much to do it per ping).
 */
static void ping_between(struct run *r, unsigned i)
{
	struct wakes a, b;

	if (i % 10)
		return;
	wakes_get(&a);
	for (unsigned k = 0; k < 10 && r->nfl < n_seq; k++) {
		uint64_t d = ping_once();

		if (d)
			r->fl[r->nfl++] = d;
	}
	wakes_get(&b);
	for (int p = 0; p < 3; p++)
		for (int k = 0; k < W__N; k++) {
			r->ping_wakes.v[p][k] += b.v[p][k] - a.v[p][k];
			r->ping_wakes.cpu[p][k] += b.cpu[p][k] - a.cpu[p][k];
		}
	/* b's reading is taken out with all the others (wakes_print) */
	r->ping_wakes.cpu[0][W_APP] -= b.probe - a.probe;
}

/* What every one-at-a-time row does before its loop: fresh floor samples
 * and ping wake-ups, and a snapshot of the wake-up counters. */
static void row_start(struct run *r, struct wakes *w0)
{
	r->nfl = 0;
	memset(&r->ping_wakes, 0, sizeof(r->ping_wakes));
	wakes_get(w0);
}

/* ... and after it: wake-ups per connect, then tear the connections down. */
static void row_finish(struct run *r, const struct wakes *w0)
{
	wakes_print(w0, &r->ping_wakes, n_seq, "connect");
	disconnect_all(r->rt, r->ids, n_seq);
}

/* One at a time, the application moves its QPs: REQ sent -> ESTABLISHED. */
static void row_verbs(struct run *r)
{
	unsigned ok = 0;
	struct wakes w0;

	row_start(r, &w0);
	for (unsigned i = 0; i < n_seq; i++) {
		struct cm_connect_cmd c = r->tmpl;
		uint64_t t;
		int rc;

		c.qpn = r->qp[i]->qp_num;
		c.starting_psn = rand24();
		c.user = i;
		ping_between(r, i);
		t = bench_now_ns();
		rc = cm_runtime_connect(r->rt, &c, &r->ids[i]);
		if (!rc)
			rc = qp_move(r->rt, r->ids[i], r->qp[i], IBV_QPS_INIT);
		if (!rc)
			rc = wait_rep(r->rt, r->ids[i]);
		if (!rc) {
			r->rep[ok] = bench_now_ns() - t;
			rc = finish(r->rt, r->ids[i], r->qp[i]);
		}
		if (!rc)
			r->lat[ok++] = bench_now_ns() - t;
	}
	printf("connect one at a time (%u of %u), active side\n", ok, n_seq);
	print_latency(r->rep, r->lat, ok, r->fl, r->nfl, r->floor_med);
	row_finish(r, &w0);
}

/*
 * rdma_cm style: both loop threads move the QPs (auto QP), the
 * applications only connect, accept (on their own threads) and take
 * ESTABLISHED.  QPs of their own: row_verbs' are in TimeWait.
 */
static void row_loop_qp(struct run *r)
{
	unsigned ok = 0;
	struct wakes w0;

	row_start(r, &w0);
	for (unsigned i = 0; i < n_seq; i++) {
		struct cm_connect_cmd c = r->tmpl;
		struct ibv_qp *q = r->qp[n_seq + i];
		uint64_t t;
		int rc;

		c.service_id = SERVICE_LOOP_QP;
		c.qpn = q->qp_num;
		c.starting_psn = rand24();
		c.user = i;
		ping_between(r, i);
		t = bench_now_ns();
		rc = cm_runtime_connect_qp(r->rt, &c, q, CM_RT_QP_INIT, &r->ids[i]);
		if (!rc)
			rc = wait_for(r->rt, r->ids[i], CM_EV_ESTABLISHED);
		if (!rc)
			r->lat[ok++] = bench_now_ns() - t;
	}
	printf("connect one at a time, with verbs, QP transitions on the loop thread "
	       "(rdma_cm style, %u)\n",
	       ok);
	print_latency(NULL, r->lat, ok, r->fl, r->nfl, r->floor_med);
	row_finish(r, &w0);
}

/* The same without verbs on either side: the CM handshake alone. */
static void row_cm_only(struct run *r)
{
	unsigned ok = 0;
	struct wakes w0;

	row_start(r, &w0);
	for (unsigned i = 0; i < n_seq; i++) {
		struct cm_connect_cmd c = r->tmpl;
		uint64_t t;
		int rc;

		c.service_id = SERVICE_CM_ONLY;
		c.qpn = 0x400000 + i;
		c.starting_psn = rand24();
		c.user = i;
		ping_between(r, i);
		t = bench_now_ns();
		rc = cm_runtime_connect(r->rt, &c, &r->ids[i]);
		if (!rc)
			rc = wait_rep(r->rt, r->ids[i]);
		if (!rc) {
			r->rep[ok] = bench_now_ns() - t;
			rc = cm_runtime_rtu(r->rt, r->ids[i]);
		}
		if (!rc)
			r->lat[ok++] = bench_now_ns() - t;
	}
	printf("connect one at a time, CM only (no QP transitions on either side, %u)\n", ok);
	print_latency(r->rep, r->lat, ok, r->fl, r->nfl, r->floor_med);
	row_finish(r, &w0);
}

/* CM only, and both sides answer on their loop threads (on_loop_event). */
static void row_on_loop(struct run *r)
{
	unsigned ok = 0;
	struct wakes w0;

	row_start(r, &w0);
	for (unsigned i = 0; i < n_seq; i++) {
		struct cm_connect_cmd c = r->tmpl;
		uint64_t t;
		int rc;

		c.service_id = SERVICE_ON_LOOP;
		c.qpn = 0x500000 + i;
		c.starting_psn = rand24();
		c.user = EST_BASE + i;
		est_at[i] = 0;
		ping_between(r, i);
		t = bench_now_ns();
		rc = cm_runtime_connect(r->rt, &c, &r->ids[i]);
		if (!rc)
			rc = wait_rep(r->rt, r->ids[i]);
		if (!rc && est_at[i])
			r->lat[ok++] = est_at[i] - t;
	}
	printf("connect one at a time, CM only, answered on the loop threads (%u)\n", ok);
	print_latency(NULL, r->lat, ok, r->fl, r->nfl, r->floor_med);
	row_finish(r, &w0);
}

/* Many in flight: all REQs out in batches, RTU as each REP comes. */
static void row_flight(struct run *r)
{
	unsigned est = 0, next = 0, fails = 0, base = 2 * n_seq;
	uint64_t t0 = bench_now_ns(), t1;

	while (est + fails < n_flight && bench_now_ns() - t0 < 60000000000ull) {
		struct cm_rt_cmd cmds[64];
		struct cm_event ev;
		unsigned k = 0;

		while (next < n_flight && k < 64) {
			unsigned i = base + next++;

			memset(&cmds[k], 0, sizeof(cmds[k]));
			cmds[k].op = CM_RT_CONNECT;
			cmds[k].connect = r->tmpl;
			cmds[k].connect.qpn = r->qp[i]->qp_num;
			cmds[k].connect.starting_psn = rand24();
			cmds[k].connect.user = i;
			k++;
		}
		if (k) {
			cm_runtime_exec_batch(r->rt, cmds, k);
			for (unsigned j = 0; j < k; j++) {
				unsigned i = (unsigned)cmds[j].connect.user;

				r->ids[i] = cmds[j].id;
				if (cmds[j].result ||
				    qp_move(r->rt, r->ids[i], r->qp[i], IBV_QPS_INIT))
					fails++;
			}
			continue;
		}
		if (cm_runtime_wait_event(r->rt, &ev, 100))
			continue;
		if (ev.user < base || ev.user >= r->nq)
			continue;
		if (ev.type == CM_EV_REP_RCVD) {
			if (finish(r->rt, ev.id, r->qp[ev.user]))
				fails++;
			else
				est++;
		} else if (ev.type == CM_EV_REQ_ERROR || ev.type == CM_EV_REJ_RCVD) {
			fails++;
		}
	}
	t1 = bench_now_ns();
	printf("connect %u in flight at once: %u established, %u failed in %.3f s: %.0f conn/s\n",
	       n_flight, est, fails, (t1 - t0) / 1e9, est / ((t1 - t0) / 1e9));
	disconnect_all(r->rt, r->ids + base, n_flight);
}

static const struct {
	const char *name;
	void (*fn)(struct run *r);
} rows[] = {
    {"verbs", row_verbs},    {"loopqp", row_loop_qp}, {"cm", row_cm_only},
    {"onloop", row_on_loop}, {"flight", row_flight},
};

static const char *only; /* --only ROW: that row alone (profiling) */

static int client(void)
{
	struct run r = {0};
	struct dev d;
	double floor_p99;
	struct wakes w0;

	r.nq = 2 * n_seq + n_flight;
	printf("umad round trip (plain libibumad ping-pong between the hosts)\n");
	bench_pinger_open(&pg);
	wakes_get(&w0);
	r.floor_med = ping_floor(&floor_p99);
	printf("  floor: median %.1f us, p99 %.1f us (%u pings)\n", r.floor_med, floor_p99,
	       n_pings);
	wakes_print(&w0, NULL, n_pings + 100, "ping");

	est_n = n_seq;
	est_at = calloc(n_seq, sizeof(*est_at));
	if (!est_at)
		bench_die("client", ENOMEM);
	r.rt = rt_open(true, 4 * r.nq + 64, client_hook);
	dev_open(&d);
	connect_tmpl(r.rt, &r.tmpl);
	r.qp = calloc(r.nq, sizeof(*r.qp));
	r.ids = calloc(r.nq, sizeof(*r.ids));
	r.lat = calloc(r.nq, sizeof(*r.lat));
	r.rep = calloc(r.nq, sizeof(*r.rep));
	r.fl = calloc(n_seq, sizeof(*r.fl));
	if (!r.qp || !r.ids || !r.lat || !r.rep || !r.fl)
		bench_die("client", ENOMEM);
	for (unsigned i = 0; i < r.nq; i++)
		if (!(r.qp[i] = qp_new(&d)))
			bench_die("ibv_create_qp", errno);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (!only || !strcmp(only, rows[i].name))
			rows[i].fn(&r);
	printf("engine memory per connection: %zu bytes\n", cm_engine_conn_size());
	cm_runtime_close(r.rt);
	bench_pinger_close(&pg);
	for (unsigned i = 0; i < r.nq; i++)
		ibv_destroy_qp(r.qp[i]);
	dev_close(&d);
	free(r.qp);
	free(r.ids);
	free(r.lat);
	free(r.rep);
	free(r.fl);
	free(est_at);
	return 0;
}

/* ---- auto: a fabric of our own ---- */

static int run_auto(const char *argv0, char **extra)
{
	char fabsim[PATH_MAX], self[PATH_MAX], dir[] = "/tmp/cm_fabric_bench.XXXXXX";
	char line[PATH_MAX + 64], srv[64] = "", cli[64] = "", gid[64] = "", lidbuf[16] = "";
	char spid[16], dpid[16];
	const char *env = getenv("FABSIM");
	int pfd[2], status = 1;
	pid_t sp, cp;
	FILE *f, *f2;

	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		bench_die("readlink /proc/self/exe", errno);
	self[n] = 0;
	if (env) {
		snprintf(fabsim, sizeof(fabsim), "%s", env);
	} else {
		char *slash;

		snprintf(fabsim, sizeof(fabsim), "%s", argv0);
		slash = strrchr(fabsim, '/');
		if (slash)
			slash[1] = 0;
		else
			strcpy(fabsim, "./");
		strncat(fabsim, "../sim/fabsim", sizeof(fabsim) - strlen(fabsim) - 1);
	}
	if (access(fabsim, X_OK))
		bench_die(fabsim, errno);
	if (!mkdtemp(dir))
		bench_die("mkdtemp", errno);
	printf("cm_fabric_bench: fabric in %s (fabsim up --gen b2b)\n", dir);
	fflush(stdout);
	if (bench_sh("'%s' --dir '%s' up --gen b2b >/dev/null", fabsim, dir)) {
		fprintf(stderr, "fabsim up failed\n");
		goto out;
	}
	snprintf(line, sizeof(line), "'%s' --dir '%s' hosts", fabsim, dir);
	if (bench_fabric_hosts(line, srv, cli, lidbuf, gid))
		goto down;
	if (pipe(pfd))
		bench_die("pipe", errno);
	sp = fork();
	if (sp == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execl(fabsim, fabsim, "--dir", dir, "run", srv, "--", self, "server", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	while (f && fgets(line, sizeof(line), f) && !strstr(line, "listening"))
		;
	printf("server on %s (lid %s), client on %s\n", srv, lidbuf, cli);
	fflush(stdout);
	snprintf(spid, sizeof(spid), "%d", (int)sp);
	snprintf(line, sizeof(line), "%s/fabsimd.pid", dir);
	f2 = fopen(line, "r");
	if (!f2 || !fgets(dpid, sizeof(dpid), f2))
		snprintf(dpid, sizeof(dpid), "-1");
	dpid[strcspn(dpid, "\n")] = 0;
	if (f2)
		fclose(f2);
	cp = fork();
	if (cp == 0) {
		char *av[40] = {
		    fabsim,	     "--dir",  dir, "run",    cli,    "--",	      self,
		    "client",	     "--dgid", gid, "--dlid", lidbuf, "--server-pid", spid,
		    "--fabsimd-pid", dpid};
		int k = 16;

		for (int i = 0; extra[i] && k < 39; i++)
			av[k++] = extra[i];
		av[k] = NULL;
		execv(fabsim, av);
		_exit(127);
	}
	waitpid(cp, &status, 0);
	kill(sp, SIGTERM);
	waitpid(sp, NULL, 0);
	if (f)
		fclose(f);
down:
	bench_sh("'%s' --dir '%s' down >/dev/null 2>&1", fabsim, dir);
out:
	bench_sh("rm -rf '%s'%s", dir, "");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"n", required_argument, NULL, 'n'},
	    {"seq", required_argument, NULL, 's'},
	    {"pings", required_argument, NULL, 'p'},
	    {"dgid", required_argument, NULL, 'g'},
	    {"dlid", required_argument, NULL, 'l'},
	    {"only", required_argument, NULL, 'o'},
	    {"server-pid", required_argument, NULL, 'S'},
	    {"fabsimd-pid", required_argument, NULL, 'F'},
	    {NULL, 0, NULL, 0},
	};
	const char *mode = argc > 1 && argv[1][0] != '-' ? argv[1] : "auto";
	char **opts_start = argv + (strcmp(mode, "auto") ? 2 : 1);
	struct in6_addr a6;
	int ch;

	setvbuf(stdout, NULL, _IOLBF, 0);
	optind = (int)(opts_start - argv);
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			n_flight = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			n_seq = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			n_pings = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'g':
			if (inet_pton(AF_INET6, optarg, &a6) != 1)
				bench_die("bad --dgid", EINVAL);
			memcpy(dgid, &a6, 16);
			break;
		case 'l':
			dlid = (int)strtol(optarg, NULL, 0);
			break;
		case 'o':
			only = optarg;
			break;
		case 'S':
			server_pid = (int)strtol(optarg, NULL, 0);
			break;
		case 'F':
			fabsimd_pid = (int)strtol(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: cm_fabric_bench [server | client --dgid GID --dlid LID]"
				" [--n N] [--seq S] [--pings P]\n"
				"       [--only verbs|loopqp|cm|onloop|flight]"
				" [--server-pid PID] [--fabsimd-pid PID]\n");
			return 2;
		}
	}
	if (!n_flight || n_flight > 100000 || !n_seq || n_seq > 100000 || !n_pings ||
	    n_pings > 1000000)
		bench_die("bad count", EINVAL);
	if (!strcmp(mode, "server"))
		return server();
	if (!strcmp(mode, "client")) {
		if (dlid < 0)
			bench_die("client needs --dgid and --dlid", EINVAL);
		return client();
	}
	if (!strcmp(mode, "auto"))
		return run_auto(argv[0], opts_start);
	bench_die(mode, EINVAL);
	return 2;
}
