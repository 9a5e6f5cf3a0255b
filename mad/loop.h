/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The progress loop: one per process (docs/design.md, Threads), owner of the
 * umad fds, the timer heap and every protocol object hung from them.
 *
 * Other threads never touch that state: they post commands, self-contained
 * messages (struct mad_loop_cmd embedded in a caller struct that carries
 * copies of the arguments and a place for the result), which the loop
 * runs in order (mad_loop_call), or runs on the caller's thread while it
 * holds the loop (mad_loop_call_here).  Events go back by whatever the
 * command's owner chose (a condition variable in mad_loop_call(), the CM
 * runtime's eventfd queue, cm/runtime.h).
 *
 * Tests drive a loop without its thread: mad_loop_run_once() polls, runs
 * due timers and queued commands, on a clock they supply.
 */
#ifndef MADCM_MAD_LOOP_H
#define MADCM_MAD_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "mad/lockdep.h"
#include "mad/timer.h"

struct mad_loop;
struct mad_loop_cmd;

typedef void (*mad_loop_cmd_fn)(struct mad_loop *loop, struct mad_loop_cmd *cmd);
typedef void (*mad_loop_fd_fn)(struct mad_loop *loop, int fd, void *arg);
typedef void (*mad_loop_set_fn)(struct mad_loop *loop, uint32_t tag, uint32_t events, void *arg);

struct mad_loop_cmd {
	struct mad_loop_cmd *next; /* queue link, owned by the loop */
	mad_loop_cmd_fn run;	   /* runs on the loop; may free cmd */
};

/* now_ns NULL: CLOCK_MONOTONIC. */
int mad_loop_create(struct mad_loop **out, uint64_t (*now_ns)(void *), void *clock_ctx);
/* Stops the thread (if any); watched fds are forgotten, not closed. */
void mad_loop_destroy(struct mad_loop *l);

/* Start the progress thread; idempotent.  Returns 0 or -errno. */
int mad_loop_start(struct mad_loop *l);

/*
 * One iteration on the calling thread: wait up to timeout_ms for an fd
 * (clipped to the next timer; 0 = do not wait, -1 = until something
 * happens), then run ready fds, due timers and queued commands.  Only
 * when the thread is not started.  Returns the number of things run.
 */
int mad_loop_run_once(struct mad_loop *l, int timeout_ms);

/* Queue a command; any thread.  Returns 0, -EINVAL, -ESHUTDOWN. */
int mad_loop_post(struct mad_loop *l, struct mad_loop_cmd *cmd);

/*
 * Run fn(arg) on the loop and wait until it returns.  From the loop
 * thread itself, or when no thread was started, it runs inline.
 */
int mad_loop_call(struct mad_loop *l, void (*fn)(void *arg), void *arg);

/*
 * Run fn(arg) on the calling thread, holding the loop as its own thread
 * does, without a thread hop (what a syscall is to the kernel): it waits
 * while the loop thread is busy, runs while that thread sleeps in poll(),
 * and wakes it afterwards if fn armed an earlier timer or changed the
 * watched fds.  fn must not wait for the loop (it holds it).  From the
 * loop's thread, or with no thread, it runs inline.  0, -EINVAL,
 * -ESHUTDOWN.
 */
int mad_loop_call_here(struct mad_loop *l, void (*fn)(void *arg), void *arg);

/* True once mad_loop_start() ran: a thread drives the loop. */
bool mad_loop_started(const struct mad_loop *l);

/* True on the loop's own thread, in mad_loop_call_here(), or always when it has no thread. */
bool mad_loop_owns(const struct mad_loop *l);

/*
 * Where a function relies on holding the loop ("on the loop"): in debug
 * builds (MADCM_DEBUG), abort naming the function when the caller does
 * not (mad/lockdep.h).  Nothing otherwise.
 */
#define mad_loop_assert_owned(l) mad_lockdep_assert(mad_loop_owns(l), "the progress loop held")

/*
 * Loop-side only: call fn when fd is readable (level-triggered: until fn
 * empties it).  Up to 32 watches (-ENOSPC); an fd may have several.  The
 * thread sleeps in epoll_wait(), so a watch added (or paused, resumed)
 * while it sleeps needs no wake-up.
 */
int mad_loop_watch_fd(struct mad_loop *l, int fd, mad_loop_fd_fn fn, void *arg);

