/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Fake libibumad port for unit tests (see fake_umad.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "mad/mad_wire.h"
#include "sa/client.h"
#include "sa/sa_wire.h"
#include "fake_umad.h"

unsigned fake_max_mads = 4096;

static int f_list(void *ctx, char names[][MAD_CA_NAME_MAX], int max)
{
	(void)ctx;
	if (max < 1)
		return 0;
	strcpy(names[0], "fake0");
	return 1;
}

static int f_query(void *ctx, const char *ca, int port, struct mad_port_attr *out)
{
	struct fake_umad *f = ctx;

	if (ca && strcmp(ca, "fake0"))
		return -ENODEV;
	if (port > 1 || port < 0)
		return -ENODEV;
	*out = f->port;
	return 0;
}

static int f_open(void *ctx, const char *ca, int port)
{
	struct fake_umad *f = ctx;

	(void)ca;
	(void)port;
	f->open = true;
	return 3;
}

static void f_close(void *ctx, int portid)
{
	struct fake_umad *f = ctx;

	(void)portid;
	f->open = false;
}

static int f_fd(void *ctx, int portid)
{
	struct fake_umad *f = ctx;

	(void)portid;
	return f->evfd;
}

static int f_reg(void *ctx, int portid, uint8_t mgmt_class, uint8_t class_version,
		 uint8_t rmpp_version, const uint32_t method_mask[4])
{
	struct fake_umad *f = ctx;

	(void)portid;
	(void)class_version;
	(void)rmpp_version;
	(void)method_mask;
	if (f->next_agent >= 64)
		return -ENOSPC;
	f->agent_class[f->next_agent] = mgmt_class;
	return f->next_agent++;
}

static int f_unreg(void *ctx, int portid, int agent)
{
	(void)ctx;
	(void)portid;
	(void)agent;
	return 0;
}

static int f_send(void *ctx, int portid, int agent, const void *mad, size_t len,
		  const struct mad_addr *dst, unsigned timeout_ms)
{
	struct fake_umad *f = ctx;
	struct fake_mad *m;

	(void)portid;
	if (f->send_error)
		return f->send_error;
	if (f->nsent == FAKE_MAX_MADS || len > FAKE_MAD_CAP)
		return -ENOBUFS;
	m = &f->sent[f->nsent++];
	memcpy(m->mad, mad, len);
	m->len = len;
	m->agent = agent;
	m->addr = *dst;
	m->timeout_ms = timeout_ms;
	if (f->on_send)
		f->on_send(f, f->nsent - 1, f->on_send_arg);
	return 0;
}

static int f_recv(void *ctx, int portid, void *buf, size_t cap, size_t *len, int *agent,
		  struct mad_addr *src)
{
	struct fake_umad *f = ctx;
	struct fake_mad *m;

	(void)portid;
	if (f->rx_head == f->rx_tail) {
		uint64_t v;

		if (f->evfd >= 0 && read(f->evfd, &v, sizeof(v)) < 0)
			(void)0;
		return -EAGAIN;
	}
	m = &f->rx[f->rx_head % FAKE_MAX_MADS];
	if (m->len > cap) {
		*len = m->len;
		return -ENOSPC;
	}
	f->rx_head++;
	memcpy(buf, m->mad, m->len);
	*len = m->len;
	*agent = m->agent;
	*src = m->addr;
	return 0;
}

const struct mad_umad_ops fake_umad_ops = {
    .list_cas = f_list,
    .query_port = f_query,
    .open_port = f_open,
    .close_port = f_close,
    .get_fd = f_fd,
    .register_agent = f_reg,
    .unregister_agent = f_unreg,
    .send = f_send,
    .recv = f_recv,
};

static void port_defaults(struct fake_umad *f)
{
	strcpy(f->port.ca_name, "fake0");
	f->port.portnum = 1;
	f->port.lid = 5;
	f->port.sm_lid = 1;
	f->port.state = 4;
	f->port.numports = 1;
	f->port.pkey0 = 0xffff;
	f->port.gid[0] = 0xfe;
	f->port.gid[1] = 0x80;
	f->port.gid[15] = 5;
}

void fake_umad_init(struct fake_umad *f)
{
	memset(f, 0, sizeof(*f));
	port_defaults(f);
	f->sent = calloc(FAKE_MAX_MADS, sizeof(*f->sent));
	f->rx = calloc(FAKE_MAX_MADS, sizeof(*f->rx));
	f->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void fake_umad_reset(struct fake_umad *f)
{
	struct fake_mad *sent = f->sent, *rx = f->rx;
	int evfd = f->evfd;
	uint64_t v;

	if (!sent) { /* never initialised */
		fake_umad_init(f);
		return;
	}
	memset(f, 0, sizeof(*f));
	port_defaults(f);
	f->sent = sent;
	f->rx = rx;
	f->evfd = evfd;
	if (read(evfd, &v, sizeof(v)) < 0) {
		/* EAGAIN: it was not readable */
	}
}

void fake_umad_destroy(struct fake_umad *f)
{
	free(f->sent);
	free(f->rx);
	f->sent = f->rx = NULL;
	if (f->evfd >= 0)
		close(f->evfd);
	f->evfd = -1;
}

void fake_umad_inject(struct fake_umad *f, const void *mad, size_t len, int agent,
		      const struct mad_addr *src)
{
	struct fake_mad *m = &f->rx[f->rx_tail % FAKE_MAX_MADS];

	if (len > FAKE_MAD_CAP)
		len = FAKE_MAD_CAP;
	memcpy(m->mad, mad, len);
	m->len = len;
	m->agent = agent;
	if (src) {
		m->addr = *src;
	} else {
		memset(&m->addr, 0, sizeof(m->addr));
		m->addr.lid = 1;
		m->addr.qpn = 1;
		m->addr.qkey = MAD_QP1_QKEY;
	}
	f->rx_tail++;
	if (f->evfd >= 0) {
		uint64_t one = 1;

		if (write(f->evfd, &one, sizeof(one)) < 0)
			(void)0;
	}
}

void fake_umad_respond(struct fake_umad *f, unsigned i, uint8_t method, uint16_t status,
		       const void *data, size_t data_len, size_t data_off)
{
	uint8_t mad[MAD_SIZE];
	const struct fake_mad *req = &f->sent[i];

	memcpy(mad, req->mad, MAD_SIZE);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, method & 0x7f);
	mad_set(mad, mad_hdr_fields, MAD_HDR_STATUS, status);
	if (data && data_off + data_len <= MAD_SIZE)
		memcpy(mad + data_off, data, data_len);
	fake_umad_inject(f, mad, MAD_SIZE, req->agent, NULL);
}

/* ---- the fake fabric (see fake_umad.h) ---- */

static int fb_ca_of(struct fake_fabric *fb, const char *ca)
{
	for (int i = 0; i < fb->ncas; i++)
		if (!ca || !strcmp(ca, fb->ca[i].port.ca_name))
			return i;
	return -1;
}

static int fb_list(void *ctx, char names[][MAD_CA_NAME_MAX], int max)
{
	struct fake_fabric *fb = ctx;
	int n = 0;

	pthread_mutex_lock(&fb->lock);
	for (int i = 0; i < fb->ncas && n < max; i++)
		if (!fb->removed[i])
			strcpy(names[n++], fb->ca[i].port.ca_name);
	pthread_mutex_unlock(&fb->lock);
	return n;
}

void fake_fabric_remove_ca(struct fake_fabric *fb, int ca, bool removed)
{
	uint64_t one = 1;

	pthread_mutex_lock(&fb->lock);
	fb->removed[ca] = removed;
	for (int o = 0; removed && o < FAKE_FABRIC_MAX_OPENS; o++) {
		struct fake_fabric_open *op = &fb->opens[o];

		if (!op->used || op->ca != ca)
			continue;
		op->hung = true;
		if (op->evfd >= 0 && write(op->evfd, &one, sizeof(one)) < 0)
			(void)0; /* cannot fail on a live eventfd */
	}
	pthread_mutex_unlock(&fb->lock);
}

static int fb_query(void *ctx, const char *ca, int port, struct mad_port_attr *out)
{
	struct fake_fabric *fb = ctx;
	int i = fb_ca_of(fb, ca);

	if (i < 0 || port > 1 || port < 0)
		return -ENODEV;
	pthread_mutex_lock(&fb->lock);
	if (fb->removed[i]) {
		pthread_mutex_unlock(&fb->lock);
		return -ENODEV;
	}
	*out = fb->ca[i].port;
	pthread_mutex_unlock(&fb->lock);
	return 0;
}

static int fb_open(void *ctx, const char *ca, int port)
{
	struct fake_fabric *fb = ctx;
	int i = fb_ca_of(fb, ca), rc = -ENOSPC;

	if (i < 0 || port > 1)
		return -ENODEV;
	pthread_mutex_lock(&fb->lock);
	if (fb->removed[i])
		rc = -ENODEV;
	for (int o = 0; !fb->removed[i] && o < FAKE_FABRIC_MAX_OPENS; o++) {
		struct fake_fabric_open *op = &fb->opens[o];

		if (op->used)
			continue;
		op->used = true;
		op->hung = false;
		op->ca = i;
		op->rx_head = op->rx_tail = 0;
		op->rx = calloc(FAKE_MAX_MADS, sizeof(*op->rx));
		op->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		fb->ca[i].open = true;
		rc = o;
		break;
	}
	pthread_mutex_unlock(&fb->lock);
	return rc;
}

static void fb_close(void *ctx, int portid)
{
	struct fake_fabric *fb = ctx;
	struct fake_fabric_open *op = &fb->opens[portid];

	pthread_mutex_lock(&fb->lock);
	for (int a = 0; a < FAKE_FABRIC_MAX_AGENTS; a++)
		if (fb->agents[a].used && fb->agents[a].open == portid)
			fb->agents[a].used = false;
	free(op->rx);
	op->rx = NULL;
	if (op->evfd >= 0)
		close(op->evfd);
	op->evfd = -1;
	op->used = false;
	pthread_mutex_unlock(&fb->lock);
}

static int fb_fd(void *ctx, int portid)
{
	struct fake_fabric *fb = ctx;

	return fb->opens[portid].evfd;
}

static int fb_reg(void *ctx, int portid, uint8_t mgmt_class, uint8_t class_version,
		  uint8_t rmpp_version, const uint32_t method_mask[4])
{
	struct fake_fabric *fb = ctx;
	int rc = -ENOSPC;

	(void)class_version;
	(void)rmpp_version;
	(void)method_mask;
	pthread_mutex_lock(&fb->lock);
	if (mgmt_class == 0x07 && fb->cm_agent_error) {
		rc = fb->cm_agent_error;
		pthread_mutex_unlock(&fb->lock);
		return rc;
	}
	for (int a = 0; a < FAKE_FABRIC_MAX_AGENTS; a++)
		if (!fb->agents[a].used) {
			fb->agents[a].used = true;
			fb->agents[a].open = portid;
			fb->agents[a].mgmt_class = mgmt_class;
			rc = a;
			break;
		}
	pthread_mutex_unlock(&fb->lock);
	return rc;
}

static int fb_unreg(void *ctx, int portid, int agent)
{
	struct fake_fabric *fb = ctx;

	(void)portid;
	pthread_mutex_lock(&fb->lock);
	if (agent >= 0 && agent < FAKE_FABRIC_MAX_AGENTS)
		fb->agents[agent].used = false;
	pthread_mutex_unlock(&fb->lock);
	return 0;
}

/* Under fb->lock. */
static void fb_deliver(struct fake_fabric *fb, int open, int agent, const void *mad, size_t len,
		       const struct mad_addr *src)
{
	struct fake_fabric_open *op = &fb->opens[open];
	struct fake_mad *m;
	uint64_t one = 1;

	if (!op->used || op->rx_tail - op->rx_head >= FAKE_MAX_MADS || len > FAKE_MAD_CAP)
		return;
	m = &op->rx[op->rx_tail++ % FAKE_MAX_MADS];
	memcpy(m->mad, mad, len);
	m->len = len;
	m->agent = agent;
	m->addr = *src;
	if (write(op->evfd, &one, sizeof(one)) < 0)
		(void)0;
}

static int fb_ca_by_gid(struct fake_fabric *fb, const uint8_t gid[16])
{
	for (int i = 0; i < fb->ncas; i++)
		if (!memcmp(fb->ca[i].port.gid, gid, 16))
			return i;
	return -1;
}

/* ---- the SA's multicast groups (sa_mcast) ---- */

/* MCMemberRecords take 7 words of 8 bytes in a table (52 bytes, padded). */
#define FB_MCMR_WORDS ((SA_MCMR_SIZE + 7) / 8)

static struct fake_mcgroup *fb_group(struct fake_fabric *fb, const uint8_t mgid[16])
{
	for (int g = 0; g < FAKE_FABRIC_MAX_GROUPS; g++)
		if (fb->groups[g].used && !memcmp(fb->groups[g].rec.mgid, mgid, 16))
			return &fb->groups[g];
	return NULL;
}

/* Under fb->lock (or before lib/ runs). */
static struct fake_mcgroup *fb_group_new(struct fake_fabric *fb, const struct sa_mcmember *rec,
					 bool permanent)
{
	for (int g = 0; g < FAKE_FABRIC_MAX_GROUPS; g++) {
		struct fake_mcgroup *mg = &fb->groups[g];

		if (mg->used)
			continue;
		memset(mg, 0, sizeof(*mg));
		mg->used = true;
		mg->permanent = permanent;
		mg->rec = *rec;
		memset(mg->rec.port_gid, 0, 16);
		mg->rec.join_state = 0;
		if (!mg->rec.mlid)
			mg->rec.mlid = fb->next_mlid++;
		if (!mg->rec.mgid[0]) {
			/* SA-assigned (ff12:a01b:P_Key::n), as OpenSM makes them. */
			static const uint8_t a[6] = {0xff, 0x12, 0xa0, 0x1b, 0xff, 0xff};

			memcpy(mg->rec.mgid, a, sizeof(a));
			mg->rec.mgid[15] = (uint8_t)(g + 1);
		}
		mg->rec.scope = mg->rec.mgid[1] & 0x0f;
		return mg;
	}
	return NULL;
}

int fake_fabric_add_group(struct fake_fabric *fb, const struct sa_mcmember *rec, bool permanent)
{
	int rc;

	pthread_mutex_lock(&fb->lock);
	rc = fb_group_new(fb, rec, permanent) ? 0 : -ENOSPC;
	pthread_mutex_unlock(&fb->lock);
	return rc;
}

bool fake_fabric_group(struct fake_fabric *fb, const uint8_t mgid[16], struct fake_mcgroup *out)
{
	struct fake_mcgroup *mg;

	pthread_mutex_lock(&fb->lock);
	mg = fb_group(fb, mgid);
	if (mg)
		*out = *mg;
	pthread_mutex_unlock(&fb->lock);
	return mg != NULL;
}

/* Answer request `req` on its agent: method, status, n records (GetTable: one RMPP segment). */
static void fb_sa_answer(struct fake_fabric *fb, int agent, const uint8_t *req, uint8_t method,
			 uint16_t status, const struct sa_mcmember *recs, unsigned n)
{
	struct mad_addr src = {.lid = 1, .qpn = 1, .qkey = MAD_QP1_QKEY};
	uint8_t mad[MAD_SIZE];

	memcpy(mad, req, MAD_SIZE);
	memset(mad + SA_DATA_OFFSET, 0, MAD_SIZE - SA_DATA_OFFSET);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, method & 0x7f);
	mad_set(mad, mad_hdr_fields, MAD_HDR_STATUS, status);
	mad_set(mad + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_ATTRIBUTE_OFFSET, FB_MCMR_WORDS);
	for (unsigned i = 0; i < n && (i + 1) * FB_MCMR_WORDS * 8 <= SA_DATA_SIZE; i++)
		sa_mcmember_encode(&recs[i], mad + SA_DATA_OFFSET + i * FB_MCMR_WORDS * 8);
	if (method == MAD_METHOD_GET_TABLE_RESP) {
		uint8_t *rh = mad + MAD_RMPP_HDR_OFFSET;

		mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, MAD_RMPP_VERSION);
		mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_TYPE, MAD_RMPP_TYPE_DATA);
		mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS,
			MAD_RMPP_FLAG_ACTIVE | MAD_RMPP_FLAG_FIRST | MAD_RMPP_FLAG_LAST);
		mad_set(rh, mad_rmpp_fields, MAD_RMPP_SEGMENT_NUMBER, 1);
		/* The SA header and the records (IBA 13.6.2.3). */
		mad_set(rh, mad_rmpp_fields, MAD_RMPP_PAYLOAD_LENGTH,
			SA_HDR_SIZE + n * FB_MCMR_WORDS * 8);
	}
	fb_deliver(fb, fb->agents[agent].open, agent, mad, MAD_SIZE, &src);
}

