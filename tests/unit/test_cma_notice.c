/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * lib/ and the SA's GID notices, on the fake fabric: a listening id's
 * port subscribes to traps 64 and 65 when its CM opens; a Report of trap
 * 65 naming the port's GID gives the ids bound to it ADDR_CHANGE, and
 * trap 64 another when the GID comes back; a second notice of the same
 * state, a repeated Report (same TID), or one naming a GID that is not
 * ours gives none; a port the verbs events already said was down (or up)
 * gets no second event from the notice, and the other way round; every
 * Report is answered with a ReportResp; a subscription the SA refused is
 * made again at a later use of the port.
 */
#include "config.h" /* MADCM_DEBUG: cma_lock() as lib/ has it */

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "cm/runtime.h"
#include "lib/cma.h"
#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/sa_wire.h"
#include "tests/unit/fake_verbs.h"

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static struct mad_umad_ops ops;

/* What the fake SA saw, and where CA 0's Report agent is. */
static struct {
	pthread_mutex_t lock;
	unsigned ii_sets[FAKE_FABRIC_MAX_CAS];
	unsigned resps[FAKE_FABRIC_MAX_CAS];
	unsigned refuse[FAKE_FABRIC_MAX_CAS]; /* InformInfo Sets still to refuse */
	int report_open, report_agent;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER, .report_open = -1, .report_agent = -1};

static const uint8_t gid5[16] = {0xfe, 0x80, [15] = 5}; /* fake0's port */
static const uint8_t gid7[16] = {0xfe, 0x80, [15] = 7}; /* nobody's */

static void inject(int portid, int agent, const void *mad, size_t len)
{
	struct fake_fabric *fb = &fake_cma_fabric;
	struct fake_fabric_open *op = &fb->opens[portid];
	struct fake_mad *m;
	uint64_t one = 1;

	pthread_mutex_lock(&fb->lock);
	m = &op->rx[op->rx_tail++ % FAKE_MAX_MADS];
	memcpy(m->mad, mad, len);
	m->len = len;
	m->agent = agent;
	memset(&m->addr, 0, sizeof(m->addr));
	m->addr.lid = 1;
	m->addr.qpn = 1;
	m->addr.qkey = MAD_QP1_QKEY;
	pthread_mutex_unlock(&fb->lock);
	if (write(op->evfd, &one, sizeof(one)) < 0)
		(void)0;
}

/* The fake SA grants InformInfo Sets (GetResp echo); ReportResps are counted. */
static int w_send(void *ctx, int portid, int agent, const void *mad, size_t len,
		  const struct mad_addr *dst, unsigned timeout_ms)
{
	const uint8_t *m = mad;
	int rc = fake_fabric_ops.send(ctx, portid, agent, mad, len, dst, timeout_ms);
	int ca = fake_cma_fabric.opens[portid].ca;
	uint8_t resp[MAD_SIZE];
	bool refused;

	if (rc || len != MAD_SIZE || m[1] != MAD_CLASS_SUBN_ADM)
		return rc;
	if (m[3] == MAD_METHOD_REPORT_RESP) {
		pthread_mutex_lock(&S.lock);
		S.resps[ca]++;
		pthread_mutex_unlock(&S.lock);
		return 0;
	}
	if (m[3] != MAD_METHOD_SET ||
	    mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) != SA_ATTR_INFORM_INFO)
		return 0;
	pthread_mutex_lock(&S.lock);
	S.ii_sets[ca]++;
	refused = S.refuse[ca] > 0;
	if (refused)
		S.refuse[ca]--;
	pthread_mutex_unlock(&S.lock);
	memcpy(resp, mad, MAD_SIZE);
	mad_set(resp, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(resp, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET);
	if (refused) /* ERR_NO_RESOURCES */
		mad_set(resp, mad_hdr_fields, MAD_HDR_STATUS, 0x0100);
	mad_set(resp + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, SA_II_SIZE / 8);
	inject(portid, agent, resp, MAD_SIZE);
	return 0;
}

