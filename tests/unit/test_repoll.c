/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * repoll_create/ctl/wait (lib/repoll.c) without a fabric: epoll's errors,
 * timeouts 0 and -1, pipes next to an idle rsocket (fake verbs), a
 * short events array, EPOLLONESHOT, and a wait woken by a repoll_ctl or an
 * rclose of its set from another thread.  The rsockets moving data are
 * tests/integration/repoll.sh's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include <cmocka.h>

#include <rdma/rsocket.h>

#include "tests/unit/fake_verbs.h"
#include "tests/unit/thread_asleep.h"

#define assert_errno(call, e)                                                                      \
	do {                                                                                       \
		errno = 0;                                                                         \
		assert_int_equal((long)(call), -1);                                                \
		assert_int_equal(errno, (e));                                                      \
	} while (0)

static struct epoll_event ev_of(uint32_t events, uint64_t u64)
{
	struct epoll_event ev = {.events = events};

	ev.data.u64 = u64;
	return ev;
}

static void test_errors(void **state)
{
	struct epoll_event ev = ev_of(EPOLLIN, 1), out[2];
	int ep, ep2, p[2], file;
	char path[] = "/tmp/test_repoll.XXXXXX";

	(void)state;
	assert_errno(repoll_create(0x40), EINVAL);
	ep = repoll_create(EPOLL_CLOEXEC);
	assert_true(ep >= 0);
	assert_true(fcntl(ep, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(pipe(p), 0);
	/* Not a set: a plain fd says EINVAL, a closed or negative one EBADF. */
	assert_errno(repoll_ctl(p[0], EPOLL_CTL_ADD, p[1], &ev), EINVAL);
	assert_errno(repoll_wait(p[0], out, 2, 0), EINVAL);
	assert_errno(repoll_ctl(-1, EPOLL_CTL_ADD, p[0], &ev), EBADF);
	assert_errno(repoll_wait(-1, out, 2, 0), EBADF);
	/* Bad targets, ops, masks and arguments. */
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, -1, &ev), EBADF);
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, 100000, &ev), EBADF);
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	assert_errno(repoll_ctl(ep, 42, p[0], &ev), EINVAL);
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, p[0], NULL), EFAULT);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT;
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EINVAL);
	ev.events = 1u << 20;
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EINVAL);
	file = mkstemp(path);
	assert_true(file >= 0);
	unlink(path);
	ev.events = EPOLLIN;
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, file, &ev), EPERM);
	/* A set in a set. */
	ep2 = repoll_create(0);
	assert_true(ep2 >= 0);
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, ep2, &ev), EINVAL);
	/* ENOENT and EEXIST as epoll. */
	assert_errno(repoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), ENOENT);
	assert_errno(repoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	assert_errno(repoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	assert_errno(repoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), EINVAL);
	assert_errno(repoll_wait(ep, out, 0, 0), EINVAL);
	assert_errno(repoll_wait(ep, out, -1, 0), EINVAL);
	assert_errno(repoll_wait(ep, NULL, 2, 0), EFAULT);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), 0);
	assert_errno(repoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);
	/* rclose frees a set; afterwards its number is no set. */
	assert_int_equal(rclose(ep2), 0);
	assert_int_equal(rclose(ep), 0);
	assert_errno(repoll_wait(ep, out, 2, 0), EBADF);
	close(file);
	close(p[0]);
	close(p[1]);
}

