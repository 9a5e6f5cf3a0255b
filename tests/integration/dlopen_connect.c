/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * dlopen_connect LIBRARY server PORT
 * dlopen_connect LIBRARY client ADDR PORT
 *
 * A program that links nothing of librdmacm, as a plugin or a language
 * binding loads it: LIBRARY (librdmacm.so.1, found on LD_LIBRARY_PATH
 * under `madcm run`) is dlopen()ed with RTLD_NOW | RTLD_LOCAL after start,
 * each rdma_* call is resolved with dlsym, and one connection is made
 * without a QP (the application's own QP number in the private data's
 * place, CONNECT_RESPONSE then rdma_establish on the client): private data
 * both ways, ESTABLISHED on the server, then the client disconnects and
 * both see DISCONNECTED.  Then dlclose(), which must leave the library
 * loaded (linked -z nodelete): its threads run on to the exit.  Prints
 * "loaded PATH" for librdmacm (its real path),
 * "listening" (server), "connected", "disconnected", "closed", and exits
 * 0; 1 on any error, after at most a minute.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define REQ_DATA "dlopen-req"
#define REP_DATA "dlopen-rep"
#define BOUND_S 60

/* Only the types come from rdma_cma.h: every call goes through these. */
static struct {
	typeof(rdma_create_event_channel) *create_event_channel;
	typeof(rdma_destroy_event_channel) *destroy_event_channel;
	typeof(rdma_create_id) *create_id;
	typeof(rdma_destroy_id) *destroy_id;
	typeof(rdma_bind_addr) *bind_addr;
	typeof(rdma_listen) *listen;
	typeof(rdma_resolve_addr) *resolve_addr;
	typeof(rdma_resolve_route) *resolve_route;
	typeof(rdma_connect) *connect;
	typeof(rdma_accept) *accept;
	typeof(rdma_establish) *establish;
	typeof(rdma_disconnect) *disconnect;
	typeof(rdma_get_cm_event) *get_cm_event;
	typeof(rdma_ack_cm_event) *ack_cm_event;
	typeof(rdma_event_str) *event_str;
} cm;
static void *handle;

static int fail(const char *what)
{
	fprintf(stderr, "dlopen_connect: %s\n", what);
	return 1;
}

/* Say where SONAME was loaded from (its real path); -1 when it was not. */
static int print_loaded(const char *soname)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
	struct link_map *lm;
	char real[PATH_MAX];
	int rc = -1;

	if (!h)
		return -1;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && realpath(lm->l_name, real)) {
		printf("loaded %s\n", real);
		rc = 0;
	}
	dlclose(h);
	return rc;
}

static int load(const char *lib)
{
	void *h;

	if (dlopen("librdmacm.so.1", RTLD_NOW | RTLD_NOLOAD))
		return fail("librdmacm.so.1 is loaded before dlopen()");
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen_connect: dlopen: %s\n", dlerror());
		return 1;
	}
#define SYM(f)                                                                                     \
	do {                                                                                       \
		*(void **)&cm.f = dlsym(h, "rdma_" #f);                                            \
		if (!cm.f)                                                                         \
			return fail("no rdma_" #f);                                                \
	} while (0)
	SYM(create_event_channel);
	SYM(destroy_event_channel);
	SYM(create_id);
	SYM(destroy_id);
	SYM(bind_addr);
	SYM(listen);
	SYM(resolve_addr);
	SYM(resolve_route);
	SYM(connect);
	SYM(accept);
	SYM(establish);
	SYM(disconnect);
	SYM(get_cm_event);
	SYM(ack_cm_event);
	SYM(event_str);
#undef SYM
	if (print_loaded("librdmacm.so.1"))
		return fail("dlinfo");
	handle = h;
	return 0;
}

/* Still mapped after dlclose(): -z nodelete. */
static int unload(void)
{
	void *h;

	if (dlclose(handle)) {
		fprintf(stderr, "dlopen_connect: dlclose: %s\n", dlerror());
		return 1;
	}
	h = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return fail("librdmacm.so.1 was unloaded by dlclose()");
	dlclose(h);
	printf("closed\n");
	return 0;
}

/*
 * The next event on ch, which must be `want`; its private data (up to
 * cap bytes, NUL-terminated) into data when data is not NULL.
 */
static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		  struct rdma_cm_id **id, char *data, size_t cap)
{
	struct rdma_cm_event *ev;
	int rc = 0;

	if (cm.get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		return 1;
	}
	if (ev->event != want || ev->status) {
		fprintf(stderr, "dlopen_connect: %s (status %d), want %s\n",
			cm.event_str(ev->event), ev->status, cm.event_str(want));
		rc = 1;
	}
	if (id)
		*id = ev->id;
	if (data) {
		size_t n = ev->param.conn.private_data ? ev->param.conn.private_data_len : 0;

		n = n < cap - 1 ? n : cap - 1;
		memcpy(data, ev->param.conn.private_data, n);
		data[n] = '\0';
	}
	cm.ack_cm_event(ev);
	return rc;
}

