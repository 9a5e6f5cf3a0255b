/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * SA client: PathRecord, MCMemberRecord, ServiceRecord and ClassPortInfo
 * queries to the subnet administrator, over the MAD transport; InformInfo
 * subscriptions to its traps and the Reports (notices) it then sends.
 *
 * A client owns one SA agent on one port; its transport and queries live
 * on a progress loop (mad/loop.h), by default the process-wide one with
 * its thread.  The calls below may be made from any thread except the
 * loop's own: the synchronous ones post a command and wait for its
 * result; the asynchronous ones post it and call back on the loop.
 *
 * The SA is reached at the port's SM LID and SM SL (umad_get_port),
 * re-read at most once a second and after every timeout; when they or the
 * port state change, the path cache is flushed and any redirection is
 * forgotten.  A response with the Redirect status makes the client read
 * ClassPortInfo and resend to the redirect LID/QP/Q_Key it names.
 *
 * Errors: -ETIMEDOUT (no answer after the retries), -ENOENT (SA status
 * "no records"), -EINVAL (request invalid, insufficient components,
 * invalid GID), -E2BIG (too many records for Get), -EBUSY (busy, no
 * resources), -EACCES (request denied), -EPROTO (other or malformed
 * answer); the SA's raw status is in the result when one came back.
 */
#ifndef MADCM_SA_CLIENT_H
#define MADCM_SA_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mad/loop.h"
#include "mad/transport.h"
#include "mad/umad_ops.h"
#include "sa/sa_wire.h"

struct sa_client;

struct sa_client_params {
	struct mad_loop *loop;		/* NULL: mad_loop_default() */
	const struct mad_umad_ops *ops; /* NULL: libibumad */
	void *ops_ctx;
	const char *ca; /* NULL: first active port */
	int port;
	const uint8_t *gid;  /* or the port with this GID */
	unsigned timeout_ms; /* per try; 0: 1000 */
	unsigned retries;    /* resends; default 0 when zero-initialised */
			     /*
			      * Use this open transport (on the same loop; its owner polls it)
			      * instead of opening the port: one umad fd per port can then serve
			      * the SA client and the CM engine.  ca/port/gid/ops are then ignored.
			      */
	struct mad_transport *transport;
	unsigned cache_lifetime_ms; /* 0: no path cache */
	unsigned cache_entries;	    /* 0: 4096 */
};

/* PathRecord fields (IBA 15.2.5.16), host order. */
struct sa_path {
	uint64_t service_id;
	uint8_t dgid[16];
	uint8_t sgid[16];
	uint16_t dlid;
	uint16_t slid;
	bool raw_traffic;
	uint32_t flow_label;
	uint8_t hop_limit;
	uint8_t tclass;
	bool reversible;
	uint8_t numb_path;
	uint16_t pkey;
	uint16_t qos_class;
	uint8_t sl;
	uint8_t mtu_selector;
	uint8_t mtu;
	uint8_t rate_selector;
	uint8_t rate;
	uint8_t packet_life_time_selector;
	uint8_t packet_life_time;
	uint8_t preference;
};

struct sa_path_query {
	struct sa_path rec; /* values of the components in comp_mask */
	uint64_t comp_mask; /* SA_PR_COMP_* */
	bool table;	    /* GetTable (all matches) instead of Get */
	bool no_cache;	    /* bypass the path cache */
};

/* MCMemberRecord fields (IBA 15.2.5.17). */
struct sa_mcmember {
	uint8_t mgid[16];
	uint8_t port_gid[16];
	uint32_t qkey;
	uint16_t mlid;
	uint8_t mtu_selector;
	uint8_t mtu;
	uint8_t tclass;
	uint16_t pkey;
	uint8_t rate_selector;
	uint8_t rate;
	uint8_t packet_life_time_selector;
	uint8_t packet_life_time;
	uint8_t sl;
	uint32_t flow_label;
	uint8_t hop_limit;
	uint8_t scope;
	uint8_t join_state; /* SA_JOIN_* bits */
	bool proxy_join;
};

/* ServiceRecord fields (IBA 15.2.5.14). */
struct sa_service {
	uint64_t id;
	uint8_t gid[16];
	uint16_t pkey;
	uint32_t lease; /* seconds; SA_SR_LEASE_INFINITE */
	uint8_t key[16];
	char name[65]; /* NUL-terminated, 64 bytes on the wire */
	uint8_t data8[16];
	uint16_t data16[8];
	uint32_t data32[4];
	uint64_t data64[2];
};

