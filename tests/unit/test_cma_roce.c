/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * RoCE in lib/ (lib/cma_roce.c) on fake GID tables: the sysfs reader (a
 * fake tree: GIDs in sysfs's text form, types "IB/RoCE v1" / "RoCE v2",
 * holes), IP address <-> GID (IPv4-mapped), which local GID a destination
 * is reached from (RoCE v2 first), and the route built from two GIDs as the
 * kernel's cma_resolve_iboe_route builds it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "lib/cma.h"
#include "lib/cma_roce.h"
#include "cm/cm_wire.h"
#include "cm/engine.h"
#include "cm/ip_pdata.h"
#include "mad/timer.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256], dir[256], *s;
	FILE *f;

	snprintf(path, sizeof(path), "%s/class/infiniband/rxe0/ports/1/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (s = dir + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(dir, 0755);
		*s = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

static const char *zero = "0000:0000:0000:0000:0000:0000:0000:0000";

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_cma_roce.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	/* What rxe shows with 10.77.0.1 and fd77::1 on its netdev (plus holes). */
	put("gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3401");
	put("gid_attrs/types/0", "RoCE v2");
	put("gid_attrs/ndevs/0", "eth0");
	put("gids/1", "0000:0000:0000:0000:0000:ffff:0a4d:0001");
	put("gid_attrs/types/1", "IB/RoCE v1");
	put("gids/2", zero);
	put("gids/3", "0000:0000:0000:0000:0000:ffff:0a4d:0001");
	put("gid_attrs/types/3", "RoCE v2");
	put("gid_attrs/ndevs/3", "eth0");
	put("gids/4", "fd77:0000:0000:0000:0000:0000:0000:0001");
	put("gid_attrs/types/4", "RoCE v2");
	put("gids/5", zero);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) ? -1 : 0;
}

static void gid(const char *text, uint8_t out[16])
{
	assert_int_equal(inet_pton(AF_INET6, text, out), 1);
}

/* The reader keeps the valid entries with their index, type and netdev. */
static void test_read_gids(void **state)
{
	struct cma_gid_table t;
	uint8_t g[16];

	(void)state;
	assert_int_equal(cma_roce_read_gids(root, "rxe0", 1, &t), 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.e[0].index, 0);
	assert_int_equal(t.e[0].type, CMA_GID_ROCE_V2);
	assert_string_equal(t.e[0].ndev, "eth0");
	gid("fe80::5054:ff:fe12:3401", g);
	assert_memory_equal(t.e[0].gid, g, 16);
	assert_int_equal(t.e[1].index, 1);
	assert_int_equal(t.e[1].type, CMA_GID_IB_ROCE_V1);
	assert_int_equal(t.e[2].index, 3);
	assert_int_equal(t.e[3].index, 4);
	assert_string_equal(t.e[3].ndev, "");
	assert_int_equal(cma_roce_read_gids(root, "rxe0", 2, &t), -ENOENT);
	assert_int_equal(cma_roce_read_gids(root, "mlx5_0", 1, &t), -ENOENT);
}

/* IPv4 is the IPv4-mapped GID, IPv6 the address itself; and back. */
static void test_addr_gid(void **state)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr_storage ss;
	uint8_t g[16], want[16];

	(void)state;
	inet_pton(AF_INET, "10.77.0.2", &s4.sin_addr);
	assert_int_equal(cma_roce_addr_gid((struct sockaddr *)&s4, g), 0);
	gid("::ffff:10.77.0.2", want);
	assert_memory_equal(g, want, 16);
	assert_true(cma_roce_gid_v4mapped(g));
	assert_int_equal(cma_roce_gid_addr(g, AF_INET, &ss), 0);
	assert_int_equal(((struct sockaddr_in *)&ss)->sin_addr.s_addr, s4.sin_addr.s_addr);
	inet_pton(AF_INET6, "fd77::2", &s6.sin6_addr);
	assert_int_equal(cma_roce_addr_gid((struct sockaddr *)&s6, g), 0);
	assert_memory_equal(g, &s6.sin6_addr, 16);
	assert_false(cma_roce_gid_v4mapped(g));
	assert_int_equal(cma_roce_gid_addr(g, AF_INET, &ss), -EAFNOSUPPORT);
}

