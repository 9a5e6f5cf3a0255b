/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Counters and live-connection dump of the madcm CM engine.
 *
 * An engine counts, per CM message type, what it sent, received,
 * retransmitted (retried) and dropped (malformed, unknown comm ID, or
 * ignored in a state where the spec says so), and can list its live
 * connections with their states.
 *
 * A process that owns an engine publishes a text snapshot of both when the
 * environment variable MADCM_STAT_FILE names a file (rewritten atomically
 * by cm_stat_publish(), see man/madcm-stat.1); `madcm stat FILE` prints it.
 */
#ifndef MADCM_CM_STAT_H
#define MADCM_CM_STAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CM message types, in attribute-id order (IBA table 93). */
enum cm_stat_msg {
	CM_STAT_REQ,
	CM_STAT_MRA,
	CM_STAT_REJ,
	CM_STAT_REP,
	CM_STAT_RTU,
	CM_STAT_DREQ,
	CM_STAT_DREP,
	CM_STAT_SIDR_REQ,
	CM_STAT_SIDR_REP,
	CM_STAT_LAP,
	CM_STAT_APR,
	CM_STAT_OTHER, /* ClassPortInfo, unknown attributes */
	CM_STAT_MSG_COUNT
};

struct cm_stat_counters {
	uint64_t sent[CM_STAT_MSG_COUNT];
	uint64_t rcvd[CM_STAT_MSG_COUNT];
	uint64_t retried[CM_STAT_MSG_COUNT];	/* retransmissions after timeout */
	uint64_t dropped[CM_STAT_MSG_COUNT];	/* received and not acted on */
	uint64_t duplicates[CM_STAT_MSG_COUNT]; /* answered again (resend) */
	uint64_t timeouts;			/* gave up after max CM retries */
	uint64_t send_errors;			/* transport refused a send */
	uint64_t conns_created;
	uint64_t conns_freed;
	uint64_t conns_live;
	uint64_t table_full; /* REQ rejected / connect refused: no resources */
	uint64_t held;	     /* REQs that waited for a listen (port bound) */
};

/* One live connection. */
struct cm_stat_conn {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qpn;
	uint32_t remote_qpn;
	uint64_t service_id;
	uint64_t remote_ca_guid;
	uint16_t dlid;
	uint8_t state;	/* enum cm_state (cm/engine.h) */
	uint8_t active; /* 1 on the side that sent the REQ */
	const char *state_name;
};

struct cm_engine;

/* Copy the counters.  Returns 0 or -EINVAL. */
int cm_stat_get(const struct cm_engine *e, struct cm_stat_counters *out);
void cm_stat_reset(struct cm_engine *e);

/*
 * Fill up to `max` entries of `out` with live connections.  Returns the
 * total number of live connections (which may exceed `max`), or -EINVAL.
 */
long cm_stat_conns(const struct cm_engine *e, struct cm_stat_conn *out, size_t max);

const char *cm_stat_msg_name(enum cm_stat_msg m);

/*
 * Write counters and up to `max_conns` connections as text to `f`.  The
 * format is line based ("msg NAME sent rcvd retried dropped duplicates",
 * "conn ID STATE ..."), stable, and what `madcm stat` prints.
 */
int cm_stat_write(const struct cm_engine *e, FILE *f, size_t max_conns);

/*
 * Write the snapshot to `path` atomically (temporary file + rename).  With
 * path NULL, use $MADCM_STAT_FILE and do nothing (return 0) when unset.
 */
int cm_stat_publish(const struct cm_engine *e, const char *path);

#ifdef __cplusplus
}
#endif

#endif
