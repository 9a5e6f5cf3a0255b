/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The rsocket calls' errors without a fabric (lib/ on fake verbs and fake
 * umad ports): bad descriptors, calls in the wrong state, bad options,
 * option round trips, rfcntl, and rpoll/rselect on plain fds mixed with an
 * idle rsocket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cmocka.h>

#include <rdma/rsocket.h>

#include "tests/unit/fake_verbs.h"

#define assert_errno(call, e)                                                                      \
	do {                                                                                       \
		errno = 0;                                                                         \
		assert_int_equal((long)(call), -1);                                                \
		assert_int_equal(errno, (e));                                                      \
	} while (0)

static void test_bad_fd(void **state)
{
	char b[4];
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	int v = 1, fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	/* A plain fd is no rsocket, nor is a negative one. */
	for (int k = 0; k < 2; k++) {
		int fd = k ? fds[0] : -1;

		assert_errno(rbind(fd, (struct sockaddr *)&sin, sizeof(sin)), EBADF);
		assert_errno(rlisten(fd, 1), EBADF);
		assert_errno(raccept(fd, NULL, NULL), EBADF);
		assert_errno(rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)), EBADF);
		assert_errno(rsend(fd, b, 1, 0), EBADF);
		assert_errno(rrecv(fd, b, 1, 0), EBADF);
		assert_errno(rshutdown(fd, SHUT_RDWR), EBADF);
		assert_errno(rgetsockname(fd, (struct sockaddr *)&sin, &len), EBADF);
		assert_errno(rgetpeername(fd, (struct sockaddr *)&sin, &len), EBADF);
		assert_errno(rsetsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)), EBADF);
		assert_errno(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len), EBADF);
		assert_errno(rfcntl(fd, F_GETFL), EBADF);
		assert_errno(rclose(fd), EBADF);
	}
	close(fds[0]);
	close(fds[1]);
}

static void test_socket_args(void **state)
{
	(void)state;
	assert_errno(rsocket(AF_UNIX, SOCK_STREAM, 0), EAFNOSUPPORT);
	assert_errno(rsocket(AF_INET, SOCK_RAW, 0), ENOTSUP);
	assert_errno(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), ENOTSUP);
}

static void test_wrong_state(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	char b[4];
	int s;

	(void)state;
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	/* Not connected: no data, no peer. */
	assert_errno(rsend(s, b, 1, 0), ENOTCONN);
	assert_errno(rrecv(s, b, 1, 0), ENOTCONN);
	assert_errno(rgetpeername(s, (struct sockaddr *)&sin, &len), ENOTCONN);
	assert_errno(rshutdown(s, SHUT_RDWR), ENOTCONN);
	assert_errno(rshutdown(s, 42), EINVAL);
	/* raccept only on a listener. */
	assert_errno(raccept(s, NULL, NULL), EINVAL);
	assert_errno(rbind(s, NULL, 0), EINVAL);
	assert_errno(rconnect(s, NULL, 0), EINVAL);
	/* An unbound socket's name is its family's wildcard. */
	len = sizeof(sin);
	assert_int_equal(rgetsockname(s, (struct sockaddr *)&sin, &len), 0);
	assert_int_equal(sin.sin_family, AF_INET);
	assert_int_equal(sin.sin_port, 0);
	assert_int_equal(rclose(s), 0);
	/* Closed: the descriptor is gone. */
	assert_errno(rfcntl(s, F_GETFL), EBADF);
}

static void test_listen_state(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(7999)};
	int s, v = 1;

	(void)state;
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	assert_int_equal(rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)), 0);
	assert_int_equal(rbind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_errno(rbind(s, (struct sockaddr *)&sin, sizeof(sin)), EINVAL);
	assert_int_equal(rlisten(s, 4), 0);
	assert_int_equal(rlisten(s, 4), 0); /* again: no-op */
	assert_errno(rconnect(s, (struct sockaddr *)&sin, sizeof(sin)), EINVAL);
	/* Non-blocking accept with nothing pending. */
	assert_int_equal(rfcntl(s, F_SETFL, O_NONBLOCK), 0);
	assert_errno(raccept(s, NULL, NULL), EAGAIN);
	assert_int_equal(rclose(s), 0);
}

