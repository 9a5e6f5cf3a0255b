/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Fake libibverbs and the lib/ test environment (see fake_verbs.h). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "lib/cma.h"
#include "tests/unit/fake_verbs.h"

struct fake_verbs_state fake_verbs = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .fail_state = -1,
    .next_qpn = 0x100,
};

struct fake_dev {
	struct ibv_device dev;
	struct ibv_context ctx;
	uint8_t gid[16];
	uint16_t lid;
};

static struct fake_dev devs[FAKE_VERBS_MAX_DEVS];
static struct ibv_device *dev_list[FAKE_VERBS_MAX_DEVS + 1];

static void called(void)
{
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.calls++;
	pthread_mutex_unlock(&fake_verbs.lock);
}

static struct fake_dev *dev_of(struct ibv_context *ctx)
{
	for (int i = 0; i < fake_verbs.ndevs; i++)
		if (&devs[i].ctx == ctx)
			return &devs[i];
	return NULL;
}

void fake_verbs_init(const struct fake_fabric *fb)
{
	int n = fb->ncas < FAKE_VERBS_MAX_DEVS ? fb->ncas : FAKE_VERBS_MAX_DEVS;

	memset(devs, 0, sizeof(devs));
	for (int i = 0; i < n; i++) {
		struct fake_dev *d = &devs[i];

		d->dev.node_type = IBV_NODE_CA;
		d->dev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->dev.name, sizeof(d->dev.name), "%s", fb->ca[i].port.ca_name);
		snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", i);
		d->ctx.device = &d->dev;
		d->ctx.cmd_fd = -1;
		d->ctx.async_fd = -1;
		d->ctx.num_comp_vectors = 1;
		pthread_mutex_init(&d->ctx.mutex, NULL);
		/* abi_compat NULL: not a verbs_context, so the header's inlines
		 * (ibv_query_port) call the exported functions below. */
		memcpy(d->gid, fb->ca[i].port.gid, 16);
		d->lid = fb->ca[i].port.lid;
		dev_list[i] = &d->dev;
	}
	dev_list[n] = NULL;
	fake_verbs.ndevs = n;
}

unsigned fake_qp_mods(struct ibv_qp *qp, struct fake_qp_mod *out, unsigned max)
{
	struct fake_qp *f = fake_qp_of(qp);
	unsigned n;

	pthread_mutex_lock(&fake_verbs.lock);
	n = f->nmods < max ? f->nmods : max;
	memcpy(out, f->mods, n * sizeof(*out));
	pthread_mutex_unlock(&fake_verbs.lock);
	return n;
}

void fake_verbs_fail_modify(struct ibv_qp *qp, enum ibv_qp_state state, int err, unsigned count)
{
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.fail_qp = qp;
	fake_verbs.fail_state = (int)state;
	fake_verbs.fail_errno = err;
	fake_verbs.fail_count = count;
	pthread_mutex_unlock(&fake_verbs.lock);
}

/* ---- devices ---- */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	called();
	if (num_devices)
		*num_devices = fake_verbs.ndevs;
	if (!fake_verbs.ndevs) {
		errno = ENOSYS;
		return NULL;
	}
	return dev_list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	(void)list;
	called();
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	called();
	return device->name;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	called();
	for (int i = 0; i < fake_verbs.ndevs; i++)
		if (&devs[i].dev == device)
			return &devs[i].ctx;
	errno = ENODEV;
	return NULL;
}

int ibv_close_device(struct ibv_context *context)
{
	(void)context;
	called();
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct fake_dev *d = dev_of(context);

	called();
	if (!d)
		return ENODEV;
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "0.0.0");
	memcpy(&attr->node_guid, d->gid + 8, 8);
	memcpy(&attr->sys_image_guid, d->gid + 8, 8);
	attr->max_qp = 1024;
	attr->max_qp_wr = 4096;
	attr->max_sge = 16;
	attr->max_cq = 1024;
	attr->max_cqe = 65536;
	attr->max_pd = 64;
	attr->max_qp_rd_atom = FAKE_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = FAKE_MAX_RD_ATOM;
	attr->max_srq = 64;
	attr->max_srq_wr = 4096;
	attr->max_pkeys = 1;
	attr->phys_port_cnt = 1;
	return 0;
}

