/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * fabsimd internals: the fabric model, connections, the "host kernel" MAD
 * layer, and the hooks the soft verbs module (sim/fabsimd_verbs.c) plugs
 * into.  Single-threaded: everything runs on the epoll loop in
 * fabsimd_main.c, so nothing here locks.
 */
#ifndef FABSIM_FABSIMD_H
#define FABSIM_FABSIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>

#include <infiniband/mad.h>

#include "sim/proto.h"

#define FSD_MAD_SIZE 256
#define FSD_MAX_PORTS 254
#define FSD_PKEYS 64
#define FSD_LFT_CAP 49152 /* unicast LIDs a switch can forward */
#define FSD_MFT_CAP 1024  /* multicast LIDs 0xC000 .. */
#define FSD_MAX_AGENTS 32 /* per umad file, like ib_umad */
#define FSD_PERMISSIVE_LID 0xffff

struct fsd_node;
struct fsd_conn;

enum fsd_node_type { FSD_CA = 1, FSD_SWITCH = 2 };

struct fsd_agent {
	struct fsd_agent *next;	 /* in the port's list */
	struct fsd_conn *stream; /* where it delivers */
	uint32_t id;		 /* index within the stream (umad agent id) */
	uint32_t hi_tid;	 /* daemon-wide, like ib_mad_client_id */
	uint8_t mgmt_class, class_version, rmpp_version, use_oui;
	uint32_t oui;
	uint64_t method_mask[2];
};

struct fsd_port {
	struct fsd_node *node;
	int num;
	struct fsd_port *peer; /* cabled neighbour, NULL if none */
	bool admin_down;       /* fabsim link ... down */
	uint8_t link_width;    /* from the topology, IBA encoding */
	uint8_t pi[64];	       /* PortInfo as the SMA serves it */
	uint32_t rereg;	       /* PortInfo Sets with ClientReregister, so far */
	uint16_t pkeys[FSD_PKEYS];
	uint64_t guid; /* port GUID (switch: node GUID for all) */
	uint8_t sl2vl[8];
	uint8_t vlarb[4][64];
	/* umad side (CA ports) */
	struct fsd_agent *agents;
	struct fsd_conn *issm; /* holder of the SM role */
	struct fsd_capture *capture;
	/* PMA counters (4-byte words and packets, as PortCounters counts) */
	uint64_t xmit_words, rcv_words, xmit_pkts, rcv_pkts;
};

struct fsd_node {
	int index;
	enum fsd_node_type type;
	int nports;
	char id[64];   /* topology id ("H-0002c9..." or "Hca1") */
	char desc[65]; /* NodeDescription */
	uint64_t guid, sysguid;
	uint32_t vendid, devid;
	struct fsd_port *ports; /* [0 .. nports]; [0] is switch port 0 */
	/* switch */
	uint8_t si[64]; /* SwitchInfo */
	/* The LFT grows with the blocks set (beyond lft_len: 0xff, none), and
	 * the MFT appears with its first Set (absent: no ports): a switch
	 * that is never programmed costs no 80 KB of tables. */
	uint8_t *lft;
	uint32_t lft_len;
	uint16_t (*mft)[16]; /* [FSD_MFT_CAP][position] port masks */
	/* CA */
	int host_id;  /* index into fabric.hosts, -1 for switches */
	int ca_index; /* fabsimN within the host */
};

struct fsd_host {
	char name[FSP_NAME_LEN];
	int num_cas;
	struct fsd_node *cas[8];
};

/* Counters (fabsim status) */
enum fsd_counter {
	FSD_C_CLIENT_BAD, /* truncated/oversize/invalid MADs from clients */
	FSD_C_NO_ROUTE,	  /* unprogrammed or broken LID route, bad DR path */
	FSD_C_LINK_DOWN,  /* hit a link that is not up */
	FSD_C_NO_AGENT,	  /* reached a port, nobody registered for it */
	FSD_C_FAULT_DROP,
	FSD_C_FAULT_DUP,
	FSD_C_FAULT_DELAY,
	FSD_C_SEND_TIMEOUT, /* requests that ended in ETIMEDOUT */
	FSD_C_RETRIES,
	FSD_C_RMPP_SEGS,
	FSD_C_PROTO_BAD, /* garbage on the client protocol */
	FSD_C_PKEY_DROP, /* MADs whose P_Key the receiving port does not hold */
	FSD_C_MAX
};

struct fsd_fabric {
	char name[FSP_NAME_LEN];
	int num_nodes;
	struct fsd_node **nodes;
	int num_hosts;
	struct fsd_host *hosts;
	uint64_t counters[FSD_C_MAX];
	uint64_t class_fwd[256], class_drop[256];
	uint32_t next_hi_tid;
};

