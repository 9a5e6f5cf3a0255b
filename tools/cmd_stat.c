/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm stat: print the CM engine counters and live connections that an
 * engine-owning process publishes in a snapshot file (MADCM_STAT_FILE, see
 * include/madcm/cm_stat.h and madcm-stat(1)).
 *
 * The snapshot is line based: "msg NAME sent rcvd retried dropped dups",
 * "conn ID RID STATE SIDE LQPN RQPN SID GUID DLID", a few summary lines,
 * and comments.  Unknown lines are skipped so older tools read newer files.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cm/engine.h"
#include "rtproto/rt_client.h"

#define STAT_MAX_STATES 32

struct state_count {
	char name[24];
	unsigned long n;
};

static void usage(FILE *out)
{
	fputs("Usage: madcm stat [--conns] [--raw] [--watch SECONDS] [FILE]\n"
	      "       madcm stat --daemon [SOCKET]\n"
	      "\n"
	      "Print the CM counters and live connections of a process running the\n"
	      "madcm engine with MADCM_STAT_FILE=FILE in its environment.  FILE\n"
	      "defaults to $MADCM_STAT_FILE.  With --daemon (or when neither FILE\n"
	      "nor MADCM_STAT_FILE is given and madcmd answers), list every id that\n"
	      "madcmd holds for the programs of this host (root sees all of them,\n"
	      "others their own): pid, uid, port, id, state and peer, then the\n"
	      "counters of its path cache.  SOCKET\n"
	      "defaults to $MADCM_DAEMON, else " MADCMD_SOCKET_DEFAULT ".\n"
	      "\n"
	      "  -d, --daemon       ask madcmd\n"
	      "  -c, --conns        list every connection, not only a count per state\n"
	      "  -r, --raw          print the snapshot as it is\n"
	      "  -w, --watch SECS   print again every SECS seconds until interrupted\n"
	      "  -h, --help         this text\n",
	      out);
}

static void count_state(struct state_count *sc, int *nsc, const char *state)
{
	for (int i = 0; i < *nsc; i++)
		if (!strcmp(sc[i].name, state)) {
			sc[i].n++;
			return;
		}
	if (*nsc < STAT_MAX_STATES) {
		snprintf(sc[*nsc].name, sizeof(sc[*nsc].name), "%s", state);
		sc[(*nsc)++].n = 1;
	}
}

static void print_daemon_id(void *arg, const struct madcmd_stat_rep *r)
{
	char gid[40] = "-";

	(void)arg;
	if (r->remote_lid || r->remote_gid[8]) {
		int o = 0;

		for (int i = 0; i < 16; i += 2)
			o += snprintf(gid + o, sizeof(gid) - (size_t)o, "%s%02x%02x", i ? ":" : "",
				      r->remote_gid[i], r->remote_gid[i + 1]);
	}
	if (r->listen)
		printf("%-8d %-6u %s/%-3d listen %-10u %-16s sid 0x%016llx\n", r->pid, r->uid,
		       r->ca, r->port, r->id, "LISTEN", (unsigned long long)r->service_id);
	else
		printf("%-8d %-6u %s/%-3d conn   0x%08x %-16s lid %u gid %s\n", r->pid, r->uid,
		       r->ca, r->port, r->id, cm_state_name((enum cm_state)r->state), r->remote_lid,
		       gid);
}

/* The ids madcmd holds; 0, 1 when it does not answer. */
static int print_daemon(const char *path)
{
	struct madcmd_stat_end end;
	struct madcmd_host h;
	int n, rc = madcmd_host_open(&h, path);

	if (rc) {
		fprintf(stderr, "madcm stat: madcmd at %s: %s\n", path, strerror(-rc));
		return 1;
	}
	printf("%-8s %-6s %-9s %-6s %-10s %-16s %s\n", "PID", "UID", "PORT", "KIND", "ID", "STATE",
	       "PEER");
	memset(&end, 0, sizeof(end));
	n = madcmd_host_stat_end(&h, print_daemon_id, NULL, &end);
	madcmd_host_close(&h);
	if (n < 0) {
		fprintf(stderr, "madcm stat: madcmd at %s: %s\n", path, strerror(-n));
		return 1;
	}
	printf("# %d ids\n", n);
	if (end.heap_kib) /* what madcmd's sessions, ids and connections take */
		printf("heap_kib %u\n", end.heap_kib);
	if (end.ports) { /* host-wide: one cache per port, shared by every program */
		printf(
		    "path cache (%u ports): path_asks %llu path_queries %llu path_coalesced %llu "
		    "cache_hits_late %llu cache_dropped %llu paths_dropped %llu\n",
		    end.ports, (unsigned long long)end.path_asks,
		    (unsigned long long)end.path_queries, (unsigned long long)end.path_coalesced,
		    (unsigned long long)end.cache_hits_late, (unsigned long long)end.cache_dropped,
		    (unsigned long long)end.paths_dropped);
		printf("path cache flushes: cache_flush_rereg %llu cache_flush_pkey %llu "
		       "cache_flush_port %llu cache_flush_poll %llu\n",
		       (unsigned long long)end.cache_flush_rereg,
		       (unsigned long long)end.cache_flush_pkey,
		       (unsigned long long)end.cache_flush_port,
		       (unsigned long long)end.cache_flush_poll);
		printf("service cache: service_asks %llu service_queries %llu "
		       "service_coalesced %llu service_dropped %llu\n",
		       (unsigned long long)end.service_asks,
		       (unsigned long long)end.service_queries,
		       (unsigned long long)end.service_coalesced,
		       (unsigned long long)end.service_dropped);
	}
	return 0;
}

