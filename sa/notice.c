/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * InformInfo and Notice codecs, and the checks and answer of an SA Report
 * (IBA 13.4.8.2, 13.4.8.3, 14.2.5.1; methods Report and ReportResp).
 * Pure functions on buffers: the client (sa/client.c), madcmd's proxy and
 * the tests share them.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

/* Every mad_set below checks its range; the last failure is returned. */
#define SET(buf, tab, id, v)                                                                       \
	do {                                                                                       \
		int r_ = mad_set(buf, tab, id, v);                                                 \
		if (r_)                                                                            \
			rc = r_;                                                                   \
	} while (0)

int sa_inform_encode(const struct sa_inform *ii, void *rec)
{
	int rc = 0;

	if (!ii || !rec)
		return -EINVAL;
	memset(rec, 0, SA_II_SIZE);
	mad_set_bytes(rec, sa_ii_fields, SA_II_GID, ii->gid);
	SET(rec, sa_ii_fields, SA_II_LID_RANGE_BEGIN, ii->lid_range_begin);
	SET(rec, sa_ii_fields, SA_II_LID_RANGE_END, ii->lid_range_end);
	SET(rec, sa_ii_fields, SA_II_IS_GENERIC, ii->is_generic);
	SET(rec, sa_ii_fields, SA_II_SUBSCRIBE, ii->subscribe);
	SET(rec, sa_ii_fields, SA_II_TYPE, ii->type);
	SET(rec, sa_ii_fields, SA_II_TRAP_NUMBER, ii->trap_number);
	SET(rec, sa_ii_fields, SA_II_QPN, ii->qpn);
	SET(rec, sa_ii_fields, SA_II_RESP_TIME_VALUE, ii->resp_time_value);
	SET(rec, sa_ii_fields, SA_II_PRODUCER_TYPE, ii->producer_type);
	return rc;
}

void sa_inform_decode(const void *rec, struct sa_inform *ii)
{
	memset(ii, 0, sizeof(*ii));
	mad_get_bytes(rec, sa_ii_fields, SA_II_GID, ii->gid);
	ii->lid_range_begin = (uint16_t)mad_get(rec, sa_ii_fields, SA_II_LID_RANGE_BEGIN);
	ii->lid_range_end = (uint16_t)mad_get(rec, sa_ii_fields, SA_II_LID_RANGE_END);
	ii->is_generic = mad_get(rec, sa_ii_fields, SA_II_IS_GENERIC) != 0;
	ii->subscribe = mad_get(rec, sa_ii_fields, SA_II_SUBSCRIBE) != 0;
	ii->type = (uint16_t)mad_get(rec, sa_ii_fields, SA_II_TYPE);
	ii->trap_number = (uint16_t)mad_get(rec, sa_ii_fields, SA_II_TRAP_NUMBER);
	ii->qpn = (uint32_t)mad_get(rec, sa_ii_fields, SA_II_QPN);
	ii->resp_time_value = (uint8_t)mad_get(rec, sa_ii_fields, SA_II_RESP_TIME_VALUE);
	ii->producer_type = (uint32_t)mad_get(rec, sa_ii_fields, SA_II_PRODUCER_TYPE);
}

void sa_inform_generic(struct sa_inform *ii, uint16_t trap, bool subscribe)
{
	memset(ii, 0, sizeof(*ii));
	/* Every issuer (LIDRangeBegin 0xFFFF), every type and producer. */
	ii->lid_range_begin = SA_II_LID_ALL;
	ii->is_generic = true;
	ii->subscribe = subscribe;
	ii->type = SA_II_TYPE_ALL;
	ii->trap_number = trap;
	/*
	 * Reports go to QP1 (the SA takes the subscriber's address from the
	 * Set); OpenSM matches an unsubscribe on the QPN it stored, 1.
	 */
	ii->qpn = 1;
	ii->resp_time_value = 18; /* 4.096 us * 2^18, about 1 s */
	ii->producer_type = SA_II_PRODUCER_ALL;
}

static bool notice_names_gid(const struct sa_notice *n)
{
	return n->is_generic && n->trap_number >= SA_TRAP_GID_IN_SERVICE &&
	       n->trap_number <= SA_TRAP_MCAST_GROUP_DELETED;
}

