/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rtnetlink parsers on canned dump replies built here (no machine of ours
 * has IPoIB): InfiniBand links and their GIDs, addresses and neighbours
 * of those links only, done/error/sequence handling, malformed buffers,
 * and the netlink source behind madcm_addrs_* (after the file).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/if_addr.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "lib/addr.h"
#include "lib/addr_netlink.h"

/* A reply under construction: messages appended to buf. */
struct reply {
	uint8_t buf[8192];
	size_t len;
	size_t msg; /* start of the message being built */
};

static void msg_begin(struct reply *r, uint16_t type, uint32_t seq, const void *body, size_t blen)
{
	struct nlmsghdr h = {.nlmsg_type = type, .nlmsg_flags = NLM_F_MULTI, .nlmsg_seq = seq};

	r->len = NLMSG_ALIGN(r->len);
	r->msg = r->len;
	memcpy(r->buf + r->len, &h, sizeof(h));
	r->len += NLMSG_HDRLEN;
	memcpy(r->buf + r->len, body, blen);
	r->len += NLMSG_ALIGN(blen);
	memset(r->buf + r->msg + NLMSG_HDRLEN + blen, 0, NLMSG_ALIGN(blen) - blen);
}

static void attr(struct reply *r, uint16_t type, const void *data, size_t len)
{
	struct rtattr a = {.rta_len = (unsigned short)RTA_LENGTH(len), .rta_type = type};

	memcpy(r->buf + r->len, &a, sizeof(a));
	memcpy(r->buf + r->len + sizeof(a), data, len);
	memset(r->buf + r->len + sizeof(a) + len, 0, RTA_ALIGN(a.rta_len) - a.rta_len);
	r->len += RTA_ALIGN(a.rta_len);
}

static void msg_end(struct reply *r)
{
	uint32_t l = (uint32_t)(r->len - r->msg);

	memcpy(r->buf + r->msg, &l, sizeof(l)); /* nlmsg_len comes first */
}

static void done(struct reply *r, uint32_t seq)
{
	int zero = 0;

	msg_begin(r, NLMSG_DONE, seq, &zero, sizeof(zero));
	msg_end(r);
}

/* IPoIB hardware address: flags + QPN, then the GID. */
static void hwaddr(uint8_t out[20], uint32_t qpn, const char *gid)
{
	out[0] = 0x80 | (uint8_t)(qpn >> 24);
	out[1] = (uint8_t)(qpn >> 16);
	out[2] = (uint8_t)(qpn >> 8);
	out[3] = (uint8_t)qpn;
	assert_int_equal(inet_pton(AF_INET6, gid, out + 4), 1);
}

static void link_msg(struct reply *r, uint32_t seq, int ifindex, unsigned short type,
		     const char *name, const uint8_t *addr, size_t alen)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_type = type, .ifi_index = ifindex};

	msg_begin(r, RTM_NEWLINK, seq, &ifi, sizeof(ifi));
	attr(r, IFLA_IFNAME, name, strlen(name) + 1);
	attr(r, IFLA_MTU, "\x00\x08\x00\x00", 4);
	if (addr)
		attr(r, IFLA_ADDRESS, addr, alen);
	msg_end(r);
}

static void addr_msg(struct reply *r, uint32_t seq, int ifindex, int family, const char *ip,
		     bool local)
{
	struct ifaddrmsg ifa = {.ifa_family = (unsigned char)family,
				.ifa_prefixlen = family == AF_INET ? 16 : 64,
				.ifa_index = (unsigned)ifindex};
	uint8_t a[16];

	assert_int_equal(inet_pton(family, ip, a), 1);
	msg_begin(r, RTM_NEWADDR, seq, &ifa, sizeof(ifa));
	if (family == AF_INET && local) {
		uint8_t peer[4] = {198, 18, 255, 255};

		attr(r, IFA_ADDRESS, peer, 4);
		attr(r, IFA_LOCAL, a, 4);
	} else {
		attr(r, IFA_ADDRESS, a, family == AF_INET ? 4 : 16);
	}
	attr(r, IFA_LABEL, "ib0", 4);
	msg_end(r);
}

