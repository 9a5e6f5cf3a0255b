/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * bench/bench_common.h: what the C benches share (rdmacm_bench,
 * cm_fabric_bench, storm_worker): clocks, dying with the bench's name,
 * percentiles, a shell command, and the umad ping-pong that measures the
 * fabric's floor (a responder answering Gets, a pinger's buffers).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PING_CLASS 0x09 /* vendor range 1: no OUI, no RMPP */
#define PING_VERSION 1

/* The name bench_die() prints first: each program defines it. */
extern const char *bench_prog;

uint64_t bench_clock_ns(clockid_t clock);
/* CLOCK_MONOTONIC, ns. */
uint64_t bench_now_ns(void);
/* CPU time of the calling thread (user and system), ns. */
uint64_t bench_thread_cpu_ns(void);
/* "PROG: what: strerror(|err|)" on stderr, exit 1. */
__attribute__((noreturn)) void bench_die(const char *what, int err);
int bench_cmp_u64(const void *a, const void *b);
/* Percentile of v[0..n) in us (sorts v); 0 for none. */
double bench_pct_us(uint64_t *v, unsigned n, unsigned pct);
/* system() of fmt with two string arguments. */
int bench_sh(const char *fmt, const char *a, const char *b);

/* A umad port with the ping agent: the responder's takes Get and Set. */
int bench_ping_open(int *agent, bool responder);
/* Thread body: answer ping Gets with GetResp until *(atomic_bool *)stop. */
void *bench_ping_responder(void *stop);

struct bench_pinger {
	int port, agent;
	size_t sz;
	uint8_t *buf, *rbuf;
	unsigned seq;
};

void bench_pinger_open(struct bench_pinger *pg);
void bench_pinger_close(struct bench_pinger *pg);

#endif
