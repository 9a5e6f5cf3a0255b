/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd's core: the daemon that owns the CM (and an SA requester agent)
 * of every active port of a host and serves programs over UNIX
 * SOCK_SEQPACKET sessions speaking rtproto/rt_proto.h (docs/madcmd-protocol.md).
 *
 * Everything runs on one progress loop (mad/loop.h) that the caller drives
 * (mad_loop_run_once) or starts: the ports' CM runtimes, their SA clients,
 * the SA proxy agents and all sessions hang from it.  No call below may be
 * made from another thread than the loop's.
 *
 * The core is a library (libmadcmd_core.la) so that unit tests and the
 * fuzz target drive it on fake umad ports; madcmd/main.c only adds
 * options, the listening socket, signals and logging.
 */
#ifndef MADCM_MADCMD_H
#define MADCM_MADCMD_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h> /* LOG_* priorities of madcmd_log */
#include <sys/types.h>

#include "mad/loop.h"
#include "mad/umad_ops.h"

#define MADCMD_MAX_PORTS 8 /* served ports: each costs 3 loop watches */
#define MADCMD_DEFAULT_MAX_IDS 65536
#define MADCMD_DEFAULT_MAX_EVENTS 65536
#define MADCMD_DEFAULT_MAX_SESSIONS 1024
#define MADCMD_DEFAULT_RESCAN_MS 2000
#define MADCMD_SESSIONS_LIMIT 4095 /* the session slot is 12 bits of a proxied TID */

struct madcmd;

struct madcmd_params {
	struct mad_loop *loop;		/* required; not started, or started by the caller */
	const struct mad_umad_ops *ops; /* NULL: libibumad */
	void *ops_ctx;
	uint32_t max_ids;      /* ids (connections + listeners) per session; 0: 65536 */
	uint32_t max_events;   /* messages queued for a slow session; 0: 65536 */
	uint32_t max_sessions; /* 0: 1024 */
	/*
	 * SO_SNDBUF of each session's socket, what the kernel holds for a
	 * client before max_events counts, at least a batch (64 KiB + 4 KiB);
	 * 0: 1 MiB (madcmd_socket_bufs).
	 */
	uint32_t sndbuf;
	/*
	 * May the peer (pid, uid) bind a port below 1024?  NULL: uid 0 or
	 * CAP_NET_BIND_SERVICE in the CapEff of /proc/PID/status.
	 */
	bool (*may_bind_privileged)(void *ctx, pid_t pid, uid_t uid);
	void *priv_ctx;
	/*
	 * The network namespace of the peer pid, a key of its port space (the
	 * kernel keeps one per namespace); 0 when unknown.  NULL: the device
	 * and inode of /proc/PID/ns/net.
	 */
	uint64_t (*netns_of)(void *ctx, pid_t pid);
	void *netns_ctx;
	/*
	 * Does the network namespace of peer pid (netns, as netns_of said)
	 * hold the IP address (family AF_INET: 4 bytes, AF_INET6: 16)?  Asked of a REQ's
	 * destination when listeners of several namespaces share its service ID.  NULL: an
	 * rtnetlink address dump made in /proc/PID/ns/net (madcmd/netns_addr.c).
	 */
	bool (*netns_has_addr)(void *ctx, pid_t pid, uint64_t netns, int family,
			       const uint8_t *addr);
	void *addr_ctx;
	/* Start of the ephemeral port search; NULL: mad_random_bytes. */
	uint32_t (*random32)(void *ctx);
	void *random_ctx;
	unsigned sa_timeout_ms; /* the runtimes' SA clients, per try; 0: 1000 */
	/* How often ports not served (not Active, or not opened) are looked at again; 0: 2000. */
	unsigned rescan_ms;
	/*
	 * Watch each served port's verbs async events and flush its path
	 * cache on a client reregistration, P_Key change or port change
	 * (libibverbs; false: the SA client's polling only, as on fake ports).
	 */
	bool port_events;
};

