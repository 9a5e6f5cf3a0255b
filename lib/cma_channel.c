/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Event channels.  A channel is a queue of events and an eventfd that is
 * readable exactly while the queue is not empty (kept so under cma.lock),
 * so the fd works with poll/epoll as the kernel's rdma_cm fd does; an
 * application that sets O_NONBLOCK on it gets EAGAIN from
 * rdma_get_cm_event when nothing is queued.
 *
 * Synchronous ids (created with a NULL channel) get a private channel;
 * each call that starts an operation waits on it for the operation's event
 * (cma_complete), keeps that event in id->event until the next call, and
 * returns its outcome as -1/errno, as librdmacm's sync mode does.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "cm/runtime.h"
#include "lib/cma.h"
#include "mad/eintr.h"
#include "mad/zalloc.h"

struct cma_channel *cma_channel_of(struct rdma_cm_id *id)
{
	return (struct cma_channel *)id->channel;
}

struct cma_channel *cma_channel_create_locked(void)
{
	struct cma_channel *ch = calloc(1, sizeof(*ch));

	cma_assert_locked();
	if (!ch)
		return NULL;
	ch->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	ch->gen = cma.gen;
	cm_runtime_waitset_init(&ch->ws);
	return ch;
}

/*
 * The application's channels destroyed last, kept dead rather than freed:
 * a thread that has just acked its last event and comes back to
 * rdma_get_cm_event while another thread destroys the channel (rping's CM
 * thread as main returns) finds it dead and blocks, as one already waiting
 * does, instead of reading freed memory.  Bounded: such a thread comes
 * back within moments, not after CMA_CHANNEL_GRAVES later destroys.
 */
#define CMA_CHANNEL_GRAVES 64
static struct cma_channel *graves[CMA_CHANNEL_GRAVES];
static unsigned next_grave;

static void bury(struct cma_channel *ch)
{
	struct cma_channel *old = graves[next_grave];

	cma_assert_locked();
	ch->dead = true;
	graves[next_grave] = ch;
	next_grave = (next_grave + 1) % CMA_CHANNEL_GRAVES;
	free(old);
}

static void channel_free(struct cma_channel *ch)
{
	while (ch->head) {
		struct cma_event *e = ch->head;

		ch->head = e->next;
		free(e);
	}
	ch->tail = NULL;
	/* Atomic: a waiter running MADs reads it without cma.lock (has_events). */
	__atomic_store_n(&ch->count, 0, __ATOMIC_RELEASE);
	if (ch->waiters) {
		ch->dead = true; /* the last waiter never returns (see cma.h) */
		return;
	}
	cm_runtime_waitset_fini(&ch->ws);
	close(ch->ch.fd);
	if (ch->private_sync) {
		free(ch); /* no application thread knows it */
		return;
	}
	/* Atomic: rdma_get_cm_event reads it before cma.lock (a caller racing the destroy). */
	__atomic_store_n(&ch->ch.fd, -1, __ATOMIC_RELAXED);
	bury(ch);
}

/* What a thread waiting on a destroyed channel does: wait for exit. */
static _Noreturn void wait_forever(void)
{
	for (;;)
		pause();
}

void cma_channel_unref_locked(struct cma_channel *ch)
{
	cma_assert_locked();
	if (!ch)
		return;
	/* ids 0: a sync id's channel whose id was never made (freed too). */
	if (ch->ids && --ch->ids)
		return;
	if (ch->private_sync)
		channel_free(ch);
}

CMA_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_channel *ch;

	if (cma_init())
		return NULL;
	cma_lock();
	ch = cma_channel_create_locked();
	cma_unlock();
	if (!ch) {
		errno = errno ? errno : ENOMEM;
		return NULL;
	}
	return &ch->ch;
}

CMA_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = (struct cma_channel *)channel;

	if (!ch)
		return;
	if (cma_channel_inherited(channel)) {
		errno = EBADF; /* the parent's (cma_fork.c) */
		return;
	}
	cma_lock();
	/* librdmacm leaves a channel with ids on it to the caller's care. */
	channel_free(ch);
	cma_unlock();
}

