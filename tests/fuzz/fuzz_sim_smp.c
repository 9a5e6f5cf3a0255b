/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The simulator's MAD decoders on arbitrary MADs, in process: a small
 * fabric (b2b, star:3 or fattree:4) is built and configured as OpenSM
 * would leave it
 * (LIDs, Active ports, LFTs, through the SMA's own Set path), every CA port
 * gets a umad stream with agents (SA with kernel RMPP, CM, vendor class
 * with OUI and RMPP, SM classes, send-only), then the input is a program
 * of operations:
 *   - a MAD put on the wire at a CA port or a switch port 0 (LID routed or
 *     directed route SMP, PMA, any GMP): route.c, sma.c, pma.c, the MAD
 *     layer's receive path in umad_kern.c and rmpp.c's reassembly;
 *   - a MAD handed straight to the SMA or the PMA of any node and port;
 *   - a umad_send() from a client (struct ib_user_mad + MAD, any length):
 *     TIDs, send timeouts, kernel RMPP segmentation;
 *   - agent (un)registration, fault rules, link down/up, time passing.
 * Each fabric is built and configured once, on its first input, and
 * saved; every input starts from a copy of the saved state (nodes, ports,
 * LFTs, counters), so inputs stay independent without a rebuild each.
 * Nothing may crash, leak or read out of bounds; what reaches a client
 * must be a whole struct ib_user_mad + MAD (checked in sim_env.c); once
 * the agents are closed no send, retry or reassembly may be left.  The
 * input format is what tests/data/fuzz_sim/gen_smp_seeds.py writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include "tests/fuzz/sim_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern bool fsd_trace; /* sim/route.c: one log line per MAD routed */

#define SMP_DATA 64
#define MAX_STREAMS 8

struct cursor {
	const uint8_t *p;
	size_t left;
};

/* the next n input bytes, zero-filled once the input runs out */
static void take(struct cursor *c, void *out, size_t n)
{
	size_t k = n < c->left ? n : c->left;

	memcpy(out, c->p, k);
	memset((uint8_t *)out + k, 0, n - k);
	c->p += k;
	c->left -= k;
}

static uint8_t u8(struct cursor *c)
{
	uint8_t v;

	take(c, &v, 1);
	return v;
}

static uint16_t u16(struct cursor *c)
{
	uint8_t b[2];

	take(c, b, 2);
	return (uint16_t)(b[0] << 8 | b[1]);
}

/* a MAD of 1..256 input bytes (length first), zero padded to 256 */
static void take_mad(struct cursor *c, uint8_t *mad)
{
	size_t n = (size_t)u8(c) + 1;

	memset(mad, 0, FSD_MAD_SIZE);
	take(c, mad, n);
}

static struct fsd_conn *streams[MAX_STREAMS], *ctls[MAX_STREAMS];
static int nstreams;

static struct fsd_port *ca_port(int i)
{
	int k = 0;

	for (int n = 0; n < fab.num_nodes; n++) {
		struct fsd_node *node = fab.nodes[n];

		if (node->type != FSD_CA)
			continue;
		for (int p = 1; p <= node->nports; p++)
			if (k++ == i)
				return &node->ports[p];
	}
	return NULL;
}

/* ---- set-up, through the SMA's Set path as the SM would do it ---- */

static void sma_set(struct fsd_node *n, int in_port, uint16_t attr, uint32_t mod,
		    const uint8_t *attr_data)
{
	uint8_t mad[FSD_MAD_SIZE], resp[FSD_MAD_SIZE];

	memset(mad, 0, sizeof(mad));
	mad[0] = 1;
	mad[1] = 0x81;
	mad[2] = 1;
	mad[3] = IB_MAD_METHOD_SET;
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	mad[20] = (uint8_t)(mod >> 24);
	mad[21] = (uint8_t)(mod >> 16);
	mad[22] = (uint8_t)(mod >> 8);
	mad[23] = (uint8_t)mod;
	memset(mad + 32, 0xff, 4); /* permissive DrSLID, DrDLID */
	memcpy(mad + SMP_DATA, attr_data, 64);
	fsd_sma_handle(n, in_port, mad, resp);
}

static void port_set(struct fsd_port *p, uint16_t lid, uint16_t smlid, int state)
{
	uint8_t pi[64];
	int in = p->node->type == FSD_SWITCH ? 0 : p->num;

	memcpy(pi, p->pi, 64);
	if (lid)
		mad_set_field(pi, 0, IB_PORT_LID_F, lid);
	mad_set_field(pi, 0, IB_PORT_SMLID_F, smlid);
	mad_set_field(pi, 0, IB_PORT_STATE_F, (uint32_t)state);
	mad_set_field(pi, 0, IB_PORT_PHYS_STATE_F, 0);
	sma_set(p->node, in, 0x15, p->node->type == FSD_SWITCH ? (uint32_t)p->num : 0, pi);
}

/* LFT block 0 of every switch: shortest paths, found by a walk outward
 * from each destination (the fabrics here have fewer than 63 nodes) */
static void program_lfts(void)
{
	static uint8_t lft[64][64];
	struct fsd_node *queue[64];

	if (fab.num_nodes >= 63)
		return;
	memset(lft, 0xff, sizeof(lft));
	for (int d = 0; d < fab.num_nodes; d++) {
		bool seen[64] = {false};
		int head = 0, tail = 0;

		queue[tail++] = fab.nodes[d];
		seen[d] = true;
		lft[d][d + 1] = 0;
		while (head < tail) {
			struct fsd_node *n = queue[head++];

			if (n->type != FSD_SWITCH && n->index != d)
				continue; /* only switches forward */
			for (int p = 1; p <= n->nports; p++) {
				struct fsd_port *q = n->ports[p].peer;

				if (!q || seen[q->node->index])
					continue;
				seen[q->node->index] = true;
				/* q's node reaches d through its port q */
				lft[q->node->index][d + 1] = (uint8_t)q->num;
				queue[tail++] = q->node;
			}
		}
	}
	for (int i = 0; i < fab.num_nodes; i++)
		if (fab.nodes[i]->type == FSD_SWITCH)
			sma_set(fab.nodes[i], 0, 0x19, 0, lft[i]);
}

static void configure(void)
{
	uint16_t smlid = 0;

	/* LID = node index + 1; the SM runs on the first CA */
	for (int i = 0; i < fab.num_nodes && !smlid; i++)
		if (fab.nodes[i]->type == FSD_CA)
			smlid = (uint16_t)(i + 1);
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];

		if (n->type == FSD_SWITCH)
			port_set(&n->ports[0], (uint16_t)(i + 1), smlid, 0);
		for (int p = 1; p <= n->nports; p++) {
			if (!n->ports[p].peer)
				continue;
			port_set(&n->ports[p], n->type == FSD_CA ? (uint16_t)(i + 1) : 0, smlid, 3);
			port_set(&n->ports[p], 0, smlid, 4);
		}
	}
	program_lfts();
}

