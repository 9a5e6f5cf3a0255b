/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The Subnet Management Agent of every node: the attributes OpenSM reads
 * and programs.  Field layouts come from libibmad (mad_get_field /
 * mad_set_field on the 64-byte SMP data), never from madcm's own codecs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mad.h>

#include "sim/fabsimd.h"

#define SMP_DATA 64 /* IB_SMP_DATA_OFFS */

/* IBA MAD status codes (already shifted into the 16-bit status field) */
#define ST_METHOD_UNSUPP 0x0008
#define ST_ATTR_UNSUPP 0x000c
#define ST_INVALID 0x001c

enum {
	ATTR_NODE_DESC = 0x10,
	ATTR_NODE_INFO = 0x11,
	ATTR_SWITCH_INFO = 0x12,
	ATTR_GUID_INFO = 0x14,
	ATTR_PORT_INFO = 0x15,
	ATTR_PKEY_TABLE = 0x16,
	ATTR_SL2VL = 0x17,
	ATTR_VLARB = 0x18,
	ATTR_LFT = 0x19,
	ATTR_MFT = 0x1b,
	ATTR_SM_INFO = 0x20,
	ATTR_MLNX_EXT_PORT_INFO = 0xff90,
};

enum { PS_DOWN = 1, PS_INIT = 2, PS_ARMED = 3, PS_ACTIVE = 4 };
enum { PHYS_POLLING = 2, PHYS_DISABLED = 3, PHYS_LINKUP = 5 };

static uint32_t pget(const struct fsd_port *p, enum MAD_FIELDS f)
{
	return (uint32_t)mad_get_field((void *)p->pi, 0, f);
}

static void pset(struct fsd_port *p, enum MAD_FIELDS f, uint32_t v)
{
	mad_set_field(p->pi, 0, f, v);
}

uint16_t fsd_port_lid(const struct fsd_port *p)
{
	if (p->node->type == FSD_SWITCH)
		p = &p->node->ports[0];
	return (uint16_t)pget(p, IB_PORT_LID_F);
}

int fsd_port_lmc(const struct fsd_port *p)
{
	if (p->node->type == FSD_SWITCH)
		p = &p->node->ports[0];
	return (int)pget(p, IB_PORT_LMC_F);
}

bool fsd_port_phys_up(const struct fsd_port *p)
{
	if (p->num == 0)
		return true;
	return pget(p, IB_PORT_PHYS_STATE_F) == PHYS_LINKUP;
}

int fsd_port_state(const struct fsd_port *p)
{
	if (p->node->type == FSD_SWITCH && p->num == 0) {
		/* base switch port 0 has no link of its own: it reports Active
		 * once the switch forwards, i.e. any external port is Active */
		int best = PS_DOWN;

		for (int i = 1; i <= p->node->nports; i++) {
			int s = (int)pget(&p->node->ports[i], IB_PORT_STATE_F);

			if (s > best)
				best = s;
		}
		return best == PS_ACTIVE ? PS_ACTIVE : best >= PS_INIT ? PS_INIT : PS_DOWN;
	}
	return (int)pget(p, IB_PORT_STATE_F);
}

static void state_changed(struct fsd_port *p)
{
	if (p->node->type == FSD_SWITCH)
		mad_set_field(p->node->si, 0, IB_SW_STATE_CHANGE_F, 1);
}

void fsd_port_set_state(struct fsd_port *p, int state, int phys)
{
	int old = (int)pget(p, IB_PORT_STATE_F);

	pset(p, IB_PORT_STATE_F, (uint32_t)state);
	if (phys)
		pset(p, IB_PORT_PHYS_STATE_F, (uint32_t)phys);
	if (old != state && (state == PS_DOWN || state == PS_INIT))
		state_changed(p);
	if (old != state)
		fsd_verbs_changed();
}

/*
 * Trap 128 (link state change) from a switch to its SM, as a switch does
 * when one of its links goes up or down: OpenSM answers with TrapRepress
 * and sweeps at once instead of at its next sweep interval.
 */
