/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * MAD sessions: the daemon's SA requester agent serves the SA clients of
 * programs that may not open umad themselves.
 *
 * Each served port has a umad port of the daemon's own with one agent
 * (class SA, version 2, rmpp_version 0: the program's client does RMPP
 * itself, so DATA segments and ACKs pass through untouched).  A MAD_SEND
 * goes out with the low 32 bits of its TID replaced by a daemon TID,
 * (session slot << 20) | counter, remembered per session next to the
 * client's TID, so that what comes back on the agent finds its session
 * and gets the client's TID again.  The same client TID (a retry, the
 * ACKs of an RMPP transfer) keeps its daemon TID.  Slot 0 is the daemon's
 * own requests (the leaves below).
 *
 * Multicast memberships: the MCMemberRecord joins (SubnAdmSet) a session
 * made and the SA granted are kept per session, so that the SA sees one
 * member per (MGID, port GID, JoinState bit) however many programs of the
 * port joined: a Delete whose bits are all still held by another session
 * is answered here (a GetResp echoing the record), one whose bits are
 * partly held goes out without them, and when a session ends, the bits
 * no other session holds are left with a Delete of the daemon's own.
 * ServiceRecords (the library's address records) likewise: a Delete of a
 * record another session also registered is answered here, and a session
 * that ends deletes the records it alone held.
 *
 * SA notices: the SA sends its Reports to the port that subscribed, the
 * daemon's, so the daemon subscribes once per port and fans out.  An
 * InformInfo Set (Subscribe 1) that another session of the port already
 * holds is answered here; one that no other session holds goes to the
 * SA, as does a session's renewal of what it holds (the SA may have lost
 * it), and an unsubscribe once no other session holds it; a session that
 * ends unsubscribes what it alone held.  The proxy port has
 * a second agent for the Report method: each Report is answered there,
 * once per copy received (a repeat means the SA missed our ReportResp),
 * and passed once per TID to every session that registered a Report
 * agent (MAD_REG with the Report method alone) and holds a subscription
 * of that trap.  The sessions' own ReportResps are absorbed: the SA must
 * see one answer.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "madcmd/madcmd_int.h"
#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

#define LEAVE_TIMEOUT_MS 1000

/* ---- memberships ---- */

static struct madcmd_member *member_find(struct madcmd_session *s, const uint8_t *mgid,
					 const uint8_t *port_gid)
{
	for (struct madcmd_member *m = s->members; m; m = m->next)
		if (!memcmp(m->mgid, mgid, 16) && !memcmp(m->port_gid, port_gid, 16))
			return m;
	return NULL;
}

static void member_add(struct madcmd_session *s, const struct sa_mcmember *rec, uint8_t bits,
		       const struct mad_addr *sa)
{
	struct madcmd_member *m = member_find(s, rec->mgid, rec->port_gid);

	if (!bits)
		return;
	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return; /* forgotten: its bits are left with the SA's lease */
		memcpy(m->mgid, rec->mgid, 16);
		memcpy(m->port_gid, rec->port_gid, 16);
		m->next = s->members;
		s->members = m;
	}
	m->join_state |= bits;
	m->sa = *sa;
}

static void member_drop(struct madcmd_session *s, const uint8_t *mgid, const uint8_t *port_gid,
			uint8_t bits)
{
	for (struct madcmd_member **pp = &s->members; *pp; pp = &(*pp)->next) {
		struct madcmd_member *m = *pp;

		if (memcmp(m->mgid, mgid, 16) || memcmp(m->port_gid, port_gid, 16))
			continue;
		m->join_state &= (uint8_t)~bits;
		if (!m->join_state) {
			*pp = m->next;
			free(m);
		}
		return;
	}
}

/* The JoinState bits other sessions hold for (MGID, port GID). */
static uint8_t held_by_others(struct madcmd_session *s, const uint8_t *mgid,
			      const uint8_t *port_gid)
{
	struct madcmd *d = s->d;
	uint8_t bits = 0;

	for (unsigned i = 1; i <= d->p.max_sessions; i++) {
		struct madcmd_session *o = d->slots[i];
		struct madcmd_member *m;

		if (!o || o == s || o->kind != MADCMD_SESSION_MAD)
			continue;
		m = member_find(o, mgid, port_gid);
		if (m)
			bits |= m->join_state;
	}
	return bits;
}

