/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * mad/random.h: getrandom(2) by default, a test's source once set (and
 * what was seeded from the old source, the TIDs, seeded again), getrandom
 * again once reset.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "mad/random.h"
#include "mad/tid.h"

/* A counter as the source: byte i of the k-th byte drawn is k. */
static unsigned drawn;
static void counter_source(void *arg, void *buf, size_t n)
{
	uint8_t *b = buf;

	assert_ptr_equal(arg, &drawn);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)drawn++;
}

static bool all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void test_default_source(void **state)
{
	uint8_t a[32] = {0}, b[32] = {0};

	(void)state;
	assert_int_equal(mad_random_bytes(a, sizeof(a), 0), 0);
	assert_int_equal(mad_random_bytes(b, sizeof(b), 0), 0);
	/* 256 random bits each: all zero, or equal, only by a broken source */
	assert_false(all_zero(a, sizeof(a)));
	assert_memory_not_equal(a, b, sizeof(a));
}

static void test_set_and_reset(void **state)
{
	uint8_t b[8], want[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	unsigned gen = mad_random_generation();

	(void)state;
	drawn = 0;
	mad_random_set_source(counter_source, &drawn);
	assert_int_not_equal(mad_random_generation(), gen);
	assert_int_equal(mad_random_bytes(b, sizeof(b), 0), 0);
	assert_memory_equal(b, want, sizeof(b));
	assert_int_equal(drawn, 8);

	gen = mad_random_generation();
	mad_random_set_source(NULL, NULL);
	assert_int_not_equal(mad_random_generation(), gen);
	assert_int_equal(mad_random_bytes(b, sizeof(b), 0), 0);
	assert_int_equal(drawn, 8); /* the test's source is no longer asked */
	/* 64 bits from getrandom equal to the counter's only by accident */
	assert_memory_not_equal(b, want, sizeof(b));
}

/* The TIDs follow the source: the same source, restarted, the same TIDs. */
static void test_tids_follow_source(void **state)
{
	uint64_t first[3], again[3];

	(void)state;
	drawn = 0;
	mad_random_set_source(counter_source, &drawn);
	for (int i = 0; i < 3; i++)
		first[i] = mad_tid_next();
	/* seeded with bytes 0..7: the high word the first 4, the low the next */
	{
		const uint8_t seed[8] = {0, 1, 2, 3, 4, 5, 6, 7};
		uint32_t w[2];

		memcpy(w, seed, sizeof(w));
		assert_int_equal(first[0], (uint64_t)w[0] << 32 | w[1]);
	}
	assert_int_equal(first[2], first[0] + 2);

	drawn = 0;
	mad_random_set_source(counter_source, &drawn);
	for (int i = 0; i < 3; i++)
		again[i] = mad_tid_next();
	assert_memory_equal(first, again, sizeof(first));

	mad_random_set_source(NULL, NULL);
	assert_int_not_equal(mad_tid_next() >> 32, first[0] >> 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_source),
	    cmocka_unit_test(test_set_and_reset),
	    cmocka_unit_test(test_tids_follow_source),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
