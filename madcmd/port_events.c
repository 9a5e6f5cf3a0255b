/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The verbs async events of each served port (madcmd_params.port_events),
 * which drop the port's path cache (PATH_QUERY's) at once:
 *   - IBV_EVENT_CLIENT_REREGISTER: the SM asks clients to register again
 *     (a new or restarted SM, whose paths may differ from the last one's);
 *   - IBV_EVENT_PKEY_CHANGE: the P_Key table changed (a path's P_Key may
 *     no longer be the port's);
 *   - SM_CHANGE, LID_CHANGE, GID_CHANGE, PORT_ERR, PORT_ACTIVE: what the
 *     SA client's once-a-second look at the port (sa/client.c) also finds,
 *     here without waiting for it.
 * One verbs context per served port, its async fd non-blocking in the
 * loop's fd set (tag MADCMD_TAG_EVENTS | port index): no thread.  A port
 * whose device cannot be opened in verbs is logged once and keeps the
 * SA client's polling only.  A context hears the events of every port of
 * its device: each port takes its own.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>

#include <infiniband/verbs.h>

#include "madcmd/madcmd_int.h"
#include "sa/client.h"

static struct ibv_context *open_ca(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list)
		return NULL;
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	if (!ctx && !errno)
		errno = ENODEV;
	ibv_free_device_list(list);
	return ctx;
}

void madcmd_port_events_open(struct madcmd_served *p)
{
	struct madcmd *d = p->d;
	struct ibv_context *ctx;
	int fl, rc;

	if (!d->p.port_events || p->events)
		return;
	errno = 0;
	ctx = open_ca(p->attr.ca_name);
	if (!ctx) {
		rc = errno ? -errno : -ENODEV;
		goto fail;
	}
	fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK)) {
		rc = -errno;
		ibv_close_device(ctx);
		goto fail;
	}
	rc = mad_loop_set_ctl(d->loop, EPOLL_CTL_ADD, ctx->async_fd, MADCMD_TAG_EVENTS | p->index,
			      EPOLLIN);
	if (rc) {
		ibv_close_device(ctx);
		goto fail;
	}
	p->events = ctx;
	return;
fail:
	if (!p->events_warned)
		madcmd_log(LOG_WARNING,
			   "%s/%d: no verbs async events (%s): path cache flushed on polled "
			   "port changes only",
			   p->attr.ca_name, p->attr.portnum, strerror(-rc));
	p->events_warned = true;
}

void madcmd_port_events_close(struct madcmd_served *p)
{
	struct ibv_context *ctx = p->events;

	if (!ctx)
		return;
	mad_loop_set_ctl(p->d->loop, EPOLL_CTL_DEL, ctx->async_fd, 0, 0);
	ibv_close_device(ctx);
	p->events = NULL;
}

/* Flush the port's path cache for `why`, counted in `counter`. */
static void flush(struct madcmd_served *p, uint64_t *counter, const char *why)
{
	(*counter)++;
	if (p->rt)
		sa_client_flush_cache(cm_runtime_sa(p->rt));
	madcmd_log(LOG_INFO, "%s/%d: %s: path cache flushed", p->attr.ca_name, p->attr.portnum,
		   why);
}

static void event(struct madcmd_served *p, const struct ibv_async_event *ev)
{
	if (ev->element.port_num != p->attr.portnum)
		return; /* another port of the device: its own context takes it */
	switch (ev->event_type) {
	case IBV_EVENT_CLIENT_REREGISTER:
		flush(p, &p->c.flush_rereg, "client reregistration");
		break;
	case IBV_EVENT_PKEY_CHANGE:
		flush(p, &p->c.flush_pkey, "P_Key table change");
		break;
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_PORT_ACTIVE:
		flush(p, &p->c.flush_port, ibv_event_type_str(ev->event_type));
		break;
	default:
		break; /* no QP, CQ or SRQ of ours */
	}
}

void madcmd_port_events_ready(struct madcmd *d, uint32_t index)
{
	struct madcmd_served *p = index < d->nports ? &d->ports[index] : NULL;
	struct ibv_async_event ev;

	if (!p || !p->events)
		return;
	/* Level-triggered: a bounded number a turn, the rest at the next. */
	for (int i = 0; i < 64; i++) {
		if (ibv_get_async_event(p->events, &ev)) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			goto broken;
		}
		/* Port events only (no QP of ours): nothing to hold, acked at once. */
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			goto broken;
		event(p, &ev);
	}
	return;
broken:
	/* The device failed or its fd broke: no more events, and no spin on it. */
	madcmd_log(LOG_WARNING, "%s/%d: verbs async events stopped: polled port changes only",
		   p->attr.ca_name, p->attr.portnum);
	madcmd_port_events_close(p);
}
