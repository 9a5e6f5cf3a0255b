/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * A madcmd that stops answering (SIGSTOP, a livelock): the program's waits
 * for it are bounded by MADCM_DAEMON_TIMEOUT_MS.  A fake daemon on a
 * private socket answers HELLO, then either never answers again, answers
 * slowly while it keeps talking, or answers PINGs (the keepalive) and
 * commands at once.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "cm/runtime.h"
#include "mad/loop.h"
#include "rtproto/rt_client.h"
#include "sa/client.h"

enum mode {
	SILENT, /* HELLO answered, nothing after */
	SLOW,	/* a command's REPLY after events, each a gap apart */
	PONG,	/* PING answered with PONG, a command with its REPLY, at once */
};

static struct fake {
	char dir[64], path[108];
	int lfd;
	enum mode mode;
	unsigned gap_ms, gaps;
	pthread_t thr;
	bool eof;	/* a session reached its end: the program shut it down */
	unsigned pings; /* PINGs received (atomic: the test reads them) */
	unsigned pongs; /* PONGs sent, after the send */
} fk;

static void send_pkt(int fd, const void *m, size_t len)
{
	assert_int_equal(send(fd, m, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* One session: HELLO, then as fk.mode says until the program ends it. */
static void serve(int fd)
{
	union {
		struct madcmd_hdr h;
		struct madcmd_hello hello;
		struct madcmd_cmd c;
		uint8_t b[MADCMD_BATCH_MAX];
	} in;
	ssize_t n;

	while ((n = recv(fd, &in, sizeof(in), 0)) > 0) {
		if (in.h.type == MADCMD_HELLO) {
			struct madcmd_hello_rep r;

			memset(&r, 0, sizeof(r));
			madcmd_hdr_init(&r.h, MADCMD_HELLO_REP, sizeof(r), in.h.seq);
			r.layout = madcmd_layout();
			send_pkt(fd, &r, sizeof(r));
		} else if (in.h.type == MADCMD_PING) {
			struct madcmd_hdr h;

			__atomic_add_fetch(&fk.pings, 1, __ATOMIC_SEQ_CST);
			if (fk.mode != PONG)
				continue; /* stopped: no answer */
			madcmd_hdr_init(&h, MADCMD_PONG, sizeof(h), in.h.seq);
			send_pkt(fd, &h, sizeof(h));
			__atomic_add_fetch(&fk.pongs, 1, __ATOMIC_SEQ_CST);
		} else if (in.h.type == MADCMD_CMD && fk.mode == PONG) {
			struct madcmd_cmd rep;

			if (in.h.flags)
				continue; /* posted: no REPLY */
			memset(&rep, 0, sizeof(rep));
			madcmd_hdr_init(&rep.h, MADCMD_REPLY, sizeof(rep), in.h.seq);
			rep.cmd = in.c.cmd;
			rep.cmd.result = 0;
			rep.cmd.id = 9;
			send_pkt(fd, &rep, sizeof(rep));
		} else if (in.h.type == MADCMD_CMD && fk.mode == SLOW) {
			struct madcmd_event e;
			struct madcmd_cmd rep;

			/* Talking all along, the whole answer slower than the bound. */
			for (unsigned i = 0; i < fk.gaps; i++) {
				usleep(fk.gap_ms * 1000u);
				memset(&e, 0, sizeof(e));
				madcmd_hdr_init(&e.h, MADCMD_EVENT, sizeof(e), 0);
				e.ev.type = CM_EV_TIMEWAIT_EXIT;
				e.ev.id = 100 + i;
				e.ev.listen_id = -1;
				send_pkt(fd, &e, sizeof(e));
			}
			usleep(fk.gap_ms * 1000u);
			memset(&rep, 0, sizeof(rep));
			madcmd_hdr_init(&rep.h, MADCMD_REPLY, sizeof(rep), in.h.seq);
			rep.cmd = in.c.cmd;
			rep.cmd.result = 0;
			rep.cmd.id = 7;
			send_pkt(fd, &rep, sizeof(rep));
		}
		/* SILENT: read and never answer. */
	}
	if (n == 0)
		fk.eof = true;
	close(fd);
}

static void *daemon_main(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(fk.lfd, NULL, NULL);

		if (fd < 0)
			return NULL; /* the test shut the listener down */
		serve(fd);	     /* one session at a time is all these tests need */
	}
}

static void fake_up(enum mode mode, const char *timeout_ms)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};

	memset(&fk, 0, sizeof(fk));
	fk.mode = mode;
	strcpy(fk.dir, "/tmp/rt_stall.XXXXXX");
	assert_non_null(mkdtemp(fk.dir));
	snprintf(fk.path, sizeof(fk.path), "%s/madcmd.sock", fk.dir);
	strcpy(sun.sun_path, fk.path);
	fk.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(fk.lfd >= 0);
	assert_int_equal(bind(fk.lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fk.lfd, 4), 0);
	assert_int_equal(setenv(MADCMD_TIMEOUT_ENV, timeout_ms, 1), 0);
	assert_int_equal(pthread_create(&fk.thr, NULL, daemon_main, NULL), 0);
}

