/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM engine: service ID resolution (SIDR) for UD, with every status, loss
 * and timeout; alternate path loading (LAP/APR) accepted, rejected,
 * MRAed, duplicated and timed out.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "tests/unit/cm_harness.h"

static void sidr_cmd(struct cm_sidr_req_cmd *c, uint64_t sid)
{
	memset(c, 0, sizeof(*c));
	c->user = 0x51d;
	c->service_id = sid;
	c->pkey = 0xffff;
	c->to.lid = 2;
	c->timeout = 18; /* 1.07 s */
	c->max_cm_retries = 2;
	c->private_data_len = 3;
	memcpy(c->private_data, "who", 3);
}

static uint32_t sidr_start(uint64_t sid)
{
	struct cm_sidr_req_cmd c;
	uint32_t id = 0;

	sidr_cmd(&c, sid);
	assert_int_equal(cm_engine_sidr_req(H.n[A].e, &c, &id), 0);
	cmh_deliver(&H);
	return id;
}

static void test_sidr_success(void **state)
{
	struct cm_sidr_rep_cmd rep = {.status = CM_SIDR_SUCCESS, .qpn = 0x77, .qkey = 0x1234};
	const struct cm_event *ev;
	uint32_t id;

	(void)state;
	id = sidr_start(0x0000000001110000ull + 9);
	ev = cmh_event(&H, B, CM_EV_SIDR_REQ_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->sidr_req.service_id, 0x0000000001110000ull + 9);
	assert_int_equal(ev->sidr_req.pkey, 0xffff);
	assert_int_equal(ev->sidr_req.request_id, id);
	assert_memory_equal(ev->private_data, "who", 3);
	assert_int_equal(cm_engine_sidr_rep(H.n[B].e, ev->id, &rep), 0);
	cmh_deliver(&H);
	ev = cmh_event(&H, A, CM_EV_SIDR_REP_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->id, id);
	assert_int_equal(ev->user, 0x51d);
	assert_int_equal(ev->sidr_rep.status, CM_SIDR_SUCCESS);
	assert_int_equal(ev->sidr_rep.qpn, 0x77);
	assert_int_equal(ev->sidr_rep.qkey, 0x1234);
	assert_int_equal(ev->sidr_rep.service_id, 0x0000000001110000ull + 9);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	/* B keeps its answer for duplicates a while, silently, then forgets it. */
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 1);
	assert_int_equal(cm_msg_check(cmh_last_mad(&H, B, CM_ATTR_SIDR_REP), 256, NULL), 0);
	cmh_run_timers(&H, SEC, 20 * SEC);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
	assert_int_equal(H.n[B].nev, 1); /* the SIDR_REQ_RCVD only */
}

/*
 * The SIDR_REP is lost: the requester's retry finds the answer kept and
 * gets it again, and B's user sees one request, not two (one UD peer, not
 * a second one as a new request would make it).
 */
static void test_sidr_rep_lost(void **state)
{
	struct cm_sidr_rep_cmd rep = {.status = CM_SIDR_SUCCESS, .qpn = 0x66, .qkey = 0x99};
	const struct cm_event *ev;

	(void)state;
	sidr_start(0x0000000001110000ull + 1);
	assert_int_equal(cmh_count(&H, B, CM_EV_SIDR_REQ_RCVD), 1);
	H.drop[B][CM_ATTR_SIDR_REP - 0x10] = 1;
	assert_int_equal(
	    cm_engine_sidr_rep(H.n[B].e, cmh_event(&H, B, CM_EV_SIDR_REQ_RCVD)->id, &rep), 0);
	cmh_deliver(&H);
	assert_null(cmh_event(&H, A, CM_EV_SIDR_REP_RCVD));
	cmh_advance(&H, 2 * SEC); /* A's retry */
	ev = cmh_event(&H, A, CM_EV_SIDR_REP_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->sidr_rep.qpn, 0x66);
	assert_int_equal(ev->sidr_rep.qkey, 0x99);
	assert_int_equal(cmh_count(&H, B, CM_EV_SIDR_REQ_RCVD), 1);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_SIDR_REP), 2);
}

/* B listens on UDP port space 0x0111 << 16 too, for these tests. */
static int setup_udp(void **state)
{
	cmh_setup(state);
	return cm_engine_listen(H.n[B].e, 0x0000000001110000ull, ~0xffffull, 0x0d) < 0;
}

