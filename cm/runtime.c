/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM runtime (see runtime.h), its common part: the event queue, auto QP,
 * the waits of application threads, the public calls.  The engine's
 * commands and events go through the backend cm_runtime_open chose
 * (runtime_int.h): in this process (runtime_local.c) or madcmd
 * (rtproto/runtime_remote.c).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "cm/cm_int.h"
#include "cm/runtime_int.h"
#include "mad/lockdep.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

#define DEFAULT_MAX_EVENTS (1u << 20)

/* ---- event queue ---- */

static int evq_init(struct ev_queue *q, uint32_t max)
{
	memset(q, 0, sizeof(*q));
	q->max = max ? max : DEFAULT_MAX_EVENTS;
	q->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->fd < 0)
		return -errno;
	pthread_mutex_init(&q->lock, NULL);
	return 0;
}

static void evq_destroy(struct ev_queue *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	free(q->v);
	q->v = NULL;
	pthread_mutex_destroy(&q->lock);
}

/* Double the ring (unwrapping it); false when at the bound or out of memory. */
static bool evq_grow(struct ev_queue *q)
{
	uint32_t ncap = q->cap ? q->cap * 2 : 64;
	struct cm_event *nv;

	if (q->cap >= q->max)
		return false;
	if (ncap > q->max)
		ncap = q->max;
	nv = malloc((size_t)ncap * sizeof(*nv));
	if (!nv)
		return false;
	for (uint32_t i = 0; i < q->count; i++)
		nv[i] = q->v[(q->head + i) % q->cap];
	free(q->v);
	q->v = nv;
	q->cap = ncap;
	q->head = 0;
	return true;
}

static void evq_push(struct ev_queue *q, const struct cm_event *ev)
{
	uint64_t one = 1;

	pthread_mutex_lock(&q->lock);
	if (q->count == q->cap && !evq_grow(q)) {
		q->dropped++;
		pthread_mutex_unlock(&q->lock);
		return;
	}
	q->v[(q->head + q->count) % q->cap] = *ev;
	q->count++;
	q->queued++;
	if (q->count == 1 && write(q->fd, &one, sizeof(one)) < 0)
		(void)0; /* cannot fail for a counter at 0 */
	pthread_mutex_unlock(&q->lock);
}

