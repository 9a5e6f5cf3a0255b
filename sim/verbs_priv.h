/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Soft verbs: the objects behind the libibverbs handles our preload hands
 * out, and the interfaces between the files that implement them.
 *
 * One process = one soft HCA ("struct vhca"): a single lock guards every
 * queue, and one thread plays the HCA, serving packets that reach this
 * process's QPs (so RDMA READ/WRITE/atomics complete while the target
 * application is busy elsewhere, as on hardware) and running the RC
 * retransmission timers.  Files:
 *   verbs_qp_fsm.c    state machine table (pure)
 *   verbs_pkt.c       IBA packet headers (LRH/GRH/BTH/ETHs) encode/decode
 *   verbs_port.c      device and port attributes (from the fabric's umad view)
 *   verbs_transport.c moving packets between simulated ports
 *   verbs_api.c       device, context, PD, MR, CQ, channels, SRQ, AH, mcast
 *   verbs_qp.c        QP create/modify/query/destroy, flush on error
 *   verbs_datapath.c  post/poll, RC/UC/UD requester and responder
 *   verbs_xrc.c       XRC domains and SRQs (the QPs in verbs_qp.c)
 */
#ifndef SIM_VERBS_PRIV_H
#define SIM_VERBS_PRIV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/verbs_pkt.h"

#define VERBS_MAX_GID 4
#define VERBS_MAX_PKEY 16
#define VERBS_MAX_SGE 16
#define VERBS_MAX_INLINE 256
#define VERBS_MAX_WR 16384
#define VERBS_MAX_CQE 65536

/* What the fabric says about our (single) port. */
struct verbs_port_info {
	char ca_name[64];
	uint64_t node_guid;
	uint64_t port_guid;
	uint64_t gid_prefix;
	uint16_t lid;
	uint8_t lmc;
	uint16_t sm_lid;
	uint8_t sm_sl;
	enum ibv_port_state state;
	uint8_t phys_state;
	enum ibv_mtu active_mtu, max_mtu;
	uint8_t width, speed; /* IBA LinkWidthActive, LinkSpeedActive */
	uint32_t cap_flags;
	uint16_t pkeys[VERBS_MAX_PKEY];
	int npkeys;
};

int verbs_port_refresh(struct verbs_port_info *pi);
/* The fabric says the port changed; called with VERBS_LOCK held. */
struct fsp_verbs_port_event;
void verbs_port_event(const struct fsp_verbs_port_event *e);

struct vdevice {
	struct ibv_device dev; /* first: what ibv_get_device_list returns */
	struct verbs_port_info port;
};

struct vcontext {
	struct verbs_context vctx; /* ibv_context is its last member */
	struct vdevice *dev;
	int async_wr; /* write end of async_fd */
};

struct vpd {
	struct ibv_pd pd;
};

struct vmr {
	struct ibv_mr mr;
	int access;
	uint64_t iova; /* address the remote side uses */
};

struct vah {
	struct ibv_ah ah;
	struct ibv_ah_attr attr;
};

struct vcq {
	struct ibv_cq cq;
	struct ibv_wc *ring;
	uint32_t size, head, count;
	bool armed, solicited_only;
	bool overflow;
	uint32_t refs; /* QPs using it: destroy is refused while > 0 */
};

/* A work request as the soft HCA keeps it: the caller's fields, a copy of
 * its scatter/gather list, and inline data copied at post time. */
struct vwqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int flags;
	uint32_t imm;
	int num_sge;
	struct ibv_sge sg[VERBS_MAX_SGE];
	uint32_t len;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	struct vah *ah;
	uint32_t remote_qpn, remote_qkey;
	uint32_t remote_srqn; /* XRC_SEND: the target's SRQ */
	uint8_t *inl;	      /* inline copy (IBV_SEND_INLINE), kept for the slot */
	/* requester progress (RC) */
	uint32_t psn, npkts;
	bool sent;
	uint32_t read_off; /* bytes of a READ response received */
};

struct vwq {
	struct vwqe *q;
	uint32_t size, head, count; /* ring: head = oldest */
};

/* An XRC domain (sim/verbs_xrc.c): XRC SRQs and target QPs share one. */
struct vxrcd {
	struct ibv_xrcd xrcd;
	uint32_t refs; /* SRQs and QPs in it: close is refused while > 0 */
};

struct vsrq {
	struct ibv_srq srq;
	struct vwq rq;
	uint32_t max_sge;
	uint32_t limit;
	uint32_t refs; /* QPs attached */
	/* XRC SRQ (IBV_SRQT_XRC): its domain, the CQ its receives complete
	 * in, the number requests name in their XRCETH; xrcd NULL otherwise. */
	struct vxrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srqn;
	struct vsrq *xnext; /* on the process's list of XRC SRQs */
};

struct vmcast {
	union ibv_gid gid;
	uint16_t lid;
	struct vmcast *next;
};

struct vbatch {
	struct ibv_send_wr wr;
	struct ibv_sge sge[VERBS_MAX_SGE];
	uint8_t inl[VERBS_MAX_INLINE];
};

