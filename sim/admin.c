/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Text commands of the fabsim CLI (FSP_ADMIN): hosts, status, link,
 * fault, capture, shutdown.  Replies are plain text for humans and for
 * the test scripts' grep.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/fabsimd.h"

struct obuf {
	char *s;
	size_t len, cap;
};

static void out(struct obuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct obuf *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->s ? o->s + o->len : NULL, o->s ? o->cap - o->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (o->s && o->len + (size_t)n < o->cap) {
			o->len += (size_t)n;
			return;
		}
		size_t nc = (o->cap + (size_t)n + 1) * 2;
		char *ns = realloc(o->s, nc);

		if (!ns)
			return;
		o->s = ns;
		o->cap = nc;
	}
}

static const char *state_name(int s)
{
	static const char *n[] = {"?", "Down", "Init", "Armed", "Active"};

	return s >= 1 && s <= 4 ? n[s] : "?";
}

static void cmd_hosts(struct obuf *o)
{
	for (int h = 0; h < fab.num_hosts; h++) {
		struct fsd_host *host = &fab.hosts[h];

		for (int c = 0; c < host->num_cas; c++) {
			struct fsd_node *n = host->cas[c];

			for (int p = 1; p <= n->nports; p++) {
				struct fsd_port *pt = &n->ports[p];
				uint64_t pre = mad_get_field64(pt->pi, 0, IB_PORT_GID_PREFIX_F);

				if (!pt->peer)
					continue;
				out(o,
				    "%s fabsim%d port %d lid %u state %s gid "
				    "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x guid 0x%016" PRIx64
				    "\n",
				    host->name, c, p, fsd_port_lid(pt),
				    state_name(fsd_port_state(pt)), (unsigned)(pre >> 48) & 0xffff,
				    (unsigned)(pre >> 32) & 0xffff, (unsigned)(pre >> 16) & 0xffff,
				    (unsigned)pre & 0xffff, (unsigned)(pt->guid >> 48) & 0xffff,
				    (unsigned)(pt->guid >> 32) & 0xffff,
				    (unsigned)(pt->guid >> 16) & 0xffff,
				    (unsigned)pt->guid & 0xffff, pt->guid);
			}
		}
	}
}

static const char *counter_names[FSD_C_MAX] = {
    [FSD_C_CLIENT_BAD] = "client_bad",	 [FSD_C_NO_ROUTE] = "no_route",
    [FSD_C_LINK_DOWN] = "link_down",	 [FSD_C_NO_AGENT] = "no_agent",
    [FSD_C_FAULT_DROP] = "fault_drop",	 [FSD_C_FAULT_DUP] = "fault_dup",
    [FSD_C_FAULT_DELAY] = "fault_delay", [FSD_C_SEND_TIMEOUT] = "send_timeout",
    [FSD_C_RETRIES] = "retries",	 [FSD_C_RMPP_SEGS] = "rmpp_segments",
    [FSD_C_PROTO_BAD] = "proto_bad",	 [FSD_C_PKEY_DROP] = "pkey_drop",
};

static void cmd_status(struct obuf *o)
{
	int active = 0, ports = 0;

	for (int i = 0; i < fab.num_nodes; i++)
		for (int p = 1; p <= fab.nodes[i]->nports; p++)
			if (fab.nodes[i]->ports[p].peer) {
				ports++;
				active += fsd_port_state(&fab.nodes[i]->ports[p]) == 4;
			}
	int nconn, nagents;

	fsd_conn_stats(&nconn, &nagents);
	out(o, "fabric %s nodes %d hosts %d ports %d active %d pid %d\n", fab.name, fab.num_nodes,
	    fab.num_hosts, ports, active, getpid());
	out(o, "connections %d agents %d\n", nconn, nagents);
	for (int c = 0; c < FSD_C_MAX; c++)
		out(o, "%s %" PRIu64 "\n", counter_names[c], fab.counters[c]);
	for (int c = 0; c < 256; c++)
		if (fab.class_fwd[c] || fab.class_drop[c])
			out(o, "class 0x%02x forwarded %" PRIu64 " dropped %" PRIu64 "\n", c,
			    fab.class_fwd[c], fab.class_drop[c]);
}

