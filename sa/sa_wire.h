/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Subnet Administration wire formats (IBA chapter 15): the SA header, the
 * records a connection manager needs (PathRecord, MCMemberRecord,
 * ServiceRecord, InformInfo, Notice) as mad/field.h tables, component mask
 * bits, attribute IDs, status codes and the enum names decoders print.
 *
 * An SA MAD is: common header (0..23), RMPP header (24..35), SA header
 * (36..55), data (56..255, or longer once RMPP has reassembled it).
 * Records start at SA_DATA_OFFSET; every record layout has mad_offset 56.
 */
#ifndef MADCM_SA_SA_WIRE_H
#define MADCM_SA_SA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "mad/field.h"
#include "mad/mad_wire.h"

#define SA_HDR_OFFSET 36
#define SA_HDR_SIZE 20
#define SA_DATA_OFFSET 56
#define SA_DATA_SIZE 200 /* in one 256-byte MAD */

/* Component mask bit n (IBA 15.2.1.1: bit 0 is the least significant). */
#define SA_COMP(n) (1ull << (n))

/* SA header, IBA 15.2.1.1 (at byte 36 of the MAD). */
/* clang-format off */
#define SA_HDR_FIELDS(X, P) \
	X(P, SM_KEY, sm_key, 0, 0, 64, MF_HEX) \
	X(P, ATTRIBUTE_OFFSET, attribute_offset, 8, 0, 16, MF_DEC) \
	X(P, RESERVED, reserved, 10, 0, 16, MF_RSVD) \
	X(P, COMPONENT_MASK, component_mask, 12, 0, 64, MF_HEX)
/* clang-format on */

enum { SA_HDR_FIELDS(MAD_FIELD_ENUM, SA_HDR) SA_HDR__COUNT };
extern const struct mad_field sa_hdr_fields[SA_HDR__COUNT];
extern const struct mad_layout sa_hdr_layout;

/*
 * PathRecord, IBA 15.2.5.16 (64 bytes).  ServiceID is one 64-bit
 * field at byte 0 as the kernel and OpenSM use it (the spec splits it into
 * ServiceID8MSB and ServiceID56LSB with component mask bits 0 and 1).
 */
#define SA_PR_SIZE 64
/* clang-format off */
#define SA_PR_FIELDS(X, P) \
	X(P, SERVICE_ID, service_id, 0, 0, 64, MF_HEX) \
	X(P, DGID, dgid, 8, 0, 128, MF_GID) \
	X(P, SGID, sgid, 24, 0, 128, MF_GID) \
	X(P, DLID, dlid, 40, 0, 16, MF_HEX) \
	X(P, SLID, slid, 42, 0, 16, MF_HEX) \
	X(P, RAW_TRAFFIC, raw_traffic, 44, 0, 1, MF_BOOL) \
	X(P, RESERVED1, reserved1, 44, 1, 3, MF_RSVD) \
	X(P, FLOW_LABEL, flow_label, 44, 4, 20, MF_HEX) \
	X(P, HOP_LIMIT, hop_limit, 47, 0, 8, MF_DEC) \
	X(P, TCLASS, tclass, 48, 0, 8, MF_HEX) \
	X(P, REVERSIBLE, reversible, 49, 0, 1, MF_BOOL) \
	X(P, NUMB_PATH, numb_path, 49, 1, 7, MF_DEC) \
	X(P, P_KEY, p_key, 50, 0, 16, MF_HEX) \
	X(P, QOS_CLASS, qos_class, 52, 0, 12, MF_HEX) \
	X(P, SL, sl, 53, 4, 4, MF_DEC) \
	X(P, MTU_SELECTOR, mtu_selector, 54, 0, 2, MF_DEC) \
	X(P, MTU, mtu, 54, 2, 6, MF_DEC) \
	X(P, RATE_SELECTOR, rate_selector, 55, 0, 2, MF_DEC) \
	X(P, RATE, rate, 55, 2, 6, MF_DEC) \
	X(P, PACKET_LIFE_TIME_SELECTOR, packet_life_time_selector, 56, 0, 2, MF_DEC) \
	X(P, PACKET_LIFE_TIME, packet_life_time, 56, 2, 6, MF_DEC) \
	X(P, PREFERENCE, preference, 57, 0, 8, MF_DEC) \
	X(P, RESERVED2, reserved2, 58, 0, 48, MF_RSVD)
