/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rdma_getaddrinfo and the endpoint calls (rdma_create_ep, rdma_get_request,
 * rdma_destroy_ep), the RDMACM_1.4 addrinfo calls and rdma_write_cm_event.
 *
 * Names are looked up in madcm's address sources first (the address file
 * lists host names as ibacm's does), then through libc's getaddrinfo,
 * whose EAI_* code is what a failure returns, as librdmacm does.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

#include "cm/runtime.h"
#include "lib/addr.h"
#include "lib/cma.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt);

static void set_defaults(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints, int socktype,
			 int protocol)
{
	if (hints && hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else
		rai->ai_qp_type = socktype == SOCK_DGRAM ? IBV_QPT_UD : IBV_QPT_RC;
	if (hints && hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (protocol == IPPROTO_UDP || rai->ai_qp_type == IBV_QPT_UD)
		rai->ai_port_space = RDMA_PS_UDP;
	else
		rai->ai_port_space = RDMA_PS_TCP;
}

static int set_addr(struct rdma_addrinfo *rai, const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *copy = malloc(len);

	if (!copy)
		return EAI_MEMORY;
	memcpy(copy, sa, len);
	if (rai->ai_flags & RAI_PASSIVE) {
		rai->ai_src_addr = copy;
		rai->ai_src_len = len;
	} else {
		rai->ai_dst_addr = copy;
		rai->ai_dst_len = len;
	}
	rai->ai_family = sa->sa_family;
	return 0;
}

/* AF_IB from IPv6 text (RAI_FAMILY with ai_family AF_IB): the GID and the
 * port space's service ID, as librdmacm converts it. */
static int to_ib(struct rdma_addrinfo *rai, const struct sockaddr_in6 *s6)
{
	struct sockaddr_ib sib;

	memset(&sib, 0, sizeof(sib));
	sib.sib_family = AF_IB;
	memcpy(&sib.sib_addr, &s6->sin6_addr, 16);
	sib.sib_flowinfo = s6->sin6_flowinfo;
	sib.sib_pkey = htons(0xffff);
	sib.sib_sid = htobe64(((uint64_t)rai->ai_port_space << 16) + ntohs(s6->sin6_port));
	if (ntohs(s6->sin6_port))
		sib.sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK | RDMA_IB_IP_PORT_MASK);
	return set_addr(rai, (struct sockaddr *)&sib, sizeof(sib));
}

static int lookup(const char *node, const char *service, const struct rdma_addrinfo *hints,
		  struct rdma_addrinfo *rai)
{
	struct addrinfo h, *ai = NULL;
	struct sockaddr_storage ss;
	int family = hints ? hints->ai_family : AF_UNSPEC;
	int rc;

	memset(&h, 0, sizeof(h));
	if (hints) {
		if (hints->ai_flags & RAI_PASSIVE)
			h.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			h.ai_flags |= AI_NUMERICHOST;
	}
	h.ai_family = family == AF_IB ? AF_INET6 : family;
	h.ai_socktype = hints && hints->ai_qp_type == IBV_QPT_UD ? SOCK_DGRAM : SOCK_STREAM;
	/* A host name madcm's address file knows (never for numeric hosts). */
	if (node && !(h.ai_flags & AI_NUMERICHOST) && cma.addrs) {
		struct in6_addr tmp;

		if (inet_pton(AF_INET, node, &tmp) != 1 && inet_pton(AF_INET6, node, &tmp) != 1 &&
		    madcm_addrs_name(cma.addrs, node, h.ai_family, &ss, 1) == 1) {
			char *end = NULL;
			long port = service ? strtol(service, &end, 10) : 0;

			if (service && (*end || port < 0 || port > 65535)) {
				struct servent *se = getservbyname(service, "tcp");

				if (!se)
					return EAI_SERVICE;
				port = ntohs((uint16_t)se->s_port);
			}
			cma_addr_set_port((struct sockaddr *)&ss, (uint16_t)port);
			set_defaults(rai, hints, h.ai_socktype, 0);
			rai->ai_dst_canonname = NULL;
			if (family == AF_IB && ss.ss_family == AF_INET6)
				return to_ib(rai, (struct sockaddr_in6 *)&ss);
			return set_addr(rai, (struct sockaddr *)&ss,
					cma_addr_len((struct sockaddr *)&ss));
		}
	}
	rc = getaddrinfo(node, service, &h, &ai);
	if (rc)
		return rc;
	set_defaults(rai, hints, ai->ai_socktype, ai->ai_protocol);
	if (family == AF_IB && ai->ai_family == AF_INET6 && hints && (hints->ai_flags & RAI_FAMILY))
		rc = to_ib(rai, (struct sockaddr_in6 *)ai->ai_addr);
	else
		rc = set_addr(rai, ai->ai_addr, ai->ai_addrlen);
	if (!rc && ai->ai_canonname) {
		char **cn =
		    rai->ai_flags & RAI_PASSIVE ? &rai->ai_src_canonname : &rai->ai_dst_canonname;

		*cn = strdup(ai->ai_canonname);
	}
	freeaddrinfo(ai);
	return rc;
}

CMA_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *n = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = n;
	}
}

