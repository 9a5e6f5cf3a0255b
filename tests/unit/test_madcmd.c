/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd: the protocol checks (rtproto/rt_proto.c), and the daemon's core on a
 * fake fabric of two CAs (fake0 LID 5, fake1 LID 6) with client sessions
 * over socketpairs, the loop driven here: ownership and event routing,
 * cleanup when a program goes away, the host-wide port space, the SA
 * proxy and its multicast memberships, the path cache that PATH_QUERY
 * shares between sessions, limits and protocol errors.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "cm/ip_pdata.h"
#include "mad/mad_wire.h"
#include "mad/timer.h"
#include "madcmd/madcmd.h"
#include "madcmd/madcmd_int.h"
#include "rtproto/rt_proto.h"
#include "sa/client.h"
#include "sa/sa_wire.h"
#include "tests/unit/fake_umad.h"

#define SVC 0x0000000001060000ull

/* ---- the daemon on a fake fabric ---- */

static struct env {
	struct fake_fabric fb;
	struct mad_loop *loop;
	struct madcmd *d;
	bool priv;	/* what the privilege check answers */
	uint64_t netns; /* the network namespace of the next session added */
	/* The SA's multicast answers (mc_ops): Deletes seen, per JoinState. */
	unsigned mc_sets, mc_deletes;
	uint8_t mc_last_delete_js;
	uint64_t mc_last_delete_tid;
	/* Its ServiceRecord answers: Sets and Deletes seen. */
	unsigned sr_sets, sr_deletes;
	uint64_t sr_last_delete_tid;
	/* ServiceRecord GetTables seen (SERVICE_QUERY), answered with one record unless sr_none. */
	unsigned sr_tables;
	bool sr_none;
	bool sr_hold; /* keep the next answer in sr_held until the test injects it */
	uint8_t sr_held[MAD_SIZE];
	int sr_held_portid, sr_held_agent;
	/* PathRecord Gets held back from the fake SA (hold_paths) until path_release. */
	bool hold_paths;
	struct held_path {
		int portid, agent;
		struct mad_addr dst;
		unsigned timeout_ms;
		uint8_t mad[MAD_SIZE];
	} held[16];
	unsigned nheld;
	uint64_t path_tids[16]; /* the distinct TIDs of the Gets held (resends are not queries) */
	unsigned npath_tids;
} E;

static bool priv_cb(void *ctx, pid_t pid, uid_t uid)
{
	(void)ctx;
	(void)pid;
	(void)uid;
	return E.priv;
}

static uint64_t netns_cb(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
	return E.netns;
}

/* Namespace 0x1111 holds 10.0.0.1, 0x2222 holds 10.0.0.2 and ::2. */
static unsigned addr_asks;

static bool addr_cb(void *ctx, pid_t pid, uint64_t netns, int family, const uint8_t *addr)
{
	static const uint8_t v6_2[16] = {[15] = 2};

	(void)ctx;
	(void)pid;
	addr_asks++;
	if (family == AF_INET6)
		return netns == 0x2222 && !memcmp(addr, v6_2, 16);
	return family == AF_INET && addr[0] == 10 && addr[1] == 0 && addr[2] == 0 &&
	       addr[3] == (netns == 0x1111   ? 1
			   : netns == 0x2222 ? 2
					     : 0);
}

static uint32_t fixed_random(void *ctx)
{
	(void)ctx;
	return 7;
}

/* Queue a MAD for one open of the fake fabric (what its SA would send). */
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

/*
 * The fake fabric, plus an SA that grants every MCMemberRecord Set and
 * Delete; with hold_paths, PathRecord Gets wait for path_release.
 */
