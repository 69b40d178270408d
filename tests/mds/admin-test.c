/* SPDX-License-Identifier: MIT */
/* Helpers for the administration tests (tests/mds/admin-test.h). */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/admin-test.h"

int at_call_flavor(struct mt *m, uint32_t flavor, uint32_t proc, const void *args, void *res,
		   struct xdr_arena *ar)
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

void at_call(struct mt *m, uint32_t proc, const void *args, void *res, struct xdr_arena *ar)
{
	CHECK_EQ(at_call_flavor(m, NFSD_AUTH_BRAID, proc, args, res, ar), 0);
}

int32_t at_change(struct mt *m, uint32_t proc, const void *args, char *msg, size_t size)
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
