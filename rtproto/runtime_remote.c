/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The CM runtime's madcmd backend (cm/runtime_int.h): the port's CM is
 * the daemon's, reached through a CM session (rt_client.h).  Commands
 * go to the daemon (posted, without waiting for their REPLY, where no
 * caller reads the result); events come back on the session's socket,
 * which the loop watches, or are kept while a command waits for its
 * REPLY and run after it, in order.  QPs stay in the program.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/runtime_int.h"
#include "mad/loop.h"
#include "rtproto/rt_client.h"
#include "sa/client.h"

/* A command in the daemon, waiting for its REPLY: its result. */
static int remote_exec(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	int rc = rt_remote_call(rt->remote, c);

	return rc ? rc : c->result;
}

static int remote_simple(struct cm_runtime *rt, enum cm_rt_op op, uint32_t id)
{
	struct cm_rt_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = op;
	c.id = id;
	return remote_exec(rt, &c);
}

/* ---- the engine's calls auto QP makes, as commands to the daemon ---- */

static int remote_init_qp_attr(struct cm_runtime *rt, uint32_t id, enum ibv_qp_state to,
			       struct ibv_qp_attr *a, int *mask)
{
	struct cm_rt_cmd c;
	int rc;

	/* Sent ahead with the REPLY or EVENT that made them known: no round trip. */
	if (cm_qp_ahead_take(&rt->remote->ahead, id, to, a, mask))
		return 0;
	memset(&c, 0, sizeof(c));
	c.op = CM_RT_INIT_QP_ATTR;
	c.id = id;
	c.qp.state = to;
	rc = remote_exec(rt, &c);
	if (!rc) {
		*a = c.qp.attr;
		*mask = c.qp.mask;
	}
	return rc;
}

static int remote_connect(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	return remote_exec(rt, c);
}

/*
 * An RTU is posted: it can only fail when the connection already ended
 * (a REJ or timeout then says so), and waiting for its REPLY would put a
 * round trip to the daemon before ESTABLISHED.
 */
static int remote_rtu(struct cm_runtime *rt, uint32_t id)
{
	struct cm_rt_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = CM_RT_RTU;
	c.id = id;
	return rt_remote_post(rt->remote, &c);
}

static int remote_reject(struct cm_runtime *rt, uint32_t id, const struct cm_reject_cmd *rj)
{
	struct cm_rt_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = CM_RT_REJECT;
	c.id = id;
	c.reject = *rj;
	return remote_exec(rt, &c);
}

static int remote_release(struct cm_runtime *rt, uint32_t id)
{
	return remote_simple(rt, CM_RT_RELEASE, id);
}

/*
 * An auto-QP accept: the QP moves first and the accept is sent without
 * waiting; what the daemon refuses comes back as CM_EV_CONNECT_ERROR (the
 * QP then fails and a REJ goes out), no round trip ahead.
 */
static int remote_accept_check(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	(void)rt;
	(void)c;
	return 0;
}

/*
 * The REP leaves from the daemon; not waiting for its answer keeps a
 * round trip out of every accept.  The QP is kept until the connection
 * is established or ends, so that a refusal (CM_EV_CONNECT_ERROR,
 * rt_engine_event) can fail it.
 */
static int remote_accept_send(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	int rc = rt_qp_map_put(&rt->qps, c->id, c->auto_qp.qp);

	if (!rc && (rc = rt_remote_post_async(rt->remote, c)))
		rt_qp_map_take(&rt->qps, c->id);
	return rc;
}

/* ---- events ---- */

static void remote_drain(struct cm_runtime *rt);

/*
 * The session's keepalive, one loop timer while it is open.  A program
 * that only waits for events (a listener, a posted connect or disconnect)
 * waits for nothing the daemon owes it, so a stopped daemon would leave
 * it waiting forever; and a query's answer comes on the loop, not in a
 * call that waits.  So: the daemon quiet for half of madcmd_timeout_ms()
 * (rt_remote.heard_ns: every packet from it, its PONGs too, moves it) is
 * sent one PING, posted; quiet for all of it, the session is lost with
 * -ETIMEDOUT, as take()'s bound on a REPLY does.  A daemon that talks
 * anyway is sent nothing (the timer only moves on), and an idle session
 * costs a PING and a PONG per half bound.
 */
