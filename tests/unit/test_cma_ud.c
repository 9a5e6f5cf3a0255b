/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * lib/'s datagram mappings, as the kernel's rdma_cm makes them (cma.c
 * cma_set_mgid, with ip_ib_mc_map / ipv6_ib_mc_map of the IPoIB
 * broadcast group): the MGID a multicast address joins, per port space
 * and address family.  Vectors worked out from the kernel's rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include <infiniband/ib.h>

#include "lib/cma.h"

/* The IPoIB broadcast MGID of the default partition, link-local scope. */
static const uint8_t bcast[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0,    0,
				  0,	0,    0,    0,	  0xff, 0xff, 0xff, 0xff};

static void mgid_v4(enum rdma_port_space ps, const char *ip, const uint8_t *b, uint8_t out[16])
{
	struct sockaddr_in sin = {.sin_family = AF_INET};

	assert_int_equal(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	assert_int_equal(cma_mgid_of(ps, (struct sockaddr *)&sin, b, out), 0);
}

static void mgid_v6(enum rdma_port_space ps, const char *ip, uint8_t out[16])
{
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};

	assert_int_equal(inet_pton(AF_INET6, ip, &sin6.sin6_addr), 1);
	assert_int_equal(cma_mgid_of(ps, (struct sockaddr *)&sin6, bcast, out), 0);
}

static void expect_gid(const uint8_t got[16], const char *want)
{
	uint8_t w[16];

	assert_int_equal(inet_pton(AF_INET6, want, w), 1);
	assert_memory_equal(got, w, 16);
}

/* 230.168.1.5 on a UDP id: the RDMA CM signature 0x01 (mckey's default). */
static void test_ipv4_udp(void **state)
{
	uint8_t m[16];

	(void)state;
	mgid_v4(RDMA_PS_UDP, "230.168.1.5", bcast, m);
	expect_gid(m, "ff12:4001:ffff::6a8:105");
	/* Only the low 28 bits of the group address are carried. */
	mgid_v4(RDMA_PS_UDP, "239.255.255.250", bcast, m);
	expect_gid(m, "ff12:4001:ffff::fff:fffa");
}

/* On an IPoIB id the IPoIB signature 0x1b stays: the group is IPoIB's own. */
static void test_ipv4_ipoib(void **state)
{
	uint8_t m[16];

	(void)state;
	mgid_v4(RDMA_PS_IPOIB, "224.0.0.1", bcast, m);
	expect_gid(m, "ff12:401b:ffff::1");
}

/* Scope and P_Key come from the broadcast group (a site-local partition 0x8001). */
static void test_scope_and_pkey(void **state)
{
	uint8_t b[16], m[16];

	(void)state;
	memcpy(b, bcast, 16);
	b[1] = 0x15;
	b[4] = 0x80;
	b[5] = 0x01;
	mgid_v4(RDMA_PS_UDP, "230.1.2.3", b, m);
	expect_gid(m, "ff15:4001:8001::601:203");
}

static void test_ipv6(void **state)
{
	uint8_t m[16];

	(void)state;
	/* The low 80 bits of the group after the signature and P_Key. */
	mgid_v6(RDMA_PS_UDP, "ff0e::1234:5678", m);
	expect_gid(m, "ff12:6001:ffff::1234:5678");
	mgid_v6(RDMA_PS_IPOIB, "ff02::1", m);
	expect_gid(m, "ff12:601b:ffff::1");
	/* An SA-assigned MGID given as an IPv6 address is used as it is. */
	mgid_v6(RDMA_PS_UDP, "ff15:a01b:ffff::42", m);
	expect_gid(m, "ff15:a01b:ffff::42");
}

static void test_af_ib_and_wildcard(void **state)
{
	struct sockaddr_ib sib = {.sib_family = AF_IB};
	struct sockaddr_in any = {.sin_family = AF_INET};
	uint8_t m[16], zero[16] = {0};

	(void)state;
	assert_int_equal(inet_pton(AF_INET6, "ff12:401b:ffff::abcd", &sib.sib_addr), 1);
	assert_int_equal(cma_mgid_of(RDMA_PS_UDP, (struct sockaddr *)&sib, bcast, m), 0);
	expect_gid(m, "ff12:401b:ffff::abcd");
	/* The wildcard asks the SA for a new group: the MGID is zero. */
	memset(m, 0xaa, sizeof(m));
	assert_int_equal(cma_mgid_of(RDMA_PS_UDP, (struct sockaddr *)&any, bcast, m), 0);
	assert_memory_equal(m, zero, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ipv4_udp),	       cmocka_unit_test(test_ipv4_ipoib),
	    cmocka_unit_test(test_scope_and_pkey),     cmocka_unit_test(test_ipv6),
	    cmocka_unit_test(test_af_ib_and_wildcard),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
