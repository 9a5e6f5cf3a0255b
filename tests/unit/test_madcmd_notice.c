/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd and the SA's notices, on a fake fabric of two CAs with client
 * sessions over socketpairs (the loop driven here): a session registers
 * a Report agent (the Report method alone; one a session); the first
 * subscription of a port goes to the SA, the same from a second session
 * is answered by the daemon, its renewal by a session that holds it goes
 * to the SA; a Report is answered by the daemon (one
 * ReportResp a copy received) and passed once to each session that
 * subscribed to its trap; the sessions' ReportResps never reach the SA;
 * malformed Reports are dropped unanswered; an unsubscribe another
 * session still needs stays here, and the last holder's session end
 * unsubscribes at the SA.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "mad/mad_wire.h"
#include "madcmd/madcmd.h"
#include "madcmd/madcmd_int.h"
#include "rtproto/rt_proto.h"
#include "sa/client.h"
#include "sa/sa_wire.h"
#include "tests/unit/fake_umad.h"

static struct env {
	struct fake_fabric fb;
	struct mad_loop *loop;
	struct madcmd *d;
	unsigned ii_on, ii_off; /* InformInfo Sets the SA saw */
	uint64_t ii_last_tid;
	uint8_t ii_last_rec[SA_II_SIZE];
	unsigned resps; /* ReportResps the SA saw */
} E;

static struct mad_umad_ops ops;
static uint32_t seq;

static void inject_open(int portid, int agent, const void *mad, size_t len)
{
	struct fake_fabric_open *op = &E.fb.opens[portid];
	struct fake_mad *m;
	uint64_t one = 1;

	pthread_mutex_lock(&E.fb.lock);
	m = &op->rx[op->rx_tail++ % FAKE_MAX_MADS];
	memcpy(m->mad, mad, len);
	m->len = len;
	m->agent = agent;
	memset(&m->addr, 0, sizeof(m->addr));
	m->addr.lid = 1;
	m->addr.qpn = 1;
	m->addr.qkey = MAD_QP1_QKEY;
	pthread_mutex_unlock(&E.fb.lock);
	if (write(op->evfd, &one, sizeof(one)) < 0)
		(void)0;
}

/* The fake SA grants every InformInfo Set (a GetResp echoing it). */
static int w_send(void *ctx, int portid, int agent, const void *mad, size_t len,
		  const struct mad_addr *dst, unsigned timeout_ms)
{
	const uint8_t *m = mad;
	int rc = fake_fabric_ops.send(ctx, portid, agent, mad, len, dst, timeout_ms);
	uint8_t resp[MAD_SIZE];

	if (rc || len != MAD_SIZE || m[1] != MAD_CLASS_SUBN_ADM)
		return rc;
	if (m[3] == MAD_METHOD_REPORT_RESP) {
		E.resps++;
		return 0;
	}
	if (m[3] != MAD_METHOD_SET ||
	    mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) != SA_ATTR_INFORM_INFO)
		return 0;
	if (mad_get(m + SA_DATA_OFFSET, sa_ii_fields, SA_II_SUBSCRIBE))
		E.ii_on++;
	else
		E.ii_off++;
	E.ii_last_tid = mad_get(m, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
	memcpy(E.ii_last_rec, m + SA_DATA_OFFSET, SA_II_SIZE);
	memcpy(resp, mad, MAD_SIZE);
	mad_set(resp, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(resp, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET);
	inject_open(portid, agent, resp, MAD_SIZE);
	return 0;
}

static void env_up(void)
{
	struct madcmd_params p = {0};

	memset(&E, 0, sizeof(E));
	fake_fabric_init(&E.fb, 2);
	ops = fake_fabric_ops;
	ops.send = w_send;
	assert_int_equal(mad_loop_create(&E.loop, NULL, NULL), 0);
	p.loop = E.loop;
	p.ops = &ops;
	p.ops_ctx = &E.fb;
	assert_int_equal(madcmd_open(&E.d, &p), 0);
	assert_int_equal(madcmd_port_count(E.d), 2);
}

static void env_down(void)
{
	madcmd_close(E.d);
	mad_loop_destroy(E.loop);
	fake_fabric_destroy(&E.fb);
}

static void pump(void)
{
	for (int i = 0; i < 16; i++)
		mad_loop_run_once(E.loop, 0);
}

static int client(void)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_true(madcmd_session_add(E.d, sv[1]) > 0);
	return sv[0];
}

