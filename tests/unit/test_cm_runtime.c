/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM runtime on two fake umad ports wired back to back: the engine hosted
 * on a progress loop, commands from the test thread, events through the
 * eventfd queue.  Both runtimes share one loop, driven inline or by its
 * thread, so only that loop ever touches the fake ports.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <cmocka.h>

#include "cm/cm_wire.h"
#include "cm/runtime.h"
#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/sa_wire.h"
#include "tests/unit/fake_umad.h"
#include "tests/unit/thread_asleep.h"

#define SVC 0x0000000001060000ull
/* A bound on waits for events, generous: a loaded machine is slow. */
#define WAIT_MS 60000

/* One ibv_modify_qp the runtime made (auto QP), through the fake hook. */
struct qp_mod {
	struct ibv_qp *qp;
	struct ibv_qp_attr attr;
	int mask;
	unsigned nsent; /* MADs the side had sent by then */
};

#define MAX_MODS 16

struct side {
	struct fake_umad f;
	struct cm_runtime *rt;
	struct side *peer;
	bool dead; /* drop everything it sends */
	struct qp_mod mods[MAX_MODS];
	unsigned nmods;
	int fail_state;	     /* modify to this state fails with fail_rc ... */
	int fail_rc;	     /* ... (0: never) ... */
	unsigned fail_count; /* ... this many times (0: every time) */
};

struct pair {
	struct mad_loop *loop;
	struct side s[2]; /* 0 active, 1 passive */
};

/*
 * The fake port has one receive queue, but the runtime opens the port
 * twice (CM transport, SA client) as a real process would: this shim
 * gives each open its own port id and hands each the MADs of its agents.
 */
static int shim_port_of[64];
static int shim_next_port = 3;

static int shim_list(void *ctx, char names[][MAD_CA_NAME_MAX], int max)
{
	return fake_umad_ops.list_cas(ctx, names, max);
}

static int shim_query(void *ctx, const char *ca, int port, struct mad_port_attr *out)
{
	return fake_umad_ops.query_port(ctx, ca, port, out);
}

static int shim_open(void *ctx, const char *ca, int port)
{
	int rc = fake_umad_ops.open_port(ctx, ca, port);

	return rc < 0 ? rc : shim_next_port++;
}

static void shim_close(void *ctx, int portid)
{
	fake_umad_ops.close_port(ctx, portid);
}

static int shim_fd(void *ctx, int portid)
{
	return fake_umad_ops.get_fd(ctx, portid);
}

static int shim_reg(void *ctx, int portid, uint8_t cls, uint8_t ver, uint8_t rmpp,
		    const uint32_t mask[4])
{
	int a = fake_umad_ops.register_agent(ctx, portid, cls, ver, rmpp, mask);

	if (a >= 0 && a < 64)
		shim_port_of[a] = portid;
	return a;
}

static int shim_unreg(void *ctx, int portid, int agent)
{
	return fake_umad_ops.unregister_agent(ctx, portid, agent);
}

static int shim_send(void *ctx, int portid, int agent, const void *mad, size_t len,
		     const struct mad_addr *dst, unsigned timeout_ms)
{
	return fake_umad_ops.send(ctx, portid, agent, mad, len, dst, timeout_ms);
}

static int shim_recv(void *ctx, int portid, void *buf, size_t cap, size_t *len, int *agent,
		     struct mad_addr *src)
{
	struct fake_umad *f = ctx;

	/* Leave a MAD for another agent's port where it is. */
	if (f->rx_head != f->rx_tail) {
		int a = f->rx[f->rx_head % FAKE_MAX_MADS].agent;

		if (a >= 0 && a < 64 && shim_port_of[a] != portid)
			return -EAGAIN;
	}
	return fake_umad_ops.recv(ctx, portid, buf, cap, len, agent, src);
}

static const struct mad_umad_ops shim_ops = {
    .list_cas = shim_list,
    .query_port = shim_query,
    .open_port = shim_open,
    .close_port = shim_close,
    .get_fd = shim_fd,
    .register_agent = shim_reg,
    .unregister_agent = shim_unreg,
    .send = shim_send,
    .recv = shim_recv,
};

/* The fake SA: one PathRecord from the asker to its peer, mask noted. */
static uint64_t sa_mask_seen;

static void sa_answer(struct side *s, unsigned idx)
{
	const uint8_t *req = s->f.sent[idx].mad;
	struct sa_path p = {0};
	uint8_t rec[SA_PR_SIZE];

	sa_mask_seen = mad_get(req + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_COMPONENT_MASK);
	memcpy(p.sgid, s->f.port.gid, 16);
	memcpy(p.dgid, s->peer->f.port.gid, 16);
	p.slid = s->f.port.lid;
	p.dlid = s->peer->f.port.lid;
	p.reversible = true;
	p.numb_path = 1;
	p.pkey = 0xffff;
	p.sl = 2;
	p.mtu_selector = 2;
	p.mtu = IBV_MTU_2048;
	p.rate_selector = 2;
	p.rate = 7;
	p.packet_life_time_selector = 2;
	p.packet_life_time = 18;
	assert_int_equal(sa_path_encode(&p, rec), 0);
	fake_umad_respond(&s->f, idx, 0x81 /* GetResp */, 0, rec, sizeof(rec), SA_DATA_OFFSET);
}

/* The wire: what one side sends arrives at the other's CM agent (id 0). */
static void wire(struct fake_umad *f, unsigned idx, void *arg)
{
	struct side *s = arg;
	struct mad_addr src = {0};

	if (s->dead)
		return;
	if (f->sent[idx].mad[1] == MAD_CLASS_SUBN_ADM) {
		sa_answer(s, idx);
		return;
	}
	src.lid = s->f.port.lid;
	src.qpn = 1;
	src.qkey = MAD_QP1_QKEY;
	fake_umad_inject(&s->peer->f, f->sent[idx].mad, f->sent[idx].len, 0, &src);
}

/* The QP-modify hook of both runtimes: records, fails when told to. */
static int fake_modify_qp(void *ctx, struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct side *s = ctx;

	if (s->nmods < MAX_MODS) {
		struct qp_mod *m = &s->mods[s->nmods++];

		m->qp = qp;
		m->attr = *attr;
		m->mask = mask;
		m->nsent = s->f.nsent;
	}
	if (s->fail_rc && (mask & IBV_QP_STATE) && (int)attr->qp_state == s->fail_state) {
		int rc = s->fail_rc;

		if (s->fail_count && !--s->fail_count)
			s->fail_rc = 0;
		return rc;
	}
	return 0;
}

/*
 * What a test has running when a failed assertion ends it: its teardown,
 * cleanup(), joins the thread, then closes the pair (which stops the loop
 * thread before the fake ports go), so nothing runs on freed memory.
 */
static struct pair *open_pair;
static pthread_t waiter_th;
static bool waiter_live;

static void waiter_start(void *(*fn)(void *), void *arg)
{
	assert_int_equal(pthread_create(&waiter_th, NULL, fn, arg), 0);
	waiter_live = true;
}

static void waiter_join(void)
{
	waiter_live = false;
	assert_int_equal(pthread_join(waiter_th, NULL), 0);
}

static void pair_close(struct pair *p);

static int cleanup(void **state)
{
	(void)state;
	if (waiter_live)
		waiter_join();
	if (open_pair)
		pair_close(open_pair);
	return 0;
}

