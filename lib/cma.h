/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * lib/: the librdmacm API on madcm's CM runtime (cm/runtime.h) and SA
 * client (sa/client.h).  Internal declarations shared by lib/cma_*.c.
 *
 * What is where: every .c file of lib/ is in librdmacm.so.1 (addr*.c via
 * lib/libmadcm_addr.la, rsocket*.c from lib/rsocket.inc) but rspreload*.c,
 * which are librspreload.so:
 *   cma_init.c     process state: devices, their ports and the CM runtime
 *                  of each port (opened on first use), the address sources
 *   cma_daemon.c   who owns the CM: madcmd (found at the first call) or
 *                  this process; the HOST session (port space, STAT)
 *   cma_state.c    the id states and every allowed transition (one table)
 *   cma_channel.c  event channels, the event queue, get/ack, sync ids
 *   cma_id.c       create/destroy/migrate ids, options, devices, ports
 *   cma_ports.c    the port-space table: bind rules, ephemeral ports
 *   cma_pkey.c     P_Key -> P_Key table index, as ib_find_cached_pkey
 *   cma_addr.c     bind, resolve_addr, resolve_route
 *   cma_roce.c     RoCE ports: GIDs from IP addresses, routes without SA
 *   cma_conn.c     connect/accept/reject/disconnect/establish, QP attrs
 *   cma_ud.c       datagram ids: SIDR_REQ/SIDR_REP for connect/accept
 *   cma_events.c   CM runtime events -> rdma_cm events (runs on the loop)
 *   cma_async.c    port changes from the verbs async events -> ADDR_CHANGE
 *   cma_notice.c   the SA's GID notices (traps 64/65) -> ADDR_CHANGE
 *   cma_mcast.c    join/leave multicast through the SA client
 *   cma_qp.c       QPs, SRQs, the default PD and CQs
 *   cma_ep.c       getaddrinfo, endpoints (create_ep, get_request)
 *   cma_exit.c     at exit, connections left are released (DREQ/REJ) and
 *                  multicast joins left at the SA
 *   cma_fork.c     fork(): a child forgets its parent's state, makes its own
 *   cma_publish.c  the id table in a file for `madcm ids`, written lazily
 *   addr.c         the address sources, loaded once, looked up in order
 *   addr_file.c    the address file parser (madcm-hosts(5))
 *   addr_netlink.c rtnetlink dumps of IPoIB links, addresses, neighbours
 *   addr_sa.c      IP <-> GID ServiceRecords at the SA (addr_sa.h)
 *   rsocket.c      stream rsockets (SOCK_STREAM over RC)
 *   rsocket_dgram.c datagram rsockets (SOCK_DGRAM over UD, UDP side channel)
 *   rsocket_wire.c the rsocket connection data and SGE/iomap encodings
 *   rsocket_conf.c rdma-core's rsocket tuning files, /etc/rdma/rsocket/
 *   rsocket_keepalive.c  SO_KEEPALIVE: one thread posts keepalives
 *   rpoll.c        rpoll/rselect over rsockets and ordinary fds
 *   select_poll.c  select as a poll: rselect's and librspreload.so's select
 *   repoll.c       repoll_* (RDMACM_1.5): epoll over rsockets and fds
 *   rspreload.c    librspreload.so: a program's TCP sockets as rsockets
 *   rspreload_epoll.c  librspreload.so: epoll sets as repoll sets
 *   rspreload_fork.c   librspreload.so: RDMAV_FORK_SAFE fork mode
 *
 * Locking.  One process mutex, cma.lock, guards every lib/ structure (ids,
 * channels and their queues, the port-space table).  The CM runtime calls
 * back (cma_events.c) while it holds its loop, and takes cma.lock there:
 * so the order is loop -> cma.lock, and no code may call into the runtime
 * (cm_runtime_*, sa_*) while holding cma.lock.  Calls therefore read what
 * they need under the lock, drop it, issue the command, and retake it.
 */
