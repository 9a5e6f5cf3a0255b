/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* IBA packet headers of the soft verbs data path: encode and decode. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <errno.h>
#include <string.h>

#include "sim/verbs_pkt.h"

static const uint8_t op_hdrs[0x20] = {
    [VOP_SEND_FIRST] = VH_VALID | VH_PAYLOAD,
    [VOP_SEND_MIDDLE] = VH_VALID | VH_PAYLOAD,
    [VOP_SEND_LAST] = VH_VALID | VH_PAYLOAD,
    [VOP_SEND_LAST_IMM] = VH_VALID | VH_PAYLOAD | VH_IMM,
    [VOP_SEND_ONLY] = VH_VALID | VH_PAYLOAD,
    [VOP_SEND_ONLY_IMM] = VH_VALID | VH_PAYLOAD | VH_IMM,
    [VOP_WRITE_FIRST] = VH_VALID | VH_PAYLOAD | VH_RETH,
    [VOP_WRITE_MIDDLE] = VH_VALID | VH_PAYLOAD,
    [VOP_WRITE_LAST] = VH_VALID | VH_PAYLOAD,
    [VOP_WRITE_LAST_IMM] = VH_VALID | VH_PAYLOAD | VH_IMM,
    [VOP_WRITE_ONLY] = VH_VALID | VH_PAYLOAD | VH_RETH,
    [VOP_WRITE_ONLY_IMM] = VH_VALID | VH_PAYLOAD | VH_RETH | VH_IMM,
    [VOP_READ_REQ] = VH_VALID | VH_RETH,
    [VOP_READ_RESP_FIRST] = VH_VALID | VH_PAYLOAD | VH_AETH,
    [VOP_READ_RESP_MIDDLE] = VH_VALID | VH_PAYLOAD,
    [VOP_READ_RESP_LAST] = VH_VALID | VH_PAYLOAD | VH_AETH,
    [VOP_READ_RESP_ONLY] = VH_VALID | VH_PAYLOAD | VH_AETH,
    [VOP_ACK] = VH_VALID | VH_AETH,
    [VOP_ATOMIC_ACK] = VH_VALID | VH_AETH | VH_ATOMIC_ACK,
    [VOP_CMP_SWAP] = VH_VALID | VH_ATOMIC,
    [VOP_FETCH_ADD] = VH_VALID | VH_ATOMIC,
};

