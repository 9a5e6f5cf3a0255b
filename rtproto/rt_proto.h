/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The madcmd protocol: the CM runtime's commands and events (cm/runtime.h)
 * between a program (the library) and madcmd, the per-host daemon that
 * owns the CM and SA agents of every port, over a UNIX SOCK_SEQPACKET
 * socket.  A message is a header, then a body whose layout the type fixes;
 * a packet is one message, except that the daemon packs the REPLY, EVENT
 * and GRANT messages it has for a CM session during one turn of its loop
 * into one packet (a batch: messages back to back, up to
 * MADCMD_BATCH_MAX), so a burst of events costs one send and one receive.
 * docs/madcmd-protocol.md has a table per message.
 *
 * A program opens one connection per use ("session"), named by the first
 * message (HELLO):
 *   - HOST: the host-wide port space (bind, listen check, unbind) and the
 *     daemon's view of everything (STAT);
 *   - CM:   the CM of one port: commands (CMD -> REPLY, in order) and the
 *     events of the connections and listeners this session made (EVENT);
 *     PathRecords of the port (PATH_QUERY -> PATH_REP, in any order),
 *     answered from the daemon's one path cache and SA client, shared by
 *     every program of the host, and the ServiceRecords of address
 *     resolution (SERVICE_QUERY -> SERVICE_REP) the same way;
 *   - MAD:  a MAD port proxied by the daemon for the program's SA client:
 *     requests go out from the daemon's agent, their responses (and RMPP
 *     segments) come back to the session that sent them.
 * Any session may send PING (a bare header): the daemon answers PONG at
 * once, so a program whose session is quiet (it waits for events only)
 * learns within MADCMD_TIMEOUT_ENV's bound that the daemon stopped.
 * Ids, listeners, ports and memberships belong to the session that made
 * them; a session that closes (the program exits or dies) has them
 * released as the kernel releases a closed ucma file's.
 *
 * The bodies of CMD, REPLY and EVENT are struct cm_rt_cmd and struct
 * cm_event as this build lays them out (plain data, no pointers trusted:
 * auto_qp travels zeroed); HELLO carries a layout check so a daemon and a
 * library from different builds refuse each other (EPROTO) instead of
 * misreading.  Every decoder here checks type, length and ranges and
 * never reads past the packet.
 */
#ifndef MADCM_RTPROTO_RT_PROTO_H
#define MADCM_RTPROTO_RT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/runtime.h"
#include "mad/addr.h"
#include "mad/umad_ops.h"
#include "sa/sa_wire.h"

#define MADCMD_PROTO_VERSION 9
/* Where madcmd listens unless told (madcmd -s, MADCM_DAEMON). */
#define MADCMD_SOCKET_DEFAULT "/run/madcm/madcmd.sock"
#define MADCMD_SOCKET_ENV "MADCM_DAEMON"
/*
 * How long a program waits for the daemon while it waits for something
 * from it (a REPLY, a query's answer, room to send): past it, the session
 * is lost as if the daemon had exited (MADCM_DAEMON_TIMEOUT_MS, ms).
 */
#define MADCMD_TIMEOUT_ENV "MADCM_DAEMON_TIMEOUT_MS"
#define MADCMD_TIMEOUT_DEFAULT_MS 30000

/* Largest message: a MAD_SEND/MAD_RECV of one reassembled-size MAD. */
#define MADCMD_MAD_MAX 2048
#define MADCMD_MSG_MAX 4096
/* Largest packet: a batch of a CM session's messages (daemon -> program). */
#define MADCMD_BATCH_MAX 65536

enum madcmd_type {
	MADCMD_HELLO = 1, /* c->d: first message of a session */
	MADCMD_HELLO_REP, /* d->c */
	MADCMD_CMD,	  /* c->d (CM): one runtime command */
	MADCMD_REPLY,	  /* d->c (CM): its result, same seq */
	MADCMD_EVENT,	  /* d->c (CM): one engine event */
	MADCMD_MAD_REG,	  /* c->d (MAD): register an agent */
	MADCMD_MAD_REG_REP,
	MADCMD_MAD_SEND,      /* c->d (MAD): send one MAD */
	MADCMD_MAD_RECV,      /* d->c (MAD): one received MAD */
	MADCMD_PORT_BIND,     /* c->d (HOST): reserve (port space, port) */
	MADCMD_PORT_LISTEN,   /* c->d (HOST): may this binding listen? */
	MADCMD_PORT_UNBIND,   /* c->d (HOST) */
	MADCMD_PORT_REP,      /* d->c (HOST): result of the three above */
	MADCMD_STAT,	      /* c->d (HOST): every session's ids */
	MADCMD_STAT_REP,      /* d->c: one per id, then one with .last */
	MADCMD_GRANT,	      /* d->c (CM): comm IDs reserved for the session's CONNECT_AS */
	MADCMD_PATH_QUERY,    /* c->d (CM): PathRecords, from the daemon's cache or SA */
	MADCMD_PATH_REP,      /* d->c (CM): its answer, same seq */
	MADCMD_SERVICE_QUERY, /* c->d (CM): ServiceRecords, from the daemon's cache or SA */
	MADCMD_SERVICE_REP,   /* d->c (CM): its answer, same seq */
	MADCMD_PING,	      /* c->d (any kind): are you there? (a header only) */
	MADCMD_PONG,	      /* d->c: at once, same seq */
	MADCMD__TYPES
};