/* ---- ServiceRecords ---- */

static struct madcmd_service *service_find(struct madcmd_session *s, uint64_t id,
					   const uint8_t *gid)
{
	for (struct madcmd_service *v = s->services; v; v = v->next)
		if (v->id == id && !memcmp(v->gid, gid, 16))
			return v;
	return NULL;
}

static void service_add(struct madcmd_session *s, const uint8_t *mad, const struct mad_addr *sa)
{
	struct sa_service sv;
	struct madcmd_service *v;

	sa_service_decode(mad + SA_DATA_OFFSET, &sv);
	v = service_find(s, sv.id, sv.gid);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return; /* forgotten: the record is left to its lease */
		v->id = sv.id;
		memcpy(v->gid, sv.gid, 16);
		v->next = s->services;
		s->services = v;
	}
	memcpy(v->rec, mad + SA_DATA_OFFSET, SA_SR_SIZE);
	v->comp_mask = mad_get(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_COMPONENT_MASK);
	v->sa = *sa;
}

static void service_drop(struct madcmd_session *s, uint64_t id, const uint8_t *gid)
{
	for (struct madcmd_service **pp = &s->services; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id && !memcmp((*pp)->gid, gid, 16)) {
			struct madcmd_service *v = *pp;

			*pp = v->next;
			free(v);
			return;
		}
}

static bool service_held_by_others(struct madcmd_session *s, uint64_t id, const uint8_t *gid)
{
	struct madcmd *d = s->d;

	for (unsigned i = 1; i <= d->p.max_sessions; i++) {
		struct madcmd_session *o = d->slots[i];

		if (o && o != s && o->kind == MADCMD_SESSION_MAD && o->port == s->port &&
		    service_find(o, id, gid))
			return true;
	}
	return false;
}

/* ---- subscriptions to SA traps ---- */

/* The InformInfo that identifies a subscription: no Subscribe, QPN, time. */
static void inform_key(const uint8_t *rec, uint8_t *key)
{
	memcpy(key, rec, SA_II_SIZE);
	mad_set_fits(key, sa_ii_fields, SA_II_SUBSCRIBE, 0);
	mad_set_fits(key, sa_ii_fields, SA_II_QPN, 0);
	mad_set_fits(key, sa_ii_fields, SA_II_RESP_TIME_VALUE, 0);
}

static struct madcmd_inform *inform_find(const struct madcmd_session *s, const uint8_t *key)
{
	for (struct madcmd_inform *f = s->informs; f; f = f->next)
		if (!memcmp(f->key, key, SA_II_SIZE))
			return f;
	return NULL;
}

static void inform_add(struct madcmd_session *s, const uint8_t *rec, const struct mad_addr *sa)
{
	uint8_t key[SA_II_SIZE];
	struct madcmd_inform *f;

	inform_key(rec, key);
	f = inform_find(s, key);
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return; /* forgotten: no Reports for it, and no unsubscribe */
		memcpy(f->key, key, SA_II_SIZE);
		f->next = s->informs;
		s->informs = f;
	}
	memcpy(f->rec, rec, SA_II_SIZE);
	f->sa = *sa;
}

static void inform_drop(struct madcmd_session *s, const uint8_t *key)
{
	for (struct madcmd_inform **pp = &s->informs; *pp; pp = &(*pp)->next)
		if (!memcmp((*pp)->key, key, SA_II_SIZE)) {
			struct madcmd_inform *f = *pp;

			*pp = f->next;
			free(f);
			return;
		}
}

static bool inform_held_by_others(struct madcmd_session *s, const uint8_t *key)
{
	struct madcmd *d = s->d;

	for (unsigned i = 1; i <= d->p.max_sessions; i++) {
		struct madcmd_session *o = d->slots[i];

		if (o && o != s && o->kind == MADCMD_SESSION_MAD && o->port == s->port &&
		    inform_find(o, key))
			return true;
	}
	return false;
}

/* Does the session hold a subscription that takes this generic trap? */
static bool inform_wants(const struct madcmd_session *s, uint16_t trap)
{
	for (const struct madcmd_inform *f = s->informs; f; f = f->next) {
		uint64_t t = mad_get(f->key, sa_ii_fields, SA_II_TRAP_NUMBER);

		if (t == trap || t == SA_II_TRAP_ALL)
			return true;
	}
	return false;
}

