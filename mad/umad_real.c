/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* mad_umad_ops over Debian's libibumad (or anything preloaded in its place). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <infiniband/umad.h>

#include "mad/umad_ops.h"
#include "mad/mad_wire.h"
#include "mad/umad_qp.h"
#include "mad/umad_tx.h"

/* umad_init() once per process; later calls are cheap no-ops. */
static int real_init(void)
{
	static int done, rc;

	if (!done) {
		rc = umad_init() < 0 ? -EIO : 0;
		done = 1;
	}
	return rc;
}

static int real_list_cas(void *ctx, char names[][MAD_CA_NAME_MAX], int max)
{
	char cas[MAD_MAX_CAS][UMAD_CA_NAME_LEN];
	int n;

	(void)ctx;
	if (!names || max <= 0)
		return -EINVAL;
	if (real_init())
		return -EIO;
	n = umad_get_cas_names(cas, MAD_MAX_CAS);
	if (n < 0)
		return n;
	if (n > max)
		n = max;
	for (int i = 0; i < n; i++) {
		snprintf(names[i], MAD_CA_NAME_MAX, "%.*s", MAD_CA_NAME_MAX - 1, cas[i]);
	}
	return n;
}

static int real_query_port(void *ctx, const char *ca, int port, struct mad_port_attr *out)
{
	umad_port_t p;
	umad_ca_t c;
	uint64_t prefix, guid;
	int rc;

	(void)ctx;
	if (!out)
		return -EINVAL;
	if (real_init())
		return -EIO;
	memset(out, 0, sizeof(*out));
	rc = umad_get_port(ca, port, &p);
	if (rc < 0)
		return rc;
	snprintf(out->ca_name, MAD_CA_NAME_MAX, "%.*s", MAD_CA_NAME_MAX - 1, p.ca_name);
	out->portnum = p.portnum;
	out->lid = (uint16_t)p.base_lid;
	out->lmc = (uint8_t)p.lmc;
	out->sm_lid = (uint16_t)p.sm_lid;
	out->sm_sl = (uint8_t)p.sm_sl;
	out->state = (uint8_t)p.state;
	prefix = p.gid_prefix;
	guid = p.port_guid;
	memcpy(out->gid, &prefix, 8); /* both already in network order */
	memcpy(out->gid + 8, &guid, 8);
	out->pkey0 = (p.pkeys_size && p.pkeys) ? p.pkeys[0] : 0xffff;
	umad_release_port(&p);
	if (umad_get_ca(out->ca_name, &c) == 0) {
		out->numports = (unsigned)c.numports;
		umad_release_ca(&c);
	}
	return 0;
}

/*
 * RoCE: the source GID index of a GRH.  The CM engine addresses its MADs
 * by GIDs only (gid_index 0); on an Ethernet port index 0 is the
 * link-local GID, from which the kernel cannot send to an IPv4-mapped
 * DGID (umad write fails with EIO).  So, as the kernel's cma picks the
 * GID of the route, pick from the port's GID table (sysfs) the GID that
 * suits the destination: IPv4-mapped for IPv4-mapped, link-local for
 * link-local, the same /64 prefix else; RoCE v2 first.  Per umad port id.
 */
#define ROCE_PORTS 16
#define ROCE_CACHE 8
static struct roce_port {
	int portid;	      /* -1: slot free */
	bool ethernet;	      /* false: an InfiniBand port here only for its tx (MADCM_UMAD_TX) */
	struct umad_tx *tx;   /* the port's write queue (umad_tx.h), or NULL */
	_Atomic pid_t tx_pid; /* the process whose writer thread tx has */
	struct umad_qp *qp;   /* Ethernet: the UD QP its CM MADs leave from (umad_qp.h), or NULL */
	_Atomic bool release; /* tx is threadless: written by real_released() */
	unsigned busy;	      /* threads in real_released() with tx */
	pthread_cond_t idle;  /* busy went to 0 */
	char ca[UMAD_CA_NAME_LEN];
	int port;
	pthread_mutex_t lock;
	struct {
		uint8_t dgid[16];
		uint8_t index;
	} cache[ROCE_CACHE];
	unsigned ncache, next;
} roce_ports[ROCE_PORTS];
static pthread_once_t roce_once = PTHREAD_ONCE_INIT;
static _Atomic unsigned release_ports; /* ports with a threadless queue */
/* Slots in use: none on an InfiniBand port written in place, the usual case. */
static _Atomic unsigned roce_used;
/* The process whose writer threads the queues have (not a forked child). */
static _Atomic pid_t queues_pid;

