/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Datagram rsockets (SOCK_DGRAM over UD) on the public librdmacm API.
 *
 * A datagram rsocket owns an rdma_cm event channel (its fd is the socket's
 * descriptor), a kernel UDP socket bound to the rsocket's own address and
 * port (the side channel), an id in RDMA_PS_UDP bound there too (it finds
 * the device of a bound address), and one UD QP with its CQ, made on the
 * device of the first id that has one (the bound id or the first
 * destination resolved).  Every message is a UD SEND whose payload starts
 * with the sender's address (rsocket_wire.h, rdma-core's ds_header), so the
 * receiver can give recvfrom() a socket address.
 *
 * Destinations, as rdma-core finds them (docs/rsocket-wire.md): until a
 * destination's QPN is known and its address handle made, a datagram goes
 * to its IP address and port over the side channel, behind a header
 * with our QPN (DATA).  The receiver delivers the payload, answers with
 * its own QPN (CTRL) and resolves a route to the sender for an address
 * handle; so does the sender once the answer came.  From then on the
 * datagrams go over UD.  A datagram that arrives over UD from an address
 * not yet known makes it known at once (an address handle from the work
 * completion, the sender's QPN).  The side channel needs an IP path
 * between the hosts, as rdma-core's does; that is what lets a madcm
 * rsocket and an rdma-core one find each other.
 *
 * Progress is made by the calls themselves (CM events, side-channel
 * messages and completions are read whenever a call runs, and while it
 * sleeps), so a program that loops on non-blocking calls, as udpong
 * does, moves everything along.  One mutex per socket; dropped while a
 * call sleeps.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "lib/cma.h"
#include "lib/rsocket.h"
#include "lib/rsocket_wire.h"

#define DS_GRH 40 /* a UD receive starts with room for the GRH */
#define DS_SLOT (DS_GRH + DS_MSG_SIZE)
#define DS_DEF_QSIZE 384
#define DS_DEF_MEM (1u << 17)
#define DS_DEF_INLINE 64
#define DS_QP_MIN 16
#define DS_QP_MAX 0xFFFE
#define DS_RESOLVE_MS 2000
#define DS_CLOSE_WAIT_MS 1000
#define DS_UDP_QMAX 64 /* side-channel datagrams waiting for recvmsg, at most */

#define DS_WR_RECV (1ull << 63)

struct ds_dest {
	struct ds_dest *next;
	struct sockaddr_storage addr;
	struct rdma_cm_id *id; /* the route's resolution under way */
	struct ibv_ah *ah;
	uint32_t qpn, qkey;
	bool has_qpn;  /* from its side-channel header or a datagram */
	bool owe_ctrl; /* its DATA came before our QP: answer once it exists */
	bool no_route; /* resolution failed: the side channel only, until news */
	int err;       /* reported once, by the next send to it */
};

struct ds_rmsg {
	uint32_t slot, len; /* len: header + payload */
};

/* A datagram that came over the side channel: a ds_header, then the payload. */
struct ds_umsg {
	struct ds_umsg *next;
	uint32_t len;
	uint8_t data[];
};

struct dsock {
	int fd, domain, fd_flags;
	pthread_mutex_t lock;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id; /* bound to the socket's own address */
	int udp;	       /* the side channel */
	bool bound;
	int err; /* SO_ERROR: a destination that could not be resolved */

	/* Options, fixed once the QP exists. */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline;
	uint32_t so_opts;

	/* The UD QP and its buffers. */
	struct ibv_context *verbs;
	uint8_t port_num;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	bool cq_armed;
	uint32_t max_msg; /* header + payload: the path MTU, at most DS_MSG_SIZE */
	uint8_t hdr[DS_HDR_MAX_LEN];
	int hdr_len;
	struct sockaddr_storage hdr_addr; /* what hdr says: our address and port */
	uint8_t *sbuf, *rbuf;
	struct ibv_mr *smr, *rmr;
	uint32_t *sfree, nfree;
	struct ds_rmsg *rmsg;
	uint32_t rmsg_size, rmsg_head, rmsg_tail;
	struct ds_umsg *uq, **uq_tail;
	uint32_t uq_len;

	struct ds_dest *dests;
	bool connected;
	struct sockaddr_storage peer; /* rconnect()'s address */
};

/* ---- the descriptor table (as lib/rsocket.c's, for datagram sockets) ---- */

#define DS_PAGE_BITS 10
#define DS_PAGES 1024
static struct dsock **ds_pages[DS_PAGES];
static pthread_mutex_t ds_table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct dsock *ds_get(int fd)
{
	struct dsock **page;

	if (fd < 0 || (fd >> DS_PAGE_BITS) >= DS_PAGES)
		return NULL;
	page = __atomic_load_n(&ds_pages[fd >> DS_PAGE_BITS], __ATOMIC_ACQUIRE);
	if (!page)
		return NULL;
	return __atomic_load_n(&page[fd & ((1 << DS_PAGE_BITS) - 1)], __ATOMIC_ACQUIRE);
}

static int ds_set(int fd, struct dsock *ds)
{
	int p = fd >> DS_PAGE_BITS;

	if (fd < 0 || p >= DS_PAGES)
		return cma_err(EMFILE);
	pthread_mutex_lock(&ds_table_lock);
	if (!ds_pages[p]) {
		struct dsock **page = calloc(1u << DS_PAGE_BITS, sizeof(*page));

		if (!page) {
			pthread_mutex_unlock(&ds_table_lock);
			return cma_err(ENOMEM);
		}
		__atomic_store_n(&ds_pages[p], page, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&ds_pages[p][fd & ((1 << DS_PAGE_BITS) - 1)], ds, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ds_table_lock);
	return 0;
}

bool ds_is_dgram(int fd)
{
	return ds_get(fd) != NULL;
}

static struct dsock *ds_lock(int fd)
{
	struct dsock *ds = ds_get(fd);

	if (!ds) {
		errno = EBADF;
		return NULL;
	}
	pthread_mutex_lock(&ds->lock);
	return ds;
}

#define DS_UNLOCK_RET(ds, v)                                                                       \
	do {                                                                                       \
		int e_ = errno;                                                                    \
		pthread_mutex_unlock(&(ds)->lock);                                                 \
		errno = e_;                                                                        \
		return (v);                                                                        \
	} while (0)

/* ---- addresses ---- */

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (b->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return false;
}

static int check_addr(const struct dsock *ds, const struct sockaddr *sa, socklen_t len)
{
	if (!sa)
		return cma_err(EFAULT);
	if (len < sizeof(sa_family_t))
		return cma_err(EINVAL);
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return 0;
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6) &&
	    ds->domain == AF_INET6)
		return 0;
	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return cma_err(EAFNOSUPPORT);
	return cma_err(EINVAL);
}

