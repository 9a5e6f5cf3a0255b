/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Timer heap on a fake clock: order, re-arm, cancel, arm from callbacks. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>

#include "mad/timer.h"

static uint64_t fake_now;
static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return fake_now;
}

static int order[64], norder;
static void record(struct mad_timer *t, void *arg)
{
	(void)t;
	order[norder++] = (int)(intptr_t)arg;
}

static void test_order_and_cancel(void **state)
{
	struct mad_timer_heap h;
	struct mad_timer t[10] = {0};

	(void)state;
	fake_now = 1000;
	norder = 0;
	mad_timer_heap_init(&h, fake_clock, NULL);
	for (int i = 0; i < 10; i++)
		assert_int_equal(mad_timer_arm(&h, &t[i], (uint64_t)((i * 7) % 10) * 10, record,
					       (void *)(intptr_t)i),
				 0);
	mad_timer_cancel(&h, &t[3]);
	assert_false(mad_timer_armed(&t[3]));
	assert_int_equal(mad_timer_next_deadline(&h), 1000);
	fake_now = 1045;
	assert_int_equal(mad_timer_run(&h), 4); /* delays 0,10,20,40 (30 cancelled) */
	fake_now = 2000;
	mad_timer_run(&h);
	assert_int_equal(norder, 9);
	for (int i = 1; i < norder; i++)
		assert_true(t[order[i - 1]].deadline_ns <= t[order[i]].deadline_ns);
	assert_int_equal(mad_timer_next_deadline(&h), UINT64_MAX);
	mad_timer_heap_destroy(&h);
}

static struct mad_timer_heap *self_heap;
static int self_count;
static void rearm(struct mad_timer *t, void *arg)
{
	(void)arg;
	if (++self_count < 3)
		mad_timer_arm(self_heap, t, 5, rearm, NULL);
}

static void test_rearm_from_callback(void **state)
{
	struct mad_timer_heap h;
	struct mad_timer t = {0};

	(void)state;
	fake_now = 0;
	self_count = 0;
	self_heap = &h;
	mad_timer_heap_init(&h, fake_clock, NULL);
	mad_timer_arm(&h, &t, 5, rearm, NULL);
	for (int i = 0; i < 10; i++) {
		fake_now += 5;
		mad_timer_run(&h);
	}
	assert_int_equal(self_count, 3);
	mad_timer_heap_destroy(&h);
}

static void noop(struct mad_timer *t, void *arg)
{
	(void)t;
	(void)arg;
}

static void test_random_stress(void **state)
{
	struct mad_timer_heap h;
	static struct mad_timer t[500];
	uint64_t last = 0;

	(void)state;
	fake_now = 0;
	norder = 0;
	srand(1);
	mad_timer_heap_init(&h, fake_clock, NULL);
	for (int round = 0; round < 2000; round++) {
		int i = rand() % 500;
		if (rand() % 3)
			mad_timer_arm(&h, &t[i], (uint64_t)(rand() % 1000), noop, NULL);
		else
			mad_timer_cancel(&h, &t[i]);
	}
	while (h.n) {
		uint64_t d = mad_timer_next_deadline(&h);
		assert_true(d >= last);
		last = d;
		norder = 0;
		fake_now = d;
		mad_timer_run(&h);
	}
	mad_timer_heap_destroy(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_and_cancel),
	    cmocka_unit_test(test_rearm_from_callback),
	    cmocka_unit_test(test_random_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
