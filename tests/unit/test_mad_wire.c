/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * MAD common header, RMPP header and ClassPortInfo: table sanity, round
 * trips of every field, golden bytes worked out by hand from the IBA
 * tables, range limits, mad_hdr_check() rejections, and a cross-check
 * against libibmad's independent field tables.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include <infiniband/mad.h>

#include "mad/mad_wire.h"
#include "tests/unit/layout_check.h"

static void test_layouts_validate(void **state)
{
	const char *why = NULL;
	unsigned n = 0;

	(void)state;
	for (const struct mad_layout *const *l = mad_wire_layouts; *l; l++, n++) {
		if (mad_layout_validate(*l, &why))
			fail_msg("%s: %s", (*l)->name, why);
		assert_non_null((*l)->name);
	}
	assert_int_equal(n, 3);
	assert_int_equal(mad_hdr_layout.size, 24);
	assert_int_equal(mad_rmpp_layout.mad_offset + mad_rmpp_layout.size, 36);
	assert_int_equal(mad_cpi_layout.size, 72);
}

static void test_round_trip(void **state)
{
	(void)state;
	for (const struct mad_layout *const *l = mad_wire_layouts; *l; l++) {
		layout_round_trip(*l, 0x00);
		layout_round_trip(*l, 0xff);
	}
}

static void test_boundaries(void **state)
{
	(void)state;
	for (const struct mad_layout *const *l = mad_wire_layouts; *l; l++)
		layout_boundaries(*l);
	/* Spot checks with names: a 7-bit method, a 24-bit QP. */
	uint8_t buf[MAD_CPI_SIZE] = {0};
	assert_int_equal(mad_set(buf, mad_hdr_fields, MAD_HDR_METHOD, 0x7f), 0);
	assert_int_equal(mad_set(buf, mad_hdr_fields, MAD_HDR_METHOD, 0x80), -ERANGE);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_QP, 0xffffff), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_QP, 0x1000000), -ERANGE);
	assert_int_equal(mad_set(buf, mad_rmpp_fields, MAD_RMPP_R_RESP_TIME, 0x1f), 0);
	assert_int_equal(mad_set(buf, mad_rmpp_fields, MAD_RMPP_R_RESP_TIME, 0x20), -ERANGE);
}

/*
 * MAD common header, IBA 13.4.3, derived by hand:
 *   0: BaseVersion = 0x01
 *   1: MgmtClass = 0x07 (CM)
 *   2: ClassVersion = 0x02
 *   3: R = 1 (bit 7), Method = 0x03 (bits 6..0)    -> 0x83
 *   4: Status = 0x001c (invalid field, code 7 << 2) -> 00 1c
 *   6: ClassSpecific = 0xa55a                       -> a5 5a
 *   8: TransactionID = 0x0102030405060708           -> 01 .. 08
 *  16: AttributeID = 0x0010 (REQ)                   -> 00 10
 *  18: Reserved = 0                                 -> 00 00
 *  20: AttributeModifier = 0xdeadbeef               -> de ad be ef
 */
/* clang-format off */
static const uint8_t golden_hdr[24] = {
	0x01, 0x07, 0x02, 0x83, 0x00, 0x1c, 0xa5, 0x5a, 0x01, 0x02, 0x03, 0x04,
	0x05, 0x06, 0x07, 0x08, 0x00, 0x10, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef,
};
/* clang-format on */

static void test_golden_hdr(void **state)
{
	uint8_t buf[MAD_SIZE];

	(void)state;
	assert_int_equal(mad_hdr_init(buf, sizeof(buf), MAD_CLASS_CM, 2, 0x83,
				      0x0102030405060708ull, 0x0010, 0xdeadbeef),
			 0);
	assert_int_equal(mad_set(buf, mad_hdr_fields, MAD_HDR_STATUS, 0x001c), 0);
	assert_int_equal(mad_set(buf, mad_hdr_fields, MAD_HDR_CLASS_SPECIFIC, 0xa55a), 0);
	assert_memory_equal(buf, golden_hdr, sizeof(golden_hdr));
	for (size_t i = 24; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0);
	/* And decode the hand-made bytes. */
	assert_int_equal(mad_get(golden_hdr, mad_hdr_fields, MAD_HDR_R), 1);
	assert_int_equal(mad_get(golden_hdr, mad_hdr_fields, MAD_HDR_METHOD), 3);
	assert_true(mad_get(golden_hdr, mad_hdr_fields, MAD_HDR_TRANSACTION_ID) ==
		    0x0102030405060708ull);
	assert_string_equal(mad_status_code_name(0x001c),
			    "invalid attribute or attribute modifier");
}

