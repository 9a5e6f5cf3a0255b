/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rtnetlink dumps of the IPoIB links, their addresses and neighbours
 * (see addr_netlink.h).  The buffer may come from anywhere (a fuzzer, a
 * test), so every header is copied out before use (no alignment assumed)
 * and every length is checked against what is left.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/if_addr.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "lib/addr_netlink.h"

#define NL_BUF (64u << 10)

struct attr {
	const uint8_t *p;
	size_t len;
};

static size_t ip_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

/*
 * Walk the attributes in p[0..len) and keep those whose type is below
 * `max` in out[type] (the last one wins).  false on a malformed one.
 */
static bool attrs(const uint8_t *p, size_t len, struct attr *out, unsigned max)
{
	memset(out, 0, max * sizeof(*out));
	while (len >= sizeof(struct rtattr)) {
		struct rtattr a;
		size_t step;

		memcpy(&a, p, sizeof(a));
		if (a.rta_len < sizeof(a) || a.rta_len > len)
			return false;
		unsigned type = a.rta_type & NLA_TYPE_MASK;
		if (type < max) {
			out[type].p = p + sizeof(a);
			out[type].len = a.rta_len - sizeof(a);
		}
		step = RTA_ALIGN(a.rta_len);
		if (step >= len)
			return true;
		p += step;
		len -= step;
	}
	return len == 0;
}

static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return arr;
	size_t nc = *cap ? *cap * 2 : 16;
	void *na = realloc(arr, nc * size);

	if (na)
		*cap = nc;
	return na;
}

const struct madcm_nl_link *madcm_nl_link_find(const struct madcm_nl_table *t, int ifindex)
{
	for (size_t i = 0; i < t->nlinks; i++)
		if (t->links[i].ifindex == ifindex)
			return &t->links[i];
	return NULL;
}

/*
 * The P_Key of an IPoIB link: IFLA_IPOIB_PKEY (host order) in the
 * "ipoib" link info's data, else the broadcast address's bytes 8-9
 * (network order), else the default.
 */
static uint16_t link_pkey(const struct attr *linkinfo, const struct attr *bcast)
{
	struct attr li[IFLA_INFO_DATA + 1], data[IFLA_IPOIB_PKEY + 1];

	if (linkinfo->p && attrs(linkinfo->p, linkinfo->len, li, IFLA_INFO_DATA + 1) &&
	    li[IFLA_INFO_DATA].p &&
	    attrs(li[IFLA_INFO_DATA].p, li[IFLA_INFO_DATA].len, data, IFLA_IPOIB_PKEY + 1) &&
	    data[IFLA_IPOIB_PKEY].len == sizeof(uint16_t)) {
		uint16_t v;

		memcpy(&v, data[IFLA_IPOIB_PKEY].p, sizeof(v));
		if (v & 0x7fff)
			return v;
	}
	if (bcast->len == MADCM_NL_HWADDR_LEN) {
		uint16_t v = (uint16_t)(bcast->p[8] << 8 | bcast->p[9]);

		if (v & 0x7fff)
			return v;
	}
	return 0xffff;
}

