/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Service cache: the key ignores unmasked fields, hit and expiry after
 * the lifetime, no entry without records, the generation, and the drops:
 * a GID out of service, a Set or Delete of a record, a flush.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_wire.h"
#include "sa/service_cache.h"

static uint64_t now_ns;
static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return now_ns;
}

static void make(struct sa_service_key *k, uint64_t id)
{
	struct sa_service q = {.id = id, .lease = 99};

	q.data8[15] = 1;
	assert_int_equal(
	    sa_service_key_make(k, &q, SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_DATA8(15)), 0);
}

static void test_key(void **state)
{
	struct sa_service q = {.id = 5}, q2;
	struct sa_service_key k, k2;

	(void)state;
	assert_int_equal(sa_service_key_make(&k, &q, SA_SR_COMP_SERVICE_ID), 0);
	q2 = q;
	q2.lease = 7; /* not masked: the same query */
	strcpy(q2.name, "x");
	assert_int_equal(sa_service_key_make(&k2, &q2, SA_SR_COMP_SERVICE_ID), 0);
	assert_memory_equal(k.b, k2.b, SA_SERVICE_KEY_LEN);
	assert_int_equal(
	    sa_service_key_make(&k2, &q2, SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_LEASE), 0);
	assert_memory_not_equal(k.b, k2.b, SA_SERVICE_KEY_LEN);
	q2.id = 6;
	assert_int_equal(sa_service_key_make(&k2, &q2, SA_SR_COMP_SERVICE_ID), 0);
	assert_memory_not_equal(k.b, k2.b, SA_SERVICE_KEY_LEN);
}

static void test_hit_expiry_negative(void **state)
{
	struct sa_service_cache *c;
	struct sa_service_key k;
	struct sa_service r = {.id = 5, .pkey = 0x8001}, *out = NULL;
	struct sa_record_cache_stats st;
	unsigned n = 0;

	(void)state;
	now_ns = 1000;
	assert_int_equal(sa_service_cache_create(&c, 16, 500, fake_clock, NULL), 0);
	make(&k, 5);
	assert_int_equal(sa_service_cache_lookup(c, &k, &out, &n), -ENOENT);
	/* No record is no entry. */
	assert_int_equal(sa_service_cache_insert_gen(c, &k, &r, 0, sa_service_cache_gen(c)),
			 -EINVAL);
	assert_int_equal(sa_service_cache_insert_gen(c, &k, &r, 1, sa_service_cache_gen(c)), 0);
	assert_int_equal(sa_service_cache_lookup(c, &k, &out, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].pkey, 0x8001);
	free(out);
	now_ns += 499;
	assert_int_equal(sa_service_cache_peek(c, &k, &out, &n), 0);
	free(out);
	now_ns += 1; /* the lifetime is over */
	assert_int_equal(sa_service_cache_lookup(c, &k, &out, &n), -ENOENT);
	sa_service_cache_stats(c, &st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.expired, 1);
	assert_int_equal(st.entries, 0);
	sa_service_cache_destroy(c);
}

