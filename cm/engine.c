/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM engine core: lifetime, the receive dispatcher that applies the state
 * table (state.c), sending and retransmission, TimeWait, events.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_int.h"
#include "mad/zalloc.h"

#define CM_DEFAULT_MAX_CONNS 65536u
#define CM_MAX_LISTENS 4096

enum cm_stat_msg cm_stat_of_attr(uint16_t attr_id)
{
	switch (attr_id) {
	case CM_ATTR_REQ:
		return CM_STAT_REQ;
	case CM_ATTR_MRA:
		return CM_STAT_MRA;
	case CM_ATTR_REJ:
		return CM_STAT_REJ;
	case CM_ATTR_REP:
		return CM_STAT_REP;
	case CM_ATTR_RTU:
		return CM_STAT_RTU;
	case CM_ATTR_DREQ:
		return CM_STAT_DREQ;
	case CM_ATTR_DREP:
		return CM_STAT_DREP;
	case CM_ATTR_SIDR_REQ:
		return CM_STAT_SIDR_REQ;
	case CM_ATTR_SIDR_REP:
		return CM_STAT_SIDR_REP;
	case CM_ATTR_LAP:
		return CM_STAT_LAP;
	case CM_ATTR_APR:
		return CM_STAT_APR;
	default:
		return CM_STAT_OTHER;
	}
}

static void stat_timer_fn(struct mad_timer *t, void *arg)
{
	struct cm_engine *e = arg;

	(void)t;
	cm_stat_publish(e, e->stat_file);
	mad_timer_arm(e->cfg.timers, &e->stat_timer, 1000000000ull, stat_timer_fn, e);
}

int cm_engine_create(const struct cm_engine_config *cfg, struct cm_engine **out)
{
	struct cm_engine *e;
	const char *sf;
	int ret;

	if (!cfg || !out || !cfg->ops || !cfg->ops->send || !cfg->timers)
		return -EINVAL;
	if (cfg->max_conns > (1u << 24))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->max_conns = cfg->max_conns ? cfg->max_conns : CM_DEFAULT_MAX_CONNS;
	ret = cm_ids_init(e);
	if (ret) {
		free(e);
		return ret;
	}
	/* Publish a stats snapshot once a second when asked (madcm-stat(1)). */
	sf = getenv("MADCM_STAT_FILE");
	if (sf && *sf) {
		e->stat_file = strdup(sf);
		if (e->stat_file)
			mad_timer_arm(e->cfg.timers, &e->stat_timer, 0, stat_timer_fn, e);
	}
	*out = e;
	return 0;
}

void cm_engine_destroy(struct cm_engine *e)
{
	if (!e)
		return;
	if (e->stat_file) {
		cm_stat_publish(e, e->stat_file);
		mad_timer_cancel(e->cfg.timers, &e->stat_timer);
		free(e->stat_file);
	}
	cm_held_destroy(e);
	for (uint32_t b = 0; b <= e->hash_mask; b++) {
		while (e->by_local[b]) {
			struct cm_conn *c = e->by_local[b];

			cm_conn_free(e, c);
		}
	}
	free(e->spare);
	cm_ids_destroy(e);
	free(e->reserved); /* not with the tables: cm_ids_maybe_grow replaces those */
	free(e->listens);
	free(e);
}

size_t cm_engine_conn_size(void)
{
	return sizeof(struct cm_conn);
}

uint32_t cm_engine_conn_count(const struct cm_engine *e)
{
	return e ? e->nconns : 0;
}

/* ---- connections ---- */

struct cm_conn *cm_conn_new(struct cm_engine *e)
{
	return cm_conn_new_as(e, 0);
}

struct cm_conn *cm_conn_new_as(struct cm_engine *e, uint32_t want)
{
	struct cm_conn *c;

	/* A reserved ID holds its place in the table already. */
	if (!want && e->nconns + e->reserved_n >= e->max_conns) {
		e->st.table_full++;
		return NULL;
	}
	cm_ids_maybe_grow(e);
	c = e->spare ? e->spare : zalloc(sizeof(*c));
	if (!c)
		return NULL;
	e->spare = NULL;
	c->eng = e;
	c->listen_id = -1;
	if (cm_ids_new_local(e, c, want)) {
		free(c);
		return NULL;
	}
	e->nconns++;
	e->st.conns_created++;
	e->st.conns_live = e->nconns;
	return c;
}

