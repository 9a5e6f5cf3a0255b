/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Which layouts decode a MAD: the registry behind `madcm decode`.
 *
 * Given a MAD's bytes, layouts_plan() checks what the spec forbids
 * (through each class's own check: cm_msg_check, sa_mad_check,
 * mad_hdr_check) and says where the pieces are: the common header, the RMPP
 * header, the class header (SA), and the attribute's records, one or
 * several (SA GetTable responses repeat records every attribute_offset * 8
 * bytes).  It never reads past `len`.
 */
#ifndef MADCM_TOOLS_LAYOUTS_H
#define MADCM_TOOLS_LAYOUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mad/field.h"

struct mad_plan {
	uint8_t mgmt_class;
	uint16_t attr_id;
	uint8_t method;			    /* with the R bit */
	const char *class_name;		    /* "CM", "SA", ... never NULL */
	const char *method_name;	    /* never NULL */
	const char *attr_name;		    /* "ConnectRequest"; NULL: unknown */
	const char *message;		    /* "REQ", "PathRecord"; NULL: unknown */
	const struct mad_layout *rmpp;	    /* RMPP header at 24, or NULL */
	const struct mad_layout *class_hdr; /* SA header at 36, or NULL */
	size_t class_hdr_offset;
	const struct mad_layout *attr; /* the attribute, or NULL: raw data */
	size_t data_offset;	       /* first record, or the raw data */
	size_t stride;		       /* bytes from one record to the next */
	unsigned nrecords;	       /* records that fit in the MAD */
	bool table;		       /* several records (print as a list) */
};

/*
 * Plan the decoding of the MAD in `mad` (`len` bytes).  Returns 0, or
 * -EBADMSG with a static description of what is malformed in *why.  An
 * unknown class or attribute is not an error: plan->attr is NULL and the
 * data from plan->data_offset on is shown as bytes.
 */
int layouts_plan(const uint8_t *mad, size_t len, struct mad_plan *plan, const char **why);

/* Value names for the printer (layout_value_namer): enums, codes. */
const char *layouts_value_name(const struct mad_layout *l, const struct mad_field *f,
			       uint64_t value, const uint8_t *buf);

/* The layout for (class, attribute), or NULL. */
const struct mad_layout *layouts_find(uint8_t mgmt_class, uint16_t attr_id);

#endif
