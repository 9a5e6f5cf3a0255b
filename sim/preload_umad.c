/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The libibumad API served by fabsimd, for any process started with
 * LD_PRELOAD=libfabsim.so.  Every umad_open_port() is one STREAM
 * connection to the daemon, and that socket is the umad fd: pollable,
 * and closing it (or dying) releases its agents at once, like closing
 * /dev/infiniband/umadN.  Semantics follow rdma-core's libibumad on top
 * of the kernel's ib_umad (errors, ENOSPC + length, ETIMEDOUT status).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "sim/client.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_FILES 4096

struct ufile {
	int fd;
	int ca, port;
	uint32_t stream_id;
	bool agents[32];
	pthread_mutex_t rlock;
	uint8_t *pending; /* a message umad_recv could not hand out (ENOSPC) */
	size_t pending_len;
};

static struct ufile *files[MAX_FILES];
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static int debug_level;

static struct ufile *file_get(int fd)
{
	struct ufile *f;

	if (fd < 0 || fd >= MAX_FILES)
		return NULL;
	pthread_mutex_lock(&files_lock);
	f = files[fd];
	pthread_mutex_unlock(&files_lock);
	return f;
}

static int host_info(struct fsp_host_info *hi)
{
	size_t len = sizeof(*hi);
	int ret = fsc_call(FSP_HOST_INFO, NULL, 0, hi, &len);

	if (ret < 0)
		return ret;
	return len == sizeof(*hi) ? 0 : -EPROTO;
}

/* "fabsimN" (or NULL: the first CA) -> N */
static int ca_index(const char *name)
{
	struct fsp_host_info hi;
	int ret = host_info(&hi);

	if (ret)
		return ret;
	if (!name || !*name)
		return hi.num_cas ? 0 : -ENODEV;
	for (uint32_t i = 0; i < hi.num_cas && i < 8; i++)
		if (!strcmp(hi.cas[i].name, name))
			return (int)i;
	return -ENODEV;
}

static int port_info(int ca, int port, struct fsp_port_info *pi)
{
	struct fsp_port_ref r = {.ca = (uint32_t)ca, .port = (uint32_t)port};
	size_t len = sizeof(*pi);
	int ret = fsc_call(FSP_PORT_INFO, &r, sizeof(r), pi, &len);

	if (ret < 0)
		return ret;
	return len == sizeof(*pi) ? 0 : -EPROTO;
}

EXPORT int umad_init(void)
{
	return 0;
}

EXPORT int umad_done(void)
{
	return 0;
}

EXPORT int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max)
{
	struct fsp_host_info hi;
	int ret = host_info(&hi);
	int n = 0;

	if (ret)
		return ret;
	for (uint32_t i = 0; i < hi.num_cas && i < 8 && n < max; i++, n++)
		snprintf(cas[n], UMAD_CA_NAME_LEN, "%s", hi.cas[i].name);
	return n;
}

static void fill_port(const char *ca_name, const struct fsp_port_info *pi, umad_port_t *port)
{
	memset(port, 0, sizeof(*port));
	snprintf(port->ca_name, sizeof(port->ca_name), "%s", ca_name);
	port->portnum = (int)pi->port;
	port->base_lid = pi->lid;
	port->lmc = pi->lmc;
	port->sm_lid = pi->sm_lid;
	port->sm_sl = pi->sm_sl;
	port->state = pi->state;
	port->phys_state = pi->phys_state;
	port->rate = pi->rate;
	port->capmask = htonl(pi->capmask);
	port->gid_prefix = htobe64(pi->gid_prefix);
	port->port_guid = htobe64(pi->port_guid);
	port->pkeys_size = pi->num_pkeys;
	port->pkeys = calloc(pi->num_pkeys ? pi->num_pkeys : 1, sizeof(uint16_t));
	if (port->pkeys)
		for (uint32_t i = 0; i < pi->num_pkeys && i < FSP_MAX_PKEYS; i++)
			port->pkeys[i] = pi->pkeys[i];
	snprintf(port->link_layer, sizeof(port->link_layer), "InfiniBand");
}

