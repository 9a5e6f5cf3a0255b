/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Internals of the CM engine shared by its files (engine.c, state.c,
 * ids.c, conn.c, lap.c, sidr.c, qp_attr.c, stats.c).  Not installed.
 */
#ifndef MADCM_CM_CM_INT_H
#define MADCM_CM_CM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/cm_wire.h"
#include "cm/engine.h"
#include "madcm/cm_stat.h"

/* ---- the state table (state.c) ---- */

/* Inputs of the state machine: received messages, user commands, the timer. */
enum cm_input {
	CM_IN_REQ,
	CM_IN_MRA_REQ, /* MRA whose MessageMRAed is REQ */
	CM_IN_MRA_REP,
	CM_IN_MRA_LAP,
	CM_IN_REJ,
	CM_IN_REP,
	CM_IN_RTU,
	CM_IN_DREQ,
	CM_IN_DREP,
	CM_IN_LAP,
	CM_IN_APR,
	CM_IN_SIDR_REQ,
	CM_IN_SIDR_REP,
	CM_CMD_CONNECT,
	CM_CMD_ACCEPT, /* send REP */
	CM_CMD_REJECT,
	CM_CMD_MRA,
	CM_CMD_RTU,
	CM_CMD_ESTABLISH, /* communication established (first data) */
	CM_CMD_DREQ,
	CM_CMD_DREP,
	CM_CMD_LAP,
	CM_CMD_APR,
	CM_CMD_SIDR_REQ,
	CM_CMD_SIDR_REP,
	CM_IN_TIMEOUT, /* retransmission timer ran out of retries; TimeWait over */
	CM_IN__COUNT
};

/* What to do with an input in a state. */
enum cm_action {
	CM_A_DROP = 0,	     /* message: ignore (counted); command: -EINVAL */
	CM_A_GO,	     /* process, then move to `next` */
	CM_A_RESEND,	     /* duplicate: send our last message again */
	CM_A_REJ_STALE,	     /* answer REJ "stale connection" */
	CM_A_REJ_INVALID_ID, /* answer REJ "invalid communication ID" */
	CM_A_DREP,	     /* answer a fresh DREP */
	CM_A_RTU,	     /* answer a fresh RTU (duplicate REP) */
	CM_A_NONE,	     /* command: accepted, nothing to send or change */
};

#define CM_ST_SAME 0xff /* `next` meaning: stay in the state */
/*
 * How long an answered SIDR_REQ is kept (CM_ST_SIDR_REP_SENT), counted
 * again from each duplicate: four times the rdma_cm's CM response timeout
 * (4.096 us * 2^20, its SIDR_REQs' retry interval), so the retries after
 * a lost SIDR_REP find it even when some of them are lost too.
 */
#define CM_SIDR_LINGER_NS (4ull * 4096ull * (1ull << 20))

struct cm_transition {
	uint8_t action; /* enum cm_action */
	uint8_t next;	/* enum cm_state or CM_ST_SAME */
};

const struct cm_transition *cm_transition(enum cm_state s, enum cm_input in);
const char *cm_input_name(enum cm_input in);
/* States in which the connection's timer retransmits a message. */
bool cm_state_retransmits(enum cm_state s);
/* States that keep the last message sent: to retransmit it or resend it to a duplicate. */
bool cm_state_keeps_msg(enum cm_state s);

/* ---- connections ---- */

