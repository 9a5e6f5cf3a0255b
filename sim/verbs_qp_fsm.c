/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The transition table: one row per (current, next) pair, listing per
 * transport the attributes a transition must carry and those it may carry.
 * Everything else is refused with EINVAL, which is what an HCA driver does
 * and what catches a connection manager that forgets an attribute.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <errno.h>
#include <string.h>

#include "sim/verbs_qp_fsm.h"

/* T_XI: XRC_SEND (the kernel's XRC_INI), T_XT: XRC_RECV (XRC_TGT). */
enum { T_RC, T_UC, T_UD, T_XI, T_XT, T_MAX };

struct fsm_edge {
	unsigned char valid;
	int req[T_MAX];
	int opt[T_MAX];
};

#define NSTATE (IBV_QPS_ERR + 1)

/* Attribute groups that recur in the table below. */
#define PRIMARY_INIT_RC (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define PRIMARY_INIT_UD (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)
#define RTR_REQ_UC (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define RTR_REQ_RC (RTR_REQ_UC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RTR_OPT_RC (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX)
#define RTS_REQ_RC                                                                                 \
	(IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |                    \
	 IBV_QP_MAX_QP_RD_ATOMIC)
#define TO_RTS_OPT_UD (IBV_QP_CUR_STATE | IBV_QP_QKEY)
#define TO_RTS_OPT_UC                                                                              \
	(IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE)
#define TO_RTS_OPT_RC (TO_RTS_OPT_UC | IBV_QP_MIN_RNR_TIMER)
/* XRC as the kernel's qp_state_table has it: the initiator is RC without a
 * responder, the target RC without a requester (no retries, no RD_ATOMIC). */
#define RTS_REQ_XT (IBV_QP_TIMEOUT | IBV_QP_SQ_PSN)
#define SQD_OPT_XI                                                                                 \
	(IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |          \
	 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |     \
	 IBV_QP_PATH_MIG_STATE)
#define SQD_OPT_XT                                                                                 \
	(IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH |  \
	 IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE)