static int mc_send(void *ctx, int portid, int agent, const void *mad, size_t len,
		   const struct mad_addr *dst, unsigned timeout_ms)
{
	const uint8_t *m = mad;
	int rc;
	uint8_t resp[MAD_SIZE];
	unsigned method;

	if (E.hold_paths && len == MAD_SIZE && m[1] == MAD_CLASS_SUBN_ADM &&
	    m[3] == MAD_METHOD_GET &&
	    mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_PATH_RECORD) {
		uint64_t tid = mad_get(m, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
		unsigned i;

		for (i = 0; i < E.npath_tids && E.path_tids[i] != tid; i++)
			;
		if (i == E.npath_tids && i < 16)
			E.path_tids[E.npath_tids++] = tid;
		assert_true(E.nheld < 16);
		E.held[E.nheld].portid = portid;
		E.held[E.nheld].agent = agent;
		E.held[E.nheld].dst = *dst;
		E.held[E.nheld].timeout_ms = timeout_ms;
		memcpy(E.held[E.nheld++].mad, mad, MAD_SIZE);
		return 0;
	}
	rc = fake_fabric_ops.send(ctx, portid, agent, mad, len, dst, timeout_ms);
	if (rc || len != MAD_SIZE || m[1] != MAD_CLASS_SUBN_ADM)
		return rc;
	method = (unsigned)mad_get(m, mad_hdr_fields, MAD_HDR_METHOD);
	memcpy(resp, mad, MAD_SIZE);
	if (mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_SERVICE_RECORD) {
		if (method == MAD_METHOD_SET)
			E.sr_sets++;
		else if (method == MAD_METHOD_DELETE) {
			E.sr_deletes++;
			E.sr_last_delete_tid = mad_get(m, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
		} else if (method == MAD_METHOD_GET_TABLE) {
			/* The template back with a GID: the record a peer registered. */
			E.sr_tables++;
			mad_set(resp, mad_hdr_fields, MAD_HDR_R, 1);
			if (E.sr_none) {
				mad_set(resp, mad_hdr_fields, MAD_HDR_STATUS, SA_STATUS_NO_RECORDS);
			} else {
				memset(resp + SA_DATA_OFFSET + sa_sr_fields[SA_SR_SERVICE_GID].byte,
				       0xab, 16);
				mad_set(resp + SA_HDR_OFFSET, sa_hdr_fields,
					SA_HDR_ATTRIBUTE_OFFSET, SA_SR_SIZE / 8);
			}
			if (E.sr_hold) {
				memcpy(E.sr_held, resp, MAD_SIZE);
				E.sr_held_portid = portid;
				E.sr_held_agent = agent;
				return 0;
			}
			inject_open(portid, agent, resp, MAD_SIZE);
			return 0;
		} else
			return rc;
	} else if (mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) != SA_ATTR_MC_MEMBER_RECORD) {
		return rc;
	} else if (method == MAD_METHOD_SET) {
		E.mc_sets++;
	} else if (method == MAD_METHOD_DELETE) {
		E.mc_deletes++;
		E.mc_last_delete_js =
		    (uint8_t)mad_get(m + SA_DATA_OFFSET, sa_mcmr_fields, SA_MCMR_JOIN_STATE);
		E.mc_last_delete_tid = mad_get(m, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
	} else {
		return rc;
	}
	mad_set(resp, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(resp, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET_RESP & 0x7f);
	inject_open(portid, agent, resp, MAD_SIZE);
	return 0;
}

static struct mad_umad_ops mc_ops;

/* The daemon on two fake CAs; fake1's port in `state1` (4: Active). */
static void env_up_ports(uint32_t max_ids, uint32_t max_events, uint8_t state1, unsigned rescan_ms)
{
	struct madcmd_params p = {0};

	memset(&E, 0, sizeof(E));
	fake_fabric_init(&E.fb, 2);
	E.fb.ca[1].port.state = state1;
	mc_ops = fake_fabric_ops;
	mc_ops.send = mc_send;
	assert_int_equal(mad_loop_create(&E.loop, NULL, NULL), 0);
	p.loop = E.loop;
	p.ops = &mc_ops;
	p.ops_ctx = &E.fb;
	p.max_ids = max_ids;
	p.max_events = max_events;
	p.may_bind_privileged = priv_cb;
	p.random32 = fixed_random;
	p.netns_of = netns_cb;
	p.netns_has_addr = addr_cb;
	p.rescan_ms = rescan_ms;
	assert_int_equal(madcmd_open(&E.d, &p), 0);
	assert_int_equal(madcmd_port_count(E.d), state1 == 4 ? 2 : 1);
}

static void env_up(uint32_t max_ids, uint32_t max_events)
{
	env_up_ports(max_ids, max_events, 4, 0);
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

static void pending_drop(int fd);

static int client(void)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_true(madcmd_session_add(E.d, sv[1]) > 0);
	pending_drop(sv[0]); /* what an earlier socket of that number left */
	return sv[0];
}

static void send_msg(int fd, const void *m, size_t len)
{
	while (send(fd, m, len, MSG_DONTWAIT) != (ssize_t)len) {
		assert_true(errno == EAGAIN);
		mad_loop_run_once(E.loop, 1);
	}
}

/* The comm IDs the daemon granted (GRANT messages, which recv_msg takes aside). */
static struct {
	int fd;
	uint32_t ids[1024];
	unsigned n;
} granted;

static void grant_keep(int fd, const struct madcmd_grant *g)
{
	if (granted.fd != fd)
		granted.n = 0; /* another session's: start over */
	granted.fd = fd;
	for (uint32_t i = 0; i < g->n && granted.n < 1024; i++)
		granted.ids[granted.n++] = g->ids[i];
}

/*
 * Packets from the daemon, per client fd: a CM session's may be a batch of
 * several messages (rt_proto.h), which recv_msg hands out one by one.
 */
static struct pending {
	int fd;
	size_t len, off;
	_Alignas(16) uint8_t b[MADCMD_BATCH_MAX];
} pend[8];
static unsigned max_batch; /* most messages seen in one packet */

static struct pending *pending_of(int fd)
{
	struct pending *free_one = NULL;

	for (unsigned i = 0; i < sizeof(pend) / sizeof(pend[0]); i++) {
		if (pend[i].len && pend[i].fd == fd)
			return &pend[i];
		if (!pend[i].len && !free_one)
			free_one = &pend[i];
	}
	assert_non_null(free_one);
	free_one->fd = fd;
	free_one->off = 0;
	return free_one;
}

static void pending_drop(int fd)
{
	for (unsigned i = 0; i < sizeof(pend) / sizeof(pend[0]); i++)
		if (pend[i].fd == fd)
			pend[i].len = 0;
}

/* The next message already received for fd: its type, or 0 for none. */
static int next_pending(int fd, void *buf, size_t cap)
{
	struct pending *p = pending_of(fd);
	const void *msg;
	size_t len;
	int t;

	if (!p->len)
		return 0;
	t = madcmd_batch_next(p->b, p->len, &p->off, &msg, &len);
	assert_true(t >= 0);
	if (t == 0) {
		p->len = 0;
		return 0;
	}
	assert_true(len <= cap);
	memcpy(buf, msg, len);
	if (p->off == p->len)
		p->len = 0;
	if (t == MADCMD_GRANT) {
		grant_keep(fd, buf);
		return next_pending(fd, buf, cap);
	}
	return t;
}

/* A packet for fd into its pending buffer: its size, 0 at EOF, -1 none yet. */
static ssize_t recv_packet(int fd)
{
	struct pending *p = pending_of(fd);
	ssize_t n = recv(fd, p->b, sizeof(p->b), MSG_DONTWAIT);
	unsigned k = 0;
	size_t off = 0, len;
	const void *msg;

	if (n <= 0)
		return n;
	while (madcmd_batch_next(p->b, (size_t)n, &off, &msg, &len) > 0)
		k++;
	assert_int_equal(off, (size_t)n); /* every message well formed */
	if (k > max_batch)
		max_batch = k;
	p->len = (size_t)n;
	p->off = 0;
	return n;
}

/* One message (its type), running the daemon while none is there; 0: EOF. */
static int recv_msg(int fd, void *buf, size_t cap)
{
	for (int i = 0; i < 3000; i++) {
		int t = next_pending(fd, buf, cap);
		ssize_t n;

		if (t)
			return t;
		n = recv_packet(fd);
		if (n == 0)
			return 0;
		if (n > 0) {
			i = 0;
			continue;
		}
		mad_loop_run_once(E.loop, 1);
	}
	fail_msg("no message from the daemon");
	return -1;
}

/* Nothing waits for this client once the daemon has run. */
static void expect_quiet(int fd)
{
	_Alignas(16) uint8_t b[MADCMD_MSG_MAX];
	ssize_t n;

	pump();
	assert_int_equal(next_pending(fd, b, sizeof(b)), 0);
	while ((n = recv_packet(fd)) > 0)
		assert_int_equal(next_pending(fd, b, sizeof(b)), 0); /* GRANTs only */
	assert_true(n < 0 && errno == EAGAIN);
}

static void expect_eof(int fd)
{
	uint8_t b[MADCMD_MSG_MAX];

	while (recv_msg(fd, b, sizeof(b)) != 0)
		;
}

static int hello(int fd, uint32_t kind, const char *ca, int port, struct madcmd_hello_rep *out)
{
	struct madcmd_hello h;
	union {
		struct madcmd_hello_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;

	memset(&h, 0, sizeof(h));
	madcmd_hdr_init(&h.h, MADCMD_HELLO, sizeof(h), 0);
	h.kind = kind;
	h.layout = madcmd_layout();
	snprintf(h.ca, sizeof(h.ca), "%s", ca);
	h.port = port;
	send_msg(fd, &h, sizeof(h));
	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_HELLO_REP);
	assert_int_equal(in.r.layout, madcmd_layout());
	if (out)
		*out = in.r;
	return in.r.rc;
}

static int cm_client(const char *ca)
{
	int fd = client();

	assert_int_equal(hello(fd, MADCMD_SESSION_CM, ca, 0, NULL), 0);
	return fd;
}

static uint32_t seq;

/* Run a command; events that come before its REPLY are kept in evs. */
static int cmd(int fd, struct cm_rt_cmd *c, struct cm_event *evs, unsigned *nev)
{
	struct madcmd_cmd m;
	union {
		struct madcmd_cmd c;
		struct madcmd_event e;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	unsigned n = 0;

	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, MADCMD_CMD, sizeof(m), ++seq);
	m.cmd = *c;
	send_msg(fd, &m, sizeof(m));
	for (;;) {
		int t = recv_msg(fd, &in, sizeof(in));

		assert_true(t > 0);
		if (t == MADCMD_EVENT) {
			if (evs)
				evs[n] = in.e.ev;
			n++;
			continue;
		}
		assert_int_equal(t, MADCMD_REPLY);
		assert_int_equal(in.c.h.seq, seq);
		break;
	}
	if (nev)
		*nev = n;
	*c = in.c.cmd;
	return c->result;
}

static int simple(int fd, enum cm_rt_op op, uint32_t id)
{
	struct cm_rt_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = op;
	c.id = id;
	return cmd(fd, &c, NULL, NULL);
}

static void next_event(int fd, enum cm_event_type type, struct cm_event *ev)
{
	union {
		struct madcmd_event e;
		uint8_t b[MADCMD_MSG_MAX];
	} in;

	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_EVENT);
	if (in.e.ev.type != type)
		fail_msg("event %s, expected %s", cm_event_name(in.e.ev.type), cm_event_name(type));
	if (ev)
		*ev = in.e.ev;
}

static int listen_on(int fd, uint64_t svc)
{
	struct cm_rt_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = CM_RT_LISTEN;
	c.listen.service_id = svc;
	c.listen.mask = ~0ull;
	c.user = 0x11;
	return cmd(fd, &c, NULL, NULL);
}

/* Connect from fake1 (LID 6) to fake0 (LID 5), or fake0 to fake0. */
static void connect_cmd(struct cm_rt_cmd *c, int from, uint64_t svc, uint32_t qpn)
{
	struct cm_connect_cmd *cc = &c->connect;

	memset(c, 0, sizeof(*c));
	c->op = CM_RT_CONNECT;
	cc->user = 0x1234;
	cc->service_id = svc;
	cc->qpn = qpn;
	cc->starting_psn = 0x42;
	cc->qp_type = CM_QPT_RC;
	cc->responder_resources = 1;
	cc->initiator_depth = 1;
	cc->remote_cm_response_timeout = 16;
	cc->local_cm_response_timeout = 16;
	cc->retry_count = 7;
	cc->rnr_retry_count = 7;
	cc->max_cm_retries = 3;
	cc->primary.slid = (uint16_t)(5 + from);
	cc->primary.dlid = 5;
	memcpy(cc->primary.sgid, E.fb.ca[from].port.gid, 16);
	memcpy(cc->primary.dgid, E.fb.ca[0].port.gid, 16);
	cc->primary.rate = 3;
	cc->primary.subnet_local = 1;
	cc->primary.packet_life_time = 8;
	cc->primary.local_ack_timeout = 9;
	cc->primary.mtu = IBV_MTU_1024;
	cc->primary.pkey = 0xffff;
}

static int connect_to(int fd, int from, uint64_t svc, uint32_t qpn, uint32_t *id)
{
	struct cm_rt_cmd c;
	int rc;

	connect_cmd(&c, from, svc, qpn);
	/* A pointer a program sends must never be used by the daemon. */
	c.auto_qp.qp = (struct ibv_qp *)(uintptr_t)0xdead;
	rc = cmd(fd, &c, NULL, NULL);
	assert_null(c.auto_qp.qp);
	if (!rc)
		*id = c.id;
	return rc;
}

static int accept_id(int fd, uint32_t id, uint32_t qpn)
{
	struct cm_rt_cmd c;

	memset(&c, 0, sizeof(c));
	c.op = CM_RT_ACCEPT;
	c.id = id;
	c.user = 0xacc;
	c.accept.qpn = qpn;
	c.accept.starting_psn = 0x99;
	c.accept.responder_resources = 1;
	c.accept.initiator_depth = 1;
	c.accept.rnr_retry_count = 7;
	return cmd(fd, &c, NULL, NULL);
}

static struct madcmd_tables tables(void)
{
	struct madcmd_tables t;

	pump();
	madcmd_tables_get(E.d, &t);
	return t;
}

static unsigned stat_ids_end(struct madcmd_stat_rep *out, unsigned max,
			     struct madcmd_stat_end *end);

/* STAT as seen by a HOST session: the ids listed, their count. */
static unsigned stat_ids(struct madcmd_stat_rep *out, unsigned max)
{
	return stat_ids_end(out, max, NULL);
}

/* The same, and the end of the list (the path cache counters) in *end. */
static unsigned stat_ids_end(struct madcmd_stat_rep *out, unsigned max, struct madcmd_stat_end *end)
{
	int fd = client();
	struct madcmd_port q;
	union {
		struct madcmd_stat_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	unsigned n = 0;

	assert_int_equal(hello(fd, MADCMD_SESSION_HOST, "", 0, NULL), 0);
	memset(&q, 0, sizeof(q));
	madcmd_hdr_init(&q.h, MADCMD_STAT, sizeof(q), 77);
	send_msg(fd, &q, sizeof(q));
	for (;;) {
		assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_STAT_REP);
		assert_int_equal(in.r.h.seq, 77);
		if (in.r.last) {
			if (end)
				memcpy(end, &in, sizeof(*end));
			break;
		}
		if (n < max)
			out[n] = in.r;
		n++;
	}
	close(fd);
	return n;
}

/* ---- protocol checks ---- */

static void test_check_accepts(void **state)
{
	union {
		struct madcmd_hello hello;
		struct madcmd_hello_rep hrep;
		struct madcmd_cmd cmd;
		struct madcmd_event ev;
		struct madcmd_mad_reg reg;
		struct madcmd_mad_reg_rep rrep;
		struct madcmd_mad mad;
		struct madcmd_port port;
		struct madcmd_port_rep prep;
		struct madcmd_stat_rep srep;
		uint8_t b[MADCMD_MSG_MAX];
	} u;
	static const struct {
		int type;
		size_t len;
	} fixed[] = {
	    {MADCMD_HELLO, sizeof(struct madcmd_hello)},
	    {MADCMD_HELLO_REP, sizeof(struct madcmd_hello_rep)},
	    {MADCMD_CMD, sizeof(struct madcmd_cmd)},
	    {MADCMD_REPLY, sizeof(struct madcmd_cmd)},
	    {MADCMD_EVENT, sizeof(struct madcmd_event)},
	    {MADCMD_MAD_REG, sizeof(struct madcmd_mad_reg)},
	    {MADCMD_MAD_REG_REP, sizeof(struct madcmd_mad_reg_rep)},
	    {MADCMD_PORT_BIND, sizeof(struct madcmd_port)},
	    {MADCMD_PORT_LISTEN, sizeof(struct madcmd_port)},
	    {MADCMD_PORT_UNBIND, sizeof(struct madcmd_port)},
	    {MADCMD_PORT_REP, sizeof(struct madcmd_port_rep)},
	    {MADCMD_STAT, sizeof(struct madcmd_port)},
	    {MADCMD_STAT_REP, sizeof(struct madcmd_stat_rep)},
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		memset(&u, 0, sizeof(u));
		madcmd_hdr_init(&u.hello.h, fixed[i].type, fixed[i].len, 9);
		if (fixed[i].type == MADCMD_HELLO)
			u.hello.kind = MADCMD_SESSION_CM;
		assert_int_equal(madcmd_check(&u, fixed[i].len), fixed[i].type);
		/* Truncated, or a byte more: refused. */
		u.hello.h.len = (uint32_t)fixed[i].len - 1;
		assert_int_equal(madcmd_check(&u, fixed[i].len - 1), -EPROTO);
		u.hello.h.len = (uint32_t)fixed[i].len + 1;
		assert_int_equal(madcmd_check(&u, fixed[i].len + 1), -EPROTO);
		/* The header's length must be the packet's. */
		u.hello.h.len = (uint32_t)fixed[i].len + 1;
		assert_int_equal(madcmd_check(&u, fixed[i].len), -EPROTO);
		/* Another version. */
		madcmd_hdr_init(&u.hello.h, fixed[i].type, fixed[i].len, 9);
		u.hello.h.version = MADCMD_PROTO_VERSION + 1;
		assert_int_equal(madcmd_check(&u, fixed[i].len), -EPROTO);
	}
	for (int t = MADCMD_MAD_SEND; t <= MADCMD_MAD_RECV; t++) {
		memset(&u, 0, sizeof(u));
		madcmd_hdr_init(&u.mad.h, t, sizeof(u.mad) + MAD_SIZE, 0);
		u.mad.len = MAD_SIZE;
		assert_int_equal(madcmd_check(&u, sizeof(u.mad) + MAD_SIZE), t);
		/* The MAD's length must be what follows. */
		assert_int_equal(madcmd_check(&u, sizeof(u.mad) + MAD_SIZE - 1), -EPROTO);
		memset((uint8_t *)&u.mad + offsetof(struct madcmd_mad, addr.grh_present), 2, 1);
		assert_int_equal(madcmd_check(&u, sizeof(u.mad) + MAD_SIZE), -EPROTO);
		u.mad.addr.grh_present = true;
		assert_int_equal(madcmd_check(&u, sizeof(u.mad) + MAD_SIZE), t);
		u.mad.len = 23; /* shorter than a MAD header */
		u.mad.h.len = sizeof(u.mad) + 23;
		assert_int_equal(madcmd_check(&u, sizeof(u.mad) + 23), -EPROTO);
	}
	memset(&u, 0, sizeof(u));
	madcmd_hdr_init(&u.mad.h, MADCMD_MAD_SEND, sizeof(u.mad) + MADCMD_MAD_MAX + 1, 0);
	u.mad.len = MADCMD_MAD_MAX + 1;
	assert_int_equal(madcmd_check(&u, sizeof(u.mad) + MADCMD_MAD_MAX + 1), -EPROTO);
}

static void test_check_rejects(void **state)
{
	union {
		struct madcmd_hello hello;
		struct madcmd_cmd cmd;
		struct madcmd_event ev;
		struct madcmd_port port;
		uint8_t b[MADCMD_MSG_MAX];
	} u;

	(void)state;
	assert_int_equal(madcmd_check(NULL, 100), -EPROTO);
	memset(&u, 0, sizeof(u));
	assert_int_equal(madcmd_check(&u, 3), -EPROTO);
	/* Unknown types. */
	madcmd_hdr_init(&u.hello.h, 0, sizeof(struct madcmd_hdr), 0);
	assert_int_equal(madcmd_check(&u, sizeof(struct madcmd_hdr)), -EPROTO);
	madcmd_hdr_init(&u.hello.h, MADCMD__TYPES, sizeof(struct madcmd_hdr), 0);
	assert_int_equal(madcmd_check(&u, sizeof(struct madcmd_hdr)), -EPROTO);
	/* HELLO: kind, port, CA name. */
	memset(&u, 0, sizeof(u));
	madcmd_hdr_init(&u.hello.h, MADCMD_HELLO, sizeof(u.hello), 0);
	u.hello.kind = 0;
	assert_int_equal(madcmd_check(&u, sizeof(u.hello)), -EPROTO);
	u.hello.kind = MADCMD_SESSION_MAD + 1;
	assert_int_equal(madcmd_check(&u, sizeof(u.hello)), -EPROTO);
	u.hello.kind = MADCMD_SESSION_HOST;
	u.hello.port = 256;
	assert_int_equal(madcmd_check(&u, sizeof(u.hello)), -EPROTO);
	u.hello.port = -1;
	assert_int_equal(madcmd_check(&u, sizeof(u.hello)), -EPROTO);
	u.hello.port = 1;
	memset(u.hello.ca, 'x', sizeof(u.hello.ca));
	assert_int_equal(madcmd_check(&u, sizeof(u.hello)), -EPROTO);
	/* CMD: op and private data lengths. */
	memset(&u, 0, sizeof(u));
	madcmd_hdr_init(&u.cmd.h, MADCMD_CMD, sizeof(u.cmd), 0);
	u.cmd.cmd.op = CM_RT__COUNT;
	assert_int_equal(madcmd_check(&u, sizeof(u.cmd)), -EPROTO);
	u.cmd.cmd.op = CM_RT_RTU;
	u.cmd.cmd.private_data_len = CM_PRIVATE_MAX + 1;
	assert_int_equal(madcmd_check(&u, sizeof(u.cmd)), -EPROTO);
	u.cmd.cmd.private_data_len = 0;
	u.cmd.cmd.op = CM_RT_CONNECT;
	u.cmd.cmd.connect.private_data_len = CM_REQ_PRIVATE_DATA_SIZE + 1;
	assert_int_equal(madcmd_check(&u, sizeof(u.cmd)), -EPROTO);
	u.cmd.cmd.connect.private_data_len = CM_REQ_PRIVATE_DATA_SIZE;
	assert_int_equal(madcmd_check(&u, sizeof(u.cmd)), MADCMD_CMD);
	/* A bool that is neither 0 nor 1 (undefined to load in C). */
	memset((uint8_t *)&u.cmd.cmd + offsetof(struct cm_rt_cmd, connect.has_alternate), 2, 1);
	assert_int_equal(madcmd_check(&u, sizeof(u.cmd)), -EPROTO);
	/* EVENT: type and lengths. */
	memset(&u, 0, sizeof(u));
	madcmd_hdr_init(&u.ev.h, MADCMD_EVENT, sizeof(u.ev), 0);
	u.ev.ev.type = CM_EV__COUNT;
	assert_int_equal(madcmd_check(&u, sizeof(u.ev)), -EPROTO);
	u.ev.ev.type = CM_EV_REJ_RCVD;
	u.ev.ev.rej.ari_len = CM_REJ_ARI_SIZE + 1;
	assert_int_equal(madcmd_check(&u, sizeof(u.ev)), -EPROTO);
	u.ev.ev.rej.ari_len = 0;
	memset((uint8_t *)&u.ev.ev + offsetof(struct cm_event, from.grh_present), 7, 1);
	assert_int_equal(madcmd_check(&u, sizeof(u.ev)), -EPROTO);
	/* PORT_*: flags are booleans. */
	memset(&u, 0, sizeof(u));
	madcmd_hdr_init(&u.port.h, MADCMD_PORT_BIND, sizeof(u.port), 0);
	u.port.reuseaddr = 2;
	assert_int_equal(madcmd_check(&u, sizeof(u.port)), -EPROTO);
}

/* ---- sessions ---- */

static void test_hello_errors(void **state)
{
	struct madcmd_counters c;
	struct madcmd_hello h;
	uint8_t junk[3] = {1, 2, 3};
	int fd;

	(void)state;
	env_up(0, 0);
	/* Another build's layout: EPROTO, then the session is closed. */
	fd = client();
	memset(&h, 0, sizeof(h));
	madcmd_hdr_init(&h.h, MADCMD_HELLO, sizeof(h), 0);
	h.kind = MADCMD_SESSION_CM;
	h.layout = madcmd_layout() + 1;
	send_msg(fd, &h, sizeof(h));
	{
		union {
			struct madcmd_hello_rep r;
			uint8_t b[MADCMD_MSG_MAX];
		} in;

		assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_HELLO_REP);
		assert_int_equal(in.r.rc, -EPROTO);
	}
	expect_eof(fd);
	close(fd);
	/* A port nobody serves. */
	fd = client();
	assert_int_equal(hello(fd, MADCMD_SESSION_CM, "nosuch0", 0, NULL), -ENODEV);
	expect_eof(fd);
	close(fd);
	fd = client();
	assert_int_equal(hello(fd, MADCMD_SESSION_MAD, "fake1", 2, NULL), -ENODEV);
	expect_eof(fd);
	close(fd);
	/* Garbage first: counted, closed. */
	fd = client();
	send_msg(fd, junk, sizeof(junk));
	expect_eof(fd);
	close(fd);
	/* A message of another session kind: closed as well. */
	fd = client();
	assert_int_equal(hello(fd, MADCMD_SESSION_HOST, "", 0, NULL), 0);
	{
		struct madcmd_cmd m;

		memset(&m, 0, sizeof(m));
		madcmd_hdr_init(&m.h, MADCMD_CMD, sizeof(m), 1);
		m.cmd.op = CM_RT_STATS;
		send_msg(fd, &m, sizeof(m));
	}
	expect_eof(fd);
	close(fd);
	assert_int_equal(madcmd_counters_get(E.d, -1, &c), 0);
	assert_int_equal(c.malformed, 2);
	assert_int_equal(tables().sessions, 0);
	env_down();
}

/* A session of `kind` on fake1's port: served, LID 6. */
static void hello_fake1(uint32_t kind)
{
	struct madcmd_hello_rep r;
	int fd = client();

	assert_int_equal(hello(fd, kind, "fake1", 1, &r), 0);
	assert_string_equal(r.port.ca_name, "fake1");
	assert_int_equal(r.port.lid, 6);
	close(fd);
}

static void test_hello_port(void **state)
{
	struct madcmd_hello_rep r;
	int fd;

	(void)state;
	env_up(0, 0);
	fd = client();
	assert_int_equal(hello(fd, MADCMD_SESSION_CM, "", 0, &r), 0);
	assert_string_equal(r.port.ca_name, "fake0");
	assert_int_equal(r.port.lid, 5);
	assert_int_equal(r.ca_guid, 5); /* the port GUID: GID fe80::5 */
	close(fd);
	hello_fake1(MADCMD_SESSION_MAD);
	env_down();
}

/* Run the daemon's loop for about `ms` (its timers included). */
static void run_for(unsigned ms)
{
	uint64_t end = mad_clock_monotonic_ns(NULL) + ms * 1000000ull;

	do
		mad_loop_run_once(E.loop, 5);
	while (mad_clock_monotonic_ns(NULL) < end);
}

/*
 * A port that is not Active when the daemon starts (madcmd at boot, before
 * the SM brought the link up) is not served, and a HELLO naming it gets
 * ENODEV; once it is Active the next look serves it, once, and programs
 * can use it.
 */
static void test_port_comes_up(void **state)
{
	int fd;

	(void)state;
	env_up_ports(0, 0, 1 /* Down */, 10);
	fd = client();
	assert_int_equal(hello(fd, MADCMD_SESSION_CM, "fake1", 1, NULL), -ENODEV);
	close(fd);
	run_for(40);
	assert_int_equal(madcmd_port_count(E.d), 1);
	pthread_mutex_lock(&E.fb.lock);
	E.fb.ca[1].port.state = 4;
	pthread_mutex_unlock(&E.fb.lock);
	run_for(40);
	assert_int_equal(madcmd_port_count(E.d), 2);
	run_for(40);
	assert_int_equal(madcmd_port_count(E.d), 2);
	hello_fake1(MADCMD_SESSION_CM);
	env_down();
}

/* Opens of CA `ca` still held: those that hung up, or all of them. */
static unsigned opens_of(int ca, bool hung_only)
{
	unsigned n = 0;

	pthread_mutex_lock(&E.fb.lock);
	for (int o = 0; o < FAKE_FABRIC_MAX_OPENS; o++)
		if (E.fb.opens[o].used && E.fb.opens[o].ca == ca &&
		    (!hung_only || E.fb.opens[o].hung))
			n++;
	pthread_mutex_unlock(&E.fb.lock);
	return n;
}

/*
 * A served port whose device goes away (its umad fds hang up) ends its
 * sessions and refuses new ones; what it held is closed; when the device
 * is back the next look serves it again, in the same slot, and programs
 * can use it.  The other port is served throughout.
 */
static void test_port_comes_back(void **state)
{
	unsigned held;
	int fd, other;

	(void)state;
	env_up_ports(0, 0, 4, 10);
	held = opens_of(1, false);
	assert_true(held > 0);
	fd = cm_client("fake1");
	other = cm_client("fake0");
	fake_fabric_remove_ca(&E.fb, 1, true);
	run_for(40);
	expect_eof(fd);
	close(fd);
	fd = client();
	assert_int_equal(hello(fd, MADCMD_SESSION_CM, "fake1", 1, NULL), -ENODEV);
	close(fd);
	run_for(40);
	assert_int_equal(opens_of(1, false), 0); /* its runtime and proxy are closed */
	fake_fabric_remove_ca(&E.fb, 1, false);
	run_for(40);
	assert_int_equal(madcmd_port_count(E.d), 2);
	assert_int_equal(opens_of(1, false), held);
	assert_int_equal(opens_of(1, true), 0);
	hello_fake1(MADCMD_SESSION_CM);
	hello_fake1(MADCMD_SESSION_MAD);
	/* fake0's session lived through it. */
	assert_int_equal(listen_on(other, SVC) >= 0, 1);
	close(other);
	env_down();
}

/*
 * A listens on fake0, C connects from fake1, B (fake0) watches: events
 * reach only their owner, B cannot touch A's ids, and when A's program
 * goes away its connection is released (C gets the DREQ) and nothing of
 * A's is left.
 */
static void test_cm_ownership(void **state)
{
	struct madcmd_stat_rep st[8];
	struct cm_event ev;
	uint32_t cid, aid;
	unsigned dreqs;
	int a, b, c, lid;

	(void)state;
	env_up(0, 0);
	a = cm_client("fake0");
	b = cm_client("fake0");
	c = cm_client("fake1");
	lid = listen_on(a, SVC);
	assert_true(lid >= 0);
	assert_int_equal(connect_to(c, 1, SVC, 0x1001, &cid), 0);
	next_event(a, CM_EV_REQ_RCVD, &ev);
	assert_int_equal(ev.listen_id, lid);
	assert_int_equal(ev.user, 0x11);
	assert_int_equal(ev.req.remote_qpn, 0x1001);
	aid = ev.id;
	expect_quiet(b);
	expect_quiet(c);

	/* B may neither act on A's ids nor learn about them. */
	assert_int_equal(accept_id(b, aid, 0x2002), -EINVAL);
	assert_int_equal(simple(b, CM_RT_UNLISTEN, (uint32_t)lid), -EINVAL);
	assert_int_equal(simple(b, CM_RT_CONN_STATE, aid), -EINVAL);
	assert_int_equal(simple(b, CM_RT_RELEASE, cid), -EINVAL);
	/* Listen id vs connection id: UNLISTEN of a connection id is no listener. */
	assert_int_equal(simple(a, CM_RT_UNLISTEN, aid), -EINVAL);

	assert_int_equal(accept_id(a, aid, 0x2002), 0);
	next_event(c, CM_EV_REP_RCVD, &ev);
	assert_int_equal(ev.id, cid);
	assert_int_equal(ev.user, 0x1234);
	assert_int_equal(simple(c, CM_RT_RTU, cid), 0);
	next_event(a, CM_EV_RTU_RCVD, &ev);
	assert_int_equal(ev.id, aid);
	assert_int_equal(ev.user, 0xacc);
	expect_quiet(b);

	/* STAT: A's listener and connection, C's connection. */
	assert_int_equal(stat_ids(st, 8), 3);
	for (unsigned i = 0; i < 3; i++) {
		if (st[i].listen) {
			assert_int_equal(st[i].id, lid);
			assert_int_equal(st[i].service_id, SVC);
		} else {
			assert_int_equal(st[i].state, CM_ST_ESTABLISHED);
			assert_int_equal(st[i].pid, getpid());
			assert_int_equal(st[i].remote_lid, st[i].id == aid ? 6 : 5);
		}
	}

	/* A's program dies: the daemon releases its connection (DREQ). */
	dreqs = fake_fabric_count_cm(&E.fb, 0, CM_ATTR_DREQ);
	close(a);
	next_event(c, CM_EV_DREQ_RCVD, &ev);
	assert_int_equal(ev.id, cid);
	assert_int_equal(fake_fabric_count_cm(&E.fb, 0, CM_ATTR_DREQ), dreqs + 1);
	assert_int_equal(stat_ids(st, 8), 1);
	assert_int_equal(st[0].id, cid);
	assert_int_equal(tables().ids, 1);
	/* C answers; its connection waits out TimeWait, then is forgotten. */
	assert_int_equal(simple(c, CM_RT_DISCONNECT, cid), 0);
	next_event(c, CM_EV_TIMEWAIT_EXIT, NULL);
	assert_int_equal(tables().ids, 0);
	assert_int_equal(stat_ids(st, 8), 0);
	close(b);
	close(c);
	assert_int_equal(tables().sessions, 0);
	env_down();
}

/* A handshake cut short by the server's exit: the client sees the REJ. */
static void test_cm_close_rejects(void **state)
{
	struct madcmd_counters pc;
	struct cm_event ev;
	uint32_t cid;
	int a, c;

	(void)state;
	env_up(0, 0);
	a = cm_client("fake0");
	c = cm_client("fake1");
	assert_true(listen_on(a, SVC) >= 0);
	assert_int_equal(connect_to(c, 1, SVC, 0x1001, &cid), 0);
	next_event(a, CM_EV_REQ_RCVD, &ev);
	close(a);
	next_event(c, CM_EV_REJ_RCVD, &ev);
	assert_int_equal(ev.id, cid);
	/* The REJ ended C's connection: the daemon forgot it too. */
	assert_int_equal(tables().ids, 0);
	/* A's listener went with it: a new REQ finds no service. */
	assert_int_equal(connect_to(c, 1, SVC, 0x1002, &cid), 0);
	next_event(c, CM_EV_REJ_RCVD, &ev);
	assert_int_equal(ev.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(madcmd_counters_get(E.d, 1, &pc), 0);
	assert_true(pc.events >= 2);
	close(c);
	assert_int_equal(tables().sessions, 0);
	assert_int_equal(tables().ids, 0);
	env_down();
}

/*
 * The per-session id limit: commands that would make an id fail with
 * -ENOSPC, and a REQ for a session at its limit is dropped (not queued).
 */
static void test_cm_limits(void **state)
{
	struct madcmd_counters c0, c1;
	uint32_t cid;
	int a;

	(void)state;
	env_up(2, 0);
	a = cm_client("fake0");
	assert_true(listen_on(a, SVC) >= 0);
	assert_int_equal(madcmd_counters_get(E.d, 0, &c0), 0);
	/* A connects to its own service: the REQ finds the session full. */
	assert_int_equal(connect_to(a, 0, SVC, 0x1001, &cid), 0);
	expect_quiet(a);
	assert_int_equal(madcmd_counters_get(E.d, 0, &c1), 0);
	assert_int_equal(c1.dropped, c0.dropped + 1);
	assert_int_equal(listen_on(a, SVC + 2), -ENOSPC);
	assert_int_equal(connect_to(a, 0, SVC + 1, 0x1002, &cid), -ENOSPC);
	/* Commands that make nothing still work. */
	assert_int_equal(simple(a, CM_RT_STATS, 0), 0);
	close(a);
	assert_int_equal(tables().ids, 0);
	env_down();
}

/* madcmd_batch_next: messages back to back, and every way a batch breaks. */
static void test_batch_codec(void **state)
{
	static _Alignas(16) uint8_t pkt[3 * sizeof(struct madcmd_event)];
	struct madcmd_event e;
	struct madcmd_grant g;
	size_t off = 0, len, n;
	const void *msg;

	(void)state;
	memset(&e, 0, sizeof(e));
	madcmd_hdr_init(&e.h, MADCMD_EVENT, sizeof(e), 0);
	e.ev.type = CM_EV_REQ_RCVD;
	memset(&g, 0, sizeof(g));
	madcmd_hdr_init(&g.h, MADCMD_GRANT, sizeof(g), 0);
	g.n = 1;
	g.ids[0] = 7;
	memcpy(pkt, &e, sizeof(e));
	memcpy(pkt + sizeof(e), &g, sizeof(g));
	n = sizeof(e) + sizeof(g);
	assert_int_equal(madcmd_batch_next(pkt, n, &off, &msg, &len), MADCMD_EVENT);
	assert_ptr_equal(msg, pkt);
	assert_int_equal(len, sizeof(e));
	assert_int_equal(madcmd_batch_next(pkt, n, &off, &msg, &len), MADCMD_GRANT);
	assert_int_equal(off, n);
	assert_int_equal(madcmd_batch_next(pkt, n, &off, &msg, &len), 0);
	/* A second message cut short, or a few bytes after the last. */
	off = 0;
	assert_int_equal(madcmd_batch_next(pkt, n - 1, &off, &msg, &len), MADCMD_EVENT);
	assert_int_equal(madcmd_batch_next(pkt, n - 1, &off, &msg, &len), -EPROTO);
	off = 0;
	assert_int_equal(madcmd_batch_next(pkt, sizeof(e) + 3, &off, &msg, &len), MADCMD_EVENT);
	assert_int_equal(madcmd_batch_next(pkt, sizeof(e) + 3, &off, &msg, &len), -EPROTO);
	/* A header whose len is 0 (no progress), shorter than a header, or too long. */
	static const uint32_t bads[] = {0, sizeof(struct madcmd_hdr) / 2, sizeof(g) + 1};

	for (unsigned k = 0; k < sizeof(bads) / sizeof(bads[0]); k++) {
		struct madcmd_grant b = g;

		b.h.len = bads[k];
		memcpy(pkt + sizeof(e), &b, sizeof(b));
		off = sizeof(e);
		assert_int_equal(madcmd_batch_next(pkt, n, &off, &msg, &len), -EPROTO);
		assert_int_equal(off, sizeof(e)); /* no further */
	}
	off = n + 1;
	assert_int_equal(madcmd_batch_next(pkt, n, &off, &msg, &len), -EPROTO);
	assert_int_equal(madcmd_batch_next(NULL, n, &off, &msg, &len), -EPROTO);
}

/* What the daemon has for a session in one turn of its loop is one packet. */
static void test_batched_replies(void **state)
{
	union {
		struct madcmd_cmd c;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	struct madcmd_cmd m;
	uint32_t first;
	int a;

	(void)state;
	env_up(0, 0);
	a = cm_client("fake0");
	expect_quiet(a);
	max_batch = 0;
	first = seq + 1;
	for (int i = 0; i < 10; i++) {
		memset(&m, 0, sizeof(m));
		madcmd_hdr_init(&m.h, MADCMD_CMD, sizeof(m), ++seq);
		m.cmd.op = CM_RT_STATS;
		send_msg(a, &m, sizeof(m));
	}
	mad_loop_run_once(E.loop, 100); /* one turn reads all ten */
	assert_true(recv_packet(a) > 0);
	assert_int_equal(max_batch, 10);
	for (uint32_t i = 0; i < 10; i++) {
		assert_int_equal(next_pending(a, &in, sizeof(in)), MADCMD_REPLY);
		assert_int_equal(in.c.h.seq, first + i); /* in order */
		assert_int_equal(in.c.cmd.result, 0);
	}
	expect_quiet(a);
	close(a);
	env_down();
}

/* Send a CMD with flags (MADCMD_F_ASYNC, NOREPLY) and wait for nothing. */
static void post(int fd, const struct cm_rt_cmd *c, uint32_t flags)
{
	struct madcmd_cmd m;

	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, MADCMD_CMD, sizeof(m), ++seq);
	m.h.flags = flags;
	m.cmd = *c;
	send_msg(fd, &m, sizeof(m));
}

static int async_failure(int fd, uint32_t *id)
{
	union {
		struct madcmd_cmd c;
		uint8_t b[MADCMD_MSG_MAX];
	} in;

	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_REPLY);
	assert_true(in.c.h.flags & MADCMD_F_ASYNC);
	*id = in.c.cmd.id;
	return in.c.cmd.result;
}

/*
 * A CM session is granted comm IDs at HELLO, within its id limit; a
 * CONNECT_AS with one, sent MADCMD_F_ASYNC, gets no REPLY and makes the
 * connection with that ID; one naming an ID not granted to the session
 * (another session's, or one used already) gets a REPLY flagged ASYNC
 * with -EINVAL; programs may not reserve IDs themselves.
 */
static void test_connect_as(void **state)
{
	struct cm_rt_cmd c;
	struct cm_event ev;
	uint32_t mine, other, id;
	int a, b, k;

	(void)state;
	env_up(0, 0);
	a = cm_client("fake0");
	assert_true(listen_on(a, SVC) >= 0);
	b = cm_client("fake1");
	expect_quiet(b);
	assert_int_equal(granted.fd, b);
	assert_int_equal(granted.n, MADCMD_GRANT_TARGET);
	mine = granted.ids[0];
	k = cm_client("fake1");
	expect_quiet(k);
	assert_int_equal(granted.fd, k);
	other = granted.ids[0];

	connect_cmd(&c, 1, SVC, 0x1001);
	c.op = CM_RT_CONNECT_AS;
	c.id = mine;
	post(b, &c, MADCMD_F_ASYNC);
	next_event(a, CM_EV_REQ_RCVD, &ev);
	expect_quiet(b); /* no REPLY */
	assert_int_equal(accept_id(a, ev.id, 0x2002), 0);
	next_event(b, CM_EV_REP_RCVD, &ev);
	assert_int_equal(ev.id, mine);
	assert_int_equal(ev.user, 0x1234);

	/* Used already, and another session's: refused, later, with the ID. */
	connect_cmd(&c, 1, SVC, 0x1003);
	c.op = CM_RT_CONNECT_AS;
	post(b, &c, MADCMD_F_ASYNC); /* c.id is mine again */
	c.id = mine;
	post(b, &c, MADCMD_F_ASYNC);
	c.id = other;
	post(b, &c, MADCMD_F_ASYNC);
	assert_int_equal(async_failure(b, &id), -EINVAL);
	assert_int_equal(async_failure(b, &id), -EINVAL);
	assert_int_equal(async_failure(b, &id), -EINVAL);
	assert_int_equal(id, other);
	/* A program cannot reserve IDs itself. */
	assert_int_equal(simple(b, CM_RT_RESERVE_ID, 0), -EINVAL);
	assert_int_equal(simple(b, CM_RT_UNRESERVE_ID, other), -EINVAL);
	close(a);
	close(b);
	close(k);
	pump();
	assert_int_equal(tables().ids, 0);
	env_down();

	/* Grants count against the id limit: a session of 4 ids gets 4. */
	env_up(4, 0);
	b = cm_client("fake1");
	expect_quiet(b);
	assert_int_equal(granted.n, 4);
	close(b);
	env_down();
}

/* A client that does not read is cut off, and its ids are released. */
static void test_slow_client(void **state)
{
	struct madcmd_counters c;
	struct madcmd_cmd m;
	int a, rc;
	uint8_t b[MADCMD_MSG_MAX];
	bool eof = false;

	(void)state;
	env_up(0, 4);
	a = cm_client("fake0");
	assert_true(listen_on(a, SVC) >= 0);
	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, MADCMD_CMD, sizeof(m), 1);
	m.cmd.op = CM_RT_STATS;
	/* Enough to fill the daemon's send room (madcmd_socket_bufs) and then its queue. */
	for (int i = 0; i < 100000 && tables().sessions; i++)
		if (send(a, &m, sizeof(m), MSG_DONTWAIT) < 0)
			assert_true(errno == EAGAIN || errno == EPIPE || errno == ECONNRESET);
	assert_int_equal(madcmd_counters_get(E.d, -1, &c), 0);
	assert_int_equal(c.slow, 1);
	assert_int_equal(tables().sessions, 0);
	assert_int_equal(tables().ids, 0);
	while (!eof) {
		rc = (int)recv(a, b, sizeof(b), MSG_DONTWAIT);
		eof = rc <= 0;
	}
	close(a);
	env_down();
}

