/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm ids: every rdma_cm id on the host, as `rdma resource show cm_id`
 * lists the kernel's (madcm-ids(1)).  Each process on madcm's librdmacm
 * publishes its table in DIR/ids.PID (lib/cma_publish.c says how and
 * when); madcmd adds, for its programs, the CM state of each connection
 * and the listeners it holds for them (its STAT, as `madcm stat
 * --daemon`).  Files of processes that are gone are removed here.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cm/engine.h"
#include "rtproto/rt_client.h"

#define IDS_FIELD 64

/* One id: the fields of a published "id" line, and its process's. */
struct ids_row {
	char dev[IDS_FIELD], lqpn[16], qpt[16], state[24], ps[8];
	char src[IDS_FIELD], sport[8], dst[IDS_FIELD], dport[8];
	char commid[16], cmstate[24];
	int port, pid, daemon;
	char comm[IDS_FIELD];
	bool from_daemon; /* known only from madcmd's STAT */
};

struct ids_list {
	struct ids_row *v;
	size_t n, cap;
	struct madcmd_stat_rep *reps;
	size_t nreps, capreps;
};

/* The filters: `KEY VALUE` pairs, as rdma(8)'s. */
static const char *const filter_keys[] = {
    "link", "dev",	"port",	    "pid",	"comm",	    "lqpn",    "qp-type",  "state",
    "ps",   "src-addr", "src-port", "dst-addr", "dst-port", "comm-id", "cm-state", NULL,
};

struct filter {
	const char *key, *val;
};

static void usage(FILE *out)
{
	fputs("Usage: madcm ids [-j] [-d DIR] [-s SOCKET] [KEY VALUE]...\n"
	      "\n"
	      "List every rdma_cm id of the processes on madcm's librdmacm on this\n"
	      "host, as `rdma resource show cm_id` lists the kernel's, with madcm's\n"
	      "comm ID and CM state of each connection.\n"
	      "\n"
	      "  -j, --json           print a JSON array\n"
	      "  -d, --dir DIR        read the tables in DIR (default $MADCM_IDS_DIR,\n"
	      "                       else /run/madcm and $XDG_RUNTIME_DIR/madcm)\n"
	      "  -s, --socket SOCKET  madcmd's socket (default $MADCM_DAEMON, else\n"
	      "                       " MADCMD_SOCKET_DEFAULT ")\n"
	      "  -h, --help           this text\n"
	      "\n"
	      "Filters (all must match): link DEV[/PORT], dev DEV, port N, pid N,\n"
	      "comm NAME, lqpn N, qp-type T, state S, ps PS, src-addr A, src-port P,\n"
	      "dst-addr A, dst-port P, comm-id ID, cm-state S.\n",
	      out);
}

static struct ids_row *row_add(struct ids_list *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct ids_row *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		l->v = v;
		l->cap = cap;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	return &l->v[l->n++];
}

/* The start time of pid (field 22 of /proc/PID/stat), 0 when unknown. */
static unsigned long long proc_start(int pid)
{
	char path[64], buf[1024], *s;
	unsigned long long start = 0;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	s = strrchr(buf, ')');
	if (!s || sscanf(s + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			 "%*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return start;
}

static void proc_comm(int pid, char *out, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

/* A process gone, or its pid now another's: its table is stale. */
static bool stale(int pid, unsigned long long start)
{
	unsigned long long now;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	now = proc_start(pid);
	return start && now && now != start;
}

/* Read one table; a stale one is removed.  Rows are added to l. */
static void read_table(struct ids_list *l, const char *dir, const char *name)
{
	char path[4096], line[512], comm[IDS_FIELD] = "-";
	unsigned long long start = 0;
	int pid = -1, daemon = 0;
	size_t first = l->n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "# madcm ids 1", 13)) {
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		struct ids_row r;

		memset(&r, 0, sizeof(r));
		if (sscanf(line, "pid %d", &pid) == 1 || sscanf(line, "start %llu", &start) == 1 ||
		    sscanf(line, "comm %63s", comm) == 1 || sscanf(line, "daemon %d", &daemon) == 1)
			continue;
		if (sscanf(line, "id %63s %d %15s %15s %23s %7s %63s %7s %63s %7s %15s %23s", r.dev,
			   &r.port, r.lqpn, r.qpt, r.state, r.ps, r.src, r.sport, r.dst, r.dport,
			   r.commid, r.cmstate) == 12) {
			struct ids_row *w = row_add(l);

			if (w)
				*w = r;
		}
	}
	fclose(f);
	if (pid <= 0 || stale(pid, start)) {
		l->n = first;
		if (pid > 0)
			unlink(path);
		return;
	}
	proc_comm(pid, comm, sizeof(comm));
	for (size_t i = first; i < l->n; i++) {
		l->v[i].pid = pid;
		l->v[i].daemon = daemon;
		snprintf(l->v[i].comm, sizeof(l->v[i].comm), "%s", comm);
	}
}

static void read_dir(struct ids_list *l, const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (strncmp(e->d_name, "ids.", 4) || n < 5 ||
		    strspn(e->d_name + 4, "0123456789") != n - 4)
			continue;
		read_table(l, dir, e->d_name);
	}
	closedir(d);
}

