/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm ladder's drawing: the model as an SVG ladder diagram, bare or
 * inline in a self-contained HTML page (no script, no external resource).
 *
 * Lifelines are columns; every event (an arrow, a timeout) gets one row in
 * time order.  Rows do not scale with time: each row's time is written on
 * the left, and a gap much longer than the usual one between rows is
 * drawn as a break across the lifelines, labelled with its length.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/ladder_render.h"

#define LEFT 130   /* the time column */
#define LANE_W 320 /* width of a lifeline's column */
#define TOP 92	   /* below the lifeline headers */
#define ROW 44	   /* one event */
#define BREAK 34   /* extra height of a compressed gap */
#define LEGEND_ROW 18

/* Colour-blind-safe palette (Okabe-Ito), then Tableau's. */
static const char *const palette[] = {
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
    "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#9467bd", "#2ca02c",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))
#define NO_CONN_COLOUR "#555555"
#define TIMEOUT_COLOUR "#c00000"

const char *ladder_colour(unsigned colour)
{
	return palette[colour % NPALETTE];
}

static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			/* Control characters are not allowed in XML 1.0. */
			fputc((unsigned char)*s < 0x20 ? '?' : *s, out);
		}
	}
}

/* One row of the drawing: an arrow or a timeout. */
struct row {
	int64_t t_ns;
	bool timeout;
	size_t idx;
	int y;
	int64_t gap_ns; /* > 0: a compressed gap is drawn above this row */
};

