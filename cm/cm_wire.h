/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * IB CM message formats (IBA vol 1 ch. 12.6, Tables 106-120).
 *
 * One X-macro table per message, one line per spec field, in the order and
 * at the offsets of the IBA tables (the Linux kernel's
 * include/rdma/ibta_vol1_c12.h describes the same layouts).  Offsets are
 * relative to the CM message, which starts at byte 24 of the 256-byte MAD
 * (right after the common MAD header) and is 232 bytes long.  Reserved bits
 * are fields too (MF_RSVD), so a decoder can print them and the layout
 * check proves that no two fields overlap.
 *
 * Use:
 *   uint8_t *msg = mad + CM_MSG_OFFSET;
 *   mad_set(msg, cm_req_fields, CM_REQ_LOCAL_QPN, qpn);   // -ERANGE if too big
 *   cm_set_private_data(&cm_req_layout, msg, data, len);  // -EINVAL if too long
 *
 * Bytes the kernel uses for Enhanced Connection Establishment (ECE) that
 * the IBA tables mark reserved (REQ bytes 5-7, REP bytes 15/19/23, SIDR_REP
 * bytes 6-7/11) are the vendor_id fields, since kernel peers fill them.
 */
#ifndef MADCM_CM_CM_WIRE_H
#define MADCM_CM_CM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "mad/field.h"
#include "mad/mad_wire.h"

#define CM_MGMT_CLASS 0x07 /* MAD_CLASS_CM */
#define CM_CLASS_VERSION 2
#define CM_BASE_VERSION 1
#define CM_MAD_SIZE 256
#define CM_MSG_OFFSET 24 /* CM message data after the common MAD header */
#define CM_MSG_SIZE 232

/* MAD methods the CM class uses (IBA 13.4.5, 12.11). */
#define CM_METHOD_GET 0x01
#define CM_METHOD_SET 0x02
#define CM_METHOD_SEND 0x03
#define CM_METHOD_GET_RESP 0x81

/* Attribute IDs (IBA Table 104). */
enum cm_attr_id {
	CM_ATTR_CLASS_PORT_INFO = 0x0001,
	CM_ATTR_REQ = 0x0010,
	CM_ATTR_MRA = 0x0011,
	CM_ATTR_REJ = 0x0012,
	CM_ATTR_REP = 0x0013,
	CM_ATTR_RTU = 0x0014,
	CM_ATTR_DREQ = 0x0015,
	CM_ATTR_DREP = 0x0016,
	CM_ATTR_SIDR_REQ = 0x0017,
	CM_ATTR_SIDR_REP = 0x0018,
	CM_ATTR_LAP = 0x0019,
	CM_ATTR_APR = 0x001A,
};

/* Private data sizes (bytes), the tail of each message. */
#define CM_REQ_PRIVATE_DATA_SIZE 92
#define CM_MRA_PRIVATE_DATA_SIZE 222
#define CM_REJ_PRIVATE_DATA_SIZE 148
#define CM_REP_PRIVATE_DATA_SIZE 196
#define CM_RTU_PRIVATE_DATA_SIZE 224
#define CM_DREQ_PRIVATE_DATA_SIZE 220
#define CM_DREP_PRIVATE_DATA_SIZE 224
#define CM_SIDR_REQ_PRIVATE_DATA_SIZE 216
#define CM_SIDR_REP_PRIVATE_DATA_SIZE 136
#define CM_LAP_PRIVATE_DATA_SIZE 168
#define CM_APR_PRIVATE_DATA_SIZE 148
/* Fixed-size information blocks. */
#define CM_REJ_ARI_SIZE 72
#define CM_APR_INFO_SIZE 72
#define CM_SIDR_REP_INFO_SIZE 72