struct cm_conn {
	/* hash chains (ids.c) */
	struct cm_conn *next_local;
	struct cm_conn *next_remote_id;
	struct cm_conn *next_remote_qpn;
	struct cm_conn *next_local_qpn;
	struct cm_engine *eng;
	struct mad_timer timer; /* retransmission or TimeWait */
	uint64_t user;
	uint64_t remote_ca_guid; /* for SIDR: a key made from the sender's address */
	uint64_t service_id;
	uint64_t timeout_ns; /* response timeout of the message in flight */
	uint32_t local_id;
	uint32_t remote_id;
	uint32_t local_qpn;
	uint32_t remote_qpn;
	/*
	 * A REQ's or REP's starting PSN is the PSN its sender's receive queue
	 * expects (kernel cm.c: rq_psn on send, sq_psn on receive), so the
	 * peer's becomes our send PSN and the one we announce our receive PSN.
	 */
	uint32_t sq_psn; /* the peer's starting PSN */
	uint32_t rq_psn; /* our starting PSN */
	uint32_t qkey;	 /* SIDR */
	uint16_t pkey_index;
	uint8_t state;
	uint8_t active : 1; /* sent the REQ (or SIDR_REQ) */
	uint8_t orphan : 1; /* released by the user: no more events */
	uint8_t has_alternate : 1;
	uint8_t in_remote_id : 1; /* linked in the tables */
	uint8_t in_remote_qpn : 1;
	uint8_t in_local_qpn : 1;
	uint8_t srq : 1;
	uint8_t flow_control : 1;
	/*
	 * A delayed MRA (CM_MRA_FLAG_DELAY) is due in c->msg but not built:
	 * it is built only when a duplicate asks for it (cm_resend), as it
	 * seldom is; any message built meanwhile replaces it (cm_msg_start).
	 */
	uint8_t mra_due : 1;
	/* c->msg is built but not sent yet: kept across the state change before its send. */
	uint8_t msg_unsent : 1;
	uint8_t mra_service_timeout;
	uint8_t retries; /* retransmissions left */
	uint8_t max_cm_retries;
	uint8_t qp_type;
	uint8_t mtu;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t local_cm_response_timeout;
	uint8_t remote_cm_response_timeout;
	uint8_t target_ack_delay;
	int16_t listen_id;
	struct cm_path primary; /* local view */
	struct cm_path alternate;
	struct cm_path lap_path; /* pending LAP (LAP_SENT / LAP_RCVD) */
	struct mad_addr peer;	 /* where our MADs go */
	/*
	 * The last message sent (CM_MAD_SIZE), held only in the states that
	 * retransmit or resend it (cm_state_keeps_msg): an established
	 * connection answers a duplicate REP with an RTU built afresh, so a
	 * held connection costs no message buffer (docs/storms.md).  NULL
	 * when none is held, or when it could not be allocated (that message
	 * then goes out once, as if its resends were lost).
	 */
	uint8_t *msg;
};

struct cm_listen {
	uint64_t service_id;
	uint64_t mask;
	uint64_t user;
	bool used;
};

/* A REQ or SIDR_REQ waiting for a listen on its way (held.c). */
#define CM_HELD_MAX 32
struct cm_held {
	uint8_t mad[CM_MAD_SIZE];
	struct mad_addr from;
	enum cm_stat_msg type; /* CM_STAT_REQ or CM_STAT_SIDR_REQ */
	uint64_t deadline;     /* on cfg.timers' clock */
};

struct cm_engine {
	struct cm_engine_config cfg;
	struct cm_stat_counters st;
	uint32_t nconns;
	uint32_t max_conns;
	uint32_t hash_mask;
	struct cm_conn **by_local;
	struct cm_conn **by_remote_id;
	struct cm_conn **by_remote_qpn;
	struct cm_conn **by_local_qpn;
	struct cm_listen *listens;
	int nlistens;
	uint32_t tid_seq;
	/* Random words for local IDs (random32 in ids.c), 64 per getrandom(2). */
	uint32_t rnd[64];
	unsigned nrnd;
	unsigned rnd_gen; /* mad_random_generation() rnd came from */
	/*
	 * Comm IDs reserved for a later cm_engine_connect_as (madcmd grants
	 * them to its clients ahead): open addressing, 0 empty, ~0u deleted.
	 */
	uint32_t *reserved;
	uint32_t reserved_cap, reserved_n, reserved_used;
	struct mad_timer stat_timer;
	char *stat_file;
	/* Held REQs (held.c): CM_HELD_MAX slots from the first, nheld used. */
	struct cm_held *held;
	unsigned nheld;
	struct mad_timer held_timer;
	bool held_replay; /* handling a held one: answer, do not hold again */
	/*
	 * The next connection's memory, zeroed ahead (cm_conn_spare).  A
	 * connection lives on in TimeWait for seconds, so a new one is
	 * otherwise memory the CPU has not touched: its cache misses would
	 * fall in the REQ's send or the REQ's handling.
	 */
	struct cm_conn *spare;
	/* A message built when no buffer could be allocated (cm_msg_start). */
	uint8_t scratch[CM_MAD_SIZE];
};

