/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Process state of lib/: the devices (opened once, as librdmacm's
 * ucma_init does, so every id reports the same ibv_context that
 * rdma_get_devices returns), their ports, the CM runtime of each port
 * (opened when an id first needs that port: it owns the port's CM agent,
 * which one process per port may hold), the progress loop they share and
 * the address sources.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cm/runtime.h"
#include "lib/addr.h"
#include "lib/cma.h"
#include "lib/cma_roce.h" /* RoCE hooks */
#include "mad/loop.h"
#include "mad/timer.h"

struct cma_global cma = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

#ifdef MADCM_DEBUG
__thread bool cma_lock_owned; /* this thread holds cma.lock (cma_lock) */
#endif
/*
 * The first use's set-up, made under init_lock until it succeeds: a
 * failure (ENOMEM, no device yet) undoes what it made and the next call
 * tries again, as rdma-core's ucma_init does; init_done is read without
 * the lock once set.
 */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static bool init_done;

uint32_t cma_random32(void)
{
	/* xorshift64*, seeded from getrandom: PSNs, ports, not secrets. */
	uint64_t x = cma.rand_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	cma.rand_state = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

static int open_device(struct cma_device *d, struct ibv_device *dev)
{
	d->verbs = ibv_open_device(dev);
	if (!d->verbs)
		return -1;
	if (ibv_query_device(d->verbs, &d->attr)) {
		ibv_close_device(d->verbs);
		d->verbs = NULL;
		return -1;
	}
	d->nports = d->attr.phys_port_cnt;
	d->ports = calloc((size_t)d->nports, sizeof(*d->ports));
	if (!d->ports) {
		/* The slot is reused for the next device: leave nothing open in it. */
		ibv_close_device(d->verbs);
		d->verbs = NULL;
		return -ENOMEM;
	}
	for (int i = 0; i < d->nports; i++) {
		struct cma_port *p = &d->ports[i];
		struct ibv_port_attr pa;
		union ibv_gid gid;

		p->dev = d;
		p->port_num = (uint8_t)(i + 1);
		if (!ibv_query_port(d->verbs, p->port_num, &pa)) {
			p->active = pa.state == IBV_PORT_ACTIVE;
			p->lid = pa.lid;
			cma_roce_port_init(p, &pa); /* RoCE: link layer Ethernet */
		}
		if (!ibv_query_gid(d->verbs, p->port_num, 0, &gid))
			memcpy(p->gid, gid.raw, 16);
	}
	return 0;
}

/* What a failed init_try() made, undone: the next call starts afresh. */
static void init_undo(void)
{
	if (cma.loop)
		mad_loop_destroy(cma.loop);
	cma.loop = NULL;
	madcm_addrs_close(cma.addrs);
	cma.addrs = NULL;
	cma_roce_ports_forget();
	for (int i = 0; i < cma.ndevs; i++) {
		free(cma.devs[i].ports);
		ibv_close_device(cma.devs[i].verbs);
	}
	free(cma.devs);
	cma.devs = NULL;
	cma.ndevs = 0;
	if (cma.dev_list)
		ibv_free_device_list(cma.dev_list);
	cma.dev_list = NULL;
}

/* One of the environment's CM settings: its value in [0, max], or -1. */
static int cm_setting(const char *name, unsigned max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return -1;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n > max || v[0] == '-') {
		fprintf(stderr, "librdmacm (madcm): %s=%s is not 0 to %u: ignored\n", name, v, max);
		return -1;
	}
	return (int)n;
}

/*
 * MADCM_CM_RESPONSE_TIMEOUT (the 4.096 us x 2^t exponent the REQ gives
 * for both ends, 0 to 31) and MADCM_CM_RETRIES (0 to 15): the kernel's
 * values otherwise, which no librdmacm call changes.
 */
static void load_cm_tunables(void)
{
	int t = cm_setting("MADCM_CM_RESPONSE_TIMEOUT", 31);
	int r = cm_setting("MADCM_CM_RETRIES", 15);

	cma.cm_response_timeout = (uint8_t)(t >= 0 ? t : CMA_CM_RESPONSE_TIMEOUT);
	cma.cm_retries = (uint8_t)(r >= 0 ? r : CMA_MAX_CM_RETRIES);
	cma.cm_tuned = t >= 0 || r >= 0;
}

