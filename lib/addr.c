/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm_addrs_*: the address sources (file, rtnetlink) loaded once and
 * looked up in the order lib/addr.h gives.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/addr.h"
#include "lib/addr_file.h"
#include "lib/addr_netlink.h"

struct madcm_addrs {
	struct madcm_addr_table file;
	struct madcm_nl_table nl;
	char *path; /* the file read, or NULL */
};

static int copy_nl(struct madcm_nl_table *dst, const struct madcm_nl_table *src)
{
	memset(dst, 0, sizeof(*dst));
	if (src->nlinks) {
		dst->links = malloc(src->nlinks * sizeof(*dst->links));
		if (!dst->links)
			return -ENOMEM;
		memcpy(dst->links, src->links, src->nlinks * sizeof(*dst->links));
		dst->nlinks = dst->links_cap = src->nlinks;
	}
	if (src->naddrs) {
		dst->addrs = malloc(src->naddrs * sizeof(*dst->addrs));
		if (!dst->addrs)
			return -ENOMEM;
		memcpy(dst->addrs, src->addrs, src->naddrs * sizeof(*dst->addrs));
		dst->naddrs = dst->addrs_cap = src->naddrs;
	}
	if (src->nneighs) {
		dst->neighs = malloc(src->nneighs * sizeof(*dst->neighs));
		if (!dst->neighs)
			return -ENOMEM;
		memcpy(dst->neighs, src->neighs, src->nneighs * sizeof(*dst->neighs));
		dst->nneighs = dst->neighs_cap = src->nneighs;
	}
	return 0;
}

/* Read `path` into a->file; `optional`: a missing file is no error. */
static int load_file(struct madcm_addrs *a, const char *path, bool optional, char *err,
		     size_t errlen)
{
	int rc = madcm_addr_file_load(path, &a->file, err, errlen);

	if (rc == -ENOENT && optional) {
		if (err && errlen)
			err[0] = '\0';
		return -ENOENT;
	}
	if (rc)
		return rc;
	a->path = strdup(path);
	return a->path ? 0 : -ENOMEM;
}

int madcm_addrs_open_params(struct madcm_addrs **out, const struct madcm_addrs_params *p, char *err,
			    size_t errlen)
{
	static const struct madcm_addrs_params defaults;
	struct madcm_addrs *a;
	const char *file;
	int rc = 0;

	if (!p)
		p = &defaults;
	if (err && errlen)
		err[0] = '\0';
	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;

	file = p->file ? p->file : getenv(MADCM_ADDR_FILE_ENV);
	if (file) {
		if (*file)
			rc = load_file(a, file, false, err, errlen);
	} else {
		rc = load_file(a, MADCM_ADDR_FILE_DEFAULT, true, err, errlen);
		if (rc == -ENOENT)
			rc = load_file(a, MADCM_ADDR_FILE_IBACM, true, err, errlen);
		if (rc == -ENOENT)
			rc = 0;
	}
	if (rc)
		goto fail;

	if (p->netlink) {
		rc = copy_nl(&a->nl, p->netlink);
		if (rc)
			goto fail;
	} else if (!p->no_netlink) {
		/* No IPoIB, or no netlink here (a sandbox): the source is just empty. */
		if (madcm_nl_dump(&a->nl) == -ENOMEM) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	*out = a;
	return 0;
fail:
	madcm_addrs_close(a);
	return rc;
}

int madcm_addrs_open(struct madcm_addrs **out, char *err, size_t errlen)
{
	return madcm_addrs_open_params(out, NULL, err, errlen);
}

void madcm_addrs_close(struct madcm_addrs *a)
{
	if (!a)
		return;
	madcm_addr_table_free(&a->file);
	madcm_nl_table_free(&a->nl);
	free(a->path);
	free(a);
}

const char *madcm_addrs_file(const struct madcm_addrs *a)
{
	return a ? a->path : NULL;
}

static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* The raw address of a sockaddr: family and bytes (IPv4-mapped -> IPv4). */
static int raw_ip(const struct sockaddr *sa, uint8_t ip[16], int *family)
{
	if (!sa)
		return -EINVAL;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		memcpy(ip, &s4->sin_addr, 4);
		*family = AF_INET;
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		if (!memcmp(&s6->sin6_addr, v4mapped, 12)) {
			memcpy(ip, (const uint8_t *)&s6->sin6_addr + 12, 4);
			*family = AF_INET;
		} else {
			memcpy(ip, &s6->sin6_addr, 16);
			*family = AF_INET6;
		}
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void make_sockaddr(struct sockaddr_storage *out, int family, const uint8_t *ip,
			  uint32_t scope)
{
	memset(out, 0, sizeof(*out));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)out;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, ip, 4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, ip, 16);
		s6->sin6_scope_id = scope;
	}
}

