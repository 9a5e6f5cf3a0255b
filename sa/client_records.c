/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Record codecs of the SA client: struct <-> wire through sa/sa_wire.h tables. */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "sa/client.h"
#include "sa/sa_wire.h"

/*
 * A record struct member and the field it is on the wire: an integer (or
 * bool) of 1, 2, 4 or 8 bytes, or a byte array as long as a wide field.
 * The codecs below walk these maps; the field tables say where on the wire.
 */
struct rec_member {
	uint8_t field;
	uint8_t size;
	uint16_t offset;
};

/* clang-format off */
#define MEMBER(type, id, m) {(id), sizeof(((struct type *)0)->m), offsetof(struct type, m)}

static const struct rec_member path_members[] = {
	MEMBER(sa_path, SA_PR_SERVICE_ID, service_id),
	MEMBER(sa_path, SA_PR_DGID, dgid),
	MEMBER(sa_path, SA_PR_SGID, sgid),
	MEMBER(sa_path, SA_PR_DLID, dlid),
	MEMBER(sa_path, SA_PR_SLID, slid),
	MEMBER(sa_path, SA_PR_RAW_TRAFFIC, raw_traffic),
	MEMBER(sa_path, SA_PR_FLOW_LABEL, flow_label),
	MEMBER(sa_path, SA_PR_HOP_LIMIT, hop_limit),
	MEMBER(sa_path, SA_PR_TCLASS, tclass),
	MEMBER(sa_path, SA_PR_REVERSIBLE, reversible),
	MEMBER(sa_path, SA_PR_NUMB_PATH, numb_path),
	MEMBER(sa_path, SA_PR_P_KEY, pkey),
	MEMBER(sa_path, SA_PR_QOS_CLASS, qos_class),
	MEMBER(sa_path, SA_PR_SL, sl),
	MEMBER(sa_path, SA_PR_MTU_SELECTOR, mtu_selector),
	MEMBER(sa_path, SA_PR_MTU, mtu),
	MEMBER(sa_path, SA_PR_RATE_SELECTOR, rate_selector),
	MEMBER(sa_path, SA_PR_RATE, rate),
	MEMBER(sa_path, SA_PR_PACKET_LIFE_TIME_SELECTOR, packet_life_time_selector),
	MEMBER(sa_path, SA_PR_PACKET_LIFE_TIME, packet_life_time),
	MEMBER(sa_path, SA_PR_PREFERENCE, preference),
};

static const struct rec_member mcmember_members[] = {
	MEMBER(sa_mcmember, SA_MCMR_MGID, mgid),
	MEMBER(sa_mcmember, SA_MCMR_PORT_GID, port_gid),
	MEMBER(sa_mcmember, SA_MCMR_Q_KEY, qkey),
	MEMBER(sa_mcmember, SA_MCMR_MLID, mlid),
	MEMBER(sa_mcmember, SA_MCMR_MTU_SELECTOR, mtu_selector),
	MEMBER(sa_mcmember, SA_MCMR_MTU, mtu),
	MEMBER(sa_mcmember, SA_MCMR_TCLASS, tclass),
	MEMBER(sa_mcmember, SA_MCMR_P_KEY, pkey),
	MEMBER(sa_mcmember, SA_MCMR_RATE_SELECTOR, rate_selector),
	MEMBER(sa_mcmember, SA_MCMR_RATE, rate),
	MEMBER(sa_mcmember, SA_MCMR_PACKET_LIFE_TIME_SELECTOR, packet_life_time_selector),
	MEMBER(sa_mcmember, SA_MCMR_PACKET_LIFE_TIME, packet_life_time),
	MEMBER(sa_mcmember, SA_MCMR_SL, sl),
	MEMBER(sa_mcmember, SA_MCMR_FLOW_LABEL, flow_label),
	MEMBER(sa_mcmember, SA_MCMR_HOP_LIMIT, hop_limit),
	MEMBER(sa_mcmember, SA_MCMR_SCOPE, scope),
	MEMBER(sa_mcmember, SA_MCMR_JOIN_STATE, join_state),
	MEMBER(sa_mcmember, SA_MCMR_PROXY_JOIN, proxy_join),
};