static void pair_open_sa(struct pair *p, bool thread, bool sa)
{
	memset(p, 0, sizeof(*p));
	open_pair = p;
	assert_int_equal(mad_loop_create(&p->loop, NULL, NULL), 0);
	if (thread)
		assert_int_equal(mad_loop_start(p->loop), 0);
	for (int i = 0; i < 2; i++) {
		struct side *s = &p->s[i];
		struct cm_runtime_params rp = {0};

		fake_umad_init(&s->f);
		s->f.port.lid = (uint16_t)(5 + i);
		s->f.port.gid[15] = (uint8_t)(5 + i);
		s->peer = &p->s[1 - i];
		s->f.on_send = wire;
		s->f.on_send_arg = s;
		rp.loop = p->loop;
		rp.ops = sa ? &shim_ops : &fake_umad_ops;
		rp.ops_ctx = &s->f;
		rp.sa = sa && i == 0;
		rp.sa_timeout_ms = 200;
		rp.modify_qp = fake_modify_qp;
		rp.modify_qp_ctx = s;
		assert_int_equal(cm_runtime_open(&s->rt, &rp), 0);
	}
}

static void pair_open(struct pair *p, bool thread)
{
	pair_open_sa(p, thread, false);
}

/*
 * Reopen side i of an open pair with an on-loop event hook (its fake port
 * stays the same; the wire delivers to agent 0).
 */
static void side_reopen_hooked(struct pair *p, int i,
			       bool (*hook)(void *arg, struct cm_runtime *rt,
					    const struct cm_event *ev),
			       void *arg)
{
	struct cm_runtime_params rp = {0};

	cm_runtime_close(p->s[i].rt);
	p->s[i].rt = NULL; /* a failed open below leaves nothing for cleanup() to close again */
	p->s[i].f.next_agent = 0;
	rp.loop = p->loop;
	rp.ops = &fake_umad_ops;
	rp.ops_ctx = &p->s[i].f;
	rp.on_loop_event = hook;
	rp.on_loop_event_arg = arg;
	assert_int_equal(cm_runtime_open(&p->s[i].rt, &rp), 0);
}

static void pair_close(struct pair *p)
{
	open_pair = NULL;
	for (int i = 0; i < 2; i++)
		cm_runtime_close(p->s[i].rt);
	mad_loop_destroy(p->loop);
	for (int i = 0; i < 2; i++)
		fake_umad_destroy(&p->s[i].f);
}

static void connect_cmd(struct pair *p, struct cm_connect_cmd *c, uint32_t qpn)
{
	struct mad_port_attr a, b;

	assert_int_equal(cm_runtime_port(p->s[0].rt, &a), 0);
	assert_int_equal(cm_runtime_port(p->s[1].rt, &b), 0);
	memset(c, 0, sizeof(*c));
	c->user = 0x1234;
	c->service_id = SVC + 7471;
	c->qpn = qpn;
	c->starting_psn = 0x42;
	c->qp_type = CM_QPT_RC;
	c->responder_resources = 1;
	c->initiator_depth = 1;
	/* 268 ms per try: no retry even under valgrind; TimeWait stays short. */
	c->remote_cm_response_timeout = 16;
	c->local_cm_response_timeout = 16;
	c->retry_count = 7;
	c->rnr_retry_count = 7;
	c->max_cm_retries = 3;
	c->primary.slid = a.lid;
	c->primary.dlid = b.lid;
	memcpy(c->primary.sgid, a.gid, 16);
	memcpy(c->primary.dgid, b.gid, 16);
	c->primary.rate = 3;
	c->primary.subnet_local = 1;
	c->primary.packet_life_time = 8;
	c->primary.local_ack_timeout = 9;
	c->primary.mtu = IBV_MTU_1024;
	c->primary.pkey = 0xffff;
}

static void expect_event(struct side *s, enum cm_event_type t, struct cm_event *ev)
{
	int rc = cm_runtime_wait_event(s->rt, ev, WAIT_MS);

	assert_int_equal(rc, 0);
	if (ev->type != t)
		fail_msg("expected %s, got %s", cm_event_name(t), cm_event_name(ev->type));
}

static bool fd_readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1;
}

static void test_bad_args(void **state)
{
	struct cm_runtime *rt;
	struct cm_event ev;
	struct cm_rt_cmd c = {.op = CM_RT__COUNT};
	static struct pair p; /* outlives a failed assertion: see cleanup() */

	(void)state;
	assert_int_equal(cm_runtime_open(NULL, NULL), -EINVAL);
	assert_int_equal(cm_runtime_open(&rt, NULL), -EINVAL);
	assert_int_equal(cm_runtime_get_event(NULL, &ev), -EINVAL);
	assert_int_equal(cm_runtime_exec(NULL, &c), -EINVAL);
	cm_runtime_close(NULL);
	pair_open(&p, false);
	assert_int_equal(cm_runtime_exec(p.s[0].rt, &c), -EINVAL);
	c.op = CM_RT_RTU;
	c.private_data_len = CM_PRIVATE_MAX + 1;
	assert_int_equal(cm_runtime_exec(p.s[0].rt, &c), -EINVAL);
	/* Unknown connection: the engine's answer comes back. */
	assert_int_equal(cm_runtime_rtu(p.s[0].rt, 12345), -ENOENT);
	assert_int_equal(cm_runtime_get_event(p.s[0].rt, &ev), -EAGAIN);
	assert_false(fd_readable(cm_runtime_event_fd(p.s[0].rt)));
	/* No SA client asked for. */
	assert_int_equal(
	    cm_runtime_resolve_path(p.s[0].rt, p.s[1].f.port.gid, 0, &(struct cm_path){0}),
	    -ENOTSUP);
	pair_close(&p);
}

