/* SPDX-License-Identifier: MIT */
/* Layout types by layouttype4 (layout/type.h). */
#include "config.h"

#include <stddef.h>

#include "layout/flexfiles.h"
#include "layout/type.h"

static const struct layout_type_ops *const layout_types[] = {
    &layout_ff_ops,
};

const struct layout_type_ops *layout_type_find(uint32_t type)
{
	for (size_t i = 0; i < sizeof(layout_types) / sizeof(layout_types[0]); i++)
		if (layout_types[i]->type == type)
			return layout_types[i];
	return NULL;
}
