/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Connected ids: listen, connect, accept, reject, establish, notify,
 * disconnect and the QP attributes, translated onto CM runtime commands
 * with the parameters the kernel's rdma_cm puts on the wire (cma.c
 * cma_connect_ib, cma_accept_ib) and librdmacm's own checks
 * (ucma_valid_param) and QP moves.
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
#include "lib/cma_roce.h" /* RoCE hook */

/* An engine listener on one port for one service ID, shared by listen ids. */
struct cma_listen_sid {
	struct cma_listen_sid *next;
	uint64_t service_id;
	int engine_id;
	unsigned refs;
	/*
	 * The runtime the engine listener is on: the port's may be another
	 * by the time it is unlistened (its madcmd went away and a new one
	 * serves the port).  A lost runtime is never freed (cma_daemon.c).
	 */
	struct cm_runtime *rt;
};

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

/* ---- listen ---- */

static int port_listen(struct cma_port *p, uint64_t sid)
{
	struct cm_runtime *rt;
	struct cma_listen_sid *l;
	int rc;

	rc = cma_port_runtime(p, &rt);
	if (rc)
		return rc;
	cma_lock();
	for (l = p->lsids; l; l = l->next)
		if (l->service_id == sid && l->rt == rt) {
			l->refs++;
			cma_unlock();
			return 0;
		}
	cma_unlock();
	rc = cm_runtime_listen(rt, sid, ~0ull, 0);
	if (rc < 0)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l) {
		struct cm_rt_cmd c = {.op = CM_RT_UNLISTEN, .id = (uint32_t)rc};

		cm_runtime_exec(rt, &c);
		return -ENOMEM;
	}
	l->service_id = sid;
	l->engine_id = rc;
	l->refs = 1;
	l->rt = rt;
	cma_lock();
	l->next = p->lsids;
	p->lsids = l;
	cma_unlock();
	return 0;
}

static void port_unlisten(struct cma_port *p, uint64_t sid)
{
	struct cma_listen_sid *l, **pl;
	struct cm_rt_cmd c = {.op = CM_RT_UNLISTEN};

	cma_lock();
	for (pl = &p->lsids; (l = *pl); pl = &l->next)
		if (l->service_id == sid)
			break;
	if (!l || --l->refs) {
		cma_unlock();
		return;
	}
	*pl = l->next;
	cma_unlock();
	/*
	 * On the runtime it was made on, not p->rt read again here: that
	 * one may be a new runtime by now, whose engine id this is not.
	 */
	c.id = (uint32_t)l->engine_id;
	cm_runtime_exec(l->rt, &c);
	free(l);
}

static uint64_t id_sid(struct cma_id *id)
{
	return cma_service_id(id->id.ps, cma_addr_port(&id->id.route.addr.src_addr));
}

void cma_unlisten(struct cma_id *id)
{
	uint64_t sid;

	cma_assert_unlocked();
	cma_lock();
	if (!id->listening) {
		cma_unlock();
		return;
	}
	id->listening = false;
	sid = id_sid(id);
	cma_unlock();
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++) {
			struct cma_port *p = &cma.devs[d].ports[i];

			if (!id->port || id->port == p) {
				port_unlisten(p, sid);
				/* The Deletes follow in the background. */
				if (p->rt)
					cma_addr_publish(p, false);
			}
		}
}

CMA_EXPORT int rdma_listen(struct rdma_cm_id *cm_id, int backlog)
{
	struct cma_id *id = cma_id_of(cm_id);
	int rc = 0, ok = 0, first_err = 0;
	uint64_t sid;

	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (backlog <= 0 || backlog > CMA_MAX_BACKLOG)
		backlog = CMA_MAX_BACKLOG;
	cma_lock();
	rc = id->state == CMA_IDLE;
	cma_unlock();
	if (rc) {
		struct sockaddr_in any = {.sin_family = AF_INET};

		if (rdma_bind_addr(cm_id, (struct sockaddr *)&any))
			return -1;
	}
	rc = 0;
	cma_lock();
	if (id->state == CMA_LISTEN) {
		id->backlog = backlog;
		cma_unlock();
		return 0;
	}
	if (id->state != CMA_ADDR_BOUND) {
		cma_unlock();
		return cma_err(EINVAL);
	}
	if (id->reuseaddr) {
		rc = cma_ports_listen_check(id);
		if (rc) {
			cma_unlock();
			return cma_err(-rc);
		}
		id->reuseaddr = false;
	}
	cma_set_state(id, CMA_LISTEN);
	id->backlog = backlog;
	sid = id_sid(id);
	/*
	 * Taking REQs from the moment the first port's CM listens, as the
	 * kernel's listener does: a client may connect the moment the
	 * server's previous listener went.
	 */
	id->listening = true;
	cma_unlock();
	/* A specific address listens on its port; a wildcard on every port. */
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++) {
			struct cma_port *p = &cma.devs[d].ports[i];

			if (id->port && id->port != p)
				continue;
			rc = port_listen(p, sid);
			if (rc) {
				first_err = first_err ? first_err : rc;
				continue;
			}
			/* Its ServiceRecords go to the SA in the background. */
			cma_addr_publish(p, true);
			ok++;
		}
	if (!ok) {
		cma_lock();
		id->listening = false;
		id->state = CMA_ADDR_BOUND;
		cma_unlock();
		return cma_err(-first_err);
	}
	/* Ports whose CM could not open (said on stderr) take no REQs. */
	return 0;
}

