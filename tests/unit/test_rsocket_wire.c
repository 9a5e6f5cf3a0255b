/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The rsocket wire format (lib/rsocket_wire.c): the 40-byte connection
 * data byte by byte, its decode errors, the immediate-data encoding and
 * the iomap size scale.  The expected bytes are those of rdma-core's
 * rsockets (struct rs_conn_data, big-endian).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "lib/rsocket_wire.h"

static void test_conn_encode_layout(void **state)
{
	struct rs_conn c = {
	    .version = 1,
	    .flags = RS_CONN_FLAG_IOMAP,
	    .credits = 384,
	    .iomap_scale = 1,
	    .target = {0x0102030405060708ull, 0x11223344, 2},
	    .data = {0xA1A2A3A4A5A6A7A8ull, 0x55667788, 0x10000},
	};
	static const uint8_t want[RS_CONN_DATA_LEN] = {
	    1,	  2,	0x01, 0x80, 0,	  0,	0,    1, /* version flags credits rsvd iomap */
	    1,	  2,	3,    4,    5,	  6,	7,    8,
	    0x11, 0x22, 0x33, 0x44, 0,	  0,	0,    2, /* target SGL */
	    0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8,
	    0x55, 0x66, 0x77, 0x88, 0,	  1,	0,    0, /* first receive half */
	};
	uint8_t out[RS_CONN_DATA_LEN];
	struct rs_conn back;

	(void)state;
	memset(out, 0xEE, sizeof(out));
	rs_conn_encode(&c, out);
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(rs_conn_decode(out, sizeof(out), &back), 0);
	assert_int_equal(back.version, 1);
	assert_int_equal(back.flags, RS_CONN_FLAG_IOMAP);
	assert_int_equal(back.credits, 384);
	assert_int_equal(back.iomap_scale, 1);
	assert_true(back.target.addr == c.target.addr);
	assert_int_equal(back.target.key, c.target.key);
	assert_int_equal(back.target.length, 2);
	assert_true(back.data.addr == c.data.addr);
	assert_int_equal(back.data.key, c.data.key);
	assert_int_equal(back.data.length, 0x10000);
}

static void test_conn_decode_errors(void **state)
{
	struct rs_conn c = {.version = 1, .credits = 16, .target = {1, 2, 2}, .data = {3, 4, 5}};
	uint8_t buf[RS_CONN_DATA_LEN];
	struct rs_conn out;

	(void)state;
	rs_conn_encode(&c, buf);
	assert_int_equal(rs_conn_decode(NULL, 40, &out), -EINVAL);
	assert_int_equal(rs_conn_decode(buf, RS_CONN_DATA_LEN - 1, &out), -EINVAL);
	/* The REQ private data is longer than ours (56 bytes): accepted. */
	{
		uint8_t big[56] = {0};

		memcpy(big, buf, sizeof(buf));
		assert_int_equal(rs_conn_decode(big, sizeof(big), &out), 0);
	}
	buf[0] = 2;
	assert_int_equal(rs_conn_decode(buf, sizeof(buf), &out), -EPROTONOSUPPORT);
	buf[0] = 1;
	buf[2] = buf[3] = 0; /* no credits */
	assert_int_equal(rs_conn_decode(buf, sizeof(buf), &out), -EPROTO);
	rs_conn_encode(&c, buf);
	memset(buf + 20, 0, 4); /* target SGL length 0 */
	assert_int_equal(rs_conn_decode(buf, sizeof(buf), &out), -EPROTO);
}

static void test_msg_encoding(void **state)
{
	(void)state;
	assert_int_equal(rs_msg(RS_OP_DATA, 4096), 4096);
	assert_int_equal(rs_msg(RS_OP_SGL, 0x1234), 0x80001234u);
	assert_int_equal(rs_msg(RS_OP_IOMAP_SGL, 3), 0xC0000003u);
	assert_int_equal(rs_msg(RS_OP_CTRL, RS_CTRL_DISCONNECT), 0xE0000000u);
	assert_int_equal(rs_msg(RS_OP_CTRL, RS_CTRL_SHUTDOWN), 0xE0000002u);
	assert_int_equal(rs_msg_op(0xE0000002u), RS_OP_CTRL);
	assert_int_equal(rs_msg_data(0xE0000002u), RS_CTRL_SHUTDOWN);
	/* The argument is 29 bits: a larger one does not spill into the op. */
	assert_int_equal(rs_msg_op(rs_msg(RS_OP_DATA, 0xFFFFFFFFu)), RS_OP_DATA);
	assert_int_equal(rs_msg_data(rs_msg(RS_OP_DATA, 0xFFFFFFFFu)), RS_MSG_DATA_MASK);
}

