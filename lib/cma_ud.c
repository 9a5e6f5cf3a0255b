/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Datagram ids (RDMA_PS_UDP, RDMA_PS_IPOIB, RDMA_PS_IB with UD QPs):
 * rdma_connect is a SIDR_REQ carrying the IP CM header, rdma_accept and
 * rdma_reject are SIDR_REPs, and the answer comes back as ESTABLISHED with
 * param.ud ready for ibv_create_ah (cma.c cma_resolve_ib_udp,
 * cma_sidr_rep_handler).  Q_Keys as the kernel's cma_set_qkey: RDMA_UDP_QKEY
 * for the UDP and IB port spaces, the IPoIB broadcast group's for IPoIB.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

#include "cm/ip_pdata.h"
#include "cm/runtime.h"
#include "lib/cma.h"
#include "lib/cma_roce.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

/* SIDR_REQ: 4.096 us * 2^20 per try (the kernel's 1 << (20 - 8) ms), 15 retries. */
#define SIDR_TIMEOUT 20

/* The IPoIB broadcast group of the default partition: ff12:401b:ffff::ffff:ffff. */
static void bcast_mgid(uint8_t mgid[16], uint16_t pkey)
{
	static const uint8_t g[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0,	0,
				      0,    0,	  0,	0,    0xff, 0xff, 0xff, 0xff};

	memcpy(mgid, g, 16);
	mgid[4] = (uint8_t)((pkey | 0x8000) >> 8);
	mgid[5] = (uint8_t)(pkey | 0x8000);
}

int cma_bcast_record(struct cma_port *p, struct sa_mcmember *out)
{
	struct cm_runtime *rt;
	struct sa_mcmember q, *recs = NULL;
	unsigned n = 0;
	int rc;

	cma_lock();
	if (p->bcast_valid) {
		*out = p->bcast;
		cma_unlock();
		return 0;
	}
	cma_unlock();
	rc = cma_port_runtime(p, &rt);
	if (rc)
		return rc;
	memset(&q, 0, sizeof(q));
	bcast_mgid(q.mgid, 0xffff);
	rc = sa_mcmember_query(cm_runtime_sa(rt), &q, SA_MCMR_COMP_MGID, &recs, &n);
	if (rc)
		return rc;
	if (!n) {
		free(recs);
		return -ENOENT;
	}
	cma_lock();
	p->bcast = recs[0];
	p->bcast_valid = true;
	*out = p->bcast;
	cma_unlock();
	free(recs);
	return 0;
}

int cma_ud_qkey(struct cma_id *id, uint32_t *qkey)
{
	struct sa_mcmember b;
	int rc;

	if (id->qkey) {
		*qkey = id->qkey;
		return 0;
	}
	if (id->id.ps != RDMA_PS_IPOIB) {
		id->qkey = RDMA_UDP_QKEY;
		*qkey = id->qkey;
		return 0;
	}
	if (!id->port)
		return -EINVAL;
	rc = cma_bcast_record(id->port, &b);
	if (rc)
		return rc;
	id->qkey = b.qkey;
	*qkey = id->qkey;
	return 0;
}

/* UD QP attributes: INIT with the Q_Key, RTR, RTS with sq_psn 0 (ucma_init_ud_qp). */
int cma_ud_init_qp_attr(struct cma_id *id, struct ibv_qp_attr *attr, int *mask)
{
	enum ibv_qp_state want = attr->qp_state;
	uint32_t qkey;
	int rc;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
		if (!id->port)
			return -EINVAL;
		rc = cma_ud_qkey(id, &qkey);
		if (rc)
			return rc;
		rc = cma_pkey_index(id->port, cma_id_pkey(id), &attr->pkey_index);
		if (rc)
			return rc;
		attr->port_num = id->port->port_num;
		attr->qkey = qkey;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		return 0;
	case IBV_QPS_RTS:
		attr->sq_psn = 0;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		return 0;
	default:
		return -EINVAL;
	}
}

/* An address handle's attributes along a path (ib_init_ah_attr_from_path). */
void cma_ah_from_path(const struct cma_id *id, const struct cm_path *p, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = p->dlid;
	ah->sl = p->sl;
	ah->static_rate = p->rate;
	ah->port_num = id->id.port_num;
	if (!p->subnet_local) {
		ah->is_global = 1;
		memcpy(ah->grh.dgid.raw, p->dgid, 16);
		ah->grh.flow_label = p->flow_label;
		ah->grh.hop_limit = p->hop_limit;
		ah->grh.traffic_class = p->traffic_class;
		ah->grh.sgid_index = 0;
	}
	/* RoCE hook: the GID table entry of the local address (RoCEv2). */
	if (id->port)
		cma_roce_ah_attr(id->port, ah);
}

/* ---- active side ---- */