/* ServiceRecord's name and data arrays are handled by hand. */
static const struct rec_member service_members[] = {
	MEMBER(sa_service, SA_SR_SERVICE_ID, id),
	MEMBER(sa_service, SA_SR_SERVICE_GID, gid),
	MEMBER(sa_service, SA_SR_SERVICE_P_KEY, pkey),
	MEMBER(sa_service, SA_SR_SERVICE_LEASE, lease),
	MEMBER(sa_service, SA_SR_SERVICE_KEY, key),
};
/* clang-format on */

#define NMEMBERS(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t member_get(const uint8_t *p, unsigned size)
{
	uint64_t v8;
	uint32_t v4;
	uint16_t v2;

	switch (size) {
	case 8:
		memcpy(&v8, p, 8);
		return v8;
	case 4:
		memcpy(&v4, p, 4);
		return v4;
	case 2:
		memcpy(&v2, p, 2);
		return v2;
	default:
		return *p; /* uint8_t or bool */
	}
}

static void member_set(uint8_t *p, unsigned size, uint64_t v)
{
	uint32_t v4 = (uint32_t)v;
	uint16_t v2 = (uint16_t)v;

	switch (size) {
	case 8:
		memcpy(p, &v, 8);
		break;
	case 4:
		memcpy(p, &v4, 4);
		break;
	case 2:
		memcpy(p, &v2, 2);
		break;
	default:
		*p = (uint8_t)v; /* a bool's field is one bit: 0 or 1 */
	}
}

/* Struct to wire: every field checks its range; the first failure is returned. */
static int rec_encode(const struct mad_field *tab, const struct rec_member *m, size_t n,
		      const void *s, void *rec)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		const struct mad_field *f = &tab[m[i].field];
		const uint8_t *p = (const uint8_t *)s + m[i].offset;
		int r;

		if (f->width > 64) {
			if (mad_field_len(f) != m[i].size)
				return -EINVAL; /* a map out of step with its table */
			mad_field_set_bytes(rec, f, p);
			continue;
		}
		r = mad_field_set(rec, f, member_get(p, m[i].size));
		if (r && !rc)
			rc = r;
	}
	return rc;
}

static void rec_decode(const struct mad_field *tab, const struct rec_member *m, size_t n,
		       const void *rec, void *s)
{
	for (size_t i = 0; i < n; i++) {
		const struct mad_field *f = &tab[m[i].field];
		uint8_t *p = (uint8_t *)s + m[i].offset;

		if (f->width > 64) {
			if (mad_field_len(f) == m[i].size)
				mad_field_get_bytes(rec, f, p);
		} else {
			member_set(p, m[i].size, mad_field_get(rec, f));
		}
	}
}

int sa_path_encode(const struct sa_path *p, void *rec)
{
	if (!p || !rec)
		return -EINVAL;
	memset(rec, 0, SA_PR_SIZE);
	return rec_encode(sa_pr_fields, path_members, NMEMBERS(path_members), p, rec);
}

void sa_path_decode(const void *rec, struct sa_path *p)
{
	memset(p, 0, sizeof(*p));
	rec_decode(sa_pr_fields, path_members, NMEMBERS(path_members), rec, p);
}

int sa_mcmember_encode(const struct sa_mcmember *m, void *rec)
{
	if (!m || !rec)
		return -EINVAL;
	memset(rec, 0, SA_MCMR_SIZE);
	return rec_encode(sa_mcmr_fields, mcmember_members, NMEMBERS(mcmember_members), m, rec);
}

void sa_mcmember_decode(const void *rec, struct sa_mcmember *m)
{
	memset(m, 0, sizeof(*m));
	rec_decode(sa_mcmr_fields, mcmember_members, NMEMBERS(mcmember_members), rec, m);
}

