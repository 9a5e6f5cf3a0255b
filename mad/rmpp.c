/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* RMPP receive side (see rmpp.h); facts from IBA 13.6.2-13.6.4. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mad/mad_wire.h"
#include "mad/rmpp.h"

#define SA_HDR_OFFSET 36      /* SA header follows the RMPP header */
#define SA_DATA_OFFSET 56     /* MAD header + RMPP header + SA header */
#define VENDOR_DATA_OFFSET 40 /* ... + 1 reserved byte and the OUI */

size_t mad_rmpp_hdr_len(uint8_t mgmt_class)
{
	if (mgmt_class == MAD_CLASS_SUBN_ADM)
		return SA_DATA_OFFSET;
	if (mgmt_class >= MAD_CLASS_VENDOR_RANGE2_START &&
	    mgmt_class <= MAD_CLASS_VENDOR_RANGE2_END)
		return VENDOR_DATA_OFFSET;
	return MAD_RMPP_HDR_OFFSET + MAD_RMPP_HDR_SIZE;
}

void mad_rmpp_rx_init(struct mad_rmpp_rx *rx, uint8_t mgmt_class)
{
	memset(rx, 0, sizeof(*rx));
	rx->hdr_len = mad_rmpp_hdr_len(mgmt_class);
	rx->seg_data = MAD_SIZE - rx->hdr_len;
	rx->window_last = 1; /* a sender starts with a window of one */
}

void mad_rmpp_rx_reset(struct mad_rmpp_rx *rx)
{
	uint8_t *buf = rx->buf, *have = rx->have;
	size_t cap = rx->cap, hdr = rx->hdr_len, seg = rx->seg_data;
	uint32_t hcap = rx->have_cap;

	memset(rx, 0, sizeof(*rx));
	rx->buf = buf;
	rx->cap = cap;
	rx->have = have;
	rx->have_cap = hcap;
	if (have)
		memset(have, 0, hcap);
	rx->hdr_len = hdr;
	rx->seg_data = seg;
	rx->window_last = 1;
}

void mad_rmpp_rx_destroy(struct mad_rmpp_rx *rx)
{
	free(rx->buf);
	free(rx->have);
	memset(rx, 0, sizeof(*rx));
}

static uint32_t max_segments(const struct mad_rmpp_rx *rx)
{
	return (uint32_t)(MAD_RMPP_MAX_MSG / rx->seg_data);
}

/* Make room for segment `seg`; false when out of memory. */
static bool reserve(struct mad_rmpp_rx *rx, uint32_t seg)
{
	size_t need = rx->hdr_len + (size_t)seg * rx->seg_data;

	if (seg > rx->have_cap) {
		uint32_t ncap = rx->have_cap ? rx->have_cap : 16;
		uint8_t *h;

		while (ncap < seg)
			ncap *= 2;
		h = realloc(rx->have, ncap);
		if (!h)
			return false;
		memset(h + rx->have_cap, 0, ncap - rx->have_cap);
		rx->have = h;
		rx->have_cap = ncap;
	}
	if (need > rx->cap) {
		size_t ncap = rx->cap ? rx->cap : 4096;
		uint8_t *b;

		while (ncap < need)
			ncap *= 2;
		b = realloc(rx->buf, ncap);
		if (!b)
			return false;
		rx->buf = b;
		rx->cap = ncap;
	}
	return true;
}

static enum mad_rmpp_verdict abort_with(struct mad_rmpp_ack *ack, uint8_t status)
{
	ack->status = status;
	return MAD_RMPP_ABORT;
}

static void fill_ack(const struct mad_rmpp_rx *rx, struct mad_rmpp_ack *ack)
{
	ack->seg = rx->contiguous;
	ack->newwin = rx->window_last;
	ack->status = MAD_RMPP_STATUS_NORMAL;
}

enum mad_rmpp_verdict mad_rmpp_rx_segment(struct mad_rmpp_rx *rx, const void *mad, size_t len,
					  struct mad_rmpp_ack *ack)
{
	const uint8_t *m = mad;
	const uint8_t *rh = m + MAD_RMPP_HDR_OFFSET;
	uint32_t seg, paylen, flags, type;

	memset(ack, 0, sizeof(*ack));
	if (!mad || len < MAD_SIZE)
		return abort_with(ack, MAD_RMPP_STATUS_BAD_LEN);
	type = (uint32_t)mad_get(rh, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE);
	if (mad_get(rh, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION) != MAD_RMPP_VERSION)
		return abort_with(ack, MAD_RMPP_STATUS_UNV);
	if (type == MAD_RMPP_TYPE_STOP || type == MAD_RMPP_TYPE_ABORT)
		return MAD_RMPP_STOPPED;
	if (type == MAD_RMPP_TYPE_ACK)
		return MAD_RMPP_IGNORE;
	if (type != MAD_RMPP_TYPE_DATA)
		return abort_with(ack, MAD_RMPP_STATUS_BADT);
	if (rx->done) {
		/* The sender missed our last ACK: say again that all is here. */
		fill_ack(rx, ack);
		rx->duplicates++;
		return MAD_RMPP_SEND_ACK;
	}

