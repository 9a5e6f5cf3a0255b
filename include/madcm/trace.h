/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * MAD tracing: write every MAD this process sends or receives to a pcap
 * file (link type 197, ERF records of type InfiniBand, the packet from the
 * LRH on, as ibdump writes), which tshark and Wireshark dissect and
 * `madcm decode FILE` / `madcm trace FILE` print.
 *
 * Tracing also starts by itself when the first port opens if the
 * environment variable MADCM_TRACE names a file.
 */
#ifndef MADCM_TRACE_H
#define MADCM_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Start tracing to `path` (created or truncated).  Returns 0, -1 with
 * errno EINVAL (path NULL or empty), EBUSY (a trace is already running)
 * or the errno of opening the file.
 */
int madcm_trace_start(const char *path);

/*
 * Stop tracing and close the file.  Returns 0, or -1 with errno ENOENT
 * when no trace runs, or the errno of closing the file.
 */
int madcm_trace_stop(void);

/* 1 when a trace is running, else 0. */
int madcm_trace_active(void);

#ifdef __cplusplus
}
#endif

#endif
