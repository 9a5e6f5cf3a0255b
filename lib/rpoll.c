/*
 * rpoll and rselect.  librdmacm's rpoll waits on rsockets and ordinary fds
 * alike; madcm has no rsockets yet (they come with the rsockets work), so
 * every fd handed in is an ordinary fd and rpoll is poll(2) on it, as
 * librdmacm's own rpoll is for a set without rsockets.  Debian's rping and
 * ucmatose need it: they wait on their channel fd with rpoll.
 */
#include "config.h"

#include <poll.h>
#include <sys/select.h>

#include "lib/cma.h"

CMA_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}
