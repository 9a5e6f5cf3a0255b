/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * lib/ (the librdmacm API) without a fabric: argument checks and errno of
 * every call, event channels (O_NONBLOCK, migrate, destroy waiting for
 * acks), rdma_write_cm_event, rdma_event_str, and that the verbs lib/
 * calls are the fakes of tests/unit/fake_verbs.c.
 */
#include "config.h" /* MADCM_DEBUG: cma_lock() as lib/ has it */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
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

static void test_fakes_are_called(void **state)
{
	struct ibv_context **devs;
	unsigned before = fake_verbs.calls;
	int n = -1;

	(void)state;
	assert_int_equal(before, 0); /* nothing ran before the first rdma_* call */
	devs = rdma_get_devices(&n);
	assert_non_null(devs);
	assert_int_equal(n, 2);
	assert_true(fake_verbs.calls > before);
	assert_string_equal(devs[0]->device->name, "fake0");
	assert_string_equal(devs[1]->device->name, "fake1");
	assert_null(devs[2]);
	/* The very call lib/ makes resolves to the fake, not libibverbs.so. */
	before = fake_verbs.calls;
	assert_string_equal(ibv_get_device_name(devs[1]->device), "fake1");
	assert_int_equal(fake_verbs.calls, before + 1);
	rdma_free_devices(devs);
}

static void expect_einval(int rc)
{
	assert_int_equal(rc, -1);
	assert_int_equal(errno, EINVAL);
}

static void test_null_arguments(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rdma_cm_event *ev;
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;
	struct ibv_qp_attr qa;
	struct ibv_ece ece;
	int mask, one = 1;

	(void)state;
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);

	expect_einval(rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP));
	expect_einval(rdma_destroy_id(NULL));
	expect_einval(rdma_bind_addr(NULL, (struct sockaddr *)&sin));
	expect_einval(rdma_bind_addr(id, NULL));
	expect_einval(rdma_resolve_addr(NULL, NULL, (struct sockaddr *)&sin, 100));
	expect_einval(rdma_resolve_addr(id, NULL, NULL, 100));
	expect_einval(rdma_resolve_route(NULL, 100));
	expect_einval(rdma_listen(NULL, 1));
	expect_einval(rdma_connect(NULL, NULL));
	expect_einval(rdma_accept(NULL, NULL));
	expect_einval(rdma_reject(NULL, NULL, 0));
	expect_einval(rdma_reject(id, NULL, 4)); /* length without data */
	expect_einval(rdma_disconnect(NULL));
	expect_einval(rdma_establish(NULL));
	expect_einval(rdma_notify(NULL, IBV_EVENT_COMM_EST));
	expect_einval(rdma_get_cm_event(NULL, &ev));
	expect_einval(rdma_get_cm_event(ch, NULL));
	expect_einval(rdma_ack_cm_event(NULL));
	expect_einval(rdma_migrate_id(NULL, ch));
	expect_einval(
	    rdma_set_option(NULL, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	expect_einval(
	    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, NULL, sizeof(one)));
	expect_einval(rdma_init_qp_attr(NULL, &qa, &mask));
	expect_einval(rdma_init_qp_attr(id, NULL, &mask));
	expect_einval(rdma_init_qp_attr(id, &qa, NULL));
	expect_einval(rdma_create_qp(NULL, NULL, NULL));
	expect_einval(rdma_create_qp(id, NULL, NULL));
	expect_einval(rdma_create_qp_ex(id, NULL));
	expect_einval(rdma_create_srq(NULL, NULL, NULL));
	expect_einval(rdma_getaddrinfo(NULL, NULL, NULL, &res));
	expect_einval(rdma_getaddrinfo("198.18.0.1", NULL, NULL, NULL));
	expect_einval(rdma_create_ep(NULL, NULL, NULL, NULL));
	expect_einval(rdma_get_request(NULL, &id));
	expect_einval(rdma_get_request(id, NULL));
	expect_einval(rdma_write_cm_event(NULL, RDMA_CM_EVENT_USER, 0, 0));
	expect_einval(rdma_set_local_ece(NULL, &ece));
	expect_einval(rdma_set_local_ece(id, NULL));
	expect_einval(rdma_get_remote_ece(NULL, &ece));
	expect_einval(rdma_get_remote_ece(id, NULL));
	expect_einval(rdma_resolve_addrinfo(NULL, "h2", NULL, NULL));
	expect_einval(rdma_query_addrinfo(NULL, &res));
	expect_einval(rdma_query_addrinfo(id, NULL));
	/* Void calls take NULL quietly. */
	rdma_destroy_qp(NULL);
	rdma_destroy_srq(NULL);
	rdma_destroy_ep(NULL);
	rdma_destroy_event_channel(NULL);
	rdma_freeaddrinfo(NULL);
	assert_int_equal(rdma_get_src_port(NULL), 0);
	assert_int_equal(rdma_get_dst_port(NULL), 0);

	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_create_id_port_spaces(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	int ctx_tag;

	(void)state;
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, &ctx_tag, RDMA_PS_TCP), 0);
	assert_non_null(id);
	assert_ptr_equal(id->context, &ctx_tag);
	assert_ptr_equal(id->channel, ch);
	assert_int_equal(id->ps, RDMA_PS_TCP);
	assert_int_equal(id->qp_type, IBV_QPT_RC);
	assert_null(id->verbs); /* not bound to a device yet */
	assert_int_equal(rdma_destroy_id(id), 0);

	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_IB), 0);
	assert_int_equal(id->qp_type, IBV_QPT_RC);
	assert_int_equal(rdma_destroy_id(id), 0);

	/* Datagram port spaces make UD ids; anything else is refused. */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(id->qp_type, IBV_QPT_UD);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_IPOIB), 0);
	assert_int_equal(id->qp_type, IBV_QPT_UD);
	assert_int_equal(rdma_destroy_id(id), 0);
	id = NULL;
	assert_int_equal(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x1234), -1);
	assert_int_equal(errno, EPROTONOSUPPORT);
	assert_null(id);
	rdma_destroy_event_channel(ch);
}

