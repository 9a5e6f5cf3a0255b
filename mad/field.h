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

#include <stddef.h>
#include <stdint.h>

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

/* Read a field of at most 64 bits.  `buf` must hold the whole layout. */
uint64_t mad_field_get(const void *buf, const struct mad_field *f);

/*
 * Write a field of at most 64 bits.  Returns 0, or -ERANGE (buffer left
 * unchanged) when `value` does not fit in the field's width.
 */
int mad_field_set(void *buf, const struct mad_field *f, uint64_t value);

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