static void keep_rep(void *arg, const struct madcmd_stat_rep *r)
{
	struct ids_list *l = arg;

	if (l->nreps == l->capreps) {
		size_t cap = l->capreps ? l->capreps * 2 : 64;
		struct madcmd_stat_rep *v = realloc(l->reps, cap * sizeof(*v));

		if (!v)
			return;
		l->reps = v;
		l->capreps = cap;
	}
	l->reps[l->nreps++] = *r;
}

static int ps_num(const char *ps)
{
	if (!strcmp(ps, "TCP"))
		return 0x0106;
	if (!strcmp(ps, "UDP"))
		return 0x0111;
	if (!strcmp(ps, "IPoIB"))
		return 0x0002;
	if (!strcmp(ps, "IB"))
		return 0x013f;
	return -1;
}

/* madcmd's view of the rows of its programs; ids it holds that no table names. */
static void merge_daemon(struct ids_list *l)
{
	size_t nrows = l->n;

	for (size_t k = 0; k < l->nreps; k++) {
		const struct madcmd_stat_rep *q = &l->reps[k];
		bool found = false;

		for (size_t i = 0; i < nrows; i++) {
			struct ids_row *r = &l->v[i];
			unsigned long id;
			int ps = ps_num(r->ps);

			if (r->pid != q->pid || !r->daemon)
				continue;
			if (!q->listen && r->commid[0] == '0' &&
			    (id = strtoul(r->commid, NULL, 16)) == q->id) {
				snprintf(r->cmstate, sizeof(r->cmstate), "%s",
					 cm_state_name((enum cm_state)q->state));
				found = true;
			} else if (q->listen && ps >= 0 && !strcmp(r->state, "LISTEN") &&
				   q->service_id ==
				       (((uint64_t)ps << 16) | strtoul(r->sport, NULL, 10))) {
				snprintf(r->cmstate, sizeof(r->cmstate), "LISTEN");
				found = true;
			}
		}
		if (!found) {
			struct ids_row *w = row_add(l);

			if (!w)
				return;
			snprintf(w->dev, sizeof(w->dev), "%s", q->ca);
			w->port = q->port;
			w->pid = q->pid;
			w->daemon = 1;
			w->from_daemon = true;
			strcpy(w->comm, "-");
			proc_comm(q->pid, w->comm, sizeof(w->comm));
			strcpy(w->lqpn, "-");
			strcpy(w->qpt, "-");
			strcpy(w->state, "-");
			strcpy(w->ps, "-");
			strcpy(w->src, "-");
			strcpy(w->sport, "-");
			strcpy(w->dst, "-");
			strcpy(w->dport, "-");
			if (q->listen) {
				strcpy(w->commid, "-");
				strcpy(w->cmstate, "LISTEN");
				if ((q->service_id >> 32) == 0 &&
				    ps_num("TCP") == (int)((q->service_id >> 16) & 0xffff))
					strcpy(w->ps, "TCP");
				else if ((q->service_id >> 32) == 0 &&
					 ps_num("UDP") == (int)((q->service_id >> 16) & 0xffff))
					strcpy(w->ps, "UDP");
				if (strcmp(w->ps, "-"))
					snprintf(w->sport, sizeof(w->sport), "%u",
						 (unsigned)(q->service_id & 0xffff));
			} else {
				snprintf(w->commid, sizeof(w->commid), "0x%08x", q->id);
				snprintf(w->cmstate, sizeof(w->cmstate), "%s",
					 cm_state_name((enum cm_state)q->state));
			}
		}
	}
}

static const char *row_field(const struct ids_row *r, const char *key, char *buf, size_t len)
{
	if (!strcmp(key, "dev"))
		return r->dev;
	if (!strcmp(key, "link")) {
		snprintf(buf, len, "%s/%d", r->dev, r->port);
		return buf;
	}
	if (!strcmp(key, "port")) {
		snprintf(buf, len, "%d", r->port);
		return buf;
	}
	if (!strcmp(key, "pid")) {
		snprintf(buf, len, "%d", r->pid);
		return buf;
	}
	if (!strcmp(key, "comm"))
		return r->comm;
	if (!strcmp(key, "lqpn"))
		return r->lqpn;
	if (!strcmp(key, "qp-type"))
		return r->qpt;
	if (!strcmp(key, "state"))
		return r->state;
	if (!strcmp(key, "ps"))
		return r->ps;
	if (!strcmp(key, "src-addr"))
		return r->src;
	if (!strcmp(key, "src-port"))
		return r->sport;
	if (!strcmp(key, "dst-addr"))
		return r->dst;
	if (!strcmp(key, "dst-port"))
		return r->dport;
	if (!strcmp(key, "comm-id"))
		return r->commid;
	return r->cmstate;
}

static bool numeric_key(const char *key)
{
	return !strcmp(key, "pid") || !strcmp(key, "lqpn") || !strcmp(key, "port") ||
	       !strcmp(key, "src-port") || !strcmp(key, "dst-port") || !strcmp(key, "comm-id");
}

