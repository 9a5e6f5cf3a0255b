/*
 * Generate tests/data/cm_handshake.pcap: an rdma_cm connection over IB CM
 * between two hosts, as a kernel rdma_cm client and server would exchange
 * it, built with madcm's own encoders (cm/cm_wire.h, cm/ip_pdata.h) and
 * written with mad/pcap.h:
 *
 *   host A (LID 1, 192.168.1.1:45678)  ->  host B (LID 2, 192.168.1.2:7471)
 *   REQ (rdma_cm TCP port space, IP CM header in private data)  A -> B
 *   REP                                                         B -> A
 *   RTU                                                         A -> B
 *   DREQ                                                        A -> B
 *   DREP                                                        B -> A
 *
 * Everything is fixed (IDs, PSNs, times), so the output is reproducible:
 * the integration test regenerates it and compares with the committed file.
 *
 * Usage: gen_handshake OUT.pcap [247]   (default link type 197, ERF)
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "cm/ip_pdata.h"
#include "mad/pcap.h"

#define HOST_A_LID 1
#define HOST_B_LID 2
#define HOST_A_GUID 0x0002c90300a1b2c1ull
#define HOST_B_GUID 0x0002c90300a1b2d5ull
#define HOST_A_QPN 0x000048
#define HOST_B_QPN 0x00004b
#define HOST_A_COMM_ID 0x9e3a61c4u
#define HOST_B_COMM_ID 0x2f8b07d1u
#define HOST_A_PSN 0x5a1f3cu
#define HOST_B_PSN 0xc02e71u
#define TCP_PORT 7471
#define CLIENT_PORT 45678
#define START_TIME 1767225600 /* 2026-01-01 00:00:00 UTC */

static void die(const char *what)
{
	fprintf(stderr, "gen_handshake: %s\n", what);
	exit(1);
}

/* Every field set through the table; a value that does not fit is a bug. */
static void set(uint8_t *msg, const struct mad_field *tab, int id, uint64_t v)
{
	if (mad_field_set(msg, &tab[id], v))
		die(tab[id].name);
}

static void gid_of(uint8_t gid[16], uint64_t guid)
{
	memset(gid, 0, 16);
	gid[0] = 0xfe; /* link-local prefix fe80::/64 */
	gid[1] = 0x80;
	for (int i = 0; i < 8; i++)
		gid[8 + i] = (uint8_t)(guid >> (56 - 8 * i));
}

static void build_req(uint8_t *mad, uint64_t tid)
{
	uint8_t *m = mad + CM_MSG_OFFSET;
	uint8_t gid_a[16], gid_b[16], pdata[CM_IP_HDR_SIZE];
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(CLIENT_PORT)};
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(TCP_PORT)};
	uint64_t sid;

	if (cm_mad_init(mad, CM_MAD_SIZE, &cm_req_layout, CM_METHOD_SEND, tid))
		die("cm_mad_init REQ");
	if (cm_sid_from_ps_port(CM_PS_TCP, TCP_PORT, &sid))
		die("service id");
	gid_of(gid_a, HOST_A_GUID);
	gid_of(gid_b, HOST_B_GUID);
	set(m, cm_req_fields, CM_REQ_LOCAL_COMM_ID, HOST_A_COMM_ID);
	set(m, cm_req_fields, CM_REQ_SERVICE_ID, sid);
	set(m, cm_req_fields, CM_REQ_LOCAL_CA_GUID, HOST_A_GUID);
	set(m, cm_req_fields, CM_REQ_LOCAL_QPN, HOST_A_QPN);
	set(m, cm_req_fields, CM_REQ_RESPONDER_RESOURCES, 1);
	set(m, cm_req_fields, CM_REQ_INITIATOR_DEPTH, 1);
	set(m, cm_req_fields, CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, 20); /* rdma_cm default */
	set(m, cm_req_fields, CM_REQ_TRANSPORT_SERVICE_TYPE, CM_TRANSPORT_RC);
	set(m, cm_req_fields, CM_REQ_END_TO_END_FLOW_CONTROL, 1);
	set(m, cm_req_fields, CM_REQ_STARTING_PSN, HOST_A_PSN);
	set(m, cm_req_fields, CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, 20);
	set(m, cm_req_fields, CM_REQ_RETRY_COUNT, 7);
	set(m, cm_req_fields, CM_REQ_PARTITION_KEY, 0xffff);
	set(m, cm_req_fields, CM_REQ_PATH_PACKET_PAYLOAD_MTU, 5); /* 4096 */
	set(m, cm_req_fields, CM_REQ_RNR_RETRY_COUNT, 7);
	set(m, cm_req_fields, CM_REQ_MAX_CM_RETRIES, 15);
	set(m, cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_LID, HOST_A_LID);
	set(m, cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_LID, HOST_B_LID);
	mad_set_bytes(m, cm_req_fields, CM_REQ_PRIMARY_LOCAL_PORT_GID, gid_a);
	mad_set_bytes(m, cm_req_fields, CM_REQ_PRIMARY_REMOTE_PORT_GID, gid_b);
	set(m, cm_req_fields, CM_REQ_PRIMARY_PACKET_RATE, 16); /* 100 Gb/s */
	set(m, cm_req_fields, CM_REQ_PRIMARY_SUBNET_LOCAL, 1);
	set(m, cm_req_fields, CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT, 18);

	inet_pton(AF_INET, "192.168.1.1", &src.sin_addr);
	inet_pton(AF_INET, "192.168.1.2", &dst.sin_addr);
	if (cm_ip_hdr_encode(pdata, sizeof(pdata), (struct sockaddr *)&src,
			     (struct sockaddr *)&dst))
		die("cm_ip_hdr_encode");
	if (cm_set_private_data(&cm_req_layout, m, pdata, sizeof(pdata)))
		die("REQ private data");
}

