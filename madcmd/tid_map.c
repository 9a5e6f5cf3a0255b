/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The TIDs of one MAD session's requests in flight through the SA proxy
 * (madcmd_int.h, struct madcmd_tid_map).  A new client TID takes the next
 * entry in turn and its daemon TID names that entry ((slot << 20) |
 * counter, the entry = counter % MADCMD_TID_SLOTS), so the SA's answer
 * finds its entry without a search; a client TID seen again (a retry, an
 * RMPP ACK) is found through a hash of client TIDs and keeps its daemon
 * TID.  Taking entries in turn reuses the oldest one: with 4,096 entries
 * that is a request sent 4,096 requests ago, long answered or timed out
 * (the library's SA client keeps at most a few hundred in flight).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "madcmd/madcmd_int.h"

static unsigned client_hash(uint64_t tid)
{
	return (unsigned)((tid * 0x9e3779b97f4a7c15ull) >> 52) & (MADCMD_TID_HASH - 1);
}

static struct madcmd_tid *at(struct madcmd_tid_map *m, unsigned i)
{
	return i ? &m->e[i - 1] : NULL; /* chains hold index + 1; 0 ends them */
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
	if (!m->e)
		return NULL;
	for (struct madcmd_tid *e = at(m, m->head[client_hash(tid)]); e; e = at(m, e->next))
		if (e->client_tid == tid)
			return e;
	return NULL;
}

struct madcmd_tid *madcmd_tid_find_daemon(struct madcmd_tid_map *m, uint32_t dtid)
{
	struct madcmd_tid *e;

	if (!m->e)
		return NULL;
	e = &m->e[(dtid & MADCMD_TID_COUNTER_MASK) % MADCMD_TID_SLOTS];
	return e->used && e->dtid == dtid ? e : NULL;
}

struct madcmd_tid *madcmd_tid_entry(struct madcmd_tid_map *m, unsigned slot, uint64_t tid)
{
	struct madcmd_tid *e = madcmd_tid_find_client(m, tid);
	unsigned i, h;

	if (e)
		return e;
	if (!m->e) {
		m->e = calloc(MADCMD_TID_SLOTS, sizeof(*m->e));
		if (!m->e)
			return NULL;
	}
	m->counter = (m->counter + 1) & MADCMD_TID_COUNTER_MASK;
	if (!m->counter)
		m->counter = 1; /* daemon TID low bits 0 would read as slot 0's own */
	i = m->counter % MADCMD_TID_SLOTS;
	e = &m->e[i];
	if (e->used) {
		unchain(m, e, i + 1);
		m->used--;
	}
	memset(e, 0, sizeof(*e));
	e->used = true;
	e->client_tid = tid;
	e->dtid = (slot << MADCMD_TID_SLOT_SHIFT) | m->counter;
	h = client_hash(tid);
	e->next = m->head[h];
	m->head[h] = (uint16_t)(i + 1);
	m->used++;
	return e;
}

void madcmd_tid_map_clear(struct madcmd_tid_map *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}