/* Notes the agent CA 0's SA client registers for Reports. */
static int w_reg(void *ctx, int portid, uint8_t mgmt_class, uint8_t class_version,
		 uint8_t rmpp_version, const uint32_t method_mask[4])
{
	int id = fake_fabric_ops.register_agent(ctx, portid, mgmt_class, class_version,
						rmpp_version, method_mask);

	if (id >= 0 && mgmt_class == MAD_CLASS_SUBN_ADM &&
	    (method_mask[0] & (1u << MAD_METHOD_REPORT)) && fake_cma_fabric.opens[portid].ca == 0) {
		pthread_mutex_lock(&S.lock);
		S.report_open = portid;
		S.report_agent = id;
		pthread_mutex_unlock(&S.lock);
	}
	return id;
}

static void wait_until(bool (*cond)(void))
{
	/* Bounded so that a missing effect fails the test instead of hanging it. */
	for (int i = 0; i < 100000 && !cond(); i++)
		usleep(100);
	assert_true(cond());
}

static struct cma_notice_stats ns(void)
{
	struct cma_notice_stats s;

	cma_notice_stats(&s);
	return s;
}

static bool subscribed(void)
{
	return ns().subscribed >= 1;
}

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	assert_int_equal(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

static int setup(void **state)
{
	struct sockaddr_in a = v4("198.18.0.1", 7600);

	(void)state;
	if (fake_cma_setup())
		return -1;
	ops = fake_fabric_ops;
	ops.send = w_send;
	ops.register_agent = w_reg;
	cma_test_env(&ops, &fake_cma_fabric);
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&a) || rdma_listen(id, 1))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	fake_cma_teardown();
	return 0;
}

static void report(uint16_t trap, const uint8_t *gid, uint64_t tid)
{
	uint8_t mad[MAD_SIZE];
	struct sa_notice n = {0};

	assert_int_equal(sa_mad_init(mad, MAD_METHOD_REPORT, SA_ATTR_NOTICE, tid, 0), 0);
	n.is_generic = true;
	n.type = SA_NOTICE_TYPE_INFO;
	n.producer_type = SA_NOTICE_PRODUCER_CLASS_MGR;
	n.trap_number = trap;
	n.issuer_lid = 1;
	memcpy(n.gid, gid, 16);
	assert_int_equal(sa_notice_encode(&n, mad + SA_DATA_OFFSET), 0);
	inject(S.report_open, S.report_agent, mad, MAD_SIZE);
}

static unsigned resps0(void)
{
	unsigned n;

	pthread_mutex_lock(&S.lock);
	n = S.resps[0];
	pthread_mutex_unlock(&S.lock);
	return n;
}

static unsigned want_resps;
static unsigned long want_seen;

static unsigned long subscribed_before;

static bool subscribed_again(void)
{
	return ns().subscribed > subscribed_before;
}

static bool answered(void)
{
	return resps0() >= want_resps;
}

/* The notice handler ran (own + other + ignored went up). */
static bool handled(void)
{
	struct cma_notice_stats s = ns();

	return s.own + s.other + s.ignored >= want_seen;
}

/* One more Report, answered and (unless a duplicate) handled. */
static void report_and_wait(uint16_t trap, const uint8_t *gid, uint64_t tid, bool dup)
{
	struct cma_notice_stats s = ns();

	want_resps = resps0() + 1;
	want_seen = s.own + s.other + s.ignored + (dup ? 0 : 1);
	report(trap, gid, tid);
	wait_until(answered);
	wait_until(handled);
}

static void expect_addr_change(void)
{
	struct rdma_cm_event *ev = fake_cma_next_event(ch, FAKE_CMA_WAIT_MS);

	assert_non_null(ev);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ADDR_CHANGE);
	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->status, 0);
	rdma_ack_cm_event(ev);
}

/* The handler has run: anything it queued is on the channel already. */
static void expect_no_event(void)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

	assert_int_equal(poll(&pfd, 1, 0), 0);
}

static void test_subscribed_on_listen(void **state)
{
	(void)state;
	wait_until(subscribed);
	pthread_mutex_lock(&S.lock);
	assert_int_equal(S.ii_sets[0], 2); /* traps 64 and 65 */
	assert_true(S.report_agent >= 0);
	pthread_mutex_unlock(&S.lock);
	assert_int_equal(ns().sub_errors, 0);
}

