/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * cm_fabric_connect: N RC connections between two simulated hosts through
 * the CM runtime (cm/runtime.h), with real (soft) verbs QPs.
 *
 *   fabsim run h1 -- cm_fabric_connect server [options]
 *   fabsim run h2 -- cm_fabric_connect client --dgid GID [--dlid LID] [options]
 *
 * Nothing travels out of band: the client learns the server's GID (and,
 * as a check, its LID) from the command line, gets the path from the SA,
 * and everything else (QPNs, PSNs, MTU ...) from the CM exchange.
 *
 * Server: listens on the service ID; for each REQ makes a QP, moves it to
 * INIT, posts a receive, moves it to RTR and RTS with the attributes the
 * engine hands out, then accepts (REP), in rdma_accept's order.  Each receive must carry the
 * payload the client wrote for that connection.  On DREQ: QP to ERR, DREP,
 * TimeWait, and the QP is destroyed when TimeWait ends.
 * Client: makes N QPs, keeps up to --window handshakes in flight, on REP
 * moves the QP to RTR and RTS and sends RTU, then posts one SEND; when all
 * are done, disconnects every connection and waits until each has left
 * TimeWait.
 * --loop-qp (both sides): the runtime's loop threads move the QPs (auto QP,
 * rdma_cm style): the server only makes its QP INIT (as rdma_create_qp)
 * and posts the receive before cm_runtime_accept_qp; the client connects
 * with its QP in RESET and posts the SEND on CM_EV_ESTABLISHED.
 *
 * Exit status: 0 all N connected (or all but --tolerate K), exchanged,
 * passed TimeWait; 3 otherwise, e.g. handshakes failed by timeouts or
 * rejects (counted on stdout); 4 the deadline passed (a hang); 1 setup
 * error; 2 usage.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "cm/runtime.h"

#define PAYLOAD 64
#define MAGIC "madcm-fabric"

struct opts {
	bool server;
	unsigned n;
	unsigned window;
	uint64_t service_id;
	uint8_t dgid[16];
	bool have_dgid;
	int dlid;
	unsigned cm_timeout; /* CM response timeout exponent */
	unsigned cm_retries;
	int plt; /* packet life time override, -1: SA's */
	unsigned deadline_s;
	unsigned die_after; /* server: SIGKILL itself at this REQ */
	unsigned idle_s;    /* server: give up after this long without events */
	unsigned linger_s;  /* server: stay after the last TimeWait until CM is quiet */
	unsigned tolerate;  /* client: failed handshakes that still pass */
	const char *req_log;
	bool verbose;
	bool loop_qp; /* auto QP: the runtime moves the QPs */
};

static struct opts o = {
    .n = 1000,
    .window = 1000,
    .service_id = 0x0000000001060000ull + 18515, /* rdma_cm TCP port space */
    .dlid = -1,
    .cm_timeout = 16, /* 268 ms per try */
    .cm_retries = 15,
    .plt = -1,
    .deadline_s = 120,
    .idle_s = 30,
    .linger_s = 3,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "cm_fabric_connect: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint32_t rand24(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)now_ns();
	return v & 0xffffff;
}

