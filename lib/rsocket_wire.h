/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The wire format of stream rsockets, as rdma-core's rsockets use it, so a
 * madcm rsocket and an rdma-core one talk to each other (the fields and
 * values are facts of that protocol; docs in man/rsocket.7):
 *
 *   - the 40-byte connection data carried in the REQ and the REP private
 *     data (struct rs_conn, big-endian on the wire);
 *   - the 32-bit immediate data of every RDMA WRITE WITH IMMEDIATE: an
 *     opcode in bits 31..29 and a 29-bit argument;
 *   - the 16-byte SGE and 24-byte iomap entries that a peer RDMA-writes
 *     into our target buffer, in the receiver's byte order (the writer
 *     swaps when the peer's RS_CONN_FLAG_NET says it differs).
 *
 * Datagram rsockets (SOCK_DGRAM over UD) put the sender's address in front
 * of every UD SEND (rdma-core's struct ds_header): see ds_hdr_encode.
 *
 * Pure encoding, no verbs: tests/unit/test_rsocket_wire.c checks it.
 */
#ifndef MADCM_LIB_RSOCKET_WIRE_H
#define MADCM_LIB_RSOCKET_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Immediate data opcodes (bits 31..29). */
enum {
	RS_OP_DATA = 0,	     /* argument: bytes written into the receive buffer */
	RS_OP_WRITE = 2,     /* riowrite: never sent, only marks our own WRs */
	RS_OP_SGL = 4,	     /* argument: the sender's new credit limit (seq no.) */
	RS_OP_IOMAP_SGL = 6, /* argument: the iomap slot just written */
	RS_OP_CTRL = 7,	     /* argument: one of RS_CTRL_* */
};

enum {
	RS_CTRL_DISCONNECT = 0,
	RS_CTRL_KEEPALIVE = 1,
	RS_CTRL_SHUTDOWN = 2,
};

#define RS_MSG_DATA_MASK 0x1FFFFFFFu

static inline uint32_t rs_msg(uint32_t op, uint32_t data)
{
	return (op << 29) | (data & RS_MSG_DATA_MASK);
}

static inline uint32_t rs_msg_op(uint32_t msg)
{
	return msg >> 29;
}

static inline uint32_t rs_msg_data(uint32_t msg)
{
	return msg & RS_MSG_DATA_MASK;
}

#define RS_CONN_VERSION 1
#define RS_CONN_FLAG_NET 0x01	/* sender is big-endian */
#define RS_CONN_FLAG_IOMAP 0x02 /* sender has an iomap area after its SGL */
#define RS_CONN_DATA_LEN 40
#define RS_SGE_LEN 16	/* addr u64, key u32, length u32 */
#define RS_IOMAP_LEN 24 /* offset u64, then an SGE */
#define RS_SGL_SIZE 2	/* receive-buffer SGEs in a target buffer */

/* An SGE as it lies in memory (the layout both ends RDMA-write). */
struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

struct rs_iomap {
	uint64_t offset;
	struct rs_sge sge;
};

_Static_assert(sizeof(struct rs_sge) == RS_SGE_LEN, "rs_sge layout");
_Static_assert(sizeof(struct rs_iomap) == RS_IOMAP_LEN, "rs_iomap layout");

/* The connection data, decoded. */
struct rs_conn {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;     /* receive queue depth: initial send credits */
	uint8_t iomap_scale;  /* iomap slots, as rs_scale_to_value() reads */
	struct rs_sge target; /* the target buffer: SGL then iomap */
	struct rs_sge data;   /* first half of the receive buffer */
};

void rs_conn_encode(const struct rs_conn *c, uint8_t out[RS_CONN_DATA_LEN]);
/* 0, or -EINVAL (too short), -EPROTONOSUPPORT (version), -EPROTO (no SGL). */
int rs_conn_decode(const uint8_t *in, size_t len, struct rs_conn *c);

/* The 8-bit iomap size field: up to 128 as is, above in units of 256. */
uint8_t rs_value_to_scale(uint32_t value);
uint32_t rs_scale_to_value(uint8_t scale);

static inline int rs_host_is_net(void)
{
	return __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
}

void rs_sge_swap(struct rs_sge *s);
void rs_iomap_swap(struct rs_iomap *m);

/*
 * The datagram header: version (4 or 6), its length (8 or 24), the UDP
 * port and the address of the sending socket, port and address in network
 * order as a sockaddr holds them; for IPv6 sin6_flowinfo precedes the
 * address.  A receive slot holds the header and the payload.
 */
#define DS_HDR_V4_LEN 8
#define DS_HDR_V6_LEN 24
#define DS_HDR_MAX_LEN DS_HDR_V6_LEN
#define DS_MSG_SIZE 2048 /* header + payload of one datagram, at most */

struct sockaddr;
struct sockaddr_storage;

/* The header for sa (AF_INET or AF_INET6): its length, or -EAFNOSUPPORT. */
int ds_hdr_encode(const struct sockaddr *sa, uint8_t out[DS_HDR_MAX_LEN]);
/*
 * The sender's address from a received datagram: the header's length, or
 * -EINVAL (shorter than the header) or -EPROTO (unknown version, or a
 * length that does not match it).
 */
int ds_hdr_decode(const uint8_t *in, size_t len, struct sockaddr_storage *sa);

/*
 * The UDP side channel of datagram rsockets: a kernel UDP socket bound to
 * the rsocket's own address and port carries, in front of its payload,
 * a tag, the version (4 or 6), an opcode, the header's length (16 or 28),
 * a reserved byte, the sender's QPN (low 24 bits, big-endian) and the
 * sender's address.  DATA carries a datagram whose destination is not yet
 * known (the receiver answers it with a CTRL and delivers the payload);
 * CTRL is that answer, no payload.  docs/rsocket-wire.md has the table.
 */
#define DS_UDP_TAG 0x55555555u
#define DS_UDP_V4_LEN 16
#define DS_UDP_V6_LEN 28
#define DS_UDP_MAX_LEN DS_UDP_V6_LEN
#define DS_UDP_OP_DATA RS_OP_DATA
#define DS_UDP_OP_CTRL RS_OP_CTRL

struct ds_udp_hdr {
	uint8_t version;  /* 4 or 6 */
	uint8_t op;	  /* DS_UDP_OP_DATA or DS_UDP_OP_CTRL */
	uint8_t length;	  /* DS_UDP_V4_LEN or DS_UDP_V6_LEN */
	uint32_t qpn;	  /* 24 bits */
	uint8_t addr[16]; /* 4 or 16 bytes, network order */
};

/* The header for op, qpn and sa (AF_INET or AF_INET6): its length, or -EAFNOSUPPORT. */
int ds_udp_encode(uint8_t op, uint32_t qpn, const struct sockaddr *sa, uint8_t out[DS_UDP_MAX_LEN]);
/*
 * A side-channel message received from a socket of family `family` (the
 * sender's address as recvfrom gave it): the header's length, or -EINVAL
 * (shorter than its header) or -EPROTO (another tag, a version that is
 * not the sender's family, a length that does not match the version).
 */
int ds_udp_decode(const uint8_t *in, size_t len, int family, struct ds_udp_hdr *h);

#endif
