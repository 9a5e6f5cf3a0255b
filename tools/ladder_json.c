/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm ladder --json: the model as one JSON document, one lifeline,
 * connection, arrow or timeout a line (see madcm-ladder(1)).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>

#include "tools/ladder_render.h"
#include "tools/layout_print.h"

static void str_or_null(FILE *out, const char *s)
{
	if (s && *s)
		json_print_string(out, s, -1);
	else
		fputs("null", out);
}

static void print_time(FILE *out, int64_t ns)
{
	if (ns < 0) {
		fputc('-', out);
		ns = -ns;
	}
	fprintf(out, "%" PRId64 ".%09" PRId64, ns / 1000000000, ns % 1000000000);
}

static void print_flags(FILE *out, unsigned flags)
{
	bool first = true;

	fputc('[', out);
	for (unsigned f = 1; f <= LADDER_CROSSED; f <<= 1) {
		if (!(flags & f))
			continue;
		fprintf(out, "%s\"%s\"", first ? "" : ",", ladder_flag_name(f));
		first = false;
	}
	fputc(']', out);
}

int ladder_render_json(FILE *out, const struct ladder_model *m, const char *source)
{
	fputs("{\"source\":", out);
	json_print_string(out, source ? source : "-", -1);
	fprintf(out, ",\"start\":\"%lld.%09ld\",\"mads\":%u,\"malformed\":%u,\n",
		(long long)m->start.tv_sec, m->start.tv_nsec, m->mads, m->malformed);

	fputs("\"lifelines\":[", out);
	for (size_t i = 0; i < m->nlanes; i++) {
		const struct ladder_lane *l = &m->lanes[i];
		char gid[INET6_ADDRSTRLEN] = "";

		if (l->has_gid)
			inet_ntop(AF_INET6, l->gid, gid, sizeof(gid));
		fprintf(out, "%s\n{\"id\":%zu,\"title\":", i ? "," : "", i);
		json_print_string(out, l->title, -1);
		fputs(",\"name\":", out);
		str_or_null(out, l->name);
		fputs(",\"gid\":", out);
		str_or_null(out, gid);
		fputs(",\"lid\":", out);
		if (l->lid)
			fprintf(out, "%u", l->lid);
		else
			fputs("null", out);
		fputs(",\"ip\":", out);
		str_or_null(out, l->ip);
		fprintf(out, ",\"sa\":%s}", l->sa ? "true" : "false");
	}
	fputs("],\n\"connections\":[", out);
	for (size_t i = 0; i < m->nconns; i++) {
		const struct ladder_conn *c = &m->conns[i];

		fprintf(out, "%s\n{\"id\":%zu,\"colour\":\"%s\",\"sidr\":%s", i ? "," : "", i,
			ladder_colour(c->colour), c->sidr ? "true" : "false");
		fprintf(out, ",\"%s\":\"0x%08" PRIx32 "\"",
			c->sidr ? "request_id" : "active_comm_id", c->active_id);
		if (!c->sidr)
			fprintf(out, ",\"passive_comm_id\":\"0x%08" PRIx32 "\"", c->passive_id);
		if (c->has_sid)
			fprintf(out, ",\"service_id\":\"0x%016" PRIx64 "\"", c->service_id);
		else
			fputs(",\"service_id\":null", out);
		fprintf(out, ",\"active\":%d,\"passive\":%d}", c->active_lane, c->passive_lane);
	}
	fputs("],\n\"arrows\":[", out);
	for (size_t i = 0; i < m->narrows; i++) {
		const struct ladder_arrow *a = &m->arrows[i];

		fprintf(out, "%s\n{\"index\":%zu,\"frame\":%u,\"time\":", i ? "," : "", i,
			a->frame);
		print_time(out, a->t_ns);
		fprintf(out, ",\"from\":%d,\"to\":%d,\"class\":\"%s\",\"message\":", a->from, a->to,
			a->mgmt_class == 0x07 ? "CM" : "SA");
		json_print_string(out, a->message, -1);
		fprintf(out, ",\"tid\":\"0x%016" PRIx64 "\",\"conn\":", a->tid);
		if (a->conn >= 0)
			fprintf(out, "%d", a->conn);
		else
			fputs("null", out);
		fputs(",\"label\":", out);
		json_print_string(out, a->label, -1);
		fputs(",\"detail\":", out);
		str_or_null(out, a->detail);
		fputs(",\"flags\":", out);
		print_flags(out, a->flags);
		fprintf(out, ",\"copy\":%u}", a->copy);
	}
	fputs("],\n\"timeouts\":[", out);
	for (size_t i = 0; i < m->ntimeouts; i++) {
		const struct ladder_timeout *t = &m->timeouts[i];

		fprintf(out, "%s\n{\"lane\":%d,\"conn\":%d,\"arrow\":%d,\"time\":", i ? "," : "",
			t->lane, t->conn, t->arrow);
		print_time(out, t->t_ns);
		fputs(",\"wait\":", out);
		print_time(out, (int64_t)t->wait_ns);
		fprintf(out, ",\"after_end\":%s,\"label\":", t->after_end ? "true" : "false");
		json_print_string(out, t->label, -1);
		fputc('}', out);
	}
	fputs("]}\n", out);
	return ferror(out) ? -EIO : 0;
}
