/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Cut-through: packets handed from process to process without passing
 * through fabsimd, where the daemon says routing them would not change
 * them (sim/verbs_proto.h has the protocol and the rules).
 *
 * Why: every packet through the daemon costs one more process wakeup, and
 * on this kind of machine wakeups are what latency is made of; a
 * ping-pong through the daemon takes four where a socket ping-pong takes
 * two.  What is preserved: a packet only skips the daemon while the
 * fabric generation is the one its grant was given for, so the moment a
 * link goes down, an SM reprograms a table, a fault rule or a capture
 * appears, or the receiving process goes, packets route through the
 * daemon again (a packet already sent is a packet already on the wire).
 *
 * Sockets, all in one epoll set so that a waiting thread polls one fd:
 *  - the daemon stream (the caller reads it: VD_DAEMON);
 *  - our listener, a SOCK_SEQPACKET socket bound to a file of the
 *    fabric directory (FSP_VERBS_DIRECT_DIR/PID.TIME), its name relative
 *    to the directory told to the daemon with FSP_VERBS_DIRECT: a path,
 *    not an abstract name, so that processes in the hosts' network
 *    namespaces (`fabsim up --ip`) reach each other;
 *  - connections accepted on it: one per process sending to us;
 *  - our connections to the processes we send to, one per process,
 *    watched for hang-up, and for room while messages wait in `q`: a
 *    full receiver never blocks the sender (both could be full at once,
 *    each holding its HCA lock); messages wait here, in order, instead.
 * All of it runs under VERBS_LOCK (the transport's callers hold it).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sim/verbs_client.h"
#include "sim/verbs_direct.h"
#include "sim/verbs_proto.h"

/* SRC_ROUTE: not a socket, a destination whose route is being asked for
 * (struct route); it shares the header so vdirect_send can tell. */
enum src_kind { SRC_DAEMON, SRC_LISTEN, SRC_IN, SRC_OUT, SRC_ROUTE };

struct src {
	enum src_kind kind;
	int fd;
};

struct qmsg {
	struct qmsg *next;
	size_t len;
	uint8_t data[];
};

/* A process we send to (kept when it goes, marked dead: grants may still
 * point at it until the generation moves). */
struct peer {
	struct src s;
	struct peer *next;
	bool dead;
	bool want_out;
	struct qmsg *q, *qtail;
	uint32_t addr_len;
	uint8_t addr[FSP_VERBS_ADDR_MAX];
};

/* A process sending to us. */
struct inconn {
	struct src s;
	struct inconn *next, **pprev;
	int owe; /* bytes to read before the daemon's next message */
};

enum route_state { R_PENDING = 1, R_GRANTED, R_REFUSED };

/* What the daemon said of one (DLID, DestQP block), in the generation
 * `gen`; one per pair ever sent to, never freed (they are handles for
 * vdirect_send), listed by DLID in `by_lid`.  While the
 * question is open, packets for it wait in `pend`: sent through the
 * daemon meanwhile, they would reach the receiver after those sent
 * directly once the answer came (the daemon may hold megabytes for a
 * slow receiver), and every such overtaking is a sequence-error NAK and
 * a go-back-N resend, each counted against retry_cnt. */
struct route {
	struct src s;	    /* SRC_ROUTE */
	struct route *next; /* same DLID */
	uint64_t gen;
	uint8_t state;
	bool asked;	 /* the question for `gen` has left */
	bool via_daemon; /* packets went through the daemon since the last
			  * fence: a grant must wait for them to be read */
	uint16_t dlid;
	uint32_t block;
	uint32_t dqpn; /* one QPN of the block, to ask with */
	struct peer *peer;
	/* The peer packets went to directly before this question: the
	 * answer's path waits until what waits for room there has left. */
	struct peer *drain;
	struct route *drain_next; /* on vd.draining */
	struct qmsg *pend, *pend_tail;
};

#define UNICAST_LIDS 0xc000u
#define READY_MAX 16
#define PEER_SNDBUF (4 << 20)

static struct {
	int ep, lfd, dfd;
	int dirfd;	     /* the fabric directory, for names sun_path cannot hold */
	pid_t owner;	     /* the process that bound the listener (not a fork child) */
	char name[64];	     /* the listener's name in the fabric directory */
	const uint64_t *gen; /* the daemon's generation word, mapped */
	struct src daemon, listen;
	struct peer *peers;
	struct inconn *ins;
	struct route **by_lid;	 /* [UNICAST_LIDS], allocated when first needed */
	struct route *draining;	 /* answered, waiting for route->drain */
	struct inconn *drain_at; /* next connection to read before the daemon */
	bool draining_ins;
	struct epoll_event ready[READY_MAX];
	int nready, iready;
} vd = {.ep = -1, .lfd = -1, .dfd = -1, .dirfd = -1};

struct vdirect_stats vdirect_stats;

static int ep_add(struct src *s, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = s};

	return epoll_ctl(vd.ep, EPOLL_CTL_ADD, s->fd, &ev) ? -errno : 0;
}

