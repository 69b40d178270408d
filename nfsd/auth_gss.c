/* SPDX-License-Identifier: MIT */
/* RPCSEC_GSS version 1 (RFC 2203), server side: see nfsd/auth_gss.h. */
#include "config.h"

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "nfsd/auth_gss.h"
#include "nfsd/bytes.h"
#include "nfsd/clnt_gss.h"
#include "nfsd/clock.h"
#include "nfsd/htab.h"
#include "nfsd/k5msg.h"
#include "nfsd/metrics.h"
#include "rpcsec_gss.h"

#define HANDLE_LEN    16 /* 8 bytes of this server's boot id, 8 of the context's id */
#define WINDOW_MAX    1024u
#define NOBODY	      65534u
#define MAX_GROUPS    64u
#define HANDLE_MAX_CB 256u /* gcbp_handle_from_client we keep */

/*
 * One GSS context.  The cache holds one reference while the context is in
 * it, and each request that uses it one more (released when the request is
 * freed), so DESTROY or eviction never frees a context under a call.
 */
struct gss_ctx {
	struct htab_node node;	       /* in g->tab by nfsd_mix64(id); g->mu */
	struct gss_ctx *newer, *older; /* g's LRU list; g->mu */
	bool in_cache;		       /* g->mu */
	uint64_t used_ns;	       /* last lookup; g->mu */
	uint64_t id;
	atomic_uint refs;
	/* mu guards gctx (CONTINUE_INIT changes it) and the window */
	pthread_mutex_t mu;
	gss_ctx_id_t gctx;
	/* the per-message calls (nfsd/k5msg.h: no lock needed), made before
	 * complete is set and read-only after */
	struct k5msg *km;
	atomic_bool complete;  /* set once under mu (expires_ns, km first) */
	atomic_bool destroyed; /* RPCSEC_GSS_DESTROY: the client deleted its end */
	uint64_t expires_ns;
	bool seen; /* any sequence number accepted yet */
	uint32_t seq_max;
	uint64_t win[WINDOW_MAX / 64]; /* bit seq % window: seen */
	/* identity, fixed once complete */
	uint32_t uid, gid, ngroups;
	uint32_t groups[MAX_GROUPS];
	char *principal; /* malloc'd */
};

struct nfsd_gss {
	struct nfsd_auth_flavor flavor;
	gss_cred_id_t cred; /* acceptor credentials; read-only */
	unsigned window, max_contexts, max_lifetime_s;
	uint8_t boot[8];    /* random: handles of other servers miss */
	pthread_mutex_t mu; /* guards tab, the LRU list, next_id, st */
	struct htab tab;
	struct gss_ctx *newest, *oldest;
	uint64_t next_id;
	struct nfsd_gss_stats st;
};

/* What a request carries from accept() to unwrap() and wrap() (arena). */
struct gss_req {
	struct gss_ctx *ctx; /* a reference; NULL for a failed init */
	uint32_t gss_proc, service, seq;
	bool bad_args; /* control call whose arguments did not decode */
	rpc_gss_init_res ires;
};

static void ctx_put(struct gss_ctx *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	OM_uint32 min;
	k5msg_free(c->km);
	if (c->gctx != GSS_C_NO_CONTEXT)
		gss_delete_sec_context(&min, &c->gctx, GSS_C_NO_BUFFER);
	pthread_mutex_destroy(&c->mu);
	free(c->principal);
	free(c);
}

static void req_put_ctx(void *arg)
{
	ctx_put(arg);
}

/* Unlink c from the cache (g->mu held); the cache's reference goes to the
 * caller, who drops it after unlocking. */
static void cache_unlink(struct nfsd_gss *g, struct gss_ctx *c)
{
	htab_del(&g->tab, &c->node);
	if (c->newer)
		c->newer->older = c->older;
	else
		g->newest = c->older;
	if (c->older)
		c->older->newer = c->newer;
	else
		g->oldest = c->newer;
	c->newer = c->older = NULL;
	c->in_cache = false;
	g->st.contexts--;
}

static void lru_front(struct nfsd_gss *g, struct gss_ctx *c)
{
	c->older = g->newest;
	c->newer = NULL;
	if (g->newest)
		g->newest->newer = c;
	g->newest = c;
	if (!g->oldest)
		g->oldest = c;
}

/* A new, incomplete context in the cache, holding a reference for the
 * caller too; the least recently used one makes room.  NULL: no memory. */
static struct gss_ctx *cache_new(struct nfsd_gss *g)
{
	struct gss_ctx *c = calloc(1, sizeof(*c)), *victim = NULL;
	if (!c)
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	c->gctx = GSS_C_NO_CONTEXT;
	atomic_init(&c->refs, 2);
	c->uid = c->gid = NOBODY;
	pthread_mutex_lock(&g->mu);
	if (g->st.contexts >= g->max_contexts && g->oldest) {
		victim = g->oldest;
		cache_unlink(g, victim);
		g->st.evicted++;
	}
	c->id = ++g->next_id;
	c->used_ns = nfsd_now_ns();
	htab_add(&g->tab, &c->node, nfsd_mix64(c->id));
	lru_front(g, c);
	c->in_cache = true;
	g->st.contexts++;
	pthread_mutex_unlock(&g->mu);
	if (victim)
		ctx_put(victim);
	return c;
}