/* What one RC QP's transport went through (FABSIM_VERBS_STATS=1): on a
 * fabric without fault rules a NAK or a resend means the simulator lost
 * or reordered a packet, which a real fabric does not do. */
enum { VNAK_KINDS = 4 }; /* sequence error, invalid request, access, op */
struct vqp_stats {
	uint64_t nak_tx[VNAK_KINDS], nak_rx[VNAK_KINDS]; /* by NAK code */
	uint64_t rnr_tx, rnr_rx;			 /* RNR NAKs */
	uint64_t gap_rx;   /* responder: a PSN past the expected one */
	uint64_t dup_rx;   /* responder: a PSN before it (duplicate) */
	uint64_t resp_ooo; /* requester: a READ response not the next one */
	/* requester: resends started by an ACK timeout, a sequence NAK,
	 * an RNR NAK's timer; sequence NAKs ignored during a resend */
	uint64_t retry_timeout, retry_seq, retry_rnr, seq_ignored;
};

struct vqp {
	struct ibv_qp_ex qpx; /* starts with struct ibv_qp */
	struct vbatch *batch; /* ibv_wr_* API: WRs between start and complete */
	uint32_t nbatch;
	int batch_err;
	struct ibv_qp_attr attr;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	struct vwq sq, rq;
	struct vqp *hnext;	   /* QPN hash chain */
	struct vqp *anext, *aprev; /* on the HCA's active (timer) list */
	bool on_active;
	struct vmcast *mcast;
	/* XRC_RECV: its domain, and the SRQ the request being handled names
	 * (set per packet by verbs_rx_packet); XRC_SEND: neither. */
	struct vxrcd *xrcd;
	struct vsrq *xsrq;

	/* requester */
	uint32_t npsn;	   /* next PSN to send */
	uint32_t send_idx; /* SQ entries [head, head+send_idx) were sent */
	uint64_t deadline; /* ns; 0 = no timer running */
	uint8_t retries, rnr_retries;
	/* Went back to resend after a sequence-error NAK for nak_psn: NAKs
	 * for it or before it are echoes of what was in flight then. */
	bool nak_resending;
	uint32_t nak_psn;
	bool rnr_wait;

	/* responder */
	uint32_t epsn; /* expected PSN */
	uint32_t msn;
	bool nak_sent;
	bool in_msg;	      /* inside a multi-packet SEND/WRITE */
	bool cur_rwqe_taken;  /* a SEND in progress holds cur_rwqe */
	struct vwqe cur_rwqe; /* receive WQE being filled */
	uint32_t cur_off;
	uint64_t wr_va; /* RDMA WRITE in progress */
	uint32_t wr_left, wr_total;
	uint32_t wr_rkey;
	/* a coalesced ACK not sent yet (verbs_ack_flush) */
	bool ack_pending;
	bool ack_eager;	  /* one of the packets it answers had AckReq */
	uint64_t ack_due; /* lazy: send it by then (ns) */
	uint16_t ack_dlid;
	uint32_t ack_psn;
	struct vqp *ack_next;
	uint32_t last_atomic_psn;
	uint64_t last_atomic_orig;
	bool have_atomic;
	bool sqd_notified;
	struct vqp_stats st;
};

/* The per-process soft HCA. */
struct vhca {
	pthread_mutex_t lock;
	bool started;
	pthread_t thread;
	int wake[2]; /* pipe: wakes the HCA thread */
	struct vdevice *dev;
	struct vcontext *ctx; /* first opened context, for async events */
	struct vqp **qp_hash;
	uint32_t qp_hash_size;
	uint32_t nqp;
	struct vqp *active;
	struct vmr **mrs; /* by key >> 8 */
	uint32_t nmrs;
	uint32_t mr_gen;
	uint64_t sleep_until;			 /* when the HCA thread wakes up; 0 = never */
	enum ibv_mtu fabric_mtu, fabric_max_mtu; /* from FSP_VERBS_PORT_EVENT */
	/* Who reads the wire (see verbs_api.c); atomics, not under the lock. */
	uint64_t lease_until; /* an application thread looks again before this */
	uint64_t hca_look_at; /* the HCA thread, off the wire, looks then; 0 = on it */
	int watchers;	      /* application threads blocked on it in ibv_get_cq_event */
	uint32_t watch_gen;   /* bumped by each one that starts */
	uint32_t cqes;	      /* completions waiting in all CQs */
	/* counters, for tests and fabsim status */
	uint64_t rx_pkts, tx_pkts, drop_pkey, drop_qkey, drop_state, drop_qpn;
	struct vqp_stats qp_st; /* of the QPs destroyed so far */
};

extern struct vhca verbs_hca;

#define QP_HASH 4096 /* buckets of verbs_hca.qp_hash, by QPN */

/* sim/verbs_stats.c, under VERBS_LOCK */
void verbs_qp_stats_done(struct vqp *qp);
void verbs_stats_print(void);

