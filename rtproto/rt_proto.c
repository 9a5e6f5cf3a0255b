/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The madcmd protocol's checks (rtproto/rt_proto.h): what a received packet
 * must be before either side reads it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rtproto/rt_proto.h"

/* Sizes and a few offsets of the raw structs: any layout change shows. */
uint32_t madcmd_layout(void)
{
	uint32_t h = 2166136261u; /* FNV-1a over the numbers below */
	const uint32_t v[] = {
	    MADCMD_PROTO_VERSION,
	    sizeof(struct cm_rt_cmd),
	    offsetof(struct cm_rt_cmd, auto_qp),
	    offsetof(struct cm_rt_cmd, result),
	    sizeof(struct cm_connect_cmd),
	    sizeof(struct cm_accept_cmd),
	    sizeof(struct cm_event),
	    offsetof(struct cm_event, private_data),
	    sizeof(struct mad_addr),
	    sizeof(struct mad_port_attr),
	    sizeof(struct cm_path),
	    CM_RT__COUNT,
	    CM_EV__COUNT,
	    sizeof(struct ibv_qp_attr),
	    sizeof(struct madcmd_cmd),
	    sizeof(struct madcmd_event),
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		for (int b = 0; b < 4; b++) {
			h ^= (v[i] >> (8 * b)) & 0xff;
			h *= 16777619u;
		}
	return h;
}

const char *madcmd_socket_path(void)
{
	const char *p = getenv(MADCMD_SOCKET_ENV);

	return p && *p ? p : MADCMD_SOCKET_DEFAULT;
}

int madcmd_timeout_ms(void)
{
	static atomic_bool told;
	const char *v = getenv(MADCMD_TIMEOUT_ENV);
	char *end;
	long n;

	if (!v || !*v)
		return MADCMD_TIMEOUT_DEFAULT_MS;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < 1 || n > INT_MAX) {
		if (!atomic_exchange(&told, true))
			fprintf(stderr, "madcm: %s=%s is not 1 to %d: %d ms instead\n",
				MADCMD_TIMEOUT_ENV, v, INT_MAX, MADCMD_TIMEOUT_DEFAULT_MS);
		return MADCMD_TIMEOUT_DEFAULT_MS;
	}
	return (int)n;
}

void madcmd_socket_bufs(int fd)
{
	int size = 1 << 20;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

void madcmd_hdr_init(struct madcmd_hdr *h, enum madcmd_type type, size_t len, uint32_t seq)
{
	memset(h, 0, sizeof(*h));
	h->type = (uint16_t)type;
	h->version = MADCMD_PROTO_VERSION;
	h->len = (uint32_t)len;
	h->seq = seq;
}

size_t madcmd_msg_size(int type)
{
	switch (type) {
	case MADCMD_HELLO:
		return sizeof(struct madcmd_hello);
	case MADCMD_HELLO_REP:
		return sizeof(struct madcmd_hello_rep);
	case MADCMD_CMD:
	case MADCMD_REPLY:
		return sizeof(struct madcmd_cmd);
	case MADCMD_EVENT:
		return sizeof(struct madcmd_event);
	case MADCMD_MAD_REG:
		return sizeof(struct madcmd_mad_reg);
	case MADCMD_MAD_REG_REP:
		return sizeof(struct madcmd_mad_reg_rep);
	case MADCMD_MAD_SEND:
	case MADCMD_MAD_RECV:
		return sizeof(struct madcmd_mad);
	case MADCMD_PORT_BIND:
	case MADCMD_PORT_LISTEN:
	case MADCMD_PORT_UNBIND:
	case MADCMD_STAT:
		return sizeof(struct madcmd_port);
	case MADCMD_PORT_REP:
		return sizeof(struct madcmd_port_rep);
	case MADCMD_STAT_REP:
		return sizeof(struct madcmd_stat_rep);
	case MADCMD_GRANT:
		return sizeof(struct madcmd_grant);
	case MADCMD_PATH_QUERY:
		return sizeof(struct madcmd_path_query);
	case MADCMD_PATH_REP:
		return sizeof(struct madcmd_path_rep);
	case MADCMD_SERVICE_QUERY:
		return sizeof(struct madcmd_service_query);
	case MADCMD_SERVICE_REP:
		return sizeof(struct madcmd_service_rep);
	case MADCMD_PING:
	case MADCMD_PONG:
		return sizeof(struct madcmd_hdr);
	default:
		return 0;
	}
}

/*
 * A field of a raw message, read in place (a message may sit at any
 * offset of a batch): no copy of the whole struct just to look at a few
 * fields.
 */
#define RD(base, type, member)                                                                     \
	({                                                                                         \
		__typeof__(((type *)0)->member) v_;                                                \
		memcpy(&v_, (const uint8_t *)(base) + offsetof(type, member), sizeof(v_));         \
		v_;                                                                                \
	})

/*
 * A bool of a raw struct as the peer sent it: read as a byte, since a
 * value other than 0 or 1 in a bool is undefined behaviour to load.
 */
static bool bool_ok(const void *base, size_t off)
{
	return ((const uint8_t *)base)[off] <= 1;
}

/* n entries of qp[] at qp (raw struct madcmd_qp_attr) */
static bool qp_attrs_ok(uint32_t n, const uint8_t *qp)
{
	if (n > MADCMD_QP_ATTRS)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t st =
		    RD(qp + i * sizeof(struct madcmd_qp_attr), struct madcmd_qp_attr, state);

		if (st != IBV_QPS_INIT && st != IBV_QPS_RTR && st != IBV_QPS_RTS)
			return false;
	}
	return true;
}