static void copy_out(struct sockaddr *dst, socklen_t *len, const struct sockaddr *src)
{
	socklen_t n = cma_addr_len(src);

	if (!dst || !len)
		return;
	memcpy(dst, src, *len < n ? *len : n);
	*len = n;
}

static uint16_t port_of(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
					 : ((const struct sockaddr_in *)sa)->sin_port;
}

static void set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = port;
	else
		((struct sockaddr_in *)sa)->sin_port = port;
}

static bool is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &in6addr_any,
		       sizeof(in6addr_any));
}

/* ---- the QP ---- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int ds_post_recv(struct dsock *ds, uint32_t slot)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)(ds->rbuf + (size_t)slot * DS_SLOT),
	    .length = DS_SLOT,
	    .lkey = ds->rmr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = DS_WR_RECV | slot, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(ds->qp, &wr, &bad) ? -1 : 0;
}

static uint16_t clamp_q(uint32_t v, uint32_t max)
{
	if (v > max)
		v = max;
	return (uint16_t)(v < DS_QP_MIN ? DS_QP_MIN : v);
}

static int ds_modify_rts(struct dsock *ds)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = ds->port_num;
	a.qkey = RDMA_UDP_QKEY;
	if (ibv_modify_qp(ds->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(ds->qp, &a, IBV_QP_STATE))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(ds->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? -1 : 0;
}

/* The side channel's own address (the port the rsocket is known by). */
static int ds_udp_name(struct dsock *ds, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	memset(ss, 0, sizeof(*ss));
	return getsockname(ds->udp, (struct sockaddr *)ss, &len);
}

/* A v4-mapped IPv6 address (an AF_INET6 socket's IPv4 peer) as AF_INET. */
static void unmap_v4(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 s6;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	if (ss->ss_family != AF_INET6)
		return;
	memcpy(&s6, ss, sizeof(s6));
	if (!IN6_IS_ADDR_V4MAPPED(&s6.sin6_addr))
		return;
	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_port = s6.sin6_port;
	memcpy(&sin->sin_addr, &s6.sin6_addr.s6_addr[12], 4);
}

/*
 * The header names the address peers reach us at: the side channel's
 * own when it has one (what a peer sees its messages come from), else
 * the address the QP's device answers to (src); and the side channel's
 * port.
 */
static void ds_format_hdr(struct dsock *ds, const struct sockaddr *src)
{
	struct sockaddr_storage a, u;

	memcpy(&a, src, cma_addr_len(src));
	if (!ds_udp_name(ds, &u)) {
		unmap_v4(&u);
		if (u.ss_family == a.ss_family && !is_any((struct sockaddr *)&u))
			memcpy(&a, &u, cma_addr_len((struct sockaddr *)&u));
		set_port((struct sockaddr *)&a, port_of((struct sockaddr *)&u));
	}
	memcpy(&ds->hdr_addr, &a, sizeof(a));
	ds->hdr_len = ds_hdr_encode((struct sockaddr *)&a, ds->hdr);
}

/*
 * Make the UD QP on the device and port of `with`, whose local address
 * is what the header will carry.  One device per socket: an id on another
 * one gets ENODEV.
 */
static int ds_create_qp(struct dsock *ds, struct rdma_cm_id *with)
{
	struct ibv_qp_init_attr attr = {0};
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	uint32_t maxq = DS_QP_MAX, mtu;

	if (ds->qp)
		return with->verbs == ds->verbs ? 0 : cma_err(ENODEV);
	if (!with->verbs)
		return cma_err(ENODEV);
	ds->verbs = with->verbs;
	ds->port_num = with->port_num ? with->port_num : 1;
	if (!ibv_query_device(ds->verbs, &dattr) && (uint32_t)dattr.max_qp_wr < maxq)
		maxq = (uint32_t)dattr.max_qp_wr;
	ds->max_msg = DS_MSG_SIZE;
	if (!ibv_query_port(ds->verbs, ds->port_num, &pattr) && pattr.active_mtu) {
		mtu = 128u << pattr.active_mtu;
		if (mtu < ds->max_msg)
			ds->max_msg = mtu;
	}
	/* As rdma-core: a queue entry per DS_MSG_SIZE bytes of buffer. */
	ds->sq_size = clamp_q(ds->sq_size, maxq);
	ds->rq_size = clamp_q(ds->rq_size, maxq);
	if (ds->sq_size > ds->sbuf_size / DS_MSG_SIZE)
		ds->sq_size = clamp_q(ds->sbuf_size / DS_MSG_SIZE, maxq);
	if (ds->rq_size > ds->rbuf_size / DS_MSG_SIZE)
		ds->rq_size = clamp_q(ds->rbuf_size / DS_MSG_SIZE, maxq);

	ds->pd = ibv_alloc_pd(ds->verbs);
	if (!ds->pd)
		return -1;
	ds->cc = ibv_create_comp_channel(ds->verbs);
	if (!ds->cc || set_nonblock(ds->cc->fd))
		return -1;
	ds->cq = ibv_create_cq(ds->verbs, ds->sq_size + ds->rq_size, ds, ds->cc, 0);
	if (!ds->cq)
		return -1;
	attr.qp_context = ds;
	attr.send_cq = attr.recv_cq = ds->cq;
	attr.qp_type = IBV_QPT_UD;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = ds->sq_size;
	attr.cap.max_recv_wr = ds->rq_size;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = ds->sq_inline;
	ds->qp = ibv_create_qp(ds->pd, &attr);
	if (!ds->qp) {
		attr.cap.max_inline_data = 0;
		ds->qp = ibv_create_qp(ds->pd, &attr);
		if (!ds->qp)
			return -1;
	}
	ds->sq_inline = (uint16_t)attr.cap.max_inline_data;
	if (ds_modify_rts(ds))
		return -1;

	ds->sbuf = calloc(ds->sq_size, DS_MSG_SIZE);
	ds->rbuf = calloc(ds->rq_size, DS_SLOT);
	ds->sfree = calloc(ds->sq_size, sizeof(*ds->sfree));
	ds->rmsg_size = ds->rq_size + 1u;
	ds->rmsg = calloc(ds->rmsg_size, sizeof(*ds->rmsg));
	if (!ds->sbuf || !ds->rbuf || !ds->sfree || !ds->rmsg)
		return cma_err(ENOMEM);
	ds->smr =
	    ibv_reg_mr(ds->pd, ds->sbuf, (size_t)ds->sq_size * DS_MSG_SIZE, IBV_ACCESS_LOCAL_WRITE);
	ds->rmr =
	    ibv_reg_mr(ds->pd, ds->rbuf, (size_t)ds->rq_size * DS_SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!ds->smr || !ds->rmr)
		return -1;
	for (uint32_t i = 0; i < ds->sq_size; i++)
		ds->sfree[ds->nfree++] = i;
	for (uint32_t i = 0; i < ds->rq_size; i++)
		if (ds_post_recv(ds, i))
			return -1;
	ds_format_hdr(ds, &with->route.addr.src_addr);
	return 0;
}

