/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * zalloc(n): calloc(1, n), for the small objects made for every connection
 * or event (CM connections, librdmacm ids and events, QP attributes kept
 * ahead).
 *
 * glibc's calloc() (2.36, Debian 12) always allocates from an arena, under
 * the arena's lock, and never from the thread's cache of freed chunks that
 * malloc() looks in first.  malloc() and memset() of the same size take a
 * chunk of that size freed earlier, as on every connection after the
 * first, without the lock: about 250 instructions fewer a call under
 * callgrind (docs/results/connect-latency.md).
 */
#ifndef MADCM_MAD_ZALLOC_H
#define MADCM_MAD_ZALLOC_H

#include <stdlib.h>
#include <string.h>

static inline void *zalloc(size_t n)
{
	void *p = malloc(n);

	/*
	 * GCC turns a malloc() whose memory is then zeroed back into calloc();
	 * after this empty asm it no longer knows where p came from.
	 */
	__asm__("" : "+r"(p));
	if (p)
		memset(p, 0, n);
	return p;
}

#endif
