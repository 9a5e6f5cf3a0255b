/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM engine identity and scale: unique comm IDs even from a bad random
 * source, bounded tables (REJ "no resources", -ENOMEM), a thousand
 * connections through a lossy network, IDs from a test's random source,
 * the counters and the connection dump, and hostile input that must not
 * crash the engine.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_wire.h"
#include "mad/random.h"
#include "tests/unit/cm_harness.h"

static void test_table_full(void **state)
{
	struct cm_connect_cmd cmd;
	const struct cm_event *ev;
	uint32_t id;

	(void)state;
	cmh_max_conns[A] = 3;
	cmh_max_conns[B] = 2;
	cmh_init(&H);
	assert_int_not_equal(cmh_connect(&H, 0x1001), 0);
	assert_int_not_equal(cmh_connect(&H, 0x1002), 0);
	/* B is full: the third REQ is rejected "no resources". */
	id = cmh_connect(&H, 0x1003);
	ev = cmh_event(&H, A, CM_EV_REJ_RCVD);
	assert_non_null(ev);
	assert_int_equal(ev->id, id);
	assert_int_equal(ev->rej.reason, CM_REJ_NO_RESOURCES);
	/* A has room for one more (the rejected one is gone), then -ENOMEM. */
	H.dead[B] = true;
	assert_int_not_equal(cmh_connect(&H, 0x1004), 0);
	cmh_connect_cmd(&H, &cmd, 0x1005);
	assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &id), -ENOMEM);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 3);
	{
		struct cm_stat_counters s;

		cm_stat_get(H.n[B].e, &s);
		assert_int_equal(s.table_full, 1);
	}
}

static uint32_t constant_random(void *ctx)
{
	(void)ctx;
	return 7;
}

static int nop_send(void *ctx, const struct mad_addr *to, const void *mad, size_t len)
{
	(void)ctx, (void)to, (void)mad, (void)len;
	return 0;
}

/* IDs stay unique and non-zero even when the random source repeats itself. */
static void test_unique_ids(void **state)
{
	static const struct cm_engine_ops ops = {nop_send, NULL};
	struct mad_timer_heap th;
	struct cm_engine_config cfg = {
	    .ca_guid = 1, .timers = &th, .ops = &ops, .random32 = constant_random};
	struct cm_connect_cmd cmd;
	struct cm_engine *e;
	uint32_t ids[100];

	(void)state;
	mad_timer_heap_init(&th, NULL, NULL);
	assert_int_equal(cm_engine_create(&cfg, &e), 0);
	cmh_connect_cmd(&H, &cmd, 1);
	for (int i = 0; i < 100; i++) {
		cmd.qpn = (uint32_t)(i + 1);
		assert_int_equal(cm_engine_connect(e, &cmd, &ids[i]), 0);
		assert_int_not_equal(ids[i], 0);
		for (int k = 0; k < i; k++)
			assert_int_not_equal(ids[i], ids[k]);
	}
	cm_engine_destroy(e);
	mad_timer_heap_destroy(&th);
	/* bad configurations */
	assert_int_equal(cm_engine_create(NULL, &e), -EINVAL);
	cfg.ops = NULL;
	assert_int_equal(cm_engine_create(&cfg, &e), -EINVAL);
}

/* A source of the same word: the engine's IDs are then known. */
static void word_source(void *arg, void *buf, size_t n)
{
	for (size_t i = 0; i + sizeof(uint32_t) <= n; i += sizeof(uint32_t))
		memcpy((uint8_t *)buf + i, arg, sizeof(uint32_t));
}

/*
 * Without cfg.random32 the IDs come from mad/random.h: a test's source
 * once set, even when the engine holds words drawn before (it draws 64 at
 * a time), and getrandom(2) again once reset.
 */
static void test_ids_from_random_source(void **state)
{
	static const struct cm_engine_ops ops = {nop_send, NULL};
	struct mad_timer_heap th;
	struct cm_engine_config cfg = {.ca_guid = 1, .timers = &th, .ops = &ops};
	struct cm_engine *e;
	uint32_t word = 0x12345678, id;

	(void)state;
	mad_timer_heap_init(&th, NULL, NULL);
	assert_int_equal(cm_engine_create(&cfg, &e), 0);
	assert_int_equal(cm_engine_reserve_id(e, &id), 0); /* from getrandom */
	mad_random_set_source(word_source, &word);
	assert_int_equal(cm_engine_reserve_id(e, &id), 0);
	assert_int_equal(id, 0x12345678);
	word = 0x9abcdef0;
	mad_random_set_source(word_source, &word); /* a restart: the cache goes */
	assert_int_equal(cm_engine_reserve_id(e, &id), 0);
	assert_int_equal(id, 0x9abcdef0);
	mad_random_set_source(NULL, NULL);
	assert_int_equal(cm_engine_reserve_id(e, &id), 0);
	assert_int_not_equal(id, 0x9abcdef0);
	cm_engine_destroy(e);
	mad_timer_heap_destroy(&th);
}

