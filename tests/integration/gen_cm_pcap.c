/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Cross-check of the CM encoder against an independent decoder, tshark.
 *
 *   gen_cm_pcap write FILE      one MAD per CM attribute, written with the
 *                               encoder into an ERF/InfiniBand pcap
 *   gen_cm_pcap fields          the tshark fields to extract, one per line
 *   gen_cm_pcap check < TSV     compare tshark's output (-T fields, tab
 *                               separated, frame.number then the fields
 *                               in the order `fields` printed them) with
 *                               the values the encoder was given
 *
 * Every field of every message gets a distinct non-zero value derived from
 * (frame, field index), so a field at the wrong offset in our tables shows
 * up as a mismatch with what tshark reads from the spec's offsets.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_wire.h"
#include "cm/ip_pdata.h"
#include "mad/mad_wire.h"
#include "mad/pcap.h"

/* ---- the values each field is given ---- */

static unsigned frame_of(const struct mad_layout *l)
{
	unsigned i = 0;

	while (cm_wire_layouts[i] && cm_wire_layouts[i] != l)
		i++;
	return i + 1; /* tshark numbers frames from 1 */
}

/* Values the spec restricts, or that steer tshark's dissection. */
static const struct {
	const struct mad_layout *l;
	const char *field;
	uint64_t value;
} overrides[] = {
    {&cm_req_layout, "service_id", 0x0000000001061D2Full},	/* rdma_cm TCP 7471 */
    {&cm_sidr_req_layout, "service_id", 0x0000000001111234ull}, /* UDP 0x1234 */
    {&cm_mra_layout, "message_mraed", CM_MSG_REF_REP},
    {&cm_rej_layout, "message_rejected", CM_MSG_REF_REQ},
    {&cm_rej_layout, "reject_info_length", 16},
    {&cm_rej_layout, "reason", CM_REJ_CONSUMER_DEFINED},
    {&cm_apr_layout, "additional_info_length", 24},
    {&cm_apr_layout, "ap_status", CM_APR_REJECT},
    {&cm_sidr_rep_layout, "additional_info_length", 72},
    {&cm_sidr_rep_layout, "status", CM_SIDR_NO_QP},
    {&cm_class_port_info_layout, "base_version", 1},
    {&cm_class_port_info_layout, "class_version", 2},
};

static uint64_t value_of(const struct mad_layout *l, unsigned i)
{
	const struct mad_field *f = &l->fields[i];
	uint64_t v;

	if (f->fmt == MF_RSVD)
		return 0;
	for (size_t k = 0; k < sizeof(overrides) / sizeof(overrides[0]); k++)
		if (overrides[k].l == l && !strcmp(overrides[k].field, f->name))
			return overrides[k].value;
	v = (frame_of(l) * 64ull + i + 1) * 0x9E3779B97F4A7C15ull;
	v ^= v >> 29;
	if (f->width < 64)
		v &= (1ull << f->width) - 1;
	return v ? v : 1;
}

/* Bytes of a wide field: GIDs look like link-local GIDs, the rest a pattern. */
static void bytes_of(const struct mad_layout *l, unsigned i, uint8_t *out)
{
	const struct mad_field *f = &l->fields[i];
	size_t n = mad_field_len(f);

	for (size_t k = 0; k < n; k++)
		out[k] = (uint8_t)(frame_of(l) * 16 + i * 5 + k + 1);
	if (f->fmt == MF_GID) {
		static const uint8_t prefix[8] = {0xfe, 0x80};

		memcpy(out, prefix, 8);
	}
	if (f->fmt == MF_RSVD)
		memset(out, 0, n);
}

/* REQ and SIDR_REQ private data start with the rdma_cm IP header. */
static void ip_endpoints(const struct mad_layout *l, struct sockaddr_storage *s,
			 struct sockaddr_storage *d)
{
	memset(s, 0, sizeof(*s));
	memset(d, 0, sizeof(*d));
	if (l == &cm_req_layout) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)s, *d4 = (struct sockaddr_in *)d;

		s4->sin_family = d4->sin_family = AF_INET;
		s4->sin_port = htons(40000);
		inet_pton(AF_INET, "192.168.1.1", &s4->sin_addr);
		inet_pton(AF_INET, "192.168.1.2", &d4->sin_addr);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)s, *d6 = (struct sockaddr_in6 *)d;

		s6->sin6_family = d6->sin6_family = AF_INET6;
		s6->sin6_port = htons(0x8001);
		inet_pton(AF_INET6, "fe80::1", &s6->sin6_addr);
		inet_pton(AF_INET6, "2001:db8::2", &d6->sin6_addr);
	}
}

