/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The IB CM protocol engine (IBA vol 1 chapter 12): connection state
 * machine, timers and retries, TimeWait, duplicate and stale detection,
 * SIDR and LAP/APR.
 *
 * The engine is a pure state machine.  It owns no file descriptor and no
 * thread: whoever owns the umad fd calls cm_engine_recv() for every CM MAD
 * and runs the timer heap the engine was given; the engine sends MADs
 * through ops->send and reports what happened through ops->event.  Tests
 * drive it with a fake transport and a fake clock.
 *
 * Commands and events are plain message structs (no pointers into engine
 * state), so madcmd carries them over a socket (rtproto/): a connection is
 * named by its local communication ID (uint32_t), a listener by a small
 * integer, and every user context is an opaque uint64_t cookie.
 *
 * All calls return 0 (or a non-negative handle) or -errno.  Calls are made
 * from the engine's thread only; the engine is not thread safe.
 */
#ifndef MADCM_CM_ENGINE_H
#define MADCM_CM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "cm/cm_wire.h"
#include "mad/addr.h"
#include "mad/timer.h"

/* Connection states, IBA 12.9.6 (figures 154-157) and the kernel's ib_cm_state. */
enum cm_state {
	CM_ST_IDLE,
	CM_ST_REQ_SENT,
	CM_ST_REQ_RCVD,
	CM_ST_MRA_REQ_SENT,
	CM_ST_MRA_REQ_RCVD,
	CM_ST_REP_SENT,
	CM_ST_REP_RCVD,
	CM_ST_MRA_REP_SENT,
	CM_ST_MRA_REP_RCVD,
	CM_ST_ESTABLISHED,
	CM_ST_DREQ_SENT,
	CM_ST_DREQ_RCVD,
	CM_ST_TIMEWAIT,
	CM_ST_SIDR_REQ_SENT,
	CM_ST_SIDR_REQ_RCVD,
	/*
	 * The SIDR_REP is out: kept a while (no event) so that a duplicate
	 * of the SIDR_REQ, the requester's retry after a lost SIDR_REP, gets
	 * the same answer again instead of becoming a second request.
	 */
	CM_ST_SIDR_REP_SENT,
	/* Alternate path loading: sub-states of ESTABLISHED (IBA 12.8). */
	CM_ST_LAP_SENT,
	CM_ST_LAP_RCVD,
	CM_ST_MRA_LAP_SENT,
	CM_ST_MRA_LAP_RCVD,
	CM_ST__COUNT
};

const char *cm_state_name(enum cm_state s);

/*
 * One path as the local side sees it (local = this port).  Rates, MTU and
 * timeouts are IBA encodings: rate as in PathRecord (2 = 2.5 Gb/s ...),
 * MTU 1..5 (256..4096), timeouts 4.096 us * 2^t.
 */
struct cm_path {
	uint16_t slid;	     /* local port LID */
	uint16_t dlid;	     /* remote port LID */
	uint8_t sgid[16];    /* local port GID */
	uint8_t dgid[16];    /* remote port GID */
	uint32_t flow_label; /* 20 bits */
	uint8_t rate;	     /* 6 bits, PathRecord encoding */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;		   /* 4 bits */
	uint8_t subnet_local;	   /* 1: no GRH needed */
	uint8_t local_ack_timeout; /* 5 bits: QP ACK timeout for this path */
	uint8_t packet_life_time;  /* 5 bits: PathRecord PacketLifeTime */
	uint8_t mtu;		   /* 1..5 */
	uint16_t pkey;
	/*
	 * Local GID table index of sgid, for the GRH of the CM's MADs on this
	 * path (RoCE: the route knows it); 0 when not known, and the MAD
	 * transport then picks one for the destination itself.  Not on the wire.
	 */
	uint8_t sgid_index;
};

/*
 * Transport service types carried by REQ (IBA table 99).  XRC is type 3
 * with extended transport type 1 (cm_wire.h); the active side's QP is the
 * XRC initiator (IBV_QPT_XRC_SEND), the passive side's the target
 * (IBV_QPT_XRC_RECV), as the kernel's cm.c has it.
 */