EXPORT int umad_get_port(const char *ca_name, int portnum, umad_port_t *port)
{
	struct fsp_port_info pi;
	struct fsp_host_info hi;
	int ca, ret;

	if (!port)
		return -EINVAL;
	ca = ca_index(ca_name);
	if (ca < 0)
		return ca;
	ret = port_info(ca, portnum, &pi);
	if (ret)
		return ret;
	if (host_info(&hi))
		return -ENODEV;
	fill_port(hi.cas[ca].name, &pi, port);
	return 0;
}

EXPORT int umad_release_port(umad_port_t *port)
{
	if (!port)
		return -EINVAL;
	free(port->pkeys);
	port->pkeys = NULL;
	return 0;
}

EXPORT int umad_get_ca(const char *ca_name, umad_ca_t *ca)
{
	struct fsp_host_info hi;
	int idx = ca_index(ca_name), ret;

	if (!ca)
		return -EINVAL;
	if (idx < 0)
		return idx;
	ret = host_info(&hi);
	if (ret)
		return ret;
	memset(ca, 0, sizeof(*ca));
	snprintf(ca->ca_name, sizeof(ca->ca_name), "%s", hi.cas[idx].name);
	ca->node_type = hi.cas[idx].node_type;
	ca->numports = (int)hi.cas[idx].num_ports;
	snprintf(ca->fw_ver, sizeof(ca->fw_ver), "2.42.5000");
	snprintf(ca->ca_type, sizeof(ca->ca_type), "fabsim");
	snprintf(ca->hw_ver, sizeof(ca->hw_ver), "0x1");
	ca->node_guid = htobe64(hi.cas[idx].node_guid);
	ca->system_guid = htobe64(hi.cas[idx].system_guid);
	for (int p = 1; p <= ca->numports && p < UMAD_CA_MAX_PORTS; p++) {
		struct fsp_port_info pi;

		if (port_info(idx, p, &pi))
			continue;
		ca->ports[p] = malloc(sizeof(umad_port_t));
		if (ca->ports[p])
			fill_port(ca->ca_name, &pi, ca->ports[p]);
	}
	return 0;
}

EXPORT int umad_release_ca(umad_ca_t *ca)
{
	if (!ca)
		return -EINVAL;
	for (int i = 0; i < UMAD_CA_MAX_PORTS; i++) {
		if (!ca->ports[i])
			continue;
		umad_release_port(ca->ports[i]);
		free(ca->ports[i]);
		ca->ports[i] = NULL;
	}
	return 0;
}

EXPORT int umad_get_ca_portguids(const char *ca_name, __be64 *portguids, int max)
{
	umad_ca_t ca;
	int ret = umad_get_ca(ca_name, &ca), n = 0;

	if (ret)
		return ret;
	if (ca.numports + 1 > max) {
		umad_release_ca(&ca);
		return -ENOMEM;
	}
	for (int i = 0; i <= ca.numports; i++)
		portguids[n++] = ca.ports[i] ? ca.ports[i]->port_guid : 0;
	umad_release_ca(&ca);
	return n;
}

EXPORT struct umad_device_node *umad_get_ca_device_list(void)
{
	struct fsp_host_info hi;
	struct umad_device_node *head = NULL, **tail = &head;

	if (host_info(&hi)) {
		errno = ENODEV;
		return NULL;
	}
	for (uint32_t i = 0; i < hi.num_cas && i < 8; i++) {
		struct umad_device_node *n = calloc(1, sizeof(*n));

		if (!n)
			break;
		n->ca_name = strdup(hi.cas[i].name);
		*tail = n;
		tail = &n->next;
	}
	return head;
}

