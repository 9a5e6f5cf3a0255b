/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The few libibumad calls the MAD transport makes, behind a table of
 * function pointers, so that unit tests drive the transport with a fake
 * port (no fabric, no kernel) and the library runs on the real one.
 *
 * Every call returns 0 (or a non-negative id) on success and -errno on
 * failure; none blocks except where noted.
 */
#ifndef MADCM_MAD_UMAD_OPS_H
#define MADCM_MAD_UMAD_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "mad/addr.h"

#define MAD_CA_NAME_MAX 20 /* UMAD_CA_NAME_LEN */
#define MAD_MAX_CAS 32

/* What a port says about itself and about the subnet manager. */
struct mad_port_attr {
	char ca_name[MAD_CA_NAME_MAX];
	int portnum;
	uint16_t lid;
	uint8_t lmc;
	uint16_t sm_lid;
	uint8_t sm_sl;
	uint8_t state;	   /* 1 Down, 2 Init, 3 Armed, 4 Active */
	uint8_t gid[16];   /* GID index 0: subnet prefix + port GUID */
	uint16_t pkey0;	   /* P_Key at index 0 (default 0xffff) */
	unsigned numports; /* ports of the CA (for enumeration) */
};

struct mad_umad_ops {
	/* CA names on this host; returns how many, or -errno. */
	int (*list_cas)(void *ctx, char names[][MAD_CA_NAME_MAX], int max);
	/* Fresh attributes of a port (re-read, never cached). */
	int (*query_port)(void *ctx, const char *ca, int port, struct mad_port_attr *out);
	/* Open a port; returns a port id. */
	int (*open_port)(void *ctx, const char *ca, int port);
	void (*close_port)(void *ctx, int portid);
	/* A pollable fd, readable when a MAD is waiting. */
	int (*get_fd)(void *ctx, int portid);
	/*
	 * Register an agent for (class, version) with the methods in
	 * method_mask (bit m of word m/32) as unsolicited receiver.  Returns
	 * the agent id the kernel chose.
	 */
	int (*register_agent)(void *ctx, int portid, uint8_t mgmt_class, uint8_t class_version,
			      uint8_t rmpp_version, const uint32_t method_mask[4]);
	int (*unregister_agent)(void *ctx, int portid, int agent);
	/*
	 * Queue one MAD for sending; never waits (a RoCE port's umad
	 * write sleeps in the kernel: umad_tx.h keeps that off the caller,
	 * or off the loop).  For a request,
	 * `timeout_ms` > 0 asks the kernel to keep it until its response
	 * comes or the time passes: ib_mad drops a response that matches
	 * no such pending send (mad.c, ib_mad_complete_recv), except active
	 * RMPP segments for agents doing RMPP themselves.  0 for responses,
	 * ACKs and other MADs that expect no answer.
	 */
	int (*send)(void *ctx, int portid, int agent, const void *mad, size_t len,
		    const struct mad_addr *dst, unsigned timeout_ms);
	/*
	 * Take one received MAD without waiting: 0 with *len, *agent, *src
	 * filled; -EAGAIN when none is waiting; -ENOSPC when `cap` is too
	 * small (*len says how much is needed; the MAD is not consumed);
	 * -ENODEV when the port's fd hung up (the device is gone: stop
	 * watching it).
	 * Send completions the kernel reports (status ETIMEDOUT for a
	 * request whose kernel timeout passed) are skipped, not returned.
	 */
	int (*recv)(void *ctx, int portid, void *buf, size_t cap, size_t *len, int *agent,
		    struct mad_addr *src);
	/*
	 * Optional (NULL: nothing to do).  Called by a thread just after it
	 * gave up the progress loop that runs these ports
	 * (mad_loop_set_release): write what send() queued for this moment
	 * (MADCM_UMAD_TX=release, umad_tx.h), from any thread, any time.
	 */
	void (*released)(void *ctx);
};

/* The libibumad implementation (mad/umad_real.c); ctx is unused. */
extern const struct mad_umad_ops mad_umad_real_ops;

#endif
