/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm decode: print MADs field by field, from hex text, raw 256-byte
 * MAD files or pcap captures, as text or one JSON object per MAD.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "cm/ip_pdata.h"
#include "mad/mad_wire.h"
#include "mad/pcap.h"
#include "sa/sa_wire.h"
#include "tools/decode.h"
#include "tools/layout_print.h"
#include "tools/layouts.h"

#define RAW_MAD_SIZE 256

void decode_state_init(struct decode_state *st, FILE *out, FILE *err, bool json)
{
	memset(st, 0, sizeof(*st));
	st->out = out;
	st->err = err;
	st->json = json;
	st->prog = "madcm decode";
}

/* ---- hex text ---- */

static int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool is_hex_sep(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':' || c == ',';
}

bool looks_like_hex(const uint8_t *buf, size_t len)
{
	bool digits = false;
	bool comment = false;

	for (size_t i = 0; i < len; i++) {
		int c = buf[i];

		if (comment) {
			if (c == '\n')
				comment = false;
			else if (c < 0x20 && c != '\t' && c != '\r')
				return false;
			continue;
		}
		if (c == '#')
			comment = true;
		else if (hex_digit(c) >= 0)
			digits = true;
		else if (!is_hex_sep(c) && c != 'x' && c != 'X')
			return false;
	}
	return digits;
}

long hex_parse(const char *text, size_t len, uint8_t *out, size_t cap, const char **why)
{
	size_t n = 0, i = 0;
	int hi = -1;
	const char *dummy;

	if (!why)
		why = &dummy;
	if (!text || (!out && cap)) {
		*why = "invalid argument";
		return -EINVAL;
	}
	while (i < len) {
		int c = (unsigned char)text[i];
		int d;

		if (c == '#') {
			while (i < len && text[i] != '\n')
				i++;
			continue;
		}
		/* "0x" starts a group, only where a byte may start. */
		if (c == '0' && hi < 0 && i + 1 < len &&
		    (text[i + 1] == 'x' || text[i + 1] == 'X')) {
			i += 2;
			continue;
		}
		if (is_hex_sep(c)) {
			if (hi >= 0) {
				*why = "odd number of hex digits in a group";
				return -EINVAL;
			}
			i++;
			continue;
		}
		d = hex_digit(c);
		if (d < 0) {
			*why = "character that is not a hex digit";
			return -EINVAL;
		}
		if (hi < 0) {
			hi = d;
		} else {
			if (n >= cap) {
				*why = "too much hex input";
				return -ENOSPC;
			}
			out[n++] = (uint8_t)(hi << 4 | d);
			hi = -1;
		}
		i++;
	}
	if (hi >= 0) {
		*why = "odd number of hex digits";
		return -EINVAL;
	}
	return (long)n;
}

/* ---- output helpers ---- */

static void print_time(FILE *out, const struct timespec *ts, bool json)
{
	struct tm tm;
	time_t t = ts->tv_sec;
	char buf[32];

	if (json) {
		fprintf(out, "%lld.%06ld", (long long)ts->tv_sec, ts->tv_nsec / 1000);
		return;
	}
	if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm)) {
		fprintf(out, "%lld", (long long)ts->tv_sec);
		return;
	}
	fprintf(out, "%s.%06ld UTC", buf, ts->tv_nsec / 1000);
}

static void print_source_json(FILE *out, const struct decode_src *src)
{
	fputs("{\"source\":", out);
	json_print_string(out, src->name ? src->name : "-", -1);
	fprintf(out, ",\"index\":%u", src->index);
	if (!src->from_pcap)
		return;
	fprintf(out, ",\"frame\":%u,\"time\":", src->frame);
	print_time(out, &src->ts, true);
	fprintf(out,
		",\"packet\":{\"slid\":%u,\"dlid\":%u,\"sl\":%u,\"pkey\":%u,\"src_qp\":%" PRIu32
		",\"dst_qp\":%" PRIu32 ",\"qkey\":%" PRIu32,
		src->pkt.slid, src->pkt.dlid, src->pkt.sl, src->pkt.pkey, src->pkt.src_qp,
		src->pkt.dst_qp, src->pkt.qkey);
	if (src->pkt.grh_present) {
		char gid[40];

		format_gid(gid, src->pkt.sgid);
		fprintf(out, ",\"sgid\":\"%s\"", gid);
		format_gid(gid, src->pkt.dgid);
		fprintf(out, ",\"dgid\":\"%s\"", gid);
	}
	fputc('}', out);
}

