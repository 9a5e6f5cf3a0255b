/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm torture: the cases.  Each states what it sends and what IBA vol 1
 * ch. 12 and the kernel's ib_cm (drivers/infiniband/core/cm.c) require of
 * the target, then checks what came back.  docs/cm-torture.md lists them
 * with the sections they come from.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/ip_pdata.h"
#include "mad/mad_wire.h"
#include "tools/torture.h"

/* REQ timing: the target waits 2 * 0.5 s + 4.3 s for our RTU before it
 * resends its REP, so no resend falls inside a case; its TimeWait lasts
 * 0.5 s + 1 s (ACK timeout 18, packet life 17). */
#define TT_CM_RESPONSE_TIMEOUT 20
#define TT_ACK_TIMEOUT 18
#define TT_MAX_CM_RETRIES 3

static void verdict(struct tt_result *r, enum tt_verdict v, const char *fmt, ...)
{
	va_list ap;

	r->v = v;
	va_start(ap, fmt);
	vsnprintf(r->got, sizeof(r->got), fmt, ap);
	va_end(ap);
}

static const char *describe(const uint8_t *mad)
{
	static char buf[4][200];
	static unsigned i;
	char *b = buf[i++ % 4];

	if (!mad)
		return "nothing";
	tt_describe(mad, b, sizeof(buf[0]));
	return b;
}

static uint16_t attr_of(const uint8_t *mad)
{
	return (uint16_t)mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID);
}

static unsigned rej_reason(const uint8_t *mad)
{
	return (unsigned)mad_get(mad + CM_MSG_OFFSET, cm_rej_fields, CM_REJ_REASON);
}

static unsigned rej_what(const uint8_t *mad)
{
	return (unsigned)mad_get(mad + CM_MSG_OFFSET, cm_rej_fields, CM_REJ_MESSAGE_REJECTED);
}

static void conn_new(struct tt *tt, struct tt_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->lid = tt_random32();
	tt->next_qpn = (tt->next_qpn + 1) & 0xffffff;
	if (tt->next_qpn < 2)
		tt->next_qpn = 2;
	c->qpn = tt->next_qpn;
}

static uint8_t *msg_init(struct tt *tt, uint8_t *mad, const struct mad_layout *l)
{
	cm_mad_init(mad, CM_MAD_SIZE, l, CM_METHOD_SEND, ++tt->tid);
	return mad + CM_MSG_OFFSET;
}

/* A message of connection c: LocalCommID ours, RemoteCommID the target's. */
static uint8_t *msg_conn(struct tt *tt, const struct tt_conn *c, uint8_t *mad,
			 const struct mad_layout *l)
{
	uint8_t *msg = msg_init(tt, mad, l);

	mad_set(msg, cm_rtu_fields, CM_RTU_LOCAL_COMM_ID, c->lid);
	mad_set(msg, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID, c->rid);
	return msg;
}

/* A REQ that the target can accept: RC, the SA's path, the IP CM header. */
static void build_req(struct tt *tt, struct tt_conn *c, uint64_t sid, size_t pd_len)
{
	uint8_t *mad = c->req;
	uint8_t *msg = msg_init(tt, mad, &cm_req_layout);
	uint8_t pd[CM_REQ_PRIVATE_DATA_SIZE];
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};

	mad_set(msg, cm_req_fields, CM_REQ_LOCAL_COMM_ID, c->lid);
	mad_set(msg, cm_req_fields, CM_REQ_SERVICE_ID, sid);
	mad_set(msg, cm_req_fields, CM_REQ_LOCAL_CA_GUID, tt->guid);
	mad_set(msg, cm_req_fields, CM_REQ_LOCAL_QPN, c->qpn);
	mad_set(msg, cm_req_fields, CM_REQ_RESPONDER_RESOURCES, 1);
	mad_set(msg, cm_req_fields, CM_REQ_INITIATOR_DEPTH, 1);
	mad_set(msg, cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, TT_CM_RESPONSE_TIMEOUT);
	mad_set(msg, cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE, CM_TRANSPORT_RC);
	mad_set(msg, cm_req_fields, CM_REQ_END_TO_END_FLOW_CONTROL, 1);
	mad_set(msg, cm_req_fields, CM_REQ_STARTING_PSN, tt_random32() & 0xffffff);
	mad_set(msg, cm_req_fields, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, TT_CM_RESPONSE_TIMEOUT);
	mad_set(msg, cm_req_fields, CM_REQ_RETRY_COUNT, 7);
	mad_set(msg, cm_req_fields, CM_REQ_PARTITION_KEY, tt->pkey);
	mad_set(msg, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU, tt->mtu);
	mad_set(msg, cm_req_fields, CM_REQ_RNR_RETRY_COUNT, 7);
	mad_set(msg, cm_req_fields, CM_REQ_MAX_CM_RETRIES, TT_MAX_CM_RETRIES);
	mad_set(msg, cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_LID, tt->port.lid);
	mad_set(msg, cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_LID, tt->dlid);
	mad_set_bytes(msg, cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_GID, tt->port.gid);
	mad_set_bytes(msg, cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_GID, tt->dgid);
	mad_set(msg, cm_req_fields, CM_REQ_PRIMARY_PACKET_RATE, 3);
	mad_set(msg, cm_req_fields, CM_REQ_PRIMARY_SL, tt->sl);
	mad_set(msg, cm_req_fields, CM_REQ_PRIMARY_SUBNET_LOCAL, 1);
	mad_set(msg, cm_req_fields, CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT, TT_ACK_TIMEOUT);
	/* rdma_cm targets want their IP CM header; fill the rest with a pattern. */
	if (pd_len > sizeof(pd))
		pd_len = sizeof(pd);
	memset(pd, 0xa5, sizeof(pd));
	src.sin_port = htons((uint16_t)(tt_random32() | 0x8000));
	dst.sin_addr.s_addr = tt->dst_ip;
	if (pd_len >= 36)
		cm_ip_hdr_encode(pd, sizeof(pd), (struct sockaddr *)&src, (struct sockaddr *)&dst);
	cm_set_private_data(&cm_req_layout, msg, pd, pd_len);
}

