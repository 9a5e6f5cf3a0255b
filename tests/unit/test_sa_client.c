/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * SA client on a fake umad port, driven by a loop without a thread (real
 * clock; short timeouts only where a timeout is what is tested, generous
 * ones elsewhere so that a loaded machine cannot time a query out that
 * the fake SA answers): PathRecord Get with its component mask on the
 * wire, cache hits that send nothing, SA status -> errno, timeout after
 * exactly N retries, SM LID change picked up (and cache flushed) after a
 * timeout, redirection through ClassPortInfo, a GetTable answered with
 * RMPP, 1,000 queries in flight, concurrent asks for one path sharing one
 * query, an answer after a flush left out of the cache, P_Key and GID out
 * of service drops, MCMemberRecord and ServiceRecord methods, resolution
 * ServiceRecord queries coalesced and cached (never without a record).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mad/loop.h"
#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/sa_wire.h"
#include "fake_umad.h"

enum mode { SILENT, ANSWER, NO_RECORDS, REDIRECT, RMPP_TABLE };

struct env {
	struct fake_umad f;
	struct mad_loop *loop;
	struct sa_client *c;
	enum mode mode;
	unsigned answered;
};

static void respond(struct fake_umad *f, unsigned i, uint16_t status, const void *rec,
		    size_t rec_len, uint16_t attr_off)
{
	uint8_t mad[MAD_SIZE];
	const uint8_t *req = f->sent[i].mad;

	memcpy(mad, req, MAD_SIZE);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	/* SA answers Set with GetResp (IBA 15.4), Delete with DeleteResp. */
	if (mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD) == MAD_METHOD_SET)
		mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET);
	mad_set(mad, mad_hdr_fields, MAD_HDR_STATUS, status);
	mad_set(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, attr_off);
	if (rec)
		memcpy(mad + SA_DATA_OFFSET, rec, rec_len);
	fake_umad_inject(f, mad, MAD_SIZE, f->sent[i].agent, NULL);
}

static void path_rec(uint8_t *rec, uint16_t dlid)
{
	struct sa_path p = {.dlid = dlid,
			    .slid = 5,
			    .mtu = SA_MTU_2048,
			    .rate = 3,
			    .sl = 1,
			    .pkey = 0xffff,
			    .packet_life_time = 18,
			    .reversible = 1};

	sa_path_encode(&p, rec);
}

static void rmpp_segment(struct fake_umad *f, unsigned i, unsigned seg, unsigned nseg,
			 const uint8_t *data, size_t last_bytes)
{
	uint8_t mad[MAD_SIZE];
	uint8_t *rh = mad + MAD_RMPP_HDR_OFFSET;
	unsigned flags = MAD_RMPP_FLAG_ACTIVE;

	memcpy(mad, f->sent[i].mad, MAD_SIZE);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET_TABLE_RESP & 0x7f);
	mad_set(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, SA_PR_SIZE / 8);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, 1);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, MAD_RMPP_TYPE_DATA);
	if (seg == 1)
		flags |= MAD_RMPP_FLAG_FIRST;
	if (seg == nseg) {
		flags |= MAD_RMPP_FLAG_LAST;
		mad_set(rh, mad_rmpp_fields, MAD_RMPP_PAYLOAD_LENGTH, 20 + last_bytes);
	}
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS, flags);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, seg);
	memcpy(mad + SA_DATA_OFFSET, data + (seg - 1) * 200, seg == nseg ? last_bytes : 200);
	fake_umad_inject(f, mad, MAD_SIZE, f->sent[i].agent, NULL);
}