#ifndef MADCM_LIB_CMA_H
#define MADCM_LIB_CMA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "cm/engine.h"
#include "cm/runtime.h"
#include "mad/lockdep.h"
#include "sa/client.h"

struct cm_runtime;
struct madcm_addrs;
struct cma_id;
struct mad_umad_ops;

#define CMA_EXPORT __attribute__((visibility("default")))

/* Fail with errno = e: the librdmacm convention (-1 and errno). */
static inline int cma_err(int e)
{
	errno = e;
	return -1;
}

/* librdmacm's event buffer for private data (RDMA_MAX_PRIVATE_DATA). */
#define CMA_MAX_PRIVATE_DATA 256
/* The kernel's IP CM header before the user's REQ private data. */
#define CMA_IP_HDR_SIZE 36
/* Kernel rdma_cm REQ parameters (cma.c cma_connect_ib). */
#define CMA_CM_RESPONSE_TIMEOUT 20
#define CMA_MAX_CM_RETRIES 15
/* What this process's REQs carry: the above, or the environment's. */
#define cma_cm_response_timeout() (cma.cm_tuned ? cma.cm_response_timeout : CMA_CM_RESPONSE_TIMEOUT)
#define cma_max_cm_retries() (cma.cm_tuned ? cma.cm_retries : CMA_MAX_CM_RETRIES)
/*
 * The MRA the kernel's rdma_cm arms for every REQ and REP it hands to user
 * space (CMA_CM_MRA_SETTING): service timeout 24, delayed, so it goes out
 * only when the peer repeats its message (a slow accept never times out).
 */
#define CMA_MRA_SERVICE_TIMEOUT (CM_MRA_FLAG_DELAY | 24)
/* Listen backlog bound (ucma's max_backlog default). */
#define CMA_MAX_BACKLOG 1024

/*
 * A port whose CM could not be opened is tried again this long after: the
 * daemon may serve it by then (a port not yet Active when madcmd started),
 * or the process that owned its CM class may have gone.
 */
#define CMA_RT_RETRY_MS 1000

/* One port of a device, and the CM runtime on it (opened on first use). */
struct cma_port {
	struct cma_device *dev;
	uint8_t port_num;
	bool active;
	uint8_t gid[16];
	uint16_t lid;
	struct cm_runtime *rt; /* NULL until cma_port_runtime() */
	/*
	 * rt's madcmd went away: once nothing holds rt (no id that was on it,
	 * no listener, no connection), cma_port_runtime() opens a new one, so
	 * a restarted daemon serves the process's new ids.
	 */
	bool rt_lost;
	int rt_err;	    /* why it could not be opened last (-errno) */
	uint64_t rt_err_ns; /* when (mad_clock_monotonic_ns): tried again CMA_RT_RETRY_MS later */
	/* Engine listeners on this port, shared by listen ids (cma_conn.c). */
	struct cma_listen_sid *lsids;
	/* The IPoIB broadcast group's record, asked of the SA once (cma_ud.c). */
	struct sa_mcmember bcast;
	bool bcast_valid;
	/*
	 * Its addresses' ServiceRecords (cma_addr.c): wanted at the SA while
	 * it has listeners (published counts them), brought there and taken
	 * away in the background, one round of Sets or Deletes at a time.
	 */
	unsigned published;
	bool sr_at_sa;	  /* registered, or will be when the round in flight ends */
	unsigned sr_busy; /* records of the round in flight */
	int sr_err;	  /* the round's first error */
	/* Connections of this port by local comm ID (cma_init.c). */
	struct cma_conn_link **conns;
	uint32_t nconns, nbuckets;
	/*
	 * In service as ADDR_CHANGE last said (1 in, -1 out, 0 not yet
	 * known: p->active then): the verbs events and the SA's notices
	 * both move it, and only a move makes events (cma_async.c).
	 */
	int8_t service;
	bool notices;		   /* its SA client takes the SA's GID notices (cma_notice.c) */
	bool notice_handler;	   /* its Report handler is set */
	bool notice_failed;	   /* the last subscription failed: made again later */
	uint64_t notice_failed_ns; /* when: tried again CMA_RT_RETRY_MS later */
	/*
	 * A fork()ed child whose parent owned this port's CM in-process (no
	 * madcmd): the CM class is the parent's agent's, so every call that
	 * needs it fails with EBUSY here (cma_fork.c).
	 */
	bool fork_busy, fork_said;
};

