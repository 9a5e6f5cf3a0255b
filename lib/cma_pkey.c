/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * P_Key -> the index of its partition in a port's P_Key table, as the
 * kernel's ib_find_cached_pkey finds it for cma and cm: the partition
 * (low 15 bits) must match; a full-member entry is taken before a
 * limited one, so a P_Key asked for with or without the membership bit
 * finds the port's own membership.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>

#include <infiniband/verbs.h>

#include "lib/cma.h"

#define PKEY_TABLE_MAX 128 /* entries looked at: more than any HCA has */

int cma_pkey_index(const struct cma_port *p, uint16_t pkey, uint16_t *index)
{
	int partial = -1;
	__be16 v;

	if (!p || !p->dev || !p->dev->verbs)
		return -ENODEV;
	if (!(pkey & 0x7fff))
		return -EINVAL;
	for (int i = 0; i < PKEY_TABLE_MAX; i++) {
		uint16_t e;

		if (ibv_query_pkey(p->dev->verbs, p->port_num, i, &v)) {
			/* A device without a readable table holds the default at 0. */
			if (i == 0 && (pkey & 0x7fff) == 0x7fff)
				partial = 0;
			break;
		}
		e = ntohs(v);
		if ((e & 0x7fff) != (pkey & 0x7fff))
			continue;
		if (e & 0x8000) {
			*index = (uint16_t)i;
			return 0;
		}
		if (partial < 0)
			partial = i;
	}
	if (partial < 0)
		return -ENOENT; /* as ib_find_cached_pkey */
	*index = (uint16_t)partial;
	return 0;
}

uint16_t cma_id_pkey(const struct cma_id *id)
{
	uint16_t pkey = ntohs(id->id.route.addr.addr.ibaddr.pkey);

	return pkey & 0x7fff ? pkey : 0xffff;
}
