/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM message formats: every table checked, every field round-tripped,
 * golden bytes worked out by hand from the IBA vol 1 ch. 12 tables, limits
 * of private data and of every field, and what cm_msg_check refuses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "tests/unit/layout_check.h"

#define M CM_MSG_OFFSET /* where the CM message starts in the MAD */

/* ---- tables ---- */

static void test_layouts_valid(void **state)
{
	unsigned n = 0;

	(void)state;
	for (const struct mad_layout *const *l = cm_wire_layouts; *l; l++, n++) {
		const char *why = NULL;

		if (mad_layout_validate(*l, &why))
			fail_msg("%s: %s", (*l)->name, why);
		assert_int_equal((*l)->mgmt_class, CM_MGMT_CLASS);
		assert_int_equal((*l)->mad_offset, 24);
		assert_int_equal((*l)->size, 232);
		assert_ptr_equal(cm_layout_by_attr((*l)->attr_id), *l);
	}
	assert_int_equal(n, 12);
}

/*
 * Every bit of the 232 bytes is described by exactly one field (reserved
 * bits included): the widths add up to the size and validate() already
 * proved there is no overlap.
 */
static void test_layouts_cover_every_bit(void **state)
{
	(void)state;
	for (const struct mad_layout *const *l = cm_wire_layouts; *l; l++) {
		unsigned bits = 0;

		for (unsigned i = 0; i < (*l)->nfields; i++)
			bits += (*l)->fields[i].width;
		if (bits != (*l)->size * 8u)
			fail_msg("%s: fields cover %u of %u bits", (*l)->name, bits,
				 (*l)->size * 8u);
	}
}

