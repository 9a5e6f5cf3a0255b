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
 * the parent, so the child's copies of the descriptors are plain,
 * unconnected sockets (rdma-core's fork support, which hands a connection
 * over to the child, is not provided).
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

#ifndef RTLD_NEXT
#define RTLD_NEXT ((void *)-1l)
#endif

#define EXPORT __attribute__((visibility("default")))

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
int fcntl64(int fd, int cmd, ...);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *from,
		       socklen_t *fromlen);
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);

/* ---- libc's calls ---- */

static struct {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*close)(int);
	int (*shutdown)(int, int);
	int (*fcntl)(int, int, ...);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*dup)(int);
	int (*dup2)(int, int);
} real;

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
	pthread_atfork(NULL, NULL, atfork_child);
}

static void init(void)
{
	pthread_once(&real_once, load_real);
}

/* ---- the map: program descriptor -> rsocket ---- */

/* One rsocket, shared by the descriptors dup() made of it. */
struct rsfd {
	int rs;
	int refs;
};

#define MAP_PAGE_BITS 10
#define MAP_PAGES 1024
static struct rsfd **map_pages[MAP_PAGES];
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;

/* Set while this thread runs an r* call: its own calls go to libc. */
static __thread bool in_rs;

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

static int map_new(int fd, int rs)
{
	struct rsfd *e = malloc(sizeof(*e));
	int r;

	if (!e)
		return -1;
	e->rs = rs;
	e->refs = 1;
	pthread_mutex_lock(&map_lock);
	r = map_put(fd, e);
	pthread_mutex_unlock(&map_lock);
	if (r)
		free(e);
	return r;
}

/* Forget fd; the rsocket behind it when fd was its last descriptor, else -1. */
static int map_drop(int fd)
{
	struct rsfd *e;
	int rs = -1;

	pthread_mutex_lock(&map_lock);
	e = map_get(fd);
	if (e) {
		map_put(fd, NULL);
		if (--e->refs == 0) {
			rs = e->rs;
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
 * purpose, the child must not tear down the parent's connections).
 */
static void atfork_child(void)
{
	for (int p = 0; p < MAP_PAGES; p++)
		if (map_pages[p])
			memset(map_pages[p], 0, sizeof(struct rsfd *) << MAP_PAGE_BITS);
}

/* Run an r* call with this thread's libc calls passed through. */
#define RS_CALL(expr)                                                                              \
	({                                                                                         \
		bool was_ = in_rs;                                                                 \
		in_rs = true;                                                                      \
		__typeof__(expr) r_ = (expr);                                                      \
		in_rs = was_;                                                                      \
		r_;                                                                                \
	})

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
	rs = RS_CALL(rsocket(domain, SOCK_STREAM, 0));
	if (rs < 0)
		return fd; /* no RDMA here: the program keeps its TCP socket */
	if ((type & SOCK_NONBLOCK) && RS_CALL(rfcntl(rs, F_SETFL, O_NONBLOCK)) < 0) {
		RS_CALL(rclose(rs));
		return fd;
	}
	if (map_new(fd, rs)) {
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
	e = map_get(fd);
	return e ? RS_CALL(rbind(e->rs, addr, len)) : real.bind(fd, addr, len);
}

EXPORT int listen(int fd, int backlog)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rlisten(e->rs, backlog)) : real.listen(fd, backlog);
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct rsfd *e;
	int rs, nfd;

	init();
	e = map_get(fd);
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
	    map_new(nfd, rs)) {
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

	init();
	e = map_get(fd);
	return e ? RS_CALL(rconnect(e->rs, addr, len)) : real.connect(fd, addr, len);
}

EXPORT int shutdown(int fd, int how)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
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
	e = map_get(fd);
	return e ? RS_CALL(rread(e->rs, buf, count)) : real.read(fd, buf, count);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rreadv(e->rs, iov, iovcnt)) : real.readv(fd, iov, iovcnt);
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rwrite(e->rs, buf, count)) : real.write(fd, buf, count);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rwritev(e->rs, iov, iovcnt)) : real.writev(fd, iov, iovcnt);
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rrecv(e->rs, buf, len, flags)) : real.recv(fd, buf, len, flags);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
			socklen_t *fromlen)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rrecvfrom(e->rs, buf, len, flags, from, fromlen))
		 : real.recvfrom(fd, buf, len, flags, from, fromlen);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rrecvmsg(e->rs, msg, flags)) : real.recvmsg(fd, msg, flags);
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rsend(e->rs, buf, len, flags)) : real.send(fd, buf, len, flags);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
		      socklen_t tolen)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rsendto(e->rs, buf, len, flags, to, tolen))
		 : real.sendto(fd, buf, len, flags, to, tolen);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
	return e ? RS_CALL(rsendmsg(e->rs, msg, flags)) : real.sendmsg(fd, msg, flags);
}

/* To an rsocket: read the file and rwrite it (no zero-copy path here). */
EXPORT ssize_t sendfile(int out, int in, off_t *offset, size_t count)
{
	char buf[65536];
	struct rsfd *e;
	size_t done = 0;

	init();
	e = map_get(out);
	if (!e)
		return real.sendfile(out, in, offset, count);
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

/* ---- polling ---- */

EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *t;
	bool any = false;
	int r;

	init();
	for (nfds_t i = 0; i < nfds && !any; i++)
		any = map_get(fds[i].fd) != NULL;
	if (!any)
		return real.poll(fds, nfds, timeout);
	t = malloc(nfds * sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return -1;
	}
	for (nfds_t i = 0; i < nfds; i++) {
		struct rsfd *e = map_get(fds[i].fd);

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
	struct pollfd *p;
	bool any = false;
	int n = 0, r, to;

	init();
	for (int fd = 0; fd < nfds && !any; fd++)
		if ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) ||
		    (ex && FD_ISSET(fd, ex)))
			any = map_get(fd) != NULL;
	if (!any)
		return real.select(nfds, rd, wr, ex, tv);
	/* With an rsocket in a set: the same question as a poll. */
	p = calloc((size_t)nfds, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (short)((rd && FD_ISSET(fd, rd) ? POLLIN : 0) |
				   (wr && FD_ISSET(fd, wr) ? POLLOUT : 0) |
				   (ex && FD_ISSET(fd, ex) ? POLLPRI : 0));

		if (ev)
			p[n++] = (struct pollfd){.fd = fd, .events = ev};
	}
	to = tv ? (int)(tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000) : -1;
	r = poll(p, (nfds_t)n, to);
	if (r < 0) {
		free(p);
		return -1;
	}
	if (rd)
		FD_ZERO(rd);
	if (wr)
		FD_ZERO(wr);
	if (ex)
		FD_ZERO(ex);
	r = 0;
	for (int i = 0; i < n; i++) {
		short v = p[i].revents;

		if (rd && (p[i].events & POLLIN) && (v & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(p[i].fd, rd);
			r++;
		}
		if (wr && (p[i].events & POLLOUT) && (v & (POLLOUT | POLLERR))) {
			FD_SET(p[i].fd, wr);
			r++;
		}
		if (ex && (p[i].events & POLLPRI) && (v & POLLPRI)) {
			FD_SET(p[i].fd, ex);
			r++;
		}
	}
	free(p);
	if (tv && !r)
		tv->tv_sec = tv->tv_usec = 0;
	return r;
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
	e = map_get(fd);
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
	e = map_get(fd);
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
	e = map_get(fd);
	return e ? RS_CALL(rgetpeername(e->rs, addr, len)) : real.getpeername(fd, addr, len);
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct rsfd *e;

	init();
	e = map_get(fd);
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
