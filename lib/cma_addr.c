/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rdma_bind_addr, rdma_resolve_addr, rdma_resolve_route: addresses come
 * from the address sources (lib/addr.h: the address file, IPoIB netlink),
 * never from a kernel; routes are PathRecords from the port's SA client
 * (cached), as the kernel's cma_query_ib_route asks for them.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/ib.h>

#include "cm/runtime.h"
#include "lib/addr.h"
#include "lib/addr_sa.h"
#include "lib/cma.h"
#include "lib/cma_roce.h" /* RoCE hooks */
#include "sa/client.h"
#include "sa/sa_wire.h"

/* ---- sockaddr helpers ---- */

socklen_t cma_addr_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

uint16_t cma_addr_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	case AF_INET6:
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	case AF_IB:
		return (uint16_t)be64toh(((const struct sockaddr_ib *)sa)->sib_sid);
	default:
		return 0;
	}
}

void cma_addr_set_port(struct sockaddr *sa, uint16_t port)
{
	switch (sa->sa_family) {
	case AF_INET:
		((struct sockaddr_in *)sa)->sin_port = htons(port);
		break;
	case AF_INET6:
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
		break;
	case AF_IB: {
		struct sockaddr_ib *sib = (struct sockaddr_ib *)sa;
		uint64_t sid = be64toh(sib->sib_sid) & ~0xffffull;

		sib->sib_sid = htobe64(sid | port);
		break;
	}
	default:
		break;
	}
}

bool cma_addr_is_wildcard(const struct sockaddr *sa)
{
	static const uint8_t zero[16];

	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	case AF_INET6:
		return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, zero, 16);
	case AF_IB:
		return !memcmp(&((const struct sockaddr_ib *)sa)->sib_addr, zero, 16);
	default:
		return true;
	}
}

bool cma_addr_is_loopback(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) ==
		       IN_LOOPBACKNET;
	case AF_INET6:
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	case AF_IB: {
		const uint8_t *a = (const uint8_t *)&((const struct sockaddr_ib *)sa)->sib_addr;
		static const uint8_t lo[16] = {[15] = 1};

		return !memcmp(a, lo, 16);
	}
	default:
		return false;
	}
}

bool cma_addr_any(const struct sockaddr *sa)
{
	return cma_addr_is_wildcard(sa) || cma_addr_is_loopback(sa);
}

bool cma_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	switch (a->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	case AF_INET6:
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	case AF_IB:
		return !memcmp(&((const struct sockaddr_ib *)a)->sib_addr,
			       &((const struct sockaddr_ib *)b)->sib_addr, 16);
	default:
		return false;
	}
}

static void set_loopback(struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_addr = in6addr_loopback;
}

/*
 * The GID an address names, and the P_Key of its partition (pkey may be
 * NULL): AF_IB carries both, IP goes to the sources (the address file's
 * P_Key column, the IPoIB link's P_Key).
 */
static int addr_to_gid(const struct sockaddr *sa, uint8_t gid[16], uint16_t *pkey)
{
	if (sa->sa_family == AF_IB) {
		const struct sockaddr_ib *sib = (const struct sockaddr_ib *)sa;

		memcpy(gid, &sib->sib_addr, 16);
		if (pkey)
			*pkey = ntohs(sib->sib_pkey) & 0x7fff ? ntohs(sib->sib_pkey) : 0xffff;
		return 0;
	}
	if (!cma.addrs)
		return -ENOENT;
	return madcm_addrs_gid_pkey(cma.addrs, sa, gid, pkey);
}

/* ---- bind ---- */

static int bind_locked(struct cma_id *id, const struct sockaddr *addr)
{
	struct sockaddr *src = (struct sockaddr *)&id->id.route.addr.src_addr;
	socklen_t len = cma_addr_len(addr);
	struct cma_port *port = NULL;
	int rc;

	if (!len)
		return -EAFNOSUPPORT;
	if (id->state != CMA_IDLE)
		return -EINVAL;
	if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)addr;

		if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !s6->sin6_scope_id)
			return -EINVAL;
	}
	if (!cma_addr_any(addr)) {
		uint8_t gid[16];

		/* RoCE hook: an IP of an Ethernet port is one of its GIDs. */
		if (!(port = cma_roce_bind_port(addr, gid)) &&
		    (addr_to_gid(addr, gid, NULL) || !(port = cma_port_by_gid(gid))))
			return -EADDRNOTAVAIL;
	}
	memset(&id->id.route.addr.src_storage, 0, sizeof(id->id.route.addr.src_storage));
	memcpy(src, addr, len);
	if (!id->afonly_set)
		id->afonly = addr->sa_family == AF_INET; /* bindv6only = 0 */
	rc = cma_ports_bind(id, src);
	if (rc)
		return rc;
	if (port) {
		cma_attach(id, port);
		memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, port->gid, 16);
		id->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
		/* RoCE hook: the SGID is the bound address's GID. */
		if (cma_roce_port(port))
			cma_roce_addr_gid(addr, id->id.route.addr.addr.ibaddr.sgid.raw);
	}
	cma_set_state(id, CMA_ADDR_BOUND);
	return 0;
}

