/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The soft verbs' own connections to fabsimd (protocol: sim/proto.h,
 * messages FSP_VERBS_* in sim/verbs_proto.h).  Small and synchronous:
 * requests are rare (open, QPN blocks, multicast); data packets are
 * one-way messages on the same connection.
 */
#ifndef SIM_VERBS_CLIENT_H
#define SIM_VERBS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/proto.h"

/* Path of the daemon socket, or NULL when no fabric is configured. */
const char *verbs_client_sock_path(char *buf, size_t len);
/* Connect and say HELLO as kind; returns fd or -errno. */
int verbs_client_connect(uint32_t kind, struct fsp_hello_rep *rep);
/* Send one message (type, body) with seq; one fragment only. */
int verbs_client_send(int fd, uint16_t type, uint32_t seq, const void *body, size_t len);
/* Request/response on fd: returns the reply's status (>= 0) or -errno;
 * copies up to replen bytes of the reply body.  Messages that are not the
 * reply (async traffic) are passed to async_cb when it is set. */
int verbs_client_call(int fd, uint16_t type, const void *body, size_t len, void *rep, size_t replen,
		      void (*async_cb)(const struct fsp_hdr *h, const uint8_t *body, size_t len));

#endif