extern struct fsd_fabric fab;

/* ---- topology (sim/topo.c) ---- */
/* Load a topology file; on error prints "file:line: reason" to err and
 * returns -EINVAL. */
int fsd_topo_load(const char *path, FILE *err);
/* "b2b", "star:N", "fattree:K" */
int fsd_topo_generate(const char *spec, FILE *err);
/* After loading: initial port state, hosts table. */
int fsd_topo_finish(FILE *err);
struct fsd_node *fsd_node_by_name(const char *name);
/* write the topology in ibnetdiscover format (ibsim reads it too) */
void fsd_topo_dump(FILE *f);
void fsd_port_link_event(struct fsd_port *p);  /* recompute link state of p and its peer */
void fsd_port_link_update(struct fsd_port *p); /* same, without traps (start-up) */
bool fsd_port_phys_up(const struct fsd_port *p);
/* Free every node and host and zero fab, so another topology can be
 * loaded in the same process (the fuzz targets do).  Connections and
 * their agents must be gone first. */
void fsd_topo_reset(void);

/* ---- SMA (sim/sma.c) ---- */
void fsd_sma_init_port(struct fsd_port *p);
void fsd_sma_init_switch(struct fsd_node *n);
/* Handle an SMP request that reached node n through in_port.  Fills resp
 * (a full MAD) and returns 1 if a response must go back, 0 if consumed
 * without response, -1 if it is not the SMA's (SMInfo: goes to the SM). */
int fsd_sma_handle(struct fsd_node *n, int in_port, const uint8_t *mad, uint8_t *resp);
uint16_t fsd_port_lid(const struct fsd_port *p);
/* The port a switch forwards `lid` to (0xff: none). */
static inline uint8_t fsd_lft_egress(const struct fsd_node *n, uint32_t lid)
{
	return lid < n->lft_len ? n->lft[lid] : 0xff;
} /* base LID (switch: port 0) */
int fsd_port_lmc(const struct fsd_port *p);
int fsd_port_state(const struct fsd_port *p);
void fsd_port_set_state(struct fsd_port *p, int state, int phys);

/* ---- PMA (sim/pma.c): class 0x04 requests reaching a node ---- */
int fsd_pma_handle(struct fsd_node *n, int in_port, const uint8_t *mad, uint8_t *resp);

/* ---- packets and routing (sim/route.c) ---- */
struct fsd_pkt {
	struct fsd_pkt *next;
	struct fsd_port *src; /* injecting port (CA port or switch port 0) */
	uint16_t slid, dlid;
	uint8_t sl;
	uint32_t sqpn, dqpn, qkey;
	uint16_t pkey_index;
	bool grh;
	uint8_t gid[16]; /* destination GID when grh */
	uint32_t len;	 /* bytes of mad */
	uint8_t mad[FSD_MAD_SIZE];
	uint64_t due_ns; /* fault delay: not before */
	bool faulted;	 /* faults already applied (delayed copy) */
	bool nocap_src;	 /* source capture already written */
};

/* Queue a MAD for the wire; it is routed from the event loop, never
 * recursively, so a response to a response cannot nest. */
void fsd_pkt_inject(struct fsd_pkt *pkt);
void fsd_pkt_run_queue(void);
/* ms until the next delayed packet is due, -1 if none */
int fsd_pkt_next_due_ms(void);

/*
 * Generic LID routing for any packet (also the verbs data path): walk from
 * src along the switches' LFTs to the port owning dlid.  Non-QP0 traffic
 * needs Active ports on every hop (smp = true relaxes that to a physical
 * link).  Returns the destination port (CA port, or switch port 0), or
 * NULL and sets *why (a counter) when the packet is dropped.
 */
struct fsd_port *fsd_route_lid(struct fsd_port *src, uint16_t dlid, bool smp,
			       enum fsd_counter *why);
struct fsd_port *fsd_port_by_lid(uint16_t lid);
void fsd_count(enum fsd_counter c);

/* ---- umad "kernel" (sim/umad_kern.c) ---- */
int fsd_agent_register(struct fsd_conn *ctl, const struct fsp_register *req);
int fsd_agent_unregister(struct fsd_conn *ctl, const struct fsp_unregister *req);
void fsd_agents_release(struct fsd_conn *stream);
/* MAD from a client stream (struct ib_user_mad + MAD) */
void fsd_umad_send(struct fsd_conn *stream, const uint8_t *msg, size_t len);
/* MAD arrived at a CA port (after routing) */
void fsd_umad_deliver(struct fsd_port *port, const struct fsd_pkt *pkt);
void fsd_umad_timers(uint64_t now_ns);
int fsd_umad_next_due_ms(void);
/* deliver a locally made MAD to one agent's stream */
void fsd_agent_queue(struct fsd_agent *a, const struct fsd_pkt *pkt, uint32_t status,
		     const uint8_t *data, size_t len);
