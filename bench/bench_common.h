/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * bench/bench_common.h: what the C benches share (rdmacm_bench, ud_bench,
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
#include <sys/types.h>
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

/* Wait for pid up to timeout_ms (SIGTERM first if asked), then SIGTERM, SIGKILL. */
int bench_reap(pid_t pid, int timeout_ms, bool term_first);

/* A child's stdout, read line by line with timeouts. */
struct bench_lines {
	int fd;
	size_t len;
	char buf[8192];
};

/*
 * The next line (NUL-terminated, newline kept) into out within timeout_ms:
 * true, or false at EOF, on error or timeout (a last unterminated line is
 * returned first).
 */
bool bench_read_line(struct bench_lines *lr, char *out, size_t outlen, int timeout_ms);

/*
 * popen(cmd), a `fabsim hosts`: the first host's name, LID and GID, the
 * second host's name.  0, or -1 (with a message) with fewer than two.
 */
int bench_fabric_hosts(const char *cmd, char srv[64], char cli[64], char lid[16], char gid[64]);

#endif
