/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * A write queue for one umad port whose writes sleep, with its own writer
 * thread or written by the thread that gives the progress loop up.
 *
 * mad_umad_ops.send() promises never to wait, and the progress loop (and
 * every application thread that takes the loop to run a command) counts
 * on it.  On an Ethernet (RoCE) port the kernel breaks that promise: for
 * every MAD, ib_umad_write() makes an address handle and resolves the
 * destination's MAC (ib_resolve_eth_dmac -> rdma_addr_find_l2_eth_by_grh),
 * which queues the work on the kernel's addr work queue and sleeps until a
 * kworker has done it, holding the umad file's mutex all the while.  The
 * kernel's own CM never pays this: its address vectors carry the MAC
 * rdma_resolve_addr found.  The ib_umad ABI has no way to pass the MAC or
 * reuse an address handle, so a user-space CM cannot skip the sleep; it
 * can keep it off the thread that runs the engine.
 *
 * So on such ports the MAD is copied into a queue and this thread writes
 * the queue, in order, one write at a time (the file's mutex serialises
 * writes on one fd anyway).  A write that fails is counted, as a MAD lost
 * on the wire: the transport's and the CM engine's retry timers cover it.
 * umad_tx_destroy() writes what is queued before it returns, so a REJ or
 * DREQ sent as a port closes still leaves.
 *
 * Threadless (params.threadless), the queue has no thread: the MADs sent
 * while a thread holds the progress loop are written by the thread that
 * gives it up (umad_tx_write_out(), from the loop's release hook), after
 * the release.  The sleep then stays on the thread that sent, as with
 * synchronous writes, but outside the loop: the loop thread and the
 * application's other threads run the engine meanwhile instead of
 * waiting for the lock (a one-CPU host has no CPU for a writer thread,
 * docs/results/kernel-bed.md).  Asked for only (MADCM_UMAD_TX=release): on
 * one-vCPU RoCE guests it measured the same as writing in place.
 */
#ifndef MADCM_MAD_UMAD_TX_H
#define MADCM_MAD_UMAD_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The write itself (umad_send() for libibumad); returns >= 0 or -errno. */
typedef int (*umad_tx_write_fn)(void *ctx, int portid, int agent, void *umad, int len,
				int timeout_ms);

/* The largest MAD the queue takes (a bigger one is the caller's to write). */
#define UMAD_TX_MAD_MAX 256

struct umad_tx_params {
	int portid;
	size_t hdr_size;     /* bytes before the MAD in a umad buffer (umad_size()) */
	unsigned max_queued; /* 0: 4096 */
	umad_tx_write_fn write;
	void *ctx;
	bool threadless; /* no writer thread: umad_tx_write_out() writes */
};

struct umad_tx_counters {
	uint64_t queued;  /* accepted by umad_tx_queue() */
	uint64_t written; /* writes that succeeded */
	uint64_t errors;  /* writes that failed */
	uint64_t full;	  /* refused: the queue held max_queued */
};

struct umad_tx;

/* Starts the thread (unless threadless).  0 or -errno. */
int umad_tx_create(struct umad_tx **out, const struct umad_tx_params *p);
/*
 * Copy one umad buffer (hdr_size + len bytes: header, then the MAD) to the
 * queue.  0, -EMSGSIZE when len > UMAD_TX_MAD_MAX, -ENOBUFS when the queue
 * is full (counted; the MAD is not sent), -ENOMEM when it could not grow.
 */
int umad_tx_queue(struct umad_tx *tx, int agent, const void *umad, int len, unsigned timeout_ms);
/*
 * Threadless: write every MAD queued, and those queued meanwhile, unless
 * another thread is doing so (it then writes them: nothing is left
 * behind).  Whether this call wrote any.  Does nothing with a thread.
 */
bool umad_tx_write_out(struct umad_tx *tx);
/* Wait until every MAD queued so far is written (tests, and a clean close). */
void umad_tx_flush(struct umad_tx *tx);
/*
 * The same, for at most timeout_ms: 0, or -ETIMEDOUT with some still
 * queued or being written (a process that exits must not hang on a write).
 */
int umad_tx_flush_timed(struct umad_tx *tx, unsigned timeout_ms);
/*
 * Writes what is queued, stops the thread, frees.  Threadless: no other
 * thread may be in umad_tx_write_out(), or enter it, once this is called.
 */
void umad_tx_destroy(struct umad_tx *tx);
void umad_tx_counters(struct umad_tx *tx, struct umad_tx_counters *out);

#endif
