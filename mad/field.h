/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Table-driven wire fields.
 *
 * Every MAD layout (CM message, SA record, MAD header ...) is described by
 * one table of fields, each at (byte offset, bit offset from the most
 * significant bit of that byte, width in bits), exactly as the IBA tables
 * give them.  Protocol code names a field; the table says where it lives;
 * one generic get/set pair moves the bits.  No shifts and masks elsewhere.
 *
 * A table is written once as an X-macro list, from which both the enum of
 * field ids and the const table are generated:
 *
 *   #define CM_REQ_FIELDS(X, P) \
 *       X(P, LOCAL_COMM_ID, local_comm_id, 0, 0, 32, MF_HEX) \
 *       X(P, SERVICE_ID,    service_id,    8, 0, 64, MF_HEX)
 *   enum { CM_REQ_FIELDS(MAD_FIELD_ENUM, CM_REQ) CM_REQ__COUNT };
 *   const struct mad_field cm_req_fields[] = {
 *       CM_REQ_FIELDS(MAD_FIELD_ENTRY, CM_REQ) };
 *
 *   uint32_t id = mad_get(req, cm_req_fields, CM_REQ_LOCAL_COMM_ID);
 *
 * Field names are the IBA names in snake_case; they are what `madcm decode`
 * prints and the keys of its JSON output.
 */
#ifndef MADCM_MAD_FIELD_H
#define MADCM_MAD_FIELD_H

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* How a field is shown by decoders; does not change how it is stored. */
enum mad_field_fmt {
	MF_DEC,	  /* unsigned decimal */
	MF_HEX,	  /* 0x-prefixed hexadecimal, zero-padded to the width */
	MF_BOOL,  /* single bit flag shown as 0/1 */
	MF_GID,	  /* 128-bit GID shown as fe80:0000:... */
	MF_BYTES, /* opaque bytes (private data, reserved areas) as hex */
	MF_RSVD,  /* reserved: encoders write zero, decoders may check */
	MF_STR,	  /* NUL-padded text (NodeDescription, ServiceName) */
};

struct mad_field {
	const char *name; /* IBA name in snake_case */
	uint16_t byte;	  /* byte offset from the start of the layout */
	uint8_t bit;	  /* bit offset from the MSB of that byte, 0..7 */
	uint16_t width;	  /* width in bits; > 64 only when byte-aligned */
	uint8_t fmt;	  /* enum mad_field_fmt */
};

