/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * QPs and SRQs on ids, as librdmacm makes them: the device's default PD
 * when the caller gives none, a completion channel and CQ for each queue
 * the caller gives no CQ for (kept on the id for rdma_get_*_comp), and a
 * connected QP moved to INIT at once (ucma_init_conn_qp).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "lib/cma.h"

int cma_init_qp_attr(struct cma_id *id, struct ibv_qp_attr *attr, int *mask);

static int modify(struct cma_id *id, struct ibv_qp_attr *a, int mask)
{
	int rc = ibv_modify_qp(id->id.qp, a, mask);

	return rc > 0 ? -rc : rc ? -errno : 0;
}

/*
 * rdma_create_qp's move to INIT (ucma_init_conn_qp): on a passive id with
 * the INIT its REQ fixed (on_req asked the engine for it), otherwise with
 * the id's (cma_init_qp_attr).
 */
static int create_qp_init(struct cma_id *id)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT};

	if (!id->req_init || !id->port)
		return cma_qp_move(id, IBV_QPS_INIT);
	a.qp_access_flags = id->req_init_access;
	a.pkey_index = id->req_init_pkey_index;
	a.port_num = id->port->port_num;
	return modify(id, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
}

int cma_qp_move(struct cma_id *id, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = {.qp_state = state};
	int mask, rc = cma_init_qp_attr(id, &a, &mask);

	return rc ? rc : modify(id, &a, mask);
}

int cma_conn_qp_move(struct cma_id *id, struct cm_runtime *rt, uint32_t conn,
		     enum ibv_qp_state state)
{
	struct ibv_qp_attr a = {.qp_state = state};
	int mask, rc = cma_conn_qp_attr(id, rt, conn, &a, &mask);

	return rc ? rc : modify(id, &a, mask);
}

static int modify_cb(void *id, struct ibv_qp_attr *a, int mask)
{
	return modify(id, a, mask);
}

/*
 * librdmacm's INIT -> INIT then INIT -> RTR on the REP
 * (ucma_modify_qp_rtr), in one modify when it can be
 * (cm_qp_modify_to_rtr): a QP rdma_create_qp made is at INIT on the id's
 * port.
 */
int cma_conn_qp_rtr(struct cma_id *id, struct cm_runtime *rt, uint32_t conn)
{
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT}, rtr = {.qp_state = IBV_QPS_RTR};
	int init_mask, rtr_mask;
	int rc = cma_conn_qp_attr(id, rt, conn, &init, &init_mask);

	if (!rc)
		rc = cma_conn_qp_attr(id, rt, conn, &rtr, &rtr_mask);
	return rc ? rc : cm_qp_modify_to_rtr(modify_cb, id, &init, init_mask, &rtr, rtr_mask);
}

void cma_qp_to_err(struct cma_id *id)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (id->id.qp)
		ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

static struct ibv_pd *default_pd(struct cma_id *id)
{
	struct cma_device *d;
	struct ibv_pd *pd;

	if (!id->port)
		return NULL;
	d = id->port->dev;
	cma_lock();
	if (!d->pd)
		d->pd = ibv_alloc_pd(d->verbs);
	pd = d->pd;
	cma_unlock();
	return pd;
}

/*
 * The device's XRC domain, for XRC ids given none, as librdmacm opens one
 * per device (ucma_get_xrcd): not shared through a file.
 */
static struct ibv_xrcd *default_xrcd(struct cma_id *id)
{
	struct ibv_xrcd_init_attr a = {
	    .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
	    .fd = -1,
	    .oflags = O_CREAT,
	};
	struct cma_device *d;
	struct ibv_xrcd *x;

	if (!id->port)
		return NULL;
	d = id->port->dev;
	cma_lock();
	if (!d->xrcd)
		d->xrcd = ibv_open_xrcd(d->verbs, &a);
	x = d->xrcd;
	cma_unlock();
	return x;
}

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq && id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->recv_cq_channel && id->recv_cq_channel != id->send_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->recv_cq = id->send_cq = NULL;
	id->recv_cq_channel = id->send_cq_channel = NULL;
}