/* An address present as RoCE v1 and v2 entries is the v2 one. */
static void test_gid_index_prefers_v2(void **state)
{
	struct cma_gid_table t;
	uint8_t g[16];
	int i;

	(void)state;
	assert_int_equal(cma_roce_read_gids(root, "rxe0", 1, &t), 0);
	gid("::ffff:10.77.0.1", g);
	i = cma_roce_gid_index(&t, g);
	assert_true(i >= 0);
	assert_int_equal(t.e[i].index, 3);
	gid("::ffff:10.77.0.9", g);
	assert_int_equal(cma_roce_gid_index(&t, g), -1);
}

/* Which local GID a destination is reached from. */
static void test_sgid_for(void **state)
{
	struct cma_gid_table t;
	const struct cma_gid_entry *e;
	uint8_t d[16];

	(void)state;
	assert_int_equal(cma_roce_read_gids(root, "rxe0", 1, &t), 0);
	gid("::ffff:10.77.0.2", d);
	e = cma_roce_sgid_for(&t, d);
	assert_non_null(e);
	assert_int_equal(e->index, 3); /* IPv4-mapped, RoCE v2 over v1 */
	gid("fe80::5054:ff:fe12:3402", d);
	e = cma_roce_sgid_for(&t, d);
	assert_non_null(e);
	assert_int_equal(e->index, 0);
	gid("fd77::2", d);
	e = cma_roce_sgid_for(&t, d);
	assert_non_null(e);
	assert_int_equal(e->index, 4); /* same /64 */
	gid("2001:db8::2", d);
	e = cma_roce_sgid_for(&t, d);
	assert_non_null(e);
	assert_int_equal(e->index, 4); /* a global IPv6 GID, not link-local or mapped */
	t.n = 2;		       /* only fe80 and the v1 IPv4 GID */
	assert_null(cma_roce_sgid_for(&t, d));
	gid("::ffff:10.77.0.2", d);
	assert_int_equal(cma_roce_sgid_for(&t, d)->index, 1);
}

/* iboe_get_mtu: the netdev MTU less the RoCE headers, rounded down. */
static void test_netdev_mtu(void **state)
{
	(void)state;
	assert_int_equal(cma_roce_netdev_mtu(1500), IBV_MTU_1024);
	assert_int_equal(cma_roce_netdev_mtu(9000), IBV_MTU_4096);
	assert_int_equal(cma_roce_netdev_mtu(4200), IBV_MTU_4096);
	assert_int_equal(cma_roce_netdev_mtu(4000), IBV_MTU_2048);
	assert_int_equal(cma_roce_netdev_mtu(1100), IBV_MTU_512);
	assert_int_equal(cma_roce_netdev_mtu(100), 0);
}

