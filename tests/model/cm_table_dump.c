/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Print the part of the CM state table (cm/state.c) that the Promela model
 * (tests/model/cm.pml) covers, one line per non-DROP entry, in the model's
 * words: "T(STATE, INPUT, ACTION, NEXT)", then "RETX(STATE)" for every
 * state whose timer retransmits.  tests/model/check_table.sh compares this
 * with the T() and RETX() lines of the model.  A state or input that is
 * neither covered nor explicitly left out (LAP, SIDR) is an error: a new
 * entry of the enums must be taken into the model or excluded here.
 */
#include "config.h"

#include <stdio.h>

#include "cm/cm_int.h"

/* Model name of each state; NULL: not modelled (LAP, SIDR). */
static const char *state_word(int s, int *known)
{
	*known = 1;
	switch (s) {
	case CM_ST_IDLE:
		return "IDLE";
	case CM_ST_REQ_SENT:
		return "REQ_SENT";
	case CM_ST_REQ_RCVD:
		return "REQ_RCVD";
	case CM_ST_MRA_REQ_SENT:
		return "MRA_REQ_SENT";
	case CM_ST_MRA_REQ_RCVD:
		return "MRA_REQ_RCVD";
	case CM_ST_REP_SENT:
		return "REP_SENT";
	case CM_ST_REP_RCVD:
		return "REP_RCVD";
	case CM_ST_MRA_REP_SENT:
		return "MRA_REP_SENT";
	case CM_ST_MRA_REP_RCVD:
		return "MRA_REP_RCVD";
	case CM_ST_ESTABLISHED:
		return "ESTABLISHED";
	case CM_ST_DREQ_SENT:
		return "DREQ_SENT";
	case CM_ST_DREQ_RCVD:
		return "DREQ_RCVD";
	case CM_ST_TIMEWAIT:
		return "TIMEWAIT";
	case CM_ST_SIDR_REQ_SENT:
	case CM_ST_SIDR_REQ_RCVD:
	case CM_ST_SIDR_REP_SENT:
	case CM_ST_LAP_SENT:
	case CM_ST_LAP_RCVD:
	case CM_ST_MRA_LAP_SENT:
	case CM_ST_MRA_LAP_RCVD:
		return NULL;
	default:
		*known = 0;
		return NULL;
	}
}

static const char *input_word(int in, int *known)
{
	*known = 1;
	switch (in) {
	case CM_IN_REQ:
		return "REQ";
	case CM_IN_MRA_REQ:
		return "MRA_REQ";
	case CM_IN_MRA_REP:
		return "MRA_REP";
	case CM_IN_REJ:
		return "REJ";
	case CM_IN_REP:
		return "REP";
	case CM_IN_RTU:
		return "RTU";
	case CM_IN_DREQ:
		return "DREQ";
	case CM_IN_DREP:
		return "DREP";
	case CM_CMD_CONNECT:
		return "CMD_CONNECT";
	case CM_CMD_ACCEPT:
		return "CMD_ACCEPT";
	case CM_CMD_REJECT:
		return "CMD_REJECT";
	case CM_CMD_MRA:
		return "CMD_MRA";
	case CM_CMD_RTU:
		return "CMD_RTU";
	case CM_CMD_ESTABLISH:
		return "CMD_ESTABLISH";
	case CM_CMD_DREQ:
		return "CMD_DREQ";
	case CM_CMD_DREP:
		return "CMD_DREP";
	case CM_IN_TIMEOUT:
		return "TIMEOUT";
	case CM_IN_MRA_LAP:
	case CM_IN_LAP:
	case CM_IN_APR:
	case CM_IN_SIDR_REQ:
	case CM_IN_SIDR_REP:
	case CM_CMD_LAP:
	case CM_CMD_APR:
	case CM_CMD_SIDR_REQ:
	case CM_CMD_SIDR_REP:
		return NULL;
	default:
		*known = 0;
		return NULL;
	}
}

static const char *action_word(int a)
{
	static const char *const w[] = {
	    [CM_A_DROP] = "DROP",
	    [CM_A_GO] = "GO",
	    [CM_A_RESEND] = "RESEND",
	    [CM_A_REJ_STALE] = "REJ_STALE",
	    [CM_A_REJ_INVALID_ID] = "REJ_INVALID_ID",
	    [CM_A_DREP] = "DREP",
	    [CM_A_RTU] = "RTU",
	    [CM_A_NONE] = "NONE",
	};

	return a >= 0 && a < (int)(sizeof(w) / sizeof(w[0])) ? w[a] : NULL;
}

int main(void)
{
	int known, bad = 0;

	for (int s = 0; s < CM_ST__COUNT; s++) {
		const char *sw = state_word(s, &known);

		if (!known) {
			fprintf(stderr, "state %s: neither modelled nor excluded\n",
				cm_state_name(s));
			bad = 1;
		}
		for (int in = 0; in < CM_IN__COUNT; in++) {
			const char *iw = input_word(in, &known);
			const struct cm_transition *t = cm_transition(s, in);
			const char *aw = action_word(t->action);
			int k;

			if (!known && s == 0) {
				fprintf(stderr, "input %s: neither modelled nor excluded\n",
					cm_input_name(in));
				bad = 1;
			}
			if (!sw || !iw || t->action == CM_A_DROP)
				continue;
			if (!aw) {
				fprintf(stderr, "%s/%s: unknown action %u\n", sw, iw, t->action);
				bad = 1;
				continue;
			}
			/* RESEND, REJ_*, DREP, RTU, NONE never move; GO may go anywhere */
			if (t->next == CM_ST_SAME || t->action != CM_A_GO) {
				printf("T(%s, %s, %s, SAME)\n", sw, iw, aw);
				continue;
			}
			const char *nw = state_word(t->next, &k);
			if (!nw) {
				fprintf(stderr, "%s/%s: leads to %s, outside the model\n", sw, iw,
					cm_state_name(t->next));
				bad = 1;
				continue;
			}
			printf("T(%s, %s, %s, %s)\n", sw, iw, aw, nw);
		}
	}
	for (int s = 0; s < CM_ST__COUNT; s++) {
		const char *sw = state_word(s, &known);

		if (sw && cm_state_retransmits(s))
			printf("RETX(%s)\n", sw);
	}
	return bad;
}
