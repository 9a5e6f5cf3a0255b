/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* pcap capture of MADs as InfiniBand UD packets (see pcap.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mad/field.h"
#include "mad/pcap.h"

#define PCAP_MAGIC_USEC 0xa1b2c3d4u
#define PCAP_MAGIC_NSEC 0xa1b23c4du
#define PCAP_FILE_HDR_LEN 24
#define PCAP_REC_HDR_LEN 16
#define PCAP_SNAPLEN 65535u

/* LRH link next header values (IBA 7.7.7). */
#define LNH_IBA_LOCAL 2
#define LNH_IBA_GLOBAL 3
/* GRH next header for IBA transport (IBA 8.3.1). */
#define GRH_NXTHDR_IBA 0x1b
/* ERF flags: the record has a varying length (no fixed-size padding). */
#define ERF_FLAG_VLEN 0x04

/*
 * ---- byte helpers: explicit orders, never struct overlays ----
 * Big-endian through mad/field.h's mad_store_be/mad_load_be; pcap's own
 * headers are in the writer's (little-endian) order.
 */

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t bswap32(uint32_t v)
{
	return __builtin_bswap32(v);
}

/* ---- CRCs (IBA 7.8) ---- */

/*
 * ICRC: CRC-32 with the Ethernet polynomial, bits taken least significant
 * first, initial value all ones, complemented, sent least significant
 * byte first.  Computed over the packet with its variant fields (LRH VL,
 * GRH traffic class, flow label and hop limit, BTH reserved byte) set to
 * ones, so that switches and routers do not invalidate it.
 */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return crc;
}

static uint32_t icrc_compute(const uint8_t *pkt, size_t len, bool grh)
{
	uint8_t hdr[MAD_PCAP_LRH_LEN + MAD_PCAP_GRH_LEN + MAD_PCAP_BTH_LEN];
	size_t hlen = MAD_PCAP_LRH_LEN + (grh ? MAD_PCAP_GRH_LEN : 0) + MAD_PCAP_BTH_LEN;
	uint32_t crc = 0xffffffffu;

	memcpy(hdr, pkt, hlen);
	hdr[0] |= 0xf0; /* VL */
	if (grh) {
		uint8_t *g = hdr + MAD_PCAP_LRH_LEN;

		g[0] |= 0x0f; /* traffic class, high nibble */
		g[1] = 0xff;  /* traffic class low nibble, flow label */
		g[2] = 0xff;
		g[3] = 0xff;
		g[7] = 0xff; /* hop limit */
	}
	hdr[hlen - MAD_PCAP_BTH_LEN + 4] = 0xff; /* BTH resv8a (FECN/BECN) */
	crc = crc32_update(crc, hdr, hlen);
	crc = crc32_update(crc, pkt + hlen, len - hlen);
	return ~crc;
}

/* VCRC: CRC-16, polynomial 0x100b, initial all ones, over LRH..ICRC. */
static uint16_t vcrc_compute(const uint8_t *p, size_t n)
{
	uint16_t crc = 0xffff;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (uint16_t)((crc >> 1) ^ (0xd008u & (0u - (crc & 1))));
	}
	return (uint16_t)~crc;
}

/* ---- packet build / parse ---- */