/* An MCMemberRecord Set, Delete or GetTable from CA `from`. */
static void fb_sa_mcmember(struct fake_fabric *fb, int from, int agent, const uint8_t *req)
{
	uint64_t mask = mad_get(req + SA_HDR_OFFSET, sa_hdr_fields, SA_HDR_COMPONENT_MASK);
	struct sa_mcmember q, out[3];
	struct fake_mcgroup *mg;
	unsigned n = 0;

	sa_mcmember_decode(req + SA_DATA_OFFSET, &q);
	mg = fb_group(fb, q.mgid);
	switch (req[3]) {
	case MAD_METHOD_SET:
		fb->sa_mc_sets++;
		fb->sa_mc_last_set_state = q.join_state;
		if (fb->sa_mc_set_status) {
			fb_sa_answer(fb, agent, req, MAD_METHOD_GET_RESP, fb->sa_mc_set_status, &q,
				     1);
			return;
		}
		if (memcmp(q.port_gid, fb->ca[from].port.gid, 16) || !q.join_state ||
		    (mg && (mask & SA_MCMR_COMP_Q_KEY) && q.qkey != mg->rec.qkey)) {
			fb_sa_answer(fb, agent, req, MAD_METHOD_GET_RESP, SA_STATUS_REQ_INVALID, &q,
				     1);
			return;
		}
		if (!mg) {
			if (!(mask & SA_MCMR_COMP_MTU))
				q.mtu_selector = 2, q.mtu = 4; /* 2048 */
			if (!(mask & SA_MCMR_COMP_RATE))
				q.rate_selector = 2, q.rate = 3; /* 10 Gb/s */
			q.mlid = 0;
			mg = fb_group_new(fb, &q, false);
			if (!mg) {
				fb_sa_answer(fb, agent, req, MAD_METHOD_GET_RESP,
					     SA_STATUS_NO_RESOURCES, &q, 1);
				return;
			}
		}
		mg->member_state[from] |= q.join_state;
		out[0] = mg->rec;
		memcpy(out[0].port_gid, q.port_gid, 16);
		out[0].join_state = mg->member_state[from];
		fb_sa_answer(fb, agent, req, MAD_METHOD_GET_RESP, 0, out, 1);
		return;
	case MAD_METHOD_DELETE:
		fb->sa_mc_deletes++;
		if (!mg || !(mg->member_state[from] & q.join_state)) {
			fb_sa_answer(fb, agent, req, MAD_METHOD_DELETE_RESP, SA_STATUS_REQ_INVALID,
				     &q, 1);
			return;
		}
		mg->member_state[from] &= (uint8_t)~q.join_state;
		out[0] = mg->rec;
		memcpy(out[0].port_gid, q.port_gid, 16);
		out[0].join_state = q.join_state;
		if (!mg->permanent) {
			bool empty = true;

			for (int i = 0; i < FAKE_FABRIC_MAX_CAS; i++)
				empty = empty && !mg->member_state[i];
			if (empty)
				mg->used = false;
		}
		fb_sa_answer(fb, agent, req, MAD_METHOD_DELETE_RESP, 0, out, 1);
		return;
	case MAD_METHOD_GET_TABLE:
		fb->sa_mc_gets++;
		for (int g = 0; g < FAKE_FABRIC_MAX_GROUPS && n < 3; g++)
			if (fb->groups[g].used && (!(mask & SA_MCMR_COMP_MGID) ||
						   !memcmp(fb->groups[g].rec.mgid, q.mgid, 16)))
				out[n++] = fb->groups[g].rec;
		fb_sa_answer(fb, agent, req, MAD_METHOD_GET_TABLE_RESP, 0, out, n);
		return;
	default:
		return;
	}
}

