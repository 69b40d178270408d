/* SPDX-License-Identifier: MIT */
/*
 * The flexible file layout type (RFC 8435).  Loosely coupled: each data
 * server is named once per mirror with the object's handle for every
 * version it speaks, the anonymous stateid and the file's synthetic
 * uid/gid as numeric strings (§2.2, §5.1).  Tightly coupled (the device's
 * 'tight', for RPCSEC_GSS clients): only the NFSv4.x versions that take
 * RPCSEC_GSS, ffdv_tightly_coupled set, and the stateid a capability
 * (ctl/cap.h) the caller put in the layout_dserver.
 */
#ifndef BRAID_LAYOUT_FLEXFILES_H
#define BRAID_LAYOUT_FLEXFILES_H

#include <stdbool.h>

#include "layout/type.h"

/* ffdv_rsize / ffdv_wsize at most: the Linux client's maximum */
#define LAYOUT_FF_IO_MAX (1u << 20)

/* LAYOUT4_FLEX_FILES */
extern const struct layout_type_ops layout_ff_ops;

/* Versions a layout may name (RFC 8435 §5.1): NFSv3, NFSv4.1, NFSv4.2,
 * with a READ and WRITE size. */
bool layout_ff_version_ok(const struct layout_version *v);

#endif
