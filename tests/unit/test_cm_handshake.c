/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM engine, connection establishment: both sides of the REQ/REP/RTU
 * handshake, losses and retries, MRA, timeouts, REJ in each state it may
 * arrive, duplicate and stale REQs, QP attributes.
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

/* B accepts connection b with its QP qpn (responder resources 7), and the MADs are delivered. */
static void accept_on_b(uint32_t b, uint32_t qpn)
{
	struct cm_accept_cmd acc;

	cmh_accept_cmd(&acc, qpn);
	assert_int_equal(cm_engine_accept(H.n[B].e, b, 7, &acc), 0);
	cmh_deliver(&H);
}

/*
 * The next connection's memory is made ahead where nothing waits: the
 * active side's once its REQ is out, the passive side's once the RTU came
 * in; the next connection on each side is made in it.
 */
static void test_spare_connection(void **state)
{
	struct cm_conn *sa, *sb;
	uint32_t a, b;

	(void)state;
	assert_null(H.n[A].e->spare);
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	sa = H.n[A].e->spare;
	sb = H.n[B].e->spare;
	assert_non_null(sa);
	assert_non_null(sb);
	assert_ptr_not_equal(cm_ids_by_local(H.n[A].e, a), sa);
	a = cmh_connect(&H, 0x1002);
	b = cmh_passive_id(&H);
	assert_ptr_equal(cm_ids_by_local(H.n[A].e, a), sa);
	assert_ptr_equal(cm_ids_by_local(H.n[B].e, b), sb);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	/* Made again for the next ones. */
	assert_non_null(H.n[A].e->spare);
	assert_non_null(H.n[B].e->spare);
}

/* The whole handshake, and what each side learnt. */
static void test_handshake(void **state)
{
	const struct cm_event *ev;
	const uint8_t *req;
	uint32_t a, b;

	(void)state;
	a = cmh_connect(&H, 0x1001);
	assert_int_not_equal(a, 0);
	b = cmh_passive_id(&H);
	assert_int_not_equal(b, 0);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);

	/* Passive: REQ_RCVD with the REQ's contents, paths seen from B. */
	ev = cmh_event(&H, B, CM_EV_REQ_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->listen_id, 0);
	assert_int_equal(ev->user, 0x5e4);
	assert_int_equal(ev->req.service_id, 0x0000000001060000ull + 7471);
	assert_int_equal(ev->req.remote_qpn, 0x1001);
	assert_int_equal(ev->req.starting_psn, 0x123456);
	assert_int_equal(ev->req.remote_comm_id, a);
	assert_int_equal(ev->req.remote_ca_guid, H.n[A].guid);
	assert_int_equal(ev->req.primary.slid, 2);
	assert_int_equal(ev->req.primary.dlid, 1);
	assert_int_equal(ev->req.primary.sgid[15], 2);
	assert_int_equal(ev->req.primary.dgid[15], 1);
	assert_int_equal(ev->req.primary.mtu, IBV_MTU_2048);
	assert_int_equal(ev->req.primary.pkey, 0xffff);
	assert_int_equal(ev->req.max_cm_retries, 3);
	assert_false(ev->req.has_alternate);
	assert_memory_equal(ev->private_data, "ping", 4);
	assert_int_equal(ev->private_data_len, CM_REQ_PRIVATE_DATA_SIZE);

	/* Active: REP_RCVD; passive: RTU_RCVD. */
	ev = cmh_event(&H, A, CM_EV_REP_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->id, a);
	assert_int_equal(ev->user, 0xabc);
	assert_int_equal(ev->rep.remote_qpn, 0x2000);
	assert_int_equal(ev->rep.starting_psn, 0x654321);
	assert_int_equal(ev->rep.remote_comm_id, b);
	assert_memory_equal(ev->private_data, "pong", 4);
	ev = cmh_event(&H, B, CM_EV_RTU_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->id, b);

	/* The REQ on the wire carries what connect was given. */
	req = cmh_last_mad(&H, A, CM_ATTR_REQ) + CM_MSG_OFFSET;
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_SERVICE_ID), 0x1060000ull + 7471);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_LOCAL_QPN), 0x1001);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_STARTING_PSN), 0x123456);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_LID), 1);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_LID), 2);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_PARTITION_KEY), 0xffff);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU), 4);
	assert_int_equal(mad_get(req, cm_req_fields, CM_REQ_LOCAL_CA_GUID), H.n[A].guid);
	assert_int_equal(cm_msg_check(cmh_last_mad(&H, A, CM_ATTR_REQ), 256, NULL), 0);
	assert_int_equal(cm_msg_check(cmh_last_mad(&H, B, CM_ATTR_REP), 256, NULL), 0);
	assert_int_equal(cm_msg_check(cmh_last_mad(&H, A, CM_ATTR_RTU), 256, NULL), 0);

	assert_int_equal(cmh_stats(A).sent[CM_STAT_REQ], 1);
	assert_int_equal(cmh_stats(A).rcvd[CM_STAT_REP], 1);
	assert_int_equal(cmh_stats(A).sent[CM_STAT_RTU], 1);
	assert_int_equal(cmh_stats(B).sent[CM_STAT_REP], 1);
	assert_int_equal(cmh_stats(B).conns_live, 1);

	/* Nothing left armed but nothing fires either: no retransmissions. */
	cmh_advance(&H, 100 * SEC);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_REQ), 1);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REP), 1);
}