/* ---- the proxy port ---- */

static void to_session(struct madcmd_session *s, int32_t agent, const void *mad, size_t len,
		       const struct mad_addr *src)
{
	static _Alignas(16) uint8_t buf[sizeof(struct madcmd_mad) + MADCMD_MAD_MAX];
	struct madcmd_mad *m = (struct madcmd_mad *)buf;

	memset(m, 0, sizeof(*m));
	madcmd_hdr_init(&m->h, MADCMD_MAD_RECV, sizeof(*m) + len, 0);
	m->agent = agent;
	m->addr = *src;
	m->len = (uint32_t)len;
	memcpy(m->mad, mad, len);
	madcmd_send(s, m, sizeof(*m) + len);
}

static bool report_seen(struct madcmd_served *p, uint64_t tid, uint16_t lid)
{
	for (unsigned i = 0; i < p->seen_n; i++)
		if (p->seen[i].tid == tid && p->seen[i].lid == lid)
			return true;
	p->seen[p->seen_next].tid = tid;
	p->seen[p->seen_next].lid = lid;
	p->seen_next = (p->seen_next + 1) % MADCMD_SEEN_REPORTS;
	if (p->seen_n < MADCMD_SEEN_REPORTS)
		p->seen_n++;
	return false;
}

/* A Report from the SA: answer it here, pass it to who subscribed. */
static void report(struct madcmd_served *p, int agent, const uint8_t *mad, size_t len,
		   const struct mad_addr *src)
{
	struct madcmd *d = p->d;
	uint8_t resp[MAD_SIZE];
	struct mad_addr to = *src;
	struct sa_notice n;

	if (sa_report_parse(mad, len, &n)) {
		p->nc.report_malformed++;
		return;
	}
	sa_report_resp_build(mad, len, resp);
	if (!to.qkey)
		to.qkey = MAD_QP1_QKEY;
	d->ops->send(d->ops_ctx, p->proxy_portid, agent, resp, MAD_SIZE, &to, 0);
	p->nc.reports++;
	if (report_seen(p, mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), src->lid)) {
		p->nc.report_dups++;
		return;
	}
	/* The host's caches forget the way to a GID that left, and the records naming it. */
	if (n.is_generic && n.has_gid && n.trap_number == SA_TRAP_GID_OUT_OF_SERVICE) {
		madcmd_path_gid_gone(p, n.gid);
		madcmd_service_gid_gone(p, n.gid);
	}
	for (unsigned i = 1; i <= d->p.max_sessions; i++) {
		struct madcmd_session *s = d->slots[i];

		if (!s || s->closing || s->kind != MADCMD_SESSION_MAD || s->port != p ||
		    !s->notice_agents || !inform_wants(s, n.trap_number))
			continue;
		p->nc.forwarded++;
		/* As umad would: on the agent registered for Reports, TID as sent. */
		to_session(s, __builtin_ctz(s->notice_agents), mad, len, src);
	}
}

static void deliver(struct madcmd_served *p, int agent, uint8_t *mad, size_t len,
		    const struct mad_addr *src)
{
	struct madcmd *d = p->d;
	struct madcmd_session *s = NULL;
	struct madcmd_tid *e = NULL;
	uint64_t tid;
	uint32_t low, slot;

	if (len < MAD_HDR_SIZE || len > MADCMD_MAD_MAX) {
		p->c.mads_dropped++;
		return;
	}
	if (p->notice_agent >= 0 && agent == p->notice_agent) {
		report(p, agent, mad, len, src);
		return;
	}
	tid = mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
	low = (uint32_t)tid;
	slot = low >> MADCMD_TID_SLOT_SHIFT;
	if (slot == 0) {
		p->c.mads_received++; /* the SA's answer to a leave of ours */
		return;
	}
	if (slot <= d->p.max_sessions)
		s = d->slots[slot];
	if (s && !s->closing && s->kind == MADCMD_SESSION_MAD && s->port == p)
		e = madcmd_tid_find_daemon(&s->tids, low);
	if (!e) {
		p->c.mads_dropped++;
		return;
	}
	if (e->join && mad_get(mad, mad_hdr_fields, MAD_HDR_R) &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_MC_MEMBER_RECORD &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_STATUS) == 0 &&
	    len >= SA_DATA_OFFSET + SA_MCMR_SIZE) {
		struct sa_mcmember rec;

		/* The SA's record: its MGID even when the join asked for a new one. */
		sa_mcmember_decode(mad + SA_DATA_OFFSET, &rec);
		member_add(s, &rec, e->join_state, &e->to);
		e->join = false;
	}
	if (e->inform && mad_get(mad, mad_hdr_fields, MAD_HDR_R) &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_INFORM_INFO &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_STATUS) == 0) {
		inform_add(s, e->inform_rec, &e->to);
		e->inform = false;
	}
	mad_set_fits(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID, e->client_tid);
	p->c.mads_received++;
	to_session(s, e->agent, mad, len, src);
	/* Only answers come here (the SA's requests go to the Report agent). */
	madcmd_tid_release(&s->tids, e);
}

