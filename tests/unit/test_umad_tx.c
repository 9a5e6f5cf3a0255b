/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The umad write queue (mad/umad_tx.h) on a fake write: order, a queue
 * call that never waits for a sleeping write, the bound, failed writes,
 * a destroy that writes what is queued first, a flush with a time bound
 * (what the library's exit hook uses); threadless, writes only
 * in umad_tx_write_out(), by one thread at a time, none left behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "mad/umad_tx.h"

#define HDR 64

struct fake {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool hold;   /* writes wait while set (a write asleep in the kernel) */
	bool inside; /* a write has started and waits on hold */
	int rc;	     /* what each write returns */
	int seen[1024];
	int n;
	int portid, agent, len, timeout;
};

static int fake_write(void *ctx, int portid, int agent, void *umad, int len, int timeout_ms)
{
	struct fake *f = ctx;
	const unsigned char *b = umad;

	pthread_mutex_lock(&f->m);
	f->inside = true;
	pthread_cond_broadcast(&f->cv);
	while (f->hold)
		pthread_cond_wait(&f->cv, &f->m);
	if (f->n < 1024)
		f->seen[f->n] = b[HDR] | b[HDR + 1] << 8;
	f->n++;
	f->portid = portid;
	f->agent = agent;
	f->len = len;
	f->timeout = timeout_ms;
	pthread_mutex_unlock(&f->m);
	return f->rc;
}

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->m, NULL);
	pthread_cond_init(&f->cv, NULL);
}

static void fake_hold(struct fake *f, bool hold)
{
	pthread_mutex_lock(&f->m);
	f->hold = hold;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->m);
}

static void wait_inside(struct fake *f)
{
	pthread_mutex_lock(&f->m);
	while (!f->inside)
		pthread_cond_wait(&f->cv, &f->m);
	pthread_mutex_unlock(&f->m);
}

static struct umad_tx *make_mode(struct fake *f, unsigned max, bool threadless)
{
	struct umad_tx_params p = {0};
	struct umad_tx *tx = NULL;

	p.threadless = threadless;
	p.portid = 7;
	p.hdr_size = HDR;
	p.max_queued = max;
	p.write = fake_write;
	p.ctx = f;
	assert_int_equal(umad_tx_create(&tx, &p), 0);
	return tx;
}

static struct umad_tx *make(struct fake *f, unsigned max)
{
	return make_mode(f, max, false);
}

static void expect_counters(struct umad_tx *tx, uint64_t queued, uint64_t written, uint64_t errors,
			    uint64_t full)
{
	struct umad_tx_counters c;

	umad_tx_counters(tx, &c);
	assert_int_equal(c.queued, queued);
	assert_int_equal(c.written, written);
	assert_int_equal(c.errors, errors);
	assert_int_equal(c.full, full);
}

static int queue(struct umad_tx *tx, int seq)
{
	unsigned char b[HDR + 256] = {0};

	b[HDR] = (unsigned char)seq;
	b[HDR + 1] = (unsigned char)(seq >> 8);
	return umad_tx_queue(tx, 3, b, 256, 0);
}

static void test_in_order(void **state)
{
	struct fake f;
	struct umad_tx *tx;
	unsigned char b[HDR + 100] = {0};

	(void)state;
	fake_init(&f);
	tx = make(&f, 0);
	for (int i = 0; i < 500; i++) /* past the first ring: it grows */
		assert_int_equal(queue(tx, i), 0);
	umad_tx_flush(tx);
	assert_int_equal(f.n, 500);
	for (int i = 0; i < 500; i++)
		assert_int_equal(f.seen[i], i);
	assert_int_equal(f.portid, 7);
	assert_int_equal(f.agent, 3);
	assert_int_equal(umad_tx_queue(tx, 5, b, 100, 20), 0);
	umad_tx_flush(tx);
	assert_int_equal(f.agent, 5);
	assert_int_equal(f.len, 100);
	assert_int_equal(f.timeout, 20);
	expect_counters(tx, 501, 501, 0, 0);
	umad_tx_destroy(tx);
}

