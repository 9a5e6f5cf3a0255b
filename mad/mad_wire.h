/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Wire formats common to every management class: the MAD common header
 * (IBA 13.4.3), the RMPP header (IBA 13.6.2.1) and ClassPortInfo (IBA
 * 13.4.8.1), plus the constants that go with them (classes, methods,
 * status codes, RMPP types/flags/status).
 *
 * Layouts are tables for mad/field.h; code names a field, e.g.
 *   mad_get(buf, mad_hdr_fields, MAD_HDR_TRANSACTION_ID)
 * Offsets in each table are relative to the layout's start; the layout's
 * mad_offset says where that start sits in a MAD.
 */
#ifndef MADCM_MAD_MAD_WIRE_H
#define MADCM_MAD_MAD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "mad/field.h"

#define MAD_SIZE 256	/* every non-RMPP MAD on the wire */
#define MAD_HDR_SIZE 24 /* common header */
#define MAD_RMPP_HDR_OFFSET 24
#define MAD_RMPP_HDR_SIZE 12
#define MAD_BASE_VERSION 1

/* MAD common header, IBA 13.4.3. */
/* clang-format off */
#define MAD_HDR_FIELDS(X, P) \
	X(P, BASE_VERSION, base_version, 0, 0, 8, MF_DEC) \
	X(P, MGMT_CLASS, mgmt_class, 1, 0, 8, MF_HEX) \
	X(P, CLASS_VERSION, class_version, 2, 0, 8, MF_DEC) \
	X(P, R, r, 3, 0, 1, MF_BOOL) \
	X(P, METHOD, method, 3, 1, 7, MF_HEX) \
	X(P, STATUS, status, 4, 0, 16, MF_HEX) \
	X(P, CLASS_SPECIFIC, class_specific, 6, 0, 16, MF_HEX) \
	X(P, TRANSACTION_ID, transaction_id, 8, 0, 64, MF_HEX) \
	X(P, ATTRIBUTE_ID, attribute_id, 16, 0, 16, MF_HEX) \
	X(P, RESERVED, reserved, 18, 0, 16, MF_RSVD) \
	X(P, ATTRIBUTE_MODIFIER, attribute_modifier, 20, 0, 32, MF_HEX)
/* clang-format on */

enum { MAD_HDR_FIELDS(MAD_FIELD_ENUM, MAD_HDR) MAD_HDR__COUNT };
extern const struct mad_field mad_hdr_fields[MAD_HDR__COUNT];
extern const struct mad_layout mad_hdr_layout;

/*
 * RMPP header, IBA 13.6.2.1, bytes 24..35 of a MAD of an RMPP class.
 * Data1 is the SegmentNumber (DATA, ACK); Data2 is the PayloadLength in a
 * DATA packet and NewWindowLast in an ACK.  The table names the DATA
 * meaning; the aliases below name the others.
 */
/* clang-format off */
#define MAD_RMPP_FIELDS(X, P) \
	X(P, RMPP_VERSION, rmpp_version, 0, 0, 8, MF_DEC) \
	X(P, RMPP_TYPE, rmpp_type, 1, 0, 8, MF_DEC) \
	X(P, R_RESP_TIME, r_resp_time, 2, 0, 5, MF_DEC) \
	X(P, RMPP_FLAGS, rmpp_flags, 2, 5, 3, MF_HEX) \
	X(P, RMPP_STATUS, rmpp_status, 3, 0, 8, MF_DEC) \
	X(P, SEGMENT_NUMBER, segment_number, 4, 0, 32, MF_DEC) \
	X(P, PAYLOAD_LENGTH, payload_length, 8, 0, 32, MF_DEC)
/* clang-format on */