#define TT_IP_PDATA 56 /* what rdma_connect sends without user data */

/*
 * Send c's REQ (built already) and wait for the REP, letting MRAs pass.
 * On anything else the case is decided here and false returned.
 */
static bool await_rep(struct tt *tt, struct tt_conn *c, struct tt_result *r)
{
	const uint8_t *m;

	while ((m = tt_wait(tt, 0, c->lid, tt->answer_ms))) {
		if (attr_of(m) == CM_ATTR_MRA)
			continue;
		if (attr_of(m) != CM_ATTR_REP) {
			verdict(r, TT_DEVIATED, "%s to a valid REQ", describe(m));
			return false;
		}
		c->rid = (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rep_fields, CM_REP_LOCAL_COMM_ID);
		c->rqpn = (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rep_fields, CM_REP_LOCAL_QPN);
		if (!c->rid || !c->rqpn) {
			verdict(r, TT_DEVIATED, "REP with comm ID 0x%x, QPN 0x%x", c->rid, c->rqpn);
			return false;
		}
		return true;
	}
	verdict(r, TT_SILENT, "no REP to a valid REQ");
	return false;
}

static bool connect_req(struct tt *tt, struct tt_conn *c, struct tt_result *r, size_t pd_len)
{
	conn_new(tt, c);
	build_req(tt, c, tt->service_id, pd_len);
	tt_send(tt, c->req, CM_MAD_SIZE);
	return await_rep(tt, c, r);
}

static void send_rtu(struct tt *tt, const struct tt_conn *c, size_t pd_len)
{
	uint8_t mad[CM_MAD_SIZE];
	uint8_t *msg = msg_conn(tt, c, mad, &cm_rtu_layout);
	uint8_t pd[CM_RTU_PRIVATE_DATA_SIZE];

	memset(pd, 0x5a, sizeof(pd));
	cm_set_private_data(&cm_rtu_layout, msg, pd, pd_len);
	tt_send(tt, mad, sizeof(mad));
}

static bool connect_rtu(struct tt *tt, struct tt_conn *c, struct tt_result *r)
{
	if (!connect_req(tt, c, r, TT_IP_PDATA))
		return false;
	send_rtu(tt, c, 0);
	return true;
}

static void send_dreq(struct tt *tt, const struct tt_conn *c, uint32_t qpn, size_t pd_len)
{
	uint8_t mad[CM_MAD_SIZE];
	uint8_t *msg = msg_conn(tt, c, mad, &cm_dreq_layout);
	uint8_t pd[CM_DREQ_PRIVATE_DATA_SIZE];

	mad_set(msg, cm_dreq_fields, CM_DREQ_REMOTE_QPN_EECN, qpn);
	memset(pd, 0x3c, sizeof(pd));
	cm_set_private_data(&cm_dreq_layout, msg, pd, pd_len);
	tt_send(tt, mad, sizeof(mad));
}

/* DREQ, and wait for the DREP: the target's connection is then in TimeWait. */
static const uint8_t *disconnect(struct tt *tt, const struct tt_conn *c)
{
	send_dreq(tt, c, c->rqpn, 0);
	return tt_wait(tt, CM_ATTR_DREP, c->lid, tt->answer_ms);
}

/*
 * Leave no connection behind in the target (best effort): complete it
 * and disconnect it.  A REJ would do, but an rdma_cm application sees it
 * as RDMA_CM_EVENT_REJECTED, which some (rping) take as fatal.
 */
static void cleanup_rep_sent(struct tt *tt, const struct tt_conn *c)
{
	send_rtu(tt, c, 0);
	send_dreq(tt, c, c->rqpn, 0);
	tt_wait(tt, CM_ATTR_DREP, c->lid, tt->wait_ms);
	tt_forget(tt, c->lid);
}

static void cleanup_established(struct tt *tt, const struct tt_conn *c)
{
	disconnect(tt, c);
	tt_forget(tt, c->lid);
}

/* Nothing may come for c within wait_ms; else the case deviates. */
static bool silent(struct tt *tt, const struct tt_conn *c, struct tt_result *r, const char *sent)
{
	const uint8_t *m;

	tt_pump(tt, tt->wait_ms);
	m = tt_wait(tt, 0, c->lid, 0);
	if (m) {
		verdict(r, TT_DEVIATED, "%s to %s", describe(m), sent);
		return false;
	}
	return true;
}

/* ---- messages for no connection ---- */

static void c_req_no_listener(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;
	const uint8_t *m;

	conn_new(tt, &c);
	build_req(tt, &c, tt->unused_sid, TT_IP_PDATA);
	tt_send(tt, c.req, CM_MAD_SIZE);
	m = tt_wait(tt, 0, c.lid, tt->answer_ms);
	if (!m)
		verdict(r, TT_SILENT, "nothing");
	else if (attr_of(m) == CM_ATTR_REJ && rej_reason(m) == CM_REJ_INVALID_SERVICE_ID &&
		 rej_what(m) == CM_MSG_REF_REQ)
		verdict(r, TT_AS_REQUIRED, "%s", describe(m));
	else
		verdict(r, TT_DEVIATED, "%s", describe(m));
}