static void send_msg(int fd, const void *m, size_t len)
{
	while (send(fd, m, len, MSG_DONTWAIT) != (ssize_t)len) {
		assert_true(errno == EAGAIN);
		mad_loop_run_once(E.loop, 1);
	}
}

static int recv_msg(int fd, void *buf, size_t cap)
{
	for (int i = 0; i < 3000; i++) {
		ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);

		if (n == 0)
			return 0;
		if (n > 0) {
			int t = madcmd_check(buf, (size_t)n);

			assert_true(t > 0);
			return t;
		}
		mad_loop_run_once(E.loop, 1);
	}
	fail_msg("no message from the daemon");
	return -1;
}

static void expect_quiet(int fd)
{
	uint8_t b[MADCMD_MSG_MAX];

	pump();
	assert_true(recv(fd, b, sizeof(b), MSG_DONTWAIT) < 0 && errno == EAGAIN);
}

static int hello_mad(int fd, const char *ca)
{
	struct madcmd_hello h;
	union {
		struct madcmd_hello_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;

	memset(&h, 0, sizeof(h));
	madcmd_hdr_init(&h.h, MADCMD_HELLO, sizeof(h), 0);
	h.kind = MADCMD_SESSION_MAD;
	h.layout = madcmd_layout();
	snprintf(h.ca, sizeof(h.ca), "%s", ca);
	send_msg(fd, &h, sizeof(h));
	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_HELLO_REP);
	return in.r.rc;
}

static int mad_reg(int fd, uint32_t mask0)
{
	struct madcmd_mad_reg m;
	union {
		struct madcmd_mad_reg_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;

	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, MADCMD_MAD_REG, sizeof(m), ++seq);
	m.mgmt_class = MAD_CLASS_SUBN_ADM;
	m.class_version = MAD_CLASS_VERSION_SA;
	m.method_mask[0] = mask0;
	send_msg(fd, &m, sizeof(m));
	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_MAD_REG_REP);
	return in.r.rc;
}

static void client_send(int fd, int agent, const uint8_t *mad)
{
	union {
		struct madcmd_mad m;
		uint8_t b[sizeof(struct madcmd_mad) + MAD_SIZE];
	} u;

	memset(&u, 0, sizeof(u));
	madcmd_hdr_init(&u.m.h, MADCMD_MAD_SEND, sizeof(u.m) + MAD_SIZE, 0);
	u.m.agent = agent;
	u.m.timeout_ms = 100;
	u.m.addr.lid = 1;
	u.m.addr.qpn = 1;
	u.m.addr.qkey = MAD_QP1_QKEY;
	u.m.len = MAD_SIZE;
	memcpy(u.m.mad, mad, MAD_SIZE);
	send_msg(fd, &u, sizeof(u.m) + MAD_SIZE);
}

static void client_recv(int fd, int agent, uint8_t *mad)
{
	union {
		struct madcmd_mad m;
		uint8_t b[MADCMD_MSG_MAX];
	} in;

	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_MAD_RECV);
	assert_int_equal(in.m.agent, agent);
	assert_int_equal(in.m.len, MAD_SIZE);
	memcpy(mad, in.m.mad, MAD_SIZE);
}

/* A program's SA client subscribing (on) or not to `trap`, TID `tid`. */
static void inform(int fd, int agent, uint16_t trap, bool on, uint64_t tid)
{
	uint8_t mad[MAD_SIZE], got[MAD_SIZE];
	struct sa_inform ii;

	assert_int_equal(sa_mad_init(mad, MAD_METHOD_SET, SA_ATTR_INFORM_INFO, tid, 0), 0);
	sa_inform_generic(&ii, trap, on);
	assert_int_equal(sa_inform_encode(&ii, mad + SA_DATA_OFFSET), 0);
	client_send(fd, agent, mad);
	client_recv(fd, agent, got);
	assert_int_equal(mad_get(got, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), tid);
	assert_int_equal(mad_get(got, mad_hdr_fields, MAD_HDR_R), 1);
	assert_int_equal(mad_get(got, mad_hdr_fields, MAD_HDR_STATUS), 0);
}

