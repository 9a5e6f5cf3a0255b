/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Stream rsockets (SOCK_STREAM over RC) on the public librdmacm API.
 *
 * Each rsocket owns an rdma_cm event channel (its fd is the socket's
 * descriptor), an id in RDMA_PS_TCP, a completion channel and one CQ for
 * both queues.  Connection setup is driven by the channel's events, so
 * blocking and non-blocking calls share one state machine: a blocking
 * call just sleeps on the fds between steps.
 *
 * Data path (the protocol of rdma-core's rsockets, rsocket_wire.h): the
 * receiver hands out halves of its receive buffer as SGEs that it
 * RDMA-writes into the sender's target buffer; the sender RDMA-writes
 * stream bytes into the current half with immediate data (RS_OP_DATA,
 * length) and the receiver copies them out in order.  Every message with
 * immediate data uses one receive WR of the peer, so the sender keeps a
 * 16-bit sequence number below the limit the receiver grants (RS_OP_SGL).
 * Control messages (credits, disconnect) use a separate window of
 * RS_CTRL_WIN send WRs, as rdma-core does.
 *
 * Locking: one mutex per rsocket guards all of it; it is dropped while a
 * call sleeps, so a sender and a receiver thread both make progress.
 *
 * Datagram rsockets live in lib/rsocket_dgram.c: each call here hands a
 * descriptor of theirs over (ds_is_dgram) before it looks at its own
 * table.  SO_KEEPALIVE's timer thread is lib/rsocket_keepalive.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <rdma/rsocket.h>

#include "lib/cma.h"
#include "lib/rsocket.h"
#include "lib/rsocket_wire.h"

#define RS_SNDLOWAT 2048   /* room a send waits for */
#define RS_OLAP_START 2048 /* first chunk of a send; then doubles */
#define RS_MAX_XFER 65536  /* largest chunk of one WR */
#define RS_QP_MIN 16
#define RS_QP_MAX 0xFFFE
#define RS_CTRL_WIN 4	      /* control messages in flight */
#define RS_RECV_SLACK 8	      /* receive WRs beyond the credits granted */
#define RS_SPIN_NS 10000      /* poll the CQ this long before sleeping */
#define RS_CLOSE_WAIT_MS 3000 /* rclose: wait this long for sends to finish */
#define RS_RESOLVE_MS 2000

enum rs_state {
	RS_INIT,
	RS_BOUND,
	RS_LISTEN,
	RS_RESOLVE_ADDR,
	RS_RESOLVE_ROUTE,
	RS_CONNECTING,
	RS_ACCEPTING,
	RS_CONNECTED,
	RS_CONNECT_ERROR,
	RS_DISCONNECTED, /* orderly: the peer or we closed */
	RS_ERROR,	 /* the QP failed or the peer vanished */
};

#define RS_READABLE 1u
#define RS_WRITABLE 2u

/* Send wr_id: bit 63 marks receives; otherwise the low 32 bits are a msg. */
#define RS_WR_RECV (1ull << 63)

struct rs_iomr {
	struct rs_iomr *next;
	void *addr;
	size_t len;
	uint64_t offset;
	struct ibv_mr *mr;
	int slot;	      /* remote iomap slot, -1 for a local-only mapping */
	bool pending;	      /* not yet written to the peer */
	struct rs_iomap wire; /* what goes to the peer (registered: wmr) */
	struct ibv_mr *wmr;
};

struct rsock {
	int fd;
	int domain;
	pthread_mutex_t lock;
	/*
	 * Threads that will take lock without holding it: found in the
	 * table and not yet locked (rs_lock), or asleep in rs_wait.  rclose
	 * marks the socket closed and frees it only when none is left; each
	 * finds it closed and fails with EBADF (rs_unref_locked).
	 */
	_Atomic unsigned refs;
	bool closed;
	/*
	 * rclose is under way on thread `closer` (its shutdown waits): the
	 * others, woken meanwhile by what it does, already fail with EBADF.
	 */
	bool closing;
	pthread_t closer;
	pthread_cond_t idle; /* refs went to 0 after closed */
	enum rs_state state;
	unsigned rdwr;
	bool shut_wr;	  /* we shut our write side: EPIPE */
	bool ctrl_closed; /* we sent RS_CTRL_DISCONNECT */
	int err;	  /* pending SO_ERROR */
	int fd_flags;

	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	bool cq_armed;
	bool cm_check; /* read the CM channel at the next progress */
	/*
	 * A keepalive came due while another thread held lock (the keepalive
	 * thread only tries it): that thread's next progress posts it.  A
	 * program that spins on a non-blocking rsend holds lock nearly all
	 * the time, and with nothing of its own in flight only a keepalive
	 * tells it that its peer is gone.
	 */
	atomic_bool ka_due;
	/*
	 * Several threads blocked on one socket (one in rsend waiting for
	 * credits, one in rrecv): a completion wakes every thread asleep on
	 * the CQ channel, but the first to get the lock reads its event and
	 * handles every completion, the others' too, and a thread whose
	 * poll(2) had not yet looked again sleeps on (the fd is no longer
	 * readable) with its data already in.  So one thread at a time sleeps
	 * on the channels (poller); the others wait on `progress`, woken
	 * whenever completions or CM events were handled, by any thread, and
	 * when the poller gets up (rs_wait).  The poller is woken the same
	 * way by poller_fd (an eventfd it polls and empties) when another
	 * thread, an rpoll's or a call's, handled completions meanwhile.  An
	 * rpoll asleep on the socket (rpoll_armed) is woken by wake_fd, an
	 * eventfd made by its first rpoll, which rs_poll_arm empties (one
	 * rpoll thread per socket is woken reliably).
	 */
	bool poller;
	int poller_fd;
	unsigned waiters;
	pthread_cond_t progress;
	bool rpoll_armed;
	int wake_fd;

	/* Options (fixed once the buffers exist). */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline;
	uint32_t iomap_size;
	uint32_t so_opts, tcp_opts, ipv6_opts; /* bit per option number */
	int keepidle;
	void *route;
	size_t route_len;

	/* Send side. */
	uint8_t *sbuf; /* [sbuf_size] ring, then RS_CTRL_WIN control SGEs */
	struct ibv_mr *smr;
	uint32_t soff, sbuf_avail;
	int sqe_avail;
	unsigned ctrl_seq, ctrl_max;
	uint16_t sseq_no, sseq_comp;
	int target_sge;
	void *tbuf; /* target buffer: SGEs the peer writes, then its iomaps */
	struct ibv_mr *tmr;
	volatile struct rs_sge *target_sgl;
	volatile struct rs_iomap *target_iomap;
	struct rs_sge remote_sgl, remote_iomap;
	uint32_t remote_sge;
	bool swap;

	/* Receive side. */
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	uint32_t rbuf_off, rbuf_avail, rbuf_free_off;
	uint16_t rseq_no, rseq_comp;
	uint32_t *rmsg; /* lengths of data messages not yet read */
	uint32_t rmsg_size, rmsg_head, rmsg_tail;

	/* riomap()s. */
	struct rs_iomr *iomaps;
	struct rs_iomr **slots; /* [remote_iomap.length] */
	bool iomap_pending;
};

/* ---- the descriptor table: two levels, lock-free lookups ---- */

#define RS_PAGE_BITS 10
#define RS_PAGES 1024
static struct rsock **rs_pages[RS_PAGES];
static pthread_mutex_t rs_table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct rsock *rs_get(int fd)
{
	struct rsock **page;

	if (fd < 0 || (fd >> RS_PAGE_BITS) >= RS_PAGES)
		return NULL;
	page = __atomic_load_n(&rs_pages[fd >> RS_PAGE_BITS], __ATOMIC_ACQUIRE);
	if (!page)
		return NULL;
	return __atomic_load_n(&page[fd & ((1 << RS_PAGE_BITS) - 1)], __ATOMIC_ACQUIRE);
}

static int rs_insert(struct rsock *rs)
{
	int fd = rs->fd, p = fd >> RS_PAGE_BITS;

	if (fd < 0 || p >= RS_PAGES)
		return cma_err(EMFILE);
	pthread_mutex_lock(&rs_table_lock);
	if (!rs_pages[p]) {
		struct rsock **page = calloc(1u << RS_PAGE_BITS, sizeof(*page));

		if (!page) {
			pthread_mutex_unlock(&rs_table_lock);
			return cma_err(ENOMEM);
		}
		__atomic_store_n(&rs_pages[p], page, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&rs_pages[p][fd & ((1 << RS_PAGE_BITS) - 1)], rs, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rs_table_lock);
	return 0;
}

static void rs_remove(struct rsock *rs)
{
	int fd = rs->fd;

	if (rs_get(fd) != rs)
		return;
	pthread_mutex_lock(&rs_table_lock);
	__atomic_store_n(&rs_pages[fd >> RS_PAGE_BITS][fd & ((1 << RS_PAGE_BITS) - 1)], NULL,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rs_table_lock);
}

bool rs_is_rsocket(int fd)
{
	return rs_get(fd) != NULL || ds_is_dgram(fd);
}

/* ---- helpers ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static bool rs_nonblocking(const struct rsock *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

static struct rsock *rs_alloc(const struct rsock *parent)
{
	struct rsock *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	pthread_mutex_init(&rs->lock, NULL);
	pthread_cond_init(&rs->idle, NULL);
	{
		pthread_condattr_t ca;

		/* Waits are bounded on now_ns()'s clock. */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&rs->progress, &ca);
		pthread_condattr_destroy(&ca);
	}
	rs->fd = -1;
	rs->wake_fd = -1;
	rs->poller_fd = -1;
	if (parent) {
		rs->domain = parent->domain;
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->sq_inline = parent->sq_inline;
		rs->iomap_size = parent->iomap_size;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
		rs->keepidle = parent->keepidle;
	} else {
		/* rdma-core's defaults, or its tuning files' (lib/rsocket_conf.c),
		 * within rsetsockopt's bounds. */
		const struct rs_conf *c = rs_conf();

		rs->sbuf_size = c->wmem > (1u << 28) ? (1u << 28) : c->wmem;
		rs->rbuf_size = c->mem > (1u << 28) ? (1u << 28) : c->mem;
		rs->sq_size = (uint16_t)(c->sqsize > RS_QP_MAX ? RS_QP_MAX : c->sqsize);
		rs->rq_size = (uint16_t)(c->rqsize > RS_QP_MAX ? RS_QP_MAX : c->rqsize);
		rs->sq_inline = (uint16_t)(c->inline_size > RS_QP_MAX ? RS_QP_MAX : c->inline_size);
		rs->iomap_size = rs_scale_to_value(rs_value_to_scale(c->iomap_size));
		rs->keepidle = 7200;
	}
	return rs;
}