/*
 * The context a handle names, with a reference, or NULL (*expired when it
 * was found past its life: it leaves the cache).
 */
static struct gss_ctx *cache_get(struct nfsd_gss *g, const xdr_opaque *h, bool *expired)
{
	*expired = false;
	if (h->len != HANDLE_LEN || memcmp(h->val, g->boot, 8) != 0)
		return NULL;
	uint64_t id = get_be64(h->val + 8), now = nfsd_now_ns();
	struct gss_ctx *c = NULL, *dead = NULL;
	pthread_mutex_lock(&g->mu);
	struct htab_node *n = htab_find(&g->tab, nfsd_mix64(id));
	if (n) {
		c = (struct gss_ctx *)((char *)n - offsetof(struct gss_ctx, node));
		if (c->complete && c->expires_ns <= now) {
			cache_unlink(g, c);
			g->st.expired++;
			dead = c;
			c = NULL;
			*expired = true;
		} else {
			atomic_fetch_add(&c->refs, 1);
			c->used_ns = now;
			if (g->newest != c) {
				/* move to the front */
				c->newer->older = c->older;
				if (c->older)
					c->older->newer = c->newer;
				else
					g->oldest = c->newer;
				lru_front(g, c);
			}
		}
	}
	pthread_mutex_unlock(&g->mu);
	if (dead)
		ctx_put(dead);
	return c;
}

static void cache_remove(struct nfsd_gss *g, struct gss_ctx *c, bool destroyed)
{
	bool had = false;
	pthread_mutex_lock(&g->mu);
	if (destroyed)
		c->destroyed = true;
	if (c->in_cache) {
		cache_unlink(g, c);
		had = true;
		if (destroyed)
			g->st.destroyed++;
	}
	pthread_mutex_unlock(&g->mu);
	if (had)
		ctx_put(c);
}

static void stat_inc(struct nfsd_gss *g, uint64_t *field)
{
	pthread_mutex_lock(&g->mu);
	(*field)++;
	pthread_mutex_unlock(&g->mu);
}

/* ---------------------------------------------------------------- window */

static bool win_test(const struct gss_ctx *c, unsigned w, uint32_t seq)
{
	unsigned b = seq % w;
	return c->win[b / 64] >> (b % 64) & 1;
}

static void win_set(struct gss_ctx *c, unsigned w, uint32_t seq, bool on)
{
	unsigned b = seq % w;
	if (on)
		c->win[b / 64] |= 1ull << (b % 64);
	else
		c->win[b / 64] &= ~(1ull << (b % 64));
}

/* RFC 2203 §5.3.3.1: accept seq once within the window (c->mu held). */
static bool win_accept(struct gss_ctx *c, unsigned w, uint32_t seq)
{
	if (!c->seen || seq > c->seq_max) {
		uint32_t from = c->seen ? c->seq_max + 1 : seq;
		if (!c->seen || seq - from >= w)
			memset(c->win, 0, sizeof(c->win));
		else
			for (uint32_t s = from; s != seq; s++)
				win_set(c, w, s, false);
		win_set(c, w, seq, true);
		c->seq_max = seq;
		c->seen = true;
		return true;
	}
	if (c->seq_max - seq >= w || win_test(c, w, seq))
		return false;
	win_set(c, w, seq, true);
	return true;
}

/* ------------------------------------------------------------ helpers */

/* A copy of a GSS buffer in the request arena, released. */
static int arena_take(struct nfsd_req *r, gss_buffer_desc *b, xdr_opaque *o)
{
	OM_uint32 min;
	uint8_t *p = b->length ? xdr_arena_alloc(&r->arena, b->length) : NULL;
	if (b->length && !p) {
		gss_release_buffer(&min, b);
		return -ENOMEM;
	}
	if (b->length)
		memcpy(p, b->value, b->length);
	*o = xdr_opaque_of(p, b->length);
	gss_release_buffer(&min, b);
	return 0;
}

/* The MIC of a sequence number or window size, as the reply verifier. */
static int verf_mic(struct nfsd_req *r, struct gss_ctx *c, uint32_t v)
{
	uint8_t be[4];
	xdr_put32(be, v);
	struct iovec in = {be, 4};
	size_t len;
	if (GSS_ERROR(k5msg_mic_len(c->km, &len)))
		return -EIO;
	uint8_t *tok = xdr_arena_alloc(&r->arena, len ? len : 1);
	if (!tok)
		return -ENOMEM;
	if (GSS_ERROR(k5msg_get_mic(c->km, &in, 1, tok, len)))
		return -EIO;
	r->rverf = xdr_opaque_of(tok, (uint32_t)len);
	r->rverf_flavor = NFSD_RPCSEC_GSS;
	return 0;
}