static void neigh_msg(struct reply *r, uint32_t seq, int ifindex, int family, const char *ip,
		      uint16_t state, const uint8_t *lladdr, size_t llen)
{
	struct ndmsg nd = {.ndm_family = (unsigned char)family,
			   .ndm_ifindex = ifindex,
			   .ndm_state = state,
			   .ndm_type = RTN_UNICAST};
	uint8_t a[16];

	assert_int_equal(inet_pton(family, ip, a), 1);
	msg_begin(r, RTM_NEWNEIGH, seq, &nd, sizeof(nd));
	attr(r, NDA_DST, a, family == AF_INET ? 4 : 16);
	if (lladdr)
		attr(r, NDA_LLADDR, lladdr, llen);
	msg_end(r);
}

static void gid_of(const char *text, uint8_t gid[16])
{
	assert_int_equal(inet_pton(AF_INET6, text, gid), 1);
}

/* The dump of a host with ib0 (fe80::1:1), its child ib0.8001, and eth0. */
static void host_dump(struct madcm_nl_table *t)
{
	static struct reply r;
	uint8_t hw[20], hw2[20], mac[6] = {2, 0, 0, 0, 0, 1};

	memset(t, 0, sizeof(*t));
	memset(&r, 0, sizeof(r));
	hwaddr(hw, 0x48, "fe80::1:1");
	hwaddr(hw2, 0x49, "fe80::1:1");
	link_msg(&r, 1, 1, ARPHRD_LOOPBACK, "lo", mac, 6);
	link_msg(&r, 1, 2, ARPHRD_ETHER, "eth0", mac, 6);
	link_msg(&r, 1, 3, ARPHRD_INFINIBAND, "ib0", hw, 20);
	link_msg(&r, 1, 4, ARPHRD_INFINIBAND, "ib0.8001", hw2, 20);
	done(&r, 1);
	assert_int_equal(madcm_nl_parse(t, r.buf, r.len, 1), 1);

	memset(&r, 0, sizeof(r));
	addr_msg(&r, 2, 2, AF_INET, "192.0.2.10", true); /* eth0: not ours */
	addr_msg(&r, 2, 3, AF_INET6, "fe80::1:1", false);
	addr_msg(&r, 2, 3, AF_INET, "198.18.0.1", true);
	addr_msg(&r, 2, 3, AF_INET6, "2001:db8::1", false);
	addr_msg(&r, 2, 4, AF_INET, "198.19.0.1", true);
	done(&r, 2);
	assert_int_equal(madcm_nl_parse(t, r.buf, r.len, 2), 1);

	memset(&r, 0, sizeof(r));
	hwaddr(hw, 0x99, "fe80::1:2");
	neigh_msg(&r, 3, 3, AF_INET, "198.18.0.2", NUD_REACHABLE, hw, 20);
	neigh_msg(&r, 3, 3, AF_INET6, "2001:db8::2", NUD_STALE, hw, 20);
	hwaddr(hw, 0x99, "fe80::1:3");
	neigh_msg(&r, 3, 3, AF_INET, "198.18.0.3", NUD_FAILED, hw, 20);	     /* skipped */
	neigh_msg(&r, 3, 3, AF_INET, "198.18.0.4", NUD_INCOMPLETE, NULL, 0); /* skipped */
	neigh_msg(&r, 3, 2, AF_INET, "192.0.2.1", NUD_REACHABLE, mac, 6);    /* eth0 */
	neigh_msg(&r, 3, 3, AF_INET, "198.18.0.5", NUD_PERMANENT, mac, 6);   /* bad lladdr */
	hwaddr(hw, 0x99, "fe80::1:6");
	neigh_msg(&r, 3, 4, AF_INET, "198.19.0.6", NUD_PERMANENT, hw, 20);
	done(&r, 3);
	assert_int_equal(madcm_nl_parse(t, r.buf, r.len, 3), 1);
}

