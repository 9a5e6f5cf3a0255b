/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Soft verbs messages between the preload and fabsimd, in the range
 * FSP_VERBS_FIRST..FSP_VERBS_LAST that sim/proto.h reserves for them.
 * Header, framing and byte order as in sim/proto.h.
 *
 * A process opens one verbs connection (kind FSP_KIND_STREAM) per port it
 * uses and sends FSP_VERBS_OPEN on it.  From then on:
 *  - QPNs: FSP_VERBS_QPN_BLOCK hands the connection a block of
 *    FSP_VERBS_QPN_BLOCK_SIZE QP numbers unique on that port (QP0/QP1 are
 *    never handed out), round-robin over the port's QPN space, as an HCA
 *    allocates QPNs: a block comes back only after all others did.  The
 *    process numbers its QPs from its blocks, in order; the daemon
 *    delivers packets whose DestQP falls in a block to the connection
 *    that owns it, so creating a QP costs no round trip.  A block none of
 *    whose QPs is left goes back with FSP_VERBS_QPN_RELEASE.
 *  - Packets: FSP_VERBS_PKT in both directions carries one IBA packet,
 *    LRH to VCRC.  The daemon routes it from the sender's port along the
 *    LFTs/MFTs the SM programmed, hop by hop, honouring link state and
 *    faults; unroutable packets are dropped and counted.
 *    FSP_VERBS_PKTS carries several packets a process sent at once (an
 *    ACK and the reply behind it; the packets of one message): each is
 *    routed, faulted and captured on its own, exactly as if it had come
 *    alone; the daemon hands what it routed to one connection while
 *    handling one message in one FSP_VERBS_PKTS too.  It only saves
 *    wakeups: a process is woken once for the packets that arrive
 *    together, as an HCA raises one interrupt for several.
 *  - Multicast: FSP_VERBS_MCAST joins/leaves an MLID for this connection.
 *  - Closing the connection (or dying) releases its blocks and groups.
 *
 * Cut-through (FSP_VERBS_DIRECT, FSP_VERBS_ROUTE): where routing a packet
 * would only carry it from one process to another unchanged (a route of
 * Active links exists, no `fabsim fault` rule exists, neither port is
 * captured), the daemon lets the sender hand it to the receiving process
 * directly, as a switch's cut-through forwarding does not change what
 * arrives.  Each process listens on a SOCK_SEQPACKET socket, a file in
 * the directory FSP_VERBS_DIRECT_DIR of the fabric directory (a path, so
 * that it is reached from every network namespace; FSP_VERBS_DIRECT
 * tells its name relative to the fabric directory, and the daemon
 * removes it when the process's stream closes); a sender asks FSP_VERBS_ROUTE for a
 * (DLID, DestQP block) and gets the owner's name, or a refusal, tagged
 * with the fabric generation: a counter in the file FSP_VERBS_GEN_FILE of
 * the fabric directory, mapped by every process, that the daemon bumps
 * whenever anything a route depends on changes (an SMP Set, a port state,
 * `fabsim link|fault|capture`, a QPN block handed out or released).  A
 * grant is used only while the generation is still the one it carries;
 * otherwise packets go through the daemon as above.  Direct messages carry
 * fsp_verbs_rec records, as the body of FSP_VERBS_PKTS, without header.
 *
 * One path at a time: a real fabric delivers one QP's packets in order, so
 * a sender that switches a destination from one path to the other must
 * not let the new path overtake the old.  Daemon -> direct: a sender that
 * sent through the daemon since its last grant asks with
 * FSP_VERBS_ROUTE_FENCE; before granting, the daemon sends FSP_VERBS_FENCE
 * to the receiving process, behind every packet it routed there, and
 * answers (FSP_VERBS_ROUTE_FENCED) when the receiver has read that far and
 * echoed the fence; the sender holds its packets meanwhile.  Direct ->
 * daemon: the sender holds its packets until what waits for room on the
 * direct connection has left, and a receiver reads every direct
 * connection empty before each message from the daemon (what a sender put
 * there before going through the daemon is read first).
 */
#ifndef SIM_VERBS_PROTO_H
#define SIM_VERBS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "sim/proto.h"

enum fsp_verbs_type {
	/* req fsp_port_ref -> rep fsp_verbs_open_rep; status 0 or -errno */
	FSP_VERBS_OPEN = FSP_VERBS_FIRST,
	/* req none -> status = first QPN of a block, or -errno */
	FSP_VERBS_QPN_BLOCK = FSP_VERBS_FIRST + 1,
	/* req fsp_verbs_mcast -> status 0 or -errno */
	FSP_VERBS_MCAST = FSP_VERBS_FIRST + 2,
	/* one-way, both directions: IBA packet bytes */
	FSP_VERBS_PKT = FSP_VERBS_FIRST + 3,
	/* any connection: req none -> rep fsp_verbs_stats */
	FSP_VERBS_STATS = FSP_VERBS_FIRST + 4,
	/* daemon -> verbs connection, async: fsp_verbs_port_event, sent
	 * right after FSP_VERBS_OPEN and whenever the port's state, LID, SM
	 * LID or MTU changed (the SM swept, a link went down); the preload
	 * turns changes into ibv async events */
	FSP_VERBS_PORT_EVENT = FSP_VERBS_FIRST + 5,
	/* one-way, both directions: struct fsp_verbs_rec + packet bytes,
	 * padded to 4, repeated; in the order they were sent */
	FSP_VERBS_PKTS = FSP_VERBS_FIRST + 6,
	/* one-way, process -> daemon: fsp_verbs_direct, the name of the
	 * process's cut-through socket */
	FSP_VERBS_DIRECT = FSP_VERBS_FIRST + 7,
	/* one-way both ways: fsp_verbs_route; the process asks with dlid and
	 * dqpn, the daemon answers (not as a reply: the HCA thread or a
	 * waiting application thread takes it) with gen, status and addr */
	FSP_VERBS_ROUTE = FSP_VERBS_FIRST + 8,
	/* one-way, process -> daemon: fsp_verbs_qpn_release, a block the
	 * connection owns and no longer uses */
	FSP_VERBS_QPN_RELEASE = FSP_VERBS_FIRST + 9,
	/* one-way: fsp_verbs_fence; daemon -> receiving process behind the
	 * packets routed to it so far, and the process echoes it back once
	 * it has read them (see "One path at a time" above) */
	FSP_VERBS_FENCE = FSP_VERBS_FIRST + 10,
};

struct fsp_verbs_fence {
	uint64_t token;
};

/* fsp_verbs_route.flags */
enum {
	FSP_VERBS_ROUTE_FENCE = 1,  /* ask: packets went through the daemon */
	FSP_VERBS_ROUTE_FENCED = 2, /* answer: they were read before it */
};

struct fsp_verbs_qpn_release {
	uint32_t base; /* first QPN of the block, as FSP_VERBS_QPN_BLOCK gave it */
};

#define FSP_VERBS_GEN_FILE "verbs.gen"
#define FSP_VERBS_DIRECT_DIR "direct" /* the listeners' directory */
#define FSP_VERBS_ADDR_MAX 108u

struct fsp_verbs_direct {
	/* bytes of addr used: "direct/NAME", relative to the fabric
	 * directory, no NUL, no other '/' */
	uint32_t addr_len;
	uint8_t addr[FSP_VERBS_ADDR_MAX];
};

struct fsp_verbs_route {
	uint32_t dlid;
	uint32_t dqpn;
	uint64_t gen;	/* fabric generation the answer holds for */
	int32_t status; /* 0: send to addr directly; -errno: through the daemon */
	uint32_t addr_len;
	uint8_t addr[FSP_VERBS_ADDR_MAX];
	uint32_t flags; /* FSP_VERBS_ROUTE_* */
	uint32_t reserved;
};

/* One packet of an FSP_VERBS_PKTS message. */
struct fsp_verbs_rec {
	uint16_t len; /* packet bytes that follow */
	uint16_t reserved;
};

#define FSP_VERBS_REC_SPACE(len) (sizeof(struct fsp_verbs_rec) + (((len) + 3u) & ~3u))
/* Batches stay in one fragment (FSP_FRAG_MAX, header included). */
#define FSP_VERBS_BATCH_MAX 16384u

#define FSP_VERBS_QPN_BLOCK_SIZE 256u
#define FSP_VERBS_PKT_MAX 8192u

/*
 * Where a data packet goes, as fabsimd routes it and a process decides
 * whether it may skip fabsimd: DLID and SLID from the LRH, DestQP from the
 * BTH (behind a GRH when LNH says so).  0, or -1 when the packet is too
 * short or its LNH names no IBA transport: LRH (8) [GRH (40)] BTH (12) ...
 * ICRC VCRC (6).
 */
static inline int fsp_verbs_pkt_addr(const uint8_t *pkt, size_t len, uint16_t *dlid, uint16_t *slid,
				     uint32_t *dqpn)
{
	size_t bth;

	if (len < 8 + 12 + 6 || (pkt[1] & 3) < 2)
		return -1;
	bth = (pkt[1] & 3) == 3 ? 48 : 8;
	if (len < bth + 12 + 6)
		return -1;
	*dlid = (uint16_t)(pkt[2] << 8 | pkt[3]);
	*slid = (uint16_t)(pkt[6] << 8 | pkt[7]);
	*dqpn = (uint32_t)pkt[bth + 5] << 16 | (uint32_t)pkt[bth + 6] << 8 | pkt[bth + 7];
	return 0;
}

struct fsp_verbs_open_rep {
	uint32_t port; /* resolved port number */
	uint32_t lid;
	uint32_t node_index;
	uint32_t reserved;
};

struct fsp_verbs_mcast {
	uint32_t mlid;
	uint32_t join; /* 1 join, 0 leave */
	uint8_t mgid[16];
};

struct fsp_verbs_port_event {
	uint32_t state; /* IBA PortState: 1 Down .. 4 Active */
	uint32_t lid;
	uint32_t lmc;
	uint32_t sm_lid;
	uint32_t sm_sl;
	uint32_t active_mtu; /* PortInfo NeighborMTU (IBA enum 1..5) */
	uint32_t max_mtu;    /* PortInfo MTUCap */
	uint32_t rereg;	     /* ClientReregister requests of the SM so far */
};

struct fsp_verbs_stats {
	uint64_t conns;		/* open verbs connections */
	uint64_t qpn_blocks;	/* blocks handed out and not released */
	uint64_t mcast_members; /* (connection, MLID) memberships */
	uint64_t pkts, bytes;	/* data packets routed */
	uint64_t drop_route;	/* no route / link down */
	uint64_t drop_noqp;	/* DestQP in no live block */
	uint64_t drop_bad;	/* malformed or spoofed */
	uint64_t mcast_copies;
	uint64_t drop_fault; /* dropped by `fabsim fault` rules */
	uint64_t grants;     /* cut-through routes granted */
	uint64_t refusals;   /* cut-through routes refused */
	uint64_t gen;	     /* fabric generation */
};

#endif
