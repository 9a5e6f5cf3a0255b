/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Performance Management Agent of every node (class 0x04), the part the
 * HCA driver / switch firmware answers before any umad agent sees it:
 * ClassPortInfo, PortCounters and PortCountersExtended, counting the MADs
 * each port sent and received.  Field layouts from libibmad (IB_PC_*).
 */
#include <string.h>

#include "sim/fabsimd.h"

#define PMA_DATA 64 /* IB_PC_DATA_OFFS: 24-byte header + 40 reserved */
#define ATTR_CLASS_PORT_INFO 0x0001
#define ATTR_PORT_COUNTERS 0x0012
#define ATTR_PORT_COUNTERS_EXT 0x001d

static uint32_t sat32(uint64_t v)
{
	return v > 0xffffffffull ? 0xffffffffu : (uint32_t)v;
}

static void sum_ports(struct fsd_node *n, int sel, uint64_t c[4])
{
	memset(c, 0, 4 * sizeof(c[0]));
	for (int p = 1; p <= n->nports; p++) {
		struct fsd_port *pt = &n->ports[p];

		if (sel != 0xff && sel != p)
			continue;
		c[0] += pt->xmit_words;
		c[1] += pt->rcv_words;
		c[2] += pt->xmit_pkts;
		c[3] += pt->rcv_pkts;
	}
}

static void clear_ports(struct fsd_node *n, int sel)
{
	for (int p = 1; p <= n->nports; p++)
		if (sel == 0xff || sel == p)
			n->ports[p].xmit_words = n->ports[p].rcv_words = n->ports[p].xmit_pkts =
			    n->ports[p].rcv_pkts = 0;
}

int fsd_pma_handle(struct fsd_node *n, int in_port, const uint8_t *mad, uint8_t *resp)
{
	int method = mad[3];
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
	uint8_t *d = resp + PMA_DATA;
	uint16_t status = 0;
	uint64_t c[4];
	int sel;

	if (method & 0x80)
		return -1;
	memcpy(resp, mad, FSD_MAD_SIZE);
	resp[3] = IB_MAD_METHOD_GET_RESPONSE;
	if (method != IB_MAD_METHOD_GET && method != IB_MAD_METHOD_SET) {
		status = 0x0008;
		goto out;
	}
	switch (attr) {
	case ATTR_CLASS_PORT_INFO:
		if (method == IB_MAD_METHOD_SET) {
			status = 0x000c;
			break;
		}
		memset(d, 0, FSD_MAD_SIZE - PMA_DATA);
		mad_set_field(d, 0, IB_CPI_BASEVER_F, 1);
		mad_set_field(d, 0, IB_CPI_CLASSVER_F, 1);
		/* AllPortSelect (0x100) and PortCountersExtended (0x200) */
		mad_set_field(d, 0, IB_CPI_CAPMASK_F, 0x0300);
		mad_set_field(d, 0, IB_CPI_RESP_TIME_VALUE_F, 18);
		break;
	case ATTR_PORT_COUNTERS:
	case ATTR_PORT_COUNTERS_EXT:
		sel = (int)mad_get_field((void *)(mad + PMA_DATA), 0, IB_PC_PORT_SELECT_F);
		if (n->type == FSD_CA && sel == 0)
			sel = in_port;
		if (sel != 0xff && (sel < 1 || sel > n->nports)) {
			status = 0x001c;
			break;
		}
		if (method == IB_MAD_METHOD_SET)
			clear_ports(n, sel);
		sum_ports(n, sel, c);
		memset(d, 0, FSD_MAD_SIZE - PMA_DATA);
		if (attr == ATTR_PORT_COUNTERS) {
			mad_set_field(d, 0, IB_PC_PORT_SELECT_F, (uint32_t)sel);
			mad_set_field(d, 0, IB_PC_XMT_BYTES_F, sat32(c[0]));
			mad_set_field(d, 0, IB_PC_RCV_BYTES_F, sat32(c[1]));
			mad_set_field(d, 0, IB_PC_XMT_PKTS_F, sat32(c[2]));
			mad_set_field(d, 0, IB_PC_RCV_PKTS_F, sat32(c[3]));
		} else {
			mad_set_field(d, 0, IB_PC_EXT_PORT_SELECT_F, (uint32_t)sel);
			mad_set_field64(d, 0, IB_PC_EXT_XMT_BYTES_F, c[0]);
			mad_set_field64(d, 0, IB_PC_EXT_RCV_BYTES_F, c[1]);
			mad_set_field64(d, 0, IB_PC_EXT_XMT_PKTS_F, c[2]);
			mad_set_field64(d, 0, IB_PC_EXT_RCV_PKTS_F, c[3]);
			mad_set_field64(d, 0, IB_PC_EXT_XMT_UPKTS_F, c[2]);
			mad_set_field64(d, 0, IB_PC_EXT_RCV_UPKTS_F, c[3]);
		}
		break;
	default:
		status = 0x000c;
		break;
	}
out:
	resp[4] = (uint8_t)(status >> 8);
	resp[5] = (uint8_t)status;
	return 1;
}