static void build_rep(uint8_t *mad, uint64_t tid)
{
	uint8_t *m = mad + CM_MSG_OFFSET;

	if (cm_mad_init(mad, CM_MAD_SIZE, &cm_rep_layout, CM_METHOD_SEND, tid))
		die("cm_mad_init REP");
	set(m, cm_rep_fields, CM_REP_LOCAL_COMM_ID, HOST_B_COMM_ID);
	set(m, cm_rep_fields, CM_REP_REMOTE_COMM_ID, HOST_A_COMM_ID);
	set(m, cm_rep_fields, CM_REP_LOCAL_QPN, HOST_B_QPN);
	set(m, cm_rep_fields, CM_REP_STARTING_PSN, HOST_B_PSN);
	set(m, cm_rep_fields, CM_REP_RESPONDER_RESOURCES, 1);
	set(m, cm_rep_fields, CM_REP_INITIATOR_DEPTH, 1);
	set(m, cm_rep_fields, CM_REP_TARGET_ACK_DELAY, 15);
	set(m, cm_rep_fields, CM_REP_FAILOVER_ACCEPTED, CM_FAILOVER_NOT_SUPPORTED);
	set(m, cm_rep_fields, CM_REP_END_TO_END_FLOW_CONTROL, 1);
	set(m, cm_rep_fields, CM_REP_RNR_RETRY_COUNT, 7);
	set(m, cm_rep_fields, CM_REP_LOCAL_CA_GUID, HOST_B_GUID);
}

static void build_ids(uint8_t *mad, const struct mad_layout *l, uint64_t tid, uint32_t local,
		      uint32_t remote)
{
	uint8_t *m = mad + CM_MSG_OFFSET;

	if (cm_mad_init(mad, CM_MAD_SIZE, l, CM_METHOD_SEND, tid))
		die("cm_mad_init");
	/* RTU, DREQ and DREP all start with local then remote comm ID. */
	if (mad_field_set(m, mad_layout_field(l, "local_comm_id"), local) ||
	    mad_field_set(m, mad_layout_field(l, "remote_comm_id"), remote))
		die("comm ids");
}

int main(int argc, char **argv)
{
	struct mad_pcap_writer *w;
	struct mad_pcap_hdr a_to_b = {
	    .slid = HOST_A_LID,
	    .dlid = HOST_B_LID,
	    .pkey = 0xffff,
	    .src_qp = 1,
	    .dst_qp = 1,
	    .qkey = 0x80010000u,
	};
	struct mad_pcap_hdr b_to_a = a_to_b;
	enum mad_pcap_linktype lt = MAD_PCAP_LINKTYPE_ERF;
	/* Kernel-style TIDs: the REQ's is reused by REP and RTU, DREQ's by DREP. */
	uint64_t conn_tid = 0x00000003000001a4ull, disc_tid = 0x00000003000001a5ull;
	uint8_t mad[CM_MAD_SIZE];
	struct timespec ts = {START_TIME, 0};
	static const long step_ns[] = {0, 412000, 81000, 3000000000 - 493000, 377000};
	int ret;

	if (argc < 2 || argc > 3)
		die("usage: gen_handshake OUT.pcap [197|247]");
	if (argc == 3)
		lt = (enum mad_pcap_linktype)atoi(argv[2]);
	b_to_a.slid = HOST_B_LID;
	b_to_a.dlid = HOST_A_LID;
	ret = mad_pcap_writer_open(&w, argv[1], lt);
	if (ret)
		die("cannot create the capture");

	for (int i = 0; i < 5; i++) {
		const struct mad_pcap_hdr *h = (i == 1 || i == 4) ? &b_to_a : &a_to_b;

		ts.tv_nsec += step_ns[i];
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		switch (i) {
		case 0:
			build_req(mad, conn_tid);
			break;
		case 1:
			build_rep(mad, conn_tid);
			break;
		case 2:
			build_ids(mad, &cm_rtu_layout, conn_tid, HOST_A_COMM_ID, HOST_B_COMM_ID);
			break;
		case 3:
			build_ids(mad, &cm_dreq_layout, disc_tid, HOST_A_COMM_ID, HOST_B_COMM_ID);
			set(mad + CM_MSG_OFFSET, cm_dreq_fields, CM_DREQ_REMOTE_QPN_EECN,
			    HOST_B_QPN);
			break;
		case 4:
			build_ids(mad, &cm_drep_layout, disc_tid, HOST_B_COMM_ID, HOST_A_COMM_ID);
			break;
		}
		if (cm_msg_check(mad, sizeof(mad), NULL))
			die("built a MAD that cm_msg_check rejects");
		if (mad_pcap_write(w, &ts, h, mad, sizeof(mad)))
			die("write failed");
	}
	return mad_pcap_writer_close(w) ? 1 : 0;
}
