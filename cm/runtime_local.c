/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The CM runtime's in-process backend (runtime_int.h): the engine on a
 * umad port of this process (cm/umad.c), its MADs read on the loop or by
 * a thread waiting for an event.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cm/cm_int.h"
#include "cm/runtime_int.h"
#include "cm/umad.h"

/* ---- the engine's calls auto QP makes ---- */

static int local_init_qp_attr(struct cm_runtime *rt, uint32_t id, enum ibv_qp_state to,
			      struct ibv_qp_attr *a, int *mask)
{
	return cm_engine_init_qp_attr(rt->engine, id, to, a, mask);
}

static int local_connect(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	return cm_engine_connect(rt->engine, &c->connect, &c->id);
}

static int local_rtu(struct cm_runtime *rt, uint32_t id)
{
	return cm_engine_rtu(rt->engine, id, NULL, 0);
}

static int local_reject(struct cm_runtime *rt, uint32_t id, const struct cm_reject_cmd *rj)
{
	return cm_engine_reject(rt->engine, id, rj);
}

static int local_release(struct cm_runtime *rt, uint32_t id)
{
	return cm_engine_release(rt->engine, id);
}

/* What fails without touching the QP or the peer. */
static int local_accept_check(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	enum cm_state st;
	int rc = cm_engine_conn_state(rt->engine, c->id, &st);

	if (rc)
		return rc;
	if (st != CM_ST_REQ_RCVD && st != CM_ST_MRA_REQ_SENT)
		return -EINVAL;
	return cm_engine_qpn_in_timewait(rt->engine, c->accept.qpn) ? -EBUSY : 0;
}

static int local_accept_send(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	return cm_engine_accept(rt->engine, c->id, c->user, &c->accept);
}

/* ---- the port ---- */

/*
 * The port's umad fd hung up (the device went away): stop watching it,
 * or the loop would spin on it, and say so once, as a lost daemon is.
 */
static void port_gone(struct cm_runtime *rt)
{
	struct cm_event ev;

	if (rt->tfd < 0)
		return;
	rt_unwatch_tfd(rt);
	memset(&ev, 0, sizeof(ev));
	ev.type = CM_EV_RUNTIME_LOST;
	ev.listen_id = -1;
	ev.status = -ENODEV;
	rt_deliver(rt, &ev);
}

/* Runs up to `budget` received MADs (0: the transport's default batch). */
static int transport_input(struct cm_runtime *rt, unsigned budget)
{
	int n = rt->t && rt->tfd >= 0 ? mad_transport_poll(rt->t, budget) : -ENODEV;

	if (n == -ENODEV)
		port_gone(rt);
	return n;
}

static void on_readable(struct mad_loop *l, int fd, void *arg)
{
	(void)fd;
	/*
	 * The first MAD alone, and what it produced sent at once (madcmd's
	 * events, by the loop's turn-end hook), then the rest: a MAD that
	 * came by itself reaches its program before the read that finds the
	 * fd empty, and a burst is still batched after its first MAD.
	 */
	if (transport_input(arg, 1) <= 0)
		return;
	mad_loop_turn_end_now(l);
	transport_input(arg, 0);
}

/* MADs a waiting thread runs in one hold of the loop at most. */
#define DRAIN_MAX 64

/*
 * One MAD at a time, and stop as soon as what the thread waits for is
 * ready: under a burst (a client's REQs to a listener) the first
 * CONNECT_REQUEST then reaches the application while the burst lasts, as
 * the kernel's rdma_cm reports each REQ as it comes, instead of after a
 * whole batch.  The rest is left to the loop thread, or to this thread's
 * next wait.
 */
static int local_run_input(struct cm_runtime *rt, bool (*ready)(void *), void *arg, bool *done)
{
	int n = 0;

	for (unsigned i = 0; i < DRAIN_MAX && !*done; i++) {
		int r = transport_input(rt, 1);

		if (r <= 0)
			return n ? n : r;
		n += r;
		*done = ready && ready(arg);
	}
	return n;
}

static void local_close(struct cm_runtime *rt)
{
	cm_umad_close(rt->cmu);
	rt->cmu = NULL;
	rt->engine = NULL;
	rt_unwatch_tfd(rt);
	mad_transport_close(rt->t);
	rt->t = NULL;
}

