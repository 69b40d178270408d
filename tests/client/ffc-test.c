/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "tests/client/ffc-test.h"

#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "layout/policy.h"
#include "mds/layout.h"

int ffct_write_sync(struct ffc *c, const char *path, const uint8_t *buf, uint64_t off, size_t len,
		    bool creat, double *secs)
{
	int err = 0;
	double t0 = cl_now();
	struct ffc_file *f =
	    ffc_open(c, path, FFC_RDWR | (creat ? FFC_CREAT | FFC_EXCL : 0), 0644, &err);
	if (!f) {
		*secs = cl_now() - t0;
		return err;
	}
	ssize_t n = ffc_pwrite(f, buf, len, off);
	int rc = n < 0 ? (int)n : n != (ssize_t)len ? -EIO : 0;
	int rs = ffc_fsync(f);
	int rclose = ffc_close(f);
	*secs = cl_now() - t0;
	return rc ? rc : rs ? rs : rclose;
}

void ffct_read_check(struct ffc *c, const char *path, uint64_t len, unsigned seed)
{
	int err = 0;
	struct ffc_file *f = ffc_open(c, path, FFC_RDONLY, 0, &err);
	CHECK(f);
	uint8_t *rb = malloc(len ? len : 1);
	CHECK(rb);
	CHECK_EQ(ffc_pread(f, rb, len, 0), (ssize_t)len);
	if (!dt_check(rb, 0, len, seed)) {
		/* where it first differs, for the log */
		uint8_t *want = malloc(len);
		CHECK(want);
		dt_fill(want, 0, len, seed);
		uint64_t at = 0;
		while (at < len && rb[at] == want[at])
			at++;
		uint64_t end = at;
		while (end < len && rb[end] != want[end])
			end++;
		uint64_t bad = 0, last = at;
		for (uint64_t k = at; k < len; k++)
			if (rb[k] != want[k]) {
				bad++;
				last = k;
			}
		fprintf(stderr,
			"%s: %llu bytes, first differs at %llu (got %02x, want %02x), %llu bytes "
			"differ, the last at %llu\n",
			path, (unsigned long long)len, (unsigned long long)at, rb[at], want[at],
			(unsigned long long)bad, (unsigned long long)last);
		(void)end;
		free(want);
		CHECK(!"the bytes read back are the bytes written");
	}
	CHECK_EQ(ffc_close(f), 0);
	free(rb);
}

void ffct_object_check(struct mt *m, struct cds *d, uint64_t ino, uint64_t len, unsigned seed)
{
	struct mds_attr a = cl_attr(m, ino);
	struct ds_objid id;
	mds_data_objid(&a, &id);
	struct mds_file_map fm;
	CHECK_EQ(mds_data_map(m->mds, ino, &fm), 0);
	uint32_t uid, gid;
	mds_data_fence_epoch(m->mds, &a, fm.epoch, &uid, &gid);
	uint8_t *rb = malloc(len);
	CHECK(rb);
	bool eof;
	CHECK_EQ(ds_store_read(braid_ds_store(d->ds), &id, uid, gid, 0, len, rb, &eof),
		 (ssize_t)len);
	CHECK(dt_check(rb, 0, len, seed));
	free(rb);
}

uint64_t ffct_ino_of(struct mt *m, const char *name, uint64_t dir)
{
	uint64_t ino;
	CHECK_EQ(mds_dir_lookup(braid_mds_store(m->mds), dir, name, strlen(name), &ino, NULL), 0);
	return ino;
}

uint64_t ffct_mkdir_policy(struct mt *m, struct ffc *c, const char *path, const char *policy)
{
	CHECK_EQ(ffc_mkdir(c, path, 0755), 0);
	struct layout_policy pol;
	char why[200];
	CHECK_EQ(layout_policy_parse(policy, &pol, why, sizeof(why)), 0);
	CHECK(path[0] == '/' && !strchr(path + 1, '/'));
	uint64_t ino = ffct_ino_of(m, path + 1, mds_store_root(braid_mds_store(m->mds)));
	CHECK_EQ(mds_layout_policy_set(m->mds, ino, &pol), 0);
	return ino;
}
