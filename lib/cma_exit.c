/*
 * What the process's exit does to its connections, as with the kernel's
 * rdma_cm: when a process ends, the kernel closes its rdma_cm file and
 * ucma destroys every id still open, so the CM sends a DREQ for each
 * established connection and a REJ for each one being set up
 * (cm_destroy_id), and the peers learn at once.  An in-process CM ends
 * with the process, so a program that returns from main (or calls
 * exit(3)) with connections it never destroyed would leave its peers to
 * find out from a keepalive or a timeout.  This destructor releases them
 * first; the MADs leave before the umad ports close (the write queues are
 * flushed after it, by libmadcm's own destructor, mad/umad_real.c).
 *
 * Not done: in a forked child (the connections are the parent's), with
 * madcmd (the daemon releases a client's connections when its session
 * ends), under the unit tests' fake ports, or when another thread holds
 * the library's lock for longer than a moment (an exit must not hang).
 * A process killed by a signal or ending in _exit(2) sends nothing.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cm/runtime.h"
#include "lib/cma.h"

/* Set by cma_exit_arm() (cma_init): the process whose connections these are. */
static pid_t owner;

void cma_exit_arm(void)
{
	owner = getpid();
}

/* cma.lock, waiting at most about 100 ms for it. */
static bool lock_briefly(void)
{
	const struct timespec ms = {0, 1000000};

	for (int i = 0; i < 100; i++) {
		if (!pthread_mutex_trylock(&cma.lock))
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

__attribute__((destructor)) static void cma_exit_release(void)
{
	struct cma_conn_ref *h;
	size_t n;

	if (!owner || owner != getpid() || cma.init_err || cma.daemon || cma.umad_ops)
		return;
	if (!lock_briefly())
		return;
	n = cma_conn_take_all(&h);
	pthread_mutex_unlock(&cma.lock);
	for (size_t i = 0; i < n; i++)
		cm_runtime_release(h[i].rt, h[i].conn);
	free(h);
}