/* The fake SA: answers each request according to the test's mode. */
static void sa_responder(struct fake_umad *f, unsigned i, void *arg)
{
	struct env *e = arg;
	const uint8_t *req = f->sent[i].mad;
	uint16_t attr = (uint16_t)mad_get(req, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID);
	uint8_t rec[SA_SR_SIZE];

	if (mad_get(req, mad_hdr_fields, MAD_HDR_R))
		return; /* our RMPP ACKs */
	if (mad_get(req + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE))
		return;
	switch (e->mode) {
	case SILENT:
		return;
	case NO_RECORDS:
		respond(f, i, SA_STATUS_NO_RECORDS, NULL, 0, 0);
		break;
	case REDIRECT:
		if (attr == SA_ATTR_CLASS_PORT_INFO) {
			uint8_t cpi[MAD_CPI_SIZE] = {0};

			mad_set(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_LID, 9);
			mad_set(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_QP, 5);
			mad_set(cpi, mad_cpi_fields, MAD_CPI_REDIRECT_Q_KEY, 0x1234);
			respond(f, i, 0, cpi, sizeof(cpi), 0);
		} else if (f->sent[i].addr.lid != 9) {
			respond(f, i, MAD_STATUS_REDIRECT, NULL, 0, 0);
		} else {
			path_rec(rec, 77);
			respond(f, i, 0, rec, SA_PR_SIZE, SA_PR_SIZE / 8);
		}
		break;
	case ANSWER:
		if (attr == SA_ATTR_PATH_RECORD) {
			path_rec(rec,
				 (uint16_t)mad_get(req + SA_DATA_OFFSET, sa_pr_fields, SA_PR_DLID));
			respond(f, i, 0, rec, SA_PR_SIZE, SA_PR_SIZE / 8);
		} else if (mad_get(req, mad_hdr_fields, MAD_HDR_METHOD) == MAD_METHOD_GET_TABLE) {
			/* One ServiceRecord: the template with a GID, as a table. */
			memcpy(rec, req + SA_DATA_OFFSET, SA_SR_SIZE);
			memset(rec + sa_sr_fields[SA_SR_SERVICE_GID].byte, 0xab, 16);
			respond(f, i, 0, rec, SA_SR_SIZE, SA_SR_SIZE / 8);
		} else {
			/* Echo the record, as an SA confirming a Set/Delete does. */
			respond(f, i, 0, req + SA_DATA_OFFSET, SA_SR_SIZE, 0);
		}
		break;
	case RMPP_TABLE: {
		/* 5 PathRecords = 320 bytes: two segments (200 + 120). */
		uint8_t data[400];

		for (unsigned k = 0; k < 5; k++)
			path_rec(data + k * SA_PR_SIZE, (uint16_t)(100 + k));
		rmpp_segment(f, i, 1, 2, data, 120);
		rmpp_segment(f, i, 2, 2, data, 120);
		break;
	}
	}
	e->answered++;
}

/* Per try: long enough that no answered query is ever resent. */
#define PATIENT_MS 60000
/* For the tests of timeouts, where no answer comes. */
#define SHORT_MS 20

static int setup_with(void **state, unsigned timeout_ms)
{
	struct env *e = calloc(1, sizeof(*e));
	struct sa_client_params p = {0};

	fake_umad_init(&e->f);
	e->f.on_send = sa_responder;
	e->f.on_send_arg = e;
	assert_int_equal(mad_loop_create(&e->loop, NULL, NULL), 0);
	p.loop = e->loop;
	p.ops = &fake_umad_ops;
	p.ops_ctx = &e->f;
	p.timeout_ms = timeout_ms;
	p.retries = 2;
	p.cache_lifetime_ms = 60000;
	assert_int_equal(sa_client_open(&e->c, &p), 0);
	e->mode = ANSWER;
	*state = e;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, PATIENT_MS);
}

static int setup_short(void **state)
{
	return setup_with(state, SHORT_MS);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Run the loop until *count reaches want, for at most a generous bound. */
static void run_until(struct env *e, const unsigned *count, unsigned want)
{
	uint64_t end = now_ms() + 120000;

	while (*count < want && now_ms() < end)
		mad_loop_run_once(e->loop, 100);
	assert_int_equal(*count, want);
}

static int teardown(void **state)
{
	struct env *e = *state;

	sa_client_close(e->c);
	mad_loop_destroy(e->loop);
	fake_umad_destroy(&e->f);
	free(e);
	return 0;
}

static void dlid_query(struct sa_path_query *q, uint16_t dlid)
{
	memset(q, 0, sizeof(*q));
	q->rec.slid = 5;
	q->rec.dlid = dlid;
	q->rec.numb_path = 1;
	q->rec.reversible = 1;
	q->comp_mask =
	    SA_PR_COMP_SLID | SA_PR_COMP_DLID | SA_PR_COMP_NUMB_PATH | SA_PR_COMP_REVERSIBLE;
}

static void test_path_get_and_cache(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct sa_path p[4];
	unsigned n;
	uint16_t st;
	const uint8_t *m;

	dlid_query(&q, 12);
	assert_int_equal(sa_path_query(e->c, &q, p, 4, &n, &st), 0);
	assert_int_equal(n, 1);
	assert_int_equal(st, 0);
	assert_int_equal(p[0].dlid, 12);
	assert_int_equal(p[0].mtu, SA_MTU_2048);
	assert_int_equal(p[0].packet_life_time, 18);
	assert_int_equal(e->f.nsent, 1);
	m = e->f.sent[0].mad;
	assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_GET);
	assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID), SA_ATTR_PATH_RECORD);
	assert_int_equal(mad_get(m + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_COMPONENT_MASK),
			 q.comp_mask);
	assert_int_equal(mad_get(m + SA_DATA_OFFSET, sa_pr_fields, SA_PR_NUMB_PATH), 1);
	assert_int_equal(e->f.sent[0].addr.lid, 1); /* the SM LID */
	assert_int_equal(e->f.sent[0].addr.qpn, 1);

	/* Same query again: answered from the cache, nothing sent. */
	memset(p, 0, sizeof(p));
	assert_int_equal(sa_path_query(e->c, &q, p, 4, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].dlid, 12);
	assert_int_equal(e->f.nsent, 1);
	q.no_cache = true;
	assert_int_equal(sa_path_query(e->c, &q, p, 4, &n, NULL), 0);
	assert_int_equal(e->f.nsent, 2);
}

