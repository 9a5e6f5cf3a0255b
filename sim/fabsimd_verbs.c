/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * fabsimd side of the soft verbs: QPN blocks per CA port, multicast
 * membership, and the routing of data packets (sim/verbs_proto.h).
 *
 * A data packet from a process is routed from the process's port along
 * the LFTs the SM programmed (fsd_route_lid: every hop, every link Active)
 * to the CA port owning the DLID, and handed to the connection owning the
 * QPN block of its DestQP.  Multicast DLIDs are flooded along the MFTs:
 * at each switch to the ports of the MLID's mask except the one it came
 * in by, over Active links, to every member connection on each CA port
 * reached (and to other members on the sending port: the HCA's loopback).
 * What cannot be delivered is dropped and counted, like on a wire.
 * Nothing here trusts the client: sizes, LIDs and QPNs are checked.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/fabsimd.h"
#include "sim/verbs_proto.h"

#define NBLOCKS ((0xffffffu + 1) / FSP_VERBS_QPN_BLOCK_SIZE)
#define MCAST_BASE 0xc000u

/* Verbs state of one CA port. */
struct fv_port {
	struct fsd_port *port;
	struct fsd_conn **blk;		  /* [NBLOCKS]: owner of each QPN block */
	uint32_t cursor;		  /* next block to try */
	struct fv_conn *conns;		  /* verbs connections on this port */
	struct fsp_verbs_port_event seen; /* last state told to clients */
	struct fv_port *next;
};

struct fv_member {
	uint16_t mlid;
	struct fsd_conn *c;
	uint32_t refs;
	struct fv_member *next;
};

/* What a connection holds (c->verbs). */
struct fv_conn {
	struct fsd_conn *c;
	struct fv_conn *pnext; /* in vp->conns */
	struct fv_port *vp;
	uint32_t *blocks;
	uint32_t nblocks, cap;
	struct fv_member *groups;	/* this connection's memberships */
	struct fsp_verbs_direct direct; /* its cut-through socket, if any */
	/* packets routed to it while handling one message (FSP_VERBS_PKTS) */
	uint8_t *obuf;
	uint32_t olen, ocount;
	bool oqueued;
	struct fv_conn *onext;
};

static struct fv_port *ports;
static void port_now(struct fsd_port *p, struct fsp_verbs_port_event *e);
static struct fsd_port *cur_src; /* port of the packet being routed */
static struct {
	uint64_t pkts, bytes, drop_route, drop_noqp, drop_bad, drop_fault, mcast_copies;
	uint64_t grants, refusals;
} st;

/* The fabric generation (sim/verbs_proto.h), in a file every verbs
 * process maps; 0 if it could not be made (then nothing is granted). */
static uint64_t *gen_word;

void fsd_verbs_changed(void)
{
	if (gen_word)
		__atomic_add_fetch(gen_word, 1, __ATOMIC_SEQ_CST);
}

static uint64_t gen_now(void)
{
	return gen_word ? __atomic_load_n(gen_word, __ATOMIC_SEQ_CST) : 0;
}

static struct fv_port *vport_get(struct fsd_port *p, bool create)
{
	struct fv_port *v;

	for (v = ports; v; v = v->next)
		if (v->port == p)
			return v;
	if (!create)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->blk = calloc(NBLOCKS, sizeof(*v->blk));
	if (!v->blk) {
		free(v);
		return NULL;
	}
	v->port = p;
	v->cursor = 1 + (uint32_t)(fsd_now_ns() % (NBLOCKS - 2));
	v->next = ports;
	ports = v;
	return v;
}

static int v_open(struct fsd_conn *c, const struct fsp_hdr *h, const void *body, size_t len)
{
	struct fsp_port_ref ref;
	struct fsp_verbs_open_rep rep = {0};
	struct fsd_host *host;
	struct fsd_node *n;
	struct fv_conn *vc;
	uint32_t pn;
	int ret;

	if (c->kind != FSP_KIND_STREAM || c->verbs || c->port)
		return -EINVAL;
	if (len < sizeof(ref))
		return -EINVAL;
	memcpy(&ref, body, sizeof(ref));
	if (c->host_id < 0 || c->host_id >= fab.num_hosts)
		return -ENODEV;
	host = &fab.hosts[c->host_id];
	if (ref.ca >= (uint32_t)host->num_cas || ref.ca >= 8)
		return -ENODEV;
	n = host->cas[ref.ca];
	pn = ref.port ? ref.port : 1;
	if (!n || pn > (uint32_t)n->nports)
		return -ENODEV;
	vc = calloc(1, sizeof(*vc));
	if (!vc)
		return -ENOMEM;
	vc->vp = vport_get(&n->ports[pn], true);
	if (!vc->vp) {
		free(vc);
		return -ENOMEM;
	}
	vc->c = c;
	if (!vc->vp->conns)
		port_now(vc->vp->port, &vc->vp->seen);
	vc->pnext = vc->vp->conns;
	vc->vp->conns = vc;
	c->verbs = vc;
	rep.port = pn;
	rep.lid = fsd_port_lid(&n->ports[pn]);
	rep.node_index = (uint32_t)n->index;
	ret = fsd_reply(c, h, 0, &rep, sizeof(rep));
	if (!ret) {
		struct fsp_verbs_port_event e;

		/* The port as it is now: MTU and state for ibv_query_port. */
		port_now(vc->vp->port, &e);
		ret = fsd_conn_send(c, FSP_VERBS_PORT_EVENT, 0, 0, 0, &e, sizeof(e));
	}
	return ret;
}

static int v_qpn_block(struct fsd_conn *c, const struct fsp_hdr *h)
{
	struct fv_conn *vc = c->verbs;
	struct fv_port *vp;
	uint32_t i, b;

	if (!vc)
		return -EINVAL;
	vp = vc->vp;
	if (vc->nblocks == vc->cap) {
		uint32_t ncap = vc->cap ? vc->cap * 2 : 8;
		uint32_t *nb = realloc(vc->blocks, ncap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		vc->blocks = nb;
		vc->cap = ncap;
	}
	for (i = 0; i < NBLOCKS; i++) {
		b = vp->cursor;
		vp->cursor = vp->cursor + 1 >= NBLOCKS - 1 ? 1 : vp->cursor + 1;
		/* Block 0 holds QP0/QP1, the last one QPN 0xffffff. */
		if (b == 0 || b >= NBLOCKS - 1 || vp->blk[b])
			continue;
		vp->blk[b] = c;
		vc->blocks[vc->nblocks++] = b;
		fsd_verbs_changed(); /* refusals for this block are stale */
		return fsd_reply(c, h, (int32_t)(b * FSP_VERBS_QPN_BLOCK_SIZE), NULL, 0);
	}
	return -ENOSPC;
}

/* A block the process no longer uses: free for others, once the cursor
 * comes round to it again. */
static int v_qpn_release(struct fsd_conn *c, const void *body, size_t len)
{
	struct fv_conn *vc = c->verbs;
	struct fsp_verbs_qpn_release r;
	uint32_t b, i;

	if (!vc || len < sizeof(r))
		return -EINVAL;
	memcpy(&r, body, sizeof(r));
	b = r.base / FSP_VERBS_QPN_BLOCK_SIZE;
	if (r.base % FSP_VERBS_QPN_BLOCK_SIZE || b >= NBLOCKS || vc->vp->blk[b] != c)
		return -EINVAL;
	for (i = 0; i < vc->nblocks; i++)
		if (vc->blocks[i] == b) {
			vc->blocks[i] = vc->blocks[--vc->nblocks];
			break;
		}
	vc->vp->blk[b] = NULL;
	fsd_verbs_changed(); /* grants naming the block are void */
	return 0;
}

static int v_mcast(struct fsd_conn *c, const struct fsp_hdr *h, const void *body, size_t len)
{
	struct fv_conn *vc = c->verbs;
	struct fsp_verbs_mcast m;
	struct fv_member *g, **pp;

	if (!vc || len < sizeof(m))
		return -EINVAL;
	memcpy(&m, body, sizeof(m));
	if (m.mlid < MCAST_BASE || m.mlid >= MCAST_BASE + FSD_MFT_CAP)
		return -EINVAL;
	for (g = vc->groups; g; g = g->next)
		if (g->mlid == m.mlid)
			break;
	if (m.join) {
		if (g) {
			g->refs++;
		} else {
			g = calloc(1, sizeof(*g));
			if (!g)
				return -ENOMEM;
			g->mlid = (uint16_t)m.mlid;
			g->c = c;
			g->refs = 1;
			g->next = vc->groups;
			vc->groups = g;
		}
		return fsd_reply(c, h, 0, NULL, 0);
	}
	if (!g)
		return -ENOENT;
	if (--g->refs == 0) {
		for (pp = &vc->groups; *pp; pp = &(*pp)->next)
			if (*pp == g) {
				*pp = g->next;
				break;
			}
		free(g);
	}
	return fsd_reply(c, h, 0, NULL, 0);
}

/*
 * Output batching: while one message from a process is handled, what is
 * routed to a connection is collected and handed over in one message when
 * the handling ends (out_flush_all), so that a process gets one wakeup for
 * an ACK and the reply behind it.  Routing, faults, captures and counters
 * stay per packet.
 */
static bool batching;
static struct fv_conn *out_list;

static void out_flush(struct fv_conn *vc)
{
	int ret;

	if (!vc->ocount)
		return;
	if (vc->ocount == 1) { /* the plain form, for a lone packet */
		struct fsp_verbs_rec r;

		memcpy(&r, vc->obuf, sizeof(r));
		ret = fsd_conn_send(vc->c, FSP_VERBS_PKT, 0, 0, 0, vc->obuf + sizeof(r), r.len);
	} else
		ret = fsd_conn_send(vc->c, FSP_VERBS_PKTS, 0, 0, 0, vc->obuf, vc->olen);
	if (ret)
		st.drop_noqp += vc->ocount;
	vc->olen = vc->ocount = 0;
}

static void out_flush_all(void)
{
	while (out_list) {
		struct fv_conn *vc = out_list;

		out_list = vc->onext;
		vc->oqueued = false;
		out_flush(vc);
	}
}

static void out_unqueue(struct fv_conn *vc)
{
	struct fv_conn **pp;

	for (pp = &out_list; *pp; pp = &(*pp)->onext)
		if (*pp == vc) {
			*pp = vc->onext;
			break;
		}
	vc->oqueued = false;
}

/* Queue a packet for vc; false if it must go on its own. */
static bool out_add(struct fv_conn *vc, const uint8_t *pkt, size_t len)
{
	struct fsp_verbs_rec r = {.len = (uint16_t)len};
	size_t space = FSP_VERBS_REC_SPACE(len);

	if (!batching || space > FSP_VERBS_BATCH_MAX)
		return false;
	if (!vc->obuf && !(vc->obuf = malloc(FSP_VERBS_BATCH_MAX)))
		return false;
	if (vc->olen + space > FSP_VERBS_BATCH_MAX)
		out_flush(vc);
	memcpy(vc->obuf + vc->olen, &r, sizeof(r));
	memcpy(vc->obuf + vc->olen + sizeof(r), pkt, len);
	memset(vc->obuf + vc->olen + sizeof(r) + len, 0, space - sizeof(r) - len);
	vc->olen += (uint32_t)space;
	vc->ocount++;
	if (!vc->oqueued) {
		vc->oqueued = true;
		vc->onext = out_list;
		out_list = vc;
	}
	return true;
}

static void deliver(struct fsd_conn *c, const uint8_t *pkt, size_t len)
{
	struct fv_conn *vc = c->verbs;

	/* `fabsim capture` on the receiving port shows what arrives. */
	if (vc && vc->vp->port->capture && vc->vp->port != cur_src)
		fsd_capture_raw(vc->vp->port, pkt, len);
	if (vc && out_add(vc, pkt, len))
		return;
	if (fsd_conn_send(c, FSP_VERBS_PKT, 0, 0, 0, pkt, len))
		st.drop_noqp++;
}

/* Hand a packet to the members of mlid whose port is p. */
static void mcast_port(struct fsd_port *p, uint16_t mlid, const uint8_t *pkt, size_t len)
{
	struct fv_port *vp = vport_get(p, false);
	struct fv_conn *vc;
	struct fv_member *g;

	/* Every connection of the port that joined mlid, once. */
	for (vc = vp ? vp->conns : NULL; vc; vc = vc->pnext)
		for (g = vc->groups; g; g = g->next)
			if (g->mlid == mlid) {
				deliver(vc->c, pkt, len);
				st.mcast_copies++;
				break;
			}
}

static bool link_active(const struct fsd_port *e)
{
	const struct fsd_port *q = e->peer;

	return q && !e->admin_down && !q->admin_down && fsd_port_phys_up(e) &&
	       fsd_port_phys_up(q) && fsd_port_state(e) == 4 && fsd_port_state(q) == 4;
}

/* Flood along the MFTs from the CA port src (IBA 18.2.4.3.3). */
static void route_mcast(struct fsd_port *src, uint16_t mlid, const uint8_t *pkt, size_t len)
{
	struct fsd_port *stack[256];
	bool *seen;
	int sp = 0;

	/* The sending HCA loops the packet back to its own members. */
	mcast_port(src, mlid, pkt, len);
	if (!link_active(src))
		return;
	if (src->peer->node->type == FSD_CA) {
		/* Back to back: the other end is the only one reachable. */
		mcast_port(src->peer, mlid, pkt, len);
		return;
	}
	seen = calloc((size_t)fab.num_nodes, sizeof(*seen));
	if (!seen)
		return;
	stack[sp++] = src->peer;
	while (sp) {
		struct fsd_port *in = stack[--sp];
		struct fsd_node *n = in->node;
		uint32_t idx = mlid - MCAST_BASE;
		int i;

		if (n->type != FSD_SWITCH || seen[n->index] || !n->mft)
			continue;
		seen[n->index] = true;
		for (i = 1; i <= n->nports; i++) {
			struct fsd_port *e = &n->ports[i], *q;

			if (i == in->num || !(n->mft[idx][i / 16] & (1u << (i % 16))))
				continue;
			if (!link_active(e))
				continue;
			q = e->peer;
			if (q->node->type == FSD_CA)
				mcast_port(q, mlid, pkt, len);
			else if (sp < (int)(sizeof(stack) / sizeof(stack[0])))
				stack[sp++] = q;
		}
	}
	free(seen);
}

/* Packets held back by a delay or reorder fault. */
struct fv_delayed {
	struct fv_delayed *next;
	uint64_t due_ns;
	uint32_t conn_id;
	size_t len;
	uint8_t pkt[];
};

static struct fv_delayed *delayed;

static void delay_pkt(struct fsd_conn *c, const uint8_t *pkt, size_t len, uint32_t ms)
{
	struct fv_delayed *d = malloc(sizeof(*d) + len), **pp;

	if (!d)
		return;
	d->due_ns = fsd_now_ns() + (uint64_t)ms * 1000000ull;
	d->conn_id = c->id;
	d->len = len;
	memcpy(d->pkt, pkt, len);
	for (pp = &delayed; *pp && (*pp)->due_ns <= d->due_ns; pp = &(*pp)->next)
		;
	d->next = *pp;
	*pp = d;
}

/*
 * `fabsim fault` rules on the links a unicast packet crosses, as route.c
 * applies them to MADs: global rules once, link rules per hop.  Data
 * packets carry no MAD, so rules that select a class or attribute never
 * match them (a zero "MAD" has class 0).  Returns the copies to deliver.
 */
static int apply_faults(struct fsd_port *src, uint16_t dlid, uint32_t *delay_ms)
{
	static const uint8_t nomad[FSD_MAD_SIZE];
	struct fsd_port *e = src;
	uint32_t d = 0;
	int copies = fsd_fault_apply(NULL, NULL, nomad, &d);

	*delay_ms = d;
	for (int hop = 0; hop < 64 && copies && e && e->peer; hop++) {
		struct fsd_node *n = e->peer->node;
		int c = fsd_fault_apply(e, e->peer, nomad, &d), eg;

		if (c == 0)
			copies = 0;
		else if (c == 2)
			copies = 2;
		if (d > *delay_ms)
			*delay_ms = d;
		if (n->type != FSD_SWITCH || dlid >= FSD_LFT_CAP)
			break;
		eg = fsd_lft_egress(n, dlid);
		if (eg < 1 || eg > n->nports)
			break;
		e = &n->ports[eg];
	}
	return copies;
}

static int v_pkt(struct fsd_conn *c, const uint8_t *pkt, size_t len)
{
	struct fv_conn *vc = c->verbs;
	struct fsd_port *src, *dst;
	enum fsd_counter why = FSD_C_NO_ROUTE;
	struct fv_port *vp;
	uint16_t dlid, slid, base;
	uint32_t dqpn;
	int lmc;

	if (!vc || len > FSP_VERBS_PKT_MAX || fsp_verbs_pkt_addr(pkt, len, &dlid, &slid, &dqpn)) {
		st.drop_bad++;
		return 0;
	}
	src = vc->vp->port;
	/* No spoofing: the SLID must be one of the sender's port's LIDs. */
	base = fsd_port_lid(src);
	lmc = fsd_port_lmc(src);
	if (!base || (slid & ~((1u << lmc) - 1)) != base) {
		st.drop_bad++;
		return 0;
	}
	st.pkts++;
	st.bytes += len;
	/* Captured once at the sending port, once at each receiving one. */
	cur_src = src;
	if (src->capture)
		fsd_capture_raw(src, pkt, len);
	if (dlid >= MCAST_BASE && dlid != FSD_PERMISSIVE_LID) {
		if (dlid < MCAST_BASE + FSD_MFT_CAP)
			route_mcast(src, dlid, pkt, len);
		return 0;
	}
	dst = fsd_route_lid(src, dlid, false, &why);
	if (!dst || dst->node->type != FSD_CA) {
		fsd_count(why);
		st.drop_route++;
		return 0;
	}
	vp = vport_get(dst, false);
	if (!vp || dqpn / FSP_VERBS_QPN_BLOCK_SIZE >= NBLOCKS ||
	    !vp->blk[dqpn / FSP_VERBS_QPN_BLOCK_SIZE]) {
		st.drop_noqp++;
		return 0;
	}
	{
		struct fsd_conn *to = vp->blk[dqpn / FSP_VERBS_QPN_BLOCK_SIZE];
		uint32_t delay_ms;
		int copies = apply_faults(src, dlid, &delay_ms);

		if (!copies) {
			fsd_count(FSD_C_FAULT_DROP);
			st.drop_fault++;
			return 0;
		}
		if (copies == 2)
			fsd_count(FSD_C_FAULT_DUP);
		for (int i = 0; i < copies; i++) {
			if (delay_ms) {
				fsd_count(FSD_C_FAULT_DELAY);
				delay_pkt(to, pkt, len, delay_ms);
			} else {
				deliver(to, pkt, len);
			}
		}
	}
	return 0;
}

/* Several packets sent at once: each routed as if it came alone. */
static int v_pkts(struct fsd_conn *c, const uint8_t *body, size_t len)
{
	size_t off = 0;

	while (off < len) {
		struct fsp_verbs_rec r;

		if (len - off < sizeof(r)) {
			st.drop_bad++;
			break;
		}
		memcpy(&r, body + off, sizeof(r));
		if (!r.len || r.len > len - off - sizeof(r)) {
			st.drop_bad++;
			break;
		}
		v_pkt(c, body + off + sizeof(r), r.len);
		off += sizeof(r) + r.len;
		off = off + 3 < len ? (off + 3) & ~(size_t)3 : len;
	}
	return 0;
}

/* The fabric directory, where the processes' cut-through sockets are. */
static int dir_fd = -1;

/* A name a process gave (FSP_VERBS_DIRECT): FSP_VERBS_DIRECT_DIR/NAME,
 * NAME one path component, so the daemon only ever removes files there. */
static bool direct_name_ok(const struct fsp_verbs_direct *d)
{
	size_t pre = strlen(FSP_VERBS_DIRECT_DIR);
	const uint8_t *n = d->addr + pre + 1;
	size_t nl = d->addr_len - pre - 1;

	if (d->addr_len <= pre + 1 || d->addr_len > sizeof(d->addr) ||
	    memcmp(d->addr, FSP_VERBS_DIRECT_DIR "/", pre + 1))
		return false;
	if (nl == 1 && n[0] == '.')
		return false;
	if (nl == 2 && n[0] == '.' && n[1] == '.')
		return false;
	return !memchr(n, '/', nl) && !memchr(n, 0, nl);
}

int fsd_verbs_init(const char *dir)
{
	char path[4200];
	void *m;
	int fd;

	/* The processes' cut-through sockets: without it, none (bind fails). */
	dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd >= 0 && mkdirat(dir_fd, FSP_VERBS_DIRECT_DIR, 0777) && errno != EEXIST)
		fprintf(stderr, "fabsimd: %s/%s: %s (cut-through off)\n", dir, FSP_VERBS_DIRECT_DIR,
			strerror(errno));

	/* A new file, not a truncated one: processes of an earlier daemon
	 * in the same directory keep the old generation word. */
	snprintf(path, sizeof(path), "%s/%s", dir, FSP_VERBS_GEN_FILE);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, 4096)) {
		close(fd);
		return -errno;
	}
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	gen_word = m;
	*gen_word = 1; /* processes take 0 for "never asked" */
	return 0;
}

