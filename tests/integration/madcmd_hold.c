/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcmd_hold: a librdmacm program for the madcmd tests (madcmd.sh), on
 * the public API only.
 *
 *   madcmd_hold server PORT N     accept N connections (an RC QP each),
 *                                 print "established N", then wait until
 *                                 all N are DISCONNECTED: "disconnected N",
 *                                 exit 0 (connections that fail during
 *                                 the handshake are destroyed, not counted)
 *   madcmd_hold client ADDR PORT N
 *                                 connect N ids to ADDR:PORT, print
 *                                 "connected N", then hold them until
 *                                 killed (or a DEVICE_REMOVAL: "removal",
 *                                 exit 3; a DISCONNECTED: "disconnected",
 *                                 exit 4)
 *   madcmd_hold client ADDR PORT N exit
 *                                 the same, but return from main once
 *                                 connected, destroying nothing (the
 *                                 library's exit hook disconnects them)
 *   madcmd_hold join ADDR GROUP
 *                                 join multicast GROUP from ADDR (a UDP
 *                                 id), print "joined", and return from
 *                                 main without leaving
 *   madcmd_hold bind ADDR PORT [hold|listen]
 *                                 rdma_bind_addr: "bound PORT" (and with
 *                                 `hold` keep it until killed) or
 *                                 "bind: ERRNO-NAME", exit 1; with
 *                                 `listen` rdma_listen too: "listening
 *                                 PORT", held until killed, or
 *                                 "listen: ERRNO-NAME", exit 1
 * Every wait has a timeout (60 s): a lost event fails, never hangs.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rdma/rdma_cma.h>

static struct rdma_event_channel *ch;

static struct rdma_cm_event *next_event(void)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, 60000) != 1) {
		fprintf(stderr, "no event in 60 s\n");
		exit(2);
	}
	if (rdma_get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		exit(2);
	}
	return ev;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};

	if (rdma_create_qp(id, NULL, &qa)) {
		perror("rdma_create_qp");
		exit(2);
	}
}

static const char *errno_name(int e)
{
	switch (e) {
	case EADDRINUSE:
		return "EADDRINUSE";
	case EADDRNOTAVAIL:
		return "EADDRNOTAVAIL";
	case EACCES:
		return "EACCES";
	default:
		return strerror(e);
	}
}

static void addr_of(const char *host, int port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *res;

	if (getaddrinfo(host, NULL, &hints, &res)) {
		fprintf(stderr, "bad address %s\n", host);
		exit(2);
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port); /* same offset in v6 */
}

static int server(int port, int n)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct rdma_cm_id *lid;
	int est = 0, disc = 0;

	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&sin) || rdma_listen(lid, 1024)) {
		perror("listen");
		return 2;
	}
	printf("listening\n");
	fflush(stdout);
	while (disc < n) {
		struct rdma_cm_event *ev = next_event();
		struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1};

		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			make_qp(ev->id);
			if (rdma_accept(ev->id, &cp)) {
				perror("rdma_accept");
				rdma_ack_cm_event(ev); /* what it holds goes back before exit */
				return 2;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (++est == n) {
				printf("established %d\n", est);
				fflush(stdout);
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			disc++;
			break;
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_UNREACHABLE: {
			/* A client gone mid-handshake (madcmd_faults.sh kills its madcmd). */
			struct rdma_cm_id *id = ev->id;

			rdma_ack_cm_event(ev);
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			continue;
		}
		default:
			fprintf(stderr, "server: %s\n", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			return 2;
		}
		rdma_ack_cm_event(ev);
	}
	printf("disconnected %d\n", disc);
	return 0;
}

static int client(const char *host, int port, int n, bool leave)
{
	struct sockaddr_storage dst;
	int conn = 0;

	addr_of(host, port, &dst);
	for (int i = 0; i < n; i++) {
		struct rdma_cm_id *id;

		if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000)) {
			perror("resolve");
			return 2;
		}
	}
	for (;;) {
		struct rdma_cm_event *ev = next_event();
		struct rdma_conn_param cp = {
		    .responder_resources = 1, .initiator_depth = 1, .retry_count = 7};
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type t = ev->event;

		rdma_ack_cm_event(ev);
		switch (t) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (rdma_resolve_route(id, 2000)) {
				perror("rdma_resolve_route");
				return 2;
			}
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			make_qp(id);
			if (rdma_connect(id, &cp)) {
				perror("rdma_connect");
				return 2;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (++conn == n) {
				printf("connected %d\n", conn);
				fflush(stdout);
				if (leave)
					return 0;
			}
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			printf("removal\n");
			return 3;
		case RDMA_CM_EVENT_DISCONNECTED:
			printf("disconnected\n");
			return 4;
		default:
			fprintf(stderr, "client: %s\n", rdma_event_str(t));
			return 2;
		}
	}
}

static int join(const char *host, const char *group)
{
	struct sockaddr_storage src, grp;
	struct rdma_cm_id *id;

	addr_of(host, 0, &src);
	addr_of(group, 0, &grp);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ||
	    rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&grp, 2000)) {
		perror("resolve");
		return 2;
	}
	for (;;) {
		struct rdma_cm_event *ev = next_event();
		enum rdma_cm_event_type t = ev->event;

		rdma_ack_cm_event(ev);
		switch (t) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (rdma_join_multicast(id, (struct sockaddr *)&grp, NULL)) {
				perror("rdma_join_multicast");
				return 2;
			}
			break;
		case RDMA_CM_EVENT_MULTICAST_JOIN:
			printf("joined\n");
			fflush(stdout);
			return 0;
		default:
			fprintf(stderr, "join: %s\n", rdma_event_str(t));
			return 2;
		}
	}
}

static int bind_only(const char *host, int port, bool hold, bool listen)
{
	struct sockaddr_storage a;
	struct rdma_cm_id *id;

	addr_of(host, port, &a);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		return 2;
	}
	if (rdma_bind_addr(id, (struct sockaddr *)&a)) {
		printf("bind: %s\n", errno_name(errno));
		return 1;
	}
	if (listen && rdma_listen(id, 16)) {
		printf("listen: %s\n", errno_name(errno));
		return 1;
	}
	printf("%s %u\n", listen ? "listening" : "bound", ntohs(rdma_get_src_port(id)));
	fflush(stdout);
	hold |= listen;
	while (hold)
		pause();
	return 0;
}

int main(int argc, char **argv)
{
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rdma_create_event_channel");
		return 2;
	}
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), atoi(argv[3]));
	if ((argc == 5 || (argc == 6 && !strcmp(argv[5], "exit"))) && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), atoi(argv[4]), argc == 6);
	if (argc == 4 && !strcmp(argv[1], "join"))
		return join(argv[2], argv[3]);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "bind"))
		return bind_only(argv[2], atoi(argv[3]), argc == 5 && strcmp(argv[4], "listen"),
				 argc == 5 && !strcmp(argv[4], "listen"));
	fprintf(stderr,
		"usage: madcmd_hold server PORT N | client ADDR PORT N [exit] | join ADDR GROUP | "
		"bind ADDR PORT [hold|listen]\n");
	return 2;
}
