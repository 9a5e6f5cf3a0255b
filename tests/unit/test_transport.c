/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * MAD transport on a fake umad port and a fake clock: TID matching,
 * timeout -> retry -> -ETIMEDOUT after exactly N retries, late and
 * duplicate responses ignored and counted, unsolicited delivery, malformed
 * MADs dropped, RMPP responses reassembled and ACKed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "madcm/trace.h"
#include "mad/mad_wire.h"
#include "mad/pcap.h"
#include "mad/timer.h"
#include "mad/transport.h"
#include "fake_umad.h"

static uint64_t now_ns;
static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return now_ns;
}

struct env {
	struct fake_umad f;
	struct mad_timer_heap h;
	struct mad_transport *t;
	struct mad_agent *sa, *cm;
};

struct result {
	int calls;
	int status;
	size_t len;
	uint8_t mad[8192];
};

static void on_response(void *arg, int status, const void *mad, size_t len,
			const struct mad_addr *src)
{
	struct result *r = arg;

	(void)src;
	r->calls++;
	r->status = status;
	r->len = len;
	if (mad && len <= sizeof(r->mad))
		memcpy(r->mad, mad, len);
}

static int unsol_calls;
static void on_unsolicited(struct mad_agent *a, const void *mad, size_t len,
			   const struct mad_addr *src, void *arg)
{
	(void)a;
	(void)mad;
	(void)len;
	(void)src;
	(void)arg;
	unsol_calls++;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct mad_transport_params p = {0};
	struct mad_agent_desc d = {0};

	now_ns = 1000000000ull;
	fake_umad_init(&e->f);
	mad_timer_heap_init(&e->h, fake_clock, NULL);
	p.ops = &fake_umad_ops;
	p.ops_ctx = &e->f;
	p.timers = &e->h;
	assert_int_equal(mad_transport_open(&e->t, &p), 0);
	d.mgmt_class = MAD_CLASS_SUBN_ADM;
	d.class_version = 2;
	assert_int_equal(mad_agent_register(e->t, &d, &e->sa), 0);
	memset(&d, 0, sizeof(d));
	d.mgmt_class = MAD_CLASS_CM;
	d.class_version = 2;
	mad_method_mask_set(d.method_mask, MAD_METHOD_SEND);
	d.unsolicited = on_unsolicited;
	assert_int_equal(mad_agent_register(e->t, &d, &e->cm), 0);
	unsol_calls = 0;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	mad_transport_close(e->t);
	mad_timer_heap_destroy(&e->h);
	fake_umad_destroy(&e->f);
	free(e);
	return 0;
}

static const struct mad_addr sm = {.lid = 1, .qpn = 1, .qkey = MAD_QP1_QKEY};

static void make_get(uint8_t *mad)
{
	mad_hdr_init(mad, MAD_SIZE, MAD_CLASS_SUBN_ADM, 2, MAD_METHOD_GET, 0, 0x35, 0);
}

static void advance_ms(struct env *e, unsigned ms)
{
	now_ns += (uint64_t)ms * 1000000u;
	mad_timer_run(&e->h);
}

static uint64_t sent_tid(struct env *e, unsigned i)
{
	return mad_get(e->f.sent[i].mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
}

/* Responses go to the request with their TID, whatever the order. */
static void test_tid_matching(void **state)
{
	struct env *e = *state;
	struct result r[3] = {0};
	struct mad_send_opts o = {.timeout_ms = 100, .retries = 0};
	uint64_t tid[3];
	uint8_t mad[MAD_SIZE];

	for (int i = 0; i < 3; i++) {
		make_get(mad);
		assert_int_equal(
		    mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, &r[i], &tid[i]),
		    0);
	}
	assert_int_equal(e->f.nsent, 3);
	assert_true(tid[0] != tid[1] && tid[1] != tid[2]);
	assert_int_equal(sent_tid(e, 1), tid[1]);
	assert_int_equal(mad_transport_pending(e->t), 3);

	/* Answer the second first, its TID high half rewritten as ib_umad does. */
	fake_umad_respond(&e->f, 1, MAD_METHOD_GET_RESP, 0, NULL, 0, 0);
	mad_set(e->f.rx[0].mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID,
		(0xabcdull << 32) | (uint32_t)tid[1]);
	fake_umad_respond(&e->f, 0, MAD_METHOD_GET_RESP, 0, NULL, 0, 0);
	assert_int_equal(mad_transport_poll(e->t, 0), 2);
	assert_int_equal(r[1].calls, 1);
	assert_int_equal(r[1].status, 0);
	assert_int_equal(r[0].calls, 1);
	assert_int_equal(r[2].calls, 0);
	assert_int_equal(mad_transport_pending(e->t), 1);

	/* A response of another class with the same TID is not ours. */
	fake_umad_respond(&e->f, 2, MAD_METHOD_GET_RESP, 0, NULL, 0, 0);
	mad_set(e->f.rx[2].mad, mad_hdr_fields, MAD_HDR_MGMT_CLASS, MAD_CLASS_PERF_MGMT);
	mad_set(e->f.rx[2].mad, mad_hdr_fields, MAD_HDR_CLASS_VERSION, 1);
	mad_transport_poll(e->t, 0);
	assert_int_equal(r[2].calls, 0);
	fake_umad_respond(&e->f, 2, MAD_METHOD_GET_RESP, 0, NULL, 0, 0);
	mad_transport_poll(e->t, 0);
	assert_int_equal(r[2].calls, 1);
	assert_int_equal(mad_transport_pending(e->t), 0);
}

