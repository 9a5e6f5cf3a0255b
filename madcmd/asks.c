/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * A session's asks waiting for the SA (PATH_QUERY, SERVICE_QUERY): each
 * on a list of its session, so that a session that closes first leaves
 * them orphaned (s NULL) and their answers, which still fill the cache,
 * go nowhere.
 */
#include "config.h"

#include <stdlib.h>

#include "madcmd/madcmd_int.h"

struct madcmd_ask *madcmd_ask_new(struct madcmd_session *s, struct madcmd_ask **list, uint32_t seq)
{
	struct madcmd_ask *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->s = s;
	a->seq = seq;
	a->next = *list;
	if (a->next)
		a->next->pprev = &a->next;
	a->pprev = list;
	*list = a;
	return a;
}

static void ask_unlink(struct madcmd_ask *a)
{
	if (!a->pprev)
		return;
	*a->pprev = a->next;
	if (a->next)
		a->next->pprev = a->pprev;
	a->pprev = NULL;
	a->next = NULL;
}

void madcmd_ask_free(struct madcmd_ask *a)
{
	ask_unlink(a);
	free(a);
}

void madcmd_asks_orphan(struct madcmd_ask **list)
{
	while (*list) {
		struct madcmd_ask *a = *list;

		ask_unlink(a);
		a->s = NULL;
	}
}
