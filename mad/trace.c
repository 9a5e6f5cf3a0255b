/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* MAD tracing to pcap (see mad/trace.h and include/madcm/trace.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "madcm/trace.h"
#include "mad/pcap.h"
#include "mad/trace.h"

/*
 * One writer for the whole process, shared by every transport.  The hot
 * path tests `trace_running` without the lock (a relaxed load: tracing
 * off costs nothing); recording and start/stop take the lock, so a
 * record is never written to a writer being closed.
 */
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mad_pcap_writer *trace_writer;
static atomic_bool trace_running;

bool mad_trace_on(void)
{
	return atomic_load_explicit(&trace_running, memory_order_relaxed);
}

int madcm_trace_start(const char *path)
{
	struct mad_pcap_writer *w = NULL; /* LTO cannot see the open set it */
	int rc;

	if (!path || !*path) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&trace_lock);
	if (trace_writer) {
		pthread_mutex_unlock(&trace_lock);
		errno = EBUSY;
		return -1;
	}
	rc = mad_pcap_writer_open(&w, path, MAD_PCAP_LINKTYPE_ERF);
	if (rc == 0) {
		trace_writer = w;
		atomic_store(&trace_running, true);
	}
	pthread_mutex_unlock(&trace_lock);
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

int madcm_trace_stop(void)
{
	struct mad_pcap_writer *w;
	int rc;

	pthread_mutex_lock(&trace_lock);
	w = trace_writer;
	trace_writer = NULL;
	atomic_store(&trace_running, false);
	pthread_mutex_unlock(&trace_lock);
	if (!w) {
		errno = ENOENT;
		return -1;
	}
	rc = mad_pcap_writer_close(w);
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

int madcm_trace_active(void)
{
	return mad_trace_on() ? 1 : 0;
}

static void trace_from_env(void)
{
	const char *path = getenv("MADCM_TRACE");

	if (path && *path)
		madcm_trace_start(path);
}

void mad_trace_env_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, trace_from_env);
}

void mad_trace_mad(bool outgoing, const struct mad_port_attr *local, const struct mad_addr *remote,
		   const void *mad, size_t len)
{
	struct mad_pcap_hdr h;
	uint32_t local_qp = 1;

	if (!local || !remote || !mad)
		return;
	memset(&h, 0, sizeof(h));
	h.sl = remote->sl & 0xf;
	h.pkey = local->pkey0 ? local->pkey0 : 0xffff;
	h.psn = 0;
	if (outgoing) {
		h.slid = local->lid;
		h.dlid = remote->lid;
		h.src_qp = local_qp;
		h.dst_qp = remote->qpn & 0xffffff;
		h.qkey = remote->qkey;
	} else {
		h.slid = remote->lid;
		h.dlid = local->lid;
		h.src_qp = remote->qpn & 0xffffff;
		h.dst_qp = local_qp;
		h.qkey = remote->qkey ? remote->qkey : MAD_QP1_QKEY;
	}
	if (remote->grh_present) {
		h.grh_present = true;
		h.tclass = remote->traffic_class;
		h.flow_label = remote->flow_label & 0xfffff;
		h.hop_limit = remote->hop_limit;
		memcpy(outgoing ? h.sgid : h.dgid, local->gid, 16);
		memcpy(outgoing ? h.dgid : h.sgid, remote->gid, 16);
	}
	pthread_mutex_lock(&trace_lock);
	if (trace_writer)
		mad_pcap_write(trace_writer, NULL, &h, mad, len);
	pthread_mutex_unlock(&trace_lock);
}
