/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * librspreload.so: an LD_PRELOAD module that turns an unmodified program's
 * TCP sockets (AF_INET or AF_INET6, SOCK_STREAM) into rsockets, as
 * rdma-core's preload library does; every other socket, and every other
 * descriptor, goes to libc (dlsym(RTLD_NEXT)).
 *
 * The program keeps a real descriptor: socket() makes an ordinary kernel
 * socket, which is never connected and only holds the number, and a map
 * sends the calls on that number to the rsocket behind it.  The rsocket's
 * own descriptors (its CM channel and completion channel) are not in the
 * map, so the library's own calls on them (poll, read, write, close: from
 * the rsocket code, librdmacm's progress thread, libibverbs) pass straight
 * to libc even though they come through these wrappers too.  The same
 * holds for the calls a wrapper makes while it runs an r* call: a
 * thread-local flag sends them to libc whatever their descriptor.
 *
 * An rsocket that cannot be made (no RDMA device) leaves the program with
 * its kernel socket, unchanged.  A child of fork() keeps the kernel
 * sockets only: the rsockets' queue pairs and registered memory belong to
 * the parent, so the child's copies of their descriptors are plain,
 * unconnected sockets.  For programs that hand connections to children
 * (accept, fork, serve) there is rdma-core's fork mode, RDMAV_FORK_SAFE:
 * connections are made over TCP and each becomes an rsocket of the
 * process that first uses it (rspreload_fork.c); the map then also holds
 * the kernel TCP sockets waiting for that, in states other than RSFD_RS.
 *
 * No _GNU_SOURCE: with it glibc declares the socket calls with transparent
 * unions, which definitions of the same calls cannot match.
 */
#define _DEFAULT_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "lib/rspreload.h"
#include "lib/select_poll.h"

#ifndef RTLD_NEXT
#define RTLD_NEXT ((void *)-1l)
#endif

#define EXPORT __attribute__((visibility("default")))

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
int fcntl64(int fd, int cmd, ...);
ssize_t sendfile64(int out, int in, __off64_t *offset, size_t count);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *from,
		       socklen_t *fromlen);
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);

/* ---- libc's calls ---- */

struct rsp_libc real;

static pthread_once_t real_once = PTHREAD_ONCE_INIT;

#define LOAD(name) (*(void **)&real.name = dlsym(RTLD_NEXT, #name))

static void atfork_child(void);

static void load_real(void)
{
	LOAD(socket);
	LOAD(bind);
	LOAD(listen);
	LOAD(accept4);
	LOAD(connect);
	LOAD(read);
	LOAD(readv);
	LOAD(write);
	LOAD(writev);
	LOAD(recv);
	LOAD(recvfrom);
	LOAD(recvmsg);
	LOAD(send);
	LOAD(sendto);
	LOAD(sendmsg);
	LOAD(sendfile);
	LOAD(sendfile64);
	LOAD(poll);
	LOAD(select);
	LOAD(close);
	LOAD(shutdown);
	LOAD(fcntl);
	LOAD(setsockopt);
	LOAD(getsockopt);
	LOAD(getpeername);
	LOAD(getsockname);
	LOAD(dup);
	LOAD(dup2);
	LOAD(epoll_create1);
	LOAD(epoll_ctl);
	LOAD(epoll_wait);
	LOAD(epoll_pwait);
	fork_mode_init();
	pthread_atfork(NULL, NULL, atfork_child);
}

static void init(void)
{
	pthread_once(&real_once, load_real);
}

/* ---- the map: program descriptor -> rsocket ---- */

#define MAP_PAGE_BITS 10
#define MAP_PAGES 1024
static struct rsfd **map_pages[MAP_PAGES];
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;

__thread bool in_rs;

static struct rsfd *map_get(int fd)
{
	struct rsfd **page;

	if (in_rs || fd < 0 || (fd >> MAP_PAGE_BITS) >= MAP_PAGES)
		return NULL;
	page = __atomic_load_n(&map_pages[fd >> MAP_PAGE_BITS], __ATOMIC_ACQUIRE);
	if (!page)
		return NULL;
	return __atomic_load_n(&page[fd & ((1 << MAP_PAGE_BITS) - 1)], __ATOMIC_ACQUIRE);
}