/* Whether a packet from src to dlid, DestQP block blk, may skip the
 * daemon; 0 and the owner's socket name if so. */
static int route_check(struct fsd_port *src, uint32_t dlid, uint32_t dqpn,
		       const struct fsp_verbs_direct **to, struct fsd_conn **owner_out)
{
	enum fsd_counter why = FSD_C_NO_ROUTE;
	struct fsd_port *dst;
	struct fv_port *vp;
	struct fsd_conn *owner;

	if (!gen_word)
		return -ENOSYS;
	if (dlid >= MCAST_BASE || !dlid)
		return -EINVAL; /* multicast floods through the daemon */
	if (fsd_fault_any())
		return -EAGAIN; /* faults act on each packet here */
	if (src->capture)
		return -EAGAIN; /* captures see each packet here */
	dst = fsd_route_lid(src, (uint16_t)dlid, false, &why);
	if (!dst || dst->node->type != FSD_CA)
		return -EHOSTUNREACH;
	if (dst->capture)
		return -EAGAIN;
	vp = vport_get(dst, false);
	if (!vp || dqpn / FSP_VERBS_QPN_BLOCK_SIZE >= NBLOCKS)
		return -ENOENT;
	owner = vp->blk[dqpn / FSP_VERBS_QPN_BLOCK_SIZE];
	if (!owner || !owner->verbs || !((struct fv_conn *)owner->verbs)->direct.addr_len)
		return -ENOENT;
	*to = &((struct fv_conn *)owner->verbs)->direct;
	*owner_out = owner;
	return 0;
}

