/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Random bytes from getrandom(2) or a test's source (see random.h). */
#include "config.h"

#include <stdatomic.h>
#include <sys/random.h>

#include "mad/random.h"

static _Atomic(mad_random_fn *) src_fn;
static _Atomic(void *) src_arg;
static atomic_uint src_gen;

int mad_random_bytes(void *buf, size_t n, unsigned int flags)
{
	mad_random_fn *fn = atomic_load_explicit(&src_fn, memory_order_acquire);

	if (fn) {
		fn(atomic_load_explicit(&src_arg, memory_order_relaxed), buf, n);
		return 0;
	}
	return getrandom(buf, n, flags) == (ssize_t)n ? 0 : -1;
}

void mad_random_set_source(mad_random_fn *fn, void *arg)
{
	atomic_store_explicit(&src_arg, arg, memory_order_relaxed);
	atomic_store_explicit(&src_fn, fn, memory_order_release);
	atomic_fetch_add_explicit(&src_gen, 1, memory_order_acq_rel);
}

unsigned int mad_random_generation(void)
{
	return atomic_load_explicit(&src_gen, memory_order_acquire);
}
