/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The part of a host's kernel that ib_umad and ib_mad are: agents
 * registered per port, TIDs stamped with the agent's hi_tid on requests,
 * responses routed back by hi_tid and matched to the waiting send,
 * timeouts and retries reported as ETIMEDOUT, unsolicited requests
 * dispatched by class/version/method (and OUI for vendor classes).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/umad.h>

#include "sim/fabsimd.h"

void fsd_unmatched_resp(struct fsd_port *at, const struct fsd_pkt *req);

struct send_wr {
	struct send_wr *prev, *next; /* by deadline */
	struct send_wr *hnext;	     /* TID hash chain */
	struct fsd_agent *agent;
	struct fsd_port *port;
	uint64_t tid;
	uint8_t mgmt_class;
	uint32_t timeout_ms;
	uint32_t retries;
	uint64_t deadline;
	struct fsd_pkt pkt; /* for retransmission */
};

/*
 * Requests waiting for their response: a list ordered by deadline (new
 * ones almost always go at the tail, timeouts leave from the head) and a
 * hash on the TID, so neither a timer tick nor a response walks them all.
 */
#define WR_HASH 4096
static struct send_wr *wr_head, *wr_tail;
static struct send_wr *wr_hash[WR_HASH];

static unsigned wr_bucket(uint64_t tid)
{
	return (unsigned)((tid ^ (tid >> 32)) * 0x9e3779b1u) % WR_HASH;
}

static void wr_insert(struct send_wr *w)
{
	struct send_wr *at = wr_tail;

	while (at && at->deadline > w->deadline)
		at = at->prev;
	w->prev = at;
	w->next = at ? at->next : wr_head;
	if (w->next)
		w->next->prev = w;
	else
		wr_tail = w;
	if (at)
		at->next = w;
	else
		wr_head = w;
}

static void wr_unlink(struct send_wr *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		wr_head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		wr_tail = w->prev;
	w->prev = w->next = NULL;
}

static void wr_add(struct send_wr *w)
{
	unsigned b = wr_bucket(w->tid);

	w->hnext = wr_hash[b];
	wr_hash[b] = w;
	wr_insert(w);
}

static void wr_del(struct send_wr *w)
{
	for (struct send_wr **pp = &wr_hash[wr_bucket(w->tid)]; *pp; pp = &(*pp)->hnext)
		if (*pp == w) {
			*pp = w->hnext;
			break;
		}
	wr_unlink(w);
	free(w);
}

static bool is_vendor2(uint8_t c)
{
	return c >= 0x30 && c <= 0x4f;
}

bool fsd_rmpp_class(uint8_t c)
{
	return c == 0x03 || c == 0x06 || c == 0x10 || c == 0x12 || is_vendor2(c);
}

static bool response_mad(const uint8_t *mad)
{
	return (mad[3] & 0x80) || mad[3] == IB_MAD_METHOD_TRAP_REPRESS;
}

static uint64_t get_tid(const uint8_t *mad)
{
	uint64_t t;

	memcpy(&t, mad + 8, 8);
	return be64toh(t);
}

static void put_tid(uint8_t *mad, uint64_t tid)
{
	uint64_t t = htobe64(tid);

	memcpy(mad + 8, &t, 8);
}

static bool methods_overlap(const uint64_t a[2], const uint64_t b[2])
{
	return (a[0] & b[0]) || (a[1] & b[1]);
}