/* Pipes next to an idle rsocket; timeouts 0, > 0 and -1. */
static void test_mixed(void **state)
{
	struct epoll_event ev, out[4];
	int ep, s, a[2], b[2];
	char c;

	(void)state;
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	ep = repoll_create(0);
	assert_true(ep >= 0);
	ev = ev_of(EPOLLIN | EPOLLOUT, 10);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_ADD, s, &ev), 0);
	ev = ev_of(EPOLLIN, 20);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_ADD, a[0], &ev), 0);
	ev = ev_of(EPOLLIN, 30);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_ADD, b[0], &ev), 0);
	/* An empty set and an idle one: nothing, at once and after a wait. */
	assert_int_equal(repoll_wait(ep, out, 4, 0), 0);
	assert_int_equal(repoll_wait(ep, out, 4, 20), 0);
	/* One pipe readable: only it, with its data. */
	assert_int_equal(write(a[1], "x", 1), 1);
	assert_int_equal(repoll_wait(ep, out, 4, -1), 1);
	assert_int_equal(out[0].events, EPOLLIN);
	assert_int_equal(out[0].data.u64, 20);
	/* Level-triggered: still there, also with EPOLLET. */
	ev = ev_of(EPOLLIN | EPOLLET, 21);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_MOD, a[0], &ev), 0);
	assert_int_equal(repoll_wait(ep, out, 4, 0), 1);
	assert_int_equal(out[0].data.u64, 21);
	/* Both pipes, one slot: the next call gets the other one. */
	assert_int_equal(write(b[1], "y", 1), 1);
	assert_int_equal(repoll_wait(ep, out, 1, -1), 1);
	{
		uint64_t first = out[0].data.u64;

		assert_int_equal(repoll_wait(ep, out, 1, -1), 1);
		assert_true(out[0].data.u64 != first);
	}
	assert_int_equal(repoll_wait(ep, out, 4, 0), 2);
	/* Closed writer: EPOLLHUP, though not asked for. */
	assert_int_equal(read(b[0], &c, 1), 1);
	close(b[1]);
	assert_int_equal(repoll_wait(ep, out, 4, 0), 2);
	for (int i = 0; i < 2; i++)
		if (out[i].data.u64 == 30)
			assert_int_equal(out[i].events, EPOLLHUP);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_DEL, b[0], NULL), 0);
	/* EPOLLONESHOT: one report, then silent until EPOLL_CTL_MOD. */
	ev = ev_of(EPOLLIN | EPOLLONESHOT, 22);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_MOD, a[0], &ev), 0);
	assert_int_equal(repoll_wait(ep, out, 4, 0), 1);
	assert_int_equal(repoll_wait(ep, out, 4, 0), 0);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_MOD, a[0], &ev), 0);
	assert_int_equal(repoll_wait(ep, out, 4, 0), 1);
	/* A closed fd left in the set is not reported. */
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_DEL, a[0], NULL), 0);
	ev = ev_of(EPOLLIN, 31);
	assert_int_equal(repoll_ctl(ep, EPOLL_CTL_ADD, b[0], &ev), 0);
	close(b[0]);
	assert_int_equal(repoll_wait(ep, out, 4, 0), 0);
	assert_int_equal(rclose(ep), 0);
	assert_int_equal(rclose(s), 0);
	close(a[0]);
	close(a[1]);
}

struct waker {
	int ep, fd;
	bool close_set;
	volatile pid_t main_tid; /* the thread that waits */
};

/* Waits until the main thread sleeps in repoll_wait, then acts on the set. */
static void *waker_fn(void *arg)
{
	struct waker *w = arg;
	struct epoll_event ev = ev_of(EPOLLIN, 77);

	/* Asleep in it, seen, not guessed: a loaded machine may be slow to get there. */
	if (!thread_asleep_wait(&w->main_tid))
		fprintf(stderr, "the main thread never slept in repoll_wait\n");
	if (w->close_set)
		rclose(w->ep);
	else
		repoll_ctl(w->ep, EPOLL_CTL_ADD, w->fd, &ev);
	return NULL;
}

/* A wait with no timeout sees a ready fd added by another thread. */
static void test_wake_by_ctl(void **state)
{
	struct epoll_event out[2];
	struct waker w;
	pthread_t t;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	w.ep = repoll_create(0);
	w.fd = p[0];
	w.close_set = false;
	w.main_tid = (pid_t)syscall(SYS_gettid);
	assert_true(w.ep >= 0);
	assert_int_equal(pthread_create(&t, NULL, waker_fn, &w), 0);
	assert_int_equal(repoll_wait(w.ep, out, 2, -1), 1);
	assert_int_equal(out[0].data.u64, 77);
	pthread_join(t, NULL);
	assert_int_equal(rclose(w.ep), 0);
	close(p[0]);
	close(p[1]);
}

/* An rclose of the set ends a wait under way (with 0) instead of hanging. */
static void test_wake_by_close(void **state)
{
	struct epoll_event out[2];
	struct waker w = {.close_set = true, .main_tid = (pid_t)syscall(SYS_gettid)};
	pthread_t t;

	(void)state;
	w.ep = repoll_create(0);
	assert_true(w.ep >= 0);
	assert_int_equal(pthread_create(&t, NULL, waker_fn, &w), 0);
	assert_int_equal(repoll_wait(w.ep, out, 2, -1), 0);
	pthread_join(t, NULL);
	assert_false(fcntl(w.ep, F_GETFD) >= 0 && repoll_wait(w.ep, out, 2, 0) >= 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_mixed),
	    cmocka_unit_test(test_wake_by_ctl),
	    cmocka_unit_test(test_wake_by_close),
	};

	return cmocka_run_group_tests(tests, fake_cma_group_setup, fake_cma_group_teardown);
}
