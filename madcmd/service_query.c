/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * SERVICE_QUERY: the ServiceRecords of address resolution (lib/addr_sa.h)
 * for the programs of the host, from the SA client of the daemon's
 * runtime on the port, as PATH_QUERY's PathRecords (path_query.c): its
 * service cache and its queries in flight serve every session, so N
 * programs resolving one address cost one SA query, concurrent asks one
 * between them.  The cache keeps only answers with records, drops what
 * the SA client's rules say (port change, lifetime, a Set or Delete
 * through it) and the answers naming a GID the SA reports out of service
 * (mad_proxy.c).  A session that closes before its answer has its asks
 * orphaned: the answer still fills the cache, and goes nowhere.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "madcmd/madcmd_int.h"
#include "sa/client.h"

static void answer(struct madcmd_session *s, uint32_t seq, int status,
		   const struct sa_service *recs, unsigned n)
{
	struct madcmd_service_rep r;

	memset(&r, 0, sizeof(r));
	madcmd_hdr_init(&r.h, MADCMD_SERVICE_REP, sizeof(r), seq);
	r.rc = status > 0 ? -EPROTO : status;
	if (!status) {
		r.n = n < MADCMD_SERVICE_MAX ? n : MADCMD_SERVICE_MAX;
		for (unsigned i = 0; i < r.n; i++)
			if (sa_service_encode(&recs[i], r.recs[i])) {
				r.rc = -EPROTO;
				r.n = 0;
				break;
			}
	}
	madcmd_send_batched(s, &r, sizeof(r));
}

static void service_done(void *arg, int status, const struct sa_service *recs, unsigned n)
{
	struct madcmd_ask *a = arg;

	if (a->s && !a->s->closing)
		answer(a->s, a->seq, status, recs, n);
	madcmd_ask_free(a);
}

void madcmd_service_query(struct madcmd_session *s, const struct madcmd_service_query *m)
{
	struct madcmd_served *p = s->port;
	struct sa_client *sa = p && p->rt ? cm_runtime_sa(p->rt) : NULL;
	struct madcmd_ask *a;
	struct sa_service q;
	int rc;

	p->c.service_asks++;
	if (!sa || p->gone) {
		answer(s, m->h.seq, -ENETDOWN, NULL, 0);
		return;
	}
	sa_service_decode(m->rec, &q);
	a = madcmd_ask_new(s, &s->service_asks, m->h.seq);
	if (!a) {
		answer(s, m->h.seq, -ENOMEM, NULL, 0);
		return;
	}
	/* A cache hit answers here, before this returns. */
	rc = sa_service_query_async(sa, &q, m->comp_mask, service_done, a);
	if (rc) {
		madcmd_ask_free(a);
		answer(s, m->h.seq, rc, NULL, 0);
	}
}

void madcmd_service_changed(struct madcmd_served *p, const struct sa_service *sv)
{
	if (p->rt)
		sa_client_service_changed(cm_runtime_sa(p->rt), sv);
}

void madcmd_service_gid_gone(struct madcmd_served *p, const uint8_t gid[16])
{
	if (p->rt)
		p->c.services_dropped += sa_client_service_gid_gone(cm_runtime_sa(p->rt), gid);
}