static void test_links_addrs_neighs(void **state)
{
	struct madcm_nl_table t;
	const struct madcm_nl_link *l;
	const struct madcm_nl_ip *ip;
	uint8_t a[16], gid[16], want[16];
	char text[64];

	(void)state;
	host_dump(&t);
	assert_int_equal(t.nlinks, 2);
	l = madcm_nl_link_find(&t, 3);
	assert_non_null(l);
	assert_string_equal(l->name, "ib0");
	gid_of("fe80::1:1", want);
	assert_memory_equal(l->gid, want, 16);
	assert_null(madcm_nl_link_find(&t, 2));
	assert_int_equal(t.naddrs, 4);
	assert_int_equal(t.nneighs, 3);

	/* neighbour IP -> GID of its lladdr */
	inet_pton(AF_INET, "198.18.0.2", a);
	assert_int_equal(madcm_nl_gid(&t, AF_INET, a, gid), 0);
	gid_of("fe80::1:2", want);
	assert_memory_equal(gid, want, 16);
	inet_pton(AF_INET6, "2001:db8::2", a);
	assert_int_equal(madcm_nl_gid(&t, AF_INET6, a, gid), 0);
	assert_memory_equal(gid, want, 16);
	/* local address -> own GID; IFA_LOCAL, not the peer IFA_ADDRESS */
	inet_pton(AF_INET, "198.18.0.1", a);
	assert_int_equal(madcm_nl_gid(&t, AF_INET, a, gid), 0);
	gid_of("fe80::1:1", want);
	assert_memory_equal(gid, want, 16);
	inet_pton(AF_INET, "198.18.255.255", a);
	assert_int_equal(madcm_nl_gid(&t, AF_INET, a, gid), -ENOENT);
	/* failed, incomplete, Ethernet and non-IPoIB lladdr neighbours are not kept */
	inet_pton(AF_INET, "198.18.0.3", a);
	assert_int_equal(madcm_nl_gid(&t, AF_INET, a, gid), -ENOENT);
	inet_pton(AF_INET, "198.18.0.4", a);
	assert_int_equal(madcm_nl_gid(&t, AF_INET, a, gid), -ENOENT);
	inet_pton(AF_INET, "192.0.2.1", a);
	assert_int_equal(madcm_nl_gid(&t, AF_INET, a, gid), -ENOENT);
	inet_pton(AF_INET, "192.0.2.10", a);
	assert_int_equal(madcm_nl_gid(&t, AF_INET, a, gid), -ENOENT);

	/* GID -> local address, a global IPv6 one before the link-local one */
	gid_of("fe80::1:1", want);
	ip = madcm_nl_local_ip(&t, want, AF_INET6);
	assert_non_null(ip);
	inet_ntop(AF_INET6, ip->ip, text, sizeof(text));
	assert_string_equal(text, "2001:db8::1");
	ip = madcm_nl_local_ip(&t, want, AF_INET);
	assert_non_null(ip);
	inet_ntop(AF_INET, ip->ip, text, sizeof(text));
	assert_string_equal(text, "198.18.0.1");
	gid_of("fe80::1:2", want);
	assert_null(madcm_nl_local_ip(&t, want, AF_INET));
	madcm_nl_table_free(&t);
}

static void test_done_error_seq(void **state)
{
	struct madcm_nl_table t = {0};
	struct reply r = {0};
	uint8_t hw[20];
	struct {
		int error;
		struct nlmsghdr orig;
	} e = {.error = -EPERM};

	(void)state;
	hwaddr(hw, 1, "fe80::5");
	/* a part without NLMSG_DONE: more to come */
	link_msg(&r, 7, 9, ARPHRD_INFINIBAND, "ib1", hw, 20);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 7), 0);
	assert_int_equal(t.nlinks, 1);
	/* another sequence number: stale, skipped; seq 0 takes all */
	memset(&r, 0, sizeof(r));
	link_msg(&r, 6, 10, ARPHRD_INFINIBAND, "ib2", hw, 20);
	done(&r, 6);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 7), 0);
	assert_int_equal(t.nlinks, 1);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 0), 1);
	assert_int_equal(t.nlinks, 2);
	/* the same link again replaces it */
	memset(&r, 0, sizeof(r));
	hwaddr(hw, 1, "fe80::6");
	link_msg(&r, 7, 9, ARPHRD_INFINIBAND, "ib1", hw, 20);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 7), 0);
	assert_int_equal(t.nlinks, 2);
	assert_int_equal(madcm_nl_link_find(&t, 9)->gid[15], 6);
	/* an IB link whose address is not 20 bytes is no IPoIB link */
	memset(&r, 0, sizeof(r));
	link_msg(&r, 7, 11, ARPHRD_INFINIBAND, "ibx", hw, 8);
	link_msg(&r, 7, 12, ARPHRD_INFINIBAND, "iby", NULL, 0);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 7), 0);
	assert_int_equal(t.nlinks, 2);
	/* NLMSG_ERROR: its errno; 0 is an acknowledgement */
	memset(&r, 0, sizeof(r));
	msg_begin(&r, NLMSG_ERROR, 7, &e, sizeof(e));
	msg_end(&r);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 7), -EPERM);
	e.error = 0;
	memset(&r, 0, sizeof(r));
	msg_begin(&r, NLMSG_ERROR, 7, &e, sizeof(e));
	msg_end(&r);
	done(&r, 7);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 7), 1);
	/* unknown message types are skipped */
	memset(&r, 0, sizeof(r));
	msg_begin(&r, RTM_NEWROUTE, 7, hw, 12);
	msg_end(&r);
	done(&r, 7);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 7), 1);
	assert_int_equal(madcm_nl_parse(&t, r.buf, 0, 7), 0);
	madcm_nl_table_free(&t);
}

