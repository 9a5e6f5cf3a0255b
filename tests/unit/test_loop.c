/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The progress loop with its thread: mad_loop_call runs on the loop and
 * waits; posted commands run in order; a watched fd and a timer wake it;
 * a paused fd does not, and a watch added while it sleeps needs no
 * wake-up; without a thread, mad_loop_run_once drives the same code; the
 * release hook runs once a hold ends, on the thread that held the loop;
 * the fd set reports each fd by its tag and the turn-end hook can run in
 * the middle of a turn; a paused fd whose peer hung up stays quiet; an
 * exclusive watch leaves a datum to a thread waiting in a set of its own.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "mad/loop.h"
#include "tests/unit/thread_asleep.h"

static pthread_t ran_on;
static void record_thread(void *arg)
{
	(void)arg;
	ran_on = pthread_self();
}

struct seq_cmd {
	struct mad_loop_cmd cmd;
	int value;
};

static int seq[200], nseq;
static void seq_run(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	(void)l;
	seq[nseq++] = ((struct seq_cmd *)cmd)->value;
	free(cmd);
}

static void noop(void *arg)
{
	(void)arg;
}

static void test_call_and_order(void **state)
{
	struct mad_loop *l;

	(void)state;
	assert_int_equal(mad_loop_create(&l, NULL, NULL), 0);
	assert_int_equal(mad_loop_start(l), 0);
	assert_int_equal(mad_loop_start(l), 0); /* idempotent */
	assert_true(mad_loop_started(l));
	assert_false(mad_loop_owns(l));
	assert_int_equal(mad_loop_call(l, record_thread, NULL), 0);
	assert_false(pthread_equal(ran_on, pthread_self()));
	nseq = 0;
	for (int i = 0; i < 100; i++) {
		struct seq_cmd *c = calloc(1, sizeof(*c));

		c->cmd.run = seq_run;
		c->value = i;
		assert_int_equal(mad_loop_post(l, &c->cmd), 0);
	}
	assert_int_equal(mad_loop_call(l, noop, NULL), 0); /* after the 100 */
	assert_int_equal(nseq, 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(seq[i], i);
	assert_int_equal(mad_loop_post(l, NULL), -EINVAL);
	mad_loop_destroy(l);
}

static atomic_int fd_hits, timer_hits;
static void on_fd(struct mad_loop *l, int fd, void *arg)
{
	uint64_t v;

	(void)l;
	(void)arg;
	if (read(fd, &v, sizeof(v)) == sizeof(v))
		atomic_fetch_add(&fd_hits, 1);
}

static void on_timer(struct mad_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	atomic_fetch_add(&timer_hits, 1);
}

struct setup_args {
	struct mad_loop *l;
	int fd;
	struct mad_timer *t;
	int watch_rc, arm_rc;
};

static void setup_on_loop(void *arg)
{
	struct setup_args *a = arg;

	a->watch_rc = mad_loop_watch_fd(a->l, a->fd, on_fd, NULL);
	a->arm_rc = mad_timer_arm(mad_loop_timers(a->l), a->t, 5000000, on_timer, NULL);
}

static void test_fd_and_timer_wake_the_thread(void **state)
{
	struct mad_loop *l;
	struct mad_timer t = {0};
	struct setup_args a;
	uint64_t one = 1;
	int fd = eventfd(0, EFD_NONBLOCK);

	(void)state;
	assert_int_equal(mad_loop_create(&l, NULL, NULL), 0);
	assert_int_equal(mad_loop_start(l), 0);
	a.l = l;
	a.fd = fd;
	a.t = &t;
	assert_int_equal(mad_loop_call(l, setup_on_loop, &a), 0);
	/* -ENOMEM when an allocation failed (make check-oom): nothing to wait for. */
	assert_int_equal(a.watch_rc, 0);
	assert_int_equal(a.arm_rc, 0);
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	for (int i = 0; i < 12000 && (atomic_load(&fd_hits) < 1 || atomic_load(&timer_hits) < 1);
	     i++)
		usleep(5000);
	assert_int_equal(atomic_load(&fd_hits), 1);
	assert_int_equal(atomic_load(&timer_hits), 1);
	mad_loop_destroy(l);
	close(fd);
}

struct pause_args {
	struct mad_loop *l;
	int fd;
	bool pause;
	int rc;
};

static void watch_on_loop(void *arg)
{
	struct pause_args *a = arg;

	a->rc = mad_loop_watch_fd(a->l, a->fd, on_fd, NULL);
}

static void pause_on_loop(void *arg)
{
	struct pause_args *a = arg;

	a->rc = mad_loop_pause_fd(a->l, a->fd, a->pause);
}

static int pause_fd(struct pause_args *a, bool pause)
{
	a->pause = pause;
	assert_int_equal(mad_loop_call_here(a->l, pause_on_loop, a), 0);
	return a->rc;
}

/* Bounded generously (a minute): a loaded machine may run the loop late. */
static void wait_hits(int n)
{
	for (int i = 0; i < 12000 && atomic_load(&fd_hits) < n; i++)
		usleep(5000);
}

/* A paused fd does not wake the thread; resumed, it does (pauses nest). */
static void test_pause_fd(void **state)
{
	struct pause_args a;
	uint64_t one = 1;
	int fd = eventfd(0, EFD_NONBLOCK);

	(void)state;
	assert_int_equal(mad_loop_pause_fd(NULL, fd, true), -EINVAL);
	assert_int_equal(mad_loop_create(&a.l, NULL, NULL), 0);
	assert_int_equal(mad_loop_start(a.l), 0);
	a.fd = fd;
	assert_int_equal(pause_fd(&a, true), -ENOENT); /* not watched */
	assert_int_equal(mad_loop_call(a.l, watch_on_loop, &a), 0);
	assert_int_equal(a.rc, 0);
	assert_int_equal(pause_fd(&a, false), -EINVAL); /* not paused */
	atomic_store(&fd_hits, 0);
	assert_int_equal(pause_fd(&a, true), 0);
	assert_int_equal(pause_fd(&a, true), 0);
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	usleep(30000);
	assert_int_equal(atomic_load(&fd_hits), 0);
	assert_int_equal(pause_fd(&a, false), 0);
	usleep(30000);
	assert_int_equal(atomic_load(&fd_hits), 0); /* one pause left */
	/* Resumed while readable: that wakes the thread. */
	assert_int_equal(pause_fd(&a, false), 0);
	wait_hits(1);
	assert_int_equal(atomic_load(&fd_hits), 1);
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	wait_hits(2);
	assert_int_equal(atomic_load(&fd_hits), 2);
	mad_loop_destroy(a.l);
	close(fd);
}

static void exclusive_on_loop(void *arg)
{
	struct pause_args *a = arg;

	a->rc = mad_loop_exclusive_fd(a->l, a->fd);
}

static int exclusive_fd(struct pause_args *a)
{
	assert_int_equal(mad_loop_call_here(a->l, exclusive_on_loop, a), 0);
	return a->rc;
}

struct set_waiter {
	int epfd;
	atomic_int woken;
	volatile pid_t tid; /* set by the thread itself */
};

/* A thread of its own blocked in epoll_wait() on a set holding the fd exclusively. */
static void *wait_in_own_set(void *arg)
{
	struct set_waiter *w = arg;
	struct epoll_event ev;

	thread_asleep_self(&w->tid);
	if (epoll_wait(w->epfd, &ev, 1, 60000) == 1)
		atomic_store(&w->woken, 1);
	return NULL;
}

/*
 * An exclusive watch (mad_loop_exclusive_fd): the loop thread still runs
 * it when nobody else waits; a thread blocked on an epoll set of its own
 * that holds the fd exclusively, registered before, is woken instead of
 * the loop thread; pausing and resuming still work (by removal and
 * addition), and a resume while readable wakes the loop thread.
 */
static void test_exclusive_fd(void **state)
{
	struct pause_args a;
	struct set_waiter w = {0};
	struct epoll_event e = {.events = EPOLLIN | EPOLLEXCLUSIVE};
	uint64_t one = 1, v;
	pthread_t th;
	int fd = eventfd(0, EFD_NONBLOCK);
	unsigned t;

	(void)state;
	assert_int_equal(mad_loop_exclusive_fd(NULL, fd), -EINVAL);
	assert_int_equal(mad_loop_create(&a.l, NULL, NULL), 0);
	assert_int_equal(mad_loop_start(a.l), 0);
	a.fd = fd;
	assert_int_equal(exclusive_fd(&a), -ENOENT); /* not watched */
	assert_int_equal(mad_loop_call(a.l, watch_on_loop, &a), 0);
	assert_int_equal(exclusive_fd(&a), 0);
	atomic_store(&fd_hits, 0);
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	wait_hits(1);
	assert_int_equal(atomic_load(&fd_hits), 1);

	/* Another set first in the fd's queue, then the loop's again. */
	w.epfd = epoll_create1(0);
	assert_true(w.epfd >= 0);
	assert_int_equal(epoll_ctl(w.epfd, EPOLL_CTL_ADD, fd, &e), 0);
	assert_int_equal(exclusive_fd(&a), 0);
	/*
	 * The loop thread, awake at its idle tick when the write comes, may
	 * take it (as designed): then again, until the waiter's wake is its
	 * alone (the fd still unread), which it is when both sleep.
	 */
	for (t = 0; t < 20; t++) {
		atomic_store(&w.woken, 0);
		w.tid = 0;
		assert_int_equal(pthread_create(&th, NULL, wait_in_own_set, &w), 0);
		assert_true(thread_asleep_wait(&w.tid)); /* asleep in epoll_wait */
		assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(atomic_load(&w.woken), 1);
		if (read(fd, &v, sizeof(v)) == sizeof(v))
			break;
	}
	assert_true(t < 20);
	usleep(30000);
	/* The loop thread was not woken: only the tries it took counted. */
	assert_int_equal(atomic_load(&fd_hits), 1 + t);
	atomic_store(&fd_hits, 1);

	/* Nobody waits in the set now: the loop thread takes it. */
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	wait_hits(2);
	assert_int_equal(atomic_load(&fd_hits), 2);

	/* Paused and resumed, exclusive as it is. */
	assert_int_equal(pause_fd(&a, true), 0);
	assert_int_equal(exclusive_fd(&a), 0); /* paused: added back by the resume */
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	usleep(30000);
	assert_int_equal(atomic_load(&fd_hits), 2);
	assert_int_equal(pause_fd(&a, false), 0);
	wait_hits(3);
	assert_int_equal(atomic_load(&fd_hits), 3);
	mad_loop_destroy(a.l);
	close(w.epfd);
	close(fd);
}

static atomic_int other_hits;
static void on_fd_too(struct mad_loop *l, int fd, void *arg)
{
	(void)l;
	(void)fd;
	(void)arg;
	atomic_fetch_add(&other_hits, 1);
}

/* Two watches of one fd both run; removing one leaves the other. */
static void test_two_watches_one_fd(void **state)
{
	struct mad_loop *l;
	uint64_t one = 1;
	int fd = eventfd(0, EFD_NONBLOCK);

	(void)state;
	assert_int_equal(mad_loop_create(&l, NULL, NULL), 0);
	assert_int_equal(mad_loop_watch_fd(l, fd, on_fd_too, NULL), 0);
	assert_int_equal(mad_loop_watch_fd(l, fd, on_fd, NULL), 0);
	atomic_store(&fd_hits, 0);
	atomic_store(&other_hits, 0);
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	assert_int_equal(mad_loop_run_once(l, 100), 2);
	assert_int_equal(atomic_load(&fd_hits), 1);
	assert_int_equal(atomic_load(&other_hits), 1);
	mad_loop_unwatch_fd(l, fd); /* the first: on_fd_too */
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	assert_int_equal(mad_loop_run_once(l, 100), 1);
	assert_int_equal(atomic_load(&fd_hits), 2);
	assert_int_equal(atomic_load(&other_hits), 1);
	mad_loop_unwatch_fd(l, fd);
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	assert_int_equal(mad_loop_run_once(l, 0), 0);
	mad_loop_destroy(l);
	close(fd);
}

static void note_tid(void *arg)
{
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
}

/* Times the thread `tid` of this process slept and was woken. */
static long wakeups(pid_t tid)
{
	char path[64], line[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

static void unwatch_on_loop(void *arg)
{
	struct pause_args *a = arg;

	mad_loop_unwatch_fd(a->l, a->fd);
}

/*
 * A watch added, paused and resumed by another thread holding the loop
 * (mad_loop_call_here) reaches the sleeping thread without waking it, and
 * works.
 */
static void test_watch_without_wakeup(void **state)
{
	struct pause_args a;
	uint64_t one = 1;
	int fd = eventfd(0, EFD_NONBLOCK);
	bool quiet = false;
	pid_t tid;

	(void)state;
	assert_int_equal(mad_loop_create(&a.l, NULL, NULL), 0);
	assert_int_equal(mad_loop_start(a.l), 0);
	assert_int_equal(mad_loop_call(a.l, note_tid, &tid), 0);
	a.fd = fd;
	/* The thread also wakes once a second when idle: try a few times. */
	for (int i = 0; i < 3 && !quiet && wakeups(tid) >= 0; i++) {
		long before;

		if (i)
			assert_int_equal(mad_loop_call_here(a.l, unwatch_on_loop, &a), 0);
		usleep(20000);
		before = wakeups(tid);
		assert_int_equal(mad_loop_call_here(a.l, watch_on_loop, &a), 0);
		assert_int_equal(a.rc, 0);
		assert_int_equal(pause_fd(&a, true), 0);
		assert_int_equal(pause_fd(&a, false), 0);
		usleep(20000);
		quiet = wakeups(tid) == before;
	}
	if (wakeups(tid) >= 0) /* else no /proc to tell */
		assert_true(quiet);
	atomic_store(&fd_hits, 0);
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	wait_hits(1);
	assert_int_equal(atomic_load(&fd_hits), 1);
	mad_loop_destroy(a.l);
	close(fd);
}

static void test_without_thread(void **state)
{
	struct mad_loop *l;
	struct seq_cmd *c = calloc(1, sizeof(*c));

	(void)state;
	assert_int_equal(mad_loop_create(&l, NULL, NULL), 0);
	assert_true(mad_loop_owns(l));
	nseq = 0;
	c->cmd.run = seq_run;
	c->value = 7;
	assert_int_equal(mad_loop_post(l, &c->cmd), 0);
	assert_int_equal(mad_loop_run_once(l, 0), 1);
	assert_int_equal(nseq, 1);
	assert_int_equal(mad_loop_call(l, record_thread, NULL), 0); /* inline */
	assert_true(pthread_equal(ran_on, pthread_self()));
	/* Destroy runs what is still queued, so no poster waits forever. */
	c = calloc(1, sizeof(*c));
	c->cmd.run = seq_run;
	c->value = 8;
	assert_int_equal(mad_loop_post(l, &c->cmd), 0);
	mad_loop_destroy(l);
	assert_int_equal(nseq, 2);
}

struct release_seen {
	struct mad_loop *l;
	pthread_t test; /* counted: the calls on the test's thread */
	_Atomic int calls;
	bool held; /* the hook found the loop still held */
};

static void on_release(void *arg)
{
	struct release_seen *r = arg;

	if (!pthread_equal(pthread_self(), r->test))
		return; /* a turn of the loop's own thread */
	r->calls++;
	r->held |= mad_loop_started(r->l) && mad_loop_owns(r->l);
}

static void nested_call(void *arg)
{
	struct release_seen *r = arg;

	/* Already held: runs inline, and releases nothing. */
	assert_int_equal(mad_loop_call_here(r->l, noop, NULL), 0);
}

static void test_release_hook(void **state)
{
	struct release_seen r = {0};
	struct mad_loop *l;

	(void)state;
	assert_int_equal(mad_loop_create(&l, NULL, NULL), 0);
	r.l = l;
	r.test = pthread_self();
	mad_loop_set_release(l, on_release, &r);
	assert_int_equal(mad_loop_run_once(l, 0), 0); /* a turn without a thread */
	assert_int_equal(r.calls, 1);
	assert_int_equal(mad_loop_start(l), 0);
	mad_loop_set_release(l, NULL, NULL);
	r.calls = 0;
	mad_loop_set_release(l, on_release, &r);
	assert_int_equal(mad_loop_call_here(l, nested_call, &r), 0);
	assert_int_equal(r.calls, 1); /* once: the nested call released nothing */
	assert_false(r.held);
	mad_loop_set_release(l, NULL, NULL);
	r.calls = 0;
	assert_int_equal(mad_loop_call_here(l, noop, NULL), 0);
	assert_int_equal(r.calls, 0);
	mad_loop_destroy(l);
}

struct set_seen {
	uint32_t tags[8], events[8];
	int n;
	int turn_ends;	   /* the turn-end hook's calls */
	int ends_at_first; /* ... as the first fd of the set ran */
};

static void on_turn_end(void *arg)
{
	((struct set_seen *)arg)->turn_ends++;
}

static void on_set_fd(struct mad_loop *l, uint32_t tag, uint32_t events, void *arg)
{
	struct set_seen *s = arg;

	if (s->n < 8) {
		s->tags[s->n] = tag;
		s->events[s->n] = events;
	}
	if (s->n++ == 0) {
		mad_loop_turn_end_now(l);
		s->ends_at_first = s->turn_ends;
	}
}

static void test_fd_set(void **state)
{
	struct set_seen s = {0};
	struct mad_loop *l;
	uint64_t one = 1;
	int a = eventfd(0, EFD_NONBLOCK), b = eventfd(0, EFD_NONBLOCK);

	(void)state;
	assert_int_equal(mad_loop_set_ctl(NULL, EPOLL_CTL_ADD, a, 1, EPOLLIN), -EINVAL);
	assert_int_equal(mad_loop_create(&l, NULL, NULL), 0);
	assert_int_equal(mad_loop_set_ctl(l, EPOLL_CTL_ADD, -1, 1, EPOLLIN), -EINVAL);
	assert_int_equal(mad_loop_set_watch(l, on_set_fd, &s), 0);
	mad_loop_set_turn_end(l, on_turn_end, &s);
	assert_int_equal(mad_loop_set_ctl(l, EPOLL_CTL_ADD, a, 5, EPOLLIN), 0);
	assert_int_equal(mad_loop_set_ctl(l, EPOLL_CTL_ADD, b, 0xfffffffe, EPOLLIN), 0);
	assert_int_equal(mad_loop_set_ctl(l, EPOLL_CTL_ADD, b, 3, EPOLLIN), -EEXIST);
	assert_int_equal(mad_loop_run_once(l, 0), 0); /* nothing readable */
	assert_int_equal(s.n, 0);
	assert_int_equal(write(b, &one, sizeof(one)), sizeof(one));
	assert_int_equal(mad_loop_run_once(l, 0), 1);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.tags[0], 0xfffffffe);
	assert_true(s.events[0] & EPOLLIN);
	/* The hook ran in the middle of the turn, and again at its end. */
	assert_int_equal(s.ends_at_first, 2);
	assert_int_equal(s.turn_ends, 3);
	/* Changed: a writable eventfd reports EPOLLOUT under its tag. */
	assert_int_equal(mad_loop_set_ctl(l, EPOLL_CTL_MOD, a, 5, EPOLLOUT), 0);
	assert_int_equal(mad_loop_set_ctl(l, EPOLL_CTL_DEL, b, 0, 0), 0);
	assert_int_equal(mad_loop_run_once(l, 0), 1);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.tags[1], 5);
	assert_true(s.events[1] & EPOLLOUT);
	/* Without a function the set's fds are not run. */
	assert_int_equal(mad_loop_set_watch(l, NULL, NULL), 0);
	assert_int_equal(mad_loop_run_once(l, 0), 0);
	assert_int_equal(s.n, 2);
	mad_loop_set_turn_end(l, NULL, NULL);
	mad_loop_turn_end_now(l); /* no hook: nothing */
	mad_loop_turn_end_now(NULL);
	mad_loop_destroy(l);
	close(a);
	close(b);
}

static atomic_int hup_hits;
static void on_hup_fd(struct mad_loop *l, int fd, void *arg)
{
	char c;

	(void)l;
	(void)arg;
	atomic_fetch_add(&hup_hits, 1);
	(void)read(fd, &c, 1);
}

/* A paused fd whose peer hung up: reported once at most, never run. */
static void test_pause_hung_up(void **state)
{
	struct mad_loop *l;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	assert_int_equal(mad_loop_create(&l, NULL, NULL), 0);
	assert_int_equal(mad_loop_watch_fd(l, sv[0], on_hup_fd, NULL), 0);
	assert_int_equal(mad_loop_pause_fd(l, sv[0], true), 0);
	close(sv[1]);
	atomic_store(&hup_hits, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mad_loop_run_once(l, 0), 0);
	assert_int_equal(atomic_load(&hup_hits), 0);
	/* Resumed: the hang-up is the watch's to see. */
	assert_int_equal(mad_loop_pause_fd(l, sv[0], false), 0);
	assert_int_equal(mad_loop_run_once(l, 0), 1);
	assert_int_equal(atomic_load(&hup_hits), 1);
	mad_loop_unwatch_fd(l, sv[0]);
	assert_int_equal(mad_loop_run_once(l, 0), 0);
	mad_loop_destroy(l);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_call_and_order),
	    cmocka_unit_test(test_fd_and_timer_wake_the_thread),
	    cmocka_unit_test(test_without_thread),
	    cmocka_unit_test(test_pause_fd),
	    cmocka_unit_test(test_exclusive_fd),
	    cmocka_unit_test(test_two_watches_one_fd),
	    cmocka_unit_test(test_watch_without_wakeup),
	    cmocka_unit_test(test_release_hook),
	    cmocka_unit_test(test_fd_set),
	    cmocka_unit_test(test_pause_hung_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