/*
 * A client host's own principal, "nfs/HOST@REALM", "host/HOST@REALM" or
 * "root/HOST@REALM": what rpc.gssd uses for root and for the client's
 * lease operations (EXCHANGE_ID, SP4_MACH_CRED).  It maps to root, as
 * knfsd's svcgssd maps machine credentials, so exports' root squashing
 * applies to it like to AUTH_SYS root.
 */
static bool machine_principal(const char *p)
{
	static const char *const svc[] = {"nfs/", "host/", "root/"};
	if (!p)
		return false;
	for (unsigned i = 0; i < sizeof(svc) / sizeof(svc[0]); i++) {
		size_t n = strlen(svc[i]);
		if (strncmp(p, svc[i], n))
			continue;
		const char *host = p + n, *at = strchr(host, '@');
		return at && at > host && !memchr(host, '/', (size_t)(at - host));
	}
	return false;
}

/* The local user of an initiator's name (nobody when it has none). */
static void ctx_map_name(struct gss_ctx *c, gss_name_t name, gss_OID mech)
{
	OM_uint32 min;
	gss_buffer_desc disp = GSS_C_EMPTY_BUFFER, local = GSS_C_EMPTY_BUFFER;
	if (!GSS_ERROR(gss_display_name(&min, name, &disp, NULL))) {
		c->principal = strndup(disp.value, disp.length);
		gss_release_buffer(&min, &disp);
	}
	if (GSS_ERROR(gss_localname(&min, name, mech, &local))) {
		if (machine_principal(c->principal))
			c->uid = c->gid = 0; /* squashed like any root, per export */
		return;
	}
	char *user = strndup(local.value, local.length);
	gss_release_buffer(&min, &local);
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (user && !getpwnam_r(user, &pw, buf, sizeof(buf), &res) && res) {
		gid_t g[MAX_GROUPS];
		int n = MAX_GROUPS;
		c->uid = pw.pw_uid;
		c->gid = pw.pw_gid;
		if (getgrouplist(pw.pw_name, pw.pw_gid, g, &n) < 0)
			n = MAX_GROUPS; /* more than we keep: the first ones */
		for (int i = 0; i < n; i++)
			c->groups[i] = g[i];
		c->ngroups = (uint32_t)n;
	}
	free(user);
}

static void cred_fill(struct nfsd_req *r, const struct gss_ctx *c, uint32_t service)
{
	r->cred.flavor = NFSD_RPCSEC_GSS;
	r->cred.gss_service = service;
	r->cred.uid = c->uid;
	r->cred.gid = c->gid;
	r->cred.ngroups = 0;
	if (c->ngroups) {
		r->cred.groups = xdr_arena_alloc(&r->arena, 4u * c->ngroups);
		if (r->cred.groups) {
			memcpy(r->cred.groups, c->groups, 4u * c->ngroups);
			r->cred.ngroups = c->ngroups;
		}
	}
	if (c->principal) {
		size_t n = strlen(c->principal) + 1;
		char *p = xdr_arena_alloc(&r->arena, n);
		if (p)
			memcpy(p, c->principal, n);
		r->cred.principal = p;
	}
}

/* ----------------------------------------------------- context creation */