/* ---- connect ---- */

static int check_param(struct cma_id *id, const struct rdma_conn_param *p)
{
	const struct ibv_device_attr *da = &id->port->dev->attr;

	if (id->id.ps != RDMA_PS_TCP)
		return 0;
	if (!id->id.qp && !p)
		return -EINVAL;
	if (!p)
		return 0;
	if (p->responder_resources != RDMA_MAX_RESP_RES &&
	    p->responder_resources > da->max_qp_rd_atom)
		return -EINVAL;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    p->initiator_depth > da->max_qp_init_rd_atom)
		return -EINVAL;
	return 0;
}

static size_t ip_hdr_len(const struct cma_id *id)
{
	return id->id.route.addr.src_addr.sa_family == AF_IB ? 0 : CMA_IP_HDR_SIZE;
}

CMA_EXPORT int rdma_connect(struct rdma_cm_id *cm_id, struct rdma_conn_param *param)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct cma_conn_link *spare;
	struct cm_connect_cmd c;
	struct cm_runtime *rt;
	size_t off;
	uint32_t conn;
	int rc;

	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	if (id->state != CMA_ROUTE_RESOLVED || !id->port) {
		cma_unlock();
		return cma_err(EINVAL);
	}
	if (id->id.qp_type == IBV_QPT_UD) {
		cma_set_state(id, CMA_CONNECT);
		cma_unlock();
		rc = cma_ud_connect(id, param);
		if (rc) {
			cma_lock();
			id->state = CMA_ROUTE_RESOLVED;
			cma_unlock();
			return cma_err(-rc);
		}
		return cma_complete(id);
	}
	rc = check_param(id, param);
	/* An XRC target QP receives only: it cannot start a connection. */
	if (!rc && id->id.qp_type == IBV_QPT_XRC_RECV)
		rc = -EINVAL;
	off = ip_hdr_len(id);
	if (!rc && param && param->private_data_len &&
	    (!param->private_data || param->private_data_len > CM_REQ_PRIVATE_DATA_SIZE - off))
		rc = -EINVAL;
	if (rc) {
		cma_unlock();
		return cma_err(-rc);
	}
	memset(&c, 0, sizeof(c));
	id->initiator_depth = param && param->initiator_depth != RDMA_MAX_INIT_DEPTH
				  ? param->initiator_depth
				  : (uint8_t)min_int(id->port->dev->attr.max_qp_init_rd_atom, 255);
	id->responder_resources = param && param->responder_resources != RDMA_MAX_RESP_RES
				      ? param->responder_resources
				      : (uint8_t)min_int(id->port->dev->attr.max_qp_rd_atom, 255);
	id->seq_num = cma_random32() & 0xffffff;
	c.user = id->cookie;
	c.service_id = cma_service_id(id->id.ps, cma_addr_port(&id->id.route.addr.dst_addr));
	if (id->id.route.addr.dst_addr.sa_family == AF_IB)
		c.service_id =
		    be64toh(((struct sockaddr_ib *)&id->id.route.addr.dst_addr)->sib_sid);
	c.qpn = id->id.qp ? id->id.qp->qp_num : (param ? param->qp_num & 0xffffff : 0);
	c.starting_psn = id->seq_num;
	c.qp_type = id->id.qp_type == IBV_QPT_XRC_SEND ? CM_QPT_XRC : CM_QPT_RC;
	c.responder_resources = id->responder_resources;
	c.initiator_depth = id->initiator_depth;
	c.remote_cm_response_timeout = cma_cm_response_timeout();
	c.local_cm_response_timeout = cma_cm_response_timeout();
	c.max_cm_retries = cma_max_cm_retries();
	c.retry_count = param ? (uint8_t)min_int(7, param->retry_count) : 7;
	c.rnr_retry_count = param ? (uint8_t)min_int(7, param->rnr_retry_count) : 7;
	c.flow_control = param ? param->flow_control : 0;
	c.srq = id->id.qp ? id->id.qp->srq != NULL : (param ? param->srq : 0);
	c.ece_vendor_id = id->ece_vendor & 0xffffff;
	c.ece_attr_mod = id->ece_attr;
	c.primary = id->cm_paths[0];
	/* The REQ's and the QP's partition: the path's (cm_init_av_by_path). */
	if (!c.primary.pkey)
		c.primary.pkey = 0xffff;
	rc = cma_pkey_index(id->port, c.primary.pkey, &c.pkey_index);
	if (rc) {
		cma_unlock();
		return cma_err(-rc);
	}
	c.has_alternate = id->id.route.num_paths > 1;
	if (c.has_alternate)
		c.alternate = id->cm_paths[1];
	if (off && cm_ip_hdr_encode(c.private_data, sizeof(c.private_data),
				    &id->id.route.addr.src_addr, &id->id.route.addr.dst_addr)) {
		cma_unlock();
		return cma_err(EINVAL);
	}
	c.private_data_len = (uint8_t)off;
	if (param && param->private_data_len) {
		memcpy(c.private_data + off, param->private_data, param->private_data_len);
		c.private_data_len = (uint8_t)(off + param->private_data_len);
	}
	/*
	 * The map's link before the REQ goes out: unmapped, the connection
	 * would escape rdma_destroy_id and the exit's release, and a failure
	 * after the send would leave the peer a REQ of a connect that failed.
	 */
	rc = cma_conn_reserve(id->port, &spare);
	if (rc) {
		cma_unlock();
		free(spare);
		return cma_err(-rc);
	}
	cma_set_state(id, CMA_CONNECT);
	cma_unlock();
	rc = cma_port_runtime(id->port, &rt);
	if (!rc)
		rc = cm_runtime_connect(rt, &c, &conn);
	cma_lock();
	if (rc) {
		id->state = CMA_ROUTE_RESOLVED;
		cma_unlock();
		free(spare);
		return cma_err(-rc);
	}
	if (!id->has_conn) {
		/* Events of this connection may have mapped it already. */
		cma_conn_add_reserved(id->port, conn, id, &spare); /* cannot fail */
		id->has_conn = true;
		id->conn = conn;
	}
	cma_unlock();
	free(spare);
	return cma_complete(id);
}