static void test_attr_ids(void **state)
{
	static const struct {
		uint16_t id;
		const struct mad_layout *l;
		const char *name;
	} want[] = {
	    {0x0001, &cm_class_port_info_layout, "ClassPortInfo"},
	    {0x0010, &cm_req_layout, "REQ"},
	    {0x0011, &cm_mra_layout, "MRA"},
	    {0x0012, &cm_rej_layout, "REJ"},
	    {0x0013, &cm_rep_layout, "REP"},
	    {0x0014, &cm_rtu_layout, "RTU"},
	    {0x0015, &cm_dreq_layout, "DREQ"},
	    {0x0016, &cm_drep_layout, "DREP"},
	    {0x0017, &cm_sidr_req_layout, "SIDR_REQ"},
	    {0x0018, &cm_sidr_rep_layout, "SIDR_REP"},
	    {0x0019, &cm_lap_layout, "LAP"},
	    {0x001A, &cm_apr_layout, "APR"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_ptr_equal(cm_layout_by_attr(want[i].id), want[i].l);
		assert_string_equal(cm_attr_name(want[i].id), want[i].name);
	}
	assert_null(cm_layout_by_attr(0x0000));
	assert_null(cm_layout_by_attr(0x001B));
	assert_null(cm_layout_by_attr(0xFFFF));
	assert_null(cm_attr_name(0x0020));
}

/* ---- round trip of every field of every message ---- */

static void test_round_trip_every_field(void **state)
{
	(void)state;
	for (const struct mad_layout *const *l = cm_wire_layouts; *l; l++) {
		layout_round_trip(*l, 0x00);
		layout_round_trip(*l, 0xff);
	}
}

/* All ones in every field gives all ones in every byte: nothing is lost. */
static void test_all_ones(void **state)
{
	(void)state;
	for (const struct mad_layout *const *l = cm_wire_layouts; *l; l++) {
		uint8_t msg[CM_MSG_SIZE] = {0}, ones[CM_MSG_SIZE];

		memset(ones, 0xff, sizeof(ones));
		for (unsigned i = 0; i < (*l)->nfields; i++) {
			const struct mad_field *f = &(*l)->fields[i];

			if (f->width > 64)
				mad_field_set_bytes(msg, f, ones);
			else
				assert_int_equal(mad_field_set(msg, f,
							       f->width == 64
								   ? UINT64_MAX
								   : (1ull << f->width) - 1),
						 0);
		}
		assert_memory_equal(msg, ones, sizeof(ones));
	}
}

/* Largest value of every field fits; one more is -ERANGE and writes nothing. */
static void test_field_limits(void **state)
{
	(void)state;
	for (const struct mad_layout *const *l = cm_wire_layouts; *l; l++)
		layout_boundaries(*l);
}

/* ---- private data ---- */

static void test_private_data_sizes(void **state)
{
	static const struct {
		const struct mad_layout *l;
		size_t max;
	} want[] = {
	    {&cm_req_layout, 92},  {&cm_rep_layout, 196},      {&cm_rej_layout, 148},
	    {&cm_rtu_layout, 224}, {&cm_dreq_layout, 220},     {&cm_drep_layout, 224},
	    {&cm_mra_layout, 222}, {&cm_sidr_req_layout, 216}, {&cm_sidr_rep_layout, 136},
	    {&cm_lap_layout, 168}, {&cm_apr_layout, 148},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct mad_layout *l = want[i].l;
		uint8_t msg[CM_MSG_SIZE], copy[CM_MSG_SIZE], data[CM_MSG_SIZE + 1];
		const uint8_t *p;
		size_t len;

		assert_int_equal(cm_private_data_size(l), want[i].max);
		/* The private data is the tail of every message. */
		p = cm_private_data(l, msg, &len);
		assert_int_equal(len, want[i].max);
		assert_ptr_equal(p + len, msg + CM_MSG_SIZE);

		memset(data, 0xa5, sizeof(data));
		memset(msg, 0x11, sizeof(msg));
		assert_int_equal(cm_set_private_data(l, msg, data, want[i].max), 0);
		assert_memory_equal(p, data, want[i].max);

		/* One byte more is refused and nothing is written. */
		memcpy(copy, msg, sizeof(msg));
		assert_int_equal(cm_set_private_data(l, msg, data, want[i].max + 1), -EINVAL);
		assert_memory_equal(msg, copy, sizeof(msg));

		/* A short write zeroes the rest, leaves the fields before it alone. */
		assert_int_equal(cm_set_private_data(l, msg, "ab", 2), 0);
		assert_int_equal(p[0], 'a');
		assert_int_equal(p[1], 'b');
		for (size_t k = 2; k < len; k++)
			assert_int_equal(p[k], 0);
		assert_int_equal(msg[0], 0x11);
		assert_int_equal(cm_set_private_data(l, msg, NULL, 0), 0);
		assert_int_equal(p[0], 0);
	}
	assert_int_equal(cm_private_data_size(&cm_class_port_info_layout), 0);
	assert_int_equal(cm_private_data_size(NULL), 0);
	{
		uint8_t msg[CM_MSG_SIZE];

		assert_int_equal(cm_set_private_data(&cm_class_port_info_layout, msg, "a", 1),
				 -EINVAL);
		assert_int_equal(cm_set_private_data(NULL, msg, "a", 1), -EINVAL);
		assert_int_equal(cm_set_private_data(&cm_req_layout, NULL, "a", 1), -EINVAL);
		assert_int_equal(cm_set_private_data(&cm_req_layout, msg, NULL, 1), -EINVAL);
	}
}

/* ---- golden vectors, derived by hand from the IBA tables ---- */

/*
 * REQ (IBA Table 106), as a whole MAD.  Header (IBA 13.4.3): base version
 * 1, class 0x07, class version 2, method Send 0x03, status 0, TID
 * 0x0102030405060708, attribute 0x0010, modifier 0.  Message bytes are
 * given at M + offset from the table; bit positions count from the MSB.
 */
/* clang-format off */
static const uint8_t golden_req[256] = {
	[0] = 0x01, [1] = 0x07, [2] = 0x02, [3] = 0x03,
	[8] = 0x01, [9] = 0x02, [10] = 0x03, [11] = 0x04,
	[12] = 0x05, [13] = 0x06, [14] = 0x07, [15] = 0x08,
	[16] = 0x00, [17] = 0x10,
	/* 0, 32 bits: local_comm_id 0x11223344 */
	[M + 0] = 0x11, [M + 1] = 0x22, [M + 2] = 0x33, [M + 3] = 0x44,
	/* 4: reserved; 5, 24 bits: vendor_id 0x0002c9 */
	[M + 5] = 0x00, [M + 6] = 0x02, [M + 7] = 0xc9,
	/* 8, 64 bits: service_id 0x0000000001061d2f (TCP port 7471) */
	[M + 12] = 0x01, [M + 13] = 0x06, [M + 14] = 0x1d, [M + 15] = 0x2f,
	/* 16, 64 bits: local_ca_guid 0x0002c90300a1b2c3 */
	[M + 17] = 0x02, [M + 18] = 0xc9, [M + 19] = 0x03,
	[M + 21] = 0xa1, [M + 22] = 0xb2, [M + 23] = 0xc3,
	/* 24..27 reserved; 28, 32 bits: local_q_key 0x0badf00d */
	[M + 28] = 0x0b, [M + 29] = 0xad, [M + 30] = 0xf0, [M + 31] = 0x0d,
	/* 32, 24 bits: local_qpn 0x000123; 35: responder_resources 4 */
	[M + 33] = 0x01, [M + 34] = 0x23, [M + 35] = 0x04,
	/* 36, 24 bits: local_eecn 0x0a0b0c; 39: initiator_depth 2 */
	[M + 36] = 0x0a, [M + 37] = 0x0b, [M + 38] = 0x0c, [M + 39] = 0x02,
	/* 40, 24 bits: remote_eecn 0x0d0e0f */
	[M + 40] = 0x0d, [M + 41] = 0x0e, [M + 42] = 0x0f,
	/* 43: remote_cm_response_timeout 20 (bits 0-4: 10100), transport_service_type
	 * 1 = UC (bits 5-6: 01), end_to_end_flow_control 1 (bit 7) -> 1010 0011 */
	[M + 43] = 0xa3,
	/* 44, 24 bits: starting_psn 0xabcdef */
	[M + 44] = 0xab, [M + 45] = 0xcd, [M + 46] = 0xef,
	/* 47: local_cm_response_timeout 20 (10100), retry_count 7 (111) -> 1010 0111 */
	[M + 47] = 0xa7,
	/* 48, 16 bits: partition_key 0xffff */
	[M + 48] = 0xff, [M + 49] = 0xff,
	/* 50: path_packet_payload_mtu 4 = 2048 (0100), rdc_exists 0, rnr_retry_count
	 * 7 (111) -> 0100 0111 */
	[M + 50] = 0x47,
	/* 51: max_cm_retries 15 (1111), srq 1, extended_transport_type 0 -> 1111 1000 */
	[M + 51] = 0xf8,
	/* 52: primary_local_port_lid 0x0001; 54: primary_remote_port_lid 0x0002 */
	[M + 53] = 0x01, [M + 55] = 0x02,
	/* 56: primary_local_port_gid fe80::2:c903:a1:b2c3 */
	[M + 56] = 0xfe, [M + 57] = 0x80, [M + 65] = 0x02, [M + 66] = 0xc9, [M + 67] = 0x03,
	[M + 69] = 0xa1, [M + 70] = 0xb2, [M + 71] = 0xc3,
	/* 72: primary_remote_port_gid fe80::2:c903:d4:e5f6 */
	[M + 72] = 0xfe, [M + 73] = 0x80, [M + 81] = 0x02, [M + 82] = 0xc9, [M + 83] = 0x03,
	[M + 85] = 0xd4, [M + 86] = 0xe5, [M + 87] = 0xf6,
	/* 88, 20 bits: primary_flow_label 0x12345 -> 0001 0010 | 0011 0100 | 0101 ....;
	 * 90 bits 4-7 + 91 bits 0-1: reserved; 91 bits 2-7: primary_packet_rate 3 */
	[M + 88] = 0x12, [M + 89] = 0x34, [M + 90] = 0x50, [M + 91] = 0x03,
	/* 92: primary_traffic_class 0x20; 93: primary_hop_limit 0x40 */
	[M + 92] = 0x20, [M + 93] = 0x40,
	/* 94: primary_sl 5 (0101), primary_subnet_local 1, reserved -> 0101 1000 */
	[M + 94] = 0x58,
	/* 95: primary_local_ack_timeout 18 (10010), reserved -> 1001 0000 */
	[M + 95] = 0x90,
	/* 96: alternate_local_port_lid 0x0003; 98: alternate_remote_port_lid 0x0004 */
	[M + 97] = 0x03, [M + 99] = 0x04,
	/* 100..131: alternate GIDs zero; 132: alternate_flow_label 0xfffff, reserved,
	 * alternate_packet_rate 0x3f -> ff ff f0 3f */
	[M + 132] = 0xff, [M + 133] = 0xff, [M + 134] = 0xf0, [M + 135] = 0x3f,
	/* 138: alternate_sl 15 (1111), alternate_subnet_local 0 -> 1111 0000 */
	[M + 138] = 0xf0,
	/* 139: alternate_local_ack_timeout 31 (11111), sap_supported 1 (bit 5)
	 * -> 1111 1100 */
	[M + 139] = 0xfc,
	/* 140: private_data, starting "madcm" */
	[M + 140] = 'm', [M + 141] = 'a', [M + 142] = 'd', [M + 143] = 'c', [M + 144] = 'm',
};
/* clang-format on */

static void gid(uint8_t g[16], uint32_t low)
{
	static const uint8_t prefix[12] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03};

	memcpy(g, prefix, 12);
	g[12] = (uint8_t)(low >> 24);
	g[13] = (uint8_t)(low >> 16);
	g[14] = (uint8_t)(low >> 8);
	g[15] = (uint8_t)low;
}

