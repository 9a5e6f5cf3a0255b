/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Sessions: accepting them, who the peer is (SO_PEERCRED), HELLO, reading
 * packets and checking each (madcmd_check), the per-session output queue,
 * and closing: a closed session is stopped at once (no more input or
 * output, its socket closed) and freed from the loop, outside whatever
 * hook noticed the close, with the cleanup of what it owned.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "madcmd/madcmd_int.h"

static struct madcmd_counters *counters_of(struct madcmd_session *s)
{
	return s->port ? &s->port->c : &s->d->c;
}

static void epoll_set(struct madcmd_session *s, bool out)
{
	if (!mad_loop_set_ctl(s->d->loop, EPOLL_CTL_MOD, s->fd, s->slot,
			      EPOLLIN | (out ? EPOLLOUT : 0u)))
		s->pollout = out;
}

/* Off the batch list (a session that goes away). */
static void batch_unlist(struct madcmd_session *s)
{
	struct madcmd_session **pp = &s->d->batches;

	while (*pp && *pp != s)
		pp = &(*pp)->next_batch;
	if (*pp)
		*pp = s->next_batch;
	s->next_batch = NULL;
	s->batch_listed = false;
}

static void session_free(struct madcmd_session *s)
{
	struct madcmd *d = s->d;

	switch (s->kind) {
	case MADCMD_SESSION_CM:
		madcmd_asks_orphan(&s->path_asks);
		madcmd_asks_orphan(&s->service_asks);
		madcmd_cm_session_end(s);
		break;
	case MADCMD_SESSION_MAD:
		madcmd_mad_session_end(s);
		break;
	case MADCMD_SESSION_HOST:
		madcmd_ps_session_end(s);
		break;
	default:
		break;
	}
	while (s->qhead) {
		struct madcmd_msg *m = s->qhead;

		s->qhead = m->next;
		free(m);
	}
	batch_unlist(s);
	free(s->batch);
	if (s->port)
		s->port->c.sessions_now--;
	d->slots[s->slot] = NULL;
	d->nsessions--;
	free(s);
}

static void reap(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	struct madcmd *d = (struct madcmd *)((char *)cmd - offsetof(struct madcmd, reap_cmd));

	(void)l;
	d->reap_posted = false;
	for (unsigned i = 1; i <= d->p.max_sessions; i++)
		if (d->slots[i] && d->slots[i]->closing)
			session_free(d->slots[i]);
}

void madcmd_session_close(struct madcmd_session *s, const char *why)
{
	struct madcmd *d = s->d;

	if (s->closing)
		return;
	s->closing = true;
	madcmd_log(LOG_DEBUG, "session %u (pid %d uid %u) closed: %s", s->slot, (int)s->pid,
		   (unsigned)s->uid, why);
	mad_loop_set_ctl(d->loop, EPOLL_CTL_DEL, s->fd, 0, 0);
	close(s->fd);
	s->fd = -1;
	if (!d->reap_posted) {
		d->reap_cmd.run = reap;
		if (mad_loop_post(d->loop, &d->reap_cmd) == 0)
			d->reap_posted = true;
	}
}

void madcmd_sessions_close_all(struct madcmd *d)
{
	for (unsigned i = 1; i <= d->p.max_sessions; i++)
		if (d->slots[i]) {
			madcmd_session_close(d->slots[i], "daemon exiting");
			session_free(d->slots[i]);
		}
}

/* A packet that breaks the protocol: counted, logged once, session closed. */
static void bad(struct madcmd_session *s, const char *why)
{
	counters_of(s)->malformed++;
	if (!s->logged_bad)
		madcmd_log(LOG_WARNING, "session %u (pid %d): %s; closing it", s->slot, (int)s->pid,
			   why);
	s->logged_bad = true;
	madcmd_session_close(s, why);
}

/* One packet holding n messages: sent now, or queued behind the others. */
static void send_packet(struct madcmd_session *s, const void *msg, size_t len, uint32_t n)
{
	struct madcmd *d = s->d;
	struct madcmd_msg *m;

	if (s->closing)
		return;
	if (!s->qhead) {
		ssize_t r = send(s->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r == (ssize_t)len)
			return;
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			madcmd_session_close(s, "send failed");
			return;
		}
	}
	if (s->qlen + n > d->p.max_events) {
		madcmd_log(LOG_WARNING,
			   "client pid %d too slow (%u messages queued): closing its session",
			   (int)s->pid, (unsigned)s->qlen);
		d->c.slow++;
		madcmd_session_close(s, "too slow");
		return;
	}
	m = malloc(sizeof(*m) + len);
	if (!m) {
		madcmd_session_close(s, "out of memory");
		return;
	}
	m->next = NULL;
	m->len = len;
	m->nmsgs = n;
	memcpy(m->buf, msg, len);
	if (s->qtail)
		s->qtail->next = m;
	else
		s->qhead = m;
	s->qtail = m;
	s->qlen += n;
	if (!s->pollout)
		epoll_set(s, true);
}

