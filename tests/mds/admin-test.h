/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the administration tests (mds/admin.c, nfsd/xdr/braid_admin.x):
 * calls to braid-mds's administration program signed with the cluster key
 * (AUTH_BRAID, as braidctl makes them) or sent with another flavor.
 *
 * Include "config.h" and "tests/mds/mds-test.h" (or mds-ds-test.h) first.
 */
#ifndef BRAID_TESTS_MDS_ADMIN_TEST_H
#define BRAID_TESTS_MDS_ADMIN_TEST_H

#include "braid_admin.h"

#include "nfsd/auth_braid.h"

static inline const struct xdr_proc_desc *at_desc(uint32_t proc)
{
	return &xdr_desc_BRAID_ADMIN_PROGRAM_BRAID_ADMIN_V1.procs[proc];
}

/* A call with flavor (NFSD_AUTH_BRAID: signed with m's key): the RPC
 * result (0), res decoded into ar. */
static inline int at_call_flavor(struct mt *m, uint32_t flavor, uint32_t proc, const void *args,
				 void *res, struct xdr_arena *ar)
{
	if (flavor == NFSD_AUTH_BRAID)
		return braid_auth_call(m->c, &m->key, &xdr_desc_BRAID_ADMIN_PROGRAM_BRAID_ADMIN_V1,
				       proc, args, res, ar);
	const struct xdr_proc_desc *d = at_desc(proc);
	struct nfsd_call_opts o = {.prog = BRAID_ADMIN_PROGRAM,
				   .vers = BRAID_ADMIN_V1,
				   .proc = proc,
				   .enc_args = d->arg_size ? d->enc_arg : NULL,
				   .args = args,
				   .flavor = flavor};
	return nfsd_clnt_call(m->c, &o, d->res_size ? d->dec_res : NULL, res, ar);
}

/* A signed call that must get a reply. */
static inline void at_call(struct mt *m, uint32_t proc, const void *args, void *res,
			   struct xdr_arena *ar)
{
	CHECK_EQ(at_call_flavor(m, NFSD_AUTH_BRAID, proc, args, res, ar), 0);
}

/* A procedure answering braid_admin_res: its status, the message in msg. */
static inline int32_t at_change(struct mt *m, uint32_t proc, const void *args, char *msg,
				size_t size)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_res r;
	at_call(m, proc, args, &r, &ar);
	CHECK(r.message.len > 0); /* always says what happened */
	if (msg) {
		size_t n = r.message.len < size - 1 ? r.message.len : size - 1;
		memcpy(msg, r.message.val, n);
		msg[n] = 0;
	}
	fprintf(stderr, "  admin proc %u: %d: %.*s\n", proc, r.status, (int)r.message.len,
		(const char *)r.message.val);
	xdr_arena_release(&ar);
	return r.status;
}

/* An xdr_string equals s. */
static inline bool at_eq(xdr_string x, const char *s)
{
	return x.len == strlen(s) && !memcmp(x.val, s, x.len);
}

/* An xdr_string holds s. */
static inline bool at_has(xdr_string x, const char *s)
{
	char b[BRAID_ADMIN_MSG_MAX + 1];
	size_t n = x.len < BRAID_ADMIN_MSG_MAX ? x.len : BRAID_ADMIN_MSG_MAX;
	memcpy(b, x.val, n);
	b[n] = 0;
	return strstr(b, s) != NULL;
}

#endif