static void test_qp_attr(void **state)
{
	struct ibv_qp_attr at;
	uint32_t a, b;
	int mask;

	(void)state;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cm_engine_init_qp_attr(H.n[A].e, a, IBV_QPS_INIT, &at, &mask), 0);
	assert_true(mask & IBV_QP_ACCESS_FLAGS);
	assert_int_equal(at.port_num, 1);
	assert_int_equal(cm_engine_init_qp_attr(H.n[A].e, a, IBV_QPS_RTR, &at, &mask), 0);
	assert_int_equal(mask & (IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU),
			 IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU);
	assert_int_equal(at.dest_qp_num, 0x2000);
	/* A starting PSN is what its sender's receive queue expects (kernel cm.c). */
	assert_int_equal(at.rq_psn, 0x123456);
	assert_int_equal(at.path_mtu, IBV_MTU_2048);
	assert_int_equal(at.ah_attr.dlid, 2);
	assert_int_equal(at.max_dest_rd_atomic, 2); /* B's initiator depth */
	assert_int_equal(cm_engine_init_qp_attr(H.n[A].e, a, IBV_QPS_RTS, &at, &mask), 0);
	assert_int_equal(at.sq_psn, 0x654321);
	assert_int_equal(at.max_rd_atomic, 2); /* B's responder resources */
	assert_int_equal(at.retry_cnt, 7);
	assert_int_equal(at.rnr_retry, 5); /* from the REP */
	assert_true(at.timeout >= 15);

	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, b, IBV_QPS_RTR, &at, &mask), 0);
	assert_int_equal(at.dest_qp_num, 0x1001);
	assert_int_equal(at.rq_psn, 0x654321);
	assert_int_equal(at.ah_attr.dlid, 1);
	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, b, IBV_QPS_RTS, &at, &mask), 0);
	assert_int_equal(at.sq_psn, 0x123456);
	assert_int_equal(at.rnr_retry, 6); /* from the REQ */
	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, b, IBV_QPS_SQD, &at, &mask), -EINVAL);
	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, 12345, IBV_QPS_RTS, &at, &mask), -ENOENT);
}

static int qp_attr_rc(int node, uint32_t id, enum ibv_qp_state target)
{
	struct ibv_qp_attr at;
	int mask;

	return cm_engine_init_qp_attr(H.n[node].e, id, target, &at, &mask);
}

/*
 * The states each QP transition is allowed in, as the kernel's
 * cm_init_qp_*_attr: the passive side may go to RTS before it accepts
 * (rdma_accept does, then sends the REP), with the REQ's PSN as send PSN.
 */
static void test_qp_attr_states(void **state)
{
	struct ibv_qp_attr at;
	uint32_t a, b;
	int mask;

	(void)state;
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	/* Active side, REQ sent: INIT only, the peer's QPN is unknown. */
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REQ_SENT);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_INIT), 0);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_RTR), -EINVAL);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_RTS), -EINVAL);
	/* Passive side, REQ received: INIT, RTR and RTS. */
	assert_int_equal(cmh_state(&H, B, b), CM_ST_REQ_RCVD);
	assert_int_equal(qp_attr_rc(B, b, IBV_QPS_INIT), 0);
	assert_int_equal(qp_attr_rc(B, b, IBV_QPS_RTR), 0);
	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, b, IBV_QPS_RTS, &at, &mask), 0);
	assert_int_equal(at.sq_psn, 0x123456);
	assert_int_equal(at.retry_cnt, 7);
	assert_int_equal(at.rnr_retry, 6);
	assert_true(mask & IBV_QP_SQ_PSN);
	/* MRA sent for the REQ: still all three; MRA received: INIT only. */
	assert_int_equal(cm_engine_mra(H.n[B].e, b, 20, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_MRA_REQ_SENT);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_MRA_REQ_RCVD);
	assert_int_equal(qp_attr_rc(B, b, IBV_QPS_RTS), 0);
	assert_int_equal(qp_attr_rc(B, b, IBV_QPS_RTR), 0);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_INIT), 0);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_RTS), -EINVAL);
	accept_on_b(b, 0x2000);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_RTS), 0);
	/* Disconnecting, TimeWait: nothing. */
	assert_int_equal(cm_engine_disconnect(H.n[A].e, a, NULL, 0), 0);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_DREQ_SENT);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_INIT), -EINVAL);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_RTS), -EINVAL);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_INIT), -EINVAL);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_RTR), -EINVAL);
	assert_int_equal(qp_attr_rc(A, a, IBV_QPS_RTS), -EINVAL);
	/* Targets other than INIT/RTR/RTS, bad arguments. */
	assert_int_equal(qp_attr_rc(B, b, IBV_QPS_RESET), -EINVAL);
	assert_int_equal(qp_attr_rc(B, b, IBV_QPS_ERR), -EINVAL);
	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, b, IBV_QPS_RTS, NULL, &mask), -EINVAL);
}

static void test_req_lost(void **state)
{
	uint32_t a;

	(void)state;
	H.drop[A][CM_ATTR_REQ - 0x10] = 1;
	a = cmh_connect(&H, 0x1001);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REQ_SENT);
	assert_int_equal(H.n[B].nev, 0);
	cmh_advance(&H, 5 * SEC); /* 2 * 67 ms + 4.3 s */
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_REQ), 2);
	assert_int_equal(cmh_stats(A).retried[CM_STAT_REQ], 1);
}

static void test_rep_lost(void **state)
{
	uint32_t a;

	(void)state;
	H.drop[B][CM_ATTR_REP - 0x10] = 1;
	a = cmh_connect(&H, 0x1001);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REQ_SENT);
	assert_int_equal(cmh_state(&H, B, cmh_passive_id(&H)), CM_ST_REP_SENT);
	cmh_advance(&H, 5 * SEC);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_state(&H, B, cmh_passive_id(&H)), CM_ST_ESTABLISHED);
	/* One connection on B whatever was retransmitted. */
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), 1);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 1);
}

/* RTU lost: passive gets there by "communication established". */
static void test_rtu_lost_establish(void **state)
{
	uint32_t a, b;

	(void)state;
	H.drop[A][CM_ATTR_RTU - 0x10] = 1;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_REP_SENT);
	assert_int_equal(cm_engine_establish(H.n[B].e, b), 0);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	assert_non_null(cmh_event(&H, B, CM_EV_USER_ESTABLISHED));
	assert_int_equal(cm_engine_establish(H.n[B].e, b), -EINVAL);
	cmh_advance(&H, 60 * SEC);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REP), 1); /* REP timer stopped */
	assert_null(cmh_event(&H, B, CM_EV_REP_ERROR));
}

/* RTU lost: the REP is retransmitted and the active side answers RTU again. */
static void test_rtu_lost_rep_retry(void **state)
{
	uint32_t b;

	(void)state;
	H.drop[A][CM_ATTR_RTU - 0x10] = 1;
	cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	cmh_advance(&H, 5 * SEC);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_RTU), 2);
	assert_int_equal(cmh_stats(A).duplicates[CM_STAT_REP], 1);
}

