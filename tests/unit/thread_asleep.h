/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Wait until another thread of this process sleeps in a poll(2) or
 * epoll_wait(2) (as its /proc/self/task/TID/syscall shows, which names a
 * system call only while the thread blocks in it): a test that wants a
 * thread already waiting when it sends something waits for that, not for
 * a guessed time, which a loaded machine may well exceed.
 */
#ifndef MADCM_TESTS_THREAD_ASLEEP_H
#define MADCM_TESTS_THREAD_ASLEEP_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/types.h>

static inline bool thread_asleep_polling(pid_t tid)
{
	char path[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1; /* "running" */
	fclose(f);
	return
#ifdef SYS_poll
	    nr == SYS_poll ||
#endif
#ifdef SYS_epoll_wait
	    nr == SYS_epoll_wait ||
#endif
#ifdef SYS_epoll_pwait2
	    nr == SYS_epoll_pwait2 ||
#endif
	    nr == SYS_ppoll || nr == SYS_epoll_pwait;
}

/* A thread names itself for thread_asleep_wait (an atomic store: it races the reader). */
static inline void thread_asleep_self(volatile pid_t *tid)
{
	__atomic_store_n(tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
}

/*
 * *tid is set by the thread itself (thread_asleep_self) once it runs, 0
 * before.  Returns whether it fell asleep within a generous bound (a
 * minute).
 */
static inline bool thread_asleep_wait(const volatile pid_t *tid)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t id = __atomic_load_n(tid, __ATOMIC_ACQUIRE);

		if (id && thread_asleep_polling(id))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 60)
			return false;
		usleep(1000);
	}
}

#endif
