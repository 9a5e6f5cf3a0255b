/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * QP attributes for a connection, the user-space twin of the kernel's
 * cm_init_qp_attr: the engine never touches a QP, it tells the caller what
 * to pass to ibv_modify_qp for INIT, RTR and RTS.  The source GID index
 * of global routes is left 0: only the owner of the device can look it up.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cm/cm_int.h"

static void ah_from_path(struct ibv_ah_attr *ah, const struct cm_path *p, uint8_t port)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = p->dlid;
	ah->sl = p->sl;
	ah->static_rate = p->rate; /* PathRecord rate codes are ibv_rate values */
	ah->port_num = port;
	if (!p->subnet_local) {
		ah->is_global = 1;
		memcpy(ah->grh.dgid.raw, p->dgid, 16);
		ah->grh.flow_label = p->flow_label;
		ah->grh.hop_limit = p->hop_limit;
		ah->grh.traffic_class = p->traffic_class;
	}
}

/*
 * QP ACK timeout of the active side: at least twice the packet lifetime
 * plus the responder's ACK delay from the REP (IBA 12.7.34, kernel
 * cm_ack_timeout), and never less than what the path asked.
 */
static uint8_t ack_timeout(const struct cm_conn *c, const struct cm_path *p)
{
	unsigned t = p->local_ack_timeout;

	if (c->active) {
		unsigned need = cm_timeout_from_ns(2 * cm_timeout_ns(p->packet_life_time) +
						   cm_timeout_ns(c->target_ack_delay));

		if (need > t)
			t = need;
	}
	return (uint8_t)(t > CM_TIMEOUT_MAX ? CM_TIMEOUT_MAX : t);
}

/*
 * Which QP transitions each CM state allows, as the kernel's
 * cm_init_qp_{init,rtr,rts}_attr do.  INIT from the REQ on; RTR once the
 * peer's QPN is known; RTS also in REQ_RCVD / MRA_REQ_SENT because
 * rdma_accept moves the QP to RTS before it sends the REP (the send PSN is
 * the REQ's starting PSN, known by then).  Our LAP states are the kernel's
 * ESTABLISHED with a lap_state, so they allow what ESTABLISHED allows.
 */
#define QP_INIT (1u << IBV_QPS_INIT)
#define QP_RTR (1u << IBV_QPS_RTR)
#define QP_RTS (1u << IBV_QPS_RTS)
#define QP_ALL (QP_INIT | QP_RTR | QP_RTS)

/* clang-format off */
static const uint8_t qp_transitions[CM_ST__COUNT] = {
	[CM_ST_REQ_SENT] = QP_INIT,
	[CM_ST_MRA_REQ_RCVD] = QP_INIT,
	[CM_ST_REQ_RCVD] = QP_ALL,
	[CM_ST_MRA_REQ_SENT] = QP_ALL,
	[CM_ST_REP_RCVD] = QP_ALL,
	[CM_ST_MRA_REP_SENT] = QP_ALL,
	[CM_ST_REP_SENT] = QP_ALL,
	[CM_ST_MRA_REP_RCVD] = QP_ALL,
	[CM_ST_ESTABLISHED] = QP_ALL,
	[CM_ST_LAP_SENT] = QP_ALL,
	[CM_ST_LAP_RCVD] = QP_ALL,
	[CM_ST_MRA_LAP_SENT] = QP_ALL,
	[CM_ST_MRA_LAP_RCVD] = QP_ALL,
};
/* clang-format on */

int cm_engine_init_qp_attr(struct cm_engine *e, uint32_t id, enum ibv_qp_state target,
			   struct ibv_qp_attr *attr, int *mask)
{
	struct cm_conn *c;
	bool rc, responder, requester;

	if (!e || !attr || !mask)
		return -EINVAL;
	c = cm_ids_by_local(e, id);
	if (!c)
		return -ENOENT;
	if (target != IBV_QPS_INIT && target != IBV_QPS_RTR && target != IBV_QPS_RTS)
		return -EINVAL;
	if (c->state >= CM_ST__COUNT || !(qp_transitions[c->state] & (1u << target)))
		return -EINVAL;
	/*
	 * The kernel's cm_init_qp_{rtr,rts}_attr: an XRC target is RC's
	 * responder only (RTS with the ACK timeout alone), an XRC initiator
	 * RC's requester only.
	 */
	rc = c->qp_type == CM_QPT_RC;
	responder = rc || (c->qp_type == CM_QPT_XRC && !c->active);
	requester = rc || (c->qp_type == CM_QPT_XRC && c->active);
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = target;
	switch (target) {
	case IBV_QPS_INIT:
		*mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (c->responder_resources)
			attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		attr->pkey_index = c->pkey_index;
		attr->port_num = e->cfg.port_num;
		return 0;
	case IBV_QPS_RTR:
		/*
		 * rq_psn is the starting PSN we announce (REQ, or REP once
		 * accepted); before accept it is not known yet and the caller
		 * sets the one it will accept with, as the kernel's cma does.
		 */
		*mask =
		    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		ah_from_path(&attr->ah_attr, &c->primary, e->cfg.port_num);
		attr->path_mtu = (enum ibv_mtu)c->mtu;
		attr->dest_qp_num = c->remote_qpn;
		attr->rq_psn = c->rq_psn;
		if (responder) {
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			attr->max_dest_rd_atomic = c->responder_resources;
			attr->min_rnr_timer = 0;
		}
		if (c->has_alternate) {
			*mask |= IBV_QP_ALT_PATH;
			ah_from_path(&attr->alt_ah_attr, &c->alternate, e->cfg.port_num);
			attr->alt_port_num = e->cfg.port_num;
			attr->alt_pkey_index = c->pkey_index;
			attr->alt_timeout = ack_timeout(c, &c->alternate);
		}
		return 0;
	default: /* IBV_QPS_RTS */
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		attr->sq_psn = c->sq_psn;
		if (requester) {
			*mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
			attr->retry_cnt = c->retry_count;
			attr->rnr_retry = c->rnr_retry_count;
			attr->max_rd_atomic = c->initiator_depth;
		}
		if (requester || responder) {
			*mask |= IBV_QP_TIMEOUT;
			attr->timeout = ack_timeout(c, &c->primary);
		}
		/* After an APR "path loaded": load the new alternate and re-arm APM. */
		if (c->has_alternate && c->state == CM_ST_ESTABLISHED) {
			*mask |= IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;
			ah_from_path(&attr->alt_ah_attr, &c->alternate, e->cfg.port_num);
			attr->alt_port_num = e->cfg.port_num;
			attr->alt_pkey_index = c->pkey_index;
			attr->alt_timeout = ack_timeout(c, &c->alternate);
			attr->path_mig_state = IBV_MIG_REARM;
		}
		return 0;
	}
}

int cm_qp_modify_to_rtr(int (*modify)(void *ctx, struct ibv_qp_attr *attr, int mask), void *ctx,
			struct ibv_qp_attr *init, int init_mask, struct ibv_qp_attr *rtr,
			int rtr_mask)
{
	struct ibv_qp_attr both = *rtr;
	int both_mask = rtr_mask, rc;

	if (init_mask & IBV_QP_ACCESS_FLAGS) {
		both.qp_access_flags = init->qp_access_flags;
		both_mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (init_mask & IBV_QP_PKEY_INDEX) {
		both.pkey_index = init->pkey_index;
		both_mask |= IBV_QP_PKEY_INDEX;
	}
	if (!modify(ctx, &both, both_mask))
		return 0;
	rc = modify(ctx, init, init_mask);
	return rc ? rc : modify(ctx, rtr, rtr_mask);
}
