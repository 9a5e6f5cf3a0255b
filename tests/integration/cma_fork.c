/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * cma_fork: fork() beside established connections (tests/integration/
 * cma_fork.sh, lib/cma_fork.c), on the public API only.
 *
 *   cma_fork server PORT
 *       accept connections until killed; each connection's QP echoes
 *       every message back, except "bye".  A connection whose REQ carried
 *       "parent" must say "bye" before its DISCONNECTED: one that is
 *       disconnected first prints "early disconnect" and exits 1.  Each
 *       DISCONNECTED prints "disconnected parent|child".
 *   cma_fork client ADDR PORT N CHILD...
 *       connect N ids (REQ private data "parent", an RC QP each), echo a
 *       message on each, then for each CHILD fork a child and wait for
 *       it, echoing on every connection after each:
 *         exit   the child's calls on the inherited ids and channel fail
 *                with EBADF, then it returns from main (exit(3))
 *         exec   the child execs /bin/true
 *         own    the child connects an id of its own to ADDR:PORT (REQ
 *                "child", no QP but a QPN of its own: rdma_establish),
 *                disconnects it and returns (madcmd)
 *         nocm   the child binds an id and listens: EBUSY at once (no
 *                madcmd: the port's CM is the parent's)
 *       then no event may be waiting on the parent's channel; it says
 *       "bye" on each connection, disconnects them, waits for their
 *       DISCONNECTED and prints "parent ok".
 * Every wait has a bound (60 s): a lost event fails, never hangs.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/wait.h>

#include <rdma/rdma_cma.h>

#define MSG 64
#define MAXC 64

static struct rdma_event_channel *ch;

static void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(2);
}

static struct rdma_cm_event *next_event(int ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1)
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	return ev;
}

static struct rdma_cm_event *must_event(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = next_event(60000);

	if (!ev) {
		fprintf(stderr, "no %s in 60 s\n", rdma_event_str(want));
		exit(2);
	}
	if (ev->event != want) {
		fprintf(stderr, "%s, not %s (status %d)\n", rdma_event_str(ev->event),
			rdma_event_str(want), ev->status);
		exit(2);
	}
	return ev;
}

struct conn {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	char buf[2][MSG]; /* [0] receives, [1] sends */
	bool parent, bye;
};

static void make_qp(struct conn *c)
{
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};

	if (rdma_create_qp(c->id, NULL, &qa))
		die("rdma_create_qp");
	c->mr = ibv_reg_mr(c->id->pd, c->buf, sizeof(c->buf), IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		die("ibv_reg_mr");
}

static void post_recv(struct conn *c)
{
	struct ibv_sge sge = {(uintptr_t)c->buf[0], MSG, c->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send(struct conn *c, const char *msg)
{
	struct ibv_sge sge = {(uintptr_t)c->buf[1], MSG, c->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	snprintf(c->buf[1], MSG, "%s", msg);
	if (ibv_post_send(c->id->qp, &wr, &bad))
		die("ibv_post_send");
}

/* One completion of cq, waiting at most 60 s. */
static void complete(struct ibv_cq *cq, const char *what)
{
	struct timespec ms = {0, 1000000};
	struct ibv_wc wc;

	for (int i = 0; i < 60000; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "%s: %s\n", what, ibv_wc_status_str(wc.status));
				exit(1);
			}
			return;
		}
		nanosleep(&ms, NULL);
	}
	fprintf(stderr, "%s: no completion in 60 s\n", what);
	exit(1);
}

/* A message to the server and its echo back. */
static void echo(struct conn *c, const char *msg)
{
	post_recv(c);
	post_send(c, msg);
	complete(c->id->send_cq, "send");
	complete(c->id->recv_cq, "recv");
	if (strcmp(c->buf[0], msg)) {
		fprintf(stderr, "echo: got \"%s\", sent \"%s\"\n", c->buf[0], msg);
		exit(1);
	}
}

