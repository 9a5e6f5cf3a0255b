/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * librspreload.so's internals shared by its two files: rspreload.c (the
 * wrappers and the descriptor map) and rspreload_fork.c (fork mode,
 * RDMAV_FORK_SAFE).  Nothing here is exported: the module is built with
 * -fvisibility=hidden.
 */
#ifndef LIB_RSPRELOAD_H
#define LIB_RSPRELOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>

/* libc's calls (dlsym(RTLD_NEXT)). */
struct rsp_libc {
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
	ssize_t (*sendfile64)(int, int, __off64_t *, size_t);
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
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
};

extern struct rsp_libc real;

/*
 * What a mapped descriptor is.  Without fork mode every entry is
 * RSFD_RS.  In fork mode (rspreload_fork.c) the program's descriptor is
 * the kernel TCP socket itself until its connection has been converted.
 */
enum rsfd_state {
	RSFD_RS,      /* an rsocket (rs) behind an unconnected kernel socket */
	RSFD_FORK,    /* fork mode: a kernel TCP socket, neither listening nor connected */
	RSFD_LISTEN,  /* fork mode: a kernel TCP listener */
	RSFD_ACTIVE,  /* fork mode: connected by connect(), rsocket made on first use */
	RSFD_PASSIVE, /* fork mode: returned by accept(), rsocket made on first use */
	RSFD_KERNEL,  /* fork mode: conversion failed or refused: stays TCP */
	RSFD_EPOLL,   /* an epoll set: a repoll set (rs) behind a kernel epoll fd */
};

/* One entry, shared by the descriptors dup() made of it. */
struct rsfd {
	int rs;		      /* the rsocket (RSFD_RS) or repoll set (RSFD_EPOLL) */
	int refs;	      /* descriptors naming it (map_lock) */
	int state;	      /* enum rsfd_state, read and written atomically */
	pthread_mutex_t conv; /* one conversion at a time (fork mode) */
};

/* Set while this thread runs an r* call: its own calls go to libc. */
extern __thread bool in_rs;

/* Run an r* call with this thread's libc calls passed through. */
#define RS_CALL(expr)                                                                              \
	({                                                                                         \
		bool was_ = in_rs;                                                                 \
		in_rs = true;                                                                      \
		__typeof__(expr) r_ = (expr);                                                      \
		in_rs = was_;                                                                      \
		r_;                                                                                \
	})

static inline int rsfd_state(const struct rsfd *e)
{
	return __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
}

static inline void rsfd_set_state(struct rsfd *e, int state)
{
	__atomic_store_n(&e->state, state, __ATOMIC_RELEASE);
}

/* ---- rspreload.c, for rspreload_epoll.c ---- */

void rsp_init(void);
/* fd's entry, NULL when fd is none of the map's. */
struct rsfd *rsp_entry(int fd);
/* A new entry for fd: 0, or -1 without memory. */
int rsp_map_add(int fd, int rs, int state);
/* The rsocket behind fd (a fork-mode connection becomes one now), or -1. */
int rsp_rsocket_of(int fd);

/* ---- rspreload_fork.c ---- */

/* Read RDMAV_FORK_SAFE (once, from the module's initialisation). */
void fork_mode_init(void);
/* Whether new TCP sockets start in fork mode. */
bool fork_mode(void);
/*
 * Make the rsocket of a connection in state RSFD_ACTIVE or RSFD_PASSIVE
 * (fd is one of the program's descriptors of e): afterwards e is RSFD_RS,
 * or RSFD_KERNEL when the connection stays TCP.
 */
void fork_convert(int fd, struct rsfd *e);

#endif
