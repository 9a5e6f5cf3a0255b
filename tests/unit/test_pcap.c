/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* mad/pcap: write then read back both link types; reject broken files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "mad/pcap.h"

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(1 << 20);

	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static void fill_mad(uint8_t *mad, uint8_t seed)
{
	for (int i = 0; i < 256; i++)
		mad[i] = (uint8_t)(seed + i);
	mad[0] = 1;    /* base version */
	mad[1] = 0x07; /* CM class */
	mad[2] = 2;    /* class version */
	mad[3] = 0x03; /* Send */
}

static struct mad_pcap_hdr sample_hdr(bool grh)
{
	struct mad_pcap_hdr h = {
	    .slid = 1,
	    .dlid = 2,
	    .sl = 3,
	    .pkey = 0xffff,
	    .src_qp = 1,
	    .dst_qp = 1,
	    .qkey = 0x80010000u,
	    .psn = 0x123456,
	    .grh_present = grh,
	    .tclass = 0x12,
	    .flow_label = 0xabcde,
	    .hop_limit = 64,
	};

	for (int i = 0; i < 16; i++) {
		h.sgid[i] = (uint8_t)(0xa0 + i);
		h.dgid[i] = (uint8_t)(0xb0 + i);
	}
	return h;
}

/* Writes three MADs (one with a GRH) and checks every header field back. */
static void roundtrip(enum mad_pcap_linktype lt)
{
	char path[] = "/tmp/test_pcap_XXXXXX";
	int fd = mkstemp(path);
	struct mad_pcap_writer *w;
	struct mad_pcap_reader r;
	struct mad_pcap_record rec;
	uint8_t mad[3][256];
	size_t len;
	uint8_t *buf;

	assert_true(fd >= 0);
	assert_int_equal(mad_pcap_writer_fdopen(&w, fd, lt), 0);
	for (int i = 0; i < 3; i++) {
		struct mad_pcap_hdr h = sample_hdr(i == 1);
		struct timespec ts = {1700000000 + i, 123456789};

		fill_mad(mad[i], (uint8_t)(i * 7));
		assert_int_equal(mad_pcap_write(w, &ts, &h, mad[i], sizeof(mad[i])), 0);
	}
	assert_int_equal(mad_pcap_writer_close(w), 0);

	buf = slurp(path, &len);
	unlink(path);
	assert_true(mad_pcap_is_pcap(buf, len));
	assert_int_equal(mad_pcap_reader_init(&r, buf, len), 0);
	assert_int_equal(r.linktype, lt);
	for (int i = 0; i < 3; i++) {
		struct mad_pcap_hdr h, want = sample_hdr(i == 1);
		const uint8_t *m;
		size_t mlen;

		assert_int_equal(mad_pcap_next(&r, &rec), 1);
		assert_int_equal(rec.index, i + 1);
		assert_int_equal(rec.ts.tv_sec, 1700000000 + i);
		assert_int_equal(rec.ts.tv_nsec, 123456000); /* microsecond file */
		assert_non_null(rec.pkt);
		assert_int_equal(rec.pkt_len, (i == 1 ? 40 : 0) + 8 + 12 + 8 + 256 + 4 + 2);
		/* LRH packet length counts 4-byte words up to and incl. the ICRC. */
		assert_int_equal(((rec.pkt[4] << 8 | rec.pkt[5]) & 0x7ff), (rec.pkt_len - 2) / 4);
		assert_int_equal(mad_pcap_parse_packet(rec.pkt, rec.pkt_len, &h, &m, &mlen, NULL),
				 0);
		assert_int_equal(mlen, 256);
		assert_memory_equal(m, mad[i], 256);
		assert_int_equal(h.slid, want.slid);
		assert_int_equal(h.dlid, want.dlid);
		assert_int_equal(h.sl, want.sl);
		assert_int_equal(h.pkey, want.pkey);
		assert_int_equal(h.qkey, want.qkey);
		assert_int_equal(h.src_qp, want.src_qp);
		assert_int_equal(h.dst_qp, want.dst_qp);
		assert_int_equal(h.psn, want.psn);
		assert_int_equal(h.grh_present, want.grh_present);
		if (h.grh_present) {
			assert_int_equal(h.tclass, want.tclass);
			assert_int_equal(h.flow_label, want.flow_label);
			assert_int_equal(h.hop_limit, want.hop_limit);
			assert_memory_equal(h.sgid, want.sgid, 16);
			assert_memory_equal(h.dgid, want.dgid, 16);
		}
	}
	assert_int_equal(mad_pcap_next(&r, &rec), 0);
	free(buf);
}