EXPORT void umad_free_ca_device_list(struct umad_device_node *head)
{
	while (head) {
		struct umad_device_node *n = head->next;

		free((void *)head->ca_name);
		free(head);
		head = n;
	}
}

EXPORT int umad_sort_ca_device_list(struct umad_device_node **head, size_t size)
{
	return 0; /* already in fabsimN order */
}

/* ---- the SM role: the issm path, opened through open() ---- */

#define ISSM_PREFIX "fabsim-issm:"

EXPORT int umad_get_issm_path(const char *ca_name, int portnum, char path[], int max)
{
	int ca = ca_index(ca_name);

	if (ca < 0)
		return ca;
	if (snprintf(path, (size_t)max, "%s/" ISSM_PREFIX "%d:%d:%s", fsc_dir(), ca, portnum,
		     fsc_host()) >= max)
		return -ENAMETOOLONG;
	return 0;
}

static int issm_open(const char *path)
{
	const char *b = strrchr(path, '/');
	struct fsp_port_ref r;
	int fd, ret, ca, port;

	b = b ? b + 1 : path;
	if (sscanf(b + strlen(ISSM_PREFIX), "%d:%d", &ca, &port) != 2) {
		errno = ENOENT;
		return -1;
	}
	r.ca = (uint32_t)ca;
	r.port = (uint32_t)port;
	fd = fsc_open(FSP_KIND_ISSM, NULL);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	ret = fsc_call_fd(fd, FSP_ISSM, &r, sizeof(r), NULL, NULL);
	if (ret < 0) {
		close(fd);
		errno = ret == -EBUSY ? EAGAIN : -ret;
		return -1;
	}
	return fd; /* held until close(): the daemon drops IsSM then */
}

static bool is_issm(const char *path)
{
	const char *b;

	if (!path)
		return false;
	b = strrchr(path, '/');
	b = b ? b + 1 : path;
	return !strncmp(b, ISSM_PREFIX, strlen(ISSM_PREFIX));
}

typedef int (*open_fn)(const char *, int, ...);

static int real_open(const char *name, const char *path, int flags, mode_t mode)
{
	open_fn fn = (open_fn)dlsym(RTLD_NEXT, name);

	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(path, flags, mode);
}

EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (is_issm(path))
		return issm_open(path);
	return real_open("open", path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (is_issm(path))
		return issm_open(path);
	return real_open("open64", path, flags, mode);
}

EXPORT int __open_2(const char *path, int flags)
{
	if (is_issm(path))
		return issm_open(path);
	return real_open("open", path, flags, 0);
}

EXPORT int __open64_2(const char *path, int flags)
{
	if (is_issm(path))
		return issm_open(path);
	return real_open("open64", path, flags, 0);
}

/* ---- ports and agents ---- */