/*
 * A grant waiting for its fence (sim/verbs_proto.h, "One path at a
 * time"): `from` sent packets for `owner` through here, then asked to go
 * directly; the answer waits until `owner` has read them.
 */
struct fv_fence {
	struct fv_fence *next;
	uint64_t token;
	struct fsd_conn *from, *owner;
	struct fsp_verbs_route r; /* the question */
};

static struct fv_fence *fences;
static uint64_t fence_tokens;

static int route_answer(struct fsd_conn *c, struct fsp_verbs_route r, bool fenced)
{
	struct fv_conn *vc = c->verbs;
	const struct fsp_verbs_direct *to = NULL;
	struct fsd_conn *owner = NULL;

	r.gen = gen_now();
	r.status = route_check(vc->vp->port, r.dlid, r.dqpn, &to, &owner);
	if (!r.status && (r.flags & FSP_VERBS_ROUTE_FENCE) && !fenced) {
		struct fv_fence *f = calloc(1, sizeof(*f));
		struct fsp_verbs_fence m = {.token = ++fence_tokens};

		if (!f)
			return -ENOMEM;
		f->token = m.token;
		f->from = c;
		f->owner = owner;
		f->r = r;
		f->next = fences;
		fences = f;
		/* Behind everything routed to the owner so far. */
		out_flush_all();
		if (fsd_conn_send(owner, FSP_VERBS_FENCE, 0, 0, 0, &m, sizeof(m))) {
			fences = f->next;
			free(f);
			r.status = -EAGAIN;
		} else {
			return 0;
		}
	}
	r.flags = fenced ? FSP_VERBS_ROUTE_FENCED : 0;
	memset(r.addr, 0, sizeof(r.addr));
	r.addr_len = 0;
	if (!r.status) {
		r.addr_len = to->addr_len;
		memcpy(r.addr, to->addr, to->addr_len);
		st.grants++;
	} else {
		st.refusals++;
	}
	return fsd_conn_send(c, FSP_VERBS_ROUTE, 0, 0, 0, &r, sizeof(r));
}