static int cmd_link(struct obuf *o, char *args)
{
	char name[128], what[16];
	int port;
	struct fsd_node *n;
	struct fsd_port *p;

	if (sscanf(args, "%127s %d %15s", name, &port, what) != 3)
		return -EINVAL;
	n = fsd_node_by_name(name);
	if (!n || port < 1 || port > n->nports)
		return -ENOENT;
	p = &n->ports[port];
	if (!strcmp(what, "down"))
		p->admin_down = true;
	else if (!strcmp(what, "up"))
		p->admin_down = false;
	else
		return -EINVAL;
	fsd_port_link_event(p);
	out(o, "%s port %d %s\n", n->desc, port, state_name(fsd_port_state(p)));
	return 0;
}

static int cmd_capture(struct obuf *o, char *args)
{
	char where[128], file[3000];
	char *c1, *c2;
	int ca = 0, port = 1, h;

	if (sscanf(args, "%127s %2999s", where, file) != 2)
		return -EINVAL;
	/* HOST[:PORT] or HOST:CA:PORT */
	c1 = strchr(where, ':');
	if (c1) {
		*c1++ = 0;
		c2 = strchr(c1, ':');
		if (c2) {
			*c2++ = 0;
			ca = atoi(c1);
			port = atoi(c2);
		} else {
			port = atoi(c1);
		}
	}
	for (h = 0; h < fab.num_hosts; h++)
		if (!strcmp(fab.hosts[h].name, where))
			break;
	if (h == fab.num_hosts || ca < 0 || ca >= fab.hosts[h].num_cas)
		return -ENOENT;
	struct fsd_node *n = fab.hosts[h].cas[ca];

	if (port < 1 || port > n->nports)
		return -ENOENT;
	if (!strcmp(file, "off")) {
		fsd_capture_stop(&n->ports[port]);
		return 0;
	}
	int e = fsd_capture_start(&n->ports[port], file);

	if (!e)
		out(o, "capturing %s port %d to %s\n", n->desc, port, file);
	return e;
}

int fsd_admin(const char *cmdline, char **res)
{
	struct obuf o = {0};
	char buf[4096], *args;
	int ret = 0;

	snprintf(buf, sizeof(buf), "%s", cmdline);
	args = buf + strcspn(buf, " \t");
	if (*args)
		*args++ = 0;
	if (!strcmp(buf, "hosts"))
		cmd_hosts(&o);
	else if (!strcmp(buf, "status"))
		cmd_status(&o);
	else if (!strcmp(buf, "host")) {
		/* resolve a host argument of "fabsim run" (name, node id, GUID) */
		struct fsd_node *n = NULL;
		int h;

		for (h = 0; h < fab.num_hosts; h++)
			if (!strcmp(fab.hosts[h].name, args))
				break;
		if (h == fab.num_hosts && (n = fsd_node_by_name(args)) && n->type == FSD_CA)
			h = n->host_id;
		if (h < fab.num_hosts)
			out(&o, "%s\n", fab.hosts[h].name);
		else
			ret = -ENOENT;
	} else if (!strcmp(buf, "trace")) {
		extern bool fsd_trace;

		if (!strcmp(args, "on") || !strcmp(args, "off"))
			fsd_trace = args[1] == 'n';
		else
			ret = -EINVAL;
		out(&o, "trace %s (in fabsimd.log)\n", fsd_trace ? "on" : "off");
	} else if (!strcmp(buf, "ping"))
		out(&o, "pong %d\n", getpid());
	else if (!strcmp(buf, "link")) {
		ret = cmd_link(&o, args);
		fsd_verbs_changed();
	} else if (!strcmp(buf, "capture")) {
		ret = cmd_capture(&o, args);
		fsd_verbs_changed();
	} else if (!strcmp(buf, "fault")) {
		char tmp[8192] = "";

		ret = fsd_fault_cmd(args, tmp, sizeof(tmp));
		fsd_verbs_changed();
		out(&o, "%s", tmp);
	} else if (!strcmp(buf, "shutdown")) {
		out(&o, "bye\n");
		ret = 1;
	} else
		ret = -EINVAL;
	*res = o.s;
	return ret;
}
