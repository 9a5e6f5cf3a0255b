/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Transaction IDs for MADs this process originates.
 *
 * High 32 bits: random per process (getrandom), so two processes, or one
 * process before and after a restart, never hand out the same TID.  Low 32
 * bits: a counter starting at a random value.  On Linux, ib_umad replaces
 * the high 32 bits of every request it sends with its own per-agent value
 * (to route the response back), so responses are matched on the low 32
 * bits, which this counter keeps unique within the process.
 */
#ifndef MADCM_MAD_TID_H
#define MADCM_MAD_TID_H

#include <stdint.h>

/* Next TID; thread safe, never returns the same value twice per process. */
uint64_t mad_tid_next(void);

/* The low 32 bits: what survives the kernel's rewrite of a request TID. */
static inline uint32_t mad_tid_low(uint64_t tid)
{
	return (uint32_t)tid;
}

#endif