/*
 * The CM of the ports a bound id may listen or connect on (its own, or
 * every port for a wildcard) opens at bind, so that rdma_listen takes
 * REQs at once, as the kernel's CM, there from boot, does.  Opened at the
 * listen, it cost the listen milliseconds in which a client, told the
 * port between bind and listen (qperf 0.4.11 does so), had its REQ
 * rejected.  A failure is the listen's or the connect's to report.
 */
static void open_bound_ports(struct cma_port *port)
{
	struct cm_runtime *rt;

	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++) {
			struct cma_port *p = &cma.devs[d].ports[i];

			if (port ? p == port : p->active)
				(void)cma_port_runtime(p, &rt);
		}
}

CMA_EXPORT int rdma_bind_addr(struct rdma_cm_id *cm_id, struct sockaddr *addr)
{
	struct cma_port *port;
	int rc;

	if (!cm_id || !addr)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	rc = bind_locked(cma_id_of(cm_id), addr);
	port = cma_id_of(cm_id)->port;
	cma_unlock();
	if (rc)
		return cma_err(-rc);
	open_bound_ports(port);
	return 0;
}

/* ---- resolve_addr ---- */

/* The local port for a destination GID: same subnet prefix, active first. */
static struct cma_port *port_for(const uint8_t dgid[16])
{
	struct cma_port *p = cma_port_by_gid(dgid);

	if (p)
		return p;
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++) {
			p = &cma.devs[d].ports[i];
			if (p->active && !memcmp(p->gid, dgid, 8))
				return p;
		}
	return cma_first_active_port();
}

struct addr_wait {
	struct cma_id *id;
	unsigned gen;
	int timeout_ms;
};

static void fill_src_ip(struct sockaddr *src, const struct cma_port *p)
{
	struct sockaddr_storage mine;
	uint16_t port = cma_addr_port(src);

	if (!cma_addr_is_wildcard(src) || src->sa_family == AF_IB || !cma.addrs)
		return;
	if (!madcm_addrs_ip(cma.addrs, p->gid, src->sa_family, &mine)) {
		memcpy(src, &mine, cma_addr_len((struct sockaddr *)&mine));
		cma_addr_set_port(src, port);
	}
}

/*
 * The end of a successful resolution, under cma.lock.  The id's P_Key is
 * the destination address's: the partition its route and QP use.
 */
