/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Address resolution in lib/: rdma_resolve_addr through the address file
 * (ADDR_RESOLVED with the device, port and source address filled in; an
 * unknown address gives ADDR_ERROR -ETIMEDOUT once its timeout passes),
 * rdma_resolve_route errors, and rdma_getaddrinfo (numeric, by host name
 * from the address file, EAI_* for an unknown name).
 */
#include <errno.h>
#include <netdb.h>
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

static struct rdma_cm_event *expect_event(enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = fake_cma_next_event(ch, FAKE_CMA_WAIT_MS);

	if (!ev)
		fail_msg("no event, expected %s", rdma_event_str(type));
	if (ev->event != type) {
		enum rdma_cm_event_type got = ev->event;
		int status = ev->status;

		rdma_ack_cm_event(ev); /* not left unacked (a leak to check-oom) */
		fail_msg("got %s (status %d), expected %s", rdma_event_str(got), status,
			 rdma_event_str(type));
	}
	return ev;
}

static void test_resolve_addr_fills_source(void **state)
{
	struct sockaddr_in dst = v4("198.18.0.2", 7000);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	const struct sockaddr_in *src;

	(void)state;
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->status, 0);
	rdma_ack_cm_event(ev);
	/* The port whose GID the destination has (h2 is in this process too). */
	assert_non_null(id->verbs);
	assert_string_equal(id->verbs->device->name, "fake1");
	assert_int_equal(id->port_num, 1);
	/* The source: the address file's address of that port, ephemeral port. */
	src = (const struct sockaddr_in *)rdma_get_local_addr(id);
	assert_int_equal(src->sin_family, AF_INET);
	assert_int_equal(src->sin_addr.s_addr, dst.sin_addr.s_addr);
	assert_in_range(ntohs(src->sin_port), 32768, 60999);
	assert_int_equal(rdma_get_dst_port(id), htons(7000));
	assert_int_equal(id->route.addr.addr.ibaddr.dgid.raw[15], 6);
	assert_int_equal(id->route.addr.addr.ibaddr.sgid.raw[15], 6);
	rdma_destroy_id(id);
}

static void test_resolve_addr_with_source(void **state)
{
	struct sockaddr_in6 src = v6("2001:db8::1", 0), dst = v6("2001:db8::2", 7001);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	(void)state;
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
	    rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	assert_string_equal(id->verbs->device->name, "fake0");
	assert_int_equal(id->route.addr.addr.ibaddr.sgid.raw[15], 5);
	assert_int_equal(id->route.addr.addr.ibaddr.dgid.raw[15], 6);
	assert_memory_equal(&((const struct sockaddr_in6 *)rdma_get_local_addr(id))->sin6_addr,
			    &src.sin6_addr, 16);
	/* resolve again (ADDR_RESOLVED may resolve anew); mixed families: EINVAL. */
	{
		struct sockaddr_in d4 = v4("198.18.0.2", 7001);

		assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d4, 2000), -1);
		assert_int_equal(errno, EINVAL);
	}
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
}

static void test_resolve_addr_bad_args(void **state)
{
	struct sockaddr_in src = v4("198.18.0.1", 0);
	struct sockaddr_in6 dst6 = v6("2001:db8::2", 1);
	struct sockaddr un = {.sa_family = AF_UNIX};
	struct rdma_cm_id *id;

	(void)state;
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, &un, 100), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
	assert_int_equal(
	    rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst6, 100), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_id(id);
}

static void test_resolve_addr_unknown(void **state)
{
	struct sockaddr_in dst = v4("203.0.113.9", 7002);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	(void)state;
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	/* No source knows it: ADDR_ERROR once the timeout has passed. */
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 50), 0);
	ev = expect_event(RDMA_CM_EVENT_ADDR_ERROR);
	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->status, -ETIMEDOUT);
	rdma_ack_cm_event(ev);
	/* Back to bound: it may try again. */
	assert_int_equal(rdma_resolve_route(id, 100), -1);
	assert_int_equal(errno, EINVAL);
	dst = v4("198.18.0.2", 7002);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
}

static void test_resolve_addr_unknown_destroy(void **state)
{
	struct sockaddr_in dst = v4("203.0.113.10", 7003);
	struct rdma_cm_id *id;

	(void)state;
	/* Destroyed while the resolution waits: no event afterwards, no crash. */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 50), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_null(fake_cma_next_event(ch, 200));
}

/*
 * An address's P_Key (the address file's third column) becomes the id's;
 * the QP's P_Key index is its partition's in the port's table, a
 * full-member entry before a limited one (ib_find_cached_pkey), and no
 * entry of the partition fails as the kernel's ENOENT.
 */
