/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm ladder's marks on the model: which MAD is a retry, a duplicate or
 * the echo of a MAD to its own port, which DREQs crossed, where the CM's
 * timers fire unanswered, and each arrow's label.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ladder_build.h"

/* Packet life time as madcm and the kernel derive it: local ACK timeout - 1. */
static uint64_t packet_life_ns(const struct builder *b, const struct raw *r)
{
	unsigned ack;

	if (r->req < 0)
		return 0;
	ack = (unsigned)mad_get(cm_msg(&b->r[r->req]), cm_req_fields,
				CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT);
	return ack ? cm_timeout_ns(ack - 1) : 0;
}

/*
 * How long the sender of `r` waits for an answer before it sends again:
 * 2 packet life times plus the peer's CM response timeout (the kernel's
 * and madcm's rule).  0 when the message sets no timer or the REQ that
 * says how long is not in the capture.
 */
static uint64_t timer_ns(const struct builder *b, const struct raw *r)
{
	const uint8_t *req = r->req >= 0 ? cm_msg(&b->r[r->req]) : NULL;
	unsigned t;

	if (r->layout == &cm_req_layout) {
		t = (unsigned)mad_get(cm_msg(r), cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT);
	} else if (r->layout == &cm_lap_layout) {
		t = (unsigned)mad_get(cm_msg(r), cm_lap_fields, CM_LAP_REMOTE_CM_RESPONSE_TIMEOUT);
	} else if (r->layout == &cm_rep_layout && req) {
		t = (unsigned)mad_get(req, cm_req_fields, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT);
	} else if (r->layout == &cm_dreq_layout && req) {
		bool active = r->a.from == b->r[r->req].a.from;

		t = (unsigned)mad_get(req, cm_req_fields,
				      active ? CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT
					     : CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT);
	} else {
		return 0;
	}
	return 2 * packet_life_ns(b, r) + cm_timeout_ns(t);
}

static bool same_mad(const struct raw *x, const struct raw *y)
{
	return x->a.from == y->a.from && x->a.to == y->a.to && x->a.mgmt_class == y->a.mgmt_class &&
	       x->a.method == y->a.method && x->a.attr_id == y->a.attr_id && x->a.tid == y->a.tid &&
	       x->a.local_id == y->a.local_id && x->a.remote_id == y->a.remote_id;
}

/* The MRA's message_mraed value that `r` would draw, or -1. */
static int mra_ref(const struct raw *r)
{
	if (r->layout == &cm_req_layout)
		return CM_MSG_REF_REQ;
	if (r->layout == &cm_rep_layout)
		return CM_MSG_REF_REP;
	if (r->layout == &cm_lap_layout)
		return CM_MSG_REF_LAP;
	return -1;
}

/* Whether `k`, from the peer, ends the wait of `r`. */
static bool answers(const struct raw *r, const struct raw *k)
{
	const struct mad_layout *l = k->layout;

	if (r->layout == &cm_req_layout)
		return l == &cm_rep_layout || l == &cm_rej_layout;
	if (r->layout == &cm_rep_layout)
		return l == &cm_rtu_layout || l == &cm_rej_layout;
	if (r->layout == &cm_dreq_layout)
		return l == &cm_drep_layout || l == &cm_dreq_layout;
	if (r->layout == &cm_lap_layout)
		return l == &cm_apr_layout;
	return false;
}

static int add_timeout(struct builder *b, size_t i, int64_t at, uint64_t wait, bool mra)
{
	struct ladder_model *m = b->m;
	struct ladder_timeout *t;
	char d[32];

	if (!ladder_grow((void **)&m->timeouts, &b->captimeouts, m->ntimeouts + 1,
			 sizeof(*m->timeouts)))
		return -ENOMEM;
	t = &m->timeouts[m->ntimeouts++];
	memset(t, 0, sizeof(*t));
	t->lane = b->r[i].a.from;
	t->conn = b->r[i].a.conn;
	t->arrow = (int)i;
	t->t_ns = at;
	t->wait_ns = wait;
	t->after_end = at > m->end_ns;
	ladder_format_duration(d, sizeof(d), wait);
	snprintf(t->label, sizeof(t->label), "%s timeout (%s%s)", b->r[i].a.message, d,
		 mra ? " after MRA" : "");
	return 0;
}

static int cmp_timeout(const void *x, const void *y)
{
	const struct ladder_timeout *a = x, *b = y;

	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	return a->arrow - b->arrow;
}

