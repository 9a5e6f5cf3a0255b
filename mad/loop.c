/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Progress loop (see loop.h). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include "mad/loop.h"

#define MAX_WATCH 32
#define MAX_SLEEP_MS 1000

/* epoll data of the loop's own fds; a watched fd's is the fd itself. */
#define TAG_EVFD (1ull << 32)
#define TAG_TFD (2ull << 32)
#define TAG_SET (3ull << 32) /* | the tag of an fd of the set (mad_loop_set_ctl) */

struct watch {
	int fd;
	bool in_ep;	 /* epoll takes it; else poll()ed next to epfd (see polled) */
	bool excl;	 /* registered EPOLLEXCLUSIVE (mad_loop_exclusive_fd), each watch of fd */
	unsigned paused; /* mad_loop_pause_fd() nesting, the same in every watch of fd */
	mad_loop_fd_fn fn;
	void *arg;
};

/* A function the loop calls at a fixed point (mad_loop_set_turn_end, _release). */
struct loop_hook {
	void (*fn)(void *arg);
	void *arg;
};

struct mad_loop {
	struct mad_timer_heap timers;
	int evfd;
	pthread_mutex_t lock; /* guards the command queue and stop */
	struct mad_loop_cmd *head, *tail;
	bool stopping;
	bool started;
	pthread_t thread;
	/*
	 * The loop sleeps in epoll_wait() on epfd: the command eventfd, the
	 * timerfd, every watched fd (disarmed while paused) and the fd set.
	 * Registrations are persistent, so a watch added, paused or resumed by a caller of
	 * mad_loop_call_here() takes effect in the sleeping thread without
	 * waking it (a resumed fd that is readable does wake it).
	 */
	int epfd;
	struct watch w[MAX_WATCH];
	unsigned nw;
	unsigned polled; /* watches epoll refused (no poll support in epoll) */
	/*
	 * The loop's state (timers, watches, what hangs from them) is run by
	 * whoever holds `own`: the loop thread, except while it sleeps, or a
	 * caller of mad_loop_call_here() meanwhile.  What the sleeping thread
	 * was told, to know when such a caller must wake it:
	 */
	pthread_mutex_t own;
	uint64_t poll_deadline;		    /* timer deadline the thread sleeps towards */
	unsigned watch_gen, poll_watch_gen; /* changes of the poll()ed watches */
	/*
	 * With the real clock, an earlier timer armed by such a caller sets
	 * this timerfd (which the thread watches) instead of waking the
	 * thread now: one syscall, no context switch.  -1 with an injected
	 * clock.
	 */
	int tfd;
	struct loop_hook turn_end; /* mad_loop_set_turn_end */
	struct loop_hook release;  /* mad_loop_set_release */
	mad_loop_set_fn set_fn;	   /* mad_loop_set_watch */
	void *set_arg;
};

/*
 * The loop this thread holds (own), if any.  The default (dynamic) TLS
 * model, not initial-exec: an initial-exec variable marks the library
 * STATIC_TLS, and dlopen() of it then fails unless its whole TLS block
 * fits glibc's small surplus (docs/architecture.md).  A read costs a call
 * to __tls_get_addr's fast path, a few nanoseconds twice a hold.
 */
static __thread const struct mad_loop *held_loop;

/* Returns what to give own_unlock(); `l` itself when already held (a
 * threadless loop run again from one of its callbacks). */
static const struct mad_loop *own_lock(struct mad_loop *l)
{
	const struct mad_loop *prev = held_loop;

	if (prev == l)
		return l;
	pthread_mutex_lock(&l->own);
	held_loop = l;
	return prev;
}

static void own_unlock(struct mad_loop *l, const struct mad_loop *prev)
{
	if (prev == l)
		return;
	held_loop = prev;
	pthread_mutex_unlock(&l->own);
}

/*
 * Give the loop up at the end of a hold, then run the release hook (read
 * while still held) on this thread.  Nested holds do not release.
 */
