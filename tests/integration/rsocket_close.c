/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rsocket_close: rclose beside a thread blocked on the same rsocket
 * (tests/integration/rsocket_close.sh).
 *
 *   rsocket_close server PORT        accept one connection, print
 *                                    "accepted", hold it until killed
 *                                    (it sends nothing)
 *   rsocket_close client ADDR PORT   connect; a thread blocks in rrecv;
 *                                    once it sleeps, rclose the socket:
 *                                    the rrecv returns -1 with EBADF
 *                                    ("rrecv EBADF"), nothing is used
 *                                    after it was freed (ASan), no hang
 * Every wait has a bound (30 s).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/syscall.h>

#include <rdma/rsocket.h>

static int fd;
static pid_t reader_tid; /* atomic: the main thread polls it */
static ssize_t got;
static int got_errno;

static void *reader(void *arg)
{
	char buf[64];

	(void)arg;
	__atomic_store_n(&reader_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	got = rrecv(fd, buf, sizeof(buf), 0);
	got_errno = errno;
	return NULL;
}

/* The thread's state letter in /proc ('S': asleep), or 0. */
static char state_of(pid_t tid)
{
	char path[64], line[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : 0;
}

static int client(const char *host, int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timespec ms = {0, 1000000}, end;
	pthread_t t;
	int asleep = 0;

	inet_pton(AF_INET, host, &sin.sin_addr);
	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || rconnect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("rconnect");
		return 2;
	}
	if (pthread_create(&t, NULL, reader, NULL))
		return 2;
	/* Asleep several times in a row: past rrecv's spin, in poll(2). */
	for (int i = 0; i < 30000 && asleep < 50; i++) {
		pid_t tid = __atomic_load_n(&reader_tid, __ATOMIC_ACQUIRE);

		asleep = tid && state_of(tid) == 'S' ? asleep + 1 : 0;
		nanosleep(&ms, NULL);
	}
	if (asleep < 50) {
		fprintf(stderr, "the reader never slept\n");
		return 2;
	}
	if (rclose(fd)) {
		perror("rclose");
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 30;
	if (pthread_timedjoin_np(t, NULL, &end)) {
		fprintf(stderr, "rrecv still blocked 30 s after rclose\n");
		return 1;
	}
	if (got != -1 || got_errno != EBADF) {
		fprintf(stderr, "rrecv: %zd, errno %s, not EBADF\n", got, strerror(got_errno));
		return 1;
	}
	printf("rrecv EBADF\n");
	return 0;
}

static int server(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int l = rsocket(AF_INET, SOCK_STREAM, 0), c;

	if (l < 0 || rbind(l, (struct sockaddr *)&sin, sizeof(sin)) || rlisten(l, 1)) {
		perror("rlisten");
		return 2;
	}
	printf("listening\n");
	fflush(stdout);
	c = raccept(l, NULL, NULL);
	if (c < 0) {
		perror("raccept");
		return 2;
	}
	printf("accepted\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: rsocket_close server PORT | client ADDR PORT\n");
	return 2;
}
