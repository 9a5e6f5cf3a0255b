/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Moving packets between simulated ports.
 *
 * Fabric mode (FABSIM_DIR set): one FSP_KIND_STREAM connection to fabsimd
 * per process carries FSP_VERBS_PKT both ways; the daemon routes each
 * packet along the forwarding tables, so link state and faults apply.
 * Where the daemon allows it, packets go from process to process directly
 * instead (cut-through, sim/verbs_direct.c); either way a batch of packets
 * leaves in one message to one place, so a batch ends where the next
 * packet goes elsewhere.
 * Requests (QPN blocks, multicast) are sent by the calling thread, and
 * their replies, which arrive on the same connection, are handed over by
 * the HCA thread that reads it.
 *
 * Standalone mode (no fabric, FABSIM_VERBS_LID set): processes reach each
 * other through datagram sockets in a shared directory, a symlink per QPN
 * block naming the owning process's socket.  No routing: it exists to test
 * the transport logic without a daemon.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "sim/verbs_client.h"
#include "sim/verbs_direct.h"
#include "sim/verbs_priv.h"
#include "sim/verbs_proto.h"

static struct {
	int fd;
	int ep; /* fabric: the epoll set of sim/verbs_direct.c, or -1 */
	bool fabric;
	uint16_t lid;
	/* standalone */
	char dir[80];
	uint32_t sa_cursor; /* next QPN block to try */
	/* fabric: one outstanding call at a time */
	pthread_mutex_t call_lock;
	pthread_mutex_t rep_lock;
	pthread_cond_t rep_cond;
	uint32_t rep_seq;
	bool rep_ready;
	int32_t rep_status;
	uint32_t next_seq;
	/* fabric, under VERBS_LOCK: the FSP_VERBS_PKTS message being taken
	 * apart, and packets being collected for one (tx_depth > 0) */
	uint8_t rx[FSP_VERBS_BATCH_MAX + FSP_VERBS_PKT_MAX + sizeof(struct fsp_hdr)];
	size_t rx_off, rx_len;
	uint8_t tx[FSP_VERBS_BATCH_MAX];
	void *tx_to; /* where the batch goes: a direct peer, or NULL: fabsimd */
	size_t tx_len;
	unsigned int tx_count, tx_depth;
} vt = {
    .fd = -1,
    .ep = -1,
    .call_lock = PTHREAD_MUTEX_INITIALIZER,
    .rep_lock = PTHREAD_MUTEX_INITIALIZER,
    .rep_cond = PTHREAD_COND_INITIALIZER,
};

int verbs_transport_fd(void)
{
	return vt.ep >= 0 ? vt.ep : vt.fd;
}

static int standalone_open(const struct verbs_port_info *pi)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *d = getenv("FABSIM_VERBS_DIR");
	struct timeval tmo = {.tv_sec = 0, .tv_usec = 20000};
	int fd, ret;

	if (d && *d)
		snprintf(vt.dir, sizeof(vt.dir), "%s", d);
	else
		snprintf(vt.dir, sizeof(vt.dir), "/tmp/fabsim-verbs-%u", (unsigned)getuid());
	if (mkdir(vt.dir, 0700) && errno != EEXIST)
		return -errno;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A receiver's queue holds few datagrams (net.unix.max_dgram_qlen):
	 * wait a little for room, as a link waits for credits, but never
	 * forever (two full peers sending to each other would deadlock). */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/v.%d", vt.dir, (int)getpid());
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	vt.fd = fd;
	vt.lid = pi->lid;
	return 0;
}

static void standalone_cleanup(void)
{
	char path[400];
	DIR *d;
	struct dirent *e;
	char self[32];

	if (!vt.dir[0])
		return;
	snprintf(self, sizeof(self), "v.%d", (int)getpid());
	d = opendir(vt.dir);
	while (d && (e = readdir(d))) {
		char tgt[64];
		ssize_t n;

		if (e->d_name[0] != 'b' && e->d_name[0] != 'm')
			continue;
		snprintf(path, sizeof(path), "%s/%s", vt.dir, e->d_name);
		n = readlink(path, tgt, sizeof(tgt) - 1);
		if (n > 0) {
			tgt[n] = 0;
			if (!strcmp(tgt, self))
				unlink(path);
		}
	}
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "%s/%s", vt.dir, self);
	unlink(path);
}