static int server(struct rdma_event_channel *ch, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct rdma_conn_param p = {.private_data = REP_DATA,
				    .private_data_len = sizeof(REP_DATA),
				    .qp_num = 0x1234,
				    .responder_resources = 1,
				    .initiator_depth = 1,
				    .rnr_retry_count = 7};
	struct rdma_cm_id *lid, *id;
	char data[64];

	if (cm.create_id(ch, &lid, NULL, RDMA_PS_TCP) || cm.bind_addr(lid, (struct sockaddr *)&a) ||
	    cm.listen(lid, 1)) {
		perror("dlopen_connect: listen");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	if (expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &id, data, sizeof(data)))
		return 1;
	if (strcmp(data, REQ_DATA))
		return fail("the request's private data differ");
	if (cm.accept(id, &p)) {
		perror("dlopen_connect: rdma_accept");
		return 1;
	}
	if (expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL, NULL, 0))
		return 1;
	printf("connected\n");
	fflush(stdout);
	if (expect(ch, RDMA_CM_EVENT_DISCONNECTED, NULL, NULL, 0))
		return 1;
	cm.disconnect(id); /* the DREP */
	printf("disconnected\n");
	cm.destroy_id(id);
	cm.destroy_id(lid);
	return 0;
}

static int client(struct rdma_event_channel *ch, const char *addr, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct rdma_conn_param p = {.private_data = REQ_DATA,
				    .private_data_len = sizeof(REQ_DATA),
				    .qp_num = 0x5678,
				    .responder_resources = 1,
				    .initiator_depth = 1,
				    .retry_count = 7,
				    .rnr_retry_count = 7};
	struct rdma_cm_id *id;
	char data[64];

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return fail("not an IPv4 address");
	if (cm.create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    cm.resolve_addr(id, NULL, (struct sockaddr *)&a, 5000) ||
	    expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL, 0) || cm.resolve_route(id, 5000) ||
	    expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL, 0))
		return fail("address or route not resolved");
	/* No QP: CONNECT_RESPONSE, and the RTU is ours to send. */
	if (cm.connect(id, &p) ||
	    expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, NULL, data, sizeof(data)))
		return fail("not connected");
	if (strcmp(data, REP_DATA))
		return fail("the reply's private data differ");
	if (cm.establish(id))
		return fail("rdma_establish");
	printf("connected\n");
	fflush(stdout);
	if (cm.disconnect(id) || expect(ch, RDMA_CM_EVENT_DISCONNECTED, NULL, NULL, 0))
		return fail("not disconnected");
	printf("disconnected\n");
	cm.destroy_id(id);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	bool srv = argc == 4 && !strcmp(argv[2], "server");
	int rc;

	if (!srv && !(argc == 5 && !strcmp(argv[2], "client"))) {
		fprintf(stderr, "usage: dlopen_connect LIBRARY server PORT\n"
				"       dlopen_connect LIBRARY client IPV4 PORT\n");
		return 2;
	}
	alarm(BOUND_S); /* a lost event ends the test, not hangs it */
	if (load(argv[1]))
		return 1;
	ch = cm.create_event_channel();
	if (!ch)
		return fail("rdma_create_event_channel");
	rc = srv ? server(ch, atoi(argv[3])) : client(ch, argv[3], atoi(argv[4]));
	cm.destroy_event_channel(ch);
	return rc ? rc : unload();
}
