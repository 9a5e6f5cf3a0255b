/*
 * The rsocket wire decoders (lib/rsocket_wire.c) on arbitrary bytes: the
 * stream connection data and the datagram header.  The first byte picks
 * the decoder, its bit 1 a valid version.  What decodes must encode back to the same bytes (the
 * connection data's reserved bytes aside), and nothing reads past the
 * input (ASan).
 */
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