static void test_status_and_timeout(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct sa_path p[1];
	struct sa_client_stats s;
	unsigned n;
	uint16_t st;

	e->mode = NO_RECORDS;
	dlid_query(&q, 13);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, &st), -ENOENT);
	assert_int_equal(st, SA_STATUS_NO_RECORDS);
	assert_int_equal(n, 0);

	/* No SA: the first try and exactly 2 retries, then -ETIMEDOUT. */
	e->mode = SILENT;
	e->f.nsent = 0;
	dlid_query(&q, 14);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), -ETIMEDOUT);
	assert_int_equal(e->f.nsent, 3);
	assert_int_equal(sa_client_stats(e->c, &s), 0);
	assert_int_equal(s.mad.retries, 2);
	assert_int_equal(s.mad.timeouts, 1);
}

static void test_sm_change_flushes(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct sa_path p[1];
	struct sa_client_stats s;
	unsigned n, before;

	dlid_query(&q, 15);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	/* The SM moves; a timeout makes the client look at the port again. */
	e->f.port.sm_lid = 3;
	e->mode = SILENT;
	dlid_query(&q, 16);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), -ETIMEDOUT);
	e->mode = ANSWER;
	before = e->f.nsent;
	dlid_query(&q, 15); /* was cached: flushed with the SM change */
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	assert_int_equal(e->f.nsent, before + 1);
	assert_int_equal(e->f.sent[before].addr.lid, 3);
	assert_int_equal(sa_client_stats(e->c, &s), 0);
	assert_int_equal(s.port_changes, 1);
	assert_int_equal(s.cache_flushes, 1);
}

static void test_redirect(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct sa_path p[1];
	unsigned n;

	e->mode = REDIRECT;
	dlid_query(&q, 20);
	q.no_cache = true;
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	assert_int_equal(p[0].dlid, 77);
	/* Query, ClassPortInfo, query again to the redirect target. */
	assert_int_equal(e->f.nsent, 3);
	assert_int_equal(mad_get(e->f.sent[1].mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID),
			 SA_ATTR_CLASS_PORT_INFO);
	assert_int_equal(e->f.sent[2].addr.lid, 9);
	assert_int_equal(e->f.sent[2].addr.qpn, 5);
	assert_int_equal(e->f.sent[2].addr.qkey, 0x1234);
	/* The next query goes straight there. */
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	assert_int_equal(e->f.nsent, 4);
	assert_int_equal(e->f.sent[3].addr.lid, 9);
}

static void test_rmpp_table(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct sa_path p[8];
	unsigned n;

	e->mode = RMPP_TABLE;
	memset(&q, 0, sizeof(q));
	q.table = true;
	q.rec.slid = 5;
	q.comp_mask = SA_PR_COMP_SLID;
	assert_int_equal(sa_path_query(e->c, &q, p, 8, &n, NULL), 0);
	assert_int_equal(n, 5);
	for (unsigned k = 0; k < 5; k++)
		assert_int_equal(p[k].dlid, 100 + k);
	assert_int_equal(mad_get(e->f.sent[0].mad, mad_hdr_fields, MAD_HDR_METHOD),
			 MAD_METHOD_GET_TABLE);
	/* ACK of segment 1 (window of one), then the final ACK of 2. */
	assert_int_equal(e->f.nsent, 3);
	assert_int_equal(mad_get(e->f.sent[2].mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields,
				 MAD_RMPP_SEGMENT_NUMBER),
			 2);
}

struct many {
	unsigned done, ok;
};

