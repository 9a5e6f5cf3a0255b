/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Test harness for the CM engine: two engines ("A" active, index 0, and
 * "B" passive, index 1) on one fake clock, wired back to back through a
 * fake network that queues MADs, can drop chosen messages or a random
 * share of them, and logs everything sent.  Events are recorded per node.
 */
#ifndef MADCM_TESTS_CM_HARNESS_H
#define MADCM_TESTS_CM_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/engine.h"
#include "madcm/cm_stat.h"

#define CMH_MAX_EVENTS 4096
#define CMH_MAX_QUEUE 8192
#define CMH_MAX_LOG 512

struct cmh;

struct cmh_node {
	struct cmh *h;
	int idx;
	struct cm_engine *e;
	uint64_t guid;
	uint16_t lid;
	struct cm_event *ev; /* CMH_MAX_EVENTS recorded events */
	int nev;
	/* Passive conveniences: answer REQ_RCVD with accept, DREQ with DREP,
	 * REP_RCVD with RTU, as rdma_cm does. */
	bool auto_accept;
	bool auto_rtu;
	bool auto_drep;
	uint32_t next_qpn; /* QPN used by auto_accept */
};

struct cmh_pkt {
	int to;
	struct mad_addr from;
	uint8_t mad[256];
};

struct cmh_log {
	int from;
	uint16_t attr;
	bool dropped;
	uint8_t mad[256];
};

struct cmh {
	uint64_t now;
	struct mad_timer_heap timers;
	struct cmh_node n[2];
	struct cmh_pkt *q;
	unsigned qhead, qtail;
	/* drop[src][attr - 0x10]: drop the next N messages of that attribute */
	int drop[2][16];
	unsigned loss_pct; /* random loss of every message */
	uint64_t rng;
	bool dead[2]; /* node gone: everything to it is lost */
	/* The QP a node's messages arrive from (0: QP1); sends must go to QP1. */
	uint32_t src_qpn[2];
	struct cmh_log log[CMH_MAX_LOG];
	int nlog;
	/* A service ID node i's port space has bound (service_bound); 0: none. */
	uint64_t bound_sid[2];
};

/* Table bound of each node's engine for the next cmh_init (0 = default). */
extern uint32_t cmh_max_conns[2];

/*
 * The harness of a test program, as its tests name it: H with node A
 * (active) and B (passive), time in ns.  cmh_setup / cmh_teardown are
 * CMocka setup and teardown functions: cmh_init(&H) / cmh_fini(&H), the
 * table bounds back to their default.
 */
#define A 0
#define B 1
#define SEC 1000000000ull
extern struct cmh H;
int cmh_setup(void **state);
int cmh_teardown(void **state);
/* Node i's counters. */
struct cm_stat_counters cmh_stats(int i);

void cmh_init(struct cmh *h);
void cmh_fini(struct cmh *h);
/* Deliver queued MADs (and what they cause) until the network is quiet. */
int cmh_deliver(struct cmh *h);
/* Advance the clock by `ns`, firing timers, then deliver. */
void cmh_advance(struct cmh *h, uint64_t ns);
/* Advance in steps of `step` ns until nothing is armed or `max` passes. */
void cmh_run_timers(struct cmh *h, uint64_t step, uint64_t max);

/* A reasonable connect command for node A towards node B. */
void cmh_connect_cmd(struct cmh *h, struct cm_connect_cmd *cmd, uint32_t qpn);
void cmh_accept_cmd(struct cm_accept_cmd *cmd, uint32_t qpn);

/* Last event of `type` on node `i`, or NULL; count of such events. */
const struct cm_event *cmh_event(struct cmh *h, int i, enum cm_event_type type);
int cmh_count(struct cmh *h, int i, enum cm_event_type type);
/* Number of `attr` MADs sent by node `from` (dropped ones included). */
int cmh_sent(struct cmh *h, int from, uint16_t attr);
/* The last MAD `from` sent of `attr`; none fails the test. */
const uint8_t *cmh_last_mad(struct cmh *h, int from, uint16_t attr);
enum cm_state cmh_state(struct cmh *h, int i, uint32_t id);
/* Inject a raw MAD into node i as if sent by the other node. */
int cmh_inject(struct cmh *h, int i, const void *mad);
/* The same from the peer's QP qpn (a CM sending from a UD QP of its own). */
int cmh_inject_from(struct cmh *h, int i, const void *mad, uint32_t qpn);

/* The full handshake with auto-accept/rtu: returns A's comm id. */
uint32_t cmh_connect(struct cmh *h, uint32_t qpn);
/* B's comm id of the connection whose REQ_RCVD was last seen. */
uint32_t cmh_passive_id(struct cmh *h);

/* Start a CM MAD of `attr` with the two comm IDs; returns the message. */
uint8_t *cmh_mad(uint8_t *mad, uint16_t attr, uint32_t local_id, uint32_t remote_id);

#endif
