/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* SA client engine (see client.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/path_cache.h"
#include "sa/sa_wire.h"
#include "sa/service_cache.h"

#define PORT_REREAD_NS 1000000000ull /* re-read SM LID at most once a second */
#define MAX_REDIRECTS 2
#define MAX_REC_LEN SA_SR_SIZE /* largest record we send */
#define ASYNC_HIT_MAX 64       /* paths a cache hit hands to a callback */
#define SEEN_REPORTS 32	       /* Report TIDs remembered to deliver each once */
#define MAX_TRAP_SETS 256      /* InformInfo Sets one subscribe may make */

struct sa_client {
	struct mad_loop *loop;
	struct mad_transport *t;
	struct mad_agent *agent;
	struct mad_send_opts opts;
	struct sa_path_cache *cache;
	struct sa_service_cache *scache; /* ServiceRecord answers of resolution queries */
	/* PathRecord and ServiceRecord asks in flight that later ones join (loop side). */
	struct joint_ask *inflight;
	bool own_transport; /* opened here (else borrowed) */
	/* Loop-side state. */
	struct mad_addr dst; /* the SA: SM LID/SL, or a redirect */
	bool redirected;
	uint64_t port_read_ns;
	struct mad_timer port_timer; /* re-reads the port while a cache lives */
	struct sa_client_stats st;
	/* Notices: the Report agent (registered on first use) and the handler. */
	struct mad_agent *notice_agent;
	sa_notice_fn notice_fn;
	void *notice_arg;
	struct {
		uint64_t tid;
		uint16_t lid;
	} seen[SEEN_REPORTS]; /* ring of the last Reports delivered */
	unsigned seen_next, seen_n;
	/*
	 * The owner's reference and one per command posted to the loop and
	 * not run yet: sa_client_close may come before the loop runs them
	 * (a loop driven by hand runs the rest when it is destroyed), and
	 * the last to go frees the client.  `closed` (set on the loop) makes
	 * such a command answer -ECANCELED instead of querying.
	 */
	unsigned refs;
	bool closed;
};

/*
 * One query, owned by the loop from submission to its done() call.  The
 * records passed to done() live in the response and are valid during the
 * call only.
 */
struct sa_query;
typedef void (*sa_query_done)(struct sa_query *q, int status, uint16_t mad_status,
			      const uint8_t *recs, unsigned n, size_t rec_size);

struct sa_query {
	struct sa_client *c;
	uint8_t method;
	uint16_t attr;
	uint64_t comp_mask;
	uint8_t rec[MAX_REC_LEN];
	size_t rec_len;
	unsigned redirects;
	sa_query_done done;
};

/* ---- port and SA address (loop side) ---- */

static void set_dst_from_port(struct sa_client *c, const struct mad_port_attr *a)
{
	memset(&c->dst, 0, sizeof(c->dst));
	c->dst.lid = a->sm_lid;
	c->dst.sl = a->sm_sl;
	c->dst.qpn = 1;
	c->dst.qkey = MAD_QP1_QKEY;
	c->redirected = false;
}

static void refresh_port(struct sa_client *c, bool force)
{
	uint64_t now = mad_timer_now(mad_loop_timers(c->loop));
	struct mad_port_attr a;
	bool changed = false;

	if (!force && now - c->port_read_ns < PORT_REREAD_NS)
		return;
	c->port_read_ns = now;
	if (mad_transport_port(c->t, &a, &changed))
		return;
	if (!changed)
		return;
	c->st.port_changes++;
	set_dst_from_port(c, &a);
	if (c->cache) {
		sa_path_cache_flush(c->cache);
		sa_service_cache_flush(c->scache);
		c->st.cache_flushes++;
	}
}

/*
 * With a cache, look at the port once a second even when every query is
 * a hit, so that an SM change flushes paths that may be stale.
 */
static void port_tick(struct mad_timer *t, void *arg)
{
	struct sa_client *c = arg;

	refresh_port(c, true);
	mad_timer_arm(mad_loop_timers(c->loop), t, PORT_REREAD_NS, port_tick, c);
}

/* ---- queries (loop side) ---- */

static void query_send(struct sa_query *q);

static void finish(struct sa_query *q, int status, uint16_t mad_status, const uint8_t *recs,
		   unsigned n, size_t rec_size)
{
	if (status)
		q->c->st.errors++;
	q->done(q, status, mad_status, recs, n, rec_size);
}

struct cpi_ctx {
	struct sa_query *q;
};

/* ClassPortInfo answer during a redirect: point the client at the new SA. */
static void on_redirect_cpi(void *arg, int status, const void *mad, size_t len,
			    const struct mad_addr *src)
{
	struct sa_query *q = arg;
	struct sa_client *c = q->c;
	const uint8_t *cpi;
	uint16_t lid;

	(void)src;
	if (status) {
		finish(q, status, 0, NULL, 0, 0);
		return;
	}
	if (sa_mad_check(mad, len) || len < SA_DATA_OFFSET + MAD_CPI_SIZE ||
	    mad_get(mad, mad_hdr_fields, MAD_HDR_STATUS)) {
		finish(q, -EPROTO, (uint16_t)mad_get(mad, mad_hdr_fields, MAD_HDR_STATUS), NULL, 0,
		       0);
		return;
	}
	cpi = (const uint8_t *)mad + SA_DATA_OFFSET;
	lid = (uint16_t)mad_get(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_LID);
	if (lid == 0) {
		/* No redirect after all (or the SA changed its mind): retry as is. */
		query_send(q);
		return;
	}
	memset(&c->dst, 0, sizeof(c->dst));
	c->dst.lid = lid;
	c->dst.sl = (uint8_t)mad_get(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_SL);
	c->dst.qpn = (uint32_t)mad_get(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_QP);
	c->dst.qkey = (uint32_t)mad_get(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_Q_KEY);
	c->dst.flow_label = (uint32_t)mad_get(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_FL);
	c->dst.traffic_class = (uint8_t)mad_get(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_TC);
	if (!c->dst.qpn)
		c->dst.qpn = 1;
	if (!c->dst.qkey)
		c->dst.qkey = MAD_QP1_QKEY;
	c->redirected = true;
	c->st.redirects++;
	query_send(q);
}

static void redirect(struct sa_query *q)
{
	struct sa_client *c = q->c;
	uint8_t mad[MAD_SIZE];
	int rc;

	q->redirects++;
	/* Ask the SM's SA (not a stale redirect target) where to go. */
	refresh_port(c, true);
	if (c->redirected) {
		struct mad_port_attr a = *mad_transport_port_cached(c->t);

		set_dst_from_port(c, &a);
	}
	sa_mad_init(mad, MAD_METHOD_GET, SA_ATTR_CLASS_PORT_INFO, 0, 0);
	rc = mad_request_send(c->agent, mad, MAD_SIZE, &c->dst, &c->opts, on_redirect_cpi, q, NULL);
	if (rc)
		finish(q, rc, 0, NULL, 0, 0);
}

static void on_response(void *arg, int status, const void *mad, size_t len,
			const struct mad_addr *src)
{
	struct sa_query *q = arg;
	const uint8_t *m = mad;
	size_t rec_size = 0;
	uint16_t st;
	int n;

	(void)src;
	if (status) {
		if (status == -ETIMEDOUT)
			refresh_port(q->c, true);
		finish(q, status, 0, NULL, 0, 0);
		return;
	}
	if (sa_mad_check(mad, len)) {
		q->c->st.mad.malformed++;
		finish(q, -EPROTO, 0, NULL, 0, 0);
		return;
	}
	st = (uint16_t)mad_get(m, mad_hdr_fields, MAD_HDR_STATUS);
	if ((st & MAD_STATUS_REDIRECT) && q->redirects < MAX_REDIRECTS) {
		redirect(q);
		return;
	}
	if (st & ~MAD_STATUS_REDIRECT) {
		finish(q, sa_status_to_errno(st), st, NULL, 0, 0);
		return;
	}
	n = sa_mad_record_count(m, len, &rec_size);
	if (n < 0) {
		finish(q, -EPROTO, st, NULL, 0, 0);
		return;
	}
	if (q->method != MAD_METHOD_GET_TABLE) {
		/*
		 * Get/Set/Delete answer one record in one MAD, the rest of the
		 * data area being padding; some SAs leave the offset 0.
		 */
		if ((n == 0 || rec_size < q->rec_len) && len >= SA_DATA_OFFSET + q->rec_len)
			rec_size = q->rec_len; /* also OpenSM's rounded-down offset */
		n = rec_size ? 1 : 0;
	}
	if (n > 0 && rec_size < q->rec_len) {
		finish(q, -EPROTO, st, NULL, 0, 0);
		return;
	}
	finish(q, 0, st, m + SA_DATA_OFFSET, (unsigned)n, rec_size);
}

static void query_send(struct sa_query *q)
{
	struct sa_client *c = q->c;
	uint8_t mad[MAD_SIZE];
	int rc;

	rc = sa_mad_init(mad, q->method, q->attr, 0, q->comp_mask);
	if (rc == 0) {
		memcpy(mad + SA_DATA_OFFSET, q->rec, q->rec_len);
		rc = mad_request_send(c->agent, mad, MAD_SIZE, &c->dst, &c->opts, on_response, q,
				      NULL);
	}
	if (rc)
		finish(q, rc, 0, NULL, 0, 0);
}

/* Loop side: start a query; done() is called exactly once, maybe now. */
static void query_start(struct sa_query *q)
{
	struct sa_client *c = q->c;

	c->st.queries++;
	refresh_port(c, false);
	if (!c->dst.lid) {
		finish(q, -ENETDOWN, 0, NULL, 0, 0);
		return;
	}
	query_send(q);
}

/* ---- from API threads: commands to the loop ---- */

static void query_init(struct sa_query *q, struct sa_client *c, uint8_t method, uint16_t attr,
		       uint64_t comp_mask, const void *rec, size_t rec_len, sa_query_done done)
{
	q->c = c;
	q->method = method;
	q->attr = attr;
	q->comp_mask = comp_mask;
	memcpy(q->rec, rec, rec_len);
	q->rec_len = rec_len;
	q->done = done;
}

struct sync_cmd {
	struct mad_loop_cmd cmd;
	struct sa_query q;
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
	int status;
	uint16_t mad_status;
	uint8_t *recs; /* malloc'd copy */
	unsigned n;
	size_t rec_size;
};

static void sync_done(struct sa_query *q, int status, uint16_t mad_status, const uint8_t *recs,
		      unsigned n, size_t rec_size)
{
	struct sync_cmd *s = (struct sync_cmd *)((char *)q - offsetof(struct sync_cmd, q));

	s->status = status;
	s->mad_status = mad_status;
	if (status == 0 && n) {
		s->recs = malloc(n * rec_size);
		if (s->recs) {
			memcpy(s->recs, recs, n * rec_size);
			s->n = n;
			s->rec_size = rec_size;
		} else {
			s->status = -ENOMEM;
		}
	}
	pthread_mutex_lock(&s->m);
	s->done = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->m);
}

