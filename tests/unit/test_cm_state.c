/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The CM state table (cm/state.c) is well formed: every target is a state,
 * every retransmitting state says where its timeout leads, TimeWait ends
 * in IDLE, and only REQ / SIDR_REQ / connect / sidr_req start from IDLE.
 * With CM_STATE_TABLE_PRINT=1 in the environment it also prints the table
 * as a grid, for reading next to IBA ch. 12.9's state diagrams.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_int.h"

static void test_targets_valid(void **state)
{
	(void)state;
	for (int s = 0; s < CM_ST__COUNT; s++) {
		assert_string_not_equal(cm_state_name(s), "unknown");
		for (int in = 0; in < CM_IN__COUNT; in++) {
			const struct cm_transition *t = cm_transition(s, in);

			/* `next` only matters for GO (absent entries are {DROP, 0}) */
			assert_true(t->action <= CM_A_NONE);
			if (t->action == CM_A_GO)
				assert_true(t->next == CM_ST_SAME || t->next < CM_ST__COUNT);
		}
	}
	for (int in = 0; in < CM_IN__COUNT; in++)
		assert_string_not_equal(cm_input_name(in), "unknown");
	for (int ev = 0; ev < CM_EV__COUNT; ev++)
		assert_string_not_equal(cm_event_name(ev), "unknown");
	assert_string_equal(cm_state_name(CM_ST__COUNT), "unknown");
	assert_int_equal(cm_transition(CM_ST__COUNT, CM_IN_REQ)->action, CM_A_DROP);
}

static void test_timers_have_an_end(void **state)
{
	(void)state;
	for (int s = 0; s < CM_ST__COUNT; s++) {
		const struct cm_transition *t = cm_transition(s, CM_IN_TIMEOUT);

		if (cm_state_retransmits(s)) {
			assert_int_equal(t->action, CM_A_GO);
			assert_int_not_equal(t->next, CM_ST_SAME);
		}
	}
	assert_int_equal(cm_transition(CM_ST_TIMEWAIT, CM_IN_TIMEOUT)->next, CM_ST_IDLE);
}

static void test_idle_starts_only_connections(void **state)
{
	(void)state;
	for (int in = 0; in < CM_IN__COUNT; in++) {
		const struct cm_transition *t = cm_transition(CM_ST_IDLE, in);
		bool start = in == CM_IN_REQ || in == CM_IN_SIDR_REQ || in == CM_CMD_CONNECT ||
			     in == CM_CMD_SIDR_REQ;

		assert_int_equal(t->action == CM_A_GO, start);
	}
	/* and those are the only ways in */
	for (int s = 1; s < CM_ST__COUNT; s++) {
		assert_int_not_equal(cm_transition(s, CM_CMD_CONNECT)->action, CM_A_GO);
		assert_int_not_equal(cm_transition(s, CM_CMD_SIDR_REQ)->action, CM_A_GO);
	}
}

static void print_table(void)
{
	static const char act[] = {'.', '>', 'R', 'S', 'I', 'D', 'T'};

	printf("%-14s", "state\\input");
	for (int in = 0; in < CM_IN__COUNT; in++)
		printf(" %-9.9s", cm_input_name(in));
	printf("\n");
	for (int s = 0; s < CM_ST__COUNT; s++) {
		printf("%-14s", cm_state_name(s));
		for (int in = 0; in < CM_IN__COUNT; in++) {
			const struct cm_transition *t = cm_transition(s, in);
			char cell[16];

			if (t->action == CM_A_GO)
				snprintf(cell, sizeof(cell), "%.9s",
					 t->next == CM_ST_SAME ? "=" : cm_state_name(t->next));
			else
				snprintf(cell, sizeof(cell), "%c", act[t->action]);
			printf(" %-9s", cell);
		}
		printf("\n");
	}
	printf(". drop/-EINVAL  R resend last  S REJ stale  I REJ invalid ID  D DREP  T RTU  = "
	       "stay\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_targets_valid),
	    cmocka_unit_test(test_timers_have_an_end),
	    cmocka_unit_test(test_idle_starts_only_connections),
	};

	if (getenv("CM_STATE_TABLE_PRINT"))
		print_table();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