/* c: a raw struct cm_rt_cmd */
static bool cmd_ok(const uint8_t *c)
{
	unsigned op = (unsigned)RD(c, struct cm_rt_cmd, op);

#define C(m) RD(c, struct cm_rt_cmd, m)
#define SZ(m) sizeof(((struct cm_rt_cmd *)0)->m)
	if (op >= CM_RT__COUNT || C(private_data_len) > CM_PRIVATE_MAX)
		return false;
	switch (op) {
	case CM_RT_CONNECT:
	case CM_RT_CONNECT_AS:
		return C(connect.private_data_len) <= SZ(connect.private_data) &&
		       bool_ok(c, offsetof(struct cm_rt_cmd, connect.has_alternate));
	case CM_RT_ACCEPT:
		return C(accept.private_data_len) <= SZ(accept.private_data);
	case CM_RT_REJECT:
		return C(reject.private_data_len) <= SZ(reject.private_data) &&
		       C(reject.ari_len) <= SZ(reject.ari);
	case CM_RT_SIDR_REQ:
		return C(sidr_req.private_data_len) <= SZ(sidr_req.private_data) &&
		       bool_ok(c, offsetof(struct cm_rt_cmd, sidr_req.to.grh_present));
	case CM_RT_SIDR_REP:
		return C(sidr_rep.private_data_len) <= SZ(sidr_rep.private_data) &&
		       C(sidr_rep.info_len) <= SZ(sidr_rep.info);
	default:
		return true;
	}
#undef C
#undef SZ
}

/* ev: a raw struct cm_event */
static bool event_ok(const uint8_t *ev)
{
	unsigned type = (unsigned)RD(ev, struct cm_event, type);

#define E(m) RD(ev, struct cm_event, m)
#define SZ(m) sizeof(((struct cm_event *)0)->m)
	if (type >= CM_EV__COUNT || E(private_data_len) > CM_PRIVATE_MAX ||
	    !bool_ok(ev, offsetof(struct cm_event, from.grh_present)))
		return false;
	switch (type) {
	case CM_EV_REQ_RCVD:
		return bool_ok(ev, offsetof(struct cm_event, req.has_alternate));
	case CM_EV_REJ_RCVD:
		return E(rej.ari_len) <= SZ(rej.ari);
	case CM_EV_APR_RCVD:
		return E(apr.info_len) <= SZ(apr.info);
	case CM_EV_SIDR_REP_RCVD:
		return E(sidr_rep.info_len) <= SZ(sidr_rep.info);
	default:
		return true;
	}
#undef E
#undef SZ
}

int madcmd_batch_next(const void *pkt, size_t len, size_t *off, const void **msg, size_t *msg_len)
{
	const uint8_t *p = pkt;
	struct madcmd_hdr h;
	int t;

	if (!pkt || !off || *off > len)
		return -EPROTO;
	if (*off == len)
		return 0;
	if (len - *off < sizeof(h))
		return -EPROTO;
	memcpy(&h, p + *off, sizeof(h));
	if (h.len < sizeof(h) || h.len > len - *off)
		return -EPROTO;
	t = madcmd_check(p + *off, h.len);
	if (t < 0)
		return t;
	*msg = p + *off;
	*msg_len = h.len;
	*off += h.len;
	return t;
}

