/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * libibverbs API of the soft HCA: devices, contexts, PDs, MRs, CQs and
 * completion channels, SRQs, AHs, async events.  QPs are in verbs_qp.c,
 * the data path in verbs_datapath.c.  Exported with libibverbs' symbol
 * versions (sim/verbs.map) so unmodified binaries bind to these.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mad/eintr.h"
#include "sim/verbs_direct.h"
#include "sim/verbs_priv.h"
#include "sim/verbs_proto.h"

struct vhca verbs_hca = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the HCA thread ---------------------------------------------------- */

/*
 * Who reads the wire.  Every packet costs a wakeup of whoever reads it,
 * and on a machine with fewer cores than busy threads wakeups are what
 * latency is made of, so exactly one thread should be waiting on the
 * socket: the application thread when it waits for a completion anyway
 * (blocked in ibv_get_cq_event, or spinning on ibv_poll_cq), the HCA
 * thread otherwise.
 *
 * An application thread that serves the wire holds a lease: "I will look
 * at the socket again before lease_until" (while blocked in
 * ibv_get_cq_event, for as long as it stays: watchers > 0).  While a lease
 * runs the HCA thread leaves the socket alone and only wakes to check the
 * lease, so an application that stops calling verbs has its packets served
 * again at most VERBS_LEASE_NS later: far below the smallest ACK timeout
 * (67 ms, MIN_TIMEOUT_NS), so no requester ever notices.  Nobody kicks the
 * HCA thread on the fast path; a watcher that was blocked for long (the
 * HCA thread backed off meanwhile) kicks it once when it leaves.
 */
#define IDLE_WATCH_MAX_NS 64000000ull

/* A relative timeout of d ns for ppoll. */
static struct timespec ns_timespec(uint64_t d)
{
	return (struct timespec){.tv_sec = (time_t)(d / 1000000000ull),
				 .tv_nsec = (long)(d % 1000000000ull)};
}

static void *hca_thread(void *arg)
{
	uint64_t backoff = VERBS_LEASE_NS;
	uint32_t seen_gen = 0;

	(void)arg;
	for (;;) {
		struct pollfd pfd[2] = {
		    {.fd = verbs_hca.wake[0], .events = POLLIN},
		    {.fd = verbs_transport_fd(), .events = POLLIN},
		};
		uint64_t now = verbs_now_ns(), until, look;
		struct timespec ts, *tsp = NULL;
		nfds_t nfds;
		int w;

		for (;;) {
			w = __atomic_load_n(&verbs_hca.watchers, __ATOMIC_SEQ_CST);
			look = 0;
			if (w) {
				uint32_t g =
				    __atomic_load_n(&verbs_hca.watch_gen, __ATOMIC_RELAXED);

				/* The same watcher blocked all along: look less
				 * often (it kicks us when it leaves). */
				if (g == seen_gen && backoff < IDLE_WATCH_MAX_NS)
					backoff *= 2;
				else if (g != seen_gen)
					backoff = VERBS_LEASE_NS;
				seen_gen = g;
				look = now + backoff;
			} else {
				uint64_t lease =
				    __atomic_load_n(&verbs_hca.lease_until, __ATOMIC_SEQ_CST);

				backoff = VERBS_LEASE_NS;
				if (lease > now)
					look = lease;
			}
			__atomic_store_n(&verbs_hca.hca_look_at, look, __ATOMIC_SEQ_CST);
			/* A watcher that left after we counted it read the
			 * old hca_look_at: count again (Dekker, both sides
			 * sequentially consistent). */
			if (!w || __atomic_load_n(&verbs_hca.watchers, __ATOMIC_SEQ_CST))
				break;
		}
		nfds = look ? 1 : 2;
		/* Timers, and the time we sleep until, under one lock hold:
		 * arm_timer() kicks us if it needs us earlier than that. */
		VERBS_LOCK();
		if (verbs_timers_due(verbs_now_ns())) {
			/* Before a timer fires, what the wire brought: the
			 * ACK it waits for may be there, unread while an
			 * application thread held the lease.  An HCA takes
			 * packets as they arrive. */
			VERBS_UNLOCK();
			verbs_rx_pending(64, false);
			VERBS_LOCK();
		}
		verbs_transport_batch_begin();
		until = verbs_run_timers(verbs_now_ns());
		verbs_transport_batch_end();
		if (look && (!until || look < until))
			until = look;
		verbs_hca.sleep_until = until;
		VERBS_UNLOCK();
		if (until) {
			uint64_t d = until > now ? until - now : 0;

			if (d > 1000000000ull)
				d = 1000000000ull;
			ts = ns_timespec(d);
			tsp = &ts;
		}
		if (ppoll(pfd, nfds, tsp, NULL) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			char c[64];

			if (read(verbs_hca.wake[0], c, sizeof(c)) <= 0)
				break;
		}
		if (nfds == 2 && (pfd[1].revents & (POLLERR | POLLHUP | POLLNVAL)) &&
		    !(pfd[1].revents & POLLIN))
			break; /* the fabric is gone */
		if (nfds == 2 && (pfd[1].revents & POLLIN))
			verbs_rx_pending(64, false);
		/* ACKs an application thread held and did not send: it has
		 * not come back within its lease. */
		VERBS_LOCK();
		verbs_ack_flush();
		VERBS_UNLOCK();
	}
	return NULL;
}

