/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * listen_replace: a server that replaces its listener while its client
 * connects again at once, on the librdmacm API only (listen_replace.sh).
 *
 *   listen_replace server PORT N
 *       listen on PORT; for each of N CONNECT_REQUESTs: bind a new id to
 *       the other port (PORT, PORT + 1 in turn), destroy the listener,
 *       accept the request, and listen on the new id (so a client that
 *       connects as soon as it is ESTABLISHED reaches a listener only if
 *       rdma_listen listens at once).  Then "replaced N", and on each
 *       SIGUSR1 the next step:
 *         1. destroy the listener, listen on a new id and destroy that one
 *            at once: "destroyed"
 *         2. listen again: "listening again"
 *         3. return from main, destroying nothing: "exiting"
 *   listen_replace late PORT
 *       bind to PORT ("bound"), listen only at SIGUSR1 ("listening"),
 *       accept one request: "accepted" once it is ESTABLISHED (a REQ
 *       that came between the bind and the listen waited for the listen).
 *   listen_replace client ADDR PORT N
 *       N times: connect a new id (an RC QP each) to ADDR, PORT and
 *       PORT + 1 in turn, as soon as the last one is ESTABLISHED, keeping
 *       them all; "connected N", exit 0; "rejected I" (exit 1) at the
 *       first REJECTED.
 * Every wait for an event has a timeout (60 s): a lost event fails, never
 * hangs.  Exit 2 on any other error.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rdma/rdma_cma.h>

static struct rdma_event_channel *ch;

static void die(const char *what)
{
	fprintf(stderr, "listen_replace: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct rdma_cm_event *next_event(void)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, 60000) != 1) {
		fprintf(stderr, "listen_replace: no event in 60 s\n");
		exit(2);
	}
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	return ev;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};

	if (rdma_create_qp(id, NULL, &qa))
		die("rdma_create_qp");
}

static struct rdma_cm_id *bound(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(id, (struct sockaddr *)&sin))
		die("rdma_bind_addr");
	return id;
}

static struct rdma_cm_id *listening(int port)
{
	struct rdma_cm_id *id = bound(port);

	if (rdma_listen(id, 16))
		die("rdma_listen");
	return id;
}

static void say(const char *what)
{
	printf("%s\n", what);
	fflush(stdout);
}

static void wait_usr1(const sigset_t *set)
{
	int sig;

	if (sigwait(set, &sig))
		die("sigwait");
}

static int server(int port, int n)
{
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_id *l, *next;
	int reqs = 0, est = 0;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1); /* blocked in every thread (main) */
	l = listening(port);
	say("listening");
	while (reqs < n || est < n) {
		struct rdma_cm_event *ev = next_event();
		struct rdma_cm_id *id = ev->id;

		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			rdma_ack_cm_event(ev);
			reqs++;
			next = bound(port + reqs % 2);
			if (rdma_destroy_id(l))
				die("rdma_destroy_id (listener)");
			make_qp(id);
			if (rdma_accept(id, &cp))
				die("rdma_accept");
			/* The client connects again once ESTABLISHED: listen now. */
			if (rdma_listen(next, 16))
				die("rdma_listen (next)");
			l = next;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			rdma_ack_cm_event(ev);
			est++;
			break;
		default:
			fprintf(stderr,
				"listen_replace: server: %s (status %d) after %d requests\n",
				rdma_event_str(ev->event), ev->status, reqs);
			exit(2);
		}
	}
	printf("replaced %d\n", n);
	fflush(stdout);
	wait_usr1(&set);
	/* Destroyed before its ServiceRecords were registered, likely. */
	if (rdma_destroy_id(l))
		die("rdma_destroy_id");
	l = listening(port);
	if (rdma_destroy_id(l))
		die("rdma_destroy_id");
	say("destroyed");
	wait_usr1(&set);
	l = listening(port);
	say("listening again");
	wait_usr1(&set);
	say("exiting");
	return 0; /* l, the channel and the connections are the exit's */
}

static int late(int port)
{
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_id *l = bound(port);
	struct rdma_cm_event *ev;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	say("bound");
	wait_usr1(&set);
	if (rdma_listen(l, 16))
		die("rdma_listen");
	say("listening");
	for (int want = RDMA_CM_EVENT_CONNECT_REQUEST;;) {
		ev = next_event();
		if ((int)ev->event != want) {
			fprintf(stderr, "listen_replace: late: %s (status %d)\n",
				rdma_event_str(ev->event), ev->status);
			exit(2);
		}
		if (want == RDMA_CM_EVENT_ESTABLISHED)
			break;
		make_qp(ev->id);
		if (rdma_accept(ev->id, &cp))
			die("rdma_accept");
		rdma_ack_cm_event(ev);
		want = RDMA_CM_EVENT_ESTABLISHED;
	}
	rdma_ack_cm_event(ev);
	say("accepted");
	return 0;
}

static void addr_of(const char *host, int port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *res;

	if (getaddrinfo(host, NULL, &hints, &res)) {
		fprintf(stderr, "listen_replace: bad address %s\n", host);
		exit(2);
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port); /* same offset in v6 */
}

/* The next event, for `id`, of this type: REJECTED ends the run with 1. */
static void expect(struct rdma_cm_id *id, enum rdma_cm_event_type type, int i)
{
	struct rdma_cm_event *ev = next_event();

	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		printf("rejected %d\n", i);
		fprintf(stderr, "listen_replace: connection %d REJECTED, status %d\n", i,
			ev->status);
		exit(1);
	}
	if (ev->event != type || ev->id != id) {
		fprintf(stderr, "listen_replace: connection %d: %s (status %d), expected %s\n", i,
			rdma_event_str(ev->event), ev->status, rdma_event_str(type));
		exit(2);
	}
	rdma_ack_cm_event(ev);
}

static int client(const char *host, int port, int n)
{
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1};

	for (int i = 0; i < n; i++) {
		struct sockaddr_storage dst;
		struct rdma_cm_id *id;

		addr_of(host, port + i % 2, &dst);
		if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
			die("rdma_create_id");
		if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 5000))
			die("rdma_resolve_addr");
		expect(id, RDMA_CM_EVENT_ADDR_RESOLVED, i);
		if (rdma_resolve_route(id, 5000))
			die("rdma_resolve_route");
		expect(id, RDMA_CM_EVENT_ROUTE_RESOLVED, i);
		make_qp(id);
		if (rdma_connect(id, &cp))
			die("rdma_connect");
		expect(id, RDMA_CM_EVENT_ESTABLISHED, i);
	}
	printf("connected %d\n", n);
	fflush(stdout);
	return 0; /* the connections are the exit's */
}

int main(int argc, char **argv)
{
	sigset_t set;

	/* Before the library starts its threads: SIGUSR1 is for sigwait. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		die("pthread_sigmask");
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "late"))
		return late(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: listen_replace server PORT N | late PORT | client ADDR PORT N\n");
	return 2;
}