static int local_open(struct cm_runtime *rt, const struct cm_runtime_params *p)
{
	const struct mad_umad_ops *ops;
	struct mad_transport_params tp = {0};
	struct cm_umad_params up = {0};
	int rc;

	tp.ops = p->ops;
	tp.ops_ctx = p->ops_ctx;
	tp.ca = p->ca;
	tp.port = p->port;
	tp.gid = p->gid;
	tp.timers = mad_loop_timers(rt->loop);
	rc = mad_transport_open(&rt->t, &tp);
	if (rc)
		return rc;
	rt->port = *mad_transport_port_cached(rt->t);
	rt->mra_on_delivery = p->mra_on_delivery;
	/*
	 * Ports whose writes wait for the loop's release (umad_tx.h): the
	 * ops' hook, static like the ops, serves every runtime on this loop.
	 */
	ops = p->ops ? p->ops : &mad_umad_real_ops;
	if (ops->released)
		mad_loop_set_release(rt->loop, ops->released, p->ops_ctx);
	up.transport = rt->t;
	up.timers = mad_loop_timers(rt->loop);
	up.event = rt_engine_event;
	up.ctx = rt;
	up.max_conns = p->max_conns;
	up.ca_guid = p->ca_guid;
	up.service_bound = p->service_bound;
	up.service_bound_arg = p->service_bound_arg;
	rc = cm_umad_open(&up, &rt->cmu);
	if (rc)
		goto fail;
	rt->engine = cm_umad_engine(rt->cmu);
	if (mad_transport_fd(rt->t) >= 0) {
		rc = mad_loop_watch_fd(rt->loop, mad_transport_fd(rt->t), on_readable, rt);
		if (rc)
			goto fail;
		rt->tfd = mad_transport_fd(rt->t);
	}
	return 0;
fail:
	local_close(rt);
	return rc;
}

static const struct mad_umad_ops *local_sa_umad(struct cm_runtime *rt,
						const struct cm_runtime_params *p, void **ctx)
{
	(void)rt;
	*ctx = p->ops_ctx;
	return p->ops;
}

/* ---- commands ---- */

static int local_exec(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	struct cm_engine *e = rt->engine;

	if (!e)
		return -ESHUTDOWN;
	switch (c->op) {
	case CM_RT_LISTEN:
		return cm_engine_listen(e, c->listen.service_id, c->listen.mask, c->user);
	case CM_RT_UNLISTEN:
		return cm_engine_unlisten(e, (int)c->id);
	case CM_RT_CONNECT:
		if (c->auto_qp.qp)
			return rt_auto_connect(rt, c);
		return cm_engine_connect(e, &c->connect, &c->id);
	case CM_RT_ACCEPT:
		if (c->auto_qp.qp)
			return rt_auto_accept(rt, c);
		return cm_engine_accept(e, c->id, c->user, &c->accept);
	case CM_RT_REJECT:
		return cm_engine_reject(e, c->id, &c->reject);
	case CM_RT_SIDR_REQ:
		c->sidr_req.user = c->user;
		return cm_engine_sidr_req(e, &c->sidr_req, &c->id);
	case CM_RT_SIDR_REP:
		return cm_engine_sidr_rep(e, c->id, &c->sidr_rep);
	case CM_RT_DROP:
		return cm_engine_drop(e, c->id);
	case CM_RT_MRA:
		return cm_engine_mra(e, c->id, c->mra.service_timeout, c->private_data,
				     c->private_data_len);
	case CM_RT_RTU:
		return cm_engine_rtu(e, c->id, c->private_data, c->private_data_len);
	case CM_RT_ESTABLISH:
		return cm_engine_establish(e, c->id);
	case CM_RT_DISCONNECT:
		return cm_engine_disconnect(e, c->id, c->private_data, c->private_data_len);
	case CM_RT_RELEASE:
		rt_qp_map_take(&rt->qps, c->id); /* the caller may free its QP now */
		return cm_engine_release(e, c->id);
	case CM_RT_INIT_QP_ATTR:
		return cm_engine_init_qp_attr(e, c->id, c->qp.state, &c->qp.attr, &c->qp.mask);
	case CM_RT_CONN_STATE:
		return cm_engine_conn_state(e, c->id, &c->state);
	case CM_RT_RESERVE_ID:
		return cm_engine_reserve_id(e, &c->id);
	case CM_RT_UNRESERVE_ID:
		return cm_engine_unreserve_id(e, c->id);
	case CM_RT_CONNECT_AS:
		return c->id ? cm_engine_connect_as(e, &c->connect, &c->id) : -EINVAL;
	case CM_RT_STATS: {
		int rc = cm_stat_get(e, &c->stats.cm);

		if (rc)
			return rc;
		mad_transport_counters(rt->t, &c->stats.mad);
		c->stats.conns = cm_engine_conn_count(e);
		pthread_mutex_lock(&rt->q.lock);
		c->stats.events_queued = rt->q.queued;
		c->stats.events_dropped = rt->q.dropped;
		pthread_mutex_unlock(&rt->q.lock);
		return 0;
	}
	default:
		return -EINVAL;
	}
}

