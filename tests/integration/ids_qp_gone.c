/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * ids_qp_gone IPV4 PORT BIND_PORT: connect an RC id (its QP made by
 * rdma_create_qp) to IPV4:PORT, disconnect, free the QP with
 * ibv_destroy_qp as rping does (the id keeps a dangling id->qp until
 * rdma_destroy_id), then bind a second id to BIND_PORT, which makes the
 * library write its id table (`madcm ids`) again with the first id in it,
 * say "bound", and wait for a line on stdin before destroying both.
 * For tests/integration/madcm_ids.sh: under AddressSanitizer that table
 * must not read the freed QP.  Exit 0, or 1 on an error.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	int ok;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		return -1;
	}
	ok = ev->event == want;
	if (!ok)
		fprintf(stderr, "got %s, wanted %s\n", rdma_event_str(ev->event),
			rdma_event_str(want));
	rdma_ack_cm_event(ev);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst = {.sin_family = AF_INET}, src = {.sin_family = AF_INET};
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct rdma_conn_param p = {
	    .responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id, *other;
	struct ibv_cq *cq;
	char line[16];

	if (argc != 4 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) {
		fprintf(stderr, "usage: ids_qp_gone IPV4 PORT BIND_PORT\n");
		return 2;
	}
	dst.sin_port = htons((uint16_t)atoi(argv[2]));
	src.sin_port = htons((uint16_t)atoi(argv[3]));
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 10000) ||
	    expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED) || rdma_resolve_route(id, 10000) ||
	    expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) {
		perror("ids_qp_gone: route");
		return 1;
	}
	/* Its own CQ, as rping's: the library frees only those it made, in rdma_destroy_qp. */
	cq = ibv_create_cq(id->verbs, 2, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = cq;
	if (!cq || rdma_create_qp(id, NULL, &qa) || rdma_connect(id, &p) ||
	    expect(ch, RDMA_CM_EVENT_ESTABLISHED) || rdma_disconnect(id) ||
	    expect(ch, RDMA_CM_EVENT_DISCONNECTED)) {
		perror("ids_qp_gone: connect");
		return 1;
	}
	if (ibv_destroy_qp(id->qp)) {
		perror("ibv_destroy_qp");
		return 1;
	}
	if (rdma_create_id(ch, &other, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(other, (struct sockaddr *)&src)) {
		perror("ids_qp_gone: bind");
		return 1;
	}
	printf("bound\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	rdma_destroy_id(other);
	rdma_destroy_id(id);
	ibv_destroy_cq(cq);
	rdma_destroy_event_channel(ch);
	return 0;
}
