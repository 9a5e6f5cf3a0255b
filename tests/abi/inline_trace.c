/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Behaviour probe of the inline helpers of rdma/rdma_verbs.h and
 * infiniband/ib.h.  It is built twice, against rdma-core's headers and
 * against madcm's, with fake verbs underneath (no libibverbs), and prints
 * every call the helpers make and what they return; tests/abi/abi.sh
 * diffs the two traces.  Only work-request fields librdmacm sets are
 * printed: the rest are left uninitialised by both.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_verbs.h>
#include <infiniband/ib.h>

/* What the fake verbs return next, and a call counter. */
static int next_ret[16];
static int n_ret, pos_ret;
static int next_errno;
static struct ibv_cq *event_cq;
static void *event_ctx;
static char buf[4096];

/* Addresses inside buf print as offsets, so that the traces do not depend on ASLR. */
static uint64_t rel(uint64_t addr)
{
	uint64_t base = (uintptr_t)buf;

	return addr >= base && addr < base + sizeof(buf) ? addr - base : addr;
}

static void script(int n, const int *rets)
{
	memcpy(next_ret, rets, sizeof(*rets) * n);
	n_ret = n;
	pos_ret = 0;
}

static int scripted(void)
{
	return pos_ret < n_ret ? next_ret[pos_ret++] : 0;
}

static void print_sges(const struct ibv_sge *sg, int n)
{
	for (int i = 0; i < n; i++)
		printf("  sge[%d] addr %#" PRIx64 " length %" PRIu32 " lkey %#" PRIx32 "\n", i,
		       rel(sg[i].addr), sg[i].length, sg[i].lkey);
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	printf(" post_send qp %u wr_id %#" PRIx64 " next %p num_sge %d opcode %d flags %#x\n",
	       qp->qp_num, wr->wr_id, (void *)wr->next, wr->num_sge, (int)wr->opcode,
	       wr->send_flags);
	print_sges(wr->sg_list, wr->num_sge);
	if (wr->opcode == IBV_WR_RDMA_READ || wr->opcode == IBV_WR_RDMA_WRITE)
		printf("  rdma remote_addr %#" PRIx64 " rkey %#" PRIx32 "\n",
		       wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
	if (qp->qp_type == IBV_QPT_UD)
		printf("  ud ah %p remote_qpn %#" PRIx32 " remote_qkey %#" PRIx32 "\n",
		       (void *)wr->wr.ud.ah, wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
	*bad = NULL;
	return scripted();
}

static void print_recv(const char *what, unsigned int num, struct ibv_recv_wr *wr)
{
	printf(" %s %u wr_id %#" PRIx64 " next %p num_sge %d\n", what, num, wr->wr_id,
	       (void *)wr->next, wr->num_sge);
	print_sges(wr->sg_list, wr->num_sge);
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	print_recv("post_recv qp", qp->qp_num, wr);
	*bad = NULL;
	return scripted();
}

static int fake_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	print_recv("post_srq_recv srq", srq->handle, wr);
	*bad = NULL;
	return scripted();
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int ret = scripted();

	printf(" poll_cq cq %u n %d -> %d\n", cq->handle, n, ret);
	if (ret > 0)
		wc->wr_id = 0x77;
	return ret;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	int ret = scripted();

	printf(" req_notify_cq cq %u solicited_only %d -> %d\n", cq->handle, solicited_only, ret);
	return ret;
}

/* The exported libibverbs functions the helpers call, faked. */
struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	static struct ibv_mr mr;

	printf(" reg_mr pd %u addr %#" PRIx64 " length %zu access %#x\n", pd->handle,
	       rel((uintptr_t)addr), length, access);
	return &mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	printf(" reg_mr_iova2 pd %u addr %#" PRIx64 " length %zu iova %#" PRIx64 " access %#x\n",
	       pd->handle, rel((uintptr_t)addr), length, rel(iova), access);
	return NULL;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	int ret = scripted();

	printf(" dereg_mr lkey %#x -> %d\n", mr->lkey, ret);
	return ret;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	int ret = scripted();

	printf(" get_cq_event channel fd %d -> %d\n", channel->fd, ret);
	*cq = event_cq;
	*cq_context = event_ctx;
	if (ret)
		errno = next_errno;
	return ret;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	printf(" ack_cq_events cq %u n %u\n", cq->handle, nevents);
}