/* clang-format on */

enum { SA_PR_FIELDS(MAD_FIELD_ENUM, SA_PR) SA_PR__COUNT };
extern const struct mad_field sa_pr_fields[SA_PR__COUNT];
extern const struct mad_layout sa_pr_layout;

/* PathRecord component mask bits (IBA 15.2.5.16, kernel ib_sa.h). */
#define SA_PR_COMP_SERVICE_ID (SA_COMP(0) | SA_COMP(1)) /* 8 MSB + 56 LSB */
#define SA_PR_COMP_DGID SA_COMP(2)
#define SA_PR_COMP_SGID SA_COMP(3)
#define SA_PR_COMP_DLID SA_COMP(4)
#define SA_PR_COMP_SLID SA_COMP(5)
#define SA_PR_COMP_RAW_TRAFFIC SA_COMP(6)
/* bit 7: reserved */
#define SA_PR_COMP_FLOW_LABEL SA_COMP(8)
#define SA_PR_COMP_HOP_LIMIT SA_COMP(9)
#define SA_PR_COMP_TCLASS SA_COMP(10)
#define SA_PR_COMP_REVERSIBLE SA_COMP(11)
#define SA_PR_COMP_NUMB_PATH SA_COMP(12)
#define SA_PR_COMP_P_KEY SA_COMP(13)
#define SA_PR_COMP_QOS_CLASS SA_COMP(14)
#define SA_PR_COMP_SL SA_COMP(15)
#define SA_PR_COMP_MTU_SELECTOR SA_COMP(16)
#define SA_PR_COMP_MTU SA_COMP(17)
#define SA_PR_COMP_RATE_SELECTOR SA_COMP(18)
#define SA_PR_COMP_RATE SA_COMP(19)
#define SA_PR_COMP_PACKET_LIFE_TIME_SELECTOR SA_COMP(20)
#define SA_PR_COMP_PACKET_LIFE_TIME SA_COMP(21)
#define SA_PR_COMP_PREFERENCE SA_COMP(22)

/* MCMemberRecord, IBA 15.2.5.17 (52 bytes). */
#define SA_MCMR_SIZE 52
/* clang-format off */
#define SA_MCMR_FIELDS(X, P) \
	X(P, MGID, mgid, 0, 0, 128, MF_GID) \
	X(P, PORT_GID, port_gid, 16, 0, 128, MF_GID) \
	X(P, Q_KEY, q_key, 32, 0, 32, MF_HEX) \
	X(P, MLID, mlid, 36, 0, 16, MF_HEX) \
	X(P, MTU_SELECTOR, mtu_selector, 38, 0, 2, MF_DEC) \
	X(P, MTU, mtu, 38, 2, 6, MF_DEC) \
	X(P, TCLASS, tclass, 39, 0, 8, MF_HEX) \
	X(P, P_KEY, p_key, 40, 0, 16, MF_HEX) \
	X(P, RATE_SELECTOR, rate_selector, 42, 0, 2, MF_DEC) \
	X(P, RATE, rate, 42, 2, 6, MF_DEC) \
	X(P, PACKET_LIFE_TIME_SELECTOR, packet_life_time_selector, 43, 0, 2, MF_DEC) \
	X(P, PACKET_LIFE_TIME, packet_life_time, 43, 2, 6, MF_DEC) \
	X(P, SL, sl, 44, 0, 4, MF_DEC) \
	X(P, FLOW_LABEL, flow_label, 44, 4, 20, MF_HEX) \
	X(P, HOP_LIMIT, hop_limit, 47, 0, 8, MF_DEC) \
	X(P, SCOPE, scope, 48, 0, 4, MF_HEX) \
	X(P, JOIN_STATE, join_state, 48, 4, 4, MF_HEX) \
	X(P, PROXY_JOIN, proxy_join, 49, 0, 1, MF_BOOL) \
	X(P, RESERVED, reserved, 49, 1, 23, MF_RSVD)
