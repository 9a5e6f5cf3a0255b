/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The program's side of the madcmd protocol: sessions, the remote CM of a
 * port (commands in order, events kept while a command waits for its
 * REPLY) and the HOST session's port-space calls.  rtproto/umad_remote.c is
 * the MAD session (the SA client's proxy).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "mad/timer.h"
#include "rtproto/rt_client.h"

/*
 * Wait until fd is ready for `events`, at most madcmd_timeout_ms(): 0,
 * -ETIMEDOUT (the daemon sent nothing, or took nothing, for that long:
 * stopped, livelocked, under a debugger) or -errno.  The bound is on the
 * daemon's progress, each packet starting it again, not on one answer: a
 * daemon that is busy but keeps talking is not lost.
 */
static int wait_fd(int fd, short events)
{
	uint64_t end = mad_clock_monotonic_ns(NULL) + (uint64_t)madcmd_timeout_ms() * 1000000u;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		uint64_t now = mad_clock_monotonic_ns(NULL);
		int n;

		if (now >= end)
			return MADCMD_ERR_STALLED;
		/* Rounded up, so that a wait never ends before the bound. */
		n = poll(&p, 1, (int)((end - now + 999999u) / 1000000u));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* One packet of len bytes gathered from iov (sendmsg: no copy into one buffer). */
static int client_sendv(int fd, struct iovec *iov, size_t niov, size_t len)
{
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = niov};

	for (;;) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			return -EPROTO; /* SOCK_SEQPACKET never sends a part */
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) /* EPIPE, ECONNRESET: the daemon is gone */
			return -ENOTCONN;
		int rc = wait_fd(fd, POLLOUT);

		if (rc)
			return rc;
	}
}

int madcmd_client_send(int fd, const void *m, size_t len)
{
	struct iovec iov = {.iov_base = (void *)m, .iov_len = len};

	return client_sendv(fd, &iov, 1, len);
}

int madcmd_client_recv_packets(int fd, uint8_t *const *bufs, size_t cap, size_t *lens, int k,
			       bool wait)
{
	struct mmsghdr mm[RT_RECV_PACKETS];
	struct iovec iov[RT_RECV_PACKETS];

	if (k < 1 || k > RT_RECV_PACKETS)
		return -EINVAL;
	for (;;) {
		int n;

		for (int i = 0; i < k; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = cap;
			memset(&mm[i], 0, sizeof(mm[i]));
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(fd, mm, (unsigned)k, MSG_TRUNC | MSG_DONTWAIT, NULL);
		if (n > 0) {
			for (int i = 0; i < n; i++) {
				if (!mm[i].msg_len)
					return i ? i : -ENOTCONN; /* EOF after i packets */
				lens[i] = mm[i].msg_len;
			}
			return n;
		}
		if (n == 0)
			return -ENOTCONN;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -ENOTCONN;
		if (!wait)
			return -EAGAIN;
		int rc = wait_fd(fd, POLLIN);

		if (rc)
			return rc;
	}
}

ssize_t madcmd_client_recv_packet(int fd, void *buf, size_t cap, bool wait)
{
	uint8_t *bufs[1] = {buf};
	size_t len = 0; /* set when n > 0; LTO cannot see it */
	int n = madcmd_client_recv_packets(fd, bufs, cap, &len, 1, wait);

	return n < 0 ? n : (ssize_t)len;
}

int madcmd_client_recv(int fd, void *buf, size_t cap, bool wait)
{
	ssize_t n = madcmd_client_recv_packet(fd, buf, cap, wait);

	if (n < 0)
		return (int)n;
	return (size_t)n > cap ? -EPROTO : madcmd_check(buf, (size_t)n);
}

int madcmd_session_open(const char *path, enum madcmd_kind kind, const char *ca, int port,
			uint8_t mra_on_delivery, struct madcmd_hello_rep *rep)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct madcmd_hello h;
	union {
		struct madcmd_hello_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	int fd, rc;

	if (!path || strlen(path) >= sizeof(sun.sun_path))
		return -EINVAL;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	madcmd_socket_bufs(fd);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		rc = -errno;
		if (rc == -EAGAIN || rc == -EINPROGRESS) {
			/* A full backlog: wait until the daemon takes us. */
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			socklen_t sl = sizeof(rc);

			if (poll(&p, 1, 5000) == 1 &&
			    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &sl) && !rc)
				goto connected;
			rc = rc > 0 ? -rc : -ECONNREFUSED;
		}
		close(fd);
		return rc;
	}
