/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fault injection: rules matching a link (or any link) and/or a
 * management class / attribute, each with an action (drop, dup, delay,
 * reorder) and a probability.  The random stream is seeded (fabsimd
 * --seed, "fault seed N") so a run can be replayed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fabsimd.h"

enum action { A_DROP, A_DUP, A_DELAY, A_REORDER };

struct rule {
	struct fsd_port *link; /* NULL: any link (applied once per packet) */
	int mgmt_class;	       /* -1 any */
	int attr;	       /* -1 any */
	enum action action;
	uint32_t delay_ms;
	double prob;
	uint64_t hits;
};

#define MAX_RULES 32
static struct rule rules[MAX_RULES];
static int nrules;
uint64_t fsd_fault_seed = 1;
static uint64_t rng_state;

static double rnd(void)
{
	/* xorshift64*: small, seedable, good enough for coin flips */
	if (!rng_state)
		rng_state = fsd_fault_seed ? fsd_fault_seed : 0x9e3779b97f4a7c15ull;
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

bool fsd_fault_any(void)
{
	return nrules > 0;
}

int fsd_fault_apply(const struct fsd_port *a, const struct fsd_port *b, const uint8_t *mad,
		    uint32_t *delay_ms)
{
	int copies = 1;
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);

	*delay_ms = 0;
	for (int i = 0; i < nrules; i++) {
		struct rule *r = &rules[i];

		if (r->link ? (r->link != a && r->link != b) : a != NULL)
			continue;
		if (r->mgmt_class >= 0 && r->mgmt_class != mad[1])
			continue;
		if (r->attr >= 0 && r->attr != attr)
			continue;
		if (rnd() >= r->prob)
			continue;
		r->hits++;
		switch (r->action) {
		case A_DROP:
			return 0;
		case A_DUP:
			copies = 2;
			break;
		case A_DELAY:
			*delay_ms = r->delay_ms;
			break;
		case A_REORDER:
			/* hold it back a little so later packets pass it */
			*delay_ms = 1 + (uint32_t)(rnd() * 20);
			break;
		}
	}
	return copies;
}

static const char *action_name(enum action a)
{
	return a == A_DROP ? "drop" : a == A_DUP ? "dup" : a == A_DELAY ? "delay" : "reorder";
}

static int parse_link(const char *s, struct fsd_port **out)
{
	char name[128];
	const char *colon = strrchr(s, ':');
	struct fsd_node *n;
	int port;

	if (!colon || (size_t)(colon - s) >= sizeof(name))
		return -EINVAL;
	memcpy(name, s, (size_t)(colon - s));
	name[colon - s] = 0;
	port = atoi(colon + 1);
	n = fsd_node_by_name(name);
	if (!n || port < 1 || port > n->nports)
		return -ENOENT;
	*out = &n->ports[port];
	return 0;
}

int fsd_fault_cmd(const char *args, char *out, size_t outlen)
{
	char buf[512], *tok, *save;
	struct rule r = {.mgmt_class = -1, .attr = -1, .prob = 1.0};
	bool have_action = false;

	snprintf(buf, sizeof(buf), "%s", args);
	tok = strtok_r(buf, " \t", &save);
	if (!tok || !strcmp(tok, "list")) {
		size_t o = 0;

		o += (size_t)snprintf(out + o, outlen - o, "seed %" PRIu64 "\n", fsd_fault_seed);
		for (int i = 0; i < nrules && o < outlen; i++) {
			struct rule *x = &rules[i];

			o += (size_t)snprintf(
			    out + o, outlen - o,
			    "%d: link %s:%d class %d attr %d %s %u prob %.3f hits %" PRIu64 "\n", i,
			    x->link ? x->link->node->desc : "any", x->link ? x->link->num : 0,
			    x->mgmt_class, x->attr, action_name(x->action), x->delay_ms, x->prob,
			    x->hits);
		}
		return 0;
	}
	if (!strcmp(tok, "clear")) {
		nrules = 0;
		return 0;
	}
	if (!strcmp(tok, "seed")) {
		tok = strtok_r(NULL, " \t", &save);
		if (!tok)
			return -EINVAL;
		fsd_fault_seed = strtoull(tok, NULL, 0);
		rng_state = 0;
		return 0;
	}
	if (strcmp(tok, "add"))
		return -EINVAL;
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *arg = NULL;

		if (!strcmp(tok, "drop") || !strcmp(tok, "dup") || !strcmp(tok, "reorder")) {
			r.action = tok[0] == 'd' ? (tok[1] == 'r' ? A_DROP : A_DUP) : A_REORDER;
			have_action = true;
			continue;
		}
		arg = strtok_r(NULL, " \t", &save);
		if (!arg)
			return -EINVAL;
		if (!strcmp(tok, "link")) {
			int e = parse_link(arg, &r.link);

			if (e)
				return e;
		} else if (!strcmp(tok, "class")) {
			r.mgmt_class = (int)strtol(arg, NULL, 0);
		} else if (!strcmp(tok, "attr")) {
			r.attr = (int)strtol(arg, NULL, 0);
		} else if (!strcmp(tok, "prob")) {
			r.prob = strtod(arg, NULL);
			if (r.prob < 0 || r.prob > 1)
				return -EINVAL;
		} else if (!strcmp(tok, "delay")) {
			r.action = A_DELAY;
			r.delay_ms = (uint32_t)strtoul(arg, NULL, 0);
			have_action = true;
		} else {
			return -EINVAL;
		}
	}
	if (!have_action || nrules >= MAX_RULES)
		return -EINVAL;
	rules[nrules++] = r;
	snprintf(out, outlen, "rule %d added\n", nrules - 1);
	return 0;
}