/* clang-format on */

enum { SA_MCMR_FIELDS(MAD_FIELD_ENUM, SA_MCMR) SA_MCMR__COUNT };
extern const struct mad_field sa_mcmr_fields[SA_MCMR__COUNT];
extern const struct mad_layout sa_mcmr_layout;

/* MCMemberRecord component mask bits (IBA 15.2.5.17). */
#define SA_MCMR_COMP_MGID SA_COMP(0)
#define SA_MCMR_COMP_PORT_GID SA_COMP(1)
#define SA_MCMR_COMP_Q_KEY SA_COMP(2)
#define SA_MCMR_COMP_MLID SA_COMP(3)
#define SA_MCMR_COMP_MTU_SELECTOR SA_COMP(4)
#define SA_MCMR_COMP_MTU SA_COMP(5)
#define SA_MCMR_COMP_TCLASS SA_COMP(6)
#define SA_MCMR_COMP_P_KEY SA_COMP(7)
#define SA_MCMR_COMP_RATE_SELECTOR SA_COMP(8)
#define SA_MCMR_COMP_RATE SA_COMP(9)
#define SA_MCMR_COMP_PACKET_LIFE_TIME_SELECTOR SA_COMP(10)
#define SA_MCMR_COMP_PACKET_LIFE_TIME SA_COMP(11)
#define SA_MCMR_COMP_SL SA_COMP(12)
#define SA_MCMR_COMP_FLOW_LABEL SA_COMP(13)
#define SA_MCMR_COMP_HOP_LIMIT SA_COMP(14)
#define SA_MCMR_COMP_SCOPE SA_COMP(15)
#define SA_MCMR_COMP_JOIN_STATE SA_COMP(16)
#define SA_MCMR_COMP_PROXY_JOIN SA_COMP(17)

/* JoinState bits (IBA 15.2.5.17; SendOnlyFullMember added in IBA 1.3). */
#define SA_JOIN_FULL_MEMBER 0x1
#define SA_JOIN_NON_MEMBER 0x2
#define SA_JOIN_SEND_ONLY_NON_MEMBER 0x4
#define SA_JOIN_SEND_ONLY_FULL_MEMBER 0x8

/*
 * ServiceRecord, IBA 15.2.5.14 (176 bytes).  The ServiceData
 * arrays are one field per element so that each has its component bit.
 */