/*
 * An established connection holds no message buffer (a held connection's
 * memory, docs/storms.md), and still answers a duplicate REP with an RTU
 * built from its fields; its DREQ gets a buffer again for its retries.
 */
static void test_established_holds_no_msg(void **state)
{
	uint32_t a, b;

	(void)state;
	H.drop[A][CM_ATTR_RTU - 0x10] = 1;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_null(cm_ids_by_local(H.n[A].e, a)->msg);
	assert_non_null(cm_ids_by_local(H.n[B].e, b)->msg); /* REP_SENT: the REP kept */
	cmh_advance(&H, 5 * SEC);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_RTU), 2);
	assert_null(cm_ids_by_local(H.n[A].e, a)->msg);
	assert_null(cm_ids_by_local(H.n[B].e, b)->msg);
	H.drop[A][CM_ATTR_DREQ - 0x10] = 1; /* the first DREQ lost: retried */
	assert_int_equal(cm_engine_disconnect(H.n[A].e, a, NULL, 0), 0);
	assert_non_null(cm_ids_by_local(H.n[A].e, a)->msg);
	cmh_advance(&H, 5 * SEC);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_DREQ), 2);
	assert_non_null(cmh_event(&H, A, CM_EV_DREP_RCVD));
	assert_null(cm_ids_by_local(H.n[A].e, a)->msg); /* TimeWait */
}

static void test_mra_extends_timeout(void **state)
{
	const struct cm_event *ev;
	uint32_t a, b;

	(void)state;
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_REQ_RCVD);
	assert_int_equal(cm_engine_mra(H.n[B].e, b, 24, "wait", 4), 0); /* 68.7 s */
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_MRA_REQ_SENT);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_MRA_REQ_RCVD);
	ev = cmh_event(&H, A, CM_EV_MRA_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->mra.service_timeout, 24);
	assert_int_equal(ev->mra.msg_mraed, CM_MSG_REF_REQ);
	/* The REQ's own timeout (4.4 s) passes without a retransmission. */
	cmh_advance(&H, 10 * SEC);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_REQ), 1);
	/* After the service timeout, the REQ is sent again and B answers MRA again. */
	cmh_advance(&H, 60 * SEC);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_REQ), 2);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_MRA), 2);
	accept_on_b(b, 0x2000);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
}

/* MRA for the REP, from the active side. */
static void test_mra_rep(void **state)
{
	uint32_t a, b;

	(void)state;
	H.n[A].auto_rtu = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REP_RCVD);
	assert_int_equal(cm_engine_mra(H.n[A].e, a, 23, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_MRA_REP_SENT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_MRA_REP_RCVD);
	cmh_advance(&H, 10 * SEC);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REP), 1);
	assert_int_equal(cm_engine_rtu(H.n[A].e, a, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
}

static void test_req_timeout(void **state)
{
	const struct cm_event *ev;
	const uint8_t *rej;
	uint32_t a;

	(void)state;
	H.dead[B] = true;
	a = cmh_connect(&H, 0x1001);
	cmh_run_timers(&H, SEC, 100 * SEC);
	ev = cmh_event(&H, A, CM_EV_REQ_ERROR);
	assert_non_null(ev);
	assert_int_equal(ev->id, a);
	assert_int_equal(ev->status, -ETIMEDOUT);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_REQ), 1 + 3);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_IDLE);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	rej = cmh_last_mad(&H, A, CM_ATTR_REJ);
	assert_non_null(rej);
	assert_int_equal(mad_get(rej + 24, cm_rej_fields, CM_REJ_REASON), CM_REJ_TIMEOUT);
	assert_int_equal(cmh_stats(A).timeouts, 1);
}

static void test_rep_timeout(void **state)
{
	uint32_t b;

	(void)state;
	H.drop[A][CM_ATTR_RTU - 0x10] = 1;
	cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	H.dead[A] = true; /* the active side vanishes after its lost RTU */
	cmh_run_timers(&H, SEC, 100 * SEC);
	assert_non_null(cmh_event(&H, B, CM_EV_REP_ERROR));
	assert_int_equal(cmh_state(&H, B, b), CM_ST_IDLE);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
}

static void test_invalid_service(void **state)
{
	struct cm_connect_cmd cmd;
	const struct cm_event *ev;
	uint32_t a;

	(void)state;
	cmh_connect_cmd(&H, &cmd, 0x1001);
	cmd.service_id = 0x1234;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &a), 0);
	cmh_deliver(&H);
	ev = cmh_event(&H, A, CM_EV_REJ_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->rej.reason, CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_IDLE);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
}

/* A connect from A to B's service ID 0x1234, which B's port space holds. */
static uint32_t held_connect(uint32_t qpn)
{
	struct cm_connect_cmd cmd;
	uint32_t a;

	H.bound_sid[B] = 0x1234;
	cmh_connect_cmd(&H, &cmd, qpn);
	cmd.service_id = 0x1234;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &a), 0);
	cmh_deliver(&H);
	return a;
}

/*
 * A REQ for a bound port no one listens on yet waits for the listen
 * (cm/held.c): taken by it when it comes, its retransmission dropped.
 */
static void test_held_req_listen(void **state)
{
	uint8_t req[256];
	uint32_t a;

	(void)state;
	a = held_connect(0x1001);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 0);
	assert_int_equal(H.n[B].nev, 0);
	assert_int_equal(cmh_stats(B).held, 1);
	/* The same REQ again (a retransmission): one is held. */
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	assert_int_equal(cmh_stats(B).held, 1);
	assert_int_equal(cmh_stats(B).duplicates[CM_STAT_REQ], 1);
	cmh_advance(&H, SEC / 2);
	assert_int_equal(H.n[B].nev, 0);
	assert_true(cm_engine_listen(H.n[B].e, 0x1234, ~0ull, 7) >= 0);
	cmh_advance(&H, 0);
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), 1);
	assert_non_null(cmh_event(&H, A, CM_EV_REP_RCVD));
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 0);
}