static void quiet_fired(struct mad_timer *t, void *arg)
{
	struct cm_runtime *rt = arg;
	struct rt_remote *r = rt->remote;
	uint64_t bound = (uint64_t)madcmd_timeout_ms() * 1000000u, now, due;

	(void)t;
	if (!r || r->lost || r->fd < 0)
		return; /* lost, or a fork()ed child's copy */
	now = r->now_ns(r->clock_ctx);
	if (now >= r->heard_ns + bound) {
		rt_remote_lose(r, MADCMD_ERR_STALLED);
		remote_drain(rt);
		return;
	}
	due = r->heard_ns + bound / 2;
	if (now >= due) {
		/* -EAGAIN: a socket it does not empty; the bound will tell. */
		if (rt_remote_ping(r) == MADCMD_ERR_LOST) {
			rt_remote_lose(r, MADCMD_ERR_LOST);
			remote_drain(rt);
			return;
		}
		/* Its PONG moves heard_ns: then the next PING is due, else the loss. */
		due = r->heard_ns + bound;
	}
	mad_timer_arm_at(mad_loop_timers(rt->loop), &r->quiet, due, quiet_fired, rt);
}

/* The keepalive starts with the session, and again after a wait began (query_send). */
static void quiet_arm(struct cm_runtime *rt)
{
	struct rt_remote *r = rt->remote;

	if (!mad_timer_armed(&r->quiet))
		mad_timer_arm_at(mad_loop_timers(rt->loop), &r->quiet,
				 r->heard_ns + (uint64_t)madcmd_timeout_ms() * 500000u, quiet_fired,
				 rt);
}

/* ---- PathRecords: the daemon's host-wide cache (PATH_QUERY) ---- */

struct remote_path {
	struct rt_path_wait w; /* first: rt_remote_path_pop gives it back */
	cm_path_cb cb;
	void *arg;
};

static int remote_path_query(struct cm_runtime *rt, const struct sa_path_query *q, cm_path_cb cb,
			     void *arg)
{
	struct madcmd_path_query m;
	struct remote_path *p;
	int rc;

	if (!rt->remote)
		return -ESHUTDOWN;
	memset(&m, 0, sizeof(m));
	rc = sa_path_encode(&q->rec, m.rec);
	if (rc)
		return rc;
	m.comp_mask = q->comp_mask;
	m.table = q->table;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cb = cb;
	p->arg = arg;
	rc = rt_remote_path_send(rt->remote, &m, &p->w);
	if (rc)
		free(p);
	else
		quiet_arm(rt);
	return rc;
}

/* One answer to its asker (status: the daemon's, or `force` when not 0). */
static void path_answer(struct remote_path *p, int force)
{
	struct sa_path paths[MADCMD_PATH_MAX];
	int rc = force ? force : p->w.rep.rc;
	unsigned n = rc ? 0 : p->w.rep.n;

	for (unsigned i = 0; i < n; i++)
		sa_path_decode(p->w.rep.recs[i], &paths[i]);
	p->cb(p->arg, rc, n ? paths : NULL, n);
	free(p);
}

/* ---- ServiceRecords: the daemon's host-wide cache (SERVICE_QUERY) ---- */

struct remote_service {
	struct rt_path_wait w; /* first: rt_remote_path_pop gives it back */
	cm_service_cb cb;
	void *arg;
};

static int remote_service_query(struct cm_runtime *rt, const struct sa_service *s,
				uint64_t comp_mask, cm_service_cb cb, void *arg)
{
	struct madcmd_service_query m;
	struct remote_service *p;
	int rc;

	if (!rt->remote)
		return -ESHUTDOWN;
	memset(&m, 0, sizeof(m));
	rc = sa_service_encode(s, m.rec);
	if (rc)
		return rc;
	m.comp_mask = comp_mask;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cb = cb;
	p->arg = arg;
	rc = rt_remote_service_send(rt->remote, &m, &p->w);
	if (rc)
		free(p);
	else
		quiet_arm(rt);
	return rc;
}

