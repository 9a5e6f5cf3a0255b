/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz what takes the SA's Reports apart (sa/notice.c): sa_report_parse
 * on the input as received and on a copy whose SA header is forced to a
 * Report of a Notice; when it accepts, the ReportResp built from it must
 * echo the Report (same TID and Notice), and the Notice and the leading
 * InformInfo bytes must come back unchanged through decode and encode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *mad, size_t size)
{
	uint8_t resp[MAD_SIZE], rec[SA_NOTICE_SIZE];
	struct sa_notice n, back;
	struct sa_inform ii, iiback;

	if (sa_report_parse(mad, size, &n))
		return;
	if (sa_report_resp_build(mad, size, resp))
		abort();
	if (resp[3] != MAD_METHOD_REPORT_RESP || memcmp(resp + 8, mad + 8, 8) ||
	    memcmp(resp + SA_DATA_OFFSET, mad + SA_DATA_OFFSET, SA_NOTICE_SIZE))
		abort();
	/* Decode, encode, decode: the same Notice (its reserved bits aside). */
	if (sa_notice_encode(&n, rec))
		abort();
	sa_notice_decode(rec, &back);
	if (memcmp(&n, &back, sizeof(n)))
		abort();
	sa_inform_decode(mad + SA_DATA_OFFSET, &ii);
	if (sa_inform_encode(&ii, rec))
		abort();
	sa_inform_decode(rec, &iiback);
	if (memcmp(&ii, &iiback, sizeof(ii)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	one(data, size);
	/* Exactly `size` bytes, so ASan still catches overreads. */
	if (size < SA_DATA_OFFSET || !(copy = malloc(size)))
		return 0;
	memcpy(copy, data, size);
	copy[0] = MAD_BASE_VERSION;
	copy[1] = MAD_CLASS_SUBN_ADM;
	copy[2] = MAD_CLASS_VERSION_SA;
	copy[3] = MAD_METHOD_REPORT;
	copy[16] = 0;
	copy[17] = SA_ATTR_NOTICE;
	copy[24 + 3] &= ~MAD_RMPP_FLAG_ACTIVE; /* mostly not RMPP */
	if (data[0] & 1)
		copy[24 + 3] |= MAD_RMPP_FLAG_ACTIVE;
	copy[44] = 0;
	copy[45] &= 0x3f;
	one(copy, size);
	free(copy);
	return 0;
}