/* An application thread will look at the wire until `until`. */
void verbs_wire_lease(uint64_t until)
{
	__atomic_store_n(&verbs_hca.lease_until, until, __ATOMIC_SEQ_CST);
}

__thread bool verbs_thread_waits;

/* An application thread starts blocking on the wire in ibv_get_cq_event. */
void verbs_wire_watch(void)
{
	verbs_thread_waits = true;
	__atomic_add_fetch(&verbs_hca.watch_gen, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&verbs_hca.watchers, 1, __ATOMIC_SEQ_CST);
}

/* It stops: it leaves a lease behind (it will most likely be back soon),
 * and wakes the HCA thread only if that would look later than the lease
 * ends, i.e. after a long idle wait. */
void verbs_wire_unwatch(void)
{
	uint64_t end = verbs_now_ns() + VERBS_LEASE_NS, look;

	verbs_wire_lease(end);
	__atomic_sub_fetch(&verbs_hca.watchers, 1, __ATOMIC_SEQ_CST);
	look = __atomic_load_n(&verbs_hca.hca_look_at, __ATOMIC_SEQ_CST);
	if (look > end + VERBS_LEASE_NS / 2)
		verbs_hca_kick();
}

/* A process that exits sends the ACKs its threads still hold (lazy ones
 * above all, verbs_datapath.c), as an HCA would have sent them already:
 * its peers need not retry into a QP that is gone; and every packet it
 * still holds (completed UD SENDs waiting for a cut-through route answer,
 * messages for a full receiver: sim/verbs_direct.c).  Waits for the lock
 * only a little: another thread may hold it forever now, but the HCA
 * thread holds it for microseconds. */
__attribute__((destructor)) static void hca_exit(void)
{
	struct timespec until;

	if (!verbs_hca.started)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 100000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	if (pthread_mutex_timedlock(&verbs_hca.lock, &until))
		return;
	verbs_ack_flush();
	verbs_transport_exit();
	verbs_stats_print();
	VERBS_UNLOCK();
	/* FABSIM_VERBS_STATS=1: what this process's HCA did, on stderr. */
	if (getenv("FABSIM_VERBS_STATS"))
		fprintf(stderr,
			"fabsim verbs %d: rx %" PRIu64 " tx %" PRIu64 " drop qpn %" PRIu64
			" state %" PRIu64 " pkey %" PRIu64 " qkey %" PRIu64 "; direct tx %" PRIu64
			" rx %" PRIu64 " asked %" PRIu64 " granted %" PRIu64 " queued %" PRIu64
			" lost %" PRIu64 " fences %" PRIu64 " drain_waits %" PRIu64 "\n",
			(int)getpid(), verbs_hca.rx_pkts, verbs_hca.tx_pkts, verbs_hca.drop_qpn,
			verbs_hca.drop_state, verbs_hca.drop_pkey, verbs_hca.drop_qkey,
			vdirect_stats.tx, vdirect_stats.rx, vdirect_stats.asked,
			vdirect_stats.granted, vdirect_stats.queued, vdirect_stats.lost,
			vdirect_stats.fences, vdirect_stats.drain_waits);
}

/* Wake the HCA thread so it recomputes its next timer. */
void verbs_hca_kick(void)
{
	char c = 0;

	if (verbs_hca.started)
		(void)!write(verbs_hca.wake[1], &c, 1);
}

