/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * cm_bench: the CM engine's own cost, in process.  Two engines back to
 * back through an in-memory "wire" (a queue of 256-byte MADs), on the
 * real monotonic clock.  Prints, never asserts:
 *   - connections per second with 1,000 handshakes in flight at once;
 *   - median connect latency (REQ sent -> ESTABLISHED on the active side)
 *     one connection at a time, next to the floor of this wire: the same
 *     number of MAD hops with no engine work (a REQ/REP/RTU exchange is
 *     one round trip plus the RTU);
 *   - bytes per established connection (struct, allocator, hash buckets);
 *   - lookup cost at 100 and 100,000 connections.
 * With a real umad transport the floor and the latency would both grow by
 * the fabric's round trip; this isolates what the engine adds.  Lookup
 * cost is flat in entries walked; the ns per lookup grows with the
 * working set (cache misses), which the walk count separates out.
 *
 * Usage: cm_bench [--quick]   (--quick: 10,000 instead of 100,000)
 */
#include "config.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm/cm_int.h"

#define WIRE_SLOTS 8192

struct pkt {
	int to;
	struct mad_addr from;
	uint8_t mad[256];
};

static struct pkt *wire;
static unsigned whead, wtail;
static struct cm_engine *eng[2];
static struct mad_timer_heap timers;
static unsigned long established;
static uint32_t next_qpn = 1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int wire_send(void *ctx, const struct mad_addr *to, const void *mad, size_t len)
{
	int self = (int)(intptr_t)ctx;
	struct pkt *p;

	(void)to;
	if (wtail - whead >= WIRE_SLOTS)
		return -ENOBUFS; /* the engine retries on its timer */
	p = &wire[wtail++ % WIRE_SLOTS];
	p->to = 1 - self;
	memset(&p->from, 0, sizeof(p->from));
	p->from.lid = (uint16_t)(self + 1);
	p->from.qpn = 1;
	memcpy(p->mad, mad, len);
	return 0;
}

static void on_event(void *ctx, const struct cm_event *ev)
{
	int self = (int)(intptr_t)ctx;

	switch (ev->type) {
	case CM_EV_REQ_RCVD: {
		struct cm_accept_cmd a = {.qpn = 0x800000 | next_qpn++,
					  .starting_psn = 1,
					  .responder_resources = 1,
					  .initiator_depth = 1};

		cm_engine_accept(eng[self], ev->id, 0, &a);
		break;
	}
	case CM_EV_REP_RCVD:
		if (cm_engine_rtu(eng[self], ev->id, NULL, 0) == 0)
			established++;
		break;
	default:
		break;
	}
}

static const struct cm_engine_ops ops = {wire_send, on_event};

static void pump(void)
{
	while (whead != wtail) {
		struct pkt *p = &wire[whead++ % WIRE_SLOTS];

		cm_engine_recv(eng[p->to], &p->from, p->mad, 256);
	}
	mad_timer_run(&timers);
}

static void setup(uint32_t max)
{
	for (int i = 0; i < 2; i++) {
		struct cm_engine_config cfg = {.ca_guid = 0x1000 + (uint64_t)i,
					       .port_num = 1,
					       .max_conns = max,
					       .timers = &timers,
					       .ops = &ops,
					       .ctx = (void *)(intptr_t)i};

		if (cm_engine_create(&cfg, &eng[i])) {
			fprintf(stderr, "cm_bench: engine create failed\n");
			exit(1);
		}
	}
	cm_engine_listen(eng[1], 0x1060000, ~0xffffull, 0);
}

static void teardown(void)
{
	cm_engine_destroy(eng[0]);
	cm_engine_destroy(eng[1]);
	whead = wtail = 0;
}

static void connect_cmd(struct cm_connect_cmd *c, uint32_t qpn)
{
	memset(c, 0, sizeof(*c));
	c->service_id = 0x1060000 + 4791;
	c->qpn = qpn;
	c->starting_psn = 7;
	c->responder_resources = 1;
	c->initiator_depth = 1;
	c->remote_cm_response_timeout = 20;
	c->local_cm_response_timeout = 20;
	c->retry_count = 7;
	c->rnr_retry_count = 7;
	c->max_cm_retries = 15;
	c->primary = (struct cm_path){.slid = 1,
				      .dlid = 2,
				      .rate = 3,
				      .subnet_local = 1,
				      .local_ack_timeout = 15,
				      .packet_life_time = 14,
				      .mtu = 4,
				      .pkey = 0xffff};
}

/* Connect n at once; returns seconds taken. */
static double connect_many(uint32_t n, uint32_t *ids)
{
	uint64_t t0 = now_ns();

	established = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct cm_connect_cmd c;

		connect_cmd(&c, (i + 1) & 0x7fffff);
		if (cm_engine_connect(eng[0], &c, &ids[i]))
			ids[i] = 0;
		if (wtail - whead > WIRE_SLOTS / 2)
			pump();
	}
	while (established < n && whead != wtail)
		pump();
	return (double)(now_ns() - t0) / 1e9;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void bench_rate(void)
{
	static uint32_t ids[1000];
	double s;

	setup(0);
	s = connect_many(1000, ids);
	printf("connect rate:   1000 handshakes in flight: %.0f connections/s (%lu established, "
	       "%.2f ms)\n",
	       1000 / s, established, s * 1e3);
	teardown();
}

