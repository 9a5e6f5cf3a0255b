/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The rsocket wire decoders (lib/rsocket_wire.c) on arbitrary bytes: the
 * stream connection data, the datagram header and the side channel's
 * header.  The first byte picks the decoder, its bit 1 a valid version.
 * What decodes must encode back to the same bytes (reserved bytes and the
 * QPN's unsent top byte aside), and nothing reads past the input (ASan).
 */
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/rsocket_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *in, out[RS_CONN_DATA_LEN > DS_HDR_MAX_LEN ? RS_CONN_DATA_LEN : DS_HDR_MAX_LEN];
	size_t len;

	if (!size)
		return 0;
	len = size - 1;
	/* An exact-size copy, so a read past the end is caught. */
	in = malloc(len ? len : 1);
	if (!in)
		return 0;
	memcpy(in, data + 1, len);
	/* Bit 1: make the version (and length) valid, to reach the rest. */
	if ((data[0] & 2) && len >= 2) {
		bool v6 = data[0] & 4;

		in[0] = (data[0] & 1) ? (v6 ? 6 : 4) : RS_CONN_VERSION;
		if (data[0] & 1)
			in[1] = v6 ? DS_HDR_V6_LEN : DS_HDR_V4_LEN;
	}
	if (data[0] & 1) {
		struct sockaddr_storage sa;
		int n = ds_hdr_decode(in, len, &sa);

		if (n > 0) {
			if (ds_hdr_encode((struct sockaddr *)&sa, out) != n ||
			    memcmp(out, in, (size_t)n))
				abort();
		}
		struct ds_udp_hdr h;
		int family = (data[0] & 4) ? AF_INET6 : AF_INET;

		/* The side channel's header: decoded, it encodes back the same. */
		n = ds_udp_decode(in, len, family, &h);
		if (n > 0) {
			struct sockaddr_storage a = {.ss_family = (sa_family_t)family};

			if (family == AF_INET)
				memcpy(&((struct sockaddr_in *)&a)->sin_addr, h.addr, 4);
			else
				memcpy(&((struct sockaddr_in6 *)&a)->sin6_addr, h.addr, 16);
			if (ds_udp_encode(h.op, h.qpn, (struct sockaddr *)&a, out) != n ||
			    memcmp(out, in, 7) || memcmp(out + 9, in + 9, (size_t)n - 9))
				abort();
		}
	} else {
		struct rs_conn c;

		if (!rs_conn_decode(in, len, &c)) {
			rs_conn_encode(&c, out);
			if (memcmp(out, in, 4) || out[7] != in[7] ||
			    memcmp(out + 8, in + 8, RS_CONN_DATA_LEN - 8))
				abort();
		}
	}
	free(in);
	return 0;
}