/*
 * Loop-side only: a set of fds, any number, in the loop's own epoll, each
 * with a tag; fn(loop, tag, epoll events, arg) runs for each one epoll
 * reports (level-triggered).  For a server's many client sockets (madcmd's
 * sessions): one epoll_wait a turn reports them, where a watch on an epoll
 * fd of their own would cost a second.  One set per loop:
 * mad_loop_set_watch() names its function (NULL: none; the fds must be
 * gone by then), mad_loop_set_ctl() adds, changes (EPOLL_CTL_MOD) or
 * removes an fd as epoll_ctl(2) does.  0 or -errno.
 */
int mad_loop_set_watch(struct mad_loop *l, mad_loop_set_fn fn, void *arg);
int mad_loop_set_ctl(struct mad_loop *l, int op, int fd, uint32_t tag, uint32_t events);
void mad_loop_unwatch_fd(struct mad_loop *l, int fd);

/*
 * Loop-side only.  Pause (pause true) or resume the loop thread's wait for
 * a watched fd; its watches stay and run again once resumed.  For a thread
 * that waits for fd itself meanwhile and runs what comes on it holding the
 * loop (mad_loop_call_here): the loop's thread is then not woken as well,
 * for what it would not find, nor left to compete for the loop.  Pauses
 * nest; an fd resumed while readable wakes the loop's thread.  0,
 * -EINVAL (also: resume without pause), -ENOENT (fd not watched).
 */
int mad_loop_pause_fd(struct mad_loop *l, int fd, bool pause);

/*
 * epoll_ctl(2) with the event built here (its data a u64): 0, or -1 and
 * errno.  The loop's own registrations, and the epoll sets of waiting
 * threads that hold a watched fd ahead of it (mad_loop_exclusive_fd).
 */
static inline int mad_ep_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event e = {.events = events, .data.u64 = data};

	return epoll_ctl(epfd, op, fd, &e);
}

/*
 * Loop-side only.  Register the loop's watch of fd with EPOLLEXCLUSIVE,
 * behind every epoll set that already holds fd exclusively: fd's data then
 * wakes a thread blocked in epoll_wait() on such a set of its own, and the
 * loop's thread only when no such thread waits (with the kernel's
 * self-removing epoll waits, since Linux 6.0 and its 5.4+ stable
 * branches, a second datum that comes while that thread has not yet run
 * wakes the loop's thread).  Call it again after each new such set: each
 * call moves the loop's registration to the back.  Paused, the watch is
 * out of the epoll set (an exclusive registration cannot be modified) and
 * its resume adds it.  0, -ENOENT (not watched), -EOPNOTSUPP (poll()ed,
 * not in the epoll set), -errno (the kernel refused EPOLLEXCLUSIVE: the
 * watch stays as it was).
 */
int mad_loop_exclusive_fd(struct mad_loop *l, int fd);

/*
 * fn(arg) at the end of every turn of the loop (mad_loop_run_once, the
 * loop's thread), holding the loop, after the fds, timers and commands the
 * turn ran: where a user sends what it gathered meanwhile (madcmd packs a
 * session's events into one packet).  One per loop; NULL removes it.
 */
void mad_loop_set_turn_end(struct mad_loop *l, void (*fn)(void *arg), void *arg);

/*
 * Run the turn-end hook now, from a callback of the turn (holding the
 * loop): what was gathered so far leaves before the turn's remaining work
 * (cm/runtime_local.c: a daemon's events after the first MAD of a drain, before
 * the read that finds the fd empty).  Nothing without a hook.
 */
void mad_loop_turn_end_now(struct mad_loop *l);

/*
 * fn(arg) on a thread just after it gives the loop up: at the end of each
 * turn (mad_loop_run_once, the loop's thread) and of each
 * mad_loop_call_here(), not holding the loop.  Where what must not hold
 * the loop is done for what the hold did: a umad port whose writes sleep
 * writes the MADs sent meanwhile (mad/umad_tx.h).  fn must be safe to call
 * from any thread at any time, with nothing to do.  One per loop; NULL
 * removes it.
 */
void mad_loop_set_release(struct mad_loop *l, void (*fn)(void *arg), void *arg);

struct mad_timer_heap *mad_loop_timers(struct mad_loop *l);

/* The process-wide loop, created and started on first use; NULL on error. */
struct mad_loop *mad_loop_default(void);

#endif
