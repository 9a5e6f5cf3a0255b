/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * repoll_create, repoll_ctl, repoll_wait (RDMACM_1.5): epoll(7) over
 * rsockets and ordinary fds alike, as rdma-core added them in 2026.
 *
 * The kernel cannot tell when an rsocket is ready (see lib/rpoll.c), so a
 * set is a list of (fd, events, data) and repoll_wait is rpoll over a
 * snapshot of it.  Each set has two eventfds: its descriptor (epfd, never
 * signalled: the number is what identifies the set, and rclose frees it)
 * and `wake`, which every wait polls too, so a repoll_ctl or rclose from
 * another thread ends a wait that slept on an older snapshot, which then
 * looks again.  `wake` is drained only once no wait is inside rpoll: a
 * drain while another waiter sleeps would put that waiter back to sleep
 * on its old snapshot.
 *
 * Only level-triggered readiness exists here: EPOLLET is accepted and
 * reads as level-triggered, EPOLLONESHOT disables an fd after one report
 * until EPOLL_CTL_MOD.  A closed fd left in a set is not reported (epoll
 * drops a closed file from its sets).  Errors are -1 and errno, with
 * epoll_ctl(2)'s and epoll_wait(2)'s values.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "lib/cma.h"
#include "lib/rsocket.h"

/* The poll(2) bits epoll's event masks share with it (equal values). */
#define REPOLL_POLL_BITS                                                                           \
	(EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDNORM | EPOLLRDBAND | EPOLLWRNORM | EPOLLWRBAND |   \
	 EPOLLMSG | EPOLLRDHUP)
#define REPOLL_FLAGS (EPOLLET | EPOLLONESHOT | EPOLLWAKEUP | EPOLLEXCLUSIVE)

struct repoll_ent {
	int fd;
	uint32_t events; /* as given: poll bits and flags */
	epoll_data_t data;
	bool fired; /* EPOLLONESHOT reported: silent until MOD */
};

struct repoll {
	int epfd;
	int wake;
	pthread_mutex_t lock;
	struct repoll_ent *ents;
	int n, cap;
	unsigned sleepers; /* waits inside rpoll */
	unsigned cursor;   /* where the next report starts (fairness) */
	bool closing;
	unsigned users; /* calls holding the set (tab_lock) */
};

/* The sets, by epfd; a call holds a set (users) so rclose waits for it. */
static struct repoll **tab;
static int tab_len;
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tab_cond = PTHREAD_COND_INITIALIZER;

/* tab_lock held. */
static struct repoll *tab_find(int fd)
{
	return fd >= 0 && fd < tab_len ? tab[fd] : NULL;
}

static struct repoll *repoll_hold(int epfd)
{
	struct repoll *s;

	pthread_mutex_lock(&tab_lock);
	s = tab_find(epfd);
	if (s)
		s->users++;
	pthread_mutex_unlock(&tab_lock);
	return s;
}

static void repoll_release(struct repoll *s)
{
	pthread_mutex_lock(&tab_lock);
	if (--s->users == 0)
		pthread_cond_broadcast(&tab_cond);
	pthread_mutex_unlock(&tab_lock);
}

/* epfd is no set: EBADF when it is no open fd at all, else EINVAL. */
static int not_a_set(int epfd)
{
	if (epfd < 0 || fcntl(epfd, F_GETFD) < 0)
		return cma_err(EBADF);
	return cma_err(EINVAL);
}

bool repoll_is_set(int fd)
{
	bool r;

	pthread_mutex_lock(&tab_lock);
	r = tab_find(fd) != NULL;
	pthread_mutex_unlock(&tab_lock);
	return r;
}

static void repoll_wake(struct repoll *s)
{
	uint64_t one = 1;

	/* Fails only when the counter is full: the waiters wake anyway. */
	if (write(s->wake, &one, sizeof(one)) < 0)
		return;
}

static void repoll_free(struct repoll *s)
{
	if (s->wake >= 0)
		close(s->wake);
	if (s->epfd >= 0)
		close(s->epfd);
	pthread_mutex_destroy(&s->lock);
	free(s->ents);
	free(s);
}