static int hca_start(struct vdevice *dev)
{
	int ret;

	if (verbs_hca.started)
		return 0;
	ret = verbs_transport_open(&dev->port);
	if (ret)
		return ret;
	if (pipe2(verbs_hca.wake, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	ret = pthread_create(&verbs_hca.thread, NULL, hca_thread, NULL);
	if (ret) {
		close(verbs_hca.wake[0]);
		close(verbs_hca.wake[1]);
		return -ret;
	}
	pthread_setname_np(verbs_hca.thread, "fabsim-hca");
	pthread_detach(verbs_hca.thread);
	verbs_hca.started = true;
	return 0;
}

/* ---- devices ----------------------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));
	struct vdevice *dev;
	int n = 0;

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dev_lock);
	dev = verbs_hca.dev;
	if (!dev) {
		dev = calloc(1, sizeof(*dev));
		if (dev && !verbs_port_refresh(&dev->port)) {
			dev->dev.node_type = IBV_NODE_CA;
			dev->dev.transport_type = IBV_TRANSPORT_IB;
			snprintf(dev->dev.name, sizeof(dev->dev.name), "%s", dev->port.ca_name);
			snprintf(dev->dev.dev_name, sizeof(dev->dev.dev_name), "uverbs0");
			snprintf(dev->dev.dev_path, sizeof(dev->dev.dev_path),
				 "/sys/class/infiniband_verbs/uverbs0");
			snprintf(dev->dev.ibdev_path, sizeof(dev->dev.ibdev_path),
				 "/sys/class/infiniband/%s", dev->dev.name);
			verbs_hca.dev = dev;
		} else {
			free(dev);
			dev = NULL;
		}
	}
	pthread_mutex_unlock(&dev_lock);
	if (dev)
		list[n++] = &dev->dev;
	if (num_devices)
		*num_devices = n;
	if (!n)
		errno = ENODEV;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	/* Devices live as long as the process, like libibverbs' cache. */
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	if (!device)
		return 0;
	return htobe64(((struct vdevice *)device)->port.node_guid);
}

int ibv_get_device_index(struct ibv_device *device)
{
	return device ? 0 : -1;
}

int ibv_fork_init(void)
{
	/* Nothing is pinned: fork is as safe as the application makes it. */
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

static int vquery_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
			    struct ibv_device_attr_ex *attr, size_t attr_size);
static int vquery_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
		       size_t len);

/* Open contexts of this process, for port events (a few per process). */
#define MAX_PORT_CTXS 16
static struct vcontext *port_ctxs[MAX_PORT_CTXS];

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct vdevice *dev = (struct vdevice *)device;
	struct vcontext *c;
	struct ibv_context *ctx;
	int p[2], ret;

	if (!device || device != &verbs_hca.dev->dev) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(p, O_CLOEXEC)) {
		free(c);
		return NULL;
	}
	pthread_mutex_lock(&dev_lock);
	ret = hca_start(dev);
	pthread_mutex_unlock(&dev_lock);
	if (ret) {
		close(p[0]);
		close(p[1]);
		free(c);
		errno = -ret;
		return NULL;
	}
	c->dev = dev;
	c->async_wr = p[1];
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_port = vquery_port;
	c->vctx.query_device_ex = vquery_device_ex;
	c->vctx.create_qp_ex = verbs_create_qp_ex;
	c->vctx.open_xrcd = verbs_open_xrcd;
	c->vctx.close_xrcd = verbs_close_xrcd;
	c->vctx.create_srq_ex = verbs_create_srq_ex;
	c->vctx.get_srq_num = verbs_get_srq_num;
	ctx = &c->vctx.context;
	ctx->device = device;
	ctx->cmd_fd = -1;
	ctx->async_fd = p[0];
	ctx->num_comp_vectors = 1;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->ops.poll_cq = verbs_poll_cq;
	ctx->ops.req_notify_cq = verbs_req_notify_cq;
	ctx->ops.post_send = verbs_post_send;
	ctx->ops.post_recv = verbs_post_recv;
	ctx->ops.post_srq_recv = verbs_post_srq_recv;
	VERBS_LOCK();
	if (!verbs_hca.ctx)
		verbs_hca.ctx = c;
	for (unsigned i = 0; i < MAX_PORT_CTXS; i++)
		if (!port_ctxs[i]) {
			port_ctxs[i] = c;
			break;
		}
	VERBS_UNLOCK();
	return ctx;
}

static struct vcontext *to_vctx(struct ibv_context *ctx)
{
	return (struct vcontext *)((uint8_t *)ctx - offsetof(struct vcontext, vctx.context));
}