static void bench_latency(void)
{
	enum { N = 2001 };
	static uint64_t lat[N], floor_ns[N];
	uint8_t mad[256] = {0};

	setup(0);
	for (int i = 0; i < N; i++) {
		struct cm_connect_cmd c;
		enum cm_state st = CM_ST_IDLE;
		uint32_t id;
		uint64_t t0;

		connect_cmd(&c, (uint32_t)(i + 1));
		t0 = now_ns();
		cm_engine_connect(eng[0], &c, &id);
		while (whead != wtail && st != CM_ST_ESTABLISHED) {
			pump();
			cm_engine_conn_state(eng[0], id, &st);
		}
		lat[i] = now_ns() - t0;
		pump();
	}
	/* The floor: the three MAD hops (REQ, REP, RTU) on this wire, no engine. */
	for (int i = 0; i < N; i++) {
		uint64_t t0 = now_ns();

		for (int hop = 0; hop < 3; hop++) {
			struct pkt *p = &wire[wtail++ % WIRE_SLOTS];

			memcpy(p->mad, mad, 256);
			p = &wire[whead++ % WIRE_SLOTS];
			mad[hop] ^= p->mad[255 - hop];
		}
		floor_ns[i] = now_ns() - t0;
	}
	qsort(lat, N, sizeof(lat[0]), cmp_u64);
	qsort(floor_ns, N, sizeof(floor_ns[0]), cmp_u64);
	printf("connect latency: median %.2f us one at a time (p99 %.2f us); wire floor %.3f us "
	       "(in-process wire: the engine's cost dominates, ratio %.0fx)\n",
	       lat[N / 2] / 1e3, lat[N * 99 / 100] / 1e3, floor_ns[N / 2] / 1e3,
	       floor_ns[N / 2] ? (double)lat[N / 2] / (double)floor_ns[N / 2] : 0.0);
	teardown();
}

/* Mean number of entries walked to find a connection by local ID. */
static double mean_probes(const struct cm_engine *e)
{
	unsigned long walked = 0, n = 0;

	for (uint32_t b = 0; b <= e->hash_mask; b++) {
		unsigned long depth = 0;

		for (const struct cm_conn *c = e->by_local[b]; c; c = c->next_local)
			walked += ++depth;
		n += depth;
	}
	return n ? (double)walked / (double)n : 0.0;
}

static void bench_memory_and_lookup(uint32_t big)
{
	uint32_t sizes[2] = {100, big};

	for (int k = 0; k < 2; k++) {
		uint32_t n = sizes[k];
		uint32_t *ids = calloc(n, sizeof(*ids));
		struct mallinfo2 m0, m1;
		uint64_t t0, dt, rtu_dt;
		enum cm_state st;
		unsigned long ok = 0;
		uint8_t mad[256];
		enum { LOOKUPS = 200000 };

		m0 = mallinfo2();
		setup(n + 16);
		connect_many(n, ids);
		m1 = mallinfo2();
		if (k == 1)
			printf(
			    "memory:         struct cm_conn %zu bytes; %.0f bytes per established "
			    "connection per engine (heap incl. hash buckets), %u connections\n",
			    cm_engine_conn_size(), (double)(m1.uordblks - m0.uordblks) / 2.0 / n,
			    n);
		t0 = now_ns();
		for (uint32_t i = 0; i < LOOKUPS; i++)
			ok += cm_engine_conn_state(eng[0], ids[(i * 2654435761u) % n], &st) == 0;
		dt = now_ns() - t0;
		/* A whole receive: duplicate RTU for a random established connection. */
		t0 = now_ns();
		for (uint32_t i = 0; i < LOOKUPS; i++) {
			struct mad_addr from = {.lid = 1, .qpn = 1};
			uint32_t id = ids[(i * 2654435761u) % n];

			cm_mad_init(mad, sizeof(mad), &cm_rtu_layout, CM_METHOD_SEND, 1);
			mad_set(mad + 24, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID, id);
			cm_engine_recv(eng[0], &from, mad, 256);
		}
		rtu_dt = now_ns() - t0;
		printf("lookup:         %6u connections: %.1f ns per lookup by comm ID (%lu found, "
		       "%.2f entries walked on average), %.1f ns per received MAD\n",
		       n, (double)dt / LOOKUPS, ok, mean_probes(eng[0]), (double)rtu_dt / LOOKUPS);
		teardown();
		free(ids);
	}
}

int main(int argc, char **argv)
{
	uint32_t big = argc > 1 && !strcmp(argv[1], "--quick") ? 10000 : 100000;

	wire = calloc(WIRE_SLOTS, sizeof(*wire));
	mad_timer_heap_init(&timers, NULL, NULL);
	printf("cm_bench: CM engine in process, two engines back to back\n");
	bench_rate();
	bench_latency();
	bench_memory_and_lookup(big);
	mad_timer_heap_destroy(&timers);
	free(wire);
	return 0;
}
