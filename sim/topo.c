/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Topologies: the ibnetdiscover format (as ibsim reads it: "Switch N
 * "id"", "Hca/Ca N "id"", port lines "[p] "remote"[rp]", vendid=/devid=/
 * *guid= lines, "include FILE"), and generators b2b, star:N, fattree:K[:H].
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mad.h>

#include "sim/fabsimd.h"

struct pending_link {
	struct fsd_node *node;
	int port;
	char remote[64];
	int rport;
	int width;
	char file[256];
	int line;
};

static struct pending_link *plinks;
static size_t nplinks, plinks_cap;

static struct fsd_node *node_new(enum fsd_node_type type, int nports, const char *id)
{
	struct fsd_node *n = calloc(1, sizeof(*n));
	struct fsd_node **nn;

	if (!n)
		return NULL;
	n->ports = calloc((size_t)nports + 1, sizeof(*n->ports));
	nn = realloc(fab.nodes, (size_t)(fab.num_nodes + 1) * sizeof(*nn));
	if (!n->ports || !nn) {
		free(n->ports);
		free(n);
		return NULL;
	}
	fab.nodes = nn;
	n->index = fab.num_nodes;
	fab.nodes[fab.num_nodes++] = n;
	n->type = type;
	n->nports = nports;
	n->host_id = -1;
	snprintf(n->id, sizeof(n->id), "%s", id);
	snprintf(n->desc, sizeof(n->desc), "%s", id);
	for (int i = 0; i <= nports; i++) {
		n->ports[i].node = n;
		n->ports[i].num = i;
		n->ports[i].link_width = 2; /* 4x */
	}
	return n;
}

struct fsd_node *fsd_node_by_name(const char *name)
{
	char *end;
	uint64_t g = strtoull(name, &end, 0);
	bool is_guid = *name && !*end;

	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];

		if (!strcmp(n->id, name) || !strcmp(n->desc, name) || (is_guid && n->guid == g))
			return n;
	}
	/* host name (first word of the description) */
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];
		size_t l = strlen(name);

		if (!strncmp(n->desc, name, l) && (n->desc[l] == ' ' || !n->desc[l]))
			return n;
	}
	return NULL;
}

static int add_link(struct fsd_node *n, int port, const char *remote, int rport, int width,
		    const char *file, int line)
{
	struct pending_link *pl;

	if (nplinks == plinks_cap) {
		size_t nc = plinks_cap ? plinks_cap * 2 : 256;
		struct pending_link *np = realloc(plinks, nc * sizeof(*np));

		if (!np)
			return -ENOMEM;
		plinks = np;
		plinks_cap = nc;
	}
	pl = &plinks[nplinks++];
	memset(pl, 0, sizeof(*pl));
	pl->node = n;
	pl->port = port;
	snprintf(pl->remote, sizeof(pl->remote), "%s", remote);
	pl->rport = rport;
	pl->width = width;
	snprintf(pl->file, sizeof(pl->file), "%s", file);
	pl->line = line;
	return 0;
}

static uint64_t guid_from_id(const char *id)
{
	/* ibnetdiscover ids: S-<guid>, H-<guid>, R-<guid> */
	if ((id[0] == 'S' || id[0] == 'H' || id[0] == 'R') && id[1] == '-') {
		char *end;
		uint64_t g = strtoull(id + 2, &end, 16);

		if (!*end && g)
			return g;
	}
	return 0;
}

/* parse a quoted string at *s; returns 0 and advances, -1 if none */
static int quoted(const char **s, char *out, size_t outlen)
{
	const char *p = *s, *q;

	while (isspace((unsigned char)*p))
		p++;
	if (*p != '"')
		return -1;
	q = strchr(p + 1, '"');
	if (!q)
		return -1;
	size_t l = (size_t)(q - p - 1);

	if (l >= outlen)
		l = outlen - 1;
	memcpy(out, p + 1, l);
	out[l] = 0;
	*s = q + 1;
	return 0;
}

static int width_enc(int w)
{
	switch (w) {
	case 1:
		return 1;
	case 4:
		return 2;
	case 8:
		return 4;
	case 12:
		return 8;
	case 2:
		return 16;
	default:
		return -1;
	}
}

