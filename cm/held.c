/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * REQs held for a listen on its way.
 *
 * A program may bind a port, tell its peer the port (over TCP, say) and
 * only then listen: Debian's qperf does, in its RDMA CM mode.  The
 * kernel's rdma_cm REJects a REQ that comes in between, a window of
 * microseconds there; madcm's is longer (a listen crosses to madcmd, a
 * loaded host deschedules the program between its send and its listen),
 * and such a program then fails where on the kernel it works.  So a REQ
 * or SIDR_REQ that no listener takes, for a service ID the host's port
 * space has bound (cm_engine_config.service_bound), waits up to
 * CM_HELD_NS for the listen; then it is handled as if just received:
 * taken by the listener, or answered as before (REJ "invalid service
 * ID", SIDR_REP "unsupported").  At most CM_HELD_MAX wait at once (past
 * that the answer is at once); a retransmission of a held message (the
 * same bytes) is a duplicate and dropped.  The peer waits for an answer
 * as for any REQ: its REQ timeout, 4 s for rdma_cm, is longer.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cm/cm_int.h"

#define CM_HELD_NS 1000000000ull /* 1 s */

static uint64_t sid_of(const uint8_t *mad, enum cm_stat_msg type)
{
	const uint8_t *msg = mad + CM_MSG_OFFSET;

	return type == CM_STAT_REQ ? mad_get(msg, cm_req_fields, CM_REQ_SERVICE_ID)
				   : mad_get(msg, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID);
}

static void held_timer_fn(struct mad_timer *t, void *arg);

static void arm(struct cm_engine *e, uint64_t deadline)
{
	/* A failed arm (no memory for the heap) leaves them to the next listen. */
	mad_timer_arm_at(e->cfg.timers, &e->held_timer, deadline, held_timer_fn, e);
}

bool cm_held_keep(struct cm_engine *e, const struct cm_rx *rx, uint64_t sid)
{
	struct cm_held *h;

	if (e->held_replay || !e->cfg.service_bound ||
	    !e->cfg.service_bound(e->cfg.service_bound_arg, sid))
		return false;
	for (unsigned i = 0; i < e->nheld; i++)
		if (!memcmp(e->held[i].mad, rx->mad, CM_MAD_SIZE)) {
			e->st.duplicates[rx->type]++;
			return true;
		}
	if (e->nheld == CM_HELD_MAX)
		return false;
	if (!e->held) {
		e->held = calloc(CM_HELD_MAX, sizeof(*e->held));
		if (!e->held)
			return false;
	}
	h = &e->held[e->nheld++];
	memcpy(h->mad, rx->mad, CM_MAD_SIZE);
	h->from = *rx->from;
	h->type = rx->type;
	h->deadline = mad_timer_now(e->cfg.timers) + CM_HELD_NS;
	e->st.held++;
	if (!mad_timer_armed(&e->held_timer))
		arm(e, h->deadline);
	return true;
}

void cm_held_listened(struct cm_engine *e)
{
	if (e->nheld)
		arm(e, mad_timer_now(e->cfg.timers));
}

/* Handle h as just received, with no more waiting (h is a copy). */
static void replay(struct cm_engine *e, const struct cm_held *h)
{
	struct cm_rx rx;

	cm_rx_init(&rx, &h->from, h->mad, h->type);
	e->held_replay = true;
	if (h->type == CM_STAT_REQ)
		cm_on_req(e, &rx);
	else
		cm_on_sidr_req(e, &rx);
	e->held_replay = false;
}

/*
 * Each held message whose listener came, whose time ran out or whose
 * port was unbound is handled; the others wait on.  Handling one may run
 * the user's event callback, which may listen (arming this timer again:
 * then that pass decides).
 */
static void held_timer_fn(struct mad_timer *t, void *arg)
{
	struct cm_engine *e = arg;
	uint64_t next = UINT64_MAX;
	unsigned i = 0;

	(void)t;
	while (i < e->nheld) {
		struct cm_held h = e->held[i];
		uint64_t sid = sid_of(h.mad, h.type);
		int listen_id;

		if (!cm_listen_find(e, sid, &listen_id) &&
		    mad_timer_now(e->cfg.timers) < h.deadline &&
		    e->cfg.service_bound(e->cfg.service_bound_arg, sid)) {
			i++;
			continue;
		}
		e->held[i] = e->held[--e->nheld];
		replay(e, &h);
	}
	if (mad_timer_armed(&e->held_timer))
		return; /* a listen made on the way asked for another pass */
	for (i = 0; i < e->nheld; i++)
		if (e->held[i].deadline < next)
			next = e->held[i].deadline;
	if (e->nheld)
		arm(e, next);
}

void cm_held_destroy(struct cm_engine *e)
{
	mad_timer_cancel(e->cfg.timers, &e->held_timer);
	free(e->held);
	e->held = NULL;
	e->nheld = 0;
}