static int v_route(struct fsd_conn *c, const void *body, size_t len)
{
	struct fsp_verbs_route r;

	if (!c->verbs || len < sizeof(r))
		return -EINVAL;
	memcpy(&r, body, sizeof(r));
	return route_answer(c, r, false);
}

/* The owner read everything routed to it before the fence: answer. */
static int v_fence(struct fsd_conn *c, const void *body, size_t len)
{
	struct fsp_verbs_fence m;
	struct fv_fence **pp, *f;

	if (!c->verbs || len < sizeof(m))
		return -EINVAL;
	memcpy(&m, body, sizeof(m));
	for (pp = &fences; (f = *pp); pp = &f->next)
		if (f->token == m.token && f->owner == c) {
			*pp = f->next;
			(void)route_answer(f->from, f->r, true);
			free(f);
			break;
		}
	return 0;
}

/* A connection goes: its questions are void; those waiting for it to
 * read are answered (it reads nothing more: nothing to keep in order). */
static void fences_conn_closed(struct fsd_conn *c)
{
	struct fv_fence **pp = &fences, *f;

	while ((f = *pp)) {
		if (f->from != c && f->owner != c) {
			pp = &f->next;
			continue;
		}
		*pp = f->next;
		if (f->from != c)
			(void)route_answer(f->from, f->r, true);
		free(f);
	}
}