/* Make the event channel (whose fd names the socket), non-blocking. */
static int rs_open_channel(struct rsock *rs)
{
	rs->ch = rdma_create_event_channel();
	if (!rs->ch)
		return -1;
	if (set_nonblock(rs->ch->fd))
		return -1;
	rs->fd = rs->ch->fd;
	return 0;
}

/* Release the data-path resources and the id (the rsocket stays). */
static void rs_free_ep(struct rsock *rs)
{
	struct rs_iomr *m;

	while ((m = rs->iomaps)) {
		rs->iomaps = m->next;
		if (m->mr)
			ibv_dereg_mr(m->mr);
		if (m->wmr)
			ibv_dereg_mr(m->wmr);
		free(m);
	}
	free(rs->slots);
	rs->slots = NULL;
	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id);
	if (rs->cq)
		ibv_destroy_cq(rs->cq);
	rs->cq = NULL;
	if (rs->cc)
		ibv_destroy_comp_channel(rs->cc);
	rs->cc = NULL;
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->tmr)
		ibv_dereg_mr(rs->tmr);
	rs->smr = rs->rmr = rs->tmr = NULL;
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->tbuf);
	free(rs->rmsg);
	rs->sbuf = rs->rbuf = NULL;
	rs->tbuf = NULL;
	rs->rmsg = NULL;
}

static void rs_free(struct rsock *rs)
{
	rs_remove(rs);
	rs_free_ep(rs);
	if (rs->id)
		rdma_destroy_id(rs->id);
	if (rs->ch)
		rdma_destroy_event_channel(rs->ch);
	free(rs->route);
	if (rs->wake_fd >= 0)
		close(rs->wake_fd);
	if (rs->poller_fd >= 0)
		close(rs->poller_fd);
	pthread_cond_destroy(&rs->progress);
	pthread_cond_destroy(&rs->idle);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

/* ---- posting ---- */

static int rs_post_recv(struct rsock *rs)
{
	struct ibv_recv_wr wr = {.wr_id = RS_WR_RECV}, *bad;

	return ibv_post_recv(rs->id->qp, &wr, &bad) ? -1 : 0;
}

static int rs_post_write_imm(struct rsock *rs, struct ibv_sge *sge, int nsge, uint32_t msg,
			     int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr = {0}, *bad;

	wr.wr_id = msg;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = flags;
	wr.imm_data = htonl(msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(rs->id->qp, &wr, &bad) ? -1 : 0;
}

static int rs_post_write(struct rsock *rs, struct ibv_sge *sge, uint32_t tag, int flags,
			 uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr = {0}, *bad;

	wr.wr_id = tag;
	wr.sg_list = sge;
	wr.num_sge = sge ? 1 : 0; /* none: the keepalive's zero-length write */
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = flags;
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(rs->id->qp, &wr, &bad) ? -1 : 0;
}

static bool rs_ctrl_avail(const struct rsock *rs)
{
	return rs->ctrl_seq != rs->ctrl_max;
}

/* A control message with no payload (credits without a buffer, CTRL). */
static int rs_post_ctrl(struct rsock *rs, uint32_t msg)
{
	rs->ctrl_seq++;
	return rs_post_write_imm(rs, NULL, 0, msg, 0, rs->remote_sgl.addr, rs->remote_sgl.key);
}

static void rs_fail(struct rsock *rs, int e)
{
	if (rs->state == RS_CONNECTED || rs->state == RS_ACCEPTING) {
		rs->state = RS_ERROR;
		rs->err = e;
	}
	rs->rdwr = 0;
}

/* ---- credits ---- */

static bool rs_give_credits(const struct rsock *rs)
{
	return (rs->rbuf_avail >= (rs->rbuf_size >> 1) ||
		(int16_t)(rs->rseq_no - rs->rseq_comp) >= 0) &&
	       rs_ctrl_avail(rs) && rs->state == RS_CONNECTED;
}

static void rs_send_credits(struct rsock *rs)
{
	uint32_t half = rs->rbuf_size >> 1;
	uint32_t grant = (uint32_t)(uint16_t)(rs->rseq_no + rs->rq_size);

	rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
	if (rs->rbuf_avail >= half) {
		struct rs_sge sge = {
		    .addr = (uintptr_t)(rs->rbuf + rs->rbuf_free_off),
		    .key = rs->rmr->rkey,
		    .length = half,
		};
		struct ibv_sge ib;
		int flags = 0;

		if (rs->swap)
			rs_sge_swap(&sge);
		if (rs->sq_inline >= RS_SGE_LEN) {
			ib.addr = (uintptr_t)&sge;
			ib.lkey = 0;
			flags = IBV_SEND_INLINE;
		} else {
			uint8_t *slot =
			    rs->sbuf + rs->sbuf_size + RS_SGE_LEN * (rs->ctrl_seq % RS_CTRL_WIN);

			memcpy(slot, &sge, sizeof(sge));
			ib.addr = (uintptr_t)slot;
			ib.lkey = rs->smr->lkey;
		}
		ib.length = RS_SGE_LEN;
		rs->ctrl_seq++;
		if (rs_post_write_imm(rs, &ib, 1, rs_msg(RS_OP_SGL, grant), flags,
				      rs->remote_sgl.addr + (uint64_t)rs->remote_sge * RS_SGE_LEN,
				      rs->remote_sgl.key)) {
			rs_fail(rs, errno);
			return;
		}
		rs->rbuf_avail -= half;
		rs->rbuf_free_off += half;
		if (rs->rbuf_free_off >= rs->rbuf_size)
			rs->rbuf_free_off = 0;
		if (++rs->remote_sge == rs->remote_sgl.length)
			rs->remote_sge = 0;
	} else if (rs_post_ctrl(rs, rs_msg(RS_OP_SGL, grant))) {
		rs_fail(rs, errno);
	}
}

static void rs_update_credits(struct rsock *rs)
{
	if (rs_give_credits(rs))
		rs_send_credits(rs);
}

/* ---- completions ---- */

static void rs_on_recv(struct rsock *rs, const struct ibv_wc *wc)
{
	uint32_t msg;

	if (!(wc->wc_flags & IBV_WC_WITH_IMM))
		return;
	msg = ntohl(wc->imm_data);
	switch (rs_msg_op(msg)) {
	case RS_OP_DATA: {
		uint32_t next = (rs->rmsg_tail + 1) % rs->rmsg_size;

		if (!rs_msg_data(msg))
			break;
		if (next == rs->rmsg_head) { /* the peer overran its credits */
			rs_fail(rs, EPROTO);
			break;
		}
		rs->rmsg[rs->rmsg_tail] = rs_msg_data(msg);
		rs->rmsg_tail = next;
		break;
	}
	case RS_OP_SGL:
		rs->sseq_comp = (uint16_t)rs_msg_data(msg);
		break;
	case RS_OP_IOMAP_SGL:
		/*
		 * The entry is in our target buffer already.  Count the message
		 * as consumed so the sender gets its credit back (it never
		 * occupies the data queue).
		 */
		rs->rseq_no++;
		break;
	case RS_OP_CTRL:
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
			rs->rdwr = 0;
			if (rs->state == RS_CONNECTED)
				rs->state = RS_DISCONNECTED;
		} else if (rs_msg_data(msg) == RS_CTRL_SHUTDOWN) {
			if (rs->rdwr & RS_WRITABLE) {
				rs->rdwr &= ~RS_READABLE;
			} else {
				rs->rdwr = 0;
				if (rs->state == RS_CONNECTED)
					rs->state = RS_DISCONNECTED;
			}
		}
		break;
	default:
		break;
	}
}

static void rs_on_send(struct rsock *rs, const struct ibv_wc *wc)
{
	uint32_t tag = (uint32_t)wc->wr_id;

	switch (rs_msg_op(tag)) {
	case RS_OP_DATA:
	case RS_OP_WRITE:
		rs->sqe_avail++;
		rs->sbuf_avail += rs_msg_data(tag);
		break;
	case RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_avail += RS_IOMAP_LEN;
		break;
	default: /* SGL and CTRL: the control window */
		rs->ctrl_max++;
		break;
	}
	if (wc->status != IBV_WC_SUCCESS)
		rs_fail(rs, ECONNRESET);
}

/* Handle the completions there are; how many. */
static int rs_poll_cq(struct rsock *rs)
{
	struct ibv_wc wc[16];
	int n, i, reposts = 0, total = 0;

	if (!rs->cq)
		return 0;
	while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		total += n;
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & RS_WR_RECV) {
				if (wc[i].status != IBV_WC_SUCCESS) {
					rs_fail(rs, ECONNRESET);
					continue;
				}
				reposts++;
				rs_on_recv(rs, &wc[i]);
			} else {
				rs_on_send(rs, &wc[i]);
			}
		}
	}
	if (rs->state == RS_CONNECTED || rs->state == RS_ACCEPTING ||
	    rs->state == RS_DISCONNECTED) {
		while (reposts-- > 0)
			if (rs_post_recv(rs)) {
				rs_fail(rs, errno);
				break;
			}
	}
	return total;
}

static void rs_drain_cq_events(struct rsock *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!rs->cc)
		return;
	while (!ibv_get_cq_event(rs->cc, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		rs->cq_armed = false;
	}
}

/* ---- connection setup ---- */

