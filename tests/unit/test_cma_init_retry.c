/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * lib/'s first-use set-up is tried again after a failure, as rdma-core's
 * ucma_init is: a call made while there was no device, or while a set-up
 * step failed (no file descriptor left: the progress loop cannot be made),
 * fails with that errno, and a later call, once the cause is gone, works.
 * Its own process: lib/ initialises once per process.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "lib/cma.h"
#include "tests/unit/fake_verbs.h"

static void test_init_retried(void **state)
{
	struct rdma_event_channel *ch;
	struct rlimit old, low;
	int ndevs, fd;

	(void)state;
	assert_int_equal(fake_cma_setup(), 0);

	/* No device yet: ENODEV, and again while there is none. */
	ndevs = fake_verbs.ndevs;
	fake_verbs.ndevs = 0;
	assert_null(rdma_create_event_channel());
	assert_int_equal(errno, ENODEV);
	assert_null(rdma_create_event_channel());
	assert_int_equal(errno, ENODEV);
	fake_verbs.ndevs = ndevs;

	/* Devices, but no fd for the loop: the set-up fails half-way, undone. */
	fd = dup(0);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)fd; /* every new fd fails with EMFILE */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	ch = rdma_create_event_channel();
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_null(ch);
	assert_int_equal(errno, EMFILE);

	/* The cause gone, the next call sets up and works. */
	ch = rdma_create_event_channel();
	assert_non_null(ch);
	rdma_destroy_event_channel(ch);
	fake_cma_teardown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_retried),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
