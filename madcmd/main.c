/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd: the per-host daemon that owns the CM of every port (see
 * madcmd(8), docs/madcmd-protocol.md).  This file is the program around
 * the core (madcmd/madcmd.h): options, the listening socket, signals and
 * logging; one loop on one thread runs everything.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "madcmd/madcmd.h"
#include "rtproto/rt_proto.h"

static bool quit;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: madcmd [-f] [-s PATH] [-l stderr|syslog] [-v] [--max-ids N]\n"
		"              [--max-events N] [--max-sessions N] [--sndbuf BYTES]\n"
		"              [--sched batch|normal]\n"
		"  -s PATH   socket (default $%s, else %s)\n"
		"  -f        stay in the foreground (the default; for systemd Type=simple)\n"
		"  -l WHERE  log to stderr (default) or syslog\n"
		"  -v        more log; counters at exit\n"
		"  --sndbuf B send room of each session's socket (default 1 MiB)\n"
		"  --sched P batch (the default: the daemon woken by a program's command\n"
		"            never preempts the program) or normal\n",
		MADCMD_SOCKET_ENV, MADCMD_SOCKET_DEFAULT);
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || !*s || *end || v == 0 || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/*
 * SCHED_BATCH: a task woken under this policy never preempts the running
 * one.  Most of a program's commands need no answer (ACCEPT, RTU,
 * DISCONNECT): under SCHED_NORMAL the daemon, woken by such a command on
 * the program's CPU, preempts the program in the middle of its call (the
 * RTU before the program's ESTABLISHED returns), and a program waiting
 * for an answer blocks at once either way.  Under SCHED_BATCH the daemon
 * runs when the program blocks or on another CPU, and takes what came
 * meanwhile in one turn (docs/results/connect-latency.md has the measurements).
 * On a host whose CPUs are all busy it waits for a time slice, which the
 * CM's timeouts (seconds) do not notice.
 */
static void set_sched(bool batch)
{
	struct sched_param sp = {0};

	if (batch && sched_setscheduler(0, SCHED_BATCH, &sp))
		madcmd_log(LOG_WARNING, "SCHED_BATCH: %s (running as before)", strerror(errno));
}

/* mkdir -p of the socket's directory (mode 0755: the socket is 0666). */
static int make_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(dir, 0755) && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int open_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		madcmd_log(LOG_ERR, "%s: socket path too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	rc = make_parent(path);
	if (rc) {
		madcmd_log(LOG_ERR, "%s: cannot create its directory: %s", path, strerror(-rc));
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		madcmd_log(LOG_ERR, "socket: %s", strerror(errno));
		return -1;
	}
	/* A socket nobody answers on is a stale one: replace it. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		madcmd_log(LOG_ERR, "%s: another madcmd is serving it", path);
		close(fd);
		return -1;
	}
	close(fd);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, 0666) || listen(fd, 128)) {
		madcmd_log(LOG_ERR, "%s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

struct sig_ctx {
	int fd;
	struct madcmd *d;
};

static void on_signal(struct mad_loop *l, int fd, void *arg)
{
	struct sig_ctx *sc = arg;
	struct signalfd_siginfo si;

	(void)l;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			madcmd_log_counters(sc->d);
		} else {
			madcmd_log(LOG_INFO, "signal %u: exiting", si.ssi_signo);
			quit = true;
		}
	}
}

int main(int argc, char **argv)
{
	enum { OPT_MAX_IDS = 256, OPT_MAX_EVENTS, OPT_MAX_SESSIONS, OPT_SCHED, OPT_SNDBUF };
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"foreground", no_argument, NULL, 'f'},
	    {"log", required_argument, NULL, 'l'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"max-ids", required_argument, NULL, OPT_MAX_IDS},
	    {"max-events", required_argument, NULL, OPT_MAX_EVENTS},
	    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
	    {"sched", required_argument, NULL, OPT_SCHED},
	    {"sndbuf", required_argument, NULL, OPT_SNDBUF},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *path = madcmd_socket_path();
	enum madcmd_log_to log_to = MADCMD_LOG_STDERR;
	struct madcmd_params p = {0};
	struct mad_loop *loop = NULL;
	struct madcmd *d = NULL;
	struct sig_ctx sc = {.fd = -1};
	sigset_t set;
	int verbose = 0, c, lfd, rc, status = 1;
	bool batch = true;

	while ((c = getopt_long(argc, argv, "s:fl:vh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'f':
			break;
		case 'l':
			if (!strcmp(optarg, "stderr")) {
				log_to = MADCMD_LOG_STDERR;
			} else if (!strcmp(optarg, "syslog")) {
				log_to = MADCMD_LOG_SYSLOG;
			} else {
				fprintf(stderr, "madcmd: -l takes stderr or syslog\n");
				return 2;
			}
			break;
		case 'v':
			verbose++;
			break;
		case OPT_MAX_IDS:
		case OPT_MAX_EVENTS:
		case OPT_MAX_SESSIONS:
		case OPT_SNDBUF: {
			uint32_t *v = c == OPT_MAX_IDS	      ? &p.max_ids
				      : c == OPT_MAX_EVENTS   ? &p.max_events
				      : c == OPT_MAX_SESSIONS ? &p.max_sessions
							      : &p.sndbuf;

			if (parse_u32(optarg, v)) {
				fprintf(stderr, "madcmd: %s: not a positive number\n", optarg);
				return 2;
			}
			break;
		}
		case OPT_SCHED:
			if (strcmp(optarg, "batch") && strcmp(optarg, "normal")) {
				fprintf(stderr, "madcmd: --sched takes batch or normal\n");
				return 2;
			}
			batch = !strcmp(optarg, "batch");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	madcmd_log_setup(log_to, verbose ? LOG_DEBUG : LOG_INFO);
	set_sched(batch);
	/* Signals arrive as a readable fd on the loop, never inside it. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	sc.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sc.fd < 0) {
		madcmd_log(LOG_ERR, "signalfd: %s", strerror(errno));
		return 1;
	}
	lfd = open_socket(path);
	if (lfd < 0)
		return 1;
	rc = mad_loop_create(&loop, NULL, NULL);
	if (rc) {
		madcmd_log(LOG_ERR, "loop: %s", strerror(-rc));
		goto out;
	}
	p.loop = loop;
	p.port_events = true;
	rc = madcmd_open(&d, &p);
	if (rc) {
		madcmd_log(LOG_ERR, "cannot start: %s", strerror(-rc));
		goto out;
	}
	sc.d = d;
	rc = mad_loop_watch_fd(loop, sc.fd, on_signal, &sc);
	if (!rc)
		rc = madcmd_listen(d, lfd);
	if (rc) {
		madcmd_log(LOG_ERR, "cannot serve: %s", strerror(-rc));
		goto out;
	}
	madcmd_log(LOG_INFO, "listening on %s (%u ports)", path, madcmd_port_count(d));
	while (!quit)
		mad_loop_run_once(loop, -1);
	if (verbose)
		madcmd_log_counters(d);
	status = 0;
out:
	if (d) {
		mad_loop_unwatch_fd(loop, sc.fd);
		madcmd_close(d);
	}
	if (loop)
		mad_loop_destroy(loop);
	close(lfd);
	unlink(path);
	close(sc.fd);
	return status;
}