static int cmp_row(const void *x, const void *y)
{
	const struct row *a = x, *b = y;

	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	if (a->timeout != b->timeout)
		return a->timeout ? 1 : -1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * Rows in time order with their y.  A gap is compressed when it is over
 * 1 ms and over 10 times the usual gap between rows (the first quartile:
 * timeouts make many gaps long).
 */
static struct row *layout_rows(const struct ladder_model *m, size_t *nrows, int *bottom)
{
	size_t n = m->narrows + m->ntimeouts, ngaps = 0;
	struct row *rows = calloc(n + 1, sizeof(*rows));
	int64_t *gaps = calloc(n + 1, sizeof(*gaps));
	int64_t usual = 0;
	int y = TOP + 36;

	if (!rows || !gaps) {
		free(rows);
		free(gaps);
		return NULL;
	}
	for (size_t i = 0; i < m->narrows; i++)
		rows[i] = (struct row){.t_ns = m->arrows[i].t_ns, .idx = i};
	for (size_t i = 0; i < m->ntimeouts; i++)
		rows[m->narrows + i] =
		    (struct row){.t_ns = m->timeouts[i].t_ns, .timeout = true, .idx = i};
	qsort(rows, n, sizeof(*rows), cmp_row);
	for (size_t i = 1; i < n; i++)
		if (rows[i].t_ns > rows[i - 1].t_ns)
			gaps[ngaps++] = rows[i].t_ns - rows[i - 1].t_ns;
	if (ngaps) {
		qsort(gaps, ngaps, sizeof(*gaps), cmp_i64);
		usual = gaps[ngaps / 4];
	}
	for (size_t i = 0; i < n; i++) {
		int64_t gap = i ? rows[i].t_ns - rows[i - 1].t_ns : 0;

		if (i && gap / 10 > usual && gap > 1000000) {
			rows[i].gap_ns = gap;
			y += BREAK;
		}
		rows[i].y = y;
		y += ROW;
	}
	free(gaps);
	*nrows = n;
	*bottom = y;
	return rows;
}

static int lane_x(int lane)
{
	return LEFT + LANE_W * lane + LANE_W / 2;
}

static void draw_header(FILE *out, const struct ladder_model *m, int bottom)
{
	for (size_t i = 0; i < m->nlanes; i++) {
		const struct ladder_lane *l = &m->lanes[i];
		int x = lane_x((int)i);
		char line2[96] = "", gid[INET6_ADDRSTRLEN] = "";

		if (l->has_gid)
			inet_ntop(AF_INET6, l->gid, gid, sizeof(gid));
		if (l->lid)
			snprintf(line2, sizeof(line2), "LID %u", l->lid);
		if (l->ip[0] && strcmp(l->ip, l->title))
			snprintf(line2 + strlen(line2), sizeof(line2) - strlen(line2), "%s%s",
				 line2[0] ? "  " : "", l->ip);
		fprintf(
		    out,
		    "<line class=\"life\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
		    "<rect class=\"head\" x=\"%d\" y=\"12\" width=\"%d\" height=\"66\" rx=\"6\"/>\n"
		    "<text class=\"title\" x=\"%d\" y=\"34\">",
		    x, 78, x, bottom, x - LANE_W / 2 + 12, LANE_W - 24, x);
		xml_text(out, l->title);
		fprintf(out, "</text>\n<text class=\"sub\" x=\"%d\" y=\"52\">", x);
		xml_text(out, line2);
		fprintf(out, "</text>\n<text class=\"sub\" x=\"%d\" y=\"68\">", x);
		if (strcmp(gid, l->title))
			xml_text(out, gid);
		fputs("</text>\n", out);
	}
}

static void draw_time(FILE *out, const struct ladder_model *m, const struct row *r)
{
	char d[32];
	int width = LEFT + LANE_W * (int)m->nlanes;

	if (r->gap_ns) {
		int yb = r->y - ROW / 2 - BREAK / 2 + 4;

		ladder_format_duration(d, sizeof(d), (uint64_t)r->gap_ns);
		fprintf(out,
			"<rect class=\"gap\" x=\"8\" y=\"%d\" width=\"%d\" height=\"14\"/>\n"
			"<path class=\"zig\" d=\"M8 %d",
			yb - 7, width - 8, yb);
		for (int x = 8; x < width; x += 12)
			fprintf(out, " l6 -5 l6 5");
		fprintf(out, "\"/>\n<text class=\"gaplabel\" x=\"12\" y=\"%d\">gap %s</text>\n",
			yb - 9, d);
	}
	/* Microseconds since the capture's first MAD, as tshark's relative time. */
	fprintf(out,
		"<text class=\"time\" x=\"%d\" y=\"%d\">%s%" PRId64 ".%06" PRId64 " s</text>\n",
		LEFT - 12, r->y + 4, r->t_ns < 0 ? "-" : "",
		(r->t_ns < 0 ? -r->t_ns : r->t_ns) / 1000000000,
		(r->t_ns < 0 ? -r->t_ns : r->t_ns) % 1000000000 / 1000);
}

static const char *arrow_colour(const struct ladder_model *m, const struct ladder_arrow *a)
{
	return a->conn >= 0 ? ladder_colour(m->conns[a->conn].colour) : NO_CONN_COLOUR;
}

static void draw_arrow(FILE *out, const struct ladder_model *m, const struct row *r)
{
	const struct ladder_arrow *a = &m->arrows[r->idx];
	const char *colour = arrow_colour(m, a);
	int x1 = lane_x(a->from), x2 = lane_x(a->to), mid;
	const char *dash = a->flags & LADDER_RETRY	 ? " stroke-dasharray=\"8 4\""
			   : a->flags & LADDER_DUPLICATE ? " stroke-dasharray=\"2 4\""
							 : "";
	int marker = a->conn >= 0 ? (int)(m->conns[a->conn].colour % NPALETTE) : (int)NPALETTE;
	struct tm tm;
	time_t sec = a->ts.tv_sec;
	char when[40] = "";

	if (gmtime_r(&sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(out, "<g class=\"arrow\"><title>frame %u, %s.%09ld UTC, TID 0x%016" PRIx64,
		a->frame, when, a->ts.tv_nsec, a->tid);
	if (a->detail[0]) {
		fputs("\n", out);
		xml_text(out, a->detail);
	}
	fputs("</title>\n", out);
	if (x1 == x2) {
		/* To itself (both ends unresolved to one port): a loop. */
		fprintf(out,
			"<path d=\"M%d %d h40 v14 h-36\" fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"2\"%s marker-end=\"url(#ah%d)\"/>\n",
			x1, r->y - 7, colour, dash, marker);
		mid = x1 + 48;
		fprintf(out, "<text class=\"label\" text-anchor=\"start\" x=\"%d\" y=\"%d\">", mid,
			r->y - 8);
	} else {
		int tip = x2 > x1 ? x2 - 3 : x2 + 3;

		fprintf(out,
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
			"stroke-width=\"2\"%s marker-end=\"url(#ah%d)\"/>\n",
			x1, r->y, tip, r->y, colour, dash, marker);
		mid = (x1 + x2) / 2;
		fprintf(out, "<text class=\"label\" x=\"%d\" y=\"%d\">", mid, r->y - 6);
	}
	xml_text(out, a->label);
	for (unsigned f = 1; f <= LADDER_CROSSED; f <<= 1) {
		if (!(a->flags & f))
			continue;
		fprintf(out, " <tspan class=\"flag\">[%s", ladder_flag_name(f));
		if (f != LADDER_CROSSED && a->copy)
			fprintf(out, " %u", a->copy);
		fputs("]</tspan>", out);
	}
	fputs("</text>\n", out);
	if (a->detail[0]) {
		fprintf(out, "<text class=\"detail\"%s x=\"%d\" y=\"%d\">",
			x1 == x2 ? " text-anchor=\"start\"" : "", mid, r->y + 14);
		xml_text(out, a->detail);
		fputs("</text>\n", out);
	}
	fputs("</g>\n", out);
}

static void draw_timeout(FILE *out, const struct ladder_model *m, const struct row *rows,
			 size_t nrows, const struct row *r)
{
	const struct ladder_timeout *t = &m->timeouts[r->idx];
	int x = lane_x(t->lane), y0 = r->y;

	/* The wait: from the MAD's row down to where its timer fires. */
	for (size_t i = 0; i < nrows; i++)
		if (!rows[i].timeout && (int)rows[i].idx == t->arrow)
			y0 = rows[i].y;
	fprintf(out,
		"<g class=\"timeout\"><title>%s timer fires%s</title>\n"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\" "
		"stroke-dasharray=\"1 5\" stroke-linecap=\"round\"/>\n"
		"<path d=\"M%d %d l12 12 m0 -12 l-12 12\" stroke=\"%s\" stroke-width=\"3\"/>\n"
		"<text class=\"tlabel\" x=\"%d\" y=\"%d\">",
		m->arrows[t->arrow].message, t->after_end ? " (after the capture ends)" : "", x - 4,
		y0 + 4, x - 4, r->y - 6, TIMEOUT_COLOUR, x - 6, r->y - 6, TIMEOUT_COLOUR, x + 12,
		r->y + 4);
	xml_text(out, t->label);
	if (t->after_end)
		fputs(" (after the capture)", out);
	fputs("</text></g>\n", out);
}

static int draw_legend(FILE *out, const struct ladder_model *m, int y)
{
	fprintf(out,
		"<text class=\"legend\" x=\"12\" y=\"%d\">solid: first copy; dashed: retry "
		"(sent again after its timer fired); dotted: duplicate; red cross: a CM timer "
		"firing unanswered</text>\n",
		y);
	y += LEGEND_ROW + 4;
	for (size_t i = 0; i < m->nconns; i++) {
		const struct ladder_conn *c = &m->conns[i];

		fprintf(out,
			"<line x1=\"12\" y1=\"%d\" x2=\"52\" y2=\"%d\" stroke=\"%s\" "
			"stroke-width=\"3\"/>\n<text class=\"legend\" x=\"60\" y=\"%d\">",
			y - 4, y - 4, ladder_colour(c->colour), y);
		if (c->sidr)
			fprintf(out, "SIDR request 0x%08" PRIx32, c->active_id);
		else
			fprintf(out, "connection 0x%08" PRIx32 " / 0x%08" PRIx32, c->active_id,
				c->passive_id);
		if (c->has_sid)
			fprintf(out, ", service ID 0x%016" PRIx64, c->service_id);
		if (c->active_lane >= 0) {
			fputs(", from ", out);
			xml_text(out, m->lanes[c->active_lane].title);
		}
		fputs("</text>\n", out);
		y += LEGEND_ROW;
	}
	return y;
}

static const char style[] = "text{font-family:sans-serif;font-size:12px}"
			    ".title{font-size:14px;font-weight:bold;text-anchor:middle}"
			    ".sub{font-size:10px;fill:#444;text-anchor:middle}"
			    ".head{fill:#f3f3f3;stroke:#888}"
			    ".life{stroke:#999;stroke-width:1.5;stroke-dasharray:4 4}"
			    ".label{text-anchor:middle}"
			    ".detail{font-size:10px;fill:#555;text-anchor:middle}"
			    ".flag{fill:#c00000;font-weight:bold}"
			    ".time{font-size:10px;fill:#333;text-anchor:end;font-family:monospace}"
			    ".gap{fill:#fafafa}"
			    ".zig{fill:none;stroke:#aaa}"
			    ".gaplabel{font-size:10px;fill:#666;font-style:italic}"
			    ".tlabel{fill:#c00000;font-style:italic}"
			    ".legend{font-size:11px;fill:#333}";

static int draw_svg(FILE *out, const struct ladder_model *m, bool standalone)
{
	size_t nrows = 0;
	int bottom = 0;
	struct row *rows = layout_rows(m, &nrows, &bottom);
	int width = LEFT + LANE_W * (int)(m->nlanes ? m->nlanes : 1) + 20;
	int height = bottom + 40 + LEGEND_ROW * (int)(m->nconns + 1);

	if (!rows)
		return -ENOMEM;
	if (standalone)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n<style>%s</style>\n<defs>\n",
		width, height, width, height, style);
	for (size_t k = 0; k <= NPALETTE; k++)
		fprintf(out,
			"<marker id=\"ah%zu\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
			"markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\">"
			"<path d=\"M0 0 L10 5 L0 10 z\" fill=\"%s\"/></marker>\n",
			k, k < NPALETTE ? palette[k] : NO_CONN_COLOUR);
	fputs("</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", out);
	draw_header(out, m, bottom);
	for (size_t i = 0; i < nrows; i++) {
		draw_time(out, m, &rows[i]);
		if (rows[i].timeout)
			draw_timeout(out, m, rows, nrows, &rows[i]);
		else
			draw_arrow(out, m, &rows[i]);
	}
	draw_legend(out, m, bottom + 24);
	fputs("</svg>\n", out);
	free(rows);
	return ferror(out) ? -EIO : 0;
}

int ladder_render_svg(FILE *out, const struct ladder_model *m, const char *source)
{
	(void)source;
	return draw_svg(out, m, true);
}

int ladder_render_html(FILE *out, const struct ladder_model *m, const char *source)
{
	struct tm tm;
	time_t sec = m->start.tv_sec;
	char when[40] = "";

	if (gmtime_r(&sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>CM ladder: ",
	      out);
	xml_text(out, source ? source : "-");
	fputs("</title>\n<style>body{font-family:sans-serif;margin:1em}"
	      "p{color:#333;font-size:13px}</style>\n</head>\n<body>\n<h1>CM ladder of ",
	      out);
	xml_text(out, source ? source : "-");
	fprintf(out,
		"</h1>\n<p>%u MADs from %s; %zu drawn, %zu connections, %zu timeouts; "
		"times since the first MAD. Hover an arrow for its frame and TID.</p>\n",
		m->mads, when, m->narrows, m->nconns, m->ntimeouts);
	if (draw_svg(out, m, false))
		return -ENOMEM;
	fputs("</body>\n</html>\n", out);
	return ferror(out) ? -EIO : 0;
}
