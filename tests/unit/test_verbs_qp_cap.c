/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The send WQE's data area, as rxe sizes it (sim/verbs_qp_cap.c): the
 * larger of max_send_sge 16-byte entries and max_inline_data, reported
 * back as max_inline_data (the area) and max_send_sge (area / 16).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sim/verbs_qp_cap.h"

static struct ibv_qp_cap sized(uint32_t sge, uint32_t inl)
{
	struct ibv_qp_cap c = {.max_send_wr = 7,
			       .max_recv_wr = 9,
			       .max_send_sge = sge,
			       .max_recv_sge = 3,
			       .max_inline_data = inl};

	verbs_qp_cap_size(&c);
	/* The other capabilities are not the send WQE's. */
	assert_int_equal(c.max_send_wr, 7);
	assert_int_equal(c.max_recv_wr, 9);
	assert_int_equal(c.max_recv_sge, 3);
	return c;
}

/* The case of issue 42: inline 0 asked, one SGE: 16 bytes inline. */
static void test_no_inline_asked(void **state)
{
	struct ibv_qp_cap c = sized(1, 0);

	(void)state;
	assert_int_equal(c.max_inline_data, 16);
	assert_int_equal(c.max_send_sge, 1);
	c = sized(4, 0);
	assert_int_equal(c.max_inline_data, 64);
	assert_int_equal(c.max_send_sge, 4);
	/* No SGE asked: the WQE still has room for one. */
	c = sized(0, 0);
	assert_int_equal(c.max_inline_data, 16);
	assert_int_equal(c.max_send_sge, 1);
}

/* More inline than the SGEs take: the area grows, and so many SGEs fit. */
static void test_inline_larger(void **state)
{
	struct ibv_qp_cap c = sized(1, 100);

	(void)state;
	assert_int_equal(c.max_inline_data, 100);
	assert_int_equal(c.max_send_sge, 6);
	c = sized(2, 64);
	assert_int_equal(c.max_inline_data, 64);
	assert_int_equal(c.max_send_sge, 4);
	c = sized(16, 256);
	assert_int_equal(c.max_inline_data, 256);
	assert_int_equal(c.max_send_sge, 16);
}

/* Less inline than the SGEs take: the SGE area is the inline size. */
static void test_sges_larger(void **state)
{
	struct ibv_qp_cap c = sized(2, 20);

	(void)state;
	assert_int_equal(c.max_inline_data, 32);
	assert_int_equal(c.max_send_sge, 2);
	c = sized(16, 0);
	assert_int_equal(c.max_inline_data, 256);
	assert_int_equal(c.max_send_sge, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_inline_asked),
	    cmocka_unit_test(test_inline_larger),
	    cmocka_unit_test(test_sges_larger),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
