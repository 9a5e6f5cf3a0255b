/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The rdma_cm IP private-data header (the kernel's struct cma_hdr) and the
 * port-space service IDs.  Golden bytes worked out by hand from cma.c's
 * layout: version byte, IP version in the high nibble, source port
 * big-endian, then two 16-byte address slots, IPv4 in the last 4 bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "cm/ip_pdata.h"

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	return a;
}

static struct sockaddr_in6 v6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 a;

	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	a.sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
	return a;
}

static void test_layout(void **state)
{
	const char *why = NULL;
	unsigned bits = 0;

	(void)state;
	if (mad_layout_validate(&cm_ip_hdr_layout, &why))
		fail_msg("%s", why);
	for (unsigned i = 0; i < cm_ip_hdr_layout.nfields; i++)
		bits += cm_ip_hdr_layout.fields[i].width;
	assert_int_equal(bits, 36 * 8);
}

/*
 * 192.168.1.1:40000 -> 192.168.1.2, by hand:
 *   0: cma_version 0x00
 *   1: ip_version 4 in bits 0-3 -> 0x40
 *   2: source port 40000 = 0x9c40
 *   4: 12 zero bytes, c0 a8 01 01
 *  20: 12 zero bytes, c0 a8 01 02
 */
/* clang-format off */
static const uint8_t golden_v4[36] = {
	0x00, 0x40, 0x9c, 0x40,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0xa8, 0x01, 0x01,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0xa8, 0x01, 0x02,
};
/* clang-format on */

static void test_v4_golden_and_round_trip(void **state)
{
	struct sockaddr_in s = v4("192.168.1.1", 40000), d = v4("192.168.1.2", 7471);
	struct sockaddr_storage so, dout;
	uint8_t buf[40];

	(void)state;
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(
	    cm_ip_hdr_encode(buf, sizeof(buf), (struct sockaddr *)&s, (struct sockaddr *)&d), 0);
	assert_memory_equal(buf, golden_v4, 36);
	assert_int_equal(buf[36], 0xee); /* nothing past the header */

	assert_int_equal(cm_ip_hdr_decode(golden_v4, 36, 7471, &so, &dout), 0);
	assert_int_equal(so.ss_family, AF_INET);
	assert_int_equal(dout.ss_family, AF_INET);
	assert_memory_equal(&((struct sockaddr_in *)&so)->sin_addr, &s.sin_addr, 4);
	assert_memory_equal(&((struct sockaddr_in *)&dout)->sin_addr, &d.sin_addr, 4);
	assert_int_equal(ntohs(((struct sockaddr_in *)&so)->sin_port), 40000);
	assert_int_equal(ntohs(((struct sockaddr_in *)&dout)->sin_port), 7471);
	assert_int_equal(mad_get(golden_v4, cm_ip_hdr_fields, CM_IP_HDR_IP_VERSION), 4);
	assert_int_equal(mad_get(golden_v4, cm_ip_hdr_fields, CM_IP_HDR_SOURCE_PORT), 40000);
}

/* Peers may put other things in the IPv4 pad; the kernel ignores it. */
static void test_v4_pad_ignored(void **state)
{
	uint8_t buf[36];
	struct sockaddr_storage so;

	(void)state;
	memcpy(buf, golden_v4, 36);
	buf[4] = 0x12;
	buf[20] = 0x34;
	assert_int_equal(cm_ip_hdr_decode(buf, 36, 0, &so, NULL), 0);
	assert_int_equal(((struct sockaddr_in *)&so)->sin_addr.s_addr, htonl(0xc0a80101));
}

static void test_v6_golden_and_round_trip(void **state)
{
	struct sockaddr_in6 s = v6("fe80::1", 0x8001), d = v6("2001:db8::2", 1);
	struct sockaddr_storage so, dout;
	/* 0x00, 0x60 (IP version 6), port 0x8001, then the two addresses. */
	/* clang-format off */
	static const uint8_t want[36] = {
		0x00, 0x60, 0x80, 0x01,
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
		0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
	};
	/* clang-format on */
	uint8_t buf[36];

	(void)state;
	assert_int_equal(
	    cm_ip_hdr_encode(buf, sizeof(buf), (struct sockaddr *)&s, (struct sockaddr *)&d), 0);
	assert_memory_equal(buf, want, 36);
	assert_int_equal(cm_ip_hdr_decode(buf, 36, 1, &so, &dout), 0);
	assert_int_equal(so.ss_family, AF_INET6);
	assert_memory_equal(&((struct sockaddr_in6 *)&so)->sin6_addr, &s.sin6_addr, 16);
	assert_memory_equal(&((struct sockaddr_in6 *)&dout)->sin6_addr, &d.sin6_addr, 16);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&so)->sin6_port), 0x8001);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&dout)->sin6_port), 1);
}