static void fake_down(void)
{
	shutdown(fk.lfd, SHUT_RDWR);
	pthread_join(fk.thr, NULL);
	close(fk.lfd);
	unlink(fk.path);
	rmdir(fk.dir);
	unsetenv(MADCMD_TIMEOUT_ENV);
}

static void listen_cmd(struct cm_rt_cmd *c)
{
	memset(c, 0, sizeof(*c));
	c->op = CM_RT_LISTEN;
	c->listen.service_id = 0x1234;
	c->listen.mask = ~0ull;
}

/* A command the daemon never answers fails -ETIMEDOUT and the session is lost. */
static void test_call_stalls(void **state)
{
	struct rt_remote r;
	struct cm_rt_cmd c;
	struct cm_event ev;

	(void)state;
	fake_up(SILENT, "300");
	assert_int_equal(rt_remote_open(&r, fk.path, "", 1, 0, NULL), 0);
	listen_cmd(&c);
	assert_int_equal(rt_remote_call(&r, &c), -ETIMEDOUT);
	assert_true(rt_remote_pop(&r, &ev));
	assert_int_equal(ev.type, CM_EV_RUNTIME_LOST);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_false(rt_remote_pop(&r, &ev));
	/* Later commands fail as on a daemon that went away. */
	listen_cmd(&c);
	assert_int_equal(rt_remote_call(&r, &c), -ENOTCONN);
	assert_int_equal(rt_remote_post(&r, &c), -ENOTCONN);
	rt_remote_close(&r);
	fake_down();
	assert_true(fk.eof); /* the daemon, awake, sees the session end */
}

/* A daemon slower than the bound in all, but talking within it, keeps working. */
static void test_slow_daemon_works(void **state)
{
	struct rt_remote r;
	struct cm_rt_cmd c;
	struct cm_event ev;
	unsigned events = 0;

	(void)state;
	fake_up(SLOW, "1500");
	fk.gap_ms = 500;
	fk.gaps = 4; /* the REPLY comes 2.5 s after the command */
	assert_int_equal(rt_remote_open(&r, fk.path, "", 1, 0, NULL), 0);
	listen_cmd(&c);
	assert_int_equal(rt_remote_call(&r, &c), 0);
	assert_int_equal(c.id, 7);
	while (rt_remote_pop(&r, &ev)) {
		assert_int_equal(ev.type, CM_EV_TIMEWAIT_EXIT);
		events++;
	}
	assert_int_equal(events, 4);
	assert_false(r.lost);
	rt_remote_close(&r);
	fake_down();
}

static void path_cb(void *arg, int status, const struct sa_path *paths, unsigned n)
{
	int *out = arg;

	(void)paths;
	(void)n;
	__atomic_store_n(out, status, __ATOMIC_SEQ_CST);
}

/*
 * Queries wait on the loop: a SERVICE_QUERY (address resolution) and a
 * PATH_QUERY (route resolution) the daemon never answers end -ETIMEDOUT,
 * and the runtime reports itself lost.
 */
static void test_queries_stall(void **state)
{
	struct cm_runtime_params p = {0};
	struct cm_runtime *rt;
	struct sa_service s, *recs = NULL;
	struct sa_path_query q;
	struct cm_event ev;
	unsigned n = 0;
	int path_rc = 1;

	(void)state;
	fake_up(SILENT, "300");
	p.daemon = fk.path;
	p.ca = "";
	p.port = 1;
	assert_int_equal(cm_runtime_open(&rt, &p), 0);
	/* The PATH_QUERY first: its answer comes on the loop, not in a wait. */
	memset(&q, 0, sizeof(q));
	q.rec.numb_path = 1;
	q.comp_mask = SA_PR_COMP_NUMB_PATH;
	assert_int_equal(cm_runtime_path_query_async(rt, &q, path_cb, &path_rc), 0);
	memset(&s, 0, sizeof(s));
	s.id = 0x1234;
	assert_int_equal(cm_runtime_service_query(rt, &s, SA_SR_COMP_SERVICE_ID, &recs, &n),
			 -ETIMEDOUT);
	assert_null(recs);
	assert_int_equal(n, 0);
	assert_int_equal(__atomic_load_n(&path_rc, __ATOMIC_SEQ_CST), -ETIMEDOUT);
	assert_int_equal(cm_runtime_wait_event(rt, &ev, 10000), 0);
	assert_int_equal(ev.type, CM_EV_RUNTIME_LOST);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_int_equal(cm_runtime_listen(rt, 0x99, ~0ull, 0), -ENOTCONN);
	cm_runtime_close(rt);
	fake_down();
	assert_true(fk.eof);
}

