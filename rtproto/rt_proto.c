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
 * A bool of a raw struct as the peer sent it: read as a byte, since a
 * value other than 0 or 1 in a bool is undefined behaviour to load.
 */
static bool bool_ok(const void *base, size_t off)
{
	uint8_t b;

	memcpy(&b, (const uint8_t *)base + off, 1);
	return b <= 1;
}

static bool qp_attrs_ok(uint32_t n, const struct madcmd_qp_attr *qp)
{
	if (n > MADCMD_QP_ATTRS)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (qp[i].state != IBV_QPS_INIT && qp[i].state != IBV_QPS_RTR &&
		    qp[i].state != IBV_QPS_RTS)
			return false;
	return true;
}

static bool cmd_ok(const struct cm_rt_cmd *c)
{
	if ((unsigned)c->op >= CM_RT__COUNT || c->private_data_len > CM_PRIVATE_MAX)
		return false;
	switch (c->op) {
	case CM_RT_CONNECT:
	case CM_RT_CONNECT_AS:
		return c->connect.private_data_len <= sizeof(c->connect.private_data) &&
		       bool_ok(c, offsetof(struct cm_rt_cmd, connect.has_alternate));
	case CM_RT_ACCEPT:
		return c->accept.private_data_len <= sizeof(c->accept.private_data);
	case CM_RT_REJECT:
		return c->reject.private_data_len <= sizeof(c->reject.private_data) &&
		       c->reject.ari_len <= sizeof(c->reject.ari);
	case CM_RT_SIDR_REQ:
		return c->sidr_req.private_data_len <= sizeof(c->sidr_req.private_data) &&
		       bool_ok(c, offsetof(struct cm_rt_cmd, sidr_req.to.grh_present));
	case CM_RT_SIDR_REP:
		return c->sidr_rep.private_data_len <= sizeof(c->sidr_rep.private_data) &&
		       c->sidr_rep.info_len <= sizeof(c->sidr_rep.info);
	default:
		return true;
	}
}

static bool event_ok(const struct cm_event *ev)
{
	if ((unsigned)ev->type >= CM_EV__COUNT || ev->private_data_len > CM_PRIVATE_MAX ||
	    !bool_ok(ev, offsetof(struct cm_event, from.grh_present)))
		return false;
	switch (ev->type) {
	case CM_EV_REQ_RCVD:
		return bool_ok(ev, offsetof(struct cm_event, req.has_alternate));
	case CM_EV_REJ_RCVD:
		return ev->rej.ari_len <= sizeof(ev->rej.ari);
	case CM_EV_APR_RCVD:
		return ev->apr.info_len <= sizeof(ev->apr.info);
	case CM_EV_SIDR_REP_RCVD:
		return ev->sidr_rep.info_len <= sizeof(ev->sidr_rep.info);
	default:
		return true;
	}
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
	struct madcmd_hdr h;
	size_t need;

	if (!buf || len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	need = madcmd_msg_size(h.type);
	if (!need || h.version != MADCMD_PROTO_VERSION || h.len != len || len < need)
		return -EPROTO;
	if (h.type == MADCMD_MAD_SEND || h.type == MADCMD_MAD_RECV) {
		struct madcmd_mad m;

		memcpy(&m, buf, sizeof(m));
		if (m.len > MADCMD_MAD_MAX || len != sizeof(m) + m.len || m.len < 24 ||
		    !bool_ok(buf, offsetof(struct madcmd_mad, addr.grh_present)))
			return -EPROTO;
		return h.type;
	}
	if (len != need)
		return -EPROTO;
	switch (h.type) {
	case MADCMD_HELLO: {
		struct madcmd_hello m;

		memcpy(&m, buf, sizeof(m));
		if (m.kind < MADCMD_SESSION_HOST || m.kind > MADCMD_SESSION_MAD ||
		    memchr(m.ca, 0, sizeof(m.ca)) == NULL || m.port < 0 || m.port > 255)
			return -EPROTO;
		break;
	}
	case MADCMD_HELLO_REP: {
		struct madcmd_hello_rep m;

		memcpy(&m, buf, sizeof(m));
		if (memchr(m.port.ca_name, 0, sizeof(m.port.ca_name)) == NULL)
			return -EPROTO;
		break;
	}
	case MADCMD_CMD:
	case MADCMD_REPLY: {
		struct madcmd_cmd m;

		memcpy(&m, buf, sizeof(m));
		if (!cmd_ok(&m.cmd) || !qp_attrs_ok(m.nqp, m.qp) ||
		    (m.h.flags & ~(MADCMD_F_NOREPLY | MADCMD_F_ASYNC)) ||
		    m.h.flags == (MADCMD_F_NOREPLY | MADCMD_F_ASYNC))
			return -EPROTO;
		break;
	}
	case MADCMD_EVENT: {
		struct madcmd_event m;

		memcpy(&m, buf, sizeof(m));
		if (!event_ok(&m.ev) || !qp_attrs_ok(m.nqp, m.qp))
			return -EPROTO;
		break;
	}
	case MADCMD_PORT_BIND:
	case MADCMD_PORT_LISTEN:
	case MADCMD_PORT_UNBIND:
	case MADCMD_STAT: {
		struct madcmd_port m;

		memcpy(&m, buf, sizeof(m));
		if (m.ps > 0xffff || m.any > 1 || m.reuseaddr > 1 || m.afonly > 1)
			return -EPROTO;
		break;
	}
	case MADCMD_GRANT: {
		struct madcmd_grant m;

		memcpy(&m, buf, sizeof(m));
		if (!m.n || m.n > MADCMD_GRANT_MAX)
			return -EPROTO;
		for (uint32_t i = 0; i < m.n; i++)
			if (!m.ids[i])
				return -EPROTO;
		break;
	}
	case MADCMD_PATH_QUERY: {
		struct madcmd_path_query m;

		memcpy(&m, buf, sizeof(m));
		if (m.table > 1)
			return -EPROTO;
		break;
	}
	case MADCMD_PATH_REP: {
		struct madcmd_path_rep m;

		memcpy(&m, buf, sizeof(m));
		if (m.n > MADCMD_PATH_MAX || m.rc > 0 || (m.rc && m.n))
			return -EPROTO;
		break;
	}
	case MADCMD_SERVICE_REP: {
		struct madcmd_service_rep m;

		memcpy(&m, buf, sizeof(m));
		if (m.n > MADCMD_SERVICE_MAX || m.rc > 0 || (m.rc && m.n))
			return -EPROTO;
		break;
	}
	case MADCMD_STAT_REP: {
		struct madcmd_stat_rep m;

		memcpy(&m, buf, sizeof(m));
		if (memchr(m.ca, 0, sizeof(m.ca)) == NULL)
			return -EPROTO;
		break;
	}
	default:
		break;
	}
	return h.type;
}
