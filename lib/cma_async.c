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
 *     joined again (cma_mc_rejoin), since the SA may have lost them.
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

		ibv_ack_async_event(&ev);
		switch (t) {
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_GID_CHANGE:
			change = true;
			break;
		case IBV_EVENT_PORT_ACTIVE:
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
		pthread_mutex_lock(&cma.lock);
		refresh(&d->ports[n - 1]);
		if (change) {
			struct port_arg a = {&d->ports[n - 1]};

			cma_ids_foreach(addr_change, &a);
		}
		pthread_mutex_unlock(&cma.lock);
		if (rejoin)
			cma_mc_rejoin(&d->ports[n - 1]);
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
