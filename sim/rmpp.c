/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * RMPP (IBA 13.6) done by the simulated host kernel for agents registered
 * with rmpp_version 1, as ib_mad's mad_rmpp.c does: the sender cuts a
 * large MAD into 256-byte DATA segments and sends them within the window
 * the receiver grants with ACKs, retransmitting on timeout; the receiver
 * reassembles, ACKs and hands up the whole message.  Agents registered
 * with rmpp_version 0 see the raw segments and send their own ACKs,
 * which the sending engine honours the same way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fabsimd.h"

void fsd_umad_deliver_whole(struct fsd_port *port, const struct fsd_pkt *pkt, struct fsd_agent *a,
			    const uint8_t *data, size_t len);

enum { RMPP_DATA = 1, RMPP_ACK = 2, RMPP_STOP = 3, RMPP_ABORT = 4 };
enum { F_ACTIVE = 1, F_FIRST = 2, F_LAST = 4 };
#define RMPP_SEG_PAYLOAD 220 /* 256 - MAD header - RMPP header */
#define RECV_WINDOW 64

struct rsend {
	struct rsend *next;
	struct fsd_agent *agent;
	struct fsd_port *port;
	struct fsd_pkt tmpl;
	uint8_t *data;
	size_t len, hdr_len, seg_size;
	uint32_t nseg, last_ack, newwin, sent;
	uint32_t timeout_ms, retries;
	uint64_t tid, deadline;
};

struct rrecv {
	struct rrecv *next;
	struct fsd_agent *agent;
	struct fsd_port *port;
	uint64_t tid;
	uint16_t slid;
	uint8_t mgmt_class;
	uint8_t *buf;
	size_t len, hdr_len;
	uint32_t expect, newwin;
	uint64_t deadline;
};

static struct rsend *sends;
static struct rrecv *recvs;

static size_t data_offset(uint8_t cls)
{
	if (cls == 0x03)
		return 56; /* MAD + RMPP + SA header */
	if (cls >= 0x30 && cls <= 0x4f)
		return 40; /* MAD + RMPP + OUI */
	if (cls == 0x10)
		return 64;
	return 36;
}

static uint64_t tid_of(const uint8_t *mad)
{
	uint64_t t;

	memcpy(&t, mad + 8, 8);
	return be64toh(t);
}

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void send_seg(struct rsend *s, uint32_t seg)
{
	struct fsd_pkt p = s->tmpl;
	size_t off = s->hdr_len + (size_t)(seg - 1) * s->seg_size;
	size_t n = s->len > off ? s->len - off : 0;
	uint32_t pad = (uint32_t)(s->nseg * s->seg_size - (s->len - s->hdr_len));
	uint8_t flags = F_ACTIVE;
	uint32_t paylen = 0;

	if (n > s->seg_size)
		n = s->seg_size;
	memset(p.mad, 0, sizeof(p.mad));
	memcpy(p.mad, s->data, s->hdr_len);
	memcpy(p.mad + s->hdr_len, s->data + off, n);
	if (seg == 1) {
		flags |= F_FIRST;
		paylen = s->nseg * RMPP_SEG_PAYLOAD - pad;
	}
	if (seg == s->nseg) {
		flags |= F_LAST;
		paylen = RMPP_SEG_PAYLOAD - pad;
	}
	p.mad[24] = 1;
	p.mad[25] = RMPP_DATA;
	p.mad[26] = (uint8_t)((s->data[26] & 0xf8) | flags);
	p.mad[27] = 0;
	put_be32(p.mad + 28, seg);
	put_be32(p.mad + 32, paylen);
	p.len = FSD_MAD_SIZE;
	fsd_count(FSD_C_RMPP_SEGS);
	fsd_pkt_inject(&p);
}

static void send_window(struct rsend *s)
{
	uint32_t last = s->newwin < s->nseg ? s->newwin : s->nseg;

	for (uint32_t seg = s->sent + 1; seg <= last; seg++)
		send_seg(s, seg);
	if (last > s->sent)
		s->sent = last;
	s->deadline = fsd_now_ns() + (uint64_t)s->timeout_ms * 1000000ull;
}