static void own_release(struct mad_loop *l, const struct mad_loop *prev)
{
	struct loop_hook h = l->release;

	own_unlock(l, prev);
	if (prev != l && h.fn)
		h.fn(h.arg);
}

int mad_loop_create(struct mad_loop **out, uint64_t (*now_ns)(void *), void *clock_ctx)
{
	struct mad_loop *l;

	if (!out)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->evfd < 0) {
		int e = errno;

		free(l);
		return -e;
	}
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0 || mad_ep_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, EPOLLIN, TAG_EVFD)) {
		int e = errno;

		if (l->epfd >= 0)
			close(l->epfd);
		close(l->evfd);
		free(l);
		return -e;
	}
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->own, NULL);
	l->tfd = now_ns ? -1 : timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->tfd >= 0 && mad_ep_ctl(l->epfd, EPOLL_CTL_ADD, l->tfd, EPOLLIN, TAG_TFD)) {
		close(l->tfd);
		l->tfd = -1; /* earlier timers then wake the thread through evfd */
	}
	mad_timer_heap_init(&l->timers, now_ns, clock_ctx);
	*out = l;
	return 0;
}

/*
 * The queued commands.  The eventfd is reset only when epoll said it was
 * signalled (`signalled`): a read of it in every turn would be one system
 * call per turn for nothing.  A wake-up that comes after epoll returned
 * leaves it set, and the next turn returns at once and resets it.
 */
static struct mad_loop_cmd *take_cmds(struct mad_loop *l, bool signalled)
{
	struct mad_loop_cmd *c;
	uint64_t v;

	pthread_mutex_lock(&l->lock);
	c = l->head;
	l->head = l->tail = NULL;
	pthread_mutex_unlock(&l->lock);
	if (signalled && read(l->evfd, &v, sizeof(v)) < 0)
		(void)0; /* EAGAIN: another turn reset it */
	return c;
}

static int run_cmds(struct mad_loop *l, bool signalled)
{
	struct mad_loop_cmd *c = take_cmds(l, signalled);
	int n = 0;

	while (c) {
		struct mad_loop_cmd *next = c->next;

		c->run(l, c); /* may free c */
		c = next;
		n++;
	}
	return n;
}

static bool watched(const struct mad_loop *l, const struct watch *w)
{
	for (unsigned j = 0; j < l->nw; j++)
		if (l->w[j].fd == w->fd && l->w[j].fn == w->fn && l->w[j].arg == w->arg)
			return true;
	return false;
}

/* Run the watches of `fd` that are still there (an earlier callback may remove one). */
static int run_watches(struct mad_loop *l, int fd)
{
	struct watch snap[MAX_WATCH];
	unsigned k = 0;
	int n = 0;

	for (unsigned j = 0; j < l->nw; j++)
		if (l->w[j].fd == fd && !l->w[j].paused) /* paused since epoll reported it */
			snap[k++] = l->w[j];
	for (unsigned j = 0; j < k; j++)
		if (watched(l, &snap[j])) {
			snap[j].fn(l, fd, snap[j].arg);
			n++;
		}
	return n;
}

/*
 * Sleep until something is ready or timeout_ms passes, without holding
 * the loop; fill ev[] from epoll.  With poll()ed watches (rare: fds epoll
 * refuses), poll() them next to epfd; their ready ones go to p[].
 */
static int sleep_ready(struct mad_loop *l, struct epoll_event *ev, int nev, struct pollfd *p,
		       unsigned np, int timeout_ms)
{
	int rc;

	if (!np)
		return epoll_wait(l->epfd, ev, nev, timeout_ms);
	p[0].fd = l->epfd;
	p[0].events = POLLIN;
	p[0].revents = 0;
	rc = poll(p, np + 1, timeout_ms);
	if (rc <= 0 || !(p[0].revents & POLLIN))
		return rc < 0 ? rc : 0;
	return epoll_wait(l->epfd, ev, nev, 0);
}