#define TERR(...)                                                                                  \
	do {                                                                                       \
		fprintf(err, "%s:%d: ", file, lineno);                                             \
		fprintf(err, __VA_ARGS__);                                                         \
		fputc('\n', err);                                                                  \
		ret = -EINVAL;                                                                     \
		goto out;                                                                          \
	} while (0)

static int load_file(const char *file, FILE *err, int depth)
{
	FILE *f;
	char line[1024];
	int lineno = 0, ret = 0;
	struct fsd_node *cur = NULL;
	uint64_t next_guid = 0, next_sysguid = 0;
	uint32_t vendid = 0x2c9, devid = 0;

	f = fopen(file, "r");
	if (!f) {
		int e = errno;

		/* an include's failure is told by the includer, with its line */
		if (!depth)
			fprintf(err, "%s: %s\n", file, strerror(e));
		return -e;
	}
	while (fgets(line, sizeof(line), f)) {
		const char *s = line;
		char word[32];

		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			TERR("line too long");
		while (isspace((unsigned char)*s))
			s++;
		if (!*s || *s == '#')
			continue;
		if (!strncmp(s, "vendid=", 7)) {
			vendid = (uint32_t)strtoul(s + 7, NULL, 0);
			continue;
		}
		if (!strncmp(s, "devid=", 6)) {
			devid = (uint32_t)strtoul(s + 6, NULL, 0);
			continue;
		}
		if (!strncmp(s, "sysimgguid=", 11)) {
			next_sysguid = strtoull(s + 11, NULL, 0);
			continue;
		}
		if (!strncmp(s, "switchguid=", 11) || !strncmp(s, "caguid=", 7) ||
		    !strncmp(s, "routerguid=", 11)) {
			next_guid = strtoull(strchr(s, '=') + 1, NULL, 0);
			continue;
		}
		if (!strncmp(s, "include", 7) && isspace((unsigned char)s[7])) {
			char inc[512], path[1024];
			const char *slash = strrchr(file, '/');

			if (sscanf(s + 7, " %511s", inc) != 1)
				TERR("include: missing file name");
			if (inc[0] != '/' && slash)
				snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - file), file,
					 inc);
			else
				snprintf(path, sizeof(path), "%s", inc);
			if (depth >= 8)
				TERR("include \"%s\": nesting too deep", inc);
			ret = load_file(path, err, depth + 1);
			if (ret == -EINVAL)
				goto out; /* already reported with file:line */
			if (ret)
				TERR("include \"%s\": %s", inc, strerror(-ret));
			continue;
		}
		if (!strncmp(s, "do", 2) && isspace((unsigned char)s[2]))
			continue; /* ibsim console commands: not ours */
		if (*s == '[') {
			int port, rport = 0, w = 0;
			char remote[64];
			char *end;

			if (!cur)
				TERR("port line before any node line");
			port = (int)strtol(s + 1, &end, 10);
			if (end == s + 1 || *end != ']')
				TERR("bad port number (expected \"[N]\")");
			if (port < 1 || port > cur->nports)
				TERR("port %d out of range 1..%d for \"%s\"", port, cur->nports,
				     cur->id);
			s = end + 1;
			if (*s == '(') { /* port guid */
				uint64_t pg = strtoull(s + 1, &end, 16);

				if (*end != ')')
					TERR("bad port GUID");
				if (cur->type == FSD_CA)
					cur->ports[port].guid = pg;
				s = end + 1;
			}
			if (quoted(&s, remote, sizeof(remote)))
				TERR("expected \"remote-id\" after [%d]", port);
			if (*s != '[')
				TERR("expected [remote-port] after \"%s\"", remote);
			rport = (int)strtol(s + 1, &end, 10);
			if (end == s + 1 || *end != ']' || rport < 1 || rport > FSD_MAX_PORTS)
				TERR("bad remote port number");
			s = end + 1;
			if (*s == '(') {
				s = strchr(s, ')');
				if (!s)
					TERR("bad remote port GUID");
				s++;
			}
			/* optional w=N (ibsim); widths in the comment are not read */
			const char *wp = strstr(s, "w=");
			const char *hash = strchr(s, '#');

			if (wp && (!hash || wp < hash)) {
				w = width_enc(atoi(wp + 2));
				if (w < 0)
					TERR("bad link width \"%.*s\"",
					     (int)strcspn(wp, " \t\r\n#"), wp);
			}
			if (add_link(cur, port, remote, rport, w, file, lineno))
				TERR("out of memory");
			continue;
		}
		{
			int nports;
			char id[64];
			enum fsd_node_type type;
			const char *p = s;

			if (sscanf(s, "%31s", word) != 1)
				TERR("unparsable line");
			if (!strcmp(word, "Switch"))
				type = FSD_SWITCH;
			else if (!strcmp(word, "Hca") || !strcmp(word, "Ca"))
				type = FSD_CA;
			else if (!strcmp(word, "Rt"))
				TERR("routers are not supported");
			else
				TERR(
				    "unknown line (expected Switch, Hca, Ca, [port] or key=value): "
				    "\"%.40s\"",
				    word);
			p += strlen(word);
			nports = (int)strtol(p, (char **)&p, 10);
			if (nports < 1 || nports > FSD_MAX_PORTS)
				TERR("bad number of ports for %s (1..%d)", word, FSD_MAX_PORTS);
			if (quoted(&p, id, sizeof(id)))
				TERR("expected \"node-id\" after the number of ports");
			for (int i = 0; i < fab.num_nodes; i++)
				if (!strcmp(fab.nodes[i]->id, id))
					TERR("duplicate node id \"%s\"", id);
			cur = node_new(type, nports, id);
			if (!cur)
				TERR("out of memory");
			cur->guid = next_guid ? next_guid : guid_from_id(id);
			cur->sysguid = next_sysguid;
			cur->vendid = vendid;
			cur->devid = devid ? devid : (type == FSD_SWITCH ? 0xb924 : 0x1003);
			next_guid = next_sysguid = 0;
			devid = 0;
			const char *hash = strchr(p, '#');

			if (hash) {
				const char *d = hash + 1;
				char desc[65];

				if (!quoted(&d, desc, sizeof(desc)))
					snprintf(cur->desc, sizeof(cur->desc), "%s", desc);
			}
			continue;
		}
	}