static int on_link(struct madcm_nl_table *t, const uint8_t *p, size_t len)
{
	struct ifinfomsg ifi;
	struct attr a[IFLA_LINKINFO + 1];
	struct madcm_nl_link l;
	size_t hl = NLMSG_ALIGN(sizeof(ifi));

	if (len < sizeof(ifi))
		return -EINVAL;
	memcpy(&ifi, p, sizeof(ifi));
	if (!attrs(p + (hl < len ? hl : len), hl < len ? len - hl : 0, a, IFLA_LINKINFO + 1))
		return -EINVAL;
	if (ifi.ifi_type != ARPHRD_INFINIBAND || a[IFLA_ADDRESS].len != MADCM_NL_HWADDR_LEN)
		return 0;
	memset(&l, 0, sizeof(l));
	l.ifindex = ifi.ifi_index;
	memcpy(l.gid, a[IFLA_ADDRESS].p + 4, 16);
	l.pkey = link_pkey(&a[IFLA_LINKINFO], &a[IFLA_BROADCAST]);
	if (a[IFLA_IFNAME].p) {
		size_t n = strnlen((const char *)a[IFLA_IFNAME].p, a[IFLA_IFNAME].len);

		if (n >= sizeof(l.name))
			n = sizeof(l.name) - 1;
		memcpy(l.name, a[IFLA_IFNAME].p, n);
	}
	for (size_t i = 0; i < t->nlinks; i++)
		if (t->links[i].ifindex == l.ifindex) {
			t->links[i] = l; /* a newer message about the same link */
			return 0;
		}
	struct madcm_nl_link *nl = grow(t->links, &t->links_cap, t->nlinks, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	t->links = nl;
	t->links[t->nlinks++] = l;
	return 0;
}

static int push_ip(struct madcm_nl_ip **arr, size_t *n, size_t *cap, const struct madcm_nl_ip *ip)
{
	struct madcm_nl_ip *na = grow(*arr, cap, *n, sizeof(*na));

	if (!na)
		return -ENOMEM;
	*arr = na;
	na[(*n)++] = *ip;
	return 0;
}

static int on_addr(struct madcm_nl_table *t, const uint8_t *p, size_t len)
{
	struct ifaddrmsg ifa;
	struct attr a[IFA_LOCAL + 1];
	const struct madcm_nl_link *l;
	const struct attr *ip;
	struct madcm_nl_ip e;
	size_t hl = NLMSG_ALIGN(sizeof(ifa));

	if (len < sizeof(ifa))
		return -EINVAL;
	memcpy(&ifa, p, sizeof(ifa));
	if (!attrs(p + (hl < len ? hl : len), hl < len ? len - hl : 0, a, IFA_LOCAL + 1))
		return -EINVAL;
	if (ifa.ifa_family != AF_INET && ifa.ifa_family != AF_INET6)
		return 0;
	l = madcm_nl_link_find(t, (int)ifa.ifa_index);
	if (!l)
		return 0;
	/* IFA_LOCAL is the local end (IFA_ADDRESS the peer's on a point-to-point link). */
	ip = a[IFA_LOCAL].p ? &a[IFA_LOCAL] : &a[IFA_ADDRESS];
	if (ip->len != ip_len(ifa.ifa_family))
		return 0;
	memset(&e, 0, sizeof(e));
	e.ifindex = l->ifindex;
	e.family = ifa.ifa_family;
	memcpy(e.ip, ip->p, ip->len);
	memcpy(e.gid, l->gid, 16);
	e.pkey = l->pkey;
	return push_ip(&t->addrs, &t->naddrs, &t->addrs_cap, &e);
}

static int on_neigh(struct madcm_nl_table *t, const uint8_t *p, size_t len)
{
	struct ndmsg nd;
	struct attr a[NDA_LLADDR + 1];
	const struct madcm_nl_link *l;
	struct madcm_nl_ip e;
	size_t hl = NLMSG_ALIGN(sizeof(nd));

	if (len < sizeof(nd))
		return -EINVAL;
	memcpy(&nd, p, sizeof(nd));
	if (!attrs(p + (hl < len ? hl : len), hl < len ? len - hl : 0, a, NDA_LLADDR + 1))
		return -EINVAL;
	if (nd.ndm_family != AF_INET && nd.ndm_family != AF_INET6)
		return 0;
	/* Incomplete or failed entries carry no usable hardware address. */
	if (nd.ndm_state & (NUD_INCOMPLETE | NUD_FAILED))
		return 0;
	l = madcm_nl_link_find(t, nd.ndm_ifindex);
	if (!l)
		return 0;
	if (a[NDA_DST].len != ip_len(nd.ndm_family) || a[NDA_LLADDR].len != MADCM_NL_HWADDR_LEN)
		return 0;
	memset(&e, 0, sizeof(e));
	e.ifindex = nd.ndm_ifindex;
	e.family = nd.ndm_family;
	memcpy(e.ip, a[NDA_DST].p, a[NDA_DST].len);
	memcpy(e.gid, a[NDA_LLADDR].p + 4, 16);
	e.pkey = l->pkey; /* a neighbour is in its link's partition */
	return push_ip(&t->neighs, &t->nneighs, &t->neighs_cap, &e);
}

int madcm_nl_parse(struct madcm_nl_table *t, const void *buf, size_t len, uint32_t seq)
{
	const uint8_t *p = buf;

	while (len > 0) {
		struct nlmsghdr h;
		const uint8_t *body;
		size_t blen, step;
		int rc = 0;

		if (len < sizeof(h))
			return -EINVAL;
		memcpy(&h, p, sizeof(h));
		if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len)
			return -EINVAL;
		body = p + NLMSG_HDRLEN;
		blen = h.nlmsg_len - NLMSG_HDRLEN;
		if (seq == 0 || h.nlmsg_seq == seq) {
			switch (h.nlmsg_type) {
			case NLMSG_DONE:
				return 1;
			case NLMSG_ERROR: {
				int e;

				if (blen < sizeof(e))
					return -EINVAL;
				memcpy(&e, body, sizeof(e));
				if (e < 0)
					return e > -4096 ? e : -EPROTO;
				break; /* an acknowledgement */
			}
			case RTM_NEWLINK:
				rc = on_link(t, body, blen);
				break;
			case RTM_NEWADDR:
				rc = on_addr(t, body, blen);
				break;
			case RTM_NEWNEIGH:
				rc = on_neigh(t, body, blen);
				break;
			default:
				break;
			}
			if (rc)
				return rc;
		}
		step = NLMSG_ALIGN(h.nlmsg_len);
		if (step >= len)
			break; /* the last message need not be padded */
		p += step;
		len -= step;
	}
	return 0;
}