/* A thread blocked in raccept on the listener rclose closes. */
static int accept_fd, accept_ret, accept_errno;
static _Atomic pid_t accept_tid;

static void *blocked_accept(void *arg)
{
	(void)arg;
	accept_tid = (pid_t)syscall(SYS_gettid);
	accept_ret = raccept(accept_fd, NULL, NULL);
	accept_errno = errno;
	return NULL;
}

static char thread_state(pid_t tid)
{
	char path[64], line[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * rclose beside a blocked raccept: the raccept fails with EBADF, as on a
 * closed fd, and nothing uses the freed socket (ASan in scripts/dev.sh).
 */
static void test_close_while_blocked(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(7998)};
	struct timespec ms = {0, 1000000}, end;
	pthread_t t;
	int asleep = 0;

	(void)state;
	accept_fd = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(accept_fd >= 0);
	assert_int_equal(rbind(accept_fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(rlisten(accept_fd, 4), 0);
	accept_tid = 0;
	assert_int_equal(pthread_create(&t, NULL, blocked_accept, NULL), 0);
	/* Asleep several times in a row: in poll(2), without the lock. */
	for (int i = 0; i < 30000 && asleep < 20; i++) {
		asleep = accept_tid && thread_state(accept_tid) == 'S' ? asleep + 1 : 0;
		nanosleep(&ms, NULL);
	}
	assert_int_equal(asleep, 20);
	assert_int_equal(rclose(accept_fd), 0);
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 30;
	assert_int_equal(pthread_timedjoin_np(t, NULL, &end), 0);
	assert_int_equal(accept_ret, -1);
	assert_int_equal(accept_errno, EBADF);
}

static void test_options(void **state)
{
	int s, v;
	socklen_t len;

	(void)state;
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	v = 1 << 19;
	assert_int_equal(rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)), 0);
	len = sizeof(v);
	assert_int_equal(rgetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len), 0);
	assert_int_equal(v, 1 << 20); /* twice the value, as Linux */
	v = 1;
	assert_int_equal(rsetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), 0);
	v = 0;
	len = sizeof(v);
	assert_int_equal(rgetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
	assert_int_equal(v, 1);
	v = 100;
	assert_int_equal(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), 0);
	len = sizeof(v);
	assert_int_equal(rgetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, &len), 0);
	assert_int_equal(v, 100);
	v = 1000; /* rounded to what the 8-bit wire field can carry */
	assert_int_equal(rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)), 0);
	len = sizeof(v);
	assert_int_equal(rgetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, &len), 0);
	assert_int_equal(v, 768);
	v = 1;
	assert_int_equal(rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)), 0);
	len = sizeof(v);
	assert_int_equal(rgetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &len), 0);
	assert_int_equal(v, 1);
	/* Bad options. */
	assert_errno(rsetsockopt(s, SOL_SOCKET, SO_BROADCAST, &v, sizeof(v)), ENOTSUP);
	assert_errno(rsetsockopt(s, 12345, 1, &v, sizeof(v)), ENOTSUP);
	assert_errno(rsetsockopt(s, SOL_RDMA, 99, &v, sizeof(v)), ENOTSUP);
	assert_errno(rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, 1), EINVAL);
	assert_errno(rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, NULL, sizeof(v)), EINVAL);
	assert_errno(rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, (v = 0, &v), sizeof(v)), EINVAL);
	assert_errno(rsetsockopt(s, SOL_RDMA, RDMA_ROUTE, &v, sizeof(v)), EINVAL);
	len = 1;
	assert_errno(rgetsockopt(s, SOL_SOCKET, SO_ERROR, &v, &len), EINVAL);
	len = sizeof(v);
	assert_errno(rgetsockopt(s, SOL_SOCKET, SO_BROADCAST, &v, &len), ENOTSUP);
	len = sizeof(v);
	v = -1;
	assert_int_equal(rgetsockopt(s, SOL_SOCKET, SO_ERROR, &v, &len), 0);
	assert_int_equal(v, 0);
	assert_int_equal(rclose(s), 0);
}

