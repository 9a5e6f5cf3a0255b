/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The address file parser (format in addr_file.h and madcm-hosts(5)).
 * Errors name the file and line, and quote the field at fault, cut to a
 * readable length.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/addr_file.h"

#define QUOTE_MAX 48 /* characters of a field quoted in a message */
#define FILE_MAX (64u << 20)

struct field {
	const char *p;
	size_t len;
};

static void set_err(char *err, size_t errlen, const char *fname, unsigned line, const char *fmt,
		    ...) __attribute__((format(printf, 5, 6)));
static void set_err(char *err, size_t errlen, const char *fname, unsigned line, const char *fmt,
		    ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return;
	n = snprintf(err, errlen, "%s:%u: ", fname ? fname : "-", line);
	if (n < 0 || (size_t)n >= errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static bool is_blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Copy a field into a NUL-terminated buffer; false when it does not fit. */
static bool field_str(const struct field *f, char *buf, size_t size)
{
	if (f->len >= size)
		return false;
	memcpy(buf, f->p, f->len);
	buf[f->len] = '\0';
	return true;
}

static bool all_digits_dots(const struct field *f)
{
	for (size_t i = 0; i < f->len; i++)
		if (!isdigit((unsigned char)f->p[i]) && f->p[i] != '.')
			return false;
	return true;
}

static bool has_colon(const struct field *f)
{
	return memchr(f->p, ':', f->len) != NULL;
}

/* Host name characters (RFC 1123 labels, plus '_' that real files carry). */
static bool name_ok(const struct field *f)
{
	for (size_t i = 0; i < f->len; i++) {
		unsigned char c = (unsigned char)f->p[i];

		if (!isalnum(c) && c != '-' && c != '.' && c != '_')
			return false;
	}
	return true;
}

static int table_push(struct madcm_addr_table *t, const struct madcm_addr_entry *e)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 32;
		struct madcm_addr_entry *ne = realloc(t->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		t->e = ne;
		t->cap = cap;
	}
	t->e[t->n++] = *e;
	return 0;
}

/*
 * A P_Key field: "0x" and four hex digits, as P_Keys are written.  1 when
 * it is one (in *pkey), 0 when the field is of another form: ignored, as
 * ibacm's QP number there ("72", "0x48") always was.
 */
static int pkey_field(const struct field *f, uint16_t *pkey)
{
	unsigned v = 0;

	if (f->len != 6 || f->p[0] != '0' || (f->p[1] != 'x' && f->p[1] != 'X'))
		return 0;
	for (size_t i = 2; i < f->len; i++) {
		if (!isxdigit((unsigned char)f->p[i]))
			return 0;
		v = v * 16 + (unsigned)(isdigit((unsigned char)f->p[i])
					    ? f->p[i] - '0'
					    : tolower((unsigned char)f->p[i]) - 'a' + 10);
	}
	*pkey = (uint16_t)v;
	return 1;
}

/* One line without its newline; 0, -EINVAL (err set) or -ENOMEM. */
static int parse_line(const char *p, size_t len, const char *fname, unsigned line,
		      struct madcm_addr_table *t, char *err, size_t errlen)
{
	struct field f[3];
	struct madcm_addr_entry e;
	char buf[64];
	unsigned nf = 0;
	size_t i = 0;

	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)p[k];

		if (c == '#') {
			len = k;
			break;
		}
		if ((c < 0x20 && !is_blank(c)) || c == 0x7f) {
			set_err(err, errlen, fname, line, "control character 0x%02x", c);
			return -EINVAL;
		}
	}
	while (i < len && nf < 3) {
		while (i < len && is_blank((unsigned char)p[i]))
			i++;
		if (i == len)
			break;
		f[nf].p = p + i;
		while (i < len && !is_blank((unsigned char)p[i]))
			i++;
		f[nf].len = (size_t)(p + i - f[nf].p);
		nf++;
	}
	if (nf == 0)
		return 0; /* blank or comment */
	if (nf == 1) {
		set_err(err, errlen, fname, line, "'%.*s': missing GID (expected ADDRESS GID)",
			(int)(f[0].len < QUOTE_MAX ? f[0].len : QUOTE_MAX), f[0].p);
		return -EINVAL;
	}

	memset(&e, 0, sizeof(e));
	e.line = line;
	e.pkey = 0xffff;
	if (has_colon(&f[0])) {
		if (!field_str(&f[0], buf, sizeof(buf)) || inet_pton(AF_INET6, buf, e.ip) != 1) {
			set_err(err, errlen, fname, line, "bad IPv6 address '%.*s'",
				(int)(f[0].len < QUOTE_MAX ? f[0].len : QUOTE_MAX), f[0].p);
			return -EINVAL;
		}
		e.family = AF_INET6;
	} else if (all_digits_dots(&f[0])) {
		if (!field_str(&f[0], buf, sizeof(buf)) || inet_pton(AF_INET, buf, e.ip) != 1) {
			set_err(err, errlen, fname, line, "bad IPv4 address '%.*s'",
				(int)(f[0].len < QUOTE_MAX ? f[0].len : QUOTE_MAX), f[0].p);
			return -EINVAL;
		}
		e.family = AF_INET;
	} else {
		if (f[0].len > MADCM_ADDR_NAME_MAX) {
			set_err(err, errlen, fname, line,
				"host name '%.*s...' is longer than %d characters", QUOTE_MAX / 2,
				f[0].p, MADCM_ADDR_NAME_MAX);
			return -EINVAL;
		}
		if (!name_ok(&f[0])) {
			set_err(err, errlen, fname, line, "bad host name '%.*s'", (int)f[0].len,
				f[0].p);
			return -EINVAL;
		}
		memcpy(e.name, f[0].p, f[0].len);
		e.name[f[0].len] = '\0';
		e.family = AF_UNSPEC;
	}
	if (!field_str(&f[1], buf, sizeof(buf)) || !has_colon(&f[1]) ||
	    inet_pton(AF_INET6, buf, e.gid) != 1) {
		set_err(err, errlen, fname, line,
			"bad GID '%.*s' (expected IPv6 text form, e.g. fe80::2:c903:0:1)",
			(int)(f[1].len < QUOTE_MAX ? f[1].len : QUOTE_MAX), f[1].p);
		return -EINVAL;
	}
	/* P_Key 0x0000 and 0x8000 are the invalid P_Key (IBA 10.9.1). */
	if (nf == 3 && pkey_field(&f[2], &e.pkey) && !(e.pkey & 0x7fff)) {
		set_err(err, errlen, fname, line, "bad P_Key '%.*s' (the invalid P_Key)",
			(int)f[2].len, f[2].p);
		return -EINVAL;
	}
	return table_push(t, &e);
}

