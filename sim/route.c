/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The wire: packets are queued, then walked through the fabric from the
 * event loop.  Directed-route SMPs follow their initial/return paths with
 * the hop pointer rules of IBA 14.2.2 (the C14-9 / C14-13 cases); LID
 * routed packets follow the LFTs the SM programmed, hop by hop.  Faults
 * are applied per packet and per link crossed; captures are written at
 * the CA ports a packet leaves and reaches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fabsimd.h"

#define MAX_HOPS 64
#define DR_HDR_HOPPTR 6
#define DR_HDR_HOPCNT 7
#define DR_INITIAL_PATH 128
#define DR_RETURN_PATH 192

static struct fsd_pkt *q_head, *q_tail;
static struct fsd_pkt *delayed; /* sorted by due_ns */

struct walk {
	struct fsd_port *dst;		  /* port of the destination node it arrived on */
	struct fsd_port *links[MAX_HOPS]; /* egress port of each hop */
	int nlinks;
};

void fsd_pkt_inject(struct fsd_pkt *pkt)
{
	struct fsd_pkt *p = malloc(sizeof(*p));

	if (!p)
		return;
	*p = *pkt;
	p->next = NULL;
	if (q_tail)
		q_tail->next = p;
	else
		q_head = p;
	q_tail = p;
}

static void delay_pkt(struct fsd_pkt *p, uint32_t ms)
{
	struct fsd_pkt **pp = &delayed;

	p->due_ns = fsd_now_ns() + (uint64_t)ms * 1000000ull;
	p->faulted = true;
	while (*pp && (*pp)->due_ns <= p->due_ns)
		pp = &(*pp)->next;
	p->next = *pp;
	*pp = p;
}

int fsd_pkt_next_due_ms(void)
{
	uint64_t now;

	if (q_head)
		return 0;
	if (!delayed)
		return -1;
	now = fsd_now_ns();
	if (delayed->due_ns <= now)
		return 0;
	return (int)((delayed->due_ns - now) / 1000000ull) + 1;
}

struct fsd_port *fsd_port_by_lid(uint16_t lid)
{
	if (!lid || lid >= 0xc000)
		return NULL;
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];

		for (int p = n->type == FSD_SWITCH ? 0 : 1; p <= n->nports; p++) {
			struct fsd_port *pt = &n->ports[p];
			uint16_t base = (uint16_t)mad_get_field(pt->pi, 0, IB_PORT_LID_F);
			int lmc = (int)mad_get_field(pt->pi, 0, IB_PORT_LMC_F);

			if (base && (lid & ~((1u << lmc) - 1)) == base)
				return pt;
			if (n->type == FSD_SWITCH)
				break;
		}
	}
	return NULL;
}

static bool owns_lid(const struct fsd_port *p, uint16_t lid)
{
	uint16_t base = fsd_port_lid(p);
	int lmc = fsd_port_lmc(p);

	return base && (lid & ~((1u << lmc) - 1)) == base;
}

static bool link_ok(const struct fsd_port *e, bool smp, enum fsd_counter *why)
{
	const struct fsd_port *q = e->peer;

	if (!q || e->admin_down || q->admin_down || !fsd_port_phys_up(e) || !fsd_port_phys_up(q)) {
		*why = FSD_C_LINK_DOWN;
		return false;
	}
	/* only QP0 traffic crosses a link that is not Active */
	if (!smp && (fsd_port_state(e) != 4 || fsd_port_state(q) != 4)) {
		*why = FSD_C_LINK_DOWN;
		return false;
	}
	return true;
}

static struct fsd_port *route_lid(struct fsd_port *src, uint16_t dlid, bool smp,
				  enum fsd_counter *why, struct walk *w)
{
	struct fsd_node *n = src->node;
	int egress;

	if (owns_lid(src, dlid))
		return n->type == FSD_SWITCH ? &n->ports[0] : src;
	if (n->type == FSD_SWITCH) {
		egress = fsd_lft_egress(n, dlid < FSD_LFT_CAP ? dlid : 0);
	} else {
		egress = src->num;
	}
	for (int hop = 0; hop < MAX_HOPS; hop++) {
		struct fsd_port *e, *q;

		if (dlid >= FSD_LFT_CAP || egress < 1 || egress > n->nports) {
			*why = FSD_C_NO_ROUTE;
			return NULL;
		}
		e = &n->ports[egress];
		if (!link_ok(e, smp, why))
			return NULL;
		if (w && w->nlinks < MAX_HOPS)
			w->links[w->nlinks++] = e;
		q = e->peer;
		n = q->node;
		if (n->type == FSD_CA) {
			if (owns_lid(q, dlid))
				return q;
			*why = FSD_C_NO_ROUTE;
			return NULL;
		}
		if (owns_lid(&n->ports[0], dlid))
			return &n->ports[0];
		egress = fsd_lft_egress(n, dlid);
	}
	*why = FSD_C_NO_ROUTE; /* a loop in the LFTs */
	return NULL;
}

