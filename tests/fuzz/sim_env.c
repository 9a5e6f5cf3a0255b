/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Stand-in for sim/fabsimd_main.c in the simulator's fuzz targets: the
 * same symbols, no sockets.  Linked with sim/topo.c, sma.c, route.c,
 * umad_kern.c, rmpp.c, pma.c, fault.c and capture.c, never with madcm's
 * protocol code.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/umad.h>

#include "tests/fuzz/sim_env.h"

struct fsd_fabric fab;
uint64_t sim_env_now;

#define MAX_CONNS 16
static struct fsd_conn *conns[MAX_CONNS];
static size_t nconns;
static uint32_t next_id = 1;
static volatile uint8_t sink;

uint64_t fsd_now_ns(void)
{
	return sim_env_now;
}

void fsd_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	/* format it anyway: a bad argument must show under the sanitizers */
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (getenv("SIM_ENV_LOG")) /* to follow a reproducer */
		fprintf(stderr, "fabsimd: %s\n", line);
}

void fsd_count(enum fsd_counter c)
{
	if (c < FSD_C_MAX)
		fab.counters[c]++;
}

void fsd_conn_stats(int *nconn, int *nagents)
{
	*nconn = (int)nconns;
	*nagents = 0;
	for (size_t i = 0; i < nconns; i++)
		for (int a = 0; a < FSD_MAX_AGENTS; a++)
			*nagents += conns[i]->agents[a] != NULL;
}

/* Ids are given in order from 1 and never reused until every connection
 * is closed: id N is conns[N - 1], no walk (the registrations of each
 * input asked for it some 64 times). */
struct fsd_conn *fsd_conn_by_id(uint32_t id)
{
	struct fsd_conn *c = id && id <= nconns ? conns[id - 1] : NULL;

	return c && c->id == id && !c->dead ? c : NULL;
}

int fsd_conn_send(struct fsd_conn *c, uint16_t type, uint16_t flags, uint32_t seq, int32_t status,
		  const void *body, size_t len)
{
	const uint8_t *b = body;
	uint8_t sum = 0;

	(void)flags, (void)seq, (void)status;
	if (!c || c->dead)
		return -ENOTCONN;
	/* read every byte: a short buffer shows up here under ASan */
	for (size_t i = 0; i < len; i++)
		sum ^= b[i];
	sink = sum;
	if (type == FSP_MAD_RECV) {
		struct ib_user_mad u;

		/* what umad_recv() hands the application must be whole */
		if (len < sizeof(u) + 24 || len > sizeof(u) + FSP_MSG_MAX)
			abort();
		memcpy(&u, body, sizeof(u));
		if (u.length != len || u.agent_id >= FSD_MAX_AGENTS || !c->agents[u.agent_id])
			abort();
	}
	return 0;
}

int fsd_reply(struct fsd_conn *c, const struct fsp_hdr *req, int32_t status, const void *body,
	      size_t len)
{
	return fsd_conn_send(c, req->type, FSP_F_REPLY, req->seq, status, body, len);
}

struct fsd_conn *sim_env_conn_new(uint32_t kind, int host_id, struct fsd_port *port)
{
	struct fsd_conn *c;

	if (nconns == MAX_CONNS)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = -1;
	c->id = next_id++;
	c->kind = kind;
	c->host_id = host_id;
	c->port = port;
	conns[nconns++] = c;
	return c;
}

void sim_env_conns_free(void)
{
	for (size_t i = 0; i < nconns; i++) {
		struct fsd_conn *c = conns[i];

		if (c->kind == FSP_KIND_STREAM)
			fsd_agents_release(c);
		free(c);
	}
	nconns = 0;
	next_id = 1;
}

/* No verbs module here: nothing holds cut-through grants. */
void fsd_verbs_changed(void) {}