/*
 * Before any send the side channel needs a port, the one its header
 * names: an unbound socket takes a free one on the wildcard address.
 */
static int ds_autobind(struct dsock *ds)
{
	struct sockaddr_storage a;

	if (ds->bound)
		return 0;
	memset(&a, 0, sizeof(a));
	a.ss_family = (sa_family_t)ds->domain;
	if (bind(ds->udp, (struct sockaddr *)&a, cma_addr_len((struct sockaddr *)&a)))
		return -1;
	ds->bound = true;
	return 0;
}

/* ---- destinations ---- */

static bool ds_ready(const struct ds_dest *d)
{
	return d->ah && d->has_qpn;
}

static struct ds_dest *ds_find(struct dsock *ds, const struct sockaddr *sa)
{
	for (struct ds_dest *d = ds->dests; d; d = d->next)
		if (same_addr(&d->addr, sa))
			return d;
	return NULL;
}

static struct ds_dest *ds_dest_add(struct dsock *ds, const struct sockaddr *sa)
{
	struct ds_dest *d = ds_find(ds, sa);

	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	memcpy(&d->addr, sa, cma_addr_len(sa));
	d->qkey = RDMA_UDP_QKEY;
	d->next = ds->dests;
	ds->dests = d;
	return d;
}

static void ds_dest_free(struct dsock *ds, struct ds_dest *d)
{
	for (struct ds_dest **p = &ds->dests; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	if (d->id)
		rdma_destroy_id(d->id);
	if (d->ah)
		ibv_destroy_ah(d->ah);
	free(d);
}

/*
 * A resolution that failed.  With no QP yet nothing can be sent to d at
 * all: its next send reports e.  With one, d stays reachable over the
 * side channel (as rdma-core's destinations without an address handle).
 */
static void ds_dest_fail(struct dsock *ds, struct ds_dest *d, int e)
{
	d->no_route = true;
	if (!ds->qp)
		d->err = e ? e : EHOSTUNREACH;
}

/* Start resolving d's route (for its address handle) unless under way or done. */
static void ds_route(struct dsock *ds, struct ds_dest *d)
{
	struct sockaddr_storage src;
	struct sockaddr *srcp = NULL;

	if (d->id || d->ah || d->no_route || d->err)
		return;
	/* A socket bound to one address sends from it. */
	if (!ds_udp_name(ds, &src) && !is_any((struct sockaddr *)&src) &&
	    src.ss_family == d->addr.ss_family) {
		set_port((struct sockaddr *)&src, 0);
		srcp = (struct sockaddr *)&src;
	}
	if (rdma_create_id(ds->ch, &d->id, d, RDMA_PS_UDP)) {
		d->id = NULL;
		ds_dest_fail(ds, d, errno);
		return;
	}
	if (rdma_resolve_addr(d->id, srcp, (struct sockaddr *)&d->addr, DS_RESOLVE_MS)) {
		int e = errno;

		rdma_destroy_id(d->id);
		d->id = NULL;
		ds_dest_fail(ds, d, e);
	}
}

/* One side-channel message to `to` with our QPN and address; 0 or -1. */
static int ds_udp_send(struct dsock *ds, const struct sockaddr *to, uint8_t op,
		       const struct iovec *iov, int iovcnt, int flags)
{
	uint8_t hdr[DS_UDP_MAX_LEN];
	struct iovec v[1 + 8];
	struct msghdr m = {0};
	int hl = ds_udp_encode(op, ds->qp->qp_num, (struct sockaddr *)&ds->hdr_addr, hdr);

	if (hl < 0 || iovcnt > 8)
		return cma_err(hl < 0 ? -hl : EMSGSIZE);
	v[0] = (struct iovec){.iov_base = hdr, .iov_len = (size_t)hl};
	for (int i = 0; i < iovcnt; i++)
		v[1 + i] = iov[i];
	m.msg_name = (void *)to;
	m.msg_namelen = cma_addr_len(to);
	m.msg_iov = v;
	m.msg_iovlen = (size_t)(1 + iovcnt);
	return sendmsg(ds->udp, &m, flags | MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* Our QP exists now: answer the DATA that came before it. */
static void ds_flush_ctrl(struct dsock *ds)
{
	for (struct ds_dest *d = ds->dests; d; d = d->next)
		if (d->owe_ctrl) {
			d->owe_ctrl = false;
			ds_udp_send(ds, (struct sockaddr *)&d->addr, DS_UDP_OP_CTRL, NULL, 0,
				    MSG_DONTWAIT);
		}
}

/* The route is known: the address handle along it. */
static void ds_make_ah(struct dsock *ds, struct ds_dest *d)
{
	struct cma_id *cid = cma_id_of(d->id);
	struct ibv_ah_attr attr;

	if (d->id->verbs != ds->verbs) {
		ds_dest_fail(ds, d, ENODEV);
		return;
	}
	/* The path the resolution chose, as a SIDR answer would give it. */
	cma_ah_from_path(cid, &cid->cm_paths[0], &attr);
	d->ah = ibv_create_ah(ds->pd, &attr);
	if (!d->ah)
		ds_dest_fail(ds, d, errno ? errno : ENOMEM);
}

/* One CM event of a destination's resolution; true: its id is done. */
static bool ds_on_dest_event(struct dsock *ds, struct ds_dest *d, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (ds_create_qp(ds, d->id)) {
			ds_dest_fail(ds, d, errno);
			return true;
		}
		ds_flush_ctrl(ds);
		/* Known from a datagram of the peer meanwhile: stop here. */
		if (d->ah)
			return true;
		if (rdma_resolve_route(d->id, DS_RESOLVE_MS)) {
			ds_dest_fail(ds, d, errno);
			return true;
		}
		return false;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (!d->ah)
			ds_make_ah(ds, d);
		return true;
	default:
		if (!d->ah)
			ds_dest_fail(ds, d, EHOSTUNREACH);
		return true;
	}
}

static void ds_cm_events(struct dsock *ds)
{
	struct pollfd p = {.fd = ds->ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	/* Most calls find nothing: ask the fd, not the library's locks. */
	if (poll(&p, 1, 0) <= 0)
		return;
	while (!rdma_get_cm_event(ds->ch, &ev)) {
		struct ds_dest *d = NULL;

		if (ev->id != ds->id) {
			for (d = ds->dests; d && d->id != ev->id; d = d->next)
				;
			if (d && !ds_on_dest_event(ds, d, ev))
				d = NULL;
		}
		rdma_ack_cm_event(ev);
		if (d) {
			rdma_destroy_id(d->id);
			d->id = NULL;
		}
	}
}

/* ---- the side channel ---- */

/* A side-channel datagram for recvmsg, behind the sender's ds_header. */
static void ds_udp_queue(struct dsock *ds, const struct sockaddr *from, const uint8_t *p, size_t n)
{
	uint8_t h[DS_HDR_MAX_LEN];
	int hl = ds_hdr_encode(from, h);
	struct ds_umsg *m;

	/* No room: dropped, as UDP would. */
	if (hl < 0 || ds->uq_len >= DS_UDP_QMAX || n + (size_t)hl > DS_MSG_SIZE)
		return;
	m = malloc(sizeof(*m) + (size_t)hl + n);
	if (!m)
		return;
	m->next = NULL;
	m->len = (uint32_t)((size_t)hl + n);
	memcpy(m->data, h, (size_t)hl);
	memcpy(m->data + hl, p, n);
	*ds->uq_tail = m;
	ds->uq_tail = &m->next;
	ds->uq_len++;
}

/* The connected peer refused (an ICMP port unreachable): its next send says so. */
static void ds_udp_refused(struct dsock *ds)
{
	struct ds_dest *d;

	if (!ds->connected)
		return;
	d = ds_find(ds, (struct sockaddr *)&ds->peer);
	if (d && !ds_ready(d))
		d->err = ECONNREFUSED;
}

static void ds_udp_progress(struct dsock *ds)
{
	uint8_t buf[DS_UDP_MAX_LEN + DS_MSG_SIZE];

	for (;;) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		struct ds_udp_hdr h;
		struct ds_dest *d;
		ssize_t n;
		int hl;

		n = recvfrom(ds->udp, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from,
			     &flen);
		if (n < 0) {
			if (errno == ECONNREFUSED) {
				ds_udp_refused(ds);
				continue;
			}
			return;
		}
		unmap_v4(&from);
		hl = ds_udp_decode(buf, (size_t)n, from.ss_family, &h);
		if (hl < 0)
			continue; /* not an rsocket's */
		d = ds_dest_add(ds, (struct sockaddr *)&from);
		if (!d)
			continue;
		if (!d->has_qpn || d->qpn != h.qpn)
			d->no_route = false; /* news: worth another resolution */
		d->qpn = h.qpn;
		d->has_qpn = true;
		d->err = 0;
		ds_route(ds, d);
		if (h.op != DS_UDP_OP_DATA)
			continue;
		if (ds->qp)
			ds_udp_send(ds, (struct sockaddr *)&from, DS_UDP_OP_CTRL, NULL, 0,
				    MSG_DONTWAIT);
		else
			d->owe_ctrl = true;
		ds_udp_queue(ds, (struct sockaddr *)&from, buf + hl, (size_t)(n - hl));
	}
}

/* ---- completions ---- */

/* A datagram from an address we have no handle for: answer it directly. */
static void ds_learn(struct dsock *ds, struct ibv_wc *wc, const struct sockaddr *from)
{
	struct ds_dest *d = ds_find(ds, from);
	struct ibv_ah *ah;

	if (d && d->ah) {
		/* The same address from a new QP: the peer made a new socket. */
		d->qpn = wc->src_qp;
		d->has_qpn = true;
		return;
	}
	ah = ibv_create_ah_from_wc(
	    ds->pd, wc, (struct ibv_grh *)(ds->rbuf + (size_t)(wc->wr_id & 0xFFFFFFFF) * DS_SLOT),
	    ds->port_num);
	if (!ah)
		return;
	if (!d && !(d = ds_dest_add(ds, from))) {
		ibv_destroy_ah(ah);
		return;
	}
	d->ah = ah;
	d->qpn = wc->src_qp;
	d->has_qpn = true;
	d->err = 0;
	/* A resolution under way finishes quietly. */
}

static void ds_on_recv(struct dsock *ds, struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)wc->wr_id, next = (ds->rmsg_tail + 1) % ds->rmsg_size;
	const uint8_t *msg = ds->rbuf + (size_t)slot * DS_SLOT + DS_GRH;
	struct sockaddr_storage from;
	uint32_t len;

	if (wc->status != IBV_WC_SUCCESS || wc->byte_len < DS_GRH)
		goto drop;
	len = wc->byte_len - DS_GRH;
	/* Not an rsocket datagram, or no room: dropped, as UDP would. */
	if (ds_hdr_decode(msg, len, &from) < 0 || next == ds->rmsg_head)
		goto drop;
	ds_learn(ds, wc, (struct sockaddr *)&from);
	ds->rmsg[ds->rmsg_tail] = (struct ds_rmsg){slot, len};
	ds->rmsg_tail = next;
	return;
drop:
	if (ds_post_recv(ds, slot))
		ds->err = errno;
}

static void ds_poll_cq(struct dsock *ds)
{
	struct ibv_wc wc[16];
	int n;

	if (!ds->cq)
		return;
	while ((n = ibv_poll_cq(ds->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & DS_WR_RECV)
				ds_on_recv(ds, &wc[i]);
			else {
				if (ds->nfree < ds->sq_size)
					ds->sfree[ds->nfree++] = (uint32_t)wc[i].wr_id;
			}
		}
}

static void ds_drain_cq_events(struct dsock *ds)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!ds->cc)
		return;
	while (!ibv_get_cq_event(ds->cc, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		ds->cq_armed = false;
	}
}

static void ds_progress(struct dsock *ds)
{
	ds_cm_events(ds);
	ds_udp_progress(ds);
	ds_poll_cq(ds);
}

/*
 * Sleep until the CQ, the side channel or the CM channel has news
 * (ds->lock dropped).  The first call only arms the CQ: the caller looks
 * once more before sleeping, for a completion that came before the arming.
 */
static int ds_sleep(struct dsock *ds)
{
	struct pollfd p[3];
	int n = 0;

	if (ds->cq && !ds->cq_armed) {
		ibv_req_notify_cq(ds->cq, 0);
		ds->cq_armed = true;
		return 0;
	}
	if (ds->cq)
		p[n++] = (struct pollfd){.fd = ds->cc->fd, .events = POLLIN};
	p[n++] = (struct pollfd){.fd = ds->ch->fd, .events = POLLIN};
	p[n++] = (struct pollfd){.fd = ds->udp, .events = POLLIN};
	pthread_mutex_unlock(&ds->lock);
	if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR) {
		pthread_mutex_lock(&ds->lock);
		return -1;
	}
	pthread_mutex_lock(&ds->lock);
	ds_drain_cq_events(ds);
	return 0;
}