/*
 * Reserved IDs (what madcmd grants its programs ahead): never handed out
 * again while reserved, usable once by cm_engine_connect_as, refused when
 * not reserved; the set survives growth and many deletions; they hold
 * their place in the table.
 */
static void test_reserved_ids(void **state)
{
	enum { N = 3000 };
	static const struct cm_engine_ops ops = {nop_send, NULL};
	static uint32_t res[N];
	static bool live[N];
	struct mad_timer_heap th;
	struct cm_engine_config cfg = {
	    .ca_guid = 1, .timers = &th, .ops = &ops, .max_conns = 1u << 20};
	struct cm_connect_cmd cmd;
	struct cm_engine *e;
	uint32_t id, qpn = 1;

	(void)state;
	mad_timer_heap_init(&th, NULL, NULL);
	assert_int_equal(cm_engine_create(&cfg, &e), 0);
	cmh_connect_cmd(&H, &cmd, 1);
	srand(7);
	/* Rounds of reserve all, drop a random half, reserve again: all kept. */
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < N; i++)
			if (!live[i]) {
				assert_int_equal(cm_engine_reserve_id(e, &res[i]), 0);
				live[i] = true;
			}
		for (int i = 0; i < N; i++)
			if (rand() % 2) {
				assert_int_equal(cm_engine_unreserve_id(e, res[i]), 0);
				assert_int_equal(cm_engine_unreserve_id(e, res[i]), -EINVAL);
				live[i] = false;
			}
	}
	/* Every live one connects once under its own ID; fresh IDs avoid them. */
	for (int i = 0; i < N; i++) {
		if (!live[i])
			continue;
		cmd.qpn = qpn++;
		id = res[i];
		assert_int_equal(cm_engine_connect_as(e, &cmd, &id), 0);
		assert_int_equal(id, res[i]);
		id = res[i];
		cmd.qpn = qpn++;
		assert_int_equal(cm_engine_connect_as(e, &cmd, &id), -EINVAL);
		cmd.qpn = qpn++;
		assert_int_equal(cm_engine_connect(e, &cmd, &id), 0);
		for (int k = 0; k < N; k++)
			if (live[k])
				assert_int_not_equal(id, res[k]);
	}
	cm_engine_destroy(e);

	/* A reserved ID holds its place: a table of 2 with one reserved takes one more. */
	cfg.max_conns = 2;
	assert_int_equal(cm_engine_create(&cfg, &e), 0);
	assert_int_equal(cm_engine_reserve_id(e, &res[0]), 0);
	cmd.qpn = qpn++;
	assert_int_equal(cm_engine_connect(e, &cmd, &id), 0);
	cmd.qpn = qpn++;
	assert_int_equal(cm_engine_connect(e, &cmd, &id), -ENOMEM);
	assert_int_equal(cm_engine_reserve_id(e, &id), -ENOMEM);
	id = res[0];
	cmd.qpn = qpn++;
	assert_int_equal(cm_engine_connect_as(e, &cmd, &id), 0);
	cm_engine_destroy(e);
	mad_timer_heap_destroy(&th);
}

/* A thousand connections with 20% of all MADs lost: all connect, all leave. */
static void test_many_lossy(void **state)
{
	enum { N = 1000 };
	static uint32_t ids[N];
	struct cm_stat_counters s;
	int est = 0;

	(void)state;
	H.loss_pct = 20;
	for (int i = 0; i < N; i++) {
		struct cm_connect_cmd cmd;

		cmh_connect_cmd(&H, &cmd, 0x10000 + (uint32_t)i);
		cmd.max_cm_retries = 15;
		assert_int_equal(cm_engine_connect(H.n[A].e, &cmd, &ids[i]), 0);
	}
	cmh_deliver(&H);
	cmh_run_timers(&H, SEC / 2, 200 * SEC);
	for (int i = 0; i < N; i++)
		est += cmh_state(&H, A, ids[i]) == CM_ST_ESTABLISHED;
	assert_int_equal(est, N);
	/* Passive ends that lost their RTU were established by the REP retries. */
	assert_int_equal(cmh_count(&H, B, CM_EV_REQ_RCVD), N);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), N);
	cm_stat_get(H.n[A].e, &s);
	assert_true(s.retried[CM_STAT_REQ] > 0);

	for (int i = 0; i < N; i++)
		assert_int_equal(cm_engine_disconnect(H.n[A].e, ids[i], NULL, 0), 0);
	cmh_deliver(&H);
	cmh_run_timers(&H, SEC / 2, 200 * SEC);
	assert_int_equal(cm_engine_conn_count(H.n[A].e), 0);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), 0);
	assert_int_equal(cmh_count(&H, A, CM_EV_TIMEWAIT_EXIT), N);
	assert_int_equal(cmh_count(&H, B, CM_EV_TIMEWAIT_EXIT), N);
}