/* 0, or the errno of the failure (then init_undo()). */
static int init_try(void)
{
	char err[256] = "";
	int n = 0, rc;

	if (getrandom(&cma.rand_state, sizeof(cma.rand_state), 0) != sizeof(cma.rand_state))
		cma.rand_state = (uint64_t)(uintptr_t)&cma ^ 0x9E3779B97F4A7C15ull;
	cma.rand_state |= 1;
	cma.dev_list = ibv_get_device_list(&n);
	if (!cma.dev_list || n <= 0)
		return ENODEV;
	cma.devs = calloc((size_t)n, sizeof(*cma.devs));
	if (!cma.devs)
		return ENOMEM;
	for (int i = 0; i < n; i++) {
		rc = open_device(&cma.devs[cma.ndevs], cma.dev_list[i]);
		if (rc == -ENOMEM)
			return ENOMEM; /* not a device left out for good: all again later */
		if (!rc)
			cma.ndevs++;
	}
	if (!cma.ndevs)
		return ENODEV;
	/* RoCE hook: beside the kernel's ib_cm madcm can only fail (or hang). */
	rc = cma_roce_kernel_cm_check();
	if (rc)
		return -rc;
	rc = madcm_addrs_open(&cma.addrs, err, sizeof(err));
	if (rc) {
		/* A broken address file is the user's to fix: say where. */
		fprintf(stderr, "librdmacm (madcm): %s\n", err[0] ? err : strerror(-rc));
		cma.addrs = NULL;
	}
	rc = mad_loop_create(&cma.loop, NULL, NULL);
	if (!rc)
		rc = mad_loop_start(cma.loop);
	if (rc)
		return -rc;
	/* Last: their threads (detached, for the life of the process) are not undone. */
	for (int i = 0; i < cma.ndevs; i++)
		cma_async_start(&cma.devs[i]);
	cma_fork_arm();
	cma_daemon_choose();
	cma_exit_arm();
	load_cm_tunables();
	return 0;
}

void cma_fork_reinit(void)
{
	int rc = mad_loop_create(&cma.loop, NULL, NULL);

	if (!rc)
		rc = mad_loop_start(cma.loop);
	if (rc) {
		cma.init_err = -rc;
		return;
	}
	cma_daemon_choose();
	cma_exit_arm();
}

void cma_test_env(const struct mad_umad_ops *ops, void *ctx)
{
	cma.umad_ops = ops;
	cma.umad_ctx = ctx;
}

int cma_init(void)
{
	if (!__atomic_load_n(&init_done, __ATOMIC_ACQUIRE)) {
		int err = 0;

		pthread_mutex_lock(&init_lock);
		if (!init_done) {
			err = init_try();
			if (err)
				init_undo();
			else
				__atomic_store_n(&init_done, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&init_lock);
		if (err)
			return cma_err(err);
	}
	if (!cma.init_err && cma.forked)
		pthread_once(&cma.fork_once, cma_fork_reinit);
	if (cma.init_err)
		return cma_err(cma.init_err);
	return 0;
}

/*
 * One open of a CM runtime at a time.  A port's CM class belongs to one
 * agent, so a second open racing the first would fail ("another process
 * owns the port's CM class") and fail its caller, when it only had to wait
 * for the first and use its runtime.  Taken before cma.lock, never while
 * holding it or the loop; opens are rare, so one lock for all ports.
 */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * fork() waits for a first-use init and an open under way, so that the
 * child's copies of both locks are free (init_lock, then open_lock: an
 * open comes after a finished init, which no longer takes init_lock).
 */
void cma_open_lock_take(void)
{
	pthread_mutex_lock(&init_lock);
	pthread_mutex_lock(&open_lock);
}

void cma_open_lock_give(void)
{
	pthread_mutex_unlock(&open_lock);
	pthread_mutex_unlock(&init_lock);
}

static int port_runtime_open(struct cma_port *p, struct cm_runtime **out);

int cma_port_runtime(struct cma_port *p, struct cm_runtime **out)
{
	int rc;

	cma_assert_unlocked();
	cma_lock();
	if (p->rt && !p->rt_lost) {
		bool renotice = p->notice_failed;

		*out = p->rt;
		cma_unlock();
		if (renotice)
			cma_notice_retry(p); /* a failed subscription (cma_notice.c) */
		return 0;
	}
	cma_unlock();
	pthread_mutex_lock(&open_lock);
	rc = port_runtime_open(p, out);
	pthread_mutex_unlock(&open_lock);
	return rc;
}