/* N retries resend the same TID; then -ETIMEDOUT, and not before. */
static void test_timeout_retries(void **state)
{
	struct env *e = *state;
	struct result r = {0};
	struct mad_send_opts o = {.timeout_ms = 100, .retries = 3};
	struct mad_transport_counters c;
	uint64_t tid;
	uint8_t mad[MAD_SIZE];

	make_get(mad);
	assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, &r, &tid), 0);
	advance_ms(e, 99);
	assert_int_equal(e->f.nsent, 1);
	for (unsigned i = 1; i <= 3; i++) {
		advance_ms(e, 1);
		assert_int_equal(e->f.nsent, 1 + i);
		assert_int_equal(sent_tid(e, i), tid);
		assert_int_equal(r.calls, 0);
		advance_ms(e, 99);
	}
	assert_int_equal(r.calls, 0);
	advance_ms(e, 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.status, -ETIMEDOUT);
	assert_int_equal(e->f.nsent, 4);
	mad_transport_counters(e->t, &c);
	assert_int_equal(c.retries, 3);
	assert_int_equal(c.timeouts, 1);
	assert_int_equal(c.sent, 4);

	/* The answer to the last try arrives late: counted, ignored. */
	fake_umad_respond(&e->f, 3, MAD_METHOD_GET_RESP, 0, NULL, 0, 0);
	mad_transport_poll(e->t, 0);
	assert_int_equal(r.calls, 1);
	mad_transport_counters(e->t, &c);
	assert_int_equal(c.late, 1);
}

/* Two answers to one request (both tries answered): the second is dropped. */
static void test_duplicate_response(void **state)
{
	struct env *e = *state;
	struct result r = {0};
	struct mad_send_opts o = {.timeout_ms = 100, .retries = 2};
	struct mad_transport_counters c;
	uint8_t mad[MAD_SIZE];

	make_get(mad);
	assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, &r, NULL), 0);
	advance_ms(e, 100); /* retried once */
	assert_int_equal(e->f.nsent, 2);
	fake_umad_respond(&e->f, 0, MAD_METHOD_GET_RESP, 0, NULL, 0, 0);
	fake_umad_respond(&e->f, 1, MAD_METHOD_GET_RESP, 0, NULL, 0, 0);
	mad_transport_poll(e->t, 0);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.status, 0);
	mad_transport_counters(e->t, &c);
	assert_int_equal(c.duplicates, 1);
	assert_int_equal(c.responses, 1);
	/* No timer left behind. */
	advance_ms(e, 1000);
	assert_int_equal(e->f.nsent, 2);
	assert_int_equal(r.calls, 1);
}

static void test_unsolicited_and_malformed(void **state)
{
	struct env *e = *state;
	struct mad_transport_counters c;
	uint8_t mad[MAD_SIZE];

	mad_hdr_init(mad, MAD_SIZE, MAD_CLASS_CM, 2, MAD_METHOD_SEND, 77, 0x10, 0);
	fake_umad_inject(&e->f, mad, MAD_SIZE, 1, NULL);
	fake_umad_inject(&e->f, mad, 10, 1, NULL);	       /* too short */
	mad_set(mad, mad_hdr_fields, MAD_HDR_BASE_VERSION, 2); /* bad base version */
	fake_umad_inject(&e->f, mad, MAD_SIZE, 1, NULL);
	mad_hdr_init(mad, MAD_SIZE, MAD_CLASS_CM, 2, MAD_METHOD_GET_RESP, 12345, 0x10, 0);
	fake_umad_inject(&e->f, mad, MAD_SIZE, 1, NULL); /* nobody asked */
	assert_int_equal(mad_transport_poll(e->t, 0), 4);
	assert_int_equal(unsol_calls, 1);
	mad_transport_counters(e->t, &c);
	assert_int_equal(c.unsolicited, 1);
	assert_int_equal(c.malformed, 2);
	assert_int_equal(c.unmatched, 1);
	assert_int_equal(c.received, 4);
}

