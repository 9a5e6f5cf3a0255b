/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the SA MAD check and, when it accepts, decode everything the SA
 * client and `madcm decode` would: headers, every record the attribute
 * offset describes, and the GID of a GID-in/out-of-service Notice.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void read_layout(const struct mad_layout *l, const uint8_t *p)
{
	uint8_t wide[64];

	for (unsigned i = 0; i < l->nfields; i++) {
		const struct mad_field *f = &l->fields[i];

		if (f->width <= 64) {
			sink += mad_field_get(p, f);
		} else if (mad_field_len(f) <= sizeof(wide)) {
			mad_field_get_bytes(p, f, wide);
			sink += wide[0];
		}
	}
}

static void read_names(const struct mad_layout *l, const uint8_t *rec)
{
	char js[64];

	if (l == &sa_pr_layout) {
		sink += (uintptr_t)sa_mtu_name((unsigned)mad_get(rec, sa_pr_fields, SA_PR_MTU));
		sink += (uintptr_t)sa_rate_name((unsigned)mad_get(rec, sa_pr_fields, SA_PR_RATE));
		sink += (uintptr_t)sa_selector_name(
		    (unsigned)mad_get(rec, sa_pr_fields, SA_PR_MTU_SELECTOR));
		sink += (uint64_t)sa_rate_to_mbps((unsigned)mad_get(rec, sa_pr_fields, SA_PR_RATE));
		sink += (uint64_t)sa_mtu_to_bytes((unsigned)mad_get(rec, sa_pr_fields, SA_PR_MTU));
	} else if (l == &sa_mcmr_layout) {
		sink += (uint64_t)sa_join_state_format(
		    (unsigned)mad_get(rec, sa_mcmr_fields, SA_MCMR_JOIN_STATE), js, sizeof(js));
		sink += (uint64_t)sa_join_state_format(
		    (unsigned)mad_get(rec, sa_mcmr_fields, SA_MCMR_JOIN_STATE), js, 5);
	} else if (l == &sa_notice_layout) {
		uint64_t trap = mad_get(rec, sa_notice_fields, SA_NOTICE_TRAP_NUMBER);

		if (trap >= SA_TRAP_GID_IN_SERVICE && trap <= SA_TRAP_MCAST_GROUP_DELETED)
			read_layout(&sa_notice_gid_layout, rec + SA_NOTICE_DATA_DETAILS_OFFSET);
	}
}

static void decode(const uint8_t *data, size_t size)
{
	const struct mad_layout *l;
	size_t rec_size = 0;
	int n;

	if (sa_mad_check(data, size))
		return;
	read_layout(&mad_hdr_layout, data);
	read_layout(&mad_rmpp_layout, data + MAD_RMPP_HDR_OFFSET);
	read_layout(&sa_hdr_layout, data + SA_HDR_OFFSET);
	sink += (uintptr_t)sa_status_name((uint16_t)mad_get(data, mad_hdr_fields, MAD_HDR_STATUS));
	sink +=
	    (uintptr_t)sa_attr_name((uint16_t)mad_get(data, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID));
	l = sa_layout_for_attr((uint16_t)mad_get(data, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID));
	if (!l)
		return;
	n = sa_mad_record_count(data, size, &rec_size);
	if (n <= 0) {
		/* A single record (Get/Set/Report) without attribute offset. */
		if (size >= (size_t)SA_DATA_OFFSET + l->size) {
			read_layout(l, data + SA_DATA_OFFSET);
			read_names(l, data + SA_DATA_OFFSET);
		}
		return;
	}
	for (int i = 0; i < n; i++) {
		size_t at = SA_DATA_OFFSET + (size_t)i * rec_size;

		if (at + l->size > size)
			break;
		read_layout(l, data + at);
		read_names(l, data + at);
	}
}

/* Methods and attributes a valid SA MAD may carry, picked by input bytes. */
static const uint8_t methods[] = {0x01, 0x81, 0x02, 0x06, 0x86, 0x12,
				  0x92, 0x13, 0x14, 0x94, 0x15, 0x95};
static const uint16_t attrs[] = {SA_ATTR_PATH_RECORD,	 SA_ATTR_MC_MEMBER_RECORD,
				 SA_ATTR_SERVICE_RECORD, SA_ATTR_INFORM_INFO,
				 SA_ATTR_NOTICE,	 SA_ATTR_CLASS_PORT_INFO};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	decode(data, size);
	/*
	 * Random bytes rarely make a valid SA header, so also decode a copy
	 * whose header is forced valid: the records then see arbitrary data.
	 * The copy is exactly `size` bytes so ASan still catches overreads.
	 */
	if (size < SA_DATA_OFFSET || !(copy = malloc(size)))
		return 0;
	memcpy(copy, data, size);
	copy[0] = MAD_BASE_VERSION;
	copy[1] = MAD_CLASS_SUBN_ADM;
	copy[2] = MAD_CLASS_VERSION_SA;
	copy[3] = methods[data[3] % sizeof(methods)];
	copy[16] = 0;
	copy[17] = (uint8_t)attrs[data[17] % (sizeof(attrs) / sizeof(attrs[0]))];
	copy[44] = 0;
	copy[45] &= 0x3f; /* AttributeOffset up to 504 bytes */
	copy[24] = MAD_RMPP_VERSION;
	copy[25] = (uint8_t)(MAD_RMPP_TYPE_DATA + data[25] % 4);
	if (size > MAD_SIZE)
		copy[26] |= MAD_RMPP_FLAG_ACTIVE;
	decode(copy, size);
	free(copy);
	return 0;
}