static void send_trap128(struct fsd_node *sw)
{
	static uint32_t trap_tid = 0x7a000000;
	struct fsd_port *p0 = &sw->ports[0];
	uint16_t lid = (uint16_t)pget(p0, IB_PORT_LID_F);
	uint16_t smlid = (uint16_t)pget(p0, IB_PORT_SMLID_F);
	struct fsd_pkt pkt;
	uint8_t *m = pkt.mad, *d = pkt.mad + SMP_DATA;

	if (!lid || !smlid)
		return; /* not configured by an SM yet: nobody to tell */
	memset(&pkt, 0, sizeof(pkt));
	pkt.src = p0;
	pkt.len = FSD_MAD_SIZE;
	pkt.slid = lid;
	pkt.dlid = smlid;
	m[0] = 1;    /* base version */
	m[1] = 0x01; /* LID routed SMP */
	m[2] = 1;
	m[3] = IB_MAD_METHOD_TRAP;
	trap_tid++;
	m[12] = (uint8_t)(trap_tid >> 24), m[13] = (uint8_t)(trap_tid >> 16);
	m[14] = (uint8_t)(trap_tid >> 8), m[15] = (uint8_t)trap_tid;
	m[16] = 0x00, m[17] = 0x02;			   /* Notice */
	d[0] = 0x80 | 1;				   /* generic, type urgent */
	d[3] = 2;					   /* producer: switch */
	d[4] = 0, d[5] = 128;				   /* trap number */
	d[6] = (uint8_t)(lid >> 8), d[7] = (uint8_t)lid;   /* issuer LID */
	d[10] = (uint8_t)(lid >> 8), d[11] = (uint8_t)lid; /* details: LIDADDR */
	fsd_pkt_inject(&pkt);
}

void fsd_port_link_event(struct fsd_port *p)
{
	struct fsd_port *q0 = p->peer;
	int before_p = (int)pget(p, IB_PORT_PHYS_STATE_F);
	int before_q = q0 ? (int)pget(q0, IB_PORT_PHYS_STATE_F) : 0;

	fsd_port_link_update(p);
	if (p->node->type == FSD_SWITCH && (int)pget(p, IB_PORT_PHYS_STATE_F) != before_p)
		send_trap128(p->node);
	if (q0 && q0->node->type == FSD_SWITCH && (int)pget(q0, IB_PORT_PHYS_STATE_F) != before_q)
		send_trap128(q0->node);
}

void fsd_port_link_update(struct fsd_port *p)
{
	struct fsd_port *q = p->peer;
	bool up = q && !p->admin_down && !q->admin_down;

	if (up) {
		if (pget(p, IB_PORT_PHYS_STATE_F) != PHYS_LINKUP)
			fsd_port_set_state(p, PS_INIT, PHYS_LINKUP);
		if (pget(q, IB_PORT_PHYS_STATE_F) != PHYS_LINKUP)
			fsd_port_set_state(q, PS_INIT, PHYS_LINKUP);
	} else {
		fsd_port_set_state(p, PS_DOWN, p->admin_down ? PHYS_DISABLED : PHYS_POLLING);
		if (q)
			fsd_port_set_state(q, PS_DOWN,
					   q->admin_down ? PHYS_DISABLED : PHYS_POLLING);
	}
}