struct cma_device {
	struct ibv_context *verbs;
	struct ibv_device_attr attr;
	struct ibv_pd *pd;	       /* default PD, made by the first QP that needs one */
	struct ibv_xrcd *xrcd;	       /* default XRC domain, made as the PD (cma_qp.c) */
	struct ibv_context *async_ctx; /* lib/'s own, for port events (cma_async.c) */
	int nports;
	struct cma_port *ports; /* [nports], port_num = index + 1 */
};

/* Id states: the kernel's enum rdma_cm_state (cma_priv.h). */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_QUERY,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_QUERY,
	CMA_ROUTE_RESOLVED,
	CMA_CONNECT, /* handshake under way or connected (both sides) */
	CMA_DISCONNECT,
	CMA_ADDR_BOUND,
	CMA_LISTEN,
	CMA_DESTROYING,
	CMA__STATE_COUNT
};

const char *cma_state_name(enum cma_state s);
/* Transitions made outside the table (a lib/ bug; 0 in every test). */
extern unsigned long cma_state_bad;
/* Compare and exchange the state under cma.lock: true when it was `from`. */
bool cma_comp_exch(struct cma_id *id, enum cma_state from, enum cma_state to);
/* Set the state (a transition the table lists), under cma.lock. */
void cma_set_state(struct cma_id *id, enum cma_state to);

struct cma_event;

struct cma_channel {
	struct rdma_event_channel ch; /* public part first: apps see &ch */
	unsigned gen;		      /* cma.gen when made: another is a parent's (cma_fork.c) */
	struct cma_event *head, *tail;
	unsigned count;
	/*
	 * The eventfd holds a count: readable, as the channel must poll
	 * whenever it has events.  One exception: an event the thread
	 * waiting in rdma_get_cm_event on this channel queues itself (it
	 * ran the MAD) is not signalled, since that thread takes it next;
	 * before it returns, what is left is signalled (cma_channel.c).
	 */
	bool signaled;
	unsigned ids; /* ids using this channel */
	bool private_sync;
	/*
	 * Threads blocked in rdma_get_cm_event on it.  A channel destroyed
	 * while one waits is only marked dead (its memory and fd stay), and
	 * the waiter then blocks for good, as a read(2) of the kernel's fd
	 * does: it never touches freed memory, and never returns an error
	 * the application did not expect (rping exits with it).  A thread
	 * that calls it just after the destroy blocks too: the last
	 * destroyed channels are kept dead a while (bury, cma_channel.c).
	 */
	unsigned waiters;
	bool dead;
	/*
	 * The epoll set its waiters sleep in while they run the CM's MADs
	 * (cm_runtime_wait_ready): a MAD wakes a waiting thread with no fd
	 * handed over between it and the loop thread.  Channels the
	 * application made; a synchronous id's own channel waits without.
	 */
	struct cm_rt_waitset ws;
};

/* One bound (port space, port) entry of the port-space table (cma_ports.c). */
struct cma_bind_list;

struct cma_listen_sid; /* an engine listener shared by listen ids */