#define VERBS_PKT_MAX 8192

/* An application thread serving the wire promises to look at it again
 * within this; the HCA thread stays off it meanwhile (verbs_api.c). */
#define VERBS_LEASE_NS 500000ull

/* The longest a thread holds an ACK the requester did not ask for at once
 * (verbs_datapath.c): well below the 1 ms floor of ACK timeouts. */
#define VERBS_ACK_LAZY_NS 250000ull

/* verbs_api.c */
void verbs_hca_kick(void);
void verbs_wire_lease(uint64_t until);
void verbs_wire_watch(void);
void verbs_wire_unwatch(void);
/* This thread has waited in ibv_get_cq_event (it is event-driven). */
extern __thread bool verbs_thread_waits;
uint16_t verbs_pkey_at(unsigned int index);
struct vmr *verbs_mr_lookup(uint32_t key);
int verbs_cq_push(struct vcq *cq, const struct ibv_wc *wc, bool solicited);
void verbs_async_event(struct ibv_context *ctx, struct ibv_async_event *ev);

/* verbs_qp.c */
struct vqp *verbs_qp_lookup(uint32_t qpn);
void verbs_qp_to_error(struct vqp *qp);
void verbs_qp_flush(struct vqp *qp);

struct ibv_qp *verbs_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a);

/* verbs_datapath.c */
int verbs_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int verbs_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int verbs_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int verbs_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc);
int verbs_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
void verbs_rx_packet(const uint8_t *buf, size_t len);
void verbs_ack_flush(void);
uint64_t verbs_ack_flush_due(void);
void verbs_ack_cancel(struct vqp *qp);
/* Process up to max arrived messages; hold_acks: an application thread,
 * whose ACKs may wait for its next send (see verbs_datapath.c). */
int verbs_rx_pending(int max, bool hold_acks);
void verbs_sqd_check(struct vqp *qp);
void verbs_sq_kick(struct vqp *qp);
bool verbs_timers_due(uint64_t now);
uint64_t verbs_run_timers(uint64_t now);
void verbs_active_add(struct vqp *qp);
void verbs_active_del(struct vqp *qp);
uint64_t verbs_now_ns(void);
int verbs_wq_init(struct vwq *wq, uint32_t size);
void verbs_wq_free(struct vwq *wq);

/* verbs_transport.c: moves a whole packet (LRH..ICRC) to the port its
 * DLID names; for multicast DLIDs to every member process. */
int verbs_transport_open(const struct verbs_port_info *pi);
int verbs_transport_fd(void);
int verbs_transport_send(const uint8_t *pkt, size_t len);
ssize_t verbs_transport_recv(uint8_t *buf, size_t len);
/* Packets of a batch received but not taken by verbs_transport_recv yet. */
bool verbs_transport_buffered(void);
void verbs_transport_batch_begin(void);
void verbs_transport_batch_end(void);
/* The process exits: packets held in the process leave (under VERBS_LOCK). */
void verbs_transport_exit(void);
/* A block of FSP_VERBS_QPN_BLOCK_SIZE QPNs owned by this process; and
 * multicast membership of this process.  Both may block on the daemon:
 * never call them holding VERBS_LOCK. */
int verbs_transport_qpn_block(uint32_t *base);
/* The block at base is no longer used (one-way, may be under VERBS_LOCK). */
void verbs_transport_qpn_release(uint32_t base);
int verbs_transport_mcast(uint16_t mlid, const uint8_t *mgid, bool join);

/* sim/verbs_xrc.c, under VERBS_LOCK: the XRC SRQ numbered srqn in xrcd. */
struct vsrq *verbs_xrc_srq_find(const struct vxrcd *xrcd, uint32_t srqn);
/* An XRC SRQ goes: off the list, its CQ and domain released. */
void verbs_xrc_srq_gone(struct vsrq *srq);
struct ibv_xrcd *verbs_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *a);
int verbs_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_srq *verbs_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *a);
int verbs_get_srq_num(struct ibv_srq *srq, uint32_t *num);

/* RC and both XRC ends: acknowledged, retried, READ and atomics. */
static inline bool vqp_reliable(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND || t == IBV_QPT_XRC_RECV;
}

/* The BTH opcode's transport bits for a QP type. */
static inline uint8_t vqp_transport(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_UC:
		return VOP_UC;
	case IBV_QPT_UD:
		return VOP_UD;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return VOP_XRC;
	default:
		return VOP_RC;
	}
}

#define VERBS_LOCK() pthread_mutex_lock(&verbs_hca.lock)
#define VERBS_UNLOCK() pthread_mutex_unlock(&verbs_hca.lock)

#define to_vqp(p) ((struct vqp *)(p))
#define vqp_ibqp(v) (&(v)->qpx.qp_base)
#define to_vcq(p) ((struct vcq *)(p))
#define to_vsrq(p) ((struct vsrq *)(p))
#define to_vmr(p) ((struct vmr *)(p))
#define to_vah(p) ((struct vah *)(p))

#endif
