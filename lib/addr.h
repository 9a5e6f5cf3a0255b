/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Address resolution without the kernel: IP or host name -> port GID, and
 * a local port GID -> its IP address, from (in this order)
 *
 *   1. the address file (ibacm's hosts format, madcm-hosts(5)):
 *      $MADCM_ADDR_FILE if set, else /etc/rdma/madcm_hosts, else
 *      /etc/rdma/ibacm_hosts.data;
 *   2. the IPoIB interfaces and their neighbours, read with rtnetlink
 *      (lib/addr_netlink.h) when the host has any;
 *   3. SA ServiceRecords (lib/addr_sa.h), which the caller asks itself
 *      when the two above do not know an address.
 *
 * Loopback and wildcard addresses are not special here: the caller binds
 * them to a port of its own.  A struct madcm_addrs is read-only once
 * open: lookups may run on any number of threads at once.
 */
#ifndef MADCM_LIB_ADDR_H
#define MADCM_LIB_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct madcm_addrs; /* every address source, loaded once */
struct madcm_nl_table;

#define MADCM_ADDR_FILE_ENV "MADCM_ADDR_FILE"
#define MADCM_ADDR_FILE_DEFAULT "/etc/rdma/madcm_hosts"
#define MADCM_ADDR_FILE_IBACM "/etc/rdma/ibacm_hosts.data"

/*
 * Load the sources: the address file ($MADCM_ADDR_FILE if set, else
 * /etc/rdma/madcm_hosts, else /etc/rdma/ibacm_hosts.data; a missing
 * default file is not an error, a missing $MADCM_ADDR_FILE is; set to the
 * empty string, no file is read), and the IPoIB interfaces/neighbours via
 * rtnetlink when there are any (a netlink error only leaves that source
 * empty).  0; -EINVAL on a broken line, with "FILE:LINE: ..." in err (if
 * non-NULL); -ENOENT / -errno when a file that must be read cannot be,
 * with "FILE: reason" in err; -ENOMEM.
 */
int madcm_addrs_open(struct madcm_addrs **out, char *err, size_t errlen);

struct madcm_addrs_params {
	const char *file;		      /* NULL: as madcm_addrs_open; "": none */
	bool no_netlink;		      /* no rtnetlink dump */
	const struct madcm_nl_table *netlink; /* a copy of this instead of the dump (tests) */
};
/* madcm_addrs_open with the sources chosen by `p` (NULL: the defaults). */
int madcm_addrs_open_params(struct madcm_addrs **out, const struct madcm_addrs_params *p, char *err,
			    size_t errlen);

void madcm_addrs_close(struct madcm_addrs *a);

/* The address file that was read, NULL when none was. */
const char *madcm_addrs_file(const struct madcm_addrs *a);

/*
 * IP (AF_INET/AF_INET6, an IPv4-mapped IPv6 address counts as IPv4; port
 * ignored) -> GID, from the file, then the netlink neighbours, then the
 * local interface addresses.  0, -ENOENT, -EAFNOSUPPORT for another
 * family.
 */
int madcm_addrs_gid(const struct madcm_addrs *a, const struct sockaddr *ip, uint8_t gid[16]);

/*
 * madcm_addrs_gid, and the P_Key of the address's partition in *pkey (when
 * not NULL): the file line's third column, or the IPoIB link's P_Key;
 * 0xffff (the default partition) when the source gives none.
 */
int madcm_addrs_gid_pkey(const struct madcm_addrs *a, const struct sockaddr *ip, uint8_t gid[16],
			 uint16_t *pkey);

/*
 * GID -> an address of `family` (AF_INET or AF_INET6; AF_UNSPEC: IPv4
 * first) that maps to it, port 0 (an IPv6 link-local one from netlink
 * has its interface as scope id): how the library finds its own source
 * address from a local port GID.  The file's first address line for the
 * GID, else an address of an IPoIB interface with that GID.  0, -ENOENT,
 * -EAFNOSUPPORT.
 */
int madcm_addrs_ip(const struct madcm_addrs *a, const uint8_t gid[16], int family,
		   struct sockaddr_storage *out);

/*
 * Host name (case-insensitive) -> addresses: the name lines of the file
 * give GIDs, whose address lines (then the IPoIB interface addresses of
 * those GIDs) give the IPs of `family` (AF_UNSPEC: the IPv4 ones, then
 * the IPv6 ones), without duplicates, port 0, at most n into out[].
 * Returns how many (0: unknown name or no address), -EAFNOSUPPORT.  For
 * rdma_getaddrinfo("h2", ...).
 */
int madcm_addrs_name(const struct madcm_addrs *a, const char *name, int family,
		     struct sockaddr_storage *out, int n);

#endif
