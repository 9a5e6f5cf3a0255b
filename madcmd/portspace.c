/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The host's port spaces: which session's binding holds which (network
 * namespace, port space, port), with the rules of lib/cma_ports.c (the
 * kernel's cma_get_port, cma_check_port, cma_alloc_any_port) applied
 * across every program of the host instead of one process.  As the
 * kernel's rdma_cm (its port spaces are per network namespace), programs
 * of two namespaces never conflict; a session's namespace is its peer's
 * /proc/PID/ns/net at accept (madcmd_default_netns_of).
 *   - port 0 takes a free port of 32768..60999 from a random start, upward
 *     with wraparound; EADDRNOTAVAIL when none is free;
 *   - an explicit port below 1024 needs uid 0 or CAP_NET_BIND_SERVICE of
 *     the peer process (EACCES otherwise);
 *   - two bindings on one port: allowed when both set REUSEADDR, or both
 *     are AFONLY with different families; else EADDRNOTAVAIL when either
 *     address is a wildcard or loopback, EADDRINUSE when they are equal.
 *   - LISTEN checks the binding again without REUSEADDR.
 * A binding is named by the program's token (its id's handle).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "cm/ip_pdata.h"
#include "mad/random.h"
#include "madcmd/madcmd_int.h"

#ifndef AF_IB
#define AF_IB 27
#endif

#define EPHEMERAL_LO 32768
#define EPHEMERAL_HI 60999
#define CAP_BIT_NET_BIND_SERVICE 10

static unsigned ps_bucket(uint64_t ns, uint32_t ps, uint16_t port)
{
	return (unsigned)(((ns ^ (ns >> 32)) * 131u + (unsigned)ps * 31u + port) %
			  MADCMD_PS_BUCKETS);
}

static bool same_space(const struct madcmd_bind *b, uint64_t ns, uint32_t ps, uint16_t port)
{
	return b->netns == ns && b->ps == ps && b->port == port;
}

static bool addr_equal(const struct madcmd_bind *a, const struct madcmd_bind *b)
{
	if (a->family != b->family)
		return false;
	switch (a->family) {
	case AF_INET:
		return !memcmp(a->addr, b->addr, 4);
	case AF_INET6:
	case AF_IB:
		return !memcmp(a->addr, b->addr, 16);
	default:
		return false;
	}
}

int madcmd_ps_conflict(const struct madcmd_bind *me, const struct madcmd_bind *other,
		       bool reuseaddr)
{
	if (reuseaddr && other->reuseaddr)
		return 0;
	if (me->afonly && other->afonly && me->family != other->family)
		return 0;
	if (me->any || other->any)
		return -EADDRNOTAVAIL;
	if (addr_equal(me, other))
		return -EADDRINUSE;
	return 0;
}

/* Every other binding of me's (ps, port), in bind order, as the kernel. */
static int check(struct madcmd *d, const struct madcmd_bind *me, bool reuseaddr)
{
	for (const struct madcmd_bind *b = d->ps[ps_bucket(me->netns, me->ps, me->port)]; b;
	     b = b->hnext) {
		int rc;

		if (b == me || !same_space(b, me->netns, me->ps, me->port))
			continue;
		rc = madcmd_ps_conflict(me, b, reuseaddr);
		if (rc)
			return rc;
	}
	return 0;
}

static bool port_used(const struct madcmd *d, uint64_t ns, uint32_t ps, uint16_t port)
{
	for (const struct madcmd_bind *b = d->ps[ps_bucket(ns, ps, port)]; b; b = b->hnext)
		if (same_space(b, ns, ps, port))
			return true;
	return false;
}

/*
 * Whether a program of any namespace holds the service ID's port: the
 * engine's service_bound (a REQ just before its listen waits for it,
 * cm/held.c).  Asked only for a REQ no listener takes, so every bucket
 * is looked at rather than a second index kept.
 */
bool madcmd_ps_service_bound(void *arg, uint64_t service_id)
{
	const struct madcmd *d = arg;
	unsigned ps;
	uint16_t port;

	if (cm_sid_to_ps_port(service_id, &ps, &port))
		return false;
	for (unsigned i = 0; i < MADCMD_PS_BUCKETS; i++)
		for (const struct madcmd_bind *b = d->ps[i]; b; b = b->hnext)
			if (b->ps == ps && b->port == port)
				return true;
	return false;
}

/* A binding is found by its session and token in one step, not a walk of the session's. */
static unsigned token_bucket(const struct madcmd_session *s, uint64_t token)
{
	uint64_t h = (token ^ (uint64_t)(uintptr_t)s) * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 32) % MADCMD_PS_BUCKETS;
}

static void link_bind(struct madcmd *d, struct madcmd_bind *b)
{
	struct madcmd_bind **pp = &d->ps[ps_bucket(b->netns, b->ps, b->port)];
	unsigned t = token_bucket(b->s, b->token);

	while (*pp)
		pp = &(*pp)->hnext;
	b->hnext = NULL;
	*pp = b;
	b->snext = b->s->binds;
	if (b->snext)
		b->snext->sprev = &b->snext;
	b->sprev = &b->s->binds;
	b->s->binds = b;
	b->s->nbinds++;
	b->tnext = d->ps_tokens[t];
	d->ps_tokens[t] = b;
}

