/* Record codecs of the SA client: struct <-> wire through sa/sa_wire.h tables. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "sa/client.h"
#include "sa/sa_wire.h"

/* Every mad_set below checks range; the first failure decides. */
#define SET(buf, tab, id, v)                                                                       \
	do {                                                                                       \
		int r_ = mad_set(buf, tab, id, v);                                                 \
		if (r_)                                                                            \
			rc = r_;                                                                   \
	} while (0)

int sa_path_encode(const struct sa_path *p, void *rec)
{
	int rc = 0;

	if (!p || !rec)
		return -EINVAL;
	memset(rec, 0, SA_PR_SIZE);
	SET(rec, sa_pr_fields, SA_PR_SERVICE_ID, p->service_id);
	mad_set_bytes(rec, sa_pr_fields, SA_PR_DGID, p->dgid);
	mad_set_bytes(rec, sa_pr_fields, SA_PR_SGID, p->sgid);
	SET(rec, sa_pr_fields, SA_PR_DLID, p->dlid);
	SET(rec, sa_pr_fields, SA_PR_SLID, p->slid);
	SET(rec, sa_pr_fields, SA_PR_RAW_TRAFFIC, p->raw_traffic);
	SET(rec, sa_pr_fields, SA_PR_FLOW_LABEL, p->flow_label);
	SET(rec, sa_pr_fields, SA_PR_HOP_LIMIT, p->hop_limit);
	SET(rec, sa_pr_fields, SA_PR_TCLASS, p->tclass);
	SET(rec, sa_pr_fields, SA_PR_REVERSIBLE, p->reversible);
	SET(rec, sa_pr_fields, SA_PR_NUMB_PATH, p->numb_path);
	SET(rec, sa_pr_fields, SA_PR_P_KEY, p->pkey);
	SET(rec, sa_pr_fields, SA_PR_QOS_CLASS, p->qos_class);
	SET(rec, sa_pr_fields, SA_PR_SL, p->sl);
	SET(rec, sa_pr_fields, SA_PR_MTU_SELECTOR, p->mtu_selector);
	SET(rec, sa_pr_fields, SA_PR_MTU, p->mtu);
	SET(rec, sa_pr_fields, SA_PR_RATE_SELECTOR, p->rate_selector);
	SET(rec, sa_pr_fields, SA_PR_RATE, p->rate);
	SET(rec, sa_pr_fields, SA_PR_PACKET_LIFE_TIME_SELECTOR, p->packet_life_time_selector);
	SET(rec, sa_pr_fields, SA_PR_PACKET_LIFE_TIME, p->packet_life_time);
	SET(rec, sa_pr_fields, SA_PR_PREFERENCE, p->preference);
	return rc;
}

void sa_path_decode(const void *rec, struct sa_path *p)
{
	memset(p, 0, sizeof(*p));
	p->service_id = mad_get(rec, sa_pr_fields, SA_PR_SERVICE_ID);
	mad_get_bytes(rec, sa_pr_fields, SA_PR_DGID, p->dgid);
	mad_get_bytes(rec, sa_pr_fields, SA_PR_SGID, p->sgid);
	p->dlid = (uint16_t)mad_get(rec, sa_pr_fields, SA_PR_DLID);
	p->slid = (uint16_t)mad_get(rec, sa_pr_fields, SA_PR_SLID);
	p->raw_traffic = mad_get(rec, sa_pr_fields, SA_PR_RAW_TRAFFIC);
	p->flow_label = (uint32_t)mad_get(rec, sa_pr_fields, SA_PR_FLOW_LABEL);
	p->hop_limit = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_HOP_LIMIT);
	p->tclass = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_TCLASS);
	p->reversible = mad_get(rec, sa_pr_fields, SA_PR_REVERSIBLE);
	p->numb_path = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_NUMB_PATH);
	p->pkey = (uint16_t)mad_get(rec, sa_pr_fields, SA_PR_P_KEY);
	p->qos_class = (uint16_t)mad_get(rec, sa_pr_fields, SA_PR_QOS_CLASS);
	p->sl = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_SL);
	p->mtu_selector = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_MTU_SELECTOR);
	p->mtu = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_MTU);
	p->rate_selector = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_RATE_SELECTOR);
	p->rate = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_RATE);
	p->packet_life_time_selector =
	    (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_PACKET_LIFE_TIME_SELECTOR);
	p->packet_life_time = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_PACKET_LIFE_TIME);
	p->preference = (uint8_t)mad_get(rec, sa_pr_fields, SA_PR_PREFERENCE);
}

