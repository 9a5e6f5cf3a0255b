/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Record cache: the answers of SA queries, keyed by bytes that name the
 * query (key_len of them), each answer an array of fixed-size records
 * kept for a lifetime.  The path and service caches (path_cache.h,
 * service_cache.h) are typed wrappers of it.
 *
 * Bounded: when full, an insert drops the expired entries, else (rarely)
 * everything.  A generation counts flushes and drops, so that the answer
 * of a query sent before a flush, or before a drop that picks it, is not
 * inserted (insert with check_gen).
 *
 * Read from API threads (a hit must cost well under a microsecond: no
 * MAD, no syscall, no trip to the loop), so it has its own mutex; records
 * are copied in and out, never shared.  A NULL cache: lookup and insert
 * fail -EINVAL, the rest do nothing (gen 0, drop none).
 */
#ifndef MADCM_SA_RECORD_CACHE_H
#define MADCM_SA_RECORD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sa_record_cache;

struct sa_record_cache_stats {
	uint64_t hits, misses, expired, inserts, evictions, flushes, dropped, stale;
	unsigned entries;
};

/* now_ns NULL: CLOCK_MONOTONIC (vDSO, no syscall).  0, -EINVAL, -ENOMEM. */
int sa_record_cache_create(struct sa_record_cache **out, size_t key_len, size_t rec_size,
			   unsigned max_entries, uint64_t lifetime_ns, uint64_t (*now_ns)(void *),
			   void *clock_ctx);
void sa_record_cache_destroy(struct sa_record_cache *c);

/*
 * The records cached for `key`: up to `max` copied into out[], or (dup
 * non-NULL) all of them in a malloc'd *dup the caller frees (NULL for
 * none); their number in *n.  0 on a hit, -ENOENT on a miss or an expired entry,
 * -EINVAL, -ENOMEM.  `count`: a hit or miss counts in the stats (not for
 * a second look for the same ask).
 */
int sa_record_cache_lookup(struct sa_record_cache *c, const void *key, void *out, unsigned max,
			   void **dup, unsigned *n, bool count);
/*
 * Insert or replace `n` records (NULL when 0); the lifetime starts now.
 * With check_gen, not when the cache was flushed or had entries dropped
 * since sa_record_cache_gen() returned `gen`: 0, -ESTALE, -EINVAL, -ENOMEM.
 */
int sa_record_cache_insert(struct sa_record_cache *c, const void *key, const void *recs, unsigned n,
			   bool check_gen, uint64_t gen);
uint64_t sa_record_cache_gen(struct sa_record_cache *c);
void sa_record_cache_flush(struct sa_record_cache *c);

/* Picks an entry to drop from its key and records. */
typedef bool (*sa_record_pred)(const uint8_t *key, const void *recs, unsigned n, const void *arg);

/*
 * Drop the entries `pred` picks (arg non-NULL, arg_len bytes): how many.
 * An answer in flight is refused by a later insert (check_gen) if `pred`
 * picks it too: the drop is logged with a copy of arg.
 */
unsigned sa_record_cache_drop(struct sa_record_cache *c, sa_record_pred pred, const void *arg,
			      size_t arg_len);
void sa_record_cache_stats(struct sa_record_cache *c, struct sa_record_cache_stats *out);

#endif
