/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * rdmacm_watch ADDR PORT N: bind an id (RDMA_PS_TCP) to ADDR:PORT, say
 * "bound", then print the next N events on its channel as
 * "event NAME status S" and exit 0 (1 on an error).  For tests of events
 * that no rdmacm-utils program prints, such as ADDR_CHANGE.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct rdma_cm_id *id;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
		fprintf(stderr, "usage: rdmacm_watch IPV4 PORT N\n");
		return 2;
	}
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&a)) {
		perror("rdmacm_watch");
		return 1;
	}
	printf("bound\n");
	fflush(stdout);
	for (int i = 0; i < atoi(argv[3]); i++) {
		if (rdma_get_cm_event(ch, &ev)) {
			perror("rdma_get_cm_event");
			return 1;
		}
		printf("event %s status %d\n", rdma_event_str(ev->event), ev->status);
		fflush(stdout);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}
