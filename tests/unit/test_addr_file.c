/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The address file: parsing (addresses, names, IPv6, ibacm's lines,
 * comments and white space), each kind of broken line with file and line
 * in the message, and the madcm_addrs_* lookups over a file, including
 * the $MADCM_ADDR_FILE rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/addr.h"
#include "lib/addr_file.h"

static void gid_of(const char *text, uint8_t gid[16])
{
	assert_int_equal(inet_pton(AF_INET6, text, gid), 1);
}

static int parse(const char *text, struct madcm_addr_table *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	return madcm_addr_file_parse(text, strlen(text), "hosts", t, err, errlen);
}

static void test_happy_path(void **state)
{
	static const char text[] =
	    "# madcm hosts\n"
	    "\n"
	    "h1 fe80::1\n"
	    "198.18.0.1 fe80::1\n"
	    "2001:db8::1 fe80::1\n"
	    "   \t h2\tfe80::2   \t\r\n"
	    "198.18.0.2 fe80::2 # the second host\n"
	    "  # indented comment\n"
	    "10.0.0.1 fe80:0000:0000:0000:0002:c903:0000:0001 7 extra fields\n"
	    "last-line.example fe80::3";
	struct madcm_addr_table t;
	const struct madcm_addr_entry *e;
	uint8_t gid[16], want[16], ip[16];
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(text, &t, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(t.n, 7);
	assert_int_equal(t.e[0].family, AF_UNSPEC);
	assert_string_equal(t.e[0].name, "h1");
	assert_int_equal(t.e[0].line, 3);
	assert_int_equal(t.e[1].family, AF_INET);
	assert_int_equal(t.e[2].family, AF_INET6);
	assert_string_equal(t.e[3].name, "h2");
	assert_int_equal(t.e[3].line, 6);
	assert_int_equal(t.e[4].line, 7);
	assert_string_equal(t.e[6].name, "last-line.example");
	assert_int_equal(t.e[6].line, 10);

	inet_pton(AF_INET, "198.18.0.2", ip);
	assert_int_equal(madcm_addr_table_gid(&t, AF_INET, ip, gid), 0);
	gid_of("fe80::2", want);
	assert_memory_equal(gid, want, 16);
	inet_pton(AF_INET, "10.0.0.1", ip);
	assert_int_equal(madcm_addr_table_gid(&t, AF_INET, ip, gid), 0);
	gid_of("fe80::2:c903:0:1", want);
	assert_memory_equal(gid, want, 16);
	inet_pton(AF_INET6, "2001:db8::1", ip);
	assert_int_equal(madcm_addr_table_gid(&t, AF_INET6, ip, gid), 0);
	gid_of("fe80::1", want);
	assert_memory_equal(gid, want, 16);
	inet_pton(AF_INET, "198.18.0.9", ip);
	assert_int_equal(madcm_addr_table_gid(&t, AF_INET, ip, gid), -ENOENT);

	e = madcm_addr_table_ip(&t, want, AF_INET);
	assert_non_null(e);
	assert_int_equal(e->line, 4);
	e = madcm_addr_table_ip(&t, want, AF_INET6);
	assert_non_null(e);
	assert_int_equal(e->line, 5);
	gid_of("fe80::3", want);
	assert_null(madcm_addr_table_ip(&t, want, AF_INET)); /* only a name */
	madcm_addr_table_free(&t);
	assert_int_equal(t.n, 0);
}

/* Lines as ibacm's hosts file carries them (name, IPv4, IPv6, optional QPN). */
static void test_ibacm_lines(void **state)
{
	static const char text[] = "# InfiniBand Communication Manager Assistant hosts file\n"
				   "#\n"
				   "# address    IB GID    [QPN]\n"
				   "node17          fe80::2:c903:a:1b2c\n"
				   "192.168.100.17  fe80::2:c903:a:1b2c\n"
				   "fe80::202:c903:a:1b2c fe80::2:c903:a:1b2c\n"
				   "node18.cluster  fe80::2:c903:a:1b2d  0x48\n"
				   "192.168.100.18  fe80::2:c903:a:1b2d  72\n";
	struct madcm_addr_table t;
	uint8_t ip[16], gid[16], want[16];

	(void)state;
	assert_int_equal(parse(text, &t, NULL, 0), 0);
	assert_int_equal(t.n, 5);
	inet_pton(AF_INET6, "fe80::202:c903:a:1b2c", ip);
	assert_int_equal(madcm_addr_table_gid(&t, AF_INET6, ip, gid), 0);
	gid_of("fe80::2:c903:a:1b2c", want);
	assert_memory_equal(gid, want, 16);
	assert_string_equal(t.e[3].name, "node18.cluster");
	madcm_addr_table_free(&t);
}

/*
 * The third column: the address's P_Key ("0x" and four hex digits), the
 * default 0xffff without it; a third field of another form is ibacm's QP
 * number, ignored.
 */
static void test_pkey_column(void **state)
{
	static const char text[] = "10.1.0.1 fe80::1 0x8001\n"
				   "10.1.0.2 fe80::2 0x0001 # a limited member\n"
				   "10.2.0.1\tfe80::1\t0X7FfF\tmore fields\n"
				   "10.3.0.1 fe80::1\n"
				   "10.4.0.1 fe80::1 0x48\n"
				   "10.5.0.1 fe80::1 72\n"
				   "10.6.0.1 fe80::1 0x8001g\n"
				   "h1 fe80::1 0x8002\n";
	static const uint16_t want[] = {0x8001, 0x0001, 0x7fff, 0xffff,
					0xffff, 0xffff, 0xffff, 0x8002};
	struct madcm_addr_table t;
	const struct madcm_addr_entry *e;
	uint8_t ip[4];

	(void)state;
	assert_int_equal(parse(text, &t, NULL, 0), 0);
	assert_int_equal(t.n, 8);
	for (size_t i = 0; i < t.n; i++)
		assert_int_equal(t.e[i].pkey, want[i]);
	inet_pton(AF_INET, "10.1.0.2", ip);
	e = madcm_addr_table_find(&t, AF_INET, ip);
	assert_non_null(e);
	assert_int_equal(e->pkey, 0x0001);
	assert_int_equal(e->gid[15], 2);
	inet_pton(AF_INET, "10.9.0.1", ip);
	assert_null(madcm_addr_table_find(&t, AF_INET, ip));
	madcm_addr_table_free(&t);
}

/* The first entry for an address wins; a 31-character name is fine. */
static void test_duplicates_and_limits(void **state)
{
	static const char text[] = "10.1.1.1 fe80::a\n"
				   "10.1.1.1 fe80::b\n"
				   "abcdefghijklmnopqrstuvwxyz01234 fe80::c\n";
	struct madcm_addr_table t;
	uint8_t ip[4], gid[16], want[16];

	(void)state;
	assert_int_equal(parse(text, &t, NULL, 0), 0);
	inet_pton(AF_INET, "10.1.1.1", ip);
	assert_int_equal(madcm_addr_table_gid(&t, AF_INET, ip, gid), 0);
	gid_of("fe80::a", want);
	assert_memory_equal(gid, want, 16);
	assert_int_equal(strlen(t.e[2].name), 31);
	madcm_addr_table_free(&t);

	assert_int_equal(parse("", &t, NULL, 0), 0);
	assert_int_equal(t.n, 0);
	assert_int_equal(parse("\n\n# only comments\n   \n", &t, NULL, 0), 0);
	assert_int_equal(t.n, 0);
	madcm_addr_table_free(&t);
}

struct broken {
	const char *text;
	const char *want; /* in the message, after "hosts:LINE: " */
	unsigned line;
	size_t len; /* 0: strlen(text) */
};

static void test_broken_lines(void **state)
{
	static const struct broken cases[] = {
	    {"h1 fe80::1\nh2\n", "missing GID", 2, 0},
	    {"198.18.0.1\n", "'198.18.0.1': missing GID", 1, 0},
	    {"# c\n\n10.0.0.1   # a GID in a comment fe80::1\n", "missing GID", 3, 0},
	    {"h1 fe80::1\nh2 fe80::zz\n", "bad GID 'fe80::zz'", 2, 0},
	    {"h1 12345\n", "bad GID '12345'", 1, 0},
	    {"h1 10.0.0.1\n", "bad GID '10.0.0.1'", 1, 0},
	    {"h1 fe80::1::2\n", "bad GID", 1, 0},
	    {"h1 fe80:0000:0000:0000:0000:0000:0000:0000:0001\n", "bad GID", 1, 0},
	    {"\n\n\nabcdefghijklmnopqrstuvwxyz012345 fe80::1\n", "longer than 31 characters", 4, 0},
	    {"10.0.0.256 fe80::1\n", "bad IPv4 address '10.0.0.256'", 1, 0},
	    {"10.0.0 fe80::1\n", "bad IPv4 address", 1, 0},
	    {"2001:db8::g fe80::1\n", "bad IPv6 address '2001:db8::g'", 1, 0},
	    {"fe80::1%ib0 fe80::1\n", "bad IPv6 address", 1, 0},
	    {"h@st fe80::1\n", "bad host name 'h@st'", 1, 0},
	    {"h1 fe80::1\nh\x01 fe80::2\n", "control character 0x01", 2, 0},
	    {"h1 fe80::1\r\nh2\0 fe80::2\n", "control character 0x00", 2, 24},
	    {"10.1.0.1 fe80::1 0x0000\n", "bad P_Key '0x0000'", 1, 0},
	    {"10.1.0.1 fe80::1 0x8001\n10.1.0.2 fe80::2 0x8000\n", "bad P_Key '0x8000'", 2, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct broken *b = &cases[i];
		struct madcm_addr_table t;
		char err[256] = "", prefix[32];
		size_t len = b->len ? b->len : strlen(b->text);

		memset(&t, 0, sizeof(t));
		assert_int_equal(madcm_addr_file_parse(b->text, len, "hosts", &t, err, sizeof(err)),
				 -EINVAL);
		snprintf(prefix, sizeof(prefix), "hosts:%u: ", b->line);
		if (strncmp(err, prefix, strlen(prefix)) || !strstr(err, b->want))
			fail_msg("case %zu: got \"%s\", want \"%s...%s\"", i, err, prefix, b->want);
		/* the lines before the broken one were kept */
		assert_true(t.n <= b->line - 1);
		madcm_addr_table_free(&t);
	}
}

/* A long field is quoted cut short, and a tiny err buffer is never overrun. */
static void test_message_bounds(void **state)
{
	char text[600], err[8];
	char big[512];
	struct madcm_addr_table t = {0};

	(void)state;
	memset(text, 'a', 300);
	strcpy(text + 300, " fe80::1\n");
	assert_int_equal(madcm_addr_file_parse(text, strlen(text), "f", &t, big, sizeof(big)),
			 -EINVAL);
	assert_true(strlen(big) < 120);
	assert_non_null(strstr(big, "f:1: host name"));
	memset(err, 'x', sizeof(err));
	assert_int_equal(madcm_addr_file_parse(text, strlen(text), "f", &t, err, sizeof(err)),
			 -EINVAL);
	assert_true(memchr(err, '\0', sizeof(err)) != NULL);
	madcm_addr_table_free(&t);
}

static char tmpdir[64];

static char *write_file(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static int setup_dir(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/test_addr_file.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/hosts", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/broken", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return 0;
}

static void sin4(struct sockaddr_in *s, const char *ip, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->sin_addr);
}

static void sin6(struct sockaddr_in6 *s, const char *ip)
{
	memset(s, 0, sizeof(*s));
	s->sin6_family = AF_INET6;
	inet_pton(AF_INET6, ip, &s->sin6_addr);
}

static const char fabric_hosts[] = "# written by fabsim up\n"
				   "h1 fe80::2:1\n"
				   "198.18.0.1 fe80::2:1\n"
				   "2001:db8::1 fe80::2:1\n"
				   "h2 fe80::2:2\n"
				   "198.18.0.2 fe80::2:2\n"
				   "2001:db8::2 fe80::2:2\n"
				   "198.18.0.22 fe80::2:2\n"
				   "10.1.0.2 fe80::2:9 0x8001\n"
				   "H2 fe80::2:2\n"
				   "h3 fe80::2:3\n";

static void test_addrs_lookups(void **state)
{
	struct madcm_addrs_params p = {.no_netlink = true};
	struct madcm_addrs *a;
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;
	struct sockaddr_storage out[8];
	struct sockaddr_un {
		sa_family_t f;
		char path[8];
	} su = {.f = AF_UNIX};
	uint8_t gid[16], want[16];
	char err[256], text[64];

	(void)state;
	p.file = write_file("hosts", fabric_hosts);
	assert_int_equal(madcm_addrs_open_params(&a, &p, err, sizeof(err)), 0);
	assert_string_equal(madcm_addrs_file(a), p.file);

	/* IP -> GID, the port ignored, IPv4-mapped IPv6 as IPv4 */
	sin4(&s4, "198.18.0.2", 4791);
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s4, gid), 0);
	gid_of("fe80::2:2", want);
	assert_memory_equal(gid, want, 16);
	sin6(&s6, "::ffff:198.18.0.1");
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s6, gid), 0);
	gid_of("fe80::2:1", want);
	assert_memory_equal(gid, want, 16);
	sin6(&s6, "2001:db8::2");
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s6, gid), 0);
	gid_of("fe80::2:2", want);
	assert_memory_equal(gid, want, 16);
	sin4(&s4, "198.18.0.99", 0);
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s4, gid), -ENOENT);
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&su, gid), -EAFNOSUPPORT);
	/* and the address's P_Key: the third column, else the default */
	{
		uint16_t pkey = 0;

		sin4(&s4, "10.1.0.2", 0);
		assert_int_equal(madcm_addrs_gid_pkey(a, (struct sockaddr *)&s4, gid, &pkey), 0);
		assert_int_equal(pkey, 0x8001);
		gid_of("fe80::2:9", want);
		assert_memory_equal(gid, want, 16);
		sin4(&s4, "198.18.0.2", 0);
		assert_int_equal(madcm_addrs_gid_pkey(a, (struct sockaddr *)&s4, gid, &pkey), 0);
		assert_int_equal(pkey, 0xffff);
	}

	/* GID -> IP of a family, AF_UNSPEC IPv4 first, port 0 */
	gid_of("fe80::2:2", want);
	assert_int_equal(madcm_addrs_ip(a, want, AF_UNSPEC, &out[0]), 0);
	assert_int_equal(out[0].ss_family, AF_INET);
	inet_ntop(AF_INET, &((struct sockaddr_in *)&out[0])->sin_addr, text, sizeof(text));
	assert_string_equal(text, "198.18.0.2");
	assert_int_equal(((struct sockaddr_in *)&out[0])->sin_port, 0);
	assert_int_equal(madcm_addrs_ip(a, want, AF_INET6, &out[0]), 0);
	inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&out[0])->sin6_addr, text, sizeof(text));
	assert_string_equal(text, "2001:db8::2");
	gid_of("fe80::2:3", want); /* a name line only */
	assert_int_equal(madcm_addrs_ip(a, want, AF_UNSPEC, &out[0]), -ENOENT);
	assert_int_equal(madcm_addrs_ip(a, want, AF_UNIX, &out[0]), -EAFNOSUPPORT);

	/* name -> addresses */
	assert_int_equal(madcm_addrs_name(a, "h2", AF_UNSPEC, out, 8), 3);
	assert_int_equal(out[0].ss_family, AF_INET);
	assert_int_equal(out[1].ss_family, AF_INET);
	assert_int_equal(out[2].ss_family, AF_INET6);
	inet_ntop(AF_INET, &((struct sockaddr_in *)&out[1])->sin_addr, text, sizeof(text));
	assert_string_equal(text, "198.18.0.22");
	assert_int_equal(madcm_addrs_name(a, "H2", AF_INET6, out, 8), 1);
	assert_int_equal(madcm_addrs_name(a, "h2", AF_INET, out, 1), 1);
	inet_ntop(AF_INET, &((struct sockaddr_in *)&out[0])->sin_addr, text, sizeof(text));
	assert_string_equal(text, "198.18.0.2");
	assert_int_equal(madcm_addrs_name(a, "h1", AF_UNSPEC, out, 8), 2);
	assert_int_equal(madcm_addrs_name(a, "h3", AF_UNSPEC, out, 8), 0);
	assert_int_equal(madcm_addrs_name(a, "h9", AF_UNSPEC, out, 8), 0);
	assert_int_equal(madcm_addrs_name(a, "h1", AF_UNSPEC, out, 0), 0);
	assert_int_equal(madcm_addrs_name(a, "h1", AF_UNIX, out, 8), -EAFNOSUPPORT);
	madcm_addrs_close(a);
}

