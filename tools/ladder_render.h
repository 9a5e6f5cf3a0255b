/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Renderers of madcm ladder's model (ladder_model.h): a plain SVG, a
 * self-contained HTML page with that SVG inline, and JSON for scripts.
 * They only read the model.
 */
#ifndef MADCM_TOOLS_LADDER_RENDER_H
#define MADCM_TOOLS_LADDER_RENDER_H

#include <stdio.h>

#include "tools/ladder_model.h"

/* "#rrggbb" of a connection's colour index (a fixed palette, cycled). */
const char *ladder_colour(unsigned colour);

/* Each returns 0, or -EIO when writing failed.  `source` names the capture. */
int ladder_render_svg(FILE *out, const struct ladder_model *m, const char *source);
int ladder_render_html(FILE *out, const struct ladder_model *m, const char *source);
int ladder_render_json(FILE *out, const struct ladder_model *m, const char *source);

#endif