static bool ds_nonblocking(const struct dsock *ds, int flags)
{
	return (ds->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* ---- the calls ---- */

static void ds_free(struct dsock *ds)
{
	while (ds->dests)
		ds_dest_free(ds, ds->dests);
	while (ds->uq) {
		struct ds_umsg *m = ds->uq;

		ds->uq = m->next;
		free(m);
	}
	if (ds->qp)
		ibv_destroy_qp(ds->qp);
	if (ds->cq)
		ibv_destroy_cq(ds->cq);
	if (ds->cc)
		ibv_destroy_comp_channel(ds->cc);
	if (ds->smr)
		ibv_dereg_mr(ds->smr);
	if (ds->rmr)
		ibv_dereg_mr(ds->rmr);
	if (ds->pd)
		ibv_dealloc_pd(ds->pd);
	free(ds->sbuf);
	free(ds->rbuf);
	free(ds->sfree);
	free(ds->rmsg);
	if (ds->id)
		rdma_destroy_id(ds->id);
	if (ds->ch)
		rdma_destroy_event_channel(ds->ch);
	if (ds->udp >= 0)
		close(ds->udp);
	pthread_mutex_destroy(&ds->lock);
	free(ds);
}

int ds_socket(int domain, int protocol)
{
	struct dsock *ds;

	if (domain != AF_INET && domain != AF_INET6)
		return cma_err(domain == AF_IB ? ENOTSUP : EAFNOSUPPORT);
	if (protocol && protocol != IPPROTO_UDP)
		return cma_err(ENOTSUP);
	ds = calloc(1, sizeof(*ds));
	if (!ds)
		return cma_err(ENOMEM);
	pthread_mutex_init(&ds->lock, NULL);
	ds->domain = domain;
	ds->fd = -1;
	ds->sbuf_size = ds->rbuf_size = DS_DEF_MEM;
	ds->sq_size = ds->rq_size = DS_DEF_QSIZE;
	ds->sq_inline = DS_DEF_INLINE;
	ds->uq_tail = &ds->uq;
	ds->udp = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
	ds->ch = ds->udp < 0 ? NULL : rdma_create_event_channel();
	if (!ds->ch || set_nonblock(ds->ch->fd) ||
	    rdma_create_id(ds->ch, &ds->id, ds, RDMA_PS_UDP) || ds_set(ds->ch->fd, ds)) {
		int e = errno;

		ds_free(ds);
		return cma_err(e);
	}
	ds->fd = ds->ch->fd;
	return ds->fd;
}

/*
 * The side channel takes the address first (the kernel's rules and its
 * free port), then the id the same address and port, for the device.
 * If the id cannot have it the socket is left unbound: a fresh side
 * channel replaces the bound one.
 */
int ds_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct dsock *ds = ds_lock(fd);
	struct sockaddr_storage a, u;

	if (!ds)
		return -1;
	if (check_addr(ds, addr, len))
		DS_UNLOCK_RET(ds, -1);
	if (ds->bound) {
		errno = EINVAL;
		DS_UNLOCK_RET(ds, -1);
	}
	if (bind(ds->udp, addr, len) || ds_udp_name(ds, &u))
		DS_UNLOCK_RET(ds, -1);
	memcpy(&a, addr, cma_addr_len(addr));
	set_port((struct sockaddr *)&a, port_of((struct sockaddr *)&u));
	if (rdma_bind_addr(ds->id, (struct sockaddr *)&a)) {
		int e = errno, s = socket(ds->domain, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);

		if (s >= 0) {
			int one = 1;

			if (ds->so_opts & (1u << SO_REUSEADDR))
				setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			dup2(s, ds->udp);
			close(s);
		}
		errno = e;
		DS_UNLOCK_RET(ds, -1);
	}
	ds->bound = true;
	/* Bound to one device's address: the QP can be made now. */
	if (ds->id->verbs && ds_create_qp(ds, ds->id))
		DS_UNLOCK_RET(ds, -1);
	DS_UNLOCK_RET(ds, 0);
}

int ds_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct dsock *ds = ds_lock(fd);
	struct ds_dest *d;

	if (!ds)
		return -1;
	if (addr && len >= sizeof(sa_family_t) && addr->sa_family == AF_UNSPEC) {
		struct sockaddr_storage was, now;

		/* As UDP: dissolve the association. */
		if (ds_udp_name(ds, &was) || connect(ds->udp, addr, len))
			DS_UNLOCK_RET(ds, -1);
		ds->connected = false;
		/*
		 * The kernel lets go of a port that connect chose; the headers
		 * we send name it, so it is taken back (on the wildcard).
		 */
		if (!ds_udp_name(ds, &now) && !port_of((struct sockaddr *)&now) &&
		    port_of((struct sockaddr *)&was)) {
			memset(&now, 0, sizeof(now));
			now.ss_family = was.ss_family;
			set_port((struct sockaddr *)&now, port_of((struct sockaddr *)&was));
			if (bind(ds->udp, (struct sockaddr *)&now,
				 cma_addr_len((struct sockaddr *)&now)))
				ds->bound = false;
		}
		DS_UNLOCK_RET(ds, 0);
	}
	if (check_addr(ds, addr, len))
		DS_UNLOCK_RET(ds, -1);
	/* The kernel picks the port (if unbound) and the source address. */
	if (connect(ds->udp, addr, len))
		DS_UNLOCK_RET(ds, -1);
	ds->bound = true;
	memset(&ds->peer, 0, sizeof(ds->peer));
	memcpy(&ds->peer, addr, cma_addr_len(addr));
	ds->connected = true;
	/* Like a UDP connect it does not wait: the first send does. */
	d = ds_dest_add(ds, addr);
	if (!d) {
		errno = ENOMEM;
		DS_UNLOCK_RET(ds, -1);
	}
	ds_route(ds, d);
	ds_progress(ds);
	DS_UNLOCK_RET(ds, 0);
}