static void test_sidr_each_status(void **state)
{
	(void)state;
	for (uint8_t st = CM_SIDR_UNSUPPORTED; st <= CM_SIDR_UNSUPPORTED_VERSION; st++) {
		struct cm_sidr_rep_cmd rep = {.status = st, .info_len = 2, .info = {9, 8}};
		const struct cm_event *ev;
		uint32_t id;

		id = sidr_start(0x0000000001110000ull + st);
		ev = cmh_event(&H, B, CM_EV_SIDR_REQ_RCVD);
		assert_non_null(ev); /* none when an allocation failed (make check-oom) */
		assert_int_equal(cm_engine_sidr_rep(H.n[B].e, ev->id, &rep), 0);
		cmh_deliver(&H);
		ev = cmh_event(&H, A, CM_EV_SIDR_REP_RCVD);
		assert_int_equal(ev->id, id);
		assert_int_equal(ev->sidr_rep.status, st);
		assert_int_equal(ev->sidr_rep.info_len, 2);
		assert_int_equal(ev->sidr_rep.info[1], 8);
	}
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
}

/* Nobody listens: the engine answers "service ID not supported" itself. */
static void test_sidr_unsupported(void **state)
{
	const struct cm_event *ev;

	(void)state;
	sidr_start(0x4242);
	assert_int_equal(H.n[B].nev, 0);
	ev = cmh_event(&H, A, CM_EV_SIDR_REP_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->sidr_rep.status, CM_SIDR_UNSUPPORTED);
}

/* A bound port's SIDR_REQ waits for the listen (cm/held.c), or answers late. */
static void test_sidr_held(void **state)
{
	const struct cm_event *ev;

	(void)state;
	H.bound_sid[B] = 0x4242;
	sidr_start(0x4242);
	assert_int_equal(H.n[B].nev, 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_SIDR_REP), 0);
	assert_true(cm_engine_listen(H.n[B].e, 0x4242, ~0ull, 0x42) >= 0);
	cmh_advance(&H, 0);
	assert_int_equal(cmh_count(&H, B, CM_EV_SIDR_REQ_RCVD), 1);
	assert_int_equal(cmh_stats(B).held, 1);
	/* Bound, never listened to: "unsupported", a second later. */
	H.bound_sid[B] = 0x4343;
	sidr_start(0x4343);
	assert_null(cmh_event(&H, A, CM_EV_SIDR_REP_RCVD));
	cmh_advance(&H, SEC);
	ev = cmh_event(&H, A, CM_EV_SIDR_REP_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->sidr_rep.status, CM_SIDR_UNSUPPORTED);
	assert_int_equal(cmh_count(&H, B, CM_EV_SIDR_REQ_RCVD), 1);
}

static void test_sidr_lost_and_dup(void **state)
{
	struct cm_sidr_rep_cmd rep = {.status = CM_SIDR_SUCCESS, .qpn = 5};

	(void)state;
	H.drop[A][CM_ATTR_SIDR_REQ - 0x10] = 1;
	sidr_start(0x0000000001110000ull + 1);
	assert_int_equal(H.n[B].nev, 0);
	cmh_advance(&H, 2 * SEC);
	assert_int_equal(cmh_count(&H, B, CM_EV_SIDR_REQ_RCVD), 1);
	/* another retransmission while B's user thinks: dropped as duplicate */
	cmh_advance(&H, 2 * SEC);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_SIDR_REQ), 3);
	assert_int_equal(cmh_count(&H, B, CM_EV_SIDR_REQ_RCVD), 1);
	assert_int_equal(
	    cm_engine_sidr_rep(H.n[B].e, cmh_event(&H, B, CM_EV_SIDR_REQ_RCVD)->id, &rep), 0);
	cmh_deliver(&H);
	assert_non_null(cmh_event(&H, A, CM_EV_SIDR_REP_RCVD));
}

static void test_sidr_timeout(void **state)
{
	const struct cm_event *ev;

	(void)state;
	H.dead[B] = true;
	sidr_start(0x0000000001110000ull + 1);
	cmh_run_timers(&H, SEC, 60 * SEC);
	ev = cmh_event(&H, A, CM_EV_SIDR_REQ_ERROR);
	assert_non_null(ev);
	assert_int_equal(ev->status, -ETIMEDOUT);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_SIDR_REQ), 3);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
}

/* ---- LAP / APR ---- */

static uint32_t a, b;

static void connect_both(void)
{
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
}

static struct cm_path alt_path(void)
{
	struct cm_path p = {.slid = 21,
			    .dlid = 22,
			    .rate = 3,
			    .sl = 5,
			    .subnet_local = 1,
			    .local_ack_timeout = 16,
			    .packet_life_time = 15,
			    .mtu = 4,
			    .pkey = 0xffff};

	return p;
}

