/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * A CM engine on a MAD transport (mad/transport.h): registers the CM agent
 * (class 0x07 version 2, unsolicited Send), feeds what it receives to the
 * engine and sends what the engine sends; answers Get(ClassPortInfo)
 * itself.  The local CA GUID and port come from the transport's port.
 * This is the one way to host the engine on a port: the runtime
 * (cm/runtime_local.c) builds on it.  Runs on the loop that owns the
 * transport.
 */
#ifndef MADCM_CM_UMAD_H
#define MADCM_CM_UMAD_H

#include "cm/engine.h"
#include "mad/transport.h"

struct cm_umad;

struct cm_umad_params {
	struct mad_transport *transport;
	struct mad_timer_heap *timers; /* the transport's loop's */
	void (*event)(void *ctx, const struct cm_event *ev);
	void *ctx;
	uint32_t max_conns; /* 0: engine default */
	uint64_t ca_guid;   /* LocalCAGUID; 0: the port GUID */
	/* cm_engine_config's (held REQs); NULL: none. */
	bool (*service_bound)(void *arg, uint64_t service_id);
	void *service_bound_arg;
};

int cm_umad_open(const struct cm_umad_params *p, struct cm_umad **out);
/* Destroys the engine (no MADs, no events) and unregisters the agent. */
void cm_umad_close(struct cm_umad *u);
struct cm_engine *cm_umad_engine(const struct cm_umad *u);
/* The CM agent, e.g. to send other CM-class MADs. */
struct mad_agent *cm_umad_agent(const struct cm_umad *u);

#endif