static void roce_init(void)
{
	for (int i = 0; i < ROCE_PORTS; i++) {
		roce_ports[i].portid = -1;
		pthread_mutex_init(&roce_ports[i].lock, NULL);
		pthread_cond_init(&roce_ports[i].idle, NULL);
	}
}

static int read_small(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		n--;
	buf[n] = '\0';
	return 0;
}

static bool v4mapped(const uint8_t *g)
{
	static const uint8_t pfx[12] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(g, pfx, 12);
}

static bool linklocal(const uint8_t *g)
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

/* How well local GID g suits dgid (0: not at all), RoCE v2 first. */
static int gid_score(const uint8_t *g, const uint8_t *dgid, bool v2)
{
	int s;

	if (v4mapped(dgid))
		s = v4mapped(g) ? 2 : 0;
	else if (v4mapped(g))
		s = 0;
	else if (linklocal(dgid))
		s = linklocal(g) ? 2 : 0;
	else if (!memcmp(g, dgid, 8))
		s = 3;
	else
		s = linklocal(g) ? 0 : 1;
	return s ? 2 * s + v2 : 0;
}

static int roce_pick(const struct roce_port *r, const uint8_t *dgid)
{
	static const uint8_t zero[16];
	char path[256], line[64];
	int best = -1, bs = 0;
	unsigned empty = 0;

	for (unsigned i = 0; i < 4096 && empty < 64; i++) {
		uint8_t g[16];
		int s, k = 0;

		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gids/%u", r->ca,
			 r->port, i);
		if (read_small(path, line, sizeof(line)))
			break;
		if (inet_pton(AF_INET6, line, g) != 1 || !memcmp(g, zero, 16)) {
			/* sysfs writes all eight groups with leading zeros: inet_pton reads it. */
			empty++;
			continue;
		}
		empty = 0;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%u",
			 r->ca, r->port, i);
		if (read_small(path, line, sizeof(line)))
			continue;
		k = strstr(line, "v2") != NULL;
		s = gid_score(g, dgid, k);
		if (s > bs) {
			bs = s;
			best = (int)i;
		}
	}
	return best;
}

/*
 * Ports whose fd is non-blocking (libibumad opens /dev/infiniband/umad*
 * so): read at once, EAGAIN when empty, with no poll(2) before each MAD.
 * A real fd opened blocking (an older libibumad, an emulation on a
 * socket) is made non-blocking here, since every read of ours is a look
 * (timeout 0); an fd fcntl(2) does not know (ibsim's umad2sim fakes its
 * numbers) is polled first.
 */
#define NONBLOCK_FDS 1024
static _Atomic bool fd_nonblock[NONBLOCK_FDS];