/* ---- port space ---- */

static int port_op(int fd, int type, uint64_t token, uint16_t port, const char *ip, bool reuse,
		   uint16_t *got)
{
	struct madcmd_port m;
	union {
		struct madcmd_port_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;

	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, type, sizeof(m), ++seq);
	m.token = token;
	m.ps = 0x0106; /* RDMA_PS_TCP */
	m.port = port;
	m.family = AF_INET;
	if (ip)
		assert_int_equal(inet_pton(AF_INET, ip, m.addr), 1);
	m.any = !ip;
	m.reuseaddr = reuse;
	send_msg(fd, &m, sizeof(m));
	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_PORT_REP);
	assert_int_equal(in.r.h.seq, seq);
	if (got)
		*got = in.r.port;
	return in.r.rc;
}

static void test_portspace(void **state)
{
	uint16_t p1, p2;
	int a, b;

	(void)state;
	env_up(0, 0);
	a = client();
	b = client();
	assert_int_equal(hello(a, MADCMD_SESSION_HOST, "", 0, NULL), 0);
	assert_int_equal(hello(b, MADCMD_SESSION_HOST, "", 0, NULL), 0);
	/* One port, two programs. */
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 1, 5000, "10.0.0.1", false, NULL), 0);
	assert_int_equal(port_op(b, MADCMD_PORT_BIND, 1, 5000, "10.0.0.1", false, NULL),
			 -EADDRINUSE);
	assert_int_equal(port_op(b, MADCMD_PORT_BIND, 2, 5000, NULL, false, NULL), -EADDRNOTAVAIL);
	assert_int_equal(port_op(b, MADCMD_PORT_BIND, 3, 5000, "10.0.0.2", false, NULL), 0);
	/* The same token twice in one session: one binding per id. */
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 1, 5001, "10.0.0.1", false, NULL), -EINVAL);
	/* Ephemeral ports are distinct host-wide. */
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 10, 0, NULL, false, &p1), 0);
	assert_int_equal(port_op(b, MADCMD_PORT_BIND, 10, 0, NULL, false, &p2), 0);
	/* From the (fixed) random start upward, skipping what is taken. */
	assert_int_equal(p1, 32768 + 7);
	assert_int_equal(p2, 32768 + 8);
	/* Privileged ports. */
	E.priv = false;
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 20, 1000, NULL, false, NULL), -EACCES);
	E.priv = true;
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 20, 1000, NULL, false, NULL), 0);
	/* REUSEADDR lets both bind; listening checks again without it. */
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 30, 6000, "10.0.0.1", true, NULL), 0);
	assert_int_equal(port_op(b, MADCMD_PORT_BIND, 30, 6000, "10.0.0.1", true, NULL), 0);
	assert_int_equal(port_op(a, MADCMD_PORT_LISTEN, 30, 0, "10.0.0.1", true, NULL),
			 -EADDRINUSE);
	assert_int_equal(port_op(b, MADCMD_PORT_UNBIND, 30, 0, NULL, false, NULL), 0);
	assert_int_equal(port_op(a, MADCMD_PORT_LISTEN, 30, 0, "10.0.0.1", true, NULL), 0);
	assert_int_equal(port_op(b, MADCMD_PORT_UNBIND, 30, 0, NULL, false, NULL), -EINVAL);
	/* A's program exits: its ports are free for B. */
	assert_int_equal(tables().bindings, 6);
	close(a);
	assert_int_equal(tables().bindings, 2);
	assert_int_equal(port_op(b, MADCMD_PORT_BIND, 40, 5000, "10.0.0.1", false, NULL), 0);
	close(b);
	assert_int_equal(tables().bindings, 0);
	env_down();
}