static int resolved_locked(struct cma_id *id, struct cma_port *p, const uint8_t sgid[16],
			   const uint8_t dgid[16], uint16_t pkey)
{
	struct rdma_ib_addr *ib = &id->id.route.addr.addr.ibaddr;
	struct cma_event *e;

	cma_assert_locked();
	if (!id->port)
		cma_attach(id, p);
	memcpy(ib->sgid.raw, sgid, 16);
	memcpy(ib->dgid.raw, dgid, 16);
	ib->pkey = htons(pkey);
	cma_set_state(id, CMA_ADDR_RESOLVED);
	e = cma_event_new(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (!e)
		return -ENOMEM;
	cma_report(id, e);
	return 0;
}

/*
 * An address neither the file nor IPoIB knows: ask the SA for the
 * ServiceRecord a madcm listener registered for it (lib/addr_sa.h); with
 * none, ADDR_ERROR -ETIMEDOUT once timeout_ms has passed, as an ARP
 * resolution that gets no answer ends in the kernel.
 */
static void *addr_sa_thread(void *arg)
{
	struct addr_wait *w = arg;
	struct cma_id *id = w->id;
	struct timespec t0, t1, ts;
	struct cm_runtime *rt = NULL;
	struct cma_port *p;
	uint8_t dgid[16];
	uint16_t pkey = 0xffff;
	int rc = -ENOENT;
	long left;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cma_lock();
	p = id->port ? id->port : cma_first_active_port();
	cma_unlock();
	if (p && !cma_port_runtime(p, &rt) && cm_runtime_sa(rt))
		rc = madcm_addr_sa_resolve_rt(rt, &id->id.route.addr.dst_addr, dgid, &pkey);
	if (rc) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = w->timeout_ms -
		       ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left > 0) {
			ts.tv_sec = left / 1000;
			ts.tv_nsec = (left % 1000) * 1000000;
			nanosleep(&ts, NULL);
		}
	}
	cma_lock();
	if (id->op_gen == w->gen && id->state == CMA_ADDR_QUERY) {
		if (!rc) {
			fill_src_ip((struct sockaddr *)&id->id.route.addr.src_addr, p);
			rc = resolved_locked(id, p, p->gid, dgid, pkey);
		}
		if (rc && cma_comp_exch(id, CMA_ADDR_QUERY, CMA_ADDR_BOUND)) {
			struct cma_event *e =
			    cma_event_new(id, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT);

			if (e)
				cma_report(id, e);
		}
	}
	id->pins--;
	pthread_cond_broadcast(&id->cond);
	cma_unlock();
	free(w);
	return NULL;
}

static int resolve_locked(struct cma_id *id, const struct sockaddr *dst, int timeout_ms)
{
	struct sockaddr *src = (struct sockaddr *)&id->id.route.addr.src_addr;
	uint8_t dgid[16], rgid[16];
	uint16_t pkey = 0xffff;
	struct cma_port *p;
	bool roce = false;

	memset(&id->id.route.addr.dst_storage, 0, sizeof(id->id.route.addr.dst_storage));
	memcpy(&id->id.route.addr.dst_addr, dst, cma_addr_len(dst));
	/* A new destination: paths of an earlier one (RDMA_OPTION_IB_PATH) go. */
	id->id.route.num_paths = 0;
	if (cma_addr_is_multicast(dst) && dst->sa_family != AF_IB) {
		/* A group: the local port (bound, or the first active) serves it. */
		p = id->port ? id->port : cma_first_active_port();
		if (!p)
			return -ENODEV;
		memset(dgid, 0, 16);
		fill_src_ip(src, p);
	} else if (cma_addr_any(dst)) {
		/* Loopback: the first active port talks to itself (cma_bind_loopback). */
		p = id->port ? id->port : cma_first_active_port();
		if (!p)
			return -ENODEV;
		memcpy(dgid, p->gid, 16);
		if (cma_addr_is_wildcard(src))
			set_loopback(src);
	} else if (!cma_roce_resolve(id, dst, &p, rgid, dgid)) {
		/* RoCE hook: both GIDs follow from the addresses; no address source. */
		roce = true;
	} else {
		if (addr_to_gid(dst, dgid, &pkey)) {
			struct addr_wait *w = malloc(sizeof(*w));
			pthread_t t;
			pthread_attr_t a;

			if (!w)
				return -ENOMEM;
			w->id = id;
			w->gen = ++id->op_gen;
			w->timeout_ms = timeout_ms > 0 ? timeout_ms : 2000;
			/* Pin the id: destroy waits for its pins. */
			id->pins++;
			pthread_attr_init(&a);
			pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
			if (pthread_create(&t, &a, addr_sa_thread, w)) {
				id->pins--;
				free(w);
				pthread_attr_destroy(&a);
				return -ENOMEM;
			}
			pthread_attr_destroy(&a);
			return 0;
		}
		p = id->port ? id->port : port_for(dgid);
		if (!p)
			return -ENODEV;
		fill_src_ip(src, p);
	}
	return resolved_locked(id, p, roce ? rgid : p->gid, dgid, pkey);
}