out:
	fclose(f);
	return ret;
}

static void plinks_free(void)
{
	free(plinks);
	plinks = NULL;
	nplinks = plinks_cap = 0;
}

int fsd_topo_load(const char *path, FILE *err)
{
	int ret = load_file(path, err, 0);

	if (ret) {
		plinks_free();
		return ret;
	}
	/* resolve links now that every node is known */
	for (size_t i = 0; i < nplinks; i++) {
		struct pending_link *pl = &plinks[i];
		struct fsd_node *r = NULL;
		struct fsd_port *a, *b;

		for (int j = 0; j < fab.num_nodes; j++)
			if (!strcmp(fab.nodes[j]->id, pl->remote))
				r = fab.nodes[j];
		if (!r) {
			fprintf(err, "%s:%d: unknown node \"%s\"\n", pl->file, pl->line,
				pl->remote);
			plinks_free();
			return -EINVAL;
		}
		if (pl->rport > r->nports) {
			fprintf(err, "%s:%d: \"%s\" has no port %d (it has %d)\n", pl->file,
				pl->line, r->id, pl->rport, r->nports);
			plinks_free();
			return -EINVAL;
		}
		if (r == pl->node && pl->rport == pl->port) {
			fprintf(err, "%s:%d: port linked to itself\n", pl->file, pl->line);
			plinks_free();
			return -EINVAL;
		}
		a = &pl->node->ports[pl->port];
		b = &r->ports[pl->rport];
		if ((a->peer && a->peer != b) || (b->peer && b->peer != a)) {
			fprintf(err,
				"%s:%d: \"%s\"[%d] <-> \"%s\"[%d] conflicts with an earlier link\n",
				pl->file, pl->line, pl->node->id, pl->port, r->id, pl->rport);
			plinks_free();
			return -EINVAL;
		}
		a->peer = b;
		b->peer = a;
		if (pl->width)
			a->link_width = b->link_width = (uint8_t)pl->width;
	}
	plinks_free();
	return 0;
}

