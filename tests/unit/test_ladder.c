/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm ladder's model: which arrow, which lane, which label, which flags
 * and timeouts, on captures built here with cm/'s encoders (a clean
 * handshake, an MRA, a lost REP and its retry, a REJ, crossed DREQs, a
 * SIDR exchange), the filters, and the renderers' output.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "lib/addr_file.h"
#include "mad/pcap.h"
#include "tools/ladder_model.h"
#include "tools/ladder_render.h"

#define LID_A 1
#define LID_B 2
#define US 1000ll
#define MS 1000000ll
#define SID_1 0x0000000001060001ull /* rdma_cm TCP port space, port 1 */
#define SID_2 0x0000000001060002ull

/* ---- a capture in memory: pcap, nanosecond magic, link type 247 ---- */

struct cap {
	uint8_t buf[64 * 1024];
	size_t len;
};

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void cap_init(struct cap *c)
{
	memset(c->buf, 0, 24);
	put32(c->buf, 0xa1b23c4d); /* nanoseconds */
	c->buf[4] = 2;
	c->buf[6] = 4;
	put32(c->buf + 16, 65535);
	put32(c->buf + 20, MAD_PCAP_LINKTYPE_INFINIBAND);
	c->len = 24;
}

/* One MAD from LID `slid` to LID `dlid`, `t_ns` after 1767225600 s. */
static void cap_add(struct cap *c, int64_t t_ns, uint16_t slid, uint16_t dlid, const uint8_t *mad)
{
	struct mad_pcap_hdr h = {.slid = slid,
				 .dlid = dlid,
				 .pkey = 0xffff,
				 .src_qp = 1,
				 .dst_qp = 1,
				 .qkey = 0x80010000u};
	long n =
	    mad_pcap_build_packet(&h, mad, 256, c->buf + c->len + 16, sizeof(c->buf) - c->len - 16);

	assert_true(n > 0);
	put32(c->buf + c->len, (uint32_t)(1767225600 + t_ns / 1000000000));
	put32(c->buf + c->len + 4, (uint32_t)(t_ns % 1000000000));
	put32(c->buf + c->len + 8, (uint32_t)n);
	put32(c->buf + c->len + 12, (uint32_t)n);
	c->len += 16 + (size_t)n;
}

/* ---- CM messages ---- */

static uint8_t *msg_init(uint8_t *mad, const struct mad_layout *l, uint64_t tid)
{
	assert_int_equal(cm_mad_init(mad, 256, l, CM_METHOD_SEND, tid), 0);
	return mad + CM_MSG_OFFSET;
}

static void gid_of(uint8_t gid[16], uint16_t lid)
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[15] = (uint8_t)lid;
}

/* REQ from `slid` to `dlid`: response timeouts 14 (67 ms), ACK timeout 0. */
static void req(uint8_t *mad, uint64_t tid, uint32_t comm, uint64_t sid, uint16_t slid,
		uint16_t dlid)
{
	uint8_t *m = msg_init(mad, &cm_req_layout, tid);
	uint8_t g[16];

	mad_set(m, cm_req_fields, CM_REQ_LOCAL_COMM_ID, comm);
	mad_set(m, cm_req_fields, CM_REQ_SERVICE_ID, sid);
	mad_set(m, cm_req_fields, CM_REQ_LOCAL_QPN, 0x48);
	mad_set(m, cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, 14);
	mad_set(m, cm_req_fields, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, 14);
	mad_set(m, cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_LID, slid);
	mad_set(m, cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_LID, dlid);
	gid_of(g, slid);
	mad_set_bytes(m, cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_GID, g);
	gid_of(g, dlid);
	mad_set_bytes(m, cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_GID, g);
	mad_set(m, cm_req_fields, CM_REQ_PRIMARY_SUBNET_LOCAL, 1);
}

/* Messages that start with local and remote comm IDs. */
static uint8_t *ids(uint8_t *mad, const struct mad_layout *l, uint64_t tid, uint32_t local,
		    uint32_t remote)
{
	uint8_t *m = msg_init(mad, l, tid);

	mad_set(m, cm_mra_fields, CM_MRA_LOCAL_COMM_ID, local);
	mad_set(m, cm_mra_fields, CM_MRA_REMOTE_COMM_ID, remote);
	return m;
}

