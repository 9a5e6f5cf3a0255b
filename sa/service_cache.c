/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Service cache (see service_cache.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mad/timer.h"
#include "sa/sa_wire.h"
#include "sa/service_cache.h"

struct entry {
	struct entry *next;
	struct sa_service_key key;
	uint64_t expires_ns;
	unsigned n;
	struct sa_service *recs;
};

/* A short list: the cache holds a host's destinations, scanned whole on a drop. */
struct sa_service_cache {
	pthread_mutex_t lock;
	struct entry *head;
	unsigned entries, max_entries;
	uint64_t lifetime_ns;
	uint64_t gen; /* bumped by every flush and drop */
	uint64_t (*now_ns)(void *);
	void *clock_ctx;
	struct sa_service_cache_stats st;
};

int sa_service_key_make(struct sa_service_key *k, const struct sa_service *s, uint64_t comp_mask)
{
	memset(k, 0, sizeof(*k));
	if (sa_service_encode(s, k->b))
		return -EINVAL;
	/* Component bit i is field i of the record: fields outside the mask take no part. */
	for (unsigned i = 0; i < SA_SR__COUNT; i++)
		if (!(comp_mask & SA_COMP(i)))
			memset(k->b + sa_sr_fields[i].byte, 0, sa_sr_fields[i].width / 8);
	memcpy(k->b + SA_SR_SIZE, &comp_mask, 8);
	return 0;
}

int sa_service_cache_create(struct sa_service_cache **out, unsigned max_entries,
			    uint64_t lifetime_ns, uint64_t (*now_ns)(void *), void *clock_ctx)
{
	struct sa_service_cache *c;

	if (!out || max_entries == 0 || lifetime_ns == 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->max_entries = max_entries;
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

/* Drop the entries `pred` picks (all when NULL): how many. */
static unsigned drop_locked(struct sa_service_cache *c,
			    bool (*pred)(const struct entry *e, const void *arg), const void *arg)
{
	unsigned n = 0;

	for (struct entry **pp = &c->head; *pp;) {
		struct entry *e = *pp;

		if (!pred || pred(e, arg)) {
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

void sa_service_cache_destroy(struct sa_service_cache *c)
{
	if (!c)
		return;
	drop_locked(c, NULL, NULL);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct entry **find(struct sa_service_cache *c, const struct sa_service_key *k)
{
	struct entry **pp = &c->head;

	for (; *pp; pp = &(*pp)->next)
		if (!memcmp((*pp)->key.b, k->b, SA_SERVICE_KEY_LEN))
			break;
	return pp;
}

static int lookup(struct sa_service_cache *c, const struct sa_service_key *k,
		  struct sa_service **out, unsigned *n, bool count)
{
	struct entry **pp, *e;
	struct sa_service *copy;
	uint64_t now;

	if (!c || !k || !out || !n)
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
	copy = malloc(sizeof(*copy) * e->n);
	if (!copy) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	memcpy(copy, e->recs, sizeof(*copy) * e->n);
	*out = copy;
	*n = e->n;
	c->st.hits += count;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int sa_service_cache_lookup(struct sa_service_cache *c, const struct sa_service_key *k,
			    struct sa_service **out, unsigned *n)
{
	return lookup(c, k, out, n, true);
}

int sa_service_cache_peek(struct sa_service_cache *c, const struct sa_service_key *k,
			  struct sa_service **out, unsigned *n)
{
	return lookup(c, k, out, n, false);
}

static bool expired(const struct entry *e, const void *arg)
{
	return e->expires_ns <= *(const uint64_t *)arg;
}

int sa_service_cache_insert_gen(struct sa_service_cache *c, const struct sa_service_key *k,
				const struct sa_service *recs, unsigned n, uint64_t gen)
{
	struct entry **pp, *e;
	struct sa_service *copy;
	uint64_t now;

	if (!c || !k || !recs || !n)
		return -EINVAL;
	copy = malloc(sizeof(*copy) * n);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, recs, sizeof(*copy) * n);
	now = c->now_ns(c->clock_ctx);
	pthread_mutex_lock(&c->lock);
	if (gen != c->gen) {
		c->st.stale++;
		pthread_mutex_unlock(&c->lock);
		free(copy);
		return -ESTALE;
	}
	pp = find(c, k);
	e = *pp;
	if (!e) {
		if (c->entries >= c->max_entries) {
			unsigned d = drop_locked(c, expired, &now);

			/* Still full: start again (rare; the cache only saves queries). */
			if (c->entries >= c->max_entries)
				d += drop_locked(c, NULL, NULL);
			c->st.evictions += d;
		}
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&c->lock);
			free(copy);
			return -ENOMEM;
		}
		e->key = *k;
		e->next = c->head;
		c->head = e;
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

uint64_t sa_service_cache_gen(struct sa_service_cache *c)
{
	uint64_t g;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	g = c->gen;
	pthread_mutex_unlock(&c->lock);
	return g;
}

void sa_service_cache_flush(struct sa_service_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->gen++;
	drop_locked(c, NULL, NULL);
	c->st.flushes++;
	pthread_mutex_unlock(&c->lock);
}

static unsigned drop(struct sa_service_cache *c,
		     bool (*pred)(const struct entry *e, const void *arg), const void *arg)
{
	unsigned n;

	if (!c || !arg)
		return 0;
	pthread_mutex_lock(&c->lock);
	c->gen++; /* an answer in flight may say what was just dropped */
	n = drop_locked(c, pred, arg);
	c->st.dropped += n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

static uint64_t key_mask(const struct entry *e)
{
	uint64_t m;

	memcpy(&m, e->key.b + SA_SR_SIZE, 8);
	return m;
}

static bool names_gid(const struct entry *e, const void *arg)
{
	const uint8_t *gid = arg;

	if ((key_mask(e) & SA_SR_COMP_SERVICE_GID) &&
	    !memcmp(e->key.b + sa_sr_fields[SA_SR_SERVICE_GID].byte, gid, 16))
		return true;
	for (unsigned i = 0; i < e->n; i++)
		if (!memcmp(e->recs[i].gid, gid, 16))
			return true;
	return false;
}

unsigned sa_service_cache_drop_gid(struct sa_service_cache *c, const uint8_t gid[16])
{
	return drop(c, names_gid, gid);
}

static bool may_change(const struct entry *e, const void *arg)
{
	const struct sa_service *s = arg;
	struct sa_service q;

	if (!(key_mask(e) & SA_SR_COMP_SERVICE_ID))
		return true;
	sa_service_decode(e->key.b, &q);
	if (q.id == s->id)
		return true;
	for (unsigned i = 0; i < e->n; i++)
		if (e->recs[i].id == s->id)
			return true;
	return false;
}

unsigned sa_service_cache_drop_record(struct sa_service_cache *c, const struct sa_service *s)
{
	return drop(c, may_change, s);
}

void sa_service_cache_stats(struct sa_service_cache *c, struct sa_service_cache_stats *out)
{
	if (!c || !out)
		return;
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	out->entries = c->entries;
	pthread_mutex_unlock(&c->lock);
}
