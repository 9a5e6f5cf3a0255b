/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * ud_bench: datagram ids through madcm's public librdmacm API
 * (<rdma/rdma_cma.h>, lib/librdmacm.la) on the simulated fabric, next to
 * the umad round-trip floor measured in the same run.  Prints numbers, and
 * asserts nothing:
 *   - SIDR resolutions per second with N in flight: the client makes N
 *     RDMA_PS_UDP ids on one event channel, resolves their addresses and
 *     routes (all at once, not timed), then calls rdma_connect on all of
 *     them and counts ESTABLISHED events as they come: the time until the
 *     last call returned, until 50%, 90% and all of them were established,
 *     resolutions per second, and each id's rdma_connect -> ESTABLISHED
 *     (median, p90);
 *   - one SIDR at a time (ITERS of them, a new id each): rdma_connect ->
 *     ESTABLISHED, median and p90;
 *   - multicast join latency: rdma_join_multicast -> MULTICAST_JOIN on one
 *     RDMA_PS_UDP id with a UD QP, one at a time, JOINS times on distinct
 *     IPv4 groups (239.192.x.y), each left with rdma_leave_multicast before
 *     the next: join median and p90, leave median and p90 (the first join
 *     also asks the SA for the IPoIB broadcast group: shown on its own);
 *   - the floors: a libibumad ping-pong (vendor class 0x09) to a responder
 *     thread in the server (as bench/rdmacm_bench), the floor of every
 *     SIDR, and a raw SA round trip (Get ClassPortInfo to the SM LID), the
 *     floor of every join and leave; each latency is printed with its ratio
 *     to its floor.
 * The server (passive side) listens on RDMA_PS_UDP and accepts every
 * CONNECT_REQUEST with the QP number of one UD QP it made with libibverbs
 * (conn_param.qp_num), then destroys the id.  Every wait has a timeout;
 * the program kills only the processes it started, by PID.
 *
 *   ud_bench [-n N] [-i ITERS] [-j JOINS] [-p PINGS] [-P PORT] [-N]
 *        all by itself: starts a fabric with `fabsim up --gen b2b` in a
 *        temporary directory ($FABSIM, else ../sim/fabsim next to this
 *        program; OpenSM is its SM and SA), runs this program's server on
 *        the first host and its client on the second (`fabsim run`),
 *        stops the fabric.  N: SIDR resolutions in flight (1000), ITERS:
 *        one-at-a-time SIDRs (100), JOINS: multicast joins (200), PINGS:
 *        floor pings (1000), PORT: the server's port (7472).  Both sides
 *        wait in a blocking rdma_get_cm_event (madcm then runs the CM's
 *        MADs on that thread); -N: poll(2) on a non-blocking channel fd.
 *   ud_bench server [-P PORT] [-N]                    # on one fabric host
 *   ud_bench client -s ADDR --dlid LID [-n N] [-i ITERS] [-j JOINS]
 *        [-p PINGS] [-P PORT] [-N]                    # on another
 * e.g. from a build directory: bench/ud_bench -n 1000 -j 100
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
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
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "bench_cm.h"
#include "bench_common.h"

#define SA_CLASS 0x03
#define SA_VERSION 2
#define EVENT_TIMEOUT_MS 10000 /* per event wait */
#define STEP_TIMEOUT_MS 120000 /* a whole step, N ids at once (SIDR retries are 4.3 s) */
#define RESOLVE_TIMEOUT_MS 2000
#define CLIENT_WATCHDOG_S 900 /* SIGALRM ends a process left behind */
#define SERVER_WATCHDOG_S 1200

static unsigned n_flight = 1000, n_iter = 100, n_joins = 200, n_pings = 1000;
static unsigned port = 7472;
static const char *server_addr = "198.18.0.1";
static int dlid = -1;
static bool blocking_waits = true;
static atomic_bool stop;

const char *bench_prog = "ud_bench";

static double ratio(double x, double floor)
{
	return floor > 0 ? x / floor : 0;
}

/* ---- the floors: umad ping-pong to the server, SA ClassPortInfo ---- */

