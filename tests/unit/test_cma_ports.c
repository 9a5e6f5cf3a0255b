/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * lib/'s port-space table through rdma_bind_addr and rdma_listen: the
 * kernel's rules (specific and wildcard addresses, ephemeral ports,
 * REUSEADDR, AFONLY, addresses that are not local, binding twice).  One
 * table per process: each test uses its own port numbers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "lib/cma.h"
#include "tests/unit/fake_verbs.h"

static struct rdma_event_channel *ch;

static int setup(void **state)
{
	int rc = fake_cma_channel_setup(state);

	ch = fake_cma_channel;
	return rc;
}

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	assert_int_equal(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

static struct sockaddr_in6 v6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 s = {.sin6_family = AF_INET6, .sin6_port = htons(port)};

	assert_int_equal(inet_pton(AF_INET6, ip, &s.sin6_addr), 1);
	return s;
}

static struct rdma_cm_id *new_id(void)
{
	struct rdma_cm_id *id = NULL;

	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	return id;
}

static void set_int(struct rdma_cm_id *id, int opt, int v)
{
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID, opt, &v, sizeof(v)), 0);
}

static void expect_bind(struct rdma_cm_id *id, void *addr, int err)
{
	int rc = rdma_bind_addr(id, addr);

	if (!err) {
		assert_int_equal(rc, 0);
	} else {
		assert_int_equal(rc, -1);
		assert_int_equal(errno, err);
	}
}

static void test_bind_specific(void **state)
{
	struct sockaddr_in a = v4("198.18.0.1", 20001), b = v4("198.18.0.2", 20001);
	struct rdma_cm_id *x = new_id(), *y = new_id();
	struct sockaddr_in *src;

	(void)state;
	expect_bind(x, &a, 0);
	/* A local address attaches the id to its port. */
	assert_non_null(x->verbs);
	assert_string_equal(x->verbs->device->name, "fake0");
	assert_int_equal(x->port_num, 1);
	src = (struct sockaddr_in *)rdma_get_local_addr(x);
	assert_int_equal(src->sin_family, AF_INET);
	assert_int_equal(src->sin_addr.s_addr, a.sin_addr.s_addr);
	assert_int_equal(rdma_get_src_port(x), htons(20001));
	assert_int_equal(x->route.addr.addr.ibaddr.sgid.raw[15], 5);
	/* Another address on the same port is fine (h2's, on fake1). */
	expect_bind(y, &b, 0);
	assert_string_equal(y->verbs->device->name, "fake1");
	rdma_destroy_id(x);
	rdma_destroy_id(y);
}

static void test_bind_wildcard(void **state)
{
	struct sockaddr_in any = v4("0.0.0.0", 20002);
	struct sockaddr_in6 any6 = v6("::", 20003);
	struct rdma_cm_id *x = new_id(), *y = new_id();

	(void)state;
	expect_bind(x, &any, 0);
	assert_null(x->verbs); /* a wildcard binds to no device */
	assert_int_equal(rdma_get_src_port(x), htons(20002));
	expect_bind(y, &any6, 0);
	assert_null(y->verbs);
	rdma_destroy_id(x);
	rdma_destroy_id(y);
}

static void test_bind_port_zero_is_ephemeral(void **state)
{
	struct rdma_cm_id *ids[8];

	(void)state;
	for (int i = 0; i < 8; i++) {
		struct sockaddr_in a = v4(i % 2 ? "0.0.0.0" : "198.18.0.1", 0);
		uint16_t p;

		ids[i] = new_id();
		expect_bind(ids[i], &a, 0);
		p = ntohs(rdma_get_src_port(ids[i]));
		assert_in_range(p, 32768, 60999);
		/* Each gets a port of its own. */
		for (int j = 0; j < i; j++)
			assert_int_not_equal(p, ntohs(rdma_get_src_port(ids[j])));
	}
	for (int i = 0; i < 8; i++)
		rdma_destroy_id(ids[i]);
}

