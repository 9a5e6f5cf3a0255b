/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * IPoIB through rtnetlink: what the kernel's rdma_cm learns from the IPoIB
 * interfaces, read from user space.
 *
 *   RTM_GETLINK   links of type ARPHRD_INFINIBAND; their 20-byte hardware
 *                 address is flags+QPN (4 bytes) then the port GID (16);
 *                 their P_Key (a child interface's partition) is
 *                 IFLA_IPOIB_PKEY in IFLA_LINKINFO's data, else bytes
 *                 8-9 of the broadcast address (the MGID's P_Key bytes)
 *   RTM_GETADDR   the IPv4/IPv6 addresses of those links: local addresses
 *                 of that port GID
 *   RTM_GETNEIGH  their neighbours: IP -> 20-byte lladdr -> remote GID
 *
 * The parsers take a received buffer (one recv() of a dump reply, any
 * number of messages), so tests feed canned replies; addresses and
 * neighbours are kept only for links already seen, so dump the links
 * first.  madcm_nl_dump() runs the three dumps on a live socket.
 */
#ifndef MADCM_LIB_ADDR_NETLINK_H
#define MADCM_LIB_ADDR_NETLINK_H

#include <stddef.h>
#include <stdint.h>

#define MADCM_NL_IFNAME 16
#define MADCM_NL_HWADDR_LEN 20 /* IPoIB hardware address */

struct madcm_nl_link {
	int ifindex;
	char name[MADCM_NL_IFNAME];
	uint8_t gid[16];
	uint16_t pkey; /* 0xffff when the kernel gives none */
};

/* A local address (RTM_GETADDR) or a neighbour (RTM_GETNEIGH). */
struct madcm_nl_ip {
	int ifindex;
	int family;	/* AF_INET or AF_INET6 */
	uint8_t ip[16]; /* AF_INET: 4 bytes */
	uint8_t gid[16];
	uint16_t pkey; /* its link's P_Key */
};

struct madcm_nl_table {
	struct madcm_nl_link *links;
	size_t nlinks, links_cap;
	struct madcm_nl_ip *addrs;
	size_t naddrs, addrs_cap;
	struct madcm_nl_ip *neighs;
	size_t nneighs, neighs_cap;
};

/*
 * Parse `len` bytes of rtnetlink messages into `t` (zero-initialise it
 * first): RTM_NEWLINK, RTM_NEWADDR and RTM_NEWNEIGH; other types are
 * skipped, as are messages whose sequence number is not `seq` (unless
 * `seq` is 0).  Returns 1 when NLMSG_DONE was seen (the dump is
 * complete), 0 when more is to come, the negated error of an
 * NLMSG_ERROR, -EINVAL for a malformed buffer (what came before it is
 * kept), -ENOMEM.
 */
int madcm_nl_parse(struct madcm_nl_table *t, const void *buf, size_t len, uint32_t seq);

/*
 * Dump links, then (when there is an InfiniBand link) addresses and
 * neighbours from the kernel.  0 (possibly with nothing found), or
 * -errno of the socket; `t` keeps what was read.
 */
int madcm_nl_dump(struct madcm_nl_table *t);

void madcm_nl_table_free(struct madcm_nl_table *t);

/* Lookups: 0 or -ENOENT. */
const struct madcm_nl_link *madcm_nl_link_find(const struct madcm_nl_table *t, int ifindex);
/* Neighbours, then local addresses: IP -> GID. */
int madcm_nl_gid(const struct madcm_nl_table *t, int family, const uint8_t *ip, uint8_t gid[16]);
/* Neighbours, then local addresses: IP -> its entry (GID, P_Key), NULL when none. */
const struct madcm_nl_ip *madcm_nl_find(const struct madcm_nl_table *t, int family,
					const uint8_t *ip);
/*
 * GID -> a local address of `family` on a link with that GID, a global
 * one before a link-local one (whose ifindex is then its scope); NULL
 * when there is none.
 */
const struct madcm_nl_ip *madcm_nl_local_ip(const struct madcm_nl_table *t, const uint8_t gid[16],
					    int family);

#endif