/* The route of a kernel REQ over rxe: what the kernel puts in its REQ. */
static void test_path(void **state)
{
	struct cm_path p;
	uint8_t s[16], d[16];

	(void)state;
	gid("::ffff:10.77.0.2", s);
	gid("::ffff:10.77.0.1", d);
	cma_roce_path(&p, s, d, CMA_GID_ROCE_V2, IBV_MTU_4096, 1500, 0);
	assert_int_equal(p.slid, 0xffff);
	assert_int_equal(p.dlid, 0xffff);
	assert_memory_equal(p.sgid, s, 16);
	assert_memory_equal(p.dgid, d, 16);
	assert_int_equal(p.subnet_local, 0);
	assert_int_equal(p.hop_limit, 64);
	assert_int_equal(p.traffic_class, 0);
	assert_int_equal(p.mtu, IBV_MTU_1024); /* the netdev's 1500 */
	assert_int_equal(p.pkey, 0xffff);
	assert_int_equal(p.sl, 0);
	assert_int_equal(p.packet_life_time, 18);
	assert_int_equal(p.local_ack_timeout, 19);
	/* The port's MTU when smaller; TOS as traffic class; v1 stays on the link. */
	cma_roce_path(&p, s, d, CMA_GID_IB_ROCE_V1, IBV_MTU_512, 9000, 0x20);
	assert_int_equal(p.mtu, IBV_MTU_512);
	assert_int_equal(p.traffic_class, 0x20);
	assert_int_equal(p.hop_limit, 1);
	/* Netdev unknown: the port's MTU. */
	cma_roce_path(&p, s, d, CMA_GID_ROCE_V2, IBV_MTU_1024, 0, 0);
	assert_int_equal(p.mtu, IBV_MTU_1024);
}

/*
 * The REQ the kernel's rdma_cm sent over rxe (Linux 6.1, rping -c to
 * 10.77.0.1 port 7174 from 10.77.0.2, source port 0xd200), as captured by
 * a user-space CM agent in the test bed (tests/kernel): what is not
 * listed is zero.
 */
static void kernel_req(uint8_t m[256])
{
	static const struct {
		unsigned off;
		uint8_t b[16];
		unsigned n;
	} rows[] = {
	    {0, {0x01, 0x07, 0x02, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x6b, 0xb6, 0x1c, 0xe0}, 16},
	    {16, {0x00, 0x10, 0, 0, 0, 0, 0, 0, 0xe0, 0x1c, 0xb6, 0x6b}, 12},
	    {32,
	     {0, 0, 0, 0, 0x01, 0x06, 0x1c, 0x06, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x02},
	     16},
	    {48, {0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x11, 0x01, 0x00, 0x00, 0x00, 0x01}, 16},
	    {64,
	     {0x00, 0x00, 0x00, 0xa0, 0x0e, 0xba, 0x68, 0xa7, 0xff, 0xff, 0x37, 0xf0, 0xff, 0xff,
	      0xff, 0xff},
	     16},
	    {80, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0a, 0x4d, 0x00, 0x02}, 16},
	    {96, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0a, 0x4d, 0x00, 0x01}, 16},
	    {112, {0x98, 0xa0, 0x60, 0x00, 0x00, 0x40, 0x00, 0x98}, 8},
	    {164, {0x00, 0x40, 0xd2, 0x00}, 4}, /* IP CM header: v0, IPv4, sport */
	    {180, {0x0a, 0x4d, 0x00, 0x02}, 4}, /* source 10.77.0.2 */
	    {196, {0x0a, 0x4d, 0x00, 0x01}, 4}, /* destination 10.77.0.1 */
	};

	memset(m, 0, 256);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		memcpy(m + rows[i].off, rows[i].b, rows[i].n);
}

static uint8_t sent[256];
static struct mad_addr sent_to;
static int nsent;

static int capture(void *ctx, const struct mad_addr *to, const void *mad, size_t len)
{
	(void)ctx;
	sent_to = *to;
	if (len == sizeof(sent))
		memcpy(sent, mad, len);
	nsent++;
	return 0;
}

static void ignore(void *ctx, const struct cm_event *ev)
{
	(void)ctx;
	(void)ev;
}

static uint32_t kernel_comm_id(void *ctx)
{
	(void)ctx;
	return 0xe01cb66b; /* the kernel's random local comm ID, as sent */
}

static uint64_t clock0(void *ctx)
{
	(void)ctx;
	return 0;
}

/*
 * madcm's REQ for the same connection, from the same pieces lib/ uses
 * (cma_roce_path, cma_roce_flow_label, the IP CM header, lib's REQ
 * parameters), equals the kernel's byte for byte once the random fields
 * are taken from it: the TID and the comm ID (random in both), the
 * starting PSN and the QPN (given), the CA GUID (the device's).
 */
