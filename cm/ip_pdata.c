/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* rdma_cm IP private-data header and service IDs (see ip_pdata.h). */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "cm/ip_pdata.h"

const struct mad_field cm_ip_hdr_fields[CM_IP_HDR__COUNT] = {
    CM_IP_HDR_FIELDS(MAD_FIELD_ENTRY, CM_IP_HDR)};

const struct mad_layout cm_ip_hdr_layout = {
    "IpCmHeader", "IP_CM", 0, 0, 0, CM_IP_HDR_SIZE, MAD_LAYOUT_FIELDS(cm_ip_hdr_fields)};

/* An IPv4 address in a 16-byte slot: 12 zero bytes, then the address. */
static void put_ip4(uint8_t slot[16], const struct in_addr *a)
{
	memset(slot, 0, 12);
	memcpy(slot + 12, &a->s_addr, 4);
}

int cm_ip_hdr_encode(void *buf, size_t len, const struct sockaddr *src, const struct sockaddr *dst)
{
	uint8_t s[16], d[16];
	unsigned ipv;
	uint16_t port;

	if (!buf || len < CM_IP_HDR_SIZE || !src || !dst || src->sa_family != dst->sa_family)
		return -EINVAL;
	if (src->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)src;

		put_ip4(s, &s4->sin_addr);
		put_ip4(d, &((const struct sockaddr_in *)dst)->sin_addr);
		port = ntohs(s4->sin_port);
		ipv = 4;
	} else if (src->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)src;

		memcpy(s, &s6->sin6_addr, 16);
		memcpy(d, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
		port = ntohs(s6->sin6_port);
		ipv = 6;
	} else {
		return -EINVAL;
	}
	memset(buf, 0, CM_IP_HDR_SIZE);
	mad_set_fits(buf, cm_ip_hdr_fields, CM_IP_HDR_CMA_VERSION, CM_IP_CMA_VERSION);
	mad_set_fits(buf, cm_ip_hdr_fields, CM_IP_HDR_IP_VERSION, ipv);
	mad_set_fits(buf, cm_ip_hdr_fields, CM_IP_HDR_SOURCE_PORT, port);
	mad_set_bytes(buf, cm_ip_hdr_fields, CM_IP_HDR_SOURCE_ADDR, s);
	mad_set_bytes(buf, cm_ip_hdr_fields, CM_IP_HDR_DESTINATION_ADDR, d);
	return 0;
}

static void fill_addr(struct sockaddr_storage *ss, unsigned ipv, const uint8_t slot[16],
		      uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (ipv == 4) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		memcpy(&a->sin_addr.s_addr, slot + 12, 4);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		memcpy(&a->sin6_addr, slot, 16);
	}
}

int cm_ip_hdr_decode(const void *buf, size_t len, uint16_t dst_port, struct sockaddr_storage *src,
		     struct sockaddr_storage *dst)
{
	uint8_t s[16], d[16];
	unsigned ipv;

	if (!buf || len < CM_IP_HDR_SIZE)
		return -EINVAL;
	if (mad_get(buf, cm_ip_hdr_fields, CM_IP_HDR_CMA_VERSION) != CM_IP_CMA_VERSION)
		return -EPROTONOSUPPORT;
	ipv = (unsigned)mad_get(buf, cm_ip_hdr_fields, CM_IP_HDR_IP_VERSION);
	if (ipv != 4 && ipv != 6)
		return -EAFNOSUPPORT;
	mad_get_bytes(buf, cm_ip_hdr_fields, CM_IP_HDR_SOURCE_ADDR, s);
	mad_get_bytes(buf, cm_ip_hdr_fields, CM_IP_HDR_DESTINATION_ADDR, d);
	if (src)
		fill_addr(src, ipv, s,
			  (uint16_t)mad_get(buf, cm_ip_hdr_fields, CM_IP_HDR_SOURCE_PORT));
	if (dst)
		fill_addr(dst, ipv, d, dst_port);
	return 0;
}

const char *cm_ps_name(unsigned ps)
{
	switch (ps) {
	case CM_PS_IPOIB:
		return "IPoIB";
	case CM_PS_TCP:
		return "TCP";
	case CM_PS_UDP:
		return "UDP";
	case CM_PS_IB:
		return "IB";
	default:
		return NULL;
	}
}

int cm_sid_from_ps_port(unsigned ps, uint16_t port, uint64_t *sid)
{
	if (!sid || !cm_ps_name(ps))
		return -EINVAL;
	*sid = ((uint64_t)ps << 16) + port;
	return 0;
}

int cm_sid_to_ps_port(uint64_t sid, unsigned *ps, uint16_t *port)
{
	unsigned p = (unsigned)(sid >> 16);

	if ((sid >> 32) != 0 || !cm_ps_name(p))
		return -EINVAL;
	if (ps)
		*ps = p;
	if (port)
		*port = (uint16_t)sid;
	return 0;
}