static void on_path(void *arg, int status, const struct sa_path *paths, unsigned n)
{
	struct many *m = arg;

	m->done++;
	if (status == 0 && n == 1 && paths[0].dlid >= 1000)
		m->ok++;
}

static void test_thousand_in_flight(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct many m = {0};

	/* Hold the answers back until all 1,000 are out. */
	e->mode = SILENT;
	for (unsigned i = 0; i < 1000; i++) {
		dlid_query(&q, (uint16_t)(1000 + i));
		assert_int_equal(sa_path_query_async(e->c, &q, on_path, &m), 0);
	}
	run_until(e, &e->f.nsent, 1000);
	assert_int_equal(m.done, 0);
	e->mode = ANSWER;
	for (unsigned i = 0; i < 1000; i++)
		sa_responder(&e->f, i, e);
	run_until(e, &m.done, 1000);
	assert_int_equal(m.ok, 1000);
	assert_int_equal(e->f.nsent, 1000); /* none resent */
}

/* Run the loop until every ask posted has reached it (sent or joined). */
static void run_until_asked(struct env *e, uint64_t want)
{
	struct sa_client_stats s;

	for (uint64_t end = now_ms() + 120000; now_ms() < end;) {
		assert_int_equal(sa_client_stats(e->c, &s), 0);
		if (s.path_queries + s.path_coalesced + s.cache_hits_late >= want)
			break;
		mad_loop_run_once(e->loop, 10);
	}
	assert_int_equal(s.path_queries + s.path_coalesced + s.cache_hits_late, want);
}

/*
 * N asks for one path before the SA answers: one SA query, and every
 * ask's callback gets its answer; the next ask is a cache hit.
 */
static void test_coalesced_asks(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct sa_client_stats s;
	struct many m = {0};
	const unsigned N = 8;

	e->mode = SILENT;
	dlid_query(&q, 1050);
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(sa_path_query_async(e->c, &q, on_path, &m), 0);
	run_until_asked(e, N);
	assert_int_equal(e->f.nsent, 1);
	assert_int_equal(m.done, 0);
	assert_int_equal(sa_client_stats(e->c, &s), 0);
	assert_int_equal(s.path_queries, 1);
	assert_int_equal(s.path_coalesced, N - 1);

	/* One more, posted while the answer is on its way: joins it or finds it cached. */
	assert_int_equal(sa_path_query_async(e->c, &q, on_path, &m), 0);
	e->mode = ANSWER;
	sa_responder(&e->f, 0, e);
	run_until(e, &m.done, N + 1);
	assert_int_equal(m.ok, N + 1);
	assert_int_equal(e->f.nsent, 1);
	assert_int_equal(sa_client_stats(e->c, &s), 0);
	assert_int_equal(s.path_queries, 1);
	assert_int_equal(s.path_coalesced + s.cache_hits_late, N);

	/* Cached now: answered on this thread before the call returns. */
	assert_int_equal(sa_path_query_async(e->c, &q, on_path, &m), 0);
	assert_int_equal(m.done, N + 2);
	assert_int_equal(m.ok, N + 2);
	assert_int_equal(e->f.nsent, 1);
}

/* Run the loop until the client saw the port change (its check comes once a second). */
static void wait_port_change(struct env *e, uint64_t want)
{
	struct sa_client_stats s;

	for (uint64_t end = now_ms() + 120000; now_ms() < end;) {
		mad_loop_run_once(e->loop, 100);
		assert_int_equal(sa_client_stats(e->c, &s), 0);
		if (s.port_changes >= want)
			break;
	}
	assert_int_equal(s.port_changes, want);
	assert_int_equal(s.cache_flushes, want);
}

/*
 * The SM moves while a query is out: its answer is delivered but not
 * cached (it was asked before the flush), so the next ask goes to the SA.
 */
static void test_late_answer_not_cached(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct many m = {0};
	unsigned before;

	e->mode = SILENT;
	dlid_query(&q, 1060);
	assert_int_equal(sa_path_query_async(e->c, &q, on_path, &m), 0);
	run_until(e, &e->f.nsent, 1);
	e->f.port.sm_lid = 3;
	wait_port_change(e, 1);
	e->mode = ANSWER;
	sa_responder(&e->f, 0, e);
	run_until(e, &m.done, 1);
	assert_int_equal(m.ok, 1);

	before = e->f.nsent;
	assert_int_equal(sa_path_query_async(e->c, &q, on_path, &m), 0);
	assert_int_equal(m.done, 1); /* not a hit */
	run_until(e, &m.done, 2);
	assert_int_equal(m.ok, 2);
	assert_int_equal(e->f.nsent, before + 1);
	assert_int_equal(e->f.sent[before].addr.lid, 3);
}