static void test_req_as_kernel(void **state)
{
	static const struct cm_engine_ops ops = {.send = capture, .event = ignore};
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(0xd200)};
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(7174)};
	struct mad_timer_heap timers;
	struct cm_engine_config cfg = {.ca_guid = 0x505400fffe123402ull,
				       .port_num = 1,
				       .timers = &timers,
				       .ops = &ops,
				       .random32 = kernel_comm_id};
	struct cm_connect_cmd c;
	struct cm_engine *e;
	uint8_t sgid[16], dgid[16], want[256];
	uint32_t id;

	(void)state;
	inet_pton(AF_INET, "10.77.0.2", &src.sin_addr);
	inet_pton(AF_INET, "10.77.0.1", &dst.sin_addr);
	assert_int_equal(cma_roce_addr_gid((struct sockaddr *)&src, sgid), 0);
	assert_int_equal(cma_roce_addr_gid((struct sockaddr *)&dst, dgid), 0);
	memset(&c, 0, sizeof(c));
	/* rxe: port MTU 1024, netdev 1500; TOS 0 */
	cma_roce_path(&c.primary, sgid, dgid, CMA_GID_ROCE_V2, 3, 1500, 0);
	c.primary.flow_label =
	    cma_roce_flow_label((struct sockaddr *)&src, (struct sockaddr *)&dst);
	assert_int_equal(c.primary.flow_label, 0x98a06);
	c.primary.sgid_index = 1; /* rxe's IPv4-mapped GID, as the route finds it */
	/* What rdma_connect puts in the command (lib/cma_conn.c), rping's parameters. */
	c.service_id = cma_service_id(RDMA_PS_TCP, 7174);
	c.qpn = 0x11;
	c.starting_psn = 0x0eba68;
	c.qp_type = CM_QPT_RC;
	c.responder_resources = 1;
	c.initiator_depth = 1;
	c.remote_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
	c.local_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
	c.max_cm_retries = CMA_MAX_CM_RETRIES;
	c.retry_count = 7;
	c.rnr_retry_count = 7;
	assert_int_equal(cm_ip_hdr_encode(c.private_data, sizeof(c.private_data),
					  (struct sockaddr *)&src, (struct sockaddr *)&dst),
			 0);
	c.private_data_len = CMA_IP_HDR_SIZE;

	mad_timer_heap_init(&timers, clock0, NULL);
	assert_int_equal(cm_engine_create(&cfg, &e), 0);
	nsent = 0;
	assert_int_equal(cm_engine_connect(e, &c, &id), 0);
	assert_int_equal(nsent, 1);
	kernel_req(want);
	memcpy(sent + 8, want + 8, 8); /* the TID: random on both sides */
	for (int i = 0; i < 256; i++)
		if (sent[i] != want[i])
			fail_msg("byte %d: madcm 0x%02x, kernel 0x%02x", i, sent[i], want[i]);
	/* To QP1 with a GRH from the route's GID index: the transport scans no table. */
	assert_true(sent_to.grh_present);
	assert_int_equal(sent_to.qpn, 1);
	assert_int_equal(sent_to.gid_index, 1);
	assert_memory_equal(sent_to.gid, dgid, 16);
	assert_int_equal(sent_to.hop_limit, 64);
	assert_int_equal(sent_to.flow_label, 0x98a06);
	cm_engine_destroy(e);
	mad_timer_heap_destroy(&timers);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_gids),
	    cmocka_unit_test(test_addr_gid),
	    cmocka_unit_test(test_gid_index_prefers_v2),
	    cmocka_unit_test(test_sgid_for),
	    cmocka_unit_test(test_netdev_mtu),
	    cmocka_unit_test(test_path),
	    cmocka_unit_test(test_req_as_kernel),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