struct cma_event *cma_event_new(struct cma_id *id, enum rdma_cm_event_type type, int status)
{
	struct cma_event *e = zalloc(sizeof(*e));

	cma_assert_locked();
	if (!e)
		return NULL;
	e->id = id;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	return e;
}

/* The channel this thread waits on in rdma_get_cm_event, running MADs. */
static __thread struct cma_channel *self_wait; /* dynamic TLS: as mad/loop.c held_loop */

/* Make the fd readable (it has events); under cma.lock. */
static void signal_fd(struct cma_channel *ch)
{
	uint64_t one = 1;

	cma_assert_locked();
	if (ch->signaled || !ch->count)
		return;
	ch->signaled = true;
	if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one)) {
		/* An eventfd write of 1 cannot fail short of a bad fd. */
	}
}

void cma_event_queue(struct cma_channel *ch, struct cma_event *e)
{
	cma_assert_locked();
	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	/* Atomic: a waiter reads it without cma.lock (has_events). */
	__atomic_fetch_add(&ch->count, 1, __ATOMIC_RELEASE);
	/* Its own waiter takes it next: no write now, no read then. */
	if (self_wait != ch)
		signal_fd(ch);
}

void cma_report(struct cma_id *id, struct cma_event *e)
{
	cma_assert_locked();
	id->events_reported++;
	cma_publish_mark(); /* the CM state may have moved */
	if (e->listen)
		e->listen->events_reported++;
	/* A CONNECT_REQUEST is the listener's event, read from its channel. */
	cma_event_queue(cma_channel_of(e->listen ? &e->listen->id : &id->id), e);
}

void cma_event_unlink(struct cma_channel *ch, struct cma_event **pe)
{
	struct cma_event *e = *pe;
	uint64_t v;

	cma_assert_locked();
	*pe = e->next;
	if (ch->tail == e)
		ch->tail =
		    pe == &ch->head
			? NULL
			: (struct cma_event *)((char *)pe - offsetof(struct cma_event, next));
	if (__atomic_sub_fetch(&ch->count, 1, __ATOMIC_RELEASE) == 0 && ch->signaled) {
		ch->signaled = false;
		if (read(ch->ch.fd, &v, sizeof(v)) != sizeof(v)) {
			/* Counter was non-zero (signaled): cannot block or fail. */
		}
	}
}

static struct cma_event *dequeue(struct cma_channel *ch)
{
	struct cma_event *e = ch->head;

	if (e)
		cma_event_unlink(ch, &ch->head);
	return e;
}

/* Drop events librdmacm never shows (after a local CONNECT_ERROR). */
static bool discard(struct cma_event *e)
{
	if (!e->id->connect_error)
		return false;
	return e->ev.event == RDMA_CM_EVENT_REJECTED || e->ev.event == RDMA_CM_EVENT_DISCONNECTED;
}

static void ack_locked(struct cma_event *e)
{
	e->id->events_acked++;
	if (e->listen) {
		e->listen->events_acked++;
		pthread_cond_broadcast(&e->listen->cond);
	}
	pthread_cond_broadcast(&e->id->cond);
	free(e);
}

/*
 * The CM runtime of the process when it has exactly one (one port in
 * use, the common case): a thread that waits for events can run that
 * port's MADs itself (under cma.lock).
 */
static struct cm_runtime *only_runtime(void)
{
	struct cm_runtime *rt = NULL;

	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++) {
			struct cm_runtime *r = cma.devs[d].ports[i].rt;

			if (r && rt)
				return NULL;
			if (r)
				rt = r;
		}
	return rt;
}

/* Something queued on the channel (a hint: rdma_get_cm_event checks under cma.lock). */
static bool has_events(void *arg)
{
	const struct cma_channel *ch = arg;

	return __atomic_load_n(&ch->count, __ATOMIC_ACQUIRE) != 0;
}

/* 1 when the application set O_NONBLOCK on the channel's fd, else 0. */
static int fd_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