#define SET(tab, id, v) assert_int_equal(mad_set(msg, tab, id, v), 0)

static void test_golden_req(void **state)
{
	uint8_t mad[256], *msg = mad + M, g[16];
	const struct mad_layout *l;

	(void)state;
	assert_int_equal(
	    cm_mad_init(mad, sizeof(mad), &cm_req_layout, CM_METHOD_SEND, 0x0102030405060708ull),
	    0);
	SET(cm_req_fields, CM_REQ_LOCAL_COMM_ID, 0x11223344);
	SET(cm_req_fields, CM_REQ_VENDOR_ID, 0x0002c9);
	SET(cm_req_fields, CM_REQ_SERVICE_ID, 0x0000000001061d2full);
	SET(cm_req_fields, CM_REQ_LOCAL_CA_GUID, 0x0002c90300a1b2c3ull);
	SET(cm_req_fields, CM_REQ_LOCAL_Q_KEY, 0x0badf00d);
	SET(cm_req_fields, CM_REQ_LOCAL_QPN, 0x000123);
	SET(cm_req_fields, CM_REQ_RESPONDER_RESOURCES, 4);
	SET(cm_req_fields, CM_REQ_LOCAL_EECN, 0x0a0b0c);
	SET(cm_req_fields, CM_REQ_INITIATOR_DEPTH, 2);
	SET(cm_req_fields, CM_REQ_REMOTE_EECN, 0x0d0e0f);
	SET(cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, 20);
	SET(cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE, CM_TRANSPORT_UC);
	SET(cm_req_fields, CM_REQ_END_TO_END_FLOW_CONTROL, 1);
	SET(cm_req_fields, CM_REQ_STARTING_PSN, 0xabcdef);
	SET(cm_req_fields, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, 20);
	SET(cm_req_fields, CM_REQ_RETRY_COUNT, 7);
	SET(cm_req_fields, CM_REQ_PARTITION_KEY, 0xffff);
	SET(cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU, 4);
	SET(cm_req_fields, CM_REQ_RNR_RETRY_COUNT, 7);
	SET(cm_req_fields, CM_REQ_MAX_CM_RETRIES, 15);
	SET(cm_req_fields, CM_REQ_SRQ, 1);
	SET(cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_LID, 1);
	SET(cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_LID, 2);
	gid(g, 0x00a1b2c3);
	mad_set_bytes(msg, cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_GID, g);
	gid(g, 0x00d4e5f6);
	mad_set_bytes(msg, cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_GID, g);
	SET(cm_req_fields, CM_REQ_PRIMARY_FLOW_LABEL, 0x12345);
	SET(cm_req_fields, CM_REQ_PRIMARY_PACKET_RATE, 3);
	SET(cm_req_fields, CM_REQ_PRIMARY_TRAFFIC_CLASS, 0x20);
	SET(cm_req_fields, CM_REQ_PRIMARY_HOP_LIMIT, 0x40);
	SET(cm_req_fields, CM_REQ_PRIMARY_SL, 5);
	SET(cm_req_fields, CM_REQ_PRIMARY_SUBNET_LOCAL, 1);
	SET(cm_req_fields, CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT, 18);
	SET(cm_req_fields, CM_REQ_ALTERNATE_LOCAL_PORT_LID, 3);
	SET(cm_req_fields, CM_REQ_ALTERNATE_REMOTE_PORT_LID, 4);
	SET(cm_req_fields, CM_REQ_ALTERNATE_FLOW_LABEL, 0xfffff);
	SET(cm_req_fields, CM_REQ_ALTERNATE_PACKET_RATE, 0x3f);
	SET(cm_req_fields, CM_REQ_ALTERNATE_SL, 15);
	SET(cm_req_fields, CM_REQ_ALTERNATE_LOCAL_ACK_TIMEOUT, 31);
	SET(cm_req_fields, CM_REQ_SAP_SUPPORTED, 1);
	assert_int_equal(cm_set_private_data(&cm_req_layout, msg, "madcm", 5), 0);
	assert_memory_equal(mad, golden_req, sizeof(mad));

	/* And decoding the hand-made bytes gives the values back. */
	assert_int_equal(cm_msg_check(golden_req, 256, &l), 0);
	assert_ptr_equal(l, &cm_req_layout);
	msg = (uint8_t *)golden_req + M;
	assert_int_equal(mad_get(msg, cm_req_fields, CM_REQ_LOCAL_QPN), 0x123);
	assert_int_equal(mad_get(msg, cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE), 1);
	assert_int_equal(mad_get(msg, cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT), 20);
	assert_int_equal(mad_get(msg, cm_req_fields, CM_REQ_PRIMARY_FLOW_LABEL), 0x12345);
	assert_int_equal(mad_get(msg, cm_req_fields, CM_REQ_PRIMARY_PACKET_RATE), 3);
	assert_int_equal(mad_get(msg, cm_req_fields, CM_REQ_RESERVED_90), 0);
	assert_int_equal(mad_get(msg, cm_req_fields, CM_REQ_SAP_SUPPORTED), 1);
	assert_true(mad_get(msg, cm_req_fields, CM_REQ_SERVICE_ID) == 0x0000000001061d2full);
}