/* ---- Table 106: REQ (ConnectRequest) ---- */
#define CM_REQ_FIELDS(X, P)                                                                        \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, RESERVED_4, reserved_4, 4, 0, 8, MF_RSVD)                                             \
	X(P, VENDOR_ID, vendor_id, 5, 0, 24, MF_HEX) /* ECE, kernel */                             \
	X(P, SERVICE_ID, service_id, 8, 0, 64, MF_HEX)                                             \
	X(P, LOCAL_CA_GUID, local_ca_guid, 16, 0, 64, MF_HEX)                                      \
	X(P, RESERVED_24, reserved_24, 24, 0, 32, MF_RSVD)                                         \
	X(P, LOCAL_Q_KEY, local_q_key, 28, 0, 32, MF_HEX)                                          \
	X(P, LOCAL_QPN, local_qpn, 32, 0, 24, MF_HEX)                                              \
	X(P, RESPONDER_RESOURCES, responder_resources, 35, 0, 8, MF_DEC)                           \
	X(P, LOCAL_EECN, local_eecn, 36, 0, 24, MF_HEX)                                            \
	X(P, INITIATOR_DEPTH, initiator_depth, 39, 0, 8, MF_DEC)                                   \
	X(P, REMOTE_EECN, remote_eecn, 40, 0, 24, MF_HEX)                                          \
	X(P, REMOTE_CM_RESPONSE_TIMEOUT, remote_cm_response_timeout, 43, 0, 5, MF_DEC)             \
	X(P, TRANSPORT_SERVICE_TYPE, transport_service_type, 43, 5, 2, MF_DEC)                     \
	X(P, END_TO_END_FLOW_CONTROL, end_to_end_flow_control, 43, 7, 1, MF_BOOL)                  \
	X(P, STARTING_PSN, starting_psn, 44, 0, 24, MF_HEX)                                        \
	X(P, LOCAL_CM_RESPONSE_TIMEOUT, local_cm_response_timeout, 47, 0, 5, MF_DEC)               \
	X(P, RETRY_COUNT, retry_count, 47, 5, 3, MF_DEC)                                           \
	X(P, PARTITION_KEY, partition_key, 48, 0, 16, MF_HEX)                                      \
	X(P, PATH_PACKET_PAYLOAD_MTU, path_packet_payload_mtu, 50, 0, 4, MF_DEC)                   \
	X(P, RDC_EXISTS, rdc_exists, 50, 4, 1, MF_BOOL)                                            \
	X(P, RNR_RETRY_COUNT, rnr_retry_count, 50, 5, 3, MF_DEC)                                   \
	X(P, MAX_CM_RETRIES, max_cm_retries, 51, 0, 4, MF_DEC)                                     \
	X(P, SRQ, srq, 51, 4, 1, MF_BOOL)                                                          \
	X(P, EXTENDED_TRANSPORT_TYPE, extended_transport_type, 51, 5, 3, MF_DEC)                   \
	X(P, PRIMARY_LOCAL_PORT_LID, primary_local_port_lid, 52, 0, 16, MF_HEX)                    \
	X(P, PRIMARY_REMOTE_PORT_LID, primary_remote_port_lid, 54, 0, 16, MF_HEX)                  \
	X(P, PRIMARY_LOCAL_PORT_GID, primary_local_port_gid, 56, 0, 128, MF_GID)                   \
	X(P, PRIMARY_REMOTE_PORT_GID, primary_remote_port_gid, 72, 0, 128, MF_GID)                 \
	X(P, PRIMARY_FLOW_LABEL, primary_flow_label, 88, 0, 20, MF_HEX)                            \
	X(P, RESERVED_90, reserved_90, 90, 4, 6, MF_RSVD)                                          \
	X(P, PRIMARY_PACKET_RATE, primary_packet_rate, 91, 2, 6, MF_DEC)                           \
	X(P, PRIMARY_TRAFFIC_CLASS, primary_traffic_class, 92, 0, 8, MF_HEX)                       \
	X(P, PRIMARY_HOP_LIMIT, primary_hop_limit, 93, 0, 8, MF_DEC)                               \
	X(P, PRIMARY_SL, primary_sl, 94, 0, 4, MF_DEC)                                             \
	X(P, PRIMARY_SUBNET_LOCAL, primary_subnet_local, 94, 4, 1, MF_BOOL)                        \
	X(P, RESERVED_94, reserved_94, 94, 5, 3, MF_RSVD)                                          \
	X(P, PRIMARY_LOCAL_ACK_TIMEOUT, primary_local_ack_timeout, 95, 0, 5, MF_DEC)               \
	X(P, RESERVED_95, reserved_95, 95, 5, 3, MF_RSVD)                                          \
	X(P, ALTERNATE_LOCAL_PORT_LID, alternate_local_port_lid, 96, 0, 16, MF_HEX)                \
	X(P, ALTERNATE_REMOTE_PORT_LID, alternate_remote_port_lid, 98, 0, 16, MF_HEX)              \
	X(P, ALTERNATE_LOCAL_PORT_GID, alternate_local_port_gid, 100, 0, 128, MF_GID)              \
	X(P, ALTERNATE_REMOTE_PORT_GID, alternate_remote_port_gid, 116, 0, 128, MF_GID)            \
	X(P, ALTERNATE_FLOW_LABEL, alternate_flow_label, 132, 0, 20, MF_HEX)                       \
	X(P, RESERVED_134, reserved_134, 134, 4, 6, MF_RSVD)                                       \
	X(P, ALTERNATE_PACKET_RATE, alternate_packet_rate, 135, 2, 6, MF_DEC)                      \
	X(P, ALTERNATE_TRAFFIC_CLASS, alternate_traffic_class, 136, 0, 8, MF_HEX)                  \
	X(P, ALTERNATE_HOP_LIMIT, alternate_hop_limit, 137, 0, 8, MF_DEC)                          \
	X(P, ALTERNATE_SL, alternate_sl, 138, 0, 4, MF_DEC)                                        \
	X(P, ALTERNATE_SUBNET_LOCAL, alternate_subnet_local, 138, 4, 1, MF_BOOL)                   \
	X(P, RESERVED_138, reserved_138, 138, 5, 3, MF_RSVD)                                       \
	X(P, ALTERNATE_LOCAL_ACK_TIMEOUT, alternate_local_ack_timeout, 139, 0, 5, MF_DEC)          \
	X(P, SAP_SUPPORTED, sap_supported, 139, 5, 1, MF_BOOL)                                     \
	X(P, RESERVED_139, reserved_139, 139, 6, 2, MF_RSVD)                                       \
	X(P, PRIVATE_DATA, private_data, 140, 0, 92 * 8, MF_BYTES)

