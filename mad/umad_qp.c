/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* CM MADs from a UD QP of our own on RoCE ports: see umad_qp.h. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "mad/umad_qp.h"

#define QP_SLOTS 64		 /* MADs in flight on the send queue */
#define QP_MAD 256		 /* a CM MAD; anything longer goes to umad */
#define AH_CACHE 32		 /* destinations with an address handle */
#define AH_TTL_NS 30000000000ull /* a handle older than this is made again (the MAC may move) */
#define CLOSE_WAIT_MS 200	 /* how long a close waits for posted MADs */

struct ah_entry {
	struct ibv_ah *ah; /* NULL: entry free */
	uint8_t dgid[16];
	uint16_t dlid;
	uint8_t sl, sgid_index, hop_limit, traffic_class;
	unsigned inuse;	     /* posted sends that name it */
	uint64_t made, used; /* CLOCK_MONOTONIC ns */
};

struct umad_qp {
	pthread_mutex_t lock;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* QP_SLOTS * QP_MAD */
	uint8_t port;
	uint16_t pkey_index;
	bool broken;	       /* an error completion: the QP is in the error state */
	int slot_ah[QP_SLOTS]; /* -1: slot free, else the entry its send names */
	unsigned posted;
	struct ah_entry ahs[AH_CACHE];
	struct umad_qp_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct ibv_context *open_ca(const char *ca)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; l && l[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(l[i]), ca))
			ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	return ctx;
}

/* RESET -> INIT (port, P_Key, the GSI Q_Key) -> RTR -> RTS. */
static int qp_up(struct umad_qp *q)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = q->pkey_index;
	a.port_num = q->port;
	a.qkey = MAD_QP1_QKEY;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? -1 : 0;
}

static void free_all(struct umad_qp *q)
{
	for (int i = 0; i < AH_CACHE; i++)
		if (q->ahs[i].ah)
			ibv_destroy_ah(q->ahs[i].ah);
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->mr)
		ibv_dereg_mr(q->mr);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	if (q->pd)
		ibv_dealloc_pd(q->pd);
	if (q->ctx)
		ibv_close_device(q->ctx);
	free(q->buf);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

struct umad_qp *umad_qp_open(const char *ca, int port, uint16_t pkey_index)
{
	struct ibv_qp_init_attr ia = {0};
	struct umad_qp *q;

	if (!ca || port < 1 || port > 255)
		return NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	pthread_mutex_init(&q->lock, NULL);
	q->port = (uint8_t)port;
	q->pkey_index = pkey_index;
	for (int i = 0; i < QP_SLOTS; i++)
		q->slot_ah[i] = -1;
	q->buf = aligned_alloc(4096, QP_SLOTS * QP_MAD);
	q->ctx = q->buf ? open_ca(ca) : NULL;
	q->pd = q->ctx ? ibv_alloc_pd(q->ctx) : NULL;
	q->cq = q->pd ? ibv_create_cq(q->ctx, QP_SLOTS, NULL, NULL, 0) : NULL;
	q->mr = q->cq ? ibv_reg_mr(q->pd, q->buf, QP_SLOTS * QP_MAD, 0) : NULL;
	if (!q->mr) {
		free_all(q);
		return NULL;
	}
	ia.send_cq = q->cq;
	ia.recv_cq = q->cq;
	ia.cap.max_send_wr = QP_SLOTS;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_UD;
	ia.sq_sig_all = 1;
	q->qp = ibv_create_qp(q->pd, &ia);
	if (!q->qp || qp_up(q)) { /* EPERM: no CAP_NET_RAW for the GSI Q_Key */
		free_all(q);
		return NULL;
	}
	return q;
}