/*
 * An auto-QP accept from a thread that does not hold the loop: the QP
 * moves between two short holds of the loop instead of inside one.  Its
 * verbs calls are the slow part of an accept (system calls, and under
 * emulation far slower than the engine), and the loop they would hold is
 * what the thread reading the next MADs and every other caller wait for.
 */
struct accept_args {
	struct cm_runtime *rt;
	struct cm_rt_cmd *c;
	int rc;
	unsigned n;		    /* QP states to move through */
	enum ibv_qp_state to[3];    /* rt_accept_states() */
	struct ibv_qp_attr attr[3]; /* the engine's, before rdma_accept's overrides */
	int mask[3];
};

static void accept_prep_here(void *arg)
{
	struct accept_args *x = arg;
	struct cm_runtime *rt = x->rt;

	x->rc = rt->engine ? rt_accept_check(rt, x->c) : -ESHUTDOWN;
	for (unsigned i = 0; i < x->n && !x->rc; i++)
		x->rc = cm_engine_init_qp_attr(rt->engine, x->c->id, x->to[i], &x->attr[i],
					       &x->mask[i]);
}

static void accept_send_here(void *arg)
{
	struct accept_args *x = arg;
	struct cm_runtime *rt = x->rt;

	if (!x->rc)
		x->rc = rt->engine ? local_accept_send(rt, x->c) : -ESHUTDOWN;
	if (x->rc) {
		rt_qp_to_error(rt, x->c->auto_qp.qp);
		if (rt->engine)
			rt_reject_consumer(rt, x->c->id);
	}
}

static int accept_qp_outside(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	struct accept_args x = {.rt = rt, .c = c};
	int rc;

	x.n = rt_accept_states(c, x.to);
	rc = mad_loop_call_here(rt->loop, accept_prep_here, &x);
	if (rc || x.rc)
		return rc ? rc : x.rc; /* nothing touched */
	x.rc = rt_accept_modify(rt, c, x.n, x.to, x.attr, x.mask);
	rc = mad_loop_call_here(rt->loop, accept_send_here, &x);
	return rc ? rc : x.rc;
}

static void local_arm_mra(struct cm_runtime *rt, uint32_t id)
{
	if (rt->engine)
		cm_engine_mra(rt->engine, id, rt->mra_on_delivery, NULL, 0);
}

static int local_accept_qp(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	if (mad_loop_started(rt->loop) && !mad_loop_owns(rt->loop))
		return accept_qp_outside(rt, c);
	return cm_runtime_exec(rt, c);
}

/* Holding the loop already (an event's hook): the engine answers. */
static bool local_qp_attr_now(struct cm_runtime *rt, uint32_t id, enum ibv_qp_state state,
			      struct ibv_qp_attr *attr, int *mask, int *rc)
{
	if (!rt->engine || !mad_loop_owns(rt->loop))
		return false;
	*rc = cm_engine_init_qp_attr(rt->engine, id, state, attr, mask);
	return true;
}

const struct rt_ops rt_local_ops = {
    .open = local_open,
    .close = local_close,
    .sa_umad = local_sa_umad,
    .exec = local_exec,
    .run_input = local_run_input,
    .init_qp_attr = local_init_qp_attr,
    .connect = local_connect,
    .rtu = local_rtu,
    .reject = local_reject,
    .release = local_release,
    .accept_check = local_accept_check,
    .accept_send = local_accept_send,
    .arm_mra = local_arm_mra,
    .accept_qp = local_accept_qp,
    .qp_attr_now = local_qp_attr_now,
};