int ibv_close_device(struct ibv_context *ctx)
{
	struct vcontext *c;

	if (!ctx)
		return EINVAL;
	c = to_vctx(ctx);
	VERBS_LOCK();
	if (verbs_hca.ctx == c)
		verbs_hca.ctx = NULL;
	for (unsigned i = 0; i < MAX_PORT_CTXS; i++)
		if (port_ctxs[i] == c)
			port_ctxs[i] = NULL;
	VERBS_UNLOCK();
	close(ctx->async_fd);
	close(c->async_wr);
	free(c);
	return 0;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	struct vdevice *dev;

	if (!ctx || !a)
		return EINVAL;
	dev = to_vctx(ctx)->dev;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "1.0.0");
	a->node_guid = htobe64(dev->port.node_guid);
	a->sys_image_guid = htobe64(dev->port.node_guid);
	a->max_mr_size = ~0ull;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = 0;
	a->vendor_part_id = 0;
	a->hw_ver = 0;
	a->max_qp = 1 << 17;
	a->max_qp_wr = VERBS_MAX_WR;
	a->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_CHANGE_PHY_PORT |
			      IBV_DEVICE_XRC;
	a->max_sge = VERBS_MAX_SGE;
	a->max_sge_rd = VERBS_MAX_SGE;
	a->max_cq = 1 << 17;
	a->max_cqe = VERBS_MAX_CQE;
	a->max_mr = 1 << 17;
	a->max_pd = 1 << 17;
	a->max_qp_rd_atom = 16;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = 16 << 17;
	a->max_qp_init_rd_atom = 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mcast_grp = 1024;
	a->max_mcast_qp_attach = 64;
	a->max_total_mcast_qp_attach = 1024 * 64;
	a->max_ah = 1 << 17;
	a->max_srq = 1 << 16;
	a->max_srq_wr = VERBS_MAX_WR;
	a->max_srq_sge = VERBS_MAX_SGE;
	a->max_pkeys = VERBS_MAX_PKEY;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
	return 0;
}

static int vquery_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
			    struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;
	int ret;

	(void)input;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	ret = ibv_query_device(ctx, &a.orig_attr);
	if (ret)
		return ret;
	a.max_dm_size = 0;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

static void fill_port_attr(const struct verbs_port_info *pi, struct ibv_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = pi->state;
	a->max_mtu = pi->max_mtu;
	a->active_mtu = pi->active_mtu;
	a->gid_tbl_len = 1;
	a->port_cap_flags = pi->cap_flags;
	a->max_msg_sz = 1u << 31;
	a->pkey_tbl_len = (uint16_t)(pi->npkeys ? pi->npkeys : 1);
	a->lid = pi->lid;
	a->sm_lid = pi->sm_lid;
	a->lmc = pi->lmc;
	a->max_vl_num = 1;
	a->sm_sl = pi->sm_sl;
	a->subnet_timeout = 18;
	a->active_width = pi->width;
	a->active_speed = pi->speed;
	a->phys_state = pi->phys_state;
	a->link_layer = IBV_LINK_LAYER_INFINIBAND;
}

static int refresh_port(struct vdevice *dev)
{
	struct verbs_port_info pi;

	/* Ask the fabric each time: the SM may have changed LID or state. */
	if (verbs_port_refresh(&pi))
		return 0; /* keep the last known view */
	VERBS_LOCK();
	if (verbs_hca.fabric_mtu)
		pi.active_mtu = verbs_hca.fabric_mtu;
	if (verbs_hca.fabric_max_mtu)
		pi.max_mtu = verbs_hca.fabric_max_mtu;
	dev->port = pi;
	VERBS_UNLOCK();
	return 0;
}

static int vquery_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
		       size_t len)
{
	struct ibv_port_attr a;
	struct vdevice *dev;

	if (!ctx || !attr || port != 1)
		return EINVAL;
	dev = to_vctx(ctx)->dev;
	refresh_port(dev);
	VERBS_LOCK();
	fill_port_attr(&dev->port, &a);
	VERBS_UNLOCK();
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr)
{
	/* The legacy entry point knows the layout up to 'flags'. */
	return vquery_port(ctx, port, (struct ibv_port_attr *)attr,
			   offsetof(struct ibv_port_attr, port_cap_flags2));
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	struct vdevice *dev;

	if (!ctx || !gid || port != 1 || index != 0)
		return -1;
	dev = to_vctx(ctx)->dev;
	VERBS_LOCK();
	gid->global.subnet_prefix = htobe64(dev->port.gid_prefix);
	gid->global.interface_id = htobe64(dev->port.port_guid);
	VERBS_UNLOCK();
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (!entry || flags || entry_size < sizeof(e))
		return EINVAL;
	memset(&e, 0, sizeof(e));
	if (port > 255 || ibv_query_gid(ctx, (uint8_t)port, (int)gid_index, &e.gid))
		return ENODATA;
	e.gid_index = gid_index;
	e.port_num = port;
	e.gid_type = IBV_GID_TYPE_IB;
	e.ndev_ifindex = 0;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

/* Private libibverbs call perftest uses; the enum is internal to
 * rdma-core: 0 is IB/RoCE v1. */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index, int *type);
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index, int *type)
{
	union ibv_gid g;

	if (!type || ibv_query_gid(ctx, port, (int)index, &g))
		return -1;
	*type = 0;
	return 0;
}