/* Counters of one client (queries, cache) plus its transport's. */
struct sa_client_stats {
	uint64_t queries;
	uint64_t errors;
	uint64_t redirects;
	uint64_t cache_hits;
	uint64_t cache_misses;
	uint64_t cache_flushes;
	uint64_t cache_dropped;	  /* entries dropped for a GID out of service */
	uint64_t cache_hits_late; /* asks answered by a path cached while they waited */
	uint64_t path_queries;	  /* asynchronous PathRecord queries sent to the SA */
	uint64_t path_coalesced;  /* ... asks that joined one in flight instead */
	/* ServiceRecord resolution queries (sa_service_query_async) and their cache: */
	uint64_t service_queries;    /* GetTables sent to the SA */
	uint64_t service_coalesced;  /* asks that joined one in flight instead */
	uint64_t service_hits_late;  /* asks answered by records cached while they waited */
	uint64_t service_cache_hits; /* asks answered from the cache */
	uint64_t service_dropped;    /* entries dropped: GID out of service, a Set or Delete */
	uint64_t port_changes;
	/* Notices (sa_notice_handler): Reports taken, answered, ... */
	uint64_t reports;	   /* Reports delivered to the handler */
	uint64_t report_resps;	   /* ReportResps sent (duplicates answered too) */
	uint64_t report_dups;	   /* Reports with a TID already delivered */
	uint64_t report_malformed; /* dropped unanswered: not a Notice, too short ... */
	struct mad_transport_counters mad;
};

int sa_client_open(struct sa_client **out, const struct sa_client_params *p);
/* Cancels what is in flight (callbacks get -ECANCELED), then frees. */
void sa_client_close(struct sa_client *c);

/* The port as last read (LID, GID, SM LID ...). */
int sa_client_port(struct sa_client *c, struct mad_port_attr *out);
int sa_client_stats(struct sa_client *c, struct sa_client_stats *out);
/* Drop every cached path and ServiceRecord answer now. */
void sa_client_flush_cache(struct sa_client *c);
/*
 * Drop the cached paths to `gid` (a Report of trap 65, "GID out of
 * service"): how many.  Any thread.
 */
unsigned sa_client_path_gid_gone(struct sa_client *c, const uint8_t gid[16]);

/* ---- PathRecord ---- */

/*
 * Synchronous: up to `max` paths into out[], their number in *n; the SA's
 * MAD status (0 when none came) in *mad_status when not NULL.  A cache hit
 * returns without any MAD or syscall.
 */
int sa_path_query(struct sa_client *c, const struct sa_path_query *q, struct sa_path *out,
		  unsigned max, unsigned *n, uint16_t *mad_status);

/*
 * Asynchronous: cb runs once on the loop thread (or, on a cache hit,
 * right here on the caller's thread) with status 0 and the paths, or
 * -errno.  The paths are valid during the call only.  Asks for the same
 * path (query) while one is in flight share its SA query and its answer
 * (unless no_cache), so any number of concurrent asks cost one query;
 * an answer that comes after the cache was flushed or the GID dropped
 * is delivered but not cached.
 */
typedef void (*sa_path_cb)(void *arg, int status, const struct sa_path *paths, unsigned n);
int sa_path_query_async(struct sa_client *c, const struct sa_path_query *q, sa_path_cb cb,
			void *arg);

/* ---- MCMemberRecord ---- */

/* Create or join (Set); the SA's resulting record in *out when not NULL. */
int sa_mcmember_join(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask,
		     struct sa_mcmember *out);
/* Leave (Delete) with m->join_state the states to leave. */
int sa_mcmember_leave(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask,
		      struct sa_mcmember *out);
/*
 * The same Delete, sent on the calling thread (which takes the loop for
 * it) before this returns, its answer not waited for: for a process on
 * its way out, which must not wait for the SA.  0 once sent, or -errno.
 */
int sa_mcmember_leave_now(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask);
/* GetTable; *out is malloc'd (free() it), *n records. */
int sa_mcmember_query(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask,
		      struct sa_mcmember **out, unsigned *n);

/* ---- ServiceRecord ---- */

int sa_service_register(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask);
int sa_service_delete(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask);
int sa_service_query(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask,
		     struct sa_service **out, unsigned *n);
/*
 * A resolution query (GetTable of the records matching the masked
 * fields), for asks many programs repeat (an address's record, through
 * madcmd): cb runs once on the loop thread (or, on a cache hit, right
 * here) with 0 and the records (valid during the call only) or -errno.
 * Like sa_path_query_async: concurrent asks for the same query share one
 * SA query, and with a cache (cache_lifetime_ms) answers with records are
 * kept for its lifetime; an answer without records (-ENOENT, or none) is
 * never kept.  The cache drops everything when the path cache flushes,
 * the answers a Set or Delete through this client may change
 * (sa_service_register*, sa_service_delete*), and those naming a GID
 * gone (sa_client_service_gid_gone).  sa_service_query stays uncached.
 */
typedef void (*sa_service_cb)(void *arg, int status, const struct sa_service *recs, unsigned n);
int sa_service_query_async(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask,
			   sa_service_cb cb, void *arg);
/* Drop the cached ServiceRecord answers naming `gid` (trap 65): how many.  Any thread. */
unsigned sa_client_service_gid_gone(struct sa_client *c, const uint8_t gid[16]);
/*
 * A Set or Delete of `s` went to the SA by another way (madcmd's proxy
 * for a program's own SA client): drop the cached answers it may change,
 * as this client's own Set and Delete do.  How many.  Any thread.
 */
