/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * torture_target: a CM that `madcm torture` can be pointed at, on the CM
 * runtime (cm/runtime.h) with no verbs: it listens on a service ID and
 * answers as an rdma_cm server over madcm would.
 *
 *   fabsim run h1 -- torture_target [--service-id ID] [--accept-delay MS]
 *
 * REQ: MRA with the delay flag (sent only if the REQ is repeated, as
 * lib/ and the kernel's rdma_cm do), then accept (REP; QPNs are made up,
 * no QP exists), after --accept-delay milliseconds.  DREQ: DREP.  Every
 * other event is only counted.  Prints "ready" once it listens; runs
 * until killed.
 *
 * Built twice: torture_target with libmadcm's engine, and
 * torture_target_broken with a copy of cm/state.c whose IDLE row drops a
 * REP instead of answering REJ "invalid comm ID" (the test double that
 * tests/integration/torture.sh expects `madcm torture` to catch).
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm/runtime.h"

#define MAX_PENDING 4096

struct pending {
	uint32_t id;
	uint64_t at_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void accept_one(struct cm_runtime *rt, uint32_t id, uint32_t *next_qpn)
{
	struct cm_accept_cmd a = {0};
	int ret;

	a.qpn = (*next_qpn)++ & 0xffffff;
	if (a.qpn < 2)
		a.qpn = *next_qpn = 2;
	a.starting_psn = (uint32_t)rand() & 0xffffff;
	a.responder_resources = 1;
	a.initiator_depth = 1;
	a.target_ack_delay = 15;
	a.rnr_retry_count = 7;
	ret = cm_runtime_accept(rt, id, id, &a);
	if (ret)
		fprintf(stderr, "torture_target: accept 0x%x: %d\n", id, ret);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"service-id", required_argument, NULL, 's'},
	    {"accept-delay", required_argument, NULL, 'd'},
	    {NULL, 0, NULL, 0},
	};
	static struct pending pend[MAX_PENDING];
	struct cm_runtime_params p = {0};
	uint64_t sid = 0x0000000001061C06ull;
	unsigned delay = 0, npend = 0;
	struct cm_runtime *rt;
	uint32_t next_qpn;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "s:d:", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sid = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			delay = (unsigned)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: torture_target [--service-id ID] [--accept-delay MS]\n");
			return 2;
		}
	}
	srand((unsigned)time(NULL));
	next_qpn = 0x100u + ((uint32_t)rand() & 0xfff000);
	ret = cm_runtime_open(&rt, &p);
	if (ret) {
		fprintf(stderr, "torture_target: cm_runtime_open: %d\n", ret);
		return 1;
	}
	ret = cm_runtime_listen(rt, sid, ~0ull, 0);
	if (ret < 0) {
		fprintf(stderr, "torture_target: listen: %d\n", ret);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct cm_event ev;
		struct cm_rt_cmd mra;
		int timeout = -1;

		if (npend)
			timeout = pend[0].at_ms > now_ms() ? (int)(pend[0].at_ms - now_ms()) : 0;
		ret = cm_runtime_wait_event(rt, &ev, timeout);
		while (npend && pend[0].at_ms <= now_ms()) {
			accept_one(rt, pend[0].id, &next_qpn);
			memmove(pend, pend + 1, --npend * sizeof(pend[0]));
		}
		if (ret)
			continue;
		switch (ev.type) {
		case CM_EV_REQ_RCVD:
			memset(&mra, 0, sizeof(mra));
			mra.op = CM_RT_MRA;
			mra.id = ev.id;
			mra.mra.service_timeout = 20 | CM_MRA_FLAG_DELAY;
			cm_runtime_exec(rt, &mra);
			if (delay == 0 || npend == MAX_PENDING) {
				accept_one(rt, ev.id, &next_qpn);
			} else {
				pend[npend].id = ev.id;
				pend[npend++].at_ms = now_ms() + delay;
			}
			break;
		case CM_EV_DREQ_RCVD:
			cm_runtime_disconnect(rt, ev.id);
			break;
		default:
			break;
		}
	}
}