static const uint64_t *gen_map(void)
{
	const char *dir = getenv("FABSIM_DIR");
	char path[4200];
	void *m;
	int fd;

	if (!dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, FSP_VERBS_GEN_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

static int sock_path(struct sockaddr_un *sa, const char *name);

/* The listener's file goes with it (fabsimd removes those of processes
 * that die without exiting); a fork child's exit leaves its parent's. */
static void listener_unlink(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (vd.owner != getpid() || !vd.name[0] || sock_path(&sa, vd.name))
		return;
	unlink(sa.sun_path);
	vd.name[0] = 0;
}

/*
 * sun_path for `name` (relative to the fabric directory): DIR/name when
 * it fits in sun_path's 108 bytes, else through the directory's fd
 * (/proc/self/fd/N/name), which any directory path fits.  0 or -errno.
 */
static int sock_path(struct sockaddr_un *sa, const char *name)
{
	const char *dir = getenv("FABSIM_DIR");
	int n;

	if (!dir)
		return -ENOENT;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir, name);
	if (n > 0 && n < (int)sizeof(sa->sun_path))
		return 0;
	if (vd.dirfd < 0)
		vd.dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (vd.dirfd < 0)
		return -errno;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", vd.dirfd, name);
	return n > 0 && n < (int)sizeof(sa->sun_path) ? 0 : -ENAMETOOLONG;
}

static int listener_open(struct fsp_verbs_direct *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timespec t;
	int fd, ret;

	/* Unique among the fabric's processes, past and present. */
	clock_gettime(CLOCK_MONOTONIC, &t);
	snprintf(vd.name, sizeof(vd.name), "%s/%d.%llx", FSP_VERBS_DIRECT_DIR, (int)getpid(),
		 (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec);
	ret = sock_path(&sa, vd.name);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	vd.owner = getpid();
	if (listen(fd, 128)) {
		ret = -errno;
		listener_unlink();
		close(fd);
		return ret;
	}
	memset(d, 0, sizeof(*d));
	d->addr_len = (uint32_t)strlen(vd.name);
	memcpy(d->addr, vd.name, d->addr_len);
	return fd;
}

int vdirect_open(int daemon_fd)
{
	struct fsp_verbs_direct d;
	const char *off = getenv("FABSIM_VERBS_DIRECT");
	int ret;

	vd.dfd = daemon_fd;
	vd.ep = epoll_create1(EPOLL_CLOEXEC);
	if (vd.ep < 0)
		return -errno;
	vd.daemon = (struct src){SRC_DAEMON, daemon_fd};
	ret = ep_add(&vd.daemon, EPOLLIN);
	if (ret)
		goto fail;
	/* FABSIM_VERBS_DIRECT=0: everything through the daemon (to compare). */
	if (off && !strcmp(off, "0"))
		return vd.ep;
	vd.gen = gen_map();
	if (!vd.gen)
		return vd.ep;
	vd.lfd = listener_open(&d);
	if (vd.lfd < 0)
		return vd.ep;
	vd.listen = (struct src){SRC_LISTEN, vd.lfd};
	if (ep_add(&vd.listen, EPOLLIN) ||
	    verbs_client_send(daemon_fd, FSP_VERBS_DIRECT, 0, &d, sizeof(d))) {
		listener_unlink();
		close(vd.lfd);
		vd.lfd = -1;
	}
	return vd.ep;
fail:
	close(vd.ep);
	vd.ep = -1;
	return ret;
}

/* ---- sending ------------------------------------------------------------ */

/* The route of (dlid, dqpn's block); created if asked to (NULL if out
 * of memory, then the daemon carries the packet). */
static struct route *route_find(uint16_t dlid, uint32_t dqpn, bool create)
{
	uint32_t block = dqpn / FSP_VERBS_QPN_BLOCK_SIZE;
	struct route *r;

	if (!dlid || dlid >= UNICAST_LIDS)
		return NULL;
	if (!vd.by_lid) {
		if (!create || !(vd.by_lid = calloc(UNICAST_LIDS, sizeof(*vd.by_lid))))
			return NULL;
	}
	for (r = vd.by_lid[dlid]; r; r = r->next)
		if (r->block == block)
			return r;
	if (!create || !(r = calloc(1, sizeof(*r))))
		return NULL;
	r->s = (struct src){SRC_ROUTE, -1};
	r->dlid = dlid;
	r->block = block;
	r->dqpn = dqpn;
	r->next = vd.by_lid[dlid];
	vd.by_lid[dlid] = r;
	return r;
}

static uint64_t gen_now(void)
{
	return __atomic_load_n(vd.gen, __ATOMIC_ACQUIRE);
}

static void drained(struct peer *p);

static void peer_dead(struct peer *p)
{
	struct qmsg *m;

	if (p->dead)
		return;
	p->dead = true;
	close(p->s.fd); /* also leaves the epoll set */
	p->s.fd = -1;
	while ((m = p->q)) {
		p->q = m->next;
		free(m);
		vdirect_stats.lost++;
	}
	p->qtail = NULL;
	drained(p);
}

static void want_out(struct peer *p, bool on)
{
	struct epoll_event ev = {.events = on ? EPOLLOUT : 0, .data.ptr = &p->s};

	if (p->want_out == on)
		return;
	p->want_out = on;
	epoll_ctl(vd.ep, EPOLL_CTL_MOD, p->s.fd, &ev);
}

static bool append(struct qmsg **head, struct qmsg **tail, const uint8_t *buf, size_t len)
{
	struct qmsg *m = malloc(sizeof(*m) + len);

	if (!m)
		return false;
	m->next = NULL;
	m->len = len;
	memcpy(m->data, buf, len);
	if (*tail)
		(*tail)->next = m;
	else
		*head = m;
	*tail = m;
	return true;
}

static bool queue(struct peer *p, const uint8_t *buf, size_t len)
{
	return append(&p->q, &p->qtail, buf, len);
}

/* Send one message now; 1 sent, 0 no room, -1 the peer is gone. */
static int try_send(struct peer *p, const uint8_t *buf, size_t len)
{
	for (;;) {
		ssize_t n = send(p->s.fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n == (ssize_t)len) {
			vdirect_stats.tx++;
			return 1;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == ENOBUFS))
			return 0;
		return -1;
	}
}

static void flush_queue(struct peer *p)
{
	struct qmsg *m;
	int r = 1;

	while ((m = p->q) && (r = try_send(p, m->data, m->len)) == 1) {
		p->q = m->next;
		if (!p->q)
			p->qtail = NULL;
		free(m);
	}
	if (r < 0) {
		peer_dead(p);
	} else {
		want_out(p, p->q != NULL);
		if (!p->q)
			drained(p);
	}
}

static void peer_send(struct peer *p, const uint8_t *recs, size_t len)
{
	int r = 0;

	if (p->dead) {
		vdirect_stats.lost++;
		return;
	}
	if (!p->q)
		r = try_send(p, recs, len);
	if (r < 0) {
		/* The process went: lost, as a packet to a dead port is. */
		peer_dead(p);
		vdirect_stats.lost++;
	} else if (r == 0) {
		if (queue(p, recs, len)) {
			vdirect_stats.queued++;
			want_out(p, true);
		} else {
			vdirect_stats.lost++;
		}
	}
}

/* Records through the daemon, as the transport sends a batch. */
static int daemon_send(const uint8_t *recs, size_t len)
{
	return verbs_client_send(vd.dfd, FSP_VERBS_PKTS, 0, recs, len);
}

/* Whether packets for r must wait (in r->pend): for the answer to its
 * question, or for its old direct peer to take what waits for room. */
static bool held(const struct route *r)
{
	return r->state == R_PENDING || r->drain;
}

/* The question leaves when the first packet that waits for it does: after
 * everything sent before it, so that a fence (FSP_VERBS_ROUTE_FENCE) the
 * daemon sends ahead of its answer is behind those packets too. */
static void ask(struct route *r)
{
	struct fsp_verbs_route q = {.dlid = r->dlid, .dqpn = r->dqpn};

	if (r->via_daemon)
		q.flags = FSP_VERBS_ROUTE_FENCE;
	r->asked = true;
	vdirect_stats.asked++;
	if (r->via_daemon)
		vdirect_stats.fences++;
	(void)verbs_client_send(vd.dfd, FSP_VERBS_ROUTE, 0, &q, sizeof(q));
}

int vdirect_send(void *to, const uint8_t *recs, size_t len)
{
	struct route *r = to;

	if (r->s.kind == SRC_OUT) {
		peer_send(to, recs, len);
		return 0;
	}
	if (held(r)) {
		if (!append(&r->pend, &r->pend_tail, recs, len))
			vdirect_stats.lost++;
		if (r->state == R_PENDING && !r->asked)
			ask(r);
		return 0;
	}
	if (r->state == R_GRANTED && !r->peer->dead) {
		peer_send(r->peer, recs, len);
		return 0;
	}
	r->via_daemon = true;
	return daemon_send(recs, len);
}

/* The answer came (and the old path drained): what waited leaves, in
 * order, where it says. */
static void pend_flush(struct route *r)
{
	struct qmsg *m;

	while ((m = r->pend)) {
		r->pend = m->next;
		if (r->state == R_GRANTED && !r->peer->dead) {
			peer_send(r->peer, m->data, m->len);
		} else {
			r->via_daemon = true;
			(void)daemon_send(m->data, m->len);
		}
		free(m);
	}
	r->pend_tail = NULL;
}

static void undrain(struct route *r)
{
	for (struct route **pp = &vd.draining; *pp; pp = &(*pp)->drain_next)
		if (*pp == r) {
			*pp = r->drain_next;
			break;
		}
	r->drain_next = NULL;
}

/* p has nothing left waiting for room (or went): routes whose answer
 * waited for that send what they held. */
static void drained(struct peer *p)
{
	struct route *r;

	for (;;) {
		for (r = vd.draining; r && r->drain != p; r = r->drain_next)
			;
		if (!r)
			return;
		undrain(r);
		r->drain = NULL;
		pend_flush(r);
	}
}

void *vdirect_route(const uint8_t *pkt, size_t len)
{
	uint16_t dlid, slid;
	uint32_t dqpn;
	uint64_t g;
	struct route *r;

	if (!vd.gen || vd.lfd < 0 || fsp_verbs_pkt_addr(pkt, len, &dlid, &slid, &dqpn))
		return NULL; /* malformed: fabsimd drops and counts it */
	if (!dlid || dlid >= UNICAST_LIDS)
		return NULL; /* multicast is flooded by the daemon */
	r = route_find(dlid, dqpn, true);
	if (!r)
		return NULL;
	g = gen_now();
	if (r->gen != g || !r->state) {
		/* Asked anew (when a packet leaves: ask()); what waits for
		 * an earlier question keeps waiting, for this answer.  If the
		 * answer names another path, it waits for what this peer has
		 * not taken yet (a real fabric keeps one QP's packets in
		 * order: one path at a time, sim/verbs_proto.h). */
		if (r->state == R_GRANTED && !r->peer->dead && !r->drain)
			r->drain = r->peer;
		undrain(r);
		r->gen = g;
		r->state = R_PENDING;
		r->asked = false;
		r->peer = NULL;
		return r;
	}
	if (held(r))
		return r;
	if (r->state == R_GRANTED && !r->peer->dead)
		return r->peer;
	r->via_daemon = true;
	return NULL;
}

static struct peer *peer_get(const struct fsp_verbs_route *g)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char name[FSP_VERBS_ADDR_MAX + 1];
	int sndbuf = PEER_SNDBUF;
	struct peer *p;
	int fd;

	if (g->addr_len < 2 || g->addr_len > FSP_VERBS_ADDR_MAX)
		return NULL;
	for (p = vd.peers; p; p = p->next)
		if (p->addr_len == g->addr_len && !memcmp(p->addr, g->addr, g->addr_len))
			break;
	if (p && !p->dead)
		return p;
	memcpy(name, g->addr, g->addr_len);
	name[g->addr_len] = 0;
	if (strlen(name) != g->addr_len || sock_path(&sa, name))
		return NULL;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return NULL;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			close(fd);
			return NULL;
		}
		p->addr_len = g->addr_len;
		memcpy(p->addr, g->addr, g->addr_len);
		p->next = vd.peers;
		vd.peers = p;
	}
	/* A reused entry: events the last epoll_wait reported for its old
	 * socket must not act on the new one. */
	for (int i = vd.iready; i < vd.nready; i++)
		if (vd.ready[i].data.ptr == &p->s)
			vd.ready[i].events = 0;
	p->s = (struct src){SRC_OUT, fd};
	p->dead = false;
	p->want_out = false;
	/* No events asked: hang-up and errors are always reported. */
	if (ep_add(&p->s, 0)) {
		peer_dead(p);
		return NULL;
	}
	return p;
}

