/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * libibumad's calls for an SA client whose port is madcmd's: each opened
 * port is a MAD session (rtproto/rt_proto.h).  The daemon sends the requests
 * from its own agent and returns their responses (RMPP segments
 * included: the transport does RMPP itself) to the session that sent
 * them; so a program needs no access to the umad device.  Port
 * attributes are read as libibumad reads them (sysfs is world-readable).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "rtproto/rt_client.h"

#define MAX_SESSIONS 16

/* One opened port: its socket and one received MAD not yet taken. */
static struct mad_session {
	int fd; /* 0: slot free (fds here are never 0 for long: see open) */
	bool held;
	size_t held_len;
	union {
		struct madcmd_mad m;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
} sessions[MAX_SESSIONS];
static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;

void madcmd_mad_sessions_forked(void)
{
	/* One thread in the child: sessions_lock may be a parent thread's. */
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (sessions[i].fd > 0) {
			close(sessions[i].fd);
			sessions[i].fd = 0;
		}
	sessions_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}

static struct mad_session *session(int portid)
{
	if (portid < 0 || portid >= MAX_SESSIONS || sessions[portid].fd <= 0)
		return NULL;
	return &sessions[portid];
}

static int r_list_cas(void *ctx, char names[][MAD_CA_NAME_MAX], int max)
{
	(void)ctx;
	return mad_umad_real_ops.list_cas(NULL, names, max);
}

static int r_query_port(void *ctx, const char *ca, int port, struct mad_port_attr *out)
{
	(void)ctx;
	return mad_umad_real_ops.query_port(NULL, ca, port, out);
}

static int r_open_port(void *ctx, const char *ca, int port)
{
	int fd = madcmd_session_open(ctx, MADCMD_SESSION_MAD, ca, port, 0, NULL);

	if (fd < 0)
		return fd;
	pthread_mutex_lock(&sessions_lock);
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (sessions[i].fd <= 0) {
			memset(&sessions[i], 0, sizeof(sessions[i]));
			sessions[i].fd = fd;
			pthread_mutex_unlock(&sessions_lock);
			return i;
		}
	pthread_mutex_unlock(&sessions_lock);
	close(fd);
	return -EMFILE;
}

static void r_close_port(void *ctx, int portid)
{
	struct mad_session *s = session(portid);

	(void)ctx;
	if (!s)
		return;
	close(s->fd);
	pthread_mutex_lock(&sessions_lock);
	s->fd = 0;
	pthread_mutex_unlock(&sessions_lock);
}

static int r_get_fd(void *ctx, int portid)
{
	struct mad_session *s = session(portid);

	(void)ctx;
	return s ? s->fd : -EINVAL;
}

/* Wait for the one reply a registration gets (no MAD comes before it). */
static int r_register_agent(void *ctx, int portid, uint8_t mgmt_class, uint8_t class_version,
			    uint8_t rmpp_version, const uint32_t method_mask[4])
{
	struct mad_session *s = session(portid);
	struct madcmd_mad_reg m;
	union {
		struct madcmd_mad_reg_rep r;
		uint8_t b[MADCMD_MSG_MAX];
	} in;
	int rc;

	(void)ctx;
	if (!s)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	madcmd_hdr_init(&m.h, MADCMD_MAD_REG, sizeof(m), 1);
	m.mgmt_class = mgmt_class;
	m.class_version = class_version;
	m.rmpp_version = rmpp_version;
	memcpy(m.method_mask, method_mask, sizeof(m.method_mask));
	rc = madcmd_client_send(s->fd, &m, sizeof(m));
	if (!rc)
		rc = madcmd_client_recv(s->fd, &in, sizeof(in), true);
	if (rc == MADCMD_MAD_REG_REP)
		return in.r.rc;
	return rc < 0 ? rc : -EPROTO;
}

static int r_unregister_agent(void *ctx, int portid, int agent)
{
	(void)ctx;
	(void)agent;
	/* The daemon forgets the session's agent when the session closes. */
	return session(portid) ? 0 : -EINVAL;
}

static int r_send(void *ctx, int portid, int agent, const void *mad, size_t len,
		  const struct mad_addr *dst, unsigned timeout_ms)
{
	struct mad_session *s = session(portid);
	union {
		struct madcmd_mad m;
		uint8_t b[MADCMD_MSG_MAX];
	} out;
	size_t total = sizeof(out.m) + len;

	(void)ctx;
	if (!s || !mad || !dst || len > MADCMD_MAD_MAX || total > sizeof(out))
		return -EINVAL;
	memset(&out.m, 0, sizeof(out.m));
	madcmd_hdr_init(&out.m.h, MADCMD_MAD_SEND, total, 0);
	out.m.agent = agent;
	out.m.timeout_ms = timeout_ms;
	out.m.addr = *dst;
	out.m.len = (uint32_t)len;
	memcpy(out.m.mad, mad, len);
	/*
	 * A full socket waits for the daemon to read (it never waits on a
	 * client, so this cannot deadlock): dropping here would cost the
	 * query a whole retry timeout, as a burst of path queries showed.
	 */
	return madcmd_client_send(s->fd, &out, total);
}

static int r_recv(void *ctx, int portid, void *buf, size_t cap, size_t *len, int *agent,
		  struct mad_addr *src)
{
	struct mad_session *s = session(portid);

	(void)ctx;
	if (!s)
		return -EINVAL;
	while (!s->held) {
		ssize_t n = recv(s->fd, &s->in, sizeof(s->in), MSG_DONTWAIT | MSG_TRUNC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return -EAGAIN;
		if (n <= 0)
			return -ENODEV; /* the daemon is gone: so is this port (stop polling it) */
		if ((size_t)n <= sizeof(s->in) &&
		    madcmd_check(&s->in, (size_t)n) == MADCMD_MAD_RECV) {
			s->held = true;
			s->held_len = s->in.m.len;
		}
		/* Anything else is dropped: only MADs come after the REG_REP. */
	}
	*len = s->held_len;
	if (cap < s->held_len)
		return -ENOSPC;
	memcpy(buf, s->in.m.mad, s->held_len);
	*agent = s->in.m.agent;
	*src = s->in.m.addr;
	s->held = false;
	return 0;
}

const struct mad_umad_ops madcmd_umad_ops = {
    .list_cas = r_list_cas,
    .query_port = r_query_port,
    .open_port = r_open_port,
    .close_port = r_close_port,
    .get_fd = r_get_fd,
    .register_agent = r_register_agent,
    .unregister_agent = r_unregister_agent,
    .send = r_send,
    .recv = r_recv,
};