#define SA_SR_SIZE 176
#define SA_SR_NAME_LEN 64
/* clang-format off */
#define SA_SR_FIELDS(X, P) \
	X(P, SERVICE_ID, service_id, 0, 0, 64, MF_HEX) \
	X(P, SERVICE_GID, service_gid, 8, 0, 128, MF_GID) \
	X(P, SERVICE_P_KEY, service_p_key, 24, 0, 16, MF_HEX) \
	X(P, RESERVED, reserved, 26, 0, 16, MF_RSVD) \
	X(P, SERVICE_LEASE, service_lease, 28, 0, 32, MF_DEC) \
	X(P, SERVICE_KEY, service_key, 32, 0, 128, MF_BYTES) \
	X(P, SERVICE_NAME, service_name, 48, 0, 512, MF_STR) \
	X(P, SERVICE_DATA8_0, service_data8_0, 112, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_1, service_data8_1, 113, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_2, service_data8_2, 114, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_3, service_data8_3, 115, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_4, service_data8_4, 116, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_5, service_data8_5, 117, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_6, service_data8_6, 118, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_7, service_data8_7, 119, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_8, service_data8_8, 120, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_9, service_data8_9, 121, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_10, service_data8_10, 122, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_11, service_data8_11, 123, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_12, service_data8_12, 124, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_13, service_data8_13, 125, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_14, service_data8_14, 126, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA8_15, service_data8_15, 127, 0, 8, MF_HEX) \
	X(P, SERVICE_DATA16_0, service_data16_0, 128, 0, 16, MF_HEX) \
	X(P, SERVICE_DATA16_1, service_data16_1, 130, 0, 16, MF_HEX) \
	X(P, SERVICE_DATA16_2, service_data16_2, 132, 0, 16, MF_HEX) \
	X(P, SERVICE_DATA16_3, service_data16_3, 134, 0, 16, MF_HEX) \
	X(P, SERVICE_DATA16_4, service_data16_4, 136, 0, 16, MF_HEX) \
	X(P, SERVICE_DATA16_5, service_data16_5, 138, 0, 16, MF_HEX) \
	X(P, SERVICE_DATA16_6, service_data16_6, 140, 0, 16, MF_HEX) \
	X(P, SERVICE_DATA16_7, service_data16_7, 142, 0, 16, MF_HEX) \
	X(P, SERVICE_DATA32_0, service_data32_0, 144, 0, 32, MF_HEX) \
	X(P, SERVICE_DATA32_1, service_data32_1, 148, 0, 32, MF_HEX) \
	X(P, SERVICE_DATA32_2, service_data32_2, 152, 0, 32, MF_HEX) \
	X(P, SERVICE_DATA32_3, service_data32_3, 156, 0, 32, MF_HEX) \
	X(P, SERVICE_DATA64_0, service_data64_0, 160, 0, 64, MF_HEX) \
	X(P, SERVICE_DATA64_1, service_data64_1, 168, 0, 64, MF_HEX)
/* clang-format on */

enum { SA_SR_FIELDS(MAD_FIELD_ENUM, SA_SR) SA_SR__COUNT };
extern const struct mad_field sa_sr_fields[SA_SR__COUNT];
extern const struct mad_layout sa_sr_layout;

/* ServiceRecord component mask bits (IBA 15.2.5.14). */
#define SA_SR_COMP_SERVICE_ID SA_COMP(0)
#define SA_SR_COMP_SERVICE_GID SA_COMP(1)
#define SA_SR_COMP_SERVICE_P_KEY SA_COMP(2)
/* bit 3: reserved */
#define SA_SR_COMP_SERVICE_LEASE SA_COMP(4)
#define SA_SR_COMP_SERVICE_KEY SA_COMP(5)
#define SA_SR_COMP_SERVICE_NAME SA_COMP(6)
#define SA_SR_COMP_SERVICE_DATA8(i) SA_COMP(7 + (i))   /* i = 0..15 */
#define SA_SR_COMP_SERVICE_DATA16(i) SA_COMP(23 + (i)) /* i = 0..7 */
#define SA_SR_COMP_SERVICE_DATA32(i) SA_COMP(31 + (i)) /* i = 0..3 */
#define SA_SR_COMP_SERVICE_DATA64(i) SA_COMP(35 + (i)) /* i = 0..1 */
/* ServiceLease value meaning "infinite". */
#define SA_SR_LEASE_INFINITE 0xffffffffu