/* REP (IBA Table 110), message bytes only. */
/* clang-format off */
static const uint8_t golden_rep[232] = {
	/* 0: local_comm_id 0x55667788; 4: remote_comm_id 0x11223344 */
	[0] = 0x55, [1] = 0x66, [2] = 0x77, [3] = 0x88,
	[4] = 0x11, [5] = 0x22, [6] = 0x33, [7] = 0x44,
	/* 8: local_q_key 0x12345678 */
	[8] = 0x12, [9] = 0x34, [10] = 0x56, [11] = 0x78,
	/* 12, 24 bits: local_qpn 0x000456; 15: vendor_id_h 0x00 */
	[13] = 0x04, [14] = 0x56,
	/* 16, 24 bits: local_ee_context_number 0x000789; 19: vendor_id_m 0x02 */
	[17] = 0x07, [18] = 0x89, [19] = 0x02,
	/* 20, 24 bits: starting_psn 0x123456; 23: vendor_id_l 0xc9 */
	[20] = 0x12, [21] = 0x34, [22] = 0x56, [23] = 0xc9,
	/* 24: responder_resources 4; 25: initiator_depth 3 */
	[24] = 0x04, [25] = 0x03,
	/* 26: target_ack_delay 15 (01111), failover_accepted 2 (10),
	 * end_to_end_flow_control 1 -> 0111 1101 */
	[26] = 0x7d,
	/* 27: rnr_retry_count 7 (111), srq 1 (bit 3), reserved -> 1111 0000 */
	[27] = 0xf0,
	/* 28: local_ca_guid 0x0002c90300d4e5f6 */
	[29] = 0x02, [30] = 0xc9, [31] = 0x03, [33] = 0xd4, [34] = 0xe5, [35] = 0xf6,
	/* 36: private_data "REP" */
	[36] = 'R', [37] = 'E', [38] = 'P',
};
/* clang-format on */

