/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * EINTR as a blocking read(2) of a kernel fd has it.
 *
 * A read of /dev/infiniband/rdma_cm (librdmacm's rdma_get_cm_event) or of
 * a completion channel sleeps interruptibly and is restarted by the kernel
 * unless a signal handler without SA_RESTART ran: a stop and continue
 * (SIGSTOP or ^Z, then SIGCONT) or a SA_RESTART handler never shows.
 * poll, ppoll and epoll_wait, which user-space waits are made of, fail
 * with EINTR after any of these (signal(7)), and do not tell which signal
 * came.  So: a wait ends with EINTR only when a handler of a signal the
 * thread does not block lacks SA_RESTART (qperf's SIGALRM ends its test
 * that way; perftest's signal() handlers restart).  The fault signals are
 * left out: raised by the faulting thread itself, they never interrupt a
 * wait, and sanitizers catch them without SA_RESTART.
 */
#ifndef MADCM_MAD_EINTR_H
#define MADCM_MAD_EINTR_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

/* After a wait failed with EINTR: true if the kernel would have restarted it. */
static inline bool mad_eintr_restarts(void)
{
	sigset_t blocked;

	if (pthread_sigmask(SIG_BLOCK, NULL, &blocked))
		return true;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
		    sig == SIGFPE || sig == SIGILL || sig == SIGTRAP || sig == SIGSYS ||
		    sigismember(&blocked, sig) == 1 || sigaction(sig, NULL, &sa))
			continue;
		if (!(sa.sa_flags & SA_SIGINFO) &&
		    (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN))
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

#endif