/* clang-format off */
static const struct fsm_edge fsm[NSTATE][NSTATE] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = 1 },
		[IBV_QPS_INIT] = {
			.valid = 1,
			.req = { [T_RC] = PRIMARY_INIT_RC, [T_UC] = PRIMARY_INIT_RC,
				 [T_UD] = PRIMARY_INIT_UD, [T_XI] = PRIMARY_INIT_RC,
				 [T_XT] = PRIMARY_INIT_RC },
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = 1 },
		[IBV_QPS_ERR] = { .valid = 1 },
		[IBV_QPS_INIT] = {
			.valid = 1,
			.opt = { [T_RC] = PRIMARY_INIT_RC, [T_UC] = PRIMARY_INIT_RC,
				 [T_UD] = PRIMARY_INIT_UD, [T_XI] = PRIMARY_INIT_RC,
				 [T_XT] = PRIMARY_INIT_RC },
		},
		[IBV_QPS_RTR] = {
			.valid = 1,
			.req = { [T_RC] = RTR_REQ_RC, [T_UC] = RTR_REQ_UC,
				 [T_XI] = RTR_REQ_UC, [T_XT] = RTR_REQ_RC },
			.opt = {
				[T_RC] = RTR_OPT_RC, [T_UC] = RTR_OPT_RC,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_XI] = RTR_OPT_RC, [T_XT] = RTR_OPT_RC,
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = 1 },
		[IBV_QPS_ERR] = { .valid = 1 },
		[IBV_QPS_RTS] = {
			.valid = 1,
			.req = { [T_RC] = RTS_REQ_RC, [T_UC] = IBV_QP_SQ_PSN,
				 [T_UD] = IBV_QP_SQ_PSN, [T_XI] = RTS_REQ_RC,
				 [T_XT] = RTS_REQ_XT },
			.opt = { [T_RC] = TO_RTS_OPT_RC, [T_UC] = TO_RTS_OPT_UC,
				 [T_UD] = TO_RTS_OPT_UD, [T_XI] = TO_RTS_OPT_UC,
				 [T_XT] = TO_RTS_OPT_RC },
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = 1 },
		[IBV_QPS_ERR] = { .valid = 1 },
		[IBV_QPS_RTS] = {
			.valid = 1,
			.opt = { [T_RC] = TO_RTS_OPT_RC, [T_UC] = TO_RTS_OPT_UC,
				 [T_UD] = TO_RTS_OPT_UD, [T_XI] = TO_RTS_OPT_UC,
				 [T_XT] = TO_RTS_OPT_RC },
		},
		[IBV_QPS_SQD] = {
			.valid = 1,
			.opt = { [T_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [T_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [T_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [T_XI] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [T_XT] = IBV_QP_EN_SQD_ASYNC_NOTIFY },
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = 1 },
		[IBV_QPS_ERR] = { .valid = 1 },
		[IBV_QPS_RTS] = {
			.valid = 1,
			.opt = { [T_RC] = TO_RTS_OPT_RC, [T_UC] = TO_RTS_OPT_UC,
				 [T_UD] = TO_RTS_OPT_UD, [T_XI] = TO_RTS_OPT_UC,
				 [T_XT] = TO_RTS_OPT_RC },
		},
		[IBV_QPS_SQD] = {
			.valid = 1,
			.opt = {
				[T_RC] = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT |
					 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC |
					 IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER |
					 IBV_QP_PATH_MIG_STATE,
				[T_UC] = IBV_QP_AV | IBV_QP_ALT_PATH |
					 IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
					 IBV_QP_PATH_MIG_STATE,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_XI] = SQD_OPT_XI, [T_XT] = SQD_OPT_XT,
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = 1 },
		[IBV_QPS_ERR] = { .valid = 1 },
		/* SQE exists only for unreliable transports. */
		[IBV_QPS_RTS] = {
			.valid = 1,
			.opt = { [T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				 [T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY },
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = 1 },
		[IBV_QPS_ERR] = { .valid = 1 },
	},
};
/* clang-format on */

static int fsm_type(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return T_RC;
	case IBV_QPT_UC:
		return T_UC;
	case IBV_QPT_UD:
		return T_UD;
	case IBV_QPT_XRC_SEND:
		return T_XI;
	case IBV_QPT_XRC_RECV:
		return T_XT;
	default:
		return -1;
	}
}

static const struct fsm_edge *fsm_edge(enum ibv_qp_type type, enum ibv_qp_state cur,
				       enum ibv_qp_state next, int *t)
{
	*t = fsm_type(type);
	if (*t < 0 || (unsigned)cur >= NSTATE || (unsigned)next >= NSTATE)
		return NULL;
	if (!fsm[cur][next].valid)
		return NULL;
	/* RC never enters SQE, so it has no way back from it either. */
	if (cur == IBV_QPS_SQE && next == IBV_QPS_RTS && (*t == T_RC || *t == T_XI || *t == T_XT))
		return NULL;
	return &fsm[cur][next];
}

int verbs_qp_fsm_valid(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	int t;

	return fsm_edge(type, cur, next, &t) != NULL;
}

int verbs_qp_fsm_required(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	int t;
	const struct fsm_edge *e = fsm_edge(type, cur, next, &t);

	return e ? e->req[t] : 0;
}

int verbs_qp_fsm_optional(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	int t;
	const struct fsm_edge *e = fsm_edge(type, cur, next, &t);

	return e ? e->opt[t] : 0;
}

int verbs_qp_fsm_check(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		       int mask)
{
	const struct fsm_edge *e;
	int t;

	if (!(mask & IBV_QP_STATE))
		next = cur;
	/* CUR_STATE is only meaningful when leaving RTR, RTS, SQD or SQE. */
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return -EINVAL;
	e = fsm_edge(type, cur, next, &t);
	if (!e)
		return -EINVAL;
	if ((mask & e->req[t]) != e->req[t])
		return -EINVAL;
	if (mask & ~(e->req[t] | e->opt[t] | IBV_QP_STATE))
		return -EINVAL;
	return 0;
}

void verbs_qp_fsm_apply(struct ibv_qp_attr *dst, const struct ibv_qp_attr *src, int mask)
{
	if (mask & IBV_QP_STATE)
		dst->qp_state = src->qp_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		dst->en_sqd_async_notify = src->en_sqd_async_notify;
	if (mask & IBV_QP_ACCESS_FLAGS)
		dst->qp_access_flags = src->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		dst->pkey_index = src->pkey_index;
	if (mask & IBV_QP_PORT)
		dst->port_num = src->port_num;
	if (mask & IBV_QP_QKEY)
		dst->qkey = src->qkey;
	if (mask & IBV_QP_AV)
		dst->ah_attr = src->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		dst->path_mtu = src->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		dst->timeout = src->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		dst->retry_cnt = src->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		dst->rnr_retry = src->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		dst->rq_psn = src->rq_psn & 0xffffff;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		dst->max_rd_atomic = src->max_rd_atomic;
	if (mask & IBV_QP_ALT_PATH) {
		dst->alt_ah_attr = src->alt_ah_attr;
		dst->alt_pkey_index = src->alt_pkey_index;
		dst->alt_port_num = src->alt_port_num;
		dst->alt_timeout = src->alt_timeout;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		dst->min_rnr_timer = src->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		dst->sq_psn = src->sq_psn & 0xffffff;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		dst->path_mig_state = src->path_mig_state;
	if (mask & IBV_QP_DEST_QPN)
		dst->dest_qp_num = src->dest_qp_num & 0xffffff;
}
