/* SPDX-License-Identifier: MIT */
/* The erasure-coding cluster tests' fixture (tests/client/ec-test.h). */
#include "config.h"

#include "tests/client/ec-test.h"
#include "ctl/objid.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "layout/ec.h"
#include "mds/ec.h"

#define MiB (1u << 20)

struct cds *ect_cds(const struct ect *e, uint32_t id)
{
	for (unsigned i = 0; i < e->nds; i++)
		if (e->d[i].id == id)
			return &e->d[i];
	CHECK(0);
	return NULL;
}

bool ect_sealed(const struct ect *e, uint64_t ino)
{
	struct mds_ec_file f;
	return !mds_ec_file_get(e->m->mds, ino, &f) && f.sealed;
}

void ect_wait_sealed(const struct ect *e, uint64_t ino, const char *what)
{
	double t0 = cl_now();
	while (!ect_sealed(e, ino)) {
		CHECK(cl_now() - t0 < 30);
		usleep(50 * 1000);
	}
	printf("%s sealed after %.2f s\n", what, cl_now() - t0);
}

uint32_t ect_seg_ds(const struct ect *e, uint64_t ino, uint64_t n)
{
	struct mds_layout_seg seg;
	CHECK_EQ(mds_layout_get(braid_mds_store(e->m->mds), ino, n, &seg), 0);
	return seg.ds[0];
}

void ect_stripe_ids(const struct ect *e, uint64_t ino, uint64_t s, uint32_t *ids)
{
	for (unsigned j = 0; j < e->k; j++)
		ids[j] = ect_seg_ds(e, ino, s * e->k + j);
	CHECK_EQ(mds_ec_parity_get(e->m->mds, ino, s, ids + e->k, e->pm), 0);
}

void ect_stripes_check(const struct ect *e, uint64_t ino, uint64_t size, unsigned seed, bool data)
{
	unsigned k = e->k, pm = e->pm;
	struct ec_code *code;
	CHECK_EQ(ec_code_new(k, pm, &code), 0);
	struct mds_attr a = cl_attr(e->m, ino);
	struct mds_file_map fm;
	CHECK_EQ(mds_data_map(e->m->mds, ino, &fm), 0);
	uint32_t uid, gid;
	mds_data_fence_epoch(e->m->mds, &a, fm.epoch, &uid, &gid);
	struct ds_objid id, pid;
	mds_data_objid(&a, &id);
	ds_objid_parity(&id, &pid);
	uint8_t *dbuf = malloc((size_t)k * MiB), *par = malloc((size_t)pm * MiB), *got = malloc(MiB);
	CHECK(dbuf && par && got);
	uint64_t nstripes = (size + (uint64_t)k * MiB - 1) / ((uint64_t)k * MiB);
	for (uint64_t s = 0; s < nstripes; s++) {
		const uint8_t *dv[LAYOUT_EC_K_MAX];
		uint8_t *pv[LAYOUT_EC_M_MAX];
		uint32_t ids[LAYOUT_EC_K_MAX + LAYOUT_EC_M_MAX];
		ect_stripe_ids(e, ino, s, ids);
		for (unsigned i = 0; i < k + pm; i++)
			for (unsigned j = 0; j < i; j++)
				CHECK(ids[i] != ids[j]); /* a stripe's chunks on distinct servers */
		bool eof;
		for (unsigned j = 0; j < k; j++) {
			uint64_t off = (s * k + j) * MiB, len = off < size ? size - off : 0;
			len = len < MiB ? len : MiB;
			memset(dbuf + j * MiB, 0, MiB);
			if (len)
				dt_fill(dbuf + j * MiB, off, len, seed);
			dv[j] = dbuf + j * MiB;
			if (!data || !len)
				continue;
			struct cds *d = ect_cds(e, ids[j]);
			CHECK_EQ(ds_store_read(braid_ds_store(d->ds), &id, uid, gid, off, len, got,
					       &eof),
				 (ssize_t)len);
			CHECK(!memcmp(got, dv[j], len));
		}
		for (unsigned r = 0; r < pm; r++)
			pv[r] = par + r * MiB;
		ec_encode(code, MiB, dv, pv);
		for (unsigned r = 0; r < pm; r++) {
			struct cds *d = ect_cds(e, ids[k + r]);
			memset(got, 0, MiB);
			ssize_t n = ds_store_read(braid_ds_store(d->ds), &pid, uid, gid, s * MiB, MiB,
						  got, &eof);
			CHECK(n >= 0);
			CHECK(!memcmp(got, pv[r], MiB));
		}
	}
	free(dbuf);
	free(par);
	free(got);
	ec_code_free(code);
}