/* ---- Table 107: MRA (MsgRcptAck) ---- */
#define CM_MRA_FIELDS(X, P)                                                                        \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, REMOTE_COMM_ID, remote_comm_id, 4, 0, 32, MF_HEX)                                     \
	X(P, MESSAGE_MRAED, message_mraed, 8, 0, 2, MF_DEC)                                        \
	X(P, RESERVED_8, reserved_8, 8, 2, 6, MF_RSVD)                                             \
	X(P, SERVICE_TIMEOUT, service_timeout, 9, 0, 5, MF_DEC)                                    \
	X(P, RESERVED_9, reserved_9, 9, 5, 3, MF_RSVD)                                             \
	X(P, PRIVATE_DATA, private_data, 10, 0, 222 * 8, MF_BYTES)

/* ---- Table 108: REJ (ConnectReject) ---- */
#define CM_REJ_FIELDS(X, P)                                                                        \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, REMOTE_COMM_ID, remote_comm_id, 4, 0, 32, MF_HEX)                                     \
	X(P, MESSAGE_REJECTED, message_rejected, 8, 0, 2, MF_DEC)                                  \
	X(P, RESERVED_8, reserved_8, 8, 2, 6, MF_RSVD)                                             \
	X(P, REJECT_INFO_LENGTH, reject_info_length, 9, 0, 7, MF_DEC)                              \
	X(P, RESERVED_9, reserved_9, 9, 7, 1, MF_RSVD)                                             \
	X(P, REASON, reason, 10, 0, 16, MF_DEC)                                                    \
	X(P, ARI, ari, 12, 0, 72 * 8, MF_BYTES)                                                    \
	X(P, PRIVATE_DATA, private_data, 84, 0, 148 * 8, MF_BYTES)