static void rep(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote)
{
	mad_set(ids(mad, &cm_rep_layout, tid, local, remote), cm_rep_fields, CM_REP_LOCAL_QPN,
		0x4b);
}

static void mra(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote, unsigned svc)
{
	uint8_t *m = ids(mad, &cm_mra_layout, tid, local, remote);

	mad_set(m, cm_mra_fields, CM_MRA_MESSAGE_MRAED, CM_MSG_REF_REQ);
	mad_set(m, cm_mra_fields, CM_MRA_SERVICE_TIMEOUT, svc);
}

static void rej(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote, unsigned reason)
{
	uint8_t *m = ids(mad, &cm_rej_layout, tid, local, remote);

	mad_set(m, cm_rej_fields, CM_REJ_MESSAGE_REJECTED, CM_MSG_REF_REQ);
	mad_set(m, cm_rej_fields, CM_REJ_REASON, reason);
}

#define A_ID 0x1111u
#define B_ID 0x2222u

/* REQ, REP, RTU from 0 to 200 us. */
static void handshake(struct cap *c, int64_t t0, uint32_t a_id, uint32_t b_id, uint64_t sid)
{
	uint8_t mad[256];

	req(mad, 0x10 + a_id, a_id, sid, LID_A, LID_B);
	cap_add(c, t0, LID_A, LID_B, mad);
	rep(mad, 0x20 + b_id, b_id, a_id);
	cap_add(c, t0 + 100 * US, LID_B, LID_A, mad);
	ids(mad, &cm_rtu_layout, 0x30 + a_id, a_id, b_id);
	cap_add(c, t0 + 200 * US, LID_A, LID_B, mad);
}

static struct ladder_model build(const struct cap *c, const struct ladder_opts *o)
{
	struct ladder_model m;

	assert_int_equal(ladder_model_build(&m, o, "test", c->buf, c->len, NULL), 0);
	assert_int_equal(m.malformed, 0);
	return m;
}

static void assert_arrow(const struct ladder_model *m, size_t i, const char *msg, int from, int to,
			 unsigned flags)
{
	assert_true(i < m->narrows);
	assert_string_equal(m->arrows[i].message, msg);
	assert_int_equal(m->arrows[i].from, from);
	assert_int_equal(m->arrows[i].to, to);
	assert_int_equal(m->arrows[i].flags, flags);
}

/* ---- the cases ---- */

static void clean_handshake(void **state)
{
	struct cap *c = *state;
	struct madcm_addr_table hosts = {0};
	static const char text[] = "ha fe80::1\nhb fe80::2\n198.18.0.1 fe80::1\n";
	struct ladder_opts o = {.hosts = &hosts};
	struct ladder_model m;
	uint8_t mad[256];

	assert_int_equal(madcm_addr_file_parse(text, strlen(text), "hosts", &hosts, NULL, 0), 0);
	cap_init(c);
	handshake(c, 0, A_ID, B_ID, SID_1);
	ids(mad, &cm_dreq_layout, 0x40, A_ID, B_ID);
	cap_add(c, 1 * MS, LID_A, LID_B, mad);
	ids(mad, &cm_drep_layout, 0x40, B_ID, A_ID);
	cap_add(c, 1 * MS + 50 * US, LID_B, LID_A, mad);
	m = build(c, &o);

	assert_int_equal(m.nlanes, 2);
	assert_string_equal(m.lanes[0].name, "ha");
	assert_string_equal(m.lanes[0].title, "ha");
	assert_string_equal(m.lanes[0].ip, "198.18.0.1");
	assert_int_equal(m.lanes[0].lid, LID_A);
	assert_true(m.lanes[0].has_gid);
	assert_string_equal(m.lanes[1].name, "hb");
	assert_int_equal(m.narrows, 5);
	assert_arrow(&m, 0, "REQ", 0, 1, 0);
	assert_arrow(&m, 1, "REP", 1, 0, 0);
	assert_arrow(&m, 2, "RTU", 0, 1, 0);
	assert_arrow(&m, 3, "DREQ", 0, 1, 0);
	assert_arrow(&m, 4, "DREP", 1, 0, 0);
	assert_int_equal(m.arrows[1].t_ns, 100 * US);
	assert_string_equal(m.arrows[0].label, "REQ 0x00001111 qpn 0x48");
	assert_non_null(strstr(m.arrows[0].detail, "sid 0x0000000001060001"));
	assert_string_equal(m.arrows[1].label, "REP 0x00002222->0x00001111 qpn 0x4b");
	assert_string_equal(m.arrows[2].label, "RTU 0x00001111->0x00002222");
	assert_int_equal(m.nconns, 1);
	for (size_t i = 0; i < m.narrows; i++)
		assert_int_equal(m.arrows[i].conn, 0);
	assert_int_equal(m.conns[0].active_id, A_ID);
	assert_int_equal(m.conns[0].passive_id, B_ID);
	assert_true(m.conns[0].has_sid);
	assert_int_equal(m.conns[0].service_id, SID_1);
	assert_int_equal(m.conns[0].active_lane, 0);
	assert_int_equal(m.ntimeouts, 0);
	ladder_model_free(&m);
	madcm_addr_table_free(&hosts);
}