static void test_resolve_addr_pkey(void **state)
{
	struct sockaddr_in dst = v4("10.1.0.2", 7005);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_qp_attr qa;
	int mask;

	(void)state;
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	assert_int_equal(ntohs(id->route.addr.addr.ibaddr.pkey), 0x8001);
	assert_int_equal(id->route.addr.addr.ibaddr.dgid.raw[15], 6);

	/* the default table only: not a member */
	qa.qp_state = IBV_QPS_INIT;
	assert_int_equal(rdma_init_qp_attr(id, &qa, &mask), -1);
	assert_int_equal(errno, ENOENT);
	/* a limited member: found without the membership bit */
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.pkeys[0] = 0xffff;
	fake_verbs.pkeys[1] = 0x0001;
	fake_verbs.pkeys[2] = 0x8002;
	fake_verbs.npkeys = 3;
	pthread_mutex_unlock(&fake_verbs.lock);
	qa.qp_state = IBV_QPS_INIT;
	assert_int_equal(rdma_init_qp_attr(id, &qa, &mask), 0);
	assert_true(mask & IBV_QP_PKEY_INDEX);
	assert_int_equal(qa.pkey_index, 1);
	/* a full-member entry is taken before a limited one */
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.pkeys[3] = 0x8001;
	fake_verbs.npkeys = 4;
	pthread_mutex_unlock(&fake_verbs.lock);
	qa.qp_state = IBV_QPS_INIT;
	assert_int_equal(rdma_init_qp_attr(id, &qa, &mask), 0);
	assert_int_equal(qa.pkey_index, 3);
	pthread_mutex_lock(&fake_verbs.lock);
	fake_verbs.npkeys = 0;
	pthread_mutex_unlock(&fake_verbs.lock);

	/* an address without the column: the default partition, index 0 */
	dst = v4("198.18.0.2", 7005);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	assert_int_equal(ntohs(id->route.addr.addr.ibaddr.pkey), 0xffff);
	qa.qp_state = IBV_QPS_INIT;
	assert_int_equal(rdma_init_qp_attr(id, &qa, &mask), 0);
	assert_int_equal(qa.pkey_index, 0);
	rdma_destroy_id(id);
}

static void test_resolve_route_no_path(void **state)
{
	/* 198.18.0.3 maps to fe80::7, which no port has: the SA never answers. */
	struct sockaddr_in src = v4("198.18.0.1", 0), dst = v4("198.18.0.3", 7004);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	(void)state;
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
	    rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	assert_int_equal(id->route.addr.addr.ibaddr.dgid.raw[15], 7);
	assert_int_equal(rdma_resolve_route(id, 100), 0);
	ev = expect_event(RDMA_CM_EVENT_ROUTE_ERROR);
	assert_true(ev->status < 0);
	rdma_ack_cm_event(ev);
	/* Back to ADDR_RESOLVED: a second resolve_route is allowed. */
	assert_int_equal(rdma_connect(id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_id(id);
}

static void test_getaddrinfo_numeric(void **state)
{
	struct rdma_addrinfo hints, *res = NULL;
	const struct sockaddr_in *d;

	(void)state;
	assert_int_equal(rdma_getaddrinfo("198.18.0.2", "7471", NULL, &res), 0);
	assert_non_null(res);
	assert_int_equal(res->ai_family, AF_INET);
	assert_int_equal(res->ai_port_space, RDMA_PS_TCP);
	assert_int_equal(res->ai_qp_type, IBV_QPT_RC);
	assert_non_null(res->ai_dst_addr);
	assert_int_equal(res->ai_dst_len, sizeof(struct sockaddr_in));
	d = (const struct sockaddr_in *)res->ai_dst_addr;
	assert_int_equal(d->sin_addr.s_addr, v4("198.18.0.2", 0).sin_addr.s_addr);
	assert_int_equal(ntohs(d->sin_port), 7471);
	rdma_freeaddrinfo(res);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	assert_int_equal(rdma_getaddrinfo("2001:db8::1", "7472", &hints, &res), 0);
	assert_int_equal(res->ai_family, AF_INET6);
	assert_non_null(res->ai_src_addr);
	assert_null(res->ai_dst_addr);
	assert_int_equal(ntohs(((const struct sockaddr_in6 *)res->ai_src_addr)->sin6_port), 7472);
	rdma_freeaddrinfo(res);
}

static void test_getaddrinfo_names(void **state)
{
	struct rdma_addrinfo hints, *res = NULL;

	(void)state;
	/* Host names from the address file; IPv4 first. */
	assert_int_equal(rdma_getaddrinfo("h2", "7473", NULL, &res), 0);
	assert_int_equal(res->ai_family, AF_INET);
	assert_int_equal(((const struct sockaddr_in *)res->ai_dst_addr)->sin_addr.s_addr,
			 v4("198.18.0.2", 0).sin_addr.s_addr);
	assert_int_equal(ntohs(((const struct sockaddr_in *)res->ai_dst_addr)->sin_port), 7473);
	rdma_freeaddrinfo(res);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET6;
	assert_int_equal(rdma_getaddrinfo("H1", NULL, &hints, &res), 0); /* any case */
	assert_int_equal(res->ai_family, AF_INET6);
	{
		struct sockaddr_in6 want = v6("2001:db8::1", 0);

		assert_memory_equal(&((const struct sockaddr_in6 *)res->ai_dst_addr)->sin6_addr,
				    &want.sin6_addr, 16);
	}
	rdma_freeaddrinfo(res);
	/* An unknown name: an EAI_* code, not -1. */
	res = NULL;
	assert_int_equal(rdma_getaddrinfo("h9", NULL,
					  &(struct rdma_addrinfo){.ai_flags = RAI_NUMERICHOST},
					  &res),
			 EAI_NONAME);
	assert_null(res);
	{
		int rc = rdma_getaddrinfo("nosuchhost.invalid", "1", NULL, &res);

		assert_true(rc == EAI_NONAME || rc == EAI_AGAIN || rc == EAI_FAIL);
		assert_null(res);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resolve_addr_fills_source),
	    cmocka_unit_test(test_resolve_addr_with_source),
	    cmocka_unit_test(test_resolve_addr_bad_args),
	    cmocka_unit_test(test_resolve_addr_unknown),
	    cmocka_unit_test(test_resolve_addr_unknown_destroy),
	    cmocka_unit_test(test_resolve_addr_pkey),
	    cmocka_unit_test(test_resolve_route_no_path),
	    cmocka_unit_test(test_getaddrinfo_numeric),
	    cmocka_unit_test(test_getaddrinfo_names),
	};

	return cmocka_run_group_tests(tests, setup, fake_cma_channel_teardown);
}
