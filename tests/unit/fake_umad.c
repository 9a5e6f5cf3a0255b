/* Fake libibumad port for unit tests (see fake_umad.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "mad/mad_wire.h"
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
