/*
 * cm_connect_many: N RC connections through the CM engine between two
 * hosts of a (simulated) fabric, over the real MAD transport.
 *
 *   cm_connect_many --passive [--count N] [--exit-after-reqs K] [--seconds S]
 *   cm_connect_many --active --dlid LID --dgid GID [--count N] [--seconds S]
 *   cm_connect_many --active --dlid LID --dgid GID --latency N
 *
 * The passive side listens on the rdma_cm TCP port space; the active side
 * connects N QPs to it.  With verbs (a device is present), every QP is
 * created, moved to INIT/RTR/RTS with the attributes the engine hands out
 * (cm_engine_init_qp_attr), the active side sends one message on each and
 * the passive side receives it.  Without a device, QPNs are synthetic and
 * only the CM protocol runs ("CM only").  Then the active side disconnects
 * all; both sides wait until every connection has left TimeWait.
 *
 * Prints one "result ..." line; exit 0 when every connection connected
 * and passed through TimeWait, 3 when connections timed out (REQ_ERROR:
 * what the script expects when it kills the passive side), 1 otherwise.
 * --latency N: N bare umad round trips (Get(ClassPortInfo), answered by
 * cm/umad.c without the engine), then N connections one at a time
 * (REQ sent to ESTABLISHED on the active side, CM only); prints both medians.
 * --no-verbs: CM only even when a device exists.
 * --exit-after-reqs K makes the passive side vanish (_exit) when the K-th
 * REQ arrives, unanswered: a process killed mid-handshake.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "cm/cm_wire.h"
#include "cm/engine.h"
#include "cm/umad.h"
#include "mad/transport.h"
#include "madcm/cm_stat.h"

#define SERVICE_ID (0x0000000001060000ull + 18515)
#define MSG_SIZE 64

struct conn {
	uint32_t id;
	struct ibv_qp *qp;
	uint8_t connected, timewait_done, got_msg, failed;
};

static struct {
	int passive;
	unsigned count;
	unsigned exit_after_reqs;
	unsigned seconds;
	uint16_t dlid;
	uint8_t dgid[16];
	struct mad_timer_heap timers;
	struct mad_transport *tp;
	struct mad_agent *agent;
	struct cm_umad *cmu;
	struct mad_port_attr port;
	struct cm_engine *e;
	struct conn *conns;
	unsigned nconns, nreqs, connected, timewait, timeouts, rejected, msgs;
	unsigned established_by_data, completions, wc_errors;
	unsigned latency;         /* active: measure this many one at a time */
	int no_verbs;
	uint64_t rep_seen_ns;       /* when the last REP reached the user */
	/* verbs */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	int verbs;
} g;

/* Each connection's cookie is 1 + its index in g.conns (0: a listener's). */
static struct conn *conn_of(const struct cm_event *ev)
{
	if (ev->user == 0 || ev->user > g.nconns || g.conns[ev->user - 1].id != ev->id)
		return NULL;
	return &g.conns[ev->user - 1];
}

/* ---- verbs ---- */

static int verbs_open(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		if (list)
			ibv_free_device_list(list);
		return -ENODEV;
	}
	g.ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!g.ctx)
		return -ENODEV;
	g.pd = ibv_alloc_pd(g.ctx);
	g.cq = g.pd ? ibv_create_cq(g.ctx, (int)(2 * g.count + 16), NULL, NULL, 0) : NULL;
	g.buf = calloc(g.count + 1, MSG_SIZE);
	g.mr = g.cq && g.buf ? ibv_reg_mr(g.pd, g.buf, (size_t)(g.count + 1) * MSG_SIZE,
					  IBV_ACCESS_LOCAL_WRITE) : NULL;
	return g.mr ? 0 : -EIO;
}

