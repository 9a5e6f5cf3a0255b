/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Path cache: hit, expiry after the lifetime, flush, key ignores unmasked fields. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "sa/path_cache.h"
#include "sa/sa_wire.h"

static uint64_t now_ns;
static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return now_ns;
}

static void query(struct sa_path_query *q, uint16_t dlid)
{
	memset(q, 0, sizeof(*q));
	q->rec.dlid = dlid;
	q->rec.slid = 2;
	q->comp_mask = SA_PR_COMP_DLID | SA_PR_COMP_SLID;
}

static void test_hit_expiry_flush(void **state)
{
	struct sa_path_cache *c;
	struct sa_path_query q;
	struct sa_path_key k, k2;
	struct sa_path p = {.dlid = 7, .slid = 2, .mtu = 4}, out[4];
	unsigned n = 99;

	(void)state;
	now_ns = 1000;
	assert_int_equal(sa_path_cache_create(&c, 16, 500, fake_clock, NULL), 0);
	query(&q, 7);
	sa_path_key_make(&k, &q);
	assert_int_equal(sa_path_cache_lookup(c, &k, out, 4, &n), -ENOENT);
	assert_int_equal(sa_path_cache_insert(c, &k, &p, 1), 0);
	assert_int_equal(sa_path_cache_lookup(c, &k, out, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].mtu, 4);

	/* A field outside the mask does not make another query. */
	q.rec.sl = 3;
	sa_path_key_make(&k2, &q);
	assert_memory_equal(k.b, k2.b, SA_PATH_KEY_LEN);
	q.comp_mask |= SA_PR_COMP_SL;
	sa_path_key_make(&k2, &q);
	assert_memory_not_equal(k.b, k2.b, SA_PATH_KEY_LEN);
	assert_int_equal(sa_path_cache_lookup(c, &k2, out, 4, &n), -ENOENT);

	now_ns += 499;
	assert_int_equal(sa_path_cache_lookup(c, &k, out, 4, &n), 0);
	now_ns += 1;
	assert_int_equal(sa_path_cache_lookup(c, &k, out, 4, &n), -ENOENT);

	assert_int_equal(sa_path_cache_insert(c, &k, &p, 1), 0);
	sa_path_cache_flush(c);
	assert_int_equal(sa_path_cache_lookup(c, &k, out, 4, &n), -ENOENT);
	sa_path_cache_destroy(c);
}

static void test_full_and_many(void **state)
{
	struct sa_path_cache *c;
	struct sa_path_query q;
	struct sa_path_key k;
	struct sa_path p = {0}, out[1];
	struct sa_path_cache_stats st;
	unsigned n;

	(void)state;
	now_ns = 0;
	assert_int_equal(sa_path_cache_create(&c, 100, 1000, fake_clock, NULL), 0);
	for (unsigned i = 1; i <= 250; i++) {
		query(&q, (uint16_t)i);
		sa_path_key_make(&k, &q);
		p.dlid = (uint16_t)i;
		assert_int_equal(sa_path_cache_insert(c, &k, &p, 1), 0);
		assert_int_equal(sa_path_cache_lookup(c, &k, out, 1, &n), 0);
		assert_int_equal(out[0].dlid, i);
	}
	sa_path_cache_stats(c, &st);
	assert_true(st.entries <= 100);
	/* Zero paths (GetTable with no match) are cached too. */
	query(&q, 999);
	sa_path_key_make(&k, &q);
	assert_int_equal(sa_path_cache_insert(c, &k, NULL, 0), 0);
	assert_int_equal(sa_path_cache_lookup(c, &k, out, 1, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sa_path_cache_create(NULL, 1, 1, NULL, NULL), -EINVAL);
	sa_path_cache_destroy(c);
}

/* The real clock: a hit costs well under a microsecond (printed, loosely checked). */
static void test_hit_speed(void **state)
{
	struct sa_path_cache *c;
	struct sa_path_query q;
	struct sa_path_key k;
	struct sa_path p = {0}, out[1];
	struct timespec a, b;
	unsigned n, iters = 200000;
	double ns;

	(void)state;
	assert_int_equal(sa_path_cache_create(&c, 4096, 60000000000ull, NULL, NULL), 0);
	query(&q, 5);
	sa_path_key_make(&k, &q);
	assert_int_equal(sa_path_cache_insert(c, &k, &p, 1), 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned i = 0; i < iters; i++)
		sa_path_cache_lookup(c, &k, out, 1, &n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / iters;
	print_message("cache hit: %.0f ns\n", ns);
	assert_true(ns < 10000); /* generous: shared CI machines */
	sa_path_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hit_expiry_flush),
	    cmocka_unit_test(test_full_and_many),
	    cmocka_unit_test(test_hit_speed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
