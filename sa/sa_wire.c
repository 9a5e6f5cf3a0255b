/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* SA header and records: tables, enum names, SA MAD build and check. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sa/sa_wire.h"

#define SA_TABLE(pfx, lname)                                                                       \
	const struct mad_field lname##_fields[pfx##__COUNT] = {pfx##_FIELDS(MAD_FIELD_ENTRY, pfx)}

SA_TABLE(SA_HDR, sa_hdr);
SA_TABLE(SA_PR, sa_pr);
SA_TABLE(SA_MCMR, sa_mcmr);
SA_TABLE(SA_SR, sa_sr);
SA_TABLE(SA_II, sa_ii);
SA_TABLE(SA_NOTICE, sa_notice);
SA_TABLE(SA_NOTICE_GID, sa_notice_gid);

/* A layout of the SA class, its table named after the layout. */
#define SA_LAYOUT(lname, iba, sname, attr, off, sz)                                                \
	const struct mad_layout lname##_layout = {                                                 \
	    .name = (iba),                                                                         \
	    .short_name = (sname),                                                                 \
	    .mgmt_class = MAD_CLASS_SUBN_ADM,                                                      \
	    .attr_id = (attr),                                                                     \
	    .mad_offset = (off),                                                                   \
	    .size = (sz),                                                                          \
	    .fields = lname##_fields,                                                              \
	    .nfields = sizeof(lname##_fields) / sizeof(lname##_fields[0]),                         \
	}

SA_LAYOUT(sa_hdr, "SAHeader", "SA", 0, SA_HDR_OFFSET, SA_HDR_SIZE);
SA_LAYOUT(sa_pr, "PathRecord", "PR", SA_ATTR_PATH_RECORD, SA_DATA_OFFSET, SA_PR_SIZE);
SA_LAYOUT(sa_mcmr, "MCMemberRecord", "MCMR", SA_ATTR_MC_MEMBER_RECORD, SA_DATA_OFFSET,
	  SA_MCMR_SIZE);
SA_LAYOUT(sa_sr, "ServiceRecord", "SR", SA_ATTR_SERVICE_RECORD, SA_DATA_OFFSET, SA_SR_SIZE);
SA_LAYOUT(sa_ii, "InformInfo", "II", SA_ATTR_INFORM_INFO, SA_DATA_OFFSET, SA_II_SIZE);
SA_LAYOUT(sa_notice, "Notice", "NOTICE", SA_ATTR_NOTICE, SA_DATA_OFFSET, SA_NOTICE_SIZE);
/* Not an attribute of its own: the DataDetails of a Notice for traps 64..67. */
SA_LAYOUT(sa_notice_gid, "NoticeGIDTrap", "NOTICE_GID", 0,
	  SA_DATA_OFFSET + SA_NOTICE_DATA_DETAILS_OFFSET, SA_NOTICE_DATA_DETAILS_SIZE);

const struct mad_layout *const sa_wire_layouts[] = {
    &sa_hdr_layout, &sa_pr_layout,     &sa_mcmr_layout,	      &sa_sr_layout,
    &sa_ii_layout,  &sa_notice_layout, &sa_notice_gid_layout, NULL,
};

int sa_mtu_to_bytes(unsigned mtu)
{
	if (mtu < SA_MTU_256 || mtu > SA_MTU_4096)
		return -EINVAL;
	return 128 << mtu;
}

int sa_mtu_from_bytes(unsigned bytes)
{
	for (unsigned mtu = SA_MTU_256; mtu <= SA_MTU_4096; mtu++)
		if (bytes == 128u << mtu)
			return (int)mtu;
	return -EINVAL;
}

const char *sa_mtu_name(unsigned mtu)
{
	static const char *const names[] = {NULL, "256", "512", "1024", "2048", "4096"};

	if (mtu < SA_MTU_256 || mtu > SA_MTU_4096)
		return "unknown";
	return names[mtu];
}

/* Nominal data rates of the rate enum, by value; 0 where the value is reserved. */
static const struct {
	int mbps;
	const char *name;
} sa_rates[SA_RATE_MAX_ENUM + 1] = {
    [2] = {2500, "2.5 Gb/s"},	 [3] = {10000, "10 Gb/s"},    [4] = {30000, "30 Gb/s"},
    [5] = {5000, "5 Gb/s"},	 [6] = {20000, "20 Gb/s"},    [7] = {40000, "40 Gb/s"},
    [8] = {60000, "60 Gb/s"},	 [9] = {80000, "80 Gb/s"},    [10] = {120000, "120 Gb/s"},
    [11] = {14000, "14 Gb/s"},	 [12] = {56000, "56 Gb/s"},   [13] = {112000, "112 Gb/s"},
    [14] = {168000, "168 Gb/s"}, [15] = {25000, "25 Gb/s"},   [16] = {100000, "100 Gb/s"},
    [17] = {200000, "200 Gb/s"}, [18] = {300000, "300 Gb/s"}, [19] = {28000, "28 Gb/s"},
    [20] = {50000, "50 Gb/s"},	 [21] = {400000, "400 Gb/s"}, [22] = {600000, "600 Gb/s"},
};

