/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Checks shared by the wire-format tests: see layout_check.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "tests/unit/layout_check.h"

/* Larger than any layout (a CM message is 232 bytes, a MAD 256). */
#define BUF_SIZE 512

uint64_t layout_field_value(unsigned i, unsigned width)
{
	uint64_t v = (i + 1) * 0x9e3779b97f4a7c15ull;

	v ^= v >> 29;
	if (width < 64)
		v &= (1ull << width) - 1;
	return v ? v : 1;
}

/* The byte pattern of a wide (byte-array) field, distinct per field. */
static uint8_t wide_byte(unsigned i, size_t k)
{
	return (uint8_t)(i * 16 + k + 1);
}

void layout_round_trip(const struct mad_layout *l, uint8_t fill)
{
	uint8_t buf[BUF_SIZE], in[BUF_SIZE], out[BUF_SIZE];

	assert_true(l->size <= sizeof(buf));
	memset(buf, fill, sizeof(buf));
	/* Write them all first, so a field that overlaps another shows. */
	for (unsigned i = 0; i < l->nfields; i++) {
		const struct mad_field *f = &l->fields[i];

		if (f->fmt == MF_RSVD)
			continue;
		if (f->width <= 64) {
			assert_int_equal(mad_field_set(buf, f, layout_field_value(i, f->width)), 0);
		} else {
			assert_true(mad_field_len(f) <= sizeof(in));
			for (size_t k = 0; k < mad_field_len(f); k++)
				in[k] = wide_byte(i, k);
			mad_field_set_bytes(buf, f, in);
		}
	}
	for (unsigned i = 0; i < l->nfields; i++) {
		const struct mad_field *f = &l->fields[i];

		if (f->width > 64) {
			mad_field_get_bytes(buf, f, out);
			for (size_t k = 0; k < mad_field_len(f); k++)
				if (out[k] != (f->fmt == MF_RSVD ? fill : wide_byte(i, k)))
					fail_msg("%s.%s byte %zu read back wrong", l->name, f->name,
						 k);
		} else if (f->fmt == MF_RSVD) {
			uint64_t ones = f->width < 64 ? (1ull << f->width) - 1 : ~0ull;

			if (mad_field_get(buf, f) != (fill ? ones : 0))
				fail_msg("%s.%s (reserved) was written", l->name, f->name);
		} else if (mad_field_get(buf, f) != layout_field_value(i, f->width)) {
			fail_msg("%s.%s read back wrong", l->name, f->name);
		}
	}
	/* Nothing written past the layout. */
	for (size_t k = l->size; k < sizeof(buf); k++)
		assert_int_equal(buf[k], fill);
}

void layout_boundaries(const struct mad_layout *l)
{
	uint8_t buf[BUF_SIZE], copy[BUF_SIZE];

	for (unsigned i = 0; i < l->nfields; i++) {
		const struct mad_field *f = &l->fields[i];
		uint64_t max;

		if (f->width > 64)
			continue;
		max = f->width == 64 ? UINT64_MAX : (1ull << f->width) - 1;
		memset(buf, 0, sizeof(buf));
		assert_int_equal(mad_field_set(buf, f, max), 0);
		if (mad_field_get(buf, f) != max)
			fail_msg("%s.%s: largest value reads back wrong", l->name, f->name);
		if (f->width == 64)
			continue; /* nothing is one past it */
		memcpy(copy, buf, sizeof(buf));
		if (mad_field_set(buf, f, max + 1) != -ERANGE)
			fail_msg("%s.%s: one past the largest value accepted", l->name, f->name);
		assert_memory_equal(buf, copy, sizeof(buf));
	}
}