static int iterate(struct mad_loop *l, int timeout_ms)
{
	struct epoll_event ev[MAX_WATCH + 2];
	struct pollfd p[MAX_WATCH + 1];
	struct watch snap[MAX_WATCH];
	const struct mad_loop *prev = own_lock(l);
	uint64_t next = mad_timer_next_deadline(&l->timers);
	unsigned np = 0;
	int n = 0, rc;
	bool signalled = false;

	if (next != UINT64_MAX) {
		uint64_t now = mad_timer_now(&l->timers);
		uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;

		if (timeout_ms < 0 || ms < (uint64_t)timeout_ms)
			timeout_ms = (int)(ms > 60000 ? 60000 : ms);
	}
	for (unsigned i = 0; l->polled && i < l->nw; i++) {
		if (l->w[i].in_ep || l->w[i].paused)
			continue;
		snap[np] = l->w[i];
		p[np + 1].fd = l->w[i].fd;
		p[np + 1].events = POLLIN;
		p[np + 1].revents = 0;
		np++;
	}
	l->poll_deadline = next;
	l->poll_watch_gen = l->watch_gen;
	own_unlock(l, prev);
	rc = sleep_ready(l, ev, MAX_WATCH + 2, p, np, timeout_ms);
	prev = own_lock(l);
	for (int i = 0; i < rc; i++) {
		uint64_t v;

		if (ev[i].data.u64 == TAG_TFD) {
			if (read(l->tfd, &v, sizeof(v)) < 0)
				(void)0; /* EAGAIN: already read */
		} else if (ev[i].data.u64 == TAG_EVFD) {
			signalled = true;
		} else if ((ev[i].data.u64 >> 32) == (TAG_SET >> 32)) {
			if (l->set_fn) {
				l->set_fn(l, (uint32_t)ev[i].data.u64, ev[i].events, l->set_arg);
				n++;
			}
		} else {
			/* Level-triggered: a watch gone meanwhile just misses it. */
			n += run_watches(l, (int)ev[i].data.u64);
		}
	}
	for (unsigned i = 0; i < np; i++)
		if ((p[i + 1].revents & (POLLIN | POLLERR | POLLHUP)) && watched(l, &snap[i])) {
			snap[i].fn(l, snap[i].fd, snap[i].arg);
			n++;
		}
	n += (int)mad_timer_run(&l->timers);
	n += run_cmds(l, signalled);
	mad_loop_turn_end_now(l);
	own_release(l, prev);
	return n;
}

static void *loop_thread(void *arg)
{
	struct mad_loop *l = arg;

	for (;;) {
		bool stop;

		pthread_mutex_lock(&l->lock);
		stop = l->stopping;
		pthread_mutex_unlock(&l->lock);
		if (stop)
			break;
		/*
		 * Wake at least once a second even when idle: cheap, and it
		 * keeps the loop going (slowly) under umad emulations such as
		 * ibsim's umad2sim, whose poll() ignores all but one fd.
		 */
		iterate(l, MAX_SLEEP_MS);
	}
	return NULL;
}

int mad_loop_start(struct mad_loop *l)
{
	int rc;

	if (!l)
		return -EINVAL;
	if (l->started)
		return 0;
	rc = pthread_create(&l->thread, NULL, loop_thread, l);
	if (rc)
		return -rc;
	/* A name for top -H, perf and /proc (the bench counts its wake-ups). */
	pthread_setname_np(l->thread, "madcm-loop");
	l->started = true;
	return 0;
}

int mad_loop_run_once(struct mad_loop *l, int timeout_ms)
{
	if (!l || l->started)
		return -EINVAL;
	return iterate(l, timeout_ms);
}

static void wake(struct mad_loop *l)
{
	uint64_t one = 1;

	if (write(l->evfd, &one, sizeof(one)) < 0)
		(void)0; /* counter saturated: the loop is awake anyway */
}