static void test_drops_and_gen(void **state)
{
	struct sa_service_cache *c;
	struct sa_service_key k5, k6;
	struct sa_service r5 = {.id = 5}, r6 = {.id = 6}, *out;
	uint8_t gid[16];
	uint64_t gen;
	unsigned n;

	(void)state;
	now_ns = 1000;
	memset(r5.gid, 0x55, 16);
	memset(r6.gid, 0x66, 16);
	assert_int_equal(sa_service_cache_create(&c, 16, 1000000, fake_clock, NULL), 0);
	make(&k5, 5);
	make(&k6, 6);
	gen = sa_service_cache_gen(c);
	assert_int_equal(sa_service_cache_insert_gen(c, &k5, &r5, 1, gen), 0);
	assert_int_equal(sa_service_cache_insert_gen(c, &k6, &r6, 1, gen), 0);

	/* A GID out of service: only the answer with a record there. */
	memset(gid, 0x77, 16);
	assert_int_equal(sa_service_cache_drop_gid(c, gid), 0);
	memset(gid, 0x55, 16);
	assert_int_equal(sa_service_cache_drop_gid(c, gid), 1);
	assert_int_equal(sa_service_cache_lookup(c, &k5, &out, &n), -ENOENT);
	assert_int_equal(sa_service_cache_lookup(c, &k6, &out, &n), 0);
	free(out);
	/* An answer asked before the drop is stale. */
	assert_int_equal(sa_service_cache_insert_gen(c, &k5, &r5, 1, gen), -ESTALE);

	/* A Set or Delete of ServiceID 6 drops the query for 6, not 5's. */
	gen = sa_service_cache_gen(c);
	assert_int_equal(sa_service_cache_insert_gen(c, &k5, &r5, 1, gen), 0);
	assert_int_equal(sa_service_cache_drop_record(c, &r6), 1);
	assert_int_equal(sa_service_cache_lookup(c, &k6, &out, &n), -ENOENT);
	assert_int_equal(sa_service_cache_lookup(c, &k5, &out, &n), 0);
	free(out);

	/*
	 * Answers in flight across drops: refused only where the drop would
	 * have picked them (the GID 0x55 dropped above is logged too).
	 */
	gen = sa_service_cache_gen(c);
	assert_int_equal(sa_service_cache_drop_record(c, &r6), 0);
	assert_int_equal(sa_service_cache_insert_gen(c, &k5, &r5, 1, gen), 0);
	assert_int_equal(sa_service_cache_insert_gen(c, &k6, &r6, 1, gen), -ESTALE);
	gen = sa_service_cache_gen(c);
	memset(gid, 0x55, 16);
	sa_service_cache_drop_gid(c, gid);
	assert_int_equal(sa_service_cache_insert_gen(c, &k6, &r6, 1, gen), 0);
	assert_int_equal(sa_service_cache_insert_gen(c, &k5, &r5, 1, gen), -ESTALE);
	/* Past the drop log (8), and after a flush: every one is refused. */
	gen = sa_service_cache_gen(c);
	for (int i = 0; i < 9; i++)
		sa_service_cache_drop_record(c, &r6);
	assert_int_equal(sa_service_cache_insert_gen(c, &k5, &r5, 1, gen), -ESTALE);
	gen = sa_service_cache_gen(c);
	sa_service_cache_flush(c);
	assert_int_equal(sa_service_cache_insert_gen(c, &k5, &r5, 1, gen), -ESTALE);
	assert_int_equal(sa_service_cache_lookup(c, &k5, &out, &n), -ENOENT);
	sa_service_cache_destroy(c);
}

/* A query by name: a Set or Delete of another name of its ServiceID leaves it. */
static void test_drop_by_name(void **state)
{
	struct sa_service_cache *c;
	struct sa_service_key ka;
	struct sa_service a = {.id = 9}, b = {.id = 9}, *out;
	uint64_t gen;
	unsigned n;

	(void)state;
	now_ns = 1000;
	strcpy(a.name, "madcm:ip:198.18.0.1");
	strcpy(b.name, "madcm:ip:198.18.0.4");
	assert_int_equal(sa_service_cache_create(&c, 16, 1000000, fake_clock, NULL), 0);
	assert_int_equal(
	    sa_service_key_make(&ka, &a, SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_NAME), 0);
	gen = sa_service_cache_gen(c);
	assert_int_equal(sa_service_cache_drop_record(c, &b), 0);
	assert_int_equal(sa_service_cache_insert_gen(c, &ka, &a, 1, gen), 0);
	assert_int_equal(sa_service_cache_drop_record(c, &b), 0);
	assert_int_equal(sa_service_cache_lookup(c, &ka, &out, &n), 0);
	free(out);
	assert_int_equal(sa_service_cache_drop_record(c, &a), 1);
	sa_service_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_key),
	    cmocka_unit_test(test_hit_expiry_negative),
	    cmocka_unit_test(test_drops_and_gen),
	    cmocka_unit_test(test_drop_by_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
