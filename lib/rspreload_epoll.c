/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * librspreload.so's epoll: a program's epoll sets become repoll sets
 * (RDMACM_1.5, lib/repoll.c), so rsockets and ordinary fds can share one,
 * as rdma-core's preload library does since 2026.
 *
 * As a socket, a set keeps a kernel descriptor for its number: a kernel
 * epoll set made with the program's flags (so fstat, fcntl and
 * /proc/PID/fd look right), which stays empty; the map names the repoll
 * set behind it (RSFD_EPOLL), and close() frees that through rclose().
 * epoll_ctl() hands the repoll set the rsocket behind a descriptor, or the
 * descriptor itself when it is no rsocket.
 *
 * The RDMA stack itself (madcm's librdmacm and libmadcm, libibverbs and
 * its providers, the simulator's libfabsim) waits on its own fds with
 * epoll: its sets stay the kernel's, told apart by the caller of
 * epoll_create (dladdr), or made while a wrapper runs an r* call.  Sets
 * not in the map are the kernel's whoever calls.
 */
#define _GNU_SOURCE /* dladdr, Dl_info */

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "lib/rspreload.h"

#define EXPORT __attribute__((visibility("default")))

/* Whether the code at ret is the RDMA stack's, whose sets stay the kernel's. */
static bool stack_caller(const void *ret)
{
	static const char *const libs[] = {"librdmacm.",  "libmadcm.",	"libfabsim.",
					   "libibverbs.", "libibumad.", "librspreload."};
	const char *base;
	Dl_info info;

	if (in_rs)
		return true;
	if (!dladdr(ret, &info) || !info.dli_fname)
		return false;
	base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strncmp(base, libs[i], strlen(libs[i])))
			return true;
	/* libibverbs' providers: libmlx5-rdmav34.so and the like. */
	return strstr(base, "-rdmav") != NULL;
}

static int make_set(int flags)
{
	int fd, ep, e;

	/* The kernel's set first: it checks flags as epoll_create1 does. */
	fd = real.epoll_create1(flags);
	if (fd < 0)
		return -1;
	ep = RS_CALL(repoll_create(flags & EPOLL_CLOEXEC));
	if (ep < 0 || rsp_map_add(fd, ep, RSFD_EPOLL)) {
		e = ep < 0 ? errno : ENOMEM;
		if (ep >= 0)
			RS_CALL(rclose(ep));
		real.close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

EXPORT int epoll_create1(int flags)
{
	rsp_init();
	if (stack_caller(__builtin_return_address(0)))
		return real.epoll_create1(flags);
	return make_set(flags);
}

EXPORT int epoll_create(int size)
{
	rsp_init();
	if (size <= 0) {
		errno = EINVAL;
		return -1;
	}
	if (stack_caller(__builtin_return_address(0)))
		return real.epoll_create1(0);
	return make_set(0);
}

/* epfd's repoll set, or -1 when it is a kernel set (or no set). */
static int set_of(int epfd)
{
	struct rsfd *e = in_rs ? NULL : rsp_entry(epfd);

	return e && rsfd_state(e) == RSFD_EPOLL ? e->rs : -1;
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct rsfd *e;
	int set, target;

	rsp_init();
	set = set_of(epfd);
	if (set < 0)
		return real.epoll_ctl(epfd, op, fd, event);
	/* An rsocket is watched as itself, a set as its repoll set (EINVAL). */
	target = rsp_rsocket_of(fd);
	if (target < 0) {
		e = rsp_entry(fd);
		target = e && rsfd_state(e) == RSFD_EPOLL ? e->rs : fd;
	}
	return RS_CALL(repoll_ctl(set, op, target, event));
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	int set;

	rsp_init();
	set = set_of(epfd);
	if (set < 0)
		return real.epoll_wait(epfd, events, maxevents, timeout);
	return RS_CALL(repoll_wait(set, events, maxevents, timeout));
}

/*
 * The signal mask is set around the wait, not atomically with it: a
 * signal that arrives just before the wait is handled but does not end it.
 */
EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
		       const sigset_t *sigmask)
{
	sigset_t old;
	int set, r, e;

	rsp_init();
	set = set_of(epfd);
	if (set < 0)
		return real.epoll_pwait(epfd, events, maxevents, timeout, sigmask);
	if (sigmask && pthread_sigmask(SIG_SETMASK, sigmask, &old))
		return -1;
	r = RS_CALL(repoll_wait(set, events, maxevents, timeout));
	e = errno;
	if (sigmask)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return r;
}
