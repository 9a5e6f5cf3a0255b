/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * QPs of the soft HCA: create (also the extended form with the ibv_wr_*
 * send API perftest uses by default), modify through the state machine
 * of verbs_qp_fsm.c, query, destroy, multicast attach/detach, and the
 * flush of outstanding work when a QP enters the error state.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/verbs_priv.h"
#include "sim/verbs_qp_cap.h"
#include "sim/verbs_proto.h"
#include "sim/verbs_qp_fsm.h"

/*
 * QPNs, as an HCA allocates them: increasing, round-robin over the 24-bit
 * space, so that a freed QPN comes back only after a long time.  IBA
 * (12.9.8.3.1) forbids reusing a QPN still in the CM's TimeWait, and a
 * CM refuses such a connect; handing freed QPNs out again within one
 * block made every 255th connect/disconnect cycle fail that way.
 *
 * The fabric hands out blocks of FSP_VERBS_QPN_BLOCK_SIZE QPNs
 * round-robin over the port's QPN space.  QPNs are taken in order from
 * the current block; when it is used up the next one is asked for, and a
 * block none of whose QPs is left goes back to the fabric
 * (FSP_VERBS_QPN_RELEASE), which hands it out again only once its cursor
 * has gone round the whole space.  A process thus holds the blocks of
 * its live QPs and the current one, not every block it ever used.
 */
#define QBLK_HASH 64

struct qblock {
	uint32_t block; /* QPN / FSP_VERBS_QPN_BLOCK_SIZE */
	uint32_t live;	/* QPs of the block not destroyed yet */
	struct qblock *hnext;
};

static struct {
	struct qblock *hash[QBLK_HASH];
	struct qblock *cur; /* QPNs are taken from here, from index `next` */
	uint32_t next;
} qpns;

static struct qblock **qblock_slot(uint32_t block)
{
	struct qblock **pp;

	for (pp = &qpns.hash[block % QBLK_HASH]; *pp; pp = &(*pp)->hnext)
		if ((*pp)->block == block)
			break;
	return pp;
}

/* Under VERBS_LOCK: b goes back to the fabric if none of it is in use. */
static void qblock_maybe_release(struct qblock *b)
{
	struct qblock **pp;

	if (b->live || b == qpns.cur)
		return;
	pp = qblock_slot(b->block);
	if (*pp == b)
		*pp = b->hnext;
	verbs_transport_qpn_release(b->block * FSP_VERBS_QPN_BLOCK_SIZE);
	free(b);
}

/* Under VERBS_LOCK: the next QPN of the current block, if one is left. */
static bool qpn_take(uint32_t *qpn)
{
	while (qpns.cur && qpns.next < FSP_VERBS_QPN_BLOCK_SIZE) {
		uint32_t q = qpns.cur->block * FSP_VERBS_QPN_BLOCK_SIZE + qpns.next++;

		/* QP0/QP1 and the multicast QPN are never QPs of ours. */
		if (q <= 1 || q >= VQPN_MCAST)
			continue;
		qpns.cur->live++;
		*qpn = q;
		return true;
	}
	return false;
}

/* Called without VERBS_LOCK: may ask the daemon for a block. */
static int qpn_alloc(uint32_t *qpn)
{
	struct qblock *b, *old;
	uint32_t base;
	int ret;

	for (;;) {
		VERBS_LOCK();
		if (qpn_take(qpn)) {
			VERBS_UNLOCK();
			return 0;
		}
		VERBS_UNLOCK();
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		ret = verbs_transport_qpn_block(&base);
		if (ret) {
			free(b);
			return ret;
		}
		b->block = base / FSP_VERBS_QPN_BLOCK_SIZE;
		VERBS_LOCK();
		/* Another thread may have got one meanwhile: its rest is
		 * left, as a block used up. */
		old = qpns.cur;
		b->hnext = qpns.hash[b->block % QBLK_HASH];
		qpns.hash[b->block % QBLK_HASH] = b;
		qpns.cur = b;
		qpns.next = 0;
		if (old)
			qblock_maybe_release(old);
		ret = qpn_take(qpn);
		VERBS_UNLOCK();
		if (ret)
			return 0;
	}
}