/* Every mad_set below checks range; a failure is returned. */
#define SET(buf, tab, id, v)                                                                       \
	do {                                                                                       \
		int r_ = mad_set(buf, tab, id, v);                                                 \
		if (r_)                                                                            \
			rc = r_;                                                                   \
	} while (0)

int sa_service_encode(const struct sa_service *s, void *rec)
{
	uint8_t name[SA_SR_NAME_LEN];
	int rc = 0;

	if (!s || !rec)
		return -EINVAL;
	if (strnlen(s->name, sizeof(s->name)) > SA_SR_NAME_LEN)
		return -EINVAL;
	memset(rec, 0, SA_SR_SIZE);
	rc = rec_encode(sa_sr_fields, service_members, NMEMBERS(service_members), s, rec);
	memset(name, 0, sizeof(name));
	memcpy(name, s->name, strnlen(s->name, SA_SR_NAME_LEN));
	mad_set_bytes(rec, sa_sr_fields, SA_SR_SERVICE_NAME, name);
	for (unsigned i = 0; i < 16; i++)
		SET(rec, sa_sr_fields, SA_SR_SERVICE_DATA8_0 + i, s->data8[i]);
	for (unsigned i = 0; i < 8; i++)
		SET(rec, sa_sr_fields, SA_SR_SERVICE_DATA16_0 + i, s->data16[i]);
	for (unsigned i = 0; i < 4; i++)
		SET(rec, sa_sr_fields, SA_SR_SERVICE_DATA32_0 + i, s->data32[i]);
	for (unsigned i = 0; i < 2; i++)
		SET(rec, sa_sr_fields, SA_SR_SERVICE_DATA64_0 + i, s->data64[i]);
	return rc;
}

void sa_service_decode(const void *rec, struct sa_service *s)
{
	memset(s, 0, sizeof(*s));
	rec_decode(sa_sr_fields, service_members, NMEMBERS(service_members), rec, s);
	mad_get_bytes(rec, sa_sr_fields, SA_SR_SERVICE_NAME, s->name);
	s->name[SA_SR_NAME_LEN] = '\0';
	for (unsigned i = 0; i < 16; i++)
		s->data8[i] = (uint8_t)mad_get(rec, sa_sr_fields, SA_SR_SERVICE_DATA8_0 + i);
	for (unsigned i = 0; i < 8; i++)
		s->data16[i] = (uint16_t)mad_get(rec, sa_sr_fields, SA_SR_SERVICE_DATA16_0 + i);
	for (unsigned i = 0; i < 4; i++)
		s->data32[i] = (uint32_t)mad_get(rec, sa_sr_fields, SA_SR_SERVICE_DATA32_0 + i);
	for (unsigned i = 0; i < 2; i++)
		s->data64[i] = mad_get(rec, sa_sr_fields, SA_SR_SERVICE_DATA64_0 + i);
}

int sa_status_to_errno(uint16_t st)
{
	unsigned code = (st & MAD_STATUS_CODE_MASK) >> MAD_STATUS_CODE_SHIFT;

	if (st == 0)
		return 0;
	if (st & MAD_STATUS_BUSY)
		return -EBUSY;
	if (code == MAD_STATUS_BAD_VERSION || code == MAD_STATUS_METHOD_UNSUPPORTED ||
	    code == MAD_STATUS_METHOD_ATTR_UNSUPPORTED)
		return -EOPNOTSUPP;
	if (code == MAD_STATUS_INVALID_FIELD)
		return -EINVAL;
	switch (st & MAD_STATUS_CLASS_MASK) {
	case SA_STATUS_NO_RESOURCES:
		return -EBUSY;
	case SA_STATUS_REQ_INVALID:
	case SA_STATUS_INVALID_GID:
	case SA_STATUS_INSUFFICIENT_COMPONENTS:
		return -EINVAL;
	case SA_STATUS_NO_RECORDS:
		return -ENOENT;
	case SA_STATUS_TOO_MANY_RECORDS:
		return -E2BIG;
	case SA_STATUS_REQ_DENIED:
		return -EACCES;
	default:
		return -EPROTO;
	}
}
