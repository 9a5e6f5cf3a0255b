/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* RoCE ports for lib/: see lib/cma_roce.h. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <infiniband/ib.h>

#include "cm/runtime.h"
#include "lib/cma.h"
#include "lib/cma_roce.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

/* ---- the GID table (sysfs) ---- */

/* Read a small sysfs file into buf, without the trailing newline. */
static int read_line(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		n--;
	buf[n] = '\0';
	return 0;
}

/* "fe80:0000:...:3401" (sysfs gids/N) -> 16 bytes. */
static int parse_gid(const char *s, uint8_t gid[16])
{
	for (int i = 0; i < 8; i++) {
		unsigned v = 0;
		int k;

		for (k = 0; k < 4; k++, s++) {
			unsigned c = (unsigned char)*s;

			if (c >= '0' && c <= '9')
				v = v * 16 + c - '0';
			else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
				v = v * 16 + (c | 0x20) - 'a' + 10;
			else
				return -EINVAL;
		}
		gid[2 * i] = (uint8_t)(v >> 8);
		gid[2 * i + 1] = (uint8_t)v;
		if (i < 7 && *s++ != ':')
			return -EINVAL;
	}
	return *s ? -EINVAL : 0;
}

int cma_roce_read_gids(const char *sysfs, const char *dev, unsigned port, struct cma_gid_table *t)
{
	static const uint8_t zero[16];
	char dir[256], path[320], line[64];
	unsigned empty = 0;

	t->n = 0;
	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports/%u", sysfs, dev, port);
	for (unsigned i = 0; i < 4096 && empty < 64 && t->n < CMA_ROCE_MAX_GIDS; i++) {
		struct cma_gid_entry *e = &t->e[t->n];

		snprintf(path, sizeof(path), "%s/gids/%u", dir, i);
		if (read_line(path, line, sizeof(line))) {
			if (i == 0)
				return -ENOENT;
			break; /* past the end of the table */
		}
		if (parse_gid(line, e->gid) || !memcmp(e->gid, zero, 16)) {
			empty++;
			continue;
		}
		empty = 0;
		e->index = (uint16_t)i;
		snprintf(path, sizeof(path), "%s/gid_attrs/types/%u", dir, i);
		/* An entry that went away between the reads has no type. */
		if (read_line(path, line, sizeof(line)))
			continue;
		e->type = strstr(line, "v2") ? CMA_GID_ROCE_V2 : CMA_GID_IB_ROCE_V1;
		snprintf(path, sizeof(path), "%s/gid_attrs/ndevs/%u", dir, i);
		if (read_line(path, e->ndev, sizeof(e->ndev)))
			e->ndev[0] = '\0';
		t->n++;
	}
	return 0;
}

/* ---- addresses and GIDs ---- */

