/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rdma_cm_id lifetime, options, devices and ports.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/runtime.h"
#include "lib/cma.h"
#include "mad/zalloc.h"

static bool ps_supported(enum rdma_port_space ps, enum ibv_qp_type *qpt)
{
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		*qpt = IBV_QPT_RC;
		return true;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*qpt = IBV_QPT_UD;
		return true;
	default:
		return false;
	}
}

/* Live ids by cookie (the runtime hands cookies back in its events). */
#define COOKIE_BUCKETS 4096
static struct cma_id *by_cookie[COOKIE_BUCKETS];
static uint64_t next_cookie;

struct cma_id *cma_id_by_cookie(uint64_t cookie)
{
	cma_assert_locked();
	for (struct cma_id *i = by_cookie[cookie % COOKIE_BUCKETS]; i; i = i->cookie_next)
		if (i->cookie == cookie)
			return i;
	return NULL;
}

void cma_ids_foreach(void (*fn)(struct cma_id *id, void *arg), void *arg)
{
	cma_assert_locked();
	for (unsigned b = 0; b < COOKIE_BUCKETS; b++)
		for (struct cma_id *i = by_cookie[b]; i; i = i->cookie_next)
			fn(i, arg);
}

void cma_ids_forget(void)
{
	/* A fork()ed child: the ids there are the parent's (cma_fork.c). */
	for (unsigned b = 0; b < COOKIE_BUCKETS; b++)
		by_cookie[b] = NULL;
}

static void cookie_del(struct cma_id *id)
{
	for (struct cma_id **p = &by_cookie[id->cookie % COOKIE_BUCKETS]; *p;
	     p = &(*p)->cookie_next)
		if (*p == id) {
			*p = id->cookie_next;
			return;
		}
}

struct cma_id *cma_id_alloc(struct cma_channel *ch, void *context, enum rdma_port_space ps,
			    enum ibv_qp_type qpt)
{
	struct cma_id *id = zalloc(sizeof(*id));

	if (!id)
		return NULL;
	id->id.channel = &ch->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qpt;
	id->gen = cma.gen;
	id->state = CMA_IDLE;
	id->sync = ch->private_sync;
	ch->ids++;
	pthread_cond_init(&id->cond, NULL);
	id->cookie = ++next_cookie;
	id->cookie_next = by_cookie[id->cookie % COOKIE_BUCKETS];
	by_cookie[id->cookie % COOKIE_BUCKETS] = id;
	cma_publish_mark();
	return id;
}

void cma_id_free_locked(struct cma_id *id)
{
	cma_assert_locked();
	if (id->has_conn && id->port) /* no link may outlive its id */
		cma_conn_del(id->port, id->conn, id);
	cookie_del(id);
	cma_publish_mark();
	rdma_freeaddrinfo(id->addrinfo);
	cma_channel_unref_locked(cma_channel_of(&id->id));
	pthread_cond_destroy(&id->cond);
	free(id->qp_init_attr);
	free(id);
}

static int create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		     enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_channel *ch = (struct cma_channel *)channel;
	struct cma_id *id;

	if (cma_channel_inherited(channel))
		return cma_err(EBADF); /* the parent's (cma_fork.c) */
	cma_lock();
	if (!ch) {
		ch = cma_channel_create_locked();
		if (!ch) {
			cma_unlock();
			return cma_err(ENOMEM);
		}
		ch->private_sync = true;
	}
	id = cma_id_alloc(ch, context, ps, qpt);
	if (!id) {
		if (ch->private_sync && ch->ids == 0)
			cma_channel_unref_locked(ch);
		cma_unlock();
		return cma_err(ENOMEM);
	}
	cma_unlock();
	*out = &id->id;
	return 0;
}

CMA_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			      void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type qpt;

	if (!id)
		return cma_err(EINVAL);
	if (cma_init())
		return -1;
	if (!ps_supported(ps, &qpt))
		return cma_err(EPROTONOSUPPORT);
	return create_id(channel, id, context, ps, qpt);
}

