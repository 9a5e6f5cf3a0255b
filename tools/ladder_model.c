/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm ladder's model: from a capture's MADs to lanes, arrows,
 * connections and timeouts (see ladder_model.h).  The capture is read by
 * decode_pcap() and each MAD checked by layouts_plan(), as `madcm decode`
 * does; this file only interprets what they hand over.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "mad/mad_wire.h"
#include "sa/sa_wire.h"
#include "tools/decode.h"
#include "tools/ladder_build.h"
#include "tools/ladder_model.h"
#include "tools/layouts.h"

bool ladder_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return true;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * size);
	if (!np)
		return false;
	*p = np;
	*cap = ncap;
	return true;
}

static int64_t ts_diff_ns(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(a->tv_sec - b->tv_sec) * 1000000000 + (a->tv_nsec - b->tv_nsec);
}

void ladder_format_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000)
		snprintf(buf, len, "%.3g s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.3g ms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, len, "%.3g us", (double)ns / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 " ns", ns);
}

const char *ladder_flag_name(unsigned flag)
{
	switch (flag) {
	case LADDER_RETRY:
		return "retry";
	case LADDER_DUPLICATE:
		return "duplicate";
	case LADDER_CROSSED:
		return "crossed";
	}
	return NULL;
}

/* ---- reading the capture ---- */

static void on_mad(struct decode_state *st, const struct decode_src *src, const uint8_t *mad,
		   size_t len)
{
	struct builder *b = st->ctx;
	struct mad_plan plan;
	const char *why = NULL;
	struct raw *r;

	st->mads++;
	b->m->mads++;
	if (!b->have_start) {
		b->m->start = src->ts;
		b->have_start = true;
	}
	b->m->end_ns = ts_diff_ns(&src->ts, &b->m->start);
	if (layouts_plan(mad, len, &plan, &why)) {
		b->m->malformed++;
		if (b->err)
			fprintf(b->err, "%s: %s: frame %u: malformed MAD: %s, skipped\n", st->prog,
				b->name, src->frame, why);
		return;
	}
	if (plan.mgmt_class == MAD_CLASS_CM ? !plan.attr
					    : plan.mgmt_class != MAD_CLASS_SUBN_ADM || !b->o->sa)
		return;
	if (!ladder_grow((void **)&b->r, &b->cap, b->n + 1, sizeof(*b->r))) {
		b->error = -ENOMEM;
		return;
	}
	r = &b->r[b->n++];
	memset(r, 0, sizeof(*r));
	memcpy(r->mad, mad, len < MAD_SIZE ? len : MAD_SIZE);
	r->pkt = src->pkt;
	r->layout = plan.mgmt_class == MAD_CLASS_CM ? plan.attr : NULL;
	r->a.frame = src->frame;
	r->a.ts = src->ts;
	r->a.t_ns = b->m->end_ns;
	r->a.mgmt_class = plan.mgmt_class;
	r->a.method = plan.method;
	r->a.attr_id = plan.attr_id;
	r->a.tid = mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
	r->a.message = plan.message ? plan.message : plan.attr_name ? plan.attr_name : "MAD";
	r->a.conn = -1;
	r->ep[0] = r->ep[1] = -1;
	r->req = -1;
	r->keep = true;
}

/* ---- lanes ---- */

static bool gid_zero(const uint8_t gid[16])
{
	for (int i = 0; i < 16; i++)
		if (gid[i])
			return false;
	return true;
}

static bool map_lid(struct builder *b, uint16_t lid, const uint8_t gid[16])
{
	if (!lid || lid >= 0xc000 || gid_zero(gid))
		return true;
	for (size_t i = 0; i < b->nlg; i++)
		if (b->lg[i].lid == lid)
			return true; /* the first one seen wins */
	if (!ladder_grow((void **)&b->lg, &b->caplg, b->nlg + 1, sizeof(*b->lg)))
		return false;
	b->lg[b->nlg].lid = lid;
	memcpy(b->lg[b->nlg].gid, gid, 16);
	b->nlg++;
	return true;
}

