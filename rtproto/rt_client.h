/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The program's side of the madcmd protocol (rtproto/rt_proto.h): sessions to
 * the daemon, used by the CM runtime when madcmd serves its port
 * (cm_runtime_params.daemon), by the SA client through madcmd_umad_ops,
 * and by the library's port space through the HOST session.
 *
 * Thread safety: a remote runtime's calls are made holding its loop (as
 * the engine's are); a HOST session serializes its callers itself.
 */
#ifndef MADCM_RTPROTO_RT_CLIENT_H
#define MADCM_RTPROTO_RT_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mad/timer.h"
#include "mad/umad_ops.h"
#include "rtproto/qp_ahead.h"
#include "rtproto/rt_proto.h"

/*
 * Every wait below for the daemon (room to send, a packet to receive) is
 * bounded by madcmd_timeout_ms() (rt_proto.h): past it the call fails
 * -ETIMEDOUT (MADCMD_ERR_STALLED), and the caller ends the session as
 * lost, as if the daemon had exited.
 */

/* One whole packet out on a session; waits while the socket is full. */
int madcmd_client_send(int fd, const void *m, size_t len);
/*
 * One packet in, checked (madcmd_check): its type, -EAGAIN (nothing, when
 * not waiting), -ENOTCONN (the daemon closed or failed), -ETIMEDOUT
 * (nothing came within the bound), -EPROTO (malformed, dropped).
 */
int madcmd_client_recv(int fd, void *buf, size_t cap, bool wait);
/*
 * The same, unchecked (a CM session's packets are batches): its size,
 * which is over cap when it was truncated, or -EAGAIN, -ENOTCONN.
 */
ssize_t madcmd_client_recv_packet(int fd, void *buf, size_t cap, bool wait);
/*
 * Up to `k` packets in one system call (recvmmsg), each in its bufs[i] of
 * `cap` bytes with its size in lens[i] (over cap: truncated): how many, or
 * -EAGAIN, -ENOTCONN.  Fewer than k means the socket was left empty, so
 * the caller needs no further receive to learn it.
 */
int madcmd_client_recv_packets(int fd, uint8_t *const *bufs, size_t cap, size_t *lens, int k,
			       bool wait);

/*
 * Open a session: connect to the daemon's socket, HELLO, wait for its
 * HELLO_REP (filled in *rep); mra_on_delivery as in madcmd_hello (CM
 * sessions; else 0).  Returns the socket (non-blocking,
 * close-on-exec) or -errno: -ENOENT/-ECONNREFUSED without a daemon,
 * -EPROTO for another build's daemon, -ETIMEDOUT for one that does not
 * answer, the daemon's rc otherwise.
 */
int madcmd_session_open(const char *path, enum madcmd_kind kind, const char *ca, int port,
			uint8_t mra_on_delivery, struct madcmd_hello_rep *rep);

#define RT_GRANTS 256 /* >= the daemon's MADCMD_GRANT_TARGET */
/* Packets one receive takes: two, so that one packet costs one system call. */
#define RT_RECV_PACKETS 2

/*
 * A PATH_QUERY waiting for its PATH_REP, or a SERVICE_QUERY for its
 * SERVICE_REP (runtime_remote.c's): answered once the reply (or the
 * daemon's loss, rc -ENOTCONN, or -ETIMEDOUT when it stopped answering)
 * came.
 */
struct rt_path_wait {
	struct rt_path_wait *next;
	uint32_t seq;
	bool answered;
	bool service; /* a SERVICE_QUERY's: the answer is srep */
	union {
		struct madcmd_path_rep rep;
		struct madcmd_service_rep srep;
	};
	void *arg; /* the caller's */
};

/* The CM of a port served by madcmd, as rtproto/runtime_remote.c uses it. */
struct rt_remote {
	int fd;
	uint32_t seq;
	/* Comm IDs the daemon granted (MADCMD_GRANT), for CONNECT_AS. */
	uint32_t grant[RT_GRANTS];
	unsigned ghead, gcount;
	/* QP attributes the daemon sent with the REPLY or EVENT that made them known. */
	struct cm_qp_ahead_map ahead;
	bool lost; /* the daemon is gone: every call fails with -ENOTCONN */
	bool lost_reported;
	int lost_status; /* why: -ENOTCONN (it went away), -ETIMEDOUT (it stopped answering) */
	/*
	 * When the daemon was last heard from (a packet came) or, if later,
	 * when the current wait for it began; on now_ns's clock (CLOCK_MONOTONIC
	 * unless the runtime gives its loop's).  runtime_remote.c's timer
	 * `quiet` loses the session when it is older than the bound.
	 */
	uint64_t heard_ns;
	uint64_t (*now_ns)(void *clock_ctx);
	void *clock_ctx;
	/*
	 * The keepalive (runtime_remote.c): armed while the session is open,
	 * it sends a PING when the daemon was quiet for half the bound and
	 * loses the session when it was quiet for all of it.
	 */
	struct mad_timer quiet;
	bool ping_out;	/* a PING was sent and its PONG has not come */
	uint64_t pings; /* PINGs sent */
	/* Events read while a command waited for its REPLY, in order. */
	struct cm_event *pend;
	unsigned phead, pcount, pcap;
	uint64_t malformed;	    /* packets dropped by madcmd_check */
	struct rt_path_wait *paths; /* PATH_QUERYs and SERVICE_QUERYs sent, in order */
	/* [RT_RECV_PACKETS][MADCMD_BATCH_MAX]: packets from the daemon */
	uint8_t *in[RT_RECV_PACKETS];
};