EXPORT int umad_open_port(const char *ca_name, int portnum)
{
	struct fsp_port_ref r;
	struct fsp_attach_rep rep;
	size_t rl = sizeof(rep);
	struct ufile *f;
	int ca = ca_index(ca_name), fd, ret;

	if (ca < 0)
		return ca;
	if (portnum < 0)
		return -EINVAL;
	fd = fsc_open(FSP_KIND_STREAM, NULL);
	if (fd < 0)
		return fd;
	r.ca = (uint32_t)ca;
	r.port = (uint32_t)portnum;
	ret = fsc_call_fd(fd, FSP_ATTACH, &r, sizeof(r), &rep, &rl);
	if (ret < 0 || fd >= MAX_FILES) {
		close(fd);
		return ret < 0 ? ret : -EMFILE;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	f->ca = ca;
	f->port = (int)rep.port;
	f->stream_id = rep.stream_id;
	pthread_mutex_init(&f->rlock, NULL);
	pthread_mutex_lock(&files_lock);
	files[fd] = f;
	pthread_mutex_unlock(&files_lock);
	return fd;
}

EXPORT int umad_close_port(int fd)
{
	struct ufile *f = file_get(fd);

	if (!f)
		return -EINVAL;
	pthread_mutex_lock(&files_lock);
	files[fd] = NULL;
	pthread_mutex_unlock(&files_lock);
	close(fd);
	free(f->pending);
	free(f);
	return 0;
}

EXPORT int umad_get_fd(int fd)
{
	return file_get(fd) ? fd : -EINVAL;
}

static int do_register(int fd, uint8_t cls, uint8_t ver, uint8_t rmpp, bool use_oui, uint32_t oui,
		       const uint64_t mask[2])
{
	struct ufile *f = file_get(fd);
	struct fsp_register r;
	int ret;

	if (!f)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.stream_id = f->stream_id;
	r.mgmt_class = cls;
	r.class_version = ver;
	r.rmpp_version = rmpp;
	r.use_oui = use_oui;
	r.oui = oui;
	if (mask) {
		r.method_mask[0] = mask[0];
		r.method_mask[1] = mask[1];
	}
	ret = fsc_call(FSP_REGISTER, &r, sizeof(r), NULL, NULL);
	if (ret >= 0 && ret < 32)
		f->agents[ret] = true;
	return ret;
}

EXPORT int umad_register(int fd, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
			 long method_mask[16 / sizeof(long)])
{
	uint64_t m[2] = {0, 0};
	int ret;

	if (method_mask)
		memcpy(m, method_mask, sizeof(m));
	ret =
	    do_register(fd, (uint8_t)mgmt_class, (uint8_t)mgmt_version, rmpp_version, false, 0, m);
	if (ret < 0)
		errno = -ret;
	return ret;
}

EXPORT int umad_register_oui(int fd, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
			     long method_mask[16 / sizeof(long)])
{
	uint64_t m[2] = {0, 0};
	int ret;

	if (mgmt_class < 0x30 || mgmt_class > 0x4f || !oui)
		return -EINVAL;
	if (method_mask)
		memcpy(m, method_mask, sizeof(m));
	ret = do_register(fd, (uint8_t)mgmt_class, 1, rmpp_version, true,
			  (uint32_t)oui[0] << 16 | (uint32_t)oui[1] << 8 | oui[2], m);
	if (ret < 0)
		errno = -ret;
	return ret;
}

EXPORT int umad_register2(int fd, struct umad_reg_attr *attr, uint32_t *agent_id)
{
	int ret;

	if (!attr || !agent_id)
		return EINVAL;
	ret = do_register(fd, attr->mgmt_class, attr->mgmt_class_version,
			  (attr->flags & UMAD_USER_RMPP) ? 0 : attr->rmpp_version,
			  attr->mgmt_class >= 0x30 && attr->mgmt_class <= 0x4f, attr->oui,
			  attr->method_mask);
	if (ret < 0)
		return -ret;
	*agent_id = (uint32_t)ret;
	return 0;
}

EXPORT int umad_unregister(int fd, int agentid)
{
	struct ufile *f = file_get(fd);
	struct fsp_unregister r;
	int ret;

	if (!f)
		return -EINVAL;
	r.stream_id = f->stream_id;
	r.agent_id = (uint32_t)agentid;
	ret = fsc_call(FSP_UNREGISTER, &r, sizeof(r), NULL, NULL);
	if (!ret && agentid >= 0 && agentid < 32)
		f->agents[agentid] = false;
	return ret;
}

/* ---- MAD buffers ---- */

EXPORT void *umad_get_mad(void *umad)
{
	return (uint8_t *)umad + sizeof(struct ib_user_mad);
}

EXPORT size_t umad_size(void)
{
	return sizeof(struct ib_user_mad);
}

EXPORT int umad_status(void *umad)
{
	return (int)((struct ib_user_mad *)umad)->status;
}

EXPORT ib_mad_addr_t *umad_get_mad_addr(void *umad)
{
	return &((struct ib_user_mad *)umad)->addr;
}

EXPORT int umad_set_grh_net(void *umad, void *mad_addr)
{
	struct ib_user_mad *m = umad;
	struct ib_mad_addr *a = mad_addr;

	if (a) {
		m->addr.grh_present = 1;
		memcpy(m->addr.gid, a->gid, 16);
		m->addr.flow_label = a->flow_label;
		m->addr.hop_limit = a->hop_limit;
		m->addr.traffic_class = a->traffic_class;
	} else {
		m->addr.grh_present = 0;
	}
	return 0;
}

EXPORT int umad_set_grh(void *umad, void *mad_addr)
{
	struct ib_user_mad *m = umad;
	struct ib_mad_addr *a = mad_addr;

	umad_set_grh_net(umad, mad_addr);
	if (a) /* this one takes the flow label in host order */
		m->addr.flow_label = htonl((uint32_t)a->flow_label);
	return 0;
}

EXPORT int umad_set_addr_net(void *umad, __be16 dlid, __be32 dqp, int sl, __be32 qkey)
{
	struct ib_user_mad *m = umad;

	m->addr.qpn = dqp;
	m->addr.lid = dlid;
	m->addr.qkey = qkey;
	m->addr.sl = (uint8_t)sl;
	return 0;
}

EXPORT int umad_set_addr(void *umad, int dlid, int dqp, int sl, int qkey)
{
	return umad_set_addr_net(umad, htons((uint16_t)dlid), htonl((uint32_t)dqp), sl,
				 htonl((uint32_t)qkey));
}

EXPORT int umad_set_pkey(void *umad, int pkey_index)
{
	((struct ib_user_mad *)umad)->addr.pkey_index = (uint16_t)pkey_index;
	return 0;
}

EXPORT int umad_get_pkey(void *umad)
{
	return ((struct ib_user_mad *)umad)->addr.pkey_index;
}

/* ---- send / receive ---- */

EXPORT int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms, int retries)
{
	struct ufile *f = file_get(fd);
	struct ib_user_mad *m = umad;
	int ret;

	if (!f || !umad || agentid < 0 || agentid >= 32 || !f->agents[agentid] || length < 36) {
		errno = EINVAL;
		return -EINVAL;
	}
	if ((size_t)length > FSP_MSG_MAX - sizeof(*m)) {
		errno = EMSGSIZE;
		return -EMSGSIZE;
	}
	m->agent_id = (uint32_t)agentid;
	m->timeout_ms = (uint32_t)timeout_ms;
	m->retries = (uint32_t)retries;
	m->length = (uint32_t)(sizeof(*m) + (size_t)length);
	ret = fsc_send(fd, FSP_MAD_SEND, 0, 0, 0, umad, sizeof(*m) + (size_t)length);
	if (ret) {
		errno = EIO;
		return -EIO;
	}
	return 0;
}

