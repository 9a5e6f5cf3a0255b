/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * bench/storm_worker: one process of a connection storm (bench/storm.sh).
 * Through the public librdmacm API only: listens on one port, waits for
 * the driver's go file, then connects to every peer at once (resolve
 * address, resolve route, connect, no QP: the storm measures the CM, not
 * verbs, so the REP comes as CONNECT_RESPONSE and rdma_establish sends
 * the RTU), accepts what its peers send, and prints one line per outgoing
 * connection with its timestamps and a summary line.  It keeps its
 * connections until the driver's end file appears, so every peer can
 * finish before anything is torn down.
 *
 *   storm_worker --name NAME --port PORT --expect N --go FILE --end FILE
 *                [--timeout S] [--resolve-ms MS] PEER_IP:PORT...
 *
 * Output (times are CLOCK_MONOTONIC ns, one clock for the whole machine):
 *   storm_worker NAME listening PORT
 *   clock NAME MONOTONIC_NS REALTIME_NS        (at the go)
 *   conn NAME PEER START ADDR ROUTE DONE RESULT REASON
 *   summary NAME active A/B passive C/D rejected R unreachable U errors E
 *   reject NAME REASON COUNT
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "bench_common.h"

enum result { C_PENDING, C_OK, C_REJECTED, C_UNREACHABLE, C_ADDR_ERR, C_ROUTE_ERR, C_ERROR };

static const char *const result_name[] = {"pending",	"ok",	       "rejected", "unreachable",
					  "addr_error", "route_error", "error"};

struct conn {
	const char *peer;
	struct sockaddr_storage dst;
	struct rdma_cm_id *id;
	uint64_t t_start, t_addr, t_route, t_done;
	enum result res;
	int reason;
};

const char *bench_prog = "storm_worker";
static const char *name = "?";
static struct conn *conns;
static unsigned nconns, nactive_done, npassive, expect_passive;
static struct rdma_cm_id **passive; /* accepted ids, destroyed at exit */
static unsigned npassive_ids, passive_cap;
/*
 * The QP numbers the REQs and REPs carry: the worker makes no QP, but the
 * host's CM (one madcmd engine for every worker of the host) refuses a
 * QPN another of its connections holds, so each worker takes its own
 * range, from its port (unique on the host).
 */
static uint32_t qpn_base;
static unsigned rej_reason[64]; /* CM REJ reasons (IBA 12.6.7.2), larger ones in [63] */
static int resolve_ms = 10000;

