/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd's core, inside: the structures the core's files share.  One
 * loop thread owns all of it; nothing here is locked.
 */
#ifndef MADCM_MADCMD_INT_H
#define MADCM_MADCMD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>
#include <sys/types.h>

#include "cm/runtime.h"
#include "madcmd/madcmd.h"
#include "rtproto/rt_proto.h"
#include "sa/sa_wire.h"

struct madcmd_session;

/* An ask of a session waiting for the SA (asks.c). */
struct madcmd_ask {
	struct madcmd_ask *next, **pprev; /* the session's list */
	struct madcmd_session *s;	  /* NULL: orphaned */
	uint32_t seq;			  /* the question's, for its answer */
};
struct sa_service;
struct ibv_context;

/* Loop fd set tags: 0 the listener, 1 .. max_sessions sessions, these ports' verbs events. */
#define MADCMD_TAG_EVENTS 0x80000000u

/*
 * One id a session owns: a connection (local comm ID) or a listener.
 * Found by (listen, id) in the port's hash, listed in its session.
 */
struct madcmd_id {
	struct madcmd_id *hnext;	 /* port hash chain */
	struct madcmd_id *snext, *sprev; /* the session's list */
	struct madcmd_session *s;
	uint32_t id;
	bool listen;
	uint64_t service_id; /* listeners */
	uint64_t user;	     /* listeners: the LISTEN's, given back in their REQs */
	/* listeners: the engine listener shared with other namespaces' */
	struct madcmd_lgroup *g;
	struct madcmd_id *gnext;
	uint16_t remote_lid; /* connections, when known */
	uint8_t remote_gid[16];
};

/* SA notices through the proxy (mad_proxy.c); read by tests and logs. */
struct madcmd_notice_counters {
	uint64_t reports;	   /* Reports received and answered (ReportResp sent) */
	uint64_t report_dups;	   /* ... with a TID already forwarded: not forwarded again */
	uint64_t report_malformed; /* not a Notice, too short ...: dropped unanswered */
	uint64_t forwarded;	   /* Reports passed to sessions (one per session) */
	uint64_t resps_absorbed;   /* sessions' ReportResps: the daemon answered already */
	uint64_t subs_sent;	   /* InformInfo Sets passed to the SA */
	uint64_t subs_local;	   /* ... answered here: another session holds the same */
	uint64_t unsubs;	   /* unsubscribes sent for closed sessions */
};

#define MADCMD_SEEN_REPORTS 32

/*
 * One engine listener (the IB port's, one per service ID) and the
 * listeners of sessions sharing it, each of another network namespace,
 * oldest first.  The first one's id is the engine's; the others' are
 * the daemon's own (MADCMD_VLISTEN_BIT set), which the engine never
 * sees.  A REQ goes to the one whose namespace holds its destination IP.
 */
struct madcmd_lgroup {
	uint64_t service_id, mask;
	uint32_t engine_id;
	struct madcmd_id *members;
	unsigned n;
};

#define MADCMD_VLISTEN_BIT 0x40000000u /* an int listen_id stays positive */

struct madcmd_served {
	struct madcmd *d;
	unsigned index;
	struct cm_runtime *rt;
	struct mad_port_attr attr;
	uint64_t ca_guid;
	/* (listen, id) -> owner; power-of-two buckets, doubled when full. */
	struct madcmd_id **ht;
	uint32_t ht_size, nids;
	/* Listener groups by engine listen id (lg_size entries), and the next own id. */
	struct madcmd_lgroup **lg;
	uint32_t lg_size, next_vlisten;
	/* The SA proxy: a umad port of our own with one SA requester agent. */
	int proxy_portid, proxy_agent, proxy_fd;
	bool proxy_ok;
	bool gone; /* its umad port hung up (the device went away): serves no one */
	struct madcmd_counters c;
	/* Its verbs async events (port_events.c): a context, or NULL. */
	struct ibv_context *events;
	bool events_warned; /* that they cannot be had was logged */
	/*
	 * The SA's Reports (mad_proxy.c): an agent of the proxy port for the
	 * Report method (-1 when another agent of the port has it), the TIDs
	 * of the last Reports forwarded (each forwarded once, answered each
	 * time), and what came of them.
	 */
	int notice_agent;
	struct {
		uint64_t tid;
		uint16_t lid;
	} seen[MADCMD_SEEN_REPORTS];
	unsigned seen_next, seen_n;
	struct madcmd_notice_counters nc;
};