/* ---- accept / reject ---- */

CMA_EXPORT int rdma_accept(struct rdma_cm_id *cm_id, struct rdma_conn_param *param)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct cm_accept_cmd a;
	struct cm_runtime *rt;
	const struct ibv_device_attr *da;
	uint32_t conn, flags;
	int rc;

	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	if (id->state != CMA_CONNECT || !id->passive || !id->has_conn || id->established) {
		cma_unlock();
		return cma_err(EINVAL);
	}
	if (id->id.qp_type == IBV_QPT_UD) {
		/* SIDR_REP; the passive side of a datagram id gets no ESTABLISHED. */
		cma_unlock();
		rc = cma_ud_accept(id, param);
		return rc ? cma_err(-rc) : 0;
	}
	rc = check_param(id, param);
	if (!rc && param && param->private_data_len &&
	    (!param->private_data || param->private_data_len > CM_REP_PRIVATE_DATA_SIZE))
		rc = -EINVAL;
	if (rc) {
		cma_unlock();
		return cma_err(-rc);
	}
	da = &id->port->dev->attr;
	memset(&a, 0, sizeof(a));
	if (param && param->initiator_depth != RDMA_MAX_INIT_DEPTH)
		id->initiator_depth = param->initiator_depth;
	else
		id->initiator_depth =
		    (uint8_t)min_int(id->initiator_depth, da->max_qp_init_rd_atom);
	if (param && param->responder_resources != RDMA_MAX_RESP_RES)
		id->responder_resources = param->responder_resources;
	else
		id->responder_resources =
		    (uint8_t)min_int(id->responder_resources, da->max_qp_rd_atom);
	a.qpn = id->id.qp ? id->id.qp->qp_num : (param ? param->qp_num & 0xffffff : 0);
	a.starting_psn = id->seq_num;
	id->req_init = false; /* the accept fixes the connection's own from here */
	a.responder_resources = id->responder_resources;
	a.initiator_depth = id->initiator_depth;
	a.flow_control = param ? param->flow_control : 0;
	a.rnr_retry_count = param ? (uint8_t)min_int(7, param->rnr_retry_count) : 7;
	a.srq = id->id.qp ? id->id.qp->srq != NULL : (param ? param->srq : 0);
	a.ece_vendor_id = id->ece_vendor & 0xffffff;
	a.ece_attr_mod = id->ece_attr;
	if (param && param->private_data_len) {
		memcpy(a.private_data, param->private_data, param->private_data_len);
		a.private_data_len = param->private_data_len;
	}
	conn = id->conn;
	rt = id->port->rt;
	flags = CM_RT_QP_INIT | CM_RT_QP_AT_INIT;
	if (id->ack_timeout_set)
		flags |= CM_RT_QP_TIMEOUT(id->ack_timeout); /* as cma_conn_qp_attr */
	cma_unlock();
	if (id->id.qp)
		rc = cm_runtime_accept_qp(rt, conn, id->cookie, &a, id->id.qp, flags);
	else
		rc = cm_runtime_accept(rt, conn, id->cookie, &a);
	if (rc)
		return cma_err(-rc);
	return cma_complete(id);
}