/* map_lock held. */
static int map_put(int fd, struct rsfd *e)
{
	int p = fd >> MAP_PAGE_BITS;

	if (fd < 0 || p >= MAP_PAGES)
		return -1;
	if (!map_pages[p]) {
		struct rsfd **page = calloc(1u << MAP_PAGE_BITS, sizeof(*page));

		if (!page)
			return -1;
		__atomic_store_n(&map_pages[p], page, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&map_pages[p][fd & ((1 << MAP_PAGE_BITS) - 1)], e, __ATOMIC_RELEASE);
	return 0;
}

/* A new entry for fd: rsocket rs (RSFD_RS), or a fork-mode state and -1. */
static int map_new(int fd, int rs, int state)
{
	struct rsfd *e = malloc(sizeof(*e));
	int r;

	if (!e)
		return -1;
	e->rs = rs;
	e->refs = 1;
	e->state = state;
	pthread_mutex_init(&e->conv, NULL);
	pthread_mutex_lock(&map_lock);
	r = map_put(fd, e);
	pthread_mutex_unlock(&map_lock);
	if (r) {
		pthread_mutex_destroy(&e->conv);
		free(e);
	}
	return r;
}

/* fd's rsocket entry; NULL when fd is no rsocket (yet). */
static struct rsfd *rs_get(int fd)
{
	struct rsfd *e = map_get(fd);

	return e && rsfd_state(e) == RSFD_RS ? e : NULL;
}

/*
 * The same for a call that moves data: in fork mode a connection becomes
 * an rsocket here, on its first use (rdma-core's read, write, send and
 * recv families).
 */
static struct rsfd *rs_get_io(int fd)
{
	struct rsfd *e = map_get(fd);
	int st;

	if (!e)
		return NULL;
	st = rsfd_state(e);
	if (st == RSFD_ACTIVE || st == RSFD_PASSIVE) {
		fork_convert(fd, e);
		st = rsfd_state(e);
	}
	return st == RSFD_RS ? e : NULL;
}

/* fd's entry when it is in fork state st. */
static struct rsfd *fork_get(int fd, int st)
{
	struct rsfd *e = map_get(fd);

	return e && rsfd_state(e) == st ? e : NULL;
}

/*
 * Before a poll: a fork-mode connection accepted here becomes an rsocket
 * now.  rdma-core converts only on a read or write, so a server that polls
 * first, for a client that writes first (which waits for the server's 0),
 * never converts; converting here costs nothing on the wire: the client
 * sees the 0 whichever call sent it.
 */
static void fork_poll_prepare(int fd)
{
	struct rsfd *e = fork_get(fd, RSFD_PASSIVE);

	if (e)
		fork_convert(fd, e);
}

/*
 * Forget fd; the rsocket (or repoll set) behind it when fd was its last
 * descriptor, else -1.
 */
static int map_drop(int fd)
{
	struct rsfd *e;
	int rs = -1;

	pthread_mutex_lock(&map_lock);
	e = map_get(fd);
	if (e) {
		map_put(fd, NULL);
		if (--e->refs == 0) {
			if (rsfd_state(e) == RSFD_RS || rsfd_state(e) == RSFD_EPOLL)
				rs = e->rs;
			pthread_mutex_destroy(&e->conv);
			free(e);
		}
	}
	pthread_mutex_unlock(&map_lock);
	return rs;
}

static int map_share(int fd, struct rsfd *e)
{
	int r;

	pthread_mutex_lock(&map_lock);
	e->refs++;
	r = map_put(fd, e);
	if (r)
		e->refs--;
	pthread_mutex_unlock(&map_lock);
	return r;
}

/*
 * The child does not own the parent's rsockets: forget them (leaked on
 * purpose, the child must not tear down the parent's connections).  The
 * fork-mode entries stay: their kernel sockets are the child's too, and a
 * connection the child is the first to use becomes the child's rsocket.
 * Only this thread runs in the child, so no lock is held (the entry
 * locks are made anew: another thread of the parent may have held one).
 */
static void atfork_child(void)
{
	pthread_mutex_init(&map_lock, NULL);
	for (int p = 0; p < MAP_PAGES; p++) {
		if (!map_pages[p])
			continue;
		for (int i = 0; i < 1 << MAP_PAGE_BITS; i++) {
			struct rsfd *e = map_pages[p][i];

			if (!e)
				continue;
			if (rsfd_state(e) == RSFD_RS)
				map_pages[p][i] = NULL;
			else
				pthread_mutex_init(&e->conv, NULL);
		}
	}
}

/* ---- for rspreload_epoll.c ---- */

void rsp_init(void)
{
	init();
}

struct rsfd *rsp_entry(int fd)
{
	return map_get(fd);
}

int rsp_map_add(int fd, int rs, int state)
{
	return map_new(fd, rs, state);
}

/* The rsocket behind fd (a fork-mode connection becomes one now), or -1. */
int rsp_rsocket_of(int fd)
{
	struct rsfd *e;

	fork_poll_prepare(fd);
	e = rs_get_io(fd);
	return e ? e->rs : -1;
}

#define BASE_TYPE(t) ((t) & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))

/* ---- sockets ---- */

EXPORT int socket(int domain, int type, int protocol)
{
	int fd, rs;

	init();
	fd = real.socket(domain, type, protocol);
	if (fd < 0 || in_rs || (domain != AF_INET && domain != AF_INET6) ||
	    BASE_TYPE(type) != SOCK_STREAM || (protocol && protocol != IPPROTO_TCP))
		return fd;
	if (fork_mode()) {
		/* The kernel socket itself, until its connection is first used. */
		if (map_new(fd, -1, RSFD_FORK)) {
			real.close(fd);
			errno = ENOMEM;
			return -1;
		}
		return fd;
	}
	rs = RS_CALL(rsocket(domain, SOCK_STREAM, 0));
	if (rs < 0)
		return fd; /* no RDMA here: the program keeps its TCP socket */
	if ((type & SOCK_NONBLOCK) && RS_CALL(rfcntl(rs, F_SETFL, O_NONBLOCK)) < 0) {
		RS_CALL(rclose(rs));
		return fd;
	}
	if (map_new(fd, rs, RSFD_RS)) {
		RS_CALL(rclose(rs));
		real.close(fd);
		errno = ENOMEM;
		return -1;
	}
	return fd;
}

EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct rsfd *e;

	init();
	e = rs_get(fd);
	return e ? RS_CALL(rbind(e->rs, addr, len)) : real.bind(fd, addr, len);
}

