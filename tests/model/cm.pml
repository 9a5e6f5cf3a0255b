/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * A Promela model of the CM connection protocol (IBA vol 1 ch. 12.6-12.9)
 * as madcm's engine runs it: an active side and a passive side, each an
 * engine hosting one connection at a time, over a network that loses,
 * duplicates and reorders messages (each within a bound).
 *
 * The transitions are the table of cm/state.c, written out below as T()
 * lines (one per non-DROP entry of the states and inputs the model covers).
 * tests/model/check_table.sh compares these lines with the C table (dumped
 * by tests/model/cm_table_dump), so the two cannot drift apart.  What the
 * table leaves to the code (which message a GO sends, REJ "stale" leading
 * to TimeWait, retransmission while retries are left, how a message finds
 * its connection by comm IDs) is modelled from cm/conn.c and cm/engine.c.
 *
 * Bounds (cpp -D): LOSS messages lost, DUPS messages duplicated, REORDER
 * messages taken out of order (any type in flight instead of the oldest),
 * = max CM retries, QLEN messages in flight towards one side (beyond it a
 * message is lost, as a full receive queue loses it).
 *
 * Checked (tests/model/spin_check.sh):
 *  - no invalid end state (deadlock): a side only ever waits in IDLE;
 *  - no cycle at all (-DNP, ./pan -l with no progress label): livelock free;
 *  - every connection, when it is freed (IDLE): ESTABLISHED then TimeWait,
 *    or never established and an error (REJ, *_ERROR, DREQ) reported to
 *    its user or its own user rejected;
 *  - TimeWait is passed after every DREQ sent or received;
 *  - never two ESTABLISHED connections on one side for the one REQ;
 *  - a side that was ESTABLISHED while the other side's connection never
 *    matched it was sent a REJ or a DREQ ("will be told"), or disconnected
 *    by itself (sent are the messages: one the network lost is still told);
 *  - in the end, both sides are IDLE.
 */

#ifndef LOSS
#define LOSS 1
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef RETRIES
#define RETRIES 1
#endif
#ifndef REORDER
#define REORDER 1
#endif
#ifndef QLEN
#define QLEN 4
#endif

#define ACT 0 /* the side that sends the REQ */
#define PAS 1

/* States (the subset of enum cm_state the model covers). */
#define ST_IDLE 0
#define ST_REQ_SENT 1
#define ST_REQ_RCVD 2
#define ST_MRA_REQ_SENT 3
#define ST_MRA_REQ_RCVD 4
#define ST_REP_SENT 5
#define ST_REP_RCVD 6
#define ST_MRA_REP_SENT 7
#define ST_MRA_REP_RCVD 8
#define ST_ESTABLISHED 9
#define ST_DREQ_SENT 10
#define ST_DREQ_RCVD 11
#define ST_TIMEWAIT 12
#define ST_SAME 255

/* Inputs: messages (also the message types on the wire), commands, timer. */
#define I_REQ 1
#define I_MRA_REQ 2
#define I_MRA_REP 3
#define I_REJ 4
#define I_REP 5
#define I_RTU 6
#define I_DREQ 7
#define I_DREP 8
#define I_CMD_CONNECT 9
#define I_CMD_ACCEPT 10
#define I_CMD_REJECT 11
#define I_CMD_MRA 12
#define I_CMD_RTU 13
#define I_CMD_ESTABLISH 14
#define I_CMD_DREQ 15
#define I_CMD_DREP 16
#define I_TIMEOUT 17

/* Actions (enum cm_action). */
#define A_DROP 0
#define A_GO 1
#define A_RESEND 2
#define A_REJ_STALE 3
#define A_REJ_INVALID_ID 4
#define A_DREP 5
#define A_RTU 6
#define A_NONE 7 /* command accepted, nothing sent (never issued here) */

/* REJ reasons that matter to the protocol. */
#define R_NONE 0
#define R_TIMEOUT 1
#define R_STALE 2
#define R_INVALID_ID 3
#define R_CONSUMER 4

/*
 * ======== THE TABLE (cm/state.c), checked by check_table.sh ========
 * T(state, input, action, next): absent entries are DROP.
 */