/* The SA: a PathRecord Get from CA `from` is answered on its own agent. */
static void fb_sa(struct fake_fabric *fb, int from, int agent, const uint8_t *req, size_t len)
{
	struct fake_fabric_open *op = &fb->opens[fb->agents[agent].open];
	uint8_t mad[MAD_SIZE], rec[SA_PR_SIZE];
	struct sa_path q, p;
	struct mad_addr src = {.lid = 1, .qpn = 1, .qkey = MAD_QP1_QKEY};
	int to;

	if (len < MAD_SIZE)
		return;
	if (mad_get(req, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_MC_MEMBER_RECORD) {
		/* Requests only: not our own answers, nor the client's RMPP ACKs. */
		if (fb->sa_mcast && !mad_get(req, mad_hdr_fields, MAD_HDR_R) &&
		    !(mad_get(req + MAD_RMPP_HDR_OFFSET, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS) &
		      MAD_RMPP_FLAG_ACTIVE))
			fb_sa_mcmember(fb, from, agent, req);
		return;
	}
	if (mad_get(req, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == SA_ATTR_SERVICE_RECORD) {
		if (fb->sa_services && (req[3] == MAD_METHOD_SET || req[3] == MAD_METHOD_DELETE)) {
			if (fb->sa_sr_nlog < sizeof(fb->sa_sr_log) - 1)
				fb->sa_sr_log[fb->sa_sr_nlog++] =
				    req[3] == MAD_METHOD_SET ? 'S' : 'D';
			if (fb->sa_sr_hold) {
				if (fb->sa_sr_nheld <
				    sizeof(fb->sa_sr_held) / sizeof(fb->sa_sr_held[0])) {
					fb->sa_sr_held[fb->sa_sr_nheld].open =
					    fb->agents[agent].open;
					fb->sa_sr_held[fb->sa_sr_nheld].agent = agent;
					memcpy(fb->sa_sr_held[fb->sa_sr_nheld++].mad, req,
					       MAD_SIZE);
				}
				return;
			}
			memcpy(mad, req, MAD_SIZE);
			/* As an SA answers: GetResp to a Set, DeleteResp to a Delete. */
			mad[3] =
			    req[3] == MAD_METHOD_SET ? MAD_METHOD_GET_RESP : MAD_METHOD_DELETE_RESP;
			mad_set(mad, mad_hdr_fields, MAD_HDR_STATUS, 0);
			if (req[3] == MAD_METHOD_SET)
				fb->sa_sr_sets++;
			else
				fb->sa_sr_deletes++;
			fb_deliver(fb, fb->agents[agent].open, agent, mad, MAD_SIZE, &src);
		}
		return;
	}
	if (req[3] != MAD_METHOD_GET ||
	    mad_get(req, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) != SA_ATTR_PATH_RECORD)
		return;
	fb->sa_path_queries++;
	if (fb->sa_silent)
		return;
	sa_path_decode(req + SA_DATA_OFFSET, &q);
	to = fb_ca_by_gid(fb, q.dgid);
	if (to < 0)
		return;
	memset(&p, 0, sizeof(p));
	memcpy(p.sgid, fb->ca[from].port.gid, 16);
	memcpy(p.dgid, fb->ca[to].port.gid, 16);
	p.slid = fb->ca[from].port.lid;
	p.dlid = fb->ca[to].port.lid;
	p.reversible = true;
	p.numb_path = 1;
	p.pkey = 0xffff;
	p.sl = 0;
	p.mtu_selector = 2;
	p.mtu = 4; /* IBV_MTU_2048 */
	p.rate_selector = 2;
	p.rate = 7;
	p.packet_life_time_selector = 2;
	p.packet_life_time = fb->packet_life_time;
	if (sa_path_encode(&p, rec))
		return;
	memcpy(mad, req, MAD_SIZE);
	mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set(mad, mad_hdr_fields, MAD_HDR_METHOD, MAD_METHOD_GET & 0x7f);
	mad_set(mad, mad_hdr_fields, MAD_HDR_STATUS, 0);
	memcpy(mad + SA_DATA_OFFSET, rec, sizeof(rec));
	(void)op;
	fb_deliver(fb, fb->agents[agent].open, agent, mad, MAD_SIZE, &src);
}

static int fb_send(void *ctx, int portid, int agent, const void *mad, size_t len,
		   const struct mad_addr *dst, unsigned timeout_ms)
{
	struct fake_fabric *fb = ctx;
	const uint8_t *m = mad;
	int from;
	struct fake_umad *f;

	pthread_mutex_lock(&fb->lock);
	from = fb->opens[portid].ca;
	f = &fb->ca[from];
	if (f->send_error || fb->opens[portid].hung) {
		int rc = fb->opens[portid].hung ? -ENODEV : f->send_error;

		pthread_mutex_unlock(&fb->lock);
		return rc;
	}
	if (len > FAKE_MAD_CAP) {
		pthread_mutex_unlock(&fb->lock);
		return -ENOBUFS;
	}
	if (f->nsent < FAKE_MAX_MADS) {
		struct fake_mad *s = &f->sent[f->nsent++];

		memcpy(s->mad, mad, len);
		s->len = len;
		s->agent = agent;
		s->addr = *dst;
		s->timeout_ms = timeout_ms;
	}
	if (len >= MAD_HDR_SIZE && m[1] == MAD_CLASS_SUBN_ADM) {
		fb_sa(fb, from, agent, m, len);
	} else if (len >= MAD_HDR_SIZE && m[1] == MAD_CLASS_CM &&
		   (!fb->cm_filter || fb->cm_filter(fb, from, m, len, fb->cm_filter_arg))) {
		struct mad_addr src = {.lid = f->port.lid, .qpn = 1, .qkey = MAD_QP1_QKEY};

		for (int to = 0; to < fb->ncas; to++) {
			if (fb->ca[to].port.lid != dst->lid)
				continue;
			for (int a = 0; a < FAKE_FABRIC_MAX_AGENTS; a++)
				if (fb->agents[a].used &&
				    fb->agents[a].mgmt_class == MAD_CLASS_CM &&
				    fb->opens[fb->agents[a].open].ca == to)
					fb_deliver(fb, fb->agents[a].open, a, mad, len, &src);
		}
	}
	pthread_mutex_unlock(&fb->lock);
	return 0;
}

static int fb_recv(void *ctx, int portid, void *buf, size_t cap, size_t *len, int *agent,
		   struct mad_addr *src)
{
	struct fake_fabric *fb = ctx;
	struct fake_fabric_open *op = &fb->opens[portid];
	struct fake_mad *m;

	pthread_mutex_lock(&fb->lock);
	if (op->hung) {
		pthread_mutex_unlock(&fb->lock);
		return -ENODEV;
	}
	if (op->rx_head == op->rx_tail) {
		uint64_t v;

		if (op->evfd >= 0 && read(op->evfd, &v, sizeof(v)) < 0)
			(void)0;
		pthread_mutex_unlock(&fb->lock);
		return -EAGAIN;
	}
	m = &op->rx[op->rx_head % FAKE_MAX_MADS];
	if (m->len > cap) {
		*len = m->len;
		pthread_mutex_unlock(&fb->lock);
		return -ENOSPC;
	}
	op->rx_head++;
	memcpy(buf, m->mad, m->len);
	*len = m->len;
	*agent = m->agent;
	*src = m->addr;
	pthread_mutex_unlock(&fb->lock);
	return 0;
}

const struct mad_umad_ops fake_fabric_ops = {
    .list_cas = fb_list,
    .query_port = fb_query,
    .open_port = fb_open,
    .close_port = fb_close,
    .get_fd = fb_fd,
    .register_agent = fb_reg,
    .unregister_agent = fb_unreg,
    .send = fb_send,
    .recv = fb_recv,
};

unsigned fake_fabric_sa_release(struct fake_fabric *fb)
{
	struct mad_addr src = {.lid = 1, .qpn = 1, .qkey = MAD_QP1_QKEY};
	unsigned n;

	pthread_mutex_lock(&fb->lock);
	n = fb->sa_sr_nheld;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *mad = fb->sa_sr_held[i].mad;
		uint8_t method = mad[3];

		mad[3] = method == MAD_METHOD_SET ? MAD_METHOD_GET_RESP : MAD_METHOD_DELETE_RESP;
		mad_set(mad, mad_hdr_fields, MAD_HDR_STATUS, 0);
		if (method == MAD_METHOD_SET)
			fb->sa_sr_sets++;
		else
			fb->sa_sr_deletes++;
		fb_deliver(fb, fb->sa_sr_held[i].open, fb->sa_sr_held[i].agent, mad, MAD_SIZE,
			   &src);
	}
	fb->sa_sr_nheld = 0;
	pthread_mutex_unlock(&fb->lock);
	return n;
}

void fake_fabric_init(struct fake_fabric *fb, int ncas)
{
	memset(fb, 0, sizeof(*fb));
	pthread_mutex_init(&fb->lock, NULL);
	if (ncas > FAKE_FABRIC_MAX_CAS)
		ncas = FAKE_FABRIC_MAX_CAS;
	fb->ncas = ncas;
	fb->packet_life_time = 8;
	fb->next_mlid = 0xc000;
	for (int i = 0; i < ncas; i++) {
		struct fake_umad *f = &fb->ca[i];

		fake_umad_init(f);
		snprintf(f->port.ca_name, sizeof(f->port.ca_name), "fake%d", i);
		f->port.lid = (uint16_t)(5 + i);
		f->port.gid[15] = (uint8_t)(5 + i);
	}
	for (int o = 0; o < FAKE_FABRIC_MAX_OPENS; o++)
		fb->opens[o].evfd = -1;
}

void fake_fabric_destroy(struct fake_fabric *fb)
{
	for (int o = 0; o < FAKE_FABRIC_MAX_OPENS; o++)
		if (fb->opens[o].used)
			fb_close(fb, o);
	for (int i = 0; i < fb->ncas; i++)
		fake_umad_destroy(&fb->ca[i]);
	pthread_mutex_destroy(&fb->lock);
}

unsigned fake_fabric_count_cm(struct fake_fabric *fb, int ca, uint16_t attr_id)
{
	unsigned n = 0;

	pthread_mutex_lock(&fb->lock);
	for (unsigned i = 0; i < fb->ca[ca].nsent; i++) {
		const struct fake_mad *m = &fb->ca[ca].sent[i];

		if (m->len >= MAD_HDR_SIZE && m->mad[1] == MAD_CLASS_CM &&
		    mad_get(m->mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == attr_id)
			n++;
	}
	pthread_mutex_unlock(&fb->lock);
	return n;
}
