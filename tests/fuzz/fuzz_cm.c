/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the CM decoders: cm_msg_check on arbitrary bytes, then every field
 * of the layout it returns (and of every layout, on a copy padded to 256
 * bytes, since a decoder may be pointed at any message), and the rdma_cm IP
 * header decoder on the REQ/SIDR_REQ private data and on the raw input.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "cm/cm_wire.h"
#include "cm/ip_pdata.h"

static uint64_t sink;

static void read_all(const struct mad_layout *l, const uint8_t *msg)
{
	uint8_t bytes[CM_MSG_SIZE];

	for (unsigned i = 0; i < l->nfields; i++) {
		const struct mad_field *f = &l->fields[i];

		if (f->width > 64) {
			mad_field_get_bytes(msg, f, bytes);
			sink += bytes[0];
		} else {
			sink += mad_field_get(msg, f);
		}
	}
	sink += cm_private_data_size(l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mad_layout *l = NULL;
	struct sockaddr_storage src, dst;
	uint8_t mad[CM_MAD_SIZE] = {0};

	/* The checker sees exactly the input, so ASan catches any over-read. */
	if (cm_msg_check(data, size, &l) == 0) {
		size_t len;
		const uint8_t *pd = cm_private_data(l, data + CM_MSG_OFFSET, &len);

		read_all(l, data + CM_MSG_OFFSET);
		if (pd && (l == &cm_req_layout || l == &cm_sidr_req_layout))
			sink += (uint64_t)cm_ip_hdr_decode(pd, len, 0, &src, &dst);
	}
	memcpy(mad, data, size < sizeof(mad) ? size : sizeof(mad));
	for (const struct mad_layout *const *p = cm_wire_layouts; *p; p++)
		read_all(*p, mad + CM_MSG_OFFSET);

	/*
	 * Random bytes rarely make a valid header; force one (attribute and
	 * method picked by the input) so the length rules and the IP header
	 * of REQ/SIDR_REQ see fuzzed message bodies too.
	 */
	if (size) {
		static const uint16_t attrs[] = {0x0001, 0x0010, 0x0011, 0x0012, 0x0013, 0x0014,
						 0x0015, 0x0016, 0x0017, 0x0018, 0x0019, 0x001a};
		static const uint8_t methods[] = {CM_METHOD_SEND, CM_METHOD_GET, CM_METHOD_SET,
						  CM_METHOD_GET_RESP};
		uint16_t attr = attrs[data[0] % (sizeof(attrs) / sizeof(attrs[0]))];

		mad[0] = CM_BASE_VERSION;
		mad[1] = CM_MGMT_CLASS;
		mad[2] = CM_CLASS_VERSION;
		mad[3] = methods[(data[0] >> 4) % (sizeof(methods) / sizeof(methods[0]))];
		mad[16] = (uint8_t)(attr >> 8);
		mad[17] = (uint8_t)attr;
		if (cm_msg_check(mad, sizeof(mad), &l) == 0) {
			size_t len;
			const uint8_t *pd = cm_private_data(l, mad + CM_MSG_OFFSET, &len);

			read_all(l, mad + CM_MSG_OFFSET);
			if (pd)
				sink += (uint64_t)cm_ip_hdr_decode(pd, len, 7471, &src, &dst);
		}
	}
	sink += (uint64_t)cm_ip_hdr_decode(data, size, 0, &src, &dst);
	sink += (uint64_t)cm_ip_hdr_decode(data, size, 1, NULL, NULL);
	if (size >= 8) {
		uint64_t sid;
		unsigned ps;
		uint16_t port;

		memcpy(&sid, data, 8);
		if (cm_sid_to_ps_port(sid, &ps, &port) == 0)
			sink += ps + port;
	}
	return 0;
}
