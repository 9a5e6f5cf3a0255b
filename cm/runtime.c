/*
 * CM runtime (see runtime.h): the CM engine hosted on a progress loop with
 * a real MAD transport, a command interface for application threads and an
 * eventfd-signalled event queue.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "cm/runtime.h"
#include "cm/umad.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

#define DEFAULT_MAX_EVENTS (1u << 20)

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

struct cm_runtime {
	struct mad_loop *loop;
	bool own_loop;
	struct mad_transport *t;
	struct cm_umad *cmu;	  /* the CM agent and the engine on it */
	struct cm_engine *engine; /* cm_umad_engine(cmu), NULL once closed */
	struct mad_port_attr port;
	struct sa_client *sa;
	struct ev_queue q;
	int tfd; /* transport fd we watch, or -1 */
	bool (*hook)(void *arg, struct cm_runtime *rt, const struct cm_event *ev);
	void *hook_arg;
};

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

/* ---- engine glue (runs on the loop) ---- */

/* Engine events: the caller's fast path first, else the queue. */
static void eng_event(void *ctx, const struct cm_event *ev)
{
	struct cm_runtime *rt = ctx;

	if (rt->hook && rt->hook(rt->hook_arg, rt, ev))
		return;
	evq_push(&rt->q, ev);
}

static void on_readable(struct mad_loop *l, int fd, void *arg)
{
	struct cm_runtime *rt = arg;

	(void)l;
	(void)fd;
	mad_transport_poll(rt->t, 0);
}

struct open_args {
	struct cm_runtime *rt;
	const struct cm_runtime_params *p;
	int rc;
};

static void close_port_on_loop(void *arg)
{
	struct cm_runtime *rt = arg;

	cm_umad_close(rt->cmu);
	rt->cmu = NULL;
	rt->engine = NULL;
	if (rt->tfd >= 0)
		mad_loop_unwatch_fd(rt->loop, rt->tfd);
	rt->tfd = -1;
	mad_transport_close(rt->t);
	rt->t = NULL;
}

static void open_on_loop(void *arg)
{
	struct open_args *o = arg;
	struct cm_runtime *rt = o->rt;
	const struct cm_runtime_params *p = o->p;
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
		goto out;
	rt->port = *mad_transport_port_cached(rt->t);
	up.transport = rt->t;
	up.timers = mad_loop_timers(rt->loop);
	up.event = eng_event;
	up.ctx = rt;
	up.max_conns = p->max_conns;
	up.ca_guid = p->ca_guid;
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
	goto out;
fail:
	close_port_on_loop(rt);
out:
	o->rc = rc;
}

int cm_runtime_open(struct cm_runtime **out, const struct cm_runtime_params *p)
{
	struct cm_runtime *rt;
	struct open_args o;
	int rc;

	if (!out || !p)
		return -EINVAL;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->tfd = -1;
	rt->hook = p->on_loop_event;
	rt->hook_arg = p->on_loop_event_arg;
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
		sp.ops = p->ops;
		sp.ops_ctx = p->ops_ctx;
		sp.ca = rt->port.ca_name;
		sp.port = rt->port.portnum;
		sp.timeout_ms = p->sa_timeout_ms;
		sp.retries = p->sa_retries ? p->sa_retries : 3;
		rc = sa_client_open(&rt->sa, &sp);
		if (rc) {
			mad_loop_call(rt->loop, close_port_on_loop, rt);
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
	if (!rt)
		return;
	sa_client_close(rt->sa);
	mad_loop_call(rt->loop, close_port_on_loop, rt);
	if (rt->own_loop)
		mad_loop_destroy(rt->loop);
	evq_destroy(&rt->q);
	free(rt);
}

/* ---- commands ---- */

static int run_cmd(struct cm_runtime *rt, struct cm_rt_cmd *c)
{
	struct cm_engine *e = rt->engine;

	switch (c->op) {
	case CM_RT_LISTEN:
		return cm_engine_listen(e, c->listen.service_id, c->listen.mask, c->user);
	case CM_RT_UNLISTEN:
		return cm_engine_unlisten(e, (int)c->id);
	case CM_RT_CONNECT:
		return cm_engine_connect(e, &c->connect, &c->id);
	case CM_RT_ACCEPT:
		return cm_engine_accept(e, c->id, c->user, &c->accept);
	case CM_RT_REJECT:
		return cm_engine_reject(e, c->id, &c->reject);
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
		return cm_engine_release(e, c->id);
	case CM_RT_INIT_QP_ATTR:
		return cm_engine_init_qp_attr(e, c->id, c->qp.state, &c->qp.attr, &c->qp.mask);
	case CM_RT_CONN_STATE:
		return cm_engine_conn_state(e, c->id, &c->state);
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
		c->result = b->rt->engine ? run_cmd(b->rt, c) : -ESHUTDOWN;
	}
}

int cm_runtime_exec_batch(struct cm_runtime *rt, struct cm_rt_cmd *cmds, unsigned n)
{
	struct batch_args b = {rt, cmds, n};

	if (!rt || (!cmds && n))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if ((unsigned)cmds[i].op >= CM_RT__COUNT ||
		    cmds[i].private_data_len > CM_PRIVATE_MAX)
			return -EINVAL;
	if (!n)
		return 0;
	return mad_loop_call(rt->loop, batch_on_loop, &b);
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

int cm_runtime_wait_event(struct cm_runtime *rt, struct cm_event *ev, int timeout_ms)
{
	int64_t end = timeout_ms >= 0 ? now_ms() + timeout_ms : 0;

	if (!rt || !ev)
		return -EINVAL;
	for (;;) {
		struct pollfd pfd = {.fd = rt->q.fd, .events = POLLIN};
		int rc = evq_pop(&rt->q, ev), left = -1;

		if (rc != -EAGAIN)
			return rc;
		if (timeout_ms >= 0) {
			int64_t d = end - now_ms();

			if (d <= 0)
				return -ETIMEDOUT;
			left = (int)d;
		}
		/* A loop without a thread makes progress only when driven. */
		if (!mad_loop_started(rt->loop)) {
			mad_loop_run_once(rt->loop, left < 0 || left > 10 ? 10 : left);
			continue;
		}
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
}

/* ---- port and paths ---- */

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

/* ---- wrappers ---- */

int cm_runtime_listen(struct cm_runtime *rt, uint64_t service_id, uint64_t mask, uint64_t user)
{
	struct cm_rt_cmd c = {.op = CM_RT_LISTEN, .user = user};

	c.listen.service_id = service_id;
	c.listen.mask = mask;
	return cm_runtime_exec(rt, &c);
}

int cm_runtime_connect(struct cm_runtime *rt, const struct cm_connect_cmd *cc, uint32_t *id)
{
	struct cm_rt_cmd c = {.op = CM_RT_CONNECT};
	int rc;

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

	if (!a)
		return -EINVAL;
	c.accept = *a;
	return cm_runtime_exec(rt, &c);
}

int cm_runtime_reject(struct cm_runtime *rt, uint32_t id, uint16_t reason)
{
	struct cm_rt_cmd c = {.op = CM_RT_REJECT, .id = id};

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
	struct cm_rt_cmd c = {.op = CM_RT_INIT_QP_ATTR, .id = id};
	int rc;

	if (!attr || !mask)
		return -EINVAL;
	c.qp.state = state;
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

	if (!out)
		return -EINVAL;
	rc = cm_runtime_exec(rt, &c);
	if (!rc)
		*out = c.stats;
	return rc;
}
