/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Fuzz the receive side of the MAD transport: arbitrary MADs (steered
 * toward matching TIDs, the SA class and active RMPP headers so the input
 * reaches the RMPP reassembly) are fed to a transport with requests in
 * flight, through a fake umad port.  Nothing may crash, leak or read past
 * a buffer, whatever arrives.  The TIDs (which the input's MADs are steered
 * to match, and which place requests in the transport's tables) come from a
 * generator restarted for each input (fuzz_random.h), so a run repeats.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "mad/mad_wire.h"
#include "mad/timer.h"
#include "mad/transport.h"
#include "../unit/fake_umad.h"
#include "fuzz_random.h"

static uint64_t fake_now;
static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return fake_now;
}
static void on_response(void *arg, int status, const void *mad, size_t len,
			const struct mad_addr *src)
{
	(void)arg;
	(void)status;
	(void)mad;
	(void)len;
	(void)src;
}
static void on_unsol(struct mad_agent *a, const void *mad, size_t len, const struct mad_addr *src,
		     void *arg)
{
	(void)a;
	(void)mad;
	(void)len;
	(void)src;
	(void)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fake_umad f;
	struct mad_timer_heap h;
	struct mad_transport_params p = {0};
	struct mad_agent_desc d = {0};
	struct mad_send_opts o = {.timeout_ms = 10, .retries = 1};
	struct mad_transport *t;
	struct mad_agent *sa, *cm;
	uint64_t tid[2];
	uint8_t mad[MAD_SIZE];
	size_t pos = 0;

	fuzz_random_restart();
	fake_umad_reset(&f);
	/* Nothing here polls the port's fd: without it the fake skips an
	 * eventfd write and read for every MAD, a quarter of the time. */
	if (f.evfd >= 0) {
		close(f.evfd);
		f.evfd = -1;
	}
	mad_timer_heap_init(&h, fake_clock, NULL);
	p.ops = &fake_umad_ops;
	p.ops_ctx = &f;
	p.timers = &h;
	if (mad_transport_open(&t, &p))
		goto out;
	d.mgmt_class = MAD_CLASS_SUBN_ADM;
	d.class_version = 2;
	mad_agent_register(t, &d, &sa);
	d.mgmt_class = MAD_CLASS_CM;
	mad_method_mask_set(d.method_mask, MAD_METHOD_SEND);
	d.unsolicited = on_unsol;
	mad_agent_register(t, &d, &cm);
	for (int i = 0; i < 2; i++) {
		mad_hdr_init(mad, MAD_SIZE, MAD_CLASS_SUBN_ADM, 2,
			     i ? MAD_METHOD_GET_TABLE : MAD_METHOD_GET, 0, 0x35, 0);
		mad_request_send(sa, mad, MAD_SIZE, &(struct mad_addr){.lid = 1, .qpn = 1}, &o,
				 on_response, NULL, &tid[i]);
	}
	while (pos + 2 <= size) {
		uint8_t flags = data[pos];
		size_t len = data[pos + 1] == 0xff ? MAD_SIZE : data[pos + 1];

		pos += 2;
		if (len > size - pos)
			len = size - pos;
		memset(mad, 0, sizeof(mad));
		memcpy(mad, data + pos, len);
		pos += len;
		if (flags & 0x10)
			len = MAD_SIZE;
		if (len >= MAD_HDR_SIZE && (flags & 2)) {
			mad_set(mad, mad_hdr_fields, MAD_HDR_BASE_VERSION, 1);
			mad_set(mad, mad_hdr_fields, MAD_HDR_MGMT_CLASS, MAD_CLASS_SUBN_ADM);
			mad_set(mad, mad_hdr_fields, MAD_HDR_CLASS_VERSION, 2);
		}
		if (len >= MAD_HDR_SIZE && (flags & 1))
			mad_set(mad, mad_hdr_fields, MAD_HDR_TRANSACTION_ID, tid[(flags >> 5) & 1]);
		if (len >= MAD_HDR_SIZE && (flags & 4))
			mad_set(mad, mad_hdr_fields, MAD_HDR_R, 1);
		if (len >= MAD_RMPP_HDR_OFFSET + MAD_RMPP_HDR_SIZE && (flags & 8)) {
			uint8_t *rh = mad + MAD_RMPP_HDR_OFFSET;

			mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_VERSION, 1);
			mad_set(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS,
				mad_get(rh, mad_rmpp_fields, MAD_RMPP_RMPP_FLAGS) | 1);
		}
		fake_umad_inject(&f, mad, len, (flags & 0x40) ? 1 : 0, NULL);
		mad_transport_poll(t, 0);
		if (flags & 0x80) {
			fake_now += 11000000;
			mad_timer_run(&h);
		}
		f.nsent = 0;
	}
	mad_transport_close(t);
out:
	mad_timer_heap_destroy(&h);
	return 0;
}
