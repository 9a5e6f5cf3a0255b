/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Connection establishment and release (IBA 12.6-12.9): the REQ, REP, RTU,
 * MRA, REJ, DREQ and DREP messages, the user commands that send them, and
 * what happens when the retransmission timer gives up.  Which input is
 * legal in which state, and where it leads, is decided by the table in
 * state.c; these functions only do the work.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cm/cm_int.h"

/* Field ids of one path in REQ (primary or alternate). */
struct req_path_fields {
	int llid, rlid, lgid, rgid, fl, rate, tc, hl, sl, sub, ack;
};

static const struct req_path_fields req_primary = {
    CM_REQ_PRIMARY_LOCAL_PORT_LID,  CM_REQ_PRIMARY_REMOTE_PORT_LID,   CM_REQ_PRIMARY_LOCAL_PORT_GID,
    CM_REQ_PRIMARY_REMOTE_PORT_GID, CM_REQ_PRIMARY_FLOW_LABEL,	      CM_REQ_PRIMARY_PACKET_RATE,
    CM_REQ_PRIMARY_TRAFFIC_CLASS,   CM_REQ_PRIMARY_HOP_LIMIT,	      CM_REQ_PRIMARY_SL,
    CM_REQ_PRIMARY_SUBNET_LOCAL,    CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT,
};

static const struct req_path_fields req_alternate = {
    CM_REQ_ALTERNATE_LOCAL_PORT_LID,
    CM_REQ_ALTERNATE_REMOTE_PORT_LID,
    CM_REQ_ALTERNATE_LOCAL_PORT_GID,
    CM_REQ_ALTERNATE_REMOTE_PORT_GID,
    CM_REQ_ALTERNATE_FLOW_LABEL,
    CM_REQ_ALTERNATE_PACKET_RATE,
    CM_REQ_ALTERNATE_TRAFFIC_CLASS,
    CM_REQ_ALTERNATE_HOP_LIMIT,
    CM_REQ_ALTERNATE_SL,
    CM_REQ_ALTERNATE_SUBNET_LOCAL,
    CM_REQ_ALTERNATE_LOCAL_ACK_TIMEOUT,
};

static MAD_FIELD_INLINE int req_put_path(uint8_t *msg, const struct req_path_fields *f,
					 const struct cm_path *p)
{
	int err = 0;

	err |= mad_set(msg, cm_req_fields, f->llid, p->slid);
	err |= mad_set(msg, cm_req_fields, f->rlid, p->dlid);
	mad_set_bytes(msg, cm_req_fields, f->lgid, p->sgid);
	mad_set_bytes(msg, cm_req_fields, f->rgid, p->dgid);
	err |= mad_set(msg, cm_req_fields, f->fl, p->flow_label);
	err |= mad_set(msg, cm_req_fields, f->rate, p->rate);
	err |= mad_set(msg, cm_req_fields, f->tc, p->traffic_class);
	err |= mad_set(msg, cm_req_fields, f->hl, p->hop_limit);
	err |= mad_set(msg, cm_req_fields, f->sl, p->sl);
	err |= mad_set(msg, cm_req_fields, f->sub, p->subnet_local);
	err |= mad_set(msg, cm_req_fields, f->ack, p->local_ack_timeout);
	return err ? -EINVAL : 0;
}

/* A REQ path as the passive side sees it: local and remote swap. */
static MAD_FIELD_INLINE void req_get_path(const uint8_t *msg, const struct req_path_fields *f,
					  struct cm_path *p)
{
	memset(p, 0, sizeof(*p));
	p->slid = (uint16_t)mad_get(msg, cm_req_fields, f->rlid);
	p->dlid = (uint16_t)mad_get(msg, cm_req_fields, f->llid);
	mad_get_bytes(msg, cm_req_fields, f->rgid, p->sgid);
	mad_get_bytes(msg, cm_req_fields, f->lgid, p->dgid);
	p->flow_label = (uint32_t)mad_get(msg, cm_req_fields, f->fl);
	p->rate = (uint8_t)mad_get(msg, cm_req_fields, f->rate);
	p->traffic_class = (uint8_t)mad_get(msg, cm_req_fields, f->tc);
	p->hop_limit = (uint8_t)mad_get(msg, cm_req_fields, f->hl);
	p->sl = (uint8_t)mad_get(msg, cm_req_fields, f->sl);
	p->subnet_local = (uint8_t)mad_get(msg, cm_req_fields, f->sub);
	p->local_ack_timeout = (uint8_t)mad_get(msg, cm_req_fields, f->ack);
	/* The kernel's guess (cm_format_paths_from_req): ACK timeout - 1. */
	p->packet_life_time = p->local_ack_timeout ? p->local_ack_timeout - 1 : 0;
	p->mtu = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU);
	p->pkey = (uint16_t)mad_get(msg, cm_req_fields, CM_REQ_PARTITION_KEY);
}

/* Response timeout: the peer's processing time plus the round trip. */
static uint64_t response_timeout_ns(const struct cm_conn *c, uint8_t peer_timeout)
{
	return 2 * cm_packet_life_ns(c) + cm_timeout_ns(peer_timeout);
}

static bool qpn_busy(struct cm_engine *e, uint32_t qpn)
{
	return cm_ids_by_local_qpn(e, qpn) != NULL;
}

/* ---- active side: connect ---- */

static bool path_ok(const struct cm_path *p)
{
	return p->mtu >= IBV_MTU_256 && p->mtu <= IBV_MTU_4096 && p->flow_label < (1u << 20) &&
	       (p->dlid != 0 || !p->subnet_local) && p->sl < 16 &&
	       p->local_ack_timeout <= CM_TIMEOUT_MAX && p->packet_life_time <= CM_TIMEOUT_MAX &&
	       p->rate < 64;
}