struct fsd_port *fsd_route_lid(struct fsd_port *src, uint16_t dlid, bool smp, enum fsd_counter *why)
{
	enum fsd_counter dummy;

	if (!src)
		return NULL;
	return route_lid(src, dlid, smp, why ? why : &dummy, NULL);
}

/* Walk a DR SMP; mutates its hop pointer and return path like the nodes
 * on the way would.  Returns the port it is handed up at. */
static struct fsd_port *route_dr(struct fsd_pkt *pkt, enum fsd_counter *why, struct walk *w)
{
	uint8_t *m = pkt->mad;
	int hop_cnt = m[DR_HDR_HOPCNT];
	int hop_ptr = m[DR_HDR_HOPPTR];
	bool dir_in = m[4] & 0x80;
	struct fsd_node *n = pkt->src->node;
	struct fsd_port *e;
	int egress;

	*why = FSD_C_NO_ROUTE;
	if (hop_cnt >= MAX_HOPS)
		return NULL;
	if (!dir_in) {
		/* outgoing: the originator sets hop_ptr 0 */
		if (hop_ptr != 0)
			return NULL;
		if (hop_cnt == 0) {
			m[DR_HDR_HOPPTR] = 1;
			return pkt->src; /* to our own SMA */
		}
		hop_ptr = 1;
		egress = m[DR_INITIAL_PATH + 1];
		if (n->type == FSD_CA && egress != pkt->src->num)
			return NULL; /* C14-9:1, must leave by its own port */
		for (;;) {
			if (egress < 1 || egress > n->nports)
				return NULL;
			e = &n->ports[egress];
			if (!link_ok(e, true, why))
				return NULL;
			w->links[w->nlinks++] = e;
			e = e->peer;
			n = e->node;
			m[DR_RETURN_PATH + hop_ptr] = (uint8_t)e->num;
			if (hop_ptr == hop_cnt) {
				m[DR_HDR_HOPPTR] = (uint8_t)(hop_cnt + 1);
				/* a LID routed tail (DrDLID not permissive)
				 * is not modelled: OpenSM does not use it */
				if (m[34] != 0xff || m[35] != 0xff) { /* DrDLID */
					*why = FSD_C_NO_ROUTE;
					return NULL;
				}
				return e;
			}
			if (n->type != FSD_SWITCH)
				return NULL; /* C14-9:2, only switches forward */
			hop_ptr++;
			egress = m[DR_INITIAL_PATH + hop_ptr];
		}
	}
	/* returning: hop_ptr = hop_cnt + 1 at the responder */
	if (hop_cnt == 0) {
		if (hop_ptr != 1)
			return NULL;
		m[DR_HDR_HOPPTR] = 0;
		return pkt->src;
	}
	if (hop_ptr != hop_cnt + 1)
		return NULL;
	hop_ptr = hop_cnt;
	egress = m[DR_RETURN_PATH + hop_ptr];
	for (;;) {
		if (egress < 1 || egress > n->nports)
			return NULL;
		e = &n->ports[egress];
		if (!link_ok(e, true, why))
			return NULL;
		w->links[w->nlinks++] = e;
		e = e->peer;
		n = e->node;
		if (hop_ptr == 1) {
			m[DR_HDR_HOPPTR] = 0;
			return e; /* back at the originator */
		}
		if (n->type != FSD_SWITCH)
			return NULL;
		hop_ptr--;
		egress = m[DR_RETURN_PATH + hop_ptr];
	}
}

bool fsd_trace; /* "fabsim trace on": one log line per MAD routed */

static const char *port_name(const struct fsd_port *p, char *buf, size_t len)
{
	snprintf(buf, len, "%.40s:%d", p->node->desc, p->num);
	return buf;
}