/* rdma_create_id with an explicit QP type: librdmacm's internal variant. */
int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	enum ibv_qp_type def;

	if (!id)
		return cma_err(EINVAL);
	if (cma_init())
		return -1;
	/*
	 * RDMA_PS_IB takes RC, UD and XRC QPs (the kernel's ucma takes the
	 * caller's type for it alone); the others their own type.
	 */
	if (!ps_supported(ps, &def) ||
	    (qpt != def && !(ps == RDMA_PS_IB && (qpt == IBV_QPT_UD || qpt == IBV_QPT_XRC_SEND ||
						  qpt == IBV_QPT_XRC_RECV))))
		return cma_err(EPROTONOSUPPORT);
	return create_id(channel, id, context, ps, qpt);
}

void cma_release_conn(struct cma_id *id)
{
	struct cm_runtime *rt;
	uint32_t conn;

	cma_assert_unlocked();
	cma_lock();
	if (!id->has_conn || !id->port) {
		cma_unlock();
		return;
	}
	id->has_conn = false;
	conn = id->conn;
	rt = id->port->rt;
	cma_conn_del(id->port, conn, id);
	cma_unlock();
	/* REJ or DREQ as the kernel's cm_destroy_id sends them. */
	if (rt)
		cm_runtime_release(rt, conn);
}

CMA_EXPORT int rdma_destroy_id(struct rdma_cm_id *cm_id)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct cma_event *e, **pe;
	struct cma_channel *ch;

	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	if (id->sync && cm_id->event) {
		rdma_ack_cm_event(cm_id->event);
		cm_id->event = NULL;
	}
	cma_lock();
	id->state = CMA_DESTROYING;
	cma_unlock();
	cma_unlisten(id);
	cma_mc_leave_all(id);
	cma_release_conn(id);
	cma_lock();
	/*
	 * Events still queued for this id (not reported to the app yet) die
	 * with it; events the app holds must be acked first (librdmacm
	 * waits for them the same way).
	 */
	ch = cma_channel_of(cm_id);
	for (pe = &ch->head; (e = *pe);) {
		if (e->id == id || e->listen == id) {
			cma_event_unlink(ch, pe);
			if (e->listen && e->listen != id)
				e->listen->pending_reqs--;
			/* A CONNECT_REQUEST never seen: its new id goes too. */
			if (e->listen == id && e->id != id) {
				struct cma_id *child = e->id;

				free(e);
				id->events_acked++;
				cma_unlock();
				cma_release_conn(child);
				cma_lock();
				cma_id_free_locked(child);
				/* The queue may have changed meanwhile: look again. */
				pe = &ch->head;
				continue;
			}
			if (e->id == id && e->listen)
				e->listen->events_acked++;
			free(e);
			id->events_acked++;
			continue;
		}
		pe = &e->next;
	}
	while (id->events_acked < id->events_reported || id->pins)
		pthread_cond_wait(&id->cond, &cma.lock);
	cma_ports_unbind(id);
	/* The QP is the caller's (rdma_destroy_qp / rdma_destroy_ep), as in librdmacm. */
	cma_id_free_locked(id);
	cma_unlock();
	return 0;
}

