/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * A fake libibumad port for unit tests of anything built on the MAD
 * transport: sent MADs are recorded, received MADs are queued by the test.
 * One CA "fake0" with one port; attributes settable through fake_umad.port.
 */
#ifndef MADCM_TESTS_FAKE_UMAD_H
#define MADCM_TESTS_FAKE_UMAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "mad/umad_ops.h"
#include "sa/client.h"

/* MADs a queue holds and `sent` records: 4096 unless a program sets
 * fake_max_mads lower before the first fake_*_init (fuzz_madcmd keeps its
 * fabric for the whole run, and LeakSanitizer scans every byte of it). */
extern unsigned fake_max_mads;
#define FAKE_MAX_MADS fake_max_mads
#define FAKE_MAD_CAP 512

struct fake_mad {
	uint8_t mad[FAKE_MAD_CAP];
	size_t len;
	int agent;
	struct mad_addr addr;
	unsigned timeout_ms; /* kernel timeout asked for on send */
};

struct fake_umad {
	struct mad_port_attr port;
	int next_agent;
	uint8_t agent_class[64];
	int send_error;	       /* when non-zero, send() returns it */
	struct fake_mad *sent; /* what was sent, in order */
	unsigned nsent;
	struct fake_mad *rx; /* queued for recv(), in order */
	unsigned rx_head, rx_tail;
	bool open;
	int evfd; /* readable while rx has MADs */
	/* Called after each send (index into sent[]): a test's responder. */
	void (*on_send)(struct fake_umad *f, unsigned idx, void *arg);
	void *on_send_arg;
};

extern const struct mad_umad_ops fake_umad_ops;

void fake_umad_init(struct fake_umad *f);
void fake_umad_destroy(struct fake_umad *f);
/* As fake_umad_init on an initialised (or zeroed) fake, keeping its
 * buffers: a fuzz target's per-input set-up, where allocating and
 * clearing megabytes for every input was most of its time. */
void fake_umad_reset(struct fake_umad *f);
/* Queue a MAD for the transport to receive on agent `agent`. */
void fake_umad_inject(struct fake_umad *f, const void *mad, size_t len, int agent,
		      const struct mad_addr *src);
/* Build a response to sent MAD i: copy header, set R bit/method, status. */
void fake_umad_respond(struct fake_umad *f, unsigned i, uint8_t method, uint16_t status,
		       const void *data, size_t data_len, size_t data_off);

/*
 * A fake fabric for code that opens ports by CA name (lib/): CAs "fake0",
 * "fake1", ... with one port each (attributes in ca[i].port, LID 5 + i,
 * GID fe80::5+i), every open of a port its own receive queue and fd (a
 * runtime opens its port twice: CM transport and SA client), CM MADs
 * delivered by DLID to the CM agent of the port with that LID, and an SA
 * that answers every PathRecord Get with a path from the asker to the
 * port of the DGID asked for (no answer when sa_silent, or for a DGID no
 * port has), and, when asked to (sa_mcast, sa_services), MCMemberRecords
 * and ServiceRecords.  What each CA sends is also recorded in ca[i].sent.  All ops
 * run under the fabric's lock; one fabric per process (ops ctx = it).
 */
#define FAKE_FABRIC_MAX_CAS 4
#define FAKE_FABRIC_MAX_OPENS 16
#define FAKE_FABRIC_MAX_AGENTS 64
#define FAKE_FABRIC_MAX_GROUPS 16

struct fake_fabric_open {
	bool used;
	int ca;
	int evfd;
	struct fake_mad *rx;
	unsigned rx_head, rx_tail;
	bool hung; /* its CA was removed: reads fail with -ENODEV, as a hung-up umad fd's */
};

/* A multicast group of the fake SA (sa_mcast). */
struct fake_mcgroup {
	bool used;
	bool permanent;		/* kept without members (the IPoIB broadcast group) */
	struct sa_mcmember rec; /* the group's record (port_gid, join_state unused) */
	uint8_t member_state[FAKE_FABRIC_MAX_CAS]; /* JoinState of each CA's port */
};