int cm_engine_connect(struct cm_engine *e, const struct cm_connect_cmd *cmd, uint32_t *id)
{
	if (id)
		*id = 0;
	return cm_engine_connect_as(e, cmd, id);
}

int cm_engine_reserve_id(struct cm_engine *e, uint32_t *id)
{
	if (!e || !id)
		return -EINVAL;
	if (e->nconns + e->reserved_n >= e->max_conns) {
		e->st.table_full++;
		return -ENOMEM;
	}
	return cm_ids_reserve(e, id);
}

int cm_engine_unreserve_id(struct cm_engine *e, uint32_t id)
{
	return e && cm_ids_unreserve(e, id) ? 0 : -EINVAL;
}

int cm_engine_connect_as(struct cm_engine *e, const struct cm_connect_cmd *cmd, uint32_t *id)
{
	struct cm_conn *c;
	uint8_t *msg;
	int err = 0;

	if (!e || !cmd || !id)
		return -EINVAL;
	if ((cmd->qp_type > CM_QPT_UC && cmd->qp_type != CM_QPT_XRC) || cmd->qpn == 0 ||
	    cmd->qpn >= (1u << 24) || cmd->starting_psn >= (1u << 24) ||
	    cmd->private_data_len > CM_REQ_PRIVATE_DATA_SIZE || cmd->max_cm_retries > 15 ||
	    cmd->retry_count > 7 || cmd->rnr_retry_count > 7 ||
	    cmd->remote_cm_response_timeout > CM_TIMEOUT_MAX ||
	    cmd->local_cm_response_timeout > CM_TIMEOUT_MAX || !path_ok(&cmd->primary) ||
	    (cmd->has_alternate && !path_ok(&cmd->alternate)))
		return -EINVAL;
	if (qpn_busy(e, cmd->qpn))
		return -EBUSY;
	c = cm_conn_new_active_as(e, cmd->user, cmd->service_id, *id);
	if (!c)
		return *id ? -EINVAL : -ENOMEM; /* not reserved, or the table is full */
	c->local_qpn = cmd->qpn;
	c->rq_psn = cmd->starting_psn;
	c->qp_type = cmd->qp_type;
	c->responder_resources = cmd->responder_resources;
	c->initiator_depth = cmd->initiator_depth;
	c->remote_cm_response_timeout = cmd->remote_cm_response_timeout;
	c->local_cm_response_timeout = cmd->local_cm_response_timeout;
	c->retry_count = cmd->retry_count;
	c->rnr_retry_count = cmd->rnr_retry_count;
	c->max_cm_retries = cmd->max_cm_retries;
	c->srq = cmd->srq ? 1 : 0;
	c->flow_control = cmd->flow_control ? 1 : 0;
	c->pkey_index = cmd->pkey_index;
	c->primary = cmd->primary;
	c->has_alternate = cmd->has_alternate;
	if (cmd->has_alternate)
		c->alternate = cmd->alternate;
	c->mtu = cmd->primary.mtu;
	cm_mad_addr_from_path(&c->peer, &c->primary, c->pkey_index);
	cm_ids_link_local_qpn(e, c);

	msg = cm_msg_start(e, c, &cm_req_layout);
	err |= mad_set(msg, cm_req_fields, CM_REQ_SERVICE_ID, cmd->service_id);
	err |= mad_set(msg, cm_req_fields, CM_REQ_VENDOR_ID, cmd->ece_vendor_id);
	err |= mad_set(msg - CM_MSG_OFFSET, mad_hdr_fields, MAD_HDR_ATTRIBUTE_MODIFIER,
		       cmd->ece_attr_mod);
	err |= mad_set(msg, cm_req_fields, CM_REQ_LOCAL_CA_GUID, e->cfg.ca_guid);
	err |= mad_set(msg, cm_req_fields, CM_REQ_LOCAL_QPN, cmd->qpn);
	err |= mad_set(msg, cm_req_fields, CM_REQ_INITIATOR_DEPTH, cmd->initiator_depth);
	err |= mad_set(msg, cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT,
		       cmd->remote_cm_response_timeout);
	err |= mad_set(msg, cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE, cmd->qp_type);
	/*
	 * An XRC initiator has no responder (nothing comes back to it but
	 * responses): the kernel's cm_format_req leaves responder resources,
	 * the retry counts and SRQ 0, and marks the extended transport.
	 */
	if (cmd->qp_type == CM_QPT_XRC) {
		err |= mad_set(msg, cm_req_fields, CM_REQ_EXTENDED_TRANSPORT_TYPE,
			       CM_EXT_TRANSPORT_XRC);
	} else {
		err |= mad_set(msg, cm_req_fields, CM_REQ_RESPONDER_RESOURCES,
			       cmd->responder_resources);
		err |= mad_set(msg, cm_req_fields, CM_REQ_RETRY_COUNT, cmd->retry_count);
		err |= mad_set(msg, cm_req_fields, CM_REQ_RNR_RETRY_COUNT, cmd->rnr_retry_count);
		err |= mad_set(msg, cm_req_fields, CM_REQ_SRQ, c->srq);
	}
	err |= mad_set(msg, cm_req_fields, CM_REQ_END_TO_END_FLOW_CONTROL, c->flow_control);
	err |= mad_set(msg, cm_req_fields, CM_REQ_STARTING_PSN, cmd->starting_psn);
	err |= mad_set(msg, cm_req_fields, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT,
		       cmd->local_cm_response_timeout);
	err |= mad_set(msg, cm_req_fields, CM_REQ_PARTITION_KEY, cmd->primary.pkey);
	err |= mad_set(msg, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU, cmd->primary.mtu);
	err |= mad_set(msg, cm_req_fields, CM_REQ_MAX_CM_RETRIES, cmd->max_cm_retries);
	err |= req_put_path(msg, &req_primary, &cmd->primary);
	if (cmd->has_alternate)
		err |= req_put_path(msg, &req_alternate, &cmd->alternate);
	err |= cm_set_private_data(&cm_req_layout, msg, cmd->private_data, cmd->private_data_len);
	if (err) {
		cm_conn_free(e, c);
		return -EINVAL;
	}
	c->timeout_ns = response_timeout_ns(c, cmd->remote_cm_response_timeout);
	c->state = CM_ST_REQ_SENT;
	*id = c->local_id;
	cm_send_conn_msg(e, c, true);
	cm_conn_spare(e); /* the REP is a round trip away */
	return 0;
}

