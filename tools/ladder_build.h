/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Inside madcm ladder's model builder (tools/ladder_model.c): the MADs
 * kept while the capture is read, shared with the marks (retries,
 * duplicates, crossed DREQs, timeouts, labels: tools/ladder_marks.c).
 */
#ifndef MADCM_TOOLS_LADDER_BUILD_H
#define MADCM_TOOLS_LADDER_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/cm_wire.h"
#include "mad/mad_wire.h"
#include "mad/pcap.h"
#include "tools/ladder_model.h"

/* A MAD kept while the capture is read, with what the analysis needs. */
struct raw {
	struct ladder_arrow a;
	struct mad_pcap_hdr pkt;
	const struct mad_layout *layout; /* CM message layout, NULL for SA */
	uint8_t mad[MAD_SIZE];
	int ep[2]; /* endpoints (union-find nodes), -1 none */
	int req;   /* the connection's first REQ, -1 none */
	bool keep; /* false: the echo of a MAD to its own port */
	bool echoed;
};

/* A (lane, comm ID) pair, or (lane, request ID) for SIDR. */
struct endpoint {
	int lane;
	uint32_t id;
	bool sidr;
	int parent;
};

struct lid_gid {
	uint16_t lid;
	uint8_t gid[16];
};

struct builder {
	struct ladder_model *m;
	const struct ladder_opts *o;
	FILE *err;
	const char *name;
	struct raw *r;
	size_t n, cap;
	struct endpoint *ep;
	size_t nep, capep;
	struct lid_gid *lg;
	size_t nlg, caplg;
	size_t caplanes, capconns, captimeouts;
	bool have_start;
	int error; /* -ENOMEM */
};

static inline const uint8_t *cm_msg(const struct raw *r)
{
	return r->mad + CM_MSG_OFFSET;
}

/* An SA MAD that goes to the SA (a request), not from it. */
static inline bool sa_to_sm(uint8_t method)
{
	return !(method & MAD_METHOD_RESP) && method != MAD_METHOD_REPORT &&
	       method != MAD_METHOD_TRAP;
}

/* Grow *p (of *cap elements of `size`) to hold `need`.  False: no memory. */
bool ladder_grow(void **p, size_t *cap, size_t need, size_t size);

/* Flags retries, duplicates and echoes (ladder_model.h), then crossed DREQs. */
void ladder_find_repeats(struct builder *b);
void ladder_find_crossed(struct builder *b);
/* Each message's label and detail. */
void ladder_label(struct raw *r);
/* The CM timers that fire unanswered, into b->m->timeouts.  0 or -ENOMEM. */
int ladder_find_timeouts(struct builder *b);

#endif
