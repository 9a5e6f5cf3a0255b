/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * SA notices on a fake umad port with a fake SA: the InformInfo and
 * Notice codecs (round trip, the wire bytes of a generic subscription,
 * values out of range), subscribe and unsubscribe (one SubnAdmSet of
 * InformInfo per trap, the SA's refusal as -errno, the asynchronous
 * form), a Report answered by a ReportResp that echoes it and delivered
 * to the handler, a repeated Report answered again but delivered once,
 * malformed Reports counted and dropped unanswered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mad/loop.h"
#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/sa_wire.h"
#include "fake_umad.h"

struct env {
	struct fake_umad f;
	struct mad_loop *loop;
	struct sa_client *c;
	uint16_t set_status; /* the fake SA's answer to InformInfo Sets */
	unsigned sets;
	struct sa_notice got[8];
	unsigned ngot;
	int async_status;
	bool async_done;
};

static const uint8_t gid_a[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0, 0x20, 1};

/*
 * The fake SA: a Set of InformInfo answered with a GetResp echoing it,
 * AttributeOffset 4 (36 bytes rounded down, as OpenSM writes it).
 */
static void sa_responder(struct fake_umad *f, unsigned i, void *arg)
{
	struct env *e = arg;
	const uint8_t *req = f->sent[i].mad;
	uint8_t mad[MAD_SIZE];

	if (mad_get(req, mad_hdr_fields, MAD_HDR_R) ||
	    mad_get(req, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) != SA_ATTR_INFORM_INFO)
		return;
	e->sets++;
	memcpy(mad, req, MAD_SIZE);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET);
	mad_set(mad, mad_hdr_fields, MAD_HDR_STATUS, e->set_status);
	mad_set(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, SA_II_SIZE / 8);
	fake_umad_inject(f, mad, MAD_SIZE, f->sent[i].agent, NULL);
}

static int setup(void **state)
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
	p.timeout_ms = 20;
	p.retries = 1;
	assert_int_equal(sa_client_open(&e->c, &p), 0);
	*state = e;
	return 0;
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

static void on_notice(void *arg, const struct sa_notice *n)
{
	struct env *e = arg;

	if (e->ngot < 8)
		e->got[e->ngot] = *n;
	e->ngot++;
}

/* A SubnAdmReport of trap `trap` naming gid_a, TID `tid`. */
static void report(uint8_t *mad, uint16_t trap, uint64_t tid)
{
	struct sa_notice n = {0};

	assert_int_equal(sa_mad_init(mad, MAD_METHOD_REPORT, SA_ATTR_NOTICE, tid, 0), 0);
	n.is_generic = true;
	n.type = SA_NOTICE_TYPE_SUBN_MGMT;
	n.producer_type = SA_NOTICE_PRODUCER_CLASS_MGR;
	n.trap_number = trap;
	n.issuer_lid = 1;
	memcpy(n.gid, gid_a, 16);
	memcpy(n.issuer_gid, gid_a, 16);
	n.issuer_gid[15] = 9;
	assert_int_equal(sa_notice_encode(&n, mad + SA_DATA_OFFSET), 0);
}

static void run_until_sent(struct env *e, unsigned nsent)
{
	for (int i = 0; i < 50 && e->f.nsent < nsent; i++)
		mad_loop_run_once(e->loop, 10);
}

static void drain(struct env *e)
{
	for (int i = 0; i < 5; i++)
		mad_loop_run_once(e->loop, 1);
}