int fsd_agent_register(struct fsd_conn *ctl, const struct fsp_register *r)
{
	struct fsd_conn *s = fsd_conn_by_id(r->stream_id);
	struct fsd_agent *a;
	struct fsd_port *p;
	int id;

	if (!s || s->kind != FSP_KIND_STREAM || !s->port)
		return -EINVAL;
	if (ctl->host_id != s->host_id)
		return -EPERM;
	p = s->port;
	/* the checks of ib_register_mad_agent */
	if (r->rmpp_version > 1 || r->class_version >= 8)
		return -EINVAL;
	if (r->mgmt_class) {
		if (r->mgmt_class >= 0x50 && r->mgmt_class != 0x81)
			return -EINVAL;
		if (is_vendor2(r->mgmt_class) && (!r->use_oui || !r->oui))
			return -EINVAL;
		if (r->rmpp_version && !fsd_rmpp_class(r->mgmt_class))
			return -EINVAL;
		for (a = p->agents; a; a = a->next) {
			if (!a->mgmt_class || a->mgmt_class != r->mgmt_class ||
			    a->class_version != r->class_version)
				continue;
			if (is_vendor2(r->mgmt_class) && a->oui != r->oui)
				continue;
			if (methods_overlap(a->method_mask, r->method_mask))
				return -EINVAL; /* what the kernel answers */
		}
	}
	for (id = 0; id < FSD_MAX_AGENTS; id++)
		if (!s->agents[id])
			break;
	if (id == FSD_MAX_AGENTS)
		return -ENOMEM;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->stream = s;
	a->id = (uint32_t)id;
	a->hi_tid = ++fab.next_hi_tid;
	a->mgmt_class = r->mgmt_class;
	a->class_version = r->class_version;
	a->rmpp_version = r->rmpp_version;
	a->use_oui = r->use_oui;
	a->oui = r->oui & 0xffffff;
	if (r->mgmt_class) {
		a->method_mask[0] = r->method_mask[0];
		a->method_mask[1] = r->method_mask[1];
	}
	a->next = p->agents;
	p->agents = a;
	s->agents[id] = a;
	return id;
}