static void reg(struct fsd_conn *ctl, struct fsd_conn *s, uint8_t cls, uint8_t ver, uint8_t rmpp,
		uint32_t oui)
{
	struct fsp_register r;

	memset(&r, 0, sizeof(r));
	r.stream_id = s->id;
	r.mgmt_class = cls;
	r.class_version = ver;
	r.rmpp_version = rmpp;
	r.use_oui = oui != 0;
	r.oui = oui;
	r.method_mask[0] = r.method_mask[1] = ~0ull;
	fsd_agent_register(ctl, &r);
}

static void open_streams(void)
{
	struct fsd_port *p;

	nstreams = 0;
	for (int i = 0; i < MAX_STREAMS && (p = ca_port(i)); i++) {
		int host = p->node->host_id;
		struct fsd_conn *s = sim_env_conn_new(FSP_KIND_STREAM, host, p);
		struct fsd_conn *ctl = sim_env_conn_new(FSP_KIND_CTL, host, NULL);

		if (!s || !ctl)
			break;
		streams[nstreams] = s;
		ctls[nstreams++] = ctl;
		reg(ctl, s, 0x03, 2, 1, 0);	   /* SA, kernel RMPP */
		reg(ctl, s, 0x07, 2, 0, 0);	   /* CM */
		reg(ctl, s, 0x30, 1, 1, 0x001405); /* vendor range 2, RMPP */
		reg(ctl, s, 0x06, 1, 0, 0);	   /* user RMPP: raw segments */
		reg(ctl, s, 0x01, 1, 0, 0);	   /* SM, LID routed */
		reg(ctl, s, 0x81, 1, 0, 0);	   /* SM, directed route */
		reg(ctl, s, 0x04, 1, 0, 0);	   /* a perf manager */
		reg(ctl, s, 0, 0, 0, 0);	   /* send-only */
	}
}