/* The loop's clock, which the tests move: the keepalive runs on it. */
static uint64_t clk_ns;

static uint64_t test_now(void *ctx)
{
	(void)ctx;
	return clk_ns;
}

static struct cm_runtime *open_on_test_clock(struct mad_loop **loop)
{
	struct cm_runtime_params p = {0};
	struct cm_runtime *rt;

	clk_ns = 1000000000ull;
	assert_int_equal(mad_loop_create(loop, test_now, NULL), 0);
	p.loop = *loop;
	p.daemon = fk.path;
	p.ca = "";
	p.port = 1;
	assert_int_equal(cm_runtime_open(&rt, &p), 0);
	return rt;
}

/* Wait (a generous bound) until the fake daemon's counter reaches n. */
static void wait_count(unsigned *counter, unsigned n)
{
	for (int i = 0; i < 10000 && __atomic_load_n(counter, __ATOMIC_SEQ_CST) < n; i++)
		usleep(1000);
	assert_true(__atomic_load_n(counter, __ATOMIC_SEQ_CST) >= n);
}

/*
 * An idle session (a listener waiting for hours) with a daemon that
 * answers: the keepalive PINGs it whenever it was quiet for half the
 * bound, its PONGs keep the session, past many bounds.
 */
static void test_idle_kept_alive(void **state)
{
	const uint64_t half = 500000000ull; /* of the 1 s bound */
	struct mad_loop *loop;
	struct cm_runtime *rt;
	struct cm_event ev;

	(void)state;
	fake_up(PONG, "1000");
	rt = open_on_test_clock(&loop);
	assert_int_equal(cm_runtime_listen(rt, 0x1234, ~0ull, 0), 0);
	for (unsigned i = 1; i <= 10; i++) { /* 5 bounds */
		clk_ns += half;
		mad_loop_run_once(loop, 0); /* the timer: a PING */
		wait_count(&fk.pongs, i);
		/* The PONG is in the socket: the loop reads it (heard again). */
		for (int k = 0; k < 100 && mad_loop_run_once(loop, 100) == 0; k++)
			;
		assert_int_equal(cm_runtime_get_event(rt, &ev), -EAGAIN);
	}
	assert_int_equal(__atomic_load_n(&fk.pings, __ATOMIC_SEQ_CST), 10);
	/* Still served. */
	assert_int_equal(cm_runtime_listen(rt, 0x5678, ~0ull, 0), 0);
	assert_int_equal(cm_runtime_get_event(rt, &ev), -EAGAIN);
	cm_runtime_close(rt);
	mad_loop_destroy(loop);
	fake_down();
}

/*
 * A daemon that stops after a posted command (a DISCONNECT, whose end the
 * program waits for as an event): the keepalive's PING is not answered,
 * and the runtime reports itself lost with -ETIMEDOUT at the bound.
 */
static void test_posted_then_stopped(void **state)
{
	const uint64_t half = 500000000ull;
	struct mad_loop *loop;
	struct cm_runtime *rt;
	struct cm_event ev;

	(void)state;
	fake_up(SILENT, "1000");
	rt = open_on_test_clock(&loop);
	assert_int_equal(cm_runtime_disconnect(rt, 7), 0); /* posted, no REPLY waited for */
	clk_ns += half;
	mad_loop_run_once(loop, 0);
	wait_count(&fk.pings, 1);
	assert_int_equal(cm_runtime_get_event(rt, &ev), -EAGAIN);
	clk_ns += half / 2;
	mad_loop_run_once(loop, 0);
	/* One PING out at a time, and not lost before the bound. */
	assert_int_equal(cm_runtime_get_event(rt, &ev), -EAGAIN);
	clk_ns += half / 2;
	mad_loop_run_once(loop, 0);
	assert_int_equal(cm_runtime_get_event(rt, &ev), 0);
	assert_int_equal(ev.type, CM_EV_RUNTIME_LOST);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_int_equal(__atomic_load_n(&fk.pings, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(cm_runtime_listen(rt, 0x99, ~0ull, 0), -ENOTCONN);
	cm_runtime_close(rt);
	mad_loop_destroy(loop);
	fake_down();
	assert_true(fk.eof); /* the daemon, awake, sees the session end */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_call_stalls),		cmocka_unit_test(test_slow_daemon_works),
	    cmocka_unit_test(test_queries_stall),	cmocka_unit_test(test_idle_kept_alive),
	    cmocka_unit_test(test_posted_then_stopped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
