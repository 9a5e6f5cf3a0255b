/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * QP state machine: the masks each transition requires and accepts, per
 * transport, as the IBA spec and real HCAs have them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "sim/verbs_qp_fsm.h"

#define S IBV_QP_STATE
#define RC IBV_QPT_RC
#define UC IBV_QPT_UC
#define UD IBV_QPT_UD

static const int init_rc = S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
static const int init_ud = S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
static const int rtr_uc = S | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
static const int rtr_rc = S | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
static const int rts_rc = S | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC;

static void test_reset_to_init(void **state)
{
	(void)state;
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RESET, IBV_QPS_INIT, init_rc), 0);
	assert_int_equal(verbs_qp_fsm_check(UC, IBV_QPS_RESET, IBV_QPS_INIT, init_rc), 0);
	assert_int_equal(verbs_qp_fsm_check(UD, IBV_QPS_RESET, IBV_QPS_INIT, init_ud), 0);
	/* UD needs a Q_Key, RC has no Q_Key and needs access flags. */
	assert_int_equal(verbs_qp_fsm_check(UD, IBV_QPS_RESET, IBV_QPS_INIT, init_rc), -EINVAL);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RESET, IBV_QPS_INIT, init_ud), -EINVAL);
	/* Each required bit is required. */
	assert_int_equal(
	    verbs_qp_fsm_check(RC, IBV_QPS_RESET, IBV_QPS_INIT, init_rc & ~IBV_QP_PORT), -EINVAL);
	/* Extra attributes are refused. */
	assert_int_equal(
	    verbs_qp_fsm_check(RC, IBV_QPS_RESET, IBV_QPS_INIT, init_rc | IBV_QP_PATH_MTU),
	    -EINVAL);
	/* RESET cannot go straight to ERR or RTR. */
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RESET, IBV_QPS_ERR, S), -EINVAL);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RESET, IBV_QPS_RTR, rtr_rc), -EINVAL);
}

static void test_init_to_rtr(void **state)
{
	(void)state;
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr_rc), 0);
	assert_int_equal(verbs_qp_fsm_check(UC, IBV_QPS_INIT, IBV_QPS_RTR, rtr_uc), 0);
	assert_int_equal(verbs_qp_fsm_check(UD, IBV_QPS_INIT, IBV_QPS_RTR, S), 0);
	/* RC without min RNR timer or max dest rd atomic: EINVAL. */
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr_uc), -EINVAL);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr_rc & ~IBV_QP_AV),
			 -EINVAL);
	assert_int_equal(
	    verbs_qp_fsm_check(RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr_rc & ~IBV_QP_DEST_QPN), -EINVAL);
	/* UC does not accept the RC-only attributes. */
	assert_int_equal(verbs_qp_fsm_check(UC, IBV_QPS_INIT, IBV_QPS_RTR, rtr_rc), -EINVAL);
	/* Optional ones are fine. */
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_INIT, IBV_QPS_RTR,
					    rtr_rc | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS),
			 0);
	assert_int_equal(verbs_qp_fsm_check(UD, IBV_QPS_INIT, IBV_QPS_RTR, S | IBV_QP_QKEY), 0);
	/* CUR_STATE is not allowed when leaving INIT. */
	assert_int_equal(
	    verbs_qp_fsm_check(RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr_rc | IBV_QP_CUR_STATE), -EINVAL);
}

static void test_rtr_to_rts(void **state)
{
	(void)state;
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RTR, IBV_QPS_RTS, rts_rc), 0);
	assert_int_equal(verbs_qp_fsm_check(UC, IBV_QPS_RTR, IBV_QPS_RTS, S | IBV_QP_SQ_PSN), 0);
	assert_int_equal(verbs_qp_fsm_check(UD, IBV_QPS_RTR, IBV_QPS_RTS, S | IBV_QP_SQ_PSN), 0);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RTR, IBV_QPS_RTS, S | IBV_QP_SQ_PSN),
			 -EINVAL);
	assert_int_equal(verbs_qp_fsm_check(UD, IBV_QPS_RTR, IBV_QPS_RTS, S), -EINVAL);
	assert_int_equal(
	    verbs_qp_fsm_check(RC, IBV_QPS_RTR, IBV_QPS_RTS, rts_rc | IBV_QP_CUR_STATE), 0);
	assert_int_equal(
	    verbs_qp_fsm_check(UC, IBV_QPS_RTR, IBV_QPS_RTS, S | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT),
	    -EINVAL);
	/* RTR -> RTR does not exist. */
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RTR, IBV_QPS_RTR, rtr_rc), -EINVAL);
}