struct fake_fabric {
	pthread_mutex_t lock;
	int ncas;
	struct fake_umad ca[FAKE_FABRIC_MAX_CAS];
	struct fake_fabric_open opens[FAKE_FABRIC_MAX_OPENS];
	struct {
		bool used;
		int open;
		uint8_t mgmt_class;
	} agents[FAKE_FABRIC_MAX_AGENTS];
	bool sa_silent;	    /* the SA answers nothing */
	int cm_agent_error; /* non-zero: registering a CM agent (class 0x07) fails with it */
	bool removed[FAKE_FABRIC_MAX_CAS]; /* fake_fabric_remove_ca */
	uint8_t packet_life_time;	   /* of the paths the SA gives (default 8) */
	unsigned sa_path_queries;	   /* PathRecord Gets seen */
	/* Called for each CM MAD sent by CA `from` before delivery; false drops it. */
	bool (*cm_filter)(struct fake_fabric *fb, int from, const uint8_t *mad, size_t len,
			  void *arg);
	void *cm_filter_arg;
	/*
	 * With sa_mcast the SA also answers MCMemberRecords: Set joins the
	 * asking port (creating the group from the request, an MLID from
	 * 0xc000 and for a zero MGID an SA-assigned one; a Q_Key in the mask
	 * that differs from an existing group's is refused), Delete leaves
	 * (the group goes with its last member unless permanent), GetTable
	 * lists the groups (those of the MGID when the mask has it).  Off by
	 * default: other tests answer MCMemberRecords themselves.
	 */
	bool sa_mcast;
	uint16_t sa_mc_set_status; /* non-zero: every Set is refused with this MAD status */
	unsigned sa_mc_sets, sa_mc_deletes, sa_mc_gets; /* MCMemberRecord requests seen */
	uint8_t sa_mc_last_set_state;			/* JoinState of the last Set */
	struct fake_mcgroup groups[FAKE_FABRIC_MAX_GROUPS];
	uint16_t next_mlid;
	/*
	 * With sa_services the SA grants every ServiceRecord Set and Delete
	 * (the addresses listeners publish), which otherwise wait out the SA
	 * client's timeouts.
	 */
	bool sa_services;
	unsigned sa_sr_sets, sa_sr_deletes;
	/*
	 * With sa_sr_hold, ServiceRecord Sets and Deletes are kept unanswered
	 * until fake_fabric_sa_release; sa_sr_log has each one's method as it
	 * came ('S' Set, 'D' Delete), in order, up to its size.
	 */
	bool sa_sr_hold;
	char sa_sr_log[64];
	unsigned sa_sr_nlog;
	struct {
		int open, agent;
		uint8_t mad[MAD_SIZE];
	} sa_sr_held[8];
	unsigned sa_sr_nheld;
};

extern const struct mad_umad_ops fake_fabric_ops;

void fake_fabric_init(struct fake_fabric *fb, int ncas);
void fake_fabric_destroy(struct fake_fabric *fb);
/* How many CM MADs of this attribute ID (e.g. 0x0012 REJ) CA `ca` sent. */
unsigned fake_fabric_count_cm(struct fake_fabric *fb, int ca, uint16_t attr_id);
/*
 * CA `ca` goes away (removed) or comes back: while removed it is not
 * listed, queried or opened, and every open made before hangs up (its fd
 * polls readable, its reads fail with -ENODEV); opens made after it came
 * back are new ones.
 */
void fake_fabric_remove_ca(struct fake_fabric *fb, int ca, bool removed);
/* Answer the ServiceRecord requests held (sa_sr_hold) in order: how many. */
unsigned fake_fabric_sa_release(struct fake_fabric *fb);
/* A group the SA knows from the start (rec.mlid 0: one is given): 0, or -ENOSPC. */
int fake_fabric_add_group(struct fake_fabric *fb, const struct sa_mcmember *rec, bool permanent);
/* A copy of the group of this MGID: true, or false when the SA has none. */
bool fake_fabric_group(struct fake_fabric *fb, const uint8_t mgid[16], struct fake_mcgroup *out);

#endif