void fsd_topo_reset(void)
{
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];

		for (int p = 0; p <= n->nports; p++)
			fsd_capture_stop(&n->ports[p]);
		free(n->ports);
		free(n->lft);
		free(n->mft);
		free(n);
	}
	free(fab.nodes);
	free(fab.hosts);
	plinks_free();
	memset(&fab, 0, sizeof(fab));
}

static void connect_ports(struct fsd_node *a, int pa, struct fsd_node *b, int pb)
{
	a->ports[pa].peer = &b->ports[pb];
	b->ports[pb].peer = &a->ports[pa];
}

static struct fsd_node *gen_ca(int i)
{
	char id[32];
	struct fsd_node *n;

	snprintf(id, sizeof(id), "H-%016" PRIx64,
		 (uint64_t)(0x0002c90300000000ull + ((uint64_t)i << 8)));
	n = node_new(FSD_CA, 1, id);
	if (!n)
		return NULL;
	n->guid = 0x0002c90300000000ull + ((uint64_t)i << 8);
	snprintf(n->desc, sizeof(n->desc), "h%d HCA-1", i);
	n->vendid = 0x2c9;
	n->devid = 0x1003;
	return n;
}

static struct fsd_node *gen_sw(int i, int nports, const char *role)
{
	char id[32];
	struct fsd_node *n;

	snprintf(id, sizeof(id), "S-%016" PRIx64,
		 (uint64_t)(0x0008f10400000000ull + ((uint64_t)i << 8)));
	n = node_new(FSD_SWITCH, nports, id);
	if (!n)
		return NULL;
	n->guid = 0x0008f10400000000ull + ((uint64_t)i << 8);
	snprintf(n->desc, sizeof(n->desc), "sw-%s%d", role, i);
	n->vendid = 0x8f1;
	n->devid = 0xb924;
	return n;
}

int fsd_topo_generate(const char *spec, FILE *err)
{
	char *end;

	if (!strcmp(spec, "b2b")) {
		struct fsd_node *a = gen_ca(1), *b = gen_ca(2);

		if (!a || !b)
			return -ENOMEM;
		connect_ports(a, 1, b, 1);
		return 0;
	}
	if (!strncmp(spec, "star:", 5)) {
		long n = strtol(spec + 5, &end, 10);
		struct fsd_node *sw;

		if (*end || n < 1 || n > FSD_MAX_PORTS) {
			fprintf(err, "--gen %s: star:N needs 1 <= N <= %d\n", spec, FSD_MAX_PORTS);
			return -EINVAL;
		}
		sw = gen_sw(1, n < 8 ? 8 : (int)n, "");
		if (!sw)
			return -ENOMEM;
		for (int i = 1; i <= n; i++) {
			struct fsd_node *h = gen_ca(i);

			if (!h)
				return -ENOMEM;
			connect_ports(sw, i, h, 1);
		}
		return 0;
	}
	if (!strncmp(spec, "fattree:", 8)) {
		long k = strtol(spec + 8, &end, 10), hosts;
		int half, leaves, hostno = 1;
		struct fsd_node **leaf, **spine;

		if (end == spec + 8 || k < 4 || k > 64 || (k & 1) || (*end && *end != ':')) {
			fprintf(err, "--gen %s: fattree:K needs an even K, 4 <= K <= 64\n", spec);
			return -EINVAL;
		}
		/* fattree:K:H: the same tree with only its first H hosts (and
		 * the leaves they need), for a fabric of any size. */
		hosts = k * k / 2;
		if (*end) {
			const char *h = end + 1;

			hosts = strtol(h, &end, 10);
			if (end == h || *end || hosts < 1 || hosts > k * k / 2) {
				fprintf(err, "--gen %s: fattree:K:H needs 1 <= H <= K*K/2\n", spec);
				return -EINVAL;
			}
		}
		half = (int)k / 2;
		leaves = (int)((hosts + half - 1) / half);
		leaf = calloc((size_t)k, sizeof(*leaf));
		spine = calloc((size_t)half, sizeof(*spine));
		if (!leaf || !spine)
			return -ENOMEM;
		/* k leaves: half ports down to hosts, half up (one per spine);
		 * k/2 spines with k ports: one per leaf.  k*k/2 hosts. */
		for (int s = 0; s < half; s++)
			if (!(spine[s] = gen_sw(s + 1, (int)k, "spine")))
				return -ENOMEM;
		for (int l = 0; l < leaves; l++) {
			if (!(leaf[l] = gen_sw(half + l + 1, (int)k, "leaf")))
				return -ENOMEM;
			for (int s = 0; s < half; s++)
				connect_ports(leaf[l], half + 1 + s, spine[s], l + 1);
			for (int p = 1; p <= half && hostno <= hosts; p++) {
				struct fsd_node *h = gen_ca(hostno++);

				if (!h)
					return -ENOMEM;
				connect_ports(leaf[l], p, h, 1);
			}
		}
		free(leaf);
		free(spine);
		return 0;
	}
	fprintf(err, "--gen %s: unknown generator (b2b, star:N, fattree:K[:H])\n", spec);
	return -EINVAL;
}

