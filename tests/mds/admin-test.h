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
int at_call_flavor(struct mt *m, uint32_t flavor, uint32_t proc, const void *args, void *res,
		   struct xdr_arena *ar);

/* A signed call that must get a reply. */
void at_call(struct mt *m, uint32_t proc, const void *args, void *res, struct xdr_arena *ar);

/* A procedure answering braid_admin_res: its status, the message in msg. */
int32_t at_change(struct mt *m, uint32_t proc, const void *args, char *msg, size_t size);

/* An xdr_string equals s. */
static inline bool at_eq(xdr_string x, const char *s)
{
	return x.len == strlen(s) && !memcmp(x.val, s, x.len);
}

/* An xdr_string holds s.  Inline, like attr-test.h's at_has() of a bitmap4:
 * the two names would clash in tests/libtestmds.a. */
static inline bool at_has(xdr_string x, const char *s)
{
	char b[BRAID_ADMIN_MSG_MAX + 1];
	size_t n = x.len < BRAID_ADMIN_MSG_MAX ? x.len : BRAID_ADMIN_MSG_MAX;
	memcpy(b, x.val, n);
	b[n] = 0;
	return strstr(b, s) != NULL;
}

#endif