int mad_loop_post(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	if (!l || !cmd || !cmd->run)
		return -EINVAL;
	cmd->next = NULL;
	pthread_mutex_lock(&l->lock);
	if (l->stopping) {
		pthread_mutex_unlock(&l->lock);
		return -ESHUTDOWN;
	}
	if (l->tail)
		l->tail->next = cmd;
	else
		l->head = cmd;
	l->tail = cmd;
	pthread_mutex_unlock(&l->lock);
	wake(l);
	return 0;
}

bool mad_loop_started(const struct mad_loop *l)
{
	return l && l->started;
}

bool mad_loop_owns(const struct mad_loop *l)
{
	return l && (!l->started || held_loop == l || pthread_equal(pthread_self(), l->thread));
}

int mad_loop_call_here(struct mad_loop *l, void (*fn)(void *arg), void *arg)
{
	const struct mad_loop *prev;
	uint64_t next;
	bool stopping;

	if (!l || !fn)
		return -EINVAL;
	if (mad_loop_owns(l)) {
		fn(arg);
		return 0;
	}
	/* Taking the loop: the library's lock (cma.lock) comes after it. */
	mad_assert_no_lib_lock();
	/* Without l->lock: a call is on the CM's hot paths; the flag only goes up. */
	stopping = __atomic_load_n(&l->stopping, __ATOMIC_ACQUIRE);
	if (stopping)
		return -ESHUTDOWN;
	prev = own_lock(l);
	fn(arg);
	/* The sleeping thread must see new poll()ed watches, and an earlier timer. */
	next = mad_timer_next_deadline(&l->timers);
	if (l->watch_gen != l->poll_watch_gen) {
		wake(l);
	} else if (next < l->poll_deadline) {
		struct itimerspec its = {0};

		/* Absolute CLOCK_MONOTONIC, the heap's clock; 0 would disarm. */
		its.it_value.tv_sec = (time_t)(next / 1000000000u);
		its.it_value.tv_nsec = (long)(next % 1000000000u);
		if (!next)
			its.it_value.tv_nsec = 1;
		if (l->tfd >= 0 && !timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL))
			l->poll_deadline = next;
		else
			wake(l);
	}
	own_release(l, prev);
	return 0;
}

struct call_cmd {
	struct mad_loop_cmd cmd;
	void (*fn)(void *arg);
	void *arg;
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
};

static void call_run(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	struct call_cmd *c = (struct call_cmd *)cmd;

	(void)l;
	c->fn(c->arg);
	pthread_mutex_lock(&c->m);
	c->done = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->m);
}

int mad_loop_call(struct mad_loop *l, void (*fn)(void *arg), void *arg)
{
	struct call_cmd c;
	int rc;

	if (!l || !fn)
		return -EINVAL;
	if (mad_loop_owns(l)) {
		fn(arg);
		return 0;
	}
	mad_assert_no_lib_lock(); /* waits for the loop: cma.lock comes after it */
	memset(&c, 0, sizeof(c));
	c.cmd.run = call_run;
	c.fn = fn;
	c.arg = arg;
	pthread_mutex_init(&c.m, NULL);
	pthread_cond_init(&c.cv, NULL);
	rc = mad_loop_post(l, &c.cmd);
	if (rc == 0) {
		pthread_mutex_lock(&c.m);
		while (!c.done)
			pthread_cond_wait(&c.cv, &c.m);
		pthread_mutex_unlock(&c.m);
	}
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.m);
	return rc;
}

/* The watch already on `fd`, if any: epoll holds an fd once. */
static struct watch *find_watch(struct mad_loop *l, int fd)
{
	for (unsigned i = 0; i < l->nw; i++)
		if (l->w[i].fd == fd)
			return &l->w[i];
	return NULL;
}