long mad_pcap_build_packet(const struct mad_pcap_hdr *h, const void *payload, size_t len,
			   uint8_t *out, size_t outlen)
{
	size_t pad, hlen, total;
	uint8_t *p = out;

	if (!h || (!payload && len) || !out)
		return -EINVAL;
	if (len > MAD_PCAP_MAX_PAYLOAD || h->sl > 15 || h->vl > 15 || h->src_qp >> 24 ||
	    h->dst_qp >> 24 || h->psn >> 24 || h->flow_label >> 20)
		return -EINVAL;
	pad = (4 - len % 4) % 4;
	hlen = MAD_PCAP_LRH_LEN + (h->grh_present ? MAD_PCAP_GRH_LEN : 0) + MAD_PCAP_BTH_LEN +
	       MAD_PCAP_DETH_LEN;
	total = hlen + len + pad + MAD_PCAP_ICRC_LEN + MAD_PCAP_VCRC_LEN;
	if (outlen < total)
		return -ENOBUFS;
	memset(out, 0, total);

	/* LRH: VL, LVer 0, SL, LNH, DLID, packet length in words up to ICRC. */
	p[0] = (uint8_t)(h->vl << 4);
	p[1] = (uint8_t)(h->sl << 4 | (h->grh_present ? LNH_IBA_GLOBAL : LNH_IBA_LOCAL));
	mad_store_be(p + 2, 2, h->dlid);
	mad_store_be(p + 4, 2, (uint16_t)((total - MAD_PCAP_VCRC_LEN) / 4));
	mad_store_be(p + 6, 2, h->slid);
	p += MAD_PCAP_LRH_LEN;

	if (h->grh_present) {
		mad_store_be(p, 4, 6u << 28 | (uint32_t)h->tclass << 20 | h->flow_label);
		/* Payload length: from after the GRH through the ICRC. */
		mad_store_be(
		    p + 4, 2,
		    (uint16_t)(total - MAD_PCAP_VCRC_LEN - MAD_PCAP_LRH_LEN - MAD_PCAP_GRH_LEN));
		p[6] = GRH_NXTHDR_IBA;
		p[7] = h->hop_limit;
		memcpy(p + 8, h->sgid, 16);
		memcpy(p + 24, h->dgid, 16);
		p += MAD_PCAP_GRH_LEN;
	}

	/* BTH: UD SEND only, SE 0, M 0, pad count, TVer 0, P_Key, dest QP, PSN. */
	p[0] = MAD_PCAP_BTH_OPCODE_UD_SEND_ONLY;
	p[1] = (uint8_t)(pad << 4);
	mad_store_be(p + 2, 2, h->pkey);
	mad_store_be(p + 4, 4, h->dst_qp);
	mad_store_be(p + 8, 4, h->psn);
	p += MAD_PCAP_BTH_LEN;

	/* DETH: Q_Key, reserved byte, source QP. */
	mad_store_be(p, 4, h->qkey);
	mad_store_be(p + 4, 4, h->src_qp);
	p += MAD_PCAP_DETH_LEN;

	if (len)
		memcpy(p, payload, len);
	p += len + pad;

	put_le32(p, icrc_compute(out, (size_t)(p - out), h->grh_present));
	p += MAD_PCAP_ICRC_LEN;
	mad_store_be(p, 2, vcrc_compute(out, (size_t)(p - out)));
	return (long)total;
}