static void unlock_mutex(void *m)
{
	pthread_mutex_unlock(m);
}

/* next MAD_RECV message of f, or the pending one; caller holds rlock */
static int next_msg(struct ufile *f, int timeout_ms)
{
	while (!f->pending) {
		struct fsp_hdr h;
		void *body;
		ssize_t n = fsc_recv(f->fd, &h, &body, timeout_ms);

		if (n < 0)
			return (int)n;
		if (h.type != FSP_MAD_RECV || (size_t)n < sizeof(struct ib_user_mad)) {
			free(body);
			continue;
		}
		f->pending = body;
		f->pending_len = (size_t)n;
	}
	return 0;
}

EXPORT int umad_recv(int fd, void *umad, int *length, int timeout_ms)
{
	struct ufile *f = file_get(fd);
	struct ib_user_mad *m = umad;
	size_t dlen;
	int ret;

	if (!f || !umad || !length || *length < 0) {
		errno = EINVAL;
		return -EINVAL;
	}
	pthread_mutex_lock(&f->rlock);
	/* umad_recv is a cancellation point (OpenSM cancels its receiver
	 * thread there): never leave rlock held */
	pthread_cleanup_push(unlock_mutex, &f->rlock);
	ret = next_msg(f, timeout_ms < 0 ? -1 : timeout_ms);
	pthread_cleanup_pop(0);
	if (ret) {
		pthread_mutex_unlock(&f->rlock);
		if (ret == -EAGAIN)
			ret = -EWOULDBLOCK;
		else if (ret != -ETIMEDOUT)
			ret = -EIO;
		errno = -ret;
		return ret;
	}
	dlen = f->pending_len - sizeof(*m);
	if ((size_t)*length < dlen) {
		/* like ib_umad: the header tells the size, the MAD stays queued */
		memcpy(m, f->pending, sizeof(*m));
		*length = (int)dlen;
		pthread_mutex_unlock(&f->rlock);
		errno = ENOSPC;
		return -ENOSPC;
	}
	memcpy(m, f->pending, f->pending_len);
	*length = (int)dlen;
	free(f->pending);
	f->pending = NULL;
	f->pending_len = 0;
	pthread_mutex_unlock(&f->rlock);
	return (int)m->agent_id;
}