static void c_rep_unknown(struct tt *tt, struct tt_result *r)
{
	uint8_t mad[CM_MAD_SIZE];
	struct tt_conn c;
	uint8_t *msg;
	const uint8_t *m;

	conn_new(tt, &c);
	c.rid = tt_random32();
	msg = msg_conn(tt, &c, mad, &cm_rep_layout);
	mad_set(msg, cm_rep_fields, CM_REP_LOCAL_QPN, c.qpn);
	mad_set(msg, cm_rep_fields, CM_REP_STARTING_PSN, 1);
	mad_set(msg, cm_rep_fields, CM_REP_LOCAL_CA_GUID, tt->guid);
	tt_send(tt, mad, sizeof(mad));
	m = tt_wait(tt, 0, c.lid, tt->answer_ms);
	if (!m)
		verdict(r, TT_SILENT, "nothing");
	else if (attr_of(m) == CM_ATTR_REJ && rej_reason(m) == CM_REJ_INVALID_COMM_ID &&
		 rej_what(m) == CM_MSG_REF_REP)
		verdict(r, TT_AS_REQUIRED, "%s", describe(m));
	else
		verdict(r, TT_DEVIATED, "%s", describe(m));
}

static void c_dreq_unknown(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;
	const uint8_t *m;

	conn_new(tt, &c);
	c.rid = tt_random32();
	send_dreq(tt, &c, c.qpn, 0);
	m = tt_wait(tt, 0, c.lid, tt->answer_ms);
	if (!m)
		verdict(r, TT_SILENT, "nothing");
	else if (attr_of(m) == CM_ATTR_DREP &&
		 mad_get(m + CM_MSG_OFFSET, cm_drep_fields, CM_DREP_LOCAL_COMM_ID) == c.rid)
		verdict(r, TT_AS_REQUIRED, "DREP");
	else
		verdict(r, TT_DEVIATED, "%s", describe(m));
}

/* A message naming comm IDs the target never gave out: nothing comes back. */
static void unknown_silent(struct tt *tt, struct tt_result *r, const struct mad_layout *l,
			   const char *name)
{
	uint8_t mad[CM_MAD_SIZE];
	struct tt_conn c;
	uint8_t *msg;

	conn_new(tt, &c);
	c.rid = tt_random32();
	msg = msg_conn(tt, &c, mad, l);
	if (l == &cm_rej_layout) {
		mad_set(msg, cm_rej_fields, CM_REJ_MESSAGE_REJECTED, CM_MSG_REF_REP);
		mad_set(msg, cm_rej_fields, CM_REJ_REASON, CM_REJ_CONSUMER_DEFINED);
	} else if (l == &cm_mra_layout) {
		mad_set(msg, cm_mra_fields, CM_MRA_MESSAGE_MRAED, CM_MSG_REF_REP);
		mad_set(msg, cm_mra_fields, CM_MRA_SERVICE_TIMEOUT, 10);
	} else if (l == &cm_lap_layout) {
		mad_set(msg, cm_lap_fields, CM_LAP_REMOTE_QPN_EECN, c.qpn);
		mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_PORT_LID, tt->port.lid);
		mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_REMOTE_PORT_LID, tt->dlid);
		mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_SUBNET_LOCAL, 1);
		mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_ACK_TIMEOUT, TT_ACK_TIMEOUT);
	}
	tt_send(tt, mad, sizeof(mad));
	if (silent(tt, &c, r, name))
		verdict(r, TT_AS_REQUIRED, "nothing");
}

static void c_rtu_unknown(struct tt *tt, struct tt_result *r)
{
	unknown_silent(tt, r, &cm_rtu_layout, "an RTU for no connection");
}

static void c_drep_unknown(struct tt *tt, struct tt_result *r)
{
	unknown_silent(tt, r, &cm_drep_layout, "a DREP for no connection");
}

static void c_rej_unknown(struct tt *tt, struct tt_result *r)
{
	unknown_silent(tt, r, &cm_rej_layout, "a REJ for no connection");
}

static void c_mra_unknown(struct tt *tt, struct tt_result *r)
{
	unknown_silent(tt, r, &cm_mra_layout, "an MRA for no connection");
}

static void c_lap_unknown(struct tt *tt, struct tt_result *r)
{
	unknown_silent(tt, r, &cm_lap_layout, "a LAP for no connection");
}

static void c_apr_unknown(struct tt *tt, struct tt_result *r)
{
	unknown_silent(tt, r, &cm_apr_layout, "an APR for no connection");
}

static void c_sidr_no_listener(struct tt *tt, struct tt_result *r)
{
	uint8_t mad[CM_MAD_SIZE];
	uint32_t id = tt_random32();
	uint8_t *msg = msg_init(tt, mad, &cm_sidr_req_layout);
	const uint8_t *m;

	mad_set(msg, cm_sidr_req_fields, CM_SIDR_REQ_REQUEST_ID, id);
	mad_set(msg, cm_sidr_req_fields, CM_SIDR_REQ_PARTITION_KEY, tt->pkey);
	mad_set(msg, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID, tt->unused_sid);
	tt_send(tt, mad, sizeof(mad));
	m = tt_wait(tt, 0, id, tt->answer_ms);
	if (!m)
		verdict(r, TT_SILENT, "nothing");
	else if (attr_of(m) == CM_ATTR_SIDR_REP &&
		 mad_get(m + CM_MSG_OFFSET, cm_sidr_rep_fields, CM_SIDR_REP_STATUS) ==
		     CM_SIDR_UNSUPPORTED)
		verdict(r, TT_AS_REQUIRED, "%s", describe(m));
	else
		verdict(r, TT_DEVIATED, "%s", describe(m));
}

/* ---- the handshake, and messages out of state ---- */

static void c_handshake(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;

	if (!connect_rtu(tt, &c, r))
		return;
	if (!silent(tt, &c, r, "RTU"))
		return;
	if (disconnect(tt, &c))
		verdict(r, TT_AS_REQUIRED, "REP; nothing to RTU; DREP to DREQ");
	else
		verdict(r, TT_SILENT, "REP, then no DREP to DREQ");
	tt_forget(tt, c.lid);
}