/*
 * RMPP header, IBA 13.6.2.1, bytes 24..35 of the MAD, by hand:
 *  24: RMPPVersion = 1
 *  25: RMPPType = 2 (ACK)
 *  26: RRespTime = 0x0e (bits 7..3), RMPPFlags = 0x3 (Active|First, bits 2..0)
 *      -> 0x0e << 3 | 3 = 0x73
 *  27: RMPPStatus = 0
 *  28: Data1/SegmentNumber = 5            -> 00 00 00 05
 *  32: Data2/NewWindowLast = 0x00000104   -> 00 00 01 04
 */
/* clang-format off */
static const uint8_t golden_rmpp[12] = {
	0x01, 0x02, 0x73, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x01, 0x04,
};
/* clang-format on */

static void test_golden_rmpp(void **state)
{
	uint8_t buf[MAD_RMPP_HDR_SIZE] = {0};

	(void)state;
	assert_int_equal(mad_set(buf, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, 1), 0);
	assert_int_equal(mad_set(buf, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, MAD_RMPP_TYPE_ACK), 0);
	assert_int_equal(mad_set(buf, mad_rmpp_fields, MAD_RMPP_R_RESP_TIME, 0x0e), 0);
	assert_int_equal(mad_set(buf, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS,
				 MAD_RMPP_FLAG_ACTIVE | MAD_RMPP_FLAG_FIRST),
			 0);
	assert_int_equal(mad_set(buf, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, 5), 0);
	assert_int_equal(mad_set(buf, mad_rmpp_fields, MAD_RMPP_NEW_WINDOW_LAST, 0x104), 0);
	assert_memory_equal(buf, golden_rmpp, sizeof(buf));
	assert_int_equal(mad_get(golden_rmpp, mad_rmpp_fields, MAD_RMPP_DATA2), 0x104);
}

/*
 * ClassPortInfo, IBA 13.4.8.1, by hand (offsets within it):
 *   0: BaseVersion = 1, 1: ClassVersion = 2, 2: CapabilityMask = 0x0003
 *   4: CapabilityMask2 = 0x0000001 (27 bits), RespTimeValue = 0x12 (5 bits)
 *      -> (1 << 5) | 0x12 = 0x00000032
 *   8: RedirectGID = fe80::1 -> fe 80 00 .. 00 01
 *  24: RedirectTC = 0x40; 25: RedirectSL = 0xa (bits 7..4), RedirectFL =
 *      0x12345 (20 bits) -> 25: 0xa1, 26: 0x23, 27: 0x45
 *  28: RedirectLID = 0x0102; 30: RedirectP_Key = 0xffff
 *  32: Reserved = 0, RedirectQP = 0xabcdef -> 00 ab cd ef
 *  36: RedirectQ_Key = 0x80010000
 *  40..63: Trap* = 0 except 64: TrapHL = 0x40, TrapQP = 1 -> 40 00 00 01
 *  68: TrapQ_Key = 0x80010000
 */
/* clang-format off */
static const uint8_t golden_cpi[MAD_CPI_SIZE] = {
	[0] = 0x01, [1] = 0x02, [2] = 0x00, [3] = 0x03, [4] = 0x00, [5] = 0x00, [6] = 0x00,
	[7] = 0x32, [8] = 0xfe, [9] = 0x80, [23] = 0x01, [24] = 0x40, [25] = 0xa1, [26] = 0x23,
	[27] = 0x45, [28] = 0x01, [29] = 0x02, [30] = 0xff, [31] = 0xff, [33] = 0xab, [34] = 0xcd,
	[35] = 0xef, [36] = 0x80, [37] = 0x01, [64] = 0x40, [67] = 0x01, [68] = 0x80, [69] = 0x01,
};
/* clang-format on */

