/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * The model behind `madcm ladder`: a capture's CM exchanges as a ladder
 * (sequence) diagram, independent of how it is drawn.
 *
 *   capture --(decode_pcap)--> MADs --> lanes (one per CM endpoint port),
 *   arrows (one per CM MAD, SA MADs optionally), connections (comm ID
 *   pairs, each with its colour index), timeouts (where a CM timer fires)
 *
 * The renderers (ladder_render.h: SVG, HTML, JSON) read the model only.
 * Times are nanoseconds since the capture's first MAD.
 */
#ifndef MADCM_TOOLS_LADDER_MODEL_H
#define MADCM_TOOLS_LADDER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/addr_file.h"

/* Arrow flags. */
enum {
	LADDER_RETRY = 1 << 0,	   /* sent again after the sender's timer fired */
	LADDER_DUPLICATE = 1 << 1, /* another copy of an earlier MAD, no timer fired */
	LADDER_CROSSED = 1 << 2,   /* a DREQ that crossed the peer's DREQ */
};

#define LADDER_LABEL_MAX 96

/* One lifeline: a port that sent or received a CM (or SA) MAD. */
struct ladder_lane {
	bool has_gid;
	uint8_t gid[16];
	uint16_t lid;			    /* 0: not known */
	bool sa;			    /* the SA's port (destination of SA queries) */
	char name[MADCM_ADDR_NAME_MAX + 1]; /* from the address file, or "" */
	char ip[48];			    /* from an rdma_cm IP header, or "" */
	char title[64];			    /* name, else IP, else GID, else LID */
};

/* One MAD. */
struct ladder_arrow {
	unsigned frame;	    /* in the capture, 1-based */
	int64_t t_ns;	    /* since the capture's first MAD */
	struct timespec ts; /* as captured */
	int from, to;	    /* lanes */
	int conn;	    /* connection, or -1 (SA, ClassPortInfo) */
	uint8_t mgmt_class;
	uint8_t method;
	uint16_t attr_id;
	uint64_t tid;
	uint32_t local_id, remote_id;  /* comm IDs; SIDR: request ID in local_id */
	const char *message;	       /* "REQ", "PathRecord" ... */
	char label[LADDER_LABEL_MAX];  /* message and key fields */
	char detail[LADDER_LABEL_MAX]; /* further fields, may be "" */
	unsigned flags;		       /* LADDER_* */
	unsigned copy;		       /* 0 first; n: the nth repeat */
};

/* One connection (comm ID pair) or SIDR exchange (request ID). */
struct ladder_conn {
	bool sidr;
	uint32_t active_id;  /* REQ's local comm ID / SIDR request ID; 0 unknown */
	uint32_t passive_id; /* the other side's local comm ID; 0 unknown */
	bool has_sid;
	uint64_t service_id;
	int active_lane, passive_lane; /* -1 unknown */
	unsigned colour;	       /* index into the renderer's palette */
};

/* A CM timer that fired: its sender waited for an answer in vain. */
struct ladder_timeout {
	int lane;
	int conn;
	int arrow;	  /* the MAD whose timer it is */
	int64_t t_ns;	  /* when it fires */
	uint64_t wait_ns; /* how long it was (from the MAD or its MRA) */
	bool after_end;	  /* later than the capture's last MAD */
	char label[LADDER_LABEL_MAX];
};

struct ladder_model {
	struct ladder_lane *lanes;
	size_t nlanes;
	struct ladder_arrow *arrows; /* in capture order */
	size_t narrows;
	struct ladder_conn *conns;
	size_t nconns;
	struct ladder_timeout *timeouts; /* in time order */
	size_t ntimeouts;
	struct timespec start; /* the capture's first MAD, 0 when none */
	int64_t end_ns;	       /* the capture's last MAD */
	unsigned mads;	       /* MADs in the capture */
	unsigned malformed;    /* MADs or input that could not be read */
};

struct ladder_opts {
	bool sa; /* SA queries as arrows too */
	bool has_comm_id;
	uint32_t comm_id; /* only the connection with this comm (or request) ID */
	bool has_service_id;
	uint64_t service_id; /* only connections to this service ID */
	bool has_from, has_to;
	int64_t from_ns, to_ns;		      /* time window, since the first MAD */
	const struct madcm_addr_table *hosts; /* names for GIDs; may be NULL */
};

/*
 * Build the model of the pcap capture in `buf` (`len` bytes; never read
 * past).  Notes about skipped records go to `err` (may be NULL).  Returns
 * 0; -EPROTO when `buf` is not a pcap capture; -ENOMEM.  A capture with
 * malformed records still gives a model: m->malformed counts them.
 */
int ladder_model_build(struct ladder_model *m, const struct ladder_opts *o, const char *name,
		       const uint8_t *buf, size_t len, FILE *err);

void ladder_model_free(struct ladder_model *m);

/* Flag names for the renderers: "retry", "duplicate", "crossed". */
const char *ladder_flag_name(unsigned flag);

/* "4.29 s", "268 ms", "17.4 us": a duration for labels. */
void ladder_format_duration(char *buf, size_t len, uint64_t ns);

#endif
