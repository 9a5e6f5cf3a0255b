/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * IP -> GID through SA ServiceRecords: a madcm instance registers one
 * record per address of its port; another finds the GID of an address
 * that neither the address file nor IPoIB knows.
 *
 * The convention (also in madcm-hosts(5)).  The SA names a ServiceRecord
 * by (ServiceID, ServiceGID, ServiceP_Key), so each address gets its own
 * ServiceID, or a port's second address would replace its first:
 *
 *   ServiceID      0x10006d FF XXXXXXXX: bits 63-40 the madcm prefix
 *                  0x10006d (0x10 and 'm'), bits 39-32 the family (0x04
 *                  IPv4, 0x06 IPv6), bits 31-0 the IPv4 address, or for
 *                  IPv6 the 32-bit FNV-1a hash of its 16 bytes
 *   ServiceGID     the port GID the address maps to
 *   ServiceP_Key   the port's P_Key (0xffff when 0 is given)
 *   ServiceLease   as given (SA_SR_LEASE_INFINITE: until deleted or the
 *                  port leaves the subnet)
 *   ServiceName    "madcm:ip:" and the address in text (198.18.0.1,
 *                  2001:db8::1), for people reading saquery
 *   ServiceData8   the address in 16 bytes, IPv4 as ::ffff:a.b.c.d
 *
 * A lookup is a GetTable on ServiceID and all of ServiceData8, so an
 * IPv6 hash collision never gives a wrong GID; when several ports
 * registered the same address, the first record the SA returns wins.
 */
#ifndef MADCM_LIB_ADDR_SA_H
#define MADCM_LIB_ADDR_SA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct sa_client;
struct sa_service;

#define MADCM_ADDR_SA_ID_PREFIX 0x10006d0000000000ull
#define MADCM_ADDR_SA_ID_MASK 0xffffff0000000000ull
#define MADCM_ADDR_SA_NAME_PREFIX "madcm:ip:"

/*
 * The ServiceRecord for `ip` (AF_INET/AF_INET6, port ignored) at `gid`:
 * fills `s` and returns its component mask (ServiceID, GID, P_Key, Lease,
 * Name, Data8 0-15), or 0 for another family.  Pure: the tests check it.
 */
uint64_t madcm_addr_sa_record(struct sa_service *s, const struct sockaddr *ip,
			      const uint8_t gid[16], uint16_t pkey, uint32_t lease);

/* The ServiceID of `ip`, 0 for another family. */
uint64_t madcm_addr_sa_id(const struct sockaddr *ip);

/* Register (Set) the record of `ip` at `gid`.  0 or the SA client's -errno. */
int madcm_addr_sa_register(struct sa_client *c, const struct sockaddr *ip, const uint8_t gid[16],
			   uint16_t pkey, uint32_t lease);

/* Delete it again.  0 or -errno (-ENOENT when the SA has no such record). */
int madcm_addr_sa_unregister(struct sa_client *c, const struct sockaddr *ip, const uint8_t gid[16],
			     uint16_t pkey);

/*
 * The same Set (on) or Delete (off) without waiting: cb(arg, status) runs
 * once, on the SA client's loop (sa_service_register_async).  0 once
 * posted, or -errno (and cb is not called).
 */
int madcm_addr_sa_publish_async(struct sa_client *c, bool on, const struct sockaddr *ip,
				const uint8_t gid[16], uint16_t pkey, uint32_t lease,
				void (*cb)(void *arg, int status), void *arg);

/*
 * The GID that `ip` is registered at, and the P_Key of the record (the
 * address's partition; pkey may be NULL).  0, -ENOENT when no record
 * names it, -EAFNOSUPPORT, or the SA client's -errno.
 */
int madcm_addr_sa_resolve(struct sa_client *c, const struct sockaddr *ip, uint8_t gid[16],
			  uint16_t *pkey);
/*
 * The same through a CM runtime (cm_runtime_service_query): its own SA
 * client in-process, or madcmd's host-wide cache when the daemon serves
 * the port, so a host's programs cost one SA query per address.
 */
struct cm_runtime;
int madcm_addr_sa_resolve_rt(struct cm_runtime *rt, const struct sockaddr *ip, uint8_t gid[16],
			     uint16_t *pkey);

#endif