/* The pinger's port and agent, for the ping class or the SA's. */
static int ping_open(int *agent, uint8_t mgmt_class, uint8_t version)
{
	int p = umad_open_port(NULL, 0);

	if (p < 0)
		bench_die("umad_open_port", p);
	*agent = umad_register(p, mgmt_class, version, 0, NULL);
	if (*agent < 0)
		bench_die("umad_register", *agent);
	return p;
}

struct pinger {
	int port, agent;
	size_t sz;
	uint8_t *buf, *rbuf;
	unsigned seq;
};

static void pinger_open(struct pinger *pg, uint8_t mgmt_class, uint8_t version)
{
	pg->sz = umad_size() + 256;
	pg->buf = calloc(1, pg->sz);
	pg->rbuf = calloc(1, pg->sz);
	if (!pg->buf || !pg->rbuf)
		bench_die("ping", ENOMEM);
	pg->port = ping_open(&pg->agent, mgmt_class, version);
}

static void pinger_close(struct pinger *pg)
{
	umad_close_port(pg->port);
	free(pg->buf);
	free(pg->rbuf);
}

/* One Get, GetResp round trip of class/attribute to lid: ns, or 0 if lost. */
static uint64_t ping_once(struct pinger *pg, uint8_t mgmt_class, uint8_t version, uint16_t attr,
			  int to_lid)
{
	uint8_t *mad = umad_get_mad(pg->buf);
	unsigned i = pg->seq++;
	uint64_t t0;
	int len = 256;

	memset(pg->buf, 0, pg->sz);
	mad[0] = 1; /* base version */
	mad[1] = mgmt_class;
	mad[2] = version;
	mad[3] = 0x01; /* Get */
	mad[15] = (uint8_t)i;
	mad[14] = (uint8_t)(i >> 8);
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	umad_set_addr(pg->buf, to_lid, 1, 0, 0x80010000);
	t0 = bench_now_ns();
	if (umad_send(pg->port, pg->agent, pg->buf, 256, 1000, 0) < 0)
		return 0;
	if (umad_recv(pg->port, pg->rbuf, &len, 2000) < 0 || umad_status(pg->rbuf))
		return 0;
	return bench_now_ns() - t0;
}

/* n round trips after 100 to warm up: median in us into *med, p90 into *p90; how many came. */
static unsigned floor_measure(uint8_t mgmt_class, uint8_t version, uint16_t attr, int to_lid,
			      unsigned n, double *med, double *p90)
{
	uint64_t *t = calloc(n, sizeof(*t));
	struct pinger pg = {0};
	unsigned ok = 0;

	if (!t)
		bench_die("floor", ENOMEM);
	pinger_open(&pg, mgmt_class, version);
	for (unsigned i = 0; i < n + 100; i++) {
		uint64_t d = ping_once(&pg, mgmt_class, version, attr, to_lid);

		if (d && i >= 100)
			t[ok++] = d;
	}
	pinger_close(&pg);
	*med = bench_pct_us(t, ok, 50);
	*p90 = bench_pct_us(t, ok, 90);
	free(t);
	return ok;
}

/* ---- events ---- */

static struct rdma_event_channel *chan;

/*
 * The next event within timeout_ms: 0 and *ev (to ack), -ETIMEDOUT or
 * -errno.  Blocking by default (the watchdog covers a hang); -N: poll,
 * then get, on a non-blocking fd.
 */
static int next_event(struct rdma_cm_event **ev, int timeout_ms)
{
	return bench_next_event(chan, blocking_waits, ev, timeout_ms);
}

static void chan_open(void)
{
	chan = bench_chan_open(blocking_waits);
}

/* ---- server ---- */