CMA_EXPORT int repoll_create(int flags)
{
	struct repoll *s;
	int e;

	/* rdma-core takes O_CLOEXEC (EPOLL_CLOEXEC) and O_NONBLOCK for epfd. */
	if (flags & ~(EPOLL_CLOEXEC | O_NONBLOCK))
		return cma_err(EINVAL);
	s = calloc(1, sizeof(*s));
	if (!s)
		return cma_err(ENOMEM);
	pthread_mutex_init(&s->lock, NULL);
	s->epfd = eventfd(0, ((flags & EPOLL_CLOEXEC) ? EFD_CLOEXEC : 0) |
				 ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
	s->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->epfd < 0 || s->wake < 0) {
		e = errno;
		repoll_free(s);
		return cma_err(e);
	}
	pthread_mutex_lock(&tab_lock);
	if (s->epfd >= tab_len) {
		int len = s->epfd + 64;
		struct repoll **t = realloc(tab, sizeof(*t) * (size_t)len);

		if (!t) {
			pthread_mutex_unlock(&tab_lock);
			repoll_free(s);
			return cma_err(ENOMEM);
		}
		memset(t + tab_len, 0, sizeof(*t) * (size_t)(len - tab_len));
		tab = t;
		tab_len = len;
	}
	tab[s->epfd] = s;
	pthread_mutex_unlock(&tab_lock);
	return s->epfd;
}

/* rclose() of a set: ends its waits, then frees it; 0, or -1 EBADF. */
int repoll_close(int epfd)
{
	struct repoll *s;

	pthread_mutex_lock(&tab_lock);
	s = tab_find(epfd);
	if (!s) {
		pthread_mutex_unlock(&tab_lock);
		return cma_err(EBADF);
	}
	tab[epfd] = NULL;
	pthread_mutex_lock(&s->lock);
	s->closing = true;
	pthread_mutex_unlock(&s->lock);
	repoll_wake(s);
	while (s->users)
		pthread_cond_wait(&tab_cond, &tab_lock);
	pthread_mutex_unlock(&tab_lock);
	repoll_free(s);
	return 0;
}

/* s->lock held. */
static struct repoll_ent *ent_find(struct repoll *s, int fd)
{
	for (int i = 0; i < s->n; i++)
		if (s->ents[i].fd == fd)
			return &s->ents[i];
	return NULL;
}

/* What epoll_ctl(2) refuses to watch: 0 or an errno. */
static int check_target(int epfd, int fd)
{
	struct stat st;

	if (fd < 0)
		return EBADF;
	if (rs_is_rsocket(fd))
		return fd == epfd ? EINVAL : 0;
	if (fstat(fd, &st) < 0)
		return EBADF;
	if (fd == epfd)
		return EINVAL;
	/* Regular files and directories are always ready: epoll says EPERM. */
	if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
		return EPERM;
	/* A set in a set: rpoll cannot see a set's readiness. */
	if (repoll_is_set(fd))
		return EINVAL;
	return 0;
}

static int check_event(int op, const struct epoll_event *ev)
{
	if (!ev)
		return EFAULT;
	if (ev->events & ~(uint32_t)(REPOLL_POLL_BITS | EPOLLERR | EPOLLHUP | REPOLL_FLAGS))
		return EINVAL;
	if (ev->events & EPOLLEXCLUSIVE) {
		if (op == EPOLL_CTL_MOD || (ev->events & EPOLLONESHOT))
			return EINVAL;
	}
	return 0;
}