static int build(const struct mad_layout *l, uint8_t mad[CM_MAD_SIZE])
{
	uint8_t *msg = mad + CM_MSG_OFFSET, bytes[CM_MSG_SIZE];
	uint8_t method = l == &cm_class_port_info_layout ? CM_METHOD_GET_RESP : CM_METHOD_SEND;
	int ret = cm_mad_init(mad, CM_MAD_SIZE, l, method, 0x1000 + frame_of(l));

	for (unsigned i = 0; !ret && i < l->nfields; i++) {
		if (l->fields[i].width > 64) {
			bytes_of(l, i, bytes);
			mad_field_set_bytes(msg, &l->fields[i], bytes);
		} else {
			ret = mad_field_set(msg, &l->fields[i], value_of(l, i));
		}
	}
	if (!ret && (l == &cm_req_layout || l == &cm_sidr_req_layout)) {
		struct sockaddr_storage s, d;
		size_t len;
		uint8_t *pd = (uint8_t *)cm_private_data(l, msg, &len);

		ip_endpoints(l, &s, &d);
		ret = cm_ip_hdr_encode(pd, len, (struct sockaddr *)&s, (struct sockaddr *)&d);
	}
	if (!ret)
		ret = cm_msg_check(mad, CM_MAD_SIZE, NULL);
	return ret;
}

static const struct mad_pcap_hdr pkt_hdr = {
    .slid = 1,
    .dlid = 2,
    .pkey = 0xffff,
    .src_qp = 1,
    .dst_qp = 1,
    .qkey = 0x80010000,
};

static int write_mads(const char *path, const struct mad_layout *const *ls)
{
	struct mad_pcap_writer *w;
	struct timespec ts = {.tv_sec = 1700000000};
	uint8_t mad[CM_MAD_SIZE];
	int ret = mad_pcap_writer_open(&w, path, MAD_PCAP_LINKTYPE_ERF);

	if (ret) {
		fprintf(stderr, "%s: %s\n", path, strerror(-ret));
		return 1;
	}
	for (; !ret && *ls; ls++) {
		ret = build(*ls, mad);
		if (!ret)
			ret = mad_pcap_write(w, &ts, &pkt_hdr, mad, sizeof(mad));
		ts.tv_nsec += 1000000;
		if (ret)
			fprintf(stderr, "%s: %s\n",
				(*ls)->short_name ? (*ls)->short_name : (*ls)->name,
				strerror(-ret));
	}
	if (mad_pcap_writer_close(w) && !ret)
		ret = -EIO;
	return ret ? 1 : 0;
}

/* ---- what tshark 4.0 calls the fields it decodes ---- */

/*
 * WS40_FLOW / WS40_RATE: Wireshark 4.0 reads the REQ's flow label as 3
 * bytes under a 32-bit mask (0xfffff000) and the packet rate from the flow
 * label's first byte, so it shows (bytes 88-90 >> 12) and (byte 88 & 0x3f)
 * where IBA Table 106 and the kernel (CM_REQ_PRIMARY_FLOW_LABEL 88:0-19,
 * CM_REQ_PRIMARY_PACKET_RATE 91:2-7) put 20 bits at 88 and 6 bits at 91.
 * Those checks accept the correct value or exactly what that defect makes
 * of our bytes, so a fixed Wireshark passes too.
 */
enum kind { NUM, GID, BYTES, IP4, IP6, WS40_FLOW, WS40_RATE };