/* ---- passive side: REQ ---- */

static void req_info(const uint8_t *msg, struct cm_req_info *ri)
{
	ri->service_id = mad_get(msg, cm_req_fields, CM_REQ_SERVICE_ID);
	ri->remote_ca_guid = mad_get(msg, cm_req_fields, CM_REQ_LOCAL_CA_GUID);
	ri->remote_comm_id = (uint32_t)mad_get(msg, cm_req_fields, CM_REQ_LOCAL_COMM_ID);
	ri->remote_qpn = (uint32_t)mad_get(msg, cm_req_fields, CM_REQ_LOCAL_QPN);
	ri->starting_psn = (uint32_t)mad_get(msg, cm_req_fields, CM_REQ_STARTING_PSN);
	ri->qp_type = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE);
	ri->responder_resources = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_RESPONDER_RESOURCES);
	ri->initiator_depth = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_INITIATOR_DEPTH);
	ri->remote_cm_response_timeout =
	    (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT);
	ri->local_cm_response_timeout =
	    (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT);
	ri->retry_count = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_RETRY_COUNT);
	ri->rnr_retry_count = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_RNR_RETRY_COUNT);
	ri->max_cm_retries = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_MAX_CM_RETRIES);
	ri->srq = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_SRQ);
	ri->flow_control = (uint8_t)mad_get(msg, cm_req_fields, CM_REQ_END_TO_END_FLOW_CONTROL);
	req_get_path(msg, &req_primary, &ri->primary);
	/* An alternate path exists when its LID or GID is set. */
	ri->has_alternate = mad_get(msg, cm_req_fields, CM_REQ_ALTERNATE_LOCAL_PORT_LID) != 0;
	if (ri->has_alternate)
		req_get_path(msg, &req_alternate, &ri->alternate);
}

/* RC, UC, and XRC: type 3 with extended transport type 1 (the kernel's). */
static bool req_transport_ok(const uint8_t *msg)
{
	uint64_t t = mad_get(msg, cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE);

	if (t == CM_TRANSPORT_EXTENDED)
		return mad_get(msg, cm_req_fields, CM_REQ_EXTENDED_TRANSPORT_TYPE) ==
		       CM_EXT_TRANSPORT_XRC;
	return t <= CM_TRANSPORT_UC;
}

int cm_on_req(struct cm_engine *e, const struct cm_rx *rx)
{
	const uint8_t *msg = rx->msg;
	uint32_t rid = (uint32_t)mad_get(msg, cm_req_fields, CM_REQ_LOCAL_COMM_ID);
	uint64_t guid = mad_get(msg, cm_req_fields, CM_REQ_LOCAL_CA_GUID);
	uint32_t rqpn = (uint32_t)mad_get(msg, cm_req_fields, CM_REQ_LOCAL_QPN);
	const struct cm_transition *tr;
	struct cm_listen *l;
	struct cm_conn *c;
	struct cm_event ev;
	int listen_id;

	/* Comm ID 0 means "none" everywhere (REJ of an unanswered REQ): not a REQ. */
	if (rid == 0) {
		e->st.dropped[CM_STAT_REQ]++;
		return -EBADMSG;
	}
	/* Duplicate of a REQ we know (12.9.8.1): the table says how to answer. */
	c = cm_ids_by_remote_id(e, rid, guid);
	if (c) {
		tr = cm_transition(c->state, CM_IN_REQ);
		if (tr->action == CM_A_RESEND || tr->action == CM_A_REJ_STALE) {
			e->st.duplicates[CM_STAT_REQ]++;
			if (tr->action == CM_A_RESEND)
				cm_resend(e, c);
			else
				cm_issue_rej(e, rx, CM_REJ_STALE_CONN, CM_MSG_REF_REQ, NULL, 0);
		} else {
			e->st.dropped[CM_STAT_REQ]++;
		}
		return 0;
	}
	/*
	 * Stale connection (12.9.8.3.2): a new REQ from a QP we think is still
	 * connected.  Reject it, and disconnect our old connection so both
	 * ends forget it.
	 */
	c = cm_ids_by_remote_qpn(e, rqpn, guid);
	if (c) {
		cm_issue_rej(e, rx, CM_REJ_STALE_CONN, CM_MSG_REF_REQ, NULL, 0);
		if (cm_cmd_allowed(c, CM_CMD_DREQ))
			cm_conn_send_dreq(e, c, NULL, 0);
		return 0;
	}
	l = cm_listen_find(e, mad_get(msg, cm_req_fields, CM_REQ_SERVICE_ID), &listen_id);
	if (!l && cm_held_keep(e, rx, mad_get(msg, cm_req_fields, CM_REQ_SERVICE_ID)))
		return 0;
	if (!l) {
		cm_issue_rej(e, rx, CM_REJ_INVALID_SERVICE_ID, CM_MSG_REF_REQ, NULL, 0);
		return 0;
	}
	if (!req_transport_ok(msg)) {
		cm_issue_rej(e, rx, CM_REJ_INVALID_TRANSPORT_TYPE, CM_MSG_REF_REQ, NULL, 0);
		return 0;
	}
	/* A path MTU outside 256..4096 cannot be programmed into a QP. */
	if (mad_get(msg, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU) < IBV_MTU_256 ||
	    mad_get(msg, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU) > IBV_MTU_4096) {
		cm_issue_rej(e, rx, CM_REJ_INVALID_MTU, CM_MSG_REF_REQ, NULL, 0);
		return 0;
	}
	c = cm_conn_new(e);
	if (!c) {
		/* ARI of "no resources" is empty; the GUID helps the peer's logs. */
		cm_issue_rej(e, rx, CM_REJ_NO_RESOURCES, CM_MSG_REF_REQ, NULL, 0);
		return 0;
	}
	cm_event_init(&ev, CM_EV_REQ_RCVD, NULL);
	req_info(msg, &ev.req);
	ev.req.ece_vendor_id = (uint32_t)mad_get(msg, cm_req_fields, CM_REQ_VENDOR_ID);
	ev.req.ece_attr_mod =
	    (uint32_t)mad_get(rx->mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_MODIFIER);
	c->user = l->user;
	c->listen_id = (int16_t)listen_id;
	c->service_id = ev.req.service_id;
	c->remote_id = rid;
	c->remote_ca_guid = guid;
	c->remote_qpn = rqpn;
	c->sq_psn = ev.req.starting_psn;
	c->qp_type = ev.req.qp_type;
	/* What our QP may do, until accept says otherwise (kernel cm_format_req_event). */
	c->responder_resources = ev.req.initiator_depth;
	c->initiator_depth = ev.req.responder_resources;
	c->remote_cm_response_timeout = ev.req.local_cm_response_timeout;
	c->local_cm_response_timeout = ev.req.remote_cm_response_timeout;
	c->retry_count = ev.req.retry_count;
	c->rnr_retry_count = ev.req.rnr_retry_count;
	c->max_cm_retries = ev.req.max_cm_retries;
	c->srq = ev.req.srq;
	c->flow_control = ev.req.flow_control;
	c->primary = ev.req.primary;
	c->mtu = ev.req.primary.mtu;
	c->has_alternate = ev.req.has_alternate;
	if (ev.req.has_alternate)
		c->alternate = ev.req.alternate;
	c->peer = *rx->from;
	c->peer.qpn = 1;
	c->peer.qkey = MAD_QP1_QKEY;
	c->pkey_index = rx->from->pkey_index;
	c->state = CM_ST_REQ_RCVD;
	cm_ids_link_remote_id(e, c);
	cm_ids_link_remote_qpn(e, c);

	ev.id = c->local_id;
	ev.user = c->user;
	ev.listen_id = listen_id;
	ev.from = *rx->from;
	cm_event_private(&ev, &cm_req_layout, msg);
	cm_emit(e, c, &ev);
	return 0;
}