EXPORT int listen(int fd, int backlog)
{
	struct rsfd *e;
	int r;

	init();
	e = rs_get(fd);
	if (e)
		return RS_CALL(rlisten(e->rs, backlog));
	r = real.listen(fd, backlog);
	e = r ? NULL : fork_get(fd, RSFD_FORK);
	if (e)
		rsfd_set_state(e, RSFD_LISTEN);
	return r;
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct rsfd *e;
	int rs, nfd;

	init();
	if (fork_get(fd, RSFD_LISTEN)) {
		/* Fork mode: a TCP connection, an rsocket once it is first used. */
		nfd = real.accept4(fd, addr, len, flags);
		if (nfd >= 0 && map_new(nfd, -1, RSFD_PASSIVE)) {
			real.close(nfd);
			errno = ENOMEM;
			return -1;
		}
		return nfd;
	}
	e = rs_get(fd);
	if (!e)
		return real.accept4(fd, addr, len, flags);
	rs = RS_CALL(raccept(e->rs, addr, len));
	if (rs < 0)
		return -1;
	/* A descriptor for the program: a kernel socket of the listener's family. */
	if (RS_CALL(rgetsockname(e->rs, (struct sockaddr *)&ss, &sl)))
		ss.ss_family = AF_INET;
	nfd = real.socket(ss.ss_family, SOCK_STREAM | (flags & SOCK_CLOEXEC), 0);
	if (nfd < 0 || ((flags & SOCK_NONBLOCK) && RS_CALL(rfcntl(rs, F_SETFL, O_NONBLOCK))) ||
	    map_new(nfd, rs, RSFD_RS)) {
		int err = nfd < 0 ? errno : ENOMEM;

		RS_CALL(rclose(rs));
		if (nfd >= 0)
			real.close(nfd);
		errno = err;
		return -1;
	}
	return nfd;
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return accept4(fd, addr, len, 0);
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct rsfd *e;
	int r;

	init();
	e = rs_get(fd);
	if (e)
		return RS_CALL(rconnect(e->rs, addr, len));
	e = fork_get(fd, RSFD_FORK);
	r = real.connect(fd, addr, len);
	if (e && (!r || errno == EINPROGRESS))
		rsfd_set_state(e, RSFD_ACTIVE);
	return r;
}

