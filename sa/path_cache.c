/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Path cache (see path_cache.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "sa/path_cache.h"
#include "sa/sa_wire.h"

/* The handle is the record cache itself, under the path cache's name. */
static struct sa_record_cache *rcache(struct sa_path_cache *c)
{
	return (struct sa_record_cache *)c;
}

void sa_path_key_make(struct sa_path_key *k, const struct sa_path_query *q)
{
	struct sa_path masked;

	memset(k, 0, sizeof(*k));
	/* Fields outside the mask do not take part in the query. */
	memset(&masked, 0, sizeof(masked));
	if (q->comp_mask & SA_PR_COMP_SERVICE_ID)
		masked.service_id = q->rec.service_id;
	if (q->comp_mask & SA_PR_COMP_DGID)
		memcpy(masked.dgid, q->rec.dgid, 16);
	if (q->comp_mask & SA_PR_COMP_SGID)
		memcpy(masked.sgid, q->rec.sgid, 16);
#define KEEP(bit, f)                                                                               \
	if (q->comp_mask & (bit))                                                                  \
	masked.f = q->rec.f
	KEEP(SA_PR_COMP_DLID, dlid);
	KEEP(SA_PR_COMP_SLID, slid);
	KEEP(SA_PR_COMP_RAW_TRAFFIC, raw_traffic);
	KEEP(SA_PR_COMP_FLOW_LABEL, flow_label);
	KEEP(SA_PR_COMP_HOP_LIMIT, hop_limit);
	KEEP(SA_PR_COMP_TCLASS, tclass);
	KEEP(SA_PR_COMP_REVERSIBLE, reversible);
	KEEP(SA_PR_COMP_NUMB_PATH, numb_path);
	KEEP(SA_PR_COMP_P_KEY, pkey);
	KEEP(SA_PR_COMP_QOS_CLASS, qos_class);
	KEEP(SA_PR_COMP_SL, sl);
	KEEP(SA_PR_COMP_MTU_SELECTOR, mtu_selector);
	KEEP(SA_PR_COMP_MTU, mtu);
	KEEP(SA_PR_COMP_RATE_SELECTOR, rate_selector);
	KEEP(SA_PR_COMP_RATE, rate);
	KEEP(SA_PR_COMP_PACKET_LIFE_TIME_SELECTOR, packet_life_time_selector);
	KEEP(SA_PR_COMP_PACKET_LIFE_TIME, packet_life_time);
	KEEP(SA_PR_COMP_PREFERENCE, preference);
#undef KEEP
	/* Out-of-range values cannot be encoded: they never reach the SA either. */
	if (sa_path_encode(&masked, k->b))
		memset(k->b, 0xff, SA_PR_SIZE);
	memcpy(k->b + SA_PR_SIZE, &q->comp_mask, 8);
	k->b[SA_PR_SIZE + 8] = q->table ? 1 : 0;
}

int sa_path_cache_create(struct sa_path_cache **out, unsigned max_entries, uint64_t lifetime_ns,
			 uint64_t (*now_ns)(void *), void *clock_ctx)
{
	return sa_record_cache_create((struct sa_record_cache **)out, SA_PATH_KEY_LEN,
				      sizeof(struct sa_path), max_entries, lifetime_ns, now_ns,
				      clock_ctx);
}

void sa_path_cache_destroy(struct sa_path_cache *c)
{
	sa_record_cache_destroy(rcache(c));
}

int sa_path_cache_lookup(struct sa_path_cache *c, const struct sa_path_key *k, struct sa_path *out,
			 unsigned max, unsigned *n)
{
	return sa_record_cache_lookup(rcache(c), k, out, max, NULL, n, true);
}

int sa_path_cache_peek(struct sa_path_cache *c, const struct sa_path_key *k, struct sa_path *out,
		       unsigned max, unsigned *n)
{
	return sa_record_cache_lookup(rcache(c), k, out, max, NULL, n, false);
}

int sa_path_cache_insert(struct sa_path_cache *c, const struct sa_path_key *k,
			 const struct sa_path *paths, unsigned n)
{
	return sa_record_cache_insert(rcache(c), k, paths, n, false, 0);
}

int sa_path_cache_insert_gen(struct sa_path_cache *c, const struct sa_path_key *k,
			     const struct sa_path *paths, unsigned n, uint64_t gen)
{
	return sa_record_cache_insert(rcache(c), k, paths, n, true, gen);
}

uint64_t sa_path_cache_gen(struct sa_path_cache *c)
{
	return sa_record_cache_gen(rcache(c));
}

static bool leads_to(const uint8_t *key, const void *recs, unsigned n, const void *arg)
{
	const struct sa_path *paths = recs;
	const uint8_t *gid = arg;
	struct sa_path q;

	sa_path_decode(key, &q); /* the query's record: DGID zero unless masked */
	if (!memcmp(q.dgid, gid, 16))
		return true;
	for (unsigned i = 0; i < n; i++)
		if (!memcmp(paths[i].dgid, gid, 16))
			return true;
	return false;
}

unsigned sa_path_cache_drop_gid(struct sa_path_cache *c, const uint8_t gid[16])
{
	return sa_record_cache_drop(rcache(c), leads_to, gid, 16);
}

void sa_path_cache_flush(struct sa_path_cache *c)
{
	sa_record_cache_flush(rcache(c));
}

void sa_path_cache_stats(struct sa_path_cache *c, struct sa_record_cache_stats *out)
{
	sa_record_cache_stats(rcache(c), out);
}