static void print_source_text(FILE *out, const struct decode_src *src)
{
	if (!src->from_pcap) {
		fprintf(out, "MAD %u of %s\n", src->index, src->name ? src->name : "-");
		return;
	}
	fprintf(out, "frame %u of %s, ", src->frame, src->name ? src->name : "-");
	print_time(out, &src->ts, false);
	fprintf(out, ": LID %u -> LID %u, QP%" PRIu32 " -> QP%" PRIu32 ", SL %u, P_Key 0x%04x",
		src->pkt.slid, src->pkt.dlid, src->pkt.src_qp, src->pkt.dst_qp, src->pkt.sl,
		src->pkt.pkey);
	if (src->pkt.grh_present) {
		char sgid[40], dgid[40];

		format_gid(sgid, src->pkt.sgid);
		format_gid(dgid, src->pkt.dgid);
		fprintf(out, ", GRH %s -> %s", sgid, dgid);
	}
	fputc('\n', out);
}

static void report_malformed(struct decode_state *st, const struct decode_src *src, const char *why)
{
	st->malformed++;
	if (st->json) {
		print_source_json(st->out, src);
		fputs(",\"error\":", st->out);
		json_print_string(st->out, why, -1);
		fputs("}\n", st->out);
	} else {
		if (src->from_pcap)
			fprintf(st->out, "frame %u of %s: malformed MAD: %s\n\n", src->frame,
				src->name ? src->name : "-", why);
		else
			fprintf(st->out, "MAD %u of %s: malformed MAD: %s\n\n", src->index,
				src->name ? src->name : "-", why);
	}
}

/* Raw data of an unknown attribute, 16 bytes a line with MAD offsets. */
static void print_data_text(FILE *out, const uint8_t *p, size_t n, size_t base)
{
	size_t t = n;

	while (t && p[t - 1] == 0)
		t--;
	fprintf(out, "  data (%zu bytes from byte %zu)%s\n", n, base, t ? ":" : ": all zero");
	for (size_t i = 0; i < t; i += 16) {
		fprintf(out, "    %04zx:", base + i);
		for (size_t j = i; j < i + 16 && j < t; j++)
			fprintf(out, " %02x", p[j]);
		fputc('\n', out);
	}
	if (t && t < n)
		fprintf(out, "    (+%zu zero bytes)\n", n - t);
}

/* ---- the rdma_cm IP private-data header in REQ / SIDR_REQ ---- */

static void sockaddr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf,
			  (socklen_t)len);
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, buf,
			  (socklen_t)len);
	else
		snprintf(buf, len, "?");
}

/*
 * The header is trusted only where rdma_cm would look for it: a REQ or
 * SIDR_REQ to an rdma_cm service ID, whose private data decodes.
 */
bool decode_ip_cm_hdr(const struct mad_layout *l, const uint8_t *msg, struct ip_cm_hdr_view *v)
{
	const struct mad_field *sidf = mad_layout_field(l, "service_id");
	struct sockaddr_storage src, dst;
	const uint8_t *pd;
	size_t pdlen;
	unsigned ps;
	uint16_t port;

	if ((l != &cm_req_layout && l != &cm_sidr_req_layout) || !sidf)
		return false;
	if (cm_sid_to_ps_port(mad_field_get(msg, sidf), &ps, &port))
		return false;
	pd = cm_private_data(l, msg, &pdlen);
	if (!pd || cm_ip_hdr_decode(pd, pdlen, port, &src, &dst))
		return false;
	memset(v, 0, sizeof(*v));
	v->version = (unsigned)mad_get(pd, cm_ip_hdr_fields, CM_IP_HDR_CMA_VERSION);
	v->ip_version = (unsigned)mad_get(pd, cm_ip_hdr_fields, CM_IP_HDR_IP_VERSION);
	v->src_port = (uint16_t)mad_get(pd, cm_ip_hdr_fields, CM_IP_HDR_SOURCE_PORT);
	v->dst_port = port;
	v->port_space = cm_ps_name(ps);
	sockaddr_text(&src, v->src, sizeof(v->src));
	sockaddr_text(&dst, v->dst, sizeof(v->dst));
	return true;
}