connected:
	memset(&h, 0, sizeof(h));
	madcmd_hdr_init(&h.h, MADCMD_HELLO, sizeof(h), 0);
	h.kind = kind;
	h.layout = madcmd_layout();
	if (ca)
		strncpy(h.ca, ca, sizeof(h.ca) - 1);
	h.port = port;
	h.mra_on_delivery = mra_on_delivery;
	rc = madcmd_client_send(fd, &h, sizeof(h));
	if (!rc)
		rc = madcmd_client_recv(fd, &in, sizeof(in), true);
	if (rc == MADCMD_HELLO_REP)
		rc = in.r.layout != madcmd_layout() ? -EPROTO : in.r.rc;
	else if (rc >= 0)
		rc = -EPROTO;
	if (rc) {
		close(fd);
		return rc > 0 ? -EPROTO : rc;
	}
	if (rep)
		*rep = in.r;
	return fd;
}

/* ---- the remote CM of a port ---- */

int rt_remote_open(struct rt_remote *r, const char *path, const char *ca, int port,
		   uint8_t mra_on_delivery, struct madcmd_hello_rep *rep)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	for (int i = 0; i < RT_RECV_PACKETS; i++)
		if (!(r->in[i] = malloc(MADCMD_BATCH_MAX)))
			goto nomem;
	if (cm_qp_ahead_init(&r->ahead))
		goto nomem;
	r->now_ns = mad_clock_monotonic_ns;
	r->fd = madcmd_session_open(path, MADCMD_SESSION_CM, ca, port, mra_on_delivery, rep);
	if (r->fd < 0) {
		int rc = r->fd;

		rt_remote_close(r);
		return rc;
	}
	return 0;
nomem:
	for (int i = 0; i < RT_RECV_PACKETS; i++)
		free(r->in[i]);
	memset(r->in, 0, sizeof(r->in));
	return -ENOMEM;
}

void rt_remote_close(struct rt_remote *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->pend);
	r->pend = NULL;
	r->pcount = r->pcap = r->phead = 0;
	cm_qp_ahead_destroy(&r->ahead);
	for (int i = 0; i < RT_RECV_PACKETS; i++)
		free(r->in[i]);
	memset(r->in, 0, sizeof(r->in));
}

/* Keep what came ahead (a later message for the connection adds to it). */
static void ahead_put(struct rt_remote *r, uint32_t id, uint32_t n, const struct madcmd_qp_attr *qp)
{
	for (uint32_t i = 0; i < n; i++)
		cm_qp_ahead_put(&r->ahead, id, qp[i].state, &qp[i].attr, qp[i].mask);
}

static void keep(struct rt_remote *r, const struct cm_event *ev)
{
	if (r->pcount == r->pcap) {
		unsigned ncap = r->pcap ? r->pcap * 2 : 16;
		struct cm_event *nv = malloc(ncap * sizeof(*nv));

		if (!nv)
			return; /* lost like a full runtime queue's event */
		for (unsigned i = 0; i < r->pcount; i++)
			nv[i] = r->pend[(r->phead + i) % r->pcap];
		free(r->pend);
		r->pend = nv;
		r->pcap = ncap;
		r->phead = 0;
	}
	r->pend[(r->phead + r->pcount++) % r->pcap] = *ev;
}

void rt_remote_lose(struct rt_remote *r, int status)
{
	if (r->lost)
		return;
	r->lost = true;
	r->lost_status = status;
	/*
	 * A daemon that stopped answering may wake: it must then see the
	 * session end, as a program's exit shows it.  shutdown, not close:
	 * the loop still watches the fd until the loss is run (its EOF wakes
	 * whoever waits on it).
	 */
	if (status != MADCMD_ERR_LOST && r->fd >= 0)
		shutdown(r->fd, SHUT_RDWR);
	/* No answer will come: each wait ends with the loss's status. */
	for (struct rt_path_wait *w = r->paths; w; w = w->next)
		if (!w->answered) {
			w->answered = true;
			if (w->service) {
				w->srep.rc = status;
				w->srep.n = 0;
			} else {
				w->rep.rc = status;
				w->rep.n = 0;
			}
		}
}

