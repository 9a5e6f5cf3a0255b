/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Binary min-heap of timers (see timer.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "mad/timer.h"

uint64_t mad_clock_monotonic_ns(void *unused)
{
	struct timespec ts;

	(void)unused;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void mad_timer_heap_init(struct mad_timer_heap *h, uint64_t (*now_ns)(void *), void *clock_ctx)
{
	h->v = NULL;
	h->n = h->cap = 0;
	h->now_ns = now_ns ? now_ns : mad_clock_monotonic_ns;
	h->clock_ctx = clock_ctx;
}

void mad_timer_heap_destroy(struct mad_timer_heap *h)
{
	for (size_t i = 0; i < h->n; i++)
		h->v[i]->heap_index = 0;
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

static void place(struct mad_timer_heap *h, size_t i, struct mad_timer *t)
{
	h->v[i] = t;
	t->heap_index = i + 1;
}

static void sift_up(struct mad_timer_heap *h, size_t i)
{
	struct mad_timer *t = h->v[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (h->v[parent]->deadline_ns <= t->deadline_ns)
			break;
		place(h, i, h->v[parent]);
		i = parent;
	}
	place(h, i, t);
}

static void sift_down(struct mad_timer_heap *h, size_t i)
{
	struct mad_timer *t = h->v[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1]->deadline_ns < h->v[c]->deadline_ns)
			c++;
		if (t->deadline_ns <= h->v[c]->deadline_ns)
			break;
		place(h, i, h->v[c]);
		i = c;
	}
	place(h, i, t);
}

void mad_timer_cancel(struct mad_timer_heap *h, struct mad_timer *t)
{
	size_t i;

	if (!t->heap_index)
		return;
	i = t->heap_index - 1;
	t->heap_index = 0;
	h->n--;
	if (i == h->n)
		return;
	h->v[i] = h->v[h->n];
	h->v[i]->heap_index = i + 1;
	sift_down(h, i);
	sift_up(h, i);
}

int mad_timer_arm_at(struct mad_timer_heap *h, struct mad_timer *t, uint64_t deadline_ns,
		     mad_timer_fn fn, void *arg)
{
	mad_timer_cancel(h, t);
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct mad_timer **v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	t->deadline_ns = deadline_ns;
	t->fn = fn;
	t->arg = arg;
	h->v[h->n] = t;
	t->heap_index = ++h->n;
	sift_up(h, h->n - 1);
	return 0;
}

int mad_timer_arm(struct mad_timer_heap *h, struct mad_timer *t, uint64_t delay_ns, mad_timer_fn fn,
		  void *arg)
{
	return mad_timer_arm_at(h, t, mad_timer_now(h) + delay_ns, fn, arg);
}

uint64_t mad_timer_next_deadline(const struct mad_timer_heap *h)
{
	return h->n ? h->v[0]->deadline_ns : UINT64_MAX;
}

unsigned mad_timer_run(struct mad_timer_heap *h)
{
	uint64_t now = mad_timer_now(h);
	unsigned fired = 0;

	while (h->n && h->v[0]->deadline_ns <= now) {
		struct mad_timer *t = h->v[0];

		mad_timer_cancel(h, t);
		fired++;
		t->fn(t, t->arg);
	}
	return fired;
}
