/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Packet capture at a CA port: pcap files of link type 197 (ERF) whose
 * records are ERF type 21 (InfiniBand) carrying the packet from the LRH
 * on (LRH, [GRH], BTH, DETH, MAD, ICRC, VCRC), the form ibdump writes and
 * Debian's tshark decodes.  Only framing lives here; the CRCs are the
 * real ones so Wireshark's checks pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/fabsimd.h"

#define LINKTYPE_ERF 197
#define ERF_TYPE_INFINIBAND 21

struct fsd_capture {
	FILE *f;
	uint64_t packets;
};

static uint32_t crc32_table[256];
static uint16_t crc16_table[256];

static void crc_init(void)
{
	if (crc32_table[1])
		return;
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc32_table[i] = c;
		/* VCRC: CRC-16 with polynomial 0x100B, reflected (0xD008) */
		uint16_t d = (uint16_t)i;

		for (int k = 0; k < 8; k++)
			d = d & 1 ? (uint16_t)(0xd008 ^ (d >> 1)) : (uint16_t)(d >> 1);
		crc16_table[i] = d;
	}
}

static uint32_t crc32_buf(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--)
		c = crc32_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

static uint16_t crc16_buf(uint16_t c, const uint8_t *p, size_t n)
{
	while (n--)
		c = crc16_table[(c ^ *p++) & 0xff] ^ (uint16_t)(c >> 8);
	return c;
}

int fsd_capture_start(struct fsd_port *p, const char *path)
{
	struct fsd_capture *c;
	uint8_t gh[24];
	uint32_t v;

	crc_init();
	fsd_capture_stop(p);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->f = fopen(path, "wb");
	if (!c->f) {
		int e = -errno;

		free(c);
		return e;
	}
	/* pcap global header, little endian, microseconds */
	v = 0xa1b2c3d4u;
	memcpy(gh, &v, 4);
	gh[4] = 2, gh[5] = 0, gh[6] = 4, gh[7] = 0;
	memset(gh + 8, 0, 8);
	v = 65535;
	memcpy(gh + 16, &v, 4);
	v = LINKTYPE_ERF;
	memcpy(gh + 20, &v, 4);
	fwrite(gh, 1, sizeof(gh), c->f);
	fflush(c->f);
	p->capture = c;
	return 0;
}

void fsd_capture_stop(struct fsd_port *p)
{
	if (!p->capture)
		return;
	fclose(p->capture->f);
	free(p->capture);
	p->capture = NULL;
}

static void be16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void be32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

