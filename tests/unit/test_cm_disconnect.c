/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM engine, connection release: DREQ/DREP from either side and from both
 * at once, lost DREQ and DREP, DREQ timeout, TimeWait and QPN reuse,
 * duplicates of old messages after the fact, release by the user.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "tests/unit/cm_harness.h"

static uint32_t a, b;

/* Every test starts from one established connection. */
static int setup_connected(void **state)
{
	cmh_setup(state);
	a = cmh_connect(&H, 0x1001);
	b = cmh_passive_id(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	return 0;
}

static void test_disconnect_active(void **state)
{
	(void)state;
	assert_int_equal(cm_engine_disconnect(H.n[A].e, a, "bye", 3), 0);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_DREQ_SENT);
	cmh_deliver(&H);
	assert_memory_equal(cmh_event(&H, B, CM_EV_DREQ_RCVD)->private_data, "bye", 3);
	assert_non_null(cmh_event(&H, A, CM_EV_DREP_RCVD));
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	assert_true(cm_engine_qpn_in_timewait(H.n[A].e, 0x1001));
	assert_true(cm_engine_qpn_in_timewait(H.n[B].e, 0x2000));
	/* TimeWait: 67 ms packet lifetime + 134 ms ACK timeout. */
	cmh_advance(&H, SEC);
	assert_non_null(cmh_event(&H, A, CM_EV_TIMEWAIT_EXIT));
	assert_non_null(cmh_event(&H, B, CM_EV_TIMEWAIT_EXIT));
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
	assert_false(cm_engine_qpn_in_timewait(H.n[A].e, 0x1001));
}

static void test_disconnect_passive(void **state)
{
	(void)state;
	assert_int_equal(cm_engine_disconnect(H.n[B].e, b, NULL, 0), 0);
	cmh_deliver(&H);
	assert_non_null(cmh_event(&H, A, CM_EV_DREQ_RCVD));
	assert_non_null(cmh_event(&H, B, CM_EV_DREP_RCVD));
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
}

/* The user answers a DREQ itself (no auto DREP). */
static void test_drep_by_user(void **state)
{
	(void)state;
	H.n[B].auto_drep = false;
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_DREQ_RCVD);
	/* a duplicate DREQ while the user thinks is dropped */
	cmh_advance(&H, 5 * SEC);
	assert_int_equal(cmh_count(&H, B, CM_EV_DREQ_RCVD), 1);
	assert_true(cmh_stats(B).dropped[CM_STAT_DREQ] >= 1);
	assert_int_equal(cm_engine_disconnect(H.n[B].e, b, "ok", 2), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_memory_equal(cmh_event(&H, A, CM_EV_DREP_RCVD)->private_data, "ok", 2);
}

static void test_simultaneous_dreq(void **state)
{
	(void)state;
	assert_int_equal(cm_engine_disconnect(H.n[A].e, a, NULL, 0), 0);
	assert_int_equal(cm_engine_disconnect(H.n[B].e, b, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	assert_non_null(cmh_event(&H, A, CM_EV_DREQ_RCVD));
	assert_non_null(cmh_event(&H, B, CM_EV_DREQ_RCVD));
	cmh_run_timers(&H, SEC, 100 * SEC);
	assert_int_equal(cmh_count(&H, A, CM_EV_TIMEWAIT_EXIT), 1);
	assert_int_equal(cmh_count(&H, B, CM_EV_TIMEWAIT_EXIT), 1);
	assert_null(cmh_event(&H, A, CM_EV_DREQ_ERROR));
	assert_null(cmh_event(&H, B, CM_EV_DREQ_ERROR));
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
}

/*
 * Simultaneous, and the users answer late: the answer in TimeWait succeeds
 * and sends nothing (the kernel's CM sends a DREP only from DREQ_RCVD).
 */
static void test_simultaneous_dreq_late_answer(void **state)
{
	(void)state;
	H.n[A].auto_drep = false;
	H.n[B].auto_drep = false;
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	cm_engine_disconnect(H.n[B].e, b, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_DREQ_RCVD);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_DREQ_RCVD);
	assert_int_equal(cm_engine_disconnect(H.n[A].e, a, NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_DREP), 0);
	assert_int_equal(cm_engine_disconnect(H.n[B].e, b, NULL, 0), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_DREP), 0);
	cmh_deliver(&H);
	cmh_run_timers(&H, SEC, 100 * SEC);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
}