static void sync_run(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	(void)l;
	query_start(&((struct sync_cmd *)cmd)->q);
}

/* Run a query and wait; the caller frees s->recs. */
static int query_sync(struct sa_client *c, struct sync_cmd *s, uint8_t method, uint16_t attr,
		      uint64_t comp_mask, const void *rec, size_t rec_len)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->cmd.run = sync_run;
	query_init(&s->q, c, method, attr, comp_mask, rec, rec_len, sync_done);
	if (mad_loop_started(c->loop) && mad_loop_owns(c->loop))
		return -EDEADLK; /* waiting here would stop the loop we wait for */
	pthread_mutex_init(&s->m, NULL);
	pthread_cond_init(&s->cv, NULL);
	rc = mad_loop_post(c->loop, &s->cmd);
	if (rc == 0) {
		if (!mad_loop_started(c->loop)) {
			/* No thread (tests, single-threaded tools): drive it here. */
			while (!s->done)
				mad_loop_run_once(c->loop, 100);
		} else {
			pthread_mutex_lock(&s->m);
			while (!s->done)
				pthread_cond_wait(&s->cv, &s->m);
			pthread_mutex_unlock(&s->m);
		}
		rc = s->status;
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->m);
	return rc;
}

/* ---- open / close ---- */

static void on_readable(struct mad_loop *l, int fd, void *arg)
{
	struct sa_client *c = arg;

	/* A port that is gone stays readable (hung up): stop watching it. */
	if (mad_transport_poll(c->t, 0) == -ENODEV)
		mad_loop_unwatch_fd(l, fd);
}