int sa_notice_encode(const struct sa_notice *n, void *rec)
{
	int rc = 0;

	if (!n || !rec)
		return -EINVAL;
	memset(rec, 0, SA_NOTICE_SIZE);
	SET(rec, sa_notice_fields, SA_NOTICE_IS_GENERIC, n->is_generic);
	SET(rec, sa_notice_fields, SA_NOTICE_TYPE, n->type);
	SET(rec, sa_notice_fields, SA_NOTICE_PRODUCER_TYPE, n->producer_type);
	SET(rec, sa_notice_fields, SA_NOTICE_TRAP_NUMBER, n->trap_number);
	SET(rec, sa_notice_fields, SA_NOTICE_ISSUER_LID, n->issuer_lid);
	SET(rec, sa_notice_fields, SA_NOTICE_NOTICE_TOGGLE, n->toggle);
	SET(rec, sa_notice_fields, SA_NOTICE_NOTICE_COUNT, n->count);
	mad_set_bytes(rec, sa_notice_fields, SA_NOTICE_DATA_DETAILS, n->data_details);
	if (notice_names_gid(n))
		mad_set_bytes((uint8_t *)rec + SA_NOTICE_DATA_DETAILS_OFFSET, sa_notice_gid_fields,
			      SA_NOTICE_GID_GID, n->gid);
	mad_set_bytes(rec, sa_notice_fields, SA_NOTICE_ISSUER_GID, n->issuer_gid);
	return rc;
}

void sa_notice_decode(const void *rec, struct sa_notice *n)
{
	memset(n, 0, sizeof(*n));
	n->is_generic = mad_get(rec, sa_notice_fields, SA_NOTICE_IS_GENERIC) != 0;
	n->type = (uint8_t)mad_get(rec, sa_notice_fields, SA_NOTICE_TYPE);
	n->producer_type = (uint32_t)mad_get(rec, sa_notice_fields, SA_NOTICE_PRODUCER_TYPE);
	n->trap_number = (uint16_t)mad_get(rec, sa_notice_fields, SA_NOTICE_TRAP_NUMBER);
	n->issuer_lid = (uint16_t)mad_get(rec, sa_notice_fields, SA_NOTICE_ISSUER_LID);
	n->toggle = mad_get(rec, sa_notice_fields, SA_NOTICE_NOTICE_TOGGLE) != 0;
	n->count = (uint16_t)mad_get(rec, sa_notice_fields, SA_NOTICE_NOTICE_COUNT);
	mad_get_bytes(rec, sa_notice_fields, SA_NOTICE_DATA_DETAILS, n->data_details);
	mad_get_bytes(rec, sa_notice_fields, SA_NOTICE_ISSUER_GID, n->issuer_gid);
	n->has_gid = notice_names_gid(n);
	if (n->has_gid)
		mad_get_bytes((const uint8_t *)rec + SA_NOTICE_DATA_DETAILS_OFFSET,
			      sa_notice_gid_fields, SA_NOTICE_GID_GID, n->gid);
}

int sa_report_parse(const void *mad, size_t len, struct sa_notice *n)
{
	const uint8_t *m = mad;

	if (!mad || !n)
		return -EINVAL;
	if (len < SA_DATA_OFFSET + SA_NOTICE_SIZE || sa_mad_check(mad, len))
		return -EPROTO;
	if (mad_get(m, mad_hdr_fields, MAD_HDR_R) ||
	    mad_get(m, mad_hdr_fields, MAD_HDR_METHOD) != MAD_METHOD_REPORT ||
	    mad_get(m, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) != SA_ATTR_NOTICE)
		return -EPROTO;
	/* A Report is one MAD: an active RMPP header makes no sense here. */
	if (mad_get(m + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS) &
	    MAD_RMPP_FLAG_ACTIVE)
		return -EPROTO;
	sa_notice_decode(m + SA_DATA_OFFSET, n);
	return 0;
}

int sa_report_resp_build(const void *report, size_t len, void *resp)
{
	if (!report || !resp || len < SA_DATA_OFFSET + SA_NOTICE_SIZE)
		return -EINVAL;
	/*
	 * The ReportResp carries the Report's TID and its attribute (the
	 * Notice) back unchanged, status 0: the SA matches it to the Report
	 * and stops resending.
	 */
	memset(resp, 0, MAD_SIZE);
	memcpy(resp, report, len < MAD_SIZE ? len : MAD_SIZE);
	mad_set_fits(resp, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set_fits(resp, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_REPORT);
	mad_set_fits(resp, mad_hdr_fields, MAD_HDR_STATUS, 0);
	return 0;
}