static void test_dreq_lost(void **state)
{
	(void)state;
	H.drop[A][CM_ATTR_DREQ - 0x10] = 1;
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	cmh_advance(&H, 5 * SEC);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_stats(A).retried[CM_STAT_DREQ], 1);
}

/* DREP lost: the retransmitted DREQ meets TimeWait, which answers DREP again. */
static void test_drep_lost(void **state)
{
	(void)state;
	H.drop[B][CM_ATTR_DREP - 0x10] = 1;
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_DREQ_SENT);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	/* The DREQ again (as A's retransmission would be) meets TimeWait. */
	assert_int_equal(cmh_inject(&H, B, cmh_last_mad(&H, A, CM_ATTR_DREQ)), 0);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_DREP), 2);
	assert_int_equal(cmh_stats(B).duplicates[CM_STAT_DREQ], 1);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	/* And A's own retransmission timer is stopped. */
	cmh_advance(&H, 10 * SEC);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_DREQ), 1);
	assert_null(cmh_event(&H, A, CM_EV_DREQ_ERROR));
}

static void test_dreq_timeout(void **state)
{
	const struct cm_event *ev;

	(void)state;
	H.dead[B] = true;
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	/* 1 + 3 DREQs, 4.4 s apart; then TimeWait. */
	for (int i = 0; i < 25 && !cmh_event(&H, A, CM_EV_DREQ_ERROR); i++)
		cmh_advance(&H, SEC);
	ev = cmh_event(&H, A, CM_EV_DREQ_ERROR);
	assert_non_null(ev);
	assert_int_equal(ev->status, -ETIMEDOUT);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_DREQ), 4);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	cmh_advance(&H, SEC);
	assert_non_null(cmh_event(&H, A, CM_EV_TIMEWAIT_EXIT));
}

/* DREQ for a connection long gone gets a DREP so the peer can finish. */
static void test_dreq_unknown(void **state)
{
	uint8_t mad[256];
	const uint8_t *drep;

	(void)state;
	cmh_mad(mad, CM_ATTR_DREQ, 0x11111111, 0x22222222);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	drep = cmh_last_mad(&H, B, CM_ATTR_DREP);
	assert_non_null(drep);
	assert_int_equal(mad_get(drep + 24, cm_drep_fields, CM_DREP_LOCAL_COMM_ID), 0x22222222);
	assert_int_equal(mad_get(drep + 24, cm_drep_fields, CM_DREP_REMOTE_COMM_ID), 0x11111111);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
}

/* A DREQ that names another QP is not for this connection. */
static void test_dreq_wrong_qpn(void **state)
{
	uint8_t mad[256];

	(void)state;
	mad_set(cmh_mad(mad, CM_ATTR_DREQ, a, b), cm_dreq_fields, CM_DREQ_REMOTE_QPN_EECN, 0x999);
	assert_int_equal(cmh_inject(&H, B, mad), 0);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_ESTABLISHED);
	assert_int_equal(cmh_stats(B).dropped[CM_STAT_DREQ], 1);
}

