/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The simulator's topology parser (sim/topo.c) on arbitrary text: it loads
 * and finishes, or refuses with "FILE:LINE: reason" -- never crashes,
 * never leaks, never leaves half a fabric behind.  The input is written to
 * a file in a private directory, so relative "include" lines resolve there
 * (the file may include itself: the nesting limit must hold).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/sim_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], path[128];
/* Opened once: the input file (rewritten in place) and the dump's sink. */
static int in_fd = -1;
static FILE *dev_null;

static void cleanup(void)
{
	close(in_fd);
	fclose(dev_null);
	unlink(path);
	rmdir(dir);
}

static void setup(void)
{
	int fd;

	/* In memory where there is a tmpfs: on a disk file system each
	 * rewrite of the file cost a flush, most of the time of an input. */
	snprintf(dir, sizeof(dir), "/dev/shm/fuzz_sim_topo.XXXXXX");
	if (!mkdtemp(dir)) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_sim_topo.XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	snprintf(path, sizeof(path), "%s/t.topo", dir);
	in_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dev_null = fopen("/dev/null", "w");
	if (in_fd < 0 || !dev_null)
		abort();
	atexit(cleanup);
	/* "include /dev/stdin" must not wait for a terminal */
	fd = open("/dev/null", O_RDONLY);
	if (fd < 0 || dup2(fd, 0) < 0)
		abort();
	close(fd);
}

/* every refusal names a file and a line: "...:N: reason" */
static int has_file_line(const char *msg)
{
	for (const char *p = strchr(msg, ':'); p; p = strchr(p + 1, ':')) {
		const char *q = p + 1;

		if (*q < '0' || *q > '9')
			continue;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q[0] == ':' && q[1] == ' ')
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *msg = NULL;
	size_t msglen = 0;
	FILE *err;
	int ret;

	if (!path[0])
		setup();
	if ((size && pwrite(in_fd, data, size, 0) != (ssize_t)size) ||
	    ftruncate(in_fd, (off_t)size))
		abort();
	err = open_memstream(&msg, &msglen);
	if (!err)
		abort();
	ret = fsd_topo_load(path, err);
	if (ret) {
		fflush(err);
		if (!has_file_line(msg)) {
			fprintf(stderr, "refused without file:line: \"%s\"\n", msg);
			abort();
		}
	} else {
		ret = fsd_topo_finish(err);
		if (!ret)
			fsd_topo_dump(dev_null); /* it walks every node and link */
	}
	fclose(err);
	free(msg);
	fsd_topo_reset();
	return 0;
}