/* ---- Table 110: REP (ConnectReply) ---- */
#define CM_REP_FIELDS(X, P)                                                                        \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, REMOTE_COMM_ID, remote_comm_id, 4, 0, 32, MF_HEX)                                     \
	X(P, LOCAL_Q_KEY, local_q_key, 8, 0, 32, MF_HEX)                                           \
	X(P, LOCAL_QPN, local_qpn, 12, 0, 24, MF_HEX)                                              \
	X(P, VENDOR_ID_H, vendor_id_h, 15, 0, 8, MF_HEX) /* ECE, kernel */                         \
	X(P, LOCAL_EE_CONTEXT_NUMBER, local_ee_context_number, 16, 0, 24, MF_HEX)                  \
	X(P, VENDOR_ID_M, vendor_id_m, 19, 0, 8, MF_HEX) /* ECE, kernel */                         \
	X(P, STARTING_PSN, starting_psn, 20, 0, 24, MF_HEX)                                        \
	X(P, VENDOR_ID_L, vendor_id_l, 23, 0, 8, MF_HEX) /* ECE, kernel */                         \
	X(P, RESPONDER_RESOURCES, responder_resources, 24, 0, 8, MF_DEC)                           \
	X(P, INITIATOR_DEPTH, initiator_depth, 25, 0, 8, MF_DEC)                                   \
	X(P, TARGET_ACK_DELAY, target_ack_delay, 26, 0, 5, MF_DEC)                                 \
	X(P, FAILOVER_ACCEPTED, failover_accepted, 26, 5, 2, MF_DEC)                               \
	X(P, END_TO_END_FLOW_CONTROL, end_to_end_flow_control, 26, 7, 1, MF_BOOL)                  \
	X(P, RNR_RETRY_COUNT, rnr_retry_count, 27, 0, 3, MF_DEC)                                   \
	X(P, SRQ, srq, 27, 3, 1, MF_BOOL)                                                          \
	X(P, RESERVED_27, reserved_27, 27, 4, 4, MF_RSVD)                                          \
	X(P, LOCAL_CA_GUID, local_ca_guid, 28, 0, 64, MF_HEX)                                      \
	X(P, PRIVATE_DATA, private_data, 36, 0, 196 * 8, MF_BYTES)

/* ---- Table 111: RTU (ReadyToUse) ---- */
#define CM_RTU_FIELDS(X, P)                                                                        \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, REMOTE_COMM_ID, remote_comm_id, 4, 0, 32, MF_HEX)                                     \
	X(P, PRIVATE_DATA, private_data, 8, 0, 224 * 8, MF_BYTES)

/* ---- Table 112: DREQ (DisconnectRequest) ---- */
#define CM_DREQ_FIELDS(X, P)                                                                       \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, REMOTE_COMM_ID, remote_comm_id, 4, 0, 32, MF_HEX)                                     \
	X(P, REMOTE_QPN_EECN, remote_qpn_eecn, 8, 0, 24, MF_HEX)                                   \
	X(P, RESERVED_11, reserved_11, 11, 0, 8, MF_RSVD)                                          \
	X(P, PRIVATE_DATA, private_data, 12, 0, 220 * 8, MF_BYTES)

/* ---- Table 113: DREP (DisconnectReply) ---- */
#define CM_DREP_FIELDS(X, P)                                                                       \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, REMOTE_COMM_ID, remote_comm_id, 4, 0, 32, MF_HEX)                                     \
	X(P, PRIVATE_DATA, private_data, 8, 0, 224 * 8, MF_BYTES)

