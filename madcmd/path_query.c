/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * PATH_QUERY: PathRecords for the programs of the host, from the SA
 * client of the daemon's runtime on the port (sa/client.h).  Its path
 * cache and its queries in flight serve every session, so N programs
 * asking for one path cost one SA query, and concurrent asks one query
 * between them.  The cache drops what may be stale as the SA client's
 * rules say (SM LID, LID, state or P_Key change of the port, lifetime),
 * and the paths to a GID the SA reports out of service (mad_proxy.c).
 * A session that closes before its answer has its asks orphaned: the
 * answer still fills the cache, and goes nowhere.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "madcmd/madcmd_int.h"
#include "sa/client.h"

/* The PATH_REP written at r: the unused records zeroed, not the whole first. */
static void answer_fill(struct madcmd_path_rep *r, uint32_t seq, int status,
			const struct sa_path *paths, unsigned n)
{
	madcmd_hdr_init(&r->h, MADCMD_PATH_REP, sizeof(*r), seq);
	r->rc = status > 0 ? -EPROTO : status;
	r->n = 0;
	if (!status) {
		r->n = n < MADCMD_PATH_MAX ? n : MADCMD_PATH_MAX;
		for (unsigned i = 0; i < r->n; i++)
			if (sa_path_encode(&paths[i], r->recs[i])) {
				r->rc = -EPROTO;
				r->n = 0;
				break;
			}
	}
	memset((uint8_t *)r->recs + r->n * sizeof(r->recs[0]), 0,
	       (MADCMD_PATH_MAX - r->n) * sizeof(r->recs[0]));
}

static void answer(struct madcmd_session *s, uint32_t seq, int status, const struct sa_path *paths,
		   unsigned n)
{
	/* Written in the batch (no answer built first and copied), else sent as one. */
	struct madcmd_path_rep *r = madcmd_batch_reserve(s, sizeof(*r));

	if (r) {
		answer_fill(r, seq, status, paths, n);
	} else if (!s->closing) {
		struct madcmd_path_rep local;

		answer_fill(&local, seq, status, paths, n);
		madcmd_send_batched(s, &local, sizeof(local));
	}
}

static void path_done(void *arg, int status, const struct sa_path *paths, unsigned n)
{
	struct madcmd_ask *a = arg;

	if (a->s && !a->s->closing)
		answer(a->s, a->seq, status, paths, n);
	madcmd_ask_free(a);
}

void madcmd_path_query(struct madcmd_session *s, const struct madcmd_path_query *m)
{
	struct madcmd_served *p = s->port;
	struct sa_client *sa = p && p->rt ? cm_runtime_sa(p->rt) : NULL;
	struct madcmd_ask *a;
	struct sa_path_query q;
	int rc;

	p->c.path_asks++;
	if (!sa || p->gone) {
		answer(s, m->h.seq, -ENETDOWN, NULL, 0);
		return;
	}
	memset(&q, 0, sizeof(q));
	sa_path_decode(m->rec, &q.rec);
	q.comp_mask = m->comp_mask;
	q.table = m->table;
	a = madcmd_ask_new(s, &s->path_asks, m->h.seq);
	if (!a) {
		answer(s, m->h.seq, -ENOMEM, NULL, 0);
		return;
	}
	/* A cache hit answers here, before this returns. */
	rc = sa_path_query_async(sa, &q, path_done, a);
	if (rc) {
		madcmd_ask_free(a);
		answer(s, m->h.seq, rc, NULL, 0);
	}
}

void madcmd_path_gid_gone(struct madcmd_served *p, const uint8_t gid[16])
{
	if (p->rt)
		p->c.paths_dropped += sa_client_path_gid_gone(cm_runtime_sa(p->rt), gid);
}
