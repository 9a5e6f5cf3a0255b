/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Per-QP transport counters (struct vqp_stats), printed on stderr with
 * FABSIM_VERBS_STATS=1: one line per RC QP that saw a NAK, a gap, a
 * duplicate or a resend, when it is destroyed (or when the process exits
 * with it still there), and the sum over all of them at exit.  On a
 * fabric without fault rules every one of these counts should be 0: a
 * real fabric neither loses nor reorders one QP's packets.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/verbs_priv.h"

static bool stats_on(void)
{
	static int on = -1;

	if (on < 0)
		on = getenv("FABSIM_VERBS_STATS") != NULL;
	return on;
}

static bool any(const struct vqp_stats *s)
{
	const uint64_t *v = (const uint64_t *)s;

	for (size_t i = 0; i < sizeof(*s) / sizeof(*v); i++)
		if (v[i])
			return true;
	return false;
}

static void add(struct vqp_stats *to, const struct vqp_stats *s)
{
	uint64_t *t = (uint64_t *)to;
	const uint64_t *v = (const uint64_t *)s;

	for (size_t i = 0; i < sizeof(*s) / sizeof(*v); i++)
		t[i] += v[i];
}

static void print(const char *who, const struct vqp_stats *s)
{
	fprintf(
	    stderr,
	    "fabsim verbs %d %s: nak tx seq %" PRIu64 " inv %" PRIu64 " acc %" PRIu64 " op %" PRIu64
	    " rnr %" PRIu64 "; nak rx seq %" PRIu64 " inv %" PRIu64 " acc %" PRIu64 " op %" PRIu64
	    " rnr %" PRIu64 "; gap %" PRIu64 " dup %" PRIu64 " resp_ooo %" PRIu64
	    "; retry timeout %" PRIu64 " seq %" PRIu64 " rnr %" PRIu64 " seq_ignored %" PRIu64 "\n",
	    (int)getpid(), who, s->nak_tx[0], s->nak_tx[1], s->nak_tx[2], s->nak_tx[3], s->rnr_tx,
	    s->nak_rx[0], s->nak_rx[1], s->nak_rx[2], s->nak_rx[3], s->rnr_rx, s->gap_rx, s->dup_rx,
	    s->resp_ooo, s->retry_timeout, s->retry_seq, s->retry_rnr, s->seq_ignored);
}

static void qp_print(const struct vqp *qp)
{
	char who[32];

	if (!stats_on() || !any(&qp->st))
		return;
	snprintf(who, sizeof(who), "qp 0x%06x", vqp_ibqp((struct vqp *)qp)->qp_num);
	print(who, &qp->st);
}

/* The QP goes (under VERBS_LOCK): its counts join the process's. */
void verbs_qp_stats_done(struct vqp *qp)
{
	qp_print(qp);
	add(&verbs_hca.qp_st, &qp->st);
}

/* The process exits (under VERBS_LOCK). */
void verbs_stats_print(void)
{
	struct vqp_stats sum = verbs_hca.qp_st;

	if (!stats_on())
		return;
	for (uint32_t i = 0; verbs_hca.qp_hash && i < QP_HASH; i++)
		for (struct vqp *qp = verbs_hca.qp_hash[i]; qp; qp = qp->hnext) {
			qp_print(qp);
			add(&sum, &qp->st);
		}
	print("qps", &sum);
}