static void test_malformed(void **state)
{
	struct madcm_nl_table t = {0};
	struct reply r = {0};
	uint8_t hw[20], copy[8192];
	uint32_t bad;
	size_t one;

	(void)state;
	hwaddr(hw, 1, "fe80::5");
	link_msg(&r, 1, 3, ARPHRD_INFINIBAND, "ib0", hw, 20);
	one = r.len;
	/* cut anywhere inside the message: never read past the end */
	for (size_t cut = 1; cut < one; cut++) {
		memcpy(copy, r.buf, cut);
		assert_int_equal(madcm_nl_parse(&t, copy, cut, 1), -EINVAL);
	}
	assert_int_equal(t.nlinks, 0);
	/* nlmsg_len shorter than a header, or longer than the buffer */
	memcpy(copy, r.buf, one);
	bad = 8;
	memcpy(copy, &bad, 4);
	assert_int_equal(madcm_nl_parse(&t, copy, one, 1), -EINVAL);
	bad = (uint32_t)one + 4;
	memcpy(copy, &bad, 4);
	assert_int_equal(madcm_nl_parse(&t, copy, one, 1), -EINVAL);
	/* an attribute longer than its message */
	memcpy(copy, r.buf, one);
	copy[NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct ifinfomsg))] = 0xff;
	assert_int_equal(madcm_nl_parse(&t, copy, one, 1), -EINVAL);
	/* a body shorter than its fixed header */
	memset(&r, 0, sizeof(r));
	msg_begin(&r, RTM_NEWNEIGH, 1, hw, 4);
	msg_end(&r);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 1), -EINVAL);
	/* an error message too short for its errno */
	memset(&r, 0, sizeof(r));
	msg_begin(&r, NLMSG_ERROR, 1, hw, 0);
	msg_end(&r);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 1), -EINVAL);
	/* unaligned buffer */
	memset(&r, 0, sizeof(r));
	link_msg(&r, 1, 3, ARPHRD_INFINIBAND, "ib0", hw, 20);
	memcpy(copy + 1, r.buf, r.len);
	assert_int_equal(madcm_nl_parse(&t, copy + 1, r.len, 1), 0);
	assert_int_equal(t.nlinks, 1);
	madcm_nl_table_free(&t);
}

