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

struct madcmd_path_ask {
	struct madcmd_path_ask *next, **pprev; /* the session's list */
	struct madcmd_session *s;	       /* NULL: orphaned */
	uint32_t seq;
};

static void ask_unlink(struct madcmd_path_ask *a)
{
	if (!a->pprev)
		return;
	*a->pprev = a->next;
	if (a->next)
		a->next->pprev = a->pprev;
	a->pprev = NULL;
	a->next = NULL;
}

static void answer(struct madcmd_session *s, uint32_t seq, int status, const struct sa_path *paths,
		   unsigned n)
{
	struct madcmd_path_rep r;

	memset(&r, 0, sizeof(r));
	madcmd_hdr_init(&r.h, MADCMD_PATH_REP, sizeof(r), seq);
	r.rc = status > 0 ? -EPROTO : status;
	if (!status) {
		r.n = n < MADCMD_PATH_MAX ? n : MADCMD_PATH_MAX;
		for (unsigned i = 0; i < r.n; i++)
			if (sa_path_encode(&paths[i], r.recs[i])) {
				r.rc = -EPROTO;
				r.n = 0;
				break;
			}
	}
	madcmd_send_batched(s, &r, sizeof(r));
}

static void path_done(void *arg, int status, const struct sa_path *paths, unsigned n)
{
	struct madcmd_path_ask *a = arg;

	if (a->s && !a->s->closing)
		answer(a->s, a->seq, status, paths, n);
	ask_unlink(a);
	free(a);
}

void madcmd_path_query(struct madcmd_session *s, const struct madcmd_path_query *m)
{
	struct madcmd_served *p = s->port;
	struct sa_client *sa = p && p->rt ? cm_runtime_sa(p->rt) : NULL;
	struct madcmd_path_ask *a;
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
	a = calloc(1, sizeof(*a));
	if (!a) {
		answer(s, m->h.seq, -ENOMEM, NULL, 0);
		return;
	}
	a->s = s;
	a->seq = m->h.seq;
	a->next = s->path_asks;
	if (a->next)
		a->next->pprev = &a->next;
	a->pprev = &s->path_asks;
	s->path_asks = a;
	/* A cache hit answers here, before this returns. */
	rc = sa_path_query_async(sa, &q, path_done, a);
	if (rc) {
		ask_unlink(a);
		free(a);
		answer(s, m->h.seq, rc, NULL, 0);
	}
}

void madcmd_path_session_end(struct madcmd_session *s)
{
	while (s->path_asks) {
		struct madcmd_path_ask *a = s->path_asks;

		ask_unlink(a);
		a->s = NULL;
	}
}

void madcmd_path_gid_gone(struct madcmd_served *p, const uint8_t gid[16])
{
	if (p->rt)
		p->c.paths_dropped += sa_client_path_gid_gone(cm_runtime_sa(p->rt), gid);
}