static void service_answer(struct remote_service *p, int force)
{
	struct sa_service recs[MADCMD_SERVICE_MAX];
	int rc = force ? force : p->w.srep.rc;
	unsigned n = rc ? 0 : p->w.srep.n;

	for (unsigned i = 0; i < n; i++)
		sa_service_decode(p->w.srep.recs[i], &recs[i]);
	p->cb(p->arg, rc, n ? recs : NULL, n);
	free(p);
}

/* A PATH_QUERY's or SERVICE_QUERY's answer to its asker. */
static void query_answer(struct rt_path_wait *w, int force)
{
	if (w->service)
		service_answer((struct remote_service *)w, force);
	else
		path_answer((struct remote_path *)w, force);
}

/* The attributes sent ahead for a connection that ends before its QP took them go with it. */
static void ahead_on_event(struct cm_runtime *rt, const struct cm_event *ev)
{
	switch (ev->type) {
	case CM_EV_REJ_RCVD:
	case CM_EV_REQ_ERROR:
	case CM_EV_REP_ERROR:
	case CM_EV_TIMEWAIT_EXIT:
		cm_qp_ahead_drop(&rt->remote->ahead, ev->id);
		break;
	default:
		break;
	}
}

/*
 * The session's events, as the engine's come in this process: those it
 * read (while commands waited for their REPLY, or now), in order, on the
 * loop.  An event's handling may make commands, which may keep more
 * events: they run in this same loop, never nested.
 */
static void remote_drain(struct cm_runtime *rt)
{
	struct cm_event ev;

	if (!rt->remote || rt->draining)
		return;
	rt->draining = true;
	while (rt_remote_pop(rt->remote, &ev)) {
		if (ev.type == CM_EV_RUNTIME_LOST && rt->tfd >= 0)
			rt_unwatch_tfd(rt);
		ahead_on_event(rt, &ev);
		rt_engine_event(rt, &ev);
	}
	for (struct rt_path_wait *w; (w = rt_remote_path_pop(rt->remote));)
		query_answer(w, 0);
	rt->draining = false;
}

/* Read what the daemon sent and run it: messages read, or -ENOTCONN. */
static int remote_input(struct cm_runtime *rt)
{
	int n = rt_remote_poll(rt->remote);

	remote_drain(rt);
	return n;
}

static void on_readable(struct mad_loop *l, int fd, void *arg)
{
	(void)l;
	(void)fd;
	remote_input(arg);
}

static int remote_run_input(struct cm_runtime *rt, bool (*ready)(void *), void *arg, bool *done)
{
	int n = rt->tfd >= 0 ? remote_input(rt) : -ENOTCONN;

	*done = n > 0 && ready && ready(arg);
	return n;
}

/* ---- the session ---- */

static int remote_open(struct cm_runtime *rt, const struct cm_runtime_params *p)
{
	struct madcmd_hello_rep rep;
	int rc;

	rt->remote = calloc(1, sizeof(*rt->remote));
	rt->daemon = strdup(p->daemon);
	if (!rt->remote || !rt->daemon) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = rt_remote_open(rt->remote, p->daemon, p->ca, p->port, p->mra_on_delivery, &rep);
	if (!rc) {
		struct mad_timer_heap *h = mad_loop_timers(rt->loop);

		/* Silence is measured on the loop's clock, which runs the timer. */
		rt->remote->now_ns = h->now_ns;
		rt->remote->clock_ctx = h->clock_ctx;
		rt->port = rep.port;
		rc = mad_loop_watch_fd(rt->loop, rt->remote->fd, on_readable, rt);
	}
	if (!rc) {
		rt->tfd = rt->remote->fd;
		rt->remote->heard_ns =
		    rt->remote->now_ns(rt->remote->clock_ctx); /* its HELLO_REP */
		quiet_arm(rt);
		return 0;
	}
	rt_remote_close(rt->remote);
fail:
	free(rt->remote);
	rt->remote = NULL;
	free(rt->daemon);
	rt->daemon = NULL;
	return rc;
}

static void remote_close(struct cm_runtime *rt)
{
	rt_unwatch_tfd(rt);
	mad_timer_cancel(mad_loop_timers(rt->loop), &rt->remote->quiet);
	/* Queries still waiting end as the SA client's do when it closes. */
	while (rt->remote->paths) {
		struct rt_path_wait *w = rt->remote->paths;

		rt->remote->paths = w->next;
		query_answer(w, -ECANCELED);
	}
	rt_remote_close(rt->remote);
	free(rt->remote);
	rt->remote = NULL;
	free(rt->daemon);
	rt->daemon = NULL;
}

