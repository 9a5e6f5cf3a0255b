/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the address file parser.  An input with the low bit of its first
 * byte clear is the file itself; otherwise its bytes pick tokens (valid
 * and broken addresses, GIDs, names, comments, white space) so that the
 * standalone driver's random inputs reach past the first line too (P_Key
 * columns among them).  Every
 * accepted entry and every message is checked for sanity.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/addr_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tokens[] = {
    "h1",
    "198.18.0.1",
    "2001:db8::1",
    "fe80::1",
    "fe80::2:c903:0:1",
    " ",
    "\t",
    "\n",
    "\r\n",
    "#",
    "# comment\n",
    "10.0.0.256",
    "fe80::zz",
    "::ffff:1.2.3.4",
    "0x48",
    "0x8001",
    "0x0000",
    "0xFFFF",
    "abcdefghijklmnopqrstuvwxyz012345",
    "a.b-c_d",
    "h@",
    "\x01",
    "",
    "1.2.3",
    ":",
    "fe80:0:0:0:0:0:0:0:1",
    "::",
    "255.255.255.255",
};

static void check(const struct madcm_addr_table *t, int rc, const char *err)
{
	if (rc != 0 && rc != -EINVAL)
		abort();
	if (rc == -EINVAL && strncmp(err, "fuzz:", 5))
		abort();
	for (size_t i = 0; i < t->n; i++) {
		const struct madcm_addr_entry *e = &t->e[i];
		uint8_t g[16];

		if (e->family != AF_INET && e->family != AF_INET6 && e->family != AF_UNSPEC)
			abort();
		if (e->family == AF_UNSPEC && (strlen(e->name) == 0 || strlen(e->name) > 31))
			abort();
		/* a P_Key column never yields the invalid P_Key */
		if (!(e->pkey & 0x7fff))
			abort();
		if (e->line == 0 || (i && e->line <= t->e[i - 1].line))
			abort();
		if (e->family != AF_UNSPEC && madcm_addr_table_gid(t, e->family, e->ip, g))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct madcm_addr_table t = {0};
	char err[200] = "";
	char *text;
	size_t len = 0;
	int rc;

	if (size == 0)
		return 0;
	if (!(data[0] & 1)) {
		rc = madcm_addr_file_parse((const char *)data + 1, size - 1, "fuzz", &t, err,
					   sizeof(err));
		check(&t, rc, err);
		madcm_addr_table_free(&t);
		return 0;
	}
	text = malloc(size * 40 + 1);
	if (!text)
		return 0;
	for (size_t i = 1; i < size; i++) {
		const char *tok = tokens[data[i] % (sizeof(tokens) / sizeof(tokens[0]))];
		size_t n = strlen(tok);

		memcpy(text + len, tok, n);
		len += n;
	}
	rc = madcm_addr_file_parse(text, len, "fuzz", &t, err, sizeof(err));
	check(&t, rc, err);
	madcm_addr_table_free(&t);
	free(text);
	return 0;
}
