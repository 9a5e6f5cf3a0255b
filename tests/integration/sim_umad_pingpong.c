/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * CM-class (0x07) MAD exchange through the libibumad API only, as two
 * processes on two hosts would do it through the kernel's ib_umad.  Run
 * under fabsim (fabsim run HOST -- sim_umad_pingpong ...).
 *
 *   sim_umad_pingpong server COUNT           answer COUNT Sends, then exit
 *   sim_umad_pingpong client DLID COUNT      send COUNT Sends, wait for each
 *                                            answer; prints the mean RTT (us)
 *   sim_umad_pingpong burst DLID COUNT       on a non-blocking fd (as libibumad
 *                                            opens them), send COUNT Sends
 *                                            back to back, taking answers with
 *                                            zero-timeout looks in between (as
 *                                            madcm reads); exit 0 when every
 *                                            send went out and COUNT answers
 *                                            came back
 *   sim_umad_pingpong reg CLASS [SECONDS]    register CLASS v2 Send (hold it
 *                                            SECONDS); exit 0 if registered,
 *                                            3 if EINVAL (the kernel's answer
 *                                            to a duplicate)
 *   sim_umad_pingpong dupreg                 register 0x07 twice in-process;
 *                                            exit 0 if the second fails EINVAL
 *   sim_umad_pingpong get DLID TIMEOUT RETRIES  send a class 0x07 Get (a
 *                                            request expecting a response);
 *                                            prints "status S mad_status M"
 *                                            of what comes back (ETIMEDOUT
 *                                            from the MAD layer, or a GetResp)
 *   sim_umad_pingpong satable SMLID          SA GetTable(NodeRecord) with an
 *                                            rmpp_version 0 agent: reassemble
 *                                            the raw segments, ACK them
 *                                            ourselves; prints the record count
 *
 * PINGPONG_PKEY_INDEX=N sends the class 0x07 MADs at P_Key index N.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/umad.h>

#define CM_CLASS 0x07
#define METHOD_SEND 0x03
#define MAD_LEN 256

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int open_and_register(int mgmt_class, int *agent)
{
	long mask[16 / sizeof(long)] = {0};
	int fd = umad_open_port(NULL, 0);

	if (fd < 0) {
		fprintf(stderr, "umad_open_port: %s\n", strerror(-fd));
		return -1;
	}
	mask[0] = 1L << METHOD_SEND;
	*agent = umad_register(fd, mgmt_class, 2, 0, mask);
	return fd;
}

static void build_send(void *umad, uint64_t tid, int dlid)
{
	uint8_t *mad = umad_get_mad(umad);

	memset(umad, 0, umad_size() + MAD_LEN);
	mad[0] = 1;	   /* base version */
	mad[1] = CM_CLASS; /* ComMgt */
	mad[2] = 2;	   /* class version */
	mad[3] = METHOD_SEND;
	for (int i = 0; i < 8; i++)
		mad[8 + i] = (uint8_t)(tid >> (56 - 8 * i));
	mad[16] = 0x00, mad[17] = 0x10; /* attribute: REQ, payload irrelevant */
	umad_set_addr(umad, dlid, 1, 0, 0x80010000);
	/* PINGPONG_PKEY_INDEX: send at that P_Key index (partitions.sh) */
	if (getenv("PINGPONG_PKEY_INDEX"))
		umad_set_pkey(umad, atoi(getenv("PINGPONG_PKEY_INDEX")));
}

/* Frees a buffer at the end of its scope, on every return path. */
static void free_ptr(void *p)
{
	free(*(void **)p);
}

static int server(int count)
{
	int agent, fd = open_and_register(CM_CLASS, &agent);
	void *umad __attribute__((cleanup(free_ptr))) = calloc(1, umad_size() + MAD_LEN);
	umad_port_t port;

	if (fd < 0 || agent < 0 || !umad) {
		fprintf(stderr, "server: register failed (%d)\n", agent);
		return 1;
	}
	if (!umad_get_port(NULL, 0, &port)) {
		printf("server lid %u\n", port.base_lid);
		umad_release_port(&port);
	}
	fflush(stdout);
	for (int i = 0; i < count; i++) {
		int len = MAD_LEN, ret = umad_recv(fd, umad, &len, 10000);
		ib_mad_addr_t *a;
		uint8_t *mad;

		if (ret < 0) {
			fprintf(stderr, "server: recv %d: %s\n", i, strerror(-ret));
			return 1;
		}
		mad = umad_get_mad(umad);
		if (mad[1] != CM_CLASS || mad[3] != METHOD_SEND) {
			fprintf(stderr, "server: unexpected class 0x%x method 0x%x\n", mad[1],
				mad[3]);
			return 1;
		}
		/* answer to where it came from: the source LID and QP the
		 * receive address carries */
		a = umad_get_mad_addr(umad);
		umad_set_addr_net(umad, a->lid, a->qpn, 0, a->qkey);
		if (umad_send(fd, agent, umad, MAD_LEN, 0, 0)) {
			fprintf(stderr, "server: send failed\n");
			return 1;
		}
	}
	printf("server: answered %d\n", count);
	return 0;
}