/* An MRA stretches the REQ's wait to its service timeout: no timeout fires. */
static void mra_extends_wait(void **state)
{
	struct cap *c = *state;
	struct ladder_model m;
	uint8_t mad[256];

	cap_init(c);
	req(mad, 0x10, A_ID, SID_1, LID_A, LID_B);
	cap_add(c, 0, LID_A, LID_B, mad);
	mra(mad, 0x10, B_ID, A_ID, 20);
	cap_add(c, 1 * MS, LID_B, LID_A, mad);
	rep(mad, 0x20, B_ID, A_ID);
	cap_add(c, 2000 * MS, LID_B, LID_A, mad);
	ids(mad, &cm_rtu_layout, 0x30, A_ID, B_ID);
	cap_add(c, 2001 * MS, LID_A, LID_B, mad);
	m = build(c, NULL);
	assert_int_equal(m.narrows, 4);
	assert_arrow(&m, 1, "MRA", 1, 0, 0);
	assert_string_equal(m.arrows[1].label, "MRA(REQ) service timeout 20 (4.29 s)");
	assert_int_equal(m.arrows[1].conn, 0);
	assert_int_equal(m.ntimeouts, 0);
	ladder_model_free(&m);

	/* Without the REP, the wait the MRA asked for ends in a timeout. */
	c->len = 24;
	req(mad, 0x10, A_ID, SID_1, LID_A, LID_B);
	cap_add(c, 0, LID_A, LID_B, mad);
	mra(mad, 0x10, B_ID, A_ID, 20);
	cap_add(c, 1 * MS, LID_B, LID_A, mad);
	m = build(c, NULL);
	assert_int_equal(m.ntimeouts, 1);
	assert_int_equal(m.timeouts[0].lane, 0);
	assert_int_equal(m.timeouts[0].arrow, 0);
	assert_int_equal(m.timeouts[0].t_ns, 1 * MS + (int64_t)cm_timeout_ns(20));
	assert_true(m.timeouts[0].after_end);
	assert_non_null(strstr(m.timeouts[0].label, "after MRA"));
	ladder_model_free(&m);
}