/* ... and REJected "invalid service ID" when no listen comes in time. */
static void test_held_req_expires(void **state)
{
	struct cm_connect_cmd cmd;
	const struct cm_event *ev;
	uint32_t a;

	(void)state;
	a = held_connect(0x1001);
	assert_null(cmh_event(&H, A, CM_EV_REJ_RCVD));
	cmh_advance(&H, SEC / 2);
	assert_null(cmh_event(&H, A, CM_EV_REJ_RCVD));
	cmh_advance(&H, SEC / 2);
	ev = cmh_event(&H, A, CM_EV_REJ_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->rej.reason, CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 1);
	assert_int_equal(H.n[B].nev, 0);
	/* An unbound port's REQ is answered at once, as before. */
	H.bound_sid[B] = 0;
	cmh_connect_cmd(&H, &cmd, 0x1002);
	cmd.service_id = 0x1234;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &a), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 2);
	assert_int_equal(cmh_stats(B).held, 1);
}

/* At most CM_HELD_MAX wait; the next is answered at once. */
static void test_held_req_bounded(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < 33; i++)
		held_connect(0x1001 + i);
	assert_int_equal(cmh_stats(B).held, 32);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 1);
	cmh_advance(&H, SEC);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 33);
	assert_int_equal(cmh_count(&H, A, CM_EV_REJ_RCVD), 33);
}

/* A REQ the passive side cannot honour is rejected with the reason why. */
static void test_req_semantic_rej(void **state)
{
	uint8_t req[256];
	const uint8_t *rej;

	(void)state;
	H.dead[B] = true;
	cmh_connect(&H, 0x1001);
	assert_non_null(cmh_last_mad(&H, A, CM_ATTR_REQ));
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	mad_set(req + 24, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU, 7);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	rej = cmh_last_mad(&H, B, CM_ATTR_REJ);
	assert_int_equal(mad_get(rej + 24, cm_rej_fields, CM_REJ_REASON), CM_REJ_INVALID_MTU);
	mad_set(req + 24, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU, 4);
	mad_set(req + 24, cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE, CM_TRANSPORT_RD);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	rej = cmh_last_mad(&H, B, CM_ATTR_REJ);
	assert_int_equal(mad_get(rej + 24, cm_rej_fields, CM_REJ_REASON),
			 CM_REJ_INVALID_TRANSPORT_TYPE);
	mad_set(req + 24, cm_req_fields, CM_REQ_LOCAL_COMM_ID, 0);
	assert_int_equal(cmh_inject(&H, B, req), -EBADMSG);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
	assert_int_equal(H.n[B].nev, 0);
}

/* REJ from the passive user: in REQ_RCVD, in MRA_REQ_SENT, and after REP. */
static void test_rej_req_sent(void **state)
{
	struct cm_reject_cmd rej = {.reason = CM_REJ_CONSUMER_DEFINED, .private_data_len = 2};
	const struct cm_event *ev;
	uint32_t a, b;

	(void)state;
	H.n[B].auto_accept = false;
	memcpy(rej.private_data, "no", 2);
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cm_engine_reject(H.n[B].e, b, &rej), 0);
	cmh_deliver(&H);
	ev = cmh_event(&H, A, CM_EV_REJ_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->rej.reason, CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(ev->rej.msg_rejected, CM_MSG_REF_REQ);
	assert_memory_equal(ev->private_data, "no", 2);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_IDLE);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_IDLE);
	assert_int_equal(cm_engine_reject(H.n[B].e, b, &rej), -ENOENT);
}

static void test_rej_mra_req_rcvd(void **state)
{
	struct cm_reject_cmd rej = {.reason = CM_REJ_CONSUMER_DEFINED};
	uint32_t a, b;

	(void)state;
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	cm_engine_mra(H.n[B].e, b, 20, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_MRA_REQ_RCVD);
	assert_int_equal(cm_engine_reject(H.n[B].e, b, &rej), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_IDLE);
	assert_non_null(cmh_event(&H, A, CM_EV_REJ_RCVD));
}

/*
 * A REQ whose delayed MRA was armed when it was delivered (rdma_cm's) can
 * still be dropped without a REJ (a listener's full backlog): nothing
 * goes out, the peer retries.
 */
static void test_drop_after_delayed_mra(void **state)
{
	uint32_t a, b;

	(void)state;
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cm_engine_mra(H.n[B].e, b, CM_MRA_FLAG_DELAY | 24, NULL, 0), 0);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_MRA_REQ_SENT);
	assert_int_equal(cm_engine_drop(H.n[B].e, b), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_MRA), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 0);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REQ_SENT);
	assert_int_equal(cm_engine_drop(H.n[B].e, b), -ENOENT);
}

/* REJ of the REP by the active user: passive REP_SENT -> IDLE. */
static void test_rej_rep_sent(void **state)
{
	struct cm_reject_cmd rej = {.reason = CM_REJ_CONSUMER_DEFINED};
	const struct cm_event *ev;
	uint32_t a, b;

	(void)state;
	H.n[A].auto_rtu = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REP_RCVD);
	assert_int_equal(cm_engine_reject(H.n[A].e, a, &rej), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_IDLE);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_IDLE);
	ev = cmh_event(&H, B, CM_EV_REJ_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->rej.msg_rejected, CM_MSG_REF_REP);
}

/* REJ from the passive side after its REP: active REP_RCVD -> TIMEWAIT. */
static void test_rej_rep_rcvd(void **state)
{
	struct cm_reject_cmd rej = {.reason = CM_REJ_CONSUMER_DEFINED};
	uint32_t a, b;

	(void)state;
	H.n[A].auto_rtu = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cm_engine_reject(H.n[B].e, b, &rej), 0);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_non_null(cmh_event(&H, A, CM_EV_REJ_RCVD));
}

/* A REJ arriving in ESTABLISHED (peer gave up) leads to TimeWait. */
static void test_rej_established(void **state)
{
	uint8_t mad[256];
	uint8_t *m;
	uint32_t a, b;

	(void)state;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	m = cmh_mad(mad, CM_ATTR_REJ, b, a);
	mad_set(m, cm_rej_fields, CM_REJ_REASON, CM_REJ_TIMEOUT);
	assert_int_equal(cmh_inject(&H, A, mad), 0);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	/* A REJ whose LocalCommID does not match is not for the connection. */
	m = cmh_mad(mad, CM_ATTR_REJ, b + 1, b);
	mad_set(m, cm_rej_fields, CM_REJ_REASON, CM_REJ_TIMEOUT);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
}