static int client(int dlid, int count)
{
	int agent, fd = open_and_register(CM_CLASS, &agent);
	void *umad __attribute__((cleanup(free_ptr))) = calloc(1, umad_size() + MAD_LEN);
	double t0, total = 0;

	if (fd < 0 || agent < 0 || !umad) {
		fprintf(stderr, "client: register failed (%d)\n", agent);
		return 1;
	}
	for (int i = 0; i < count; i++) {
		uint64_t tid = 0x1000 + (uint64_t)i;
		int len = MAD_LEN, ret;
		uint8_t *mad;

		build_send(umad, tid, dlid);
		t0 = now_us();
		if (umad_send(fd, agent, umad, MAD_LEN, 0, 0)) {
			fprintf(stderr, "client: send failed\n");
			return 1;
		}
		ret = umad_recv(fd, umad, &len, 5000);
		if (ret < 0) {
			fprintf(stderr, "client: no answer to %d: %s\n", i, strerror(-ret));
			return 1;
		}
		total += now_us() - t0;
		mad = umad_get_mad(umad);
		if (mad[1] != CM_CLASS || umad_status(umad)) {
			fprintf(stderr, "client: bad answer class 0x%x status %d\n", mad[1],
				umad_status(umad));
			return 1;
		}
		/* the low 32 TID bits are the sender's; the kernel owns the high ones */
		uint32_t lo = (uint32_t)mad[12] << 24 | (uint32_t)mad[13] << 16 |
			      (uint32_t)mad[14] << 8 | mad[15];

		if (lo != (uint32_t)tid) {
			fprintf(stderr, "client: TID mismatch\n");
			return 1;
		}
	}
	printf("client: %d round trips, mean rtt %.1f us\n", count, total / count);
	return 0;
}

/* Take what has come (timeout 0); -1 on an error other than "empty". */
static int take_answers(int fd, void *umad, int timeout_ms)
{
	int n = 0;

	for (;;) {
		int len = MAD_LEN, ret = umad_recv(fd, umad, &len, timeout_ms);

		if (ret < 0)
			return ret == -EWOULDBLOCK || ret == -EAGAIN || ret == -ETIMEDOUT ? n : -1;
		n++;
		if (timeout_ms)
			return n;
	}
}

static int burst(int dlid, int count)
{
	int agent, fd = open_and_register(CM_CLASS, &agent), got = 0, fl, r;
	void *umad __attribute__((cleanup(free_ptr))) = calloc(1, umad_size() + MAD_LEN);
	void *ans __attribute__((cleanup(free_ptr))) = calloc(1, umad_size() + MAD_LEN);

	if (fd < 0 || agent < 0 || !umad || !ans)
		return 1;
	fl = fcntl(umad_get_fd(fd), F_GETFL);
	if (fl < 0 || fcntl(umad_get_fd(fd), F_SETFL, fl | O_NONBLOCK)) {
		perror("burst: O_NONBLOCK");
		return 1;
	}
	for (int i = 0; i < count; i++) {
		build_send(umad, 0x2000 + (uint64_t)i, dlid);
		if (umad_send(fd, agent, umad, MAD_LEN, 0, 0)) {
			fprintf(stderr, "burst: send %d failed: %s\n", i, strerror(errno));
			return 1;
		}
		if ((r = take_answers(fd, ans, 0)) < 0) {
			fprintf(stderr, "burst: look failed\n");
			return 1;
		}
		got += r;
	}
	while (got < count && (r = take_answers(fd, ans, 5000)) > 0)
		got += r;
	printf("burst: %d sent, %d answered\n", count, got);
	return got == count ? 0 : 1;
}

