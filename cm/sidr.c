/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Service ID resolution for UD (IBA 12.11): SIDR_REQ asks a port which UD
 * QP and Q_Key serve a service ID; SIDR_REP answers.  The requester keeps
 * a short-lived connection object (SIDR_REQ_SENT) for retries and
 * matching by request ID; the responder keeps one (SIDR_REQ_RCVD) until
 * the user answers, so duplicates of the request are dropped, and a while
 * after (SIDR_REP_SENT), so a duplicate gets the same SIDR_REP again.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cm/cm_int.h"

/*
 * SIDR_REQ carries no CA GUID; the kernel tells requesters apart by their
 * address.  Make a key from the sender's LID (or GID when routed).
 */
static uint64_t sidr_peer_key(const struct mad_addr *a)
{
	uint64_t k = 0;

	if (a->grh_present) {
		for (int i = 8; i < 16; i++)
			k = k << 8 | a->gid[i];
		return k;
	}
	return 0xffff000000000000ull | a->lid;
}

int cm_engine_sidr_req(struct cm_engine *e, const struct cm_sidr_req_cmd *cmd, uint32_t *id)
{
	struct cm_conn *c;
	uint8_t *msg;

	if (!e || !cmd || !id || cmd->private_data_len > CM_SIDR_REQ_PRIVATE_DATA_SIZE ||
	    cmd->timeout > CM_TIMEOUT_MAX || cmd->max_cm_retries > 15)
		return -EINVAL;
	c = cm_conn_new_active(e, cmd->user, cmd->service_id);
	if (!c)
		return -ENOMEM;
	c->pkey_index = cmd->pkey_index;
	c->primary.pkey = cmd->pkey;
	c->max_cm_retries = cmd->max_cm_retries;
	c->peer = cmd->to;
	c->peer.qpn = 1;
	c->peer.qkey = MAD_QP1_QKEY;
	c->peer.pkey_index = cmd->pkey_index;
	msg = cm_msg_start(e, c, &cm_sidr_req_layout);
	mad_set_fits(msg, cm_sidr_req_fields, CM_SIDR_REQ_REQUEST_ID, c->local_id);
	mad_set_fits(msg, cm_sidr_req_fields, CM_SIDR_REQ_PARTITION_KEY, cmd->pkey);
	mad_set_fits(msg, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID, cmd->service_id);
	cm_set_private_data(&cm_sidr_req_layout, msg, cmd->private_data, cmd->private_data_len);
	c->timeout_ns = cm_timeout_ns(cmd->timeout);
	c->state = CM_ST_SIDR_REQ_SENT;
	*id = c->local_id;
	cm_send_conn_msg(e, c, true);
	return 0;
}

static void issue_sidr_rep(struct cm_engine *e, const struct cm_rx *rx, uint8_t status)
{
	uint8_t mad[CM_MAD_SIZE];
	uint8_t *msg = mad + CM_MSG_OFFSET;

	cm_mad_init(mad, sizeof(mad), &cm_sidr_rep_layout, CM_METHOD_SEND, rx->tid);
	mad_set_fits(msg, cm_sidr_rep_fields, CM_SIDR_REP_REQUEST_ID,
		     mad_get(rx->msg, cm_sidr_req_fields, CM_SIDR_REQ_REQUEST_ID));
	mad_set_fits(msg, cm_sidr_rep_fields, CM_SIDR_REP_STATUS, status);
	mad_set_fits(msg, cm_sidr_rep_fields, CM_SIDR_REP_SERVICE_ID,
		     mad_get(rx->msg, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID));
	cm_send_answer(e, rx, mad);
}

