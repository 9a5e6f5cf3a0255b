/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * repoll over several rsockets and a pipe in one set (tests/integration/
 * repoll.sh), on madcm's librdmacm.so.1:
 *   repoll_echo -s ADDR PORT N: listens, and in one repoll set with a pipe
 *     accepts N connections and echoes what each sends until it closes;
 *     the pipe, written once the first connection is in, must be reported
 *     by the same waits;
 *   repoll_echo -c ADDR PORT N: connects N rsockets, puts them and a
 *     written pipe in a set, and ROUNDS times sends a distinct message on
 *     every socket and waits (repoll_wait, no timeout) until each has its
 *     echo back, byte for byte.
 * Exits 0 and prints "... done" on success, 1 with a reason otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include <rdma/rsocket.h>

#define ROUNDS 20
#define MSG 1000
#define MAXC 16
#define TAG_LISTEN (-1)
#define TAG_PIPE (-2)

static int die(const char *what)
{
	fprintf(stderr, "repoll_echo: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void add(int ep, int fd, int tag)
{
	struct epoll_event ev = {.events = EPOLLIN};

	ev.data.fd = tag;
	if (repoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		die("repoll_ctl ADD");
}

static void fill(char *buf, int sock, int round)
{
	for (int i = 0; i < MSG; i++)
		buf[i] = (char)('a' + (sock * 7 + round * 3 + i) % 26);
}

static int server(struct sockaddr_in *sin, int n)
{
	struct epoll_event evs[8];
	int lfd, ep, p[2], done = 0, accepted = 0, pipe_seen = 0;
	long bytes = 0;
	char buf[4096];

	lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || rbind(lfd, (struct sockaddr *)sin, sizeof(*sin)) || rlisten(lfd, n))
		die("listen");
	ep = repoll_create(EPOLL_CLOEXEC);
	if (ep < 0 || pipe(p))
		die("repoll_create");
	add(ep, lfd, TAG_LISTEN);
	add(ep, p[0], TAG_PIPE);
	/* Nothing there yet: a zero timeout returns at once. */
	if (repoll_wait(ep, evs, 8, 0) != 0)
		die("repoll_wait 0 on an idle set");
	printf("listening\n");
	fflush(stdout);
	while (done < n) {
		int k = repoll_wait(ep, evs, 8, -1);

		if (k <= 0)
			die("repoll_wait");
		for (int i = 0; i < k; i++) {
			int fd = evs[i].data.fd;

			if (fd == TAG_LISTEN) {
				int c = raccept(lfd, NULL, NULL);

				if (c < 0)
					die("raccept");
				add(ep, c, c);
				if (accepted++ == 0 && write(p[1], "p", 1) != 1)
					die("write pipe");
			} else if (fd == TAG_PIPE) {
				char ch;

				if (read(p[0], &ch, 1) != 1)
					die("read pipe");
				pipe_seen++;
			} else {
				ssize_t r = rrecv(fd, buf, sizeof(buf), 0);

				if (r <= 0) {
					if (repoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL))
						die("repoll_ctl DEL");
					rclose(fd);
					done++;
					continue;
				}
				for (ssize_t off = 0; off < r;) {
					ssize_t w = rsend(fd, buf + off, (size_t)(r - off), 0);

					if (w <= 0)
						die("rsend");
					off += w;
				}
				bytes += r;
			}
		}
	}
	if (pipe_seen != 1) {
		fprintf(stderr, "repoll_echo: the pipe was reported %d times\n", pipe_seen);
		return 1;
	}
	printf("server done: %d connections, %ld bytes echoed, pipe seen\n", n, bytes);
	rclose(lfd);
	if (rclose(ep))
		die("rclose set");
	return 0;
}

static int client(struct sockaddr_in *sin, int n)
{
	struct epoll_event evs[MAXC + 1];
	static char want[MAXC][MSG], got[MAXC][MSG];
	int fds[MAXC], have[MAXC], ep, p[2], pipe_seen = 0;

	ep = repoll_create(0);
	if (ep < 0 || pipe(p))
		die("repoll_create");
	for (int s = 0; s < n; s++) {
		fds[s] = rsocket(AF_INET, SOCK_STREAM, 0);
		if (fds[s] < 0 || rconnect(fds[s], (struct sockaddr *)sin, sizeof(*sin)))
			die("connect");
		add(ep, fds[s], s);
	}
	add(ep, p[0], TAG_PIPE);
	if (write(p[1], "p", 1) != 1)
		die("write pipe");
	for (int round = 0; round < ROUNDS; round++) {
		int left = n;

		for (int s = 0; s < n; s++) {
			fill(want[s], s, round);
			have[s] = 0;
			if (rsend(fds[s], want[s], MSG, 0) != MSG)
				die("rsend");
		}
		while (left) {
			int k = repoll_wait(ep, evs, MAXC + 1, -1);

			if (k <= 0)
				die("repoll_wait");
			for (int i = 0; i < k; i++) {
				int s = evs[i].data.fd;
				ssize_t r;

				if (s == TAG_PIPE) {
					char ch;

					if (read(p[0], &ch, 1) != 1)
						die("read pipe");
					pipe_seen++;
					continue;
				}
				r = rrecv(fds[s], got[s] + have[s], (size_t)(MSG - have[s]), 0);
				if (r <= 0) {
					fprintf(stderr, "repoll_echo: socket %d: rrecv %zd\n", s,
						r);
					return 1;
				}
				have[s] += (int)r;
				if (have[s] == MSG) {
					if (memcmp(got[s], want[s], MSG)) {
						fprintf(stderr,
							"repoll_echo: socket %d round %d differs\n",
							s, round);
						return 1;
					}
					left--;
				}
			}
		}
	}
	for (int s = 0; s < n; s++) {
		if (repoll_ctl(ep, EPOLL_CTL_DEL, fds[s], NULL))
			die("repoll_ctl DEL");
		rclose(fds[s]);
	}
	if (pipe_seen != 1) {
		fprintf(stderr, "repoll_echo: the pipe was reported %d times\n", pipe_seen);
		return 1;
	}
	rclose(ep);
	printf("client done: %d sockets, %d rounds of %d bytes\n", n, ROUNDS, MSG);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int n;

	if (argc != 5 || inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1) {
		fprintf(stderr, "usage: repoll_echo -s|-c ADDR PORT N\n");
		return 2;
	}
	sin.sin_port = htons((uint16_t)atoi(argv[3]));
	n = atoi(argv[4]);
	if (n < 1 || n > MAXC)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	return strcmp(argv[1], "-s") ? client(&sin, n) : server(&sin, n);
}
