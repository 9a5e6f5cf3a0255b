/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Make a CM stat snapshot the way a real process does (MADCM_STAT_FILE in
 * the environment), for tests/integration/cm_stat_cli.sh: two engines back
 * to back in-process, three connections, one of them disconnected (left in
 * TimeWait) and one whose first REQ was lost.  The file ends up holding
 * the passive engine's view (destroyed last).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cm/cm_wire.h"
#include "tests/unit/cm_harness.h"

int main(int argc, char **argv)
{
	static struct cmh h;
	uint32_t a;

	if (argc != 2) {
		fprintf(stderr, "usage: cm_stat_gen FILE\n");
		return 2;
	}
	setenv("MADCM_STAT_FILE", argv[1], 1);
	cmh_init(&h);
	cmh_connect(&h, 0x101);
	a = cmh_connect(&h, 0x102);
	h.drop[0][CM_ATTR_REQ - 0x10] = 1;
	cmh_connect(&h, 0x103);
	cmh_advance(&h, 5000000000ull);
	cm_engine_disconnect(h.n[0].e, a, NULL, 0);
	cmh_deliver(&h);
	cmh_fini(&h);
	return 0;
}