static void c_dreq_before_rtu(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;
	const uint8_t *m;

	if (!connect_req(tt, &c, r, TT_IP_PDATA))
		return;
	send_dreq(tt, &c, c.rqpn, 0);
	m = tt_wait(tt, 0, c.lid, tt->answer_ms);
	if (m && attr_of(m) == CM_ATTR_DREP)
		verdict(r, TT_AS_REQUIRED, "DREP");
	else if (m)
		verdict(r, TT_DEVIATED, "%s", describe(m));
	else
		verdict(r, TT_SILENT, "nothing");
	tt_forget(tt, c.lid);
}

static void send_lap(struct tt *tt, const struct tt_conn *c)
{
	uint8_t mad[CM_MAD_SIZE];
	uint8_t *msg = msg_conn(tt, c, mad, &cm_lap_layout);

	mad_set(msg, cm_lap_fields, CM_LAP_REMOTE_QPN_EECN, c->rqpn);
	mad_set(msg, cm_lap_fields, CM_LAP_REMOTE_CM_RESPONSE_TIMEOUT, TT_CM_RESPONSE_TIMEOUT);
	mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_PORT_LID, tt->port.lid);
	mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_REMOTE_PORT_LID, tt->dlid);
	mad_set_bytes(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_PORT_GID, tt->port.gid);
	mad_set_bytes(msg, cm_lap_fields, CM_LAP_ALTERNATE_REMOTE_PORT_GID, tt->dgid);
	mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_PACKET_RATE, 3);
	mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_SL, tt->sl);
	mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_SUBNET_LOCAL, 1);
	mad_set(msg, cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_ACK_TIMEOUT, TT_ACK_TIMEOUT);
	tt_send(tt, mad, sizeof(mad));
}

static void c_lap_before_rtu(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;

	if (!connect_req(tt, &c, r, TT_IP_PDATA))
		return;
	send_lap(tt, &c);
	if (silent(tt, &c, r, "a LAP before RTU"))
		verdict(r, TT_AS_REQUIRED, "nothing");
	cleanup_rep_sent(tt, &c);
}

static void c_lap_in_timewait(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;

	if (!connect_rtu(tt, &c, r))
		return;
	if (!disconnect(tt, &c)) {
		verdict(r, TT_SILENT, "no DREP to the DREQ before the LAP");
		return;
	}
	send_lap(tt, &c);
	if (silent(tt, &c, r, "a LAP in TimeWait"))
		verdict(r, TT_AS_REQUIRED, "nothing");
	tt_forget(tt, c.lid);
}

static void c_rep_to_passive(struct tt *tt, struct tt_result *r)
{
	uint8_t mad[CM_MAD_SIZE];
	struct tt_conn c;
	uint8_t *msg;

	if (!connect_req(tt, &c, r, TT_IP_PDATA))
		return;
	msg = msg_conn(tt, &c, mad, &cm_rep_layout);
	mad_set(msg, cm_rep_fields, CM_REP_LOCAL_QPN, c.qpn);
	mad_set(msg, cm_rep_fields, CM_REP_LOCAL_CA_GUID, tt->guid);
	tt_send(tt, mad, sizeof(mad));
	if (silent(tt, &c, r, "a REP sent to the passive side"))
		verdict(r, TT_AS_REQUIRED, "nothing");
	cleanup_rep_sent(tt, &c);
}

static void c_rtu_wrong_id(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c, bad;

	if (!connect_req(tt, &c, r, TT_IP_PDATA))
		return;
	bad = c;
	bad.lid = c.lid ^ 0x00010000u;
	send_rtu(tt, &bad, 0);
	if (!silent(tt, &c, r, "an RTU with a wrong LocalCommID") ||
	    !silent(tt, &bad, r, "an RTU with a wrong LocalCommID")) {
		cleanup_rep_sent(tt, &c);
		return;
	}
	send_rtu(tt, &c, 0);
	if (disconnect(tt, &c))
		verdict(r, TT_AS_REQUIRED, "nothing; the right RTU then connects (DREP to DREQ)");
	else
		verdict(r, TT_SILENT, "no DREP to DREQ after the right RTU");
	tt_forget(tt, c.lid);
	tt_forget(tt, bad.lid);
}

static void c_dreq_wrong_qpn(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;

	if (!connect_rtu(tt, &c, r))
		return;
	send_dreq(tt, &c, c.rqpn ^ 0x1u, 0);
	if (!silent(tt, &c, r, "a DREQ naming another QPN")) {
		tt_forget(tt, c.lid);
		return;
	}
	if (disconnect(tt, &c))
		verdict(r, TT_AS_REQUIRED, "nothing; the right DREQ then gets its DREP");
	else
		verdict(r, TT_SILENT, "no DREP to the right DREQ afterwards");
	tt_forget(tt, c.lid);
}

/* ---- duplicates ---- */