/* The header makes ibv_query_port a macro: the parentheses define the function. */
int(ibv_query_port)(struct ibv_context *context, uint8_t port_num,
		    struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr *pa = (struct ibv_port_attr *)port_attr;
	struct fake_dev *d = dev_of(context);

	called();
	if (!d || port_num != 1)
		return EINVAL;
	/* The caller's inline cleared the whole struct ibv_port_attr. */
	pa->state = IBV_PORT_ACTIVE;
	pa->max_mtu = IBV_MTU_4096;
	pa->active_mtu = IBV_MTU_2048;
	pa->gid_tbl_len = 1;
	pa->pkey_tbl_len = 1;
	pa->lid = d->lid;
	pa->sm_lid = 1;
	pa->link_layer = IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct fake_dev *d = dev_of(context);

	called();
	if (!d || port_num != 1 || index != 0)
		return -1;
	memcpy(gid->raw, d->gid, 16);
	return 0;
}

/* fake_verbs.pkeys, else the table of an unpartitioned port: 0xffff at index 0. */
int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	struct fake_dev *d = dev_of(context);
	int n;

	called();
	pthread_mutex_lock(&fake_verbs.lock);
	n = fake_verbs.npkeys;
	if (d && port_num == 1 && index >= 0 && index < (n ? n : 1))
		*pkey = htobe16(n ? fake_verbs.pkeys[index] : 0xffff);
	pthread_mutex_unlock(&fake_verbs.lock);
	if (!d || port_num != 1 || index < 0 || index >= (n ? n : 1))
		return EINVAL;
	return 0;
}

/* ---- PDs, CQs, channels, SRQs ---- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	called();
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = context;
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.pds++;
	pthread_mutex_unlock(&fake_verbs.lock);
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	called();
	free(pd);
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.pds--;
	pthread_mutex_unlock(&fake_verbs.lock);
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

	called();
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->context = context;
	ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.channels++;
	pthread_mutex_unlock(&fake_verbs.lock);
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	called();
	if (channel->fd >= 0)
		close(channel->fd);
	free(channel);
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.channels--;
	pthread_mutex_unlock(&fake_verbs.lock);
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq *cq = calloc(1, sizeof(*cq));

	(void)comp_vector;
	called();
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->cqe = cqe;
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.cqs++;
	pthread_mutex_unlock(&fake_verbs.lock);
	return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	called();
	free(cq);
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.cqs--;
	pthread_mutex_unlock(&fake_verbs.lock);
	return 0;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq *srq = calloc(1, sizeof(*srq));

	called();
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq->context = pd->context;
	srq->pd = pd;
	srq->srq_context = attr->srq_context;
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.srqs++;
	pthread_mutex_unlock(&fake_verbs.lock);
	return srq;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	called();
	free(srq);
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.srqs--;
	pthread_mutex_unlock(&fake_verbs.lock);
	return 0;
}

/* ---- QPs ---- */

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct fake_qp *f = calloc(1, sizeof(*f));

	called();
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->qp.context = pd->context;
	f->qp.qp_context = attr->qp_context;
	f->qp.pd = pd;
	f->qp.send_cq = attr->send_cq;
	f->qp.recv_cq = attr->recv_cq;
	f->qp.srq = attr->srq;
	f->qp.qp_type = attr->qp_type;
	f->qp.state = IBV_QPS_RESET;
	pthread_mutex_lock(&fake_verbs.lock);
	f->qp.qp_num = fake_verbs.next_qpn++;
	fake_verbs.qps++;
	pthread_mutex_unlock(&fake_verbs.lock);
	return &f->qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	called();
	free(fake_qp_of(qp));
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.qps--;
	pthread_mutex_unlock(&fake_verbs.lock);
	return 0;
}

static bool transition_ok(enum ibv_qp_state from, enum ibv_qp_state to)
{
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return true;
	switch (from) {
	case IBV_QPS_RESET:
		return to == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		return to == IBV_QPS_RTS;
	case IBV_QPS_RTS:
		return to == IBV_QPS_RTS;
	default:
		return false;
	}
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct fake_qp *f = fake_qp_of(qp);
	enum ibv_qp_state to = attr_mask & IBV_QP_STATE ? attr->qp_state : qp->state;
	int rc = 0;

	called();
	pthread_mutex_lock(&fake_verbs.lock);
	if (!transition_ok(qp->state, to)) {
		f->bad_transitions++;
		rc = EINVAL;
	} else if (fake_verbs.fail_count && (int)to == fake_verbs.fail_state &&
		   (!fake_verbs.fail_qp || fake_verbs.fail_qp == qp)) {
		fake_verbs.fail_count--;
		rc = fake_verbs.fail_errno;
	}
	if (f->nmods < FAKE_QP_MAX_MODS) {
		struct fake_qp_mod *m = &f->mods[f->nmods++];

		m->attr = *attr;
		m->mask = attr_mask;
		m->from = qp->state;
		m->rc = rc;
	}
	if (!rc)
		qp->state = to;
	pthread_mutex_unlock(&fake_verbs.lock);
	return rc;
}

