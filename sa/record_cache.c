/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Record cache (see record_cache.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mad/timer.h"
#include "sa/record_cache.h"

struct entry {
	struct entry *next;
	uint64_t expires_ns;
	unsigned n;
	void *recs; /* n records of rec_size */
	uint8_t key[];
};

/*
 * The last drops, so that an answer in flight across one is refused only
 * if the drop would have picked it (a program's own ServiceRecord Delete
 * says nothing of another host's address: refusing every answer then
 * made a second query for it).  A drop older than the log, or whose
 * argument could not be kept, or any flush, refuses every answer.
 */
#define DROP_LOG 8
struct drop_rec {
	uint64_t gen; /* the cache's gen after this drop */
	sa_record_pred pred;
	void *arg; /* a copy */
};

struct sa_record_cache {
	pthread_mutex_t lock;
	struct entry **buckets;
	unsigned nbuckets; /* power of two */
	unsigned entries, max_entries;
	size_t key_len, rec_size;
	uint64_t lifetime_ns;
	uint64_t gen;		       /* bumped by every flush and drop */
	uint64_t hard_gen;	       /* gen after the last flush or unlogged drop */
	struct drop_rec log[DROP_LOG]; /* drop of gen g in log[g % DROP_LOG] */
	uint64_t (*now_ns)(void *);
	void *clock_ctx;
	struct sa_record_cache_stats st;
};

/* Eight bytes a step (a multiply-xorshift mix), the tail a byte at a time. */
static uint32_t key_hash(const struct sa_record_cache *c, const uint8_t *k)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i = 0;

	for (; i + 8 <= c->key_len; i += 8) {
		uint64_t w;

		memcpy(&w, k + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	for (; i < c->key_len; i++)
		h = (h ^ k[i]) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h ^ (h >> 32));
}

int sa_record_cache_create(struct sa_record_cache **out, size_t key_len, size_t rec_size,
			   unsigned max_entries, uint64_t lifetime_ns, uint64_t (*now_ns)(void *),
			   void *clock_ctx)
{
	struct sa_record_cache *c;
	unsigned nb = 16;

	if (!out || key_len == 0 || rec_size == 0 || max_entries == 0 || lifetime_ns == 0)
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
	c->key_len = key_len;
	c->rec_size = rec_size;
	c->lifetime_ns = lifetime_ns;
	c->now_ns = now_ns ? now_ns : mad_clock_monotonic_ns;
	c->clock_ctx = clock_ctx;
	*out = c;
	return 0;
}

static void entry_free(struct entry *e)
{
	free(e->recs);
	free(e);
}

/* Drop the entries expired by `now` (all by UINT64_MAX) and those `pred` picks: how many. */
static unsigned drop_locked(struct sa_record_cache *c, uint64_t now, sa_record_pred pred,
			    const void *arg)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->nbuckets; i++)
		for (struct entry **pp = &c->buckets[i]; *pp;) {
			struct entry *e = *pp;

			if (e->expires_ns <= now || (pred && pred(e->key, e->recs, e->n, arg))) {
				*pp = e->next;
				entry_free(e);
				c->entries--;
				n++;
			} else {
				pp = &e->next;
			}
		}
	return n;
}

