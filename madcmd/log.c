/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd's log: stderr (foreground, tests) or syslog (-l syslog), one line
 * per message, filtered by priority.  A write that fails (disk full) drops
 * its line and is counted: the daemon goes on serving.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <syslog.h>

#include "madcmd/madcmd.h"

static enum madcmd_log_to log_to = MADCMD_LOG_STDERR;
static int log_max = LOG_INFO;
static uint64_t lost;

void madcmd_log_setup(enum madcmd_log_to to, int max_prio)
{
	log_to = to;
	log_max = max_prio;
	if (to == MADCMD_LOG_SYSLOG)
		openlog("madcmd", LOG_PID, LOG_DAEMON);
}

void madcmd_log(int prio, const char *fmt, ...)
{
	va_list ap;

	if (log_to == MADCMD_LOG_NONE || prio > log_max)
		return;
	va_start(ap, fmt);
	if (log_to == MADCMD_LOG_SYSLOG) {
		vsyslog(prio, fmt, ap);
	} else {
		/* One write per line (a buffer, then fwrite): a failure drops the line whole. */
		char line[1024];
		int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);

		if (n < 0)
			n = 0;
		if ((size_t)n > sizeof(line) - 2)
			n = (int)sizeof(line) - 2;
		line[n++] = '\n';
		if (fprintf(stderr, "madcmd: %.*s", n, line) < 0 || fflush(stderr)) {
			lost++;
			clearerr(stderr);
		}
	}
	va_end(ap);
}

uint64_t madcmd_log_lost(void)
{
	return lost;
}
