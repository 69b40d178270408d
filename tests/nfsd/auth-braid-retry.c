/* SPDX-License-Identifier: MIT */
/*
 * The one signed call (braid_auth_call, nfsd/auth_braid.h) that the
 * control client, braidctl and the tests share, and its one retry rule: a
 * call refused as stale or replayed (AUTH_REJECTEDCRED, AUTH_REJECTEDVERF)
 * is signed afresh and made once more; nothing else is retried, and never
 * more than once.
 *
 * The server's flavor is AUTH_BRAID's own accept behind a script: a
 * scripted refusal answers that auth_stat, "real" runs the real check.  A
 * refusal after the real check has accepted (and remembered) the call
 * makes the retry pass only if it is signed afresh: the same nonce again
 * would be a replay.
 */
#include "config.h"

#include <netinet/in.h>
#include <stdatomic.h>
#include <string.h>

#include "nfsd/auth_braid.h"
#include "tests/check.h"

#define PROG	     0x20000097u
#define REAL	     -1		   /* script step: the real AUTH_BRAID check */
#define REAL_THEN(s) (0x100 | (s)) /* the real check, then refuse with s anyway */

static struct nfsd_auth_flavor scripted;
static const struct nfsd_auth_flavor *real;
static int script[4];
static atomic_int attempts;

static int scripted_accept(struct nfsd_req *req, const xdr_opaque *cred, const xdr_opaque *verf)
{
	int n = atomic_fetch_add(&attempts, 1);
	int step = n < 4 ? script[n] : REAL;
	if (step == REAL)
		return real->accept(req, cred, verf);
	if (step & 0x100) {
		CHECK_EQ(real->accept(req, cred, verf), NFSD_AUTH_OK);
		return step & 0xff;
	}
	return step;
}

static int p_null(struct nfsd_req *r, void *a, void *res)
{
	(void)r, (void)a, (void)res;
	return NFSD_SUCCESS;
}
static const struct nfsd_proc procs[1] = {
    {.name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE},
};
static const struct nfsd_version vers[1] = {{.vers = 1, .procs = procs, .nprocs = 1}};
static const struct nfsd_program prog = {
    .prog = PROG,
    .name = "retry-test",
    .versions = vers,
    .nversions = 1,
};
static const struct xdr_proc_desc dprocs[1] = {{.proc = 0, .name = "NULL"}};
static const struct xdr_vers_desc desc = {
    .prog = PROG,
    .vers = 1,
    .name = "retry-test",
    .procs = dprocs,
    .nprocs = 1,
};

static struct nfsd_clnt *clnt;
static struct braid_key key;

static void run(int s0, int s1, int want_rc, int want_attempts)
{
	script[0] = s0;
	script[1] = s1;
	script[2] = script[3] = REAL;
	atomic_store(&attempts, 0);
	CHECK_EQ(braid_auth_call(clnt, &key, &desc, 0, NULL, NULL, NULL), want_rc);
	CHECK_EQ(atomic_load(&attempts), want_attempts);
}

int main(void)
{
	uint8_t raw[BRAID_KEY_BYTES];
	for (unsigned i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7 + 1);
	braid_key_from_bytes(&key, raw);
	struct braid_auth *auth = braid_auth_new(&key);
	CHECK(auth);
	real = braid_auth_flavor(auth);
	scripted = *real;
	scripted.accept = scripted_accept;

	int err = 0;
	struct nfsd_server *s = nfsd_server_new(NULL, &err);
	CHECK(s);
	CHECK_EQ(nfsd_server_add_flavor(s, &scripted), 0);
	CHECK_EQ(nfsd_server_add_program(s, &prog), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(nfsd_server_listen(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(nfsd_server_start(s), 0);
	sa.sin_port = htons((uint16_t)nfsd_server_listen_port(s, 0));
	clnt = nfsd_clnt_new(s, (struct sockaddr *)&sa, sizeof(sa), NULL, &err);
	CHECK(clnt);

	const int denied = NFSD_CALL_ERR_DENIED;
	run(REAL, REAL, 0, 1);
	/* stale (outside the window, or the window full): once more */
	run(NFSD_AUTH_REJECTEDCRED, REAL, 0, 2);
	/* a replay: once more, freshly signed (the real check remembers the
	 * first nonce, so a resent copy would be refused) */
	run(REAL_THEN(NFSD_AUTH_REJECTEDVERF), REAL, 0, 2);
	run(REAL_THEN(NFSD_AUTH_REJECTEDCRED), REAL, 0, 2);
	/* only once */
	run(NFSD_AUTH_REJECTEDCRED, NFSD_AUTH_REJECTEDCRED, denied | NFSD_AUTH_REJECTEDCRED, 2);
	run(NFSD_AUTH_REJECTEDVERF, NFSD_AUTH_REJECTEDVERF, denied | NFSD_AUTH_REJECTEDVERF, 2);
	/* forged or malformed: never */
	run(NFSD_AUTH_BADVERF, REAL, denied | NFSD_AUTH_BADVERF, 1);
	run(NFSD_AUTH_BADCRED, REAL, denied | NFSD_AUTH_BADCRED, 1);
	run(NFSD_AUTH_TOOWEAK, REAL, denied | NFSD_AUTH_TOOWEAK, 1);

	nfsd_clnt_free(clnt);
	nfsd_server_free(s);
	braid_auth_free(auth);
	return 0;
}
