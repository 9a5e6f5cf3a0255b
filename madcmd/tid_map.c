/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The TIDs of one MAD session's requests in flight through the SA proxy
 * (madcmd_int.h, struct madcmd_tid_map).  The daemon TID names its entry
 * and the entry's generation, so the SA's answer finds its entry without
 * a search and an answer to an entry since taken again finds nothing; a
 * client TID seen again (a retry) is found through a hash of client TIDs
 * and keeps its daemon TID.
 *
 * An entry is freed when its TID is answered (mad_proxy.c) and taken
 * again oldest first.  A TID never answered (the SA lost it, or the
 * client gave up) is freed MADCMD_TID_EXPIRE_NS after its last send: each
 * taking looks at one entry in turn for that, and when all are in use the
 * oldest send gives up its entry.  Entries are made a chunk at a time,
 * only when none is free: a session's memory follows what it has in
 * flight, so a long-lived session's does not creep.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "madcmd/madcmd_int.h"

#define ENTRY_MASK ((1u << MADCMD_TID_ENTRY_BITS) - 1)

static unsigned client_hash(uint64_t tid)
{
	return (unsigned)((tid * 0x9e3779b97f4a7c15ull) >> 52) & (MADCMD_TID_HASH - 1);
}

/* Entry index + 1 (chains and the free list hold index + 1; 0 ends them). */
static struct madcmd_tid *at(struct madcmd_tid_map *m, unsigned i)
{
	if (!i || i > m->made)
		return NULL;
	i--;
	return &m->chunk[i / MADCMD_TID_CHUNK][i % MADCMD_TID_CHUNK];
}

static unsigned index_of(const struct madcmd_tid *e)
{
	return (e->dtid & ENTRY_MASK) + 1;
}

/* Take entry `e` (index i + 1) out of its client-TID chain. */
static void unchain(struct madcmd_tid_map *m, struct madcmd_tid *e, unsigned i)
{
	uint16_t *pp = &m->head[client_hash(e->client_tid)];

	while (*pp && *pp != i)
		pp = &at(m, *pp)->next;
	if (*pp)
		*pp = e->next;
}

struct madcmd_tid *madcmd_tid_find_client(struct madcmd_tid_map *m, uint64_t tid)
{
	for (struct madcmd_tid *e = at(m, m->head[client_hash(tid)]); e; e = at(m, e->next))
		if (e->client_tid == tid)
			return e;
	return NULL;
}

struct madcmd_tid *madcmd_tid_find_daemon(struct madcmd_tid_map *m, uint32_t dtid)
{
	struct madcmd_tid *e = at(m, (dtid & ENTRY_MASK) + 1);

	return e && e->used && e->dtid == dtid ? e : NULL;
}

static void push_free(struct madcmd_tid_map *m, struct madcmd_tid *e, unsigned i)
{
	e->next = 0;
	if (m->free_tail)
		at(m, m->free_tail)->next = (uint16_t)i;
	else
		m->free_head = (uint16_t)i;
	m->free_tail = (uint16_t)i;
}

void madcmd_tid_release(struct madcmd_tid_map *m, struct madcmd_tid *e)
{
	unsigned i = index_of(e);

	if (!e->used)
		return;
	unchain(m, e, i);
	e->used = false;
	m->used--;
	push_free(m, e, i);
}

/* One entry in turn: freed if its TID went unanswered for too long. */
static void expire_one(struct madcmd_tid_map *m, uint64_t now_ns)
{
	struct madcmd_tid *e;

	if (!m->made)
		return;
	m->sweep = (uint16_t)(m->sweep % m->made + 1);
	e = at(m, m->sweep);
	if (e->used && now_ns - e->sent_ns > MADCMD_TID_EXPIRE_NS)
		madcmd_tid_release(m, e);
}

/* A free entry (index + 1): made if none is, the oldest send's if all are in use; 0: no memory. */
static unsigned take(struct madcmd_tid_map *m)
{
	unsigned i = m->free_head;

	if (!i && m->made < MADCMD_TID_SLOTS) {
		unsigned c = m->made / MADCMD_TID_CHUNK;
		struct madcmd_tid *chunk = calloc(MADCMD_TID_CHUNK, sizeof(*chunk));

		if (!chunk)
			return 0;
		m->chunk[c] = chunk;
		m->made = (uint16_t)(m->made + MADCMD_TID_CHUNK);
		for (unsigned k = 0; k < MADCMD_TID_CHUNK; k++)
			push_free(m, &chunk[k], c * MADCMD_TID_CHUNK + k + 1);
		i = m->free_head;
	}
	if (!i) { /* all in flight: the oldest send gives way */
		struct madcmd_tid *old = NULL;

		for (unsigned k = 1; k <= m->made; k++)
			if (!old || at(m, k)->sent_ns < old->sent_ns)
				old = at(m, k);
		madcmd_tid_release(m, old);
		i = m->free_head;
	}
	m->free_head = at(m, i)->next;
	if (!m->free_head)
		m->free_tail = 0;
	return i;
}

struct madcmd_tid *madcmd_tid_entry(struct madcmd_tid_map *m, unsigned slot, uint64_t tid,
				    uint64_t now_ns)
{
	struct madcmd_tid *e = madcmd_tid_find_client(m, tid);
	unsigned i, h;
	uint8_t gen;

	if (e) {
		e->sent_ns = now_ns;
		return e;
	}
	expire_one(m, now_ns);
	i = take(m);
	if (!i)
		return NULL;
	e = at(m, i);
	gen = (uint8_t)(e->gen % 255 + 1);
	memset(e, 0, sizeof(*e));
	e->used = true;
	e->gen = gen;
	e->client_tid = tid;
	e->sent_ns = now_ns;
	e->dtid =
	    (slot << MADCMD_TID_SLOT_SHIFT) | ((uint32_t)gen << MADCMD_TID_ENTRY_BITS) | (i - 1);
	h = client_hash(tid);
	e->next = m->head[h];
	m->head[h] = (uint16_t)i;
	m->used++;
	return e;
}

void madcmd_tid_map_clear(struct madcmd_tid_map *m)
{
	for (unsigned c = 0; c < MADCMD_TID_SLOTS / MADCMD_TID_CHUNK; c++)
		free(m->chunk[c]);
	memset(m, 0, sizeof(*m));
}
