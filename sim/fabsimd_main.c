/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * fabsimd: one process per simulated fabric.  Loads the topology, listens
 * on $FABSIM_DIR/fabsimd.sock and runs everything on one epoll loop.
 * Also the client side of the admin protocol (--ctl), used by fabsim(1).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sim/fabsimd.h"

struct fsd_fabric fab;

struct fsd_outmsg {
	struct fsd_outmsg *next;
	size_t len;
	uint8_t data[];
};

#define MAX_OUTQ_BYTES (64u << 20)

static int epfd = -1;
static int lfd = -1;
static struct fsd_conn **conns;
static size_t nconns, conns_cap;
static uint32_t next_conn_id = 1;
static volatile sig_atomic_t stop;
static FILE *logf;

/* ---- weak defaults for the verbs module ---- */
__attribute__((weak)) int fsd_verbs_init(const char *dir)
{
	(void)dir;
	return 0;
}

__attribute__((weak)) void fsd_verbs_changed(void) {}

__attribute__((weak)) int fsd_verbs_msg(struct fsd_conn *c, const struct fsp_hdr *h,
					const void *body, size_t len)
{
	return -ENOSYS;
}

__attribute__((weak)) void fsd_verbs_conn_closed(struct fsd_conn *c) {}

__attribute__((weak)) int fsd_verbs_tick(uint64_t now_ns)
{
	return -1;
}

uint64_t fsd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fsd_log(const char *fmt, ...)
{
	va_list ap;
	struct timespec ts;

	if (!logf)
		logf = stderr;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(logf, "%ld.%03ld fabsimd: ", (long)ts.tv_sec, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(logf, fmt, ap);
	va_end(ap);
	fputc('\n', logf);
	fflush(logf);
}

void fsd_count(enum fsd_counter c)
{
	if (c < FSD_C_MAX)
		fab.counters[c]++;
}

void fsd_conn_stats(int *nconn, int *nagents)
{
	*nconn = (int)nconns;
	*nagents = 0;
	for (size_t i = 0; i < nconns; i++)
		for (int a = 0; a < FSD_MAX_AGENTS; a++)
			*nagents += conns[i]->agents[a] != NULL;
}

struct fsd_conn *fsd_conn_by_id(uint32_t id)
{
	for (size_t i = 0; i < nconns; i++)
		if (conns[i]->id == id && !conns[i]->dead)
			return conns[i];
	return NULL;
}

static int conn_flush(struct fsd_conn *c)
{
	while (c->outq) {
		struct fsd_outmsg *m = c->outq;
		ssize_t n = send(c->fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			/* The peer went away: what it sent before that is
			 * still to be read (the read side sees the end). */
			if (errno == EPIPE || errno == ECONNRESET) {
				c->outq = m->next;
				if (!c->outq)
					c->outq_tail = NULL;
				c->outq_bytes -= m->len;
				free(m);
				continue;
			}
			c->dead = true;
			return -errno;
		}
		c->outq = m->next;
		if (!c->outq)
			c->outq_tail = NULL;
		c->outq_bytes -= m->len;
		free(m);
	}
	struct epoll_event ev = {.events = EPOLLIN | (c->outq ? EPOLLOUT : 0), .data.ptr = c};

	epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
	return 0;
}

static int conn_queue(struct fsd_conn *c, const struct fsp_hdr *h, const void *body, size_t len)
{
	struct fsd_outmsg *m;

	if (!c->outq) {
		struct iovec iov[2] = {{(void *)h, sizeof(*h)}, {(void *)body, len}};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
		ssize_t n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n >= 0)
			return 0;
		if (errno == EPIPE || errno == ECONNRESET)
			return -errno; /* peer gone: its last messages are still read */
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			c->dead = true;
			return -errno;
		}
	}
	if (c->outq_bytes + len > MAX_OUTQ_BYTES) {
		fsd_log("conn %u (%s pid %d): output queue overflow, disconnecting", c->id, c->comm,
			c->pid);
		c->dead = true;
		return -ENOBUFS;
	}
	m = malloc(sizeof(*m) + sizeof(*h) + len);
	if (!m)
		return -ENOMEM;
	m->next = NULL;
	m->len = sizeof(*h) + len;
	memcpy(m->data, h, sizeof(*h));
	if (len)
		memcpy(m->data + sizeof(*h), body, len);
	if (c->outq_tail)
		c->outq_tail->next = m;
	else
		c->outq = m;
	c->outq_tail = m;
	c->outq_bytes += m->len;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};

	epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
	return 0;
}

