/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * soak_client: one churning librdmacm program of the soak test (soak.sh),
 * on the public API only.
 *
 *   soak_client SELF PORT UNTIL SEED BASE NPORTS PEER...
 *
 * A listener thread accepts on SELF:PORT, RC (posts one receive per
 * connection, counts what arrived when it is disconnected) and UDP (SIDR:
 * accepts with a UD QP, then drops the id).  The main thread, until the
 * time UNTIL (seconds since the epoch), picks actions at random:
 *   connect  an RC connection to a random PEER, port BASE..BASE+NPORTS-1,
 *            one SEND (its completion is the peer's ACK), disconnect;
 *   sidr     a UDP id resolved to a random peer, SIDR to its port;
 *   mcast    join one of four IPv4 groups, wait the join, leave;
 *   dgram    a UDP id bound to SELF port 0, destroyed.
 * Every wait is bounded (OP_TIMEOUT_MS): a lost event is counted as an
 * error, never a hang.  A peer being killed or restarted makes errors: they
 * are counted and printed, not fatal.  After a DEVICE_REMOVAL (madcmd
 * restarted) every id is destroyed and the listeners are made again.
 * At UNTIL everything is torn down, a summary line is printed
 * ("soak_client PORT: ops N ok N errors N ...") and the exit status is 0;
 * 2 only when the program itself cannot go on (out of memory, no thread).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define OP_TIMEOUT_MS 15000
#define MSG_LEN 64
#define MAX_PEERS 16
#define MAX_CONNS 256

enum action { A_CONNECT, A_SIDR, A_MCAST, A_DGRAM, A_N };
static const char *const action_name[A_N] = {"connect", "sidr", "mcast", "dgram"};

static struct sockaddr_in self_addr;
static int self_port, base_port, nports, npeers;
static struct sockaddr_in peers[MAX_PEERS];
static time_t until;
static atomic_ulong ok[A_N], err[A_N];
static atomic_ulong accepted, received, listen_errors, removals;

static bool over(void)
{
	return time(NULL) >= until;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The next event on @ch before @deadline (ms, monotonic), acked; its type,
 * status and id in the out parameters.  -1 on timeout or error.
 */
static int next_event(struct rdma_event_channel *ch, long long deadline, int *status,
		      struct rdma_cm_id **id, struct rdma_cm_id **listen_id)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	long long left = deadline - now_ms();
	int type;

	if (left < 0)
		left = 0;
	if (poll(&p, 1, (int)left) != 1)
		return -1;
	if (rdma_get_cm_event(ch, &ev))
		return -1;
	type = ev->event;
	if (status)
		*status = ev->status;
	if (id)
		*id = ev->id;
	if (listen_id)
		*listen_id = ev->listen_id;
	rdma_ack_cm_event(ev);
	return type;
}

/* Wait for @want on @ch; anything else (or nothing in time) is an error. */
static int expect(struct rdma_event_channel *ch, long long deadline, int want, const char *what)
{
	int status = 0, type = next_event(ch, deadline, &status, NULL, NULL);

	if (type == want)
		return 0;
	if (type < 0)
		fprintf(stderr, "soak_client %d: %s: no event in time\n", self_port, what);
	else
		fprintf(stderr, "soak_client %d: %s: %s (status %d)\n", self_port, what,
			rdma_event_str(type), status);
	return -1;
}

static void pick_peer(struct sockaddr_in *dst)
{
	*dst = peers[rand() % npeers];
	dst->sin_port = htons(base_port + rand() % nports);
}

static int resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct sockaddr_in *dst,
		   long long deadline)
{
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 5000))
		return -1;
	if (expect(ch, deadline, RDMA_CM_EVENT_ADDR_RESOLVED, "resolve_addr"))
		return -1;
	if (rdma_resolve_route(id, 5000))
		return -1;
	return expect(ch, deadline, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolve_route");
}

static int make_qp(struct rdma_cm_id *id, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr qa = {
	    .qp_type = type,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};

	return rdma_create_qp(id, NULL, &qa);
}

/* Poll @cq for one completion before @deadline: 0 when it succeeded. */
static int wait_comp(struct ibv_cq *cq, long long deadline)
{
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_ms() < deadline)
		usleep(1000);
	return n == 1 && wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

static int do_connect(struct rdma_event_channel *ch, long long deadline)
{
	struct rdma_conn_param cp = {.retry_count = 7, .rnr_retry_count = 7};
	struct sockaddr_in dst;
	struct rdma_cm_id *id;
	struct ibv_mr *mr = NULL;
	char buf[MSG_LEN] = "soak";
	int rc = -1;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return -1;
	pick_peer(&dst);
	if (resolve(ch, id, &dst, deadline) || make_qp(id, IBV_QPT_RC))
		goto out;
	mr = rdma_reg_msgs(id, buf, sizeof(buf));
	if (!mr)
		goto out;
	if (rdma_connect(id, &cp) || expect(ch, deadline, RDMA_CM_EVENT_ESTABLISHED, "connect"))
		goto out;
	if (rdma_post_send(id, NULL, buf, sizeof(buf), mr, IBV_SEND_SIGNALED) ||
	    wait_comp(id->send_cq, deadline)) {
		fprintf(stderr, "soak_client %d: send failed\n", self_port);
		rdma_disconnect(id);
		goto out;
	}
	if (rdma_disconnect(id) || expect(ch, deadline, RDMA_CM_EVENT_DISCONNECTED, "disconnect"))
		goto out;
	rc = 0;
out:
	if (mr)
		rdma_dereg_mr(mr);
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return rc;
}