static int ds_post(struct dsock *ds, struct ds_dest *d, const struct iovec *iov, int iovcnt,
		   size_t len)
{
	uint32_t slot = ds->sfree[--ds->nfree];
	uint8_t *p = ds->sbuf + (size_t)slot * DS_MSG_SIZE;
	struct ibv_sge sge = {
	    .addr = (uintptr_t)p, .length = (uint32_t)(ds->hdr_len + len), .lkey = ds->smr->lkey};
	struct ibv_send_wr wr = {0}, *bad;
	size_t off = (size_t)ds->hdr_len;
	int rc;

	memcpy(p, ds->hdr, (size_t)ds->hdr_len);
	for (int i = 0; i < iovcnt; i++) {
		memcpy(p + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge.length <= ds->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = d->ah;
	wr.wr.ud.remote_qpn = d->qpn;
	wr.wr.ud.remote_qkey = d->qkey;
	rc = ibv_post_send(ds->qp, &wr, &bad);
	if (rc) {
		ds->sfree[ds->nfree++] = slot;
		return cma_err(rc);
	}
	return 0;
}

ssize_t ds_sendmsg(int fd, const struct iovec *iov, int iovcnt, int flags,
		   const struct sockaddr *to, socklen_t tolen)
{
	struct dsock *ds = ds_lock(fd);
	struct sockaddr_storage dst;
	size_t len = 0;

	if (!ds)
		return -1;
	if (iovcnt < 0 || (iovcnt && !iov)) {
		errno = EINVAL;
		DS_UNLOCK_RET(ds, -1);
	}
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (to) {
		if (check_addr(ds, to, tolen))
			DS_UNLOCK_RET(ds, -1);
		memset(&dst, 0, sizeof(dst));
		memcpy(&dst, to, cma_addr_len(to));
	} else if (ds->connected) {
		dst = ds->peer;
	} else {
		errno = EDESTADDRREQ;
		DS_UNLOCK_RET(ds, -1);
	}
	if (len + (ds->domain == AF_INET ? DS_HDR_V4_LEN : DS_HDR_V6_LEN) > DS_MSG_SIZE ||
	    (ds->qp && len + (size_t)ds->hdr_len > ds->max_msg)) {
		errno = EMSGSIZE;
		DS_UNLOCK_RET(ds, -1);
	}
	if (ds_autobind(ds))
		DS_UNLOCK_RET(ds, -1);
	for (;;) {
		struct ds_dest *d;

		ds_progress(ds);
		d = ds_dest_add(ds, (struct sockaddr *)&dst);
		if (!d) {
			errno = ENOMEM;
			DS_UNLOCK_RET(ds, -1);
		}
		if (d->err) {
			/* Reported once; the next send starts afresh. */
			errno = d->err;
			ds_dest_free(ds, d);
			DS_UNLOCK_RET(ds, -1);
		}
		ds_route(ds, d);
		if (ds->qp && len + (size_t)ds->hdr_len > ds->max_msg) {
			errno = EMSGSIZE;
			DS_UNLOCK_RET(ds, -1);
		}
		if (ds_ready(d) && ds->nfree) {
			if (ds_post(ds, d, iov, iovcnt, len))
				DS_UNLOCK_RET(ds, -1);
			DS_UNLOCK_RET(ds, (ssize_t)len);
		}
		if (ds->qp && !ds_ready(d)) {
			/* Not known yet: over the side channel, with our QPN. */
			if (ds_udp_send(ds, (struct sockaddr *)&dst, DS_UDP_OP_DATA, iov, iovcnt,
					ds_nonblocking(ds, flags) ? MSG_DONTWAIT : 0)) {
				d->err = 0; /* (a refusal, reported now) */
				DS_UNLOCK_RET(ds, -1);
			}
			DS_UNLOCK_RET(ds, (ssize_t)len);
		}
		/* No QP yet (the resolution brings the device), or no send slot. */
		if (ds_nonblocking(ds, flags)) {
			errno = EAGAIN;
			DS_UNLOCK_RET(ds, -1);
		}
		if (ds_sleep(ds))
			DS_UNLOCK_RET(ds, -1);
	}
}

ssize_t ds_recvmsg(int fd, const struct iovec *iov, int iovcnt, int flags, struct sockaddr *from,
		   socklen_t *fromlen, int *msg_flags)
{
	struct dsock *ds = ds_lock(fd);
	struct sockaddr_storage src;
	struct ds_rmsg m = {0};
	struct ds_umsg *um = NULL;
	const uint8_t *p;
	size_t done = 0, left;
	int hl;

	if (!ds)
		return -1;
	if (iovcnt < 0 || (iovcnt && !iov)) {
		errno = EINVAL;
		DS_UNLOCK_RET(ds, -1);
	}
	if (msg_flags)
		*msg_flags = 0;
	for (;;) {
		ds_progress(ds);
		if (ds->uq || ds->rmsg_head != ds->rmsg_tail)
			break;
		if (ds_nonblocking(ds, flags)) {
			errno = EAGAIN;
			DS_UNLOCK_RET(ds, -1);
		}
		if (ds_sleep(ds))
			DS_UNLOCK_RET(ds, -1);
	}
	/* What came over the side channel came before the sender knew our QP. */
	if (ds->uq) {
		um = ds->uq;
		p = um->data;
		m.len = um->len;
	} else {
		m = ds->rmsg[ds->rmsg_head];
		p = ds->rbuf + (size_t)m.slot * DS_SLOT + DS_GRH;
	}
	hl = ds_hdr_decode(p, m.len, &src); /* checked when it arrived */
	left = m.len - (size_t)hl;
	p += hl;
	for (int i = 0; i < iovcnt && left; i++) {
		size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;

		memcpy(iov[i].iov_base, p, n);
		p += n;
		left -= n;
		done += n;
	}
	if (left && msg_flags)
		*msg_flags |= MSG_TRUNC;
	if (from && fromlen)
		copy_out(from, fromlen, (struct sockaddr *)&src);
	if (!(flags & MSG_PEEK)) {
		if (um) {
			ds->uq = um->next;
			if (!ds->uq)
				ds->uq_tail = &ds->uq;
			ds->uq_len--;
			free(um);
		} else {
			ds->rmsg_head = (ds->rmsg_head + 1) % ds->rmsg_size;
			if (ds_post_recv(ds, m.slot))
				ds->err = errno;
		}
	}
	/* As UDP: MSG_TRUNC asks for the datagram's real length. */
	if (flags & MSG_TRUNC)
		done += left;
	DS_UNLOCK_RET(ds, (ssize_t)done);
}

int ds_shutdown(int fd, int how)
{
	struct dsock *ds = ds_lock(fd);

	if (!ds)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		DS_UNLOCK_RET(ds, -1);
	}
	if (!ds->connected) {
		errno = ENOTCONN;
		DS_UNLOCK_RET(ds, -1);
	}
	DS_UNLOCK_RET(ds, 0);
}

int ds_close(int fd)
{
	struct dsock *ds = ds_lock(fd);

	if (!ds)
		return -1;
	ds_set(fd, NULL);
	/*
	 * As a UDP close: what was sent still leaves.  Destroying the QP would
	 * drop sends not yet on the wire, so wait for them, a second at most.
	 */
	for (int i = 0; i < DS_CLOSE_WAIT_MS && ds->qp && ds->nfree < ds->sq_size; i++) {
		ds_poll_cq(ds);
		if (ds->nfree < ds->sq_size)
			usleep(1000);
	}
	pthread_mutex_unlock(&ds->lock);
	ds_free(ds);
	return 0;
}

int ds_getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct dsock *ds = ds_lock(fd);

	if (!ds)
		return -1;
	if (!addr || !len) {
		errno = EFAULT;
		DS_UNLOCK_RET(ds, -1);
	}
	if (!ds->connected) {
		errno = ENOTCONN;
		DS_UNLOCK_RET(ds, -1);
	}
	copy_out(addr, len, (struct sockaddr *)&ds->peer);
	DS_UNLOCK_RET(ds, 0);
}