/* Captured at B: the first REP is lost, B's timer fires, B sends it again. */
static void lost_rep_retry(void **state)
{
	struct cap *c = *state;
	struct ladder_model m;
	uint8_t mad[256];
	int64_t wait = (int64_t)cm_timeout_ns(14);

	cap_init(c);
	req(mad, 0x10, A_ID, SID_1, LID_A, LID_B);
	cap_add(c, 0, LID_A, LID_B, mad);
	rep(mad, 0x20, B_ID, A_ID);
	cap_add(c, 100 * US, LID_B, LID_A, mad);
	cap_add(c, 100 * US + wait + 10 * US, LID_B, LID_A, mad);
	ids(mad, &cm_rtu_layout, 0x30, A_ID, B_ID);
	cap_add(c, 100 * US + wait + 100 * US, LID_A, LID_B, mad);
	m = build(c, NULL);
	assert_int_equal(m.narrows, 4);
	assert_arrow(&m, 1, "REP", 1, 0, 0);
	assert_arrow(&m, 2, "REP", 1, 0, LADDER_RETRY);
	assert_int_equal(m.arrows[2].copy, 1);
	assert_arrow(&m, 3, "RTU", 0, 1, 0);
	/* The first REP's timer, from the REQ's local CM response timeout. */
	assert_int_equal(m.ntimeouts, 1);
	assert_int_equal(m.timeouts[0].lane, 1);
	assert_int_equal(m.timeouts[0].arrow, 1);
	assert_int_equal(m.timeouts[0].t_ns, 100 * US + wait);
	assert_false(m.timeouts[0].after_end);
	assert_non_null(strstr(m.timeouts[0].label, "REP timeout"));
	ladder_model_free(&m);

	/* The same REQ again 10 us later is a duplicate, not a retry. */
	c->len = 24;
	req(mad, 0x10, A_ID, SID_1, LID_A, LID_B);
	cap_add(c, 0, LID_A, LID_B, mad);
	cap_add(c, 10 * US, LID_A, LID_B, mad);
	rep(mad, 0x20, B_ID, A_ID);
	cap_add(c, 100 * US, LID_B, LID_A, mad);
	ids(mad, &cm_rtu_layout, 0x30, A_ID, B_ID);
	cap_add(c, 200 * US, LID_A, LID_B, mad);
	m = build(c, NULL);
	assert_arrow(&m, 1, "REQ", 0, 1, LADDER_DUPLICATE);
	assert_int_equal(m.arrows[1].copy, 1);
	assert_int_equal(m.ntimeouts, 0);
	ladder_model_free(&m);
}

static void rej_reason(void **state)
{
	struct cap *c = *state;
	struct ladder_model m;
	uint8_t mad[256];

	cap_init(c);
	req(mad, 0x10, A_ID, SID_1, LID_A, LID_B);
	cap_add(c, 0, LID_A, LID_B, mad);
	rej(mad, 0x10, B_ID, A_ID, CM_REJ_CONSUMER_DEFINED);
	cap_add(c, 100 * US, LID_B, LID_A, mad);
	m = build(c, NULL);
	assert_int_equal(m.narrows, 2);
	assert_arrow(&m, 1, "REJ", 1, 0, 0);
	assert_string_equal(m.arrows[1].label, "REJ(REQ) consumer_defined (28)");
	assert_int_equal(m.arrows[1].conn, 0);
	assert_int_equal(m.nconns, 1);
	assert_int_equal(m.ntimeouts, 0);
	ladder_model_free(&m);
}

static void crossed_dreqs(void **state)
{
	struct cap *c = *state;
	struct ladder_model m;
	uint8_t mad[256];

	cap_init(c);
	handshake(c, 0, A_ID, B_ID, SID_1);
	ids(mad, &cm_dreq_layout, 0x40, A_ID, B_ID);
	cap_add(c, 1 * MS, LID_A, LID_B, mad);
	ids(mad, &cm_dreq_layout, 0x50, B_ID, A_ID);
	cap_add(c, 1 * MS + 5 * US, LID_B, LID_A, mad);
	ids(mad, &cm_drep_layout, 0x40, B_ID, A_ID);
	cap_add(c, 1 * MS + 20 * US, LID_B, LID_A, mad);
	ids(mad, &cm_drep_layout, 0x50, A_ID, B_ID);
	cap_add(c, 1 * MS + 25 * US, LID_A, LID_B, mad);
	m = build(c, NULL);
	assert_int_equal(m.narrows, 7);
	assert_arrow(&m, 3, "DREQ", 0, 1, LADDER_CROSSED);
	assert_arrow(&m, 4, "DREQ", 1, 0, LADDER_CROSSED);
	assert_arrow(&m, 5, "DREP", 1, 0, 0);
	assert_arrow(&m, 6, "DREP", 0, 1, 0);
	assert_int_equal(m.nconns, 1);
	assert_int_equal(m.ntimeouts, 0);
	ladder_model_free(&m);

	/* One after the other's DREP: not crossed. */
	c->len = 24;
	handshake(c, 0, A_ID, B_ID, SID_1);
	ids(mad, &cm_dreq_layout, 0x40, A_ID, B_ID);
	cap_add(c, 1 * MS, LID_A, LID_B, mad);
	ids(mad, &cm_drep_layout, 0x40, B_ID, A_ID);
	cap_add(c, 1 * MS + 20 * US, LID_B, LID_A, mad);
	ids(mad, &cm_dreq_layout, 0x50, B_ID, A_ID);
	cap_add(c, 1 * MS + 30 * US, LID_B, LID_A, mad);
	m = build(c, NULL);
	assert_arrow(&m, 3, "DREQ", 0, 1, 0);
	assert_arrow(&m, 5, "DREQ", 1, 0, 0);
	ladder_model_free(&m);
}