/* ---- verbs ---- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static void dev_open(struct dev *d, unsigned slots)
{
	struct ibv_device **list;
	int num = 0;

	list = ibv_get_device_list(&num);
	if (!list || num < 1)
		die("no verbs device (is the soft verbs preload active?)");
	d->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!d->ctx)
		die("ibv_open_device: %s", strerror(errno));
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	d->cq = ibv_create_cq(d->ctx, (int)(2 * slots + 16), NULL, NULL, 0);
	if (!d->cq)
		die("ibv_create_cq: %s", strerror(errno));
	d->buf = calloc(slots, PAYLOAD);
	if (!d->buf)
		die("out of memory");
	d->mr = ibv_reg_mr(d->pd, d->buf, (size_t)slots * PAYLOAD, IBV_ACCESS_LOCAL_WRITE);
	if (!d->mr)
		die("ibv_reg_mr: %s", strerror(errno));
}

static void dev_close(struct dev *d)
{
	ibv_dereg_mr(d->mr);
	free(d->buf);
	ibv_destroy_cq(d->cq);
	ibv_dealloc_pd(d->pd);
	ibv_close_device(d->ctx);
}

static struct ibv_qp *qp_create(struct dev *d)
{
	struct ibv_qp_init_attr ia = {0};

	ia.send_cq = d->cq;
	ia.recv_cq = d->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 2;
	ia.cap.max_recv_wr = 2;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	return ibv_create_qp(d->pd, &ia);
}

/*
 * Move a QP to `state` with the attributes the engine hands out; `rq_psn`
 * >= 0 replaces RTR's receive PSN (the passive side before its accept,
 * as the kernel's cma does with its own PSN).
 */
static int qp_move_psn(struct cm_runtime *rt, uint32_t id, struct ibv_qp *qp,
		       enum ibv_qp_state state, int64_t rq_psn)
{
	struct ibv_qp_attr attr;
	int mask, rc;

	rc = cm_runtime_init_qp_attr(rt, id, state, &attr, &mask);
	if (rc)
		return rc;
	if (state == IBV_QPS_RTR && rq_psn >= 0)
		attr.rq_psn = (uint32_t)rq_psn;
	rc = ibv_modify_qp(qp, &attr, mask);
	return rc ? -(rc > 0 ? rc : errno) : 0;
}

static int qp_move(struct cm_runtime *rt, uint32_t id, struct ibv_qp *qp, enum ibv_qp_state state)
{
	return qp_move_psn(rt, id, qp, state, -1);
}

static void qp_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	if (qp)
		ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

/* The SEND of a connection names both QPs, so a mix-up shows. */
static void payload(uint8_t *p, uint32_t cqpn, uint32_t sqpn)
{
	memset(p, 0, PAYLOAD);
	snprintf((char *)p, PAYLOAD, MAGIC " c=%06x s=%06x", cqpn, sqpn);
	for (unsigned i = 40; i < PAYLOAD; i++)
		p[i] = (uint8_t)(cqpn * 7 + sqpn + i);
}

static struct cm_runtime *rt_open(bool sa)
{
	struct cm_runtime_params p = {0};
	struct cm_runtime *rt;
	int rc;

	p.sa = sa;
	p.sa_retries = 5;
	p.max_conns = 4 * o.n + 64;
	rc = cm_runtime_open(&rt, &p);
	if (rc)
		die("cm_runtime_open: %s", strerror(-rc));
	return rt;
}

static void print_stats(struct cm_runtime *rt, const char *who)
{
	struct cm_rt_stats st;
	uint64_t retried = 0;

	if (cm_runtime_stats(rt, &st))
		return;
	printf("%s stats:", who);
	for (int m = 0; m < CM_STAT_OTHER; m++) {
		if (st.cm.sent[m] || st.cm.rcvd[m])
			printf(" %s=%" PRIu64 "/%" PRIu64 "/%" PRIu64, cm_stat_msg_name(m),
			       st.cm.sent[m], st.cm.rcvd[m], st.cm.retried[m]);
		retried += st.cm.retried[m];
	}
	printf(" (sent/rcvd/retried) timeouts=%" PRIu64 " live=%u mad_sent=%" PRIu64
	       " mad_rcvd=%" PRIu64 " events_dropped=%" PRIu64 "\n",
	       st.cm.timeouts, st.conns, st.mad.sent, st.mad.received, st.events_dropped);
	/* One line the script greps: losses must have been made good by resends. */
	printf("%s: retried %" PRIu64 "\n", who, retried);
}

/* ---- server ---- */

struct sconn {
	struct ibv_qp *qp;
	uint32_t id;
	uint32_t cqpn; /* client QPN from the REQ */
	bool established, gone;
};