static const struct check {
	const struct mad_layout *l; /* NULL: the MAD header, in every frame */
	const char *field;	    /* ours; "ip.*" for the IP header in private data */
	const char *tshark;
	enum kind kind;
} checks[] = {
    {NULL, "base_version", "infiniband.mad.baseversion", NUM},
    {NULL, "mgmt_class", "infiniband.mad.mgmtclass", NUM},
    {NULL, "class_version", "infiniband.mad.classversion", NUM},
    {NULL, "method", "infiniband.mad.method", NUM},
    {NULL, "transaction_id", "infiniband.mad.transactionid", NUM},
    {NULL, "attribute_id", "infiniband.mad.attributeid", NUM},
    {NULL, "data", "infiniband.mad.data", BYTES},
    /* Wireshark names the REQ's local comm ID field plain "infiniband.cm.req". */
    {&cm_req_layout, "local_comm_id", "infiniband.cm.req", NUM},
    {&cm_req_layout, "service_id", "infiniband.cm.req.serviceid", NUM},
    {&cm_req_layout, "local_ca_guid", "infiniband.cm.req.localcaguid", NUM},
    {&cm_req_layout, "local_q_key", "infiniband.cm.req.localqkey", NUM},
    {&cm_req_layout, "local_qpn", "infiniband.cm.req.localqpn", NUM},
    {&cm_req_layout, "responder_resources", "infiniband.cm.req.responderres", NUM},
    {&cm_req_layout, "local_eecn", "infiniband.cm.req.localeecn", NUM},
    {&cm_req_layout, "initiator_depth", "infiniband.cm.req.initdepth", NUM},
    {&cm_req_layout, "remote_eecn", "infiniband.cm.req.remoteeecn", NUM},
    {&cm_req_layout, "remote_cm_response_timeout", "infiniband.cm.req.remoteresptout", NUM},
    {&cm_req_layout, "transport_service_type", "infiniband.cm.req.transpsvctype", NUM},
    {&cm_req_layout, "end_to_end_flow_control", "infiniband.cm.req.e2eflowctrl", NUM},
    {&cm_req_layout, "starting_psn", "infiniband.cm.req.startpsn", NUM},
    {&cm_req_layout, "local_cm_response_timeout", "infiniband.cm.req.localresptout", NUM},
    {&cm_req_layout, "retry_count", "infiniband.cm.req.retrcount", NUM},
    {&cm_req_layout, "partition_key", "infiniband.cm.req.pkey", NUM},
    {&cm_req_layout, "path_packet_payload_mtu", "infiniband.cm.req.pppmtu", NUM},
    {&cm_req_layout, "rdc_exists", "infiniband.cm.req.rdcexist", NUM},
    {&cm_req_layout, "rnr_retry_count", "infiniband.cm.req.rnrretrcount", NUM},
    {&cm_req_layout, "max_cm_retries", "infiniband.cm.req.maxcmretr", NUM},
    {&cm_req_layout, "srq", "infiniband.cm.req.srq", NUM},
    {&cm_req_layout, "extended_transport_type", "infiniband.cm.req.ext_transport", NUM},
    {&cm_req_layout, "primary_local_port_lid", "infiniband.cm.req.prim_locallid", NUM},
    {&cm_req_layout, "primary_remote_port_lid", "infiniband.cm.req.prim_remotelid", NUM},
    {&cm_req_layout, "primary_local_port_gid", "infiniband.cm.req.prim_localgid", GID},
    {&cm_req_layout, "primary_remote_port_gid", "infiniband.cm.req.prim_remotegid", GID},
    {&cm_req_layout, "primary_flow_label", "infiniband.cm.req.prim_flowlabel", WS40_FLOW},
    {&cm_req_layout, "reserved_90", "infiniband.cm.req.prim_reserved0", NUM},
    {&cm_req_layout, "primary_packet_rate", "infiniband.cm.req.prim_pktrate", WS40_RATE},
    {&cm_req_layout, "primary_traffic_class", "infiniband.cm.req.prim_tfcclass", NUM},
    {&cm_req_layout, "primary_hop_limit", "infiniband.cm.req.prim_hoplim", NUM},
    {&cm_req_layout, "primary_sl", "infiniband.cm.req.prim_sl", NUM},
    {&cm_req_layout, "primary_subnet_local", "infiniband.cm.req.prim_subnetlocal", NUM},
    {&cm_req_layout, "primary_local_ack_timeout", "infiniband.cm.req.prim_localacktout", NUM},
    {&cm_req_layout, "alternate_local_port_lid", "infiniband.cm.req.alt_locallid", NUM},
    {&cm_req_layout, "alternate_remote_port_lid", "infiniband.cm.req.alt_remotelid", NUM},
    {&cm_req_layout, "alternate_local_port_gid", "infiniband.cm.req.alt_localgid", BYTES},
    {&cm_req_layout, "alternate_remote_port_gid", "infiniband.cm.req.alt_remotegid", BYTES},
    {&cm_req_layout, "alternate_flow_label", "infiniband.cm.req.alt_flowlabel", WS40_FLOW},
    {&cm_req_layout, "alternate_packet_rate", "infiniband.cm.req.alt_pktrate", WS40_RATE},
    {&cm_req_layout, "alternate_traffic_class", "infiniband.cm.req.alt_tfcclass", NUM},
    {&cm_req_layout, "alternate_hop_limit", "infiniband.cm.req.alt_hoplim", NUM},
    {&cm_req_layout, "alternate_sl", "infiniband.cm.req.alt_sl", NUM},
    {&cm_req_layout, "alternate_subnet_local", "infiniband.cm.req.alt_subnetlocal", NUM},
    {&cm_req_layout, "alternate_local_ack_timeout", "infiniband.cm.req.alt_localacktout", NUM},
    /* With an rdma_cm service ID tshark splits the private data: IP CM
     * header, then the consumer's bytes (offset 36 of private_data). */
    {&cm_req_layout, "ip.consumer", "infiniband.cm.req.ip_cm.private", BYTES},
    {&cm_req_layout, "ip.ip_version", "infiniband.cm.req.ip_cm.ipv", NUM},
    {&cm_req_layout, "ip.source_port", "infiniband.cm.req.ip_cm.sport", NUM},
    {&cm_req_layout, "ip.source_addr", "infiniband.cm.req.ip_cm.sip4", IP4},
    {&cm_req_layout, "ip.destination_addr", "infiniband.cm.req.ip_cm.dip4", IP4},

    {&cm_rep_layout, "local_comm_id", "infiniband.cm.rep", NUM},
    {&cm_rep_layout, "remote_comm_id", "infiniband.cm.rep.remotecommid", NUM},
    {&cm_rep_layout, "local_q_key", "infiniband.cm.rep.localqkey", NUM},
    {&cm_rep_layout, "local_qpn", "infiniband.cm.rep.localqpn", NUM},
    {&cm_rep_layout, "local_ee_context_number", "infiniband.cm.rep.localeecn", NUM},
    {&cm_rep_layout, "starting_psn", "infiniband.cm.rep.startpsn", NUM},
    {&cm_rep_layout, "responder_resources", "infiniband.cm.rep.respres", NUM},
    {&cm_rep_layout, "initiator_depth", "infiniband.cm.rep.initdepth", NUM},
    {&cm_rep_layout, "target_ack_delay", "infiniband.cm.rep.tgtackdelay", NUM},
    {&cm_rep_layout, "failover_accepted", "infiniband.cm.rep.failoveracc", NUM},
    {&cm_rep_layout, "end_to_end_flow_control", "infiniband.cm.rep.e2eflowctrl", NUM},
    {&cm_rep_layout, "rnr_retry_count", "infiniband.cm.rep.rnrretrcount", NUM},
    {&cm_rep_layout, "srq", "infiniband.cm.rep.srq", NUM},
    {&cm_rep_layout, "reserved_27", "infiniband.cm.rep.reserved", NUM},
    {&cm_rep_layout, "local_ca_guid", "infiniband.cm.rep.localcaguid", NUM},
    {&cm_rep_layout, "private_data", "infiniband.cm.rep.private", BYTES},

    {&cm_rtu_layout, "local_comm_id", "infiniband.cm.rtu.localcommid", NUM},
    {&cm_rtu_layout, "remote_comm_id", "infiniband.cm.rtu.remotecommid", NUM},
    {&cm_rtu_layout, "private_data", "infiniband.cm.rtu.private", BYTES},

    {&cm_rej_layout, "local_comm_id", "infiniband.cm.rej.localcommid", NUM},
    {&cm_rej_layout, "remote_comm_id", "infiniband.cm.rej.remotecommid", NUM},
    {&cm_rej_layout, "message_rejected", "infiniband.cm.rej.msgrej", NUM},
    {&cm_rej_layout, "reject_info_length", "infiniband.cm.rej.rejinfolen", NUM},
    {&cm_rej_layout, "reason", "infiniband.cm.rej.reason", NUM},
    {&cm_rej_layout, "ari", "infiniband.cm.rej.ari", BYTES},
    {&cm_rej_layout, "private_data", "infiniband.cm.rej.private", BYTES},

    {&cm_dreq_layout, "local_comm_id", "infiniband.cm.dreq.localcommid", NUM},
    {&cm_dreq_layout, "remote_comm_id", "infiniband.cm.dreq.remotecommid", NUM},
    /* Wireshark files DREQ's Remote QPN/EECN under the "req" prefix. */
    {&cm_dreq_layout, "remote_qpn_eecn", "infiniband.cm.req.remoteqpneecn", NUM},
    {&cm_dreq_layout, "private_data", "infiniband.cm.dreq.private", BYTES},

    {&cm_drep_layout, "local_comm_id", "infiniband.cm.drsp.localcommid", NUM},
    {&cm_drep_layout, "remote_comm_id", "infiniband.cm.drsp.remotecommid", NUM},
    {&cm_drep_layout, "private_data", "infiniband.cm.drsp.private", BYTES},
};