/* Inject a REJ from the other node into node `to` for connection (theirs -> mine). */
static void inject_rej(int to, uint32_t theirs, uint32_t mine)
{
	uint8_t mad[256];

	mad_set(cmh_mad(mad, CM_ATTR_REJ, theirs, mine), cm_rej_fields, CM_REJ_REASON,
		CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(cmh_inject(&H, to, mad), 0);
}

/*
 * REJ arriving in every remaining state where it may arrive (kernel
 * cm_rej_handler): before the REP it frees the connection, after it
 * TimeWait; where the spec has no REJ (DREQ_RCVD, TimeWait) it is ignored.
 */
static void test_rej_each_state(void **state)
{
	uint32_t a, b;

	(void)state;
	/* passive REQ_RCVD and MRA_REQ_SENT: the active side gave up */
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	inject_rej(B, a, b);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_IDLE);
	assert_int_equal(cmh_event(&H, B, CM_EV_REJ_RCVD)->id, b);
	a = cmh_connect(&H, 0x1002);
	b = cmh_passive_id(&H);
	cm_engine_mra(H.n[B].e, b, 20, NULL, 0);
	inject_rej(B, a, b);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_IDLE);

	/* active MRA_REP_SENT -> TimeWait; passive MRA_REP_RCVD -> IDLE */
	H.n[B].auto_accept = true;
	H.n[A].auto_rtu = false;
	a = cmh_connect(&H, 0x1003);
	b = cmh_passive_id(&H);
	cm_engine_mra(H.n[A].e, a, 20, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_MRA_REP_RCVD);
	inject_rej(A, b, a);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	inject_rej(B, a, b);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_IDLE);

	/* DREQ_SENT -> TimeWait; DREQ_RCVD ignores it */
	H.n[A].auto_rtu = true;
	H.n[B].auto_drep = false;
	a = cmh_connect(&H, 0x1004);
	b = cmh_passive_id(&H);
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_DREQ_RCVD);
	inject_rej(B, a, b);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_DREQ_RCVD);
	inject_rej(A, b, a);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	/* TimeWait ignores it */
	inject_rej(A, b, a);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
}

/* REJ "stale connection" in REQ_SENT: TimeWait, not IDLE. */
static void test_rej_stale_req_sent(void **state)
{
	uint8_t mad[256];
	uint8_t *m;
	uint32_t a;

	(void)state;
	H.dead[B] = true;
	a = cmh_connect(&H, 0x1001);
	m = cmh_mad(mad, CM_ATTR_REJ, 0, a);
	mad_set(m, cm_rej_fields, CM_REJ_REASON, CM_REJ_STALE_CONN);
	assert_int_equal(cmh_inject(&H, A, mad), 0);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_true(cm_engine_qpn_in_timewait(H.n[A].e, 0x1001));
}

/*
 * A's REJ "timeout" reached B: B's connection `b` is gone and B's user
 * hears REJ_RCVD with A's CA GUID as ARI (kernel IB_CM_REJ_RECEIVED).
 */
static void assert_timeout_rej_rcvd(uint32_t b)
{
	const struct cm_event *ev = cmh_event(&H, B, CM_EV_REJ_RCVD);
	uint8_t guid[8];

	for (int i = 0; i < 8; i++)
		guid[i] = (uint8_t)(H.n[A].guid >> (56 - 8 * i));
	assert_non_null(ev);
	assert_int_equal(ev->id, b);
	assert_int_equal(ev->rej.reason, CM_REJ_TIMEOUT);
	assert_int_equal(ev->rej.ari_len, 8);
	assert_memory_equal(ev->rej.ari, guid, 8);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_IDLE);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
	assert_int_equal(cmh_count(&H, B, CM_EV_REP_ERROR), 0);
}

/* The REJ A sent last: reason "timeout", A's GUID in the ARI, `remote` as RemoteCommID. */
static void assert_timeout_rej_sent(uint32_t a, uint32_t remote)
{
	const uint8_t *rej = cmh_last_mad(&H, A, CM_ATTR_REJ);
	const uint8_t *m;
	uint64_t guid = 0;

	assert_non_null(rej);
	m = rej + CM_MSG_OFFSET;
	assert_int_equal(mad_get(m, cm_rej_fields, CM_REJ_REASON), CM_REJ_TIMEOUT);
	assert_int_equal(mad_get(m, cm_rej_fields, CM_REJ_LOCAL_COMM_ID), a);
	assert_int_equal(mad_get(m, cm_rej_fields, CM_REJ_REMOTE_COMM_ID), remote);
	assert_int_equal(mad_get(m, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH), 8);
	for (int i = 0; i < 8; i++)
		guid = guid << 8 | m[cm_rej_fields[CM_REJ_ARI].byte + i];
	assert_true(guid == H.n[A].guid);
}

/*
 * A's REQ runs out of retries while B, which got it, is in REQ_RCVD (its
 * user has not answered), MRA_REQ_SENT (its MRAs are lost) or REP_SENT
 * (its REPs are lost).  A never learnt B's comm ID, so its REJ "timeout"
 * has RemoteCommID 0; B finds the connection by (A's comm ID, A's GUID in
 * the ARI) and drops it at once instead of waiting for its own REP
 * retries (kernel cm_acquire_rejected_id).
 */