int cm_engine_accept(struct cm_engine *e, uint32_t id, uint64_t user,
		     const struct cm_accept_cmd *cmd)
{
	const struct cm_transition *tr;
	int rc;
	struct cm_conn *c;
	uint8_t *msg;
	int err = 0;

	if (!e || !cmd)
		return -EINVAL;
	rc = cm_cmd_check(e, id, CM_CMD_ACCEPT, &c, &tr);
	if (rc)
		return rc;
	if (cmd->qpn == 0 || cmd->qpn >= (1u << 24) || cmd->starting_psn >= (1u << 24) ||
	    cmd->private_data_len > CM_REP_PRIVATE_DATA_SIZE || cmd->rnr_retry_count > 7 ||
	    cmd->target_ack_delay > CM_TIMEOUT_MAX || cmd->failover_accepted > 2)
		return -EINVAL;
	if (qpn_busy(e, cmd->qpn))
		return -EBUSY;

	msg = cm_msg_start(e, c, &cm_rep_layout);
	/*
	 * An XRC target names its QP in the Local EE Context Number and says
	 * SRQ, and leaves initiator depth and flow control out (its QP sends
	 * no requests): the kernel's cm_format_rep.
	 */
	if (c->qp_type == CM_QPT_XRC) {
		err |= mad_set(msg, cm_rep_fields, CM_REP_LOCAL_EE_CONTEXT_NUMBER, cmd->qpn);
		err |= mad_set(msg, cm_rep_fields, CM_REP_SRQ, 1);
	} else {
		err |= mad_set(msg, cm_rep_fields, CM_REP_LOCAL_QPN, cmd->qpn);
		err |= mad_set(msg, cm_rep_fields, CM_REP_INITIATOR_DEPTH, cmd->initiator_depth);
		err |= mad_set(msg, cm_rep_fields, CM_REP_END_TO_END_FLOW_CONTROL,
			       cmd->flow_control ? 1 : 0);
		err |= mad_set(msg, cm_rep_fields, CM_REP_SRQ, cmd->srq ? 1 : 0);
	}
	err |= mad_set(msg, cm_rep_fields, CM_REP_VENDOR_ID_H, (cmd->ece_vendor_id >> 16) & 0xff);
	err |= mad_set(msg, cm_rep_fields, CM_REP_VENDOR_ID_M, (cmd->ece_vendor_id >> 8) & 0xff);
	err |= mad_set(msg, cm_rep_fields, CM_REP_VENDOR_ID_L, cmd->ece_vendor_id & 0xff);
	err |= mad_set(msg - CM_MSG_OFFSET, mad_hdr_fields, MAD_HDR_ATTRIBUTE_MODIFIER,
		       cmd->ece_attr_mod);
	err |= mad_set(msg, cm_rep_fields, CM_REP_STARTING_PSN, cmd->starting_psn);
	err |= mad_set(msg, cm_rep_fields, CM_REP_RESPONDER_RESOURCES, cmd->responder_resources);
	err |= mad_set(msg, cm_rep_fields, CM_REP_TARGET_ACK_DELAY, cmd->target_ack_delay);
	err |= mad_set(msg, cm_rep_fields, CM_REP_FAILOVER_ACCEPTED, cmd->failover_accepted);
	err |= mad_set(msg, cm_rep_fields, CM_REP_RNR_RETRY_COUNT, cmd->rnr_retry_count);
	err |= mad_set(msg, cm_rep_fields, CM_REP_LOCAL_CA_GUID, e->cfg.ca_guid);
	err |= cm_set_private_data(&cm_rep_layout, msg, cmd->private_data, cmd->private_data_len);
	if (err)
		return -EINVAL;
	c->user = user;
	c->local_qpn = cmd->qpn;
	c->rq_psn = cmd->starting_psn;
	c->responder_resources = cmd->responder_resources;
	c->initiator_depth = cmd->initiator_depth;
	c->target_ack_delay = cmd->target_ack_delay;
	c->srq = cmd->srq || c->qp_type == CM_QPT_XRC ? 1 : 0;
	cm_ids_link_local_qpn(e, c);
	c->timeout_ns = response_timeout_ns(c, c->remote_cm_response_timeout);
	cm_set_state(e, c, tr->next);
	cm_send_conn_msg(e, c, true);
	return 0;
}