enum cm_qp_type { CM_QPT_RC = 0, CM_QPT_UC = 1, CM_QPT_XRC = CM_TRANSPORT_EXTENDED };

/* Largest private data of any message (RTU, DREP). */
#define CM_PRIVATE_MAX CM_RTU_PRIVATE_DATA_SIZE

/* Command: connect (send REQ).  Everything the REQ carries. */
struct cm_connect_cmd {
	uint64_t user; /* cookie returned in events */
	uint64_t service_id;
	uint32_t qpn;	       /* local QP number (24 bits) */
	uint32_t starting_psn; /* 24 bits: our receive PSN, the peer's send PSN */
	uint8_t qp_type;       /* enum cm_qp_type */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t remote_cm_response_timeout; /* 5 bits: how long the peer may take */
	uint8_t local_cm_response_timeout;  /* 5 bits: how long we may take */
	uint8_t retry_count;		    /* 3 bits */
	uint8_t rnr_retry_count;	    /* 3 bits */
	uint8_t max_cm_retries;		    /* 4 bits */
	uint8_t srq;
	uint8_t flow_control;
	uint16_t pkey_index; /* for the CM MADs and the INIT QP attribute */
	/* ECE as the kernel carries it: REQ VendorID, MAD AttributeModifier. */
	uint32_t ece_vendor_id; /* 24 bits */
	uint32_t ece_attr_mod;
	bool has_alternate;
	struct cm_path primary;
	struct cm_path alternate;
	uint8_t private_data_len;
	uint8_t private_data[CM_REQ_PRIVATE_DATA_SIZE];
};

/* Command: accept a REQ (send REP).  Passive side. */
struct cm_accept_cmd {
	uint32_t qpn;
	uint32_t starting_psn; /* our receive PSN, the peer's send PSN */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;  /* 5 bits */
	uint8_t failover_accepted; /* 2 bits, 0 = accepted */
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t flow_control;
	uint32_t ece_vendor_id; /* REP VendorID (24 bits), as the kernel */
	uint32_t ece_attr_mod;	/* MAD AttributeModifier */
	uint8_t private_data_len;
	uint8_t private_data[CM_REP_PRIVATE_DATA_SIZE];
};

/* Command: reject (send REJ). */
struct cm_reject_cmd {
	uint16_t reason; /* CM REJ reason code (IBA table 112) */
	uint8_t ari_len;
	uint8_t ari[CM_REJ_ARI_SIZE];
	uint8_t private_data_len;
	uint8_t private_data[CM_REJ_PRIVATE_DATA_SIZE];
};

/* Command: SIDR request (UD service ID resolution). */
struct cm_sidr_req_cmd {
	uint64_t user;
	uint64_t service_id;
	uint16_t pkey;
	uint16_t pkey_index;
	struct mad_addr to; /* where the SIDR_REQ goes (QP1 of the peer) */
	uint8_t timeout;    /* 5 bits: response timeout per try */
	uint8_t max_cm_retries;
	uint8_t private_data_len;
	uint8_t private_data[CM_SIDR_REQ_PRIVATE_DATA_SIZE];
};

struct cm_sidr_rep_cmd {
	uint8_t status; /* enum cm_sidr_status (cm_wire.h) */
	uint32_t qpn;
	uint32_t qkey;
	uint8_t info_len;
	uint8_t info[CM_SIDR_REP_INFO_SIZE];
	uint8_t private_data_len;
	uint8_t private_data[CM_SIDR_REP_PRIVATE_DATA_SIZE];
};