static int v_direct(struct fsd_conn *c, const void *body, size_t len)
{
	struct fv_conn *vc = c->verbs;
	struct fsp_verbs_direct d;

	if (!vc || len < sizeof(d))
		return -EINVAL;
	memcpy(&d, body, sizeof(d));
	if (!direct_name_ok(&d))
		return -EINVAL;
	vc->direct = d;
	return 0;
}

int fsd_verbs_msg(struct fsd_conn *c, const struct fsp_hdr *h, const void *body, size_t len)
{
	switch (h->type) {
	case FSP_VERBS_OPEN:
		return v_open(c, h, body, len);
	case FSP_VERBS_QPN_BLOCK:
		return v_qpn_block(c, h);
	case FSP_VERBS_MCAST:
		return v_mcast(c, h, body, len);
	case FSP_VERBS_QPN_RELEASE:
		return v_qpn_release(c, body, len);
	case FSP_VERBS_DIRECT:
		return v_direct(c, body, len);
	case FSP_VERBS_ROUTE:
		return v_route(c, body, len);
	case FSP_VERBS_FENCE:
		return v_fence(c, body, len);
	case FSP_VERBS_PKT:
	case FSP_VERBS_PKTS: {
		int ret;

		batching = true;
		ret = h->type == FSP_VERBS_PKT ? v_pkt(c, body, len) : v_pkts(c, body, len);
		batching = false;
		out_flush_all();
		return ret;
	}
	case FSP_VERBS_STATS: {
		struct fsp_verbs_stats s = {
		    .pkts = st.pkts,
		    .bytes = st.bytes,
		    .drop_route = st.drop_route,
		    .drop_noqp = st.drop_noqp,
		    .drop_bad = st.drop_bad,
		    .mcast_copies = st.mcast_copies,
		    .drop_fault = st.drop_fault,
		    .grants = st.grants,
		    .refusals = st.refusals,
		    .gen = gen_now(),
		};
		struct fv_port *vp;
		struct fv_conn *vc;
		struct fv_member *g;

		for (vp = ports; vp; vp = vp->next)
			for (vc = vp->conns; vc; vc = vc->pnext) {
				s.conns++;
				s.qpn_blocks += vc->nblocks;
				for (g = vc->groups; g; g = g->next)
					s.mcast_members++;
			}
		return fsd_reply(c, h, 0, &s, sizeof(s));
	}
	default:
		return -EOPNOTSUPP;
	}
}