static int make_cq(struct rdma_cm_id *id, uint32_t size, struct ibv_comp_channel **ch,
		   struct ibv_cq **cq)
{
	*ch = ibv_create_comp_channel(id->verbs);
	if (!*ch)
		return -1;
	*cq = ibv_create_cq(id->verbs, (int)(size ? size : 1), id, *ch, 0);
	if (!*cq) {
		ibv_destroy_comp_channel(*ch);
		*ch = NULL;
		return -1;
	}
	return 0;
}

static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size && make_cq(id, recv_size, &id->recv_cq_channel, &id->recv_cq))
		goto err;
	if (send_size && make_cq(id, send_size, &id->send_cq_channel, &id->send_cq))
		goto err;
	return 0;
err:
	destroy_cqs(id);
	return -1;
}

CMA_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *cm_id, struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct ibv_qp *qp;
	int rc;

	if (!cm_id || !attr || cm_id->qp || !cm_id->verbs)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = cm_id->pd ? cm_id->pd : default_pd(id);
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (!attr->pd)
		return cma_err(ENOMEM);
	if (attr->pd->context != cm_id->verbs)
		return cma_err(EINVAL);
	if ((cm_id->recv_cq && attr->recv_cq && cm_id->recv_cq != attr->recv_cq) ||
	    (cm_id->send_cq && attr->send_cq && cm_id->send_cq != attr->send_cq))
		return cma_err(EINVAL);
	if (attr->qp_type != cm_id->qp_type)
		return cma_err(EINVAL);
	if (cm_id->qp_type == IBV_QPT_XRC_RECV &&
	    (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)) {
		attr->xrcd = default_xrcd(id);
		if (!attr->xrcd)
			return cma_err(errno ? errno : ENOMEM);
		attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
	}
	/*
	 * An XRC target QP has no queues or CQs of its own: its receives
	 * complete in its SRQ's CQ, which rdma_create_srq makes, so none is
	 * made here (librdmacm makes one, and replaces it with the SRQ's).
	 */
	if (cm_id->qp_type != IBV_QPT_XRC_RECV &&
	    create_cqs(cm_id, attr->send_cq || cm_id->send_cq ? 0 : attr->cap.max_send_wr,
		       attr->recv_cq || cm_id->recv_cq ? 0 : attr->cap.max_recv_wr))
		return -1;
	if (!attr->send_cq)
		attr->send_cq = cm_id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = cm_id->recv_cq;
	if (!attr->srq && cm_id->srq)
		attr->srq = cm_id->srq;
	qp = ibv_create_qp_ex(cm_id->verbs, attr);
	if (!qp) {
		int e = errno;

		if (cm_id->qp_type != IBV_QPT_XRC_RECV)
			destroy_cqs(cm_id);
		return cma_err(e ? e : ENOMEM);
	}
	/* Under cma.lock: the loop thread reads it (cma_events.c), the id table its number. */
	cma_lock();
	cm_id->qp = qp;
	id->qp_num = qp->qp_num;
	id->has_qp_num = true;
	cma_unlock();
	rc = create_qp_init(id);
	/* A datagram QP is ready at once: RTR, RTS (ucma_init_ud_qp). */
	if (!rc && cm_id->qp_type == IBV_QPT_UD)
		rc = cma_qp_move(id, IBV_QPS_RTR);
	if (!rc && cm_id->qp_type == IBV_QPT_UD)
		rc = cma_qp_move(id, IBV_QPS_RTS);
	if (rc) {
		cma_lock();
		cm_id->qp = NULL;
		id->has_qp_num = false;
		cma_unlock();
		ibv_destroy_qp(qp);
		if (cm_id->qp_type != IBV_QPT_XRC_RECV)
			destroy_cqs(cm_id);
		return cma_err(-rc);
	}
	return 0;
}