unsigned int vpkt_headers(uint8_t opcode)
{
	uint8_t op = opcode & 0x1f;

	switch (opcode & 0xe0) {
	case VOP_RC:
		return op_hdrs[op];
	case VOP_UC:
		/* UC has sends and writes only. */
		return op <= VOP_WRITE_ONLY_IMM ? op_hdrs[op] : 0;
	case VOP_XRC:
		/* Requests name the target's SRQ; responses are RC's. */
		if (!op_hdrs[op])
			return 0;
		if (op >= VOP_READ_RESP_FIRST && op <= VOP_ATOMIC_ACK)
			return op_hdrs[op];
		return op_hdrs[op] | VH_XRCETH;
	case VOP_UD:
		if (op == VOP_SEND_ONLY || op == VOP_SEND_ONLY_IMM)
			return op_hdrs[op] | VH_DETH;
		return 0;
	default:
		return 0;
	}
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static size_t eth_len(unsigned int h)
{
	size_t n = 0;

	if (h & VH_XRCETH)
		n += 4;
	if (h & VH_DETH)
		n += 8;
	if (h & VH_RETH)
		n += 16;
	if (h & VH_ATOMIC)
		n += 28;
	if (h & VH_AETH)
		n += 4;
	if (h & VH_ATOMIC_ACK)
		n += 8;
	if (h & VH_IMM)
		n += 4;
	return n;
}

int vpkt_encode(const struct vpkt *p, uint8_t *buf, size_t cap)
{
	unsigned int h = vpkt_headers(p->opcode);
	size_t hdr, pad, total;
	uint8_t *b;

	if (!(h & VH_VALID) || (p->paylen && !(h & VH_PAYLOAD)))
		return -EINVAL;
	pad = (4 - (p->paylen & 3)) & 3;
	hdr = VPKT_LRH + (p->grh ? VPKT_GRH : 0) + VPKT_BTH + eth_len(h);
	total = hdr + p->paylen + pad + VPKT_TAIL;
	if (total > cap || (total - 2) / 4 > 0x7ff)
		return -ENOSPC;
	memset(buf, 0, hdr);
	b = buf;
	/* LRH (7.7): VL, LVer 0, SL, LNH, DLID, PktLen in words to ICRC. */
	b[0] = (uint8_t)(p->vl << 4);
	b[1] = (uint8_t)(p->sl << 4) | (p->grh ? VLRH_LNH_GLOBAL : VLRH_LNH_LOCAL);
	put16(b + 2, p->dlid);
	put16(b + 4, (uint16_t)((total - 2) / 4));
	put16(b + 6, p->slid);
	b += VPKT_LRH;
	if (p->grh) {
		/* GRH (8.3): IPVer 6, TClass, FlowLabel, PayLen, NxtHdr 0x1b. */
		put32(b, 6u << 28 | (uint32_t)p->tclass << 20 | (p->flow_label & 0xfffff));
		put16(b + 4, (uint16_t)(total - VPKT_LRH - VPKT_GRH - 2));
		b[6] = 0x1b;
		b[7] = p->hop_limit;
		memcpy(b + 8, p->sgid, 16);
		memcpy(b + 24, p->dgid, 16);
		b += VPKT_GRH;
	}
	/* BTH (9.2) */
	b[0] = p->opcode;
	b[1] = (uint8_t)((p->se ? 0x80 : 0) | pad << 4); /* M=0, TVer=0 */
	put16(b + 2, p->pkey);
	put24(b + 5, p->dqpn);
	b[8] = p->ack_req ? 0x80 : 0;
	put24(b + 9, p->psn);
	b += VPKT_BTH;
	if (h & VH_XRCETH) {
		put24(b + 1, p->srqn);
		b += 4;
	}
	if (h & VH_DETH) {
		put32(b, p->qkey);
		put24(b + 5, p->src_qp);
		b += 8;
	}
	if (h & VH_RETH) {
		put64(b, p->va);
		put32(b + 8, p->rkey);
		put32(b + 12, p->dma_len);
		b += 16;
	}
	if (h & VH_ATOMIC) {
		put64(b, p->va);
		put32(b + 8, p->rkey);
		put64(b + 12, p->swap);
		put64(b + 20, p->compare);
		b += 28;
	}
	if (h & VH_AETH) {
		b[0] = p->syndrome;
		put24(b + 1, p->msn);
		b += 4;
	}
	if (h & VH_ATOMIC_ACK) {
		put64(b, p->orig);
		b += 8;
	}
	if (h & VH_IMM) {
		put32(b, p->imm);
		b += 4;
	}
	if (p->paylen)
		memcpy(b, p->payload, p->paylen);
	memset(b + p->paylen, 0, pad + VPKT_TAIL);
	return (int)total;
}

int vpkt_decode(const uint8_t *buf, size_t len, struct vpkt *p)
{
	const uint8_t *b = buf, *end;
	unsigned int h, lnh, pad;
	size_t pktlen;

	memset(p, 0, sizeof(*p));
	if (len < VPKT_LRH + VPKT_BTH + VPKT_TAIL)
		return -EINVAL;
	p->vl = b[0] >> 4;
	p->sl = b[1] >> 4;
	lnh = b[1] & 3;
	p->dlid = get16(b + 2);
	pktlen = (size_t)(get16(b + 4) & 0x7ff) * 4;
	p->slid = get16(b + 6);
	if (pktlen + 2 != len || (lnh != VLRH_LNH_LOCAL && lnh != VLRH_LNH_GLOBAL))
		return -EINVAL;
	end = buf + len - VPKT_TAIL;
	b += VPKT_LRH;
	if (lnh == VLRH_LNH_GLOBAL) {
		uint32_t w;

		if (end - b < VPKT_GRH + VPKT_BTH)
			return -EINVAL;
		w = get32(b);
		if (w >> 28 != 6 || b[6] != 0x1b)
			return -EINVAL;
		p->grh = true;
		p->tclass = (uint8_t)(w >> 20);
		p->flow_label = w & 0xfffff;
		p->hop_limit = b[7];
		memcpy(p->sgid, b + 8, 16);
		memcpy(p->dgid, b + 24, 16);
		b += VPKT_GRH;
	}
	p->opcode = b[0];
	h = vpkt_headers(p->opcode);
	if (!(h & VH_VALID))
		return -EINVAL;
	p->se = b[1] & 0x80;
	pad = (b[1] >> 4) & 3;
	p->pkey = get16(b + 2);
	p->dqpn = get24(b + 5);
	p->ack_req = b[8] & 0x80;
	p->psn = get24(b + 9);
	b += VPKT_BTH;
	if ((size_t)(end - b) < eth_len(h) + pad)
		return -EINVAL;
	if (h & VH_XRCETH) {
		p->srqn = get24(b + 1);
		b += 4;
	}
	if (h & VH_DETH) {
		p->qkey = get32(b);
		p->src_qp = get24(b + 5);
		b += 8;
	}
	if (h & VH_RETH) {
		p->va = get64(b);
		p->rkey = get32(b + 8);
		p->dma_len = get32(b + 12);
		b += 16;
	}
	if (h & VH_ATOMIC) {
		p->va = get64(b);
		p->rkey = get32(b + 8);
		p->swap = get64(b + 12);
		p->compare = get64(b + 20);
		b += 28;
	}
	if (h & VH_AETH) {
		p->syndrome = b[0];
		p->msn = get24(b + 1);
		b += 4;
	}
	if (h & VH_ATOMIC_ACK) {
		p->orig = get64(b);
		b += 8;
	}
	if (h & VH_IMM) {
		p->imm = get32(b);
		b += 4;
	}
	p->payload = b;
	p->paylen = (uint32_t)(end - b - pad);
	if (p->paylen && !(h & VH_PAYLOAD))
		return -EINVAL;
	return 0;
}