static void test_timewait_qpn_reuse(void **state)
{
	struct cm_connect_cmd cmd;
	struct cm_accept_cmd acc;
	uint32_t id;

	(void)state;
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_TIMEWAIT);
	cmh_connect_cmd(&H, &cmd, 0x1001);
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), -EBUSY);
	/* The passive side may not reuse its QPN either. */
	H.n[B].auto_accept = false;
	cmh_connect_cmd(&H, &cmd, 0x1002);
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), 0);
	cmh_deliver(&H);
	cmh_accept_cmd(&acc, 0x2000);
	assert_int_equal(cm_engine_accept(H.n[B].e, cmh_passive_id(&H), 1, &acc), -EBUSY);
	acc.qpn = 0x2001;
	assert_int_equal(cm_engine_accept(H.n[B].e, cmh_passive_id(&H), 1, &acc), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, A, id), CM_ST_ESTABLISHED);
	/* After TimeWait, the QPN is free. */
	cmh_advance(&H, SEC);
	assert_int_equal(cmh_state(&H, A, a), CM_ST_IDLE);
	cmh_connect_cmd(&H, &cmd, 0x1001);
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), 0);
}

/* A REQ duplicate arriving in TimeWait is answered "stale connection". */
static void test_dup_req_in_timewait(void **state)
{
	uint8_t req[256];
	const uint8_t *rej;

	(void)state;
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	rej = cmh_last_mad(&H, B, CM_ATTR_REJ);
	assert_non_null(rej);
	assert_int_equal(mad_get(rej + 24, cm_rej_fields, CM_REJ_REASON), CM_REJ_STALE_CONN);
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), 1);
}

/*
 * A new REQ (a new comm ID) from the QP of a connection in TimeWait is a
 * new connection, as with the kernel's CM (cm_enter_timewait takes the
 * connection out of its remote-QPN table), not a stale one.
 */
static void test_new_req_from_qpn_in_timewait(void **state)
{
	uint8_t req[256];

	(void)state;
	memcpy(req, cmh_last_mad(&H, A, CM_ATTR_REQ), 256);
	cm_engine_disconnect(H.n[A].e, a, NULL, 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
	mad_set(req + 24, cm_req_fields, CM_REQ_LOCAL_COMM_ID, a ^ 0x5a5a5a5a);
	assert_int_equal(cmh_inject(&H, B, req), 0);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_REJ), 0);
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), 2);
	assert_int_equal(cmh_state(&H, B, b), CM_ST_TIMEWAIT);
}

/* Release: DREQ goes out, TimeWait runs, the user hears nothing more. */
static void test_release(void **state)
{
	int nev = H.n[A].nev;

	(void)state;
	assert_int_equal(cm_engine_release(H.n[A].e, a), 0);
	cmh_deliver(&H);
	cmh_run_timers(&H, SEC, 100 * SEC);
	assert_int_equal(H.n[A].nev, nev);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
	assert_non_null(cmh_event(&H, B, CM_EV_DREQ_RCVD));
}

/*
 * Both ends released at once (madcmd's sessions gone, or programs that
 * destroy their ids together): the DREQs cross, no user is left to
 * answer either, and the engines answer for them.  Before, both sat in
 * DREQ_RCVD, which has no timer, for good, holding their QPNs.
 */
static void test_release_both(void **state)
{
	(void)state;
	H.n[A].auto_drep = false;
	H.n[B].auto_drep = false;
	assert_int_equal(cm_engine_release(H.n[A].e, a), 0);
	assert_int_equal(cm_engine_release(H.n[B].e, b), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_sent(&H, A, CM_ATTR_DREP), 1);
	assert_int_equal(cmh_sent(&H, B, CM_ATTR_DREP), 1);
	cmh_run_timers(&H, SEC, 100 * SEC);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
	assert_false(cm_engine_qpn_in_timewait(H.n[A].e, 0x1001));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup_connected, cmh_teardown)
	    T(test_disconnect_active),
	    T(test_disconnect_passive),
	    T(test_drep_by_user),
	    T(test_simultaneous_dreq),
	    T(test_simultaneous_dreq_late_answer),
	    T(test_dreq_lost),
	    T(test_drep_lost),
	    T(test_dreq_timeout),
	    T(test_dreq_unknown),
	    T(test_dreq_wrong_qpn),
	    T(test_timewait_qpn_reuse),
	    T(test_dup_req_in_timewait),
	    T(test_new_req_from_qpn_in_timewait),
	    T(test_release),
	    T(test_release_both),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
