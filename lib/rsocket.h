/*
 * lib/rsocket.c <-> lib/rpoll.c: what rpoll needs to know of an rsocket.
 *
 * An rsocket's descriptor is the fd of its own rdma_cm event channel, so
 * it never collides with another open file; rs_is_rsocket() tells the two
 * kinds apart.
 */
#ifndef MADCM_LIB_RSOCKET_H
#define MADCM_LIB_RSOCKET_H

#include <poll.h>
#include <stdbool.h>

bool rs_is_rsocket(int fd);
/*
 * Make progress on rsocket fd without blocking (CM events, completions,
 * credits) and return the poll events (of `events`, plus POLLHUP/POLLERR)
 * that hold now; POLLNVAL if fd is not an rsocket.
 */
short rs_poll_check(int fd, short events);
/*
 * Prepare to sleep on fd: request completion events, check once more.
 * Returns the events that hold (then do not sleep), else 0 and fills
 * out[0..*n) (*n <= 2) with the fds to wait on for POLLIN.
 */
short rs_poll_arm(int fd, short events, struct pollfd *out, int *n);
/* After a sleep: consume the completion events of fd's CQ. */
void rs_poll_drain(int fd);

#endif
