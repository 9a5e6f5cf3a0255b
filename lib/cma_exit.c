/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * What the process's exit does to its ids, as with the kernel's rdma_cm.
 * When a process ends, the kernel closes its rdma_cm file and ucma
 * destroys every id still open: the CM sends a DREQ for each established
 * connection and a REJ for each one being set up (cm_destroy_id), so the
 * peers learn at once, and the id's multicast joins are left at the SA
 * (cma_leave_mc_groups).  An in-process CM ends with the process, so a
 * program that returns from main (or calls exit(3)) with ids it never
 * destroyed would leave its peers to find out from a keepalive or a
 * timeout, and its memberships at the SA.  This destructor releases the
 * connections and sends the leaves, without waiting for the SA's answers,
 * and deletes the ServiceRecords of the listeners' addresses, waiting for
 * the SA's answers at most CMA_EXIT_SR_WAIT_MS.
 * The MADs leave before the umad ports close: the write queues are
 * flushed after it, by libmadcm's own destructor (mad/umad_real.c).
 *
 * Not done: for a fork()ed child's copy of its parent's state (the ids,
 * memberships and records are the parent's: a child's own, made after it
 * called the library again, are its own, cma_fork.c), with madcmd
 * (the daemon does this when a client's session ends), under the unit
 * tests' fake ports, or when another thread holds the library's lock for
 * longer than a moment (an exit must not hang).  A process killed by a
 * signal or ending in _exit(2) sends nothing.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cm/runtime.h"
#include "lib/cma.h"

/* How long the exit waits for the SA to answer the ServiceRecord Deletes. */
#define CMA_EXIT_SR_WAIT_MS 2000

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
		if (cma_trylock())
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

__attribute__((destructor)) static void cma_exit_release(void)
{
	struct cma_conn_ref *h;
	struct cma_mc_leave *l;
	size_t n, nl;

	if (!owner || owner != getpid() || cma.init_err || cma.daemon || cma.umad_ops)
		return;
	if (!lock_briefly())
		return;
	n = cma_conn_take_all(&h);
	nl = cma_mc_exit_leaves(&l);
	cma_unlock();
	for (size_t i = 0; i < n; i++)
		cm_runtime_release(h[i].rt, h[i].conn);
	free(h);
	for (size_t i = 0; i < nl; i++)
		sa_mcmember_leave_now(l[i].sa, &l[i].rec, CMA_MC_LEAVE_MASK);
	free(l);
	/*
	 * The ServiceRecords of the ports' addresses: those of listeners
	 * still open, and the Deletes that destroyed listeners left to the
	 * background (rdma_destroy_id does not wait for them).  These are
	 * waited for, briefly: the SA keeps a record until it is deleted.
	 */
	if (lock_briefly()) {
		cma_addr_unpublish_all(CMA_EXIT_SR_WAIT_MS);
		cma_unlock();
	}
}
