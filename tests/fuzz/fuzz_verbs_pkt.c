/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the soft verbs packet decoder (sim/verbs_pkt.c), which parses what
 * fabsimd and other processes send: raw input, then the same bytes with a
 * consistent LRH PktLen so random input gets past the length check.  What
 * decodes must re-encode to a packet that decodes to the same fields.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/verbs_pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const uint8_t *buf, size_t len)
{
	static uint8_t out[16384];
	struct vpkt p, q;
	int n;

	if (vpkt_decode(buf, len, &p))
		return;
	if (p.paylen > 8192)
		abort(); /* PktLen is 11 bits: cannot happen */
	n = vpkt_encode(&p, out, sizeof(out));
	if (n < 0)
		return; /* e.g. payload on an opcode that takes none */
	if (vpkt_decode(out, (size_t)n, &q) || q.opcode != p.opcode || q.dqpn != p.dqpn ||
	    q.psn != p.psn || q.paylen != p.paylen || q.dlid != p.dlid || q.slid != p.slid ||
	    q.grh != p.grh || memcmp(q.payload, p.payload, p.paylen))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b;

	roundtrip(data, size);
	if (size < 8 || size > 8190 || (size & 3) != 2)
		return 0;
	b = malloc(size);
	if (!b)
		return 0;
	memcpy(b, data, size);
	b[4] = (uint8_t)((size - 2) / 4 >> 8);
	b[5] = (uint8_t)((size - 2) / 4);
	b[1] = (uint8_t)((b[1] & ~3) | (b[1] & 1 ? 3 : 2));
	roundtrip(b, size);
	free(b);
	return 0;
}