CMA_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *rai;
	int rc;

	if (!res || (!node && !service && !hints))
		return cma_err(EINVAL);
	if (cma_init())
		return -1;
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return cma_err(ENOMEM);
	if (hints) {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
	}
	if (node || service) {
		rc = lookup(node, service, hints, rai);
		if (rc) {
			rdma_freeaddrinfo(rai);
			return rc;
		}
	} else {
		set_defaults(rai, hints, SOCK_STREAM, 0);
	}
	/* A source the caller named goes with an active result. */
	if (!rai->ai_src_len && hints && hints->ai_src_len && hints->ai_src_addr) {
		rai->ai_src_addr = malloc(hints->ai_src_len);
		if (!rai->ai_src_addr) {
			rdma_freeaddrinfo(rai);
			return cma_err(ENOMEM);
		}
		memcpy(rai->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
		rai->ai_src_len = hints->ai_src_len;
	}
	if (!rai->ai_dst_len && hints && hints->ai_dst_len && hints->ai_dst_addr &&
	    !(rai->ai_flags & RAI_PASSIVE)) {
		rai->ai_dst_addr = malloc(hints->ai_dst_len);
		if (!rai->ai_dst_addr) {
			rdma_freeaddrinfo(rai);
			return cma_err(ENOMEM);
		}
		memcpy(rai->ai_dst_addr, hints->ai_dst_addr, hints->ai_dst_len);
		rai->ai_dst_len = hints->ai_dst_len;
	}
	*res = rai;
	return 0;
}

/* ---- endpoints ---- */

CMA_EXPORT int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct cma_id *id;
	int rc;

	if (!out || !res)
		return cma_err(EINVAL);
	if (cma_create_id_qpt(NULL, &cm_id, NULL, (enum rdma_port_space)res->ai_port_space,
			      (enum ibv_qp_type)res->ai_qp_type))
		return -1;
	id = cma_id_of(cm_id);
	cm_id->pd = pd;
	if (res->ai_flags & RAI_PASSIVE) {
		rc = rdma_bind_addr(cm_id, res->ai_src_addr);
		if (rc)
			goto err;
		if (qp_init_attr) {
			id->qp_init_attr = malloc(sizeof(*qp_init_attr));
			if (!id->qp_init_attr) {
				errno = ENOMEM;
				goto err;
			}
			*id->qp_init_attr = *qp_init_attr;
			id->qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		}
		*out = cm_id;
		return 0;
	}
	rc = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
	if (rc)
		goto err;
	if (res->ai_route_len && res->ai_route) {
		rc = rdma_set_option(cm_id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res->ai_route,
				     res->ai_route_len);
		if (!rc)
			rc = cma_complete(id);
	} else {
		rc = rdma_resolve_route(cm_id, 2000);
	}
	if (rc)
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		rc = rdma_create_qp(cm_id, pd, qp_init_attr);
		if (rc)
			goto err;
	}
	*out = cm_id;
	return 0;
err : {
	int e = errno;

	rdma_destroy_ep(cm_id);
	errno = e;
	return -1;
}
}

CMA_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (cma_id_inherited(id)) {
		errno = EBADF;
		return;
	}
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

CMA_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct cma_id *l = cma_id_of(listen);
	struct rdma_cm_event *ev;

	if (!listen || !out)
		return cma_err(EINVAL);
	if (cma_id_inherited(listen))
		return cma_err(EBADF);
	if (!l->sync)
		return cma_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->status || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		int e = ev->status ? (ev->status < 0 ? -ev->status : ev->status) : EINVAL;

		listen->event = ev;
		return cma_err(e);
	}
	if (l->qp_init_attr) {
		struct ibv_qp_init_attr attr = *l->qp_init_attr;

		if (rdma_create_qp(ev->id, listen->pd, &attr)) {
			int e = errno;

			listen->event = ev;
			return cma_err(e);
		}
	}
	*out = ev->id;
	ev->id->event = ev;
	return 0;
}

/* ---- RDMACM_1.4 ---- */

CMA_EXPORT int rdma_write_cm_event(struct rdma_cm_id *cm_id, enum rdma_cm_event_type event,
				   int status, uint64_t arg)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct cma_event *e;

	if (!cm_id || event != RDMA_CM_EVENT_USER)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	e = cma_event_new(id, event, status);
	if (!e) {
		cma_unlock();
		return cma_err(ENOMEM);
	}
	e->ev.param.arg = arg;
	cma_report(id, e);
	cma_unlock();
	return 0;
}