/* Under VERBS_LOCK: the QP numbered qpn is gone. */
static void qpn_free(uint32_t qpn)
{
	struct qblock *b = *qblock_slot(qpn / FSP_VERBS_QPN_BLOCK_SIZE);

	if (!b || !b->live)
		return;
	b->live--;
	qblock_maybe_release(b);
}

struct vqp *verbs_qp_lookup(uint32_t qpn)
{
	struct vqp *qp;

	if (!verbs_hca.qp_hash)
		return NULL;
	for (qp = verbs_hca.qp_hash[qpn % QP_HASH]; qp; qp = qp->hnext)
		if (vqp_ibqp(qp)->qp_num == qpn)
			return qp;
	return NULL;
}

int verbs_wq_init(struct vwq *wq, uint32_t size)
{
	wq->q = calloc(size ? size : 1, sizeof(*wq->q));
	wq->size = size;
	wq->head = wq->count = 0;
	return wq->q ? 0 : -ENOMEM;
}

void verbs_wq_free(struct vwq *wq)
{
	uint32_t i;

	for (i = 0; wq->q && i < wq->size; i++)
		free(wq->q[i].inl);
	free(wq->q);
	wq->q = NULL;
}

static void flush_wq(struct vqp *qp, struct vwq *wq, struct ibv_cq *cq, bool send)
{
	while (wq->count) {
		struct vwqe *w = &wq->q[wq->head];
		struct ibv_wc wc = {
		    .wr_id = w->wr_id,
		    .status = IBV_WC_WR_FLUSH_ERR,
		    .opcode = send ? IBV_WC_SEND : IBV_WC_RECV,
		    .qp_num = vqp_ibqp(qp)->qp_num,
		};

		verbs_cq_push(to_vcq(cq), &wc, false);
		wq->head = (wq->head + 1) % wq->size;
		wq->count--;
	}
}

void verbs_qp_flush(struct vqp *qp)
{
	struct ibv_qp *ib = vqp_ibqp(qp);

	flush_wq(qp, &qp->sq, ib->send_cq, true);
	if (qp->cur_rwqe_taken && (ib->recv_cq || qp->xsrq)) {
		/* The receive a half-arrived SEND was filling is the oldest. */
		struct ibv_wc wc = {
		    .wr_id = qp->cur_rwqe.wr_id,
		    .status = IBV_WC_WR_FLUSH_ERR,
		    .opcode = IBV_WC_RECV,
		    .qp_num = ib->qp_num,
		};

		verbs_cq_push(to_vcq(ib->recv_cq ? ib->recv_cq : qp->xsrq->cq), &wc, false);
	}
	qp->cur_rwqe_taken = false;
	if (!ib->srq)
		flush_wq(qp, &qp->rq, ib->recv_cq, false);
	qp->send_idx = 0;
	qp->in_msg = false;
	verbs_active_del(qp);
}

void verbs_qp_to_error(struct vqp *qp)
{
	qp->attr.qp_state = IBV_QPS_ERR;
	vqp_ibqp(qp)->state = IBV_QPS_ERR;
	verbs_qp_flush(qp);
}

static void qp_reset(struct vqp *qp)
{
	/* RESET discards everything without completions. */
	qp->sq.head = qp->sq.count = 0;
	qp->rq.head = qp->rq.count = 0;
	qp->send_idx = 0;
	qp->in_msg = false;
	qp->cur_rwqe_taken = false;
	qp->nak_sent = false;
	qp->have_atomic = false;
	qp->msn = 0;
	verbs_active_del(qp);
	verbs_ack_cancel(qp);
}

static void wr_api_init(struct vqp *qp);

/*
 * What each type needs: a PD and both CQs; an XRC_SEND QP no receive side
 * (its CQ and SRQ are ignored, as the kernel's); an XRC_RECV QP only its
 * domain: no PD, CQs or queues of its own, its receives are its SRQs'.
 * Fixes up a so the rest treats them alike.
 */
static bool qp_create_check(struct ibv_pd *pd, struct ibv_qp_init_attr_ex *a)
{
	switch (a->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		return pd && a->send_cq && a->recv_cq;
	case IBV_QPT_XRC_SEND:
		a->recv_cq = NULL;
		a->srq = NULL;
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
		return pd && a->send_cq;
	case IBV_QPT_XRC_RECV:
		if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd)
			return false;
		a->send_cq = a->recv_cq = NULL;
		a->srq = NULL;
		memset(&a->cap, 0, sizeof(a->cap));
		return true;
	default:
		return false;
	}
}

