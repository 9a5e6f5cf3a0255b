/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd_flood: a misbehaving madcmd client for madcmd_faults.sh, on the
 * daemon's socket ($MADCM_DAEMON) directly.
 *
 *   madcmd_flood garbage SECONDS   connect, send random bytes as fast as
 *                                  the socket takes them, connect again
 *                                  when the daemon closes the session
 *   madcmd_flood commands SECONDS  one host session sending port binds and
 *                                  unbinds as fast as it can, reading the
 *                                  answers only now and then
 * Prints "sessions N packets M" at the end; exit 0.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "rtproto/rt_proto.h"

static int dial(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", madcmd_socket_path());
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("connect");
		exit(2);
	}
	return fd;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void drain(int fd)
{
	static unsigned char b[MADCMD_BATCH_MAX];

	while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

int main(int argc, char **argv)
{
	unsigned long sessions = 1, packets = 0;
	double end;
	int fd;

	if (argc != 3 || (strcmp(argv[1], "garbage") && strcmp(argv[1], "commands"))) {
		fprintf(stderr, "usage: madcmd_flood garbage|commands SECONDS\n");
		return 2;
	}
	end = now() + atof(argv[2]);
	srand((unsigned)getpid());
	fd = dial();
	if (!strcmp(argv[1], "garbage")) {
		unsigned char b[512];

		while (now() < end) {
			size_t len = 1 + (size_t)rand() % sizeof(b);

			for (size_t i = 0; i < len; i++)
				b[i] = (unsigned char)rand();
			if (send(fd, b, len, MSG_NOSIGNAL) < 0) {
				close(fd); /* the daemon closed it: again */
				fd = dial();
				sessions++;
				continue;
			}
			packets++;
		}
	} else {
		struct madcmd_hello h;
		struct madcmd_port m;

		memset(&h, 0, sizeof(h));
		madcmd_hdr_init(&h.h, MADCMD_HELLO, sizeof(h), 1);
		h.kind = MADCMD_SESSION_HOST;
		h.layout = madcmd_layout();
		if (send(fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
			perror("send HELLO");
			return 2;
		}
		memset(&m, 0, sizeof(m));
		m.ps = 0x0106; /* RDMA_PS_TCP */
		m.family = AF_INET;
		m.any = 1;
		for (uint32_t seq = 2; now() < end; seq++) {
			int type = seq & 1 ? MADCMD_PORT_UNBIND : MADCMD_PORT_BIND;

			madcmd_hdr_init(&m.h, type, sizeof(m), seq);
			m.token = 1;
			if (send(fd, &m, sizeof(m), MSG_NOSIGNAL) < 0) {
				close(fd); /* cut off as too slow: again */
				fd = dial();
				sessions++;
				if (send(fd, &h, sizeof(h), MSG_NOSIGNAL) < 0)
					return 2;
				continue;
			}
			packets++;
			if (seq % 64 == 0)
				drain(fd);
		}
	}
	close(fd);
	printf("sessions %lu packets %lu\n", sessions, packets);
	return 0;
}