/* LID -> GID from GRHs and from the REQs' primary path. */
static int collect_lid_gids(struct builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct raw *r = &b->r[i];
		uint8_t gid[16];

		if (r->pkt.grh_present && (!map_lid(b, r->pkt.slid, r->pkt.sgid) ||
					   !map_lid(b, r->pkt.dlid, r->pkt.dgid)))
			return -ENOMEM;
		if (r->layout != &cm_req_layout ||
		    !mad_get(cm_msg(r), cm_req_fields, CM_REQ_PRIMARY_SUBNET_LOCAL))
			continue;
		mad_get_bytes(cm_msg(r), cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_GID, gid);
		if (!map_lid(
			b,
			(uint16_t)mad_get(cm_msg(r), cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_LID),
			gid))
			return -ENOMEM;
		mad_get_bytes(cm_msg(r), cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_GID, gid);
		if (!map_lid(
			b,
			(uint16_t)mad_get(cm_msg(r), cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_LID),
			gid))
			return -ENOMEM;
	}
	return 0;
}

/* The lane of a port: by GID when the GRH or a LID's GID tells it, else LID. */
static int lane_of(struct builder *b, uint16_t lid, bool has_gid, const uint8_t *gid_in)
{
	struct ladder_model *m = b->m;
	const uint8_t *gid = has_gid && !gid_zero(gid_in) ? gid_in : NULL;
	struct ladder_lane *l;

	for (size_t i = 0; !gid && i < b->nlg; i++)
		if (b->lg[i].lid == lid)
			gid = b->lg[i].gid;
	for (size_t i = 0; i < m->nlanes; i++) {
		l = &m->lanes[i];
		if (gid ? l->has_gid && !memcmp(l->gid, gid, 16) : !l->has_gid && l->lid == lid) {
			if (!l->lid)
				l->lid = lid;
			return (int)i;
		}
	}
	if (!ladder_grow((void **)&m->lanes, &b->caplanes, m->nlanes + 1, sizeof(*m->lanes)))
		return -ENOMEM;
	l = &m->lanes[m->nlanes];
	memset(l, 0, sizeof(*l));
	l->lid = lid;
	if (gid) {
		l->has_gid = true;
		memcpy(l->gid, gid, 16);
	}
	return (int)m->nlanes++;
}

static void lane_titles(struct builder *b)
{
	const struct madcm_addr_table *t = b->o->hosts;

	for (size_t i = 0; i < b->m->nlanes; i++) {
		struct ladder_lane *l = &b->m->lanes[i];

		if (t && l->has_gid)
			for (size_t k = 0; k < t->n && !l->name[0]; k++)
				if (t->e[k].family == AF_UNSPEC && !memcmp(t->e[k].gid, l->gid, 16))
					snprintf(l->name, sizeof(l->name), "%s", t->e[k].name);
		if (t && l->has_gid && !l->ip[0]) {
			const struct madcm_addr_entry *e = madcm_addr_table_ip(t, l->gid, AF_INET);

			if (!e)
				e = madcm_addr_table_ip(t, l->gid, AF_INET6);
			if (e)
				inet_ntop(e->family, e->ip, l->ip, sizeof(l->ip));
		}
		if (l->name[0])
			snprintf(l->title, sizeof(l->title), "%s", l->name);
		else if (l->ip[0])
			snprintf(l->title, sizeof(l->title), "%s", l->ip);
		else if (l->sa)
			snprintf(l->title, sizeof(l->title), "SA (LID %u)", l->lid);
		else if (l->has_gid)
			inet_ntop(AF_INET6, l->gid, l->title, sizeof(l->title));
		else
			snprintf(l->title, sizeof(l->title), "LID %u", l->lid);
	}
}

static int assign_lanes(struct builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct raw *r = &b->r[i];
		int from = lane_of(b, r->pkt.slid, r->pkt.grh_present, r->pkt.sgid);
		int to = from < 0 ? from : lane_of(b, r->pkt.dlid, r->pkt.grh_present, r->pkt.dgid);
		struct ip_cm_hdr_view ip;

		if (to < 0)
			return to;
		r->a.from = from;
		r->a.to = to;
		if (!r->layout) {
			b->m->lanes[sa_to_sm(r->a.method) ? to : from].sa = true;
			continue;
		}
		if ((r->layout == &cm_req_layout || r->layout == &cm_sidr_req_layout) &&
		    decode_ip_cm_hdr(r->layout, cm_msg(r), &ip)) {
			if (!b->m->lanes[from].ip[0])
				snprintf(b->m->lanes[from].ip, sizeof(b->m->lanes[from].ip), "%s",
					 ip.src);
			if (!b->m->lanes[to].ip[0])
				snprintf(b->m->lanes[to].ip, sizeof(b->m->lanes[to].ip), "%s",
					 ip.dst);
		}
	}
	lane_titles(b);
	return 0;
}

