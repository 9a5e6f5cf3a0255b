/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "lib/select_poll.h"

int select_by_poll(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv,
		   int (*poll_fn)(struct pollfd *, nfds_t, int))
{
	struct pollfd *p;
	int n = 0, r, to;

	p = calloc(nfds > 0 ? (size_t)nfds : 1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (short)((rd && FD_ISSET(fd, rd) ? POLLIN : 0) |
				   (wr && FD_ISSET(fd, wr) ? POLLOUT : 0) |
				   (ex && FD_ISSET(fd, ex) ? POLLPRI : 0));

		if (ev)
			p[n++] = (struct pollfd){.fd = fd, .events = ev};
	}
	/* Rounded up: select(2) waits at least its timeout. */
	to = tv ? (int)(tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000) : -1;
	r = poll_fn(p, (nfds_t)n, to);
	if (r < 0) {
		free(p);
		return -1;
	}
	if (rd)
		FD_ZERO(rd);
	if (wr)
		FD_ZERO(wr);
	if (ex)
		FD_ZERO(ex);
	r = 0;
	for (int i = 0; i < n; i++) {
		short v = p[i].revents;

		if (rd && (p[i].events & POLLIN) && (v & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(p[i].fd, rd);
			r++;
		}
		if (wr && (p[i].events & POLLOUT) && (v & (POLLOUT | POLLERR))) {
			FD_SET(p[i].fd, wr);
			r++;
		}
		if (ex && (p[i].events & POLLPRI) && (v & POLLPRI)) {
			FD_SET(p[i].fd, ex);
			r++;
		}
	}
	free(p);
	if (tv && !r)
		tv->tv_sec = tv->tv_usec = 0;
	return r;
}