/* ---- active side: REP, RTU ---- */

uint8_t cm_on_rep(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	const uint8_t *msg = rx->msg;
	struct cm_conn *old;
	struct cm_event ev;
	struct cm_rep_info *ri = &ev.rep;

	cm_event_init(&ev, CM_EV_REP_RCVD, c);
	ri->remote_comm_id = (uint32_t)mad_get(msg, cm_rep_fields, CM_REP_LOCAL_COMM_ID);
	ri->remote_ca_guid = mad_get(msg, cm_rep_fields, CM_REP_LOCAL_CA_GUID);
	/* An XRC target's QP is in the Local EE Context Number (cm_rep_get_qpn). */
	ri->remote_qpn = (uint32_t)mad_get(msg, cm_rep_fields,
					   c->qp_type == CM_QPT_XRC ? CM_REP_LOCAL_EE_CONTEXT_NUMBER
								    : CM_REP_LOCAL_QPN);
	ri->starting_psn = (uint32_t)mad_get(msg, cm_rep_fields, CM_REP_STARTING_PSN);
	ri->ece_vendor_id = (uint32_t)(mad_get(msg, cm_rep_fields, CM_REP_VENDOR_ID_H) << 16 |
				       mad_get(msg, cm_rep_fields, CM_REP_VENDOR_ID_M) << 8 |
				       mad_get(msg, cm_rep_fields, CM_REP_VENDOR_ID_L));
	ri->ece_attr_mod = (uint32_t)mad_get(rx->mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_MODIFIER);
	ri->responder_resources = (uint8_t)mad_get(msg, cm_rep_fields, CM_REP_RESPONDER_RESOURCES);
	ri->initiator_depth = (uint8_t)mad_get(msg, cm_rep_fields, CM_REP_INITIATOR_DEPTH);
	ri->target_ack_delay = (uint8_t)mad_get(msg, cm_rep_fields, CM_REP_TARGET_ACK_DELAY);
	ri->failover_accepted = (uint8_t)mad_get(msg, cm_rep_fields, CM_REP_FAILOVER_ACCEPTED);
	ri->flow_control = (uint8_t)mad_get(msg, cm_rep_fields, CM_REP_END_TO_END_FLOW_CONTROL);
	ri->rnr_retry_count = (uint8_t)mad_get(msg, cm_rep_fields, CM_REP_RNR_RETRY_COUNT);
	ri->srq = (uint8_t)mad_get(msg, cm_rep_fields, CM_REP_SRQ);
	if (ri->remote_comm_id == 0) {
		e->st.dropped[CM_STAT_REP]++;
		return CM_ST_SAME;
	}
	/* Stale: another of our connections already talks to that QP. */
	old = cm_ids_by_remote_qpn(e, ri->remote_qpn, ri->remote_ca_guid);
	if (old && old != c) {
		cm_issue_rej(e, rx, CM_REJ_STALE_CONN, CM_MSG_REF_REP, NULL, 0);
		if (cm_cmd_allowed(old, CM_CMD_DREQ))
			cm_conn_send_dreq(e, old, NULL, 0);
		return CM_ST_SAME;
	}
	c->remote_id = ri->remote_comm_id;
	c->remote_ca_guid = ri->remote_ca_guid;
	c->remote_qpn = ri->remote_qpn;
	c->sq_psn = ri->starting_psn;
	/* The peer's answer bounds ours (kernel cm_rep_handler). */
	c->initiator_depth = ri->responder_resources;
	c->responder_resources = ri->initiator_depth;
	c->rnr_retry_count = ri->rnr_retry_count;
	c->target_ack_delay = ri->target_ack_delay;
	cm_ids_link_remote_id(e, c);
	cm_ids_link_remote_qpn(e, c);
	cm_set_state(e, c, next);
	cm_event_private(&ev, &cm_rep_layout, msg);
	cm_emit(e, c, &ev);
	return next;
}

void cm_send_fresh_rtu(struct cm_engine *e, struct cm_conn *c)
{
	uint8_t mad[CM_MAD_SIZE];
	uint8_t *msg = mad + CM_MSG_OFFSET;

	cm_mad_init(mad, sizeof(mad), &cm_rtu_layout, CM_METHOD_SEND,
		    (uint64_t)c->local_id | (uint64_t)(++e->tid_seq) << 32);
	mad_set_fits(msg, cm_rtu_fields, CM_RTU_LOCAL_COMM_ID, c->local_id);
	mad_set_fits(msg, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID, c->remote_id);
	cm_send_raw(e, &c->peer, mad);
}