int fsd_conn_send(struct fsd_conn *c, uint16_t type, uint16_t flags, uint32_t seq, int32_t status,
		  const void *body, size_t len)
{
	const uint8_t *p = body;
	size_t chunk = FSP_FRAG_MAX - sizeof(struct fsp_hdr);
	int ret = 0;

	if (!c || c->dead)
		return -ENOTCONN;
	do {
		size_t n = len > chunk ? chunk : len;
		struct fsp_hdr h = {
		    .type = type,
		    .flags = (uint16_t)(flags | (len > chunk ? FSP_F_MORE : 0)),
		    .len = (uint32_t)(sizeof(h) + n),
		    .seq = seq,
		    .status = status,
		};

		ret = conn_queue(c, &h, p, n);
		if (ret)
			return ret;
		p += n;
		len -= n;
	} while (len);
	return 0;
}

int fsd_reply(struct fsd_conn *c, const struct fsp_hdr *req, int32_t status, const void *body,
	      size_t len)
{
	return fsd_conn_send(c, req->type, FSP_F_REPLY, req->seq, status, body, len);
}

static void conn_free(struct fsd_conn *c)
{
	fsd_verbs_conn_closed(c);
	if (c->kind == FSP_KIND_STREAM) {
		int n = 0;

		for (int a = 0; a < FSD_MAX_AGENTS; a++)
			n += c->agents[a] != NULL;
		if (n)
			fsd_log("%s (pid %d) closed its umad port: %d agent(s) released", c->comm,
				c->pid, n);
		fsd_agents_release(c);
	}
	if (c->issm_port && c->issm_port->issm == c) {
		struct fsd_port *p = c->issm_port;
		uint32_t cap = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_CAPMASK_F);

		fsd_log("%s (pid %d) gave up the SM role", c->comm, c->pid);
		p->issm = NULL;
		mad_set_field(p->pi, 0, IB_PORT_CAPMASK_F, cap & ~2u);
	}
	while (c->outq) {
		struct fsd_outmsg *m = c->outq;

		c->outq = m->next;
		free(m);
	}
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->rx);
	free(c);
}

static void reap_dead(void)
{
	size_t j = 0;

	for (size_t i = 0; i < nconns; i++) {
		if (conns[i]->dead)
			conn_free(conns[i]);
		else
			conns[j++] = conns[i];
	}
	nconns = j;
}

static int resolve_host(const char *name)
{
	if (!name[0])
		return fab.num_hosts ? 0 : -ENOENT;
	for (int i = 0; i < fab.num_hosts; i++)
		if (!strcmp(fab.hosts[i].name, name))
			return i;
	struct fsd_node *n = fsd_node_by_name(name);

	if (n && n->type == FSD_CA)
		return n->host_id;
	return -ENOENT;
}

static struct fsd_port *port_ref(struct fsd_conn *c, const void *body, size_t len, int *err)
{
	struct fsp_port_ref r;
	struct fsd_host *h;
	struct fsd_node *n;

	*err = -EINVAL;
	if (len < sizeof(r) || c->host_id < 0)
		return NULL;
	memcpy(&r, body, sizeof(r));
	h = &fab.hosts[c->host_id];
	*err = -ENODEV;
	if (r.ca >= (uint32_t)h->num_cas)
		return NULL;
	n = h->cas[r.ca];
	if (r.port == 0) {
		/* like libibumad: first Active port, else the first port */
		for (int i = 1; i <= n->nports; i++)
			if (fsd_port_state(&n->ports[i]) == 4)
				return &n->ports[i];
		return &n->ports[1];
	}
	if (r.port > (uint32_t)n->nports)
		return NULL;
	return &n->ports[r.port];
}

