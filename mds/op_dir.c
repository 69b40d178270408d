/* SPDX-License-Identifier: MIT */
/* Being written: see mds_impl.h for what this file owns. */
#include "config.h"

#include "mds/mds_impl.h"

const struct mds_opdef mds_ops_dir[] = {
	{ 0 },
};
