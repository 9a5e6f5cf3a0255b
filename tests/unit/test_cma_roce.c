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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_gids),
	    cmocka_unit_test(test_addr_gid),
	    cmocka_unit_test(test_gid_index_prefers_v2),
	    cmocka_unit_test(test_sgid_for),
	    cmocka_unit_test(test_netdev_mtu),
	    cmocka_unit_test(test_path),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