/* One port space per network namespace, as the kernel's rdma_cm. */
static void test_portspace_netns(void **state)
{
	uint16_t p1, p2;
	int a, b, c;

	(void)state;
	env_up(0, 0);
	E.netns = 0x1111;
	a = client();
	E.netns = 0x2222;
	b = client();
	c = client();
	E.netns = 0;
	assert_int_equal(hello(a, MADCMD_SESSION_HOST, "", 0, NULL), 0);
	assert_int_equal(hello(b, MADCMD_SESSION_HOST, "", 0, NULL), 0);
	assert_int_equal(hello(c, MADCMD_SESSION_HOST, "", 0, NULL), 0);
	/* The same address and port in two namespaces: both bind and listen. */
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 1, 5000, "10.0.0.1", false, NULL), 0);
	assert_int_equal(port_op(b, MADCMD_PORT_BIND, 1, 5000, "10.0.0.1", false, NULL), 0);
	assert_int_equal(port_op(a, MADCMD_PORT_LISTEN, 1, 0, "10.0.0.1", false, NULL), 0);
	assert_int_equal(port_op(b, MADCMD_PORT_LISTEN, 1, 0, "10.0.0.1", false, NULL), 0);
	/* ... and a wildcard there too; within b's namespace, c conflicts. */
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 2, 5001, NULL, false, NULL), 0);
	assert_int_equal(port_op(c, MADCMD_PORT_BIND, 2, 5001, NULL, false, NULL), 0);
	assert_int_equal(port_op(c, MADCMD_PORT_BIND, 3, 5000, "10.0.0.1", false, NULL),
			 -EADDRINUSE);
	assert_int_equal(port_op(c, MADCMD_PORT_BIND, 4, 5000, NULL, false, NULL), -EADDRNOTAVAIL);
	/* Ephemeral ports: the same one may come out in each namespace. */
	assert_int_equal(port_op(a, MADCMD_PORT_BIND, 10, 0, NULL, false, &p1), 0);
	assert_int_equal(port_op(b, MADCMD_PORT_BIND, 10, 0, NULL, false, &p2), 0);
	assert_int_equal(p1, 32768 + 7);
	assert_int_equal(p2, 32768 + 7);
	close(a);
	close(b);
	close(c);
	pump();
	assert_int_equal(tables().bindings, 0);
	env_down();
}