static void test_roundtrip_erf(void **state)
{
	(void)state;
	roundtrip(MAD_PCAP_LINKTYPE_ERF);
}

static void test_roundtrip_infiniband(void **state)
{
	(void)state;
	roundtrip(MAD_PCAP_LINKTYPE_INFINIBAND);
}

/* A file in memory: header + one 247 record of `caplen` bytes (zeros). */
static size_t make_file(uint8_t *buf, uint32_t magic, uint32_t linktype, uint32_t caplen,
			size_t data_len)
{
	uint32_t hdr[6] = {magic, 0x00040002u, 0, 0, 65535, linktype};
	uint32_t rec[4] = {1, 2, caplen, caplen};

	memcpy(buf, hdr, sizeof(hdr));
	memcpy(buf + 24, rec, sizeof(rec));
	memset(buf + 40, 0, data_len);
	return 40 + data_len;
}

static void test_bad_magic(void **state)
{
	struct mad_pcap_reader r;
	uint8_t buf[128];
	size_t n = make_file(buf, 0x12345678u, 247, 16, 16);

	(void)state;
	assert_false(mad_pcap_is_pcap(buf, n));
	assert_int_equal(mad_pcap_reader_init(&r, buf, n), -EPROTO);
	assert_int_equal(mad_pcap_reader_init(&r, buf, 3), -EPROTO);
	n = make_file(buf, 0xa1b2c3d4u, 1 /* Ethernet */, 16, 16);
	assert_int_equal(mad_pcap_reader_init(&r, buf, n), -EPROTONOSUPPORT);
}

static void test_truncated(void **state)
{
	struct mad_pcap_reader r;
	struct mad_pcap_record rec;
	uint8_t buf[256];
	size_t n = make_file(buf, 0xa1b2c3d4u, 247, 100, 100);

	(void)state;
	/* Short file header. */
	assert_int_equal(mad_pcap_reader_init(&r, buf, 20), -EBADMSG);
	/* Data shorter than caplen. */
	assert_int_equal(mad_pcap_reader_init(&r, buf, n - 1), 0);
	assert_int_equal(mad_pcap_next(&r, &rec), -EBADMSG);
	assert_int_equal(mad_pcap_next(&r, &rec), 0); /* stays at the end */
	/* Record header cut. */
	assert_int_equal(mad_pcap_reader_init(&r, buf, 24 + 10), 0);
	assert_int_equal(mad_pcap_next(&r, &rec), -EBADMSG);
	/* Whole record: fine, but its packet (all zero) has no IBA LRH. */
	assert_int_equal(mad_pcap_reader_init(&r, buf, n), 0);
	assert_int_equal(mad_pcap_next(&r, &rec), 1);
	{
		const uint8_t *m;
		size_t ml;
		const char *why = NULL;

		assert_int_equal(mad_pcap_parse_packet(rec.pkt, rec.pkt_len, NULL, &m, &ml, &why),
				 -EBADMSG);
		assert_non_null(why);
	}
}

static void test_oversize(void **state)
{
	struct mad_pcap_reader r;
	struct mad_pcap_record rec;
	uint8_t buf[128];
	size_t n = make_file(buf, 0xa1b2c3d4u, 197, MAD_PCAP_MAX_RECORD + 1, 16);

	(void)state;
	assert_int_equal(mad_pcap_reader_init(&r, buf, n), 0);
	assert_int_equal(mad_pcap_next(&r, &rec), -EMSGSIZE);
}

