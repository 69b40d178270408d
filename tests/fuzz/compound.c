/* SPDX-License-Identifier: MIT */
/* What the COMPOUND fuzz targets share (tests/fuzz/compound.h). */
#include "config.h"

#include "tests/fuzz/compound.h"

void fuzz_req_init(struct nfsd_req *r, const uint8_t *body, size_t len)
{
	xdr_arena_init(&r->arena, r->arena_buf, sizeof(r->arena_buf), 4u << 20);
	xdr_dec_init(&r->dec, body, len, &r->arena);
	xdr_enc_init(&r->enc, r->iov, sizeof(r->iov) / sizeof(r->iov[0]), r->scratch,
		     sizeof(r->scratch), &r->arena);
}

size_t fuzz_compound_encode(uint8_t *buf, size_t cap, const COMPOUND4args *args)
{
	static struct iovec iov[1024];
	struct xdr_arena a;
	struct xdr_enc e;
	xdr_arena_init(&a, NULL, 0, 8u << 20);
	xdr_enc_init(&e, iov, sizeof(iov) / sizeof(iov[0]), NULL, 0, &a);
	size_t len = 0;
	if (!xdr_enc_COMPOUND4args(&e, args) && !e.err && e.len <= cap) {
		xdr_enc_flatten(&e, buf);
		len = e.len;
	}
	xdr_arena_release(&a);
	return len;
}

uint32_t fuzz_compound_nops(const uint8_t *b, size_t n)
{
	size_t tl = n >= 4 ? xdr_get32(b) : 0;
	size_t off = 4 + ((tl + 3) & ~(size_t)3) + 4;
	return tl <= n && off + 4 <= n ? xdr_get32(b + off) : 0;
}

void fuzz_compound_reply_check(struct xdr_arena *a, const uint8_t *out, size_t len, uint32_t nops,
			       COMPOUND4res *res)
{
	struct xdr_dec d;
	xdr_arena_init(a, NULL, 0, 8u << 20);
	xdr_dec_init(&d, out, len, a);
	if (xdr_dec_COMPOUND4res(&d, res) || xdr_dec_left(&d))
		abort();
	if (res->resarray.len > nops)
		abort();
	if (res->resarray.len) {
		nfsstat4 last;
		memcpy(&last, &res->resarray.val[res->resarray.len - 1].u, sizeof(last));
		if (last != res->status)
			abort();
	} else if (res->status != NFS4_OK && res->status != NFS4ERR_MINOR_VERS_MISMATCH) {
		abort();
	}
}

void fuzz_seed_dir_fill(const char *name, uint64_t n)
{
	const char *dir = getenv("BRAID_FUZZ_SEED_DIR");
	if (!dir || !*dir)
		return;
	DIR *dh = opendir(dir);
	if (!dh)
		return;
	struct dirent *de;
	while ((de = readdir(dh)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			break;
	closedir(dh);
	if (de)
		return;
	static uint8_t buf[1u << 16];
	for (uint64_t i = 0; i < n; i++) {
		size_t len = braid_fuzz_seed(i, buf, sizeof(buf));
		char path[4096];
		if (!len)
			continue;
		snprintf(path, sizeof(path), "%s/seed-%s-%05u", dir, name, (unsigned)i);
		FILE *f = fopen(path, "wb");
		if (!f)
			break;
		fwrite(buf, 1, len, f);
		fclose(f);
	}
}