static void test_stats_dump(void **state)
{
	struct cm_stat_conn conns[4];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	char path[] = "/tmp/cm_stat_testXXXXXX";
	int fd;

	(void)state;
	cmh_connect(&H, 0x1001);
	cmh_connect(&H, 0x1002);
	assert_int_equal(cm_stat_conns(H.n[B].e, conns, 4), 2);
	assert_string_equal(conns[0].state_name, "ESTABLISHED");
	assert_int_equal(conns[0].active, 0);
	assert_int_equal(cm_stat_conns(H.n[B].e, conns, 1), 2);
	f = open_memstream(&buf, &len);
	assert_int_equal(cm_stat_write(H.n[A].e, f, 100), 0);
	fclose(f);
	assert_non_null(strstr(buf, "msg REQ 2 0 0 0 0\n"));
	assert_non_null(strstr(buf, "msg REP 0 2 0 0 0\n"));
	assert_non_null(strstr(buf, " ESTABLISHED active 0x001001 0x002000 "));
	free(buf);
	assert_string_equal(cm_stat_msg_name(CM_STAT_SIDR_REP), "SIDR_REP");

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(cm_stat_publish(H.n[A].e, path), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	fclose(f);
	unlink(path);
	cm_stat_reset(H.n[A].e);
	{
		struct cm_stat_counters s;

		cm_stat_get(H.n[A].e, &s);
		assert_int_equal(s.sent[CM_STAT_REQ], 0);
		assert_int_equal(s.conns_live, 2);
	}
}

/*
 * Hostile input: valid headers with random bodies of every attribute, and
 * random mutations of real messages, to both sides of live connections.
 */
static void test_random_input(void **state)
{
	static const uint16_t attrs[] = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
					 0x16, 0x17, 0x18, 0x19, 0x1a, 0x01};
	uint64_t rng = 99;
	uint8_t mad[256];

	(void)state;
	for (int i = 0; i < 20; i++)
		cmh_connect(&H, 0x1000 + (uint32_t)i);
	for (int it = 0; it < 20000; it++) {
		int to = it & 1;

		if (it % 3 == 0 && H.nlog) {
			memcpy(mad, H.log[(it / 3) % H.nlog].mad, 256);
		} else {
			cmh_mad(mad, attrs[it % 12], 0, 0);
		}
		for (int k = 0; k < 8; k++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			mad[24 + (rng >> 33) % 232] = (uint8_t)(rng >> 20);
		}
		cmh_inject(&H, to, mad);
		if (it % 100 == 0)
			cmh_advance(&H, SEC);
		H.nlog = H.nlog > 400 ? 0 : H.nlog;
		for (int n = 0; n < 2; n++)
			H.n[n].nev = H.n[n].nev > 3000 ? 0 : H.n[n].nev;
	}
	cmh_run_timers(&H, SEC, 1000 * SEC);
}

/* Tables grow past their first size (1024 buckets) and keep every entry. */
static void test_tables_grow(void **state)
{
	enum { N = 2000 };
	static uint32_t ids[N];
	struct cm_stat_conn one;

	(void)state;
	cmh_max_conns[A] = cmh_max_conns[B] = 50000;
	cmh_init(&H);
	for (int i = 0; i < N; i++)
		ids[i] = cmh_connect(&H, 0x10000 + (uint32_t)i);
	for (int i = 0; i < N; i++)
		assert_int_equal(cmh_state(&H, A, ids[i]), CM_ST_ESTABLISHED);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), N);
	assert_int_equal(cm_stat_conns(H.n[B].e, &one, 1), N);
	/* duplicate detection still finds the old REQs */
	assert_int_equal(cmh_inject(&H, B, cmh_last_mad(&H, A, CM_ATTR_REQ)), 0);
	assert_int_equal(cm_engine_conn_count(H.n[B].e), N);
	H.n[A].nev = H.n[B].nev = 0;
	for (int i = 0; i < N; i++)
		assert_int_equal(cm_engine_disconnect(H.n[A].e, ids[i], NULL, 0), 0);
	cmh_deliver(&H);
	assert_int_equal(cmh_count(&H, A, CM_EV_DREP_RCVD), N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_table_full, cmh_teardown),
	    cmocka_unit_test_setup_teardown(test_unique_ids, cmh_setup, cmh_teardown),
	    cmocka_unit_test(test_ids_from_random_source),
	    cmocka_unit_test_teardown(test_tables_grow, cmh_teardown),
	    cmocka_unit_test_setup_teardown(test_reserved_ids, cmh_setup, cmh_teardown),
	    cmocka_unit_test_setup_teardown(test_many_lossy, cmh_setup, cmh_teardown),
	    cmocka_unit_test_setup_teardown(test_stats_dump, cmh_setup, cmh_teardown),
	    cmocka_unit_test_setup_teardown(test_random_input, cmh_setup, cmh_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