/* ---- operations ---- */

enum op {
	OP_WIRE,       /* raw MAD on the wire */
	OP_WIRE_DR,    /* DR SMP, outgoing, header forced */
	OP_WIRE_LID,   /* LID routed SMP to a LID */
	OP_WIRE_PMA,   /* PMA request to a LID */
	OP_SMA,	       /* straight to a node's SMA */
	OP_PMA,	       /* straight to a node's PMA */
	OP_UMAD_SEND,  /* umad_send() from a client */
	OP_RMPP_SEG,   /* an RMPP DATA/ACK/STOP/ABORT segment arriving */
	OP_REGISTER,   /* register an agent with fuzzed parameters */
	OP_UNREGISTER, /* unregister one */
	OP_TIME,       /* time passes: timers fire */
	OP_FAULT,      /* add a fault rule */
	OP_LINK,       /* a link goes down or up */
	OP_MAX
};

static struct fsd_port *pick_src(struct cursor *c)
{
	uint8_t b = u8(c);
	struct fsd_node *n = fab.nodes[(b >> 4) % fab.num_nodes];

	if (n->type == FSD_SWITCH)
		return &n->ports[0];
	return &n->ports[1 + (b & 0xf) % n->nports];
}

static void wire(struct fsd_port *src, uint16_t dlid, uint32_t dqpn, const uint8_t *mad)
{
	struct fsd_pkt pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.src = src;
	pkt.len = FSD_MAD_SIZE;
	memcpy(pkt.mad, mad, FSD_MAD_SIZE);
	pkt.dqpn = dqpn;
	pkt.sqpn = mad[1] == 0x01 || mad[1] == 0x81 ? 0 : 1;
	pkt.qkey = pkt.sqpn ? 0x80010000u : 0;
	if (mad[1] == 0x81) {
		pkt.slid = pkt.dlid = FSD_PERMISSIVE_LID;
	} else {
		pkt.slid = fsd_port_lid(src);
		pkt.dlid = dlid;
	}
	fsd_pkt_inject(&pkt);
	fsd_pkt_run_queue();
}

/*
 * Half of the SMPs and PMA requests the target builds get an attribute
 * the agent knows and a plausible method and modifier, so every
 * attribute's Get and Set are reached at once; the other half stay raw.
 */
static void shape_smp(uint8_t *mad)
{
	static const uint16_t attrs[] = {0x0010, 0x0011, 0x0012, 0x0014, 0x0015, 0x0016, 0x0017,
					 0x0018, 0x0019, 0x001b, 0x0020, 0xff90, 0x0002, 0x0001};
	static const uint8_t methods[] = {IB_MAD_METHOD_GET,  IB_MAD_METHOD_SET,
					  IB_MAD_METHOD_TRAP, IB_MAD_METHOD_TRAP_REPRESS,
					  IB_MAD_METHOD_GET,  IB_MAD_METHOD_SET};
	uint16_t a;

	if (mad[18] & 0x80)
		return;
	a = attrs[mad[17] % (sizeof(attrs) / sizeof(attrs[0]))];
	mad[16] = (uint8_t)(a >> 8);
	mad[17] = (uint8_t)a;
	mad[3] = methods[mad[3] % sizeof(methods)];
	if (!(mad[18] & 0x40)) {
		/* small modifiers: port numbers, blocks, MFT position */
		mad[20] &= 0x30;
		mad[21] %= 4;
		mad[22] %= 2;
		mad[23] %= 8;
	}
}

static void shape_pma(uint8_t *mad)
{
	static const uint16_t attrs[] = {0x0001, 0x0012, 0x001d};

	mad[0] = 1, mad[1] = 0x04, mad[2] = 1;
	if (mad[18] & 0x80)
		return;
	mad[16] = 0;
	mad[17] = (uint8_t)attrs[mad[17] % 3];
	mad[3] = mad[3] & 1 ? IB_MAD_METHOD_GET : IB_MAD_METHOD_SET;
	if (mad[65] & 0x80)
		mad[65] %= 6; /* PortSelect */
}