int madcm_addr_file_parse(const char *text, size_t len, const char *fname,
			  struct madcm_addr_table *t, char *err, size_t errlen)
{
	unsigned line = 0;
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;
		int rc;

		line++;
		rc = parse_line(text + i, end - i, fname, line, t, err, errlen);
		if (rc)
			return rc;
		i = nl ? end + 1 : len;
	}
	return 0;
}

int madcm_addr_file_load(const char *path, struct madcm_addr_table *t, char *err, size_t errlen)
{
	struct stat st;
	char *text = NULL;
	size_t len = 0, cap = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
		return -EISDIR;
	}
	for (;;) {
		ssize_t r;

		if (len == cap) {
			char *nt;

			if (cap >= FILE_MAX) {
				rc = -EFBIG;
				goto fail;
			}
			cap = cap ? cap * 2 : 4096;
			nt = realloc(text, cap);
			if (!nt) {
				rc = -ENOMEM;
				goto fail;
			}
			text = nt;
		}
		r = read(fd, text + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto fail;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	rc = madcm_addr_file_parse(text, len, path, t, err, errlen);
	free(text);
	return rc;
fail:
	close(fd);
	free(text);
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	return rc;
}

void madcm_addr_table_free(struct madcm_addr_table *t)
{
	if (!t)
		return;
	free(t->e);
	memset(t, 0, sizeof(*t));
}

static size_t ip_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

const struct madcm_addr_entry *madcm_addr_table_find(const struct madcm_addr_table *t, int family,
						     const uint8_t *ip)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct madcm_addr_entry *e = &t->e[i];

		if (e->family == family && !memcmp(e->ip, ip, ip_len(family)))
			return e;
	}
	return NULL;
}

int madcm_addr_table_gid(const struct madcm_addr_table *t, int family, const uint8_t *ip,
			 uint8_t gid[16])
{
	const struct madcm_addr_entry *e = madcm_addr_table_find(t, family, ip);

	if (!e)
		return -ENOENT;
	memcpy(gid, e->gid, 16);
	return 0;
}

const struct madcm_addr_entry *madcm_addr_table_ip(const struct madcm_addr_table *t,
						   const uint8_t gid[16], int family)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct madcm_addr_entry *e = &t->e[i];

		if (e->family == family && !memcmp(e->gid, gid, 16))
			return e;
	}
	return NULL;
}