/* RFC 2203 §5.2: INIT and CONTINUE_INIT; the init_res goes out in wrap(). */
static int svc_gss_init(struct nfsd_req *r, struct nfsd_gss *g, struct gss_req *q,
			const rpc_gss_cred_vers_1_t *cv)
{
	rpc_gss_init_arg arg;
	struct xdr_dec d = r->dec;
	if (xdr_dec_rpc_gss_init_arg(&d, &arg) < 0) {
		q->bad_args = true;
		return NFSD_AUTH_OK;
	}
	struct gss_ctx *c;
	if (cv->gss_proc == RPCSEC_GSS_CONTINUE_INIT) {
		bool expired;
		c = cache_get(g, &cv->handle, &expired);
		if (!c) {
			stat_inc(g, &g->st.bad_handle);
			return NFSD_RPCSEC_GSS_CREDPROBLEM;
		}
		if (c->complete) {
			ctx_put(c);
			return NFSD_RPCSEC_GSS_CREDPROBLEM;
		}
	} else {
		c = cache_new(g);
		if (!c)
			return NFSD_AUTH_REJECTEDCRED;
	}
	if (nfsd_req_on_free(r, req_put_ctx, c) < 0) {
		cache_remove(g, c, false);
		ctx_put(c);
		return NFSD_AUTH_REJECTEDCRED;
	}
	q->ctx = c;

	OM_uint32 maj, min = 0, flags = 0, time_rec = 0;
	gss_buffer_desc in = {arg.gss_token.len, (void *)arg.gss_token.val};
	gss_buffer_desc out = GSS_C_EMPTY_BUFFER;
	gss_name_t src = GSS_C_NO_NAME;
	gss_OID mech = GSS_C_NO_OID;
	pthread_mutex_lock(&c->mu);
	maj = gss_accept_sec_context(&min, &c->gctx, g->cred, &in, GSS_C_NO_CHANNEL_BINDINGS, &src,
				     &mech, &out, &flags, &time_rec, NULL);
	if (maj == GSS_S_COMPLETE && !(c->km = k5msg_new(&c->gctx)))
		maj = GSS_S_FAILURE; /* no memory, or the context copy failed */
	if (maj == GSS_S_COMPLETE) {
		ctx_map_name(c, src, mech);
		uint64_t life = time_rec == GSS_C_INDEFINITE || time_rec > g->max_lifetime_s
				    ? g->max_lifetime_s
				    : time_rec;
		c->expires_ns = nfsd_now_ns() + life * 1000000000ull;
		c->complete = true;
	}
	pthread_mutex_unlock(&c->mu);
	if (src != GSS_C_NO_NAME)
		gss_release_name(&min, &src);

	rpc_gss_init_res *res = &q->ires;
	res->gss_major = maj;
	res->gss_minor = min;
	res->seq_window = g->window;
	if (arena_take(r, &out, &res->gss_token) < 0)
		return NFSD_AUTH_REJECTEDCRED;
	if (GSS_ERROR(maj)) {
		/* §5.2.3.1: an error and no handle; the context is gone */
		stat_inc(g, &g->st.init_failures);
		cache_remove(g, c, false);
		return NFSD_AUTH_OK;
	}
	uint8_t *h = xdr_arena_alloc(&r->arena, HANDLE_LEN);
	if (!h)
		return NFSD_AUTH_REJECTEDCRED;
	memcpy(h, g->boot, 8);
	put_be64(h + 8, c->id);
	res->handle = xdr_opaque_of(h, HANDLE_LEN);
	if (maj == GSS_S_COMPLETE) {
		stat_inc(g, &g->st.created);
		/* §5.2.3.1: the verifier is the MIC of the window size */
		if (verf_mic(r, c, g->window) < 0)
			return NFSD_AUTH_REJECTEDCRED;
	}
	return NFSD_AUTH_OK;
}

/* ------------------------------------------------------------- accept */

static int svc_gss_accept(struct nfsd_req *r, const xdr_opaque *cred, const xdr_opaque *verf)
{
	struct nfsd_gss *g = r->flavor->priv;
	rpc_gss_cred_t gc;
	struct xdr_dec d;
	xdr_dec_init(&d, cred->val, cred->len, &r->arena);
	if (xdr_dec_rpc_gss_cred_t(&d, &gc) < 0 || xdr_dec_left(&d) ||
	    gc.rgc_version != RPCSEC_GSS_VERS_1)
		return NFSD_AUTH_BADCRED;
	const rpc_gss_cred_vers_1_t *cv = &gc.u.rgc_cred_v1;
	if (cv->service < rpc_gss_svc_none || cv->service > rpc_gss_svc_privacy)
		return NFSD_AUTH_BADCRED;
	struct gss_req *q = xdr_arena_alloc(&r->arena, sizeof(*q));
	if (!q)
		return NFSD_AUTH_REJECTEDCRED;
	q->gss_proc = (uint32_t)cv->gss_proc;
	q->service = (uint32_t)cv->service;
	q->seq = cv->seq_num;
	r->cred.uid = r->cred.gid = NOBODY;
	switch (cv->gss_proc) {
	case RPCSEC_GSS_INIT:
	case RPCSEC_GSS_CONTINUE_INIT:
		if (r->proc != 0)
			return NFSD_AUTH_BADCRED;
		r->flavor_ctx = q;
		return svc_gss_init(r, g, q, cv);
	case RPCSEC_GSS_DATA:
		break;
	case RPCSEC_GSS_DESTROY:
		if (r->proc != 0)
			return NFSD_AUTH_BADCRED;
		break;
	default:
		return NFSD_AUTH_BADCRED;
	}

	/* §5.3.3.1: the handle, the header's MIC, then the window */
	bool expired;
	struct gss_ctx *c = cache_get(g, &cv->handle, &expired);
	if (!c) {
		stat_inc(g, &g->st.bad_handle);
		return expired ? NFSD_RPCSEC_GSS_CTXPROBLEM : NFSD_RPCSEC_GSS_CREDPROBLEM;
	}
	if (nfsd_req_on_free(r, req_put_ctx, c) < 0) {
		ctx_put(c);
		return NFSD_AUTH_REJECTEDCRED;
	}
	q->ctx = c;
	if (!c->complete)
		return NFSD_RPCSEC_GSS_CREDPROBLEM;
	/* the verifier's flavor and length words lie just before its body */
	if (!r->rec || verf->val < r->rec + 8 || verf->val > r->rec + r->rec_len ||
	    xdr_get32(verf->val - 8) != NFSD_RPCSEC_GSS) {
		stat_inc(g, &g->st.bad_mic);
		return NFSD_RPCSEC_GSS_CREDPROBLEM;
	}
	struct iovec hdr = {(void *)r->rec, (size_t)(verf->val - 8 - r->rec)};
	OM_uint32 maj;
	bool fresh = false;
	maj = k5msg_verify_mic(c->km, &hdr, 1, verf->val, verf->len);
	if (!GSS_ERROR(maj) && cv->seq_num < MAXSEQ) {
		pthread_mutex_lock(&c->mu);
		fresh = win_accept(c, g->window, cv->seq_num);
		pthread_mutex_unlock(&c->mu);
	}
	if (GSS_ERROR(maj)) {
		stat_inc(g, &g->st.bad_mic);
		return GSS_ROUTINE_ERROR(maj) == GSS_S_CONTEXT_EXPIRED
			   ? NFSD_RPCSEC_GSS_CTXPROBLEM
			   : NFSD_RPCSEC_GSS_CREDPROBLEM;
	}
	if (cv->seq_num >= MAXSEQ)
		return NFSD_RPCSEC_GSS_CTXPROBLEM;
	if (!fresh) {
		stat_inc(g, &g->st.dropped);
		return NFSD_DROP;
	}
	if (verf_mic(r, c, cv->seq_num) < 0)
		return NFSD_AUTH_REJECTEDCRED;
	cred_fill(r, c, q->service);
	r->flavor_ctx = q;
	if (cv->gss_proc == RPCSEC_GSS_DESTROY)
		cache_remove(g, c, true); /* §5.4: this reply is still protected */
	return NFSD_AUTH_OK;
}

