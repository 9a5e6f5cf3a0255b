/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Client side of the fabsim protocol inside a preloaded process: the
 * connection helpers both halves of libfabsim.so use (see client.h).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sim/client.h"

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctl_fd = -1;
static pid_t ctl_pid;
static struct fsp_hello_rep ctl_rep;
static uint32_t next_seq = 1;

FSC_EXPORT const char *fsc_dir(void)
{
	const char *d = getenv("FABSIM_DIR");

	return d && *d ? d : "./fabsim";
}

FSC_EXPORT const char *fsc_host(void)
{
	const char *h = getenv("FABSIM_HOST");

	return h ? h : "";
}

static uint32_t new_seq(void)
{
	uint32_t s = __atomic_add_fetch(&next_seq, 1, __ATOMIC_RELAXED);

	return s ? s : __atomic_add_fetch(&next_seq, 1, __ATOMIC_RELAXED);
}

FSC_EXPORT int fsc_send(int fd, uint16_t type, uint16_t flags, uint32_t seq, int32_t status,
			const void *body, size_t len)
{
	const uint8_t *p = body;
	size_t chunk = FSP_FRAG_MAX - sizeof(struct fsp_hdr);
	int ret = 0;

	if (fd < 0 || (len && !body))
		return -EINVAL;
	if (len > FSP_MSG_MAX)
		return -EMSGSIZE;
	/* fragments of one message must not interleave with another's */
	bool locked = len > chunk;
	int cancel;

	if (locked) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
		pthread_mutex_lock(&send_lock);
	}
	do {
		size_t n = len > chunk ? chunk : len;
		struct fsp_hdr h = {
		    .type = type,
		    .flags = (uint16_t)(flags | (len > chunk ? FSP_F_MORE : 0)),
		    .len = (uint32_t)(sizeof(h) + n),
		    .seq = seq,
		    .status = status,
		};
		struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)p, n}};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = n ? 2 : 1};
		ssize_t r;

		for (;;) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};

			r = sendmsg(fd, &mh, MSG_NOSIGNAL);
			if (r >= 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
				break;
			/* An fd its user made non-blocking (as libibumad opens
			 * umad fds): a umad write never says the queue is
			 * full (the MAD layer keeps what the QP cannot take
			 * yet), so wait for room rather than lose the MAD. */
			if (errno != EINTR)
				poll(&pfd, 1, -1);
		}
		if (r < 0) {
			ret = -errno;
			break;
		}
		p += n;
		len -= n;
	} while (len);
	if (locked) {
		pthread_mutex_unlock(&send_lock);
		pthread_setcancelstate(cancel, NULL);
	}
	return ret;
}

FSC_EXPORT ssize_t fsc_recv(int fd, struct fsp_hdr *hdr, void **body, int timeout_ms)
{
	uint8_t *buf = NULL;
	size_t blen = 0;
	static __thread uint8_t frag[FSP_FRAG_MAX];

	*body = NULL;
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		struct fsp_hdr h;
		ssize_t n;
		int r;

		if (!buf && timeout_ms <= 0) {
			/* a blocking wait, or a look (a non-blocking read(2)
			 * of a umad fd): recv() alone, no poll() round */
			do
				n = recv(fd, frag, sizeof(frag), timeout_ms ? 0 : MSG_DONTWAIT);
			while (n < 0 && errno == EINTR);
			goto got;
		}
		do
			r = poll(&pfd, 1, buf ? -1 : timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r < 0) {
			free(buf);
			return -errno;
		}
		if (r == 0) {
			free(buf);
			return -ETIMEDOUT;
		}
		do
			n = recv(fd, frag, sizeof(frag), MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
	got:
		if (n < 0) {
			if (errno == EAGAIN && !buf) {
				if (timeout_ms == 0) /* a look: empty */
					return -EAGAIN;
				if (timeout_ms < 0) /* someone made the fd non-blocking */
					poll(&pfd, 1, -1);
				continue;
			}
			free(buf);
			return -errno;
		}
		if (n == 0) {
			free(buf);
			return -ECONNRESET;
		}
		if ((size_t)n < sizeof(h)) {
			free(buf);
			return -EPROTO;
		}
		memcpy(&h, frag, sizeof(h));
		if (h.len != (uint32_t)n || blen + (size_t)n > FSP_MSG_MAX) {
			free(buf);
			return -EPROTO;
		}
		uint8_t *nb = realloc(buf, blen + (size_t)n - sizeof(h) + 1);

		if (!nb) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
		memcpy(buf + blen, frag + sizeof(h), (size_t)n - sizeof(h));
		blen += (size_t)n - sizeof(h);
		if (h.flags & FSP_F_MORE)
			continue;
		h.len = (uint32_t)(sizeof(h) + blen);
		*hdr = h;
		if (blen)
			*body = buf;
		else
			free(buf);
		return (ssize_t)blen;
	}
}

