/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Connections through lib/ between two "hosts" in one process: h1
 * (fake0, 198.18.0.1) connects to a listener on h2 (fake1, 198.18.0.2)
 * across the fake fabric.  resolve_addr/resolve_route, the REQ as the
 * passive side sees it, accept with QPs moved INIT -> RTR -> RTS with
 * matching QPNs and PSNs, reject, no listener, a QP move that fails
 * (CONNECT_ERROR), disconnect and TimeWait, state errors.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "cm/cm_wire.h"
#include "cm/runtime.h"
#include "lib/cma.h"
#include "tests/unit/fake_verbs.h"

static struct rdma_event_channel *ach, *pch; /* h1's (active), h2's (passive) */

static int setup(void **state)
{
	(void)state;
	if (fake_cma_setup())
		return -1;
	ach = rdma_create_event_channel();
	pch = rdma_create_event_channel();
	return ach && pch ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	/* Every state change lib/ made was one its table lists. */
	assert_int_equal(cma_state_bad, 0);
	rdma_destroy_event_channel(ach);
	rdma_destroy_event_channel(pch);
	fake_cma_teardown();
	return 0;
}

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	assert_int_equal(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch,
					  enum rdma_cm_event_type type)
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

#define expect_event_on expect_event

static void ack(struct rdma_cm_event *ev)
{
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

static struct rdma_cm_id *listener(uint16_t port)
{
	struct sockaddr_in a = v4("198.18.0.2", port);
	struct rdma_cm_id *l;

	assert_int_equal(rdma_create_id(pch, &l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&a), 0);
	assert_int_equal(rdma_listen(l, 8), 0);
	return l;
}

/* An h1 id with its route to 198.18.0.2:port resolved. */
static struct rdma_cm_id *routed(uint16_t port)
{
	struct sockaddr_in src = v4("198.18.0.1", 0), dst = v4("198.18.0.2", port);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(ach, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
	    rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(ach, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->status, 0);
	ack(ev);
	assert_int_equal(rdma_resolve_route(id, 2000), 0);
	ev = expect_event(ach, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(ev->status, 0);
	ack(ev);
	return id;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};

	assert_int_equal(rdma_create_qp(id, NULL, &qa), 0);
	assert_non_null(id->qp);
	assert_int_equal(id->qp->state, IBV_QPS_INIT);
}

static void test_resolve_route_path(void **state)
{
	struct rdma_cm_id *id;
	unsigned q = fake_cma_fabric.sa_path_queries;

	(void)state;
	id = routed(21000);
	assert_string_equal(id->verbs->device->name, "fake0");
	assert_int_equal(id->port_num, 1);
	assert_int_equal(id->route.num_paths, 1);
	assert_non_null(id->route.path_rec);
	assert_int_equal(ntohs(id->route.path_rec[0].slid), 5);
	assert_int_equal(ntohs(id->route.path_rec[0].dlid), 6);
	assert_int_equal(id->route.path_rec[0].sgid.raw[15], 5);
	assert_int_equal(id->route.path_rec[0].dgid.raw[15], 6);
	assert_int_equal(ntohs(id->route.path_rec[0].pkey), 0xffff);
	assert_true(fake_cma_fabric.sa_path_queries <= q + 1); /* cached after the first */
	rdma_destroy_id(id);
}

static void test_state_errors(void **state)
{
	struct sockaddr_in src = v4("198.18.0.1", 0), dst = v4("198.18.0.2", 21001);
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	(void)state;
	assert_int_equal(rdma_create_id(ach, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
	    rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(ach, RDMA_CM_EVENT_ADDR_RESOLVED);
	ack(ev);
	/* connect before resolve_route */
	assert_int_equal(rdma_connect(id, &p), -1);
	assert_int_equal(errno, EINVAL);
	/* accept, reject on an active id */
	assert_int_equal(rdma_accept(id, &p), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_reject(id, NULL, 0), -1);
	assert_int_equal(errno, EINVAL);
	/* listen needs a bound (not resolved) id */
	assert_int_equal(rdma_listen(id, 1), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_id(id);
}

static void test_private_data_limit(void **state)
{
	uint8_t pd[CM_REQ_PRIVATE_DATA_SIZE];
	struct rdma_conn_param p = {
	    .responder_resources = 1, .initiator_depth = 1, .private_data = pd};
	struct rdma_cm_id *id = routed(21002);

	(void)state;
	memset(pd, 0xab, sizeof(pd));
	make_qp(id);
	/* 92 bytes of REQ private data, 36 of them the IP header: 56 left. */
	p.private_data_len = CM_REQ_PRIVATE_DATA_SIZE - CMA_IP_HDR_SIZE + 1;
	assert_int_equal(rdma_connect(id, &p), -1);
	assert_int_equal(errno, EINVAL);
	p.private_data_len = 4;
	p.private_data = NULL;
	assert_int_equal(rdma_connect(id, &p), -1);
	assert_int_equal(errno, EINVAL);
	/* More than the device allows. */
	p.private_data_len = 0;
	p.responder_resources = FAKE_MAX_RD_ATOM + 1;
	assert_int_equal(rdma_connect(id, &p), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static const struct fake_qp_mod *last_mod(const struct fake_qp_mod *m, unsigned n,
					  enum ibv_qp_state s)
{
	for (unsigned i = n; i-- > 0;)
		if ((m[i].mask & IBV_QP_STATE) && m[i].attr.qp_state == s && m[i].rc == 0)
			return &m[i];
	fail_msg("no modify to state %d", s);
	return NULL;
}

static void test_connect_accept_disconnect(void **state)
{
	struct rdma_cm_id *l = listener(21003), *a = routed(21003), *c;
	uint8_t mine[56];
	struct rdma_conn_param p = {
	    .private_data = mine,
	    .private_data_len = sizeof(mine),
	    .responder_resources = 4,
	    .initiator_depth = 2,
	    .retry_count = 5,
	    .rnr_retry_count = 6,
	};
	struct rdma_conn_param ap = {
	    .responder_resources = 2, .initiator_depth = 4, .rnr_retry_count = 7};
	struct fake_qp_mod am[FAKE_QP_MAX_MODS], pm[FAKE_QP_MAX_MODS];
	unsigned na, np;
	const struct fake_qp_mod *artr, *arts, *prtr, *prts;
	struct rdma_cm_event *ev;

	(void)state;
	for (unsigned i = 0; i < sizeof(mine); i++)
		mine[i] = (uint8_t)(i * 7 + 1);
	make_qp(a);
	assert_int_equal(rdma_connect(a, &p), 0);

	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(ev->status, 0);
	assert_ptr_equal(ev->listen_id, l);
	c = ev->id;
	assert_ptr_not_equal(c, l);
	assert_ptr_equal(c->channel, pch);
	assert_string_equal(c->verbs->device->name, "fake1");
	/* The peer's numbers seen from here. */
	assert_int_equal(ev->param.conn.responder_resources, 2);
	assert_int_equal(ev->param.conn.initiator_depth, 4);
	assert_int_equal(ev->param.conn.qp_num, a->qp->qp_num);
	assert_int_equal(ev->param.conn.retry_count, 5);
	assert_int_equal(ev->param.conn.rnr_retry_count, 6);
	/* The private data past the 36-byte IP header: the client's bytes. */
	assert_int_equal(ev->param.conn.private_data_len, 56);
	assert_memory_equal(ev->param.conn.private_data, mine, sizeof(mine));
	/* Addresses from the IP header. */
	assert_int_equal(((struct sockaddr_in *)rdma_get_peer_addr(c))->sin_addr.s_addr,
			 v4("198.18.0.1", 0).sin_addr.s_addr);
	assert_int_equal(((struct sockaddr_in *)rdma_get_local_addr(c))->sin_addr.s_addr,
			 v4("198.18.0.2", 0).sin_addr.s_addr);
	assert_int_equal(rdma_get_src_port(c), htons(21003));
	assert_int_equal(rdma_get_dst_port(c), rdma_get_src_port(a));
	make_qp(c);
	/* accept needs its event acked? No: accept first, ack after (librdmacm order). */
	assert_int_equal(rdma_accept(c, &ap), 0);
	ack(ev);

	ev = expect_event(ach, RDMA_CM_EVENT_ESTABLISHED);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->status, 0);
	assert_int_equal(ev->param.conn.qp_num, c->qp->qp_num);
	assert_int_equal(ev->param.conn.responder_resources, 4); /* passive's initiator depth */
	assert_int_equal(ev->param.conn.initiator_depth, 2);
	ack(ev);
	ev = expect_event(pch, RDMA_CM_EVENT_ESTABLISHED);
	assert_ptr_equal(ev->id, c);
	ack(ev);

	/* The QPs: RTR and RTS with each other's QPN and PSNs. */
	na = fake_qp_mods(a->qp, am, FAKE_QP_MAX_MODS);
	np = fake_qp_mods(c->qp, pm, FAKE_QP_MAX_MODS);
	assert_int_equal(fake_qp_of(a->qp)->bad_transitions, 0);
	assert_int_equal(fake_qp_of(c->qp)->bad_transitions, 0);
	assert_int_equal(a->qp->state, IBV_QPS_RTS);
	assert_int_equal(c->qp->state, IBV_QPS_RTS);
	artr = last_mod(am, na, IBV_QPS_RTR);
	arts = last_mod(am, na, IBV_QPS_RTS);
	prtr = last_mod(pm, np, IBV_QPS_RTR);
	prts = last_mod(pm, np, IBV_QPS_RTS);
	assert_true(artr < arts);
	assert_true(prtr < prts);
	/*
	 * librdmacm's INIT -> INIT goes with INIT -> RTR on both sides: one
	 * modify, from INIT, carrying INIT's access flags (responder
	 * resources given: RDMA read and atomics too) and P_Key index.
	 */
	for (const struct fake_qp_mod *m = artr; m; m = m == artr ? prtr : NULL) {
		assert_int_equal(m->from, IBV_QPS_INIT);
		assert_int_equal(m->mask & (IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX),
				 IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX);
		assert_int_equal(m->attr.qp_access_flags, IBV_ACCESS_REMOTE_WRITE |
							      IBV_ACCESS_REMOTE_READ |
							      IBV_ACCESS_REMOTE_ATOMIC);
		assert_false(m->mask & IBV_QP_PORT);
	}
	/*
	 * rdma_create_qp on the passive id: INIT with what the REQ fixed
	 * (the REQ's initiator depth gives RDMA read and atomics), as the
	 * kernel's rdma_init_qp_attr gives it; the active id's, made before
	 * any connection, allows no remote access.
	 */
	assert_int_equal(pm[0].from, IBV_QPS_RESET);
	assert_int_equal(pm[0].attr.qp_state, IBV_QPS_INIT);
	assert_int_equal(pm[0].mask,
			 IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
	assert_int_equal(pm[0].attr.qp_access_flags, IBV_ACCESS_REMOTE_WRITE |
							 IBV_ACCESS_REMOTE_READ |
							 IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(pm[0].attr.port_num, 1);
	assert_int_equal(am[0].attr.qp_state, IBV_QPS_INIT);
	assert_int_equal(am[0].attr.qp_access_flags, 0);
	for (unsigned k = 0; k < na + np; k++) {
		const struct fake_qp_mod *m = k < na ? &am[k] : &pm[k - na];

		assert_false(m->from == IBV_QPS_INIT && m->attr.qp_state == IBV_QPS_INIT);
	}
	assert_true(artr->mask & IBV_QP_DEST_QPN);
	assert_true(artr->mask & IBV_QP_RQ_PSN);
	assert_true(arts->mask & IBV_QP_SQ_PSN);
	assert_int_equal(artr->attr.dest_qp_num, c->qp->qp_num);
	assert_int_equal(prtr->attr.dest_qp_num, a->qp->qp_num);
	assert_int_equal(artr->attr.rq_psn, prts->attr.sq_psn);
	assert_int_equal(prtr->attr.rq_psn, arts->attr.sq_psn);
	assert_int_equal(artr->attr.ah_attr.dlid, 6);
	assert_int_equal(prtr->attr.ah_attr.dlid, 5);
	assert_int_equal(artr->attr.max_dest_rd_atomic, 4);
	assert_int_equal(arts->attr.max_rd_atomic, 2);
	assert_int_equal(prtr->attr.max_dest_rd_atomic, 2);
	assert_int_equal(prts->attr.max_rd_atomic, 4);
	assert_int_equal(arts->attr.retry_cnt, 5);
	assert_int_equal(arts->attr.rnr_retry, 7); /* the passive side's rnr_retry_count */
	assert_int_equal(prts->attr.rnr_retry, 6);

	/* Disconnect: DISCONNECTED on both, then TimeWait exits on both. */
	assert_int_equal(rdma_disconnect(a), 0);
	assert_int_equal(a->qp->state, IBV_QPS_ERR);
	ev = expect_event(pch, RDMA_CM_EVENT_DISCONNECTED);
	assert_ptr_equal(ev->id, c);
	ack(ev);
	assert_int_equal(rdma_disconnect(c), 0);
	ev = expect_event(ach, RDMA_CM_EVENT_DISCONNECTED);
	assert_ptr_equal(ev->id, a);
	ack(ev);
	ev = expect_event(ach, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	assert_ptr_equal(ev->id, a);
	ack(ev);
	ev = expect_event(pch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	assert_ptr_equal(ev->id, c);
	ack(ev);
	rdma_destroy_qp(a);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

static void test_reject(void **state)
{
	struct rdma_cm_id *l = listener(21004), *a = routed(21004), *c;
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	static const char why[] = "go away";
	struct rdma_cm_event *ev;

	(void)state;
	make_qp(a);
	assert_int_equal(rdma_connect(a, &p), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	assert_int_equal(rdma_reject(c, why, sizeof(why)), 0);
	ack(ev);
	ev = expect_event(ach, RDMA_CM_EVENT_REJECTED);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->status, 28); /* consumer defined */
	assert_non_null(ev->param.conn.private_data);
	assert_true(ev->param.conn.private_data_len >= sizeof(why));
	assert_memory_equal(ev->param.conn.private_data, why, sizeof(why));
	ack(ev);
	/* librdmacm moves the QP to ERR on REJECTED. */
	assert_int_equal(a->qp->state, IBV_QPS_ERR);
	/* Reject data beyond the REJ's 148 bytes. */
	{
		uint8_t big[CM_REJ_PRIVATE_DATA_SIZE + 1] = {0};

		assert_int_equal(rdma_reject(c, big, sizeof(big)), -1);
		assert_int_equal(errno, EINVAL);
	}
	rdma_destroy_qp(a);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* Wait (bounded) until no ServiceRecord round is in flight. */
static void publish_settled(void)
{
	struct cma_publish_stats st;

	for (int i = 0; i < 60000; i++) { /* a minute at least: a loaded machine is slow */
		cma_publish_stats(&st);
		if (!st.in_flight)
			return;
		usleep(1000);
	}
	fail_msg("ServiceRecord rounds still in flight");
}

/* Wait (bounded) until the fake SA holds n requests. */
static void sa_holds(unsigned n)
{
	for (int i = 0; i < 60000; i++) {
		unsigned held;

		pthread_mutex_lock(&fake_cma_fabric.lock);
		held = fake_cma_fabric.sa_sr_nheld;
		pthread_mutex_unlock(&fake_cma_fabric.lock);
		if (held == n)
			return;
		usleep(1000);
	}
	fail_msg("the SA never held %u ServiceRecord requests: log %s", n,
		 fake_cma_fabric.sa_sr_log);
}

static void sa_log_reset(void)
{
	pthread_mutex_lock(&fake_cma_fabric.lock);
	memset(fake_cma_fabric.sa_sr_log, 0, sizeof(fake_cma_fabric.sa_sr_log));
	fake_cma_fabric.sa_sr_nlog = 0;
	pthread_mutex_unlock(&fake_cma_fabric.lock);
}

/*
 * rdma_listen takes REQs while the SA has not answered its ServiceRecord
 * Sets, rdma_destroy_id does not wait either, and the SA sees the Sets
 * and Deletes of a port's two addresses (198.18.0.2, 2001:db8::2) in
 * rounds: a listener destroyed before its Sets were answered gets its
 * Deletes after them, one listening again while they are in flight gets
 * new Sets after them, and the last listener's destroy deletes.
 */
static void test_listen_before_sa(void **state)
{
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct cma_publish_stats st0, st;
	struct rdma_cm_id *l, *a, *c;
	struct rdma_cm_event *ev;

	(void)state;
	publish_settled();
	sa_log_reset();
	cma_publish_stats(&st0);
	fake_cma_fabric.sa_sr_hold = true;
	l = listener(21040);
	sa_holds(2);
	/* Listening, its Sets unanswered: a REQ is taken. */
	a = routed(21040);
	make_qp(a);
	assert_int_equal(rdma_connect(a, &p), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	assert_int_equal(rdma_reject(c, NULL, 0), 0);
	ack(ev);
	ack(expect_event(ach, RDMA_CM_EVENT_REJECTED));
	rdma_destroy_qp(a);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	/* Destroyed with its Sets unanswered: no Delete yet. */
	assert_int_equal(rdma_destroy_id(l), 0);
	assert_string_equal(fake_cma_fabric.sa_sr_log, "SS");
	assert_int_equal(fake_fabric_sa_release(&fake_cma_fabric), 2);
	sa_holds(2);
	assert_string_equal(fake_cma_fabric.sa_sr_log, "SSDD");
	/* Listening again while the Deletes are in flight: Sets after them. */
	l = listener(21041);
	assert_string_equal(fake_cma_fabric.sa_sr_log, "SSDD");
	assert_int_equal(fake_fabric_sa_release(&fake_cma_fabric), 2);
	sa_holds(2);
	assert_string_equal(fake_cma_fabric.sa_sr_log, "SSDDSS");
	fake_cma_fabric.sa_sr_hold = false;
	assert_int_equal(fake_fabric_sa_release(&fake_cma_fabric), 2);
	publish_settled();
	assert_string_equal(fake_cma_fabric.sa_sr_log, "SSDDSS");
	assert_int_equal(rdma_destroy_id(l), 0);
	publish_settled();
	assert_string_equal(fake_cma_fabric.sa_sr_log, "SSDDSSDD");
	cma_publish_stats(&st);
	assert_int_equal(st.sets - st0.sets, 4);
	assert_int_equal(st.deletes - st0.deletes, 4);
	assert_int_equal(st.errors, st0.errors);
}

static void test_no_listener(void **state)
{
	/* A listener on another port keeps h2's CM open; nobody on 21006. */
	struct rdma_cm_id *l = listener(21005), *a = routed(21006);
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_event *ev;

	(void)state;
	make_qp(a);
	assert_int_equal(rdma_connect(a, &p), 0);
	ev = expect_event(ach, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, 8); /* invalid service ID */
	ack(ev);
	rdma_destroy_qp(a);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

static void test_connect_error(void **state)
{
	struct rdma_cm_id *l = listener(21007), *a = routed(21007), *c;
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_event *ev;

	(void)state;
	make_qp(a);
	/*
	 * h1's QP cannot go to RTR when the REP comes: neither in the one
	 * modify that carries INIT's attributes nor in the INIT, RTR tried
	 * after it.
	 */
	fake_verbs_fail_modify(a->qp, IBV_QPS_RTR, EINVAL, 2);
	assert_int_equal(rdma_connect(a, &p), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	make_qp(c);
	assert_int_equal(rdma_accept(c, &p), 0);
	ack(ev);
	ev = expect_event(ach, RDMA_CM_EVENT_CONNECT_ERROR);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->status, -EINVAL);
	ack(ev);
	assert_int_equal(a->qp->state, IBV_QPS_ERR);
	/* The passive side hears the REJ. */
	ev = expect_event(pch, RDMA_CM_EVENT_REJECTED);
	assert_ptr_equal(ev->id, c);
	ack(ev);
	fake_verbs_fail_modify(NULL, IBV_QPS_RESET, 0, 0);
	rdma_destroy_qp(a);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

static void test_connect_without_qp(void **state)
{
	/* No QPs: CONNECT_RESPONSE, then rdma_establish sends the RTU. */
	struct rdma_cm_id *l = listener(21008), *a = routed(21008), *c;
	struct rdma_conn_param p = {
	    .responder_resources = 1, .initiator_depth = 1, .qp_num = 0x4242};
	struct rdma_conn_param ap = {
	    .responder_resources = 1, .initiator_depth = 1, .qp_num = 0x4343};
	struct rdma_cm_event *ev;

	(void)state;
	assert_int_equal(rdma_connect(a, &p), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	assert_int_equal(ev->param.conn.qp_num, 0x4242);
	assert_int_equal(rdma_accept(c, &ap), 0);
	ack(ev);
	ev = expect_event(ach, RDMA_CM_EVENT_CONNECT_RESPONSE);
	assert_int_equal(ev->param.conn.qp_num, 0x4343);
	ack(ev);
	assert_int_equal(rdma_establish(a), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_ESTABLISHED);
	assert_ptr_equal(ev->id, c);
	ack(ev);
	/* The passive side disconnects this time. */
	assert_int_equal(rdma_disconnect(c), 0);
	ev = expect_event(ach, RDMA_CM_EVENT_DISCONNECTED);
	ack(ev);
	assert_int_equal(rdma_disconnect(a), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_DISCONNECTED);
	ack(ev);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/*
 * ECE travels as the kernel carries it (REQ and REP VendorID, the MAD's
 * AttributeModifier): each side reads the other's with rdma_get_remote_ece.
 */
static void test_ece(void **state)
{
	struct rdma_cm_id *l = listener(21010), *a = routed(21010), *c;
	struct rdma_conn_param p = {
	    .responder_resources = 1, .initiator_depth = 1, .qp_num = 0x4444};
	struct rdma_conn_param ap = {
	    .responder_resources = 1, .initiator_depth = 1, .qp_num = 0x4545};
	struct ibv_ece mine = {.vendor_id = 0x123456, .options = 0xabcd0001};
	struct ibv_ece theirs = {.vendor_id = 0x654321, .options = 0x1111};
	struct ibv_ece got;
	struct rdma_cm_event *ev;

	(void)state;
	assert_int_equal(rdma_set_local_ece(a, &mine), 0);
	assert_int_equal(rdma_connect(a, &p), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	assert_int_equal(rdma_get_remote_ece(c, &got), 0);
	assert_int_equal(got.vendor_id, mine.vendor_id);
	assert_int_equal(got.options, mine.options);
	assert_int_equal(rdma_set_local_ece(c, &theirs), 0);
	assert_int_equal(rdma_accept(c, &ap), 0);
	ack(ev);
	ev = expect_event(ach, RDMA_CM_EVENT_CONNECT_RESPONSE);
	ack(ev);
	assert_int_equal(rdma_get_remote_ece(a, &got), 0);
	assert_int_equal(got.vendor_id, theirs.vendor_id);
	assert_int_equal(got.options, theirs.options);
	assert_int_equal(rdma_establish(a), 0);
	ack(expect_event(pch, RDMA_CM_EVENT_ESTABLISHED));
	assert_int_equal(rdma_disconnect(a), 0);
	ack(expect_event(pch, RDMA_CM_EVENT_DISCONNECTED));
	assert_int_equal(rdma_disconnect(c), 0);
	ack(expect_event(ach, RDMA_CM_EVENT_DISCONNECTED));
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/*
 * RDMA_OPTION_ID_ACK_TIMEOUT set on both ids before the QP moves: each
 * RTS takes its id's ACK timeout (the kernel's rdma_init_qp_attr), the
 * passive one's too, which rdma_accept moves with the runtime
 * (CM_RT_QP_TIMEOUT; rdma-core's test_rdmacm_async_traffic).
 */
static void test_ack_timeout(void **state)
{
	struct rdma_cm_id *l = listener(21012), *a = routed(21012), *c;
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct fake_qp_mod m[FAKE_QP_MAX_MODS];
	uint8_t at = 20, pt = 21;
	struct rdma_cm_event *ev;

	(void)state;
	make_qp(a);
	assert_int_equal(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &at, 1), 0);
	assert_int_equal(rdma_connect(a, &p), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	make_qp(c);
	assert_int_equal(rdma_set_option(c, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &pt, 1), 0);
	assert_int_equal(rdma_accept(c, &p), 0);
	ack(ev);
	ack(expect_event(ach, RDMA_CM_EVENT_ESTABLISHED));
	ack(expect_event(pch, RDMA_CM_EVENT_ESTABLISHED));
	assert_int_equal(
	    last_mod(m, fake_qp_mods(a->qp, m, FAKE_QP_MAX_MODS), IBV_QPS_RTS)->attr.timeout, 20);
	assert_int_equal(
	    last_mod(m, fake_qp_mods(c->qp, m, FAKE_QP_MAX_MODS), IBV_QPS_RTS)->attr.timeout, 21);
	assert_int_equal(rdma_disconnect(a), 0);
	ack(expect_event(pch, RDMA_CM_EVENT_DISCONNECTED));
	assert_int_equal(rdma_disconnect(c), 0);
	ack(expect_event(ach, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(a);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/*
 * rdma_migrate_id of a listener with a CONNECT_REQUEST queued: the REQ is
 * the listener's event (counted on it), so it moves with the listener to
 * the new channel, as the kernel's ucma_migrate_id moves it, and the call
 * does not wait for it to be acked.
 */
static void test_migrate_listener_with_request(void **state)
{
	struct rdma_cm_id *l, *a, *c;
	struct rdma_event_channel *other;
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_event *ev;
	struct pollfd pfd;

	(void)state;
	l = listener(21009);
	a = routed(21009);
	other = rdma_create_event_channel();
	make_qp(a);
	if (rdma_connect(a, &p))
		fail_msg("connect: %s", strerror(errno));
	pfd.fd = pch->fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, FAKE_CMA_WAIT_MS), 1); /* the REQ is queued */
	assert_int_equal(rdma_migrate_id(l, other), 0);	      /* hangs here */
	ev = expect_event_on(other, RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	assert_int_equal(rdma_reject(c, NULL, 0), 0);
	ack(ev);
	ev = expect_event(ach, RDMA_CM_EVENT_REJECTED);
	ack(ev);
	rdma_destroy_qp(a);
	rdma_destroy_id(a);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(other);
}

/*
 * Two requests from a1 and a2 to listener l, reported as ev1 and ev2:
 * reject both, see both REJECTED on h1, and free everything.
 */
static void reject_both(struct rdma_cm_event *ev1, struct rdma_cm_event *ev2, struct rdma_cm_id *a1,
			struct rdma_cm_id *a2, struct rdma_cm_id *l)
{
	struct rdma_cm_id *c1 = ev1->id, *c2 = ev2->id;

	assert_int_equal(rdma_reject(c1, NULL, 0), 0);
	assert_int_equal(rdma_reject(c2, NULL, 0), 0);
	ack(ev1);
	ack(ev2);
	rdma_destroy_id(c1);
	rdma_destroy_id(c2);
	ack(expect_event(ach, RDMA_CM_EVENT_REJECTED));
	ack(expect_event(ach, RDMA_CM_EVENT_REJECTED));
	rdma_destroy_qp(a1);
	rdma_destroy_qp(a2);
	rdma_destroy_id(a1);
	rdma_destroy_id(a2);
	rdma_destroy_id(l);
}

/*
 * Events the waiting thread queued itself (it ran their MADs) are not
 * signalled on the channel's fd while it takes the first, but whatever is
 * left when rdma_get_cm_event returns makes the fd readable: a poller
 * never misses an event.
 */
static void test_fd_readable_after_own_events(void **state)
{
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_id *l, *a1, *a2;
	struct rdma_cm_event *ev1, *ev2;
	struct pollfd pfd = {.fd = pch->fd, .events = POLLIN};

	(void)state;
	l = listener(21011);
	a1 = routed(21011);
	a2 = routed(21011);
	make_qp(a1);
	make_qp(a2);
	assert_int_equal(rdma_connect(a1, &p), 0);
	assert_int_equal(rdma_connect(a2, &p), 0);
	usleep(20000); /* both REQs there, mostly: one wait runs them both */
	assert_int_equal(rdma_get_cm_event(pch, &ev1), 0);
	assert_int_equal(ev1->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(poll(&pfd, 1, FAKE_CMA_WAIT_MS), 1); /* the second */
	assert_int_equal(rdma_get_cm_event(pch, &ev2), 0);
	assert_int_equal(ev2->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(poll(&pfd, 1, 0), 0); /* nothing left: not readable */
	reject_both(ev1, ev2, a1, a2, l);
}

/* h2's CM counters (port LID 6: fake1), read on its loop after what it ran. */
static struct cm_rt_stats h2_stats(void)
{
	struct cm_rt_cmd c = {.op = CM_RT_STATS};

	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++)
			if (cma.devs[d].ports[i].lid == 6 && cma.devs[d].ports[i].rt) {
				assert_int_equal(cm_runtime_exec(cma.devs[d].ports[i].rt, &c), 0);
				return c.stats;
			}
	fail_msg("h2 has no CM runtime");
	return c.stats;
}

/* Wait until h2 has received `n` REQs in all (each run to its end). */
static void h2_wait_reqs(uint64_t n)
{
	for (int i = 0; i < 60000 && h2_stats().cm.rcvd[CM_STAT_REQ] < n; i++)
		usleep(1000);
	assert_int_equal(h2_stats().cm.rcvd[CM_STAT_REQ], n);
}

/*
 * A REQ past the listener's backlog (requests not yet read) is dropped
 * without a REJ, as ucma drops it, and forgotten although its delayed
 * MRA was armed: the peer's retry of it is a new request, reported once
 * there is room, not a duplicate answered with that MRA.
 */
static void test_backlog_drop(void **state)
{
	struct sockaddr_in la = v4("198.18.0.2", 21030);
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct rdma_cm_id *l, *a1, *a2;
	struct rdma_cm_event *ev1, *ev2;
	const struct fake_mad *req = NULL;
	struct fake_umad *h1 = &fake_cma_fabric.ca[0];
	uint64_t reqs, live, dups;
	unsigned rejs;

	(void)state;
	assert_int_equal(rdma_create_id(pch, &l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&la), 0);
	assert_int_equal(rdma_listen(l, 1), 0);
	a1 = routed(21030);
	a2 = routed(21030);
	make_qp(a1);
	make_qp(a2);
	reqs = h2_stats().cm.rcvd[CM_STAT_REQ];
	live = h2_stats().cm.conns_live;
	dups = h2_stats().cm.duplicates[CM_STAT_REQ];
	rejs = fake_fabric_count_cm(&fake_cma_fabric, 1, 0x0012);
	assert_int_equal(rdma_connect(a1, &p), 0);
	h2_wait_reqs(reqs + 1); /* reported, not read: the backlog of 1 is full */
	assert_int_equal(rdma_connect(a2, &p), 0);
	h2_wait_reqs(reqs + 2);
	/* a2's REQ: no REJ, no connection kept for it. */
	assert_int_equal(h2_stats().cm.conns_live, live + 1);
	assert_int_equal(fake_fabric_count_cm(&fake_cma_fabric, 1, 0x0012), rejs);
	ev1 = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_null(fake_cma_next_event(pch, 50));
	/* a2's REQ again, as its CM retry would send it: a new request now. */
	for (unsigned i = 0; i < h1->nsent; i++)
		if (h1->sent[i].mad[1] == 0x07 && h1->sent[i].mad[16] == 0x00 &&
		    h1->sent[i].mad[17] == 0x10)
			req = &h1->sent[i];
	assert_non_null(req);
	assert_int_equal(fake_fabric_ops.send(&fake_cma_fabric,
					      fake_cma_fabric.agents[req->agent].open, req->agent,
					      req->mad, req->len, &req->addr, 0),
			 0);
	ev2 = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_not_equal(ev2->id, ev1->id);
	assert_int_equal(h2_stats().cm.duplicates[CM_STAT_REQ], dups);
	reject_both(ev1, ev2, a1, a2, l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resolve_route_path),
	    cmocka_unit_test(test_state_errors),
	    cmocka_unit_test(test_private_data_limit),
	    cmocka_unit_test(test_connect_accept_disconnect),
	    cmocka_unit_test(test_reject),
	    cmocka_unit_test(test_no_listener),
	    cmocka_unit_test(test_listen_before_sa),
	    cmocka_unit_test(test_connect_error),
	    cmocka_unit_test(test_connect_without_qp),
	    cmocka_unit_test(test_migrate_listener_with_request),
	    cmocka_unit_test(test_ece),
	    cmocka_unit_test(test_ack_timeout),
	    cmocka_unit_test(test_fd_readable_after_own_events),
	    cmocka_unit_test(test_backlog_drop),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