static int rs_create_ep(struct rsock *rs)
{
	struct ibv_qp_init_attr attr = {0};
	struct ibv_device_attr dattr;
	uint32_t maxq = RS_QP_MAX;
	size_t tlen;

	if (!ibv_query_device(rs->id->verbs, &dattr) &&
	    (uint32_t)dattr.max_qp_wr < maxq + RS_RECV_SLACK)
		maxq = (uint32_t)dattr.max_qp_wr - RS_RECV_SLACK;
	if (rs->sq_size > maxq)
		rs->sq_size = (uint16_t)maxq;
	if (rs->sq_size < RS_QP_MIN)
		rs->sq_size = RS_QP_MIN;
	if (rs->rq_size > maxq)
		rs->rq_size = (uint16_t)maxq;
	if (rs->rq_size < RS_QP_MIN)
		rs->rq_size = RS_QP_MIN;
	if (rs->rbuf_size < 2 * RS_SNDLOWAT)
		rs->rbuf_size = 2 * RS_SNDLOWAT;
	rs->rbuf_size &= ~1u;
	if (rs->sbuf_size < 2 * RS_SNDLOWAT)
		rs->sbuf_size = 2 * RS_SNDLOWAT;

	rs->cc = ibv_create_comp_channel(rs->id->verbs);
	if (!rs->cc || set_nonblock(rs->cc->fd))
		return -1;
	rs->cq =
	    ibv_create_cq(rs->id->verbs, rs->sq_size + rs->rq_size + RS_RECV_SLACK, rs, rs->cc, 0);
	if (!rs->cq)
		return -1;
	attr.qp_context = rs;
	attr.send_cq = attr.recv_cq = rs->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = rs->rq_size + RS_RECV_SLACK;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->id, NULL, &attr)) {
		/* The device may offer less inline data: take what it has. */
		attr.cap.max_inline_data = 0;
		if (rdma_create_qp(rs->id, NULL, &attr))
			return -1;
	}
	rs->sq_inline = (uint16_t)attr.cap.max_inline_data;

	rs->sbuf = calloc(1, rs->sbuf_size + RS_CTRL_WIN * RS_SGE_LEN);
	rs->rbuf = calloc(1, rs->rbuf_size);
	tlen = RS_SGL_SIZE * RS_SGE_LEN + (size_t)rs->iomap_size * RS_IOMAP_LEN;
	rs->tbuf = calloc(1, tlen);
	rs->rmsg_size = rs->rq_size + RS_RECV_SLACK + 1;
	rs->rmsg = calloc(rs->rmsg_size, sizeof(*rs->rmsg));
	if (!rs->sbuf || !rs->rbuf || !rs->tbuf || !rs->rmsg)
		return cma_err(ENOMEM);
	rs->smr = ibv_reg_mr(rs->id->pd, rs->sbuf, rs->sbuf_size + RS_CTRL_WIN * RS_SGE_LEN,
			     IBV_ACCESS_LOCAL_WRITE);
	rs->rmr = ibv_reg_mr(rs->id->pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->tmr = ibv_reg_mr(rs->id->pd, rs->tbuf, tlen,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->smr || !rs->rmr || !rs->tmr)
		return -1;
	rs->target_sgl = rs->tbuf;
	rs->target_iomap =
	    rs->iomap_size ? (volatile struct rs_iomap *)(rs->target_sgl + RS_SGL_SIZE) : NULL;

	rs->sbuf_avail = rs->sbuf_size;
	rs->soff = 0;
	rs->sqe_avail = rs->sq_size - RS_CTRL_WIN;
	rs->ctrl_seq = 0;
	rs->ctrl_max = RS_CTRL_WIN;
	rs->rbuf_free_off = rs->rbuf_size >> 1;
	rs->rbuf_avail = rs->rbuf_size >> 1;
	rs->rseq_comp = rs->rq_size >> 1;
	for (unsigned i = 0; i < (unsigned)rs->rq_size + RS_RECV_SLACK; i++)
		if (rs_post_recv(rs))
			return -1;
	return 0;
}

static void rs_format_conn(const struct rsock *rs, uint8_t out[RS_CONN_DATA_LEN])
{
	struct rs_conn c = {
	    .version = RS_CONN_VERSION,
	    .flags = RS_CONN_FLAG_IOMAP | (rs_host_is_net() ? RS_CONN_FLAG_NET : 0),
	    .credits = rs->rq_size,
	    .iomap_scale = rs_value_to_scale(rs->iomap_size),
	    .target = {(uintptr_t)rs->tbuf, rs->tmr->rkey, RS_SGL_SIZE},
	    .data = {(uintptr_t)rs->rbuf, rs->rmr->rkey, rs->rbuf_size >> 1},
	};

	rs_conn_encode(&c, out);
}

static int rs_save_conn(struct rsock *rs, const void *pdata, size_t len)
{
	struct rs_conn c;
	int r = rs_conn_decode(pdata, len, &c);

	if (r)
		return cma_err(r == -EPROTONOSUPPORT ? ENOTSUP : EPROTO);
	rs->remote_sgl = c.target;
	rs->remote_sge = 1;
	rs->swap = !!(c.flags & RS_CONN_FLAG_NET) != !!rs_host_is_net();
	if (c.flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = c.target.addr + (uint64_t)RS_SGE_LEN * c.target.length;
		rs->remote_iomap.length = rs_scale_to_value(c.iomap_scale);
		rs->remote_iomap.key = c.target.key;
	}
	rs->target_sgl[0].addr = c.data.addr;
	rs->target_sgl[0].key = c.data.key;
	rs->target_sgl[0].length = c.data.length;
	rs->target_sge = 0;
	rs->sseq_comp = c.credits;
	rs->sseq_no = 0;
	return 0;
}

static int rs_event_errno(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
		return ETIMEDOUT;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return ev->status < 0 && -ev->status != ETIMEDOUT ? -ev->status : EHOSTUNREACH;
	default:
		return ev->status < 0 ? -ev->status : ECONNREFUSED;
	}
}

static void rs_connect_failed(struct rsock *rs, int e)
{
	rs->state = RS_CONNECT_ERROR;
	rs->err = e;
}

static void rs_start_connect(struct rsock *rs)
{
	struct rdma_conn_param param = {0};
	uint8_t pdata[RS_CONN_DATA_LEN];

	if (rs_create_ep(rs)) {
		rs_connect_failed(rs, errno ? errno : ENOMEM);
		return;
	}
	rs_format_conn(rs, pdata);
	param.private_data = pdata;
	param.private_data_len = sizeof(pdata);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(rs->id, &param)) {
		rs_connect_failed(rs, errno);
		return;
	}
	rs->state = RS_CONNECTING;
}

/* One CM event on a non-listening rsocket. */
static void rs_on_cm_event(struct rsock *rs, struct rdma_cm_event *ev)
{
	switch (rs->state) {
	case RS_RESOLVE_ADDR:
		if (ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
			rs_connect_failed(rs, rs_event_errno(ev));
			break;
		}
		rs->state = RS_RESOLVE_ROUTE;
		if (rs->route && !rdma_set_option(rs->id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
						  rs->route, rs->route_len))
			break;
		if (rdma_resolve_route(rs->id, RS_RESOLVE_MS))
			rs_connect_failed(rs, errno);
		break;
	case RS_RESOLVE_ROUTE:
		if (ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED) {
			rs_connect_failed(rs, rs_event_errno(ev));
			break;
		}
		rs_start_connect(rs);
		break;
	case RS_CONNECTING:
		if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
			rs_connect_failed(rs, rs_event_errno(ev));
			break;
		}
		if (rs_save_conn(rs, ev->param.conn.private_data,
				 ev->param.conn.private_data_len)) {
			rs_connect_failed(rs, errno);
			rdma_disconnect(rs->id);
			break;
		}
		rs->state = RS_CONNECTED;
		rs->rdwr = RS_READABLE | RS_WRITABLE;
		break;
	case RS_ACCEPTING:
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			rs->state = RS_CONNECTED;
			rs->rdwr = RS_READABLE | RS_WRITABLE;
		} else if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			rs_fail(rs, ECONNABORTED);
		}
		break;
	case RS_CONNECTED:
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
			/* A DREQ with no RS_CTRL_DISCONNECT before it. */
			rs->rdwr = 0;
			rs->state = RS_DISCONNECTED;
		}
		break;
	default:
		break;
	}
}

/* Handle the CM events there are; how many. */
static int rs_cm_events(struct rsock *rs)
{
	struct rdma_cm_event *ev;
	int n = 0;

	if (rs->state == RS_LISTEN || !rs->ch)
		return 0;
	rs->cm_check = false;
	while (!rdma_get_cm_event(rs->ch, &ev)) {
		rs_on_cm_event(rs, ev);
		rdma_ack_cm_event(ev);
		n++;
	}
	return n;
}

static void rs_send_iomaps(struct rsock *rs);

/* A reference given back with lock just taken: false (EBADF) when rclosed. */
static bool rs_unref_locked(struct rsock *rs)
{
	if (atomic_fetch_sub(&rs->refs, 1) == 1 && rs->closed)
		pthread_cond_signal(&rs->idle);
	if (!rs->closed && !(rs->closing && !pthread_equal(rs->closer, pthread_self())))
		return true;
	errno = EBADF;
	return false;
}

/*
 * Something happened that the socket's other blocked threads may wait
 * for: they look again (rs->poller's comment).
 */
static void rs_wake_others(struct rsock *rs)
{
	if (rs->waiters)
		pthread_cond_broadcast(&rs->progress);
	if (rs->poller && rs->poller_fd >= 0) /* not this thread: it holds the lock */
		(void)eventfd_write(rs->poller_fd, 1);
	if (rs->rpoll_armed && rs->wake_fd >= 0)
		(void)eventfd_write(rs->wake_fd, 1);
}

/*
 * Everything that can happen without waiting.  A connected socket reads
 * its CM channel only when told it has something (cm_check: its fd woke a
 * wait, or rpoll asks): the data path then costs no extra system call.
 */
static void rs_keepalive_post(struct rsock *rs);

static void rs_progress(struct rsock *rs)
{
	int n = 0;

	if (atomic_load_explicit(&rs->ka_due, memory_order_relaxed) &&
	    atomic_exchange(&rs->ka_due, false))
		rs_keepalive_post(rs);
	if (rs->state != RS_CONNECTED || rs->cm_check)
		n += rs_cm_events(rs);
	if (rs->cq) {
		n += rs_poll_cq(rs);
		rs_update_credits(rs);
		if (rs->iomap_pending && rs->state == RS_CONNECTED)
			rs_send_iomaps(rs);
	}
	if (n)
		rs_wake_others(rs);
}

