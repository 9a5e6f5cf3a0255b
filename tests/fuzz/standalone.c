/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Driver that lets every libFuzzer target run without clang: it feeds the
 * target each file named on the command line, then a bounded number of
 * pseudo-random inputs (seeded, so a failure reproduces), including
 * mutations of the given files.  `make check` runs each target this way;
 * `make fuzz` builds the same targets with clang's libFuzzer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

int main(int argc, char **argv)
{
	static uint8_t seeds[64][512];
	static size_t seed_len[64];
	int nseeds = 0;
	long iterations = getenv("FUZZ_ITERATIONS") ? atol(getenv("FUZZ_ITERATIONS")) : 20000;
	uint8_t buf[512];

	for (int i = 1; i < argc && nseeds < 64; i++) {
		FILE *f = fopen(argv[i], "rb");

		if (!f) {
			perror(argv[i]);
			return 1;
		}
		seed_len[nseeds] = fread(seeds[nseeds], 1, sizeof(seeds[0]), f);
		fclose(f);
		LLVMFuzzerTestOneInput(seeds[nseeds], seed_len[nseeds]);
		nseeds++;
	}
	for (long it = 0; it < iterations; it++) {
		size_t len;

		if (nseeds && (next_rand() & 1)) {
			int s = (int)(next_rand() % (uint32_t)nseeds);
			len = seed_len[s];
			memcpy(buf, seeds[s], len);
			for (int m = 0, n = 1 + (int)(next_rand() % 8); m < n && len; m++)
				buf[next_rand() % len] = (uint8_t)next_rand();
			if (next_rand() % 4 == 0)
				len = next_rand() % (len + 1);
		} else {
			len = next_rand() % sizeof(buf);
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)next_rand();
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("%ld inputs, no crash\n", iterations + nseeds);
	return 0;
}
