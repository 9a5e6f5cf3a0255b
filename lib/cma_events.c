/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM runtime events -> rdma_cm events.  Runs on the loop (the runtime's
 * on_loop_event hook, arg = the cma_port), so it answers at once where the
 * kernel's cma.c answers in its own context:
 *   - REQ: a new id for the connection request, matched to a listener by
 *     the IP CM header (cma_match_private_data), its delayed MRA already
 *     armed by the runtime (cm_runtime_params.mra_on_delivery: the kernel
 *     arms one for every REQ it hands to user space; it goes out only if
 *     the peer repeats its REQ); beyond the
 *     listener's backlog the REQ is dropped without a REJ so the peer
 *     retries (ucma's backlog rule);
 *   - REP: its delayed MRA armed the same way, then, when the id has a QP, the QP is
 *     moved INIT -> RTR -> RTS and the RTU sent (librdmacm's
 *     ucma_process_conn_resp), reported as ESTABLISHED; without a QP the
 *     application gets CONNECT_RESPONSE and calls rdma_establish.
 * Status values are the kernel's (cma_ib_handler): REJECTED carries the
 * REJ reason, UNREACHABLE and timed-out disconnects -ETIMEDOUT.
 *
 * Commands to the runtime are made with cma.lock dropped (they may call
 * back into this hook); an id that is being destroyed gets no events.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

#include "cm/ip_pdata.h"
#include "cm/runtime.h"
#include "lib/cma.h"
#include "sa/client.h"

static void copy_pdata(struct cma_event *e, const struct cm_event *ev, size_t off, size_t size)
{
	size_t n = ev->private_data_len > off ? ev->private_data_len - off : 0;

	if (size > off)
		size -= off;
	else
		size = 0;
	if (n > size)
		n = size;
	if (n > sizeof(e->pdata))
		n = sizeof(e->pdata);
	memcpy(e->pdata, ev->private_data + off, n);
	e->ev.param.conn.private_data = e->pdata;
	e->ev.param.conn.private_data_len = (uint8_t)size;
}

static void rep_param(struct cma_event *e, const struct cm_event *ev)
{
	struct rdma_conn_param *c = &e->ev.param.conn;

	/* The peer's numbers seen from here, as cm.c reports them. */
	c->responder_resources = ev->rep.initiator_depth;
	c->initiator_depth = ev->rep.responder_resources;
	c->flow_control = ev->rep.flow_control;
	c->rnr_retry_count = ev->rep.rnr_retry_count;
	c->srq = ev->rep.srq;
	c->qp_num = ev->rep.remote_qpn;
	copy_pdata(e, ev, 0, CM_REP_PRIVATE_DATA_SIZE);
}

static void report(struct cma_id *id, struct cma_event *e)
{
	if (!e)
		return;
	if (id->state == CMA_DESTROYING) {
		free(e);
		return;
	}
	cma_report(id, e);
}

static struct cma_event *new_ev(struct cma_id *id, enum rdma_cm_event_type t, int status)
{
	return cma_event_new(id, t, status);
}

static void forget_conn(struct cma_id *id)
{
	if (id->has_conn) {
		cma_conn_del(id->port, id->conn, id);
		id->has_conn = false;
	}
}

static int rt_cmd(struct cm_runtime *rt, enum cm_rt_op op, uint32_t conn)
{
	struct cm_rt_cmd c = {.op = op, .id = conn};

	if (op == CM_RT_REJECT)
		c.reject.reason = CM_REJ_CONSUMER_DEFINED;
	return cm_runtime_exec(rt, &c);
}

/* ---- REQ ---- */

/* Does a listen id take a REQ for local address `dst`? (cma_match_private_data) */
static bool listener_takes(const struct cma_id *l, const struct cma_port *p,
			   const struct sockaddr *dst)
{
	const struct sockaddr *la = &l->id.route.addr.src_addr;

	if (l->state != CMA_LISTEN || !l->listening)
		return false;
	if (l->port && l->port != p)
		return false;
	if (la->sa_family == AF_IB)
		return true; /* AF_IB listeners take every REQ (cma.c) */
	if (!dst)
		return false; /* no IP CM header: only AF_IB ids understand it */
	if (cma_addr_is_wildcard(la))
		return la->sa_family == dst->sa_family || !l->afonly;
	return cma_addr_equal(la, dst);
}

/* How a REQ or SIDR_REQ that no id takes is answered. */
static void refuse(struct cm_runtime *rt, const struct cm_event *ev, bool drop)
{
	struct cm_rt_cmd c = {.id = ev->id};

	if (ev->type == CM_EV_SIDR_REQ_RCVD) {
		/* SIDR: REJECT status (cm_destroy_id), or forget it silently. */
		c.op = drop ? CM_RT_RELEASE : CM_RT_SIDR_REP;
		c.sidr_rep.status = CM_SIDR_REJECT;
	} else {
		c.op = drop ? CM_RT_DROP : CM_RT_REJECT;
		c.reject.reason = CM_REJ_CONSUMER_DEFINED;
	}
	cm_runtime_exec(rt, &c);
}

/* A REQ (connected ids) or SIDR_REQ (datagram ids) for a listener. */
static void on_req(struct cma_port *p, struct cm_runtime *rt, const struct cm_event *ev)
{
	bool sidr = ev->type == CM_EV_SIDR_REQ_RCVD;
	uint64_t sid = sidr ? ev->sidr_req.service_id : ev->req.service_id;
	size_t size = sidr ? CM_SIDR_REQ_PRIVATE_DATA_SIZE : CM_REQ_PRIVATE_DATA_SIZE;
	struct sockaddr_storage src, dst;
	bool have_ip = false;
	struct cma_id *l, *child;
	struct cma_event *e;
	unsigned ps;
	uint16_t port;
	size_t off = 0;
	struct ibv_qp_attr init;
	int init_mask = 0;

	if (cm_sid_to_ps_port(sid, &ps, &port)) {
		refuse(rt, ev, false);
		return;
	}
	if (ps != RDMA_PS_IB || ev->private_data_len >= CMA_IP_HDR_SIZE)
		have_ip =
		    !cm_ip_hdr_decode(ev->private_data, ev->private_data_len, port, &src, &dst);
	/* rdma_create_qp's INIT, asked here where the loop is held (not under cma.lock). */
	if (!sidr && cm_runtime_init_qp_attr(rt, ev->id, IBV_QPS_INIT, &init, &init_mask))
		init_mask = 0;
	cma_lock();
	for (l = cma_ports_listeners((enum rdma_port_space)ps, port); l; l = l->bind_next)
		if ((l->id.qp_type == IBV_QPT_UD) == sidr &&
		    listener_takes(l, p, have_ip ? (struct sockaddr *)&dst : NULL))
			break;
	if (l && l->id.route.addr.src_addr.sa_family == AF_IB)
		have_ip = false;
	if (!l) {
		cma_unlock();
		refuse(rt, ev, false);
		return;
	}
	if (l->pending_reqs >= l->backlog) {
		/* Past the backlog: no answer, so the peer retries (ucma). */
		cma_unlock();
		refuse(rt, ev, true);
		return;
	}
	{
		/* A sync listener's new ids are sync too, each on its own channel. */
		struct cma_channel *ch = cma_channel_of(&l->id);

		if (l->sync) {
			ch = cma_channel_create_locked();
			if (ch)
				ch->private_sync = true;
		}
		child = ch ? cma_id_alloc(ch, l->id.context, l->id.ps, l->id.qp_type) : NULL;
		if (!child && l->sync && ch)
			cma_channel_unref_locked(ch); /* the channel made for it */
	}
	e = child ? new_ev(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0) : NULL;
	if (!e || cma_conn_add(p, ev->id, child)) {
		free(e);
		if (child)
			cma_id_free_locked(child);
		cma_unlock();
		refuse(rt, ev, true); /* out of memory: let the peer retry */
		return;
	}
	child->passive = true;
	child->state = CMA_CONNECT; /* passive ids are born connecting */
	child->has_conn = true;
	child->conn = ev->id;
	child->listen = l;
	child->afonly = l->afonly;
	cma_attach(child, p);
	if (have_ip) {
		off = CMA_IP_HDR_SIZE;
		memcpy(&child->id.route.addr.src_storage, &dst, sizeof(dst));
		memcpy(&child->id.route.addr.dst_storage, &src, sizeof(src));
	} else {
		struct sockaddr_ib *s = (struct sockaddr_ib *)&child->id.route.addr.src_storage;
		struct sockaddr_ib *d = (struct sockaddr_ib *)&child->id.route.addr.dst_storage;

		s->sib_family = AF_IB;
		d->sib_family = AF_IB;
		memcpy(&s->sib_addr, p->gid, 16);
		if (!sidr)
			memcpy(&d->sib_addr, ev->req.primary.dgid, 16);
		else if (ev->from.grh_present)
			memcpy(&d->sib_addr, ev->from.gid, 16);
		s->sib_sid = htobe64(sid);
		s->sib_sid_mask = htobe64(~0ull);
		s->sib_pkey = htons(sidr ? ev->sidr_req.pkey : ev->req.primary.pkey);
		d->sib_pkey = s->sib_pkey;
	}
	memcpy(child->id.route.addr.addr.ibaddr.sgid.raw, p->gid, 16);
	e->listen = l;
	e->ev.listen_id = &l->id;
	if (sidr) {
		struct cm_path back = {.slid = p->lid, .dlid = ev->from.lid, .sl = ev->from.sl};

		memcpy(back.sgid, p->gid, 16);
		if (ev->from.grh_present)
			memcpy(back.dgid, ev->from.gid, 16);
		back.subnet_local = !ev->from.grh_present;
		back.pkey = ev->sidr_req.pkey;
		memcpy(child->id.route.addr.addr.ibaddr.dgid.raw, back.dgid, 16);
		child->id.route.addr.addr.ibaddr.pkey = htons(ev->sidr_req.pkey);
		cma_set_path(child, 0, &back);
		copy_pdata(e, ev, off, size);
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = (uint8_t)(size - off);
	} else {
		memcpy(child->id.route.addr.addr.ibaddr.dgid.raw, ev->req.primary.dgid, 16);
		child->id.route.addr.addr.ibaddr.pkey = htons(ev->req.primary.pkey);
		cma_set_path(child, 0, &ev->req.primary);
		if (ev->req.has_alternate)
			cma_set_path(child, 1, &ev->req.alternate);
		child->seq_num = cma_random32() & 0xffffff;
		child->responder_resources = ev->req.initiator_depth;
		child->initiator_depth = ev->req.responder_resources;
		child->remote_qpn = ev->req.remote_qpn;
		child->req_init = init_mask != 0;
		child->req_init_access = init.qp_access_flags;
		child->req_init_pkey_index = init.pkey_index;
		child->remote_ece_vendor = ev->req.ece_vendor_id;
		child->remote_ece_attr = ev->req.ece_attr_mod;
		e->ev.param.conn.responder_resources = child->responder_resources;
		e->ev.param.conn.initiator_depth = child->initiator_depth;
		e->ev.param.conn.flow_control = ev->req.flow_control;
		e->ev.param.conn.retry_count = ev->req.retry_count;
		e->ev.param.conn.rnr_retry_count = ev->req.rnr_retry_count;
		e->ev.param.conn.srq = ev->req.srq;
		e->ev.param.conn.qp_num = ev->req.remote_qpn;
		copy_pdata(e, ev, off, size);
	}
	l->pending_reqs++;
	cma_report(child, e);
	cma_unlock();
}

/* ---- REP (active) ---- */

static void on_rep(struct cma_id *id, struct cm_runtime *rt, const struct cm_event *ev)
{
	struct cma_event *e;
	uint32_t conn = ev->id;
	bool qp;
	int rc = 0;

	id->remote_qpn = ev->rep.remote_qpn;
	id->remote_ece_vendor = ev->rep.ece_vendor_id;
	id->remote_ece_attr = ev->rep.ece_attr_mod;
	qp = id->id.qp != NULL;
	id->pins++;
	cma_unlock();
	if (qp) {
		/* The connection is known here: no cma.lock for each move. */
		rc = cma_conn_qp_rtr(id, rt, conn);
		if (!rc)
			rc = cma_conn_qp_move(id, rt, conn, IBV_QPS_RTS);
		if (!rc)
			rc = rt_cmd(rt, CM_RT_RTU, conn);
		if (rc) {
			cma_qp_to_err(id);
			rt_cmd(rt, CM_RT_REJECT, conn);
		}
	}
	cma_lock();
	id->pins--;
	pthread_cond_broadcast(&id->cond);
	if (!qp) {
		e = new_ev(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	} else if (rc) {
		e = new_ev(id, RDMA_CM_EVENT_CONNECT_ERROR, rc);
		id->connect_error = true;
		forget_conn(id);
	} else {
		e = new_ev(id, RDMA_CM_EVENT_ESTABLISHED, 0);
		id->established = true;
	}
	if (e)
		rep_param(e, ev);
	report(id, e);
}

/* ---- everything else ---- */

bool cma_on_cm_event(void *arg, struct cm_runtime *rt, const struct cm_event *ev)
{
	struct cma_port *p = arg;
	struct cma_id *id;
	struct cma_event *e = NULL;

	mad_loop_assert_owned(cma.loop);
	cma_assert_unlocked();
	if (ev->type == CM_EV_REQ_RCVD || ev->type == CM_EV_SIDR_REQ_RCVD) {
		on_req(p, rt, ev);
		return true;
	}
	if (ev->type == CM_EV_RUNTIME_LOST) {
		cma_daemon_lost(p, ev->status);
		return true;
	}
	cma_lock();
	id = cma_conn_find(p, ev->id);
	if (!id && ev->user) {
		/*
		 * An active connect whose rdma_connect has not returned yet:
		 * only then (CMA_CONNECT).  A late event of a connection the id
		 * released (rdma_destroy_id, before the id is freed) must not
		 * map it again, or the link would outlive the id.
		 */
		id = cma_id_by_cookie(ev->user);
		if (id && (id->state != CMA_CONNECT || id->port != p || id->passive ||
			   (id->has_conn && id->conn != ev->id)))
			id = NULL;
		if (id && !id->has_conn && cma_conn_add(p, ev->id, id) == 0) {
			id->has_conn = true;
			id->conn = ev->id;
		}
	}
	if (!id) {
		cma_unlock();
		return true; /* a connection lib/ let go of: nobody to tell */
	}
	switch (ev->type) {
	case CM_EV_REP_RCVD:
		on_rep(id, rt, ev);
		break;
	case CM_EV_RTU_RCVD:
	case CM_EV_USER_ESTABLISHED:
		if (!id->established) {
			id->established = true;
			e = new_ev(id, RDMA_CM_EVENT_ESTABLISHED, 0);
			if (e) {
				e->ev.param.conn.responder_resources = id->responder_resources;
				e->ev.param.conn.initiator_depth = id->initiator_depth;
				e->ev.param.conn.qp_num = id->remote_qpn;
			}
		}
		break;
	case CM_EV_REJ_RCVD:
		e = new_ev(id, RDMA_CM_EVENT_REJECTED, ev->rej.reason);
		if (e)
			copy_pdata(e, ev, 0, CM_REJ_PRIVATE_DATA_SIZE);
		forget_conn(id);
		break;
	case CM_EV_REQ_ERROR:
	case CM_EV_REP_ERROR:
		/* No answer; or (madcmd) a connect the daemon refused, with why. */
		e = new_ev(id, RDMA_CM_EVENT_UNREACHABLE, ev->status < 0 ? ev->status : -ETIMEDOUT);
		forget_conn(id);
		break;
	case CM_EV_CONNECT_ERROR:
		/* Passive, madcmd: an accept the daemon refused (QP failed, REJ sent). */
		if (!id->established) {
			e = new_ev(id, RDMA_CM_EVENT_CONNECT_ERROR, ev->status);
			id->connect_error = true;
		}
		forget_conn(id);
		break;
	case CM_EV_DREQ_RCVD:
	case CM_EV_DREP_RCVD:
	case CM_EV_DREQ_ERROR:
		if (cma_comp_exch(id, CMA_CONNECT, CMA_DISCONNECT))
			e = new_ev(id, RDMA_CM_EVENT_DISCONNECTED,
				   ev->type == CM_EV_DREQ_ERROR ? -ETIMEDOUT : 0);
		break;
	case CM_EV_SIDR_REP_RCVD:
	case CM_EV_SIDR_REQ_ERROR:
		e = cma_ud_on_sidr_rep(id, ev);
		forget_conn(id);
		break;
	case CM_EV_TIMEWAIT_EXIT:
		if (id->state == CMA_DISCONNECT)
			e = new_ev(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		forget_conn(id);
		break;
	default:
		/* MRA: no event (the kernel reports none); LAP/APR: not used. */
		break;
	}
	report(id, e);
	cma_unlock();
	return true;
}