int rt_remote_open(struct rt_remote *r, const char *path, const char *ca, int port,
		   uint8_t mra_on_delivery, struct madcmd_hello_rep *rep);
void rt_remote_close(struct rt_remote *r);
/*
 * Run one command in the daemon and wait for its REPLY: 0 with c's result
 * and outputs filled (c->auto_qp is neither sent nor changed), or
 * -ENOTCONN when the daemon went away, or -ETIMEDOUT when it sent nothing
 * for madcmd_timeout_ms() (the session is then lost as well).  Events
 * that come first are kept
 * for rt_remote_pop, in order.
 */
int rt_remote_call(struct rt_remote *r, struct cm_rt_cmd *c);
/* Send a command whose result nobody reads (MRA): no REPLY comes. */
int rt_remote_post(struct rt_remote *r, const struct cm_rt_cmd *c);
/*
 * Send a command without waiting (MADCMD_F_ASYNC): 0 or -ENOTCONN.  Its
 * failure comes later as an event kept for rt_remote_pop: a CONNECT_AS as
 * CM_EV_REQ_ERROR, an ACCEPT as CM_EV_CONNECT_ERROR, each with .id,
 * .user and .status (the -errno).
 */
int rt_remote_post_async(struct rt_remote *r, const struct cm_rt_cmd *c);
/* A comm ID the daemon granted, for a CONNECT_AS: false when none is left. */
bool rt_remote_grant(struct rt_remote *r, uint32_t *id);
/*
 * Send a PATH_QUERY (q->h is filled here) and keep w until its answer:
 * 0, or -ENOTCONN (w not kept).
 */
int rt_remote_path_send(struct rt_remote *r, struct madcmd_path_query *q, struct rt_path_wait *w);
/* The same for a SERVICE_QUERY (w->service set here). */
int rt_remote_service_send(struct rt_remote *r, struct madcmd_service_query *q,
			   struct rt_path_wait *w);
/* The first PATH_QUERY or SERVICE_QUERY answered, taken off the list; NULL when none. */
struct rt_path_wait *rt_remote_path_pop(struct rt_remote *r);
/*
 * The session ends as lost with `status` (-ENOTCONN: the daemon went
 * away; -ETIMEDOUT: it stopped answering, and the socket is shut down so
 * that it sees the end if it wakes): queries waiting are answered with
 * status, later calls fail -ENOTCONN, rt_remote_pop gives
 * CM_EV_RUNTIME_LOST with status.  Once; later calls change nothing.
 */
void rt_remote_lose(struct rt_remote *r, int status);
/*
 * Post a PING (the daemon answers PONG at once), without waiting: 0,
 * -EAGAIN (the socket is full: the daemon takes nothing, the bound will
 * tell), -EALREADY (one is out, its PONG not come), -ENOTCONN.
 */
int rt_remote_ping(struct rt_remote *r);
/* True while a PATH_QUERY or SERVICE_QUERY waits for its answer. */
bool rt_remote_waiting(const struct rt_remote *r);
/* Read what the socket holds without waiting: messages read, or -ENOTCONN. */
int rt_remote_poll(struct rt_remote *r);
/*
 * The next kept event: true with *ev.  Once the daemon is gone, one
 * CM_EV_RUNTIME_LOST (.status: rt_remote_lose's) comes after the events
 * read before.
 */
bool rt_remote_pop(struct rt_remote *r, struct cm_event *ev);

/*
 * libibumad's calls for an SA client, served by madcmd's SA proxy: ctx
 * is the daemon's socket path (const char *).  Port attributes are read
 * with libibumad (sysfs, no privilege needed); opening a port opens a MAD
 * session instead of a umad device.
 */
extern const struct mad_umad_ops madcmd_umad_ops;

/* The host-wide port space held by madcmd (HOST session). */
struct madcmd_host {
	int fd;
	uint32_t seq;
	pthread_mutex_t lock;
	char path[108]; /* the daemon's socket: a session lost is opened again there */
};

int madcmd_host_open(struct madcmd_host *h, const char *path);
void madcmd_host_close(struct madcmd_host *h);
/*
 * In a fork()ed child: close this process's copies of the MAD sessions'
 * sockets (rtproto/umad_remote.c), which are the parent's, and forget them.
 */
void madcmd_mad_sessions_forked(void);
/*
 * PORT_BIND, PORT_LISTEN or PORT_UNBIND (req->h is filled here): the
 * daemon's rc (0 or -errno), *port the port reserved by a BIND.  A
 * session the daemon closed (it exited) is opened again at the same path
 * and the request sent once more, so a restarted madcmd serves the
 * process's new ids; -ENOTCONN when no daemon answers there.  A daemon
 * that stops answering fails the call -ETIMEDOUT and its session is
 * closed (the next call opens one again).
 */
int madcmd_host_port(struct madcmd_host *h, enum madcmd_type op, struct madcmd_port *req,
		     uint16_t *port);

/*
 * STAT: every id the daemon holds (the caller's own unless it is root),
 * one call of fn per id; returns how many, or -errno.
 */
int madcmd_host_stat(struct madcmd_host *h, void (*fn)(void *arg, const struct madcmd_stat_rep *r),
		     void *arg);
/* The same, and the end of the list (its path cache counters) in *end. */
int madcmd_host_stat_end(struct madcmd_host *h,
			 void (*fn)(void *arg, const struct madcmd_stat_rep *r), void *arg,
			 struct madcmd_stat_end *end);

#endif