static void test_notices(void **state)
{
	struct cma_notice_stats s0, s;

	(void)state;
	wait_until(subscribed);
	s0 = ns();
	/* Our GID out of service: ADDR_CHANGE. */
	report_and_wait(SA_TRAP_GID_OUT_OF_SERVICE, gid5, 0x100, false);
	expect_addr_change();
	/* Said again (another TID): the state has not changed, no event. */
	report_and_wait(SA_TRAP_GID_OUT_OF_SERVICE, gid5, 0x101, false);
	expect_no_event();
	/* Back in service: ADDR_CHANGE; the SA repeating that Report: none. */
	report_and_wait(SA_TRAP_GID_IN_SERVICE, gid5, 0x102, false);
	expect_addr_change();
	report_and_wait(SA_TRAP_GID_IN_SERVICE, gid5, 0x102, true);
	expect_no_event();
	/* Somebody else's GID: counted only. */
	report_and_wait(SA_TRAP_GID_OUT_OF_SERVICE, gid7, 0x103, false);
	expect_no_event();
	/* Another trap (a multicast group created): ignored. */
	report_and_wait(SA_TRAP_MCAST_GROUP_CREATED, gid5, 0x104, false);
	expect_no_event();
	s = ns();
	assert_int_equal(s.own - s0.own, 3);
	assert_int_equal(s.own_changes - s0.own_changes, 2);
	assert_int_equal(s.other - s0.other, 1);
	assert_int_equal(s.ignored - s0.ignored, 1);
}

/* The verbs events and the notices move one state: one event per change. */
static void test_verbs_then_notice(void **state)
{
	struct cma_port *p;
	bool moved;

	(void)state;
	wait_until(subscribed);
	/* Asserted after the unlock: a failure must not leave cma.lock held. */
	cma_lock();
	p = cma_port_by_gid(gid5);
	/* What cma_async.c does on IBV_EVENT_PORT_ERR. */
	moved = p && cma_port_service(p, false);
	cma_unlock();
	assert_non_null(p);
	assert_true(moved);
	expect_addr_change();
	report_and_wait(SA_TRAP_GID_OUT_OF_SERVICE, gid5, 0x200, false);
	expect_no_event();
	/* The notice first this time, then IBV_EVENT_PORT_ACTIVE. */
	report_and_wait(SA_TRAP_GID_IN_SERVICE, gid5, 0x201, false);
	expect_addr_change();
	cma_lock();
	moved = cma_port_service(p, true);
	cma_unlock();
	assert_false(moved);
	expect_no_event();
}

static unsigned long sub_errors_seen;

static bool sub_failed(void)
{
	return ns().sub_errors > sub_errors_seen;
}

/* A listener on h2 (fake1, whose CM this process opens here first). */
static struct rdma_cm_id *listen_h2(uint16_t port)
{
	struct sockaddr_in a = v4("198.18.0.2", port);
	struct rdma_cm_id *l;

	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&a), 0);
	assert_int_equal(rdma_listen(l, 1), 0);
	return l;
}

/*
 * The SA refuses the first subscription of h2's port: the port works, and
 * a later use of it (another listen) makes the subscription again, once
 * CMA_RT_RETRY_MS has passed, until the SA takes it.
 */
static void test_refused_then_retried(void **state)
{
	struct cma_notice_stats s0 = ns();
	struct rdma_cm_id *l;
	struct timespec t0, t;
	unsigned sets;

	(void)state;
	pthread_mutex_lock(&S.lock);
	S.refuse[1] = 2;
	pthread_mutex_unlock(&S.lock);
	sub_errors_seen = s0.sub_errors;
	subscribed_before = s0.subscribed;
	l = listen_h2(7610);
	wait_until(sub_failed);
	rdma_destroy_id(l);
	assert_int_equal(ns().subscribed, s0.subscribed);
	/* Uses of the port, until one made it again (a minute at most). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(50 * 1000);
		l = listen_h2(7611);
		rdma_destroy_id(l);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!(ns().subscribed > s0.subscribed) && t.tv_sec - t0.tv_sec < 60);
	wait_until(subscribed_again);
	pthread_mutex_lock(&S.lock);
	sets = S.ii_sets[1];
	pthread_mutex_unlock(&S.lock);
	assert_true(sets >= 3); /* the refused, then both granted */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_subscribed_on_listen),
	    cmocka_unit_test(test_notices),
	    cmocka_unit_test(test_verbs_then_notice),
	    cmocka_unit_test(test_refused_then_retried),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
