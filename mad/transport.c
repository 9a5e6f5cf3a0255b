/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* MAD transport over a mad_umad_ops port (see transport.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mad/mad_wire.h"
#include "mad/rmpp.h"
#include "mad/tid.h"
#include "mad/trace.h"
#include "mad/transport.h"

#define REQ_BUCKETS 4096   /* power of two; 1,000+ requests in flight */
#define FINISHED_RING 1024 /* recent TIDs, to tell late from duplicate */
#define RECV_CAP 65536	   /* bigger than any MAD we accept */
#define PORT_STATE_ACTIVE 4

struct mad_agent {
	struct mad_transport *t;
	struct mad_agent *next;
	int id;
	struct mad_agent_desc d;
};

struct mad_request {
	struct mad_request *hnext;
	struct mad_transport *t;
	struct mad_agent *agent;
	uint64_t tid;
	uint8_t mgmt_class;
	size_t len;
	uint8_t mad[MAD_SIZE];
	struct mad_addr dst;
	unsigned timeout_ms;
	unsigned retries_left;
	struct mad_timer timer;
	mad_response_fn cb;
	void *arg;
	struct mad_rmpp_rx *rmpp;
};

/* How a request ended, remembered briefly for responses that come after. */
enum finished_kind { FIN_ANSWERED = 1, FIN_GAVE_UP = 2 };

struct finished {
	uint32_t tid_low;
	uint8_t kind;
};

struct mad_transport {
	const struct mad_umad_ops *ops;
	void *ctx;
	int portid;
	int fd;
	struct mad_port_attr port;
	struct mad_timer_heap *timers;
	struct mad_agent *agents;
	struct mad_request *buckets[REQ_BUCKETS];
	/* Bit i set: buckets[i] is not empty.  Failing the requests walks
	 * these: a close costs what is in flight, not 4,096 buckets. */
	uint64_t busy[REQ_BUCKETS / 64];
	size_t pending;
	struct finished fin[FINISHED_RING];
	unsigned fin_next;
	unsigned fin_used; /* fin[fin_used..] never written yet */
	struct mad_transport_counters c;
	uint8_t *rbuf;
};

/* ---- port selection ---- */

static int pick_port(struct mad_transport *t, const struct mad_transport_params *p)
{
	char cas[MAD_MAX_CAS][MAD_CA_NAME_MAX];
	struct mad_port_attr a, fallback;
	bool have_fallback = false;
	int n;

	if (p->ca && p->port > 0 && !p->gid)
		return t->ops->query_port(t->ctx, p->ca, p->port, &t->port);
	if (p->ca && !p->gid) {
		/* libibumad picks the CA's first active port for port 0. */
		return t->ops->query_port(t->ctx, p->ca, 0, &t->port);
	}
	n = t->ops->list_cas(t->ctx, cas, MAD_MAX_CAS);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		struct mad_port_attr ca_attr;
		unsigned nports;

		if (p->ca && strcmp(p->ca, cas[i]))
			continue;
		if (t->ops->query_port(t->ctx, cas[i], 0, &ca_attr))
			continue;
		/* A switch has only its management port, number 0. */
		nports = ca_attr.numports;
		for (unsigned port = nports ? 1 : 0; port <= nports; port++) {
			if (p->port > 0 && (int)port != p->port)
				continue;
			if (port == 0)
				a = ca_attr;
			else if (t->ops->query_port(t->ctx, cas[i], (int)port, &a))
				continue;
			if (p->gid) {
				if (!memcmp(a.gid, p->gid, 16)) {
					t->port = a;
					return 0;
				}
				continue;
			}
			if (a.state == PORT_STATE_ACTIVE) {
				t->port = a;
				return 0;
			}
			if (!have_fallback) {
				fallback = a;
				have_fallback = true;
			}
		}
	}
	if (p->gid || !have_fallback)
		return -ENODEV;
	t->port = fallback;
	return 0;
}

