/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Lock rules asserted in debug builds: mad/lockdep.h. */
#include "config.h"

#include "mad/lockdep.h"

#ifdef MADCM_DEBUG
#include <stdio.h>
#include <stdlib.h>

__thread unsigned mad_lockdep_lib_held;

void mad_lockdep_fail(const char *rule, const char *func)
{
	fprintf(stderr, "madcm: lock rule broken in %s: %s\n", func, rule);
	abort();
}
#endif
