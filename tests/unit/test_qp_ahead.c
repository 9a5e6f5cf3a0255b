/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* rtproto/qp_ahead.c: QP attributes kept per connection until RTS is taken. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rtproto/qp_ahead.h"

static struct ibv_qp_attr attr_for(enum ibv_qp_state s, uint32_t id)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	a.dest_qp_num = id;
	return a;
}

static void test_put_take(void **state)
{
	struct cm_qp_ahead_map m;
	struct ibv_qp_attr a, got;
	int mask;

	(void)state;
	assert_int_equal(cm_qp_ahead_init(&m), 0);
	assert_false(cm_qp_ahead_take(&m, 7, IBV_QPS_RTR, &got, &mask));
	for (int s = IBV_QPS_INIT; s <= IBV_QPS_RTS; s++) {
		a = attr_for((enum ibv_qp_state)s, 7);
		cm_qp_ahead_put(&m, 7, (enum ibv_qp_state)s, &a, 100 + s);
	}
	/* States outside INIT..RTS are not kept. */
	a = attr_for(IBV_QPS_SQD, 7);
	cm_qp_ahead_put(&m, 7, IBV_QPS_SQD, &a, 1);
	assert_false(cm_qp_ahead_take(&m, 7, IBV_QPS_SQD, &got, &mask));
	assert_int_equal(m.n, 1);
	/* INIT and RTR as often as asked (librdmacm moves INIT twice); RTS ends it. */
	assert_true(cm_qp_ahead_take(&m, 7, IBV_QPS_INIT, &got, &mask));
	assert_true(cm_qp_ahead_take(&m, 7, IBV_QPS_RTR, &got, &mask));
	assert_int_equal(got.qp_state, IBV_QPS_RTR);
	assert_int_equal(mask, 100 + IBV_QPS_RTR);
	assert_true(cm_qp_ahead_take(&m, 7, IBV_QPS_INIT, &got, &mask));
	assert_int_equal(got.qp_state, IBV_QPS_INIT);
	assert_int_equal(m.n, 1);
	assert_true(cm_qp_ahead_take(&m, 7, IBV_QPS_RTS, &got, &mask));
	assert_int_equal(got.dest_qp_num, 7);
	assert_int_equal(m.n, 0);
	assert_false(cm_qp_ahead_take(&m, 7, IBV_QPS_INIT, &got, &mask));
	cm_qp_ahead_destroy(&m);
	cm_qp_ahead_destroy(&m); /* twice is harmless */
}

/* A burst: every connection found (chained), a later put replaces, drop frees. */
static void test_burst_and_drop(void **state)
{
	struct cm_qp_ahead_map m;
	struct ibv_qp_attr a, got;
	int mask;

	(void)state;
	assert_int_equal(cm_qp_ahead_init(&m), 0);
	for (uint32_t id = 1; id <= 3 * CM_QP_AHEAD_BUCKETS; id++) {
		a = attr_for(IBV_QPS_RTR, id);
		cm_qp_ahead_put(&m, id, IBV_QPS_RTR, &a, 1);
	}
	assert_int_equal(m.n, 3 * CM_QP_AHEAD_BUCKETS);
	a = attr_for(IBV_QPS_RTR, 99999);
	cm_qp_ahead_put(&m, 5, IBV_QPS_RTR, &a, 2);
	for (uint32_t id = 1; id <= 3 * CM_QP_AHEAD_BUCKETS; id += 2) {
		assert_true(cm_qp_ahead_take(&m, id, IBV_QPS_RTR, &got, &mask));
		assert_int_equal(got.dest_qp_num, id == 5 ? 99999 : id);
		assert_int_equal(mask, id == 5 ? 2 : 1);
		cm_qp_ahead_drop(&m, id); /* RTS never came: the connection's end */
	}
	for (uint32_t id = 2; id <= 3 * CM_QP_AHEAD_BUCKETS; id += 2)
		cm_qp_ahead_drop(&m, id);
	cm_qp_ahead_drop(&m, 424242); /* unknown: nothing */
	assert_int_equal(m.n, 0);
	cm_qp_ahead_destroy(&m);
}

/* Past CM_QP_AHEAD_MAX entries a put is dropped: the caller asks the engine. */
static void test_full(void **state)
{
	struct cm_qp_ahead_map m;
	struct ibv_qp_attr a = attr_for(IBV_QPS_INIT, 0), got;
	int mask;

	(void)state;
	assert_int_equal(cm_qp_ahead_init(&m), 0);
	for (uint32_t id = 0; id < CM_QP_AHEAD_MAX; id++)
		cm_qp_ahead_put(&m, id, IBV_QPS_INIT, &a, 1);
	cm_qp_ahead_put(&m, CM_QP_AHEAD_MAX, IBV_QPS_INIT, &a, 1);
	assert_int_equal(m.n, CM_QP_AHEAD_MAX);
	assert_false(cm_qp_ahead_take(&m, CM_QP_AHEAD_MAX, IBV_QPS_INIT, &got, &mask));
	/* An existing entry still takes a new state. */
	cm_qp_ahead_put(&m, 3, IBV_QPS_RTS, &a, 9);
	assert_true(cm_qp_ahead_take(&m, 3, IBV_QPS_RTS, &got, &mask));
	assert_int_equal(mask, 9);
	cm_qp_ahead_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_take),
	    cmocka_unit_test(test_burst_and_drop),
	    cmocka_unit_test(test_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