static void test_req_timeout_passive_rej(void **state)
{
	struct cm_connect_cmd cmd;
	uint32_t a, b;

	(void)state;
	/* REQ_RCVD */
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_REQ_RCVD);
	cmh_run_timers(&H, SEC, 100 * SEC);
	assert_non_null(cmh_event(&H, A, CM_EV_REQ_ERROR));
	assert_timeout_rej_sent(a, 0);
	assert_timeout_rej_rcvd(b);

	/* MRA_REQ_SENT, every MRA lost */
	H.drop[B][CM_ATTR_MRA - 0x10] = 100;
	a = cmh_connect(&H, 0x1002);
	b = cmh_passive_id(&H);
	assert_int_equal(cm_engine_mra(H.n[B].e, b, 20, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REQ_SENT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_MRA_REQ_SENT);
	cmh_run_timers(&H, SEC, 100 * SEC);
	assert_true(cmh_sent(&H, B, CM_ATTR_MRA) >= 4); /* resent for each REQ */
	assert_timeout_rej_sent(a, 0);
	assert_timeout_rej_rcvd(b);

	/*
	 * MRA_REQ_SENT, first MRA delivered, the later ones lost: A knows B's
	 * comm ID now and its REJ names it (kernel cm_format_rej).
	 */
	H.drop[B][CM_ATTR_MRA - 0x10] = 0;
	a = cmh_connect(&H, 0x1003);
	b = cmh_passive_id(&H);
	assert_int_equal(cm_engine_mra(H.n[B].e, b, 20, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_MRA_REQ_RCVD);
	H.drop[B][CM_ATTR_MRA - 0x10] = 100;
	cmh_run_timers(&H, SEC, 100 * SEC);
	assert_timeout_rej_sent(a, b);
	assert_timeout_rej_rcvd(b);

	/*
	 * REP_SENT, every REP lost.  A announces a long response time of its
	 * own (17 s), so B's REP waits longer than A's REQ and A gives up first.
	 */
	H.drop[B][CM_ATTR_MRA - 0x10] = 0;
	H.drop[B][CM_ATTR_REP - 0x10] = 100;
	cmh_connect_cmd(&H, &cmd, 0x1004);
	cmd.local_cm_response_timeout = 22;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &a), 0);
	cmh_deliver(&H);
	b = cmh_passive_id(&H);
	accept_on_b(b, 0x2004);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REQ_SENT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_REP_SENT);
	cmh_run_timers(&H, SEC, 200 * SEC);
	assert_non_null(cmh_event(&H, A, CM_EV_REQ_ERROR));
	assert_timeout_rej_sent(a, 0);
	assert_timeout_rej_rcvd(b);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 0); /* B never timed out */
}

/* The active user releases its id in REQ_SENT: same REJ "timeout", same effect. */
static void test_release_req_sent_passive_rej(void **state)
{
	uint32_t a, b;

	(void)state;
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cm_engine_release(H.n[A].e, a), 0);
	cmh_deliver(&H);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	assert_int_equal(H.n[A].nev, 0); /* released: no more events */
	assert_timeout_rej_sent(a, 0);
	assert_timeout_rej_rcvd(b);

	/* REP_SENT, REP lost */
	H.n[B].auto_accept = true;
	H.drop[B][CM_ATTR_REP - 0x10] = 100;
	a = cmh_connect(&H, 0x1002);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_REP_SENT);
	assert_int_equal(cm_engine_release(H.n[A].e, a), 0);
	cmh_deliver(&H);
	assert_timeout_rej_sent(a, 0);
	assert_timeout_rej_rcvd(b);
}

/* Build, in `mad`, REJ "timeout" from comm ID `theirs` without RemoteCommID. */
static void timeout_rej(uint8_t *mad, uint32_t theirs, uint64_t guid, uint8_t ari_len)
{
	uint8_t *m = cmh_mad(mad, CM_ATTR_REJ, theirs, 0);

	mad_set(m, cm_rej_fields, CM_REJ_REASON, CM_REJ_TIMEOUT);
	mad_set(m, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH, ari_len);
	for (int i = 0; i < 8; i++)
		m[cm_rej_fields[CM_REJ_ARI].byte + i] = (uint8_t)(guid >> (56 - 8 * i));
}

/*
 * A REJ without RemoteCommID matches only by (LocalCommID, ARI GUID), only
 * for reason "timeout", only a passive connection: anything else is
 * dropped and counted, and the connection lives on.
 */
static void test_rej_timeout_no_match(void **state)
{
	uint8_t mad[256];
	uint64_t dropped;
	uint32_t a, b;

	(void)state;
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	dropped = cmh_stats(B).dropped[CM_STAT_REJ];
	/* wrong CA GUID */
	timeout_rej(mad, a, H.n[A].guid ^ 1, 8);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	assert_int_equal(cmh_stats(B).dropped[CM_STAT_REJ], dropped + 1);
	/* right GUID bytes, but the ARI says it holds none */
	timeout_rej(mad, a, H.n[A].guid, 0);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	/* wrong comm ID */
	timeout_rej(mad, a + 1, H.n[A].guid, 8);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	/* another reason: no lookup by GUID (kernel) */
	timeout_rej(mad, a, H.n[A].guid, 8);
	mad_set(mad + CM_MSG_OFFSET, cm_rej_fields, CM_REJ_REASON, CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	assert_int_equal(cmh_stats(B).dropped[CM_STAT_REJ], dropped + 4);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_REQ_RCVD);
	assert_null(cmh_event(&H, B, CM_EV_REJ_RCVD));
	/* the right one */
	timeout_rej(mad, a, H.n[A].guid, 8);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	assert_timeout_rej_rcvd(b);

	/* An active connection is never named that way: A ignores it. */
	H.n[B].auto_accept = true;
	a = cmh_connect(&H, 0x1002);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	dropped = cmh_stats(A).dropped[CM_STAT_REJ];
	timeout_rej(mad, b, H.n[B].guid, 8);
	assert_int_equal(cmh_inject(&H, A, mad), 0);
	assert_int_equal(cmh_stats(A).dropped[CM_STAT_REJ], dropped + 1);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
}

static void test_dup_req_before_rep(void **state)
{
	uint8_t req[256];
	uint32_t b;

	(void)state;
	H.n[B].auto_accept = false;
	cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	/* REQ_RCVD: the user has not answered; the duplicate is dropped. */
	assert_int_equal(cmh_inject(&H, B, req), 0);
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), 1);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 1);
	assert_int_equal(cmh_stats(B).dropped[CM_STAT_REQ], 1);
	/* MRA_REQ_SENT: the duplicate gets the MRA again. */
	cm_engine_mra(H.n[B].e, b, 20, NULL, 0);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_MRA), 2);
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), 1);
}

/*
 * A delayed MRA (rdma_cm's, for every REQ and REP it delivers) is sent
 * only to a duplicate, and then says what it delays and for how long:
 * the REQ on the passive side, the REP on the active side.
 */
