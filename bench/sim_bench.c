/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * fabsim benchmarks (driven by bench/sim_bench.sh; prints, never asserts):
 *
 *   sim_bench osm LOGFILE -- OPENSM ARGS...   start OpenSM, time until its
 *                                             log says SUBNET UP, stop it
 *   sim_bench unix N                          256-byte ping-pong over a UNIX
 *                                             socketpair (the reference)
 *   sim_bench umad-server N                   under fabsim: echo N MADs
 *   sim_bench umad-client DLID N WINDOW       under fabsim: N round trips one
 *                                             at a time (latency), then N MADs
 *                                             with WINDOW in flight (MADs/s)
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/umad.h>

#define MAD_LEN 256

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* mean and median of n samples: the median shrugs off the scheduler
 * hiccups a shared machine adds to a few round trips */
static void report_rtt(const char *what, double *t, int n)
{
	double sum = 0;

	for (int i = 0; i < n; i++)
		sum += t[i];
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	printf("%s mean %.2f us median %.2f us\n", what, sum / n, t[n / 2]);
}

static int osm_time(const char *log, char **argv)
{
	double t0 = now_us();
	pid_t pid = fork();
	char line[4096];

	if (pid < 0)
		return 1;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		FILE *f = fopen(log, "r");
		int up = 0;

		if (f) {
			while (fgets(line, sizeof(line), f))
				if (strstr(line, "SUBNET UP"))
					up = 1;
			fclose(f);
		}
		if (up)
			break;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			printf("opensm exited before SUBNET UP\n");
			return 1;
		}
		if (now_us() - t0 > 300e6) {
			printf("timeout\n");
			kill(pid, SIGKILL);
			return 1;
		}
		usleep(2000);
	}
	printf("%.1f ms\n", (now_us() - t0) / 1e3);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return 0;
}

static int unix_pingpong(int n)
{
	int sv[2];
	char buf[MAD_LEN];
	double t0;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		return 1;
	memset(buf, 0, sizeof(buf));
	pid_t pid = fork();

	if (pid == 0) {
		for (int i = 0; i < n; i++) {
			if (recv(sv[1], buf, sizeof(buf), 0) <= 0)
				_exit(1);
			send(sv[1], buf, sizeof(buf), 0);
		}
		_exit(0);
	}
	double *t = calloc((size_t)n, sizeof(*t));

	if (!t)
		return 1;
	for (int i = 0; i < n; i++) {
		t0 = now_us();
		send(sv[0], buf, sizeof(buf), 0);
		recv(sv[0], buf, sizeof(buf), 0);
		t[i] = now_us() - t0;
	}
	report_rtt("rtt", t, n);
	free(t);
	waitpid(pid, NULL, 0);
	return 0;
}

static int open_cm(int *agent)
{
	long mask[16 / sizeof(long)] = {1L << 3};
	int fd = umad_open_port(NULL, 0);

	if (fd < 0)
		return -1;
	*agent = umad_register(fd, 0x07, 2, 0, mask);
	return *agent < 0 ? -1 : fd;
}

static int umad_server(int n)
{
	int agent, fd = open_cm(&agent);
	void *u = calloc(1, umad_size() + MAD_LEN);

	if (fd < 0 || !u)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		int len = MAD_LEN;
		ib_mad_addr_t *a;

		if (umad_recv(fd, u, &len, 20000) < 0)
			return 1;
		a = umad_get_mad_addr(u);
		umad_set_addr_net(u, a->lid, a->qpn, 0, a->qkey);
		umad_send(fd, agent, u, MAD_LEN, 0, 0);
	}
	return 0;
}

static void mk(void *u, int dlid, uint32_t tid)
{
	uint8_t *m = umad_get_mad(u);

	memset(u, 0, umad_size() + MAD_LEN);
	m[0] = 1, m[1] = 0x07, m[2] = 2, m[3] = 3;
	m[12] = (uint8_t)(tid >> 24), m[13] = (uint8_t)(tid >> 16);
	m[14] = (uint8_t)(tid >> 8), m[15] = (uint8_t)tid;
	umad_set_addr(u, dlid, 1, 0, 0x80010000);
}

static int umad_client(int dlid, int n, int window)
{
	int agent, fd = open_cm(&agent), len;
	void *u = calloc(1, umad_size() + MAD_LEN);
	double t0;
	int sent = 0, got = 0;

	if (fd < 0 || !u)
		return 1;
	double *t = calloc((size_t)n, sizeof(*t));

	if (!t)
		return 1;
	for (int i = 0; i < n; i++) {
		t0 = now_us();
		mk(u, dlid, (uint32_t)i);
		umad_send(fd, agent, u, MAD_LEN, 0, 0);
		len = MAD_LEN;
		if (umad_recv(fd, u, &len, 5000) < 0)
			return 1;
		t[i] = now_us() - t0;
	}
	report_rtt("rtt", t, n);
	free(t);
	t0 = now_us();
	while (got < n) {
		while (sent < n && sent - got < window) {
			mk(u, dlid, (uint32_t)sent++);
			umad_send(fd, agent, u, MAD_LEN, 0, 0);
		}
		len = MAD_LEN;
		if (umad_recv(fd, u, &len, 5000) < 0)
			return 1;
		got++;
	}
	/* every round trip is two MADs through the daemon */
	printf("rate %.0f MADs/s\n", 2.0 * n / ((now_us() - t0) / 1e6));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "osm") && !strcmp(argv[3], "--"))
		return osm_time(argv[2], argv + 4);
	if (argc >= 3 && !strcmp(argv[1], "unix"))
		return unix_pingpong(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "umad-server"))
		return umad_server(atoi(argv[2]));
	if (argc >= 5 && !strcmp(argv[1], "umad-client"))
		return umad_client(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: see the comment at the top of bench/sim_bench.c\n");
	return 2;
}