struct cma_id {
	struct rdma_cm_id id; /* public part first: apps see &id */
	uint64_t cookie;      /* the runtime's user cookie: never reused */
	unsigned gen;	      /* cma.gen when made: another is a parent's (cma_fork.c) */
	struct cma_id *cookie_next;
	enum cma_state state;
	bool sync;
	struct cma_port *port; /* device port the id is bound to, or NULL */
	bool rt_lost;	       /* it was on port->rt when its madcmd went away */
	/* The CM connection on port->rt, once there is one. */
	bool has_conn;
	uint32_t conn;
	bool passive;
	/* Port space table entry and options. */
	struct cma_bind_list *bind;
	struct cma_id *bind_next;
	bool reuseaddr, afonly, afonly_set;
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;
	bool ack_timeout_set;
	/* Listen ids: the backlog, and whether engine listeners are held. */
	bool listening;
	int backlog;
	int pending_reqs;      /* CONNECT_REQUESTs queued and not yet acked */
	struct cma_id *listen; /* passive ids: the listener that made them */
	/* Handshake parameters. */
	uint32_t seq_num; /* our receive PSN (REQ/REP starting PSN) */
	uint8_t responder_resources, initiator_depth;
	uint32_t remote_qpn;
	/*
	 * The number of the QP rdma_create_qp gave id.qp, kept for the id
	 * table (cma_publish.c, on the loop thread) under cma.lock: the
	 * program may free the QP itself (rping calls ibv_destroy_qp), and
	 * id.qp then points at freed memory until rdma_destroy_id.
	 */
	bool has_qp_num;
	uint32_t qp_num;
	/*
	 * Passive ids: the INIT that the REQ fixed for the connection's QP,
	 * asked of the engine by the REQ's hook (which holds the loop) for
	 * rdma_create_qp, which then needs neither the loop nor the daemon.
	 */
	bool req_init;
	unsigned req_init_access;
	uint16_t req_init_pkey_index;
	uint32_t qkey;		       /* datagram ids: the port space's Q_Key, once known */
	bool sidr_done;		       /* the SIDR_REP (or its timeout) came */
	uint32_t ece_vendor, ece_attr; /* rdma_set_local_ece */
	uint32_t remote_ece_vendor, remote_ece_attr; /* from REQ/REP */
	bool connect_error; /* a CONNECT_ERROR was reported: drop REJ/DISC after */
	bool established;
	/* Events reported and acked on this id (rdma_destroy_id waits). */
	unsigned events_reported, events_acked;
	unsigned pins; /* async work in flight that holds the id */
	pthread_cond_t cond;
	/* The route's path records (id.route.path_rec points here). */
	struct ibv_sa_path_rec paths[2];
	struct cm_path cm_paths[2];
	/* rdma_create_ep: what rdma_get_request makes a QP from. */
	struct ibv_qp_init_attr *qp_init_attr;
	/* Resolution in flight (resolve_addr / resolve_route) */
	unsigned op_gen;
	/* Multicast joins of this id (cma_mcast.c). */
	struct cma_mc *mcs;
	/* rdma_resolve_addrinfo's result, until rdma_query_addrinfo takes it. */
	struct rdma_addrinfo *addrinfo;
};

struct cma_event {
	struct rdma_cm_event ev; /* public part first */
	struct cma_event *next;
	struct cma_id *id;     /* ev.id's owner */
	struct cma_id *listen; /* CONNECT_REQUEST: the listener */
	struct cma_mc *mc;     /* MULTICAST_JOIN: the join, to attach the QP */
	uint8_t pdata[CMA_MAX_PRIVATE_DATA];
};

/* Process state. */
struct cma_global {
	pthread_mutex_t lock;
	int init_err; /* errno of a failed remake in a fork()ed child */
	/*
	 * The REQ's CM response timeouts and max CM retries, for studies of
	 * the CM (MADCM_CM_RESPONSE_TIMEOUT, MADCM_CM_RETRIES; madcm-rdmacm(7)):
	 * the kernel's constants unless cm_tuned (cma_init.c).
	 */
	bool cm_tuned;
	uint8_t cm_response_timeout, cm_retries;
	struct ibv_device **dev_list;
	struct cma_device *devs;
	int ndevs;
	struct mad_loop *loop;
	struct madcm_addrs *addrs;
	uint64_t rand_state;
	/* Set only by unit tests (cma_test_env) before the first call. */
	const struct mad_umad_ops *umad_ops;
	void *umad_ctx;
	/* madcmd's socket when the daemon owns the CM (cma_daemon.c), else NULL. */
	char *daemon;
	/*
	 * fork(): the generation, one more in each child (cma_fork.c).  Ids
	 * and channels of another generation are the parent's: EBADF.  In a
	 * child, the loop and madcmd's sessions are made again once
	 * (fork_once) by the first call that needs them.
	 */
	unsigned gen;
	bool forked;
	pthread_once_t fork_once;
};