void fsd_verbs_conn_closed(struct fsd_conn *c)
{
	struct fv_conn *vc = c->verbs, **pp;
	struct fv_member *g;
	uint32_t i;

	if (!vc)
		return;
	for (pp = &vc->vp->conns; *pp; pp = &(*pp)->pnext)
		if (*pp == vc) {
			*pp = vc->pnext;
			break;
		}
	/* Everything the process held goes at once, as when a process with
	 * live QPs dies and the kernel tears its uverbs context down. */
	for (i = 0; i < vc->nblocks; i++)
		if (vc->vp->blk[vc->blocks[i]] == c)
			vc->vp->blk[vc->blocks[i]] = NULL;
	while ((g = vc->groups)) {
		vc->groups = g->next;
		free(g);
	}
	if (vc->oqueued)
		out_unqueue(vc);
	/* Its socket's file, left by a process that died without exiting. */
	if (vc->direct.addr_len && dir_fd >= 0) {
		char name[FSP_VERBS_ADDR_MAX + 1];

		memcpy(name, vc->direct.addr, vc->direct.addr_len);
		name[vc->direct.addr_len] = 0;
		(void)unlinkat(dir_fd, name, 0);
	}
	/* Answered after the blocks went: the owner's grants are refused. */
	fences_conn_closed(c);
	/* Grants naming its socket are void (senders also see it closed). */
	fsd_verbs_changed();
	free(vc->obuf);
	free(vc->blocks);
	free(vc);
	c->verbs = NULL;
}