int cm_engine_rtu(struct cm_engine *e, uint32_t id, const void *private_data, uint8_t len)
{
	const struct cm_transition *tr;
	int rc;
	struct cm_conn *c;
	uint8_t *msg;

	if (!e || (len && !private_data) || len > CM_RTU_PRIVATE_DATA_SIZE)
		return -EINVAL;
	rc = cm_cmd_check(e, id, CM_CMD_RTU, &c, &tr);
	if (rc)
		return rc;
	msg = cm_msg_start(e, c, &cm_rtu_layout);
	cm_set_private_data(&cm_rtu_layout, msg, private_data, len);
	cm_set_state(e, c, tr->next);
	cm_send_conn_msg(e, c, false);
	return 0;
}

uint8_t cm_on_rtu(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	struct cm_event ev;

	cm_set_state(e, c, next);
	cm_conn_spare(e); /* established: the next REQ is a round trip away */
	cm_event_init(&ev, CM_EV_RTU_RCVD, c);
	cm_event_private(&ev, &cm_rtu_layout, rx->msg);
	cm_emit(e, c, &ev);
	return next;
}

int cm_engine_establish(struct cm_engine *e, uint32_t id)
{
	const struct cm_transition *tr;
	int rc;
	struct cm_conn *c;
	struct cm_event ev;

	if (!e)
		return -EINVAL;
	rc = cm_cmd_check(e, id, CM_CMD_ESTABLISH, &c, &tr);
	if (rc)
		return rc;
	cm_set_state(e, c, tr->next);
	cm_event_init(&ev, CM_EV_USER_ESTABLISHED, c);
	cm_emit(e, c, &ev);
	return 0;
}

/* ---- MRA ---- */

/* The MRA of c's state (what it delays: the REQ, the REP or a LAP) into c->msg. */
static void build_mra(struct cm_engine *e, struct cm_conn *c, uint8_t service_timeout,
		      const void *private_data, uint8_t len)
{
	unsigned what;
	uint8_t *msg;

	switch (c->state) {
	case CM_ST_REQ_RCVD:
	case CM_ST_MRA_REQ_SENT:
		what = CM_MSG_REF_REQ;
		break;
	case CM_ST_REP_RCVD:
	case CM_ST_MRA_REP_SENT:
		what = CM_MSG_REF_REP;
		break;
	default:
		what = CM_MSG_REF_LAP;
		break;
	}
	msg = cm_msg_start(e, c, &cm_mra_layout);
	mad_set_fits(msg, cm_mra_fields, CM_MRA_MESSAGE_MRAED, what);
	mad_set_fits(msg, cm_mra_fields, CM_MRA_SERVICE_TIMEOUT, service_timeout);
	cm_set_private_data(&cm_mra_layout, msg, private_data, len);
}

int cm_engine_mra(struct cm_engine *e, uint32_t id, uint8_t service_timeout,
		  const void *private_data, uint8_t len)
{
	const struct cm_transition *tr;
	int rc;
	struct cm_conn *c;
	bool delay = service_timeout & CM_MRA_FLAG_DELAY;

	service_timeout &= (uint8_t)~CM_MRA_FLAG_DELAY;
	if (!e || service_timeout > CM_TIMEOUT_MAX || (len && !private_data) ||
	    len > CM_MRA_PRIVATE_DATA_SIZE)
		return -EINVAL;
	rc = cm_cmd_check(e, id, CM_CMD_MRA, &c, &tr);
	if (rc)
		return rc;
	cm_set_state(e, c, tr->next);
	/*
	 * MRAs are not retransmitted: a duplicate of the message gets it
	 * again.  Delayed (the kernel's IB_CM_MRA_FLAG_DELAY): only that, so
	 * without private data it is built only then (cm_resend): rdma_cm
	 * delays one for every REQ and REP it delivers.
	 */
	if (delay && !len) {
		c->mra_due = 1;
		c->mra_service_timeout = service_timeout;
		return 0;
	}
	build_mra(e, c, service_timeout, private_data, len);
	if (!delay)
		cm_send_conn_msg(e, c, false);
	return 0;
}

void cm_resend(struct cm_engine *e, struct cm_conn *c)
{
	if (c->mra_due)
		build_mra(e, c, c->mra_service_timeout, NULL, 0);
	if (!c->msg)
		return;
	c->msg_unsent = 0;
	cm_send_raw(e, &c->peer, c->msg);
	if (c->msg == e->scratch)
		c->msg = NULL;
}

uint8_t cm_on_mra(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	uint8_t svc = (uint8_t)mad_get(rx->msg, cm_mra_fields, CM_MRA_SERVICE_TIMEOUT);
	struct cm_event ev;

	if (!c->remote_id)
		c->remote_id = (uint32_t)mad_get(rx->msg, cm_mra_fields, CM_MRA_LOCAL_COMM_ID);
	/*
	 * The peer needs `svc` more: wait that plus the round trip before the
	 * next retransmission (kernel cm_mra_handler); retries are not spent.
	 */
	c->timeout_ns = 2 * cm_packet_life_ns(c) + cm_timeout_ns(svc);
	cm_conn_arm_retry(e, c);
	cm_set_state(e, c, next);
	cm_event_init(&ev, CM_EV_MRA_RCVD, c);
	ev.mra.msg_mraed = (uint8_t)mad_get(rx->msg, cm_mra_fields, CM_MRA_MESSAGE_MRAED);
	ev.mra.service_timeout = svc;
	cm_event_private(&ev, &cm_mra_layout, rx->msg);
	cm_emit(e, c, &ev);
	return next;
}

/* ---- REJ ---- */

/*
 * ARI of REJ "timeout" (IBA 12.6.7.2): the rejecting CA's GUID, 8 bytes,
 * big-endian.  The peer finds its connection by it when the REJ carries
 * no RemoteCommID (we gave up in REQ_SENT), as the kernel does.
 */
static uint8_t timeout_ari(const struct cm_engine *e, uint8_t ari[CM_REJ_ARI_SIZE])
{
	for (int i = 0; i < 8; i++)
		ari[i] = (uint8_t)(e->cfg.ca_guid >> (56 - 8 * i));
	return 8;
}