/* Where the timer of each CM message that sets one fires unanswered. */
int ladder_find_timeouts(struct builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct raw *r = &b->r[i];
		uint64_t plt = packet_life_ns(b, r);
		uint64_t wait = timer_ns(b, r);
		int64_t deadline = r->a.t_ns + (int64_t)wait;
		bool fired = true, mra = false;
		int ret;

		if (!r->layout || !wait || r->a.conn < 0 || !r->keep ||
		    (r->a.flags & LADDER_DUPLICATE))
			continue;
		for (size_t k = i + 1; k < b->n; k++) {
			struct raw *x = &b->r[k];

			if (x->a.t_ns > deadline)
				break;
			if (same_mad(r, x)) {
				if (!x->keep || (x->a.flags & LADDER_DUPLICATE))
					continue;     /* the same send seen twice */
				deadline = x->a.t_ns; /* sent again: the timer fired by then */
				break;
			}
			if (x->a.conn != r->a.conn || x->a.from != r->a.to)
				continue;
			if (answers(r, x)) {
				fired = false;
				break;
			}
			if (x->layout == &cm_mra_layout &&
			    (int)mad_get(cm_msg(x), cm_mra_fields, CM_MRA_MESSAGE_MRAED) ==
				mra_ref(r)) {
				unsigned svc = (unsigned)mad_get(cm_msg(x), cm_mra_fields,
								 CM_MRA_SERVICE_TIMEOUT);

				wait = 2 * plt + cm_timeout_ns(svc);
				deadline = x->a.t_ns + (int64_t)wait;
				mra = true;
			}
		}
		if (!fired)
			continue;
		ret = add_timeout(b, i, deadline, wait, mra);
		if (ret)
			return ret;
	}
	if (b->m->ntimeouts)
		qsort(b->m->timeouts, b->m->ntimeouts, sizeof(*b->m->timeouts), cmp_timeout);
	return 0;
}

/* A MAD a port sends itself is captured there twice: going out, coming in. */
#define ECHO_NS 1000000

void ladder_find_repeats(struct builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct raw *r = &b->r[i];

		for (size_t j = i; j-- > 0;) {
			struct raw *p = &b->r[j];
			uint64_t wait;

			if (!p->keep || !same_mad(r, p))
				continue;
			if (r->a.from == r->a.to && !p->echoed && r->a.t_ns - p->a.t_ns < ECHO_NS) {
				p->echoed = true;
				r->keep = false; /* drawn once */
				break;
			}
			r->a.copy = p->a.copy + 1;
			if (!r->layout) /* SA: a request again is the client's retry */
				wait = sa_to_sm(r->a.method) ? 1 : 0;
			else
				wait = timer_ns(b, p);
			r->a.flags |= wait && (uint64_t)(r->a.t_ns - p->a.t_ns) >= wait / 2
					  ? LADDER_RETRY
					  : LADDER_DUPLICATE;
			break;
		}
	}
}

static bool drep_between(const struct builder *b, int conn, int64_t t1, int64_t t2)
{
	for (size_t k = 0; k < b->n; k++)
		if (b->r[k].layout == &cm_drep_layout && b->r[k].a.conn == conn &&
		    b->r[k].a.t_ns > t1 && b->r[k].a.t_ns < t2)
			return true;
	return false;
}

/* Two DREQs of one connection, each side's sent before any DREP. */
void ladder_find_crossed(struct builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct raw *r = &b->r[i];

		if (r->layout != &cm_dreq_layout || r->a.conn < 0)
			continue;
		for (size_t k = 0; k < b->n; k++) {
			struct raw *x = &b->r[k];
			int64_t lo, hi;

			if (x->layout != &cm_dreq_layout || x->a.conn != r->a.conn ||
			    x->a.from != r->a.to || x->a.to != r->a.from)
				continue;
			lo = r->a.t_ns < x->a.t_ns ? r->a.t_ns : x->a.t_ns;
			hi = r->a.t_ns < x->a.t_ns ? x->a.t_ns : r->a.t_ns;
			if (!drep_between(b, r->a.conn, lo, hi)) {
				r->a.flags |= LADDER_CROSSED;
				break;
			}
		}
	}
}

/* ---- labels ---- */