static int fabric_open(void)
{
	struct fsp_port_ref ref = {.ca = 0, .port = 1};
	struct fsp_verbs_open_rep rep;
	int fd, ret;

	fd = verbs_client_connect(FSP_KIND_STREAM, NULL);
	if (fd < 0)
		return fd;
	ret = verbs_client_call(fd, FSP_VERBS_OPEN, &ref, sizeof(ref), &rep, sizeof(rep), NULL);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	vt.fd = fd;
	vt.lid = (uint16_t)rep.lid;
	vt.fabric = true;
	vt.ep = vdirect_open(fd);
	/* The daemon follows the reply with the port's state and MTU; take
	 * it now so the first ibv_query_port already reports them. */
	{
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint8_t buf[64];

		if (poll(&pfd, 1, 1000) == 1) {
			VERBS_LOCK();
			verbs_transport_recv(buf, sizeof(buf));
			VERBS_UNLOCK();
		}
	}
	return 0;
}

int verbs_transport_open(const struct verbs_port_info *pi)
{
	if (vt.fd >= 0)
		return 0;
	if (getenv("FABSIM_DIR"))
		return fabric_open();
	atexit(standalone_cleanup);
	return standalone_open(pi);
}

/* Fabric mode: a request whose reply the HCA thread will hand us. */
static int fabric_call(uint16_t type, const void *body, size_t len)
{
	uint32_t seq;
	int ret;

	pthread_mutex_lock(&vt.call_lock);
	pthread_mutex_lock(&vt.rep_lock);
	seq = ++vt.next_seq;
	if (!seq)
		seq = ++vt.next_seq;
	vt.rep_seq = seq;
	vt.rep_ready = false;
	pthread_mutex_unlock(&vt.rep_lock);
	ret = verbs_client_send(vt.fd, type, seq, body, len);
	pthread_mutex_lock(&vt.rep_lock);
	while (!ret && !vt.rep_ready)
		pthread_cond_wait(&vt.rep_cond, &vt.rep_lock);
	if (!ret)
		ret = vt.rep_status;
	vt.rep_seq = 0;
	pthread_mutex_unlock(&vt.rep_lock);
	pthread_mutex_unlock(&vt.call_lock);
	return ret;
}

static void fabric_gone(void)
{
	/* The daemon went away: fail whoever waits for a reply. */
	pthread_mutex_lock(&vt.rep_lock);
	if (vt.rep_seq) {
		vt.rep_status = -ECONNRESET;
		vt.rep_ready = true;
		pthread_cond_broadcast(&vt.rep_cond);
	}
	pthread_mutex_unlock(&vt.rep_lock);
}

/* The next packet of the FSP_VERBS_PKTS message being taken apart; 0 if
 * none is left. */
static ssize_t rx_next(uint8_t *buf, size_t len)
{
	while (vt.rx_off + sizeof(struct fsp_verbs_rec) <= vt.rx_len) {
		struct fsp_verbs_rec r;
		size_t at = vt.rx_off + sizeof(r);

		memcpy(&r, vt.rx + vt.rx_off, sizeof(r));
		if (!r.len || r.len > vt.rx_len - at)
			break; /* malformed: drop the rest */
		vt.rx_off = at + r.len;
		vt.rx_off = vt.rx_off + 3 < vt.rx_len ? (vt.rx_off + 3) & ~(size_t)3 : vt.rx_len;
		if (r.len > len)
			continue;
		memcpy(buf, vt.rx + at, r.len);
		return r.len;
	}
	vt.rx_off = vt.rx_len = 0;
	return 0;
}

bool verbs_transport_buffered(void)
{
	return vt.rx_off < vt.rx_len;
}

