/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The states of an rdma_cm_id and every transition lib/ makes, in one
 * table (the kernel's cma.c names the same states; its cma_comp_exch is
 * how each call claims the state it needs).
 *
 *   IDLE --bind--> ADDR_BOUND --resolve_addr--> ADDR_QUERY --> ADDR_RESOLVED
 *   ADDR_QUERY --error--> ADDR_BOUND
 *   ADDR_RESOLVED --resolve_route--> ROUTE_QUERY --> ROUTE_RESOLVED
 *   ROUTE_QUERY --error--> ADDR_RESOLVED
 *   ROUTE_RESOLVED --connect--> CONNECT;  ADDR_BOUND --listen--> LISTEN
 *   (passive ids are born in CONNECT)
 *   CONNECT --DISCONNECTED event--> DISCONNECT
 *   CONNECT --REJECTED/UNREACHABLE/CONNECT_ERROR--> (kept; the id is dead)
 *   any --destroy--> DESTROYING
 */
#include "config.h"

#include "lib/cma.h"

static const char *const names[CMA__STATE_COUNT] = {
    [CMA_IDLE] = "IDLE",
    [CMA_ADDR_QUERY] = "ADDR_QUERY",
    [CMA_ADDR_RESOLVED] = "ADDR_RESOLVED",
    [CMA_ROUTE_QUERY] = "ROUTE_QUERY",
    [CMA_ROUTE_RESOLVED] = "ROUTE_RESOLVED",
    [CMA_CONNECT] = "CONNECT",
    [CMA_DISCONNECT] = "DISCONNECT",
    [CMA_ADDR_BOUND] = "ADDR_BOUND",
    [CMA_LISTEN] = "LISTEN",
    [CMA_DESTROYING] = "DESTROYING",
};

/* allowed[from] has bit `to` set for each transition lib/ may make. */
#define B(s) (1u << (s))
static const unsigned allowed[CMA__STATE_COUNT] = {
    [CMA_IDLE] = B(CMA_ADDR_BOUND) | B(CMA_DESTROYING),
    [CMA_ADDR_BOUND] = B(CMA_ADDR_QUERY) | B(CMA_LISTEN) | B(CMA_DESTROYING),
    [CMA_ADDR_QUERY] = B(CMA_ADDR_RESOLVED) | B(CMA_ADDR_BOUND) | B(CMA_DESTROYING),
    [CMA_ADDR_RESOLVED] = B(CMA_ROUTE_QUERY) | B(CMA_ADDR_QUERY) | B(CMA_DESTROYING),
    [CMA_ROUTE_QUERY] = B(CMA_ROUTE_RESOLVED) | B(CMA_ADDR_RESOLVED) | B(CMA_DESTROYING),
    [CMA_ROUTE_RESOLVED] = B(CMA_CONNECT) | B(CMA_ROUTE_QUERY) | B(CMA_DESTROYING),
    [CMA_CONNECT] = B(CMA_DISCONNECT) | B(CMA_DESTROYING),
    [CMA_DISCONNECT] = B(CMA_DESTROYING),
    [CMA_LISTEN] = B(CMA_DESTROYING),
    [CMA_DESTROYING] = 0,
};

const char *cma_state_name(enum cma_state s)
{
	return (unsigned)s < CMA__STATE_COUNT ? names[s] : "?";
}

/* Transitions lib/ made that the table lacks: a bug in lib/, counted (tests read it). */
unsigned long cma_state_bad;

void cma_set_state(struct cma_id *id, enum cma_state to)
{
	cma_assert_locked();
	/* Never the application's fault: do not crash it, count it. */
	if (!(allowed[id->state] & B(to)) && id->state != to)
		cma_state_bad++;
	id->state = to;
	cma_publish_mark();
}

bool cma_comp_exch(struct cma_id *id, enum cma_state from, enum cma_state to)
{
	cma_assert_locked();
	if (id->state != from)
		return false;
	cma_set_state(id, to);
	return true;
}