static void test_golden_cpi(void **state)
{
	uint8_t buf[MAD_CPI_SIZE] = {0}, gid[16] = {0xfe, 0x80, [15] = 0x01};

	(void)state;
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_BASE_VERSION, 1), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_CLASS_VERSION, 2), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_CAPABILITY_MASK,
				 MAD_CPI_CAP_TRAP | MAD_CPI_CAP_NOTICE),
			 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_CAPABILITY_MASK2, 1), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_RESP_TIME_VALUE, 0x12), 0);
	mad_set_bytes(buf, mad_cpi_fields, MAD_CPI_REDIRECT_GID, gid);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_TC, 0x40), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_SL, 0xa), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_FL, 0x12345), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_LID, 0x0102), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_P_KEY, 0xffff), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_QP, 0xabcdef), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_REDIRECT_Q_KEY, 0x80010000), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_TRAP_HL, 0x40), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_TRAP_QP, 1), 0);
	assert_int_equal(mad_set(buf, mad_cpi_fields, MAD_CPI_TRAP_Q_KEY, 0x80010000), 0);
	assert_memory_equal(buf, golden_cpi, sizeof(buf));
}

static void put_hdr(uint8_t *mad, uint8_t base, uint8_t mgmt_class, uint8_t cv)
{
	memset(mad, 0, MAD_SIZE);
	mad[0] = base;
	mad[1] = mgmt_class;
	mad[2] = cv;
	mad[3] = MAD_METHOD_GET;
}

static void test_hdr_check(void **state)
{
	uint8_t mad[512];

	(void)state;
	put_hdr(mad, 1, MAD_CLASS_CM, 2);
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), 0);
	assert_int_equal(mad_hdr_check(mad, 24), 0);
	assert_int_equal(mad_hdr_check(NULL, MAD_SIZE), -EINVAL);
	assert_int_equal(mad_hdr_check(mad, 23), -EINVAL);
	assert_int_equal(mad_hdr_check(mad, 0), -EINVAL);
	assert_int_equal(mad_hdr_check(mad, 257), -EINVAL); /* CM has no RMPP */

	put_hdr(mad, 2, MAD_CLASS_CM, 2); /* base version */
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 0x80, MAD_CLASS_CM, 2); /* OPA base version */
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 1, MAD_CLASS_CM, 1); /* class versions, per class */
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 1, MAD_CLASS_SUBN_ADM, 1);
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 1, MAD_CLASS_SUBN_ADM, 2);
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), 0);
	put_hdr(mad, 1, MAD_CLASS_SUBN_LID_ROUTED, 2);
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 1, MAD_CLASS_SUBN_DIRECTED_ROUTE, 1);
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), 0);
	put_hdr(mad, 1, MAD_CLASS_PERF_MGMT, 2);
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 1, 0x02, 1); /* reserved classes */
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 1, 0x00, 1);
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 1, 0x90, 1);
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	put_hdr(mad, 1, 0x31, 7); /* vendor: any class version */
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), 0);

	/* Longer than a MAD only as a reassembled, active RMPP transfer. */
	put_hdr(mad, 1, MAD_CLASS_SUBN_ADM, 2);
	assert_int_equal(mad_hdr_check(mad, 300), -EINVAL);
	mad[24] = MAD_RMPP_VERSION;
	mad[25] = MAD_RMPP_TYPE_DATA;
	mad[26] = MAD_RMPP_FLAG_ACTIVE | MAD_RMPP_FLAG_FIRST | MAD_RMPP_FLAG_LAST;
	assert_int_equal(mad_hdr_check(mad, 300), 0);
	mad[24] = 2; /* RMPP version */
	assert_int_equal(mad_hdr_check(mad, 300), -EPROTO);
	mad[24] = 1;
	mad[25] = 5; /* RMPP type */
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	mad[25] = 0;
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), -EPROTO);
	/* Inactive RMPP header: the other fields are not looked at. */
	mad[26] = 0;
	assert_int_equal(mad_hdr_check(mad, MAD_SIZE), 0);
	/* SA header cut short: the RMPP part is not read past len. */
	assert_int_equal(mad_hdr_check(mad, 30), 0);
}