int cm_on_sidr_req(struct cm_engine *e, const struct cm_rx *rx)
{
	uint32_t rid = (uint32_t)mad_get(rx->msg, cm_sidr_req_fields, CM_SIDR_REQ_REQUEST_ID);
	uint64_t sid = mad_get(rx->msg, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID);
	uint64_t key = sidr_peer_key(rx->from);
	struct cm_listen *l;
	struct cm_event ev;
	struct cm_conn *c;
	int listen_id;

	c = cm_ids_by_remote_id(e, rid, key);
	if (c) {
		/*
		 * A duplicate: dropped while the user has not answered, the
		 * kept SIDR_REP sent again once it has (the table says which).
		 */
		if (cm_transition(c->state, CM_IN_SIDR_REQ)->action == CM_A_RESEND) {
			e->st.duplicates[CM_STAT_SIDR_REQ]++;
			if (c->msg)
				cm_send_raw(e, &c->peer, c->msg);
			cm_sidr_linger(e, c); /* more may come: keep it from now */
		} else {
			e->st.dropped[CM_STAT_SIDR_REQ]++;
		}
		return 0;
	}
	l = cm_listen_find(e, sid, &listen_id);
	if (!l && cm_held_keep(e, rx, sid))
		return 0;
	if (!l) {
		issue_sidr_rep(e, rx, CM_SIDR_UNSUPPORTED);
		return 0;
	}
	c = cm_conn_new(e);
	if (!c) {
		issue_sidr_rep(e, rx, CM_SIDR_REJECT);
		return 0;
	}
	c->user = l->user;
	c->listen_id = (int16_t)listen_id;
	c->service_id = sid;
	c->remote_id = rid;
	c->remote_ca_guid = key;
	c->peer = *rx->from;
	c->peer.qpn = 1;
	c->peer.qkey = MAD_QP1_QKEY;
	c->pkey_index = rx->from->pkey_index;
	c->state = CM_ST_SIDR_REQ_RCVD;
	cm_ids_link_remote_id(e, c);
	cm_event_init(&ev, CM_EV_SIDR_REQ_RCVD, c);
	ev.listen_id = listen_id;
	ev.from = *rx->from;
	ev.sidr_req.service_id = sid;
	ev.sidr_req.request_id = rid;
	ev.sidr_req.pkey =
	    (uint16_t)mad_get(rx->msg, cm_sidr_req_fields, CM_SIDR_REQ_PARTITION_KEY);
	cm_event_private(&ev, &cm_sidr_req_layout, rx->msg);
	cm_emit(e, c, &ev);
	return 0;
}

int cm_engine_sidr_rep(struct cm_engine *e, uint32_t id, const struct cm_sidr_rep_cmd *cmd)
{
	const struct cm_transition *tr;
	int rc;
	struct cm_conn *c;
	uint8_t *msg;
	int err = 0;

	if (!e || !cmd || cmd->info_len > CM_SIDR_REP_INFO_SIZE ||
	    cmd->private_data_len > CM_SIDR_REP_PRIVATE_DATA_SIZE)
		return -EINVAL;
	rc = cm_cmd_check(e, id, CM_CMD_SIDR_REP, &c, &tr);
	if (rc)
		return rc;
	msg = cm_msg_start(e, c, &cm_sidr_rep_layout);
	err |= mad_set(msg, cm_sidr_rep_fields, CM_SIDR_REP_REQUEST_ID, c->remote_id);
	err |= mad_set(msg, cm_sidr_rep_fields, CM_SIDR_REP_STATUS, cmd->status);
	err |= mad_set(msg, cm_sidr_rep_fields, CM_SIDR_REP_QPN, cmd->qpn);
	err |= mad_set(msg, cm_sidr_rep_fields, CM_SIDR_REP_SERVICE_ID, c->service_id);
	err |= mad_set(msg, cm_sidr_rep_fields, CM_SIDR_REP_Q_KEY, cmd->qkey);
	err |= mad_set(msg, cm_sidr_rep_fields, CM_SIDR_REP_ADDITIONAL_INFO_LENGTH, cmd->info_len);
	if (cmd->info_len)
		memcpy(msg + cm_sidr_rep_fields[CM_SIDR_REP_CLASS_PORT_INFO].byte, cmd->info,
		       cmd->info_len);
	err |=
	    cm_set_private_data(&cm_sidr_rep_layout, msg, cmd->private_data, cmd->private_data_len);
	if (err)
		return -EINVAL;
	cm_set_state(e, c, tr->next); /* first: SIDR_REP_SENT keeps it for duplicates */
	cm_send_conn_msg(e, c, false);
	return 0;
}

uint8_t cm_on_sidr_rep(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	const uint8_t *msg = rx->msg;
	bool orphan = c->orphan;
	struct cm_event ev;
	uint8_t len;

	cm_event_init(&ev, CM_EV_SIDR_REP_RCVD, c);
	ev.sidr_rep.status = (uint8_t)mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_STATUS);
	ev.sidr_rep.qpn = (uint32_t)mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_QPN);
	ev.sidr_rep.qkey = (uint32_t)mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_Q_KEY);
	ev.sidr_rep.service_id = mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_SERVICE_ID);
	len = (uint8_t)mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_ADDITIONAL_INFO_LENGTH);
	if (len > CM_SIDR_REP_INFO_SIZE)
		len = CM_SIDR_REP_INFO_SIZE;
	ev.sidr_rep.info_len = len;
	memcpy(ev.sidr_rep.info, msg + cm_sidr_rep_fields[CM_SIDR_REP_CLASS_PORT_INFO].byte, len);
	ev.from = *rx->from;
	cm_event_private(&ev, &cm_sidr_rep_layout, msg);
	cm_set_state(e, c, next); /* IDLE: gone */
	if (!orphan)
		cm_emit(e, NULL, &ev);
	return next;
}
