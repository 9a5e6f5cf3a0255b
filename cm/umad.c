/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* A CM engine on a MAD transport: see cm/umad.h. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/umad.h"

/* ClassPortInfo:RespTimeValue we announce: 4.096 us * 2^16 = 268 ms. */
#define CM_UMAD_RESP_TIME 16

struct cm_umad {
	struct mad_agent *agent;
	struct cm_engine *engine;
	struct cm_engine_ops ops;
	void (*event)(void *ctx, const struct cm_event *ev);
	void *ctx;
};

/* The engine calls back with our context; hand events to the caller's. */
static void umad_event(void *ctx, const struct cm_event *ev)
{
	struct cm_umad *u = ctx;

	if (u->event)
		u->event(u->ctx, ev);
}

static int umad_send(void *ctx, const struct mad_addr *to, const void *mad, size_t len)
{
	struct cm_umad *u = ctx;

	return mad_send(u->agent, mad, len, to);
}

/*
 * Get(ClassPortInfo) (IBA 12.11, 13.4.8.1): the CM's versions and how long
 * it may take to answer; no redirection, no traps.  Also the cheapest
 * echo a peer can time a umad round trip with.
 */
static void answer_class_port_info(struct cm_umad *u, const void *req, const struct mad_addr *src)
{
	uint8_t mad[CM_MAD_SIZE];
	uint8_t *cpi = mad + CM_MSG_OFFSET;

	memcpy(mad, req, MAD_HDR_SIZE);
	memset(mad + MAD_HDR_SIZE, 0, sizeof(mad) - MAD_HDR_SIZE);
	mad_set_fits(mad, mad_hdr_fields, MAD_HDR_R, 1);
	mad_set_fits(mad, mad_hdr_fields, MAD_HDR_STATUS, 0);
	mad_set_fits(cpi, mad_cpi_fields, MAD_CPI_BASE_VERSION, MAD_BASE_VERSION);
	mad_set_fits(cpi, mad_cpi_fields, MAD_CPI_CLASS_VERSION, CM_CLASS_VERSION);
	mad_set_fits(cpi, mad_cpi_fields, MAD_CPI_RESP_TIME_VALUE, CM_UMAD_RESP_TIME);
	mad_send(u->agent, mad, sizeof(mad), src);
}

static void umad_recv(struct mad_agent *agent, const void *mad, size_t len,
		      const struct mad_addr *src, void *arg)
{
	struct cm_umad *u = arg;

	(void)agent;
	if (len == CM_MAD_SIZE && mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD) == CM_METHOD_GET &&
	    mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) == CM_ATTR_CLASS_PORT_INFO) {
		answer_class_port_info(u, mad, src);
		return;
	}
	cm_engine_recv(u->engine, src, mad, len);
}

int cm_umad_open(const struct cm_umad_params *p, struct cm_umad **out)
{
	struct mad_agent_desc ad = {.mgmt_class = CM_MGMT_CLASS,
				    .class_version = CM_CLASS_VERSION,
				    .unsolicited = umad_recv};
	struct cm_engine_config cfg = {0};
	const struct mad_port_attr *port;
	struct cm_umad *u;
	uint64_t guid;
	int ret;

	if (!p || !out || !p->transport || !p->timers)
		return -EINVAL;
	port = mad_transport_port_cached(p->transport);
	if (!port)
		return -ENODEV;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->ops.send = umad_send;
	u->ops.event = umad_event;
	u->event = p->event;
	u->ctx = p->ctx;
	memcpy(&guid, port->gid + 8, 8); /* port GUID: GID's interface ID */
	cfg.ca_guid = p->ca_guid ? p->ca_guid : be64toh(guid);
	cfg.port_num = (uint8_t)port->portnum;
	cfg.max_conns = p->max_conns;
	cfg.timers = p->timers;
	cfg.ops = &u->ops;
	cfg.ctx = u;
	cfg.service_bound = p->service_bound;
	cfg.service_bound_arg = p->service_bound_arg;
	ret = cm_engine_create(&cfg, &u->engine);
	if (ret) {
		free(u);
		return ret;
	}
	mad_method_mask_set(ad.method_mask, CM_METHOD_SEND);
	mad_method_mask_set(ad.method_mask, CM_METHOD_GET);
	ad.arg = u;
	ret = mad_agent_register(p->transport, &ad, &u->agent);
	if (ret) {
		cm_engine_destroy(u->engine);
		free(u);
		return ret;
	}
	*out = u;
	return 0;
}

void cm_umad_close(struct cm_umad *u)
{
	if (!u)
		return;
	cm_engine_destroy(u->engine);
	mad_agent_unregister(u->agent);
	free(u);
}

struct cm_engine *cm_umad_engine(const struct cm_umad *u)
{
	return u ? u->engine : NULL;
}

struct mad_agent *cm_umad_agent(const struct cm_umad *u)
{
	return u ? u->agent : NULL;
}