static int evq_pop(struct ev_queue *q, struct cm_event *ev)
{
	uint64_t v;

	pthread_mutex_lock(&q->lock);
	if (!q->count) {
		pthread_mutex_unlock(&q->lock);
		return -EAGAIN;
	}
	*ev = q->v[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	if (!q->count && read(q->fd, &v, sizeof(v)) < 0)
		(void)0; /* already 0 */
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* ---- auto QP (runs on the loop) ---- */

static uint32_t qp_map_slot(const struct qp_map *m, uint32_t id)
{
	return (id * 2654435761u) & (m->nb - 1);
}

static bool qp_map_grow(struct qp_map *m)
{
	uint32_t nb = m->nb ? m->nb * 2 : 64;
	struct qp_link **b = calloc(nb, sizeof(*b));
	struct qp_map n = {b, nb, m->n};

	if (!b)
		return false;
	for (uint32_t i = 0; i < m->nb; i++)
		while (m->b[i]) {
			struct qp_link *l = m->b[i];

			m->b[i] = l->next;
			l->next = b[qp_map_slot(&n, l->id)];
			b[qp_map_slot(&n, l->id)] = l;
		}
	free(m->b);
	*m = n;
	return true;
}

/* Take the QP linked to `id` out of the map; NULL when there is none. */
struct ibv_qp *rt_qp_map_take(struct qp_map *m, uint32_t id)
{
	struct qp_link **pp, *l;
	struct ibv_qp *qp;

	if (!m->n)
		return NULL;
	for (pp = &m->b[qp_map_slot(m, id)]; (l = *pp); pp = &l->next)
		if (l->id == id) {
			*pp = l->next;
			qp = l->qp;
			free(l);
			m->n--;
			return qp;
		}
	return NULL;
}

int rt_qp_map_put(struct qp_map *m, uint32_t id, struct ibv_qp *qp)
{
	struct qp_link *l;

	/* A comm ID is unique among live connections: an old link is stale. */
	rt_qp_map_take(m, id);
	if (m->n >= m->nb && !qp_map_grow(m) && !m->nb)
		return -ENOMEM;
	l = malloc(sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->id = id;
	l->qp = qp;
	l->next = m->b[qp_map_slot(m, id)];
	m->b[qp_map_slot(m, id)] = l;
	m->n++;
	return 0;
}

static void qp_map_destroy(struct qp_map *m)
{
	for (uint32_t i = 0; i < m->nb; i++)
		while (m->b[i]) {
			struct qp_link *l = m->b[i];

			m->b[i] = l->next;
			free(l);
		}
	free(m->b);
	memset(m, 0, sizeof(*m));
}

static int default_modify_qp(void *ctx, struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)ctx;
	return ibv_modify_qp(qp, attr, mask);
}

/* rt->modify_qp as 0 / -errno, whatever sign the provider used. */
static int modify(struct cm_runtime *rt, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	int rc = rt->modify_qp(rt->modify_qp_ctx, qp, a, mask);

	return rc > 0 ? -rc : rc;
}

/*
 * Move `qp` to `to` with the engine's attributes.  `acc` (passive side
 * before its REP) supplies what rdma_accept overrides: the receive PSN the
 * REP will announce and the accepted RDMA read depths.
 */
static void accept_overrides(struct ibv_qp_attr *a, int mask, enum ibv_qp_state to,
			     const struct cm_accept_cmd *acc)
{
	if (to == IBV_QPS_RTR) {
		a->rq_psn = acc->starting_psn;
		if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
			a->max_dest_rd_atomic = acc->responder_resources;
	}
	if (to == IBV_QPS_RTS && (mask & IBV_QP_MAX_QP_RD_ATOMIC))
		a->max_rd_atomic = acc->initiator_depth;
}

static int qp_step(struct cm_runtime *rt, uint32_t id, struct ibv_qp *qp, enum ibv_qp_state to,
		   const struct cm_accept_cmd *acc)
{
	struct ibv_qp_attr a;
	int mask, rc = rt->ops->init_qp_attr(rt, id, to, &a, &mask);

	if (rc)
		return rc;
	if (acc)
		accept_overrides(&a, mask, to, acc);
	return modify(rt, qp, &a, mask);
}

void rt_qp_to_error(struct cm_runtime *rt, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	modify(rt, qp, &a, IBV_QP_STATE);
}

/* The kernel's answer when its own QP transition fails (cma.c): REJ 28. */
void rt_reject_consumer(struct cm_runtime *rt, uint32_t id)
{
	struct cm_reject_cmd rj = {.reason = CM_REJ_CONSUMER_DEFINED};

	rt->ops->reject(rt, id, &rj);
}

int rt_auto_connect(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	struct ibv_qp *qp = c->auto_qp.qp;
	int rc;

	if (qp->qp_num != c->connect.qpn)
		return -EINVAL;
	rc = rt->ops->connect(rt, c);
	if (rc)
		return rc;
	/*
	 * The REQ is out; its answer cannot be read before this returns
	 * (through madcmd, events that come meanwhile are kept until then).
	 */
	if (c->auto_qp.flags & CM_RT_QP_INIT)
		rc = qp_step(rt, c->id, qp, IBV_QPS_INIT, NULL);
	if (!rc)
		rc = rt_qp_map_put(&rt->qps, c->id, qp);
	if (rc) {
		rt_qp_to_error(rt, qp);
		rt->ops->release(rt, c->id); /* REJ to the peer */
	}
	return rc;
}

/* An auto-QP accept's checks: the command's own, then the backend's. */
int rt_accept_check(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	struct ibv_qp *qp = c->auto_qp.qp;
	struct cm_accept_cmd *a = &c->accept;

	if (!a->qpn)
		a->qpn = qp->qp_num;
	if (a->qpn != qp->qp_num || a->starting_psn >= (1u << 24))
		return -EINVAL;
	return rt->ops->accept_check(rt, c);
}

/* The states an accept moves its QP through, in order: INIT (when asked), RTR, RTS. */
unsigned rt_accept_states(const struct cm_rt_cmd *c, enum ibv_qp_state to[3])
{
	unsigned n = 0;

	if (c->auto_qp.flags & CM_RT_QP_INIT)
		to[n++] = IBV_QPS_INIT;
	to[n++] = IBV_QPS_RTR;
	to[n++] = IBV_QPS_RTS;
	return n;
}

struct accept_qp {
	struct cm_runtime *rt;
	struct ibv_qp *qp;
};

static int accept_qp_modify(void *ctx, struct ibv_qp_attr *a, int mask)
{
	struct accept_qp *x = ctx;

	return modify(x->rt, x->qp, a, mask);
}

/*
 * Move an accept's QP through `to` with the engine's attributes `attr`,
 * after rdma_accept's overrides (and the id's ACK timeout, when set).  A QP at INIT already
 * (CM_RT_QP_AT_INIT: rdma_create_qp made it) takes INIT's attributes
 * with RTR's, in one modify when it can (cm_qp_modify_to_rtr).
 */
int rt_accept_modify(struct cm_runtime *rt, const struct cm_rt_cmd *c, unsigned n,
		     const enum ibv_qp_state *to, struct ibv_qp_attr *attr, int *mask)
{
	struct accept_qp x = {rt, c->auto_qp.qp};
	unsigned i = 0;
	int rc = 0;

	for (unsigned k = 0; k < n; k++) {
		accept_overrides(&attr[k], mask[k], to[k], &c->accept);
		if (to[k] == IBV_QPS_RTS && (mask[k] & IBV_QP_TIMEOUT) &&
		    (c->auto_qp.flags & CM_RT_QP_HAS_TIMEOUT))
			attr[k].timeout = CM_RT_QP_TIMEOUT_OF(c->auto_qp.flags);
	}
	if (n == 3 && (c->auto_qp.flags & CM_RT_QP_AT_INIT)) {
		rc =
		    cm_qp_modify_to_rtr(accept_qp_modify, &x, &attr[0], mask[0], &attr[1], mask[1]);
		i = 2;
	}
	for (; i < n && !rc; i++)
		rc = modify(rt, x.qp, &attr[i], mask[i]);
	return rc;
}

/*
 * The accept's checks, its QP through INIT (when asked), RTR and RTS,
 * then the REP (the backend's accept_send); a failure after the checks
 * fails the QP and sends REJ 28.
 */
int rt_auto_accept(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	struct ibv_qp *qp = c->auto_qp.qp;
	enum ibv_qp_state to[3];
	struct ibv_qp_attr attr[3];
	int mask[3];
	unsigned n = rt_accept_states(c, to);
	int rc = rt_accept_check(rt, c);

	if (rc)
		return rc;
	for (unsigned i = 0; i < n && !rc; i++)
		rc = rt->ops->init_qp_attr(rt, c->id, to[i], &attr[i], &mask[i]);
	if (!rc)
		rc = rt_accept_modify(rt, c, n, to, attr, mask);
	if (!rc)
		rc = rt->ops->accept_send(rt, c);
	if (rc) {
		rt_qp_to_error(rt, qp);
		rt_reject_consumer(rt, c->id);
	}
	return rc;
}

/* ---- engine glue (runs on the loop) ---- */

/*
 * Events: the caller's fast path first, else the queue.  A REQ or REP
 * then gets its delayed MRA armed when asked (params.mra_on_delivery),
 * as the kernel's rdma_cm arms it once its handler took the event: a REQ
 * the hook rejected or dropped has no connection left to arm it on (the
 * call fails, harmlessly).  Nobody can answer it in between: that needs
 * the loop, held here.  Served by madcmd, the daemon arms it.
 */
void rt_deliver(struct cm_runtime *rt, const struct cm_event *ev)
{
	bool mra =
	    rt->mra_on_delivery && (ev->type == CM_EV_REQ_RCVD || ev->type == CM_EV_REP_RCVD);

	if (!rt->hook || !rt->hook(rt->hook_arg, rt, ev))
		evq_push(&rt->q, ev);
	if (mra)
		rt->ops->arm_mra(rt, ev->id);
}

/* The active side of auto QP on the REP: RTR, RTS, RTU, then ESTABLISHED. */
static void auto_rep(struct cm_runtime *rt, const struct cm_event *ev, struct ibv_qp *qp)
{
	struct cm_event out = *ev;
	int rc = qp_step(rt, ev->id, qp, IBV_QPS_RTR, NULL);

	if (!rc)
		rc = qp_step(rt, ev->id, qp, IBV_QPS_RTS, NULL);
	if (!rc)
		rc = rt->ops->rtu(rt, ev->id);
	if (rc) {
		rt_qp_to_error(rt, qp);
		rt_reject_consumer(rt, ev->id);
		out.type = CM_EV_CONNECT_ERROR;
		out.status = rc;
	} else {
		out.type = CM_EV_ESTABLISHED;
	}
	rt_deliver(rt, &out);
}

void rt_engine_event(void *ctx, const struct cm_event *ev)
{
	struct cm_runtime *rt = ctx;
	struct ibv_qp *qp;

	switch (ev->type) {
	case CM_EV_REP_RCVD:
		qp = rt_qp_map_take(&rt->qps, ev->id);
		if (qp) {
			auto_rep(rt, ev, qp);
			return;
		}
		break;
	case CM_EV_CONNECT_ERROR:
		/* Through madcmd: an accept the daemon refused after it was sent. */
		qp = rt_qp_map_take(&rt->qps, ev->id);
		if (qp) {
			rt_qp_to_error(rt, qp);
			rt_reject_consumer(rt, ev->id);
		}
		break;
	case CM_EV_REJ_RCVD:
	case CM_EV_REQ_ERROR:
	case CM_EV_REP_ERROR:
	case CM_EV_RTU_RCVD:
	case CM_EV_USER_ESTABLISHED:
	case CM_EV_TIMEWAIT_EXIT:
		/*
		 * The connect ended before its REP, or (through madcmd,
		 * passive) the accept's outcome is known: forget its QP.
		 */
		rt_qp_map_take(&rt->qps, ev->id);
		break;
	default:
		break;
	}
	rt_deliver(rt, ev);
}

void rt_unwatch_tfd(struct cm_runtime *rt)
{
	if (rt->tfd >= 0)
		mad_loop_unwatch_fd(rt->loop, rt->tfd);
	/* Atomic: a waiter reads it without the loop (wait_running_mads). */
	__atomic_store_n(&rt->tfd, -1, __ATOMIC_RELEASE);
}

struct open_args {
	struct cm_runtime *rt;
	const struct cm_runtime_params *p;
	int rc;
};

static void open_on_loop(void *arg)
{
	struct open_args *o = arg;

	o->rc = o->rt->ops->open(o->rt, o->p);
}

static void close_on_loop(void *arg)
{
	struct cm_runtime *rt = arg;

	rt->ops->close(rt);
	qp_map_destroy(&rt->qps);
}

static uint64_t runtime_serial; /* the last runtime's serial */

int cm_runtime_open(struct cm_runtime **out, const struct cm_runtime_params *p)
{
	struct cm_runtime *rt;
	struct open_args o;
	int rc;

	mad_assert_no_lib_lock();
	if (!out || !p)
		return -EINVAL;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	/* The one place that asks who serves the port. */
	rt->ops = p->daemon ? &rt_madcmd_ops : &rt_local_ops;
	rt->tfd = -1;
	rt->serial = __atomic_add_fetch(&runtime_serial, 1, __ATOMIC_RELAXED);
	rt->hook = p->on_loop_event;
	rt->hook_arg = p->on_loop_event_arg;
	rt->modify_qp = p->modify_qp ? p->modify_qp : default_modify_qp;
	rt->modify_qp_ctx = p->modify_qp_ctx;
	rc = evq_init(&rt->q, p->max_events);
	if (rc) {
		free(rt);
		return rc;
	}
	if (p->loop) {
		rt->loop = p->loop;
	} else {
		rc = mad_loop_create(&rt->loop, NULL, NULL);
		if (rc)
			goto fail_q;
		rt->own_loop = true;
		rc = mad_loop_start(rt->loop);
		if (rc)
			goto fail_loop;
	}
	o.rt = rt;
	o.p = p;
	o.rc = 0;
	rc = mad_loop_call(rt->loop, open_on_loop, &o);
	if (!rc)
		rc = o.rc;
	if (rc)
		goto fail_loop;
	if (p->sa) {
		struct sa_client_params sp = {0};

		sp.loop = rt->loop;
		sp.ops = rt->ops->sa_umad(rt, p, &sp.ops_ctx);
		sp.ca = rt->port.ca_name;
		sp.port = rt->port.portnum;
		sp.timeout_ms = p->sa_timeout_ms;
		sp.retries = p->sa_retries ? p->sa_retries : 3;
		if (!p->sa_no_path_cache)
			sp.cache_lifetime_ms = p->sa_path_cache_ms ? p->sa_path_cache_ms : 60000;
		rc = sa_client_open(&rt->sa, &sp);
		if (rc) {
			mad_loop_call(rt->loop, close_on_loop, rt);
			goto fail_loop;
		}
	}
	*out = rt;
	return 0;
fail_loop:
	if (rt->own_loop)
		mad_loop_destroy(rt->loop);
fail_q:
	evq_destroy(&rt->q);
	free(rt);
	return rc;
}

void cm_runtime_close(struct cm_runtime *rt)
{
	mad_assert_no_lib_lock();
	if (!rt)
		return;
	sa_client_close(rt->sa);
	mad_loop_call(rt->loop, close_on_loop, rt);
	if (rt->own_loop)
		mad_loop_destroy(rt->loop);
	evq_destroy(&rt->q);
	free(rt);
}

/* ---- commands ---- */

struct batch_args {
	struct cm_runtime *rt;
	struct cm_rt_cmd *cmds;
	unsigned n;
};

static void batch_on_loop(void *arg)
{
	struct batch_args *b = arg;

	for (unsigned i = 0; i < b->n; i++) {
		struct cm_rt_cmd *c = &b->cmds[i];

		/* Private data lengths travel as given; the engine checks them. */
		c->result = b->rt->ops->exec(b->rt, c);
	}
	if (b->rt->ops->after_batch)
		b->rt->ops->after_batch(b->rt);
}

int cm_runtime_exec_batch(struct cm_runtime *rt, struct cm_rt_cmd *cmds, unsigned n)
{
	struct batch_args b = {rt, cmds, n};

	mad_assert_no_lib_lock();
	if (!rt || (!cmds && n))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if ((unsigned)cmds[i].op >= CM_RT__COUNT ||
		    cmds[i].private_data_len > CM_PRIVATE_MAX ||
		    (cmds[i].auto_qp.qp && cmds[i].op != CM_RT_CONNECT &&
		     cmds[i].op != CM_RT_ACCEPT) ||
		    (cmds[i].auto_qp.flags & ~CM_RT_QP_FLAGS))
			return -EINVAL;
	if (!n)
		return 0;
	/*
	 * On this thread, holding the loop: no hop to the loop thread and
	 * back, as the kernel's rdma_cm runs a command in the caller's
	 * syscall (the REQ or REP leaves from here).
	 */
	return mad_loop_call_here(rt->loop, batch_on_loop, &b);
}

int cm_runtime_exec(struct cm_runtime *rt, struct cm_rt_cmd *cmd)
{
	int rc = cm_runtime_exec_batch(rt, cmd, cmd ? 1 : 0);

	if (!cmd)
		return -EINVAL;
	return rc ? rc : cmd->result;
}

/* ---- events ---- */

int cm_runtime_event_fd(const struct cm_runtime *rt)
{
	return rt ? rt->q.fd : -EINVAL;
}

int cm_runtime_get_event(struct cm_runtime *rt, struct cm_event *ev)
{
	mad_assert_no_lib_lock();
	if (!rt || !ev)
		return -EINVAL;
	return evq_pop(&rt->q, ev);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct tfd_wait_args {
	struct cm_runtime *rt;
	bool wait; /* in: start (true) or end waiting for tfd; out: started */
};

/*
 * A waiting thread starts or stops waiting for tfd itself: the first one
 * pauses the loop thread's watch, the last one resumes it.
 */
static void tfd_wait_here(void *arg)
{
	struct tfd_wait_args *a = arg;
	struct cm_runtime *rt = a->rt;

	/*
	 * Given back at once when the last waiter leaves: keeping it paused
	 * a while longer (1 ms, for the thread to come back) was measured
	 * slower on one-CPU VMs (the MADs of that gap wait for the thread).
	 */
	if (!a->wait) {
		if (rt->tfd >= 0 && rt->tfd_waiters && !--rt->tfd_waiters)
			mad_loop_pause_fd(rt->loop, rt->tfd, false);
		return;
	}
	a->wait = rt->tfd >= 0 && (rt->tfd_waiters || !mad_loop_pause_fd(rt->loop, rt->tfd, true));
	if (a->wait)
		rt->tfd_waiters++;
}

struct drain_args {
	struct cm_runtime *rt;
	int n; /* MADs run, or -errno */
	bool (*ready)(void *);
	void *ready_arg;
	bool done;	/* ready() after them: the wait ended (tfd given back) */
	bool give_back; /* the thread took tfd from the loop thread (tfd_wait) */
};

/*
 * The loop thread's work on tfd, run by a waiting application thread;
 * when what it ran is what the thread waits for, the wait ends here too
 * (tfd back to the loop thread) in the same hold of the loop.
 */
static void drain_here(void *arg)
{
	struct drain_args *d = arg;

	d->n = d->rt->ops->run_input(d->rt, d->ready, d->ready_arg, &d->done);
	if (d->done && d->give_back) {
		struct tfd_wait_args a = {d->rt, false};

		tfd_wait_here(&a);
	}
}

/* Start (true) or end waiting for tfd on this thread; returns whether it waits. */
static bool tfd_wait(struct cm_runtime *rt, bool wait)
{
	struct tfd_wait_args a = {rt, wait};

	if (mad_loop_call_here(rt->loop, tfd_wait_here, &a))
		return false;
	return a.wait;
}

/* ---- a waiting thread's own epoll set (struct cm_rt_waitset) ---- */

#define WS_TFD 1 /* epoll data of the transport fd in a waitset; the caller's fd is 0 */

/*
 * Waitsets holding a transport fd, in the process, at most WAITSETS_MAX:
 * a MAD's wake-up walks every exclusive registration of the fd until one
 * has a thread waiting, so each set costs every MAD a little.  A program
 * that makes more event channels waits on the others with the hand-over.
 */
#define WAITSETS_MAX 4
static unsigned waitsets_live;

void cm_runtime_waitset_init(struct cm_rt_waitset *ws)
{
	memset(ws, 0, sizeof(*ws));
	pthread_mutex_init(&ws->lock, NULL);
	ws->epfd = ws->fd = ws->tfd = -1;
}

void cm_runtime_waitset_fini(struct cm_rt_waitset *ws)
{
	if (ws->tfd >= 0)
		__atomic_sub_fetch(&waitsets_live, 1, __ATOMIC_RELAXED);
	if (ws->epfd >= 0)
		close(ws->epfd);
	ws->epfd = -1;
	pthread_mutex_destroy(&ws->lock);
}

struct requeue_args {
	struct cm_runtime *rt;
	int rc;
};

/* The loop thread's registration of tfd behind the waitsets' (on the loop). */
static void requeue_here(void *arg)
{
	struct requeue_args *a = arg;

	a->rc = a->rt->tfd >= 0 ? mad_loop_exclusive_fd(a->rt->loop, a->rt->tfd) : -ENODEV;
}

/* A slot of the WAITSETS_MAX, or false when all are taken. */
static bool waitset_slot_take(void)
{
	if (__atomic_add_fetch(&waitsets_live, 1, __ATOMIC_RELAXED) <= WAITSETS_MAX)
		return true;
	__atomic_sub_fetch(&waitsets_live, 1, __ATOMIC_RELAXED);
	return false;
}

/*
 * The waitset's epoll fd for a wait on fd with rt, made or remade first
 * when it holds another runtime's transport fd; -1: wait with the
 * hand-over (the kernel refused a step, or fd is not the set's).  The set
 * is never closed before cm_runtime_waitset_fini(), so a thread still
 * waiting in it while another remakes it is safe.
 */
static int waitset_fd(struct cm_runtime *rt, struct cm_rt_waitset *ws, int fd)
{
	struct requeue_args rq = {rt, 0};
	/* Read once: the loop thread sets it to -1 when the transport goes (rt_unwatch_tfd). */
	int tfd = __atomic_load_n(&rt->tfd, __ATOMIC_ACQUIRE);
	int epfd = -1;

	if (__atomic_load_n(&ws->serial, __ATOMIC_ACQUIRE) == rt->serial &&
	    __atomic_load_n(&ws->fd, __ATOMIC_RELAXED) == fd &&
	    __atomic_load_n(&ws->tfd, __ATOMIC_RELAXED) == tfd)
		return ws->epfd;
	pthread_mutex_lock(&ws->lock);
	__atomic_store_n(&ws->serial, 0, __ATOMIC_RELEASE);
	if (ws->refused || tfd < 0)
		goto out;
	/* A set holding a transport fd has its slot; another takes one first. */
	if (ws->tfd < 0 && !waitset_slot_take())
		goto out;
	if (ws->epfd < 0) {
		ws->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (ws->epfd < 0 || mad_ep_ctl(ws->epfd, EPOLL_CTL_ADD, fd, EPOLLIN, 0)) {
			if (ws->epfd >= 0)
				close(ws->epfd);
			ws->epfd = -1;
			goto drop;
		}
		__atomic_store_n(&ws->fd, fd, __ATOMIC_RELAXED);
	}
	if (ws->fd != fd)
		goto drop;
	if (ws->tfd_serial != rt->serial || ws->tfd != tfd) {
		/* Gone with its file if that closed; else taken out here. */
		if (ws->tfd >= 0)
			epoll_ctl(ws->epfd, EPOLL_CTL_DEL, ws->tfd, NULL);
		__atomic_store_n(&ws->tfd, -1, __ATOMIC_RELAXED);
		if (mad_ep_ctl(ws->epfd, EPOLL_CTL_ADD, tfd, EPOLLIN | EPOLLEXCLUSIVE, WS_TFD)) {
			/* EINVAL: no EPOLLEXCLUSIVE (before Linux 4.5); EPERM: not pollable */
			ws->refused = errno != ENOMEM && errno != ENOSPC;
			goto drop;
		}
		__atomic_store_n(&ws->tfd, tfd, __ATOMIC_RELAXED);
		ws->tfd_serial = rt->serial;
	}
	/* Each new set goes before the loop thread in tfd's queue. */
	if (mad_loop_call_here(rt->loop, requeue_here, &rq) || rq.rc) {
		epoll_ctl(ws->epfd, EPOLL_CTL_DEL, ws->tfd, NULL);
		__atomic_store_n(&ws->tfd, -1, __ATOMIC_RELAXED);
		ws->refused = rq.rc == -EINVAL || rq.rc == -EOPNOTSUPP;
		goto drop;
	}
	epfd = ws->epfd;
	__atomic_store_n(&ws->serial, rt->serial, __ATOMIC_RELEASE);
	goto out;
drop:
	/* The slot goes with the transport fd (cm_runtime_waitset_fini gives a held one). */
	if (ws->tfd < 0)
		__atomic_sub_fetch(&waitsets_live, 1, __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&ws->lock);
	return epfd;
}

/* Wait in a waitset: 1 when the transport fd is readable, 0 when not (yet), -1 and errno. */
static int wait_in_set(int epfd, int timeout_ms)
{
	struct epoll_event ev[2];
	int n = epoll_wait(epfd, ev, 2, timeout_ms);

	for (int i = 0; i < n; i++)
		if (ev[i].data.u64 == WS_TFD)
			return 1;
	return n < 0 ? -1 : 0;
}

/*
 * Wait until ready(arg) says so, up to timeout_ms, while the CM's umad fd
 * is run on this thread: a MAD that comes while we wait is run here
 * (holding the loop), so its event needs no hop from the loop thread, and
 * the loop's thread is not woken for it as well: the one wake-up is this
 * thread's, as for a kernel rdma_cm user blocked in read().  With a
 * waitset the kernel wakes this thread alone (it waits ahead of the loop
 * thread, both exclusive); without, the loop's watch of the fd is paused
 * for the wait (tfd_wait, two epoll_ctl).  `fd` is polled for what makes
 * ready() true.  Returns 0, -ETIMEDOUT or -errno (-EINTR only with
 * `eintr`: a signal ends the wait, as it ends a read(2)).
 */
static int wait_running_mads(struct cm_runtime *rt, int fd, bool (*ready)(void *), void *arg,
			     int timeout_ms, bool eintr, struct cm_rt_waitset *ws)
{
	int64_t end = timeout_ms >= 0 ? now_ms() + timeout_ms : 0;
	struct drain_args dr = {rt, 0, ready, arg, false, false};
	struct pollfd pfd[2];
	bool waiting = false; /* for tfd, loop thread paused */
	int wfd = -1;	      /* the waitset's epoll fd while this wait uses it */
	unsigned empty = 0;
	int rc;

	pfd[0].fd = fd;
	pfd[0].events = POLLIN;
	pfd[1].fd = __atomic_load_n(&rt->tfd, __ATOMIC_ACQUIRE); /* see unwatch_tfd */
	pfd[1].events = POLLIN;
	for (;;) {
		int left = -1;

		rc = 0;
		if (ready(arg))
			break;
		if (timeout_ms >= 0) {
			int64_t d = end - now_ms();

			rc = -ETIMEDOUT;
			if (d <= 0)
				break;
			left = (int)d;
		}
		/* A loop without a thread makes progress only when driven. */
		if (!mad_loop_started(rt->loop)) {
			mad_loop_run_once(rt->loop, left < 0 || left > 10 ? 10 : left);
			continue;
		}
		if (ws && pfd[1].fd >= 0 && wfd < 0 && !waiting)
			wfd = waitset_fd(rt, ws, fd);
		if (wfd >= 0) {
			rc = wait_in_set(wfd, left);
		} else {
			if (pfd[1].fd >= 0 && !waiting && !(waiting = tfd_wait(rt, true)))
				pfd[1].fd = -1;
			rc = poll(pfd, 2, left);
			if (rc > 0)
				rc = pfd[1].revents ? 1 : 0;
		}
		if (rc < 0 && (errno != EINTR || eintr)) {
			rc = -errno;
			break;
		}
		if (rc <= 0)
			continue;
		dr.give_back = waiting;
		rc = mad_loop_call_here(rt->loop, drain_here, &dr);
		if (!rc && dr.done) {
			waiting = false; /* drain_here gave tfd back */
			break;
		}
		if (!rc && dr.n > 0) {
			empty = 0;
			continue;
		}
		/*
		 * Nothing to run on a readable fd (another waiter took it, or
		 * the port is gone): after a few in a row, leave the fd to the
		 * loop thread for this wait rather than spin on it.
		 */
		if (rc || ++empty >= 3) {
			pfd[1].fd = -1;
			wfd = -1;
			if (waiting)
				waiting = tfd_wait(rt, false);
		}
	}
	if (waiting)
		tfd_wait(rt, false);
	return rc;
}

struct pop_args {
	struct cm_runtime *rt;
	struct cm_event *ev;
};

static bool popped(void *arg)
{
	struct pop_args *a = arg;

	return evq_pop(&a->rt->q, a->ev) != -EAGAIN;
}

int cm_runtime_wait_event(struct cm_runtime *rt, struct cm_event *ev, int timeout_ms)
{
	struct pop_args a = {rt, ev};

	mad_assert_no_lib_lock();
	if (!rt || !ev)
		return -EINVAL;
	return wait_running_mads(rt, rt->q.fd, popped, &a, timeout_ms, false, NULL);
}

static bool fd_readable(void *arg)
{
	struct pollfd p = {.fd = *(int *)arg, .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

int cm_runtime_wait_fd(struct cm_runtime *rt, int fd, int timeout_ms)
{
	mad_assert_no_lib_lock();
	if (!rt || fd < 0)
		return -EINVAL;
	return wait_running_mads(rt, fd, fd_readable, &fd, timeout_ms, true, NULL);
}

int cm_runtime_wait_ready(struct cm_runtime *rt, struct cm_rt_waitset *ws, int fd,
			  bool (*ready)(void *arg), void *arg, int timeout_ms)
{
	mad_assert_no_lib_lock();
	if (!rt || fd < 0 || !ready)
		return -EINVAL;
	return wait_running_mads(rt, fd, ready, arg, timeout_ms, true, ws);
}

/* ---- port and paths ---- */

void cm_runtime_path_addr(const struct cm_path *p, uint16_t pkey_index, struct mad_addr *out)
{
	cm_mad_addr_from_path(out, p, pkey_index);
}

struct sa_client *cm_runtime_sa(const struct cm_runtime *rt)
{
	return rt ? rt->sa : NULL;
}

int cm_runtime_port(const struct cm_runtime *rt, struct mad_port_attr *out)
{
	if (!rt || !out)
		return -EINVAL;
	*out = rt->port;
	return 0;
}

struct mad_loop *cm_runtime_loop(const struct cm_runtime *rt)
{
	return rt ? rt->loop : NULL;
}

/*
 * The QP's ACK timeout for a path: the kernel's cm_ack_timeout() with a CA
 * ACK delay of 0, i.e. twice the packet life time (one more exponent step),
 * which covers a request and its ACK crossing the path.
 */
static uint8_t ack_timeout_for(uint8_t packet_life_time)
{
	unsigned t = packet_life_time + 1u;

	if (!packet_life_time)
		t++;
	return (uint8_t)(t > 31 ? 31 : t);
}

int cm_path_from_sa(const struct sa_path *sp, struct cm_path *out)
{
	if (!sp || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->slid = sp->slid;
	out->dlid = sp->dlid;
	memcpy(out->sgid, sp->sgid, 16);
	memcpy(out->dgid, sp->dgid, 16);
	out->flow_label = sp->flow_label & 0xfffff;
	out->rate = sp->rate & 0x3f;
	out->traffic_class = sp->tclass;
	out->hop_limit = sp->hop_limit;
	out->sl = sp->sl & 0xf;
	/* A hop limit of 0 or 1 keeps the packet in the subnet: no GRH (cma.c). */
	out->subnet_local = sp->hop_limit <= 1;
	out->packet_life_time = sp->packet_life_time & 0x1f;
	out->local_ack_timeout = ack_timeout_for(out->packet_life_time);
	out->mtu = sp->mtu;
	out->pkey = sp->pkey;
	if (out->mtu < 1 || out->mtu > 5)
		return -EPROTO;
	return 0;
}

int cm_runtime_resolve_path(struct cm_runtime *rt, const uint8_t dgid[16], uint16_t pkey,
			    struct cm_path *out)
{
	struct sa_path_query q;
	struct sa_path path;
	unsigned n = 0;
	int rc;

	mad_assert_no_lib_lock();
	if (!rt || !dgid || !out)
		return -EINVAL;
	if (!rt->sa)
		return -ENOTSUP;
	memset(&q, 0, sizeof(q));
	memcpy(q.rec.sgid, rt->port.gid, 16);
	memcpy(q.rec.dgid, dgid, 16);
	q.rec.reversible = true;
	q.rec.numb_path = 1;
	q.rec.pkey = pkey;
	/* What the kernel's cma asks (cma_query_ib_route), minus QoS. */
	q.comp_mask = SA_PR_COMP_SGID | SA_PR_COMP_DGID | SA_PR_COMP_REVERSIBLE |
		      SA_PR_COMP_NUMB_PATH | (pkey ? SA_PR_COMP_P_KEY : 0);
	rc = sa_path_query(rt->sa, &q, &path, 1, &n, NULL);
	if (rc)
		return rc;
	if (!n)
		return -ENOENT;
	return cm_path_from_sa(&path, out);
}

struct path_args {
	struct cm_runtime *rt;
	const struct sa_path_query *q;
	cm_path_cb cb;
	void *arg;
	int rc;
};

static void path_on_loop(void *arg)
{
	struct path_args *a = arg;

	a->rc = a->rt->ops->path_query(a->rt, a->q, a->cb, a->arg);
}

int cm_runtime_path_query_async(struct cm_runtime *rt, const struct sa_path_query *q, cm_path_cb cb,
				void *arg)
{
	struct path_args a = {rt, q, cb, arg, 0};
	int rc;

	mad_assert_no_lib_lock();
	if (!rt || !q || !cb)
		return -EINVAL;
	if (!rt->ops->path_query)
		return rt->sa ? sa_path_query_async(rt->sa, q, cb, arg) : -ENOTSUP;
	rc = mad_loop_call_here(rt->loop, path_on_loop, &a);
	return rc ? rc : a.rc;
}

/* A SERVICE_QUERY's wait: the answer copied here by its callback on the loop. */
struct service_wait {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
	int rc;
	struct sa_service *recs;
	unsigned n;
};

static void service_answer(void *arg, int status, const struct sa_service *recs, unsigned n)
{
	struct service_wait *w = arg;
	struct sa_service *copy = NULL;

	if (status == 0 && n == 0)
		status = -ENOENT;
	if (status == 0) {
		copy = malloc(sizeof(*copy) * n);
		if (copy)
			memcpy(copy, recs, sizeof(*copy) * n);
		else
			status = -ENOMEM;
	}
	pthread_mutex_lock(&w->m);
	w->rc = status;
	w->recs = copy;
	w->n = copy ? n : 0;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

struct service_args {
	struct cm_runtime *rt;
	const struct sa_service *s;
	uint64_t comp_mask;
	struct service_wait *w;
	int rc;
};

static void service_on_loop(void *arg)
{
	struct service_args *a = arg;

	a->rc = a->rt->ops->service_query(a->rt, a->s, a->comp_mask, service_answer, a->w);
}

int cm_runtime_service_query(struct cm_runtime *rt, const struct sa_service *s, uint64_t comp_mask,
			     struct sa_service **out, unsigned *n)
{
	struct service_wait w = {.m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	struct service_args a = {rt, s, comp_mask, &w, 0};
	int rc;

	mad_assert_no_lib_lock();
	if (!rt || !s || !out || !n)
		return -EINVAL;
	*out = NULL;
	*n = 0;
	if (!rt->ops->service_query)
		return rt->sa ? sa_service_query(rt->sa, s, comp_mask, out, n) : -ENOTSUP;
	rc = mad_loop_call_here(rt->loop, service_on_loop, &a);
	if (!rc)
		rc = a.rc;
	if (rc)
		return rc;
	/* The callback comes once: the daemon's answer, its loss, or the runtime's close. */
	pthread_mutex_lock(&w.m);
	while (!w.done) {
		if (mad_loop_started(rt->loop)) {
			pthread_cond_wait(&w.cv, &w.m);
			continue;
		}
		/* A loop without a thread makes progress only when driven. */
		pthread_mutex_unlock(&w.m);
		mad_loop_run_once(rt->loop, 10);
		pthread_mutex_lock(&w.m);
	}
	pthread_mutex_unlock(&w.m);
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.m);
	*out = w.recs;
	*n = w.n;
	return w.rc;
}

/* ---- wrappers ---- */

int cm_runtime_listen(struct cm_runtime *rt, uint64_t service_id, uint64_t mask, uint64_t user)
{
	struct cm_rt_cmd c = {.op = CM_RT_LISTEN, .user = user};

	mad_assert_no_lib_lock();
	c.listen.service_id = service_id;
	c.listen.mask = mask;
	return cm_runtime_exec(rt, &c);
}

int cm_runtime_connect(struct cm_runtime *rt, const struct cm_connect_cmd *cc, uint32_t *id)
{
	struct cm_rt_cmd c = {.op = CM_RT_CONNECT};
	int rc;

	mad_assert_no_lib_lock();
	if (!cc || !id)
		return -EINVAL;
	c.connect = *cc;
	rc = cm_runtime_exec(rt, &c);
	if (!rc)
		*id = c.id;
	return rc;
}

int cm_runtime_accept(struct cm_runtime *rt, uint32_t id, uint64_t user,
		      const struct cm_accept_cmd *a)
{
	struct cm_rt_cmd c = {.op = CM_RT_ACCEPT, .id = id, .user = user};

	mad_assert_no_lib_lock();
	if (!a)
		return -EINVAL;
	c.accept = *a;
	return cm_runtime_exec(rt, &c);
}

int cm_runtime_connect_qp(struct cm_runtime *rt, const struct cm_connect_cmd *cc, struct ibv_qp *qp,
			  uint32_t flags, uint32_t *id)
{
	struct cm_rt_cmd c = {.op = CM_RT_CONNECT};
	int rc;

	mad_assert_no_lib_lock();
	if (!cc || !qp || !id)
		return -EINVAL;
	c.connect = *cc;
	c.auto_qp.qp = qp;
	c.auto_qp.flags = flags;
	rc = cm_runtime_exec(rt, &c);
	if (!rc)
		*id = c.id;
	return rc;
}

/* In this process the QP may move outside the loop (runtime_local.c). */
int cm_runtime_accept_qp(struct cm_runtime *rt, uint32_t id, uint64_t user,
			 const struct cm_accept_cmd *a, struct ibv_qp *qp, uint32_t flags)
{
	struct cm_rt_cmd c = {.op = CM_RT_ACCEPT, .id = id, .user = user};

	mad_assert_no_lib_lock();
	if (!rt || !a || !qp || (flags & ~CM_RT_QP_FLAGS))
		return -EINVAL;
	c.accept = *a;
	c.auto_qp.qp = qp;
	c.auto_qp.flags = flags;
	return rt->ops->accept_qp(rt, &c);
}

int cm_runtime_reject(struct cm_runtime *rt, uint32_t id, uint16_t reason)
{
	struct cm_rt_cmd c = {.op = CM_RT_REJECT, .id = id};

	mad_assert_no_lib_lock();
	c.reject.reason = reason;
	return cm_runtime_exec(rt, &c);
}

static int simple(struct cm_runtime *rt, enum cm_rt_op op, uint32_t id)
{
	struct cm_rt_cmd c = {.op = op, .id = id};

	return cm_runtime_exec(rt, &c);
}

int cm_runtime_rtu(struct cm_runtime *rt, uint32_t id)
{
	return simple(rt, CM_RT_RTU, id);
}

int cm_runtime_establish(struct cm_runtime *rt, uint32_t id)
{
	return simple(rt, CM_RT_ESTABLISH, id);
}

int cm_runtime_disconnect(struct cm_runtime *rt, uint32_t id)
{
	return simple(rt, CM_RT_DISCONNECT, id);
}

int cm_runtime_release(struct cm_runtime *rt, uint32_t id)
{
	return simple(rt, CM_RT_RELEASE, id);
}

int cm_runtime_init_qp_attr(struct cm_runtime *rt, uint32_t id, enum ibv_qp_state state,
			    struct ibv_qp_attr *attr, int *mask)
{
	struct cm_rt_cmd c;
	int rc;

	mad_assert_no_lib_lock();
	if (!rt || !attr || !mask)
		return -EINVAL;
	/* Holding the loop already (an event's hook), or sent ahead by madcmd. */
	if (rt->ops->qp_attr_now(rt, id, state, attr, mask, &rc))
		return rc;
	c = (struct cm_rt_cmd){.op = CM_RT_INIT_QP_ATTR, .id = id, .qp.state = state};
	rc = cm_runtime_exec(rt, &c);
	if (!rc) {
		*attr = c.qp.attr;
		*mask = c.qp.mask;
	}
	return rc;
}

int cm_runtime_stats(struct cm_runtime *rt, struct cm_rt_stats *out)
{
	struct cm_rt_cmd c = {.op = CM_RT_STATS};
	int rc;

	mad_assert_no_lib_lock();
	if (!out)
		return -EINVAL;
	rc = cm_runtime_exec(rt, &c);
	if (!rc)
		*out = c.stats;
	return rc;
}

void cm_runtime_forked(struct cm_runtime *rt)
{
	if (rt && rt->ops->forked)
		rt->ops->forked(rt);
	waitsets_live = 0; /* the parent's channels' sets */
}