int cma_ud_connect(struct cma_id *id, struct rdma_conn_param *param)
{
	struct cm_rt_cmd c = {.op = CM_RT_SIDR_REQ};
	struct cm_sidr_req_cmd *r = &c.sidr_req;
	struct cma_conn_link *spare;
	struct cm_runtime *rt;
	size_t off = id->id.route.addr.src_addr.sa_family == AF_IB ? 0 : CMA_IP_HDR_SIZE;
	int rc;

	if (param && param->private_data_len &&
	    (!param->private_data || param->private_data_len > CM_SIDR_REQ_PRIVATE_DATA_SIZE - off))
		return -EINVAL;
	c.user = id->cookie;
	r->service_id = cma_service_id(id->id.ps, cma_addr_port(&id->id.route.addr.dst_addr));
	if (id->id.route.addr.dst_addr.sa_family == AF_IB)
		r->service_id =
		    be64toh(((struct sockaddr_ib *)&id->id.route.addr.dst_addr)->sib_sid);
	r->pkey = id->cm_paths[0].pkey ? id->cm_paths[0].pkey : 0xffff;
	rc = cma_pkey_index(id->port, r->pkey, &r->pkey_index);
	if (rc)
		return rc;
	cm_runtime_path_addr(&id->cm_paths[0], r->pkey_index, &r->to);
	r->timeout = SIDR_TIMEOUT;
	r->max_cm_retries = cma_max_cm_retries();
	if (off && cm_ip_hdr_encode(r->private_data, sizeof(r->private_data),
				    &id->id.route.addr.src_addr, &id->id.route.addr.dst_addr))
		return -EINVAL;
	r->private_data_len = (uint8_t)off;
	if (param && param->private_data_len) {
		memcpy(r->private_data + off, param->private_data, param->private_data_len);
		r->private_data_len = (uint8_t)(off + param->private_data_len);
	}
	/* The map's link first: once the SIDR_REQ is out, nothing may fail. */
	cma_lock();
	rc = cma_conn_reserve(id->port, &spare);
	cma_unlock();
	if (!rc)
		rc = cma_port_runtime(id->port, &rt);
	if (!rc)
		rc = cm_runtime_exec(rt, &c);
	if (rc) {
		free(spare);
		return rc;
	}
	cma_lock();
	if (!id->has_conn && !id->sidr_done) {
		cma_conn_add_reserved(id->port, c.id, id, &spare); /* cannot fail */
		id->has_conn = true;
		id->conn = c.id;
	}
	cma_unlock();
	free(spare);
	return 0;
}

/* On the loop, under cma.lock: the SIDR answer (or its timeout) for an active id. */
struct cma_event *cma_ud_on_sidr_rep(struct cma_id *id, const struct cm_event *ev)
{
	struct cma_event *e;

	mad_loop_assert_owned(cma.loop);
	cma_assert_locked();
	id->sidr_done = true;
	if (ev->type == CM_EV_SIDR_REQ_ERROR)
		return cma_event_new(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
	if (ev->sidr_rep.status != CM_SIDR_SUCCESS) {
		/* The kernel reports a refused SIDR as UNREACHABLE with its status. */
		e = cma_event_new(id, RDMA_CM_EVENT_UNREACHABLE, ev->sidr_rep.status);
	} else if (id->qkey && ev->sidr_rep.qkey != id->qkey) {
		return cma_event_new(id, RDMA_CM_EVENT_ADDR_ERROR, -EINVAL);
	} else {
		id->qkey = ev->sidr_rep.qkey;
		e = cma_event_new(id, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (e) {
			cma_ah_from_path(id, &id->cm_paths[0], &e->ev.param.ud.ah_attr);
			e->ev.param.ud.qp_num = ev->sidr_rep.qpn;
			e->ev.param.ud.qkey = ev->sidr_rep.qkey;
		}
	}
	if (e) {
		size_t n = ev->private_data_len < CM_SIDR_REP_PRIVATE_DATA_SIZE
			       ? ev->private_data_len
			       : CM_SIDR_REP_PRIVATE_DATA_SIZE;

		memcpy(e->pdata, ev->private_data, n);
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = CM_SIDR_REP_PRIVATE_DATA_SIZE;
	}
	return e;
}

/* ---- passive side ---- */

static int sidr_rep(struct cma_id *id, uint8_t status, uint32_t qpn, uint32_t qkey,
		    const void *pdata, uint8_t len)
{
	struct cm_rt_cmd c = {.op = CM_RT_SIDR_REP};
	struct cm_runtime *rt;
	int rc;

	if (len > CM_SIDR_REP_PRIVATE_DATA_SIZE || (len && !pdata))
		return -EINVAL;
	cma_lock();
	if (!id->has_conn || !id->passive) {
		cma_unlock();
		return -EINVAL;
	}
	c.id = id->conn;
	rt = id->port->rt;
	cma_unlock();
	c.sidr_rep.status = status;
	c.sidr_rep.qpn = qpn & 0xffffff;
	c.sidr_rep.qkey = qkey;
	if (len)
		memcpy(c.sidr_rep.private_data, pdata, len);
	c.sidr_rep.private_data_len = len;
	rc = cm_runtime_exec(rt, &c);
	if (rc)
		return rc;
	/* A SIDR exchange ends with its REP: the engine forgets it, so do we. */
	cma_lock();
	if (id->has_conn) {
		cma_conn_del(id->port, id->conn, id);
		id->has_conn = false;
	}
	cma_unlock();
	return 0;
}

int cma_ud_accept(struct cma_id *id, struct rdma_conn_param *param)
{
	uint32_t qkey, qpn;
	int rc;

	if (!id->id.qp && !param)
		return -EINVAL;
	rc = cma_ud_qkey(id, &qkey);
	if (rc)
		return rc;
	qpn = id->id.qp ? id->id.qp->qp_num : param->qp_num;
	return sidr_rep(id, CM_SIDR_SUCCESS, qpn, qkey, param ? param->private_data : NULL,
			param ? param->private_data_len : 0);
}

int cma_ud_reject(struct cma_id *id, const void *pdata, uint8_t len)
{
	return sidr_rep(id, CM_SIDR_REJECT, 0, 0, pdata, len);
}