#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

static int print_fields(void)
{
	for (size_t i = 0; i < NCHECKS; i++)
		printf("%s\n", checks[i].tshark);
	return 0;
}

/* ---- comparing tshark's text with what we encoded ---- */

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/* tshark prints bytes as hex, with or without ':' separators. */
static int parse_hex(const char *s, uint8_t *out, size_t max, size_t *n)
{
	*n = 0;
	while (*s) {
		if (*s == ':') {
			s++;
			continue;
		}
		if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]) || *n >= max)
			return -1;
		out[(*n)++] = (uint8_t)(hexval(s[0]) << 4 | hexval(s[1]));
		s += 2;
	}
	return 0;
}

/* Expected bytes/number of one check in message `l`, rebuilt as `build` does. */
static int expected(const struct check *c, const struct mad_layout *l, uint8_t *bytes,
		    size_t *nbytes, uint64_t *num)
{
	uint8_t mad[CM_MAD_SIZE];
	const uint8_t *msg = mad + CM_MSG_OFFSET, *pd;
	const struct mad_field *f;
	size_t len;

	if (build(l, mad))
		return -1;
	pd = cm_private_data(l, msg, &len);
	if (!c->l) {
		if (!strcmp(c->field, "data")) {
			memcpy(bytes, msg, CM_MSG_SIZE);
			*nbytes = CM_MSG_SIZE;
			return 0;
		}
		f = mad_layout_field(&mad_hdr_layout, c->field);
		if (!f)
			return -1;
		*num = mad_field_get(mad, f);
		/* tshark shows the method byte whole, R bit included. */
		if (!strcmp(c->field, "method"))
			*num |= mad_get(mad, mad_hdr_fields, MAD_HDR_R) << 7;
		return 0;
	}
	if (!strcmp(c->field, "ip.consumer")) {
		*nbytes = len - CM_IP_HDR_SIZE;
		memcpy(bytes, pd + CM_IP_HDR_SIZE, *nbytes);
		return 0;
	}
	if (!strncmp(c->field, "ip.", 3)) {
		/* Read back through the IP header table: cm_ip_hdr_encode set them. */
		f = mad_layout_field(&cm_ip_hdr_layout, c->field + 3);
		if (!f)
			return -1;
		if (f->width > 64) {
			mad_field_get_bytes(pd, f, bytes);
			*nbytes = mad_field_len(f);
		} else {
			*num = mad_field_get(pd, f);
		}
		return 0;
	}
	f = mad_layout_field(l, c->field);
	if (!f)
		return -1;
	if (f->width > 64) {
		/* What the generator asked for, not what the table reads back. */
		bytes_of(l, (unsigned)(f - l->fields), bytes);
		*nbytes = mad_field_len(f);
		if (f == mad_layout_field(l, "private_data"))
			memcpy(bytes, pd, len);
		return 0;
	}
	*num = value_of(l, (unsigned)(f - l->fields));
	if (c->kind == WS40_FLOW || c->kind == WS40_RATE) {
		/* Second value: what the Wireshark 4.0 defect shows. */
		const uint8_t *b = msg + f->byte - (c->kind == WS40_RATE ? 3 : 0);

		*nbytes = 8;
		uint64_t q = c->kind == WS40_FLOW
				 ? ((uint64_t)b[0] << 16 | (uint64_t)b[1] << 8 | b[2]) >> 12
				 : (uint64_t)(b[0] & 0x3f);
		memcpy(bytes, &q, sizeof(q));
	}
	return 0;
}

