/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm: native InfiniBand socket addresses (infiniband/ib.h).
 *
 * Written for madcm from the documented librdmacm API.  An AF_IB address
 * names a GID, a P_Key and a service ID directly; madcm accepts it wherever
 * librdmacm takes a struct sockaddr.  All multi-byte fields are big-endian.
 */
#if !defined(_RDMA_IB_H)
#define _RDMA_IB_H

#include <linux/types.h>
#include <endian.h>
#include <string.h>

/* The family number Linux reserves for InfiniBand addresses */
#ifndef AF_IB
#define AF_IB 27
#endif
#ifndef PF_IB
#define PF_IB AF_IB
#endif

/* A 128-bit GID seen as bytes, 16-, 32- or 64-bit words */
struct ib_addr {
	union {
		__u8 uib_addr8[16];
		__be16 uib_addr16[8];
		__be32 uib_addr32[4];
		__be64 uib_addr64[2];
	} ib_u;
/* Short names of the views, as a struct member: a.sib_addr64[0] ... */
#define sib_addr8 ib_u.uib_addr8
#define sib_addr16 ib_u.uib_addr16
#define sib_addr32 ib_u.uib_addr32
#define sib_addr64 ib_u.uib_addr64
#define sib_raw ib_u.uib_addr8
#define sib_subnet_prefix ib_u.uib_addr64[0]
#define sib_interface_id ib_u.uib_addr64[1]
};

/* Nonzero if a is the all-zero (wildcard) GID. */
static inline int ib_addr_any(const struct ib_addr *a)
{
	return (a->sib_addr64[0] | a->sib_addr64[1]) == 0;
}

/* Nonzero if a is the loopback GID ::1. */
static inline int ib_addr_loopback(const struct ib_addr *a)
{
	__be32 low = a->sib_addr32[3] ^ htobe32(1);

	return (a->sib_addr32[0] | a->sib_addr32[1] | a->sib_addr32[2] | low) == 0;
}

/* Fill addr from four big-endian 32-bit words, most significant first. */
static inline void ib_addr_set(struct ib_addr *addr, __be32 w1, __be32 w2, __be32 w3, __be32 w4)
{
	addr->sib_addr32[0] = w1;
	addr->sib_addr32[1] = w2;
	addr->sib_addr32[2] = w3;
	addr->sib_addr32[3] = w4;
}

/* memcmp() order of two GIDs: 0 when equal. */
static inline int ib_addr_cmp(const struct ib_addr *a1, const struct ib_addr *a2)
{
	return memcmp(a1, a2, sizeof(*a1));
}

/* struct sockaddr of family AF_IB */
struct sockaddr_ib {
	unsigned short int sib_family; /* AF_IB */
	__be16 sib_pkey;
	__be32 sib_flowinfo;	 /* low 20 bits: flow label */
	struct ib_addr sib_addr; /* the GID */
	__be64 sib_sid;		 /* service ID */
	__be64 sib_sid_mask;	 /* listen: which sib_sid bits must match */
	__u64 sib_scope_id;
};

#endif /* _RDMA_IB_H */