int mad_loop_watch_fd(struct mad_loop *l, int fd, mad_loop_fd_fn fn, void *arg)
{
	struct watch *w, *other;

	if (!l || fd < 0 || !fn)
		return -EINVAL;
	if (l->nw == MAX_WATCH)
		return -ENOSPC;
	other = find_watch(l, fd);
	w = &l->w[l->nw];
	w->fd = fd;
	w->fn = fn;
	w->arg = arg;
	w->paused = 0;
	if (other) {
		/* One registration (or pause) serves every watch of the fd. */
		w->in_ep = other->in_ep;
		w->excl = other->excl;
		w->paused = other->paused;
	} else {
		w->excl = false;
		w->in_ep = !mad_ep_ctl(l->epfd, EPOLL_CTL_ADD, fd, EPOLLIN, (uint64_t)fd);
		if (!w->in_ep && (errno == ENOMEM || errno == ENOSPC))
			return -errno;
	}
	if (!w->in_ep) {
		/*
		 * epoll refuses it (EPERM: no poll support, or an fd only a
		 * preload's poll() knows): poll() it instead; the sleeping
		 * thread must be woken to see it (watch_gen).
		 */
		l->polled++;
		l->watch_gen++;
	}
	l->nw++;
	return 0;
}

int mad_loop_set_watch(struct mad_loop *l, mad_loop_set_fn fn, void *arg)
{
	if (!l)
		return -EINVAL;
	l->set_fn = fn;
	l->set_arg = arg;
	return 0;
}

int mad_loop_set_ctl(struct mad_loop *l, int op, int fd, uint32_t tag, uint32_t events)
{
	if (!l || fd < 0)
		return -EINVAL;
	return mad_ep_ctl(l->epfd, op, fd, events, TAG_SET | tag) ? -errno : 0;
}