CMA_EXPORT int rdma_migrate_id(struct rdma_cm_id *cm_id, struct rdma_event_channel *channel)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct cma_channel *old, *nch = (struct cma_channel *)channel;
	bool made = false;

	if (!cm_id)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	/* librdmacm: a sync id moves only to a real channel, its held event acked. */
	if (id->sync && !nch)
		return cma_err(EINVAL);
	if (cma_channel_inherited(channel))
		return cma_err(EBADF);
	if (id->sync && cm_id->event) {
		rdma_ack_cm_event(cm_id->event);
		cm_id->event = NULL;
	}
	cma_lock();
	if (!nch) {
		nch = cma_channel_create_locked();
		if (!nch) {
			cma_unlock();
			return cma_err(ENOMEM);
		}
		nch->private_sync = true;
		made = true;
	}
	old = cma_channel_of(cm_id);
	/*
	 * librdmacm waits until every event reported on the id is acked
	 * before it moves; queued ones move with it (the kernel's
	 * ucma_migrate_id moves them to the new file).
	 */
	while (id->events_acked + 0 < id->events_reported) {
		unsigned queued = 0;

		for (struct cma_event *e = old->head; e; e = e->next)
			if (e->id == id || e->listen == id)
				queued++;
		if (id->events_reported - id->events_acked <= queued)
			break;
		pthread_cond_wait(&id->cond, &cma.lock);
	}
	/* A listener's CONNECT_REQUESTs are its events: they move too. */
	for (struct cma_event **pe = &old->head, *e; (e = *pe);) {
		if (e->id != id && e->listen != id) {
			pe = &e->next;
			continue;
		}
		cma_event_unlink(old, pe);
		cma_event_queue(nch, e);
	}
	nch->ids++;
	cm_id->channel = &nch->ch;
	id->sync = made;
	cma_channel_unref_locked(old);
	cma_unlock();
	return 0;
}

/* ---- options ---- */

CMA_EXPORT int rdma_set_option(struct rdma_cm_id *cm_id, int level, int optname, void *optval,
			       size_t optlen)
{
	struct cma_id *id = cma_id_of(cm_id);
	int rc = 0;

	if (!cm_id || !optval)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	switch (level) {
	case RDMA_OPTION_ID:
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t)) {
				rc = EINVAL;
				break;
			}
			id->tos = *(uint8_t *)optval;
			id->tos_set = true;
			break;
		case RDMA_OPTION_ID_REUSEADDR:
			if (optlen != sizeof(int)) {
				rc = EINVAL;
				break;
			}
			/* Kernel: in IDLE, or reuse=1 in any state but LISTEN. */
			if ((*(int *)optval && id->state != CMA_LISTEN) || id->state == CMA_IDLE)
				id->reuseaddr = *(int *)optval != 0;
			else
				rc = EINVAL;
			break;
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int)) {
				rc = EINVAL;
				break;
			}
			if (id->state != CMA_IDLE && id->state != CMA_ADDR_BOUND) {
				rc = EINVAL;
				break;
			}
			id->afonly = *(int *)optval != 0;
			id->afonly_set = true;
			break;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t)) {
				rc = EINVAL;
				break;
			}
			id->ack_timeout = *(uint8_t *)optval;
			id->ack_timeout_set = true;
			break;
		default:
			rc = ENOPROTOOPT;
			break;
		}
		break;
	case RDMA_OPTION_IB:
		switch (optname) {
		case RDMA_OPTION_IB_PATH: {
			const struct ibv_path_data *pd = optval;
			size_t n = optlen / sizeof(*pd);

			if (!n || n > 2 || optlen % sizeof(*pd) || id->state != CMA_ADDR_RESOLVED) {
				rc = EINVAL;
				break;
			}
			cma_unlock();
			return cma_set_ib_paths(id, pd, n);
		}
		default:
			rc = ENOPROTOOPT;
			break;
		}
		break;
	default:
		rc = ENOPROTOOPT; /* the kernel says ENOSYS; madcm has no ENOSYS */
		break;
	}
	cma_unlock();
	return rc ? cma_err(rc) : 0;
}

/* ---- devices and ports ---- */

CMA_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **v;

	if (cma_init()) {
		if (num_devices)
			*num_devices = 0;
		return NULL;
	}
	v = calloc((size_t)cma.ndevs + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (int i = 0; i < cma.ndevs; i++)
		v[i] = cma.devs[i].verbs;
	if (num_devices)
		*num_devices = cma.ndevs;
	return v;
}

CMA_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

static uint16_t port_of(const struct sockaddr *sa)
{
	return htons(cma_addr_port(sa));
}

CMA_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? port_of(&id->route.addr.src_addr) : 0;
}

CMA_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? port_of(&id->route.addr.dst_addr) : 0;
}