static void verbs_close(void)
{
	for (unsigned i = 0; i < g.nconns; i++)
		if (g.conns[i].qp)
			ibv_destroy_qp(g.conns[i].qp);
	if (g.mr)
		ibv_dereg_mr(g.mr);
	if (g.cq)
		ibv_destroy_cq(g.cq);
	if (g.pd)
		ibv_dealloc_pd(g.pd);
	if (g.ctx)
		ibv_close_device(g.ctx);
	free(g.buf);
}

static struct ibv_qp *qp_create(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = g.cq, .recv_cq = g.cq, .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(g.pd, &ia);
}

static int qp_move(struct conn *c, enum ibv_qp_state st)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	ret = cm_engine_init_qp_attr(g.e, c->id, st, &attr, &mask);
	if (ret)
		return ret;
	return ibv_modify_qp(c->qp, &attr, mask) ? -errno : 0;
}

static int post_recv(struct conn *c, unsigned idx)
{
	struct ibv_sge sge = { (uintptr_t)(g.buf + (size_t)idx * MSG_SIZE), MSG_SIZE, g.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = idx, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->qp, &wr, &bad) ? -errno : 0;
}

static int post_send(struct conn *c, unsigned idx)
{
	struct ibv_sge sge = { (uintptr_t)(g.buf + (size_t)idx * MSG_SIZE), MSG_SIZE, g.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = idx, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	snprintf((char *)g.buf + (size_t)idx * MSG_SIZE, MSG_SIZE, "hello %u", idx);
	return ibv_post_send(c->qp, &wr, &bad) ? -errno : 0;
}

static void poll_cq(void)
{
	struct ibv_wc wc[32];
	int n;

	if (!g.verbs)
		return;
	while ((n = ibv_poll_cq(g.cq, 32, wc)) > 0)
		for (int i = 0; i < n; i++) {
			g.completions++;
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (!g.wc_errors++)
					fprintf(stderr, "wc %lu: %s\n", (unsigned long)wc[i].wr_id,
						ibv_wc_status_str(wc[i].status));
				continue;
			}
			if (wc[i].opcode == IBV_WC_RECV || wc[i].opcode == IBV_WC_SEND) {
				struct conn *c = wc[i].wr_id < g.nconns ? &g.conns[wc[i].wr_id] : NULL;

				g.msgs++;
				if (!c)
					continue;
				c->got_msg = 1;
				/* First data before the RTU: "communication established". */
				if (g.passive && !c->connected &&
				    cm_engine_establish(g.e, c->id) == 0)
					g.established_by_data++;
			}
		}
}

/* ---- events ---- */

