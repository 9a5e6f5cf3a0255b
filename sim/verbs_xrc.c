/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * XRC (IBA annex A14) in the soft verbs: XRC domains, XRC SRQs and their
 * numbers.  An XRC_SEND QP sends RC's operations with an XRCETH naming an
 * SRQ of the target; the XRC_RECV QP that receives them takes the receive
 * WQE from that SRQ, which must be in the QP's domain, and completes it in
 * the SRQ's CQ (verbs_datapath.c).  The QP side is in verbs_qp.c.
 *
 * A domain lives in one process: opening one on a file (to share it with
 * other processes, IBV_XRCD_INIT_ATTR_FD other than -1) is refused with
 * EOPNOTSUPP.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "sim/verbs_priv.h"

#define to_vxrcd(p) ((struct vxrcd *)(p))

/* XRC SRQs of this process, by number; numbers are never 0. */
static struct vsrq *xrc_srqs;
static uint32_t next_srqn = 1;

static struct vsrq *srq_by_num(uint32_t srqn)
{
	for (struct vsrq *s = xrc_srqs; s; s = s->xnext)
		if (s->srqn == srqn)
			return s;
	return NULL;
}

struct vsrq *verbs_xrc_srq_find(const struct vxrcd *xrcd, uint32_t srqn)
{
	struct vsrq *s = srq_by_num(srqn);

	return s && s->xrcd == xrcd ? s : NULL;
}

struct ibv_xrcd *verbs_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *a)
{
	struct vxrcd *x;

	if (!ctx || !a || (a->comp_mask & ~(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS))) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->comp_mask & IBV_XRCD_INIT_ATTR_FD) && a->fd != -1) {
		errno = EOPNOTSUPP; /* a domain shared through a file */
		return NULL;
	}
	/* Without a file there is nothing to open: the domain is made. */
	if ((a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) && !(a->oflags & O_CREAT)) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	x->xrcd.context = ctx;
	return &x->xrcd;
}

int verbs_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct vxrcd *x = to_vxrcd(xrcd);

	if (!xrcd)
		return EINVAL;
	VERBS_LOCK();
	if (x->refs) {
		VERBS_UNLOCK();
		return EBUSY;
	}
	VERBS_UNLOCK();
	free(x);
	return 0;
}

struct ibv_srq *verbs_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct ibv_srq *ib;
	struct vsrq *srq;

	if (!ctx || !a || (a->comp_mask & ~known) || !(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
	    !a->pd || a->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) || a->srq_type == IBV_SRQT_BASIC)
		return ibv_create_srq(a->pd, (struct ibv_srq_init_attr *)a);
	if (a->srq_type != IBV_SRQT_XRC) {
		errno = EOPNOTSUPP; /* tag matching */
		return NULL;
	}
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !a->xrcd ||
	    !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->cq || a->cq->context != ctx ||
	    a->xrcd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	ib = ibv_create_srq(a->pd, (struct ibv_srq_init_attr *)a);
	if (!ib)
		return NULL;
	srq = to_vsrq(ib);
	VERBS_LOCK();
	srq->xrcd = to_vxrcd(a->xrcd);
	srq->cq = a->cq;
	do {
		srq->srqn = next_srqn;
		next_srqn = (next_srqn + 1) & VPSN_MASK;
		if (!next_srqn)
			next_srqn = 1;
	} while (srq_by_num(srq->srqn));
	srq->xnext = xrc_srqs;
	xrc_srqs = srq;
	srq->xrcd->refs++;
	to_vcq(a->cq)->refs++;
	VERBS_UNLOCK();
	return ib;
}

void verbs_xrc_srq_gone(struct vsrq *srq)
{
	for (struct vsrq **pp = &xrc_srqs; *pp; pp = &(*pp)->xnext)
		if (*pp == srq) {
			*pp = srq->xnext;
			break;
		}
	/* A target QP in the middle of a message to it forgets it. */
	for (uint32_t b = 0; verbs_hca.qp_hash && b < QP_HASH; b++)
		for (struct vqp *qp = verbs_hca.qp_hash[b]; qp; qp = qp->hnext)
			if (qp->xsrq == srq) {
				qp->xsrq = NULL;
				qp->cur_rwqe_taken = false;
				qp->in_msg = false;
			}
	srq->xrcd->refs--;
	to_vcq(srq->cq)->refs--;
	srq->xrcd = NULL;
	srq->cq = NULL;
}

int verbs_get_srq_num(struct ibv_srq *ibsrq, uint32_t *num)
{
	struct vsrq *srq = to_vsrq(ibsrq);

	if (!ibsrq || !num)
		return EINVAL;
	VERBS_LOCK();
	if (!srq->xrcd) {
		VERBS_UNLOCK();
		return EINVAL; /* only XRC SRQs have a number */
	}
	*num = srq->srqn;
	VERBS_UNLOCK();
	return 0;
}