static int port_runtime_open(struct cma_port *p, struct cm_runtime **out)
{
	struct cm_runtime_params rp = {0};
	struct cm_runtime *rt;
	int rc;

	cma_lock();
	if (p->fork_busy && !cma.daemon) {
		bool say = !p->fork_said;

		p->fork_said = true;
		cma_unlock();
		if (say)
			fprintf(stderr,
				"librdmacm (madcm): cannot open the CM on %s port %u: %s (the "
				"port's CM is this fork()ed process's parent's: use madcmd)\n",
				ibv_get_device_name(p->dev->verbs->device), p->port_num,
				strerror(EBUSY));
		*out = NULL;
		return -EBUSY;
	}
	(void)cma_port_lost_runtime(p); /* madcmd went away: a new session */
	if (p->rt || (p->rt_err &&
		      mad_clock_monotonic_ns(NULL) - p->rt_err_ns < CMA_RT_RETRY_MS * 1000000ull)) {
		*out = p->rt;
		rc = p->rt_err;
		cma_unlock();
		return rc;
	}
	cma_unlock();
	rp.loop = cma.loop;
	rp.ops = cma.umad_ops;
	rp.ops_ctx = cma.umad_ctx;
	rp.ca = ibv_get_device_name(p->dev->verbs->device);
	rp.port = p->port_num;
	rp.sa = true;
	rp.on_loop_event = cma_on_cm_event;
	rp.on_loop_event_arg = p;
	rp.service_bound = cma_ports_service_bound;
	/* rdma_cm's delayed MRA for each REQ and REP: armed as it is delivered. */
	rp.mra_on_delivery = CMA_MRA_SERVICE_TIMEOUT;
	rp.daemon = cma.daemon;		 /* madcmd's port, or NULL: this process's */
	cma_roce_runtime_params(p, &rp); /* RoCE hook: no SA, QP SGID index */
	rc = cm_runtime_open(&rt, &rp);
	cma_lock();
	if (p->rt) { /* another thread won */
		cma_unlock();
		if (!rc)
			cm_runtime_close(rt);
		*out = p->rt;
		return 0;
	}
	if (rc && rc != p->rt_err) {
		/*
		 * Without madcmd one process per port may own the CM class
		 * (the MAD layer gives it to one agent): say so once.
		 */
		fprintf(stderr, "librdmacm (madcm): cannot open the CM on %s port %u: %s%s\n",
			rp.ca, p->port_num, strerror(-rc),
			cma.daemon && rc == -EBUSY
			    ? " (madcmd cannot open it: another process owns the port's CM class; "
			      "madcmd looks again every few seconds)"
			: cma.daemon ? " (through madcmd)"
			: rc == -EINVAL || rc == -EBUSY
			    ? " (another process owns the port's CM class: one madcm "
			      "process per port without madcmd)"
			: rc == -EACCES || rc == -EPERM ? " (no access to the port's umad device)"
							: "");
	}
	if (rc) {
		/* Kept for CMA_RT_RETRY_MS, then the port is tried again. */
		p->rt_err = rc;
		p->rt_err_ns = mad_clock_monotonic_ns(NULL);
	} else {
		p->rt = rt;
		p->rt_err = 0;
	}
	*out = p->rt;
	cma_unlock();
	if (!rc)
		cma_notice_port(p, false); /* the SA's GID notices (cma_notice.c) */
	return rc;
}

struct cma_port *cma_port_by_gid(const uint8_t gid[16])
{
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++)
			if (!memcmp(cma.devs[d].ports[i].gid, gid, 16))
				return &cma.devs[d].ports[i];
	return NULL;
}

struct cma_port *cma_first_active_port(void)
{
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++)
			if (cma.devs[d].ports[i].active)
				return &cma.devs[d].ports[i];
	return cma.ndevs && cma.devs[0].nports ? &cma.devs[0].ports[0] : NULL;
}

void cma_attach(struct cma_id *id, struct cma_port *p)
{
	cma_assert_locked();
	id->port = p;
	id->id.verbs = p->dev->verbs;
	id->id.port_num = p->port_num;
	/* The device's PD, as librdmacm gives every id on a device (ucma_get_device). */
	if (!p->dev->pd)
		p->dev->pd = ibv_alloc_pd(p->dev->verbs);
	if (!id->id.pd)
		id->id.pd = p->dev->pd;
}

/* ---- connections of a port, by local comm ID ---- */

struct cma_conn_link {
	struct cma_conn_link *next;
	uint32_t conn;
	struct cma_id *id;
};

static uint32_t conn_slot(const struct cma_port *p, uint32_t conn)
{
	return (conn * 2654435761u) & (p->nbuckets - 1);
}

