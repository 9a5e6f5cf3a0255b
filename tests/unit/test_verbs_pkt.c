/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Soft verbs packet headers: what we encode decodes back, the bytes sit
 * where IBA vol 1 ch. 9 puts them, and malformed input is refused without
 * reading past the buffer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "sim/verbs_pkt.h"

static void test_rc_write_first_layout(void **state)
{
	uint8_t buf[256], pay[10] = "abcdefghi";
	struct vpkt p = {0}, q;
	int n;

	(void)state;
	p.sl = 3;
	p.dlid = 0x0102;
	p.slid = 0x0304;
	p.opcode = VOP_RC | VOP_WRITE_FIRST;
	p.pkey = 0xffff;
	p.dqpn = 0xabcdef;
	p.psn = 0x123456;
	p.ack_req = true;
	p.va = 0x1122334455667788ull;
	p.rkey = 0x99aabbcc;
	p.dma_len = 4096;
	p.payload = pay;
	p.paylen = 10;
	n = vpkt_encode(&p, buf, sizeof(buf));
	/* LRH 8 + BTH 12 + RETH 16 + 10 payload + 2 pad + ICRC 4 + VCRC 2 */
	assert_int_equal(n, 8 + 12 + 16 + 12 + 6);
	assert_int_equal(buf[1], 0x32); /* SL 3, LNH local */
	assert_int_equal(buf[2] << 8 | buf[3], 0x0102);
	assert_int_equal((buf[4] << 8 | buf[5]) * 4, n - 2); /* PktLen */
	assert_int_equal(buf[8], 0x06);			     /* opcode */
	assert_int_equal(buf[9] >> 4 & 3, 2);		     /* pad count */
	assert_int_equal(buf[13] << 16 | buf[14] << 8 | buf[15], 0xabcdef);
	assert_int_equal(buf[16], 0x80); /* AckReq */
	assert_int_equal(buf[20], 0x11); /* RETH VA */
	assert_int_equal(vpkt_decode(buf, (size_t)n, &q), 0);
	assert_int_equal(q.dqpn, 0xabcdef);
	assert_int_equal(q.psn, 0x123456);
	assert_true(q.ack_req);
	assert_int_equal(q.va, p.va);
	assert_int_equal(q.rkey, p.rkey);
	assert_int_equal(q.dma_len, 4096);
	assert_int_equal(q.paylen, 10);
	assert_memory_equal(q.payload, pay, 10);
}

static void test_ud_grh_imm(void **state)
{
	uint8_t buf[256], pay[4] = {1, 2, 3, 4};
	struct vpkt p = {0}, q;
	int n;

	(void)state;
	p.grh = true;
	p.dlid = 0xc001;
	p.slid = 7;
	memset(p.dgid, 0xff, 16);
	p.dgid[1] = 0x12;
	p.hop_limit = 64;
	p.opcode = VOP_UD | VOP_SEND_ONLY_IMM;
	p.dqpn = VQPN_MCAST;
	p.qkey = 0x11111111;
	p.src_qp = 0x4242;
	p.imm = 0xdeadbeef;
	p.payload = pay;
	p.paylen = 4;
	n = vpkt_encode(&p, buf, sizeof(buf));
	assert_int_equal(n, 8 + 40 + 12 + 8 + 4 + 4 + 6);
	assert_int_equal(buf[1] & 3, 3);  /* LNH global */
	assert_int_equal(buf[8] >> 4, 6); /* IPVer */
	assert_int_equal(buf[14], 0x1b);  /* NxtHdr */
	assert_int_equal(vpkt_decode(buf, (size_t)n, &q), 0);
	assert_true(q.grh);
	assert_memory_equal(q.dgid, p.dgid, 16);
	assert_int_equal(q.qkey, 0x11111111);
	assert_int_equal(q.src_qp, 0x4242);
	assert_int_equal(q.imm, 0xdeadbeef);
	assert_int_equal(q.paylen, 4);
}

static void test_malformed(void **state)
{
	uint8_t buf[256];
	struct vpkt p = {0}, q;
	int n;
	size_t i;

	(void)state;
	p.opcode = VOP_RC | VOP_ATOMIC_ACK;
	p.orig = 42;
	n = vpkt_encode(&p, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(vpkt_decode(buf, (size_t)n, &q), 0);
	assert_int_equal(q.orig, 42);
	/* Every truncation is refused (PktLen no longer matches). */
	for (i = 0; i < (size_t)n; i++)
		assert_int_equal(vpkt_decode(buf, i, &q), -EINVAL);
	/* Unknown opcode, UD opcode outside SEND, payload on an ACK. */
	buf[8] = 0x1f;
	assert_int_equal(vpkt_decode(buf, (size_t)n, &q), -EINVAL);
	buf[8] = VOP_UD | VOP_WRITE_ONLY;
	assert_int_equal(vpkt_decode(buf, (size_t)n, &q), -EINVAL);
	p.opcode = VOP_RC | VOP_ACK;
	p.paylen = 4;
	p.payload = buf;
	assert_int_equal(vpkt_encode(&p, buf + 128, 128), -EINVAL);
	/* 24-bit PSN arithmetic wraps. */
	assert_true(vpsn_cmp(0x000001, 0xffffff) > 0);
	assert_true(vpsn_cmp(0xffffff, 0x000001) < 0);
	assert_int_equal(vpsn_cmp(5, 5), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rc_write_first_layout),
	    cmocka_unit_test(test_ud_grh_imm),
	    cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
