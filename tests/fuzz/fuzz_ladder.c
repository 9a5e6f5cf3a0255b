/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz madcm ladder's model and its three renderers on arbitrary bytes.
 * The input is read as a pcap capture; when it is not one, it is wrapped
 * in a pcap file header (link type 197 or 247 by its first byte) so the
 * records reach the model.  Output goes to /dev/null; only crashes,
 * sanitizer reports and leaks matter.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ladder_model.h"
#include "tools/ladder_render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run(FILE *null, const uint8_t *buf, size_t len, const struct ladder_opts *o)
{
	struct ladder_model m;

	if (ladder_model_build(&m, o, "fuzz", buf, len, null))
		return;
	ladder_render_json(null, &m, "fuzz");
	ladder_render_svg(null, &m, "fuzz");
	ladder_render_html(null, &m, "fuzz");
	ladder_model_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct ladder_opts all = {.sa = true};
	struct ladder_opts some = {.has_comm_id = true,
				   .comm_id = 0x9e3a61c4,
				   .has_from = true,
				   .from_ns = 1000,
				   .has_to = true,
				   .to_ns = 5000000000};
	uint8_t *wrapped;

	if (!null) {
		null = fopen("/dev/null", "w");
		if (!null)
			abort();
	}
	run(null, data, size, &all);
	run(null, data, size, &some);
	/* A pcap file header (little-endian, microseconds) before the bytes. */
	wrapped = malloc(size + 24);
	if (!wrapped)
		return 0;
	static const uint8_t hdr[24] = {0xd4, 0xc3, 0xb2, 0xa1, 2,    0,    4, 0, 0,   0, 0, 0,
					0,    0,    0,	  0,	0xff, 0xff, 0, 0, 197, 0, 0, 0};
	memcpy(wrapped, hdr, sizeof(hdr));
	if (size && (data[0] & 1))
		wrapped[20] = 247;
	if (size)
		memcpy(wrapped + 24, data, size);
	run(null, wrapped, size + 24, &all);
	free(wrapped);
	return 0;
}