static void c_dup_req_before_rep(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;
	const uint8_t *m;
	unsigned reps = 0, mras = 0;
	uint32_t rid = 0;

	conn_new(tt, &c);
	build_req(tt, &c, tt->service_id, TT_IP_PDATA);
	tt_send(tt, c.req, CM_MAD_SIZE);
	/*
	 * The repeats come a little later, as a peer's retransmissions do: a
	 * CM that arms a delayed MRA for a REQ it hands to its user has done
	 * so by then, and answers them with it.
	 */
	usleep(150000);
	tt_send(tt, c.req, CM_MAD_SIZE);
	tt_send(tt, c.req, CM_MAD_SIZE);
	while ((m = tt_wait(tt, 0, c.lid, reps ? tt->wait_ms : tt->answer_ms))) {
		uint32_t id =
		    (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rtu_fields, CM_RTU_LOCAL_COMM_ID);

		if (attr_of(m) != CM_ATTR_REP && attr_of(m) != CM_ATTR_MRA) {
			verdict(r, TT_DEVIATED, "%s to a repeated REQ", describe(m));
			tt_forget(tt, c.lid);
			return;
		}
		if (rid && id != rid) {
			verdict(r, TT_DEVIATED, "%s from a second comm ID (0x%x, 0x%x)",
				describe(m), rid, id);
			tt_forget(tt, c.lid);
			return;
		}
		rid = id;
		if (attr_of(m) == CM_ATTR_REP) {
			reps++;
			c.rqpn =
			    (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rep_fields, CM_REP_LOCAL_QPN);
		} else {
			mras++;
		}
	}
	if (!reps) {
		verdict(r, TT_SILENT, "no REP (%u MRA)", mras);
		return;
	}
	c.rid = rid;
	verdict(r, TT_AS_REQUIRED, "%u REP, %u MRA, one comm ID", reps, mras);
	send_rtu(tt, &c, 0);
	cleanup_established(tt, &c);
}

static void c_dup_req_after_rep(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;
	const uint8_t *m;

	if (!connect_req(tt, &c, r, TT_IP_PDATA))
		return;
	tt_send(tt, c.req, CM_MAD_SIZE);
	m = tt_wait(tt, 0, c.lid, tt->wait_ms);
	if (!m)
		verdict(r, TT_AS_REQUIRED, "nothing (the REP timer resends)");
	else if ((attr_of(m) == CM_ATTR_REP || attr_of(m) == CM_ATTR_MRA) &&
		 mad_get(m + CM_MSG_OFFSET, cm_rtu_fields, CM_RTU_LOCAL_COMM_ID) == c.rid)
		verdict(r, TT_AS_REQUIRED, "%s again, same comm ID", describe(m));
	else
		verdict(r, TT_DEVIATED, "%s", describe(m));
	send_rtu(tt, &c, 0);
	cleanup_established(tt, &c);
}

static void c_dup_rtu(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;

	if (!connect_rtu(tt, &c, r))
		return;
	send_rtu(tt, &c, 0);
	if (!silent(tt, &c, r, "a second RTU")) {
		tt_forget(tt, c.lid);
		return;
	}
	if (disconnect(tt, &c))
		verdict(r, TT_AS_REQUIRED, "nothing; DREQ then gets its DREP");
	else
		verdict(r, TT_SILENT, "no DREP to DREQ after the second RTU");
	tt_forget(tt, c.lid);
}

static void c_dup_dreq(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;

	if (!connect_rtu(tt, &c, r))
		return;
	if (!disconnect(tt, &c)) {
		verdict(r, TT_SILENT, "no DREP to the first DREQ");
		return;
	}
	if (disconnect(tt, &c))
		verdict(r, TT_AS_REQUIRED, "DREP, and DREP again");
	else
		verdict(r, TT_SILENT, "DREP to the first DREQ, nothing to the repeated one");
	tt_forget(tt, c.lid);
}

static void c_req_in_timewait(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;
	const uint8_t *m;

	if (!connect_rtu(tt, &c, r))
		return;
	if (!disconnect(tt, &c)) {
		verdict(r, TT_SILENT, "no DREP to the DREQ");
		return;
	}
	tt_send(tt, c.req, CM_MAD_SIZE);
	m = tt_wait(tt, 0, c.lid, tt->answer_ms);
	if (!m)
		verdict(r, TT_SILENT, "nothing");
	else if (attr_of(m) == CM_ATTR_REJ && rej_reason(m) == CM_REJ_STALE_CONN)
		verdict(r, TT_AS_REQUIRED, "%s", describe(m));
	else
		verdict(r, TT_DEVIATED, "%s", describe(m));
	tt_forget(tt, c.lid);
}

/* ---- stale connections ---- */

static void c_stale_qp(struct tt *tt, struct tt_result *r)
{
	uint8_t mad[CM_MAD_SIZE];
	struct tt_conn a, b;
	const uint8_t *rej, *dreq;

	if (!connect_rtu(tt, &a, r))
		return;
	tt_pump(tt, 20);
	conn_new(tt, &b);
	b.qpn = a.qpn; /* the same QP asks again: it believes the old one gone */
	build_req(tt, &b, tt->service_id, TT_IP_PDATA);
	tt_send(tt, b.req, CM_MAD_SIZE);
	rej = tt_wait(tt, 0, b.lid, tt->answer_ms);
	dreq = tt_wait(tt, CM_ATTR_DREQ, a.lid, tt->answer_ms);
	if (!rej || attr_of(rej) != CM_ATTR_REJ || rej_reason(rej) != CM_REJ_STALE_CONN)
		verdict(r, rej ? TT_DEVIATED : TT_SILENT, "%s to the new REQ, %s for the old",
			describe(rej), dreq ? "DREQ" : "no DREQ");
	else if (!dreq)
		verdict(r, TT_DEVIATED, "%s, but no DREQ for the old connection", describe(rej));
	else
		verdict(r, TT_AS_REQUIRED, "%s; DREQ for the old connection", describe(rej));
	if (rej && attr_of(rej) == CM_ATTR_REP) {
		b.rid = (uint32_t)mad_get(rej + CM_MSG_OFFSET, cm_rep_fields, CM_REP_LOCAL_COMM_ID);
		cleanup_rep_sent(tt, &b);
	}
	if (dreq) {
		msg_conn(tt, &a, mad, &cm_drep_layout);
		tt_send(tt, mad, sizeof(mad));
	} else {
		disconnect(tt, &a);
	}
	tt_pump(tt, 20);
	tt_forget(tt, a.lid);
	tt_forget(tt, b.lid);
}

/* ---- reserved values, lengths ---- */

