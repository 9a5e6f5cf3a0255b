/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * sa_many: N PathRecord queries in flight at once from one process (one
 * SA client, asynchronous API, no cache), to the LIDs given; exits 0 when
 * every one completed with a path.  Used by sa_many.sh on the fabric.
 *
 *   sa_many [-n N] [--timeout MS] [--retries R] LID...
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sa/client.h"
#include "sa/sa_wire.h"

struct state {
	pthread_mutex_t m;
	pthread_cond_t cv;
	unsigned done, ok, bad_lid, errors[4];
};

struct job {
	struct state *s;
	uint16_t dlid;
};

static void on_path(void *arg, int status, const struct sa_path *p, unsigned n)
{
	struct job *j = arg;
	struct state *s = j->s;

	pthread_mutex_lock(&s->m);
	if (status == 0 && n >= 1 && p[0].dlid == j->dlid)
		s->ok++;
	else if (status == 0)
		s->bad_lid++;
	else if (status == -ETIMEDOUT)
		s->errors[0]++;
	else
		s->errors[1]++;
	s->done++;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->m);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"timeout", required_argument, NULL, 't'},
					   {"retries", required_argument, NULL, 'r'},
					   {0}};
	struct sa_client_params p = {0};
	struct sa_client_stats st;
	struct state s = {0};
	struct mad_port_attr pa;
	struct sa_client *c;
	struct job *jobs;
	unsigned n = 1000, nlids;
	int opt, rc;

	p.timeout_ms = 2000;
	p.retries = 5;
	while ((opt = getopt_long(argc, argv, "n:", lo, NULL)) != -1) {
		if (opt == 'n')
			n = (unsigned)strtoul(optarg, NULL, 0);
		else if (opt == 't')
			p.timeout_ms = (unsigned)strtoul(optarg, NULL, 0);
		else if (opt == 'r')
			p.retries = (unsigned)strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	nlids = (unsigned)(argc - optind);
	if (!nlids || !n) {
		fprintf(stderr, "usage: sa_many [-n N] LID...\n");
		return 2;
	}
	rc = sa_client_open(&c, &p);
	if (rc) {
		fprintf(stderr, "sa_many: %s\n", strerror(-rc));
		return 1;
	}
	sa_client_port(c, &pa);
	pthread_mutex_init(&s.m, NULL);
	pthread_cond_init(&s.cv, NULL);
	jobs = calloc(n, sizeof(*jobs));
	for (unsigned i = 0; i < n; i++) {
		struct sa_path_query q;

		memset(&q, 0, sizeof(q));
		jobs[i].s = &s;
		jobs[i].dlid = (uint16_t)strtoul(argv[optind + i % nlids], NULL, 0);
		q.rec.slid = pa.lid;
		q.rec.dlid = jobs[i].dlid;
		q.comp_mask = SA_PR_COMP_SLID | SA_PR_COMP_DLID;
		q.table = true;
		q.no_cache = true;
		rc = sa_path_query_async(c, &q, on_path, &jobs[i]);
		if (rc) {
			fprintf(stderr, "sa_many: submit %u: %s\n", i, strerror(-rc));
			return 1;
		}
	}
	pthread_mutex_lock(&s.m);
	while (s.done < n)
		pthread_cond_wait(&s.cv, &s.m);
	pthread_mutex_unlock(&s.m);
	sa_client_stats(c, &st);
	printf("sa_many: %u queries, %u ok, %u wrong path, %u timed out, %u other errors; "
	       "MADs sent %llu received %llu retries %llu late %llu duplicates %llu\n",
	       n, s.ok, s.bad_lid, s.errors[0], s.errors[1], (unsigned long long)st.mad.sent,
	       (unsigned long long)st.mad.received, (unsigned long long)st.mad.retries,
	       (unsigned long long)st.mad.late, (unsigned long long)st.mad.duplicates);
	sa_client_close(c);
	free(jobs);
	return s.ok == n ? 0 : 1;
}
