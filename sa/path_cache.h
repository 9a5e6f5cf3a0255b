/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Path cache: PathRecord answers keyed by the query that produced them
 * (method, component mask and the encoded template record), each kept for
 * a lifetime.  The SA client flushes it when the SM LID or the port state
 * changes, since paths may then differ.
 *
 * A typed face of a record cache (record_cache.h: bounded, own mutex,
 * entries copied in and out): a hit costs well under a microsecond.
 */
#ifndef MADCM_SA_PATH_CACHE_H
#define MADCM_SA_PATH_CACHE_H

#include <stdint.h>

#include "sa/client.h"
#include "sa/record_cache.h"

#define SA_PATH_KEY_LEN 80

struct sa_path_key {
	uint8_t b[SA_PATH_KEY_LEN];
};

/* Key of a query: method, comp mask, record with only the masked fields. */
void sa_path_key_make(struct sa_path_key *k, const struct sa_path_query *q);

struct sa_path_cache;

/* now_ns NULL: CLOCK_MONOTONIC (vDSO, no syscall). */
int sa_path_cache_create(struct sa_path_cache **out, unsigned max_entries, uint64_t lifetime_ns,
			 uint64_t (*now_ns)(void *), void *clock_ctx);
void sa_path_cache_destroy(struct sa_path_cache *c);

/*
 * Copy up to `max` cached paths for `k` into out[] and their number into
 * *n.  Returns 0 on a hit, -ENOENT on a miss or an expired entry.
 */
int sa_path_cache_lookup(struct sa_path_cache *c, const struct sa_path_key *k, struct sa_path *out,
			 unsigned max, unsigned *n);
/* Insert or replace; the lifetime starts now.  0, -EINVAL, -ENOMEM. */
int sa_path_cache_insert(struct sa_path_cache *c, const struct sa_path_key *k,
			 const struct sa_path *paths, unsigned n);
/*
 * The same, unless the cache was flushed or had entries dropped since
 * sa_path_cache_gen() returned `gen` (the answer of a query sent before
 * then may be stale): 0, -ESTALE (not inserted), -EINVAL, -ENOMEM.
 */
int sa_path_cache_insert_gen(struct sa_path_cache *c, const struct sa_path_key *k,
			     const struct sa_path *paths, unsigned n, uint64_t gen);
uint64_t sa_path_cache_gen(struct sa_path_cache *c);
/* A lookup that counts no hit or miss (a second look for the same ask). */
int sa_path_cache_peek(struct sa_path_cache *c, const struct sa_path_key *k, struct sa_path *out,
		       unsigned max, unsigned *n);
void sa_path_cache_flush(struct sa_path_cache *c);
/*
 * Drop the entries whose query named `gid` as DGID or whose paths lead
 * to it (the SA said the GID went out of service): how many.
 */
unsigned sa_path_cache_drop_gid(struct sa_path_cache *c, const uint8_t gid[16]);
void sa_path_cache_stats(struct sa_path_cache *c, struct sa_record_cache_stats *out);

#endif