static bool row_matches(const struct ids_row *r, const struct filter *f, int nf)
{
	char buf[IDS_FIELD + 16];

	for (int i = 0; i < nf; i++) {
		const char *v = row_field(r, f[i].key, buf, sizeof(buf));

		if (!strcmp(f[i].key, "link") && !strchr(f[i].val, '/'))
			v = r->dev;
		if (numeric_key(f[i].key)) {
			char *e1, *e2;
			unsigned long a = strtoul(v, &e1, 0), b = strtoul(f[i].val, &e2, 0);

			if (*e1 || *e2 || e1 == v || a != b)
				return false;
		} else if (strcasecmp(v, f[i].val)) {
			return false;
		}
	}
	return true;
}

/* A JSON string (comm may hold anything but NUL and newline). */
static void json_str(const char *key, const char *s)
{
	printf("\"%s\":\"", key);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_json(const struct ids_row *r, bool first)
{
	printf("%s{", first ? "" : ",");
	json_str("ifname", r->dev);
	printf(",\"port\":%d", r->port);
	if (strcmp(r->lqpn, "-"))
		printf(",\"lqpn\":%s", r->lqpn);
	if (strcmp(r->qpt, "-")) {
		putchar(',');
		json_str("qp-type", r->qpt);
	}
	if (strcmp(r->state, "-")) {
		putchar(',');
		json_str("state", r->state);
	}
	if (strcmp(r->ps, "-")) {
		putchar(',');
		json_str("ps", r->ps);
	}
	printf(",\"pid\":%d,", r->pid);
	json_str("comm", r->comm);
	if (strcmp(r->src, "-")) {
		putchar(',');
		json_str("src-addr", r->src);
	}
	if (strcmp(r->sport, "-"))
		printf(",\"src-port\":%s", r->sport);
	if (strcmp(r->dst, "-")) {
		putchar(',');
		json_str("dst-addr", r->dst);
		printf(",\"dst-port\":%s", r->dport);
	}
	if (strcmp(r->commid, "-"))
		printf(",\"comm-id\":%lu", strtoul(r->commid, NULL, 16));
	if (strcmp(r->cmstate, "-")) {
		putchar(',');
		json_str("cm-state", r->cmstate);
	}
	printf(",\"daemon\":%s}", r->daemon ? "true" : "false");
}

static void print_text(const struct ids_row *r)
{
	printf("link %s/%d ", r->dev, r->port);
	if (strcmp(r->lqpn, "-"))
		printf("lqpn %s ", r->lqpn);
	if (strcmp(r->qpt, "-"))
		printf("qp-type %s ", r->qpt);
	printf("state %s ps %s pid %d comm %s ", r->state, r->ps, r->pid, r->comm);
	if (strcmp(r->src, "-"))
		printf("src-addr %s:%s ", r->src, r->sport);
	if (strcmp(r->dst, "-"))
		printf("dst-addr %s:%s ", r->dst, r->dport);
	printf("comm-id %s cm-state %s%s\n", r->commid, r->cmstate,
	       r->from_daemon ? " (madcmd)" : "");
}

int cmd_ids(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"dir", required_argument, NULL, 'd'},
	    {"socket", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *dir = NULL, *sock = NULL, *x;
	struct ids_list l = {0};
	struct filter f[32];
	int json = 0, c, nf = 0, first = 1;
	struct madcmd_host h;
	struct stat st;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+jd:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	for (; optind < argc; optind += 2) {
		int k;

		for (k = 0; filter_keys[k] && strcmp(filter_keys[k], argv[optind]); k++)
			;
		if (!filter_keys[k] || optind + 1 >= argc || nf == 32) {
			fprintf(stderr, "madcm ids: bad filter '%s'\n", argv[optind]);
			usage(stderr);
			return 2;
		}
		f[nf].key = filter_keys[k];
		f[nf++].val = argv[optind + 1];
	}
	if (!dir)
		dir = getenv("MADCM_IDS_DIR");
	if (dir && *dir) {
		read_dir(&l, dir);
	} else {
		char xdg[4096];

		read_dir(&l, "/run/madcm");
		x = getenv("XDG_RUNTIME_DIR");
		if (x && *x && snprintf(xdg, sizeof(xdg), "%s/madcm", x) < (int)sizeof(xdg))
			read_dir(&l, xdg);
	}
	if (!sock)
		sock = madcmd_socket_path();
	if (!stat(sock, &st) && S_ISSOCK(st.st_mode) && !madcmd_host_open(&h, sock)) {
		(void)madcmd_host_stat(&h, keep_rep, &l);
		madcmd_host_close(&h);
	}
	merge_daemon(&l);
	if (json)
		putchar('[');
	for (size_t i = 0; i < l.n; i++) {
		if (!row_matches(&l.v[i], f, nf))
			continue;
		if (json)
			print_json(&l.v[i], first);
		else
			print_text(&l.v[i]);
		first = 0;
	}
	if (json)
		puts("]");
	free(l.v);
	free(l.reps);
	return 0;
}
