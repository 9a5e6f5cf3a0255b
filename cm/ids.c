/*
 * Communication IDs and the connection lookup tables.
 *
 * Four chained hash tables, each with at least as many buckets as there
 * are connections (power of two, doubled as the engine fills), so a lookup
 * costs the same with 100 or 100,000 connections:
 *   by_local       local comm ID                 every message but REQ/SIDR_REQ
 *   by_remote_id   (remote comm ID, CA GUID)     duplicate REQ (IBA 12.9.8.1)
 *   by_remote_qpn  (remote QPN, CA GUID)         stale connections (12.9.8.3.2)
 *   by_local_qpn   local QPN                     QPNs in TimeWait not reused
 * Local IDs are random (getrandom) so a restarted peer does not meet its
 * old IDs, and unique (checked against by_local), never 0.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "cm/cm_int.h"

static uint32_t mix(uint64_t k)
{
	/* splitmix64 finaliser: spreads sequential IDs and GUIDs over buckets */
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ull;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebull;
	k ^= k >> 31;
	return (uint32_t)k;
}

static uint32_t hash2(uint32_t a, uint64_t b)
{
	return mix(((uint64_t)a << 32 | a) ^ mix(b));
}

/* Buckets for `n` entries: a power of two, at least 64. */
static uint32_t buckets_for(uint32_t n)
{
	uint32_t b = 64;

	while (b < n && b < (1u << 30))
		b <<= 1;
	return b;
}