int fsd_topo_finish(FILE *err)
{
	uint64_t auto_guid = 0x0002c9ff00000000ull;

	if (!fab.num_nodes) {
		fprintf(err, "topology has no nodes\n");
		return -EINVAL;
	}
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];

		if (!n->guid)
			n->guid = auto_guid + ((uint64_t)i << 8);
		if (!n->sysguid)
			n->sysguid = n->guid;
		for (int p = 0; p <= n->nports; p++) {
			struct fsd_port *pt = &n->ports[p];

			if (n->type == FSD_SWITCH)
				pt->guid = n->guid;
			else if (!pt->guid)
				pt->guid = n->guid + (uint64_t)p;
			if (p == 0 && n->type == FSD_CA)
				continue;
			fsd_sma_init_port(pt);
		}
		if (n->type == FSD_SWITCH)
			fsd_sma_init_switch(n);
	}
	/* hosts: CAs grouped by the first word of their description */
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];
		char name[FSP_NAME_LEN];
		int h;

		if (n->type != FSD_CA)
			continue;
		snprintf(name, sizeof(name), "%.63s", n->desc);
		name[strcspn(name, " \t")] = 0;
		for (h = 0; h < fab.num_hosts; h++)
			if (!strcmp(fab.hosts[h].name, name))
				break;
		if (h == fab.num_hosts) {
			struct fsd_host *nh = realloc(fab.hosts, (size_t)(h + 1) * sizeof(*nh));

			if (!nh)
				return -ENOMEM;
			fab.hosts = nh;
			memset(&fab.hosts[h], 0, sizeof(fab.hosts[h]));
			snprintf(fab.hosts[h].name, sizeof(fab.hosts[h].name), "%s", name);
			fab.num_hosts++;
		}
		if (fab.hosts[h].num_cas >= 8) {
			fprintf(err, "host %s: more than 8 CAs\n", name);
			return -EINVAL;
		}
		n->host_id = h;
		n->ca_index = fab.hosts[h].num_cas;
		fab.hosts[h].cas[fab.hosts[h].num_cas++] = n;
	}
	if (!fab.num_hosts) {
		fprintf(err, "topology has no CA (nowhere to run an SM)\n");
		return -EINVAL;
	}
	for (int i = 0; i < fab.num_nodes; i++)
		for (int p = 1; p <= fab.nodes[i]->nports; p++)
			fsd_port_link_update(&fab.nodes[i]->ports[p]);
	return 0;
}

void fsd_topo_dump(FILE *f)
{
	/* ibnetdiscover layout, which ibsim reads as well */
	for (int i = 0; i < fab.num_nodes; i++) {
		struct fsd_node *n = fab.nodes[i];

		fprintf(f, "vendid=0x%x\ndevid=0x%x\n%s=0x%016" PRIx64 "\n", n->vendid, n->devid,
			n->type == FSD_SWITCH ? "switchguid" : "caguid", n->guid);
		fprintf(f, "%s\t%d \"%s\"\t\t# \"%s\"\n", n->type == FSD_SWITCH ? "Switch" : "Ca",
			n->nports, n->id, n->desc);
		for (int p = 1; p <= n->nports; p++) {
			struct fsd_port *pt = &n->ports[p];

			if (!pt->peer)
				continue;
			fprintf(f, "[%d]\t\"%s\"[%d]\n", p, pt->peer->node->id, pt->peer->num);
		}
		fputc('\n', f);
	}
}
