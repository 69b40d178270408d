/* SPDX-License-Identifier: MIT */
/*
 * Starting the write-back of an object's recent writes without waiting for
 * it (ds_store_writeback), so that a long run of UNSTABLE writes (a COPY
 * from another data server) reaches the disk while more arrive, and the
 * sync that ends the run has little left to do.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>

#include "dataserver/store_impl.h"

int ds_store_writeback(struct ds_store *st, const struct ds_objid *id, uint64_t off, uint64_t len)
{
	if (!id || off > DS_STORE_MAX_SIZE || len > DS_STORE_MAX_SIZE - off)
		return -EINVAL;
	if (!len)
		return 0;
	struct ds_ring *r;
	struct ds_obj *o;
	int rc = st_obj_begin(st, id, false, &r, &o);
	if (rc)
		return rc;
	uint64_t b0 = off >> st->bs_shift, b1 = (off + len - 1) >> st->bs_shift;
	/* O_DIRECT data is on the disk already; its CRC table is not */
	if (!st->direct &&
	    sync_file_range(o->dfd, (off64_t)(b0 << st->bs_shift),
			    (off64_t)((b1 - b0 + 1) << st->bs_shift), SYNC_FILE_RANGE_WRITE))
		rc = -errno;
	if (!rc && sync_file_range(o->mfd, (off64_t)(OBJ_TABLE_OFF + b0 * 8),
				   (off64_t)((b1 - b0 + 1) * 8), SYNC_FILE_RANGE_WRITE))
		rc = -errno;
	st_obj_end(st, r, o);
	return rc;
}