static int server(void)
{
	struct cm_runtime *rt = rt_open(false);
	struct dev d = {0};
	struct sconn *c;
	unsigned cap = o.n + 16, nc = 0, nreq = 0, estab = 0, rtu = 0, user_est = 0;
	unsigned recv_ok = 0, recv_bad = 0, tw = 0, rep_err = 0, rej = 0, fail = 0;
	uint64_t last = now_ns(), start = last;
	uint64_t linger_check = 0, linger_since = 0, linger_rcvd = 0;
	int lid;

	dev_open(&d, cap);
	c = calloc(cap, sizeof(*c));
	if (!c)
		die("out of memory");
	lid = cm_runtime_listen(rt, o.service_id, ~0ull, 0);
	if (lid < 0)
		die("listen: %s", strerror(-lid));
	printf("server listening on service 0x%016" PRIx64 "\n", o.service_id);
	fflush(stdout);

	for (;;) {
		struct cm_event ev;
		struct ibv_wc wc[32];
		int n, rc;

		/*
		 * All done here, but the peer may still retry a DREQ whose DREP
		 * was lost: keep answering (as a host's CM would) until no CM
		 * MAD has come in for --linger seconds.
		 */
		if (tw + fail >= o.n) {
			struct cm_rt_stats st;
			uint64_t t = now_ns();

			if (t - linger_check > 100000000ull) {
				linger_check = t;
				if (cm_runtime_stats(rt, &st) == 0 &&
				    st.mad.received != linger_rcvd) {
					linger_rcvd = st.mad.received;
					linger_since = t;
				}
				if (t - linger_since > (uint64_t)o.linger_s * 1000000000ull)
					break;
			}
		}

		if (now_ns() - last > (uint64_t)o.idle_s * 1000000000ull && nreq) {
			printf("server: idle for %us, giving up\n", o.idle_s);
			break;
		}
		if (now_ns() - start > (uint64_t)o.deadline_s * 1000000000ull) {
			printf("server: deadline\n");
			break;
		}
		n = ibv_poll_cq(d.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			struct sconn *s = &c[wc[i].wr_id];
			uint8_t want[PAYLOAD];

			last = now_ns();
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* Flushes after the DREQ moved the QP to ERR are expected. */
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					recv_bad++;
				continue;
			}
			/* What the client wrote: its QPN and ours, as the CM told each. */
			payload(want, s->cqpn, s->qp->qp_num);
			if (wc[i].byte_len == PAYLOAD &&
			    !memcmp(d.buf + wc[i].wr_id * PAYLOAD, want, PAYLOAD))
				recv_ok++;
			else
				recv_bad++;
			/* Data before RTU: "communication established" (IBA 12.9.6). */
			if (!s->established && cm_runtime_establish(rt, s->id) == 0)
				s->established = true, estab++, user_est++;
		}
		rc = cm_runtime_wait_event(rt, &ev, n ? 0 : 1);
		if (rc == -ETIMEDOUT || rc == -EAGAIN)
			continue;
		if (rc)
			die("wait_event: %s", strerror(-rc));
		last = now_ns();
		if (o.verbose)
			fprintf(stderr, "server: %s id %08x user %" PRIu64 "\n",
				cm_event_name(ev.type), ev.id, ev.user);
		switch (ev.type) {
		case CM_EV_REQ_RCVD: {
			struct cm_accept_cmd ac = {0};
			struct sconn *s;
			struct ibv_sge sge;
			struct ibv_recv_wr wr = {0}, *bad;

			nreq++;
			if (o.die_after && nreq >= o.die_after) {
				printf("server: dying at REQ %u\n", nreq);
				fflush(stdout);
				raise(SIGKILL);
			}
			if (nc == cap) {
				cm_runtime_reject(rt, ev.id, CM_REJ_NO_QP);
				break;
			}
			s = &c[nc];
			s->id = ev.id;
			s->cqpn = ev.req.remote_qpn;
			s->qp = qp_create(&d);
			if (!s->qp) {
				cm_runtime_reject(rt, ev.id, CM_REJ_NO_QP);
				break;
			}
			rc = qp_move(rt, ev.id, s->qp, IBV_QPS_INIT);
			sge.addr = (uintptr_t)(d.buf + (size_t)nc * PAYLOAD);
			sge.length = PAYLOAD;
			sge.lkey = d.mr->lkey;
			wr.wr_id = nc;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			if (!rc && ibv_post_recv(s->qp, &wr, &bad))
				rc = -EIO;
			/*
			 * As rdma_accept: RTR (receiving from the PSN the REP will
			 * announce) and RTS (sending from the REQ's PSN) before
			 * the REP goes out; with --loop-qp the runtime does it.
			 */
			ac.starting_psn = rand24();
			ac.qpn = s->qp->qp_num;
			ac.responder_resources = ev.req.initiator_depth;
			ac.initiator_depth = ev.req.responder_resources;
			ac.rnr_retry_count = 7;
			ac.target_ack_delay = 0;
			if (!rc && o.loop_qp) {
				/* A failed accept has rejected already (consumer defined). */
				rc = cm_runtime_accept_qp(rt, ev.id, nc, &ac, s->qp, 0);
				if (rc) {
					fprintf(stderr, "server: REQ %08x: %s\n", ev.id,
						strerror(-rc));
					ibv_destroy_qp(s->qp);
					s->qp = NULL;
					fail++;
					break;
				}
				nc++;
				break;
			}
			if (!rc)
				rc = qp_move_psn(rt, ev.id, s->qp, IBV_QPS_RTR, ac.starting_psn);
			if (!rc)
				rc = qp_move(rt, ev.id, s->qp, IBV_QPS_RTS);
			if (!rc)
				rc = cm_runtime_accept(rt, ev.id, nc, &ac);
			if (rc) {
				fprintf(stderr, "server: REQ %08x: %s\n", ev.id, strerror(-rc));
				cm_runtime_reject(rt, ev.id, CM_REJ_CONSUMER_DEFINED);
				ibv_destroy_qp(s->qp);
				s->qp = NULL;
				fail++;
				break;
			}
			nc++;
			break;
		}
		case CM_EV_RTU_RCVD:
			rtu++;
			if (ev.user < nc && !c[ev.user].established) {
				c[ev.user].established = true;
				estab++;
			}
			break;
		case CM_EV_USER_ESTABLISHED:
			break;
		case CM_EV_REP_ERROR:
			rep_err++;
			fail++;
			break;
		case CM_EV_REJ_RCVD:
			rej++;
			fail++;
			break;
		case CM_EV_DREQ_RCVD:
			if (ev.user < nc)
				qp_to_err(c[ev.user].qp);
			rc = cm_runtime_disconnect(rt, ev.id);
			if (rc)
				fprintf(stderr, "server: DREP %08x: %s\n", ev.id, strerror(-rc));
			break;
		case CM_EV_TIMEWAIT_EXIT:
			if (ev.user < nc && !c[ev.user].gone) {
				c[ev.user].gone = true;
				ibv_destroy_qp(c[ev.user].qp);
				c[ev.user].qp = NULL;
				tw++;
			}
			break;
		default:
			break;
		}
	}
	printf("server: req %u accepted %u established %u (rtu %u, by data %u) recv_ok %u "
	       "recv_bad %u timewait %u rep_errors %u rejected %u failed %u\n",
	       nreq, nc, estab, rtu, user_est, recv_ok, recv_bad, tw, rep_err, rej, fail);
	print_stats(rt, "server");
	for (unsigned i = 0; i < nc; i++)
		if (c[i].qp)
			ibv_destroy_qp(c[i].qp);
	cm_runtime_close(rt);
	dev_close(&d);
	free(c);
	return tw == o.n && recv_ok == o.n && !recv_bad ? 0 : 3;
}