/* ---- connections: union-find over (lane, comm ID) ---- */

static int ep_find(struct builder *b, int i)
{
	while (b->ep[i].parent != i) {
		b->ep[i].parent = b->ep[b->ep[i].parent].parent;
		i = b->ep[i].parent;
	}
	return i;
}

static int ep_get(struct builder *b, int lane, uint32_t id, bool sidr)
{
	if (!id)
		return -1;
	for (size_t i = 0; i < b->nep; i++)
		if (b->ep[i].lane == lane && b->ep[i].id == id && b->ep[i].sidr == sidr)
			return (int)i;
	if (!ladder_grow((void **)&b->ep, &b->capep, b->nep + 1, sizeof(*b->ep)))
		return -2;
	b->ep[b->nep] =
	    (struct endpoint){.lane = lane, .id = id, .sidr = sidr, .parent = (int)b->nep};
	return (int)b->nep++;
}

/* Comm IDs of a CM message: local (sender's) and remote (receiver's). */
static void comm_ids(const struct raw *r, uint32_t *local, uint32_t *remote)
{
	const uint8_t *msg = cm_msg(r);

	*local = *remote = 0;
	if (r->layout == &cm_sidr_req_layout || r->layout == &cm_sidr_rep_layout) {
		*local = (uint32_t)mad_get(msg, cm_sidr_req_fields, CM_SIDR_REQ_REQUEST_ID);
		return;
	}
	if (r->layout == &cm_class_port_info_layout)
		return;
	/* Every other message starts with the local comm ID, then the remote. */
	*local = (uint32_t)mad_get(msg, cm_mra_fields, CM_MRA_LOCAL_COMM_ID);
	if (r->layout != &cm_req_layout)
		*remote = (uint32_t)mad_get(msg, cm_mra_fields, CM_MRA_REMOTE_COMM_ID);
}

static void conn_note(struct ladder_conn *c, const struct raw *r)
{
	const uint8_t *msg = cm_msg(r);
	bool from_active;

	if (r->layout == &cm_req_layout && !c->has_sid) {
		c->active_lane = r->a.from;
		c->passive_lane = r->a.to;
		c->active_id = r->a.local_id;
		c->has_sid = true;
		c->service_id = mad_get(msg, cm_req_fields, CM_REQ_SERVICE_ID);
		return;
	}
	if (r->layout == &cm_sidr_req_layout || r->layout == &cm_sidr_rep_layout) {
		c->sidr = true;
		c->active_id = r->a.local_id;
		if (c->active_lane < 0) {
			bool req = r->layout == &cm_sidr_req_layout;

			c->active_lane = req ? r->a.from : r->a.to;
			c->passive_lane = req ? r->a.to : r->a.from;
		}
		if (!c->has_sid) {
			c->has_sid = true;
			c->service_id =
			    r->layout == &cm_sidr_req_layout
				? mad_get(msg, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID)
				: mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_SERVICE_ID);
		}
		return;
	}
	/* Joined mid-connection: the first sender seen plays the active side. */
	if (c->active_lane < 0) {
		c->active_lane = r->a.from;
		c->passive_lane = r->a.to;
	}
	from_active = r->a.from == c->active_lane;
	if (!c->active_id)
		c->active_id = from_active ? r->a.local_id : r->a.remote_id;
	if (!c->passive_id)
		c->passive_id = from_active ? r->a.remote_id : r->a.local_id;
}

