/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the CM engine's receive path (cm_engine_recv) with whole state
 * machines behind it: for each input, two engines are wired back to back
 * with one connection established and one half open, then the input is cut
 * into CM message bodies that are fed to either engine, with a valid CM
 * header and, when the control byte says so, the real communication IDs
 * and QPNs patched in so that the messages reach deep into the handlers.
 * Time advances between messages so retransmission and TimeWait timers
 * fire.  Nothing may crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "cm/engine.h"

#define QSLOTS 64

static struct mad_timer_heap timers;
static uint64_t fake_now;
static struct cm_engine *eng[2];
static uint8_t q[QSLOTS][256];
static int qto[QSLOTS];
static unsigned qn;
static uint32_t ids[2][2]; /* [engine][conn] */

static uint64_t clock_fn(void *ctx)
{
	(void)ctx;
	return fake_now;
}

static int fsend(void *ctx, const struct mad_addr *to, const void *mad, size_t len)
{
	(void)to;
	if (qn < QSLOTS && len == 256) {
		memcpy(q[qn], mad, 256);
		qto[qn++] = 1 - (int)(intptr_t)ctx;
	}
	return 0;
}

static void fevent(void *ctx, const struct cm_event *ev)
{
	int self = (int)(intptr_t)ctx;

	switch (ev->type) {
	case CM_EV_REQ_RCVD: {
		struct cm_accept_cmd a = {.qpn = 0x200 + (ev->id & 0xff), .starting_psn = 1};

		ids[self][ids[self][0] ? 1 : 0] = ev->id;
		if (!(ev->id & 1))
			cm_engine_accept(eng[self], ev->id, 0, &a);
		break;
	}
	case CM_EV_REP_RCVD:
		cm_engine_rtu(eng[self], ev->id, NULL, 0);
		break;
	case CM_EV_DREQ_RCVD:
		cm_engine_disconnect(eng[self], ev->id, NULL, 0);
		break;
	case CM_EV_LAP_RCVD:
		cm_engine_apr(eng[self], ev->id, 0, NULL, 0, NULL, 0);
		break;
	case CM_EV_SIDR_REQ_RCVD: {
		struct cm_sidr_rep_cmd r = {.status = 0, .qpn = 5};

		cm_engine_sidr_rep(eng[self], ev->id, &r);
		break;
	}
	default:
		break;
	}
}

static const struct cm_engine_ops ops = {fsend, fevent};

/*
 * Comm IDs from a generator restarted for each input, per engine: with
 * getrandom(2) the runs of one input differed (and whether a connection
 * was accepted, which goes by its ID's low bit).  The low bit alternates,
 * so the first REQ is accepted and the second stays half open.
 */
static uint32_t rnd_state[2], rnd_n[2];

static uint32_t rnd_fn(void *ctx)
{
	int i = (int)(intptr_t)ctx;
	uint32_t x = rnd_state[i];

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	rnd_state[i] = x;
	return (x & ~1u) | (rnd_n[i]++ & 1);
}

static void pump(void)
{
	for (int guard = 0; qn && guard < 256; guard++) {
		uint8_t mad[256];
		int to = qto[0];
		struct mad_addr from = {.lid = (uint16_t)(2 - to), .qpn = 1};

		memcpy(mad, q[0], 256);
		memmove(q, q + 1, (size_t)(qn - 1) * 256);
		memmove(qto, qto + 1, (size_t)(qn - 1) * sizeof(qto[0]));
		qn--;
		cm_engine_recv(eng[to], &from, mad, 256);
	}
	qn = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t attrs[12] = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
					   0x16, 0x17, 0x18, 0x19, 0x1a, 0x01};
	struct cm_connect_cmd c = {.service_id = 0x1060001,
				   .qpn = 0x100,
				   .starting_psn = 9,
				   .remote_cm_response_timeout = 16,
				   .local_cm_response_timeout = 16,
				   .max_cm_retries = 2,
				   .primary = {.slid = 1,
					       .dlid = 2,
					       .subnet_local = 1,
					       .local_ack_timeout = 14,
					       .packet_life_time = 12,
					       .mtu = 4,
					       .pkey = 0xffff}};
	uint32_t a0 = 0, a1 = 0;

	fake_now = 1;
	qn = 0;
	memset(ids, 0, sizeof(ids));
	mad_timer_heap_init(&timers, clock_fn, NULL);
	rnd_state[0] = 0x9e3779b9u;
	rnd_state[1] = 0x7f4a7c15u;
	rnd_n[0] = rnd_n[1] = 0;
	for (int i = 0; i < 2; i++) {
		struct cm_engine_config cfg = {.ca_guid = 0x100 + (uint64_t)i,
					       .port_num = 1,
					       .max_conns = 16,
					       .timers = &timers,
					       .ops = &ops,
					       .ctx = (void *)(intptr_t)i,
					       .random32 = rnd_fn};

		if (cm_engine_create(&cfg, &eng[i]))
			abort();
	}
	cm_engine_listen(eng[1], 0x1060000, ~0xffffull, 0);
	cm_engine_listen(eng[0], 0x1110000, ~0xffffull, 0);
	cm_engine_connect(eng[0], &c, &a0);
	pump();
	c.qpn = 0x101;
	cm_engine_connect(eng[0], &c, &a1);
	pump();
	ids[0][0] = a0;
	ids[0][1] = a1;

	/* Each chunk: 1 control byte + up to 232 body bytes. */
	while (size > 1) {
		uint8_t ctl = data[0];
		size_t n = size - 1 < CM_MSG_SIZE ? size - 1 : CM_MSG_SIZE;
		int to = ctl & 1;
		uint8_t mad[256];
		uint8_t *msg = mad + CM_MSG_OFFSET;
		struct mad_addr from = {.lid = (uint16_t)(2 - to), .qpn = 1};
		uint16_t attr = attrs[(ctl >> 1) % 12];

		cm_mad_init(mad, sizeof(mad), cm_layout_by_attr(attr), CM_METHOD_SEND, ctl);
		memcpy(msg, data + 1, n);
		if (ctl & 0x40) {
			/* aim at a live connection of the receiver */
			uint32_t mine = ids[to][(ctl >> 5) & 1];

			mad_set(msg, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID, mine);
		}
		if (ctl & 0x80)
			mad[24 + data[1 % size] % CM_MSG_SIZE] ^= 0xff;
		cm_engine_recv(eng[to], &from, mad, (ctl & 0x3f) == 0x3f ? n : 256);
		pump();
		fake_now += (uint64_t)(ctl & 0x0f) * 100000000ull;
		mad_timer_run(&timers);
		pump();
		data += 1 + n;
		size -= 1 + n;
	}
	/* Let every timer run out: retries, timeouts, TimeWait. */
	for (int i = 0; i < 200 && mad_timer_next_deadline(&timers) != UINT64_MAX; i++) {
		fake_now += 1000000000ull;
		mad_timer_run(&timers);
		pump();
	}
	cm_engine_destroy(eng[0]);
	cm_engine_destroy(eng[1]);
	mad_timer_heap_destroy(&timers);
	return 0;
}
