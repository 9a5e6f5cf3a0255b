/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Feeds garbage to fabsimd's client socket: random bytes, headers with
 * lying lengths, fragments that never end, unknown types, and truncated /
 * oversize / unregistered MAD_SENDs on a real stream.  Exits 0 if the
 * daemon still answers a HELLO afterwards.  Seeded: sim_fuzz_proto [ITER] [SEED].
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "sim/proto.h"

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

static int dial(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *dir = getenv("FABSIM_DIR");
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir ? dir : "./fabsim", FSP_SOCK_NAME);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("connect");
		exit(1);
	}
	return fd;
}

static int call(int fd, uint16_t type, const void *body, size_t len, void *rep, size_t replen)
{
	uint8_t buf[FSP_FRAG_MAX];
	struct fsp_hdr h = {.type = type, .seq = 7, .len = (uint32_t)(sizeof(h) + len)};
	ssize_t n;

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, len);
	if (send(fd, buf, h.len, MSG_NOSIGNAL) < 0)
		return -errno;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < (ssize_t)sizeof(h))
		return -ECONNRESET;
	memcpy(&h, buf, sizeof(h));
	if (rep)
		memcpy(rep, buf + sizeof(h),
		       (size_t)n - sizeof(h) < replen ? (size_t)n - sizeof(h) : replen);
	return h.status;
}

static int hello(int fd, uint32_t kind)
{
	struct fsp_hello he = {.version = FSP_VERSION, .kind = kind, .pid = getpid()};

	snprintf(he.comm, sizeof(he.comm), "fuzz");
	return call(fd, FSP_HELLO, &he, sizeof(he), NULL, 0);
}

