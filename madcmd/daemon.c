/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The daemon's ports: every Active port of every CA gets a CM runtime on
 * the daemon's loop (its engine's events routed by madcmd_cm_event, its
 * SA client opened) and an SA proxy agent.  Ports not served at start
 * (not Active yet, as when madcmd starts at boot before the SM has brought
 * the link up, or whose CM agent another process still holds) are looked
 * at again every rescan_ms and served once they open.  So is a port whose
 * device went away (its umad fd hung up, cm_sessions.c's port_gone) once
 * the device is back, as the kernel's rdma_cm takes a device added again:
 * its old runtime and proxy are closed when its sessions have been reaped,
 * and the port is opened anew in the same slot.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "madcmd/madcmd_int.h"

static const char *state_name(uint8_t st)
{
	static const char *const n[] = {"?", "Down", "Init", "Armed", "Active"};

	return st < 5 ? n[st] : "?";
}

/* Into `p` (a new slot, or a gone port's, released). */
static int open_served(struct madcmd *d, struct madcmd_served *p, const struct mad_port_attr *a)
{
	bool fresh = p == &d->ports[d->nports];
	unsigned index = (unsigned)(p - d->ports);
	struct cm_runtime_params rp;
	uint64_t guid;
	int rc;

	memset(p, 0, sizeof(*p));
	p->d = d;
	p->index = index;
	p->attr = *a; /* found by it again if the open fails */
	p->proxy_portid = -1;
	p->proxy_fd = -1;
	memset(&rp, 0, sizeof(rp));
	rp.loop = d->loop;
	rp.ops = d->p.ops;
	rp.ops_ctx = d->ops_ctx;
	rp.ca = a->ca_name;
	rp.port = a->portnum;
	rp.sa = true;
	rp.sa_timeout_ms = d->p.sa_timeout_ms;
	rp.on_loop_event = madcmd_cm_event;
	rp.on_loop_event_arg = p;
	rp.service_bound = madcmd_ps_service_bound;
	rp.service_bound_arg = d;
	rc = cm_runtime_open(&p->rt, &rp);
	if (rc) {
		p->gone = !fresh; /* still a released slot, tried again */
		return rc;
	}
	if (cm_runtime_port(p->rt, &p->attr))
		p->attr = *a;
	memcpy(&guid, p->attr.gid + 8, 8);
	p->ca_guid = be64toh(guid);
	rc = madcmd_proxy_open(p);
	if (rc)
		madcmd_log(LOG_WARNING, "%s/%d: no SA proxy (%s): MAD sessions refused", a->ca_name,
			   a->portnum, strerror(-rc));
	if (fresh)
		d->nports++;
	madcmd_port_events_open(p);
	madcmd_log(LOG_INFO, "serving %s/%d: LID 0x%x, SM LID 0x%x, GUID 0x%016llx", a->ca_name,
		   a->portnum, p->attr.lid, p->attr.sm_lid, (unsigned long long)p->ca_guid);
	return 0;
}

/* The slot of a port, served or gone, if it has one. */
static struct madcmd_served *slot_of(struct madcmd *d, const char *ca, unsigned port)
{
	for (unsigned i = 0; i < d->nports; i++)
		if (d->ports[i].attr.portnum == (int)port && !strcmp(d->ports[i].attr.ca_name, ca))
			return &d->ports[i];
	return NULL;
}

/*
 * Close what a gone port still holds (runtime, proxy, id buckets) once no
 * session of it is left to reap (the reaper releases ids through the
 * runtime); its slot (p->rt NULL) is then opened again when it is back.
 */
static void release_gone(struct madcmd_served *p)
{
	struct madcmd *d = p->d;

	if (!p->rt)
		return;
	for (unsigned i = 1; i <= d->p.max_sessions; i++)
		if (d->slots[i] && d->slots[i]->port == p)
			return;
	madcmd_port_events_close(p);
	madcmd_proxy_close(p);
	cm_runtime_close(p->rt);
	p->rt = NULL;
	madcmd_ids_destroy(p);
}

/*
 * Serve every Active port not served yet: non-zero while some port is
 * left that a later look may serve (gone ones included).  `first` (at
 * start) logs each port left out and why; later looks log only what
 * changes to served, or at debug level.
 */
static unsigned open_ports(struct madcmd *d, bool first)
{
	char cas[MAD_MAX_CAS][MAD_CA_NAME_MAX];
	int n = d->ops->list_cas(d->ops_ctx, cas, MAD_MAX_CAS);
	int quiet = first ? LOG_INFO : LOG_DEBUG;
	unsigned left = 0;

	d->nunopened = 0; /* made again by this look */
	/* Gone ports are released first, once their sessions are reaped. */
	for (unsigned i = 0; i < d->nports; i++)
		if (d->ports[i].gone)
			release_gone(&d->ports[i]);
	if (n < 0)
		madcmd_log(first ? LOG_WARNING : LOG_DEBUG, "cannot list CAs: %s", strerror(-n));
	for (int i = 0; i < n; i++) {
		struct mad_port_attr a;
		unsigned nports = 1;

		if (d->ops->query_port(d->ops_ctx, cas[i], 0, &a) == 0 && a.numports)
			nports = a.numports;
		for (unsigned port = 1; port <= nports; port++) {
			struct madcmd_served *p = slot_of(d, cas[i], port);
			int rc;

			if (p && (!p->gone || p->rt))
				continue; /* served, or gone and not released yet */
			if (d->ops->query_port(d->ops_ctx, cas[i], (int)port, &a))
				continue;
			if (!p && d->nports == MADCMD_MAX_PORTS) {
				if (first)
					madcmd_log(LOG_WARNING,
						   "%s/%u: more than %d ports, not served", cas[i],
						   port, MADCMD_MAX_PORTS);
				continue;
			}
			if (a.state != 4) {
				madcmd_log(quiet, "%s/%u is %s: not served until it is Active",
					   cas[i], port, state_name(a.state));
				left++;
				continue;
			}
			rc = open_served(d, p ? p : &d->ports[d->nports], &a);
			if (rc && d->nunopened < MADCMD_MAX_PORTS) {
				struct madcmd_unopened *u = &d->unopened[d->nunopened++];

				memcpy(u->ca, cas[i], sizeof(u->ca));
				u->ca[sizeof(u->ca) - 1] = '\0';
				u->port = (int)port;
				u->err = rc;
			}
			if (rc) {
				madcmd_log(first ? LOG_ERR : LOG_DEBUG,
					   "%s/%u: cannot open (%s), tried again every %u ms",
					   cas[i], port, strerror(-rc), d->p.rescan_ms);
				left++;
			}
		}
	}
	/* A gone port is looked for at every look (its device may come back). */
	for (unsigned i = 0; i < d->nports; i++)
		left += d->ports[i].gone;
	if (first && !d->nports)
		madcmd_log(LOG_WARNING, "no Active port: serving HOST sessions only");
	return left;
}

static void rescan(struct mad_timer *t, void *arg);

/* The next look at the ports, rescan_ms from now. */
static void arm_rescan(struct madcmd *d)
{
	mad_timer_arm(mad_loop_timers(d->loop), &d->rescan, d->p.rescan_ms * 1000000ull, rescan, d);
}

/* Serve what can be served; look again in rescan_ms while something is left. */
static void serve_ports(struct madcmd *d, bool first)
{
	if (open_ports(d, first))
		arm_rescan(d);
}

static void rescan(struct mad_timer *t, void *arg)
{
	(void)t;
	serve_ports(arg, false);
}

void madcmd_port_went(struct madcmd *d)
{
	arm_rescan(d);
}

int madcmd_open(struct madcmd **out, const struct madcmd_params *p)
{
	struct madcmd *d;
	int rc;

	if (!out || !p || !p->loop)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->p = *p;
	if (!d->p.max_ids)
		d->p.max_ids = MADCMD_DEFAULT_MAX_IDS;
	if (!d->p.max_events)
		d->p.max_events = MADCMD_DEFAULT_MAX_EVENTS;
	if (!d->p.max_sessions)
		d->p.max_sessions = MADCMD_DEFAULT_MAX_SESSIONS;
	if (d->p.max_sessions > MADCMD_SESSIONS_LIMIT)
		d->p.max_sessions = MADCMD_SESSIONS_LIMIT;
	if (!d->p.rescan_ms)
		d->p.rescan_ms = MADCMD_DEFAULT_RESCAN_MS;
	if (!d->p.may_bind_privileged)
		d->p.may_bind_privileged = madcmd_default_may_bind_privileged;
	if (!d->p.netns_of)
		d->p.netns_of = madcmd_default_netns_of;
	if (!d->p.netns_has_addr)
		d->p.netns_has_addr = madcmd_default_netns_has_addr;
	d->loop = p->loop;
	d->ops = p->ops ? p->ops : &mad_umad_real_ops;
	d->ops_ctx = p->ops_ctx;
	d->listen_fd = -1;
	d->slots = calloc(d->p.max_sessions + 1, sizeof(*d->slots));
	rc = d->slots ? mad_loop_set_watch(d->loop, madcmd_fd_ready, d) : -ENOMEM;
	if (rc)
		goto fail;
	mad_loop_set_turn_end(d->loop, madcmd_send_batches, d);
	serve_ports(d, true);
	*out = d;
	return 0;
fail:
	free(d->slots);
	free(d);
	return rc;
}

void madcmd_close(struct madcmd *d)
{
	if (!d)
		return;
	mad_timer_cancel(mad_loop_timers(d->loop), &d->rescan);
	/* As if every program exited: REJ/DREQ, unlisten, leaves. */
	madcmd_sessions_close_all(d);
	/* The reaper may still be queued on the loop: let it run, on nothing. */
	while (d->reap_posted && !mad_loop_started(d->loop))
		mad_loop_run_once(d->loop, 0);
	for (unsigned i = 0; i < d->nports; i++) {
		madcmd_port_events_close(&d->ports[i]);
		madcmd_proxy_close(&d->ports[i]);
		cm_runtime_close(d->ports[i].rt);
		madcmd_ids_destroy(&d->ports[i]);
	}
	mad_loop_set_turn_end(d->loop, NULL, NULL);
	if (d->listen_fd >= 0)
		mad_loop_set_ctl(d->loop, EPOLL_CTL_DEL, d->listen_fd, 0, 0);
	mad_loop_set_watch(d->loop, NULL, NULL);
	free(d->slots);
	free(d);
}

unsigned madcmd_port_count(const struct madcmd *d)
{
	return d ? d->nports : 0;
}

int madcmd_port_attr(const struct madcmd *d, unsigned i, struct mad_port_attr *out)
{
	if (!d || !out || i >= d->nports)
		return -EINVAL;
	*out = d->ports[i].attr;
	return 0;
}