static void test_set_option_errors(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	uint8_t tos = 16, ack = 14;
	int one = 1;

	(void)state;
	/* NULL when an allocation failed (make check-oom). */
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1), 0);
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack, 1),
			 0);
	assert_int_equal(
	    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)), 0);
	assert_int_equal(
	    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)), 0);
	/* Wrong lengths. */
	expect_einval(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &one, sizeof(one)));
	expect_einval(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &tos, 1));
	expect_einval(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &tos, 1));
	expect_einval(
	    rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &one, sizeof(one)));
	/* Unknown option, unknown level; IB_PATH needs a resolved address. */
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID, 99, &one, sizeof(one)), -1);
	assert_int_equal(errno, ENOPROTOOPT);
	assert_int_equal(rdma_set_option(id, 77, RDMA_OPTION_ID_TOS, &tos, 1), -1);
	assert_int_equal(errno, ENOPROTOOPT);
	{
		struct ibv_path_data pd;

		memset(&pd, 0, sizeof(pd));
		expect_einval(
		    rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &pd, sizeof(pd)));
	}
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_event_str(void **state)
{
	static const struct {
		enum rdma_cm_event_type t;
		const char *s;
	} all[] = {
	    {RDMA_CM_EVENT_ADDR_RESOLVED, "RDMA_CM_EVENT_ADDR_RESOLVED"},
	    {RDMA_CM_EVENT_ADDR_ERROR, "RDMA_CM_EVENT_ADDR_ERROR"},
	    {RDMA_CM_EVENT_ROUTE_RESOLVED, "RDMA_CM_EVENT_ROUTE_RESOLVED"},
	    {RDMA_CM_EVENT_ROUTE_ERROR, "RDMA_CM_EVENT_ROUTE_ERROR"},
	    {RDMA_CM_EVENT_CONNECT_REQUEST, "RDMA_CM_EVENT_CONNECT_REQUEST"},
	    {RDMA_CM_EVENT_CONNECT_RESPONSE, "RDMA_CM_EVENT_CONNECT_RESPONSE"},
	    {RDMA_CM_EVENT_CONNECT_ERROR, "RDMA_CM_EVENT_CONNECT_ERROR"},
	    {RDMA_CM_EVENT_UNREACHABLE, "RDMA_CM_EVENT_UNREACHABLE"},
	    {RDMA_CM_EVENT_REJECTED, "RDMA_CM_EVENT_REJECTED"},
	    {RDMA_CM_EVENT_ESTABLISHED, "RDMA_CM_EVENT_ESTABLISHED"},
	    {RDMA_CM_EVENT_DISCONNECTED, "RDMA_CM_EVENT_DISCONNECTED"},
	    {RDMA_CM_EVENT_DEVICE_REMOVAL, "RDMA_CM_EVENT_DEVICE_REMOVAL"},
	    {RDMA_CM_EVENT_MULTICAST_JOIN, "RDMA_CM_EVENT_MULTICAST_JOIN"},
	    {RDMA_CM_EVENT_MULTICAST_ERROR, "RDMA_CM_EVENT_MULTICAST_ERROR"},
	    {RDMA_CM_EVENT_ADDR_CHANGE, "RDMA_CM_EVENT_ADDR_CHANGE"},
	    {RDMA_CM_EVENT_TIMEWAIT_EXIT, "RDMA_CM_EVENT_TIMEWAIT_EXIT"},
	    {RDMA_CM_EVENT_ADDRINFO_RESOLVED, "RDMA_CM_EVENT_ADDRINFO_RESOLVED"},
	    {RDMA_CM_EVENT_ADDRINFO_ERROR, "RDMA_CM_EVENT_ADDRINFO_ERROR"},
	    {RDMA_CM_EVENT_USER, "RDMA_CM_EVENT_USER"},
	    {RDMA_CM_EVENT_INTERNAL, "RDMA_CM_EVENT_INTERNAL"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		assert_string_equal(rdma_event_str(all[i].t), all[i].s);
	assert_string_equal(rdma_event_str((enum rdma_cm_event_type)20), "UNKNOWN EVENT");
	assert_string_equal(rdma_event_str((enum rdma_cm_event_type) - 1), "UNKNOWN EVENT");
}

static void test_write_cm_event(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	(void)state;
	/* NULL when an allocation failed (make check-oom). */
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 7, 0x1122334455ull), 0);
	ev = fake_cma_next_event(ch, FAKE_CMA_WAIT_MS);
	assert_non_null(ev);
	assert_int_equal(ev->event, RDMA_CM_EVENT_USER);
	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->status, 7);
	assert_int_equal(ev->param.arg, 0x1122334455ull);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	/* Only RDMA_CM_EVENT_USER may be written. */
	for (int t = RDMA_CM_EVENT_ADDR_RESOLVED; t <= RDMA_CM_EVENT_INTERNAL; t++)
		if (t != RDMA_CM_EVENT_USER)
			expect_einval(rdma_write_cm_event(id, (enum rdma_cm_event_type)t, 0, 0));
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_channel_nonblock(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int fl;

	(void)state;
	assert_non_null(ch);
	fl = fcntl(ch->fd, F_GETFL);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	assert_int_equal(rdma_get_cm_event(ch, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	/* An event makes the fd readable and the call succeed. */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 1), 0);
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	assert_int_equal(ev->event, RDMA_CM_EVENT_USER);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_get_cm_event(ch, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_migrate_moves_queued_events(void **state)
{
	struct rdma_event_channel *a = rdma_create_event_channel();
	struct rdma_event_channel *b = rdma_create_event_channel();
	struct rdma_cm_id *id, *other;
	struct rdma_cm_event *ev;

	(void)state;
	/* NULL when an allocation failed (make check-oom). */
	assert_non_null(a);
	assert_non_null(b);
	fcntl(a->fd, F_SETFL, fcntl(a->fd, F_GETFL) | O_NONBLOCK);
	fcntl(b->fd, F_SETFL, fcntl(b->fd, F_GETFL) | O_NONBLOCK);
	assert_int_equal(rdma_create_id(a, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_create_id(a, &other, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 1), 0);
	assert_int_equal(rdma_write_cm_event(other, RDMA_CM_EVENT_USER, 0, 99), 0);
	assert_int_equal(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 2), 0);
	assert_int_equal(rdma_migrate_id(id, b), 0);
	assert_ptr_equal(id->channel, b);
	/* id's two events are on b, in order; the other id's stays on a. */
	assert_int_equal(rdma_get_cm_event(b, &ev), 0);
	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->param.arg, 1);
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_get_cm_event(b, &ev), 0);
	assert_int_equal(ev->param.arg, 2);
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_get_cm_event(b, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rdma_get_cm_event(a, &ev), 0);
	assert_ptr_equal(ev->id, other);
	assert_int_equal(ev->param.arg, 99);
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_get_cm_event(a, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	/* New events of id go to b. */
	assert_int_equal(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 3), 0);
	assert_int_equal(rdma_get_cm_event(b, &ev), 0);
	assert_int_equal(ev->param.arg, 3);
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(rdma_destroy_id(other), 0);
	rdma_destroy_event_channel(a);
	rdma_destroy_event_channel(b);
}