/* A REQ from fake1 to `svc` with an IP CM header addressed to `dst`. */
static int connect_ip(int fd, uint64_t svc, const char *dst, uint32_t *id)
{
	static uint32_t qpn = 0x3000;
	struct sockaddr_storage s, d;
	struct cm_rt_cmd c;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(&d, 0, sizeof(d));
	if (strchr(dst, ':')) {
		s.ss_family = d.ss_family = AF_INET6;
		assert_int_equal(
		    inet_pton(AF_INET6, "::9", &((struct sockaddr_in6 *)&s)->sin6_addr), 1);
		assert_int_equal(inet_pton(AF_INET6, dst, &((struct sockaddr_in6 *)&d)->sin6_addr),
				 1);
	} else {
		s.ss_family = d.ss_family = AF_INET;
		assert_int_equal(
		    inet_pton(AF_INET, "10.0.0.9", &((struct sockaddr_in *)&s)->sin_addr), 1);
		assert_int_equal(inet_pton(AF_INET, dst, &((struct sockaddr_in *)&d)->sin_addr), 1);
	}
	connect_cmd(&c, 1, svc, ++qpn); /* one QP a connection */
	assert_int_equal(cm_ip_hdr_encode(c.connect.private_data, sizeof(c.connect.private_data),
					  (struct sockaddr *)&s, (struct sockaddr *)&d),
			 0);
	c.connect.private_data_len = CM_IP_HDR_SIZE;
	rc = cmd(fd, &c, NULL, NULL);
	if (!rc)
		*id = c.id;
	return rc;
}

