/*
 * SA client: PathRecord, MCMemberRecord, ServiceRecord and ClassPortInfo
 * queries to the subnet administrator, over the MAD transport.
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
	uint64_t port_changes;
	struct mad_transport_counters mad;
};

int sa_client_open(struct sa_client **out, const struct sa_client_params *p);
/* Cancels what is in flight (callbacks get -ECANCELED), then frees. */
void sa_client_close(struct sa_client *c);

/* The port as last read (LID, GID, SM LID ...). */
int sa_client_port(struct sa_client *c, struct mad_port_attr *out);
int sa_client_stats(struct sa_client *c, struct sa_client_stats *out);
/* Drop every cached path now. */
void sa_client_flush_cache(struct sa_client *c);

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
 * -errno.  The paths are valid during the call only.
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
/* GetTable; *out is malloc'd (free() it), *n records. */
int sa_mcmember_query(struct sa_client *c, const struct sa_mcmember *m, uint64_t comp_mask,
		      struct sa_mcmember **out, unsigned *n);

/* ---- ServiceRecord ---- */

int sa_service_register(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask);
int sa_service_delete(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask);
int sa_service_query(struct sa_client *c, const struct sa_service *s, uint64_t comp_mask,
		     struct sa_service **out, unsigned *n);

/* ---- ClassPortInfo ---- */

/* The SA's ClassPortInfo (MAD_CPI_SIZE bytes, wire order, see mad_cpi_fields). */
int sa_class_port_info(struct sa_client *c, uint8_t *cpi, size_t len);

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
