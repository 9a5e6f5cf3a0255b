/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Client side of the fabsim protocol, inside a preloaded process
 * (libfabsim.so).  Shared by the umad half (sim/preload_umad.c) and the
 * verbs half (sim/verbs*.c) of the preload library.
 *
 * All functions are thread-safe and fork-aware: the process-wide control
 * connection is re-made lazily in a child after fork().
 */
#ifndef FABSIM_CLIENT_H
#define FABSIM_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sim/proto.h"

#define FSC_EXPORT __attribute__((visibility("default")))

/* $FABSIM_DIR, default "./fabsim" (never NULL) */
const char *fsc_dir(void);
/* $FABSIM_HOST, "" when unset (the daemon then picks the first host) */
const char *fsc_host(void);

/*
 * Open a new connection of the given kind (enum fsp_conn_kind) and do the
 * HELLO exchange.  Returns the socket fd (close-on-exec) or -errno; fills
 * *rep when not NULL.  The caller owns the fd; closing it is how a stream
 * or an ISSM hold ends, and the daemon then frees what hung on it.
 */
int fsc_open(uint32_t kind, struct fsp_hello_rep *rep);

/* HELLO reply of the process-wide control connection (connects lazily);
 * NULL with errno set when the daemon is not reachable. */
const struct fsp_hello_rep *fsc_hello(void);

/*
 * Request/response on the process-wide control connection.  *replen is in:
 * size of rep, out: bytes of reply body received (truncated to the size
 * of rep).  Returns the reply's status (>= 0) or -errno.
 */
int fsc_call(uint16_t type, const void *req, size_t reqlen, void *rep, size_t *replen);

/* Same on a connection the caller owns and serialises (e.g. FSP_ATTACH on
 * a fresh stream, before anything async can arrive on it). */
int fsc_call_fd(int fd, uint16_t type, const void *req, size_t reqlen, void *rep, size_t *replen);

/* Send one logical message (fragmented as needed).  Returns 0 or -errno.
 * Concurrent senders on one fd are serialised inside. */
int fsc_send(int fd, uint16_t type, uint16_t flags, uint32_t seq, int32_t status, const void *body,
	     size_t len);

/*
 * Receive one logical message (reassembling fragments).  timeout_ms < 0
 * blocks.  On success returns the body length, fills *hdr (len = total
 * body length + header) and *body (malloc'd, caller frees; NULL when the
 * body is empty).  -ETIMEDOUT, -EAGAIN (timeout_ms == 0), -ECONNRESET
 * when the daemon went away, -EPROTO on a garbled stream.
 */
ssize_t fsc_recv(int fd, struct fsp_hdr *hdr, void **body, int timeout_ms);

#endif