struct late_ack {
	struct rdma_cm_event *ev;
	volatile int acked;
};

static void *ack_later(void *arg)
{
	struct late_ack *l = arg;
	struct timespec ts = {.tv_nsec = 100 * 1000 * 1000};

	nanosleep(&ts, NULL); /* let the main thread reach rdma_destroy_id */
	__atomic_store_n(&l->acked, 1, __ATOMIC_SEQ_CST);
	rdma_ack_cm_event(l->ev);
	return NULL;
}

static void test_destroy_waits_for_acks(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct late_ack l = {0};
	struct rdma_cm_id *id;
	pthread_t t;

	(void)state;
	/* NULL when an allocation failed (make check-oom). */
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 5), 0);
	l.ev = fake_cma_next_event(ch, FAKE_CMA_WAIT_MS);
	assert_non_null(l.ev);
	assert_int_equal(pthread_create(&t, NULL, ack_later, &l), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	/* destroy returned: the event it reported must have been acked. */
	assert_int_equal(__atomic_load_n(&l.acked, __ATOMIC_SEQ_CST), 1);
	pthread_join(t, NULL);
	rdma_destroy_event_channel(ch);
}

static void test_destroy_drops_unread_events(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id, *other;
	struct rdma_cm_event *ev;

	(void)state;
	/* NULL when an allocation failed (make check-oom). */
	assert_non_null(ch);
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_create_id(ch, &other, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_write_cm_event(id, RDMA_CM_EVENT_USER, 0, 1), 0);
	assert_int_equal(rdma_write_cm_event(other, RDMA_CM_EVENT_USER, 0, 2), 0);
	/* Events never read die with their id: destroy does not wait for them. */
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	assert_ptr_equal(ev->id, other);
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_get_cm_event(ch, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rdma_destroy_id(other), 0);
	rdma_destroy_event_channel(ch);
}

