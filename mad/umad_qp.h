/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM MADs sent from a UD QP of madcm's own, on Ethernet (RoCE) ports.
 *
 * ib_umad makes an address handle for every MAD it writes, and on RoCE
 * that means resolving the destination's MAC through the kernel's addr
 * work queue, a kworker round trip per MAD (umad_tx.h).  The kernel's CM
 * makes one address handle per connection.  This sender does the same:
 * a UD QP on the port, the GSI Q_Key (0x80010000) in its context, an
 * address handle per destination kept in a small cache, and the MAD
 * posted to the peer's QP1.  Only sending moves here; MADs are still
 * received on umad, and every answer madcm or the kernel's CM sends goes
 * to QP1 whatever the source QP was (the kernel's cm.c: remote_cm_qpn is
 * 1; cm_send_answer() in cm/engine.c), so the peer never needs this QP.
 *
 * Asked for with MADCM_MAD_SEND=qp (mad/umad_real.c).  The one visible
 * difference on the wire is the source QP in the DETH: this QP's number
 * instead of 1, which is why it is not the default.  A privileged Q_Key needs CAP_NET_RAW
 * (the kernel refuses it to others since 6.4); a process that may open
 * umad has it on a stock host.  When anything here fails (no such
 * device, EPERM, a full send queue, a QP gone to the error state), the
 * caller writes the MAD to umad as before: umad_qp_send() returning
 * nonzero means "not sent, write it yourself".
 */
#ifndef MADCM_MAD_UMAD_QP_H
#define MADCM_MAD_UMAD_QP_H

#include <stddef.h>
#include <stdint.h>

#include "mad/addr.h"

struct umad_qp;

/* A sender on (ca, port), P_Key index pkey_index; NULL if none can be made. */
struct umad_qp *umad_qp_open(const char *ca, int port, uint16_t pkey_index);
/*
 * Post one MAD to dst (QP1, with a GRH, from source GID index sgid_index):
 * 0 when posted, else -errno and nothing was sent.
 */
int umad_qp_send(struct umad_qp *q, const void *mad, size_t len, const struct mad_addr *dst,
		 uint8_t sgid_index);
/* Waits (briefly, bounded) for posted MADs to leave, then frees everything. */
void umad_qp_close(struct umad_qp *q);

struct umad_qp_stats {
	uint64_t sent;	   /* posted and completed or in flight */
	uint64_t fallback; /* refused: the caller wrote them to umad */
	uint64_t errors;   /* completions with an error status */
	uint64_t ah_made;  /* address handles created */
};
void umad_qp_get_stats(const struct umad_qp *q, struct umad_qp_stats *out);

#endif