/* Take the completions in: their slots and address handles free again. */
static void reap(struct umad_qp *q)
{
	struct ibv_wc wc[16];
	int n;

	while (q->posted && (n = ibv_poll_cq(q->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			unsigned s = (unsigned)wc[i].wr_id;

			if (s >= QP_SLOTS || q->slot_ah[s] < 0)
				continue;
			q->ahs[q->slot_ah[s]].inuse--;
			q->slot_ah[s] = -1;
			q->posted--;
			if (wc[i].status != IBV_WC_SUCCESS) {
				q->st.errors++;
				q->broken = true; /* a UD QP's send error moves it to SQE/ERR */
			}
		}
}

static bool same_dest(const struct ah_entry *e, const struct mad_addr *d, uint8_t sgid_index)
{
	/*
	 * Not the flow label: on RoCE v2 it comes from the connection's ports
	 * (cma_roce_flow_label), one per connection, and would cost a handle,
	 * and a MAC lookup, per connection.  A MAD may leave with another
	 * connection's label: it only picks the path through ECMP hashing.
	 */
	return e->ah && e->dlid == d->lid && e->sl == d->sl && e->sgid_index == sgid_index &&
	       e->hop_limit == d->hop_limit && e->traffic_class == d->traffic_class &&
	       !memcmp(e->dgid, d->gid, 16);
}

/* The cache entry with a handle for dst, made if need be; -1: none free. */
static int ah_for(struct umad_qp *q, const struct mad_addr *d, uint8_t sgid_index)
{
	uint64_t t = now_ns();
	int k = -1;
	struct ah_entry *e;
	struct ibv_ah_attr aa = {0};

	for (int i = 0; i < AH_CACHE; i++)
		if (same_dest(&q->ahs[i], d, sgid_index)) {
			k = i;
			break;
		}
	if (k >= 0 && (t - q->ahs[k].made < AH_TTL_NS || q->ahs[k].inuse)) {
		q->ahs[k].used = t;
		return k;
	}
	if (k < 0) /* a free entry, else the least recently used idle one */
		for (int i = 0; i < AH_CACHE; i++) {
			e = &q->ahs[i];
			if (!e->ah) {
				k = i;
				break;
			}
			if (!e->inuse && (k < 0 || e->used < q->ahs[k].used))
				k = i;
		}
	if (k < 0)
		return -1;
	e = &q->ahs[k];
	if (e->ah)
		ibv_destroy_ah(e->ah);
	memset(e, 0, sizeof(*e));
	aa.dlid = d->lid;
	aa.sl = d->sl;
	aa.port_num = q->port;
	aa.is_global = 1;
	memcpy(aa.grh.dgid.raw, d->gid, 16);
	aa.grh.flow_label = d->flow_label;
	aa.grh.sgid_index = sgid_index;
	aa.grh.hop_limit = d->hop_limit;
	aa.grh.traffic_class = d->traffic_class;
	e->ah = ibv_create_ah(q->pd, &aa); /* the MAC is resolved here, once */
	if (!e->ah)
		return -1;
	memcpy(e->dgid, d->gid, 16);
	e->dlid = d->lid;
	e->sl = d->sl;
	e->sgid_index = sgid_index;
	e->hop_limit = d->hop_limit;
	e->traffic_class = d->traffic_class;
	e->made = e->used = t;
	q->st.ah_made++;
	return k;
}

int umad_qp_send(struct umad_qp *q, const void *mad, size_t len, const struct mad_addr *dst,
		 uint8_t sgid_index)
{
	struct ibv_send_wr wr = {0}, *bad;
	struct ibv_sge sge;
	int rc = -EAGAIN, s = -1, k;

	if (!q)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	if (!mad || !dst || len == 0 || len > QP_MAD || !dst->grh_present || dst->qpn != 1 ||
	    dst->pkey_index != q->pkey_index) {
		q->st.fallback++;
		pthread_mutex_unlock(&q->lock);
		return -EINVAL;
	}
	reap(q);
	for (int i = 0; i < QP_SLOTS && !q->broken; i++)
		if (q->slot_ah[i] < 0) {
			s = i;
			break;
		}
	k = s >= 0 ? ah_for(q, dst, sgid_index) : -1;
	if (k >= 0) {
		uint8_t *b = q->buf + (size_t)s * QP_MAD;

		memcpy(b, mad, len);
		sge.addr = (uintptr_t)b;
		sge.length = (uint32_t)len;
		sge.lkey = q->mr->lkey;
		wr.wr_id = (uint64_t)s;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.wr.ud.ah = q->ahs[k].ah;
		wr.wr.ud.remote_qpn = 1;
		wr.wr.ud.remote_qkey = MAD_QP1_QKEY;
		rc = ibv_post_send(q->qp, &wr, &bad);
		if (rc == 0) {
			q->slot_ah[s] = k;
			q->ahs[k].inuse++;
			q->posted++;
			q->st.sent++;
		} else {
			rc = -rc;
		}
	}
	if (rc)
		q->st.fallback++;
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void umad_qp_get_stats(const struct umad_qp *q, struct umad_qp_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (q) {
		pthread_mutex_lock((pthread_mutex_t *)&q->lock);
		*out = q->st;
		pthread_mutex_unlock((pthread_mutex_t *)&q->lock);
	}
}

void umad_qp_close(struct umad_qp *q)
{
	uint64_t end = now_ns() + CLOSE_WAIT_MS * 1000000ull;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	/* A REJ or DREQ sent as the port closes still leaves. */
	while (q->posted && !q->broken && now_ns() < end) {
		struct timespec ts = {0, 100000};

		reap(q);
		if (q->posted)
			nanosleep(&ts, NULL);
	}
	pthread_mutex_unlock(&q->lock);
	free_all(q);
}