struct cm_conn *cm_conn_new_active(struct cm_engine *e, uint64_t user, uint64_t service_id)
{
	return cm_conn_new_active_as(e, user, service_id, 0);
}

struct cm_conn *cm_conn_new_active_as(struct cm_engine *e, uint64_t user, uint64_t service_id,
				      uint32_t want)
{
	struct cm_conn *c = cm_conn_new_as(e, want);

	if (!c)
		return NULL;
	c->active = 1;
	c->user = user;
	c->service_id = service_id;
	return c;
}

void cm_conn_free(struct cm_engine *e, struct cm_conn *c)
{
	mad_timer_cancel(e->cfg.timers, &c->timer);
	cm_ids_unlink_all(e, c);
	e->nconns--;
	e->st.conns_freed++;
	e->st.conns_live = e->nconns;
	if (c->msg != e->scratch)
		free(c->msg);
	free(c);
}

void cm_conn_spare(struct cm_engine *e)
{
	if (!e->spare)
		e->spare = zalloc(sizeof(*e->spare));
}

uint64_t cm_packet_life_ns(const struct cm_conn *c)
{
	return cm_timeout_ns(c->primary.packet_life_time);
}

void cm_mad_addr_from_path(struct mad_addr *a, const struct cm_path *p, uint16_t pkey_index)
{
	memset(a, 0, sizeof(*a));
	a->lid = p->dlid;
	a->sl = p->sl;
	a->qpn = 1;
	a->qkey = MAD_QP1_QKEY;
	a->pkey_index = pkey_index;
	if (!p->subnet_local) {
		a->grh_present = true;
		memcpy(a->gid, p->dgid, 16);
		a->flow_label = p->flow_label;
		a->hop_limit = p->hop_limit;
		a->traffic_class = p->traffic_class;
		a->gid_index = p->sgid_index;
	}
}

uint8_t *cm_msg_start(struct cm_engine *e, struct cm_conn *c, const struct mad_layout *layout)
{
	uint64_t tid = (uint64_t)c->local_id | (uint64_t)(++e->tid_seq) << 32;
	uint8_t *msg;

	if (!c->msg)
		c->msg = malloc(CM_MAD_SIZE);
	if (!c->msg)
		c->msg = e->scratch; /* sent once, not kept (cm_send_conn_msg) */
	msg = c->msg + CM_MSG_OFFSET;
	c->mra_due = 0; /* c->msg is this message now */
	c->msg_unsent = 1;
	cm_mad_init(c->msg, CM_MAD_SIZE, layout, CM_METHOD_SEND, tid);
	/* Every message but SIDR starts with LocalCommID, RemoteCommID. */
	if (layout != &cm_sidr_req_layout && layout != &cm_sidr_rep_layout) {
		mad_set_fits(msg, cm_rtu_fields, CM_RTU_LOCAL_COMM_ID, c->local_id);
		if (layout != &cm_req_layout)
			mad_set_fits(msg, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID, c->remote_id);
	}
	return msg;
}

static void count_sent(struct cm_engine *e, const void *mad, bool retry)
{
	enum cm_stat_msg m =
	    cm_stat_of_attr((uint16_t)mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID));

	e->st.sent[m]++;
	if (retry)
		e->st.retried[m]++;
}

void cm_send_raw(struct cm_engine *e, const struct mad_addr *to, const void *mad)
{
	count_sent(e, mad, false);
	if (e->cfg.ops->send(e->cfg.ctx, to, mad, CM_MAD_SIZE) < 0)
		e->st.send_errors++;
}

/*
 * An answer to a message no connection holds (a REJ, a DREP, a SIDR REP)
 * goes to the sender's QP1, whatever QP the message came from, as the
 * kernel's cm.c answers (cm_alloc_response_msg_no_ah): a CM may send from
 * a UD QP of its own (mad/umad_qp.h) and receive only on QP1.
 */
void cm_send_answer(struct cm_engine *e, const struct cm_rx *rx, const void *mad)
{
	struct mad_addr to = *rx->from;

	to.qpn = 1;
	to.qkey = MAD_QP1_QKEY;
	cm_send_raw(e, &to, mad);
}

static void conn_timer_fn(struct mad_timer *t, void *arg);

