/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM sessions: a program's commands run on the port's runtime, and the
 * events of the ids it made routed back to it only.
 *
 * Ownership: every connection (local comm ID) and listener of a port
 * belongs to one session, found through the port's hash of (listen, id).
 * A session's CONNECT and SIDR_REQ make connections, LISTEN listeners; a
 * REQ or SIDR_REQ to a listener makes a connection of the listener's
 * session.  A command naming an id the session does not own fails with
 * -EINVAL, as if the id did not exist, so that one program can neither
 * act on nor probe another's.  An id is forgotten when the engine forgets
 * it (TimeWait over, a REJ or timeout that ends the handshake, a SIDR
 * answer), and at once on RELEASE / UNLISTEN / DROP.
 *
 * Listeners of several network namespaces share one engine listener (the
 * IB port's, one per service ID), as the kernel's rdma_cm shares one IB
 * CM listener among the rdma_cm listeners of all namespaces: each REQ
 * goes to the listener whose namespace holds the destination IP of its
 * IP CM header (cma.c cma_find_listener / cma_match_net_dev).  One
 * listener on a service ID (the usual case) takes every REQ, unasked.
 *
 * Commands run inline (cm_runtime_exec on the loop thread): the events a
 * command makes reach madcmd_cm_event, and so the session, before its
 * REPLY, which is part of the protocol.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "cm/ip_pdata.h"
#include "madcmd/madcmd_int.h"

/* ---- the port's id hash ---- */

static uint32_t bucket(const struct madcmd_served *p, bool listen, uint32_t id)
{
	uint32_t h = id * 2654435761u ^ (listen ? 0x5bd1e995u : 0);

	return h & (p->ht_size - 1);
}

static struct madcmd_id *id_find(const struct madcmd_served *p, bool listen, uint32_t id)
{
	if (!p->ht_size)
		return NULL;
	for (struct madcmd_id *x = p->ht[bucket(p, listen, id)]; x; x = x->hnext)
		if (x->id == id && x->listen == listen)
			return x;
	return NULL;
}

static bool ht_grow(struct madcmd_served *p)
{
	uint32_t n = p->ht_size ? p->ht_size * 2 : 64;
	struct madcmd_id **nb = calloc(n, sizeof(*nb));
	struct madcmd_id **ob = p->ht;
	uint32_t on = p->ht_size;

	if (!nb)
		return false;
	p->ht = nb;
	p->ht_size = n;
	for (uint32_t i = 0; i < on; i++)
		while (ob[i]) {
			struct madcmd_id *x = ob[i];
			uint32_t b = bucket(p, x->listen, x->id);

			ob[i] = x->hnext;
			x->hnext = nb[b];
			nb[b] = x;
		}
	free(ob);
	return true;
}

static void lgroup_leave(struct madcmd_served *p, struct madcmd_id *x)
{
	struct madcmd_lgroup *g = x->g;
	struct madcmd_id **pp = &g->members;

	while (*pp && *pp != x)
		pp = &(*pp)->gnext;
	if (*pp)
		*pp = x->gnext;
	x->g = NULL;
	if (--g->n)
		return;
	if (g->engine_id < p->lg_size && p->lg[g->engine_id] == g)
		p->lg[g->engine_id] = NULL;
	free(g);
}

static void id_forget(struct madcmd_id *x)
{
	struct madcmd_session *s = x->s;
	struct madcmd_served *p = s->port;
	struct madcmd_id **pp = &p->ht[bucket(p, x->listen, x->id)];

	if (x->g)
		lgroup_leave(p, x);

	while (*pp && *pp != x)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = x->hnext;
	if (x->sprev)
		x->sprev->snext = x->snext;
	else
		s->ids = x->snext;
	if (x->snext)
		x->snext->sprev = x->sprev;
	s->nids--;
	p->nids--;
	free(x);
}

static struct madcmd_id *id_add(struct madcmd_session *s, bool listen, uint32_t id)
{
	struct madcmd_served *p = s->port;
	struct madcmd_id *x = id_find(p, listen, id);
	uint32_t b;

	/* The engine reuses a comm ID only once it forgot it: so may we. */
	if (x)
		id_forget(x);
	if (p->nids >= p->ht_size && !ht_grow(p))
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->s = s;
	x->id = id;
	x->listen = listen;
	b = bucket(p, listen, id);
	x->hnext = p->ht[b];
	p->ht[b] = x;
	x->snext = s->ids;
	if (s->ids)
		s->ids->sprev = x;
	s->ids = x;
	s->nids++;
	p->nids++;
	return x;
}

void madcmd_ids_destroy(struct madcmd_served *p)
{
	/* Sessions are gone first: only the buckets are left. */
	free(p->ht);
	p->ht = NULL;
	p->ht_size = 0;
	free(p->lg);
	p->lg = NULL;
	p->lg_size = 0;
}

/* ---- listener groups ---- */

/* x, just made by the engine's listener `engine_id`, starts its group. */
static bool lgroup_new(struct madcmd_served *p, struct madcmd_id *x, uint32_t engine_id,
		       uint64_t mask)
{
	struct madcmd_lgroup *g;

	if (engine_id >= p->lg_size) {
		uint32_t n = p->lg_size ? p->lg_size : 16;
		struct madcmd_lgroup **v;

		while (n <= engine_id)
			n *= 2;
		v = realloc(p->lg, n * sizeof(*v));
		if (!v)
			return false;
		memset(v + p->lg_size, 0, (n - p->lg_size) * sizeof(*v));
		p->lg = v;
		p->lg_size = n;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return false;
	g->service_id = x->service_id & mask;
	g->mask = mask;
	g->engine_id = engine_id;
	g->members = x;
	g->n = 1;
	x->g = g;
	p->lg[engine_id] = g;
	return true;
}

/*
 * The group a LISTEN of s may join: the same service ID and mask, and no
 * listener of s's namespace in it (there the engine's EADDRINUSE stands,
 * as two listeners of one namespace cannot share a port in the kernel
 * either, unless on distinct addresses, which the daemon cannot tell
 * apart: its choice is by namespace).
 */
static struct madcmd_lgroup *lgroup_joinable(struct madcmd_served *p,
					     const struct madcmd_session *s, uint64_t sid,
					     uint64_t mask)
{
	for (uint32_t i = 0; i < p->lg_size; i++) {
		struct madcmd_lgroup *g = p->lg[i];

		if (!g || g->mask != mask || g->service_id != (sid & mask))
			continue;
		for (const struct madcmd_id *m = g->members; m; m = m->gnext)
			if (m->s->netns == s->netns)
				return NULL;
		return g;
	}
	return NULL;
}

/* s listens through g's engine listener, under an id of the daemon's. */
static int lgroup_join(struct madcmd_served *p, struct madcmd_session *s, struct madcmd_lgroup *g,
		       const struct cm_rt_cmd *c)
{
	struct madcmd_id *x, **pp;
	uint32_t id;

	do {
		id = MADCMD_VLISTEN_BIT | (p->next_vlisten++ & (MADCMD_VLISTEN_BIT - 1));
	} while (id_find(p, true, id));
	x = id_add(s, true, id);
	if (!x)
		return -ENOMEM;
	x->service_id = c->listen.service_id;
	x->user = c->user;
	x->g = g;
	for (pp = &g->members; *pp; pp = &(*pp)->gnext)
		;
	*pp = x;
	g->n++;
	return (int)id;
}

/*
 * Stop listener x: the engine listener goes with its group's last
 * member only.  0 or the engine's -errno (x then stays).
 */
static int listener_release(struct madcmd_served *p, struct madcmd_id *x)
{
	int rc = 0;

	if (!x->g || x->g->n == 1) {
		struct cm_rt_cmd c;

		memset(&c, 0, sizeof(c));
		c.op = CM_RT_UNLISTEN;
		c.id = x->g ? x->g->engine_id : x->id;
		rc = cm_runtime_exec(p->rt, &c);
	}
	if (!rc)
		id_forget(x);
	return rc;
}

/*
 * The listener of group g whose namespace holds the REQ's destination IP,
 * or NULL.  A REQ without an IP CM header (AF_IB) goes to the oldest.
 */
static struct madcmd_id *lgroup_route(struct madcmd_served *p, struct madcmd_lgroup *g,
				      const struct cm_event *ev)
{
	uint64_t sid =
	    ev->type == CM_EV_SIDR_REQ_RCVD ? ev->sidr_req.service_id : ev->req.service_id;
	struct sockaddr_storage dst;
	const uint8_t *addr;
	uint16_t port;
	int family;

	if (cm_sid_to_ps_port(sid, NULL, &port) ||
	    cm_ip_hdr_decode(ev->private_data, ev->private_data_len, port, NULL, &dst))
		return g->members;
	if (dst.ss_family == AF_INET) {
		family = AF_INET;
		addr = (const uint8_t *)&((struct sockaddr_in *)&dst)->sin_addr;
	} else {
		static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};

		family = AF_INET6;
		addr = (const uint8_t *)&((struct sockaddr_in6 *)&dst)->sin6_addr;
		if (!memcmp(addr, v4mapped, sizeof(v4mapped))) {
			family = AF_INET;
			addr += 12;
		}
	}
	for (struct madcmd_id *m = g->members; m; m = m->gnext)
		if (!m->s->closing &&
		    p->d->p.netns_has_addr(p->d->p.addr_ctx, m->s->pid, m->s->netns, family, addr))
			return m;
	return NULL;
}

/* ---- engine calls of the daemon's own ---- */

static int exec_simple(struct madcmd_served *p, enum cm_rt_op op, uint32_t id)
{
	struct cm_rt_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = op;
	c.id = id;
	return cm_runtime_exec(p->rt, &c);
}

int madcmd_conn_state(struct madcmd_served *p, uint32_t id, enum cm_state *st)
{
	struct cm_rt_cmd c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.op = CM_RT_CONN_STATE;
	c.id = id;
	rc = cm_runtime_exec(p->rt, &c);
	if (!rc)
		*st = c.state;
	return rc;
}

/* Forget a connection if the engine already did. */
static void forget_if_gone(struct madcmd_id *x)
{
	enum cm_state st;

	if (madcmd_conn_state(x->s->port, x->id, &st))
		id_forget(x);
}

/* ---- events ---- */

/* Events after which the engine may have freed the connection. */
static bool may_end(enum cm_event_type t)
{
	switch (t) {
	case CM_EV_REQ_ERROR:
	case CM_EV_REP_ERROR:
	case CM_EV_REJ_RCVD:
	case CM_EV_TIMEWAIT_EXIT:
	case CM_EV_SIDR_REQ_ERROR:
	case CM_EV_SIDR_REP_RCVD:
	case CM_EV_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

/*
 * The QP attributes of connection `id` in `n` states, as the program's
 * auto QP will ask for them next (rtproto/rt_proto.h): those the engine
 * gives, written into out[] (zeroed here: n entries and the rest of
 * MADCMD_QP_ATTRS).  The runtime's engine answers directly on the
 * daemon's loop (cm_runtime_init_qp_attr), no command built.
 */
static uint32_t qp_attrs(struct madcmd_served *p, uint32_t id, const enum ibv_qp_state *st,
			 unsigned n, struct madcmd_qp_attr *out)
{
	uint32_t k = 0;

	memset(out, 0, MADCMD_QP_ATTRS * sizeof(*out));
	for (unsigned i = 0; i < n && i < MADCMD_QP_ATTRS; i++) {
		int mask = 0;

		if (cm_runtime_init_qp_attr(p->rt, id, st[i], &out[k].attr, &mask)) {
			memset(&out[k], 0, sizeof(out[k]));
			break;
		}
		out[k].state = st[i];
		out[k].mask = mask;
		k++;
	}
	return k;
}

/* The EVENT of ev for s, written at m. */
static void event_fill(struct madcmd_session *s, const struct cm_event *ev, struct madcmd_event *m)
{
	static const enum ibv_qp_state req[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
	/*
	 * Up to the private data's end: the engine leaves the rest of an
	 * event (cm_event_init) and its tail padding unset, and those bytes
	 * of the daemon's stack must not reach the program.
	 */
	size_t n = offsetof(struct cm_event, private_data) +
		   (ev->private_data_len < sizeof(ev->private_data) ? ev->private_data_len
								    : sizeof(ev->private_data));

	madcmd_hdr_init(&m->h, MADCMD_EVENT, sizeof(*m), 0);
	memcpy(&m->ev, ev, n);
	memset((uint8_t *)&m->ev + n, 0, sizeof(m->ev) - n);
	m->reserved = 0;
	/* lib/ moves INIT again on a REP */
	m->nqp = ev->type == CM_EV_REQ_RCVD || ev->type == CM_EV_REP_RCVD
		     ? qp_attrs(s->port, ev->id, req, 3, m->qp)
		     : qp_attrs(s->port, ev->id, req, 0, m->qp);
}

static void forward(struct madcmd_session *s, const struct cm_event *ev)
{
	struct madcmd_event *m = madcmd_batch_reserve(s, sizeof(*m));

	/* Written in the batch (no event built first and copied), else sent as one. */
	if (m) {
		event_fill(s, ev, m);
	} else if (!s->closing) {
		struct madcmd_event local;

		event_fill(s, ev, &local);
		madcmd_send_batched(s, &local, sizeof(local));
	}
	if ((ev->type == CM_EV_REQ_RCVD || ev->type == CM_EV_REP_RCVD) && s->mra_on_delivery) {
		/* What the program would ask for at once (HELLO): no command. */
		struct cm_rt_cmd c;

		memset(&c, 0, sizeof(c));
		c.op = CM_RT_MRA;
		c.id = ev->id;
		c.mra.service_timeout = s->mra_on_delivery;
		cm_runtime_exec(s->port->rt, &c);
	}
}

/* A request to a listener: the new connection is its session's. */
static struct madcmd_id *adopt(struct madcmd_served *p, const struct cm_event *ev,
			       struct madcmd_id **lp)
{
	struct madcmd_lgroup *g = ev->listen_id >= 0 && (uint32_t)ev->listen_id < p->lg_size
				      ? p->lg[ev->listen_id]
				      : NULL;
	struct madcmd_id *l = NULL, *x = NULL;

	if (g)
		l = g->n == 1 ? g->members : lgroup_route(p, g, ev);
	*lp = l;
	if (g && !l) {
		/*
		 * No namespace sharing the service ID has the address: the
		 * kernel's answer when no listener takes a REQ.
		 */
		struct cm_rt_cmd c;

		memset(&c, 0, sizeof(c));
		c.id = ev->id;
		if (ev->type == CM_EV_REQ_RCVD) {
			c.op = CM_RT_REJECT;
			c.reject.reason = CM_REJ_INVALID_SERVICE_ID;
		} else {
			c.op = CM_RT_SIDR_REP;
			c.sidr_rep.status = CM_SIDR_UNSUPPORTED;
		}
		if (cm_runtime_exec(p->rt, &c))
			exec_simple(p, ev->type == CM_EV_REQ_RCVD ? CM_RT_DROP : CM_RT_RELEASE,
				    ev->id);
		return NULL;
	}
	if (l && !l->s->closing && l->s->nids < p->d->p.max_ids)
		x = id_add(l->s, false, ev->id);
	if (!x) {
		/*
		 * Nobody to take it: as the kernel's ucma with a full
		 * backlog, forget a REQ silently (the peer's retry may find
		 * room); a SIDR_REQ is freed the same way.
		 */
		exec_simple(p, ev->type == CM_EV_REQ_RCVD ? CM_RT_DROP : CM_RT_RELEASE, ev->id);
		return NULL;
	}
	if (ev->type == CM_EV_REQ_RCVD) {
		/* Passive side: the paths are reversed, the remote end is "d". */
		x->remote_lid = ev->req.primary.dlid;
		memcpy(x->remote_gid, ev->req.primary.dgid, 16);
	} else {
		x->remote_lid = ev->from.lid;
		if (ev->from.grh_present)
			memcpy(x->remote_gid, ev->from.gid, 16);
	}
	return x;
}

/*
 * The port's device went away (its umad fd hung up): every session of
 * the port ends, so its programs see the daemon's port gone as they
 * would see the daemon gone (DEVICE_REMOVAL); new sessions are refused
 * until the device is back and the daemon's next look serves it again.
 */
static void port_gone(struct madcmd_served *p)
{
	struct madcmd *d = p->d;

	madcmd_log(LOG_ERR, "%s/%d: the port's MAD device hung up: no longer served",
		   p->attr.ca_name, p->attr.portnum);
	p->gone = true;
	for (unsigned i = 1; i <= d->p.max_sessions; i++)
		if (d->slots[i] && d->slots[i]->port == p)
			madcmd_session_close(d->slots[i], "port gone");
	madcmd_port_went(d);
}

bool madcmd_cm_event(void *arg, struct cm_runtime *rt, const struct cm_event *ev)
{
	struct madcmd_served *p = arg;
	struct madcmd_id *x, *l = NULL;

	(void)rt;
	if (ev->type == CM_EV_RUNTIME_LOST) {
		port_gone(p);
		return true;
	}
	if (ev->type == CM_EV_REQ_RCVD || ev->type == CM_EV_SIDR_REQ_RCVD)
		x = adopt(p, ev, &l);
	else
		x = id_find(p, false, ev->id);
	if (!x) {
		p->c.dropped++;
		return true;
	}
	if (x->s->closing) {
		p->c.dropped++; /* its reaping releases the id */
		return true;
	}
	if (l && l->g && l->id != l->g->engine_id) {
		/* A listener sharing another's engine listener: its own id and user. */
		struct cm_event mine = *ev;

		mine.listen_id = (int)l->id;
		mine.user = l->user;
		forward(x->s, &mine);
	} else {
		forward(x->s, ev);
	}
	p->c.events++;
	if (ev->type == CM_EV_TIMEWAIT_EXIT)
		id_forget(x);
	else if (may_end(ev->type))
		forget_if_gone(x);
	return true; /* consumed: the runtime's own queue stays empty */
}

/* ---- granted comm IDs ---- */

void madcmd_cm_grant(struct madcmd_session *s)
{
	struct madcmd_served *p = s->port;
	struct madcmd_grant g;

	if (s->closing || s->ngrants >= MADCMD_GRANT_TARGET / 2)
		return;
	do {
		memset(&g, 0, sizeof(g));
		while (s->ngrants < MADCMD_GRANT_TARGET && g.n < MADCMD_GRANT_MAX &&
		       s->nids + s->ngrants < s->d->p.max_ids) {
			struct cm_rt_cmd c;

			memset(&c, 0, sizeof(c));
			c.op = CM_RT_RESERVE_ID;
			if (cm_runtime_exec(p->rt, &c))
				break; /* the engine's table is full: no more for now */
			s->grants[s->ngrants++] = c.id;
			g.ids[g.n++] = c.id;
		}
		if (!g.n)
			return;
		madcmd_hdr_init(&g.h, MADCMD_GRANT, sizeof(g), 0);
		madcmd_send_batched(s, &g, sizeof(g));
	} while (g.n == MADCMD_GRANT_MAX);
}

/* Take a granted ID (a CONNECT_AS names it): false if it is not the session's. */
static bool grant_take(struct madcmd_session *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->ngrants; i++)
		if (s->grants[i] == id) {
			s->grants[i] = s->grants[--s->ngrants];
			return true;
		}
	return false;
}

/* ---- commands ---- */

/*
 * The REPLY of `in`, run as c, written at out: the whole struct goes back,
 * result and every output field, and the rest of the CMD as it came.
 */
static void reply_fill(struct madcmd_served *p, const struct madcmd_cmd *in,
		       const struct cm_rt_cmd *c, struct madcmd_cmd *out)
{
	madcmd_hdr_init(&out->h, MADCMD_REPLY, sizeof(*out), in->h.seq);
	out->h.flags = in->h.flags & MADCMD_F_ASYNC;
	out->cmd = *c;
	memset(&out->cmd.auto_qp, 0, sizeof(out->cmd.auto_qp));
	out->nqp = 0;
	out->reserved = in->reserved;
	memcpy(out->qp, in->qp, sizeof(out->qp));
	if (c->op == CM_RT_CONNECT && c->result == 0) {
		struct ibv_qp_attr a;
		int mask = 0;

		if (!cm_runtime_init_qp_attr(p->rt, c->id, IBV_QPS_INIT, &a, &mask)) {
			out->qp[0].state = IBV_QPS_INIT;
			out->qp[0].mask = mask;
			out->qp[0].attr = a;
			out->nqp = 1;
		}
	}
}

void madcmd_cm_cmd(struct madcmd_session *s, const struct madcmd_cmd *in)
{
	struct madcmd_served *p = s->port;
	struct cm_rt_cmd cmd = in->cmd;
	struct cm_rt_cmd *c = &cmd;
	struct madcmd_cmd *out;
	struct madcmd_id *x = NULL;
	int rc;

	/* A pointer from another process means nothing here: never used. */
	memset(&c->auto_qp, 0, sizeof(c->auto_qp));
	p->c.commands++;
	switch (c->op) {
	case CM_RT_LISTEN:
	case CM_RT_CONNECT:
	case CM_RT_SIDR_REQ:
		/* ucma says ENOMEM for a failed allocation; a limit is ENOSPC. */
		if (s->nids >= s->d->p.max_ids) {
			c->result = -ENOSPC;
			goto reply;
		}
		if (c->op == CM_RT_LISTEN && c->listen.mask) {
			struct madcmd_lgroup *g =
			    lgroup_joinable(p, s, c->listen.service_id, c->listen.mask);

			if (g) {
				c->result = lgroup_join(p, s, g, c);
				goto reply;
			}
		}
		break;
	case CM_RT_CONNECT_AS:
		if (!grant_take(s, c->id)) {
			madcmd_log(LOG_DEBUG,
				   "session %u (pid %d): CONNECT_AS of ID 0x%x, not granted",
				   s->slot, (int)s->pid, (unsigned)c->id);
			c->result = -EINVAL; /* not an ID this session was given */
			goto reply;
		}
		break;
	case CM_RT_RESERVE_ID:
	case CM_RT_UNRESERVE_ID:
		c->result = -EINVAL; /* the daemon's own: grants come unasked */
		goto reply;
	case CM_RT_STATS:
		break;
	case CM_RT_UNLISTEN:
		x = id_find(p, true, c->id);
		c->result = x && x->s == s ? listener_release(p, x) : -EINVAL;
		goto reply;
	default:
		x = id_find(p, false, c->id);
		if (!x || x->s != s) {
			c->result = -EINVAL;
			goto reply;
		}
		break;
	}
	rc = cm_runtime_exec(p->rt, c);
	c->result = rc;
	switch (c->op) {
	case CM_RT_LISTEN:
		if (rc >= 0) {
			x = id_add(s, true, (uint32_t)rc);
			if (x) {
				x->service_id = c->listen.service_id;
				x->user = c->user;
			}
			if (x && !lgroup_new(p, x, (uint32_t)rc, c->listen.mask)) {
				id_forget(x);
				x = NULL;
			}
			if (!x) {
				exec_simple(p, CM_RT_UNLISTEN, (uint32_t)rc);
				c->result = -ENOMEM;
			}
		}
		break;
	case CM_RT_CONNECT_AS:
		if (rc) {
			madcmd_log(LOG_DEBUG, "session %u (pid %d): CONNECT_AS of ID 0x%x: %s",
				   s->slot, (int)s->pid, (unsigned)c->id, strerror(-rc));
			exec_simple(p, CM_RT_UNRESERVE_ID, c->id); /* refused before using it */
		}
		/* fall through */
	case CM_RT_CONNECT:
	case CM_RT_SIDR_REQ:
		if (rc == 0) {
			x = id_add(s, false, c->id);
			if (!x) {
				exec_simple(p, CM_RT_RELEASE, c->id);
				c->result = -ENOMEM;
			} else if (c->op != CM_RT_SIDR_REQ) {
				x->remote_lid = c->connect.primary.dlid;
				memcpy(x->remote_gid, c->connect.primary.dgid, 16);
			} else {
				x->remote_lid = c->sidr_req.to.lid;
				if (c->sidr_req.to.grh_present)
					memcpy(x->remote_gid, c->sidr_req.to.gid, 16);
			}
		}
		break;
	case CM_RT_RELEASE:
	case CM_RT_DROP:
		/* Whatever lingers (TimeWait, DREQ retries) has no user now. */
		x = id_find(p, false, c->id);
		if (x)
			id_forget(x);
		break;
	case CM_RT_REJECT:
		x = id_find(p, false, c->id);
		if (x)
			forget_if_gone(x);
		break;
	case CM_RT_SIDR_REP:
		/* What lingers (the answer kept for duplicates) has no user now. */
		x = id_find(p, false, c->id);
		if (x && rc == 0)
			id_forget(x);
		else if (x)
			forget_if_gone(x);
		break;
	default:
		break;
	}
reply:
	if (c->op == CM_RT_CONNECT || c->op == CM_RT_CONNECT_AS)
		madcmd_cm_grant(s);
	if ((in->h.flags & MADCMD_F_NOREPLY) || ((in->h.flags & MADCMD_F_ASYNC) && !c->result))
		return;
	/* Written in the batch (no REPLY built first and copied), else sent as one. */
	out = madcmd_batch_reserve(s, sizeof(*out));
	if (out) {
		reply_fill(p, in, c, out);
	} else if (!s->closing) {
		struct madcmd_cmd local;

		reply_fill(p, in, c, &local);
		madcmd_send_batched(s, &local, sizeof(local));
	}
}

/*
 * The program is gone: release its connections as the kernel's
 * ib_destroy_cm_id does (REJ during the handshake, DREQ when connected),
 * and its listeners.
 */
void madcmd_cm_session_end(struct madcmd_session *s)
{
	struct madcmd_served *p = s->port;

	while (s->ngrants)
		exec_simple(p, CM_RT_UNRESERVE_ID, s->grants[--s->ngrants]);

	while (s->ids) {
		struct madcmd_id *x = s->ids;

		if (x->listen)
			listener_release(p, x);
		else
			exec_simple(p, CM_RT_RELEASE, x->id);
		/* The id may be gone already if a hook forgot it meanwhile. */
		if (s->ids == x)
			id_forget(x);
	}
}