static struct ibv_qp *qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr_ex *a, bool wr_api)
{
	struct vqp *qp;
	struct ibv_qp *ib;
	uint32_t qpn, h;
	int ret;

	/*
	 * Only upper bounds, as rxe_qp_chk_cap: a queue of 0 WRs (a QP that
	 * only sends, or only receives) is valid; posting to it fails.
	 */
	if (!a || !qp_create_check(pd, a) || a->cap.max_send_wr > VERBS_MAX_WR ||
	    a->cap.max_recv_wr > VERBS_MAX_WR || a->cap.max_send_sge > VERBS_MAX_SGE ||
	    a->cap.max_recv_sge > VERBS_MAX_SGE || a->cap.max_inline_data > VERBS_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	ret = qpn_alloc(&qpn);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp || verbs_wq_init(&qp->sq, a->cap.max_send_wr) ||
	    verbs_wq_init(&qp->rq, a->srq ? 0 : a->cap.max_recv_wr)) {
		if (qp) {
			verbs_wq_free(&qp->sq);
			free(qp);
		}
		VERBS_LOCK();
		qpn_free(qpn);
		VERBS_UNLOCK();
		errno = ENOMEM;
		return NULL;
	}
	ib = vqp_ibqp(qp);
	ib->context = a->qp_type == IBV_QPT_XRC_RECV ? a->xrcd->context : pd->context;
	ib->qp_context = a->qp_context;
	ib->pd = pd;
	ib->send_cq = a->send_cq;
	ib->recv_cq = a->recv_cq;
	ib->srq = a->srq;
	ib->qp_num = qpn;
	ib->handle = qpn;
	ib->state = IBV_QPS_RESET;
	ib->qp_type = a->qp_type;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	qp->cap = a->cap;
	/* Inline area and SGE count from one send WQE, as rxe sizes them. */
	verbs_qp_cap_size(&qp->cap);
	if (a->srq || a->qp_type == IBV_QPT_XRC_SEND || a->qp_type == IBV_QPT_XRC_RECV)
		qp->cap.max_recv_wr = qp->cap.max_recv_sge = 0;
	else if (!qp->cap.max_recv_sge)
		qp->cap.max_recv_sge = 1;
	a->cap = qp->cap;
	qp->sq_sig_all = a->sq_sig_all;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.port_num = 1;
	qp->attr.cap = qp->cap;
	if (wr_api)
		wr_api_init(qp);
	VERBS_LOCK();
	if (!verbs_hca.qp_hash) {
		verbs_hca.qp_hash = calloc(QP_HASH, sizeof(*verbs_hca.qp_hash));
		if (!verbs_hca.qp_hash) {
			qpn_free(qpn);
			VERBS_UNLOCK();
			verbs_wq_free(&qp->sq);
			verbs_wq_free(&qp->rq);
			free(qp);
			errno = ENOMEM;
			return NULL;
		}
	}
	h = qpn % QP_HASH;
	qp->hnext = verbs_hca.qp_hash[h];
	verbs_hca.qp_hash[h] = qp;
	verbs_hca.nqp++;
	if (a->send_cq)
		to_vcq(a->send_cq)->refs++;
	if (a->recv_cq)
		to_vcq(a->recv_cq)->refs++;
	if (a->srq)
		to_vsrq(a->srq)->refs++;
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		qp->xrcd = (struct vxrcd *)a->xrcd;
		qp->xrcd->refs++;
	}
	VERBS_UNLOCK();
	return ib;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	memcpy(&a, attr, sizeof(*attr));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = qp_create(pd, &a, false);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