static void test_cancel_and_close(void **state)
{
	struct env *e = *state;
	struct result r1 = {0}, r2 = {0};
	struct mad_send_opts o = {.timeout_ms = 100, .retries = 1};
	uint8_t mad[MAD_SIZE];
	uint64_t tid;

	make_get(mad);
	assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, &r1, &tid),
			 0);
	assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, &r2, NULL),
			 0);
	assert_int_equal(mad_request_cancel(e->t, tid), 0);
	assert_int_equal(r1.status, -ECANCELED);
	assert_int_equal(mad_request_cancel(e->t, tid), -ENOENT);
	assert_int_equal(mad_request_send(NULL, mad, MAD_SIZE, &sm, &o, on_response, &r1, NULL),
			 -EINVAL);
	assert_int_equal(mad_request_send(e->sa, mad, 300, &sm, &o, on_response, &r1, NULL),
			 -EINVAL);
	e->f.send_error = -EIO;
	assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, &r1, NULL),
			 -EIO);
	e->f.send_error = 0;
	mad_agent_unregister(e->sa); /* fails what it had in flight */
	e->sa = NULL;
	assert_int_equal(r2.calls, 1);
	assert_int_equal(r2.status, -ECANCELED);
}

/* A callback that sends anew once, on the agent in `resend_on`. */
static struct mad_agent *resend_on;
static struct result resent;
static void on_response_resend(void *arg, int status, const void *mad, size_t len,
			       const struct mad_addr *src)
{
	uint8_t m[MAD_SIZE];

	on_response(arg, status, mad, len, src);
	if (resend_on) {
		struct mad_agent *a = resend_on;

		resend_on = NULL;
		make_get(m);
		assert_int_equal(
		    mad_request_send(a, m, MAD_SIZE, &sm, NULL, on_response, &resent, NULL), 0);
	}
}

/* Many requests of two agents in flight (spread over the request table):
 * unregistering one fails its own, closing fails the rest, including one
 * a callback sends while the transport closes. */
static void test_unregister_and_close_many(void **state)
{
	struct env *e = *state;
	static struct result r[300];
	struct mad_send_opts o = {.timeout_ms = 100};
	uint8_t mad[MAD_SIZE];

	memset(r, 0, sizeof(r));
	memset(&resent, 0, sizeof(resent));
	for (unsigned i = 0; i < 300; i++) {
		make_get(mad);
		assert_int_equal(mad_request_send(i % 2 ? e->cm : e->sa, mad, MAD_SIZE, &sm, &o,
						  i == 1 ? on_response_resend : on_response, &r[i],
						  NULL),
				 0);
	}
	assert_int_equal(mad_transport_pending(e->t), 300);
	mad_agent_unregister(e->sa);
	e->sa = NULL;
	for (unsigned i = 0; i < 300; i++) {
		assert_int_equal(r[i].calls, i % 2 ? 0 : 1);
		if (!(i % 2))
			assert_int_equal(r[i].status, -ECANCELED);
	}
	assert_int_equal(mad_transport_pending(e->t), 150);
	resend_on = e->cm;
	mad_transport_close(e->t);
	e->t = NULL;
	for (unsigned i = 0; i < 300; i++) {
		assert_int_equal(r[i].calls, 1);
		assert_int_equal(r[i].status, -ECANCELED);
	}
	assert_int_equal(resent.calls, 1);
	assert_int_equal(resent.status, -ECANCELED);
	/* and none of their timers is left */
	assert_int_equal(e->h.n, 0);
}

/* A callback that cancels another request of the same bucket (its TID in
 * `cancel_tid`): the walk that fails an agent's requests must not step on
 * the one cancelled under it. */
static struct mad_transport *cancel_t;
static uint64_t cancel_tid;
static void on_response_cancel(void *arg, int status, const void *mad, size_t len,
			       const struct mad_addr *src)
{
	on_response(arg, status, mad, len, src);
	if (cancel_t)
		assert_int_equal(mad_request_cancel(cancel_t, cancel_tid), 0);
	cancel_t = NULL;
}