static int alloc_tables(uint32_t n, struct cm_conn ***t)
{
	for (int i = 0; i < 4; i++) {
		t[i] = calloc(n, sizeof(*t[i]));
		if (!t[i]) {
			while (i--)
				free(t[i]);
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Tables start small and double (load factor 1) up to the engine's bound,
 * so an engine with a few connections costs a few KiB, and one with
 * 100,000 still walks ~1.4 entries per lookup.
 */
int cm_ids_init(struct cm_engine *e)
{
	uint32_t n = buckets_for(e->max_conns < 1024 ? e->max_conns : 1024);
	struct cm_conn **t[4];
	int ret = alloc_tables(n, t);

	if (ret)
		return ret;
	e->hash_mask = n - 1;
	e->by_local = t[0];
	e->by_remote_id = t[1];
	e->by_remote_qpn = t[2];
	e->by_local_qpn = t[3];
	return 0;
}

/* Double the tables when full; on failure keep the old ones (longer chains). */
void cm_ids_maybe_grow(struct cm_engine *e)
{
	uint32_t old_n = e->hash_mask + 1, n = old_n * 2, m = n - 1;
	struct cm_conn **t[4];

	if (e->nconns < old_n || old_n >= buckets_for(e->max_conns))
		return;
	if (alloc_tables(n, t))
		return;
	for (uint32_t b = 0; b < old_n; b++) {
		struct cm_conn *c = e->by_local[b], *next;

		for (; c; c = next) {
			struct cm_conn **h;

			next = c->next_local;
			h = &t[0][mix(c->local_id) & m];
			c->next_local = *h;
			*h = c;
			if (c->in_remote_id) {
				h = &t[1][hash2(c->remote_id, c->remote_ca_guid) & m];
				c->next_remote_id = *h;
				*h = c;
			}
			if (c->in_remote_qpn) {
				h = &t[2][hash2(c->remote_qpn, c->remote_ca_guid) & m];
				c->next_remote_qpn = *h;
				*h = c;
			}
			if (c->in_local_qpn) {
				h = &t[3][mix(c->local_qpn) & m];
				c->next_local_qpn = *h;
				*h = c;
			}
		}
	}
	cm_ids_destroy(e);
	e->by_local = t[0];
	e->by_remote_id = t[1];
	e->by_remote_qpn = t[2];
	e->by_local_qpn = t[3];
	e->hash_mask = m;
}

void cm_ids_destroy(struct cm_engine *e)
{
	free(e->by_local);
	free(e->by_remote_id);
	free(e->by_remote_qpn);
	free(e->by_local_qpn);
	e->by_local = e->by_remote_id = e->by_remote_qpn = e->by_local_qpn = NULL;
}

static uint32_t random32(struct cm_engine *e)
{
	uint32_t v;

	if (e->cfg.random32)
		return e->cfg.random32(e->cfg.ctx);
	if (getrandom(&v, sizeof(v), 0) == (ssize_t)sizeof(v))
		return v;
	/* No entropy (very early boot): still unique thanks to the check. */
	return mix(++e->tid_seq ^ (uintptr_t)e);
}

struct cm_conn *cm_ids_by_local(const struct cm_engine *e, uint32_t id)
{
	struct cm_conn *c = e->by_local[mix(id) & e->hash_mask];

	while (c && c->local_id != id)
		c = c->next_local;
	return c;
}

int cm_ids_new_local(struct cm_engine *e, struct cm_conn *c)
{
	struct cm_conn **b;
	uint32_t id;
	int tries = 0;

	do {
		id = random32(e);
		/* a broken random source must not loop forever */
		if (++tries > 64)
			id = mix(id + (uint32_t)tries);
	} while (id == 0 || cm_ids_by_local(e, id));
	c->local_id = id;
	b = &e->by_local[mix(id) & e->hash_mask];
	c->next_local = *b;
	*b = c;
	return 0;
}

struct cm_conn *cm_ids_by_remote_id(const struct cm_engine *e, uint32_t rid, uint64_t guid)
{
	struct cm_conn *c = e->by_remote_id[hash2(rid, guid) & e->hash_mask];

	while (c && (c->remote_id != rid || c->remote_ca_guid != guid))
		c = c->next_remote_id;
	return c;
}

struct cm_conn *cm_ids_by_remote_qpn(const struct cm_engine *e, uint32_t qpn, uint64_t guid)
{
	struct cm_conn *c = e->by_remote_qpn[hash2(qpn, guid) & e->hash_mask];

	while (c && (c->remote_qpn != qpn || c->remote_ca_guid != guid))
		c = c->next_remote_qpn;
	return c;
}

struct cm_conn *cm_ids_by_local_qpn(const struct cm_engine *e, uint32_t qpn)
{
	struct cm_conn *c = e->by_local_qpn[mix(qpn) & e->hash_mask];

	while (c && c->local_qpn != qpn)
		c = c->next_local_qpn;
	return c;
}

void cm_ids_link_remote_id(struct cm_engine *e, struct cm_conn *c)
{
	struct cm_conn **b =
	    &e->by_remote_id[hash2(c->remote_id, c->remote_ca_guid) & e->hash_mask];

	if (c->in_remote_id)
		return;
	c->next_remote_id = *b;
	*b = c;
	c->in_remote_id = 1;
}

void cm_ids_link_remote_qpn(struct cm_engine *e, struct cm_conn *c)
{
	struct cm_conn **b =
	    &e->by_remote_qpn[hash2(c->remote_qpn, c->remote_ca_guid) & e->hash_mask];

	if (c->in_remote_qpn)
		return;
	c->next_remote_qpn = *b;
	*b = c;
	c->in_remote_qpn = 1;
}

void cm_ids_link_local_qpn(struct cm_engine *e, struct cm_conn *c)
{
	struct cm_conn **b = &e->by_local_qpn[mix(c->local_qpn) & e->hash_mask];

	if (c->in_local_qpn)
		return;
	c->next_local_qpn = *b;
	*b = c;
	c->in_local_qpn = 1;
}

/* Unlink `c` from one chain; `off` selects the link field. */
#define UNLINK(head, c, field)                                                                     \
	do {                                                                                       \
		struct cm_conn **pp_ = (head);                                                     \
		while (*pp_ && *pp_ != (c))                                                        \
			pp_ = &(*pp_)->field;                                                      \
		if (*pp_)                                                                          \
			*pp_ = (c)->field;                                                         \
	} while (0)

void cm_ids_unlink_all(struct cm_engine *e, struct cm_conn *c)
{
	if (c->local_id)
		UNLINK(&e->by_local[mix(c->local_id) & e->hash_mask], c, next_local);
	if (c->in_remote_id)
		UNLINK(&e->by_remote_id[hash2(c->remote_id, c->remote_ca_guid) & e->hash_mask], c,
		       next_remote_id);
	if (c->in_remote_qpn)
		UNLINK(&e->by_remote_qpn[hash2(c->remote_qpn, c->remote_ca_guid) & e->hash_mask], c,
		       next_remote_qpn);
	if (c->in_local_qpn)
		UNLINK(&e->by_local_qpn[mix(c->local_qpn) & e->hash_mask], c, next_local_qpn);
	c->in_remote_id = c->in_remote_qpn = c->in_local_qpn = 0;
}