static int reject(struct rdma_cm_id *cm_id, const void *pdata, uint8_t len, uint16_t reason)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct cm_rt_cmd c = {.op = CM_RT_REJECT};
	struct cm_runtime *rt;
	int rc;

	if (!cm_id || (len && !pdata))
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (cm_id->qp_type == IBV_QPT_UD) {
		rc = cma_ud_reject(id, pdata, len);
		return rc ? cma_err(-rc) : 0;
	}
	if (len > CM_REJ_PRIVATE_DATA_SIZE)
		return cma_err(EINVAL);
	cma_lock();
	/* Passive: a REQ not accepted; active: a REP not answered (CONNECT_RESPONSE). */
	if (!id->has_conn || id->established || (!id->passive && id->state != CMA_CONNECT)) {
		cma_unlock();
		return cma_err(EINVAL);
	}
	c.id = id->conn;
	c.reject.reason = reason;
	if (len)
		memcpy(c.reject.private_data, pdata, len);
	c.reject.private_data_len = len;
	rt = id->port->rt;
	cma_unlock();
	rc = cm_runtime_exec(rt, &c);
	if (rc)
		return cma_err(-rc);
	cma_lock();
	/* The engine forgets a rejected REQ: so does the id. */
	if (id->has_conn) {
		cma_conn_del(id->port, id->conn, id);
		id->has_conn = false;
	}
	cma_unlock();
	return 0;
}

CMA_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			   uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len, CM_REJ_CONSUMER_DEFINED);
}

CMA_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			       uint8_t private_data_len)
{
	/* The kernel's rdma_reject_ece: REJ "vendor option not supported". */
	return reject(id, private_data, private_data_len, CM_REJ_VENDOR_OPTION_NOT_SUPPORTED);
}

/* ---- establish / notify / disconnect ---- */

static int conn_op(struct rdma_cm_id *cm_id, enum cm_rt_op op, bool need_conn)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct cm_rt_cmd c = {.op = op};
	struct cm_runtime *rt;

	cma_lock();
	if (!id->has_conn) {
		cma_unlock();
		return need_conn ? -EINVAL : 0;
	}
	c.id = id->conn;
	rt = id->port->rt;
	cma_unlock();
	return cm_runtime_exec(rt, &c);
}

CMA_EXPORT int rdma_establish(struct rdma_cm_id *cm_id)
{
	struct cma_id *id = cma_id_of(cm_id);
	int rc;

	if (!cm_id || cm_id->qp)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (id->passive)
		return cma_err(EINVAL);
	/* Active side after CONNECT_RESPONSE: the RTU. */
	rc = conn_op(cm_id, CM_RT_RTU, true);
	if (rc)
		return cma_err(-rc);
	cma_lock();
	id->established = true;
	cma_unlock();
	return 0;
}

CMA_EXPORT int rdma_notify(struct rdma_cm_id *cm_id, enum ibv_event_type event)
{
	int rc;

	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (event != IBV_EVENT_COMM_EST)
		return cma_err(EINVAL);
	/* Data before the RTU: the passive side counts as established. */
	rc = conn_op(cm_id, CM_RT_ESTABLISH, true);
	return rc ? cma_err(-rc) : 0;
}

