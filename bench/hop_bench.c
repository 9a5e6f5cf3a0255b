/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * bench/hop_bench: what one crossing between two processes costs here,
 * by the ways a program and madcmd could talk: a SOCK_SEQPACKET pair (what
 * rtproto/ uses), an eventfd per direction beside a shared-memory slot,
 * a futex in shared memory, and (on two CPUs only) a spin on shared
 * memory.  Each is a ping-pong of a command-sized message (256 bytes
 * copied each way); the median round trip of N is printed for the two
 * processes on one CPU (as rdmacm_bench places a host's program and its
 * madcmd) and on two.  A connect through madcmd crosses four times on
 * its critical path (docs/madcmd-protocol.md, "Speed"): this is the floor
 * of what the daemon can add to it.  Prints only.
 *
 * Usage: hop_bench [-n N]
 */
#include "config.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "bench/bench_common.h"

#define MSG 256

const char *bench_prog = "hop_bench";

struct shared {
	_Atomic uint32_t turn; /* futex word and spin flag: 1 ping, 2 pong */
	uint8_t ping[MSG], pong[MSG];
};

enum way { SEQPACKET, EVENTFD, FUTEX, SPIN, NWAYS };
static const char *const way_name[NWAYS] = {"SEQPACKET socket pair", "eventfd + shared memory",
					    "futex in shared memory", "spin on shared memory"};

struct link {
	int sp[2];	   /* SEQPACKET */
	int to_b, to_a;	   /* eventfds */
	struct shared *sh; /* MAP_SHARED */
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	if (cpu < 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			CPU_SET(i, &set);
	else
		CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("hop_bench: sched_setaffinity");
}

static void futex_wait(_Atomic uint32_t *w, uint32_t val)
{
	while (atomic_load(w) == val)
		syscall(SYS_futex, w, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Side `b` (else a) waits until the turn is `want`. */
static void wait_turn(enum way w, struct link *l, bool b, uint32_t want)
{
	uint8_t buf[MSG];
	uint64_t v;

	switch (w) {
	case SEQPACKET:
		if (read(l->sp[b], buf, sizeof(buf)) != MSG)
			_exit(1);
		memcpy(b ? l->sh->ping : l->sh->pong, buf, MSG);
		break;
	case EVENTFD:
		if (read(b ? l->to_b : l->to_a, &v, sizeof(v)) != sizeof(v))
			_exit(1);
		break;
	case FUTEX:
		futex_wait(&l->sh->turn, want == 1 ? 2 : 1);
		break;
	case SPIN:
		while (atomic_load(&l->sh->turn) != want)
			;
		break;
	default:
		break;
	}
}

static void give_turn(enum way w, struct link *l, bool b, uint32_t give)
{
	uint8_t buf[MSG];
	uint64_t one = 1;

	memcpy(buf, b ? l->sh->pong : l->sh->ping, MSG);
	switch (w) {
	case SEQPACKET:
		if (write(l->sp[b], buf, MSG) != MSG)
			_exit(1);
		break;
	case EVENTFD:
		memcpy(b ? l->sh->pong : l->sh->ping, buf, MSG);
		if (write(b ? l->to_a : l->to_b, &one, sizeof(one)) != sizeof(one))
			_exit(1);
		break;
	case FUTEX:
		memcpy(b ? l->sh->pong : l->sh->ping, buf, MSG);
		atomic_store(&l->sh->turn, give);
		futex_wake(&l->sh->turn);
		break;
	case SPIN:
		memcpy(b ? l->sh->pong : l->sh->ping, buf, MSG);
		atomic_store(&l->sh->turn, give);
		break;
	default:
		break;
	}
}

/* The median round trip (us) of n ping-pongs of A on cpu_a and B on cpu_b. */
static double run(enum way w, int cpu_a, int cpu_b, unsigned n)
{
	struct link l;
	uint64_t *t = calloc(n, sizeof(*t));
	pid_t pid;
	double med;

	if (!t)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, l.sp))
		return -1;
	l.to_b = eventfd(0, 0);
	l.to_a = eventfd(0, 0);
	l.sh = mmap(NULL, sizeof(*l.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (l.to_b < 0 || l.to_a < 0 || l.sh == MAP_FAILED)
		return -1;
	atomic_store(&l.sh->turn, 2);
	pid = fork();
	if (pid == 0) {
		pin(cpu_b);
		for (unsigned i = 0; i < n + 100; i++) {
			wait_turn(w, &l, true, 1);
			give_turn(w, &l, true, 2);
		}
		_exit(0);
	}
	pin(cpu_a);
	for (unsigned i = 0; i < n + 100; i++) {
		uint64_t t0 = bench_now_ns();

		give_turn(w, &l, false, 1);
		wait_turn(w, &l, false, 2);
		if (i >= 100)
			t[i - 100] = bench_now_ns() - t0;
	}
	waitpid(pid, NULL, 0);
	med = bench_pct_us(t, n, 50);
	close(l.sp[0]);
	close(l.sp[1]);
	close(l.to_a);
	close(l.to_b);
	munmap(l.sh, sizeof(*l.sh));
	free(t);
	return med;
}

int main(int argc, char **argv)
{
	unsigned n = 20000;
	int opt;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt == 'n' && atoi(optarg) > 0)
			n = (unsigned)atoi(optarg);
		else {
			fprintf(stderr, "usage: hop_bench [-n N]\n");
			return 2;
		}
	}
	printf("round trip of a %d-byte message between two processes, median of %u:\n", MSG, n);
	printf("%-26s %14s %14s\n", "", "one CPU", "two CPUs");
	for (int w = 0; w < NWAYS; w++) {
		/* a spin on one CPU only burns the other side's time slice */
		double one = w == SPIN ? -1 : run((enum way)w, 0, 0, n);
		double two = ncpu > 1 ? run((enum way)w, 0, 1, n) : -1;
		char a[32] = "-", b[32] = "-";

		if (one >= 0)
			snprintf(a, sizeof(a), "%.1f us", one);
		if (two >= 0)
			snprintf(b, sizeof(b), "%.1f us", two);
		printf("%-26s %14s %14s\n", way_name[w], a, b);
		pin(-1);
	}
	return 0;
}