/*
 * Unit tests: run lib/ on fake umad ports (tests/unit/fake_umad.h) instead
 * of libibumad.  Call before any rdma_* call.  Not exported.
 */
void cma_test_env(const struct mad_umad_ops *ops, void *ctx);

extern struct cma_global cma;

/*
 * cma.lock, through these so debug builds (MADCM_DEBUG, mad/lockdep.h)
 * know who holds it: cma_assert_locked() where a function relies on it,
 * cma_assert_unlocked() where it would take it or call into the runtime.
 */
#ifdef MADCM_DEBUG
extern __thread bool cma_lock_owned;
#endif

static inline void cma_lock(void)
{
	mad_lockdep_assert(!cma_lock_owned, "cma.lock taken twice by one thread");
	pthread_mutex_lock(&cma.lock);
#ifdef MADCM_DEBUG
	cma_lock_owned = true;
#endif
	mad_lockdep_lib_lock();
}

static inline bool cma_trylock(void)
{
	if (pthread_mutex_trylock(&cma.lock))
		return false;
#ifdef MADCM_DEBUG
	cma_lock_owned = true;
#endif
	mad_lockdep_lib_lock();
	return true;
}

static inline void cma_unlock(void)
{
	mad_lockdep_assert(cma_lock_owned, "cma.lock released by a thread not holding it");
#ifdef MADCM_DEBUG
	cma_lock_owned = false;
#endif
	mad_lockdep_lib_unlock();
	pthread_mutex_unlock(&cma.lock);
}

#define cma_assert_locked() mad_lockdep_assert(cma_lock_owned, "cma.lock held by this thread")
#define cma_assert_unlocked()                                                                      \
	mad_lockdep_assert(!cma_lock_owned, "cma.lock not held by this thread")

/* Make sure the process state exists: 0, or -1 with errno (ENODEV ...). */
int cma_init(void);
/* From cma_init: the fork() handlers, registered once (cma_fork.c). */
void cma_fork_arm(void);
/* In a fork()ed child, once: a loop and madcmd's sessions of its own. */
void cma_fork_reinit(void);
/*
 * An id or channel inherited across fork(): the parent's, which the
 * child may not use (its calls fail with EBADF, as they would on a closed
 * fd, and touch nothing of the parent's).  NULL is not inherited.
 */
static inline bool cma_id_inherited(const struct rdma_cm_id *id)
{
	return id && ((const struct cma_id *)(const void *)id)->gen != cma.gen;
}
static inline bool cma_channel_inherited(const struct rdma_event_channel *ch)
{
	return ch && ((const struct cma_channel *)(const void *)ch)->gen != cma.gen;
}
/* The child's forgetting of the parent's state (cma_fork.c's helpers). */
void cma_ids_forget(void);
void cma_ports_forget(void);
/*
 * Whether an id of this process holds the service ID's port (takes
 * cma.lock): the runtime's service_bound, so that a REQ arriving between
 * a program's bind and its listen waits for the listen (cm/held.c).
 */
bool cma_ports_service_bound(void *arg, uint64_t service_id);
void cma_mc_forget(void);
void cma_daemon_forget(void);
void cma_addr_forget(void);
uint32_t cma_random32(void);
/* The CM runtime of a port, opened on first use: 0 or -errno. */
int cma_port_runtime(struct cma_port *p, struct cm_runtime **out);
/* The device port with this GID, or NULL. */
struct cma_port *cma_port_by_gid(const uint8_t gid[16]);
/*
 * The index of P_Key `pkey`'s partition in p's P_Key table (cma_pkey.c):
 * 0, -ENOENT when the port is not a member (as the kernel), -EINVAL
 * for the invalid P_Key, -ENODEV.
 */