CMA_EXPORT int rdma_disconnect(struct rdma_cm_id *cm_id)
{
	struct cma_id *id = cma_id_of(cm_id);
	int rc;

	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	/* A connection that ended (TimeWait over, REJ) still disconnects: 0. */
	rc = id->has_conn || id->state == CMA_CONNECT || id->state == CMA_DISCONNECT ? 0 : -EINVAL;
	cma_unlock();
	if (rc)
		return cma_err(EINVAL);
	if (cm_id->qp)
		cma_qp_to_err(id);
	/* DREQ when established, DREP after a DREQ; else nothing (cma.c). */
	conn_op(cm_id, CM_RT_DISCONNECT, false);
	return cma_complete(id);
}

/* ---- QP attributes ---- */

int cma_init_qp_attr(struct cma_id *id, struct ibv_qp_attr *attr, int *mask)
{
	enum ibv_qp_state want = attr->qp_state;
	struct cm_runtime *rt = NULL;
	bool conn;
	uint32_t c;

	if (id->id.qp_type == IBV_QPT_UD)
		return cma_ud_init_qp_attr(id, attr, mask);
	cma_lock();
	conn = id->has_conn;
	c = id->conn;
	if (id->port)
		rt = id->port->rt;
	cma_unlock();
	if (!conn || !rt) {
		/* Before the handshake: INIT for a connected QP (cma_ib_init_qp_attr). */
		if (want != IBV_QPS_INIT || !id->port)
			return -EINVAL;
		uint16_t ix;
		int rc = cma_pkey_index(id->port, cma_id_pkey(id), &ix);

		if (rc)
			return rc;
		memset(attr, 0, sizeof(*attr));
		attr->pkey_index = ix;
		attr->qp_state = IBV_QPS_INIT;
		attr->port_num = id->port->port_num;
		attr->qp_access_flags = 0;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return 0;
	}
	return cma_conn_qp_attr(id, rt, c, attr, mask);
}

/*
 * The attributes of connection `conn` of runtime `rt`, which the caller
 * knows the id has (the REP's handler: no cma.lock taken for each of its
 * moves), with what rdma_connect and rdma_accept fixed for the id.
 */
int cma_conn_qp_attr(struct cma_id *id, struct cm_runtime *rt, uint32_t conn,
		     struct ibv_qp_attr *attr, int *mask)
{
	enum ibv_qp_state want = attr->qp_state;
	int rc = cm_runtime_init_qp_attr(rt, conn, want, attr, mask);

	if (rc)
		return rc;
	cma_roce_qp_attr(id->port, attr, *mask); /* RoCE hook: the GRH's SGID index */
	if (want == IBV_QPS_RTR) {
		attr->rq_psn = id->seq_num;
		if (*mask & IBV_QP_MAX_DEST_RD_ATOMIC)
			attr->max_dest_rd_atomic = id->responder_resources;
	}
	if (want == IBV_QPS_RTS) {
		if (*mask & IBV_QP_MAX_QP_RD_ATOMIC)
			attr->max_rd_atomic = id->initiator_depth;
		if (id->ack_timeout_set && (*mask & IBV_QP_TIMEOUT))
			attr->timeout = id->ack_timeout;
	}
	return 0;
}

CMA_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *cm_id, struct ibv_qp_attr *qp_attr,
				 int *qp_attr_mask)
{
	int rc;

	if (!cm_id || !qp_attr || !qp_attr_mask)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	rc = cma_init_qp_attr(cma_id_of(cm_id), qp_attr, qp_attr_mask);
	return rc ? cma_err(-rc) : 0;
}

/* ---- ECE ---- */

CMA_EXPORT int rdma_set_local_ece(struct rdma_cm_id *cm_id, struct ibv_ece *ece)
{
	struct cma_id *id = cma_id_of(cm_id);

	if (!cm_id || !ece || ece->comp_mask)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	id->ece_vendor = ece->vendor_id;
	id->ece_attr = ece->options;
	cma_unlock();
	return 0;
}

CMA_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *cm_id, struct ibv_ece *ece)
{
	struct cma_id *id = cma_id_of(cm_id);

	if (!cm_id || !ece)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	ece->vendor_id = id->remote_ece_vendor;
	ece->options = id->remote_ece_attr;
	ece->comp_mask = 0;
	cma_unlock();
	return 0;
}