enum madcmd_kind { MADCMD_SESSION_HOST = 1, MADCMD_SESSION_CM, MADCMD_SESSION_MAD };

struct madcmd_hdr {
	uint16_t type;	  /* enum madcmd_type */
	uint16_t version; /* MADCMD_PROTO_VERSION */
	uint32_t len;	  /* whole message, header included */
	uint32_t seq;	  /* CMD/PORT_*: echoed by the reply; else 0 */
	uint32_t flags;	  /* MADCMD_F_* */
};

/* CMD: run it, send no REPLY (the program ignores the result: MRA). */
#define MADCMD_F_NOREPLY 0x1u
/*
 * CMD: run it, send a REPLY only when it fails (that REPLY has the flag
 * too): a CONNECT_AS or ACCEPT the program does not wait for; it learns
 * of a failure as an event would tell it.
 */
#define MADCMD_F_ASYNC 0x2u

struct madcmd_hello {
	struct madcmd_hdr h;
	uint32_t kind;		  /* enum madcmd_kind */
	uint32_t layout;	  /* madcmd_layout() of the sender's build */
	char ca[MAD_CA_NAME_MAX]; /* CM, MAD: the port ("" with port 0: first active) */
	int32_t port;
	/*
	 * CM: the service timeout of the delayed MRA the daemon arms for every
	 * REQ and REP it sends the session as an EVENT (cm_runtime_params.
	 * mra_on_delivery); 0: none.
	 */
	uint8_t mra_on_delivery;
	uint8_t reserved[3];
};

struct madcmd_hello_rep {
	struct madcmd_hdr h;
	int32_t rc; /* 0 or -errno (no such port, EPROTO ...) */
	uint32_t layout;
	struct mad_port_attr port; /* CM, MAD: the port served */
	uint64_t ca_guid;
};

/*
 * QP attributes of a connection as CM_RT_INIT_QP_ATTR gives them, sent
 * with the message that makes them known so that the program moves its
 * QP without a round trip per state (the REPLY of a CONNECT: INIT; the
 * EVENTs REQ_RCVD and REP_RCVD: INIT, RTR, RTS).
 */
struct madcmd_qp_attr {
	uint32_t state; /* enum ibv_qp_state: INIT, RTR or RTS */
	int32_t mask;
	struct ibv_qp_attr attr;
};
#define MADCMD_QP_ATTRS 3

struct madcmd_cmd { /* CMD and REPLY */
	struct madcmd_hdr h;
	struct cm_rt_cmd cmd; /* REPLY: with .result and the outputs */
	uint32_t nqp;	      /* REPLY: entries of qp[] used */
	uint32_t reserved;
	struct madcmd_qp_attr qp[MADCMD_QP_ATTRS];
};

struct madcmd_event {
	struct madcmd_hdr h;
	struct cm_event ev;
	uint32_t nqp; /* entries of qp[] used */
	uint32_t reserved;
	struct madcmd_qp_attr qp[MADCMD_QP_ATTRS];
};

/*
 * GRANT: comm IDs the daemon reserved for this session (CM_RT_RESERVE_ID),
 * sent after HELLO_REP and again whenever the session used half; a
 * CONNECT_AS names one of them, so that the program knows its connection's
 * ID without waiting for a REPLY.  Reserved IDs count against the
 * session's id limit: what the daemon would refuse is never granted.
 */
#define MADCMD_GRANT_MAX 64
struct madcmd_grant {
	struct madcmd_hdr h;
	uint32_t n; /* entries of ids[] used, 1..MADCMD_GRANT_MAX */
	uint32_t reserved;
	uint32_t ids[MADCMD_GRANT_MAX];
};