/* A MAD too big for our buffer: take it off the queue anyway. */
static void discard(struct madcmd_served *p, size_t len)
{
	struct madcmd *d = p->d;
	void *big = malloc(len ? len : 1);
	struct mad_addr src;
	size_t got;
	int agent;

	if (big)
		d->ops->recv(d->ops_ctx, p->proxy_portid, big, len, &got, &agent, &src);
	free(big);
	p->c.mads_dropped++;
}

static void proxy_readable(struct mad_loop *l, int fd, void *arg)
{
	static _Alignas(16) uint8_t buf[MADCMD_MAD_MAX];
	struct madcmd_served *p = arg;
	struct madcmd *d = p->d;

	for (int i = 0; i < 64; i++) {
		struct mad_addr src;
		size_t len = 0;
		int agent = -1;
		int rc =
		    d->ops->recv(d->ops_ctx, p->proxy_portid, buf, sizeof(buf), &len, &agent, &src);

		if (rc == -ENOSPC) {
			discard(p, len);
			continue;
		}
		if (rc == -ENODEV)
			mad_loop_unwatch_fd(l, fd); /* hung up: the CM port's end says so */
		if (rc)
			return;
		deliver(p, agent, buf, len, &src);
	}
}

int madcmd_proxy_open(struct madcmd_served *p)
{
	struct madcmd *d = p->d;
	const uint32_t mask[4] = {0};
	uint32_t rmask[4] = {0};
	int rc;

	p->notice_agent = -1;
	p->proxy_portid = d->ops->open_port(d->ops_ctx, p->attr.ca_name, p->attr.portnum);
	if (p->proxy_portid < 0)
		return p->proxy_portid;
	rc = d->ops->register_agent(d->ops_ctx, p->proxy_portid, MAD_CLASS_SUBN_ADM,
				    MAD_CLASS_VERSION_SA, 0, mask);
	if (rc < 0)
		goto fail;
	p->proxy_agent = rc;
	/*
	 * The SA's Reports: an agent of their own, so that a port whose
	 * Report method is taken (by another program) still proxies queries.
	 */
	mad_method_mask_set(rmask, MAD_METHOD_REPORT);
	p->notice_agent = d->ops->register_agent(d->ops_ctx, p->proxy_portid, MAD_CLASS_SUBN_ADM,
						 MAD_CLASS_VERSION_SA, 0, rmask);
	if (p->notice_agent < 0) {
		madcmd_log(LOG_INFO, "%s/%d: no SA notices (Report method: %s)", p->attr.ca_name,
			   p->attr.portnum, strerror(-p->notice_agent));
		p->notice_agent = -1;
	}
	p->proxy_fd = d->ops->get_fd(d->ops_ctx, p->proxy_portid);
	if (p->proxy_fd < 0) {
		rc = p->proxy_fd;
		goto fail;
	}
	rc = mad_loop_watch_fd(d->loop, p->proxy_fd, proxy_readable, p);
	if (rc)
		goto fail;
	p->proxy_ok = true;
	return 0;
fail:
	d->ops->close_port(d->ops_ctx, p->proxy_portid);
	p->proxy_portid = -1;
	return rc;
}