void vdirect_grant(const struct fsp_verbs_route *g)
{
	struct route *r;

	if (!vd.gen || g->dlid > 0xffff)
		return;
	r = route_find((uint16_t)g->dlid, g->dqpn, false);
	if (!r || r->state != R_PENDING)
		return;
	/* What went through the daemon before the question was read ahead
	 * of the fence; nothing went since (packets wait for the answer). */
	if (g->flags & FSP_VERBS_ROUTE_FENCED)
		r->via_daemon = false;
	/* An answer for another generation than now is void: ask again
	 * (packets may be waiting for it). */
	if (g->gen != gen_now()) {
		r->gen = gen_now();
		ask(r);
		return;
	}
	r->gen = g->gen;
	r->peer = g->status ? NULL : peer_get(g);
	r->state = r->peer ? R_GRANTED : R_REFUSED;
	if (r->peer)
		vdirect_stats.granted++;
	/* Another path than the old peer's: not before it took its due. */
	if (r->drain && (r->drain == r->peer || r->drain->dead || !r->drain->q))
		r->drain = NULL;
	if (r->drain) {
		vdirect_stats.drain_waits++;
		r->drain_next = vd.draining;
		vd.draining = r;
		return;
	}
	pend_flush(r);
}

/* ---- receiving ---------------------------------------------------------- */