/* A received message being processed. */
struct cm_rx {
	const struct mad_addr *from;
	const uint8_t *mad;
	const uint8_t *msg; /* mad + CM_MSG_OFFSET */
	uint64_t tid;
	enum cm_stat_msg type;
};

/* rx describes mad (already checked by cm_msg_check) received from from. */
static inline void cm_rx_init(struct cm_rx *rx, const struct mad_addr *from, const uint8_t *mad,
			      enum cm_stat_msg type)
{
	rx->from = from;
	rx->mad = mad;
	rx->msg = mad + CM_MSG_OFFSET;
	rx->tid = mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID);
	rx->type = type;
}

/* ids.c: comm IDs and hash tables, flat cost whatever the count. */
int cm_ids_init(struct cm_engine *e);
void cm_ids_destroy(struct cm_engine *e);
/* Grow the tables when the connection count reached the bucket count. */
void cm_ids_maybe_grow(struct cm_engine *e);
/* A fresh local comm ID for c (want: a reserved one, which it consumes). */
int cm_ids_new_local(struct cm_engine *e, struct cm_conn *c, uint32_t want);
int cm_ids_reserve(struct cm_engine *e, uint32_t *id);
/* Drop a reservation: true if id was reserved. */
bool cm_ids_unreserve(struct cm_engine *e, uint32_t id);
void cm_ids_link_remote_id(struct cm_engine *e, struct cm_conn *c);
void cm_ids_link_remote_qpn(struct cm_engine *e, struct cm_conn *c);
void cm_ids_unlink_remote_qpn(struct cm_engine *e, struct cm_conn *c);
void cm_ids_link_local_qpn(struct cm_engine *e, struct cm_conn *c);
void cm_ids_unlink_all(struct cm_engine *e, struct cm_conn *c);
struct cm_conn *cm_ids_by_local(const struct cm_engine *e, uint32_t id);
struct cm_conn *cm_ids_by_remote_id(const struct cm_engine *e, uint32_t rid, uint64_t guid);
struct cm_conn *cm_ids_by_remote_qpn(const struct cm_engine *e, uint32_t qpn, uint64_t guid);
struct cm_conn *cm_ids_by_local_qpn(const struct cm_engine *e, uint32_t qpn);

/* engine.c: connection life and sending. */
struct cm_conn *cm_conn_new(struct cm_engine *e);
/* The same with a reserved comm ID (0: a fresh one); NULL if want is not reserved. */
struct cm_conn *cm_conn_new_as(struct cm_engine *e, uint32_t want);
/* A connection we open (REQ or SIDR_REQ sent), for `user` and `service_id`. */
struct cm_conn *cm_conn_new_active(struct cm_engine *e, uint64_t user, uint64_t service_id);
struct cm_conn *cm_conn_new_active_as(struct cm_engine *e, uint64_t user, uint64_t service_id,
				      uint32_t want);
void cm_conn_free(struct cm_engine *e, struct cm_conn *c);
/*
 * Make the next connection's memory now (e->spare), where nothing waits
 * on this side: once its REQ is out (active), once its RTU came in
 * (passive).  A failed allocation only leaves none.
 */
