/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * notice_watch [-p PORT] IPV4...: for each address, an id (RDMA_PS_TCP)
 * bound to it on PORT (default 7470) + its index and listening (which opens the CM of its
 * port, and with it the port's subscription to the SA's GID notices);
 * says "ready", then prints every event of the channel as
 * "event INDEX NAME status S" until killed.  For tests of ADDR_CHANGE
 * (tests/integration/sa_notice.sh).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#define MAX_IDS 8

int main(int argc, char **argv)
{
	struct rdma_cm_id *ids[MAX_IDS];
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	int base = 7470, first = 1, n;

	if (argc > 2 && !strcmp(argv[1], "-p")) {
		base = atoi(argv[2]);
		first = 3;
	}
	n = argc - first;
	if (n < 1 || n > MAX_IDS) {
		fprintf(stderr, "usage: notice_watch [-p PORT] IPV4...\n");
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET};

		if (inet_pton(AF_INET, argv[first + i], &a.sin_addr) != 1) {
			fprintf(stderr, "notice_watch: bad address %s\n", argv[first + i]);
			return 2;
		}
		a.sin_port = htons((uint16_t)(base + i));
		if (rdma_create_id(ch, &ids[i], (void *)(long)i, RDMA_PS_TCP) ||
		    rdma_bind_addr(ids[i], (struct sockaddr *)&a) || rdma_listen(ids[i], 4)) {
			perror(argv[first + i]);
			return 1;
		}
		printf("bound %d %s port %u\n", i, argv[first + i], ids[i]->port_num);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (rdma_get_cm_event(ch, &ev)) {
			perror("rdma_get_cm_event");
			return 1;
		}
		printf("event %ld %s status %d\n", (long)ev->id->context, rdma_event_str(ev->event),
		       ev->status);
		fflush(stdout);
		rdma_ack_cm_event(ev);
	}
}