/* ---- Table 115: LAP (LoadAlternatePath) ---- */
#define CM_LAP_FIELDS(X, P)                                                                        \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, REMOTE_COMM_ID, remote_comm_id, 4, 0, 32, MF_HEX)                                     \
	X(P, RESERVED_8, reserved_8, 8, 0, 32, MF_RSVD)                                            \
	X(P, REMOTE_QPN_EECN, remote_qpn_eecn, 12, 0, 24, MF_HEX)                                  \
	X(P, REMOTE_CM_RESPONSE_TIMEOUT, remote_cm_response_timeout, 15, 0, 5, MF_DEC)             \
	X(P, RESERVED_15, reserved_15, 15, 5, 3, MF_RSVD)                                          \
	X(P, RESERVED_16, reserved_16, 16, 0, 32, MF_RSVD)                                         \
	X(P, ALTERNATE_LOCAL_PORT_LID, alternate_local_port_lid, 20, 0, 16, MF_HEX)                \
	X(P, ALTERNATE_REMOTE_PORT_LID, alternate_remote_port_lid, 22, 0, 16, MF_HEX)              \
	X(P, ALTERNATE_LOCAL_PORT_GID, alternate_local_port_gid, 24, 0, 128, MF_GID)               \
	X(P, ALTERNATE_REMOTE_PORT_GID, alternate_remote_port_gid, 40, 0, 128, MF_GID)             \
	X(P, ALTERNATE_FLOW_LABEL, alternate_flow_label, 56, 0, 20, MF_HEX)                        \
	X(P, RESERVED_58, reserved_58, 58, 4, 4, MF_RSVD)                                          \
	X(P, ALTERNATE_TRAFFIC_CLASS, alternate_traffic_class, 59, 0, 8, MF_HEX)                   \
	X(P, ALTERNATE_HOP_LIMIT, alternate_hop_limit, 60, 0, 8, MF_DEC)                           \
	X(P, RESERVED_61, reserved_61, 61, 0, 2, MF_RSVD)                                          \
	X(P, ALTERNATE_PACKET_RATE, alternate_packet_rate, 61, 2, 6, MF_DEC)                       \
	X(P, ALTERNATE_SL, alternate_sl, 62, 0, 4, MF_DEC)                                         \
	X(P, ALTERNATE_SUBNET_LOCAL, alternate_subnet_local, 62, 4, 1, MF_BOOL)                    \
	X(P, RESERVED_62, reserved_62, 62, 5, 3, MF_RSVD)                                          \
	X(P, ALTERNATE_LOCAL_ACK_TIMEOUT, alternate_local_ack_timeout, 63, 0, 5, MF_DEC)           \
	X(P, RESERVED_63, reserved_63, 63, 5, 3, MF_RSVD)                                          \
	X(P, PRIVATE_DATA, private_data, 64, 0, 168 * 8, MF_BYTES)

/* ---- Table 116: APR (AlternatePathResponse) ---- */
#define CM_APR_FIELDS(X, P)                                                                        \
	X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX)                                       \
	X(P, REMOTE_COMM_ID, remote_comm_id, 4, 0, 32, MF_HEX)                                     \
	X(P, ADDITIONAL_INFO_LENGTH, additional_info_length, 8, 0, 8, MF_DEC)                      \
	X(P, AP_STATUS, ap_status, 9, 0, 8, MF_DEC)                                                \
	X(P, RESERVED_10, reserved_10, 10, 0, 16, MF_RSVD)                                         \
	X(P, ADDITIONAL_INFO, additional_info, 12, 0, 72 * 8, MF_BYTES)                            \
	X(P, PRIVATE_DATA, private_data, 84, 0, 148 * 8, MF_BYTES)

/* ---- Table 119: SIDR_REQ (ServiceIDResReq) ---- */
#define CM_SIDR_REQ_FIELDS(X, P)                                                                   \
	X(P, REQUEST_ID, request_id, 0, 0, 32, MF_HEX)                                             \
	X(P, PARTITION_KEY, partition_key, 4, 0, 16, MF_HEX)                                       \
	X(P, RESERVED_6, reserved_6, 6, 0, 16, MF_RSVD)                                            \
	X(P, SERVICE_ID, service_id, 8, 0, 64, MF_HEX)                                             \
	X(P, PRIVATE_DATA, private_data, 16, 0, 216 * 8, MF_BYTES)

/* ---- Table 120: SIDR_REP (ServiceIDResResp) ---- */
#define CM_SIDR_REP_FIELDS(X, P)                                                                   \
	X(P, REQUEST_ID, request_id, 0, 0, 32, MF_HEX)                                             \
	X(P, STATUS, status, 4, 0, 8, MF_DEC)                                                      \
	X(P, ADDITIONAL_INFO_LENGTH, additional_info_length, 5, 0, 8, MF_DEC)                      \
	X(P, VENDOR_ID_H, vendor_id_h, 6, 0, 16, MF_HEX) /* ECE, kernel */                         \
	X(P, QPN, qpn, 8, 0, 24, MF_HEX)                                                           \
	X(P, VENDOR_ID_L, vendor_id_l, 11, 0, 8, MF_HEX) /* ECE, kernel */                         \
	X(P, SERVICE_ID, service_id, 12, 0, 64, MF_HEX)                                            \
	X(P, Q_KEY, q_key, 20, 0, 32, MF_HEX)                                                      \
	X(P, CLASS_PORT_INFO, class_port_info, 24, 0, 72 * 8, MF_BYTES)                            \
	X(P, PRIVATE_DATA, private_data, 96, 0, 136 * 8, MF_BYTES)