static void test_iomap_scale(void **state)
{
	(void)state;
	for (uint32_t v = 0; v <= 128; v++) {
		assert_int_equal(rs_value_to_scale(v), v);
		assert_int_equal(rs_scale_to_value((uint8_t)v), v);
	}
	assert_int_equal(rs_value_to_scale(256), 0x81);
	assert_int_equal(rs_scale_to_value(0x81), 256);
	assert_int_equal(rs_scale_to_value(rs_value_to_scale(1000)), 768); /* rounded down */
	assert_int_equal(rs_value_to_scale(1u << 20), 0xFF);
}

static void test_swap(void **state)
{
	struct rs_iomap m = {0x0102030405060708ull,
			     {0x1112131415161718ull, 0x21222324, 0x31323334}};

	(void)state;
	rs_iomap_swap(&m);
	assert_true(m.offset == 0x0807060504030201ull);
	assert_true(m.sge.addr == 0x1817161514131211ull);
	assert_int_equal(m.sge.key, 0x24232221);
	assert_int_equal(m.sge.length, 0x34333231);
}

/* The datagram header as rdma-core's struct ds_header lays it out. */
static void test_ds_hdr_layout(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(7174)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(0x1234)};
	static const uint8_t want4[] = {4, 8, 0x1C, 0x06, 198, 18, 0, 1};
	uint8_t want6[DS_HDR_V6_LEN] = {6, 24, 0x12, 0x34, 0xA, 0xB, 0xC, 0xD};
	uint8_t out[DS_HDR_MAX_LEN];
	struct sockaddr_storage back;

	(void)state;
	inet_pton(AF_INET, "198.18.0.1", &sin.sin_addr);
	memset(out, 0xEE, sizeof(out));
	assert_int_equal(ds_hdr_encode((struct sockaddr *)&sin, out), DS_HDR_V4_LEN);
	assert_memory_equal(out, want4, sizeof(want4));
	assert_int_equal(ds_hdr_decode(out, DS_HDR_V4_LEN, &back), DS_HDR_V4_LEN);
	assert_int_equal(back.ss_family, AF_INET);
	assert_memory_equal(&((struct sockaddr_in *)&back)->sin_addr, &sin.sin_addr, 4);
	assert_int_equal(((struct sockaddr_in *)&back)->sin_port, sin.sin_port);

	inet_pton(AF_INET6, "fe80::1:2", &sin6.sin6_addr);
	memcpy(&sin6.sin6_flowinfo, want6 + 4, 4); /* kept as the sockaddr holds it */
	memcpy(want6 + 8, &sin6.sin6_addr, 16);
	assert_int_equal(ds_hdr_encode((struct sockaddr *)&sin6, out), DS_HDR_V6_LEN);
	assert_memory_equal(out, want6, sizeof(want6));
	assert_int_equal(ds_hdr_decode(out, DS_HDR_V6_LEN + 100, &back), DS_HDR_V6_LEN);
	assert_int_equal(back.ss_family, AF_INET6);
	assert_memory_equal(&((struct sockaddr_in6 *)&back)->sin6_addr, &sin6.sin6_addr, 16);
	assert_int_equal(((struct sockaddr_in6 *)&back)->sin6_port, sin6.sin6_port);
	assert_int_equal(((struct sockaddr_in6 *)&back)->sin6_flowinfo, sin6.sin6_flowinfo);
}

static void test_ds_hdr_errors(void **state)
{
	struct sockaddr_storage sa;
	struct sockaddr un = {.sa_family = AF_UNIX};
	uint8_t b[DS_HDR_MAX_LEN] = {4, 8, 0, 1, 10, 0, 0, 1};

	(void)state;
	assert_int_equal(ds_hdr_encode(&un, b), -EAFNOSUPPORT);
	b[0] = 4;
	b[1] = 8;
	assert_int_equal(ds_hdr_decode(NULL, 8, &sa), -EINVAL);
	assert_int_equal(ds_hdr_decode(b, 7, &sa), -EINVAL); /* shorter than any header */
	b[1] = 24;
	assert_int_equal(ds_hdr_decode(b, sizeof(b), &sa), -EPROTO); /* v4 with v6's length */
	b[0] = 6;
	b[1] = 8;
	assert_int_equal(ds_hdr_decode(b, sizeof(b), &sa), -EPROTO); /* v6 with v4's length */
	b[1] = 24;
	assert_int_equal(ds_hdr_decode(b, 10, &sa), -EINVAL); /* v6 cut short */
	b[0] = 5;
	assert_int_equal(ds_hdr_decode(b, sizeof(b), &sa), -EPROTO);
	b[0] = 0;
	b[1] = 0;
	assert_int_equal(ds_hdr_decode(b, sizeof(b), &sa), -EPROTO);
}

