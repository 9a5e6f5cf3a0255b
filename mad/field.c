/* Generic get/set for table-described wire fields (see field.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "mad/field.h"

/*
 * Bits are numbered as the IBA tables number them: bit 0 of a field's
 * first byte is that byte's most significant bit, and multi-byte fields are
 * big-endian.  A field whose bits span at most 64 (every field the tables
 * have but 64-bit ones off a byte boundary) is moved as one big-endian
 * word of the bytes it touches, and only those: this is on the path of
 * every MAD built and parsed.  The bit-by-bit loops below handle the rest.
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

/* The bytes [0, n) of p as one big-endian number. */
static uint64_t load_be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static uint64_t low_mask(unsigned width)
{
	return width < 64 ? (1ull << width) - 1 : ~0ull;
}

uint64_t mad_field_get(const void *buf, const struct mad_field *f)
{
	const uint8_t *p = (const uint8_t *)buf + f->byte;
	unsigned span = f->bit + f->width;

	if (span <= 64) {
		unsigned n = (span + 7) / 8;

		return (load_be(p, n) >> (n * 8 - span)) & low_mask(f->width);
	}
	return get_bits(buf, f->byte * 8u + f->bit, f->width);
}

int mad_field_set(void *buf, const struct mad_field *f, uint64_t value)
{
	uint8_t *p = (uint8_t *)buf + f->byte;
	unsigned span = f->bit + f->width;

	if (f->width < 64 && (value >> f->width) != 0)
		return -ERANGE;
	if (span <= 64) {
		unsigned n = (span + 7) / 8, shift = n * 8 - span;
		uint64_t mask = low_mask(f->width) << shift;
		uint64_t v = (load_be(p, n) & ~mask) | (value << shift);

		for (unsigned i = n; i--; v >>= 8)
			p[i] = (uint8_t)v;
		return 0;
	}
	set_bits(buf, f->byte * 8u + f->bit, f->width, value);
	return 0;
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