static void test_rts_sqd_sqe_err(void **state)
{
	(void)state;
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RTS, IBV_QPS_RTS, S | IBV_QP_MIN_RNR_TIMER),
			 0);
	assert_int_equal(verbs_qp_fsm_check(UC, IBV_QPS_RTS, IBV_QPS_RTS, S | IBV_QP_MIN_RNR_TIMER),
			 -EINVAL);
	assert_int_equal(
	    verbs_qp_fsm_check(RC, IBV_QPS_RTS, IBV_QPS_SQD, S | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	assert_int_equal(
	    verbs_qp_fsm_check(RC, IBV_QPS_SQD, IBV_QPS_SQD, S | IBV_QP_TIMEOUT | IBV_QP_AV), 0);
	assert_int_equal(verbs_qp_fsm_check(UD, IBV_QPS_SQD, IBV_QPS_SQD, S | IBV_QP_TIMEOUT),
			 -EINVAL);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_SQD, IBV_QPS_RTS, S), 0);
	assert_int_equal(verbs_qp_fsm_check(UD, IBV_QPS_SQE, IBV_QPS_RTS, S | IBV_QP_QKEY), 0);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_SQE, IBV_QPS_RTS, S), -EINVAL);
	for (int st = IBV_QPS_INIT; st <= IBV_QPS_ERR; st++) {
		assert_int_equal(verbs_qp_fsm_check(RC, st, IBV_QPS_ERR, S), 0);
		assert_int_equal(verbs_qp_fsm_check(RC, st, IBV_QPS_RESET, S), 0);
		/* Moving to ERR or RESET takes no attributes. */
		assert_int_equal(verbs_qp_fsm_check(RC, st, IBV_QPS_ERR, S | IBV_QP_QKEY), -EINVAL);
	}
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_ERR, IBV_QPS_RTS, S), -EINVAL);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_ERR, IBV_QPS_INIT, init_rc), -EINVAL);
}

static void test_bad_input(void **state)
{
	(void)state;
	assert_int_equal(
	    verbs_qp_fsm_check(IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT, init_rc), -EINVAL);
	assert_int_equal(verbs_qp_fsm_check(RC, 42, IBV_QPS_INIT, init_rc), -EINVAL);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RESET, 42, S), -EINVAL);
	/* Without IBV_QP_STATE, the attributes are checked against cur -> cur. */
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RTS, IBV_QPS_ERR, IBV_QP_MIN_RNR_TIMER), 0);
	assert_int_equal(verbs_qp_fsm_check(RC, IBV_QPS_RTR, IBV_QPS_ERR, IBV_QP_MIN_RNR_TIMER),
			 -EINVAL);
	assert_int_equal(verbs_qp_fsm_required(RC, IBV_QPS_INIT, IBV_QPS_RTR), rtr_rc & ~S);
	assert_int_equal(verbs_qp_fsm_required(RC, IBV_QPS_RESET, IBV_QPS_RTS), 0);
	assert_false(verbs_qp_fsm_valid(RC, IBV_QPS_RESET, IBV_QPS_RTS));
}

static void test_apply(void **state)
{
	struct ibv_qp_attr cur, in;

	(void)state;
	memset(&cur, 0, sizeof(cur));
	memset(&in, 0xff, sizeof(in));
	in.qp_state = IBV_QPS_RTR;
	in.dest_qp_num = 0x1234567;
	in.rq_psn = 0xabcdef01;
	in.path_mtu = IBV_MTU_2048;
	verbs_qp_fsm_apply(&cur, &in, IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
	assert_int_equal(cur.qp_state, IBV_QPS_RTR);
	assert_int_equal(cur.dest_qp_num, 0x234567);
	assert_int_equal(cur.rq_psn, 0xcdef01);
	assert_int_equal(cur.path_mtu, 0); /* not in the mask: untouched */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reset_to_init), cmocka_unit_test(test_init_to_rtr),
	    cmocka_unit_test(test_rtr_to_rts),	  cmocka_unit_test(test_rts_sqd_sqe_err),
	    cmocka_unit_test(test_bad_input),	  cmocka_unit_test(test_apply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