static void note_nonblock(int portid, bool open)
{
	int fd = umad_get_fd(portid), fl = open && fd >= 0 ? fcntl(fd, F_GETFL) : -1;

	if (fl >= 0 && !(fl & O_NONBLOCK) && !fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		fl |= O_NONBLOCK;
	if (fd >= 0 && fd < NONBLOCK_FDS)
		fd_nonblock[fd] = fl >= 0 && (fl & O_NONBLOCK);
}

/*
 * How a port's MADs are written (umad_tx.h): MADCM_UMAD_TX=thread (a
 * writer thread) or =release (by the thread that gives the loop up) for
 * every port, =sync for none (in place, holding the loop), else (auto)
 * the Ethernet ports, whose umad writes sleep in the kernel, get a
 * thread on a host with more than one CPU online.  On one CPU the sleep
 * is the kworker using that CPU: nothing overlaps it, and the hop to the
 * writer costs two context switches per MAD (measured slower,
 * docs/results/kernel-bed.md).
 */
enum tx_mode { TX_AUTO, TX_THREAD, TX_RELEASE, TX_SYNC };

static enum tx_mode tx_mode(void)
{
	const char *v = getenv("MADCM_UMAD_TX");

	if (v && !strcmp(v, "thread"))
		return TX_THREAD;
	if (v && !strcmp(v, "release"))
		return TX_RELEASE;
	if (v && !strcmp(v, "sync"))
		return TX_SYNC;
	return TX_AUTO;
}

/*
 * MADCM_MAD_SEND=qp: CM MADs on an Ethernet port leave from a UD QP of
 * ours (umad_qp.h).  Asked for only: it puts a source QP other than 1 on
 * the wire, where a kernel CM always sends from QP1 (on the one-vCPU RoCE
 * guests it is faster: docs/results/kernel-bed.md).
 */
static bool qp_send_wanted(void)
{
	const char *v = getenv("MADCM_MAD_SEND");

	return v && !strcmp(v, "qp");
}

static int tx_write(void *ctx, int portid, int agent, void *umad, int len, int timeout_ms)
{
	int rc;

	(void)ctx;
	errno = 0;
	rc = umad_send(portid, agent, umad, len, timeout_ms, 0);
	return rc < 0 ? (errno ? -errno : -EIO) : 0;
}

static struct umad_tx *tx_for(int portid, bool threadless)
{
	struct umad_tx_params tp = {0};
	struct umad_tx *tx;

	tp.portid = portid;
	tp.hdr_size = umad_size();
	tp.write = tx_write;
	tp.threadless = threadless;
	return umad_tx_create(&tx, &tp) ? NULL : tx; /* NULL: write in place */
}

static int real_open_port(void *ctx, const char *ca, int port)
{
	char path[160], ll[32];
	enum tx_mode mode;
	umad_port_t p;
	bool eth;
	int id;

	(void)ctx;
	if (real_init())
		return -EIO;
	id = umad_open_port(ca, port);
	if (id < 0)
		return id;
	note_nonblock(id, true);
	pthread_once(&roce_once, roce_init);
	if (umad_get_port(ca, port, &p) < 0)
		return id;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/link_layer", p.ca_name,
		 p.portnum);
	eth = !read_small(path, ll, sizeof(ll)) && !strcmp(ll, "Ethernet");
	mode = tx_mode();
	if (mode == TX_AUTO && sysconf(_SC_NPROCESSORS_ONLN) < 2)
		mode = TX_SYNC;
	if (eth || mode == TX_THREAD || mode == TX_RELEASE) {
		struct umad_tx *tx = mode == TX_SYNC ? NULL : tx_for(id, mode == TX_RELEASE);
		struct umad_qp *qp =
		    eth && qp_send_wanted() ? umad_qp_open(p.ca_name, p.portnum, 0) : NULL;

		for (int i = 0; i < ROCE_PORTS; i++) {
			struct roce_port *r = &roce_ports[i];

			pthread_mutex_lock(&r->lock);
			if (r->portid < 0) {
				r->portid = id;
				roce_used++;
				r->ethernet = eth;
				r->tx = tx;
				if (tx)
					queues_pid = r->tx_pid = getpid();
				r->qp = qp;
				qp = NULL;
				r->release = tx && mode == TX_RELEASE;
				if (r->release)
					release_ports++;
				tx = NULL;
				snprintf(r->ca, sizeof(r->ca), "%s", p.ca_name);
				r->port = p.portnum;
				r->ncache = r->next = 0;
				pthread_mutex_unlock(&r->lock);
				break;
			}
			pthread_mutex_unlock(&r->lock);
		}
		umad_tx_destroy(tx); /* no slot left: write in place */
		umad_qp_close(qp);
	}
	umad_release_port(&p);
	return id;
}