/* ------------------------------------------------------- unwrap, wrap */

#define RES_IOV_MAX 24 /* results' iovecs wrapped as they are; more are gathered */

static void buf_free(void *arg)
{
	free(arg);
}

/*
 * §5.3.2.2, §5.3.2.3: the arguments are {seq_num, args}, checked where they
 * lie (gss_verify_mic_iov) or unsealed in place in the receive buffer
 * (gss_unwrap_iov: the record is this request's until it is freed), so a
 * WRITE's data is never copied here.
 */
static int svc_gss_unwrap(struct nfsd_req *r)
{
	struct gss_req *q = r->flavor_ctx;
	struct nfsd_gss *g = r->flavor->priv;
	if (!q)
		return 0;
	if (q->gss_proc == RPCSEC_GSS_INIT || q->gss_proc == RPCSEC_GSS_CONTINUE_INIT)
		return q->bad_args ? -1 : 0;
	if (q->service == rpc_gss_svc_none)
		return 0;
	/* Linux sends RPCSEC_GSS_DESTROY's (void) arguments unwrapped
	 * whatever the service (gss_wrap_req), as knfsd takes them */
	if (q->gss_proc == RPCSEC_GSS_DESTROY && xdr_dec_left(&r->dec) == 0)
		return 0;
	struct gss_ctx *c = q->ctx;
	const uint8_t *body;
	size_t len;
	if (q->service == rpc_gss_svc_integrity) {
		rpc_gss_integ_data in;
		if (xdr_dec_rpc_gss_integ_data(&r->dec, &in) < 0)
			goto bad;
		struct iovec iov = {(void *)in.databody_integ.val, in.databody_integ.len};
		if (GSS_ERROR(k5msg_verify_mic(c->km, &iov, 1, in.checksum.val, in.checksum.len)))
			goto bad;
		body = in.databody_integ.val;
		len = in.databody_integ.len;
	} else {
		rpc_gss_priv_data in;
		if (xdr_dec_rpc_gss_priv_data(&r->dec, &in) < 0)
			goto bad;
		uint8_t *plain;
		/* the receive buffer is this request's: unsealed in place */
		if (GSS_ERROR(k5msg_unwrap(c->km, (uint8_t *)in.databody_priv.val,
					   in.databody_priv.len, &plain, &len)))
			goto bad;
		body = plain;
	}
	if (len < 4 || xdr_get32(body) != q->seq)
		goto bad;
	xdr_dec_init(&r->dec, body + 4, len - 4, &r->arena);
	return 0;
bad:
	stat_inc(g, &g->st.bad_args);
	return -1;
}

/*
 * The results as iovecs (nfsd_req_res_take), gathered into one buffer
 * (released with the request) when there are too many of them: -errno or
 * their count, *len their bytes.
 */
static int res_take(struct nfsd_req *r, struct iovec *iov, size_t *len)
{
	size_t n = nfsd_req_res_len(r);
	*len = n;
	if (r->enc.niov < RES_IOV_MAX)
		return nfsd_req_res_take(r, iov, RES_IOV_MAX);
	struct iovec all[sizeof(r->iov) / sizeof(r->iov[0])];
	int k = nfsd_req_res_take(r, all, sizeof(all) / sizeof(all[0]));
	uint8_t *buf = k < 0 ? NULL : malloc(n ? n : 1);
	if (!buf || nfsd_req_on_free(r, buf_free, buf) < 0) {
		free(buf);
		return -ENOMEM;
	}
	uint8_t *p = buf;
	for (int i = 0; i < k; i++) {
		memcpy(p, all[i].iov_base, all[i].iov_len);
		p += all[i].iov_len;
	}
	iov[0] = (struct iovec){buf, n};
	return 1;
}