static void label_cm(struct raw *r)
{
	const uint8_t *msg = cm_msg(r);
	const struct mad_layout *l = r->layout;
	struct ladder_arrow *a = &r->a;
	char ids[40], d[32];
	const char *name;

	snprintf(ids, sizeof(ids), "0x%08" PRIx32 "->0x%08" PRIx32, a->local_id, a->remote_id);
	if (l == &cm_req_layout) {
		unsigned t =
		    (unsigned)mad_get(msg, cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT);

		snprintf(a->label, sizeof(a->label), "REQ 0x%08" PRIx32 " qpn 0x%" PRIx64,
			 a->local_id, mad_get(msg, cm_req_fields, CM_REQ_LOCAL_QPN));
		ladder_format_duration(d, sizeof(d), cm_timeout_ns(t));
		snprintf(a->detail, sizeof(a->detail),
			 "sid 0x%016" PRIx64 ", response timeout %u (%s)",
			 mad_get(msg, cm_req_fields, CM_REQ_SERVICE_ID), t, d);
	} else if (l == &cm_rep_layout) {
		snprintf(a->label, sizeof(a->label), "REP %s qpn 0x%" PRIx64, ids,
			 mad_get(msg, cm_rep_fields, CM_REP_LOCAL_QPN));
	} else if (l == &cm_mra_layout) {
		unsigned t = (unsigned)mad_get(msg, cm_mra_fields, CM_MRA_SERVICE_TIMEOUT);

		name = cm_mra_message_name(
		    (unsigned)mad_get(msg, cm_mra_fields, CM_MRA_MESSAGE_MRAED));
		ladder_format_duration(d, sizeof(d), cm_timeout_ns(t));
		snprintf(a->label, sizeof(a->label), "MRA(%s) service timeout %u (%s)",
			 name ? name : "?", t, d);
		snprintf(a->detail, sizeof(a->detail), "%s", ids);
	} else if (l == &cm_rej_layout) {
		unsigned reason = (unsigned)mad_get(msg, cm_rej_fields, CM_REJ_REASON);
		const char *rn = cm_rej_reason_name(reason);

		name = cm_rej_message_name(
		    (unsigned)mad_get(msg, cm_rej_fields, CM_REJ_MESSAGE_REJECTED));
		snprintf(a->label, sizeof(a->label), "REJ(%s) %s (%u)", name ? name : "?",
			 rn ? rn : "unassigned", reason);
		snprintf(a->detail, sizeof(a->detail), "%s", ids);
	} else if (l == &cm_dreq_layout) {
		snprintf(a->label, sizeof(a->label), "DREQ %s qpn 0x%" PRIx64, ids,
			 mad_get(msg, cm_dreq_fields, CM_DREQ_REMOTE_QPN_EECN));
	} else if (l == &cm_sidr_req_layout) {
		snprintf(a->label, sizeof(a->label), "SIDR_REQ 0x%08" PRIx32, a->local_id);
		snprintf(a->detail, sizeof(a->detail), "sid 0x%016" PRIx64,
			 mad_get(msg, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID));
	} else if (l == &cm_sidr_rep_layout) {
		unsigned st = (unsigned)mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_STATUS);

		name = cm_sidr_status_name(st);
		snprintf(a->label, sizeof(a->label), "SIDR_REP 0x%08" PRIx32 " %s qpn 0x%" PRIx64,
			 a->local_id, name ? name : "?",
			 mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_QPN));
	} else if (l == &cm_apr_layout) {
		unsigned st = (unsigned)mad_get(msg, cm_apr_fields, CM_APR_AP_STATUS);

		name = cm_apr_status_name(st);
		snprintf(a->label, sizeof(a->label), "APR %s %s", ids, name ? name : "?");
	} else if (l == &cm_class_port_info_layout) {
		snprintf(a->label, sizeof(a->label), "ClassPortInfo %s",
			 mad_method_name(a->method));
	} else {
		snprintf(a->label, sizeof(a->label), "%s %s", a->message, ids);
	}
}

static void label_sa(struct raw *r)
{
	struct ladder_arrow *a = &r->a;

	snprintf(a->label, sizeof(a->label), "SA %s %s", mad_method_name(a->method), a->message);
	snprintf(a->detail, sizeof(a->detail), "tid 0x%016" PRIx64, a->tid);
}

void ladder_label(struct raw *r)
{
	if (r->layout)
		label_cm(r);
	else
		label_sa(r);
}