int rt_remote_ping(struct rt_remote *r)
{
	struct madcmd_hdr h;
	ssize_t n;

	if (r->lost || r->fd < 0)
		return MADCMD_ERR_LOST;
	if (r->ping_out)
		return -EALREADY;
	madcmd_hdr_init(&h, MADCMD_PING, sizeof(h), ++r->seq);
	/* Never a wait here: the loop sends it, and a full socket is the bound's to judge. */
	do
		n = send(r->fd, &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(h)) {
		r->ping_out = true;
		r->pings++;
		return 0;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -EAGAIN;
	return MADCMD_ERR_LOST; /* EPIPE, ECONNRESET: the daemon is gone */
}

bool rt_remote_waiting(const struct rt_remote *r)
{
	for (const struct rt_path_wait *w = r->paths; w; w = w->next)
		if (!w->answered)
			return true;
	return false;
}

/* The unanswered wait of kind `service` for seq; NULL (counted) when none. */
static struct rt_path_wait *wait_of(struct rt_remote *r, uint32_t seq, bool service)
{
	for (struct rt_path_wait *w = r->paths; w; w = w->next)
		if (w->seq == seq && !w->answered && w->service == service)
			return w;
	r->malformed++; /* an answer to nothing asked */
	return NULL;
}

static void path_rep(struct rt_remote *r, const struct madcmd_path_rep *rep)
{
	struct rt_path_wait *w = wait_of(r, rep->h.seq, false);

	if (w) {
		/* The header, rc, n and the n records (n checked, madcmd_check): what is read. */
		memcpy(&w->rep, rep, offsetof(struct madcmd_path_rep, recs) + rep->n * SA_PR_SIZE);
		w->answered = true;
	}
}

static void service_rep(struct rt_remote *r, const struct madcmd_service_rep *rep)
{
	struct rt_path_wait *w = wait_of(r, rep->h.seq, true);

	if (w) {
		memcpy(&w->srep, rep,
		       offsetof(struct madcmd_service_rep, recs) + rep->n * SA_SR_SIZE);
		w->answered = true;
	}
}

/* Send a query (its header filled here) and keep w, last, until its answer. */
static int query_send(struct rt_remote *r, enum madcmd_type type, struct madcmd_hdr *h, size_t len,
		      struct rt_path_wait *w)
{
	struct rt_path_wait **pp = &r->paths;

	int rc;

	if (r->lost)
		return MADCMD_ERR_LOST;
	madcmd_hdr_init(h, type, len, ++r->seq);
	if ((rc = madcmd_client_send(r->fd, h, len))) {
		rc = rc == MADCMD_ERR_STALLED ? rc : MADCMD_ERR_LOST;
		rt_remote_lose(r, rc);
		return rc;
	}
	/* A wait for the daemon starts: its silence counts from here. */
	if (!rt_remote_waiting(r))
		r->heard_ns = r->now_ns(r->clock_ctx);
	/* rep and srep are written by the answer (or the loss): rc and n first. */
	w->seq = h->seq;
	w->answered = false;
	w->service = type == MADCMD_SERVICE_QUERY;
	w->next = NULL;
	while (*pp)
		pp = &(*pp)->next;
	*pp = w;
	return 0;
}

int rt_remote_path_send(struct rt_remote *r, struct madcmd_path_query *q, struct rt_path_wait *w)
{
	return query_send(r, MADCMD_PATH_QUERY, &q->h, sizeof(*q), w);
}

int rt_remote_service_send(struct rt_remote *r, struct madcmd_service_query *q,
			   struct rt_path_wait *w)
{
	return query_send(r, MADCMD_SERVICE_QUERY, &q->h, sizeof(*q), w);
}

struct rt_path_wait *rt_remote_path_pop(struct rt_remote *r)
{
	for (struct rt_path_wait **pp = &r->paths; *pp; pp = &(*pp)->next)
		if ((*pp)->answered) {
			struct rt_path_wait *w = *pp;

			*pp = w->next;
			w->next = NULL;
			return w;
		}
	return NULL;
}

static void grants_put(struct rt_remote *r, const struct madcmd_grant *g)
{
	for (uint32_t i = 0; i < g->n && r->gcount < RT_GRANTS; i++)
		r->grant[(r->ghead + r->gcount++) % RT_GRANTS] = g->ids[i];
}

bool rt_remote_grant(struct rt_remote *r, uint32_t *id)
{
	if (r->lost || !r->gcount)
		return false;
	*id = r->grant[r->ghead];
	r->ghead = (r->ghead + 1) % RT_GRANTS;
	r->gcount--;
	return true;
}

/* The REPLY of an async command that failed, as the event that says so. */
static void async_failed(struct rt_remote *r, const struct cm_rt_cmd *c)
{
	struct cm_event ev;

	if (c->op != CM_RT_CONNECT_AS && c->op != CM_RT_ACCEPT) {
		r->malformed++;
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.type = c->op == CM_RT_CONNECT_AS ? CM_EV_REQ_ERROR : CM_EV_CONNECT_ERROR;
	ev.id = c->id;
	ev.user = c->user;
	ev.listen_id = -1;
	ev.status = c->result < 0 ? c->result : -EPROTO;
	keep(r, &ev);
}

/* One message of a packet: EVENT kept, REPLY copied when it is `want`'s (1). */
static int take_msg(struct rt_remote *r, int t, const void *msg, size_t len, struct cm_rt_cmd *want,
		    uint32_t seq)
{
	union msg {
		struct madcmd_hdr h;
		struct madcmd_cmd c;
		struct madcmd_event e;
		struct madcmd_grant g;
		struct madcmd_path_rep p;
		struct madcmd_service_rep sr;
		uint8_t b[MADCMD_MSG_MAX];
	} copy;
	const union msg *m = msg;

	/*
	 * Read in place: every message of a batch is as long as its struct,
	 * a multiple of 8, so each sits aligned in the receive buffer; a copy
	 * only for one that does not.
	 */
	if ((uintptr_t)msg % _Alignof(union msg)) {
		memcpy(&copy, msg, len < sizeof(copy) ? len : sizeof(copy));
		m = &copy;
	}
	if (t == MADCMD_EVENT) {
		/* Dropped with the connection's end (runtime_remote.c, ahead_on_event). */
		ahead_put(r, m->e.ev.id, m->e.nqp, m->e.qp);
		keep(r, &m->e.ev);
	} else if (t == MADCMD_GRANT) {
		grants_put(r, &m->g);
	} else if (t == MADCMD_PATH_REP) {
		path_rep(r, &m->p);
	} else if (t == MADCMD_SERVICE_REP) {
		service_rep(r, &m->sr);
	} else if (t == MADCMD_PONG) {
		r->ping_out = false; /* heard_ns moved with the packet (take) */
	} else if (t == MADCMD_REPLY && (m->h.flags & MADCMD_F_ASYNC)) {
		async_failed(r, &m->c.cmd);
	} else if (t == MADCMD_REPLY && want && m->h.seq == seq) {
		struct cm_rt_auto_qp aq = want->auto_qp;

		*want = m->c.cmd;
		want->auto_qp = aq;
		if (want->op == CM_RT_CONNECT && want->result == 0)
			ahead_put(r, want->id, m->c.nqp, m->c.qp);
		return 1;
	} else {
		r->malformed++; /* a message this session never asked for */
	}
	return 0;
}

/*
 * Take the packets one receive gives (each a batch of one or more
 * messages, rt_proto.h), each message as take_msg: 1 if `want`'s REPLY was
 * among them, 0, -EAGAIN, -ENOTCONN or -ETIMEDOUT (the session then
 * lost, rt_remote_lose).  *drained: the socket was left
 * empty (fewer packets than asked for came).
 */
static int take(struct rt_remote *r, bool wait, struct cm_rt_cmd *want, uint32_t seq, bool *drained)
{
	size_t lens[RT_RECV_PACKETS];
	int n, got = 0;

	*drained = true;
	if (!r->in[0])
		return -ENOTCONN;
	n = madcmd_client_recv_packets(r->fd, r->in, MADCMD_BATCH_MAX, lens, RT_RECV_PACKETS, wait);
	if (n == -EAGAIN)
		return -EAGAIN;
	if (n < 0) {
		/* EOF, ECONNRESET: the daemon is gone; or silent past the bound. */
		n = n == MADCMD_ERR_STALLED ? n : MADCMD_ERR_LOST;
		rt_remote_lose(r, n);
		return n;
	}
	r->heard_ns = r->now_ns(r->clock_ctx);
	*drained = n < RT_RECV_PACKETS;
	for (int i = 0; i < n; i++) {
		size_t off = 0, len;
		const void *msg;
		int t;

		if (lens[i] > MADCMD_BATCH_MAX) {
			r->malformed++; /* truncated: nothing in it can be trusted */
			continue;
		}
		while ((t = madcmd_batch_next(r->in[i], lens[i], &off, &msg, &len)) > 0)
			if (take_msg(r, t, msg, len, want, seq) == 1)
				got = 1;
		if (t < 0)
			r->malformed++; /* the rest of the packet is dropped */
	}
	return got;
}

/*
 * Send one CMD (flags MADCMD_F_*; auto_qp never travels): 0, -ENOTCONN or
 * -ETIMEDOUT.  Gathered from the header, the caller's command and zeros
 * (auto_qp, and the REPLY's fields): no 1416-byte message built first.
 */
static int send_cmd(struct rt_remote *r, const struct cm_rt_cmd *c, uint32_t flags)
{
	static const uint8_t zeros[sizeof(struct madcmd_cmd) - offsetof(struct madcmd_cmd, nqp)];
	const size_t aq = offsetof(struct cm_rt_cmd, auto_qp), aq_end = aq + sizeof(c->auto_qp);
	struct madcmd_hdr h;
	struct iovec iov[5] = {
	    {.iov_base = &h, .iov_len = sizeof(h)},
	    {.iov_base = (void *)c, .iov_len = aq},
	    {.iov_base = (void *)zeros, .iov_len = sizeof(c->auto_qp)},
	    {.iov_base = (uint8_t *)c + aq_end, .iov_len = sizeof(*c) - aq_end},
	    {.iov_base = (void *)zeros, .iov_len = sizeof(zeros)},
	};
	int rc;

	_Static_assert(offsetof(struct madcmd_cmd, cmd) == sizeof(struct madcmd_hdr) &&
			   offsetof(struct madcmd_cmd, nqp) ==
			       offsetof(struct madcmd_cmd, cmd) + sizeof(struct cm_rt_cmd) &&
			   sizeof(zeros) >= sizeof(((struct cm_rt_cmd *)0)->auto_qp),
		       "a CMD is its header, the command, then the REPLY's fields");
	if (r->lost)
		return MADCMD_ERR_LOST;
	madcmd_hdr_init(&h, MADCMD_CMD, sizeof(struct madcmd_cmd), ++r->seq);
	h.flags = flags;
	if ((rc = client_sendv(r->fd, iov, 5, sizeof(struct madcmd_cmd)))) {
		rc = rc == MADCMD_ERR_STALLED ? rc : MADCMD_ERR_LOST;
		rt_remote_lose(r, rc);
		return rc;
	}
	return 0;
}

int rt_remote_call(struct rt_remote *r, struct cm_rt_cmd *c)
{
	int rc = send_cmd(r, c, 0);
	bool drained;

	if (rc)
		return rc;
	while ((rc = take(r, true, c, r->seq, &drained)) == 0)
		;
	return rc == 1 ? 0 : rc;
}

int rt_remote_post(struct rt_remote *r, const struct cm_rt_cmd *c)
{
	return send_cmd(r, c, MADCMD_F_NOREPLY);
}

int rt_remote_post_async(struct rt_remote *r, const struct cm_rt_cmd *c)
{
	return send_cmd(r, c, MADCMD_F_ASYNC);
}

int rt_remote_poll(struct rt_remote *r)
{
	bool drained = false;
	int n = 0, rc = 0;

	if (r->lost)
		return -ENOTCONN;
	while (!drained && (rc = take(r, false, NULL, 0, &drained)) == 0)
		n++;
	return rc == -EAGAIN || rc >= 0 ? n : rc;
}

bool rt_remote_pop(struct rt_remote *r, struct cm_event *ev)
{
	if (r->pcount) {
		*ev = r->pend[r->phead];
		r->phead = (r->phead + 1) % r->pcap;
		r->pcount--;
		return true;
	}
	if (r->lost && !r->lost_reported) {
		r->lost_reported = true;
		memset(ev, 0, sizeof(*ev));
		ev->type = CM_EV_RUNTIME_LOST;
		ev->listen_id = -1;
		ev->status = r->lost_status;
		return true;
	}
	return false;
}

/* ---- the HOST session ---- */

int madcmd_host_open(struct madcmd_host *h, const char *path)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
	if (path && strlen(path) < sizeof(h->path))
		strcpy(h->path, path);
	h->fd = madcmd_session_open(path, MADCMD_SESSION_HOST, "", 0, 0, NULL);
	return h->fd < 0 ? h->fd : 0;
}

void madcmd_host_close(struct madcmd_host *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	pthread_mutex_destroy(&h->lock);
}

/*
 * A HOST session whose daemon stopped answering ends here: closed, so the
 * daemon sees it end if it wakes; the next request opens one again.
 */
static int host_stalled(struct madcmd_host *h)
{
	close(h->fd);
	h->fd = -1;
	return MADCMD_ERR_STALLED;
}

/*
 * One request and its reply, under h->lock; -ENOTCONN: the session is
 * gone, -ETIMEDOUT: the daemon stopped answering (the session closed).
 */
static int host_port_once(struct madcmd_host *h, enum madcmd_type op, struct madcmd_port *req,
			  uint16_t *port)
{
	union {
		struct madcmd_hdr h;
		struct madcmd_port_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	int rc;

	if (h->fd < 0)
		return -ENOTCONN;
	madcmd_hdr_init(&req->h, op, sizeof(*req), ++h->seq);
	rc = madcmd_client_send(h->fd, req, sizeof(*req));
	while (!rc) {
		int t = madcmd_client_recv(h->fd, &in, sizeof(in), true);

		if (t == MADCMD_PORT_REP && in.h.seq == h->seq) {
			if (port)
				*port = in.r.port;
			return in.r.rc;
		}
		if (t == MADCMD_ERR_STALLED)
			rc = t;
		else if (t == -ENOTCONN || (t < 0 && t != -EPROTO))
			rc = -ENOTCONN;
	}
	return rc == MADCMD_ERR_STALLED ? host_stalled(h) : rc;
}

int madcmd_host_port(struct madcmd_host *h, enum madcmd_type op, struct madcmd_port *req,
		     uint16_t *port)
{
	int rc;

	pthread_mutex_lock(&h->lock);
	rc = host_port_once(h, op, req, port);
	if (rc == -ENOTCONN && h->path[0]) {
		/* The daemon went away: one started since serves from now on. */
		if (h->fd >= 0)
			close(h->fd);
		h->fd = madcmd_session_open(h->path, MADCMD_SESSION_HOST, "", 0, 0, NULL);
		if (h->fd >= 0)
			rc = host_port_once(h, op, req, port);
		else
			rc = h->fd == MADCMD_ERR_STALLED ? MADCMD_ERR_STALLED : -ENOTCONN;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int madcmd_host_stat(struct madcmd_host *h, void (*fn)(void *arg, const struct madcmd_stat_rep *r),
		     void *arg)
{
	return madcmd_host_stat_end(h, fn, arg, NULL);
}

int madcmd_host_stat_end(struct madcmd_host *h,
			 void (*fn)(void *arg, const struct madcmd_stat_rep *r), void *arg,
			 struct madcmd_stat_end *end)
{
	union {
		struct madcmd_hdr h;
		struct madcmd_stat_rep r;
		struct madcmd_stat_end e;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	struct madcmd_port req;
	int rc, n = 0;

	pthread_mutex_lock(&h->lock);
	memset(&req, 0, sizeof(req));
	madcmd_hdr_init(&req.h, MADCMD_STAT, sizeof(req), ++h->seq);
	rc = h->fd < 0 ? -ENOTCONN : madcmd_client_send(h->fd, &req, sizeof(req));
	while (!rc) {
		int t = madcmd_client_recv(h->fd, &in, sizeof(in), true);

		if (t == MADCMD_STAT_REP && in.h.seq == h->seq) {
			if (in.r.last) {
				if (end)
					memcpy(end, &in, sizeof(*end));
				break;
			}
			fn(arg, &in.r);
			n++;
		} else if (t == MADCMD_ERR_STALLED) {
			rc = t;
		} else if (t == -ENOTCONN || (t < 0 && t != -EPROTO)) {
			rc = -ENOTCONN;
		}
	}
	if (rc == MADCMD_ERR_STALLED)
		host_stalled(h);
	pthread_mutex_unlock(&h->lock);
	return rc ? rc : n;
}