void fsd_sma_init_port(struct fsd_port *p)
{
	bool sw = p->node->type == FSD_SWITCH;
	uint32_t w = p->link_width ? p->link_width : 2;

	memset(p->pi, 0, sizeof(p->pi));
	mad_set_field64(p->pi, 0, IB_PORT_GID_PREFIX_F, 0xfe80000000000000ull);
	/* a typical ConnectX CA: trap, auto-migration, SL mapping, system
	 * image GUID, CM, vendor class, client reregistration */
	pset(p, IB_PORT_CAPMASK_F, sw ? (p->num == 0 ? 0x00000048 : 0) : 0x02510868);
	pset(p, IB_PORT_LOCAL_PORT_F, (uint32_t)p->num);
	pset(p, IB_PORT_LINK_WIDTH_SUPPORTED_F, w | 1);
	pset(p, IB_PORT_LINK_WIDTH_ENABLED_F, w | 1);
	pset(p, IB_PORT_LINK_WIDTH_ACTIVE_F, w);
	pset(p, IB_PORT_LINK_SPEED_SUPPORTED_F, 7);
	pset(p, IB_PORT_STATE_F, PS_DOWN);
	pset(p, IB_PORT_PHYS_STATE_F, p->num == 0 ? PHYS_LINKUP : PHYS_POLLING);
	pset(p, IB_PORT_LINK_DOWN_DEF_F, PHYS_POLLING);
	pset(p, IB_PORT_LINK_SPEED_ACTIVE_F, 4); /* 10 Gb/s lane: QDR */
	pset(p, IB_PORT_LINK_SPEED_ENABLED_F, 7);
	pset(p, IB_PORT_NEIGHBOR_MTU_F, 5);
	pset(p, IB_PORT_VL_CAP_F, 4); /* VL0-7 */
	pset(p, IB_PORT_VL_ARBITRATION_HIGH_CAP_F, 8);
	pset(p, IB_PORT_VL_ARBITRATION_LOW_CAP_F, 8);
	pset(p, IB_PORT_MTU_CAP_F, 5); /* 4096 */
	pset(p, IB_PORT_OPER_VLS_F, 1);
	pset(p, IB_PORT_GUID_CAP_F, 1);
	pset(p, IB_PORT_RESP_TIME_VAL_F, 16);
	pset(p, IB_PORT_SUBN_TIMEOUT_F, 18);
	pset(p, IB_PORT_LOCAL_PHYS_ERR_F, 8);
	pset(p, IB_PORT_OVERRUN_ERR_F, 8);
	memset(p->pkeys, 0, sizeof(p->pkeys));
	p->pkeys[0] = 0xffff;
	for (int i = 0; i < 4; i++)
		memset(p->vlarb[i], 0, sizeof(p->vlarb[i]));
}

void fsd_sma_init_switch(struct fsd_node *n)
{
	memset(n->si, 0, sizeof(n->si));
	mad_set_field(n->si, 0, IB_SW_LINEAR_FDB_CAP_F, FSD_LFT_CAP);
	mad_set_field(n->si, 0, IB_SW_MCAST_FDB_CAP_F, FSD_MFT_CAP);
	mad_set_field(n->si, 0, IB_SW_DEF_MCAST_PRIM_F, 0xff);
	mad_set_field(n->si, 0, IB_SW_DEF_MCAST_NOT_PRIM_F, 0xff);
	mad_set_field(n->si, 0, IB_SW_LIFE_TIME_F, 18);
	mad_set_field(n->si, 0, IB_SW_MCAST_FDB_TOP_F, 0xc000 + FSD_MFT_CAP - 1);
	if (n->lft)
		memset(n->lft, 0xff, n->lft_len);
	if (n->mft)
		memset(n->mft, 0, FSD_MFT_CAP * sizeof(*n->mft));
}

/* Room in the LFT for `len` entries (a multiple of 64), new ones 0xff. */
static int lft_grow(struct fsd_node *n, uint32_t len)
{
	uint32_t cap = n->lft_len ? n->lft_len : 1024;
	uint8_t *t;

	if (len <= n->lft_len)
		return 0;
	while (cap < len)
		cap *= 2;
	if (cap > FSD_LFT_CAP)
		cap = FSD_LFT_CAP;
	t = realloc(n->lft, cap);
	if (!t)
		return -1;
	memset(t + n->lft_len, 0xff, cap - n->lft_len);
	n->lft = t;
	n->lft_len = cap;
	return 0;
}