static void on_event(void *ctx, const struct cm_event *ev)
{
	struct conn *c = conn_of(ev);

	(void)ctx;
	switch (ev->type) {
	case CM_EV_REQ_RCVD: {
		struct cm_accept_cmd a = { .starting_psn = 0x200, .responder_resources = 1,
					   .initiator_depth = 1, .target_ack_delay = 15,
					   .rnr_retry_count = 7 };

		g.nreqs++;
		if (g.exit_after_reqs && g.nreqs >= g.exit_after_reqs) {
			printf("passive: vanishing at REQ %u\n", g.nreqs);
			fflush(stdout);
			_exit(0);
		}
		if (g.nconns >= g.count) {
			struct cm_reject_cmd r = { .reason = CM_REJ_NO_RESOURCES };

			cm_engine_reject(g.e, ev->id, &r);
			return;
		}
		c = &g.conns[g.nconns++];
		c->id = ev->id;
		if (g.verbs) {
			int step = 0, err = 0;

			c->qp = qp_create();
			if (!c->qp)
				err = -errno;
			else if (++step, (err = qp_move(c, IBV_QPS_INIT)) == 0 &&
				 (++step, (err = post_recv(c, (unsigned)(c - g.conns))) == 0) &&
				 (++step, (err = qp_move(c, IBV_QPS_RTR)) == 0))
				step = 0;
			if (err) {
				struct cm_reject_cmd r = { .reason = CM_REJ_NO_QP };

				fprintf(stderr, "passive: QP setup step %d failed: %s\n", step,
					strerror(-err));
				c->failed = 1;
				cm_engine_reject(g.e, ev->id, &r);
				return;
			}
			a.qpn = c->qp->qp_num;
		} else {
			a.qpn = 0x1000 + (uint32_t)(c - g.conns);
		}
		cm_engine_accept(g.e, ev->id, (uint64_t)(c - g.conns) + 1, &a);
		/* RTS after accept: the REP's starting PSN is our send PSN. */
		if (g.verbs && qp_move(c, IBV_QPS_RTS))
			fprintf(stderr, "passive: QP to RTS failed\n");
		break;
	}
	case CM_EV_REP_RCVD:
		if (!c)
			break;
		if (g.verbs && (qp_move(c, IBV_QPS_RTR) || qp_move(c, IBV_QPS_RTS))) {
			struct cm_reject_cmd r = { .reason = CM_REJ_NO_QP };

			c->failed = 1;
			cm_engine_reject(g.e, ev->id, &r);
			break;
		}
		g.rep_seen_ns = mad_clock_monotonic_ns(NULL);
		if (cm_engine_rtu(g.e, ev->id, NULL, 0) == 0) {
			c->connected = 1;
			g.connected++;
		}
		break;
	case CM_EV_RTU_RCVD:
	case CM_EV_USER_ESTABLISHED:
		if (c && !c->connected) {
			c->connected = 1;
			g.connected++;
		}
		break;
	case CM_EV_REQ_ERROR:
		g.timeouts++;
		if (c)
			c->failed = 1;
		break;
	case CM_EV_REJ_RCVD:
		if (!g.rejected)
			fprintf(stderr, "REJ: %s (%u)\n",
				cm_rej_reason_name(ev->rej.reason) ? cm_rej_reason_name(ev->rej.reason)
								   : "?",
				ev->rej.reason);
		g.rejected++;
		if (c)
			c->failed = 1;
		break;
	case CM_EV_DREQ_RCVD:
		cm_engine_disconnect(g.e, ev->id, NULL, 0);
		break;
	case CM_EV_TIMEWAIT_EXIT:
		if (c && !c->timewait_done) {
			c->timewait_done = 1;
			g.timewait++;
		}
		break;
	default:
		break;
	}
}

static uint64_t now_ms(void)
{
	return mad_clock_monotonic_ns(NULL) / 1000000u;
}

/* Run the loop until done() or the deadline; returns 0 or -ETIMEDOUT. */
static int run_until(int (*done)(void), uint64_t deadline_ms)
{
	struct pollfd pfd = { .fd = mad_transport_fd(g.tp), .events = POLLIN };

	while (!done()) {
		uint64_t next = mad_timer_next_deadline(&g.timers), now = mad_clock_monotonic_ns(NULL);
		int wait = 20;

		if (now_ms() > deadline_ms)
			return -ETIMEDOUT;
		if (next != UINT64_MAX && next > now && (next - now) / 1000000u < 20)
			wait = (int)((next - now) / 1000000u);
		else if (next != UINT64_MAX && next <= now)
			wait = 0;
		if (poll(&pfd, 1, wait) > 0)
			mad_transport_poll(g.tp, 0);
		mad_timer_run(&g.timers);
		poll_cq();
	}
	return 0;
}

static int all_settled(void)
{
	return g.connected + g.timeouts + g.rejected >= g.count;
}

static int all_timewait(void)
{
	return g.timewait >= g.connected;
}

/* Every send completed, well or not (a vanished peer fails them). */
static int all_msgs(void)
{
	return g.completions >= g.connected;
}

static int never(void)
{
	return 0;
}

static int passive_done(void)
{
	return g.nconns >= g.count && g.timewait >= g.nconns;
}

static void usage(void)
{
	fprintf(stderr, "usage: cm_connect_many --passive|--active [--dlid LID --dgid GID]\n"
			"       [--count N] [--seconds S] [--exit-after-reqs K] [--latency N]\n"
			"       [--no-verbs]\n");
	exit(2);
}

