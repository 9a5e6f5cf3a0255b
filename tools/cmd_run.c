/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm run [-v] [--rsocket] [--] PROGRAM [ARGS...]: run an unmodified
 * librdmacm program on madcm's librdmacm.so.1.  The dynamic linker finds
 * our library first through LD_LIBRARY_PATH; the program and its arguments
 * are exec'd unchanged.  In a build tree the library is found beside the
 * tool (lib/.libs), else where it was installed (RDMACM_LIBDIR).
 * --rsocket also puts librspreload.so (from the same directory) in front
 * of LD_PRELOAD, so a plain TCP program's sockets become rsockets.
 * A sanitizer build (configure --enable-sanitize) puts the sanitizer's
 * runtime this tool runs with first in LD_PRELOAD: the program may be
 * uninstrumented while our libraries need that runtime to be its first
 * library.
 */
#include "config.h"

#include <errno.h>
#include <link.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RDMACM_LIBDIR
#define RDMACM_LIBDIR "/usr/local/lib/madcm"
#endif
#ifndef MADCM_LIBDIR
#define MADCM_LIBDIR "/usr/local/lib"
#endif

int cmd_run(int argc, char **argv);

static void usage(FILE *out)
{
	fputs("Usage: madcm run [-v] [--rsocket] [--] PROGRAM [ARGS...]\n"
	      "Run PROGRAM with madcm's librdmacm.so.1 in place of rdma-core's.\n"
	      "  -v         say which library directory is used (on stderr)\n"
	      "  --rsocket  preload librspreload.so: TCP sockets become rsockets\n",
	      out);
}

/* dl_iterate_phdr callback: the path of ASan's or TSan's runtime. */
static int find_san_runtime(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = info->dlpi_name, *base = strrchr(name, '/');

	base = base ? base + 1 : name;
	if (strncmp(base, "libasan.so", 10) && strncmp(base, "libtsan.so", 10))
		return 0;
	*(const char **)arg = name;
	return 1;
}

/* Whether prog (looked up in PATH as execvp does) is a #! script. */
static bool is_script(const char *prog)
{
	const char *path = getenv("PATH");
	char p[PATH_MAX], magic[2];
	FILE *f = NULL;

	if (strchr(prog, '/')) {
		f = fopen(prog, "r");
	} else {
		for (const char *d = path ? path : "/bin:/usr/bin"; !f && *d;) {
			size_t len = strcspn(d, ":");

			if (snprintf(p, sizeof(p), "%.*s/%s", (int)len, len ? d : ".", prog) <
				(int)sizeof(p) &&
			    !access(p, X_OK))
				f = fopen(p, "r");
			d += len + (d[len] == ':');
		}
	}
	if (!f)
		return false;
	bool script = fread(magic, 1, 2, f) == 2 && magic[0] == '#' && magic[1] == '!';

	fclose(f);
	return script;
}

/*
 * The runtime, when this tool has one, first in LD_PRELOAD (the libraries
 * it runs the program on are instrumented like the tool); 0, or -1.  Not
 * TSan's into a script: shells crash with it preloaded (a libtool
 * wrapper's real program links the runtime itself).
 */
static int preload_san_runtime(const char *prog, bool verbose)
{
	const char *rt = NULL, *old = getenv("LD_PRELOAD");
	size_t n;
	char *v;

	dl_iterate_phdr(find_san_runtime, &rt);
	if (!rt || !*rt)
		return 0;
	if (strstr(rt, "libtsan.so") && is_script(prog))
		return 0;
	n = strlen(rt);
	if (old && !strncmp(old, rt, n) && (old[n] == '\0' || old[n] == ':'))
		return 0;
	if (asprintf(&v, "%s%s%s", rt, old && *old ? ":" : "", old ? old : "") < 0)
		return -1;
	setenv("LD_PRELOAD", v, 1);
	free(v);
	if (verbose)
		fprintf(stderr, "madcm run: LD_PRELOAD=%s\n", getenv("LD_PRELOAD"));
	return 0;
}

/* LD_PRELOAD with dir/librspreload.so first; 0, or -1 when it is missing. */
static int preload_rsocket(const char *dir, bool verbose)
{
	const char *old = getenv("LD_PRELOAD");
	char p[PATH_MAX], *v;

	if (snprintf(p, sizeof(p), "%s/librspreload.so", dir) >= (int)sizeof(p) ||
	    access(p, R_OK)) {
		fprintf(stderr, "madcm run: no librspreload.so in %s\n", dir);
		return -1;
	}
	if (asprintf(&v, "%s%s%s", p, old && *old ? ":" : "", old ? old : "") < 0)
		return -1;
	setenv("LD_PRELOAD", v, 1);
	free(v);
	if (verbose)
		fprintf(stderr, "madcm run: LD_PRELOAD=%s\n", getenv("LD_PRELOAD"));
	return 0;
}

static bool has_lib(const char *dir)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s/librdmacm.so.1", dir) >= (int)sizeof(p))
		return false;
	return access(p, R_OK) == 0;
}

/* The build tree's lib/.libs and .libs when the tool runs from one. */
static bool build_tree_dirs(char *rdmacm, char *madcm, size_t n)
{
	char exe[PATH_MAX], *slash;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (len <= 0)
		return false;
	exe[len] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return false;
	*slash = '\0'; /* .../tools/.libs or .../tools */
	for (int up = 0; up < 2; up++) {
		char root[PATH_MAX];

		if (snprintf(root, sizeof(root), "%s%s", exe, up ? "/../.." : "/..") >=
			(int)sizeof(root) ||
		    snprintf(rdmacm, n, "%s/lib/.libs", root) >= (int)n ||
		    snprintf(madcm, n, "%s/.libs", root) >= (int)n)
			continue;
		if (has_lib(rdmacm))
			return true;
	}
	return false;
}

int cmd_run(int argc, char **argv)
{
	char rdmacm[PATH_MAX], madcm[PATH_MAX], *path;
	const char *old = getenv("LD_LIBRARY_PATH");
	bool verbose = false, rsocket = false;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else if (!strcmp(argv[i], "--rsocket")) {
			rsocket = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	if (!build_tree_dirs(rdmacm, madcm, sizeof(rdmacm))) {
		snprintf(rdmacm, sizeof(rdmacm), "%s", RDMACM_LIBDIR);
		snprintf(madcm, sizeof(madcm), "%s", MADCM_LIBDIR);
		if (!has_lib(rdmacm)) {
			fprintf(stderr,
				"madcm run: no librdmacm.so.1 in %s (is madcm installed?)\n",
				rdmacm);
			return 1;
		}
	}
	if (asprintf(&path, "%s:%s%s%s", rdmacm, madcm, old && *old ? ":" : "", old ? old : "") < 0)
		return 1;
	setenv("LD_LIBRARY_PATH", path, 1);
	free(path);
	if (verbose)
		fprintf(stderr, "madcm run: librdmacm.so.1 from %s\n", rdmacm);
	if ((rsocket && preload_rsocket(rdmacm, verbose)) || preload_san_runtime(argv[i], verbose))
		return 1;
	execvp(argv[i], argv + i);
	fprintf(stderr, "madcm run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