struct open_args {
	struct sa_client *c;
	const struct sa_client_params *p;
	int rc;
};

static void open_on_loop(void *arg)
{
	struct open_args *o = arg;
	struct sa_client *c = o->c;
	struct mad_transport_params tp = {0};
	struct mad_agent_desc d = {0};
	int rc;

	tp.ops = o->p->ops;
	tp.ops_ctx = o->p->ops_ctx;
	tp.ca = o->p->ca;
	tp.port = o->p->port;
	tp.gid = o->p->gid;
	tp.timers = mad_loop_timers(c->loop);
	if (o->p->transport) {
		c->t = o->p->transport;
	} else {
		rc = mad_transport_open(&c->t, &tp);
		if (rc)
			goto out;
		c->own_transport = true;
	}
	d.mgmt_class = MAD_CLASS_SUBN_ADM;
	d.class_version = MAD_CLASS_VERSION_SA;
	rc = mad_agent_register(c->t, &d, &c->agent);
	if (rc)
		goto err;
	if (c->own_transport && mad_transport_fd(c->t) >= 0) {
		rc = mad_loop_watch_fd(c->loop, mad_transport_fd(c->t), on_readable, c);
		if (rc)
			goto err;
	}
	set_dst_from_port(c, mad_transport_port_cached(c->t));
	c->port_read_ns = mad_timer_now(mad_loop_timers(c->loop));
	if (c->cache)
		mad_timer_arm(mad_loop_timers(c->loop), &c->port_timer, PORT_REREAD_NS, port_tick,
			      c);
out:
	o->rc = rc;
	return;
err:
	if (c->own_transport)
		mad_transport_close(c->t);
	else if (c->agent)
		mad_agent_unregister(c->agent);
	o->rc = rc;
}