/* The whole life of one connection, both sides through the runtime API. */
static void handshake(struct pair *p)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac = {0};
	struct cm_event ev;
	struct ibv_qp_attr attr;
	struct cm_rt_stats st;
	enum cm_state cst;
	uint32_t aid, bid;
	int lid, mask;

	lid = cm_runtime_listen(b->rt, SVC, ~0xffffull, 0x77);
	assert_true(lid >= 0);
	connect_cmd(p, &cc, 0x1001);
	assert_int_equal(cm_runtime_connect(a->rt, &cc, &aid), 0);

	expect_event(b, CM_EV_REQ_RCVD, &ev);
	assert_int_equal(ev.listen_id, lid);
	assert_int_equal(ev.req.remote_qpn, 0x1001);
	assert_int_equal(ev.req.starting_psn, 0x42);
	assert_int_equal(ev.req.service_id, SVC + 7471);
	assert_int_equal(ev.from.lid, 5);
	bid = ev.id;
	ac.qpn = 0x2002;
	ac.starting_psn = 0x99;
	ac.responder_resources = 1;
	ac.initiator_depth = 1;
	ac.rnr_retry_count = 7;
	assert_int_equal(cm_runtime_accept(b->rt, bid, 0xb0b, &ac), 0);

	expect_event(a, CM_EV_REP_RCVD, &ev);
	assert_int_equal(ev.id, aid);
	assert_int_equal(ev.user, 0x1234);
	assert_int_equal(ev.rep.remote_qpn, 0x2002);
	/* RTR names the peer's QP and the PSN we announced; RTS sends from the peer's. */
	assert_int_equal(cm_runtime_init_qp_attr(a->rt, aid, IBV_QPS_RTR, &attr, &mask), 0);
	assert_true(mask & IBV_QP_DEST_QPN);
	assert_int_equal(attr.dest_qp_num, 0x2002);
	assert_int_equal(attr.rq_psn, 0x42);
	assert_int_equal(attr.ah_attr.dlid, 6);
	assert_int_equal(attr.path_mtu, IBV_MTU_1024);
	assert_int_equal(cm_runtime_init_qp_attr(a->rt, aid, IBV_QPS_RTS, &attr, &mask), 0);
	assert_int_equal(attr.sq_psn, 0x99);
	assert_int_equal(cm_runtime_rtu(a->rt, aid), 0);
	expect_event(b, CM_EV_RTU_RCVD, &ev);
	assert_int_equal(ev.user, 0xb0b);
	struct cm_rt_cmd sc = {.op = CM_RT_CONN_STATE, .id = bid};

	assert_int_equal(cm_runtime_exec(b->rt, &sc), 0);
	cst = sc.state;
	assert_int_equal(cst, CM_ST_ESTABLISHED);

	/* Disconnect from the active side; both pass through TimeWait. */
	assert_int_equal(cm_runtime_disconnect(a->rt, aid), 0);
	expect_event(b, CM_EV_DREQ_RCVD, &ev);
	assert_int_equal(cm_runtime_disconnect(b->rt, bid), 0);
	expect_event(a, CM_EV_DREP_RCVD, &ev);
	expect_event(a, CM_EV_TIMEWAIT_EXIT, &ev);
	expect_event(b, CM_EV_TIMEWAIT_EXIT, &ev);
	assert_int_equal(cm_runtime_stats(a->rt, &st), 0);
	assert_int_equal(st.conns, 0);
	assert_int_equal(st.cm.sent[CM_STAT_REQ], 1);
	assert_int_equal(st.cm.rcvd[CM_STAT_REP], 1);
	assert_int_equal(st.cm.sent[CM_STAT_RTU], 1);
	assert_int_equal(st.cm.rcvd[CM_STAT_DREP], 1);
	assert_int_equal(st.events_queued, 3);
	assert_int_equal(st.events_dropped, 0);
	assert_true(st.mad.sent >= 3);
	assert_false(fd_readable(cm_runtime_event_fd(a->rt)));
}

static void test_handshake_inline(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */

	(void)state;
	pair_open(&p, false);
	handshake(&p);
	pair_close(&p);
}

/* Same, with the loop on its own thread: the real threading model. */
static void test_handshake_thread(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */

	(void)state;
	pair_open(&p, true);
	handshake(&p);
	pair_close(&p);
}

static void test_event_fd_signals(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_connect_cmd cc;
	struct cm_event ev;
	uint32_t id;
	int fd;

	(void)state;
	pair_open(&p, true);
	fd = cm_runtime_event_fd(p.s[0].rt);
	assert_true(fd >= 0);
	assert_false(fd_readable(fd));
	/* Nobody listens: the REJ comes back as an event, fd turns readable. */
	connect_cmd(&p, &cc, 0x1003);
	assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &id), 0);
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
	assert_int_equal(cm_runtime_get_event(p.s[0].rt, &ev), 0);
	assert_int_equal(ev.type, CM_EV_REJ_RCVD);
	assert_int_equal(ev.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(ev.id, id);
	assert_false(fd_readable(fd));
	assert_int_equal(cm_runtime_get_event(p.s[0].rt, &ev), -EAGAIN);
	pair_close(&p);
}

static void note_loop_tid(void *arg)
{
	thread_asleep_self(arg);
}

/* A silent peer: the active side reports a timeout. */
static void test_req_timeout(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_connect_cmd cc;
	struct cm_event ev;
	struct cm_rt_stats st;
	volatile pid_t loop_tid = 0;
	uint32_t id;

	(void)state;
	pair_open(&p, true);
	/* Let the loop thread fall asleep first (idle: a second per poll). */
	assert_int_equal(mad_loop_call(p.loop, note_loop_tid, (void *)&loop_tid), 0);
	assert_true(thread_asleep_wait(&loop_tid));
	p.s[0].dead = true;
	connect_cmd(&p, &cc, 0x1004);
	cc.remote_cm_response_timeout = 10; /* 4 ms per try */
	cc.max_cm_retries = 2;
	/*
	 * The connect runs on this thread (mad_loop_call_here) while the loop
	 * thread sleeps: the retry timer it arms must still fire (its being
	 * on time, not after the idle second, is test_loop's to check: a
	 * bound in time here would fail on a loaded machine).
	 */
	assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &id), 0);
	expect_event(&p.s[0], CM_EV_REQ_ERROR, &ev);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_int_equal(cm_runtime_stats(p.s[0].rt, &st), 0);
	assert_int_equal(st.cm.sent[CM_STAT_REQ] + st.cm.retried[CM_STAT_REQ] >= 3, 1);
	assert_int_equal(st.cm.timeouts, 1);
	pair_close(&p);
}

/* Garbage on the CM agent is dropped without an event or a crash. */
static void test_garbage(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	uint8_t mad[256];
	struct cm_event ev;
	struct mad_addr src = {.lid = 9, .qpn = 1, .qkey = MAD_QP1_QKEY};

	(void)state;
	pair_open(&p, false);
	for (int i = 0; i < 64; i++) {
		for (size_t k = 0; k < sizeof(mad); k++)
			mad[k] = (uint8_t)(k * 31 + (size_t)i * 7);
		mad[0] = 1;
		mad[1] = MAD_CLASS_CM;
		mad[2] = MAD_CLASS_VERSION_CM;
		mad[3] = MAD_METHOD_SEND;
		fake_umad_inject(&p.s[1].f, mad, (size_t)(i * 4 % 257), 0, &src);
	}
	assert_int_equal(cm_runtime_wait_event(p.s[1].rt, &ev, 50), -ETIMEDOUT);
	pair_close(&p);
}

/* A batch runs in order in one round trip, each with its own result. */
static void test_batch(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_rt_cmd c[3];
	struct cm_event ev;

	(void)state;
	pair_open(&p, true);
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	memset(c, 0, sizeof(c));
	c[0].op = CM_RT_CONNECT;
	connect_cmd(&p, &c[0].connect, 0x1005);
	c[1].op = CM_RT_CONNECT;
	connect_cmd(&p, &c[1].connect, 0x1006);
	c[2].op = CM_RT_RTU;
	c[2].id = 777;
	assert_int_equal(cm_runtime_exec_batch(p.s[0].rt, c, 3), 0);
	assert_int_equal(c[0].result, 0);
	assert_int_equal(c[1].result, 0);
	assert_int_not_equal(c[0].id, c[1].id);
	assert_int_equal(c[2].result, -ENOENT);
	expect_event(&p.s[1], CM_EV_REQ_RCVD, &ev);
	expect_event(&p.s[1], CM_EV_REQ_RCVD, &ev);
	pair_close(&p);
}

