/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Fuzz the pcap reader and the IB packet parser on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "mad/pcap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mad_pcap_reader r;
	struct mad_pcap_record rec;
	volatile uint8_t sink = 0;

	/* The bytes as a packet from the LRH on (link type 247 payload). */
	{
		const uint8_t *mad;
		size_t mad_len;

		if (mad_pcap_parse_packet(data, size, NULL, &mad, &mad_len, NULL) == 0 && mad_len)
			sink ^= mad[mad_len - 1];
	}
	/* The bytes as a whole capture file. */
	if (mad_pcap_reader_init(&r, data, size))
		return 0;
	while (mad_pcap_next(&r, &rec) > 0) {
		const uint8_t *mad;
		size_t mad_len;

		if (rec.caplen)
			sink ^= rec.data[rec.caplen - 1];
		if (!rec.pkt)
			continue;
		if (mad_pcap_parse_packet(rec.pkt, rec.pkt_len, NULL, &mad, &mad_len, NULL) == 0 &&
		    mad_len)
			sink ^= mad[0] ^ mad[mad_len - 1];
	}
	(void)sink;
	return 0;
}