/* A REQ with one field changed must get REJ `reason`. */
static void req_rejected(struct tt *tt, struct tt_result *r, int field, uint64_t v, unsigned reason)
{
	struct tt_conn c;
	const uint8_t *m;

	conn_new(tt, &c);
	build_req(tt, &c, tt->service_id, TT_IP_PDATA);
	mad_set(c.req + CM_MSG_OFFSET, cm_req_fields, field, v);
	tt_send(tt, c.req, CM_MAD_SIZE);
	m = tt_wait(tt, 0, c.lid, tt->answer_ms);
	if (!m)
		verdict(r, TT_SILENT, "nothing");
	else if (attr_of(m) == CM_ATTR_REJ && rej_reason(m) == reason &&
		 rej_what(m) == CM_MSG_REF_REQ)
		verdict(r, TT_AS_REQUIRED, "%s", describe(m));
	else
		verdict(r, TT_DEVIATED, "%s", describe(m));
	if (m && attr_of(m) == CM_ATTR_REP) {
		c.rid = (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rep_fields, CM_REP_LOCAL_COMM_ID);
		cleanup_rep_sent(tt, &c);
	}
	tt_forget(tt, c.lid);
}

static void c_req_bad_transport(struct tt *tt, struct tt_result *r)
{
	req_rejected(tt, r, CM_REQ_TRANSPORT_SERVICE_TYPE, CM_TRANSPORT_RD,
		     CM_REJ_INVALID_TRANSPORT_TYPE);
}

static void c_req_bad_mtu(struct tt *tt, struct tt_result *r)
{
	req_rejected(tt, r, CM_REQ_PATH_PACKET_PAYLOAD_MTU, 0, CM_REJ_INVALID_MTU);
}

static void c_mra_reserved(struct tt *tt, struct tt_result *r)
{
	uint8_t mad[CM_MAD_SIZE];
	struct tt_conn c;
	uint8_t *msg;

	if (!connect_req(tt, &c, r, TT_IP_PDATA))
		return;
	msg = msg_conn(tt, &c, mad, &cm_mra_layout);
	mad_set(msg, cm_mra_fields, CM_MRA_MESSAGE_MRAED, 3);
	mad_set(msg, cm_mra_fields, CM_MRA_SERVICE_TIMEOUT, 31);
	tt_send(tt, mad, sizeof(mad));
	if (silent(tt, &c, r, "an MRA with MessageMRAed 3"))
		verdict(r, TT_AS_REQUIRED, "nothing");
	cleanup_rep_sent(tt, &c);
}

static void c_rej_ari_overlong(struct tt *tt, struct tt_result *r)
{
	uint8_t mad[CM_MAD_SIZE];
	struct tt_conn c;
	uint8_t *msg;

	if (!connect_req(tt, &c, r, TT_IP_PDATA))
		return;
	msg = msg_conn(tt, &c, mad, &cm_rej_layout);
	mad_set(msg, cm_rej_fields, CM_REJ_MESSAGE_REJECTED, CM_MSG_REF_REP);
	mad_set(msg, cm_rej_fields, CM_REJ_REASON, CM_REJ_CONSUMER_DEFINED);
	mad_set(msg, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH, 127);
	memset(msg + cm_rej_fields[CM_REJ_ARI].byte, 0xee, CM_REJ_ARI_SIZE);
	tt_send(tt, mad, sizeof(mad));
	if (silent(tt, &c, r, "a REJ whose RejectInfoLength is 127"))
		verdict(r, TT_AS_REQUIRED, "nothing");
	cleanup_rep_sent(tt, &c);
}

/*
 * A short send is padded with zeros to 256 bytes by the MAD layer (the
 * kernel's ib_umad, the simulator likewise): what arrives is a REQ whose
 * tail (path fields past byte 100, private data) is zero.  It must be
 * answered as the whole REQ it now is, REP or REJ, never crash the CM.
 */
static void c_mad_truncated(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;
	const uint8_t *m;

	conn_new(tt, &c);
	build_req(tt, &c, tt->service_id, TT_IP_PDATA);
	if (tt_send(tt, c.req, 100)) {
		verdict(r, TT_SKIPPED, "the local port would not send a 100-byte MAD");
		return;
	}
	m = tt_wait(tt, 0, c.lid, tt->answer_ms);
	while (m && attr_of(m) == CM_ATTR_MRA)
		m = tt_wait(tt, 0, c.lid, tt->answer_ms);
	if (!m) {
		verdict(r, TT_SILENT, "nothing");
	} else if (attr_of(m) == CM_ATTR_REP) {
		verdict(r, TT_AS_REQUIRED, "REP (the zero-padded REQ is a valid one)");
		c.rid = (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rep_fields, CM_REP_LOCAL_COMM_ID);
		cleanup_rep_sent(tt, &c);
	} else if (attr_of(m) == CM_ATTR_REJ) {
		verdict(r, TT_AS_REQUIRED, "%s", describe(m));
	} else {
		verdict(r, TT_DEVIATED, "%s", describe(m));
	}
	tt_forget(tt, c.lid);
}

static void c_class_version(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;
	const uint8_t *m;

	conn_new(tt, &c);
	build_req(tt, &c, tt->service_id, TT_IP_PDATA);
	mad_set(c.req, mad_hdr_fields, MAD_HDR_CLASS_VERSION, 1);
	tt_send(tt, c.req, CM_MAD_SIZE);
	tt_pump(tt, tt->wait_ms);
	m = tt_wait(tt, 0, c.lid, 0);
	if (!m)
		verdict(r, TT_AS_REQUIRED, "nothing");
	else if (attr_of(m) == CM_ATTR_REJ && rej_reason(m) == CM_REJ_INVALID_CLASS_VERSION)
		verdict(r, TT_AS_REQUIRED, "%s", describe(m));
	else
		verdict(r, TT_DEVIATED, "%s", describe(m));
	if (m && attr_of(m) == CM_ATTR_REP) {
		c.rid = (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rep_fields, CM_REP_LOCAL_COMM_ID);
		cleanup_rep_sent(tt, &c);
	}
	tt_forget(tt, c.lid);
}

