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

#include "mad/umad_ops.h"

#define FAKE_MAX_MADS 4096
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
/* Queue a MAD for the transport to receive on agent `agent`. */
void fake_umad_inject(struct fake_umad *f, const void *mad, size_t len, int agent,
		      const struct mad_addr *src);
/* Build a response to sent MAD i: copy header, set R bit/method, status. */
void fake_umad_respond(struct fake_umad *f, unsigned i, uint8_t method, uint16_t status,
		       const void *data, size_t data_len, size_t data_off);

#endif
