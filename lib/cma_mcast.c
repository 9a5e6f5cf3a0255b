/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Multicast: rdma_join_multicast(_ex) and rdma_leave_multicast as the
 * kernel's rdma_cm does them on IB (cma.c cma_set_mgid,
 * cma_join_ib_multicast; multicast.c):
 *   - the group address becomes an MGID by the kernel's mapping, so madcm
 *     and kernel members of one group meet in one MGID: IPv4 through
 *     ip_ib_mc_map, IPv6 through ipv6_ib_mc_map (an IPv6 address that is
 *     already an SA MGID is used as it is), scope and P_Key from the IPoIB
 *     broadcast group's MGID, and for RDMA_PS_UDP byte 3 set to 0x01;
 *     AF_IB gives the MGID itself, a wildcard asks the SA for one;
 *   - SL, flow label and traffic class come from the broadcast group's
 *     MCMemberRecord, which madcm asks of the SA (there may be no IPoIB);
 *   - one SA membership per (port, MGID, join state) per process, shared
 *     by the ids that join it and left with the last of them;
 *   - the QP is attached when the application takes MULTICAST_JOIN from
 *     rdma_get_cm_event (librdmacm's ucma_process_join), never for a
 *     send-only full member.
 * The SA join runs on the calling thread; its outcome is queued as
 * MULTICAST_JOIN or MULTICAST_ERROR.  On RoCE there is no SA: the
 * membership is made in cma_roce.c as the kernel's iboe join makes it.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/ib.h>

#include "cm/runtime.h"
#include "lib/cma.h"
#include "lib/cma_roce.h" /* RoCE hooks */
#include "sa/client.h"
#include "sa/sa_wire.h"

/* A process-wide SA membership. */
struct cma_membership {
	struct cma_membership *next;
	struct cma_port *port;
	uint8_t mgid[16];
	uint8_t join_state;
	unsigned refs;
	struct sa_mcmember rec; /* what the SA answered */
	int igmp_fd;		/* RoCE: the IPv4 group held on the netdev, or -1 */
};

static struct cma_membership *memberships;

void cma_mc_forget(void)
{
	memberships = NULL; /* a fork()ed child: the parent's (cma_fork.c) */
}

bool cma_addr_is_multicast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	if (sa->sa_family == AF_IB)
		return ((const uint8_t *)&((const struct sockaddr_ib *)sa)->sib_addr)[0] == 0xff;
	return false;
}

/* The MGID of a group address (cma_set_mgid); `bcast` is the IPoIB broadcast MGID. */
int cma_mgid_of(enum rdma_port_space ps, const struct sockaddr *sa, const uint8_t bcast[16],
		uint8_t mgid[16])
{
	memset(mgid, 0, 16);
	if (cma_addr_is_wildcard(sa))
		return 0; /* the SA assigns one */
	switch (sa->sa_family) {
	case AF_IB:
		memcpy(mgid, &((const struct sockaddr_ib *)sa)->sib_addr, 16);
		return 0;
	case AF_INET: {
		uint32_t ip = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

		mgid[0] = 0xff;
		mgid[1] = (uint8_t)(0x10 | (bcast[1] & 0x0f));
		mgid[2] = 0x40;
		mgid[3] = ps == RDMA_PS_UDP ? 0x01 : 0x1b; /* RDMA CM signature */
		mgid[4] = bcast[4];
		mgid[5] = bcast[5];
		mgid[12] = (uint8_t)((ip >> 24) & 0x0f);
		mgid[13] = (uint8_t)(ip >> 16);
		mgid[14] = (uint8_t)(ip >> 8);
		mgid[15] = (uint8_t)ip;
		return 0;
	}
	case AF_INET6: {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		/* Already an SA-assigned MGID (ff1x:a01b::): used as it is. */
		if (a[0] == 0xff && (a[1] & 0xf0) == 0x10 && a[2] == 0xa0 && a[3] == 0x1b) {
			memcpy(mgid, a, 16);
			return 0;
		}
		mgid[0] = 0xff;
		mgid[1] = (uint8_t)(0x10 | (bcast[1] & 0x0f));
		mgid[2] = 0x60;
		mgid[3] = ps == RDMA_PS_UDP ? 0x01 : 0x1b;
		mgid[4] = bcast[4];
		mgid[5] = bcast[5];
		memcpy(mgid + 6, a + 6, 10);
		return 0;
	}
	default:
		return -EAFNOSUPPORT;
	}
}