	flags = (uint32_t)mad_get(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS);
	seg = (uint32_t)mad_get(rh, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER);
	paylen = (uint32_t)mad_get(rh, mad_rmpp_fields, MAD_RMPP_PAYLOAD_LENGTH);
	if (seg == 0 || ((flags & MAD_RMPP_FLAG_FIRST) != 0) != (seg == 1))
		return abort_with(ack, MAD_RMPP_STATUS_BAD_SEG);
	if (seg > max_segments(rx))
		return abort_with(ack, MAD_RMPP_STATUS_S2B);
	if (rx->last_seg && seg > rx->last_seg)
		return abort_with(ack, MAD_RMPP_STATUS_BAD_SEG);
	if ((flags & MAD_RMPP_FLAG_LAST) && seg < rx->contiguous)
		return abort_with(ack, MAD_RMPP_STATUS_BAD_SEG);

	if (seg <= rx->contiguous || (seg <= rx->have_cap && rx->have[seg - 1])) {
		rx->duplicates++;
		fill_ack(rx, ack);
		return MAD_RMPP_SEND_ACK;
	}
	if (seg > rx->window_last) {
		/* Beyond what we allowed: the sender is confused; remind it. */
		rx->out_of_order++;
		fill_ack(rx, ack);
		return MAD_RMPP_SEND_ACK;
	}
	if (!reserve(rx, seg))
		return abort_with(ack, MAD_RMPP_STATUS_RESX);
	if (seg == 1) {
		memcpy(rx->buf, m, rx->hdr_len);
		rx->started = true;
	}
	memcpy(rx->buf + rx->hdr_len + (size_t)(seg - 1) * rx->seg_data, m + rx->hdr_len,
	       rx->seg_data);
	rx->have[seg - 1] = 1;
	if (flags & MAD_RMPP_FLAG_LAST) {
		rx->last_seg = seg;
		rx->last_paylen = paylen;
	}
	if (seg != rx->contiguous + 1)
		rx->out_of_order++;
	while (rx->contiguous < rx->have_cap && rx->have[rx->contiguous])
		rx->contiguous++;

	if (rx->last_seg && rx->contiguous >= rx->last_seg) {
		/*
		 * PayloadLength of the last segment counts its RMPP payload
		 * (220 bytes at most); what it lacks is padding.
		 */
		size_t pad = rx->last_paylen <= MAD_RMPP_SEGMENT_DATA_SIZE
				 ? MAD_RMPP_SEGMENT_DATA_SIZE - rx->last_paylen
				 : 0;

		if (pad > rx->seg_data)
			pad = 0;
		rx->len = rx->hdr_len + (size_t)rx->last_seg * rx->seg_data - pad;
		rx->done = true;
		if (rx->window_last < rx->last_seg)
			rx->window_last = rx->last_seg;
		fill_ack(rx, ack);
		return MAD_RMPP_COMPLETE;
	}
	if (rx->contiguous >= rx->window_last) {
		rx->window_last = rx->contiguous + MAD_RMPP_WINDOW;
		fill_ack(rx, ack);
		return MAD_RMPP_SEND_ACK;
	}
	if (seg != rx->contiguous) {
		/*
		 * A hole before this segment, or one just filled: tell the
		 * sender what we hold so it resends only what is missing.
		 */
		fill_ack(rx, ack);
		return MAD_RMPP_SEND_ACK;
	}
	return MAD_RMPP_KEEP;
}

int mad_rmpp_build_ack(void *out, const void *data, size_t data_len, const struct mad_rmpp_ack *ack,
		       bool abort)
{
	uint8_t *o = out;
	uint8_t *rh = o + MAD_RMPP_HDR_OFFSET;

	if (!out || !data || !ack || data_len < MAD_HDR_SIZE)
		return -EINVAL;
	memset(o, 0, MAD_SIZE);
	memcpy(o, data, MAD_HDR_SIZE);
	/* The receiver's ACK travels the other way: flip the R bit. */
	mad_set_fits(o, mad_hdr_fields, MAD_HDR_R, !mad_get(o, mad_hdr_fields, MAD_HDR_R));
	mad_set_fits(rh, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, MAD_RMPP_VERSION);
	mad_set_fits(rh, mad_rmpp_fields, MAD_RMPP_R_RESP_TIME, MAD_RMPP_NO_RESP_TIME);
	mad_set_fits(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS, MAD_RMPP_FLAG_ACTIVE);
	if (abort) {
		mad_set_fits(rh, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, MAD_RMPP_TYPE_ABORT);
		mad_set_fits(rh, mad_rmpp_fields, MAD_RMPP_RMPP_STATUS, ack->status);
	} else {
		mad_set_fits(rh, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, MAD_RMPP_TYPE_ACK);
		mad_set_fits(rh, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, ack->seg);
		mad_set_fits(rh, mad_rmpp_fields, MAD_RMPP_NEW_WINDOW_LAST, ack->newwin);
	}
	/* The SA header (SM_Key ...) rides along, as the kernel's ACKs carry it. */
	if (data_len >= SA_DATA_OFFSET &&
	    mad_get(o, mad_hdr_fields, MAD_HDR_MGMT_CLASS) == MAD_CLASS_SUBN_ADM)
		memcpy(o + SA_HDR_OFFSET, (const uint8_t *)data + SA_HDR_OFFSET,
		       SA_DATA_OFFSET - SA_HDR_OFFSET);
	return MAD_SIZE;
}