CMA_EXPORT int rdma_resolve_addr(struct rdma_cm_id *cm_id, struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *id = cma_id_of(cm_id);
	int rc = 0;

	if (!cm_id || !dst_addr || !cma_addr_len(dst_addr))
		return cma_err(!cm_id || !dst_addr ? EINVAL : EAFNOSUPPORT);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (src_addr && src_addr->sa_family && src_addr->sa_family != dst_addr->sa_family)
		return cma_err(EINVAL);
	cma_lock();
	if (id->state == CMA_IDLE) {
		struct sockaddr_storage any;

		memset(&any, 0, sizeof(any));
		if (src_addr && src_addr->sa_family) {
			memcpy(&any, src_addr, cma_addr_len(src_addr));
		} else {
			any.ss_family = dst_addr->sa_family;
			if (dst_addr->sa_family == AF_INET6)
				((struct sockaddr_in6 *)&any)->sin6_scope_id =
				    ((struct sockaddr_in6 *)dst_addr)->sin6_scope_id;
			if (dst_addr->sa_family == AF_IB)
				((struct sockaddr_ib *)&any)->sib_pkey =
				    ((struct sockaddr_ib *)dst_addr)->sib_pkey;
		}
		rc = bind_locked(id, (struct sockaddr *)&any);
	} else if (id->id.route.addr.src_addr.sa_family != dst_addr->sa_family) {
		rc = -EINVAL;
	}
	if (!rc && !cma_comp_exch(id, CMA_ADDR_BOUND, CMA_ADDR_QUERY) &&
	    !cma_comp_exch(id, CMA_ADDR_RESOLVED, CMA_ADDR_QUERY))
		rc = -EINVAL;
	if (!rc) {
		rc = resolve_locked(id, dst_addr, timeout_ms);
		if (rc)
			cma_set_state(id, CMA_ADDR_BOUND);
	}
	cma_unlock();
	if (rc)
		return cma_err(-rc);
	return cma_complete(id);
}

/* ---- resolve_route ---- */

void cma_set_path(struct cma_id *id, int i, const struct cm_path *p)
{
	struct ibv_sa_path_rec *r = &id->paths[i];

	memset(r, 0, sizeof(*r));
	memcpy(r->dgid.raw, p->dgid, 16);
	memcpy(r->sgid.raw, p->sgid, 16);
	r->dlid = htons(p->dlid);
	r->slid = htons(p->slid);
	r->flow_label = htonl(p->flow_label);
	r->hop_limit = p->hop_limit;
	r->traffic_class = p->traffic_class;
	r->reversible = 1;
	r->numb_path = 1;
	r->pkey = htons(p->pkey);
	r->sl = p->sl;
	r->mtu_selector = 2; /* exactly */
	r->mtu = p->mtu;
	r->rate_selector = 2;
	r->rate = p->rate;
	r->packet_life_time_selector = 2;
	r->packet_life_time = p->packet_life_time;
	id->cm_paths[i] = *p;
	id->id.route.path_rec = id->paths;
	if (id->id.route.num_paths < i + 1)
		id->id.route.num_paths = i + 1;
}

