/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Data packets of the soft verbs as they are on the wire (IBA vol 1
 * ch. 9 and 7.7): LRH, optional GRH, BTH, the extended transport headers
 * the opcode calls for, payload padded to 4 bytes, ICRC and VCRC (sent as
 * zero: nothing here corrupts bits).  A capture shows them as real traffic.
 */
#ifndef SIM_VERBS_PKT_H
#define SIM_VERBS_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* BTH opcodes: transport in the top 3 bits, operation in the low 5. */
enum {
	VOP_RC = 0x00,
	VOP_UC = 0x20,
	VOP_UD = 0x60,
	VOP_XRC = 0xa0, /* RC's operations, requests with an XRCETH (9.3.1) */

	VOP_SEND_FIRST = 0x00,
	VOP_SEND_MIDDLE = 0x01,
	VOP_SEND_LAST = 0x02,
	VOP_SEND_LAST_IMM = 0x03,
	VOP_SEND_ONLY = 0x04,
	VOP_SEND_ONLY_IMM = 0x05,
	VOP_WRITE_FIRST = 0x06,
	VOP_WRITE_MIDDLE = 0x07,
	VOP_WRITE_LAST = 0x08,
	VOP_WRITE_LAST_IMM = 0x09,
	VOP_WRITE_ONLY = 0x0a,
	VOP_WRITE_ONLY_IMM = 0x0b,
	VOP_READ_REQ = 0x0c,
	VOP_READ_RESP_FIRST = 0x0d,
	VOP_READ_RESP_MIDDLE = 0x0e,
	VOP_READ_RESP_LAST = 0x0f,
	VOP_READ_RESP_ONLY = 0x10,
	VOP_ACK = 0x11,
	VOP_ATOMIC_ACK = 0x12,
	VOP_CMP_SWAP = 0x13,
	VOP_FETCH_ADD = 0x14,
};

/* AETH syndrome: top 3 bits say ACK, RNR NAK or NAK (9.7.5.1). */
enum {
	VAETH_ACK = 0x00,
	VAETH_RNR = 0x20,
	VAETH_NAK = 0x60,
	VNAK_PSN_SEQ = 0x0,
	VNAK_INV_REQ = 0x1,
	VNAK_REM_ACCESS = 0x2,
	VNAK_REM_OP = 0x3,
};

#define VLRH_LNH_LOCAL 2
#define VLRH_LNH_GLOBAL 3
#define VPKT_LRH 8
#define VPKT_GRH 40
#define VPKT_BTH 12
#define VPKT_MAX_HDR (VPKT_LRH + VPKT_GRH + VPKT_BTH + 4 + 28 + 8 + 4)
#define VPKT_TAIL 6 /* ICRC + VCRC */
#define VPSN_MASK 0xffffffu
#define VQPN_MCAST 0xffffffu
#define VLID_MCAST_MIN 0xc000u

struct vpkt {
	/* LRH */
	uint8_t vl, sl;
	uint16_t dlid, slid;
	/* GRH */
	bool grh;
	uint8_t tclass, hop_limit;
	uint32_t flow_label;
	uint8_t sgid[16], dgid[16];
	/* BTH */
	uint8_t opcode;
	bool se, ack_req;
	uint16_t pkey;
	uint32_t dqpn, psn;
	/* extended headers, valid when the opcode carries them */
	uint32_t srqn;	       /* XRCETH: the XRC SRQ a request is for */
	uint32_t qkey, src_qp; /* DETH */
	uint64_t va;	       /* RETH, AtomicETH */
	uint32_t rkey, dma_len;
	uint64_t swap, compare; /* AtomicETH */
	uint8_t syndrome;	/* AETH */
	uint32_t msn;
	uint64_t orig; /* AtomicAckETH */
	uint32_t imm;  /* ImmDt, host order */
	/* payload */
	const uint8_t *payload;
	uint32_t paylen;
};

/* Which headers an opcode carries. */
enum {
	VH_RETH = 1 << 0,
	VH_DETH = 1 << 1,
	VH_AETH = 1 << 2,
	VH_ATOMIC = 1 << 3,
	VH_ATOMIC_ACK = 1 << 4,
	VH_IMM = 1 << 5,
	VH_PAYLOAD = 1 << 6,
	VH_VALID = 1 << 7,
	VH_XRCETH = 1 << 8,
};
unsigned int vpkt_headers(uint8_t opcode);

/* Encode p (with p->payload/paylen) into buf; returns the packet length or
 * -ENOSPC / -EINVAL. */
int vpkt_encode(const struct vpkt *p, uint8_t *buf, size_t cap);
/* Decode; p->payload points into buf.  -EINVAL on anything malformed:
 * never reads past len. */
int vpkt_decode(const uint8_t *buf, size_t len, struct vpkt *p);

static inline int vpsn_cmp(uint32_t a, uint32_t b)
{
	/* 24-bit serial number arithmetic: <0 if a is before b. */
	int32_t d = (int32_t)((a - b) << 8);

	return d >> 8;
}

#endif
