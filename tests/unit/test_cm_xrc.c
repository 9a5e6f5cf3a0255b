/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM engine, XRC connections (IBA annex A14, as the kernel's cm.c sends
 * them): the REQ of an XRC initiator says transport service type 3 with
 * extended transport type 1 and leaves what only a responder needs 0; the
 * target's REP names its QP in the Local EE Context Number and says SRQ;
 * each end's QP attributes; REQs of other extended types are rejected.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "cm/cm_int.h"
#include "cm/cm_wire.h"
#include "tests/unit/cm_harness.h"

/* A connects an XRC_SEND QP to B's XRC target (auto-accepted, QP 0x2000). */
static uint32_t connect_xrc(uint32_t qpn)
{
	struct cm_connect_cmd cmd;
	uint32_t id = 0;

	cmh_connect_cmd(&H, &cmd, qpn);
	cmd.qp_type = CM_QPT_XRC;
	cmd.srq = 1; /* an initiator has none: not sent */
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), 0);
	cmh_deliver(&H);
	return id;
}

static void test_xrc_req_fields(void **state)
{
	const struct cm_event *ev;
	const uint8_t *req;
	uint32_t a;

	(void)state;
	a = connect_xrc(0x1001);
	assert_int_not_equal(a, 0);
	req = cmh_last_mad(&H, A, CM_ATTR_REQ) + CM_MSG_OFFSET;
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE),
			 CM_TRANSPORT_EXTENDED);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_EXTENDED_TRANSPORT_TYPE),
			 CM_EXT_TRANSPORT_XRC);
	/* What only a responder needs is left 0 (kernel cm_format_req). */
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_RESPONDER_RESOURCES), 0);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_RETRY_COUNT), 0);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_RNR_RETRY_COUNT), 0);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_SRQ), 0);
	/* The rest as for RC. */
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_INITIATOR_DEPTH), 4);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_LOCAL_QPN), 0x1001);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_STARTING_PSN), 0x123456);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT), 20);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_MAX_CM_RETRIES), 3);
	assert_int_equal(cm_msg_check(cmh_last_mad(&H, A, CM_ATTR_REQ), 256, NULL), 0);
	assert_string_equal(cm_field_value_name(&cm_req_layout, CM_REQ_TRANSPORT_SERVICE_TYPE,
						CM_TRANSPORT_EXTENDED),
			    cm_transport_name(CM_TRANSPORT_EXTENDED));

	/* The target sees an XRC REQ. */
	ev = cmh_event(&H, B, CM_EV_REQ_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->req.qp_type, CM_QPT_XRC);
	assert_int_equal(ev->req.remote_qpn, 0x1001);
}

static void test_xrc_rep_fields(void **state)
{
	const struct cm_event *ev;
	const uint8_t *rep;
	uint32_t a, b;

	(void)state;
	a = connect_xrc(0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	rep = cmh_last_mad(&H, B, CM_ATTR_REP) + CM_MSG_OFFSET;
	assert_int_equal(mad_get(rep, cm_rep_fields, CM_REP_LOCAL_QPN), 0);
	assert_int_equal(mad_get(rep, cm_rep_fields, CM_REP_LOCAL_EE_CONTEXT_NUMBER), 0x2000);
	assert_int_equal(mad_get(rep, cm_rep_fields, CM_REP_SRQ), 1);
	assert_int_equal(mad_get(rep, cm_rep_fields, CM_REP_INITIATOR_DEPTH), 0);
	assert_int_equal(mad_get(rep, cm_rep_fields, CM_REP_RESPONDER_RESOURCES), 2);
	/* The initiator takes the target's QP from the EECN. */
	ev = cmh_event(&H, A, CM_EV_REP_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->rep.remote_qpn, 0x2000);
}

/* Each end's QP attributes, as the kernel's cm_init_qp_{rtr,rts}_attr. */
static void test_xrc_qp_attr(void **state)
{
	struct ibv_qp_attr at;
	int mask;
	uint32_t a, b;

	(void)state;
	a = connect_xrc(0x1001);
	b = cmh_passive_id(&H);
	/* Initiator: no responder at RTR, RC's requester at RTS. */
	assert_int_equal(cm_engine_init_qp_attr(H.n[A].e, a, IBV_QPS_RTR, &at, &mask), 0);
	assert_int_equal(mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN);
	assert_int_equal(at.dest_qp_num, 0x2000);
	assert_int_equal(cm_engine_init_qp_attr(H.n[A].e, a, IBV_QPS_RTS, &at, &mask), 0);
	assert_int_equal(mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	assert_int_equal(at.retry_cnt, 7);
	assert_int_equal(at.rnr_retry, 5); /* the REP's */
	/* Target: RC's responder at RTR, only the ACK timeout at RTS. */
	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, b, IBV_QPS_RTR, &at, &mask), 0);
	assert_int_equal(mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	assert_int_equal(at.dest_qp_num, 0x1001);
	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, b, IBV_QPS_RTS, &at, &mask), 0);
	assert_int_equal(mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT);
	assert_int_equal(at.sq_psn, 0x123456);
}

/* Type 3 with another extended type is no transport the CM knows. */
static void test_xrc_other_extended_rejected(void **state)
{
	uint8_t req[256];
	const uint8_t *rej;

	(void)state;
	H.dead[B] = true;
	connect_xrc(0x1001);
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	mad_set(req + CM_MSG_OFFSET, cm_req_fields, CM_REQ_EXTENDED_TRANSPORT_TYPE, 2);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	rej = cmh_last_mad(&H, B, CM_ATTR_REJ);
	assert_non_null(rej);
	assert_int_equal(mad_get(rej + CM_MSG_OFFSET, cm_rej_fields, CM_REJ_REASON),
			 CM_REJ_INVALID_TRANSPORT_TYPE);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
}

/* RD (2) is still refused by connect; XRC (3) is taken. */
static void test_xrc_connect_types(void **state)
{
	struct cm_connect_cmd cmd;
	uint32_t id = 0;

	(void)state;
	cmh_connect_cmd(&H, &cmd, 0x1001);
	cmd.qp_type = CM_TRANSPORT_RD;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), -EINVAL);
	cmd.qp_type = CM_QPT_XRC;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, cmh_setup, cmh_teardown)
int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_xrc_req_fields),    T(test_xrc_rep_fields),
	    T(test_xrc_qp_attr),       T(test_xrc_other_extended_rejected),
	    T(test_xrc_connect_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
