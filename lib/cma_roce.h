/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * RoCE (link layer Ethernet) for lib/: no SM, no SA, no address file.
 * As the kernel's cma.c does on RoCE ports:
 *   - a local IP address is a GID of the port's GID table (RoCE v2
 *     preferred; IPv4 as the IPv4-mapped GID ::ffff:a.b.c.d), the GID types
 *     read from sysfs (gid_attrs/types);
 *   - a remote IP address becomes its GID the same way, with no lookup;
 *   - the route is built from the two GIDs (cma_resolve_iboe_route): no
 *     LIDs (0xffff on the wire, as the kernel's REQs carry), a GRH (hop
 *     limit 64 for RoCE v2, 1 for v1), traffic class from RDMA_OPTION_ID_TOS,
 *     the MTU of the port and its netdev, P_Key 0xffff, packet life time 18;
 *   - the QP's address vector and the CM MADs use the source GID index of
 *     the local GID (the engine leaves it 0).
 * The table functions are pure (tests/unit/test_cma_roce.c runs them on fake
 * tables and a fake sysfs tree); the port hooks keep a side table of the
 * Ethernet ports, filled when lib/cma_init.c opens a device.
 */
#ifndef MADCM_LIB_CMA_ROCE_H
#define MADCM_LIB_CMA_ROCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "cm/engine.h"

struct cma_id;
struct cma_port;
struct cm_runtime_params;

enum cma_gid_type {
	CMA_GID_IB_ROCE_V1, /* sysfs "IB/RoCE v1" */
	CMA_GID_ROCE_V2,    /* sysfs "RoCE v2" */
};

#define CMA_ROCE_MAX_GIDS 64	    /* non-zero entries kept per port */
#define CMA_ROCE_PACKET_LIFETIME 18 /* kernel CMA_IBOE_PACKET_LIFETIME */
#define CMA_ROCE_HOP_LIMIT 64	    /* RoCE v2: the IP TTL the kernel's route gives */

struct cma_gid_entry {
	uint16_t index;
	uint8_t type; /* enum cma_gid_type */
	uint8_t gid[16];
	char ndev[32]; /* gid_attrs/ndevs: the netdev of the entry ("" unknown) */
};

struct cma_gid_table {
	unsigned n;
	struct cma_gid_entry e[CMA_ROCE_MAX_GIDS];
};

/*
 * Read the valid entries of SYSFS/class/infiniband/DEV/ports/PORT/gids/N
 * with their types (SYSFS: "/sys", or a fake tree in tests).  Stops after
 * 64 empty entries in a row.  0, or -errno (-ENOENT: no such port).
 */
int cma_roce_read_gids(const char *sysfs, const char *dev, unsigned port, struct cma_gid_table *t);

/* The GID an IP address is on RoCE: IPv4 -> ::ffff:a.b.c.d, IPv6 as is. */
int cma_roce_addr_gid(const struct sockaddr *sa, uint8_t gid[16]);
/* The IP address of a GID for a family (AF_INET: IPv4-mapped only). */
int cma_roce_gid_addr(const uint8_t gid[16], int family, struct sockaddr_storage *out);
static inline bool cma_roce_gid_v4mapped(const uint8_t g[16])
{
	static const uint8_t pfx[12] = {[10] = 0xff, [11] = 0xff};

	for (int i = 0; i < 12; i++)
		if (g[i] != pfx[i])
			return false;
	return true;
}

/* Index of this GID in the table (RoCE v2 entry first), or -1. */
int cma_roce_gid_index(const struct cma_gid_table *t, const uint8_t gid[16]);
/*
 * The local GID to reach `dgid` from, when only the destination is known:
 * an IPv4-mapped DGID wants an IPv4-mapped local GID, a link-local DGID the
 * link-local one, others a GID of the same /64 prefix, else any IPv6 GID
 * that is not IPv4-mapped; RoCE v2 first.  Returns the table entry or NULL.
 */
const struct cma_gid_entry *cma_roce_sgid_for(const struct cma_gid_table *t,
					      const uint8_t dgid[16]);

/* IB MTU enum (1..5) for a netdev MTU, as the kernel's iboe_get_mtu. */
uint8_t cma_roce_netdev_mtu(unsigned netdev_mtu);

/*
 * A RoCE path (seen from the local side) from sgid to dgid: no LIDs, a GRH,
 * MTU min(port_mtu, netdev's), traffic class `tos`, hop limit by GID type.
 */
/*
 * The flow label of a RoCE v2 connection, as the kernel's
 * cma_get_roce_udp_flow_label: the IPv6 source's own flow label, else a
 * hash of the two ports ((sport * 31 + dport) & 0xfffff).  rxe takes the
 * UDP source port of the connection's packets from it.
 */
uint32_t cma_roce_flow_label(const struct sockaddr *src, const struct sockaddr *dst);
void cma_roce_path(struct cm_path *out, const uint8_t sgid[16], const uint8_t dgid[16],
		   enum cma_gid_type type, uint8_t port_mtu, unsigned netdev_mtu, uint8_t tos);

/* ---- hooks (lib/cma_init.c, lib/cma_addr.c, lib/cma_conn.c) ---- */

/* cma_init.c: a port was queried; Ethernet ports become RoCE ports. */
void cma_roce_port_init(struct cma_port *p, const struct ibv_port_attr *pa);
bool cma_roce_port(const struct cma_port *p);
/* cma_init.c: a failed init forgets the ports it noted (their devices are closed). */
void cma_roce_ports_forget(void);
/* cma_init.c: runtime parameters of a RoCE port (no SA; QP moves fix the SGID index). */
void cma_roce_runtime_params(struct cma_port *p, struct cm_runtime_params *rp);
/*
 * cma_init.c: the kernel's ib_cm owns the CM class (method Send) of every
 * port of this host's kernel devices: madcm cannot run beside it.  Returns
 * 0, or -EBUSY after printing why (once).
 */
int cma_roce_kernel_cm_check(void);
/* Under cma.lock.  bind: the RoCE port that has addr's GID (and the GID). */
struct cma_port *cma_roce_bind_port(const struct sockaddr *addr, uint8_t gid[16]);
/*
 * Under cma.lock.  resolve_addr: when dst is reached over RoCE (the id's
 * port is a RoCE port, or an unbound id and an active RoCE port has a GID
 * of dst's family), fill *port, the SGID (of the bound source, else the
 * chosen local GID, also written to a wildcard src) and the DGID from the
 * address itself.  0, or -ENOENT (not RoCE: use the address sources).
 */
int cma_roce_resolve(struct cma_id *id, const struct sockaddr *dst, struct cma_port **port,
		     uint8_t sgid[16], uint8_t dgid[16]);
/* Under cma.lock.  resolve_route on a RoCE port: the path from the GIDs. */
int cma_roce_route(struct cma_id *id, struct cm_path *out);
/* The QP attributes of a RoCE id get the SGID index of their GRH. */
void cma_roce_qp_attr(struct cma_port *p, struct ibv_qp_attr *attr, int mask);
/* The same for an address handle (UD peers, multicast groups): its SGID index. */
void cma_roce_ah_attr(struct cma_port *p, struct ibv_ah_attr *ah);
struct sa_mcmember;
/*
 * A join on a RoCE port: the membership made without an SA
 * (cma_iboe_join_multicast); *igmp_fd, when not -1, holds the IPv4 group
 * on the netdev and is closed when the membership ends.
 */
int cma_roce_mc_join(struct cma_id *id, const struct sockaddr *addr, uint32_t qkey,
		     struct sa_mcmember *rec, int *igmp_fd);

#endif
