/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd's log: stderr (foreground, tests) or syslog (-l syslog), one line
 * per message, filtered by priority.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

#include "madcmd/madcmd.h"

static enum madcmd_log_to log_to = MADCMD_LOG_STDERR;
static int log_max = LOG_INFO;

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
		fputs("madcmd: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}