static void test_codecs(void **state)
{
	struct sa_inform ii, back;
	struct sa_notice n = {0}, nb;
	uint8_t rec[SA_NOTICE_SIZE];

	(void)state;
	/* A generic subscription, byte by byte (IBA 13.4.8.3). */
	sa_inform_generic(&ii, SA_TRAP_GID_OUT_OF_SERVICE, true);
	assert_int_equal(sa_inform_encode(&ii, rec), 0);
	for (int i = 0; i < 16; i++)
		assert_int_equal(rec[i], 0);
	assert_int_equal(rec[16], 0xff);
	assert_int_equal(rec[17], 0xff); /* LIDRangeBegin: all */
	assert_int_equal(rec[22], 1);	 /* IsGeneric */
	assert_int_equal(rec[23], 1);	 /* Subscribe */
	assert_int_equal(rec[24], 0xff);
	assert_int_equal(rec[25], 0xff); /* Type: all */
	assert_int_equal(rec[26], 0);
	assert_int_equal(rec[27], 65); /* TrapNumber */
	assert_int_equal(rec[28], 0);
	assert_int_equal(rec[29], 0);
	assert_int_equal(rec[30], 1);  /* QPN 1 */
	assert_int_equal(rec[31], 18); /* RespTimeValue in the low 5 bits */
	assert_int_equal(rec[32], 0);
	assert_int_equal(rec[33], 0xff);
	assert_int_equal(rec[35], 0xff); /* ProducerType: all */
	sa_inform_decode(rec, &back);
	assert_memory_equal(&ii, &back, sizeof(ii));

	/* Out of range: QPN is 24 bits, RespTimeValue 5. */
	ii.qpn = 1u << 24;
	assert_int_equal(sa_inform_encode(&ii, rec), -ERANGE);
	sa_inform_generic(&ii, 64, false);
	ii.resp_time_value = 32;
	assert_int_equal(sa_inform_encode(&ii, rec), -ERANGE);
	assert_int_equal(sa_inform_encode(NULL, rec), -EINVAL);

	/* Notice: the GID of trap 64 at DataDetails + 6 (Notice byte 16). */
	n.is_generic = true;
	n.type = 4;
	n.producer_type = 4;
	n.trap_number = 64;
	n.issuer_lid = 0x12;
	n.toggle = true;
	n.count = 0x7fff;
	memcpy(n.gid, gid_a, 16);
	assert_int_equal(sa_notice_encode(&n, rec), 0);
	assert_memory_equal(rec + 16, gid_a, 16);
	assert_int_equal(rec[0], 0x84); /* IsGeneric | Type 4 */
	sa_notice_decode(rec, &nb);
	assert_true(nb.has_gid);
	assert_memory_equal(nb.gid, gid_a, 16);
	assert_int_equal(nb.trap_number, 64);
	assert_int_equal(nb.issuer_lid, 0x12);
	assert_int_equal(nb.count, 0x7fff);
	assert_true(nb.toggle);
	n.count = 0x8000; /* 15 bits */
	assert_int_equal(sa_notice_encode(&n, rec), -ERANGE);
	n.count = 0;
	n.type = 128; /* 7 bits */
	assert_int_equal(sa_notice_encode(&n, rec), -ERANGE);
	/* A trap that names no GID, or a vendor notice: no GID taken. */
	n.type = 4;
	n.trap_number = 128;
	assert_int_equal(sa_notice_encode(&n, rec), 0);
	sa_notice_decode(rec, &nb);
	assert_false(nb.has_gid);
	n.is_generic = false;
	n.trap_number = 64;
	assert_int_equal(sa_notice_encode(&n, rec), 0);
	sa_notice_decode(rec, &nb);
	assert_false(nb.has_gid);
}

/* OpenSM's rounded-down AttributeOffset: one record yes, a table no. */
static void test_attr_offset(void **state)
{
	uint8_t mad[MAD_SIZE];

	(void)state;
	assert_int_equal(sa_mad_init(mad, MAD_METHOD_SET, SA_ATTR_INFORM_INFO, 1, 0), 0);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET);
	mad_set(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, 4);
	assert_int_equal(sa_mad_check(mad, MAD_SIZE), 0);
	mad_set(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, 3);
	assert_int_equal(sa_mad_check(mad, MAD_SIZE), -EPROTO);
	mad_set(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, 4);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET_TABLE_RESP & 0x7f);
	assert_int_equal(sa_mad_check(mad, MAD_SIZE), -EPROTO);
	mad_set(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, 5);
	assert_int_equal(sa_mad_check(mad, MAD_SIZE), 0);
}