/*
 * Wait (rs->lock held, dropped while asleep) until test(rs).  0, or -1
 * with EAGAIN when non-blocking, or errno of a failed poll.
 */
static int rs_wait(struct rsock *rs, bool nonblock, bool (*test)(const struct rsock *),
		   int timeout_ms)
{
	uint64_t spin_end = 0, deadline = timeout_ms >= 0 ? now_ns() + timeout_ms * 1000000ull : 0;

	for (;;) {
		struct pollfd p[3];
		int n = 0, to = -1, chi = -1;

		rs_progress(rs);
		if (test(rs))
			return 0;
		if (nonblock)
			return cma_err(EAGAIN);
		if (rs->poller) {
			/* Another thread sleeps on the channels: it wakes this one. */
			struct timespec ts;
			int rc;

			if (deadline && now_ns() >= deadline)
				return cma_err(ETIMEDOUT);
			ts.tv_sec = (time_t)(deadline / 1000000000u);
			ts.tv_nsec = (long)(deadline % 1000000000u);
			rs->waiters++;
			atomic_fetch_add(&rs->refs, 1); /* rclose waits for it */
			if (deadline)
				rc = pthread_cond_timedwait(&rs->progress, &rs->lock, &ts);
			else
				rc = pthread_cond_wait(&rs->progress, &rs->lock);
			(void)rc;
			rs->waiters--;
			if (!rs_unref_locked(rs))
				return -1; /* rclosed meanwhile: EBADF */
			continue;
		}
		if (rs->cq && rs->state >= RS_CONNECTING) {
			if (!spin_end) {
				long long us = rs_conf()->polling_time_us;

				spin_end = now_ns() + (us >= 0 ? (uint64_t)us * 1000 : RS_SPIN_NS);
			}
			if (now_ns() < spin_end)
				continue;
			if (!rs->cq_armed) {
				ibv_req_notify_cq(rs->cq, 0);
				rs->cq_armed = true;
				continue; /* look again: a completion may have raced */
			}
			p[n++] = (struct pollfd){.fd = rs->cc->fd, .events = POLLIN};
		}
		if (rs->ch) {
			chi = n;
			p[n++] = (struct pollfd){.fd = rs->ch->fd, .events = POLLIN};
		}
		if (rs->poller_fd < 0)
			rs->poller_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rs->poller_fd >= 0)
			p[n++] = (struct pollfd){.fd = rs->poller_fd, .events = POLLIN};
		if (deadline) {
			uint64_t t = now_ns();

			if (t >= deadline)
				return cma_err(ETIMEDOUT);
			to = (int)((deadline - t) / 1000000) + 1;
		}
		atomic_fetch_add(&rs->refs, 1); /* rclose waits for it */
		rs->poller = true;
		pthread_mutex_unlock(&rs->lock);
		if (poll(p, n, to) < 0 && errno != EINTR) {
			int e = errno;

			pthread_mutex_lock(&rs->lock);
			rs->poller = false;
			rs_wake_others(rs); /* one of them sleeps on the channels now */
			if (!rs_unref_locked(rs))
				return -1;
			return cma_err(e);
		}
		pthread_mutex_lock(&rs->lock);
		rs->poller = false;
		rs_wake_others(rs); /* one of them sleeps on the channels now */
		if (!rs_unref_locked(rs))
			return -1; /* rclosed meanwhile: EBADF */
		if (chi >= 0 && (p[chi].revents & (POLLIN | POLLERR | POLLHUP)))
			rs->cm_check = true;
		if (rs->poller_fd >= 0)
			(void)eventfd_read(rs->poller_fd, &(eventfd_t){0}); /* looked at next */
		rs_drain_cq_events(rs);
		spin_end = 0;
	}
}

static bool rs_connect_done(const struct rsock *rs)
{
	return rs->state != RS_RESOLVE_ADDR && rs->state != RS_RESOLVE_ROUTE &&
	       rs->state != RS_CONNECTING && rs->state != RS_ACCEPTING;
}

/* Calls that move data first finish a connection under way. */
static int rs_need_connected(struct rsock *rs, int flags)
{
	if (rs->state == RS_INIT || rs->state == RS_BOUND || rs->state == RS_LISTEN)
		return cma_err(ENOTCONN);
	if (!rs_connect_done(rs) && rs_wait(rs, rs_nonblocking(rs, flags), rs_connect_done, -1))
		return -1;
	if (rs->state == RS_CONNECT_ERROR) {
		int e = rs->err ? rs->err : ECONNREFUSED;

		return cma_err(e);
	}
	return 0;
}

/* ---- the calls ---- */

static struct rsock *rs_lock(int fd)
{
	struct rsock *rs;

	/* Found and counted at once: rclose takes it out under this lock. */
	pthread_mutex_lock(&rs_table_lock);
	rs = rs_get(fd);
	if (rs)
		atomic_fetch_add(&rs->refs, 1);
	pthread_mutex_unlock(&rs_table_lock);
	if (!rs) {
		errno = EBADF;
		return NULL;
	}
	pthread_mutex_lock(&rs->lock);
	if (!rs_unref_locked(rs)) {
		pthread_mutex_unlock(&rs->lock);
		errno = EBADF;
		return NULL;
	}
	return rs;
}

#define RS_UNLOCK_RET(rs, v)                                                                       \
	do {                                                                                       \
		int e_ = errno;                                                                    \
		pthread_mutex_unlock(&(rs)->lock);                                                 \
		errno = e_;                                                                        \
		return (v);                                                                        \
	} while (0)

CMA_EXPORT int rsocket(int domain, int type, int protocol)
{
	struct rsock *rs;

	if (domain != AF_INET && domain != AF_INET6 && domain != AF_IB)
		return cma_err(EAFNOSUPPORT);
	if (type == SOCK_DGRAM)
		return ds_socket(domain, protocol);
	if (type != SOCK_STREAM || (protocol && protocol != IPPROTO_TCP))
		return cma_err(ENOTSUP);
	rs = rs_alloc(NULL);
	if (!rs)
		return cma_err(ENOMEM);
	rs->domain = domain;
	if (rs_open_channel(rs) || rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP) ||
	    rs_insert(rs)) {
		int e = errno;

		rs_free(rs);
		return cma_err(e);
	}
	return rs->fd;
}

CMA_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsock *rs;
	int ret;

	if (ds_is_dgram(socket))
		return ds_bind(socket, addr, addrlen);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (!addr || addrlen < sizeof(sa_family_t)) {
		errno = EINVAL;
		RS_UNLOCK_RET(rs, -1);
	}
	if (rs->state != RS_INIT) {
		errno = EINVAL;
		RS_UNLOCK_RET(rs, -1);
	}
	ret = rdma_bind_addr(rs->id, (struct sockaddr *)addr);
	if (!ret)
		rs->state = RS_BOUND;
	RS_UNLOCK_RET(rs, ret);
}

CMA_EXPORT int rlisten(int socket, int backlog)
{
	struct rsock *rs;
	int ret = 0;

	if (ds_is_dgram(socket))
		return cma_err(EOPNOTSUPP);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (rs->state == RS_INIT || rs->state == RS_BOUND) {
		ret = rdma_listen(rs->id, backlog);
		if (!ret)
			rs->state = RS_LISTEN;
	} else if (rs->state != RS_LISTEN) {
		errno = EINVAL;
		ret = -1;
	}
	RS_UNLOCK_RET(rs, ret);
}

static void rs_copy_addr(struct sockaddr *dst, socklen_t *len, const struct sockaddr *src)
{
	socklen_t n = cma_addr_len(src);

	if (!dst || !len)
		return;
	memcpy(dst, src, *len < n ? *len : n);
	*len = n;
}

/* Take one CONNECT_REQUEST off the listener: 1 when one was taken. */
static int rs_take_request(struct rsock *ls, struct rsock **out)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param param = {0}, req;
	struct rdma_cm_id *id;
	uint8_t pdata[RS_CONN_DATA_LEN], cdata[CMA_MAX_PRIVATE_DATA];
	size_t clen;
	struct rsock *rs;
	int e;

	if (rdma_get_cm_event(ls->ch, &ev))
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return 0;
	}
	id = ev->id;
	req = ev->param.conn;
	clen = req.private_data_len; /* a uint8_t: fits cdata */
	if (clen)
		memcpy(cdata, req.private_data, clen);
	rdma_ack_cm_event(ev);

	rs = rs_alloc(ls);
	if (!rs) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return 0;
	}
	rs->id = id;
	id->context = rs;
	if (rs_open_channel(rs) || rdma_migrate_id(id, rs->ch) || rs_create_ep(rs) ||
	    rs_save_conn(rs, cdata, clen)) {
		e = errno;
		rdma_reject(id, NULL, 0);
		rs_free(rs);
		errno = e;
		return 0;
	}
	rs_format_conn(rs, pdata);
	param.private_data = pdata;
	param.private_data_len = sizeof(pdata);
	param.responder_resources = req.initiator_depth;
	param.initiator_depth = req.responder_resources;
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param) || rs_insert(rs)) {
		rs_free(rs);
		return 0;
	}
	rs->state = RS_ACCEPTING;
	*out = rs;
	return 1;
}