int ds_getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct dsock *ds = ds_lock(fd);
	struct sockaddr_storage ss;

	if (!ds)
		return -1;
	if (!addr || !len) {
		errno = EFAULT;
		DS_UNLOCK_RET(ds, -1);
	}
	/* The side channel's: the address and port peers know us by. */
	if (ds_udp_name(ds, &ss))
		DS_UNLOCK_RET(ds, -1);
	copy_out(addr, len, (struct sockaddr *)&ss);
	DS_UNLOCK_RET(ds, 0);
}

static int opt_int(const void *val, socklen_t len, int *v)
{
	if (!val || len < sizeof(int))
		return cma_err(EINVAL);
	memcpy(v, val, sizeof(int));
	return 0;
}

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len || *len < sizeof(int))
		return cma_err(EINVAL);
	memcpy(val, &v, sizeof(v));
	*len = sizeof(int);
	return 0;
}

static int ds_setopt(struct dsock *ds, int level, int name, const void *val, socklen_t len)
{
	int v;

	if (opt_int(val, len, &v))
		return -1;
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_REUSEADDR:
			if (!ds->bound &&
			    (setsockopt(ds->udp, level, name, val, len) ||
			     rdma_set_option(ds->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v,
					     sizeof(v))))
				return -1;
			ds->so_opts = v ? ds->so_opts | 1u << name : ds->so_opts & ~(1u << name);
			return 0;
		case SO_SNDBUF:
		case SO_RCVBUF:
			if (v < 0)
				return cma_err(EINVAL);
			if (!ds->qp) {
				/* As Linux: the buffer is twice what is asked. */
				uint32_t sz =
				    (uint32_t)v > (1u << 27) ? 1u << 28 : (uint32_t)v << 1;

				if (name == SO_SNDBUF)
					ds->sbuf_size = sz;
				else
					ds->rbuf_size = sz;
			}
			return 0;
		default:
			return cma_err(ENOTSUP);
		}
	}
	if (level == SOL_RDMA) {
		if (v < 0)
			return cma_err(EINVAL);
		if (ds->qp)
			return cma_err(EINVAL); /* the queues exist already */
		switch (name) {
		case RDMA_SQSIZE:
			ds->sq_size = (uint16_t)(v > DS_QP_MAX ? DS_QP_MAX : v);
			return 0;
		case RDMA_RQSIZE:
			ds->rq_size = (uint16_t)(v > DS_QP_MAX ? DS_QP_MAX : v);
			return 0;
		case RDMA_INLINE:
			ds->sq_inline = (uint16_t)(v > DS_QP_MAX ? DS_QP_MAX : v);
			return 0;
		default:
			return cma_err(ENOTSUP);
		}
	}
	if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY)
		return setsockopt(ds->udp, level, name, val, len) ||
			       rdma_set_option(ds->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v,
					       sizeof(v))
			   ? -1
			   : 0;
	return cma_err(ENOTSUP);
}