int cma_pkey_index(const struct cma_port *p, uint16_t pkey, uint16_t *index);
/* The id's P_Key (its address's partition), 0xffff when it has none yet. */
uint16_t cma_id_pkey(const struct cma_id *id);
/* The first port whose link is ACTIVE (else port 1 of the first device). */
struct cma_port *cma_first_active_port(void);
/* Attach an id to a port: sets id.verbs and id.port_num.  Under cma.lock. */
void cma_attach(struct cma_id *id, struct cma_port *p);

/*
 * Connection map of a port (under cma.lock): at most one link per local
 * comm ID.  cma_conn_add maps conn to id, in place of a link some other id
 * left for the same number (the engine reuses a comm ID only once its old
 * connection is gone); cma_conn_del removes conn's link only if it is
 * id's, so an id whose link was taken over cannot remove its successor's.
 */
int cma_conn_add(struct cma_port *p, uint32_t conn, struct cma_id *id);
/*
 * For a connection whose first MAD is yet to go out: cma_conn_reserve
 * makes the table and a link (*spare) beforehand, so that
 * cma_conn_add_reserved, after the send, cannot fail (the caller frees
 * *spare if it is left).  rdma_connect must not fail once the peer has
 * its REQ or SIDR_REQ.
 */
int cma_conn_reserve(struct cma_port *p, struct cma_conn_link **spare);
int cma_conn_add_reserved(struct cma_port *p, uint32_t conn, struct cma_id *id,
			  struct cma_conn_link **spare);
/* The locks of the first-use init and of CM runtime opens (fork). */
void cma_open_lock_take(void);
void cma_open_lock_give(void);
struct cma_id *cma_conn_find(struct cma_port *p, uint32_t conn);
void cma_conn_del(struct cma_port *p, uint32_t conn, const struct cma_id *id);
/* Frees the table and its links, not the ids (a fork child drops its copy). */
void cma_conn_free_all(struct cma_port *p);
struct cma_conn_ref {
	struct cm_runtime *rt;
	uint32_t conn;
};
/* Every connection of every port, taken out of the maps (their ids lose
 * has_conn): *out (malloc'd, NULL when none) and how many.  Under cma.lock. */
size_t cma_conn_take_all(struct cma_conn_ref **out);
/* A membership to leave at exit (cma_mcast.c): the SA and the record. */
struct cma_mc_leave {
	struct sa_client *sa;
	struct sa_mcmember rec;
};
#define CMA_MC_LEAVE_MASK (SA_MCMR_COMP_MGID | SA_MCMR_COMP_PORT_GID | SA_MCMR_COMP_JOIN_STATE)
/* Every SA membership the process holds, copied (the list stays as it is:
 * other threads may still use it): *out (malloc'd) and how many.  Under
 * cma.lock. */
size_t cma_mc_exit_leaves(struct cma_mc_leave **out);
/* At the end of a good init: the exit hook's process (cma_exit.c). */
void cma_exit_arm(void);

/* Events (cma_channel.c), under cma.lock. */
struct cma_event *cma_event_new(struct cma_id *id, enum rdma_cm_event_type type, int status);
void cma_event_queue(struct cma_channel *ch, struct cma_event *e);
/* Take *pe (the head or an event's next) out of the queue, keeping its
 * tail, count and eventfd in step. */
void cma_event_unlink(struct cma_channel *ch, struct cma_event **pe);
/* Queue the event on the id's channel (under cma.lock). */
void cma_report(struct cma_id *id, struct cma_event *e);
/* Listen ids lose their engine listeners (rdma_destroy_id). */
void cma_unlisten(struct cma_id *id);
int cma_init_qp_attr(struct cma_id *id, struct ibv_qp_attr *attr, int *mask);
/* The same for a connection the caller knows the id has (attr->qp_state in). */
int cma_conn_qp_attr(struct cma_id *id, struct cm_runtime *rt, uint32_t conn,
		     struct ibv_qp_attr *attr, int *mask);
int cma_set_ib_paths(struct cma_id *id, const struct ibv_path_data *pd, size_t n);
/* Sync ids: wait for the event a call started and return its outcome. */
int cma_complete(struct cma_id *id);
struct cma_channel *cma_channel_of(struct rdma_cm_id *id);
struct cma_channel *cma_channel_create_locked(void);
void cma_channel_unref_locked(struct cma_channel *ch);

