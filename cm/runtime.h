/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM runtime: a host for the CM engine (cm/engine.h) on a real port.
 *
 * The engine is a pure state machine; this is what gives it a life: one
 * progress loop (mad/loop.h) owns a MAD transport port, the engine on it
 * (cm/umad.h: the CM agent, class 0x07 version 2, whose Sends feed
 * cm_engine_recv() and whose Get(ClassPortInfo) is answered), the engine's
 * timers (on the loop's timer heap) and its sends.  Nothing else touches
 * them.  That is the in-process backend (cm/runtime_local.c); with
 * params.daemon the engine is madcmd's and the runtime carries the same
 * commands and events to and from it (rtproto/runtime_remote.c).  Both
 * sit behind struct rt_ops (cm/runtime_int.h); this API is the same.
 *
 * Application threads talk to it by messages, as docs/design.md asks:
 *   - commands: a struct cm_rt_cmd (a copy of every argument, a place for
 *     the result) run by cm_runtime_exec() on the calling thread while it
 *     holds the loop (mad_loop_call_here: it waits while the loop thread
 *     is busy, and needs no hop to that thread and back, as a syscall
 *     runs in its caller); cm_runtime_exec_batch() runs many at once;
 *   - events: every engine event is copied into a queue; the queue's
 *     eventfd (cm_runtime_event_fd) is readable while it is not empty, so
 *     the librdmacm layer can hand it out as a channel fd.
 * A command may also be made from the loop thread itself (it then runs
 * inline), which is how lib/'s event hook answers from a loop callback
 * (lib/cma_events.c: the REJ for a REQ no listener takes, the RTU).
 * "On the loop" below means by whichever thread holds the loop.
 *
 * QPs, rdma_cm style (auto QP): CM_RT_CONNECT and CM_RT_ACCEPT may carry
 * the QP of the connection (cmd.auto_qp), and then the runtime moves it
 * itself with cm_engine_init_qp_attr's attributes, as the kernel's rdma_cm
 * does in its own context (cma.c), on the loop:
 *   - connect: with CM_RT_QP_INIT, RESET -> INIT right after the REQ is
 *     sent; on the REP, RTR and RTS, then the RTU, then the event
 *     CM_EV_ESTABLISHED (carrying the REP, in place of CM_EV_REP_RCVD);
 *   - accept: with CM_RT_QP_INIT, RESET -> INIT (or INIT -> INIT folded
 *     into the next move, CM_RT_QP_AT_INIT); then RTR (receiving from
 *     the accept's starting PSN, max_dest_rd_atomic = its responder
 *     resources), RTS (max_rd_atomic = its initiator depth), then the REP,
 *     as rdma_accept; accept.qpn may be 0 (the QP's number is used).
 * A transition that fails moves the QP to ERR and sends REJ "consumer
 * defined" (as cma.c): accept returns the error; a connect's REP becomes
 * CM_EV_CONNECT_ERROR (.status = -errno) instead of ESTABLISHED.  The
 * runtime holds a connect's QP until that event, CM_EV_REJ_RCVD,
 * CM_EV_REQ_ERROR or CM_RT_RELEASE (after which it never touches it): the
 * QP must live until then.
 *
 * Paths come from the caller (struct cm_path in the connect command) or
 * from the SA: cm_runtime_resolve_path() asks for a PathRecord from the
 * local port GID to a destination GID (sa/client.h, on the same loop).
 *
 * Thread safety: every call may be made from any thread, except
 * cm_runtime_close() and cm_runtime_resolve_path(), which must not be
 * called from the loop thread (they wait for the loop).
 * All calls return 0 (or a non-negative value) or -errno.
 */
#ifndef MADCM_CM_RUNTIME_H
#define MADCM_CM_RUNTIME_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cm/engine.h"
#include "mad/loop.h"
#include "mad/transport.h"
#include "mad/umad_ops.h"
#include "madcm/cm_stat.h"

struct cm_runtime;
struct sa_path;
struct sa_client;

struct cm_runtime_params {
	/* NULL: the runtime creates and starts a private loop (own thread).
	 * Given: the caller's loop, started or driven by mad_loop_run_once. */
	struct mad_loop *loop;
	const struct mad_umad_ops *ops; /* NULL: libibumad */
	void *ops_ctx;
	const char *ca;	     /* NULL: first CA with an active port */
	int port;	     /* 0: first active port */
	const uint8_t *gid;  /* or the port with this GID */
	uint64_t ca_guid;    /* LocalCAGUID; 0: the port GUID */
	uint32_t max_conns;  /* engine table bound; 0: engine default */
	uint32_t max_events; /* queued events; 0: 1 << 20 */
	bool sa;	     /* open an SA client (resolve_path) */
	/*
	 * Optional fast path: called on the loop for every event before it
	 * is queued (by a thread in cm_runtime_wait_event for the MADs that
	 * come while it waits, by a command's caller for the events its
	 * command makes, else by the loop thread); returning true
	 * consumes it.  It may issue
	 * commands (they run inline) but must not block.  This is how a
	 * caller answers without a thread handoff (e.g. an automatic DREP).
	 */
	bool (*on_loop_event)(void *arg, struct cm_runtime *rt, const struct cm_event *ev);
	void *on_loop_event_arg;
	/*
	 * Optional (in-process engine only): whether the caller's port
	 * space has the service ID's port bound, so that a REQ arriving
	 * just before its listen waits for it (cm_engine_config).
	 */
	bool (*service_bound)(void *arg, uint64_t service_id);
	void *service_bound_arg;
	/*
	 * Non-zero: for every REQ and REP it delivers, the runtime first arms
	 * the delayed MRA with this service timeout (cm_engine_mra), as the
	 * kernel's rdma_cm does for each one it hands to user space; served
	 * by madcmd, the daemon arms it as it sends the event (HELLO), so it
	 * costs the program no command.  0: the caller sends MRAs itself.
	 */
	uint8_t mra_on_delivery;
	unsigned sa_timeout_ms; /* per try; 0: 1000 */
	unsigned sa_retries;	/* 0: 3 */
	/*
	 * resolve_path answers are cached this long (the SA client's path
	 * cache, flushed when the SM or the port changes), so a connect per
	 * second to one peer costs no SA round trip.  0: 60000.
	 */
	unsigned sa_path_cache_ms;
	bool sa_no_path_cache; /* ask the SA every time */
	/*
	 * How auto QP moves a QP, called on the loop; returns 0 or an
	 * errno (either sign).  NULL: ibv_modify_qp (thread safe).  Tests
	 * give a fake.
	 */
	int (*modify_qp)(void *ctx, struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	void *modify_qp_ctx;
	/*
	 * madcmd's socket: the port's CM is the daemon's (rtproto/rt_proto.h),
	 * not a umad agent of this process.  Commands and events are the
	 * same; the engine and its timers live in the daemon, QPs stay here
	 * (auto QP moves them in this process with the daemon's attributes,
	 * then asks for the RTU or the REP, as the kernel's ucma splits the
	 * work); the SA client goes through the daemon's SA proxy; ops and
	 * max_conns are unused.  MRA, RTU, DISCONNECT and RELEASE are sent
	 * without waiting (their result is 0: the connection's events say
	 * the rest), and so are CONNECT (with a comm ID the daemon granted
	 * ahead) and auto-QP ACCEPT, whose refusal comes as an event
	 * (CM_EV_REQ_ERROR, CM_EV_CONNECT_ERROR; docs/madcmd-protocol.md).
	 * When the daemon goes away, the runtime makes one
	 * CM_EV_RUNTIME_LOST and every command fails -ENOTCONN.  One that
	 * sends nothing for $MADCM_DAEMON_TIMEOUT_MS (30 s) while something
	 * waits for it is lost the same way, status -ETIMEDOUT: the command
	 * or query waiting fails -ETIMEDOUT and the session is shut down.
	 */
	const char *daemon;
};

/* Auto QP: an option of CM_RT_CONNECT and CM_RT_ACCEPT (see above). */
#define CM_RT_QP_INIT 0x1u /* also RESET -> INIT (what rdma_create_qp does) */
/*
 * With CM_RT_QP_INIT on an accept: the QP is at INIT already, on the
 * engine's port (rdma_create_qp moved it), so the INIT -> INIT that
 * librdmacm makes goes with INIT -> RTR in one modify
 * (cm_qp_modify_to_rtr); if that one fails, INIT then RTR as two.
 */
#define CM_RT_QP_AT_INIT 0x2u
/*
 * On an accept: RTS with the local ACK timeout T, not the path's (the
 * id's RDMA_OPTION_ID_ACK_TIMEOUT, which the kernel's rdma_init_qp_attr
 * puts in every RTS of the id).
 */
#define CM_RT_QP_TIMEOUT(t) (0x4u | (uint32_t)(uint8_t)(t) << 8)
#define CM_RT_QP_HAS_TIMEOUT 0x4u
#define CM_RT_QP_TIMEOUT_OF(flags) ((uint8_t)((flags) >> 8))
#define CM_RT_QP_FLAGS (CM_RT_QP_INIT | CM_RT_QP_AT_INIT | CM_RT_QP_TIMEOUT(0xff))

struct cm_rt_auto_qp {
	struct ibv_qp *qp; /* NULL: the caller moves its QP (no auto QP) */
	uint32_t flags;	   /* CM_RT_QP_* */
};

/* Commands (one per engine command, plus introspection). */
enum cm_rt_op {
	CM_RT_LISTEN,	    /* .listen, .user -> result = listen id */
	CM_RT_UNLISTEN,	    /* .id = listen id */
	CM_RT_CONNECT,	    /* .connect -> .id */
	CM_RT_ACCEPT,	    /* .id, .user, .accept */
	CM_RT_REJECT,	    /* .id, .reject */
	CM_RT_MRA,	    /* .id, .mra.service_timeout, private data */
	CM_RT_RTU,	    /* .id, private data */
	CM_RT_ESTABLISH,    /* .id */
	CM_RT_DISCONNECT,   /* .id, private data (DREQ, or DREP after DREQ_RCVD) */
	CM_RT_RELEASE,	    /* .id */
	CM_RT_DROP,	    /* .id: a REQ just received, forgotten without REJ */
	CM_RT_SIDR_REQ,	    /* .sidr_req (.to from the path: cm_runtime_path_addr) -> .id */
	CM_RT_SIDR_REP,	    /* .id, .sidr_rep */
	CM_RT_INIT_QP_ATTR, /* .id, .qp.state -> .qp.attr, .qp.mask */
	CM_RT_CONN_STATE,   /* .id -> .state */
	CM_RT_STATS,	    /* -> .stats */
	CM_RT_RESERVE_ID,   /* -> .id: a comm ID kept for a later CONNECT_AS */
	CM_RT_UNRESERVE_ID, /* .id */
	CM_RT_CONNECT_AS,   /* .id (reserved), .connect: CONNECT with that ID */
	CM_RT__COUNT
};

struct cm_rt_stats {
	struct cm_stat_counters cm;
	struct mad_transport_counters mad;
	uint32_t conns;		 /* live connections, TimeWait included */
	uint64_t events_queued;	 /* events put in the queue so far */
	uint64_t events_dropped; /* lost because the queue was full */
};

struct cm_rt_cmd {
	enum cm_rt_op op;
	uint32_t id; /* connection (local comm ID) or listen id */
	uint64_t user;
	union {
		struct {
			uint64_t service_id;
			uint64_t mask;
		} listen;
		struct cm_connect_cmd connect;
		struct cm_accept_cmd accept;
		struct cm_reject_cmd reject;
		struct cm_sidr_req_cmd sidr_req;
		struct cm_sidr_rep_cmd sidr_rep;
		struct {
			uint8_t service_timeout;
		} mra;
		struct {
			enum ibv_qp_state state;
			struct ibv_qp_attr attr;
			int mask;
		} qp;
		enum cm_state state;
		struct cm_rt_stats stats;
	};
	struct cm_rt_auto_qp auto_qp; /* CONNECT, ACCEPT; zero: none */
	uint8_t private_data_len;     /* MRA, RTU, DREQ/DREP */
	uint8_t private_data[CM_PRIVATE_MAX];
	int result; /* out: 0 / handle, or -errno */
};

int cm_runtime_open(struct cm_runtime **out, const struct cm_runtime_params *p);
/* Destroys the engine silently (no MADs), closes the port and the loop it made. */
void cm_runtime_close(struct cm_runtime *rt);
/*
 * In a fork()ed child, of a runtime of the parent's: close this process's
 * copy of madcmd's session socket, if it has one, and nothing else (no
 * command, no free: the session is the parent's, and the daemon must see
 * it end when the parent's copy goes).  The runtime is not to be used
 * after; the parent's channels' waitsets no longer count.
 */
void cm_runtime_forked(struct cm_runtime *rt);

/* Run one command on the loop and wait; returns cmd->result (or -errno). */
int cm_runtime_exec(struct cm_runtime *rt, struct cm_rt_cmd *cmd);
/* Run n commands in order in one loop round trip; each has its result. */
int cm_runtime_exec_batch(struct cm_runtime *rt, struct cm_rt_cmd *cmds, unsigned n);

/* Readable (POLLIN) while events are queued.  Owned by the runtime. */
int cm_runtime_event_fd(const struct cm_runtime *rt);
/* Take the oldest event: 0, or -EAGAIN when none is queued. */
int cm_runtime_get_event(struct cm_runtime *rt, struct cm_event *ev);
/*
 * Wait up to timeout_ms (-1: forever) for an event: 0, -ETIMEDOUT, -errno.
 * While it waits, CM MADs that arrive are run on this thread (holding the
 * loop), so their events reach it without a hop through the loop thread,
 * and the loop thread does not wait for them meanwhile
 * (mad_loop_pause_fd), so it is not woken as well: one wake-up per MAD.
 * When it returns, the loop thread takes them again.
 */
int cm_runtime_wait_event(struct cm_runtime *rt, struct cm_event *ev, int timeout_ms);

/*
 * The same for a caller that takes its events elsewhere (an on_loop_event
 * hook that queues them itself): wait up to timeout_ms (-1: forever)
 * until `fd` polls readable, running the CM MADs that arrive meanwhile on
 * this thread.  0, -ETIMEDOUT, -errno (-EINTR when a signal came).
 */
int cm_runtime_wait_fd(struct cm_runtime *rt, int fd, int timeout_ms);
/*
 * A waiting thread's own epoll set, kept by a caller of
 * cm_runtime_wait_ready() across its waits (lib/: one per event channel).
 * It holds the caller's fd and the runtime's transport fd, the latter
 * with EPOLLIN | EPOLLEXCLUSIVE and ahead of the loop thread's
 * registration (mad_loop_exclusive_fd): a MAD that comes while a thread
 * waits in it wakes that thread alone, and the loop thread when nobody
 * waits, so a wait needs neither of the two epoll_ctl(2) calls that
 * otherwise hand the fd from the loop thread and back (mad_loop_pause_fd),
 * one of them between a MAD and the event it makes.  Made at the first
 * wait, remade for another runtime; a kernel that refuses it leaves the
 * waits to the hand-over.  cm_runtime_waitset_init() before the first
 * wait, cm_runtime_waitset_fini() after the last.
 */
struct cm_rt_waitset {
	pthread_mutex_t lock; /* making it */
	int epfd;	      /* -1 until made */
	int fd, tfd;	      /* what it holds (-1: none) */
	uint64_t tfd_serial;  /* the runtime whose transport fd it holds */
	uint64_t serial;      /* that runtime while usable, else 0 (read unlocked) */
	bool refused;	      /* the kernel refused it: the hand-over from now on */
};
void cm_runtime_waitset_init(struct cm_rt_waitset *ws);
void cm_runtime_waitset_fini(struct cm_rt_waitset *ws);

/*
 * The same, done when ready(arg) says so (checked without a system call,
 * as after each MAD run here); `fd` is what another thread makes readable
 * when it makes ready() true.  With ws (may be NULL), the thread waits in
 * that epoll set instead of taking the transport fd from the loop thread.
 */
int cm_runtime_wait_ready(struct cm_runtime *rt, struct cm_rt_waitset *ws, int fd,
			  bool (*ready)(void *arg), void *arg, int timeout_ms);

/* The port (LID, GID, SM LID ...) as read when the runtime opened. */
int cm_runtime_port(const struct cm_runtime *rt, struct mad_port_attr *out);
struct mad_loop *cm_runtime_loop(const struct cm_runtime *rt);
/* The SA client opened with params.sa (NULL without): its async calls are
 * how lib/ resolves routes without blocking. */
struct sa_client *cm_runtime_sa(const struct cm_runtime *rt);

/*
 * PathRecords for q (sa/client.h), as sa_path_query_async: on this
 * process's SA client and its path cache, or, when madcmd serves the
 * port, asked of the daemon (PATH_QUERY), whose one cache and SA client
 * serve every program of the host.  cb runs once, on the loop (or here),
 * with 0 and the paths (valid during the call) or -errno.
 */
struct sa_path_query;
typedef void (*cm_path_cb)(void *arg, int status, const struct sa_path *paths, unsigned n);
int cm_runtime_path_query_async(struct cm_runtime *rt, const struct sa_path_query *q, cm_path_cb cb,
				void *arg);

/*
 * ServiceRecords matching the masked fields of `s` (a GetTable), as
 * sa_service_query: *out malloc'd (free() it), *n records; 0 or -errno
 * (-ENOENT: none).  On this process's SA client, uncached, or, when
 * madcmd serves the port, asked of the daemon (SERVICE_QUERY), whose one
 * cache and SA client serve every program of the host (address
 * resolution, lib/addr_sa.h).  Waits for the answer: not on the loop.
 */
struct sa_service;
typedef void (*cm_service_cb)(void *arg, int status, const struct sa_service *recs, unsigned n);
int cm_runtime_service_query(struct cm_runtime *rt, const struct sa_service *s, uint64_t comp_mask,
			     struct sa_service **out, unsigned *n);

/*
 * Ask the SA for a path from this port to `dgid` (P_Key `pkey`, or any
 * when 0) and fill *out for a connect command.  Needs params.sa.
 */
int cm_runtime_resolve_path(struct cm_runtime *rt, const uint8_t dgid[16], uint16_t pkey,
			    struct cm_path *out);
/*
 * A CM path from a PathRecord seen from the local port (SGID/SLID local),
 * with the local ACK timeout the kernel derives from the packet life time.
 */
int cm_path_from_sa(const struct sa_path *sp, struct cm_path *out);
/* Where a CM MAD for the peer's QP1 goes along `p` (SIDR_REQ's .to). */
void cm_runtime_path_addr(const struct cm_path *p, uint16_t pkey_index, struct mad_addr *out);

/* Convenience wrappers around cm_runtime_exec(). */
int cm_runtime_listen(struct cm_runtime *rt, uint64_t service_id, uint64_t mask, uint64_t user);
int cm_runtime_connect(struct cm_runtime *rt, const struct cm_connect_cmd *c, uint32_t *id);
int cm_runtime_accept(struct cm_runtime *rt, uint32_t id, uint64_t user,
		      const struct cm_accept_cmd *a);
/* The same with auto QP: `qp` moved on the loop (flags CM_RT_QP_*). */
int cm_runtime_connect_qp(struct cm_runtime *rt, const struct cm_connect_cmd *c, struct ibv_qp *qp,
			  uint32_t flags, uint32_t *id);
int cm_runtime_accept_qp(struct cm_runtime *rt, uint32_t id, uint64_t user,
			 const struct cm_accept_cmd *a, struct ibv_qp *qp, uint32_t flags);
int cm_runtime_reject(struct cm_runtime *rt, uint32_t id, uint16_t reason);
int cm_runtime_rtu(struct cm_runtime *rt, uint32_t id);
int cm_runtime_establish(struct cm_runtime *rt, uint32_t id);
int cm_runtime_disconnect(struct cm_runtime *rt, uint32_t id);
int cm_runtime_release(struct cm_runtime *rt, uint32_t id);
int cm_runtime_init_qp_attr(struct cm_runtime *rt, uint32_t id, enum ibv_qp_state state,
			    struct ibv_qp_attr *attr, int *mask);
int cm_runtime_stats(struct cm_runtime *rt, struct cm_rt_stats *out);

#endif