int ds_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct dsock *ds = ds_lock(fd);
	int ret;

	if (!ds)
		return -1;
	ret = ds_setopt(ds, level, name, val, len);
	DS_UNLOCK_RET(ds, ret);
}

static int ds_getopt(struct dsock *ds, int level, int name, void *val, socklen_t *len)
{
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_TYPE:
			return put_int(val, len, SOCK_DGRAM);
		case SO_REUSEADDR:
			return put_int(val, len, !!(ds->so_opts & (1u << name)));
		case SO_SNDBUF:
			return put_int(val, len, (int)ds->sbuf_size);
		case SO_RCVBUF:
			return put_int(val, len, (int)ds->rbuf_size);
		case SO_ERROR: {
			int e = ds->err;

			if (put_int(val, len, e))
				return -1;
			ds->err = 0;
			return 0;
		}
		default:
			return cma_err(ENOTSUP);
		}
	}
	if (level == SOL_RDMA) {
		switch (name) {
		case RDMA_SQSIZE:
			return put_int(val, len, ds->sq_size);
		case RDMA_RQSIZE:
			return put_int(val, len, ds->rq_size);
		case RDMA_INLINE:
			return put_int(val, len, ds->sq_inline);
		default:
			return cma_err(ENOTSUP);
		}
	}
	return cma_err(ENOTSUP);
}

