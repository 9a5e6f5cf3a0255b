/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz madcmd's session input path: one daemon on a fake fabric of two
 * ports (tests/unit/fake_umad.c), and for each input one session over a
 * socketpair that gets the input's packets.  The first byte says which:
 *   bits 0-1: 0 no HELLO (the packets are the first messages), 1 HOST,
 *             2 CM, 3 MAD session (a valid HELLO first; MAD also
 *             registers an agent);
 *   bit 2:    raw packets, or framed ones: a valid header of the type the
 *             chunk's first byte names, the rest of the chunk as the body
 *             (zero-padded to the type's size; MAD_* lengths made
 *             consistent), so that commands, port requests and MAD sends
 *             get past madcmd_check and reach the daemon's handlers;
 *   bit 3:    HELLO names a CA (bit 4: which); bit 5: HELLO asks for the
 *             delayed MRA on delivery; bit 6: the privilege check's answer.
 * Then chunks: a length byte and that many bytes, up to 8.  After each
 * input the session is closed and the daemon must hold nothing of it.
 * The whole input is also read as a batch from a daemon (madcmd_batch_next,
 * the program's side), which must stay inside it.
 *
 * Repeatable: the comm IDs and TIDs come from a generator restarted for
 * each input (fuzz_random.h), and the fabric's record of sent MADs is
 * emptied.  The daemon itself lives across inputs (made once, as making
 * it costs more than an input): its counters (session and id numbers, the
 * CM engine's TID sequence), its clock (40 minutes on per input), the
 * sizes its tables grew to, and the answers the host's SA caches kept
 * (expired by the next input, a minute's lifetime against 40 minutes,
 * but dropped only when looked up).  None of it holds a closed session's
 * state (checked after each input), and what an input finds of it changes
 * its coverage only at the edges (a table's growth, a cache's expired
 * entry): cheaper to keep than a daemon made per input.
 * FUZZ_MADCMD_TRACE=1: a hash at exit of what the daemon sent to the
 * sessions and to the fabric, which two runs of one corpus must share
 * (tests/fuzz/madcmd_repeat.sh); =2: also, after each input, a hash of
 * the input and the trace's so far.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "madcmd/madcmd.h"
#include "rtproto/rt_proto.h"
#include "tests/fuzz/fuzz_random.h"
#include "tests/unit/fake_umad.h"

static struct fake_fabric fb;
static struct mad_loop *loop;
static struct madcmd *d;
static bool priv_answer;

static bool priv_cb(void *ctx, pid_t pid, uid_t uid)
{
	(void)ctx;
	(void)pid;
	(void)uid;
	return priv_answer;
}

/* Every session in one network namespace: the default stats
 * /proc/PID/ns/net per session, a syscall no input changes. */
static uint64_t netns_cb(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
	return 1;
}

/* FUZZ_MADCMD_TRACE: the trace hash, and how many inputs it covers. */
static bool tracing, trace_each;
static uint64_t input_hash; /* FUZZ_MADCMD_TRACE=2: which input it was */
static uint64_t trace = FUZZ_TRACE_INIT;
static unsigned long traced;

static void print_trace(void)
{
	printf("fuzz_madcmd: trace %016llx over %lu inputs\n", (unsigned long long)trace, traced);
}

/* What each CA sent during the input, into the trace; the record emptied. */
static void trace_sent(void)
{
	for (int i = 0; i < fb.ncas; i++) {
		struct fake_umad *f = &fb.ca[i];

		pthread_mutex_lock(&fb.lock);
		for (unsigned k = 0; tracing && k < f->nsent; k++)
			trace = fuzz_trace_add(trace, f->sent[k].mad, f->sent[k].len);
		f->nsent = 0;
		pthread_mutex_unlock(&fb.lock);
	}
}

/* FUZZ_MADCMD_STATS=1: the daemon's counters at exit (how deep inputs got). */
static void print_stats(void)
{
	madcmd_log_setup(MADCMD_LOG_STDERR, LOG_DEBUG);
	madcmd_log_counters(d);
}

/*
 * The daemon's clock: still during an input, then ten minutes on, so that
 * what an input started (an SA query the fake fabric never answers, a
 * TimeWait) ends within it.  libFuzzer scans the heap for leaks after an
 * input that leaves more allocated than it found, and such inputs made
 * half of the target's time; the fuzzing is also repeatable this way.
 */
static uint64_t clock_ns = 1000000000ull;
static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return clock_ns;
}

static void setup(void)
{
	struct madcmd_params p = {0};

	madcmd_log_setup(MADCMD_LOG_NONE, LOG_DEBUG);
	if (getenv("FUZZ_MADCMD_STATS"))
		atexit(print_stats);
	tracing = getenv("FUZZ_MADCMD_TRACE");
	trace_each = tracing && !strcmp(getenv("FUZZ_MADCMD_TRACE"), "2");
	if (tracing)
		atexit(print_trace);
	/* An input queues a few MADs at a time; 4,096-MAD queues were six
	 * 2.3 MB blocks that every leak check of libFuzzer scanned. */
	fake_max_mads = 64;
	fake_fabric_init(&fb, 2);
	if (mad_loop_create(&loop, fake_now, NULL))
		abort();
	p.loop = loop;
	p.ops = &fake_fabric_ops;
	p.ops_ctx = &fb;
	p.max_ids = 16;
	p.max_events = 64;
	/* One session at a time: the daemon walks every slot when it reaps
	 * a closed session (and the check after each input), and 1,024 of
	 * them were a third of an input's time. */
	p.max_sessions = 4;
	p.may_bind_privileged = priv_cb;
	p.netns_of = netns_cb;
	if (madcmd_open(&d, &p) || madcmd_port_count(d) != 2)
		abort();
}

/* A bool byte of a raw struct, kept 0 or 1 (the checks refuse others). */
static void buf_bool(uint8_t *b)
{
	*b &= 1;
}

static void pump(void)
{
	for (int i = 0; i < 4; i++)
		mad_loop_run_once(loop, 0);
}

/* Ids the daemon gave this session, so that commands can name real ones. */
static uint32_t known[4];
static unsigned nknown;

static void remember(uint32_t id)
{
	known[nknown++ % 4] = id;
}

/* Read what the daemon sent (noting ids); false once it closed. */
static bool drain(int fd)
{
	static _Alignas(16) uint8_t b[MADCMD_BATCH_MAX];
	_Alignas(16) uint8_t m[MADCMD_MSG_MAX];
	ssize_t n;

	while ((n = recv(fd, b, sizeof(b), MSG_DONTWAIT)) > 0) {
		size_t off = 0, len;
		const void *msg;
		int t;

		/* A batch of one or more messages (rt_proto.h), each well formed. */
		while ((t = madcmd_batch_next(b, (size_t)n, &off, &msg, &len)) > 0) {
			memcpy(m, msg, len);
			if (t == MADCMD_REPLY) {
				const struct cm_rt_cmd *c = &((const struct madcmd_cmd *)m)->cmd;

				if (c->op == CM_RT_LISTEN && c->result >= 0)
					remember((uint32_t)c->result);
				else if ((c->op == CM_RT_CONNECT || c->op == CM_RT_SIDR_REQ) &&
					 !c->result)
					remember(c->id);
			} else if (t == MADCMD_EVENT) {
				remember(((const struct madcmd_event *)m)->ev.id);
			}
		}
		if (t < 0 || off != (size_t)n)
			abort(); /* the daemon must only send well-formed messages */
		if (tracing)
			trace = fuzz_trace_add(trace, b, (size_t)n);
	}
	return n != 0;
}

/* Keep a fuzzed command's op and lengths in range, so it is run. */
static void tame_cmd(struct cm_rt_cmd *c, uint8_t sel)
{
	c->op = (enum cm_rt_op)((unsigned)c->op % CM_RT__COUNT);
	c->private_data_len %= CM_PRIVATE_MAX + 1;
	c->connect.private_data_len %= sizeof(c->connect.private_data) + 1;
	buf_bool((uint8_t *)c + offsetof(struct cm_rt_cmd, connect.has_alternate));
	buf_bool((uint8_t *)c + offsetof(struct cm_rt_cmd, sidr_req.to.grh_present));
	switch (c->op) {
	case CM_RT_ACCEPT:
		c->accept.private_data_len %= sizeof(c->accept.private_data) + 1;
		break;
	case CM_RT_REJECT:
		c->reject.private_data_len %= sizeof(c->reject.private_data) + 1;
		c->reject.ari_len %= sizeof(c->reject.ari) + 1;
		break;
	case CM_RT_SIDR_REQ:
		c->sidr_req.private_data_len %= sizeof(c->sidr_req.private_data) + 1;
		break;
	case CM_RT_SIDR_REP:
		c->sidr_rep.private_data_len %= sizeof(c->sidr_rep.private_data) + 1;
		c->sidr_rep.info_len %= sizeof(c->sidr_rep.info) + 1;
		break;
	default:
		break;
	}
	if ((sel & 0x80) && nknown)
		c->id = known[(sel >> 5) % (nknown < 4 ? nknown : 4)];
}

static void put(int fd, const void *m, size_t len)
{
	for (int tries = 0; tries < 64; tries++) {
		if (send(fd, m, len, MSG_DONTWAIT) == (ssize_t)len)
			return;
		if (errno != EAGAIN)
			return;
		pump();
		drain(fd);
	}
}

/* A packet of `type` as long as the type says (the header alone for none). */
static size_t type_size(int type)
{
	size_t n = madcmd_msg_size(type);

	return n ? n : sizeof(struct madcmd_hdr);
}

static void hello(int fd, uint32_t kind, uint8_t which)
{
	struct madcmd_hello h;

	memset(&h, 0, sizeof(h));
	madcmd_hdr_init(&h.h, MADCMD_HELLO, sizeof(h), 0);
	h.kind = kind;
	h.layout = madcmd_layout();
	if (which & 8)
		snprintf(h.ca, sizeof(h.ca), "fake%d", (which >> 4) & 1);
	if (which & 0x20) /* the daemon arms the delayed MRA of REQ/REP events */
		h.mra_on_delivery = 0x80 | 24;
	put(fd, &h, sizeof(h));
	if (kind == MADCMD_SESSION_MAD) {
		struct madcmd_mad_reg r;

		memset(&r, 0, sizeof(r));
		madcmd_hdr_init(&r.h, MADCMD_MAD_REG, sizeof(r), 1);
		r.mgmt_class = 0x03;
		r.class_version = 2;
		put(fd, &r, sizeof(r));
	}
}

static void framed(int fd, const uint8_t *chunk, size_t n)
{
	static _Alignas(16) uint8_t buf[MADCMD_MSG_MAX];
	int type = n ? 1 + chunk[0] % (MADCMD__TYPES - 1) : MADCMD_CMD;
	size_t size = type_size(type), len = size;
	const uint8_t *body = n ? chunk + 1 : chunk;
	size_t blen = n ? n - 1 : 0;

	memset(buf, 0, sizeof(buf));
	if (type == MADCMD_MAD_SEND) {
		struct madcmd_mad *m = (struct madcmd_mad *)buf;
		size_t head = offsetof(struct madcmd_mad, len) - sizeof(struct madcmd_hdr);
		size_t take = blen < head ? blen : head;

		memcpy(buf + sizeof(struct madcmd_hdr), body, take);
		m->agent = 1; /* the one registered after HELLO */
		buf_bool((uint8_t *)m + offsetof(struct madcmd_mad, addr.grh_present));
		m->len = (uint32_t)(blen - take < 24 ? 256 : blen - take);
		memcpy(m->mad, body + take, blen - take);
		m->mad[1] = 0x03; /* an SA MAD gets past the class check */
		len = size + m->len;
	} else {
		size_t take = blen < size - sizeof(struct madcmd_hdr)
				  ? blen
				  : size - sizeof(struct madcmd_hdr);

		memcpy(buf + sizeof(struct madcmd_hdr), body, take);
		if (type == MADCMD_CMD) /* an empty chunk has no selector byte */
			tame_cmd(&((struct madcmd_cmd *)buf)->cmd, n ? chunk[0] : 0);
	}
	madcmd_hdr_init((struct madcmd_hdr *)buf, type, len, 1);
	put(fd, buf, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t kinds[] = {0, MADCMD_SESSION_HOST, MADCMD_SESSION_CM,
					 MADCMD_SESSION_MAD};
	struct madcmd_tables t;
	int sv[2];
	uint8_t mode;

	if (!d)
		setup();
	if (size < 1)
		return 0;
	/* The program's side of a batch: the input as one packet from a daemon. */
	{
		size_t off = 0, len;
		const void *msg;

		while (madcmd_batch_next(data, size, &off, &msg, &len) > 0)
			if (len > size || (const uint8_t *)msg + len > data + size)
				abort();
	}
	fuzz_random_restart();
	if (trace_each)
		input_hash = fuzz_trace_add(FUZZ_TRACE_INIT, data, size);
	mode = data[0];
	nknown = 0;
	data++;
	size--;
	priv_answer = mode & 0x40;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		abort();
	if (madcmd_session_add(d, sv[1]) <= 0)
		abort();
	if (kinds[mode & 3])
		hello(sv[0], kinds[mode & 3], mode);
	for (int i = 0; i < 8 && size; i++) {
		size_t n = data[0];

		data++;
		size--;
		if (n > size)
			n = size;
		if (mode & 4)
			framed(sv[0], data, n);
		else
			put(sv[0], data, n);
		data += n;
		size -= n;
		pump();
		if (!drain(sv[0]))
			break;
	}
	close(sv[0]);
	pump();
	/* Ten minutes a step, a step for the first try and each of the SA
	 * client's 3 retries (cm/runtime.c): an SA query the fake fabric
	 * never answers then ends within its input, and what it holds is
	 * freed (else libFuzzer, seeing more mallocs than frees, rescans
	 * the whole heap for leaks after the input). */
	for (int i = 0; i < 4; i++) {
		clock_ns += 600ull * 1000000000ull;
		mad_loop_run_once(loop, 0); /* the timers only: the session is gone */
	}
	trace_sent();
	if (trace_each)
		printf("fuzz_madcmd: input %lu %016llx trace %016llx\n", traced,
		       (unsigned long long)input_hash, (unsigned long long)trace);
	traced++;
	madcmd_tables_get(d, &t);
	if (t.sessions || t.ids || t.bindings || t.memberships || t.tids || t.queued) {
		fprintf(stderr, "fuzz_madcmd: the closed session left state behind\n");
		abort();
	}
	return 0;
}