void cm_send_conn_msg(struct cm_engine *e, struct cm_conn *c, bool retransmit)
{
	if (!c->msg)
		return;
	c->msg_unsent = 0;
	cm_send_raw(e, &c->peer, c->msg);
	if (c->msg == e->scratch)
		c->msg = NULL; /* the next message may overwrite it: not ours to resend */
	if (retransmit) {
		c->retries = c->max_cm_retries;
		mad_timer_arm(e->cfg.timers, &c->timer, c->timeout_ns, conn_timer_fn, c);
	} else {
		/* Sent after its state change (RTU, DREP, APR): kept only if resent. */
		cm_msg_release(e, c);
	}
}

void cm_conn_arm_retry(struct cm_engine *e, struct cm_conn *c)
{
	mad_timer_arm(e->cfg.timers, &c->timer, c->timeout_ns, conn_timer_fn, c);
}

static void timewait_enter(struct cm_engine *e, struct cm_conn *c)
{
	/* IBA 12.9.8.3.1: packet lifetime + the QP's local ACK timeout. */
	uint64_t ns = cm_packet_life_ns(c) + cm_timeout_ns(c->primary.local_ack_timeout);

	cm_ids_unlink_remote_qpn(e, c);
	mad_timer_arm(e->cfg.timers, &c->timer, ns, conn_timer_fn, c);
}

static void conn_timer_fn(struct mad_timer *t, void *arg);

void cm_sidr_linger(struct cm_engine *e, struct cm_conn *c)
{
	mad_timer_arm(e->cfg.timers, &c->timer, CM_SIDR_LINGER_NS, conn_timer_fn, c);
}

void cm_msg_release(struct cm_engine *e, struct cm_conn *c)
{
	if (!c->msg || c->mra_due || c->msg_unsent || cm_state_keeps_msg(c->state))
		return;
	if (c->msg != e->scratch)
		free(c->msg);
	c->msg = NULL;
}

void cm_set_state(struct cm_engine *e, struct cm_conn *c, uint8_t next)
{
	if (next == CM_ST_SAME || next == c->state)
		return;
	c->state = next;
	if (next == CM_ST_IDLE) {
		cm_conn_free(e, c);
		return;
	}
	cm_msg_release(e, c);
	if (next == CM_ST_TIMEWAIT)
		timewait_enter(e, c);
	else if (next == CM_ST_SIDR_REP_SENT)
		cm_sidr_linger(e, c);
	else if (!cm_state_retransmits(next))
		mad_timer_cancel(e->cfg.timers, &c->timer);
}

static void conn_timer_fn(struct mad_timer *t, void *arg)
{
	struct cm_conn *c = arg;
	struct cm_engine *e = c->eng;

	(void)t;
	if (cm_state_retransmits(c->state) && c->retries > 0) {
		c->retries--;
		if (!c->msg) /* none could be kept: this retry is lost */
			e->st.send_errors++;
		else {
			count_sent(e, c->msg, true);
			if (e->cfg.ops->send(e->cfg.ctx, &c->peer, c->msg, CM_MAD_SIZE) < 0)
				e->st.send_errors++;
		}
		mad_timer_arm(e->cfg.timers, &c->timer, c->timeout_ns, conn_timer_fn, c);
		return;
	}
	cm_on_timeout(e, c);
}

void cm_event_init(struct cm_event *ev, enum cm_event_type t, const struct cm_conn *c)
{
	memset(ev, 0, offsetof(struct cm_event, private_data));
	ev->type = t;
	ev->listen_id = -1;
	if (c) {
		ev->id = c->local_id;
		ev->user = c->user;
		ev->from = c->peer;
	}
}

void cm_event_private(struct cm_event *ev, const struct mad_layout *l, const uint8_t *msg)
{
	size_t len;
	const uint8_t *pd = cm_private_data(l, msg, &len);

	if (!pd || len > sizeof(ev->private_data))
		len = 0;
	if (len)
		memcpy(ev->private_data, pd, len);
	ev->private_data_len = (uint8_t)len;
}

void cm_emit(struct cm_engine *e, const struct cm_conn *c, struct cm_event *ev)
{
	if (c && c->orphan)
		return;
	if (e->cfg.ops->event)
		e->cfg.ops->event(e->cfg.ctx, ev);
}

/* ---- answers without a connection ---- */