int sa_rate_to_mbps(unsigned rate)
{
	if (rate > SA_RATE_MAX_ENUM || !sa_rates[rate].mbps)
		return -EINVAL;
	return sa_rates[rate].mbps;
}

const char *sa_rate_name(unsigned rate)
{
	if (rate > SA_RATE_MAX_ENUM || !sa_rates[rate].name)
		return "unknown";
	return sa_rates[rate].name;
}

const char *sa_selector_name(unsigned sel)
{
	switch (sel) {
	case SA_SEL_GT:
		return "gt";
	case SA_SEL_LT:
		return "lt";
	case SA_SEL_EQ:
		return "eq";
	case SA_SEL_MAX:
		return "max";
	}
	return "unknown";
}

int sa_join_state_format(unsigned js, char *buf, size_t len)
{
	static const char *const bits[] = {"full", "non", "send_only_non", "send_only_full"};
	size_t used = 0;

	if (!buf || !len || js > 0xf)
		return -EINVAL;
	buf[0] = '\0';
	for (unsigned i = 0; i < 4; i++) {
		int n;

		if (!(js & (1u << i)))
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? "|" : "", bits[i]);
		if (n < 0 || (size_t)n >= len - used) {
			buf[0] = '\0';
			return -ENOSPC;
		}
		used += (size_t)n;
	}
	if (!used) {
		if (len < sizeof("none"))
			return -ENOSPC;
		memcpy(buf, "none", sizeof("none"));
		used = 4;
	}
	return (int)used;
}

const char *sa_status_name(uint16_t status)
{
	switch (status & MAD_STATUS_CLASS_MASK) {
	case 0:
		return "ok";
	case SA_STATUS_NO_RESOURCES:
		return "ERR_NO_RESOURCES";
	case SA_STATUS_REQ_INVALID:
		return "ERR_REQ_INVALID";
	case SA_STATUS_NO_RECORDS:
		return "ERR_NO_RECORDS";
	case SA_STATUS_TOO_MANY_RECORDS:
		return "ERR_TOO_MANY_RECORDS";
	case SA_STATUS_INVALID_GID:
		return "ERR_REQ_INVALID_GID";
	case SA_STATUS_INSUFFICIENT_COMPONENTS:
		return "ERR_REQ_INSUFFICIENT_COMPONENTS";
	case SA_STATUS_REQ_DENIED:
		return "ERR_REQ_DENIED";
	case SA_STATUS_PRIO_SUGGESTED:
		return "STATUS_PRIO_SUGGESTED";
	}
	return "unknown";
}

const char *sa_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
	case SA_ATTR_CLASS_PORT_INFO:
		return "ClassPortInfo";
	case SA_ATTR_NOTICE:
		return "Notice";
	case SA_ATTR_INFORM_INFO:
		return "InformInfo";
	case SA_ATTR_NODE_RECORD:
		return "NodeRecord";
	case SA_ATTR_PORT_INFO_RECORD:
		return "PortInfoRecord";
	case SA_ATTR_SL2VL_TABLE_RECORD:
		return "SLtoVLMappingTableRecord";
	case SA_ATTR_SWITCH_INFO_RECORD:
		return "SwitchInfoRecord";
	case SA_ATTR_LFT_RECORD:
		return "LinearForwardingTableRecord";
	case SA_ATTR_RFT_RECORD:
		return "RandomForwardingTableRecord";
	case SA_ATTR_MFT_RECORD:
		return "MulticastForwardingTableRecord";
	case SA_ATTR_SM_INFO_RECORD:
		return "SMInfoRecord";
	case SA_ATTR_LINK_RECORD:
		return "LinkRecord";
	case SA_ATTR_GUID_INFO_RECORD:
		return "GuidInfoRecord";
	case SA_ATTR_SERVICE_RECORD:
		return "ServiceRecord";
	case SA_ATTR_P_KEY_TABLE_RECORD:
		return "P_KeyTableRecord";
	case SA_ATTR_PATH_RECORD:
		return "PathRecord";
	case SA_ATTR_VL_ARB_TABLE_RECORD:
		return "VLArbitrationTableRecord";
	case SA_ATTR_MC_MEMBER_RECORD:
		return "MCMemberRecord";
	case SA_ATTR_TRACE_RECORD:
		return "TraceRecord";
	case SA_ATTR_MULTI_PATH_RECORD:
		return "MultiPathRecord";
	case SA_ATTR_SERVICE_ASSOCIATION_RECORD:
		return "ServiceAssociationRecord";
	case SA_ATTR_INFORM_INFO_RECORD:
		return "InformInfoRecord";
	}
	return "unknown";
}