static void sidr(void **state)
{
	struct cap *c = *state;
	struct ladder_model m;
	uint8_t mad[256], *p;

	cap_init(c);
	p = msg_init(mad, &cm_sidr_req_layout, 0x60);
	mad_set(p, cm_sidr_req_fields, CM_SIDR_REQ_REQUEST_ID, 0x77);
	mad_set(p, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID, SID_2);
	cap_add(c, 0, LID_A, LID_B, mad);
	p = msg_init(mad, &cm_sidr_rep_layout, 0x60);
	mad_set(p, cm_sidr_rep_fields, CM_SIDR_REP_REQUEST_ID, 0x77);
	mad_set(p, cm_sidr_rep_fields, CM_SIDR_REP_QPN, 0x99);
	mad_set(p, cm_sidr_rep_fields, CM_SIDR_REP_SERVICE_ID, SID_2);
	cap_add(c, 50 * US, LID_B, LID_A, mad);
	m = build(c, NULL);
	assert_int_equal(m.nlanes, 2);
	assert_string_equal(m.lanes[0].title, "LID 1"); /* no REQ, no GRH: LIDs */
	assert_false(m.lanes[0].has_gid);
	assert_arrow(&m, 0, "SIDR_REQ", 0, 1, 0);
	assert_arrow(&m, 1, "SIDR_REP", 1, 0, 0);
	assert_string_equal(m.arrows[0].label, "SIDR_REQ 0x00000077");
	assert_non_null(strstr(m.arrows[1].label, "SIDR_REP 0x00000077"));
	assert_non_null(strstr(m.arrows[1].label, "qpn 0x99"));
	assert_int_equal(m.nconns, 1);
	assert_true(m.conns[0].sidr);
	assert_int_equal(m.conns[0].active_id, 0x77);
	assert_int_equal(m.conns[0].service_id, SID_2);
	assert_int_equal(m.arrows[0].conn, 0);
	assert_int_equal(m.arrows[1].conn, 0);
	ladder_model_free(&m);
}

/* Two connections; each filter keeps one, and only its lanes. */
static void filters(void **state)
{
	struct cap *c = *state;
	struct ladder_opts o = {0};
	struct ladder_model m;
	uint8_t mad[256];

	cap_init(c);
	handshake(c, 0, A_ID, B_ID, SID_1);
	/* The second connection is from LID 3 to B. */
	req(mad, 0x90, 0x3333, SID_2, 3, LID_B);
	cap_add(c, 10 * MS, 3, LID_B, mad);
	rep(mad, 0x91, 0x4444, 0x3333);
	cap_add(c, 11 * MS, LID_B, 3, mad);

	m = build(c, NULL);
	assert_int_equal(m.nconns, 2);
	assert_int_equal(m.nlanes, 3);
	assert_int_equal(m.arrows[3].conn, 1);
	assert_int_equal(m.conns[1].colour, 1);
	ladder_model_free(&m);

	o.has_comm_id = true;
	o.comm_id = 0x4444;
	m = build(c, &o);
	assert_int_equal(m.narrows, 2);
	assert_int_equal(m.nconns, 1);
	assert_int_equal(m.nlanes, 2);
	assert_arrow(&m, 0, "REQ", 0, 1, 0);
	assert_int_equal(m.lanes[0].lid, 3);
	assert_int_equal(m.conns[0].active_id, 0x3333);
	assert_int_equal(m.conns[0].colour, 0);
	ladder_model_free(&m);

	o = (struct ladder_opts){.has_service_id = true, .service_id = SID_1};
	m = build(c, &o);
	assert_int_equal(m.narrows, 3);
	assert_int_equal(m.conns[0].active_id, A_ID);
	ladder_model_free(&m);

	o = (struct ladder_opts){
	    .has_from = true, .from_ns = 100 * US, .has_to = true, .to_ns = 10 * MS};
	m = build(c, &o);
	/* Lanes in the order the kept arrows use them: B, A, LID 3. */
	assert_int_equal(m.narrows, 3);
	assert_arrow(&m, 0, "REP", 0, 1, 0);
	assert_arrow(&m, 2, "REQ", 2, 0, 0);
	assert_int_equal(m.lanes[0].lid, LID_B);
	ladder_model_free(&m);
}

