/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * What the daemon holds, for programs (STAT: one STAT_REP per id of every
 * visible session, then one with .last and the path cache counters) and
 * for its operator (counters on SIGUSR1 or at exit with -v).  A program that is not root sees only
 * the sessions of its own uid: another user's connections are not its business.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <string.h>

#include "madcmd/madcmd_int.h"
#include "sa/client.h"

/* The path cache counters of every served port, summed (the last STAT_REP). */
static void madcmd_stat_end(const struct madcmd *d, struct madcmd_stat_end *out)
{
	memset(out, 0, sizeof(*out));
	out->last = 1;
	{
		/* Every arena's chunks in use, and the large ones mmapped apart. */
		struct mallinfo2 mi = mallinfo2();

		out->heap_kib = (uint32_t)((mi.uordblks + mi.hblkhd + 1023) / 1024);
	}
	for (unsigned i = 0; i < d->nports; i++) {
		const struct madcmd_served *p = &d->ports[i];
		struct sa_client_stats st;

		out->path_asks += p->c.path_asks;
		out->paths_dropped += p->c.paths_dropped;
		out->service_asks += p->c.service_asks;
		out->cache_flush_rereg += p->c.flush_rereg;
		out->cache_flush_pkey += p->c.flush_pkey;
		out->cache_flush_port += p->c.flush_port;
		if (!p->rt || sa_client_stats(cm_runtime_sa(p->rt), &st))
			continue;
		out->ports++;
		out->path_queries += st.path_queries;
		out->path_coalesced += st.path_coalesced;
		out->cache_hits_late += st.cache_hits_late;
		out->cache_dropped += st.cache_dropped;
		out->cache_flush_poll += st.cache_flushes;
		out->service_queries += st.service_queries;
		out->service_coalesced += st.service_coalesced + st.service_hits_late;
		out->service_dropped += st.service_dropped;
	}
}

void madcmd_stat(struct madcmd_session *s, const struct madcmd_port *q)
{
	struct madcmd *d = s->d;
	struct madcmd_stat_rep r;
	struct madcmd_stat_end end;

	for (unsigned i = 1; i <= d->p.max_sessions && !s->closing; i++) {
		struct madcmd_session *o = d->slots[i];

		if (!o || o->closing || (s->uid != 0 && o->uid != s->uid))
			continue;
		for (struct madcmd_id *x = o->ids; x && !s->closing; x = x->snext) {
			enum cm_state st = CM_ST_IDLE;

			memset(&r, 0, sizeof(r));
			madcmd_hdr_init(&r.h, MADCMD_STAT_REP, sizeof(r), q->h.seq);
			r.pid = (int32_t)o->pid;
			r.uid = (uint32_t)o->uid;
			memcpy(r.ca, o->port->attr.ca_name, sizeof(r.ca));
			r.ca[sizeof(r.ca) - 1] = 0;
			r.port = o->port->attr.portnum;
			r.id = x->id;
			r.listen = x->listen;
			if (x->listen) {
				r.service_id = x->service_id;
			} else {
				if (madcmd_conn_state(o->port, x->id, &st) == 0)
					r.state = st;
				r.remote_lid = x->remote_lid;
				memcpy(r.remote_gid, x->remote_gid, 16);
			}
			madcmd_send(s, &r, sizeof(r));
		}
	}
	madcmd_stat_end(d, &end);
	madcmd_hdr_init(&end.h, MADCMD_STAT_REP, sizeof(end), q->h.seq);
	madcmd_send(s, &end, sizeof(end));
}

int madcmd_counters_get(const struct madcmd *d, int i, struct madcmd_counters *out)
{
	if (!d || !out || i < -1 || i >= (int)d->nports)
		return -EINVAL;
	*out = i < 0 ? d->c : d->ports[i].c;
	return 0;
}