/* Attach: a group at most once (EINVAL again); detach: only one attached. */
int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	struct fake_qp *f = fake_qp_of(qp);
	int rc = 0;

	called();
	pthread_mutex_lock(&fake_verbs.lock);
	for (unsigned i = 0; i < f->nmcast; i++)
		if (!memcmp(&f->mcast[i].gid, gid, sizeof(*gid)) && f->mcast[i].lid == lid)
			rc = EINVAL;
	if (!rc && f->nmcast == FAKE_QP_MAX_MCAST)
		rc = ENOMEM;
	if (!rc) {
		f->mcast[f->nmcast].gid = *gid;
		f->mcast[f->nmcast].lid = lid;
		f->nmcast++;
	}
	pthread_mutex_unlock(&fake_verbs.lock);
	return rc;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	struct fake_qp *f = fake_qp_of(qp);
	int rc = EINVAL;

	called();
	pthread_mutex_lock(&fake_verbs.lock);
	for (unsigned i = 0; i < f->nmcast; i++)
		if (!memcmp(&f->mcast[i].gid, gid, sizeof(*gid)) && f->mcast[i].lid == lid) {
			memmove(&f->mcast[i], &f->mcast[i + 1],
				(f->nmcast - i - 1) * sizeof(f->mcast[0]));
			f->nmcast--;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&fake_verbs.lock);
	return rc;
}

unsigned fake_qp_nmcast(struct ibv_qp *qp)
{
	unsigned n;

	pthread_mutex_lock(&fake_verbs.lock);
	n = fake_qp_of(qp)->nmcast;
	pthread_mutex_unlock(&fake_verbs.lock);
	return n;
}

/* ---- the lib/ test environment ---- */

struct fake_fabric fake_cma_fabric;
static char addr_file[64];

int fake_cma_setup(void)
{
	static const char hosts[] = "# two fake hosts (fake_verbs.h)\n"
				    "h1 fe80::5\n"
				    "198.18.0.1 fe80::5\n"
				    "2001:db8::1 fe80::5\n"
				    "h2 fe80::6\n"
				    "198.18.0.2 fe80::6\n"
				    "2001:db8::2 fe80::6\n"
				    "# h2 in partition 0x8001 (P_Key column)\n"
				    "10.1.0.2 fe80::6 0x8001\n"
				    "# a GID no port of the fabric has\n"
				    "198.18.0.3 fe80::7\n";
	FILE *f;
	int fd;

	fake_fabric_init(&fake_cma_fabric, 2);
	/*
	 * Listeners publish their addresses as ServiceRecords, in the
	 * background (8 s a round unanswered, during which no other round of
	 * the port starts): the fake SA grants them, so that every test's
	 * listeners have their records in step at once.
	 */
	fake_cma_fabric.sa_services = true;
	fake_verbs_init(&fake_cma_fabric);
	snprintf(addr_file, sizeof(addr_file), "/tmp/madcm-cma-hosts.XXXXXX");
	fd = mkstemp(addr_file);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	fputs(hosts, f);
	fclose(f);
	setenv("MADCM_ADDR_FILE", addr_file, 1);
	cma_test_env(&fake_fabric_ops, &fake_cma_fabric);
	return 0;
}

void fake_cma_teardown(void)
{
	/* lib/ keeps its runtimes open until exit: the fabric stays too. */
	if (addr_file[0])
		unlink(addr_file);
	addr_file[0] = 0;
}

struct rdma_cm_event *fake_cma_next_event(struct rdma_event_channel *ch, int timeout_ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev = NULL;

	/* A bound so a missing event fails the test instead of hanging it. */
	if (poll(&pfd, 1, timeout_ms) != 1)
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

struct rdma_event_channel *fake_cma_channel;

int fake_cma_group_setup(void **state)
{
	(void)state;
	return fake_cma_setup();
}

int fake_cma_group_teardown(void **state)
{
	(void)state;
	fake_cma_teardown();
	return 0;
}

int fake_cma_channel_setup(void **state)
{
	(void)state;
	if (fake_cma_setup())
		return -1;
	fake_cma_channel = rdma_create_event_channel();
	return fake_cma_channel ? 0 : -1;
}

int fake_cma_channel_teardown(void **state)
{
	(void)state;
	rdma_destroy_event_channel(fake_cma_channel);
	fake_cma_teardown();
	return 0;
}