static void accept_all(void)
{
	for (;;) {
		int fd = accept4(vd.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct inconn *in;

		if (fd < 0)
			return;
		in = malloc(sizeof(*in));
		if (!in) {
			close(fd);
			continue;
		}
		in->s = (struct src){SRC_IN, fd};
		if (ep_add(&in->s, EPOLLIN)) {
			close(fd);
			free(in);
			continue;
		}
		in->next = vd.ins;
		in->pprev = &vd.ins;
		if (vd.ins)
			vd.ins->pprev = &in->next;
		vd.ins = in;
	}
}

/*
 * Before a message from the daemon is read, what each direct connection
 * held when it came is read: a sender that went from the direct path to
 * the daemon's put those packets there first (one QP's packets arrive in
 * order, sim/verbs_proto.h).  What holds at that moment is counted with
 * FIONREAD (every message queued on a SOCK_SEQPACKET socket), so a sender
 * that keeps sending directly does not hold the daemon's messages back.
 * true with a message in buf; false when the daemon's turn has come.
 */
static bool ins_first(uint8_t *buf, size_t cap, size_t *len)
{
	if (!vd.draining_ins) {
		for (struct inconn *in = vd.ins; in; in = in->next)
			if (ioctl(in->s.fd, FIONREAD, &in->owe) < 0)
				in->owe = 0;
		vd.draining_ins = true;
	}
	for (struct inconn *in = vd.ins; in; in = in->next) {
		ssize_t n;

		if (in->owe <= 0)
			continue;
		n = recv(in->s.fd, buf, cap, MSG_DONTWAIT);
		if (n <= 0) {
			/* Gone or empty: its own event handles it. */
			in->owe = 0;
			continue;
		}
		in->owe -= (int)n;
		vdirect_stats.rx++;
		*len = (size_t)n;
		return true;
	}
	vd.draining_ins = false;
	return false;
}

int vdirect_next(uint8_t *buf, size_t cap, size_t *len)
{
	struct epoll_event *ev;
	struct src *s;
	ssize_t n;

	if (vd.iready >= vd.nready) {
		int k = epoll_wait(vd.ep, vd.ready, READY_MAX, 0);

		vd.iready = vd.nready = 0;
		if (k <= 0)
			return VD_NONE;
		vd.nready = k;
	}
	ev = &vd.ready[vd.iready++];
	s = ev->data.ptr;
	switch (s->kind) {
	case SRC_DAEMON:
		if (vd.ins && ins_first(buf, cap, len)) {
			vd.iready--; /* the daemon's turn comes after */
			return VD_DATA;
		}
		return VD_DAEMON;
	case SRC_LISTEN:
		accept_all();
		return VD_DONE;
	case SRC_OUT: {
		struct peer *p = (struct peer *)s;

		if (p->dead)
			return VD_DONE;
		if (ev->events & (EPOLLHUP | EPOLLERR))
			peer_dead(p);
		else if (ev->events & EPOLLOUT)
			flush_queue(p);
		return VD_DONE;
	}
	case SRC_ROUTE: /* never in the epoll set */
		return VD_DONE;
	case SRC_IN:
		break;
	}
	n = recv(s->fd, buf, cap, MSG_DONTWAIT);
	if (n > 0) {
		vdirect_stats.rx++;
		*len = (size_t)n;
		return VD_DATA;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		struct inconn *in = (struct inconn *)s;

		/* The sender went (its process exited). */
		close(s->fd);
		*in->pprev = in->next;
		if (in->next)
			in->next->pprev = in->pprev;
		free(in);
		/* Later entries of this round cannot name it: each source
		 * appears once per epoll_wait, and this one is done. */
	}
	return VD_DONE;
}

/* ---- exit ---------------------------------------------------------------- */

#define EXIT_WAIT_MS 200 /* longest wait for full receivers at exit */

static int64_t ms_left(const struct timespec *end)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
}