static int get_request(int dlid, int timeout_ms, int retries)
{
	int agent, fd = open_and_register(CM_CLASS, &agent), len = MAD_LEN, ret;
	void *umad __attribute__((cleanup(free_ptr))) = calloc(1, umad_size() + MAD_LEN);
	uint8_t *mad;
	double t0 = now_us();

	if (fd < 0 || agent < 0 || !umad)
		return 1;
	build_send(umad, 0x77, dlid);
	mad = umad_get_mad(umad);
	mad[3] = 0x01; /* Get: the MAD layer waits for the GetResp */
	if (umad_send(fd, agent, umad, MAD_LEN, timeout_ms, retries))
		return 1;
	ret = umad_recv(fd, umad, &len, 10000);
	if (ret < 0) {
		printf("recv %s\n", strerror(-ret));
		return 1;
	}
	printf("status %d mad_status 0x%x method 0x%x after %.0f ms\n", umad_status(umad),
	       mad[4] << 8 | mad[5], mad[3], (now_us() - t0) / 1000);
	return 0;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* user-side RMPP, as madcm does it: the "kernel" hands up raw segments */
static int sa_table(int smlid)
{
	int fd = umad_open_port(NULL, 0), agent, len;
	void *u __attribute__((cleanup(free_ptr))) = calloc(1, umad_size() + MAD_LEN);
	uint8_t *m, *data = NULL;
	size_t dlen = 0;
	uint32_t expect = 1;

	if (fd < 0 || !u)
		return 1;
	agent = umad_register(fd, 0x03, 2, 0, NULL); /* responses only, user RMPP */
	if (agent < 0)
		return 1;
	m = umad_get_mad(u);
	m[0] = 1, m[1] = 0x03, m[2] = 2, m[3] = 0x12; /* SubnAdmGetTable */
	m[15] = 0x42;
	m[16] = 0x00, m[17] = 0x11; /* NodeRecord */
	umad_set_addr(u, smlid, 1, 0, 0x80010000);
	if (umad_send(fd, agent, u, MAD_LEN, 1000, 3))
		return 1;
	for (;;) {
		len = MAD_LEN;
		if (umad_recv(fd, u, &len, 5000) < 0 || umad_status(u)) {
			fprintf(stderr, "satable: no segment %u\n", expect);
			return 1;
		}
		m = umad_get_mad(u);
		if (m[3] != 0x92 || !(m[26] & 1) || m[25] != 1) {
			fprintf(stderr, "satable: not an RMPP DATA segment\n");
			return 1;
		}
		uint32_t seg = be32(m + 28);

		if (seg == expect) {
			data = realloc(data, dlen + 200);
			memcpy(data + dlen, m + 56, 200);
			dlen += 200;
			expect++;
		}
		/* ACK: same header, response bit flipped, window of 8 */
		ib_mad_addr_t *a = umad_get_mad_addr(u);
		uint32_t last = expect - 1, nw = last + 8;
		int is_last = (m[26] & 4) && seg == last;
		uint32_t paylen = be32(m + 32);
		uint16_t attr_off = (uint16_t)(m[44] << 8 | m[45]);

		umad_set_addr_net(u, a->lid, a->qpn, 0, a->qkey);
		m[3] ^= 0x80;
		m[25] = 2;
		m[28] = (uint8_t)(last >> 24), m[29] = (uint8_t)(last >> 16);
		m[30] = (uint8_t)(last >> 8), m[31] = (uint8_t)last;
		m[32] = (uint8_t)(nw >> 24), m[33] = (uint8_t)(nw >> 16);
		m[34] = (uint8_t)(nw >> 8), m[35] = (uint8_t)nw;
		memset(m + 36, 0, MAD_LEN - 36);
		if (umad_send(fd, agent, u, MAD_LEN, 0, 0))
			return 1;
		if (is_last) {
			size_t pad = paylen <= 220 ? 220 - paylen : 0;
			size_t total = dlen > pad ? dlen - pad : 0;

			printf("records %zu segments %u\n", attr_off ? total / (attr_off * 8u) : 0,
			       last);
			free(data);
			return 0;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || umad_init() < 0) {
		fprintf(stderr,
			"usage: %s server COUNT | client DLID COUNT | reg CLASS [SECONDS] | "
			"dupreg\n",
			argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "server") && argc >= 3)
		return server(atoi(argv[2]));
	if (!strcmp(argv[1], "client") && argc >= 4)
		return client(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(argv[1], "burst") && argc >= 4)
		return burst(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(argv[1], "reg") && argc >= 3) {
		int agent, fd = open_and_register((int)strtol(argv[2], NULL, 0), &agent);

		if (fd < 0)
			return 1;
		if (agent < 0) {
			printf("register: %s\n", strerror(-agent));
			return agent == -EINVAL ? 3 : 1;
		}
		printf("registered agent %d\n", agent);
		fflush(stdout);
		if (argc >= 4)
			sleep((unsigned)atoi(argv[3]));
		return 0;
	}
	if (!strcmp(argv[1], "get") && argc >= 5)
		return get_request(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "satable") && argc >= 3)
		return sa_table(atoi(argv[2]));
	if (!strcmp(argv[1], "dupreg")) {
		int a1, a2, fd = open_and_register(CM_CLASS, &a1);
		long mask[16 / sizeof(long)] = {1L << METHOD_SEND};

		if (fd < 0 || a1 < 0)
			return 1;
		a2 = umad_register(fd, CM_CLASS, 2, 0, mask);
		printf("first %d second %d\n", a1, a2);
		return a2 == -EINVAL ? 0 : 1;
	}
	return 2;
}