static void test_hdr_init(void **state)
{
	uint8_t mad[MAD_SIZE];

	(void)state;
	assert_int_equal(mad_hdr_init(NULL, MAD_SIZE, 3, 2, 1, 1, 1, 0), -EINVAL);
	assert_int_equal(mad_hdr_init(mad, 23, 3, 2, 1, 1, 1, 0), -EINVAL);
	assert_int_equal(mad_hdr_init(mad, sizeof(mad), MAD_CLASS_SUBN_ADM, 2,
				      MAD_METHOD_GET_TABLE_RESP, 42, 0x35, 0),
			 0);
	assert_int_equal(mad_hdr_check(mad, sizeof(mad)), 0);
	assert_int_equal(mad[3], 0x92);
	assert_string_equal(mad_method_name(mad[3]), "GetTableResp");
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(mad_class_name(MAD_CLASS_CM), "ComMgmt");
	assert_string_equal(mad_class_name(MAD_CLASS_SUBN_ADM), "SubnAdm");
	assert_string_equal(mad_class_name(0x0a), "vendor");
	assert_string_equal(mad_class_name(0x20), "application");
	assert_string_equal(mad_class_name(0x02), "reserved");
	assert_string_equal(mad_method_name(0x86), "ReportResp");
	assert_string_equal(mad_method_name(0x7f), "unknown");
	assert_string_equal(mad_rmpp_type_name(MAD_RMPP_TYPE_ABORT), "ABORT");
	assert_string_equal(mad_rmpp_type_name(9), "unknown");
	assert_string_equal(mad_rmpp_status_name(MAD_RMPP_STATUS_TMR), "too many retries");
	assert_string_equal(mad_rmpp_status_name(50), "unknown");
	assert_string_equal(mad_status_code_name(0x0004), "bad base or class version");
	assert_string_equal(mad_status_code_name(0x0010), "reserved");
	for (unsigned v = 0; v < 256; v++) {
		assert_non_null(mad_class_name((uint8_t)v));
		assert_non_null(mad_method_name((uint8_t)v));
		assert_non_null(mad_rmpp_type_name((uint8_t)v));
		assert_non_null(mad_rmpp_status_name((uint8_t)v));
	}
	assert_true(mad_class_has_rmpp(MAD_CLASS_SUBN_ADM));
	assert_false(mad_class_has_rmpp(MAD_CLASS_CM));
}

/*
 * libibmad (rdma-core) is an independent implementation of the same
 * tables: what we encode it must decode, and the reverse.
 */