static int print_snapshot(const char *path, int conns, int raw)
{
	struct state_count sc[STAT_MAX_STATES];
	char line[512];
	int nsc = 0, header = 0, nconn = 0;
	struct stat stt;
	FILE *f;

	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "madcm stat: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (!fgets(line, sizeof(line), f) || strncmp(line, "# madcm cm stat", 15)) {
		fprintf(stderr, "madcm stat: %s: not a madcm CM stat snapshot\n", path);
		fclose(f);
		return 1;
	}
	if (raw) {
		fputs(line, stdout);
		while (fgets(line, sizeof(line), f))
			fputs(line, stdout);
		fclose(f);
		return 0;
	}
	if (!fstat(fileno(f), &stt))
		printf("snapshot %s, %ld s old\n", path, (long)(time(NULL) - stt.st_mtime));
	while (fgets(line, sizeof(line), f)) {
		char name[24], rid[16], lid[16], state[24], side[16], lq[16], rq[16], sid[24],
		    guid[24];
		unsigned long long v[5];
		unsigned dlid;

		if (line[0] == '#')
			continue;
		if (!strncmp(line, "ca_guid ", 8) || !strncmp(line, "conns ", 6) ||
		    !strncmp(line, "errors ", 7)) {
			fputs(line, stdout);
			continue;
		}
		if (sscanf(line, "msg %23s %llu %llu %llu %llu %llu", name, &v[0], &v[1], &v[2],
			   &v[3], &v[4]) == 6) {
			if (!header++)
				printf("%-9s %12s %12s %10s %10s %10s\n", "message", "sent",
				       "received", "retried", "dropped", "dups");
			printf("%-9s %12llu %12llu %10llu %10llu %10llu\n", name, v[0], v[1], v[2],
			       v[3], v[4]);
		} else if (!strncmp(line, "conn ", 5) &&
			   sscanf(line, "conn %15s %15s %23s %15s %15s %15s %23s %23s %u", lid, rid,
				  state, side, lq, rq, sid, guid, &dlid) == 9) {
			if (conns) {
				if (!nconn)
					printf("%-10s %-10s %-13s %-7s %-8s %-8s %-18s %-18s %s\n",
					       "local_id", "remote_id", "state", "side", "qpn",
					       "rqpn", "service_id", "remote_guid", "dlid");
				printf("%-10s %-10s %-13s %-7s %-8s %-8s %-18s %-18s %u\n", lid,
				       rid, state, side, lq, rq, sid, guid, dlid);
			}
			nconn++;
			count_state(sc, &nsc, state);
		}
	}
	fclose(f);
	printf("connections listed: %d", nconn);
	for (int i = 0; i < nsc; i++)
		printf("%s%s %lu", i ? ", " : " (", sc[i].name, sc[i].n);
	puts(nsc ? ")" : "");
	return 0;
}

int cmd_stat(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"conns", no_argument, NULL, 'c'},	     {"raw", no_argument, NULL, 'r'},
	    {"watch", required_argument, NULL, 'w'}, {"help", no_argument, NULL, 'h'},
	    {"daemon", no_argument, NULL, 'd'},	     {NULL, 0, NULL, 0},
	};
	int conns = 0, raw = 0, watch = 0, daemon = 0, c, ret;
	struct stat st;
	const char *path;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "crw:hd", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			daemon = 1;
			break;
		case 'c':
			conns = 1;
			break;
		case 'r':
			raw = 1;
			break;
		case 'w':
			watch = (int)strtol(optarg, &end, 10);
			if (*end || watch <= 0) {
				fprintf(stderr, "madcm stat: bad --watch value '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc - 1) {
		usage(stderr);
		return 2;
	}
	if (daemon)
		return print_daemon(optind < argc ? argv[optind] : madcmd_socket_path());
	path = optind < argc ? argv[optind] : getenv("MADCM_STAT_FILE");
	if ((!path || !*path) && !stat(madcmd_socket_path(), &st) && S_ISSOCK(st.st_mode))
		return print_daemon(madcmd_socket_path());
	if (!path || !*path) {
		fprintf(stderr, "madcm stat: no snapshot file: give FILE or set MADCM_STAT_FILE\n");
		return 2;
	}
	for (;;) {
		ret = print_snapshot(path, conns, raw);
		if (!watch || ret)
			return ret;
		fflush(stdout);
		sleep((unsigned)watch);
		putchar('\n');
	}
}
