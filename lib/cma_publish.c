/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The process's id table, published for `madcm ids` (madcm-ids(1)): what
 * the kernel's rdma_cm answers to `rdma resource show cm_id`, which no
 * other process can ask of an in-process CM.  The table is a small text
 * file, DIR/ids.PID, mode 0600, where DIR is $MADCM_IDS_DIR, else
 * /run/madcm when it is writable, else $XDG_RUNTIME_DIR/madcm.
 *
 * Cheap on the connect path: a change (a state, an event, an id made or
 * freed) only sets a flag under cma.lock; the first change after a write
 * posts one command to the progress loop, which arms a timer, and the
 * timer writes the table CMA_PUBLISH_MS later (on the loop, outside
 * cma.lock except for the copy).  The file goes at exit (a destructor)
 * or when the table is empty; one left by a killed process is removed by
 * `madcm ids`, which checks the pid and its start time.
 *
 * Line format (one version; `madcm ids` skips lines it does not know):
 *   # madcm ids 1
 *   pid PID / start STARTTIME / comm COMM / daemon 0|1
 *   id DEV PORT LQPN QPTYPE STATE PS SRC SPORT DST DPORT COMMID CMSTATE
 * with "-" for what an id does not have.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/ib.h>

#include "cm/engine.h"
#include "lib/cma.h"
#include "mad/loop.h"

/* At most one write of the table this often. */
#define CMA_PUBLISH_MS 100

struct pub_row {
	char dev[IBV_SYSFS_NAME_MAX];
	int port;
	long lqpn; /* -1: no QP */
	int qpt;
	enum cma_state state;
	int ps;
	struct sockaddr_storage src, dst;
	bool has_conn, listening;
	uint32_t conn;
	struct cm_runtime *rt;
};

static struct {
	bool pending; /* a write is posted or armed (under cma.lock) */
	int enabled;  /* 0: not yet known, 1: on, -1: off */
	pid_t owner;  /* the process whose file `path` is */
	char path[PATH_MAX];
	struct mad_loop_cmd cmd;
	struct mad_timer timer;
	struct mad_loop *loop;
	bool written;
	bool exiting; /* the destructor ran: write nothing more */
	/*
	 * Held over a whole write (temporary file to rename) and by the
	 * destructor's removal: an exit while the loop thread writes must
	 * not leave the file behind it (a leaf lock; cma.lock is not held).
	 */
	pthread_mutex_t file_lock;
	/*
	 * The rows of the table being written, kept from one write to the
	 * next (the loop thread's alone): reachable from here, not only from
	 * the loop thread's stack, so that a leak check at an exit that finds
	 * that thread mid-write (LeakSanitizer cannot always stop it) does
	 * not call them lost.
	 */
	struct pub_row *rows;
	size_t rows_cap;
} pub = {.file_lock = PTHREAD_MUTEX_INITIALIZER};

/* The directory to publish in, made if needed: 0, or -1 (publish nothing). */
static int pub_dir(char *dir, size_t len)
{
	const char *e = getenv("MADCM_IDS_DIR");
	const char *x = getenv("XDG_RUNTIME_DIR");

	if (e)
		return *e && snprintf(dir, len, "%s", e) < (int)len ? 0 : -1;
	(void)mkdir("/run/madcm", 0755);
	if (!access("/run/madcm", W_OK | X_OK))
		return snprintf(dir, len, "/run/madcm") < (int)len ? 0 : -1;
	if (!x || !*x || snprintf(dir, len, "%s/madcm", x) >= (int)len)
		return -1;
	(void)mkdir(dir, 0700);
	return access(dir, W_OK | X_OK) ? -1 : 0;
}

static bool pub_enable(void)
{
	char dir[PATH_MAX - 32];

	if (pub.enabled && pub.owner == getpid())
		return pub.enabled > 0;
	pub.owner = getpid();
	pub.written = false;
	pub.enabled = -1;
	if (cma.umad_ops || pub_dir(dir, sizeof(dir)))
		return false;
	snprintf(pub.path, sizeof(pub.path), "%s/ids.%d", dir, (int)pub.owner);
	pub.enabled = 1;
	return true;
}