static void make_report(uint8_t *mad, uint16_t trap, uint64_t tid)
{
	struct sa_notice n = {0};

	assert_int_equal(sa_mad_init(mad, MAD_METHOD_REPORT, SA_ATTR_NOTICE, tid, 0), 0);
	n.is_generic = true;
	n.type = SA_NOTICE_TYPE_INFO;
	n.producer_type = SA_NOTICE_PRODUCER_CLASS_MGR;
	n.trap_number = trap;
	n.gid[0] = 0xfe;
	n.gid[1] = 0x80;
	n.gid[15] = 6;
	assert_int_equal(sa_notice_encode(&n, mad + SA_DATA_OFFSET), 0);
}

/* The SA sends a Report to the daemon's port of fake0. */
static void sa_report(const uint8_t *mad, size_t len)
{
	struct madcmd_served *p = &E.d->ports[0];

	assert_true(p->notice_agent >= 0);
	inject_open(p->proxy_portid, p->notice_agent, mad, len);
	pump();
}

static void test_notices(void **state)
{
	uint8_t mad[MAD_SIZE], got[MAD_SIZE];
	struct madcmd_served *p;
	int m1, m2, q1, q2, r1, r2;
	unsigned before;

	(void)state;
	env_up();
	p = &E.d->ports[0];
	assert_true(p->notice_agent >= 0);
	m1 = client();
	m2 = client();
	assert_int_equal(hello_mad(m1, "fake0"), 0);
	assert_int_equal(hello_mad(m2, "fake0"), 0);
	q1 = mad_reg(m1, 0);
	q2 = mad_reg(m2, 0);
	r1 = mad_reg(m1, 1u << MAD_METHOD_REPORT);
	r2 = mad_reg(m2, 1u << MAD_METHOD_REPORT);
	assert_true(q1 > 0 && q2 > 0 && r1 > 0 && r2 > 0);
	assert_int_not_equal(q1, r1);
	/* One Report agent a session; Report with anything else is refused. */
	assert_int_equal(mad_reg(m1, 1u << MAD_METHOD_REPORT), -EBUSY);
	assert_int_equal(mad_reg(m2, (1u << MAD_METHOD_REPORT) | (1u << MAD_METHOD_GET)), -EINVAL);

	/* The first subscription goes to the SA, the same one from m2 does not. */
	inform(m1, q1, SA_TRAP_GID_OUT_OF_SERVICE, true, 0x1001);
	assert_int_equal(E.ii_on, 1);
	assert_true((uint32_t)E.ii_last_tid != 0x1001); /* a daemon TID on the wire */
	inform(m2, q2, SA_TRAP_GID_OUT_OF_SERVICE, true, 0x2001);
	assert_int_equal(E.ii_on, 1);
	assert_int_equal(p->nc.subs_sent, 1);
	assert_int_equal(p->nc.subs_local, 1);
	/* m2 renews what it holds (its port came back): that one goes out. */
	inform(m2, q2, SA_TRAP_GID_OUT_OF_SERVICE, true, 0x2002);
	assert_int_equal(E.ii_on, 2);
	assert_int_equal(p->nc.subs_sent, 2);

	/* A Report: the daemon answers it once, each session gets it once. */
	make_report(mad, SA_TRAP_GID_OUT_OF_SERVICE, 0x777);
	sa_report(mad, MAD_SIZE);
	assert_int_equal(E.resps, 1);
	client_recv(m1, r1, got);
	assert_memory_equal(got, mad, MAD_SIZE); /* as the SA sent it, TID too */
	client_recv(m2, r2, got);
	assert_memory_equal(got, mad, MAD_SIZE);
	expect_quiet(m1);
	expect_quiet(m2);
	/* Their clients answer too: the SA must not see those. */
	{
		uint8_t resp[MAD_SIZE];

		before = E.fb.ca[0].nsent;
		assert_int_equal(sa_report_resp_build(got, MAD_SIZE, resp), 0);
		client_send(m1, r1, resp);
		client_send(m2, r2, resp);
		pump();
		assert_int_equal(E.fb.ca[0].nsent, before);
		assert_int_equal(p->nc.resps_absorbed, 2);
	}
	/* The SA repeats it: answered again, passed on no more. */
	sa_report(mad, MAD_SIZE);
	assert_int_equal(E.resps, 2);
	expect_quiet(m1);
	expect_quiet(m2);
	assert_int_equal(p->nc.report_dups, 1);
	/* A trap nobody subscribed to: answered, not passed on. */
	make_report(mad, SA_TRAP_GID_IN_SERVICE, 0x778);
	sa_report(mad, MAD_SIZE);
	assert_int_equal(E.resps, 3);
	expect_quiet(m1);
	expect_quiet(m2);
	/* Malformed: not a Notice; too short.  Dropped unanswered. */
	make_report(mad, SA_TRAP_GID_OUT_OF_SERVICE, 0x779);
	mad_set(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID, SA_ATTR_PATH_RECORD);
	sa_report(mad, MAD_SIZE);
	make_report(mad, SA_TRAP_GID_OUT_OF_SERVICE, 0x77a);
	sa_report(mad, SA_DATA_OFFSET + 20);
	assert_int_equal(E.resps, 3);
	assert_int_equal(p->nc.report_malformed, 2);
	expect_quiet(m1);
	expect_quiet(m2);
	assert_int_equal(p->nc.forwarded, 2);

	/* m1 unsubscribes while m2 still needs it: the SA sees nothing. */
	inform(m1, q1, SA_TRAP_GID_OUT_OF_SERVICE, false, 0x1002);
	assert_int_equal(E.ii_off, 0);
	make_report(mad, SA_TRAP_GID_OUT_OF_SERVICE, 0x780);
	sa_report(mad, MAD_SIZE);
	client_recv(m2, r2, got);
	expect_quiet(m1);
	/* m2 goes away: the daemon unsubscribes at the SA, with a TID of its own. */
	close(m2);
	pump();
	assert_int_equal(E.ii_off, 1);
	assert_int_equal(p->nc.unsubs, 1);
	assert_int_equal((uint32_t)E.ii_last_tid >> MADCMD_TID_SLOT_SHIFT, 0);
	{
		/* The subscription as m2 made it, Subscribe 0 (what OpenSM matches). */
		struct sa_inform want, got;

		sa_inform_generic(&want, SA_TRAP_GID_OUT_OF_SERVICE, false);
		sa_inform_decode(E.ii_last_rec, &got);
		assert_memory_equal(&want, &got, sizeof(want));
	}
	/* And its answer is taken as the daemon's own. */
	pump();
	expect_quiet(m1);
	close(m1);
	pump();
	env_down();
}

/* Reports on a port whose session has no Report agent reach nobody. */
static void test_no_report_agent(void **state)
{
	uint8_t mad[MAD_SIZE];
	int m1, q1;

	(void)state;
	env_up();
	m1 = client();
	assert_int_equal(hello_mad(m1, "fake0"), 0);
	q1 = mad_reg(m1, 0);
	inform(m1, q1, SA_TRAP_GID_OUT_OF_SERVICE, true, 0x3001);
	make_report(mad, SA_TRAP_GID_OUT_OF_SERVICE, 0x900);
	sa_report(mad, MAD_SIZE);
	assert_int_equal(E.resps, 1); /* the SA is answered all the same */
	expect_quiet(m1);
	assert_int_equal(E.d->ports[0].nc.forwarded, 0);
	close(m1);
	pump();
	assert_int_equal(E.ii_off, 1);
	env_down();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_notices),
	    cmocka_unit_test(test_no_report_agent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