/* A path from the SA, turned into what a connect command needs. */
static void test_resolve_path(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_path cp;
	struct cm_connect_cmd cc;
	struct cm_event ev;
	uint32_t id;

	(void)state;
	pair_open_sa(&p, true, true);
	assert_int_equal(cm_runtime_resolve_path(p.s[0].rt, p.s[1].f.port.gid, 0, &cp), 0);
	assert_true(sa_mask_seen & SA_PR_COMP_SGID);
	assert_true(sa_mask_seen & SA_PR_COMP_DGID);
	assert_false(sa_mask_seen & SA_PR_COMP_P_KEY);
	assert_int_equal(cp.slid, 5);
	assert_int_equal(cp.dlid, 6);
	assert_memory_equal(cp.dgid, p.s[1].f.port.gid, 16);
	assert_int_equal(cp.mtu, IBV_MTU_2048);
	assert_int_equal(cp.rate, 7);
	assert_int_equal(cp.sl, 2);
	assert_int_equal(cp.pkey, 0xffff);
	assert_int_equal(cp.packet_life_time, 18);
	assert_int_equal(cp.local_ack_timeout, 19);
	assert_int_equal(cp.subnet_local, 1);
	/* A P_Key asked for is a component of the query. */
	assert_int_equal(cm_runtime_resolve_path(p.s[0].rt, p.s[1].f.port.gid, 0xffff, &cp), 0);
	assert_true(sa_mask_seen & SA_PR_COMP_P_KEY);
	/* And the path carries a connection. */
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, 0x1008);
	cc.primary = cp;
	assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &id), 0);
	expect_event(&p.s[1], CM_EV_REQ_RCVD, &ev);
	assert_int_equal(ev.req.primary.mtu, IBV_MTU_2048);
	assert_int_equal(ev.req.primary.sl, 2);
	pair_close(&p);
}

static void test_path_from_sa(void **state)
{
	struct sa_path sp = {0};
	struct cm_path cp;

	(void)state;
	assert_int_equal(cm_path_from_sa(NULL, &cp), -EINVAL);
	sp.mtu = 9; /* not an MTU code */
	assert_int_equal(cm_path_from_sa(&sp, &cp), -EPROTO);
	sp.mtu = IBV_MTU_4096;
	sp.packet_life_time = 0;
	sp.hop_limit = 64; /* routed: a GRH is needed */
	assert_int_equal(cm_path_from_sa(&sp, &cp), 0);
	assert_int_equal(cp.subnet_local, 0);
	assert_int_equal(cp.local_ack_timeout, 2);
	sp.packet_life_time = 31;
	assert_int_equal(cm_path_from_sa(&sp, &cp), 0);
	assert_int_equal(cp.local_ack_timeout, 31);
}

/* The on-loop hook answers a REQ without the application thread. */
static bool accept_on_loop(void *arg, struct cm_runtime *rt, const struct cm_event *ev)
{
	struct cm_accept_cmd ac = {.qpn = 0x3003, .starting_psn = 1, .rnr_retry_count = 7};
	int *n = arg;

	if (ev->type != CM_EV_REQ_RCVD)
		return false; /* everything else still goes to the queue */
	assert_int_equal(cm_runtime_accept(rt, ev->id, 0xfeed, &ac), 0);
	(*n)++;
	return true;
}

static void test_loop_hook(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_connect_cmd cc;
	struct cm_event ev;
	uint32_t id;
	int hooked = 0;

	(void)state;
	pair_open(&p, true);
	side_reopen_hooked(&p, 1, accept_on_loop, &hooked);
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, 0x1007);
	assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &id), 0);
	expect_event(&p.s[0], CM_EV_REP_RCVD, &ev);
	assert_int_equal(ev.rep.remote_qpn, 0x3003);
	assert_int_equal(hooked, 1);
	assert_int_equal(cm_runtime_rtu(p.s[0].rt, id), 0);
	/* Not consumed by the hook: RTU_RCVD is queued for B's application. */
	expect_event(&p.s[1], CM_EV_RTU_RCVD, &ev);
	assert_int_equal(ev.user, 0xfeed);
	pair_close(&p);
}

/* QP attributes asked from the REP's hook, holding the loop (as lib/ moves its QP there). */
struct rep_attrs {
	int rc[3];
	struct ibv_qp_attr a[3];
	int mask[3];
};

static bool attrs_on_rep(void *arg, struct cm_runtime *rt, const struct cm_event *ev)
{
	struct rep_attrs *r = arg;

	if (ev->type != CM_EV_REP_RCVD)
		return false;
	for (int i = 0; i < 3; i++)
		r->rc[i] = cm_runtime_init_qp_attr(
		    rt, ev->id, (enum ibv_qp_state)(IBV_QPS_INIT + i), &r->a[i], &r->mask[i]);
	return false; /* and queued for the application as well */
}

/*
 * The same answers on the loop (the engine asked at once) and off it
 * (through the loop: in this process nothing is kept ahead), before and
 * after the application took the event.
 */
static void test_qp_attrs_on_and_off_loop(void **state)
{
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac = {.qpn = 0x2002, .starting_psn = 0x99, .rnr_retry_count = 7};
	struct rep_attrs r;
	struct cm_event ev;
	struct ibv_qp_attr a;
	uint32_t aid;
	int mask;

	(void)state;
	memset(&r, 0xff, sizeof(r));
	pair_open(&p, true);
	side_reopen_hooked(&p, 0, attrs_on_rep, &r);
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, 0x1001);
	assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &aid), 0);

	/* Passive side, off the loop: INIT (asked twice, as librdmacm does), RTR. */
	expect_event(&p.s[1], CM_EV_REQ_RCVD, &ev);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(cm_runtime_init_qp_attr(p.s[1].rt, ev.id, IBV_QPS_INIT, &a, &mask),
				 0);
		assert_true(mask & IBV_QP_PORT);
		assert_int_equal(a.qp_state, IBV_QPS_INIT);
	}
	assert_int_equal(cm_runtime_init_qp_attr(p.s[1].rt, ev.id, IBV_QPS_RTR, &a, &mask), 0);
	assert_int_equal(a.dest_qp_num, 0x1001);
	assert_int_equal(cm_runtime_accept(p.s[1].rt, ev.id, 0xb0b, &ac), 0);

	/* Active side: the hook's answers, then the same asked off the loop. */
	expect_event(&p.s[0], CM_EV_REP_RCVD, &ev);
	for (int i = 0; i < 3; i++)
		assert_int_equal(r.rc[i], 0);
	assert_true(r.mask[0] & IBV_QP_PORT);
	assert_int_equal(r.a[1].dest_qp_num, 0x2002);
	assert_int_equal(r.a[1].rq_psn, 0x42);
	assert_int_equal(r.a[2].sq_psn, 0x99);
	assert_true(r.mask[2] & IBV_QP_TIMEOUT);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cm_runtime_init_qp_attr(p.s[0].rt, aid,
							 (enum ibv_qp_state)(IBV_QPS_INIT + i), &a,
							 &mask),
				 0);
		assert_int_equal(mask, r.mask[i]);
		assert_memory_equal(&a, &r.a[i], sizeof(a));
	}
	assert_int_equal(cm_runtime_rtu(p.s[0].rt, aid), 0);
	expect_event(&p.s[1], CM_EV_RTU_RCVD, &ev);
	pair_close(&p);
}

/* Which thread ran the last REQ (on_loop_event hook; the event still goes to the queue). */
static pthread_t req_ran_on;

static bool note_req_thread(void *arg, struct cm_runtime *rt, const struct cm_event *ev)
{
	(void)arg;
	(void)rt;
	if (ev->type == CM_EV_REQ_RCVD)
		req_ran_on = pthread_self();
	return false;
}

static volatile pid_t loop_tid; /* of the last note_loop_thread() */

static void note_loop_thread(void *arg)
{
	*(pthread_t *)arg = pthread_self();
	thread_asleep_self(&loop_tid);
}

struct waiter {
	struct cm_runtime *rt;
	pthread_t self;
	volatile pid_t tid; /* set by the thread itself */
	struct cm_event ev;
	int rc;
};

