/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * LD_PRELOAD shim over libibumad for `madcm torture` on Soft-RoCE
 * (tests/kernel/guest/torture.sh).  madcm torture is written for IB: it
 * takes its path from the SA and sends its CM MADs without a GRH.  RoCE has
 * no SA, and every MAD needs a GRH.  This shim, below madcm's umad layer
 * (mad/umad_real.c calls libibumad dynamically), gives it both; madcm itself
 * is not changed.  Everything comes from the environment:
 *
 *   MADCM_TT_SGID        our GID as umad_get_port reports it (the REQs'
 *                        PrimaryLocalPortGID), e.g. ::ffff:10.77.0.1
 *   MADCM_TT_SGID_INDEX  the GID table index of that GID (RoCE v2), the
 *                        source of every GRH
 *   MADCM_TT_DGID        the target's GID: the GRH's destination and the
 *                        DGID of the faked PathRecord
 *   MADCM_TT_SRC_IP      IPv4 written into the IP CM header's source
 *                        address of REQs and SIDR_REQs when it is 0.0.0.0
 *                        (the kernel's rdma_cm refuses a zero source on RoCE:
 *                        validate_ipv4_net_dev)
 *
 * SA: umad_get_port reports SM LID 1 (RoCE has 0, and madcm's SA client then
 * gives up at once); a SubnAdm Get(PathRecord) is not sent but answered here
 * with GetResp: the query's SGID/DGID, LIDs 0, P_Key 0xffff, SL 0, MTU 1024
 * (rxe on a 1500-byte netdev), reversible.  The answer is delivered through
 * umad_recv; umad_get_fd returns an epoll fd holding the real umad fd and an
 * eventfd that is readable while an answer waits.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <infiniband/umad.h>

#define NPORT 16
#define MAD 256

static struct {
	int real, ep, ev;
	int pending; /* a faked answer waits in ans */
	ib_user_mad_t hdr;
	uint8_t ans[MAD];
} ports[NPORT];

static int (*r_get_port)(const char *, int, umad_port_t *);
static int (*r_get_fd)(int);
static int (*r_send)(int, int, void *, int, int, int);
static int (*r_recv)(int, void *, int *, int);
static int (*r_close_port)(int);

static void init(void)
{
	if (r_send)
		return;
	r_get_port = dlsym(RTLD_NEXT, "umad_get_port");
	r_get_fd = dlsym(RTLD_NEXT, "umad_get_fd");
	r_recv = dlsym(RTLD_NEXT, "umad_recv");
	r_send = dlsym(RTLD_NEXT, "umad_send");
	r_close_port = dlsym(RTLD_NEXT, "umad_close_port");
}

/* A port id is reused after a close (the SA query's port, then torture's). */
int umad_close_port(int portid)
{
	init();
	if (portid >= 0 && portid < NPORT && ports[portid].ep) {
		close(ports[portid].ep);
		close(ports[portid].ev);
		memset(&ports[portid], 0, sizeof(ports[portid]));
	}
	return r_close_port(portid);
}

static int gid_env(const char *name, uint8_t gid[16])
{
	const char *s = getenv(name);

	return s && inet_pton(AF_INET6, s, gid) == 1;
}

int umad_get_port(const char *ca, int portnum, umad_port_t *port)
{
	uint8_t g[16];
	int rc;

	init();
	rc = r_get_port(ca, portnum, port);
	if (rc < 0 || !gid_env("MADCM_TT_SGID", g))
		return rc;
	memcpy(&port->gid_prefix, g, 8);
	memcpy(&port->port_guid, g + 8, 8);
	if (!port->sm_lid)
		port->sm_lid = 1;
	return rc;
}

int umad_get_fd(int portid)
{
	struct epoll_event e = {.events = EPOLLIN};

	init();
	if (portid < 0 || portid >= NPORT)
		return r_get_fd(portid);
	if (!ports[portid].ep) {
		ports[portid].real = r_get_fd(portid);
		if (ports[portid].real < 0)
			return ports[portid].real;
		ports[portid].ep = epoll_create1(EPOLL_CLOEXEC);
		ports[portid].ev = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		e.data.fd = ports[portid].real;
		epoll_ctl(ports[portid].ep, EPOLL_CTL_ADD, ports[portid].real, &e);
		e.data.fd = ports[portid].ev;
		epoll_ctl(ports[portid].ep, EPOLL_CTL_ADD, ports[portid].ev, &e);
	}
	return ports[portid].ep;
}

