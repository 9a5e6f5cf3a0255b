/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Lock rules asserted in debug builds (configure --enable-debug defines
 * MADCM_DEBUG), as the kernel's lockdep_assert_held: a rule broken aborts
 * at once, naming the rule and the function, where a release build would
 * race or deadlock now and then.  Without MADCM_DEBUG every macro here is
 * nothing (its arguments are not evaluated).  Include config.h first, as
 * every source does, so that all agree on MADCM_DEBUG.
 *
 * The rules (docs/architecture.md, "Threads and locks"): the loop is held
 * where engine state is touched (mad_loop_assert_owned, mad/loop.h); lib/'s
 * one mutex, cma.lock, comes after the loop and is never held across a
 * call into the runtime.  cm/ and mad/ do not know lib/, so lib/ tells
 * them: it counts, per thread, the library locks it holds
 * (mad_lockdep_lib_lock/unlock), and the runtime's entry points and the
 * loop's waits assert the count is 0 (mad_assert_no_lib_lock).
 */
#ifndef MADCM_MAD_LOCKDEP_H
#define MADCM_MAD_LOCKDEP_H

#ifdef MADCM_DEBUG

/* Print "madcm: lock rule broken in FUNC: RULE" and abort(). */
__attribute__((noreturn)) void mad_lockdep_fail(const char *rule, const char *func);

/* Library locks (cma.lock) this thread holds. */
extern __thread unsigned mad_lockdep_lib_held;

#define mad_lockdep_assert(cond, rule)                                                             \
	do {                                                                                       \
		if (!(cond))                                                                       \
			mad_lockdep_fail(rule, __func__);                                          \
	} while (0)
#define mad_lockdep_lib_lock() (mad_lockdep_lib_held++)
#define mad_lockdep_lib_unlock()                                                                   \
	do {                                                                                       \
		mad_lockdep_assert(mad_lockdep_lib_held > 0, "cma.lock released but not held");    \
		mad_lockdep_lib_held--;                                                            \
	} while (0)
#define mad_assert_no_lib_lock()                                                                   \
	mad_lockdep_assert(                                                                        \
	    mad_lockdep_lib_held == 0,                                                             \
	    "lock order loop -> cma.lock: no call into the runtime holding cma.lock")

#else

#define mad_lockdep_assert(cond, rule) ((void)0)
#define mad_lockdep_lib_lock() ((void)0)
#define mad_lockdep_lib_unlock() ((void)0)
#define mad_assert_no_lib_lock() ((void)0)

#endif

#endif
