/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rpoll and rselect over rsockets and ordinary fds alike.
 *
 * An rsocket is ready for reasons poll(2) cannot see (bytes already in its
 * receive queue, credits granted), and its fds wake on events that are no
 * readiness of their own (a credit update, a send completion).  So rpoll
 * first asks every rsocket (rs_poll_check, which also makes progress) and
 * polls the plain fds with no wait, again and again for RPOLL_SPIN_NS (or
 * until the timeout); only when nothing is ready does it arm
 * the rsockets' CQs, sleep in poll(2) on their completion and CM channel
 * fds plus the plain fds, and then look again.  Debian's rping and
 * ucmatose wait on their event channel fd with rpoll: a plain fd here.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "lib/cma.h"
#include "lib/rsocket.h"
#include "lib/select_poll.h"

/*
 * How long rpoll keeps looking before it sleeps, as rdma-core's rpoll
 * spins for its polling_time: an answer due within a few round trips is
 * taken without the two wakeups a sleep costs (the HCA's, then ours).
 */
#define RPOLL_SPIN_NS 50000

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One pass without sleeping: the number of fds with revents. */
static int check_all(struct pollfd *fds, nfds_t nfds, struct pollfd *tmp)
{
	nfds_t nplain = 0;
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		fds[i].revents = 0;
		if (fds[i].fd < 0)
			continue;
		if (rs_is_rsocket(fds[i].fd)) {
			fds[i].revents = rs_poll_check(fds[i].fd, fds[i].events);
		} else {
			tmp[nplain] = fds[i];
			tmp[nplain].revents = 0;
			nplain++;
		}
	}
	if (nplain && poll(tmp, nplain, 0) < 0)
		return -1;
	for (nfds_t i = 0, j = 0; i < nfds; i++) {
		if (fds[i].fd >= 0 && !rs_is_rsocket(fds[i].fd) && j < nplain &&
		    tmp[j].fd == fds[i].fd)
			fds[i].revents = tmp[j++].revents;
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

CMA_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	/*
	 * In nanoseconds: a deadline in whole milliseconds (now truncated,
	 * plus the timeout) ended anywhere in the first millisecond, so a 1 ms
	 * rpoll, udpong's resend timer, often gave up after microseconds.
	 */
	int64_t deadline = timeout > 0 ? mono_ns() + (int64_t)timeout * 1000000 : 0;
	struct pollfd *tmp, *wait;
	int *owner, ret;
	long long spin_ns, wake_ms;

	if (nfds && !fds)
		return cma_err(EFAULT);
	/* Sets without an rsocket are poll(2) itself. */
	{
		bool any = false;

		for (nfds_t i = 0; i < nfds && !any; i++)
			any = rs_is_rsocket(fds[i].fd);
		if (!any)
			return poll(fds, nfds, timeout);
	}
	tmp = malloc(sizeof(*tmp) * (nfds ? nfds : 1));
	wait = malloc(sizeof(*wait) * (3 * nfds + 1));
	owner = malloc(sizeof(*owner) * (3 * nfds + 1));
	if (!tmp || !wait || !owner) {
		free(tmp);
		free(wait);
		free(owner);
		return cma_err(ENOMEM);
	}
	/* rdma-core's tuning files, when present (lib/rsocket_conf.c). */
	spin_ns =
	    rs_conf()->polling_time_us >= 0 ? rs_conf()->polling_time_us * 1000 : RPOLL_SPIN_NS;
	wake_ms = rs_conf()->wake_up_interval_ms;
	for (;;) {
		int n = 0, to;
		bool ready = false;
		int64_t spin_end = mono_ns() + spin_ns;

		if (deadline && spin_end > deadline)
			spin_end = deadline;
		do
			ret = check_all(fds, nfds, tmp);
		while (ret == 0 && timeout != 0 && mono_ns() < spin_end);
		if (ret != 0 || timeout == 0)
			break;
		/* Arm, and collect the fds to sleep on. */
		for (nfds_t i = 0; i < nfds; i++) {
			if (fds[i].fd < 0)
				continue;
			if (rs_is_rsocket(fds[i].fd)) {
				int k = 0;
				short rev = rs_poll_arm(fds[i].fd, fds[i].events, wait + n, &k);

				if (rev) {
					ready = true;
					break;
				}
				for (int j = 0; j < k; j++)
					owner[n + j] = (int)i;
				n += k;
			} else {
				wait[n] = fds[i];
				wait[n].revents = 0;
				owner[n++] = -1;
			}
		}
		if (ready)
			continue;
		to = -1;
		if (timeout > 0) {
			int64_t left = deadline - mono_ns();

			if (left <= 0) {
				for (nfds_t i = 0; i < nfds; i++)
					fds[i].revents = 0;
				ret = 0;
				break;
			}
			/* Rounded up, as poll(2) waits at least its timeout. */
			to = (int)((left + 999999) / 1000000);
		}
		/* wake_up_interval: sleep in pieces that long, then look again. */
		if (wake_ms > 0 && (to < 0 || to > wake_ms))
			to = (int)wake_ms;
		ret = poll(wait, (nfds_t)n, to);
		if (ret < 0)
			break;
		for (int j = 0; j < n; j++)
			if (owner[j] >= 0 && wait[j].revents)
				rs_poll_drain(fds[owner[j]].fd);
	}
	free(tmp);
	free(wait);
	free(owner);
	return ret;
}

CMA_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		       struct timeval *timeout)
{
	if (nfds < 0 || nfds > FD_SETSIZE)
		return cma_err(EINVAL);
	return select_by_poll(nfds, readfds, writefds, exceptfds, timeout, rpoll);
}