static void test_libibmad_hdr(void **state)
{
	uint8_t mad[MAD_SIZE] = {0}, mine[MAD_SIZE] = {0};

	(void)state;
	assert_int_equal(mad_hdr_init(mine, sizeof(mine), MAD_CLASS_SUBN_ADM, 2, 0x92,
				      0x1122334455667788ull, 0x0035, 0xa1b2c3d4),
			 0);
	assert_int_equal(mad_set(mine, mad_hdr_fields, MAD_HDR_STATUS, 0x0300), 0);
	assert_int_equal(mad_get_field(mine, 0, IB_MAD_BASEVER_F), 1);
	assert_int_equal(mad_get_field(mine, 0, IB_MAD_MGMTCLASS_F), 3);
	assert_int_equal(mad_get_field(mine, 0, IB_MAD_CLASSVER_F), 2);
	assert_int_equal(mad_get_field(mine, 0, IB_MAD_RESPONSE_F), 1);
	assert_int_equal(mad_get_field(mine, 0, IB_MAD_METHOD_F), 0x12);
	assert_int_equal(mad_get_field(mine, 0, IB_MAD_STATUS_F), 0x0300);
	assert_true(mad_get_field64(mine, 0, IB_MAD_TRID_F) == 0x1122334455667788ull);
	assert_int_equal(mad_get_field(mine, 0, IB_MAD_ATTRID_F), 0x0035);
	assert_int_equal(mad_get_field(mine, 0, IB_MAD_ATTRMOD_F), 0xa1b2c3d4);

	/* RMPP: ours to libibmad ... */
	assert_int_equal(mad_set(mine + 24, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, 1), 0);
	assert_int_equal(mad_set(mine + 24, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, 3), 0);
	assert_int_equal(mad_set(mine + 24, mad_rmpp_fields, MAD_RMPP_R_RESP_TIME, 0x15), 0);
	assert_int_equal(mad_set(mine + 24, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS, 0x5), 0);
	assert_int_equal(mad_set(mine + 24, mad_rmpp_fields, MAD_RMPP_RMPP_STATUS, 118), 0);
	assert_int_equal(mad_set(mine + 24, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, 0x10203), 0);
	assert_int_equal(mad_set(mine + 24, mad_rmpp_fields, MAD_RMPP_PAYLOAD_LENGTH, 0x4050607),
			 0);
	assert_int_equal(mad_get_field(mine, 0, IB_SA_RMPP_VERS_F), 1);
	assert_int_equal(mad_get_field(mine, 0, IB_SA_RMPP_TYPE_F), 3);
	assert_int_equal(mad_get_field(mine, 0, IB_SA_RMPP_RESP_F), 0x15);
	assert_int_equal(mad_get_field(mine, 0, IB_SA_RMPP_FLAGS_F), 0x5);
	assert_int_equal(mad_get_field(mine, 0, IB_SA_RMPP_STATUS_F), 118);
	assert_int_equal(mad_get_field(mine, 0, IB_SA_RMPP_SEGNUM_F), 0x10203);
	assert_int_equal(mad_get_field(mine, 0, IB_SA_RMPP_LEN_F), 0x4050607);

	/* ... and libibmad to ours. */
	mad_set_field(mad, 0, IB_MAD_BASEVER_F, 1);
	mad_set_field(mad, 0, IB_MAD_MGMTCLASS_F, 7);
	mad_set_field(mad, 0, IB_MAD_CLASSVER_F, 2);
	mad_set_field(mad, 0, IB_MAD_RESPONSE_F, 1);
	mad_set_field(mad, 0, IB_MAD_METHOD_F, 0x06);
	mad_set_field(mad, 0, IB_MAD_STATUS_F, 0x1c);
	mad_set_field64(mad, 0, IB_MAD_TRID_F, 0x8877665544332211ull);
	mad_set_field(mad, 0, IB_MAD_ATTRID_F, 0x0013);
	mad_set_field(mad, 0, IB_MAD_ATTRMOD_F, 0x01020304);
	mad_set_field(mad, 0, IB_SA_RMPP_RESP_F, 0x1f);
	mad_set_field(mad, 0, IB_SA_RMPP_FLAGS_F, 0x2);
	mad_set_field(mad, 0, IB_SA_RMPP_NEWWIN_F, 77);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_BASE_VERSION), 1);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_MGMT_CLASS), 7);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_CLASS_VERSION), 2);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_R), 1);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD), 0x06);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_STATUS), 0x1c);
	assert_true(mad_get(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID) == 0x8877665544332211ull);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID), 0x0013);
	assert_int_equal(mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_MODIFIER), 0x01020304);
	assert_int_equal(mad_get(mad + 24, mad_rmpp_fields, MAD_RMPP_R_RESP_TIME), 0x1f);
	assert_int_equal(mad_get(mad + 24, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS), 0x2);
	assert_int_equal(mad_get(mad + 24, mad_rmpp_fields, MAD_RMPP_NEW_WINDOW_LAST), 77);
}