void cm_issue_rej(struct cm_engine *e, const struct cm_rx *rx, uint16_t reason,
		  uint8_t msg_rejected, const void *ari, uint8_t ari_len)
{
	uint8_t mad[CM_MAD_SIZE];
	uint8_t *msg = mad + CM_MSG_OFFSET;

	cm_mad_init(mad, sizeof(mad), &cm_rej_layout, CM_METHOD_SEND, rx->tid);
	/* We have no comm ID; the sender's becomes the REJ's remote one. */
	mad_set_fits(msg, cm_rej_fields, CM_REJ_REMOTE_COMM_ID,
		     mad_get(rx->msg, cm_rtu_fields, CM_RTU_LOCAL_COMM_ID));
	if (rx->type != CM_STAT_REQ)
		mad_set_fits(msg, cm_rej_fields, CM_REJ_LOCAL_COMM_ID,
			     mad_get(rx->msg, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID));
	mad_set_fits(msg, cm_rej_fields, CM_REJ_MESSAGE_REJECTED, msg_rejected);
	mad_set_fits(msg, cm_rej_fields, CM_REJ_REASON, reason);
	if (ari && ari_len && ari_len <= CM_REJ_ARI_SIZE) {
		mad_set_fits(msg, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH, ari_len);
		memcpy(msg + cm_rej_fields[CM_REJ_ARI].byte, ari, ari_len);
	}
	cm_send_answer(e, rx, mad);
}

void cm_issue_drep(struct cm_engine *e, const struct cm_rx *rx)
{
	uint8_t mad[CM_MAD_SIZE];
	uint8_t *msg = mad + CM_MSG_OFFSET;

	cm_mad_init(mad, sizeof(mad), &cm_drep_layout, CM_METHOD_SEND, rx->tid);
	mad_set_fits(msg, cm_drep_fields, CM_DREP_LOCAL_COMM_ID,
		     mad_get(rx->msg, cm_dreq_fields, CM_DREQ_REMOTE_COMM_ID));
	mad_set_fits(msg, cm_drep_fields, CM_DREP_REMOTE_COMM_ID,
		     mad_get(rx->msg, cm_dreq_fields, CM_DREQ_LOCAL_COMM_ID));
	cm_send_answer(e, rx, mad);
}

/* ---- receive ---- */

static enum cm_input input_of(const struct cm_rx *rx)
{
	switch (rx->type) {
	case CM_STAT_REQ:
		return CM_IN_REQ;
	case CM_STAT_MRA:
		switch (mad_get(rx->msg, cm_mra_fields, CM_MRA_MESSAGE_MRAED)) {
		case CM_MSG_REF_REQ:
			return CM_IN_MRA_REQ;
		case CM_MSG_REF_REP:
			return CM_IN_MRA_REP;
		case CM_MSG_REF_LAP:
			return CM_IN_MRA_LAP;
		default:
			return CM_IN__COUNT;
		}
	case CM_STAT_REJ:
		return CM_IN_REJ;
	case CM_STAT_REP:
		return CM_IN_REP;
	case CM_STAT_RTU:
		return CM_IN_RTU;
	case CM_STAT_DREQ:
		return CM_IN_DREQ;
	case CM_STAT_DREP:
		return CM_IN_DREP;
	case CM_STAT_SIDR_REQ:
		return CM_IN_SIDR_REQ;
	case CM_STAT_SIDR_REP:
		return CM_IN_SIDR_REP;
	case CM_STAT_LAP:
		return CM_IN_LAP;
	case CM_STAT_APR:
		return CM_IN_APR;
	default:
		return CM_IN__COUNT;
	}
}

static bool is_sidr_state(uint8_t s)
{
	return s == CM_ST_SIDR_REQ_SENT || s == CM_ST_SIDR_REQ_RCVD;
}

/*
 * REJ "timeout" without a RemoteCommID: the active side gave up on its
 * REQ (retries spent, or released) before it heard our comm ID.  It names
 * the connection by its own comm ID and its CA GUID, the ARI of that
 * reason (IBA 12.6.7.2), so look it up in the (remote comm ID, remote CA
 * GUID) table as the kernel's cm_acquire_rejected_id does.  Only a
 * passive connection can be meant: the peer's REQ made it.
 */
