/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Path cache (see path_cache.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mad/timer.h"
#include "sa/path_cache.h"
#include "sa/sa_wire.h"

struct entry {
	struct entry *next;
	struct sa_path_key key;
	uint64_t expires_ns;
	unsigned n;
	struct sa_path *paths;
};

struct sa_path_cache {
	pthread_mutex_t lock;
	struct entry **buckets;
	unsigned nbuckets; /* power of two */
	unsigned entries, max_entries;
	uint64_t lifetime_ns;
	uint64_t gen; /* bumped by every flush and drop */
	uint64_t (*now_ns)(void *);
	void *clock_ctx;
	struct sa_path_cache_stats st;
};

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

/* Eight bytes a step (a multiply-xorshift mix), not one: the key is 80 bytes. */
static uint32_t key_hash(const struct sa_path_key *k)
{
	uint64_t h = 0xcbf29ce484222325ull;

	_Static_assert(SA_PATH_KEY_LEN % 8 == 0, "whole words");
	for (unsigned i = 0; i < SA_PATH_KEY_LEN; i += 8) {
		uint64_t w;

		memcpy(&w, k->b + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ (h >> 32));
}

int sa_path_cache_create(struct sa_path_cache **out, unsigned max_entries, uint64_t lifetime_ns,
			 uint64_t (*now_ns)(void *), void *clock_ctx)
{
	struct sa_path_cache *c;
	unsigned nb = 16;

	if (!out || max_entries == 0 || lifetime_ns == 0)
		return -EINVAL;
	while (nb < max_entries * 2 && nb < (1u << 24))
		nb *= 2;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->buckets = calloc(nb, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->nbuckets = nb;
	c->max_entries = max_entries;
	c->lifetime_ns = lifetime_ns;
	c->now_ns = now_ns ? now_ns : mad_clock_monotonic_ns;
	c->clock_ctx = clock_ctx;
	*out = c;
	return 0;
}

static void entry_free(struct entry *e)
{
	free(e->paths);
	free(e);
}

static void flush_locked(struct sa_path_cache *c)
{
	for (unsigned i = 0; i < c->nbuckets; i++) {
		struct entry *e = c->buckets[i];

		while (e) {
			struct entry *next = e->next;

			entry_free(e);
			e = next;
		}
		c->buckets[i] = NULL;
	}
	c->entries = 0;
}

void sa_path_cache_destroy(struct sa_path_cache *c)
{
	if (!c)
		return;
	flush_locked(c);
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct entry **find(struct sa_path_cache *c, const struct sa_path_key *k)
{
	struct entry **pp = &c->buckets[key_hash(k) & (c->nbuckets - 1)];

	for (; *pp; pp = &(*pp)->next)
		if (!memcmp((*pp)->key.b, k->b, SA_PATH_KEY_LEN))
			break;
	return pp;
}

static int lookup(struct sa_path_cache *c, const struct sa_path_key *k, struct sa_path *out,
		  unsigned max, unsigned *n, bool count)
{
	struct entry **pp, *e;
	uint64_t now;

	if (!c || !k || !n || (max && !out))
		return -EINVAL;
	now = c->now_ns(c->clock_ctx);
	pthread_mutex_lock(&c->lock);
	pp = find(c, k);
	e = *pp;
	if (e && e->expires_ns <= now) {
		*pp = e->next;
		entry_free(e);
		c->entries--;
		c->st.expired++;
		e = NULL;
	}
	if (!e) {
		c->st.misses += count;
		pthread_mutex_unlock(&c->lock);
		return -ENOENT;
	}
	*n = e->n < max ? e->n : max;
	if (*n)
		memcpy(out, e->paths, sizeof(*out) * *n);
	c->st.hits += count;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int sa_path_cache_lookup(struct sa_path_cache *c, const struct sa_path_key *k, struct sa_path *out,
			 unsigned max, unsigned *n)
{
	return lookup(c, k, out, max, n, true);
}

int sa_path_cache_peek(struct sa_path_cache *c, const struct sa_path_key *k, struct sa_path *out,
		       unsigned max, unsigned *n)
{
	return lookup(c, k, out, max, n, false);
}

/* Make room: drop expired entries, else (rarely) everything. */
static void evict_locked(struct sa_path_cache *c, uint64_t now)
{
	for (unsigned i = 0; i < c->nbuckets; i++)
		for (struct entry **pp = &c->buckets[i]; *pp;) {
			struct entry *e = *pp;

			if (e->expires_ns <= now) {
				*pp = e->next;
				entry_free(e);
				c->entries--;
				c->st.evictions++;
			} else {
				pp = &e->next;
			}
		}
	if (c->entries >= c->max_entries) {
		c->st.evictions += c->entries;
		flush_locked(c);
	}
}

static int insert(struct sa_path_cache *c, const struct sa_path_key *k, const struct sa_path *paths,
		  unsigned n, bool check_gen, uint64_t gen)
{
	struct entry **pp, *e;
	struct sa_path *copy = NULL;
	uint64_t now;

	if (!c || !k || (n && !paths))
		return -EINVAL;
	if (n) {
		copy = malloc(sizeof(*copy) * n);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, paths, sizeof(*copy) * n);
	}
	now = c->now_ns(c->clock_ctx);
	pthread_mutex_lock(&c->lock);
	if (check_gen && gen != c->gen) {
		c->st.stale++;
		pthread_mutex_unlock(&c->lock);
		free(copy);
		return -ESTALE;
	}
	pp = find(c, k);
	e = *pp;
	if (!e) {
		if (c->entries >= c->max_entries) {
			evict_locked(c, now);
			pp = find(c, k);
		}
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&c->lock);
			free(copy);
			return -ENOMEM;
		}
		e->key = *k;
		e->next = *pp;
		*pp = e;
		c->entries++;
	} else {
		free(e->paths);
	}
	e->paths = copy;
	e->n = n;
	e->expires_ns = now + c->lifetime_ns;
	c->st.inserts++;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int sa_path_cache_insert(struct sa_path_cache *c, const struct sa_path_key *k,
			 const struct sa_path *paths, unsigned n)
{
	return insert(c, k, paths, n, false, 0);
}

int sa_path_cache_insert_gen(struct sa_path_cache *c, const struct sa_path_key *k,
			     const struct sa_path *paths, unsigned n, uint64_t gen)
{
	return insert(c, k, paths, n, true, gen);
}

uint64_t sa_path_cache_gen(struct sa_path_cache *c)
{
	uint64_t g;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	g = c->gen;
	pthread_mutex_unlock(&c->lock);
	return g;
}

static bool leads_to(const struct entry *e, const uint8_t gid[16])
{
	struct sa_path q;

	sa_path_decode(e->key.b, &q); /* the query's record: DGID zero unless masked */
	if (!memcmp(q.dgid, gid, 16))
		return true;
	for (unsigned i = 0; i < e->n; i++)
		if (!memcmp(e->paths[i].dgid, gid, 16))
			return true;
	return false;
}

unsigned sa_path_cache_drop_gid(struct sa_path_cache *c, const uint8_t gid[16])
{
	unsigned dropped = 0;

	if (!c || !gid)
		return 0;
	pthread_mutex_lock(&c->lock);
	c->gen++;
	for (unsigned i = 0; i < c->nbuckets; i++)
		for (struct entry **pp = &c->buckets[i]; *pp;) {
			struct entry *e = *pp;

			if (leads_to(e, gid)) {
				*pp = e->next;
				entry_free(e);
				c->entries--;
				dropped++;
			} else {
				pp = &e->next;
			}
		}
	c->st.dropped += dropped;
	pthread_mutex_unlock(&c->lock);
	return dropped;
}

void sa_path_cache_flush(struct sa_path_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->gen++;
	flush_locked(c);
	c->st.flushes++;
	pthread_mutex_unlock(&c->lock);
}

void sa_path_cache_stats(struct sa_path_cache *c, struct sa_path_cache_stats *out)
{
	if (!c || !out)
		return;
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	out->entries = c->entries;
	pthread_mutex_unlock(&c->lock);
}