void fsd_capture_pkt(struct fsd_port *p, const struct fsd_pkt *pkt)
{
	struct fsd_capture *c = p->capture;
	uint8_t pk[8 + 40 + 12 + 8 + FSD_MAD_SIZE + 6];
	uint8_t erf[16], rec[16];
	size_t o = 0, icrc_start;
	bool smp = pkt->mad[1] == 0x01 || pkt->mad[1] == 0x81;
	bool grh = pkt->grh && !smp;
	struct timespec ts;

	if (!c)
		return;
	/* LRH: VL15 for SMPs, LNH 2 (BTH next) or 3 (GRH next) */
	size_t wire = 8 + (grh ? 40 : 0) + 12 + 8 + FSD_MAD_SIZE + 4;

	pk[0] = (uint8_t)((smp ? 15 : 0) << 4);
	pk[1] = (uint8_t)((pkt->sl & 0xf) << 4 | (grh ? 3 : 2));
	be16(pk + 2, pkt->dlid);
	be16(pk + 4, (uint16_t)(wire / 4));
	be16(pk + 6, pkt->slid);
	o = 8;
	if (grh) {
		uint64_t pre = mad_get_field64(pkt->src->pi, 0, IB_PORT_GID_PREFIX_F);

		memset(pk + o, 0, 40);
		pk[o] = 0x60;
		be16(pk + o + 4, (uint16_t)(12 + 8 + FSD_MAD_SIZE + 4));
		pk[o + 6] = 0x1b; /* next header: IBA transport */
		pk[o + 7] = 255;
		for (int i = 0; i < 8; i++) {
			pk[o + 8 + i] = (uint8_t)(pre >> (56 - 8 * i));
			pk[o + 16 + i] = (uint8_t)(pkt->src->guid >> (56 - 8 * i));
		}
		memcpy(pk + o + 24, pkt->gid, 16);
		o += 40;
	}
	/* BTH: UD SEND only */
	pk[o] = 0x64;
	pk[o + 1] = 0; /* SE, M, pad 0, TVer 0 */
	be16(pk + o + 2, p->pkeys[pkt->pkey_index < FSD_PKEYS ? pkt->pkey_index : 0]);
	be32(pk + o + 4, pkt->dqpn & 0xffffff);
	be32(pk + o + 8, 0);
	o += 12;
	/* DETH */
	be32(pk + o, pkt->qkey);
	be32(pk + o + 4, pkt->sqpn & 0xffffff);
	o += 8;
	memcpy(pk + o, pkt->mad, FSD_MAD_SIZE);
	o += FSD_MAD_SIZE;
	/* ICRC over the packet with the variant fields masked to ones */
	{
		uint8_t tmp[sizeof(pk)];
		size_t g = 8;

		memcpy(tmp, pk, o);
		memset(tmp, 0xff, 8); /* LRH */
		if (grh) {
			tmp[g] |= 0x0f; /* traffic class */
			tmp[g + 1] = 0xff;
			tmp[g] = (uint8_t)(tmp[g] | 0x0f);
			tmp[g + 1] = 0xff, tmp[g + 2] = 0xff,
				tmp[g + 3] = 0xff; /* TC + flow label */
			tmp[g + 7] = 0xff;	   /* hop limit */
			g += 40;
		}
		tmp[g + 4] = 0xff; /* BTH resv8a */
		icrc_start = 0;
		uint32_t icrc = ~crc32_buf(0xffffffffu, tmp + icrc_start, o);

		/* ICRC goes on the wire least significant byte first */
		pk[o] = (uint8_t)icrc;
		pk[o + 1] = (uint8_t)(icrc >> 8);
		pk[o + 2] = (uint8_t)(icrc >> 16);
		pk[o + 3] = (uint8_t)(icrc >> 24);
		o += 4;
	}
	{
		uint16_t vcrc = (uint16_t)~crc16_buf(0xffff, pk, o);

		pk[o] = (uint8_t)vcrc;
		pk[o + 1] = (uint8_t)(vcrc >> 8);
		o += 2;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	/* ERF header: 64-bit LE fixed-point timestamp, type, flags, rlen, lctr, wlen */
	uint64_t erf_ts =
	    ((uint64_t)ts.tv_sec << 32) + (((uint64_t)ts.tv_nsec << 32) / 1000000000ull);

	memcpy(erf, &erf_ts, 8);
	erf[8] = ERF_TYPE_INFINIBAND;
	erf[9] = 0x04; /* varying record length */
	be16(erf + 10, (uint16_t)(16 + o));
	be16(erf + 12, 0);
	be16(erf + 14, (uint16_t)o);
	uint32_t v = (uint32_t)ts.tv_sec;

	memcpy(rec, &v, 4);
	v = (uint32_t)(ts.tv_nsec / 1000);
	memcpy(rec + 4, &v, 4);
	v = (uint32_t)(16 + o);
	memcpy(rec + 8, &v, 4);
	memcpy(rec + 12, &v, 4);
	fwrite(rec, 1, 16, c->f);
	fwrite(erf, 1, 16, c->f);
	fwrite(pk, 1, o, c->f);
	fflush(c->f);
	c->packets++;
}

/*
 * Added for the soft verbs (sim/fabsimd_verbs.c): capture a data packet
 * that is already in wire format, LRH to VCRC.  ICRC and VCRC are
 * recomputed as above (the preload sends them as zero).
 */
void fsd_capture_raw(struct fsd_port *p, const uint8_t *pkt, size_t len)
{
	struct fsd_capture *c = p->capture;
	uint8_t pk[8192], tmp[8192], erf[16], rec[16];
	size_t o, g = 8;
	struct timespec ts;
	uint32_t icrc, v;
	uint16_t vcrc;

	if (!c || len < 8 + 12 + 6 || len > sizeof(pk))
		return;
	o = len - 6;
	memcpy(pk, pkt, o);
	memcpy(tmp, pk, o);
	memset(tmp, 0xff, 8);
	if ((pk[1] & 3) == 3) {
		tmp[g] |= 0x0f;
		tmp[g + 1] = 0xff, tmp[g + 2] = 0xff, tmp[g + 3] = 0xff;
		tmp[g + 7] = 0xff;
		g += 40;
	}
	if (g + 12 > o)
		return;
	tmp[g + 4] = 0xff;
	icrc = ~crc32_buf(0xffffffffu, tmp, o);
	pk[o] = (uint8_t)icrc;
	pk[o + 1] = (uint8_t)(icrc >> 8);
	pk[o + 2] = (uint8_t)(icrc >> 16);
	pk[o + 3] = (uint8_t)(icrc >> 24);
	o += 4;
	vcrc = (uint16_t)~crc16_buf(0xffff, pk, o);
	pk[o] = (uint8_t)vcrc;
	pk[o + 1] = (uint8_t)(vcrc >> 8);
	o += 2;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t erf_ts =
	    ((uint64_t)ts.tv_sec << 32) + (((uint64_t)ts.tv_nsec << 32) / 1000000000ull);

	memcpy(erf, &erf_ts, 8);
	erf[8] = ERF_TYPE_INFINIBAND;
	erf[9] = 0x04;
	be16(erf + 10, (uint16_t)(16 + o));
	be16(erf + 12, 0);
	be16(erf + 14, (uint16_t)o);
	v = (uint32_t)ts.tv_sec;
	memcpy(rec, &v, 4);
	v = (uint32_t)(ts.tv_nsec / 1000);
	memcpy(rec + 4, &v, 4);
	v = (uint32_t)(16 + o);
	memcpy(rec + 8, &v, 4);
	memcpy(rec + 12, &v, 4);
	fwrite(rec, 1, 16, c->f);
	fwrite(erf, 1, 16, c->f);
	fwrite(pk, 1, o, c->f);
	fflush(c->f);
	c->packets++;
}
