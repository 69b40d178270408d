/* SPDX-License-Identifier: MIT */
/* The erasure-coding cluster tests' fixture (tests/client/ec-test.h). */
#include "config.h"

#include "tests/client/ec-test.h"
#include "tests/dataserver/store-test.h"
#include "ctl/objid.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "layout/ec.h"
#include "mds/ec.h"

#define MiB (1u << 20)

struct ffc *ect_start(const struct ect *e, const char *conf)
{
	mt_start(e->m, "/ *(rw,no_root_squash,insecure)\n", conf);
	cl_pin_port(e->m, conf);
	for (unsigned i = 0; i < e->nds; i++) {
		char name[16];
		snprintf(name, sizeof(name), "ds-%u", i);
		cds_prepare(e->m, &e->d[i], name, NULL);
		cds_start(e->m, &e->d[i]);
	}
	struct ffc_opts o = {.ds_timeout_ms = 2000};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", e->m->port, &o, &err);
	CHECK(c);
	return c;
}

uint64_t ect_write(const struct ect *e, struct ffc *c, const char *dir_path, uint64_t dir,
		   const char *name, uint8_t *buf, uint64_t size, unsigned seed)
{
	char path[256];
	double secs;
	snprintf(path, sizeof(path), "%s/%s", dir_path, name);
	dt_fill(buf, 0, size, seed);
	CHECK_EQ(ffct_write_sync(c, path, buf, 0, size, true, &secs), 0);
	return ffct_ino_of(e->m, name, dir);
}

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
	uint8_t *dbuf = malloc((size_t)k * MiB), *par = malloc((size_t)pm * MiB),
		*got = malloc(MiB);
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
			ssize_t n = ds_store_read(braid_ds_store(d->ds), &pid, uid, gid, s * MiB,
						  MiB, got, &eof);
			CHECK(n >= 0);
			CHECK(!memcmp(got, pv[r], MiB));
		}
	}
	free(dbuf);
	free(par);
	free(got);
	ec_code_free(code);
}

/* Chunk i's object id and its offset there. */
static void chunk_obj(const struct ect *e, const struct mds_attr *a, uint64_t s, unsigned i,
		      struct ds_objid *id, uint64_t *off)
{
	mds_data_objid(a, id);
	if (i < e->k) {
		*off = (s * e->k + i) * MiB;
	} else {
		struct ds_objid d = *id;
		ds_objid_parity(&d, id);
		*off = s * MiB;
	}
}

void ect_chunk_read(const struct ect *e, uint64_t ino, uint64_t s, unsigned i, uint8_t *out)
{
	struct mds_attr a = cl_attr(e->m, ino);
	struct mds_file_map fm;
	CHECK_EQ(mds_data_map(e->m->mds, ino, &fm), 0);
	uint32_t uid, gid, ids[EC_K_MAX + EC_M_MAX];
	mds_data_fence_epoch(e->m->mds, &a, fm.epoch, &uid, &gid);
	ect_stripe_ids(e, ino, s, ids);
	struct ds_objid id;
	uint64_t off;
	chunk_obj(e, &a, s, i, &id, &off);
	bool eof;
	memset(out, 0, MiB);
	ssize_t n = ds_store_read(braid_ds_store(ect_cds(e, ids[i])->ds), &id, uid, gid, off, MiB,
				  out, &eof);
	CHECK(n >= 0);
}

void ect_chunk_file(const struct ect *e, uint64_t ino, uint64_t s, unsigned i, char *out,
		    size_t outlen)
{
	struct mds_attr a = cl_attr(e->m, ino);
	uint32_t ids[EC_K_MAX + EC_M_MAX];
	ect_stripe_ids(e, ino, s, ids);
	struct ds_objid id;
	uint64_t off;
	chunk_obj(e, &a, s, i, &id, &off);
	st_obj_path(ect_cds(e, ids[i])->set.store_dir, &id, "", out, outlen);
}

/* Stripe s's data (k chunks, zero-padded past size) into data. */
static void stripe_data(const struct ect *e, uint64_t s, uint64_t size, unsigned seed,
			uint8_t *data)
{
	for (unsigned j = 0; j < e->k; j++) {
		uint64_t off = (s * e->k + j) * MiB;
		memset(data + j * MiB, 0, MiB);
		if (off < size)
			dt_fill(data + j * MiB, off, size - off < MiB ? size - off : MiB, seed);
	}
}

void ect_subsets_check(const struct ect *e, uint64_t ino, uint64_t size, unsigned seed)
{
	unsigned n = e->k + e->pm;
	struct ec_code *code;
	CHECK_EQ(ec_code_new(e->k, e->pm, &code), 0);
	uint8_t *chunks = malloc((size_t)n * MiB), *data = malloc((size_t)e->k * MiB);
	uint8_t *out = malloc((size_t)e->k * MiB);
	CHECK(chunks && data && out);
	uint64_t nstripes = (size + (uint64_t)e->k * MiB - 1) / ((uint64_t)e->k * MiB);
	unsigned combos = 0;
	for (uint64_t s = 0; s < nstripes; s++) {
		stripe_data(e, s, size, seed, data);
		for (unsigned i = 0; i < n; i++) {
			ect_chunk_read(e, ino, s, i, chunks + (size_t)i * MiB);
			/* a data chunk past the end is zeros, whatever the object holds */
			if ((s * e->k + i) * MiB >= size && i < e->k)
				memset(chunks + (size_t)i * MiB, 0, MiB);
		}
		for (uint32_t mask = 0; mask < 1u << n; mask++) {
			if ((unsigned)__builtin_popcount(mask) != e->k)
				continue;
			unsigned have_idx[EC_K_MAX], want_idx[EC_K_MAX], h = 0;
			const uint8_t *have[EC_K_MAX];
			uint8_t *outv[EC_K_MAX];
			for (unsigned i = 0; i < n; i++)
				if (mask >> i & 1) {
					have_idx[h] = i;
					have[h++] = chunks + (size_t)i * MiB;
				}
			for (unsigned j = 0; j < e->k; j++) {
				want_idx[j] = j;
				outv[j] = out + (size_t)j * MiB;
			}
			CHECK_EQ(ec_rebuild(code, MiB, have_idx, have, e->k, want_idx, outv), 0);
			for (unsigned j = 0; j < e->k; j++) {
				/* a copied chunk may be the input itself */
				const uint8_t *got = outv[j];
				CHECK(!memcmp(got, data + (size_t)j * MiB, MiB));
			}
			combos++;
		}
	}
	printf("every %u of %u chunks decode to the data: %u combinations over %llu stripes\n",
	       e->k, n, combos, (unsigned long long)nstripes);
	free(chunks);
	free(data);
	free(out);
	ec_code_free(code);
}
