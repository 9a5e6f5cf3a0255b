/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Cut-through between verbs processes (sim/verbs_direct.c); used by the
 * fabric transport (sim/verbs_transport.c), under VERBS_LOCK.
 */
#ifndef SIM_VERBS_DIRECT_H
#define SIM_VERBS_DIRECT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/verbs_proto.h"

/* The epoll set a waiting thread polls (the daemon stream is in it), or
 * -errno; cut-through stays off when the fabric offers none. */
int vdirect_open(int daemon_fd);

/* Where a packet goes: NULL, through the daemon; otherwise a handle for
 * vdirect_send: the process it may go to directly, or the question to the
 * daemon about it (FSP_VERBS_ROUTE, asked when no answer is known for
 * this generation), behind which it waits until the answer comes.
 * Packets for one handle may be batched together, never with others'. */
void *vdirect_route(const uint8_t *pkt, size_t len);
/* Send fsp_verbs_rec records there; a full receiver queues them here.
 * 0, or -errno when the daemon could not take them. */
int vdirect_send(void *to, const uint8_t *recs, size_t len);
/* The daemon's answer (FSP_VERBS_ROUTE). */
void vdirect_grant(const struct fsp_verbs_route *g);

enum vdirect_next {
	VD_NONE,   /* nothing is waiting */
	VD_DAEMON, /* the daemon stream is readable: the caller reads it */
	VD_DATA,   /* buf holds *len bytes of fsp_verbs_rec records */
	VD_DONE,   /* something was handled here; look again */
};
int vdirect_next(uint8_t *buf, size_t cap, size_t *len);
/* The process exits: what it holds leaves now (see verbs_direct.c). */
void vdirect_exit(void);
/* The daemon closed the stream: stop watching it. */
void vdirect_daemon_gone(void);

struct vdirect_stats {
	uint64_t tx, rx;       /* messages sent and received directly */
	uint64_t asked;	       /* FSP_VERBS_ROUTE questions */
	uint64_t granted;      /* answers that opened a direct path */
	uint64_t queued, lost; /* waited for a full receiver; receiver gone */
	/* path changes held in order: questions that asked for a fence
	 * (daemon -> direct), answers that waited for a peer's queue */
	uint64_t fences, drain_waits;
};
extern struct vdirect_stats vdirect_stats;

#endif
