/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The port-space table: which ids hold which (port space, port), with the
 * kernel's rules (cma.c cma_get_port, cma_check_port, cma_alloc_any_port):
 *   - port 0 takes a free port of 32768..60999 (Linux's default
 *     ip_local_port_range), from a random start, upward with wraparound;
 *     EADDRNOTAVAIL when none is free;
 *   - an explicit port below 1024 needs privilege (EACCES otherwise);
 *   - two ids on one port: allowed when both set REUSEADDR, or both are
 *     AFONLY with different families; else EADDRNOTAVAIL when either
 *     address is a wildcard or loopback, EADDRINUSE when they are equal.
 * One table per process; with madcmd the daemon holds the host's, and
 * every binding here is first reserved there (cma_daemon.c), so the
 * same rules hold between processes.  This table keeps the process's own
 * owners of each port (cma_ports_listeners).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include "cm/ip_pdata.h"
#include "lib/cma.h"

#define EPHEMERAL_LO 32768
#define EPHEMERAL_HI 60999
#define NBUCKETS 1024

struct cma_bind_list {
	struct cma_bind_list *next;
	enum rdma_port_space ps;
	uint16_t port;
	struct cma_id *owners; /* chained through bind_next, in bind order */
};

static struct cma_bind_list *buckets[NBUCKETS];

static unsigned slot(enum rdma_port_space ps, uint16_t port)
{
	return ((unsigned)ps * 31u + port) % NBUCKETS;
}

static struct cma_bind_list *find(enum rdma_port_space ps, uint16_t port)
{
	for (struct cma_bind_list *b = buckets[slot(ps, port)]; b; b = b->next)
		if (b->ps == ps && b->port == port)
			return b;
	return NULL;
}

static struct cma_bind_list *make(enum rdma_port_space ps, uint16_t port)
{
	struct cma_bind_list *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->ps = ps;
	b->port = port;
	b->next = buckets[slot(ps, port)];
	buckets[slot(ps, port)] = b;
	return b;
}

static const struct sockaddr *src_of(const struct cma_id *id)
{
	return (const struct sockaddr *)&id->id.route.addr.src_addr;
}

static int check_port(struct cma_bind_list *b, struct cma_id *id, bool reuseaddr)
{
	const struct sockaddr *a = src_of(id);

	for (struct cma_id *cur = b->owners; cur; cur = cur->bind_next) {
		const struct sockaddr *c = src_of(cur);

		if (cur == id)
			continue;
		if (reuseaddr && cur->reuseaddr)
			continue;
		if (id->afonly && cur->afonly && a->sa_family != c->sa_family)
			continue;
		if (cma_addr_any(a) || cma_addr_any(c))
			return -EADDRNOTAVAIL;
		if (cma_addr_equal(a, c))
			return -EADDRINUSE;
	}
	return 0;
}

static bool may_bind_privileged(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return geteuid() == 0;
	return (d[CAP_NET_BIND_SERVICE / 32].effective >> (CAP_NET_BIND_SERVICE % 32)) & 1;
}

static void add_owner(struct cma_bind_list *b, struct cma_id *id)
{
	struct cma_id **pp = &b->owners;

	while (*pp)
		pp = &(*pp)->bind_next;
	id->bind_next = NULL;
	*pp = id;
	id->bind = b;
}

int cma_ports_bind(struct cma_id *id, struct sockaddr *addr)
{
	enum rdma_port_space ps = id->id.ps;
	uint16_t port = cma_addr_port(addr);
	struct cma_bind_list *b;
	int rc;

	cma_assert_locked();
	if (cma.daemon) {
		uint16_t got = 0;

		rc = cma_daemon_bind(id, &got);
		if (rc)
			return rc;
		b = find(ps, got);
		if (!b && !(b = make(ps, got))) {
			cma_daemon_unbind(id);
			return -ENOMEM;
		}
		cma_addr_set_port(addr, got);
		cma_addr_set_port((struct sockaddr *)&id->id.route.addr.src_addr, got);
		add_owner(b, id);
		return 0;
	}
	if (port == 0) {
		unsigned range = EPHEMERAL_HI - EPHEMERAL_LO + 1;
		unsigned start = cma_random32() % range;

		for (unsigned i = 0; i < range; i++) {
			uint16_t p = (uint16_t)(EPHEMERAL_LO + (start + i) % range);

			if (!find(ps, p)) {
				b = make(ps, p);
				if (!b)
					return -ENOMEM;
				cma_addr_set_port(addr, p);
				cma_addr_set_port((struct sockaddr *)&id->id.route.addr.src_addr,
						  p);
				add_owner(b, id);
				return 0;
			}
		}
		return -EADDRNOTAVAIL;
	}
	if (port < 1024 && !may_bind_privileged())
		return -EACCES;
	b = find(ps, port);
	if (b) {
		rc = check_port(b, id, id->reuseaddr);
		if (rc)
			return rc;
	} else {
		b = make(ps, port);
		if (!b)
			return -ENOMEM;
	}
	add_owner(b, id);
	return 0;
}

int cma_ports_listen_check(struct cma_id *id)
{
	cma_assert_locked();
	if (!id->bind)
		return 0;
	if (cma.daemon)
		return cma_daemon_listen_check(id);
	return check_port(id->bind, id, false);
}

void cma_ports_unbind(struct cma_id *id)
{
	struct cma_bind_list *b = id->bind, **pb;

	cma_assert_locked();
	if (!b)
		return;
	if (cma.daemon)
		cma_daemon_unbind(id);
	for (struct cma_id **pp = &b->owners; *pp; pp = &(*pp)->bind_next)
		if (*pp == id) {
			*pp = id->bind_next;
			break;
		}
	id->bind = NULL;
	if (b->owners)
		return;
	for (pb = &buckets[slot(b->ps, b->port)]; *pb; pb = &(*pb)->next)
		if (*pb == b) {
			*pb = b->next;
			break;
		}
	free(b);
}

struct cma_id *cma_ports_listeners(enum rdma_port_space ps, uint16_t port)
{
	struct cma_bind_list *b = find(ps, port);

	cma_assert_locked();
	return b ? b->owners : NULL;
}

bool cma_ports_service_bound(void *arg, uint64_t service_id)
{
	unsigned ps;
	uint16_t port;
	bool bound;

	(void)arg;
	if (cm_sid_to_ps_port(service_id, &ps, &port))
		return false;
	cma_lock();
	bound = find((enum rdma_port_space)ps, port) != NULL;
	cma_unlock();
	return bound;
}

void cma_ports_forget(void)
{
	/* A fork()ed child: the parent's bindings are not its own (cma_fork.c). */
	for (unsigned i = 0; i < NBUCKETS; i++)
		buckets[i] = NULL;
}