static void node_info(struct fsd_node *n, int in_port, uint8_t *d)
{
	mad_set_field(d, 0, IB_NODE_BASE_VERS_F, 1);
	mad_set_field(d, 0, IB_NODE_CLASS_VERS_F, 1);
	mad_set_field(d, 0, IB_NODE_TYPE_F, n->type == FSD_SWITCH ? IB_NODE_SWITCH : IB_NODE_CA);
	mad_set_field(d, 0, IB_NODE_NPORTS_F, (uint32_t)n->nports);
	mad_set_field64(d, 0, IB_NODE_SYSTEM_GUID_F, n->sysguid);
	mad_set_field64(d, 0, IB_NODE_GUID_F, n->guid);
	mad_set_field64(d, 0, IB_NODE_PORT_GUID_F,
			n->type == FSD_SWITCH ? n->guid : n->ports[in_port].guid);
	mad_set_field(d, 0, IB_NODE_PARTITION_CAP_F, FSD_PKEYS);
	mad_set_field(d, 0, IB_NODE_DEVID_F, n->devid);
	mad_set_field(d, 0, IB_NODE_REVISION_F, 0xa0);
	mad_set_field(d, 0, IB_NODE_LOCAL_PORT_F, (uint32_t)in_port);
	mad_set_field(d, 0, IB_NODE_VENDORID_F, n->vendid);
}

static void port_info_get(struct fsd_port *p, int in_port, uint8_t *d)
{
	memcpy(d, p->pi, 64);
	mad_set_field(d, 0, IB_PORT_LOCAL_PORT_F, (uint32_t)in_port);
	mad_set_field(d, 0, IB_PORT_STATE_F, (uint32_t)fsd_port_state(p));
}

/* returns MAD status */
static int port_info_set(struct fsd_port *p, const uint8_t *d)
{
	static const enum MAD_FIELDS copy[] = {
	    IB_PORT_LID_F,
	    IB_PORT_SMLID_F,
	    IB_PORT_MKEY_LEASE_F,
	    IB_PORT_MKEY_PROT_BITS_F,
	    IB_PORT_LMC_F,
	    IB_PORT_SMSL_F,
	    IB_PORT_VL_HIGH_LIMIT_F,
	    IB_PORT_HOQ_LIFE_F,
	    IB_PORT_VL_STALL_COUNT_F,
	    IB_PORT_PART_EN_INB_F,
	    IB_PORT_PART_EN_OUTB_F,
	    IB_PORT_FILTER_RAW_INB_F,
	    IB_PORT_FILTER_RAW_OUTB_F,
	    IB_PORT_MKEY_VIOL_F,
	    IB_PORT_PKEY_VIOL_F,
	    IB_PORT_QKEY_VIOL_F,
	    IB_PORT_SUBN_TIMEOUT_F,
	    IB_PORT_LOCAL_PHYS_ERR_F,
	    IB_PORT_OVERRUN_ERR_F,
	};
	uint32_t v;
	int cur = fsd_port_state(p);
	int want = (int)mad_get_field((void *)d, 0, IB_PORT_STATE_F);
	int status = 0;

	/* validate the state request before changing anything */
	if (p->num != 0 || p->node->type != FSD_SWITCH) {
		if (want == PS_INIT || want > PS_ACTIVE)
			return ST_INVALID;
		if (want == PS_ARMED && cur != PS_INIT && cur != PS_ARMED)
			status = ST_INVALID; /* Active -> Armed is not a transition */
		if (want == PS_ACTIVE && cur != PS_ARMED && cur != PS_ACTIVE)
			status = ST_INVALID;
		if (status)
			return status;
	}
	for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++)
		pset(p, copy[i], (uint32_t)mad_get_field((void *)d, 0, copy[i]));
	/*
	 * ClientReregister (IBA 14.4.11): the SM asks the port's clients to
	 * register again (an HCA raises IBV_EVENT_CLIENT_REREGISTER); the
	 * bit itself reads back as 0.
	 */
	if (p->node->type == FSD_CA && mad_get_field((void *)d, 0, IB_PORT_CLIENT_REREG_F))
		p->rereg++;
	mad_set_field64(p->pi, 0, IB_PORT_GID_PREFIX_F,
			mad_get_field64((void *)d, 0, IB_PORT_GID_PREFIX_F));
	mad_set_field64(p->pi, 0, IB_PORT_MKEY_F, mad_get_field64((void *)d, 0, IB_PORT_MKEY_F));
	v = (uint32_t)mad_get_field((void *)d, 0, IB_PORT_LINK_WIDTH_ENABLED_F);
	if (v == 255)
		v = pget(p, IB_PORT_LINK_WIDTH_SUPPORTED_F);
	if (v)
		pset(p, IB_PORT_LINK_WIDTH_ENABLED_F, v);
	v = (uint32_t)mad_get_field((void *)d, 0, IB_PORT_LINK_SPEED_ENABLED_F);
	if (v == 15)
		v = pget(p, IB_PORT_LINK_SPEED_SUPPORTED_F);
	if (v)
		pset(p, IB_PORT_LINK_SPEED_ENABLED_F, v);
	v = (uint32_t)mad_get_field((void *)d, 0, IB_PORT_LINK_DOWN_DEF_F);
	if (v)
		pset(p, IB_PORT_LINK_DOWN_DEF_F, v);
	v = (uint32_t)mad_get_field((void *)d, 0, IB_PORT_NEIGHBOR_MTU_F);
	if (v)
		pset(p, IB_PORT_NEIGHBOR_MTU_F, v);
	v = (uint32_t)mad_get_field((void *)d, 0, IB_PORT_OPER_VLS_F);
	if (v)
		pset(p, IB_PORT_OPER_VLS_F, v);

	if (p->num == 0 && p->node->type == FSD_SWITCH)
		return 0;
	switch (want) {
	case PS_DOWN:
		/* the link retrains: both ends come back in Init */
		if (fsd_port_phys_up(p)) {
			fsd_port_set_state(p, PS_INIT, 0);
			if (p->peer)
				fsd_port_set_state(p->peer, PS_INIT, 0);
		}
		break;
	case PS_ARMED:
	case PS_ACTIVE:
		pset(p, IB_PORT_STATE_F, (uint32_t)want);
		break;
	default:
		break;
	}
	v = (uint32_t)mad_get_field((void *)d, 0, IB_PORT_PHYS_STATE_F);
	if (v == PHYS_DISABLED && !p->admin_down) {
		p->admin_down = true;
		fsd_port_link_event(p);
	} else if (v == PHYS_POLLING && p->admin_down) {
		p->admin_down = false;
		fsd_port_link_event(p);
	}
	return 0;
}

