/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The SA's GID notices: each port whose CM this process opens subscribes
 * (InformInfo, sa/client.h) to the generic traps 64 "GID in service" and
 * 65 "GID out of service" at the SA, and a Report naming the GID of one
 * of this process's ports moves that port's service state as the verbs
 * events do (cma_port_service): RDMA_CM_EVENT_ADDR_CHANGE to the ids
 * attached to it when the state changes, nothing when the verbs event
 * (or an earlier notice) already said it.  A notice reaches the process
 * through any of its subscribed ports, so a port that went out of
 * service is heard of through another that did not.  Notices about other
 * GIDs are counted, nothing more: the kernel's rdma_cm does not act on
 * remote GIDs either.
 *
 * When: the subscription is made when the port's CM is opened (the first
 * listen, resolve, connect or join on it), not at bind: without madcmd
 * opening a port's CM takes its CM class from other processes, which a
 * bind must not.  Again when the port comes back or the SM asks clients
 * to register again (cma_async.c), since the SA forgets the
 * subscriptions of a port it drops, and a new SM knows none.  And again
 * after a failure (ENOMEM, no answer, a refusal), at a later use of the
 * port (cma_notice_retry): the port stays usable, as the kernel's does,
 * and should not stay deaf to the notices for the life of the process.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "cm/runtime.h"
#include "lib/cma.h"
#include "mad/timer.h"
#include "sa/client.h"

static struct cma_notice_stats nst; /* under cma.lock */

/* A subscription failed: counted, and made again later; under cma.lock. */
static void sub_failed(struct cma_port *p)
{
	nst.sub_errors++;
	p->notice_failed = true;
	p->notice_failed_ns = mad_clock_monotonic_ns(NULL);
}

static void on_subscribed(void *arg, int status)
{
	struct cma_port *p = arg;

	cma_lock();
	if (status)
		sub_failed(p);
	else
		nst.subscribed++;
	cma_unlock();
}

/* A Report from the SA, on the loop thread. */
static void on_notice(void *arg, const struct sa_notice *n)
{
	struct cma_port *p;
	bool up;

	mad_loop_assert_owned(cma.loop);
	cma_assert_unlocked();
	(void)arg;
	cma_lock();
	if (!n->has_gid || (n->trap_number != SA_TRAP_GID_IN_SERVICE &&
			    n->trap_number != SA_TRAP_GID_OUT_OF_SERVICE)) {
		nst.ignored++;
		goto out;
	}
	p = cma_port_by_gid(n->gid);
	if (!p) {
		nst.other++;
		goto out;
	}
	nst.own++;
	up = n->trap_number == SA_TRAP_GID_IN_SERVICE;
	if (cma_port_service(p, up))
		nst.own_changes++;
out:
	cma_unlock();
}

/* The Report handler (once) and the Sets of InformInfo. */
static void subscribe(struct cma_port *p, struct cm_runtime *rt)
{
	struct sa_client *sa = cm_runtime_sa(rt);
	bool handler;
	int rc;

	if (!sa)
		return; /* RoCE: no SA */
	cma_lock();
	handler = p->notice_handler;
	cma_unlock();
	if (!handler) {
		rc = sa_notice_handler(sa, on_notice, p);
		cma_lock();
		if (rc == -ENOMEM) {
			sub_failed(p);
		} else if (rc) {
			/* The port's Report method is another agent's (another process). */
			nst.sub_errors++;
			p->notices = false; /* nothing to renew */
		}
		p->notice_handler = !rc;
		cma_unlock();
		if (rc)
			return;
	}
	if (sa_notice_subscribe_async(sa, SA_TRAP_GID_IN_SERVICE, SA_TRAP_GID_OUT_OF_SERVICE, true,
				      on_subscribed, p)) {
		cma_lock();
		sub_failed(p);
		cma_unlock();
	}
}

void cma_notice_port(struct cma_port *p, bool again)
{
	struct cm_runtime *rt;

	cma_assert_unlocked();
	cma_lock();
	rt = p->rt;
	/* The first time once; again only where the first one was made. */
	if (!rt || p->notices != again) {
		cma_unlock();
		return;
	}
	p->notices = true;
	p->notice_failed = false;
	if (!again)
		p->notice_handler = false; /* a new runtime's SA client */
	cma_unlock();
	subscribe(p, rt);
}

void cma_notice_retry(struct cma_port *p)
{
	uint64_t now = mad_clock_monotonic_ns(NULL);
	struct cm_runtime *rt;

	cma_lock();
	rt = p->rt;
	if (!rt || !p->notices || !p->notice_failed ||
	    now - p->notice_failed_ns < CMA_RT_RETRY_MS * 1000000ull) {
		cma_unlock();
		return;
	}
	p->notice_failed = false;
	cma_unlock();
	subscribe(p, rt);
}

void cma_notice_stats(struct cma_notice_stats *out)
{
	cma_lock();
	*out = nst;
	cma_unlock();
}