void sa_record_cache_destroy(struct sa_record_cache *c)
{
	if (!c)
		return;
	drop_locked(c, UINT64_MAX, NULL, NULL);
	for (unsigned i = 0; i < DROP_LOG; i++)
		free(c->log[i].arg);
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct entry **find(struct sa_record_cache *c, const uint8_t *k)
{
	struct entry **pp = &c->buckets[key_hash(c, k) & (c->nbuckets - 1)];

	for (; *pp; pp = &(*pp)->next)
		if (!memcmp((*pp)->key, k, c->key_len))
			break;
	return pp;
}

int sa_record_cache_lookup(struct sa_record_cache *c, const void *key, void *out, unsigned max,
			   void **dup, unsigned *n, bool count)
{
	struct entry **pp, *e;
	unsigned cnt;
	uint64_t now;

	if (!c || !key || !n || (!dup && max && !out))
		return -EINVAL;
	now = c->now_ns(c->clock_ctx);
	pthread_mutex_lock(&c->lock);
	pp = find(c, key);
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
	cnt = dup || e->n < max ? e->n : max;
	if (dup && cnt) {
		out = malloc(c->rec_size * cnt);
		if (!out) {
			pthread_mutex_unlock(&c->lock);
			return -ENOMEM;
		}
	}
	if (cnt)
		memcpy(out, e->recs, c->rec_size * cnt);
	if (dup)
		*dup = cnt ? out : NULL;
	*n = cnt;
	c->st.hits += count;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Make room: drop expired entries, else (rarely) everything. */
static void evict_locked(struct sa_record_cache *c, uint64_t now)
{
	c->st.evictions += drop_locked(c, now, NULL, NULL);
	if (c->entries >= c->max_entries)
		c->st.evictions += drop_locked(c, UINT64_MAX, NULL, NULL);
}

/* Would a flush or drop since `gen` have dropped this answer? */
static bool stale_locked(const struct sa_record_cache *c, const uint8_t *key, const void *recs,
			 unsigned n, uint64_t gen)
{
	if (gen == c->gen)
		return false;
	if (gen < c->hard_gen || c->gen - gen > DROP_LOG)
		return true;
	for (uint64_t g = gen + 1; g <= c->gen; g++) {
		const struct drop_rec *d = &c->log[g % DROP_LOG];

		if (d->gen != g || d->pred(key, recs, n, d->arg))
			return true;
	}
	return false;
}

int sa_record_cache_insert(struct sa_record_cache *c, const void *key, const void *recs, unsigned n,
			   bool check_gen, uint64_t gen)
{
	struct entry **pp, *e;
	void *copy = NULL;
	uint64_t now;

	if (!c || !key || (n && !recs))
		return -EINVAL;
	if (n) {
		copy = malloc(c->rec_size * n);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, recs, c->rec_size * n);
	}
	now = c->now_ns(c->clock_ctx);
	pthread_mutex_lock(&c->lock);
	if (check_gen && stale_locked(c, key, recs, n, gen)) {
		c->st.stale++;
		pthread_mutex_unlock(&c->lock);
		free(copy);
		return -ESTALE;
	}
	pp = find(c, key);
	e = *pp;
	if (!e) {
		if (c->entries >= c->max_entries) {
			evict_locked(c, now);
			pp = find(c, key);
		}
		e = calloc(1, sizeof(*e) + c->key_len);
		if (!e) {
			pthread_mutex_unlock(&c->lock);
			free(copy);
			return -ENOMEM;
		}
		memcpy(e->key, key, c->key_len);
		e->next = *pp;
		*pp = e;
		c->entries++;
	} else {
		free(e->recs);
	}
	e->recs = copy;
	e->n = n;
	e->expires_ns = now + c->lifetime_ns;
	c->st.inserts++;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

uint64_t sa_record_cache_gen(struct sa_record_cache *c)
{
	uint64_t g;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	g = c->gen;
	pthread_mutex_unlock(&c->lock);
	return g;
}

void sa_record_cache_flush(struct sa_record_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->hard_gen = ++c->gen;
	drop_locked(c, UINT64_MAX, NULL, NULL);
	c->st.flushes++;
	pthread_mutex_unlock(&c->lock);
}

unsigned sa_record_cache_drop(struct sa_record_cache *c, sa_record_pred pred, const void *arg,
			      size_t arg_len)
{
	void *copy;
	struct drop_rec *d;
	unsigned n;

	if (!c || !pred || !arg)
		return 0;
	copy = malloc(arg_len ? arg_len : 1);
	if (copy)
		memcpy(copy, arg, arg_len);
	pthread_mutex_lock(&c->lock);
	/* An answer in flight may say what was just dropped: logged, so that it is refused. */
	c->gen++;
	d = &c->log[c->gen % DROP_LOG];
	free(d->arg);
	d->gen = copy ? c->gen : 0;
	d->pred = pred;
	d->arg = copy;
	if (!copy)
		c->hard_gen = c->gen;
	n = drop_locked(c, 0, pred, arg); /* expires_ns > 0 */
	c->st.dropped += n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

void sa_record_cache_stats(struct sa_record_cache *c, struct sa_record_cache_stats *out)
{
	if (!c || !out)
		return;
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	out->entries = c->entries;
	pthread_mutex_unlock(&c->lock);
}
