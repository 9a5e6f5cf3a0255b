/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Datagram ids through the librdmacm API, between the two fake hosts of
 * fake_verbs.h (h1 = fake0, 198.18.0.1; h2 = fake1, 198.18.0.2), with the
 * fake SA answering MCMemberRecords (fake_fabric.sa_mcast) and knowing the
 * IPoIB broadcast group from the start, and granting ServiceRecords
 * (sa_services: else the listeners' records, registered and deleted in
 * the background, wait out the SA's timeouts, 8 s a round).  What each
 * test pins:
 *   - SIDR through the API: rdma_connect on an RDMA_PS_UDP id is a SIDR_REQ
 *     to service ID 0x0000000001110000 + port; the listener's
 *     CONNECT_REQUEST carries param.ud with the private data past the IP
 *     CM header (216 - 36 bytes); rdma_accept answers with the QP number
 *     (of the id's QP, or conn_param.qp_num) and the port space's Q_Key,
 *     and the client's ESTABLISHED has param.ud.qp_num, qkey and ah_attr
 *     for ibv_create_ah, and the SIDR_REP's 136 bytes of private data;
 *   - refusals, as the kernel's cma_sidr_rep_handler reports them: a
 *     SIDR_REP whose status is not success is UNREACHABLE with that status
 *     (rdma_reject: 2, IB_SIDR_REJECT; no listener on the service ID: 1,
 *     IB_SIDR_UNSUPPORTED, from the CM; a listener that does not take the
 *     address: 2, as the kernel's cm_destroy_id answers); no answer at all
 *     is UNREACHABLE -ETIMEDOUT after the SIDR_REQ and its 15 retries of
 *     4.3 s each: that part runs only with MADCM_SLOW_TESTS=1 in the
 *     environment (about 70 s, lib/ runs on the real clock); without it the
 *     test checks that nothing is reported early and that destroying the
 *     id with its SIDR_REQ unanswered is clean;
 *   - the Q_Key per port space: RDMA_UDP_QKEY (0x01234567) for RDMA_PS_UDP
 *     and RDMA_PS_IB with a UD QP, the IPoIB broadcast group's Q_Key (asked
 *     of the SA) for RDMA_PS_IPOIB, in rdma_init_qp_attr, in the QP that
 *     rdma_create_qp moves to RTS, and in the SIDR_REP;
 *   - multicast: MULTICAST_JOIN's param.ud (MLID and MGID in ah_attr, SL,
 *     flow label and traffic class from the broadcast group, qp_num
 *     0xFFFFFF, the Q_Key, the join's context), the QP attached when the
 *     event is taken and not for a send-only full member (JoinState 8 at
 *     the SA), MULTICAST_ERROR when the SA refuses, a synchronous join, an
 *     IPv6 group, and reference counting: two ids in one group make one SA
 *     join; the first to leave sends nothing to the SA, the last one's
 *     leave (or rdma_destroy_id) does, and the group is gone.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "cm/cm_wire.h"
#include "lib/cma.h"
#include "mad/mad_wire.h"
#include "sa/sa_wire.h"
#include "tests/unit/fake_verbs.h"

/* lib/'s rdma_create_id with a QP type (cma_id.c), for RDMA_PS_IB with UD. */
int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt);

/* The IPoIB broadcast group the fake SA knows (OpenSM's default Q_Key 0x0b1b). */
#define BCAST_QKEY 0x00000b1bu
#define BCAST_SL 3
#define BCAST_FLOW_LABEL 0x12345u
#define BCAST_TCLASS 0x20
static const uint8_t bcast_mgid[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0,	 0,
				       0,    0,	   0,	 0,    0xff, 0xff, 0xff, 0xff};

#define SID_UDP 0x0000000001110000ull	/* RDMA_PS_UDP << 16 */
#define SID_IPOIB 0x0000000000020000ull /* RDMA_PS_IPOIB << 16 */

static struct rdma_event_channel *ach, *pch; /* h1's (active), h2's (passive) */

static int setup(void **state)
{
	struct sa_mcmember b = {0};

	(void)state;
	if (fake_cma_setup())
		return -1;
	memcpy(b.mgid, bcast_mgid, 16);
	b.qkey = BCAST_QKEY;
	b.pkey = 0xffff;
	b.mtu_selector = 2;
	b.mtu = 4;
	b.rate_selector = 2;
	b.rate = 3;
	b.sl = BCAST_SL;
	b.flow_label = BCAST_FLOW_LABEL;
	b.tclass = BCAST_TCLASS;
	b.hop_limit = 0;
	if (fake_fabric_add_group(&fake_cma_fabric, &b, true))
		return -1;
	fake_cma_fabric.sa_mcast = true;
	fake_cma_fabric.sa_services = true; /* listeners publish their addresses at once */
	ach = rdma_create_event_channel();
	pch = rdma_create_event_channel();
	return ach && pch ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(cma_state_bad, 0);
	rdma_destroy_event_channel(ach);
	rdma_destroy_event_channel(pch);
	fake_cma_teardown();
	return 0;
}

static struct sockaddr_storage addr(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(ip, ':')) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
	} else {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
	}
	return ss;
}