static void test_unregister_cancel_in_callback(void **state)
{
	struct env *e = *state;
	enum { N = 4097 }; /* one more than the request table's buckets */
	static struct result r[N];
	struct mad_send_opts o = {.timeout_ms = 100};
	uint8_t mad[MAD_SIZE];
	uint64_t first = 0, last = 0;

	memset(r, 0, sizeof(r));
	for (unsigned i = 0; i < N; i++) {
		make_get(mad);
		e->f.nsent = 0; /* the fake keeps a few sends; none is read here */
		assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o,
						  i == N - 1 ? on_response_cancel : on_response,
						  &r[i], i == 0 ? &first : &last),
				 0);
	}
	/* the first and the last share a bucket, the last before it */
	assert_int_equal((uint32_t)(last - first) % 4096, 0);
	cancel_t = e->t;
	cancel_tid = first;
	mad_agent_unregister(e->sa);
	e->sa = NULL;
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(r[i].calls, 1);
		assert_int_equal(r[i].status, -ECANCELED);
	}
	assert_int_equal(mad_transport_pending(e->t), 0);
}

/* Build RMPP DATA segment `seg` of `nseg` of a GetTableResp to sent MAD 0. */
static void inject_segment(struct env *e, unsigned seg, unsigned nseg, size_t last_bytes)
{
	uint8_t mad[MAD_SIZE];
	uint8_t *rh = mad + MAD_RMPP_HDR_OFFSET;
	unsigned flags = MAD_RMPP_FLAG_ACTIVE;
	uint32_t paylen = 0;

	memcpy(mad, e->f.sent[0].mad, MAD_SIZE);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET_TABLE_RESP & 0x7f);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, 1);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, MAD_RMPP_TYPE_DATA);
	if (seg == 1) {
		flags |= MAD_RMPP_FLAG_FIRST;
		paylen = (uint32_t)(nseg * 220 - (200 - last_bytes));
	}
	if (seg == nseg) {
		flags |= MAD_RMPP_FLAG_LAST;
		paylen = (uint32_t)(20 + last_bytes);
	}
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS, flags);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, seg);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_PAYLOAD_LENGTH, paylen);
	memset(mad + 56, (int)seg, 200);
	fake_umad_inject(&e->f, mad, MAD_SIZE, e->f.sent[0].agent, NULL);
}

static unsigned rmpp_type_of(struct env *e, unsigned i)
{
	return (unsigned)mad_get(e->f.sent[i].mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields,
				 MAD_RMPP_RMPP_TYPE);
}

static unsigned ack_seg(struct env *e, unsigned i)
{
	return (unsigned)mad_get(e->f.sent[i].mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields,
				 MAD_RMPP_SEGMENT_NUMBER);
}

/* Three segments, the third before the second: ACKs, then the whole table. */
static void test_rmpp_response(void **state)
{
	struct env *e = *state;
	struct result *r = calloc(1, sizeof(*r));
	struct mad_send_opts o = {.timeout_ms = 100, .retries = 1};
	uint8_t mad[MAD_SIZE];

	mad_hdr_init(mad, MAD_SIZE, MAD_CLASS_SUBN_ADM, 2, MAD_METHOD_GET_TABLE, 0, 0x35, 0);
	assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, r, NULL), 0);
	inject_segment(e, 1, 3, 72);
	mad_transport_poll(e->t, 0);
	/* Window of one at first: segment 1 is ACKed at once, GetTable method. */
	assert_int_equal(e->f.nsent, 2);
	assert_int_equal(rmpp_type_of(e, 1), MAD_RMPP_TYPE_ACK);
	assert_int_equal(ack_seg(e, 1), 1);
	assert_int_equal(mad_get(e->f.sent[1].mad, mad_hdr_fields, MAD_HDR_R), 0);
	assert_int_equal(mad_get(e->f.sent[1].mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID),
			 sent_tid(e, 0));
	advance_ms(e, 90);
	inject_segment(e, 3, 3, 72); /* out of order: ACK what we hold (1) */
	mad_transport_poll(e->t, 0);
	assert_int_equal(e->f.nsent, 3);
	assert_int_equal(ack_seg(e, 2), 1);
	advance_ms(e, 90); /* progress re-armed the request timer */
	assert_int_equal(e->f.nsent, 3);
	inject_segment(e, 2, 3, 72);
	mad_transport_poll(e->t, 0);
	assert_int_equal(r->calls, 1);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->len, 56 + 200 + 200 + 72);
	assert_int_equal(r->mad[56], 1);
	assert_int_equal(r->mad[56 + 200], 2);
	assert_int_equal(r->mad[56 + 400 + 71], 3);
	assert_int_equal(ack_seg(e, e->f.nsent - 1), 3);
	free(r);
}