/* The source GID index for a GRH to dgid on umad port id portid. */
static uint8_t roce_sgid_index(int portid, const uint8_t *dgid, uint8_t given)
{
	if (given)
		return given; /* a reply: the index the kernel gave the request */
	pthread_once(&roce_once, roce_init);
	for (int i = 0; i < ROCE_PORTS; i++) {
		struct roce_port *r = &roce_ports[i];
		int idx;

		if (r->portid != portid || !r->ethernet)
			continue;
		pthread_mutex_lock(&r->lock);
		for (unsigned c = 0; c < r->ncache; c++)
			if (!memcmp(r->cache[c].dgid, dgid, 16)) {
				idx = r->cache[c].index;
				pthread_mutex_unlock(&r->lock);
				return (uint8_t)idx;
			}
		idx = roce_pick(r, dgid);
		if (idx > 0) {
			unsigned c = r->ncache < ROCE_CACHE ? r->ncache++ : r->next++ % ROCE_CACHE;

			memcpy(r->cache[c].dgid, dgid, 16);
			r->cache[c].index = (uint8_t)idx;
		}
		pthread_mutex_unlock(&r->lock);
		return idx > 0 ? (uint8_t)idx : 0;
	}
	return 0;
}

static void real_close_port(void *ctx, int portid)
{
	struct umad_tx *tx = NULL;
	struct umad_qp *qp = NULL;

	(void)ctx;
	pthread_once(&roce_once, roce_init);
	for (int i = 0; i < ROCE_PORTS; i++) {
		struct roce_port *r = &roce_ports[i];

		pthread_mutex_lock(&r->lock);
		if (r->portid == portid) {
			r->portid = -1;
			roce_used--;
			tx = r->tx;
			r->tx = NULL;
			qp = r->qp;
			r->qp = NULL;
			if (r->release)
				release_ports--;
			r->release = false;
			while (r->busy) /* a releaser still writing from tx */
				pthread_cond_wait(&r->idle, &r->lock);
		}
		pthread_mutex_unlock(&r->lock);
	}
	umad_tx_destroy(tx); /* what is queued leaves first (a REJ, a DREQ) */
	umad_qp_close(qp);
	note_nonblock(portid, false);
	umad_close_port(portid);
}

/*
 * At exit, what the write queues still hold leaves before the process
 * goes.  A program's last MADs are sent just before it returns from main:
 * the DREPs answering its peer's DREQs (rdma_disconnect on DISCONNECTED),
 * a DREQ from rdma_disconnect or rdma_destroy_id.  Written in place they
 * are in the kernel when the call returns, as the kernel's CM queues its
 * own; left in a queue they would die with the writer thread, and the peer
 * would wait for its DREQ's timeout (about 100 s with the kernel's
 * defaults).  Each port gets a bound, so a write that never returns cannot
 * hang the exit.  A port being closed meanwhile waits for its lock.  A
 * forked child has the queues' memory but not their threads (nor, maybe,
 * free locks): it leaves them alone.
 */
#define EXIT_FLUSH_MS 2000

__attribute__((destructor)) static void flush_at_exit(void)
{
	pid_t me = getpid();

	if (queues_pid != me)
		return;
	for (int i = 0; i < ROCE_PORTS; i++) {
		struct roce_port *r = &roce_ports[i];

		/* A fork()ed child that opened queues of its own skips its
		 * parent's, and their locks (maybe a parent thread's). */
		if (r->tx_pid != me)
			continue;
		pthread_mutex_lock(&r->lock);
		if (r->portid >= 0 && r->tx)
			umad_tx_flush_timed(r->tx, EXIT_FLUSH_MS);
		pthread_mutex_unlock(&r->lock);
	}
}