void madcmd_proxy_close(struct madcmd_served *p)
{
	struct madcmd *d = p->d;

	if (!p->proxy_ok)
		return;
	mad_loop_unwatch_fd(d->loop, p->proxy_fd);
	if (p->notice_agent >= 0)
		d->ops->unregister_agent(d->ops_ctx, p->proxy_portid, p->notice_agent);
	d->ops->unregister_agent(d->ops_ctx, p->proxy_portid, p->proxy_agent);
	d->ops->close_port(d->ops_ctx, p->proxy_portid);
	p->proxy_ok = false;
}

/* ---- session messages ---- */

void madcmd_mad_reg(struct madcmd_session *s, const struct madcmd_mad_reg *m)
{
	struct madcmd_mad_reg_rep r;
	uint32_t report[4] = {0};
	bool notices;
	int rc = -EINVAL;

	memset(&r, 0, sizeof(r));
	madcmd_hdr_init(&r.h, MADCMD_MAD_REG_REP, sizeof(r), m->h.seq);
	/*
	 * Requesters of the SA, and receivers of its Reports (the Report
	 * method alone): nothing else unsolicited is proxied.
	 */
	mad_method_mask_set(report, MAD_METHOD_REPORT);
	notices = !memcmp(m->method_mask, report, sizeof(report));
	if (m->mgmt_class == MAD_CLASS_SUBN_ADM && m->class_version == MAD_CLASS_VERSION_SA &&
	    m->rmpp_version == 0 &&
	    (notices ||
	     !(m->method_mask[0] | m->method_mask[1] | m->method_mask[2] | m->method_mask[3]))) {
		rc = -ENOSPC;
		/* One Report agent a session, as umad gives one a port; none without ours. */
		if (notices && (s->notice_agents || s->port->notice_agent < 0))
			rc = -EBUSY;
		for (int id = 1; id < 32 && rc == -ENOSPC; id++)
			if (!(s->agents & (1u << id))) {
				s->agents |= 1u << id;
				if (notices)
					s->notice_agents |= 1u << id;
				rc = id;
			}
	}
	r.rc = rc;
	madcmd_send(s, &r, sizeof(r));
}

/*
 * A request the SA must not see (a Delete all of whose bits others still
 * hold, a subscription the daemon's port already has): answered here
 * with a GetResp echoing it.
 */