static int switch_info_set(struct fsd_node *n, const uint8_t *d)
{
	static const enum MAD_FIELDS copy[] = {
	    IB_SW_LINEAR_FDB_TOP_F,	IB_SW_DEF_PORT_F,	IB_SW_DEF_MCAST_PRIM_F,
	    IB_SW_DEF_MCAST_NOT_PRIM_F, IB_SW_LIFE_TIME_F,	IB_SW_PARTITION_ENF_INB_F,
	    IB_SW_PARTITION_ENF_OUTB_F, IB_SW_FILTER_RAW_INB_F, IB_SW_FILTER_RAW_OUTB_F,
	    IB_SW_MCAST_FDB_TOP_F,
	};

	for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++)
		mad_set_field(n->si, 0, copy[i], (uint32_t)mad_get_field((void *)d, 0, copy[i]));
	/* PortStateChange is cleared by writing 1 */
	if (mad_get_field((void *)d, 0, IB_SW_STATE_CHANGE_F))
		mad_set_field(n->si, 0, IB_SW_STATE_CHANGE_F, 0);
	return 0;
}

/* port addressed by a switch attribute modifier's port field, or the
 * receiving port on a CA */
static struct fsd_port *mod_port(struct fsd_node *n, int in_port, uint32_t portnum)
{
	if (n->type == FSD_CA)
		return &n->ports[in_port];
	if (portnum > (uint32_t)n->nports)
		return NULL;
	return &n->ports[portnum];
}