CMA_EXPORT int rdma_create_qp(struct rdma_cm_id *cm_id, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int rc;

	if (!cm_id || !qp_init_attr)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : cm_id->pd;
	rc = rdma_create_qp_ex(cm_id, &ex);
	if (rc)
		return rc;
	memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
	return 0;
}

CMA_EXPORT void rdma_destroy_qp(struct rdma_cm_id *cm_id)
{
	struct ibv_qp *qp;

	if (!cm_id)
		return;
	if (cma_id_inherited(cm_id)) {
		errno = EBADF;
		return;
	}
	/* Off the id under cma.lock before it is freed: others read it there. */
	cma_lock();
	qp = cm_id->qp;
	cm_id->qp = NULL;
	cma_id_of(cm_id)->has_qp_num = false;
	cma_unlock();
	if (qp)
		ibv_destroy_qp(qp);
	/* An XRC target's CQ is its SRQ's (ucma_destroy_cqs). */
	if (cm_id->qp_type != IBV_QPT_XRC_RECV || !cm_id->srq)
		destroy_cqs(cm_id);
}

CMA_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *cm_id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;
	bool xrc, made;

	if (!cm_id || !attr || !cm_id->verbs || cm_id->srq)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = cm_id->pd ? cm_id->pd : default_pd(cma_id_of(cm_id));
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (!attr->pd)
		return cma_err(ENOMEM);
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC &&
	    attr->srq_type != IBV_SRQT_XRC)
		return cma_err(EOPNOTSUPP); /* tag matching */
	xrc = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_XRC;
	if (xrc && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd)) {
		attr->xrcd = default_xrcd(cma_id_of(cm_id));
		if (!attr->xrcd)
			return cma_err(errno ? errno : ENOMEM);
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
	}
	/*
	 * A receive CQ for rdma_get_recv_comp, as librdmacm makes one; an
	 * XRC SRQ's receives complete in it (the id's, unless given one).
	 */
	made = !cm_id->recv_cq && (!xrc || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq);
	if (made && make_cq(cm_id, attr->attr.max_wr, &cm_id->recv_cq_channel, &cm_id->recv_cq))
		return -1;
	if (xrc && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq)) {
		attr->cq = cm_id->recv_cq;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	}
	if (xrc)
		srq = ibv_create_srq_ex(cm_id->verbs, attr);
	else
		srq = ibv_create_srq(attr->pd, (struct ibv_srq_init_attr *)&attr->srq_context);
	if (!srq) {
		int e = errno;

		/* Only the CQ made here: a QP's stay with it. */
		if (made) {
			ibv_destroy_cq(cm_id->recv_cq);
			ibv_destroy_comp_channel(cm_id->recv_cq_channel);
			cm_id->recv_cq = NULL;
			cm_id->recv_cq_channel = NULL;
		}
		return cma_err(e ? e : ENOMEM);
	}
	cm_id->srq = srq;
	return 0;
}

CMA_EXPORT int rdma_create_srq(struct rdma_cm_id *cm_id, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int rc;

	if (!cm_id || !attr)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	/* An XRC target id's SRQ is an XRC SRQ (librdmacm's rdma_create_srq). */
	ex.srq_type = cm_id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	ex.pd = pd ? pd : cm_id->pd;
	rc = rdma_create_srq_ex(cm_id, &ex);
	if (!rc)
		memcpy(attr, &ex, sizeof(*attr));
	return rc;
}

CMA_EXPORT void rdma_destroy_srq(struct rdma_cm_id *cm_id)
{
	if (!cm_id || !cm_id->srq)
		return;
	if (cma_id_inherited(cm_id)) {
		errno = EBADF;
		return;
	}
	ibv_destroy_srq(cm_id->srq);
	cm_id->srq = NULL;
	if (!cm_id->qp)
		destroy_cqs(cm_id);
}