static void trace(const struct fsd_pkt *p, const struct fsd_port *dst, const char *what)
{
	char a[64], b[64];
	const uint8_t *m = p->mad;

	if (!fsd_trace)
		return;
	fsd_log("mad %s -> %s lid %u->%u class 0x%02x method 0x%02x attr 0x%04x tid "
		"0x%02x%02x%02x%02x%02x%02x%02x%02x status 0x%04x: %s",
		port_name(p->src, a, sizeof(a)), dst ? port_name(dst, b, sizeof(b)) : "-", p->slid,
		p->dlid, m[1], m[3], m[16] << 8 | m[17], m[8], m[9], m[10], m[11], m[12], m[13],
		m[14], m[15], m[4] << 8 | m[5], what);
}

static void count_drop(const struct fsd_pkt *p, enum fsd_counter why)
{
	static const char *names[FSD_C_MAX] = {
	    [FSD_C_NO_ROUTE] = "dropped: no route",
	    [FSD_C_LINK_DOWN] = "dropped: link down",
	    [FSD_C_FAULT_DROP] = "dropped: fault",
	    [FSD_C_PKEY_DROP] = "dropped: P_Key",
	};

	trace(p, NULL, why < FSD_C_MAX && names[why] ? names[why] : "dropped");
	fsd_count(why);
	fab.class_drop[p->mad[1]]++;
}

/* a response made by a node (SMA, or the MAD layer for unmatched
 * requests), sent back the way the request came */
static void respond(struct fsd_port *at, const struct fsd_pkt *req, const uint8_t *resp)
{
	struct fsd_pkt r;

	memset(&r, 0, sizeof(r));
	r.src = at;
	r.len = FSD_MAD_SIZE;
	memcpy(r.mad, resp, FSD_MAD_SIZE);
	r.sqpn = req->dqpn;
	r.dqpn = req->sqpn;
	r.qkey = req->dqpn ? 0x80010000u : 0;
	r.sl = req->sl;
	r.pkey_index = req->pkey_index;
	if (resp[1] == 0x81) {
		r.slid = r.dlid = FSD_PERMISSIVE_LID;
	} else {
		r.slid = fsd_port_lid(at);
		r.dlid = req->slid;
	}
	fsd_pkt_inject(&r);
}

/* the MAD layer's answer to a Get/Set nobody handles (ib_mad
 * generate_unmatched_resp): status "unsupported method/attribute" */
void fsd_unmatched_resp(struct fsd_port *at, const struct fsd_pkt *req);
void fsd_unmatched_resp(struct fsd_port *at, const struct fsd_pkt *req)
{
	uint8_t resp[FSD_MAD_SIZE];
	int method = req->mad[3];

	if (method != IB_MAD_METHOD_GET && method != IB_MAD_METHOD_SET)
		return;
	memcpy(resp, req->mad, FSD_MAD_SIZE);
	resp[3] = IB_MAD_METHOD_GET_RESPONSE;
	resp[4] = 0;
	resp[5] = 0x0c;
	if (resp[1] == 0x81)
		resp[4] |= 0x80;
	respond(at, req, resp);
}

static void arrive(struct fsd_port *dst, struct fsd_pkt *p)
{
	struct fsd_node *n = dst->node;
	bool smp = p->mad[1] == 0x01 || p->mad[1] == 0x81;
	uint8_t resp[FSD_MAD_SIZE];

	fab.class_fwd[p->mad[1]]++;
	if (dst->capture)
		fsd_capture_pkt(dst, p);
	if (smp && !(p->mad[3] & 0x80)) {
		int r = fsd_sma_handle(n, dst->num, p->mad, resp);

		if (r == 1) {
			respond(dst, p, resp);
			return;
		}
		if (r == 0)
			return;
	}
	if (p->mad[1] == 0x04 && !(p->mad[3] & 0x80) && p->dqpn == 1) {
		/* the PMA is the driver's/firmware's, like the SMA */
		if (fsd_pma_handle(n, dst->num ? dst->num : 1, p->mad, resp) == 1)
			respond(dst, p, resp);
		return;
	}
	if (n->type == FSD_SWITCH) {
		/* nothing above the SMA runs on a switch */
		if (!(p->mad[3] & 0x80))
			fsd_unmatched_resp(dst, p);
		else
			fsd_count(FSD_C_NO_AGENT);
		return;
	}
	fsd_umad_deliver(dst, p);
}