/* The write queue of umad port portid, if it has one. */
static struct umad_tx *port_tx(int portid)
{
	struct umad_tx *tx = NULL;

	if (!roce_used)
		return NULL; /* every send asks: no scan of the empty slots */
	for (int i = 0; i < ROCE_PORTS; i++) {
		struct roce_port *r = &roce_ports[i];

		if (r->portid != portid)
			continue;
		pthread_mutex_lock(&r->lock);
		if (r->portid == portid)
			tx = r->tx;
		pthread_mutex_unlock(&r->lock);
		break;
	}
	return tx;
}

/* Post through port portid's UD QP: 0 if sent, else write it to umad. */
static int qp_send(int portid, const void *mad, size_t len, const struct mad_addr *dst,
		   uint8_t sgid_index)
{
	int rc = -ENOENT;

	for (int i = 0; i < ROCE_PORTS; i++) {
		struct roce_port *r = &roce_ports[i];

		if (r->portid != portid)
			continue;
		/* Held across the post: a close waits for it before freeing qp. */
		pthread_mutex_lock(&r->lock);
		if (r->portid == portid && r->qp)
			rc = umad_qp_send(r->qp, mad, len, dst, sgid_index);
		pthread_mutex_unlock(&r->lock);
		break;
	}
	return rc;
}

static int real_get_fd(void *ctx, int portid)
{
	(void)ctx;
	return umad_get_fd(portid);
}

static int real_register(void *ctx, int portid, uint8_t mgmt_class, uint8_t class_version,
			 uint8_t rmpp_version, const uint32_t method_mask[4])
{
	/* libibumad takes the mask as an array of longs, bit m = method m. */
	long mask[16 / sizeof(long)];

	(void)ctx;
	memset(mask, 0, sizeof(mask));
	for (unsigned m = 0; m < 128; m++)
		if (method_mask[m / 32] & (1u << (m % 32)))
			mask[m / (8 * sizeof(long))] |= 1l << (m % (8 * sizeof(long)));
	return umad_register(portid, mgmt_class, class_version, rmpp_version, mask);
}

static int real_unregister(void *ctx, int portid, int agent)
{
	(void)ctx;
	return umad_unregister(portid, agent);
}

static int real_send(void *ctx, int portid, int agent, const void *mad, size_t len,
		     const struct mad_addr *dst, unsigned timeout_ms)
{
	size_t sz = umad_size() + len;
	char buf[sizeof(struct ib_user_mad) + 2048] __attribute__((aligned(8)));
	void *umad = buf;
	struct umad_tx *tx;

	(void)ctx;
	if (!mad || !dst || len == 0 || len > 2048)
		return -EINVAL;
	memset(umad, 0, sz);
	memcpy(umad_get_mad(umad), mad, len);
	umad_set_addr(umad, dst->lid, (int)dst->qpn, dst->sl, (int)dst->qkey);
	umad_set_pkey(umad, dst->pkey_index);
	if (dst->grh_present) {
		/*
		 * Filled in place: libibumad 44's umad_set_grh() does not copy
		 * gid_index, and a GRH from index 0 to an IPv4-mapped GID fails.
		 */
		ib_mad_addr_t *a = umad_get_mad_addr(umad);

		a->grh_present = 1;
		memcpy(a->gid, dst->gid, 16);
		a->gid_index = roce_sgid_index(portid, dst->gid, dst->gid_index);
		a->hop_limit = dst->hop_limit;
		a->traffic_class = dst->traffic_class;
		a->flow_label = htonl(dst->flow_label);
	}
	/* A CM MAD on RoCE: from our UD QP, with a cached address handle. */
	if (dst->grh_present && ((const uint8_t *)mad)[1] == MAD_CLASS_CM &&
	    qp_send(portid, mad, len, dst, umad_get_mad_addr(umad)->gid_index) == 0)
		return 0;
	/* On a port whose writes sleep, its queue takes it (umad_tx.h). */
	tx = len <= UMAD_TX_MAD_MAX ? port_tx(portid) : NULL;
	if (tx)
		return umad_tx_queue(tx, agent, umad, (int)len, timeout_ms);
	/* Retries are the transport's own (same TID); the kernel never resends. */
	return tx_write(NULL, portid, agent, umad, (int)len, (int)timeout_ms);
}

