/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * tests/oom/oom_alloc.c: an allocator that fails the Nth allocation, for
 * `make check-oom` (tests/oom/check_oom.sh), after SQLite's malloc tests.
 *
 * The OOM build links the unit tests statically (--disable-shared) with
 * madcm's archives (libmadcm, lib/libcma, lib/libmadcm_addr,
 * libmadcmd_core) in which the driver renamed malloc, calloc, realloc,
 * aligned_alloc, strdup and strndup to the __wrap_ functions here
 * (objcopy --redefine-sym), so only madcm's own calls are counted: not
 * the test's, nor its fakes of libibverbs and libibumad (test scaffolding
 * that does not check its allocations), nor CMocka's or libc's internal
 * ones.  A whole-link -Wl,--wrap would reach the tests and fakes too, and a
 * filter on the caller's address would need the link order of the text.
 *
 * Environment:
 *   MADCM_OOM_FAIL_AT=N   the Nth counted allocation (from 1) fails;
 *                         0 or unset: none fails, the calls are counted.
 *   MADCM_OOM_PERSIST=1   every allocation from the Nth on fails (else
 *                         only the Nth: "once", the default).
 *   MADCM_OOM_REPORT=FILE at exit, write "allocs A injected I" to FILE:
 *                         the driver stops raising N once I is 0.
 *   MADCM_OOM_TRACE=1     print the stack of each failed allocation (to
 *                         find which call failed).
 *
 * Threads (the progress loop's) allocate too, so the Nth call is the same
 * one from run to run only where the test is single-threaded.
 */
#include <errno.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static unsigned long fail_at;
static int persist;
static int trace;
static unsigned long allocs;
static unsigned long injected;
static pid_t owner;

__attribute__((constructor)) static void oom_init(void)
{
	const char *s = getenv("MADCM_OOM_FAIL_AT");

	fail_at = s ? strtoul(s, NULL, 10) : 0;
	s = getenv("MADCM_OOM_PERSIST");
	persist = s && *s == '1';
	s = getenv("MADCM_OOM_TRACE");
	trace = s && *s == '1';
	owner = getpid();
}

__attribute__((destructor)) static void oom_report(void)
{
	const char *path = getenv("MADCM_OOM_REPORT");
	FILE *f;

	/* A forked child's counts are its parent's too: the parent reports. */
	if (!path || getpid() != owner)
		return;
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "allocs %lu injected %lu\n", __atomic_load_n(&allocs, __ATOMIC_RELAXED),
		__atomic_load_n(&injected, __ATOMIC_RELAXED));
	fclose(f);
}

/* Whether this allocation is to fail (and counts it). */
static int oom_fail(void)
{
	unsigned long n = __atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);

	if (!fail_at || n < fail_at || (n > fail_at && !persist))
		return 0;
	__atomic_add_fetch(&injected, 1, __ATOMIC_RELAXED);
	if (trace) {
		void *pc[16];

		fprintf(stderr, "madcm-oom: allocation %lu fails:\n", n);
		backtrace_symbols_fd(pc, backtrace(pc, 16), 2);
	}
	errno = ENOMEM;
	return 1;
}

void *__wrap_malloc(size_t n)
{
	return oom_fail() ? NULL : malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
	return oom_fail() ? NULL : calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
	return oom_fail() ? NULL : realloc(p, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	return oom_fail() ? NULL : aligned_alloc(a, n);
}

char *__wrap_strdup(const char *s)
{
	return oom_fail() ? NULL : strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return oom_fail() ? NULL : strndup(s, n);
}
