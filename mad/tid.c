/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* TID allocation (see tid.h). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "mad/random.h"
#include "mad/tid.h"

static _Atomic uint32_t tid_high;
static _Atomic uint32_t tid_low;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;
/* The random source's generation the seed came from (mad/random.h). */
static atomic_uint tid_gen;
static pthread_mutex_t tid_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A fork()ed child seeds again at its first TID: with its parent's
 * sequence it would reuse TIDs the parent uses (two clients of one
 * madcmd, or of one SA, with the same TIDs).
 */
static void tid_forked(void)
{
	tid_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}

static void tid_seed(void)
{
	static bool armed;
	uint32_t r[2];

	if (!armed) {
		armed = true;
		pthread_atfork(NULL, NULL, tid_forked);
	}

	atomic_store(&tid_gen, mad_random_generation());
	if (mad_random_bytes(r, sizeof(r), 0)) {
		/* No entropy source: mix what differs between processes. */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		r[0] = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16) ^ (uint32_t)ts.tv_sec;
		r[1] = r[0] * 2654435761u;
	}
	atomic_store(&tid_high, r[0]);
	atomic_store(&tid_low, r[1]);
}

/* A test set a new random source: seed from it, so its TIDs repeat. */
static void tid_reseed(void)
{
	pthread_mutex_lock(&tid_lock);
	if (atomic_load(&tid_gen) != mad_random_generation())
		tid_seed();
	pthread_mutex_unlock(&tid_lock);
}

uint64_t mad_tid_next(void)
{
	pthread_once(&tid_once, tid_seed);
	if (atomic_load_explicit(&tid_gen, memory_order_relaxed) != mad_random_generation())
		tid_reseed();
	return ((uint64_t)atomic_load_explicit(&tid_high, memory_order_relaxed) << 32) |
	       atomic_fetch_add(&tid_low, 1);
}