CMA_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cma_channel *ch = (struct cma_channel *)channel;
	struct cm_runtime *rt;
	struct cma_event *e;
	int nonblock = -1; /* fd_nonblock(), read once the queue is found empty */

	if (!ch || !event)
		return cma_err(EINVAL);
	if (cma_channel_inherited(channel))
		return cma_err(EBADF); /* the parent's (cma_fork.c) */
	/*
	 * Read before cma.lock when the queue looks empty, the usual case: a
	 * system call under the lock stalls every thread that needs it, such
	 * as a server's rdma_create_qp() while this thread comes back for its
	 * next CONNECT_REQUEST (docs/results/kernel-bed.md).
	 */
	if (!has_events(ch))
		nonblock = fd_nonblock(__atomic_load_n(&ch->ch.fd, __ATOMIC_RELAXED));
	cma_lock();
	if (ch->dead) {
		cma_unlock();
		wait_forever(); /* destroyed (bury) */
	}
	for (;;) {
		e = dequeue(ch);
		if (e && discard(e)) {
			ack_locked(e);
			continue;
		}
		if (e)
			break;
		/* The hint saw events that are gone (another thread's, or discarded). */
		if (nonblock < 0)
			nonblock = fd_nonblock(ch->ch.fd);
		if (nonblock) {
			cma_unlock();
			return cma_err(EAGAIN);
		}
		struct pollfd pfd = {.fd = ch->ch.fd, .events = POLLIN};

		rt = only_runtime();
		ch->waiters++;
		cma_unlock();
		int rc = 0;

		if (rt) { /* Run the CM's MADs here meanwhile: one wake-up, not two. */
			self_wait = ch;
			rc = cm_runtime_wait_ready(rt, ch->private_sync ? NULL : &ch->ws, ch->ch.fd,
						   has_events, ch, -1);
			self_wait = NULL;
		} else if (poll(&pfd, 1, -1) < 0) {
			rc = -errno;
		}
		/* EINTR where librdmacm's read(2) of the fd would end (mad/eintr.h). */
		if (rc == -EINTR && mad_eintr_restarts())
			rc = 0;
		cma_lock();
		ch->waiters--;
		if (ch->dead) {
			cma_unlock();
			wait_forever();
		}
		if (rc) {
			signal_fd(ch); /* what it queued itself is for others now */
			cma_unlock();
			return cma_err(-rc);
		}
	}
	signal_fd(ch); /* events left after this one: the fd polls readable */
	/* The listener's backlog counts requests not yet read (ucma). */
	if (e->listen)
		e->listen->pending_reqs--;
	/* librdmacm's QP moves on events: REJECTED puts the QP in error. */
	if (e->ev.event == RDMA_CM_EVENT_REJECTED && e->id->id.qp)
		cma_qp_to_err(e->id);
	/* ... and a multicast join attaches it to the group. */
	if (e->ev.event == RDMA_CM_EVENT_MULTICAST_JOIN)
		cma_mc_on_get(e->id, e);
	cma_unlock();
	*event = &e->ev;
	return 0;
}

CMA_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return cma_err(EINVAL);
	if (cma_id_inherited(event->id))
		return cma_err(EBADF);
	cma_lock();
	ack_locked((struct cma_event *)event);
	cma_unlock();
	return 0;
}

int cma_complete(struct cma_id *id)
{
	struct rdma_cm_event *ev;
	int ret = 0;

	cma_assert_unlocked();
	if (!id->sync)
		return 0;
	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(id->id.channel, &ev))
		return -1;
	id->id.event = ev;
	if (ev->status) {
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			ret = cma_err(ECONNREFUSED);
		else if (ev->status < 0)
			ret = cma_err(-ev->status);
		else
			ret = cma_err(ev->status);
	}
	return ret;
}

CMA_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const s[] = {
	    [RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	    [RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	    [RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	    [RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	    [RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	    [RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	    [RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	    [RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	    [RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	    [RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	    [RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	    [RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	    [RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	    [RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	    [RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	    [RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	    [16] = "RDMA_CM_EVENT_ADDRINFO_RESOLVED",
	    [17] = "RDMA_CM_EVENT_ADDRINFO_ERROR",
	    [18] = "RDMA_CM_EVENT_USER",
	    [19] = "RDMA_CM_EVENT_INTERNAL",
	};

	if ((unsigned)event < sizeof(s) / sizeof(s[0]) && s[event])
		return s[event];
	return "UNKNOWN EVENT";
}