int madcm_addrs_gid_pkey(const struct madcm_addrs *a, const struct sockaddr *ip, uint8_t gid[16],
			 uint16_t *pkey)
{
	const struct madcm_addr_entry *fe;
	const struct madcm_nl_ip *ne;
	uint8_t raw[16];
	int family, rc;

	rc = raw_ip(ip, raw, &family);
	if (rc)
		return rc;
	if (!a)
		return -ENOENT;
	fe = madcm_addr_table_find(&a->file, family, raw);
	if (fe) {
		memcpy(gid, fe->gid, 16);
		if (pkey)
			*pkey = fe->pkey;
		return 0;
	}
	ne = madcm_nl_find(&a->nl, family, raw);
	if (!ne)
		return -ENOENT;
	memcpy(gid, ne->gid, 16);
	if (pkey)
		*pkey = ne->pkey ? ne->pkey : 0xffff; /* a table made by hand (tests) */
	return 0;
}

int madcm_addrs_gid(const struct madcm_addrs *a, const struct sockaddr *ip, uint8_t gid[16])
{
	return madcm_addrs_gid_pkey(a, ip, gid, NULL);
}

/* fe80::/10: only meaningful with its interface, which becomes the scope id. */
static bool v6_link_local(const struct madcm_nl_ip *l)
{
	return l->family == AF_INET6 && l->ip[0] == 0xfe && (l->ip[1] & 0xc0) == 0x80;
}

static int ip_of_family(const struct madcm_addrs *a, const uint8_t gid[16], int family,
			struct sockaddr_storage *out)
{
	const struct madcm_addr_entry *e = madcm_addr_table_ip(&a->file, gid, family);
	const struct madcm_nl_ip *l;

	if (e) {
		make_sockaddr(out, family, e->ip, 0);
		return 0;
	}
	l = madcm_nl_local_ip(&a->nl, gid, family);
	if (l) {
		make_sockaddr(out, family, l->ip, v6_link_local(l) ? (uint32_t)l->ifindex : 0);
		return 0;
	}
	return -ENOENT;
}

int madcm_addrs_ip(const struct madcm_addrs *a, const uint8_t gid[16], int family,
		   struct sockaddr_storage *out)
{
	if (family != AF_INET && family != AF_INET6 && family != AF_UNSPEC)
		return -EAFNOSUPPORT;
	if (!a)
		return -ENOENT;
	if (family != AF_UNSPEC)
		return ip_of_family(a, gid, family, out);
	if (ip_of_family(a, gid, AF_INET, out) == 0)
		return 0;
	return ip_of_family(a, gid, AF_INET6, out);
}

/* Append (family, ip) to out[] unless it is there or out[] is full. */
static void add_unique(struct sockaddr_storage *out, int n, int *k, int family, const uint8_t *ip,
		       uint32_t scope)
{
	struct sockaddr_storage s;

	if (*k >= n)
		return;
	make_sockaddr(&s, family, ip, scope);
	for (int i = 0; i < *k; i++)
		if (!memcmp(&out[i], &s, sizeof(s)))
			return;
	out[(*k)++] = s;
}

/* Whether an earlier name line of the same name gave this GID already. */
static bool gid_seen(const struct madcm_addr_table *t, size_t upto, const char *name,
		     const uint8_t gid[16])
{
	for (size_t i = 0; i < upto; i++)
		if (t->e[i].family == AF_UNSPEC && !strcasecmp(t->e[i].name, name) &&
		    !memcmp(t->e[i].gid, gid, 16))
			return true;
	return false;
}

int madcm_addrs_name(const struct madcm_addrs *a, const char *name, int family,
		     struct sockaddr_storage *out, int n)
{
	static const int both[] = {AF_INET, AF_INET6};
	const struct madcm_addr_table *t;
	int k = 0;

	if (family != AF_INET && family != AF_INET6 && family != AF_UNSPEC)
		return -EAFNOSUPPORT;
	if (!a || !name || n <= 0)
		return 0;
	t = &a->file;
	for (unsigned f = 0; f < 2; f++) {
		int fam = both[f];

		if (family != AF_UNSPEC && family != fam)
			continue;
		for (size_t i = 0; i < t->n; i++) {
			const struct madcm_addr_entry *ne = &t->e[i];

			if (ne->family != AF_UNSPEC || strcasecmp(ne->name, name) ||
			    gid_seen(t, i, name, ne->gid))
				continue;
			for (size_t j = 0; j < t->n; j++)
				if (t->e[j].family == fam && !memcmp(t->e[j].gid, ne->gid, 16))
					add_unique(out, n, &k, fam, t->e[j].ip, 0);
			/* IPoIB addresses: the global ones, then the link-local ones */
			for (int pass = 0; pass < 2; pass++)
				for (size_t j = 0; j < a->nl.naddrs; j++) {
					const struct madcm_nl_ip *l = &a->nl.addrs[j];
					bool ll = v6_link_local(l);

					if (l->family == fam && !memcmp(l->gid, ne->gid, 16) &&
					    ll == (pass == 1))
						add_unique(out, n, &k, fam, l->ip,
							   ll ? (uint32_t)l->ifindex : 0);
				}
		}
	}
	return k;
}