static void test_delayed_mra_on_duplicate(void **state)
{
	uint8_t req[256], rep[256];
	const uint8_t *mra;
	uint32_t a, b;

	(void)state;
	H.n[A].auto_rtu = false;
	H.n[B].auto_accept = false;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	assert_int_equal(cm_engine_mra(H.n[B].e, b, CM_MRA_FLAG_DELAY | 24, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_MRA), 0);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_MRA), 1);
	mra = cmh_last_mad(&H, B, CM_ATTR_MRA) + CM_MSG_OFFSET;
	assert_int_equal(mad_get(mra, cm_mra_fields, CM_MRA_MESSAGE_MRAED), CM_MSG_REF_REQ);
	assert_int_equal(mad_get(mra, cm_mra_fields, CM_MRA_SERVICE_TIMEOUT), 24);
	assert_int_equal(mad_get(mra, cm_mra_fields, CM_MRA_REMOTE_COMM_ID), a);
	/* A second duplicate gets the same again. */
	assert_int_equal(cmh_inject(&H, B, req), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_MRA), 2);
	/* The accept's REP replaces it; the active side delays its own. */
	accept_on_b(b, 0x2000);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REP_RCVD);
	memcpy(rep, cmh_last_mad(&H, B, CM_ATTR_REP), 256);
	assert_int_equal(cm_engine_mra(H.n[A].e, a, CM_MRA_FLAG_DELAY | 20, NULL, 0), 0);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_MRA), 0);
	assert_int_equal(cmh_inject(&H, A, rep), 0);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_MRA), 1);
	mra = cmh_last_mad(&H, A, CM_ATTR_MRA) + CM_MSG_OFFSET;
	assert_int_equal(mad_get(mra, cm_mra_fields, CM_MRA_MESSAGE_MRAED), CM_MSG_REF_REP);
	assert_int_equal(mad_get(mra, cm_mra_fields, CM_MRA_SERVICE_TIMEOUT), 20);
	/* The RTU replaces it: a duplicate REP now gets the RTU. */
	assert_int_equal(cm_engine_rtu(H.n[A].e, a, NULL, 0), 0);
	assert_int_equal(cmh_inject(&H, A, rep), 0);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_MRA), 1);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_RTU), 2);
}

static void test_dup_req_after_rep(void **state)
{
	uint8_t req[256];
	uint32_t b;

	(void)state;
	H.drop[B][CM_ATTR_REP - 0x10] = 1;
	cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_REP_SENT);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REP), 2);
	/* Same REP, byte for byte. */
	assert_memory_equal(H.log[H.nlog - 1].mad, cmh_last_mad(&H, B, CM_ATTR_REP), 256);
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), 1);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 1);
	/* Once established, a duplicate REQ is ignored. */
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REP), 2);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 1);
}

/*
 * Stale connection: A "restarts" and sends a new REQ from the same QP
 * while B still holds the old connection.  B rejects it as stale and
 * disconnects the old one.
 */
static void test_stale_connection(void **state)
{
	const uint8_t *rej;
	uint8_t req[256];
	uint32_t a, b;

	(void)state;
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	mad_set(req + 24, cm_req_fields, CM_REQ_LOCAL_COMM_ID, a ^ 0x5a5a5a5a);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	rej = cmh_last_mad(&H, B, CM_ATTR_REJ);
	assert_non_null(rej);
	assert_int_equal(mad_get(rej + 24, cm_rej_fields, CM_REJ_REASON), CM_REJ_STALE_CONN);
	assert_int_equal(mad_get(rej + 24, cm_rej_fields, CM_REJ_REMOTE_COMM_ID), a ^ 0x5a5a5a5a);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_DREQ_SENT);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_DREQ), 1);
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), 1);
	cmh_deliver(&H);
	/* The old connection goes away on both sides through TimeWait. */
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
}

/* Messages in states where they must be ignored leave everything as is. */
static void test_ignored_in_state(void **state)
{
	uint8_t mad[256];
	uint32_t a, b;

	(void)state;
	H.dead[B] = true;
	a = cmh_connect(&H, 0x1001);
	/* RTU, DREP, APR, MRA(REP) make no sense in REQ_SENT. */
	cmh_mad(mad, CM_ATTR_RTU, 9, a);
	assert_int_equal(cmh_inject(&H, A, mad), 0);
	cmh_mad(mad, CM_ATTR_DREP, 9, a);
	assert_int_equal(cmh_inject(&H, A, mad), 0);
	cmh_mad(mad, CM_ATTR_APR, 9, a);
	assert_int_equal(cmh_inject(&H, A, mad), 0);
	mad_set(cmh_mad(mad, CM_ATTR_MRA, 9, a), cm_mra_fields, CM_MRA_MESSAGE_MRAED,
		CM_MSG_REF_REP);
	assert_int_equal(cmh_inject(&H, A, mad), 0);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_REQ_SENT);
	assert_int_equal(cmh_stats(A).dropped[CM_STAT_RTU], 1);
	assert_int_equal(cmh_stats(A).dropped[CM_STAT_DREP], 1);
	assert_int_equal(cmh_stats(A).dropped[CM_STAT_APR], 1);
	assert_int_equal(cmh_stats(A).dropped[CM_STAT_MRA], 1);
	assert_int_equal(H.n[A].nev, 0);

	/* In ESTABLISHED: a second RTU, a DREP, an APR without LAP. */
	H.dead[B] = false;
	cmh_fini(&H);
	cmh_init(&H);
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	cmh_mad(mad, CM_ATTR_RTU, a, b);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	cmh_mad(mad, CM_ATTR_DREP, a, b);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	cmh_mad(mad, CM_ATTR_APR, a, b);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_count(&H, B, CM_EV_RTU_RCVD), 1);
}

/* Comm IDs nobody has: REP gets REJ "invalid comm ID", others are dropped. */
static void test_unknown_comm_id(void **state)
{
	uint8_t mad[256];
	const uint8_t *rej;

	(void)state;
	cmh_mad(mad, CM_ATTR_RTU, 1, 0xdeadbeef);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	cmh_mad(mad, CM_ATTR_DREP, 1, 0xdeadbeef);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	cmh_mad(mad, CM_ATTR_REJ, 1, 0xdeadbeef);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	assert_int_equal(cmh_stats(B).dropped[CM_STAT_RTU], 1);
	assert_int_equal(cmh_stats(B).dropped[CM_STAT_REJ], 1);
	cmh_mad(mad, CM_ATTR_REP, 1, 0xdeadbeef);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	rej = cmh_last_mad(&H, B, CM_ATTR_REJ);
	assert_non_null(rej);
	assert_int_equal(mad_get(rej + 24, cm_rej_fields, CM_REJ_REASON), CM_REJ_INVALID_COMM_ID);
	assert_int_equal(mad_get(rej + 24, cm_rej_fields, CM_REJ_REMOTE_COMM_ID), 1);
	assert_int_equal(H.n[B].nev, 0);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
}