/* The side channel's header as rdma-core's struct ds_udp_header lays it out. */
static void test_ds_udp_layout(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(7174)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
	static const uint8_t want4[DS_UDP_V4_LEN] = {0x55, 0x55, 0x55, 0x55, 4,	  0,  16, 0,
						     0,	   0x12, 0x34, 0x56, 198, 18, 0,  2};
	uint8_t want6[DS_UDP_V6_LEN] = {0x55, 0x55, 0x55, 0x55, 6, 7, 28, 0, 0, 0xAB, 0xCD, 0xEF};
	uint8_t out[DS_UDP_MAX_LEN];
	struct ds_udp_hdr h;

	(void)state;
	inet_pton(AF_INET, "198.18.0.2", &sin.sin_addr);
	memset(out, 0xEE, sizeof(out));
	/* The QPN's top 8 bits are not sent. */
	assert_int_equal(ds_udp_encode(DS_UDP_OP_DATA, 0xFF123456, (struct sockaddr *)&sin, out),
			 DS_UDP_V4_LEN);
	assert_memory_equal(out, want4, sizeof(want4));
	assert_int_equal(ds_udp_decode(out, DS_UDP_V4_LEN + 100, AF_INET, &h), DS_UDP_V4_LEN);
	assert_int_equal(h.version, 4);
	assert_int_equal(h.op, DS_UDP_OP_DATA);
	assert_int_equal(h.length, DS_UDP_V4_LEN);
	assert_int_equal(h.qpn, 0x123456);
	assert_memory_equal(h.addr, &sin.sin_addr, 4);

	inet_pton(AF_INET6, "fd77::2", &sin6.sin6_addr);
	memcpy(want6 + 12, &sin6.sin6_addr, 16);
	assert_int_equal(ds_udp_encode(DS_UDP_OP_CTRL, 0xABCDEF, (struct sockaddr *)&sin6, out),
			 DS_UDP_V6_LEN);
	assert_memory_equal(out, want6, sizeof(want6));
	assert_int_equal(ds_udp_decode(out, DS_UDP_V6_LEN, AF_INET6, &h), DS_UDP_V6_LEN);
	assert_int_equal(h.op, DS_UDP_OP_CTRL);
	assert_int_equal(h.qpn, 0xABCDEF);
	assert_memory_equal(h.addr, &sin6.sin6_addr, 16);
}

static void test_ds_udp_errors(void **state)
{
	struct sockaddr un = {.sa_family = AF_UNIX};
	struct sockaddr_in sin = {.sin_family = AF_INET};
	uint8_t b[DS_UDP_MAX_LEN];
	struct ds_udp_hdr h;

	(void)state;
	assert_int_equal(ds_udp_encode(0, 1, &un, b), -EAFNOSUPPORT);
	assert_int_equal(ds_udp_encode(0, 1, (struct sockaddr *)&sin, b), DS_UDP_V4_LEN);
	assert_int_equal(ds_udp_decode(NULL, 16, AF_INET, &h), -EINVAL);
	assert_int_equal(ds_udp_decode(b, 15, AF_INET, &h), -EINVAL);
	/* The version must be the sender's family. */
	assert_int_equal(ds_udp_decode(b, 16, AF_INET6, &h), -EPROTO);
	b[0] = 0x54; /* another tag */
	assert_int_equal(ds_udp_decode(b, 16, AF_INET, &h), -EPROTO);
	b[0] = 0x55;
	b[6] = 28; /* v4 with v6's length */
	assert_int_equal(ds_udp_decode(b, 16, AF_INET, &h), -EPROTO);
	b[4] = 6; /* v6, cut short */
	assert_int_equal(ds_udp_decode(b, 20, AF_INET6, &h), -EINVAL);
	b[6] = 16; /* v6 with v4's length */
	assert_int_equal(ds_udp_decode(b, sizeof(b), AF_INET6, &h), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conn_encode_layout),
	    cmocka_unit_test(test_conn_decode_errors),
	    cmocka_unit_test(test_msg_encoding),
	    cmocka_unit_test(test_iomap_scale),
	    cmocka_unit_test(test_swap),
	    cmocka_unit_test(test_ds_hdr_layout),
	    cmocka_unit_test(test_ds_hdr_errors),
	    cmocka_unit_test(test_ds_udp_layout),
	    cmocka_unit_test(test_ds_udp_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
