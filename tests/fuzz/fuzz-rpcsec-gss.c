/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for RPCSEC_GSS's decoding (nfsd/auth_gss.c): the input is a
 * call from the procedure number on (proc, credential flavor and body,
 * verifier flavor and body, arguments), handed to the flavor's accept(),
 * then unwrap() and wrap() as the engine would.  No keytab: an INIT's
 * token goes through gss_accept_sec_context and fails there, DATA and
 * DESTROY meet the handle check.  Invariants: no crash, no leak, and an
 * INIT or CONTINUE_INIT that is accepted answers an init_res that
 * decodes, with no handle when its GSS status is an error.
 */
#include <stdlib.h>
#include <string.h>

#include "nfsd/auth_gss.h"
#include "rpcsec_gss.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap);

static const struct nfsd_auth_flavor *flavor(void)
{
	static struct nfsd_gss *g;
	if (!g) {
		int err;
		g = nfsd_gss_new(&(struct nfsd_gss_opts){.max_contexts = 64}, &err);
		if (!g)
			abort();
	}
	return nfsd_gss_flavor(g);
}

static void run(struct nfsd_req *r, const uint8_t *data, size_t size)
{
	struct xdr_dec d;
	uint32_t proc, cflav, vflav;
	xdr_opaque cred, verf;
	xdr_dec_init(&d, data, size, NULL);
	if (xdr_dec_uint32(&d, &proc) || xdr_dec_uint32(&d, &cflav) ||
	    xdr_dec_opaque(&d, &cred, 400) || xdr_dec_uint32(&d, &vflav) ||
	    xdr_dec_opaque(&d, &verf, 400))
		return;
	r->proc = proc & 1;
	r->flavor = flavor();
	r->rec = data;
	r->rec_len = size;
	xdr_dec_init(&r->dec, d.p, xdr_dec_left(&d), &r->arena);
	xdr_enc_init(&r->enc, r->iov, 32, r->scratch, sizeof(r->scratch), &r->arena);
	r->res_buf = r->scratch;
	r->res_buf_size = sizeof(r->scratch);
	if (r->flavor->accept(r, &cred, &verf) != NFSD_AUTH_OK || r->flavor->unwrap(r) < 0)
		return;
	if (r->flavor->wrap(r) < 0 || r->enc.err)
		return;
	rpc_gss_cred_t gc;
	struct xdr_dec cd;
	xdr_dec_init(&cd, cred.val, cred.len, &r->arena);
	if (xdr_dec_rpc_gss_cred_t(&cd, &gc) ||
	    (gc.u.rgc_cred_v1.gss_proc != RPCSEC_GSS_INIT &&
	     gc.u.rgc_cred_v1.gss_proc != RPCSEC_GSS_CONTINUE_INIT))
		return;
	uint8_t *flat = malloc(r->enc.len + 1);
	if (!flat)
		abort();
	xdr_enc_flatten(&r->enc, flat);
	rpc_gss_init_res res;
	struct xdr_dec rd;
	xdr_dec_init(&rd, flat, r->enc.len, &r->arena);
	if (xdr_dec_rpc_gss_init_res(&rd, &res) || xdr_dec_left(&rd))
		abort();
	if ((res.gss_major & 0xffff0000u) && res.handle.len)
		abort();
	free(flat);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nfsd_req r;
	memset(&r, 0, sizeof(r));
	xdr_arena_init(&r.arena, r.arena_buf, sizeof(r.arena_buf), 1u << 20);
	run(&r, data, size);
	if (r.on_free)
		r.on_free(r.on_free_arg);
	xdr_arena_release(&r.arena);
	return 0;
}

/* Well-formed calls: INIT with a token of random bytes, DATA and DESTROY
 * with a handle of the right length, each service. */
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap)
{
	uint32_t words[128];
	unsigned n = 0, gp = (unsigned)(seed % 4), tok = (unsigned)(seed / 4 % 64);
	if (cap < sizeof(words))
		return 0;
	words[n++] = 0;		      /* proc */
	words[n++] = NFSD_RPCSEC_GSS; /* credential */
	words[n++] = gp == 0 || gp == 3 ? 36 : 20;
	words[n++] = 1;
	words[n++] = gp;
	words[n++] = (uint32_t)(seed >> 8);
	words[n++] = 1 + (uint32_t)(seed / 7 % 3);
	if (gp == 0 || gp == 3) {
		words[n++] = 16;
		for (int i = 0; i < 4; i++)
			words[n++] = (uint32_t)(seed * 2654435761u + (unsigned)i);
	} else {
		words[n++] = 0;
	}
	words[n++] = gp == 0 || gp == 3 ? NFSD_RPCSEC_GSS : 0; /* verifier */
	words[n++] = 0;
	words[n++] = tok * 4; /* arguments: an opaque */
	for (unsigned i = 0; i < tok; i++)
		words[n++] = (uint32_t)(seed * 40503u + i * 2246822519u);
	for (unsigned i = 0; i < n; i++)
		xdr_put32(buf + 4 * i, words[i]);
	return 4 * n;
}