/*
 * Listeners of two namespaces share one engine listener: each REQ goes
 * to the one whose namespace holds its destination IP, a REQ to neither
 * is rejected as for no listener, and the engine listener goes with the
 * last of them.  Within a namespace the engine's EADDRINUSE stands.
 */
static void test_ns_listen(void **state)
{
	const uint64_t sid = 0x0000000001061388ull; /* TCP port 5000 */
	struct cm_event ev;
	uint32_t cid;
	int a, b, a2, c, la, lb;

	(void)state;
	env_up(0, 0);
	E.netns = 0x1111;
	a = cm_client("fake0");
	a2 = cm_client("fake0");
	E.netns = 0x2222;
	b = cm_client("fake0");
	E.netns = 0;
	c = cm_client("fake1");
	la = listen_on(a, sid);
	assert_true(la >= 0 && !(la & MADCMD_VLISTEN_BIT));
	lb = listen_on(b, sid);
	assert_true(lb >= 0 && (lb & MADCMD_VLISTEN_BIT));
	assert_int_equal(listen_on(a2, sid), -EADDRINUSE);

	/* To each namespace's address: its listener, with its own listen id. */
	assert_int_equal(connect_ip(c, sid, "10.0.0.2", &cid), 0);
	next_event(b, CM_EV_REQ_RCVD, &ev);
	assert_int_equal(ev.listen_id, lb);
	assert_int_equal(ev.user, 0x11);
	expect_quiet(a);
	assert_int_equal(connect_ip(c, sid, "10.0.0.1", &cid), 0);
	next_event(a, CM_EV_REQ_RCVD, &ev);
	assert_int_equal(ev.listen_id, la);
	expect_quiet(b);
	assert_int_equal(connect_ip(c, sid, "::2", &cid), 0);
	next_event(b, CM_EV_REQ_RCVD, NULL);
	/* To nobody's: the REJ of no listener. */
	assert_int_equal(connect_ip(c, sid, "10.0.0.7", &cid), 0);
	next_event(c, CM_EV_REJ_RCVD, &ev);
	assert_int_equal(ev.id, cid);
	assert_int_equal(ev.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	expect_quiet(a);
	expect_quiet(b);

	/* B may not stop A's listener; A's going leaves B's working. */
	assert_int_equal(simple(b, CM_RT_UNLISTEN, (uint32_t)la), -EINVAL);
	assert_int_equal(simple(a, CM_RT_UNLISTEN, (uint32_t)la), 0);
	assert_int_equal(connect_ip(c, sid, "10.0.0.2", &cid), 0);
	next_event(b, CM_EV_REQ_RCVD, &ev);
	assert_int_equal(ev.listen_id, lb);
	/* The group is B's alone now: every REQ is B's, unasked. */
	addr_asks = 0;
	assert_int_equal(connect_ip(c, sid, "10.0.0.1", &cid), 0);
	next_event(b, CM_EV_REQ_RCVD, NULL);
	assert_int_equal(addr_asks, 0);
	/* A listens again, joining B's; then B goes and A is alone. */
	la = listen_on(a, sid);
	assert_true(la >= 0 && (la & MADCMD_VLISTEN_BIT));
	assert_int_equal(simple(b, CM_RT_UNLISTEN, (uint32_t)lb), 0);
	assert_int_equal(connect_ip(c, sid, "10.0.0.2", &cid), 0);
	next_event(a, CM_EV_REQ_RCVD, &ev);
	assert_int_equal(ev.listen_id, la);
	/* The last listener's exit frees the engine listener: A2 may listen. */
	close(a);
	pump();
	assert_true(listen_on(a2, sid) >= 0);
	close(a2);
	close(b);
	close(c);
	pump();
	assert_int_equal(tables().sessions, 0);
	assert_int_equal(tables().ids, 0);
	env_down();
}

/* The rule itself, pair by pair (lib/cma_ports.c's check_port). */
static void test_ps_rule(void **state)
{
	struct madcmd_bind a = {.family = AF_INET, .addr = {10, 0, 0, 1}};
	struct madcmd_bind b = a;

	(void)state;
	assert_int_equal(madcmd_ps_conflict(&a, &b, false), -EADDRINUSE);
	b.addr[3] = 2;
	assert_int_equal(madcmd_ps_conflict(&a, &b, false), 0);
	b.any = true;
	assert_int_equal(madcmd_ps_conflict(&a, &b, false), -EADDRNOTAVAIL);
	/* REUSEADDR (the caller's, passed for a bind) needs the other's too. */
	a.reuseaddr = b.reuseaddr = true;
	assert_int_equal(madcmd_ps_conflict(&a, &b, true), 0);
	assert_int_equal(madcmd_ps_conflict(&a, &b, false), -EADDRNOTAVAIL);
	b.reuseaddr = false;
	assert_int_equal(madcmd_ps_conflict(&a, &b, true), -EADDRNOTAVAIL);
	/* AFONLY on both with different families share the port. */
	b.family = AF_INET6;
	a.afonly = b.afonly = true;
	assert_int_equal(madcmd_ps_conflict(&a, &b, false), 0);
	b.afonly = false;
	assert_int_equal(madcmd_ps_conflict(&a, &b, false), -EADDRNOTAVAIL);
	/* Different families, specific addresses: never equal. */
	b.any = false;
	assert_int_equal(madcmd_ps_conflict(&a, &b, false), 0);
}

/* ---- SA proxy ---- */

static int mad_reg(int fd, uint8_t cls, uint8_t ver, uint32_t mask0)
{
	struct madcmd_mad_reg m;
	union {
		struct madcmd_mad_reg_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;

	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, MADCMD_MAD_REG, sizeof(m), ++seq);
	m.mgmt_class = cls;
	m.class_version = ver;
	m.method_mask[0] = mask0;
	send_msg(fd, &m, sizeof(m));
	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_MAD_REG_REP);
	return in.r.rc;
}

static void client_mad_send(int fd, int agent, const uint8_t *mad)
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

static void client_mad_recv(int fd, int agent, uint8_t *mad)
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

static int mad_client(const char *ca, int *agent)
{
	int fd = client();

	assert_int_equal(hello(fd, MADCMD_SESSION_MAD, ca, 0, NULL), 0);
	*agent = mad_reg(fd, MAD_CLASS_SUBN_ADM, MAD_CLASS_VERSION_SA, 0);
	assert_true(*agent > 0);
	return fd;
}

static void test_mad_proxy(void **state)
{
	uint8_t mad[MAD_SIZE], rec[SA_PR_SIZE];
	struct sa_path q = {0}, got;
	const struct fake_mad *wire;
	int m1, m2, ag1, ag2;
	uint64_t tid;

	(void)state;
	env_up(0, 0);
	m1 = mad_client("fake0", &ag1);
	/* Requesters of the SA only. */
	assert_int_equal(mad_reg(m1, MAD_CLASS_CM, 2, 0), -EINVAL);
	assert_int_equal(mad_reg(m1, MAD_CLASS_SUBN_ADM, 2, 1u << MAD_METHOD_GET), -EINVAL);
	m2 = mad_client("fake0", &ag2);

	/* A PathRecord Get to fake1's GID, with the client's TID. */
	memcpy(q.dgid, E.fb.ca[1].port.gid, 16);
	memcpy(q.sgid, E.fb.ca[0].port.gid, 16);
	assert_int_equal(sa_path_encode(&q, rec), 0);
	tid = 0x1122334455667788ull;
	assert_int_equal(sa_mad_init(mad, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, tid,
				     SA_PR_COMP_DGID | SA_PR_COMP_SGID),
			 0);
	memcpy(mad + SA_DATA_OFFSET, rec, sizeof(rec));
	client_mad_send(m1, ag1, mad);
	client_mad_recv(m1, ag1, mad);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), tid);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_GET_RESP & 0x7f);
	sa_path_decode(mad + SA_DATA_OFFSET, &got);
	assert_int_equal(got.dlid, 6);
	expect_quiet(m2);
	/* On the wire it carried a daemon TID naming m1's session. */
	wire = &E.fb.ca[0].sent[E.fb.ca[0].nsent - 1];
	assert_int_equal(wire->mad[1], MAD_CLASS_SUBN_ADM);
	assert_int_not_equal(mad_get(wire->mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), tid);
	assert_int_equal(mad_get(wire->mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID) >> 32,
			 tid >> 32);

	/* Answered, its entry is free: the TID again is a new request. */
	assert_int_equal(tables().tids, 0);
	{
		uint64_t first = mad_get(wire->mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
		unsigned n0 = E.fb.ca[0].nsent;

		sa_mad_init(mad, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, tid,
			    SA_PR_COMP_DGID | SA_PR_COMP_SGID);
		memcpy(mad + SA_DATA_OFFSET, rec, sizeof(rec));
		/* Sent twice before its answer (a retry): one daemon TID, a new one. */
		client_mad_send(m1, ag1, mad);
		client_mad_send(m1, ag1, mad);
		client_mad_recv(m1, ag1, mad);
		assert_int_equal(E.fb.ca[0].nsent, n0 + 2);
		assert_int_equal(
		    mad_get(E.fb.ca[0].sent[n0].mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID),
		    mad_get(E.fb.ca[0].sent[n0 + 1].mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID));
		assert_int_not_equal(
		    mad_get(E.fb.ca[0].sent[n0].mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID),
		    first);
		/* The second answer finds its entry freed by the first: dropped. */
		expect_quiet(m1);
	}
	/* An answer nobody asked for is dropped. */
	{
		struct madcmd_counters c;
		uint64_t before;

		assert_int_equal(madcmd_counters_get(E.d, 0, &c), 0);
		before = c.mads_dropped;
		sa_mad_init(mad, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, 0x00500007ull, 0);
		mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
		for (int o = 0; o < FAKE_FABRIC_MAX_OPENS; o++)
			for (int ag = 0; ag < FAKE_FABRIC_MAX_AGENTS; ag++)
				if (E.fb.opens[o].used && E.fb.agents[ag].used &&
				    E.fb.agents[ag].open == o &&
				    E.fb.agents[ag].mgmt_class == MAD_CLASS_SUBN_ADM &&
				    E.fb.opens[o].ca == 0)
					inject_open(o, ag, mad, MAD_SIZE);
		pump();
		assert_int_equal(madcmd_counters_get(E.d, 0, &c), 0);
		assert_true(c.mads_dropped > before);
		expect_quiet(m1);
		expect_quiet(m2);
	}
	close(m1);
	close(m2);
	assert_int_equal(tables().tids, 0);
	env_down();
}

