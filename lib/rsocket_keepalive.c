/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * SO_KEEPALIVE for stream rsockets: one service thread per process, started
 * with the first socket that asks, which every TCP_KEEPIDLE seconds has
 * rs_keepalive_send() post a keepalive on each such socket (a zero-length
 * RDMA WRITE, as rdma-core's keepalive service does).  The peer sees
 * nothing; a peer that is gone makes the write fail once the RC retries
 * run out, and the socket then reports ECONNRESET to a reader blocked in
 * rrecv, which no other traffic would have woken.
 *
 * The thread calls rs_keepalive_send() with its own lock held, so
 * rs_keepalive_del() returns only once no send for that socket runs: after
 * it, the socket may be freed.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "lib/rsocket.h"

struct ka_entry {
	struct ka_entry *next;
	int fd;
	unsigned interval_s;
	uint64_t due_ns;
};

static pthread_mutex_t ka_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ka_cond;
static struct ka_entry *ka_list;
static bool ka_started;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *ka_run(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&ka_lock);
	for (;;) {
		uint64_t now = mono_ns(), next = UINT64_MAX;

		for (struct ka_entry *e = ka_list; e; e = e->next) {
			if (e->due_ns <= now) {
				rs_keepalive_send(e->fd);
				e->due_ns = now + (uint64_t)e->interval_s * 1000000000ull;
			}
			if (e->due_ns < next)
				next = e->due_ns;
		}
		if (next == UINT64_MAX) {
			pthread_cond_wait(&ka_cond, &ka_lock);
		} else {
			struct timespec ts = {(time_t)(next / 1000000000ull),
					      (long)(next % 1000000000ull)};

			pthread_cond_timedwait(&ka_cond, &ka_lock, &ts);
		}
	}
	return NULL;
}

/* ka_lock held. */
static int ka_start(void)
{
	pthread_condattr_t ca;
	pthread_attr_t ta;
	pthread_t t;
	int rc;

	if (ka_started)
		return 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ka_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &ta, ka_run, NULL);
	pthread_attr_destroy(&ta);
	if (rc) {
		pthread_cond_destroy(&ka_cond);
		return -rc;
	}
	ka_started = true;
	return 0;
}

int rs_keepalive_set(int fd, unsigned interval_s)
{
	struct ka_entry *e;
	int rc;

	if (!interval_s)
		return -EINVAL;
	pthread_mutex_lock(&ka_lock);
	rc = ka_start();
	if (rc) {
		pthread_mutex_unlock(&ka_lock);
		return rc;
	}
	for (e = ka_list; e && e->fd != fd; e = e->next)
		;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&ka_lock);
			return -ENOMEM;
		}
		e->fd = fd;
		e->next = ka_list;
		ka_list = e;
	}
	e->interval_s = interval_s;
	e->due_ns = mono_ns() + (uint64_t)interval_s * 1000000000ull;
	pthread_cond_signal(&ka_cond);
	pthread_mutex_unlock(&ka_lock);
	return 0;
}

void rs_keepalive_del(int fd)
{
	pthread_mutex_lock(&ka_lock);
	for (struct ka_entry **p = &ka_list, *e; (e = *p); p = &e->next)
		if (e->fd == fd) {
			*p = e->next;
			free(e);
			break;
		}
	pthread_mutex_unlock(&ka_lock);
}