/* One dump request of `type` on `fd`, replies parsed into t until NLMSG_DONE. */
static int dump_one(int fd, struct madcm_nl_table *t, uint16_t type, uint32_t seq, uint8_t *buf)
{
	struct {
		struct nlmsghdr h;
		union {
			struct ifinfomsg ifi;
			struct ifaddrmsg ifa;
			struct ndmsg nd;
		} u;
	} req;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	size_t body = type == RTM_GETLINK   ? sizeof(req.u.ifi)
		      : type == RTM_GETADDR ? sizeof(req.u.ifa)
					    : sizeof(req.u.nd);

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_LENGTH(body);
	req.h.nlmsg_type = type;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = seq;
	if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		struct sockaddr_nl from;
		struct iovec iov = {.iov_base = buf, .iov_len = NL_BUF};
		struct msghdr m = {.msg_name = &from,
				   .msg_namelen = sizeof(from),
				   .msg_iov = &iov,
				   .msg_iovlen = 1};
		ssize_t r = recvmsg(fd, &m, 0);
		int rc;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (m.msg_flags & MSG_TRUNC)
			return -EMSGSIZE;
		if (m.msg_namelen >= sizeof(from) && from.nl_pid != 0)
			continue; /* not from the kernel */
		rc = madcm_nl_parse(t, buf, (size_t)r, seq);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return 0;
	}
}

int madcm_nl_dump(struct madcm_nl_table *t)
{
	struct timeval tv = {.tv_sec = 2};
	uint8_t *buf;
	int fd, rc;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	/* A dump answers at once; the timeout only bounds a broken kernel or sandbox. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	buf = malloc(NL_BUF);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	rc = dump_one(fd, t, RTM_GETLINK, 1, buf);
	if (rc == 0 && t->nlinks)
		rc = dump_one(fd, t, RTM_GETADDR, 2, buf);
	if (rc == 0 && t->nlinks)
		rc = dump_one(fd, t, RTM_GETNEIGH, 3, buf);
	free(buf);
	close(fd);
	return rc;
}

void madcm_nl_table_free(struct madcm_nl_table *t)
{
	if (!t)
		return;
	free(t->links);
	free(t->addrs);
	free(t->neighs);
	memset(t, 0, sizeof(*t));
}

static const struct madcm_nl_ip *find_ip(const struct madcm_nl_ip *arr, size_t n, int family,
					 const uint8_t *ip)
{
	for (size_t i = 0; i < n; i++)
		if (arr[i].family == family && !memcmp(arr[i].ip, ip, ip_len(family)))
			return &arr[i];
	return NULL;
}

const struct madcm_nl_ip *madcm_nl_find(const struct madcm_nl_table *t, int family,
					const uint8_t *ip)
{
	const struct madcm_nl_ip *e = find_ip(t->neighs, t->nneighs, family, ip);

	return e ? e : find_ip(t->addrs, t->naddrs, family, ip);
}

int madcm_nl_gid(const struct madcm_nl_table *t, int family, const uint8_t *ip, uint8_t gid[16])
{
	const struct madcm_nl_ip *e = madcm_nl_find(t, family, ip);

	if (!e)
		return -ENOENT;
	memcpy(gid, e->gid, 16);
	return 0;
}

static bool link_local(const struct madcm_nl_ip *e)
{
	if (e->family == AF_INET)
		return e->ip[0] == 169 && e->ip[1] == 254;
	return e->ip[0] == 0xfe && (e->ip[1] & 0xc0) == 0x80;
}

const struct madcm_nl_ip *madcm_nl_local_ip(const struct madcm_nl_table *t, const uint8_t gid[16],
					    int family)
{
	const struct madcm_nl_ip *ll = NULL;

	for (size_t i = 0; i < t->naddrs; i++) {
		const struct madcm_nl_ip *e = &t->addrs[i];

		if (e->family != family || memcmp(e->gid, gid, 16))
			continue;
		if (!link_local(e))
			return e;
		if (!ll)
			ll = e;
	}
	return ll;
}
