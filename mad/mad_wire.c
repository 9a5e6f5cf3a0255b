/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* MAD common header, RMPP header, ClassPortInfo: tables, names, checks. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "mad/mad_wire.h"

/* A class-independent layout and its table, named alike. */
#define MAD_LAYOUT(lname, PFX, iba, sname, attr, off, sz)                                          \
	const struct mad_field lname##_fields[PFX##__COUNT] = {                                    \
	    PFX##_FIELDS(MAD_FIELD_ENTRY, PFX)};                                                   \
	const struct mad_layout lname##_layout = {                                                 \
	    .name = (iba),                                                                         \
	    .short_name = (sname),                                                                 \
	    .mgmt_class = 0,                                                                       \
	    .attr_id = (attr),                                                                     \
	    .mad_offset = (off),                                                                   \
	    .size = (sz),                                                                          \
	    .fields = lname##_fields,                                                              \
	    .nfields = PFX##__COUNT,                                                               \
	}

MAD_LAYOUT(mad_hdr, MAD_HDR, "MADHeader", "MAD", 0, 0, MAD_HDR_SIZE);
MAD_LAYOUT(mad_rmpp, MAD_RMPP, "RMPPHeader", "RMPP", 0, MAD_RMPP_HDR_OFFSET, MAD_RMPP_HDR_SIZE);
/* Attribute 0x0001 of every class, offset-neutral (mad_offset 0). */
MAD_LAYOUT(mad_cpi, MAD_CPI, "ClassPortInfo", "CPI", 0x0001, 0, MAD_CPI_SIZE);

const struct mad_layout *const mad_wire_layouts[] = {
    &mad_hdr_layout,
    &mad_rmpp_layout,
    &mad_cpi_layout,
    NULL,
};

const char *mad_class_name(uint8_t c)
{
	switch (c) {
	case MAD_CLASS_SUBN_LID_ROUTED:
		return "SubnMgmt";
	case MAD_CLASS_SUBN_DIRECTED_ROUTE:
		return "SubnMgmtDR";
	case MAD_CLASS_SUBN_ADM:
		return "SubnAdm";
	case MAD_CLASS_PERF_MGMT:
		return "PerfMgmt";
	case MAD_CLASS_BM:
		return "BaseboardMgmt";
	case MAD_CLASS_DEVICE_MGMT:
		return "DevMgmt";
	case MAD_CLASS_CM:
		return "ComMgmt";
	case MAD_CLASS_SNMP:
		return "SNMP";
	case MAD_CLASS_DEVICE_ADM:
		return "DevAdm";
	case MAD_CLASS_BOOT_MGMT:
		return "BootMgmt";
	case MAD_CLASS_BIS:
		return "BIS";
	case MAD_CLASS_CONG_MGMT:
		return "CongMgmt";
	}
	if ((c >= MAD_CLASS_VENDOR_RANGE1_START && c <= MAD_CLASS_VENDOR_RANGE1_END) ||
	    (c >= MAD_CLASS_VENDOR_RANGE2_START && c <= MAD_CLASS_VENDOR_RANGE2_END))
		return "vendor";
	if (c >= MAD_CLASS_APPLICATION_START && c <= MAD_CLASS_APPLICATION_END)
		return "application";
	return "reserved";
}

const char *mad_method_name(uint8_t m)
{
	switch (m) {
	case MAD_METHOD_GET:
		return "Get";
	case MAD_METHOD_SET:
		return "Set";
	case MAD_METHOD_SEND:
		return "Send";
	case MAD_METHOD_TRAP:
		return "Trap";
	case MAD_METHOD_REPORT:
		return "Report";
	case MAD_METHOD_TRAP_REPRESS:
		return "TrapRepress";
	case MAD_METHOD_GET_TABLE:
		return "GetTable";
	case MAD_METHOD_GET_TRACE_TABLE:
		return "GetTraceTable";
	case MAD_METHOD_GET_MULTI:
		return "GetMulti";
	case MAD_METHOD_DELETE:
		return "Delete";
	case MAD_METHOD_GET_RESP:
		return "GetResp";
	case MAD_METHOD_REPORT_RESP:
		return "ReportResp";
	case MAD_METHOD_GET_TABLE_RESP:
		return "GetTableResp";
	case MAD_METHOD_GET_TRACE_TABLE_RESP:
		return "GetTraceTableResp";
	case MAD_METHOD_GET_MULTI_RESP:
		return "GetMultiResp";
	case MAD_METHOD_DELETE_RESP:
		return "DeleteResp";
	}
	return "unknown";
}

const char *mad_status_code_name(uint16_t status)
{
	switch ((status & MAD_STATUS_CODE_MASK) >> MAD_STATUS_CODE_SHIFT) {
	case MAD_STATUS_OK:
		return "ok";
	case MAD_STATUS_BAD_VERSION:
		return "bad base or class version";
	case MAD_STATUS_METHOD_UNSUPPORTED:
		return "method not supported";
	case MAD_STATUS_METHOD_ATTR_UNSUPPORTED:
		return "method/attribute combination not supported";
	case MAD_STATUS_INVALID_FIELD:
		return "invalid attribute or attribute modifier";
	}
	return "reserved";
}

const char *mad_rmpp_type_name(uint8_t type)
{
	switch (type) {
	case MAD_RMPP_TYPE_NONE:
		return "none";
	case MAD_RMPP_TYPE_DATA:
		return "DATA";
	case MAD_RMPP_TYPE_ACK:
		return "ACK";
	case MAD_RMPP_TYPE_STOP:
		return "STOP";
	case MAD_RMPP_TYPE_ABORT:
		return "ABORT";
	}
	return "unknown";
}