static void batch_send(struct madcmd_session *s)
{
	if (!s->batch_len)
		return;
	send_packet(s, s->batch, s->batch_len, s->batch_n);
	s->batch_len = 0;
	s->batch_n = 0;
}

void madcmd_send(struct madcmd_session *s, const void *msg, size_t len)
{
	batch_send(s); /* what was gathered goes first */
	send_packet(s, msg, len, 1);
}

/* len bytes at the end of s's batch, counted as one message; NULL: closing or no memory. */
static uint8_t *batch_room(struct madcmd_session *s, size_t len)
{
	struct madcmd *d = s->d;
	uint8_t *p;

	if (s->closing || len > MADCMD_BATCH_MAX)
		return NULL;
	if (s->batch_len + len > MADCMD_BATCH_MAX)
		batch_send(s);
	if (s->closing || (!s->batch && !(s->batch = malloc(MADCMD_BATCH_MAX))))
		return NULL;
	if (!s->batch_listed) {
		s->next_batch = d->batches;
		d->batches = s;
		s->batch_listed = true;
	}
	p = s->batch + s->batch_len;
	s->batch_len += len;
	s->batch_n++;
	return p;
}

void *madcmd_batch_reserve(struct madcmd_session *s, size_t len)
{
	/* A length of 8s keeps the batch's messages aligned (its buffer is malloc's). */
	return len % 8 ? NULL : batch_room(s, len);
}

void madcmd_send_batched(struct madcmd_session *s, const void *msg, size_t len)
{
	void *p;

	if (s->closing)
		return;
	p = batch_room(s, len);
	if (p)
		memcpy(p, msg, len);
	else if (!s->closing)
		send_packet(s, msg, len, 1); /* no batch buffer: on its own */
}

void madcmd_send_batches(void *arg)
{
	struct madcmd *d = arg;
	struct madcmd_session *s = d->batches;

	d->batches = NULL;
	while (s) {
		struct madcmd_session *next = s->next_batch;

		s->next_batch = NULL;
		s->batch_listed = false;
		batch_send(s);
		s = next;
	}
}

static void flush(struct madcmd_session *s)
{
	while (s->qhead) {
		struct madcmd_msg *m = s->qhead;
		ssize_t n = send(s->fd, m->buf, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			madcmd_session_close(s, "send failed");
			return;
		}
		s->qhead = m->next;
		if (!s->qhead)
			s->qtail = NULL;
		s->qlen -= m->nmsgs;
		free(m);
	}
	epoll_set(s, false);
}

static struct madcmd_served *find_port(struct madcmd *d, const char *ca, int port)
{
	for (unsigned i = 0; i < d->nports; i++) {
		struct madcmd_served *p = &d->ports[i];

		if (!p->gone && (!ca[0] || !strcmp(ca, p->attr.ca_name)) &&
		    (!port || port == p->attr.portnum))
			return p;
	}
	return NULL;
}

/*
 * Why a port is not served: EBUSY where its CM agent is another process's
 * (umad refuses a second registration of the class: EINVAL or EBUSY),
 * what opening it gave otherwise, ENODEV for a port the daemon does not
 * know.  The daemon looks again every rescan_ms.
 */
static int unopened_err(const struct madcmd *d, const char *ca, int port)
{
	for (unsigned i = 0; i < d->nunopened; i++) {
		const struct madcmd_unopened *u = &d->unopened[i];

		if ((ca[0] && strcmp(ca, u->ca)) || (port && port != u->port))
			continue;
		return u->err == -EINVAL || u->err == -EBUSY ? -EBUSY : u->err;
	}
	return -ENODEV;
}

