/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Port changes, from each device's verbs async events: one thread per
 * device, blocked in ibv_get_async_event on a context of its own (every
 * context hears port events; the context ids share is the application's,
 * whose QP events lib/ must not take):
 *   - a port that goes down or comes up, or whose LID or GID changes:
 *     RDMA_CM_EVENT_ADDR_CHANGE to every id bound to it (the kernel
 *     reports the change of what an id's address resolved to);
 *   - a port that comes up, a new LID or SM, or the SM's request to
 *     register again: the process's multicast groups on that port are
 *     joined again (cma_mc_rejoin), since the SA may have lost them, and
 *     its GID notice subscription is made again (cma_notice.c).
 *
 * Down and up are a service state per port (cma_port_service) that the
 * SA's GID out-of-service and in-service notices move too: whichever of
 * the two tells first makes the ADDR_CHANGE, the other finds the state
 * already there and makes none, so one change is one event.  A new LID
 * or GID is a change of address in itself: always an event.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cma.h"

struct port_arg {
	struct cma_port *p;
};

static void addr_change(struct cma_id *id, void *arg)
{
	struct port_arg *a = arg;
	struct cma_event *e;

	if (id->port != a->p || id->state == CMA_DESTROYING || id->state == CMA_IDLE)
		return;
	e = cma_event_new(id, RDMA_CM_EVENT_ADDR_CHANGE, 0);
	if (e)
		cma_report(id, e);
}

void cma_port_addr_change(struct cma_port *p)
{
	struct port_arg a = {p};

	cma_assert_locked();
	cma_ids_foreach(addr_change, &a);
}

bool cma_port_service(struct cma_port *p, bool up)
{
	int8_t now = up ? 1 : -1;

	cma_assert_locked();
	if (!p->service)
		p->service = p->active ? 1 : -1;
	if (p->service == now)
		return false;
	p->service = now;
	cma_port_addr_change(p);
	return true;
}

static void refresh(struct cma_port *p)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;

	if (!ibv_query_port(p->dev->verbs, p->port_num, &pa)) {
		p->active = pa.state == IBV_PORT_ACTIVE;
		p->lid = pa.lid;
	}
	if (!ibv_query_gid(p->dev->verbs, p->port_num, 0, &gid))
		memcpy(p->gid, gid.raw, 16);
}

static void *async_thread(void *arg)
{
	struct cma_device *d = arg;
	struct ibv_async_event ev;

	while (!ibv_get_async_event(d->async_ctx, &ev)) {
		enum ibv_event_type t = ev.event_type;
		int n = ev.element.port_num;
		bool change = false, rejoin = false;
		int service = 0; /* 1 up, -1 down: a service state change */
		struct cma_port *p;

		ibv_ack_async_event(&ev);
		switch (t) {
		case IBV_EVENT_PORT_ERR:
			service = -1;
			break;
		case IBV_EVENT_GID_CHANGE:
			change = true;
			break;
		case IBV_EVENT_PORT_ACTIVE:
			service = 1;
			rejoin = true;
			break;
		case IBV_EVENT_LID_CHANGE:
			change = rejoin = true;
			break;
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
			rejoin = true;
			break;
		default:
			continue; /* QP, CQ, SRQ events belong to the application */
		}
		if (n < 1 || n > d->nports)
			continue;
		p = &d->ports[n - 1];
		cma_lock();
		if (!p->service)
			p->service = p->active ? 1 : -1; /* what ids knew before this event */
		refresh(p);
		if (service)
			cma_port_service(p, service > 0);
		if (change) {
			if (t == IBV_EVENT_LID_CHANGE)
				p->service = 1; /* the SM configured it: in service */
			cma_port_addr_change(p);
		}
		cma_unlock();
		if (rejoin) {
			cma_mc_rejoin(p);
			cma_notice_port(p, true);
		}
	}
	return NULL;
}

void cma_async_start(struct cma_device *d)
{
	pthread_attr_t a;
	pthread_t t;

	d->async_ctx = ibv_open_device(d->verbs->device);
	if (!d->async_ctx)
		return; /* no port events: ADDR_CHANGE and rejoins are lost, nothing else */
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, async_thread, d)) {
		ibv_close_device(d->async_ctx);
		d->async_ctx = NULL;
	}
	pthread_attr_destroy(&a);
}