static void op_wire(struct cursor *c, enum op op)
{
	struct fsd_port *src = pick_src(c);
	uint16_t dlid = u16(c);
	uint8_t q = u8(c);
	uint8_t mad[FSD_MAD_SIZE];

	take_mad(c, mad);
	if (op == OP_WIRE_DR) {
		int hops = mad[7] % 4;

		mad[0] = 1, mad[1] = 0x81, mad[2] = 1;
		mad[3] = mad[3] & 0x7f;
		shape_smp(mad);
		mad[4] &= 0x7f; /* outgoing */
		mad[6] = 0;	/* hop pointer */
		mad[7] = (uint8_t)hops;
		memset(mad + 32, 0xff, 4);
		if (src->node->type == FSD_CA)
			mad[128 + 1] = (uint8_t)src->num;
	} else if (op == OP_WIRE_LID) {
		mad[0] = 1, mad[1] = 0x01, mad[2] = 1;
		shape_smp(mad);
		dlid = (uint16_t)(1 + dlid % (fab.num_nodes + 1));
		/* the lookups the verbs data path makes */
		fsd_port_by_lid(dlid);
		fsd_route_lid(src, dlid, q & 1, NULL);
	} else if (op == OP_WIRE_PMA) {
		shape_pma(mad);
		dlid = (uint16_t)(1 + dlid % (fab.num_nodes + 1));
		q = 1;
	}
	wire(src, dlid, q & 1 ? 1 : q, mad);
}

static void op_agent_direct(struct cursor *c, enum op op)
{
	uint8_t b = u8(c);
	struct fsd_node *n = fab.nodes[b % fab.num_nodes];
	int in_port = u8(c) % (n->nports + 1);
	uint8_t mad[FSD_MAD_SIZE], resp[FSD_MAD_SIZE];

	if (n->type == FSD_CA && in_port == 0)
		in_port = 1; /* a CA has no port 0 */
	take_mad(c, mad);
	if (op == OP_SMA) {
		shape_smp(mad);
		fsd_sma_handle(n, in_port, mad, resp);
	} else {
		shape_pma(mad);
		fsd_pma_handle(n, in_port, mad, resp);
	}
	/* the SMA may have queued traps */
	fsd_pkt_run_queue();
}

static void op_umad_send(struct cursor *c)
{
	uint8_t b = u8(c);
	struct fsd_conn *s;
	struct ib_user_mad u;
	uint8_t *msg;
	size_t mlen;

	if (!nstreams)
		return;
	s = streams[b % nstreams];
	memset(&u, 0, sizeof(u));
	u.agent_id = u8(c) % (FSD_MAX_AGENTS + 4);
	u.timeout_ms = u8(c);
	u.retries = u8(c) % 4;
	u.addr.lid = htons(u16(c));
	u.addr.qpn = htonl(u8(c));
	u.addr.qkey = htonl(0x80010000u);
	u.addr.sl = u8(c);
	u.addr.path_bits = u8(c);
	u.addr.grh_present = u8(c) & 1;
	u.addr.pkey_index = u8(c);
	/* up to four segments' worth: kernel RMPP cuts it up */
	mlen = u16(c) % (4 * FSD_MAD_SIZE + 1);
	msg = calloc(1, sizeof(u) + mlen);
	if (!msg)
		return;
	memcpy(msg, &u, sizeof(u));
	take(c, msg + sizeof(u), mlen);
	fsd_umad_send(s, msg, sizeof(u) + mlen);
	free(msg);
	fsd_pkt_run_queue();
}

