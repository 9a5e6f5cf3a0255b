/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* CM engine test harness: see cm_harness.h. */
#include <assert.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cm/cm_wire.h"
#include "tests/unit/cm_harness.h"

static uint64_t fake_clock(void *ctx)
{
	return ((struct cmh *)ctx)->now;
}

static uint32_t rnd(struct cmh *h)
{
	h->rng = h->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(h->rng >> 33);
}

static int fake_send(void *ctx, const struct mad_addr *to, const void *mad, size_t len)
{
	struct cmh_node *nd = ctx;
	struct cmh *h = nd->h;
	uint16_t attr = (uint16_t)mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID);
	int dst = 1 - nd->idx;
	bool dropped = false;
	struct cmh_pkt *p;

	assert(len == 256);
	/* Every CM message goes to QP1, whatever QP the peer sent from. */
	assert(to->qpn == 1);
	assert(to->qkey == MAD_QP1_QKEY);
	if (attr >= 0x10 && attr < 0x20 && h->drop[nd->idx][attr - 0x10] > 0) {
		h->drop[nd->idx][attr - 0x10]--;
		dropped = true;
	}
	if (h->loss_pct && rnd(h) % 100 < h->loss_pct)
		dropped = true;
	if (h->dead[dst] || h->dead[nd->idx])
		dropped = true;
	if (h->nlog < CMH_MAX_LOG) {
		struct cmh_log *l = &h->log[h->nlog++];

		l->from = nd->idx;
		l->attr = attr;
		l->dropped = dropped;
		memcpy(l->mad, mad, 256);
	}
	if (dropped)
		return 0;
	assert(h->qtail - h->qhead < CMH_MAX_QUEUE);
	p = &h->q[h->qtail++ % CMH_MAX_QUEUE];
	p->to = dst;
	memset(&p->from, 0, sizeof(p->from));
	p->from.lid = nd->lid;
	p->from.qpn = h->src_qpn[nd->idx] ? h->src_qpn[nd->idx] : 1;
	p->from.qkey = MAD_QP1_QKEY;
	memcpy(p->mad, mad, 256);
	return 0;
}

static void on_event(void *ctx, const struct cm_event *ev)
{
	struct cmh_node *nd = ctx;

	assert(nd->nev < CMH_MAX_EVENTS);
	nd->ev[nd->nev++] = *ev;
	switch (ev->type) {
	case CM_EV_REQ_RCVD:
		if (nd->auto_accept) {
			struct cm_accept_cmd a;

			cmh_accept_cmd(&a, nd->next_qpn++);
			cm_engine_accept(nd->e, ev->id, ev->id, &a);
		}
		break;
	case CM_EV_REP_RCVD:
		if (nd->auto_rtu)
			cm_engine_rtu(nd->e, ev->id, NULL, 0);
		break;
	case CM_EV_DREQ_RCVD:
		if (nd->auto_drep)
			cm_engine_disconnect(nd->e, ev->id, NULL, 0);
		break;
	default:
		break;
	}
}

uint32_t cmh_max_conns[2];

static bool bound(void *arg, uint64_t service_id)
{
	struct cmh_node *nd = arg;

	return nd->h->bound_sid[nd->idx] && nd->h->bound_sid[nd->idx] == service_id;
}

static const struct cm_engine_ops ops = {fake_send, on_event};

void cmh_init(struct cmh *h)
{
	memset(h, 0, sizeof(*h));
	h->now = 1000000000ull;
	h->rng = 42;
	h->q = calloc(CMH_MAX_QUEUE, sizeof(*h->q));
	mad_timer_heap_init(&h->timers, fake_clock, h);
	for (int i = 0; i < 2; i++) {
		struct cmh_node *nd = &h->n[i];
		struct cm_engine_config cfg = {
		    .ca_guid = 0x0002c90300001000ull + (uint64_t)i,
		    .port_num = 1,
		    .max_conns = 0,
		    .timers = &h->timers,
		    .ops = &ops,
		    .ctx = nd,
		    .service_bound = bound,
		    .service_bound_arg = nd,
		};

		nd->h = h;
		nd->idx = i;
		nd->guid = cfg.ca_guid;
		nd->lid = (uint16_t)(i + 1);
		nd->ev = calloc(CMH_MAX_EVENTS, sizeof(*nd->ev));
		nd->next_qpn = 0x2000;
		nd->auto_rtu = true;
		nd->auto_drep = true;
		nd->auto_accept = i == 1;
		cfg.max_conns = cmh_max_conns[i];
		assert_non_null(nd->ev);
		/* CMocka's assertions: a failure (ENOMEM) fails the test, no abort. */
		assert_int_equal(cm_engine_create(&cfg, &nd->e), 0);
	}
	/* B serves the rdma_cm TCP port space (0x0106 << 16 | port). */
	assert_true(cm_engine_listen(h->n[1].e, 0x0000000001060000ull, ~0xffffull, 0x5e4) >= 0);
}

void cmh_fini(struct cmh *h)
{
	for (int i = 0; i < 2; i++) {
		cm_engine_destroy(h->n[i].e);
		free(h->n[i].ev);
	}
	mad_timer_heap_destroy(&h->timers);
	free(h->q);
}

int cmh_deliver(struct cmh *h)
{
	int n = 0;

	while (h->qhead != h->qtail) {
		struct cmh_pkt p = h->q[h->qhead++ % CMH_MAX_QUEUE];

		cm_engine_recv(h->n[p.to].e, &p.from, p.mad, 256);
		n++;
	}
	return n;
}

void cmh_advance(struct cmh *h, uint64_t ns)
{
	h->now += ns;
	mad_timer_run(&h->timers);
	cmh_deliver(h);
}