static void build_rej(struct cm_engine *e, struct cm_conn *c, uint16_t reason, unsigned what,
		      const void *ari, uint8_t ari_len, const void *pd, uint8_t pd_len)
{
	uint8_t *msg = cm_msg_start(e, c, &cm_rej_layout);

	/* Rejecting a REQ we never answered: no local ID yet (kernel cm_format_rej). */
	if (c->state == CM_ST_REQ_RCVD)
		mad_set_fits(msg, cm_rej_fields, CM_REJ_LOCAL_COMM_ID, 0);
	mad_set_fits(msg, cm_rej_fields, CM_REJ_MESSAGE_REJECTED, what);
	mad_set_fits(msg, cm_rej_fields, CM_REJ_REASON, reason);
	if (ari_len) {
		mad_set_fits(msg, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH, ari_len);
		memcpy(msg + cm_rej_fields[CM_REJ_ARI].byte, ari, ari_len);
	}
	cm_set_private_data(&cm_rej_layout, msg, pd, pd_len);
}

static unsigned rej_what(const struct cm_conn *c)
{
	switch (c->state) {
	case CM_ST_REQ_RCVD:
	case CM_ST_MRA_REQ_SENT:
		return CM_MSG_REF_REQ;
	case CM_ST_REP_RCVD:
	case CM_ST_MRA_REP_SENT:
		return CM_MSG_REF_REP;
	default:
		return CM_MSG_REF_OTHER;
	}
}

int cm_engine_reject(struct cm_engine *e, uint32_t id, const struct cm_reject_cmd *cmd)
{
	const struct cm_transition *tr;
	int rc;
	struct cm_conn *c;

	if (!e || !cmd || cmd->ari_len > CM_REJ_ARI_SIZE ||
	    cmd->private_data_len > CM_REJ_PRIVATE_DATA_SIZE || cmd->reason == 0)
		return -EINVAL;
	rc = cm_cmd_check(e, id, CM_CMD_REJECT, &c, &tr);
	if (rc)
		return rc;
	build_rej(e, c, cmd->reason, rej_what(c), cmd->ari, cmd->ari_len, cmd->private_data,
		  cmd->private_data_len);
	cm_send_conn_msg(e, c, false);
	cm_set_state(e, c, tr->next);
	return 0;
}

uint8_t cm_on_rej(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	const uint8_t *msg = rx->msg;
	bool orphan = c->orphan;
	struct cm_event ev;
	uint8_t len;

	cm_event_init(&ev, CM_EV_REJ_RCVD, c);
	ev.rej.reason = (uint16_t)mad_get(msg, cm_rej_fields, CM_REJ_REASON);
	ev.rej.msg_rejected = (uint8_t)mad_get(msg, cm_rej_fields, CM_REJ_MESSAGE_REJECTED);
	len = (uint8_t)mad_get(msg, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH);
	if (len > CM_REJ_ARI_SIZE)
		len = CM_REJ_ARI_SIZE;
	ev.rej.ari_len = len;
	memcpy(ev.rej.ari, msg + cm_rej_fields[CM_REJ_ARI].byte, len);
	cm_event_private(&ev, &cm_rej_layout, msg);
	/* A stale connection must still wait out TimeWait (kernel cm_rej_handler). */
	if (ev.rej.reason == CM_REJ_STALE_CONN && next == CM_ST_IDLE)
		next = CM_ST_TIMEWAIT;
	cm_set_state(e, c, next);
	/* c is gone when next is IDLE; the event holds copies only. */
	if (!orphan)
		cm_emit(e, NULL, &ev);
	return next;
}

/* ---- DREQ / DREP ---- */

void cm_conn_send_dreq(struct cm_engine *e, struct cm_conn *c, const void *pd, uint8_t len)
{
	const struct cm_transition *tr = cm_cmd_allowed(c, CM_CMD_DREQ);
	uint8_t *msg;

	if (!tr)
		return;
	msg = cm_msg_start(e, c, &cm_dreq_layout);
	mad_set_fits(msg, cm_dreq_fields, CM_DREQ_REMOTE_QPN_EECN, c->remote_qpn);
	cm_set_private_data(&cm_dreq_layout, msg, pd, len);
	/* DREQ waits for the peer as long as its REQ/REP did (kernel). */
	c->timeout_ns = response_timeout_ns(c, c->remote_cm_response_timeout);
	cm_set_state(e, c, tr->next);
	cm_send_conn_msg(e, c, true);
}

int cm_engine_disconnect(struct cm_engine *e, uint32_t id, const void *private_data, uint8_t len)
{
	const struct cm_transition *tr;
	struct cm_conn *c;
	uint8_t *msg;

	if (!e || (len && !private_data))
		return -EINVAL;
	c = cm_ids_by_local(e, id);
	if (!c)
		return -ENOENT;
	tr = cm_cmd_allowed(c, CM_CMD_DREQ);
	if (tr) {
		if (len > CM_DREQ_PRIVATE_DATA_SIZE)
			return -EINVAL;
		cm_conn_send_dreq(e, c, private_data, len);
		return 0;
	}
	if (cm_transition(c->state, CM_CMD_DREP)->action == CM_A_NONE)
		return 0; /* disconnected already: nothing to answer */
	tr = cm_cmd_allowed(c, CM_CMD_DREP);
	if (!tr)
		return -EINVAL;
	if (len > CM_DREP_PRIVATE_DATA_SIZE)
		return -EINVAL;
	msg = cm_msg_start(e, c, &cm_drep_layout);
	cm_set_private_data(&cm_drep_layout, msg, private_data, len);
	cm_set_state(e, c, tr->next);
	cm_send_conn_msg(e, c, false);
	return 0;
}