static int do_sidr(struct rdma_event_channel *ch, long long deadline)
{
	struct rdma_conn_param cp = {0};
	struct sockaddr_in dst;
	struct rdma_cm_id *id;
	int rc = -1;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		return -1;
	pick_peer(&dst);
	if (resolve(ch, id, &dst, deadline) || make_qp(id, IBV_QPT_UD))
		goto out;
	if (rdma_connect(id, &cp) || expect(ch, deadline, RDMA_CM_EVENT_ESTABLISHED, "sidr"))
		goto out;
	rc = 0;
out:
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return rc;
}

static int do_mcast(struct rdma_event_channel *ch, long long deadline)
{
	struct sockaddr_in src = self_addr, grp = {.sin_family = AF_INET};
	struct rdma_cm_id *id;
	char ip[32];
	int rc = -1;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		return -1;
	src.sin_port = 0;
	snprintf(ip, sizeof(ip), "239.77.0.%d", rand() % 4);
	inet_pton(AF_INET, ip, &grp.sin_addr);
	if (rdma_bind_addr(id, (struct sockaddr *)&src))
		goto out;
	if (rdma_join_multicast(id, (struct sockaddr *)&grp, NULL))
		goto out;
	if (expect(ch, deadline, RDMA_CM_EVENT_MULTICAST_JOIN, "join")) {
		rdma_leave_multicast(id, (struct sockaddr *)&grp);
		goto out;
	}
	usleep((rand() % 500) * 1000);
	if (rdma_leave_multicast(id, (struct sockaddr *)&grp))
		goto out;
	rc = 0;
out:
	rdma_destroy_id(id);
	return rc;
}

static int do_dgram(struct rdma_event_channel *ch)
{
	struct sockaddr_in src = self_addr;
	struct rdma_cm_id *id;
	int rc;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		return -1;
	src.sin_port = 0;
	rc = rdma_bind_addr(id, (struct sockaddr *)&src);
	rdma_destroy_id(id);
	return rc;
}

/* --- the listener thread: accepts RC and SIDR on SELF:PORT ----------- */

struct conn {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	char buf[MSG_LEN];
};

static struct conn *conns[MAX_CONNS];

static void conn_drop(int i)
{
	struct conn *c = conns[i];
	struct ibv_wc wc;

	if (c->id->recv_cq && ibv_poll_cq(c->id->recv_cq, 1, &wc) == 1 &&
	    wc.status == IBV_WC_SUCCESS)
		received++;
	if (c->mr)
		rdma_dereg_mr(c->mr);
	if (c->id->qp)
		rdma_destroy_qp(c->id);
	rdma_destroy_id(c->id);
	free(c);
	conns[i] = NULL;
}

static int conn_find(struct rdma_cm_id *id)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i] && conns[i]->id == id)
			return i;
	return -1;
}

static void accept_rc(struct rdma_cm_id *id)
{
	struct rdma_conn_param cp = {.retry_count = 7, .rnr_retry_count = 7};
	struct conn *c;
	int i;

	for (i = 0; i < MAX_CONNS && conns[i]; i++)
		;
	if (i == MAX_CONNS) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "soak_client %d: out of memory\n", self_port);
		exit(2);
	}
	c->id = id;
	conns[i] = c;
	if (make_qp(id, IBV_QPT_RC) || !(c->mr = rdma_reg_msgs(id, c->buf, sizeof(c->buf))) ||
	    rdma_post_recv(id, NULL, c->buf, sizeof(c->buf), c->mr) || rdma_accept(id, &cp)) {
		fprintf(stderr, "soak_client %d: accept: %s\n", self_port, strerror(errno));
		conn_drop(i);
		return;
	}
	accepted++;
}

static void accept_sidr(struct rdma_cm_id *id)
{
	struct rdma_conn_param cp = {0};

	if (make_qp(id, IBV_QPT_UD) || rdma_accept(id, &cp))
		fprintf(stderr, "soak_client %d: sidr accept: %s\n", self_port, strerror(errno));
	else
		accepted++;
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static struct rdma_cm_id *listener(struct rdma_event_channel *ch, enum rdma_port_space ps)
{
	struct sockaddr_in a = self_addr;
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, ps))
		return NULL;
	a.sin_port = htons(self_port);
	if (rdma_bind_addr(id, (struct sockaddr *)&a) || rdma_listen(id, 64)) {
		fprintf(stderr, "soak_client %d: listen (%s): %s\n", self_port,
			ps == RDMA_PS_TCP ? "tcp" : "udp", strerror(errno));
		rdma_destroy_id(id);
		listen_errors++;
		return NULL;
	}
	return id;
}

