/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Checks that hold for every table-driven layout (mad/field.h), shared by
 * the wire-format tests of mad/, sa/ and cm/: every field round-trips
 * without touching its neighbours, and every field's limit is enforced.
 * Failures are CMocka assertions naming the layout and the field.
 */
#ifndef MADCM_TESTS_LAYOUT_CHECK_H
#define MADCM_TESTS_LAYOUT_CHECK_H

#include <stdint.h>

#include "mad/field.h"

/* A value per field index, non-zero, fitting `width`, spread over all bits. */
uint64_t layout_field_value(unsigned i, unsigned width);

/*
 * Set every non-reserved field of `l` to a distinct value in a buffer
 * pre-filled with `fill`, read them all back, and check that reserved
 * fields and the bytes past the layout still hold the fill pattern.
 */
void layout_round_trip(const struct mad_layout *l, uint8_t fill);

/*
 * The largest value of every field fits and reads back; one past it is
 * -ERANGE and leaves the buffer alone.
 */
void layout_boundaries(const struct mad_layout *l);

#endif
