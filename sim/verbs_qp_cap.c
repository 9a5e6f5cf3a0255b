/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * How big a send WQE's data area is, and what the QP reports for it.
 *
 * A real provider does not keep the inline size asked for: it lays out a
 * send WQE whose data area holds either the scatter/gather list or the
 * inline bytes, sizes that area for the larger of the two, and reports
 * what fits.  rxe (rxe_qp_init_req) takes the larger of max_send_sge
 * entries of 16 bytes and max_inline_data, and returns that area as
 * max_inline_data and area / 16 as max_send_sge; mlx5 similarly always
 * has room for inline data where its SGEs go.  So a QP created with
 * max_inline_data 0 and one SGE still takes a 16-byte IBV_SEND_INLINE
 * post, which programs written against those HCAs do.
 *
 * Here the WQE always has room for one SGE (a QP asked with
 * max_send_sge 0 gets 1, as before), so its inline area is at least 16
 * bytes; the limits checked before (VERBS_MAX_SGE entries,
 * VERBS_MAX_INLINE bytes, 16 x 16 = 256) keep the result within both.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include "sim/verbs_qp_cap.h"

void verbs_qp_cap_size(struct ibv_qp_cap *cap)
{
	uint32_t sges = cap->max_send_sge ? cap->max_send_sge : 1;
	uint32_t area = sges * VERBS_WQE_SGE_BYTES;

	if (cap->max_inline_data > area)
		area = cap->max_inline_data;
	cap->max_inline_data = area;
	cap->max_send_sge = area / VERBS_WQE_SGE_BYTES;
}