/* verbs_context op behind the ibv_create_qp_ex inline. */
struct ibv_qp *verbs_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	const uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

	if (!ctx || !a ||
	    !(a->comp_mask &
	      (a->qp_type == IBV_QPT_XRC_RECV ? IBV_QP_INIT_ATTR_XRCD : IBV_QP_INIT_ATTR_PD)) ||
	    (a->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			      IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (a->send_ops_flags & ~ops))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_XRCD) && a->xrcd && a->xrcd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	/* An XRC target QP keeps a PD it is given (ibv_qp.pd) but uses its
	 * SRQs' (the kernel ignores it). */
	return qp_create(a->comp_mask & IBV_QP_INIT_ATTR_PD ? a->pd : NULL, a,
			 a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct vqp *qp = to_vqp(ibqp);

	if (!ibqp || !qp->qpx.wr_start)
		return NULL;
	return &qp->qpx;
}

static int check_attr_values(struct vqp *qp, const struct ibv_qp_attr *a, int mask)
{
	const unsigned int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	struct verbs_port_info *pi = &verbs_hca.dev->port;

	if ((mask & IBV_QP_STATE) && (unsigned)a->qp_state > IBV_QPS_ERR)
		return -EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != qp->attr.qp_state)
		return -EINVAL;
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= (pi->npkeys ? pi->npkeys : 1))
		return -EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~access))
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return -EINVAL;
	if ((mask & IBV_QP_AV) && (!a->ah_attr.dlid || a->ah_attr.dlid >= VLID_MCAST_MIN ||
				   (a->ah_attr.port_num && a->ah_attr.port_num != 1) ||
				   (a->ah_attr.is_global && a->ah_attr.grh.sgid_index != 0)))
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > 16)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > 16)
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > VQPN_MCAST)
		return -EINVAL;
	return 0;
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct vqp *qp = to_vqp(ibqp);
	enum ibv_qp_state cur, next;
	int ret;

	if (!ibqp || !attr)
		return EINVAL;
	VERBS_LOCK();
	verbs_ack_flush(); /* held ACKs went out when their message came */
	cur = qp->attr.qp_state;
	next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	ret = verbs_qp_fsm_check(ibqp->qp_type, cur, next, mask);
	if (!ret)
		ret = check_attr_values(qp, attr, mask);
	if (ret) {
		VERBS_UNLOCK();
		return -ret;
	}
	verbs_qp_fsm_apply(&qp->attr, attr, mask);
	qp->attr.qp_state = next;
	qp->attr.cur_qp_state = next;
	ibqp->state = next;
	if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET)
		qp_reset(qp);
	if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR)
		verbs_qp_flush(qp);
	if (next == IBV_QPS_RTR && cur == IBV_QPS_INIT) {
		qp->epsn = qp->attr.rq_psn;
		qp->nak_sent = false;
	}
	if (next == IBV_QPS_RTS && cur == IBV_QPS_RTR) {
		qp->npsn = qp->attr.sq_psn;
		qp->retries = qp->rnr_retries = 0;
		qp->nak_resending = false;
	}
	if (next == IBV_QPS_SQD && cur == IBV_QPS_RTS) {
		/* New WQEs wait; those sent complete, then SQ_DRAINED. */
		qp->sqd_notified = false;
		verbs_sqd_check(qp);
	}
	if (next == IBV_QPS_RTS && cur == IBV_QPS_SQD)
		verbs_sq_kick(qp);
	VERBS_UNLOCK();
	return 0;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init)
{
	struct vqp *qp = to_vqp(ibqp);

	if (!ibqp || !attr || !init)
		return EINVAL;
	(void)mask; /* every attribute is cheap: return them all */
	VERBS_LOCK();
	*attr = qp->attr;
	attr->cap = qp->cap;
	attr->cur_qp_state = qp->attr.qp_state;
	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->qp_type = ibqp->qp_type;
	init->sq_sig_all = qp->sq_sig_all;
	VERBS_UNLOCK();
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct vqp *qp = to_vqp(ibqp), **pp;
	struct vmcast *m, *next;

	if (!ibqp)
		return EINVAL;
	/* An HCA handles packets as they arrive, whatever the application
	 * does: what reached us before the QP goes is handled (and ACKed)
	 * first, even if no thread was looking at the wire just then. */
	verbs_rx_pending(64, false);
	VERBS_LOCK();
	verbs_ack_flush();
	for (pp = &verbs_hca.qp_hash[ibqp->qp_num % QP_HASH]; *pp; pp = &(*pp)->hnext)
		if (*pp == qp) {
			*pp = qp->hnext;
			break;
		}
	verbs_active_del(qp);
	verbs_ack_cancel(qp);
	verbs_qp_stats_done(qp);
	verbs_hca.nqp--;
	if (ibqp->send_cq)
		to_vcq(ibqp->send_cq)->refs--;
	if (ibqp->recv_cq)
		to_vcq(ibqp->recv_cq)->refs--;
	if (ibqp->srq)
		to_vsrq(ibqp->srq)->refs--;
	if (qp->xrcd)
		qp->xrcd->refs--;
	qpn_free(ibqp->qp_num);
	m = qp->mcast;
	qp->mcast = NULL;
	VERBS_UNLOCK();
	for (; m; m = next) {
		next = m->next;
		verbs_transport_mcast(m->lid, m->gid.raw, false);
		free(m);
	}
	verbs_wq_free(&qp->sq);
	verbs_wq_free(&qp->rq);
	free(qp->batch);
	free(qp);
	return 0;
}

