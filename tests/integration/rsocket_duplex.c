/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rsocket_duplex: two threads on one rsocket, one sending while the other
 * receives (tests/integration/rsocket_duplex.sh), as a program with a
 * reader thread does through librspreload.
 *
 *   rsocket_duplex server PORT             accept connections one after
 *                                          another and echo each (a
 *                                          thread receives, another sends
 *                                          back what it got)
 *   rsocket_duplex client ADDR PORT MODE   connect; a thread sends 4 MiB
 *                                          in 512 KiB rsends while the
 *                                          main thread receives the echo
 *                                          (MODE recv: blocking rrecv;
 *                                          poll: rpoll for POLLIN first)
 *                                          and checks it: "echo ok"
 * Both ends then block in rsend (no credits) and rrecv at once.  Every
 * wait is bounded by the caller (timeout).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rdma/rsocket.h>

#define TOTAL (4u << 20)
#define CHUNK (512u << 10)

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + i / 4093);
}

struct pipe_ring {
	pthread_mutex_t m;
	pthread_cond_t cv;
	unsigned char *buf; /* TOTAL: what was received, to send back */
	size_t got, sent;
	bool eof;
};

struct sender_arg {
	int fd;
	struct pipe_ring *ring; /* echo: send what the receiver got; else the pattern */
	int err;
};

static void *sender(void *arg)
{
	struct sender_arg *a = arg;
	unsigned char *buf = malloc(CHUNK);
	size_t off = 0;

	if (!buf) {
		a->err = ENOMEM;
		return NULL;
	}
	for (;;) {
		size_t n;
		const unsigned char *src;

		if (a->ring) {
			pthread_mutex_lock(&a->ring->m);
			while (a->ring->got == a->ring->sent && !a->ring->eof)
				pthread_cond_wait(&a->ring->cv, &a->ring->m);
			n = a->ring->got - a->ring->sent;
			src = a->ring->buf + a->ring->sent;
			pthread_mutex_unlock(&a->ring->m);
			if (!n)
				break;
		} else {
			if (off == TOTAL)
				break;
			n = TOTAL - off < CHUNK ? TOTAL - off : CHUNK;
			for (size_t i = 0; i < n; i++)
				buf[i] = pattern(off + i);
			src = buf;
		}
		for (size_t done = 0; done < n;) {
			ssize_t k = rsend(a->fd, src + done, n - done, 0);

			if (k < 0) {
				a->err = errno;
				free(buf);
				return NULL;
			}
			done += (size_t)k;
		}
		off += n;
		if (a->ring) {
			pthread_mutex_lock(&a->ring->m);
			a->ring->sent += n;
			pthread_mutex_unlock(&a->ring->m);
		}
	}
	free(buf);
	return NULL;
}

static int client(const char *host, int port, bool use_poll)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct sender_arg a = {0};
	unsigned char *buf = malloc(CHUNK);
	size_t got = 0;
	pthread_t t;
	int fd;

	inet_pton(AF_INET, host, &sin.sin_addr);
	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (!buf || fd < 0 || rconnect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("rconnect");
		return 2;
	}
	a.fd = fd;
	if (pthread_create(&t, NULL, sender, &a))
		return 2;
	while (got < TOTAL) {
		ssize_t k;

		if (use_poll) {
			struct pollfd p = {.fd = fd, .events = POLLIN};

			if (rpoll(&p, 1, -1) != 1) {
				perror("rpoll");
				return 1;
			}
		}
		k = rrecv(fd, buf, CHUNK, 0);
		if (k <= 0) {
			fprintf(stderr, "rrecv: %zd after %zu bytes: %s\n", k, got,
				k ? strerror(errno) : "EOF");
			return 1;
		}
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] != pattern(got + (size_t)i)) {
				fprintf(stderr, "byte %zu differs\n", got + (size_t)i);
				return 1;
			}
		got += (size_t)k;
	}
	pthread_join(t, NULL);
	if (a.err) {
		fprintf(stderr, "rsend: %s\n", strerror(a.err));
		return 1;
	}
	printf("echo ok: %zu bytes\n", got);
	rclose(fd);
	free(buf);
	return 0;
}

/* Echo one connection: this thread receives, a second one sends back. */
static int echo(int c)
{
	struct pipe_ring r = {.m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	struct sender_arg a = {.fd = c, .ring = &r};
	pthread_t t;

	r.buf = malloc(TOTAL);
	if (!r.buf || pthread_create(&t, NULL, sender, &a))
		return 2;
	while (r.got < TOTAL) {
		ssize_t k = rrecv(c, r.buf + r.got, TOTAL - r.got, 0);

		if (k <= 0)
			break;
		pthread_mutex_lock(&r.m);
		r.got += (size_t)k;
		pthread_cond_signal(&r.cv);
		pthread_mutex_unlock(&r.m);
	}
	pthread_mutex_lock(&r.m);
	r.eof = true;
	pthread_cond_signal(&r.cv);
	pthread_mutex_unlock(&r.m);
	pthread_join(t, NULL);
	printf("echoed %zu bytes%s%s\n", r.sent, a.err ? ": " : "", a.err ? strerror(a.err) : "");
	fflush(stdout);
	free(r.buf);
	return 0;
}

static int server(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int l = rsocket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || rbind(l, (struct sockaddr *)&sin, sizeof(sin)) || rlisten(l, 4)) {
		perror("rlisten");
		return 2;
	}
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		int c = raccept(l, NULL, NULL);

		if (c < 0) {
			perror("raccept");
			return 2;
		}
		echo(c);
		rclose(c);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), !strcmp(argv[4], "poll"));
	fprintf(stderr, "usage: rsocket_duplex server PORT | client ADDR PORT recv|poll\n");
	return 2;
}
