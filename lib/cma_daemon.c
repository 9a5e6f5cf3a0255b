/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Who owns the CM: madcmd or this process.  At the first call the library
 * looks for the daemon's socket ($MADCM_DAEMON, else /run/madcm/
 * madcmd.sock); when a daemon answers there, every port's CM runtime is
 * the daemon's (cm_runtime_params.daemon) and the port space is the
 * host's (the HOST session), so many programs share a port as they share
 * the kernel's rdma_cm.  Otherwise the process opens the CM itself, one
 * program per port.
 *
 * When the daemon goes away, every id on a port it served gets
 * RDMA_CM_EVENT_DEVICE_REMOVAL (what the kernel reports to the ids of a
 * device that left) and later calls there fail with ENOTCONN.  Once the
 * program has destroyed those ids (as it must after DEVICE_REMOVAL), its
 * new ids get a new session with the daemon at the same path
 * (cma_port_runtime, madcmd_host_port): a restarted madcmd serves them,
 * as the kernel's rdma_cm serves new ids on a device added again.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>

#include <infiniband/ib.h>

#include "lib/cma.h"
#include "rtproto/rt_client.h"

static struct madcmd_host host = {.fd = -1};

/*
 * Runtimes whose madcmd went away, taken off their ports: kept, never
 * closed, until the process exits.  A runtime pointer is read under
 * cma.lock and used after it is dropped by many paths (an unlisten, a
 * connect or accept, a multicast leave or rejoin, the SA's notices and
 * ServiceRecords, the exit's release); none could know when the last of
 * them is done with a lost one, and closing it under any of them was a
 * use after free.  A daemon going away is rare, and what a lost runtime
 * keeps is small (its memory, its socket to a daemon that is gone), so it
 * stays until exit (each is reachable here).
 */
static struct cm_runtime **kept;
static unsigned nkept, kept_cap;

void cma_daemon_choose(void)
{
	const char *path = madcmd_socket_path();
	struct stat st;
	int rc;

	if (cma.umad_ops)
		return; /* unit tests run on fake ports */
	if (stat(path, &st) || !S_ISSOCK(st.st_mode))
		return;
	rc = madcmd_host_open(&host, path);
	if (rc == MADCMD_ERR_STALLED) {
		/*
		 * A daemon took the connection but does not answer (stopped,
		 * livelocked): it holds the ports' CM, which cannot run here
		 * too.  Calls that need it fail ETIMEDOUT until it answers
		 * (each opens its session again).
		 */
		fprintf(stderr, "librdmacm (madcm): madcmd at %s does not answer\n", path);
	} else if (rc) {
		fprintf(stderr,
			"librdmacm (madcm): madcmd at %s: %s; the CM runs in this process\n", path,
			strerror(-rc));
		return;
	}
	cma.daemon = strdup(path);
	if (!cma.daemon)
		madcmd_host_close(&host);
}

void cma_daemon_forget(void)
{
	/*
	 * A fork()ed child: the HOST session is the parent's.  Only this
	 * copy of its socket is closed (cma_fork.c); the daemon sees the
	 * session end when the parent's goes.
	 */
	if (host.fd >= 0)
		close(host.fd);
	host = (struct madcmd_host){.fd = -1};
	free(cma.daemon); /* the child's copy; init_once chooses again */
	cma.daemon = NULL;
	/* The lost runtimes' sockets too: their sessions were the parent's. */
	for (unsigned i = 0; i < nkept; i++)
		cm_runtime_forked(kept[i]);
	nkept = 0;
}

/* The binding of `id` as the daemon sees it. */
static void binding_of(struct cma_id *id, struct madcmd_port *m)
{
	const struct sockaddr *sa = (const struct sockaddr *)&id->id.route.addr.src_addr;

	memset(m, 0, sizeof(*m));
	m->token = id->cookie;
	m->ps = id->id.ps;
	m->port = cma_addr_port(sa);
	m->family = sa->sa_family;
	switch (sa->sa_family) {
	case AF_INET:
		memcpy(m->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		break;
	case AF_INET6:
		memcpy(m->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		break;
	case AF_IB:
		memcpy(m->addr, &((const struct sockaddr_ib *)sa)->sib_addr, 16);
		break;
	default:
		break;
	}
	m->any = cma_addr_any(sa);
	m->reuseaddr = id->reuseaddr;
	m->afonly = id->afonly;
}

int cma_daemon_bind(struct cma_id *id, uint16_t *port)
{
	struct madcmd_port m;

	binding_of(id, &m);
	return madcmd_host_port(&host, MADCMD_PORT_BIND, &m, port);
}

int cma_daemon_listen_check(struct cma_id *id)
{
	struct madcmd_port m;

	binding_of(id, &m);
	return madcmd_host_port(&host, MADCMD_PORT_LISTEN, &m, NULL);
}

void cma_daemon_unbind(struct cma_id *id)
{
	struct madcmd_port m;

	binding_of(id, &m);
	madcmd_host_port(&host, MADCMD_PORT_UNBIND, &m, NULL);
}

static void device_removal(struct cma_id *id, void *arg)
{
	struct cma_event *e;

	if (id->port != arg)
		return;
	id->rt_lost = true; /* the port's runtime waits for it to be destroyed */
	if (id->state == CMA_DESTROYING || id->state == CMA_IDLE)
		return;
	e = cma_event_new(id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	if (e)
		cma_report(id, e);
}

void cma_daemon_lost(struct cma_port *p, int status)
{
	cma_assert_unlocked();
	fprintf(stderr, "librdmacm (madcm): %s: %s port %u is gone\n",
		status == -ENODEV      ? "the device's MAD port hung up"
		: status == -ETIMEDOUT ? "madcmd stopped answering"
				       : "madcmd went away",
		ibv_get_device_name(p->dev->verbs->device), p->port_num);
	cma_lock();
	/* A device hung up (-ENODEV, in-process) took its verbs with it. */
	p->rt_lost = status != -ENODEV;
	cma_ids_foreach(device_removal, p);
	cma_unlock();
}

struct lost_holders {
	const struct cma_port *p;
	unsigned n;
};

static void count_lost(struct cma_id *id, void *arg)
{
	struct lost_holders *h = arg;

	h->n += id->port == h->p && id->rt_lost;
}

bool cma_port_lost_runtime(struct cma_port *p)
{
	struct lost_holders h = {p, 0};
	struct cm_runtime *rt = p->rt;

	cma_assert_locked();
	if (!rt || !p->rt_lost || p->lsids || p->nconns)
		return false;
	cma_ids_foreach(count_lost, &h);
	if (h.n)
		return false; /* ids that were on it are still there */
	if (nkept == kept_cap) {
		unsigned cap = kept_cap ? kept_cap * 2 : 4;
		struct cm_runtime **k = realloc(kept, cap * sizeof(*k));

		if (k) {
			kept = k;
			kept_cap = cap;
		}
	}
	if (nkept < kept_cap)
		kept[nkept++] = rt; /* else not freed either: lost track of, as at exit */
	p->rt = NULL;
	p->rt_lost = false;
	p->notices = false; /* subscribed again on the new runtime */
	p->bcast_valid = false;
	return true;
}