void madcmd_tables_get(const struct madcmd *d, struct madcmd_tables *out)
{
	memset(out, 0, sizeof(*out));
	out->sessions = d->nsessions;
	for (unsigned i = 1; i <= d->p.max_sessions; i++) {
		const struct madcmd_session *s = d->slots[i];

		if (!s)
			continue;
		out->ids += s->nids;
		out->bindings += s->nbinds;
		out->queued += s->qlen;
		for (const struct madcmd_member *m = s->members; m; m = m->next)
			out->memberships++;
		for (const struct madcmd_service *v = s->services; v; v = v->next)
			out->services++;
		out->tids += s->tids.used;
	}
}

/* The SA's notices through the proxy (mad_proxy.c). */
static void madcmd_log_notices(const struct madcmd_served *p)
{
	const struct madcmd_notice_counters *n = &p->nc;

	madcmd_log(LOG_NOTICE,
		   "%s/%d: SA notices: subscriptions sent %" PRIu64 " answered here %" PRIu64
		   ", unsubscribed %" PRIu64 ", Reports %" PRIu64 " (repeated %" PRIu64
		   ", malformed %" PRIu64 "), passed to sessions %" PRIu64
		   ", their ReportResps absorbed %" PRIu64,
		   p->attr.ca_name, p->attr.portnum, n->subs_sent, n->subs_local, n->unsubs,
		   n->reports, n->report_dups, n->report_malformed, n->forwarded,
		   n->resps_absorbed);
}

/* The SA client's path cache on the port (what PATH_QUERY uses). */
static void madcmd_log_paths(const struct madcmd_served *p)
{
	struct sa_client_stats st;

	if (!p->rt || sa_client_stats(cm_runtime_sa(p->rt), &st))
		return;
	madcmd_log(LOG_NOTICE,
		   "%s/%d: path cache: hits %" PRIu64 " misses %" PRIu64 ", flushes %" PRIu64
		   ", SA queries %" PRIu64 ", coalesced %" PRIu64 ", late hits %" PRIu64
		   ", dropped %" PRIu64,
		   p->attr.ca_name, p->attr.portnum, st.cache_hits, st.cache_misses,
		   st.cache_flushes, st.path_queries, st.path_coalesced, st.cache_hits_late,
		   st.cache_dropped);
	madcmd_log(LOG_NOTICE,
		   "%s/%d: service cache: hits %" PRIu64 ", SA queries %" PRIu64
		   ", coalesced %" PRIu64 ", late hits %" PRIu64 ", dropped %" PRIu64,
		   p->attr.ca_name, p->attr.portnum, st.service_cache_hits, st.service_queries,
		   st.service_coalesced, st.service_hits_late, st.service_dropped);
}

void madcmd_log_counters(const struct madcmd *d)
{
	const struct madcmd_counters *c = &d->c;

	madcmd_log(LOG_NOTICE,
		   "daemon: %u sessions open, %" PRIu64 " HOST sessions, %" PRIu64
		   " refused, %" PRIu64 " closed as too slow, %" PRIu64 " malformed, %" PRIu64
		   " log lines lost",
		   d->nsessions, c->sessions, c->refused, c->slow, c->malformed, madcmd_log_lost());
	for (unsigned i = 0; i < d->nports; i++) {
		c = &d->ports[i].c;
		madcmd_log(LOG_NOTICE,
			   "%s/%d: sessions %" PRIu64 " (%" PRIu64 " open), commands %" PRIu64
			   ", events %" PRIu64 ", dropped %" PRIu64 ", malformed %" PRIu64
			   ", MADs sent %" PRIu64 " received %" PRIu64 " dropped %" PRIu64
			   " answered locally %" PRIu64 ", leaves %" PRIu64 ", path asks %" PRIu64
			   ", paths dropped %" PRIu64 ", cache flushes: rereg %" PRIu64
			   " pkey %" PRIu64 " port %" PRIu64,
			   d->ports[i].attr.ca_name, d->ports[i].attr.portnum, c->sessions,
			   c->sessions_now, c->commands, c->events, c->dropped, c->malformed,
			   c->mads_sent, c->mads_received, c->mads_dropped, c->mads_local,
			   c->leaves, c->path_asks, c->paths_dropped, c->flush_rereg, c->flush_pkey,
			   c->flush_port);
		madcmd_log_notices(&d->ports[i]);
		madcmd_log_paths(&d->ports[i]);
	}
}
