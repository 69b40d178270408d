/* SPDX-License-Identifier: MIT */
#include "nfsd/auth_braid.h"
#include "nfsd/bytes.h"
#include "nfsd/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define CRED_LEN 24
#define VERF_LEN 16
#define MAX_SIGNED (1u << 20) /* control calls are small */

/*
 * The replay cache: nonces of the calls accepted within the window, open
 * addressing keyed by the nonce.  A slot whose stamp has left the window
 * is free for reuse; lookups probe past such slots since they may have
 * been in use when a later entry was placed.
 */
#define RC_SLOTS (1u << 18)
#define RC_PROBE 64

struct rc_slot {
	uint64_t nonce, stamp; /* stamp 0: never used */
};

struct braid_auth {
	struct nfsd_auth_flavor flavor;
	struct braid_key key;
	pthread_mutex_t mu;
	uint64_t newest; /* newest stamp accepted */
	struct rc_slot *slots;
	struct braid_auth_stats st;
};

/* The tag of a call: everything but the verifier body, and the 8 bytes of
 * verifier flavor and length just before it. */
static void call_tag(const struct siphash_key *k, const uint8_t *msg, size_t len, size_t verf_off,
		     size_t verf_len, uint8_t *buf, uint8_t tag[16])
{
	size_t a = verf_off - 8, b = len - (verf_off + verf_len);
	memcpy(buf, msg, a);
	memcpy(buf + a, msg + verf_off + verf_len, b);
	siphash24_128(k, buf, a + b, tag);
}

/* Remember nonce at stamp; false if it was seen within the window. */
static bool rc_insert(struct braid_auth *a, uint64_t nonce, uint64_t stamp, uint64_t oldest,
		      bool *full)
{
	uint64_t h = nonce * 0x9e3779b97f4a7c15ull;
	struct rc_slot *free_slot = NULL;
	*full = false;
	for (unsigned i = 0; i < RC_PROBE; i++) {
		struct rc_slot *s = &a->slots[(h + i) & (RC_SLOTS - 1)];
		bool live = s->stamp && s->stamp >= oldest;
		if (live && s->nonce == nonce)
			return false;
		if (!live && !free_slot)
			free_slot = s;
		if (!s->stamp)
			break; /* never used: nothing lies beyond */
	}
	if (!free_slot) {
		*full = true;
		return false;
	}
	free_slot->nonce = nonce;
	free_slot->stamp = stamp;
	return true;
}

static int braid_accept(struct nfsd_req *r, const xdr_opaque *cred, const xdr_opaque *verf)
{
	struct braid_auth *a = r->flavor->priv;
	if (cred->len != CRED_LEN || verf->len != VERF_LEN || !r->rec ||
	    xdr_get32(cred->val) != 1 || r->rec_len > MAX_SIGNED) {
		__atomic_fetch_add(&a->st.bad_cred, 1, __ATOMIC_RELAXED);
		return NFSD_AUTH_BADCRED;
	}
	if (xdr_get32(cred->val + 4) != a->key.id) {
		__atomic_fetch_add(&a->st.other_key, 1, __ATOMIC_RELAXED);
		return NFSD_AUTH_REJECTEDCRED;
	}
	uint8_t *buf = xdr_arena_alloc(&r->arena, r->rec_len);
	if (!buf)
		return NFSD_AUTH_REJECTEDCRED;
	uint8_t tag[16];
	call_tag(&a->key.ctl, r->rec, r->rec_len, (size_t)(verf->val - r->rec), VERF_LEN, buf, tag);
	if (!mac_equal(tag, verf->val, VERF_LEN)) {
		__atomic_fetch_add(&a->st.forged, 1, __ATOMIC_RELAXED);
		return NFSD_AUTH_BADVERF;
	}
	uint64_t stamp = get_be64(cred->val + 8), nonce = get_be64(cred->val + 16);
	uint64_t now = nfsd_wall_ns(), skew = BRAID_AUTH_SKEW_S * 1000000000ull;
	uint64_t window = BRAID_AUTH_WINDOW_S * 1000000000ull;
	if (stamp == 0 || stamp + skew < now || stamp > now + skew) {
		__atomic_fetch_add(&a->st.stale, 1, __ATOMIC_RELAXED);
		return NFSD_AUTH_REJECTEDCRED;
	}
	pthread_mutex_lock(&a->mu);
	uint64_t oldest = a->newest > window ? a->newest - window : 1;
	int rc = NFSD_AUTH_OK;
	bool full;
	if (stamp < oldest) {
		a->st.stale++;
		rc = NFSD_AUTH_REJECTEDCRED;
	} else if (!rc_insert(a, nonce, stamp, oldest, &full)) {
		if (full)
			a->st.stale++; /* too many calls in the window: make the caller retry */
		else
			a->st.replays++;
		rc = full ? NFSD_AUTH_REJECTEDCRED : NFSD_AUTH_REJECTEDVERF;
	} else {
		if (stamp > a->newest)
			a->newest = stamp;
		a->st.accepted++;
	}
	pthread_mutex_unlock(&a->mu);
	if (rc != NFSD_AUTH_OK)
		return rc;
	r->cred.flavor = NFSD_AUTH_BRAID;
	r->cred.uid = r->cred.gid = UINT32_MAX; /* nobody: never an NFS user */
	return NFSD_AUTH_OK;
}