/*
 * PATH_QUERY: a PathRecord query (sa/client.h's struct sa_path_query) the
 * daemon answers from its SA client, whose cache and in-flight queries
 * serve every session: one SA query per path however many ask.  The
 * answer (PATH_REP) echoes seq and comes when the SA's does, not in the
 * order of CMD's REPLYs.
 */
#define MADCMD_PATH_MAX 16 /* paths one PATH_REP carries */
struct madcmd_path_query {
	struct madcmd_hdr h;
	uint64_t comp_mask; /* SA_PR_COMP_* */
	uint8_t table;	    /* 1: GetTable, 0: Get */
	uint8_t reserved[7];
	uint8_t rec[SA_PR_SIZE]; /* the template, PathRecord wire layout */
};

struct madcmd_path_rep {
	struct madcmd_hdr h;
	int32_t rc; /* 0 or -errno, as sa_path_query_async's status */
	uint32_t n; /* paths in recs[], 0..MADCMD_PATH_MAX */
	uint8_t recs[MADCMD_PATH_MAX][SA_PR_SIZE];
};

/*
 * SERVICE_QUERY: a ServiceRecord GetTable (sa_service_query_async: the
 * records matching the masked fields of the template) the daemon answers
 * as PATH_QUERY, from its SA client's service cache and queries in
 * flight: address resolution (lib/addr_sa.h) costs one SA query per
 * address however many programs ask.  SERVICE_REP echoes seq.
 */
#define MADCMD_SERVICE_MAX 8 /* records one SERVICE_REP carries */
struct madcmd_service_query {
	struct madcmd_hdr h;
	uint64_t comp_mask;	 /* SA_SR_COMP_* */
	uint8_t rec[SA_SR_SIZE]; /* the template, ServiceRecord wire layout */
};

struct madcmd_service_rep {
	struct madcmd_hdr h;
	int32_t rc; /* 0 or -errno, as sa_service_query_async's status */
	uint32_t n; /* records in recs[], 0..MADCMD_SERVICE_MAX */
	uint8_t recs[MADCMD_SERVICE_MAX][SA_SR_SIZE];
};

struct madcmd_mad_reg {
	struct madcmd_hdr h;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t rmpp_version;
	uint8_t reserved;
	uint32_t method_mask[4]; /* must be zero: the daemon proxies requesters only */
};

struct madcmd_mad_reg_rep {
	struct madcmd_hdr h;
	int32_t rc; /* the agent id for the session, or -errno */
};

struct madcmd_mad { /* MAD_SEND, MAD_RECV */
	struct madcmd_hdr h;
	int32_t agent;	      /* the session's agent id */
	uint32_t timeout_ms;  /* SEND: as mad_umad_ops.send */
	struct mad_addr addr; /* SEND: destination; RECV: source */
	uint32_t len;	      /* MAD bytes that follow */
	uint8_t mad[];
};

struct madcmd_port {
	struct madcmd_hdr h;
	uint64_t token;	  /* the program's handle of the binding (its id) */
	uint32_t ps;	  /* enum rdma_port_space */
	uint16_t port;	  /* BIND: 0 picks an ephemeral port */
	uint16_t family;  /* AF_INET, AF_INET6, AF_IB */
	uint8_t addr[16]; /* the bound address (network order) */
	uint8_t any;	  /* wildcard or loopback */
	uint8_t reuseaddr;
	uint8_t afonly;
	uint8_t reserved;
};

struct madcmd_port_rep {
	struct madcmd_hdr h;
	int32_t rc;    /* 0 or -errno (EADDRINUSE, EADDRNOTAVAIL, EACCES ...) */
	uint16_t port; /* BIND: the port reserved */
	uint16_t reserved;
};

struct madcmd_stat_rep {
	struct madcmd_hdr h;
	uint32_t last; /* 1: end of the list (the fields below unused) */
	int32_t pid;   /* the session's process */
	uint32_t uid;
	char ca[MAD_CA_NAME_MAX];
	int32_t port;
	uint32_t id;	 /* connection (local comm ID) or listen id */
	uint32_t listen; /* 1: a listener (service_id set) */
	uint32_t state;	 /* enum cm_state of a connection */
	uint64_t service_id;
	uint16_t remote_lid;
	uint8_t remote_gid[16];
	uint64_t end_room[8]; /* 0: where the last STAT_REP carries more counters */
};

