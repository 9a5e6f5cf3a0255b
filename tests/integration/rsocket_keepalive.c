/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * SO_KEEPALIVE on a stream rsocket, for tests/integration/rsocket.sh:
 *
 *   rsocket_keepalive -s ADDR PORT       accept one connection, say
 *                                        "accepted", then wait to be killed
 *   rsocket_keepalive -c ADDR PORT IDLE  connect, set SO_KEEPALIVE with
 *                                        TCP_KEEPIDLE IDLE seconds, say
 *                                        "connected", block in rrecv
 *   rsocket_keepalive -b ADDR PORT IDLE  the same, then send with
 *                                        MSG_DONTWAIT in a busy loop (as
 *                                        rstream does by default) to a
 *                                        server that never reads; says
 *                                        "full" at the first EAGAIN
 *
 * A client exits 0 when rrecv or rsend fails with ECONNRESET (a keepalive
 * found the peer gone), 1 on any other outcome.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rsocket.h>

int main(int argc, char **argv)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int s, one = 1;
	char b[64];
	ssize_t n;

	if (argc < 4 || (argv[1][1] != 's' && argc < 5)) {
		fprintf(stderr, "usage: %s -s ADDR PORT | -c|-b ADDR PORT IDLE\n", argv[0]);
		return 2;
	}
	if (inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1)
		return 2;
	sin.sin_port = htons((uint16_t)atoi(argv[3]));
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	if (s < 0) {
		perror("rsocket");
		return 1;
	}
	if (argv[1][1] == 's') {
		int c;

		if (rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    rbind(s, (struct sockaddr *)&sin, sizeof(sin)) || rlisten(s, 1)) {
			perror("listen");
			return 1;
		}
		c = raccept(s, NULL, NULL);
		if (c < 0) {
			perror("raccept");
			return 1;
		}
		printf("accepted\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	int idle = atoi(argv[4]);

	if (rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle))) {
		perror("rsetsockopt");
		return 1;
	}
	if (rconnect(s, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("rconnect");
		return 1;
	}
	printf("connected\n");
	fflush(stdout);
	if (argv[1][1] == 'b') {
		static char big[65536];
		bool full = false;

		/* Spins holding the socket's lock in every call but the last. */
		while ((n = rsend(s, big, sizeof(big), MSG_DONTWAIT)) > 0 || errno == EAGAIN)
			if (n < 0 && !full) {
				full = true;
				printf("full\n");
				fflush(stdout);
			}
		printf("rsend: %zd (%s)\n", n, strerror(errno));
		return n < 0 && errno == ECONNRESET ? 0 : 1;
	}
	n = rrecv(s, b, sizeof(b), 0);
	printf("rrecv: %zd (%s)\n", n, n < 0 ? strerror(errno) : "data or EOF");
	return n < 0 && errno == ECONNRESET ? 0 : 1;
}
