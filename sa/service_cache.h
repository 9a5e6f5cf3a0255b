/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Service cache: ServiceRecord answers keyed by the query that produced
 * them (component mask and the encoded template with only the masked
 * fields), each kept for a lifetime, as the path cache keeps PathRecords
 * (path_cache.h).  It serves resolution queries (address resolution by
 * ServiceRecord, lib/addr_sa.h): answers with records only, never "no
 * record", since a peer may register one a moment later.
 *
 * Dropped: everything when the SA client's port changes (flush), the
 * answers naming a GID the SA reports out of service, and the answers a
 * record registered or deleted through the same client may change.
 * A typed face of a record cache (record_cache.h), as the path cache.
 */
#ifndef MADCM_SA_SERVICE_CACHE_H
#define MADCM_SA_SERVICE_CACHE_H

#include <stdint.h>

#include "sa/client.h"
#include "sa/record_cache.h"

#define SA_SERVICE_KEY_LEN (SA_SR_SIZE + 8)

struct sa_service_key {
	uint8_t b[SA_SERVICE_KEY_LEN];
};

/* Key of a GetTable: the record with only the masked fields, the mask.  0 or -EINVAL. */
int sa_service_key_make(struct sa_service_key *k, const struct sa_service *s, uint64_t comp_mask);

struct sa_service_cache;

/* now_ns NULL: CLOCK_MONOTONIC. */
int sa_service_cache_create(struct sa_service_cache **out, unsigned max_entries,
			    uint64_t lifetime_ns, uint64_t (*now_ns)(void *), void *clock_ctx);
void sa_service_cache_destroy(struct sa_service_cache *c);

/*
 * The cached records of `k`, in a malloc'd *out (free() it) and their
 * number in *n: 0 on a hit, -ENOENT on a miss or an expired entry,
 * -ENOMEM.  peek counts no hit or miss (a second look for the same ask).
 */
int sa_service_cache_lookup(struct sa_service_cache *c, const struct sa_service_key *k,
			    struct sa_service **out, unsigned *n);
int sa_service_cache_peek(struct sa_service_cache *c, const struct sa_service_key *k,
			  struct sa_service **out, unsigned *n);
/*
 * Insert or replace (n >= 1: no negative entries), unless the cache was
 * flushed or had entries dropped since sa_service_cache_gen() returned
 * `gen`: 0, -ESTALE, -EINVAL, -ENOMEM.
 */
int sa_service_cache_insert_gen(struct sa_service_cache *c, const struct sa_service_key *k,
				const struct sa_service *recs, unsigned n, uint64_t gen);
uint64_t sa_service_cache_gen(struct sa_service_cache *c);
void sa_service_cache_flush(struct sa_service_cache *c);
/* Drop the answers with a record at `gid`, or whose query named it: how many. */
unsigned sa_service_cache_drop_gid(struct sa_service_cache *c, const uint8_t gid[16]);
/*
 * Drop the answers a Set or Delete of `s` may change: those with a record
 * of its ServiceID, and those whose query did not name another ServiceID.
 */
unsigned sa_service_cache_drop_record(struct sa_service_cache *c, const struct sa_service *s);
void sa_service_cache_stats(struct sa_service_cache *c, struct sa_record_cache_stats *out);

#endif