/* Joins again after a port or SM change: tries, a second apart. */
#define REJOIN_TRIES 10

static const uint8_t default_bcast[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0,    0,
					  0,	0,    0,    0,	  0xff, 0xff, 0xff, 0xff};

static struct cma_membership *find_membership(struct cma_port *p, const uint8_t mgid[16],
					      uint8_t state)
{
	for (struct cma_membership *m = memberships; m; m = m->next)
		if (m->port == p && m->join_state == state && !memcmp(m->mgid, mgid, 16))
			return m;
	return NULL;
}

/* Join at the SA, or share this process's membership: 0 and *out, or -errno. */
static int membership_get(struct cma_id *id, const struct sockaddr *addr, const uint8_t mgid[16],
			  uint8_t state, struct cma_membership **out)
{
	struct cma_port *p = id->port;
	struct sa_mcmember b, want, got;
	struct cma_membership *m;
	struct cm_runtime *rt;
	uint64_t mask;
	uint32_t qkey;
	int rc, igmp_fd = -1;

	cma_lock();
	m = find_membership(p, mgid, state);
	if (m && memcmp(mgid, (uint8_t[16]){0}, 16)) {
		m->refs++;
		*out = m;
		cma_unlock();
		return 0;
	}
	cma_unlock();
	if (cma_roce_port(p)) { /* RoCE hook: no SA, the membership is made here */
		rc = cma_ud_qkey(id, &qkey);
		memset(&got, 0, sizeof(got));
		got.join_state = state;
		if (!rc)
			rc = cma_roce_mc_join(id, addr, qkey, &got, &igmp_fd);
		if (rc)
			return rc;
		goto made;
	}
	rc = cma_port_runtime(p, &rt);
	if (rc)
		return rc;
	memset(&b, 0, sizeof(b));
	cma_bcast_record(p, &b); /* absent: SL, flow label, TClass 0 */
	rc = cma_ud_qkey(id, &qkey);
	if (rc)
		return rc;
	want = b;
	memcpy(want.mgid, mgid, 16);
	memcpy(want.port_gid, p->gid, 16);
	want.qkey = qkey;
	want.pkey = 0xffff;
	want.join_state = state;
	mask = SA_MCMR_COMP_MGID | SA_MCMR_COMP_PORT_GID | SA_MCMR_COMP_P_KEY |
	       SA_MCMR_COMP_JOIN_STATE | SA_MCMR_COMP_Q_KEY | SA_MCMR_COMP_SL |
	       SA_MCMR_COMP_FLOW_LABEL | SA_MCMR_COMP_TCLASS;
	if (id->id.ps == RDMA_PS_IPOIB)
		mask |= SA_MCMR_COMP_RATE | SA_MCMR_COMP_RATE_SELECTOR | SA_MCMR_COMP_MTU |
			SA_MCMR_COMP_MTU_SELECTOR | SA_MCMR_COMP_HOP_LIMIT;
	rc = sa_mcmember_join(cm_runtime_sa(rt), &want, mask, &got);
	if (rc)
		return rc;
made:
	m = calloc(1, sizeof(*m));
	if (!m) {
		if (igmp_fd >= 0)
			close(igmp_fd);
		return -ENOMEM;
	}
	m->igmp_fd = igmp_fd;
	m->port = p;
	memcpy(m->mgid, got.mgid, 16);
	m->join_state = state;
	m->refs = 1;
	m->rec = got;
	cma_lock();
	{
		/*
		 * Another thread joined the same group meanwhile: the SA holds
		 * one membership for both joins (a join is idempotent), so
		 * share that one rather than keep two that each would leave.
		 */
		struct cma_membership *o = find_membership(p, m->mgid, state);

		if (o && memcmp(mgid, (uint8_t[16]){0}, 16)) {
			o->refs++;
			cma_unlock();
			if (m->igmp_fd >= 0)
				close(m->igmp_fd);
			free(m);
			*out = o;
			return 0;
		}
	}
	m->next = memberships;
	memberships = m;
	cma_unlock();
	*out = m;
	return 0;
}