/* A write that sleeps does not hold up the caller, up to the bound. */
static void test_never_waits_and_bound(void **state)
{
	struct fake f;
	struct umad_tx *tx;

	(void)state;
	fake_init(&f);
	f.hold = true;
	tx = make(&f, 4);
	assert_int_equal(queue(tx, 0), 0);
	wait_inside(&f); /* the thread took MAD 0 and sleeps in its write */
	for (int i = 1; i <= 4; i++)
		assert_int_equal(queue(tx, i), 0);
	assert_int_equal(queue(tx, 5), -ENOBUFS);
	fake_hold(&f, false);
	umad_tx_flush(tx);
	assert_int_equal(f.n, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(f.seen[i], i);
	expect_counters(tx, 5, 5, 0, 1);
	umad_tx_destroy(tx);
}

static void test_errors_and_bad_input(void **state)
{
	struct fake f;
	struct umad_tx *tx;
	unsigned char b[HDR + 300] = {0};

	(void)state;
	fake_init(&f);
	f.rc = -EIO;
	tx = make(&f, 0);
	assert_int_equal(queue(tx, 1), 0);
	assert_int_equal(queue(tx, 2), 0);
	assert_int_equal(umad_tx_queue(tx, 3, b, 257, 0), -EMSGSIZE);
	assert_int_equal(umad_tx_queue(tx, 3, NULL, 10, 0), -EINVAL);
	assert_int_equal(umad_tx_queue(tx, 3, b, 0, 0), -EINVAL);
	assert_int_equal(umad_tx_queue(NULL, 3, b, 10, 0), -EINVAL);
	umad_tx_flush(tx);
	expect_counters(tx, 2, 0, 2, 0);
	umad_tx_destroy(tx);
	assert_int_equal(umad_tx_create(NULL, NULL), -EINVAL);
}

/* Destroy writes what is queued (a REJ or DREQ sent as the port closes). */
static void test_destroy_drains(void **state)
{
	struct fake f;
	struct umad_tx *tx;

	(void)state;
	fake_init(&f);
	f.hold = true;
	tx = make(&f, 0);
	for (int i = 0; i < 50; i++)
		assert_int_equal(queue(tx, i), 0);
	wait_inside(&f);
	fake_hold(&f, false);
	umad_tx_destroy(tx);
	assert_int_equal(f.n, 50);
	assert_int_equal(f.seen[49], 49);
}

/*
 * A bounded flush: -ETIMEDOUT while a write sleeps, then 0 once the queue
 * is written; an empty queue (or none) is flushed at once.
 */
static void test_flush_timed(void **state)
{
	struct fake f;
	struct umad_tx *tx;

	(void)state;
	fake_init(&f);
	tx = make(&f, 0);
	assert_int_equal(umad_tx_flush_timed(tx, 0), 0);
	assert_int_equal(umad_tx_flush_timed(NULL, 10), 0);
	f.hold = true;
	for (int i = 0; i < 10; i++)
		assert_int_equal(queue(tx, i), 0);
	wait_inside(&f);
	assert_int_equal(umad_tx_flush_timed(tx, 20), -ETIMEDOUT);
	fake_hold(&f, false);
	assert_int_equal(umad_tx_flush_timed(tx, 60000), 0);
	assert_int_equal(f.n, 10);
	assert_int_equal(f.seen[9], 9);
	umad_tx_destroy(tx);
	/* Threadless: the flush writes them itself. */
	fake_init(&f);
	tx = make_mode(&f, 0, true);
	for (int i = 0; i < 5; i++)
		assert_int_equal(queue(tx, i), 0);
	assert_int_equal(umad_tx_flush_timed(tx, 60000), 0);
	assert_int_equal(f.n, 5);
	umad_tx_destroy(tx);
}

/* Threadless: nothing leaves before write_out(), then all of it, in order. */
static void test_threadless_in_order(void **state)
{
	struct fake f;
	struct umad_tx *tx;

	(void)state;
	fake_init(&f);
	tx = make_mode(&f, 0, true);
	assert_false(umad_tx_write_out(tx)); /* nothing queued */
	for (int i = 0; i < 300; i++)
		assert_int_equal(queue(tx, i), 0);
	assert_int_equal(f.n, 0);
	assert_true(umad_tx_write_out(tx));
	assert_int_equal(f.n, 300);
	for (int i = 0; i < 300; i++)
		assert_int_equal(f.seen[i], i);
	expect_counters(tx, 300, 300, 0, 0);
	assert_false(umad_tx_write_out(NULL));
	assert_int_equal(queue(tx, 300), 0);
	umad_tx_destroy(tx); /* writes it */
	assert_int_equal(f.n, 301);
}

struct writer {
	struct umad_tx *tx;
	bool wrote;
};

static void *write_out_thread(void *arg)
{
	struct writer *w = arg;

	w->wrote = umad_tx_write_out(w->tx);
	return NULL;
}

/*
 * A second thread's write_out() while the first sleeps in a write returns
 * at once, and what it queued is written by the first, after the first's.
 */
static void test_threadless_one_writer(void **state)
{
	struct fake f;
	struct writer w;
	pthread_t th;

	(void)state;
	fake_init(&f);
	f.hold = true;
	w.tx = make_mode(&f, 0, true);
	assert_int_equal(queue(w.tx, 0), 0);
	assert_int_equal(pthread_create(&th, NULL, write_out_thread, &w), 0);
	wait_inside(&f); /* the other thread writes MAD 0 and sleeps */
	assert_int_equal(queue(w.tx, 1), 0);
	assert_false(umad_tx_write_out(w.tx)); /* it is the writer */
	assert_int_equal(f.n, 0);
	fake_hold(&f, false);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(w.wrote);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.seen[0], 0);
	assert_int_equal(f.seen[1], 1);
	expect_counters(w.tx, 2, 2, 0, 0);
	umad_tx_destroy(w.tx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_in_order),
	    cmocka_unit_test(test_never_waits_and_bound),
	    cmocka_unit_test(test_errors_and_bad_input),
	    cmocka_unit_test(test_destroy_drains),
	    cmocka_unit_test(test_flush_timed),
	    cmocka_unit_test(test_threadless_in_order),
	    cmocka_unit_test(test_threadless_one_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