static int conn_grow(struct cma_port *p)
{
	uint32_t nb = p->nbuckets ? p->nbuckets * 2 : 64;
	struct cma_conn_link **b = calloc(nb, sizeof(*b));
	uint32_t old = p->nbuckets;

	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < old; i++) {
		struct cma_conn_link *l = p->conns[i], *n;

		for (; l; l = n) {
			n = l->next;
			l->next = b[(l->conn * 2654435761u) & (nb - 1)];
			b[(l->conn * 2654435761u) & (nb - 1)] = l;
		}
	}
	free(p->conns);
	p->conns = b;
	p->nbuckets = nb;
	return 0;
}

int cma_conn_reserve(struct cma_port *p, struct cma_conn_link **spare)
{
	cma_assert_locked();
	*spare = NULL;
	if (!p->nbuckets && conn_grow(p))
		return -ENOMEM;
	*spare = malloc(sizeof(**spare));
	return *spare ? 0 : -ENOMEM;
}

int cma_conn_add_reserved(struct cma_port *p, uint32_t conn, struct cma_id *id,
			  struct cma_conn_link **spare)
{
	struct cma_conn_link *l;

	cma_assert_locked();
	for (l = p->nbuckets ? p->conns[conn_slot(p, conn)] : NULL; l; l = l->next)
		if (l->conn == conn) {
			/* Left by an id whose connection ended: that id's
			 * has_conn no longer reaches it (cma_conn_del). */
			l->id = id;
			return 0;
		}
	/* A table that cannot grow still works, its chains longer. */
	if (p->nconns >= p->nbuckets && conn_grow(p) && !p->nbuckets)
		return -ENOMEM;
	l = spare && *spare ? *spare : malloc(sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (spare)
		*spare = NULL;
	l->conn = conn;
	l->id = id;
	l->next = p->conns[conn_slot(p, conn)];
	p->conns[conn_slot(p, conn)] = l;
	p->nconns++;
	return 0;
}

int cma_conn_add(struct cma_port *p, uint32_t conn, struct cma_id *id)
{
	return cma_conn_add_reserved(p, conn, id, NULL);
}

struct cma_id *cma_conn_find(struct cma_port *p, uint32_t conn)
{
	cma_assert_locked();
	if (!p->nbuckets)
		return NULL;
	for (struct cma_conn_link *l = p->conns[conn_slot(p, conn)]; l; l = l->next)
		if (l->conn == conn)
			return l->id;
	return NULL;
}

void cma_conn_del(struct cma_port *p, uint32_t conn, const struct cma_id *id)
{
	cma_assert_locked();
	if (!p->nbuckets)
		return;
	for (struct cma_conn_link **pl = &p->conns[conn_slot(p, conn)]; *pl; pl = &(*pl)->next)
		if ((*pl)->conn == conn) {
			struct cma_conn_link *l = *pl;

			if (l->id != id)
				return; /* another id's now */
			*pl = l->next;
			free(l);
			p->nconns--;
			return;
		}
}

void cma_conn_free_all(struct cma_port *p)
{
	for (uint32_t i = 0; i < p->nbuckets; i++)
		for (struct cma_conn_link *l = p->conns[i], *n; l; l = n) {
			n = l->next;
			free(l);
		}
	free(p->conns);
	p->conns = NULL;
	p->nconns = p->nbuckets = 0;
}

size_t cma_conn_take_all(struct cma_conn_ref **out)
{
	struct cma_conn_ref *r = NULL;
	size_t n = 0, cap = 0;

	cma_assert_locked();
	for (int d = 0; d < cma.ndevs; d++)
		for (int i = 0; i < cma.devs[d].nports; i++) {
			struct cma_port *p = &cma.devs[d].ports[i];

			for (uint32_t b = 0; p->rt && b < p->nbuckets; b++)
				while (p->conns[b]) {
					struct cma_conn_link *l = p->conns[b];

					if (n == cap) {
						size_t ncap = cap ? cap * 2 : 64;
						struct cma_conn_ref *nr =
						    realloc(r, ncap * sizeof(*r));

						if (!nr)
							goto out;
						r = nr;
						cap = ncap;
					}
					r[n].rt = p->rt;
					r[n++].conn = l->conn;
					l->id->has_conn = false;
					cma_conn_del(p, l->conn, l->id);
				}
		}
out:
	*out = r;
	return n;
}

uint64_t cma_service_id(enum rdma_port_space ps, uint16_t port)
{
	return ((uint64_t)ps << 16) + port;
}