/* The SA client's MADs go through the daemon's SA proxy (umad_remote.c). */
static const struct mad_umad_ops *remote_sa_umad(struct cm_runtime *rt,
						 const struct cm_runtime_params *p, void **ctx)
{
	(void)p;
	*ctx = rt->daemon;
	return &madcmd_umad_ops;
}

/* ---- commands ---- */

static int remote_cmd(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	struct rt_remote *r = rt->remote;
	uint32_t granted;

	if (!r)
		return -ESHUTDOWN;
	if (c->op == CM_RT_RELEASE || c->op == CM_RT_DROP)
		cm_qp_ahead_drop(&r->ahead, c->id); /* what it did not take */
	if (c->op == CM_RT_CONNECT && c->auto_qp.qp)
		return rt_auto_connect(rt, c);
	/* Grants the daemon sent since (a burst of connects uses them up). */
	if (c->op == CM_RT_CONNECT && r->gcount < RT_GRANTS / 4)
		rt_remote_poll(r);
	if (c->op == CM_RT_CONNECT && rt_remote_grant(r, &granted)) {
		/*
		 * An ID the daemon granted: the connect is sent and not
		 * waited for (a refusal comes as CM_EV_REQ_ERROR).
		 */
		struct cm_rt_cmd as = *c;
		int rc;

		as.op = CM_RT_CONNECT_AS;
		as.id = granted;
		rc = rt_remote_post_async(r, &as);
		if (!rc)
			c->id = granted;
		return rc;
	}
	if (c->op == CM_RT_ACCEPT && c->auto_qp.qp)
		return rt_auto_accept(rt, c);
	if (c->op == CM_RT_RELEASE || c->op == CM_RT_DROP)
		rt_qp_map_take(&rt->qps, c->id);
	/*
	 * Posted, no REPLY waited for: an MRA's result is never read (lib/
	 * arms them on events); an RTU can only fail once the connection
	 * ended, which its own event reports (as remote_rtu); a DISCONNECT's
	 * and a RELEASE's neither (the kernel's rdma_disconnect and destroy
	 * report none either).  Commands of a session run in order, so
	 * later ones see their effect.
	 */
	if (c->op == CM_RT_MRA || c->op == CM_RT_RTU || c->op == CM_RT_DISCONNECT ||
	    c->op == CM_RT_RELEASE)
		return rt_remote_post(r, c);
	return remote_exec(rt, c);
}

static int remote_accept_qp(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	return cm_runtime_exec(rt, c);
}

/* Sent ahead by madcmd (qp_ahead.h): no daemon to ask. */
static bool remote_qp_attr_now(struct cm_runtime *rt, uint32_t id, enum ibv_qp_state state,
			       struct ibv_qp_attr *attr, int *mask, int *rc)
{
	if (!rt->remote || !cm_qp_ahead_take(&rt->remote->ahead, id, state, attr, mask))
		return false;
	*rc = 0;
	return true;
}

/* The parent's session: the child closes its copy, so the daemon sees it end with the parent. */
static void remote_forked(struct cm_runtime *rt)
{
	if (rt->remote && rt->remote->fd >= 0) {
		close(rt->remote->fd);
		rt->remote->fd = -1;
	}
}

const struct rt_ops rt_madcmd_ops = {
    .open = remote_open,
    .close = remote_close,
    .sa_umad = remote_sa_umad,
    .exec = remote_cmd,
    .after_batch = remote_drain,
    .run_input = remote_run_input,
    .init_qp_attr = remote_init_qp_attr,
    .connect = remote_connect,
    .rtu = remote_rtu,
    .reject = remote_reject,
    .release = remote_release,
    .accept_check = remote_accept_check,
    .accept_send = remote_accept_send,
    .accept_qp = remote_accept_qp,
    .qp_attr_now = remote_qp_attr_now,
    .forked = remote_forked,
    .path_query = remote_path_query,
    .service_query = remote_service_query,
};