static void addr_of(const char *host, int port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *res;

	if (getaddrinfo(host, NULL, &hints, &res)) {
		fprintf(stderr, "bad address %s\n", host);
		exit(2);
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

/* ---- server ---- */

static struct conn *server_conn(struct conn *cs, int n, struct rdma_cm_id *id)
{
	for (int i = 0; i < n; i++)
		if (cs[i].id == id)
			return &cs[i];
	return NULL;
}

static int server(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	static struct conn cs[MAXC];
	struct rdma_cm_id *lid;
	int n = 0;

	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&sin) || rdma_listen(lid, 64))
		die("listen");
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		struct rdma_cm_event *ev = next_event(5);
		struct conn *c;

		/* Echo what came, on every connection. */
		for (int i = 0; i < n; i++) {
			struct ibv_wc wc;

			if (!cs[i].id || !cs[i].id->qp)
				continue;
			while (ibv_poll_cq(cs[i].id->send_cq, 1, &wc) == 1)
				;
			if (ibv_poll_cq(cs[i].id->recv_cq, 1, &wc) != 1 || wc.status)
				continue;
			if (!strcmp(cs[i].buf[0], "bye")) {
				cs[i].bye = true;
				continue;
			}
			post_recv(&cs[i]);
			post_send(&cs[i], cs[i].buf[0]);
		}
		if (!ev)
			continue;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST: {
			struct rdma_conn_param cp = {.responder_resources = 1,
						     .initiator_depth = 1};

			if (n == MAXC) {
				fprintf(stderr, "too many connections\n");
				return 2;
			}
			c = &cs[n++];
			c->id = ev->id;
			c->parent = ev->param.conn.private_data_len >= 6 &&
				    !memcmp(ev->param.conn.private_data, "parent", 6);
			make_qp(c);
			post_recv(c);
			if (rdma_accept(ev->id, &cp))
				die("rdma_accept");
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			c = server_conn(cs, n, ev->id);
			if (!c)
				break;
			/* "bye" may still be in the CQ: look once more. */
			if (c->parent && !c->bye) {
				struct ibv_wc wc;

				if (ibv_poll_cq(c->id->recv_cq, 1, &wc) == 1 && !wc.status &&
				    !strcmp(c->buf[0], "bye"))
					c->bye = true;
			}
			rdma_disconnect(ev->id); /* the DREP */
			printf("disconnected %s\n", c->parent ? "parent" : "child");
			fflush(stdout);
			if (c->parent && !c->bye) {
				printf("early disconnect\n");
				return 1;
			}
			break;
		default:
			printf("server: %s (status %d)\n", rdma_event_str(ev->event), ev->status);
			fflush(stdout);
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

/* ---- client and its children ---- */

static int expect_ebadf(int rc, const char *call)
{
	if (rc != -1 || errno != EBADF) {
		fprintf(stderr, "child: %s on an inherited id: %d, errno %s, not EBADF\n", call, rc,
			strerror(errno));
		return 1;
	}
	return 0;
}

static int child_exit(struct conn *cs)
{
	struct rdma_cm_event *ev;
	int bad = 0;

	bad |= expect_ebadf(rdma_disconnect(cs[0].id), "rdma_disconnect");
	bad |= expect_ebadf(rdma_destroy_id(cs[0].id), "rdma_destroy_id");
	bad |= expect_ebadf(rdma_get_cm_event(ch, &ev), "rdma_get_cm_event");
	bad |= expect_ebadf(rdma_migrate_id(cs[0].id, NULL), "rdma_migrate_id");
	return bad; /* then exit(3): the library's destructors run */
}

static int child_own(const char *host, int port)
{
	struct rdma_conn_param cp = {.private_data = "child",
				     .private_data_len = 6,
				     .responder_resources = 1,
				     .initiator_depth = 1};
	struct sockaddr_storage dst;
	struct rdma_cm_id *id;

	/* No QP: a QPN of its own (one in TimeWait would be refused). */
	cp.qp_num = 0xf00000u | ((unsigned)getpid() & 0xffffu);
	/* The channel is the parent's: the child makes its own. */
	ch = rdma_create_event_channel();
	if (!ch)
		die("child: rdma_create_event_channel");
	addr_of(host, port, &dst);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 5000))
		die("child: resolve_addr");
	rdma_ack_cm_event(must_event(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		die("child: resolve_route");
	rdma_ack_cm_event(must_event(RDMA_CM_EVENT_ROUTE_RESOLVED));
	if (rdma_connect(id, &cp))
		die("child: rdma_connect");
	rdma_ack_cm_event(must_event(RDMA_CM_EVENT_CONNECT_RESPONSE));
	if (rdma_establish(id))
		die("child: rdma_establish");
	printf("child: connected\n");
	fflush(stdout);
	if (rdma_disconnect(id))
		die("child: rdma_disconnect");
	rdma_ack_cm_event(must_event(RDMA_CM_EVENT_DISCONNECTED));
	if (rdma_destroy_id(id))
		die("child: rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}

static int child_nocm(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rdma_event_channel *own = rdma_create_event_channel();
	struct rdma_cm_id *id;
	int rc;

	if (!own)
		die("child: rdma_create_event_channel");
	if (rdma_create_id(own, &id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&sin))
		die("child: bind");
	rc = rdma_listen(id, 1);
	if (rc != -1 || errno != EBUSY) {
		fprintf(stderr, "child: rdma_listen: %d, errno %s, not EBUSY\n", rc,
			strerror(errno));
		return 1;
	}
	printf("child: listen EBUSY\n");
	fflush(stdout);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(own);
	return 0;
}

static int run_child(const char *what, struct conn *cs, const char *host, int port)
{
	if (!strcmp(what, "exit"))
		return child_exit(cs);
	if (!strcmp(what, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		die("exec /bin/true");
	}
	if (!strcmp(what, "own"))
		return child_own(host, port);
	if (!strcmp(what, "nocm"))
		return child_nocm();
	fprintf(stderr, "unknown child %s\n", what);
	return 2;
}

static int client(const char *host, int port, int n, char **children, int nchildren)
{
	static struct conn cs[MAXC];
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev;

	addr_of(host, port, &dst);
	for (int i = 0; i < n; i++) {
		struct rdma_conn_param cp = {.private_data = "parent",
					     .private_data_len = 7,
					     .responder_resources = 1,
					     .initiator_depth = 1};
		struct conn *c = &cs[i];

		if (rdma_create_id(ch, &c->id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&dst, 5000))
			die("resolve_addr");
		rdma_ack_cm_event(must_event(RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(c->id, 5000))
			die("resolve_route");
		rdma_ack_cm_event(must_event(RDMA_CM_EVENT_ROUTE_RESOLVED));
		make_qp(c);
		if (rdma_connect(c->id, &cp))
			die("rdma_connect");
		rdma_ack_cm_event(must_event(RDMA_CM_EVENT_ESTABLISHED));
		echo(c, "hello");
	}
	printf("connected %d\n", n);
	fflush(stdout);
	for (int k = 0; k < nchildren; k++) {
		int status;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid)
			exit(run_child(children[k], cs, host, port));
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "child %s: status %#x\n", children[k], status);
			return 1;
		}
		for (int i = 0; i < n; i++)
			echo(&cs[i], children[k]);
		printf("child %s ok\n", children[k]);
		fflush(stdout);
	}
	/* Nothing the children did reached the parent's ids. */
	ev = next_event(200);
	if (ev) {
		fprintf(stderr, "parent: %s after the children\n", rdma_event_str(ev->event));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		post_send(&cs[i], "bye");
		complete(cs[i].id->send_cq, "bye");
	}
	for (int i = 0; i < n; i++)
		if (rdma_disconnect(cs[i].id))
			die("rdma_disconnect");
	for (int i = 0; i < n; i++)
		rdma_ack_cm_event(must_event(RDMA_CM_EVENT_DISCONNECTED));
	for (int i = 0; i < n; i++) {
		rdma_destroy_qp(cs[i].id);
		ibv_dereg_mr(cs[i].mr);
		rdma_destroy_id(cs[i].id);
	}
	printf("parent ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]));
	if (argc >= 5 && !strcmp(argv[1], "client") && atoi(argv[4]) > 0 && atoi(argv[4]) <= MAXC)
		return client(argv[2], atoi(argv[3]), atoi(argv[4]), argv + 5, argc - 5);
	fprintf(stderr,
		"usage: cma_fork server PORT | client ADDR PORT N [exit|exec|own|nocm]...\n");
	return 2;
}