static void on_term(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

/* The one UD QP whose number every SIDR_REP carries (made on the first request). */
static struct {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
} srv_qp;

static int server_qp(struct ibv_context *verbs)
{
	struct ibv_qp_init_attr a;

	if (srv_qp.qp)
		return 0;
	srv_qp.pd = ibv_alloc_pd(verbs);
	srv_qp.cq = srv_qp.pd ? ibv_create_cq(verbs, 16, NULL, NULL, 0) : NULL;
	if (!srv_qp.cq)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_UD;
	a.send_cq = a.recv_cq = srv_qp.cq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	srv_qp.qp = ibv_create_qp(srv_qp.pd, &a);
	return srv_qp.qp ? 0 : -1;
}

static int server(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sigaction sa = {.sa_handler = on_term}; /* no SA_RESTART: waits end */
	unsigned long reqs = 0, acc = 0, acc_fail = 0, other = 0;
	struct rdma_cm_id *lid;
	pthread_t th;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	alarm(SERVER_WATCHDOG_S);
	chan_open();
	if (pthread_create(&th, NULL, bench_ping_responder, &stop))
		bench_die("pthread_create", errno);
	if (rdma_create_id(chan, &lid, NULL, RDMA_PS_UDP))
		bench_die("rdma_create_id (listen)", errno);
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	if (rdma_bind_addr(lid, (struct sockaddr *)&sin))
		bench_die("rdma_bind_addr", errno);
	if (rdma_listen(lid, 1024))
		bench_die("rdma_listen", errno);
	printf("server listening on port %u (RDMA_PS_UDP)\n", port);
	fflush(stdout);
	while (!atomic_load(&stop)) {
		struct rdma_conn_param cp;
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;
		int rc = next_event(&ev, 100);

		if (rc == -ETIMEDOUT)
			continue;
		if (rc) {
			fprintf(stderr, "server: rdma_get_cm_event: %s\n", strerror(-rc));
			break;
		}
		id = ev->id;
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (other++ < 5)
				fprintf(stderr, "server: event %s status %d\n",
					rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			continue;
		}
		reqs++;
		memset(&cp, 0, sizeof(cp));
		if (server_qp(id->verbs))
			bench_die("server: UD QP", errno);
		cp.qp_num = srv_qp.qp->qp_num;
		if (rdma_accept(id, &cp)) {
			if (!acc_fail++)
				fprintf(stderr, "server: rdma_accept: %s\n", strerror(errno));
		} else {
			acc++;
		}
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id); /* the SIDR is answered: nothing left */
	}
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	fprintf(stderr,
		"server: %lu requests, %lu accepted, %lu accept failures, %lu other events\n", reqs,
		acc, acc_fail, other);
	rdma_destroy_id(lid);
	if (srv_qp.qp)
		ibv_destroy_qp(srv_qp.qp);
	if (srv_qp.cq)
		ibv_destroy_cq(srv_qp.cq);
	if (srv_qp.pd)
		ibv_dealloc_pd(srv_qp.pd);
	rdma_destroy_event_channel(chan);
	return 0;
}

/* ---- client: SIDR ---- */

struct node {
	struct rdma_cm_id *id;
	uint64_t start, end;
	bool failed;
};

static struct sockaddr_in dst;
static unsigned fail_msgs;

static void node_fail(struct node *nd, const char *step, const char *what, int status)
{
	if (!nd->failed && fail_msgs++ < 10)
		fprintf(stderr, "client: %s: %s (status %d%s%s)\n", step, what, status,
			status < 0 ? ", " : "", status < 0 ? strerror(-status) : "");
	nd->failed = true;
}

/*
 * Wait until every node not failed and not done has event `want`; others
 * fail it.  done[] (when not NULL) gets each arrival's time, in order.
 */
static unsigned collect(struct node *nodes, unsigned n, const char *step,
			enum rdma_cm_event_type want, uint64_t t0, uint64_t *done)
{
	unsigned left = 0, got = 0;