int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	struct vdevice *dev;
	int ret = -1;

	if (!ctx || !pkey || port != 1 || index < 0)
		return -1;
	dev = to_vctx(ctx)->dev;
	VERBS_LOCK();
	if (index < dev->port.npkeys) {
		*pkey = htobe16(dev->port.pkeys[index]);
		ret = 0;
	} else if (index == 0 && !dev->port.npkeys) {
		*pkey = htobe16(0xffff);
		ret = 0;
	}
	VERBS_UNLOCK();
	return ret;
}

int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	__be16 p;
	int i;

	for (i = 0; i < VERBS_MAX_PKEY; i++) {
		if (ibv_query_pkey(ctx, port, i, &p))
			break;
		if (p == pkey)
			return i;
	}
	return -1;
}

/* P_Key value at an index, for the data path (0 if none). */
uint16_t verbs_pkey_at(unsigned int index)
{
	struct verbs_port_info *pi = &verbs_hca.dev->port;

	if (index < (unsigned int)pi->npkeys)
		return pi->pkeys[index];
	return index == 0 && !pi->npkeys ? 0xffff : 0;
}

/* ---- PD, MR ------------------------------------------------------------ */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct vpd *pd;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->pd.context = ctx;
	return &pd->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (!pd)
		return EINVAL;
	free(pd);
	return 0;
}

struct vmr *verbs_mr_lookup(uint32_t key)
{
	uint32_t idx = key >> 8;
	struct vmr *mr;

	if (idx >= verbs_hca.nmrs)
		return NULL;
	mr = verbs_hca.mrs[idx];
	/* The low byte is a generation: a stale key does not match. */
	if (!mr || mr->mr.lkey != key)
		return NULL;
	return mr;
}

static int mr_insert(struct vmr *mr)
{
	uint32_t i;

	for (i = 1; i < verbs_hca.nmrs; i++)
		if (!verbs_hca.mrs[i])
			break;
	if (i >= verbs_hca.nmrs) {
		uint32_t n = verbs_hca.nmrs ? verbs_hca.nmrs * 2 : 64;
		struct vmr **t;

		if (n > (1u << 24))
			return -ENOMEM;
		t = realloc(verbs_hca.mrs, n * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + verbs_hca.nmrs, 0, (n - verbs_hca.nmrs) * sizeof(*t));
		i = verbs_hca.nmrs ? verbs_hca.nmrs : 1;
		verbs_hca.mrs = t;
		verbs_hca.nmrs = n;
	}
	verbs_hca.mr_gen++;
	mr->mr.lkey = i << 8 | (verbs_hca.mr_gen & 0xff);
	mr->mr.rkey = mr->mr.lkey;
	verbs_hca.mrs[i] = mr;
	return 0;
}

static const unsigned int mr_access_known =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |
    IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING;

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct vmr *mr;
	int ret;

	if (!pd || (access & ~mr_access_known) ||
	    /* Remote write or atomic needs local write (IBA 10.6.3.1). */
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE)) ||
	    (!addr && length)) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->mr.context = pd->context;
	mr->mr.pd = pd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->access = (int)access;
	mr->iova = iova;
	VERBS_LOCK();
	ret = mr_insert(mr);
	VERBS_UNLOCK();
	if (ret) {
		free(mr);
		errno = -ret;
		return NULL;
	}
	return &mr->mr;
}

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct vmr *mr = to_vmr(ibmr);

	if (!ibmr)
		return EINVAL;
	VERBS_LOCK();
	if (verbs_mr_lookup(ibmr->lkey) == mr)
		verbs_hca.mrs[ibmr->lkey >> 8] = NULL;
	VERBS_UNLOCK();
	free(mr);
	return 0;
}

/* ---- CQ and completion channels ---------------------------------------- */

/*
 * A completion channel: a pipe whose read end is the channel's fd, as
 * applications poll it.  When the thread that will return the event is the
 * one that produced it (an application thread processing packets inside
 * ibv_get_cq_event), the event skips the pipe: `local` holds it, saving a
 * write, a poll and a read per event.
 */
#define CHANNEL_LOCAL 8

struct vchannel {
	struct ibv_comp_channel ch;
	int wr;				     /* write end of the pipe */
	struct ibv_cq *local[CHANNEL_LOCAL]; /* events for the watching thread */
	unsigned int nlocal;
};

#define to_vchannel(p) ((struct vchannel *)(p))