/* Big-endian file, nanosecond magic: what other hosts and tools write. */
static void test_swapped_nsec(void **state)
{
	struct mad_pcap_reader r;
	struct mad_pcap_record rec;
	uint8_t buf[128];
	size_t n = make_file(buf, __builtin_bswap32(0xa1b23c4du), __builtin_bswap32(247),
			     __builtin_bswap32(8), 8);

	(void)state;
	memcpy(buf + 24, (uint32_t[]){__builtin_bswap32(5), __builtin_bswap32(999)}, 8);
	assert_int_equal(mad_pcap_reader_init(&r, buf, n), 0);
	assert_true(r.swapped);
	assert_int_equal(mad_pcap_next(&r, &rec), 1);
	assert_int_equal(rec.caplen, 8);
	assert_int_equal(rec.ts.tv_sec, 5);
	assert_int_equal(rec.ts.tv_nsec, 999);
}

static void test_build_rejects(void **state)
{
	struct mad_pcap_hdr h = sample_hdr(false);
	uint8_t mad[256] = {0}, out[400];

	(void)state;
	assert_int_equal(mad_pcap_build_packet(&h, mad, 256, out, 100), -ENOBUFS);
	h.src_qp = 1u << 24;
	assert_int_equal(mad_pcap_build_packet(&h, mad, 256, out, sizeof(out)), -EINVAL);
	h = sample_hdr(false);
	h.sl = 16;
	assert_int_equal(mad_pcap_build_packet(&h, mad, 256, out, sizeof(out)), -EINVAL);
	h = sample_hdr(false);
	/* Odd lengths get a pad count, and parse back to the same length. */
	{
		long n = mad_pcap_build_packet(&h, mad, 23, out, sizeof(out));
		const uint8_t *m;
		size_t ml;

		assert_int_equal(n, 8 + 12 + 8 + 24 + 4 + 2);
		assert_int_equal(mad_pcap_parse_packet(out, (size_t)n, NULL, &m, &ml, NULL), 0);
		assert_int_equal(ml, 23);
	}
	assert_int_equal(mad_pcap_write(NULL, NULL, &h, mad, 256), -EINVAL);
}

#define THREADS 4
#define PER_THREAD 50

static void *writer_thread(void *arg)
{
	struct mad_pcap_writer *w = arg;
	struct mad_pcap_hdr h = sample_hdr(false);
	uint8_t mad[256];

	fill_mad(mad, 3);
	for (int i = 0; i < PER_THREAD; i++)
		if (mad_pcap_write(w, NULL, &h, mad, sizeof(mad)))
			return (void *)1;
	return NULL;
}

/* Concurrent appends never interleave: every record reads back whole. */
static void test_threads(void **state)
{
	char path[] = "/tmp/test_pcap_XXXXXX";
	int fd = mkstemp(path);
	struct mad_pcap_writer *w;
	struct mad_pcap_reader r;
	struct mad_pcap_record rec;
	pthread_t t[THREADS];
	uint8_t want[256], *buf;
	size_t len;
	int n = 0;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(mad_pcap_writer_fdopen(&w, fd, MAD_PCAP_LINKTYPE_ERF), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer_thread, w), 0);
	for (int i = 0; i < THREADS; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		assert_null(ret);
	}
	assert_int_equal(mad_pcap_writer_close(w), 0);
	buf = slurp(path, &len);
	unlink(path);
	fill_mad(want, 3);
	assert_int_equal(mad_pcap_reader_init(&r, buf, len), 0);
	while (mad_pcap_next(&r, &rec) == 1) {
		const uint8_t *m;
		size_t ml;

		assert_int_equal(mad_pcap_parse_packet(rec.pkt, rec.pkt_len, NULL, &m, &ml, NULL),
				 0);
		assert_int_equal(ml, 256);
		assert_memory_equal(m, want, 256);
		n++;
	}
	assert_int_equal(n, THREADS * PER_THREAD);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_erf), cmocka_unit_test(test_roundtrip_infiniband),
	    cmocka_unit_test(test_bad_magic),	  cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_oversize),	  cmocka_unit_test(test_swapped_nsec),
	    cmocka_unit_test(test_build_rejects), cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