static void copy_row(struct cma_id *id, void *arg)
{
	struct pub_row **r = arg;
	struct pub_row *w = (*r)++;

	memset(w, 0, sizeof(*w));
	if (id->port && id->port->dev->verbs)
		snprintf(w->dev, sizeof(w->dev), "%s",
			 ibv_get_device_name(id->port->dev->verbs->device));
	w->port = id->port ? id->port->port_num : 0;
	/* Not id.qp->qp_num: the program may have freed the QP (cma.h). */
	w->lqpn = id->has_qp_num ? (long)id->qp_num : -1;
	w->qpt = id->id.qp_type;
	w->state = id->state;
	w->ps = id->id.ps;
	memcpy(&w->src, &id->id.route.addr.src_storage, sizeof(w->src));
	memcpy(&w->dst, &id->id.route.addr.dst_storage, sizeof(w->dst));
	w->has_conn = id->has_conn;
	w->conn = id->conn;
	w->listening = id->listening;
	w->rt = id->port ? id->port->rt : NULL;
}

static void count_id(struct cma_id *id, void *arg)
{
	(void)id;
	(*(size_t *)arg)++;
}

static const char *qpt_name(int t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	case IBV_QPT_RAW_PACKET:
		return "RAW_PACKET";
	case IBV_QPT_XRC_SEND:
		return "XRC_INI";
	case IBV_QPT_XRC_RECV:
		return "XRC_TGT";
	default:
		return "-";
	}
}

static const char *ps_name(int ps)
{
	switch (ps) {
	case RDMA_PS_TCP:
		return "TCP";
	case RDMA_PS_UDP:
		return "UDP";
	case RDMA_PS_IPOIB:
		return "IPoIB";
	case RDMA_PS_IB:
		return "IB";
	default:
		return "-";
	}
}

/* "ADDR PORT" of a socket address, "- -" when it has none. */
static void put_addr(FILE *f, const struct sockaddr_storage *ss)
{
	char a[INET6_ADDRSTRLEN];
	const void *p = NULL;
	int fam = AF_INET6;
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)ss;

		fam = AF_INET;
		p = &s->sin_addr;
		port = ntohs(s->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)ss;

		p = &s->sin6_addr;
		port = ntohs(s->sin6_port);
	} else if (ss->ss_family == AF_IB) {
		const struct sockaddr_ib *s = (const void *)ss;

		p = &s->sib_addr;
		port = (unsigned)(be64toh(s->sib_sid) & 0xffff);
	}
	if (!p || !inet_ntop(fam, p, a, sizeof(a)))
		fputs(" - -", f);
	else
		fprintf(f, " %s %u", a, port);
}

static void pub_start_line(FILE *f)
{
	char comm[64] = "-", stat[1024], *s;
	unsigned long long start = 0;
	FILE *p;
	size_t n;

	p = fopen("/proc/self/comm", "r");
	if (p) {
		if (fgets(comm, sizeof(comm), p))
			comm[strcspn(comm, "\n ")] = 0;
		fclose(p);
	}
	/* The start time (field 22) tells a reused pid from this process. */
	p = fopen("/proc/self/stat", "r");
	if (p) {
		n = fread(stat, 1, sizeof(stat) - 1, p);
		stat[n] = 0;
		fclose(p);
		s = strrchr(stat, ')');
		if (s && sscanf(s + 2,
				"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
				"%*d %*d %*d %*d %llu",
				&start) != 1)
			start = 0;
	}
	fprintf(f, "# madcm ids 1\npid %d\nstart %llu\ncomm %s\ndaemon %d\n", (int)getpid(), start,
		comm[0] ? comm : "-", cma.daemon ? 1 : 0);
}

/* Write the rows to the file (atomically: a temporary renamed). */
static void pub_write_locked(const struct pub_row *rows, size_t n);

static void pub_write(const struct pub_row *rows, size_t n)
{
	pthread_mutex_lock(&pub.file_lock);
	if (!pub.exiting)
		pub_write_locked(rows, n);
	pthread_mutex_unlock(&pub.file_lock);
}