/* What a Delete at the SA names: this port's membership in the group. */
static void leave_record(const struct cma_membership *m, struct sa_mcmember *out)
{
	*out = m->rec;
	memcpy(out->port_gid, m->port->gid, 16);
	out->join_state = m->join_state;
}

static void membership_put(struct cma_membership *m)
{
	struct cma_membership **pm;
	struct sa_mcmember leave;
	struct cm_runtime *rt;

	cma_lock();
	if (--m->refs) {
		cma_unlock();
		return;
	}
	for (pm = &memberships; *pm; pm = &(*pm)->next)
		if (*pm == m) {
			*pm = m->next;
			break;
		}
	rt = m->port->rt;
	cma_unlock();
	leave_record(m, &leave);
	if (rt && cm_runtime_sa(rt)) /* none on RoCE: nothing to leave */
		sa_mcmember_leave(cm_runtime_sa(rt), &leave, CMA_MC_LEAVE_MASK, NULL);
	if (m->igmp_fd >= 0)
		close(m->igmp_fd);
	free(m);
}

size_t cma_mc_exit_leaves(struct cma_mc_leave **out)
{
	struct cma_mc_leave *l = NULL;
	size_t n = 0, cap = 0;

	cma_assert_locked();
	for (struct cma_membership *m = memberships; m; m = m->next) {
		if (!m->port->rt || !cm_runtime_sa(m->port->rt))
			continue; /* RoCE: no SA (the kernel drops the IGMP join with the fd) */
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct cma_mc_leave *nl = realloc(l, ncap * sizeof(*l));

			if (!nl)
				break;
			l = nl;
			cap = ncap;
		}
		l[n].sa = cm_runtime_sa(m->port->rt);
		leave_record(m, &l[n++].rec);
	}
	*out = l;
	return n;
}

/* One join of one id. */
struct cma_mc {
	struct cma_mc *next;
	struct sockaddr_storage addr;
	void *context;
	uint32_t join_flags;
	struct cma_membership *m; /* NULL when the join failed */
	bool attached;
	struct ibv_qp *qp; /* the QP attached */
};

static void ah_from_rec(const struct cma_id *id, const struct sa_mcmember *r,
			struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = r->mlid;
	ah->sl = r->sl;
	ah->static_rate = r->rate;
	ah->port_num = id->id.port_num;
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, r->mgid, 16);
	ah->grh.flow_label = r->flow_label;
	ah->grh.hop_limit = r->hop_limit;
	ah->grh.traffic_class = r->tclass;
	ah->grh.sgid_index = 0;
	cma_roce_ah_attr(id->port, ah); /* RoCE hook: the source GID's index */
}