#define MAD_FIELD_ENUM(pfx, id, name, byte, bit, width, fmt) pfx##_##id,
#define MAD_FIELD_ENTRY(pfx, id, name, byte, bit, width, fmt)                                      \
	[pfx##_##id] = {#name, (byte), (bit), (width), (fmt)},

/*
 * A layout: one message or record.  Offsets in its fields are relative to
 * the layout's start; `mad_offset` says where that start sits inside a
 * 256-byte MAD (24 for CM messages, 56 for SA records, 0 for headers), or
 * 0 where the layout is not tied to one place.
 */
struct mad_layout {
	const char *name;	/* IBA attribute name, e.g. "ConnectRequest" */
	const char *short_name; /* e.g. "REQ"; NULL when none */
	uint8_t mgmt_class;	/* 0 when not class specific */
	uint16_t attr_id;	/* 0 when not an attribute */
	uint16_t mad_offset;
	uint16_t size; /* bytes */
	const struct mad_field *fields;
	unsigned nfields;
};

#define MAD_LAYOUT_FIELDS(tab) (tab), (unsigned)(sizeof(tab) / sizeof((tab)[0]))

/* The bit-by-bit moves of a field that spans more than 64 bits (in field.c). */
uint64_t mad_field_get_bits(const void *buf, const struct mad_field *f);
void mad_field_set_bits(void *buf, const struct mad_field *f, uint64_t value);

/*
 * Always inlined, even where GCC would rather call one shared copy (with
 * LTO it made one, called 18 times a REQ): inlined, a field of a table
 * whose contents the compiler sees (the CM's, under LTO) folds to a
 * constant offset and mask, a load or a store or two.  cmtime under
 * callgrind: madcm's instructions a connection 14% fewer on each side
 * (bench/cmtime_instr.sh, docs/results/connect-latency.md).
 */
#define MAD_FIELD_INLINE inline __attribute__((always_inline))

/*
 * The bytes [0, n) of p as one big-endian number.  Inline, with the
 * whole-word sizes one load each: every MAD built or parsed goes through
 * here, some fifty fields a CM message, and under an emulator (qemu's TCG,
 * the kernel test bed) each call and each byte's load costs many host
 * instructions.
 */
static MAD_FIELD_INLINE uint64_t mad_load_be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	switch (n) {
	case 1:
		return p[0];
	case 2: {
		uint16_t w;

		memcpy(&w, p, 2);
		return be16toh(w);
	}
	case 4: {
		uint32_t w;

		memcpy(&w, p, 4);
		return be32toh(w);
	}
	case 8:
		memcpy(&v, p, 8);
		return be64toh(v);
	}
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* The low n bytes of v into [0, n) of p, big-endian, as mad_load_be reads them. */
static MAD_FIELD_INLINE void mad_store_be(uint8_t *p, unsigned n, uint64_t v)
{
	switch (n) {
	case 1:
		p[0] = (uint8_t)v;
		return;
	case 2: {
		uint16_t w = htobe16((uint16_t)v);

		memcpy(p, &w, 2);
		return;
	}
	case 4: {
		uint32_t w = htobe32((uint32_t)v);

		memcpy(p, &w, 4);
		return;
	}
	case 8:
		v = htobe64(v);
		memcpy(p, &v, 8);
		return;
	}
	for (unsigned i = n; i--; v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t mad_field_low_mask(unsigned width)
{
	return width < 64 ? (1ull << width) - 1 : ~0ull;
}

/*
 * Read a field of at most 64 bits.  `buf` must hold the whole layout.  A
 * field within 64 bits of its first byte is read as one big-endian word of
 * the bytes it touches, and only those.
 */
static MAD_FIELD_INLINE uint64_t mad_field_get(const void *buf, const struct mad_field *f)
{
	const uint8_t *p = (const uint8_t *)buf + f->byte;
	unsigned span = f->bit + f->width;

	if (span <= 64) {
		unsigned n = (span + 7) / 8;

		return (mad_load_be(p, n) >> (n * 8 - span)) & mad_field_low_mask(f->width);
	}
	return mad_field_get_bits(buf, f);
}

/*
 * Write a field of at most 64 bits.  Returns 0, or -ERANGE (buffer left
 * unchanged) when `value` does not fit in the field's width.  A field of
 * whole bytes replaces them; a narrower one keeps its neighbours' bits.
 */
static MAD_FIELD_INLINE int mad_field_set(void *buf, const struct mad_field *f, uint64_t value)
{
	uint8_t *p = (uint8_t *)buf + f->byte;
	unsigned span = f->bit + f->width;

	if (f->width < 64 && (value >> f->width) != 0)
		return -ERANGE;
	if (span <= 64) {
		unsigned n = (span + 7) / 8, shift = n * 8 - span;
		uint64_t v = value << shift;

		if (f->width != n * 8)
			v |= mad_load_be(p, n) & ~(mad_field_low_mask(f->width) << shift);
		mad_store_be(p, n, v);
		return 0;
	}
	mad_field_set_bits(buf, f, value);
	return 0;
}

/*
 * mad_set_fits: mad_set of a value that fits by construction: a constant,
 * an id or a value whose type or range is no wider than the field (checked
 * where it came in, like an application's argument or a peer's field).
 * No result to check; debug builds (--enable-debug) assert it, and say
 * where that was wrong; other builds leave such a field as it was, never
 * abort over a value.  Code writing a value that may not fit calls mad_set
 * and checks -ERANGE.
 */
static MAD_FIELD_INLINE void mad_field_set_fits(void *buf, const struct mad_field *f,
						uint64_t value)
{
	int rc = mad_field_set(buf, f, value);

#ifdef MADCM_DEBUG
	assert(rc == 0);
#endif
	(void)rc;
}

/* Copy a byte-aligned field of any width (GIDs, private data). */
void mad_field_get_bytes(const void *buf, const struct mad_field *f, void *out);
void mad_field_set_bytes(void *buf, const struct mad_field *f, const void *in);

/* Bytes a byte-aligned field spans (width / 8). */
static inline size_t mad_field_len(const struct mad_field *f)
{
	return f->width / 8;
}

#define mad_get(buf, tab, id) mad_field_get((buf), &(tab)[id])
#define mad_set(buf, tab, id, v) mad_field_set((buf), &(tab)[id], (v))
#define mad_set_fits(buf, tab, id, v) mad_field_set_fits((buf), &(tab)[id], (v))
#define mad_get_bytes(buf, tab, id, out) mad_field_get_bytes((buf), &(tab)[id], (out))
#define mad_set_bytes(buf, tab, id, in) mad_field_set_bytes((buf), &(tab)[id], (in))

/*
 * Check a layout's table: every field inside `size`, fields wider than 64
 * bits byte-aligned, no two fields overlapping, names unique.  Returns 0 or
 * -EINVAL and, when `why` is not NULL, a static description of the problem
 * in *why.  Unit tests run it on every layout.
 */
int mad_layout_validate(const struct mad_layout *l, const char **why);

/* Find a field by name in a layout; NULL when absent. */
const struct mad_field *mad_layout_field(const struct mad_layout *l, const char *name);

#endif