/*
 * The last STAT_REP (last = 1), whose other fields no id uses, carries the
 * path cache counters of the daemon (PATH_QUERY), summed over the ports it
 * serves: the same 160 bytes, `ca` left empty, so a reader that does not
 * know them still sees a well-formed end of the list.  A daemon without
 * them sends zeros (ports 0).  heap_kib is the daemon's malloc heap in
 * use, what its sessions, ids and connections cost (docs/storms.md).
 */
struct madcmd_stat_end {
	struct madcmd_hdr h;
	uint32_t last;		  /* 1 */
	uint32_t ports;		  /* ports with an SA client summed below */
	uint32_t heap_kib;	  /* madcmd's heap in use, KiB (mallinfo2: uordblks + hblkhd) */
	char ca[MAD_CA_NAME_MAX]; /* empty */
	uint64_t path_asks;	  /* PATH_QUERYs answered (madcmd_counters) */
	uint64_t paths_dropped;	  /* cached paths dropped for a GID out of service (madcmd) */
	uint64_t path_queries;	  /* PathRecord queries sent to the SA (sa_client_stats) */
	uint64_t path_coalesced;  /* asks that joined a query in flight */
	uint64_t cache_hits_late; /* asks answered by a path cached while they waited */
	uint64_t cache_dropped;	  /* cache entries dropped for a GID out of service */
	/* Cache flushes, by what made them (madcmd_counters, sa_client_stats): */
	uint64_t cache_flush_rereg; /* the SM's client reregistration (verbs async event) */
	uint64_t cache_flush_pkey;  /* a P_Key table change (verbs async event) */
	uint64_t cache_flush_port;  /* an SM, LID, GID or state change (verbs async event) */
	uint64_t cache_flush_poll;  /* a port change the SA client's look found */
	/* SERVICE_QUERY (address resolution), as the path counters above: */
	uint64_t service_asks;	    /* SERVICE_QUERYs answered (madcmd_counters) */
	uint64_t service_queries;   /* ServiceRecord GetTables sent to the SA (sa_client_stats) */
	uint64_t service_coalesced; /* asks that joined one in flight, or found it cached late */
	uint64_t service_dropped;   /* cached answers dropped: GID out of service, Set, Delete */
};
_Static_assert(sizeof(struct madcmd_stat_end) == sizeof(struct madcmd_stat_rep),
	       "the end of STAT is a STAT_REP");
_Static_assert(offsetof(struct madcmd_stat_end, ca) == offsetof(struct madcmd_stat_rep, ca),
	       "its ca is where a STAT_REP's is");

/* The daemon's socket: $MADCM_DAEMON when set and not empty, else the default. */
const char *madcmd_socket_path(void);

/*
 * The bound on a wait for the daemon, in ms: $MADCM_DAEMON_TIMEOUT_MS
 * when it is a number from 1 to INT_MAX, else MADCMD_TIMEOUT_DEFAULT_MS
 * (another value is reported once on stderr).
 */
int madcmd_timeout_ms(void);

/*
 * Give a session socket (either end) send room for a burst: a SEQPACKET
 * socket's default takes ~170 messages, fewer than the queries and
 * commands of 1,000 ids made at once.  Best effort (capped by wmem_max).
 */
void madcmd_socket_bufs(int fd);

/* A fingerprint of the layouts this build sends as raw structs. */
uint32_t madcmd_layout(void);

/* The size of a message of `type` (MAD_*: without the MAD); 0 for no type. */
size_t madcmd_msg_size(int type);

/* Fill a header. */
void madcmd_hdr_init(struct madcmd_hdr *h, enum madcmd_type type, size_t len, uint32_t seq);

/*
 * Check a received packet: a known type, this version, a length that is
 * exactly (or for MAD_*, at least) the type's, and the body's ranges
 * (enum values, private data and MAD lengths).  Returns the type, or
 * -EPROTO (malformed: count and drop it, or close the session).
 */
int madcmd_check(const void *buf, size_t len);
/*
 * The next message of a packet of `len` bytes at `*off` (0 to start): its
 * type (madcmd_check of it), with *msg and *msg_len set and *off moved past
 * it; 0 at the end of the packet; -EPROTO for a message that does not fit
 * what is left or fails madcmd_check (the rest of the packet is then not
 * to be trusted).  A one-message packet is a batch of one.
 */
int madcmd_batch_next(const void *pkt, size_t len, size_t *off, const void **msg, size_t *msg_len);

/* Errors of a session, as the library reports them. */
#define MADCMD_ERR_LOST (-ENOTCONN)	/* the daemon went away */
#define MADCMD_ERR_STALLED (-ETIMEDOUT) /* it sent nothing for madcmd_timeout_ms() */

#endif