static void test_subscribe(void **state)
{
	struct env *e = *state;
	struct sa_inform ii;
	const uint8_t *m;

	assert_int_equal(sa_notice_subscribe(e->c, 64, 65, true), 0);
	assert_int_equal(e->f.nsent, 2);
	for (unsigned i = 0; i < 2; i++) {
		m = e->f.sent[i].mad;
		assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_SET);
		assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID),
				 SA_ATTR_INFORM_INFO);
		assert_int_equal(mad_get(m, mad_hdr_fields, MAD_HDR_CLASS_VERSION), 2);
		assert_int_equal(e->f.sent[i].addr.lid, 1); /* the SM LID */
		sa_inform_decode(m + SA_DATA_OFFSET, &ii);
		assert_true(ii.subscribe);
		assert_true(ii.is_generic);
		assert_int_equal(ii.trap_number, 64 + i);
	}
	assert_int_equal(sa_notice_subscribe(e->c, 64, 64, false), 0);
	sa_inform_decode(e->f.sent[2].mad + SA_DATA_OFFSET, &ii);
	assert_false(ii.subscribe);
	assert_int_equal(ii.trap_number, 64);
	/* Every trap: one Set with TrapNumber 0xFFFF. */
	assert_int_equal(sa_notice_subscribe(e->c, SA_II_TRAP_ALL, 0, true), 0);
	sa_inform_decode(e->f.sent[3].mad + SA_DATA_OFFSET, &ii);
	assert_int_equal(ii.trap_number, SA_II_TRAP_ALL);
	assert_int_equal(e->f.nsent, 4);
	/* The SA refuses: the first error, no further Set. */
	e->set_status = SA_STATUS_REQ_INVALID;
	assert_int_equal(sa_notice_subscribe(e->c, 64, 65, true), -EINVAL);
	assert_int_equal(e->f.nsent, 5);
	/* Bad ranges, nothing sent. */
	assert_int_equal(sa_notice_subscribe(e->c, 65, 64, true), -EINVAL);
	assert_int_equal(sa_notice_subscribe(e->c, 0, 1000, true), -EINVAL);
	assert_int_equal(sa_notice_subscribe(NULL, 64, 64, true), -EINVAL);
	assert_int_equal(e->f.nsent, 5);
}

static void on_async(void *arg, int status)
{
	struct env *e = arg;

	e->async_status = status;
	e->async_done = true;
}

static void test_subscribe_async(void **state)
{
	struct env *e = *state;
	struct sa_inform ii;

	assert_int_equal(sa_notice_subscribe_async(e->c, 64, 65, true, on_async, e), 0);
	for (int i = 0; i < 100 && !e->async_done; i++)
		mad_loop_run_once(e->loop, 10);
	assert_true(e->async_done);
	assert_int_equal(e->async_status, 0);
	assert_int_equal(e->sets, 2);
	sa_inform_decode(e->f.sent[1].mad + SA_DATA_OFFSET, &ii);
	assert_int_equal(ii.trap_number, 65);
	/* An SA that does not answer: -ETIMEDOUT after the retries. */
	e->f.on_send = NULL;
	e->async_done = false;
	assert_int_equal(sa_notice_subscribe_async(e->c, 64, 64, true, on_async, e), 0);
	for (int i = 0; i < 200 && !e->async_done; i++)
		mad_loop_run_once(e->loop, 10);
	assert_true(e->async_done);
	assert_int_equal(e->async_status, -ETIMEDOUT);
	assert_int_equal(sa_notice_subscribe_async(e->c, 64, 64, true, NULL, e), -EINVAL);
}