struct braid_auth *braid_auth_new(const struct braid_key *key)
{
	struct braid_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->slots = calloc(RC_SLOTS, sizeof(*a->slots));
	if (!a->slots) {
		free(a);
		return NULL;
	}
	a->key = *key;
	pthread_mutex_init(&a->mu, NULL);
	a->flavor = (struct nfsd_auth_flavor){
		.flavor = NFSD_AUTH_BRAID,
		.name = "braid",
		.accept = braid_accept,
		.priv = a,
	};
	return a;
}

const struct nfsd_auth_flavor *braid_auth_flavor(struct braid_auth *a)
{
	return &a->flavor;
}

void braid_auth_free(struct braid_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->mu);
	free(a->slots);
	memset(&a->key, 0, sizeof(a->key));
	free(a);
}

void braid_auth_stats(struct braid_auth *a, struct braid_auth_stats *st)
{
	pthread_mutex_lock(&a->mu);
	*st = a->st;
	st->bad_cred = __atomic_load_n(&a->st.bad_cred, __ATOMIC_RELAXED);
	st->other_key = __atomic_load_n(&a->st.other_key, __ATOMIC_RELAXED);
	st->forged = __atomic_load_n(&a->st.forged, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&a->mu);
}

/* ------------------------------------------------------------- caller */

static uint64_t nonce_base;
static _Atomic uint64_t nonce_seq;
static pthread_once_t nonce_once = PTHREAD_ONCE_INIT;

static void nonce_init(void)
{
	while (getrandom(&nonce_base, sizeof(nonce_base), 0) != (ssize_t)sizeof(nonce_base))
		;
}

static size_t sign_cred(void *ctx, uint8_t *body)
{
	const struct braid_key *key = ctx;
	pthread_once(&nonce_once, nonce_init);
	uint64_t n = atomic_fetch_add(&nonce_seq, 1);
	xdr_put32(body, 1);
	xdr_put32(body + 4, key->id);
	put_be64(body + 8, nfsd_wall_ns());
	/* distinct for every call of this process (an odd multiplier is a
	 * bijection); a random start keeps processes apart */
	put_be64(body + 16, nonce_base + n * 0x9e3779b97f4a7c15ull);
	return CRED_LEN;
}

static void sign_call(void *ctx, uint8_t *msg, size_t len, size_t verf_off, size_t verf_len)
{
	const struct braid_key *key = ctx;
	uint8_t stackbuf[4096];
	uint8_t *buf = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
	uint8_t tag[16] = { 0 };
	if (buf)
		call_tag(&key->ctl, msg, len, verf_off, verf_len, buf, tag);
	memcpy(msg + verf_off, tag, verf_len < 16 ? verf_len : 16);
	if (buf != stackbuf)
		free(buf);
}

void braid_auth_call_opts(struct nfsd_call_opts *o, const struct braid_key *key)
{
	o->flavor = NFSD_AUTH_BRAID;
	o->cred = sign_cred;
	o->sign = sign_call;
	o->verf_len = VERF_LEN;
	o->sign_ctx = (void *)key;
}

int braid_auth_call(struct nfsd_clnt *c, const struct braid_key *key,
		    const struct xdr_vers_desc *v, uint32_t proc, const void *args, void *res,
		    struct xdr_arena *arena)
{
	return braid_auth_call_timeout(c, key, v, proc, args, res, arena, 0);
}

int braid_auth_call_timeout(struct nfsd_clnt *c, const struct braid_key *key,
			    const struct xdr_vers_desc *v, uint32_t proc, const void *args,
			    void *res, struct xdr_arena *arena, unsigned timeout_ms)
{
	const struct xdr_proc_desc *d = &v->procs[proc];
	struct nfsd_call_opts o = {
		.prog = v->prog,
		.vers = v->vers,
		.proc = proc,
		.enc_args = d->arg_size ? d->enc_arg : NULL,
		.args = args,
		.timeout_ms = timeout_ms,
	};
	braid_auth_call_opts(&o, key);
	int rc = nfsd_clnt_call(c, &o, d->res_size ? d->dec_res : NULL, res, arena);
	if (rc == (NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDCRED) ||
	    rc == (NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDVERF))
		rc = nfsd_clnt_call(c, &o, d->res_size ? d->dec_res : NULL, res, arena);
	return rc;
}