static void hello(struct madcmd_session *s, const struct madcmd_hello *h)
{
	struct madcmd_hello_rep r;
	struct madcmd_served *p = NULL;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	madcmd_hdr_init(&r.h, MADCMD_HELLO_REP, sizeof(r), h->h.seq);
	r.layout = madcmd_layout();
	if (h->layout != madcmd_layout()) {
		rc = -EPROTO;
	} else if (h->kind != MADCMD_SESSION_HOST) {
		p = find_port(s->d, h->ca, h->port);
		if (!p)
			rc = unopened_err(s->d, h->ca, h->port);
		else if (h->kind == MADCMD_SESSION_MAD && !p->proxy_ok)
			rc = -ENODEV;
	}
	if (!rc && p) {
		if (cm_runtime_port(p->rt, &r.port))
			r.port = p->attr;
		r.ca_guid = p->ca_guid;
	}
	r.rc = rc;
	madcmd_send(s, &r, sizeof(r));
	if (rc) {
		madcmd_log(LOG_INFO, "session %u (pid %d): HELLO refused (%s)", s->slot,
			   (int)s->pid, strerror(-rc));
		s->d->c.refused++;
		madcmd_session_close(s, "HELLO refused");
		return;
	}
	s->kind = h->kind;
	s->port = p;
	if (s->kind == MADCMD_SESSION_CM)
		s->mra_on_delivery = h->mra_on_delivery;
	if (p) {
		p->c.sessions++;
		p->c.sessions_now++;
	} else {
		s->d->c.sessions++;
	}
	if (s->kind == MADCMD_SESSION_CM)
		madcmd_cm_grant(s); /* so that its first connects need no REPLY */
}

/*
 * PING, in a session of any kind: PONG at once, after what was gathered
 * for the session (madcmd_send), so a program that only waits for events
 * hears from a daemon that runs (rtproto/runtime_remote.c's keepalive).
 */
static void pong(struct madcmd_session *s, const struct madcmd_hdr *ping)
{
	struct madcmd_hdr h;

	counters_of(s)->pings++;
	madcmd_hdr_init(&h, MADCMD_PONG, sizeof(h), ping->seq);
	madcmd_send(s, &h, sizeof(h));
}

void madcmd_session_input(struct madcmd_session *s, const void *buf, size_t len)
{
	int type = madcmd_check(buf, len);

	if (s->closing)
		return;
	if (type < 0) {
		bad(s, "malformed packet");
		return;
	}
	if (!s->kind) {
		if (type != MADCMD_HELLO)
			bad(s, "first message is not HELLO");
		else
			hello(s, buf);
		return;
	}
	if (type == MADCMD_PING) {
		pong(s, buf);
		return;
	}
	switch (s->kind) {
	case MADCMD_SESSION_CM:
		if (type == MADCMD_PATH_QUERY) {
			madcmd_path_query(s, buf);
			return;
		}
		if (type == MADCMD_SERVICE_QUERY) {
			madcmd_service_query(s, buf);
			return;
		}
		if (type != MADCMD_CMD)
			break;
		madcmd_cm_cmd(s, buf);
		return;
	case MADCMD_SESSION_MAD:
		if (type == MADCMD_MAD_REG) {
			madcmd_mad_reg(s, buf);
			return;
		}
		if (type == MADCMD_MAD_SEND) {
			madcmd_mad_send(s, buf);
			return;
		}
		break;
	case MADCMD_SESSION_HOST:
		if (type == MADCMD_PORT_BIND || type == MADCMD_PORT_LISTEN ||
		    type == MADCMD_PORT_UNBIND) {
			madcmd_port_msg(s, buf, type);
			return;
		}
		if (type == MADCMD_STAT) {
			madcmd_stat(s, buf);
			return;
		}
		break;
	default:
		break;
	}
	bad(s, "message out of place for the session's kind");
}

#define RECV_BATCH 16 /* packets taken by one recvmmsg(2) */