/* ClassPortInfo: every field both ways against libibmad's IB_CPI_* table. */
static const struct {
	int mine;
	enum MAD_FIELDS theirs;
} cpi_map[] = {
    {MAD_CPI_BASE_VERSION, IB_CPI_BASEVER_F},
    {MAD_CPI_CLASS_VERSION, IB_CPI_CLASSVER_F},
    {MAD_CPI_CAPABILITY_MASK, IB_CPI_CAPMASK_F},
    {MAD_CPI_CAPABILITY_MASK2, IB_CPI_CAPMASK2_F},
    {MAD_CPI_RESP_TIME_VALUE, IB_CPI_RESP_TIME_VALUE_F},
    {MAD_CPI_REDIRECT_TC, IB_CPI_REDIRECT_TC_F},
    {MAD_CPI_REDIRECT_SL, IB_CPI_REDIRECT_SL_F},
    {MAD_CPI_REDIRECT_FL, IB_CPI_REDIRECT_FL_F},
    {MAD_CPI_REDIRECT_LID, IB_CPI_REDIRECT_LID_F},
    {MAD_CPI_REDIRECT_P_KEY, IB_CPI_REDIRECT_PKEY_F},
    {MAD_CPI_REDIRECT_QP, IB_CPI_REDIRECT_QP_F},
    {MAD_CPI_REDIRECT_Q_KEY, IB_CPI_REDIRECT_QKEY_F},
    {MAD_CPI_TRAP_TC, IB_CPI_TRAP_TC_F},
    {MAD_CPI_TRAP_SL, IB_CPI_TRAP_SL_F},
    {MAD_CPI_TRAP_FL, IB_CPI_TRAP_FL_F},
    {MAD_CPI_TRAP_LID, IB_CPI_TRAP_LID_F},
    {MAD_CPI_TRAP_P_KEY, IB_CPI_TRAP_PKEY_F},
    {MAD_CPI_TRAP_HL, IB_CPI_TRAP_HL_F},
    {MAD_CPI_TRAP_QP, IB_CPI_TRAP_QP_F},
    {MAD_CPI_TRAP_Q_KEY, IB_CPI_TRAP_QKEY_F},
};

static void test_libibmad_cpi(void **state)
{
	uint8_t mine[MAD_SIZE] = {0}, theirs[MAD_SIZE] = {0}, gid[16], out[16];
	const size_t at = 56; /* in an SA MAD; libibmad takes the base offset */

	(void)state;
	for (size_t i = 0; i < sizeof(cpi_map) / sizeof(cpi_map[0]); i++) {
		const struct mad_field *f = &mad_cpi_fields[cpi_map[i].mine];
		uint32_t v = (uint32_t)layout_field_value((unsigned)i, f->width);

		assert_int_equal(mad_field_set(mine + at, f, v), 0);
		mad_set_field(theirs, (int)at, cpi_map[i].theirs, v);
	}
	for (int k = 0; k < 16; k++)
		gid[k] = (uint8_t)(0xc0 + k);
	mad_set_bytes(mine + at, mad_cpi_fields, MAD_CPI_REDIRECT_GID, gid);
	mad_set_array(theirs, (int)at, IB_CPI_REDIRECT_GID_F, gid);
	gid[0] = 0xfe;
	mad_set_bytes(mine + at, mad_cpi_fields, MAD_CPI_TRAP_GID, gid);
	mad_set_array(theirs, (int)at, IB_CPI_TRAP_GID_F, gid);
	/* Same bytes from both encoders; each decodes the other's. */
	assert_memory_equal(mine, theirs, sizeof(mine));
	for (size_t i = 0; i < sizeof(cpi_map) / sizeof(cpi_map[0]); i++) {
		const struct mad_field *f = &mad_cpi_fields[cpi_map[i].mine];

		assert_int_equal(mad_get_field(mine, (int)at, cpi_map[i].theirs),
				 mad_field_get(theirs + at, f));
	}
	mad_get_array(mine, (int)at, IB_CPI_TRAP_GID_F, out);
	assert_memory_equal(out, gid, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layouts_validate),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_boundaries),
	    cmocka_unit_test(test_golden_hdr),
	    cmocka_unit_test(test_golden_rmpp),
	    cmocka_unit_test(test_golden_cpi),
	    cmocka_unit_test(test_hdr_check),
	    cmocka_unit_test(test_hdr_init),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_libibmad_hdr),
	    cmocka_unit_test(test_libibmad_cpi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
