/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Timers for protocol engines: a binary min-heap of deadlines on a clock
 * the owner supplies, so tests drive time with a fake clock and the
 * progress thread with CLOCK_MONOTONIC.  Not thread safe: one engine loop
 * owns a timer heap (docs/design.md, one owner per piece of state).
 */
#ifndef MADCM_MAD_TIMER_H
#define MADCM_MAD_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mad_timer;
typedef void (*mad_timer_fn)(struct mad_timer *t, void *arg);

/* Embed in the object a timer belongs to; zero-initialise. */
struct mad_timer {
	uint64_t deadline_ns;
	size_t heap_index; /* position in the heap + 1; 0 when not armed */
	mad_timer_fn fn;
	void *arg;
};

struct mad_timer_heap {
	struct mad_timer **v;
	size_t n, cap;
	uint64_t (*now_ns)(void *clock_ctx);
	void *clock_ctx;
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t mad_clock_monotonic_ns(void *unused);

void mad_timer_heap_init(struct mad_timer_heap *h, uint64_t (*now_ns)(void *), void *clock_ctx);
void mad_timer_heap_destroy(struct mad_timer_heap *h);

static inline uint64_t mad_timer_now(const struct mad_timer_heap *h)
{
	return h->now_ns(h->clock_ctx);
}

/* (Re)arm `t` to fire `delay_ns` from now.  Returns 0 or -ENOMEM. */
int mad_timer_arm(struct mad_timer_heap *h, struct mad_timer *t, uint64_t delay_ns, mad_timer_fn fn,
		  void *arg);
/* Arm at an absolute deadline on the heap's clock. */
int mad_timer_arm_at(struct mad_timer_heap *h, struct mad_timer *t, uint64_t deadline_ns,
		     mad_timer_fn fn, void *arg);
/* Disarm; harmless when not armed. */
void mad_timer_cancel(struct mad_timer_heap *h, struct mad_timer *t);

static inline bool mad_timer_armed(const struct mad_timer *t)
{
	return t->heap_index != 0;
}

/* Earliest deadline, or UINT64_MAX when nothing is armed. */
uint64_t mad_timer_next_deadline(const struct mad_timer_heap *h);

/*
 * Fire every timer whose deadline is <= now, earliest first.  A callback
 * may arm or cancel any timer, including itself.  Returns how many fired.
 */
unsigned mad_timer_run(struct mad_timer_heap *h);

#endif
