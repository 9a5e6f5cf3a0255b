/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Internal side of MAD tracing (the public calls are in
 * include/madcm/trace.h): the transport reports every MAD it sends or
 * receives here; when a trace is active it becomes a pcap record.
 */
#ifndef MADCM_MAD_TRACE_H
#define MADCM_MAD_TRACE_H

#include <stdbool.h>
#include <stddef.h>

#include "mad/addr.h"
#include "mad/umad_ops.h"

/* Start the trace named by MADCM_TRACE, once per process. */
void mad_trace_env_init(void);

/* True when a trace is being written (one relaxed atomic load). */
bool mad_trace_on(void);

/*
 * Record one MAD.  `outgoing`: sent by this process to `remote`; else
 * received from it.  `local` gives our LID/GID for the packet headers.
 */
void mad_trace_mad(bool outgoing, const struct mad_port_attr *local, const struct mad_addr *remote,
		   const void *mad, size_t len);

#endif
