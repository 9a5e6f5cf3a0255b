/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The CM runtime's inside (cm/runtime.h).  Its common part (cm/runtime.c:
 * the event queue, auto QP, the waits, the public calls) stands on one of
 * two backends behind struct rt_ops: the engine in this process
 * (cm/runtime_local.c) or the port's CM in madcmd
 * (rtproto/runtime_remote.c).  cm_runtime_open chooses one by
 * cm_runtime_params.daemon; nothing else asks which it is.
 *
 * "On the loop": by the thread holding the runtime's loop (runtime.h).
 */
#ifndef MADCM_CM_RUNTIME_INT_H
#define MADCM_CM_RUNTIME_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cm/runtime.h"

struct cm_umad;
struct rt_remote;

/*
 * Events travel from the loop thread to application threads through a
 * growable ring guarded by `lock`.  Invariant kept under the lock: the
 * eventfd counter is non-zero exactly while the ring is not empty, so the
 * fd polls readable iff there is something to take.
 */
struct ev_queue {
	pthread_mutex_t lock;
	struct cm_event *v;
	uint32_t cap, head, count, max;
	int fd;
	uint64_t queued, dropped;
};

/*
 * Auto QP: the QPs of connects waiting for their REP (and, through
 * madcmd, of accepts waiting for their outcome), by local comm ID.
 * On the loop.  Chained, doubled when as full as it has buckets.
 */
struct qp_link {
	struct qp_link *next;
	uint32_t id;
	struct ibv_qp *qp;
};

struct qp_map {
	struct qp_link **b;
	uint32_t nb, n;
};

/*
 * A backend: where the engine's commands run and its events come from.
 * Every call is made on the loop, except accept_qp, qp_attr_now (the
 * public calls' entries) and forked.  The engine's calls return 0 or
 * -errno as cm/engine.h's.
 */
struct rt_ops {
	/* Open for p: rt->port set, rt->tfd watched by the loop; 0 or -errno. */
	int (*open)(struct cm_runtime *rt, const struct cm_runtime_params *p);
	/* Close what open made (the common part then forgets the QP map). */
	void (*close)(struct cm_runtime *rt);
	/* The SA client's umad calls on this port, and their context. */
	const struct mad_umad_ops *(*sa_umad)(struct cm_runtime *rt,
					      const struct cm_runtime_params *p, void **ctx);
	/* One command of a batch; -ESHUTDOWN once closed. */
	int (*exec)(struct cm_runtime *rt, struct cm_rt_cmd *c);
	/* After a batch: what came meanwhile is run.  NULL: nothing kept. */
	void (*after_batch)(struct cm_runtime *rt);
	/*
	 * A waiting thread runs what tfd holds, stopping once ready(arg)
	 * (*done): how many it ran, or -errno (the fd is gone).
	 */
	int (*run_input)(struct cm_runtime *rt, bool (*ready)(void *), void *arg, bool *done);
	/* The engine's calls that auto QP makes. */
	int (*init_qp_attr)(struct cm_runtime *rt, uint32_t id, enum ibv_qp_state to,
			    struct ibv_qp_attr *a, int *mask);
	int (*connect)(struct cm_runtime *rt, struct cm_rt_cmd *c); /* the REQ, c->id out */
	int (*rtu)(struct cm_runtime *rt, uint32_t id);
	int (*reject)(struct cm_runtime *rt, uint32_t id, const struct cm_reject_cmd *rj);
	int (*release)(struct cm_runtime *rt, uint32_t id);
	/* An auto-QP accept: the checks before its QP moves, the REP after. */
	int (*accept_check)(struct cm_runtime *rt, struct cm_rt_cmd *c);
	int (*accept_send)(struct cm_runtime *rt, struct cm_rt_cmd *c);
	/*
	 * The delayed MRA for a REQ or REP delivered, when the backend set
	 * rt->mra_on_delivery (madcmd's daemon arms its own: NULL).
	 */
	void (*arm_mra)(struct cm_runtime *rt, uint32_t id);
	/* cm_runtime_accept_qp's command, from any thread. */
	int (*accept_qp)(struct cm_runtime *rt, struct cm_rt_cmd *c);
	/*
	 * cm_runtime_init_qp_attr without a command, from any thread: true
	 * with *rc when answered, false when a command must ask.
	 */
	bool (*qp_attr_now)(struct cm_runtime *rt, uint32_t id, enum ibv_qp_state state,
			    struct ibv_qp_attr *attr, int *mask, int *rc);
	/* In a fork()ed child: let go of the parent's.  NULL: nothing. */
	void (*forked)(struct cm_runtime *rt);
	/*
	 * cm_runtime_path_query_async answered elsewhere than the SA client
	 * (madcmd's host-wide path cache); NULL: the SA client.
	 */
	int (*path_query)(struct cm_runtime *rt, const struct sa_path_query *q, cm_path_cb cb,
			  void *arg);
	/*
	 * cm_runtime_service_query asked elsewhere than the SA client
	 * (madcmd's host-wide service cache): cb runs once, on the loop.
	 * NULL: the SA client's own sa_service_query.
	 */
	int (*service_query)(struct cm_runtime *rt, const struct sa_service *s, uint64_t comp_mask,
			     cm_service_cb cb, void *arg);
};