static void test_addrs_with_netlink(void **state)
{
	struct madcm_nl_table t;
	struct madcm_addrs_params p = {.file = ""};
	struct madcm_addrs *a;
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr_in6 *s6;
	struct sockaddr_storage out[4];
	uint8_t gid[16], want[16];
	char path[] = "/tmp/test_addr_netlink.XXXXXX", text[64];
	int fd;

	(void)state;
	host_dump(&t);
	p.netlink = &t;
	/* netlink only */
	assert_int_equal(madcm_addrs_open_params(&a, &p, NULL, 0), 0);
	inet_pton(AF_INET, "198.18.0.2", &s4.sin_addr);
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s4, gid), 0);
	gid_of("fe80::1:2", want);
	assert_memory_equal(gid, want, 16);
	gid_of("fe80::1:1", want);
	assert_int_equal(madcm_addrs_ip(a, want, AF_UNSPEC, &out[0]), 0);
	assert_int_equal(out[0].ss_family, AF_INET);
	madcm_addrs_close(a);

	/* the file comes first; its name lines pick up the IPoIB addresses */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	dprintf(fd, "198.18.0.2 fe80::9:9\nme fe80::1:1\n");
	close(fd);
	p.file = path;
	assert_int_equal(madcm_addrs_open_params(&a, &p, NULL, 0), 0);
	madcm_nl_table_free(&t); /* the handle holds a copy */
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s4, gid), 0);
	gid_of("fe80::9:9", want);
	assert_memory_equal(gid, want, 16);
	inet_pton(AF_INET, "198.18.0.1", &s4.sin_addr);
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s4, gid), 0);
	gid_of("fe80::1:1", want);
	assert_memory_equal(gid, want, 16);
	assert_int_equal(madcm_addrs_name(a, "me", AF_UNSPEC, out, 4), 4);
	assert_int_equal(out[0].ss_family, AF_INET);
	assert_int_equal(out[1].ss_family, AF_INET);
	assert_int_equal(out[2].ss_family, AF_INET6);
	s6 = (struct sockaddr_in6 *)&out[3];
	inet_ntop(AF_INET6, &s6->sin6_addr, text, sizeof(text));
	assert_string_equal(text, "fe80::1:1");
	assert_int_equal(s6->sin6_scope_id, 3); /* link-local: the interface */
	madcm_addrs_close(a);
	unlink(path);
}

/* A nested attribute's header, its length patched by nest_end. */
static size_t nest_begin(struct reply *r, uint16_t type)
{
	struct rtattr a = {.rta_len = 0, .rta_type = type};
	size_t at = r->len;

	memcpy(r->buf + r->len, &a, sizeof(a));
	r->len += sizeof(a);
	return at;
}

static void nest_end(struct reply *r, size_t at)
{
	unsigned short l = (unsigned short)(r->len - at);

	memcpy(r->buf + at, &l, sizeof(l)); /* rta_len comes first */
}

/*
 * The P_Key of an IPoIB link, as the kernel's ipoib_netlink.c reports a
 * child interface: IFLA_LINKINFO { IFLA_INFO_KIND "ipoib", IFLA_INFO_DATA
 * { IFLA_IPOIB_PKEY (u16, host order), ... } }; without it, the broadcast
 * address's bytes 8-9.  Addresses and neighbours of a link carry its P_Key.
 */