/* InformInfo, IBA 13.4.8.3 (36 bytes). */
#define SA_II_SIZE 36
/* clang-format off */
#define SA_II_FIELDS(X, P) \
	X(P, GID, gid, 0, 0, 128, MF_GID) \
	X(P, LID_RANGE_BEGIN, lid_range_begin, 16, 0, 16, MF_HEX) \
	X(P, LID_RANGE_END, lid_range_end, 18, 0, 16, MF_HEX) \
	X(P, RESERVED1, reserved1, 20, 0, 16, MF_RSVD) \
	X(P, IS_GENERIC, is_generic, 22, 0, 8, MF_DEC) \
	X(P, SUBSCRIBE, subscribe, 23, 0, 8, MF_DEC) \
	X(P, TYPE, type, 24, 0, 16, MF_DEC) \
	X(P, TRAP_NUMBER, trap_number, 26, 0, 16, MF_DEC) /* DeviceID if vendor */ \
	X(P, QPN, qpn, 28, 0, 24, MF_HEX) \
	X(P, RESERVED2, reserved2, 31, 0, 3, MF_RSVD) \
	X(P, RESP_TIME_VALUE, resp_time_value, 31, 3, 5, MF_DEC) \
	X(P, RESERVED3, reserved3, 32, 0, 8, MF_RSVD) \
	X(P, PRODUCER_TYPE, producer_type, 33, 0, 24, MF_HEX) /* VendorID if vendor */
/* clang-format on */

enum { SA_II_FIELDS(MAD_FIELD_ENUM, SA_II) SA_II__COUNT };
extern const struct mad_field sa_ii_fields[SA_II__COUNT];
extern const struct mad_layout sa_ii_layout;

/* LIDRangeBegin value meaning "all LIDs"; Type/Trap/Producer wildcards. */
#define SA_II_LID_ALL 0xffff
#define SA_II_TYPE_ALL 0xffff
#define SA_II_TRAP_ALL 0xffff
#define SA_II_PRODUCER_ALL 0xffffff

/* Notice, IBA 13.4.8.2 (80 bytes). */
#define SA_NOTICE_SIZE 80
#define SA_NOTICE_DATA_DETAILS_OFFSET 10
#define SA_NOTICE_DATA_DETAILS_SIZE 54
/* clang-format off */
#define SA_NOTICE_FIELDS(X, P) \
	X(P, IS_GENERIC, is_generic, 0, 0, 1, MF_BOOL) \
	X(P, TYPE, type, 0, 1, 7, MF_DEC) \
	X(P, PRODUCER_TYPE, producer_type, 1, 0, 24, MF_HEX) /* VendorID if vendor */ \
	X(P, TRAP_NUMBER, trap_number, 4, 0, 16, MF_DEC) /* DeviceID if vendor */ \
	X(P, ISSUER_LID, issuer_lid, 6, 0, 16, MF_HEX) \
	X(P, NOTICE_TOGGLE, notice_toggle, 8, 0, 1, MF_BOOL) \
	X(P, NOTICE_COUNT, notice_count, 8, 1, 15, MF_DEC) \
	X(P, DATA_DETAILS, data_details, 10, 0, 432, MF_BYTES) \
	X(P, ISSUER_GID, issuer_gid, 64, 0, 128, MF_GID)
/* clang-format on */

enum { SA_NOTICE_FIELDS(MAD_FIELD_ENUM, SA_NOTICE) SA_NOTICE__COUNT };
extern const struct mad_field sa_notice_fields[SA_NOTICE__COUNT];
extern const struct mad_layout sa_notice_layout;

/*
 * DataDetails of traps 64..67 (GID in/out of service, multicast group
 * created/deleted), IBA 14.2.5.1: six reserved bytes, then the
 * GID.  Offsets are relative to DataDetails; mad_offset is where
 * DataDetails sits in an SA Report (56 + 10).
 */
/* clang-format off */
#define SA_NOTICE_GID_FIELDS(X, P) \
	X(P, RESERVED, reserved, 0, 0, 48, MF_RSVD) \
	X(P, GID, gid, 6, 0, 128, MF_GID)
/* clang-format on */

enum { SA_NOTICE_GID_FIELDS(MAD_FIELD_ENUM, SA_NOTICE_GID) SA_NOTICE_GID__COUNT };
extern const struct mad_field sa_notice_gid_fields[SA_NOTICE_GID__COUNT];
extern const struct mad_layout sa_notice_gid_layout;