static void expect_gid(const uint8_t got[16], const char *want)
{
	uint8_t w[16];

	assert_int_equal(inet_pton(AF_INET6, want, w), 1);
	assert_memory_equal(got, w, 16);
}

static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch,
					  enum rdma_cm_event_type type, int timeout_ms)
{
	struct rdma_cm_event *ev = fake_cma_next_event(ch, timeout_ms);

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

static void ack(struct rdma_cm_event *ev)
{
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

/* Nothing queued on the channel for ms milliseconds. */
static void no_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

	assert_int_equal(poll(&pfd, 1, ms), 0);
}

static struct rdma_cm_id *ud_listener(enum rdma_port_space ps, const char *ip, uint16_t port)
{
	struct sockaddr_storage a = addr(ip, port);
	struct rdma_cm_id *l;

	assert_int_equal(rdma_create_id(pch, &l, NULL, ps), 0);
	assert_int_equal(l->qp_type, IBV_QPT_UD);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&a), 0);
	assert_int_equal(rdma_listen(l, 8), 0);
	return l;
}

/* An h1 id (made by the caller) with its route from src to dst:port resolved. */
static void route(struct rdma_cm_id *id, const char *src, const char *dst, uint16_t port)
{
	struct sockaddr_storage s = addr(src, 0), d = addr(dst, port);
	struct rdma_cm_event *ev;

	assert_int_equal(rdma_resolve_addr(id, (struct sockaddr *)&s, (struct sockaddr *)&d, 2000),
			 0);
	ev = expect_event(ach, RDMA_CM_EVENT_ADDR_RESOLVED, FAKE_CMA_WAIT_MS);
	assert_ptr_equal(ev->id, id);
	ack(ev);
	assert_int_equal(rdma_resolve_route(id, 2000), 0);
	ev = expect_event(ach, RDMA_CM_EVENT_ROUTE_RESOLVED, FAKE_CMA_WAIT_MS);
	assert_int_equal(ev->status, 0);
	ack(ev);
}

static struct rdma_cm_id *ud_routed(enum rdma_port_space ps, uint16_t port)
{
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(ach, &id, NULL, ps), 0);
	route(id, "198.18.0.1", "198.18.0.2", port);
	return id;
}

/* A UD QP through rdma_create_qp: RTS at once, INIT with the port space's Q_Key. */
static void make_ud_qp(struct rdma_cm_id *id, uint32_t want_qkey)
{
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct fake_qp_mod m[FAKE_QP_MAX_MODS];
	unsigned n;

	assert_int_equal(rdma_create_qp(id, NULL, &qa), 0);
	assert_non_null(id->qp);
	assert_int_equal(id->qp->state, IBV_QPS_RTS);
	n = fake_qp_mods(id->qp, m, FAKE_QP_MAX_MODS);
	assert_int_equal(n, 3);
	assert_int_equal(fake_qp_of(id->qp)->bad_transitions, 0);
	assert_int_equal(m[0].attr.qp_state, IBV_QPS_INIT);
	assert_true(m[0].mask & IBV_QP_QKEY);
	assert_true(m[0].mask & IBV_QP_PORT);
	assert_int_equal(m[0].attr.qkey, want_qkey);
	assert_int_equal(m[0].attr.port_num, 1);
	assert_int_equal(m[1].attr.qp_state, IBV_QPS_RTR);
	assert_int_equal(m[2].attr.qp_state, IBV_QPS_RTS);
	assert_true(m[2].mask & IBV_QP_SQ_PSN);
	assert_int_equal(m[2].attr.sq_psn, 0);
}

