/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Data path of the soft HCA: posting and polling, and the transport
 * protocols as IBA vol 1 ch. 9 has them.
 *
 * RC requester: each WQE gets its PSN range when first sent; packets are
 * kept implicitly (the WQE can rebuild them), retired by ACKs, READ
 * responses and atomic ACKs; a timeout (4.096 us * 2^timeout) resends
 * from the oldest unacknowledged WQE, retry_cnt times, then completes it
 * with IBV_WC_RETRY_EXC_ERR; RNR NAKs wait the RNR timer the responder
 * asked for, rnr_retry times (7 = forever).
 * RC responder: in-order PSN check (NAK sequence error once per gap,
 * duplicates re-acknowledged or re-executed), P_Key and source LID check,
 * RNR NAK when no receive WQE, R_Key/access/range checks for RDMA and
 * atomics (NAK remote access error), ACK for every message.
 * UC: the same packets without ACKs; a gap drops the message.
 * UD: Q_Key check, GRH in the first 40 bytes of the receive buffer.
 *
 * Everything here runs under VERBS_LOCK.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/verbs_priv.h"

/*
 * Floor of the ACK timeout: 4.096 us * 2^14, 67 ms.  This HCA is software
 * in a process that waits for a CPU like any other: a responder whose
 * process is not running (a loaded host, SIGSTOP) cannot ACK.  A path to
 * the port itself has PacketLifeTime 0 at OpenSM, so rdma_cm asks for 16
 * us (timeout 2): with a 1 ms floor retry_cnt 7 gave up after 8 ms of the
 * peer not running, which a loaded 2-CPU host reached now and then
 * (IBV_WC_RETRY_EXC_ERR in a same-host rping; sim_rc_stall.sh).  67 ms
 * gives half a second; a timeout of 14 or more is untouched.
 */
#define MIN_TIMEOUT_NS (4096ull << 14)

uint64_t verbs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 256u;
}