static void test_errors(void **state)
{
	struct sockaddr_in s = v4("10.0.0.1", 1);
	struct sockaddr_in6 d6 = v6("::1", 2);
	struct sockaddr_storage ss;
	struct sockaddr un = {.sa_family = AF_UNIX};
	uint8_t buf[36];

	(void)state;
	assert_int_equal(cm_ip_hdr_encode(buf, 35, (struct sockaddr *)&s, (struct sockaddr *)&s),
			 -EINVAL);
	assert_int_equal(cm_ip_hdr_encode(NULL, 36, (struct sockaddr *)&s, (struct sockaddr *)&s),
			 -EINVAL);
	assert_int_equal(cm_ip_hdr_encode(buf, 36, NULL, (struct sockaddr *)&s), -EINVAL);
	assert_int_equal(cm_ip_hdr_encode(buf, 36, (struct sockaddr *)&s, (struct sockaddr *)&d6),
			 -EINVAL);
	assert_int_equal(cm_ip_hdr_encode(buf, 36, &un, &un), -EINVAL);

	assert_int_equal(cm_ip_hdr_decode(golden_v4, 35, 0, &ss, &ss), -EINVAL);
	assert_int_equal(cm_ip_hdr_decode(NULL, 36, 0, &ss, &ss), -EINVAL);
	memcpy(buf, golden_v4, 36);
	buf[0] = 0x10; /* cma_version 0x10 */
	assert_int_equal(cm_ip_hdr_decode(buf, 36, 0, &ss, NULL), -EPROTONOSUPPORT);
	buf[0] = 0;
	buf[1] = 0x50; /* IP version 5 */
	assert_int_equal(cm_ip_hdr_decode(buf, 36, 0, &ss, NULL), -EAFNOSUPPORT);
	buf[1] = 0x00;
	assert_int_equal(cm_ip_hdr_decode(buf, 36, 0, &ss, NULL), -EAFNOSUPPORT);
	buf[1] = 0x4f; /* reserved low nibble set: accepted, as the kernel does */
	assert_int_equal(cm_ip_hdr_decode(buf, 36, 0, NULL, NULL), 0);
}

static void test_service_ids(void **state)
{
	uint64_t sid;
	unsigned ps;
	uint16_t port;

	(void)state;
	assert_int_equal(CM_PS_TCP, 0x0106);
	assert_int_equal(CM_PS_UDP, 0x0111);
	assert_int_equal(CM_PS_IPOIB, 0x0002);
	assert_int_equal(CM_PS_IB, 0x013F);

	assert_int_equal(cm_sid_from_ps_port(CM_PS_TCP, 7471, &sid), 0);
	assert_true(sid == 0x0000000001061D2Full);
	assert_int_equal(cm_sid_from_ps_port(CM_PS_UDP, 0x1234, &sid), 0);
	assert_true(sid == 0x0000000001111234ull);
	assert_int_equal(cm_sid_from_ps_port(CM_PS_IB, 0xffff, &sid), 0);
	assert_true(sid == 0x00000000013Fffffull);
	/* IPoIB: (0x0002 << 16) + port, as the kernel's rdma_get_service_id. */
	assert_int_equal(cm_sid_from_ps_port(CM_PS_IPOIB, 1, &sid), 0);
	assert_true(sid == 0x0000000000020001ull);
	assert_int_equal(cm_sid_from_ps_port(0x0107, 1, &sid), -EINVAL);
	assert_int_equal(cm_sid_from_ps_port(CM_PS_TCP, 1, NULL), -EINVAL);

	assert_int_equal(cm_sid_to_ps_port(0x0000000001061D2Full, &ps, &port), 0);
	assert_int_equal(ps, CM_PS_TCP);
	assert_int_equal(port, 7471);
	assert_true((0x0000000001061D2Full & CM_SID_CMA_MASK) == CM_SID_CMA_PREFIX);
	assert_int_equal(cm_sid_to_ps_port(0x0000000000020005ull, &ps, &port), 0);
	assert_int_equal(ps, CM_PS_IPOIB);
	assert_int_equal(port, 5);
	assert_int_equal(cm_sid_to_ps_port(0x0000000001061D2Full, NULL, NULL), 0);
	/* Outside the rdma_cm ranges. */
	assert_int_equal(cm_sid_to_ps_port(0x0000000101061D2Full, &ps, &port), -EINVAL);
	assert_int_equal(cm_sid_to_ps_port(0x0000000001050000ull, &ps, &port), -EINVAL);
	assert_int_equal(cm_sid_to_ps_port(0x0200000000000000ull, &ps, &port), -EINVAL);
	assert_int_equal(cm_sid_to_ps_port(0x0000000000010000ull, &ps, &port), -EINVAL);
	assert_int_equal(cm_sid_to_ps_port(0, &ps, &port), -EINVAL);

	/* Round trip over every port space and some ports. */
	static const unsigned spaces[] = {CM_PS_IPOIB, CM_PS_TCP, CM_PS_UDP, CM_PS_IB};
	for (size_t i = 0; i < 4; i++) {
		for (unsigned p = 0; p <= 0xffff; p += 0x1111) {
			assert_int_equal(cm_sid_from_ps_port(spaces[i], (uint16_t)p, &sid), 0);
			assert_int_equal(cm_sid_to_ps_port(sid, &ps, &port), 0);
			assert_int_equal(ps, spaces[i]);
			assert_int_equal(port, p);
		}
	}
	assert_string_equal(cm_ps_name(CM_PS_TCP), "TCP");
	assert_null(cm_ps_name(0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout),	   cmocka_unit_test(test_v4_golden_and_round_trip),
	    cmocka_unit_test(test_v4_pad_ignored), cmocka_unit_test(test_v6_golden_and_round_trip),
	    cmocka_unit_test(test_errors),	   cmocka_unit_test(test_service_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
