/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Random bytes for what madcm draws at random: comm IDs (cm/ids.c), the
 * TID seed (tid.c), madcmd's ephemeral port search.  getrandom(2) unless a
 * test or fuzz target set a source of its own, so that one input always
 * takes the same path.
 */
#ifndef MADCM_MAD_RANDOM_H
#define MADCM_MAD_RANDOM_H

#include <stddef.h>

/*
 * Fill buf with n bytes from the source: 0, or -1 when getrandom(2) (with
 * its flags, e.g. GRND_NONBLOCK) gave fewer, and the caller falls back to
 * what it did without entropy.  Thread safe.
 */
int mad_random_bytes(void *buf, size_t n, unsigned int flags);

/* A test's source: fills buf with n bytes. */
typedef void mad_random_fn(void *arg, void *buf, size_t n);

/*
 * Tests only: draw from fn(arg, ...) from now on; fn NULL restores
 * getrandom(2).  Each call also starts a new generation (below), so what
 * was seeded from the old source is seeded again from the new one: a fuzz
 * target calls it at the start of each input with its generator restarted.
 * Call it while no other thread draws.
 */
void mad_random_set_source(mad_random_fn *fn, void *arg);

/*
 * How many times the source was set: whoever keeps bytes or a seed from
 * it draws again when this changed (the TID seed, an engine's cached IDs).
 */
unsigned int mad_random_generation(void);

#endif