struct fsd_agent *fsd_agent_for_request(struct fsd_port *p, const uint8_t *mad);
struct fsd_agent *fsd_agent_by_hi_tid(struct fsd_port *p, uint32_t hi_tid);

/* ---- RMPP engine (sim/rmpp.c) ---- */
bool fsd_rmpp_class(uint8_t mgmt_class);
/* Kernel-RMPP send of a large MAD from agent a (data = whole message). */
int fsd_rmpp_send(struct fsd_agent *a, struct fsd_port *port, const struct fsd_pkt *tmpl,
		  const uint8_t *data, size_t len, uint32_t timeout_ms, uint32_t retries);
/* A MAD with RMPP active reached port; returns true if the engine took it. */
bool fsd_rmpp_recv(struct fsd_port *port, const struct fsd_pkt *pkt, struct fsd_agent *a);
void fsd_rmpp_timers(uint64_t now_ns);
int fsd_rmpp_next_due_ms(void);
void fsd_rmpp_agent_gone(struct fsd_agent *a);

/* ---- faults and capture ---- */
/* Returns number of copies to deliver (0 drop, 1, 2 dup); *delay_ms */
int fsd_fault_apply(const struct fsd_port *from, const struct fsd_port *to, const uint8_t *mad,
		    uint32_t *delay_ms);
int fsd_fault_cmd(const char *args, char *out, size_t outlen);
bool fsd_fault_any(void); /* any rule at all */
struct fsd_capture;
int fsd_capture_start(struct fsd_port *p, const char *path);
void fsd_capture_stop(struct fsd_port *p);
void fsd_capture_pkt(struct fsd_port *p, const struct fsd_pkt *pkt);
/* a soft verbs data packet, LRH..VCRC (sim/fabsimd_verbs.c) */
void fsd_capture_raw(struct fsd_port *p, const uint8_t *pkt, size_t len);

/* ---- time ---- */
uint64_t fsd_now_ns(void);
void fsd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- connections (sim/fabsimd_main.c) ---- */
struct fsd_conn {
	int fd;
	uint32_t id;
	uint32_t kind; /* enum fsp_conn_kind, 0 before HELLO */
	int pid;
	uid_t uid; /* SO_PEERCRED: a real host's umad devices are root's only */
	char comm[FSP_NAME_LEN];
	int host_id;
	/* stream */
	struct fsd_port *port;
	struct fsd_agent *agents[FSD_MAX_AGENTS];
	/* issm */
	struct fsd_port *issm_port;
	/* reassembly of a fragmented incoming message */
	uint8_t *rx;
	size_t rx_len;
	/* output queue (messages the socket could not take yet) */
	struct fsd_outmsg *outq, *outq_tail;
	size_t outq_bytes;
	bool dead;
	void *verbs; /* owned by the verbs module */
};

struct fsd_conn *fsd_conn_by_id(uint32_t id);
void fsd_conn_stats(int *nconn, int *nagents); /* for fabsim status */
/* Queue a reply / an async message on a connection (fragmenting). */
int fsd_conn_send(struct fsd_conn *c, uint16_t type, uint16_t flags, uint32_t seq, int32_t status,
		  const void *body, size_t len);
int fsd_reply(struct fsd_conn *c, const struct fsp_hdr *req, int32_t status, const void *body,
	      size_t len);

/* ---- admin (sim/admin.c) ---- */
int fsd_admin(const char *cmd, char **out);

/*
 * ---- soft verbs extension point (implemented in sim/fabsimd_verbs.c) ----
 * Weak defaults live in fabsimd_main.c so the daemon links without it.
 */
/* once at start, after the topology is loaded; dir: the fabric's */
int fsd_verbs_init(const char *dir);
/* something a route depends on changed (SMP Set, port state, link, fault,
 * capture): cut-through grants are void (sim/verbs_proto.h) */
void fsd_verbs_changed(void);
/* a message with FSP_VERBS_FIRST <= type <= FSP_VERBS_LAST; reply with
 * fsd_reply() (or not, for one-way messages).  Return -errno to have the
 * daemon reply with that status. */
int fsd_verbs_msg(struct fsd_conn *c, const struct fsp_hdr *h, const void *body, size_t len);
/* the connection is closing: free what hangs on c->verbs */
void fsd_verbs_conn_closed(struct fsd_conn *c);
/* called after every loop iteration; return the ms until you need to be
 * called again at the latest, -1 for "only when something happens" */
int fsd_verbs_tick(uint64_t now_ns);

#endif