static void fill_port_info(struct fsd_port *p, struct fsp_port_info *pi)
{
	static const unsigned width_x[] = {[1] = 1, [2] = 4, [4] = 8, [8] = 12, [16] = 2};
	unsigned w = (unsigned)mad_get_field(p->pi, 0, IB_PORT_LINK_WIDTH_ACTIVE_F);
	unsigned s = (unsigned)mad_get_field(p->pi, 0, IB_PORT_LINK_SPEED_ACTIVE_F);
	unsigned gbps10 = s == 1 ? 25 : s == 2 ? 50 : s == 4 ? 100 : 25;

	memset(pi, 0, sizeof(*pi));
	pi->port = (uint32_t)p->num;
	pi->lid = fsd_port_lid(p);
	pi->lmc = (uint32_t)fsd_port_lmc(p);
	pi->sm_lid = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_SMLID_F);
	pi->sm_sl = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_SMSL_F);
	pi->state = (uint32_t)fsd_port_state(p);
	pi->phys_state = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_PHYS_STATE_F);
	pi->rate = (w < 17 ? width_x[w] : 1) * gbps10 / 10;
	if (s == 1 && w == 2)
		pi->rate = 10;
	pi->capmask = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_CAPMASK_F);
	pi->link_width_active = w;
	pi->link_speed_active = s;
	pi->gid_prefix = mad_get_field64(p->pi, 0, IB_PORT_GID_PREFIX_F);
	pi->port_guid = p->guid;
	pi->num_pkeys = FSP_MAX_PKEYS;
	for (int i = 0; i < FSP_MAX_PKEYS; i++)
		pi->pkeys[i] = p->pkeys[i];
}

static int handle_hello(struct fsd_conn *c, const struct fsp_hdr *h, const void *body, size_t len)
{
	struct fsp_hello req;
	struct fsp_hello_rep rep;
	int host;

	if (len < sizeof(req))
		return -EINVAL;
	memcpy(&req, body, sizeof(req));
	req.host[FSP_NAME_LEN - 1] = 0;
	req.comm[FSP_NAME_LEN - 1] = 0;
	if (req.version != FSP_VERSION)
		return -EPROTO;
	if (req.kind < FSP_KIND_CTL || req.kind > FSP_KIND_ADMIN)
		return -EINVAL;
	host = resolve_host(req.host);
	if (host < 0 && req.kind != FSP_KIND_ADMIN)
		return host;
	c->kind = req.kind;
	c->pid = req.pid;
	c->host_id = host;
	snprintf(c->comm, sizeof(c->comm), "%s", req.comm);
	memset(&rep, 0, sizeof(rep));
	rep.version = FSP_VERSION;
	rep.conn_id = c->id;
	rep.host_id = host < 0 ? 0 : (uint32_t)host;
	if (host >= 0) {
		rep.num_cas = (uint32_t)fab.hosts[host].num_cas;
		snprintf(rep.host, sizeof(rep.host), "%s", fab.hosts[host].name);
	}
	snprintf(rep.fabric, sizeof(rep.fabric), "%s", fab.name);
	fsd_reply(c, h, 0, &rep, sizeof(rep));
	return 0;
}

static int handle_host_info(struct fsd_conn *c, const struct fsp_hdr *h)
{
	struct fsp_host_info hi;
	struct fsd_host *host;

	if (c->host_id < 0)
		return -ENOENT;
	host = &fab.hosts[c->host_id];
	memset(&hi, 0, sizeof(hi));
	hi.host_id = (uint32_t)c->host_id;
	hi.num_cas = (uint32_t)host->num_cas;
	snprintf(hi.host, sizeof(hi.host), "%s", host->name);
	for (int i = 0; i < host->num_cas && i < 8; i++) {
		struct fsd_node *n = host->cas[i];

		snprintf(hi.cas[i].name, sizeof(hi.cas[i].name), "fabsim%d", i);
		hi.cas[i].node_type = 1;
		hi.cas[i].num_ports = (uint32_t)n->nports;
		hi.cas[i].node_guid = n->guid;
		hi.cas[i].system_guid = n->sysguid;
		hi.cas[i].node_index = (uint32_t)n->index;
	}
	fsd_reply(c, h, 0, &hi, sizeof(hi));
	return 0;
}