static int parse_peer(const char *s, struct sockaddr_storage *ss)
{
	char host[128];
	const char *colon = strrchr(s, ':');
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV}, *ai;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	if (getaddrinfo(host, colon + 1, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static void finish(struct conn *c, enum result r, int reason)
{
	if (c->res != C_PENDING)
		return;
	c->res = r;
	c->reason = reason;
	c->t_done = bench_now_ns();
	nactive_done++;
	if (r == C_REJECTED)
		rej_reason[reason >= 0 && reason < 63 ? reason : 63]++;
}

static void on_event(struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	struct conn *c = id->context;
	struct rdma_conn_param p = {.retry_count = 7, .rnr_retry_count = 7};

	if (!c) { /* passive side: a request on the listener, or its connection */
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			/* No QP: the QPN the REP carries is arbitrary, unique on the host. */
			p.qp_num = qpn_base | (npassive_ids & 0x7ff);
			if (npassive_ids == passive_cap) {
				unsigned cap = passive_cap ? 2 * passive_cap : 64;
				void *np = realloc(passive, cap * sizeof(*passive));

				if (!np) {
					rdma_reject(id, NULL, 0);
					rdma_destroy_id(id);
					break;
				}
				passive = np;
				passive_cap = cap;
			}
			if (rdma_accept(id, &p)) {
				rdma_destroy_id(id);
				break;
			}
			passive[npassive_ids++] = id;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			npassive++;
			break;
		default:
			break;
		}
		return;
	}
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		c->t_addr = bench_now_ns();
		if (rdma_resolve_route(id, resolve_ms))
			finish(c, C_ROUTE_ERR, errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		c->t_route = bench_now_ns();
		p.qp_num = qpn_base | 0x800 | ((uint32_t)(c - conns) & 0x7ff);
		if (rdma_connect(id, &p))
			finish(c, C_ERROR, errno);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		/* No QP: librdmacm leaves the RTU to the application. */
		if (rdma_establish(id))
			finish(c, C_ERROR, errno);
		else
			finish(c, C_OK, 0);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		finish(c, C_OK, 0);
		break;
	case RDMA_CM_EVENT_REJECTED:
		finish(c, C_REJECTED, ev->status);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		finish(c, C_UNREACHABLE, ev->status);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		finish(c, C_ADDR_ERR, ev->status);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		finish(c, C_ROUTE_ERR, ev->status);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		finish(c, C_ERROR, ev->status);
		break;
	default:
		break;
	}
}

/* Handle the channel's events for up to ms milliseconds. */
static void pump(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, ms) <= 0)
		return;
	while (!rdma_get_cm_event(ch, &ev)) {
		struct rdma_cm_event copy = *ev;

		rdma_ack_cm_event(ev);
		on_event(&copy);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: storm_worker --name NAME --port PORT --expect N --go FILE "
			"--end FILE [--timeout S] [--resolve-ms MS] PEER_IP:PORT...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"name", 1, NULL, 'n'},	  {"port", 1, NULL, 'p'}, {"expect", 1, NULL, 'e'},
	    {"go", 1, NULL, 'g'},	  {"end", 1, NULL, 'E'},  {"timeout", 1, NULL, 't'},
	    {"resolve-ms", 1, NULL, 'r'}, {NULL, 0, NULL, 0},
	};
	const char *go = NULL, *end = NULL;
	int port = -1, timeout_s = 600, o;
	struct sockaddr_in any = {.sin_family = AF_INET};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listener;
	uint64_t deadline;
	unsigned nok = 0, nrej = 0, nunr = 0, nerr = 0;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n':
			name = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'e':
			expect_passive = (unsigned)atoi(optarg);
			break;
		case 'g':
			go = optarg;
			break;
		case 'E':
			end = optarg;
			break;
		case 't':
			timeout_s = atoi(optarg);
			break;
		case 'r':
			resolve_ms = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (port <= 0 || port > 65535 || !go || !end)
		usage();
	{
		static char prog[80];

		snprintf(prog, sizeof(prog), "storm_worker %s", name);
		bench_prog = prog;
	}
	nconns = (unsigned)(argc - optind);
	conns = calloc(nconns ? nconns : 1, sizeof(*conns));
	if (!conns)
		bench_die("calloc", ENOMEM);
	for (unsigned i = 0; i < nconns; i++) {
		conns[i].peer = argv[optind + i];
		if (parse_peer(conns[i].peer, &conns[i].dst)) {
			fprintf(stderr, "storm_worker %s: bad peer %s\n", name, conns[i].peer);
			return 2;
		}
	}
	ch = rdma_create_event_channel();
	if (!ch)
		bench_die("rdma_create_event_channel", errno);
	if (rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP))
		bench_die("rdma_create_id", errno);
	any.sin_port = htons((uint16_t)port);
	if (rdma_bind_addr(listener, (struct sockaddr *)&any))
		bench_die("rdma_bind_addr", errno);
	if (rdma_listen(listener, 1024))
		bench_die("rdma_listen", errno);
	/* Non-blocking: pump() drains the channel without sleeping in it. */
	{
		int fl = fcntl(ch->fd, F_GETFL);

		if (fl < 0 || fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK))
			bench_die("fcntl", errno);
	}
	qpn_base = ((uint32_t)port % 0xfff + 1) << 12; /* never 0, below 2^24 */
	printf("storm_worker %s listening %d\n", name, port);
	fflush(stdout);
	deadline = bench_now_ns() + (uint64_t)timeout_s * 1000000000ull;
	while (access(go, F_OK)) {
		pump(ch, 10);
		if (bench_now_ns() > deadline)
			bench_die("no go file", ETIMEDOUT);
	}
	{
		/* The fabric's trace is stamped with the wall clock: the pair
		 * maps one clock onto the other. */
		struct timespec rt;

		clock_gettime(CLOCK_REALTIME, &rt);
		printf("clock %s %llu %llu\n", name, (unsigned long long)bench_now_ns(),
		       (unsigned long long)rt.tv_sec * 1000000000ull +
			   (unsigned long long)rt.tv_nsec);
	}
	for (unsigned i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];

		c->t_start = bench_now_ns();
		if (rdma_create_id(ch, &c->id, c, RDMA_PS_TCP)) {
			finish(c, C_ERROR, errno);
			continue;
		}
		if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&c->dst, resolve_ms))
			finish(c, C_ADDR_ERR, errno);
	}
	while ((nactive_done < nconns || npassive < expect_passive) && bench_now_ns() < deadline)
		pump(ch, 100);
	for (unsigned i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];

		if (c->res == C_OK)
			nok++;
		else if (c->res == C_REJECTED)
			nrej++;
		else if (c->res == C_UNREACHABLE)
			nunr++;
		else
			nerr++;
		printf("conn %s %s %llu %llu %llu %llu %s %d\n", name, c->peer,
		       (unsigned long long)c->t_start, (unsigned long long)c->t_addr,
		       (unsigned long long)c->t_route, (unsigned long long)c->t_done,
		       result_name[c->res], c->reason);
	}
	for (unsigned r = 0; r < 64; r++)
		if (rej_reason[r])
			printf("reject %s %u %u\n", name, r, rej_reason[r]);
	printf("summary %s active %u/%u passive %u/%u rejected %u unreachable %u errors %u\n", name,
	       nok, nconns, npassive, expect_passive, nrej, nunr, nerr);
	fflush(stdout);
	/* Keep every connection until the driver says all are done. */
	deadline = bench_now_ns() + (uint64_t)timeout_s * 1000000000ull;
	while (access(end, F_OK) && bench_now_ns() < deadline)
		pump(ch, 50);
	for (unsigned i = 0; i < nconns; i++)
		if (conns[i].id)
			rdma_destroy_id(conns[i].id);
	for (unsigned i = 0; i < npassive_ids; i++)
		rdma_destroy_id(passive[i]);
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(ch);
	free(passive);
	free(conns);
	return nok == nconns && npassive >= expect_passive ? 0 : 1;
}