/* The CM runtime's event callback (cma_events.c), on the loop. */
bool cma_on_cm_event(void *arg, struct cm_runtime *rt, const struct cm_event *ev);

/* Ids (cma_id.c). */
static inline struct cma_id *cma_id_of(struct rdma_cm_id *id)
{
	return (struct cma_id *)id;
}
struct cma_id *cma_id_alloc(struct cma_channel *ch, void *context, enum rdma_port_space ps,
			    enum ibv_qp_type qpt);
void cma_id_free_locked(struct cma_id *id);
/* Every live id, under cma.lock. */
void cma_ids_foreach(void (*fn)(struct cma_id *id, void *arg), void *arg);

/* Port events (cma_async.c, cma_notice.c). */
/*
 * The port is now in (up) or out of service: ADDR_CHANGE to its ids when
 * that differs from what they were last told.  Under cma.lock; true when
 * events were queued.
 */
bool cma_port_service(struct cma_port *p, bool up);
/* ADDR_CHANGE to every id attached to the port (under cma.lock). */
void cma_port_addr_change(struct cma_port *p);
/*
 * The port's CM (and SA client) is open: subscribe to the SA's GID in
 * and out of service traps (64, 65) there, once; again after a rejoin
 * cause (again true).  Never under cma.lock; does not wait.
 */
void cma_notice_port(struct cma_port *p, bool again);
/*
 * At a use of the port's CM (cma_port_runtime): a subscription that failed
 * (ENOMEM, no answer, the SA's refusal) is made again, at most once each
 * CMA_RT_RETRY_MS.  Without cma.lock.
 */
void cma_notice_retry(struct cma_port *p);
/* Counters of the notices the process got (tests, madcm stat). */
struct cma_notice_stats {
	unsigned long subscribed;  /* ports whose subscription the SA took */
	unsigned long sub_errors;  /* subscriptions refused, timed out, no Report agent */
	unsigned long own;	   /* notices naming a port of this process */
	unsigned long own_changes; /* ... that changed its service state (ADDR_CHANGE) */
	unsigned long other;	   /* notices naming other GIDs: counted only */
	unsigned long ignored;	   /* other traps */
};
void cma_notice_stats(struct cma_notice_stats *out);

/* madcmd (cma_daemon.c): chosen at init; the host-wide port space. */
void cma_daemon_choose(void);
int cma_daemon_bind(struct cma_id *id, uint16_t *port);
int cma_daemon_listen_check(struct cma_id *id);
void cma_daemon_unbind(struct cma_id *id);
/*
 * The port's CM is gone (status -ENOTCONN: madcmd; -ENODEV: the device):
 * DEVICE_REMOVAL to its ids (takes cma.lock).
 */
void cma_daemon_lost(struct cma_port *p, int status);
/*
 * Under cma.lock: when the port's madcmd went away and nothing holds its
 * runtime any more (no listener, connection, or id that was on it), take
 * the runtime off the port, so the next use opens a new one: true.  The
 * lost runtime is kept, never closed, until exit (cma_daemon.c says why).
 */
bool cma_port_lost_runtime(struct cma_port *p);
/* The live id with this cookie, or NULL (under cma.lock). */
struct cma_id *cma_id_by_cookie(uint64_t cookie);
/* The CM connection of an id goes away: release it in the runtime. */
void cma_release_conn(struct cma_id *id);

/* Port space table (cma_ports.c), under cma.lock. */
int cma_ports_bind(struct cma_id *id, struct sockaddr *addr);
void cma_ports_unbind(struct cma_id *id);
/* rdma_listen's re-check: conflicts ignoring REUSEADDR.  0 or -errno. */
int cma_ports_listen_check(struct cma_id *id);
/* Listen ids on (ps, port) in bind order, for the REQ dispatcher. */
struct cma_id *cma_ports_listeners(enum rdma_port_space ps, uint16_t port);