/* Notice/InformInfo Type values (IBA 13.4.8.2). */
enum sa_notice_type {
	SA_NOTICE_TYPE_FATAL = 0,
	SA_NOTICE_TYPE_URGENT = 1,
	SA_NOTICE_TYPE_SECURITY = 2,
	SA_NOTICE_TYPE_SUBN_MGMT = 3,
	SA_NOTICE_TYPE_INFO = 4,
	SA_NOTICE_TYPE_ALL = 0xffff, /* InformInfo wildcard */
};
/* ProducerType values. */
enum sa_notice_producer {
	SA_NOTICE_PRODUCER_CA = 1,
	SA_NOTICE_PRODUCER_SWITCH = 2,
	SA_NOTICE_PRODUCER_ROUTER = 3,
	SA_NOTICE_PRODUCER_CLASS_MGR = 4,
};
/* SM trap numbers a CM user subscribes to (IBA 14.2.5.1). */
enum sa_trap_number {
	SA_TRAP_GID_IN_SERVICE = 64,
	SA_TRAP_GID_OUT_OF_SERVICE = 65,
	SA_TRAP_MCAST_GROUP_CREATED = 66,
	SA_TRAP_MCAST_GROUP_DELETED = 67,
};

/* NULL-terminated list of the SA layouts above. */
extern const struct mad_layout *const sa_wire_layouts[];

/* SA attribute IDs, IBA 15.2.5. */
enum sa_attr_id {
	SA_ATTR_CLASS_PORT_INFO = 0x0001,
	SA_ATTR_NOTICE = 0x0002,
	SA_ATTR_INFORM_INFO = 0x0003,
	SA_ATTR_NODE_RECORD = 0x0011,
	SA_ATTR_PORT_INFO_RECORD = 0x0012,
	SA_ATTR_SL2VL_TABLE_RECORD = 0x0013,
	SA_ATTR_SWITCH_INFO_RECORD = 0x0014,
	SA_ATTR_LFT_RECORD = 0x0015,
	SA_ATTR_RFT_RECORD = 0x0016,
	SA_ATTR_MFT_RECORD = 0x0017,
	SA_ATTR_SM_INFO_RECORD = 0x0018,
	SA_ATTR_LINK_RECORD = 0x0020,
	SA_ATTR_GUID_INFO_RECORD = 0x0030,
	SA_ATTR_SERVICE_RECORD = 0x0031,
	SA_ATTR_P_KEY_TABLE_RECORD = 0x0033,
	SA_ATTR_PATH_RECORD = 0x0035,
	SA_ATTR_VL_ARB_TABLE_RECORD = 0x0036,
	SA_ATTR_MC_MEMBER_RECORD = 0x0038,
	SA_ATTR_TRACE_RECORD = 0x0039,
	SA_ATTR_MULTI_PATH_RECORD = 0x003a,
	SA_ATTR_SERVICE_ASSOCIATION_RECORD = 0x003b,
	SA_ATTR_INFORM_INFO_RECORD = 0x00f3,
};

/* SA class-specific status (bits 8..15 of the MAD status), IBA 15.2.1.1. */
#define SA_STATUS_NO_RESOURCES 0x0100
#define SA_STATUS_REQ_INVALID 0x0200
#define SA_STATUS_NO_RECORDS 0x0300
#define SA_STATUS_TOO_MANY_RECORDS 0x0400
#define SA_STATUS_INVALID_GID 0x0500
#define SA_STATUS_INSUFFICIENT_COMPONENTS 0x0600
#define SA_STATUS_REQ_DENIED 0x0700
#define SA_STATUS_PRIO_SUGGESTED 0x0800

/* Selectors for MTU, Rate and PacketLifeTime (IBA 15.2.5.16). */
enum sa_selector {
	SA_SEL_GT = 0,	/* greater than the value */
	SA_SEL_LT = 1,	/* less than */
	SA_SEL_EQ = 2,	/* exactly */
	SA_SEL_MAX = 3, /* largest available */
};