void cm_conn_spare(struct cm_engine *e);
/* Start a message of `layout` in c->msg (header + our comm IDs). */
uint8_t *cm_msg_start(struct cm_engine *e, struct cm_conn *c, const struct mad_layout *layout);
/* Free c->msg unless c's state keeps it (after a state change, or a message sent after one). */
void cm_msg_release(struct cm_engine *e, struct cm_conn *c);
/* Send c->msg again (a duplicate's answer), a due delayed MRA built first. */
void cm_resend(struct cm_engine *e, struct cm_conn *c);
/* Send c->msg; with `retransmit`, arm the retry timer (c->timeout_ns). */
void cm_send_conn_msg(struct cm_engine *e, struct cm_conn *c, bool retransmit);
/* (Re)arm the retransmission timer for c->timeout_ns; retries left unchanged. */
void cm_conn_arm_retry(struct cm_engine *e, struct cm_conn *c);
/* Send a MAD not stored in a connection. */
void cm_send_raw(struct cm_engine *e, const struct mad_addr *to, const void *mad);
/* To the QP1 of rx's sender (engine.c). */
void cm_send_answer(struct cm_engine *e, const struct cm_rx *rx, const void *mad);
/* Move to `next` (enter TimeWait, stop timers; IDLE frees the conn). */
void cm_set_state(struct cm_engine *e, struct cm_conn *c, uint8_t next);
/* (Re)arm the timer that ends an answered SIDR (CM_SIDR_LINGER_NS). */
void cm_sidr_linger(struct cm_engine *e, struct cm_conn *c);
/* Deliver an event unless the connection is orphaned (c may be NULL). */
void cm_emit(struct cm_engine *e, const struct cm_conn *c, struct cm_event *ev);
void cm_event_init(struct cm_event *ev, enum cm_event_type t, const struct cm_conn *c);
/* Copy private data of a received message into an event. */
void cm_event_private(struct cm_event *ev, const struct mad_layout *l, const uint8_t *msg);
enum cm_stat_msg cm_stat_of_attr(uint16_t attr_id);
uint64_t cm_packet_life_ns(const struct cm_conn *c);
struct cm_listen *cm_listen_find(struct cm_engine *e, uint64_t service_id, int *id);
void cm_mad_addr_from_path(struct mad_addr *a, const struct cm_path *p, uint16_t pkey_index);

/*
 * held.c: a REQ (or SIDR_REQ) rx no listener takes, for service ID sid:
 * true if it is kept for a listen on its way (or is a retransmission of
 * one kept), false if the caller answers it now.
 */
bool cm_held_keep(struct cm_engine *e, const struct cm_rx *rx, uint64_t sid);
/* A listener was added: look at the held ones on the next timer pass. */
void cm_held_listened(struct cm_engine *e);
void cm_held_destroy(struct cm_engine *e);

/* Responses without a connection (REJ, DREP, SIDR_REP) to a received message. */
void cm_issue_rej(struct cm_engine *e, const struct cm_rx *rx, uint16_t reason,
		  uint8_t msg_rejected, const void *ari, uint8_t ari_len);
void cm_issue_drep(struct cm_engine *e, const struct cm_rx *rx);

/* conn.c: connection messages.  Return the next state, or CM_ST_SAME. */
int cm_on_req(struct cm_engine *e, const struct cm_rx *rx);
uint8_t cm_on_rep(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next);
uint8_t cm_on_rtu(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next);
uint8_t cm_on_rej(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next);
uint8_t cm_on_mra(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next);
uint8_t cm_on_dreq(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next);
uint8_t cm_on_drep(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next);
void cm_on_timeout(struct cm_engine *e, struct cm_conn *c);
void cm_send_fresh_rtu(struct cm_engine *e, struct cm_conn *c);
/* Send DREQ on an established connection (stale-connection cleanup). */
void cm_conn_send_dreq(struct cm_engine *e, struct cm_conn *c, const void *pd, uint8_t len);

/* lap.c */
uint8_t cm_on_lap(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next);
uint8_t cm_on_apr(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx, uint8_t next);

/* sidr.c */
int cm_on_sidr_req(struct cm_engine *e, const struct cm_rx *rx);
uint8_t cm_on_sidr_rep(struct cm_engine *e, struct cm_conn *c, const struct cm_rx *rx,
		       uint8_t next);

/* Check a command against the table; returns the transition or NULL (-EINVAL). */
const struct cm_transition *cm_cmd_allowed(const struct cm_conn *c, enum cm_input cmd);
/*
 * What every command on a connection starts with: *c the connection `id`,
 * *tr the transition `cmd` takes in its state; -ENOENT when there is no
 * such connection, -EINVAL when the table refuses the command there.
 */
int cm_cmd_check(struct cm_engine *e, uint32_t id, enum cm_input cmd, struct cm_conn **c,
		 const struct cm_transition **tr);

#endif
