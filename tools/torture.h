/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm torture: an adversarial CM peer (madcm-torture(1)).
 *
 * torture_net.c owns the port: a CM-class agent that sends raw CM MADs to
 * the target's QP1 and keeps every MAD that comes back in a queue; the
 * cases (torture_cases.c) build messages, send them and look in the queue
 * for the answers the spec (IBA vol 1 ch. 12) and the kernel's ib_cm give.
 * Every message of a case carries comm IDs made for that case, so what
 * belongs to it is what names them; the rest (late resends of earlier
 * cases) is ignored.
 */
#ifndef MADCM_TOOLS_TORTURE_H
#define MADCM_TOOLS_TORTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/cm_wire.h"
#include "mad/addr.h"
#include "mad/timer.h"
#include "mad/transport.h"

#define TT_QUEUE 1024

struct tt_msg {
	uint8_t mad[CM_MAD_SIZE];
	size_t len;
	bool used; /* taken by a case */
};

struct tt {
	struct mad_transport *t;
	struct mad_agent *agent;
	struct mad_timer_heap timers;
	struct mad_port_attr port;
	struct mad_addr dst; /* the target's QP1 */
	/* The path to the target, as the REQ carries it. */
	uint16_t dlid;
	uint8_t dgid[16];
	uint8_t sl;
	uint8_t mtu;
	uint16_t pkey;
	uint64_t guid;	     /* our LocalCAGUID */
	uint64_t service_id; /* what the target listens on */
	uint64_t unused_sid; /* what nobody listens on */
	uint32_t dst_ip;     /* IPv4 (network order) for the IP CM header */
	unsigned wait_ms;    /* how long silence must last */
	unsigned answer_ms;  /* how long an answer may take */
	unsigned flood;	     /* REQs of the flood case */
	uint32_t next_qpn;
	uint64_t tid;
	bool verbose;
	struct tt_msg q[TT_QUEUE];
	unsigned nq; /* ring: next slot */
};

/* One of our connections as the target should see it. */
struct tt_conn {
	uint32_t lid;  /* our comm ID */
	uint32_t rid;  /* the target's, from its REP */
	uint32_t qpn;  /* our QPN */
	uint32_t rqpn; /* the target's, from its REP */
	uint8_t req[CM_MAD_SIZE];
};

enum tt_verdict { TT_AS_REQUIRED, TT_DEVIATED, TT_SILENT, TT_DIED, TT_SKIPPED };

struct tt_result {
	enum tt_verdict v;
	char got[320]; /* what came back */
};

struct tt_case {
	const char *name;
	const char *what;     /* what is sent */
	const char *required; /* what the spec and the kernel require */
	void (*run)(struct tt *tt, struct tt_result *r);
};

extern const struct tt_case tt_cases[];
extern const unsigned tt_ncases;

/* ---- torture_net.c ---- */
int tt_open(struct tt *tt, const char *ca, int port);
void tt_close(struct tt *tt);
uint32_t tt_random32(void);
int tt_send(struct tt *tt, const void *mad, size_t len);
/* Pump the port for up to ms milliseconds (0: what is waiting). */
void tt_pump(struct tt *tt, unsigned ms);
/*
 * The first unused queued MAD naming our comm ID `lid` (RemoteCommID, or
 * SIDR RequestID) of attribute `attr` (0: any), waiting up to ms for it;
 * marked used.  NULL when none came.
 */
const uint8_t *tt_wait(struct tt *tt, uint16_t attr, uint32_t lid, unsigned ms);
/* Forget every queued MAD naming `lid` (late resends). */
void tt_forget(struct tt *tt, uint32_t lid);
/* "REJ reason 8 (invalid_service_id) rejecting REQ" ... */
void tt_describe(const uint8_t *mad, char *buf, size_t len);

#endif