int mad_transport_open(struct mad_transport **out, const struct mad_transport_params *p)
{
	struct mad_transport *t;
	int rc;

	if (!out || !p || !p->timers || p->port < 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->rbuf = malloc(RECV_CAP);
	if (!t->rbuf) {
		free(t);
		return -ENOMEM;
	}
	t->ops = p->ops ? p->ops : &mad_umad_real_ops;
	t->ctx = p->ops_ctx;
	t->timers = p->timers;
	t->fd = -1;
	rc = pick_port(t, p);
	if (rc)
		goto err;
	rc = t->ops->open_port(t->ctx, t->port.ca_name, t->port.portnum);
	if (rc < 0)
		goto err;
	t->portid = rc;
	t->fd = t->ops->get_fd(t->ctx, t->portid);
	mad_trace_env_init();
	*out = t;
	return 0;
err:
	free(t->rbuf);
	free(t);
	return rc < 0 ? rc : -ENODEV;
}

/* ---- request table ---- */

static struct mad_request **bucket(struct mad_transport *t, uint32_t tid_low)
{
	/* TIDs are sequential: the low bits spread them evenly already. */
	return &t->buckets[tid_low & (REQ_BUCKETS - 1)];
}

static void bucket_mark(struct mad_transport *t, uint32_t tid_low)
{
	unsigned i = tid_low & (REQ_BUCKETS - 1);

	if (t->buckets[i])
		t->busy[i / 64] |= 1ull << (i % 64);
	else
		t->busy[i / 64] &= ~(1ull << (i % 64));
}

/* The first non-empty bucket from `from` on, or REQ_BUCKETS. */
static unsigned bucket_next_busy(const struct mad_transport *t, unsigned from)
{
	for (unsigned w = from / 64; t->pending && w < REQ_BUCKETS / 64; w++) {
		uint64_t bits = t->busy[w];

		if (w == from / 64)
			bits &= ~0ull << (from % 64);
		if (bits)
			return w * 64 + (unsigned)__builtin_ctzll(bits);
	}
	return REQ_BUCKETS;
}

static struct mad_request *req_find(struct mad_transport *t, uint32_t tid_low, uint8_t mgmt_class)
{
	for (struct mad_request *r = *bucket(t, tid_low); r; r = r->hnext)
		if (mad_tid_low(r->tid) == tid_low && r->mgmt_class == mgmt_class)
			return r;
	return NULL;
}

static void req_unlink(struct mad_request *r)
{
	struct mad_request **pp = bucket(r->t, mad_tid_low(r->tid));

	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == r) {
			*pp = r->hnext;
			r->t->pending--;
			bucket_mark(r->t, mad_tid_low(r->tid));
			return;
		}
}

static void remember(struct mad_transport *t, uint32_t tid_low, enum finished_kind kind)
{
	t->fin[t->fin_next].tid_low = tid_low;
	t->fin[t->fin_next].kind = (uint8_t)kind;
	t->fin_next = (t->fin_next + 1) % FINISHED_RING;
	if (t->fin_used < FINISHED_RING)
		t->fin_used++;
}

static enum finished_kind recall(const struct mad_transport *t, uint32_t tid_low)
{
	for (unsigned i = 0; i < t->fin_used; i++)
		if (t->fin[i].kind && t->fin[i].tid_low == tid_low)
			return (enum finished_kind)t->fin[i].kind;
	return 0;
}

static void req_free(struct mad_request *r)
{
	if (r->rmpp) {
		mad_rmpp_rx_destroy(r->rmpp);
		free(r->rmpp);
	}
	free(r);
}

/* Take the request out, then call back: the callback may send anew. */
static void req_complete(struct mad_request *r, int status, const void *mad, size_t len,
			 const struct mad_addr *src)
{
	struct mad_transport *t = r->t;

	req_unlink(r);
	mad_timer_cancel(t->timers, &r->timer);
	remember(t, mad_tid_low(r->tid), status == 0 ? FIN_ANSWERED : FIN_GAVE_UP);
	if (status == 0)
		t->c.responses++;
	r->cb(r->arg, status, mad, len, src);
	req_free(r);
}

/* ---- sending ---- */

/*
 * The kernel keeps a request `kernel_ms` for its response (see
 * mad_umad_ops.send); a little less than our own timer, so that the
 * resend with the same TID never meets the previous send still pending
 * (ib_umad refuses it as a duplicate).
 */
static unsigned kernel_timeout(unsigned timeout_ms)
{
	unsigned margin = timeout_ms / 16;

	if (margin > 50)
		margin = 50;
	return timeout_ms > margin ? timeout_ms - margin : 1;
}