	for (unsigned i = 0; i < n; i++)
		if (!nodes[i].failed && !nodes[i].end)
			left++;
	while (left) {
		struct rdma_cm_event *ev;
		struct node *nd;
		int rc = next_event(&ev, EVENT_TIMEOUT_MS);

		if (rc || bench_now_ns() - t0 > STEP_TIMEOUT_MS * 1000000ull) {
			fprintf(stderr, "client: %s: %u of %u ids without %s after %.1f s (%s)\n",
				step, left, n, rdma_event_str(want), (bench_now_ns() - t0) / 1e9,
				rc ? strerror(-rc) : "step timeout");
			if (!rc)
				rdma_ack_cm_event(ev);
			for (unsigned i = 0; i < n; i++)
				if (!nodes[i].failed && !nodes[i].end)
					nodes[i].failed = true;
			break;
		}
		nd = ev->id ? ev->id->context : NULL;
		if (!nd || nd < nodes || nd >= nodes + n || nd->failed || nd->end) {
			if (fail_msgs++ < 10)
				fprintf(stderr, "client: %s: stray event %s status %d\n", step,
					rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			continue;
		}
		if (ev->event == want) {
			nd->end = bench_now_ns();
			if (done)
				done[got] = nd->end - t0;
			got++;
		} else {
			char what[64];

			snprintf(what, sizeof(what), "event %s", rdma_event_str(ev->event));
			node_fail(nd, step, what, ev->status);
		}
		left--;
		rdma_ack_cm_event(ev);
	}
	return got;
}

/* Make n RDMA_PS_UDP ids and resolve their addresses and routes, all at once. */
static void prepare(struct node *nodes, unsigned n)
{
	uint64_t t0;

	for (unsigned i = 0; i < n; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		if (rdma_create_id(chan, &nodes[i].id, &nodes[i], RDMA_PS_UDP)) {
			nodes[i].id = NULL;
			node_fail(&nodes[i], "create id", "call failed", -errno);
		}
	}
	t0 = bench_now_ns();
	for (unsigned i = 0; i < n; i++)
		if (!nodes[i].failed &&
		    rdma_resolve_addr(nodes[i].id, NULL, (struct sockaddr *)&dst,
				      RESOLVE_TIMEOUT_MS))
			node_fail(&nodes[i], "resolve addr", "call failed", -errno);
	collect(nodes, n, "resolve addr", RDMA_CM_EVENT_ADDR_RESOLVED, t0, NULL);
	for (unsigned i = 0; i < n; i++)
		nodes[i].end = 0;
	t0 = bench_now_ns();
	for (unsigned i = 0; i < n; i++)
		if (!nodes[i].failed && rdma_resolve_route(nodes[i].id, RESOLVE_TIMEOUT_MS))
			node_fail(&nodes[i], "resolve route", "call failed", -errno);
	collect(nodes, n, "resolve route", RDMA_CM_EVENT_ROUTE_RESOLVED, t0, NULL);
	for (unsigned i = 0; i < n; i++)
		nodes[i].end = 0;
}

static void destroy_all(struct node *nodes, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (nodes[i].id) {
			rdma_destroy_id(nodes[i].id);
			nodes[i].id = NULL;
		}
}

static void bench_sidr_flight(double floor_med)
{
	struct node *nodes = calloc(n_flight, sizeof(*nodes));
	uint64_t *done = calloc(n_flight, sizeof(*done)), *lat = calloc(n_flight, sizeof(*lat));
	uint64_t t0, calls, total;
	unsigned ready = 0, got, nl = 0;

	if (!nodes || !done || !lat)
		bench_die("client", ENOMEM);
	fail_msgs = 0;
	prepare(nodes, n_flight);
	for (unsigned i = 0; i < n_flight; i++)
		ready += !nodes[i].failed;
	t0 = bench_now_ns();
	for (unsigned i = 0; i < n_flight; i++) {
		if (nodes[i].failed)
			continue;
		nodes[i].start = bench_now_ns();
		if (rdma_connect(nodes[i].id, NULL))
			node_fail(&nodes[i], "connect", "call failed", -errno);
	}
	calls = bench_now_ns() - t0;
	got = collect(nodes, n_flight, "connect", RDMA_CM_EVENT_ESTABLISHED, t0, done);
	total = got ? done[got - 1] : bench_now_ns() - t0;
	for (unsigned i = 0; i < n_flight; i++)
		if (nodes[i].end)
			lat[nl++] = nodes[i].end - nodes[i].start;
	printf("\nSIDR, %u RDMA_PS_UDP ids at once (rdma_connect on all, one event channel)\n",
	       n_flight);
	printf("  %u of %u established (%u ready after resolve addr + route)\n", got, n_flight,
	       ready);
	printf("  calls returned after %.2f ms; 50%% established at %.2f ms, 90%% at %.2f ms, "
	       "all at %.2f ms\n",
	       calls / 1e6, got ? done[(got - 1) / 2] / 1e6 : 0,
	       got ? done[(size_t)(got - 1) * 9 / 10] / 1e6 : 0, total / 1e6);
	printf("  %.0f SIDR resolutions/s, %.1f us per resolution (%.1fx the umad floor)\n",
	       total ? got / (total / 1e9) : 0, got ? total / 1e3 / got : 0,
	       ratio(got ? total / 1e3 / got : 0, floor_med));
	printf("  each id's rdma_connect -> ESTABLISHED: median %.1f us, p90 %.1f us\n",
	       bench_pct_us(lat, nl, 50), bench_pct_us(lat, nl, 90));
	destroy_all(nodes, n_flight);
	free(nodes);
	free(done);
	free(lat);
}

static void bench_sidr_one(double floor_med)
{
	uint64_t *lat = calloc(n_iter, sizeof(*lat));
	unsigned ok = 0, failed = 0;
	double med;

	if (!lat)
		bench_die("client", ENOMEM);
	fail_msgs = 0;
	for (unsigned i = 0; i < n_iter; i++) {
		struct node nd;

		prepare(&nd, 1);
		if (!nd.failed) {
			nd.start = bench_now_ns();
			if (rdma_connect(nd.id, NULL))
				node_fail(&nd, "connect", "call failed", -errno);
			else
				collect(&nd, 1, "connect", RDMA_CM_EVENT_ESTABLISHED, nd.start,
					NULL);
		}
		if (nd.end)
			lat[ok++] = nd.end - nd.start;
		else
			failed++;
		destroy_all(&nd, 1);
	}
	med = bench_pct_us(lat, ok, 50);
	printf("\nSIDR one at a time: rdma_connect -> ESTABLISHED (%u of %u%s)\n", ok, n_iter,
	       failed ? ", failures on stderr" : "");
	printf("  median %.1f us, p90 %.1f us: %.2fx the umad floor\n", med,
	       bench_pct_us(lat, ok, 90), ratio(med, floor_med));
	free(lat);
}

/* ---- client: multicast ---- */

static void bench_joins(double floor_med, double sa_med)
{
	uint64_t *jl = calloc(n_joins, sizeof(*jl)), *ll = calloc(n_joins, sizeof(*ll));
	struct ibv_qp_init_attr qa;
	struct node nd;
	uint64_t first = 0;
	unsigned nj = 0, nleave = 0, errs = 0;
	double jmed, lmed;

	if (!jl || !ll)
		bench_die("client", ENOMEM);
	fail_msgs = 0;
	/* An id whose address is resolved (joins need ADDR_BOUND or ADDR_RESOLVED, as mckey). */
	memset(&nd, 0, sizeof(nd));
	if (rdma_create_id(chan, &nd.id, &nd, RDMA_PS_UDP)) {
		nd.id = NULL;
		node_fail(&nd, "create id", "call failed", -errno);
	} else if (rdma_resolve_addr(nd.id, NULL, (struct sockaddr *)&dst, RESOLVE_TIMEOUT_MS)) {
		node_fail(&nd, "resolve addr", "call failed", -errno);
	} else {
		collect(&nd, 1, "resolve addr", RDMA_CM_EVENT_ADDR_RESOLVED, bench_now_ns(), NULL);
	}
	if (nd.failed) {
		printf("\nmulticast: no id to join with (see stderr)\n");
		destroy_all(&nd, 1);
		return;
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(nd.id, NULL, &qa))
		fprintf(stderr, "client: rdma_create_qp (UD): %s (joins without a QP)\n",
			strerror(errno));
	for (unsigned i = 0; i <= n_joins; i++) {
		struct sockaddr_in g = {.sin_family = AF_INET};
		struct rdma_cm_event *ev;
		uint64_t t0, t1;
		int rc;

		g.sin_addr.s_addr = htonl(0xefc00000u | (i & 0xffff)); /* 239.192.x.y */
		t0 = bench_now_ns();
		if (rdma_join_multicast(nd.id, (struct sockaddr *)&g, &nd)) {
			if (errs++ < 5)
				fprintf(stderr, "client: rdma_join_multicast: %s\n",
					strerror(errno));
			continue;
		}
		rc = next_event(&ev, EVENT_TIMEOUT_MS);
		t1 = bench_now_ns();
		if (rc) {
			fprintf(stderr, "client: no MULTICAST_JOIN: %s\n", strerror(-rc));
			break;
		}
		if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN) {
			if (errs++ < 5)
				fprintf(stderr, "client: join: event %s status %d\n",
					rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			rdma_leave_multicast(nd.id, (struct sockaddr *)&g);
			continue;
		}
		rdma_ack_cm_event(ev);
		if (i == 0)
			first = t1 - t0;
		else
			jl[nj++] = t1 - t0;
		t0 = bench_now_ns();
		if (rdma_leave_multicast(nd.id, (struct sockaddr *)&g)) {
			if (errs++ < 5)
				fprintf(stderr, "client: rdma_leave_multicast: %s\n",
					strerror(errno));
			continue;
		}
		if (i)
			ll[nleave++] = bench_now_ns() - t0;
	}
	jmed = bench_pct_us(jl, nj, 50);
	lmed = bench_pct_us(ll, nleave, 50);
	printf("\nmulticast, one RDMA_PS_UDP id with a UD QP, one group at a time "
	       "(%u joins after the first, %u errors)\n",
	       nj, errs);
	printf("  first join (also asks the SA for the IPoIB broadcast group): %.1f us\n",
	       first / 1e3);
	printf("  rdma_join_multicast -> MULTICAST_JOIN: median %.1f us, p90 %.1f us: %.2fx the "
	       "SA floor, %.2fx the umad floor\n",
	       jmed, bench_pct_us(jl, nj, 90), ratio(jmed, sa_med), ratio(jmed, floor_med));
	printf("  rdma_leave_multicast: median %.1f us, p90 %.1f us: %.2fx the SA floor\n", lmed,
	       bench_pct_us(ll, nleave, 90), ratio(lmed, sa_med));
	if (nd.id->qp)
		rdma_destroy_qp(nd.id);
	destroy_all(&nd, 1);
	free(jl);
	free(ll);
}

static int client(void)
{
	double med, p90, sa_med = 0, sa_p90 = 0;
	umad_port_t up;
	unsigned ok;

	alarm(CLIENT_WATCHDOG_S);
	dst.sin_family = AF_INET;
	dst.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, server_addr, &dst.sin_addr) != 1)
		bench_die("bad server address", EINVAL);
	ok = floor_measure(PING_CLASS, PING_VERSION, 0x0010, dlid, n_pings, &med, &p90);
	printf("umad round trip floor (libibumad ping-pong to the server's host): median %.1f "
	       "us, p90 %.1f us (%u of %u pings)\n",
	       med, p90, ok, n_pings);
	if (umad_get_port(NULL, 0, &up) == 0) {
		int sm_lid = up.sm_lid;

		umad_release_port(&up);
		/* ClassPortInfo (attribute 0x0001) Gets to the SA. */
		ok = floor_measure(SA_CLASS, SA_VERSION, 0x0001, sm_lid, n_pings / 4 + 1, &sa_med,
				   &sa_p90);
		printf("SA round trip floor (libibumad Get ClassPortInfo to SM LID %d): median "
		       "%.1f us, p90 %.1f us (%u of %u)\n",
		       sm_lid, sa_med, sa_p90, ok, n_pings / 4 + 1);
	}
	chan_open();
	bench_sidr_flight(med);
	bench_sidr_one(med);
	bench_joins(med, sa_med);
	rdma_destroy_event_channel(chan);
	return 0;
}