static void unlink_bind(struct madcmd *d, struct madcmd_bind *b)
{
	struct madcmd_bind **pp = &d->ps[ps_bucket(b->netns, b->ps, b->port)];

	while (*pp && *pp != b)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = b->hnext;
	for (pp = &d->ps_tokens[token_bucket(b->s, b->token)]; *pp; pp = &(*pp)->tnext)
		if (*pp == b) {
			*pp = b->tnext;
			break;
		}
	*b->sprev = b->snext;
	if (b->snext)
		b->snext->sprev = b->sprev;
	b->s->nbinds--;
	free(b);
}

static struct madcmd_bind *by_token(struct madcmd_session *s, uint64_t token)
{
	for (struct madcmd_bind *b = s->d->ps_tokens[token_bucket(s, token)]; b; b = b->tnext)
		if (b->s == s && b->token == token)
			return b;
	return NULL;
}

bool madcmd_default_may_bind_privileged(void *ctx, pid_t pid, uid_t uid)
{
	char path[64], line[256];
	bool ok = false;
	FILE *f;

	(void)ctx;
	if (uid == 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		uint64_t caps;

		if (sscanf(line, "CapEff: %" SCNx64, &caps) == 1) {
			ok = (caps >> CAP_BIT_NET_BIND_SERVICE) & 1;
			break;
		}
	}
	fclose(f);
	return ok;
}

uint64_t madcmd_default_netns_of(void *ctx, pid_t pid)
{
	char path[64];
	struct stat st;

	(void)ctx;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (pid <= 0 || stat(path, &st))
		return 0; /* no /proc, or the peer's pid is not ours to see: one space */
	return ((uint64_t)st.st_dev << 32) ^ (uint64_t)st.st_ino;
}

static uint32_t random_start(struct madcmd *d)
{
	uint32_t r = 0;

	if (d->p.random32)
		return d->p.random32(d->p.random_ctx);
	if (mad_random_bytes(&r, sizeof(r), GRND_NONBLOCK))
		r = (uint32_t)rand();
	return r;
}

static int bind_port(struct madcmd_session *s, struct madcmd_bind *b)
{
	struct madcmd *d = s->d;

	if (b->port == 0) {
		unsigned range = EPHEMERAL_HI - EPHEMERAL_LO + 1;
		unsigned start = random_start(d) % range;

		for (unsigned i = 0; i < range; i++) {
			uint16_t p = (uint16_t)(EPHEMERAL_LO + (start + i) % range);

			if (!port_used(d, b->netns, b->ps, p)) {
				b->port = p;
				return 0;
			}
		}
		return -EADDRNOTAVAIL;
	}
	if (b->port < 1024 && !d->p.may_bind_privileged(d->p.priv_ctx, s->pid, s->uid))
		return -EACCES;
	return check(d, b, b->reuseaddr);
}

void madcmd_port_msg(struct madcmd_session *s, const struct madcmd_port *m, int type)
{
	struct madcmd *d = s->d;
	struct madcmd_port_rep r;
	struct madcmd_bind *b = by_token(s, m->token);
	int rc = 0;

	memset(&r, 0, sizeof(r));
	madcmd_hdr_init(&r.h, MADCMD_PORT_REP, sizeof(r), m->h.seq);
	switch (type) {
	case MADCMD_PORT_BIND:
		if (b) {
			rc = -EINVAL; /* one binding per id, as rdma_bind_addr */
			break;
		}
		if (s->nbinds >= d->p.max_ids) {
			rc = -ENOSPC;
			break;
		}
		b = calloc(1, sizeof(*b));
		if (!b) {
			rc = -ENOMEM;
			break;
		}
		b->s = s;
		b->token = m->token;
		b->netns = s->netns;
		b->ps = m->ps;
		b->port = m->port;
		b->family = m->family;
		memcpy(b->addr, m->addr, sizeof(b->addr));
		b->any = m->any;
		b->reuseaddr = m->reuseaddr;
		b->afonly = m->afonly;
		rc = bind_port(s, b);
		if (rc) {
			free(b);
			break;
		}
		link_bind(d, b);
		r.port = b->port;
		break;
	case MADCMD_PORT_LISTEN:
		rc = b ? check(d, b, false) : -EINVAL;
		if (b)
			r.port = b->port;
		break;
	case MADCMD_PORT_UNBIND:
		if (b)
			unlink_bind(d, b);
		else
			rc = -EINVAL;
		break;
	default:
		rc = -EINVAL;
		break;
	}
	r.rc = rc;
	madcmd_send(s, &r, sizeof(r));
}

void madcmd_ps_session_end(struct madcmd_session *s)
{
	while (s->binds)
		unlink_bind(s->d, s->binds);
}
