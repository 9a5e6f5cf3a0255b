/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>

#include "bench_cm.h"
#include "bench_common.h"

struct rdma_event_channel *bench_chan_open(bool blocking)
{
	struct rdma_event_channel *chan = rdma_create_event_channel();
	int fl;

	if (!chan)
		bench_die("rdma_create_event_channel", errno);
	if (blocking)
		return chan;
	fl = fcntl(chan->fd, F_GETFL);
	if (fl < 0 || fcntl(chan->fd, F_SETFL, fl | O_NONBLOCK))
		bench_die("fcntl O_NONBLOCK", errno);
	return chan;
}

int bench_next_event(struct rdma_event_channel *chan, bool blocking, struct rdma_cm_event **ev,
		     int timeout_ms)
{
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	if (blocking) {
		if (!rdma_get_cm_event(chan, ev))
			return 0;
		return errno == EINTR ? -ETIMEDOUT : -errno;
	}
	for (;;) {
		struct pollfd pfd = {.fd = chan->fd, .events = POLLIN};
		uint64_t now;
		int rc;

		if (!rdma_get_cm_event(chan, ev))
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		now = bench_now_ns();
		if (now >= end)
			return -ETIMEDOUT;
		rc = poll(&pfd, 1, (int)((end - now + 999999) / 1000000));
		if (rc < 0 && errno != EINTR)
			return -errno;
	}
}
