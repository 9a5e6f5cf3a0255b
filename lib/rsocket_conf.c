/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rdma-core's rsocket tuning files, /etc/rdma/rsocket/NAME, read once, at
 * the first use (the first rsocket made, or the first rpoll with one), as
 * rdma-core's rs_configure() reads them when its first rsocket is made:
 * the same files, formats (one number, scanf's %u, %hu or %d; a file that
 * does not parse leaves the default) and lower bounds.  The directory is
 * fixed as in rdma-core (its RDMA_CONF_DIR, /etc/rdma in Debian).
 * madcm's own bounds (those of rsetsockopt) apply when the values are
 * used (lib/rsocket.c).  max_events, which rdma-core no longer reads, is
 * not read.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>

#include "lib/rsocket.h"

#define RS_CONF_DIR "/etc/rdma/rsocket"
#define RS_SNDLOWAT 2048 /* lib/rsocket.c's */

static struct rs_conf conf = {
    .polling_time_us = -1,
    .wake_up_interval_ms = -1,
    .mem = 1u << 17,
    .wmem = 1u << 17,
    .sqsize = 384,
    .rqsize = 384,
    .inline_size = 64,
    .iomap_size = 0,
};
static pthread_once_t conf_once = PTHREAD_ONCE_INIT;

/* Reads NAME with fmt into val; false when the file is absent or bad. */
static bool read_one(const char *name, const char *fmt, void *val)
{
	char path[128];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), RS_CONF_DIR "/%s", name);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fscanf(f, fmt, val);
	fclose(f);
	return n == 1;
}

static void conf_read(void)
{
	unsigned u;
	unsigned short h;
	int d;

	if (read_one("polling_time", "%u", &u))
		conf.polling_time_us = u;
	if (read_one("wake_up_interval", "%d", &d))
		conf.wake_up_interval_ms = d;
	if (read_one("inline_default", "%hu", &h))
		conf.inline_size = h;
	if (read_one("sqsize_default", "%hu", &h))
		conf.sqsize = h;
	if (read_one("rqsize_default", "%hu", &h))
		conf.rqsize = h;
	if (read_one("mem_default", "%u", &u))
		conf.mem = u < 1 ? 1 : u;
	if (read_one("wmem_default", "%u", &u))
		conf.wmem = u < RS_SNDLOWAT ? RS_SNDLOWAT << 1 : u;
	if (read_one("iomap_size", "%hu", &h))
		conf.iomap_size = h;
}

const struct rs_conf *rs_conf(void)
{
	pthread_once(&conf_once, conf_read);
	return &conf;
}