static int raw_send(struct mad_transport *t, struct mad_agent *a, const void *mad, size_t len,
		    const struct mad_addr *dst, unsigned kernel_ms)
{
	int rc = t->ops->send(t->ctx, t->portid, a->id, mad, len, dst, kernel_ms);

	if (rc < 0) {
		t->c.send_errors++;
		return rc;
	}
	t->c.sent++;
	if (mad_trace_on())
		mad_trace_mad(true, &t->port, dst, mad, len);
	return 0;
}

int mad_send(struct mad_agent *a, const void *mad, size_t len, const struct mad_addr *dst)
{
	if (!a || !mad || !dst || len < MAD_HDR_SIZE || len > MAD_SIZE)
		return -EINVAL;
	return raw_send(a->t, a, mad, len, dst, 0);
}

static void req_timeout(struct mad_timer *tm, void *arg)
{
	struct mad_request *r = arg;
	struct mad_transport *t = r->t;

	(void)tm;
	if (r->retries_left == 0) {
		t->c.timeouts++;
		req_complete(r, -ETIMEDOUT, NULL, 0, NULL);
		return;
	}
	r->retries_left--;
	t->c.retries++;
	/* A resend restarts any partial RMPP transfer from its first segment. */
	if (r->rmpp)
		mad_rmpp_rx_reset(r->rmpp);
	raw_send(t, r->agent, r->mad, r->len, &r->dst, kernel_timeout(r->timeout_ms));
	if (mad_timer_arm(t->timers, &r->timer, (uint64_t)r->timeout_ms * 1000000u, req_timeout,
			  r)) {
		t->c.timeouts++;
		req_complete(r, -ENOMEM, NULL, 0, NULL);
	}
}

int mad_request_send(struct mad_agent *a, void *mad, size_t len, const struct mad_addr *dst,
		     const struct mad_send_opts *opts, mad_response_fn cb, void *arg, uint64_t *tid)
{
	struct mad_transport *t;
	struct mad_request *r, **b;
	int rc;

	if (!a || !mad || !dst || !cb || len < MAD_HDR_SIZE || len > MAD_SIZE)
		return -EINVAL;
	t = a->t;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->t = t;
	r->agent = a;
	r->tid = mad_tid_next();
	mad_set_fits(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID, r->tid);
	r->mgmt_class = (uint8_t)mad_get(mad, mad_hdr_fields, MAD_HDR_MGMT_CLASS);
	r->len = len;
	memcpy(r->mad, mad, len);
	r->dst = *dst;
	r->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 1000;
	r->retries_left = opts ? opts->retries : 0;
	r->cb = cb;
	r->arg = arg;
	rc = raw_send(t, a, r->mad, len, dst, kernel_timeout(r->timeout_ms));
	if (rc) {
		free(r);
		return rc;
	}
	rc =
	    mad_timer_arm(t->timers, &r->timer, (uint64_t)r->timeout_ms * 1000000u, req_timeout, r);
	if (rc) {
		free(r);
		return rc;
	}
	b = bucket(t, mad_tid_low(r->tid));
	r->hnext = *b;
	*b = r;
	t->pending++;
	bucket_mark(t, mad_tid_low(r->tid));
	t->c.requests++;
	if (tid)
		*tid = r->tid;
	return 0;
}

int mad_request_cancel(struct mad_transport *t, uint64_t tid)
{
	struct mad_request *r;

	if (!t)
		return -EINVAL;
	for (r = *bucket(t, mad_tid_low(tid)); r; r = r->hnext)
		if (r->tid == tid)
			break;
	if (!r)
		return -ENOENT;
	req_complete(r, -ECANCELED, NULL, 0, NULL);
	return 0;
}

size_t mad_transport_pending(const struct mad_transport *t)
{
	return t ? t->pending : 0;
}

/* ---- receiving ---- */

static bool is_response(const uint8_t *mad)
{
	return mad_get(mad, mad_hdr_fields, MAD_HDR_R) ||
	       mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD) == MAD_METHOD_TRAP_REPRESS;
}

