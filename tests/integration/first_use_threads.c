/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Threads that make a process's first CM calls at the same moment: each
 * binds an id to the host's address and listens, which opens the port's
 * CM (lib/cma_init.c cma_port_runtime).  Every thread must succeed: one
 * of them opens the CM agent and the others use it, as with the kernel's
 * rdma_cm, where the first use of a device is no one thread's business.
 *
 *   first_use_threads ADDR PORT NTHREADS
 * prints "listening N" and exits 0 when all N listened.
 */
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

static pthread_barrier_t start;
static struct sockaddr_storage base;
static int nfail;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *one(void *arg)
{
	struct sockaddr_in sin;
	struct rdma_cm_id *id;
	int port = (int)(long)arg;

	memcpy(&sin, &base, sizeof(sin));
	sin.sin_port = htons((unsigned short)port);
	pthread_barrier_wait(&start);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&sin) || rdma_listen(id, 4)) {
		perror("first_use_threads: create/bind/listen");
		pthread_mutex_lock(&lock);
		nfail++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = {.ai_family = AF_INET}, *ai;
	pthread_t t[64];
	int n, port;

	if (argc != 4 || getaddrinfo(argv[1], NULL, &hints, &ai)) {
		fprintf(stderr, "usage: first_use_threads ADDR PORT NTHREADS\n");
		return 2;
	}
	memcpy(&base, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	port = atoi(argv[2]);
	n = atoi(argv[3]);
	if (n < 1 || n > 64)
		return 2;
	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, one, (void *)(long)(port + i));
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (nfail) {
		printf("failed %d of %d\n", nfail, n);
		return 1;
	}
	printf("listening %d\n", n);
	return 0;
}
