/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* bench/bench_common.c: see bench_common.h. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "bench_common.h"

uint64_t bench_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t bench_now_ns(void)
{
	return bench_clock_ns(CLOCK_MONOTONIC);
}

uint64_t bench_thread_cpu_ns(void)
{
	return bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

void bench_die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", bench_prog, what, strerror(err < 0 ? -err : err));
	exit(1);
}

int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

double bench_pct_us(uint64_t *v, unsigned n, unsigned pct)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_u64);
	return v[(size_t)(n - 1) * pct / 100] / 1000.0;
}

int bench_sh(const char *fmt, const char *a, const char *b)
{
	char cmd[PATH_MAX * 3];

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	return system(cmd);
}

int bench_ping_open(int *agent, bool responder)
{
	long mask[16 / sizeof(long)] = {0};
	int p = umad_open_port(NULL, 0);

	if (p < 0)
		bench_die("umad_open_port", p);
	if (responder)
		mask[0] = 1L << 0x01 | 1L << 0x02; /* Get; Set: the handshake floor's third MAD */
	*agent = umad_register(p, PING_CLASS, PING_VERSION, 0, responder ? mask : NULL);
	if (*agent < 0)
		bench_die("umad_register", *agent);
	return p;
}

void *bench_ping_responder(void *stop)
{
	size_t sz = umad_size() + 256;
	uint8_t *buf = calloc(1, sz);
	int agent, p = bench_ping_open(&agent, true);

	if (!buf)
		bench_die("ping", ENOMEM);
	while (!atomic_load((atomic_bool *)stop)) {
		int len = 256, rc = umad_recv(p, buf, &len, 100);
		ib_mad_addr_t *a;
		uint8_t *mad;

		if (rc < 0 && rc != -ETIMEDOUT && rc != -EINTR && rc != -EAGAIN)
			break; /* the port is gone (its fabric went down): do not spin */
		if (rc < 0 || umad_status(buf))
			continue;
		mad = umad_get_mad(buf);
		if (mad[1] != PING_CLASS || mad[3] != 0x01)
			continue;
		a = umad_get_mad_addr(buf);
		mad[3] = 0x81; /* GetResp, same TID */
		umad_set_addr(buf, ntohs(a->lid), (int)ntohl(a->qpn), a->sl, (int)ntohl(a->qkey));
		umad_send(p, agent, buf, 256, 0, 0);
	}
	umad_close_port(p);
	free(buf);
	return NULL;
}

void bench_pinger_open(struct bench_pinger *pg)
{
	pg->sz = umad_size() + 256;
	pg->buf = calloc(1, pg->sz);
	pg->rbuf = calloc(1, pg->sz);
	if (!pg->buf || !pg->rbuf)
		bench_die("ping", ENOMEM);
	pg->port = bench_ping_open(&pg->agent, false);
}

void bench_pinger_close(struct bench_pinger *pg)
{
	umad_close_port(pg->port);
	free(pg->buf);
	free(pg->rbuf);
}

int bench_reap(pid_t pid, int timeout_ms, bool term_first)
{
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int status = -1;

	if (term_first)
		kill(pid, SIGTERM);
	for (int phase = 0; phase < 3; phase++) {
		while (bench_now_ns() < end) {
			pid_t r = waitpid(pid, &status, WNOHANG);

			if (r == pid)
				return status;
			if (r < 0)
				return -1;
			usleep(20000);
		}
		if (phase == 0) {
			fprintf(stderr, "%s: pid %d still running, SIGTERM\n", bench_prog,
				(int)pid);
			kill(pid, SIGTERM);
		} else if (phase == 1) {
			fprintf(stderr, "%s: pid %d still running, SIGKILL\n", bench_prog,
				(int)pid);
			kill(pid, SIGKILL);
		}
		end = bench_now_ns() + 5000000000ull;
	}
	return status;
}

bool bench_read_line(struct bench_lines *lr, char *out, size_t outlen, int timeout_ms)
{
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	size_t take = 0;

	while (!take) {
		char *nl = memchr(lr->buf, '\n', lr->len);
		struct pollfd pfd = {.fd = lr->fd, .events = POLLIN};
		uint64_t now;
		ssize_t r;

		if (nl || lr->len == sizeof(lr->buf)) {
			take = nl ? (size_t)(nl - lr->buf) + 1 : lr->len;
			break;
		}
		now = bench_now_ns();
		if (now >= end || poll(&pfd, 1, (int)((end - now) / 1000000)) <= 0)
			return false;
		r = read(lr->fd, lr->buf + lr->len, sizeof(lr->buf) - lr->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (!lr->len)
				return false;
			take = lr->len;
		} else {
			lr->len += (size_t)r;
		}
	}
	if (take >= outlen)
		take = outlen - 1;
	memcpy(out, lr->buf, take);
	out[take] = 0;
	memmove(lr->buf, lr->buf + take, lr->len - take);
	lr->len -= take;
	return true;
}

int bench_fabric_hosts(const char *cmd, char srv[64], char cli[64], char lid[16], char gid[64])
{
	char line[1024];
	FILE *f = popen(cmd, "r");

	srv[0] = cli[0] = lid[0] = gid[0] = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char name[64], *p;

		if (sscanf(line, "%63s", name) != 1)
			continue;
		if (!srv[0]) {
			snprintf(srv, 64, "%s", name);
			p = strstr(line, " lid ");
			if (p)
				sscanf(p + 5, "%15s", lid);
			p = strstr(line, " gid ");
			if (p)
				sscanf(p + 5, "%63s", gid);
		} else if (!cli[0]) {
			snprintf(cli, 64, "%s", name);
		}
	}
	if (f)
		pclose(f);
	if (!cli[0] || !gid[0]) {
		fprintf(stderr, "fewer than two hosts\n");
		return -1;
	}
	return 0;
}
