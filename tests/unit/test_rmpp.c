/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * RMPP receiver: in-order transfer with window ACKs, lost segment (ACK of
 * the prefix so the sender resends), out-of-order within the window,
 * duplicates re-ACKed, length from the last segment's PayloadLength, and
 * the protocol errors that abort a transfer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "mad/mad_wire.h"
#include "mad/rmpp.h"

static void seg_mad(uint8_t *mad, unsigned seg, unsigned nseg, size_t last_bytes, unsigned type)
{
	uint8_t *rh = mad + MAD_RMPP_HDR_OFFSET;
	unsigned flags = MAD_RMPP_FLAG_ACTIVE;
	uint32_t paylen = 0;

	mad_hdr_init(mad, MAD_SIZE, MAD_CLASS_SUBN_ADM, 2, MAD_METHOD_GET_TABLE_RESP, 42, 0x35, 0);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, 1);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, type);
	if (seg == 1) {
		flags |= MAD_RMPP_FLAG_FIRST;
		paylen = (uint32_t)(nseg * 220 - (200 - last_bytes));
	}
	if (seg == nseg) {
		flags |= MAD_RMPP_FLAG_LAST;
		paylen = (uint32_t)(20 + last_bytes);
	}
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS, flags);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, seg);
	mad_set(rh, mad_rmpp_fields, MAD_RMPP_PAYLOAD_LENGTH, paylen);
	memset(mad + 56, (int)(seg & 0xff), 200);
}

static enum mad_rmpp_verdict feed(struct mad_rmpp_rx *rx, unsigned seg, unsigned nseg,
				  struct mad_rmpp_ack *ack)
{
	uint8_t mad[MAD_SIZE];

	seg_mad(mad, seg, nseg, 100, MAD_RMPP_TYPE_DATA);
	return mad_rmpp_rx_segment(rx, mad, MAD_SIZE, ack);
}

static void test_in_order_with_windows(void **state)
{
	struct mad_rmpp_rx rx;
	struct mad_rmpp_ack ack;
	unsigned nseg = 1 + MAD_RMPP_WINDOW + 5, acks = 0;

	(void)state;
	mad_rmpp_rx_init(&rx, MAD_CLASS_SUBN_ADM);
	assert_int_equal(rx.hdr_len, 56);
	for (unsigned s = 1; s < nseg; s++) {
		enum mad_rmpp_verdict v = feed(&rx, s, nseg, &ack);

		assert_true(v == MAD_RMPP_KEEP || v == MAD_RMPP_SEND_ACK);
		if (v == MAD_RMPP_SEND_ACK) {
			acks++;
			assert_int_equal(ack.seg, s);
			assert_int_equal(ack.newwin, s + MAD_RMPP_WINDOW);
		}
	}
	assert_int_equal(acks, 2); /* after segment 1, and at the window's end */
	assert_int_equal(feed(&rx, nseg, nseg, &ack), MAD_RMPP_COMPLETE);
	assert_int_equal(ack.seg, nseg);
	assert_int_equal(rx.len, 56 + (nseg - 1) * 200 + 100);
	for (unsigned s = 1; s <= nseg; s++)
		assert_int_equal(rx.buf[56 + (s - 1) * 200], s & 0xff);
	/* The sender lost our final ACK and resends: ACK again, no second delivery. */
	assert_int_equal(feed(&rx, nseg, nseg, &ack), MAD_RMPP_SEND_ACK);
	assert_int_equal(ack.seg, nseg);
	mad_rmpp_rx_destroy(&rx);
}

static void test_lost_and_out_of_order(void **state)
{
	struct mad_rmpp_rx rx;
	struct mad_rmpp_ack ack;

	(void)state;
	mad_rmpp_rx_init(&rx, MAD_CLASS_SUBN_ADM);
	assert_int_equal(feed(&rx, 1, 6, &ack), MAD_RMPP_SEND_ACK);
	assert_int_equal(feed(&rx, 2, 6, &ack), MAD_RMPP_KEEP);
	/* 3 is lost: 4 and 5 are kept, each answered with ACK(2). */
	assert_int_equal(feed(&rx, 4, 6, &ack), MAD_RMPP_SEND_ACK);
	assert_int_equal(ack.seg, 2);
	assert_int_equal(feed(&rx, 5, 6, &ack), MAD_RMPP_SEND_ACK);
	assert_int_equal(ack.seg, 2);
	assert_int_equal(rx.contiguous, 2);
	/* Duplicate of a segment already held. */
	assert_int_equal(feed(&rx, 2, 6, &ack), MAD_RMPP_SEND_ACK);
	assert_int_equal(rx.duplicates, 1);
	/* The sender resends from 3: the hole fills; ACK(5) spares it 4 and 5. */
	assert_int_equal(feed(&rx, 3, 6, &ack), MAD_RMPP_SEND_ACK);
	assert_int_equal(ack.seg, 5);
	assert_int_equal(rx.contiguous, 5);
	assert_int_equal(feed(&rx, 4, 6, &ack), MAD_RMPP_SEND_ACK); /* duplicate */
	assert_int_equal(feed(&rx, 6, 6, &ack), MAD_RMPP_COMPLETE);
	assert_int_equal(rx.len, 56 + 5 * 200 + 100);
	assert_int_equal(rx.buf[56 + 2 * 200], 3);
	assert_int_equal(rx.buf[56 + 4 * 200], 5);
	/* Reset for a resent request: starts from an empty window again. */
	mad_rmpp_rx_reset(&rx);
	assert_int_equal(rx.contiguous, 0);
	assert_int_equal(feed(&rx, 2, 6, &ack), MAD_RMPP_SEND_ACK); /* beyond window 1 */
	assert_int_equal(ack.seg, 0);
	mad_rmpp_rx_destroy(&rx);
}