/* ---- auto: a fabric of our own (as bench/rdmacm_bench) ---- */

static char fabsim[PATH_MAX], fdir[] = "/tmp/ud_bench.XXXXXX";

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

static int run_auto(void)
{
	char self[PATH_MAX], line[PATH_MAX + 64], srv[64] = "", cli[64] = "", gid[64] = "";
	char lidbuf[16] = "", addr[64] = "", nb[16], ib[16], jb[16], pb[16], portb[16];
	char *sav[8] = {self, "server", "-P", portb, NULL, NULL};
	char *cav[24] = {self, "client", "-s", addr, "--dlid", lidbuf, "-n",  nb,   "-i",
			 ib,   "-j",	 jb,   "-p", pb,       "-P",   portb, NULL, NULL};
	static struct bench_lines so, co;
	uint64_t end;
	int status = 1;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *env;
	pid_t sp, cp;
	char *slash;
	FILE *f;

	if (n <= 0)
		bench_die("readlink /proc/self/exe", errno);
	self[n] = 0;
	snprintf(fabsim, sizeof(fabsim), "%s", self);
	slash = strrchr(fabsim, '/');
	slash[1] = 0;
	strncat(fabsim, "../sim/fabsim", sizeof(fabsim) - strlen(fabsim) - 1);
	if ((env = getenv("FABSIM")))
		snprintf(fabsim, sizeof(fabsim), "%s", env);
	if (access(fabsim, X_OK))
		bench_die(fabsim, errno);
	if (!mkdtemp(fdir))
		bench_die("mkdtemp", errno);
	printf("ud_bench: fabric in %s (fabsim up --gen b2b)\n", fdir);
	fflush(stdout);
	if (bench_sh("timeout 120 '%s' --dir '%s' up --gen b2b >/dev/null", fabsim, fdir)) {
		fprintf(stderr, "fabsim up failed\n");
		goto out;
	}
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
	snprintf(nb, sizeof(nb), "%u", n_flight);
	snprintf(ib, sizeof(ib), "%u", n_iter);
	snprintf(jb, sizeof(jb), "%u", n_joins);
	snprintf(pb, sizeof(pb), "%u", n_pings);
	snprintf(portb, sizeof(portb), "%u", port);
	if (!blocking_waits) {
		sav[4] = "-N";
		cav[16] = "-N";
	}

	line[0] = 0;
	sp = spawn_on(srv, sav, &so);
	while (bench_read_line(&so, line, sizeof(line), 30000) && !strstr(line, "listening"))
		;
	if (!strstr(line, "listening")) {
		fprintf(stderr, "ud_bench: the server did not start listening on %s\n", srv);
		bench_reap(sp, 0, true);
		close(so.fd);
		goto down;
	}
	cp = spawn_on(cli, cav, &co);
	end = bench_now_ns() + 600000000000ull;
	while (bench_now_ns() < end &&
	       bench_read_line(&co, line, sizeof(line), (int)((end - bench_now_ns()) / 1000000)))
		fputs(line, stdout);
	status = bench_reap(cp, bench_now_ns() < end ? (int)((end - bench_now_ns()) / 1000000) : 0,
			    bench_now_ns() >= end);
	close(co.fd);
	bench_reap(sp, 10000, true);
	while (bench_read_line(&so, line, sizeof(line), 100))
		fputs(line, stdout);
	close(so.fd);
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
	    {"n", required_argument, NULL, 'n'},     {"iters", required_argument, NULL, 'i'},
	    {"joins", required_argument, NULL, 'j'}, {"pings", required_argument, NULL, 'p'},
	    {"port", required_argument, NULL, 'P'},  {"server", required_argument, NULL, 's'},
	    {"dlid", required_argument, NULL, 'l'},  {NULL, 0, NULL, 0},
	};
	const char *mode = argc > 1 && argv[1][0] != '-' ? argv[1] : "auto";
	int ch;

	setvbuf(stdout, NULL, _IOLBF, 0);
	optind = strcmp(mode, "auto") ? 2 : 1;
	while ((ch = getopt_long(argc, argv, "n:i:j:p:P:s:l:N", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			n_flight = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'i':
			n_iter = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'j':
			n_joins = (unsigned)strtoul(optarg, NULL, 0);
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
		case 'N':
			blocking_waits = false;
			break;
		default:
			fprintf(stderr,
				"usage: ud_bench [-n N] [-i ITERS] [-j JOINS] [-p PINGS] [-P PORT] "
				"[-N]\n"
				"       ud_bench server [-P PORT] [-N]\n"
				"       ud_bench client -s ADDR --dlid LID [-n N] [-i ITERS] "
				"[-j JOINS] [-p PINGS] [-P PORT] [-N]\n");
			return 2;
		}
	}
	if (!n_flight || n_flight > 100000 || !n_iter || n_iter > 100000 || !n_joins ||
	    n_joins > 65535 || !n_pings || n_pings > 1000000 || !port || port > 65535)
		bench_die("bad count", EINVAL);
	if (!strcmp(mode, "server"))
		return server();
	if (!strcmp(mode, "client")) {
		if (dlid < 0)
			bench_die("client needs --dlid", EINVAL);
		return client();
	}
	if (!strcmp(mode, "auto"))
		return run_auto();
	bench_die(mode, EINVAL);
	return 2;
}
