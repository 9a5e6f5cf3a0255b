/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Alternate path loading (IBA 12.8): LAP from either side of an
 * established RC connection, answered by APR.  On APR "path loaded" both
 * sides install the path as their alternate; the caller then moves the QP
 * with the attributes from cm_engine_init_qp_attr (IBV_QPS_RTS +
 * IBV_QP_ALT_PATH).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cm/cm_int.h"

static bool lap_path_ok(const struct cm_path *p)
{
	return p->flow_label < (1u << 20) && p->sl < 16 && p->rate < 64 &&
	       p->local_ack_timeout <= CM_TIMEOUT_MAX && p->dlid != 0;
}

int cm_engine_lap(struct cm_engine *e, uint32_t id, const struct cm_path *alt,
		  const void *private_data, uint8_t len)
{
	const struct cm_transition *tr;
	struct cm_conn *c;
	uint8_t *msg;
	int err = 0;

	if (!e || !alt || !lap_path_ok(alt) || (len && !private_data) ||
	    len > CM_LAP_PRIVATE_DATA_SIZE)
		return -EINVAL;
	err = cm_cmd_check(e, id, CM_CMD_LAP, &c, &tr);
	if (err)
		return err;
	if (c->qp_type != CM_QPT_RC)
		return -EINVAL;
	msg = cm_msg_start(e, c, &cm_lap_layout);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_REMOTE_QPN_EECN, c->remote_qpn);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_REMOTE_CM_RESPONSE_TIMEOUT,
		       c->remote_cm_response_timeout);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_PORT_LID, alt->slid);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_REMOTE_PORT_LID, alt->dlid);
	mad_set_bytes(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_PORT_GID, alt->sgid);
	mad_set_bytes(msg, cm_lap_fields, CM_LAP_ALTERNATE_REMOTE_PORT_GID, alt->dgid);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_FLOW_LABEL, alt->flow_label);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_TRAFFIC_CLASS, alt->traffic_class);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_HOP_LIMIT, alt->hop_limit);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_PACKET_RATE, alt->rate);
	err |= mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_SL, alt->sl);
	err |=
	    mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_SUBNET_LOCAL, alt->subnet_local ? 1 : 0);
	err |=
	    mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_ACK_TIMEOUT, alt->local_ack_timeout);
	err |= cm_set_private_data(&cm_lap_layout, msg, private_data, len);
	if (err) {
		c->msg_unsent = 0; /* the half-built LAP: nothing sends it */
		cm_msg_release(e, c);
		return -EINVAL;
	}
	c->lap_path = *alt;
	c->lap_path.mtu = c->mtu;
	c->lap_path.pkey = c->primary.pkey;
	c->timeout_ns = 2 * cm_packet_life_ns(c) + cm_timeout_ns(c->remote_cm_response_timeout);
	cm_set_state(e, c, tr->next);
	cm_send_conn_msg(e, c, true);
	return 0;
}

uint8_t cm_on_lap(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	const uint8_t *msg = rx->msg;
	struct cm_path *p = &c->lap_path;
	struct cm_event ev;

	if (mad_get(msg, cm_lap_fields, CM_LAP_REMOTE_QPN_EECN) != c->local_qpn ||
	    c->qp_type != CM_QPT_RC) {
		e->st.dropped[CM_STAT_LAP]++;
		return CM_ST_SAME;
	}
	/* The sender's local is our remote. */
	memset(p, 0, sizeof(*p));
	p->slid = (uint16_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_REMOTE_PORT_LID);
	p->dlid = (uint16_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_PORT_LID);
	mad_get_bytes(msg, cm_lap_fields, CM_LAP_ALTERNATE_REMOTE_PORT_GID, p->sgid);
	mad_get_bytes(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_PORT_GID, p->dgid);
	p->flow_label = (uint32_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_FLOW_LABEL);
	p->traffic_class = (uint8_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_TRAFFIC_CLASS);
	p->hop_limit = (uint8_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_HOP_LIMIT);
	p->rate = (uint8_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_PACKET_RATE);
	p->sl = (uint8_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_SL);
	p->subnet_local = (uint8_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_SUBNET_LOCAL);
	p->local_ack_timeout =
	    (uint8_t)mad_get(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_ACK_TIMEOUT);
	p->packet_life_time = p->local_ack_timeout ? p->local_ack_timeout - 1 : 0;
	p->mtu = c->mtu;
	p->pkey = c->primary.pkey;
	cm_set_state(e, c, next);
	cm_event_init(&ev, CM_EV_LAP_RCVD, c);
	ev.lap.alternate = *p;
	ev.lap.remote_cm_response_timeout =
	    (uint8_t)mad_get(msg, cm_lap_fields, CM_LAP_REMOTE_CM_RESPONSE_TIMEOUT);
	cm_event_private(&ev, &cm_lap_layout, msg);
	cm_emit(e, c, &ev);
	return next;
}

int cm_engine_apr(struct cm_engine *e, uint32_t id, uint8_t status, const void *info,
		  uint8_t info_len, const void *private_data, uint8_t len)
{
	const struct cm_transition *tr;
	int rc;
	struct cm_conn *c;
	uint8_t *msg;

	if (!e || info_len > CM_APR_INFO_SIZE || (info_len && !info) || (len && !private_data) ||
	    len > CM_APR_PRIVATE_DATA_SIZE)
		return -EINVAL;
	rc = cm_cmd_check(e, id, CM_CMD_APR, &c, &tr);
	if (rc)
		return rc;
	msg = cm_msg_start(e, c, &cm_apr_layout);
	mad_set_fits(msg, cm_apr_fields, CM_APR_AP_STATUS, status);
	mad_set_fits(msg, cm_apr_fields, CM_APR_ADDITIONAL_INFO_LENGTH, info_len);
	if (info_len)
		memcpy(msg + cm_apr_fields[CM_APR_ADDITIONAL_INFO].byte, info, info_len);
	cm_set_private_data(&cm_apr_layout, msg, private_data, len);
	if (status == CM_APR_SUCCESS) {
		c->alternate = c->lap_path;
		c->has_alternate = 1;
	}
	cm_set_state(e, c, tr->next);
	cm_send_conn_msg(e, c, false);
	return 0;
}

uint8_t cm_on_apr(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next)
{
	const uint8_t *msg = rx->msg;
	struct cm_event ev;
	uint8_t len;

	cm_event_init(&ev, CM_EV_APR_RCVD, c);
	ev.apr.status = (uint8_t)mad_get(msg, cm_apr_fields, CM_APR_AP_STATUS);
	len = (uint8_t)mad_get(msg, cm_apr_fields, CM_APR_ADDITIONAL_INFO_LENGTH);
	if (len > CM_APR_INFO_SIZE)
		len = CM_APR_INFO_SIZE;
	ev.apr.info_len = len;
	memcpy(ev.apr.info, msg + cm_apr_fields[CM_APR_ADDITIONAL_INFO].byte, len);
	if (ev.apr.status == CM_APR_SUCCESS) {
		c->alternate = c->lap_path;
		c->has_alternate = 1;
	}
	cm_set_state(e, c, next);
	cm_event_private(&ev, &cm_apr_layout, msg);
	cm_emit(e, c, &ev);
	return next;
}