static void test_bind_in_use(void **state)
{
	struct sockaddr_in a = v4("198.18.0.1", 20004);
	struct sockaddr_in6 a6 = v6("2001:db8::1", 20005);
	struct rdma_cm_id *x = new_id(), *y = new_id(), *z = new_id(), *w = new_id();

	(void)state;
	expect_bind(x, &a, 0);
	expect_bind(y, &a, EADDRINUSE);
	expect_bind(z, &a6, 0);
	expect_bind(w, &a6, EADDRINUSE);
	/* The failed binds left y and w idle: they may bind elsewhere. */
	a.sin_port = htons(20006);
	expect_bind(y, &a, 0);
	rdma_destroy_id(x);
	/* Destroy frees the port. */
	a.sin_port = htons(20004);
	expect_bind(w, &a, 0);
	rdma_destroy_id(y);
	rdma_destroy_id(z);
	rdma_destroy_id(w);
}

static void test_bind_wildcard_vs_specific(void **state)
{
	struct sockaddr_in any = v4("0.0.0.0", 20007), a = v4("198.18.0.1", 20007);
	struct sockaddr_in lo = v4("127.0.0.1", 20008), b = v4("198.18.0.2", 20008);
	struct rdma_cm_id *x = new_id(), *y = new_id(), *z = new_id(), *w = new_id();

	(void)state;
	expect_bind(x, &any, 0);
	expect_bind(y, &a, EADDRNOTAVAIL);
	/* The other order, with loopback (which counts as a wildcard). */
	expect_bind(z, &b, 0);
	expect_bind(w, &lo, EADDRNOTAVAIL);
	rdma_destroy_id(x);
	rdma_destroy_id(y);
	rdma_destroy_id(z);
	rdma_destroy_id(w);
}