/* A message waiting for a session's socket to drain. */
struct madcmd_msg {
	struct madcmd_msg *next;
	size_t len;
	uint32_t nmsgs; /* messages in the packet (a batch holds several) */
	uint8_t buf[];
};

/*
 * Comm IDs a CM session holds granted ahead (madcmd_cm_grant): topped up
 * to the target when fewer than half are left, within the id limit.
 */
#define MADCMD_GRANT_TARGET 128

/*
 * A proxied TID: the client's, and the daemon's low 32 bits that replace
 * it on the wire ((slot << 20) | (generation << 12) | entry).  A send with
 * a TID already here (a retry) reuses its daemon TID.  An entry lives from
 * the send to the SA's answer (or its local answer), and at most
 * MADCMD_TID_EXPIRE_NS after the last send of a TID nobody answers; freed
 * entries are taken again oldest first, each with its next generation,
 * so an answer that comes after its entry was freed finds no entry.
 * Entries are made in chunks as a session needs them: what a session
 * holds follows its requests in flight, not how many it ever sent.
 * madcmd/tid_map.c.
 */
#define MADCMD_TID_SLOTS 4096 /* in flight per session; 1 << MADCMD_TID_ENTRY_BITS */
#define MADCMD_TID_ENTRY_BITS 12
#define MADCMD_TID_CHUNK 128 /* entries made at a time */
#define MADCMD_TID_HASH 4096 /* client-TID chains; a power of two */
#define MADCMD_TID_SLOT_SHIFT 20
#define MADCMD_TID_COUNTER_MASK ((1u << MADCMD_TID_SLOT_SHIFT) - 1)
#define MADCMD_TID_EXPIRE_NS (60 * 1000000000ull)

struct madcmd_tid {
	bool used;
	uint8_t gen;   /* of the daemon TID: 1..255, the next at each taking */
	uint16_t next; /* used: the next entry (index + 1) of its client-TID chain; free: of the
			  free list */
	uint64_t client_tid;
	uint64_t sent_ns; /* the last send of this TID */
	uint32_t dtid;
	int32_t agent;
	/* A join (MCMemberRecord Set) waiting for the SA's answer. */
	bool join;
	uint8_t join_state;
	struct mad_addr to;
	/* A subscription (InformInfo Set, Subscribe 1) waiting for the SA's answer. */
	bool inform;
	uint8_t inform_rec[SA_II_SIZE]; /* as sent */
};

/*
 * A subscription to SA traps a session holds (the SA took its InformInfo
 * Set, or another session's like it): the InformInfo with Subscribe, QPN
 * and RespTimeValue zeroed, which is what makes two alike.
 */
struct madcmd_inform {
	struct madcmd_inform *next;
	uint8_t key[SA_II_SIZE];
	uint8_t rec[SA_II_SIZE]; /* the Set as sent: OpenSM matches the unsubscribe on it */
	struct mad_addr sa;	 /* where the Set went: the unsubscribe goes there too */
};

struct madcmd_tid_map {
	struct madcmd_tid *chunk[MADCMD_TID_SLOTS / MADCMD_TID_CHUNK];
	uint16_t head[MADCMD_TID_HASH];
	uint16_t free_head, free_tail; /* free entries (index + 1), oldest first */
	uint16_t made;		       /* entries made, in chunks */
	uint16_t sweep;		       /* the next entry looked at for expiry */
	uint32_t used;
};

/* The entry of a client TID (its send time now_ns), made if new; NULL: no memory. */
struct madcmd_tid *madcmd_tid_entry(struct madcmd_tid_map *m, unsigned slot, uint64_t tid,
				    uint64_t now_ns);
struct madcmd_tid *madcmd_tid_find_client(struct madcmd_tid_map *m, uint64_t tid);
struct madcmd_tid *madcmd_tid_find_daemon(struct madcmd_tid_map *m, uint32_t dtid);
/* The TID is done (answered): its entry is free, to be taken again. */
void madcmd_tid_release(struct madcmd_tid_map *m, struct madcmd_tid *e);
void madcmd_tid_map_clear(struct madcmd_tid_map *m);

/* A multicast membership a session holds (the SA answered its join OK). */
struct madcmd_member {
	struct madcmd_member *next;
	uint8_t mgid[16];
	uint8_t port_gid[16];
	uint8_t join_state; /* SA_JOIN_* bits */
	struct mad_addr sa; /* where the join went: the Delete goes there too */
};

/*
 * A ServiceRecord a session registered (SubnAdmSet): the library's
 * address records (lib/addr_sa.c), which programs serving the same
 * address register alike, so a Delete while another session holds the
 * same record is answered here, and a session that ends deletes only
 * what nobody else holds.
 */