int mad_pcap_parse_packet(const uint8_t *pkt, size_t len, struct mad_pcap_hdr *h,
			  const uint8_t **payload, size_t *payload_len, const char **why)
{
	struct mad_pcap_hdr tmp;
	const char *dummy;
	size_t pos, end, words;
	uint8_t lnh, opcode, pad;

	if (!why)
		why = &dummy;
	if (!h)
		h = &tmp;
	if (!pkt || !payload || !payload_len) {
		*why = "invalid argument";
		return -EINVAL;
	}
	memset(h, 0, sizeof(*h));
	if (len < MAD_PCAP_LRH_LEN) {
		*why = "packet shorter than an LRH";
		return -EBADMSG;
	}
	h->vl = pkt[0] >> 4;
	h->sl = pkt[1] >> 4;
	lnh = pkt[1] & 3;
	h->dlid = mad_load_be(pkt + 2, 2);
	words = mad_load_be(pkt + 4, 2) & 0x7ff;
	h->slid = mad_load_be(pkt + 6, 2);
	pos = MAD_PCAP_LRH_LEN;
	if ((pkt[0] & 0x0f) != 0) {
		*why = "unknown LRH link version";
		return -EBADMSG;
	}
	if (lnh != LNH_IBA_LOCAL && lnh != LNH_IBA_GLOBAL) {
		*why = "LRH next header is not IBA transport";
		return -EBADMSG;
	}
	if (lnh == LNH_IBA_GLOBAL) {
		uint32_t w0;

		if (len < pos + MAD_PCAP_GRH_LEN) {
			*why = "truncated GRH";
			return -EBADMSG;
		}
		w0 = mad_load_be(pkt + pos, 4);
		h->grh_present = true;
		h->tclass = (uint8_t)(w0 >> 20);
		h->flow_label = w0 & 0xfffff;
		if (pkt[pos + 6] != GRH_NXTHDR_IBA) {
			*why = "GRH next header is not IBA transport";
			return -EBADMSG;
		}
		h->hop_limit = pkt[pos + 7];
		memcpy(h->sgid, pkt + pos + 8, 16);
		memcpy(h->dgid, pkt + pos + 24, 16);
		pos += MAD_PCAP_GRH_LEN;
	}
	if (len < pos + MAD_PCAP_BTH_LEN + MAD_PCAP_DETH_LEN) {
		*why = "truncated BTH/DETH";
		return -EBADMSG;
	}
	opcode = pkt[pos];
	if (opcode != MAD_PCAP_BTH_OPCODE_UD_SEND_ONLY &&
	    opcode != MAD_PCAP_BTH_OPCODE_UD_SEND_ONLY_IMM) {
		*why = "not a UD SEND only packet";
		return -ENOMSG; /* a well-formed packet that carries no MAD */
	}
	pad = (pkt[pos + 1] >> 4) & 3;
	h->pkey = mad_load_be(pkt + pos + 2, 2);
	h->dst_qp = mad_load_be(pkt + pos + 4, 4) & 0xffffff;
	h->psn = mad_load_be(pkt + pos + 8, 4) & 0xffffff;
	pos += MAD_PCAP_BTH_LEN;
	h->qkey = mad_load_be(pkt + pos, 4);
	h->src_qp = mad_load_be(pkt + pos + 4, 4) & 0xffffff;
	pos += MAD_PCAP_DETH_LEN;
	if (opcode == MAD_PCAP_BTH_OPCODE_UD_SEND_ONLY_IMM)
		pos += 4; /* ImmDt */

	/* The payload ends before pad and ICRC; the LRH says where. */
	end = words * 4;
	if (end < pos + pad + MAD_PCAP_ICRC_LEN) {
		*why = "LRH packet length shorter than the headers";
		return -EBADMSG;
	}
	end -= pad + MAD_PCAP_ICRC_LEN;
	if (end > len)
		end = len; /* captured with a short snap length */
	if (end < pos)
		end = pos;
	*payload = pkt + pos;
	*payload_len = end - pos;
	return 0;
}

/* ---- writer ---- */