uint8_t cm_on_dreq(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	struct cm_event ev;

	/* A DREQ names our QP; one that does not is not for this connection. */
	if (mad_get(rx->msg, cm_dreq_fields, CM_DREQ_REMOTE_QPN_EECN) != c->local_qpn) {
		e->st.dropped[CM_STAT_DREQ]++;
		return CM_ST_SAME;
	}
	cm_set_state(e, c, next);
	if (c->orphan) {
		/*
		 * Released while its own DREQ was out (the DREQs crossed): no
		 * user is left to answer, so the engine sends the DREP and
		 * goes to TimeWait, as the kernel's destroyed id would, rather
		 * than wait in DREQ_RCVD, which has no timer, for good.
		 */
		cm_engine_disconnect(e, c->local_id, NULL, 0);
		return CM_ST_TIMEWAIT;
	}
	cm_event_init(&ev, CM_EV_DREQ_RCVD, c);
	cm_event_private(&ev, &cm_dreq_layout, rx->msg);
	cm_emit(e, c, &ev);
	return next;
}

uint8_t cm_on_drep(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	struct cm_event ev;

	cm_set_state(e, c, next);
	cm_event_init(&ev, CM_EV_DREP_RCVD, c);
	cm_event_private(&ev, &cm_drep_layout, rx->msg);
	cm_emit(e, c, &ev);
	return next;
}

/* ---- the timer gave up (or TimeWait is over) ---- */

void cm_on_timeout(struct cm_engine *e, struct cm_conn *c)
{
	const struct cm_transition *tr = cm_transition(c->state, CM_IN_TIMEOUT);
	enum cm_event_type t;
	struct cm_event ev;
	bool orphan = c->orphan;
	uint8_t ari[CM_REJ_ARI_SIZE];
	uint8_t ari_len;

	if (tr->action != CM_A_GO)
		return;
	switch (c->state) {
	case CM_ST_TIMEWAIT:
		t = CM_EV_TIMEWAIT_EXIT;
		break;
	case CM_ST_REQ_SENT:
	case CM_ST_MRA_REQ_RCVD:
	case CM_ST_REP_SENT:
	case CM_ST_MRA_REP_RCVD:
		/* IBA 12.6.7.2: REJ "timeout", ARI = our CA GUID. */
		ari_len = timeout_ari(e, ari);
		t = c->active ? CM_EV_REQ_ERROR : CM_EV_REP_ERROR;
		build_rej(e, c, CM_REJ_TIMEOUT, c->active ? CM_MSG_REF_REQ : CM_MSG_REF_REP, ari,
			  ari_len, NULL, 0);
		cm_send_conn_msg(e, c, false);
		e->st.timeouts++;
		break;
	case CM_ST_DREQ_SENT:
		t = CM_EV_DREQ_ERROR;
		e->st.timeouts++;
		break;
	case CM_ST_LAP_SENT:
	case CM_ST_MRA_LAP_RCVD:
		t = CM_EV_LAP_ERROR;
		e->st.timeouts++;
		break;
	case CM_ST_SIDR_REQ_SENT:
		t = CM_EV_SIDR_REQ_ERROR;
		e->st.timeouts++;
		break;
	case CM_ST_SIDR_REP_SENT:
		cm_set_state(e, c, tr->next); /* the answered request is forgotten */
		return;
	default:
		return;
	}
	cm_event_init(&ev, t, c);
	ev.status = t == CM_EV_TIMEWAIT_EXIT ? 0 : -ETIMEDOUT;
	cm_set_state(e, c, tr->next);
	if (!orphan)
		cm_emit(e, NULL, &ev);
}

/* ---- release ---- */

int cm_engine_release(struct cm_engine *e, uint32_t id)
{
	struct cm_reject_cmd rej = {.reason = CM_REJ_CONSUMER_DEFINED};
	struct cm_conn *c;

	if (!e)
		return -EINVAL;
	c = cm_ids_by_local(e, id);
	if (!c)
		return -ENOENT;
	c->orphan = 1;
	switch (c->state) {
	case CM_ST_REQ_SENT:
	case CM_ST_MRA_REQ_RCVD:
		/* Giving up on our REQ: REJ "timeout" with our GUID (kernel cm_destroy_id). */
		rej.reason = CM_REJ_TIMEOUT;
		rej.ari_len = timeout_ari(e, rej.ari);
		return cm_engine_reject(e, id, &rej);
	case CM_ST_REQ_RCVD:
	case CM_ST_MRA_REQ_SENT:
	case CM_ST_REP_RCVD:
	case CM_ST_MRA_REP_SENT:
	case CM_ST_REP_SENT:
	case CM_ST_MRA_REP_RCVD:
		return cm_engine_reject(e, id, &rej);
	case CM_ST_ESTABLISHED:
	case CM_ST_LAP_SENT:
	case CM_ST_LAP_RCVD:
	case CM_ST_MRA_LAP_SENT:
	case CM_ST_MRA_LAP_RCVD:
	case CM_ST_DREQ_RCVD:
		return cm_engine_disconnect(e, id, NULL, 0);
	case CM_ST_DREQ_SENT:
	case CM_ST_TIMEWAIT:
		return 0; /* linger silently */
	default:
		cm_conn_free(e, c);
		return 0;
	}
}

/*
 * Forget a REQ just received, silently: no REJ, no event, as the kernel's
 * cm_destroy_id does for a REQ it cannot queue (-ENOMEM, a full listen
 * backlog), so that the peer's retry of the REQ is taken as a new one.
 */
int cm_engine_drop(struct cm_engine *e, uint32_t id)
{
	struct cm_conn *c;

	if (!e)
		return -EINVAL;
	c = cm_ids_by_local(e, id);
	if (!c)
		return -ENOENT;
	if (c->state != CM_ST_REQ_RCVD && c->state != CM_ST_MRA_REQ_SENT)
		return -EINVAL;
	cm_conn_free(e, c);
	return 0;
}
