/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rdmacm_bench: rdma-core's cmtime through madcm's public librdmacm API
 * (<rdma/rdma_cma.h>, lib/librdmacm.la) on the simulated fabric, next to
 * the raw CM engine (bench/cm_fabric_bench) and the umad round-trip floor
 * measured in the same run.  Prints, and asserts nothing:
 *   - per step, all N ids doing the step at once on one event channel
 *     (as cmtime does): create id, resolve addr, resolve route, create QP,
 *     connect (to ESTABLISHED), disconnect (to DISCONNECTED), destroy; the
 *     step's total, the time until the last call returned (the rest is
 *     waiting for events), the mean time of one id in it, per connection
 *     and connections per second;
 *   - the raw engine's connect rate with N in flight (cm_fabric_bench
 *     client --only flight, run on the same fabric just before) and the API
 *     overhead over it (target: at most 20%);
 *   - rdma_connect -> ESTABLISHED one connection at a time (median, p90,
 *     p99), next to the umad round-trip floor (a libibumad ping-pong, vendor
 *     class 0x09, to a responder thread in the server): first measured on
 *     its own, then alongside the connects (a ping in a connect's place,
 *     after the same set-up and right after an unmeasured ping, taking
 *     turns), and the ratio (target: within 1.3x); next to the handshake
 *     floor, measured the same way: a ping, its answer and a third MAD
 *     sent before the clock stops, what a CM's REQ, REP and RTU cost with
 *     no work on either side, so the connect over it is the CM's share;
 *     and next to the raw
 *     engine's one-at-a-time latency with its loop thread moving the QPs as
 *     rdma_cm does (cm_fabric_bench client --only loopqp); and the client
 *     thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) in a connect, in a
 *     ping and in a handshake floor, medians: with blocking waits that
 *     thread runs the CM's MADs, so the connect's over the handshake
 *     floor's is what the API costs the active side, the rest of the
 *     connect being waits.
 * The server (passive side) accepts everything, with an RC QP created on
 * each CONNECT_REQUEST, and disconnects when the client does.  QPs are RC
 * with one-entry queues, made with rdma_create_qp on one CQ per process
 * (as cmtime does today; -C: on the two CQs librdmacm makes for a QP given
 * none, as cmtime did).  Every wait has a timeout; the program kills only
 * the processes it started, by PID.
 *
 *   rdmacm_bench [-n N] [-i ITERS] [-p PINGS] [-P PORT] [-E] [-C] [-N] [-D]
 *                [-R ROUNDS] [-S] [-F CPU|any]
 *        all by itself: starts a fabric with `fabsim up --gen b2b` in a
 *        temporary directory ($FABSIM, else ../sim/fabsim next to this
 *        program), then in each round runs cm_fabric_bench ($CM_FABRIC_BENCH,
 *        else next to this program; -E: skip it) then this program's server
 *        on the first host and its client on the second (`fabsim run`), and
 *        stops the fabric.
 *        N: connections in flight (1000), ITERS: one-at-a-time connects
 *        (200), PINGS: floor pings (1000), PORT: the server's port (7471).
 *        Both sides wait in a blocking rdma_get_cm_event, as rping does
 *        (madcm then runs the CM's MADs on that thread); -N: poll(2) on a
 *        non-blocking channel fd instead.  -D: then start madcmd on both
 *        hosts (`fabsim madcmd HOST start`) and run the API round again
 *        through the daemons, and print both rounds' connect median and
 *        rate side by side (targets: at most 1.5x the latency, at least
 *        70% of the rate).  -R ROUNDS: that many rounds (4), each with its
 *        own engine run, and after them each round's one-at-a-time connect
 *        over its floors and the API's rate over the engine's, with their
 *        medians; with -D each round is an in-process round then a madcmd
 *        round (madcmd stopped between), and each pair's ratios and their
 *        medians are printed too, so a ratio is not one run's scheduling.
 *        Placement: each simulated host has a CPU of its own (the server's
 *        host, its programs and madcmd, on the first CPU; the client's on
 *        the last), as hosts of a real fabric have, and the fabric's
 *        processes (fabsimd, OpenSM; a real fabric's switches, which take
 *        no host's CPU) share the server's CPU in odd rounds and the
 *        client's in even ones, with each placement's medians printed.
 *        Left to the scheduler, a round's numbers depend on where it puts
 *        fabsimd and the hosts' threads, and the one-at-a-time ratio moved
 *        between 1.0 and 1.6 from run to run on a 2-CPU machine
 *        (docs/results/connect-latency.md).  -F CPU: the fabric's
 *        processes on that CPU in every round; -F any: on any CPU.  -S: no
 *        placement at all, every process on any CPU.  -H, which asked for
 *        the hosts' CPUs, is accepted and changes nothing.
 *   rdmacm_bench server [-P PORT] [-C]                 # on one fabric host
 *   rdmacm_bench client -s ADDR --dlid LID [-n N] [-i ITERS] [-p PINGS]
 *        [-P PORT] [-C] [--engine-rate CONN_PER_S] [--engine-lat US]
 *                                                      # on another
 * e.g. from a build directory: bench/rdmacm_bench -n 100
 * RDMACM_BENCH_MARKS=1: each step's CLOCK_MONOTONIC window on stderr
 * ("mark STEP START END", seconds), for `perf record -k CLOCK_MONOTONIC`
 * and `perf script --time START,END`.
 */
#include "config.h"

#include "bench_cm.h"
#include "bench_common.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/umad.h>
#include <rdma/rdma_cma.h>

#define EVENT_TIMEOUT_MS 10000 /* per event wait within a step */
#define STEP_TIMEOUT_MS 60000  /* a whole step, N ids at once */
#define RESOLVE_TIMEOUT_MS 2000
#define CLIENT_WATCHDOG_S 900 /* SIGALRM ends a process left behind */
#define SERVER_WATCHDOG_S 1200

const char *bench_prog = "rdmacm_bench";

static unsigned n_conn = 1000, n_iter = 200, n_pings = 1000;
static unsigned port = 7471;
static const char *server_addr = "198.18.0.1";
static int dlid = -1;
static double engine_rate; /* conn/s of the raw engine, 0 if unknown */
static double engine_lat;  /* its one-at-a-time REQ -> ESTABLISHED median, us */
static bool no_engine;
/* -D: after the in-process round, the same through madcmd (fabsim madcmd). */
static bool through_daemon;
/*
 * -R: rounds (in-process, or in-process / madcmd pairs); the CPU of each
 * host (-1: any), each its own unless -S or the machine has one CPU.
 */
#define MAX_ROUNDS 20
static unsigned rounds = 4;
static bool share_cpus;
static int host_cpu[2] = {-1, -1};
/* Hosts on CPUs of their own and no -F: the fabric on each host's in turn. */
static bool fabric_alternates;
static bool fabric_any;	    /* -F any: the fabric where the scheduler puts it */
static int fabric_cpu = -1; /* -F: where fabsimd and OpenSM run (-1: any CPU) */
static const char *host_name[2];
static atomic_bool stop;

/*
 * The floor of one hop to madcmd: the median round trip of a command-sized
 * message over a SOCK_SEQPACKET socketpair between this process and a
 * child echoing it, both blocking in recv as the library and the daemon
 * do; 0 when it cannot be measured.
 */
static double daemon_hop_floor_us(unsigned n)
{
	static uint64_t v[1000];
	uint8_t buf[600] = {0};
	int sv[2];
	pid_t pid;
	unsigned k = 0;

	if (n > 1000)
		n = 1000;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return 0;
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		while (recv(sv[1], buf, sizeof(buf), 0) > 0)
			if (send(sv[1], buf, sizeof(buf), MSG_NOSIGNAL) < 0)
				break;
		_exit(0);
	}
	close(sv[1]);
	for (unsigned i = 0; pid > 0 && i < n; i++) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		if (send(sv[0], buf, sizeof(buf), MSG_NOSIGNAL) < 0 ||
		    recv(sv[0], buf, sizeof(buf), 0) <= 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &b);
		v[k++] = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	}
	close(sv[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return k == n ? bench_pct_us(v, k, 50) : 0;
}

/* ---- umad ping-pong (as bench/cm_fabric_bench) ---- */

static struct bench_pinger pg;

/*
 * One umad round trip (Get, GetResp) to the server's responder: ns, or 0
 * if lost.  With `third`, the handshake floor: a Set follows the answer
 * and the clock stops when its send returns, as a CM's active side sends
 * the RTU before it reports ESTABLISHED (the responder drops the Set).
 */
static uint64_t ping_once(bool third)
{
	uint8_t *mad = umad_get_mad(pg.buf);
	unsigned i = pg.seq++;
	uint64_t t0;
	int len = 256;

	memset(pg.buf, 0, pg.sz);
	mad[0] = 1; /* base version */
	mad[1] = PING_CLASS;
	mad[2] = PING_VERSION;
	mad[3] = 0x01; /* Get */
	mad[15] = (uint8_t)i;
	mad[14] = (uint8_t)(i >> 8);
	mad[17] = 0x10;
	umad_set_addr(pg.buf, dlid, 1, 0, 0x80010000);
	t0 = bench_now_ns();
	if (umad_send(pg.port, pg.agent, pg.buf, 256, 1000, 0) < 0)
		return 0;
	if (umad_recv(pg.port, pg.rbuf, &len, 2000) < 0 || umad_status(pg.rbuf))
		return 0;
	if (third) {
		mad[3] = 0x02; /* Set, no answer */
		if (umad_send(pg.port, pg.agent, pg.buf, 256, 0, 0) < 0)
			return 0;
	}
	return bench_now_ns() - t0;
}

/* ---- events ---- */

static struct rdma_event_channel *chan;

/*
 * The next event on the channel within timeout_ms: 0 and *ev (to ack), or
 * -ETIMEDOUT, or -errno.  Blocking by default (a thread blocked in
 * rdma_get_cm_event, as rping waits); with -N the channel fd is
 * non-blocking: poll, then get.
 */
/* -N: wait with poll(2) on a non-blocking channel fd instead. */
static bool blocking_waits = true;

static int next_event(struct rdma_cm_event **ev, int timeout_ms)
{
	return bench_next_event(chan, blocking_waits, ev, timeout_ms);
}

static void chan_open(void)
{
	chan = bench_chan_open(blocking_waits);
}

/*
 * rdma_create_qp with an RC QP of one-entry queues: on one CQ of the
 * process (as cmtime today), or with -C on the two CQs the library makes
 * for a QP given none (as cmtime did).
 */
static bool lib_cqs;
static struct ibv_cq *shared_cq;

static int qp_create(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	if (!lib_cqs) {
		if (!shared_cq && !(shared_cq = ibv_create_cq(id->verbs, 4096, NULL, NULL, 0)))
			return -1;
		a.send_cq = a.recv_cq = shared_cq;
	}
	return rdma_create_qp(id, NULL, &a);
}

/* ---- server ---- */

static void on_term(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

static int server(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rdma_cm_id *lid;
	unsigned long reqs = 0, est = 0, disc = 0, errs = 0, qp_fail = 0, acc_fail = 0;
	pthread_t th;

	/*
	 * Without SA_RESTART (signal() sets it), so that a blocking
	 * rdma_get_cm_event ends with EINTR: the kernel restarts librdmacm's
	 * read(2) of the rdma_cm fd otherwise, and so does madcm.
	 */
	{
		struct sigaction sa = {.sa_handler = on_term};

		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}
	alarm(SERVER_WATCHDOG_S);
	chan_open();
	if (pthread_create(&th, NULL, bench_ping_responder, &stop))
		bench_die("pthread_create", errno);
	if (rdma_create_id(chan, &lid, NULL, RDMA_PS_TCP))
		bench_die("rdma_create_id (listen)", errno);
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	if (rdma_bind_addr(lid, (struct sockaddr *)&sin))
		bench_die("rdma_bind_addr", errno);
	if (rdma_listen(lid, 1024))
		bench_die("rdma_listen", errno);
	printf("server listening on port %u\n", port);
	fflush(stdout);
	while (!atomic_load(&stop)) {
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;
		struct rdma_conn_param cp;
		enum rdma_cm_event_type type;
		bool destroy = false;
		int rc = next_event(&ev, 100);

		if (rc == -ETIMEDOUT)
			continue;
		if (rc) {
			fprintf(stderr, "server: rdma_get_cm_event: %s\n", strerror(-rc));
			break;
		}
		id = ev->id;
		type = ev->event;
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			reqs++;
			if (qp_create(id)) {
				if (!qp_fail++)
					fprintf(stderr, "server: rdma_create_qp: %s\n",
						strerror(errno));
				rdma_reject(id, NULL, 0);
				destroy = true;
				break;
			}
			memset(&cp, 0, sizeof(cp));
			cp.responder_resources = ev->param.conn.initiator_depth;
			cp.initiator_depth = ev->param.conn.responder_resources;
			cp.rnr_retry_count = 7;
			if (rdma_accept(id, &cp)) {
				if (!acc_fail++)
					fprintf(stderr, "server: rdma_accept: %s\n",
						strerror(errno));
				destroy = true;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			est++;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			disc++;
			rdma_disconnect(id); /* the DREP */
			destroy = true;
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			break;
		default:
			/* REJECTED, CONNECT_ERROR, UNREACHABLE on an accepted id */
			if (errs++ < 5)
				fprintf(stderr, "server: event %s status %d\n",
					rdma_event_str(type), ev->status);
			destroy = id != lid;
			break;
		}
		rdma_ack_cm_event(ev);
		if (destroy) {
			if (id->qp)
				rdma_destroy_qp(id);
			rdma_destroy_id(id);
		}
	}
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	fprintf(stderr,
		"server: %lu requests, %lu established, %lu disconnected, %lu error events, "
		"%lu create_qp and %lu accept failures\n",
		reqs, est, disc, errs, qp_fail, acc_fail);
	rdma_destroy_id(lid);
	if (shared_cq)
		ibv_destroy_cq(shared_cq);
	rdma_destroy_event_channel(chan);
	return 0;
}

/* ---- client ---- */

enum step {
	S_CREATE_ID,
	S_RESOLVE_ADDR,
	S_RESOLVE_ROUTE,
	S_CREATE_QP,
	S_CONNECT,
	S_DISCONNECT,
	S_DESTROY,
	S__N
};

static const char *const step_name[S__N] = {
    "create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy",
};

struct node {
	struct rdma_cm_id *id;
	uint64_t start, end; /* of the current step */
	bool failed;
	enum step fail_step; /* where it failed, with what (-errno or event status) */
	int fail_status;
};

struct step_time {
	uint64_t total, calls, sum, max; /* calls: until the last call returned */
	unsigned ok;
};

static struct sockaddr_in dst;

static const char *ev_name(enum rdma_cm_event_type t)
{
	return rdma_event_str(t);
}

/* First few failures of a step, with what failed (reported, not fatal). */
static unsigned fail_msgs;

static void node_fail(struct node *n, enum step s, const char *what, int status)
{
	if (!n->failed && fail_msgs++ < 10)
		fprintf(stderr, "client: %s: %s (status %d%s%s)\n", step_name[s], what, status,
			status < 0 ? ", " : "", status < 0 ? strerror(-status) : "");
	if (!n->failed) {
		n->fail_step = s;
		n->fail_status = status;
	}
	n->failed = true;
}

/*
 * Wait until every node started in step s has its event `want` (or
 * failed): events of other types for a node are failures.  Returns when
 * all are done or on the step's timeout.
 */
static void collect(struct node *nodes, unsigned n, enum step s, enum rdma_cm_event_type want,
		    uint64_t step_start)
{
	unsigned left = 0;

	for (unsigned i = 0; i < n; i++)
		if (!nodes[i].failed && !nodes[i].end)
			left++;
	while (left) {
		struct rdma_cm_event *ev;
		struct node *nd;
		int rc = next_event(&ev, EVENT_TIMEOUT_MS);

		if (rc || bench_now_ns() - step_start > STEP_TIMEOUT_MS * 1000000ull) {
			fprintf(stderr, "client: %s: %u of %u ids without %s after %.1f s (%s)\n",
				step_name[s], left, n, ev_name(want),
				(bench_now_ns() - step_start) / 1e9,
				rc ? strerror(-rc) : "step timeout");
			if (!rc)
				rdma_ack_cm_event(ev);
			for (unsigned i = 0; i < n; i++)
				if (!nodes[i].failed && !nodes[i].end)
					nodes[i].failed = true;
			return;
		}
		nd = ev->id ? ev->id->context : NULL;
		if (!nd || nd < nodes || nd >= nodes + n || nd->failed || nd->end) {
			if (fail_msgs++ < 10)
				fprintf(stderr, "client: %s: stray event %s status %d\n",
					step_name[s], ev_name(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			continue;
		}
		if (ev->event == want) {
			nd->end = bench_now_ns();
		} else {
			char what[64];

			snprintf(what, sizeof(what), "event %s", ev_name(ev->event));
			node_fail(nd, s, what, ev->status);
		}
		left--;
		rdma_ack_cm_event(ev);
	}
}

/* Run step s on all nodes at once. */
static void run_step(struct node *nodes, unsigned n, enum step s, struct step_time *st)
{
	struct rdma_conn_param cp;
	uint64_t t0 = bench_now_ns(), calls;

	for (unsigned i = 0; i < n; i++) {
		struct node *nd = &nodes[i];
		int rc = 0;

		nd->end = 0;
		if (nd->failed && s != S_DESTROY)
			continue;
		nd->start = bench_now_ns();
		switch (s) {
		case S_CREATE_ID:
			rc = rdma_create_id(chan, &nd->id, nd, RDMA_PS_TCP);
			break;
		case S_RESOLVE_ADDR:
			rc = rdma_resolve_addr(nd->id, NULL, (struct sockaddr *)&dst,
					       RESOLVE_TIMEOUT_MS);
			break;
		case S_RESOLVE_ROUTE:
			rc = rdma_resolve_route(nd->id, RESOLVE_TIMEOUT_MS);
			break;
		case S_CREATE_QP:
			rc = qp_create(nd->id);
			break;
		case S_CONNECT:
			memset(&cp, 0, sizeof(cp));
			cp.responder_resources = 1;
			cp.initiator_depth = 1;
			cp.retry_count = 7;
			cp.rnr_retry_count = 7;
			rc = rdma_connect(nd->id, &cp);
			break;
		case S_DISCONNECT:
			rc = rdma_disconnect(nd->id);
			break;
		case S_DESTROY:
			if (!nd->id)
				continue;
			if (nd->id->qp)
				rdma_destroy_qp(nd->id);
			rc = rdma_destroy_id(nd->id);
			nd->id = NULL;
			break;
		default:
			break;
		}
		if (rc) {
			char what[64];

			snprintf(what, sizeof(what), "call failed");
			node_fail(nd, s, what, -errno);
			if (s == S_CREATE_ID)
				nd->id = NULL;
			continue;
		}
		if (s == S_CREATE_ID || s == S_CREATE_QP || s == S_DESTROY)
			nd->end = bench_now_ns();
	}
	calls = bench_now_ns() - t0;
	switch (s) {
	case S_RESOLVE_ADDR:
		collect(nodes, n, s, RDMA_CM_EVENT_ADDR_RESOLVED, t0);
		break;
	case S_RESOLVE_ROUTE:
		collect(nodes, n, s, RDMA_CM_EVENT_ROUTE_RESOLVED, t0);
		break;
	case S_CONNECT:
		collect(nodes, n, s, RDMA_CM_EVENT_ESTABLISHED, t0);
		break;
	case S_DISCONNECT:
		collect(nodes, n, s, RDMA_CM_EVENT_DISCONNECTED, t0);
		break;
	default:
		break;
	}
	memset(st, 0, sizeof(*st));
	st->total = bench_now_ns() - t0;
	if (getenv("RDMACM_BENCH_MARKS")) /* windows for perf record -k CLOCK_MONOTONIC */
		fprintf(stderr, "mark %s %.6f %.6f\n", step_name[s], t0 / 1e9,
			(t0 + st->total) / 1e9);
	st->calls = calls;
	for (unsigned i = 0; i < n; i++) {
		uint64_t d;

		if (!nodes[i].end)
			continue;
		d = nodes[i].end - nodes[i].start;
		st->ok++;
		st->sum += d;
		if (d > st->max)
			st->max = d;
	}
}

static void print_steps(const struct step_time *st, unsigned n)
{
	printf("%-14s %6s %10s %10s %10s %10s %10s %10s\n", "step", "ok", "total ms", "calls ms",
	       "mean us", "max ms", "us/conn", "conn/s");
	for (int s = 0; s < S__N; s++) {
		double tot = st[s].total / 1e6;

		printf("%-14s %6u %10.2f %10.2f %10.1f %10.2f %10.2f %10.0f\n", step_name[s],
		       st[s].ok, tot, st[s].calls / 1e6, st[s].ok ? st[s].sum / 1e3 / st[s].ok : 0,
		       st[s].max / 1e6, st[s].total / 1e3 / n,
		       tot > 0 ? st[s].ok / (tot / 1e3) : 0);
	}
}

/* The N-at-once steps, as cmtime. */
static void bench_steps(void)
{
	struct node *nodes = calloc(n_conn, sizeof(*nodes));
	struct step_time st[S__N];
	double api;

	if (!nodes)
		bench_die("client", ENOMEM);
	printf("\n%u connections, each step all at once (cmtime style, one event channel)\n",
	       n_conn);
	fail_msgs = 0;
	for (int s = 0; s < S__N; s++)
		run_step(nodes, n_conn, (enum step)s, &st[s]);
	print_steps(st, n_conn);
	api = st[S_CONNECT].total ? st[S_CONNECT].ok / (st[S_CONNECT].total / 1e9) : 0;
	if (engine_rate > 0 && api > 0)
		printf("connect rate: API %.0f conn/s, raw engine (cm_fabric_bench, same fabric) "
		       "%.0f conn/s: the API costs %+.1f%% over the engine (target <= +20%%)\n",
		       api, engine_rate, (engine_rate / api - 1) * 100);
	else
		printf("connect rate: API %.0f conn/s (no engine rate to compare with)\n", api);
	free(nodes);
}

/* One id through addr, route, QP: ready to connect; false on any failure. */
static bool prepare_one(struct node *nd)
{
	static const enum step s[] = {S_CREATE_ID, S_RESOLVE_ADDR, S_RESOLVE_ROUTE, S_CREATE_QP};
	struct step_time st;

	memset(nd, 0, sizeof(*nd));
	for (size_t k = 0; k < sizeof(s) / sizeof(s[0]) && !nd->failed; k++)
		run_step(nd, 1, s[k], &st);
	return !nd->failed;
}

/*
 * One connection at a time.  An rdma_connect refused with EBUSY (the QPN
 * the new QP got is still held by a connection in TimeWait: see the
 * report) is counted and retried with a new id and QP after 1 ms, until
 * n_iter connects made it or 60 s passed.
 */
static void bench_latency(double first_floor)
{
	uint64_t *lat = calloc(n_iter, sizeof(*lat)), *fl = calloc(n_iter, sizeof(*fl));
	uint64_t *fl3 = calloc(n_iter, sizeof(*fl3));
	/* The client thread's own CPU in each connect, ping and handshake floor (it runs the CM's
	 * MADs). */
	uint64_t *cpu_c = calloc(n_iter, sizeof(*cpu_c)), *cpu_p = calloc(n_iter, sizeof(*cpu_p));
	uint64_t *cpu_h = calloc(n_iter, sizeof(*cpu_h));
	uint64_t t0 = bench_now_ns(), busy_first = 0, busy_last = 0;
	unsigned ok = 0, nfl = 0, nfl3 = 0, busy = 0, other = 0, tries = 0;
	double lat_med, lat_p90, lat_p99, fl_med, fl3_med;

	if (!lat || !fl || !fl3 || !cpu_c || !cpu_p || !cpu_h)
		bench_die("client", ENOMEM);
	fail_msgs = 0;
	while (ok + other < n_iter && bench_now_ns() - t0 < 60000000000ull) {
		struct node nd;
		struct step_time st;

		if (!prepare_one(&nd)) {
			other++;
			run_step(&nd, 1, S_DESTROY, &st);
			continue;
		}
		/*
		 * Pings, handshake floors and connects take turns, each after
		 * the same set-up (id, address, route, QP) and right after an
		 * unmeasured ping, so that each starts from the same state of
		 * the CPUs: which CPU fabsimd last ran on, whether the server's
		 * is halted.  What came before moves a measure by tens of
		 * microseconds here (a connect right after a handshake floor's
		 * Set took 30 us less than one right after a ping).
		 */
		(void)ping_once(false);
		if (nfl3 <= ok && nfl3 < n_iter) {
			uint64_t c0 = bench_thread_cpu_ns(), d = ping_once(true),
				 c1 = bench_thread_cpu_ns();

			if (d) {
				cpu_h[nfl3] = c1 - c0;
				fl3[nfl3++] = d;
			}
			run_step(&nd, 1, S_DESTROY, &st);
			continue;
		}
		if (nfl <= ok && nfl < n_iter) {
			uint64_t c0 = bench_thread_cpu_ns(), d = ping_once(false),
				 c1 = bench_thread_cpu_ns();

			if (d) {
				cpu_p[nfl] = c1 - c0;
				fl[nfl++] = d;
			}
			run_step(&nd, 1, S_DESTROY, &st);
			continue;
		}
		tries++;
		uint64_t c0 = bench_thread_cpu_ns();

		run_step(&nd, 1, S_CONNECT, &st);
		if (nd.end) {
			cpu_c[ok] = bench_thread_cpu_ns() - c0;
			lat[ok++] = nd.end - nd.start;
			run_step(&nd, 1, S_DISCONNECT, &st);
		} else if (nd.fail_step == S_CONNECT && nd.fail_status == -EBUSY) {
			busy_last = bench_now_ns() - t0;
			if (!busy++)
				busy_first = busy_last;
		} else {
			other++;
		}
		run_step(&nd, 1, S_DESTROY, &st);
		if (nd.failed)
			usleep(1000);
	}
	lat_med = bench_pct_us(lat, ok, 50);
	lat_p90 = bench_pct_us(lat, ok, 90);
	lat_p99 = bench_pct_us(lat, ok, 99);
	fl_med = bench_pct_us(fl, nfl, 50);
	fl3_med = bench_pct_us(fl3, nfl3, 50);
	printf("\nrdma_connect -> ESTABLISHED, one connection at a time (%u of %u in %u tries, "
	       "%.1f s)\n",
	       ok, n_iter, tries, (bench_now_ns() - t0) / 1e9);
	if (busy)
		printf("  %u rdma_connect calls failed with EBUSY, from %.3f s to %.3f s into "
		       "this row (retried)\n",
		       busy, busy_first / 1e9, busy_last / 1e9);
	if (other)
		printf("  %u other failures (see stderr)\n", other);
	printf("  median %.1f us, p90 %.1f us, p99 %.1f us\n", lat_med, lat_p90, lat_p99);
	printf("  umad floor alongside (%u pings, each in a connect's place): median %.1f us\n",
	       nfl, fl_med);
	printf("  ratio: %.2fx the floor alongside, %.2fx the first floor (target <= 1.3x)\n",
	       fl_med > 0 ? lat_med / fl_med : 0, first_floor > 0 ? lat_med / first_floor : 0);
	/*
	 * The least a CM could take here: REQ, REP and RTU as bare MADs, no
	 * work on either side.  What the connect takes over it is the CM's
	 * (both sides' engine, events, QP moves and system calls).
	 */
	printf("  handshake floor alongside (%u: Get, GetResp, then a Set sent before the clock "
	       "stops, as the RTU before ESTABLISHED): median %.1f us, %.2fx the floor alongside; "
	       "the connect is %.2fx it\n",
	       nfl3, fl3_med, fl_med > 0 ? fl3_med / fl_med : 0,
	       fl3_med > 0 ? lat_med / fl3_med : 0);
	/* What of the connect is this thread's own work, and what is waiting. */
	printf("  client thread CPU (user+system): connect median %.1f us, ping median %.1f us, "
	       "handshake floor median %.1f us\n",
	       bench_pct_us(cpu_c, ok, 50), bench_pct_us(cpu_p, nfl, 50),
	       bench_pct_us(cpu_h, nfl3, 50));
	if (engine_lat > 0)
		printf("  raw engine, QPs moved on its loop as rdma_cm does (cm_fabric_bench "
		       "loopqp, same fabric): median %.1f us; the API is %.2fx that\n",
		       engine_lat, lat_med / engine_lat);
	free(cpu_c);
	free(cpu_p);
	free(cpu_h);
	free(lat);
	free(fl);
	free(fl3);
}

static int client(void)
{
	uint64_t *t = calloc(n_pings, sizeof(*t));
	unsigned ok = 0;
	double med, p90;

	alarm(CLIENT_WATCHDOG_S);
	if (!t)
		bench_die("client", ENOMEM);
	dst.sin_family = AF_INET;
	dst.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, server_addr, &dst.sin_addr) != 1)
		bench_die("bad server address", EINVAL);
	bench_pinger_open(&pg);
	for (unsigned i = 0; i < n_pings + 100; i++) {
		uint64_t d = ping_once(false);

		if (d && i >= 100) /* the first 100 warm up */
			t[ok++] = d;
	}
	med = bench_pct_us(t, ok, 50);
	p90 = bench_pct_us(t, ok, 90);
	printf("umad round trip floor (libibumad ping-pong to the server's host): median %.1f "
	       "us, p90 %.1f us (%u of %u pings)\n",
	       med, p90, ok, n_pings);
	free(t);
	chan_open();
	bench_steps();
	bench_latency(med);
	bench_pinger_close(&pg);
	if (shared_cq)
		ibv_destroy_cq(shared_cq);
	rdma_destroy_event_channel(chan);
	return 0;
}

/* ---- auto: a fabric of our own ---- */

static char fabsim[PATH_MAX], fdir[] = "/tmp/rdmacm_bench.XXXXXX";

/* The CPU host's processes run on (-H), or -1. */
static int cpu_of(const char *host)
{
	for (int i = 0; i < 2; i++)
		if (host_name[i] && !strcmp(host, host_name[i]))
			return host_cpu[i];
	return -1;
}

/*
 * How an idle CPU of this machine waits, printed with the numbers: in a
 * VM whose idle vCPUs halt at once, every MAD to a process on the other
 * CPU pays a halted vCPU's wake-up, and the umad floor is several times
 * what it is when they poll a while first (docs/results/connect-latency.md).
 */
/* The first line of a small file (sysfs), without its newline; "" if unread. */
static void first_line(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(buf, (int)cap, f))
		buf[0] = 0;
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

static void print_idle(void)
{
	char drv[64], poll[32];

	first_line("/sys/devices/system/cpu/cpuidle/current_driver", drv, sizeof(drv));
	first_line("/sys/module/haltpoll/parameters/guest_halt_poll_ns", poll, sizeof(poll));
	printf("idle CPUs: cpuidle driver %s", drv[0] ? drv : "(none)");
	if (poll[0])
		printf(", guest_halt_poll_ns %s%s", poll,
		       !strcmp(poll, "0") ? " (a vCPU halts as soon as it is idle)" : "");
	printf("\n");
}

/* The CPU set of `cpu` alone, or of every online CPU with -1. */
static void cpus_of(int cpu, cpu_set_t *set)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(set);
	for (long c = 0; c < n && c < CPU_SETSIZE; c++)
		if (cpu < 0 || c == cpu)
			CPU_SET((int)c, set);
}

/* Run this process on `cpu` alone (-1: on every CPU it may use). */
static void pin_self(int cpu)
{
	cpu_set_t set;

	cpus_of(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("rdmacm_bench: sched_setaffinity");
}

/*
 * Every thread of the fabric's daemons (fabsimd, OpenSM; their PIDs from
 * the fabric's directory) onto one CPU, or onto any with -1.
 */
static void pin_fabric(int cpu)
{
	static const char *const daemons[] = {"fabsimd", "opensm"};
	cpu_set_t set;

	cpus_of(cpu, &set);
	for (unsigned i = 0; i < sizeof(daemons) / sizeof(daemons[0]); i++) {
		char path[PATH_MAX + 64];
		struct dirent *de;
		int pid = 0;
		FILE *f;
		DIR *d;

		snprintf(path, sizeof(path), "%s/%s.pid", fdir, daemons[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		d = pid > 0 ? opendir(path) : NULL;
		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.' &&
			    sched_setaffinity((pid_t)atoi(de->d_name), sizeof(set), &set))
				perror("rdmacm_bench: sched_setaffinity (fabric)");
		if (d)
			closedir(d);
	}
}

/* `fabsim run HOST -- av...` with stdout to a pipe: the pid; lr reads it. */
static pid_t spawn_on(const char *host, char *const *av, struct bench_lines *lr)
{
	char *argv[48];
	int pfd[2], k = 0;
	pid_t pid;

	if (pipe(pfd))
		bench_die("pipe", errno);
	argv[k++] = fabsim;
	argv[k++] = "--dir";
	argv[k++] = fdir;
	argv[k++] = "run";
	argv[k++] = (char *)host;
	argv[k++] = "--";
	for (int i = 0; av[i] && k < 47; i++)
		argv[k++] = av[i];
	argv[k] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bench_die("fork", errno);
	if (pid == 0) {
		pin_self(cpu_of(host));
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execv(fabsim, argv);
		_exit(127);
	}
	close(pfd[1]);
	lr->fd = pfd[0];
	lr->len = 0;
	return pid;
}

/* Start a server on host, wait for its "listening" line: its pid, or -1. */
static pid_t start_server(const char *host, char *const *av, struct bench_lines *lr)
{
	char line[512];
	pid_t pid = spawn_on(host, av, lr);

	while (bench_read_line(lr, line, sizeof(line), 30000))
		if (strstr(line, "listening"))
			return pid;
	fprintf(stderr, "rdmacm_bench: %s did not start listening on %s\n", av[0], host);
	bench_reap(pid, 0, true);
	close(lr->fd);
	return -1;
}

/* Copy a client's output to ours until EOF or the deadline; its status. */
static int run_client(const char *host, char *const *av, int timeout_ms,
		      void (*line_fn)(const char *line))
{
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	static struct bench_lines lr;
	char line[1024];
	pid_t pid = spawn_on(host, av, &lr);
	int status;

	for (;;) {
		uint64_t now = bench_now_ns();

		if (now >= end) {
			fprintf(stderr, "rdmacm_bench: %s did not finish in %d s\n", av[0],
				timeout_ms / 1000);
			break;
		}
		if (!bench_read_line(&lr, line, sizeof(line), (int)((end - now) / 1000000)))
			break;
		if (line_fn)
			line_fn(line);
		else
			fputs(line, stdout);
	}
	status = bench_reap(pid, bench_now_ns() < end ? (int)((end - bench_now_ns()) / 1000000) : 0,
			    bench_now_ns() >= end);
	close(lr.fd);
	return status;
}

static void engine_line(const char *line)
{
	static const char est[] = "REQ sent -> ESTABLISHED : median ";
	const char *p = strstr(line, " in flight at once: ");
	double r;

	printf("  | %s", line);
	if (p && (p = strrchr(line, ':')) && sscanf(p + 1, "%lf conn/s", &r) == 1)
		engine_rate = r;
	p = strstr(line, est);
	if (p && sscanf(p + strlen(est), "%lf", &r) == 1)
		engine_lat = r;
}

/* What one API round printed: its rate and its one-at-a-time median. */
struct api_result {
	double rate, med;
	double floor_first, floor_along; /* the umad floor: on its own, alongside */
	double floor_hs;		 /* the handshake floor alongside */
	double engine_rate;		 /* the raw engine's, just before (0: none) */
	int fabric_cpu;			 /* where the fabric ran (-1: any CPU) */
};
static struct api_result *api_cur;
static struct api_result api_in[MAX_ROUNDS], api_d[MAX_ROUNDS];

static void api_line(const char *line)
{
	const char *p;
	double v;

	fputs(line, stdout);
	if (sscanf(line, "connect rate: API %lf", &v) == 1)
		api_cur->rate = v;
	else if (sscanf(line, "  median %lf us", &v) == 1)
		api_cur->med = v;
	else if (!strncmp(line, "umad round trip floor", 21) && (p = strstr(line, "median ")) &&
		 sscanf(p, "median %lf", &v) == 1)
		api_cur->floor_first = v;
	else if (!strncmp(line, "  umad floor alongside", 22) && (p = strstr(line, "median ")) &&
		 sscanf(p, "median %lf", &v) == 1)
		api_cur->floor_along = v;
	else if (!strncmp(line, "  handshake floor alongside", 27) &&
		 (p = strstr(line, "median ")) && sscanf(p, "median %lf", &v) == 1)
		api_cur->floor_hs = v;
}

/* One run of this program's server on srv and client on cli: the client's status. */
static int api_round(char *self, const char *srv, const char *cli, char *addr, char *lidbuf,
		     char *nb, char *ib, char *pb, char *portb, struct api_result *res)
{
	char *sav[8] = {self, "server", "-P", portb, NULL};
	int ks = 4, k = 14, status;
	char *cav[24] = {self, "client", "-s", addr, "--dlid", lidbuf, "-n", nb,
			 "-i", ib,	 "-p", pb,   "-P",     portb,  NULL};
	char errbuf[256], latb[32], rateb[32];
	static struct bench_lines so;
	pid_t sp;

	if (lib_cqs)
		sav[ks++] = "-C";
	if (!blocking_waits)
		sav[ks++] = "-N";
	if (!blocking_waits)
		cav[k++] = "-N";
	if (engine_rate > 0) {
		snprintf(rateb, sizeof(rateb), "%.0f", engine_rate);
		cav[k++] = "--engine-rate";
		cav[k++] = rateb;
	}
	if (engine_lat > 0) {
		snprintf(latb, sizeof(latb), "%.1f", engine_lat);
		cav[k++] = "--engine-lat";
		cav[k++] = latb;
	}
	if (lib_cqs)
		cav[k++] = "-C";
	cav[k] = NULL;
	printf("\nlibrdmacm API (rdmacm_bench client on %s -> server on %s)\n", cli, srv);
	fflush(stdout);
	sp = start_server(srv, sav, &so);
	if (sp < 0)
		return -1;
	api_cur = res;
	status = run_client(cli, cav, 600000, api_line);
	bench_reap(sp, 10000, true);
	/* The server's summary went to stderr; its stdout is ours to drain. */
	while (bench_read_line(&so, errbuf, sizeof(errbuf), 100))
		fputs(errbuf, stdout);
	close(so.fd);
	return status;
}

/* `fabsim madcmd HOST start|stop`, the daemon started on the host's CPU (-H). */
static int madcmd_ctl(const char *host, const char *what)
{
	char cmd[PATH_MAX * 2];
	int rc;

	snprintf(cmd, sizeof(cmd), "timeout 60 '%s' --dir '%s' madcmd %s %s >/dev/null", fabsim,
		 fdir, host, what);
	pin_self(cpu_of(host));
	rc = system(cmd);
	pin_self(-1);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_of(double *v, unsigned n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Print v[0..n) times `scale`, each with `each` and their median with `med`. */
static void print_values(const char *what, double *v, unsigned n, double scale, const char *each,
			 const char *med)
{
	printf("  %s:", what);
	for (unsigned i = 0; i < n; i++)
		printf(each, scale * v[i]);
	printf(med, scale * median_of(v, n));
	putchar('\n');
}

#define RATIOS " %.2f", " (median %.2fx)"
#define PERCENTS " %.0f%%", " (median %.0f%%)"

/* After -R in-process rounds: each round's connect over its floors (target 1.3x). */
static void latency_summary(unsigned n)
{
	double along[MAX_ROUNDS], first[MAX_ROUNDS], cost[MAX_ROUNDS], hs[MAX_ROUNDS];
	double hs_floor[MAX_ROUNDS], at[2][MAX_ROUNDS], cost_at[2][MAX_ROUNDS];
	unsigned k = 0, kc = 0, nat[2] = {0, 0}, ncat[2] = {0, 0};

	for (unsigned r = 0; r < n; r++)
		if (api_in[r].med > 0 && api_in[r].floor_along > 0 && api_in[r].floor_first > 0 &&
		    api_in[r].rate > 0) {
			/* Which host's CPU the fabric shared in this round (-1: none). */
			int h = -1;

			if (fabric_alternates)
				h = api_in[r].fabric_cpu == host_cpu[0] ? 0 : 1;

			along[k] = api_in[r].med / api_in[r].floor_along;
			first[k] = api_in[r].med / api_in[r].floor_first;
			if (h >= 0)
				at[h][nat[h]++] = along[k];
			if (api_in[r].engine_rate > 0) {
				cost[kc] = api_in[r].engine_rate / api_in[r].rate - 1;
				if (h >= 0)
					cost_at[h][ncat[h]++] = cost[kc];
				kc++;
			}
			hs[k] = api_in[r].floor_hs > 0 ? api_in[r].med / api_in[r].floor_hs : 0;
			hs_floor[k] = api_in[r].floor_hs / api_in[r].floor_along;
			k++;
		}
	if (!k)
		return;
	printf("\n%u in-process rounds, one-at-a-time connect over the umad floor (target <= "
	       "1.3x):\n",
	       k);
	print_values("over the floor alongside", along, k, 1, RATIOS);
	print_values("over the first floor    ", first, k, 1, RATIOS);
	/* The split: the fabric's cost of a third MAD, then the CM's own share. */
	print_values("handshake floor over the floor alongside", hs_floor, k, 1, RATIOS);
	print_values("connect over the handshake floor (the CM's share)", hs, k, 1, RATIOS);
	if (kc)
		print_values("the API's cost over the engine's rate (target <= +20%)", cost, kc,
			     100, " %+.1f%%", " (median %+.1f%%)");
	for (int h = 0; h < 2; h++) {
		if (!nat[h])
			continue;
		printf(
		    "  the fabric on the %s's CPU: connect over the floor alongside median %.2fx",
		    h ? "client" : "server", median_of(at[h], nat[h]));
		if (ncat[h])
			printf(", the API's cost over the engine median %+.1f%%",
			       100 * median_of(cost_at[h], ncat[h]));
		putchar('\n');
	}
}

/*
 * After the rounds through madcmd: the hop floor, and with -R each pair's
 * ratios and their medians.
 */
static void daemon_summary(unsigned pairs)
{
	double lat[MAX_ROUNDS], rate[MAX_ROUNDS], hop, in = 0;
	unsigned k = 0;

	/* Under -H a program and its madcmd share a CPU: so do the two here. */
	pin_self(host_cpu[0]);
	hop = daemon_hop_floor_us(1000);
	pin_self(-1);
	for (unsigned r = 0; r < rounds && k < pairs; r++)
		if (api_in[r].med > 0 && api_d[r].med > 0 && api_in[r].rate > 0) {
			lat[k] = api_d[r].med / api_in[r].med;
			rate[k] = api_d[r].rate / api_in[r].rate;
			in = api_in[r].med;
			k++;
		}
	/*
	 * The daemon adds four one-way hops to a connect's critical path
	 * (CONNECT in, the REQ event out, ACCEPT in, the REP event out): two
	 * round trips.  Against the last in-process round.
	 */
	if (hop > 0 && in > 0)
		printf("daemon hop floor (SEQPACKET round trip between two processes%s, now): "
		       "median %.1f us; in-process median + 2 hops = %.1f us (%.2fx in-process)\n",
		       host_cpu[0] >= 0 ? " on one CPU" : "", hop, in + 2 * hop,
		       (in + 2 * hop) / in);
	if (k < 2)
		return;
	printf("\n%u round pairs, madcmd / in-process (targets: latency <= 1.5x, rate >= 70%%):\n",
	       k);
	print_values("latency", lat, k, 1, RATIOS);
	print_values("rate   ", rate, k, 100, PERCENTS);
}

/*
 * The raw engine on the same fabric and the same CPUs, just before an API
 * round: its rate with n_conn in flight (engine_rate) and its one-at-a-time
 * latency with the QPs moved on its loop thread (engine_lat).
 */
static void engine_round(char *cfb, const char *srv, const char *cli, char *gid, char *lidbuf,
			 char *nb, char *ib, char *pb)
{
	char *sav[] = {cfb, "server", NULL};
	char *cav[] = {cfb,   "client", "--dgid", gid, "--dlid",  lidbuf, "--only", "flight",
		       "--n", nb,	"--seq",  "1", "--pings", pb,	  NULL};
	char *lav[] = {cfb,   "client", "--dgid", gid, "--dlid",  lidbuf, "--only", "loopqp",
		       "--n", "1",	"--seq",  ib,  "--pings", "100",  NULL};
	static struct bench_lines so;
	pid_t sp;

	engine_rate = engine_lat = 0;
	printf("\nraw engine: cm_fabric_bench client --only flight --n %u, then --only "
	       "loopqp --seq %u\n",
	       n_conn, n_iter);
	fflush(stdout);
	sp = start_server(srv, sav, &so);
	if (sp > 0) {
		run_client(cli, cav, 300000, engine_line);
		run_client(cli, lav, 300000, engine_line);
		bench_reap(sp, 10000, true);
		close(so.fd);
	}
	fflush(stdout);
}

static int run_auto(void)
{
	char self[PATH_MAX], cfb[PATH_MAX + 16], line[PATH_MAX + 64], srv[64] = "", cli[64] = "";
	char gid[64] = "", lidbuf[16] = "", addr[64] = "", nb[16], ib[16], pb[16], portb[16];
	const char *env;
	int status = 1;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	unsigned pairs = 0, done = 0;
	FILE *f;

	if (n <= 0)
		bench_die("readlink /proc/self/exe", errno);
	self[n] = 0;
	snprintf(fabsim, sizeof(fabsim), "%s", self);
	slash = strrchr(fabsim, '/');
	slash[1] = 0;
	snprintf(cfb, sizeof(cfb), "%scm_fabric_bench", fabsim);
	strncat(fabsim, "../sim/fabsim", sizeof(fabsim) - strlen(fabsim) - 1);
	if ((env = getenv("FABSIM")))
		snprintf(fabsim, sizeof(fabsim), "%s", env);
	if ((env = getenv("CM_FABRIC_BENCH")))
		snprintf(cfb, sizeof(cfb), "%s", env);
	if (access(fabsim, X_OK))
		bench_die(fabsim, errno);
	if (!no_engine && access(cfb, X_OK)) {
		fprintf(stderr, "rdmacm_bench: %s: %s (no engine comparison)\n", cfb,
			strerror(errno));
		no_engine = true;
	}
	if (!mkdtemp(fdir))
		bench_die("mkdtemp", errno);
	printf("rdmacm_bench: fabric in %s (fabsim up --gen b2b)\n", fdir);
	fflush(stdout);
	/* The fabric's daemons inherit this process's CPUs (-F). */
	pin_self(fabric_cpu);
	if (bench_sh("timeout 120 '%s' --dir '%s' up --gen b2b >/dev/null", fabsim, fdir)) {
		fprintf(stderr, "fabsim up failed\n");
		goto out;
	}
	pin_self(-1);
	snprintf(line, sizeof(line), "timeout 30 '%s' --dir '%s' hosts", fabsim, fdir);
	if (bench_fabric_hosts(line, srv, cli, lidbuf, gid))
		goto down;
	/* The server host's IPv4 address, from the fabric's address file. */
	snprintf(line, sizeof(line), "%s/hosts", fdir);
	f = fopen(line, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char a[64], g[64];
		struct in_addr ia;

		if (sscanf(line, "%63s %63s", a, g) == 2 && !strcmp(g, gid) &&
		    inet_pton(AF_INET, a, &ia) == 1) {
			snprintf(addr, sizeof(addr), "%s", a);
			break;
		}
	}
	if (f)
		fclose(f);
	if (!addr[0])
		snprintf(addr, sizeof(addr), "%s", server_addr);
	printf("server on %s (%s, lid %s), client on %s\n", srv, addr, lidbuf, cli);
	snprintf(nb, sizeof(nb), "%u", n_conn);
	snprintf(ib, sizeof(ib), "%u", n_iter);
	snprintf(pb, sizeof(pb), "%u", n_pings);
	snprintf(portb, sizeof(portb), "%u", port);

	host_name[0] = srv;
	host_name[1] = cli;
	print_idle();
	if (host_cpu[0] >= 0)
		printf("each host on a CPU of its own: %s on CPU %d, %s on CPU %d\n", srv,
		       host_cpu[0], cli, host_cpu[1]);
	else
		printf("the hosts' processes on any CPU (-S)\n");
	if (fabric_cpu >= 0)
		printf("the fabric's processes (fabsimd, OpenSM) on CPU %d (-F)\n", fabric_cpu);
	else if (fabric_alternates)
		printf("the fabric's processes (fabsimd, OpenSM) on the server's CPU in odd "
		       "rounds, on the client's in even rounds\n");
	else
		printf("the fabric's processes (fabsimd, OpenSM) on any CPU\n");
	for (unsigned r = 0; r < rounds; r++) {
		int fcpu = fabric_cpu;

		if (fabric_alternates) {
			fcpu = host_cpu[r % 2];
			pin_fabric(fcpu);
		}
		if (rounds > 1)
			printf("\n== round %u of %u\n", r + 1, rounds);
		if (fabric_alternates)
			printf("the fabric's processes on CPU %d, with the %s's host (%s)\n", fcpu,
			       r % 2 ? "client" : "server", r % 2 ? cli : srv);
		api_in[r].fabric_cpu = fcpu;
		if (!no_engine)
			engine_round(cfb, srv, cli, gid, lidbuf, nb, ib, pb);
		api_in[r].engine_rate = engine_rate;
		status = api_round(self, srv, cli, addr, lidbuf, nb, ib, pb, portb, &api_in[r]);
		if (status)
			break;
		done++;
		if (!through_daemon)
			continue;
		/* The same again with both hosts' CM in madcmd, stopped after. */
		if (madcmd_ctl(srv, "start") || madcmd_ctl(cli, "start")) {
			fprintf(stderr, "rdmacm_bench: fabsim madcmd start failed\n");
			status = 1;
			goto down;
		}
		printf("\nthrough madcmd (one daemon per host, fabsim madcmd HOST start)\n");
		status = api_round(self, srv, cli, addr, lidbuf, nb, ib, pb, portb, &api_d[r]);
		madcmd_ctl(srv, "stop");
		madcmd_ctl(cli, "stop");
		if (status)
			break;
		if (api_in[r].med > 0 && api_d[r].med > 0 && api_in[r].rate > 0) {
			printf("\nmadcmd vs in-process, same fabric: connect median %.1f us vs "
			       "%.1f us "
			       "= %.2fx (target <= 1.5x); rate %.0f vs %.0f conn/s = %.0f%% "
			       "(target >= 70%%)\n",
			       api_d[r].med, api_in[r].med, api_d[r].med / api_in[r].med,
			       api_d[r].rate, api_in[r].rate,
			       100.0 * api_d[r].rate / api_in[r].rate);
			pairs++;
		}
	}
	if (done > 1)
		latency_summary(done);
	if (through_daemon && pairs)
		daemon_summary(pairs);
down:
	bench_sh("timeout 60 '%s' --dir '%s' down >/dev/null 2>&1", fabsim, fdir);
out:
	bench_sh("rm -rf '%s'%s", fdir, "");
	if (status < 0)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"n", required_argument, NULL, 'n'},
	    {"iters", required_argument, NULL, 'i'},
	    {"pings", required_argument, NULL, 'p'},
	    {"port", required_argument, NULL, 'P'},
	    {"server", required_argument, NULL, 's'},
	    {"dlid", required_argument, NULL, 'l'},
	    {"engine-rate", required_argument, NULL, 'r'},
	    {"engine-lat", required_argument, NULL, 'L'},
	    {"no-engine", no_argument, NULL, 'E'},
	    {NULL, 0, NULL, 0},
	};
	const char *mode = argc > 1 && argv[1][0] != '-' ? argv[1] : "auto";
	int ch;

	setvbuf(stdout, NULL, _IOLBF, 0);
	optind = strcmp(mode, "auto") ? 2 : 1;
	while ((ch = getopt_long(argc, argv, "n:i:p:P:s:l:r:L:R:F:ECNDHS", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			n_conn = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'i':
			n_iter = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			n_pings = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'P':
			port = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			server_addr = optarg;
			break;
		case 'l':
			dlid = (int)strtol(optarg, NULL, 0);
			break;
		case 'r':
			engine_rate = strtod(optarg, NULL);
			break;
		case 'L':
			engine_lat = strtod(optarg, NULL);
			break;
		case 'N':
			blocking_waits = false;
			break;
		case 'E':
			no_engine = true;
			break;
		case 'D':
			through_daemon = true;
			break;
		case 'C':
			lib_cqs = true;
			break;
		case 'R':
			rounds = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'F':
			if (!strcmp(optarg, "any")) {
				fabric_any = true;
				break;
			}
			fabric_cpu = (int)strtol(optarg, NULL, 0);
			if (fabric_cpu < 0 || fabric_cpu >= sysconf(_SC_NPROCESSORS_ONLN))
				bench_die("-F: no such CPU", EINVAL);
			break;
		case 'H': /* the default, kept for scripts that ask for it */
			share_cpus = false;
			break;
		case 'S':
			share_cpus = true;
			break;
		default:
			fprintf(stderr,
				"usage: rdmacm_bench [-n N] [-i ITERS] [-p PINGS] [-P PORT] [-E] "
				"[-C] [-N] [-D] [-R ROUNDS] [-S] [-F CPU|any]\n"
				"       rdmacm_bench server [-P PORT] [-C]\n"
				"       rdmacm_bench client -s ADDR --dlid LID [-n N] [-i ITERS]"
				" [-p PINGS] [-P PORT] [--engine-rate R] [--engine-lat US]\n");
			return 2;
		}
	}
	if (!n_conn || n_conn > 100000 || !n_iter || n_iter > 100000 || !n_pings ||
	    n_pings > 1000000 || !port || port > 65535 || !rounds || rounds > MAX_ROUNDS)
		bench_die("bad count", EINVAL);
	if (!strcmp(mode, "server"))
		return server();
	if (!strcmp(mode, "client")) {
		if (dlid < 0)
			bench_die("client needs --dlid", EINVAL);
		return client();
	}
	if (!strcmp(mode, "auto")) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		if (!share_cpus && ncpu > 1) {
			host_cpu[0] = 0;
			host_cpu[1] = (int)ncpu - 1;
			fabric_alternates = fabric_cpu < 0 && !fabric_any;
		}
		return run_auto();
	}
	bench_die(mode, EINVAL);
	return 2;
}