static void answer_locally(struct madcmd_session *s, const struct madcmd_mad *m)
{
	uint8_t resp[MADCMD_MAD_MAX];

	memcpy(resp, m->mad, m->len);
	mad_set_fits(resp, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set_fits(resp, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET_RESP & 0x7f);
	mad_set_fits(resp, mad_hdr_fields, MAD_HDR_STATUS, 0);
	s->port->c.mads_local++;
	to_session(s, m->agent, resp, m->len, &m->addr);
}

void madcmd_mad_send(struct madcmd_session *s, const struct madcmd_mad *m)
{
	struct madcmd_served *p = s->port;
	struct madcmd *d = s->d;
	uint8_t mad[MAD_SIZE];
	struct madcmd_tid *e;
	uint64_t tid;
	int rc;

	/*
	 * No reply exists for a send (umad's send completes at once): a send
	 * refused here is counted and the client's timeout covers it.
	 */
	if (m->agent < 1 || m->agent > 31 || !(s->agents & (1u << m->agent)) || m->len > MAD_SIZE ||
	    mad_get(m->mad, mad_hdr_fields, MAD_HDR_MGMT_CLASS) != MAD_CLASS_SUBN_ADM) {
		p->c.mads_dropped++;
		return;
	}
	if (mad_get(m->mad, mad_hdr_fields, MAD_HDR_R) &&
	    mad_get(m->mad, mad_hdr_fields, MAD_HDR_METHOD) == MAD_METHOD_REPORT) {
		/* A session's ReportResp: the daemon answered the SA already. */
		p->nc.resps_absorbed++;
		return;
	}
	memcpy(mad, m->mad, m->len);
	tid = mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
	e = madcmd_tid_entry(&s->tids, s->slot, tid, mad_timer_now(mad_loop_timers(d->loop)));
	if (!e) {
		p->c.mads_dropped++; /* out of memory: the client's timeout covers it */
		return;
	}
	e->agent = m->agent;
	e->inform = false;
	if (!mad_get(mad, mad_hdr_fields, MAD_HDR_R) &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD) == MAD_METHOD_SET &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_INFORM_INFO &&
	    m->len >= SA_DATA_OFFSET + SA_II_SIZE) {
		bool on = mad_get(mad + SA_DATA_OFFSET, sa_ii_fields, SA_II_SUBSCRIBE) != 0;
		uint8_t key[SA_II_SIZE];

		inform_key(mad + SA_DATA_OFFSET, key);
		if (!on)
			inform_drop(s, key);
		/*
		 * A session subscribing again what it holds renews it after
		 * the port came back or the SM asked (the SA may have lost it):
		 * that one goes to the SA, whoever else holds it.
		 */
		if (!(on && inform_find(s, key)) && inform_held_by_others(s, key)) {
			/* The SA has it (or must keep it) for the daemon's port. */
			if (on)
				inform_add(s, mad + SA_DATA_OFFSET, &m->addr);
			p->nc.subs_local++;
			madcmd_tid_release(&s->tids, e);
			answer_locally(s, m);
			return;
		}
		if (on) {
			e->inform = true;
			memcpy(e->inform_rec, mad + SA_DATA_OFFSET, SA_II_SIZE);
			e->to = m->addr;
		}
		p->nc.subs_sent++;
	}
	if (!mad_get(mad, mad_hdr_fields, MAD_HDR_R) &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_MC_MEMBER_RECORD &&
	    m->len >= SA_DATA_OFFSET + SA_MCMR_SIZE) {
		uint8_t method = (uint8_t)mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD);
		struct sa_mcmember rec;

		sa_mcmember_decode(mad + SA_DATA_OFFSET, &rec);
		if (method == MAD_METHOD_SET) {
			e->join = true;
			e->join_state = rec.join_state;
			e->to = m->addr;
		} else if (method == MAD_METHOD_DELETE) {
			uint8_t held = held_by_others(s, rec.mgid, rec.port_gid) & rec.join_state;

			e->join = false;
			member_drop(s, rec.mgid, rec.port_gid, rec.join_state);
			if (held && held == rec.join_state) {
				madcmd_tid_release(&s->tids, e);
				answer_locally(s, m);
				return;
			}
			if (held)
				mad_set_fits(mad + SA_DATA_OFFSET, sa_mcmr_fields,
					     SA_MCMR_JOIN_STATE, rec.join_state & ~held);
		}
	}
	if (!mad_get(mad, mad_hdr_fields, MAD_HDR_R) &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_SERVICE_RECORD &&
	    m->len >= SA_DATA_OFFSET + SA_SR_SIZE) {
		uint8_t method = (uint8_t)mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD);
		struct sa_service sv;

		sa_service_decode(mad + SA_DATA_OFFSET, &sv);
		/* The host's cached resolutions this record may change go (service_query.c). */
		if (method == MAD_METHOD_SET || method == MAD_METHOD_DELETE)
			madcmd_service_changed(p, &sv);
		if (method == MAD_METHOD_SET) {
			service_add(s, mad, &m->addr);
		} else if (method == MAD_METHOD_DELETE) {
			service_drop(s, sv.id, sv.gid);
			if (service_held_by_others(s, sv.id, sv.gid)) {
				madcmd_tid_release(&s->tids, e);
				answer_locally(s, m);
				return;
			}
		}
	}
	mad_set_fits(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID, (tid & ~0xffffffffull) | e->dtid);
	rc = d->ops->send(d->ops_ctx, p->proxy_portid, p->proxy_agent, mad, m->len, &m->addr,
			  m->timeout_ms);
	if (rc) {
		p->c.mads_dropped++;
		madcmd_tid_release(&s->tids, e); /* no answer will come */
	} else
		p->c.mads_sent++;
}

