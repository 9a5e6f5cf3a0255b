/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the rtnetlink parsers.  With the low bit of the first byte clear,
 * the rest is a received buffer as is; otherwise the bytes are framed
 * into well-formed messages (links, addresses, neighbours, done, error)
 * with fuzzed fixed headers and attributes, so the parsing goes past the
 * framing.  Whatever was kept is then looked up through madcm_addrs_*.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/if_arp.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "lib/addr.h"
#include "lib/addr_netlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t take(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

/* Frame the input into messages in out[]; returns the length. */
static size_t frame(struct in *in, uint8_t *out, size_t cap)
{
	/* kinds: 0 link, 1 address, 2 neighbour, 3 done, 4 error, 5 other */
	static const uint16_t types[] = {RTM_NEWLINK, RTM_NEWADDR, RTM_NEWNEIGH,
					 NLMSG_DONE,  NLMSG_ERROR, RTM_NEWROUTE};
	static const size_t fixed[] = {
	    sizeof(struct ifinfomsg), sizeof(struct ifaddrmsg), sizeof(struct ndmsg), 4, 4, 12};
	static const uint8_t kinds[16] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 3, 4, 5};
	size_t len = 0;

	while (in->n && len + 512 < cap) {
		uint8_t sel = kinds[take(in) % 16];
		struct nlmsghdr h = {.nlmsg_type = types[sel], .nlmsg_seq = 0};
		size_t start = len, body = NLMSG_HDRLEN;
		uint8_t nattr = take(in) % 6;

		memset(out + start, 0, 512);
		for (size_t i = 0; i < fixed[sel]; i++)
			out[start + body + i] = take(in);
		if (sel == 0) { /* mostly InfiniBand links */
			uint16_t t = (take(in) & 3) ? ARPHRD_INFINIBAND : ARPHRD_ETHER;

			memcpy(out + start + body + 2, &t, 2);
		}
		if (sel == 1 || sel == 2) /* mostly IPv4 / IPv6 */
			out[start + body] = (take(in) & 3) ? (take(in) & 1 ? AF_INET : AF_INET6)
							   : out[start + body];
		if (sel <= 2) {
			/* a few interfaces, so addresses meet their links (all at offset 4) */
			int32_t ifindex = take(in) % 4;

			memcpy(out + start + body + 4, &ifindex, 4);
		}
		if (sel == 2 && (take(in) & 3)) /* mostly a usable neighbour state */
			out[start + body + 8] &= (uint8_t) ~(NUD_INCOMPLETE | NUD_FAILED);
		body += NLMSG_ALIGN(fixed[sel]);
		for (uint8_t a = 0; a < nattr; a++) {
			struct rtattr ra;
			uint8_t alen = take(in) % 24;
			uint8_t ip = out[start + NLMSG_HDRLEN] == AF_INET ? 4 : 16;

			ra.rta_type = take(in) % 4;
			/* mostly the length the attribute has in that message */
			if (take(in) & 3)
				alen = sel == 0	  ? (ra.rta_type == 3 ? 4 : 20)
				       : sel == 2 ? (ra.rta_type == 2 ? 20 : ip)
						  : ip;
			ra.rta_len = (unsigned short)RTA_LENGTH(alen);
			memcpy(out + start + body, &ra, sizeof(ra));
			for (uint8_t i = 0; i < alen; i++)
				out[start + body + sizeof(ra) + i] = take(in);
			body += RTA_ALIGN(ra.rta_len);
		}
		h.nlmsg_len = (uint32_t)body;
		memcpy(out + start, &h, sizeof(h));
		len = start + NLMSG_ALIGN(body);
	}
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[1 << 16];
	struct madcm_nl_table t = {0};
	struct madcm_addrs_params p = {.file = ""};
	struct madcm_addrs *a;
	struct sockaddr_storage out[4];
	int rc;

	if (size == 0)
		return 0;
	if (!(data[0] & 1)) {
		rc = madcm_nl_parse(&t, data + 1, size - 1, 0);
	} else {
		struct in in = {data + 1, size - 1};
		size_t len = frame(&in, buf, sizeof(buf));

		rc = madcm_nl_parse(&t, buf, len, 0);
	}
	if (rc > 1)
		abort();
	/* what was kept is consistent: addresses and neighbours of kept links */
	for (size_t i = 0; i < t.naddrs; i++)
		if (!madcm_nl_link_find(&t, t.addrs[i].ifindex) ||
		    (t.addrs[i].family != AF_INET && t.addrs[i].family != AF_INET6))
			abort();
	for (size_t i = 0; i < t.nneighs; i++)
		if (!madcm_nl_link_find(&t, t.neighs[i].ifindex))
			abort();

	p.netlink = &t;
	if (madcm_addrs_open_params(&a, &p, NULL, 0) == 0) {
		for (size_t i = 0; i < t.naddrs; i++) {
			const struct madcm_nl_ip *e = &t.addrs[i];
			struct sockaddr_storage s;
			static const uint8_t mapped[12] = {0, 0, 0, 0, 0,    0,
							   0, 0, 0, 0, 0xff, 0xff};
			uint8_t gid[16];

			if (e->family == AF_INET6 && !memcmp(e->ip, mapped, 12))
				continue; /* looked up as the IPv4 address it maps */
			memset(&s, 0, sizeof(s));
			s.ss_family = (sa_family_t)e->family;
			if (e->family == AF_INET)
				memcpy(&((struct sockaddr_in *)&s)->sin_addr, e->ip, 4);
			else
				memcpy(&((struct sockaddr_in6 *)&s)->sin6_addr, e->ip, 16);
			if (madcm_addrs_gid(a, (struct sockaddr *)&s, gid))
				abort(); /* a local address always resolves */
			if (madcm_addrs_ip(a, e->gid, e->family, out))
				abort();
		}
		madcm_addrs_name(a, "h1", AF_UNSPEC, out, 4);
		madcm_addrs_close(a);
	}
	madcm_nl_table_free(&t);
	return 0;
}