int fsd_rmpp_send(struct fsd_agent *a, struct fsd_port *port, const struct fsd_pkt *tmpl,
		  const uint8_t *data, size_t len, uint32_t timeout_ms, uint32_t retries)
{
	struct rsend *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->hdr_len = data_offset(data[1]);
	if (len < s->hdr_len) {
		free(s);
		return -EINVAL;
	}
	s->data = malloc(len);
	if (!s->data) {
		free(s);
		return -ENOMEM;
	}
	memcpy(s->data, data, len);
	s->agent = a;
	s->port = port;
	s->tmpl = *tmpl;
	s->len = len;
	s->seg_size = FSD_MAD_SIZE - s->hdr_len;
	s->nseg = (uint32_t)((len - s->hdr_len + s->seg_size - 1) / s->seg_size);
	if (!s->nseg)
		s->nseg = 1;
	s->newwin = 1;
	/* ACK waits need a timeout even for responses sent with none */
	s->timeout_ms = timeout_ms > 200 ? timeout_ms : 200;
	s->retries = retries > 5 ? retries : 5;
	s->tid = tid_of(data);
	s->next = sends;
	sends = s;
	send_window(s);
	return 0;
}

static void rsend_free(struct rsend *s)
{
	for (struct rsend **pp = &sends; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	free(s->data);
	free(s);
}

static void send_ack(struct fsd_port *port, const struct fsd_pkt *data, uint32_t seg,
		     uint32_t newwin)
{
	struct fsd_pkt p;

	memset(&p, 0, sizeof(p));
	p.src = port;
	p.len = FSD_MAD_SIZE;
	memcpy(p.mad, data->mad, 24);
	p.mad[3] ^= 0x80; /* the ACK flips the response bit of the DATA's method */
	p.mad[24] = 1;
	p.mad[25] = RMPP_ACK;
	p.mad[26] = (uint8_t)((data->mad[26] & 0xf8) | F_ACTIVE);
	put_be32(p.mad + 28, seg);
	put_be32(p.mad + 32, newwin);
	p.slid = fsd_port_lid(port);
	p.dlid = data->slid;
	p.sqpn = 1;
	p.dqpn = data->sqpn;
	p.qkey = 0x80010000u;
	p.sl = data->sl;
	p.pkey_index = data->pkey_index;
	fsd_pkt_inject(&p);
}

static void rrecv_free(struct rrecv *r)
{
	for (struct rrecv **pp = &recvs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	free(r->buf);
	free(r);
}

static void recv_data(struct fsd_port *port, const struct fsd_pkt *pkt, struct fsd_agent *a)
{
	const uint8_t *m = pkt->mad;
	uint32_t seg = be32_at(m + 28);
	uint64_t tid = tid_of(m);
	struct rrecv *r;

	for (r = recvs; r; r = r->next)
		if (r->port == port && r->tid == tid && r->slid == pkt->slid &&
		    r->mgmt_class == m[1])
			break;
	if (m[26] & F_FIRST && seg == 1) {
		if (r)
			rrecv_free(r);
		r = calloc(1, sizeof(*r));
		if (!r)
			return;
		r->agent = a;
		r->port = port;
		r->tid = tid;
		r->slid = pkt->slid;
		r->mgmt_class = m[1];
		r->hdr_len = data_offset(m[1]);
		r->expect = 1;
		r->newwin = 1;
		r->next = recvs;
		recvs = r;
	}
	if (!r)
		return; /* a segment of nothing we know: drop */
	r->deadline = fsd_now_ns() + 10ull * 1000000000ull;
	if (seg != r->expect) {
		/* duplicate or out of order: tell the sender where we are */
		if (r->expect > 1)
			send_ack(port, pkt, r->expect - 1, r->newwin);
		return;
	}
	size_t off = seg == 1 ? 0 : r->hdr_len;
	size_t n = FSD_MAD_SIZE - off;
	uint8_t *nb = realloc(r->buf, r->len + n);

	if (!nb || r->len + n > FSP_MSG_MAX) {
		free(nb);
		r->buf = NULL;
		rrecv_free(r);
		return;
	}
	r->buf = nb;
	memcpy(r->buf + r->len, m + off, n);
	r->len += n;
	r->expect++;
	if (m[26] & F_LAST) {
		uint32_t paylen = be32_at(m + 32);
		size_t pad = paylen <= RMPP_SEG_PAYLOAD ? RMPP_SEG_PAYLOAD - paylen : 0;
		size_t total = r->len > pad ? r->len - pad : r->len;

		send_ack(port, pkt, seg, seg);
		/* the whole message carries the first segment's headers */
		fsd_umad_deliver_whole(port, pkt, r->agent, r->buf, total);
		rrecv_free(r);
		return;
	}
	if (seg >= r->newwin) {
		r->newwin = seg + RECV_WINDOW;
		send_ack(port, pkt, seg, r->newwin);
	}
}

bool fsd_rmpp_recv(struct fsd_port *port, const struct fsd_pkt *pkt, struct fsd_agent *a)
{
	const uint8_t *m = pkt->mad;
	int type = m[25];

	if (!a) {
		/* ACK/STOP/ABORT for one of our sends? */
		uint64_t tid = tid_of(m);
		struct rsend *s;

		if (type == RMPP_DATA)
			return false;
		for (s = sends; s; s = s->next)
			if (s->port == port && s->tid == tid && s->data[1] == m[1])
				break;
		if (!s)
			return false;
		if (type == RMPP_ACK) {
			uint32_t seg = be32_at(m + 28), nw = be32_at(m + 32);

			if (seg > s->last_ack && seg <= s->nseg) {
				s->last_ack = seg;
				s->retries = 5;
			}
			if (nw > s->newwin)
				s->newwin = nw;
			if (s->last_ack >= s->nseg) {
				rsend_free(s);
				return true;
			}
			if (s->sent < s->last_ack)
				s->sent = s->last_ack;
			send_window(s);
		} else {
			rsend_free(s); /* STOP / ABORT: the receiver gave up */
		}
		return true;
	}
	if (type == RMPP_DATA)
		recv_data(port, pkt, a);
	return true;
}

void fsd_rmpp_timers(uint64_t now)
{
	struct rsend *s = sends, *sn;
	struct rrecv *r = recvs, *rn;

	for (; s; s = sn) {
		sn = s->next;
		if (s->deadline > now)
			continue;
		if (!s->retries) {
			fsd_count(FSD_C_SEND_TIMEOUT);
			if (s->agent)
				fsd_agent_queue(s->agent, NULL, ETIMEDOUT, s->data, 24);
			rsend_free(s);
			continue;
		}
		s->retries--;
		fsd_count(FSD_C_RETRIES);
		s->sent = s->last_ack;
		send_window(s);
	}
	for (; r; r = rn) {
		rn = r->next;
		if (r->deadline <= now)
			rrecv_free(r);
	}
}

int fsd_rmpp_next_due_ms(void)
{
	uint64_t min = UINT64_MAX, now;

	for (struct rsend *s = sends; s; s = s->next)
		if (s->deadline < min)
			min = s->deadline;
	for (struct rrecv *r = recvs; r; r = r->next)
		if (r->deadline < min)
			min = r->deadline;
	if (min == UINT64_MAX)
		return -1;
	now = fsd_now_ns();
	return min <= now ? 0 : (int)((min - now) / 1000000ull) + 1;
}

void fsd_rmpp_agent_gone(struct fsd_agent *a)
{
	struct rsend *s = sends, *sn;
	struct rrecv *r = recvs, *rn;

	for (; s; s = sn) {
		sn = s->next;
		if (s->agent == a)
			rsend_free(s);
	}
	for (; r; r = rn) {
		rn = r->next;
		if (r->agent == a)
			rrecv_free(r);
	}
}
