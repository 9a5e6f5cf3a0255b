/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Generic printer of any struct mad_layout (mad/field.h): every field by
 * its IBA name, as aligned text or as JSON members.  The printer knows
 * nothing about particular messages; value names (REJ reasons, methods)
 * come from a callback the caller passes.
 *
 * Value formats follow the field's fmt:
 *   DEC   decimal                       JSON number (string when > 53 bits)
 *   HEX   0x, zero-padded to the width  JSON number when <= 53 bits, else
 *                                       "0x..." string (64-bit ids, GUIDs)
 *   BOOL  0 / 1                         JSON number
 *   GID   8 groups of 4 hex digits      JSON string
 *   BYTES hex; trailing zero bytes are  JSON string of hex digits without
 *         summarised "(+N zero bytes)"  the trailing zero bytes
 *   STR   text up to the first NUL      JSON string, escaped
 *   RSVD  as HEX/BYTES, and only printed when not zero
 */
#ifndef MADCM_TOOLS_LAYOUT_PRINT_H
#define MADCM_TOOLS_LAYOUT_PRINT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mad/field.h"

/*
 * Name of a coded value (e.g. "stale_connection" for REJ reason 10), or
 * NULL when the field has no names or the value none.  `buf` is the
 * layout's start, for names that depend on another field.
 */
typedef const char *(*layout_value_namer)(const struct mad_layout *l, const struct mad_field *f,
					  uint64_t value, const uint8_t *buf);

struct layout_print_opts {
	bool json;
	unsigned indent;	  /* text: spaces before each line */
	unsigned name_width;	  /* text: pad names to this (0: the layout's longest) */
	const char *prefix;	  /* text: put before each name, e.g. "mad." */
	layout_value_namer namer; /* may be NULL */
	bool first;		  /* json: no comma before the first member */
};

/*
 * Print the fields of `l` found in `buf`, which must hold `len` bytes; a
 * field that does not fit in `len` is reported as truncated instead of
 * read.  Text: one "name: value" line per field.  JSON: members
 * `"name":value` separated by commas (and a comma before the first one
 * unless opts->first), plus `"name_name":"..."` for named values; the
 * caller writes the braces.  Returns the number of fields printed.
 */
unsigned layout_print(FILE *out, const struct mad_layout *l, const uint8_t *buf, size_t len,
		      const struct layout_print_opts *opts);

/* Length of the longest field name of `l` (text alignment). */
unsigned layout_name_width(const struct mad_layout *l);

/* Write `s` (n bytes, or up to NUL when n is -1) as a JSON string literal. */
void json_print_string(FILE *out, const char *s, long n);

/* Write bytes as lowercase hex digits, no separators. */
void print_hex_bytes(FILE *out, const uint8_t *p, size_t n);

/* Format a 16-byte GID as 8 colon-separated groups of 4 hex digits. */
void format_gid(char out[40], const uint8_t gid[16]);

#endif
