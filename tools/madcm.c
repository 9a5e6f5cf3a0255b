/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm: the command-line tool.  `madcm SUBCOMMAND [ARGS]`; each
 * subcommand is a function `int cmd_NAME(int argc, char **argv)` in its
 * own tools/cmd_NAME.c, called with argv[0] = "NAME".
 *
 * To add one, add a line to MADCM_SUBCOMMANDS: it both declares the
 * function and lists it in --help.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

/* clang-format off */
#define MADCM_SUBCOMMANDS(X) \
	X(decode, "print MADs from hex, raw MAD files or pcap captures") \
	X(path, "ask the SA for path records between two ports") \
	X(mcast, "join, leave or list multicast groups at the SA") \
	X(service, "register, query or delete SA service records") \
	X(trace, "print a MAD capture (MADCM_TRACE=FILE.pcap)") \
	X(ladder, "draw a capture's CM exchanges as a ladder diagram") \
	X(stat, "print CM engine counters and connections (MADCM_STAT_FILE)") \
	X(ids, "list every rdma_cm id on the host (rdma resource show cm_id)") \
	X(run, "run a librdmacm program on madcm's librdmacm.so.1") \
	X(torture, "run adversarial CM cases against a target CM") \
	/* one line per subcommand above this one */
/* clang-format on */

#define MADCM_DECLARE(name, help) int cmd_##name(int argc, char **argv);
MADCM_SUBCOMMANDS(MADCM_DECLARE)

struct subcommand {
	const char *name;
	const char *help;
	int (*run)(int argc, char **argv);
};

#define MADCM_ENTRY(name, help) {#name, help, cmd_##name},
static const struct subcommand subcommands[] = {MADCM_SUBCOMMANDS(MADCM_ENTRY)};
#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *out)
{
	fputs("Usage: madcm [--help | --version] SUBCOMMAND [ARGS...]\n"
	      "\n"
	      "madcm, the RDMA connection manager in user space: tools.\n"
	      "\n"
	      "Subcommands:\n",
	      out);
	for (size_t i = 0; i < NSUBCOMMANDS; i++)
		fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].help);
	fputs("\n`madcm SUBCOMMAND --help` describes one; see also madcm(1).\n", out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("madcm %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NSUBCOMMANDS; i++)
		if (!strcmp(argv[1], subcommands[i].name))
			return subcommands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "madcm: unknown subcommand '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