/*
 * P_Key check of a MAD at the port it reaches, as the HCA (or a switch's
 * port 0) does for every packet but those of QP0 (IBA 10.9.3): the
 * sender's P_Key (its table's entry at the packet's index) must be in
 * the receiver's table, same partition, and not both limited members.
 * On success the packet's index becomes the receiver's, which it reports
 * in the receive completion (and answers with).  A packet refused
 * counts in the port's P_KeyViolations (PortInfo) and in pkey_drop.
 */
static bool pkey_admit(struct fsd_pkt *p, struct fsd_port *dst)
{
	uint16_t pkey = p->pkey_index < FSD_PKEYS ? p->src->pkeys[p->pkey_index] : 0;
	int ok = -1;

	if (p->mad[1] == 0x01 || p->mad[1] == 0x81 || p->dqpn == 0)
		return true;
	for (int i = 0; (pkey & 0x7fff) && i < FSD_PKEYS; i++) {
		uint16_t mine = dst->pkeys[i];

		if ((mine & 0x7fff) != (pkey & 0x7fff) || !((mine | pkey) & 0x8000))
			continue;
		if (mine == pkey) {
			ok = i;
			break;
		}
		if (ok < 0)
			ok = i;
	}
	if (ok < 0) {
		uint32_t v = mad_get_field(dst->pi, 0, IB_PORT_PKEY_VIOL_F);

		if (v < 0xffff)
			mad_set_field(dst->pi, 0, IB_PORT_PKEY_VIOL_F, v + 1);
		return false;
	}
	p->pkey_index = (uint16_t)ok;
	return true;
}

static void process(struct fsd_pkt *p)
{
	struct walk w = {.nlinks = 0};
	struct fsd_pkt work = *p;
	enum fsd_counter why = FSD_C_NO_ROUTE;
	struct fsd_port *dst;
	bool dr = p->mad[1] == 0x81;
	bool smp = dr || p->mad[1] == 0x01;
	int copies = 1;
	uint32_t delay = 0;

	if (!p->nocap_src && p->src->capture && p->src->node->type == FSD_CA)
		fsd_capture_pkt(p->src, p);
	p->nocap_src = true;
	if (dr)
		dst = route_dr(&work, &why, &w);
	else
		dst = route_lid(p->src, p->dlid, smp, &why, &w);
	if (!dst) {
		count_drop(p, why);
		return;
	}
	if (!p->faulted) {
		uint32_t d = 0;

		copies = fsd_fault_apply(NULL, NULL, p->mad, &d);
		delay = d;
		for (int i = 0; i < w.nlinks && copies; i++) {
			int c = fsd_fault_apply(w.links[i], w.links[i]->peer, p->mad, &d);

			if (c == 0)
				copies = 0;
			else if (c == 2)
				copies = 2;
			if (d > delay)
				delay = d;
		}
		if (!copies) {
			count_drop(p, FSD_C_FAULT_DROP);
			return;
		}
		if (delay) {
			struct fsd_pkt *dp = malloc(sizeof(*dp));

			fsd_count(FSD_C_FAULT_DELAY);
			if (dp) {
				*dp = *p;
				delay_pkt(dp, delay);
			}
			if (copies < 2)
				return;
			copies = 1; /* a duplicate goes now, the original later */
		}
		if (copies == 2)
			fsd_count(FSD_C_FAULT_DUP);
	}
	for (int i = 0; i < w.nlinks; i++) {
		/* LRH + BTH + DETH + MAD + ICRC = 288 bytes = 72 words */
		w.links[i]->xmit_pkts++;
		w.links[i]->xmit_words += 72;
		w.links[i]->peer->rcv_pkts++;
		w.links[i]->peer->rcv_words += 72;
	}
	if (!pkey_admit(&work, dst)) {
		count_drop(p, FSD_C_PKEY_DROP);
		return;
	}
	for (int i = 0; i < copies; i++) {
		struct fsd_pkt one = work;

		trace(&one, dst, i ? "delivered (duplicate)" : "delivered");
		arrive(dst, &one);
	}
}

void fsd_pkt_run_queue(void)
{
	uint64_t now = 0;

	for (int budget = 0; budget < 100000; budget++) {
		struct fsd_pkt *p;

		if (q_head) {
			p = q_head;
			q_head = p->next;
			if (!q_head)
				q_tail = NULL;
		} else if (delayed) {
			if (!now)
				now = fsd_now_ns();
			if (delayed->due_ns > now)
				return;
			p = delayed;
			delayed = p->next;
		} else {
			return;
		}
		process(p);
		free(p);
	}
}
