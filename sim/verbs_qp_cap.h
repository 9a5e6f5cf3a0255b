/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The send queue's capabilities as a soft HCA sizes them
 * (sim/verbs_qp_cap.c).
 */
#ifndef SIM_VERBS_QP_CAP_H
#define SIM_VERBS_QP_CAP_H

#include <infiniband/verbs.h>

/* Bytes one scatter/gather entry takes in a send WQE (struct ibv_sge). */
#define VERBS_WQE_SGE_BYTES 16u

void verbs_qp_cap_size(struct ibv_qp_cap *cap);

#endif