static void agent_free(struct fsd_agent *a)
{
	struct fsd_port *p = a->stream->port;
	struct fsd_agent **pp;
	struct send_wr *w, *wn;

	for (pp = &p->agents; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	for (w = wr_head; w; w = wn) {
		wn = w->next;
		if (w->agent == a)
			wr_del(w);
	}
	fsd_rmpp_agent_gone(a);
	a->stream->agents[a->id] = NULL;
	free(a);
}

int fsd_agent_unregister(struct fsd_conn *ctl, const struct fsp_unregister *r)
{
	struct fsd_conn *s = fsd_conn_by_id(r->stream_id);

	if (!s || s->kind != FSP_KIND_STREAM || r->agent_id >= FSD_MAX_AGENTS ||
	    !s->agents[r->agent_id] || ctl->host_id != s->host_id)
		return -EINVAL;
	agent_free(s->agents[r->agent_id]);
	return 0;
}

void fsd_agents_release(struct fsd_conn *s)
{
	for (int i = 0; i < FSD_MAX_AGENTS; i++)
		if (s->agents[i])
			agent_free(s->agents[i]);
}

struct fsd_agent *fsd_agent_by_hi_tid(struct fsd_port *p, uint32_t hi_tid)
{
	for (struct fsd_agent *a = p->agents; a; a = a->next)
		if (a->hi_tid == hi_tid)
			return a;
	return NULL;
}

struct fsd_agent *fsd_agent_for_request(struct fsd_port *p, const uint8_t *mad)
{
	uint8_t cls = mad[1], ver = mad[2], method = mad[3] & 0x7f;
	uint32_t oui = (uint32_t)mad[37] << 16 | (uint32_t)mad[38] << 8 | mad[39];

	for (struct fsd_agent *a = p->agents; a; a = a->next) {
		if (a->mgmt_class != cls || a->class_version != ver)
			continue;
		if (is_vendor2(cls) && a->oui != oui)
			continue;
		if (a->method_mask[method / 64] & (1ull << (method % 64)))
			return a;
	}
	return NULL;
}

void fsd_agent_queue(struct fsd_agent *a, const struct fsd_pkt *pkt, uint32_t status,
		     const uint8_t *data, size_t len)
{
	size_t tot = sizeof(struct ib_user_mad) + len;
	uint8_t *buf = malloc(tot);
	struct ib_user_mad *u = (void *)buf;

	if (!buf)
		return;
	memset(u, 0, sizeof(*u));
	u->agent_id = a->id;
	u->status = status;
	u->length = (uint32_t)tot;
	if (pkt) {
		u->addr.qpn = htonl(pkt->sqpn);
		u->addr.qkey = htonl(pkt->qkey);
		u->addr.lid = htons(pkt->slid);
		u->addr.sl = pkt->sl;
		u->addr.path_bits =
		    (uint8_t)(pkt->dlid & ((1u << fsd_port_lmc(a->stream->port)) - 1));
		u->addr.pkey_index = pkt->pkey_index;
		if (pkt->grh) {
			/* the source GID: subnet prefix + the sender's port GUID */
			uint64_t pre =
			    htobe64(mad_get_field64(pkt->src->pi, 0, IB_PORT_GID_PREFIX_F));
			uint64_t g = htobe64(pkt->src->guid);

			u->addr.grh_present = 1;
			u->addr.hop_limit = 255;
			memcpy(u->addr.gid, &pre, 8);
			memcpy(u->addr.gid + 8, &g, 8);
		}
	}
	memcpy(buf + sizeof(*u), data, len);
	fsd_conn_send(a->stream, FSP_MAD_RECV, 0, 0, 0, buf, tot);
	free(buf);
}

static void send_complete_timeout(struct send_wr *w)
{
	fsd_count(FSD_C_SEND_TIMEOUT);
	/* ib_umad reports the request's MAD header with status ETIMEDOUT */
	fsd_agent_queue(w->agent, NULL, ETIMEDOUT, w->pkt.mad, 24);
}

void fsd_umad_send(struct fsd_conn *s, const uint8_t *msg, size_t len)
{
	struct ib_user_mad u;
	struct fsd_agent *a;
	struct fsd_pkt pkt;
	const uint8_t *mad;
	size_t mlen;
	bool rmpp;

	/* what ib_umad_write refuses: less than the MAD + RMPP header */
	if (len < sizeof(u) + 36 || len > FSP_MSG_MAX) {
		fsd_count(FSD_C_CLIENT_BAD);
		return;
	}
	memcpy(&u, msg, sizeof(u));
	mad = msg + sizeof(u);
	mlen = len - sizeof(u);
	if (u.agent_id >= FSD_MAX_AGENTS || !(a = s->agents[u.agent_id])) {
		fsd_count(FSD_C_CLIENT_BAD);
		return;
	}
	rmpp = a->rmpp_version && fsd_rmpp_class(mad[1]) && (mad[26] & 1);
	if (mlen > FSD_MAD_SIZE && !rmpp) {
		fsd_count(FSD_C_CLIENT_BAD);
		return;
	}
	memset(&pkt, 0, sizeof(pkt));
	pkt.src = s->port;
	pkt.len = FSD_MAD_SIZE;
	memcpy(pkt.mad, mad, mlen < FSD_MAD_SIZE ? mlen : FSD_MAD_SIZE);
	pkt.dlid = ntohs(u.addr.lid);
	pkt.sl = u.addr.sl & 0xf;
	pkt.dqpn = ntohl(u.addr.qpn) & 0xffffff;
	pkt.qkey = ntohl(u.addr.qkey);
	pkt.pkey_index = u.addr.pkey_index;
	pkt.grh = u.addr.grh_present;
	if (pkt.grh)
		memcpy(pkt.gid, u.addr.gid, 16);
	if (mad[1] == 0x81 || mad[1] == 0x01) {
		pkt.sqpn = 0;
		pkt.dqpn = 0;
		pkt.qkey = 0;
	} else {
		pkt.sqpn = 1;
	}
	if (mad[1] == 0x81)
		pkt.slid = pkt.dlid = FSD_PERMISSIVE_LID;
	else
		pkt.slid = (uint16_t)(fsd_port_lid(s->port) | u.addr.path_bits);

	if (!response_mad(pkt.mad)) {
		uint64_t tid = ((uint64_t)a->hi_tid << 32) | (get_tid(pkt.mad) & 0xffffffffu);

		put_tid(pkt.mad, tid);
	}
	if (!response_mad(pkt.mad) && u.timeout_ms) {
		struct send_wr *w = calloc(1, sizeof(*w));

		if (w) {
			w->agent = a;
			w->port = s->port;
			w->tid = get_tid(pkt.mad);
			w->mgmt_class = mad[1];
			w->timeout_ms = u.timeout_ms;
			w->retries = u.retries;
			w->deadline = fsd_now_ns() + (uint64_t)u.timeout_ms * 1000000ull;
			w->pkt = pkt;
			if (rmpp)
				w->retries = 0; /* the RMPP engine retransmits segments */
			wr_add(w);
		}
	}
	if (rmpp) {
		uint8_t *copy = malloc(mlen);

		if (!copy)
			return;
		memcpy(copy, mad, mlen);
		put_tid(copy, get_tid(pkt.mad));
		fsd_rmpp_send(a, s->port, &pkt, copy, mlen, u.timeout_ms, u.retries);
		free(copy);
		return;
	}
	fsd_pkt_inject(&pkt);
}

/* a response reached its agent: complete the waiting send; false if
 * there is none (the kernel drops such responses) */
static bool complete_send(struct fsd_agent *a, const uint8_t *mad)
{
	uint64_t tid = get_tid(mad);

	for (struct send_wr *w = wr_hash[wr_bucket(tid)]; w; w = w->hnext) {
		if (w->agent == a && w->tid == tid && w->mgmt_class == mad[1]) {
			wr_del(w);
			return true;
		}
	}
	return false;
}

/* deliver a whole (possibly reassembled) MAD to the right agent */
void fsd_umad_deliver_whole(struct fsd_port *port, const struct fsd_pkt *pkt, struct fsd_agent *a,
			    const uint8_t *data, size_t len);
void fsd_umad_deliver_whole(struct fsd_port *port, const struct fsd_pkt *pkt, struct fsd_agent *a,
			    const uint8_t *data, size_t len)
{
	/*
	 * Like ib_mad_complete_recv(): a response matching no pending send
	 * is dropped, except active RMPP segments for an agent that does
	 * RMPP itself (rmpp_version 0), whose later segments match nothing.
	 */
	if (response_mad(data) && !complete_send(a, data) &&
	    !(a->rmpp_version == 0 && fsd_rmpp_class(data[1]) && data[24] && (data[26] & 1))) {
		fsd_count(FSD_C_NO_AGENT);
		fab.class_drop[data[1]]++;
		return;
	}
	fsd_agent_queue(a, pkt, 0, data, len);
}

void fsd_umad_deliver(struct fsd_port *port, const struct fsd_pkt *pkt)
{
	const uint8_t *mad = pkt->mad;
	struct fsd_agent *a;
	bool rmpp_active = fsd_rmpp_class(mad[1]) && mad[24] && (mad[26] & 1);

	if (rmpp_active && fsd_rmpp_recv(port, pkt, NULL))
		return; /* an ACK/STOP/ABORT for one of our RMPP sends */
	if (response_mad(mad))
		a = fsd_agent_by_hi_tid(port, (uint32_t)(get_tid(mad) >> 32));
	else
		a = fsd_agent_for_request(port, mad);
	if (!a) {
		fsd_count(FSD_C_NO_AGENT);
		fab.class_drop[mad[1]]++;
		if (!response_mad(mad))
			fsd_unmatched_resp(port, pkt);
		return;
	}
	if (rmpp_active && a->rmpp_version) {
		fsd_rmpp_recv(port, pkt, a);
		return;
	}
	fsd_umad_deliver_whole(port, pkt, a, mad, FSD_MAD_SIZE);
}

void fsd_umad_timers(uint64_t now)
{
	while (wr_head && wr_head->deadline <= now) {
		struct send_wr *w = wr_head;

		if (w->retries) {
			w->retries--;
			w->deadline = now + (uint64_t)w->timeout_ms * 1000000ull;
			wr_unlink(w);
			wr_insert(w);
			fsd_count(FSD_C_RETRIES);
			fsd_pkt_inject(&w->pkt);
			continue;
		}
		send_complete_timeout(w);
		wr_del(w);
	}
}

int fsd_umad_next_due_ms(void)
{
	uint64_t now;

	if (!wr_head)
		return -1;
	now = fsd_now_ns();
	return wr_head->deadline <= now ? 0 : (int)((wr_head->deadline - now) / 1000000ull) + 1;
}