/* The channel this thread waits on in ibv_get_cq_event, while it processes
 * packets itself. */
static __thread struct vchannel *watching;

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct vchannel *vch;
	int p[2];

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	vch = calloc(1, sizeof(*vch));
	if (!vch) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(p, O_CLOEXEC)) {
		free(vch);
		return NULL;
	}
	vch->ch.context = ctx;
	vch->ch.fd = p[0];
	vch->wr = p[1];
	return &vch->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	if (!ch)
		return EINVAL;
	if (ch->refcnt)
		return EBUSY;
	close(ch->fd);
	close(to_vchannel(ch)->wr);
	free(to_vchannel(ch));
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_ctx,
			     struct ibv_comp_channel *ch, int comp_vector)
{
	struct vcq *cq;

	if (!ctx || cqe < 1 || cqe > VERBS_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= ctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq || !(cq->ring = calloc((size_t)cqe, sizeof(*cq->ring)))) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->size = (uint32_t)cqe;
	cq->cq.context = ctx;
	cq->cq.channel = ch;
	cq->cq.cq_context = cq_ctx;
	cq->cq.cqe = cqe;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	if (ch) {
		VERBS_LOCK();
		ch->refcnt++;
		VERBS_UNLOCK();
	}
	return &cq->cq;
}

int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct vcq *cq = to_vcq(ibcq);
	struct ibv_wc *ring;
	uint32_t i;

	if (!ibcq || cqe < 1 || cqe > VERBS_MAX_CQE)
		return EINVAL;
	VERBS_LOCK();
	if ((uint32_t)cqe < cq->count) {
		VERBS_UNLOCK();
		return EINVAL;
	}
	ring = calloc((size_t)cqe, sizeof(*ring));
	if (!ring) {
		VERBS_UNLOCK();
		return ENOMEM;
	}
	for (i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->size];
	free(cq->ring);
	cq->ring = ring;
	cq->head = 0;
	cq->size = (uint32_t)cqe;
	ibcq->cqe = cqe;
	VERBS_UNLOCK();
	return 0;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct vcq *cq = to_vcq(ibcq);

	if (!ibcq)
		return EINVAL;
	VERBS_LOCK();
	if (cq->refs) {
		VERBS_UNLOCK();
		return EBUSY; /* QPs still complete into it */
	}
	if (ibcq->channel)
		ibcq->channel->refcnt--;
	__atomic_store_n(&verbs_hca.cqes, verbs_hca.cqes - cq->count, __ATOMIC_RELAXED);
	VERBS_UNLOCK();
	free(cq->ring);
	free(cq);
	return 0;
}

int verbs_cq_push(struct vcq *cq, const struct ibv_wc *wc, bool solicited)
{
	if (cq->count >= cq->size) {
		struct ibv_async_event ev = {.event_type = IBV_EVENT_CQ_ERR};

		/* Overrun: the CQ is broken, as on hardware. */
		if (!cq->overflow) {
			cq->overflow = true;
			ev.element.cq = &cq->cq;
			verbs_async_event(cq->cq.context, &ev);
		}
		return -ENOSPC;
	}
	cq->ring[(cq->head + cq->count) % cq->size] = *wc;
	__atomic_store_n(&cq->count, cq->count + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&verbs_hca.cqes, verbs_hca.cqes + 1, __ATOMIC_RELAXED);
	if (cq->armed && cq->cq.channel &&
	    (!cq->solicited_only || solicited || wc->status != IBV_WC_SUCCESS)) {
		struct vchannel *vch = to_vchannel(cq->cq.channel);
		struct ibv_cq *p = &cq->cq;

		cq->armed = false;
		if (vch == watching && vch->nlocal < CHANNEL_LOCAL)
			vch->local[vch->nlocal++] = p;
		else
			(void)!write(vch->wr, &p, sizeof(p));
	}
	return 0;
}

/* The first event the watching thread produced itself, if any; the others
 * go to the pipe, where any thread waiting on the channel sees them. */
static struct ibv_cq *local_event(struct vchannel *vch)
{
	struct ibv_cq *p = NULL;

	VERBS_LOCK();
	if (vch->nlocal) {
		p = vch->local[0];
		for (unsigned int i = 1; i < vch->nlocal; i++)
			(void)!write(vch->wr, &vch->local[i], sizeof(vch->local[i]));
		vch->nlocal = 0;
	}
	VERBS_UNLOCK();
	return p;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	struct vchannel *vch = to_vchannel(ch);
	struct ibv_cq *p = NULL;
	ssize_t n;

