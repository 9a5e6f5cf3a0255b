/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Encoding of the rsocket connection data and the SGE/iomap entries (see
 * rsocket_wire.h).  Big-endian fields written and read with mad/field.h's
 * mad_store_be/mad_load_be, so it depends on neither the host's order nor
 * struct packing.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/rsocket_wire.h"
#include "mad/field.h"

/* On the wire an SGE is addr, key, length, each big-endian. */
static void put_sge(uint8_t *p, const struct rs_sge *s)
{
	mad_store_be(p, 8, s->addr);
	mad_store_be(p + 8, 4, s->key);
	mad_store_be(p + 12, 4, s->length);
}

static void get_sge(const uint8_t *p, struct rs_sge *s)
{
	s->addr = mad_load_be(p, 8);
	s->key = mad_load_be(p + 8, 4);
	s->length = mad_load_be(p + 12, 4);
}

void rs_conn_encode(const struct rs_conn *c, uint8_t out[RS_CONN_DATA_LEN])
{
	out[0] = c->version;
	out[1] = c->flags;
	mad_store_be(out + 2, 2, c->credits);
	out[4] = out[5] = out[6] = 0; /* reserved */
	out[7] = c->iomap_scale;
	put_sge(out + 8, &c->target);
	put_sge(out + 24, &c->data);
}

int rs_conn_decode(const uint8_t *in, size_t len, struct rs_conn *c)
{
	if (!in || len < RS_CONN_DATA_LEN)
		return -EINVAL;
	c->version = in[0];
	if (c->version != RS_CONN_VERSION)
		return -EPROTONOSUPPORT;
	c->flags = in[1];
	c->credits = mad_load_be(in + 2, 2);
	c->iomap_scale = in[7];
	get_sge(in + 8, &c->target);
	get_sge(in + 24, &c->data);
	/* Without a target SGL or credits the peer could never be sent to. */
	if (!c->target.length || !c->credits || !c->data.length)
		return -EPROTO;
	return 0;
}

uint8_t rs_value_to_scale(uint32_t value)
{
	if (value <= 128)
		return (uint8_t)value;
	if (value >= (0x7Fu << 8))
		return 0xFF;
	return (uint8_t)(0x80 | (value >> 8));
}

uint32_t rs_scale_to_value(uint8_t scale)
{
	if (scale <= 128)
		return scale;
	return (uint32_t)(scale & 0x7F) << 8;
}

void rs_sge_swap(struct rs_sge *s)
{
	s->addr = __builtin_bswap64(s->addr);
	s->key = __builtin_bswap32(s->key);
	s->length = __builtin_bswap32(s->length);
}

void rs_iomap_swap(struct rs_iomap *m)
{
	m->offset = __builtin_bswap64(m->offset);
	rs_sge_swap(&m->sge);
}

int ds_hdr_encode(const struct sockaddr *sa, uint8_t out[DS_HDR_MAX_LEN])
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		out[0] = 4;
		out[1] = DS_HDR_V4_LEN;
		/* Already in network order in the sockaddr: copied as they are. */
		memcpy(out + 2, &in->sin_port, 2);
		memcpy(out + 4, &in->sin_addr, 4);
		return DS_HDR_V4_LEN;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		out[0] = 6;
		out[1] = DS_HDR_V6_LEN;
		memcpy(out + 2, &in6->sin6_port, 2);
		memcpy(out + 4, &in6->sin6_flowinfo, 4);
		memcpy(out + 8, &in6->sin6_addr, 16);
		return DS_HDR_V6_LEN;
	}
	return -EAFNOSUPPORT;
}

int ds_hdr_decode(const uint8_t *in, size_t len, struct sockaddr_storage *sa)
{
	if (!in || len < DS_HDR_V4_LEN)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	if (in[0] == 4 && in[1] == DS_HDR_V4_LEN) {
		struct sockaddr_in *sin = (struct sockaddr_in *)sa;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_port, in + 2, 2);
		memcpy(&sin->sin_addr, in + 4, 4);
		return DS_HDR_V4_LEN;
	}
	if (in[0] == 6 && in[1] == DS_HDR_V6_LEN) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)sa;

		if (len < DS_HDR_V6_LEN)
			return -EINVAL;
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_port, in + 2, 2);
		memcpy(&sin6->sin6_flowinfo, in + 4, 4);
		memcpy(&sin6->sin6_addr, in + 8, 16);
		return DS_HDR_V6_LEN;
	}
	return -EPROTO;
}

int ds_udp_encode(uint8_t op, uint32_t qpn, const struct sockaddr *sa, uint8_t out[DS_UDP_MAX_LEN])
{
	int len;

	if (sa->sa_family == AF_INET) {
		out[4] = 4;
		len = DS_UDP_V4_LEN;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		out[4] = 6;
		len = DS_UDP_V6_LEN;
		memcpy(out + 12, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	mad_store_be(out, 4, DS_UDP_TAG);
	out[5] = op;
	out[6] = (uint8_t)len;
	out[7] = 0;
	mad_store_be(out + 8, 4, qpn & 0xFFFFFF);
	return len;
}

int ds_udp_decode(const uint8_t *in, size_t len, int family, struct ds_udp_hdr *h)
{
	if (!in || len < DS_UDP_V4_LEN)
		return -EINVAL;
	if (mad_load_be(in, 4) != DS_UDP_TAG)
		return -EPROTO;
	memset(h, 0, sizeof(*h));
	h->version = in[4];
	h->op = in[5];
	h->length = in[6];
	h->qpn = mad_load_be(in + 8, 4) & 0xFFFFFF;
	if (h->version == 4 && family == AF_INET && h->length == DS_UDP_V4_LEN) {
		memcpy(h->addr, in + 12, 4);
		return DS_UDP_V4_LEN;
	}
	if (h->version == 6 && family == AF_INET6 && h->length == DS_UDP_V6_LEN) {
		if (len < DS_UDP_V6_LEN)
			return -EINVAL;
		memcpy(h->addr, in + 12, 16);
		return DS_UDP_V6_LEN;
	}
	return -EPROTO;
}
