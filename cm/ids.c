/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Communication IDs and the connection lookup tables.
 *
 * Four chained hash tables, each with at least as many buckets as there
 * are connections (power of two, doubled as the engine fills), so a lookup
 * costs the same with 100 or 100,000 connections:
 *   by_local       local comm ID                 every message but REQ/SIDR_REQ
 *   by_remote_id   (remote comm ID, CA GUID)     duplicate REQ (IBA 12.9.8.1)
 *   by_remote_qpn  (remote QPN, CA GUID)         stale connections (12.9.8.3.2);
 *                                                left on entering TimeWait
 *   by_local_qpn   local QPN                     QPNs in TimeWait not reused
 * Local IDs are random (getrandom, through mad/random.h) so a restarted peer does not meet its
 * old IDs, and unique (checked against by_local and the reserved set),
 * never 0.  An ID can be reserved ahead (cm_engine_reserve_id) and used
 * later by cm_engine_connect_as: madcmd hands reserved IDs to a program
 * so that its connect needs no answer from the daemon to know its ID.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include "cm/cm_int.h"
#include "mad/random.h"

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
	if (e->cfg.random32)
		return e->cfg.random32(e->cfg.ctx);
	/* A test's new random source: the words drawn from the old one go. */
	if (e->rnd_gen != mad_random_generation()) {
		e->rnd_gen = mad_random_generation();
		e->nrnd = 0;
	}
	/* One system call per 64 IDs, not one per connection. */
	if (!e->nrnd && !mad_random_bytes(e->rnd, sizeof(e->rnd), 0))
		e->nrnd = sizeof(e->rnd) / sizeof(e->rnd[0]);
	if (e->nrnd)
		return e->rnd[--e->nrnd];
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

/* ---- reserved IDs (open addressing; 0 empty, RES_DELETED a hole) ---- */

#define RES_DELETED 0xffffffffu

static uint32_t *res_slot(const struct cm_engine *e, uint32_t id, bool for_insert)
{
	uint32_t *hole = NULL;

	if (!e->reserved_cap)
		return NULL;
	for (uint32_t i = mix(id), n = 0; n < e->reserved_cap; i++, n++) {
		uint32_t *s = &e->reserved[i & (e->reserved_cap - 1)];

		if (*s == id)
			return s;
		if (*s == RES_DELETED && !hole)
			hole = s;
		if (!*s)
			return for_insert ? (hole ? hole : s) : NULL;
	}
	return for_insert ? hole : NULL;
}

static bool is_reserved(const struct cm_engine *e, uint32_t id)
{
	return e->reserved_n && res_slot(e, id, false);
}

/* Room for one more, the table at most half used (holes included). */
static int res_grow(struct cm_engine *e)
{
	uint32_t ncap = e->reserved_cap ? e->reserved_cap : 64, *old = e->reserved;
	uint32_t ocap = e->reserved_cap;

	if ((e->reserved_used + 1) * 2 <= e->reserved_cap)
		return 0;
	while ((e->reserved_n + 1) * 2 > ncap)
		ncap *= 2;
	e->reserved = calloc(ncap, sizeof(*e->reserved));
	if (!e->reserved) {
		e->reserved = old;
		return -ENOMEM;
	}
	e->reserved_cap = ncap;
	e->reserved_used = e->reserved_n;
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i] && old[i] != RES_DELETED)
			*res_slot(e, old[i], true) = old[i];
	free(old);
	return 0;
}

static uint32_t fresh_id(struct cm_engine *e)
{
	uint32_t id;
	int tries = 0;

	do {
		id = random32(e);
		/* a broken random source must not loop forever */
		if (++tries > 64)
			id = mix(id + (uint32_t)tries);
	} while (id == 0 || id == RES_DELETED || cm_ids_by_local(e, id) || is_reserved(e, id));
	return id;
}

int cm_ids_reserve(struct cm_engine *e, uint32_t *id)
{
	uint32_t *s;

	if (res_grow(e))
		return -ENOMEM;
	*id = fresh_id(e);
	s = res_slot(e, *id, true);
	if (!*s)
		e->reserved_used++;
	*s = *id;
	e->reserved_n++;
	return 0;
}

bool cm_ids_unreserve(struct cm_engine *e, uint32_t id)
{
	uint32_t *s = id && id != RES_DELETED && e->reserved_n ? res_slot(e, id, false) : NULL;

	if (!s)
		return false;
	*s = RES_DELETED;
	e->reserved_n--;
	return true;
}

int cm_ids_new_local(struct cm_engine *e, struct cm_conn *c, uint32_t want)
{
	struct cm_conn **b;
	uint32_t id;

	if (want) {
		if (!cm_ids_unreserve(e, want))
			return -EINVAL;
		id = want;
	} else {
		id = fresh_id(e);
	}
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

/*
 * A connection entering TimeWait leaves the remote-QPN table, as the
 * kernel's cm_enter_timewait takes it out of its own: the peer's QP is
 * finished with it, so a new REQ from that QP is a new connection, not a
 * stale one.  Its remote comm ID stays, so that a duplicate of its own REQ
 * is still known (and answered "stale", state.c).
 */
void cm_ids_unlink_remote_qpn(struct cm_engine *e, struct cm_conn *c)
{
	if (!c->in_remote_qpn)
		return;
	UNLINK(&e->by_remote_qpn[hash2(c->remote_qpn, c->remote_ca_guid) & e->hash_mask], c,
	       next_remote_qpn);
	c->in_remote_qpn = 0;
}

void cm_ids_unlink_all(struct cm_engine *e, struct cm_conn *c)
{
	if (c->local_id)
		UNLINK(&e->by_local[mix(c->local_id) & e->hash_mask], c, next_local);
	if (c->in_remote_id)
		UNLINK(&e->by_remote_id[hash2(c->remote_id, c->remote_ca_guid) & e->hash_mask], c,
		       next_remote_id);
	cm_ids_unlink_remote_qpn(e, c);
	if (c->in_local_qpn)
		UNLINK(&e->by_local_qpn[mix(c->local_qpn) & e->hash_mask], c, next_local_qpn);
	c->in_remote_id = c->in_local_qpn = 0;
}