static void dispatch(struct fsd_conn *c, const struct fsp_hdr *h, const uint8_t *body, size_t len)
{
	struct fsd_port *p;
	int err = 0;

	if (h->flags & FSP_F_REPLY) {
		fsd_count(FSD_C_PROTO_BAD);
		return;
	}
	if (!c->kind && h->type != FSP_HELLO) {
		fsd_count(FSD_C_PROTO_BAD);
		c->dead = true;
		return;
	}
	switch (h->type) {
	case FSP_HELLO:
		if (c->kind)
			err = -EISCONN;
		else
			err = handle_hello(c, h, body, len);
		break;
	case FSP_HOST_INFO:
		err = handle_host_info(c, h);
		break;
	case FSP_PORT_INFO: {
		struct fsp_port_info pi;

		p = port_ref(c, body, len, &err);
		if (!p)
			break;
		fill_port_info(p, &pi);
		fsd_reply(c, h, 0, &pi, sizeof(pi));
		break;
	}
	case FSP_ATTACH: {
		struct fsp_attach_rep rep;

		if (c->kind != FSP_KIND_STREAM || c->port) {
			err = -EINVAL;
			break;
		}
		/*
		 * /dev/infiniband/umad* is crw------- root on a real host: here
		 * the fabric's owner (who started fabsimd) plays root.
		 */
		if (c->uid != 0 && c->uid != getuid()) {
			err = -EACCES;
			break;
		}
		p = port_ref(c, body, len, &err);
		if (!p)
			break;
		c->port = p;
		rep.stream_id = c->id;
		rep.port = (uint32_t)p->num;
		fsd_reply(c, h, 0, &rep, sizeof(rep));
		break;
	}
	case FSP_REGISTER: {
		struct fsp_register r;

		if (len < sizeof(r)) {
			err = -EINVAL;
			break;
		}
		memcpy(&r, body, sizeof(r));
		err = fsd_agent_register(c, &r);
		if (err >= 0) {
			fsd_reply(c, h, err, NULL, 0);
			err = 0;
		}
		break;
	}
	case FSP_UNREGISTER: {
		struct fsp_unregister r;

		if (len < sizeof(r)) {
			err = -EINVAL;
			break;
		}
		memcpy(&r, body, sizeof(r));
		err = fsd_agent_unregister(c, &r);
		if (!err)
			fsd_reply(c, h, 0, NULL, 0);
		break;
	}
	case FSP_ISSM:
		if (c->kind != FSP_KIND_ISSM || c->issm_port) {
			err = -EINVAL;
			break;
		}
		p = port_ref(c, body, len, &err);
		if (!p)
			break;
		if (p->issm) {
			err = -EBUSY; /* the kernel's issm open blocks/EAGAIN; one SM per port */
			break;
		}
		p->issm = c;
		c->issm_port = p;
		mad_set_field(p->pi, 0, IB_PORT_CAPMASK_F,
			      (uint32_t)mad_get_field(p->pi, 0, IB_PORT_CAPMASK_F) | 2u);
		fsd_reply(c, h, 0, NULL, 0);
		break;
	case FSP_MAD_SEND:
		if (c->kind != FSP_KIND_STREAM || !c->port) {
			fsd_count(FSD_C_CLIENT_BAD);
			return;
		}
		fsd_umad_send(c, body, len);
		return; /* one-way */
	case FSP_ADMIN: {
		char *out = NULL;
		char *cmd;

		if (c->kind != FSP_KIND_ADMIN) {
			err = -EPERM;
			break;
		}
		cmd = strndup((const char *)body, len);
		if (!cmd) {
			err = -ENOMEM;
			break;
		}
		err = fsd_admin(cmd, &out);
		free(cmd);
		fsd_reply(c, h, err, out, out ? strlen(out) : 0);
		free(out);
		if (err == 1) /* shutdown */
			stop = 1;
		err = 0;
		break;
	}
	default:
		if (h->type >= FSP_VERBS_FIRST && h->type <= FSP_VERBS_LAST) {
			err = fsd_verbs_msg(c, h, body, len);
			break;
		}
		fsd_count(FSD_C_PROTO_BAD);
		err = -EOPNOTSUPP;
		break;
	}
	if (err < 0 && h->seq)
		fsd_reply(c, h, err, NULL, 0);
}