/*
 * ---- ClassPortInfo as the CM class carries it (IBA 13.4.8.1, 12.11) ----
 * The common ClassPortInfo fields of mad/mad_wire.h at the start of the
 * 232-byte data area; the rest of the data area is reserved.
 */
#define CM_CPI_FIELDS(X, P)                                                                        \
	MAD_CPI_FIELDS(X, P)                                                                       \
	X(P, RESERVED_72, reserved_72, 72, 0, 160 * 8, MF_RSVD)

enum { CM_REQ_FIELDS(MAD_FIELD_ENUM, CM_REQ) CM_REQ__COUNT };
enum { CM_MRA_FIELDS(MAD_FIELD_ENUM, CM_MRA) CM_MRA__COUNT };
enum { CM_REJ_FIELDS(MAD_FIELD_ENUM, CM_REJ) CM_REJ__COUNT };
enum { CM_REP_FIELDS(MAD_FIELD_ENUM, CM_REP) CM_REP__COUNT };
enum { CM_RTU_FIELDS(MAD_FIELD_ENUM, CM_RTU) CM_RTU__COUNT };
enum { CM_DREQ_FIELDS(MAD_FIELD_ENUM, CM_DREQ) CM_DREQ__COUNT };
enum { CM_DREP_FIELDS(MAD_FIELD_ENUM, CM_DREP) CM_DREP__COUNT };
enum { CM_LAP_FIELDS(MAD_FIELD_ENUM, CM_LAP) CM_LAP__COUNT };
enum { CM_APR_FIELDS(MAD_FIELD_ENUM, CM_APR) CM_APR__COUNT };
enum { CM_SIDR_REQ_FIELDS(MAD_FIELD_ENUM, CM_SIDR_REQ) CM_SIDR_REQ__COUNT };
enum { CM_SIDR_REP_FIELDS(MAD_FIELD_ENUM, CM_SIDR_REP) CM_SIDR_REP__COUNT };
enum { CM_CPI_FIELDS(MAD_FIELD_ENUM, CM_CPI) CM_CPI__COUNT };

extern const struct mad_field cm_req_fields[CM_REQ__COUNT];
extern const struct mad_field cm_mra_fields[CM_MRA__COUNT];
extern const struct mad_field cm_rej_fields[CM_REJ__COUNT];
extern const struct mad_field cm_rep_fields[CM_REP__COUNT];
extern const struct mad_field cm_rtu_fields[CM_RTU__COUNT];
extern const struct mad_field cm_dreq_fields[CM_DREQ__COUNT];
extern const struct mad_field cm_drep_fields[CM_DREP__COUNT];
extern const struct mad_field cm_lap_fields[CM_LAP__COUNT];
extern const struct mad_field cm_apr_fields[CM_APR__COUNT];
extern const struct mad_field cm_sidr_req_fields[CM_SIDR_REQ__COUNT];
extern const struct mad_field cm_sidr_rep_fields[CM_SIDR_REP__COUNT];
extern const struct mad_field cm_cpi_fields[CM_CPI__COUNT];

extern const struct mad_layout cm_req_layout;
extern const struct mad_layout cm_mra_layout;
extern const struct mad_layout cm_rej_layout;
extern const struct mad_layout cm_rep_layout;
extern const struct mad_layout cm_rtu_layout;
extern const struct mad_layout cm_dreq_layout;
extern const struct mad_layout cm_drep_layout;
extern const struct mad_layout cm_lap_layout;
extern const struct mad_layout cm_apr_layout;
extern const struct mad_layout cm_sidr_req_layout;
extern const struct mad_layout cm_sidr_rep_layout;
extern const struct mad_layout cm_class_port_info_layout;

/* Every CM layout above, NULL-terminated (for decoders and tests). */
extern const struct mad_layout *const cm_wire_layouts[];