/* ---- client ---- */

enum cstate { C_IDLE, C_REQ, C_EST, C_SENT, C_DONE_DATA, C_DREQ, C_TW, C_GONE, C_FAILED };

struct cconn {
	struct ibv_qp *qp;
	uint32_t id;
	uint32_t psn;
	uint32_t sqpn; /* server QPN from the REP */
	enum cstate st;
	bool saw_timewait; /* DREP_RCVD / DREQ_ERROR put it in TimeWait */
	uint64_t t_req;
};

struct client_counts {
	unsigned estab, sent_ok, send_err, timeouts, rejects, other_fail;
	unsigned tw_seen, tw_exit, tw_state_ok, dreq_err;
};

static void client_connect_some(struct cm_runtime *rt, struct dev *d, struct cconn *c,
				const struct cm_connect_cmd *tmpl, unsigned *next,
				unsigned *inflight, FILE *log)
{
	struct cm_rt_cmd cmds[64];
	unsigned k = 0, first = *next;

	while (*next < o.n && *inflight + k < o.window && k < 64) {
		struct cm_rt_cmd *cmd = &cmds[k];
		struct cconn *cc = &c[*next];

		memset(cmd, 0, sizeof(*cmd));
		cmd->op = CM_RT_CONNECT;
		cmd->connect = *tmpl;
		cmd->connect.user = *next;
		cmd->connect.qpn = cc->qp->qp_num;
		cc->psn = rand24();
		cmd->connect.starting_psn = cc->psn;
		if (o.loop_qp) {
			cmd->auto_qp.qp = cc->qp;
			cmd->auto_qp.flags = CM_RT_QP_INIT;
		}
		(*next)++;
		k++;
	}
	if (!k)
		return;
	if (cm_runtime_exec_batch(rt, cmds, k))
		die("exec_batch failed");
	for (unsigned i = 0; i < k; i++) {
		struct cconn *cc = &c[first + i];
		int rc = cmds[i].result;

		cc->t_req = now_ns();
		if (!rc) {
			cc->id = cmds[i].id;
			if (!o.loop_qp)
				rc = qp_move(rt, cc->id, cc->qp, IBV_QPS_INIT);
		}
		/* The engine refusing a connect is a setup error here. */
		if (rc)
			die("connect %u: %s", first + i, strerror(-rc));
		cc->st = C_REQ;
		(*inflight)++;
		if (log)
			fprintf(log,
				"req service_id=0x%016" PRIx64 " qpn=0x%06x psn=0x%06x "
				"slid=%u dlid=%u pkey=0x%04x mtu=%u\n",
				tmpl->service_id, cc->qp->qp_num, cc->psn, tmpl->primary.slid,
				tmpl->primary.dlid, tmpl->primary.pkey, tmpl->primary.mtu);
	}
	(void)d;
}