static void print_ip_cm_hdr(FILE *out, const struct ip_cm_hdr_view *v, bool json, unsigned width)
{
	if (json) {
		fprintf(out,
			",\"ip_cm_header\":{\"version\":%u,\"ip_version\":%u,\"src_port\":%u,"
			"\"src_addr\":\"%s\",\"dst_addr\":\"%s\",\"dst_port\":%u",
			v->version, v->ip_version, v->src_port, v->src, v->dst, v->dst_port);
		if (v->port_space)
			fprintf(out, ",\"port_space\":\"%s\"", v->port_space);
		fputc('}', out);
		return;
	}
	fputs("  rdma_cm IP header (start of private_data)\n", out);
	fprintf(out, "    %-*s %u\n", width + 1, "version:", v->version);
	fprintf(out, "    %-*s %u\n", width + 1, "ip_version:", v->ip_version);
	fprintf(out, "    %-*s %u\n", width + 1, "src_port:", v->src_port);
	fprintf(out, "    %-*s %s\n", width + 1, "src_addr:", v->src);
	fprintf(out, "    %-*s %s\n", width + 1, "dst_addr:", v->dst);
	fprintf(out, "    %-*s %u%s%s%s\n", width + 1, "dst_port:", v->dst_port,
		v->port_space ? " (" : "", v->port_space ? v->port_space : "",
		v->port_space ? ", from service_id)" : "");
}

/* ---- one MAD ---- */

static void print_section(struct decode_state *st, const char *key, const char *title,
			  const struct mad_layout *l, const uint8_t *p, size_t len, unsigned width);

/* The GID of the SM's GID in/out of service and multicast group traps. */
static void print_notice_details(struct decode_state *st, const uint8_t *notice, size_t len,
				 unsigned width)
{
	uint64_t trap = mad_get(notice, sa_notice_fields, SA_NOTICE_TRAP_NUMBER);

	if (!mad_get(notice, sa_notice_fields, SA_NOTICE_IS_GENERIC) ||
	    trap < SA_TRAP_GID_IN_SERVICE || trap > SA_TRAP_MCAST_GROUP_DELETED ||
	    len < SA_NOTICE_DATA_DETAILS_OFFSET + SA_NOTICE_DATA_DETAILS_SIZE)
		return;
	print_section(st, "notice_details", "Notice DataDetails (traps 64-67)",
		      &sa_notice_gid_layout, notice + SA_NOTICE_DATA_DETAILS_OFFSET,
		      len - SA_NOTICE_DATA_DETAILS_OFFSET, width);
}

static unsigned max_u(unsigned a, unsigned b)
{
	return a > b ? a : b;
}

static void print_section(struct decode_state *st, const char *key, const char *title,
			  const struct mad_layout *l, const uint8_t *p, size_t len, unsigned width)
{
	struct layout_print_opts o = {
	    .json = st->json,
	    .indent = 4,
	    .name_width = width,
	    .namer = layouts_value_name,
	    .first = true,
	};

	if (st->json) {
		fprintf(st->out, ",\"%s\":{", key);
		layout_print(st->out, l, p, len, &o);
		fputc('}', st->out);
	} else {
		fprintf(st->out, "  %s\n", title);
		layout_print(st->out, l, p, len, &o);
	}
}

