/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Registry: which layout decodes which MAD (see layouts.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "mad/mad_wire.h"
#include "sa/sa_wire.h"
#include "tools/layouts.h"

/* Where a class's data area starts when it has a class header. */
#define PERF_DATA_OFFSET 64 /* PerfMgt: 40 reserved bytes after the header */

const struct mad_layout *layouts_find(uint8_t mgmt_class, uint16_t attr_id)
{
	switch (mgmt_class) {
	case MAD_CLASS_CM:
		return cm_layout_by_attr(attr_id);
	case MAD_CLASS_SUBN_ADM:
		return sa_layout_for_attr(attr_id);
	case MAD_CLASS_PERF_MGMT:
		return attr_id == 0x0001 ? &mad_cpi_layout : NULL;
	}
	return NULL;
}

static bool is_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

static const char *cm_check_error(int err)
{
	switch (err) {
	case -EINVAL:
		return "CM MAD is not 256 bytes long";
	case -EPROTO:
		return "CM MAD with a base or class version other than 1/2";
	case -EOPNOTSUPP:
		return "method not allowed for this CM attribute";
	case -EBADMSG:
		return "CM info length (reject_info_length/additional_info_length) over 72";
	}
	return "malformed CM MAD";
}

static const char *sa_check_error(const uint8_t *mad, size_t len, int err)
{
	if (err == -EINVAL)
		return len < SA_DATA_OFFSET ? "SA MAD shorter than its 56-byte headers"
					    : "SA MAD with a bad length";
	if (mad[2] != MAD_CLASS_VERSION_SA)
		return "SA MAD with a class version other than 2";
	return "SA MAD with a bad method, RMPP header or attribute offset";
}

/* Records of an SA MAD: one, or a table every attribute_offset * 8 bytes. */
static void plan_sa(const uint8_t *mad, size_t len, struct mad_plan *p)
{
	const uint8_t *sa = mad + SA_HDR_OFFSET;
	size_t stride = (size_t)mad_get(sa, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET) * 8;
	uint8_t rmpp_flags =
	    (uint8_t)mad_get(mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS);
	uint8_t rmpp_type =
	    (uint8_t)mad_get(mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE);
	bool active = rmpp_flags & MAD_RMPP_FLAG_ACTIVE;
	size_t avail, n;

	if (active || rmpp_type || !is_zero(mad + MAD_RMPP_HDR_OFFSET, MAD_RMPP_HDR_SIZE))
		p->rmpp = &mad_rmpp_layout;
	p->data_offset = SA_DATA_OFFSET;

	/*
	 * Every RMPP DATA segment repeats the SA header (the kernel's
	 * mad_rmpp.c sends hdr_len = 56 bytes of headers in each), and its
	 * 200 data bytes from 56 on continue the record stream where the
	 * previous segment stopped: records need not start at a segment's
	 * data, so after the first segment they are shown as bytes.
	 */
	if (active && rmpp_type == MAD_RMPP_TYPE_DATA &&
	    mad_get(mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER) > 1) {
		p->class_hdr = &sa_hdr_layout;
		p->class_hdr_offset = SA_HDR_OFFSET;
		p->attr = NULL;
		return;
	}
	if (active && rmpp_type != MAD_RMPP_TYPE_DATA) {
		/* ACK, STOP, ABORT: the header says it all. */
		p->attr = NULL;
		p->data_offset = len;
		return;
	}
	p->class_hdr = &sa_hdr_layout;
	p->class_hdr_offset = SA_HDR_OFFSET;
	if (!p->attr)
		return;

	switch (p->method) {
	case MAD_METHOD_GET_TABLE_RESP:
	case MAD_METHOD_GET_MULTI_RESP:
	case MAD_METHOD_GET_TRACE_TABLE_RESP:
		p->table = true;
		break;
	default:
		p->stride = p->attr->size;
		p->nrecords = len >= (size_t)SA_DATA_OFFSET + p->attr->size ? 1 : 0;
		return;
	}
	if (!stride) {
		p->nrecords = 0; /* an empty table */
		return;
	}
	p->stride = stride;
	avail = len - SA_DATA_OFFSET;
	if (active && (rmpp_flags & MAD_RMPP_FLAG_FIRST)) {
		/* PayloadLength counts the SA header and every record. */
		size_t payload = (size_t)mad_get(mad + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields,
						 MAD_RMPP_PAYLOAD_LENGTH);

		if (payload >= SA_HDR_SIZE && payload - SA_HDR_SIZE < avail)
			avail = payload - SA_HDR_SIZE;
	}
	for (n = 0; n * stride + p->attr->size <= avail; n++)
		;
	/* Without a length from RMPP, trailing all-zero slots are padding. */
	if (!active)
		while (n && is_zero(mad + SA_DATA_OFFSET + (n - 1) * stride, p->attr->size))
			n--;
	p->nrecords = (unsigned)n;
}

int layouts_plan(const uint8_t *mad, size_t len, struct mad_plan *p, const char **why)
{
	const char *dummy;
	int ret;

	if (!why)
		why = &dummy;
	if (!p || (!mad && len)) {
		*why = "invalid argument";
		return -EINVAL;
	}
	memset(p, 0, sizeof(*p));
	p->class_name = "unknown";
	p->method_name = "unknown";
	if (len < MAD_HDR_SIZE) {
		*why = "shorter than the 24-byte MAD header";
		return -EBADMSG;
	}
	p->mgmt_class = mad[1];
	p->method = mad[3];
	p->attr_id = (uint16_t)(mad[16] << 8 | mad[17]);
	p->class_name = mad_class_name(p->mgmt_class);
	p->method_name = mad_method_name(p->method);
	p->data_offset = MAD_HDR_SIZE;
	if (mad[0] != MAD_BASE_VERSION) {
		*why = "base version is not 1";
		return -EBADMSG;
	}
	if (len < MAD_SIZE) {
		*why = "shorter than 256 bytes";
		return -EBADMSG;
	}

	switch (p->mgmt_class) {
	case MAD_CLASS_CM:
		ret = cm_msg_check(mad, len, &p->attr);
		if (ret == -ENOMSG) {
			p->attr = NULL; /* unknown attribute: bytes */
			return 0;
		}
		if (ret) {
			*why = cm_check_error(ret);
			return -EBADMSG;
		}
		p->attr_name = p->attr->name;
		p->message = p->attr->short_name ? p->attr->short_name : p->attr->name;
		p->data_offset = CM_MSG_OFFSET;
		p->nrecords = 1;
		p->stride = p->attr->size;
		return 0;
	case MAD_CLASS_SUBN_ADM:
		ret = sa_mad_check(mad, len);
		if (ret) {
			*why = sa_check_error(mad, len, ret);
			return -EBADMSG;
		}
		p->attr = sa_layout_for_attr(p->attr_id);
		p->attr_name = sa_attr_name(p->attr_id);
		if (p->attr_name && !strcmp(p->attr_name, "unknown"))
			p->attr_name = NULL;
		if (p->attr)
			p->message = p->attr->name;
		plan_sa(mad, len, p);
		return 0;
	default:
		ret = mad_hdr_check(mad, len);
		if (ret) {
			*why = ret == -EINVAL ? "MAD is not 256 bytes long (and not RMPP)"
					      : "bad class version or RMPP header";
			return -EBADMSG;
		}
		p->attr = layouts_find(p->mgmt_class, p->attr_id);
		if (p->attr) {
			p->attr_name = p->attr->name;
			p->message = p->attr->name;
			p->data_offset = PERF_DATA_OFFSET;
			p->nrecords = len >= (size_t)PERF_DATA_OFFSET + p->attr->size ? 1 : 0;
			p->stride = p->attr->size;
		}
		return 0;
	}
}

/* ---- value names ---- */

static bool is(const struct mad_field *f, const char *name)
{
	return f->name && !strcmp(f->name, name);
}

const char *layouts_value_name(const struct mad_layout *l, const struct mad_field *f, uint64_t v,
			       const uint8_t *buf)
{
	static char join[64];

	if (l == &mad_hdr_layout) {
		if (is(f, "mgmt_class"))
			return mad_class_name((uint8_t)v);
		if (is(f, "method"))
			return mad_method_name(buf[3]); /* with the R bit */
		if (is(f, "status") && v) {
			if ((v & MAD_STATUS_CLASS_MASK) && buf[1] == MAD_CLASS_SUBN_ADM)
				return sa_status_name((uint16_t)v);
			return mad_status_code_name((uint16_t)v);
		}
		return NULL;
	}
	if (l == &mad_rmpp_layout) {
		if (is(f, "rmpp_type"))
			return mad_rmpp_type_name((uint8_t)v);
		if (is(f, "rmpp_status"))
			return mad_rmpp_status_name((uint8_t)v);
		return NULL;
	}
	if (l == &cm_rej_layout) {
		if (is(f, "reason"))
			return cm_rej_reason_name((unsigned)v);
		if (is(f, "message_rejected"))
			return cm_rej_message_name((unsigned)v);
		return NULL;
	}
	if (l == &cm_mra_layout && is(f, "message_mraed"))
		return cm_mra_message_name((unsigned)v);
	if (l == &cm_sidr_rep_layout && is(f, "status"))
		return cm_sidr_status_name((unsigned)v);
	if (l == &cm_apr_layout && is(f, "ap_status"))
		return cm_apr_status_name((unsigned)v);
	if (l == &cm_req_layout && is(f, "transport_service_type"))
		return cm_transport_name((unsigned)v);
	if (l == &cm_req_layout && is(f, "path_packet_payload_mtu"))
		return sa_mtu_name((unsigned)v);
	if ((l == &cm_req_layout || l == &cm_lap_layout) && f->name &&
	    strstr(f->name, "_packet_rate") && v)
		return sa_rate_name((unsigned)v);
	if (l == &cm_rep_layout && is(f, "failover_accepted")) {
		static const char *const names[] = {"accepted", "rejected", "not_supported"};

		return v < 3 ? names[v] : NULL;
	}
	if (l == &sa_pr_layout || l == &sa_mcmr_layout) {
		if (is(f, "mtu"))
			return sa_mtu_name((unsigned)v);
		if (is(f, "rate"))
			return sa_rate_name((unsigned)v);
		if (is(f, "mtu_selector") || is(f, "rate_selector") ||
		    is(f, "packet_life_time_selector"))
			return sa_selector_name((unsigned)v);
		if (is(f, "join_state") &&
		    sa_join_state_format((unsigned)v, join, sizeof(join)) >= 0)
			return join;
	}
	return NULL;
}