#define SHOW(call)                                                                                 \
	do {                                                                                       \
		errno = 0;                                                                         \
		int ret_ = (call);                                                                 \
		printf("%s = %d errno %d\n", #call, ret_, errno);                                  \
	} while (0)

int main(void)
{
	static struct ibv_context ctx;
	static struct ibv_pd pd;
	static struct ibv_qp qp, udqp;
	static struct ibv_srq srq;
	static struct ibv_cq scq, rcq;
	static struct ibv_comp_channel sch, rch;
	static struct ibv_mr mr;
	static struct rdma_cm_id id;
	struct ibv_sge sgl[2];
	struct ibv_wc wc;
	struct ibv_ah *ah = (struct ibv_ah *)(uintptr_t)0xa4;
	void *cookie = (void *)(uintptr_t)0xc0c0;

	ctx.ops.post_send = fake_post_send;
	ctx.ops.post_recv = fake_post_recv;
	ctx.ops.post_srq_recv = fake_post_srq_recv;
	ctx.ops.poll_cq = fake_poll_cq;
	ctx.ops.req_notify_cq = fake_req_notify_cq;
	pd.context = qp.context = udqp.context = srq.context = scq.context = rcq.context = &ctx;
	pd.handle = 3;
	qp.qp_num = 0x11;
	qp.qp_type = IBV_QPT_RC;
	udqp.qp_num = 0x12;
	udqp.qp_type = IBV_QPT_UD;
	srq.handle = 9;
	scq.handle = 21;
	rcq.handle = 22;
	sch.fd = 31;
	rch.fd = 32;
	mr.addr = buf;
	mr.length = sizeof(buf);
	mr.lkey = 0x1234;
	id.pd = &pd;
	id.qp = &qp;
	id.send_cq = &scq;
	id.recv_cq = &rcq;
	id.send_cq_channel = &sch;
	id.recv_cq_channel = &rch;
	sgl[0].addr = 0x1000;
	sgl[0].length = 10;
	sgl[0].lkey = 1;
	sgl[1].addr = 0x2000;
	sgl[1].length = 20;
	sgl[1].lkey = 2;

	SHOW(rdma_seterrno(0));
	SHOW(rdma_seterrno(EINVAL));
	SHOW(rdma_reg_msgs(&id, buf, 100) != NULL);
	SHOW(rdma_reg_read(&id, buf, 200) != NULL);
	SHOW(rdma_reg_write(&id, buf, 300) != NULL);
	script(1, (int[]){0});
	SHOW(rdma_dereg_mr(&mr));
	script(1, (int[]){EBUSY});
	SHOW(rdma_dereg_mr(&mr));

	SHOW(rdma_post_recvv(&id, cookie, sgl, 2));
	SHOW(rdma_post_sendv(&id, cookie, sgl, 2, IBV_SEND_SIGNALED));
	SHOW(rdma_post_readv(&id, cookie, sgl, 2, 0, 0xfeed0000, 0xabc));
	SHOW(rdma_post_writev(&id, cookie, sgl, 1, IBV_SEND_FENCE, 0xbeef0000, 0xdef));
	SHOW(rdma_post_recv(&id, cookie, buf + 8, 64, &mr));
	SHOW(rdma_post_send(&id, cookie, buf, 16, &mr, IBV_SEND_SIGNALED));
	SHOW(rdma_post_send(&id, cookie, buf, 16, NULL, IBV_SEND_INLINE));
	SHOW(rdma_post_read(&id, cookie, buf, 32, &mr, 0, 0x10000, 0x55));
	SHOW(rdma_post_write(&id, cookie, buf, 48, &mr, IBV_SEND_SIGNALED, 0x20000, 0x66));
	SHOW(rdma_post_write(&id, cookie, buf, 48, NULL, IBV_SEND_INLINE, 0x20000, 0x66));
	script(1, (int[]){ENOMEM});
	SHOW(rdma_post_send(&id, cookie, buf, 16, &mr, 0));
	script(1, (int[]){EAGAIN});
	SHOW(rdma_post_recv(&id, cookie, buf, 16, &mr));
	id.srq = &srq;
	SHOW(rdma_post_recv(&id, cookie, buf, 16, &mr));
	script(1, (int[]){ENOSPC});
	SHOW(rdma_post_recvv(&id, cookie, sgl, 1));
	id.srq = NULL;
	id.qp = &udqp;
	SHOW(rdma_post_ud_send(&id, cookie, buf, 40, &mr, IBV_SEND_SIGNALED, ah, 0x99));
	SHOW(rdma_post_ud_send(&id, cookie, buf, 40, NULL, 0, ah, 0x98));
	id.qp = &qp;

	/* A completion at once; after the re-poll; after an event; errors. */
	script(1, (int[]){1});
	SHOW(rdma_get_send_comp(&id, &wc));
	script(3, (int[]){0, 0, 1});
	SHOW(rdma_get_recv_comp(&id, &wc));
	event_cq = &scq;
	event_ctx = &id;
	script(5, (int[]){0, 0, 0, 0, 1});
	SHOW(rdma_get_send_comp(&id, &wc));
	event_cq = &rcq;
	script(9, (int[]){0, 0, 0, 0, 0, 0, 0, 0, 1});
	SHOW(rdma_get_recv_comp(&id, &wc));
	script(2, (int[]){0, EIO});
	SHOW(rdma_get_send_comp(&id, &wc));
	script(4, (int[]){0, 0, 0, -1});
	next_errno = EINTR;
	SHOW(rdma_get_recv_comp(&id, &wc));
	script(1, (int[]){-2});
	SHOW(rdma_get_send_comp(&id, &wc));
	script(3, (int[]){0, 0, -3});
	SHOW(rdma_get_recv_comp(&id, &wc));

	SHOW((int)((char *)rdma_get_local_addr(&id) - (char *)&id));
	SHOW((int)((char *)rdma_get_peer_addr(&id) - (char *)&id));

	/* infiniband/ib.h */
	struct ib_addr a, b;

	memset(&a, 0, sizeof(a));
	SHOW(ib_addr_any(&a));
	SHOW(ib_addr_loopback(&a));
	ib_addr_set(&a, 0, 0, 0, htobe32(1));
	SHOW(ib_addr_any(&a));
	SHOW(ib_addr_loopback(&a));
	ib_addr_set(&b, htobe32(0xfe800000), 0, htobe32(0x00020003), htobe32(1));
	SHOW(ib_addr_loopback(&b));
	SHOW(ib_addr_any(&b));
	SHOW(ib_addr_cmp(&a, &b) < 0);
	SHOW(ib_addr_cmp(&b, &a) > 0);
	SHOW(ib_addr_cmp(&b, &b));
	SHOW((int)b.sib_addr8[0]);
	SHOW((int)be16toh(b.sib_addr16[4]));
	SHOW(be64toh(b.sib_subnet_prefix) == 0xfe80000000000000ULL);
	SHOW(be64toh(b.sib_interface_id) == 0x0002000300000001ULL);
	SHOW(b.sib_raw == b.ib_u.uib_addr8);
	return 0;
}