int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct vqp *qp = to_vqp(ibqp);
	struct vmcast *m;
	int ret;

	if (!ibqp || !gid || ibqp->qp_type != IBV_QPT_UD || lid < VLID_MCAST_MIN || lid == 0xffff ||
	    gid->raw[0] != 0xff)
		return EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return ENOMEM;
	m->gid = *gid;
	m->lid = lid;
	ret = verbs_transport_mcast(lid, gid->raw, true);
	if (ret) {
		free(m);
		return -ret;
	}
	VERBS_LOCK();
	m->next = qp->mcast;
	qp->mcast = m;
	VERBS_UNLOCK();
	return 0;
}

int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct vqp *qp = to_vqp(ibqp);
	struct vmcast **pp, *m = NULL;

	if (!ibqp || !gid)
		return EINVAL;
	VERBS_LOCK();
	for (pp = &qp->mcast; *pp; pp = &(*pp)->next)
		if ((*pp)->lid == lid && !memcmp((*pp)->gid.raw, gid->raw, 16)) {
			m = *pp;
			*pp = m->next;
			break;
		}
	VERBS_UNLOCK();
	if (!m)
		return EINVAL;
	verbs_transport_mcast(lid, gid->raw, false);
	free(m);
	return 0;
}

/* ---- ibv_wr_* send API: collect WRs, post them at wr_complete -------- */

static struct vqp *qpx_vqp(struct ibv_qp_ex *qx)
{
	return (struct vqp *)qx;
}

static struct ibv_send_wr *wr_new(struct ibv_qp_ex *qx, enum ibv_wr_opcode op)
{
	struct vqp *qp = qpx_vqp(qx);
	struct vbatch *b;

	if (!qp->batch || qp->nbatch >= qp->cap.max_send_wr) {
		qp->batch_err = ENOMEM;
		return NULL;
	}
	b = &qp->batch[qp->nbatch++];
	memset(&b->wr, 0, sizeof(b->wr));
	b->wr.wr_id = qx->wr_id;
	b->wr.send_flags = qx->wr_flags;
	b->wr.opcode = op;
	b->wr.sg_list = b->sge;
	return &b->wr;
}

static struct vbatch *wr_cur(struct ibv_qp_ex *qx)
{
	struct vqp *qp = qpx_vqp(qx);

	return qp->nbatch ? &qp->batch[qp->nbatch - 1] : NULL;
}

static void wr_start(struct ibv_qp_ex *qx)
{
	struct vqp *qp = qpx_vqp(qx);

	if (!qp->batch)
		qp->batch = calloc(qp->cap.max_send_wr, sizeof(*qp->batch));
	qp->nbatch = 0;
	qp->batch_err = qp->batch ? 0 : ENOMEM;
}

static int wr_complete(struct ibv_qp_ex *qx)
{
	struct vqp *qp = qpx_vqp(qx);
	struct ibv_send_wr *bad;
	uint32_t i;
	int ret = qp->batch_err;

	if (!ret && qp->nbatch) {
		for (i = 0; i + 1 < qp->nbatch; i++)
			qp->batch[i].wr.next = &qp->batch[i + 1].wr;
		qp->batch[qp->nbatch - 1].wr.next = NULL;
		ret = verbs_post_send(vqp_ibqp(qp), &qp->batch[0].wr, &bad);
	}
	qp->nbatch = 0;
	qp->batch_err = 0;
	return ret;
}