static void test_golden_rep(void **state)
{
	uint8_t msg[232] = {0};

	(void)state;
	SET(cm_rep_fields, CM_REP_LOCAL_COMM_ID, 0x55667788);
	SET(cm_rep_fields, CM_REP_REMOTE_COMM_ID, 0x11223344);
	SET(cm_rep_fields, CM_REP_LOCAL_Q_KEY, 0x12345678);
	SET(cm_rep_fields, CM_REP_LOCAL_QPN, 0x456);
	SET(cm_rep_fields, CM_REP_VENDOR_ID_H, 0x00);
	SET(cm_rep_fields, CM_REP_LOCAL_EE_CONTEXT_NUMBER, 0x789);
	SET(cm_rep_fields, CM_REP_VENDOR_ID_M, 0x02);
	SET(cm_rep_fields, CM_REP_STARTING_PSN, 0x123456);
	SET(cm_rep_fields, CM_REP_VENDOR_ID_L, 0xc9);
	SET(cm_rep_fields, CM_REP_RESPONDER_RESOURCES, 4);
	SET(cm_rep_fields, CM_REP_INITIATOR_DEPTH, 3);
	SET(cm_rep_fields, CM_REP_TARGET_ACK_DELAY, 15);
	SET(cm_rep_fields, CM_REP_FAILOVER_ACCEPTED, CM_FAILOVER_NOT_SUPPORTED);
	SET(cm_rep_fields, CM_REP_END_TO_END_FLOW_CONTROL, 1);
	SET(cm_rep_fields, CM_REP_RNR_RETRY_COUNT, 7);
	SET(cm_rep_fields, CM_REP_SRQ, 1);
	SET(cm_rep_fields, CM_REP_LOCAL_CA_GUID, 0x0002c90300d4e5f6ull);
	assert_int_equal(cm_set_private_data(&cm_rep_layout, msg, "REP", 3), 0);
	assert_memory_equal(msg, golden_rep, sizeof(msg));
	assert_int_equal(mad_get(golden_rep, cm_rep_fields, CM_REP_TARGET_ACK_DELAY), 15);
	assert_int_equal(mad_get(golden_rep, cm_rep_fields, CM_REP_FAILOVER_ACCEPTED), 2);
	assert_int_equal(mad_get(golden_rep, cm_rep_fields, CM_REP_SRQ), 1);
}

/* REJ (IBA Table 108), message bytes only. */
/* clang-format off */
static const uint8_t golden_rej[232] = {
	/* 0: local_comm_id 0x55667788; 4: remote_comm_id 0x11223344 */
	[0] = 0x55, [1] = 0x66, [2] = 0x77, [3] = 0x88,
	[4] = 0x11, [5] = 0x22, [6] = 0x33, [7] = 0x44,
	/* 8: message_rejected 2 = other (bits 0-1: 10), reserved -> 1000 0000 */
	[8] = 0x80,
	/* 9: reject_info_length 16 (bits 0-6: 0010000), reserved bit 7 -> 0010 0000 */
	[9] = 0x20,
	/* 10, 16 bits: reason 28 = consumer defined */
	[10] = 0x00, [11] = 0x1c,
	/* 12: ari, 16 bytes used: a0 a1 ... af */
	[12] = 0xa0, [13] = 0xa1, [14] = 0xa2, [15] = 0xa3, [16] = 0xa4, [17] = 0xa5,
	[18] = 0xa6, [19] = 0xa7, [20] = 0xa8, [21] = 0xa9, [22] = 0xaa, [23] = 0xab,
	[24] = 0xac, [25] = 0xad, [26] = 0xae, [27] = 0xaf,
	/* 84: private_data "no" */
	[84] = 'n', [85] = 'o',
};
/* clang-format on */

static void test_golden_rej(void **state)
{
	uint8_t msg[232] = {0}, ari[72] = {0};

	(void)state;
	for (int i = 0; i < 16; i++)
		ari[i] = (uint8_t)(0xa0 + i);
	SET(cm_rej_fields, CM_REJ_LOCAL_COMM_ID, 0x55667788);
	SET(cm_rej_fields, CM_REJ_REMOTE_COMM_ID, 0x11223344);
	SET(cm_rej_fields, CM_REJ_MESSAGE_REJECTED, CM_MSG_REF_OTHER);
	SET(cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH, 16);
	SET(cm_rej_fields, CM_REJ_REASON, CM_REJ_CONSUMER_DEFINED);
	mad_set_bytes(msg, cm_rej_fields, CM_REJ_ARI, ari);
	assert_int_equal(cm_set_private_data(&cm_rej_layout, msg, "no", 2), 0);
	assert_memory_equal(msg, golden_rej, sizeof(msg));
	assert_int_equal(mad_get(golden_rej, cm_rej_fields, CM_REJ_REJECT_INFO_LENGTH), 16);
	assert_int_equal(mad_get(golden_rej, cm_rej_fields, CM_REJ_REASON), 28);
}

/* DREQ (IBA Table 112), message bytes only. */
/* clang-format off */
static const uint8_t golden_dreq[232] = {
	/* 0: local_comm_id 0x11223344; 4: remote_comm_id 0x55667788 */
	[0] = 0x11, [1] = 0x22, [2] = 0x33, [3] = 0x44,
	[4] = 0x55, [5] = 0x66, [6] = 0x77, [7] = 0x88,
	/* 8, 24 bits: remote_qpn_eecn 0x000456; 11: reserved */
	[8] = 0x00, [9] = 0x04, [10] = 0x56, [11] = 0x00,
	/* 12: private_data "bye" */
	[12] = 'b', [13] = 'y', [14] = 'e',
};
/* clang-format on */

static void test_golden_dreq(void **state)
{
	uint8_t msg[232] = {0};

	(void)state;
	SET(cm_dreq_fields, CM_DREQ_LOCAL_COMM_ID, 0x11223344);
	SET(cm_dreq_fields, CM_DREQ_REMOTE_COMM_ID, 0x55667788);
	SET(cm_dreq_fields, CM_DREQ_REMOTE_QPN_EECN, 0x456);
	assert_int_equal(cm_set_private_data(&cm_dreq_layout, msg, "bye", 3), 0);
	assert_memory_equal(msg, golden_dreq, sizeof(msg));
}

/* SIDR_REQ (IBA Table 119), message bytes only. */
/* clang-format off */
static const uint8_t golden_sidr_req[232] = {
	/* 0: request_id 0xdeadbeef */
	[0] = 0xde, [1] = 0xad, [2] = 0xbe, [3] = 0xef,
	/* 4, 16 bits: partition_key 0x8001; 6..7 reserved */
	[4] = 0x80, [5] = 0x01,
	/* 8, 64 bits: service_id 0x0000000001111234 (UDP port 0x1234) */
	[12] = 0x01, [13] = 0x11, [14] = 0x12, [15] = 0x34,
	/* 16: private_data 01 02 03 */
	[16] = 0x01, [17] = 0x02, [18] = 0x03,
};
/* clang-format on */

