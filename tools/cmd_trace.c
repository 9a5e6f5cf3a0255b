/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm trace FILE.pcap: print a MAD capture (MADCM_TRACE, fabsim capture,
 * ibdump); the same as `madcm decode FILE.pcap`, named for what it reads.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

int cmd_decode(int argc, char **argv);

int cmd_trace(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs("Usage: madcm trace [DECODE-OPTIONS] FILE.pcap\n"
		      "Print every MAD of a capture, as madcm decode does; see madcm-trace(1).\n",
		      argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	return cmd_decode(argc, argv);
}