/* A faked GetResp(PathRecord) for the Get in mad. */
static void fake_path(int portid, int agent, const uint8_t *mad)
{
	uint8_t *a = ports[portid].ans, *rec = a + 56;
	uint64_t one = 1;

	memcpy(a, mad, MAD);
	a[3] = 0x81;	       /* GetResp */
	a[4] = a[5] = 0;       /* status */
	memset(a + 24, 0, 12); /* no RMPP */
	a[44] = 0;
	a[45] = 64 / 8; /* AttributeOffset: 64 bytes */
	/* rec: the query's SGID (24) and DGID (8) stay */
	memset(rec + 40, 0, 4); /* DLID, SLID 0 */
	rec[44] = rec[45] = rec[46] = 0;
	rec[47] = 64;		  /* flow label 0, hop limit */
	rec[48] = 0;		  /* TClass */
	rec[49] = 0x81;		  /* reversible, 1 path */
	rec[50] = rec[51] = 0xff; /* P_Key */
	rec[52] = rec[53] = 0;	  /* QoS class, SL 0 */
	rec[54] = 0x80 | 3;	  /* MTU exactly 1024 */
	rec[55] = 0x80 | 3;	  /* rate exactly 10 Gb/s */
	rec[56] = 0x80 | 16;	  /* packet lifetime */
	rec[57] = 0;
	memset(&ports[portid].hdr, 0, sizeof(ports[portid].hdr));
	ports[portid].hdr.agent_id = (uint32_t)agent;
	ports[portid].hdr.length = MAD;
	ports[portid].hdr.addr.qpn = htonl(1);
	ports[portid].hdr.addr.qkey = htonl(0x80010000u);
	ports[portid].hdr.addr.lid = htons(1);
	ports[portid].pending = 1;
	umad_get_fd(portid);
	if (write(ports[portid].ev, &one, sizeof(one)) < 0)
		ports[portid].pending = 1;
}

int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms, int retries)
{
	ib_user_mad_t *u = umad;
	uint8_t *m = u->data, g[16];
	const char *ip = getenv("MADCM_TT_SRC_IP");
	const char *idx = getenv("MADCM_TT_SGID_INDEX");
	struct in_addr src;
	int pd = 0;

	init();
	if (portid >= 0 && portid < NPORT && length >= 24 && m[1] == 0x03 && m[3] == 0x01 &&
	    m[16] == 0x00 && m[17] == 0x35 && getenv("MADCM_TT_SGID")) {
		fake_path(portid, agentid, m);
		return 0;
	}
	if (length >= 24 && m[1] == 0x07 && !u->addr.grh_present && gid_env("MADCM_TT_DGID", g)) {
		u->addr.grh_present = 1;
		memcpy(u->addr.gid, g, 16);
		u->addr.gid_index = idx ? (uint8_t)atoi(idx) : 0;
		u->addr.hop_limit = 64;
		u->addr.traffic_class = 0;
		u->addr.flow_label = 0;
	}
	if (m[1] == 0x07 && m[16] == 0x00 && m[17] == 0x10)
		pd = 24 + 140; /* REQ private data */
	else if (m[1] == 0x07 && m[16] == 0x00 && m[17] == 0x17)
		pd = 24 + 16; /* SIDR_REQ private data */
	if (pd && ip && length >= pd + 36 && (m[pd + 1] >> 4) == 4 &&
	    !memcmp(m + pd + 16, "\0\0\0\0", 4) && inet_pton(AF_INET, ip, &src) == 1)
		memcpy(m + pd + 16, &src, 4);
	return r_send(portid, agentid, umad, length, timeout_ms, retries);
}

int umad_recv(int portid, void *umad, int *length, int timeout_ms)
{
	uint64_t v;

	init();
	if (portid >= 0 && portid < NPORT && ports[portid].pending) {
		ib_user_mad_t *u = umad;

		ports[portid].pending = 0;
		if (read(ports[portid].ev, &v, sizeof(v)) < 0)
			v = 0;
		if (*length < MAD) {
			*length = MAD;
			errno = ENOSPC;
			return -ENOSPC;
		}
		*u = ports[portid].hdr;
		memcpy(u->data, ports[portid].ans, MAD);
		*length = MAD;
		return (int)u->agent_id;
	}
	return r_recv(portid, umad, length, timeout_ms);
}
