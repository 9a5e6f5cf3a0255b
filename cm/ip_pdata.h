/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The rdma_cm IP private-data header and service-ID mapping.
 *
 * A kernel rdma_cm peer connecting over IP addresses (AF_INET/AF_INET6)
 * puts a 36-byte header at the start of REQ and SIDR_REQ private data and
 * the user's private data after it (the kernel's struct cma_hdr in cma.c;
 * IBA annex A11 "RDMA IP CM Service" calls it the IP CM header):
 *
 *   byte 0       cma_version, 0x00 (A11: MajV/MinV nibbles, both 0)
 *   byte 1       ip_version in the high nibble (4 or 6), low nibble reserved
 *   bytes 2-3    source port, big-endian
 *   bytes 4-19   source address
 *   bytes 20-35  destination address
 *
 * An IPv4 address sits in the last 4 bytes of its 16-byte slot; the kernel
 * zeroes the 12 bytes before it and ignores them on receive (some peers
 * reuse them), so the decoder ignores them too.  The destination port is
 * not in the header: it is the low 16 bits of the REQ's service ID.
 *
 * Service IDs: the kernel's rdma_get_service_id() maps an IP port space
 * and port to (ps << 16) + port, e.g. TCP port 7471 -> 0x0000000001061D2F.
 * TCP, UDP and IB fall in the IB_CMA_SERVICE_ID range 0x0000000001xxxxxx;
 * IPoIB (0x0002) gives 0x000000000002xxxx.
 */
#ifndef MADCM_CM_IP_PDATA_H
#define MADCM_CM_IP_PDATA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mad/field.h"

#define CM_IP_HDR_SIZE 36
#define CM_IP_CMA_VERSION 0x00

#define CM_IP_HDR_FIELDS(X, P)                                                                     \
	X(P, CMA_VERSION, cma_version, 0, 0, 8, MF_HEX)                                            \
	X(P, IP_VERSION, ip_version, 1, 0, 4, MF_DEC)                                              \
	X(P, RESERVED_1, reserved_1, 1, 4, 4, MF_RSVD)                                             \
	X(P, SOURCE_PORT, source_port, 2, 0, 16, MF_DEC)                                           \
	X(P, SOURCE_ADDR, source_addr, 4, 0, 128, MF_BYTES)                                        \
	X(P, DESTINATION_ADDR, destination_addr, 20, 0, 128, MF_BYTES)

enum { CM_IP_HDR_FIELDS(MAD_FIELD_ENUM, CM_IP_HDR) CM_IP_HDR__COUNT };
extern const struct mad_field cm_ip_hdr_fields[CM_IP_HDR__COUNT];
/* Offset-neutral (mad_offset 0): it sits at the start of private data. */
extern const struct mad_layout cm_ip_hdr_layout;

/*
 * Write the header for a connection from `src` to `dst` into `buf`
 * (len >= 36).  Both must be AF_INET or both AF_INET6; the source port is
 * taken from `src`.  Returns 0, or -EINVAL (NULL, short buffer, families
 * that differ or are not IP).
 */
int cm_ip_hdr_encode(void *buf, size_t len, const struct sockaddr *src, const struct sockaddr *dst);

/*
 * Read the header from `buf` (len >= 36) into `src` and `dst` (either may
 * be NULL), as sockaddr_in or sockaddr_in6 by the header's IP version.
 * `src` gets the source port; `dst` gets `dst_port` (from the service ID,
 * see cm_sid_to_ps_port; host order).  Returns 0, or -EINVAL (NULL or short
 * buffer), -EPROTONOSUPPORT (cma_version not 0), -EAFNOSUPPORT (IP version
 * neither 4 nor 6).  Never reads past `len`.
 */
int cm_ip_hdr_decode(const void *buf, size_t len, uint16_t dst_port, struct sockaddr_storage *src,
		     struct sockaddr_storage *dst);

/* Port spaces (librdmacm's enum rdma_port_space, rdma/rdma_cma.h). */
enum cm_port_space {
	CM_PS_IPOIB = 0x0002,
	CM_PS_TCP = 0x0106,
	CM_PS_UDP = 0x0111,
	CM_PS_IB = 0x013F,
};

/* The kernel's IB_CMA_SERVICE_ID range (TCP, UDP and IB port spaces). */
#define CM_SID_CMA_PREFIX 0x0000000001000000ull
#define CM_SID_CMA_MASK 0xFFFFFFFFFF000000ull

/*
 * Service ID of `port` in port space `ps` ((ps << 16) + port), in *sid.
 * Returns 0, or -EINVAL for a NULL sid or a port space not listed above.
 */
int cm_sid_from_ps_port(unsigned ps, uint16_t port, uint64_t *sid);

/*
 * The inverse: returns 0 with the port space and port (either pointer may
 * be NULL), or -EINVAL when `sid` is not an rdma_cm service ID (high 32
 * bits not zero, or bits 16..31 not one of the port spaces).
 */
int cm_sid_to_ps_port(uint64_t sid, unsigned *ps, uint16_t *port);

/* "TCP", "UDP", "IPoIB", "IB", or NULL. */
const char *cm_ps_name(unsigned ps);

#endif