static void op_rmpp_seg(struct cursor *c)
{
	struct fsd_port *src = pick_src(c);
	uint16_t dlid = u16(c);
	uint8_t mad[FSD_MAD_SIZE];
	static const uint8_t classes[] = {0x03, 0x30, 0x06, 0x10};

	take_mad(c, mad);
	mad[0] = 1;
	mad[1] = classes[mad[1] % sizeof(classes)];
	mad[2] = mad[1] == 0x03 ? 2 : 1;
	mad[24] = 1;			      /* RMPP version */
	mad[25] = (uint8_t)(1 + mad[25] % 4); /* DATA, ACK, STOP, ABORT */
	mad[26] |= 1;			      /* active */
	mad[28] = mad[29] = mad[30] = 0;      /* small segment numbers */
	/* TIDs easy to repeat: a hi_tid (the agent's, in byte 11) and a low
	 * 16 bits, so later segments and ACKs can match earlier ones */
	mad[8] = mad[9] = mad[10] = mad[12] = mad[13] = 0;
	mad[11] %= 16;
	mad[37] = 0x00, mad[38] = 0x14, mad[39] = 0x05;
	wire(src, (uint16_t)(1 + dlid % (fab.num_nodes + 1)), 1, mad);
}

static void op_register(struct cursor *c, bool unreg)
{
	uint8_t b = u8(c);

	if (!nstreams)
		return;
	if (unreg) {
		struct fsp_unregister r = {
		    .stream_id = streams[b % nstreams]->id + (b & 0x80 ? 1 : 0),
		    .agent_id = u8(c) % (FSD_MAX_AGENTS + 2),
		};

		fsd_agent_unregister(ctls[b % nstreams], &r);
	} else {
		struct fsp_register r;

		take(c, &r, sizeof(r));
		/* mostly a real stream, sometimes garbage */
		if (!(b & 0x80))
			r.stream_id = streams[b % nstreams]->id;
		fsd_agent_register(ctls[(b >> 3) % nstreams], &r);
	}
}

static void op_time(struct cursor *c)
{
	uint8_t b = u8(c);

	/* 1..128 ms, or a leap of 1..128 s */
	sim_env_now += (uint64_t)((b & 0x7f) + 1) * (b & 0x80 ? 1000000000ull : 1000000ull);
	/* what the event loop asks before it sleeps */
	fsd_pkt_next_due_ms();
	fsd_umad_next_due_ms();
	fsd_rmpp_next_due_ms();
	fsd_umad_timers(sim_env_now);
	fsd_rmpp_timers(sim_env_now);
	fsd_pkt_run_queue();
}

static void op_fault(struct cursor *c)
{
	static const char *const kinds[] = {"drop", "dup", "reorder", "delay 5", "delay 300"};
	uint8_t b = u8(c), cls = u8(c);
	char cmd[128], out[256];
	int prob = u8(c) % 101;

	if (b & 0x80) {
		struct fsd_port *p = ca_port(b % 4);

		if (!p)
			return;
		snprintf(cmd, sizeof(cmd), "add link %s:%d %s prob %d.%02d", p->node->id, p->num,
			 kinds[b % 5], prob / 100, prob % 100);
	} else {
		snprintf(cmd, sizeof(cmd), "add class 0x%x %s prob %d.%02d", cls, kinds[b % 5],
			 prob / 100, prob % 100);
	}
	fsd_fault_cmd(cmd, out, sizeof(out));
}

static void op_link(struct cursor *c)
{
	uint8_t b = u8(c);
	struct fsd_node *n = fab.nodes[b % fab.num_nodes];
	struct fsd_port *p = &n->ports[1 + (b >> 4) % n->nports];

	p->admin_down = !p->admin_down; /* as "fabsim link NODE PORT down|up" */
	fsd_port_link_event(p);
	fsd_pkt_run_queue();
}

static void drain(void)
{
	char out[64];

	fsd_fault_cmd("clear", out, sizeof(out));
	for (int i = 0; i < 1000 && fsd_pkt_next_due_ms() >= 0; i++) {
		sim_env_now += 10000000000ull;
		fsd_pkt_run_queue();
	}
	if (fsd_pkt_next_due_ms() >= 0) {
		fprintf(stderr, "packet queue does not drain\n");
		abort();
	}
}

/* ---- the fabrics, built once and restored before each input ---- */

struct saved_node {
	struct fsd_node node;
	struct fsd_port *ports; /* [0 .. nports] */
	uint8_t *lft;		/* node.lft_len bytes */
};

struct saved_fabric {
	struct fsd_fabric fab;
	struct saved_node *nodes;
};

static void *memdup(const void *p, size_t n)
{
	void *q = n ? malloc(n) : NULL;

	if (n && !q)
		abort();
	if (n)
		memcpy(q, p, n);
	return q;
}