static int handle_attr(struct fsd_node *n, int in_port, int method, uint16_t attr, uint32_t mod,
		       const uint8_t *in, uint8_t *d)
{
	bool set = method == IB_MAD_METHOD_SET;
	struct fsd_port *p;

	switch (attr) {
	case ATTR_NODE_DESC:
		if (set)
			return ST_ATTR_UNSUPP;
		memset(d, 0, 64);
		memcpy(d, n->desc, strnlen(n->desc, 64));
		return 0;
	case ATTR_NODE_INFO:
		if (set)
			return ST_ATTR_UNSUPP;
		memset(d, 0, 64);
		node_info(n, in_port, d);
		return 0;
	case ATTR_SWITCH_INFO:
		if (n->type != FSD_SWITCH)
			return ST_ATTR_UNSUPP;
		if (set)
			switch_info_set(n, in);
		memcpy(d, n->si, 64);
		return 0;
	case ATTR_PORT_INFO: {
		int st = 0;

		if (n->type == FSD_CA)
			p = mod ? (mod <= (uint32_t)n->nports ? &n->ports[mod] : NULL)
				: &n->ports[in_port];
		else
			p = mod <= (uint32_t)n->nports ? &n->ports[mod] : NULL;
		if (!p)
			return ST_INVALID;
		if (set)
			st = port_info_set(p, in);
		port_info_get(p, in_port, d);
		return st;
	}
	case ATTR_GUID_INFO:
		p = n->type == FSD_CA ? &n->ports[in_port] : &n->ports[0];
		if (mod != 0)
			return ST_INVALID;
		memset(d, 0, 64);
		mad_set_field64(d, 0, IB_GI_GUID0_F, p->guid);
		return 0;
	case ATTR_PKEY_TABLE: {
		uint32_t block = mod & 0xffff;

		p = mod_port(n, in_port, mod >> 16);
		if (!p || block >= FSD_PKEYS / 32)
			return ST_INVALID;
		if (set)
			for (int i = 0; i < 32; i++)
				p->pkeys[block * 32 + i] =
				    (uint16_t)(in[2 * i] << 8 | in[2 * i + 1]);
		for (int i = 0; i < 32; i++) {
			d[2 * i] = (uint8_t)(p->pkeys[block * 32 + i] >> 8);
			d[2 * i + 1] = (uint8_t)p->pkeys[block * 32 + i];
		}
		return 0;
	}
	case ATTR_SL2VL:
		p = mod_port(n, in_port, mod & 0xff);
		if (!p)
			return ST_INVALID;
		if (set)
			memcpy(p->sl2vl, in, 8);
		memset(d, 0, 64);
		memcpy(d, p->sl2vl, 8);
		return 0;
	case ATTR_VLARB: {
		uint32_t block = mod >> 16;

		p = mod_port(n, in_port, mod & 0xffff);
		if (!p || block < 1 || block > 4)
			return ST_INVALID;
		if (set)
			memcpy(p->vlarb[block - 1], in, 64);
		memcpy(d, p->vlarb[block - 1], 64);
		return 0;
	}
	case ATTR_LFT:
		if (n->type != FSD_SWITCH)
			return ST_ATTR_UNSUPP;
		if (mod >= FSD_LFT_CAP / 64)
			return ST_INVALID;
		if (set && lft_grow(n, (mod + 1) * 64))
			return ST_ATTR_UNSUPP; /* out of memory */
		if (set)
			memcpy(n->lft + mod * 64, in, 64);
		for (uint32_t i = 0; i < 64; i++)
			d[i] = fsd_lft_egress(n, mod * 64 + i);
		return 0;
	case ATTR_MFT: {
		uint32_t pos = mod >> 28, block = mod & 0x1ff;

		if (n->type != FSD_SWITCH)
			return ST_ATTR_UNSUPP;
		if (block >= FSD_MFT_CAP / 32 || pos > 15)
			return ST_INVALID;
		if (set && !n->mft && !(n->mft = calloc(FSD_MFT_CAP, sizeof(*n->mft))))
			return ST_ATTR_UNSUPP; /* out of memory */
		for (int i = 0; i < 32; i++) {
			uint16_t m = n->mft ? n->mft[block * 32 + i][pos] : 0;

			if (set)
				n->mft[block * 32 + i][pos] = m =
				    (uint16_t)(in[2 * i] << 8 | in[2 * i + 1]);
			d[2 * i] = (uint8_t)(m >> 8);
			d[2 * i + 1] = (uint8_t)m;
		}
		return 0;
	}
	case ATTR_MLNX_EXT_PORT_INFO:
		/* Mellanox vendor attribute OpenSM and ibnetdiscover read on
		 * vendor 0x2c9 devices: "no extended speeds" is all zeros */
		if (mod > (uint32_t)n->nports)
			return ST_INVALID;
		memset(d, 0, 64);
		return 0;
	default:
		return ST_ATTR_UNSUPP;
	}
}