ssize_t verbs_transport_recv(uint8_t *buf, size_t len)
{
	uint8_t *msg = vt.rx;
	struct fsp_hdr h;
	ssize_t n;

	if (vt.fd < 0)
		return -EBADF;
	if (!vt.fabric) {
		n = recv(vt.fd, buf, len, MSG_DONTWAIT);
		return n < 0 ? -errno : n;
	}
	if (vt.rx_off < vt.rx_len)
		return rx_next(buf, len);
	if (vt.ep >= 0) {
		size_t got;

		switch (vdirect_next(vt.rx, sizeof(vt.rx), &got)) {
		case VD_NONE:
			return -EAGAIN;
		case VD_DONE:
			return 0;
		case VD_DATA:
			vt.rx_off = 0;
			vt.rx_len = got;
			return rx_next(buf, len);
		case VD_DAEMON:
			break;
		}
	}
	n = recv(vt.fd, msg, sizeof(vt.rx), MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	if (n == 0) {
		fabric_gone();
		vdirect_daemon_gone();
		return -ECONNRESET;
	}
	if ((size_t)n < sizeof(h))
		return 0;
	memcpy(&h, msg, sizeof(h));
	if (h.len != (size_t)n)
		return 0;
	if (h.flags & FSP_F_REPLY) {
		pthread_mutex_lock(&vt.rep_lock);
		if (vt.rep_seq && h.seq == vt.rep_seq) {
			vt.rep_status = h.status;
			vt.rep_ready = true;
			pthread_cond_broadcast(&vt.rep_cond);
		}
		pthread_mutex_unlock(&vt.rep_lock);
		return 0;
	}
	if (h.type == FSP_VERBS_PORT_EVENT &&
	    (size_t)n >= sizeof(h) + sizeof(struct fsp_verbs_port_event)) {
		struct fsp_verbs_port_event e;

		memcpy(&e, msg + sizeof(h), sizeof(e));
		verbs_port_event(&e);
		return 0;
	}
	if (h.type == FSP_VERBS_ROUTE && (size_t)n >= sizeof(h) + sizeof(struct fsp_verbs_route)) {
		struct fsp_verbs_route r;

		memcpy(&r, msg + sizeof(h), sizeof(r));
		vdirect_grant(&r);
		return 0;
	}
	if (h.type == FSP_VERBS_FENCE) {
		/* Everything the daemon routed here before it has been read
		 * (and handled): say so, the sender may go directly now. */
		(void)verbs_client_send(vt.fd, FSP_VERBS_FENCE, 0, msg + sizeof(h), n - sizeof(h));
		return 0;
	}
	if (h.type == FSP_VERBS_PKTS) {
		vt.rx_off = sizeof(h);
		vt.rx_len = (size_t)n;
		return rx_next(buf, len);
	}
	if (h.type != FSP_VERBS_PKT)
		return 0;
	n -= sizeof(h);
	if ((size_t)n > len)
		return 0;
	memcpy(buf, msg + sizeof(h), n);
	return n;
}

static void standalone_sendto(const char *name, const uint8_t *pkt, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", vt.dir, name);
	/* A missing or dead peer is a lost packet, as on a wire. */
	(void)sendto(vt.fd, pkt, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, sizeof(sa));
}

static void standalone_send(const uint8_t *pkt, size_t len)
{
	struct vpkt p;
	char name[64];

	if (vpkt_decode(pkt, len, &p))
		return;
	if (p.dlid >= VLID_MCAST_MIN && p.dlid != 0xffff) {
		DIR *d = opendir(vt.dir);
		struct dirent *e;
		int plen = snprintf(name, sizeof(name), "m.%u.", p.dlid);

		while (d && (e = readdir(d)))
			if (!strncmp(e->d_name, name, plen))
				standalone_sendto(e->d_name, pkt, len);
		if (d)
			closedir(d);
		return;
	}
	snprintf(name, sizeof(name), "b.%u.%u", p.dlid, p.dqpn / FSP_VERBS_QPN_BLOCK_SIZE);
	standalone_sendto(name, pkt, len);
}

static int tx_flush(void)
{
	int ret = 0;

	if (vt.tx_count && vt.tx_to) {
		ret = vdirect_send(vt.tx_to, vt.tx, vt.tx_len);
	} else if (vt.tx_count == 1) { /* the plain form, for a lone packet */
		struct fsp_verbs_rec r;

		memcpy(&r, vt.tx, sizeof(r));
		ret = verbs_client_send(vt.fd, FSP_VERBS_PKT, 0, vt.tx + sizeof(r), r.len);
	} else if (vt.tx_count)
		ret = verbs_client_send(vt.fd, FSP_VERBS_PKTS, 0, vt.tx, vt.tx_len);
	vt.tx_len = vt.tx_count = 0;
	return ret;
}

/* Packets sent between begin and end leave in one message (fabric mode):
 * one wakeup of the receiver for them all.  Nests; under VERBS_LOCK. */
void verbs_transport_batch_begin(void)
{
	vt.tx_depth++;
}

void verbs_transport_batch_end(void)
{
	if (vt.tx_depth && !--vt.tx_depth && vt.fd >= 0)
		tx_flush();
}

int verbs_transport_send(const uint8_t *pkt, size_t len)
{
	struct fsp_verbs_rec r = {.len = (uint16_t)len};
	size_t space = FSP_VERBS_REC_SPACE(len);
	void *to;
	int ret;

	if (vt.fd < 0)
		return -EBADF;
	if (!vt.fabric) {
		standalone_send(pkt, len);
		return 0;
	}
	if (space > sizeof(vt.tx))
		return -EMSGSIZE;
	to = vdirect_route(pkt, len);
	/* A batch goes to one place; keep the order of what was sent. */
	if (vt.tx_count && (to != vt.tx_to || vt.tx_len + space > sizeof(vt.tx)) &&
	    (ret = tx_flush()))
		return ret;
	vt.tx_to = to;
	memcpy(vt.tx + vt.tx_len, &r, sizeof(r));
	memcpy(vt.tx + vt.tx_len + sizeof(r), pkt, len);
	memset(vt.tx + vt.tx_len + sizeof(r) + len, 0, space - sizeof(r) - len);
	vt.tx_len += space;
	vt.tx_count++;
	return vt.tx_depth ? 0 : tx_flush();
}

/* The process exits: a batch being collected and the packets cut-through
 * holds leave now.  Under VERBS_LOCK. */
void verbs_transport_exit(void)
{
	if (vt.fd < 0 || !vt.fabric)
		return;
	if (vt.tx_count)
		(void)tx_flush();
	if (vt.ep >= 0)
		vdirect_exit();
}

static int link_alive(const char *path)
{
	char tgt[64];
	ssize_t n = readlink(path, tgt, sizeof(tgt) - 1);
	int pid;

	if (n <= 0)
		return 0;
	tgt[n] = 0;
	if (sscanf(tgt, "v.%d", &pid) != 1)
		return 0;
	return kill(pid, 0) == 0 || errno == EPERM;
}

int verbs_transport_qpn_block(uint32_t *base)
{
	char path[128], tgt[32];
	uint32_t nblocks = (VQPN_MCAST + 1) / FSP_VERBS_QPN_BLOCK_SIZE;
	uint32_t b, i;
	int ret;

	if (vt.fd < 0)
		return -EBADF;
	if (vt.fabric) {
		ret = fabric_call(FSP_VERBS_QPN_BLOCK, NULL, 0);
		if (ret < 0)
			return ret;
		*base = (uint32_t)ret;
		return 0;
	}
	snprintf(tgt, sizeof(tgt), "v.%d", (int)getpid());
	/* Round-robin from where the last one was found, as fabsimd does. */
	if (!vt.sa_cursor)
		vt.sa_cursor = (uint32_t)(getpid() * 7919u) % nblocks;
	b = vt.sa_cursor;
	for (i = 0; i < nblocks; i++, b = (b + 1) % nblocks) {
		/* Block 0 holds QP0/QP1; the last block holds 0xffffff. */
		if (b == 0 || b == nblocks - 1)
			continue;
		snprintf(path, sizeof(path), "%s/b.%u.%u", vt.dir, vt.lid, b);
		if (!symlink(tgt, path)) {
			vt.sa_cursor = (b + 1) % nblocks;
			*base = b * FSP_VERBS_QPN_BLOCK_SIZE;
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
		if (!link_alive(path))
			unlink(path);
	}
	return -ENOSPC;
}

void verbs_transport_qpn_release(uint32_t base)
{
	struct fsp_verbs_qpn_release r = {.base = base};
	char path[128];

	if (vt.fd < 0)
		return;
	if (vt.fabric) {
		/* One-way: the daemon handles it before anything sent later,
		 * such as the request for the next block. */
		(void)verbs_client_send(vt.fd, FSP_VERBS_QPN_RELEASE, 0, &r, sizeof(r));
		return;
	}
	snprintf(path, sizeof(path), "%s/b.%u.%u", vt.dir, vt.lid, base / FSP_VERBS_QPN_BLOCK_SIZE);
	unlink(path);
}

int verbs_transport_mcast(uint16_t mlid, const uint8_t *mgid, bool join)
{
	struct fsp_verbs_mcast m = {.mlid = mlid, .join = join};
	char path[128], tgt[32];

	if (vt.fd < 0)
		return -EBADF;
	if (vt.fabric) {
		memcpy(m.mgid, mgid, 16);
		return fabric_call(FSP_VERBS_MCAST, &m, sizeof(m));
	}
	snprintf(tgt, sizeof(tgt), "v.%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/m.%u.%d", vt.dir, mlid, (int)getpid());
	if (join) {
		if (symlink(tgt, path) && errno != EEXIST)
			return -errno;
	} else {
		unlink(path);
	}
	return 0;
}