	if (!ch || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	/* A blocking wait also watches the wire and processes what comes
	 * itself: the event it waits for is then one wakeup away, not two
	 * (HCA thread, then this thread), and skips the pipe. */
	if (!(fcntl(ch->fd, F_GETFL) & O_NONBLOCK) && verbs_transport_fd() >= 0) {
		verbs_wire_watch();
		for (;;) {
			struct pollfd pfd[2] = {
			    {.fd = ch->fd, .events = POLLIN},
			    {.fd = verbs_transport_fd(), .events = POLLIN},
			};
			struct timespec ts, *tsp = NULL;
			uint64_t due;
			int r;

			/* About to wait: held ACKs leave now, but for lazy
			 * ones (verbs_datapath.c), which wake us when due. */
			VERBS_LOCK();
			due = verbs_ack_flush_due();
			VERBS_UNLOCK();
			if (due) {
				uint64_t now = verbs_now_ns(), d = due > now ? due - now : 0;

				ts = ns_timespec(d);
				tsp = &ts;
			}
			r = ppoll(pfd, 2, tsp, NULL);
			if (r < 0) {
				if (errno == EINTR && mad_eintr_restarts())
					continue;
				if (errno == EINTR) {
					/* as the kernel's read() of the channel */
					verbs_wire_unwatch();
					return -1;
				}
				break;
			}
			if (!r)
				continue; /* a lazy ACK is due */
			if (pfd[0].revents & POLLIN)
				break;
			if (pfd[1].revents & (POLLERR | POLLHUP | POLLNVAL))
				break; /* the fabric is gone: just wait */
			if (pfd[1].revents & POLLIN) {
				/* Up to the event we wait for: what is
				 * behind it waits for our next look (we
				 * hold the lease), which saves the recv
				 * that would find the socket empty. */
				watching = vch;
				for (int i = 0; i < 16; i++)
					if (__atomic_load_n(&vch->nlocal, __ATOMIC_RELAXED) ||
					    !verbs_rx_pending(1, true))
						break;
				watching = NULL;
				p = local_event(vch);
				if (p)
					break;
			}
		}
		verbs_wire_unwatch();
	}
	if (!p) {
		n = read(ch->fd, &p, sizeof(p));
		if (n != sizeof(p))
			return -1;
	}
	*cq = p;
	*cq_context = p->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- async events ------------------------------------------------------ */

static void port_async(enum ibv_event_type t)
{
	struct ibv_async_event ev = {.event_type = t};

	ev.element.port_num = 1;
	/* As the kernel's uverbs: every open context hears port events. */
	for (unsigned i = 0; i < MAX_PORT_CTXS; i++)
		if (port_ctxs[i])
			verbs_async_event(&port_ctxs[i]->vctx.context, &ev);
}

void verbs_port_event(const struct fsp_verbs_port_event *e)
{
	/* The daemon's count of ClientReregister requests, from the first event on. */
	static uint32_t rereg_last;
	static bool rereg_init;
	bool rereg = rereg_init && e->rereg != rereg_last;
	struct verbs_port_info *pi;
	enum ibv_port_state ns;

	rereg_last = e->rereg;
	rereg_init = true;
	if (!verbs_hca.dev)
		return;
	pi = &verbs_hca.dev->port;
	ns = e->state >= 1 && e->state <= 5 ? (enum ibv_port_state)e->state : IBV_PORT_DOWN;
	/* The events a real HCA raises for the same changes. */
	if (ns != pi->state) {
		if (ns == IBV_PORT_ACTIVE)
			port_async(IBV_EVENT_PORT_ACTIVE);
		else if (pi->state == IBV_PORT_ACTIVE)
			port_async(IBV_EVENT_PORT_ERR);
	}
	if (e->lid != pi->lid && ns == IBV_PORT_ACTIVE)
		port_async(IBV_EVENT_LID_CHANGE);
	if (e->sm_lid != pi->sm_lid && ns == IBV_PORT_ACTIVE)
		port_async(IBV_EVENT_SM_CHANGE);
	if (rereg && ns == IBV_PORT_ACTIVE)
		port_async(IBV_EVENT_CLIENT_REREGISTER);
	pi->state = ns;
	pi->lid = (uint16_t)e->lid;
	pi->lmc = (uint8_t)e->lmc;
	pi->sm_lid = (uint16_t)e->sm_lid;
	pi->sm_sl = (uint8_t)e->sm_sl;
	if (e->active_mtu >= IBV_MTU_256 && e->active_mtu <= IBV_MTU_4096)
		verbs_hca.fabric_mtu = (enum ibv_mtu)e->active_mtu;
	if (e->max_mtu >= IBV_MTU_256 && e->max_mtu <= IBV_MTU_4096)
		verbs_hca.fabric_max_mtu = (enum ibv_mtu)e->max_mtu;
	if (verbs_hca.fabric_mtu)
		pi->active_mtu = verbs_hca.fabric_mtu;
	if (verbs_hca.fabric_max_mtu)
		pi->max_mtu = verbs_hca.fabric_max_mtu;
}

void verbs_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	if (!ctx)
		return;
	(void)!write(to_vctx(ctx)->async_wr, ev, sizeof(*ev));
}

int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	if (!ctx || !ev) {
		errno = EINVAL;
		return -1;
	}
	if (read(ctx->async_fd, ev, sizeof(*ev)) != sizeof(*ev))
		return -1;
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *ev)
{
	(void)ev;
}

