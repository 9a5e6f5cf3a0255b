/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The address file: ibacm's hosts-file format (see madcm-hosts(5)), so an
 * existing ibacm_hosts.data works as is.  One entry a line,
 *
 *     ADDRESS GID [PKEY] [more fields, ignored]
 *
 * ADDRESS an IPv4 or IPv6 literal or a host name of up to 31 characters,
 * GID in IPv6 text form, PKEY the partition the address is in: "0x" and
 * four hex digits (an IPoIB child interface's P_Key; 0xffff when
 * absent).  A third field of another form (ibacm puts a QP number there)
 * is ignored, as are the fields after it; `#` starts a comment.  The parser takes the
 * whole text (the tests and the fuzz target drive it directly); the
 * loader reads a file into it.
 */
#ifndef MADCM_LIB_ADDR_FILE_H
#define MADCM_LIB_ADDR_FILE_H

#include <stddef.h>
#include <stdint.h>

#define MADCM_ADDR_NAME_MAX 31 /* characters of a host name, as ibacm */

/* One line of the file. */
struct madcm_addr_entry {
	int family;			    /* AF_INET, AF_INET6, or AF_UNSPEC for a name */
	uint8_t ip[16];			    /* AF_INET: 4 bytes, network order; AF_INET6: 16 */
	char name[MADCM_ADDR_NAME_MAX + 1]; /* AF_UNSPEC: the host name */
	uint8_t gid[16];
	uint16_t pkey; /* the address's P_Key, 0xffff when the line gives none */
	unsigned line;
};

/* The entries in file order (the first entry for an address wins). */
struct madcm_addr_table {
	struct madcm_addr_entry *e;
	size_t n, cap;
};

/*
 * Parse `len` bytes of `text` (need not be NUL-terminated) and append its
 * entries to `t` (zero-initialise it first).  0; -EINVAL on the first
 * broken line, with "FNAME:LINE: what" in err (when not NULL) and `t`
 * holding the entries before it; -ENOMEM.
 */
int madcm_addr_file_parse(const char *text, size_t len, const char *fname,
			  struct madcm_addr_table *t, char *err, size_t errlen);

/*
 * Read and parse the file at `path`.  -ENOENT when it does not exist
 * (err says so), -errno when it cannot be read, else as the parser.
 */
int madcm_addr_file_load(const char *path, struct madcm_addr_table *t, char *err, size_t errlen);

void madcm_addr_table_free(struct madcm_addr_table *t);

/* Lookups, first match in file order.  0 or -ENOENT. */
/* IP (AF_INET: 4 bytes, AF_INET6: 16) -> GID. */
int madcm_addr_table_gid(const struct madcm_addr_table *t, int family, const uint8_t *ip,
			 uint8_t gid[16]);
/* IP -> its entry (the GID and the P_Key), NULL when none. */
const struct madcm_addr_entry *madcm_addr_table_find(const struct madcm_addr_table *t, int family,
						     const uint8_t *ip);
/* GID -> the first address of `family` (AF_INET, AF_INET6) listed for it. */
const struct madcm_addr_entry *madcm_addr_table_ip(const struct madcm_addr_table *t,
						   const uint8_t gid[16], int family);

#endif