static int find_conns(struct builder *b)
{
	struct ladder_model *m = b->m;
	int *conn_of_root;

	for (size_t i = 0; i < b->n; i++) {
		struct raw *r = &b->r[i];
		bool sidr = r->layout == &cm_sidr_req_layout || r->layout == &cm_sidr_rep_layout;

		if (!r->layout)
			continue;
		comm_ids(r, &r->a.local_id, &r->a.remote_id);
		if (r->layout == &cm_sidr_rep_layout) {
			r->ep[0] = ep_get(b, r->a.to, r->a.local_id, true);
		} else {
			r->ep[0] = ep_get(b, r->a.from, r->a.local_id, sidr);
			if (r->ep[0] >= -1)
				r->ep[1] = ep_get(b, r->a.to, r->a.remote_id, false);
		}
		if (r->ep[0] < -1 || r->ep[1] < -1)
			return -ENOMEM;
		if (r->ep[0] >= 0 && r->ep[1] >= 0)
			b->ep[ep_find(b, r->ep[0])].parent = ep_find(b, r->ep[1]);
	}
	conn_of_root = malloc((b->nep ? b->nep : 1) * sizeof(*conn_of_root));
	if (!conn_of_root)
		return -ENOMEM;
	for (size_t i = 0; i < b->nep; i++)
		conn_of_root[i] = -1;
	for (size_t i = 0; i < b->n; i++) {
		struct raw *r = &b->r[i];
		int e = r->ep[0] >= 0 ? r->ep[0] : r->ep[1];
		int root;

		if (e < 0)
			continue;
		root = ep_find(b, e);
		if (conn_of_root[root] < 0) {
			if (!ladder_grow((void **)&m->conns, &b->capconns, m->nconns + 1,
					 sizeof(*m->conns))) {
				free(conn_of_root);
				return -ENOMEM;
			}
			m->conns[m->nconns] =
			    (struct ladder_conn){.active_lane = -1, .passive_lane = -1};
			conn_of_root[root] = (int)m->nconns++;
		}
		r->a.conn = conn_of_root[root];
		conn_note(&m->conns[r->a.conn], r);
	}
	free(conn_of_root);
	/* Each message's connection REQ, for the timers it set. */
	for (size_t i = 0; i < b->n; i++) {
		if (b->r[i].a.conn < 0)
			continue;
		for (size_t k = 0; k < b->n; k++)
			if (b->r[k].layout == &cm_req_layout && b->r[k].a.conn == b->r[i].a.conn) {
				b->r[i].req = (int)k;
				break;
			}
	}
	return 0;
}

/* ---- filters ---- */

static bool passes_filters(const struct builder *b, const struct raw *r)
{
	const struct ladder_opts *o = b->o;
	const struct ladder_conn *c = r->a.conn >= 0 ? &b->m->conns[r->a.conn] : NULL;

	if (o->has_from && r->a.t_ns < o->from_ns)
		return false;
	if (o->has_to && r->a.t_ns > o->to_ns)
		return false;
	if (!r->layout) /* SA queries: only the time window applies */
		return true;
	if (o->has_comm_id && (!c || (c->active_id != o->comm_id && c->passive_id != o->comm_id &&
				      r->a.local_id != o->comm_id && r->a.remote_id != o->comm_id)))
		return false;
	if (o->has_service_id && (!c || !c->has_sid || c->service_id != o->service_id))
		return false;
	return true;
}