static void test_report(void **state)
{
	struct env *e = *state;
	struct mad_addr sa = {.lid = 1, .qpn = 1, .qkey = MAD_QP1_QKEY, .sl = 0};
	struct sa_client_stats st;
	uint8_t mad[MAD_SIZE];
	const uint8_t *r;
	int agent;

	assert_int_equal(sa_notice_handler(e->c, on_notice, e), 0);
	agent = e->f.next_agent - 1; /* the Report agent, registered just now */
	assert_int_equal(sa_notice_handler(e->c, on_notice, e), 0);
	assert_int_equal(e->f.next_agent - 1, agent); /* once */

	report(mad, SA_TRAP_GID_OUT_OF_SERVICE, 0x1234567800000042ull);
	fake_umad_inject(&e->f, mad, MAD_SIZE, agent, &sa);
	run_until_sent(e, 1);
	assert_int_equal(e->f.nsent, 1);
	r = e->f.sent[0].mad;
	/* The ReportResp: same TID, attribute and Notice, R set, status 0. */
	assert_int_equal(mad_get(r, mad_hdr_fields, MAD_HDR_R), 1);
	assert_int_equal(mad_get(r, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_REPORT);
	assert_int_equal(r[3], MAD_METHOD_REPORT_RESP);
	assert_int_equal(mad_get(r, mad_hdr_fields, MAD_HDR_STATUS), 0);
	assert_int_equal(mad_get(r, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), 0x1234567800000042ull);
	assert_int_equal(mad_get(r, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID), SA_ATTR_NOTICE);
	assert_memory_equal(r + SA_DATA_OFFSET, mad + SA_DATA_OFFSET, SA_NOTICE_SIZE);
	assert_int_equal(e->f.sent[0].agent, agent);
	assert_int_equal(e->f.sent[0].addr.lid, 1);
	assert_int_equal(e->f.sent[0].addr.qpn, 1);
	assert_int_equal(e->f.sent[0].addr.qkey, MAD_QP1_QKEY);
	assert_int_equal(e->f.sent[0].timeout_ms, 0); /* a response: nothing awaited */
	assert_int_equal(e->ngot, 1);
	assert_int_equal(e->got[0].trap_number, 65);
	assert_true(e->got[0].has_gid);
	assert_memory_equal(e->got[0].gid, gid_a, 16);

	/* The SA did not see our answer and repeats: answered, not delivered. */
	fake_umad_inject(&e->f, mad, MAD_SIZE, agent, &sa);
	run_until_sent(e, 2);
	assert_int_equal(e->f.nsent, 2);
	assert_int_equal(e->ngot, 1);
	/* A new Report (another TID) is delivered. */
	report(mad, SA_TRAP_GID_IN_SERVICE, 0x43);
	fake_umad_inject(&e->f, mad, MAD_SIZE, agent, &sa);
	run_until_sent(e, 3);
	assert_int_equal(e->ngot, 2);
	assert_int_equal(e->got[1].trap_number, 64);

	assert_int_equal(sa_client_stats(e->c, &st), 0);
	assert_int_equal(st.reports, 2);
	assert_int_equal(st.report_resps, 3);
	assert_int_equal(st.report_dups, 1);
	assert_int_equal(st.report_malformed, 0);

	/* Handler removed: still answered, nobody told. */
	assert_int_equal(sa_notice_handler(e->c, NULL, NULL), 0);
	report(mad, SA_TRAP_GID_IN_SERVICE, 0x44);
	fake_umad_inject(&e->f, mad, MAD_SIZE, agent, &sa);
	run_until_sent(e, 4);
	assert_int_equal(e->f.nsent, 4);
	assert_int_equal(e->ngot, 2);
}

static void test_malformed_reports(void **state)
{
	struct env *e = *state;
	struct sa_client_stats st;
	uint8_t mad[MAD_SIZE];
	int agent;

	assert_int_equal(sa_notice_handler(e->c, on_notice, e), 0);
	agent = e->f.next_agent - 1;
	/* Not a Notice. */
	report(mad, 64, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID, SA_ATTR_PATH_RECORD);
	fake_umad_inject(&e->f, mad, MAD_SIZE, agent, NULL);
	/* Shorter than the Notice. */
	report(mad, 64, 2);
	fake_umad_inject(&e->f, mad, SA_DATA_OFFSET + SA_NOTICE_SIZE - 1, agent, NULL);
	/* Class version 1: the transport drops it before the client sees it. */
	report(mad, 64, 3);
	mad_set(mad, mad_hdr_fields, MAD_HDR_CLASS_VERSION, 1);
	fake_umad_inject(&e->f, mad, MAD_SIZE, agent, NULL);
	/* RMPP active. */
	report(mad, 64, 4);
	mad_set(mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, 1);
	mad_set(mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, MAD_RMPP_TYPE_DATA);
	mad_set(mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS,
		MAD_RMPP_FLAG_ACTIVE | MAD_RMPP_FLAG_FIRST | MAD_RMPP_FLAG_LAST);
	fake_umad_inject(&e->f, mad, MAD_SIZE, agent, NULL);
	drain(e);
	assert_int_equal(e->f.nsent, 0); /* none answered */
	assert_int_equal(e->ngot, 0);
	assert_int_equal(sa_client_stats(e->c, &st), 0);
	assert_int_equal(st.report_malformed, 3);
	assert_int_equal(st.mad.malformed, 1);
	assert_int_equal(st.reports, 0);
	/* A good one after them still works. */
	report(mad, 65, 5);
	fake_umad_inject(&e->f, mad, MAD_SIZE, agent, NULL);
	run_until_sent(e, 1);
	assert_int_equal(e->ngot, 1);
	/* The parser alone. */
	assert_int_equal(sa_report_parse(NULL, 0, NULL), -EINVAL);
	assert_int_equal(sa_report_parse(mad, 24, &e->got[0]), -EPROTO);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	assert_int_equal(sa_report_parse(mad, MAD_SIZE, &e->got[0]), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_codecs),
	    cmocka_unit_test(test_attr_offset),
	    cmocka_unit_test_setup_teardown(test_subscribe, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_subscribe_async, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_reports, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
