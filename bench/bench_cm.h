/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * bench/bench_cm.h: the event channel of the librdmacm benches
 * (rdmacm_bench, ud_bench); apart from bench_common.h, whose programs do
 * not all link librdmacm.
 */
#ifndef BENCH_CM_H
#define BENCH_CM_H

#include <stdbool.h>

#include <rdma/rdma_cma.h>

/* A new event channel; its fd non-blocking unless blocking.  Dies on error. */
struct rdma_event_channel *bench_chan_open(bool blocking);

/*
 * The next event on chan within timeout_ms: 0 and *ev (to ack), -ETIMEDOUT
 * or -errno.  blocking: one rdma_get_cm_event (as rping and ucmatose wait;
 * the bench's watchdog covers a hang); else poll, then get, on the
 * non-blocking fd.
 */
int bench_next_event(struct rdma_event_channel *chan, bool blocking, struct rdma_cm_event **ev,
		     int timeout_ms);

#endif