CMA_EXPORT int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct repoll_ent *ent;
	struct repoll *s;
	int e = 0;

	s = repoll_hold(epfd);
	if (!s)
		return not_a_set(epfd);
	e = check_target(epfd, fd);
	if (!e && op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL)
		e = EINVAL;
	if (!e && op != EPOLL_CTL_DEL)
		e = check_event(op, event);
	if (e) {
		repoll_release(s);
		return cma_err(e);
	}
	pthread_mutex_lock(&s->lock);
	ent = ent_find(s, fd);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (ent) {
			e = EEXIST;
			break;
		}
		if (s->n == s->cap) {
			int cap = s->cap ? 2 * s->cap : 16;
			struct repoll_ent *n = realloc(s->ents, sizeof(*n) * (size_t)cap);

			if (!n) {
				e = ENOMEM;
				break;
			}
			s->ents = n;
			s->cap = cap;
		}
		ent = &s->ents[s->n++];
		ent->fd = fd;
		/* fallthrough */
	case EPOLL_CTL_MOD:
		if (!ent) {
			e = ENOENT;
			break;
		}
		ent->events = event->events;
		ent->data = event->data;
		ent->fired = false;
		break;
	case EPOLL_CTL_DEL:
		if (!ent) {
			e = ENOENT;
			break;
		}
		*ent = s->ents[--s->n];
		break;
	}
	pthread_mutex_unlock(&s->lock);
	if (!e)
		repoll_wake(s);
	repoll_release(s);
	return e ? cma_err(e) : 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * s->lock held.  Fills pfd[1..] with the armed fds, from the cursor on so
 * that a short events array does not always get the same fds.
 */
static int snapshot(struct repoll *s, struct pollfd *pfd)
{
	int k = 1;

	pfd[0].fd = s->wake;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	for (int j = 0; j < s->n; j++) {
		struct repoll_ent *ent = &s->ents[(s->cursor + (unsigned)j) % (unsigned)s->n];

		if (ent->fired)
			continue;
		pfd[k].fd = ent->fd;
		pfd[k].events = (short)(ent->events & REPOLL_POLL_BITS);
		pfd[k].revents = 0;
		k++;
	}
	return k;
}

/* s->lock held: the entries of what rpoll found, at most max. */
static int collect(struct repoll *s, const struct pollfd *pfd, int k, struct epoll_event *events,
		   int max)
{
	int cnt = 0;

	for (int i = 1; i < k && cnt < max; i++) {
		struct repoll_ent *ent;
		uint32_t rev = (uint16_t)pfd[i].revents;

		if (!rev || (rev & POLLNVAL))
			continue;
		/* The set may have changed while rpoll ran. */
		ent = ent_find(s, pfd[i].fd);
		if (!ent || ent->fired)
			continue;
		rev &= (ent->events & REPOLL_POLL_BITS) | EPOLLERR | EPOLLHUP;
		if (!rev)
			continue;
		events[cnt].events = rev;
		events[cnt].data = ent->data;
		cnt++;
		if (ent->events & EPOLLONESHOT)
			ent->fired = true;
		s->cursor = (unsigned)(ent - s->ents) + 1;
	}
	return cnt;
}

CMA_EXPORT int repoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	int64_t deadline = timeout > 0 ? mono_ms() + timeout : 0;
	struct pollfd *pfd = NULL;
	struct repoll *s;
	int ret = 0, e = 0;

	s = repoll_hold(epfd);
	if (!s)
		return not_a_set(epfd);
	if (maxevents <= 0 || maxevents > INT32_MAX / (int)sizeof(*events)) {
		repoll_release(s);
		return cma_err(EINVAL);
	}
	if (!events) {
		repoll_release(s);
		return cma_err(EFAULT);
	}
	pthread_mutex_lock(&s->lock);
	for (;;) {
		int k, r, to = timeout < 0 ? -1 : 0;
		struct pollfd *n;

		if (s->closing)
			break;
		n = realloc(pfd, sizeof(*pfd) * (size_t)(s->n + 1));
		if (!n) {
			e = ENOMEM;
			break;
		}
		pfd = n;
		k = snapshot(s, pfd);
		if (timeout > 0) {
			int64_t left = deadline - mono_ms();

			to = left > 0 ? (int)left : 0;
		}
		s->sleepers++;
		pthread_mutex_unlock(&s->lock);
		r = rpoll(pfd, (nfds_t)k, to);
		e = r < 0 ? errno : 0;
		pthread_mutex_lock(&s->lock);
		s->sleepers--;
		if (pfd[0].revents && !s->sleepers) {
			uint64_t v;

			if (read(s->wake, &v, sizeof(v)) < 0) {
				/* EAGAIN: another waiter drained it first. */
			}
		}
		if (r < 0)
			break;
		ret = collect(s, pfd, k, events, maxevents);
		if (ret || to == 0)
			break;
	}
	pthread_mutex_unlock(&s->lock);
	free(pfd);
	repoll_release(s);
	return e ? cma_err(e) : ret;
}
