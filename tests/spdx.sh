#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Every source, script, build fragment and man page carries the project's
# SPDX line (COPYING): a file added without one fails here.
exec sh "${top_srcdir:-$(dirname "$0")/..}/scripts/spdx.sh"