/* A new P_Key at index 0 may change the paths: the cache is flushed. */
static void test_pkey0_change_flushes(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct sa_path p[1];
	unsigned n;

	dlid_query(&q, 31);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	assert_int_equal(e->f.nsent, 1);
	e->f.port.pkey0 = 0x8001;
	wait_port_change(e, 1);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	assert_int_equal(e->f.nsent, 2);
}

/* A GID out of service: the paths asked for it are dropped and counted. */
static void test_gid_gone(void **state)
{
	struct env *e = *state;
	struct sa_path_query q, other;
	struct sa_client_stats s;
	struct sa_path p[1];
	uint8_t g[16] = {0xfe, 0x80, [15] = 9};
	unsigned n;

	dlid_query(&q, 32);
	memcpy(q.rec.dgid, g, 16);
	q.comp_mask |= SA_PR_COMP_DGID;
	dlid_query(&other, 33);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	assert_int_equal(sa_path_query(e->c, &other, p, 1, &n, NULL), 0);
	assert_int_equal(sa_client_path_gid_gone(e->c, g), 1);
	assert_int_equal(sa_client_stats(e->c, &s), 0);
	assert_int_equal(s.cache_dropped, 1);
	assert_int_equal(sa_path_query(e->c, &other, p, 1, &n, NULL), 0);
	assert_int_equal(e->f.nsent, 2); /* still cached */
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	assert_int_equal(e->f.nsent, 3); /* asked again */
	assert_int_equal(sa_client_path_gid_gone(NULL, g), 0);
}

static void test_mcmember_and_service(void **state)
{
	struct env *e = *state;
	struct sa_mcmember mm = {0}, out;
	struct sa_service sv = {0};
	const uint8_t *m;

	mm.mgid[0] = 0xff;
	mm.mgid[1] = 0x12;
	mm.port_gid[0] = 0xfe;
	mm.join_state = SA_JOIN_FULL_MEMBER;
	mm.qkey = 0x11;
	assert_int_equal(
	    sa_mcmember_join(e->c, &mm,
			     SA_MCMR_COMP_MGID | SA_MCMR_COMP_PORT_GID | SA_MCMR_COMP_JOIN_STATE,
			     &out),
	    0);
	assert_int_equal(out.join_state, SA_JOIN_FULL_MEMBER);
	assert_int_equal(out.qkey, 0x11);
	m = e->f.sent[0].mad;
	assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_SET);
	assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID),
			 SA_ATTR_MC_MEMBER_RECORD);
	assert_int_equal(sa_mcmember_leave(e->c, &mm, SA_MCMR_COMP_MGID, NULL), 0);
	assert_int_equal(mad_get(e->f.sent[1].mad, mad_hdr_fields, MAD_HDR_METHOD),
			 MAD_METHOD_DELETE);

	sv.id = 0x1000000000000001ull;
	strcpy(sv.name, "madcm-test");
	sv.lease = SA_SR_LEASE_INFINITE;
	assert_int_equal(
	    sa_service_register(e->c, &sv, SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_NAME), 0);
	m = e->f.sent[2].mad;
	assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID), SA_ATTR_SERVICE_RECORD);
	assert_int_equal(mad_get(m + SA_DATA_OFFSET, sa_sr_fields, SA_SR_SERVICE_ID), sv.id);
	assert_int_equal(sa_service_delete(e->c, &sv, SA_SR_COMP_SERVICE_ID), 0);
	assert_int_equal(mad_get(e->f.sent[3].mad, mad_hdr_fields, MAD_HDR_METHOD),
			 MAD_METHOD_DELETE);
	strcpy(sv.name, "x");
	memset(sv.name, 'a', 64);
	sv.name[64] = 'b'; /* not NUL-terminated within 65: too long */
	assert_int_equal(sa_service_register(e->c, &sv, SA_SR_COMP_SERVICE_ID), -EINVAL);

	/* A leave sent now, not waited for: the Delete is out when it returns. */
	assert_int_equal(e->f.nsent, 4);
	assert_int_equal(sa_mcmember_leave_now(e->c, &mm, SA_MCMR_COMP_MGID), 0);
	assert_int_equal(e->f.nsent, 5);
	m = e->f.sent[4].mad;
	assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_DELETE);
	assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID),
			 SA_ATTR_MC_MEMBER_RECORD);
	assert_int_equal(sa_mcmember_leave_now(NULL, &mm, 0), -EINVAL);
	for (int i = 0; i < 5; i++) /* its answer, which frees it */
		mad_loop_run_once(e->loop, 10);
}