static void test_link_pkey(void **state)
{
	struct madcm_nl_table t = {0};
	struct reply r = {.len = 0};
	uint8_t hw1[20], hw2[20], hw3[20], bc[20], peer[20], ip[4];
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_type = ARPHRD_INFINIBAND};
	const struct madcm_nl_ip *e;
	uint16_t pk = 0x8001, mode = 1;
	size_t li, data;

	(void)state;
	hwaddr(hw1, 0x48, "fe80::2:c903:0:1");
	hwaddr(hw2, 0x49, "fe80::2:c903:0:1");
	hwaddr(hw3, 0x4a, "fe80::2:c903:0:1");
	hwaddr(peer, 0x50, "fe80::2:c903:0:2");
	/* ib0.8001: the child interface of partition 0x8001 */
	ifi.ifi_index = 5;
	msg_begin(&r, RTM_NEWLINK, 1, &ifi, sizeof(ifi));
	attr(&r, IFLA_IFNAME, "ib0.8001", 9);
	attr(&r, IFLA_ADDRESS, hw1, 20);
	li = nest_begin(&r, IFLA_LINKINFO);
	attr(&r, IFLA_INFO_KIND, "ipoib", 6);
	data = nest_begin(&r, IFLA_INFO_DATA);
	attr(&r, IFLA_IPOIB_PKEY, &pk, sizeof(pk));
	attr(&r, IFLA_IPOIB_MODE, &mode, sizeof(mode));
	nest_end(&r, data);
	nest_end(&r, li);
	msg_end(&r);
	/* ib1: no link info, partition 0x0002 (a limited member) in its broadcast address */
	assert_int_equal(inet_pton(AF_INET6, "ff12:401b:0002::ffff:ffff", bc + 4), 1);
	memset(bc, 0, 4);
	bc[3] = 0xff;
	ifi.ifi_index = 6;
	msg_begin(&r, RTM_NEWLINK, 1, &ifi, sizeof(ifi));
	attr(&r, IFLA_IFNAME, "ib1", 4);
	attr(&r, IFLA_ADDRESS, hw2, 20);
	attr(&r, IFLA_BROADCAST, bc, 20);
	msg_end(&r);
	/* ib2: neither: the default partition */
	link_msg(&r, 1, 7, ARPHRD_INFINIBAND, "ib2", hw3, 20);
	addr_msg(&r, 1, 5, AF_INET, "10.1.0.1", true);
	addr_msg(&r, 1, 6, AF_INET, "10.2.0.1", true);
	addr_msg(&r, 1, 7, AF_INET, "10.3.0.1", true);
	neigh_msg(&r, 1, 5, AF_INET, "10.1.0.2", NUD_REACHABLE, peer, 20);
	done(&r, 1);
	assert_int_equal(madcm_nl_parse(&t, r.buf, r.len, 1), 1);
	assert_int_equal(t.nlinks, 3);
	assert_int_equal(madcm_nl_link_find(&t, 5)->pkey, 0x8001);
	assert_int_equal(madcm_nl_link_find(&t, 6)->pkey, 0x0002);
	assert_int_equal(madcm_nl_link_find(&t, 7)->pkey, 0xffff);
	assert_int_equal(inet_pton(AF_INET, "10.1.0.2", ip), 1);
	e = madcm_nl_find(&t, AF_INET, ip);
	assert_non_null(e);
	assert_int_equal(e->pkey, 0x8001);
	assert_int_equal(e->gid[15], 2);
	assert_int_equal(inet_pton(AF_INET, "10.2.0.1", ip), 1);
	e = madcm_nl_find(&t, AF_INET, ip);
	assert_non_null(e);
	assert_int_equal(e->pkey, 0x0002);
	assert_int_equal(inet_pton(AF_INET, "10.3.0.1", ip), 1);
	assert_int_equal(madcm_nl_find(&t, AF_INET, ip)->pkey, 0xffff);

	/* through madcm_addrs_gid_pkey */
	{
		struct madcm_addrs_params p = {.file = "", .netlink = &t};
		struct madcm_addrs *a;
		struct sockaddr_in s4 = {.sin_family = AF_INET};
		uint8_t gid[16];
		uint16_t pkey = 0;

		assert_int_equal(madcm_addrs_open_params(&a, &p, NULL, 0), 0);
		assert_int_equal(inet_pton(AF_INET, "10.1.0.2", &s4.sin_addr), 1);
		assert_int_equal(madcm_addrs_gid_pkey(a, (struct sockaddr *)&s4, gid, &pkey), 0);
		assert_int_equal(pkey, 0x8001);
		assert_int_equal(inet_pton(AF_INET, "10.3.0.1", &s4.sin_addr), 1);
		assert_int_equal(madcm_addrs_gid_pkey(a, (struct sockaddr *)&s4, gid, &pkey), 0);
		assert_int_equal(pkey, 0xffff);
		madcm_addrs_close(a);
	}
	madcm_nl_table_free(&t);
}

/* On a real host: whatever is there (here: no IPoIB), quietly. */
static void test_live_dump(void **state)
{
	struct madcm_nl_table t = {0};
	int rc;

	(void)state;
	rc = madcm_nl_dump(&t);
	assert_true(rc <= 0);
	for (size_t i = 0; i < t.naddrs; i++)
		assert_non_null(madcm_nl_link_find(&t, t.addrs[i].ifindex));
	if (t.nlinks == 0) {
		assert_int_equal(t.naddrs, 0);
		assert_int_equal(t.nneighs, 0);
	}
	madcm_nl_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_links_addrs_neighs), cmocka_unit_test(test_done_error_seq),
	    cmocka_unit_test(test_malformed),	       cmocka_unit_test(test_addrs_with_netlink),
	    cmocka_unit_test(test_live_dump),	       cmocka_unit_test(test_link_pkey),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