void mad_loop_unwatch_fd(struct mad_loop *l, int fd)
{
	struct watch *w = l ? find_watch(l, fd) : NULL;
	bool registered;

	if (!w)
		return;
	registered = w->in_ep; /* paused: still there, disarmed */
	if (!w->in_ep) {
		l->polled--;
		l->watch_gen++;
	}
	*w = l->w[--l->nw];
	/* Fails harmlessly if the fd was closed first. */
	if (registered && !find_watch(l, fd))
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* Every watch of fd leaves the epoll set for the poll()ed ones. */
static void poll_instead(struct mad_loop *l, int fd)
{
	for (unsigned i = 0; i < l->nw; i++)
		if (l->w[i].fd == fd) {
			l->w[i].in_ep = false;
			l->w[i].excl = false;
			l->polled++;
		}
	l->watch_gen++;
}

/* Every watch of fd registered EPOLLEXCLUSIVE, or no longer. */
static void set_excl(struct mad_loop *l, int fd, bool excl)
{
	for (unsigned i = 0; i < l->nw; i++)
		if (l->w[i].fd == fd)
			l->w[i].excl = excl;
}

int mad_loop_exclusive_fd(struct mad_loop *l, int fd)
{
	struct watch *w = l ? find_watch(l, fd) : NULL;

	if (!w)
		return l ? -ENOENT : -EINVAL;
	if (!w->in_ep)
		return -EOPNOTSUPP;
	/*
	 * Removed and added again, exclusive: an epoll set that holds fd
	 * exclusively and was registered before comes first in fd's wake-up
	 * queue.  Paused, it is only removed; the resume adds it.  A readable
	 * fd added wakes the thread, as it should.
	 */
	if (!w->excl || !w->paused)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (!w->paused &&
	    mad_ep_ctl(l->epfd, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLEXCLUSIVE, (uint64_t)fd)) {
		int rc = -errno;

		/* Not exclusive then (a kernel before 4.5): as before. */
		set_excl(l, fd, false);
		if (mad_ep_ctl(l->epfd, EPOLL_CTL_ADD, fd, EPOLLIN, (uint64_t)fd))
			poll_instead(l, fd);
		return rc;
	}
	set_excl(l, fd, true);
	return 0;
}

int mad_loop_pause_fd(struct mad_loop *l, int fd, bool pause)
{
	struct watch *w = l ? find_watch(l, fd) : NULL;
	unsigned n;

	if (!w)
		return l ? -ENOENT : -EINVAL;
	if (!pause && !w->paused)
		return -EINVAL;
	n = pause ? w->paused + 1 : w->paused - 1;
	if (w->in_ep && w->excl && (n == 0) != (w->paused == 0)) {
		/*
		 * An exclusive registration cannot be modified (epoll_ctl(2)):
		 * paused, it is removed; resumed, added again, at the back of
		 * the fd's exclusive waiters, and a readable fd then wakes the
		 * thread as it should.
		 */
		if (pause)
			epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
		else if (mad_ep_ctl(l->epfd, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLEXCLUSIVE,
				    (uint64_t)fd))
			poll_instead(l, fd);
	} else if (w->in_ep && (n == 0) != (w->paused == 0)) {
		/*
		 * Disarmed or armed again in the epoll set, no wake-up for the
		 * thread sleeping on it, except that an fd armed while readable
		 * wakes it, as it should (nobody else waits for it then).  A
		 * modification, not a removal and an addition: half the cost,
		 * twice per wait of an application thread (cm/runtime.c).
		 * Disarmed, it can still report EPOLLHUP or EPOLLERR, which
		 * epoll_ctl(2) always adds, once (EPOLLONESHOT): the paused
		 * watch is skipped then, and the thread sleeps again.
		 */
		if (mad_ep_ctl(l->epfd, EPOLL_CTL_MOD, fd, pause ? EPOLLONESHOT : EPOLLIN,
			       (uint64_t)fd) &&
		    !pause &&
		    (errno != ENOENT ||
		     mad_ep_ctl(l->epfd, EPOLL_CTL_ADD, fd, EPOLLIN, (uint64_t)fd))) {
			/*
			 * Never leave it unwatched (gone from the set, e.g. closed
			 * and opened again meanwhile, it is added): poll() it
			 * from now on.
			 */
			poll_instead(l, fd);
		}
	}
	if (!w->in_ep)
		l->watch_gen++; /* the poll()ed set changes: wake the thread */
	for (unsigned i = 0; i < l->nw; i++)
		if (l->w[i].fd == fd)
			l->w[i].paused = n;
	return 0;
}

/* Set one of the loop's hooks, holding the loop (its readers hold it). */
static void set_hook(struct mad_loop *l, struct loop_hook *h, void (*fn)(void *arg), void *arg)
{
	const struct mad_loop *prev = own_lock(l);

	h->fn = fn;
	h->arg = arg;
	own_unlock(l, prev);
}

void mad_loop_set_turn_end(struct mad_loop *l, void (*fn)(void *arg), void *arg)
{
	if (l)
		set_hook(l, &l->turn_end, fn, arg);
}

void mad_loop_turn_end_now(struct mad_loop *l)
{
	if (l && l->turn_end.fn)
		l->turn_end.fn(l->turn_end.arg);
}

void mad_loop_set_release(struct mad_loop *l, void (*fn)(void *arg), void *arg)
{
	if (l)
		set_hook(l, &l->release, fn, arg);
}

struct mad_timer_heap *mad_loop_timers(struct mad_loop *l)
{
	return l ? &l->timers : NULL;
}

void mad_loop_destroy(struct mad_loop *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	/* mad_loop_call_here reads it unlocked. */
	__atomic_store_n(&l->stopping, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&l->lock);
	if (l->started) {
		wake(l);
		pthread_join(l->thread, NULL);
	}
	/* Commands still queued run now so their owners are not left waiting. */
	run_cmds(l, true);
	mad_timer_heap_destroy(&l->timers);
	close(l->evfd);
	close(l->epfd);
	if (l->tfd >= 0)
		close(l->tfd);
	pthread_mutex_destroy(&l->own);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static struct mad_loop *default_loop;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_init(void)
{
	struct mad_loop *l = NULL; /* LTO cannot see mad_loop_create set it */

	if (mad_loop_create(&l, NULL, NULL))
		return;
	if (mad_loop_start(l)) {
		mad_loop_destroy(l);
		return;
	}
	default_loop = l;
}

struct mad_loop *mad_loop_default(void)
{
	pthread_once(&default_once, default_init);
	return default_loop;
}
