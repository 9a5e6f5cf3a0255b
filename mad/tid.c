/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* TID allocation (see tid.h). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mad/tid.h"

static uint32_t tid_high;
static _Atomic uint32_t tid_low;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;

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

	if (getrandom(r, sizeof(r), 0) != sizeof(r)) {
		/* No entropy source: mix what differs between processes. */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		r[0] = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16) ^ (uint32_t)ts.tv_sec;
		r[1] = r[0] * 2654435761u;
	}
	tid_high = r[0];
	atomic_store(&tid_low, r[1]);
}

uint64_t mad_tid_next(void)
{
	pthread_once(&tid_once, tid_seed);
	return ((uint64_t)tid_high << 32) | atomic_fetch_add(&tid_low, 1);
}