static void conn_readable(struct fsd_conn *c)
{
	static uint8_t buf[FSP_FRAG_MAX + 16];

	/* one message per readiness event: epoll is level-triggered, and a
	 * second recv() that only says EAGAIN costs a syscall per MAD */
	for (int iter = 0; iter < 1 && !c->dead; iter++) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		struct fsp_hdr h;

		if (n < 0) {
			/* ECONNRESET: the peer closed with data of ours unread;
			 * reported once, what it sent before is still queued
			 * (a process's last packets, e.g. ACKs, still count). */
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNRESET)
				c->dead = true;
			return;
		}
		if (n == 0) {
			c->dead = true;
			return;
		}
		if ((size_t)n < sizeof(h) || (size_t)n > FSP_FRAG_MAX) {
			fsd_count(FSD_C_PROTO_BAD);
			c->dead = true;
			return;
		}
		memcpy(&h, buf, sizeof(h));
		if (h.len != (uint32_t)n) {
			fsd_count(FSD_C_PROTO_BAD);
			c->dead = true;
			return;
		}
		size_t blen = (size_t)n - sizeof(h);

		if ((h.flags & FSP_F_MORE) || c->rx) {
			if (c->rx_len + blen > FSP_MSG_MAX) {
				fsd_count(FSD_C_PROTO_BAD);
				c->dead = true;
				return;
			}
			uint8_t *nrx = realloc(c->rx, c->rx_len + blen + 1);

			if (!nrx) {
				c->dead = true;
				return;
			}
			c->rx = nrx;
			memcpy(c->rx + c->rx_len, buf + sizeof(h), blen);
			c->rx_len += blen;
			if (h.flags & FSP_F_MORE) {
				iter--; /* the rest of the train is already queued */
				continue;
			}
			uint8_t *whole = c->rx;
			size_t wlen = c->rx_len;

			c->rx = NULL;
			c->rx_len = 0;
			dispatch(c, &h, whole, wlen);
			free(whole);
		} else {
			dispatch(c, &h, buf + sizeof(h), blen);
		}
	}
}

static void accept_conns(void)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct fsd_conn *c;
		int sz = 1 << 20;

		if (fd < 0)
			return;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		c = calloc(1, sizeof(*c));
		if (!c || (nconns == conns_cap && !({
				   size_t nc = conns_cap ? conns_cap * 2 : 64;
				   struct fsd_conn **nn = realloc(conns, nc * sizeof(*nn));
				   if (nn) {
					   conns = nn;
					   conns_cap = nc;
				   }
				   nn;
			   }))) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->id = next_conn_id++;
		c->host_id = -1;
		{
			struct ucred cr;
			socklen_t cl = sizeof(cr);

			c->uid =
			    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) ? (uid_t)-1 : cr.uid;
		}
		conns[nconns++] = c;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};

		epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
	}
}

static void on_signal(int sig)
{
	stop = 1;
}

static int min_ms(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

static int sock_path(const char *dir, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir, FSP_SOCK_NAME) >=
	    (int)sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/* --ctl: one admin command, reply text to stdout */
static int run_ctl(const char *dir, const char *cmd)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct fsp_hello hello = {.version = FSP_VERSION, .kind = FSP_KIND_ADMIN};
	uint8_t buf[FSP_FRAG_MAX];
	struct fsp_hdr h = {.type = FSP_HELLO, .seq = 1};
	int status = 0;

	if (fd < 0 || sock_path(dir, &sa) || connect(fd, (void *)&sa, sizeof(sa))) {
		fprintf(stderr, "fabsim: no fabric running in %s (%m)\n", dir);
		return 2;
	}
	hello.pid = getpid();
	snprintf(hello.comm, sizeof(hello.comm), "fabsim");
	h.len = sizeof(h) + sizeof(hello);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &hello, sizeof(hello));
	if (send(fd, buf, h.len, 0) < 0 || recv(fd, buf, sizeof(buf), 0) < (ssize_t)sizeof(h))
		return 2;
	size_t clen = strlen(cmd);

	if (clen > FSP_FRAG_MAX - sizeof(h) - 1)
		return 2;
	h = (struct fsp_hdr){.type = FSP_ADMIN, .seq = 2, .len = (uint32_t)(sizeof(h) + clen + 1)};
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), cmd, clen + 1);
	if (send(fd, buf, h.len, 0) < 0)
		return 2;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < (ssize_t)sizeof(h))
			return 2;
		memcpy(&h, buf, sizeof(h));
		fwrite(buf + sizeof(h), 1, (size_t)n - sizeof(h), stdout);
		status = h.status;
		if (!(h.flags & FSP_F_MORE))
			break;
	}
	close(fd);
	if (status < 0) {
		fprintf(stderr, "fabsim: %s: %s\n", cmd, strerror(-status));
		return 1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: fabsimd [--dir DIR] [--seed N] (TOPOLOGY | --gen b2b|star:N|fattree:K[:H])\n"
	    "       fabsimd --check|--dump (TOPOLOGY | --gen SPEC)\n"
	    "       fabsimd [--dir DIR] --ctl 'COMMAND'\n");
}

