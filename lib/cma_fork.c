/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * fork().  A child has a copy of the library's memory but none of its
 * threads (the progress loop, the device event threads), and it shares
 * with its parent every file the library opened: the umad fds that carry
 * the port's CM agent, madcmd's sessions, the channels' eventfds.  A
 * child that wrote to any of them would speak in its parent's name (a
 * DREQ, a REJ, a command on the parent's session), and one that read
 * from them would take its parent's MADs and events.  So:
 *
 *  - The child's handler (below; the child has one thread then) bumps
 *    cma.gen and forgets the parent's state without touching it: the
 *    ports lose their runtimes, connections and listeners, the id table,
 *    the port-space table and the memberships are emptied, and the child
 *    closes its copies of madcmd's sockets (the CM, MAD and HOST
 *    sessions), so that the daemon still sees the parent's sessions end
 *    when the parent closes them or exits.  Nothing is freed: the
 *    parent's structures may be mid-change in another thread's hands.
 *  - Ids and channels made before the fork are the parent's: every call
 *    on them fails with EBADF, as one on a closed fd would
 *    (cma_id_inherited).  The child's exit does nothing for them
 *    (cma_exit.c works on the child's own state), and nor does it for
 *    the parent's write queues (mad/umad_real.c).
 *  - The child's first call that needs the CM makes a loop of its own
 *    and, with madcmd, sessions of its own (cma_fork_reinit): it
 *    connects, listens and joins as any other process of the host.
 *    Without madcmd a port whose CM the parent had opened stays the
 *    parent's (the MAD layer gives the CM class to one agent): the
 *    child's calls that need it fail at once with EBUSY, said once on
 *    stderr.  The devices stay the parent's contexts (verbs has no
 *    fork rule of its own here: see ibv_fork_init(3)).
 *
 * The prepare handler holds cma.lock across fork(), so the child's copy
 * of lib/'s structures is never caught half changed.  getpid() is not
 * cached by glibc (2.25 on), hence a generation, not a pid, at each call.
 */
#include "config.h"

#include <pthread.h>

#include "cm/runtime.h"
#include "lib/cma.h"
#include "rtproto/rt_client.h"

static void fork_prepare(void)
{
	cma_open_lock_take(); /* before cma.lock, as cma_port_runtime takes them */
	cma_lock();
}

static void fork_parent(void)
{
	cma_unlock();
	cma_open_lock_give();
}

static void forget_port(struct cma_port *p)
{
	/* In-process, the CM agent on the umad fd stays the parent's. */
	p->fork_busy = p->fork_busy || (p->rt && !cma.daemon);
	if (p->rt)
		cm_runtime_forked(p->rt);
	p->rt = NULL;
	p->rt_lost = false;
	p->rt_err = 0;
	p->lsids = NULL;
	p->bcast_valid = false;
	p->published = 0;
	p->sr_busy = 0; /* the parent's ServiceRecords stay the parent's */
	p->sr_at_sa = false;
	p->sr_err = 0;
	cma_conn_free_all(p); /* the child's copy of the parent's table */
	p->notices = false;
}

static void fork_child(void)
{
	cma.gen++;
	if (cma.loop) {
		for (int d = 0; d < cma.ndevs; d++)
			for (int i = 0; i < cma.devs[d].nports; i++)
				forget_port(&cma.devs[d].ports[i]);
		cma_ids_forget();
		cma_ports_forget();
		cma_mc_forget();
		cma_addr_forget();
		cma_publish_forget();
		if (cma.daemon)
			madcmd_mad_sessions_forked();
		cma_daemon_forget();
		cma.loop = NULL; /* its thread is the parent's */
		cma.forked = true;
		cma.fork_once = (pthread_once_t)PTHREAD_ONCE_INIT;
	}
	cma_unlock();
	cma_open_lock_give();
}

static void arm(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void cma_fork_arm(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, arm);
}
