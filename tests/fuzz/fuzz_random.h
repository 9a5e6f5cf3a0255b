/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * A fuzz target's random source (mad/random.h): an xorshift restarted at
 * the start of each input, so that the comm IDs and TIDs an input makes
 * are the same on every run of it (libFuzzer needs one input to take one
 * path).  Also a trace hash a target may keep of what an input made, to
 * show that two runs of one corpus did the same (docs/HACKING.md,
 * "Fuzzing").
 */
#ifndef MADCM_TESTS_FUZZ_RANDOM_H
#define MADCM_TESTS_FUZZ_RANDOM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mad/random.h"

static uint64_t fuzz_random_state;

static void fuzz_random_fill(void *arg, void *buf, size_t n)
{
	uint64_t *s = arg, x = *s;
	uint8_t *b = buf;

	while (n) {
		size_t k = n < sizeof(x) ? n : sizeof(x);

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b, &x, k);
		b += k;
		n -= k;
	}
	*s = x;
}

/* At the start of each input: the same bytes again, and what the library
 * seeded from the last input's (the TIDs, an engine's cached IDs) is
 * seeded again (mad_random_set_source starts a generation). */
static inline void fuzz_random_restart(void)
{
	fuzz_random_state = 0x9e3779b97f4a7c15ull;
	mad_random_set_source(fuzz_random_fill, &fuzz_random_state);
}

/* FNV-1a over what a target chooses to trace. */
static inline uint64_t fuzz_trace_add(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#define FUZZ_TRACE_INIT 0xcbf29ce484222325ull

#endif