/* Events, one per message received, timeout, or local completion. */
enum cm_event_type {
	CM_EV_REQ_RCVD,		/* passive: new connection request; .req */
	CM_EV_REQ_ERROR,	/* active: no REP after max CM retries */
	CM_EV_REP_RCVD,		/* active: .rep; answer with rtu/reject/mra */
	CM_EV_REP_ERROR,	/* passive: no RTU after max CM retries */
	CM_EV_RTU_RCVD,		/* passive: ESTABLISHED by RTU */
	CM_EV_USER_ESTABLISHED, /* passive: ESTABLISHED by cm_engine_establish */
	CM_EV_REJ_RCVD,		/* .rej */
	CM_EV_MRA_RCVD,		/* .mra: peer needs more time */
	CM_EV_DREQ_RCVD,	/* answer with cm_engine_disconnect (DREP) */
	CM_EV_DREQ_ERROR,	/* no DREP after max CM retries: TimeWait */
	CM_EV_DREP_RCVD,	/* in TimeWait now */
	CM_EV_TIMEWAIT_EXIT,	/* connection gone; its QPN is free again */
	CM_EV_LAP_RCVD,		/* .lap: answer with cm_engine_apr */
	CM_EV_LAP_ERROR,	/* no APR after max CM retries */
	CM_EV_APR_RCVD,		/* .apr */
	CM_EV_SIDR_REQ_RCVD,	/* .sidr_req: answer with cm_engine_sidr_rep */
	CM_EV_SIDR_REQ_ERROR,	/* no SIDR_REP after max CM retries */
	CM_EV_SIDR_REP_RCVD,	/* .sidr_rep */
	/*
	 * Made by a host that moves QPs itself (cm/runtime.h, auto QP
	 * option), never by the engine: in place of REP_RCVD, once the QP
	 * is at RTS and the RTU sent (.rep as in REP_RCVD), or when the QP
	 * could not follow the REP (.status -errno, a REJ was sent).
	 */
	CM_EV_ESTABLISHED,   /* active: QP at RTS, RTU sent; .rep */
	CM_EV_CONNECT_ERROR, /* active: QP transition failed, REJ sent; .status */
	/*
	 * Made by a runtime (cm/runtime.h), once: served by madcmd, when the
	 * daemon went away (.status -ENOTCONN: every connection and listener
	 * of the runtime is gone with it, later commands fail with
	 * -ENOTCONN); in this process, when the port's umad fd hung up, the
	 * device being gone (.status -ENODEV: no MAD comes or goes any more).
	 * .id 0.
	 */
	CM_EV_RUNTIME_LOST,
	CM_EV__COUNT
};

const char *cm_event_name(enum cm_event_type t);

/* What a REQ carried, as the passive side sees it (paths reversed). */
struct cm_req_info {
	uint64_t service_id;
	uint64_t remote_ca_guid;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;
	uint32_t starting_psn;
	uint8_t qp_type;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t remote_cm_response_timeout;
	uint8_t local_cm_response_timeout;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t max_cm_retries;
	uint8_t srq;
	uint8_t flow_control;
	uint32_t ece_vendor_id; /* the REQ's ECE (VendorID, AttributeModifier) */
	uint32_t ece_attr_mod;
	bool has_alternate;
	struct cm_path primary;
	struct cm_path alternate;
};

struct cm_rep_info {
	uint64_t remote_ca_guid;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;
	uint32_t starting_psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;
	uint8_t failover_accepted;
	uint8_t flow_control;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint32_t ece_vendor_id; /* the REP's ECE */
	uint32_t ece_attr_mod;
};

struct cm_rej_info {
	uint16_t reason;
	uint8_t msg_rejected; /* 0 REQ, 1 REP, 2 other */
	uint8_t ari_len;
	uint8_t ari[CM_REJ_ARI_SIZE];
};

struct cm_event {
	enum cm_event_type type;
	uint32_t id;	      /* local comm ID: the connection's handle */
	int listen_id;	      /* for REQ_RCVD / SIDR_REQ_RCVD, else -1 */
	uint64_t user;	      /* the connection's cookie (passive: the listener's until accept) */
	int status;	      /* 0, or -ETIMEDOUT for *_ERROR */
	struct mad_addr from; /* where the message came from */
	union {
		struct cm_req_info req;
		struct cm_rep_info rep;
		struct cm_rej_info rej;
		struct {
			uint8_t msg_mraed;	 /* 0 REQ, 1 REP, 2 LAP */
			uint8_t service_timeout; /* 5 bits */
		} mra;
		struct {
			struct cm_path alternate;
			uint8_t remote_cm_response_timeout;
		} lap;
		struct {
			uint8_t status;
			uint8_t info_len;
			uint8_t info[CM_APR_INFO_SIZE];
		} apr;
		struct {
			uint64_t service_id;
			uint16_t pkey;
			uint32_t request_id;
		} sidr_req;
		struct {
			uint8_t status;
			uint32_t qpn;
			uint32_t qkey;
			uint64_t service_id;
			uint8_t info_len;
			uint8_t info[CM_SIDR_REP_INFO_SIZE];
		} sidr_rep;
	};
	uint8_t private_data_len;
	uint8_t private_data[CM_PRIVATE_MAX];
};