static void port_now(struct fsd_port *p, struct fsp_verbs_port_event *e)
{
	memset(e, 0, sizeof(*e));
	e->state = (uint32_t)fsd_port_state(p);
	e->lid = fsd_port_lid(p);
	e->lmc = (uint32_t)fsd_port_lmc(p);
	e->sm_lid = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_SMLID_F);
	e->sm_sl = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_SMSL_F);
	e->active_mtu = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_NEIGHBOR_MTU_F);
	e->max_mtu = (uint32_t)mad_get_field(p->pi, 0, IB_PORT_MTU_CAP_F);
	e->rereg = p->rereg;
}

/* Tell verbs clients when their port changed (ibv async events). */
int fsd_verbs_tick(uint64_t now_ns)
{
	static uint64_t last_ns;
	static bool last_any;
	struct fv_port *vp;
	bool any = false;
	int next_ms = -1;

	/* Delayed packets whose time has come. */
	while (delayed && delayed->due_ns <= now_ns) {
		struct fv_delayed *d = delayed;
		struct fsd_conn *c = fsd_conn_by_id(d->conn_id);

		delayed = d->next;
		cur_src = NULL;
		if (c && c->verbs && !c->dead)
			deliver(c, d->pkt, d->len);
		free(d);
	}
	if (delayed)
		next_ms = (int)((delayed->due_ns - now_ns) / 1000000ull) + 1;

	/* Called after every loop iteration: look at most every 50 ms. */
	if (now_ns - last_ns < 50000000ull)
		return last_any && (next_ms < 0 || next_ms > 50) ? 50 : next_ms;
	last_ns = now_ns;
	for (vp = ports; vp; vp = vp->next) {
		struct fsp_verbs_port_event e;
		struct fv_conn *vc;

		if (!vp->conns)
			continue;
		any = true;
		port_now(vp->port, &e);
		if (!memcmp(&e, &vp->seen, sizeof(e)))
			continue;
		vp->seen = e;
		for (vc = vp->conns; vc; vc = vc->pnext)
			fsd_conn_send(vc->c, FSP_VERBS_PORT_EVENT, 0, 0, 0, &e, sizeof(e));
	}
	/* Port state changes come from SMPs and admin commands; looking
	 * every 50 ms while verbs clients exist is soon enough. */
	last_any = any;
	if (any && (next_ms < 0 || next_ms > 50))
		next_ms = 50;
	return next_ms;
}