static int join(struct rdma_cm_id *cm_id, const struct sockaddr *addr, uint32_t flags,
		void *context)
{
	struct cma_id *id = cma_id_of(cm_id);
	uint8_t bcast[16], mgid[16];
	struct sa_mcmember b;
	struct cma_event *e;
	struct cma_mc *mc;
	socklen_t len = cma_addr_len(addr);
	uint8_t state;
	int rc;

	if (!len)
		return -EAFNOSUPPORT;
	cma_lock();
	rc = (id->state != CMA_ADDR_BOUND && id->state != CMA_ADDR_RESOLVED) ? -EINVAL
	     : !id->port						     ? -ENODEV
									     : 0;
	cma_unlock();
	if (rc)
		return rc;
	if (id->id.qp_type != IBV_QPT_UD)
		return -EINVAL;
	memcpy(bcast, default_bcast, 16);
	if (!cma_roce_port(id->port) && !cma_bcast_record(id->port, &b))
		memcpy(bcast, b.mgid, 16);
	rc = cma_mgid_of(id->id.ps, addr, bcast, mgid); /* RoCE: replaced by the join's */
	if (rc)
		return rc;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	memcpy(&mc->addr, addr, len);
	mc->context = context;
	mc->join_flags = flags;
	state = flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER ? SA_JOIN_SEND_ONLY_FULL_MEMBER
							       : SA_JOIN_FULL_MEMBER;
	rc = membership_get(id, addr, mgid, state, &mc->m);
	cma_lock();
	if (rc) {
		e = cma_event_new(id, RDMA_CM_EVENT_MULTICAST_ERROR, rc);
		mc->m = NULL;
	} else {
		e = cma_event_new(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
		if (e) {
			ah_from_rec(id, &mc->m->rec, &e->ev.param.ud.ah_attr);
			e->ev.param.ud.qp_num = 0xffffff;
			e->ev.param.ud.qkey = mc->m->rec.qkey;
		}
	}
	if (!e) {
		cma_unlock();
		if (mc->m)
			membership_put(mc->m);
		free(mc);
		return -ENOMEM;
	}
	/* The event names the join's context (librdmacm puts it in private_data). */
	e->ev.param.ud.private_data = context;
	e->mc = mc;
	mc->next = id->mcs;
	id->mcs = mc;
	cma_report(id, e);
	cma_unlock();
	return 0;
}

CMA_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	int rc;

	if (!id || !addr)
		return cma_err(EINVAL);
	if (cma_id_inherited(id))
		return cma_err(EBADF);
	rc = join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
	/* A synchronous id waits for its MULTICAST_JOIN, as librdmacm's. */
	return rc ? cma_err(-rc) : cma_complete(cma_id_of(id));
}

CMA_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr,
				      void *context)
{
	int rc;

	if (!id || !attr)
		return cma_err(EINVAL);
	if (cma_id_inherited(id))
		return cma_err(EBADF);
	if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return cma_err(ENOTSUP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) || !attr->addr)
		return cma_err(EINVAL);
	if (attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return cma_err(EINVAL);
	rc = join(id, attr->addr, attr->join_flags, context);
	return rc ? cma_err(-rc) : cma_complete(cma_id_of(id));
}