static bool rmpp_active(const uint8_t *mad, size_t len)
{
	const uint8_t *rh = mad + MAD_RMPP_HDR_OFFSET;

	return len >= MAD_RMPP_HDR_OFFSET + MAD_RMPP_HDR_SIZE &&
	       mad_class_has_rmpp((uint8_t)mad_get(mad, mad_hdr_fields, MAD_HDR_MGMT_CLASS)) &&
	       (mad_get(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS) & MAD_RMPP_FLAG_ACTIVE);
}

static void rmpp_reply(struct mad_request *r, const uint8_t *mad, const struct mad_addr *src,
		       const struct mad_rmpp_ack *ack, bool abort)
{
	uint8_t out[MAD_SIZE];
	struct mad_addr to = *src;

	if (mad_rmpp_build_ack(out, mad, MAD_SIZE, ack, abort) < 0)
		return;
	/* Answer where the segment came from (the SA may be redirected). */
	to.qkey = src->qkey ? src->qkey : MAD_QP1_QKEY;
	if (raw_send(r->t, r->agent, out, MAD_SIZE, &to, 0) == 0 && !abort)
		r->t->c.rmpp_acks++;
}

static void rmpp_segment(struct mad_request *r, const uint8_t *mad, size_t len,
			 const struct mad_addr *src)
{
	struct mad_transport *t = r->t;
	struct mad_rmpp_ack ack;
	enum mad_rmpp_verdict v;

	if (len != MAD_SIZE) {
		t->c.malformed++;
		return;
	}
	if (!r->rmpp) {
		r->rmpp = malloc(sizeof(*r->rmpp));
		if (!r->rmpp)
			return;
		mad_rmpp_rx_init(r->rmpp, r->mgmt_class);
	}
	t->c.rmpp_segments++;
	v = mad_rmpp_rx_segment(r->rmpp, mad, len, &ack);
	switch (v) {
	case MAD_RMPP_KEEP:
		break;
	case MAD_RMPP_SEND_ACK:
		rmpp_reply(r, mad, src, &ack, false);
		break;
	case MAD_RMPP_COMPLETE:
		rmpp_reply(r, mad, src, &ack, false);
		req_complete(r, 0, r->rmpp->buf, r->rmpp->len, src);
		return;
	case MAD_RMPP_ABORT:
		t->c.malformed++;
		t->c.rmpp_aborts++;
		rmpp_reply(r, mad, src, &ack, true);
		req_complete(r, -ECONNABORTED, NULL, 0, NULL);
		return;
	case MAD_RMPP_STOPPED:
		t->c.rmpp_aborts++;
		req_complete(r, -ECONNABORTED, NULL, 0, NULL);
		return;
	case MAD_RMPP_IGNORE:
		return;
	}
	/* The transfer makes progress: give it a full timeout again. */
	mad_timer_arm(t->timers, &r->timer, (uint64_t)r->timeout_ms * 1000000u, req_timeout, r);
}

static struct mad_agent *agent_by_id(struct mad_transport *t, int id)
{
	for (struct mad_agent *a = t->agents; a; a = a->next)
		if (a->id == id)
			return a;
	return NULL;
}

static void dispatch(struct mad_transport *t, const uint8_t *mad, size_t len, int agent_id,
		     const struct mad_addr *src)
{
	uint8_t mgmt_class;
	struct mad_request *r;
	struct mad_agent *a;
	uint32_t tid_low;

	if (mad_hdr_check(mad, len)) {
		t->c.malformed++;
		return;
	}
	mgmt_class = (uint8_t)mad_get(mad, mad_hdr_fields, MAD_HDR_MGMT_CLASS);
	if (!is_response(mad)) {
		a = agent_by_id(t, agent_id);
		if (!a || a->d.mgmt_class != mgmt_class || !a->d.unsolicited) {
			t->c.unmatched++;
			return;
		}
		t->c.unsolicited++;
		a->d.unsolicited(a, mad, len, src, a->d.arg);
		return;
	}
	tid_low = mad_tid_low(mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID));
	r = req_find(t, tid_low, mgmt_class);
	if (!r) {
		switch (recall(t, tid_low)) {
		case FIN_ANSWERED:
			t->c.duplicates++;
			break;
		case FIN_GAVE_UP:
			t->c.late++;
			break;
		default:
			t->c.unmatched++;
		}
		return;
	}
	if (len == MAD_SIZE && rmpp_active(mad, len)) {
		rmpp_segment(r, mad, len, src);
		return;
	}
	req_complete(r, 0, mad, len, src);
}