struct cm_engine_ops {
	/* Send one MAD (len bytes, 256) to `to`.  Returns 0 or -errno; a
	 * failed send counts as a lost MAD (the retry timer covers it). */
	int (*send)(void *ctx, const struct mad_addr *to, const void *mad, size_t len);
	/* Deliver an event.  The callback may call engine commands. */
	void (*event)(void *ctx, const struct cm_event *ev);
};

struct cm_engine_config {
	uint64_t ca_guid;	       /* local CA GUID (REQ/REP LocalCAGUID) */
	uint8_t port_num;	       /* for the INIT QP attribute */
	uint32_t max_conns;	       /* table bound; 0 = 65536 */
	struct mad_timer_heap *timers; /* run by the owner of the engine */
	const struct cm_engine_ops *ops;
	void *ctx; /* first argument of ops callbacks */
	/* Optional: source of random comm IDs (tests); NULL = mad_random_bytes. */
	uint32_t (*random32)(void *ctx);
	/*
	 * Optional: whether the host's port space has service_id's port
	 * bound (by a program that may listen on it next).  A REQ or
	 * SIDR_REQ no listener takes then waits up to a second for the
	 * listen instead of its REJ (cm/held.c says why).  Called on the
	 * engine's loop; must not call the engine.  NULL: never.
	 */
	bool (*service_bound)(void *arg, uint64_t service_id);
	void *service_bound_arg;
};

struct cm_engine;

int cm_engine_create(const struct cm_engine_config *cfg, struct cm_engine **out);
/* Frees every connection silently (no MADs, no events). */
void cm_engine_destroy(struct cm_engine *e);

/*
 * Feed one received CM MAD.  Returns 0 when processed (or deliberately
 * ignored as the spec says), -EINVAL / -EPROTO for a malformed MAD, which
 * is dropped and counted.  Never crashes on hostile input.
 */
int cm_engine_recv(struct cm_engine *e, const struct mad_addr *from, const void *mad, size_t len);

/* Listen on service IDs matching (id & mask).  Returns a listen id >= 0. */
int cm_engine_listen(struct cm_engine *e, uint64_t service_id, uint64_t mask, uint64_t user);
int cm_engine_unlisten(struct cm_engine *e, int listen_id);

/* Active side.  On success *id is the new connection's local comm ID.
 * -EBUSY when cmd->qpn is in TimeWait, -ENOMEM when the table is full. */
int cm_engine_connect(struct cm_engine *e, const struct cm_connect_cmd *cmd, uint32_t *id);
/*
 * Reserve a fresh local comm ID for a later cm_engine_connect_as (it
 * counts against max_conns meanwhile: -ENOMEM when full); unreserve one
 * that will not be used (-EINVAL if it is not reserved).
 */
int cm_engine_reserve_id(struct cm_engine *e, uint32_t *id);
int cm_engine_unreserve_id(struct cm_engine *e, uint32_t id);
/*
 * cm_engine_connect with *id a reserved ID (consumed; the connection has
 * it), or 0 for a fresh one.  -EINVAL when *id is not reserved.
 */
int cm_engine_connect_as(struct cm_engine *e, const struct cm_connect_cmd *cmd, uint32_t *id);
/* Passive: after CM_EV_REQ_RCVD.  `user` becomes the connection's cookie. */
int cm_engine_accept(struct cm_engine *e, uint32_t id, uint64_t user,
		     const struct cm_accept_cmd *cmd);
int cm_engine_reject(struct cm_engine *e, uint32_t id, const struct cm_reject_cmd *cmd);
/*
 * Send MRA for the REQ, REP or LAP received last, asking `service_timeout`.
 * With CM_MRA_FLAG_DELAY or'ed in, enter the MRA state but send the MRA
 * only as the answer to a duplicate of that message (the kernel's
 * IB_CM_MRA_FLAG_DELAY, which rdma_cm uses for every REQ and REP).
 */
