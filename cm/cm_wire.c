/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* IB CM message tables, constants and checks (see cm_wire.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cm/cm_wire.h"

#define CM_TABLE(lname, UNAME, LIST)                                                               \
	const struct mad_field cm_##lname##_fields[UNAME##__COUNT] = {LIST(MAD_FIELD_ENTRY, UNAME)}

CM_TABLE(req, CM_REQ, CM_REQ_FIELDS);
CM_TABLE(mra, CM_MRA, CM_MRA_FIELDS);
CM_TABLE(rej, CM_REJ, CM_REJ_FIELDS);
CM_TABLE(rep, CM_REP, CM_REP_FIELDS);
CM_TABLE(rtu, CM_RTU, CM_RTU_FIELDS);
CM_TABLE(dreq, CM_DREQ, CM_DREQ_FIELDS);
CM_TABLE(drep, CM_DREP, CM_DREP_FIELDS);
CM_TABLE(lap, CM_LAP, CM_LAP_FIELDS);
CM_TABLE(apr, CM_APR, CM_APR_FIELDS);
CM_TABLE(sidr_req, CM_SIDR_REQ, CM_SIDR_REQ_FIELDS);
CM_TABLE(sidr_rep, CM_SIDR_REP, CM_SIDR_REP_FIELDS);
CM_TABLE(cpi, CM_CPI, CM_CPI_FIELDS);

#define CM_LAYOUT(lname, name, short_name, attr)                                                   \
	const struct mad_layout cm_##lname##_layout = {name,                                       \
						       short_name,                                 \
						       CM_MGMT_CLASS,                              \
						       attr,                                       \
						       CM_MSG_OFFSET,                              \
						       CM_MSG_SIZE,                                \
						       MAD_LAYOUT_FIELDS(cm_##lname##_fields)}

CM_LAYOUT(req, "ConnectRequest", "REQ", CM_ATTR_REQ);
CM_LAYOUT(mra, "MsgRcptAck", "MRA", CM_ATTR_MRA);
CM_LAYOUT(rej, "ConnectReject", "REJ", CM_ATTR_REJ);
CM_LAYOUT(rep, "ConnectReply", "REP", CM_ATTR_REP);
CM_LAYOUT(rtu, "ReadyToUse", "RTU", CM_ATTR_RTU);
CM_LAYOUT(dreq, "DisconnectRequest", "DREQ", CM_ATTR_DREQ);
CM_LAYOUT(drep, "DisconnectReply", "DREP", CM_ATTR_DREP);
CM_LAYOUT(lap, "LoadAlternatePath", "LAP", CM_ATTR_LAP);
CM_LAYOUT(apr, "AlternatePathResponse", "APR", CM_ATTR_APR);
CM_LAYOUT(sidr_req, "ServiceIDResReq", "SIDR_REQ", CM_ATTR_SIDR_REQ);
CM_LAYOUT(sidr_rep, "ServiceIDResResp", "SIDR_REP", CM_ATTR_SIDR_REP);

const struct mad_layout cm_class_port_info_layout = {"ClassPortInfo",
						     NULL,
						     CM_MGMT_CLASS,
						     CM_ATTR_CLASS_PORT_INFO,
						     CM_MSG_OFFSET,
						     CM_MSG_SIZE,
						     MAD_LAYOUT_FIELDS(cm_cpi_fields)};

const struct mad_layout *const cm_wire_layouts[] = {
    &cm_class_port_info_layout,
    &cm_req_layout,
    &cm_mra_layout,
    &cm_rej_layout,
    &cm_rep_layout,
    &cm_rtu_layout,
    &cm_dreq_layout,
    &cm_drep_layout,
    &cm_sidr_req_layout,
    &cm_sidr_rep_layout,
    &cm_lap_layout,
    &cm_apr_layout,
    NULL,
};

const struct mad_layout *cm_layout_by_attr(uint16_t attr_id)
{
	for (const struct mad_layout *const *l = cm_wire_layouts; *l; l++)
		if ((*l)->attr_id == attr_id)
			return *l;
	return NULL;
}

const char *cm_attr_name(uint16_t attr_id)
{
	const struct mad_layout *l = cm_layout_by_attr(attr_id);

	if (!l)
		return NULL;
	return l->short_name ? l->short_name : l->name;
}

/*
 * The private_data field of a CM layout, or NULL.  It is the last field of
 * every CM message's table, so that is looked at first: this runs for every
 * CM MAD built and parsed, and a search by name walks some 50 names.
 */
static const struct mad_field *pdata_field(const struct mad_layout *msg)
{
	const struct mad_field *last;

	if (!msg || msg->mgmt_class != CM_MGMT_CLASS || !msg->nfields)
		return NULL;
	last = &msg->fields[msg->nfields - 1];
	if (last->name && !strcmp(last->name, "private_data"))
		return last;
	return mad_layout_field(msg, "private_data");
}

size_t cm_private_data_size(const struct mad_layout *msg)
{
	const struct mad_field *f = pdata_field(msg);

	return f ? mad_field_len(f) : 0;
}

int cm_set_private_data(const struct mad_layout *msg, void *msgbuf, const void *data, size_t len)
{
	const struct mad_field *f = pdata_field(msg);
	uint8_t *p;

	if (!f || !msgbuf || (len && !data) || len > mad_field_len(f))
		return -EINVAL;
	p = (uint8_t *)msgbuf + f->byte;
	if (len)
		memcpy(p, data, len);
	memset(p + len, 0, mad_field_len(f) - len);
	return 0;
}

const uint8_t *cm_private_data(const struct mad_layout *msg, const void *msgbuf, size_t *len)
{
	const struct mad_field *f = pdata_field(msg);

	if (!f || !msgbuf) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = mad_field_len(f);
	return (const uint8_t *)msgbuf + f->byte;
}

/* Names are the kernel's enumerator names in lower case, without prefix. */
static const char *const rej_reason_names[] = {
    [CM_REJ_NO_QP] = "no_qp",
    [CM_REJ_NO_EEC] = "no_eec",
    [CM_REJ_NO_RESOURCES] = "no_resources",
    [CM_REJ_TIMEOUT] = "timeout",
    [CM_REJ_UNSUPPORTED] = "unsupported",
    [CM_REJ_INVALID_COMM_ID] = "invalid_comm_id",
    [CM_REJ_INVALID_COMM_INSTANCE] = "invalid_comm_instance",
    [CM_REJ_INVALID_SERVICE_ID] = "invalid_service_id",
    [CM_REJ_INVALID_TRANSPORT_TYPE] = "invalid_transport_type",
    [CM_REJ_STALE_CONN] = "stale_conn",
    [CM_REJ_RDC_NOT_EXIST] = "rdc_not_exist",
    [CM_REJ_INVALID_GID] = "invalid_gid",
    [CM_REJ_INVALID_LID] = "invalid_lid",
    [CM_REJ_INVALID_SL] = "invalid_sl",
    [CM_REJ_INVALID_TRAFFIC_CLASS] = "invalid_traffic_class",
    [CM_REJ_INVALID_HOP_LIMIT] = "invalid_hop_limit",
    [CM_REJ_INVALID_PACKET_RATE] = "invalid_packet_rate",
    [CM_REJ_INVALID_ALT_GID] = "invalid_alt_gid",
    [CM_REJ_INVALID_ALT_LID] = "invalid_alt_lid",
    [CM_REJ_INVALID_ALT_SL] = "invalid_alt_sl",
    [CM_REJ_INVALID_ALT_TRAFFIC_CLASS] = "invalid_alt_traffic_class",
    [CM_REJ_INVALID_ALT_HOP_LIMIT] = "invalid_alt_hop_limit",
    [CM_REJ_INVALID_ALT_PACKET_RATE] = "invalid_alt_packet_rate",
    [CM_REJ_PORT_CM_REDIRECT] = "port_cm_redirect",
    [CM_REJ_PORT_REDIRECT] = "port_redirect",
    [CM_REJ_INVALID_MTU] = "invalid_mtu",
    [CM_REJ_INSUFFICIENT_RESP_RESOURCES] = "insufficient_resp_resources",
    [CM_REJ_CONSUMER_DEFINED] = "consumer_defined",
    [CM_REJ_INVALID_RNR_RETRY] = "invalid_rnr_retry",
    [CM_REJ_DUPLICATE_LOCAL_COMM_ID] = "duplicate_local_comm_id",
    [CM_REJ_INVALID_CLASS_VERSION] = "invalid_class_version",
    [CM_REJ_INVALID_FLOW_LABEL] = "invalid_flow_label",
    [CM_REJ_INVALID_ALT_FLOW_LABEL] = "invalid_alt_flow_label",
    [CM_REJ_VENDOR_OPTION_NOT_SUPPORTED] = "vendor_option_not_supported",
};

#define NAME_OF(tab, v) ((v) < sizeof(tab) / sizeof((tab)[0]) ? (tab)[v] : NULL)

const char *cm_rej_reason_name(unsigned reason)
{
	return NAME_OF(rej_reason_names, reason);
}

static const char *const mra_message_names[] = {"REQ", "REP", "LAP"};
static const char *const rej_message_names[] = {"REQ", "REP", "other"};

const char *cm_mra_message_name(unsigned v)
{
	return NAME_OF(mra_message_names, v);
}

const char *cm_rej_message_name(unsigned v)
{
	return NAME_OF(rej_message_names, v);
}

static const char *const sidr_status_names[] = {
    [CM_SIDR_SUCCESS] = "success",   [CM_SIDR_UNSUPPORTED] = "unsupported",
    [CM_SIDR_REJECT] = "reject",     [CM_SIDR_NO_QP] = "no_qp",
    [CM_SIDR_REDIRECT] = "redirect", [CM_SIDR_UNSUPPORTED_VERSION] = "unsupported_version",
};

const char *cm_sidr_status_name(unsigned status)
{
	return NAME_OF(sidr_status_names, status);
}

static const char *const apr_status_names[] = {
    [CM_APR_SUCCESS] = "success",
    [CM_APR_INVALID_COMM_ID] = "invalid_comm_id",
    [CM_APR_UNSUPPORTED] = "unsupported",
    [CM_APR_REJECT] = "reject",
    [CM_APR_REDIRECT] = "redirect",
    [CM_APR_IS_CURRENT] = "is_current",
    [CM_APR_INVALID_QPN_EECN] = "invalid_qpn_eecn",
    [CM_APR_INVALID_LID] = "invalid_lid",
    [CM_APR_INVALID_GID] = "invalid_gid",
    [CM_APR_INVALID_FLOW_LABEL] = "invalid_flow_label",
    [CM_APR_INVALID_TCLASS] = "invalid_tclass",
    [CM_APR_INVALID_HOP_LIMIT] = "invalid_hop_limit",
    [CM_APR_INVALID_PACKET_RATE] = "invalid_packet_rate",
    [CM_APR_INVALID_SL] = "invalid_sl",
};

const char *cm_apr_status_name(unsigned status)
{
	return NAME_OF(apr_status_names, status);
}

static const char *const transport_names[] = {"RC", "UC", "RD", "extended"};

const char *cm_transport_name(unsigned type)
{
	return NAME_OF(transport_names, type);
}

const char *cm_field_value_name(const struct mad_layout *msg, unsigned field, uint64_t value)
{
	static const struct {
		const struct mad_layout *msg;
		unsigned field;
		const char *(*name)(unsigned);
	} coded[] = {
	    {&cm_req_layout, CM_REQ_TRANSPORT_SERVICE_TYPE, cm_transport_name},
	    {&cm_mra_layout, CM_MRA_MESSAGE_MRAED, cm_mra_message_name},
	    {&cm_rej_layout, CM_REJ_MESSAGE_REJECTED, cm_rej_message_name},
	    {&cm_rej_layout, CM_REJ_REASON, cm_rej_reason_name},
	    {&cm_sidr_rep_layout, CM_SIDR_REP_STATUS, cm_sidr_status_name},
	    {&cm_apr_layout, CM_APR_AP_STATUS, cm_apr_status_name},
	};

	if (value > UINT16_MAX)
		return NULL;
	for (size_t i = 0; i < sizeof(coded) / sizeof(coded[0]); i++)
		if (coded[i].msg == msg && coded[i].field == field)
			return coded[i].name((unsigned)value);
	return NULL;
}

uint64_t cm_timeout_ns(unsigned t)
{
	if (t > CM_TIMEOUT_MAX)
		return 0;
	return 4096ull << t;
}

/*
 * Closed form rather than a walk up the exponents: the RTS attributes of
 * every active connection ask for it, on the REP's path.  With c the
 * number of 4.096 us units `ns` needs (rounded up), t is ceil(log2(c)).
 */
unsigned cm_timeout_from_ns(uint64_t ns)
{
	uint64_t c = (ns >> 12) + ((ns & 4095) != 0);
	unsigned t = c <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(c - 1);

	return t < CM_TIMEOUT_MAX ? t : CM_TIMEOUT_MAX;
}

/* Methods each attribute may use: Send for the protocol messages. */
static int method_allowed(uint16_t attr_id, uint8_t method)
{
	if (attr_id == CM_ATTR_CLASS_PORT_INFO)
		return method == CM_METHOD_GET || method == CM_METHOD_SET ||
		       method == CM_METHOD_GET_RESP;
	return method == CM_METHOD_SEND;
}

/* Length fields whose values beyond the fixed-size blocks are forbidden. */
static const struct {
	const struct mad_field *len;
	unsigned max;
} length_rules[] = {
    {&cm_rej_fields[CM_REJ_REJECT_INFO_LENGTH], CM_REJ_ARI_SIZE},
    {&cm_apr_fields[CM_APR_ADDITIONAL_INFO_LENGTH], CM_APR_INFO_SIZE},
    {&cm_sidr_rep_fields[CM_SIDR_REP_ADDITIONAL_INFO_LENGTH], CM_SIDR_REP_INFO_SIZE},
};

int cm_msg_check(const void *mad, size_t len, const struct mad_layout **msg)
{
	const uint8_t *m = mad;
	const struct mad_layout *l;
	uint16_t attr;
	uint8_t method;

	if (msg)
		*msg = NULL;
	if (!mad || len != CM_MAD_SIZE)
		return -EINVAL;
	if (mad_get(m, mad_hdr_fields, MAD_HDR_BASE_VERSION) != CM_BASE_VERSION ||
	    mad_get(m, mad_hdr_fields, MAD_HDR_MGMT_CLASS) != CM_MGMT_CLASS ||
	    mad_get(m, mad_hdr_fields, MAD_HDR_CLASS_VERSION) != CM_CLASS_VERSION)
		return -EPROTO;
	attr = (uint16_t)mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID);
	l = cm_layout_by_attr(attr);
	if (!l)
		return -ENOMSG;
	method = (uint8_t)(mad_get(m, mad_hdr_fields, MAD_HDR_R) << 7 |
			   mad_get(m, mad_hdr_fields, MAD_HDR_METHOD));
	if (!method_allowed(attr, method))
		return -EOPNOTSUPP;
	for (size_t i = 0; i < sizeof(length_rules) / sizeof(length_rules[0]); i++) {
		const struct mad_field *f = length_rules[i].len;

		if (f >= l->fields && f < l->fields + l->nfields &&
		    mad_field_get(m + CM_MSG_OFFSET, f) > length_rules[i].max)
			return -EBADMSG;
	}
	if (msg)
		*msg = l;
	return 0;
}

int cm_mad_init(void *mad, size_t len, const struct mad_layout *msg, uint8_t method, uint64_t tid)
{
	uint8_t *m = mad;

	if (!mad || len < CM_MAD_SIZE || !msg || msg->mgmt_class != CM_MGMT_CLASS)
		return -EINVAL;
	return mad_hdr_init(m, len, CM_MGMT_CLASS, CM_CLASS_VERSION, method, tid, msg->attr_id, 0);
}