/* Keep what the filters let through, and the lanes and connections it uses. */
static int compact(struct builder *b)
{
	struct ladder_model *m = b->m;
	int *lane_map = calloc(m->nlanes + 1, sizeof(int));
	int *conn_map = calloc(m->nconns + 1, sizeof(int));
	int *arrow_map = calloc(b->n + 1, sizeof(int));
	struct ladder_lane *lanes = NULL;
	struct ladder_conn *conns = NULL;
	size_t nl = 0, nc = 0, nt = 0;
	int ret = -ENOMEM;

	if (!lane_map || !conn_map || !arrow_map)
		goto out;
	m->arrows = calloc(b->n + 1, sizeof(*m->arrows));
	if (!m->arrows)
		goto out;
	for (size_t i = 0; i < m->nlanes; i++)
		lane_map[i] = -1;
	for (size_t i = 0; i < m->nconns; i++)
		conn_map[i] = -1;
	for (size_t i = 0; i < b->n; i++) {
		struct raw *r = &b->r[i];

		arrow_map[i] = -1;
		if (!r->keep || !passes_filters(b, r))
			continue;
		if (lane_map[r->a.from] < 0)
			lane_map[r->a.from] = (int)nl++;
		if (lane_map[r->a.to] < 0)
			lane_map[r->a.to] = (int)nl++;
		if (r->a.conn >= 0 && conn_map[r->a.conn] < 0)
			conn_map[r->a.conn] = (int)nc++;
		arrow_map[i] = (int)m->narrows;
		m->arrows[m->narrows++] = r->a;
	}
	for (size_t i = 0; i < m->ntimeouts; i++) {
		struct ladder_timeout t = m->timeouts[i];

		if (arrow_map[t.arrow] < 0 || (b->o->has_to && t.t_ns > b->o->to_ns))
			continue;
		t.arrow = arrow_map[t.arrow];
		m->timeouts[nt++] = t;
	}
	m->ntimeouts = nt;
	/* Lanes and connections in the order the kept arrows first use them. */
	lanes = calloc(nl + 1, sizeof(*lanes));
	conns = calloc(nc + 1, sizeof(*conns));
	if (!lanes || !conns)
		goto out;
	for (size_t i = 0; i < m->nlanes; i++)
		if (lane_map[i] >= 0)
			lanes[lane_map[i]] = m->lanes[i];
	for (size_t i = 0; i < m->nconns; i++)
		if (conn_map[i] >= 0)
			conns[conn_map[i]] = m->conns[i];
	free(m->lanes);
	free(m->conns);
	m->lanes = lanes;
	m->conns = conns;
	lanes = NULL;
	conns = NULL;
	for (size_t i = 0; i < m->narrows; i++) {
		struct ladder_arrow *a = &m->arrows[i];

		a->from = lane_map[a->from];
		a->to = lane_map[a->to];
		a->conn = a->conn >= 0 ? conn_map[a->conn] : -1;
	}
	for (size_t i = 0; i < m->ntimeouts; i++) {
		struct ladder_timeout *t = &m->timeouts[i];

		t->lane = lane_map[t->lane];
		t->conn = t->conn >= 0 ? conn_map[t->conn] : -1;
	}
	for (size_t i = 0; i < nc; i++) {
		struct ladder_conn *c = &m->conns[i];

		c->colour = (unsigned)i;
		c->active_lane = c->active_lane >= 0 ? lane_map[c->active_lane] : -1;
		c->passive_lane = c->passive_lane >= 0 ? lane_map[c->passive_lane] : -1;
	}
	m->nlanes = nl;
	m->nconns = nc;
	ret = 0;
out:
	free(lanes);
	free(conns);
	free(lane_map);
	free(conn_map);
	free(arrow_map);
	return ret;
}

/* ---- the whole ---- */

int ladder_model_build(struct ladder_model *m, const struct ladder_opts *o, const char *name,
		       const uint8_t *buf, size_t len, FILE *err)
{
	static const struct ladder_opts none;
	struct builder b = {.m = m, .o = o ? o : &none, .err = err, .name = name ? name : "-"};
	struct decode_state st;
	FILE *null = NULL;
	int ret;

	memset(m, 0, sizeof(*m));
	if (!mad_pcap_is_pcap(buf, len))
		return -EPROTO;
	if (!err) {
		null = fopen("/dev/null", "w");
		if (!null)
			return -errno;
		err = null;
		b.err = NULL;
	}
	decode_state_init(&st, err, err, false);
	st.prog = "madcm ladder";
	st.on_mad = on_mad;
	st.ctx = &b;
	decode_pcap(&st, b.name, buf, len);
	m->malformed += st.malformed;
	ret = b.error;
	if (!ret)
		ret = collect_lid_gids(&b);
	if (!ret)
		ret = assign_lanes(&b);
	if (!ret)
		ret = find_conns(&b);
	if (!ret) {
		ladder_find_repeats(&b);
		ladder_find_crossed(&b);
		for (size_t i = 0; i < b.n; i++)
			ladder_label(&b.r[i]);
		ret = ladder_find_timeouts(&b);
	}
	if (!ret)
		ret = compact(&b);
	free(b.r);
	free(b.ep);
	free(b.lg);
	if (null)
		fclose(null);
	if (ret)
		ladder_model_free(m);
	return ret;
}

void ladder_model_free(struct ladder_model *m)
{
	if (!m)
		return;
	free(m->lanes);
	free(m->arrows);
	free(m->conns);
	free(m->timeouts);
	memset(m, 0, sizeof(*m));
}
