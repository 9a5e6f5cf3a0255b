/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the MAD common header check and, when it accepts, every field of
 * the common layouts that fit in the input: header, RMPP header, and a
 * ClassPortInfo read from the data area of the class.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mad/mad_wire.h"

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

static void decode(const uint8_t *data, size_t size)
{
	uint16_t status;
	size_t cpi_at;

	if (mad_hdr_check(data, size))
		return;
	read_layout(&mad_hdr_layout, data);
	status = (uint16_t)mad_get(data, mad_hdr_fields, MAD_HDR_STATUS);
	sink += (uintptr_t)mad_class_name(data[1]) + (uintptr_t)mad_method_name(data[3]) +
		(uintptr_t)mad_status_code_name(status);
	if (size >= MAD_RMPP_HDR_OFFSET + MAD_RMPP_HDR_SIZE) {
		const uint8_t *r = data + MAD_RMPP_HDR_OFFSET;

		read_layout(&mad_rmpp_layout, r);
		sink += (uintptr_t)mad_rmpp_type_name(r[1]) + (uintptr_t)mad_rmpp_status_name(r[3]);
	}
	/* ClassPortInfo: 56 in SA, 64 in SMP/PerfMgt (40-byte class header), 24 elsewhere. */
	switch (data[1]) {
	case MAD_CLASS_SUBN_ADM:
		cpi_at = 56;
		break;
	case MAD_CLASS_SUBN_LID_ROUTED:
	case MAD_CLASS_SUBN_DIRECTED_ROUTE:
	case MAD_CLASS_PERF_MGMT:
		cpi_at = 64;
		break;
	default:
		cpi_at = 24;
	}
	if (size >= cpi_at + MAD_CPI_SIZE)
		read_layout(&mad_cpi_layout, data + cpi_at);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;
	int want;

	decode(data, size);
	/* Again with base and class version made valid, so the rest gets read. */
	if (size < MAD_HDR_SIZE || !(copy = malloc(size)))
		return 0;
	memcpy(copy, data, size);
	copy[0] = MAD_BASE_VERSION;
	want = mad_class_version(copy[1]);
	if (want >= 0)
		copy[2] = (uint8_t)want;
	decode(copy, size);
	free(copy);
	return 0;
}
