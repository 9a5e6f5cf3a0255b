/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The CM connection state machine, as ONE table: for every state, what
 * each received message, user command and timer expiry does.  Check it
 * against IBA vol 1 ch. 12.9 (figures 154-157: active, passive, disconnect,
 * LAP) and the kernel's drivers/infiniband/core/cm.c handlers.
 *
 * An entry absent from a row is CM_A_DROP: a message is ignored (and
 * counted as dropped), a command fails with -EINVAL.  The code that
 * performs a GO lives in conn.c / lap.c / sidr.c; its only freedom is the
 * one noted here: a REJ with reason "stale connection" leads to TimeWait
 * instead of IDLE (kernel cm_rej_handler), and the timer input first
 * retransmits while retries are left (the table says where to go after
 * the last one).  IDLE is also the row used for messages whose comm ID
 * matches no connection.  A REJ "timeout" from an active side still in
 * REQ_SENT has no RemoteCommID; engine.c finds its connection by (its
 * LocalCommID, the CA GUID in its ARI), and the passive rows below apply.
 */
#include "config.h"

#include "cm/cm_int.h"

#define GO(s)                                                                                      \
	{                                                                                          \
		CM_A_GO, CM_ST_##s                                                                 \
	}
#define STAY                                                                                       \
	{                                                                                          \
		CM_A_GO, CM_ST_SAME                                                                \
	}
#define RESEND                                                                                     \
	{                                                                                          \
		CM_A_RESEND, CM_ST_SAME                                                            \
	}
#define REJ_STALE                                                                                  \
	{                                                                                          \
		CM_A_REJ_STALE, CM_ST_SAME                                                         \
	}
#define REJ_BAD_ID                                                                                 \
	{                                                                                          \
		CM_A_REJ_INVALID_ID, CM_ST_SAME                                                    \
	}
#define DREP                                                                                       \
	{                                                                                          \
		CM_A_DREP, CM_ST_SAME                                                              \
	}
#define RTU                                                                                        \
	{                                                                                          \
		CM_A_RTU, CM_ST_SAME                                                               \
	}
#define NONE                                                                                       \
	{                                                                                          \
		CM_A_NONE, CM_ST_SAME                                                              \
	}
#define DROP                                                                                       \
	{                                                                                          \
		CM_A_DROP, CM_ST_SAME                                                              \
	}

/* After ESTABLISHED: what any connected state does with disconnect traffic. */
#define CONNECTED_COMMON                                                                           \
	[CM_IN_REQ] = DROP, /* duplicate REQ of a live connection */                               \
	    [CM_IN_REJ] = GO(TIMEWAIT), [CM_IN_REP] = RTU, /* our RTU was lost: send it again */   \
	    [CM_IN_DREQ] = GO(DREQ_RCVD), [CM_CMD_DREQ] = GO(DREQ_SENT)