enum {
	MAD_RMPP_FIELDS(MAD_FIELD_ENUM, MAD_RMPP) MAD_RMPP__COUNT,
	MAD_RMPP_DATA1 = MAD_RMPP_SEGMENT_NUMBER,
	MAD_RMPP_DATA2 = MAD_RMPP_PAYLOAD_LENGTH,
	MAD_RMPP_NEW_WINDOW_LAST = MAD_RMPP_PAYLOAD_LENGTH,
};
extern const struct mad_field mad_rmpp_fields[MAD_RMPP__COUNT];
extern const struct mad_layout mad_rmpp_layout;

/*
 * ClassPortInfo, IBA 13.4.8.1 (attribute 0x0001 of every class).  It sits
 * in the data area of its class (byte 24 for CM, 56 for SA, 64 for SMP /
 * PerfMgt), so the layout is offset-neutral: mad_offset is 0 and callers
 * pass a pointer to the data area.
 */
#define MAD_CPI_SIZE 72
/* clang-format off */
#define MAD_CPI_FIELDS(X, P) \
	X(P, BASE_VERSION, base_version, 0, 0, 8, MF_DEC) \
	X(P, CLASS_VERSION, class_version, 1, 0, 8, MF_DEC) \
	X(P, CAPABILITY_MASK, capability_mask, 2, 0, 16, MF_HEX) \
	X(P, CAPABILITY_MASK2, capability_mask2, 4, 0, 27, MF_HEX) \
	X(P, RESP_TIME_VALUE, resp_time_value, 7, 3, 5, MF_DEC) \
	X(P, REDIRECT_GID, redirect_gid, 8, 0, 128, MF_GID) \
	X(P, REDIRECT_TC, redirect_tc, 24, 0, 8, MF_HEX) \
	X(P, REDIRECT_SL, redirect_sl, 25, 0, 4, MF_DEC) \
	X(P, REDIRECT_FL, redirect_fl, 25, 4, 20, MF_HEX) \
	X(P, REDIRECT_LID, redirect_lid, 28, 0, 16, MF_HEX) \
	X(P, REDIRECT_P_KEY, redirect_p_key, 30, 0, 16, MF_HEX) \
	X(P, RESERVED1, reserved1, 32, 0, 8, MF_RSVD) \
	X(P, REDIRECT_QP, redirect_qp, 33, 0, 24, MF_HEX) \
	X(P, REDIRECT_Q_KEY, redirect_q_key, 36, 0, 32, MF_HEX) \
	X(P, TRAP_GID, trap_gid, 40, 0, 128, MF_GID) \
	X(P, TRAP_TC, trap_tc, 56, 0, 8, MF_HEX) \
	X(P, TRAP_SL, trap_sl, 57, 0, 4, MF_DEC) \
	X(P, TRAP_FL, trap_fl, 57, 4, 20, MF_HEX) \
	X(P, TRAP_LID, trap_lid, 60, 0, 16, MF_HEX) \
	X(P, TRAP_P_KEY, trap_p_key, 62, 0, 16, MF_HEX) \
	X(P, TRAP_HL, trap_hl, 64, 0, 8, MF_DEC) \
	X(P, TRAP_QP, trap_qp, 65, 0, 24, MF_HEX) \
	X(P, TRAP_Q_KEY, trap_q_key, 68, 0, 32, MF_HEX)
/* clang-format on */

enum { MAD_CPI_FIELDS(MAD_FIELD_ENUM, MAD_CPI) MAD_CPI__COUNT };
extern const struct mad_field mad_cpi_fields[MAD_CPI__COUNT];
extern const struct mad_layout mad_cpi_layout;

/* ClassPortInfo:CapabilityMask bits common to all classes (IBA 13.4.8.1). */
#define MAD_CPI_CAP_TRAP 0x0001	  /* IsTrapSupported */
#define MAD_CPI_CAP_NOTICE 0x0002 /* IsNoticeSupported */

/* NULL-terminated list of the layouts above, for `madcm decode` and tests. */
extern const struct mad_layout *const mad_wire_layouts[];