/*
 * A burst of queries (1,000 ids resolving their routes at once) is all in
 * flight at the daemon: every answer finds its session and its client
 * TID, none is dropped for want of a TID entry.
 */
static void test_mad_proxy_burst(void **state)
{
	enum { N = 1000 };
	uint8_t mad[MAD_SIZE], rec[SA_PR_SIZE];
	static bool seen[N];
	struct madcmd_counters c;
	struct sa_path q = {0};
	int m1, ag1;

	(void)state;
	env_up(0, 0);
	m1 = mad_client("fake0", &ag1);
	memcpy(q.dgid, E.fb.ca[1].port.gid, 16);
	memcpy(q.sgid, E.fb.ca[0].port.gid, 16);
	assert_int_equal(sa_path_encode(&q, rec), 0);
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < N; i++) {
		sa_mad_init(mad, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, 0x7700000000ull + i,
			    SA_PR_COMP_DGID | SA_PR_COMP_SGID);
		memcpy(mad + SA_DATA_OFFSET, rec, sizeof(rec));
		client_mad_send(m1, ag1, mad);
	}
	for (int i = 0; i < N; i++) {
		uint64_t tid;

		client_mad_recv(m1, ag1, mad);
		tid = mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
		assert_true(tid >= 0x7700000000ull && tid < 0x7700000000ull + N);
		assert_false(seen[tid - 0x7700000000ull]);
		seen[tid - 0x7700000000ull] = true;
	}
	assert_int_equal(madcmd_counters_get(E.d, 0, &c), 0);
	assert_int_equal(c.mads_dropped, 0);
	/* Each answer freed its entry. */
	assert_int_equal(tables().tids, 0);
	close(m1);
	assert_int_equal(tables().tids, 0);
	env_down();
}

/*
 * The TID map holds what is in flight, not what was ever sent: answered
 * TIDs give their entries back (taken again with a new generation, so a
 * late answer finds nothing), unanswered ones are given back after
 * MADCMD_TID_EXPIRE_NS, and with every entry in flight the oldest send
 * gives way.
 */
static void test_tid_map_in_flight(void **state)
{
	struct madcmd_tid_map m;
	struct madcmd_tid *e, *keep;
	uint64_t now = 1000000000ull;
	uint32_t dtid;

	(void)state;
	memset(&m, 0, sizeof(m));
	/* 10,000 requests one at a time: one chunk made. */
	for (unsigned i = 0; i < 10000; i++) {
		e = madcmd_tid_entry(&m, 3, 0x100000000ull + i, now);
		assert_non_null(e);
		assert_int_equal(e->dtid >> MADCMD_TID_SLOT_SHIFT, 3);
		assert_ptr_equal(madcmd_tid_find_daemon(&m, e->dtid), e);
		dtid = e->dtid;
		madcmd_tid_release(&m, e);
		assert_null(madcmd_tid_find_daemon(&m, dtid)); /* a late answer */
	}
	assert_int_equal(m.made, MADCMD_TID_CHUNK);
	assert_int_equal(m.used, 0);
	/* A retry keeps its entry and daemon TID. */
	e = madcmd_tid_entry(&m, 3, 42, now);
	assert_ptr_equal(madcmd_tid_entry(&m, 3, 42, now + 1), e);
	assert_ptr_equal(madcmd_tid_find_client(&m, 42), e);
	/* Unanswered: given back once expired, as later requests come. */
	keep = e;
	dtid = keep->dtid;
	now += MADCMD_TID_EXPIRE_NS + 2;
	for (unsigned i = 0; i < MADCMD_TID_CHUNK; i++)
		madcmd_tid_release(&m, madcmd_tid_entry(&m, 3, 0x200000000ull + i, now));
	assert_null(madcmd_tid_find_daemon(&m, dtid));
	assert_null(madcmd_tid_find_client(&m, 42));
	assert_int_equal(m.used, 0);
	/* Every entry in flight: the next takes the oldest send's. */
	for (unsigned i = 0; i < MADCMD_TID_SLOTS; i++)
		assert_non_null(madcmd_tid_entry(&m, 3, 0x300000000ull + i, now + i));
	assert_int_equal(m.made, MADCMD_TID_SLOTS);
	assert_non_null(madcmd_tid_find_client(&m, 0x300000000ull));
	assert_non_null(madcmd_tid_entry(&m, 3, 0x400000000ull, now + MADCMD_TID_SLOTS));
	assert_null(madcmd_tid_find_client(&m, 0x300000000ull));
	assert_non_null(madcmd_tid_find_client(&m, 0x300000001ull));
	assert_int_equal(m.used, MADCMD_TID_SLOTS);
	madcmd_tid_map_clear(&m);
}

static void mc_msg(uint8_t *mad, uint8_t method, uint64_t tid, const uint8_t *mgid,
		   const uint8_t *port_gid, uint8_t js)
{
	struct sa_mcmember m = {0};

	memcpy(m.mgid, mgid, 16);
	memcpy(m.port_gid, port_gid, 16);
	m.join_state = js;
	m.qkey = 0x11;
	assert_int_equal(
	    sa_mad_init(mad, method, SA_ATTR_MC_MEMBER_RECORD, tid,
			SA_MCMR_COMP_MGID | SA_MCMR_COMP_PORT_GID | SA_MCMR_COMP_JOIN_STATE),
	    0);
	assert_int_equal(sa_mcmember_encode(&m, mad + SA_DATA_OFFSET), 0);
}

static void test_mcast_memberships(void **state)
{
	static const uint8_t mgid[16] = {0xff, 0x12, 0x40, 0x1b, [15] = 0x42};
	const uint8_t *pgid = E.fb.ca[0].port.gid;
	uint8_t mad[MAD_SIZE];
	int m1, m2, ag1, ag2;

	(void)state;
	env_up(0, 0);
	pgid = E.fb.ca[0].port.gid;
	m1 = mad_client("fake0", &ag1);
	m2 = mad_client("fake0", &ag2);
	/* Both programs join as full members. */
	mc_msg(mad, MAD_METHOD_SET, 0xa1, mgid, pgid, SA_JOIN_FULL_MEMBER);
	client_mad_send(m1, ag1, mad);
	client_mad_recv(m1, ag1, mad);
	mc_msg(mad, MAD_METHOD_SET, 0xb1, mgid, pgid, SA_JOIN_FULL_MEMBER);
	client_mad_send(m2, ag2, mad);
	client_mad_recv(m2, ag2, mad);
	assert_int_equal(E.mc_sets, 2);
	assert_int_equal(tables().memberships, 2);
	/* The first leaves: the SA must not hear it, the daemon answers. */
	mc_msg(mad, MAD_METHOD_DELETE, 0xa2, mgid, pgid, SA_JOIN_FULL_MEMBER);
	client_mad_send(m1, ag1, mad);
	client_mad_recv(m1, ag1, mad);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), 0xa2);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_STATUS), 0);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_GET_RESP & 0x7f);
	assert_int_equal(E.mc_deletes, 0);
	assert_int_equal(tables().memberships, 1);
	/* The first joins again, and its program exits: still held by m2. */
	mc_msg(mad, MAD_METHOD_SET, 0xa3, mgid, pgid, SA_JOIN_FULL_MEMBER);
	client_mad_send(m1, ag1, mad);
	client_mad_recv(m1, ag1, mad);
	close(m1);
	assert_int_equal(tables().memberships, 1);
	assert_int_equal(E.mc_deletes, 0);
	/* The last holder exits without leaving: the daemon leaves for it. */
	close(m2);
	assert_int_equal(tables().memberships, 0);
	assert_int_equal(E.mc_deletes, 1);
	assert_int_equal(E.mc_last_delete_js, SA_JOIN_FULL_MEMBER);
	assert_int_equal((uint32_t)E.mc_last_delete_tid >> 20, 0); /* the daemon's own TID */
	{
		struct madcmd_counters c;

		assert_int_equal(madcmd_counters_get(E.d, 0, &c), 0);
		assert_int_equal(c.leaves, 1);
		assert_int_equal(c.mads_local, 1);
	}
	env_down();
}

static void sr_msg(uint8_t *mad, uint8_t method, uint64_t tid, const uint8_t *gid)
{
	struct sa_service sv = {.id = 0x100000000000a001ull, .pkey = 0xffff, .lease = 0xffffffff};

	memcpy(sv.gid, gid, 16);
	snprintf(sv.name, sizeof(sv.name), "madcm:ip:198.18.0.1");
	assert_int_equal(sa_mad_init(mad, method, SA_ATTR_SERVICE_RECORD, tid,
				     SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_GID),
			 0);
	assert_int_equal(sa_service_encode(&sv, mad + SA_DATA_OFFSET), 0);
}

/*
 * Two programs serving one address register the same ServiceRecord: the
 * first one's Delete is answered by the daemon (the record stays for the
 * other), and when the last exits without deleting, the daemon deletes it.
 */
