/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Where a MAD comes from or goes to: the fields of a umad address that the
 * protocol layers care about, independent of libibumad's struct so that
 * engines can be driven by fake transports in tests.
 */
#ifndef MADCM_MAD_ADDR_H
#define MADCM_MAD_ADDR_H

#include <stdbool.h>
#include <stdint.h>

struct mad_addr {
	uint16_t lid; /* remote LID (DLID on send, SLID on receive) */
	uint8_t sl;
	uint8_t path_bits;
	uint32_t qpn;  /* remote QP, 1 for GSI */
	uint32_t qkey; /* 0x80010000 for GSI */
	uint16_t pkey_index;
	bool grh_present;
	uint8_t gid[16]; /* remote GID when grh_present */
	uint32_t flow_label;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t gid_index; /* local source GID index for the GRH */
};

#define MAD_QP1_QKEY 0x80010000u

#endif