/* Management classes, IBA 13.4.4. */
enum mad_mgmt_class {
	MAD_CLASS_SUBN_LID_ROUTED = 0x01, /* SMP, LID routed */
	MAD_CLASS_SUBN_ADM = 0x03,	  /* SA */
	MAD_CLASS_PERF_MGMT = 0x04,
	MAD_CLASS_BM = 0x05, /* Baseboard management */
	MAD_CLASS_DEVICE_MGMT = 0x06,
	MAD_CLASS_CM = 0x07, /* Communication management */
	MAD_CLASS_SNMP = 0x08,
	MAD_CLASS_VENDOR_RANGE1_START = 0x09,
	MAD_CLASS_VENDOR_RANGE1_END = 0x0f,
	MAD_CLASS_APPLICATION_START = 0x10,
	MAD_CLASS_DEVICE_ADM = 0x10,
	MAD_CLASS_BOOT_MGMT = 0x11,
	MAD_CLASS_BIS = 0x12,
	MAD_CLASS_CONG_MGMT = 0x21,
	MAD_CLASS_APPLICATION_END = 0x2f,
	MAD_CLASS_VENDOR_RANGE2_START = 0x30,
	MAD_CLASS_VENDOR_RANGE2_END = 0x4f,
	MAD_CLASS_SUBN_DIRECTED_ROUTE = 0x81, /* SMP, directed route */
};

/* Class versions this code speaks (IBA 13.4.4 and each class chapter). */
#define MAD_CLASS_VERSION_SMP 1
#define MAD_CLASS_VERSION_SA 2
#define MAD_CLASS_VERSION_PERF 1
#define MAD_CLASS_VERSION_CM 2
#define MAD_CLASS_VERSION_CC 2

/* Methods, IBA 13.4.5 and 15.2.2 (SA additions). */
enum mad_method {
	MAD_METHOD_GET = 0x01,
	MAD_METHOD_SET = 0x02,
	MAD_METHOD_SEND = 0x03,
	MAD_METHOD_TRAP = 0x05,
	MAD_METHOD_REPORT = 0x06,
	MAD_METHOD_TRAP_REPRESS = 0x07,
	MAD_METHOD_GET_TABLE = 0x12,
	MAD_METHOD_GET_TRACE_TABLE = 0x13,
	MAD_METHOD_GET_MULTI = 0x14,
	MAD_METHOD_DELETE = 0x15,
	MAD_METHOD_RESP = 0x80, /* the R bit, as part of the method byte */
	MAD_METHOD_GET_RESP = 0x81,
	MAD_METHOD_REPORT_RESP = 0x86,
	MAD_METHOD_GET_TABLE_RESP = 0x92,
	MAD_METHOD_GET_TRACE_TABLE_RESP = 0x93,
	MAD_METHOD_GET_MULTI_RESP = 0x94,
	MAD_METHOD_DELETE_RESP = 0x95,
};

/*
 * Status field, IBA 13.4.7: bits 0..4 (least significant) are
 * common, bits 8..15 class specific (see SA_STATUS_* in sa/sa_wire.h).
 */
#define MAD_STATUS_BUSY 0x0001
#define MAD_STATUS_REDIRECT 0x0002
#define MAD_STATUS_CODE_MASK 0x001c
#define MAD_STATUS_CODE_SHIFT 2
#define MAD_STATUS_CLASS_MASK 0xff00
#define MAD_STATUS_CLASS_SHIFT 8
/* Values of the code in bits 2..4. */
enum mad_status_code {
	MAD_STATUS_OK = 0,
	MAD_STATUS_BAD_VERSION = 1, /* base/class version unsupported */
	MAD_STATUS_METHOD_UNSUPPORTED = 2,
	MAD_STATUS_METHOD_ATTR_UNSUPPORTED = 3,
	MAD_STATUS_INVALID_FIELD = 7, /* invalid attribute or modifier */
};