void decode_mad(struct decode_state *st, const struct decode_src *src, const uint8_t *mad,
		size_t len)
{
	struct mad_plan plan;
	const char *why = NULL;
	struct ip_cm_hdr_view ip;
	bool have_ip = false;
	unsigned width;
	FILE *out = st->out;

	st->mads++;
	if (layouts_plan(mad, len, &plan, &why)) {
		report_malformed(st, src, why);
		return;
	}
	width = layout_name_width(&mad_hdr_layout);
	if (plan.rmpp)
		width = max_u(width, layout_name_width(plan.rmpp));
	if (plan.class_hdr)
		width = max_u(width, layout_name_width(plan.class_hdr));
	if (plan.attr)
		width = max_u(width, layout_name_width(plan.attr));
	if (plan.attr && plan.nrecords == 1 && !plan.table)
		have_ip = decode_ip_cm_hdr(plan.attr, mad + plan.data_offset, &ip);

	if (st->json) {
		print_source_json(out, src);
		fputs(",\"message\":", out);
		if (plan.message)
			json_print_string(out, plan.message, -1);
		else
			fputs("null", out);
		fputs(",\"attribute\":", out);
		if (plan.attr_name)
			json_print_string(out, plan.attr_name, -1);
		else
			fputs("null", out);
	} else {
		print_source_text(out, src);
		fprintf(out, "%s %s", plan.class_name, plan.method_name);
		if (plan.message && plan.attr_name && strcmp(plan.message, plan.attr_name))
			fprintf(out, " %s (%s)", plan.message, plan.attr_name);
		else if (plan.attr_name)
			fprintf(out, " %s", plan.attr_name);
		else
			fprintf(out, " attribute 0x%04x (unknown)", plan.attr_id);
		fputc('\n', out);
	}
	print_section(st, "mad", "MAD header", &mad_hdr_layout, mad, len, width);
	if (plan.rmpp)
		print_section(st, "rmpp", "RMPP header", plan.rmpp, mad + MAD_RMPP_HDR_OFFSET,
			      len - MAD_RMPP_HDR_OFFSET, width);
	if (plan.class_hdr)
		print_section(st, "sa", "SA header", plan.class_hdr, mad + plan.class_hdr_offset,
			      len - plan.class_hdr_offset, width);

	if (!plan.attr) {
		size_t off = plan.data_offset < len ? plan.data_offset : len;

		if (st->json) {
			size_t t = len;

			while (t > off && mad[t - 1] == 0)
				t--;
			fputs(",\"data\":\"", out);
			print_hex_bytes(out, mad + off, t - off);
			fputc('"', out);
		} else if (off < len) {
			print_data_text(out, mad + off, len - off, off);
		}
	} else if (!plan.table) {
		struct layout_print_opts o = {
		    .json = st->json,
		    .indent = 4,
		    .name_width = width,
		    .namer = layouts_value_name,
		};

		if (!st->json)
			fprintf(out, "  %s\n", plan.message ? plan.message : plan.attr->name);
		if (plan.nrecords)
			layout_print(out, plan.attr, mad + plan.data_offset, len - plan.data_offset,
				     &o);
		if (have_ip)
			print_ip_cm_hdr(out, &ip, st->json, width);
		if (plan.nrecords && plan.attr == &sa_notice_layout)
			print_notice_details(st, mad + plan.data_offset, len - plan.data_offset,
					     width);
	} else {
		if (st->json)
			fputs(",\"records\":[", out);
		else
			fprintf(out, "  %u %s%s\n", plan.nrecords, plan.attr->name,
				plan.nrecords == 1 ? "" : "s");
		for (unsigned i = 0; i < plan.nrecords; i++) {
			size_t off = plan.data_offset + i * plan.stride;
			struct layout_print_opts o = {
			    .json = st->json,
			    .indent = 6,
			    .name_width = width,
			    .namer = layouts_value_name,
			    .first = true,
			};

			if (st->json)
				fputs(i ? ",{" : "{", out);
			else
				fprintf(out, "    [%u] at byte %zu\n", i, off);
			layout_print(out, plan.attr, mad + off, len - off, &o);
			if (st->json)
				fputc('}', out);
		}
		if (st->json)
			fputc(']', out);
	}
	fputs(st->json ? "}\n" : "\n", out);
}