int mad_transport_poll(struct mad_transport *t, unsigned budget)
{
	unsigned n = 0;

	if (!t)
		return -EINVAL;
	if (!budget)
		budget = 64;
	while (n < budget) {
		struct mad_addr src;
		size_t len = 0;
		int agent = -1;
		int rc = t->ops->recv(t->ctx, t->portid, t->rbuf, RECV_CAP, &len, &agent, &src);

		if (rc == -EAGAIN)
			break;
		if (rc == -ENODEV)
			return n ? (int)n : rc; /* the port is gone: the caller stops */
		if (rc < 0) {
			t->c.malformed++;
			if (rc == -ENOSPC)
				continue;
			return n ? (int)n : rc;
		}
		n++;
		t->c.received++;
		if (mad_trace_on())
			mad_trace_mad(false, &t->port, &src, t->rbuf, len);
		dispatch(t, t->rbuf, len, agent, &src);
	}
	return (int)n;
}

/* ---- agents, port, counters ---- */

int mad_agent_register(struct mad_transport *t, const struct mad_agent_desc *d,
		       struct mad_agent **out)
{
	struct mad_agent *a;
	int id;

	if (!t || !d || !out || d->mgmt_class == 0)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	/* rmpp_version 0: RMPP is done here, not by the kernel. */
	id = t->ops->register_agent(t->ctx, t->portid, d->mgmt_class, d->class_version, 0,
				    d->method_mask);
	if (id < 0) {
		free(a);
		return id;
	}
	a->t = t;
	a->id = id;
	a->d = *d;
	a->next = t->agents;
	t->agents = a;
	*out = a;
	return 0;
}

/*
 * A callback may cancel any other request (the next one in its bucket
 * too) or send anew, into a bucket already walked: so each bucket is
 * walked again from its head after every completion, and the whole table
 * again until a pass fails nothing.
 */
static void fail_agent_requests(struct mad_transport *t, struct mad_agent *a)
{
	bool failed;

	do {
		failed = false;
		for (unsigned i = bucket_next_busy(t, 0); i < REQ_BUCKETS;
		     i = bucket_next_busy(t, i + 1)) {
			struct mad_request *r = t->buckets[i];

			while (r) {
				if (a && r->agent != a) {
					r = r->hnext;
					continue;
				}
				req_complete(r, -ECANCELED, NULL, 0, NULL);
				failed = true;
				r = t->buckets[i];
			}
		}
	} while (failed);
}

void mad_agent_unregister(struct mad_agent *a)
{
	struct mad_transport *t;

	if (!a)
		return;
	t = a->t;
	fail_agent_requests(t, a);
	for (struct mad_agent **pp = &t->agents; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	t->ops->unregister_agent(t->ctx, t->portid, a->id);
	free(a);
}

struct mad_transport *mad_agent_transport(const struct mad_agent *a)
{
	return a ? a->t : NULL;
}

void mad_transport_close(struct mad_transport *t)
{
	if (!t)
		return;
	fail_agent_requests(t, NULL);
	while (t->agents)
		mad_agent_unregister(t->agents);
	t->ops->close_port(t->ctx, t->portid);
	free(t->rbuf);
	free(t);
}

int mad_transport_fd(const struct mad_transport *t)
{
	return t ? t->fd : -1;
}

int mad_transport_port(struct mad_transport *t, struct mad_port_attr *out, bool *changed)
{
	struct mad_port_attr a;
	int rc;

	if (!t)
		return -EINVAL;
	rc = t->ops->query_port(t->ctx, t->port.ca_name, t->port.portnum, &a);
	if (rc)
		return rc;
	if (changed)
		*changed = a.lid != t->port.lid || a.sm_lid != t->port.sm_lid ||
			   a.sm_sl != t->port.sm_sl || a.state != t->port.state ||
			   a.pkey0 != t->port.pkey0;
	t->port = a;
	if (out)
		*out = a;
	return 0;
}

const struct mad_port_attr *mad_transport_port_cached(const struct mad_transport *t)
{
	return t ? &t->port : NULL;
}

void mad_transport_counters(const struct mad_transport *t, struct mad_transport_counters *out)
{
	if (t && out)
		*out = t->c;
}