static void test_lap_accepted(void **state)
{
	struct cm_path alt = alt_path();
	const struct cm_event *ev;
	struct ibv_qp_attr at;
	int mask;

	(void)state;
	connect_both();
	assert_int_equal(cm_engine_lap(H.n[A].e, a, &alt, "alt", 3), 0);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_LAP_SENT);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_LAP_RCVD);
	ev = cmh_event(&H, B, CM_EV_LAP_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->lap.alternate.slid, 22);
	assert_int_equal(ev->lap.alternate.dlid, 21);
	assert_int_equal(ev->lap.alternate.sl, 5);
	assert_memory_equal(ev->private_data, "alt", 3);
	assert_int_equal(cm_engine_apr(H.n[B].e, b, CM_APR_SUCCESS, NULL, 0, NULL, 0), 0);
	cmh_deliver(&H);
	ev = cmh_event(&H, A, CM_EV_APR_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->apr.status, CM_APR_SUCCESS);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	assert_int_equal(cm_engine_init_qp_attr(H.n[A].e, a, IBV_QPS_RTS, &at, &mask), 0);
	assert_true(mask & IBV_QP_ALT_PATH);
	assert_int_equal(at.alt_ah_attr.dlid, 22);
	assert_int_equal(at.path_mig_state, IBV_MIG_REARM);
	assert_int_equal(cm_engine_init_qp_attr(H.n[B].e, b, IBV_QPS_RTS, &at, &mask), 0);
	assert_true(mask & IBV_QP_ALT_PATH);
	assert_int_equal(at.alt_ah_attr.dlid, 21);
	/* No retransmission once answered. */
	cmh_advance(&H, 20 * SEC);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_LAP), 1);
}

static void test_lap_rejected(void **state)
{
	struct cm_path alt = alt_path();
	struct ibv_qp_attr at;
	int mask;

	(void)state;
	connect_both();
	cm_engine_lap(H.n[A].e, a, &alt, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cm_engine_apr(H.n[B].e, b, CM_APR_REJECT, "why", 3, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_event(&H, A, CM_EV_APR_RCVD)->apr.status, CM_APR_REJECT);
	assert_int_equal(cmh_event(&H, A, CM_EV_APR_RCVD)->apr.info_len, 3);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cm_engine_init_qp_attr(H.n[A].e, a, IBV_QPS_RTS, &at, &mask), 0);
	assert_false(mask & IBV_QP_ALT_PATH);
	/* Connection still usable: a new LAP may follow. */
	assert_int_equal(cm_engine_lap(H.n[A].e, a, &alt, NULL, 0), 0);
}

static void test_lap_mra_and_dup(void **state)
{
	struct cm_path alt = alt_path();
	uint8_t lap[256];

	(void)state;
	connect_both();
	cm_engine_lap(H.n[A].e, a, &alt, NULL, 0);
	cmh_deliver(&H);
	memcpy(lap, cmh_last_mad(&H, A, CM_ATTR_LAP), 256);
	/* duplicate in LAP_RCVD: dropped */
	assert_int_equal(cmh_inject(&H, B, lap), 0);
	assert_int_equal(cmh_count(&H, B, CM_EV_LAP_RCVD), 1);
	assert_int_equal(cm_engine_mra(H.n[B].e, b, 22, NULL, 0), 0);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_MRA_LAP_SENT);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_MRA_LAP_RCVD);
	assert_int_equal(cmh_event(&H, A, CM_EV_MRA_RCVD)->mra.msg_mraed, CM_MSG_REF_LAP);
	/* duplicate in MRA_LAP_SENT: the MRA again */
	assert_int_equal(cmh_inject(&H, B, lap), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_MRA), 2);
	cm_engine_apr(H.n[B].e, b, CM_APR_SUCCESS, NULL, 0, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
}

static void test_lap_timeout(void **state)
{
	struct cm_path alt = alt_path();

	(void)state;
	connect_both();
	H.dead[B] = true;
	cm_engine_lap(H.n[A].e, a, &alt, NULL, 0);
	for (int i = 0; i < 60; i++)
		cmh_advance(&H, SEC);
	assert_non_null(cmh_event(&H, A, CM_EV_LAP_ERROR));
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_LAP), 4);
}

/* Disconnect while a LAP is pending: DREQ wins. */
static void test_lap_then_dreq(void **state)
{
	struct cm_path alt = alt_path();

	(void)state;
	connect_both();
	cm_engine_lap(H.n[A].e, a, &alt, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cm_engine_disconnect(H.n[B].e, b, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	/* LAP only in ESTABLISHED */
	assert_int_equal(cm_engine_lap(H.n[A].e, a, &alt, NULL, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup_udp, cmh_teardown)
	    T(test_sidr_success),    T(test_sidr_each_status),	T(test_sidr_unsupported),
	    T(test_sidr_held),	     T(test_sidr_lost_and_dup), T(test_sidr_rep_lost),
	    T(test_sidr_timeout),    T(test_lap_accepted),	T(test_lap_rejected),
	    T(test_lap_mra_and_dup), T(test_lap_timeout),	T(test_lap_then_dreq),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