static void wr_abort(struct ibv_qp_ex *qx)
{
	qpx_vqp(qx)->nbatch = 0;
	qpx_vqp(qx)->batch_err = 0;
}

static void wr_send(struct ibv_qp_ex *qx)
{
	wr_new(qx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qx, __be32 imm)
{
	struct ibv_send_wr *wr = wr_new(qx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm;
}

static void wr_rdma(struct ibv_qp_ex *qx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		    __be32 imm)
{
	struct ibv_send_wr *wr = wr_new(qx, op);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = addr;
	wr->imm_data = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qx, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, __be32 imm)
{
	wr_rdma(qx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qx, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void wr_atomic(struct ibv_qp_ex *qx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		      uint64_t cmp_add, uint64_t swap)
{
	struct ibv_send_wr *wr = wr_new(qx, op);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = addr;
	wr->wr.atomic.compare_add = cmp_add;
	wr->wr.atomic.swap = swap;
}

static void wr_cmp_swp(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, uint64_t compare,
		       uint64_t swap)
{
	wr_atomic(qx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_fetch_add(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, uint64_t add)
{
	wr_atomic(qx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qx, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct vbatch *b = wr_cur(qx);

	if (!b)
		return;
	b->wr.wr.ud.ah = ah;
	b->wr.wr.ud.remote_qpn = qpn;
	b->wr.wr.ud.remote_qkey = qkey;
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qx, uint32_t remote_srqn)
{
	struct vbatch *b = wr_cur(qx);

	if (b)
		b->wr.qp_type.xrc.remote_srqn = remote_srqn;
}

static void wr_set_sge_list(struct ibv_qp_ex *qx, size_t n, const struct ibv_sge *sg)
{
	struct vbatch *b = wr_cur(qx);

	if (!b)
		return;
	if (n > VERBS_MAX_SGE) {
		qpx_vqp(qx)->batch_err = EINVAL;
		return;
	}
	memcpy(b->sge, sg, n * sizeof(*sg));
	b->wr.num_sge = (int)n;
}

static void wr_set_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sg = {.addr = addr, .length = length, .lkey = lkey};

	wr_set_sge_list(qx, 1, &sg);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qx, size_t n, const struct ibv_data_buf *buf)
{
	struct vbatch *b = wr_cur(qx);
	size_t off = 0, i;

	if (!b)
		return;
	for (i = 0; i < n; i++) {
		if (off + buf[i].length > sizeof(b->inl)) {
			qpx_vqp(qx)->batch_err = ENOMEM;
			return;
		}
		memcpy(b->inl + off, buf[i].addr, buf[i].length);
		off += buf[i].length;
	}
	b->sge[0].addr = (uintptr_t)b->inl;
	b->sge[0].length = (uint32_t)off;
	b->sge[0].lkey = 0;
	b->wr.num_sge = 1;
	b->wr.send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qx, void *addr, size_t len)
{
	struct ibv_data_buf d = {.addr = addr, .length = len};

	wr_set_inline_data_list(qx, 1, &d);
}

static void wr_api_init(struct vqp *qp)
{
	struct ibv_qp_ex *qx = &qp->qpx;

	qx->comp_mask = 0;
	qx->wr_send = wr_send;
	qx->wr_send_imm = wr_send_imm;
	qx->wr_rdma_write = wr_rdma_write;
	qx->wr_rdma_write_imm = wr_rdma_write_imm;
	qx->wr_rdma_read = wr_rdma_read;
	qx->wr_atomic_cmp_swp = wr_cmp_swp;
	qx->wr_atomic_fetch_add = wr_fetch_add;
	qx->wr_set_ud_addr = wr_set_ud_addr;
	qx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qx->wr_set_sge = wr_set_sge;
	qx->wr_set_sge_list = wr_set_sge_list;
	qx->wr_set_inline_data = wr_set_inline_data;
	qx->wr_set_inline_data_list = wr_set_inline_data_list;
	qx->wr_start = wr_start;
	qx->wr_complete = wr_complete;
	qx->wr_abort = wr_abort;
}