/*
 * A peer that sends from a QP of its own (madcm's MADCM_MAD_SEND=qp, the
 * kernel's CM never) is still answered on QP1: the connection's messages
 * and the answers to strays alike (fake_send asserts the QP and Q_Key).
 */
static void test_peer_sends_from_own_qp(void **state)
{
	uint8_t mad[256];
	uint32_t a;

	(void)state;
	H.src_qpn[A] = 0x39;
	H.src_qpn[B] = 0x25;
	a = cmh_connect(&H, 0x1001);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cm_engine_disconnect(H.n[A].e, a, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	/* Strays: a REP and a DREQ for comm IDs nobody has. */
	cmh_mad(mad, CM_ATTR_REP, 7, 0xdeadbeef);
	assert_int_equal(cmh_inject_from(&H, B, mad, 0x39), 0);
	assert_int_equal(
	    mad_get(cmh_last_mad(&H, B, CM_ATTR_REJ) + 24, cm_rej_fields, CM_REJ_REASON),
	    CM_REJ_INVALID_COMM_ID);
	cmh_mad(mad, CM_ATTR_DREQ, 8, 0xdeadbeef);
	assert_int_equal(cmh_inject_from(&H, B, mad, 0x39), 0);
	assert_non_null(cmh_last_mad(&H, B, CM_ATTR_DREP));
}

static void test_bad_input(void **state)
{
	uint8_t mad[256] = {0};
	struct mad_addr from = {.lid = 1, .qpn = 1};
	struct cm_connect_cmd cmd;
	uint32_t id;

	(void)state;
	assert_int_equal(cm_engine_recv(H.n[B].e, &from, mad, 10), -EINVAL);
	assert_int_equal(cm_engine_recv(H.n[B].e, NULL, mad, 256), -EINVAL);
	assert_true(cm_engine_recv(H.n[B].e, &from, mad, 256) < 0);
	cmh_mad(mad, CM_ATTR_REJ, 1, 2);
	mad_set(mad + 24, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH, 100);
	assert_true(cm_engine_recv(H.n[B].e, &from, mad, 256) < 0);
	/* MRA with a reserved MessageMRAed value. */
	mad_set(cmh_mad(mad, CM_ATTR_MRA, 1, 2), cm_mra_fields, CM_MRA_MESSAGE_MRAED, 3);
	assert_int_equal(cm_engine_recv(H.n[B].e, &from, mad, 256), -EBADMSG);
	assert_int_equal(H.n[B].nev, 0);

	cmh_connect_cmd(&H, &cmd, 0x1001);
	cmd.qpn = 1u << 24;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), -EINVAL);
	cmh_connect_cmd(&H, &cmd, 0x1001);
	cmd.private_data_len = CM_REQ_PRIVATE_DATA_SIZE + 1;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), -EINVAL);
	cmh_connect_cmd(&H, &cmd, 0x1001);
	cmd.primary.mtu = 9;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), -EINVAL);
	assert_int_equal(cm_engine_connect(NULL, &cmd, &id), -EINVAL);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	assert_int_equal(cm_engine_rtu(H.n[A].e, 42, NULL, 0), -ENOENT);
}

/* An alternate path in the REQ reaches the passive side, reversed. */
static void test_alternate_in_req(void **state)
{
	struct cm_connect_cmd cmd;
	const struct cm_event *ev;
	struct ibv_qp_attr at;
	uint32_t a;
	int mask;

	(void)state;
	cmh_connect_cmd(&H, &cmd, 0x1001);
	cmd.has_alternate = true;
	cmd.alternate = cmd.primary;
	cmd.alternate.slid = 11;
	cmd.alternate.dlid = 12;
	cmd.alternate.sl = 3;
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &a), 0);
	cmh_deliver(&H);
	ev = cmh_event(&H, B, CM_EV_REQ_RCVD);
	assert_true(ev->req.has_alternate);
	assert_int_equal(ev->req.alternate.slid, 12);
	assert_int_equal(ev->req.alternate.dlid, 11);
	assert_int_equal(ev->req.alternate.sl, 3);
	assert_int_equal(cm_engine_init_qp_attr(H.n[A].e, a, IBV_QPS_RTR, &at, &mask), 0);
	assert_true(mask & IBV_QP_ALT_PATH);
	assert_int_equal(at.alt_ah_attr.dlid, 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, cmh_setup, cmh_teardown)
	    T(test_handshake),
	    T(test_spare_connection),
	    T(test_qp_attr),
	    T(test_qp_attr_states),
	    T(test_req_lost),
	    T(test_rep_lost),
	    T(test_rtu_lost_establish),
	    T(test_rtu_lost_rep_retry),
	    T(test_established_holds_no_msg),
	    T(test_mra_extends_timeout),
	    T(test_mra_rep),
	    T(test_req_timeout),
	    T(test_rep_timeout),
	    T(test_invalid_service),
	    T(test_held_req_listen),
	    T(test_held_req_expires),
	    T(test_held_req_bounded),
	    T(test_req_semantic_rej),
	    T(test_rej_req_sent),
	    T(test_rej_mra_req_rcvd),
	    T(test_drop_after_delayed_mra),
	    T(test_rej_rep_sent),
	    T(test_rej_rep_rcvd),
	    T(test_rej_established),
	    T(test_rej_each_state),
	    T(test_rej_stale_req_sent),
	    T(test_req_timeout_passive_rej),
	    T(test_release_req_sent_passive_rej),
	    T(test_rej_timeout_no_match),
	    T(test_dup_req_before_rep),
	    T(test_dup_req_after_rep),
	    T(test_delayed_mra_on_duplicate),
	    T(test_stale_connection),
	    T(test_ignored_in_state),
	    T(test_unknown_comm_id),
	    T(test_peer_sends_from_own_qp),
	    T(test_bad_input),
	    T(test_alternate_in_req),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
