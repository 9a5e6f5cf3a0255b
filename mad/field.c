/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Generic get/set for table-described wire fields (see field.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "mad/field.h"

/*
 * Bits are numbered as the IBA tables number them: bit 0 of a field's
 * first byte is that byte's most significant bit, and multi-byte fields are
 * big-endian.  A field whose bits, counted from its first byte's most
 * significant bit, span at most 64 is moved by the inline get and set of
 * field.h; the bit-by-bit loops here handle the rest (64-bit fields off a
 * byte boundary).
 */
static uint64_t get_bits(const uint8_t *p, unsigned pos, unsigned left)
{
	uint64_t v = 0;

	while (left) {
		unsigned in_byte = 8 - (pos % 8);
		unsigned take = left < in_byte ? left : in_byte;
		unsigned shift = in_byte - take;
		uint8_t bits = (uint8_t)((p[pos / 8] >> shift) & ((1u << take) - 1));

		v = (v << take) | bits;
		pos += take;
		left -= take;
	}
	return v;
}

static void set_bits(uint8_t *p, unsigned pos, unsigned left, uint64_t value)
{
	while (left) {
		unsigned in_byte = 8 - (pos % 8);
		unsigned take = left < in_byte ? left : in_byte;
		unsigned shift = in_byte - take;
		uint8_t mask = (uint8_t)(((1u << take) - 1) << shift);
		uint8_t bits = (uint8_t)(((value >> (left - take)) << shift) & mask);

		p[pos / 8] = (uint8_t)((p[pos / 8] & ~mask) | bits);
		pos += take;
		left -= take;
	}
}

uint64_t mad_field_get_bits(const void *buf, const struct mad_field *f)
{
	return get_bits(buf, f->byte * 8u + f->bit, f->width);
}

void mad_field_set_bits(void *buf, const struct mad_field *f, uint64_t value)
{
	set_bits(buf, f->byte * 8u + f->bit, f->width, value);
}

void mad_field_get_bytes(const void *buf, const struct mad_field *f, void *out)
{
	memcpy(out, (const uint8_t *)buf + f->byte, f->width / 8);
}

void mad_field_set_bytes(void *buf, const struct mad_field *f, const void *in)
{
	memcpy((uint8_t *)buf + f->byte, in, f->width / 8);
}

int mad_layout_validate(const struct mad_layout *l, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	for (unsigned i = 0; i < l->nfields; i++) {
		const struct mad_field *a = &l->fields[i];
		unsigned a0 = a->byte * 8u + a->bit, a1 = a0 + a->width;

		if (!a->name || !a->width) {
			*why = "field without name or width (gap in table?)";
			return -EINVAL;
		}
		if (a->bit > 7) {
			*why = "bit offset above 7";
			return -EINVAL;
		}
		if (a1 > l->size * 8u) {
			*why = "field past the end of the layout";
			return -EINVAL;
		}
		if (a->width > 64 && (a->bit || a->width % 8)) {
			*why = "wide field not byte-aligned";
			return -EINVAL;
		}
		for (unsigned j = i + 1; j < l->nfields; j++) {
			const struct mad_field *b = &l->fields[j];
			unsigned b0 = b->byte * 8u + b->bit, b1 = b0 + b->width;

			if (b->name && a0 < b1 && b0 < a1) {
				*why = "two fields overlap";
				return -EINVAL;
			}
			if (b->name && !strcmp(a->name, b->name)) {
				*why = "duplicate field name";
				return -EINVAL;
			}
		}
	}
	return 0;
}

const struct mad_field *mad_layout_field(const struct mad_layout *l, const char *name)
{
	for (unsigned i = 0; i < l->nfields; i++)
		if (l->fields[i].name && !strcmp(l->fields[i].name, name))
			return &l->fields[i];
	return NULL;
}