#define CM_MRA_FLAG_DELAY 0x80
int cm_engine_mra(struct cm_engine *e, uint32_t id, uint8_t service_timeout,
		  const void *private_data, uint8_t len);
/* Active: after CM_EV_REP_RCVD, send RTU and enter ESTABLISHED. */
int cm_engine_rtu(struct cm_engine *e, uint32_t id, const void *private_data, uint8_t len);
/* Passive: first data arrived before the RTU ("communication established"). */
int cm_engine_establish(struct cm_engine *e, uint32_t id);
/* ESTABLISHED: send DREQ.  DREQ_RCVD: send DREP and enter TimeWait. */
int cm_engine_disconnect(struct cm_engine *e, uint32_t id, const void *private_data, uint8_t len);
/* Load an alternate path (LAP) on an established connection. */
int cm_engine_lap(struct cm_engine *e, uint32_t id, const struct cm_path *alt,
		  const void *private_data, uint8_t len);
/* Answer a LAP; status CM_APR_SUCCESS installs the path. */
int cm_engine_apr(struct cm_engine *e, uint32_t id, uint8_t status, const void *info,
		  uint8_t info_len, const void *private_data, uint8_t len);
int cm_engine_sidr_req(struct cm_engine *e, const struct cm_sidr_req_cmd *cmd, uint32_t *id);
int cm_engine_sidr_rep(struct cm_engine *e, uint32_t id, const struct cm_sidr_rep_cmd *cmd);
/*
 * Forget a connection as the kernel's ib_destroy_cm_id does: REJ if the
 * handshake is under way, DREQ if established; what must linger (DREQ
 * retries, TimeWait) does so without events to the user.
 */
int cm_engine_release(struct cm_engine *e, uint32_t id);
/*
 * A REQ not answered yet (REQ_RCVD, or MRA_REQ_SENT: the delayed MRA
 * armed when it was delivered): forget it without a REJ (the peer will
 * retry it).
 */
int cm_engine_drop(struct cm_engine *e, uint32_t id);

/*
 * QP attributes for IBV_QPS_INIT, _RTR or _RTS, like the kernel's
 * cm_init_qp_attr, in the states it allows them: INIT from connect / REQ
 * on; RTR and RTS once the peer's QPN is known (REQ received, REP
 * received), so the passive side may reach RTS before it accepts, as
 * rdma_accept does.  A starting PSN (REQ, REP) is what its sender's receive
 * queue expects: RTS's sq_psn is the peer's, RTR's rq_psn the one we sent
 * (before accept: 0; set the one you will accept with).  -EINVAL in other
 * states (TimeWait, DREQ, SIDR, idle).
 */
int cm_engine_init_qp_attr(struct cm_engine *e, uint32_t id, enum ibv_qp_state target,
			   struct ibv_qp_attr *attr, int *mask);

/*
 * rdma_cm moves a QP INIT -> INIT (access flags, P_Key index, port) and
 * then INIT -> RTR (ucma_modify_qp_rtr, the kernel's cma_modify_qp_rtr).
 * Access flags and P_Key index are optional attributes of INIT -> RTR
 * (IBA "QP state transitions", ib_modify_qp_is_ok), so for a QP at INIT
 * on init's port already, as rdma_create_qp leaves it, one modify of
 * `rtr` carrying them does both (the port cannot go with it).  Should
 * that modify fail (a QP moved elsewhere meanwhile), the two are made.
 * `modify` applies attributes to the caller's QP: 0 or -errno.
 */
int cm_qp_modify_to_rtr(int (*modify)(void *ctx, struct ibv_qp_attr *attr, int mask), void *ctx,
			struct ibv_qp_attr *init, int init_mask, struct ibv_qp_attr *rtr,
			int rtr_mask);

int cm_engine_conn_state(struct cm_engine *e, uint32_t id, enum cm_state *state);
bool cm_engine_qpn_in_timewait(struct cm_engine *e, uint32_t qpn);
/* Live connections (any state, TimeWait included). */
uint32_t cm_engine_conn_count(const struct cm_engine *e);
/* Bytes the engine allocates per connection (for the memory budget). */
size_t cm_engine_conn_size(void);

#endif
