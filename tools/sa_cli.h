/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * What the SA subcommands of `madcm` (path, mcast, service) share: the
 * common options (-C/--ca, -P/--port like infiniband-diags, --timeout,
 * --retries, --json, --hosts), opening an SA client on that port, and
 * turning "GID, LID or name" arguments into addresses.
 *
 * Address file (madcm-path(1)): lines "NAME-OR-IP GID", '#' comments;
 * --hosts FILE, else $MADCM_HOSTS, else /etc/madcm/hosts.
 */
#ifndef MADCM_TOOLS_SA_CLI_H
#define MADCM_TOOLS_SA_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sa/client.h"

#define SA_CLI_DEFAULT_HOSTS "/etc/madcm/hosts"

struct sa_cli_opts {
	const char *ca;
	int port;
	unsigned timeout_ms;
	unsigned retries;
	bool json;
	const char *hosts;
};

/* getopt_long entries of the common options (values >= 0x100 for long-only). */
enum { SA_CLI_OPT_JSON = 0x100, SA_CLI_OPT_HOSTS, SA_CLI_OPT_TIMEOUT, SA_CLI_OPT_RETRIES };
/* clang-format off */
#define SA_CLI_LONG_OPTS \
	{ "ca", required_argument, NULL, 'C' }, \
	{ "port", required_argument, NULL, 'P' }, \
	{ "timeout", required_argument, NULL, SA_CLI_OPT_TIMEOUT }, \
	{ "retries", required_argument, NULL, SA_CLI_OPT_RETRIES }, \
	{ "json", no_argument, NULL, SA_CLI_OPT_JSON }, \
	{ "hosts", required_argument, NULL, SA_CLI_OPT_HOSTS }, \
	{ "help", no_argument, NULL, 'h' }
/* clang-format on */
#define SA_CLI_SHORT_OPTS "C:P:h"
#define SA_CLI_OPTS_HELP                                                                           \
	"  -C, --ca CA        use this device (default: first with an active port)\n"              \
	"  -P, --port N       use this port of it\n"                                               \
	"      --timeout MS   per-try timeout of each SA query (default 1000)\n"                   \
	"      --retries N    resends after a timeout (default 3)\n"                               \
	"      --json         one JSON object per record\n"                                        \
	"      --hosts FILE   address file (default $MADCM_HOSTS or " SA_CLI_DEFAULT_HOSTS ")\n"

void sa_cli_opts_init(struct sa_cli_opts *o);

/* What sa_cli_getopt returns when it is not one of the caller's options. */
enum { SA_CLI_END = -1, SA_CLI_HELP = -2, SA_CLI_USAGE = -3 };
/*
 * getopt_long over `longopts` (SA_CLI_LONG_OPTS first, then the command's
 * own): handles the common options and -h (usage to stdout) itself and
 * returns the next option of the command's own, its argument in optarg;
 * SA_CLI_END after the last; SA_CLI_HELP after -h; SA_CLI_USAGE after a
 * bad value or an unknown option (said on stderr).  sa_cli_exit() turns
 * the last two into the command's exit status.
 */
int sa_cli_getopt(struct sa_cli_opts *o, int argc, char **argv, const struct option *longopts,
		  const char *cmd, void (*usage)(FILE *out));
static inline int sa_cli_exit(int getopt_result)
{
	return getopt_result == SA_CLI_HELP ? 0 : 2;
}
/* Say that `arg` is a bad value for a `cmd` option; returns 2 (usage error). */
int sa_cli_bad_value(const char *cmd, const char *arg);

/*
 * Open an SA client on the port the options name, or say why not; *port
 * (when given) gets the port's attributes.
 */
int sa_cli_open(const struct sa_cli_opts *o, struct sa_client **c, struct mad_port_attr *port,
		const char *cmd);
/* The P_Key requests default to: the port's at index 0, else the default one. */
static inline uint16_t sa_cli_port_pkey(const struct mad_port_attr *port)
{
	return port->pkey0 ? port->pkey0 : 0xffff;
}

/* Parse an unsigned number (decimal or 0x hex) into *v, at most max. */
bool sa_cli_number(const char *s, uint64_t max, uint64_t *v);
/* Parse a GID in IPv6 notation. */
bool sa_cli_gid(const char *s, uint8_t gid[16]);
void sa_cli_format_gid(char out[64], const uint8_t gid[16]);

/* An endpoint argument: a GID, a LID, or a name in the address file. */
struct sa_cli_addr {
	bool is_gid;
	uint8_t gid[16];
	uint16_t lid;
};
int sa_cli_addr(const struct sa_cli_opts *o, const char *s, struct sa_cli_addr *a, const char *cmd);

/* Print a whole record through its layout (JSON object or text block). */
void sa_cli_print_record(FILE *out, const struct mad_layout *l, const uint8_t *rec, bool json);

/* strerror for -errno results of the SA client, with SA status names. */
const char *sa_cli_strerror(int err);

#endif
