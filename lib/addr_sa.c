/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* IP <-> GID ServiceRecords at the SA; the convention is in addr_sa.h. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/runtime.h"
#include "lib/addr_sa.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

#define FAMILY_V4 0x04ull
#define FAMILY_V6 0x06ull

/* The address as 16 bytes (IPv4 mapped) and whether it is IPv4; -EAFNOSUPPORT. */
static int addr16(const struct sockaddr *sa, uint8_t a[16], bool *v4)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (!sa)
		return -EINVAL;
	if (sa->sa_family == AF_INET) {
		memcpy(a, mapped, 12);
		memcpy(a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		*v4 = true;
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		*v4 = !memcmp(a, mapped, 12);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static uint32_t fnv1a32(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static uint64_t id_of(const uint8_t a[16], bool v4)
{
	uint32_t low;

	if (v4) {
		low = (uint32_t)a[12] << 24 | (uint32_t)a[13] << 16 | (uint32_t)a[14] << 8 | a[15];
		return MADCM_ADDR_SA_ID_PREFIX | FAMILY_V4 << 32 | low;
	}
	return MADCM_ADDR_SA_ID_PREFIX | FAMILY_V6 << 32 | fnv1a32(a, 16);
}

uint64_t madcm_addr_sa_id(const struct sockaddr *ip)
{
	uint8_t a[16];
	bool v4;

	if (addr16(ip, a, &v4))
		return 0;
	return id_of(a, v4);
}

static uint64_t data8_mask(void)
{
	uint64_t m = 0;

	for (unsigned i = 0; i < 16; i++)
		m |= SA_SR_COMP_SERVICE_DATA8(i);
	return m;
}

uint64_t madcm_addr_sa_record(struct sa_service *s, const struct sockaddr *ip,
			      const uint8_t gid[16], uint16_t pkey, uint32_t lease)
{
	char text[INET6_ADDRSTRLEN];
	uint8_t a[16];
	bool v4;

	memset(s, 0, sizeof(*s));
	if (addr16(ip, a, &v4))
		return 0;
	if (!inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? a + 12 : a, text, sizeof(text)))
		return 0;
	s->id = id_of(a, v4);
	memcpy(s->gid, gid, 16);
	s->pkey = pkey ? pkey : 0xffff;
	s->lease = lease;
	snprintf(s->name, sizeof(s->name), "%s%s", MADCM_ADDR_SA_NAME_PREFIX, text);
	memcpy(s->data8, a, 16);
	return SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_GID | SA_SR_COMP_SERVICE_P_KEY |
	       SA_SR_COMP_SERVICE_LEASE | SA_SR_COMP_SERVICE_NAME | data8_mask();
}

int madcm_addr_sa_register(struct sa_client *c, const struct sockaddr *ip, const uint8_t gid[16],
			   uint16_t pkey, uint32_t lease)
{
	struct sa_service s;
	uint64_t mask = madcm_addr_sa_record(&s, ip, gid, pkey, lease);

	if (!mask)
		return ip ? -EAFNOSUPPORT : -EINVAL;
	return sa_service_register(c, &s, mask);
}

int madcm_addr_sa_unregister(struct sa_client *c, const struct sockaddr *ip, const uint8_t gid[16],
			     uint16_t pkey)
{
	struct sa_service s;

	if (!madcm_addr_sa_record(&s, ip, gid, pkey, 0))
		return ip ? -EAFNOSUPPORT : -EINVAL;
	return sa_service_delete(
	    c, &s, SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_GID | SA_SR_COMP_SERVICE_P_KEY);
}

int madcm_addr_sa_publish_async(struct sa_client *c, bool on, const struct sockaddr *ip,
				const uint8_t gid[16], uint16_t pkey, uint32_t lease,
				void (*cb)(void *arg, int status), void *arg)
{
	struct sa_service s;
	uint64_t mask = madcm_addr_sa_record(&s, ip, gid, pkey, lease);

	if (!mask)
		return ip ? -EAFNOSUPPORT : -EINVAL;
	if (on)
		return sa_service_register_async(c, &s, mask, cb, arg);
	return sa_service_delete_async(
	    c, &s, SA_SR_COMP_SERVICE_ID | SA_SR_COMP_SERVICE_GID | SA_SR_COMP_SERVICE_P_KEY, cb,
	    arg);
}

/* The GetTable of a resolution, through the SA client or the runtime. */
typedef int (*service_query_fn)(void *ctx, const struct sa_service *q, uint64_t mask,
				struct sa_service **out, unsigned *n);

static int resolve(service_query_fn query, void *ctx, const struct sockaddr *ip, uint8_t gid[16],
		   uint16_t *pkey)
{
	struct sa_service q, *all = NULL;
	unsigned n = 0;
	uint8_t a[16];
	bool v4;
	int rc;

	rc = addr16(ip, a, &v4);
	if (rc)
		return rc;
	memset(&q, 0, sizeof(q));
	q.id = id_of(a, v4);
	memcpy(q.data8, a, 16);
	rc = query(ctx, &q, SA_SR_COMP_SERVICE_ID | data8_mask(), &all, &n);
	if (rc == 0) {
		/* The SA filtered on the components; check anyway, cheaply. */
		rc = -ENOENT;
		for (unsigned i = 0; i < n; i++)
			if (all[i].id == q.id && !memcmp(all[i].data8, a, 16)) {
				memcpy(gid, all[i].gid, 16);
				if (pkey) /* a record without one (0): the default partition */
					*pkey = all[i].pkey & 0x7fff ? all[i].pkey : 0xffff;
				rc = 0;
				break;
			}
	}
	free(all);
	return rc;
}

static int query_sa(void *ctx, const struct sa_service *q, uint64_t mask, struct sa_service **out,
		    unsigned *n)
{
	return sa_service_query(ctx, q, mask, out, n);
}

static int query_rt(void *ctx, const struct sa_service *q, uint64_t mask, struct sa_service **out,
		    unsigned *n)
{
	return cm_runtime_service_query(ctx, q, mask, out, n);
}

int madcm_addr_sa_resolve(struct sa_client *c, const struct sockaddr *ip, uint8_t gid[16],
			  uint16_t *pkey)
{
	return resolve(query_sa, c, ip, gid, pkey);
}

int madcm_addr_sa_resolve_rt(struct cm_runtime *rt, const struct sockaddr *ip, uint8_t gid[16],
			     uint16_t *pkey)
{
	return resolve(query_rt, rt, ip, gid, pkey);
}