struct mad_pcap_writer {
	pthread_mutex_t lock;
	int fd;
	enum mad_pcap_linktype linktype;
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = write(fd, p, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int mad_pcap_writer_fdopen(struct mad_pcap_writer **out, int fd, enum mad_pcap_linktype linktype)
{
	struct mad_pcap_writer *w;
	uint8_t hdr[PCAP_FILE_HDR_LEN];
	int ret;

	if (!out || fd < 0 ||
	    (linktype != MAD_PCAP_LINKTYPE_ERF && linktype != MAD_PCAP_LINKTYPE_INFINIBAND))
		return -EINVAL;
	/* Little-endian file header, microsecond magic: what every tool reads. */
	put_le32(hdr, PCAP_MAGIC_USEC);
	hdr[4] = 2; /* version 2.4 */
	hdr[5] = 0;
	hdr[6] = 4;
	hdr[7] = 0;
	put_le32(hdr + 8, 0);  /* thiszone */
	put_le32(hdr + 12, 0); /* sigfigs */
	put_le32(hdr + 16, PCAP_SNAPLEN);
	put_le32(hdr + 20, linktype);
	ret = write_all(fd, hdr, sizeof(hdr));
	if (ret)
		return ret;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	w->fd = fd;
	w->linktype = linktype;
	*out = w;
	return 0;
}

int mad_pcap_writer_open(struct mad_pcap_writer **out, const char *path,
			 enum mad_pcap_linktype linktype)
{
	int fd, ret;

	if (!out || !path)
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = mad_pcap_writer_fdopen(out, fd, linktype);
	if (ret) {
		close(fd);
		unlink(path);
	}
	return ret;
}

int mad_pcap_write(struct mad_pcap_writer *w, const struct timespec *ts,
		   const struct mad_pcap_hdr *h, const void *mad, size_t len)
{
	uint8_t rec[PCAP_REC_HDR_LEN + MAD_PCAP_ERF_HDR_LEN + MAD_PCAP_LRH_LEN + MAD_PCAP_GRH_LEN +
		    MAD_PCAP_BTH_LEN + MAD_PCAP_DETH_LEN + MAD_PCAP_MAX_PAYLOAD + 4 +
		    MAD_PCAP_ICRC_LEN + MAD_PCAP_VCRC_LEN];
	size_t off = PCAP_REC_HDR_LEN;
	struct timespec now;
	long pkt_len;
	size_t caplen;
	int ret;

	if (!w || !h || (!mad && len))
		return -EINVAL;
	if (!ts) {
		clock_gettime(CLOCK_REALTIME, &now);
		ts = &now;
	}
	if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L || ts->tv_sec < 0)
		return -EINVAL;
	if (w->linktype == MAD_PCAP_LINKTYPE_ERF)
		off += MAD_PCAP_ERF_HDR_LEN;
	pkt_len = mad_pcap_build_packet(h, mad, len, rec + off, sizeof(rec) - off);
	if (pkt_len < 0)
		return (int)pkt_len;
	caplen = off - PCAP_REC_HDR_LEN + (size_t)pkt_len;

	if (w->linktype == MAD_PCAP_LINKTYPE_ERF) {
		uint8_t *e = rec + PCAP_REC_HDR_LEN;
		/* ERF time: 32.32 fixed point seconds, little-endian. */
		uint64_t frac = ((uint64_t)ts->tv_nsec << 32) / 1000000000u;
		uint64_t erf_ts = (uint64_t)ts->tv_sec << 32 | frac;

		put_le32(e, (uint32_t)erf_ts);
		put_le32(e + 4, (uint32_t)(erf_ts >> 32));
		e[8] = MAD_PCAP_ERF_TYPE_INFINIBAND;
		e[9] = ERF_FLAG_VLEN;			    /* interface 0 */
		mad_store_be(e + 10, 2, (uint16_t)caplen);  /* rlen: whole record */
		mad_store_be(e + 12, 2, 0);		    /* loss counter */
		mad_store_be(e + 14, 2, (uint16_t)pkt_len); /* wlen: the packet */
	}
	put_le32(rec, (uint32_t)ts->tv_sec);
	put_le32(rec + 4, (uint32_t)(ts->tv_nsec / 1000));
	put_le32(rec + 8, (uint32_t)caplen);
	put_le32(rec + 12, (uint32_t)caplen);

	pthread_mutex_lock(&w->lock);
	ret = write_all(w->fd, rec, PCAP_REC_HDR_LEN + caplen);
	pthread_mutex_unlock(&w->lock);
	return ret;
}

int mad_pcap_writer_close(struct mad_pcap_writer *w)
{
	int ret = 0;

	if (!w)
		return 0;
	if (close(w->fd))
		ret = -errno;
	pthread_mutex_destroy(&w->lock);
	free(w);
	return ret;
}

/* ---- reader ---- */

bool mad_pcap_is_pcap(const void *buf, size_t len)
{
	uint32_t m;

	if (!buf || len < 4)
		return false;
	m = get_le32(buf);
	return m == PCAP_MAGIC_USEC || m == PCAP_MAGIC_NSEC || bswap32(m) == PCAP_MAGIC_USEC ||
	       bswap32(m) == PCAP_MAGIC_NSEC;
}

static uint32_t rd32(const struct mad_pcap_reader *r, const uint8_t *p)
{
	uint32_t v = get_le32(p);

	return r->swapped ? bswap32(v) : v;
}

int mad_pcap_reader_init(struct mad_pcap_reader *r, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t m;

	if (!r || (!buf && len))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	if (len < 4 || !mad_pcap_is_pcap(buf, len))
		return -EPROTO;
	if (len < PCAP_FILE_HDR_LEN)
		return -EBADMSG;
	m = get_le32(p);
	r->swapped = m != PCAP_MAGIC_USEC && m != PCAP_MAGIC_NSEC;
	m = r->swapped ? bswap32(m) : m;
	r->nsec = m == PCAP_MAGIC_NSEC;
	r->snaplen = rd32(r, p + 16);
	/* The upper bits of the link-type word carry FCS info; ignore them. */
	r->linktype = rd32(r, p + 20) & 0x0fffffff;
	if (r->linktype != MAD_PCAP_LINKTYPE_ERF && r->linktype != MAD_PCAP_LINKTYPE_INFINIBAND)
		return -EPROTONOSUPPORT;
	r->buf = p;
	r->len = len;
	r->pos = PCAP_FILE_HDR_LEN;
	return 0;
}

/* Find the IB packet inside an ERF record; NULL when it carries none. */
static const uint8_t *erf_payload(const uint8_t *d, size_t caplen, size_t *pkt_len)
{
	size_t pos = MAD_PCAP_ERF_HDR_LEN, rlen, wlen, end;
	uint8_t type;

	if (caplen < MAD_PCAP_ERF_HDR_LEN)
		return NULL;
	type = d[8];
	/* Extension headers, 8 bytes each, chained by their top bit. */
	if (type & 0x80) {
		uint8_t more;

		do {
			if (caplen < pos + 8)
				return NULL;
			more = d[pos] & 0x80;
			pos += 8;
		} while (more);
	}
	if ((type & 0x7f) != MAD_PCAP_ERF_TYPE_INFINIBAND)
		return NULL;
	rlen = mad_load_be(d + 10, 2);
	wlen = mad_load_be(d + 14, 2);
	end = caplen;
	if (rlen >= pos && rlen < end)
		end = rlen;
	if (end - pos > wlen)
		end = pos + wlen; /* drop padding after the packet */
	*pkt_len = end - pos;
	return d + pos;
}

int mad_pcap_next(struct mad_pcap_reader *r, struct mad_pcap_record *rec)
{
	const uint8_t *p;
	uint32_t caplen, sub;

	if (!r || !rec)
		return -EINVAL;
	if (!r->buf || r->pos >= r->len)
		return 0;
	memset(rec, 0, sizeof(*rec));
	if (r->len - r->pos < PCAP_REC_HDR_LEN) {
		r->pos = r->len;
		return -EBADMSG;
	}
	p = r->buf + r->pos;
	caplen = rd32(r, p + 8);
	if (caplen > MAD_PCAP_MAX_RECORD) {
		r->pos = r->len;
		return -EMSGSIZE;
	}
	if (r->len - r->pos - PCAP_REC_HDR_LEN < caplen) {
		r->pos = r->len;
		return -EBADMSG;
	}
	rec->ts.tv_sec = (time_t)rd32(r, p);
	sub = rd32(r, p + 4);
	rec->ts.tv_nsec = r->nsec ? (long)(sub % 1000000000u) : (long)(sub % 1000000u) * 1000;
	rec->caplen = caplen;
	rec->wirelen = rd32(r, p + 12);
	rec->data = p + PCAP_REC_HDR_LEN;
	rec->index = ++r->index;
	r->pos += PCAP_REC_HDR_LEN + caplen;

	if (r->linktype == MAD_PCAP_LINKTYPE_ERF) {
		rec->pkt = erf_payload(rec->data, caplen, &rec->pkt_len);
		if (!rec->pkt)
			rec->pkt_len = 0;
	} else {
		rec->pkt = rec->data;
		rec->pkt_len = caplen;
	}
	return 1;
}
