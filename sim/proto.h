/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * fabsim client <-> daemon protocol (see sim/PROTOCOL.md).
 *
 * Transport: UNIX SOCK_SEQPACKET socket $FABSIM_DIR/fabsimd.sock, so every
 * send() is one message.  Each message starts with struct fsp_hdr.  A
 * logical message larger than FSP_FRAG_MAX is cut into fragments: every
 * fragment but the last carries FSP_F_MORE, all carry the same type and
 * seq, and the receiver concatenates the bodies.  Both directions.
 *
 * All integers are host byte order (both ends are on the same machine),
 * except inside MADs and struct ib_user_mad's address, which keep the
 * byte order the libibumad ABI gives them.
 */
#ifndef FABSIM_PROTO_H
#define FABSIM_PROTO_H

#include <stdint.h>

#define FSP_VERSION 1
#define FSP_SOCK_NAME "fabsimd.sock"
#define FSP_FRAG_MAX 32768     /* bytes per fragment, header included */
#define FSP_MSG_MAX (4u << 20) /* largest reassembled logical message */
#define FSP_NAME_LEN 64

struct fsp_hdr {
	uint16_t type;	/* enum fsp_type */
	uint16_t flags; /* FSP_F_* */
	uint32_t len;	/* bytes of this fragment, header included */
	uint32_t seq;	/* request id, echoed in the reply; 0 if async */
	int32_t status; /* replies: >= 0 success value, or -errno */
};

enum {
	FSP_F_REPLY = 1 << 0, /* this is the reply to request seq */
	FSP_F_MORE = 1 << 1,  /* more fragments of this message follow */
};

enum fsp_type {
	/* Every connection sends HELLO first.  req fsp_hello, rep fsp_hello_rep */
	FSP_HELLO = 1,
	/* ctl: req none -> rep fsp_host_info: the CAs of the attached host */
	FSP_HOST_INFO = 2,
	/* ctl: req fsp_port_ref -> rep fsp_port_info */
	FSP_PORT_INFO = 3,
	/* stream: req fsp_port_ref -> rep fsp_attach_rep.  Makes this
	 * connection the receive stream of one umad "file" on (ca, port). */
	FSP_ATTACH = 4,
	/* ctl: req fsp_register -> status = agent id (>= 0) or -errno */
	FSP_REGISTER = 5,
	/* ctl: req fsp_unregister -> status 0 or -errno */
	FSP_UNREGISTER = 6,
	/* dedicated connection: req fsp_port_ref -> status.  Holding the
	 * connection open holds the SM role (IsSM) on that port, like an open
	 * /dev/infiniband/issmN; closing it (or dying) gives it up. */
	FSP_ISSM = 7,
	/* stream, one-way, no reply: struct ib_user_mad + MAD bytes, exactly
	 * what the application passed to umad_send().  Invalid ones are
	 * dropped and counted ("client_bad" in fabsim status). */
	FSP_MAD_SEND = 8,
	/* daemon -> stream, async: struct ib_user_mad + MAD bytes, what
	 * umad_recv() returns (reassembled RMPP, or a send timeout with
	 * status ETIMEDOUT) */
	FSP_MAD_RECV = 9,
	/* admin: req NUL-terminated command line -> rep text (see
	 * PROTOCOL.md); status 0 or -errno */
	FSP_ADMIN = 10,

	/* Reserved for the soft verbs module (sim/fabsimd_verbs.c): the
	 * daemon passes every message in this range to fsd_verbs_msg(). */
	FSP_VERBS_FIRST = 0x1000,
	FSP_VERBS_LAST = 0x1fff,
};

enum fsp_conn_kind {
	FSP_KIND_CTL = 1,    /* request/response only */
	FSP_KIND_STREAM = 2, /* receives async messages (MADs, verbs events) */
	FSP_KIND_ISSM = 3,   /* held open to keep the SM role */
	FSP_KIND_ADMIN = 4,  /* fabsim CLI */
};

struct fsp_hello {
	uint32_t version; /* FSP_VERSION */
	uint32_t kind;	  /* enum fsp_conn_kind */
	int32_t pid;
	uint32_t reserved;
	char host[FSP_NAME_LEN]; /* FABSIM_HOST; "" = first host */
	char comm[FSP_NAME_LEN]; /* program name, for fabsim status */
};

struct fsp_hello_rep {
	uint32_t version;
	uint32_t conn_id; /* daemon-wide id of this connection */
	uint32_t host_id; /* index of the host this connection is attached to */
	uint32_t num_cas; /* CAs of that host: fabsim0 .. fabsim<n-1> */
	char host[FSP_NAME_LEN];
	char fabric[FSP_NAME_LEN];
};

struct fsp_port_ref {
	uint32_t ca;   /* index among the host's CAs (fabsimN) */
	uint32_t port; /* 1-based; 0 = first port */
};

#define FSP_MAX_PKEYS 32

struct fsp_port_info {
	uint32_t port; /* port number */
	uint32_t lid;
	uint32_t lmc;
	uint32_t sm_lid;
	uint32_t sm_sl;
	uint32_t state;		    /* IBA PortState: 1 Down .. 4 Active */
	uint32_t phys_state;	    /* IBA PortPhysicalState: 2 Polling, 3 Disabled, 5 LinkUp */
	uint32_t rate;		    /* Gb/s, as sysfs "rate" */
	uint32_t capmask;	    /* host order */
	uint32_t link_width_active; /* IBA encoding */
	uint32_t link_speed_active; /* IBA encoding */
	uint32_t num_pkeys;
	uint64_t gid_prefix; /* host order */
	uint64_t port_guid;  /* host order */
	uint16_t pkeys[FSP_MAX_PKEYS];
};

struct fsp_ca_info {
	char name[20];	    /* "fabsim0" */
	uint32_t node_type; /* 1 CA */
	uint32_t num_ports;
	uint64_t node_guid;   /* host order */
	uint64_t system_guid; /* host order */
	uint32_t node_index;  /* daemon node index, for verbs */
	uint32_t reserved;
};

struct fsp_host_info {
	uint32_t host_id;
	uint32_t num_cas;
	char host[FSP_NAME_LEN];
	struct fsp_ca_info cas[8];
};

struct fsp_attach_rep {
	uint32_t stream_id; /* == conn_id of this connection */
	uint32_t port;	    /* resolved port number */
};

struct fsp_register {
	uint32_t stream_id; /* the FSP_ATTACH'ed connection agents deliver to */
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t rmpp_version;	 /* 0: deliver raw RMPP segments (user RMPP) */
	uint8_t use_oui;	 /* 1: vendor class with oui (umad_register_oui) */
	uint32_t oui;		 /* 24 bits */
	uint32_t flags;		 /* umad_register2 flags (UMAD_USER_RMPP) */
	uint64_t method_mask[2]; /* bit m = method m, like the kernel's */
};

struct fsp_unregister {
	uint32_t stream_id;
	uint32_t agent_id;
};

#endif
