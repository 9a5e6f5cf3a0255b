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

void fake_umad_init(struct fake_umad *f)
{
	memset(f, 0, sizeof(*f));
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
	f->sent = calloc(FAKE_MAX_MADS, sizeof(*f->sent));
	f->rx = calloc(FAKE_MAX_MADS, sizeof(*f->rx));
	f->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
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

	for (; n < fb->ncas && n < max; n++)
		strcpy(names[n], fb->ca[n].port.ca_name);
	return n;
}

static int fb_query(void *ctx, const char *ca, int port, struct mad_port_attr *out)
{
	struct fake_fabric *fb = ctx;
	int i = fb_ca_of(fb, ca);

	if (i < 0 || port > 1 || port < 0)
		return -ENODEV;
	pthread_mutex_lock(&fb->lock);
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
	for (int o = 0; o < FAKE_FABRIC_MAX_OPENS; o++) {
		struct fake_fabric_open *op = &fb->opens[o];

		if (op->used)
			continue;
		op->used = true;
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

/* The SA: a PathRecord Get from CA `from` is answered on its own agent. */
static void fb_sa(struct fake_fabric *fb, int from, int agent, const uint8_t *req, size_t len)
{
	struct fake_fabric_open *op = &fb->opens[fb->agents[agent].open];
	uint8_t mad[MAD_SIZE], rec[SA_PR_SIZE];
	struct sa_path q, p;
	struct mad_addr src = {.lid = 1, .qpn = 1, .qkey = MAD_QP1_QKEY};
	int to;

	if (len < MAD_SIZE || req[3] != MAD_METHOD_GET ||
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
	if (f->send_error) {
		int rc = f->send_error;

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

void fake_fabric_init(struct fake_fabric *fb, int ncas)
{
	memset(fb, 0, sizeof(*fb));
	pthread_mutex_init(&fb->lock, NULL);
	if (ncas > FAKE_FABRIC_MAX_CAS)
		ncas = FAKE_FABRIC_MAX_CAS;
	fb->ncas = ncas;
	fb->packet_life_time = 8;
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
