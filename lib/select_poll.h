/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * select(2) answered by a poll(2)-like call: rselect (lib/rpoll.c, with
 * rpoll) and librspreload.so's select (lib/rspreload.c, with its poll).
 * Compiled into both libraries; hidden in each.
 */
#ifndef LIB_SELECT_POLL_H
#define LIB_SELECT_POLL_H

#include <poll.h>
#include <sys/select.h>

/*
 * The fds set in rd, wr and ex (below nfds) as pollfds given to poll_fn,
 * the sets rewritten with those found ready, and the count of set bits;
 * tv zeroed when none is, as Linux's select does.  -1 with errno (ENOMEM,
 * or poll_fn's) on failure, the sets untouched.
 */
int select_by_poll(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv,
		   int (*poll_fn)(struct pollfd *, nfds_t, int));

#endif