/* Counters of one served port (or, for index -1, of the daemon itself). */
struct madcmd_counters {
	uint64_t sessions;	/* sessions bound to it so far */
	uint64_t sessions_now;	/* open now */
	uint64_t commands;	/* CMDs run */
	uint64_t events;	/* events routed to their owner */
	uint64_t dropped;	/* events no session owns (or whose session is closing) */
	uint64_t malformed;	/* packets refused by madcmd_check or out of place */
	uint64_t mads_sent;	/* MAD_SEND sent on the port */
	uint64_t mads_received; /* MADs received by the proxy agent and routed */
	uint64_t mads_dropped;	/* received with a TID no session owns, or refused sends */
	uint64_t mads_local;	/* Deletes answered by the daemon (membership still held) */
	uint64_t leaves;	/* Deletes sent for closed sessions' memberships */
	uint64_t path_asks; /* PATH_QUERYs answered (from the cache, a query, or one in flight) */
	uint64_t paths_dropped;	   /* cached paths dropped for a GID out of service */
	uint64_t service_asks;	   /* SERVICE_QUERYs answered (cache, a query, or one in flight) */
	uint64_t services_dropped; /* cached ServiceRecord answers dropped for a GID gone */
	/* Path cache flushes on the port's verbs async events (port_events.c): */
	uint64_t flush_rereg; /* ... IBV_EVENT_CLIENT_REREGISTER */
	uint64_t flush_pkey;  /* ... IBV_EVENT_PKEY_CHANGE */
	uint64_t flush_port;  /* ... SM_CHANGE, LID_CHANGE, GID_CHANGE, PORT_ERR, PORT_ACTIVE */
	uint64_t refused;     /* daemon: sessions refused (limit) */
	uint64_t slow;	      /* daemon: sessions closed for not reading */
	uint64_t pings;	      /* PINGs answered with a PONG (keepalive) */
};

/* What the daemon holds now, summed over ports and sessions (tests). */
struct madcmd_tables {
	uint32_t sessions;
	uint32_t ids;	      /* connections and listeners owned by sessions */
	uint32_t bindings;    /* port-space reservations */
	uint32_t memberships; /* multicast (MGID, port GID) entries */
	uint32_t services;    /* ServiceRecords registered by sessions */
	uint32_t tids;	      /* proxied TIDs remembered */
	uint32_t queued;      /* messages waiting for slow sessions */
};

/*
 * Open every Active port of every CA (ports that fail to open are logged
 * and skipped) and start serving.  0, or -errno (-ENODEV: no CA at all is
 * not an error: the daemon then serves HOST sessions only).
 */
int madcmd_open(struct madcmd **out, const struct madcmd_params *p);
/* Close every session (as if its program had exited), then the ports. */
void madcmd_close(struct madcmd *d);

unsigned madcmd_port_count(const struct madcmd *d);
/* The served port i's attributes (as at open). */
int madcmd_port_attr(const struct madcmd *d, unsigned i, struct mad_port_attr *out);

/* Accept sessions on a listening SOCK_SEQPACKET socket (not owned). */
int madcmd_listen(struct madcmd *d, int fd);
/*
 * Serve one connected SOCK_SEQPACKET socket as a session (the daemon owns
 * fd from now on, also on failure).  The peer's pid and uid are read with
 * SO_PEERCRED.  Returns the session's slot (> 0) or -errno.
 */
int madcmd_session_add(struct madcmd *d, int fd);

/* Counters of port i, or of the daemon for i == -1. */
int madcmd_counters_get(const struct madcmd *d, int i, struct madcmd_counters *out);
void madcmd_tables_get(const struct madcmd *d, struct madcmd_tables *out);
/* Log every port's counters (SIGUSR1, exit with -v). */
void madcmd_log_counters(const struct madcmd *d);

/* ---- logging (madcmd/log.c) ---- */

enum madcmd_log_to { MADCMD_LOG_NONE, MADCMD_LOG_STDERR, MADCMD_LOG_SYSLOG };

/* Where messages go, and the least important priority shown (LOG_*). */
void madcmd_log_setup(enum madcmd_log_to to, int max_prio);
/*
 * A line that cannot be written (a full disk or /dev/full behind stderr, a
 * closed pipe) is dropped, never retried, and counted.
 */
void madcmd_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Lines dropped so far because their write failed. */
uint64_t madcmd_log_lost(void);

#endif