static void test_fcntl(void **state)
{
	int s;

	(void)state;
	s = rsocket(AF_INET6, SOCK_STREAM, 0);
	assert_true(s >= 0);
	assert_false(rfcntl(s, F_GETFL) & O_NONBLOCK);
	assert_int_equal(rfcntl(s, F_SETFL, O_NONBLOCK), 0);
	assert_true(rfcntl(s, F_GETFL) & O_NONBLOCK);
	assert_int_equal(rfcntl(s, F_SETFL, 0), 0);
	assert_false(rfcntl(s, F_GETFL) & O_NONBLOCK);
	assert_errno(rfcntl(s, F_DUPFD, 0), ENOTSUP);
	assert_int_equal(rclose(s), 0);
}

static void test_rpoll_mixed(void **state)
{
	struct pollfd p[2];
	fd_set rd;
	struct timeval tv = {0, 1000};
	int s, fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	p[0] = (struct pollfd){.fd = s, .events = POLLIN | POLLOUT};
	p[1] = (struct pollfd){.fd = fds[0], .events = POLLIN};
	/* Nothing ready: the timeout runs out. */
	assert_int_equal(rpoll(p, 2, 20), 0);
	assert_int_equal(p[0].revents, 0);
	assert_int_equal(p[1].revents, 0);
	/* The plain fd becomes readable: rpoll sees it next to the rsocket. */
	assert_int_equal(write(fds[1], "x", 1), 1);
	assert_int_equal(rpoll(p, 2, 1000), 1);
	assert_int_equal(p[0].revents, 0);
	assert_int_equal(p[1].revents, POLLIN);
	FD_ZERO(&rd);
	FD_SET(s, &rd);
	FD_SET(fds[0], &rd);
	assert_int_equal(rselect((s > fds[0] ? s : fds[0]) + 1, &rd, NULL, NULL, &tv), 1);
	assert_false(FD_ISSET(s, &rd));
	assert_true(FD_ISSET(fds[0], &rd));
	/* Plain fds only: poll(2). */
	assert_int_equal(rpoll(&p[1], 1, 0), 1);
	assert_int_equal(rclose(s), 0);
	close(fds[0]);
	close(fds[1]);
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * A timeout is never cut short (a lower bound, as poll(2) and select(2)
 * promise): udpong resends after an rpoll of 1 ms, which used to end at
 * the next millisecond tick, and rselect turned 500 us into no wait.
 */
static void test_rpoll_timeout(void **state)
{
	struct timeval tv;
	struct pollfd p;
	fd_set rd;
	uint64_t t0;
	int s;

	(void)state;
	s = rsocket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
	assert_true(s >= 0);
	for (int i = 0; i < 20; i++) {
		p = (struct pollfd){.fd = s, .events = POLLIN};
		t0 = mono_us();
		assert_int_equal(rpoll(&p, 1, 1), 0);
		assert_true(mono_us() - t0 >= 1000);
		assert_int_equal(p.revents, 0);
	}
	FD_ZERO(&rd);
	FD_SET(s, &rd);
	tv = (struct timeval){0, 500};
	t0 = mono_us();
	assert_int_equal(rselect(s + 1, &rd, NULL, NULL, &tv), 0);
	assert_true(mono_us() - t0 >= 500);
	assert_int_equal(rclose(s), 0);
}

/* Datagram rsockets: their calls' errors and states, with no peer. */
static void test_dgram_calls(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(7998)};
	struct sockaddr un = {.sa_family = AF_UNIX};
	socklen_t len = sizeof(sin);
	struct pollfd p;
	static char big[3000];
	char b[4];
	int s, k, v = 1000;

	(void)state;
	assert_errno(rsocket(AF_INET, SOCK_DGRAM, IPPROTO_TCP), ENOTSUP);
	assert_errno(rsocket(AF_IB, SOCK_DGRAM, 0), ENOTSUP);
	s = rsocket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
	assert_true(s >= 0);
	len = sizeof(v);
	assert_int_equal(rgetsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len), 0);
	assert_int_equal(v, SOCK_DGRAM);
	/* No destination: nowhere to send; no peer; no stream calls. */
	assert_errno(rsend(s, b, 1, 0), EDESTADDRREQ);
	assert_errno(rsendto(s, b, 1, 0, NULL, 0), EDESTADDRREQ);
	assert_errno(rsendto(s, b, 1, 0, &un, sizeof(un)), EAFNOSUPPORT);
	assert_errno(rsendto(s, b, 1, 0, (struct sockaddr *)&sin, 4), EINVAL);
	/* Larger than a datagram holds: refused before any resolution. */
	assert_errno(rsendto(s, big, sizeof(big), 0, (struct sockaddr *)&sin, sizeof(sin)),
		     EMSGSIZE);
	len = sizeof(sin);
	assert_errno(rgetpeername(s, (struct sockaddr *)&sin, &len), ENOTCONN);
	assert_errno(rshutdown(s, SHUT_RDWR), ENOTCONN);
	assert_errno(rlisten(s, 1), EOPNOTSUPP);
	assert_errno(raccept(s, NULL, NULL), EOPNOTSUPP);
	assert_errno(riomap(s, b, sizeof(b), PROT_WRITE, 0, -1), EOPNOTSUPP);
	assert_errno(rrecv(s, b, 1, MSG_DONTWAIT), EAGAIN);
	/* Options: the buffer doubled as on Linux; stream-only ones refused. */
	v = 100000;
	assert_int_equal(rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), 0);
	len = sizeof(v);
	assert_int_equal(rgetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
	assert_int_equal(v, 200000);
	assert_errno(rsetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), ENOTSUP);
	assert_errno(rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)), ENOTSUP);
	assert_errno(rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, 1), EINVAL);
	assert_int_equal(rfcntl(s, F_SETFL, O_NONBLOCK), 0);
	assert_true(rfcntl(s, F_GETFL) & O_NONBLOCK);
	assert_errno(rrecv(s, b, 1, 0), EAGAIN);
	/*
	 * Bound to the wildcard and a free port (a real UDP port now: a fixed
	 * one could be another test's): its name; a second bind is refused.
	 */
	sin.sin_port = 0;
	assert_int_equal(rbind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_errno(rbind(s, (struct sockaddr *)&sin, sizeof(sin)), EINVAL);
	memset(&sin, 0, sizeof(sin));
	len = sizeof(sin);
	assert_int_equal(rgetsockname(s, (struct sockaddr *)&sin, &len), 0);
	assert_int_equal(sin.sin_family, AF_INET);
	assert_true(sin.sin_port != 0);
	/* The UDP side channel holds the port: a kernel socket cannot have it. */
	k = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(k >= 0);
	assert_int_equal(bind(k, (struct sockaddr *)&sin, sizeof(sin)), -1);
	assert_int_equal(errno, EADDRINUSE);
	close(k);
	/* Idle: writable, nothing to read. */
	p = (struct pollfd){.fd = s, .events = POLLIN | POLLOUT};
	assert_int_equal(rpoll(&p, 1, 0), 1);
	assert_int_equal(p.revents, POLLOUT);
	assert_int_equal(rclose(s), 0);
	assert_errno(rfcntl(s, F_GETFL), EBADF);
	assert_errno(rsend(s, b, 1, 0), EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_fd),	cmocka_unit_test(test_socket_args),
	    cmocka_unit_test(test_wrong_state), cmocka_unit_test(test_listen_state),
	    cmocka_unit_test(test_options),	cmocka_unit_test(test_fcntl),
	    cmocka_unit_test(test_rpoll_mixed), cmocka_unit_test(test_rpoll_timeout),
	    cmocka_unit_test(test_dgram_calls), cmocka_unit_test(test_close_while_blocked),
	};

	return cmocka_run_group_tests(tests, fake_cma_group_setup, fake_cma_group_teardown);
}