/* MTU enum (IBA 14.2.5.6): 1..5 -> 256..4096 bytes. */
enum sa_mtu { SA_MTU_256 = 1, SA_MTU_512, SA_MTU_1024, SA_MTU_2048, SA_MTU_4096 };

/*
 * Rate enum (IBA 14.2.5.6 / kernel enum ib_rate): 2 = 2.5 Gb/s, 3 = 10,
 * 4 = 30, 5 = 5, 6 = 20, 7 = 40, 8 = 60, 9 = 80, 10 = 120, 11 = 14,
 * 12 = 56, 13 = 112, 14 = 168, 15 = 25, 16 = 100, 17 = 200, 18 = 300,
 * 19 = 28, 20 = 50, 21 = 400, 22 = 600.
 */
#define SA_RATE_2_5_GBPS 2
#define SA_RATE_MAX_ENUM 22

/* MTU in bytes for an MTU enum value, or -EINVAL. */
int sa_mtu_to_bytes(unsigned mtu);
/* MTU enum value for a byte count (exact powers 256..4096), or -EINVAL. */
int sa_mtu_from_bytes(unsigned bytes);
/* Rate in Mb/s for a rate enum value, or -EINVAL. */
int sa_rate_to_mbps(unsigned rate);
/* "2.5 Gb/s", "100 Gb/s" ... or "unknown"; never NULL. */
const char *sa_rate_name(unsigned rate);
/* "gt", "lt", "eq", "max" or "unknown". */
const char *sa_selector_name(unsigned sel);
/* "256" .. "4096" or "unknown". */
const char *sa_mtu_name(unsigned mtu);
/*
 * Join state as "full", "full|non", "send_only_non" ... written into
 * buf (NUL-terminated).  Returns the length, or -EINVAL / -ENOSPC.
 */
int sa_join_state_format(unsigned join_state, char *buf, size_t len);
/* Name of the SA class-specific status (bits 8..15), "ok" when 0. */
const char *sa_status_name(uint16_t status);
/* IBA attribute name ("PathRecord"), or "unknown". */
const char *sa_attr_name(uint16_t attr_id);
/* Record layout for an SA attribute (ClassPortInfo included), or NULL. */
const struct mad_layout *sa_layout_for_attr(uint16_t attr_id);

/*
 * Build the headers of an SA request in a MAD_SIZE (256) byte buffer:
 * base version 1, class SA, class version 2, the method and attribute,
 * transaction ID, SM_Key 0, attribute offset 0, the component mask; RMPP
 * header and data zeroed.  -EINVAL when mad is NULL or `method` is not an
 * SA method (IBA 15.2.2).
 */
int sa_mad_init(void *mad, uint8_t method, uint16_t attr_id, uint64_t tid, uint64_t comp_mask);

/*
 * Check a received SA MAD of `len` bytes (256, or the reassembled length
 * of an RMPP transfer: 56 + payload).  Beyond mad_hdr_check(): -EINVAL when
 * shorter than the SA header (56 bytes); -EPROTO when the class is not SA,
 * the class version is not 2, the method is not an SA method, an RMPP
 * header is active with a version other than 1 or a type out of 1..4, or
 * the attribute offset of a known record is smaller than the record (for
 * a single record, than the record rounded down to 8 bytes, as OpenSM
 * writes it for InformInfo; a GetTableResp must be exact).
 */
int sa_mad_check(const void *mad, size_t len);

/*
 * Records in an SA response of `len` valid bytes: (len - 56) / record
 * size, the record size being AttributeOffset * 8 bytes.  *rec_size gets
 * that size when not NULL.  -EINVAL for a NULL mad or len < 56.  An
 * AttributeOffset of 0 describes no records: the count is 0.
 */
int sa_mad_record_count(const void *mad, size_t len, size_t *rec_size);

#endif
