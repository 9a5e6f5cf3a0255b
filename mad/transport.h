/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * MAD transport: one open port, its agents, and the requests in flight.
 *
 * Single-threaded by design: the progress loop (mad/loop.h) owns a
 * transport, calls mad_transport_poll() when its fd is readable and runs
 * its timers; every callback below runs on that loop.  Tests drive the
 * same code with a fake mad_umad_ops and a fake clock, no thread.
 *
 * Requests: mad_request_send() gives the MAD a fresh TID (mad/tid.h),
 * sends it, and resends the same MAD with the same TID each time the
 * per-try timeout expires, `retries` times; then the callback gets
 * -ETIMEDOUT.  A response is matched on the TID's low 32 bits and the
 * class; a response nobody waits for is counted as late (its request timed
 * out or was cancelled) or duplicate (its request already completed) and
 * dropped.  RMPP responses are reassembled (mad/rmpp.h) and ACKed here;
 * the callback sees the whole message.
 */
#ifndef MADCM_MAD_TRANSPORT_H
#define MADCM_MAD_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mad/addr.h"
#include "mad/timer.h"
#include "mad/umad_ops.h"

struct mad_transport;
struct mad_agent;

struct mad_transport_counters {
	uint64_t sent;	      /* MADs handed to umad, retries and ACKs included */
	uint64_t received;    /* MADs read from umad */
	uint64_t requests;    /* mad_request_send() accepted */
	uint64_t responses;   /* requests completed with a response */
	uint64_t retries;     /* resends after a timeout */
	uint64_t timeouts;    /* requests failed with -ETIMEDOUT */
	uint64_t late;	      /* responses after their request gave up */
	uint64_t duplicates;  /* responses to a request already answered */
	uint64_t unmatched;   /* responses to no request we know */
	uint64_t unsolicited; /* requests delivered to an agent handler */
	uint64_t malformed;   /* dropped: bad header, length, RMPP */
	uint64_t send_errors;
	uint64_t rmpp_segments; /* RMPP DATA segments received */
	uint64_t rmpp_acks;	/* RMPP ACKs sent */
	uint64_t rmpp_aborts;	/* transfers aborted (either side) */
};

struct mad_transport_params {
	const struct mad_umad_ops *ops; /* NULL: libibumad */
	void *ops_ctx;
	const char *ca;		       /* NULL: first CA with an active port */
	int port;		       /* 0: first active port of the CA */
	const uint8_t *gid;	       /* when not NULL: the port with this GID */
	struct mad_timer_heap *timers; /* required; owned by the caller */
};

/*
 * Unsolicited MAD for an agent (a request of a class/method it registered
 * for).  `mad` is valid during the call only.
 */
typedef void (*mad_unsolicited_fn)(struct mad_agent *agent, const void *mad, size_t len,
				   const struct mad_addr *src, void *arg);

/*
 * Outcome of a request: status 0 with the response (or the reassembled
 * RMPP message), or -ETIMEDOUT / -ECONNABORTED (RMPP aborted) /
 * -ECANCELED (mad_request_cancel, transport closed) with mad == NULL.
 */
typedef void (*mad_response_fn)(void *arg, int status, const void *mad, size_t len,
				const struct mad_addr *src);

struct mad_agent_desc {
	uint8_t mgmt_class;
	uint8_t class_version;
	uint32_t method_mask[4];	/* unsolicited methods (bit m = method m) */
	mad_unsolicited_fn unsolicited; /* NULL: drop (and count) them */
	void *arg;
};

static inline void mad_method_mask_set(uint32_t mask[4], uint8_t method)
{
	mask[(method & 0x7f) / 32] |= 1u << (method % 32);
}

struct mad_send_opts {
	unsigned timeout_ms; /* per try; 0 means 1000 */
	unsigned retries;    /* resends after the first try */
};

int mad_transport_open(struct mad_transport **out, const struct mad_transport_params *p);
/* Fails every pending request with -ECANCELED, unregisters agents, closes. */
void mad_transport_close(struct mad_transport *t);

/* The fd to poll for input; -1 when the transport has none. */
int mad_transport_fd(const struct mad_transport *t);

/*
 * Read and dispatch what is waiting (at most `budget` MADs, 0 = 64).
 * Returns how many were read, or -errno from umad.
 */
int mad_transport_poll(struct mad_transport *t, unsigned budget);

/*
 * The port as it is now (re-read from umad; cheap, no MADs).  Sets
 * *changed (when not NULL) if the LID, SM LID, SM SL, state or P_Key 0 differ from
 * the previous read.
 */
int mad_transport_port(struct mad_transport *t, struct mad_port_attr *out, bool *changed);
/* The last attributes read, without asking umad again. */
const struct mad_port_attr *mad_transport_port_cached(const struct mad_transport *t);

void mad_transport_counters(const struct mad_transport *t, struct mad_transport_counters *out);

int mad_agent_register(struct mad_transport *t, const struct mad_agent_desc *d,
		       struct mad_agent **out);
void mad_agent_unregister(struct mad_agent *a);
struct mad_transport *mad_agent_transport(const struct mad_agent *a);

/*
 * Send a request.  The MAD's TID is overwritten with a fresh one, returned
 * in *tid (when not NULL).  `len` <= 256.  The callback runs exactly once,
 * later, on the loop; never from inside this call.  Returns 0 or -errno
 * (then the callback never runs).
 */
int mad_request_send(struct mad_agent *a, void *mad, size_t len, const struct mad_addr *dst,
		     const struct mad_send_opts *opts, mad_response_fn cb, void *arg,
		     uint64_t *tid);
/* Cancel a pending request: its callback runs now with -ECANCELED. */
int mad_request_cancel(struct mad_transport *t, uint64_t tid);
/* Requests in flight. */
size_t mad_transport_pending(const struct mad_transport *t);

/* Send one MAD, no response expected (responses, ACKs, CM messages ...). */
int mad_send(struct mad_agent *a, const void *mad, size_t len, const struct mad_addr *dst);

#endif