int sa_mcmember_encode(const struct sa_mcmember *m, void *rec)
{
	int rc = 0;

	if (!m || !rec)
		return -EINVAL;
	memset(rec, 0, SA_MCMR_SIZE);
	mad_set_bytes(rec, sa_mcmr_fields, SA_MCMR_MGID, m->mgid);
	mad_set_bytes(rec, sa_mcmr_fields, SA_MCMR_PORT_GID, m->port_gid);
	SET(rec, sa_mcmr_fields, SA_MCMR_Q_KEY, m->qkey);
	SET(rec, sa_mcmr_fields, SA_MCMR_MLID, m->mlid);
	SET(rec, sa_mcmr_fields, SA_MCMR_MTU_SELECTOR, m->mtu_selector);
	SET(rec, sa_mcmr_fields, SA_MCMR_MTU, m->mtu);
	SET(rec, sa_mcmr_fields, SA_MCMR_TCLASS, m->tclass);
	SET(rec, sa_mcmr_fields, SA_MCMR_P_KEY, m->pkey);
	SET(rec, sa_mcmr_fields, SA_MCMR_RATE_SELECTOR, m->rate_selector);
	SET(rec, sa_mcmr_fields, SA_MCMR_RATE, m->rate);
	SET(rec, sa_mcmr_fields, SA_MCMR_PACKET_LIFE_TIME_SELECTOR, m->packet_life_time_selector);
	SET(rec, sa_mcmr_fields, SA_MCMR_PACKET_LIFE_TIME, m->packet_life_time);
	SET(rec, sa_mcmr_fields, SA_MCMR_SL, m->sl);
	SET(rec, sa_mcmr_fields, SA_MCMR_FLOW_LABEL, m->flow_label);
	SET(rec, sa_mcmr_fields, SA_MCMR_HOP_LIMIT, m->hop_limit);
	SET(rec, sa_mcmr_fields, SA_MCMR_SCOPE, m->scope);
	SET(rec, sa_mcmr_fields, SA_MCMR_JOIN_STATE, m->join_state);
	SET(rec, sa_mcmr_fields, SA_MCMR_PROXY_JOIN, m->proxy_join);
	return rc;
}

void sa_mcmember_decode(const void *rec, struct sa_mcmember *m)
{
	memset(m, 0, sizeof(*m));
	mad_get_bytes(rec, sa_mcmr_fields, SA_MCMR_MGID, m->mgid);
	mad_get_bytes(rec, sa_mcmr_fields, SA_MCMR_PORT_GID, m->port_gid);
	m->qkey = (uint32_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_Q_KEY);
	m->mlid = (uint16_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_MLID);
	m->mtu_selector = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_MTU_SELECTOR);
	m->mtu = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_MTU);
	m->tclass = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_TCLASS);
	m->pkey = (uint16_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_P_KEY);
	m->rate_selector = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_RATE_SELECTOR);
	m->rate = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_RATE);
	m->packet_life_time_selector =
	    (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_PACKET_LIFE_TIME_SELECTOR);
	m->packet_life_time = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_PACKET_LIFE_TIME);
	m->sl = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_SL);
	m->flow_label = (uint32_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_FLOW_LABEL);
	m->hop_limit = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_HOP_LIMIT);
	m->scope = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_SCOPE);
	m->join_state = (uint8_t)mad_get(rec, sa_mcmr_fields, SA_MCMR_JOIN_STATE);
	m->proxy_join = mad_get(rec, sa_mcmr_fields, SA_MCMR_PROXY_JOIN);
}

int sa_service_encode(const struct sa_service *s, void *rec)
{
	uint8_t name[SA_SR_NAME_LEN];
	int rc = 0;

	if (!s || !rec)
		return -EINVAL;
	if (strnlen(s->name, sizeof(s->name)) > SA_SR_NAME_LEN)
		return -EINVAL;
	memset(rec, 0, SA_SR_SIZE);
	SET(rec, sa_sr_fields, SA_SR_SERVICE_ID, s->id);
	mad_set_bytes(rec, sa_sr_fields, SA_SR_SERVICE_GID, s->gid);
	SET(rec, sa_sr_fields, SA_SR_SERVICE_P_KEY, s->pkey);
	SET(rec, sa_sr_fields, SA_SR_SERVICE_LEASE, s->lease);
	mad_set_bytes(rec, sa_sr_fields, SA_SR_SERVICE_KEY, s->key);
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
	s->id = mad_get(rec, sa_sr_fields, SA_SR_SERVICE_ID);
	mad_get_bytes(rec, sa_sr_fields, SA_SR_SERVICE_GID, s->gid);
	s->pkey = (uint16_t)mad_get(rec, sa_sr_fields, SA_SR_SERVICE_P_KEY);
	s->lease = (uint32_t)mad_get(rec, sa_sr_fields, SA_SR_SERVICE_LEASE);
	mad_get_bytes(rec, sa_sr_fields, SA_SR_SERVICE_KEY, s->key);
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
