/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * librspreload.so's fork mode, rdma-core's preload behaviour when
 * RDMAV_FORK_SAFE is set (to a number other than 0, as atoi reads it).
 *
 * A queue pair and its registered memory cannot follow a connection into
 * a child of fork(), so in this mode a TCP socket stays a kernel socket
 * until its connection is first used for data, by whichever process then
 * holds it, and only then becomes an rsocket of that process:
 *
 *   - the side that accepted (passive) opens a listening rsocket on the
 *     wildcard address and the port of its TCP connection's local end
 *     (the TCP listener's port), SO_REUSEADDR, backlog 1; once it
 *     listens it writes a 4-byte 0 on the TCP connection and accepts one
 *     rsocket connection;
 *   - the side that connected (active) waits (blocking, whatever
 *     O_NONBLOCK says) for those 4 bytes; when they are a 0 it rconnects
 *     to the TCP peer's address and port.  Anything else (a peer that is
 *     not in fork mode speaks first) leaves the connection on TCP, its
 *     bytes unread;
 *   - both then copy O_NONBLOCK, SO_REUSEADDR and TCP_NODELAY from the
 *     TCP socket to the rsocket and shut the TCP connection down.
 *
 * Children of one server convert their connections on the same port, and
 * a port has one listener: the named POSIX semaphore "/rsocket_fork"
 * (created with the value 1) serialises the passive side's bind .. accept
 * between every process of the host, rdma-core's included.
 *
 * This is the exchange docs/rsocket-wire.md describes; the values are
 * rdma-core's, the code is ours.  Where madcm differs (not on the wire):
 * the passive side also converts when the program polls the connection
 * (rdma-core's deadlocks when a server polls before its first read while
 * its client writes first), the active side reads the 0 away before it
 * closes the TCP connection (rdma-core only peeks, so its close resets),
 * and a semaphore left taken by a process that died does not stop later
 * conversions (see fork_lock).
 */
#define _DEFAULT_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <rdma/rsocket.h>

#include "lib/rspreload.h"

/* rdma-core's name and mode: both libraries serialise on the same one. */
#define FORK_SEM_NAME "/rsocket_fork"
#define FORK_SEM_MODE (S_IRWXU | S_IRWXG)

/* How long a passive side waits for the semaphore before it checks the port itself. */
#define FORK_SEM_WAIT_S 2
/* How often it then finds the port taken before it gives up (stays TCP). */
#define FORK_BIND_TRIES 30

static bool fork_support;

void fork_mode_init(void)
{
	const char *v = getenv("RDMAV_FORK_SAFE");

	fork_support = v && atoi(v) != 0;
}

bool fork_mode(void)
{
	return fork_support;
}

/* rdma-core copies these few settings from the socket it replaces. */
static void copy_sockopts(int rs, int fd)
{
	socklen_t len;
	int fl, v;

	fl = real.fcntl(fd, F_GETFL);
	if (fl > 0 && (fl & O_NONBLOCK))
		rfcntl(rs, F_SETFL, O_NONBLOCK);
	len = sizeof(v);
	if (!real.getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, &len) && v)
		rsetsockopt(rs, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v));
	len = sizeof(v);
	if (!real.getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) && v)
		rsetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v));
}

/*
 * End the TCP connection.  The program keeps its number: when no dup()
 * shares it, a fresh unconnected socket takes the number (with the old
 * one's flags), as every rsocket's descriptor is; else the shut-down
 * socket stays behind it.
 */
static void retire_tcp(int fd, const struct rsfd *e, int family)
{
	int fdfl, fl, n;

	real.shutdown(fd, SHUT_RDWR);
	if (__atomic_load_n(&e->refs, __ATOMIC_RELAXED) != 1)
		return;
	fdfl = real.fcntl(fd, F_GETFD);
	fl = real.fcntl(fd, F_GETFL);
	n = real.socket(family, SOCK_STREAM, 0);
	if (n < 0)
		return;
	if (real.dup2(n, fd) == fd) {
		if (fdfl > 0)
			real.fcntl(fd, F_SETFD, fdfl);
		if (fl > 0)
			real.fcntl(fd, F_SETFL, fl);
	}
	real.close(n);
}

/*
 * Take the semaphore; false when it was not had within FORK_SEM_WAIT_S:
 * the caller then tries the port itself.  rdma-core waits for ever, so a
 * process killed between its sem_wait and sem_post would stop every later
 * conversion on the host; here the port's own rule (one listener) still
 * keeps two conversions apart, the semaphore only saves the retries.
 */
static bool fork_lock(sem_t *sem)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += FORK_SEM_WAIT_S;
	while (sem_timedwait(sem, &ts))
		if (errno != EINTR)
			return false;
	return true;
}