struct madcmd_service {
	struct madcmd_service *next;
	uint64_t id;
	uint8_t gid[16];
	uint8_t rec[SA_SR_SIZE]; /* as the Set carried it */
	uint64_t comp_mask;
	struct mad_addr sa;
};

/* A port-space reservation (HOST sessions). */
struct madcmd_bind {
	struct madcmd_bind *hnext;	    /* daemon bucket of (ps, port) */
	struct madcmd_bind *snext, **sprev; /* the session's list */
	struct madcmd_bind *tnext;	    /* daemon bucket of (session, token) */
	struct madcmd_session *s;
	uint64_t token;
	uint64_t netns; /* the session's: one port space per network namespace */
	uint32_t ps;
	uint16_t port;
	uint16_t family;
	uint8_t addr[16];
	bool any, reuseaddr, afonly;
};

struct madcmd_session {
	struct madcmd *d;
	unsigned slot; /* 1 .. max_sessions; 0 is the daemon's own TIDs */
	int fd;
	pid_t pid;
	uid_t uid;
	uint64_t netns; /* its network namespace at accept (params.netns_of) */
	uint32_t kind;	/* 0 until HELLO, then enum madcmd_kind */
	struct madcmd_served *port;
	bool closing;	 /* no more input or output; reaped on the loop */
	bool logged_bad; /* a malformed packet was logged */
	/* CM */
	struct madcmd_id *ids;
	uint32_t nids;
	uint8_t mra_on_delivery; /* HELLO: arm the delayed MRA of REQ/REP events sent */
	/* Comm IDs reserved for the session's CONNECT_AS (MADCMD_GRANT). */
	uint32_t grants[MADCMD_GRANT_TARGET];
	uint32_t ngrants;
	/* Output waiting for the socket (qlen: messages, not packets). */
	struct madcmd_msg *qhead, *qtail;
	uint32_t qlen;
	bool pollout;
	/*
	 * CM: the batch being gathered this turn of the loop (madcmd_send_batched),
	 * sent as one packet at the turn's end; on the daemon's batch list
	 * (next_batch) while it holds anything.
	 */
	uint8_t *batch;
	size_t batch_len;
	uint32_t batch_n;
	bool batch_listed;
	struct madcmd_session *next_batch;
	/* MAD */
	uint32_t agents; /* registered agent ids, bit i = id i (1..31) */
	struct madcmd_tid_map tids;
	struct madcmd_member *members;
	struct madcmd_service *services;
	uint32_t notice_agents; /* agents registered for the SA's Reports (bit i = id i) */
	struct madcmd_inform *informs;
	/* CM: PATH_QUERYs waiting for the SA (path_query.c) */
	struct madcmd_ask *path_asks;
	/* CM: SERVICE_QUERYs waiting for the SA (service_query.c) */
	struct madcmd_ask *service_asks;
	/* HOST */
	struct madcmd_bind *binds;
	uint32_t nbinds;
};

#define MADCMD_PS_BUCKETS 4096

struct madcmd {
	struct madcmd_params p;
	struct mad_loop *loop;
	const struct mad_umad_ops *ops;
	void *ops_ctx;
	struct madcmd_served ports[MADCMD_MAX_PORTS];
	unsigned nports;
	struct madcmd_session **slots; /* [max_sessions + 1] */
	unsigned nsessions;
	int listen_fd;
	struct madcmd_bind *ps[MADCMD_PS_BUCKETS];
	struct madcmd_bind *ps_tokens[MADCMD_PS_BUCKETS]; /* by (session, token) */
	struct madcmd_counters c;
	/* Sessions to reap: closed inside hooks, freed from the loop. */
	struct mad_loop_cmd reap_cmd;
	bool reap_posted;
	uint32_t internal_tid;
	struct madcmd_session *batches; /* sessions with a batch to send */
	struct mad_timer rescan;	/* armed while some port is not served */
	/* Ports the last look could not open, and why: a HELLO for one says it. */
	struct madcmd_unopened {
		char ca[MAD_CA_NAME_MAX];
		int port;
		int err;
	} unopened[MADCMD_MAX_PORTS];
	unsigned nunopened;
};

/* session.c */
void madcmd_send(struct madcmd_session *s, const void *msg, size_t len);
/*
 * The same for a CM session's REPLY, EVENT and GRANT: gathered, and sent
 * with the others of this turn of the loop in one packet (a batch).
 */