EXPORT int umad_poll(int fd, int timeout_ms)
{
	struct ufile *f = file_get(fd);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;

	if (!f)
		return -EINVAL;
	if (f->pending)
		return 0;
	r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return -errno;
	if (r == 0) {
		errno = ETIMEDOUT;
		return -ETIMEDOUT;
	}
	return 0;
}

/* ---- debugging helpers ---- */

EXPORT int umad_debug(int level)
{
	if (level >= 0)
		debug_level = level;
	return debug_level;
}

EXPORT void umad_addr_dump(ib_mad_addr_t *addr)
{
	if (!addr)
		return;
	fprintf(stderr, "qpn %u qkey 0x%x lid %u sl %u path_bits %u grh %u pkey_index %u\n",
		ntohl(addr->qpn), ntohl(addr->qkey), ntohs(addr->lid), addr->sl, addr->path_bits,
		addr->grh_present, addr->pkey_index);
}

EXPORT void umad_dump(void *umad)
{
	struct ib_user_mad *m = umad;

	fprintf(stderr, "agent id %u status %u timeout %u\n", m->agent_id, m->status,
		m->timeout_ms);
	umad_addr_dump(&m->addr);
}

EXPORT const char *umad_class_str(uint8_t mgmt_class)
{
	switch (mgmt_class) {
	case 0x01:
		return "Subn";
	case 0x81:
		return "SubnDirectedRoute";
	case 0x03:
		return "SubnAdm";
	case 0x04:
		return "Perf";
	case 0x05:
		return "BM";
	case 0x06:
		return "DevMgt";
	case 0x07:
		return "ComMgt";
	case 0x08:
		return "SNMP";
	case 0x21:
		return "CongestionManagment";
	default:
		return "<unknown>";
	}
}

EXPORT const char *umad_method_str(uint8_t mgmt_class, uint8_t method)
{
	switch (method) {
	case 0x01:
		return "Get";
	case 0x02:
		return "Set";
	case 0x81:
		return "GetResp";
	case 0x03:
		return "Send";
	case 0x05:
		return "Trap";
	case 0x06:
		return "Report";
	case 0x86:
		return "ReportResp";
	case 0x07:
		return "TrapRepress";
	case 0x12:
		return "GetTable";
	case 0x92:
		return "GetTableResp";
	case 0x15:
		return "Delete";
	case 0x95:
		return "DeleteResp";
	default:
		return "<unknown>";
	}
}

EXPORT const char *umad_attribute_str(uint8_t mgmt_class, __be16 attr_id)
{
	return "<unknown>";
}

EXPORT const char *umad_common_mad_status_str(__be16 status)
{
	return ntohs(status) ? "error" : "Success";
}

EXPORT const char *umad_sa_mad_status_str(__be16 status)
{
	return ntohs(status) ? "error" : "Success";
}