static void pub_write_locked(const struct pub_row *rows, size_t n)
{
	char tmp[PATH_MAX + 8];
	FILE *f;
	int fd;

	if (!n) {
		if (pub.written)
			unlink(pub.path);
		pub.written = false;
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", pub.path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	pub_start_line(f);
	for (size_t i = 0; i < n; i++) {
		const struct pub_row *r = &rows[i];
		enum cm_state st = CM_ST_IDLE;
		bool have_st = false;

		/* In-process only: through madcmd, `madcm ids` asks the daemon. */
		if (r->has_conn && r->rt && !cma.daemon) {
			struct cm_rt_cmd c = {.op = CM_RT_CONN_STATE, .id = r->conn};

			if (cm_runtime_exec(r->rt, &c) == 0) {
				st = c.state;
				have_st = true;
			}
		}
		fprintf(f, "id %s %d", r->dev[0] ? r->dev : "-", r->port);
		if (r->lqpn >= 0)
			fprintf(f, " %ld", r->lqpn);
		else
			fputs(" -", f);
		fprintf(f, " %s %s %s", qpt_name(r->qpt), cma_state_name(r->state), ps_name(r->ps));
		put_addr(f, &r->src);
		put_addr(f, &r->dst);
		if (r->has_conn)
			fprintf(f, " 0x%08x %s\n", r->conn, have_st ? cm_state_name(st) : "-");
		else
			fprintf(f, " - %s\n", r->listening ? "LISTEN" : "-");
	}
	if (fclose(f) || rename(tmp, pub.path)) {
		unlink(tmp);
		return;
	}
	pub.written = true;
}

/* The timer, on the loop: copy the table under cma.lock, write it outside. */
static void pub_fire(struct mad_timer *t, void *arg)
{
	struct pub_row *w;
	size_t n = 0;

	(void)t;
	(void)arg;
	cma_lock();
	pub.pending = false;
	if (pub.owner != getpid()) {
		cma_unlock();
		return;
	}
	cma_ids_foreach(count_id, &n);
	if (n > pub.rows_cap) {
		w = realloc(pub.rows, n * sizeof(*w));
		if (!w) {
			cma_unlock();
			return;
		}
		pub.rows = w;
		pub.rows_cap = n;
	}
	w = pub.rows;
	cma_ids_foreach(copy_row, &w);
	cma_unlock();
	pub_write(pub.rows, n);
}

static void pub_arm(struct mad_loop *l, struct mad_loop_cmd *cmd)
{
	(void)cmd;
	if (!mad_timer_armed(&pub.timer))
		mad_timer_arm(mad_loop_timers(l), &pub.timer, CMA_PUBLISH_MS * 1000000ull, pub_fire,
			      NULL);
}

void cma_publish_mark(void)
{
	cma_assert_locked();
	if (pub.pending || !cma.loop || !pub_enable())
		return;
	pub.cmd.run = pub_arm;
	pub.loop = cma.loop;
	if (mad_loop_post(cma.loop, &pub.cmd) == 0)
		pub.pending = true;
}

void cma_publish_forget(void)
{
	/* A fork()ed child: the parent's command and timer are on its loop. */
	memset(&pub.cmd, 0, sizeof(pub.cmd));
	memset(&pub.timer, 0, sizeof(pub.timer));
	pub.pending = false;
	pub.enabled = 0;
	pub.written = false;
	/* The parent's writer may have held it at the fork: the child's is free. */
	pthread_mutex_init(&pub.file_lock, NULL);
}

__attribute__((destructor)) static void cma_publish_exit(void)
{
	const struct timespec ms = {0, 1000000};
	bool locked = false;

	/* A write under way ends first (briefly: an exit must not hang). */
	for (int i = 0; i < 200 && !(locked = !pthread_mutex_trylock(&pub.file_lock)); i++)
		nanosleep(&ms, NULL);
	pub.exiting = true;
	if (pub.enabled > 0 && pub.owner == getpid() && pub.written)
		unlink(pub.path);
	if (locked)
		pthread_mutex_unlock(&pub.file_lock);
}
