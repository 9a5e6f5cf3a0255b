/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * For tests/integration/rspreload_fork.sh: take one count of the
 * semaphore librspreload.so's fork mode serialises on ("/rsocket_fork",
 * created with the value 1 as rdma-core creates it) and exit without
 * giving it back, as a process killed in the middle of a conversion
 * leaves it.  Exits 0 when it took the count, 1 otherwise.
 */
#include <fcntl.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/stat.h>

int main(void)
{
	sem_t *sem = sem_open("/rsocket_fork", O_CREAT | O_RDWR, S_IRWXU | S_IRWXG, 1);

	if (sem == SEM_FAILED) {
		perror("sem_open /rsocket_fork");
		return 1;
	}
	if (sem_trywait(sem)) {
		perror("sem_trywait /rsocket_fork");
		return 1;
	}
	return 0;
}