static void test_golden_sidr_req(void **state)
{
	uint8_t msg[232] = {0};
	static const uint8_t pd[3] = {1, 2, 3};

	(void)state;
	SET(cm_sidr_req_fields, CM_SIDR_REQ_REQUEST_ID, 0xdeadbeef);
	SET(cm_sidr_req_fields, CM_SIDR_REQ_PARTITION_KEY, 0x8001);
	SET(cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID, 0x0000000001111234ull);
	assert_int_equal(cm_set_private_data(&cm_sidr_req_layout, msg, pd, 3), 0);
	assert_memory_equal(msg, golden_sidr_req, sizeof(msg));
}

/* SIDR_REP kernel ECE split: vendor_id_h is 16 bits at 6, vendor_id_l at 11. */
static void test_sidr_rep_offsets(void **state)
{
	uint8_t msg[232] = {0};

	(void)state;
	SET(cm_sidr_rep_fields, CM_SIDR_REP_STATUS, CM_SIDR_REDIRECT);
	SET(cm_sidr_rep_fields, CM_SIDR_REP_ADDITIONAL_INFO_LENGTH, 72);
	SET(cm_sidr_rep_fields, CM_SIDR_REP_VENDOR_ID_H, 0x0002);
	SET(cm_sidr_rep_fields, CM_SIDR_REP_QPN, 0xabcdef);
	SET(cm_sidr_rep_fields, CM_SIDR_REP_VENDOR_ID_L, 0xc9);
	SET(cm_sidr_rep_fields, CM_SIDR_REP_Q_KEY, 0x80010000);
	assert_int_equal(msg[4], 4);
	assert_int_equal(msg[5], 72);
	assert_int_equal(msg[7], 0x02);
	assert_int_equal(msg[8], 0xab);
	assert_int_equal(msg[10], 0xef);
	assert_int_equal(msg[11], 0xc9);
	assert_int_equal(msg[20], 0x80);
	assert_int_equal(msg[22], 0x00);
	assert_int_equal(cm_sidr_rep_fields[CM_SIDR_REP_CLASS_PORT_INFO].byte, 24);
	assert_int_equal(cm_sidr_rep_fields[CM_SIDR_REP_PRIVATE_DATA].byte, 96);
}

/* LAP (IBA Table 115): the alternate path fields in their own order. */
static void test_lap_offsets(void **state)
{
	uint8_t msg[232] = {0};

	(void)state;
	SET(cm_lap_fields, CM_LAP_REMOTE_QPN_EECN, 0x123456);
	SET(cm_lap_fields, CM_LAP_REMOTE_CM_RESPONSE_TIMEOUT, 31);
	SET(cm_lap_fields, CM_LAP_ALTERNATE_FLOW_LABEL, 0xabcde);
	SET(cm_lap_fields, CM_LAP_ALTERNATE_TRAFFIC_CLASS, 0x77);
	SET(cm_lap_fields, CM_LAP_ALTERNATE_HOP_LIMIT, 0x88);
	SET(cm_lap_fields, CM_LAP_ALTERNATE_PACKET_RATE, 0x3f);
	SET(cm_lap_fields, CM_LAP_ALTERNATE_SL, 0xf);
	SET(cm_lap_fields, CM_LAP_ALTERNATE_SUBNET_LOCAL, 1);
	SET(cm_lap_fields, CM_LAP_ALTERNATE_LOCAL_ACK_TIMEOUT, 31);
	assert_int_equal(msg[12], 0x12);
	assert_int_equal(msg[14], 0x56);
	assert_int_equal(msg[15], 0xf8); /* 11111 000 */
	assert_int_equal(msg[56], 0xab);
	assert_int_equal(msg[57], 0xcd);
	assert_int_equal(msg[58], 0xe0); /* e then 4 reserved bits */
	assert_int_equal(msg[59], 0x77);
	assert_int_equal(msg[60], 0x88);
	assert_int_equal(msg[61], 0x3f); /* 2 reserved bits, rate */
	assert_int_equal(msg[62], 0xf8); /* 1111 1 000 */
	assert_int_equal(msg[63], 0xf8);
}

/* MRA (IBA Table 107) and APR (Table 116): bytes by hand. */
static void test_mra_apr_offsets(void **state)
{
	uint8_t msg[232] = {0};

	(void)state;
	SET(cm_mra_fields, CM_MRA_MESSAGE_MRAED, CM_MSG_REF_LAP); /* 10 ...... */
	SET(cm_mra_fields, CM_MRA_SERVICE_TIMEOUT, 24);		  /* 11000 ... */
	assert_int_equal(msg[8], 0x80);
	assert_int_equal(msg[9], 0xc0);
	assert_int_equal(cm_mra_fields[CM_MRA_PRIVATE_DATA].byte, 10);

	memset(msg, 0, sizeof(msg));
	SET(cm_apr_fields, CM_APR_ADDITIONAL_INFO_LENGTH, 16);
	SET(cm_apr_fields, CM_APR_AP_STATUS, CM_APR_INVALID_GID);
	assert_int_equal(msg[8], 16);
	assert_int_equal(msg[9], 8);
	assert_int_equal(cm_apr_fields[CM_APR_ADDITIONAL_INFO].byte, 12);
	assert_int_equal(cm_apr_fields[CM_APR_PRIVATE_DATA].byte, 84);
}