static void *wait_one(void *arg)
{
	struct waiter *w = arg;

	w->self = pthread_self();
	thread_asleep_self(&w->tid);
	w->rc = cm_runtime_wait_event(w->rt, &w->ev, WAIT_MS);
	return NULL;
}

/*
 * A MAD that arrives while an application thread waits in
 * cm_runtime_wait_event is run by that thread (the loop's thread does not
 * wait for the umad fd meanwhile: one wake-up, not two); once nobody
 * waits, the loop's thread runs them again.
 */
static void test_wait_runs_mads_here(void **state)
{
	struct cm_connect_cmd cc;
	struct pollfd pfd;
	struct cm_event ev;
	static struct waiter w;
	pthread_t loop_th;
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	uint32_t id;

	(void)state;
	pair_open(&p, true);
	side_reopen_hooked(&p, 1, note_req_thread, NULL);
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	assert_int_equal(mad_loop_call(p.loop, note_loop_thread, &loop_th), 0);

	memset(&w, 0, sizeof(w));
	w.rt = p.s[1].rt;
	waiter_start(wait_one, &w);
	assert_true(thread_asleep_wait(&w.tid)); /* asleep in wait_event */
	connect_cmd(&p, &cc, 0x1010);
	assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &id), 0);
	waiter_join();
	assert_int_equal(w.rc, 0);
	assert_int_equal(w.ev.type, CM_EV_REQ_RCVD);
	assert_true(pthread_equal(req_ran_on, w.self));

	/* Nobody waits now: the loop thread takes the next REQ. */
	connect_cmd(&p, &cc, 0x1011);
	assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &id), 0);
	pfd.fd = cm_runtime_event_fd(p.s[1].rt);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
	assert_int_equal(cm_runtime_get_event(p.s[1].rt, &ev), 0);
	assert_int_equal(ev.type, CM_EV_REQ_RCVD);
	assert_true(pthread_equal(req_ran_on, loop_th));
	pair_close(&p);
}

static bool queue_readable(void *arg)
{
	struct pollfd p = {.fd = *(int *)arg, .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

struct set_waiter {
	struct cm_runtime *rt;
	struct cm_rt_waitset *ws;
	pthread_t self;
	volatile pid_t tid; /* set by the thread itself */
	int fd, rc;
};

static void *wait_in_set(void *arg)
{
	struct set_waiter *w = arg;

	w->self = pthread_self();
	thread_asleep_self(&w->tid);
	w->rc = cm_runtime_wait_ready(w->rt, w->ws, w->fd, queue_readable, &w->fd, WAIT_MS);
	return NULL;
}

/*
 * A REQ sent while w waits in its waitset: the waiter ran it and its
 * event is queued.  The loop thread, awake when the MAD comes (its idle
 * tick, a slow return to epoll_wait on a loaded machine), may take it
 * first, as designed: the event is queued all the same, and the REQ is
 * tried again (with another QPN) until the waiter runs one, which it
 * must, both threads asleep when it comes, in a few tries at most.
 */
static void req_to_waiter(struct pair *p, struct set_waiter *w, uint32_t qpn)
{
	struct cm_connect_cmd cc;
	struct cm_event ev;
	uint32_t id;
	bool here = false;

	for (unsigned t = 0; t < 20 && !here; t++) {
		w->tid = 0;
		waiter_start(wait_in_set, w);
		assert_true(thread_asleep_wait(&w->tid)); /* asleep in epoll_wait */
		assert_true(thread_asleep_wait(&loop_tid));
		connect_cmd(p, &cc, qpn + 0x10000 * t);
		assert_int_equal(cm_runtime_connect(p->s[0].rt, &cc, &id), 0);
		waiter_join();
		assert_int_equal(w->rc, 0);
		here = pthread_equal(req_ran_on, w->self);
		assert_int_equal(cm_runtime_get_event(p->s[1].rt, &ev), 0);
		assert_int_equal(ev.type, CM_EV_REQ_RCVD);
	}
	assert_true(here);
}

/*
 * The same with a waitset (an epoll set of the waiter's own holding the
 * transport fd exclusively): the MAD is run by the waiting thread, then,
 * with nobody waiting, by the loop's thread; a second wait in the same set
 * runs its MAD again; a set used with another fd, and sets beyond the
 * process's few, wait with the hand-over and still run their MAD.
 */
static void test_wait_in_waitset(void **state)
{
	/* Static, as the waiter's: they outlive a failed assertion. */
	static struct cm_rt_waitset ws, more[5];
	static struct set_waiter w;
	struct cm_connect_cmd cc;
	struct cm_event ev;
	pthread_t loop_th;
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	uint32_t id;

	(void)state;
	pair_open(&p, true);
	side_reopen_hooked(&p, 1, note_req_thread, NULL);
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	assert_int_equal(mad_loop_call(p.loop, note_loop_thread, &loop_th), 0);
	cm_runtime_waitset_init(&ws);
	memset(&w, 0, sizeof(w));
	w.rt = p.s[1].rt;
	w.ws = &ws;
	w.fd = cm_runtime_event_fd(p.s[1].rt);

	for (unsigned k = 0; k < 2; k++) {
		req_to_waiter(&p, &w, 0x1020 + k);
		assert_true(ws.epfd >= 0);

		/* Nobody waits now: the loop thread takes the next REQ. */
		connect_cmd(&p, &cc, 0x1030 + k);
		assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &id), 0);
		assert_int_equal(cm_runtime_wait_fd(p.s[1].rt, w.fd, WAIT_MS), 0);
		assert_int_equal(cm_runtime_get_event(p.s[1].rt, &ev), 0);
		assert_int_equal(ev.type, CM_EV_REQ_RCVD);
	}

	/* Five more sets: the last waits with the hand-over, and still runs its MAD here. */
	for (unsigned k = 0; k < 5; k++) {
		cm_runtime_waitset_init(&more[k]);
		w.ws = &more[k];
		req_to_waiter(&p, &w, 0x1040 + k);
		assert_int_equal(more[k].tfd >= 0, k < 3); /* four sets at most hold it */
	}
	/* Another fd with a set made for the queue's: the hand-over. */
	w.ws = &ws;
	w.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(w.fd >= 0);
	assert_int_equal(cm_runtime_wait_ready(w.rt, &ws, w.fd, queue_readable, &w.fd, 20),
			 -ETIMEDOUT);
	close(w.fd);
	for (unsigned k = 0; k < 5; k++)
		cm_runtime_waitset_fini(&more[k]);
	cm_runtime_waitset_fini(&ws);
	pair_close(&p);
}

/*
 * A burst of REQs while one thread waits in its waitset for one event and
 * then waits no more: the thread takes the first, and every other reaches
 * the queue all the same (through the loop thread), none left unread in
 * the transport fd for want of a waiter.
 */
static void test_waitset_burst(void **state)
{
	enum { N = 40 };
	static struct cm_rt_waitset ws;
	static struct set_waiter w;
	struct cm_connect_cmd cc;
	struct cm_event ev;
	struct pollfd pfd;
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	uint32_t id;
	unsigned got = 0;

	(void)state;
	pair_open(&p, true);
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	cm_runtime_waitset_init(&ws);
	memset(&w, 0, sizeof(w));
	w.rt = p.s[1].rt;
	w.ws = &ws;
	w.fd = cm_runtime_event_fd(p.s[1].rt);
	waiter_start(wait_in_set, &w);
	assert_true(thread_asleep_wait(&w.tid));
	for (unsigned k = 0; k < N; k++) {
		connect_cmd(&p, &cc, 0x2000 + k);
		assert_int_equal(cm_runtime_connect(p.s[0].rt, &cc, &id), 0);
	}
	waiter_join();
	assert_int_equal(w.rc, 0);
	pfd.fd = w.fd;
	pfd.events = POLLIN;
	while (got < N && poll(&pfd, 1, WAIT_MS) == 1)
		while (cm_runtime_get_event(p.s[1].rt, &ev) == 0)
			if (ev.type == CM_EV_REQ_RCVD)
				got++;
	assert_int_equal(got, N);
	cm_runtime_waitset_fini(&ws);
	pair_close(&p);
}