/* rdma_get_cm_event, MULTICAST_JOIN: attach the id's QP (under cma.lock). */
void cma_mc_on_get(struct cma_id *id, struct cma_event *e)
{
	struct cma_mc *mc = e->mc;

	cma_assert_locked();
	if (!mc || !mc->m || !id->id.qp || mc->attached ||
	    mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return;
	if (ibv_attach_mcast(id->id.qp, (const union ibv_gid *)mc->m->rec.mgid, mc->m->rec.mlid) ==
	    0) {
		mc->attached = true;
		mc->qp = id->id.qp;
	}
}

static bool same_group(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	return a->ss_family == b->sa_family &&
	       (cma_addr_equal((const struct sockaddr *)a, b) ||
		(cma_addr_is_wildcard(b) && cma_addr_is_wildcard((const struct sockaddr *)a)));
}

static void mc_free(struct cma_mc *mc, bool detach)
{
	if (detach && mc->attached && mc->qp)
		ibv_detach_mcast(mc->qp, (const union ibv_gid *)mc->m->rec.mgid, mc->m->rec.mlid);
	if (mc->m)
		membership_put(mc->m);
	free(mc);
}

/* Events of this join still queued and never seen go with it. */
static void drop_queued(struct cma_id *id, struct cma_mc *mc)
{
	for (struct cma_event *e = cma_channel_of(&id->id)->head; e; e = e->next)
		if (e->mc == mc)
			e->mc = NULL;
}

CMA_EXPORT int rdma_leave_multicast(struct rdma_cm_id *cm_id, struct sockaddr *addr)
{
	struct cma_id *id = cma_id_of(cm_id);
	struct cma_mc *mc, **pm;

	if (!cm_id || !addr)
		return cma_err(EINVAL);
	if (cma_id_inherited(cm_id))
		return cma_err(EBADF);
	cma_lock();
	for (pm = &id->mcs; (mc = *pm); pm = &mc->next)
		if (same_group(&mc->addr, addr))
			break;
	if (!mc) {
		cma_unlock();
		return cma_err(EADDRNOTAVAIL);
	}
	*pm = mc->next;
	drop_queued(id, mc);
	cma_unlock();
	mc_free(mc, true);
	return 0;
}

/* rdma_destroy_id: the id's joins end (cma_leave_mc_groups); the QP is the caller's. */
void cma_mc_leave_all(struct cma_id *id)
{
	struct cma_mc *mc;

	for (;;) {
		cma_lock();
		mc = id->mcs;
		if (mc) {
			id->mcs = mc->next;
			drop_queued(id, mc);
		}
		cma_unlock();
		if (!mc)
			return;
		mc_free(mc, false);
	}
}

/* ---- after a port or SM change ---- */

struct rejoin_arg {
	struct cma_membership *m;
	bool ok;
	uint16_t old_mlid;
};

/* Under cma.lock: tell the id's joins on m (error) or move their QP to the new MLID. */
static void rejoined(struct cma_id *id, void *arg)
{
	struct rejoin_arg *a = arg;

	if (id->state == CMA_DESTROYING)
		return;
	for (struct cma_mc *mc = id->mcs; mc; mc = mc->next) {
		struct cma_event *e;

		if (mc->m != a->m)
			continue;
		if (a->ok) {
			if (mc->attached && mc->qp && a->old_mlid != a->m->rec.mlid) {
				ibv_detach_mcast(mc->qp, (const union ibv_gid *)a->m->rec.mgid,
						 a->old_mlid);
				ibv_attach_mcast(mc->qp, (const union ibv_gid *)a->m->rec.mgid,
						 a->m->rec.mlid);
			}
			continue;
		}
		/* As the kernel's multicast.c: the member hears -ENETRESET. */
		e = cma_event_new(id, RDMA_CM_EVENT_MULTICAST_ERROR, -ENETRESET);
		if (e) {
			e->ev.param.ud.private_data = mc->context;
			cma_report(id, e);
		}
	}
}

/*
 * The port came back, its LID or SM changed, or the SM asked clients to
 * register again: the SA may have forgotten this process's memberships.
 * Each is joined again with the record the SA gave it; a group the SA
 * refuses now gets MULTICAST_ERROR to every id in it, never silence.
 */
void cma_mc_rejoin(struct cma_port *p)
{
	struct cma_membership *list[64];
	struct cm_runtime *rt;
	unsigned n = 0;

	if (cma_roce_port(p))
		return; /* RoCE hook: no SA that could have lost them */
	cma_lock();
	for (struct cma_membership *m = memberships; m && n < 64; m = m->next)
		if (m->port == p) {
			m->refs++; /* held while we work without the lock */
			list[n++] = m;
		}
	rt = p->rt;
	cma_unlock();
	for (unsigned i = 0; i < n; i++) {
		struct cma_membership *m = list[i];
		struct rejoin_arg a = {.m = m, .old_mlid = m->rec.mlid};
		struct sa_mcmember want = m->rec, got;

		memcpy(want.port_gid, p->gid, 16);
		want.join_state = m->join_state;
		/*
		 * The SM asks for reregistration while it sweeps, before its
		 * SA may answer: try for a while before telling the members.
		 */
		for (int t = 0; t < REJOIN_TRIES && !a.ok; t++) {
			if (t)
				nanosleep(&(struct timespec){.tv_sec = 1}, NULL);
			a.ok = rt &&
			       !sa_mcmember_join(cm_runtime_sa(rt), &want,
						 SA_MCMR_COMP_MGID | SA_MCMR_COMP_PORT_GID |
						     SA_MCMR_COMP_P_KEY | SA_MCMR_COMP_JOIN_STATE |
						     SA_MCMR_COMP_Q_KEY | SA_MCMR_COMP_SL |
						     SA_MCMR_COMP_FLOW_LABEL | SA_MCMR_COMP_TCLASS,
						 &got);
		}
		cma_lock();
		if (a.ok)
			m->rec = got;
		cma_ids_foreach(rejoined, &a);
		cma_unlock();
		membership_put(m);
	}
}