extern const struct rt_ops rt_local_ops;  /* cm/runtime_local.c */
extern const struct rt_ops rt_madcmd_ops; /* rtproto/runtime_remote.c */

struct cm_runtime {
	const struct rt_ops *ops;
	struct mad_loop *loop;
	bool own_loop;
	struct mad_port_attr port;
	struct sa_client *sa;
	struct ev_queue q;
	int tfd; /* the backend's fd the loop watches, or -1 */
	/*
	 * Application threads in cm_runtime_wait_event that wait for tfd
	 * themselves; while there are any, the loop's watch of tfd is paused
	 * (mad_loop_pause_fd).  On the loop.
	 */
	unsigned tfd_waiters;
	uint64_t serial; /* this runtime among the process's, from 1 (cm_rt_waitset) */
	bool (*hook)(void *arg, struct cm_runtime *rt, const struct cm_event *ev);
	void *hook_arg;
	/* params.mra_on_delivery where the backend arms it (arm_mra), else 0 */
	uint8_t mra_on_delivery;
	int (*modify_qp)(void *ctx, struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	void *modify_qp_ctx;
	struct qp_map qps;
	/* In this process (runtime_local.c): the port and the engine on it. */
	struct mad_transport *t;
	struct cm_umad *cmu;	  /* the CM agent and the engine on it */
	struct cm_engine *engine; /* cm_umad_engine(cmu), NULL once closed */
	/* Served by madcmd (rtproto/runtime_remote.c): the session, no engine here. */
	struct rt_remote *remote;
	char *daemon;  /* its socket, the SA client's umad context */
	bool draining; /* running the session's kept events (no nesting) */
};

/* ---- the common part's, for the backends (cm/runtime.c) ---- */

/* An engine event, the backend's or one madcmd sent: auto QP, then rt_deliver. */
void rt_engine_event(void *ctx, const struct cm_event *ev);
/* To the hook, else the queue (and the delayed MRA, in this process). */
void rt_deliver(struct cm_runtime *rt, const struct cm_event *ev);
/* The backend's fd goes (closed, or its device or daemon gone). */
void rt_unwatch_tfd(struct cm_runtime *rt);
struct ibv_qp *rt_qp_map_take(struct qp_map *m, uint32_t id);
int rt_qp_map_put(struct qp_map *m, uint32_t id, struct ibv_qp *qp);
/* CM_RT_CONNECT and CM_RT_ACCEPT with auto_qp, on the loop. */
int rt_auto_connect(struct cm_runtime *rt, struct cm_rt_cmd *c);
int rt_auto_accept(struct cm_runtime *rt, struct cm_rt_cmd *c);
/* Pieces of an accept whose QP moves outside the loop (runtime_local.c). */
int rt_accept_check(struct cm_runtime *rt, struct cm_rt_cmd *c);
unsigned rt_accept_states(const struct cm_rt_cmd *c, enum ibv_qp_state to[3]);
int rt_accept_modify(struct cm_runtime *rt, const struct cm_rt_cmd *c, unsigned n,
		     const enum ibv_qp_state *to, struct ibv_qp_attr *attr, int *mask);
void rt_qp_to_error(struct cm_runtime *rt, struct ibv_qp *qp);
/* REJ "consumer defined", the kernel's answer to a failed QP move. */
void rt_reject_consumer(struct cm_runtime *rt, uint32_t id);

#endif