/* The runtime hosts the engine through cm/umad.c: Get(ClassPortInfo) is answered. */
static void test_class_port_info(void **state)
{
	struct side *b;
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct mad_addr src = {.lid = 5, .qpn = 1, .qkey = MAD_QP1_QKEY};
	uint8_t mad[256] = {0};
	const uint8_t *resp = NULL;
	unsigned before;

	(void)state;
	pair_open(&p, false);
	b = &p.s[1];
	mad_set(mad, mad_hdr_fields, MAD_HDR_BASE_VERSION, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_MGMT_CLASS, MAD_CLASS_CM);
	mad_set(mad, mad_hdr_fields, MAD_HDR_CLASS_VERSION, 2);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, CM_METHOD_GET);
	mad_set(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID, 0xc0ffee);
	mad_set(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID, CM_ATTR_CLASS_PORT_INFO);
	before = b->f.nsent;
	fake_umad_inject(&b->f, mad, sizeof(mad), 0, &src);
	for (int i = 0; i < 20 && b->f.nsent == before; i++)
		mad_loop_run_once(p.loop, 10);
	assert_int_equal(b->f.nsent, before + 1);
	resp = b->f.sent[before].mad;
	assert_int_equal(mad_get(resp, mad_hdr_fields, MAD_HDR_METHOD), CM_METHOD_GET_RESP & 0x7f);
	assert_int_equal(mad_get(resp, mad_hdr_fields, MAD_HDR_R), 1);
	assert_int_equal(mad_get(resp, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), 0xc0ffee);
	assert_int_equal(mad_get(resp, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID),
			 CM_ATTR_CLASS_PORT_INFO);
	assert_int_equal(b->f.sent[before].addr.lid, 5);
	pair_close(&p);
}

/* ---- auto QP: the loop thread moves the QPs, rdma_cm style ---- */

#define INIT_MASK (IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT)
#define RTR_MASK                                                                                   \
	(IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |            \
	 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RTS_MASK                                                                                   \
	(IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |     \
	 IBV_QP_MAX_QP_RD_ATOMIC)

static void accept_cmd(struct cm_accept_cmd *ac)
{
	memset(ac, 0, sizeof(*ac));
	ac->starting_psn = 0x777;
	ac->responder_resources = 1;
	ac->initiator_depth = 1;
	ac->rnr_retry_count = 7;
}

static void assert_mod(const struct qp_mod *m, struct ibv_qp *qp, enum ibv_qp_state st, int mask)
{
	assert_ptr_equal(m->qp, qp);
	assert_int_equal(m->attr.qp_state, st);
	assert_int_equal(m->mask, mask);
}

/*
 * Both sides with auto QP: the passive QP goes INIT, RTR, RTS before its
 * REP leaves; the active QP goes INIT after its REQ, RTR and RTS on the
 * REP, and its application hears ESTABLISHED, not REP_RCVD.
 */
static void auto_qp_handshake(bool thread)
{
	struct ibv_qp qa = {.qp_num = 0x1001}, qb = {.qp_num = 0x2002};
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct side *a, *b;
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac;
	struct cm_event ev;
	struct cm_rt_stats st;
	uint32_t aid;
	unsigned b_before;

	pair_open(&p, thread);
	a = &p.s[0];
	b = &p.s[1];
	assert_true(cm_runtime_listen(b->rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, qa.qp_num);
	assert_int_equal(cm_runtime_connect_qp(a->rt, &cc, &qa, CM_RT_QP_INIT, &aid), 0);
	/* INIT right after the REQ went out. */
	assert_int_equal(a->nmods, 1);
	assert_mod(&a->mods[0], &qa, IBV_QPS_INIT, INIT_MASK);
	assert_int_equal(a->mods[0].nsent, 1);
	assert_int_equal(a->mods[0].attr.port_num, 1);

	expect_event(b, CM_EV_REQ_RCVD, &ev);
	accept_cmd(&ac); /* qpn 0: the QP's own */
	b_before = b->f.nsent;
	assert_int_equal(cm_runtime_accept_qp(b->rt, ev.id, 0xb0b, &ac, &qb, CM_RT_QP_INIT), 0);
	assert_int_equal(b->nmods, 3);
	assert_mod(&b->mods[0], &qb, IBV_QPS_INIT, INIT_MASK);
	assert_mod(&b->mods[1], &qb, IBV_QPS_RTR, RTR_MASK);
	assert_int_equal(b->mods[1].attr.dest_qp_num, 0x1001);
	assert_int_equal(b->mods[1].attr.rq_psn, 0x777); /* what the REP announces */
	assert_int_equal(b->mods[1].attr.path_mtu, IBV_MTU_1024);
	assert_int_equal(b->mods[1].attr.ah_attr.dlid, 5);
	assert_int_equal(b->mods[1].attr.max_dest_rd_atomic, 1);
	assert_mod(&b->mods[2], &qb, IBV_QPS_RTS, RTS_MASK);
	assert_int_equal(b->mods[2].attr.sq_psn, 0x42); /* the REQ's */
	assert_int_equal(b->mods[2].attr.retry_cnt, 7);
	/* rdma_accept's order: the QP is at RTS before the REP is sent. */
	assert_int_equal(b->mods[2].nsent, b_before);

	expect_event(a, CM_EV_ESTABLISHED, &ev);
	assert_int_equal(ev.id, aid);
	assert_int_equal(ev.user, 0x1234);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.rep.remote_qpn, 0x2002);
	assert_int_equal(a->nmods, 3);
	assert_mod(&a->mods[1], &qa, IBV_QPS_RTR, RTR_MASK);
	assert_int_equal(a->mods[1].attr.dest_qp_num, 0x2002);
	assert_int_equal(a->mods[1].attr.rq_psn, 0x42);
	assert_int_equal(a->mods[1].attr.ah_attr.dlid, 6);
	assert_mod(&a->mods[2], &qa, IBV_QPS_RTS, RTS_MASK);
	assert_int_equal(a->mods[2].attr.sq_psn, 0x777);
	/* The RTU left after RTS (REQ was MAD 1). */
	assert_int_equal(a->mods[2].nsent, 1);
	expect_event(b, CM_EV_RTU_RCVD, &ev);
	assert_int_equal(ev.user, 0xb0b);
	assert_int_equal(cm_runtime_stats(a->rt, &st), 0);
	assert_int_equal(st.cm.sent[CM_STAT_RTU], 1);
	assert_int_equal(st.events_queued, 1); /* ESTABLISHED only */
	assert_int_equal(cm_runtime_get_event(a->rt, &ev), -EAGAIN);
	pair_close(&p);
}

static void test_auto_qp_inline(void **state)
{
	(void)state;
	auto_qp_handshake(false);
}

static void test_auto_qp_thread(void **state)
{
	(void)state;
	auto_qp_handshake(true);
}

/* Without CM_RT_QP_INIT the QP is the caller's until RTR (rdma_create_qp made it INIT). */
static void test_auto_qp_no_init(void **state)
{
	struct ibv_qp qa = {.qp_num = 0x1011}, qb = {.qp_num = 0x2012};
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac;
	struct cm_event ev;
	uint32_t aid;

	(void)state;
	pair_open(&p, true);
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, qa.qp_num);
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qa, 0, &aid), 0);
	assert_int_equal(p.s[0].nmods, 0);
	expect_event(&p.s[1], CM_EV_REQ_RCVD, &ev);
	accept_cmd(&ac);
	ac.qpn = qb.qp_num;
	assert_int_equal(cm_runtime_accept_qp(p.s[1].rt, ev.id, 1, &ac, &qb, 0), 0);
	assert_int_equal(p.s[1].nmods, 2);
	assert_mod(&p.s[1].mods[0], &qb, IBV_QPS_RTR, RTR_MASK);
	expect_event(&p.s[0], CM_EV_ESTABLISHED, &ev);
	assert_int_equal(p.s[0].nmods, 2);
	assert_mod(&p.s[0].mods[0], &qa, IBV_QPS_RTR, RTR_MASK);
	assert_mod(&p.s[0].mods[1], &qa, IBV_QPS_RTS, RTS_MASK);
	pair_close(&p);
}