/*
 * §5.3.2.2: krb5i results are {seq_num, results} and their MIC.  The MIC
 * is computed over the results where they lie (gss_get_mic_iov), and the
 * reply references them again: a READ's data is neither copied nor moved.
 */
static int wrap_integ(struct nfsd_req *r, struct gss_ctx *c, uint32_t seq)
{
	struct iovec res[RES_IOV_MAX];
	size_t len;
	int n = res_take(r, res, &len);
	if (n < 0)
		return n;
	struct iovec mi[RES_IOV_MAX + 1];
	uint8_t *head = xdr_enc_reserve(&r->enc, 8);
	if (!head)
		return -ENOBUFS;
	xdr_put32(head, (uint32_t)(4 + len));
	xdr_put32(head + 4, seq);
	mi[0] = (struct iovec){head + 4, 4};
	for (int i = 0; i < n; i++) {
		mi[1 + i] = res[i];
		xdr_enc_ref(&r->enc, res[i].iov_base, res[i].iov_len);
	}
	xdr_enc_pad(&r->enc, (uint32_t)(4 + len));
	size_t ml;
	if (GSS_ERROR(k5msg_mic_len(c->km, &ml)))
		return -EIO;
	uint8_t *tail = xdr_enc_reserve(&r->enc, 4 + ml + ((4 - (ml & 3)) & 3));
	if (!tail)
		return -ENOBUFS;
	xdr_put32(tail, (uint32_t)ml);
	memset(tail + 4 + ml, 0, (4 - (ml & 3)) & 3);
	if (GSS_ERROR(k5msg_get_mic(c->km, mi, n + 1, tail + 4, ml)))
		return -EIO;
	return r->enc.err;
}

/*
 * §5.3.2.3: krb5p results are {seq_num, results} sealed.  They are gathered
 * once, into the token's place in a buffer released with the request (the
 * memory a READ references may be a file's pages: never sealed in place),
 * and sealed there by gss_wrap_iov.
 */
static int wrap_priv(struct nfsd_req *r, struct gss_ctx *c, uint32_t seq)
{
	struct iovec res[RES_IOV_MAX];
	size_t len;
	int n = res_take(r, res, &len);
	if (n < 0)
		return n;
	size_t hl, tl;
	if (GSS_ERROR(k5msg_wrap_len(c->km, 4 + len, &hl, &tl)))
		return -EIO;
	size_t tok = hl + 4 + len + tl;
	uint8_t *buf = malloc(tok);
	if (!buf || nfsd_req_on_free(r, buf_free, buf) < 0) {
		free(buf);
		return -ENOMEM;
	}
	uint8_t *p = buf + hl;
	xdr_put32(p, seq);
	p += 4;
	for (int i = 0; i < n; i++) {
		memcpy(p, res[i].iov_base, res[i].iov_len);
		p += res[i].iov_len;
	}
	if (GSS_ERROR(k5msg_wrap(c->km, buf, buf + hl, 4 + len, p)))
		return -EIO;
	rpc_gss_priv_data out = {xdr_opaque_of(buf, tok)};
	return xdr_enc_rpc_gss_priv_data(&r->enc, &out);
}

static int svc_gss_wrap(struct nfsd_req *r)
{
	struct gss_req *q = r->flavor_ctx;
	if (!q)
		return 0;
	if (q->gss_proc == RPCSEC_GSS_INIT || q->gss_proc == RPCSEC_GSS_CONTINUE_INIT) {
		/* the NULL procedure's results are void: init_res takes their place */
		nfsd_req_res_rewind(r);
		return xdr_enc_rpc_gss_init_res(&r->enc, &q->ires);
	}
	if (q->service == rpc_gss_svc_none)
		return 0;
	if (q->service == rpc_gss_svc_integrity)
		return wrap_integ(r, q->ctx, q->seq);
	return wrap_priv(r, q->ctx, q->seq);
}

/* ------------------------------------------------- callbacks (RFC 8881) */

/*
 * §2.10.8.3: callbacks signed under a context the client made with us.
 * The context is referenced, so eviction from the cache does not end it
 * (the client still holds its end); DESTROY and expiry do.
 */
struct nfsd_gss_cb {
	struct nfsd_clnt_auth a; /* first: the engine hands back &a */
	atomic_uint refs;
	struct gss_ctx *ctx; /* a reference */
	uint32_t service;
	atomic_uint seq;  /* the next callback's sequence number */
	uint32_t hfc_len; /* gcbp_handle_from_client, our credential's handle */
	uint8_t hfc[];
};

/* One callback call, from its first marshal() to end(). */
struct gss_cb_call {
	struct nfsd_gss_cb *cb; /* a reference */
	uint32_t seq;
	uint8_t hdr[24];
	uint8_t *plain; /* the arguments, to sign again for a resend */
	size_t plain_len;
};