static void c_method_get(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;

	conn_new(tt, &c);
	build_req(tt, &c, tt->service_id, TT_IP_PDATA);
	mad_set(c.req, mad_hdr_fields, MAD_HDR_METHOD, CM_METHOD_GET);
	tt_send(tt, c.req, CM_MAD_SIZE);
	if (silent(tt, &c, r, "a REQ sent with method Get"))
		verdict(r, TT_AS_REQUIRED, "nothing");
	tt_forget(tt, c.lid);
}

static void c_pdata_max(struct tt *tt, struct tt_result *r)
{
	struct tt_conn c;

	if (!connect_req(tt, &c, r, CM_REQ_PRIVATE_DATA_SIZE))
		return;
	send_rtu(tt, &c, CM_RTU_PRIVATE_DATA_SIZE);
	if (!silent(tt, &c, r, "an RTU with 224 bytes of private data")) {
		tt_forget(tt, c.lid);
		return;
	}
	send_dreq(tt, &c, c.rqpn, CM_DREQ_PRIVATE_DATA_SIZE);
	if (tt_wait(tt, CM_ATTR_DREP, c.lid, tt->answer_ms))
		verdict(r, TT_AS_REQUIRED, "REP to a 92-byte REQ, nothing to RTU, DREP to DREQ");
	else
		verdict(r, TT_SILENT, "no DREP to a DREQ with 220 bytes of private data");
	tt_forget(tt, c.lid);
}

/* ---- a REQ flood ---- */

static void c_req_flood(struct tt *tt, struct tt_result *r)
{
	unsigned n = tt->flood, reps = 0, mras = 0, rejs = 0, none = 0, bad = 0;
	struct tt_conn *c = calloc(n, sizeof(*c)), fresh;
	char badwhat[200] = "";

	if (!c) {
		verdict(r, TT_SKIPPED, "out of memory");
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		conn_new(tt, &c[i]);
		build_req(tt, &c[i], tt->service_id, TT_IP_PDATA);
		tt_send(tt, c[i].req, CM_MAD_SIZE);
	}
	tt_pump(tt, tt->answer_ms);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *m;
		bool mra = false;

		while ((m = tt_wait(tt, 0, c[i].lid, 0))) {
			uint32_t id = (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rtu_fields,
							CM_RTU_LOCAL_COMM_ID);

			if (attr_of(m) == CM_ATTR_MRA) {
				mra = true;
				continue;
			}
			if (attr_of(m) == CM_ATTR_REP && !c[i].rid) {
				c[i].rid = id;
				c[i].rqpn = (uint32_t)mad_get(m + CM_MSG_OFFSET, cm_rep_fields,
							      CM_REP_LOCAL_QPN);
				for (unsigned j = 0; j < i; j++)
					if (c[j].rid == id) {
						bad++;
						snprintf(badwhat, sizeof(badwhat),
							 "two REQs got comm ID 0x%x", id);
					}
				continue;
			}
			if (attr_of(m) == CM_ATTR_REP && id == c[i].rid)
				continue;
			if (attr_of(m) == CM_ATTR_REJ &&
			    (rej_reason(m) == CM_REJ_NO_RESOURCES ||
			     rej_reason(m) == CM_REJ_CONSUMER_DEFINED ||
			     rej_reason(m) == CM_REJ_NO_QP)) {
				rejs++;
				c[i].rqpn = 1; /* rejected: nothing to clean */
				continue;
			}
			bad++;
			snprintf(badwhat, sizeof(badwhat), "%s", describe(m));
		}
		if (c[i].rid)
			reps++;
		else if (mra)
			mras++;
		else if (!c[i].rqpn)
			none++;
	}
	for (unsigned i = 0; i < n; i++)
		if (c[i].rid) {
			send_rtu(tt, &c[i], 0);
			send_dreq(tt, &c[i], c[i].rqpn, 0);
		}
	tt_pump(tt, tt->wait_ms);
	for (unsigned i = 0; i < n; i++)
		tt_forget(tt, c[i].lid);
	free(c);
	if (bad) {
		verdict(r, TT_DEVIATED, "%u REQs: %s", n, badwhat);
		return;
	}
	if (!connect_req(tt, &fresh, r, TT_IP_PDATA)) {
		size_t l = strlen(r->got);

		snprintf(r->got + l, sizeof(r->got) - l, " after the flood (%u REP, %u REJ)", reps,
			 rejs);
		return;
	}
	verdict(r, TT_AS_REQUIRED,
		"%u REQs: %u REP, %u MRA only, %u REJ, %u unanswered; a new REQ then gets a REP", n,
		reps, mras, rejs, none);
	cleanup_rep_sent(tt, &fresh);
}