/*
 * CM_RT_QP_AT_INIT (rdma_accept on a QP rdma_create_qp made): INIT's
 * access flags and P_Key index go with RTR in one modify.  If that modify
 * fails, INIT and RTR are made one by one, and the accept goes on.
 */
static void auto_qp_at_init(bool fold_fails)
{
	struct ibv_qp qa = {.qp_num = 0x1031}, qb = {.qp_num = 0x2032};
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct side *b;
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac;
	struct cm_event ev;
	uint32_t aid;
	unsigned k = 0;

	pair_open(&p, true);
	b = &p.s[1];
	if (fold_fails) {
		b->fail_state = IBV_QPS_RTR;
		b->fail_rc = EINVAL;
		b->fail_count = 1;
	}
	assert_true(cm_runtime_listen(b->rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, qa.qp_num);
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qa, CM_RT_QP_INIT, &aid), 0);
	expect_event(b, CM_EV_REQ_RCVD, &ev);
	accept_cmd(&ac);
	assert_int_equal(
	    cm_runtime_accept_qp(b->rt, ev.id, 1, &ac, &qb, CM_RT_QP_INIT | CM_RT_QP_AT_INIT), 0);
	assert_int_equal(b->nmods, fold_fails ? 4 : 2);
	assert_mod(&b->mods[k], &qb, IBV_QPS_RTR,
		   RTR_MASK | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX);
	assert_int_equal(b->mods[k].attr.qp_access_flags, IBV_ACCESS_REMOTE_WRITE |
							      IBV_ACCESS_REMOTE_READ |
							      IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(b->mods[k].attr.pkey_index, 0);
	assert_int_equal(b->mods[k].attr.dest_qp_num, 0x1031);
	assert_int_equal(b->mods[k].attr.rq_psn, 0x777);
	if (fold_fails) {
		assert_mod(&b->mods[++k], &qb, IBV_QPS_INIT, INIT_MASK);
		assert_mod(&b->mods[++k], &qb, IBV_QPS_RTR, RTR_MASK);
		assert_int_equal(b->mods[k].attr.rq_psn, 0x777);
	}
	assert_mod(&b->mods[++k], &qb, IBV_QPS_RTS, RTS_MASK);
	expect_event(&p.s[0], CM_EV_ESTABLISHED, &ev);
	assert_int_equal(ev.id, aid);
	pair_close(&p);
}

static void test_auto_qp_at_init(void **state)
{
	(void)state;
	auto_qp_at_init(false);
}

static void test_auto_qp_at_init_fold_fails(void **state)
{
	(void)state;
	auto_qp_at_init(true);
}

/*
 * CM_RT_QP_TIMEOUT (rdma_accept on an id with RDMA_OPTION_ID_ACK_TIMEOUT):
 * the passive RTS takes that ACK timeout, not the path's, whether the QP
 * moves on the loop or beside it.
 */
static void auto_qp_ack_timeout(bool thread)
{
	struct ibv_qp qa = {.qp_num = 0x1051}, qb = {.qp_num = 0x2052};
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct side *b;
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac;
	struct cm_event ev;
	uint32_t aid;

	pair_open(&p, thread);
	b = &p.s[1];
	assert_true(cm_runtime_listen(b->rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, qa.qp_num);
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qa, CM_RT_QP_INIT, &aid), 0);
	expect_event(b, CM_EV_REQ_RCVD, &ev);
	accept_cmd(&ac);
	assert_int_equal(
	    cm_runtime_accept_qp(b->rt, ev.id, 1, &ac, &qb, CM_RT_QP_INIT | CM_RT_QP_TIMEOUT(21)),
	    0);
	assert_int_equal(b->nmods, 3);
	assert_mod(&b->mods[2], &qb, IBV_QPS_RTS, RTS_MASK);
	assert_int_equal(b->mods[2].attr.timeout, 21);
	expect_event(&p.s[0], CM_EV_ESTABLISHED, &ev);
	assert_int_equal(ev.id, aid);
	assert_int_equal(p.s[0].nmods, 3);
	assert_mod(&p.s[0].mods[2], &qa, IBV_QPS_RTS, RTS_MASK);
	assert_int_not_equal(p.s[0].mods[2].attr.timeout, 21); /* the path's */
	pair_close(&p);
}

static void test_auto_qp_ack_timeout_inline(void **state)
{
	(void)state;
	auto_qp_ack_timeout(false);
}

static void test_auto_qp_ack_timeout_thread(void **state)
{
	(void)state;
	auto_qp_ack_timeout(true);
}

/* Active: RTR fails on the REP: QP to ERR, REJ 28 to the peer, CONNECT_ERROR. */
static void test_auto_qp_active_fails(void **state)
{
	struct ibv_qp qa = {.qp_num = 0x1021}, qb = {.qp_num = 0x2022};
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct side *a;
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac;
	struct cm_event ev;
	struct cm_rt_stats st;
	uint32_t aid;

	(void)state;
	pair_open(&p, true);
	a = &p.s[0];
	a->fail_state = IBV_QPS_RTR;
	a->fail_rc = EINVAL; /* rdma-core's sign */
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, qa.qp_num);
	assert_int_equal(cm_runtime_connect_qp(a->rt, &cc, &qa, CM_RT_QP_INIT, &aid), 0);
	expect_event(&p.s[1], CM_EV_REQ_RCVD, &ev);
	accept_cmd(&ac);
	assert_int_equal(cm_runtime_accept_qp(p.s[1].rt, ev.id, 1, &ac, &qb, CM_RT_QP_INIT), 0);
	expect_event(a, CM_EV_CONNECT_ERROR, &ev);
	assert_int_equal(ev.id, aid);
	assert_int_equal(ev.status, -EINVAL);
	assert_int_equal(a->nmods, 3); /* INIT, RTR (failed), ERR */
	assert_mod(&a->mods[2], &qa, IBV_QPS_ERR, IBV_QP_STATE);
	expect_event(&p.s[1], CM_EV_REJ_RCVD, &ev);
	assert_int_equal(ev.rej.reason, CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(cm_runtime_stats(a->rt, &st), 0);
	assert_int_equal(st.cm.sent[CM_STAT_RTU], 0);
	assert_int_equal(st.cm.sent[CM_STAT_REJ], 1);
	pair_close(&p);
}