static const struct cm_transition table[CM_ST__COUNT][CM_IN__COUNT] =
    {
	[CM_ST_IDLE] =
	    {
		[CM_IN_REQ] = GO(REQ_RCVD), /* new passive connection */
		[CM_IN_REP] = REJ_BAD_ID,   /* REP for no REQ of ours */
		[CM_IN_DREQ] = DREP,	    /* peer still disconnecting a gone conn */
		[CM_IN_SIDR_REQ] = GO(SIDR_REQ_RCVD),
		[CM_CMD_CONNECT] = GO(REQ_SENT),
		[CM_CMD_SIDR_REQ] = GO(SIDR_REQ_SENT),
	    },
	/* ---- active side ---- */
	[CM_ST_REQ_SENT] =
	    {
		[CM_IN_MRA_REQ] = GO(MRA_REQ_RCVD), /* timeout extended */
		[CM_IN_REJ] = GO(IDLE),
		[CM_IN_REP] = GO(REP_RCVD),
		[CM_CMD_REJECT] = GO(IDLE),
		[CM_IN_TIMEOUT] = GO(IDLE), /* REJ "timeout", REQ_ERROR */
	    },
	[CM_ST_MRA_REQ_RCVD] =
	    {
		[CM_IN_MRA_REQ] = DROP, /* duplicate MRA */
		[CM_IN_REJ] = GO(IDLE),
		[CM_IN_REP] = GO(REP_RCVD),
		[CM_CMD_REJECT] = GO(IDLE),
		[CM_IN_TIMEOUT] = GO(IDLE),
	    },
	[CM_ST_REP_RCVD] =
	    {
		[CM_IN_REP] = DROP, /* duplicate, user has not answered */
		[CM_IN_REJ] = GO(TIMEWAIT),
		[CM_CMD_RTU] = GO(ESTABLISHED),
		[CM_CMD_REJECT] = GO(IDLE),
		[CM_CMD_MRA] = GO(MRA_REP_SENT),
	    },
	[CM_ST_MRA_REP_SENT] =
	    {
		[CM_IN_REP] = RESEND, /* the MRA */
		[CM_IN_REJ] = GO(TIMEWAIT),
		[CM_CMD_RTU] = GO(ESTABLISHED),
		[CM_CMD_REJECT] = GO(IDLE),
		[CM_CMD_MRA] = STAY,
	    },
	/* ---- passive side ---- */
	[CM_ST_REQ_RCVD] =
	    {
		[CM_IN_REQ] = DROP, /* duplicate, user has not answered */
		[CM_IN_REJ] = GO(IDLE),
		[CM_CMD_ACCEPT] = GO(REP_SENT),
		[CM_CMD_REJECT] = GO(IDLE),
		[CM_CMD_MRA] = GO(MRA_REQ_SENT),
	    },
	[CM_ST_MRA_REQ_SENT] =
	    {
		[CM_IN_REQ] = RESEND, /* the MRA */
		[CM_IN_REJ] = GO(IDLE),
		[CM_CMD_ACCEPT] = GO(REP_SENT),
		[CM_CMD_REJECT] = GO(IDLE),
		[CM_CMD_MRA] = STAY,
	    },
	[CM_ST_REP_SENT] =
	    {
		[CM_IN_REQ] = RESEND, /* the REP */
		[CM_IN_MRA_REP] = GO(MRA_REP_RCVD),
		[CM_IN_REJ] = GO(IDLE),
		[CM_IN_RTU] = GO(ESTABLISHED),
		[CM_IN_DREQ] = GO(DREQ_RCVD), /* RTU lost, peer already leaving */
		[CM_CMD_REJECT] = GO(TIMEWAIT),
		[CM_CMD_ESTABLISH] = GO(ESTABLISHED),
		[CM_IN_TIMEOUT] = GO(IDLE), /* REJ "timeout", REP_ERROR */
	    },
	[CM_ST_MRA_REP_RCVD] =
	    {
		[CM_IN_REQ] = RESEND, /* the REP */
		[CM_IN_MRA_REP] = DROP,
		[CM_IN_REJ] = GO(IDLE),
		[CM_IN_RTU] = GO(ESTABLISHED),
		[CM_IN_DREQ] = GO(DREQ_RCVD),
		[CM_CMD_REJECT] = GO(TIMEWAIT),
		[CM_CMD_ESTABLISH] = GO(ESTABLISHED),
		[CM_IN_TIMEOUT] = GO(IDLE),
	    },
	/* ---- connected ---- */
	[CM_ST_ESTABLISHED] =
	    {
		CONNECTED_COMMON,
		[CM_IN_LAP] = GO(LAP_RCVD),
		[CM_CMD_LAP] = GO(LAP_SENT),
	    },
	[CM_ST_LAP_SENT] =
	    {
		CONNECTED_COMMON, [CM_IN_MRA_LAP] = GO(MRA_LAP_RCVD), [CM_IN_APR] = GO(ESTABLISHED),
		[CM_IN_TIMEOUT] = GO(ESTABLISHED), /* LAP_ERROR, old paths kept */
	    },
	[CM_ST_MRA_LAP_RCVD] =
	    {
		CONNECTED_COMMON,
		[CM_IN_MRA_LAP] = DROP,
		[CM_IN_APR] = GO(ESTABLISHED),
		[CM_IN_TIMEOUT] = GO(ESTABLISHED),
	    },
	[CM_ST_LAP_RCVD] =
	    {
		CONNECTED_COMMON,
		[CM_IN_LAP] = DROP, /* duplicate, user has not answered */
		[CM_CMD_APR] = GO(ESTABLISHED),
		[CM_CMD_MRA] = GO(MRA_LAP_SENT),
	    },
	[CM_ST_MRA_LAP_SENT] =
	    {
		CONNECTED_COMMON,
		[CM_IN_LAP] = RESEND, /* the MRA */
		[CM_CMD_APR] = GO(ESTABLISHED),
		[CM_CMD_MRA] = STAY,
	    },
	/* ---- disconnecting ---- */
	[CM_ST_DREQ_SENT] =
	    {
		[CM_IN_REJ] = GO(TIMEWAIT),
		[CM_IN_DREQ] = GO(DREQ_RCVD), /* simultaneous DREQs */
		[CM_IN_DREP] = GO(TIMEWAIT),
		[CM_IN_TIMEOUT] = GO(TIMEWAIT), /* DREQ_ERROR */
	    },
	[CM_ST_DREQ_RCVD] =
	    {
		[CM_IN_DREQ] = DROP,	     /* duplicate, user has not answered */
		[CM_IN_DREP] = GO(TIMEWAIT), /* simultaneous: answer to our DREQ */
		[CM_CMD_DREP] = GO(TIMEWAIT),
	    },
	[CM_ST_TIMEWAIT] =
	    {
		[CM_IN_REQ] = REJ_STALE, /* REQ of a finished connection */
		[CM_IN_DREQ] = DREP,	 /* our DREP was lost */
		/*
		 * rdma_disconnect() after our DREQ was answered (or after a
		 * simultaneous DREQ's DREP came): succeeds, and sends nothing,
		 * as the kernel's CM sends a DREP only from DREQ_RCVD.
		 */
		[CM_CMD_DREP] = NONE,
		[CM_IN_TIMEOUT] = GO(IDLE), /* TIMEWAIT_EXIT, QPN free again */
	    },
	/* ---- SIDR ---- */
	[CM_ST_SIDR_REQ_SENT] =
	    {
		[CM_IN_SIDR_REP] = GO(IDLE), [CM_IN_TIMEOUT] = GO(IDLE), /* SIDR_REQ_ERROR */
	    },
	[CM_ST_SIDR_REQ_RCVD] =
	    {
		[CM_IN_SIDR_REQ] = DROP, /* duplicate, user has not answered */
		[CM_CMD_SIDR_REP] = GO(SIDR_REP_SENT),
	    },
	[CM_ST_SIDR_REP_SENT] =
	    {
		[CM_IN_SIDR_REQ] = RESEND,  /* our SIDR_REP was lost: the same again */
		[CM_IN_TIMEOUT] = GO(IDLE), /* gone, no event */
	    },
};