/* The layout of a CM attribute ID, or NULL when the CM has none. */
const struct mad_layout *cm_layout_by_attr(uint16_t attr_id);

/* ---- private data ---- */

/*
 * Size of `msg`'s private data in bytes (its maximum), or 0 when the
 * layout has none (ClassPortInfo) or is not a CM layout.
 */
size_t cm_private_data_size(const struct mad_layout *msg);

/*
 * Write `len` bytes of private data into the message `msgbuf` (the CM
 * message, i.e. mad + CM_MSG_OFFSET) and zero the rest of the private data
 * area.  Returns 0, or -EINVAL when `len` exceeds the message's maximum
 * (nothing written: never truncates), when `msg` has no private data, or
 * when a pointer is NULL (data may be NULL only when len is 0).
 */
int cm_set_private_data(const struct mad_layout *msg, void *msgbuf, const void *data, size_t len);

/*
 * Pointer to the private data inside `msgbuf` and its size in *len, or NULL
 * (and *len 0) when the layout has none.
 */
const uint8_t *cm_private_data(const struct mad_layout *msg, const void *msgbuf, size_t *len);

/* ---- values of coded fields ---- */

/* REJ Reason (IBA Table 109; kernel enum ib_cm_rej_reason). */
enum cm_rej_reason {
	CM_REJ_NO_QP = 1,
	CM_REJ_NO_EEC = 2,
	CM_REJ_NO_RESOURCES = 3,
	CM_REJ_TIMEOUT = 4,
	CM_REJ_UNSUPPORTED = 5,
	CM_REJ_INVALID_COMM_ID = 6,
	CM_REJ_INVALID_COMM_INSTANCE = 7,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_RDC_NOT_EXIST = 11,
	CM_REJ_INVALID_GID = 12,
	CM_REJ_INVALID_LID = 13,
	CM_REJ_INVALID_SL = 14,
	CM_REJ_INVALID_TRAFFIC_CLASS = 15,
	CM_REJ_INVALID_HOP_LIMIT = 16,
	CM_REJ_INVALID_PACKET_RATE = 17,
	CM_REJ_INVALID_ALT_GID = 18,
	CM_REJ_INVALID_ALT_LID = 19,
	CM_REJ_INVALID_ALT_SL = 20,
	CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	CM_REJ_INVALID_ALT_PACKET_RATE = 23,
	CM_REJ_PORT_CM_REDIRECT = 24,
	CM_REJ_PORT_REDIRECT = 25,
	CM_REJ_INVALID_MTU = 26,
	CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	CM_REJ_CONSUMER_DEFINED = 28,
	CM_REJ_INVALID_RNR_RETRY = 29,
	CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	CM_REJ_INVALID_CLASS_VERSION = 31,
	CM_REJ_INVALID_FLOW_LABEL = 32,
	CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
	CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};

/* Name of a REJ reason ("stale_connection"...), or NULL when unassigned. */
const char *cm_rej_reason_name(unsigned reason);

/* MRA MessageMRAed and REJ MessageRejected (IBA Tables 107/108). */
enum cm_msg_ref {
	CM_MSG_REF_REQ = 0,
	CM_MSG_REF_REP = 1,
	CM_MSG_REF_LAP = 2,   /* MRA: the LAP was MRAed */
	CM_MSG_REF_OTHER = 2, /* REJ: rejecting no REQ/REP (e.g. stale) */
};
/* "REQ", "REP", "LAP" / NULL for reserved values. */
const char *cm_mra_message_name(unsigned v);
/* "REQ", "REP", "other" / NULL for reserved values. */
const char *cm_rej_message_name(unsigned v);

/* SIDR_REP Status (IBA Table 121; kernel enum ib_cm_sidr_status). */
enum cm_sidr_status {
	CM_SIDR_SUCCESS = 0,
	CM_SIDR_UNSUPPORTED = 1, /* service ID not supported */
	CM_SIDR_REJECT = 2,
	CM_SIDR_NO_QP = 3,
	CM_SIDR_REDIRECT = 4,		 /* class_port_info says where */
	CM_SIDR_UNSUPPORTED_VERSION = 5, /* class_port_info has the version */
};
const char *cm_sidr_status_name(unsigned status);

