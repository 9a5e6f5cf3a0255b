/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * MAD captures in pcap files.
 *
 * Writing: each MAD becomes one InfiniBand UD packet (LRH [+ GRH] + BTH +
 * DETH + MAD + ICRC + VCRC) rebuilt from a header description, since user
 * space never sees the link-level packet.  Two link types:
 *
 *  - 197 (LINKTYPE_ERF), each record an ERF header of type 21 (InfiniBand)
 *    followed by the packet from the LRH on, as Mellanox's ibdump writes.
 *    This is the default because Debian's tshark 4.0 refuses link type 247
 *    but dissects these records down to the CM and SA attributes.
 *  - 247 (LINKTYPE_INFINIBAND), the packet from the LRH on, no wrapper.
 *
 * Reading accepts both link types, either byte order, micro- or nanosecond
 * magic.  The reader works on a caller-owned memory buffer and never reads
 * past it, so it can be fed arbitrary bytes (it is fuzzed).
 *
 * The writer is safe to share between threads: each record is built in
 * full and written with one write(2) under a mutex, so a crash loses at
 * most the record being written.
 */
#ifndef MADCM_MAD_PCAP_H
#define MADCM_MAD_PCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum mad_pcap_linktype {
	MAD_PCAP_LINKTYPE_ERF = 197,
	MAD_PCAP_LINKTYPE_INFINIBAND = 247,
};

/* Sizes of the pieces of a UD packet carrying a MAD (IBA vol 1 ch. 9). */
#define MAD_PCAP_LRH_LEN 8
#define MAD_PCAP_GRH_LEN 40
#define MAD_PCAP_BTH_LEN 12
#define MAD_PCAP_DETH_LEN 8
#define MAD_PCAP_ICRC_LEN 4
#define MAD_PCAP_VCRC_LEN 2
#define MAD_PCAP_ERF_HDR_LEN 16
#define MAD_PCAP_ERF_TYPE_INFINIBAND 21
#define MAD_PCAP_BTH_OPCODE_UD_SEND_ONLY 0x64
#define MAD_PCAP_BTH_OPCODE_UD_SEND_ONLY_IMM 0x65

/* Largest payload written or accepted: the biggest IB MTU. */
#define MAD_PCAP_MAX_PAYLOAD 4096
/* Largest record accepted by the reader (caplen); bigger is malformed. */
#define MAD_PCAP_MAX_RECORD 65535

/*
 * The headers of one UD packet, in host order.  On capture of a send the
 * source is the local port and the destination the remote one; on receive
 * the reverse.  Fields a MAD send does not know (VL, PSN) may stay zero.
 */
struct mad_pcap_hdr {
	uint16_t slid;
	uint16_t dlid;
	uint8_t sl;	 /* 0..15 */
	uint8_t vl;	 /* 0..15; 15 for SMPs on QP0 */
	uint16_t pkey;	 /* P_Key in the BTH, e.g. 0xffff */
	uint32_t src_qp; /* 24 bits, in the DETH */
	uint32_t dst_qp; /* 24 bits, in the BTH */
	uint32_t qkey;	 /* in the DETH; 0x80010000 for QP1 */
	uint32_t psn;	 /* 24 bits */
	bool grh_present;
	uint8_t tclass;
	uint32_t flow_label; /* 20 bits */
	uint8_t hop_limit;
	uint8_t sgid[16];
	uint8_t dgid[16];
};

/*
 * Build the packet carrying `payload` (len <= MAD_PCAP_MAX_PAYLOAD) into
 * `out`.  Returns the packet length, -ENOBUFS when `outlen` is too small,
 * -EINVAL when a header value does not fit its field.  ICRC and VCRC are
 * computed (IBA 7.8): a capture that is replayed onto a link stays valid.
 */
long mad_pcap_build_packet(const struct mad_pcap_hdr *h, const void *payload, size_t len,
			   uint8_t *out, size_t outlen);

/*
 * Parse a packet from the LRH on.  On success fills *h (when not NULL) and
 * points *payload at the DETH payload inside `pkt` (the MAD), whose length
 * is taken from the LRH packet length and clipped to what was captured.
 * Returns 0; -ENOMSG for a well-formed packet of another transport
 * opcode (RC/UC/UD data, ACKs: no MAD in it); -EBADMSG for a malformed
 * one; with a static reason in *why (when not NULL).
 */
int mad_pcap_parse_packet(const uint8_t *pkt, size_t len, struct mad_pcap_hdr *h,
			  const uint8_t **payload, size_t *payload_len, const char **why);

/* ---- writer ---- */

struct mad_pcap_writer;

/*
 * Create (truncate) `path` and write the file header.  Returns 0 and the
 * writer in *out, or -errno.
 */
int mad_pcap_writer_open(struct mad_pcap_writer **out, const char *path,
			 enum mad_pcap_linktype linktype);

/* Same on an open file descriptor, which the writer then owns. */
int mad_pcap_writer_fdopen(struct mad_pcap_writer **out, int fd, enum mad_pcap_linktype linktype);

/*
 * Append one MAD with the time it was sent or received (`ts`, wall clock;
 * NULL means now).  Thread-safe; the record is on disk (in the kernel)
 * when this returns.  Returns 0 or -errno.
 */
int mad_pcap_write(struct mad_pcap_writer *w, const struct timespec *ts,
		   const struct mad_pcap_hdr *h, const void *mad, size_t len);

/* Close and free.  Returns 0 or the -errno of close(2).  NULL is a no-op. */
int mad_pcap_writer_close(struct mad_pcap_writer *w);

/* ---- reader ---- */

struct mad_pcap_reader {
	const uint8_t *buf;
	size_t len;
	size_t pos;
	uint32_t linktype;
	uint32_t snaplen;
	bool swapped;	/* file written on a host of the other byte order */
	bool nsec;	/* timestamps in nanoseconds */
	unsigned index; /* records read so far */
};

struct mad_pcap_record {
	struct timespec ts;
	unsigned index;	     /* 1-based, as tshark numbers frames */
	const uint8_t *data; /* the record as captured */
	size_t caplen;
	size_t wirelen;
	const uint8_t *pkt; /* the IB packet from the LRH on, or NULL */
	size_t pkt_len;	    /*  when the record carries no IB packet */
};

/*
 * Check the file header in `buf`.  Returns 0, -EPROTO for a foreign magic
 * number (not a pcap file), -EPROTONOSUPPORT for an unsupported link type,
 * -EBADMSG for a truncated header.
 */
int mad_pcap_reader_init(struct mad_pcap_reader *r, const void *buf, size_t len);

/*
 * Next record.  Returns 1 with *rec filled, 0 at the clean end of the file,
 * or -EBADMSG (truncated record header or data), -EMSGSIZE (record larger
 * than MAD_PCAP_MAX_RECORD); after an error the reader
 * stays at the end.  A record that is valid pcap but not an IB packet (ERF
 * of another type) comes back with rec->pkt == NULL.
 */
int mad_pcap_next(struct mad_pcap_reader *r, struct mad_pcap_record *rec);

/* True when `buf` starts with a pcap magic number (either byte order). */
bool mad_pcap_is_pcap(const void *buf, size_t len);

#endif