/* RMPP, IBA 13.6.2. */
#define MAD_RMPP_VERSION 1
enum mad_rmpp_type {
	MAD_RMPP_TYPE_NONE = 0,
	MAD_RMPP_TYPE_DATA = 1,
	MAD_RMPP_TYPE_ACK = 2,
	MAD_RMPP_TYPE_STOP = 3,
	MAD_RMPP_TYPE_ABORT = 4,
};
/* Values of the 3-bit RMPPFlags field. */
#define MAD_RMPP_FLAG_ACTIVE 0x1
#define MAD_RMPP_FLAG_FIRST 0x2
#define MAD_RMPP_FLAG_LAST 0x4
/* RRespTime value meaning "no time given" (IBA 13.6.2.1). */
#define MAD_RMPP_NO_RESP_TIME 0x1f
enum mad_rmpp_status {
	MAD_RMPP_STATUS_NORMAL = 0,
	MAD_RMPP_STATUS_RESX = 1,      /* resources exhausted (STOP) */
	MAD_RMPP_STATUS_T2L = 118,     /* total time too long */
	MAD_RMPP_STATUS_BAD_LEN = 119, /* inconsistent Last and PayloadLength */
	MAD_RMPP_STATUS_BAD_SEG = 120, /* inconsistent First and SegmentNumber */
	MAD_RMPP_STATUS_BADT = 121,    /* bad RMPPType */
	MAD_RMPP_STATUS_W2S = 122,     /* NewWindowLast too small */
	MAD_RMPP_STATUS_S2B = 123,     /* SegmentNumber too big */
	MAD_RMPP_STATUS_BAD_STATUS = 124,
	MAD_RMPP_STATUS_UNV = 125, /* unsupported version */
	MAD_RMPP_STATUS_TMR = 126, /* too many retries */
	MAD_RMPP_STATUS_UNSPEC = 127,
};
/*
 * Bytes after the RMPP header in each segment (256 - 36), the unit in which
 * PayloadLength counts.  A class header (the SA header) is repeated in
 * every segment, so a segment carries 256 - data offset bytes of records
 * (200 for SA) while PayloadLength counts that class header once per
 * segment (as the kernel's mad_rmpp.c computes it).
 */
#define MAD_RMPP_SEGMENT_DATA_SIZE 220

/*
 * Names for decoders and logs.  Each returns a static string, never NULL:
 * unknown values give "unknown" (or "reserved"/"vendor" where the range
 * says so).
 */
const char *mad_class_name(uint8_t mgmt_class);
const char *mad_method_name(uint8_t method);	   /* with the R bit */
const char *mad_status_code_name(uint16_t status); /* bits 2..4 of status */
const char *mad_rmpp_type_name(uint8_t type);
const char *mad_rmpp_status_name(uint8_t status);

/*
 * Class version expected for a class, or -1 when this code does not
 * restrict it (vendor and unknown classes).
 */
int mad_class_version(uint8_t mgmt_class);

/* True when the class may use RMPP (SA, vendor range 2, CC, DevAdm ...). */
int mad_class_has_rmpp(uint8_t mgmt_class);

/*
 * Check a received MAD's common header.  `len` is the number of bytes
 * received.  Returns 0 when the header is acceptable; -EINVAL for a NULL
 * buffer or a bad length (< 24, or > 256 unless the class uses RMPP and the
 * RMPP Active flag is set); -EPROTO for base version != 1, a class version
 * the class does not have (SA 2, CM 2, SMP 1, PerfMgt 1), or an RMPP
 * header that is active but malformed.  Never reads past `len`.
 */
int mad_hdr_check(const void *mad, size_t len);

/*
 * Fill a MAD common header: base version 1, the given class, version,
 * method (with R bit), transaction ID and attribute; status, class specific
 * and modifier zero.  Clears the rest of `len` bytes.  -EINVAL when
 * `len` < 24 or mad is NULL.
 */
int mad_hdr_init(void *mad, size_t len, uint8_t mgmt_class, uint8_t class_version, uint8_t method,
		 uint64_t tid, uint16_t attr_id, uint32_t attr_mod);

#endif
