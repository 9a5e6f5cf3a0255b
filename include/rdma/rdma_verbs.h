/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * madcm: the librdmacm verbs helpers (rdma/rdma_verbs.h).
 *
 * Written for madcm from the documented librdmacm API.  Apart from the
 * shared receive queue calls, everything here is an inline wrapper around
 * libibverbs working on the QP, CQs, PD and SRQ an rdma_cm_id carries, so
 * programs never import these names from librdmacm.so.1.  Calls that fail
 * return -1 with errno set, as librdmacm's do.
 */
#if !defined(RDMA_VERBS_H)
#define RDMA_VERBS_H

#include <assert.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Turn a verbs return value (0 or an errno value) into 0 or -1 with errno. */
static inline int rdma_seterrno(int ret)
{
	if (ret == 0)
		return 0;
	errno = ret;
	return -1;
}

/* Shared receive queues, created on the id's PD and kept in id->srq. */
int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr);
void rdma_destroy_srq(struct rdma_cm_id *id);

/* Memory registration on id->pd: for sends/receives, RDMA read, RDMA write. */
static inline struct ibv_mr *rdma_reg_msgs(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE);
}

static inline struct ibv_mr *rdma_reg_read(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE);
}

static inline struct ibv_mr *rdma_reg_write(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
}

static inline int rdma_dereg_mr(struct ibv_mr *mr)
{
	return rdma_seterrno(ibv_dereg_mr(mr));
}

/* madcm's own helpers for the calls below; not part of the librdmacm API. */
static inline void madcm_rdma_sge(struct ibv_sge *sge, void *addr, size_t length, struct ibv_mr *mr)
{
	sge->addr = (uint64_t)(uintptr_t)addr;
	sge->length = (uint32_t)length;
	sge->lkey = mr != NULL ? mr->lkey : 0; /* no MR: inline data */
}

static inline int madcm_rdma_post_send_wr(struct rdma_cm_id *id, struct ibv_send_wr *wr,
					  void *context, struct ibv_sge *sgl, int nsge,
					  enum ibv_wr_opcode opcode, int flags)
{
	struct ibv_send_wr *bad_wr;

	wr->wr_id = (uintptr_t)context;
	wr->next = NULL;
	wr->sg_list = sgl;
	wr->num_sge = nsge;
	wr->opcode = opcode;
	wr->send_flags = (unsigned int)flags;
	return rdma_seterrno(ibv_post_send(id->qp, wr, &bad_wr));
}

static inline int madcm_rdma_post_rdma(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
				       int nsge, enum ibv_wr_opcode opcode, int flags,
				       uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_send_wr wr;

	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;
	return madcm_rdma_post_send_wr(id, &wr, context, sgl, nsge, opcode, flags);
}

/*
 * Posting with scatter/gather lists.  context comes back as the work
 * completion's wr_id.  Receives go to id->srq when the id has one.
 */
static inline int rdma_post_recvv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
				  int nsge)
{
	struct ibv_recv_wr wr, *bad_wr;
	int ret;

	wr.wr_id = (uintptr_t)context;
	wr.next = NULL;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	if (id->srq != NULL)
		ret = ibv_post_srq_recv(id->srq, &wr, &bad_wr);
	else
		ret = ibv_post_recv(id->qp, &wr, &bad_wr);
	return rdma_seterrno(ret);
}

static inline int rdma_post_sendv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
				  int nsge, int flags)
{
	struct ibv_send_wr wr;

	return madcm_rdma_post_send_wr(id, &wr, context, sgl, nsge, IBV_WR_SEND, flags);
}

static inline int rdma_post_readv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
				  int nsge, int flags, uint64_t remote_addr, uint32_t rkey)
{
	return madcm_rdma_post_rdma(id, context, sgl, nsge, IBV_WR_RDMA_READ, flags, remote_addr,
				    rkey);
}

static inline int rdma_post_writev(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
				   int nsge, int flags, uint64_t remote_addr, uint32_t rkey)
{
	return madcm_rdma_post_rdma(id, context, sgl, nsge, IBV_WR_RDMA_WRITE, flags, remote_addr,
				    rkey);
}

/*
 * Posting one buffer.  A receive or an RDMA read needs the buffer's MR (the
 * receive buffer must lie inside it); a send or an RDMA write may pass a
 * NULL MR for inline data.
 */
static inline int rdma_post_recv(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				 struct ibv_mr *mr)
{
	struct ibv_sge sge;

	assert((uint8_t *)addr >= (uint8_t *)mr->addr &&
	       (uint8_t *)addr + length <= (uint8_t *)mr->addr + mr->length);
	madcm_rdma_sge(&sge, addr, length, mr);
	return rdma_post_recvv(id, context, &sge, 1);
}

static inline int rdma_post_send(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				 struct ibv_mr *mr, int flags)
{
	struct ibv_sge sge;

	madcm_rdma_sge(&sge, addr, length, mr);
	return rdma_post_sendv(id, context, &sge, 1, flags);
}

static inline int rdma_post_read(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				 struct ibv_mr *mr, int flags, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge sge;

	madcm_rdma_sge(&sge, addr, length, mr);
	return rdma_post_readv(id, context, &sge, 1, flags, remote_addr, rkey);
}

static inline int rdma_post_write(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				  struct ibv_mr *mr, int flags, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge sge;

	madcm_rdma_sge(&sge, addr, length, mr);
	return rdma_post_writev(id, context, &sge, 1, flags, remote_addr, rkey);
}

/* A datagram send to remote_qpn through ah, with the RDMA CM's Q_Key. */
static inline int rdma_post_ud_send(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				    struct ibv_mr *mr, int flags, struct ibv_ah *ah,
				    uint32_t remote_qpn)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	madcm_rdma_sge(&sge, addr, length, mr);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	return madcm_rdma_post_send_wr(id, &wr, context, &sge, 1, IBV_WR_SEND, flags);
}

/*
 * Wait for one completion on cq: poll, arm the CQ, poll again (a completion
 * may have arrived before the arm), then block on the completion channel.
 * Returns the number of completions (1), or -1 with errno set.
 */
static inline int madcm_rdma_get_comp(struct rdma_cm_id *id, struct ibv_cq *cq,
				      struct ibv_comp_channel *channel, struct ibv_wc *wc)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int ret;

	for (;;) {
		ret = ibv_poll_cq(cq, 1, wc);
		if (ret != 0)
			break;
		ret = ibv_req_notify_cq(cq, 0);
		if (ret != 0)
			return rdma_seterrno(ret);
		ret = ibv_poll_cq(cq, 1, wc);
		if (ret != 0)
			break;
		ret = ibv_get_cq_event(channel, &ev_cq, &ev_ctx);
		if (ret != 0)
			return ret; /* -1, errno set by libibverbs */
		assert(ev_cq == cq && ev_ctx == id);
		ibv_ack_cq_events(cq, 1);
	}
	return ret > 0 ? ret : rdma_seterrno(ret);
}

/* One completion of id->send_cq / id->recv_cq, waiting for it if needed. */
static inline int rdma_get_send_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	return madcm_rdma_get_comp(id, id->send_cq, id->send_cq_channel, wc);
}

static inline int rdma_get_recv_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	return madcm_rdma_get_comp(id, id->recv_cq, id->recv_cq_channel, wc);
}

#ifdef __cplusplus
}
#endif

#endif /* RDMA_VERBS_H */