/* APR AP Status (IBA Table 117; kernel enum ib_cm_apr_status). */
enum cm_apr_status {
	CM_APR_SUCCESS = 0,
	CM_APR_INVALID_COMM_ID = 1,
	CM_APR_UNSUPPORTED = 2,
	CM_APR_REJECT = 3,
	CM_APR_REDIRECT = 4,
	CM_APR_IS_CURRENT = 5,
	CM_APR_INVALID_QPN_EECN = 6,
	CM_APR_INVALID_LID = 7,
	CM_APR_INVALID_GID = 8,
	CM_APR_INVALID_FLOW_LABEL = 9,
	CM_APR_INVALID_TCLASS = 10,
	CM_APR_INVALID_HOP_LIMIT = 11,
	CM_APR_INVALID_PACKET_RATE = 12,
	CM_APR_INVALID_SL = 13,
};
const char *cm_apr_status_name(unsigned status);

/*
 * REQ Transport Service Type.  3 is reserved in IBA 1.2 and, with
 * extended_transport_type 1, means XRC (IBA annex A14, the kernel's use).
 */
enum cm_transport {
	CM_TRANSPORT_RC = 0,
	CM_TRANSPORT_UC = 1,
	CM_TRANSPORT_RD = 2,
	CM_TRANSPORT_EXTENDED = 3,
};
#define CM_EXT_TRANSPORT_XRC 1
const char *cm_transport_name(unsigned type);

/* REP Failover Accepted. */
enum cm_failover {
	CM_FAILOVER_ACCEPTED = 0,
	CM_FAILOVER_REJECTED = 1,
	CM_FAILOVER_NOT_SUPPORTED = 2,
};

/* Name of the message an attribute ID carries ("REQ"...), or NULL. */
const char *cm_attr_name(uint16_t attr_id);

/*
 * Name of a coded field's value, for decoders: REQ transport_service_type,
 * MRA message_mraed, REJ message_rejected and reason, SIDR_REP status, APR
 * ap_status.  `field` is the field's index in msg's table (e.g.
 * CM_REJ_REASON).  NULL for other fields and unassigned values.
 */
const char *cm_field_value_name(const struct mad_layout *msg, unsigned field, uint64_t value);

/* ---- timeouts ---- */

/* Largest CM timeout exponent: the fields are 5 bits wide. */
#define CM_TIMEOUT_MAX 31

/*
 * CM response timeout / service timeout / local ACK timeout encoding:
 * 4.096 us * 2^t.  cm_timeout_ns(t) is that in nanoseconds, or 0 when
 * t > 31.  cm_timeout_from_ns(ns) is the smallest t whose timeout is at
 * least `ns` (so a peer never waits less than asked), saturating at 31.
 */
uint64_t cm_timeout_ns(unsigned t);
unsigned cm_timeout_from_ns(uint64_t ns);

/* ---- whole MADs ---- */

/*
 * Check a received CM MAD (256 bytes, common header included) before any
 * field is trusted.  Returns 0 and the message's layout in *msg (when not
 * NULL), or:
 *   -EINVAL           mad NULL or len != 256
 *   -EPROTO           base version != 1, class != 0x07, class version != 2
 *   -ENOMSG           attribute ID the CM does not define
 *   -EOPNOTSUPP       method not allowed for the attribute (Send for the
 *                     messages; Get/Set/GetResp for ClassPortInfo)
 *   -EBADMSG          content the spec forbids: REJ reject_info_length or
 *                     APR/SIDR_REP additional_info_length > 72
 * Semantic checks that the protocol answers with a REJ (unsupported
 * transport, bad path values) are left to the CM engine.  Never reads past
 * `len`.
 */
int cm_msg_check(const void *mad, size_t len, const struct mad_layout **msg);

/*
 * Start a CM MAD in `mad` (len >= 256): zero it and write the common header
 * (base version 1, class 0x07, class version 2, method, transaction ID,
 * attribute ID of `msg`, attribute modifier 0).  Returns 0 or -EINVAL.
 */
int cm_mad_init(void *mad, size_t len, const struct mad_layout *msg, uint8_t method, uint64_t tid);

#endif