CMA_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *ls, *rs = NULL;
	int r;

	if (ds_is_dgram(socket))
		return cma_err(EOPNOTSUPP);
	ls = rs_lock(socket);
	if (!ls)
		return -1;
	if (ls->state != RS_LISTEN) {
		errno = EINVAL;
		RS_UNLOCK_RET(ls, -1);
	}
	for (;;) {
		r = rs_take_request(ls, &rs);
		if (r > 0)
			break;
		if (r < 0 && errno != EAGAIN)
			RS_UNLOCK_RET(ls, -1);
		if (r < 0) {
			struct pollfd p = {.fd = ls->ch->fd, .events = POLLIN};

			if (ls->fd_flags & O_NONBLOCK) {
				errno = EAGAIN;
				RS_UNLOCK_RET(ls, -1);
			}
			atomic_fetch_add(&ls->refs, 1); /* rclose waits for it */
			pthread_mutex_unlock(&ls->lock);
			if (poll(&p, 1, -1) < 0 && errno != EINTR) {
				int e = errno;

				pthread_mutex_lock(&ls->lock);
				if (rs_unref_locked(ls))
					errno = e;
				RS_UNLOCK_RET(ls, -1);
			}
			pthread_mutex_lock(&ls->lock);
			if (!rs_unref_locked(ls))
				RS_UNLOCK_RET(ls, -1); /* rclosed meanwhile: EBADF */
		}
	}
	pthread_mutex_unlock(&ls->lock);
	/* Inherited from the listener; registered with no lock held. */
	if ((rs->so_opts & (1u << SO_KEEPALIVE)) &&
	    rs_keepalive_set(rs->fd, (unsigned)rs->keepidle))
		rs->so_opts &= ~(1u << SO_KEEPALIVE);
	if (addr && addrlen)
		rs_copy_addr(addr, addrlen, &rs->id->route.addr.dst_addr);
	return rs->fd;
}

CMA_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsock *rs;

	if (ds_is_dgram(socket))
		return ds_connect(socket, addr, addrlen);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (!addr || addrlen < sizeof(sa_family_t)) {
		errno = EINVAL;
		RS_UNLOCK_RET(rs, -1);
	}
	switch (rs->state) {
	case RS_INIT:
	case RS_BOUND:
		break;
	case RS_RESOLVE_ADDR:
	case RS_RESOLVE_ROUTE:
	case RS_CONNECTING:
		errno = EALREADY;
		RS_UNLOCK_RET(rs, -1);
	case RS_CONNECTED:
	case RS_ACCEPTING:
		errno = EISCONN;
		RS_UNLOCK_RET(rs, -1);
	default:
		errno = EINVAL;
		RS_UNLOCK_RET(rs, -1);
	}
	rs->err = 0;
	if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr, RS_RESOLVE_MS))
		RS_UNLOCK_RET(rs, -1);
	rs->state = RS_RESOLVE_ADDR;
	if (rs->fd_flags & O_NONBLOCK) {
		rs_progress(rs);
		errno = EINPROGRESS;
		RS_UNLOCK_RET(rs, -1);
	}
	if (rs_wait(rs, false, rs_connect_done, -1))
		RS_UNLOCK_RET(rs, -1);
	if (rs->state == RS_CONNECT_ERROR) {
		errno = rs->err;
		rs->err = 0;
		RS_UNLOCK_RET(rs, -1);
	}
	RS_UNLOCK_RET(rs, 0);
}

/* ---- sending ---- */

static bool rs_can_send(const struct rsock *rs)
{
	return rs->sqe_avail > 0 && rs->sbuf_avail >= RS_SNDLOWAT && rs->sseq_no != rs->sseq_comp &&
	       rs->target_sgl[rs->target_sge].length != 0;
}

static bool rs_send_ready(const struct rsock *rs)
{
	return (rs->state == RS_CONNECTED && rs_can_send(rs)) || !(rs->rdwr & RS_WRITABLE);
}

static int rs_write_errno(const struct rsock *rs)
{
	return rs->shut_wr ? EPIPE : ECONNRESET;
}

/* A cursor over an iovec array. */
struct rs_iov {
	const struct iovec *iov;
	int cnt;
	size_t off;
};

static void rs_iov_copy_out(struct rs_iov *c, uint8_t *dst, size_t len)
{
	while (len && c->cnt) {
		size_t n = c->iov->iov_len - c->off;

		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)c->iov->iov_base + c->off, n);
		dst += n;
		len -= n;
		c->off += n;
		if (c->off == c->iov->iov_len) {
			c->iov++;
			c->cnt--;
			c->off = 0;
		}
	}
}

static void rs_iov_skip_empty(struct rs_iov *c)
{
	while (c->cnt && c->off == c->iov->iov_len) {
		c->iov++;
		c->cnt--;
		c->off = 0;
	}
}

/*
 * Post one chunk (<= len) of the cursor's data: an RDMA WRITE with
 * immediate (data != NULL: to the peer's receive buffer) or a plain one
 * (iom: riowrite at `offset`).  Returns the bytes posted, 0 on failure.
 */
static uint32_t rs_post_chunk(struct rsock *rs, struct rs_iov *c, size_t len, uint32_t *olen,
			      const volatile struct rs_iomap *iom, uint64_t offset)
{
	volatile struct rs_sge *t = &rs->target_sgl[rs->target_sge];
	uint32_t xfer = len > *olen ? *olen : (uint32_t)len;
	struct ibv_sge sge;
	int flags = 0, r;
	uint64_t raddr;
	uint32_t rkey;

	if (*olen < RS_MAX_XFER)
		*olen <<= 1;
	if (xfer > rs->sbuf_avail)
		xfer = rs->sbuf_avail;
	if (iom) {
		uint64_t end = iom->offset + iom->sge.length;

		if (xfer > end - offset)
			xfer = (uint32_t)(end - offset);
	} else if (xfer > t->length) {
		xfer = t->length;
	}
	rs_iov_skip_empty(c);
	if (xfer <= rs->sq_inline && c->cnt && c->iov->iov_len - c->off >= xfer) {
		/* Inline straight from the caller's buffer. */
		sge.addr = (uintptr_t)c->iov->iov_base + c->off;
		sge.lkey = 0;
		flags = IBV_SEND_INLINE;
		c->off += xfer;
	} else {
		if (xfer > rs->sbuf_size - rs->soff)
			xfer = rs->sbuf_size - rs->soff;
		rs_iov_copy_out(c, rs->sbuf + rs->soff, xfer);
		sge.addr = (uintptr_t)(rs->sbuf + rs->soff);
		sge.lkey = rs->smr->lkey;
		if (xfer <= rs->sq_inline)
			flags = IBV_SEND_INLINE;
		rs->soff += xfer;
		if (rs->soff == rs->sbuf_size)
			rs->soff = 0;
	}
	sge.length = xfer;
	rs->sqe_avail--;
	rs->sbuf_avail -= xfer;
	if (iom) {
		raddr = iom->sge.addr + (offset - iom->offset);
		r = rs_post_write(rs, &sge, rs_msg(RS_OP_WRITE, xfer), flags, raddr, iom->sge.key);
	} else {
		raddr = t->addr;
		rkey = t->key;
		t->addr += xfer;
		t->length -= xfer;
		if (!t->length && ++rs->target_sge == RS_SGL_SIZE)
			rs->target_sge = 0;
		rs->sseq_no++;
		r = rs_post_write_imm(rs, &sge, 1, rs_msg(RS_OP_DATA, xfer), flags, raddr, rkey);
	}
	if (r) {
		rs_fail(rs, errno ? errno : EIO);
		return 0;
	}
	return xfer;
}

/* Write the queued riomap() entries into the peer's iomap area. */
static void rs_send_iomaps(struct rsock *rs)
{
	for (struct rs_iomr *m = rs->iomaps; m; m = m->next) {
		struct rs_iomap *e = &m->wire;
		struct ibv_sge sge;
		int flags = 0;

		if (!m->pending)
			continue;
		if (!rs_can_send(rs))
			return;
		e->offset = m->offset;
		e->sge.addr = (uintptr_t)m->addr;
		e->sge.key = m->mr->rkey;
		e->sge.length = (uint32_t)m->len;
		if (rs->swap)
			rs_iomap_swap(e);
		sge.addr = (uintptr_t)e;
		sge.lkey = m->wmr->lkey;
		if (rs->sq_inline >= RS_IOMAP_LEN)
			flags = IBV_SEND_INLINE;
		sge.length = RS_IOMAP_LEN;
		rs->sseq_no++;
		rs->sqe_avail--;
		rs->sbuf_avail -= RS_IOMAP_LEN;
		if (rs_post_write_imm(rs, &sge, 1, rs_msg(RS_OP_IOMAP_SGL, (uint32_t)m->slot),
				      flags,
				      rs->remote_iomap.addr + (uint64_t)m->slot * RS_IOMAP_LEN,
				      rs->remote_iomap.key)) {
			rs_fail(rs, errno);
			return;
		}
		m->pending = false;
	}
	rs->iomap_pending = false;
}

static ssize_t rs_sendv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	struct rsock *rs;
	struct rs_iov c = {iov, iovcnt, 0};
	size_t len = 0, left;
	uint32_t olen = RS_OLAP_START;
	int ret = 0;

	if (ds_is_dgram(socket))
		return ds_sendmsg(socket, iov, iovcnt, flags, NULL, 0);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (iovcnt < 0 || (iovcnt && !iov)) {
		errno = EINVAL;
		RS_UNLOCK_RET(rs, -1);
	}
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (rs_need_connected(rs, flags)) {
		if (errno == EINPROGRESS)
			errno = EAGAIN;
		RS_UNLOCK_RET(rs, -1);
	}
	if (rs->iomap_pending)
		rs_send_iomaps(rs);
	for (left = len; left;) {
		uint32_t n;

		if (!(rs->rdwr & RS_WRITABLE) || rs->state != RS_CONNECTED) {
			errno = rs_write_errno(rs);
			ret = -1;
			break;
		}
		if (!rs_can_send(rs)) {
			rs_progress(rs);
			if (!rs_can_send(rs)) {
				ret = rs_wait(rs, rs_nonblocking(rs, flags), rs_send_ready, -1);
				if (ret)
					break;
				continue;
			}
		}
		n = rs_post_chunk(rs, &c, left, &olen, NULL, 0);
		if (!n) {
			errno = ECONNRESET;
			ret = -1;
			break;
		}
		left -= n;
	}
	if (ret && left == len)
		RS_UNLOCK_RET(rs, -1);
	pthread_mutex_unlock(&rs->lock);
	return (ssize_t)(len - left);
}

CMA_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec iov = {(void *)buf, len};

	return rs_sendv(socket, &iov, 1, flags);
}

