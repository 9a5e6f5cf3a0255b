/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The decode path of `madcm decode`, callable without the command line
 * (the fuzz target drives it): input detection, pcap/raw/hex readers, and
 * the printing of one MAD as text or as one JSON object per line.
 */
#ifndef MADCM_TOOLS_DECODE_H
#define MADCM_TOOLS_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>
#include <time.h>

#include "mad/field.h"
#include "mad/pcap.h"

struct decode_src;

struct decode_state {
	FILE *out; /* decoded MADs and per-MAD errors */
	FILE *err; /* notes (skipped records, unreadable input) */
	bool json;
	const char *prog; /* prefix of the notes, "madcm decode" */
	/*
	 * When set, each MAD an input holds goes here instead of to
	 * decode_mad() (madcm ladder builds its model so); `ctx` is its own.
	 */
	void (*on_mad)(struct decode_state *st, const struct decode_src *src, const uint8_t *mad,
		       size_t len);
	void *ctx;
	unsigned mads;	    /* MADs seen */
	unsigned malformed; /* MADs or inputs that were malformed */
	unsigned skipped;   /* capture records that carry no MAD */
};

/* Where a MAD came from, for the heading / the JSON "source" members. */
struct decode_src {
	const char *name; /* file name, "-" for stdin, "hex" */
	unsigned index;	  /* 1-based MAD number in that input */
	bool from_pcap;
	unsigned frame; /* pcap frame number */
	struct timespec ts;
	struct mad_pcap_hdr pkt; /* packet headers, when from_pcap */
};

void decode_state_init(struct decode_state *st, FILE *out, FILE *err, bool json);

/*
 * Decode every MAD in `buf`: a pcap file (either link type, by magic),
 * hex text (digits, whitespace, 0x prefixes, ':' ',' separators, # to end
 * of line), or raw bytes (256-byte MADs back to back).
 */
void decode_input(struct decode_state *st, const char *name, const uint8_t *buf, size_t len);

/* Decode every MAD of a pcap capture (either link type). */
void decode_pcap(struct decode_state *st, const char *name, const uint8_t *buf, size_t len);

/* Decode hex text only (the --hex argument). */
void decode_hex(struct decode_state *st, const char *name, const char *text, size_t len);

/* Decode and print one MAD. */
void decode_mad(struct decode_state *st, const struct decode_src *src, const uint8_t *mad,
		size_t len);

/*
 * Parse hex text into bytes (at most `cap`).  Returns the number of bytes,
 * or -EINVAL with a static reason in *why (a character that is not hex,
 * an odd number of digits), -ENOSPC when over `cap`.
 */
long hex_parse(const char *text, size_t len, uint8_t *out, size_t cap, const char **why);

/* True when every byte of `buf` may appear in hex text. */
bool looks_like_hex(const uint8_t *buf, size_t len);

/* The whole of `f` in a malloc'ed buffer (*len bytes), or NULL. */
uint8_t *decode_read_all(FILE *f, size_t *len);

/* The rdma_cm IP header at the start of a REQ's or SIDR_REQ's private data. */
struct ip_cm_hdr_view {
	unsigned version;
	unsigned ip_version;
	uint16_t src_port;
	uint16_t dst_port;
	const char *port_space;
	char src[INET6_ADDRSTRLEN];
	char dst[INET6_ADDRSTRLEN];
};

/*
 * Find it in the CM message `msg` of layout `l`: only where rdma_cm would
 * look (a REQ or SIDR_REQ to an rdma_cm service ID whose private data
 * decodes).  True with *v filled.
 */
bool decode_ip_cm_hdr(const struct mad_layout *l, const uint8_t *msg, struct ip_cm_hdr_view *v);

/* The `madcm decode` subcommand. */
int cmd_decode(int argc, char **argv);

#endif