unsigned sa_client_service_changed(struct sa_client *c, const struct sa_service *s);
/*
 * The Set and Delete without waiting: cb(arg, status) runs once, on the
 * loop, after the SA's answer (or the retries' timeout, or -ECANCELED
 * when the client closes first).  Commands posted by one thread start in
 * the order posted; whether the SA applies them in that order is the
 * caller's to ensure (post the next when the last one's cb ran).
 */
typedef void (*sa_done_cb)(void *arg, int status);
int sa_service_register_async(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask,
			      sa_done_cb cb, void *arg);
int sa_service_delete_async(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask,
			    sa_done_cb cb, void *arg);

/* ---- ClassPortInfo ---- */

/* The SA's ClassPortInfo (MAD_CPI_SIZE bytes, wire order, see mad_cpi_fields). */
int sa_class_port_info(struct sa_client *c, uint8_t *cpi, size_t len);

/* ---- Notices: InformInfo subscriptions and Reports ---- */

/* InformInfo fields (IBA 13.4.8.3). */
struct sa_inform {
	uint8_t gid[16];
	uint16_t lid_range_begin; /* SA_II_LID_ALL: every issuer */
	uint16_t lid_range_end;
	bool is_generic;
	bool subscribe;
	uint16_t type;	      /* SA_II_TYPE_ALL */
	uint16_t trap_number; /* DeviceID when not generic; SA_II_TRAP_ALL */
	uint32_t qpn;
	uint8_t resp_time_value;
	uint32_t producer_type; /* VendorID when not generic; SA_II_PRODUCER_ALL */
};

/* Notice fields (IBA 13.4.8.2); gid is the GID of traps 64..67. */
struct sa_notice {
	bool is_generic;
	uint8_t type;
	uint32_t producer_type;
	uint16_t trap_number;
	uint16_t issuer_lid;
	bool toggle;
	uint16_t count;
	uint8_t data_details[SA_NOTICE_DATA_DETAILS_SIZE];
	uint8_t issuer_gid[16];
	bool has_gid; /* generic trap 64..67 */
	uint8_t gid[16];
};

/*
 * Called on the loop thread for each Report the SA sends this client,
 * once per TID (a repeated Report, the SA not having seen our ReportResp,
 * is answered again but not delivered again).  The notice is valid during
 * the call only.
 */
typedef void (*sa_notice_fn)(void *arg, const struct sa_notice *n);

/*
 * Where Reports go (fn NULL: nowhere; they are still answered).  The
 * first call registers the client's Report agent on its port: -EINVAL
 * or -EBUSY when another agent of the port (another process) already
 * takes the SA's Reports (OpenSM does not: it runs beside one).  Every Report is answered
 * with a ReportResp echoing it; malformed ones are counted and dropped.
 */
int sa_notice_handler(struct sa_client *c, sa_notice_fn fn, void *arg);

/*
 * SubnAdmSet of InformInfo for generic traps first..last, one Set per
 * trap number (first == SA_II_TRAP_ALL: every trap, one Set), Subscribe
 * 1 (on) or 0 (off), from every issuer, type and producer.  Reports
 * come to sa_notice_handler's fn, which should be set first.  Returns 0
 * when the SA took every Set, else the first error.
 */
int sa_notice_subscribe(struct sa_client *c, uint16_t first, uint16_t last, bool on);
/* The same without waiting: cb(arg, status) runs once, on the loop. */
int sa_notice_subscribe_async(struct sa_client *c, uint16_t first, uint16_t last, bool on,
			      sa_done_cb cb, void *arg);

/* InformInfo for generic trap `trap` from anyone, QPN 1. */
void sa_inform_generic(struct sa_inform *ii, uint16_t trap, bool subscribe);
int sa_inform_encode(const struct sa_inform *ii, void *rec); /* SA_II_SIZE */
void sa_inform_decode(const void *rec, struct sa_inform *ii);
int sa_notice_encode(const struct sa_notice *n, void *rec); /* SA_NOTICE_SIZE */
void sa_notice_decode(const void *rec, struct sa_notice *n);
/*
 * Check an SA Report of `len` bytes (a SubnAdmReport carrying a Notice,
 * one MAD) and decode its Notice: 0, -EINVAL (NULL), -EPROTO (bad SA MAD,
 * not a Report of a Notice, shorter than the Notice, RMPP active).
 */
int sa_report_parse(const void *mad, size_t len, struct sa_notice *n);
/* The ReportResp (MAD_SIZE bytes) answering a Report of `len` bytes. */
int sa_report_resp_build(const void *report, size_t len, void *resp);

/* ---- record codecs (used by the above and by tools) ---- */

int sa_path_encode(const struct sa_path *p, void *rec); /* SA_PR_SIZE bytes */
void sa_path_decode(const void *rec, struct sa_path *p);
int sa_mcmember_encode(const struct sa_mcmember *m, void *rec); /* SA_MCMR_SIZE */
void sa_mcmember_decode(const void *rec, struct sa_mcmember *m);
int sa_service_encode(const struct sa_service *s, void *rec); /* SA_SR_SIZE */
void sa_service_decode(const void *rec, struct sa_service *s);

/* -errno for an SA MAD status (0 for success). */
int sa_status_to_errno(uint16_t mad_status);

#endif