static void readable(struct madcmd_session *s)
{
	/* Aligned for the message structs; MSG_TRUNC reports a longer packet's size. */
	static _Alignas(16) uint8_t buf[RECV_BATCH][MADCMD_MSG_MAX];
	static struct iovec iov[RECV_BATCH];
	static struct mmsghdr mm[RECV_BATCH];

	/*
	 * A budget per wake-up (64 packets), so one busy session cannot starve
	 * the rest; recvmmsg takes what is queued in one system call, and a
	 * short count means the queue is empty (no recv just to see EAGAIN).
	 */
	/*
	 * Set up once: the kernel writes back only msg_len and msg_hdr's
	 * msg_flags (no name, no control data), which each receive sets anew.
	 */
	if (!iov[0].iov_base)
		for (int i = 0; i < RECV_BATCH; i++) {
			iov[i].iov_base = buf[i];
			iov[i].iov_len = sizeof(buf[i]);
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
	for (int round = 0; round < 4 && !s->closing; round++) {
		int n;

		n = recvmmsg(s->fd, mm, RECV_BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			madcmd_session_close(s, "receive failed");
			return;
		}
		for (int i = 0; i < n && !s->closing; i++) {
			size_t len = mm[i].msg_len;

			if (len == 0) {
				madcmd_session_close(s, "closed by the peer");
				return;
			}
			if (len > sizeof(buf[i]) || (mm[i].msg_hdr.msg_flags & MSG_TRUNC)) {
				bad(s, "oversized packet");
				return;
			}
			madcmd_session_input(s, buf[i], len);
		}
		if (n < RECV_BATCH)
			return;
	}
}

int madcmd_session_add(struct madcmd *d, int fd)
{
	struct madcmd_session *s;
	struct ucred cred = {0};
	socklen_t cl = sizeof(cred);
	unsigned slot = 0;
	int rc;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (d->nsessions >= d->p.max_sessions) {
		madcmd_log(LOG_WARNING, "session limit (%u) reached: refusing pid %d",
			   (unsigned)d->p.max_sessions, (int)cred.pid);
		d->c.refused++;
		close(fd);
		return -EUSERS;
	}
	for (unsigned i = 1; i <= d->p.max_sessions && !slot; i++)
		if (!d->slots[i])
			slot = i;
	s = calloc(1, sizeof(*s));
	if (!s || !slot) {
		free(s);
		close(fd);
		return -ENOMEM;
	}
	s->d = d;
	s->slot = slot;
	s->fd = fd;
	s->pid = cred.pid;
	s->uid = cred.uid;
	/* Read now, while the peer is connected: its pid is not reused yet. */
	s->netns = d->p.netns_of(d->p.netns_ctx, cred.pid);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	madcmd_socket_bufs(fd);
	if (d->p.sndbuf) {
		/* Never below a batch: a larger packet would fail (EMSGSIZE), not wait. */
		uint32_t want =
		    d->p.sndbuf < MADCMD_BATCH_MAX + 4096 ? MADCMD_BATCH_MAX + 4096 : d->p.sndbuf;
		int sz = (int)(want > INT32_MAX / 2 ? INT32_MAX / 2 : want);

		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	}
	rc = mad_loop_set_ctl(d->loop, EPOLL_CTL_ADD, fd, slot, EPOLLIN);
	if (rc) {
		close(fd);
		free(s);
		return rc;
	}
	d->slots[slot] = s;
	d->nsessions++;
	madcmd_log(LOG_DEBUG, "session %u: pid %d uid %u netns %#llx", slot, (int)s->pid,
		   (unsigned)s->uid, (unsigned long long)s->netns);
	return (int)slot;
}

static void accept_ready(struct madcmd *d)
{
	for (int i = 0; i < 64; i++) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				madcmd_log(LOG_ERR, "accept: %s", strerror(errno));
			return;
		}
		madcmd_session_add(d, fd);
	}
}

/*
 * The session sockets and the listener (tag 0) are the loop's fd set
 * (mad_loop_set_ctl): the loop's one epoll_wait reports them.
 */
void madcmd_fd_ready(struct mad_loop *l, uint32_t tag, uint32_t events, void *arg)
{
	struct madcmd *d = arg;
	struct madcmd_session *s;

	(void)l;
	if (tag == 0) {
		accept_ready(d);
		return;
	}
	if (tag & MADCMD_TAG_EVENTS) {
		madcmd_port_events_ready(d, tag & ~MADCMD_TAG_EVENTS);
		return;
	}
	s = tag <= d->p.max_sessions ? d->slots[tag] : NULL;
	if (!s || s->closing)
		return;
	if (events & EPOLLOUT)
		flush(s);
	if (!s->closing && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		readable(s);
}

int madcmd_listen(struct madcmd *d, int fd)
{
	int rc;

	if (!d || fd < 0 || d->listen_fd >= 0)
		return -EINVAL;
	rc = mad_loop_set_ctl(d->loop, EPOLL_CTL_ADD, fd, 0, EPOLLIN);
	if (rc)
		return rc;
	d->listen_fd = fd;
	return 0;
}
