/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * QP attributes known ahead, per connection: what rdma_init_qp_attr will
 * ask for, which madcmd computes when the REQ or REP that fixes them is
 * handled and sends with the event.  The application thread that moves
 * the QP then takes them here, under this map's own short lock, without
 * asking the daemon.  A runtime with its engine in the process keeps
 * none: its attributes are asked where the loop is held anyway (the
 * events' hooks, rdma_accept), and lib/ keeps a REQ's INIT on the passive
 * id for rdma_create_qp.
 *
 * INIT and RTR may be taken again (librdmacm moves a QP to INIT twice:
 * in rdma_create_qp and again before RTR, ucma_modify_qp_rtr); taking RTS,
 * the last move, frees the entry, as does the connection's end.
 * A chained hash, so a burst of 1,000 connections finds every one (a
 * direct-mapped table lost a third of them to collisions).
 */
#ifndef MADCM_RTPROTO_QP_AHEAD_H
#define MADCM_RTPROTO_QP_AHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define CM_QP_AHEAD_BUCKETS 4096
#define CM_QP_AHEAD_MAX (1u << 16) /* entries; past it, the caller asks the engine */

struct cm_qp_ahead {
	struct cm_qp_ahead *next;
	uint32_t id;
	uint8_t valid; /* bit (state - IBV_QPS_INIT): INIT, RTR, RTS */
	struct ibv_qp_attr attr[3];
	int mask[3];
};

struct cm_qp_ahead_map {
	pthread_mutex_t lock;
	struct cm_qp_ahead **b; /* [CM_QP_AHEAD_BUCKETS] */
	unsigned n;
};

int cm_qp_ahead_init(struct cm_qp_ahead_map *m);
void cm_qp_ahead_destroy(struct cm_qp_ahead_map *m);
/* Keep connection id's attributes for `state` (INIT..RTS; others ignored). */
void cm_qp_ahead_put(struct cm_qp_ahead_map *m, uint32_t id, enum ibv_qp_state state,
		     const struct ibv_qp_attr *attr, int mask);
/* Take them: true with *attr, *mask; false when not known ahead.  RTS ends the entry. */
bool cm_qp_ahead_take(struct cm_qp_ahead_map *m, uint32_t id, enum ibv_qp_state state,
		      struct ibv_qp_attr *attr, int *mask);
/* The connection ended: what it did not take goes. */
void cm_qp_ahead_drop(struct cm_qp_ahead_map *m, uint32_t id);

#endif