static char *render(int (*fn)(FILE *, const struct ladder_model *, const char *),
		    const struct ladder_model *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, m, "x<y>.pcap"), 0);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void renderers(void **state)
{
	struct cap *c = *state;
	struct ladder_model m;
	uint8_t mad[256];
	char *s;

	cap_init(c);
	handshake(c, 0, A_ID, B_ID, SID_1);
	rep(mad, 0x20 + B_ID, B_ID, A_ID);
	cap_add(c, 100 * US + (int64_t)cm_timeout_ns(14) + 1000, LID_B, LID_A, mad);
	m = build(c, NULL);

	s = render(ladder_render_json, &m);
	assert_non_null(strstr(s, "\"lifelines\":["));
	assert_non_null(strstr(s, "\"message\":\"REQ\""));
	assert_non_null(strstr(s, "\"flags\":[\"retry\"]"));
	assert_non_null(strstr(s, "\"timeouts\":[\n{\"lane\":1"));
	assert_non_null(strstr(s, "\"source\":\"x<y>.pcap\""));
	free(s);

	s = render(ladder_render_svg, &m);
	assert_memory_equal(s, "<?xml", 5);
	assert_non_null(strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(s, "REP 0x00002222-&gt;0x00001111"));
	assert_non_null(strstr(s, "[retry 1]"));
	assert_non_null(strstr(s, "gap ")); /* 67 ms after 100 us rows */
	free(s);

	s = render(ladder_render_html, &m);
	assert_memory_equal(s, "<!DOCTYPE html>", 15);
	assert_non_null(strstr(s, "x&lt;y&gt;.pcap"));
	assert_non_null(strstr(s, "</svg>"));
	/* Self-contained: the SVG namespace is the only URL. */
	assert_non_null(strstr(s, "http"));
	assert_null(strstr(strstr(s, "http") + 4, "http"));
	free(s);
	ladder_model_free(&m);
}

/* A port's MAD to itself, captured going out and coming in: one arrow. */
static void echo_to_own_port(void **state)
{
	struct cap *c = *state;
	struct ladder_model m;
	uint8_t mad[256];

	cap_init(c);
	req(mad, 0x10, A_ID, SID_1, LID_A, LID_A);
	cap_add(c, 0, LID_A, LID_A, mad);
	cap_add(c, 5 * US, LID_A, LID_A, mad);
	rep(mad, 0x20, B_ID, A_ID);
	cap_add(c, 50 * US, LID_A, LID_A, mad);
	cap_add(c, 55 * US, LID_A, LID_A, mad);
	m = build(c, NULL);
	assert_int_equal(m.nlanes, 1);
	assert_int_equal(m.narrows, 2);
	assert_arrow(&m, 0, "REQ", 0, 0, 0);
	assert_arrow(&m, 1, "REP", 0, 0, 0);
	ladder_model_free(&m);
}

static void not_a_capture(void **state)
{
	struct ladder_model m;
	static const uint8_t junk[] = "REQ REP RTU";

	(void)state;
	assert_int_equal(ladder_model_build(&m, NULL, "junk", junk, sizeof(junk), NULL), -EPROTO);
	assert_int_equal(ladder_model_build(&m, NULL, "empty", junk, 0, NULL), -EPROTO);
}

static int setup(void **state)
{
	*state = malloc(sizeof(struct cap));
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(clean_handshake),	cmocka_unit_test(mra_extends_wait),
	    cmocka_unit_test(lost_rep_retry),	cmocka_unit_test(rej_reason),
	    cmocka_unit_test(crossed_dreqs),	cmocka_unit_test(sidr),
	    cmocka_unit_test(filters),		cmocka_unit_test(renderers),
	    cmocka_unit_test(echo_to_own_port), cmocka_unit_test(not_a_capture),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