void madcmd_send_batched(struct madcmd_session *s, const void *msg, size_t len);
/*
 * Room for a len-byte message at the end of s's batch, which the caller
 * fills at once, before anything else is sent to s: no message built
 * first and copied.  NULL when s is closing, has no batch buffer, or len
 * is not a multiple of 8 (then madcmd_send_batched): every message of a
 * batch being so long, the room is aligned for the message structs.
 */
void *madcmd_batch_reserve(struct madcmd_session *s, size_t len);
/* Send every session's batch: the loop's turn end (mad_loop_set_turn_end). */
void madcmd_send_batches(void *d);
/* Stop a session now; its cleanup runs from the loop (madcmd_reap). */
void madcmd_session_close(struct madcmd_session *s, const char *why);
void madcmd_session_input(struct madcmd_session *s, const void *buf, size_t len);
void madcmd_sessions_close_all(struct madcmd *d);
void madcmd_fd_ready(struct mad_loop *l, uint32_t tag, uint32_t events, void *arg);

/* cm_sessions.c */
bool madcmd_cm_event(void *arg, struct cm_runtime *rt, const struct cm_event *ev);
void madcmd_cm_cmd(struct madcmd_session *s, const struct madcmd_cmd *m);
/* Top the session's granted comm IDs up (after HELLO, and as they are used). */
void madcmd_cm_grant(struct madcmd_session *s);
void madcmd_cm_session_end(struct madcmd_session *s);
void madcmd_ids_destroy(struct madcmd_served *p);
/* A port went away: look for it again (daemon.c) in rescan_ms. */
void madcmd_port_went(struct madcmd *d);
int madcmd_conn_state(struct madcmd_served *p, uint32_t id, enum cm_state *st);

/* mad_proxy.c */
int madcmd_proxy_open(struct madcmd_served *p);
void madcmd_proxy_close(struct madcmd_served *p);
void madcmd_mad_reg(struct madcmd_session *s, const struct madcmd_mad_reg *m);
void madcmd_mad_send(struct madcmd_session *s, const struct madcmd_mad *m);
void madcmd_mad_session_end(struct madcmd_session *s);

/* portspace.c */
void madcmd_port_msg(struct madcmd_session *s, const struct madcmd_port *m, int type);
void madcmd_ps_session_end(struct madcmd_session *s);
/* Any namespace's binding of the service ID's port (arg: the madcmd). */
bool madcmd_ps_service_bound(void *arg, uint64_t service_id);
/* The kernel's rule for two ids on one port (cma_check_port): 0 or -errno. */
int madcmd_ps_conflict(const struct madcmd_bind *me, const struct madcmd_bind *other,
		       bool reuseaddr);
bool madcmd_default_may_bind_privileged(void *ctx, pid_t pid, uid_t uid);
uint64_t madcmd_default_netns_of(void *ctx, pid_t pid);

/* netns_addr.c */
bool madcmd_default_netns_has_addr(void *ctx, pid_t pid, uint64_t netns, int family,
				   const uint8_t *addr);

/* asks.c: linked first on *list; NULL without memory. */
struct madcmd_ask *madcmd_ask_new(struct madcmd_session *s, struct madcmd_ask **list, uint32_t seq);
/* Off its list (if still on one), and freed. */
void madcmd_ask_free(struct madcmd_ask *a);
/* The session is going: the asks on *list still waiting get no answer. */
void madcmd_asks_orphan(struct madcmd_ask **list);

/* path_query.c */
void madcmd_path_query(struct madcmd_session *s, const struct madcmd_path_query *m);
/* The SA reported `gid` out of service: its cached paths go. */
void madcmd_path_gid_gone(struct madcmd_served *p, const uint8_t gid[16]);

/* service_query.c */
void madcmd_service_query(struct madcmd_session *s, const struct madcmd_service_query *m);
/* The SA reported `gid` out of service: its cached ServiceRecord answers go. */
void madcmd_service_gid_gone(struct madcmd_served *p, const uint8_t gid[16]);
/* A program's Set or Delete of `sv` passes the proxy: cached answers it may change go. */
void madcmd_service_changed(struct madcmd_served *p, const struct sa_service *sv);

/* port_events.c: the port's verbs async events (params.port_events) */
void madcmd_port_events_open(struct madcmd_served *p);
void madcmd_port_events_close(struct madcmd_served *p);
void madcmd_port_events_ready(struct madcmd *d, uint32_t index);

/* stat.c */
void madcmd_stat(struct madcmd_session *s, const struct madcmd_port *m);

#endif