/* Passive: RTS fails at accept: QP to ERR, REJ 28, no REP, the error returned. */
static void test_auto_qp_passive_fails(void **state)
{
	struct ibv_qp qa = {.qp_num = 0x1031}, qb = {.qp_num = 0x2032};
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct side *b;
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac;
	struct cm_event ev;
	struct cm_rt_stats st;
	uint32_t aid;

	(void)state;
	pair_open(&p, true);
	b = &p.s[1];
	b->fail_state = IBV_QPS_RTS;
	b->fail_rc = -ENOMEM; /* the simulator's sign */
	assert_true(cm_runtime_listen(b->rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, qa.qp_num);
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qa, 0, &aid), 0);
	expect_event(b, CM_EV_REQ_RCVD, &ev);
	accept_cmd(&ac);
	assert_int_equal(cm_runtime_accept_qp(b->rt, ev.id, 1, &ac, &qb, 0), -ENOMEM);
	assert_int_equal(b->nmods, 3); /* RTR, RTS (failed), ERR */
	assert_mod(&b->mods[2], &qb, IBV_QPS_ERR, IBV_QP_STATE);
	assert_int_equal(cm_runtime_stats(b->rt, &st), 0);
	assert_int_equal(st.cm.sent[CM_STAT_REP], 0);
	assert_int_equal(st.cm.sent[CM_STAT_REJ], 1);
	expect_event(&p.s[0], CM_EV_REJ_RCVD, &ev);
	assert_int_equal(ev.rej.reason, CM_REJ_CONSUMER_DEFINED);
	/* The active QP was never moved past what the caller did. */
	assert_int_equal(p.s[0].nmods, 0);
	pair_close(&p);
}

/* What is refused before any QP or MAD is touched. */
static void test_auto_qp_bad_args(void **state)
{
	struct ibv_qp qa = {.qp_num = 0x1041}, qb = {.qp_num = 0x2042};
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac;
	struct cm_rt_cmd c;
	struct cm_event ev;
	uint32_t aid;

	(void)state;
	pair_open(&p, true);
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, 0x999); /* not the QP's number */
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qa, 0, &aid), -EINVAL);
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, NULL, 0, &aid), -EINVAL);
	cc.qpn = qa.qp_num;
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qa, 0x80, &aid), -EINVAL);
	memset(&c, 0, sizeof(c));
	c.op = CM_RT_RTU; /* auto QP belongs to connect and accept only */
	c.auto_qp.qp = &qa;
	assert_int_equal(cm_runtime_exec(p.s[0].rt, &c), -EINVAL);
	assert_int_equal(p.s[0].f.nsent, 0);
	accept_cmd(&ac);
	assert_int_equal(cm_runtime_accept_qp(p.s[1].rt, 4242, 1, &ac, &qb, 0), -ENOENT);
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qa, 0, &aid), 0);
	expect_event(&p.s[1], CM_EV_REQ_RCVD, &ev);
	ac.qpn = 0x5555; /* not the QP's */
	assert_int_equal(cm_runtime_accept_qp(p.s[1].rt, ev.id, 1, &ac, &qb, 0), -EINVAL);
	ac.qpn = 0;
	ac.starting_psn = 1u << 24;
	assert_int_equal(cm_runtime_accept_qp(p.s[1].rt, ev.id, 1, &ac, &qb, 0), -EINVAL);
	assert_int_equal(p.s[1].nmods, 0);
	/* Still acceptable after the refusals. */
	ac.starting_psn = 5;
	assert_int_equal(cm_runtime_accept_qp(p.s[1].rt, ev.id, 1, &ac, &qb, 0), 0);
	expect_event(&p.s[0], CM_EV_ESTABLISHED, &ev);
	pair_close(&p);
}

/* A connect that ends before its REP (REJ, or released) lets go of its QP. */
static void test_auto_qp_rejected_or_released(void **state)
{
	struct ibv_qp qa = {.qp_num = 0x1051}, qc = {.qp_num = 0x1052};
	static struct pair p; /* outlives a failed assertion: see cleanup() */
	struct cm_connect_cmd cc;
	struct cm_accept_cmd ac;
	struct cm_event ev;
	uint32_t aid, cid, pid;

	(void)state;
	pair_open(&p, true);
	/* Nobody listens: REJ, delivered as such; the QP is not touched. */
	connect_cmd(&p, &cc, qa.qp_num);
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qa, 0, &aid), 0);
	expect_event(&p.s[0], CM_EV_REJ_RCVD, &ev);
	assert_int_equal(ev.id, aid);
	assert_int_equal(p.s[0].nmods, 0);
	/* Released while the passive side sits on the REQ: its REP is never acted on. */
	assert_true(cm_runtime_listen(p.s[1].rt, SVC, ~0xffffull, 1) >= 0);
	connect_cmd(&p, &cc, qc.qp_num);
	assert_int_equal(cm_runtime_connect_qp(p.s[0].rt, &cc, &qc, 0, &cid), 0);
	expect_event(&p.s[1], CM_EV_REQ_RCVD, &ev);
	pid = ev.id;
	assert_int_equal(cm_runtime_release(p.s[0].rt, cid), 0);
	/*
	 * Its REJ "timeout" (no RemoteCommID, ARI = the active CA GUID) ends
	 * the passive side's connection too (kernel cm_acquire_rejected_id):
	 * nothing left to accept, QP untouched.
	 */
	expect_event(&p.s[1], CM_EV_REJ_RCVD, &ev);
	assert_int_equal(ev.id, pid);
	assert_int_equal(ev.rej.reason, CM_REJ_TIMEOUT);
	accept_cmd(&ac);
	ac.qpn = 0x2052;
	assert_int_equal(cm_runtime_accept(p.s[1].rt, pid, 1, &ac), -ENOENT);
	assert_int_equal(p.s[0].nmods, 0);
	assert_int_equal(cm_runtime_get_event(p.s[0].rt, &ev), -EAGAIN);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_bad_args, cleanup),
	    cmocka_unit_test_teardown(test_handshake_inline, cleanup),
	    cmocka_unit_test_teardown(test_handshake_thread, cleanup),
	    cmocka_unit_test_teardown(test_event_fd_signals, cleanup),
	    cmocka_unit_test_teardown(test_req_timeout, cleanup),
	    cmocka_unit_test_teardown(test_garbage, cleanup),
	    cmocka_unit_test_teardown(test_batch, cleanup),
	    cmocka_unit_test_teardown(test_loop_hook, cleanup),
	    cmocka_unit_test_teardown(test_qp_attrs_on_and_off_loop, cleanup),
	    cmocka_unit_test_teardown(test_resolve_path, cleanup),
	    cmocka_unit_test_teardown(test_path_from_sa, cleanup),
	    cmocka_unit_test_teardown(test_class_port_info, cleanup),
	    cmocka_unit_test_teardown(test_wait_runs_mads_here, cleanup),
	    cmocka_unit_test_teardown(test_wait_in_waitset, cleanup),
	    cmocka_unit_test_teardown(test_waitset_burst, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_inline, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_thread, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_no_init, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_at_init, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_at_init_fold_fails, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_ack_timeout_inline, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_ack_timeout_thread, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_active_fails, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_passive_fails, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_bad_args, cleanup),
	    cmocka_unit_test_teardown(test_auto_qp_rejected_or_released, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