int ds_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct dsock *ds = ds_lock(fd);
	int ret;

	if (!ds)
		return -1;
	ret = ds_getopt(ds, level, name, val, len);
	DS_UNLOCK_RET(ds, ret);
}

int ds_fcntl(int fd, int cmd, int arg)
{
	struct dsock *ds = ds_lock(fd);
	int ret = 0;

	if (!ds)
		return -1;
	switch (cmd) {
	case F_GETFL:
		ret = ds->fd_flags | O_RDWR;
		break;
	case F_SETFL:
		ds->fd_flags = arg & ~O_ACCMODE;
		break;
	case F_GETFD:
		ret = fcntl(ds->fd, F_GETFD);
		break;
	case F_SETFD:
		ret = fcntl(ds->fd, F_SETFD, arg);
		break;
	default:
		errno = ENOTSUP;
		ret = -1;
		break;
	}
	DS_UNLOCK_RET(ds, ret);
}

/* ---- rpoll support ---- */

static short ds_revents(struct dsock *ds, short events)
{
	short rev = 0;

	if ((events & POLLIN) && (ds->uq || ds->rmsg_head != ds->rmsg_tail))
		rev |= POLLIN;
	if (events & POLLOUT) {
		/*
		 * Writable: a send would not wait, for a slot (a peer not yet
		 * known takes the side channel, which needs none) or for the
		 * resolution that brings the QP.
		 */
		struct ds_dest *d =
		    ds->connected ? ds_find(ds, (struct sockaddr *)&ds->peer) : NULL;

		if (d && d->err)
			rev |= POLLOUT;
		else if (!ds->qp ? !d || !d->id : ds->nfree || (d && !ds_ready(d)))
			rev |= POLLOUT;
	}
	if (ds->err)
		rev |= POLLERR;
	return rev;
}

short ds_poll_check(int fd, short events)
{
	struct dsock *ds = ds_lock(fd);
	short rev;

	if (!ds)
		return POLLNVAL;
	ds_progress(ds);
	rev = ds_revents(ds, events);
	pthread_mutex_unlock(&ds->lock);
	return rev;
}

short ds_poll_arm(int fd, short events, struct pollfd *out, int *n)
{
	struct dsock *ds = ds_lock(fd);
	short rev;

	*n = 0;
	if (!ds)
		return POLLNVAL;
	ds_progress(ds);
	/* Armed after progress: the QP may have been made just now. */
	if (ds->cq && !ds->cq_armed) {
		ibv_req_notify_cq(ds->cq, 0);
		ds->cq_armed = true;
		ds_poll_cq(ds);
	}
	rev = ds_revents(ds, events);
	if (!rev) {
		if (ds->cq)
			out[(*n)++] = (struct pollfd){.fd = ds->cc->fd, .events = POLLIN};
		out[(*n)++] = (struct pollfd){.fd = ds->ch->fd, .events = POLLIN};
		out[(*n)++] = (struct pollfd){.fd = ds->udp, .events = POLLIN};
	}
	pthread_mutex_unlock(&ds->lock);
	return rev;
}

void ds_poll_drain(int fd)
{
	struct dsock *ds = ds_lock(fd);

	if (!ds)
		return;
	ds_drain_cq_events(ds);
	pthread_mutex_unlock(&ds->lock);
}