int cma_roce_addr_gid(const struct sockaddr *sa, uint8_t gid[16])
{
	switch (sa->sa_family) {
	case AF_INET:
		memset(gid, 0, 10);
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	case AF_INET6:
		memcpy(gid, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	case AF_IB:
		memcpy(gid, &((const struct sockaddr_ib *)sa)->sib_addr, 16);
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

int cma_roce_gid_addr(const uint8_t gid[16], int family, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)out;

		if (!cma_roce_gid_v4mapped(gid))
			return -EAFNOSUPPORT;
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, gid + 12, 4);
		return 0;
	}
	if (family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)out;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, gid, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int cma_roce_gid_index(const struct cma_gid_table *t, const uint8_t gid[16])
{
	int best = -1;

	for (unsigned i = 0; i < t->n; i++)
		if (!memcmp(t->e[i].gid, gid, 16)) {
			if (t->e[i].type == CMA_GID_ROCE_V2)
				return (int)i;
			if (best < 0)
				best = (int)i;
		}
	return best;
}

static bool linklocal(const uint8_t g[16])
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

/* How well a local GID suits a destination: 0 not at all, higher better. */
static int suits(const struct cma_gid_entry *e, const uint8_t dgid[16])
{
	int s;

	if (cma_roce_gid_v4mapped(dgid))
		s = cma_roce_gid_v4mapped(e->gid) ? 2 : 0;
	else if (cma_roce_gid_v4mapped(e->gid))
		s = 0;
	else if (linklocal(dgid))
		s = linklocal(e->gid) ? 2 : 0;
	else if (!memcmp(e->gid, dgid, 8))
		s = 3;
	else
		s = linklocal(e->gid) ? 0 : 1;
	return s ? 2 * s + (e->type == CMA_GID_ROCE_V2) : 0;
}

const struct cma_gid_entry *cma_roce_sgid_for(const struct cma_gid_table *t, const uint8_t dgid[16])
{
	const struct cma_gid_entry *best = NULL;
	int bs = 0;

	for (unsigned i = 0; i < t->n; i++) {
		int s = suits(&t->e[i], dgid);

		if (s > bs) {
			bs = s;
			best = &t->e[i];
		}
	}
	return best;
}

/* ---- routes ---- */

uint8_t cma_roce_netdev_mtu(unsigned netdev_mtu)
{
	/* GRH/IP + UDP + BTH + the largest extended headers + ICRC (iboe_get_mtu). */
	unsigned room = netdev_mtu > 96 ? netdev_mtu - 96 : 0;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	if (room >= 256)
		return IBV_MTU_256;
	return 0;
}

uint32_t cma_roce_flow_label(const struct sockaddr *src, const struct sockaddr *dst)
{
	uint32_t fl = 0;

	if (src->sa_family == AF_INET6)
		fl = ntohl(((const struct sockaddr_in6 *)src)->sin6_flowinfo) & 0xfffff;
	if (!fl)
		fl = ((uint32_t)cma_addr_port(src) * 31u + cma_addr_port(dst)) & 0xfffff;
	return fl;
}

void cma_roce_path(struct cm_path *out, const uint8_t sgid[16], const uint8_t dgid[16],
		   enum cma_gid_type type, uint8_t port_mtu, unsigned netdev_mtu, uint8_t tos)
{
	uint8_t mtu = netdev_mtu ? cma_roce_netdev_mtu(netdev_mtu) : port_mtu;

	memset(out, 0, sizeof(*out));
	/* No LIDs on RoCE: the kernel's REQs carry the permissive LID. */
	out->slid = 0xffff;
	out->dlid = 0xffff;
	memcpy(out->sgid, sgid, 16);
	memcpy(out->dgid, dgid, 16);
	out->subnet_local = 0; /* always a GRH (RoCE v1) or an IP header (v2) */
	out->hop_limit = type == CMA_GID_ROCE_V2 ? CMA_ROCE_HOP_LIMIT : 1;
	out->traffic_class = tos;
	out->sl = 0; /* iboe_tos_to_sl without a VLAN */
	out->mtu = port_mtu && (!mtu || port_mtu < mtu) ? port_mtu : mtu;
	out->rate = 0; /* IB_RATE_PORT_CURRENT */
	out->pkey = 0xffff;
	out->packet_life_time = CMA_ROCE_PACKET_LIFETIME;
	/* cm_ack_timeout: the packet life time plus one (the kernel's REQ: 19). */
	out->local_ack_timeout = CMA_ROCE_PACKET_LIFETIME + 1;
}

/* ---- the RoCE ports of this process (filled once by cma_init.c) ---- */

struct roce_port {
	struct cma_port *p;
	uint8_t active_mtu;
	bool read;
	struct cma_gid_table gids;
};

static struct roce_port *rports;
static unsigned nrports;

static struct roce_port *rport_of(const struct cma_port *p)
{
	for (unsigned i = 0; i < nrports; i++)
		if (rports[i].p == p)
			return &rports[i];
	return NULL;
}

bool cma_roce_port(const struct cma_port *p)
{
	return p && rport_of(p) != NULL;
}

void cma_roce_port_init(struct cma_port *p, const struct ibv_port_attr *pa)
{
	struct roce_port *n;

	if (pa->link_layer != IBV_LINK_LAYER_ETHERNET)
		return;
	n = realloc(rports, (nrports + 1) * sizeof(*rports));
	if (!n)
		return;
	rports = n;
	memset(&rports[nrports], 0, sizeof(*rports));
	rports[nrports].p = p;
	rports[nrports].active_mtu = (uint8_t)pa->active_mtu;
	nrports++;
}

void cma_roce_ports_forget(void)
{
	free(rports);
	rports = NULL;
	nrports = 0;
}

/* The port's GID table, (re)read when `again` (an address may be new). */
static const struct cma_gid_table *gids_of(struct roce_port *r, bool again)
{
	if (!r->read || again) {
		if (cma_roce_read_gids("/sys", ibv_get_device_name(r->p->dev->verbs->device),
				       r->p->port_num, &r->gids))
			r->gids.n = 0;
		r->read = true;
	}
	return &r->gids;
}

/*
 * The tables are read by callers with cma.lock (bind, resolve) and without
 * (QP attributes, on the loop or an application thread): a leaf lock of
 * their own, and entries copied out.
 */
static pthread_mutex_t roce_lock = PTHREAD_MUTEX_INITIALIZER;

/* Lookup with one re-read of the table on a miss: the entry, or -ENOENT. */
static int entry_of(struct roce_port *r, const uint8_t gid[16], struct cma_gid_entry *out)
{
	int i;

	pthread_mutex_lock(&roce_lock);
	i = cma_roce_gid_index(gids_of(r, false), gid);
	if (i < 0)
		i = cma_roce_gid_index(gids_of(r, true), gid);
	if (i >= 0 && out)
		*out = r->gids.e[i];
	pthread_mutex_unlock(&roce_lock);
	return i >= 0 ? 0 : -ENOENT;
}

static int index_of(struct roce_port *r, const uint8_t gid[16])
{
	return entry_of(r, gid, NULL) ? -1 : 0;
}

static bool sgid_for(struct roce_port *r, const uint8_t dgid[16], struct cma_gid_entry *out)
{
	const struct cma_gid_entry *e;

	pthread_mutex_lock(&roce_lock);
	e = cma_roce_sgid_for(gids_of(r, false), dgid);
	if (!e)
		e = cma_roce_sgid_for(gids_of(r, true), dgid);
	if (e)
		*out = *e;
	pthread_mutex_unlock(&roce_lock);
	return e != NULL;
}

struct cma_port *cma_roce_bind_port(const struct sockaddr *addr, uint8_t gid[16])
{
	if ((addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
	    cma_roce_addr_gid(addr, gid))
		return NULL;
	for (unsigned i = 0; i < nrports; i++)
		if (index_of(&rports[i], gid) >= 0)
			return rports[i].p;
	return NULL;
}

int cma_roce_resolve(struct cma_id *id, const struct sockaddr *dst, struct cma_port **port,
		     uint8_t sgid[16], uint8_t dgid[16])
{
	struct sockaddr *src = (struct sockaddr *)&id->id.route.addr.src_addr;
	struct cma_gid_entry e;
	struct roce_port *r = NULL;
	bool found = false;

	if ((dst->sa_family != AF_INET && dst->sa_family != AF_INET6) || !nrports ||
	    cma_roce_addr_gid(dst, dgid))
		return -ENOENT;
	if (id->port) {
		r = rport_of(id->port);
		if (!r)
			return -ENOENT;
		found = sgid_for(r, dgid, &e);
	} else {
		for (unsigned i = 0; i < nrports && !found; i++)
			if (rports[i].p->active && (found = sgid_for(&rports[i], dgid, &e)))
				r = &rports[i];
	}
	if (!r || !found)
		return -ENOENT;
	*port = r->p;
	if (!cma_addr_is_wildcard(src) && !cma_roce_addr_gid(src, sgid) && index_of(r, sgid) >= 0)
		return 0;
	memcpy(sgid, e.gid, 16);
	if (cma_addr_is_wildcard(src)) {
		struct sockaddr_storage mine;
		uint16_t sport = cma_addr_port(src);

		if (!cma_roce_gid_addr(e.gid, src->sa_family, &mine)) {
			if (src->sa_family == AF_INET6 && linklocal(e.gid))
				((struct sockaddr_in6 *)&mine)->sin6_scope_id =
				    ((const struct sockaddr_in6 *)dst)->sin6_scope_id;
			memcpy(src, &mine, cma_addr_len((struct sockaddr *)&mine));
			cma_addr_set_port(src, sport);
		}
	}
	return 0;
}

/*
 * The MTU of a netdev, 0 when unknown: asked at every route, as the
 * kernel reads the netdev's, with one ioctl on a socket kept for it
 * (sysfs, where that fails, costs an open, a read and a close).
 */
static unsigned netdev_mtu(const char *ndev)
{
	static int sock = -1;
	char path[96], line[32];
	struct ifreq ifr;
	int fd;

	if (!ndev[0])
		return 0;
	fd = __atomic_load_n(&sock, __ATOMIC_ACQUIRE);
	if (fd < 0) {
		int nfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), old = -1;

		if (nfd >= 0 && !__atomic_compare_exchange_n(&sock, &old, nfd, false,
							     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			close(nfd); /* another thread's came first */
			nfd = old;
		}
		fd = nfd;
	}
	memset(&ifr, 0, sizeof(ifr));
	if (fd >= 0 && strlen(ndev) < sizeof(ifr.ifr_name)) {
		strcpy(ifr.ifr_name, ndev);
		if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
			return (unsigned)ifr.ifr_mtu;
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ndev);
	return read_line(path, line, sizeof(line)) ? 0 : (unsigned)strtoul(line, NULL, 10);
}

int cma_roce_route(struct cma_id *id, struct cm_path *out)
{
	const struct rdma_ib_addr *ib = &id->id.route.addr.addr.ibaddr;
	struct roce_port *r = rport_of(id->port);
	struct cma_gid_entry e;

	if (!r)
		return -ENOENT;
	if (entry_of(r, ib->sgid.raw, &e))
		return -EADDRNOTAVAIL; /* the address went away */
	cma_roce_path(out, ib->sgid.raw, ib->dgid.raw, (enum cma_gid_type)e.type, r->active_mtu,
		      netdev_mtu(e.ndev), id->tos_set ? id->tos : 0);
	/* The CM's MADs leave from the same GID: no table scan below (mad/umad_real.c). */
	out->sgid_index = e.index <= UINT8_MAX ? (uint8_t)e.index : 0;
	if (e.type == CMA_GID_ROCE_V2)
		out->flow_label =
		    cma_roce_flow_label((const struct sockaddr *)&id->id.route.addr.src_addr,
					(const struct sockaddr *)&id->id.route.addr.dst_addr);
	return 0;
}

void cma_roce_ah_attr(struct cma_port *p, struct ibv_ah_attr *ah)
{
	struct roce_port *r = rport_of(p);
	struct cma_gid_entry e;

	if (!r || !ah->is_global)
		return;
	/*
	 * The engine knows the GIDs, not the table: the local GID that
	 * reaches the destination, as the CM MADs' GRH uses (mad/umad_real.c).
	 */
	if (sgid_for(r, ah->grh.dgid.raw, &e))
		ah->grh.sgid_index = (uint8_t)e.index;
}

void cma_roce_qp_attr(struct cma_port *p, struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_AV)
		cma_roce_ah_attr(p, &attr->ah_attr);
}

static int roce_modify_qp(void *ctx, struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	cma_roce_qp_attr(ctx, attr, mask);
	return ibv_modify_qp(qp, attr, mask);
}

void cma_roce_runtime_params(struct cma_port *p, struct cm_runtime_params *rp)
{
	if (!cma_roce_port(p))
		return;
	rp->sa = false; /* no SM or SA on Ethernet */
	rp->modify_qp = roce_modify_qp;
	rp->modify_qp_ctx = p;
}

int cma_roce_kernel_cm_check(void)
{
	char path[160];

	if (access("/sys/module/ib_cm", F_OK))
		return 0;
	for (int d = 0; d < cma.ndevs; d++) {
		const char *name = ibv_get_device_name(cma.devs[d].verbs->device);

		snprintf(path, sizeof(path), "/sys/class/infiniband/%s", name);
		if (access(path, F_OK))
			continue; /* not a kernel device (a simulated one) */
		fprintf(stderr,
			"librdmacm (madcm): the kernel's ib_cm module is loaded: it owns the CM "
			"class (0x07, method Send) of %s and every kernel RDMA port, so madcm "
			"cannot run its CM here; unload it (modprobe -r rdma_ucm rdma_cm ib_cm) "
			"or use rdma-core's librdmacm\n",
			name);
		return -EBUSY;
	}
	return 0;
}

/*
 * A multicast join on RoCE, as the kernel's cma_iboe_join_multicast: no
 * SM or SA, so the membership is made here.  The MGID is the group's IP
 * address as a GID (IPv4 ::ffff:a.b.c.d for RoCE v2, ff0e::ffff:a.b.c.d
 * for v1; an IPv6 group itself, which the kernel refuses on RoCE v2:
 * EOPNOTSUPP), no MLID, P_Key 0xffff, hop limit 64 on RoCE v2 (1 on v1),
 * the port's MTU, traffic class from the id's TOS.  Attaching the QP
 * (rdma_get_cm_event) adds the group to the device; the IGMP report and
 * the netdev's MAC filter come from igmp_join below (IPv4 on RoCE v2, as
 * the kernel).  rec->join_state must be set by the caller.
 */
/* Send-only members send no report (the kernel: !send_only). */
static bool igmp_fd_wanted(const struct sa_mcmember *rec)
{
	return rec->join_state != SA_JOIN_SEND_ONLY_FULL_MEMBER;
}

/*
 * The kernel's cma_igmp_send from user space: a UDP socket that joins the
 * IPv4 group on the entry's netdev.  That sends the IGMP report and puts
 * the group's MAC (01:00:5e:...) in the netdev's filter, which rxe's own
 * attach does not (it adds the IPv6 mapping of the MGID).  The socket
 * lives as long as the membership.  Returns it, or -errno.
 */
static int igmp_join(const struct sockaddr_in *group, const char *ndev)
{
	struct ip_mreqn mr = {.imr_multiaddr = group->sin_addr};
	int fd;

	mr.imr_ifindex = ndev[0] ? (int)if_nametoindex(ndev) : 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int cma_roce_mc_join(struct cma_id *id, const struct sockaddr *addr, uint32_t qkey,
		     struct sa_mcmember *rec, int *igmp_fd)
{
	const struct sockaddr *src = (const struct sockaddr *)&id->id.route.addr.src_addr;
	struct roce_port *r = rport_of(id->port);
	struct cma_gid_entry e;
	uint8_t sgid[16];
	bool v2;

	if (!r)
		return -ENODEV;
	/*
	 * The GID of the id's source address, and its type: the kernel
	 * joins with the port's default GID type, RoCE v2 where the device
	 * has it (a wildcard source: the port's first v2 GID of that family).
	 */
	if (cma_roce_addr_gid(src, sgid) || entry_of(r, sgid, &e)) {
		if (!sgid_for(r, (const uint8_t[16]){[10] = 0xff, [11] = 0xff, [12] = 1}, &e))
			return -EADDRNOTAVAIL;
		memcpy(sgid, e.gid, 16);
	}
	v2 = e.type == CMA_GID_ROCE_V2;
	uint8_t join_state = rec->join_state;

	memset(rec, 0, sizeof(*rec));
	rec->join_state = join_state;
	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)addr;

		if (!v2) {
			rec->mgid[0] = 0xff;
			rec->mgid[1] = 0x0e;
		}
		rec->mgid[10] = rec->mgid[11] = 0xff;
		memcpy(rec->mgid + 12, &sin->sin_addr, 4);
	} else if (addr->sa_family == AF_INET6) {
		if (v2)
			return -EOPNOTSUPP;
		memcpy(rec->mgid, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	memcpy(rec->port_gid, sgid, 16);
	rec->qkey = qkey;
	rec->pkey = 0xffff;
	rec->hop_limit = v2 ? CMA_ROCE_HOP_LIMIT : 1;
	rec->mtu = r->active_mtu;
	rec->tclass = id->tos_set ? id->tos : 0;
	*igmp_fd = -1;
	if (v2 && addr->sa_family == AF_INET && igmp_fd_wanted(rec)) {
		int fd = igmp_join((const struct sockaddr_in *)addr, e.ndev);

		if (fd < 0)
			return fd;
		*igmp_fd = fd;
	}
	return 0;
}