/*
 * What umad_recv() reads into: the ib_user_mad header and up to 64 KiB of
 * MAD (an RMPP answer the kernel reassembled).  One per thread, as the
 * loop's thread and an application thread holding the loop may read two
 * ports at once, but heap taken on first use, not a __thread array: that
 * would take 64 KiB from every thread of the program, madcm's or not, and
 * a block that big cannot come from glibc's static TLS, which an
 * initial-exec variable beside it would ask for (docs/architecture.md).
 * Every buffer is also on one list, so that a fork()ed child, which has
 * its parent's buffers but not the threads whose keys pointed to them,
 * still reaches them (LeakSanitizer); the library is never unloaded (-z
 * nodelete), so the key's destructor may be its own.
 */
#define UBUF_SIZE (sizeof(struct ib_user_mad) + 65536)
struct ubuf {
	struct ubuf *prev, *next;
	_Alignas(8) char data[UBUF_SIZE];
};
static pthread_key_t ubuf_key;
static pthread_once_t ubuf_once = PTHREAD_ONCE_INIT;
static bool ubuf_key_ok;
static pthread_mutex_t ubuf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ubuf *ubufs;

static void ubuf_release(void *p)
{
	struct ubuf *u = p;

	pthread_mutex_lock(&ubuf_lock);
	if (u->prev)
		u->prev->next = u->next;
	else
		ubufs = u->next;
	if (u->next)
		u->next->prev = u->prev;
	pthread_mutex_unlock(&ubuf_lock);
	free(u);
}

/* fork() takes the list's lock, so that a child's copy of it is free. */
static void ubuf_fork_prepare(void)
{
	pthread_mutex_lock(&ubuf_lock);
}

static void ubuf_fork_done(void)
{
	pthread_mutex_unlock(&ubuf_lock);
}

static void ubuf_key_create(void)
{
	ubuf_key_ok = pthread_key_create(&ubuf_key, ubuf_release) == 0 &&
		      pthread_atfork(ubuf_fork_prepare, ubuf_fork_done, ubuf_fork_done) == 0;
}

/* This thread's receive buffer, or NULL (out of memory). */
static char *thread_ubuf(void)
{
	struct ubuf *u;

	pthread_once(&ubuf_once, ubuf_key_create);
	if (!ubuf_key_ok)
		return NULL;
	u = pthread_getspecific(ubuf_key);
	if (u)
		return u->data;
	u = malloc(sizeof(*u));
	if (!u)
		return NULL;
	pthread_mutex_lock(&ubuf_lock);
	u->prev = NULL;
	u->next = ubufs;
	if (ubufs)
		ubufs->prev = u;
	ubufs = u;
	pthread_mutex_unlock(&ubuf_lock);
	if (pthread_setspecific(ubuf_key, u)) {
		ubuf_release(u);
		return NULL;
	}
	return u->data;
}

/*
 * exit() runs no key destructor for its own thread (main's, usually):
 * that thread's buffer goes here, as the library is unloaded.
 */
__attribute__((destructor)) static void ubuf_free_at_exit(void)
{
	struct ubuf *u = ubuf_key_ok ? pthread_getspecific(ubuf_key) : NULL;

	if (u) {
		pthread_setspecific(ubuf_key, NULL);
		ubuf_release(u);
	}
}

static int real_recv(void *ctx, int portid, void *buf, size_t cap, size_t *len, int *agent,
		     struct mad_addr *src)
{
	char *ubuf = thread_ubuf();
	struct pollfd pfd;
	ib_mad_addr_t *a;
	int length = 65536, rc;
	bool nonblock;

