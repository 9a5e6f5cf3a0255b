/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the whole `madcm decode` path on arbitrary bytes: input detection
 * (pcap, hex text, raw MADs), the layout registry, the text and JSON
 * printers.  Output goes to /dev/null; only crashes and sanitizer reports
 * matter.  The bytes are also tried as one raw MAD of their own length, so
 * short and odd-sized MADs reach the decoders directly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct decode_state st;
	struct decode_src src = {.name = "fuzz", .index = 1};

	if (!null) {
		null = fopen("/dev/null", "w");
		if (!null)
			abort();
	}
	for (int json = 0; json < 2; json++) {
		decode_state_init(&st, null, null, json);
		decode_input(&st, "fuzz", data, size);
		decode_mad(&st, &src, data, size);
	}
	return 0;
}