static bool cb_live(const struct nfsd_gss_cb *cb, uint64_t now)
{
	return !cb->ctx->destroyed && cb->ctx->expires_ns > now;
}

static int cb_marshal(const struct nfsd_clnt_auth *a, void **st, const uint8_t *hdr,
		      const struct iovec *args, unsigned niov, size_t len, bool may_wait,
		      uint8_t **msg, size_t *mlen, size_t *cap)
{
	struct nfsd_gss_cb *cb = (struct nfsd_gss_cb *)a;
	struct gss_cb_call *cc = *st;
	(void)may_wait;
	if (!cc) {
		if (!(cc = calloc(1, sizeof(*cc))) || !(cc->plain = malloc(len ? len : 1))) {
			free(cc);
			return -ENOMEM;
		}
		*st = cc;
		nfsd_gss_cb_get(cb);
		cc->cb = cb;
		memcpy(cc->hdr, hdr, 24);
		cc->plain_len = len;
		uint8_t *p = cc->plain;
		for (unsigned i = 0; i < niov; p += args[i].iov_len, i++)
			if (args[i].iov_len)
				memcpy(p, args[i].iov_base, args[i].iov_len);
	}
	if (!cb_live(cb, nfsd_now_ns()))
		return -EKEYEXPIRED;
	/* RFC 2203 §5.3.3.1: each sending, a resend too, a new number */
	cc->seq = atomic_fetch_add(&cb->seq, 1);
	if (cc->seq >= MAXSEQ)
		return -EKEYEXPIRED;
	uint8_t hb[24 + 28 + HANDLE_MAX_CB];
	size_t hlen = nfsd_gss_head_build(cc->hdr, RPCSEC_GSS_DATA, cc->seq, cb->service, cb->hfc,
					  cb->hfc_len, hb);
	struct iovec one = {cc->plain, cc->plain_len};
	size_t off;
	return nfsd_gss_msg_build(cb->ctx->km, hb, hlen, cc->seq, cb->service, &one, 1,
				  cc->plain_len, msg, mlen, cap, false, &off);
}

static int cb_reply(void *st, uint32_t vflav, const xdr_opaque *verf, uint32_t astat,
		    struct xdr_dec *res)
{
	struct gss_cb_call *cc = st;
	return nfsd_gss_reply_check(cc->cb->ctx->km, cc->seq, cc->cb->service, vflav, verf, astat,
				    res);
}

static bool cb_ready(void *st)
{
	(void)st;
	return true;
}

static void cb_end(void *st)
{
	struct gss_cb_call *cc = st;
	if (!cc)
		return;
	nfsd_gss_cb_put(cc->cb);
	free(cc->plain);
	free(cc);
}

int nfsd_gss_cb_new(struct nfsd_gss *g, const xdr_opaque *hfs, const xdr_opaque *hfc,
		    uint32_t service, const char *principal, struct nfsd_gss_cb **out)
{
	*out = NULL;
	if (service < rpc_gss_svc_none || service > rpc_gss_svc_privacy || hfc->len > HANDLE_MAX_CB)
		return -EINVAL;
	bool expired;
	struct gss_ctx *c = g ? cache_get(g, hfs, &expired) : NULL;
	if (!c)
		return -ENOENT;
	int rc = 0;
	if (!c->complete || c->destroyed)
		rc = -ENOENT;
	else if (!principal || !c->principal || strcmp(principal, c->principal))
		rc = -EPERM; /* §2.10.8.3: the client's own context */
	struct nfsd_gss_cb *cb = rc ? NULL : calloc(1, sizeof(*cb) + hfc->len);
	if (!rc && !cb)
		rc = -ENOMEM;
	if (rc) {
		ctx_put(c);
		return rc;
	}
	cb->a = (struct nfsd_clnt_auth){
	    .marshal = cb_marshal,
	    .reply = cb_reply,
	    .ready = cb_ready,
	    .end = cb_end,
	    .wraps_results = service != rpc_gss_svc_none,
	};
	atomic_init(&cb->refs, 1);
	cb->ctx = c;
	cb->service = service;
	atomic_init(&cb->seq, 1);
	cb->hfc_len = hfc->len;
	if (hfc->len)
		memcpy(cb->hfc, hfc->val, hfc->len);
	*out = cb;
	return 0;
}

void nfsd_gss_cb_get(struct nfsd_gss_cb *cb)
{
	atomic_fetch_add(&cb->refs, 1);
}

void nfsd_gss_cb_put(struct nfsd_gss_cb *cb)
{
	if (!cb || atomic_fetch_sub(&cb->refs, 1) != 1)
		return;
	ctx_put(cb->ctx);
	free(cb);
}

int nfsd_gss_cb_check(const struct nfsd_gss_cb *cb, uint64_t within_ns)
{
	uint64_t now = nfsd_now_ns();
	if (!cb_live(cb, now))
		return -EKEYEXPIRED;
	return cb->ctx->expires_ns - now <= within_ns ? 1 : 0;
}

