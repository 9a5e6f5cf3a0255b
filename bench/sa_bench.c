/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * sa_bench: PathRecord query latency and throughput through madcm's SA
 * client (1 and 64 outstanding, uncached and cached), next to the floor:
 * the same PathRecord Get sent and awaited with bare libibumad calls in
 * the same run.  Prints numbers; asserts nothing.  Run it on a fabric:
 *
 *   fabsim run H1 -- bench/sa_bench [-n N] [-C CA] [-P PORT] [DLID]
 *
 * The query is the path from this port's LID to DLID (default: the SM's
 * LID), components SLID and DLID, as rdma_resolve_route would ask.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/umad.h>

#include "mad/mad_wire.h"
#include "mad/tid.h"
#include "sa/client.h"
#include "sa/sa_wire.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *lat, unsigned n, uint64_t total_ns)
{
	if (n == 0) {
		printf("%-34s no samples\n", what);
		return;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("%-34s median %8.2f us  p99 %8.2f us  %9.0f queries/s\n", what, lat[n / 2] / 1e3,
	       lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1e3,
	       total_ns ? n * 1e9 / total_ns : 0);
}

/* The floor: a PathRecord Get with libibumad only, one at a time. */
static int raw_umad(const char *ca, int port, uint16_t slid, uint16_t dlid, uint16_t sm_lid,
		    unsigned n, uint64_t *lat)
{
	long mask[16 / sizeof(long)] = {0};
	size_t usz = umad_size() + MAD_SIZE;
	void *umad = calloc(1, usz), *rbuf = calloc(1, usz + 4096);
	int portid, agent, ok = 0;
	uint64_t t0;

	if (!umad || !rbuf)
		return -ENOMEM;
	portid = umad_open_port(ca, port);
	if (portid < 0)
		return portid;
	agent = umad_register(portid, MAD_CLASS_SUBN_ADM, MAD_CLASS_VERSION_SA, 0, mask);
	if (agent < 0) {
		umad_close_port(portid);
		return agent;
	}
	t0 = now_ns();
	for (unsigned i = 0; i < n; i++) {
		uint8_t *mad = umad_get_mad(umad);
		uint64_t tid = mad_tid_next(), start;
		int len = MAD_SIZE + 4096;

		sa_mad_init(mad, MAD_METHOD_GET, SA_ATTR_PATH_RECORD, tid,
			    SA_PR_COMP_SLID | SA_PR_COMP_DLID);
		mad_set(mad + SA_DATA_OFFSET, sa_pr_fields, SA_PR_SLID, slid);
		mad_set(mad + SA_DATA_OFFSET, sa_pr_fields, SA_PR_DLID, dlid);
		umad_set_addr(umad, sm_lid, 1, 0, MAD_QP1_QKEY);
		start = now_ns();
		if (umad_send(portid, agent, umad, MAD_SIZE, 1000, 0) < 0)
			break;
		for (;;) {
			len = MAD_SIZE + 4096;
			if (umad_recv(portid, rbuf, &len, 2000) < 0)
				goto out;
			if ((uint32_t)mad_get(umad_get_mad(rbuf), mad_hdr_fields,
					      MAD_HDR_TRANSACTION_ID) == (uint32_t)tid)
				break;
		}
		lat[ok++] = now_ns() - start;
	}
out:
	report("raw umad Get (floor + SA)", lat, ok, now_ns() - t0);
	umad_unregister(portid, agent);
	umad_close_port(portid);
	free(umad);
	free(rbuf);
	return ok;
}

struct window {
	pthread_mutex_t m;
	pthread_cond_t cv;
	unsigned inflight, done, errors;
	uint64_t *start; /* per query */
	uint64_t *lat;
};

struct token {
	struct window *w;
	unsigned i;
};

static void on_path(void *arg, int status, const struct sa_path *p, unsigned n)
{
	struct token *t = arg;
	struct window *w = t->w;

	(void)p;
	(void)n;
	pthread_mutex_lock(&w->m);
	if (status)
		w->errors++;
	w->lat[w->done++] = now_ns() - w->start[t->i];
	w->inflight--;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

static void run_window(struct sa_client *c, const struct sa_path_query *q, unsigned n,
		       unsigned depth, const char *what)
{
	struct window w = {0};
	struct token *tok = calloc(n, sizeof(*tok));
	uint64_t t0;

	w.start = calloc(n, sizeof(uint64_t));
	w.lat = calloc(n, sizeof(uint64_t));
	pthread_mutex_init(&w.m, NULL);
	pthread_cond_init(&w.cv, NULL);
	t0 = now_ns();
	for (unsigned i = 0; i < n; i++) {
		pthread_mutex_lock(&w.m);
		while (w.inflight >= depth)
			pthread_cond_wait(&w.cv, &w.m);
		w.inflight++;
		pthread_mutex_unlock(&w.m);
		tok[i].w = &w;
		tok[i].i = i;
		w.start[i] = now_ns();
		if (sa_path_query_async(c, q, on_path, &tok[i])) {
			pthread_mutex_lock(&w.m);
			w.inflight--;
			w.errors++;
			pthread_mutex_unlock(&w.m);
		}
	}
	pthread_mutex_lock(&w.m);
	while (w.inflight)
		pthread_cond_wait(&w.cv, &w.m);
	pthread_mutex_unlock(&w.m);
	report(what, w.lat, w.done, now_ns() - t0);
	if (w.errors)
		printf("%-34s %u errors\n", "", w.errors);
	free(w.start);
	free(w.lat);
	free(tok);
}

int main(int argc, char **argv)
{
	struct sa_client_params p = {0};
	struct sa_client *c;
	struct mad_port_attr pa;
	struct sa_path_query q;
	struct sa_client_stats st;
	unsigned n = 2000;
	uint64_t *lat;
	int opt, rc;

	p.timeout_ms = 1000;
	p.retries = 3;
	p.cache_lifetime_ms = 600000;
	while ((opt = getopt(argc, argv, "n:C:P:h")) != -1) {
		switch (opt) {
		case 'n':
			n = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'C':
			p.ca = optarg;
			break;
		case 'P':
			p.port = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: sa_bench [-n N] [-C CA] [-P PORT] [DLID]\n");
			return 2;
		}
	}
	if (n < 10)
		n = 10;
	rc = sa_client_open(&c, &p);
	if (rc) {
		fprintf(stderr, "sa_bench: no port: %s\n", strerror(-rc));
		return 1;
	}
	sa_client_port(c, &pa);
	memset(&q, 0, sizeof(q));
	q.rec.slid = pa.lid;
	q.rec.dlid = optind < argc ? (uint16_t)strtoul(argv[optind], NULL, 0) : pa.sm_lid;
	q.comp_mask = SA_PR_COMP_SLID | SA_PR_COMP_DLID;
	printf("sa_bench: %s port %d LID %u -> LID %u, SM LID %u, %u queries per line\n",
	       pa.ca_name, pa.portnum, pa.lid, q.rec.dlid, pa.sm_lid, n);
	lat = calloc(n, sizeof(*lat));
	raw_umad(pa.ca_name, pa.portnum, q.rec.slid, q.rec.dlid, pa.sm_lid, n, lat);

	q.no_cache = true;
	run_window(c, &q, n, 1, "madcm uncached, 1 outstanding");
	run_window(c, &q, n, 64, "madcm uncached, 64 outstanding");
	q.no_cache = false;
	{
		struct sa_path path;
		unsigned got;
		uint64_t t0;

		sa_path_query(c, &q, &path, 1, &got, NULL); /* prime the cache */
		t0 = now_ns();
		for (unsigned i = 0; i < n; i++) {
			uint64_t s = now_ns();

			sa_path_query(c, &q, &path, 1, &got, NULL);
			lat[i] = now_ns() - s;
		}
		report("madcm cached (sync)", lat, n, now_ns() - t0);
	}
	run_window(c, &q, n, 64, "madcm cached, 64 outstanding");
	sa_client_stats(c, &st);
	printf("counters: sent %llu received %llu retries %llu timeouts %llu late %llu "
	       "duplicates %llu cache hits %llu\n",
	       (unsigned long long)st.mad.sent, (unsigned long long)st.mad.received,
	       (unsigned long long)st.mad.retries, (unsigned long long)st.mad.timeouts,
	       (unsigned long long)st.mad.late, (unsigned long long)st.mad.duplicates,
	       (unsigned long long)st.cache_hits);
	free(lat);
	sa_client_close(c);
	return 0;
}
