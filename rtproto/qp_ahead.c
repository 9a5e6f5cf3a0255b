/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* QP attributes known ahead, per connection (see qp_ahead.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "mad/zalloc.h"
#include "rtproto/qp_ahead.h"

int cm_qp_ahead_init(struct cm_qp_ahead_map *m)
{
	m->n = 0;
	m->b = calloc(CM_QP_AHEAD_BUCKETS, sizeof(*m->b));
	if (!m->b)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	return 0;
}

static struct cm_qp_ahead **find(struct cm_qp_ahead_map *m, uint32_t id)
{
	struct cm_qp_ahead **pp = &m->b[(id * 2654435761u) >> 20 & (CM_QP_AHEAD_BUCKETS - 1)];

	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	return pp;
}

static void unlink_entry(struct cm_qp_ahead_map *m, struct cm_qp_ahead **pp)
{
	struct cm_qp_ahead *a = *pp;

	*pp = a->next;
	free(a);
	m->n--;
}

void cm_qp_ahead_destroy(struct cm_qp_ahead_map *m)
{
	if (!m->b)
		return;
	for (unsigned i = 0; i < CM_QP_AHEAD_BUCKETS; i++)
		while (m->b[i])
			unlink_entry(m, &m->b[i]);
	free(m->b);
	m->b = NULL;
	pthread_mutex_destroy(&m->lock);
}

void cm_qp_ahead_put(struct cm_qp_ahead_map *m, uint32_t id, enum ibv_qp_state state,
		     const struct ibv_qp_attr *attr, int mask)
{
	unsigned k = (unsigned)state - IBV_QPS_INIT;
	struct cm_qp_ahead **pp, *a;

	if (!m->b || state < IBV_QPS_INIT || state > IBV_QPS_RTS)
		return;
	pthread_mutex_lock(&m->lock);
	pp = find(m, id);
	a = *pp;
	if (!a && m->n < CM_QP_AHEAD_MAX && (a = zalloc(sizeof(*a)))) {
		a->id = id;
		*pp = a;
		m->n++;
	}
	if (a) { /* else full: the caller asks the engine */
		a->attr[k] = *attr;
		a->mask[k] = mask;
		a->valid |= (uint8_t)(1u << k);
	}
	pthread_mutex_unlock(&m->lock);
}

bool cm_qp_ahead_take(struct cm_qp_ahead_map *m, uint32_t id, enum ibv_qp_state state,
		      struct ibv_qp_attr *attr, int *mask)
{
	unsigned k = (unsigned)state - IBV_QPS_INIT;
	struct cm_qp_ahead **pp, *a;
	bool got = false;

	if (!m->b || state < IBV_QPS_INIT || state > IBV_QPS_RTS)
		return false;
	pthread_mutex_lock(&m->lock);
	pp = find(m, id);
	a = *pp;
	if (a && (a->valid & (1u << k))) {
		*attr = a->attr[k];
		*mask = a->mask[k];
		if (state == IBV_QPS_RTS)
			unlink_entry(m, pp); /* the last move: INIT and RTR are not asked again */
		got = true;
	}
	pthread_mutex_unlock(&m->lock);
	return got;
}

void cm_qp_ahead_drop(struct cm_qp_ahead_map *m, uint32_t id)
{
	struct cm_qp_ahead **pp;

	if (!m->b)
		return;
	pthread_mutex_lock(&m->lock);
	pp = find(m, id);
	if (*pp)
		unlink_entry(m, pp);
	pthread_mutex_unlock(&m->lock);
}