/* Addresses (cma_addr.c). */
socklen_t cma_addr_len(const struct sockaddr *sa);
uint16_t cma_addr_port(const struct sockaddr *sa);
void cma_addr_set_port(struct sockaddr *sa, uint16_t port);
bool cma_addr_any(const struct sockaddr *sa); /* wildcard or loopback */
bool cma_addr_is_wildcard(const struct sockaddr *sa);
bool cma_addr_is_loopback(const struct sockaddr *sa);
bool cma_addr_equal(const struct sockaddr *a, const struct sockaddr *b); /* no port */
/*
 * A listener more (on) or fewer (off) on the port: its addresses are
 * registered at the SA with the first and deleted with the last, in the
 * background (never waits for the SA; not under cma.lock).
 */
void cma_addr_publish(struct cma_port *p, bool on);
/*
 * Process exit, under cma.lock: delete every port's records and wait for
 * the SA's answers, at most `ms` (the lock is let go while waiting).
 */
void cma_addr_unpublish_all(unsigned ms);
/* Counters of the ServiceRecord rounds (tests). */
struct cma_publish_stats {
	unsigned long sets, deletes; /* records the SA took */
	unsigned long errors;	     /* records refused, timed out, not sent */
	unsigned long rounds;	     /* rounds started */
	unsigned long in_flight;     /* records of the rounds now in flight */
};
void cma_publish_stats(struct cma_publish_stats *out);
/* Fill id.route.path_rec from a CM path (also used for passive ids). */
void cma_set_path(struct cma_id *id, int i, const struct cm_path *p);

/* QPs (cma_qp.c). */
int cma_qp_move(struct cma_id *id, enum ibv_qp_state state);
/* The same with the attributes of connection conn of rt (cma_conn_qp_attr): 0 or -errno. */
int cma_conn_qp_move(struct cma_id *id, struct cm_runtime *rt, uint32_t conn,
		     enum ibv_qp_state state);
/* INIT -> INIT and INIT -> RTR of connection conn of rt, in one modify when it can be. */
int cma_conn_qp_rtr(struct cma_id *id, struct cm_runtime *rt, uint32_t conn);
void cma_qp_to_err(struct cma_id *id);

/* Datagram ids (cma_ud.c). */
int cma_ud_qkey(struct cma_id *id, uint32_t *qkey);
int cma_ud_init_qp_attr(struct cma_id *id, struct ibv_qp_attr *attr, int *mask);
int cma_ud_connect(struct cma_id *id, struct rdma_conn_param *param);
int cma_ud_accept(struct cma_id *id, struct rdma_conn_param *param);
int cma_ud_reject(struct cma_id *id, const void *pdata, uint8_t len);
struct cma_event *cma_ud_on_sidr_rep(struct cma_id *id, const struct cm_event *ev);
void cma_ah_from_path(const struct cma_id *id, const struct cm_path *p, struct ibv_ah_attr *ah);
int cma_bcast_record(struct cma_port *p, struct sa_mcmember *out);

/* Multicast (cma_mcast.c). */
struct cma_mc;
bool cma_addr_is_multicast(const struct sockaddr *sa);
int cma_mgid_of(enum rdma_port_space ps, const struct sockaddr *sa, const uint8_t bcast[16],
		uint8_t mgid[16]);
void cma_mc_on_get(struct cma_id *id, struct cma_event *e);
void cma_mc_leave_all(struct cma_id *id);
/* The SA may have lost the port's groups: join them again (cma_async.c). */
void cma_mc_rejoin(struct cma_port *p);
/* Watch each device's async events (port changes), from cma_init. */
void cma_async_start(struct cma_device *d);

/*
 * The id table changed (under cma.lock): it is published for `madcm ids`
 * a moment later, by the loop (cma_publish.c).  forget: a fork()ed child.
 */
void cma_publish_mark(void);
void cma_publish_forget(void);

/* Service ID of an id's port space and port. */
uint64_t cma_service_id(enum rdma_port_space ps, uint16_t port);

#endif