static void *listen_main(void *arg)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ltcp = NULL, *ludp = NULL;

	(void)arg;
	if (!ch) {
		fprintf(stderr, "soak_client %d: no event channel\n", self_port);
		exit(2);
	}
	while (!over()) {
		struct rdma_cm_id *id, *lid;
		bool reset = false;
		int type, i;

		if (!ltcp || !ludp) {
			if (!ltcp)
				ltcp = listener(ch, RDMA_PS_TCP);
			if (!ludp)
				ludp = listener(ch, RDMA_PS_UDP);
			if (ltcp && ludp)
				printf("soak_client %d: listening (%lu listen errors so far)\n",
				       self_port, (unsigned long)listen_errors);
		}
		type = next_event(ch, now_ms() + (ltcp && ludp ? 200 : 1000), NULL, &id, &lid);
		switch (type) {
		case -1:
			break;
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (id->ps == RDMA_PS_UDP)
				accept_sidr(id);
			else
				accept_rc(id);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			reset = true;
			break;
		default: /* DISCONNECTED, REJECTED, UNREACHABLE, CONNECT_ERROR ... */
			i = conn_find(id);
			if (i >= 0)
				conn_drop(i);
			break;
		}
		if (reset) {
			/* madcmd went away: drop every id, listen again later. */
			removals++;
			for (i = 0; i < MAX_CONNS; i++)
				if (conns[i])
					conn_drop(i);
			if (ltcp)
				rdma_destroy_id(ltcp);
			if (ludp)
				rdma_destroy_id(ludp);
			ltcp = ludp = NULL;
			sleep(1);
		}
	}
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i]) {
			rdma_disconnect(conns[i]->id);
			conn_drop(i);
		}
	if (ltcp)
		rdma_destroy_id(ltcp);
	if (ludp)
		rdma_destroy_id(ludp);
	rdma_destroy_event_channel(ch);
	return NULL;
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	return inet_pton(AF_INET, s, &a->sin_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	pthread_t lt;
	unsigned long ops = 0, nok = 0, nerr = 0;

	if (argc < 8 || parse_addr(argv[1], &self_addr)) {
		fprintf(stderr, "usage: soak_client SELF PORT UNTIL SEED BASE NPORTS PEER...\n");
		return 2;
	}
	self_port = atoi(argv[2]);
	until = (time_t)atoll(argv[3]);
	srand((unsigned)atoi(argv[4]) ^ (unsigned)getpid());
	base_port = atoi(argv[5]);
	nports = atoi(argv[6]);
	for (int i = 7; i < argc && npeers < MAX_PEERS; i++)
		if (parse_addr(argv[i], &peers[npeers++]) || nports < 1) {
			fprintf(stderr, "soak_client: bad peer %s\n", argv[i]);
			return 2;
		}
	setvbuf(stdout, NULL, _IOLBF, 0);
	setvbuf(stderr, NULL, _IOLBF, 0);
	ch = rdma_create_event_channel();
	if (!ch || pthread_create(&lt, NULL, listen_main, NULL)) {
		fprintf(stderr, "soak_client %d: no event channel or thread\n", self_port);
		return 2;
	}
	printf("soak_client %d: started\n", self_port);
	while (!over()) {
		enum action a = rand() % A_N;
		long long deadline = now_ms() + OP_TIMEOUT_MS;
		int rc;

		switch (a) {
		case A_CONNECT:
			rc = do_connect(ch, deadline);
			break;
		case A_SIDR:
			rc = do_sidr(ch, deadline);
			break;
		case A_MCAST:
			rc = do_mcast(ch, deadline);
			break;
		default:
			rc = do_dgram(ch);
			break;
		}
		if (rc) {
			err[a]++;
			fprintf(stderr, "soak_client %d: %s failed (%s)\n", self_port,
				action_name[a], strerror(errno));
		} else {
			ok[a]++;
		}
		/* Events of an id destroyed mid-wait are gone with it; drain
		 * what an earlier timed-out wait may have left. */
		while (next_event(ch, now_ms(), NULL, NULL, NULL) >= 0)
			;
		usleep((rand() % 200) * 1000);
	}
	pthread_join(lt, NULL);
	rdma_destroy_event_channel(ch);
	for (int a = 0; a < A_N; a++) {
		nok += ok[a];
		nerr += err[a];
	}
	ops = nok + nerr;
	printf("soak_client %d: ops %lu ok %lu errors %lu", self_port, ops, nok, nerr);
	for (int a = 0; a < A_N; a++)
		printf(" %s %lu/%lu", action_name[a], (unsigned long)ok[a],
		       (unsigned long)(ok[a] + err[a]));
	printf(" accepted %lu received %lu listen_errors %lu removals %lu\n",
	       (unsigned long)accepted, (unsigned long)received, (unsigned long)listen_errors,
	       (unsigned long)removals);
	return 0;
}