const char *mad_rmpp_status_name(uint8_t status)
{
	switch (status) {
	case MAD_RMPP_STATUS_NORMAL:
		return "normal";
	case MAD_RMPP_STATUS_RESX:
		return "resources exhausted";
	case MAD_RMPP_STATUS_T2L:
		return "total time too long";
	case MAD_RMPP_STATUS_BAD_LEN:
		return "inconsistent last and payload length";
	case MAD_RMPP_STATUS_BAD_SEG:
		return "inconsistent first and segment number";
	case MAD_RMPP_STATUS_BADT:
		return "bad RMPP type";
	case MAD_RMPP_STATUS_W2S:
		return "new window last too small";
	case MAD_RMPP_STATUS_S2B:
		return "segment number too big";
	case MAD_RMPP_STATUS_BAD_STATUS:
		return "illegal status";
	case MAD_RMPP_STATUS_UNV:
		return "unsupported version";
	case MAD_RMPP_STATUS_TMR:
		return "too many retries";
	case MAD_RMPP_STATUS_UNSPEC:
		return "unspecified error";
	}
	return "unknown";
}

int mad_class_version(uint8_t c)
{
	switch (c) {
	case MAD_CLASS_SUBN_LID_ROUTED:
	case MAD_CLASS_SUBN_DIRECTED_ROUTE:
		return MAD_CLASS_VERSION_SMP;
	case MAD_CLASS_SUBN_ADM:
		return MAD_CLASS_VERSION_SA;
	case MAD_CLASS_PERF_MGMT:
		return MAD_CLASS_VERSION_PERF;
	case MAD_CLASS_CM:
		return MAD_CLASS_VERSION_CM;
	case MAD_CLASS_CONG_MGMT:
		return MAD_CLASS_VERSION_CC;
	}
	return -1;
}

int mad_class_has_rmpp(uint8_t c)
{
	/* The classes the kernel MAD layer runs RMPP for (ib_is_mad_class_rmpp). */
	return c == MAD_CLASS_SUBN_ADM || c == MAD_CLASS_DEVICE_ADM || c == MAD_CLASS_BIS ||
	       c == MAD_CLASS_CONG_MGMT ||
	       (c >= MAD_CLASS_VENDOR_RANGE2_START && c <= MAD_CLASS_VENDOR_RANGE2_END);
}

/* Classes IBA 13.4.4 marks reserved: no MAD may carry them. */
static int mad_class_reserved(uint8_t c)
{
	return c == 0x00 || c == 0x02 || (c >= 0x50 && c <= 0x80) || c >= 0x82;
}

int mad_hdr_check(const void *mad, size_t len)
{
	const uint8_t *p = mad;
	uint8_t mgmt_class;
	int want;
	int rmpp_active = 0;

	if (!mad || len < MAD_HDR_SIZE)
		return -EINVAL;
	if (mad_get(p, mad_hdr_fields, MAD_HDR_BASE_VERSION) != MAD_BASE_VERSION)
		return -EPROTO;
	mgmt_class = (uint8_t)mad_get(p, mad_hdr_fields, MAD_HDR_MGMT_CLASS);
	if (mad_class_reserved(mgmt_class))
		return -EPROTO;
	want = mad_class_version(mgmt_class);
	if (want >= 0 && mad_get(p, mad_hdr_fields, MAD_HDR_CLASS_VERSION) != (unsigned)want)
		return -EPROTO;

	if (mad_class_has_rmpp(mgmt_class) && len >= MAD_RMPP_HDR_OFFSET + MAD_RMPP_HDR_SIZE) {
		const uint8_t *r = p + MAD_RMPP_HDR_OFFSET;
		uint64_t type = mad_get(r, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE);

		rmpp_active =
		    !!(mad_get(r, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS) & MAD_RMPP_FLAG_ACTIVE);
		if (rmpp_active &&
		    (mad_get(r, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION) != MAD_RMPP_VERSION ||
		     type < MAD_RMPP_TYPE_DATA || type > MAD_RMPP_TYPE_ABORT))
			return -EPROTO;
	}
	/* Only a reassembled RMPP transfer may be longer than one MAD. */
	if (len > MAD_SIZE && !rmpp_active)
		return -EINVAL;
	return 0;
}

int mad_hdr_init(void *mad, size_t len, uint8_t mgmt_class, uint8_t class_version, uint8_t method,
		 uint64_t tid, uint16_t attr_id, uint32_t attr_mod)
{
	uint8_t *p = mad;

	if (!mad || len < MAD_HDR_SIZE)
		return -EINVAL;
	memset(p, 0, len);
	/* Each value fits its field by its C type, so no set below can fail. */
	mad_set_fits(p, mad_hdr_fields, MAD_HDR_BASE_VERSION, MAD_BASE_VERSION);
	mad_set_fits(p, mad_hdr_fields, MAD_HDR_MGMT_CLASS, mgmt_class);
	mad_set_fits(p, mad_hdr_fields, MAD_HDR_CLASS_VERSION, class_version);
	mad_set_fits(p, mad_hdr_fields, MAD_HDR_R, method >> 7);
	mad_set_fits(p, mad_hdr_fields, MAD_HDR_METHOD, method & 0x7f);
	mad_set_fits(p, mad_hdr_fields, MAD_HDR_TRANSACTION_ID, tid);
	mad_set_fits(p, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID, attr_id);
	mad_set_fits(p, mad_hdr_fields, MAD_HDR_ATTRIBUTE_MODIFIER, attr_mod);
	return 0;
}
