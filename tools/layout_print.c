/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Generic text/JSON printer of mad_layout fields (see layout_print.h). */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "tools/layout_print.h"

#define JSON_MAX_SAFE_BITS 53

void print_hex_bytes(FILE *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%02x", p[i]);
}

void format_gid(char out[40], const uint8_t gid[16])
{
	char *o = out;

	for (int i = 0; i < 16; i += 2)
		o += sprintf(o, "%s%02x%02x", i ? ":" : "", gid[i], gid[i + 1]);
}

void json_print_string(FILE *out, const char *s, long n)
{
	fputc('"', out);
	for (long i = 0; n < 0 ? s[i] != '\0' : i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			/* Escape controls and non-ASCII: wire text is not UTF-8. */
			if (c < 0x20 || c >= 0x7f)
				fprintf(out, "\\u%04x", c);
			else
				fputc(c, out);
		}
	}
	fputc('"', out);
}

unsigned layout_name_width(const struct mad_layout *l)
{
	unsigned w = 0;

	for (unsigned i = 0; i < l->nfields; i++) {
		size_t n = l->fields[i].name ? strlen(l->fields[i].name) : 0;

		if (n > w)
			w = (unsigned)n;
	}
	return w;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Bytes of a byte-aligned field, minus the trailing zero bytes. */
static size_t trimmed_len(const uint8_t *p, size_t n)
{
	while (n && p[n - 1] == 0)
		n--;
	return n;
}

static void print_text_string(FILE *out, const uint8_t *p, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n && p[i]; i++) {
		if (isprint(p[i]) && p[i] != '"' && p[i] != '\\')
			fputc(p[i], out);
		else
			fprintf(out, "\\x%02x", p[i]);
	}
	fputc('"', out);
}

/* Print one field's value (no name). */
static void print_value(FILE *out, const struct mad_layout *l, const struct mad_field *f,
			const uint8_t *buf, const struct layout_print_opts *o)
{
	bool wide = f->width > 64;
	const uint8_t *p = buf + f->byte;
	size_t n = mad_field_len(f);

	if (wide && f->fmt == MF_GID && n == 16) {
		char gid[40];

		format_gid(gid, p);
		if (o->json)
			json_print_string(out, gid, -1);
		else
			fputs(gid, out);
		return;
	}
	if (wide && f->fmt == MF_STR) {
		if (o->json) {
			size_t s = 0;

			while (s < n && p[s])
				s++;
			json_print_string(out, (const char *)p, (long)s);
		} else {
			print_text_string(out, p, n);
		}
		return;
	}
	if (wide) {
		size_t t = trimmed_len(p, n);

		if (o->json) {
			fputc('"', out);
			print_hex_bytes(out, p, t);
			fputc('"', out);
		} else if (t == n) {
			print_hex_bytes(out, p, n);
		} else if (t == 0) {
			fprintf(out, "(%zu zero bytes)", n);
		} else {
			print_hex_bytes(out, p, t);
			fprintf(out, " (+%zu zero bytes)", n - t);
		}
		return;
	}

	uint64_t v = mad_field_get(buf, f);
	const char *name = o->namer ? o->namer(l, f, v, buf) : NULL;
	unsigned digits = (f->width + 3) / 4;

	if (o->json) {
		if (f->width <= JSON_MAX_SAFE_BITS)
			fprintf(out, "%" PRIu64, v);
		else
			fprintf(out, "\"0x%0*" PRIx64 "\"", (int)digits, v);
		if (name) {
			fprintf(out, ",\"%s_name\":", f->name);
			json_print_string(out, name, -1);
		}
		return;
	}
	switch (f->fmt) {
	case MF_DEC:
	case MF_BOOL:
		fprintf(out, "%" PRIu64, v);
		break;
	default:
		fprintf(out, "0x%0*" PRIx64, (int)digits, v);
		break;
	}
	if (name)
		fprintf(out, " (%s)", name);
}

unsigned layout_print(FILE *out, const struct mad_layout *l, const uint8_t *buf, size_t len,
		      const struct layout_print_opts *opts)
{
	struct layout_print_opts o = opts ? *opts : (struct layout_print_opts){0};
	unsigned width = o.name_width ? o.name_width : layout_name_width(l);
	const char *prefix = o.prefix ? o.prefix : "";
	unsigned printed = 0;

	if (!out || !l || (!buf && len))
		return 0;
	for (unsigned i = 0; i < l->nfields; i++) {
		const struct mad_field *f = &l->fields[i];
		size_t end = ((size_t)f->byte * 8 + f->bit + f->width + 7) / 8;
		bool truncated = end > len;

		if (!f->name)
			continue;
		/* A field wider than 64 bits is readable only when byte-aligned. */
		if (f->width > 64 && (f->bit || f->width % 8))
			continue;
		if (f->fmt == MF_RSVD && !truncated) {
			bool zero = f->width > 64 ? all_zero(buf + f->byte, mad_field_len(f))
						  : mad_field_get(buf, f) == 0;
			if (zero)
				continue;
		}
		if (o.json) {
			if (!o.first || printed)
				fputc(',', out);
			fprintf(out, "\"%s\":", f->name);
			if (truncated)
				fputs("null", out);
			else
				print_value(out, l, f, buf, &o);
		} else {
			int pad = (int)width - (int)strlen(f->name) - (int)strlen(prefix);

			fprintf(out, "%*s%s%s:%*s ", (int)o.indent, "", prefix, f->name,
				pad > 0 ? pad : 0, "");
			if (truncated)
				fputs("(truncated)", out);
			else
				print_value(out, l, f, buf, &o);
			fputc('\n', out);
		}
		printed++;
	}
	return printed;
}
