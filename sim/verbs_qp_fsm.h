/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * QP state machine of the soft verbs: which transitions exist and which
 * attribute masks each one requires and accepts, per transport, as IBA
 * vol 1 section 11.2.4.2 (table 93 onward) and real devices have them.
 * Pure logic: no I/O, no allocation, unit tested on its own.
 */
#ifndef SIM_VERBS_QP_FSM_H
#define SIM_VERBS_QP_FSM_H

#include <infiniband/verbs.h>

/*
 * Check a modify_qp request.  cur: the QP's state now; mask: the caller's
 * attribute mask; next: attr->qp_state when IBV_QP_STATE is in mask.
 * Returns 0 when the transition is allowed with exactly these attributes,
 * -EINVAL otherwise (unknown type or state, missing required attribute,
 * attribute not allowed on this transition).
 */
int verbs_qp_fsm_check(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		       int mask);

/* Required / optional masks of one transition (0 if invalid), for tests
 * and for error messages. */
int verbs_qp_fsm_required(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next);
int verbs_qp_fsm_optional(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next);
/* 1 if cur -> next is a transition at all for this type. */
int verbs_qp_fsm_valid(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next);

/*
 * Copy the attributes named in mask from src into the QP's stored
 * attributes dst (what ibv_query_qp returns), and set dst->qp_state.
 */
void verbs_qp_fsm_apply(struct ibv_qp_attr *dst, const struct ibv_qp_attr *src, int mask);

#endif