static void test_protocol_errors(void **state)
{
	struct mad_rmpp_rx rx;
	struct mad_rmpp_ack ack;
	uint8_t mad[MAD_SIZE];

	(void)state;
	mad_rmpp_rx_init(&rx, MAD_CLASS_SUBN_ADM);
	seg_mad(mad, 1, 3, 100, MAD_RMPP_TYPE_DATA);
	mad_set(mad + 24, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, 0);
	assert_int_equal(mad_rmpp_rx_segment(&rx, mad, MAD_SIZE, &ack), MAD_RMPP_ABORT);
	assert_int_equal(ack.status, MAD_RMPP_STATUS_BAD_SEG);
	seg_mad(mad, 2, 3, 100, MAD_RMPP_TYPE_DATA);
	mad_set(mad + 24, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS, 3); /* First on segment 2 */
	assert_int_equal(mad_rmpp_rx_segment(&rx, mad, MAD_SIZE, &ack), MAD_RMPP_ABORT);
	seg_mad(mad, 1, 3, 100, 9);
	assert_int_equal(mad_rmpp_rx_segment(&rx, mad, MAD_SIZE, &ack), MAD_RMPP_ABORT);
	assert_int_equal(ack.status, MAD_RMPP_STATUS_BADT);
	seg_mad(mad, 1, 3, 100, MAD_RMPP_TYPE_DATA);
	mad_set(mad + 24, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, 2);
	assert_int_equal(mad_rmpp_rx_segment(&rx, mad, MAD_SIZE, &ack), MAD_RMPP_ABORT);
	assert_int_equal(ack.status, MAD_RMPP_STATUS_UNV);
	seg_mad(mad, 1, 3, 100, MAD_RMPP_TYPE_DATA);
	assert_int_equal(mad_rmpp_rx_segment(&rx, mad, 100, &ack), MAD_RMPP_ABORT);
	mad_set(mad + 24, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, 0x7fffffff);
	mad_set(mad + 24, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS, 1);
	assert_int_equal(mad_rmpp_rx_segment(&rx, mad, MAD_SIZE, &ack), MAD_RMPP_ABORT);
	assert_int_equal(ack.status, MAD_RMPP_STATUS_S2B);
	seg_mad(mad, 1, 3, 100, MAD_RMPP_TYPE_ABORT);
	assert_int_equal(mad_rmpp_rx_segment(&rx, mad, MAD_SIZE, &ack), MAD_RMPP_STOPPED);
	seg_mad(mad, 1, 3, 100, MAD_RMPP_TYPE_ACK);
	assert_int_equal(mad_rmpp_rx_segment(&rx, mad, MAD_SIZE, &ack), MAD_RMPP_IGNORE);
	mad_rmpp_rx_destroy(&rx);
}

static void test_build_ack(void **state)
{
	uint8_t data[MAD_SIZE], out[MAD_SIZE];
	struct mad_rmpp_ack ack = {.seg = 7, .newwin = 39};

	(void)state;
	seg_mad(data, 7, 9, 100, MAD_RMPP_TYPE_DATA);
	assert_int_equal(mad_rmpp_build_ack(out, data, MAD_SIZE, &ack, false), MAD_SIZE);
	assert_int_equal(mad_get(out, mad_hdr_fields, MAD_HDR_R), 0);
	assert_int_equal(mad_get(out, mad_hdr_fields, MAD_HDR_METHOD), MAD_METHOD_GET_TABLE);
	assert_int_equal(mad_get(out, mad_hdr_fields, MAD_HDR_TRANSACTION_ID), 42);
	assert_int_equal(mad_get(out + 24, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE), MAD_RMPP_TYPE_ACK);
	assert_int_equal(mad_get(out + 24, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS),
			 MAD_RMPP_FLAG_ACTIVE);
	assert_int_equal(mad_get(out + 24, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER), 7);
	assert_int_equal(mad_get(out + 24, mad_rmpp_fields, MAD_RMPP_NEW_WINDOW_LAST), 39);
	assert_int_equal(mad_hdr_check(out, MAD_SIZE), 0);
	assert_int_equal(mad_rmpp_build_ack(NULL, data, MAD_SIZE, &ack, false), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_in_order_with_windows),
	    cmocka_unit_test(test_lost_and_out_of_order),
	    cmocka_unit_test(test_protocol_errors),
	    cmocka_unit_test(test_build_ack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