/* ---- SRQ --------------------------------------------------------------- */

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct vsrq *srq;

	if (!pd || !attr || !attr->attr.max_wr || attr->attr.max_wr > VERBS_MAX_WR ||
	    attr->attr.max_sge > VERBS_MAX_SGE || attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq || verbs_wq_init(&srq->rq, attr->attr.max_wr)) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
	srq->limit = attr->attr.srq_limit;
	srq->srq.context = pd->context;
	srq->srq.srq_context = attr->srq_context;
	srq->srq.pd = pd;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	attr->attr.max_sge = srq->max_sge;
	return &srq->srq;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct vsrq *srq = to_vsrq(ibsrq);

	if (!ibsrq || !attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL; /* resizing is not supported, as on many HCAs */
	VERBS_LOCK();
	if (attr->srq_limit > srq->rq.size) {
		VERBS_UNLOCK();
		return EINVAL;
	}
	srq->limit = attr->srq_limit;
	VERBS_UNLOCK();
	return 0;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct vsrq *srq = to_vsrq(ibsrq);

	if (!ibsrq || !attr)
		return EINVAL;
	VERBS_LOCK();
	attr->max_wr = srq->rq.size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	VERBS_UNLOCK();
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct vsrq *srq = to_vsrq(ibsrq);

	if (!ibsrq)
		return EINVAL;
	VERBS_LOCK();
	if (srq->refs) {
		VERBS_UNLOCK();
		return EBUSY;
	}
	if (srq->xrcd)
		verbs_xrc_srq_gone(srq);
	VERBS_UNLOCK();
	verbs_wq_free(&srq->rq);
	free(srq);
	return 0;
}

/* ---- AH ---------------------------------------------------------------- */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct vah *ah;

	if (!pd || !attr || attr->port_num != 1 || !attr->dlid ||
	    (attr->dlid >= VLID_MCAST_MIN && attr->dlid != 0xffff && !attr->is_global)) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->attr = *attr;
	return &ah->ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (!ah)
		return EINVAL;
	free(to_vah(ah));
	return 0;
}

int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah)
{
	if (!ctx || !wc || !ah || port != 1)
		return -1;
	memset(ah, 0, sizeof(*ah));
	ah->dlid = wc->slid;
	ah->sl = wc->sl;
	ah->src_path_bits = wc->dlid_path_bits;
	ah->port_num = port;
	if (wc->wc_flags & IBV_WC_GRH) {
		uint32_t flow;

		if (!grh)
			return -1;
		ah->is_global = 1;
		/* Reply to the sender: its source GID is our destination. */
		ah->grh.dgid = grh->sgid;
		flow = be32toh(grh->version_tclass_flow);
		ah->grh.flow_label = flow & 0xfffff;
		ah->grh.traffic_class = (uint8_t)(flow >> 20);
		ah->grh.hop_limit = 0xff;
		ah->grh.sgid_index = 0;
	}
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port)
{
	struct ibv_ah_attr a;

	if (!pd || ibv_init_ah_from_wc(pd->context, port, wc, grh, &a)) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_create_ah(pd, &a);
}

/* ---- calls whose libibverbs versions would reach provider internals
 * that our objects do not have: answered here ------------------------- */

ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	if (!ctx || !entries || flags || entry_size < sizeof(*entries))
		return -EINVAL;
	if (!max_entries)
		return -EINVAL;
	/* One port, one GID. */
	if (_ibv_query_gid_ex(ctx, 1, 0, entries, 0, sizeof(*entries)))
		return -ENODATA;
	return 1;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	/* Data lands in order: packets are processed in PSN order. */
	return 1;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
				 int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	(void)mr;
	(void)flags;
	(void)pd;
	(void)addr;
	(void)length;
	(void)access;
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *ctx, uint32_t handle)
{
	(void)ctx;
	(void)handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t handle)
{
	(void)pd;
	(void)handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}