CMA_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			   const struct sockaddr *dest_addr, socklen_t addrlen)
{
	if (ds_is_dgram(socket)) {
		struct iovec iov = {(void *)buf, len};

		return ds_sendmsg(socket, &iov, 1, flags, dest_addr, addrlen);
	}
	if (dest_addr || addrlen) {
		if (rs_get(socket))
			return cma_err(EISCONN);
		return cma_err(EBADF);
	}
	return rsend(socket, buf, len, flags);
}

CMA_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (!msg)
		return cma_err(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return cma_err(ENOTSUP);
	if (ds_is_dgram(socket))
		return ds_sendmsg(socket, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
				  msg->msg_namelen);
	return rs_sendv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

CMA_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

CMA_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_sendv(socket, iov, iovcnt, 0);
}

/* ---- receiving ---- */

static bool rs_have_rdata(const struct rsock *rs)
{
	return rs->rmsg && rs->rmsg_head != rs->rmsg_tail;
}

static bool rs_recv_ready(const struct rsock *rs)
{
	return rs_have_rdata(rs) || !(rs->rdwr & RS_READABLE) ||
	       (rs->state != RS_CONNECTED && rs->state != RS_ACCEPTING);
}

/* Copy up to len queued bytes into the cursor; consume unless peek. */
static size_t rs_copy_in(struct rsock *rs, struct rs_iov *c, size_t len, bool peek)
{
	uint32_t head = rs->rmsg_head, off = rs->rbuf_off, first = 0;
	size_t done = 0;

	while (done < len && head != rs->rmsg_tail && c->cnt) {
		uint32_t avail = rs->rmsg[head] - first; /* first: peeked part */
		size_t n = len - done;
		uint32_t end = rs->rbuf_size - off;

		if (n > avail)
			n = avail;
		rs_iov_skip_empty(c);
		if (!c->cnt)
			break;
		if (n > c->iov->iov_len - c->off)
			n = c->iov->iov_len - c->off;
		if (n > end)
			n = end;
		memcpy((uint8_t *)c->iov->iov_base + c->off, rs->rbuf + off, n);
		c->off += n;
		off += (uint32_t)n;
		if (off == rs->rbuf_size)
			off = 0;
		done += n;
		if (peek) {
			/* Walk the messages without touching them. */
			if (n == avail) {
				head = (head + 1) % rs->rmsg_size;
				first = 0;
			} else {
				first += (uint32_t)n;
			}
			continue;
		}
		rs->rbuf_avail += (uint32_t)n;
		if (n == avail) {
			head = (head + 1) % rs->rmsg_size;
			rs->rseq_no++;
		} else {
			rs->rmsg[head] -= (uint32_t)n;
		}
	}
	if (!peek) {
		rs->rmsg_head = head;
		rs->rbuf_off = off;
	}
	return done;
}

static ssize_t rs_recvv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	struct rsock *rs;
	struct rs_iov c = {iov, iovcnt, 0};
	size_t len = 0, done = 0;

	if (ds_is_dgram(socket))
		return ds_recvmsg(socket, iov, iovcnt, flags, NULL, NULL, NULL);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (iovcnt < 0 || (iovcnt && !iov)) {
		errno = EINVAL;
		RS_UNLOCK_RET(rs, -1);
	}
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (rs_need_connected(rs, flags)) {
		if (errno == EINPROGRESS)
			errno = EAGAIN;
		RS_UNLOCK_RET(rs, -1);
	}
	if (!len)
		RS_UNLOCK_RET(rs, 0);
	for (;;) {
		if (!rs_have_rdata(rs)) {
			rs_progress(rs);
			if (!rs_have_rdata(rs)) {
				if (!(rs->rdwr & RS_READABLE) || rs->state != RS_CONNECTED) {
					if (rs->state == RS_ERROR && !done) {
						errno = rs->err ? rs->err : ECONNRESET;
						RS_UNLOCK_RET(rs, -1);
					}
					break; /* end of stream */
				}
				if (rs_wait(rs,
					    rs_nonblocking(rs, flags) ||
						(done && !(flags & MSG_WAITALL)),
					    rs_recv_ready, -1)) {
					if (done)
						break;
					RS_UNLOCK_RET(rs, -1);
				}
				continue;
			}
		}
		done += rs_copy_in(rs, &c, len - done, flags & MSG_PEEK);
		if (done == len || (flags & MSG_PEEK) || !(flags & MSG_WAITALL))
			break;
	}
	rs_update_credits(rs);
	pthread_mutex_unlock(&rs->lock);
	return (ssize_t)done;
}

CMA_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec iov = {buf, len};

	return rs_recvv(socket, &iov, 1, flags);
}

CMA_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			     struct sockaddr *src_addr, socklen_t *addrlen)
{
	ssize_t n;

	if (ds_is_dgram(socket)) {
		struct iovec iov = {buf, len};

		return ds_recvmsg(socket, &iov, 1, flags, src_addr, addrlen, NULL);
	}
	n = rrecv(socket, buf, len, flags);

	if (n > 0 && src_addr)
		rgetpeername(socket, src_addr, addrlen);
	return n;
}

CMA_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (!msg)
		return cma_err(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return cma_err(ENOTSUP);
	msg->msg_flags = 0;
	if (ds_is_dgram(socket))
		return ds_recvmsg(socket, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
				  msg->msg_name ? &msg->msg_namelen : NULL, &msg->msg_flags);
	return rs_recvv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

CMA_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

CMA_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_recvv(socket, iov, iovcnt, 0);
}

/* ---- shutdown and close ---- */

static bool rs_ctrl_ready(const struct rsock *rs)
{
	return rs_ctrl_avail(rs) || rs->state != RS_CONNECTED;
}

static bool rs_sends_done(const struct rsock *rs)
{
	return (rs->sqe_avail == rs->sq_size - RS_CTRL_WIN &&
		rs->ctrl_seq == rs->ctrl_max - RS_CTRL_WIN) ||
	       rs->state == RS_ERROR;
}

/* rs->lock held. */
static int rs_shutdown_locked(struct rsock *rs, int how, int wait_ms)
{
	uint32_t ctrl;

	if (rs->state != RS_CONNECTED && rs->state != RS_DISCONNECTED && rs->state != RS_ACCEPTING)
		return cma_err(ENOTCONN);
	if (rs->state == RS_ACCEPTING && rs_wait(rs, false, rs_connect_done, wait_ms))
		return -1;
	if (how == SHUT_WR || how == SHUT_RDWR)
		rs->shut_wr = true;
	if (rs->state != RS_CONNECTED)
		goto out;
	if (how == SHUT_RDWR) {
		rs->rdwr = 0;
		ctrl = RS_CTRL_DISCONNECT;
	} else if (how == SHUT_WR) {
		rs->rdwr &= ~RS_WRITABLE;
		ctrl = (rs->rdwr & RS_READABLE) ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
	} else if (how == SHUT_RD) {
		rs->rdwr &= ~RS_READABLE;
		if (rs->rdwr & RS_WRITABLE)
			return 0;
		ctrl = RS_CTRL_DISCONNECT;
	} else {
		return cma_err(EINVAL);
	}
	if (!rs_ctrl_avail(rs))
		rs_wait(rs, false, rs_ctrl_ready, wait_ms);
	if (rs->state == RS_CONNECTED && rs_ctrl_avail(rs) && !rs->ctrl_closed) {
		if (ctrl == RS_CTRL_DISCONNECT)
			rs->ctrl_closed = true;
		if (rs_post_ctrl(rs, rs_msg(RS_OP_CTRL, ctrl)))
			rs_fail(rs, errno);
	}
	rs_wait(rs, false, rs_sends_done, wait_ms);
	if (ctrl == RS_CTRL_DISCONNECT && rs->state == RS_CONNECTED)
		rs->state = RS_DISCONNECTED;
out:
	if (!rs->rdwr && rs->state == RS_DISCONNECTED)
		rdma_disconnect(rs->id);
	return 0;
}

CMA_EXPORT int rshutdown(int socket, int how)
{
	struct rsock *rs;
	int ret;

	if (ds_is_dgram(socket))
		return ds_shutdown(socket, how);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		RS_UNLOCK_RET(rs, -1);
	}
	ret = rs_shutdown_locked(rs, how, RS_CLOSE_WAIT_MS);
	RS_UNLOCK_RET(rs, ret);
}

CMA_EXPORT int rclose(int socket)
{
	struct rsock *rs;

	if (ds_is_dgram(socket))
		return ds_close(socket);
	if (repoll_is_set(socket))
		return repoll_close(socket);
	/* First: no keepalive may be running on it once it is freed. */
	rs_keepalive_del(socket);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	rs->closing = true;
	rs->closer = pthread_self();
	if (rs->state == RS_CONNECTED || rs->state == RS_ACCEPTING)
		rs_shutdown_locked(rs, SHUT_RDWR, RS_CLOSE_WAIT_MS);
	else if (rs->state == RS_DISCONNECTED || rs->state == RS_ERROR)
		rdma_disconnect(rs->id);
	/*
	 * No thread finds it after this; those that did, or sleep in
	 * rs_wait, are woken (its channel's eventfd, which they poll) and
	 * fail with EBADF before it is freed, as on a closed fd.
	 */
	rs_remove(rs);
	rs->closed = true;
	if (rs->ch) /* rpoll's sleepers too: they find it gone (POLLNVAL) */
		(void)eventfd_write(rs->ch->fd, 1);
	pthread_cond_broadcast(&rs->progress); /* rs_wait's other sleepers */
	while (atomic_load(&rs->refs))
		pthread_cond_wait(&rs->idle, &rs->lock);
	pthread_mutex_unlock(&rs->lock);
	rs_free(rs);
	return 0;
}

/* ---- addresses ---- */

CMA_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *rs;

	if (ds_is_dgram(socket))
		return ds_getpeername(socket, addr, addrlen);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (!addr || !addrlen) {
		errno = EFAULT;
		RS_UNLOCK_RET(rs, -1);
	}
	if (rs->state < RS_RESOLVE_ADDR || rs->state == RS_LISTEN) {
		errno = ENOTCONN;
		RS_UNLOCK_RET(rs, -1);
	}
	rs_copy_addr(addr, addrlen, &rs->id->route.addr.dst_addr);
	RS_UNLOCK_RET(rs, 0);
}