static void send_raw(int fd, uint16_t type, uint16_t flags, const void *body, size_t len)
{
	uint8_t buf[FSP_FRAG_MAX];
	struct fsp_hdr h = {.type = type, .flags = flags, .len = (uint32_t)(sizeof(h) + len)};

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, len);
	send(fd, buf, sizeof(h) + len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 300;
	static uint8_t junk[FSP_FRAG_MAX + 100];

	if (argc > 2)
		rng = strtoull(argv[2], NULL, 0) | 1;
	for (int i = 0; i < iters; i++) {
		int fd = dial();
		int mode = (int)(rnd() % 6);
		size_t len = rnd() % (mode == 0 ? sizeof(junk) : 512);

		for (size_t k = 0; k < len; k++)
			junk[k] = (uint8_t)rnd();
		if (mode == 1 && len >= sizeof(struct fsp_hdr)) {
			/* a header that lies about its length or type */
			struct fsp_hdr h = {.type = (uint16_t)(rnd() % 16), .len = rnd()};

			memcpy(junk, &h, sizeof(h));
		} else if (mode == 2) {
			/* HELLO then garbage typed messages */
			hello(fd, 1 + rnd() % 4);
			for (int k = 0; k < 20; k++)
				send_raw(fd, (uint16_t)(rnd() % 12), (uint16_t)(rnd() % 4), junk,
					 rnd() % 300);
			close(fd);
			continue;
		} else if (mode == 3) {
			/* a fragment train that never ends */
			hello(fd, FSP_KIND_CTL);
			for (int k = 0; k < 40; k++)
				send_raw(fd, FSP_ADMIN, FSP_F_MORE, junk, 1000);
			close(fd);
			continue;
		} else if (mode == 4) {
			/* a stream with bad MAD_SENDs */
			struct fsp_port_ref r = {0, 0};
			uint8_t mad[sizeof(struct ib_user_mad) + 400];
			struct ib_user_mad *u = (void *)mad;

			if (hello(fd, FSP_KIND_STREAM) < 0 ||
			    call(fd, FSP_ATTACH, &r, sizeof(r), NULL, 0) < 0) {
				close(fd);
				continue;
			}
			memset(mad, 0, sizeof(mad));
			u->agent_id = rnd() % 40;
			send_raw(fd, FSP_MAD_SEND, 0, mad, sizeof(*u) + 10);  /* truncated */
			send_raw(fd, FSP_MAD_SEND, 0, mad, sizeof(*u) + 400); /* oversize */
			send_raw(fd, FSP_MAD_SEND, 0, mad, 3);		      /* no header */
			close(fd);
			continue;
		}
		send(fd, junk, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
	}
	/* Phase 2: well-framed MAD_SENDs from real agents carrying random
	 * MADs: every class the daemon handles, random DR paths and hop
	 * pointers, random LIDs, timeouts that expire.  Nothing a client
	 * puts on the wire may crash the fabric. */
	{
		int s = dial(), c = dial(), agents[2] = {-1, -1};
		struct fsp_port_ref r = {0, 0};
		struct fsp_attach_rep ar;
		static const uint8_t classes[] = {0x01, 0x81, 0x03, 0x07, 0x04, 0x30, 0x21, 0x81};
		uint8_t msg[sizeof(struct ib_user_mad) + 256], drain[FSP_FRAG_MAX];

		if (hello(s, FSP_KIND_STREAM) < 0 ||
		    call(s, FSP_ATTACH, &r, sizeof(r), &ar, sizeof(ar)) < 0 ||
		    hello(c, FSP_KIND_CTL) < 0) {
			fprintf(stderr, "fuzz: cannot attach\n");
			return 1;
		}
		struct fsp_register reg = {
		    .stream_id = ar.stream_id, .mgmt_class = 0x81, .class_version = 1};

		agents[0] = call(c, FSP_REGISTER, &reg, sizeof(reg), NULL, 0);
		reg.mgmt_class = 0x07;
		reg.class_version = 2;
		reg.method_mask[0] = 1u << 3;
		agents[1] = call(c, FSP_REGISTER, &reg, sizeof(reg), NULL, 0);
		for (int i = 0; i < iters * 20; i++) {
			struct ib_user_mad *u = (void *)msg;
			uint8_t *m = msg + sizeof(*u);

			memset(u, 0, sizeof(*u));
			for (size_t k = 0; k < 256; k++)
				m[k] = (uint8_t)rnd();
			u->agent_id = (uint32_t)agents[rnd() % 2];
			u->timeout_ms = rnd() % 4 ? 0 : 1 + rnd() % 5;
			u->retries = rnd() % 2;
			u->addr.lid = htons((uint16_t)(rnd() % 3 ? rnd() % 12 : rnd()));
			u->addr.qpn = htonl(rnd() % 4 ? 1 : rnd());
			u->addr.qkey = htonl(0x80010000u);
			u->addr.grh_present = rnd() % 8 == 0;
			m[0] = 1;
			m[1] = classes[rnd() % sizeof(classes)];
			if (rnd() % 3)
				m[3] = (uint8_t)(rnd() % 3); /* mostly Get/Set */
			if (m[1] == 0x81) {
				m[7] = (uint8_t)(rnd() % 4 ? rnd() % 6 : rnd());
				m[6] = (uint8_t)(rnd() % 4 ? 0 : rnd());
				for (int k = 1; k < 64; k++)
					m[128 + k] = (uint8_t)(rnd() % 4 ? 1 + rnd() % 9 : rnd());
				m[4] &= rnd() % 4 ? 0x7f : 0xff;
				m[32] = m[33] = m[34] = m[35] = 0xff;
			}
			if (rnd() % 4 == 0)
				m[16] = 0,
				m[17] = (uint8_t)(0x10 + rnd() % 16); /* SMA attributes */
			send_raw(s, FSP_MAD_SEND, 0, msg, sizeof(msg));
			while (recv(s, drain, sizeof(drain), MSG_DONTWAIT) > 0)
				;
		}
		usleep(20000);
		close(s);
		close(c);
	}

	int fd = dial();
	int ret = hello(fd, FSP_KIND_ADMIN);

	close(fd);
	if (ret < 0) {
		fprintf(stderr, "daemon did not answer HELLO after fuzzing: %s\n", strerror(-ret));
		return 1;
	}
	printf("fuzz: %d connections, daemon alive\n", iters);
	return 0;
}
