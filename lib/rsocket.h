/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * lib/rsocket.c <-> lib/rpoll.c: what rpoll needs to know of an rsocket.
 *
 * An rsocket's descriptor is the fd of its own rdma_cm event channel, so
 * it never collides with another open file; rs_is_rsocket() tells the two
 * kinds apart.
 */
#ifndef MADCM_LIB_RSOCKET_H
#define MADCM_LIB_RSOCKET_H

#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

bool rs_is_rsocket(int fd);
/*
 * Make progress on rsocket fd without blocking (CM events, completions,
 * credits) and return the poll events (of `events`, plus POLLHUP/POLLERR)
 * that hold now; POLLNVAL if fd is not an rsocket.
 */
short rs_poll_check(int fd, short events);
/*
 * Prepare to sleep on fd: request completion events, check once more.
 * Returns the events that hold (then do not sleep), else 0 and fills
 * out[0..*n) (*n <= 3) with the fds to wait on for POLLIN.
 */
short rs_poll_arm(int fd, short events, struct pollfd *out, int *n);
/* After a sleep: consume the completion events of fd's CQ. */
void rs_poll_drain(int fd);

/*
 * lib/rsocket_conf.c: rdma-core's tuning files (/etc/rdma/rsocket/NAME),
 * read at the first call.  polling_time_us and wake_up_interval_ms are -1
 * when their file is absent (madcm's own spin times and sleeps then); the
 * others hold rdma-core's defaults unless a file says otherwise.
 */
struct rs_conf {
	long long polling_time_us;
	long long wake_up_interval_ms;
	unsigned mem, wmem;
	unsigned sqsize, rqsize, inline_size, iomap_size;
};
const struct rs_conf *rs_conf(void);

/*
 * lib/rsocket.c <-> lib/repoll.c: a repoll set's descriptor is no
 * rsocket; rclose() of one frees the set (0, or -1 with errno).
 */
bool repoll_is_set(int fd);
int repoll_close(int epfd);

/*
 * lib/rsocket.c <-> lib/rsocket_keepalive.c: SO_KEEPALIVE's service thread
 * calls rs_keepalive_send(fd) every interval_s seconds until
 * rs_keepalive_del(fd), which returns once no such call runs.  Neither is
 * called with an rsocket's lock held.
 */
int rs_keepalive_set(int fd, unsigned interval_s); /* 0 or -errno */
void rs_keepalive_del(int fd);
void rs_keepalive_send(int fd);

/*
 * lib/rsocket.c <-> lib/rsocket_dgram.c: datagram rsockets have a table of
 * their own; the calls of rdma/rsocket.h hand a descriptor to ds_* when
 * ds_is_dgram() says it is one.  Each ds_* call returns what the rsocket
 * call returns, with errno set.
 */
bool ds_is_dgram(int fd);
int ds_socket(int domain, int protocol);
int ds_bind(int fd, const struct sockaddr *addr, socklen_t len);
int ds_connect(int fd, const struct sockaddr *addr, socklen_t len);
ssize_t ds_sendmsg(int fd, const struct iovec *iov, int iovcnt, int flags,
		   const struct sockaddr *to, socklen_t tolen);
/* *msg_flags (may be NULL) gets MSG_TRUNC when the datagram did not fit. */
ssize_t ds_recvmsg(int fd, const struct iovec *iov, int iovcnt, int flags, struct sockaddr *from,
		   socklen_t *fromlen, int *msg_flags);
int ds_shutdown(int fd, int how);
int ds_close(int fd);
int ds_getpeername(int fd, struct sockaddr *addr, socklen_t *len);
int ds_getsockname(int fd, struct sockaddr *addr, socklen_t *len);
int ds_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int ds_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int ds_fcntl(int fd, int cmd, int arg);
short ds_poll_check(int fd, short events);
short ds_poll_arm(int fd, short events, struct pollfd *out, int *n);
void ds_poll_drain(int fd);

#endif