static void *blocked_get(void *arg)
{
	struct rdma_event_channel *ch = arg;
	struct rdma_cm_event *ev;

	(void)rdma_get_cm_event(ch, &ev);
	return (void *)1; /* never: a destroyed channel's waiter stays blocked */
}

static unsigned waiters_of(struct rdma_event_channel *ch)
{
	unsigned n;

	cma_lock();
	n = ((struct cma_channel *)ch)->waiters;
	cma_unlock();
	return n;
}

/*
 * rping destroys its channel while its CM thread still waits in
 * rdma_get_cm_event.  On the kernel that read(2) stays blocked until the
 * process exits; here too: the waiter must neither return an error (rping
 * exits with it) nor touch the freed channel.
 */
static void test_destroy_channel_with_waiter(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct timespec tick = {0, 1000000};
	pthread_t t;

	(void)state;
	assert_non_null(ch);
	assert_int_equal(pthread_create(&t, NULL, blocked_get, ch), 0);
	while (waiters_of(ch) == 0)
		nanosleep(&tick, NULL);
	rdma_destroy_event_channel(ch);
	/* The channel is kept for its waiter, marked dead, and nothing else. */
	cma_lock();
	assert_true(((struct cma_channel *)ch)->dead);
	assert_int_equal(((struct cma_channel *)ch)->count, 0);
	cma_unlock();
	/* A new channel does not take the old one's fd. */
	struct rdma_event_channel *ch2 = rdma_create_event_channel();

	assert_non_null(ch2);
	assert_int_not_equal(ch2->fd, ch->fd);
	rdma_destroy_event_channel(ch2);
	pthread_detach(t);
}

/*
 * rping's CM thread acks its last event and comes back to
 * rdma_get_cm_event while main destroys the channel: it must block as a
 * waiter does (neither an error, which rping exits with, nor a read of
 * freed memory, which ASan would report).
 */
static void test_get_after_destroy(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct timespec tick = {0, 1000000};
	pthread_t t;

	(void)state;
	assert_non_null(ch);
	rdma_destroy_event_channel(ch);
	cma_lock();
	assert_true(((struct cma_channel *)ch)->dead); /* kept, not freed */
	cma_unlock();
	assert_int_equal(pthread_create(&t, NULL, blocked_get, ch), 0);
	for (int i = 0; i < 50; i++) {
		nanosleep(&tick, NULL);
		assert_int_equal(pthread_tryjoin_np(t, NULL), EBUSY);
	}
	pthread_detach(t);
}

static void test_state_errors_idle(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_id *id;

	(void)state;
	/* NULL when an allocation failed (make check-oom). */
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	expect_einval(rdma_resolve_route(id, 100));
	expect_einval(rdma_connect(id, &p));
	expect_einval(rdma_accept(id, &p));
	expect_einval(rdma_reject(id, NULL, 0));
	expect_einval(rdma_disconnect(id));
	expect_einval(rdma_establish(id));
	expect_einval(rdma_notify(id, IBV_EVENT_COMM_EST));
	expect_einval(rdma_notify(id, IBV_EVENT_QP_FATAL));
	expect_einval(rdma_get_request(id, &id)); /* not a sync id */
	{
		struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC};

		expect_einval(rdma_create_qp(id, NULL, &qa)); /* no device yet */
	}
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fakes_are_called),
	    cmocka_unit_test(test_null_arguments),
	    cmocka_unit_test(test_create_id_port_spaces),
	    cmocka_unit_test(test_set_option_errors),
	    cmocka_unit_test(test_event_str),
	    cmocka_unit_test(test_write_cm_event),
	    cmocka_unit_test(test_channel_nonblock),
	    cmocka_unit_test(test_migrate_moves_queued_events),
	    cmocka_unit_test(test_destroy_waits_for_acks),
	    cmocka_unit_test(test_destroy_drops_unread_events),
	    cmocka_unit_test(test_state_errors_idle),
	    cmocka_unit_test(test_destroy_channel_with_waiter),
	    cmocka_unit_test(test_get_after_destroy),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
