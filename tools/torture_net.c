/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* madcm torture: the port, sending and the queue of answers (tools/torture.h). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "mad/mad_wire.h"
#include "tools/torture.h"

static void on_mad(struct mad_agent *agent, const void *mad, size_t len, const struct mad_addr *src,
		   void *arg)
{
	struct tt *tt = arg;
	struct tt_msg *m = &tt->q[tt->nq++ % TT_QUEUE];
	char d[200];

	(void)agent;
	(void)src;
	if (len > sizeof(m->mad))
		len = sizeof(m->mad);
	memset(m->mad, 0, sizeof(m->mad));
	memcpy(m->mad, mad, len);
	m->len = len;
	m->used = false;
	if (tt->verbose) {
		tt_describe(m->mad, d, sizeof(d));
		fprintf(stderr, "torture: <- %s\n", d);
	}
}

int tt_open(struct tt *tt, const char *ca, int port)
{
	struct mad_transport_params p = {.ca = ca, .port = port, .timers = &tt->timers};
	struct mad_agent_desc ad = {.mgmt_class = CM_MGMT_CLASS,
				    .class_version = CM_CLASS_VERSION,
				    .unsolicited = on_mad,
				    .arg = tt};
	const struct mad_port_attr *pa;
	int ret;

	mad_timer_heap_init(&tt->timers, NULL, NULL);
	ret = mad_transport_open(&tt->t, &p);
	if (ret)
		return ret;
	mad_method_mask_set(ad.method_mask, CM_METHOD_SEND);
	ret = mad_agent_register(tt->t, &ad, &tt->agent);
	if (ret) {
		mad_transport_close(tt->t);
		return ret;
	}
	pa = mad_transport_port_cached(tt->t);
	tt->port = *pa;
	tt->guid = 0;
	for (int i = 8; i < 16; i++)
		tt->guid = tt->guid << 8 | pa->gid[i];
	tt->tid = (uint64_t)tt_random32() << 32;
	return 0;
}

void tt_close(struct tt *tt)
{
	if (tt->agent)
		mad_agent_unregister(tt->agent);
	if (tt->t)
		mad_transport_close(tt->t);
	mad_timer_heap_destroy(&tt->timers);
}

uint32_t tt_random32(void)
{
	uint32_t v = 0;

	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = 0x5eed1234u;
	return v;
}

int tt_send(struct tt *tt, const void *mad, size_t len)
{
	char d[200];

	if (tt->verbose) {
		tt_describe(mad, d, sizeof(d));
		fprintf(stderr, "torture: -> %s (%zu bytes)\n", d, len);
	}
	return mad_send(tt->agent, mad, len, &tt->dst);
}

void tt_pump(struct tt *tt, unsigned ms)
{
	uint64_t end = mad_clock_monotonic_ns(NULL) + (uint64_t)ms * 1000000u;
	struct pollfd pfd = {.fd = mad_transport_fd(tt->t), .events = POLLIN};

	for (;;) {
		uint64_t now = mad_clock_monotonic_ns(NULL);
		int left = now >= end ? 0 : (int)((end - now + 999999) / 1000000);

		mad_timer_run(&tt->timers);
		if (poll(&pfd, 1, left) > 0)
			mad_transport_poll(tt->t, 0);
		if (mad_clock_monotonic_ns(NULL) >= end)
			return;
	}
}

/* The comm ID of ours a MAD from the target names. */
static uint32_t our_id(const uint8_t *mad)
{
	uint16_t attr = (uint16_t)mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID);
	const uint8_t *msg = mad + CM_MSG_OFFSET;

	if (attr == CM_ATTR_SIDR_REP)
		return (uint32_t)mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_REQUEST_ID);
	return (uint32_t)mad_get(msg, cm_rtu_fields, CM_RTU_REMOTE_COMM_ID);
}

static const uint8_t *find(struct tt *tt, uint16_t attr, uint32_t lid)
{
	unsigned n = tt->nq < TT_QUEUE ? tt->nq : TT_QUEUE;
	unsigned first = tt->nq - n;

	for (unsigned i = first; i != tt->nq; i++) {
		struct tt_msg *m = &tt->q[i % TT_QUEUE];

		if (m->used || our_id(m->mad) != lid)
			continue;
		if (attr && mad_get(m->mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID) != attr)
			continue;
		m->used = true;
		return m->mad;
	}
	return NULL;
}

const uint8_t *tt_wait(struct tt *tt, uint16_t attr, uint32_t lid, unsigned ms)
{
	uint64_t end = mad_clock_monotonic_ns(NULL) + (uint64_t)ms * 1000000u;
	const uint8_t *m;

	tt_pump(tt, 0);
	while (!(m = find(tt, attr, lid))) {
		uint64_t now = mad_clock_monotonic_ns(NULL);

		if (now >= end)
			return NULL;
		tt_pump(tt,
			(unsigned)((end - now) / 1000000u > 10 ? 10 : (end - now) / 1000000u + 1));
	}
	return m;
}

void tt_forget(struct tt *tt, uint32_t lid)
{
	while (find(tt, 0, lid))
		;
}

void tt_describe(const uint8_t *mad, char *buf, size_t len)
{
	uint16_t attr = (uint16_t)mad_get(mad, mad_hdr_fields, MAD_HDR_ATTRIBUTE_ID);
	unsigned method = (unsigned)mad_get(mad, mad_hdr_fields, MAD_HDR_METHOD);
	const uint8_t *msg = mad + CM_MSG_OFFSET;
	const char *name = cm_attr_name(attr);
	const char *s;
	unsigned v, w;

	if (!name) {
		snprintf(buf, len, "attribute 0x%04x method 0x%02x", attr, method);
		return;
	}
	switch (attr) {
	case CM_ATTR_REJ:
		v = (unsigned)mad_get(msg, cm_rej_fields, CM_REJ_REASON);
		w = (unsigned)mad_get(msg, cm_rej_fields, CM_REJ_MESSAGE_REJECTED);
		s = cm_rej_reason_name(v);
		snprintf(buf, len, "REJ reason %u (%s) rejecting %s", v, s ? s : "?",
			 cm_rej_message_name(w) ? cm_rej_message_name(w) : "?");
		break;
	case CM_ATTR_MRA:
		w = (unsigned)mad_get(msg, cm_mra_fields, CM_MRA_MESSAGE_MRAED);
		snprintf(buf, len, "MRA of %s",
			 cm_mra_message_name(w) ? cm_mra_message_name(w) : "?");
		break;
	case CM_ATTR_SIDR_REP:
		v = (unsigned)mad_get(msg, cm_sidr_rep_fields, CM_SIDR_REP_STATUS);
		s = cm_sidr_status_name(v);
		snprintf(buf, len, "SIDR_REP status %u (%s)", v, s ? s : "?");
		break;
	case CM_ATTR_APR:
		v = (unsigned)mad_get(msg, cm_apr_fields, CM_APR_AP_STATUS);
		s = cm_apr_status_name(v);
		snprintf(buf, len, "APR status %u (%s)", v, s ? s : "?");
		break;
	default:
		snprintf(buf, len, "%s", name);
		break;
	}
	if (method != CM_METHOD_SEND) {
		size_t l = strlen(buf);

		snprintf(buf + l, len - l, " method 0x%02x", method);
	}
}