/* ---- inputs ---- */

/* Each MAD of an input goes to the caller's handler, or is printed. */
static void deliver(struct decode_state *st, const struct decode_src *src, const uint8_t *mad,
		    size_t len)
{
	if (st->on_mad)
		st->on_mad(st, src, mad, len);
	else
		decode_mad(st, src, mad, len);
}

static void decode_raw(struct decode_state *st, const char *name, const uint8_t *buf, size_t len)
{
	struct decode_src src = {.name = name};
	size_t off = 0;

	if (!len) {
		src.index = 1;
		report_malformed(st, &src, "empty input");
		return;
	}
	while (off < len) {
		size_t n = len - off < RAW_MAD_SIZE ? len - off : RAW_MAD_SIZE;

		src.index++;
		if (n < RAW_MAD_SIZE) {
			char why[96];

			snprintf(why, sizeof(why), "%zu bytes; a MAD is %d bytes", n, RAW_MAD_SIZE);
			st->mads++;
			report_malformed(st, &src, why);
			break;
		}
		deliver(st, &src, buf + off, n);
		off += n;
	}
}

void decode_pcap(struct decode_state *st, const char *name, const uint8_t *buf, size_t len)
{
	struct mad_pcap_reader r;
	struct mad_pcap_record rec;
	struct decode_src src = {.name = name, .from_pcap = true};
	unsigned data_packets = 0;
	int ret = mad_pcap_reader_init(&r, buf, len);

	if (ret) {
		fprintf(st->err, "%s: %s: %s\n", st->prog, name,
			ret == -EPROTONOSUPPORT
			    ? "pcap link type is neither 197 (ERF) nor 247 (InfiniBand)"
			    : "truncated pcap file header");
		st->malformed++;
		return;
	}
	while ((ret = mad_pcap_next(&r, &rec)) > 0) {
		const uint8_t *mad;
		size_t mad_len;
		const char *why = NULL;

		src.frame = rec.index;
		src.ts = rec.ts;
		if (!rec.pkt) {
			fprintf(st->err, "%s: %s: frame %u: not an InfiniBand record, skipped\n",
				st->prog, name, rec.index);
			st->skipped++;
			continue;
		}
		ret = mad_pcap_parse_packet(rec.pkt, rec.pkt_len, &src.pkt, &mad, &mad_len, &why);
		if (ret == -ENOMSG) {
			/* Data traffic next to the CM exchange: counted, not noise. */
			st->skipped++;
			data_packets++;
			continue;
		}
		if (ret) {
			fprintf(st->err, "%s: %s: frame %u: %s, skipped\n", st->prog, name,
				rec.index, why);
			st->skipped++;
			continue;
		}
		/* MADs travel on QP0/QP1 (or a redirected GSI QP with the GSI Q_Key). */
		if (src.pkt.dst_qp > 1 && src.pkt.qkey != 0x80010000u) {
			fprintf(st->err, "%s: %s: frame %u: UD to QP 0x%x, not a MAD, skipped\n",
				st->prog, name, rec.index, src.pkt.dst_qp);
			st->skipped++;
			continue;
		}
		src.index++;
		deliver(st, &src, mad, mad_len);
	}
	if (data_packets)
		fprintf(st->err, "%s: %s: %u data packets (no MAD) skipped\n", st->prog, name,
			data_packets);
	if (ret < 0) {
		fprintf(st->err, "%s: %s: after frame %u: %s\n", st->prog, name, r.index,
			ret == -EMSGSIZE ? "record larger than 65535 bytes" : "truncated record");
		st->malformed++;
	}
}