static struct cm_conn *conn_of_rej_timeout(struct cm_engine *e, const struct cm_rx *rx,
					   uint32_t theirs)
{
	const uint8_t *ari = rx->msg + cm_rej_fields[CM_REJ_ARI].byte;
	struct cm_conn *c;
	uint64_t guid = 0;

	if (theirs == 0 || mad_get(rx->msg, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH) < 8)
		return NULL;
	for (int i = 0; i < 8; i++)
		guid = guid << 8 | ari[i];
	c = cm_ids_by_remote_id(e, theirs, guid);
	if (!c || c->active || is_sidr_state(c->state))
		return NULL;
	return c;
}

/*
 * The connection a message (other than REQ / SIDR_REQ) is for: its
 * RemoteCommID is our local ID; once we know the peer's ID, the message's
 * LocalCommID must match it too (kernel cm_acquire_id).
 */
static struct cm_conn *conn_of(struct cm_engine *e, const struct cm_rx *rx)
{
	struct cm_conn *c;
	uint32_t ours, theirs;

	if (rx->type == CM_STAT_SIDR_REP) {
		ours = (uint32_t)mad_get(rx->msg, cm_sidr_rep_fields, CM_SIDR_REP_REQUEST_ID);
		c = cm_ids_by_local(e, ours);
		return c && c->state == CM_ST_SIDR_REQ_SENT ? c : NULL;
	}
	ours = (uint32_t)mad_get(rx->msg, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID);
	theirs = (uint32_t)mad_get(rx->msg, cm_rtu_fields, CM_RTU_LOCAL_COMM_ID);
	if (rx->type == CM_STAT_REJ && ours == 0 &&
	    mad_get(rx->msg, cm_rej_fields, CM_REJ_REASON) == CM_REJ_TIMEOUT)
		return conn_of_rej_timeout(e, rx, theirs);
	c = cm_ids_by_local(e, ours);
	if (!c || is_sidr_state(c->state))
		return NULL;
	if (c->remote_id && theirs && c->remote_id != theirs)
		return NULL;
	return c;
}

static void drop(struct cm_engine *e, const struct cm_rx *rx)
{
	e->st.dropped[rx->type]++;
}

/* Perform an answer-only action (no state change). */
static void answer(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t act)
{
	switch (act) {
	case CM_A_RESEND:
		e->st.duplicates[rx->type]++;
		cm_resend(e, c);
		break;
	case CM_A_REJ_STALE:
		e->st.duplicates[rx->type]++;
		cm_issue_rej(e, rx, CM_REJ_STALE_CONN, CM_MSG_REF_REQ, NULL, 0);
		break;
	case CM_A_REJ_INVALID_ID:
		drop(e, rx);
		cm_issue_rej(e, rx, CM_REJ_INVALID_COMM_ID, CM_MSG_REF_REP, NULL, 0);
		break;
	case CM_A_DREP:
		e->st.duplicates[rx->type]++;
		cm_issue_drep(e, rx);
		break;
	case CM_A_RTU:
		/* Only the active side ever gets a REP. */
		if (!c || !c->active) {
			drop(e, rx);
			break;
		}
		e->st.duplicates[rx->type]++;
		cm_send_fresh_rtu(e, c); /* built from c's fields: nothing kept */
		break;
	default:
		drop(e, rx);
		break;
	}
}

