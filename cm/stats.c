/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Counters and the live-connection dump (include/madcm/cm_stat.h), and the
 * snapshot file `madcm stat` reads.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_int.h"

const char *cm_stat_msg_name(enum cm_stat_msg m)
{
	static const char *const names[CM_STAT_MSG_COUNT] = {
	    "REQ",  "MRA",	"REJ",	    "REP", "RTU", "DREQ",
	    "DREP", "SIDR_REQ", "SIDR_REP", "LAP", "APR", "other",
	};

	return (unsigned)m < CM_STAT_MSG_COUNT ? names[m] : "unknown";
}

int cm_stat_get(const struct cm_engine *e, struct cm_stat_counters *out)
{
	if (!e || !out)
		return -EINVAL;
	*out = e->st;
	out->conns_live = e->nconns;
	return 0;
}

void cm_stat_reset(struct cm_engine *e)
{
	if (!e)
		return;
	memset(&e->st, 0, sizeof(e->st));
	e->st.conns_live = e->nconns;
}

static void conn_fill(const struct cm_conn *c, struct cm_stat_conn *o)
{
	o->local_comm_id = c->local_id;
	o->remote_comm_id = c->remote_id;
	o->local_qpn = c->local_qpn;
	o->remote_qpn = c->remote_qpn;
	o->service_id = c->service_id;
	o->remote_ca_guid = c->remote_ca_guid;
	o->dlid = c->peer.lid;
	o->state = c->state;
	o->active = c->active;
	o->state_name = cm_state_name(c->state);
}

long cm_stat_conns(const struct cm_engine *e, struct cm_stat_conn *out, size_t max)
{
	size_t n = 0;

	if (!e || (max && !out))
		return -EINVAL;
	for (uint32_t b = 0; b <= e->hash_mask; b++)
		for (const struct cm_conn *c = e->by_local[b]; c; c = c->next_local) {
			if (n < max)
				conn_fill(c, &out[n]);
			n++;
		}
	return (long)n;
}

int cm_stat_write(const struct cm_engine *e, FILE *f, size_t max_conns)
{
	const struct cm_stat_counters *s;
	size_t n = 0;

	if (!e || !f)
		return -EINVAL;
	s = &e->st;
	fprintf(f, "# madcm cm stat v1\n");
	fprintf(f, "ca_guid 0x%016llx\n", (unsigned long long)e->cfg.ca_guid);
	fprintf(f, "conns live %u created %llu freed %llu table_full %llu max %u\n", e->nconns,
		(unsigned long long)s->conns_created, (unsigned long long)s->conns_freed,
		(unsigned long long)s->table_full, e->max_conns);
	fprintf(f, "errors timeouts %llu send_errors %llu\n", (unsigned long long)s->timeouts,
		(unsigned long long)s->send_errors);
	fprintf(f, "held reqs %llu\n", (unsigned long long)s->held);
	fprintf(f, "# msg NAME sent rcvd retried dropped duplicates\n");
	for (int m = 0; m < CM_STAT_MSG_COUNT; m++)
		fprintf(f, "msg %s %llu %llu %llu %llu %llu\n", cm_stat_msg_name(m),
			(unsigned long long)s->sent[m], (unsigned long long)s->rcvd[m],
			(unsigned long long)s->retried[m], (unsigned long long)s->dropped[m],
			(unsigned long long)s->duplicates[m]);
	fprintf(f, "# conn LOCAL_ID REMOTE_ID STATE SIDE LOCAL_QPN REMOTE_QPN SERVICE_ID "
		   "REMOTE_CA_GUID DLID\n");
	for (uint32_t b = 0; b <= e->hash_mask && n < max_conns; b++)
		for (const struct cm_conn *c = e->by_local[b]; c && n < max_conns;
		     c = c->next_local, n++)
			fprintf(f,
				"conn 0x%08x 0x%08x %s %s 0x%06x 0x%06x 0x%016llx 0x%016llx %u\n",
				c->local_id, c->remote_id, cm_state_name(c->state),
				c->active ? "active" : "passive", c->local_qpn, c->remote_qpn,
				(unsigned long long)c->service_id,
				(unsigned long long)c->remote_ca_guid, c->peer.lid);
	return ferror(f) ? -EIO : 0;
}

int cm_stat_publish(const struct cm_engine *e, const char *path)
{
	char tmp[4096];
	FILE *f;
	int ret;

	if (!e)
		return -EINVAL;
	if (!path) {
		path = getenv("MADCM_STAT_FILE");
		if (!path || !*path)
			return 0;
	}
	/* One temporary name per process and engine: engines that publish to
	 * the same path from several threads never write into one file. */
	if (snprintf(tmp, sizeof(tmp), "%s.%ld.%lx.tmp", path, (long)getpid(),
		     (unsigned long)(uintptr_t)e) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	ret = cm_stat_write(e, f, 10000);
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}