void decode_hex(struct decode_state *st, const char *name, const char *text, size_t len)
{
	uint8_t *buf = malloc(len / 2 + 1);
	const char *why = NULL;
	long n;

	if (!buf) {
		fprintf(st->err, "%s: %s: out of memory\n", st->prog, name);
		st->malformed++;
		return;
	}
	n = hex_parse(text, len, buf, len / 2 + 1, &why);
	if (n < 0) {
		struct decode_src src = {.name = name, .index = 1};

		st->mads++;
		report_malformed(st, &src, why);
	} else {
		decode_raw(st, name, buf, (size_t)n);
	}
	free(buf);
}

void decode_input(struct decode_state *st, const char *name, const uint8_t *buf, size_t len)
{
	if (mad_pcap_is_pcap(buf, len))
		decode_pcap(st, name, buf, len);
	else if (looks_like_hex(buf, len))
		decode_hex(st, name, (const char *)buf, len);
	else
		decode_raw(st, name, buf, len);
}

/* ---- command line ---- */

uint8_t *decode_read_all(FILE *f, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);

	while (buf) {
		size_t r = fread(buf + n, 1, cap - n, f);

		n += r;
		if (n < cap) {
			if (ferror(f)) {
				free(buf);
				return NULL;
			}
			*len = n;
			return buf;
		}
		uint8_t *nb = realloc(buf, cap * 2);

		if (!nb)
			free(buf);
		buf = nb;
		cap *= 2;
	}
	return NULL;
}

static void decode_usage(FILE *out)
{
	fputs("Usage: madcm decode [--json] [--hex HEX]... [FILE...]\n"
	      "\n"
	      "Print InfiniBand MADs (CM, SA, MAD/RMPP headers) field by field.\n"
	      "Each FILE (or standard input when none, or '-') is a pcap capture\n"
	      "(link type 197 ERF or 247 InfiniBand), hex text, or raw 256-byte MADs\n"
	      "back to back; the format is detected from the content.\n"
	      "\n"
	      "  -j, --json      one JSON object per MAD per line\n"
	      "  -x, --hex HEX   decode HEX (whitespace and 0x prefixes allowed)\n"
	      "  -h, --help      this help\n"
	      "\n"
	      "Exit status: 0 when every MAD decoded, 1 when some MAD or input was\n"
	      "malformed or unreadable, 2 on a usage error.\n",
	      out);
}

int cmd_decode(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"hex", required_argument, NULL, 'x'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct decode_state st;
	const char **hex = calloc((size_t)argc + 1, sizeof(*hex));
	unsigned nhex = 0;
	bool json = false;
	int c;

	if (!hex)
		return 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "jx:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'x':
			hex[nhex++] = optarg;
			break;
		case 'h':
			decode_usage(stdout);
			free(hex);
			return 0;
		default:
			decode_usage(stderr);
			free(hex);
			return 2;
		}
	}
	decode_state_init(&st, stdout, stderr, json);
	for (unsigned i = 0; i < nhex; i++)
		decode_hex(&st, "hex", hex[i], strlen(hex[i]));
	/* No input named: standard input. */
	char *dash[] = {(char *)"-", NULL};
	char **files = argv + optind;
	int nfiles = argc - optind;

	if (!nhex && !nfiles) {
		files = dash;
		nfiles = 1;
	}
	for (int i = 0; i < nfiles; i++) {
		const char *name = files[i];
		bool is_stdin = !strcmp(name, "-");
		FILE *f = is_stdin ? stdin : fopen(name, "rb");
		uint8_t *buf;
		size_t len = 0;

		if (!f) {
			fprintf(stderr, "madcm decode: %s: %s\n", name, strerror(errno));
			st.malformed++;
			continue;
		}
		buf = decode_read_all(f, &len);
		if (!buf) {
			fprintf(stderr, "madcm decode: %s: read error\n", name);
			st.malformed++;
		} else {
			decode_input(&st, name, buf, len);
		}
		free(buf);
		if (!is_stdin)
			fclose(f);
	}
	free(hex);
	fflush(stdout);
	if (st.malformed)
		fprintf(stderr, "madcm decode: %u malformed of %u MADs\n", st.malformed, st.mads);
	return st.malformed ? 1 : 0;
}