struct svc_asks {
	unsigned done, ok, enoent;
};

static void on_service(void *arg, int status, const struct sa_service *recs, unsigned n)
{
	struct svc_asks *m = arg;

	m->done++;
	if (status == -ENOENT)
		m->enoent++;
	if (status == 0 && n == 1 && recs[0].gid[0] == 0xab && recs[0].data8[15] == 7)
		m->ok++;
}

static uint64_t svc_query(struct sa_service *q, uint64_t id)
{
	uint64_t mask = SA_SR_COMP_SERVICE_ID;

	memset(q, 0, sizeof(*q));
	q->id = id;
	q->data8[15] = 7;
	for (unsigned i = 0; i < 16; i++)
		mask |= SA_SR_COMP_SERVICE_DATA8(i);
	return mask;
}

static void run_until_svc_asked(struct env *e, uint64_t want)
{
	struct sa_client_stats s;

	for (uint64_t end = now_ms() + 120000; now_ms() < end;) {
		assert_int_equal(sa_client_stats(e->c, &s), 0);
		if (s.service_queries + s.service_coalesced + s.service_hits_late >= want)
			break;
		mad_loop_run_once(e->loop, 10);
	}
	assert_int_equal(s.service_queries + s.service_coalesced + s.service_hits_late, want);
}

/*
 * Resolution ServiceRecord queries (sa_service_query_async): N asks
 * before the SA answers cost one GetTable, the next is a hit on this
 * thread; a port change, a GID out of service and a Set through the
 * client each drop it (one query more each); no record is never cached.
 */
static void test_service_resolution_cache(void **state)
{
	struct env *e = *state;
	struct sa_service q, reg;
	struct sa_client_stats s;
	struct svc_asks m = {0};
	uint64_t mask = svc_query(&q, 0x10006d04c6120001ull);
	const unsigned N = 8;
	uint8_t gid[16];
	const uint8_t *req;

	e->mode = SILENT;
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(sa_service_query_async(e->c, &q, mask, on_service, &m), 0);
	run_until_svc_asked(e, N);
	assert_int_equal(e->f.nsent, 1);
	req = e->f.sent[0].mad;
	assert_int_equal(mad_get(req, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_GET_TABLE);
	assert_int_equal(mad_get(req, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID),
			 SA_ATTR_SERVICE_RECORD);
	assert_true(mad_get(req + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_COMPONENT_MASK) == mask);
	assert_int_equal(m.done, 0);
	e->mode = ANSWER;
	sa_responder(&e->f, 0, e);
	run_until(e, &m.done, N);
	assert_int_equal(m.ok, N);
	assert_int_equal(sa_client_stats(e->c, &s), 0);
	assert_int_equal(s.service_queries, 1);
	assert_int_equal(s.service_coalesced, N - 1);

	/* Cached: answered here, no MAD. */
	assert_int_equal(sa_service_query_async(e->c, &q, mask, on_service, &m), 0);
	assert_int_equal(m.ok, N + 1);
	assert_int_equal(e->f.nsent, 1);
	assert_int_equal(sa_client_stats(e->c, &s), 0);
	assert_int_equal(s.service_cache_hits, 1);

	/* A GID out of service that no record names drops nothing; the record's does. */
	memset(gid, 0xcd, 16);
	assert_int_equal(sa_client_service_gid_gone(e->c, gid), 0);
	memset(gid, 0xab, 16);
	assert_int_equal(sa_client_service_gid_gone(e->c, gid), 1);
	assert_int_equal(sa_service_query_async(e->c, &q, mask, on_service, &m), 0);
	run_until(e, &m.done, N + 2);
	assert_int_equal(e->f.nsent, 2);

	/* A Set of the same ServiceID through this client: the answer may change. */
	reg = q;
	assert_int_equal(sa_service_register(e->c, &reg, SA_SR_COMP_SERVICE_ID), 0);
	assert_int_equal(e->f.nsent, 3);
	assert_int_equal(sa_service_query_async(e->c, &q, mask, on_service, &m), 0);
	run_until(e, &m.done, N + 3);
	assert_int_equal(e->f.nsent, 4);
	assert_int_equal(m.ok, N + 3);

	/* A port change (a new SM, a reregistration's flush) drops it too. */
	e->f.port.sm_lid = 3;
	wait_port_change(e, 1);
	assert_int_equal(sa_service_query_async(e->c, &q, mask, on_service, &m), 0);
	run_until(e, &m.done, N + 4);
	assert_int_equal(e->f.nsent, 5);
	assert_int_equal(e->f.sent[4].addr.lid, 3);

	/* No record: -ENOENT, asked again every time. */
	mask = svc_query(&q, 0x10006d04c6120002ull);
	e->mode = NO_RECORDS;
	assert_int_equal(sa_service_query_async(e->c, &q, mask, on_service, &m), 0);
	run_until(e, &m.done, N + 5);
	assert_int_equal(sa_service_query_async(e->c, &q, mask, on_service, &m), 0);
	run_until(e, &m.done, N + 6);
	assert_int_equal(m.enoent, 2);
	assert_int_equal(e->f.nsent, 7);
	assert_int_equal(sa_service_query_async(NULL, &q, mask, on_service, &m), -EINVAL);
}

/* Only cache hits, no queries: the periodic port check still flushes. */
static void test_periodic_port_check(void **state)
{
	struct env *e = *state;
	struct sa_path_query q;
	struct sa_path p[1];
	struct sa_client_stats s;
	unsigned n, before;

	dlid_query(&q, 30);
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0);
	e->f.port.sm_lid = 7;
	/* The check comes within a second or so: wait for it, generously. */
	for (uint64_t end = now_ms() + 120000; now_ms() < end;) {
		mad_loop_run_once(e->loop, 100);
		assert_int_equal(sa_client_stats(e->c, &s), 0);
		if (s.port_changes)
			break;
	}
	assert_int_equal(s.port_changes, 1);
	before = e->f.nsent;
	assert_int_equal(sa_path_query(e->c, &q, p, 1, &n, NULL), 0); /* a miss now */
	assert_int_equal(e->f.nsent, before + 1);
	assert_int_equal(e->f.sent[before].addr.lid, 7);
}