/* A listening rsocket on the wildcard address and port of sa; -1 with errno. */
static int fork_listener(const struct sockaddr_storage *sa)
{
	struct sockaddr_storage any;
	socklen_t alen;
	int lfd, one = 1;

	/* The family and port kept, the address (and IPv6 flow and scope) zero. */
	memset(&any, 0, sizeof(any));
	any.ss_family = sa->ss_family;
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *from = (const struct sockaddr_in6 *)sa;

		((struct sockaddr_in6 *)&any)->sin6_port = from->sin6_port;
		alen = sizeof(struct sockaddr_in6);
	} else {
		const struct sockaddr_in *from = (const struct sockaddr_in *)sa;

		((struct sockaddr_in *)&any)->sin_port = from->sin_port;
		alen = sizeof(struct sockaddr_in);
	}
	lfd = rsocket(sa->ss_family, SOCK_STREAM, 0);
	if (lfd < 0)
		return -1;
	rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (rbind(lfd, (struct sockaddr *)&any, alen) || rlisten(lfd, 1)) {
		int err = errno;

		rclose(lfd);
		errno = err;
		return -1;
	}
	return lfd;
}

/* The accepting side: listen, say so with a 0, accept.  The rsocket or -1. */
static int fork_passive(int fd, int *family)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	const uint32_t zero = 0;
	int lfd = -1, rs = -1;
	bool held = false;
	sem_t *sem;

	if (real.getsockname(fd, (struct sockaddr *)&sa, &len) ||
	    (sa.ss_family != AF_INET && sa.ss_family != AF_INET6))
		return -1;
	*family = sa.ss_family;
	sem = sem_open(FORK_SEM_NAME, O_CREAT | O_RDWR, FORK_SEM_MODE, 1);
	if (sem == SEM_FAILED)
		return -1;
	for (int tries = 0; lfd < 0 && tries < FORK_BIND_TRIES; tries++) {
		held = fork_lock(sem);
		lfd = fork_listener(&sa);
		if (lfd >= 0 || held || (errno != EADDRINUSE && errno != EADDRNOTAVAIL))
			break;
	}
	/* MSG_NOSIGNAL: a peer already gone is a failed conversion, not a SIGPIPE. */
	if (lfd >= 0 && real.send(fd, &zero, sizeof(zero), MSG_NOSIGNAL) == (ssize_t)sizeof(zero))
		rs = raccept(lfd, NULL, NULL);
	if (lfd >= 0)
		rclose(lfd);
	if (held)
		sem_post(sem);
	sem_close(sem);
	return rs;
}

/* The connecting side: wait for the peer's 0, connect to it.  The rsocket or -1. */
static int fork_active(int fd, int *family)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	uint32_t msg = 1;
	int fl, rs;
	ssize_t n;

	fl = real.fcntl(fd, F_GETFL);
	if (fl > 0 && (fl & O_NONBLOCK))
		real.fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	do
		n = real.recv(fd, &msg, sizeof(msg), MSG_PEEK | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (fl > 0 && (fl & O_NONBLOCK))
		real.fcntl(fd, F_SETFL, fl);
	if (n != (ssize_t)sizeof(msg) || msg != 0)
		return -1;
	if (real.getpeername(fd, (struct sockaddr *)&sa, &len))
		return -1;
	*family = sa.ss_family;
	rs = rsocket(sa.ss_family, SOCK_STREAM, 0);
	if (rs < 0)
		return -1;
	if (rconnect(rs, (struct sockaddr *)&sa, len)) {
		rclose(rs);
		return -1;
	}
	/* Read the 0 away, so the TCP close below is a FIN, not a reset. */
	real.recv(fd, &msg, sizeof(msg), MSG_DONTWAIT);
	return rs;
}

void fork_convert(int fd, struct rsfd *e)
{
	int state, rs = -1, family = AF_INET, err = errno;
	bool was = in_rs;

	pthread_mutex_lock(&e->conv);
	state = rsfd_state(e);
	if (state != RSFD_ACTIVE && state != RSFD_PASSIVE) {
		pthread_mutex_unlock(&e->conv); /* another thread did it */
		return;
	}
	/* Every call made from here (sem_open's, the rsocket's) goes to libc. */
	in_rs = true;
	rs = state == RSFD_PASSIVE ? fork_passive(fd, &family) : fork_active(fd, &family);
	if (rs >= 0) {
		copy_sockopts(rs, fd);
		retire_tcp(fd, e, family);
		e->rs = rs;
		rsfd_set_state(e, RSFD_RS);
	} else {
		rsfd_set_state(e, RSFD_KERNEL);
	}
	in_rs = was;
	pthread_mutex_unlock(&e->conv);
	errno = err; /* the program's call reports its own errors, not ours */
}