/* clang-format off */
const struct tt_case tt_cases[] = {
	{"handshake", "REQ, RTU after the REP, DREQ",
	 "REP (an MRA first is allowed); nothing to the RTU; DREP to the DREQ (12.9.5, 12.9.6)",
	 c_handshake},
	{"req-no-listener", "REQ for a service ID nobody listens on",
	 "REJ reason 8 (invalid service ID) rejecting the REQ (12.6.7, table 109; kernel cm_req_handler)",
	 c_req_no_listener},
	{"rep-unknown-id", "REP naming a comm ID the target never gave out",
	 "REJ reason 6 (invalid comm ID) rejecting the REP (kernel cm_rep_handler -> cm_issue_rej)",
	 c_rep_unknown},
	{"dreq-unknown-id", "DREQ naming no connection",
	 "DREP (12.9.6: a DREQ for no connection is answered; kernel cm_issue_drep)",
	 c_dreq_unknown},
	{"rtu-unknown-id", "RTU for no connection",
	 "nothing (kernel cm_rtu_handler drops it)", c_rtu_unknown},
	{"drep-unknown-id", "DREP for no connection",
	 "nothing (kernel cm_drep_handler drops it)", c_drep_unknown},
	{"rej-unknown-id", "REJ for no connection",
	 "nothing (a REJ is never answered; kernel cm_rej_handler drops it)", c_rej_unknown},
	{"mra-unknown-id", "MRA for no connection",
	 "nothing (kernel cm_mra_handler drops it)", c_mra_unknown},
	{"lap-unknown-id", "LAP for no connection",
	 "nothing (kernel cm_lap_handler drops it)", c_lap_unknown},
	{"apr-unknown-id", "APR for no connection",
	 "nothing (kernel cm_apr_handler: unmatched reply)", c_apr_unknown},
	{"sidr-no-listener", "SIDR_REQ for a service ID nobody listens on",
	 "SIDR_REP status 1 (service ID not supported) (12.11, table 121; kernel cm_sidr_req_handler)",
	 c_sidr_no_listener},
	{"dreq-before-rtu", "REQ, then DREQ instead of RTU",
	 "DREP: a DREQ in REP Sent disconnects (kernel cm_dreq_handler accepts REP_SENT)",
	 c_dreq_before_rtu},
	{"lap-before-rtu", "REQ, then LAP instead of RTU",
	 "nothing: LAP only in Established (12.8; kernel cm_lap_handler)", c_lap_before_rtu},
	{"lap-in-timewait", "connection, DREQ, then LAP",
	 "nothing: LAP only in Established (12.8; kernel cm_lap_handler)", c_lap_in_timewait},
	{"rep-to-passive", "REQ, then a REP of our own to the passive side",
	 "nothing: REP is only taken in REQ Sent / MRA(REQ) Rcvd (kernel cm_rep_handler)",
	 c_rep_to_passive},
	{"rtu-wrong-id", "REQ, then RTU with the right RemoteCommID and a wrong LocalCommID",
	 "nothing: both comm IDs must match (kernel cm_acquire_id); the right RTU then connects",
	 c_rtu_wrong_id},
	{"dreq-wrong-qpn", "connection, then DREQ naming another QPN",
	 "nothing: a DREQ must name the QP (12.6.10; kernel cm_dreq_handler); the right one gets its DREP",
	 c_dreq_wrong_qpn},
	{"dup-req-before-rep", "a REQ, then the same REQ twice 150 ms later",
	 "one connection: REP and MRA carry one comm ID, no REJ (12.9.8.1; delayed MRA as the kernel)",
	 c_dup_req_before_rep},
	{"dup-req-after-rep", "REQ, REP, the same REQ again",
	 "the same REP (or MRA) again, or nothing while the REP timer runs; never a second connection (12.9.8.1)",
	 c_dup_req_after_rep},
	{"dup-rtu", "connection, then the RTU again",
	 "nothing; the connection stays usable (kernel cm_rtu_handler counts a duplicate)",
	 c_dup_rtu},
	{"dup-dreq", "connection, DREQ, DREQ again",
	 "DREP, and DREP again from TimeWait (12.9.6; kernel cm_dreq_handler, TIMEWAIT)",
	 c_dup_dreq},
	{"req-in-timewait", "connection, DREQ, then its REQ again",
	 "REJ reason 10 (stale connection) (12.9.8.3.1; kernel cm_dup_req_handler, TIMEWAIT)",
	 c_req_in_timewait},
	{"stale-qp", "connection, then a new REQ from the same QP (new comm ID)",
	 "REJ reason 10 (stale connection) to the new REQ and a DREQ for the old connection (12.9.8.3.2; kernel cm_req_handler)",
	 c_stale_qp},
	{"req-bad-transport", "REQ with Transport Service Type 2 (RD)",
	 "REJ reason 9 (invalid transport service type) (table 109)", c_req_bad_transport},
	{"req-bad-mtu", "REQ with Path Packet Payload MTU 0 (reserved)",
	 "REJ reason 26 (invalid path MTU) (table 109)", c_req_bad_mtu},
	{"mra-reserved", "REQ, then MRA with MessageMRAed 3 (reserved)",
	 "nothing: a reserved MessageMRAed names no message (table 107)", c_mra_reserved},
	{"rej-ari-overlong", "REQ, then REJ with RejectInfoLength 127 (ARI is 72 bytes)",
	 "nothing back (the REJ is dropped, or honoured; neither answers)", c_rej_ari_overlong},
	{"mad-truncated", "a REQ cut to 100 bytes",
	 "a MAD is 256 bytes (13.4.2): the MAD layer pads the send with zeros, so the REQ that arrives is answered whole, REP or REJ",
	 c_mad_truncated},
	{"class-version-1", "REQ with class version 1",
	 "nothing (no CM agent of version 1: the kernel's MAD layer drops it) or REJ reason 31",
	 c_class_version},
	{"method-get", "REQ sent with method Get instead of Send",
	 "nothing: CM messages are Sends (12.6; the kernel's CM agent takes only Send)",
	 c_method_get},
	{"pdata-max", "REQ with 92, RTU with 224, DREQ with 220 bytes of private data",
	 "REP, nothing to the RTU, DREP: every field at its limit is legal (tables 106, 111, 112)",
	 c_pdata_max},
	{"req-flood", "N REQs back to back (--flood N), new comm IDs and QPs",
	 "each REQ gets a REP, MRA or REJ (no resources / consumer) or is dropped (full backlog); no comm ID twice; the listener then still accepts",
	 c_req_flood},
};
/* clang-format on */
const unsigned tt_ncases = sizeof(tt_cases) / sizeof(tt_cases[0]);