CMA_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *rs;
	struct sockaddr_storage ss;

	if (ds_is_dgram(socket))
		return ds_getsockname(socket, addr, addrlen);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (!addr || !addrlen) {
		errno = EFAULT;
		RS_UNLOCK_RET(rs, -1);
	}
	if (rs->state == RS_INIT && !rs->id->route.addr.src_addr.sa_family) {
		/* Unbound: the wildcard of the socket's family, port 0. */
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = (sa_family_t)rs->domain;
		rs_copy_addr(addr, addrlen, (struct sockaddr *)&ss);
	} else {
		rs_copy_addr(addr, addrlen, &rs->id->route.addr.src_addr);
	}
	RS_UNLOCK_RET(rs, 0);
}

/* ---- options ---- */

static int opt_int(const void *optval, socklen_t optlen, int *v)
{
	if (!optval || optlen < sizeof(int))
		return cma_err(EINVAL);
	memcpy(v, optval, sizeof(int));
	return 0;
}

static void opt_bit(uint32_t *set, int name, int on)
{
	if (name < 0 || name >= 32)
		return;
	if (on)
		*set |= 1u << name;
	else
		*set &= ~(1u << name);
}

static bool rs_has_ep(const struct rsock *rs)
{
	return rs->sbuf != NULL;
}

static int rs_setopt(struct rsock *rs, int level, int name, const void *val, socklen_t len)
{
	int v = 0;

	switch (level) {
	case SOL_SOCKET:
		switch (name) {
		case SO_REUSEADDR:
			if (opt_int(val, len, &v))
				return -1;
			/* Only before bind has it effect on the id; later it is a flag. */
			if (rs->state == RS_INIT)
				rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
						&v, sizeof(v));
			opt_bit(&rs->so_opts, name, v);
			return 0;
		case SO_RCVBUF:
		case SO_SNDBUF:
			if (opt_int(val, len, &v))
				return -1;
			if (v < 0)
				return cma_err(EINVAL);
			if (!rs_has_ep(rs)) {
				/* As Linux does: the buffer is twice the value asked. */
				uint32_t sz =
				    (uint32_t)v > (1u << 27) ? (1u << 28) : (uint32_t)v << 1;

				if (name == SO_RCVBUF)
					rs->rbuf_size = sz;
				else
					rs->sbuf_size = sz < 2 * RS_SNDLOWAT ? 2 * RS_SNDLOWAT : sz;
			}
			return 0;
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			if (opt_int(val, len, &v))
				return -1;
			opt_bit(&rs->so_opts, name, v);
			return 0;
		case SO_LINGER: {
			struct linger l;

			if (!val || len < sizeof(l))
				return cma_err(EINVAL);
			memcpy(&l, val, sizeof(l));
			opt_bit(&rs->so_opts, name, l.l_onoff);
			return 0;
		}
		default:
			return cma_err(ENOTSUP);
		}
	case IPPROTO_TCP:
		switch (name) {
		case TCP_NODELAY:
			if (opt_int(val, len, &v))
				return -1;
			opt_bit(&rs->tcp_opts, name, v);
			return 0;
		case TCP_KEEPIDLE:
			if (opt_int(val, len, &v))
				return -1;
			if (v <= 0)
				return cma_err(EINVAL);
			rs->keepidle = v;
			return 0;
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_MAXSEG:
			return opt_int(val, len, &v); /* accepted, no effect on RC */
		default:
			return cma_err(ENOTSUP);
		}
	case IPPROTO_IPV6:
		if (name != IPV6_V6ONLY)
			return cma_err(ENOTSUP);
		if (opt_int(val, len, &v))
			return -1;
		if (rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v, sizeof(v)))
			return -1;
		opt_bit(&rs->ipv6_opts, name, v);
		return 0;
	case SOL_RDMA:
		if (rs->state >= RS_RESOLVE_ADDR && rs->state != RS_LISTEN)
			return cma_err(EINVAL);
		if (name == RDMA_ROUTE) {
			void *copy;

			if (!val || !len || len % sizeof(struct ibv_path_data))
				return cma_err(EINVAL);
			copy = malloc(len);
			if (!copy)
				return cma_err(ENOMEM);
			memcpy(copy, val, len);
			free(rs->route);
			rs->route = copy;
			rs->route_len = len;
			return 0;
		}
		if (opt_int(val, len, &v))
			return -1;
		if (v < 0)
			return cma_err(EINVAL);
		switch (name) {
		case RDMA_SQSIZE:
			rs->sq_size = (uint16_t)(v > RS_QP_MAX ? RS_QP_MAX : v);
			return 0;
		case RDMA_RQSIZE:
			rs->rq_size = (uint16_t)(v > RS_QP_MAX ? RS_QP_MAX : v);
			return 0;
		case RDMA_INLINE:
			rs->sq_inline = (uint16_t)(v > RS_QP_MAX ? RS_QP_MAX : v);
			return 0;
		case RDMA_IOMAPSIZE:
			rs->iomap_size = rs_scale_to_value(rs_value_to_scale((uint32_t)v));
			return 0;
		default:
			return cma_err(ENOTSUP);
		}
	default:
		return cma_err(ENOTSUP);
	}
}

CMA_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	struct rsock *rs;
	int ret;

	if (ds_is_dgram(socket))
		return ds_setsockopt(socket, level, optname, optval, optlen);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	ret = rs_setopt(rs, level, optname, optval, optlen);
	if (!ret && ((level == SOL_SOCKET && optname == SO_KEEPALIVE) ||
		     (level == IPPROTO_TCP && optname == TCP_KEEPIDLE))) {
		bool on = rs->so_opts & (1u << SO_KEEPALIVE);
		unsigned idle = (unsigned)rs->keepidle;
		int rc;

		/* The service thread takes its lock before ours: ours goes first. */
		pthread_mutex_unlock(&rs->lock);
		if (!on) {
			rs_keepalive_del(socket);
			return 0;
		}
		rc = rs_keepalive_set(socket, idle);
		return rc ? cma_err(-rc) : 0;
	}
	RS_UNLOCK_RET(rs, ret);
}

/*
 * A zero-length RDMA WRITE, as rdma-core sends (RS_CTRL_KEEPALIVE marks it
 * as a control message of our own); lock held.
 */
static void rs_keepalive_post(struct rsock *rs)
{
	if (rs->state == RS_CONNECTED && rs->id->qp && rs_ctrl_avail(rs)) {
		rs->ctrl_seq++;
		if (rs_post_write(rs, NULL, rs_msg(RS_OP_CTRL, RS_CTRL_KEEPALIVE), 0, 0, 0))
			rs_fail(rs, errno);
	}
}

/*
 * From the keepalive thread, which must not wait behind a busy socket:
 * when another thread holds the lock, that thread posts the keepalive at
 * its next progress (ka_due).
 */
void rs_keepalive_send(int fd)
{
	struct rsock *rs = rs_get(fd);

	if (!rs)
		return;
	if (pthread_mutex_trylock(&rs->lock)) {
		atomic_store(&rs->ka_due, true);
		return;
	}
	atomic_store_explicit(&rs->ka_due, false, memory_order_relaxed);
	rs_keepalive_post(rs);
	pthread_mutex_unlock(&rs->lock);
}

static int put_int(void *optval, socklen_t *optlen, int v)
{
	if (!optval || !optlen || *optlen < sizeof(int))
		return cma_err(EINVAL);
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}

static int rs_getopt(struct rsock *rs, int level, int name, void *val, socklen_t *len)
{
	switch (level) {
	case SOL_SOCKET:
		switch (name) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			return put_int(val, len, !!(rs->so_opts & (1u << name)));
		case SO_RCVBUF:
			return put_int(val, len, (int)rs->rbuf_size);
		case SO_SNDBUF:
			return put_int(val, len, (int)rs->sbuf_size);
		case SO_ERROR: {
			int e = rs->err;

			if (put_int(val, len, e))
				return -1;
			rs->err = 0;
			return 0;
		}
		case SO_TYPE:
			return put_int(val, len, SOCK_STREAM);
		case SO_LINGER: {
			struct linger l = {!!(rs->so_opts & (1u << SO_LINGER)), 0};

			if (!val || !len || *len < sizeof(l))
				return cma_err(EINVAL);
			memcpy(val, &l, sizeof(l));
			*len = sizeof(l);
			return 0;
		}
		default:
			return cma_err(ENOTSUP);
		}
	case IPPROTO_TCP:
		switch (name) {
		case TCP_NODELAY:
			return put_int(val, len, !!(rs->tcp_opts & (1u << name)));
		case TCP_KEEPIDLE:
			return put_int(val, len, rs->keepidle);
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			return put_int(val, len, 1);
		case TCP_MAXSEG:
			return put_int(val, len,
				       rs->id->route.num_paths
					   ? 1 << (7 + rs->id->route.path_rec->mtu)
					   : 2048);
		default:
			return cma_err(ENOTSUP);
		}
	case IPPROTO_IPV6:
		if (name != IPV6_V6ONLY)
			return cma_err(ENOTSUP);
		return put_int(val, len, !!(rs->ipv6_opts & (1u << name)));
	case SOL_RDMA:
		switch (name) {
		case RDMA_SQSIZE:
			return put_int(val, len, rs->sq_size);
		case RDMA_RQSIZE:
			return put_int(val, len, rs->rq_size);
		case RDMA_INLINE:
			return put_int(val, len, rs->sq_inline);
		case RDMA_IOMAPSIZE:
			return put_int(val, len, (int)rs->iomap_size);
		case RDMA_ROUTE:
			if (!val || !len)
				return cma_err(EINVAL);
			if (rs->route) {
				if (*len < rs->route_len)
					return cma_err(EINVAL);
				memcpy(val, rs->route, rs->route_len);
				*len = (socklen_t)rs->route_len;
				return 0;
			}
			*len = 0; /* the route the CM resolved is not kept as path data */
			return 0;
		default:
			return cma_err(ENOTSUP);
		}
	default:
		return cma_err(ENOTSUP);
	}
}

CMA_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsock *rs;
	int ret;

	if (ds_is_dgram(socket))
		return ds_getsockopt(socket, level, optname, optval, optlen);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	ret = rs_getopt(rs, level, optname, optval, optlen);
	RS_UNLOCK_RET(rs, ret);
}