/* The SA gives up mid-transfer: the request fails with -ECONNABORTED. */
static void test_rmpp_abort(void **state)
{
	struct env *e = *state;
	struct result r = {0};
	struct mad_send_opts o = {.timeout_ms = 100, .retries = 1};
	uint8_t mad[MAD_SIZE];

	mad_hdr_init(mad, MAD_SIZE, MAD_CLASS_SUBN_ADM, 2, MAD_METHOD_GET_TABLE, 0, 0x35, 0);
	assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, &r, NULL), 0);
	inject_segment(e, 1, 3, 72);
	memcpy(mad, e->f.rx[0].mad, MAD_SIZE);
	mad_set(mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, MAD_RMPP_TYPE_STOP);
	fake_umad_inject(&e->f, mad, MAD_SIZE, 0, NULL);
	mad_transport_poll(e->t, 0);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.status, -ECONNABORTED);
}

/* madcm_trace_start(): every MAD sent and received lands in the capture. */
static void test_trace(void **state)
{
	struct env *e = *state;
	struct result r = {0};
	struct mad_send_opts o = {.timeout_ms = 100};
	struct mad_pcap_reader rd;
	struct mad_pcap_record rec;
	char path[] = "/tmp/madcm-test-trace-XXXXXX";
	static uint8_t buf[65536];
	uint8_t mad[MAD_SIZE];
	ssize_t len;
	int fd, n = 0;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(madcm_trace_start(path), 0);
	assert_int_equal(madcm_trace_start(path), -1); /* one trace at a time */
	assert_int_equal(madcm_trace_active(), 1);
	make_get(mad);
	assert_int_equal(mad_request_send(e->sa, mad, MAD_SIZE, &sm, &o, on_response, &r, NULL), 0);
	fake_umad_respond(&e->f, 0, MAD_METHOD_GET_RESP, 0, NULL, 0, 0);
	mad_transport_poll(e->t, 0);
	assert_int_equal(r.calls, 1);
	assert_int_equal(madcm_trace_stop(), 0);
	assert_int_equal(madcm_trace_stop(), -1);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	len = read(fd, buf, sizeof(buf));
	close(fd);
	unlink(path);
	assert_int_equal(mad_pcap_reader_init(&rd, buf, (size_t)len), 0);
	while (mad_pcap_next(&rd, &rec) == 1) {
		struct mad_pcap_hdr h;
		const uint8_t *payload;
		size_t plen;

		assert_non_null(rec.pkt);
		assert_int_equal(
		    mad_pcap_parse_packet(rec.pkt, rec.pkt_len, &h, &payload, &plen, NULL), 0);
		assert_int_equal(plen, MAD_SIZE);
		/* Sent: LID 5 -> SM LID 1; received: the reverse. */
		assert_int_equal(h.slid, n == 0 ? 5 : 1);
		assert_int_equal(h.dlid, n == 0 ? 1 : 5);
		assert_int_equal(mad_get(payload, mad_hdr_fields, MAD_HDR_R), n);
		n++;
	}
	assert_int_equal(n, 2);
}

/* A port is found by its GID; an unknown GID is -ENODEV. */
static void test_open_by_gid(void **state)
{
	struct env *e = *state;
	struct mad_transport_params p = {0};
	struct mad_transport *t2;
	uint8_t gid[16];

	memcpy(gid, e->f.port.gid, 16);
	p.ops = &fake_umad_ops;
	p.ops_ctx = &e->f;
	p.timers = &e->h;
	p.gid = gid;
	assert_int_equal(mad_transport_open(&t2, &p), 0);
	assert_int_equal(mad_transport_port_cached(t2)->lid, 5);
	mad_transport_close(t2);
	gid[15] ^= 1;
	assert_int_equal(mad_transport_open(&t2, &p), -ENODEV);
	p.gid = NULL;
	p.ca = "nosuchca";
	p.port = 1;
	assert_int_not_equal(mad_transport_open(&t2, &p), 0);
	p.timers = NULL;
	assert_int_equal(mad_transport_open(&t2, &p), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_tid_matching, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeout_retries, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_duplicate_response, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unsolicited_and_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cancel_and_close, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unregister_and_close_many, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unregister_cancel_in_callback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rmpp_response, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rmpp_abort, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trace, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_open_by_gid, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