const struct cm_transition *cm_transition(enum cm_state s, enum cm_input in)
{
	static const struct cm_transition drop = DROP;

	if ((unsigned)s >= CM_ST__COUNT || (unsigned)in >= CM_IN__COUNT)
		return &drop;
	return &table[s][in];
}

bool cm_state_retransmits(enum cm_state s)
{
	switch (s) {
	case CM_ST_REQ_SENT:
	case CM_ST_MRA_REQ_RCVD:
	case CM_ST_REP_SENT:
	case CM_ST_MRA_REP_RCVD:
	case CM_ST_DREQ_SENT:
	case CM_ST_LAP_SENT:
	case CM_ST_MRA_LAP_RCVD:
	case CM_ST_SIDR_REQ_SENT:
		return true;
	default:
		return false;
	}
}

bool cm_state_keeps_msg(enum cm_state s)
{
	switch (s) {
	case CM_ST_MRA_REQ_SENT: /* the RESENDs of the table */
	case CM_ST_MRA_REP_SENT:
	case CM_ST_MRA_LAP_SENT:
	case CM_ST_SIDR_REP_SENT:
		return true;
	default:
		return cm_state_retransmits(s);
	}
}

const char *cm_state_name(enum cm_state s)
{
	static const char *const names[CM_ST__COUNT] = {
	    [CM_ST_IDLE] = "IDLE",
	    [CM_ST_REQ_SENT] = "REQ_SENT",
	    [CM_ST_REQ_RCVD] = "REQ_RCVD",
	    [CM_ST_MRA_REQ_SENT] = "MRA_REQ_SENT",
	    [CM_ST_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
	    [CM_ST_REP_SENT] = "REP_SENT",
	    [CM_ST_REP_RCVD] = "REP_RCVD",
	    [CM_ST_MRA_REP_SENT] = "MRA_REP_SENT",
	    [CM_ST_MRA_REP_RCVD] = "MRA_REP_RCVD",
	    [CM_ST_ESTABLISHED] = "ESTABLISHED",
	    [CM_ST_DREQ_SENT] = "DREQ_SENT",
	    [CM_ST_DREQ_RCVD] = "DREQ_RCVD",
	    [CM_ST_TIMEWAIT] = "TIMEWAIT",
	    [CM_ST_SIDR_REQ_SENT] = "SIDR_REQ_SENT",
	    [CM_ST_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
	    [CM_ST_SIDR_REP_SENT] = "SIDR_REP_SENT",
	    [CM_ST_LAP_SENT] = "LAP_SENT",
	    [CM_ST_LAP_RCVD] = "LAP_RCVD",
	    [CM_ST_MRA_LAP_SENT] = "MRA_LAP_SENT",
	    [CM_ST_MRA_LAP_RCVD] = "MRA_LAP_RCVD",
	};

	if ((unsigned)s >= CM_ST__COUNT)
		return "unknown";
	return names[s];
}

const char *cm_input_name(enum cm_input in)
{
	static const char *const names[CM_IN__COUNT] = {
	    [CM_IN_REQ] = "REQ",
	    [CM_IN_MRA_REQ] = "MRA(REQ)",
	    [CM_IN_MRA_REP] = "MRA(REP)",
	    [CM_IN_MRA_LAP] = "MRA(LAP)",
	    [CM_IN_REJ] = "REJ",
	    [CM_IN_REP] = "REP",
	    [CM_IN_RTU] = "RTU",
	    [CM_IN_DREQ] = "DREQ",
	    [CM_IN_DREP] = "DREP",
	    [CM_IN_LAP] = "LAP",
	    [CM_IN_APR] = "APR",
	    [CM_IN_SIDR_REQ] = "SIDR_REQ",
	    [CM_IN_SIDR_REP] = "SIDR_REP",
	    [CM_CMD_CONNECT] = "connect",
	    [CM_CMD_ACCEPT] = "accept",
	    [CM_CMD_REJECT] = "reject",
	    [CM_CMD_MRA] = "mra",
	    [CM_CMD_RTU] = "rtu",
	    [CM_CMD_ESTABLISH] = "establish",
	    [CM_CMD_DREQ] = "dreq",
	    [CM_CMD_DREP] = "drep",
	    [CM_CMD_LAP] = "lap",
	    [CM_CMD_APR] = "apr",
	    [CM_CMD_SIDR_REQ] = "sidr_req",
	    [CM_CMD_SIDR_REP] = "sidr_rep",
	    [CM_IN_TIMEOUT] = "timeout",
	};

	if ((unsigned)in >= CM_IN__COUNT)
		return "unknown";
	return names[in];
}

const char *cm_event_name(enum cm_event_type t)
{
	static const char *const names[CM_EV__COUNT] = {
	    [CM_EV_REQ_RCVD] = "REQ_RCVD",
	    [CM_EV_REQ_ERROR] = "REQ_ERROR",
	    [CM_EV_REP_RCVD] = "REP_RCVD",
	    [CM_EV_REP_ERROR] = "REP_ERROR",
	    [CM_EV_RTU_RCVD] = "RTU_RCVD",
	    [CM_EV_USER_ESTABLISHED] = "USER_ESTABLISHED",
	    [CM_EV_REJ_RCVD] = "REJ_RCVD",
	    [CM_EV_MRA_RCVD] = "MRA_RCVD",
	    [CM_EV_DREQ_RCVD] = "DREQ_RCVD",
	    [CM_EV_DREQ_ERROR] = "DREQ_ERROR",
	    [CM_EV_DREP_RCVD] = "DREP_RCVD",
	    [CM_EV_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	    [CM_EV_LAP_RCVD] = "LAP_RCVD",
	    [CM_EV_LAP_ERROR] = "LAP_ERROR",
	    [CM_EV_APR_RCVD] = "APR_RCVD",
	    [CM_EV_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
	    [CM_EV_SIDR_REQ_ERROR] = "SIDR_REQ_ERROR",
	    [CM_EV_SIDR_REP_RCVD] = "SIDR_REP_RCVD",
	    [CM_EV_ESTABLISHED] = "ESTABLISHED",
	    [CM_EV_CONNECT_ERROR] = "CONNECT_ERROR",
	    [CM_EV_RUNTIME_LOST] = "RUNTIME_LOST",
	};

	if ((unsigned)t >= CM_EV__COUNT)
		return "unknown";
	return names[t];
}
