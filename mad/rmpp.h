/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * RMPP receiver (IBA 13.6): reassembles a multi-packet response from its
 * DATA segments and says when to ACK, so the transport can run RMPP in
 * user space (agents register with rmpp_version 0, the kernel stays out).
 *
 * Segments may arrive out of order or more than once: those inside the
 * receive window are kept, the window advances over the contiguous prefix,
 * and every out-of-order or duplicate segment is answered with an ACK of
 * what is held, so a sender that lost our ACK or a segment resends from
 * there.  Pure code: no I/O, no clock; the transport does both.
 */
#ifndef MADCM_MAD_RMPP_H
#define MADCM_MAD_RMPP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Segments the sender may have in flight before it needs our ACK. */
#define MAD_RMPP_WINDOW 32
/* Largest message accepted: bounds memory a hostile sender can pin. */
#define MAD_RMPP_MAX_MSG (16u << 20)

struct mad_rmpp_rx {
	uint8_t *buf;  /* hdr_len bytes of header + data */
	size_t cap;    /* bytes allocated in buf */
	uint8_t *have; /* one flag per segment, index seg - 1 */
	uint32_t have_cap;
	size_t hdr_len;	      /* header bytes repeated in each segment */
	size_t seg_data;      /* data bytes per segment: 256 - hdr_len */
	uint32_t contiguous;  /* every segment 1..contiguous is held */
	uint32_t window_last; /* highest segment the sender may send */
	uint32_t last_seg;    /* segment with the Last flag; 0 unknown */
	uint32_t last_paylen;
	size_t len;   /* total message length once done */
	bool started; /* first segment seen */
	bool done;
	unsigned duplicates;
	unsigned out_of_order;
};

enum mad_rmpp_verdict {
	MAD_RMPP_KEEP,	   /* stored, nothing to send */
	MAD_RMPP_SEND_ACK, /* send the ACK described by seg/newwin */
	MAD_RMPP_COMPLETE, /* send the final ACK, then deliver buf/len */
	MAD_RMPP_ABORT,	   /* send ABORT with *status, drop the transfer */
	MAD_RMPP_STOPPED,  /* the sender sent STOP or ABORT */
	MAD_RMPP_IGNORE,   /* not for a receiver (e.g. an ACK) */
};

struct mad_rmpp_ack {
	uint32_t seg;	 /* SegmentNumber: last segment held in order */
	uint32_t newwin; /* NewWindowLast */
	uint8_t status;	 /* for ABORT */
};

/* Data offset of a class: the header each segment repeats (56 for SA). */
size_t mad_rmpp_hdr_len(uint8_t mgmt_class);

void mad_rmpp_rx_init(struct mad_rmpp_rx *rx, uint8_t mgmt_class);
void mad_rmpp_rx_reset(struct mad_rmpp_rx *rx); /* back to empty, keep memory */
void mad_rmpp_rx_destroy(struct mad_rmpp_rx *rx);

/*
 * Feed one 256-byte MAD whose RMPP header is active.  Never reads past
 * `len`.  See enum mad_rmpp_verdict for what the caller does next.
 */
enum mad_rmpp_verdict mad_rmpp_rx_segment(struct mad_rmpp_rx *rx, const void *mad, size_t len,
					  struct mad_rmpp_ack *ack);

/*
 * Build the ACK (or ABORT when abort is true) answering DATA segment
 * `data` (IBA 13.6.3: same TID, class and attribute, R bit flipped) into
 * out[256].  Returns 256, or -EINVAL.
 */
int mad_rmpp_build_ack(void *out, const void *data, size_t data_len, const struct mad_rmpp_ack *ack,
		       bool abort);

#endif