/* Leave, for a closed session, the bits nobody else holds. */
static void leave(struct madcmd_served *p, const struct madcmd_member *mb, uint8_t bits)
{
	struct madcmd *d = p->d;
	struct mad_port_attr a;
	struct sa_mcmember rec;
	struct mad_addr to = mb->sa;
	uint8_t mad[MAD_SIZE];

	memset(&rec, 0, sizeof(rec));
	memcpy(rec.mgid, mb->mgid, 16);
	memcpy(rec.port_gid, mb->port_gid, 16);
	rec.join_state = bits;
	/* The SA where it is now (the SM may have moved since the join). */
	if (d->ops->query_port(d->ops_ctx, p->attr.ca_name, p->attr.portnum, &a) == 0 && a.sm_lid) {
		to.lid = a.sm_lid;
		to.sl = a.sm_sl;
	}
	d->internal_tid = (d->internal_tid + 1) & MADCMD_TID_COUNTER_MASK;
	if (!d->internal_tid)
		d->internal_tid = 1;
	if (sa_mad_init(mad, MAD_METHOD_DELETE, SA_ATTR_MC_MEMBER_RECORD, d->internal_tid,
			SA_MCMR_COMP_MGID | SA_MCMR_COMP_PORT_GID | SA_MCMR_COMP_JOIN_STATE) ||
	    sa_mcmember_encode(&rec, mad + SA_DATA_OFFSET))
		return;
	if (d->ops->send(d->ops_ctx, p->proxy_portid, p->proxy_agent, mad, MAD_SIZE, &to,
			 LEAVE_TIMEOUT_MS) == 0)
		p->c.leaves++;
}

/* Delete, for a closed session, a ServiceRecord nobody else holds. */
static void service_delete(struct madcmd_served *p, const struct madcmd_service *v)
{
	struct madcmd *d = p->d;
	uint8_t mad[MAD_SIZE];

	d->internal_tid = (d->internal_tid + 1) & MADCMD_TID_COUNTER_MASK;
	if (!d->internal_tid)
		d->internal_tid = 1;
	if (sa_mad_init(mad, MAD_METHOD_DELETE, SA_ATTR_SERVICE_RECORD, d->internal_tid,
			v->comp_mask))
		return;
	memcpy(mad + SA_DATA_OFFSET, v->rec, SA_SR_SIZE);
	if (d->ops->send(d->ops_ctx, p->proxy_portid, p->proxy_agent, mad, MAD_SIZE, &v->sa,
			 LEAVE_TIMEOUT_MS) == 0)
		p->c.leaves++;
}

/* Unsubscribe, for a closed session, what nobody else holds. */
static void unsubscribe(struct madcmd_served *p, const struct madcmd_inform *f)
{
	struct madcmd *d = p->d;
	struct mad_port_attr a;
	struct mad_addr to = f->sa;
	uint8_t mad[MAD_SIZE];

	/* The SA where it is now (the SM may have moved since). */
	if (d->ops->query_port(d->ops_ctx, p->attr.ca_name, p->attr.portnum, &a) == 0 && a.sm_lid) {
		to.lid = a.sm_lid;
		to.sl = a.sm_sl;
	}
	d->internal_tid = (d->internal_tid + 1) & MADCMD_TID_COUNTER_MASK;
	if (!d->internal_tid)
		d->internal_tid = 1;
	if (sa_mad_init(mad, MAD_METHOD_SET, SA_ATTR_INFORM_INFO, d->internal_tid, 0))
		return;
	/*
	 * The subscription's own InformInfo with Subscribe 0: OpenSM finds
	 * what to remove by comparing it, QPN and RespTimeValue included.
	 */
	memcpy(mad + SA_DATA_OFFSET, f->rec, SA_II_SIZE);
	mad_set_fits(mad + SA_DATA_OFFSET, sa_ii_fields, SA_II_SUBSCRIBE, 0);
	if (d->ops->send(d->ops_ctx, p->proxy_portid, p->proxy_agent, mad, MAD_SIZE, &to,
			 LEAVE_TIMEOUT_MS) == 0)
		p->nc.unsubs++;
}

void madcmd_mad_session_end(struct madcmd_session *s)
{
	while (s->members) {
		struct madcmd_member *m = s->members;
		uint8_t bits = m->join_state & (uint8_t)~held_by_others(s, m->mgid, m->port_gid);

		s->members = m->next;
		if (bits && s->port->proxy_ok)
			leave(s->port, m, bits);
		free(m);
	}
	while (s->services) {
		struct madcmd_service *v = s->services;

		s->services = v->next;
		if (s->port->proxy_ok && !service_held_by_others(s, v->id, v->gid))
			service_delete(s->port, v);
		free(v);
	}
	while (s->informs) {
		struct madcmd_inform *f = s->informs;

		s->informs = f->next;
		if (s->port->proxy_ok && !inform_held_by_others(s, f->key))
			unsubscribe(s->port, f);
		free(f);
	}
	s->notice_agents = 0;
	madcmd_tid_map_clear(&s->tids);
}