extern uint64_t fsd_fault_seed;

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"dir", required_argument, 0, 'd'},
					     {"gen", required_argument, 0, 'g'},
					     {"ctl", required_argument, 0, 'c'},
					     {"check", no_argument, 0, 'k'},
					     {"seed", required_argument, 0, 's'},
					     {"name", required_argument, 0, 'n'},
					     {"dump", no_argument, 0, 'D'},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	const char *dir = getenv("FABSIM_DIR");
	const char *gen = NULL, *ctl = NULL;
	bool check = false, dump = false;
	struct sockaddr_un sa;
	char path[4096];
	int opt, ret;

	if (!dir || !*dir)
		dir = "./fabsim";
	while ((opt = getopt_long(argc, argv, "d:g:c:ks:n:hD", opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			dir = optarg;
			break;
		case 'g':
			gen = optarg;
			break;
		case 'c':
			ctl = optarg;
			break;
		case 'k':
			check = true;
			break;
		case 'D':
			dump = check = true;
			break;
		case 's':
			fsd_fault_seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			snprintf(fab.name, sizeof(fab.name), "%s", optarg);
			break;
		default:
			usage();
			return opt == 'h' ? 0 : 2;
		}
	}
	if (ctl)
		return run_ctl(dir, ctl);
	if (!gen && optind >= argc) {
		usage();
		return 2;
	}
	if (gen)
		ret = fsd_topo_generate(gen, stderr);
	else
		ret = fsd_topo_load(argv[optind], stderr);
	if (!ret)
		ret = fsd_topo_finish(stderr);
	if (ret)
		return 1;
	if (!fab.name[0])
		snprintf(fab.name, sizeof(fab.name), "%s", gen ? gen : argv[optind]);
	if (dump) {
		fsd_topo_dump(stdout);
		return 0;
	}
	if (check) {
		printf("%d nodes, %d hosts\n", fab.num_nodes, fab.num_hosts);
		return 0;
	}

	mkdir(dir, 0755);
	if (sock_path(dir, &sa)) {
		fprintf(stderr, "fabsimd: %s: path too long\n", dir);
		return 1;
	}
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return 1;
	{
		/* a live daemon answers; a stale socket file does not */
		int t = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

		if (t >= 0 && !connect(t, (void *)&sa, sizeof(sa))) {
			fprintf(stderr, "fabsimd: a fabric is already running in %s\n", dir);
			return 1;
		}
		if (t >= 0)
			close(t);
		unlink(sa.sun_path);
	}
	if (bind(lfd, (void *)&sa, sizeof(sa)) || listen(lfd, 128)) {
		fprintf(stderr, "fabsimd: %s: %m\n", sa.sun_path);
		return 1;
	}
	/*
	 * Anyone may connect, as anyone may open a host's uverbs devices;
	 * umad ports are root's and the fabric owner's only (FSP_ATTACH
	 * checks the peer's uid).
	 */
	chmod(sa.sun_path, 0666);
	snprintf(path, sizeof(path), "%s/fabsimd.pid", dir);
	{
		/* write-then-rename: a reader never sees a half-written file */
		char tmp[4200];
		FILE *pf;

		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		pf = fopen(tmp, "w");
		if (pf) {
			fprintf(pf, "%d\n", getpid());
			fclose(pf);
			rename(tmp, path);
		}
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};

	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &lev);
	fsd_verbs_init(dir);
	fsd_log("fabric '%s' up: %d nodes, %d hosts, socket %s", fab.name, fab.num_nodes,
		fab.num_hosts, sa.sun_path);

	int vtick = -1;

	while (!stop) {
		struct epoll_event evs[64];
		int timeout = min_ms(min_ms(fsd_pkt_next_due_ms(), fsd_umad_next_due_ms()),
				     min_ms(fsd_rmpp_next_due_ms(), vtick));
		int n = epoll_wait(epfd, evs, 64, timeout);

		for (int i = 0; i < n; i++) {
			struct fsd_conn *c = evs[i].data.ptr;

			if (!c) {
				accept_conns();
				continue;
			}
			if (c->dead)
				continue;
			if (evs[i].events & EPOLLOUT)
				conn_flush(c);
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				conn_readable(c);
			/* route what this message produced before reading
			 * more, so nothing piles up */
			fsd_pkt_run_queue();
		}
		uint64_t now = fsd_now_ns();

		fsd_umad_timers(now);
		fsd_rmpp_timers(now);
		fsd_pkt_run_queue();
		vtick = fsd_verbs_tick(now);
		reap_dead();
	}
	fsd_log("shutting down");
	for (size_t i = 0; i < nconns; i++)
		conn_free(conns[i]);
	unlink(sa.sun_path);
	unlink(path);
	return 0;
}