/* IBA table 45 (RNR NAK timer field), in microseconds. */
static const uint32_t rnr_us[32] = {
    655360, 10,	   20,	  30,	 40,	60,	80,	120,	160,	240,	320,
    480,    640,   960,	  1280,	 1920,	2560,	3840,	5120,	7680,	10240,	15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static uint64_t ack_timeout_ns(const struct vqp *qp)
{
	uint64_t t;

	if (!qp->attr.timeout)
		return 0; /* 0 means infinite (IBA 9.7.6.1.3) */
	t = 4096ull << qp->attr.timeout;
	return t < MIN_TIMEOUT_NS ? MIN_TIMEOUT_NS : t;
}

void verbs_active_add(struct vqp *qp)
{
	if (qp->on_active)
		return;
	qp->on_active = true;
	qp->aprev = NULL;
	qp->anext = verbs_hca.active;
	if (verbs_hca.active)
		verbs_hca.active->aprev = qp;
	verbs_hca.active = qp;
}

void verbs_active_del(struct vqp *qp)
{
	qp->deadline = 0;
	qp->rnr_wait = false;
	if (!qp->on_active)
		return;
	if (qp->aprev)
		qp->aprev->anext = qp->anext;
	else
		verbs_hca.active = qp->anext;
	if (qp->anext)
		qp->anext->aprev = qp->aprev;
	qp->on_active = false;
	qp->anext = qp->aprev = NULL;
}

static void arm_timer(struct vqp *qp, uint64_t ns)
{
	uint64_t d;

	if (!ns)
		return;
	d = verbs_now_ns() + ns;
	qp->deadline = d;
	verbs_active_add(qp);
	/* Wake the HCA thread only if it would sleep past this deadline. */
	if (!verbs_hca.sleep_until || verbs_hca.sleep_until > d + 2000000ull) {
		verbs_hca.sleep_until = d;
		verbs_hca_kick();
	}
}

/* ---- memory access ------------------------------------------------------ */

/* Resolve [addr, addr+len) of an SGE through its lkey; NULL if invalid. */
static uint8_t *sge_ptr(struct ibv_pd *pd, const struct ibv_sge *sg, bool write)
{
	struct vmr *mr;
	uint64_t start;

	if (!sg->length)
		return (uint8_t *)(uintptr_t)sg->addr;
	mr = verbs_mr_lookup(sg->lkey);
	if (!mr || mr->mr.pd != pd)
		return NULL;
	if (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return NULL;
	start = (uintptr_t)mr->mr.addr;
	if (sg->addr < start || sg->addr + sg->length < sg->addr ||
	    sg->addr + sg->length > start + mr->mr.length)
		return NULL;
	return (uint8_t *)(uintptr_t)sg->addr;
}

static int sges_check(struct ibv_pd *pd, const struct vwqe *w, bool write)
{
	int i;

	for (i = 0; i < w->num_sge; i++)
		if (!sge_ptr(pd, &w->sg[i], write))
			return -1;
	return 0;
}

/* Copy len bytes at message offset off out of (gather) or into (scatter)
 * a WQE's buffers.  Returns bytes copied. */
static uint32_t sg_copy(const struct vwqe *w, uint32_t off, uint8_t *buf, uint32_t len,
			bool scatter)
{
	uint32_t done = 0;
	int i;

	if (!scatter && (w->flags & IBV_SEND_INLINE)) {
		if (off > w->len)
			return 0;
		if (len > w->len - off)
			len = w->len - off;
		memcpy(buf, w->inl + off, len);
		return len;
	}
	for (i = 0; i < w->num_sge && done < len; i++) {
		uint32_t l = w->sg[i].length, n;
		uint8_t *p = (uint8_t *)(uintptr_t)w->sg[i].addr;

		if (off >= l) {
			off -= l;
			continue;
		}
		n = l - off;
		if (n > len - done)
			n = len - done;
		if (scatter)
			memcpy(p + off, buf + done, n);
		else
			memcpy(buf + done, p + off, n);
		done += n;
		off = 0;
	}
	return done;
}

/* The PD a responder checks keys against: an XRC target QP's is the one
 * of the SRQ the request names (IBA A14), the others' their own. */
static struct ibv_pd *resp_pd(struct vqp *qp)
{
	if (vqp_ibqp(qp)->qp_type == IBV_QPT_XRC_RECV)
		return qp->xsrq ? qp->xsrq->srq.pd : NULL;
	return vqp_ibqp(qp)->pd;
}

/* An R_Key check (IBA 10.6.3.3, 9.7.5.1.x): the MR exists, belongs to the
 * QP's PD, grants the access, and covers [va, va+len). */
static uint8_t *rkey_ptr(struct vqp *qp, uint32_t rkey, uint64_t va, uint32_t len, int access)
{
	struct vmr *mr;

	if (!(qp->attr.qp_access_flags & access))
		return NULL;
	if (!len)
		return (uint8_t *)1; /* zero-length: nothing to check */
	mr = verbs_mr_lookup(rkey);
	if (!mr || mr->mr.pd != resp_pd(qp) || !(mr->access & access))
		return NULL;
	if (va < mr->iova || va + len < va || va + len > mr->iova + mr->mr.length)
		return NULL;
	return (uint8_t *)mr->mr.addr + (va - mr->iova);
}

/* ---- packets out -------------------------------------------------------- */

static void pkt_init(struct vqp *qp, struct vpkt *p, const struct ibv_ah_attr *av)
{
	const struct verbs_port_info *pi = &verbs_hca.dev->port;

	memset(p, 0, sizeof(*p));
	p->sl = av->sl;
	p->dlid = av->dlid;
	p->slid = (uint16_t)(pi->lid | (av->src_path_bits & ((1u << pi->lmc) - 1)));
	p->pkey = verbs_pkey_at(qp->attr.pkey_index);
	if (av->is_global || (av->dlid >= VLID_MCAST_MIN && av->dlid != 0xffff)) {
		uint64_t pre = htobe64(pi->gid_prefix), guid = htobe64(pi->port_guid);

		p->grh = true;
		p->tclass = av->grh.traffic_class;
		p->flow_label = av->grh.flow_label;
		p->hop_limit = av->grh.hop_limit;
		memcpy(p->sgid, &pre, 8);
		memcpy(p->sgid + 8, &guid, 8);
		memcpy(p->dgid, av->grh.dgid.raw, 16);
	}
}

static void xmit_now(struct vpkt *p)
{
	uint8_t buf[VERBS_PKT_MAX];
	int n = vpkt_encode(p, buf, sizeof(buf));

	if (n > 0) {
		verbs_hca.tx_pkts++;
		verbs_transport_send(buf, (size_t)n);
	}
}

/* A response (READ response, atomic ACK, NAK): every held ACK leaves
 * first, so that the responder's packets keep their order. */
static void xmit(struct vpkt *p)
{
	verbs_ack_flush();
	xmit_now(p);
}

/* A request: only the held ACKs that are due leave first; the others
 * belong to another stream (the peer's requests) and may wait. */
static void xmit_req(struct vpkt *p)
{
	verbs_ack_flush_due();
	xmit_now(p);
}

static bool state_receives(struct vqp *qp);

/* ---- coalesced ACKs ------------------------------------------------------
 *
 * A responder may acknowledge several requests with one ACK, the one for
 * the latest PSN (IBA 9.7.5.1.2, coalesced acknowledges).  The HCA thread
 * sends the ACKs a message it received calls for once it has processed
 * that message.  An application thread that processed it (spinning in
 * ibv_poll_cq, waiting in ibv_get_cq_event) holds them while it hands the
 * completion to the application: they leave with the next packet this
 * process sends (the reply of a ping-pong, typically), so that both cross
 * the daemon in one message and wake the peer once, not twice; or when
 * that thread goes back to waiting; or when the QP is modified or
 * destroyed; or at the latest when the HCA thread next looks, within the
 * lease (VERBS_LEASE_NS, verbs_api.c), below the 1 ms floor of any ACK
 * timeout, so a requester never retries for it.  NAKs never wait, and
 * every response sends the held ACKs first, so the wire order is kept.
 *
 * Lazy ACKs: the requester sets AckReq only where it needs the ACK soon
 * (a signalled WQE, a resend, a send queue half full, SQD; see want_ack),
 * as a requester may (IBA 9.7.5.1.2: the responder may coalesce the
 * others).  An ACK for a message without AckReq is held even across this
 * process's own requests and waits, until an ACK with AckReq or a response
 * of the same QP carries it, or VERBS_ACK_LAZY_NS have passed (the waiting
 * thread wakes for it), or the HCA thread looks.  A ping-pong of unsignalled
 * SENDs then sends one packet per message, not two: in standalone mode,
 * where every packet is a datagram of its own, the ACK alone woke the peer
 * (and, on one CPU, preempted the sender) just before the reply did.
 */
static struct vqp *ack_list; /* QPs with ack_pending, under VERBS_LOCK */

static void ack_defer(struct vqp *qp, const struct vpkt *in, uint32_t psn)
{
	qp->ack_dlid = in->slid;
	qp->ack_psn = psn;
	if (in->ack_req)
		qp->ack_eager = true;
	if (qp->ack_pending)
		return;
	qp->ack_pending = true;
	qp->ack_due = verbs_now_ns() + VERBS_ACK_LAZY_NS;
	qp->ack_next = ack_list;
	ack_list = qp;
}

void verbs_ack_cancel(struct vqp *qp)
{
	struct vqp **pp;

	if (!qp->ack_pending)
		return;
	for (pp = &ack_list; *pp; pp = &(*pp)->ack_next)
		if (*pp == qp) {
			*pp = qp->ack_next;
			break;
		}
	qp->ack_pending = false;
	qp->ack_eager = false;
}

static void ack_send(struct vqp *qp)
{
	struct vpkt p;

	qp->ack_pending = false;
	qp->ack_eager = false;
	if (!state_receives(qp))
		return;
	pkt_init(qp, &p, &qp->attr.ah_attr);
	p.dlid = qp->ack_dlid;
	p.opcode = vqp_transport(vqp_ibqp(qp)->qp_type) | VOP_ACK;
	p.dqpn = qp->attr.dest_qp_num;
	p.psn = qp->ack_psn;
	p.syndrome = VAETH_ACK;
	p.msn = qp->msn & VPSN_MASK;
	xmit_now(&p);
}

void verbs_ack_flush(void)
{
	while (ack_list) {
		struct vqp *qp = ack_list;

		ack_list = qp->ack_next;
		ack_send(qp);
	}
}

/* Send the held ACKs that must not wait any longer (AckReq, or lazy for
 * VERBS_ACK_LAZY_NS); returns when the earliest of the others is due, 0
 * if none is held. */
uint64_t verbs_ack_flush_due(void)
{
	struct vqp **pp = &ack_list, *qp;
	uint64_t now, soonest = 0;

	if (!ack_list)
		return 0;
	now = verbs_now_ns();
	while ((qp = *pp)) {
		if (qp->ack_eager || qp->ack_due <= now) {
			*pp = qp->ack_next;
			ack_send(qp);
			continue;
		}
		if (!soonest || qp->ack_due < soonest)
			soonest = qp->ack_due;
		pp = &qp->ack_next;
	}
	return soonest;
}

/* Responder -> requester: ACK / NAK / RNR NAK (9.7.5). */
static void send_aeth(struct vqp *qp, const struct vpkt *in, uint32_t psn, uint8_t syndrome)
{
	struct vpkt p;

	if (syndrome == VAETH_ACK) {
		ack_defer(qp, in, psn);
		return;
	}
	/* After an RNR NAK the packets already in flight behind the refused
	 * one are dropped silently, as after a sequence NAK: the requester
	 * resends from the refused PSN when its RNR timer expires. */
	if ((syndrome & 0x60) == VAETH_RNR) {
		qp->nak_sent = true;
		qp->st.rnr_tx++;
	} else if ((syndrome & 0x1f) < VNAK_KINDS) {
		qp->st.nak_tx[syndrome & 0x1f]++;
	}

	pkt_init(qp, &p, &qp->attr.ah_attr);
	p.dlid = in->slid;
	p.opcode = vqp_transport(vqp_ibqp(qp)->qp_type) | VOP_ACK;
	p.dqpn = qp->attr.dest_qp_num;
	p.psn = psn;
	p.syndrome = syndrome;
	p.msn = qp->msn & VPSN_MASK;
	xmit(&p);
}

/* ---- completions -------------------------------------------------------- */

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/* Complete the oldest send WQE and retire it. */
static void sq_complete_head(struct vqp *qp, enum ibv_wc_status st)
{
	struct vwqe *w = &qp->sq.q[qp->sq.head];
	struct ibv_qp *ib = vqp_ibqp(qp);

	if (st != IBV_WC_SUCCESS || qp->sq_sig_all || (w->flags & IBV_SEND_SIGNALED)) {
		struct ibv_wc wc = {
		    .wr_id = w->wr_id,
		    .status = st,
		    .opcode = wc_opcode(w->opcode),
		    .qp_num = ib->qp_num,
		};

		if (w->opcode == IBV_WR_RDMA_READ)
			wc.byte_len = w->len;
		else if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			 w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			wc.byte_len = 8;
		else
			wc.byte_len = w->len;
		verbs_cq_push(to_vcq(ib->send_cq), &wc, false);
	}
	qp->sq.head = (qp->sq.head + 1) % qp->sq.size;
	qp->sq.count--;
	if (qp->send_idx)
		qp->send_idx--;
	verbs_sqd_check(qp);
}

/* SQD: once nothing sent is outstanding, the SQ is drained; tell the
 * application if it asked (IBV_QP_EN_SQD_ASYNC_NOTIFY). */
void verbs_sqd_check(struct vqp *qp)
{
	struct ibv_async_event ev = {.event_type = IBV_EVENT_SQ_DRAINED};

	if (qp->attr.qp_state != IBV_QPS_SQD || qp->send_idx || qp->sqd_notified)
		return;
	qp->sqd_notified = true;
	if (!qp->attr.en_sqd_async_notify)
		return;
	ev.element.qp = vqp_ibqp(qp);
	verbs_async_event(vqp_ibqp(qp)->context, &ev);
}

/* A send-side error: complete the WQE at the head with st and move the
 * QP to the error state, flushing the rest (IBA 10.8.3). */
static void sq_fail(struct vqp *qp, enum ibv_wc_status st)
{
	if (qp->sq.count)
		sq_complete_head(qp, st);
	verbs_qp_to_error(qp);
}

/* ---- requester ---------------------------------------------------------- */

static uint32_t wqe_psns(const struct vqp *qp, const struct vwqe *w)
{
	uint32_t mtu = mtu_bytes(qp->attr.path_mtu);

	switch (w->opcode) {
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return 1;
	default:
		return w->len ? (w->len + mtu - 1) / mtu : 1;
	}
}

/*
 * Whether the last packet of a SEND or RDMA WRITE asks for its ACK now
 * (AckReq) or lets the responder coalesce it (see "Lazy ACKs" above): the
 * ACK is wanted soon when the WQE completes to the application (signalled,
 * or an error would show), when this is a resend (the ACK got lost, or
 * the responder wanted a pause), when the send queue is half full (its
 * slots come back with ACKs), or when the QP is draining (SQD).  UC asks
 * as before: its responder never answers.
 */
static bool want_ack(const struct vqp *qp, const struct vwqe *w, bool resend)
{
	return !vqp_reliable(vqp_ibqp(qp)->qp_type) || resend || qp->sq_sig_all ||
	       (w->flags & IBV_SEND_SIGNALED) || qp->attr.qp_state != IBV_QPS_RTS || qp->retries ||
	       qp->rnr_retries || qp->sq.count * 2 >= qp->sq.size;
}

static void send_rc_uc_wqe(struct vqp *qp, struct vwqe *w, bool resend)
{
	uint32_t mtu = mtu_bytes(qp->attr.path_mtu);
	uint8_t tp = vqp_transport(vqp_ibqp(qp)->qp_type);
	uint8_t buf[4096];
	struct vpkt p;
	uint32_t i, off = 0;

	pkt_init(qp, &p, &qp->attr.ah_attr);
	p.dqpn = qp->attr.dest_qp_num;
	p.srqn = w->remote_srqn; /* XRC: the XRCETH's */
	if (w->opcode == IBV_WR_RDMA_READ || w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		p.psn = w->psn;
		p.ack_req = true;
		p.va = w->raddr;
		p.rkey = w->rkey;
		if (w->opcode == IBV_WR_RDMA_READ) {
			p.opcode = tp | VOP_READ_REQ;
			p.dma_len = w->len;
		} else {
			p.opcode = tp | (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? VOP_CMP_SWAP
										: VOP_FETCH_ADD);
			p.dma_len = 8;
			p.compare = w->compare_add;
			p.swap = w->swap;
		}
		xmit_req(&p);
		return;
	}
	for (i = 0; i < w->npkts; i++) {
		bool first = i == 0, last = i + 1 == w->npkts;
		bool imm =
		    w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
		uint8_t op;

		if (w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_SEND_WITH_IMM) {
			op = first && last ? (imm ? VOP_SEND_ONLY_IMM : VOP_SEND_ONLY)
			     : first	   ? VOP_SEND_FIRST
			     : last	   ? (imm ? VOP_SEND_LAST_IMM : VOP_SEND_LAST)
					   : VOP_SEND_MIDDLE;
		} else {
			op = first && last ? (imm ? VOP_WRITE_ONLY_IMM : VOP_WRITE_ONLY)
			     : first	   ? VOP_WRITE_FIRST
			     : last	   ? (imm ? VOP_WRITE_LAST_IMM : VOP_WRITE_LAST)
					   : VOP_WRITE_MIDDLE;
		}
		p.opcode = tp | op;
		p.psn = (w->psn + i) & VPSN_MASK;
		p.se = last && (w->flags & IBV_SEND_SOLICITED);
		p.ack_req = last && want_ack(qp, w, resend);
		p.imm = be32toh(w->imm);
		p.va = w->raddr;
		p.rkey = w->rkey;
		p.dma_len = w->len;
		p.paylen = sg_copy(w, off, buf, w->len - off < mtu ? w->len - off : mtu, false);
		p.payload = buf;
		off += p.paylen;
		xmit_req(&p);
	}
}

static void send_ud_wqe(struct vqp *qp, struct vwqe *w)
{
	uint8_t buf[4096];
	struct vpkt p;
	uint32_t mtu = mtu_bytes(verbs_hca.dev->port.active_mtu);

	if (w->len > mtu) {
		sq_complete_head(qp, IBV_WC_LOC_LEN_ERR);
		return;
	}
	pkt_init(qp, &p, &w->ah->attr);
	p.opcode = VOP_UD | (w->opcode == IBV_WR_SEND_WITH_IMM ? VOP_SEND_ONLY_IMM : VOP_SEND_ONLY);
	p.dqpn = w->ah->attr.dlid >= VLID_MCAST_MIN && w->ah->attr.dlid != 0xffff ? VQPN_MCAST
										  : w->remote_qpn;
	p.psn = qp->npsn;
	qp->npsn = (qp->npsn + 1) & VPSN_MASK;
	p.se = w->flags & IBV_SEND_SOLICITED;
	/* A Q_Key with the high bit set means "use the QP's" (IBA 10.2.5). */
	p.qkey = (w->remote_qkey & 0x80000000u) ? qp->attr.qkey : w->remote_qkey;
	p.src_qp = vqp_ibqp(qp)->qp_num;
	p.imm = be32toh(w->imm);
	p.paylen = sg_copy(w, 0, buf, w->len, false);
	p.payload = buf;
	xmit_req(&p);
	sq_complete_head(qp, IBV_WC_SUCCESS);
}

/* Send what has not been sent yet (RTS only). */
static void sq_progress(struct vqp *qp)
{
	struct ibv_qp *ib = vqp_ibqp(qp);

	while (qp->attr.qp_state == IBV_QPS_RTS && qp->send_idx < qp->sq.count) {
		struct vwqe *w = &qp->sq.q[(qp->sq.head + qp->send_idx) % qp->sq.size];
		bool rd = w->opcode == IBV_WR_RDMA_READ || w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			  w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;

		/* Local protection: lkeys, PD, bounds, LOCAL_WRITE for data
		 * coming back (IBA 10.7.2.x): fails as IBV_WC_LOC_PROT_ERR. */
		if (!(w->flags & IBV_SEND_INLINE) && sges_check(ib->pd, w, rd)) {
			/* Complete the ones in front first (they are sent). */
			if (qp->send_idx == 0) {
				sq_fail(qp, IBV_WC_LOC_PROT_ERR);
				return;
			}
			break;
		}
		if (ib->qp_type == IBV_QPT_UD) {
			send_ud_wqe(qp, w);
			continue;
		}
		w->psn = qp->npsn;
		w->npkts = wqe_psns(qp, w);
		w->read_off = 0;
		qp->npsn = (qp->npsn + w->npkts) & VPSN_MASK;
		send_rc_uc_wqe(qp, w, false);
		if (ib->qp_type == IBV_QPT_UC) {
			sq_complete_head(qp, IBV_WC_SUCCESS);
			continue;
		}
		w->sent = true;
		qp->send_idx++;
		if (!qp->deadline)
			arm_timer(qp, ack_timeout_ns(qp));
	}
}

/* Send what was posted while the QP could not send (SQD -> RTS). */
void verbs_sq_kick(struct vqp *qp)
{
	sq_progress(qp);
}

/* Resend every sent, unacknowledged WQE (go-back-N, IBA 9.7.6). */
static void rc_resend(struct vqp *qp)
{
	uint32_t i;

	for (i = 0; i < qp->send_idx; i++) {
		struct vwqe *w = &qp->sq.q[(qp->sq.head + i) % qp->sq.size];

		w->read_off = 0;
		send_rc_uc_wqe(qp, w, true);
	}
}

static void rc_restart_timer(struct vqp *qp)
{
	qp->deadline = 0;
	qp->rnr_wait = false;
	if (qp->send_idx)
		arm_timer(qp, ack_timeout_ns(qp));
	else
		verbs_active_del(qp);
}

/* Retire SEND/WRITE WQEs whose last PSN is at or before psn. */
static bool rc_retire_upto(struct vqp *qp, uint32_t psn, bool inclusive)
{
	bool progress = false;

	while (qp->send_idx) {
		struct vwqe *w = &qp->sq.q[qp->sq.head];
		uint32_t last = (w->psn + w->npkts - 1) & VPSN_MASK;
		int d = vpsn_cmp(last, psn);

		if (d > 0 || (d == 0 && !inclusive))
			break;
		/* READ and atomics complete only with their response data. */
		if (w->opcode == IBV_WR_RDMA_READ || w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			break;
		sq_complete_head(qp, IBV_WC_SUCCESS);
		progress = true;
	}
	if (progress) {
		qp->retries = 0;
		qp->rnr_retries = 0;
	}
	if (!qp->send_idx)
		qp->nak_resending = false;
	return progress;
}

/* The buffers a READ response or atomic ACK lands in may have been
 * deregistered since the request left: a local protection error.  Only the
 * WQE the response answers is checked: a late duplicate of a READ that
 * already completed (its request was resent after a timeout and answered
 * twice) must not fail the SEND behind it, whose buffers need no
 * LOCAL_WRITE; the check before the match did, and rping's server saw
 * IBV_WC_LOC_PROT_ERR on a loaded host. */
static bool resp_buffers_gone(struct vqp *qp, const struct vwqe *w)
{
	if (!sges_check(vqp_ibqp(qp)->pd, w, true))
		return false;
	sq_fail(qp, IBV_WC_LOC_PROT_ERR);
	return true;
}

static void rc_requester_rx(struct vqp *qp, const struct vpkt *p)
{
	uint8_t op = p->opcode & 0x1f;
	struct vwqe *w;

	/* Responses for PSNs we never sent are ghosts: ignore them. */
	if (vpsn_cmp(p->psn, qp->npsn) >= 0)
		return;
	if (op == VOP_ACK) {
		uint8_t kind = p->syndrome & 0x60;

		if (kind == VAETH_ACK) {
			if (rc_retire_upto(qp, p->psn, true))
				rc_restart_timer(qp);
		} else if (kind == VAETH_RNR) {
			qp->st.rnr_rx++;
			rc_retire_upto(qp, p->psn, false);
			if (!qp->send_idx)
				return;
			if (qp->attr.rnr_retry != 7 && ++qp->rnr_retries > qp->attr.rnr_retry) {
				sq_fail(qp, IBV_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qp->rnr_wait = true;
			qp->deadline = 0;
			arm_timer(qp, rnr_us[p->syndrome & 0x1f] * 1000ull);
			qp->rnr_wait = true;
		} else if (kind == VAETH_NAK) {
			if ((p->syndrome & 0x1f) < VNAK_KINDS)
				qp->st.nak_rx[p->syndrome & 0x1f]++;
			rc_retire_upto(qp, p->psn, false);
			if (!qp->send_idx)
				return;
			switch (p->syndrome & 0x1f) {
			case VNAK_PSN_SEQ:
				if (qp->rnr_wait)
					break; /* the RNR timer resends */
				/* Packets sent before our resend reached the
				 * responder after the NAK: each new gap makes
				 * it NAK again, for a PSN we already went back
				 * to or before.  Resending for those again
				 * would go back over and over (with 2000
				 * packets in flight, a storm that exhausts
				 * retry_cnt) for one reordering: ignore them,
				 * as hardware does; a loss during the resend
				 * is the ACK timeout's. */
				if (qp->nak_resending && vpsn_cmp(p->psn, qp->nak_psn) <= 0) {
					qp->st.seq_ignored++;
					break;
				}
				/* Counted against retry_cnt, as a timeout is:
				 * IBA's Retry Count bounds the retries after a
				 * local ACK timeout or a NAK-sequence error
				 * alike, and rxe decrements it for both, once
				 * per retry it starts (NAKs during one start
				 * none, as above).  A peer that expects another
				 * PSN forever thus ends in RETRY_EXC_ERR.  On a
				 * fabric without loss none comes: one QP's
				 * packets arrive in order (sim/verbs_proto.h,
				 * "One path at a time"). */
				if (++qp->retries > qp->attr.retry_cnt) {
					sq_fail(qp, IBV_WC_RETRY_EXC_ERR);
					return;
				}
				qp->st.retry_seq++;
				qp->nak_resending = true;
				qp->nak_psn = p->psn;
				rc_resend(qp);
				rc_restart_timer(qp);
				break;
			case VNAK_REM_ACCESS:
				sq_fail(qp, IBV_WC_REM_ACCESS_ERR);
				break;
			case VNAK_INV_REQ:
				sq_fail(qp, IBV_WC_REM_INV_REQ_ERR);
				break;
			default:
				sq_fail(qp, IBV_WC_REM_OP_ERR);
				break;
			}
		}
		if (qp->attr.qp_state == IBV_QPS_RTS)
			sq_progress(qp);
		return;
	}
	/* READ responses and atomic ACKs also acknowledge what precedes. */
	rc_retire_upto(qp, p->psn, false);
	if (!qp->send_idx)
		return;
	w = &qp->sq.q[qp->sq.head];
	if (op == VOP_ATOMIC_ACK) {
		uint64_t orig = p->orig;

		if ((w->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
		     w->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) ||
		    p->psn != w->psn)
			return;
		if (resp_buffers_gone(qp, w))
			return;
		sg_copy(w, 0, (uint8_t *)&orig, 8, true);
		sq_complete_head(qp, IBV_WC_SUCCESS);
	} else {
		uint32_t mtu = mtu_bytes(qp->attr.path_mtu);
		uint32_t want = (w->psn + w->read_off / mtu) & VPSN_MASK;

		if (w->opcode != IBV_WR_RDMA_READ || p->psn != want) {
			qp->st.resp_ooo++;
			return; /* out of order: the timeout resends the READ */
		}
		if (p->paylen > w->len - w->read_off)
			return;
		if (resp_buffers_gone(qp, w))
			return;
		sg_copy(w, w->read_off, (uint8_t *)p->payload, p->paylen, true);
		w->read_off += p->paylen;
		if (op != VOP_READ_RESP_LAST && op != VOP_READ_RESP_ONLY)
			return;
		sq_complete_head(qp, IBV_WC_SUCCESS);
	}
	qp->retries = qp->rnr_retries = 0;
	rc_restart_timer(qp);
	sq_progress(qp);
}

/* ---- responder ---------------------------------------------------------- */

/* Take a receive WQE from the SRQ or the RQ.  false if there is none. */
/* The SRQ a QP's receives come from: its own, or an XRC target's current. */
static struct vsrq *qp_srq(struct vqp *qp)
{
	struct ibv_qp *ib = vqp_ibqp(qp);

	return ib->srq ? to_vsrq(ib->srq) : qp->xsrq;
}

static bool rq_take(struct vqp *qp, struct vwqe *out)
{
	struct ibv_qp *ib = vqp_ibqp(qp);
	struct vsrq *srq = qp_srq(qp);
	struct vwq *rq = srq ? &srq->rq : &qp->rq;

	if (!rq->count)
		return false;
	*out = rq->q[rq->head];
	rq->head = (rq->head + 1) % rq->size;
	rq->count--;
	if (srq && srq->limit && rq->count < srq->limit) {
		struct ibv_async_event ev = {
		    .event_type = IBV_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->limit = 0; /* one event per arming */
		ev.element.srq = &srq->srq;
		verbs_async_event(ib->context, &ev);
	}
	return true;
}

static void rq_giveback(struct vqp *qp, const struct vwqe *w)
{
	struct vsrq *srq = qp_srq(qp);
	struct vwq *rq = srq ? &srq->rq : &qp->rq;

	if (rq->count >= rq->size)
		return;
	rq->head = (rq->head + rq->size - 1) % rq->size;
	rq->q[rq->head] = *w;
	rq->count++;
}

static void recv_complete(struct vqp *qp, const struct vwqe *w, const struct vpkt *p,
			  enum ibv_wc_status st, enum ibv_wc_opcode op, uint32_t len, bool imm,
			  uint32_t src_qp)
{
	struct ibv_qp *ib = vqp_ibqp(qp);
	struct ibv_wc wc = {
	    .wr_id = w->wr_id,
	    .status = st,
	    .opcode = op,
	    .byte_len = len,
	    .qp_num = ib->qp_num,
	    .src_qp = src_qp,
	    .slid = p->slid,
	    .sl = p->sl,
	    .pkey_index = (uint16_t)qp->attr.pkey_index,
	};

	if (imm) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = htobe32(p->imm);
	}
	if (p->grh && ib->qp_type == IBV_QPT_UD)
		wc.wc_flags |= IBV_WC_GRH;
	/* An XRC SRQ's receives complete in its own CQ. */
	if (ib->qp_type == IBV_QPT_XRC_RECV) {
		if (qp->xsrq)
			verbs_cq_push(to_vcq(qp->xsrq->cq), &wc, p->se);
		return;
	}
	verbs_cq_push(to_vcq(ib->recv_cq), &wc, p->se);
}

static void responder_error(struct vqp *qp, enum ibv_event_type ev_type)
{
	struct ibv_async_event ev = {.event_type = ev_type};

	ev.element.qp = vqp_ibqp(qp);
	verbs_qp_to_error(qp);
	verbs_async_event(vqp_ibqp(qp)->context, &ev);
}

static void rc_nak(struct vqp *qp, const struct vpkt *p, uint8_t code)
{
	if (vqp_reliable(vqp_ibqp(qp)->qp_type))
		send_aeth(qp, p, p->psn, VAETH_NAK | code);
}

/*
 * A FIRST/ONLY packet inside a message, or a MIDDLE/LAST outside one: RC
 * NAKs "invalid request" and puts the QP in error; UC silently skips it.
 */
static void out_of_sequence(struct vqp *qp, const struct vpkt *p, bool rc)
{
	if (!rc) {
		qp->epsn = (p->psn + 1) & VPSN_MASK;
		return;
	}
	rc_nak(qp, p, VNAK_INV_REQ);
	responder_error(qp, IBV_EVENT_QP_REQ_ERR);
}

static void read_respond(struct vqp *qp, const struct vpkt *p, const uint8_t *src)
{
	uint32_t mtu = mtu_bytes(qp->attr.path_mtu);
	uint32_t n = p->dma_len ? (p->dma_len + mtu - 1) / mtu : 1, i, off = 0;
	struct vpkt r;

	pkt_init(qp, &r, &qp->attr.ah_attr);
	r.dlid = p->slid;
	r.dqpn = qp->attr.dest_qp_num;
	r.msn = qp->msn & VPSN_MASK;
	for (i = 0; i < n; i++) {
		uint32_t len = p->dma_len - off < mtu ? p->dma_len - off : mtu;

		r.opcode =
		    vqp_transport(vqp_ibqp(qp)->qp_type) | (n == 1	 ? VOP_READ_RESP_ONLY
							    : i == 0	 ? VOP_READ_RESP_FIRST
							    : i + 1 == n ? VOP_READ_RESP_LAST
									 : VOP_READ_RESP_MIDDLE);
		r.psn = (p->psn + i) & VPSN_MASK;
		r.payload = src + off;
		r.paylen = len;
		off += len;
		xmit(&r);
	}
}

static void atomic_respond(struct vqp *qp, const struct vpkt *p, uint64_t orig)
{
	struct vpkt r;

	pkt_init(qp, &r, &qp->attr.ah_attr);
	r.dlid = p->slid;
	r.dqpn = qp->attr.dest_qp_num;
	r.opcode = vqp_transport(vqp_ibqp(qp)->qp_type) | VOP_ATOMIC_ACK;
	r.psn = p->psn;
	r.msn = qp->msn & VPSN_MASK;
	r.orig = orig;
	xmit(&r);
}

/* A packet that repeats one already executed (9.7.5.1.1). */
static void rc_duplicate(struct vqp *qp, const struct vpkt *p)
{
	uint8_t op = p->opcode & 0x1f;
	uint8_t *src;

	if (op == VOP_READ_REQ) {
		src = rkey_ptr(qp, p->rkey, p->va, p->dma_len, IBV_ACCESS_REMOTE_READ);
		if (src)
			read_respond(qp, p, src);
		return;
	}
	if (op == VOP_CMP_SWAP || op == VOP_FETCH_ADD) {
		if (qp->have_atomic && p->psn == qp->last_atomic_psn)
			atomic_respond(qp, p, qp->last_atomic_orig);
		return;
	}
	/* Acknowledge all we have: the requester lost our ACK. */
	send_aeth(qp, p, (qp->epsn - 1) & VPSN_MASK, VAETH_ACK);
}

static void rc_uc_responder_rx(struct vqp *qp, const struct vpkt *p)
{
	bool rc = vqp_reliable(vqp_ibqp(qp)->qp_type);
	uint8_t op = p->opcode & 0x1f;
	int d = vpsn_cmp(p->psn, qp->epsn);
	bool first = false, last = false, imm = false;
	uint8_t *dst;

	if (rc) {
		if (d > 0) {
			qp->st.gap_rx++;
			/* A gap: NAK once, the requester goes back (9.7.5.1.2). */
			if (!qp->nak_sent) {
				qp->nak_sent = true;
				send_aeth(qp, p, qp->epsn, VAETH_NAK | VNAK_PSN_SEQ);
			}
			return;
		}
		if (d < 0) {
			qp->st.dup_rx++;
			rc_duplicate(qp, p);
			return;
		}
		qp->nak_sent = false;
	} else if (d != 0) {
		/* UC: a lost packet drops the message in progress. */
		if (qp->in_msg) {
			/* The receive WQE is reused for the next message. */
			if (qp->cur_rwqe_taken)
				rq_giveback(qp, &qp->cur_rwqe);
			qp->in_msg = false;
			qp->cur_rwqe_taken = false;
		}
		qp->epsn = p->psn;
	}

	switch (op) {
	case VOP_SEND_FIRST:
	case VOP_SEND_ONLY:
	case VOP_SEND_ONLY_IMM:
		first = true;
		/* fall through */
	case VOP_SEND_MIDDLE:
	case VOP_SEND_LAST:
	case VOP_SEND_LAST_IMM:
		last = op == VOP_SEND_LAST || op == VOP_SEND_LAST_IMM || op == VOP_SEND_ONLY ||
		       op == VOP_SEND_ONLY_IMM;
		imm = op == VOP_SEND_LAST_IMM || op == VOP_SEND_ONLY_IMM;
		if (first == qp->in_msg) {
			out_of_sequence(qp, p, rc);
			return;
		}
		if (first) {
			if (!rq_take(qp, &qp->cur_rwqe)) {
				if (rc)
					send_aeth(qp, p, p->psn,
						  VAETH_RNR | qp->attr.min_rnr_timer);
				return; /* UC: dropped */
			}
			qp->in_msg = true;
			qp->cur_rwqe_taken = true;
			qp->cur_off = 0;
		}
		if (sges_check(resp_pd(qp), &qp->cur_rwqe, true) ||
		    p->paylen > qp->cur_rwqe.len - qp->cur_off) {
			enum ibv_wc_status st = sges_check(resp_pd(qp), &qp->cur_rwqe, true)
						    ? IBV_WC_LOC_PROT_ERR
						    : IBV_WC_LOC_LEN_ERR;

			recv_complete(qp, &qp->cur_rwqe, p, st, IBV_WC_RECV, 0, false,
				      qp->attr.dest_qp_num);
			qp->in_msg = false;
			qp->cur_rwqe_taken = false;
			rc_nak(qp, p, VNAK_INV_REQ);
			verbs_qp_to_error(qp);
			return;
		}
		sg_copy(&qp->cur_rwqe, qp->cur_off, (uint8_t *)p->payload, p->paylen, true);
		qp->cur_off += p->paylen;
		qp->epsn = (p->psn + 1) & VPSN_MASK;
		if (last) {
			qp->in_msg = false;
			qp->cur_rwqe_taken = false;
			qp->msn++;
			recv_complete(qp, &qp->cur_rwqe, p, IBV_WC_SUCCESS, IBV_WC_RECV,
				      qp->cur_off, imm, qp->attr.dest_qp_num);
		}
		if (rc && (last || p->ack_req))
			send_aeth(qp, p, p->psn, VAETH_ACK);
		return;

	case VOP_WRITE_FIRST:
	case VOP_WRITE_ONLY:
	case VOP_WRITE_ONLY_IMM:
		first = true;
		/* fall through */
	case VOP_WRITE_MIDDLE:
	case VOP_WRITE_LAST:
	case VOP_WRITE_LAST_IMM:
		last = op == VOP_WRITE_LAST || op == VOP_WRITE_LAST_IMM || op == VOP_WRITE_ONLY ||
		       op == VOP_WRITE_ONLY_IMM;
		imm = op == VOP_WRITE_LAST_IMM || op == VOP_WRITE_ONLY_IMM;
		if (first == qp->in_msg) {
			out_of_sequence(qp, p, rc);
			return;
		}
		if (first) {
			dst = rkey_ptr(qp, p->rkey, p->va, p->dma_len, IBV_ACCESS_REMOTE_WRITE);
			if (!dst) {
				if (!rc)
					return;
				rc_nak(qp, p, VNAK_REM_ACCESS);
				responder_error(qp, IBV_EVENT_QP_ACCESS_ERR);
				return;
			}
			qp->wr_va = p->va;
			qp->wr_left = qp->wr_total = p->dma_len;
			qp->wr_rkey = p->rkey;
		}
		/* Immediate data consumes a receive WQE: RNR if none. */
		if (imm && !rq_take(qp, &qp->cur_rwqe)) {
			if (rc)
				send_aeth(qp, p, p->psn, VAETH_RNR | qp->attr.min_rnr_timer);
			return;
		}
		if (p->paylen > qp->wr_left) {
			if (rc) {
				rc_nak(qp, p, VNAK_INV_REQ);
				responder_error(qp, IBV_EVENT_QP_REQ_ERR);
			}
			return;
		}
		if (p->paylen) {
			dst = rkey_ptr(qp, qp->wr_rkey, qp->wr_va, p->paylen,
				       IBV_ACCESS_REMOTE_WRITE);
			if (!dst) { /* deregistered meanwhile */
				rc_nak(qp, p, VNAK_REM_ACCESS);
				responder_error(qp, IBV_EVENT_QP_ACCESS_ERR);
				return;
			}
			memcpy(dst, p->payload, p->paylen);
		}
		qp->wr_va += p->paylen;
		qp->wr_left -= p->paylen;
		qp->in_msg = !last;
		qp->epsn = (p->psn + 1) & VPSN_MASK;
		if (last)
			qp->msn++;
		if (imm)
			recv_complete(qp, &qp->cur_rwqe, p, IBV_WC_SUCCESS,
				      IBV_WC_RECV_RDMA_WITH_IMM, qp->wr_total, true,
				      qp->attr.dest_qp_num);
		if (rc && (last || p->ack_req))
			send_aeth(qp, p, p->psn, VAETH_ACK);
		return;

	case VOP_READ_REQ:
		if (qp->in_msg) {
			rc_nak(qp, p, VNAK_INV_REQ);
			responder_error(qp, IBV_EVENT_QP_REQ_ERR);
			return;
		}
		if (p->dma_len > 0x80000000u) { /* max_msg_sz */
			rc_nak(qp, p, VNAK_INV_REQ);
			responder_error(qp, IBV_EVENT_QP_REQ_ERR);
			return;
		}
		dst = rkey_ptr(qp, p->rkey, p->va, p->dma_len, IBV_ACCESS_REMOTE_READ);
		if (!dst) {
			rc_nak(qp, p, VNAK_REM_ACCESS);
			responder_error(qp, IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
		qp->msn++;
		read_respond(qp, p, dst);
		qp->epsn = (p->psn + (p->dma_len ? (p->dma_len + mtu_bytes(qp->attr.path_mtu) - 1) /
						       mtu_bytes(qp->attr.path_mtu)
						 : 1)) &
			   VPSN_MASK;
		return;

	case VOP_CMP_SWAP:
	case VOP_FETCH_ADD: {
		uint64_t *a, orig;

		if (qp->in_msg) {
			rc_nak(qp, p, VNAK_INV_REQ);
			responder_error(qp, IBV_EVENT_QP_REQ_ERR);
			return;
		}
		dst = rkey_ptr(qp, p->rkey, p->va, 8, IBV_ACCESS_REMOTE_ATOMIC);
		if (!dst || (p->va & 7)) {
			rc_nak(qp, p, dst ? VNAK_INV_REQ : VNAK_REM_ACCESS);
			responder_error(qp, IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
		a = (uint64_t *)(void *)dst;
		if (op == VOP_CMP_SWAP) {
			orig = p->compare;
			if (!__atomic_compare_exchange_n(a, &orig, p->swap, false, __ATOMIC_SEQ_CST,
							 __ATOMIC_SEQ_CST)) {
				/* orig now holds the current value */
			}
		} else {
			orig = __atomic_fetch_add(a, p->compare, __ATOMIC_SEQ_CST);
		}
		qp->msn++;
		qp->have_atomic = true;
		qp->last_atomic_psn = p->psn;
		qp->last_atomic_orig = orig;
		qp->epsn = (p->psn + 1) & VPSN_MASK;
		atomic_respond(qp, p, orig);
		return;
	}
	default:
		return;
	}
}

/* ---- UD receive --------------------------------------------------------- */

static void ud_deliver(struct vqp *qp, const struct vpkt *p, const uint8_t *raw)
{
	struct vwqe w;
	uint8_t grh[VPKT_GRH];
	struct ibv_qp *ib = vqp_ibqp(qp);

	if (p->qkey != qp->attr.qkey) {
		verbs_hca.drop_qkey++;
		return;
	}
	if (!rq_take(qp, &w))
		return; /* UD: no receive WQE, the packet is lost */
	if (sges_check(ib->pd, &w, true)) {
		recv_complete(qp, &w, p, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, false, p->src_qp);
		verbs_qp_to_error(qp);
		return;
	}
	if (w.len < VPKT_GRH + p->paylen) {
		recv_complete(qp, &w, p, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, false, p->src_qp);
		verbs_qp_to_error(qp);
		return;
	}
	if (p->grh) {
		memcpy(grh, raw + VPKT_LRH, VPKT_GRH);
		sg_copy(&w, 0, grh, VPKT_GRH, true);
	}
	sg_copy(&w, VPKT_GRH, (uint8_t *)p->payload, p->paylen, true);
	recv_complete(qp, &w, p, IBV_WC_SUCCESS, IBV_WC_RECV, VPKT_GRH + p->paylen,
		      (p->opcode & 0x1f) == VOP_SEND_ONLY_IMM, p->src_qp);
}

static bool pkey_ok(struct vqp *qp, uint16_t pkey)
{
	uint16_t mine = verbs_pkey_at(qp->attr.pkey_index);

	/* Same partition, and not both limited members (IBA 10.9.3). */
	return (mine & 0x7fff) && (mine & 0x7fff) == (pkey & 0x7fff) && ((mine | pkey) & 0x8000);
}

static bool state_receives(struct vqp *qp)
{
	enum ibv_qp_state s = qp->attr.qp_state;

	return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE;
}

static void mcast_rx(const struct vpkt *p, const uint8_t *raw)
{
	uint32_t i;

	if (!p->grh || !verbs_hca.qp_hash)
		return;
	for (i = 0; i < 4096; i++) {
		struct vqp *qp;

		for (qp = verbs_hca.qp_hash[i]; qp; qp = qp->hnext) {
			struct vmcast *m;

			if (!qp->mcast || !state_receives(qp))
				continue;
			/* Our own sends are not looped back to the sender. */
			if (p->src_qp == vqp_ibqp(qp)->qp_num && p->slid == verbs_hca.dev->port.lid)
				continue;
			for (m = qp->mcast; m; m = m->next)
				if (m->lid == p->dlid && !memcmp(m->gid.raw, p->dgid, 16))
					break;
			if (m && pkey_ok(qp, p->pkey))
				ud_deliver(qp, p, raw);
		}
	}
}

/*
 * An XRC request is for the SRQ its XRCETH names, which must be in the
 * target QP's domain: otherwise, when it is the expected PSN, the request
 * is invalid (NAK, QP to error, as for any invalid request); out of
 * sequence it is dropped.
 */
static bool xrc_target(struct vqp *qp, const struct vpkt *p)
{
	qp->xsrq = verbs_xrc_srq_find(qp->xrcd, p->srqn);
	if (qp->xsrq)
		return true;
	if (vpsn_cmp(p->psn, qp->epsn) == 0) {
		rc_nak(qp, p, VNAK_INV_REQ);
		responder_error(qp, IBV_EVENT_QP_REQ_ERR);
	}
	return false;
}

void verbs_rx_packet(const uint8_t *buf, size_t len)
{
	struct vpkt p;
	struct vqp *qp;
	uint8_t tp;

	if (vpkt_decode(buf, len, &p) || !verbs_hca.dev)
		return;
	verbs_hca.rx_pkts++;
	tp = p.opcode & 0xe0;
	if (tp == VOP_UD && p.dlid >= VLID_MCAST_MIN && p.dlid != 0xffff) {
		mcast_rx(&p, buf);
		return;
	}
	qp = verbs_qp_lookup(p.dqpn);
	if (!qp) {
		verbs_hca.drop_qpn++;
		return;
	}
	if (!state_receives(qp)) {
		/* RESET/INIT/ERR QPs silently drop (IBA 10.3.1). */
		verbs_hca.drop_state++;
		return;
	}
	if (!pkey_ok(qp, p.pkey)) {
		verbs_hca.drop_pkey++;
		return;
	}
	switch (vqp_ibqp(qp)->qp_type) {
	case IBV_QPT_UD:
		if (tp == VOP_UD)
			ud_deliver(qp, &p, buf);
		return;
	case IBV_QPT_UC:
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		if (tp != vqp_transport(vqp_ibqp(qp)->qp_type))
			return;
		/* Connected: only our peer's port may talk to us. */
		if (p.slid != qp->attr.ah_attr.dlid)
			return;
		switch (p.opcode & 0x1f) {
		case VOP_ACK:
		case VOP_ATOMIC_ACK:
		case VOP_READ_RESP_FIRST:
		case VOP_READ_RESP_MIDDLE:
		case VOP_READ_RESP_LAST:
		case VOP_READ_RESP_ONLY:
			if (vqp_reliable(vqp_ibqp(qp)->qp_type) &&
			    vqp_ibqp(qp)->qp_type != IBV_QPT_XRC_RECV &&
			    (qp->attr.qp_state == IBV_QPS_RTS || qp->attr.qp_state == IBV_QPS_SQD))
				rc_requester_rx(qp, &p);
			return;
		default:
			if (vqp_ibqp(qp)->qp_type == IBV_QPT_XRC_SEND)
				return; /* it has no receive side */
			if (vqp_ibqp(qp)->qp_type == IBV_QPT_XRC_RECV && !xrc_target(qp, &p))
				return;
			rc_uc_responder_rx(qp, &p);
			return;
		}
	default:
		return;
	}
}

/* Whether a retransmission or RNR timer has expired. */
bool verbs_timers_due(uint64_t now)
{
	for (struct vqp *qp = verbs_hca.active; qp; qp = qp->anext)
		if (qp->deadline && qp->deadline <= now)
			return true;
	return false;
}

uint64_t verbs_run_timers(uint64_t now)
{
	struct vqp *qp, *next;
	uint64_t soonest = 0;

	for (qp = verbs_hca.active; qp; qp = next) {
		next = qp->anext;
		if (!qp->deadline) {
			verbs_active_del(qp);
			continue;
		}
		if (qp->deadline <= now) {
			qp->deadline = 0;
			if (qp->rnr_wait) {
				qp->rnr_wait = false;
				qp->st.retry_rnr++;
				rc_resend(qp);
			} else if (qp->send_idx) {
				qp->st.retry_timeout++;
				if (++qp->retries > qp->attr.retry_cnt) {
					sq_fail(qp, IBV_WC_RETRY_EXC_ERR);
					continue;
				}
				rc_resend(qp);
			}
			if (qp->send_idx)
				arm_timer(qp, ack_timeout_ns(qp));
			else
				verbs_active_del(qp);
			if (!qp->deadline)
				continue;
		}
		if (!soonest || qp->deadline < soonest)
			soonest = qp->deadline;
	}
	return soonest;
}

/* ---- posting and polling ------------------------------------------------ */

static bool opcode_ok(enum ibv_qp_type t, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return t != IBV_QPT_XRC_RECV; /* it has no send queue */
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return t != IBV_QPT_UD && t != IBV_QPT_XRC_RECV;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND;
	default:
		return false;
	}
}

int verbs_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct vqp *qp = to_vqp(ibqp);
	int ret = 0;

	VERBS_LOCK();
	/* Everything this call sends (all packets of a message): one message. */
	verbs_transport_batch_begin();
	for (; wr; wr = wr->next) {
		struct vwqe *w;
		enum ibv_qp_state s = qp->attr.qp_state;
		uint64_t total = 0;
		int i;

		if (s == IBV_QPS_RESET || s == IBV_QPS_INIT || s == IBV_QPS_RTR ||
		    !opcode_ok(ibqp->qp_type, wr->opcode) || wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
		    (ibqp->qp_type == IBV_QPT_UD && !wr->wr.ud.ah)) {
			ret = EINVAL;
			break;
		}
		if (qp->sq.count >= qp->sq.size) {
			ret = ENOMEM;
			break;
		}
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > 0x80000000ull || ((wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
					       wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) &&
					      total < 8)) {
			ret = EINVAL;
			break;
		}
		if ((wr->send_flags & IBV_SEND_INLINE) &&
		    (total > qp->cap.max_inline_data || wr->opcode == IBV_WR_RDMA_READ ||
		     wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		     wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
			ret = EINVAL;
			break;
		}
		w = &qp->sq.q[(qp->sq.head + qp->sq.count) % qp->sq.size];
		if ((wr->send_flags & IBV_SEND_INLINE) && !w->inl &&
		    !(w->inl = malloc(VERBS_MAX_INLINE))) {
			ret = ENOMEM;
			break;
		}
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->flags = wr->send_flags;
		w->imm = wr->imm_data;
		w->num_sge = wr->num_sge;
		memcpy(w->sg, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sg));
		w->len = (uint32_t)total;
		w->sent = false;
		w->read_off = 0;
		w->remote_srqn =
		    ibqp->qp_type == IBV_QPT_XRC_SEND ? wr->qp_type.xrc.remote_srqn : 0;
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w->raddr = wr->wr.atomic.remote_addr;
			w->rkey = wr->wr.atomic.rkey;
			w->compare_add = wr->wr.atomic.compare_add;
			w->swap = wr->wr.atomic.swap;
			w->len = 8;
		} else if (ibqp->qp_type == IBV_QPT_UD) {
			w->ah = to_vah(wr->wr.ud.ah);
			w->remote_qpn = wr->wr.ud.remote_qpn;
			w->remote_qkey = wr->wr.ud.remote_qkey;
		} else {
			w->raddr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
		if (wr->send_flags & IBV_SEND_INLINE) {
			uint32_t off = 0;

			/* Inline data is copied now: the buffer may be reused. */
			for (i = 0; i < wr->num_sge; i++) {
				memcpy(w->inl + off, (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				off += wr->sg_list[i].length;
			}
		}
		qp->sq.count++;
		if (s == IBV_QPS_ERR) {
			/* Posting to a QP in error completes with flush. */
			verbs_qp_flush(qp);
		}
	}
	if (ret && bad)
		*bad = wr;
	sq_progress(qp);
	verbs_transport_batch_end();
	VERBS_UNLOCK();
	return ret;
}

static int post_rq(struct vqp *qp, struct vwq *rq, uint32_t max_sge, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad)
{
	int ret = 0;

	for (; wr; wr = wr->next) {
		struct vwqe *w;
		uint64_t total = 0;
		int i;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			ret = EINVAL;
			break;
		}
		if (rq->count >= rq->size) {
			ret = ENOMEM;
			break;
		}
		w = &rq->q[(rq->head + rq->count) % rq->size];
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		memcpy(w->sg, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sg));
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		w->len = total > 0xffffffffull ? 0xffffffffu : (uint32_t)total;
		w->flags = 0;
		rq->count++;
		if (qp && qp->attr.qp_state == IBV_QPS_ERR)
			verbs_qp_flush(qp);
	}
	if (ret && bad)
		*bad = wr;
	return ret;
}

int verbs_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vqp *qp = to_vqp(ibqp);
	int ret;

	VERBS_LOCK();
	if (ibqp->srq || qp->attr.qp_state == IBV_QPS_RESET || ibqp->qp_type == IBV_QPT_XRC_SEND ||
	    ibqp->qp_type == IBV_QPT_XRC_RECV) {
		VERBS_UNLOCK();
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	ret = post_rq(qp, &qp->rq, qp->cap.max_recv_sge, wr, bad);
	VERBS_UNLOCK();
	return ret;
}

int verbs_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vsrq *srq = to_vsrq(ibsrq);
	int ret;

	VERBS_LOCK();
	ret = post_rq(NULL, &srq->rq, srq->max_sge, wr, bad);
	VERBS_UNLOCK();
	return ret;
}

/* Receive and process what is waiting on the transport, from any thread.
 * Returns the number of packets processed. */
int verbs_rx_pending(int max, bool hold_acks)
{
	static __thread uint8_t buf[VERBS_PKT_MAX];
	int done = 0;

	/* Receive under the lock: two threads taking packets in turn must
	 * not process them out of the order the wire delivered them.  The
	 * packets that arrived in one message are processed in one go, and
	 * what they make us send (ACKs, READ responses) leaves in one. */
	for (int i = 0; i < max; i++) {
		ssize_t n;

		VERBS_LOCK();
		verbs_transport_batch_begin();
		do {
			n = verbs_transport_recv(buf, sizeof(buf));
			if (n > 0)
				verbs_rx_packet(buf, (size_t)n);
		} while (n >= 0 && verbs_transport_buffered());
		if (!hold_acks)
			verbs_ack_flush();
		verbs_transport_batch_end();
		VERBS_UNLOCK();
		if (n < 0)
			break;
		done++;
	}
	return done;
}

/*
 * A thread spinning on ibv_poll_cq plays the HCA itself: it takes what the
 * wire brought without waiting for the HCA thread to be scheduled, and
 * holds the wire lease meanwhile (verbs_api.c).  Spinning is recognised by
 * empty polls in quick succession, not by one or two polls of an
 * application about to wait for an event or busy elsewhere between polls;
 * a lone empty poll does not look at the wire at all.
 * After one quick look a spinner yields the CPU at every empty poll, so
 * that on this machine (fewer cores than spinners) the daemon and the peer
 * still run, but it keeps its core awake: in a virtual machine, waking a
 * halted vCPU costs more than the packet's whole trip.  (There were 8
 * quick looks: on one CPU each side then looked 8 times at an empty socket
 * before letting its peer answer, most of the round trip; a yield with
 * nothing else to run on the CPU returns at once.)  (Sleeping on the
 * socket as soon as the machine looks crowded was measured too: faster
 * under load, but it reorders the end of ibv_srq_pingpong's racy exchange;
 * the failures seen then were fabsimd dropping an exiting process's last
 * ACKs, since fixed, so that choice may deserve a new measurement.)  One that has found nothing for
 * a long time (SPIN_IDLE_NS) is not waiting for a reply any more: it sleeps on the socket, a packet
 * wakes it, and it never sleeps longer than SPIN_SLEEP_NS nor while any CQ holds a completion the
 * application may be about to poll.
 */
#define SPIN_GAP_NS 50000ull	/* empty polls closer than this: spinning */
#define SPIN_QUICK 2		/* empty polls before yielding */
#define SPIN_IDLE_NS 1000000ull /* spinning with nothing coming in */
#define SPIN_SLEEP_NS 100000ull /* longest sleep of an idle spinner */

static __thread unsigned int empty_run; /* quick empty polls in a row */
static __thread uint64_t last_empty_ns, spin_since_ns;

static void spin_wait(uint64_t now)
{
	int fd = verbs_transport_fd();
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	struct timespec ts = {.tv_nsec = (long)SPIN_SLEEP_NS};

	/* A lone empty poll leaves the wire alone: if this thread holds the
	 * lease it looks again soon (its next poll, ibv_get_cq_event) or the
	 * lease ends and the HCA thread does; otherwise the HCA thread is
	 * on the wire.  Typically it is the poll before or after arming the
	 * CQ: ibv_get_cq_event looks next, and the recv found nothing. */
	if (empty_run <= 1)
		return;
	/* A spinner holds ACKs: its lease bounds how long they wait. */
	verbs_wire_lease(now + VERBS_LEASE_NS);
	if (verbs_rx_pending(16, true)) {
		spin_since_ns = now;
		return;
	}
	/* One quick look first: the reply may be on its way. */
	if (empty_run <= SPIN_QUICK)
		return;
	/* Nothing came and the application sends nothing: ACKs leave, but
	 * for lazy ones not due yet. */
	VERBS_LOCK();
	verbs_ack_flush_due();
	VERBS_UNLOCK();
	if (fd < 0 || __atomic_load_n(&verbs_hca.cqes, __ATOMIC_RELAXED)) {
		sched_yield();
		return;
	}
	if (now - spin_since_ns < SPIN_IDLE_NS) {
		sched_yield();
		return;
	}
	if (ppoll(&pfd, 1, &ts, NULL) == 1 && (pfd.revents & POLLIN))
		verbs_rx_pending(16, true);
}

int verbs_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct vcq *cq = to_vcq(ibcq);
	int i;

	if (n < 0)
		return -1;
	/* Unlocked peek: an empty CQ is the common case when spinning. */
	if (!__atomic_load_n(&cq->count, __ATOMIC_ACQUIRE)) {
		uint64_t now = verbs_now_ns();

		if (now - last_empty_ns > SPIN_GAP_NS) {
			empty_run = 0;
			spin_since_ns = now;
		}
		last_empty_ns = now;
		empty_run++;
		spin_wait(now);
		if (!__atomic_load_n(&cq->count, __ATOMIC_ACQUIRE))
			return 0;
	}
	empty_run = 0;
	spin_since_ns = last_empty_ns;
	/* Completions the HCA thread made while it served the wire, taken by
	 * a thread that waits for completion events: it takes the wire back,
	 * since it looks again when it next waits (if it does not, the lease
	 * ends and the HCA thread looks).  Otherwise such an application,
	 * always finding its completion already there (its peer answered
	 * while it was preempted after posting, as on one CPU), never waits
	 * again, never leases, and leaves the HCA thread on the wire for
	 * good: one more wakeup for every packet.  Not for other threads:
	 * one that spins on memory next, as ib_write_lat does for its peer's
	 * RDMA WRITE, would leave that WRITE unread until the lease ends. */
	if (verbs_thread_waits && !__atomic_load_n(&verbs_hca.hca_look_at, __ATOMIC_RELAXED))
		verbs_wire_lease(verbs_now_ns() + VERBS_LEASE_NS);
	VERBS_LOCK();
	for (i = 0; i < n && cq->count; i++) {
		wc[i] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		__atomic_store_n(&cq->count, cq->count - 1, __ATOMIC_RELAXED);
		__atomic_store_n(&verbs_hca.cqes, verbs_hca.cqes - 1, __ATOMIC_RELAXED);
	}
	VERBS_UNLOCK();
	return i;
}

int verbs_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vcq *cq = to_vcq(ibcq);

	empty_run = 0;
	VERBS_LOCK();
	cq->armed = true;
	cq->solicited_only = solicited_only;
	VERBS_UNLOCK();
	return 0;
}