EXPORT int shutdown(int fd, int how)
{
	struct rsfd *e;

	init();
	e = rs_get(fd);
	return e ? RS_CALL(rshutdown(e->rs, how)) : real.shutdown(fd, how);
}

EXPORT int close(int fd)
{
	int rs;

	init();
	rs = in_rs ? -1 : map_drop(fd);
	if (rs >= 0)
		RS_CALL(rclose(rs));
	return real.close(fd);
}

/* ---- data ---- */

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rread(e->rs, buf, count)) : real.read(fd, buf, count);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rreadv(e->rs, iov, iovcnt)) : real.readv(fd, iov, iovcnt);
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rwrite(e->rs, buf, count)) : real.write(fd, buf, count);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rwritev(e->rs, iov, iovcnt)) : real.writev(fd, iov, iovcnt);
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rrecv(e->rs, buf, len, flags)) : real.recv(fd, buf, len, flags);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
			socklen_t *fromlen)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rrecvfrom(e->rs, buf, len, flags, from, fromlen))
		 : real.recvfrom(fd, buf, len, flags, from, fromlen);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rrecvmsg(e->rs, msg, flags)) : real.recvmsg(fd, msg, flags);
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rsend(e->rs, buf, len, flags)) : real.send(fd, buf, len, flags);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
		      socklen_t tolen)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rsendto(e->rs, buf, len, flags, to, tolen))
		 : real.sendto(fd, buf, len, flags, to, tolen);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct rsfd *e;

	init();
	e = rs_get_io(fd);
	return e ? RS_CALL(rsendmsg(e->rs, msg, flags)) : real.sendmsg(fd, msg, flags);
}

/* To an rsocket: read the file and rwrite it (no zero-copy path here). */
static ssize_t rs_sendfile(struct rsfd *e, int in, off_t *offset, size_t count)
{
	char buf[65536];
	size_t done = 0;
	while (done < count) {
		size_t want = count - done < sizeof(buf) ? count - done : sizeof(buf);
		ssize_t n = offset ? pread(in, buf, want, *offset) : real.read(in, buf, want);
		ssize_t w;

		if (n <= 0) {
			if (n < 0 && !done)
				return -1;
			break;
		}
		w = RS_CALL(rwrite(e->rs, buf, (size_t)n));
		if (w <= 0) {
			if (!done)
				return -1;
			break;
		}
		if (offset)
			*offset += w;
		else if (w < n)
			lseek(in, w - n, SEEK_CUR);
		done += (size_t)w;
		if (w < n)
			break;
	}
	return (ssize_t)done;
}

EXPORT ssize_t sendfile(int out, int in, off_t *offset, size_t count)
{
	struct rsfd *e;

	init();
	e = rs_get_io(out);
	return e ? rs_sendfile(e, in, offset, count) : real.sendfile(out, in, offset, count);
}

/*
 * glibc's name for sendfile with a 64-bit offset (programs built with
 * _FILE_OFFSET_BITS=64 call it); off_t is that already on 64-bit hosts.
 */
EXPORT ssize_t sendfile64(int out, int in, __off64_t *offset, size_t count)
{
	struct rsfd *e;
	off_t off;
	ssize_t r;

	init();
	e = rs_get_io(out);
	if (!e)
		return real.sendfile64(out, in, offset, count);
	off = offset ? (off_t)*offset : 0;
	r = rs_sendfile(e, in, offset ? &off : NULL, count);
	if (offset)
		*offset = off;
	return r;
}

/* ---- polling ---- */

EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *t;
	bool any = false;
	int r;

	init();
	for (nfds_t i = 0; i < nfds; i++)
		fork_poll_prepare(fds[i].fd);
	for (nfds_t i = 0; i < nfds && !any; i++)
		any = rs_get(fds[i].fd) != NULL;
	if (!any)
		return real.poll(fds, nfds, timeout);
	t = malloc(nfds * sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return -1;
	}
	for (nfds_t i = 0; i < nfds; i++) {
		struct rsfd *e = rs_get(fds[i].fd);

		t[i] = fds[i];
		if (e)
			t[i].fd = e->rs;
	}
	r = RS_CALL(rpoll(t, nfds, timeout));
	for (nfds_t i = 0; i < nfds; i++)
		fds[i].revents = t[i].revents;
	free(t);
	return r;
}

EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	bool any = false;

	init();
	for (int fd = 0; fd < nfds; fd++)
		if ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) ||
		    (ex && FD_ISSET(fd, ex))) {
			fork_poll_prepare(fd);
			any = any || rs_get(fd) != NULL;
		}
	if (!any)
		return real.select(nfds, rd, wr, ex, tv);
	/* With an rsocket in a set: the same question as a poll. */
	return select_by_poll(nfds, rd, wr, ex, tv, poll);
}

/* ---- descriptor and socket options ---- */

EXPORT int fcntl(int fd, int cmd, ...)
{
	struct rsfd *e;
	va_list ap;
	long arg;
	int r;

	init();
	va_start(ap, cmd);
	arg = va_arg(ap, long); /* every command's argument fits, or is ignored */
	va_end(ap);
	e = map_get(fd);
	if (!e)
		return real.fcntl(fd, cmd, arg);
	if (rsfd_state(e) != RSFD_RS && cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)
		return real.fcntl(fd, cmd, arg); /* fork mode: still the TCP socket */
	switch (cmd) {
	case F_GETFL:
		return RS_CALL(rfcntl(e->rs, F_GETFL));
	case F_SETFL:
		r = RS_CALL(rfcntl(e->rs, F_SETFL, (int)arg));
		if (!r)
			real.fcntl(fd, F_SETFL, arg);
		return r;
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		r = real.fcntl(fd, cmd, arg);
		if (r >= 0 && map_share(r, e)) {
			real.close(r);
			errno = ENOMEM;
			return -1;
		}
		return r;
	default: /* F_GETFD, F_SETFD, locks...: the program's descriptor */
		return real.fcntl(fd, cmd, arg);
	}
}

EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct rsfd *e;
	int r;

	init();
	e = rs_get(fd);
	if (!e)
		return real.setsockopt(fd, level, name, val, len);
	r = RS_CALL(rsetsockopt(e->rs, level, name, val, len));
	/*
	 * An option rsockets do not have (SO_REUSEPORT, IP_TOS, ...) is kept
	 * by the kernel socket, so the program sees what a TCP socket says.
	 */
	if (r && errno == ENOTSUP)
		r = real.setsockopt(fd, level, name, val, len);
	return r;
}

EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct rsfd *e;
	int r;

	init();
	e = rs_get(fd);
	if (!e)
		return real.getsockopt(fd, level, name, val, len);
	r = RS_CALL(rgetsockopt(e->rs, level, name, val, len));
	if (r && errno == ENOTSUP)
		r = real.getsockopt(fd, level, name, val, len);
	return r;
}

EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct rsfd *e;

	init();
	e = rs_get(fd);
	return e ? RS_CALL(rgetpeername(e->rs, addr, len)) : real.getpeername(fd, addr, len);
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct rsfd *e;

	init();
	e = rs_get(fd);
	return e ? RS_CALL(rgetsockname(e->rs, addr, len)) : real.getsockname(fd, addr, len);
}

EXPORT int dup(int fd)
{
	struct rsfd *e;
	int n;

	init();
	e = map_get(fd);
	n = real.dup(fd);
	if (n >= 0 && e && map_share(n, e)) {
		real.close(n);
		errno = ENOMEM;
		return -1;
	}
	return n;
}

/* The new number names the same rsocket; what it named before is closed. */
EXPORT int dup2(int fd, int nfd)
{
	struct rsfd *e;
	int n, rs;

	init();
	e = map_get(fd);
	if (fd == nfd || in_rs)
		return real.dup2(fd, nfd);
	rs = map_drop(nfd);
	if (rs >= 0)
		RS_CALL(rclose(rs));
	n = real.dup2(fd, nfd);
	if (n >= 0 && e && map_share(n, e)) {
		real.close(n);
		errno = ENOMEM;
		return -1;
	}
	return n;
}

/* The same call under the names glibc gives it for 64-bit offsets. */
EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}

/*
 * _FORTIFY_SOURCE builds call these instead of read, recv, recvfrom and
 * poll; glibc's own would reach the kernel without passing through here.
 */
EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		abort();
	return read(fd, buf, n);
}

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		abort();
	return recv(fd, buf, n, flags);
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
			      struct sockaddr *from, socklen_t *fromlen)
{
	if (n > buflen)
		abort();
	return recvfrom(fd, buf, n, flags, from, fromlen);
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < nfds)
		abort();
	return poll(fds, nfds, timeout);
}