/* ---- cm_msg_check ---- */

static void make(uint8_t mad[256], const struct mad_layout *l, uint8_t method)
{
	assert_int_equal(cm_mad_init(mad, 256, l, method, 1), 0);
}

static void test_msg_check(void **state)
{
	uint8_t mad[257];
	const struct mad_layout *l = &cm_req_layout;

	(void)state;
	for (const struct mad_layout *const *p = cm_wire_layouts; *p; p++) {
		make(mad, *p, *p == &cm_class_port_info_layout ? CM_METHOD_GET : CM_METHOD_SEND);
		assert_int_equal(cm_msg_check(mad, 256, &l), 0);
		assert_ptr_equal(l, *p);
	}
	make(mad, &cm_req_layout, CM_METHOD_SEND);
	assert_int_equal(cm_msg_check(mad, 256, NULL), 0);
	assert_int_equal(cm_msg_check(NULL, 256, &l), -EINVAL);
	assert_null(l);
	assert_int_equal(cm_msg_check(mad, 255, &l), -EINVAL);
	assert_int_equal(cm_msg_check(mad, 257, &l), -EINVAL);
	assert_int_equal(cm_msg_check(mad, 0, &l), -EINVAL);

	mad[0] = 2; /* base version */
	assert_int_equal(cm_msg_check(mad, 256, &l), -EPROTO);
	mad[0] = 1;
	mad[1] = 0x03; /* SA class */
	assert_int_equal(cm_msg_check(mad, 256, &l), -EPROTO);
	mad[1] = 0x07;
	mad[2] = 1; /* class version */
	assert_int_equal(cm_msg_check(mad, 256, &l), -EPROTO);
	mad[2] = 2;
	mad[17] = 0x1b; /* attribute after APR */
	assert_int_equal(cm_msg_check(mad, 256, &l), -ENOMSG);
	mad[17] = 0x00;
	assert_int_equal(cm_msg_check(mad, 256, &l), -ENOMSG);
	mad[17] = 0x10;
	assert_int_equal(cm_msg_check(mad, 256, &l), 0);

	/* Methods: protocol messages are Send only; ClassPortInfo Get/Set/GetResp. */
	static const uint8_t bad_for_send[] = {0x01, 0x02, 0x81, 0x83, 0x05, 0x06, 0x7f};
	for (size_t i = 0; i < sizeof(bad_for_send); i++) {
		mad[3] = bad_for_send[i];
		assert_int_equal(cm_msg_check(mad, 256, &l), -EOPNOTSUPP);
	}
	make(mad, &cm_class_port_info_layout, CM_METHOD_SEND);
	assert_int_equal(cm_msg_check(mad, 256, &l), -EOPNOTSUPP);
	make(mad, &cm_class_port_info_layout, CM_METHOD_SET);
	assert_int_equal(cm_msg_check(mad, 256, &l), 0);
	make(mad, &cm_class_port_info_layout, CM_METHOD_GET_RESP);
	assert_int_equal(cm_msg_check(mad, 256, &l), 0);
}

/* Length fields may not claim more than the 72-byte blocks hold. */
static void test_msg_check_lengths(void **state)
{
	static const struct {
		const struct mad_layout *l;
		const struct mad_field *f;
	} rules[] = {
	    {&cm_rej_layout, &cm_rej_fields[CM_REJ_REJECT_INFO_LENGTH]},
	    {&cm_apr_layout, &cm_apr_fields[CM_APR_ADDITIONAL_INFO_LENGTH]},
	    {&cm_sidr_rep_layout, &cm_sidr_rep_fields[CM_SIDR_REP_ADDITIONAL_INFO_LENGTH]},
	};
	uint8_t mad[256];
	const struct mad_layout *l;

	(void)state;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		make(mad, rules[i].l, CM_METHOD_SEND);
		assert_int_equal(mad_field_set(mad + M, rules[i].f, 72), 0);
		assert_int_equal(cm_msg_check(mad, 256, &l), 0);
		assert_int_equal(mad_field_set(mad + M, rules[i].f, 73), 0);
		assert_int_equal(cm_msg_check(mad, 256, &l), -EBADMSG);
		assert_null(l);
	}
	/* The same byte in another message means something else: no rule. */
	make(mad, &cm_rep_layout, CM_METHOD_SEND);
	mad[M + 9] = 0xff;
	mad[M + 8] = 0xff;
	mad[M + 5] = 0xff;
	assert_int_equal(cm_msg_check(mad, 256, &l), 0);
}

static void test_mad_init(void **state)
{
	uint8_t mad[256];

	(void)state;
	memset(mad, 0xee, sizeof(mad));
	assert_int_equal(
	    cm_mad_init(mad, 256, &cm_dreq_layout, CM_METHOD_SEND, 0xaabbccdd11223344ull), 0);
	static const uint8_t hdr[24] = {1,    7,    2,	  3,	0,    0,    0,	  0,
					0xaa, 0xbb, 0xcc, 0xdd, 0x11, 0x22, 0x33, 0x44,
					0x00, 0x15, 0,	  0,	0,    0,    0,	  0};
	assert_memory_equal(mad, hdr, 24);
	for (int i = 24; i < 256; i++)
		assert_int_equal(mad[i], 0);
	assert_int_equal(cm_mad_init(mad, 255, &cm_dreq_layout, CM_METHOD_SEND, 0), -EINVAL);
	assert_int_equal(cm_mad_init(NULL, 256, &cm_dreq_layout, CM_METHOD_SEND, 0), -EINVAL);
	assert_int_equal(cm_mad_init(mad, 256, NULL, CM_METHOD_SEND, 0), -EINVAL);
}