static void test_addrs_open_rules(void **state)
{
	struct madcm_addrs_params p = {.no_netlink = true};
	struct madcm_addrs *a;
	struct sockaddr_in s4;
	uint8_t gid[16];
	char err[256], want[192];
	const char *path;

	(void)state;
	/* a broken line: -EINVAL, "FILE:LINE: ..." */
	path = write_file("broken", "h1 fe80::1\n198.18.0.1 fe80::1\n198.18.0.2 fe80::x\n");
	p.file = path;
	assert_int_equal(madcm_addrs_open_params(&a, &p, err, sizeof(err)), -EINVAL);
	assert_null(a);
	snprintf(want, sizeof(want), "%s:3: bad GID 'fe80::x'", path);
	assert_non_null(strstr(err, want));

	/* $MADCM_ADDR_FILE names the file; a missing one is an error */
	path = write_file("hosts", fabric_hosts);
	setenv("MADCM_ADDR_FILE", path, 1);
	assert_int_equal(madcm_addrs_open(&a, err, sizeof(err)), 0);
	sin4(&s4, "198.18.0.1", 0);
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s4, gid), 0);
	assert_string_equal(madcm_addrs_file(a), path);
	madcm_addrs_close(a);

	setenv("MADCM_ADDR_FILE", "/nonexistent/madcm_hosts", 1);
	assert_int_equal(madcm_addrs_open(&a, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/madcm_hosts"));
	setenv("MADCM_ADDR_FILE", tmpdir, 1); /* a directory */
	assert_int_equal(madcm_addrs_open(&a, err, sizeof(err)), -EISDIR);

	/* empty: no file at all */
	setenv("MADCM_ADDR_FILE", "", 1);
	assert_int_equal(madcm_addrs_open(&a, err, sizeof(err)), 0);
	assert_null(madcm_addrs_file(a));
	assert_int_equal(madcm_addrs_gid(a, (struct sockaddr *)&s4, gid), -ENOENT);
	madcm_addrs_close(a);
	unsetenv("MADCM_ADDR_FILE");

	/* params: file beats the environment */
	setenv("MADCM_ADDR_FILE", "/nonexistent/madcm_hosts", 1);
	p.file = path;
	assert_int_equal(madcm_addrs_open_params(&a, &p, err, sizeof(err)), 0);
	madcm_addrs_close(a);
	unsetenv("MADCM_ADDR_FILE");

	/* NULL handles are empty, not crashes */
	assert_int_equal(madcm_addrs_gid(NULL, (struct sockaddr *)&s4, gid), -ENOENT);
	madcm_addrs_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_happy_path),	  cmocka_unit_test(test_ibacm_lines),
	    cmocka_unit_test(test_pkey_column),	  cmocka_unit_test(test_duplicates_and_limits),
	    cmocka_unit_test(test_broken_lines),  cmocka_unit_test(test_message_bounds),
	    cmocka_unit_test(test_addrs_lookups), cmocka_unit_test(test_addrs_open_rules),
	};

	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