static void poll_transport(struct mad_loop *l, int fd, void *arg)
{
	(void)l;
	(void)fd;
	mad_transport_poll(arg, 0);
}

/* The client can borrow a transport that another engine (CM) owns. */
static void test_shared_transport(void **state)
{
	struct env *e = *state;
	struct mad_transport_params tp = {0};
	struct sa_client_params p = {0};
	struct mad_transport *t;
	struct sa_client *c2;
	struct sa_path_query q;
	struct sa_path path;
	static struct fake_umad f2; /* a second fd: its own receive queue */
	unsigned n;

	fake_umad_init(&f2);
	f2.on_send = sa_responder;
	f2.on_send_arg = e;
	tp.ops = &fake_umad_ops;
	tp.ops_ctx = &f2;
	tp.timers = mad_loop_timers(e->loop);
	assert_int_equal(mad_transport_open(&t, &tp), 0);
	assert_int_equal(mad_loop_watch_fd(e->loop, mad_transport_fd(t), poll_transport, t), 0);
	p.loop = e->loop;
	p.transport = t;
	p.timeout_ms = PATIENT_MS;
	assert_int_equal(sa_client_open(&c2, &p), 0);
	dlid_query(&q, 44);
	assert_int_equal(sa_path_query(c2, &q, &path, 1, &n, NULL), 0);
	assert_int_equal(path.dlid, 44);
	sa_client_close(c2); /* leaves the transport open */
	mad_loop_unwatch_fd(e->loop, mad_transport_fd(t));
	mad_transport_close(t);
	fake_umad_destroy(&f2);
}

/*
 * The record codecs: every member reaches its own wire field (checked
 * through the field tables) and comes back; a value too wide is -ERANGE.
 */