CMA_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct rsock *rs;
	va_list ap;
	int ret = 0;

	va_start(ap, cmd);
	if (ds_is_dgram(socket)) {
		/* Only the set commands carry an argument. */
		int arg = cmd == F_SETFL || cmd == F_SETFD ? va_arg(ap, int) : 0;

		va_end(ap);
		return ds_fcntl(socket, cmd, arg);
	}
	rs = rs_lock(socket);
	if (!rs) {
		va_end(ap);
		return -1;
	}
	switch (cmd) {
	case F_GETFL:
		ret = rs->fd_flags | O_RDWR;
		break;
	case F_SETFL:
		rs->fd_flags = va_arg(ap, int) & ~O_ACCMODE;
		break;
	case F_GETFD:
		ret = fcntl(rs->fd, F_GETFD);
		break;
	case F_SETFD:
		ret = fcntl(rs->fd, F_SETFD, va_arg(ap, int));
		break;
	default:
		errno = ENOTSUP;
		ret = -1;
		break;
	}
	va_end(ap);
	RS_UNLOCK_RET(rs, ret);
}

/* ---- riomap / riowrite ---- */

CMA_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsock *rs;
	struct rs_iomr *m;
	int access = IBV_ACCESS_LOCAL_WRITE, slot = -1;

	(void)flags;
	if (ds_is_dgram(socket))
		return (off_t)cma_err(EOPNOTSUPP);
	rs = rs_lock(socket);
	if (!rs)
		return -1;
	if (!buf || !len || (prot & ~(PROT_WRITE | PROT_NONE)) || !rs->id->pd ||
	    (rs->state != RS_CONNECTED && rs->state != RS_ACCEPTING)) {
		errno = EINVAL;
		RS_UNLOCK_RET(rs, (off_t)-1);
	}
	if (prot & PROT_WRITE) {
		if (!rs->slots && rs->remote_iomap.length) {
			rs->slots = calloc(rs->remote_iomap.length, sizeof(*rs->slots));
			if (!rs->slots) {
				errno = ENOMEM;
				RS_UNLOCK_RET(rs, (off_t)-1);
			}
		}
		for (uint32_t i = 0; i < rs->remote_iomap.length; i++)
			if (!rs->slots[i]) {
				slot = (int)i;
				break;
			}
		if (slot < 0) {
			errno = ENOMEM;
			RS_UNLOCK_RET(rs, (off_t)-1);
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		RS_UNLOCK_RET(rs, (off_t)-1);
	}
	m->mr = ibv_reg_mr(rs->id->pd, buf, len, access);
	if (m->mr && slot >= 0)
		m->wmr = ibv_reg_mr(rs->id->pd, &m->wire, sizeof(m->wire), IBV_ACCESS_LOCAL_WRITE);
	if (!m->mr || (slot >= 0 && !m->wmr)) {
		int e = errno;

		if (m->mr)
			ibv_dereg_mr(m->mr);
		free(m);
		errno = e;
		RS_UNLOCK_RET(rs, (off_t)-1);
	}
	m->addr = buf;
	m->len = len;
	m->offset = offset == -1 ? (uint64_t)(uintptr_t)buf : (uint64_t)offset;
	m->slot = slot;
	m->next = rs->iomaps;
	rs->iomaps = m;
	if (slot >= 0) {
		rs->slots[slot] = m;
		m->pending = true;
		rs->iomap_pending = true;
		if (rs->state == RS_CONNECTED)
			rs_send_iomaps(rs);
	}
	RS_UNLOCK_RET(rs, (off_t)m->offset);
}

CMA_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsock *rs = rs_lock(socket);

	if (!rs)
		return -1;
	for (struct rs_iomr **pm = &rs->iomaps, *m; (m = *pm); pm = &m->next) {
		if (m->addr != buf || m->len != len)
			continue;
		*pm = m->next;
		if (m->slot >= 0 && rs->slots)
			rs->slots[m->slot] = NULL;
		ibv_dereg_mr(m->mr);
		if (m->wmr)
			ibv_dereg_mr(m->wmr);
		free(m);
		rs->iomap_pending = false;
		for (m = rs->iomaps; m; m = m->next)
			rs->iomap_pending |= m->pending;
		RS_UNLOCK_RET(rs, 0);
	}
	errno = EINVAL;
	RS_UNLOCK_RET(rs, -1);
}

static const volatile struct rs_iomap *rs_find_iomap(const struct rsock *rs, uint64_t offset)
{
	for (uint32_t i = 0; i < rs->iomap_size; i++) {
		const volatile struct rs_iomap *e = &rs->target_iomap[i];

		if (e->sge.length && offset >= e->offset && offset < e->offset + e->sge.length)
			return e;
	}
	return NULL;
}

CMA_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsock *rs;
	struct iovec iov = {(void *)buf, count};
	struct rs_iov c = {&iov, 1, 0};
	const volatile struct rs_iomap *iom = NULL;
	uint32_t olen = RS_OLAP_START;
	uint64_t off = (uint64_t)offset;
	size_t left = count;
	int ret = 0;

	if (ds_is_dgram(socket))
		return (size_t)cma_err(EOPNOTSUPP);
	rs = rs_lock(socket);
	if (!rs)
		return (size_t)-1;
	if (rs_need_connected(rs, flags)) {
		if (errno == EINPROGRESS)
			errno = EAGAIN;
		RS_UNLOCK_RET(rs, (size_t)-1);
	}
	if (rs->iomap_pending)
		rs_send_iomaps(rs);
	while (left) {
		uint32_t n;

		if (!iom || off >= iom->offset + iom->sge.length) {
			iom = rs_find_iomap(rs, off);
			if (!iom) {
				if (left == count) {
					errno = EINVAL;
					ret = -1;
				}
				break;
			}
		}
		if (!(rs->rdwr & RS_WRITABLE) || rs->state != RS_CONNECTED) {
			errno = rs_write_errno(rs);
			ret = -1;
			break;
		}
		if (!rs_can_send(rs)) {
			ret = rs_wait(rs, rs_nonblocking(rs, flags), rs_send_ready, -1);
			if (ret)
				break;
			continue;
		}
		n = rs_post_chunk(rs, &c, left, &olen, iom, off);
		if (!n) {
			errno = ECONNRESET;
			ret = -1;
			break;
		}
		left -= n;
		off += n;
	}
	if (ret && left == count)
		RS_UNLOCK_RET(rs, (size_t)-1);
	pthread_mutex_unlock(&rs->lock);
	return count - left;
}

/* ---- rpoll support (lib/rsocket.h) ---- */

static short rs_revents(struct rsock *rs, short events)
{
	short rev = 0;

	switch (rs->state) {
	case RS_LISTEN: {
		struct pollfd p = {.fd = rs->ch->fd, .events = POLLIN};

		if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN))
			rev |= events & POLLIN;
		return rev;
	}
	case RS_INIT:
	case RS_BOUND:
		return 0;
	case RS_RESOLVE_ADDR:
	case RS_RESOLVE_ROUTE:
	case RS_CONNECTING:
	case RS_ACCEPTING:
		if (rs_have_rdata(rs))
			rev |= events & POLLIN;
		return rev;
	case RS_CONNECT_ERROR:
		return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	default:
		break;
	}
	if ((events & POLLIN) && rs_recv_ready(rs))
		rev |= POLLIN;
	if ((events & POLLOUT) && rs->state == RS_CONNECTED && (rs->rdwr & RS_WRITABLE) &&
	    rs_can_send(rs))
		rev |= POLLOUT;
	/*
	 * Hang-up or error only once the bytes that came before it are read:
	 * a peer's last data and its disconnect often arrive together, and
	 * the reader must see the data first (as TCP gives POLLIN before EOF).
	 */
	if (!rs_have_rdata(rs)) {
		if (rs->state == RS_DISCONNECTED && !(rs->rdwr & RS_READABLE))
			rev |= POLLHUP;
		if (rs->state == RS_ERROR)
			rev |= POLLERR;
	}
	return rev;
}

short rs_poll_check(int fd, short events)
{
	struct rsock *rs;
	short rev;

	if (ds_is_dgram(fd))
		return ds_poll_check(fd, events);
	rs = rs_lock(fd);
	if (!rs)
		return POLLNVAL;
	rs->cm_check = true;
	rs->rpoll_armed = false; /* awake */
	rs_progress(rs);
	rev = rs_revents(rs, events);
	pthread_mutex_unlock(&rs->lock);
	return rev;
}

short rs_poll_arm(int fd, short events, struct pollfd *out, int *n)
{
	struct rsock *rs;
	short rev;

	if (ds_is_dgram(fd))
		return ds_poll_arm(fd, events, out, n);
	rs = rs_lock(fd);
	*n = 0;
	if (!rs)
		return POLLNVAL;
	if (rs->cq && !rs->cq_armed) {
		ibv_req_notify_cq(rs->cq, 0);
		rs->cq_armed = true;
	}
	if (rs->wake_fd < 0)
		rs->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	else
		(void)eventfd_read(rs->wake_fd, &(eventfd_t){0}); /* looked at just below */
	rs_progress(rs);
	rev = rs_revents(rs, events);
	if (!rev) {
		if (rs->cq)
			out[(*n)++] = (struct pollfd){.fd = rs->cc->fd, .events = POLLIN};
		out[(*n)++] = (struct pollfd){.fd = rs->ch->fd, .events = POLLIN};
		/* Another thread handling the completions wakes this one. */
		if (rs->wake_fd >= 0) {
			out[(*n)++] = (struct pollfd){.fd = rs->wake_fd, .events = POLLIN};
			rs->rpoll_armed = true;
		}
	}
	pthread_mutex_unlock(&rs->lock);
	return rev;
}

void rs_poll_drain(int fd)
{
	struct rsock *rs;

	if (ds_is_dgram(fd)) {
		ds_poll_drain(fd);
		return;
	}
	rs = rs_lock(fd);

	if (!rs)
		return;
	rs_drain_cq_events(rs);
	rs->rpoll_armed = false;
	pthread_mutex_unlock(&rs->lock);
}
