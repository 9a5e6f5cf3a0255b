/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* The generic field get/set: bit numbering, spanning, range errors. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "mad/field.h"

#define T_FIELDS(X, P)                                                                             \
	X(P, A, a, 0, 0, 4, MF_HEX)  /* high nibble of byte 0 */                                   \
	X(P, B, b, 0, 4, 12, MF_HEX) /* low nibble of byte 0 + byte 1 */                           \
	X(P, C, c, 2, 0, 24, MF_HEX) /* bytes 2..4 */                                              \
	X(P, D, d, 5, 7, 1, MF_BOOL) /* LSB of byte 5 */                                           \
	X(P, E, e, 8, 0, 64, MF_HEX)                                                               \
	X(P, G, g, 16, 0, 128, MF_GID)

enum { T_FIELDS(MAD_FIELD_ENUM, T) T__COUNT };
static const struct mad_field t_fields[] = {T_FIELDS(MAD_FIELD_ENTRY, T)};
static const struct mad_layout t_layout = {"Test", NULL, 0, 0, 0, 32, MAD_LAYOUT_FIELDS(t_fields)};

/* Bytes worked out by hand: A=0xa, B=0xbcd -> ab cd; C=0x123456; D=1 -> 01. */
static void test_known_bytes(void **state)
{
	uint8_t buf[32] = {0};
	static const uint8_t want[8] = {0xab, 0xcd, 0x12, 0x34, 0x56, 0x01, 0, 0};

	(void)state;
	assert_int_equal(mad_set(buf, t_fields, T_A, 0xa), 0);
	assert_int_equal(mad_set(buf, t_fields, T_B, 0xbcd), 0);
	assert_int_equal(mad_set(buf, t_fields, T_C, 0x123456), 0);
	assert_int_equal(mad_set(buf, t_fields, T_D, 1), 0);
	assert_int_equal(mad_set(buf, t_fields, T_E, 0x0102030405060708ull), 0);
	assert_memory_equal(buf, want, 8);
	assert_int_equal(buf[8], 0x01);
	assert_int_equal(buf[15], 0x08);
	assert_int_equal(mad_get(buf, t_fields, T_A), 0xa);
	assert_int_equal(mad_get(buf, t_fields, T_B), 0xbcd);
	assert_int_equal(mad_get(buf, t_fields, T_C), 0x123456);
	assert_int_equal(mad_get(buf, t_fields, T_D), 1);
	assert_true(mad_get(buf, t_fields, T_E) == 0x0102030405060708ull);
}

static void test_range(void **state)
{
	uint8_t buf[32];

	(void)state;
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(mad_set(buf, t_fields, T_A, 0x10), -ERANGE);
	assert_int_equal(mad_set(buf, t_fields, T_D, 2), -ERANGE);
	assert_int_equal(buf[0], 0x5a); /* untouched on error */
	/* Neighbouring bits survive a set. */
	assert_int_equal(mad_set(buf, t_fields, T_D, 0), 0);
	assert_int_equal(buf[5], 0x5a);
	assert_int_equal(buf[4], 0x5a);
}

static void test_bytes(void **state)
{
	uint8_t buf[32] = {0}, gid[16], out[16];

	(void)state;
	for (int i = 0; i < 16; i++)
		gid[i] = (uint8_t)(0xf0 + i);
	mad_set_bytes(buf, t_fields, T_G, gid);
	assert_memory_equal(buf + 16, gid, 16);
	mad_get_bytes(buf, t_fields, T_G, out);
	assert_memory_equal(out, gid, 16);
}

static void test_validate(void **state)
{
	static const struct mad_field bad[] = {
	    {"x", 0, 0, 8, MF_HEX},
	    {"y", 0, 4, 8, MF_HEX},
	};
	struct mad_layout l = {"Bad", NULL, 0, 0, 0, 4, MAD_LAYOUT_FIELDS(bad)};
	const char *why = NULL;

	(void)state;
	assert_int_equal(mad_layout_validate(&t_layout, &why), 0);
	assert_int_equal(mad_layout_validate(&l, &why), -EINVAL);
	assert_non_null(why);
	assert_non_null(mad_layout_field(&t_layout, "c"));
	assert_null(mad_layout_field(&t_layout, "zz"));
}

/*
 * Every (bit, width) a field can have, set and read back inside a buffer
 * of random bytes: the bits of the field take the value (as a reference
 * loop places them, one bit at a time, MSB first) and no other bit moves.
 */
static unsigned ref_bit(const uint8_t *p, unsigned pos)
{
	return (p[pos / 8] >> (7 - pos % 8)) & 1;
}

static void test_every_shape(void **state)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (unsigned bit = 0; bit < 8; bit++)
		for (unsigned width = 1; width <= 64; width++)
			for (unsigned round = 0; round < 8; round++) {
				struct mad_field f = {"x", 3, (uint8_t)bit, (uint16_t)width,
						      MF_HEX};
				uint8_t before[16], buf[16];
				uint64_t value;

				for (unsigned i = 0; i < sizeof(buf); i++) {
					seed =
					    seed * 6364136223846793005ull + 1442695040888963407ull;
					before[i] = (uint8_t)(seed >> 56);
				}
				value = seed ^ (seed >> 29);
				if (width < 64)
					value &= (1ull << width) - 1;
				memcpy(buf, before, sizeof(buf));
				assert_int_equal(mad_field_set(buf, &f, value), 0);
				assert_true(mad_field_get(buf, &f) == value);
				for (unsigned pos = 0; pos < sizeof(buf) * 8; pos++) {
					unsigned first = 3 * 8 + bit, want = ref_bit(before, pos);

					if (pos >= first && pos < first + width)
						want = (unsigned)(value >>
								  (width - 1 - (pos - first))) &
						       1;
					assert_int_equal(ref_bit(buf, pos), want);
				}
			}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_bytes), cmocka_unit_test(test_range),
	    cmocka_unit_test(test_bytes),	cmocka_unit_test(test_validate),
	    cmocka_unit_test(test_every_shape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
