/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rdma_bind_addr opens the CM of the ports the id may listen on, so that
 * rdma_listen itself registers the listener at once: a client told the
 * port between bind and listen (qperf 0.4.11 does so) finds it listening.
 * Its own process: lib/ opens a port's CM once per process.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "lib/cma.h"
#include "tests/unit/fake_verbs.h"

/* CM agents (class 0x07) registered on CA ca (-1: any). */
static unsigned cm_agents(int ca)
{
	unsigned n = 0;

	pthread_mutex_lock(&fake_cma_fabric.lock);
	for (int i = 0; i < FAKE_FABRIC_MAX_AGENTS; i++) {
		int o = fake_cma_fabric.agents[i].open;

		if (fake_cma_fabric.agents[i].used &&
		    fake_cma_fabric.agents[i].mgmt_class == 0x07 &&
		    (ca < 0 || fake_cma_fabric.opens[o].ca == ca))
			n++;
	}
	pthread_mutex_unlock(&fake_cma_fabric.lock);
	return n;
}

static void test_bind_opens_cm(void **state)
{
	struct rdma_event_channel *ch = fake_cma_channel;
	struct sockaddr_in one = {.sin_family = AF_INET, .sin_port = htons(7101)};
	struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons(7102)};
	struct rdma_cm_id *a, *b;

	(void)state;
	inet_pton(AF_INET, "198.18.0.1", &one.sin_addr);
	assert_int_equal(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_create_id(ch, &b, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(cm_agents(-1), 0); /* nothing bound: no CM open */
	/* A specific address: its own port's CM, no other. */
	assert_int_equal(rdma_bind_addr(a, (struct sockaddr *)&one), 0);
	assert_int_equal(cm_agents(0), 1);
	assert_int_equal(cm_agents(-1), 1);
	/* A wildcard: every active port's. */
	assert_int_equal(rdma_bind_addr(b, (struct sockaddr *)&any), 0);
	assert_int_equal(cm_agents(-1), (unsigned)fake_cma_fabric.ncas);
	/* The listens use them: no other open. */
	assert_int_equal(rdma_listen(a, 1), 0);
	assert_int_equal(rdma_listen(b, 1), 0);
	assert_int_equal(cm_agents(-1), (unsigned)fake_cma_fabric.ncas);
	rdma_destroy_id(a);
	rdma_destroy_id(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bind_opens_cm),
	};

	return cmocka_run_group_tests(tests, fake_cma_channel_setup, fake_cma_channel_teardown);
}