int sa_client_open(struct sa_client **out, const struct sa_client_params *p)
{
	struct sa_client *c;
	struct open_args o;
	int rc;

	if (!out || !p)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->loop = p->loop ? p->loop : mad_loop_default();
	if (!c->loop) {
		free(c);
		return -ENOMEM;
	}
	c->opts.timeout_ms = p->timeout_ms ? p->timeout_ms : 1000;
	c->opts.retries = p->retries;
	if (p->cache_lifetime_ms) {
		rc = sa_path_cache_create(&c->cache, p->cache_entries ? p->cache_entries : 4096,
					  (uint64_t)p->cache_lifetime_ms * 1000000u, NULL, NULL);
		if (rc == 0)
			rc = sa_service_cache_create(
			    &c->scache, p->cache_entries ? p->cache_entries : 4096,
			    (uint64_t)p->cache_lifetime_ms * 1000000u, NULL, NULL);
		if (rc) {
			sa_path_cache_destroy(c->cache);
			free(c);
			return rc;
		}
	}
	o.c = c;
	o.p = p;
	o.rc = 0;
	rc = mad_loop_call(c->loop, open_on_loop, &o);
	if (rc == 0)
		rc = o.rc;
	if (rc) {
		sa_path_cache_destroy(c->cache);
		sa_service_cache_destroy(c->scache);
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

static void client_unref(struct sa_client *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	sa_path_cache_destroy(c->cache);
	sa_service_cache_destroy(c->scache);
	free(c);
}

/*
 * A posted query's turn on the loop: started, or ended -ECANCELED through
 * its done() when its client closed meanwhile.  Drops the command's
 * reference (client_post).
 */
static void query_run_posted(struct sa_query *q)
{
	struct sa_client *c = q->c;

	if (c->closed)
		q->done(q, -ECANCELED, 0, NULL, 0, 0);
	else
		query_start(q);
	client_unref(c);
}

/* Post a command of `c` (its run drops the reference: query_run_posted, async_run). */
static int client_post(struct sa_client *c, struct mad_loop_cmd *cmd)
{
	int rc;

	__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	rc = mad_loop_post(c->loop, cmd);
	if (rc)
		__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	return rc;
}

static void close_on_loop(void *arg)
{
	struct sa_client *c = arg;

	c->closed = true; /* commands still queued answer -ECANCELED */

	mad_timer_cancel(mad_loop_timers(c->loop), &c->port_timer);
	if (!c->own_transport) {
		mad_agent_unregister(c->agent); /* in-flight queries end with -ECANCELED */
		if (c->notice_agent)
			mad_agent_unregister(c->notice_agent);
		return;
	}
	if (mad_transport_fd(c->t) >= 0)
		mad_loop_unwatch_fd(c->loop, mad_transport_fd(c->t));
	mad_transport_close(c->t); /* in-flight queries end with -ECANCELED */
}

void sa_client_close(struct sa_client *c)
{
	if (!c)
		return;
	mad_loop_call(c->loop, close_on_loop, c);
	client_unref(c);
}

struct info_args {
	struct sa_client *c;
	struct mad_port_attr port;
	struct sa_client_stats st;
};

static void info_on_loop(void *arg)
{
	struct info_args *a = arg;

	a->port = *mad_transport_port_cached(a->c->t);
	a->st = a->c->st;
	mad_transport_counters(a->c->t, &a->st.mad);
	a->st.mad.malformed += a->c->st.mad.malformed;
}

int sa_client_port(struct sa_client *c, struct mad_port_attr *out)
{
	struct info_args a = {.c = c};
	int rc;

	if (!c || !out)
		return -EINVAL;
	rc = mad_loop_call(c->loop, info_on_loop, &a);
	if (rc == 0)
		*out = a.port;
	return rc;
}

int sa_client_stats(struct sa_client *c, struct sa_client_stats *out)
{
	struct info_args a = {.c = c};
	int rc;

	if (!c || !out)
		return -EINVAL;
	rc = mad_loop_call(c->loop, info_on_loop, &a);
	if (rc)
		return rc;
	*out = a.st;
	if (c->cache) {
		struct sa_record_cache_stats cs;

		sa_path_cache_stats(c->cache, &cs);
		out->cache_hits = cs.hits;
		out->cache_misses = cs.misses;
	}
	if (c->scache) {
		struct sa_record_cache_stats ss;

		sa_service_cache_stats(c->scache, &ss);
		out->service_cache_hits = ss.hits;
	}
	return 0;
}

void sa_client_flush_cache(struct sa_client *c)
{
	if (c && c->cache)
		sa_path_cache_flush(c->cache);
	if (c)
		sa_service_cache_flush(c->scache);
}

/* ---- PathRecord ---- */

static int path_prepare(const struct sa_path_query *q, uint8_t *rec)
{
	if (!q)
		return -EINVAL;
	return sa_path_encode(&q->rec, rec);
}

static uint8_t path_method(const struct sa_path_query *q)
{
	return q->table ? MAD_METHOD_GET_TABLE : MAD_METHOD_GET;
}

int sa_path_query(struct sa_client *c, const struct sa_path_query *q, struct sa_path *out,
		  unsigned max, unsigned *n, uint16_t *mad_status)
{
	uint8_t rec[SA_PR_SIZE];
	struct sa_path_key key;
	struct sync_cmd s;
	struct sa_path *all = NULL;
	uint64_t gen = 0;
	int rc;

	if (!c || !q || !n || (max && !out))
		return -EINVAL;
	if (mad_status)
		*mad_status = 0;
	*n = 0;
	rc = path_prepare(q, rec);
	if (rc)
		return rc;
	if (c->cache && !q->no_cache) {
		sa_path_key_make(&key, q);
		if (sa_path_cache_lookup(c->cache, &key, out, max, n) == 0)
			return 0;
		gen = sa_path_cache_gen(c->cache);
	}
	rc = query_sync(c, &s, path_method(q), SA_ATTR_PATH_RECORD, q->comp_mask, rec, SA_PR_SIZE);
	if (mad_status)
		*mad_status = s.mad_status;
	if (rc == 0 && s.n) {
		all = calloc(s.n, sizeof(*all));
		if (!all) {
			free(s.recs);
			return -ENOMEM;
		}
		for (unsigned i = 0; i < s.n; i++)
			sa_path_decode(s.recs + i * s.rec_size, &all[i]);
		*n = s.n < max ? s.n : max;
		memcpy(out, all, sizeof(*out) * *n);
	}
	if (rc == 0 && c->cache && !q->no_cache)
		sa_path_cache_insert_gen(c->cache, &key, all, s.n, gen);
	free(all);
	free(s.recs);
	return rc;
}

/*
 * An asynchronous ask for records, of PathRecords or (svc) ServiceRecords
 * (a resolution query).  Asks with the same key while one is in flight
 * wait on it (waiters) instead of sending their own: one SA query however
 * many ask at once.  Answers with records are cached (`cache`), unless a
 * flush or drop came since the query was sent.
 */
struct joint_ask {
	struct mad_loop_cmd cmd;
	struct sa_query q;
	union {
		struct sa_path_key path;
		struct sa_service_key svc;
	} key; /* zeroed past the kind's key: compared whole */
	bool svc, cache, keyed;
	uint64_t gen; /* the cache's when sent: a flush or drop since makes the answer stale */
	struct joint_ask *next;	   /* c->inflight */
	struct joint_ask *waiters; /* joined this one (next_waiter) */
	struct joint_ask *next_waiter;
	union {
		sa_path_cb path;
		sa_service_cb svc;
	} cb;
	void *arg;
};

static void joint_call(struct joint_ask *a, int status, const void *recs, unsigned n)
{
	if (a->svc)
		a->cb.svc(a->arg, status, recs, n);
	else
		a->cb.path(a->arg, status, recs, n);
}

static uint64_t joint_gen(struct joint_ask *a)
{
	return a->svc ? sa_service_cache_gen(a->q.c->scache) : sa_path_cache_gen(a->q.c->cache);
}

static void joint_keep(struct joint_ask *a, const void *recs, unsigned n)
{
	if (a->svc)
		sa_service_cache_insert_gen(a->q.c->scache, &a->key.svc, recs, n, a->gen);
	else
		sa_path_cache_insert_gen(a->q.c->cache, &a->key.path, recs, n, a->gen);
}

/*
 * Answer `a` if its cache holds its key now (answered while `a` waited
 * for the loop): true if it did.  A path hit hands up to ASYNC_HIT_MAX.
 */
static bool joint_late_hit(struct joint_ask *a)
{
	struct sa_client *c = a->q.c;
	struct sa_path paths[ASYNC_HIT_MAX];
	struct sa_service *recs = NULL;
	unsigned n;

	if (a->svc ? sa_service_cache_peek(c->scache, &a->key.svc, &recs, &n)
		   : sa_path_cache_peek(c->cache, &a->key.path, paths, ASYNC_HIT_MAX, &n))
		return false;
	if (a->svc)
		c->st.service_hits_late++;
	else
		c->st.cache_hits_late++;
	joint_call(a, 0, a->svc ? (const void *)recs : paths, n);
	free(recs);
	return true;
}

static void unlink_inflight(struct joint_ask *a)
{
	for (struct joint_ask **pp = &a->q.c->inflight; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			return;
		}
}

/* Run a's callback and its waiters', then free them all. */
static void joint_answer(struct joint_ask *a, int status, const void *recs, unsigned n)
{
	a->next_waiter = a->waiters;
	for (struct joint_ask *w = a, *next; w; w = next) {
		next = w->next_waiter;
		joint_call(w, status, recs, n);
		free(w);
	}
}

static void joint_done(struct sa_query *q, int status, uint16_t mad_status, const uint8_t *recs,
		       unsigned n, size_t rec_size)
{
	struct joint_ask *a = (struct joint_ask *)((char *)q - offsetof(struct joint_ask, q));
	size_t size = a->svc ? sizeof(struct sa_service) : sizeof(struct sa_path);
	union {
		struct sa_path path;
		struct sa_service svc;
	} one;
	uint8_t *all = (uint8_t *)&one;

	(void)mad_status;
	if (a->keyed)
		unlink_inflight(a);
	/* No record is not cached: a peer may register one a moment later. */
	if (status || n == 0) {
		joint_answer(a, status, NULL, 0);
		return;
	}
	if (n > 1) {
		all = calloc(n, size);
		if (!all) {
			joint_answer(a, -ENOMEM, NULL, 0);
			return;
		}
	}
	for (unsigned i = 0; i < n; i++)
		if (a->svc)
			sa_service_decode(recs + i * rec_size, (struct sa_service *)all + i);
		else
			sa_path_decode(recs + i * rec_size, (struct sa_path *)all + i);
	if (a->cache)
		joint_keep(a, all, n);
	joint_answer(a, 0, all, n);
	if (all != (uint8_t *)&one)
		free(all);
}

static void joint_run(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	struct joint_ask *a = (struct joint_ask *)cmd;
	struct sa_client *c = a->q.c;

	(void)l;
	if (c->closed) {
		joint_answer(a, -ECANCELED, NULL, 0);
		client_unref(c);
		return;
	}
	client_unref(c); /* the owner's reference holds it while this runs */
	if (a->keyed) {
		/* Answered while this waited for the loop: no second query. */
		if (a->cache && joint_late_hit(a)) {
			free(a);
			return;
		}
		for (struct joint_ask *f = c->inflight; f; f = f->next)
			if (f->svc == a->svc && !memcmp(&f->key, &a->key, sizeof(a->key))) {
				a->next_waiter = f->waiters;
				f->waiters = a;
				if (a->svc)
					c->st.service_coalesced++;
				else
					c->st.path_coalesced++;
				return;
			}
		if (a->cache)
			a->gen = joint_gen(a);
		a->next = c->inflight;
		c->inflight = a;
	}
	if (a->svc)
		c->st.service_queries++;
	else
		c->st.path_queries++;
	query_start(&a->q);
}

/* Hand `a` (key, query and callback set) to the loop: 0, or an error and `a` freed. */
static int joint_post(struct sa_client *c, struct joint_ask *a)
{
	int rc;

	a->cmd.run = joint_run;
	a->q.done = joint_done;
	rc = client_post(c, &a->cmd);
	if (rc)
		free(a);
	return rc;
}

/* Without the cache (no_cache), an ask neither joins nor is joined. */
int sa_path_query_async(struct sa_client *c, const struct sa_path_query *q, sa_path_cb cb,
			void *arg)
{
	struct joint_ask *a;
	int rc;

	if (!c || !q || !cb)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	rc = path_prepare(q, a->q.rec);
	if (rc) {
		free(a);
		return rc;
	}
	if (!q->no_cache) {
		sa_path_key_make(&a->key.path, q);
		a->keyed = true;
	}
	if (c->cache && !q->no_cache) {
		struct sa_path hit[ASYNC_HIT_MAX];
		unsigned n;

		if (sa_path_cache_lookup(c->cache, &a->key.path, hit, ASYNC_HIT_MAX, &n) == 0) {
			free(a);
			cb(arg, 0, hit, n);
			return 0;
		}
		a->cache = true;
	}
	a->q.c = c;
	a->q.method = path_method(q);
	a->q.attr = SA_ATTR_PATH_RECORD;
	a->q.comp_mask = q->comp_mask;
	a->q.rec_len = SA_PR_SIZE;
	a->cb.path = cb;
	a->arg = arg;
	return joint_post(c, a);
}

unsigned sa_client_path_gid_gone(struct sa_client *c, const uint8_t gid[16])
{
	unsigned n;

	if (!c || !c->cache || !gid)
		return 0;
	n = sa_path_cache_drop_gid(c->cache, gid);
	__atomic_add_fetch(&c->st.cache_dropped, n, __ATOMIC_RELAXED);
	return n;
}

/* ---- MCMemberRecord ---- */

static int mcmember_one(struct sa_client *c, uint8_t method, const struct sa_mcmember *m,
			uint64_t comp_mask, struct sa_mcmember *out)
{
	uint8_t rec[SA_MCMR_SIZE];
	struct sync_cmd s;
	int rc;

	if (!c || !m)
		return -EINVAL;
	rc = sa_mcmember_encode(m, rec);
	if (rc)
		return rc;
	rc = query_sync(c, &s, method, SA_ATTR_MC_MEMBER_RECORD, comp_mask, rec, sizeof(rec));
	if (rc == 0 && out) {
		if (s.n)
			sa_mcmember_decode(s.recs, out);
		else
			memset(out, 0, sizeof(*out));
	}
	free(s.recs);
	return rc;
}

int sa_mcmember_join(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask,
		     struct sa_mcmember *out)
{
	return mcmember_one(c, MAD_METHOD_SET, m, comp_mask, out);
}

int sa_mcmember_leave(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask,
		      struct sa_mcmember *out)
{
	return mcmember_one(c, MAD_METHOD_DELETE, m, comp_mask, out);
}

/* A leave sent on the caller's thread and not waited for: freed when done. */
static void leave_now_done(struct sa_query *q, int status, uint16_t mad_status, const uint8_t *recs,
			   unsigned n, size_t rec_size)
{
	(void)status;
	(void)mad_status;
	(void)recs;
	(void)n;
	(void)rec_size;
	free(q);
}

static void leave_now_start(void *arg)
{
	query_start(arg);
}

int sa_mcmember_leave_now(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask)
{
	uint8_t rec[SA_MCMR_SIZE];
	struct sa_query *q;
	int rc;

	if (!c || !m)
		return -EINVAL;
	rc = sa_mcmember_encode(m, rec);
	if (rc)
		return rc;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	query_init(q, c, MAD_METHOD_DELETE, SA_ATTR_MC_MEMBER_RECORD, comp_mask, rec, sizeof(rec),
		   leave_now_done);
	/* On this thread, holding the loop: the Delete is sent before this returns. */
	rc = mad_loop_call_here(c->loop, leave_now_start, q);
	if (rc)
		free(q);
	return rc;
}

/*
 * A GetTable of one attribute: `tmpl` encoded as the template record, the
 * answer decoded into a calloc'd array the caller frees.
 */
struct table_kind {
	uint16_t attr;
	size_t rec_len; /* on the wire */
	size_t size;	/* one decoded element */
	int (*encode)(const void *tmpl, void *rec);
	void (*decode)(const void *rec, void *out);
};

static int table_query(struct sa_client *c, const struct table_kind *k, const void *tmpl,
		       uint64_t comp_mask, void **out, unsigned *n)
{
	uint8_t rec[MAX_REC_LEN];
	struct sync_cmd s;
	uint8_t *all;
	int rc;

	*out = NULL;
	if (!c || !tmpl || !n)
		return -EINVAL;
	*n = 0;
	rc = k->encode(tmpl, rec);
	if (rc)
		return rc;
	rc = query_sync(c, &s, MAD_METHOD_GET_TABLE, k->attr, comp_mask, rec, k->rec_len);
	if (rc == 0 && s.n) {
		all = calloc(s.n, k->size);
		if (!all)
			rc = -ENOMEM;
		for (unsigned i = 0; all && i < s.n; i++)
			k->decode(s.recs + i * s.rec_size, all + i * k->size);
		if (all) {
			*out = all;
			*n = s.n;
		}
	}
	free(s.recs);
	return rc;
}

static int mcmember_encode(const void *tmpl, void *rec)
{
	return sa_mcmember_encode(tmpl, rec);
}

static void mcmember_decode(const void *rec, void *out)
{
	sa_mcmember_decode(rec, out);
}

static const struct table_kind mcmember_table = {
    .attr = SA_ATTR_MC_MEMBER_RECORD,
    .rec_len = SA_MCMR_SIZE,
    .size = sizeof(struct sa_mcmember),
    .encode = mcmember_encode,
    .decode = mcmember_decode,
};

int sa_mcmember_query(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask,
		      struct sa_mcmember **out, unsigned *n)
{
	void *all;
	int rc;

	if (!out)
		return -EINVAL;
	rc = table_query(c, &mcmember_table, m, comp_mask, &all, n);
	*out = all;
	return rc;
}

/* ---- ServiceRecord ---- */

/*
 * A Set or Delete of `sr` went to the SA (answered or not): cached
 * answers it may change go, and one in flight since is not cached.
 */
unsigned sa_client_service_changed(struct sa_client *c, const struct sa_service *sr)
{
	unsigned n;

	if (!c || !sr)
		return 0;
	n = sa_service_cache_drop_record(c->scache, sr);
	__atomic_add_fetch(&c->st.service_dropped, n, __ATOMIC_RELAXED);
	return n;
}

static int service_one(struct sa_client *c, uint8_t method, const struct sa_service *sr,
		       uint64_t comp_mask)
{
	uint8_t rec[SA_SR_SIZE];
	struct sync_cmd s;
	int rc;

	if (!c || !sr)
		return -EINVAL;
	rc = sa_service_encode(sr, rec);
	if (rc)
		return rc;
	rc = query_sync(c, &s, method, SA_ATTR_SERVICE_RECORD, comp_mask, rec, sizeof(rec));
	free(s.recs);
	sa_client_service_changed(c, sr);
	return rc;
}

int sa_service_register(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask)
{
	return service_one(c, MAD_METHOD_SET, s, comp_mask);
}

int sa_service_delete(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask)
{
	return service_one(c, MAD_METHOD_DELETE, s, comp_mask);
}

struct service_cmd {
	struct mad_loop_cmd cmd;
	struct sa_query q;
	sa_done_cb cb;
	void *arg;
};

static void service_async_done(struct sa_query *q, int status, uint16_t mad_status,
			       const uint8_t *recs, unsigned n, size_t rec_size)
{
	struct service_cmd *a = (struct service_cmd *)((char *)q - offsetof(struct service_cmd, q));
	struct sa_service sr;

	(void)mad_status;
	(void)recs;
	(void)n;
	(void)rec_size;
	if (status != -ECANCELED) {
		sa_service_decode(q->rec, &sr);
		sa_client_service_changed(q->c, &sr);
	}
	a->cb(a->arg, status);
	free(a);
}

static void service_async_run(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	(void)l;
	query_run_posted(&((struct service_cmd *)cmd)->q);
}

static int service_async(struct sa_client *c, uint8_t method, const struct sa_service *sr,
			 uint64_t comp_mask, sa_done_cb cb, void *arg)
{
	uint8_t rec[SA_SR_SIZE];
	struct service_cmd *a;
	int rc;

	if (!c || !sr || !cb)
		return -EINVAL;
	rc = sa_service_encode(sr, rec);
	if (rc)
		return rc;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->cmd.run = service_async_run;
	query_init(&a->q, c, method, SA_ATTR_SERVICE_RECORD, comp_mask, rec, sizeof(rec),
		   service_async_done);
	a->cb = cb;
	a->arg = arg;
	rc = client_post(c, &a->cmd);
	if (rc)
		free(a);
	return rc;
}

int sa_service_register_async(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask,
			      sa_done_cb cb, void *arg)
{
	return service_async(c, MAD_METHOD_SET, s, comp_mask, cb, arg);
}

int sa_service_delete_async(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask,
			    sa_done_cb cb, void *arg)
{
	return service_async(c, MAD_METHOD_DELETE, s, comp_mask, cb, arg);
}

static int service_encode(const void *tmpl, void *rec)
{
	return sa_service_encode(tmpl, rec);
}

static void service_decode(const void *rec, void *out)
{
	sa_service_decode(rec, out);
}

static const struct table_kind service_table = {
    .attr = SA_ATTR_SERVICE_RECORD,
    .rec_len = SA_SR_SIZE,
    .size = sizeof(struct sa_service),
    .encode = service_encode,
    .decode = service_decode,
};

int sa_service_query(struct sa_client *c, const struct sa_service *sr, uint64_t comp_mask,
		     struct sa_service **out, unsigned *n)
{
	void *all;
	int rc;

	if (!out)
		return -EINVAL;
	rc = table_query(c, &service_table, sr, comp_mask, &all, n);
	*out = all;
	return rc;
}

/*
 * An asynchronous ServiceRecord GetTable (a resolution query): its key is
 * the template with only the masked fields, what the SA sees.
 */
int sa_service_query_async(struct sa_client *c, const struct sa_service *sr, uint64_t comp_mask,
			   sa_service_cb cb, void *arg)
{
	struct joint_ask *a;
	struct sa_service *hit;
	unsigned n;
	int rc;

	if (!c || !sr || !cb)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	rc = sa_service_key_make(&a->key.svc, sr, comp_mask);
	if (rc) {
		free(a);
		return rc;
	}
	if (c->scache && sa_service_cache_lookup(c->scache, &a->key.svc, &hit, &n) == 0) {
		free(a);
		cb(arg, 0, hit, n);
		free(hit);
		return 0;
	}
	a->svc = true;
	a->keyed = true;
	a->cache = c->scache != NULL;
	query_init(&a->q, c, MAD_METHOD_GET_TABLE, SA_ATTR_SERVICE_RECORD, comp_mask, a->key.svc.b,
		   SA_SR_SIZE, joint_done);
	a->cb.svc = cb;
	a->arg = arg;
	return joint_post(c, a);
}

unsigned sa_client_service_gid_gone(struct sa_client *c, const uint8_t gid[16])
{
	unsigned n;

	if (!c || !gid)
		return 0;
	n = sa_service_cache_drop_gid(c->scache, gid);
	__atomic_add_fetch(&c->st.service_dropped, n, __ATOMIC_RELAXED);
	return n;
}

/* ---- ClassPortInfo ---- */

int sa_class_port_info(struct sa_client *c, uint8_t *cpi, size_t len)
{
	struct sync_cmd s;
	uint8_t none[MAD_CPI_SIZE] = {0};
	int rc;

	if (!c || !cpi || len < MAD_CPI_SIZE)
		return -EINVAL;
	/* A Get carries an empty record; its length tells the answer's size. */
	rc = query_sync(c, &s, MAD_METHOD_GET, SA_ATTR_CLASS_PORT_INFO, 0, none, sizeof(none));
	if (rc == 0) {
		if (s.n && s.rec_size >= MAD_CPI_SIZE)
			memcpy(cpi, s.recs, MAD_CPI_SIZE);
		else
			rc = -EPROTO;
	}
	free(s.recs);
	return rc;
}

/* ---- Notices: InformInfo subscriptions and Reports ---- */

static bool report_seen(struct sa_client *c, uint64_t tid, uint16_t lid)
{
	for (unsigned i = 0; i < c->seen_n; i++)
		if (c->seen[i].tid == tid && c->seen[i].lid == lid)
			return true;
	c->seen[c->seen_next].tid = tid;
	c->seen[c->seen_next].lid = lid;
	c->seen_next = (c->seen_next + 1) % SEEN_REPORTS;
	if (c->seen_n < SEEN_REPORTS)
		c->seen_n++;
	return false;
}

/*
 * A Report (loop side).  Answered first, every time it comes: a repeat
 * means the SA missed our ReportResp, and it resends until it sees one.
 * Delivered once per (TID, SA LID).
 */
static void on_report(struct mad_agent *agent, const void *mad, size_t len,
		      const struct mad_addr *src, void *arg)
{
	struct sa_client *c = arg;
	uint8_t resp[MAD_SIZE];
	struct sa_notice n;
	struct mad_addr to = *src;
	uint64_t tid;

	if (sa_report_parse(mad, len, &n)) {
		c->st.report_malformed++;
		return;
	}
	sa_report_resp_build(mad, len, resp);
	if (!to.qkey)
		to.qkey = MAD_QP1_QKEY;
	if (mad_send(agent, resp, MAD_SIZE, &to) == 0)
		c->st.report_resps++;
	tid = mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
	if (report_seen(c, tid, src->lid)) {
		c->st.report_dups++;
		return;
	}
	c->st.reports++;
	if (c->notice_fn)
		c->notice_fn(c->notice_arg, &n);
}

struct handler_args {
	struct sa_client *c;
	sa_notice_fn fn;
	void *arg;
	int rc;
};

static void handler_on_loop(void *arg)
{
	struct handler_args *h = arg;
	struct sa_client *c = h->c;

	h->rc = 0;
	if (!c->notice_agent) {
		struct mad_agent_desc d = {0};

		/*
		 * An agent of its own, so that the queries' agent works even
		 * where the port's Report method is taken (one agent a port
		 * may receive a class's unsolicited method).
		 */
		d.mgmt_class = MAD_CLASS_SUBN_ADM;
		d.class_version = MAD_CLASS_VERSION_SA;
		mad_method_mask_set(d.method_mask, MAD_METHOD_REPORT);
		d.unsolicited = on_report;
		d.arg = c;
		h->rc = mad_agent_register(c->t, &d, &c->notice_agent);
		if (h->rc) {
			c->notice_agent = NULL;
			return;
		}
	}
	c->notice_fn = h->fn;
	c->notice_arg = h->arg;
}

int sa_notice_handler(struct sa_client *c, sa_notice_fn fn, void *arg)
{
	struct handler_args h = {.c = c, .fn = fn, .arg = arg};
	int rc;

	if (!c)
		return -EINVAL;
	rc = mad_loop_call(c->loop, handler_on_loop, &h);
	return rc ? rc : h.rc;
}

static int trap_range(uint16_t first, uint16_t last, uint16_t *end)
{
	if (first == SA_II_TRAP_ALL) {
		*end = first;
		return 0;
	}
	if (last < first || last == SA_II_TRAP_ALL || last - first >= MAX_TRAP_SETS)
		return -EINVAL;
	*end = last;
	return 0;
}

static void inform_rec(uint8_t *rec, uint16_t trap, bool on)
{
	struct sa_inform ii;

	sa_inform_generic(&ii, trap, on);
	sa_inform_encode(&ii, rec);
}

int sa_notice_subscribe(struct sa_client *c, uint16_t first, uint16_t last, bool on)
{
	uint8_t rec[SA_II_SIZE];
	uint16_t end;
	int rc;

	if (!c || trap_range(first, last, &end))
		return -EINVAL;
	for (unsigned t = first; t <= end; t++) {
		struct sync_cmd s;

		inform_rec(rec, (uint16_t)t, on);
		rc = query_sync(c, &s, MAD_METHOD_SET, SA_ATTR_INFORM_INFO, 0, rec, sizeof(rec));
		free(s.recs);
		if (rc)
			return rc;
	}
	return 0;
}

struct sub_cmd {
	struct mad_loop_cmd cmd;
	struct sa_query q;
	uint16_t next, end;
	bool on;
	sa_done_cb cb;
	void *arg;
};

static void sub_done(struct sa_query *q, int status, uint16_t mad_status, const uint8_t *recs,
		     unsigned n, size_t rec_size)
{
	struct sub_cmd *a = (struct sub_cmd *)((char *)q - offsetof(struct sub_cmd, q));

	(void)mad_status;
	(void)recs;
	(void)n;
	(void)rec_size;
	if (status == 0 && a->next != SA_II_TRAP_ALL && a->next < a->end) {
		a->next++;
		inform_rec(a->q.rec, a->next, a->on);
		a->q.redirects = 0;
		query_start(&a->q);
		return;
	}
	a->cb(a->arg, status);
	free(a);
}

static void sub_run(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	(void)l;
	query_run_posted(&((struct sub_cmd *)cmd)->q);
}

int sa_notice_subscribe_async(struct sa_client *c, uint16_t first, uint16_t last, bool on,
			      sa_done_cb cb, void *arg)
{
	struct sub_cmd *a;
	uint16_t end;
	int rc;

	if (!c || !cb || trap_range(first, last, &end))
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->cmd.run = sub_run;
	a->next = first;
	a->end = end;
	a->on = on;
	a->cb = cb;
	a->arg = arg;
	a->q.c = c;
	a->q.method = MAD_METHOD_SET;
	a->q.attr = SA_ATTR_INFORM_INFO;
	a->q.rec_len = SA_II_SIZE;
	a->q.done = sub_done;
	inform_rec(a->q.rec, first, on);
	rc = client_post(c, &a->cmd);
	if (rc)
		free(a);
	return rc;
}