/* A route query's outcome, under cma.lock: the path and ROUTE_RESOLVED, or ROUTE_ERROR. */
static void route_answer_locked(struct cma_id *id, int rc, const struct cm_path *cp)
{
	struct cma_event *e;

	cma_assert_locked();
	if (!rc) {
		id->id.route.num_paths = 0;
		cma_set_path(id, 0, cp);
		cma_set_state(id, CMA_ROUTE_RESOLVED);
		e = cma_event_new(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	} else {
		cma_set_state(id, CMA_ADDR_RESOLVED);
		e = cma_event_new(id, RDMA_CM_EVENT_ROUTE_ERROR, rc);
	}
	if (e)
		cma_report(id, e);
}

struct route_q {
	struct cma_id *id;
	unsigned gen;
};

static void route_done(void *arg, int status, const struct sa_path *paths, unsigned n)
{
	struct route_q *q = arg;
	struct cma_id *id = q->id;
	struct cm_path cp = {0}; /* read only when rc is 0; zeroed for GCC's LTO flow analysis */
	int rc = status;

	if (!rc && !n)
		rc = -EHOSTUNREACH;
	if (!rc)
		rc = cm_path_from_sa(&paths[0], &cp);
	cma_lock();
	if (q->gen == id->op_gen && id->state == CMA_ROUTE_QUERY)
		route_answer_locked(id, rc, &cp);
	id->pins--;
	pthread_cond_broadcast(&id->cond);
	cma_unlock();
	free(q);
}

CMA_EXPORT int rdma_resolve_route(struct rdma_cm_id *cm_id, int timeout_ms)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct sa_path_query pq;
	struct cm_runtime *rt;
	struct route_q *q;
	int rc;

	(void)timeout_ms; /* the SA client's timeouts and retries apply */
	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	if (!cma_comp_exch(id, CMA_ADDR_RESOLVED, CMA_ROUTE_QUERY)) {
		cma_unlock();
		return cma_err(EINVAL);
	}
	if (cma_roce_port(id->port)) {
		/* RoCE hook: no SA; the route is built from the GIDs (cma_roce.c). */
		struct cma_port *p = id->port;
		struct cm_path cp = {0}; /* as in route_done */

		rc = cma_roce_route(id, &cp);
		route_answer_locked(id, rc, &cp);
		cma_unlock();
		/*
		 * The port's CM is opened by its first route, as on InfiniBand
		 * where the route's SA query needs it, so that the first
		 * rdma_connect sends its REQ at once (the kernel's CM is there
		 * from boot).  A failure is the connect's to report.
		 */
		if (!rc)
			(void)cma_port_runtime(p, &rt);
		return cma_complete(id);
	}
	memset(&pq, 0, sizeof(pq));
	memcpy(pq.rec.sgid, id->id.route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(pq.rec.dgid, id->id.route.addr.addr.ibaddr.dgid.raw, 16);
	pq.rec.reversible = true;
	pq.rec.numb_path = 1;
	pq.rec.pkey = ntohs(id->id.route.addr.addr.ibaddr.pkey);
	pq.comp_mask = SA_PR_COMP_SGID | SA_PR_COMP_DGID | SA_PR_COMP_REVERSIBLE |
		       SA_PR_COMP_NUMB_PATH | SA_PR_COMP_P_KEY;
	if (id->tos_set) {
		/* As cma_query_ib_route: IPv4 TOS as QoS class, IPv6 as TClass. */
		if (id->id.route.addr.src_addr.sa_family == AF_INET) {
			pq.rec.qos_class = id->tos;
			pq.comp_mask |= SA_PR_COMP_QOS_CLASS;
		} else {
			pq.rec.tclass = id->tos;
			pq.comp_mask |= SA_PR_COMP_TCLASS;
		}
	}
	q = malloc(sizeof(*q));
	if (!q) {
		cma_set_state(id, CMA_ADDR_RESOLVED);
		cma_unlock();
		return cma_err(ENOMEM);
	}
	q->id = id;
	q->gen = ++id->op_gen;
	id->pins++; /* until the answer */
	cma_unlock();
	rc = cma_port_runtime(id->port, &rt);
	if (!rc)
		rc = cm_runtime_path_query_async(rt, &pq, route_done, q);
	if (rc) {
		cma_lock();
		id->pins--;
		cma_set_state(id, CMA_ADDR_RESOLVED);
		pthread_cond_broadcast(&id->cond);
		cma_unlock();
		free(q);
		return cma_err(-rc);
	}
	return cma_complete(id);
}

/* RDMA_OPTION_IB_PATH: the caller's PathRecords (wire layout) become the route. */
int cma_set_ib_paths(struct cma_id *id, const struct ibv_path_data *pd, size_t n)
{
	struct cma_event *e;

	cma_lock();
	if (id->state != CMA_ADDR_RESOLVED) {
		cma_unlock();
		return cma_err(EINVAL);
	}
	id->id.route.num_paths = 0;
	for (size_t i = 0; i < n; i++) {
		struct sa_path sp;
		struct cm_path cp;

		sa_path_decode(&pd[i].path, &sp);
		if (cm_path_from_sa(&sp, &cp)) {
			cma_unlock();
			return cma_err(EINVAL);
		}
		cma_set_path(id, (int)i, &cp);
	}
	/* As the kernel's ucma_set_ib_path: the route is resolved, say so. */
	cma_set_state(id, CMA_ROUTE_RESOLVED);
	e = cma_event_new(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (e)
		cma_report(id, e);
	cma_unlock();
	return e ? 0 : cma_err(ENOMEM);
}

/*
 * SA ServiceRecords for a port's addresses (lib/addr_sa.h): while a port
 * has listeners, each address the address sources give it is registered,
 * so that peers whose sources do not know it find it at the SA.
 *
 * None of it is waited for: the kernel's rdma_listen and rdma_destroy_id
 * do no SA work, and a server that replaces its listener while its
 * client already connects must not REJ the client meanwhile.  The
 * records only serve address resolution by SA, so a failure is counted
 * and said once, and the listener stays.  A port's records move in
 * rounds (a Set or a Delete of each), the next round only when the last
 * one's answers are in: the SA then applies them in order, a listener
 * destroyed before its Set was answered is followed by the Delete, and
 * one listening again right after a destroy ends registered.
 */
static pthread_cond_t sr_idle = PTHREAD_COND_INITIALIZER; /* a round ended */
static bool sr_exiting;					  /* delete all, wanted or not */
static struct cma_publish_stats pst;			  /* under cma.lock */
static bool sr_said;

void cma_addr_forget(void)
{
	/* A fork()ed child: a parent's thread may have waited on it. */
	sr_idle = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
}

static void sr_done(void *arg, int status);

static void sr_fail(struct cma_port *p, int status)
{
	pst.errors++;
	if (!p->sr_err)
		p->sr_err = status;
}

/* Start the round that brings the port's records where wanted; cma.lock held. */
static void sr_step(struct cma_port *p)
{
	static const int families[] = {AF_INET, AF_INET6};
	bool want = p->published && !sr_exiting;
	struct sa_client *sa;

	cma_assert_locked();
	if (p->sr_busy || want == p->sr_at_sa)
		return;
	/*
	 * No SA client (RoCE, or the runtime went with its madcmd, which
	 * deleted the session's records): nothing is, or can be, there.
	 * Posting under cma.lock is safe: the loop's queue lock is a leaf,
	 * and a client closed after this is closed after the post (the
	 * runtime is taken from p->rt under this lock first).
	 */
	sa = p->rt ? cm_runtime_sa(p->rt) : NULL;
	if (!sa || !cma.addrs || cma_roce_port(p)) {
		p->sr_at_sa = false;
		return;
	}
	p->sr_at_sa = want;
	p->sr_err = 0;
	pst.rounds++;
	for (unsigned i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		struct sockaddr_storage ip;
		uint16_t pkey = 0xffff;
		uint8_t gid[16];
		int rc;

		if (madcm_addrs_ip(cma.addrs, p->gid, families[i], &ip))
			continue;
		/* The record names the address's partition: a peer connects in it. */
		madcm_addrs_gid_pkey(cma.addrs, (struct sockaddr *)&ip, gid, &pkey);
		rc = madcm_addr_sa_publish_async(sa, want, (struct sockaddr *)&ip, p->gid, pkey,
						 SA_SR_LEASE_INFINITE, sr_done, p);
		if (rc)
			sr_fail(p, rc);
		else
			p->sr_busy++;
	}
}

/* One record's answer, on the loop. */
static void sr_done(void *arg, int status)
{
	struct cma_port *p = arg;

	mad_loop_assert_owned(cma.loop);
	cma_assert_unlocked();
	cma_lock();
	if (status && !(status == -ENOENT && !p->sr_at_sa))
		sr_fail(p, status); /* a Delete of what is gone already is done */
	else if (p->sr_at_sa)
		pst.sets++;
	else
		pst.deletes++;
	if (--p->sr_busy == 0) {
		if (p->sr_err && !sr_said) {
			sr_said = true;
			fprintf(
			    stderr,
			    "librdmacm (madcm): %s port %u: the SA did not take the ServiceRecords "
			    "of its addresses (%s): peers find them by their own address "
			    "sources only\n",
			    ibv_get_device_name(p->dev->verbs->device), p->port_num,
			    strerror(-p->sr_err));
		}
		sr_step(p);
		if (!p->sr_busy)
			pthread_cond_broadcast(&sr_idle);
	}
	cma_unlock();
}

void cma_addr_publish(struct cma_port *p, bool on)
{
	cma_assert_unlocked();
	cma_lock();
	if (on)
		p->published++;
	else if (p->published)
		p->published--;
	sr_step(p);
	cma_unlock();
}

static bool sr_all_idle(void)
{
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++)
			if (cma.devs[d].ports[i].sr_busy)
				return false;
	return true;
}

void cma_addr_unpublish_all(unsigned ms)
{
	struct timespec end;

	cma_assert_locked();
	sr_exiting = true;
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++)
			sr_step(&cma.devs[d].ports[i]);
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	/* A round in flight ends first, then its port's Deletes go (sr_done). */
	while (!sr_all_idle())
		if (pthread_cond_timedwait(&sr_idle, &cma.lock, &end) == ETIMEDOUT)
			break;
}

void cma_publish_stats(struct cma_publish_stats *out)
{
	cma_lock();
	*out = pst;
	out->in_flight = 0;
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++)
			out->in_flight += cma.devs[d].ports[i].sr_busy;
	cma_unlock();
}