/* The last CM MAD of this attribute that CA `ca` sent: true and a copy. */
static bool last_cm(int ca, uint16_t attr_id, uint8_t *out)
{
	struct fake_umad *f = &fake_cma_fabric.ca[ca];
	bool found = false;

	pthread_mutex_lock(&fake_cma_fabric.lock);
	for (unsigned i = f->nsent; i-- > 0 && !found;) {
		const struct fake_mad *m = &f->sent[i];

		if (m->len >= MAD_SIZE && m->mad[1] == MAD_CLASS_CM &&
		    mad_get(m->mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == attr_id) {
			memcpy(out, m->mad, MAD_SIZE);
			found = true;
		}
	}
	pthread_mutex_unlock(&fake_cma_fabric.lock);
	return found;
}

static void sidr_connect(struct rdma_cm_id *a, const void *pd, uint8_t len)
{
	struct rdma_conn_param p = {.private_data = pd, .private_data_len = len};

	assert_int_equal(rdma_connect(a, &p), 0);
}

static void test_udp_connect_accept(void **state)
{
	struct rdma_cm_id *l = ud_listener(RDMA_PS_UDP, "198.18.0.2", 22000);
	struct rdma_cm_id *a = ud_routed(RDMA_PS_UDP, 22000), *c;
	uint8_t mine[CM_SIDR_REQ_PRIVATE_DATA_SIZE - CMA_IP_HDR_SIZE + 1];
	static const char yes[] = "accepted";
	struct rdma_conn_param ap = {.private_data = yes, .private_data_len = sizeof(yes)};
	unsigned reqs = fake_fabric_count_cm(&fake_cma_fabric, 0, CM_ATTR_SIDR_REQ);
	uint8_t mad[MAD_SIZE];
	struct rdma_cm_event *ev;
	struct sockaddr_in *sin;

	(void)state;
	assert_int_equal(a->ps, RDMA_PS_UDP);
	assert_int_equal(a->qp_type, IBV_QPT_UD);
	make_ud_qp(a, RDMA_UDP_QKEY);
	for (unsigned i = 0; i < sizeof(mine); i++)
		mine[i] = (uint8_t)(i * 5 + 3);
	/* 216 bytes of SIDR_REQ private data, 36 of them the IP header: 180 left. */
	assert_int_equal(
	    rdma_connect(a, &(struct rdma_conn_param){.private_data = mine,
						      .private_data_len = sizeof(mine)}),
	    -1);
	assert_int_equal(errno, EINVAL);
	/* The refused call left the id as it was: it connects now. */
	if (rdma_connect(a, &(struct rdma_conn_param){.private_data = mine,
						      .private_data_len = sizeof(mine) - 1})) {
		/*
		 * Only an allocation failing (make check-oom): ENOMEM, and
		 * nothing sent, so nothing comes to the listener.
		 */
		assert_int_equal(errno, ENOMEM);
		no_event(pch, 500);
		no_event(ach, 0);
		rdma_destroy_qp(a);
		assert_int_equal(rdma_destroy_id(a), 0);
		assert_int_equal(rdma_destroy_id(l), 0);
		skip();
	}

	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST, FAKE_CMA_WAIT_MS);
	assert_int_equal(ev->status, 0);
	assert_ptr_equal(ev->listen_id, l);
	c = ev->id;
	assert_ptr_not_equal(c, l);
	assert_int_equal(c->ps, RDMA_PS_UDP);
	assert_int_equal(c->qp_type, IBV_QPT_UD);
	assert_string_equal(c->verbs->device->name, "fake1");
	assert_int_equal(ev->param.ud.private_data_len, sizeof(mine) - 1);
	assert_memory_equal(ev->param.ud.private_data, mine, sizeof(mine) - 1);
	/* The addresses are the IP CM header's. */
	sin = (struct sockaddr_in *)rdma_get_peer_addr(c);
	assert_int_equal(sin->sin_family, AF_INET);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xc6120001); /* 198.18.0.1 */
	sin = (struct sockaddr_in *)rdma_get_local_addr(c);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xc6120002);
	assert_int_equal(rdma_get_src_port(c), htons(22000));
	assert_int_equal(rdma_get_dst_port(c), rdma_get_src_port(a));
	/* On the wire: a SIDR_REQ for RDMA_PS_UDP's service ID and the port. */
	assert_int_equal(fake_fabric_count_cm(&fake_cma_fabric, 0, CM_ATTR_SIDR_REQ), reqs + 1);
	assert_true(last_cm(0, CM_ATTR_SIDR_REQ, mad));
	assert_int_equal(mad_get(mad + CM_MSG_OFFSET, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID),
			 SID_UDP + 22000);
	assert_int_equal(
	    mad_get(mad + CM_MSG_OFFSET, cm_sidr_req_fields, CM_SIDR_REQ_PARTITION_KEY), 0xffff);

	make_ud_qp(c, RDMA_UDP_QKEY);
	assert_int_equal(rdma_accept(c, &ap), 0);
	ack(ev);

	ev = expect_event(ach, RDMA_CM_EVENT_ESTABLISHED, FAKE_CMA_WAIT_MS);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->status, 0);
	assert_int_equal(ev->param.ud.qp_num, c->qp->qp_num);
	assert_int_equal(ev->param.ud.qkey, RDMA_UDP_QKEY);
	assert_int_equal(ev->param.ud.ah_attr.dlid, 6);
	assert_int_equal(ev->param.ud.ah_attr.port_num, 1);
	assert_int_equal(ev->param.ud.ah_attr.sl, 0);
	assert_int_equal(ev->param.ud.ah_attr.is_global, 0); /* same subnet */
	assert_int_equal(ev->param.ud.private_data_len, CM_SIDR_REP_PRIVATE_DATA_SIZE);
	assert_memory_equal(ev->param.ud.private_data, yes, sizeof(yes));
	ack(ev);
	/* The SIDR_REP: success, the server QP's number and RDMA_UDP_QKEY. */
	assert_true(last_cm(1, CM_ATTR_SIDR_REP, mad));
	assert_int_equal(mad_get(mad + CM_MSG_OFFSET, cm_sidr_rep_fields, CM_SIDR_REP_STATUS),
			 CM_SIDR_SUCCESS);
	assert_int_equal(mad_get(mad + CM_MSG_OFFSET, cm_sidr_rep_fields, CM_SIDR_REP_QPN),
			 c->qp->qp_num);
	assert_int_equal(mad_get(mad + CM_MSG_OFFSET, cm_sidr_rep_fields, CM_SIDR_REP_Q_KEY),
			 RDMA_UDP_QKEY);
	assert_int_equal(mad_get(mad + CM_MSG_OFFSET, cm_sidr_rep_fields, CM_SIDR_REP_SERVICE_ID),
			 SID_UDP + 22000);
	/* The passive side of a datagram id hears nothing more; it answered once. */
	no_event(pch, 100);
	assert_int_equal(rdma_accept(c, &ap), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_qp(a);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* No QPs: the server names one in conn_param.qp_num (udaddy's way is a QP; both are allowed). */
static void test_udp_accept_qp_num(void **state)
{
	struct rdma_cm_id *l = ud_listener(RDMA_PS_UDP, "198.18.0.2", 22001);
	struct rdma_cm_id *a = ud_routed(RDMA_PS_UDP, 22001), *c;
	struct rdma_conn_param ap = {.qp_num = 0xabcdef};
	struct rdma_cm_event *ev;

	(void)state;
	assert_int_equal(rdma_connect(a, NULL), 0);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST, FAKE_CMA_WAIT_MS);
	c = ev->id;
	/* Only the IP header came: the user's part is all zero. */
	assert_int_equal(ev->param.ud.private_data_len,
			 CM_SIDR_REQ_PRIVATE_DATA_SIZE - CMA_IP_HDR_SIZE);
	/* Neither a QP nor a QP number: nothing to answer with. */
	assert_int_equal(rdma_accept(c, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_accept(c, &ap), 0);
	ack(ev);
	ev = expect_event(ach, RDMA_CM_EVENT_ESTABLISHED, FAKE_CMA_WAIT_MS);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->param.ud.qp_num, 0xabcdef);
	assert_int_equal(ev->param.ud.qkey, RDMA_UDP_QKEY);
	assert_int_equal(ev->param.ud.ah_attr.dlid, 6);
	ack(ev);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

static void test_udp_reject(void **state)
{
	struct rdma_cm_id *l = ud_listener(RDMA_PS_UDP, "198.18.0.2", 22002);
	struct rdma_cm_id *a = ud_routed(RDMA_PS_UDP, 22002), *c;
	static const char why[] = "busy";
	uint8_t big[CM_SIDR_REP_PRIVATE_DATA_SIZE + 1] = {0};
	struct rdma_cm_event *ev;

	(void)state;
	make_ud_qp(a, RDMA_UDP_QKEY);
	sidr_connect(a, "hi", 2);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST, FAKE_CMA_WAIT_MS);
	c = ev->id;
	/* More than a SIDR_REP's 136 bytes. */
	assert_int_equal(rdma_reject(c, big, sizeof(big)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_reject(c, why, sizeof(why)), 0);
	ack(ev);
	/* As the kernel: UNREACHABLE with the SIDR status (2, IB_SIDR_REJECT). */
	ev = expect_event(ach, RDMA_CM_EVENT_UNREACHABLE, FAKE_CMA_WAIT_MS);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->status, CM_SIDR_REJECT);
	assert_int_equal(ev->param.ud.private_data_len, CM_SIDR_REP_PRIVATE_DATA_SIZE);
	assert_memory_equal(ev->param.ud.private_data, why, sizeof(why));
	ack(ev);
	/* Answered: neither accept nor a second reject. */
	assert_int_equal(rdma_accept(c, &(struct rdma_conn_param){.qp_num = 1}), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_reject(c, NULL, 0), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_qp(a);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/*
 * Nobody serves the service ID (a UDP listener elsewhere keeps h2's CM
 * open; a TCP listener on the same port number is another service ID):
 * the CM answers IB_SIDR_UNSUPPORTED (1).  A UDP listener bound to
 * another address does not take an IPv6 request: IB_SIDR_REJECT (2).
 */
static void test_udp_no_listener(void **state)
{
	struct rdma_cm_id *l = ud_listener(RDMA_PS_UDP, "198.18.0.2", 22003), *t, *a, *b;
	struct sockaddr_storage ta = addr("198.18.0.2", 22004);
	struct rdma_cm_event *ev;

	(void)state;
	assert_int_equal(rdma_create_id(pch, &t, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(t, (struct sockaddr *)&ta), 0);
	assert_int_equal(rdma_listen(t, 8), 0);
	a = ud_routed(RDMA_PS_UDP, 22004);
	sidr_connect(a, NULL, 0);
	ev = expect_event(ach, RDMA_CM_EVENT_UNREACHABLE, FAKE_CMA_WAIT_MS);
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->status, CM_SIDR_UNSUPPORTED);
	ack(ev);
	assert_int_equal(rdma_destroy_id(a), 0);

	assert_int_equal(rdma_create_id(ach, &b, NULL, RDMA_PS_UDP), 0);
	route(b, "2001:db8::1", "2001:db8::2", 22003);
	sidr_connect(b, NULL, 0);
	ev = expect_event(ach, RDMA_CM_EVENT_UNREACHABLE, FAKE_CMA_WAIT_MS);
	assert_ptr_equal(ev->id, b);
	assert_int_equal(ev->status, CM_SIDR_REJECT);
	ack(ev);
	no_event(pch, 50); /* the listener never saw it */
	assert_int_equal(rdma_destroy_id(b), 0);
	assert_int_equal(rdma_destroy_id(t), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

struct drop_count {
	unsigned dropped;
};

/* Under the fabric's lock: h1's SIDR_REQs never arrive. */
static bool drop_sidr_req(struct fake_fabric *fb, int from, const uint8_t *mad, size_t len,
			  void *arg)
{
	struct drop_count *d = arg;

	(void)fb;
	(void)len;
	if (from == 0 && mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == CM_ATTR_SIDR_REQ) {
		d->dropped++;
		return false;
	}
	return true;
}

static void set_filter(struct drop_count *d)
{
	pthread_mutex_lock(&fake_cma_fabric.lock);
	fake_cma_fabric.cm_filter = d ? drop_sidr_req : NULL;
	fake_cma_fabric.cm_filter_arg = d;
	pthread_mutex_unlock(&fake_cma_fabric.lock);
}

static unsigned dropped(struct drop_count *d)
{
	unsigned n;

	pthread_mutex_lock(&fake_cma_fabric.lock);
	n = d->dropped;
	pthread_mutex_unlock(&fake_cma_fabric.lock);
	return n;
}

static void test_sidr_timeout(void **state)
{
	struct rdma_cm_id *l = ud_listener(RDMA_PS_UDP, "198.18.0.2", 22005), *a;
	static struct drop_count d;
	const char *slow = getenv("MADCM_SLOW_TESTS");
	struct rdma_cm_event *ev;

	(void)state;
	a = ud_routed(RDMA_PS_UDP, 22005);
	memset(&d, 0, sizeof(d));
	set_filter(&d);
	sidr_connect(a, NULL, 0);
	/* The first try lasts 4.096 us * 2^20 (4.3 s): nothing before that. */
	no_event(ach, 300);
	assert_int_equal(dropped(&d), 1);
	if (slow && *slow && strcmp(slow, "0")) {
		/* 16 tries of 4.3 s, then UNREACHABLE -ETIMEDOUT (IB_CM_SIDR_REQ_ERROR). */
		ev = expect_event(ach, RDMA_CM_EVENT_UNREACHABLE, 90000);
		assert_ptr_equal(ev->id, a);
		assert_int_equal(ev->status, -ETIMEDOUT);
		ack(ev);
		assert_int_equal(dropped(&d), 1 + CMA_MAX_CM_RETRIES);
		set_filter(NULL);
		no_event(pch, 50);
	} else {
		/* Given up by the user: no event for it, ever, and no retry. */
		assert_int_equal(rdma_destroy_id(a), 0);
		set_filter(NULL);
		no_event(ach, 100);
		no_event(pch, 50);
		a = NULL;
		print_message("[  SKIP    ] SIDR timeout to UNREACHABLE (about 70 s): "
			      "set MADCM_SLOW_TESTS=1 to run it\n");
	}
	if (a)
		assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

static uint32_t init_qkey(struct rdma_cm_id *id)
{
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT};
	int mask = 0;

	assert_int_equal(rdma_init_qp_attr(id, &qa, &mask), 0);
	assert_true(mask & IBV_QP_QKEY);
	assert_int_equal(qa.port_num, 1);
	return qa.qkey;
}

static void test_qkey_per_port_space(void **state)
{
	struct rdma_cm_id *u, *ib, *ip, *l, *c;
	unsigned gets = fake_cma_fabric.sa_mc_gets;
	uint8_t mad[MAD_SIZE];
	struct rdma_cm_event *ev;

	(void)state;
	u = ud_routed(RDMA_PS_UDP, 22006);
	assert_int_equal(init_qkey(u), RDMA_UDP_QKEY);
	assert_int_equal(cma_create_id_qpt(ach, &ib, NULL, RDMA_PS_IB, IBV_QPT_UD), 0);
	assert_int_equal(ib->qp_type, IBV_QPT_UD);
	route(ib, "198.18.0.1", "198.18.0.2", 22006);
	assert_int_equal(init_qkey(ib), RDMA_UDP_QKEY);
	/* RDMA_PS_IPOIB: the broadcast group's Q_Key, from the SA (GetTable by MGID). */
	ip = ud_routed(RDMA_PS_IPOIB, 22006);
	assert_int_equal(init_qkey(ip), BCAST_QKEY);
	assert_true(fake_cma_fabric.sa_mc_gets <= gets + 1);
	make_ud_qp(ip, BCAST_QKEY);
	assert_int_equal(rdma_destroy_id(u), 0);
	assert_int_equal(rdma_destroy_id(ib), 0);

	/* And in the SIDR exchange of two IPoIB ids. */
	l = ud_listener(RDMA_PS_IPOIB, "198.18.0.2", 22006);
	sidr_connect(ip, NULL, 0);
	assert_true(last_cm(0, CM_ATTR_SIDR_REQ, mad));
	assert_int_equal(mad_get(mad + CM_MSG_OFFSET, cm_sidr_req_fields, CM_SIDR_REQ_SERVICE_ID),
			 SID_IPOIB + 22006);
	ev = expect_event(pch, RDMA_CM_EVENT_CONNECT_REQUEST, FAKE_CMA_WAIT_MS);
	c = ev->id;
	assert_int_equal(c->ps, RDMA_PS_IPOIB);
	make_ud_qp(c, BCAST_QKEY);
	assert_int_equal(rdma_accept(c, NULL), 0);
	ack(ev);
	ev = expect_event(ach, RDMA_CM_EVENT_ESTABLISHED, FAKE_CMA_WAIT_MS);
	assert_ptr_equal(ev->id, ip);
	assert_int_equal(ev->param.ud.qkey, BCAST_QKEY);
	assert_int_equal(ev->param.ud.qp_num, c->qp->qp_num);
	ack(ev);
	rdma_destroy_qp(ip);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(ip), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* ---- multicast ---- */

static struct rdma_cm_id *bound_ud(struct rdma_event_channel *ch, const char *ip, bool qp)
{
	struct sockaddr_storage a = addr(ip, 0);
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&a), 0);
	if (qp)
		make_ud_qp(id, RDMA_UDP_QKEY);
	return id;
}

static struct fake_mcgroup group_of(const char *mgid)
{
	struct fake_mcgroup g;
	uint8_t m[16];

	assert_int_equal(inet_pton(AF_INET6, mgid, m), 1);
	if (!fake_fabric_group(&fake_cma_fabric, m, &g))
		fail_msg("the SA has no group %s", mgid);
	return g;
}

static bool group_exists(const char *mgid)
{
	struct fake_mcgroup g;
	uint8_t m[16];

	assert_int_equal(inet_pton(AF_INET6, mgid, m), 1);
	return fake_fabric_group(&fake_cma_fabric, m, &g);
}

/* MULTICAST_JOIN for id with its context, as rdma_join_multicast(3) describes it. */
static void expect_join(struct rdma_cm_id *id, void *ctx, const char *mgid)
{
	struct rdma_cm_event *ev =
	    expect_event(ach, RDMA_CM_EVENT_MULTICAST_JOIN, FAKE_CMA_WAIT_MS);
	struct fake_mcgroup g = group_of(mgid);
	const struct ibv_ah_attr *ah = &ev->param.ud.ah_attr;

	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->status, 0);
	assert_ptr_equal(ev->param.ud.private_data, ctx);
	assert_int_equal(ev->param.ud.qp_num, 0xffffff);
	assert_int_equal(ev->param.ud.qkey, RDMA_UDP_QKEY);
	assert_int_equal(ah->is_global, 1);
	expect_gid(ah->grh.dgid.raw, mgid);
	assert_int_equal(ah->dlid, g.rec.mlid);
	assert_true(ah->dlid >= 0xc000);
	assert_int_equal(ah->port_num, 1);
	/* SL, flow label, traffic class of the broadcast group (cma_join_ib_multicast). */
	assert_int_equal(ah->sl, BCAST_SL);
	assert_int_equal(ah->grh.flow_label, BCAST_FLOW_LABEL);
	assert_int_equal(ah->grh.traffic_class, BCAST_TCLASS);
	assert_int_equal(g.rec.qkey, RDMA_UDP_QKEY);
	ack(ev);
}

static void test_mcast_refcount(void **state)
{
	static const char mgid[] = "ff12:4001:ffff::6a8:105";
	struct sockaddr_storage grp = addr("230.168.1.5", 0);
	struct rdma_cm_id *a = bound_ud(ach, "198.18.0.1", true);
	struct rdma_cm_id *b = bound_ud(ach, "198.18.0.1", true);
	unsigned sets = fake_cma_fabric.sa_mc_sets, dels = fake_cma_fabric.sa_mc_deletes, gets;
	int ctx_a, ctx_b;

	(void)state;
	assert_false(group_exists(mgid));
	assert_int_equal(rdma_join_multicast(a, (struct sockaddr *)&grp, &ctx_a), 0);
	expect_join(a, &ctx_a, mgid);
	assert_int_equal(fake_cma_fabric.sa_mc_sets, sets + 1);
	assert_int_equal(fake_cma_fabric.sa_mc_last_set_state, SA_JOIN_FULL_MEMBER);
	assert_int_equal(group_of(mgid).member_state[0], SA_JOIN_FULL_MEMBER);
	/* Attached when the event was taken. */
	assert_int_equal(fake_qp_nmcast(a->qp), 1);
	expect_gid(fake_qp_of(a->qp)->mcast[0].gid.raw, mgid);
	assert_int_equal(fake_qp_of(a->qp)->mcast[0].lid, group_of(mgid).rec.mlid);

	/* A second id of the process in the group: no second SA join. */
	gets = fake_cma_fabric.sa_mc_gets;
	assert_int_equal(rdma_join_multicast(b, (struct sockaddr *)&grp, &ctx_b), 0);
	expect_join(b, &ctx_b, mgid);
	assert_int_equal(fake_cma_fabric.sa_mc_sets, sets + 1);
	assert_int_equal(fake_cma_fabric.sa_mc_gets, gets); /* the broadcast record is kept */
	assert_int_equal(fake_qp_nmcast(b->qp), 1);

	/* The first leaves: its QP is detached, the SA hears nothing. */
	assert_int_equal(rdma_leave_multicast(a, (struct sockaddr *)&grp), 0);
	assert_int_equal(fake_qp_nmcast(a->qp), 0);
	assert_int_equal(fake_qp_nmcast(b->qp), 1);
	assert_int_equal(fake_cma_fabric.sa_mc_deletes, dels);
	assert_true(group_exists(mgid));
	assert_int_equal(rdma_leave_multicast(a, (struct sockaddr *)&grp), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);

	/* The last leaves: the leave goes out, and the group is gone. */
	assert_int_equal(rdma_leave_multicast(b, (struct sockaddr *)&grp), 0);
	assert_int_equal(fake_qp_nmcast(b->qp), 0);
	assert_int_equal(fake_cma_fabric.sa_mc_deletes, dels + 1);
	assert_false(group_exists(mgid));
	no_event(ach, 50);
	rdma_destroy_qp(a);
	rdma_destroy_qp(b);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(b), 0);
}

/*
 * A send-only full member (rdma_join_multicast_ex): JoinState 8 at the SA,
 * and no QP attached.  rdma_destroy_id leaves what the id still holds.
 */
static void test_mcast_sendonly_destroy(void **state)
{
	static const char mgid[] = "ff12:4001:ffff::601:203";
	struct sockaddr_storage grp = addr("230.1.2.3", 0);
	struct rdma_cm_join_mc_attr_ex x = {
	    .comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
	    .join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
	    .addr = (struct sockaddr *)&grp,
	};
	struct rdma_cm_id *a = bound_ud(ach, "198.18.0.1", true);
	unsigned dels = fake_cma_fabric.sa_mc_deletes;
	int ctx;

	(void)state;
	assert_int_equal(rdma_join_multicast_ex(a, &x, &ctx), 0);
	expect_join(a, &ctx, mgid);
	assert_int_equal(fake_cma_fabric.sa_mc_last_set_state, SA_JOIN_SEND_ONLY_FULL_MEMBER);
	assert_int_equal(group_of(mgid).member_state[0], SA_JOIN_SEND_ONLY_FULL_MEMBER);
	assert_int_equal(fake_qp_nmcast(a->qp), 0);
	rdma_destroy_qp(a);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(fake_cma_fabric.sa_mc_deletes, dels + 1);
	assert_false(group_exists(mgid));
}

/* An IPv6 group, a synchronous join, and a join the SA refuses. */
static void test_mcast_ipv6_sync_error(void **state)
{
	static const char mgid6[] = "ff12:6001:ffff::1234:5678";
	struct sockaddr_storage g6 = addr("ff0e::1234:5678", 0), g4 = addr("230.9.9.9", 0);
	struct rdma_cm_id *a = bound_ud(ach, "2001:db8::1", false), *s;
	struct rdma_cm_event *ev;
	int ctx;

	(void)state;
	assert_int_equal(rdma_join_multicast(a, (struct sockaddr *)&g6, &ctx), 0);
	expect_join(a, &ctx, mgid6);
	assert_int_equal(rdma_leave_multicast(a, (struct sockaddr *)&g6), 0);
	assert_false(group_exists(mgid6));

	/* A synchronous id returns once its MULTICAST_JOIN came; it stays on the id. */
	s = bound_ud(NULL, "198.18.0.1", false);
	assert_int_equal(rdma_join_multicast(s, (struct sockaddr *)&g4, &ctx), 0);
	assert_non_null(s->event);
	assert_int_equal(s->event->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	expect_gid(s->event->param.ud.ah_attr.grh.dgid.raw, "ff12:4001:ffff::609:909");
	assert_int_equal(rdma_leave_multicast(s, (struct sockaddr *)&g4), 0);
	assert_int_equal(rdma_destroy_id(s), 0);

	/* The SA refuses (ERR_REQ_INVALID): MULTICAST_ERROR -EINVAL with the context. */
	fake_cma_fabric.sa_mc_set_status = SA_STATUS_REQ_INVALID;
	assert_int_equal(rdma_join_multicast(a, (struct sockaddr *)&g4, &ctx), 0);
	ev = expect_event(ach, RDMA_CM_EVENT_MULTICAST_ERROR, FAKE_CMA_WAIT_MS);
	fake_cma_fabric.sa_mc_set_status = 0;
	assert_ptr_equal(ev->id, a);
	assert_int_equal(ev->status, -EINVAL);
	assert_ptr_equal(ev->param.ud.private_data, &ctx);
	ack(ev);
	assert_false(group_exists("ff12:4001:ffff::609:909"));
	/* A connected id cannot join. */
	{
		struct rdma_cm_id *t;
		struct sockaddr_storage src = addr("198.18.0.1", 0);

		assert_int_equal(rdma_create_id(ach, &t, NULL, RDMA_PS_TCP), 0);
		assert_int_equal(rdma_bind_addr(t, (struct sockaddr *)&src), 0);
		assert_int_equal(rdma_join_multicast(t, (struct sockaddr *)&g4, NULL), -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(rdma_destroy_id(t), 0);
	}
	assert_int_equal(rdma_destroy_id(a), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_udp_connect_accept),
	    cmocka_unit_test(test_udp_accept_qp_num),
	    cmocka_unit_test(test_udp_reject),
	    cmocka_unit_test(test_udp_no_listener),
	    cmocka_unit_test(test_sidr_timeout),
	    cmocka_unit_test(test_qkey_per_port_space),
	    cmocka_unit_test(test_mcast_refcount),
	    cmocka_unit_test(test_mcast_sendonly_destroy),
	    cmocka_unit_test(test_mcast_ipv6_sync_error),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