	(void)ctx;
	if (!ubuf)
		return -ENOMEM;
	/*
	 * umad_recv() with a zero timeout reads without polling; on a
	 * blocking fd that would stall the progress loop: look first there.
	 */
	pfd.fd = umad_get_fd(portid);
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (pfd.fd < 0)
		return -EBADF;
	nonblock = pfd.fd < NONBLOCK_FDS && fd_nonblock[pfd.fd];
	for (;;) {
		if (!nonblock && poll(&pfd, 1, 0) <= 0)
			return -EAGAIN;
		errno = 0;
		length = 65536;
		rc = umad_recv(portid, ubuf, &length, 0);
		if (rc < 0 && (rc == -ENOSPC || errno == ENOSPC))
			return -EIO;
		if (rc < 0 && nonblock &&
		    (errno == EAGAIN || errno == EWOULDBLOCK || rc == -EAGAIN || rc == -ETIMEDOUT))
			return -EAGAIN; /* empty */
		/*
		 * Nothing to read from a hung-up or failed fd: the device is
		 * gone (removed, or its driver died); say so, or a caller that
		 * polls it again would spin on it for ever.
		 */
		if (rc < 0 && nonblock && poll(&pfd, 1, 0) < 0)
			return -EAGAIN;
		if (rc < 0)
			return pfd.revents & (POLLHUP | POLLERR | POLLNVAL) ? -ENODEV : -EAGAIN;
		/* A send completion (kernel timeout): our own timer handles it. */
		if (umad_status(ubuf) == 0)
			break;
	}
	if ((size_t)length > cap) {
		*len = (size_t)length;
		return -ENOSPC;
	}
	memcpy(buf, umad_get_mad(ubuf), (size_t)length);
	*len = (size_t)length;
	*agent = rc;
	a = umad_get_mad_addr(ubuf);
	memset(src, 0, sizeof(*src));
	src->lid = ntohs(a->lid);
	src->sl = a->sl;
	src->path_bits = a->path_bits;
	src->qpn = ntohl(a->qpn);
	src->qkey = ntohl(a->qkey);
	src->pkey_index = a->pkey_index;
	src->grh_present = a->grh_present;
	if (a->grh_present) {
		memcpy(src->gid, a->gid, 16);
		src->flow_label = ntohl(a->flow_label);
		src->hop_limit = a->hop_limit;
		src->traffic_class = a->traffic_class;
		src->gid_index = a->gid_index;
	}
	return 0;
}

/*
 * The progress loop was given up: write what the threadless queues hold
 * (MADCM_UMAD_TX=release).  Counted in `busy` so that a port closing
 * meanwhile frees its queue only after this thread is out of it.
 */
static void real_released(void *ctx)
{
	(void)ctx;
	if (!release_ports)
		return;
	for (int i = 0; i < ROCE_PORTS; i++) {
		struct roce_port *r = &roce_ports[i];
		struct umad_tx *tx;

		if (!r->release)
			continue;
		pthread_mutex_lock(&r->lock);
		tx = r->release ? r->tx : NULL;
		if (tx)
			r->busy++;
		pthread_mutex_unlock(&r->lock);
		if (!tx)
			continue;
		umad_tx_write_out(tx);
		pthread_mutex_lock(&r->lock);
		if (!--r->busy)
			pthread_cond_broadcast(&r->idle);
		pthread_mutex_unlock(&r->lock);
	}
}

const struct mad_umad_ops mad_umad_real_ops = {
    .list_cas = real_list_cas,
    .query_port = real_query_port,
    .open_port = real_open_port,
    .close_port = real_close_port,
    .get_fd = real_get_fd,
    .register_agent = real_register,
    .unregister_agent = real_unregister,
    .send = real_send,
    .recv = real_recv,
    .released = real_released,
};
