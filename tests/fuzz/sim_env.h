/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * What sim/fabsimd_main.c gives the rest of the daemon (the fabric, the
 * clock, the log, connections), without sockets or an event loop, so the
 * fuzz targets can drive the simulator's decoders in process.  The clock
 * is a plain variable the target advances; messages "sent" to a
 * connection are checked for shape and dropped.
 */
#ifndef FUZZ_SIM_ENV_H
#define FUZZ_SIM_ENV_H

#include <stdint.h>

#include "sim/fabsimd.h"

/* what fsd_now_ns() returns */
extern uint64_t sim_env_now;

/* A connection of kind `kind` attached to host_id (stream: to port), as
 * HELLO + ATTACH would make it.  NULL when the table is full. */
struct fsd_conn *sim_env_conn_new(uint32_t kind, int host_id, struct fsd_port *port);
/* Close every connection as the daemon does (agents released). */
void sim_env_conns_free(void);

#endif