int madcmd_check(const void *buf, size_t len)
{
	const uint8_t *b = buf;
	struct madcmd_hdr h;
	size_t need;

	if (!buf || len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	need = madcmd_msg_size(h.type);
	if (!need || h.version != MADCMD_PROTO_VERSION || h.len != len || len < need)
		return -EPROTO;
	if (h.type == MADCMD_MAD_SEND || h.type == MADCMD_MAD_RECV) {
		uint32_t mlen = RD(b, struct madcmd_mad, len);

		if (mlen > MADCMD_MAD_MAX || len != sizeof(struct madcmd_mad) + mlen || mlen < 24 ||
		    !bool_ok(buf, offsetof(struct madcmd_mad, addr.grh_present)))
			return -EPROTO;
		return h.type;
	}
	if (len != need)
		return -EPROTO;
	/* Each field read in place (RD): only what the checks look at. */
	switch (h.type) {
	case MADCMD_HELLO: {
		uint32_t kind = RD(b, struct madcmd_hello, kind);
		int32_t port = RD(b, struct madcmd_hello, port);

		if (kind < MADCMD_SESSION_HOST || kind > MADCMD_SESSION_MAD ||
		    memchr(b + offsetof(struct madcmd_hello, ca), 0, MAD_CA_NAME_MAX) == NULL ||
		    port < 0 || port > 255)
			return -EPROTO;
		break;
	}
	case MADCMD_HELLO_REP:
		if (memchr(b + offsetof(struct madcmd_hello_rep, port.ca_name), 0,
			   sizeof(((struct madcmd_hello_rep *)0)->port.ca_name)) == NULL)
			return -EPROTO;
		break;
	case MADCMD_CMD:
	case MADCMD_REPLY: {
		uint32_t flags = h.flags;

		if (!cmd_ok(b + offsetof(struct madcmd_cmd, cmd)) ||
		    !qp_attrs_ok(RD(b, struct madcmd_cmd, nqp),
				 b + offsetof(struct madcmd_cmd, qp)) ||
		    (flags & ~(MADCMD_F_NOREPLY | MADCMD_F_ASYNC)) ||
		    flags == (MADCMD_F_NOREPLY | MADCMD_F_ASYNC))
			return -EPROTO;
		break;
	}
	case MADCMD_EVENT:
		if (!event_ok(b + offsetof(struct madcmd_event, ev)) ||
		    !qp_attrs_ok(RD(b, struct madcmd_event, nqp),
				 b + offsetof(struct madcmd_event, qp)))
			return -EPROTO;
		break;
	case MADCMD_PORT_BIND:
	case MADCMD_PORT_LISTEN:
	case MADCMD_PORT_UNBIND:
	case MADCMD_STAT:
		if (RD(b, struct madcmd_port, ps) > 0xffff || RD(b, struct madcmd_port, any) > 1 ||
		    RD(b, struct madcmd_port, reuseaddr) > 1 ||
		    RD(b, struct madcmd_port, afonly) > 1)
			return -EPROTO;
		break;
	case MADCMD_GRANT: {
		uint32_t n = RD(b, struct madcmd_grant, n);

		if (!n || n > MADCMD_GRANT_MAX)
			return -EPROTO;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t id;

			memcpy(&id, b + offsetof(struct madcmd_grant, ids) + i * sizeof(id),
			       sizeof(id));
			if (!id)
				return -EPROTO;
		}
		break;
	}
	case MADCMD_PATH_QUERY:
		if (RD(b, struct madcmd_path_query, table) > 1)
			return -EPROTO;
		break;
	case MADCMD_PATH_REP: {
		int32_t rc = RD(b, struct madcmd_path_rep, rc);
		uint32_t n = RD(b, struct madcmd_path_rep, n);

		if (n > MADCMD_PATH_MAX || rc > 0 || (rc && n))
			return -EPROTO;
		break;
	}
	case MADCMD_SERVICE_REP: {
		int32_t rc = RD(b, struct madcmd_service_rep, rc);
		uint32_t n = RD(b, struct madcmd_service_rep, n);

		if (n > MADCMD_SERVICE_MAX || rc > 0 || (rc && n))
			return -EPROTO;
		break;
	}
	case MADCMD_STAT_REP:
		if (memchr(b + offsetof(struct madcmd_stat_rep, ca), 0, MAD_CA_NAME_MAX) == NULL)
			return -EPROTO;
		break;
	default:
		break;
	}
	return h.type;
}
