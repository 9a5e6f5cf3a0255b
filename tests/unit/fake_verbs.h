/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fake libibverbs for unit tests of lib/ (no HCA, no kernel): the verbs
 * lib/ calls are defined here, and the executable's definitions win over
 * libibverbs.so's at link time (fake_verbs.calls counts the calls, so a
 * test can check it is these that run).  Devices "fake0", "fake1", ...
 * with one port each whose GID and LID are those of the fake fabric's CA
 * of the same name (fake_umad.h); QPs keep every modify they get, check
 * the RESET -> INIT -> RTR -> RTS order, and a modify to one state can be
 * made to fail.
 *
 * fake_cma_setup() builds the whole environment of a lib/ test: a fake
 * fabric of two hosts (h1 = fake0, LID 5, GID fe80::5, 198.18.0.1 and
 * 2001:db8::1; h2 = fake1, LID 6, GID fe80::6, 198.18.0.2, 2001:db8::2),
 * the address file listing them (MADCM_ADDR_FILE), and cma_test_env().
 * Call it before any rdma_* call; one per process (lib/ initialises once).
 */
#ifndef MADCM_TESTS_FAKE_VERBS_H
#define MADCM_TESTS_FAKE_VERBS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "tests/unit/fake_umad.h"

#define FAKE_VERBS_MAX_DEVS 4
#define FAKE_QP_MAX_MODS 16
#define FAKE_QP_MAX_MCAST 8
#define FAKE_MAX_RD_ATOM 16 /* max_qp_rd_atom and max_qp_init_rd_atom */

struct fake_qp_mod {
	struct ibv_qp_attr attr;
	int mask;
	enum ibv_qp_state from;
	int rc; /* what the fake returned */
};

struct fake_qp {
	struct ibv_qp qp; /* first: lib/ sees &qp */
	struct fake_qp_mod mods[FAKE_QP_MAX_MODS];
	unsigned nmods;
	unsigned bad_transitions; /* modifies outside RESET->INIT->RTR->RTS, ->ERR, ->RESET */
	/* Multicast groups attached (ibv_attach_mcast), in order. */
	struct {
		union ibv_gid gid;
		uint16_t lid;
	} mcast[FAKE_QP_MAX_MCAST];
	unsigned nmcast;
};

struct fake_verbs_state {
	pthread_mutex_t lock;
	int ndevs;
	unsigned calls; /* every call of a fake verb */
	/* Failure injection: the next fail_count modifies of fail_qp (NULL:
	 * any QP) to fail_state return fail_errno. */
	struct ibv_qp *fail_qp;
	int fail_state;
	int fail_errno;
	unsigned fail_count;
	unsigned qps, cqs, channels, pds, srqs; /* live objects */
	uint32_t next_qpn;
	/* Every port's P_Key table (ibv_query_pkey); npkeys 0: 0xffff alone. */
	uint16_t pkeys[8];
	int npkeys;
};

extern struct fake_verbs_state fake_verbs;

/* Devices matching the fabric's CAs (called by fake_cma_setup). */
void fake_verbs_init(const struct fake_fabric *fb);
static inline struct fake_qp *fake_qp_of(struct ibv_qp *qp)
{
	return (struct fake_qp *)qp;
}
/* A copy of a QP's recorded modifies (taken under the fake's lock). */
unsigned fake_qp_mods(struct ibv_qp *qp, struct fake_qp_mod *out, unsigned max);
/* How many groups the QP has attached (taken under the fake's lock). */
unsigned fake_qp_nmcast(struct ibv_qp *qp);
void fake_verbs_fail_modify(struct ibv_qp *qp, enum ibv_qp_state state, int err, unsigned count);

/* The fabric lib/ runs on, set up by fake_cma_setup(). */
extern struct fake_fabric fake_cma_fabric;
int fake_cma_setup(void);
void fake_cma_teardown(void);
/* cmocka group setup and teardown: fake_cma_setup() alone. */
int fake_cma_group_setup(void **state);
int fake_cma_group_teardown(void **state);
/* cmocka group setup and teardown: fake_cma_setup() and fake_cma_channel. */
extern struct rdma_event_channel *fake_cma_channel;
int fake_cma_channel_setup(void **state);
int fake_cma_channel_teardown(void **state);
/* The next event of a channel, waiting at most timeout_ms; NULL if none came. */
struct rdma_cm_event *fake_cma_next_event(struct rdma_event_channel *ch, int timeout_ms);
#define FAKE_CMA_WAIT_MS 10000

#endif