int cm_engine_recv(struct cm_engine *e, const struct mad_addr *from, const void *mad, size_t len)
{
	const struct mad_layout *layout;
	const struct cm_transition *tr;
	struct cm_rx rx;
	struct cm_conn *c;
	enum cm_input in;
	uint8_t next;
	int ret;

	if (!e || !from || !mad)
		return -EINVAL;
	ret = cm_msg_check(mad, len, &layout);
	if (ret) {
		e->st.dropped[CM_STAT_OTHER]++;
		return ret;
	}
	cm_rx_init(&rx, from, mad, cm_stat_of_attr(layout->attr_id));
	e->st.rcvd[rx.type]++;
	in = input_of(&rx);
	if (in == CM_IN__COUNT) {
		/* ClassPortInfo or a reserved MessageMRAed: nothing to do. */
		drop(e, &rx);
		return rx.type == CM_STAT_OTHER ? 0 : -EBADMSG;
	}
	if (in == CM_IN_REQ)
		return cm_on_req(e, &rx);
	if (in == CM_IN_SIDR_REQ)
		return cm_on_sidr_req(e, &rx);

	c = conn_of(e, &rx);
	tr = cm_transition(c ? c->state : CM_ST_IDLE, in);
	if (tr->action != CM_A_GO || !c) {
		answer(e, c, &rx, tr->action == CM_A_GO ? CM_A_DROP : tr->action);
		return 0;
	}
	switch (in) {
	case CM_IN_MRA_REQ:
	case CM_IN_MRA_REP:
	case CM_IN_MRA_LAP:
		next = cm_on_mra(e, c, &rx, tr->next);
		break;
	case CM_IN_REJ:
		next = cm_on_rej(e, c, &rx, tr->next);
		break;
	case CM_IN_REP:
		next = cm_on_rep(e, c, &rx, tr->next);
		break;
	case CM_IN_RTU:
		next = cm_on_rtu(e, c, &rx, tr->next);
		break;
	case CM_IN_DREQ:
		next = cm_on_dreq(e, c, &rx, tr->next);
		break;
	case CM_IN_DREP:
		next = cm_on_drep(e, c, &rx, tr->next);
		break;
	case CM_IN_LAP:
		next = cm_on_lap(e, c, &rx, tr->next);
		break;
	case CM_IN_APR:
		next = cm_on_apr(e, c, &rx, tr->next);
		break;
	case CM_IN_SIDR_REP:
		next = cm_on_sidr_rep(e, c, &rx, tr->next);
		break;
	default:
		next = CM_ST_SAME;
		drop(e, &rx);
		break;
	}
	(void)next;
	return 0;
}

const struct cm_transition *cm_cmd_allowed(const struct cm_conn *c, enum cm_input cmd)
{
	const struct cm_transition *tr = cm_transition(c ? c->state : CM_ST_IDLE, cmd);

	return tr->action == CM_A_GO ? tr : NULL;
}

int cm_cmd_check(struct cm_engine *e, uint32_t id, enum cm_input cmd, struct cm_conn **c,
		 const struct cm_transition **tr)
{
	*c = cm_ids_by_local(e, id);
	if (!*c)
		return -ENOENT;
	*tr = cm_cmd_allowed(*c, cmd);
	return *tr ? 0 : -EINVAL;
}

/* ---- listeners ---- */

struct cm_listen *cm_listen_find(struct cm_engine *e, uint64_t service_id, int *id)
{
	for (int i = 0; i < e->nlistens; i++) {
		struct cm_listen *l = &e->listens[i];

		if (l->used && (service_id & l->mask) == (l->service_id & l->mask)) {
			*id = i;
			return l;
		}
	}
	return NULL;
}

int cm_engine_listen(struct cm_engine *e, uint64_t service_id, uint64_t mask, uint64_t user)
{
	int i;

	if (!e || !mask)
		return -EINVAL;
	for (i = 0; i < e->nlistens; i++) {
		struct cm_listen *l = &e->listens[i];

		/* Two listeners whose ranges overlap would make REQ routing ambiguous. */
		if (l->used && (service_id & l->mask & mask) == (l->service_id & l->mask & mask))
			return -EADDRINUSE;
	}
	for (i = 0; i < e->nlistens && e->listens[i].used; i++)
		;
	if (i == e->nlistens) {
		struct cm_listen *v;

		if (e->nlistens >= CM_MAX_LISTENS)
			return -ENOMEM;
		v = realloc(e->listens, (size_t)(e->nlistens + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->listens = v;
		e->nlistens++;
	}
	e->listens[i] = (struct cm_listen){service_id & mask, mask, user, true};
	cm_held_listened(e);
	return i;
}

int cm_engine_unlisten(struct cm_engine *e, int listen_id)
{
	if (!e || listen_id < 0 || listen_id >= e->nlistens || !e->listens[listen_id].used)
		return -EINVAL;
	e->listens[listen_id].used = false;
	return 0;
}

/* ---- queries ---- */

int cm_engine_conn_state(struct cm_engine *e, uint32_t id, enum cm_state *state)
{
	struct cm_conn *c;

	if (!e || !state)
		return -EINVAL;
	c = cm_ids_by_local(e, id);
	if (!c)
		return -ENOENT;
	*state = c->state;
	return 0;
}

bool cm_engine_qpn_in_timewait(struct cm_engine *e, uint32_t qpn)
{
	struct cm_conn *c;

	if (!e)
		return false;
	c = cm_ids_by_local_qpn(e, qpn);
	return c && c->state == CM_ST_TIMEWAIT;
}
