/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Service cache (see service_cache.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "sa/sa_wire.h"
#include "sa/service_cache.h"

/* The handle is the record cache itself, under the service cache's name. */
static struct sa_record_cache *rcache(struct sa_service_cache *c)
{
	return (struct sa_record_cache *)c;
}

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
	return sa_record_cache_create((struct sa_record_cache **)out, SA_SERVICE_KEY_LEN,
				      sizeof(struct sa_service), max_entries, lifetime_ns, now_ns,
				      clock_ctx);
}

void sa_service_cache_destroy(struct sa_service_cache *c)
{
	sa_record_cache_destroy(rcache(c));
}

static int lookup(struct sa_service_cache *c, const struct sa_service_key *k,
		  struct sa_service **out, unsigned *n, bool count)
{
	void *dup;
	int rc;

	if (!out)
		return -EINVAL;
	rc = sa_record_cache_lookup(rcache(c), k, NULL, 0, &dup, n, count);
	if (rc == 0)
		*out = dup;
	return rc;
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

int sa_service_cache_insert_gen(struct sa_service_cache *c, const struct sa_service_key *k,
				const struct sa_service *recs, unsigned n, uint64_t gen)
{
	if (!recs || !n)
		return -EINVAL; /* "no record" is never cached */
	return sa_record_cache_insert(rcache(c), k, recs, n, true, gen);
}

uint64_t sa_service_cache_gen(struct sa_service_cache *c)
{
	return sa_record_cache_gen(rcache(c));
}

void sa_service_cache_flush(struct sa_service_cache *c)
{
	sa_record_cache_flush(rcache(c));
}

static uint64_t key_mask(const uint8_t *key)
{
	uint64_t m;

	memcpy(&m, key + SA_SR_SIZE, 8);
	return m;
}

static bool names_gid(const uint8_t *key, const void *recs, unsigned n, const void *arg)
{
	const struct sa_service *r = recs;
	const uint8_t *gid = arg;

	if ((key_mask(key) & SA_SR_COMP_SERVICE_GID) &&
	    !memcmp(key + sa_sr_fields[SA_SR_SERVICE_GID].byte, gid, 16))
		return true;
	for (unsigned i = 0; i < n; i++)
		if (!memcmp(r[i].gid, gid, 16))
			return true;
	return false;
}

unsigned sa_service_cache_drop_gid(struct sa_service_cache *c, const uint8_t gid[16])
{
	return sa_record_cache_drop(rcache(c), names_gid, gid, 16);
}

static bool may_change(const uint8_t *key, const void *recs, unsigned n, const void *arg)
{
	const struct sa_service *s = arg, *r = recs;
	struct sa_service q;

	if (!(key_mask(key) & SA_SR_COMP_SERVICE_ID))
		return true;
	sa_service_decode(key, &q);
	/* A query by name is answered by records of that name alone. */
	if ((key_mask(key) & SA_SR_COMP_SERVICE_NAME) && strncmp(q.name, s->name, sizeof(q.name)))
		return false;
	if (q.id == s->id)
		return true;
	for (unsigned i = 0; i < n; i++)
		if (r[i].id == s->id)
			return true;
	return false;
}

unsigned sa_service_cache_drop_record(struct sa_service_cache *c, const struct sa_service *s)
{
	return sa_record_cache_drop(rcache(c), may_change, s, sizeof(*s));
}

void sa_service_cache_stats(struct sa_service_cache *c, struct sa_record_cache_stats *out)
{
	sa_record_cache_stats(rcache(c), out);
}