FSC_EXPORT int fsc_call_fd(int fd, uint16_t type, const void *req, size_t reqlen, void *rep,
			   size_t *replen)
{
	uint32_t seq = new_seq();
	struct fsp_hdr h;
	void *body;
	ssize_t n;
	int ret = fsc_send(fd, type, 0, seq, 0, req, reqlen);

	if (ret)
		return ret;
	for (;;) {
		n = fsc_recv(fd, &h, &body, 30000);
		if (n < 0)
			return (int)n;
		if ((h.flags & FSP_F_REPLY) && h.seq == seq)
			break;
		free(body); /* not ours: a caller misusing a stream */
	}
	if (rep && replen) {
		size_t c = (size_t)n < *replen ? (size_t)n : *replen;

		if (body)
			memcpy(rep, body, c);
		*replen = c;
	} else if (replen) {
		*replen = 0;
	}
	free(body);
	return h.status;
}

FSC_EXPORT int fsc_open(uint32_t kind, struct fsp_hello_rep *rep)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fsp_hello hello;
	struct fsp_hello_rep r;
	size_t rl = sizeof(r);
	int fd, ret;

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", fsc_dir(), FSP_SOCK_NAME) >=
	    (int)sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	memset(&hello, 0, sizeof(hello));
	hello.version = FSP_VERSION;
	hello.kind = kind;
	hello.pid = getpid();
	snprintf(hello.host, sizeof(hello.host), "%s", fsc_host());
	{
		extern char *program_invocation_short_name;

		snprintf(hello.comm, sizeof(hello.comm), "%s", program_invocation_short_name);
	}
	ret = fsc_call_fd(fd, FSP_HELLO, &hello, sizeof(hello), &r, &rl);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	if (rep)
		*rep = r;
	return fd;
}

static int ctl_get(void)
{
	if (ctl_fd >= 0 && ctl_pid != getpid()) {
		/* forked: the parent's connection is not ours to use */
		close(ctl_fd);
		ctl_fd = -1;
	}
	if (ctl_fd < 0) {
		int fd = fsc_open(FSP_KIND_CTL, &ctl_rep);

		if (fd < 0)
			return fd;
		ctl_fd = fd;
		ctl_pid = getpid();
	}
	return ctl_fd;
}

FSC_EXPORT const struct fsp_hello_rep *fsc_hello(void)
{
	int fd;

	pthread_mutex_lock(&ctl_lock);
	fd = ctl_get();
	pthread_mutex_unlock(&ctl_lock);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	return &ctl_rep;
}

FSC_EXPORT int fsc_call(uint16_t type, const void *req, size_t reqlen, void *rep, size_t *replen)
{
	int fd, ret, cancel;

	/* a thread cancelled inside recv() must not leave the lock held */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	pthread_mutex_lock(&ctl_lock);
	fd = ctl_get();
	if (fd < 0)
		ret = fd;
	else
		ret = fsc_call_fd(fd, type, req, reqlen, rep, replen);
	if (ret == -ECONNRESET || ret == -EPIPE || ret == -EPROTO) {
		close(ctl_fd);
		ctl_fd = -1;
	}
	pthread_mutex_unlock(&ctl_lock);
	pthread_setcancelstate(cancel, NULL);
	return ret;
}