static int client(void)
{
	struct cm_runtime *rt = rt_open(true);
	struct dev d = {0};
	struct cconn *c;
	struct cm_connect_cmd tmpl = {0};
	struct client_counts k = {0};
	struct mad_port_attr port;
	unsigned next = 0, inflight = 0, settled = 0, data_done = 0, gone = 0;
	uint64_t start, t_connected = 0, deadline;
	bool disconnecting = false, hung = false;
	FILE *log = NULL;
	int rc;

	dev_open(&d, o.n);
	c = calloc(o.n, sizeof(*c));
	if (!c)
		die("out of memory");
	cm_runtime_port(rt, &port);
	rc = cm_runtime_resolve_path(rt, o.dgid, 0, &tmpl.primary);
	if (rc)
		die("path to the server from the SA: %s", strerror(-rc));
	if (o.dlid >= 0 && tmpl.primary.dlid != o.dlid)
		die("SA path DLID %u, expected %d", tmpl.primary.dlid, o.dlid);
	if (o.plt >= 0) {
		tmpl.primary.packet_life_time = (uint8_t)o.plt;
		tmpl.primary.local_ack_timeout = (uint8_t)(o.plt + 1);
	}
	printf("client: path slid %u dlid %u mtu %u rate %u sl %u pkey 0x%04x plt %u\n",
	       tmpl.primary.slid, tmpl.primary.dlid, tmpl.primary.mtu, tmpl.primary.rate,
	       tmpl.primary.sl, tmpl.primary.pkey, tmpl.primary.packet_life_time);
	tmpl.service_id = o.service_id;
	tmpl.qp_type = CM_QPT_RC;
	tmpl.responder_resources = 1;
	tmpl.initiator_depth = 1;
	tmpl.remote_cm_response_timeout = (uint8_t)o.cm_timeout;
	tmpl.local_cm_response_timeout = (uint8_t)o.cm_timeout;
	tmpl.retry_count = 7;
	tmpl.rnr_retry_count = 7;
	tmpl.max_cm_retries = (uint8_t)o.cm_retries;
	for (unsigned i = 0; i < o.n; i++) {
		c[i].qp = qp_create(&d);
		if (!c[i].qp)
			die("ibv_create_qp %u: %s", i, strerror(errno));
	}
	if (o.req_log) {
		log = fopen(o.req_log, "w");
		if (!log)
			die("%s: %s", o.req_log, strerror(errno));
	}
	start = now_ns();
	deadline = start + (uint64_t)o.deadline_s * 1000000000ull;

	while (gone < o.n) {
		struct cm_event ev;
		struct ibv_wc wc[32];
		int n;

		if (now_ns() > deadline) {
			hung = true;
			break;
		}
		client_connect_some(rt, &d, c, &tmpl, &next, &inflight, log);
		/* Everything settled: failed ones are done, the rest disconnect. */
		if (!disconnecting && settled == o.n && data_done == k.estab) {
			struct cm_rt_cmd *cmds = calloc(o.n, sizeof(*cmds));
			unsigned nd = 0;

			if (!cmds)
				die("out of memory");
			t_connected = t_connected ? t_connected : now_ns();
			disconnecting = true;
			for (unsigned i = 0; i < o.n; i++) {
				if (c[i].st == C_FAILED) {
					gone++;
					continue;
				}
				/* As rdma_disconnect: QP to ERR, then DREQ. */
				qp_to_err(c[i].qp);
				cmds[nd].op = CM_RT_DISCONNECT;
				cmds[nd].id = c[i].id;
				cmds[nd].user = i;
				nd++;
				c[i].st = C_DREQ;
			}
			if (cm_runtime_exec_batch(rt, cmds, nd))
				die("disconnect batch failed");
			for (unsigned i = 0; i < nd; i++)
				if (cmds[i].result)
					fprintf(stderr, "client: DREQ %08x: %s\n", cmds[i].id,
						strerror(-cmds[i].result));
			free(cmds);
			continue;
		}
		n = ibv_poll_cq(d.cq, 32, wc);
		for (int i = 0; i < n; i++) {
			struct cconn *cc = &c[wc[i].wr_id];

			if (cc->st != C_SENT)
				continue; /* flush after ERR */
			if (wc[i].status == IBV_WC_SUCCESS) {
				k.sent_ok++;
			} else {
				k.send_err++;
				fprintf(stderr, "client: send %u: %s\n", (unsigned)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status));
			}
			cc->st = C_DONE_DATA;
			data_done++;
		}
		rc = cm_runtime_wait_event(rt, &ev, n ? 0 : 1);
		if (rc == -ETIMEDOUT || rc == -EAGAIN)
			continue;
		if (rc)
			die("wait_event: %s", strerror(-rc));
		if (ev.user >= o.n)
			continue;
		struct cconn *cc = &c[ev.user];

		if (o.verbose)
			fprintf(stderr, "client: %s id %08x conn %" PRIu64 "\n",
				cm_event_name(ev.type), ev.id, ev.user);
		switch (ev.type) {
		case CM_EV_REP_RCVD:
		case CM_EV_ESTABLISHED:
		case CM_EV_CONNECT_ERROR: {
			struct ibv_sge sge;
			struct ibv_send_wr wr = {0}, *bad;
			uint8_t *p = d.buf + ev.user * PAYLOAD;

			if (cc->st != C_REQ)
				break;
			cc->sqpn = ev.rep.remote_qpn;
			/* ESTABLISHED (auto QP): RTR, RTS and RTU are done. */
			rc = ev.type == CM_EV_CONNECT_ERROR ? ev.status : 0;
			if (ev.type == CM_EV_REP_RCVD) {
				rc = qp_move(rt, ev.id, cc->qp, IBV_QPS_RTR);
				if (!rc)
					rc = qp_move(rt, ev.id, cc->qp, IBV_QPS_RTS);
				if (!rc)
					rc = cm_runtime_rtu(rt, ev.id);
				if (rc)
					cm_runtime_reject(rt, ev.id, CM_REJ_CONSUMER_DEFINED);
			}
			if (rc) {
				/* CONNECT_ERROR: the runtime has rejected already. */
				fprintf(stderr, "client: REP %08x: %s\n", ev.id, strerror(-rc));
				cc->st = C_FAILED;
				k.other_fail++;
				inflight--;
				settled++;
				break;
			}
			inflight--;
			settled++;
			k.estab++;
			cc->st = C_SENT;
			payload(p, cc->qp->qp_num, cc->sqpn);
			sge.addr = (uintptr_t)p;
			sge.length = PAYLOAD;
			sge.lkey = d.mr->lkey;
			wr.wr_id = ev.user;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (ibv_post_send(cc->qp, &wr, &bad)) {
				k.send_err++;
				cc->st = C_DONE_DATA;
				data_done++;
			}
			break;
		}
		case CM_EV_REQ_ERROR:
		case CM_EV_REJ_RCVD:
			if (cc->st != C_REQ)
				break;
			if (ev.type == CM_EV_REQ_ERROR)
				k.timeouts++;
			else
				k.rejects++;
			cc->st = C_FAILED;
			inflight--;
			settled++;
			break;
		case CM_EV_DREP_RCVD:
		case CM_EV_DREQ_ERROR: {
			struct cm_rt_cmd sc = {.op = CM_RT_CONN_STATE, .id = ev.id};

			if (ev.type == CM_EV_DREQ_ERROR)
				k.dreq_err++;
			cc->st = C_TW;
			cc->saw_timewait = true;
			k.tw_seen++;
			/*
			 * In TimeWait, or already through it: on a loaded host the
			 * event can be read after the TimeWait ended (its
			 * TIMEWAIT_EXIT, counted below, is queued behind it).
			 */
			rc = cm_runtime_exec(rt, &sc);
			if ((rc == 0 && sc.state == CM_ST_TIMEWAIT) || rc == -ENOENT)
				k.tw_state_ok++;
			break;
		}
		case CM_EV_DREQ_RCVD:
			/* The server never disconnects first, but answer anyway. */
			cm_runtime_disconnect(rt, ev.id);
			break;
		case CM_EV_TIMEWAIT_EXIT:
			if (cc->st == C_GONE)
				break;
			k.tw_exit++;
			cc->st = C_GONE;
			ibv_destroy_qp(cc->qp);
			cc->qp = NULL;
			gone++;
			break;
		default:
			break;
		}
	}
	uint64_t end = now_ns();
	double conn_s = ((t_connected ? t_connected : end) - start) / 1e9;

	printf("client: n %u established %u sent_ok %u send_errors %u timeouts %u rejects %u "
	       "other_failures %u\n",
	       o.n, k.estab, k.sent_ok, k.send_err, k.timeouts, k.rejects, k.other_fail);
	printf("client: timewait entered %u (state checked %u, dreq_errors %u) exited %u\n",
	       k.tw_seen, k.tw_state_ok, k.dreq_err, k.tw_exit);
	printf("client: connect+exchange %.3f s (%.0f conn/s), total %.3f s\n", conn_s,
	       conn_s > 0 ? k.estab / conn_s : 0.0, (end - start) / 1e9);
	print_stats(rt, "client");
	if (log)
		fclose(log);
	for (unsigned i = 0; i < o.n; i++)
		if (c[i].qp)
			ibv_destroy_qp(c[i].qp);
	cm_runtime_close(rt);
	dev_close(&d);
	free(c);
	if (hung) {
		printf("client: DEADLINE after %us (settled %u of %u)\n", o.deadline_s, settled,
		       o.n);
		return 4;
	}
	/*
	 * Every connection that was made must have carried its SEND and
	 * passed through TimeWait; up to --tolerate handshakes may fail.
	 */
	unsigned failed = k.timeouts + k.rejects + k.other_fail;

	if (failed > o.tolerate || k.send_err || k.estab + failed != o.n || k.sent_ok != k.estab ||
	    k.tw_exit != k.estab || k.tw_state_ok != k.estab)
		return 3;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: cm_fabric_connect server [--n N] [--service ID] [--die-after K]\n"
		"                                [--idle S] [--linger S] [--deadline S]\n"
		"                                [--loop-qp] [-v]\n"
		"       cm_fabric_connect client --dgid GID [--dlid LID] [--n N] [--window W]\n"
		"                                [--service ID] [--cm-timeout T] [--cm-retries R]\n"
		"                                [--plt T] [--req-log FILE] [--deadline S]\n"
		"                                [--tolerate K] [--loop-qp] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"n", required_argument, NULL, 'n'},
	    {"window", required_argument, NULL, 'w'},
	    {"service", required_argument, NULL, 's'},
	    {"dgid", required_argument, NULL, 'g'},
	    {"dlid", required_argument, NULL, 'l'},
	    {"cm-timeout", required_argument, NULL, 't'},
	    {"cm-retries", required_argument, NULL, 'r'},
	    {"plt", required_argument, NULL, 'p'},
	    {"deadline", required_argument, NULL, 'd'},
	    {"die-after", required_argument, NULL, 'k'},
	    {"idle", required_argument, NULL, 'i'},
	    {"tolerate", required_argument, NULL, 'T'},
	    {"linger", required_argument, NULL, 'G'},
	    {"req-log", required_argument, NULL, 'L'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"loop-qp", no_argument, NULL, 'Q'},
	    {NULL, 0, NULL, 0},
	};
	struct in6_addr a6;
	int ch;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "server"))
		o.server = true;
	else if (strcmp(argv[1], "client"))
		usage();
	optind = 2;
	while ((ch = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			o.n = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			o.window = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			o.service_id = strtoull(optarg, NULL, 0);
			break;
		case 'g':
			if (inet_pton(AF_INET6, optarg, &a6) != 1)
				die("bad GID %s", optarg);
			memcpy(o.dgid, &a6, 16);
			o.have_dgid = true;
			break;
		case 'l':
			o.dlid = (int)strtol(optarg, NULL, 0);
			break;
		case 't':
			o.cm_timeout = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o.cm_retries = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			o.plt = (int)strtol(optarg, NULL, 0);
			break;
		case 'd':
			o.deadline_s = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			o.die_after = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			o.tolerate = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'i':
			o.idle_s = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'G':
			o.linger_s = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'L':
			o.req_log = optarg;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'Q':
			o.loop_qp = true;
			break;
		default:
			usage();
		}
	}
	if (!o.n || o.n > 100000 || !o.window || o.cm_timeout > 31 || o.cm_retries > 15 ||
	    o.plt > 30)
		usage();
	if (!o.server && !o.have_dgid)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	return o.server ? server() : client();
}
