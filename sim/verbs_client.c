/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Minimal fabsimd client for the soft verbs (see verbs_client.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sim/verbs_client.h"

static uint32_t client_seq;

const char *verbs_client_sock_path(char *buf, size_t len)
{
	const char *dir = getenv("FABSIM_DIR");
	int n;

	if (!dir || !*dir)
		return NULL;
	n = snprintf(buf, len, "%s/%s", dir, FSP_SOCK_NAME);
	if (n < 0 || (size_t)n >= len)
		return NULL;
	return buf;
}

int verbs_client_send(int fd, uint16_t type, uint32_t seq, const void *body, size_t len)
{
	struct fsp_hdr h = {.type = type, .seq = seq};
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)body, len}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};

	if (len + sizeof(h) > FSP_FRAG_MAX)
		return -EMSGSIZE;
	h.len = (uint32_t)(sizeof(h) + len);
	for (;;) {
		if (sendmsg(fd, &m, MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int verbs_client_call(int fd, uint16_t type, const void *body, size_t len, void *rep, size_t replen,
		      void (*async_cb)(const struct fsp_hdr *h, const uint8_t *body, size_t len))
{
	uint8_t buf[FSP_FRAG_MAX];
	uint32_t seq = __atomic_add_fetch(&client_seq, 1, __ATOMIC_RELAXED);
	int ret;

	if (!seq)
		seq = __atomic_add_fetch(&client_seq, 1, __ATOMIC_RELAXED);
	ret = verbs_client_send(fd, type, seq, body, len);
	if (ret)
		return ret;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct fsp_hdr h;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		if ((size_t)n < sizeof(h))
			continue;
		memcpy(&h, buf, sizeof(h));
		if (h.len != (size_t)n)
			continue;
		if (!(h.flags & FSP_F_REPLY) || h.seq != seq) {
			if (async_cb)
				async_cb(&h, buf + sizeof(h), n - sizeof(h));
			continue;
		}
		if (rep && replen) {
			size_t got = n - sizeof(h);

			memset(rep, 0, replen);
			memcpy(rep, buf + sizeof(h), got < replen ? got : replen);
		}
		return h.status;
	}
}

int verbs_client_connect(uint32_t kind, struct fsp_hello_rep *rep)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fsp_hello hello = {.version = FSP_VERSION, .kind = kind};
	struct fsp_hello_rep r;
	const char *host = getenv("FABSIM_HOST");
	int fd, ret;

	if (!verbs_client_sock_path(sa.sun_path, sizeof(sa.sun_path)))
		return -ENOENT;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	hello.pid = getpid();
	if (host)
		snprintf(hello.host, sizeof(hello.host), "%s", host);
	snprintf(hello.comm, sizeof(hello.comm), "%s", program_invocation_short_name);
	ret = verbs_client_call(fd, FSP_HELLO, &hello, sizeof(hello), &r, sizeof(r), NULL);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	if (rep)
		*rep = r;
	return fd;
}