static void test_record_codecs(void **state)
{
	struct sa_path p = {.service_id = 0x1122334455667788ull,
			    .dlid = 0x1234,
			    .slid = 0x5678,
			    .raw_traffic = true,
			    .flow_label = 0xabcde,
			    .hop_limit = 0x40,
			    .tclass = 0xa0,
			    .reversible = true,
			    .numb_path = 0x7f,
			    .pkey = 0xffff,
			    .qos_class = 0xabc,
			    .sl = 0xe,
			    .mtu_selector = 2,
			    .mtu = 5,
			    .rate_selector = 1,
			    .rate = 7,
			    .packet_life_time_selector = 3,
			    .packet_life_time = 0x12,
			    .preference = 0x99},
		       p2;
	struct sa_mcmember m = {.qkey = 0x01234567,
				.mlid = 0xc001,
				.mtu_selector = 2,
				.mtu = 4,
				.tclass = 0x11,
				.pkey = 0x8001,
				.rate_selector = 2,
				.rate = 3,
				.packet_life_time_selector = 2,
				.packet_life_time = 0x13,
				.sl = 5,
				.flow_label = 0x12345,
				.hop_limit = 3,
				.scope = 2,
				.join_state = SA_JOIN_SEND_ONLY_NON_MEMBER,
				.proxy_join = true},
			   m2;
	struct sa_service sv = {.id = 0x1000000000000abcull,
				.pkey = 0x7fff,
				.lease = 3600,
				.name = "madcm"},
			  sv2;
	uint8_t rec[SA_SR_SIZE];

	(void)state;
	for (int i = 0; i < 16; i++) {
		p.dgid[i] = (uint8_t)(0x10 + i);
		p.sgid[i] = (uint8_t)(0x20 + i);
		m.mgid[i] = (uint8_t)(0x30 + i);
		m.port_gid[i] = (uint8_t)(0x40 + i);
		sv.gid[i] = (uint8_t)(0x50 + i);
		sv.key[i] = (uint8_t)(0x60 + i);
		sv.data8[i] = (uint8_t)(0x70 + i);
	}
	sv.data16[7] = 0xbeef;
	sv.data32[3] = 0xdeadbeef;
	sv.data64[1] = 0x0123456789abcdefull;

	assert_int_equal(sa_path_encode(&p, rec), 0);
	assert_true(mad_get(rec, sa_pr_fields, SA_PR_SERVICE_ID) == p.service_id);
	assert_int_equal(mad_get(rec, sa_pr_fields, SA_PR_DLID), 0x1234);
	assert_int_equal(mad_get(rec, sa_pr_fields, SA_PR_SLID), 0x5678);
	assert_int_equal(mad_get(rec, sa_pr_fields, SA_PR_FLOW_LABEL), 0xabcde);
	assert_int_equal(mad_get(rec, sa_pr_fields, SA_PR_QOS_CLASS), 0xabc);
	assert_int_equal(mad_get(rec, sa_pr_fields, SA_PR_PACKET_LIFE_TIME), 0x12);
	assert_int_equal(mad_get(rec, sa_pr_fields, SA_PR_PREFERENCE), 0x99);
	assert_memory_equal(rec + sa_pr_fields[SA_PR_SGID].byte, p.sgid, 16);
	sa_path_decode(rec, &p2);
	assert_memory_equal(&p, &p2, sizeof(p));
	p.sl = 16;
	assert_int_equal(sa_path_encode(&p, rec), -ERANGE);

	assert_int_equal(sa_mcmember_encode(&m, rec), 0);
	assert_int_equal(mad_get(rec, sa_mcmr_fields, SA_MCMR_Q_KEY), 0x01234567);
	assert_int_equal(mad_get(rec, sa_mcmr_fields, SA_MCMR_MLID), 0xc001);
	assert_int_equal(mad_get(rec, sa_mcmr_fields, SA_MCMR_JOIN_STATE),
			 SA_JOIN_SEND_ONLY_NON_MEMBER);
	assert_int_equal(mad_get(rec, sa_mcmr_fields, SA_MCMR_PROXY_JOIN), 1);
	assert_memory_equal(rec + sa_mcmr_fields[SA_MCMR_PORT_GID].byte, m.port_gid, 16);
	sa_mcmember_decode(rec, &m2);
	assert_memory_equal(&m, &m2, sizeof(m));
	m.flow_label = 1u << 20;
	assert_int_equal(sa_mcmember_encode(&m, rec), -ERANGE);

	assert_int_equal(sa_service_encode(&sv, rec), 0);
	assert_true(mad_get(rec, sa_sr_fields, SA_SR_SERVICE_ID) == sv.id);
	assert_int_equal(mad_get(rec, sa_sr_fields, SA_SR_SERVICE_LEASE), 3600);
	assert_memory_equal(rec + sa_sr_fields[SA_SR_SERVICE_KEY].byte, sv.key, 16);
	sa_service_decode(rec, &sv2);
	assert_memory_equal(&sv, &sv2, sizeof(sv));
	assert_int_equal(sa_path_encode(NULL, rec), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_path_get_and_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_status_and_timeout, setup_short, teardown),
	    cmocka_unit_test_setup_teardown(test_sm_change_flushes, setup_short, teardown),
	    cmocka_unit_test_setup_teardown(test_redirect, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rmpp_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_thousand_in_flight, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_coalesced_asks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_late_answer_not_cached, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pkey0_change_flushes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gid_gone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mcmember_and_service, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_service_resolution_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_periodic_port_check, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shared_transport, setup, teardown),
	    cmocka_unit_test(test_record_codecs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
