/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Synchronous ids (NULL channel): each call waits for its own event and
 * returns its outcome as 0 or -1/errno; rdma_create_ep / rdma_get_request
 * on top of them, across the fake fabric.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "lib/cma.h"
#include "tests/unit/fake_verbs.h"

static int setup(void **state)
{
	(void)state;
	return fake_cma_setup();
}

static int teardown(void **state)
{
	(void)state;
	fake_cma_teardown();
	return 0;
}

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	assert_int_equal(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

static void test_sync_resolve(void **state)
{
	struct sockaddr_in src = v4("198.18.0.1", 0), dst = v4("198.18.0.2", 21200);
	struct rdma_cm_id *id;

	(void)state;
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_non_null(id->channel); /* a private one */
	/* Returns once the event came; the event stays on the id. */
	assert_int_equal(
	    rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000), 0);
	assert_non_null(id->event);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_non_null(id->verbs);
	assert_int_equal(rdma_resolve_route(id, 2000), 0);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(id->route.num_paths, 1);
	/* destroy acks the event it still holds. */
	assert_int_equal(rdma_destroy_id(id), 0);
}

static void test_sync_failure(void **state)
{
	struct sockaddr_in dst = v4("203.0.113.20", 21201);
	struct rdma_cm_id *id;

	(void)state;
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 50), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_non_null(id->event);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_ADDR_ERROR);
	assert_int_equal(rdma_destroy_id(id), 0);
}

static void test_sync_connect_refused(void **state)
{
	struct rdma_addrinfo *res;
	struct rdma_addrinfo lh = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP};
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1}};
	struct rdma_cm_id *l, *a;

	(void)state;
	/* A listener elsewhere keeps h2's CM open; nobody listens on 21203. */
	assert_int_equal(rdma_getaddrinfo("198.18.0.2", "21202", &lh, &res), 0);
	assert_int_equal(rdma_create_ep(&l, res, NULL, NULL), 0);
	rdma_freeaddrinfo(res);
	assert_int_equal(rdma_listen(l, 1), 0);
	assert_int_equal(rdma_getaddrinfo("198.18.0.2", "21203", NULL, &res), 0);
	{
		struct sockaddr_in s = v4("198.18.0.1", 0);

		free(res->ai_src_addr);
		res->ai_src_addr = malloc(sizeof(s));
		memcpy(res->ai_src_addr, &s, sizeof(s));
		res->ai_src_len = sizeof(s);
	}
	assert_int_equal(rdma_create_ep(&a, res, NULL, &qa), 0);
	rdma_freeaddrinfo(res);
	assert_non_null(a->qp);
	assert_int_equal(rdma_connect(a, NULL), -1);
	assert_int_equal(errno, ECONNREFUSED);
	assert_int_equal(a->event->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(a->event->status, 8);
	rdma_destroy_ep(a);
	rdma_destroy_ep(l);
}

struct server {
	struct rdma_cm_id *l, *c;
	int get_rc, accept_rc, disc_rc;
	uint8_t pdata[8];
};

static void *serve(void *arg)
{
	struct server *s = arg;

	s->get_rc = rdma_get_request(s->l, &s->c);
	if (s->get_rc)
		return NULL;
	memcpy(s->pdata, s->c->event->param.conn.private_data, sizeof(s->pdata));
	s->accept_rc = rdma_accept(s->c, NULL);
	return NULL;
}

static void test_sync_endpoints(void **state)
{
	struct rdma_addrinfo lh = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP}, *res;
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1}};
	struct rdma_conn_param p = {.private_data = "8 bytes", .private_data_len = 8};
	struct server s = {0};
	struct rdma_cm_id *a;
	pthread_t t;

	(void)state;
	assert_int_equal(rdma_getaddrinfo("198.18.0.2", "21204", &lh, &res), 0);
	assert_int_equal(rdma_create_ep(&s.l, res, NULL, &qa), 0);
	rdma_freeaddrinfo(res);
	assert_int_equal(rdma_listen(s.l, 1), 0);
	assert_int_equal(rdma_getaddrinfo("198.18.0.2", "21204", NULL, &res), 0);
	{
		struct sockaddr_in src = v4("198.18.0.1", 0);

		res->ai_src_addr = malloc(sizeof(src));
		memcpy(res->ai_src_addr, &src, sizeof(src));
		res->ai_src_len = sizeof(src);
	}
	assert_int_equal(rdma_create_ep(&a, res, NULL, &qa), 0);
	rdma_freeaddrinfo(res);
	assert_string_equal(a->verbs->device->name, "fake0");
	assert_int_equal(a->qp->state, IBV_QPS_INIT);
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	assert_int_equal(rdma_connect(a, &p), 0);
	assert_int_equal(a->event->event, RDMA_CM_EVENT_ESTABLISHED);
	pthread_join(t, NULL);
	assert_int_equal(s.get_rc, 0);
	assert_int_equal(s.accept_rc, 0);
	/* rdma_get_request made the QP from the listener's attributes. */
	assert_non_null(s.c->qp);
	assert_int_equal(s.c->qp->state, IBV_QPS_RTS);
	assert_int_equal(a->qp->state, IBV_QPS_RTS);
	assert_memory_equal(s.pdata, "8 bytes", 8);
	assert_int_equal(s.c->event->event, RDMA_CM_EVENT_ESTABLISHED);
	/* rdma_get_request only on sync listeners: l is one. */
	rdma_destroy_ep(a); /* sends a DREQ */
	rdma_destroy_ep(s.c);
	rdma_destroy_ep(s.l);
	assert_int_equal(fake_verbs.qps, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sync_resolve),
	    cmocka_unit_test(test_sync_failure),
	    cmocka_unit_test(test_sync_connect_refused),
	    cmocka_unit_test(test_sync_endpoints),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