static void test_service_records(void **state)
{
	uint8_t mad[MAD_SIZE];
	int m1, m2, ag1, ag2;

	(void)state;
	env_up(0, 0);
	m1 = mad_client("fake0", &ag1);
	m2 = mad_client("fake0", &ag2);
	sr_msg(mad, MAD_METHOD_SET, 0xc1, E.fb.ca[0].port.gid);
	client_mad_send(m1, ag1, mad);
	client_mad_recv(m1, ag1, mad);
	sr_msg(mad, MAD_METHOD_SET, 0xd1, E.fb.ca[0].port.gid);
	client_mad_send(m2, ag2, mad);
	client_mad_recv(m2, ag2, mad);
	assert_int_equal(E.sr_sets, 2);
	assert_int_equal(tables().services, 2);
	sr_msg(mad, MAD_METHOD_DELETE, 0xc2, E.fb.ca[0].port.gid);
	client_mad_send(m1, ag1, mad);
	client_mad_recv(m1, ag1, mad);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), 0xc2);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_GET_RESP & 0x7f);
	assert_int_equal(E.sr_deletes, 0);
	assert_int_equal(tables().services, 1);
	close(m1);
	pump();
	assert_int_equal(E.sr_deletes, 0);
	close(m2);
	pump();
	assert_int_equal(tables().services, 0);
	assert_int_equal(E.sr_deletes, 1);
	assert_int_equal((uint32_t)E.sr_last_delete_tid >> 20, 0); /* the daemon's own TID */
	env_down();
}

/* ---- PATH_QUERY: the host's path cache ---- */

/* Let the fake SA answer the PathRecord Gets held so far. */
static void path_release(void)
{
	unsigned n = E.nheld;

	E.nheld = 0;
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(fake_fabric_ops.send(&E.fb, E.held[i].portid, E.held[i].agent,
						      E.held[i].mad, MAD_SIZE, &E.held[i].dst,
						      E.held[i].timeout_ms),
				 0);
}

/* A PATH_QUERY from fake1 for the path to CA `to`'s GID; pkey: P_Key in the mask too. */
static void path_ask(int fd, uint32_t sq, int to, bool pkey)
{
	struct madcmd_path_query m;
	struct sa_path r;

	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, MADCMD_PATH_QUERY, sizeof(m), sq);
	memset(&r, 0, sizeof(r));
	memcpy(r.sgid, E.fb.ca[1].port.gid, 16);
	memcpy(r.dgid, E.fb.ca[to].port.gid, 16);
	r.numb_path = 1;
	r.pkey = 0xffff;
	m.comp_mask = SA_PR_COMP_SGID | SA_PR_COMP_DGID | SA_PR_COMP_NUMB_PATH;
	if (pkey)
		m.comp_mask |= SA_PR_COMP_P_KEY;
	assert_int_equal(sa_path_encode(&r, m.rec), 0);
	send_msg(fd, &m, sizeof(m));
}

/* The PATH_REP of seq `sq`: one path, to CA `to`. */
static void path_rep(int fd, uint32_t sq, int to)
{
	union {
		struct madcmd_path_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	struct sa_path p;

	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_PATH_REP);
	assert_int_equal(in.r.h.seq, sq);
	assert_int_equal(in.r.rc, 0);
	assert_int_equal(in.r.n, 1);
	sa_path_decode(in.r.recs[0], &p);
	assert_int_equal(p.slid, 6);
	assert_int_equal(p.dlid, 5 + to);
	assert_memory_equal(p.dgid, E.fb.ca[to].port.gid, 16);
}

static uint64_t path_asks(void)
{
	struct madcmd_counters c;
	uint64_t n = 0;

	for (unsigned i = 0; i < madcmd_port_count(E.d); i++) {
		assert_int_equal(madcmd_counters_get(E.d, (int)i, &c), 0);
		n += c.path_asks;
	}
	return n;
}

/*
 * Sessions' PATH_QUERYs: answered with the path, one SA query per path
 * however many sessions ask (the second from the cache, or joining the
 * query in flight), and a session that goes before its answer leaves the
 * daemon well and the answer in the cache.
 */
static void test_path_query(void **state)
{
	struct madcmd_stat_end end;
	int a, b, c;

	(void)state;
	env_up(0, 0);
	a = cm_client("fake1");
	b = cm_client("fake1");

	path_ask(a, 1, 0, false);
	path_rep(a, 1, 0);
	assert_int_equal(E.fb.sa_path_queries, 1);
	path_ask(b, 2, 0, false); /* cached */
	path_rep(b, 2, 0);
	assert_int_equal(E.fb.sa_path_queries, 1);

	/* Two sessions ask for a path while its query is out: one query. */
	E.hold_paths = true;
	path_ask(a, 3, 1, false);
	path_ask(b, 4, 1, false);
	for (int i = 0; i < 100 && path_asks() < 4; i++)
		mad_loop_run_once(E.loop, 5);
	pump();
	assert_int_equal(path_asks(), 4);
	assert_int_equal(E.npath_tids, 1);
	expect_quiet(a);
	expect_quiet(b);
	path_release();
	path_rep(a, 3, 1);
	path_rep(b, 4, 1);

	/* A session closes before its answer: the answer still fills the cache. */
	c = cm_client("fake1");
	path_ask(c, 5, 0, true);
	for (int i = 0; i < 100 && E.npath_tids < 2; i++)
		mad_loop_run_once(E.loop, 5);
	assert_int_equal(E.npath_tids, 2);
	close(c);
	pending_drop(c);
	assert_int_equal(tables().sessions, 2);
	path_release();
	pump();
	path_ask(b, 6, 0, true); /* held if it were sent: the cache answers */
	path_rep(b, 6, 0);
	assert_int_equal(E.npath_tids, 2);
	assert_int_equal(E.nheld, 0);
	assert_int_equal(path_asks(), 6);

	/* STAT's last record carries the counters: 3 paths, one ask joined a query. */
	assert_int_equal(stat_ids_end(NULL, 0, &end), 0);
	assert_int_equal(end.ports, 2);
	assert_int_equal(end.path_asks, 6);
	assert_int_equal(end.path_queries, 3);
	assert_int_equal(end.path_coalesced + end.cache_hits_late, 1);
	assert_int_equal(end.cache_dropped, 0);
	assert_int_equal(end.paths_dropped, 0);
	assert_int_equal(end.ca[0], 0);
	close(a);
	close(b);
	env_down();
}

/* ---- SERVICE_QUERY: the host's ServiceRecord cache (address resolution) ---- */

static void service_ask(int fd, uint32_t sq, uint64_t id)
{
	struct madcmd_service_query m;
	struct sa_service q;

	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, MADCMD_SERVICE_QUERY, sizeof(m), sq);
	memset(&q, 0, sizeof(q));
	q.id = id;
	q.data8[15] = 9;
	m.comp_mask = SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_DATA8(15);
	assert_int_equal(sa_service_encode(&q, m.rec), 0);
	send_msg(fd, &m, sizeof(m));
}

/* The SERVICE_REP of seq `sq`: status rc, and with 0 the record of `id`. */
static void service_rep(int fd, uint32_t sq, int rc, uint64_t id)
{
	union {
		struct madcmd_service_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	struct sa_service v;

	assert_int_equal(recv_msg(fd, &in, sizeof(in)), MADCMD_SERVICE_REP);
	assert_int_equal(in.r.h.seq, sq);
	assert_int_equal(in.r.rc, rc);
	assert_int_equal(in.r.n, rc ? 0 : 1);
	if (rc)
		return;
	sa_service_decode(in.r.recs[0], &v);
	assert_true(v.id == id);
	assert_int_equal(v.gid[0], 0xab);
	assert_int_equal(v.data8[15], 9);
}

/*
 * Sessions' SERVICE_QUERYs: one SA GetTable per record however many
 * sessions ask, no record never cached, a GID out of service or a
 * program's Set through the proxy drops it; STAT's end counts them.
 */
static void test_service_query(void **state)
{
	struct madcmd_stat_end end;
	uint8_t gid[16];
	int a, b;

	(void)state;
	env_up(0, 0);
	a = cm_client("fake1");
	b = cm_client("fake1");
	service_ask(a, 1, 0x10006d04c6120001ull);
	service_rep(a, 1, 0, 0x10006d04c6120001ull);
	service_ask(b, 2, 0x10006d04c6120001ull); /* cached */
	service_rep(b, 2, 0, 0x10006d04c6120001ull);
	assert_int_equal(E.sr_tables, 1);

	/* No record: -ENOENT each time, asked of the SA each time. */
	E.sr_none = true;
	service_ask(a, 3, 0x10006d04c6120002ull);
	service_rep(a, 3, -ENOENT, 0);
	service_ask(b, 4, 0x10006d04c6120002ull);
	service_rep(b, 4, -ENOENT, 0);
	assert_int_equal(E.sr_tables, 3);
	E.sr_none = false;

	/* The SA says the record's GID left: asked again. */
	memset(gid, 0xab, 16);
	for (unsigned i = 0; i < E.d->nports; i++)
		madcmd_service_gid_gone(&E.d->ports[i], gid);
	service_ask(b, 5, 0x10006d04c6120001ull);
	service_rep(b, 5, 0, 0x10006d04c6120001ull);
	assert_int_equal(E.sr_tables, 4);

	/* A session that closes before its answer: orphaned, the answer still cached. */
	{
		int c2 = cm_client("fake1");

		E.sr_hold = true;
		service_ask(c2, 6, 0x10006d04c6120003ull);
		for (int i = 0; i < 100 && E.sr_tables < 5; i++)
			mad_loop_run_once(E.loop, 5);
		assert_int_equal(E.sr_tables, 5);
		close(c2);
		pending_drop(c2);
		pump();
		E.sr_hold = false;
		inject_open(E.sr_held_portid, E.sr_held_agent, E.sr_held, MAD_SIZE);
		pump();
	}
	service_ask(a, 7, 0x10006d04c6120003ull);
	service_rep(a, 7, 0, 0x10006d04c6120003ull);
	assert_int_equal(E.sr_tables, 5);

	assert_int_equal(stat_ids_end(NULL, 0, &end), 0);
	assert_int_equal(end.service_asks, 7);
	assert_int_equal(end.service_queries, 5);
	assert_true(end.service_dropped >= 1);
	close(a);
	close(b);
	env_down();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_check_accepts),     cmocka_unit_test(test_check_rejects),
	    cmocka_unit_test(test_hello_errors),      cmocka_unit_test(test_hello_port),
	    cmocka_unit_test(test_port_comes_up),     cmocka_unit_test(test_port_comes_back),
	    cmocka_unit_test(test_cm_ownership),      cmocka_unit_test(test_cm_close_rejects),
	    cmocka_unit_test(test_cm_limits),	      cmocka_unit_test(test_slow_client),
	    cmocka_unit_test(test_portspace),	      cmocka_unit_test(test_ps_rule),
	    cmocka_unit_test(test_portspace_netns),   cmocka_unit_test(test_mad_proxy),
	    cmocka_unit_test(test_mad_proxy_burst),   cmocka_unit_test(test_tid_map_in_flight),
	    cmocka_unit_test(test_mcast_memberships), cmocka_unit_test(test_service_records),
	    cmocka_unit_test(test_connect_as),	      cmocka_unit_test(test_path_query),
	    cmocka_unit_test(test_batch_codec),	      cmocka_unit_test(test_batched_replies),
	    cmocka_unit_test(test_ns_listen),	      cmocka_unit_test(test_service_query),
	};

	madcmd_log_setup(getenv("MADCMD_TEST_LOG") ? MADCMD_LOG_STDERR : MADCMD_LOG_NONE,
			 LOG_DEBUG);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