/*
 * rdma_resolve_addrinfo: the lookup runs now (names and DNS as
 * rdma_getaddrinfo; with RAI_SA, ServiceRecords of the service name or
 * numeric service ID from the SA of the id's port) and its outcome comes
 * as ADDRINFO_RESOLVED, whose list rdma_query_addrinfo hands out, or
 * ADDRINFO_ERROR with a negative errno.
 */
static int sa_lookup(struct cma_id *id, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **out)
{
	struct sa_service q, *rec = NULL;
	struct rdma_addrinfo *head = NULL, **tail = &head;
	struct cm_runtime *rt;
	uint64_t mask = 0;
	unsigned n = 0;
	char *end;
	int rc;

	memset(&q, 0, sizeof(q));
	if (service) {
		unsigned long long sid = strtoull(service, &end, 0);

		if (*service && !*end) {
			q.id = sid;
			mask |= SA_SR_COMP_SERVICE_ID;
		} else {
			snprintf(q.name, sizeof(q.name), "%s", service);
			mask |= SA_SR_COMP_SERVICE_NAME;
		}
	}
	rc = cma_port_runtime(id->port, &rt);
	if (rc)
		return rc;
	/* Through madcmd, its host-wide cache answers (SERVICE_QUERY). */
	rc = cm_runtime_service_query(rt, &q, mask, &rec, &n);
	if (rc)
		return rc;
	for (unsigned i = 0; i < n; i++) {
		struct rdma_addrinfo *rai = calloc(1, sizeof(*rai));
		struct sockaddr_ib sib;

		if (!rai) {
			rc = -ENOMEM;
			break;
		}
		*tail = rai;
		tail = &rai->ai_next;
		rai->ai_flags = hints ? hints->ai_flags : 0;
		set_defaults(rai, hints, SOCK_STREAM, 0);
		memset(&sib, 0, sizeof(sib));
		sib.sib_family = AF_IB;
		memcpy(&sib.sib_addr, rec[i].gid, 16);
		sib.sib_pkey = htons(rec[i].pkey);
		sib.sib_sid = htobe64(rec[i].id);
		sib.sib_sid_mask = htobe64(~0ull);
		rai->ai_flags &= ~RAI_PASSIVE;
		if (set_addr(rai, (struct sockaddr *)&sib, sizeof(sib))) {
			rc = -ENOMEM;
			break;
		}
		if (rec[i].name[0])
			rai->ai_dst_canonname = strdup(rec[i].name);
	}
	free(rec);
	if (!rc && !head)
		rc = -ENOENT;
	if (rc) {
		rdma_freeaddrinfo(head);
		return rc;
	}
	*out = head;
	return 0;
}

CMA_EXPORT int rdma_resolve_addrinfo(struct rdma_cm_id *cm_id, const char *node,
				     const char *service, const struct rdma_addrinfo *hints)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct rdma_addrinfo *res = NULL;
	struct cma_event *e;
	int rc;

	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (hints && (hints->ai_flags & RAI_SA) && (hints->ai_flags & RAI_DNS))
		return cma_err(EINVAL);
	if (hints && (hints->ai_flags & RAI_SA)) {
		if (node || !id->port)
			return cma_err(EINVAL);
		rc = sa_lookup(id, service, hints, &res);
	} else {
		struct rdma_addrinfo h;

		if (hints)
			h = *hints;
		else
			memset(&h, 0, sizeof(h));
		h.ai_flags &= ~(RAI_SA | RAI_DNS);
		rc = rdma_getaddrinfo(node, service, &h, &res);
		if (rc == -1)
			rc = -errno;
		else if (rc)
			rc = -EHOSTUNREACH; /* an EAI_* code: the name did not resolve */
	}
	cma_lock();
	rdma_freeaddrinfo(id->addrinfo);
	id->addrinfo = rc ? NULL : res;
	e = cma_event_new(id, rc ? RDMA_CM_EVENT_ADDRINFO_ERROR : RDMA_CM_EVENT_ADDRINFO_RESOLVED,
			  rc);
	if (e)
		cma_report(id, e);
	cma_unlock();
	if (!e)
		return cma_err(ENOMEM);
	return cma_complete(id);
}

CMA_EXPORT int rdma_query_addrinfo(struct rdma_cm_id *cm_id, struct rdma_addrinfo **info)
{
	struct cma_id *id = cma_id_of(cm_id);

	if (!cm_id || !info)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	*info = id->addrinfo;
	id->addrinfo = NULL; /* the caller frees it with rdma_freeaddrinfo */
	cma_unlock();
	return *info ? 0 : cma_err(ENOENT);
}
