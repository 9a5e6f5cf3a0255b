/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Device and port attributes of the soft HCA.  They come from fabsimd,
 * the same source umad_get_port() uses, so ibv_query_port and ibstat
 * agree on LID, SM LID, state, GID prefix, GUIDs and P_Keys as the SM
 * set them.  Without a fabric (FABSIM_DIR unset), a standalone mode reads
 * FABSIM_VERBS_LID so the data path can be tested process to process.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/verbs_client.h"
#include "sim/verbs_priv.h"

static int port_from_daemon(struct verbs_port_info *pi)
{
	struct fsp_host_info hi;
	struct fsp_port_ref ref = {.ca = 0, .port = 1};
	struct fsp_port_info p;
	int fd, ret, i;

	fd = verbs_client_connect(FSP_KIND_CTL, NULL);
	if (fd < 0)
		return fd;
	ret = verbs_client_call(fd, FSP_HOST_INFO, NULL, 0, &hi, sizeof(hi), NULL);
	if (ret >= 0 && hi.num_cas == 0)
		ret = -ENODEV;
	if (ret >= 0)
		ret = verbs_client_call(fd, FSP_PORT_INFO, &ref, sizeof(ref), &p, sizeof(p), NULL);
	close(fd);
	if (ret < 0)
		return ret;
	snprintf(pi->ca_name, sizeof(pi->ca_name), "%.19s", hi.cas[0].name);
	pi->node_guid = hi.cas[0].node_guid;
	pi->port_guid = p.port_guid;
	pi->gid_prefix = p.gid_prefix;
	pi->lid = (uint16_t)p.lid;
	pi->lmc = (uint8_t)p.lmc;
	pi->sm_lid = (uint16_t)p.sm_lid;
	pi->sm_sl = (uint8_t)p.sm_sl;
	pi->state = p.state >= 1 && p.state <= 5 ? (enum ibv_port_state)p.state : IBV_PORT_DOWN;
	pi->phys_state = (uint8_t)p.phys_state;
	if (p.link_width_active)
		pi->width = (uint8_t)p.link_width_active;
	if (p.link_speed_active)
		pi->speed = (uint8_t)p.link_speed_active;
	pi->cap_flags = p.capmask;
	pi->npkeys = 0;
	for (i = 0; i < (int)p.num_pkeys && i < FSP_MAX_PKEYS && pi->npkeys < VERBS_MAX_PKEY; i++)
		pi->pkeys[pi->npkeys++] = p.pkeys[i];
	return 0;
}

static int port_standalone(struct verbs_port_info *pi)
{
	const char *s = getenv("FABSIM_VERBS_LID");
	unsigned long lid;
	char *end;

	if (!s || !*s)
		return -ENODEV;
	lid = strtoul(s, &end, 0);
	if (*end || lid == 0 || lid >= VLID_MCAST_MIN)
		return -EINVAL;
	snprintf(pi->ca_name, sizeof(pi->ca_name), "fabsim0");
	pi->lid = (uint16_t)lid;
	pi->node_guid = 0x0002c90300f00000ull | lid;
	pi->port_guid = pi->node_guid + 1;
	pi->gid_prefix = 0xfe80000000000000ull;
	pi->sm_lid = 1;
	pi->state = IBV_PORT_ACTIVE;
	pi->phys_state = 5;
	pi->pkeys[0] = 0xffff;
	pi->npkeys = 1;
	return 0;
}

int verbs_port_refresh(struct verbs_port_info *pi)
{
	struct verbs_port_info n;
	int ret;

	memset(&n, 0, sizeof(n));
	/* Until the fabric says otherwise (FSP_VERBS_PORT_EVENT carries the
	 * PortInfo MTUs): 4096, 4X, QDR, as a ConnectX on a default OpenSM. */
	n.active_mtu = IBV_MTU_4096;
	n.max_mtu = IBV_MTU_4096;
	n.width = 2;
	n.speed = 4;
	n.cap_flags = 0;
	ret = getenv("FABSIM_DIR") ? port_from_daemon(&n) : port_standalone(&n);
	if (ret)
		return ret;
	*pi = n;
	return 0;
}
