/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Path cache: hit, expiry after the lifetime, flush, key ignores unmasked
 * fields, the entries a GID out of service drops, the generation.
 */
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
	struct sa_record_cache_stats st;
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
	/* A caller with no room (max 0, no array) still learns of the hit. */
	assert_int_equal(sa_path_cache_lookup(c, &k, NULL, 0, &n), 0);
	assert_int_equal(sa_path_cache_create(NULL, 1, 1, NULL, NULL), -EINVAL);
	sa_path_cache_destroy(c);
}

static void gid(uint8_t *g, uint8_t last)
{
	memset(g, 0, 16);
	g[0] = 0xfe;
	g[1] = 0x80;
	g[15] = last;
}

static void insert_to(struct sa_path_cache *c, uint16_t dlid, bool dgid_in_mask, uint8_t qgid,
		      uint8_t pgid)
{
	struct sa_path_query q;
	struct sa_path_key k;
	struct sa_path p = {.dlid = dlid};

	query(&q, dlid);
	gid(q.rec.dgid, qgid);
	if (dgid_in_mask)
		q.comp_mask |= SA_PR_COMP_DGID;
	gid(p.dgid, pgid);
	sa_path_key_make(&k, &q);
	assert_int_equal(sa_path_cache_insert(c, &k, &p, 1), 0);
}

static int present(struct sa_path_cache *c, uint16_t dlid, bool dgid_in_mask, uint8_t qgid)
{
	struct sa_path_query q;
	struct sa_path_key k;
	struct sa_path out[1];
	unsigned n;

	query(&q, dlid);
	gid(q.rec.dgid, qgid);
	if (dgid_in_mask)
		q.comp_mask |= SA_PR_COMP_DGID;
	sa_path_key_make(&k, &q);
	return sa_path_cache_peek(c, &k, out, 1, &n) == 0;
}

/*
 * A GID out of service drops exactly the entries to it: those whose query
 * named it as DGID and those whose paths lead to it; the generation moves,
 * so an answer to a query sent before the drop is not cached.
 */
static void test_drop_gid(void **state)
{
	struct sa_path_cache *c;
	struct sa_record_cache_stats st;
	struct sa_path_query q;
	struct sa_path_key k;
	struct sa_path p = {0};
	uint8_t g1[16];
	uint64_t gen;

	(void)state;
	now_ns = 0;
	assert_int_equal(sa_path_cache_create(&c, 64, 1000, fake_clock, NULL), 0);
	insert_to(c, 1, true, 1, 1);  /* asked for g1 */
	insert_to(c, 2, false, 0, 1); /* asked by LID, the path leads to g1 */
	insert_to(c, 3, true, 2, 2);  /* another GID */
	insert_to(c, 4, false, 1, 3); /* g1 in the record but not in the mask */
	gen = sa_path_cache_gen(c);
	gid(g1, 1);
	assert_int_equal(sa_path_cache_drop_gid(c, g1), 2);
	assert_false(present(c, 1, true, 1));
	assert_false(present(c, 2, false, 0));
	assert_true(present(c, 3, true, 2));
	assert_true(present(c, 4, false, 1));
	sa_path_cache_stats(c, &st);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.flushes, 0);

	/*
	 * An answer to a query sent before the drop stays out if the drop
	 * would have picked it (a path to g1); another goes in.
	 */
	assert_true(sa_path_cache_gen(c) != gen);
	query(&q, 5);
	sa_path_key_make(&k, &q);
	memcpy(p.dgid, g1, 16);
	assert_int_equal(sa_path_cache_insert_gen(c, &k, &p, 1, gen), -ESTALE);
	assert_false(present(c, 5, false, 0));
	memset(p.dgid, 0, 16);
	assert_int_equal(sa_path_cache_insert_gen(c, &k, &p, 1, gen), 0);
	assert_true(present(c, 5, false, 0));
	gen = sa_path_cache_gen(c);
	/* A flush moves it too. */
	sa_path_cache_flush(c);
	assert_int_equal(sa_path_cache_insert_gen(c, &k, &p, 1, gen), -ESTALE);
	sa_path_cache_stats(c, &st);
	assert_int_equal(st.stale, 2);
	assert_int_equal(st.entries, 0);
	assert_int_equal(sa_path_cache_drop_gid(c, g1), 0);
	assert_int_equal(sa_path_cache_drop_gid(NULL, g1), 0);
	sa_path_cache_destroy(c);
}

/*
 * Many hits in a row, each a hit (the time a hit takes is printed, not
 * asserted: tests assert behaviour; bench/ measures speed).
 */
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
	for (unsigned i = 0; i < iters; i++) {
		n = 0;
		assert_int_equal(sa_path_cache_lookup(c, &k, out, 1, &n), 0);
		assert_int_equal(n, 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / iters;
	print_message("cache hit: %.0f ns\n", ns);
	sa_path_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hit_expiry_flush),
	    cmocka_unit_test(test_full_and_many),
	    cmocka_unit_test(test_drop_gid),
	    cmocka_unit_test(test_hit_speed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