/* ---- latency: one connection at a time, next to the umad round trip ---- */

static int echo_done;

static void echo_cb(void *arg, int status, const void *mad, size_t len,
		    const struct mad_addr *src)
{
	(void)arg, (void)mad, (void)len, (void)src;
	echo_done = status == 0 ? 1 : -1;
}

static int echoed(void)
{
	return echo_done != 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int one_connected(void)
{
	return g.connected + g.timeouts + g.rejected >= g.nconns;
}

static int latency_run(const struct cm_connect_cmd *tmpl)
{
	unsigned n = g.latency;
	uint64_t *rtt = calloc(n, sizeof(*rtt)), *lat = calloc(n, sizeof(*lat));
	uint64_t *rep = calloc(n, sizeof(*rep));
	struct mad_addr to = { .lid = g.dlid, .qpn = 1, .qkey = MAD_QP1_QKEY };
	struct mad_send_opts so = { .timeout_ms = 1000, .retries = 3 };
	unsigned got_rtt = 0, got_lat = 0;

	for (unsigned i = 0; i < n; i++) {
		uint8_t mad[256];
		uint64_t t0;

		cm_mad_init(mad, sizeof(mad), &cm_class_port_info_layout, CM_METHOD_GET, 0);
		echo_done = 0;
		t0 = mad_clock_monotonic_ns(NULL);
		if (mad_request_send(g.agent, mad, 256, &to, &so, echo_cb, NULL, NULL))
			break;
		if (run_until(echoed, now_ms() + 10000) || echo_done < 0)
			break;
		rtt[got_rtt++] = mad_clock_monotonic_ns(NULL) - t0;
	}
	for (unsigned i = 0; i < n && i < g.count; i++) {
		struct conn *c = &g.conns[g.nconns++];
		struct cm_connect_cmd cmd = *tmpl;
		uint64_t t0;

		cmd.qpn = 0x1000 + i;
		cmd.starting_psn = i;
		cmd.user = g.nconns;
		t0 = mad_clock_monotonic_ns(NULL);
		if (cm_engine_connect(g.e, &cmd, &c->id))
			break;
		if (run_until(one_connected, now_ms() + 10000) || !c->connected)
			break;
		rep[got_lat] = g.rep_seen_ns - t0;
		lat[got_lat++] = mad_clock_monotonic_ns(NULL) - t0;
	}
	/* Disconnect afterwards: DREQ/DREP traffic must not share the timed path. */
	for (unsigned i = 0; i < g.nconns; i++)
		if (g.conns[i].connected)
			cm_engine_disconnect(g.e, g.conns[i].id, NULL, 0);
	run_until(all_timewait, now_ms() + 10000);
	qsort(rtt, got_rtt, sizeof(*rtt), cmp_u64);
	qsort(lat, got_lat, sizeof(*lat), cmp_u64);
	qsort(rep, got_lat, sizeof(*rep), cmp_u64);
	if (got_rtt && got_lat)
		printf("latency: umad round trip median %.1f us over %u; connect median: "
		       "REQ sent to REP handed to the user %.1f us (ratio %.2f), "
		       "to ESTABLISHED with the RTU sent %.1f us (ratio %.2f), over %u\n",
		       rtt[got_rtt / 2] / 1e3, got_rtt, rep[got_lat / 2] / 1e3,
		       (double)rep[got_lat / 2] / (double)rtt[got_rtt / 2],
		       lat[got_lat / 2] / 1e3,
		       (double)lat[got_lat / 2] / (double)rtt[got_rtt / 2], got_lat);
	free(rep);
	free(rtt);
	free(lat);
	return got_lat == n && got_rtt == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "passive", no_argument, NULL, 'p' }, { "active", no_argument, NULL, 'a' },
		{ "count", required_argument, NULL, 'n' }, { "dlid", required_argument, NULL, 'l' },
		{ "dgid", required_argument, NULL, 'g' }, { "seconds", required_argument, NULL, 's' },
		{ "exit-after-reqs", required_argument, NULL, 'x' },
		{ "latency", required_argument, NULL, 'L' },
		{ "no-verbs", no_argument, NULL, 'V' }, { NULL, 0, NULL, 0 },
	};
	struct mad_transport_params tpp = { 0 };
	struct cm_umad_params up = { 0 };
	struct cm_stat_counters st;
	int mode = -1, o, ret;
	uint64_t deadline;

	g.count = 1000;
	g.seconds = 120;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'p': mode = 1; break;
		case 'a': mode = 0; break;
		case 'n': g.count = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'l': g.dlid = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'g':
			if (inet_pton(AF_INET6, optarg, g.dgid) != 1)
				usage();
			break;
		case 's': g.seconds = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'x': g.exit_after_reqs = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'L': g.latency = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'V': g.no_verbs = 1; break;
		default: usage();
		}
	}
	if (mode < 0 || (mode == 0 && !g.dlid) || g.count == 0 || g.count > 100000)
		usage();
	g.passive = mode;
	setvbuf(stdout, NULL, _IOLBF, 0);
	g.conns = calloc(g.count, sizeof(*g.conns));
	mad_timer_heap_init(&g.timers, NULL, NULL);
	tpp.timers = &g.timers;
	ret = mad_transport_open(&g.tp, &tpp);
	if (ret) {
		fprintf(stderr, "cm_connect_many: no umad port: %s\n", strerror(-ret));
		return 77;
	}
	mad_transport_port(g.tp, &g.port, NULL);
	g.verbs = !g.no_verbs && verbs_open() == 0;
	printf("%s: lid %u, %s\n", g.passive ? "passive" : "active", g.port.lid,
	       g.verbs ? "verbs" : "CM only (no verbs device)");
	up.transport = g.tp;
	up.timers = &g.timers;
	up.event = on_event;
	up.max_conns = g.count * 2 + 16;
	ret = cm_umad_open(&up, &g.cmu);
	if (ret) {
		fprintf(stderr, "cm_connect_many: CM on umad: %s\n", strerror(-ret));
		return 1;
	}
	g.e = cm_umad_engine(g.cmu);
	g.agent = cm_umad_agent(g.cmu);
	deadline = now_ms() + (uint64_t)g.seconds * 1000;

	if (g.passive) {
		cm_engine_listen(g.e, SERVICE_ID, ~0ull, 0);
		printf("passive: listening\n");
		ret = run_until(passive_done, deadline);
		run_until(never, now_ms() + 500); /* answer stragglers (late DREQs) */
		printf("result passive conns %u connected %u (by first data %u) timewait %u msgs %u\n",
		       g.nconns, g.connected, g.established_by_data, g.timewait, g.msgs);
		cm_stat_get(g.e, &st);
		printf("stats REQ rcvd %llu dups %llu, REP sent %llu retried %llu\n",
		       (unsigned long long)st.rcvd[CM_STAT_REQ],
		       (unsigned long long)st.duplicates[CM_STAT_REQ],
		       (unsigned long long)st.sent[CM_STAT_REP],
		       (unsigned long long)st.retried[CM_STAT_REP]);
		ret = ret == 0 && g.timewait == g.count ? 0 : 1;
		cm_umad_close(g.cmu);
		mad_transport_close(g.tp);
		verbs_close();
		return ret;
	}

	if (g.latency) {
		struct cm_connect_cmd t = {
			.service_id = SERVICE_ID, .qp_type = CM_QPT_RC, .responder_resources = 1,
			.initiator_depth = 1, .remote_cm_response_timeout = 16,
			.local_cm_response_timeout = 16, .retry_count = 7, .rnr_retry_count = 7,
			.max_cm_retries = 15,
			.primary = { .slid = g.port.lid, .dlid = g.dlid, .rate = 3,
				     .subnet_local = 1, .local_ack_timeout = 14,
				     .packet_life_time = 12, .mtu = IBV_MTU_1024, .pkey = 0xffff },
		};

		memcpy(t.primary.sgid, g.port.gid, 16);
		memcpy(t.primary.dgid, g.dgid, 16);
		g.verbs = 0; /* CM cost only */
		return latency_run(&t);
	}
	for (unsigned i = 0; i < g.count; i++) {
		struct conn *c = &g.conns[g.nconns++];
		struct cm_connect_cmd cmd = {
			.service_id = SERVICE_ID, .starting_psn = 0x100 + i, .qp_type = CM_QPT_RC,
			.responder_resources = 1, .initiator_depth = 1,
			/* short CM timeouts: a lost MAD costs ~0.3 s, not seconds */
			.remote_cm_response_timeout = 16, .local_cm_response_timeout = 16,
			.retry_count = 7, .rnr_retry_count = 7, .max_cm_retries = 15,
			.primary = { .slid = g.port.lid, .dlid = g.dlid, .rate = 3,
				     .subnet_local = 1, .local_ack_timeout = 14,
				     .packet_life_time = 12, .mtu = IBV_MTU_1024,
				     .pkey = g.port.pkey0 ? g.port.pkey0 : 0xffff },
		};

		memcpy(cmd.primary.sgid, g.port.gid, 16);
		memcpy(cmd.primary.dgid, g.dgid, 16);
		if (g.verbs) {
			c->qp = qp_create();
			if (!c->qp) {
				fprintf(stderr, "create QP %u failed\n", i);
				return 1;
			}
			cmd.qpn = c->qp->qp_num;
		} else {
			cmd.qpn = 0x1000 + i;
		}
		cmd.user = g.nconns;
		if (i == 0)
			printf("active: first REQ qpn 0x%06x psn 0x%06x service 0x%016llx lids %u>%u "
			       "pkey 0x%04x mtu %u\n", cmd.qpn, cmd.starting_psn,
			       (unsigned long long)cmd.service_id, cmd.primary.slid, cmd.primary.dlid,
			       cmd.primary.pkey, cmd.primary.mtu);
		ret = cm_engine_connect(g.e, &cmd, &c->id);
		if (ret) {
			fprintf(stderr, "connect %u: %s\n", i, strerror(-ret));
			return 1;
		}
		if (g.verbs && qp_move(c, IBV_QPS_INIT)) {
			fprintf(stderr, "QP %u to INIT failed\n", i);
			return 1;
		}
	}
	printf("active: %u REQs sent\n", g.count);
	run_until(all_settled, deadline);
	printf("active: connected %u timeouts %u rejected %u\n", g.connected, g.timeouts,
	       g.rejected);
	if (g.verbs) {
		for (unsigned i = 0; i < g.nconns; i++)
			if (g.conns[i].connected)
				post_send(&g.conns[i], i);
		run_until(all_msgs, deadline);
	}
	for (unsigned i = 0; i < g.nconns; i++)
		if (g.conns[i].connected)
			cm_engine_disconnect(g.e, g.conns[i].id, NULL, 0);
	run_until(all_timewait, deadline);
	cm_stat_get(g.e, &st);
	printf("result active connected %u timewait %u timeouts %u rejected %u msgs %u "
	       "wc_errors %u\n",
	       g.connected, g.timewait, g.timeouts, g.rejected, g.msgs, g.wc_errors);
	printf("stats REQ sent %llu retried %llu, RTU sent %llu, DREQ retried %llu\n",
	       (unsigned long long)st.sent[CM_STAT_REQ], (unsigned long long)st.retried[CM_STAT_REQ],
	       (unsigned long long)st.sent[CM_STAT_RTU],
	       (unsigned long long)st.retried[CM_STAT_DREQ]);
	cm_umad_close(g.cmu);
	mad_transport_close(g.tp);
	verbs_close();
	if (g.timeouts)
		return 3;
	return g.connected == g.count && g.timewait == g.count ? 0 : 1;
}