static int compare(const struct check *c, const struct mad_layout *l, const char *got)
{
	uint8_t want[CM_MSG_SIZE], have[CM_MSG_SIZE];
	size_t nwant = 0, nhave;
	uint64_t num = 0, quirk;
	unsigned long long v;
	char *end;

	if (expected(c, l, want, &nwant, &num)) {
		fprintf(stderr, "internal: no field %s\n", c->field);
		return 1;
	}
	switch (c->kind) {
	case NUM:
	case WS40_FLOW:
	case WS40_RATE:
		v = strtoull(got, &end, 0);
		if (*got && !*end && v == num)
			return 0;
		if (c->kind != NUM && *got && !*end) {
			memcpy(&quirk, want, sizeof(quirk));
			if (v == quirk)
				return 0;
		}
		fprintf(stderr, "%s: tshark '%s', encoded 0x%llx (%s.%s)\n", c->tshark, got,
			(unsigned long long)num, l->short_name ? l->short_name : l->name, c->field);
		return 1;
	case GID:
	case IP6:
		if (inet_pton(AF_INET6, got, have) != 1 || memcmp(have, want, 16))
			break;
		return 0;
	case IP4:
		/* IPv4 sits in the last 4 bytes of the 16-byte slot. */
		if (inet_pton(AF_INET, got, have) != 1 || memcmp(have, want + 12, 4))
			break;
		return 0;
	case BYTES:
		if (parse_hex(got, have, sizeof(have), &nhave) || nhave != nwant ||
		    memcmp(have, want, nwant))
			break;
		return 0;
	}
	fprintf(stderr, "%s: tshark '%s' differs from what was encoded (%s.%s)\n", c->tshark, got,
		l->short_name ? l->short_name : l->name, c->field);
	return 1;
}