uint32_t nfsd_gss_cb_service(const struct nfsd_gss_cb *cb)
{
	return cb->service;
}

const struct nfsd_clnt_auth *nfsd_gss_cb_auth(struct nfsd_gss_cb *cb)
{
	return &cb->a;
}

/* ---------------------------------------------------------- lifecycle */

struct nfsd_gss *nfsd_gss_new(const struct nfsd_gss_opts *o, int *err)
{
	struct nfsd_gss_opts def = {0};
	if (!o)
		o = &def;
	struct nfsd_gss *g = calloc(1, sizeof(*g));
	if (!g || htab_init(&g->tab, 64) < 0) {
		free(g);
		*err = -ENOMEM;
		return NULL;
	}
	g->window = o->seq_window ? o->seq_window : 128;
	if (g->window > WINDOW_MAX)
		g->window = WINDOW_MAX;
	g->max_contexts = o->max_contexts ? o->max_contexts : 4096;
	g->max_lifetime_s = o->max_lifetime_s ? o->max_lifetime_s : 86400;
	while (getrandom(g->boot, sizeof(g->boot), 0) != (ssize_t)sizeof(g->boot))
		;
	g->cred = GSS_C_NO_CREDENTIAL;
	if (o->keytab) {
		OM_uint32 maj, min;
		gss_key_value_element_desc kv = {"keytab", o->keytab};
		gss_key_value_set_desc store = {1, &kv};
		maj = gss_acquire_cred_from(&min, GSS_C_NO_NAME, GSS_C_INDEFINITE, GSS_C_NO_OID_SET,
					    GSS_C_ACCEPT, &store, &g->cred, NULL, NULL);
		if (GSS_ERROR(maj)) {
			htab_release(&g->tab);
			free(g);
			*err = -ENOENT;
			return NULL;
		}
	}
	pthread_mutex_init(&g->mu, NULL);
	g->flavor = (struct nfsd_auth_flavor){
	    .flavor = NFSD_RPCSEC_GSS,
	    .name = "rpcsec_gss",
	    .accept = svc_gss_accept,
	    .unwrap = svc_gss_unwrap,
	    .wrap = svc_gss_wrap,
	    .priv = g,
	};
	return g;
}

const struct nfsd_auth_flavor *nfsd_gss_flavor(struct nfsd_gss *g)
{
	return &g->flavor;
}

void nfsd_gss_free(struct nfsd_gss *g)
{
	if (!g)
		return;
	while (g->oldest) {
		struct gss_ctx *c = g->oldest;
		cache_unlink(g, c);
		ctx_put(c);
	}
	OM_uint32 min;
	if (g->cred != GSS_C_NO_CREDENTIAL)
		gss_release_cred(&min, &g->cred);
	htab_release(&g->tab);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

void nfsd_gss_stats(struct nfsd_gss *g, struct nfsd_gss_stats *st)
{
	pthread_mutex_lock(&g->mu);
	*st = g->st;
	pthread_mutex_unlock(&g->mu);
}

void nfsd_gss_metrics(struct nfsd_metrics_out *o, struct nfsd_gss *g)
{
	if (!g)
		return;
	struct nfsd_gss_stats st;
	nfsd_gss_stats(g, &st);
	nfsd_metrics_family(o, "braid_rpcsec_gss_contexts", "gauge",
			    "RPCSEC_GSS contexts in the cache.");
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_contexts", NULL, st.contexts);
	nfsd_metrics_family(o, "braid_rpcsec_gss_contexts_created_total", "counter",
			    "RPCSEC_GSS contexts established.");
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_contexts_created_total", NULL, st.created);
	nfsd_metrics_family(o, "braid_rpcsec_gss_init_failures_total", "counter",
			    "Context creations refused by GSS (bad or unknown tickets, keys).");
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_init_failures_total", NULL, st.init_failures);
	nfsd_metrics_family(o, "braid_rpcsec_gss_contexts_ended_total", "counter",
			    "Contexts gone from the cache, by why.");
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_contexts_ended_total", "reason=\"evicted\"",
				st.evicted);
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_contexts_ended_total", "reason=\"expired\"",
				st.expired);
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_contexts_ended_total", "reason=\"destroyed\"",
				st.destroyed);
	nfsd_metrics_family(o, "braid_rpcsec_gss_rejected_total", "counter",
			    "Calls refused: unknown handle, header MIC that does not verify, "
			    "arguments whose checksum or seal does not verify.");
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_rejected_total", "reason=\"bad_handle\"",
				st.bad_handle);
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_rejected_total", "reason=\"bad_mic\"",
				st.bad_mic);
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_rejected_total", "reason=\"bad_args\"",
				st.bad_args);
	nfsd_metrics_family(
	    o, "braid_rpcsec_gss_dropped_total", "counter",
	    "Calls dropped unanswered: replays and sequence numbers below the window.");
	nfsd_metrics_sample_u64(o, "braid_rpcsec_gss_dropped_total", NULL, st.dropped);
}
