/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The ServiceRecord convention of lib/addr_sa.h: ServiceID per address
 * (prefix, family, IPv4 address or IPv6 hash), name, ServiceData8, P_Key
 * default, component mask; IPv4-mapped IPv6 is IPv4.  The SA round trip
 * itself runs on the simulated fabric (tests/integration/addr_sa.sh).
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

#include "lib/addr_sa.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

static const uint8_t gid[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0, 0, 1};

static void test_ipv4(void **state)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(7)};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sa_service s, m;
	uint64_t mask;
	uint8_t want[16];

	(void)state;
	inet_pton(AF_INET, "198.18.0.1", &s4.sin_addr);
	mask = madcm_addr_sa_record(&s, (struct sockaddr *)&s4, gid, 0x8001, 60);
	assert_true(mask & SA_SR_COMP_SERVICE_ID);
	assert_true(mask & SA_SR_COMP_SERVICE_GID);
	assert_true(mask & SA_SR_COMP_SERVICE_P_KEY);
	assert_true(mask & SA_SR_COMP_SERVICE_LEASE);
	assert_true(mask & SA_SR_COMP_SERVICE_NAME);
	for (unsigned i = 0; i < 16; i++)
		assert_true(mask & SA_SR_COMP_SERVICE_DATA8(i));
	assert_false(mask & SA_SR_COMP_SERVICE_KEY);
	assert_true(s.id == 0x10006d04c6120001ull);
	assert_true(madcm_addr_sa_id((struct sockaddr *)&s4) == s.id);
	assert_string_equal(s.name, "madcm:ip:198.18.0.1");
	inet_pton(AF_INET6, "::ffff:198.18.0.1", want);
	assert_memory_equal(s.data8, want, 16);
	assert_memory_equal(s.gid, gid, 16);
	assert_int_equal(s.pkey, 0x8001);
	assert_int_equal(s.lease, 60);

	/* IPv4-mapped IPv6 is the same record */
	memcpy(&s6.sin6_addr, want, 16);
	assert_true(madcm_addr_sa_record(&m, (struct sockaddr *)&s6, gid, 0x8001, 60) == mask);
	assert_memory_equal(&m, &s, sizeof(s));

	/* P_Key 0: the default partition */
	madcm_addr_sa_record(&s, (struct sockaddr *)&s4, gid, 0, SA_SR_LEASE_INFINITE);
	assert_int_equal(s.pkey, 0xffff);
	assert_true(s.lease == SA_SR_LEASE_INFINITE);
}

static void test_ipv6(void **state)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6}, b = {.sin6_family = AF_INET6};
	struct sa_service s;
	uint8_t raw[16];

	(void)state;
	inet_pton(AF_INET6, "2001:db8::1", &a.sin6_addr);
	inet_pton(AF_INET6, "2001:db8::2", &b.sin6_addr);
	assert_true(madcm_addr_sa_record(&s, (struct sockaddr *)&a, gid, 0xffff, 0) != 0);
	assert_true((s.id & MADCM_ADDR_SA_ID_MASK) == MADCM_ADDR_SA_ID_PREFIX);
	assert_int_equal((s.id >> 32) & 0xff, 0x06);
	assert_string_equal(s.name, "madcm:ip:2001:db8::1");
	memcpy(raw, &a.sin6_addr, 16);
	assert_memory_equal(s.data8, raw, 16);
	/* two addresses of one port: two records, not one replacing the other */
	assert_true(madcm_addr_sa_id((struct sockaddr *)&a) !=
		    madcm_addr_sa_id((struct sockaddr *)&b));
	/* the longest IPv6 text fits the 64-byte name */
	inet_pton(AF_INET6, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", &a.sin6_addr);
	assert_true(madcm_addr_sa_record(&s, (struct sockaddr *)&a, gid, 0xffff, 0) != 0);
	assert_true(strlen(s.name) <= SA_SR_NAME_LEN);
	assert_memory_equal(s.name, "madcm:ip:", 9);
}

static void test_other_family(void **state)
{
	struct sockaddr sa = {.sa_family = AF_UNIX};
	struct sa_service s;
	uint8_t g[16];

	(void)state;
	assert_true(madcm_addr_sa_record(&s, &sa, gid, 0xffff, 0) == 0);
	assert_true(madcm_addr_sa_id(&sa) == 0);
	/* refused before any SA client is used */
	assert_int_equal(madcm_addr_sa_register(NULL, &sa, gid, 0xffff, 0), -EAFNOSUPPORT);
	assert_int_equal(madcm_addr_sa_unregister(NULL, &sa, gid, 0xffff), -EAFNOSUPPORT);
	assert_int_equal(madcm_addr_sa_resolve(NULL, &sa, g, NULL), -EAFNOSUPPORT);
	assert_int_equal(madcm_addr_sa_register(NULL, NULL, gid, 0xffff, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ipv4),
	    cmocka_unit_test(test_ipv6),
	    cmocka_unit_test(test_other_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