static void test_bind_reuseaddr(void **state)
{
	struct sockaddr_in any = v4("0.0.0.0", 20009), a = v4("198.18.0.1", 20009);
	struct rdma_cm_id *x = new_id(), *y = new_id(), *z = new_id(), *u = new_id();

	(void)state;
	set_int(x, RDMA_OPTION_ID_REUSEADDR, 1);
	set_int(y, RDMA_OPTION_ID_REUSEADDR, 1);
	set_int(z, RDMA_OPTION_ID_REUSEADDR, 1);
	expect_bind(x, &any, 0);
	expect_bind(y, &a, 0);
	expect_bind(z, &a, 0);
	/* Without REUSEADDR on the newcomer, the rules apply. */
	expect_bind(u, &a, EADDRNOTAVAIL);
	/* rdma_listen checks again, ignoring REUSEADDR: x's wildcard conflicts. */
	assert_int_equal(rdma_listen(y, 1), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	rdma_destroy_id(x);
	x = NULL;
	/* Left with y and z on one address: in use. */
	assert_int_equal(rdma_listen(y, 1), -1);
	assert_int_equal(errno, EADDRINUSE);
	rdma_destroy_id(z);
	z = NULL;
	/* Alone on the port, it may listen. */
	assert_int_equal(rdma_listen(y, 1), 0);
	rdma_destroy_id(y);
	rdma_destroy_id(u);
}

static void test_bind_afonly(void **state)
{
	struct sockaddr_in any = v4("0.0.0.0", 20010);
	struct sockaddr_in6 any6 = v6("::", 20010);
	struct rdma_cm_id *x = new_id(), *y = new_id(), *z = new_id();

	(void)state;
	/* IPv4 is AFONLY by default; IPv6 is not (bindv6only = 0): conflict. */
	expect_bind(x, &any, 0);
	expect_bind(y, &any6, EADDRNOTAVAIL);
	/* An AFONLY IPv6 wildcard shares the port with the IPv4 one. */
	set_int(z, RDMA_OPTION_ID_AFONLY, 1);
	expect_bind(z, &any6, 0);
	/* AFONLY cannot change after bind. */
	{
		int zero = 0;

		expect_bind(y, &any, EADDRNOTAVAIL);
		assert_int_equal(
		    rdma_set_option(z, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &zero, sizeof(zero)),
		    0); /* ADDR_BOUND still allows it (kernel: IDLE/BOUND) */
	}
	rdma_destroy_id(x);
	rdma_destroy_id(y);
	rdma_destroy_id(z);
}

static void test_bind_not_local(void **state)
{
	struct sockaddr_in far = v4("10.1.2.3", 20011), nogid = v4("198.18.0.3", 20011);
	struct sockaddr_in6 far6 = v6("2001:db8::99", 20011);
	struct sockaddr_in6 ll = v6("fe80::1", 20011);
	struct sockaddr un = {.sa_family = AF_UNIX};
	struct rdma_cm_id *x = new_id();

	(void)state;
	expect_bind(x, &far, EADDRNOTAVAIL);
	expect_bind(x, &far6, EADDRNOTAVAIL);
	/* Known to the address file, but its GID is on no local port. */
	expect_bind(x, &nogid, EADDRNOTAVAIL);
	/* Link-local without a scope id. */
	expect_bind(x, &ll, EINVAL);
	expect_bind(x, &un, EAFNOSUPPORT);
	/* None of it bound the id. */
	far = v4("198.18.0.1", 20011);
	expect_bind(x, &far, 0);
	rdma_destroy_id(x);
}

static void test_bind_twice(void **state)
{
	struct sockaddr_in a = v4("198.18.0.1", 20012), b = v4("198.18.0.1", 20013);
	struct rdma_cm_id *x = new_id();

	(void)state;
	expect_bind(x, &a, 0);
	expect_bind(x, &b, EINVAL);
	expect_bind(x, &a, EINVAL);
	rdma_destroy_id(x);
}

static void test_bind_privileged(void **state)
{
	struct sockaddr_in a = v4("198.18.0.1", 80);
	struct rdma_cm_id *x;

	(void)state;
	if (geteuid() == 0)
		skip(); /* root may bind below 1024 */
	x = new_id();
	expect_bind(x, &a, EACCES);
	rdma_destroy_id(x);
}

static void test_listen_binds(void **state)
{
	struct rdma_cm_id *x = new_id();
	const struct sockaddr *src;

	(void)state;
	assert_int_equal(rdma_listen(x, 4), 0);
	src = rdma_get_local_addr(x);
	assert_int_equal(src->sa_family, AF_INET);
	assert_int_equal(((const struct sockaddr_in *)src)->sin_addr.s_addr, htonl(INADDR_ANY));
	assert_in_range(ntohs(rdma_get_src_port(x)), 32768, 60999);
	/* Listening again only updates the backlog; a listener cannot bind. */
	assert_int_equal(rdma_listen(x, 8), 0);
	{
		struct sockaddr_in a = v4("198.18.0.1", 20014);

		expect_bind(x, &a, EINVAL);
	}
	rdma_destroy_id(x);
}

static void test_listen_specific(void **state)
{
	struct sockaddr_in a = v4("198.18.0.2", 20015);
	struct rdma_cm_id *x = new_id(), *y = new_id();

	(void)state;
	expect_bind(x, &a, 0);
	assert_int_equal(rdma_listen(x, 0), 0);
	assert_string_equal(x->verbs->device->name, "fake1");
	/* The port stays taken while listening. */
	expect_bind(y, &a, EADDRINUSE);
	rdma_destroy_id(x);
	expect_bind(y, &a, 0);
	rdma_destroy_id(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bind_specific),
	    cmocka_unit_test(test_bind_wildcard),
	    cmocka_unit_test(test_bind_port_zero_is_ephemeral),
	    cmocka_unit_test(test_bind_in_use),
	    cmocka_unit_test(test_bind_wildcard_vs_specific),
	    cmocka_unit_test(test_bind_reuseaddr),
	    cmocka_unit_test(test_bind_afonly),
	    cmocka_unit_test(test_bind_not_local),
	    cmocka_unit_test(test_bind_twice),
	    cmocka_unit_test(test_bind_privileged),
	    cmocka_unit_test(test_listen_binds),
	    cmocka_unit_test(test_listen_specific),
	};

	return cmocka_run_group_tests(tests, setup, fake_cma_channel_teardown);
}