/* Build and configure the fabric `spec` in fab and save its state; the
 * fabrics stay allocated for the process (fab is swapped between them). */
static void fabric_build(struct saved_fabric *sf, const char *spec)
{
	memset(&fab, 0, sizeof(fab));
	if (fsd_topo_generate(spec, stderr) || fsd_topo_finish(stderr))
		abort();
	configure();
	if (fsd_pkt_next_due_ms() >= 0) /* a packet queued is state not saved */
		abort();
	sf->nodes = calloc((size_t)fab.num_nodes, sizeof(*sf->nodes));
	if (!sf->nodes)
		abort();
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];
		struct saved_node *sn = &sf->nodes[i];

		if (n->mft) /* configure() sets no MFT: restore() frees any */
			abort();
		sn->node = *n;
		sn->ports = memdup(n->ports, (size_t)(n->nports + 1) * sizeof(*n->ports));
		sn->lft = memdup(n->lft, n->lft_len);
	}
	sf->fab = fab;
}

/* fab as fabric_build() left it: what an input changed is undone. */
static void fabric_restore(const struct saved_fabric *sf)
{
	fab = sf->fab;
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];
		const struct saved_node *sn = &sf->nodes[i];
		struct fsd_port *ports = n->ports;
		uint8_t *lft = n->lft;

		free(n->mft);
		if (n->lft_len != sn->node.lft_len) { /* a Set grew it */
			free(lft);
			lft = memdup(sn->lft, sn->node.lft_len);
		} else if (lft) {
			memcpy(lft, sn->lft, sn->node.lft_len);
		}
		memcpy(ports, sn->ports, (size_t)(sn->node.nports + 1) * sizeof(*ports));
		*n = sn->node;
		n->ports = ports;
		n->lft = lft;
		n->mft = NULL;
	}
}

/* What an input opened on the ports and nothing restores: captures. */
static void fabric_release(void)
{
	for (int i = 0; i < fab.num_nodes; i++)
		for (int p = 0; p <= fab.nodes[i]->nports; p++)
			fsd_capture_stop(&fab.nodes[i]->ports[p]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const topos[] = {"b2b", "star:3", "b2b", "fattree:4"};
	static struct saved_fabric fabrics[4];
	struct cursor c = {data, size};
	char out[64];
	uint8_t cfg = u8(&c);
	int k = (cfg & 3) == 2 ? 0 : cfg & 3; /* b2b twice: one fabric */

	sim_env_now = 1000000000ull;
	fsd_trace = false;
	if (!fabrics[k].nodes)
		fabric_build(&fabrics[k], topos[k]);
	fabric_restore(&fabrics[k]);
	fsd_trace = cfg & 4;
	fsd_fault_cmd("seed 1", out, sizeof(out));
	if (cfg & 8) /* the capture writer sees every MAD too */
		fsd_capture_start(ca_port(0), "/dev/null");
	open_streams();
	while (c.left) {
		enum op op = (enum op)(u8(&c) % OP_MAX);

		switch (op) {
		case OP_WIRE:
		case OP_WIRE_DR:
		case OP_WIRE_LID:
		case OP_WIRE_PMA:
			op_wire(&c, op);
			break;
		case OP_SMA:
		case OP_PMA:
			op_agent_direct(&c, op);
			break;
		case OP_UMAD_SEND:
			op_umad_send(&c);
			break;
		case OP_RMPP_SEG:
			op_rmpp_seg(&c);
			break;
		case OP_REGISTER:
		case OP_UNREGISTER:
			op_register(&c, op == OP_UNREGISTER);
			break;
		case OP_TIME:
			op_time(&c);
			break;
		case OP_FAULT:
			op_fault(&c);
			break;
		case OP_LINK:
			op_link(&c);
			break;
		default:
			break;
		}
	}
	drain();
	sim_env_conns_free();
	/* with every agent gone, no send, retry or reassembly may be left
	 * (it would point at freed agents and ports) */
	if (fsd_umad_next_due_ms() >= 0 || fsd_rmpp_next_due_ms() >= 0 ||
	    fsd_pkt_next_due_ms() >= 0) {
		fprintf(stderr, "state left behind after the agents closed\n");
		abort();
	}
	fabric_release();
	return 0;
}