const struct mad_layout *sa_layout_for_attr(uint16_t attr_id)
{
	switch (attr_id) {
	case SA_ATTR_CLASS_PORT_INFO:
		return &mad_cpi_layout;
	case SA_ATTR_NOTICE:
		return &sa_notice_layout;
	case SA_ATTR_INFORM_INFO:
		return &sa_ii_layout;
	case SA_ATTR_SERVICE_RECORD:
		return &sa_sr_layout;
	case SA_ATTR_PATH_RECORD:
		return &sa_pr_layout;
	case SA_ATTR_MC_MEMBER_RECORD:
		return &sa_mcmr_layout;
	}
	return NULL;
}

/* Methods of the SA class, IBA 15.2.2 (R bit included). */
static int sa_method_valid(uint8_t method)
{
	switch (method) {
	case MAD_METHOD_GET:
	case MAD_METHOD_GET_RESP:
	case MAD_METHOD_SET:
	case MAD_METHOD_REPORT:
	case MAD_METHOD_REPORT_RESP:
	case MAD_METHOD_GET_TABLE:
	case MAD_METHOD_GET_TABLE_RESP:
	case MAD_METHOD_GET_TRACE_TABLE:
	case MAD_METHOD_GET_MULTI:
	case MAD_METHOD_GET_MULTI_RESP:
	case MAD_METHOD_DELETE:
	case MAD_METHOD_DELETE_RESP:
		return 1;
	}
	return 0;
}

static uint8_t mad_method_byte(const void *mad)
{
	return (uint8_t)(mad_get(mad, mad_hdr_fields, MAD_HDR_R) << 7 |
			 mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD));
}

int sa_mad_init(void *mad, uint8_t method, uint16_t attr_id, uint64_t tid, uint64_t comp_mask)
{
	uint8_t *sa;
	int ret;

	if (!mad || !sa_method_valid(method))
		return -EINVAL;
	ret = mad_hdr_init(mad, MAD_SIZE, MAD_CLASS_SUBN_ADM, MAD_CLASS_VERSION_SA, method, tid,
			   attr_id, 0);
	if (ret)
		return ret;
	/*
	 * Requests are single MADs: the RMPP header stays zero (not active), as
	 * the kernel sends SA queries; the transport fills it for RMPP sends.
	 */
	sa = (uint8_t *)mad + SA_HDR_OFFSET;
	return mad_set(sa, sa_hdr_fields, SA_HDR_COMPONENT_MASK, comp_mask);
}

int sa_mad_check(const void *mad, size_t len)
{
	const uint8_t *p = mad;
	const struct mad_layout *rec;
	uint64_t attr_off;
	int ret;

	ret = mad_hdr_check(mad, len);
	if (ret)
		return ret;
	if (len < SA_DATA_OFFSET)
		return -EINVAL;
	if (mad_get(p, mad_hdr_fields, MAD_HDR_MGMT_CLASS) != MAD_CLASS_SUBN_ADM ||
	    mad_get(p, mad_hdr_fields, MAD_HDR_CLASS_VERSION) != MAD_CLASS_VERSION_SA)
		return -EPROTO;
	if (!sa_method_valid(mad_method_byte(p)))
		return -EPROTO;
	/* Records in a table are AttributeOffset * 8 bytes apart: never overlapping. */
	attr_off = mad_get(p + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET);
	rec = sa_layout_for_attr((uint16_t)mad_get(p, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID));
	if (attr_off && rec && attr_off * 8 < rec->size) {
		/*
		 * OpenSM rounds the offset down (size >> 3): its answer to a
		 * Set of InformInfo (36 bytes) says 4.  One record in one MAD
		 * cannot overlap another, so only a table must be exact.
		 */
		if (mad_method_byte(p) == MAD_METHOD_GET_TABLE_RESP ||
		    attr_off * 8 < (rec->size & ~7u))
			return -EPROTO;
	}
	return 0;
}

int sa_mad_record_count(const void *mad, size_t len, size_t *rec_size)
{
	size_t size;

	if (!mad || len < SA_DATA_OFFSET)
		return -EINVAL;
	size = (size_t)mad_get((const uint8_t *)mad + SA_HDR_OFFSET, sa_hdr_fields,
			       SA_HDR_ATTRIBUTE_OFFSET) *
	       8;
	if (rec_size)
		*rec_size = size;
	if (!size)
		return 0;
	return (int)((len - SA_DATA_OFFSET) / size);
}
