/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * A port whose CM cannot be opened at a program's first call (the process
 * that owned its CM class had not gone yet; through madcmd, a port the
 * daemon did not serve yet) is tried again a second later: the program's
 * later calls work once the port can be opened, as they would on a host
 * whose kernel CM had the port come up.  Its own process: lib/ opens a
 * port's CM once per process.
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

static void set_cm_agent_error(int err)
{
	pthread_mutex_lock(&fake_cma_fabric.lock);
	fake_cma_fabric.cm_agent_error = err;
	pthread_mutex_unlock(&fake_cma_fabric.lock);
}

/* Listen on 198.18.0.1:port with a new id: 0, or errno (the id destroyed). */
static int try_listen(uint16_t port, struct rdma_cm_id **out)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct rdma_cm_id *id;
	int err = 0;

	inet_pton(AF_INET, "198.18.0.1", &sin.sin_addr);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	if (rdma_listen(id, 1)) {
		err = errno;
		rdma_destroy_id(id);
		return err;
	}
	*out = id;
	return 0;
}

static void test_port_opened_later(void **state)
{
	struct rdma_cm_id *id = NULL;
	int err;

	(void)state;
	set_cm_agent_error(-EBUSY);
	err = try_listen(7001, &id);
	assert_int_not_equal(err, 0);
	set_cm_agent_error(0);
	/* Tried again after CMA_RT_RETRY_MS: it opens (bound: a minute at least). */
	for (int i = 0; i < 60000 / 50 && err; i++) {
		usleep(50 * 1000);
		err = try_listen(7001, &id);
	}
	assert_int_equal(err, 0);
	rdma_destroy_id(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_port_opened_later),
	};

	return cmocka_run_group_tests(tests, setup, fake_cma_channel_teardown);
}