/*
 * The process exits.  Packets still held here were completed to the
 * application already (a UD SEND completes as it leaves, an ACK is
 * sent), so on an HCA they would be on the wire and outlive the process:
 * they must leave now, not die with it.  Those waiting for a route answer
 * (the first packets to a peer, e.g. the replies of a UD server that
 * exits once they are completed, as udaddy's does) go through the daemon,
 * which routes them as it would have without cut-through; those waiting
 * for a full receiver get a moment for room (they are behind what is
 * already in its socket), then go through the daemon too.
 */
void vdirect_exit(void)
{
	struct timespec end;

	if (!vd.gen || vd.lfd < 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_nsec += EXIT_WAIT_MS * 1000000L;
	end.tv_sec += end.tv_nsec / 1000000000L;
	end.tv_nsec %= 1000000000L;
	for (struct peer *p = vd.peers; p; p = p->next) {
		struct qmsg *m;
		int64_t left;

		while (!p->dead && p->q) {
			struct pollfd pfd = {.fd = p->s.fd, .events = POLLOUT};

			flush_queue(p);
			left = ms_left(&end);
			if (p->dead || !p->q || left <= 0)
				break;
			(void)poll(&pfd, 1, (int)left);
		}
		while (!p->dead && (m = p->q)) {
			p->q = m->next;
			(void)daemon_send(m->data, m->len);
			free(m);
		}
		p->qtail = NULL;
	}
	for (uint32_t lid = 0; vd.by_lid && lid < UNICAST_LIDS; lid++)
		for (struct route *r = vd.by_lid[lid]; r; r = r->next)
			if (r->pend) {
				/* No answer will be read: through the daemon. */
				undrain(r);
				r->drain = NULL;
				r->state = R_REFUSED;
				pend_flush(r);
			}
	listener_unlink();
}

void vdirect_daemon_gone(void)
{
	if (vd.ep >= 0)
		epoll_ctl(vd.ep, EPOLL_CTL_DEL, vd.dfd, NULL);
	/* No answer will come: what waited for one is lost. */
	for (uint32_t lid = 0; vd.by_lid && lid < UNICAST_LIDS; lid++)
		for (struct route *r = vd.by_lid[lid]; r; r = r->next) {
			struct qmsg *m;

			while ((m = r->pend)) {
				r->pend = m->next;
				free(m);
				vdirect_stats.lost++;
			}
			r->pend_tail = NULL;
			r->drain = NULL;
			r->drain_next = NULL;
			if (r->state == R_PENDING)
				r->state = R_REFUSED;
		}
	vd.draining = NULL;
}