/*
 * M_Key check (IBA 14.2.4): a port whose M_Key is non-zero only obeys
 * SMPs carrying it.  Protection level 0: Get works; 1: Get works but
 * PortInfo shows M_Key 0; 2 and 3: Get fails too.  Set and TrapRepress
 * fail at every level.  A failure is silent and counts a violation.
 */
static bool hide_mkey;

static bool mkey_ok(struct fsd_node *n, int in_port, const uint8_t *mad, int method, bool *hide)
{
	struct fsd_port *p = n->type == FSD_SWITCH ? &n->ports[0] : &n->ports[in_port];
	uint64_t key = mad_get_field64(p->pi, 0, IB_PORT_MKEY_F);
	uint64_t got = 0;
	int prot = (int)pget(p, IB_PORT_MKEY_PROT_BITS_F);

	for (int i = 0; i < 8; i++)
		got = got << 8 | mad[24 + i];
	if (!key || got == key)
		return true;
	if (method == IB_MAD_METHOD_GET && prot < 2) {
		*hide = prot == 1;
		return true;
	}
	uint32_t v = pget(p, IB_PORT_MKEY_VIOL_F);

	if (v < 0xffff)
		pset(p, IB_PORT_MKEY_VIOL_F, v + 1);
	return false;
}

int fsd_sma_handle(struct fsd_node *n, int in_port, const uint8_t *mad, uint8_t *resp)
{
	int method = mad[3];
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
	uint32_t mod =
	    (uint32_t)mad[20] << 24 | (uint32_t)mad[21] << 16 | (uint32_t)mad[22] << 8 | mad[23];
	bool dr = mad[1] == 0x81;
	int status;

	if (method & IB_MAD_RESPONSE)
		return -1; /* responses are for the SM agent, if any */
	if (method == IB_MAD_METHOD_TRAP_REPRESS)
		return 0;
	if (attr == ATTR_SM_INFO || method == IB_MAD_METHOD_TRAP)
		return -1; /* the SM's business */
	hide_mkey = false;
	if (!mkey_ok(n, in_port, mad, method, &hide_mkey))
		return 0; /* no answer: the requester times out, as with a real SMA */
	memcpy(resp, mad, FSD_MAD_SIZE);
	if (method != IB_MAD_METHOD_GET && method != IB_MAD_METHOD_SET)
		status = ST_METHOD_UNSUPP;
	else
		status =
		    handle_attr(n, in_port, method, attr, mod, mad + SMP_DATA, resp + SMP_DATA);
	/* LFTs, MFTs, LIDs, P_Keys: routes may have changed. */
	if (method == IB_MAD_METHOD_SET)
		fsd_verbs_changed();
	resp[3] = IB_MAD_METHOD_GET_RESPONSE;
	if (hide_mkey && attr == ATTR_PORT_INFO)
		mad_set_field64(resp + SMP_DATA, 0, IB_PORT_MKEY_F, 0);
	if (dr) {
		/* DR SMP: D bit + 15-bit status */
		uint16_t st = (uint16_t)(0x8000 | (status & 0x7fff));

		resp[4] = (uint8_t)(st >> 8);
		resp[5] = (uint8_t)st;
	} else {
		resp[4] = (uint8_t)(status >> 8);
		resp[5] = (uint8_t)status;
	}
	return 1;
}
