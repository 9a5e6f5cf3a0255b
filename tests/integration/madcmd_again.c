/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd_again IPV4 PORT: a program that outlives its madcmd.  It listens
 * on IPV4:PORT and says "listening"; when the daemon goes away it gets
 * DEVICE_REMOVAL, says "removal", destroys its id and tries to listen
 * again every 200 ms (up to 60 s), as a server that survives a device
 * reset does.  Once it listens again ("listening again") it connects a
 * new id to its own listener, through the new daemon, says "connected
 * again" when both ends are ESTABLISHED, disconnects and exits 0 (1 on
 * an error, with what failed).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

static struct rdma_event_channel *ch;
static struct sockaddr_in addr = {.sin_family = AF_INET};

static void die(const char *what)
{
	fprintf(stderr, "madcmd_again: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The next event on the channel, of this type (others are errors). */
static void expect(enum rdma_cm_event_type type, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != type) {
		fprintf(stderr, "madcmd_again: %s (status %d), expected %s\n",
			rdma_event_str(ev->event), ev->status, rdma_event_str(type));
		exit(1);
	}
	if (id)
		*id = ev->id;
	rdma_ack_cm_event(ev);
}

static int try_listen(struct rdma_cm_id **out)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return -1;
	if (rdma_bind_addr(id, (struct sockaddr *)&addr) || rdma_listen(id, 4)) {
		int e = errno;

		rdma_destroy_id(id);
		errno = e;
		return -1;
	}
	*out = id;
	return 0;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC,
	};

	if (rdma_create_qp(id, NULL, &qa))
		die("rdma_create_qp");
}

int main(int argc, char **argv)
{
	struct rdma_cm_id *listen, *active, *passive;
	struct rdma_conn_param cp = {.retry_count = 7, .rnr_retry_count = 7};
	int tries = 0;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
		fprintf(stderr, "usage: madcmd_again IPV4 PORT\n");
		return 2;
	}
	addr.sin_port = htons((uint16_t)atoi(argv[2]));
	setvbuf(stdout, NULL, _IOLBF, 0);
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (try_listen(&listen))
		die("listen");
	printf("listening\n");
	expect(RDMA_CM_EVENT_DEVICE_REMOVAL, NULL);
	printf("removal\n");
	if (rdma_destroy_id(listen))
		die("rdma_destroy_id");
	while (try_listen(&listen)) {
		if (++tries > 300)
			die("listen again");
		usleep(200000);
	}
	printf("listening again (after %d tries)\n", tries);
	if (rdma_create_id(ch, &active, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(active, NULL, (struct sockaddr *)&addr, 2000))
		die("rdma_resolve_addr");
	expect(RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	if (rdma_resolve_route(active, 2000))
		die("rdma_resolve_route");
	expect(RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
	make_qp(active);
	if (rdma_connect(active, &cp))
		die("rdma_connect");
	expect(RDMA_CM_EVENT_CONNECT_REQUEST, &passive);
	make_qp(passive);
	if (rdma_accept(passive, &cp))
		die("rdma_accept");
	/* The two ESTABLISHED, in either order. */
	for (int n = 0; n < 2; n++)
		expect(RDMA_CM_EVENT_ESTABLISHED, NULL);
	printf("connected again\n");
	if (rdma_disconnect(active))
		die("rdma_disconnect");
	for (int n = 0; n < 2; n++)
		expect(RDMA_CM_EVENT_DISCONNECTED, NULL);
	rdma_destroy_qp(active);
	rdma_destroy_qp(passive);
	rdma_destroy_id(active);
	rdma_destroy_id(passive);
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(ch);
	return 0;
}