void cmh_run_timers(struct cmh *h, uint64_t step, uint64_t max)
{
	for (uint64_t t = 0; t < max && mad_timer_next_deadline(&h->timers) != UINT64_MAX;
	     t += step)
		cmh_advance(h, step);
}

void cmh_connect_cmd(struct cmh *h, struct cm_connect_cmd *c, uint32_t qpn)
{
	memset(c, 0, sizeof(*c));
	c->user = 0xabc;
	c->service_id = 0x0000000001060000ull + 7471;
	c->qpn = qpn;
	c->starting_psn = 0x123456;
	c->qp_type = CM_QPT_RC;
	c->responder_resources = 4;
	c->initiator_depth = 4;
	c->remote_cm_response_timeout = 20; /* 4.3 s */
	c->local_cm_response_timeout = 20;
	c->retry_count = 7;
	c->rnr_retry_count = 6;
	c->max_cm_retries = 3;
	c->pkey_index = 0;
	c->primary.slid = h->n[0].lid;
	c->primary.dlid = h->n[1].lid;
	c->primary.sgid[0] = 0xfe;
	c->primary.sgid[1] = 0x80;
	c->primary.sgid[15] = 1;
	c->primary.dgid[0] = 0xfe;
	c->primary.dgid[1] = 0x80;
	c->primary.dgid[15] = 2;
	c->primary.rate = 3;
	c->primary.hop_limit = 0;
	c->primary.sl = 0;
	c->primary.subnet_local = 1;
	c->primary.local_ack_timeout = 15;
	c->primary.packet_life_time = 14; /* 67 ms */
	c->primary.mtu = IBV_MTU_2048;
	c->primary.pkey = 0xffff;
	c->private_data_len = 4;
	memcpy(c->private_data, "ping", 4);
}

void cmh_accept_cmd(struct cm_accept_cmd *a, uint32_t qpn)
{
	memset(a, 0, sizeof(*a));
	a->qpn = qpn;
	a->starting_psn = 0x654321;
	a->responder_resources = 2;
	a->initiator_depth = 2;
	a->target_ack_delay = 10;
	a->rnr_retry_count = 5;
	a->private_data_len = 4;
	memcpy(a->private_data, "pong", 4);
}

const struct cm_event *cmh_event(struct cmh *h, int i, enum cm_event_type type)
{
	for (int k = h->n[i].nev - 1; k >= 0; k--)
		if (h->n[i].ev[k].type == type)
			return &h->n[i].ev[k];
	return NULL;
}

int cmh_count(struct cmh *h, int i, enum cm_event_type type)
{
	int c = 0;

	for (int k = 0; k < h->n[i].nev; k++)
		c += h->n[i].ev[k].type == type;
	return c;
}

int cmh_sent(struct cmh *h, int from, uint16_t attr)
{
	int c = 0;

	for (int k = 0; k < h->nlog; k++)
		c += h->log[k].from == from && h->log[k].attr == attr;
	return c;
}

const uint8_t *cmh_last_mad(struct cmh *h, int from, uint16_t attr)
{
	for (int k = h->nlog - 1; k >= 0; k--)
		if (h->log[k].from == from && h->log[k].attr == attr)
			return h->log[k].mad;
	/* A failed test, not a crash in it (check-oom fails allocations under it). */
	fail_msg("no MAD of attribute 0x%x sent by %d", attr, from);
	return NULL;
}

enum cm_state cmh_state(struct cmh *h, int i, uint32_t id)
{
	enum cm_state s;

	if (cm_engine_conn_state(h->n[i].e, id, &s))
		return CM_ST_IDLE;
	return s;
}

int cmh_inject(struct cmh *h, int i, const void *mad)
{
	return cmh_inject_from(h, i, mad, 1);
}

int cmh_inject_from(struct cmh *h, int i, const void *mad, uint32_t qpn)
{
	struct mad_addr from = {.lid = h->n[1 - i].lid, .qpn = qpn, .qkey = MAD_QP1_QKEY};

	return cm_engine_recv(h->n[i].e, &from, mad, 256);
}

uint32_t cmh_connect(struct cmh *h, uint32_t qpn)
{
	struct cm_connect_cmd cmd;
	uint32_t id = 0;

	cmh_connect_cmd(h, &cmd, qpn);
	if (cm_engine_connect(h->n[0].e, &cmd, &id))
		return 0;
	cmh_deliver(h);
	return id;
}

uint32_t cmh_passive_id(struct cmh *h)
{
	const struct cm_event *ev = cmh_event(h, 1, CM_EV_REQ_RCVD);

	return ev ? ev->id : 0;
}

uint8_t *cmh_mad(uint8_t *mad, uint16_t attr, uint32_t local_id, uint32_t remote_id)
{
	uint8_t *msg = mad + CM_MSG_OFFSET;

	cm_mad_init(mad, 256, cm_layout_by_attr(attr), CM_METHOD_SEND, 0x77);
	if (attr != CM_ATTR_SIDR_REQ && attr != CM_ATTR_SIDR_REP) {
		mad_set(msg, cm_rtu_fields, CM_RTU_LOCAL_COMM_ID, local_id);
		mad_set(msg, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID, remote_id);
	}
	return msg;
}

struct cmh H;

int cmh_setup(void **state)
{
	(void)state;
	cmh_init(&H);
	return 0;
}

int cmh_teardown(void **state)
{
	(void)state;
	cmh_fini(&H);
	cmh_max_conns[0] = cmh_max_conns[1] = 0;
	return 0;
}

struct cm_stat_counters cmh_stats(int i)
{
	struct cm_stat_counters s;

	cm_stat_get(H.n[i].e, &s);
	return s;
}