/* ---- names and timeouts ---- */

static void test_names(void **state)
{
	(void)state;
	assert_null(cm_rej_reason_name(0));
	assert_string_equal(cm_rej_reason_name(1), "no_qp");
	assert_string_equal(cm_rej_reason_name(8), "invalid_service_id");
	assert_string_equal(cm_rej_reason_name(10), "stale_conn");
	assert_string_equal(cm_rej_reason_name(28), "consumer_defined");
	assert_string_equal(cm_rej_reason_name(30), "duplicate_local_comm_id");
	assert_string_equal(cm_rej_reason_name(33), "invalid_alt_flow_label");
	assert_null(cm_rej_reason_name(34));
	assert_string_equal(cm_rej_reason_name(35), "vendor_option_not_supported");
	assert_null(cm_rej_reason_name(36));
	assert_null(cm_rej_reason_name(0xffff));
	for (unsigned r = 1; r <= 33; r++)
		assert_non_null(cm_rej_reason_name(r));

	assert_string_equal(cm_mra_message_name(2), "LAP");
	assert_null(cm_mra_message_name(3));
	assert_string_equal(cm_rej_message_name(2), "other");
	assert_string_equal(cm_sidr_status_name(4), "redirect");
	assert_null(cm_sidr_status_name(6));
	assert_string_equal(cm_apr_status_name(13), "invalid_sl");
	assert_null(cm_apr_status_name(14));
	assert_string_equal(cm_transport_name(0), "RC");
	assert_string_equal(cm_transport_name(3), "extended");
	assert_null(cm_transport_name(4));

	/* The generic lookup a decoder uses. */
	assert_string_equal(cm_field_value_name(&cm_rej_layout, CM_REJ_REASON, 28),
			    "consumer_defined");
	assert_string_equal(cm_field_value_name(&cm_apr_layout, CM_APR_AP_STATUS, 5), "is_current");
	assert_string_equal(cm_field_value_name(&cm_req_layout, CM_REQ_TRANSPORT_SERVICE_TYPE, 1),
			    "UC");
	assert_string_equal(cm_field_value_name(&cm_sidr_rep_layout, CM_SIDR_REP_STATUS, 3),
			    "no_qp");
	assert_string_equal(cm_field_value_name(&cm_mra_layout, CM_MRA_MESSAGE_MRAED, 1), "REP");
	assert_null(cm_field_value_name(&cm_rej_layout, CM_REJ_REASON, 0x10001c));
	assert_null(cm_field_value_name(&cm_rej_layout, CM_REJ_ARI, 1));
	assert_null(cm_field_value_name(&cm_rep_layout, CM_REP_SRQ, 1));
	assert_null(cm_field_value_name(NULL, 0, 0));
}

static void test_timeouts(void **state)
{
	(void)state;
	assert_true(cm_timeout_ns(0) == 4096);
	assert_true(cm_timeout_ns(1) == 8192);
	assert_true(cm_timeout_ns(20) == 4294967296ull); /* ~4.3 s, rdma_cm's default */
	assert_true(cm_timeout_ns(31) == 4096ull << 31);
	assert_true(cm_timeout_ns(32) == 0);
	assert_int_equal(cm_timeout_from_ns(0), 0);
	assert_int_equal(cm_timeout_from_ns(4096), 0);
	assert_int_equal(cm_timeout_from_ns(4097), 1);
	assert_int_equal(cm_timeout_from_ns(4294967296ull), 20);
	assert_int_equal(cm_timeout_from_ns(4294967297ull), 21);
	assert_int_equal(cm_timeout_from_ns(UINT64_MAX), 31);
	for (unsigned t = 0; t <= 31; t++)
		assert_int_equal(cm_timeout_from_ns(cm_timeout_ns(t)), t);
	/* Against the definition (the smallest t with 4096 << t >= ns),
	 * at every power of two and either side of it. */
	for (unsigned b = 0; b < 64; b++)
		for (int d = -1; d <= 1; d++) {
			uint64_t ns = (1ull << b) + (uint64_t)(int64_t)d;
			unsigned want = 0;

			while (want < 31 && (4096ull << want) < ns)
				want++;
			assert_int_equal(cm_timeout_from_ns(ns), want);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layouts_valid),
	    cmocka_unit_test(test_layouts_cover_every_bit),
	    cmocka_unit_test(test_attr_ids),
	    cmocka_unit_test(test_round_trip_every_field),
	    cmocka_unit_test(test_all_ones),
	    cmocka_unit_test(test_field_limits),
	    cmocka_unit_test(test_private_data_sizes),
	    cmocka_unit_test(test_golden_req),
	    cmocka_unit_test(test_golden_rep),
	    cmocka_unit_test(test_golden_rej),
	    cmocka_unit_test(test_golden_dreq),
	    cmocka_unit_test(test_golden_sidr_req),
	    cmocka_unit_test(test_sidr_rep_offsets),
	    cmocka_unit_test(test_lap_offsets),
	    cmocka_unit_test(test_mra_apr_offsets),
	    cmocka_unit_test(test_msg_check),
	    cmocka_unit_test(test_msg_check_lengths),
	    cmocka_unit_test(test_mad_init),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_timeouts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