static int check_tsv(FILE *in)
{
	char line[16384];
	unsigned seen[16] = {0}, bad = 0, compared = 0;

	while (fgets(line, sizeof(line), in)) {
		char *cols[NCHECKS + 1], *p = line;
		size_t n = 0;
		unsigned frame;

		line[strcspn(line, "\r\n")] = 0;
		while (n < NCHECKS + 1) {
			cols[n++] = p;
			p = strchr(p, '\t');
			if (!p)
				break;
			*p++ = 0;
		}
		if (n != NCHECKS + 1) {
			fprintf(stderr, "expected %zu columns, got %zu\n", NCHECKS + 1, n);
			return 1;
		}
		frame = (unsigned)atoi(cols[0]);
		if (frame < 16)
			seen[frame]++;
		if (frame < 1 || frame > sizeof(seen) / sizeof(seen[0]) - 1 ||
		    !cm_wire_layouts[frame - 1]) {
			fprintf(stderr, "unexpected frame %u\n", frame);
			return 1;
		}
		for (size_t i = 0; i < NCHECKS; i++) {
			const struct check *c = &checks[i];
			const struct mad_layout *l = cm_wire_layouts[frame - 1];

			if (c->l && c->l != l) {
				/* Fields of other messages must be absent from this frame. */
				if (*cols[i + 1] &&
				    strcmp(c->tshark, "infiniband.cm.req.remoteqpneecn")) {
					fprintf(stderr, "frame %u: unexpected %s='%s'\n", frame,
						c->tshark, cols[i + 1]);
					bad++;
				}
				continue;
			}
			compared++;
			bad += (unsigned)compare(c, l, cols[i + 1]);
		}
	}
	for (unsigned f = 1; cm_wire_layouts[f - 1]; f++)
		if (seen[f] != 1) {
			fprintf(stderr, "frame %u (%s) seen %u times\n", f,
				cm_wire_layouts[f - 1]->name, seen[f]);
			return 1;
		}
	printf("%u fields compared, %u mismatches\n", compared, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "write"))
		return write_mads(argv[2], cm_wire_layouts);
	if (argc == 2 && !strcmp(argv[1], "fields"))
		return print_fields();
	if (argc == 2 && !strcmp(argv[1], "check"))
		return check_tsv(stdin);
	fprintf(stderr, "usage: %s write FILE | fields | check < TSV\n", argv[0]);
	return 2;
}