#define T(s, i, a, n)                                                          \
	:: (lk_s == ST_##s && lk_i == I_##i) -> lk_a = A_##a; lk_n = ST_##n

inline lookup(lk_s, lk_i, lk_a, lk_n)
{
	if
	T(IDLE, REQ, GO, REQ_RCVD)
	T(IDLE, REP, REJ_INVALID_ID, SAME)
	T(IDLE, DREQ, DREP, SAME)
	T(IDLE, CMD_CONNECT, GO, REQ_SENT)
	/* active side */
	T(REQ_SENT, MRA_REQ, GO, MRA_REQ_RCVD)
	T(REQ_SENT, REJ, GO, IDLE)
	T(REQ_SENT, REP, GO, REP_RCVD)
	T(REQ_SENT, CMD_REJECT, GO, IDLE)
	T(REQ_SENT, TIMEOUT, GO, IDLE)
	T(MRA_REQ_RCVD, REJ, GO, IDLE)
	T(MRA_REQ_RCVD, REP, GO, REP_RCVD)
	T(MRA_REQ_RCVD, CMD_REJECT, GO, IDLE)
	T(MRA_REQ_RCVD, TIMEOUT, GO, IDLE)
	T(REP_RCVD, REJ, GO, TIMEWAIT)
	T(REP_RCVD, CMD_RTU, GO, ESTABLISHED)
	T(REP_RCVD, CMD_REJECT, GO, IDLE)
	T(REP_RCVD, CMD_MRA, GO, MRA_REP_SENT)
	T(MRA_REP_SENT, REP, RESEND, SAME)
	T(MRA_REP_SENT, REJ, GO, TIMEWAIT)
	T(MRA_REP_SENT, CMD_RTU, GO, ESTABLISHED)
	T(MRA_REP_SENT, CMD_REJECT, GO, IDLE)
	T(MRA_REP_SENT, CMD_MRA, GO, SAME)
	/* passive side */
	T(REQ_RCVD, REJ, GO, IDLE)
	T(REQ_RCVD, CMD_ACCEPT, GO, REP_SENT)
	T(REQ_RCVD, CMD_REJECT, GO, IDLE)
	T(REQ_RCVD, CMD_MRA, GO, MRA_REQ_SENT)
	T(MRA_REQ_SENT, REQ, RESEND, SAME)
	T(MRA_REQ_SENT, REJ, GO, IDLE)
	T(MRA_REQ_SENT, CMD_ACCEPT, GO, REP_SENT)
	T(MRA_REQ_SENT, CMD_REJECT, GO, IDLE)
	T(MRA_REQ_SENT, CMD_MRA, GO, SAME)
	T(REP_SENT, REQ, RESEND, SAME)
	T(REP_SENT, MRA_REP, GO, MRA_REP_RCVD)
	T(REP_SENT, REJ, GO, IDLE)
	T(REP_SENT, RTU, GO, ESTABLISHED)
	T(REP_SENT, DREQ, GO, DREQ_RCVD)
	T(REP_SENT, CMD_REJECT, GO, TIMEWAIT)
	T(REP_SENT, CMD_ESTABLISH, GO, ESTABLISHED)
	T(REP_SENT, TIMEOUT, GO, IDLE)
	T(MRA_REP_RCVD, REQ, RESEND, SAME)
	T(MRA_REP_RCVD, REJ, GO, IDLE)
	T(MRA_REP_RCVD, RTU, GO, ESTABLISHED)
	T(MRA_REP_RCVD, DREQ, GO, DREQ_RCVD)
	T(MRA_REP_RCVD, CMD_REJECT, GO, TIMEWAIT)
	T(MRA_REP_RCVD, CMD_ESTABLISH, GO, ESTABLISHED)
	T(MRA_REP_RCVD, TIMEOUT, GO, IDLE)
	/* connected */
	T(ESTABLISHED, REJ, GO, TIMEWAIT)
	T(ESTABLISHED, REP, RTU, SAME)
	T(ESTABLISHED, DREQ, GO, DREQ_RCVD)
	T(ESTABLISHED, CMD_DREQ, GO, DREQ_SENT)
	/* disconnecting */
	T(DREQ_SENT, REJ, GO, TIMEWAIT)
	T(DREQ_SENT, DREQ, GO, DREQ_RCVD)
	T(DREQ_SENT, DREP, GO, TIMEWAIT)
	T(DREQ_SENT, TIMEOUT, GO, TIMEWAIT)
	T(DREQ_RCVD, DREP, GO, TIMEWAIT)
	T(DREQ_RCVD, CMD_DREP, GO, TIMEWAIT)
	T(TIMEWAIT, REQ, REJ_STALE, SAME)
	T(TIMEWAIT, DREQ, DREP, SAME)
	T(TIMEWAIT, CMD_DREP, NONE, SAME)
	T(TIMEWAIT, TIMEOUT, GO, IDLE)
	:: else -> lk_a = A_DROP; lk_n = ST_SAME
	fi
}

/* States whose timer retransmits (cm_state_retransmits), also checked. */
#define RETX(s) || st[me] == ST_##s
#define RETRANSMITS                                                            \
	(false RETX(REQ_SENT) RETX(MRA_REQ_RCVD) RETX(REP_SENT)                \
	     RETX(MRA_REP_RCVD) RETX(DREQ_SENT))
/* ======== end of the table ======== */

/* message: type, REJ reason, generation, sender's comm ID, receiver's */
chan net[2] = [QLEN] of { byte, byte, byte, byte, byte };

byte loss = LOSS;
byte dups = DUPS;
byte reorder = REORDER;
byte gen; /* bumped when a side enters TimeWait: ages the messages */

/* One connection per side (comm IDs: active 1, passive 1, 2, ...). */
byte st[2];
byte cid[2];   /* our comm ID, 0 when the side is IDLE */
byte rid[2];   /* the peer's comm ID as we know it, 0 unknown */
byte retries[2];
byte last_t[2], last_r[2], last_s[2], last_d[2]; /* last message, for resends */
byte mark[2];  /* generation at our TimeWait entry */
byte ninc;     /* passive connections made so far */

/* per connection ghosts, reset when it is freed */
bool c_est[2], c_tw[2], c_rep[2], c_urej[2], c_dreq[2], c_umra[2];
/* per side ghosts */
byte est[2];     /* connections that reached ESTABLISHED */
byte est_with[2]; /* passive comm ID of the (first) established connection */
bool told[2];    /* the peer sent this side a REJ or a DREQ, or it sent a DREQ */
byte data_to;    /* passive comm ID the active QP sends data to (establish) */

/* Send the message in o_* towards the peer: lost, sent, or sent twice. */
inline put(to)
{
	if
	:: (o_t == I_REJ || o_t == I_DREQ) -> told[to] = true
	:: else -> skip
	fi;
	if
	:: loss > 0 -> loss--
	:: nfull(net[to]) ->
		net[to]!o_t, o_r, gen, o_s, o_d;
		if
		:: dups > 0 && nfull(net[to]) -> dups--; net[to]!o_t, o_r, gen, o_s, o_d
		:: true -> skip
		fi
	:: full(net[to]) -> skip /* a full receive queue loses it */
	fi
}

/* A connection message: remembered for resends (c->msg). */
#define OUT(t, r, s, retx)                                                     \
	o_t = t; o_r = r; o_s = s; o_d = rid[me]; o_keep = true; o_retx = retx
/* An answer without a connection (cm_issue_rej, cm_issue_drep, fresh RTU). */
#define RAW(t, r, s, d) o_t = t; o_r = r; o_s = s; o_d = d

inline purge(me)
{
	k = 0;
	do
	:: k < mark[me] ->
		do
		:: net[me]??[_, _, eval(k), _, _] -> net[me]??_, _, eval(k), _, _
		:: else -> break
		od;
		k++
	:: else -> break
	od;
	k = 0
}

inline set_state(me, n)
{
	if
	:: n == ST_SAME || n == st[me] -> skip
	:: else ->
		st[me] = n;
		if
		:: n == ST_ESTABLISHED ->
			c_est[me] = true;
			est[me]++;
			assert(est[me] <= 1); /* never two connections for one REQ */
			if
			:: me == ACT -> est_with[me] = rid[me]; data_to = rid[me]
			:: else -> est_with[me] = cid[me]
			fi
		:: n == ST_TIMEWAIT ->
			c_tw[me] = true; gen++; mark[me] = gen
		:: n == ST_IDLE ->
			/* the connection is freed: how did its attempt end? */
			assert(!c_est[me] || c_tw[me]);
			assert(c_est[me] || c_rep[me] || c_urej[me]);
			assert(!c_dreq[me] || c_tw[me]);
			cid[me] = 0; rid[me] = 0; retries[me] = 0;
			last_t[me] = 0; last_r[me] = 0; last_s[me] = 0; last_d[me] = 0;
			c_est[me] = false; c_tw[me] = false; c_rep[me] = false;
			c_urej[me] = false; c_dreq[me] = false; c_umra[me] = false
		:: else -> skip
		fi
	fi
}

/* The work of a GO (cm/conn.c): the message it sends, and the next state. */
inline go(me, i)
{
	if
	:: i == I_REQ -> /* new passive connection (cm_on_req) */
		ninc++; cid[me] = ninc; rid[me] = m_s
	:: i == I_MRA_REQ || i == I_MRA_REP ->
		if
		:: rid[me] == 0 -> rid[me] = m_s
		:: else -> skip
		fi
	:: i == I_REJ ->
		c_rep[me] = true; /* REJ_RCVD event */
		if
		:: m_r == R_STALE && n == ST_IDLE -> n = ST_TIMEWAIT
		:: else -> skip
		fi
	:: i == I_REP ->
		if
		:: m_s == 0 -> n = ST_SAME /* dropped */
		:: else -> rid[me] = m_s
		fi
	:: i == I_RTU || i == I_CMD_ESTABLISH || i == I_DREP -> skip
	:: i == I_DREQ -> c_dreq[me] = true; c_rep[me] = true
	:: i == I_CMD_CONNECT -> cid[me] = 1; OUT(I_REQ, R_NONE, 1, true)
	:: i == I_CMD_ACCEPT -> OUT(I_REP, R_NONE, cid[me], true)
	:: i == I_CMD_REJECT ->
		c_urej[me] = true;
		if
		:: st[me] == ST_REQ_RCVD -> /* no local ID yet */
			OUT(I_REJ, R_CONSUMER, 0, false)
		:: st[me] == ST_REQ_SENT || st[me] == ST_MRA_REQ_RCVD ->
			/* giving up on our REQ (cm_engine_release) */
			OUT(I_REJ, R_TIMEOUT, cid[me], false)
		:: else -> OUT(I_REJ, R_CONSUMER, cid[me], false)
		fi
	:: i == I_CMD_MRA ->
		c_umra[me] = true;
		if
		:: st[me] == ST_REQ_RCVD || st[me] == ST_MRA_REQ_SENT ->
			OUT(I_MRA_REQ, R_NONE, cid[me], false)
		:: else -> OUT(I_MRA_REP, R_NONE, cid[me], false)
		fi
	:: i == I_CMD_RTU -> OUT(I_RTU, R_NONE, cid[me], false)
	:: i == I_CMD_DREQ -> /* leaving by itself: nothing to be told */
		c_dreq[me] = true; told[me] = true; OUT(I_DREQ, R_NONE, cid[me], true)
	:: i == I_CMD_DREP -> OUT(I_DREP, R_NONE, cid[me], false)
	:: i == I_TIMEOUT ->
		if
		:: st[me] == ST_TIMEWAIT -> purge(me) /* older messages are dead */
		:: st[me] == ST_DREQ_SENT -> skip     /* DREQ_ERROR */
		:: else ->                            /* REQ_ERROR / REP_ERROR */
			c_rep[me] = true;
			OUT(I_REJ, R_TIMEOUT, cid[me], false)
		fi
	fi
}

/* An input for our connection (or, with no connection, for IDLE). */
inline input(me, i, have)
{
	if
	:: have -> lookup(st[me], i, a, n)
	:: else -> lookup(ST_IDLE, i, a, n)
	fi;
	if
	:: a == A_GO && i == I_REQ && !have -> go(me, i) /* cm_on_req */
	:: a == A_GO && i != I_REQ && (have || i == I_CMD_CONNECT) -> go(me, i)
	:: a == A_RESEND -> RAW(last_t[me], last_r[me], last_s[me], last_d[me])
	:: a == A_REJ_STALE -> RAW(I_REJ, R_STALE, 0, m_s)
	:: a == A_REJ_INVALID_ID -> RAW(I_REJ, R_INVALID_ID, m_d, m_s)
	:: a == A_DREP -> RAW(I_DREP, R_NONE, m_d, m_s)
	:: a == A_RTU && have && me == ACT -> RAW(I_RTU, R_NONE, cid[me], rid[me])
	:: else -> n = ST_SAME /* DROP (or a GO with no connection) */
	fi;
	/* the engine sends before it moves (REJ, timeout REJ need the IDs) */
	if
	:: o_t != 0 ->
		put(1 - me);
		if
		:: o_keep ->
			last_t[me] = o_t; last_r[me] = o_r; last_s[me] = o_s; last_d[me] = o_d
		:: else -> skip
		fi;
		if
		:: o_retx -> retries[me] = RETRIES
		:: else -> skip
		fi
	:: else -> skip
	fi;
	if
	:: a == A_GO -> set_state(me, n)
	:: else -> skip
	fi
}

#define RX(t) :: reorder > 0 && net[me]??[t, _, _, _, _] ->                  \
	reorder--; net[me]??t, m_r, m_g, m_s, m_d; m_t = t
#define PASSIVE(s) (me == PAS && st[me] == ST_##s)
#define ACTIVE(s) (me == ACT && st[me] == ST_##s)
#define USER(cond, cmd) :: (cond) -> i = cmd; have = true

proctype cm(byte me)
{
	byte m_t, m_r, m_g, m_s, m_d, a, n, k, i;
	byte o_t, o_r, o_s, o_d;
	bool o_keep, o_retx, have;

	if
	:: me == ACT -> atomic { i = I_CMD_CONNECT; input(me, i, false); i = 0; a = 0; n = 0;
		o_t = 0; o_r = 0; o_s = 0; o_d = 0; o_keep = false; o_retx = false }
	:: else -> skip
	fi;
end:
	do
	:: atomic {
		if
		/* the oldest message arrives, or (reordering) any type in flight */
		:: net[me]?m_t, m_r, m_g, m_s, m_d
		RX(I_REQ)
		RX(I_MRA_REQ)
		RX(I_MRA_REP)
		RX(I_REJ)
		RX(I_REP)
		RX(I_RTU)
		RX(I_DREQ)
		RX(I_DREP)
		/* the connection's timer: retransmission, or timeout / TimeWait over */
		:: RETRANSMITS && retries[me] > 0 ->
			retries[me]--;
			o_t = last_t[me]; o_r = last_r[me]; o_s = last_s[me]; o_d = last_d[me];
			put(1 - me);
			i = 0
		:: RETRANSMITS || st[me] == ST_TIMEWAIT -> i = I_TIMEOUT; have = true
		/* what the users do */
		USER(ACTIVE(REQ_SENT) && !c_urej[me], I_CMD_REJECT)
		USER(ACTIVE(MRA_REQ_RCVD) && !c_urej[me], I_CMD_REJECT)
		USER(ACTIVE(REP_RCVD) || ACTIVE(MRA_REP_SENT), I_CMD_RTU)
		USER((ACTIVE(REP_RCVD) || ACTIVE(MRA_REP_SENT)) && !c_urej[me], I_CMD_REJECT)
		USER((ACTIVE(REP_RCVD) || ACTIVE(MRA_REP_SENT)) && !c_umra[me], I_CMD_MRA)
		USER(PASSIVE(REQ_RCVD) || PASSIVE(MRA_REQ_SENT), I_CMD_ACCEPT)
		USER((PASSIVE(REQ_RCVD) || PASSIVE(MRA_REQ_SENT)) && !c_urej[me], I_CMD_REJECT)
		USER((PASSIVE(REQ_RCVD) || PASSIVE(MRA_REQ_SENT)) && !c_umra[me], I_CMD_MRA)
		/* first data on the QP before the RTU: communication established */
		USER((PASSIVE(REP_SENT) || PASSIVE(MRA_REP_RCVD)) && data_to == cid[me],
		     I_CMD_ESTABLISH)
		USER((PASSIVE(REP_SENT) || PASSIVE(MRA_REP_RCVD)) && !c_urej[me], I_CMD_REJECT)
		USER(st[me] == ST_ESTABLISHED, I_CMD_DREQ)
		USER(st[me] == ST_DREQ_RCVD, I_CMD_DREP)
		fi;
		if
		:: m_t != 0 ->
			/* its connection (cm_engine_recv, cm_on_req, conn_of) */
			i = m_t;
			if
			:: m_t == I_REQ -> have = (cid[me] != 0 && m_s == rid[me])
			:: m_t == I_REJ && m_d == 0 && m_r == R_TIMEOUT ->
				have = (me == PAS && cid[me] != 0 && m_s != 0 && m_s == rid[me])
			:: else ->
				have = (cid[me] != 0 && m_d == cid[me] &&
					(rid[me] == 0 || m_s == 0 || m_s == rid[me]))
			fi
		:: else -> skip
		fi;
		if
		:: i != 0 -> input(me, i, have)
		:: else -> skip
		fi;
		m_t = 0; m_r = 0; m_g = 0; m_s = 0; m_d = 0; a = 0; n = 0; have = false;
		i = 0; o_t = 0; o_r = 0; o_s = 0; o_d = 0; o_keep = false; o_retx = false
	   }
	od
}

init
{
	atomic {
		run cm(ACT);
		run cm(PAS)
	}
}

/* When nothing can move any more, both sides are done. */
active proctype observer()
{
	timeout ->
	assert(st[ACT] == ST_IDLE && st[PAS] == ST_IDLE);
	/* ESTABLISHED on one side: established on the other, or told. */
	assert(est[ACT] == 0 || (est[PAS] > 0 && est_with[PAS] == est_with[ACT]) || told[ACT]);
	assert(est[PAS] == 0 || (est[ACT] > 0 && est_with[ACT] == est_with[PAS]) || told[PAS])
}
