/* SPDX-License-Identifier: MIT */
/* RPCSEC_GSS version 1 (RFC 2203), client side: see nfsd/clnt_gss.h. */
#include "config.h"

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/clnt_gss.h"
#include "nfsd/k5msg.h"
#include "nfsd/rec.h"
#include "rpcsec_gss.h"

#define WIN_MAX		      1024u /* sequence numbers outstanding that we track */
#define HANDLE_MAX	      256u
#define CRED_MAX	      (20u + HANDLE_MAX)
#define RETRIES		      2u /* new contexts a call may wait for */
#define ROUNDS_MAX	      8	 /* CONTINUE_INIT rounds of a context creation */
#define AUTH_STAT_CREDPROBLEM 13
#define AUTH_STAT_CTXPROBLEM  14

/*
 * One established context.  g->ctx holds a reference while it is current,
 * and each call signed under it one more, so a reply is checked with the
 * context its call was signed under even after a new one replaced it.
 */
struct cctx {
	atomic_uint refs;
	gss_ctx_id_t gctx;
	struct k5msg *km; /* the per-message calls (nfsd/k5msg.h) */
	uint8_t handle[HANDLE_MAX];
	uint32_t hlen;
	uint32_t window; /* the server's, at most WIN_MAX */
	/* g->mu guards the rest */
	uint32_t next, base;	    /* next number; oldest that may be outstanding */
	uint64_t out[WIN_MAX / 64]; /* bit n % WIN_MAX: n is outstanding */
};

/* A flavor: g's calls of one service (or its DESTROY). */
struct gss_auth {
	struct nfsd_clnt_auth a; /* first: the engine hands back &a */
	struct nfsd_gss_clnt *g;
	uint32_t service, gss_proc;
};

struct nfsd_gss_clnt {
	struct nfsd_clnt *clnt; /* context creation and DESTROY go over it */
	uint32_t prog, vers;
	unsigned timeout_ms;
	gss_cred_id_t cred; /* the initiator's; read-only once made */
	gss_name_t target;
	char ccache[64]; /* a private MEMORY cache for a keytab's tickets */
	struct gss_auth auth[3], destroy;
	pthread_t thr; /* creates contexts */
	bool have_thr;
	pthread_mutex_t mu;  /* guards what follows and struct cctx's window */
	pthread_cond_t cond; /* a context, a failure, or room in the window */
	pthread_cond_t wake; /* the thread: a creation to make, or closing */
	struct cctx *cur;    /* NULL while there is none */
	bool refreshing, closing;
	uint64_t attempts; /* creations started */
	int fail;	   /* the last creation's error, while cur is NULL */
	char why[256];	   /* and why */
	struct nfsd_gss_clnt_stats st;
};

/*
 * A call, from its first marshal() to end().  Its plain arguments are in
 * its message (krb5, krb5i: at args_off) or in 'plain' (krb5p, whose
 * message holds them sealed, and a call not yet signed).
 */
struct gss_call {
	const struct gss_auth *ga;
	struct cctx *ctx; /* signed under it (a reference); NULL before */
	uint32_t seq;
	bool counted; /* seq is outstanding in ctx's window */
	uint8_t hdr[24];
	uint8_t *plain;
	size_t plain_len, args_off;
	bool in_msg;
	unsigned retries;
	uint64_t attempt; /* the context creation this call waits for */
};

static void ctx_put(struct cctx *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	OM_uint32 min;
	k5msg_free(c->km);
	if (c->gctx != GSS_C_NO_CONTEXT)
		gss_delete_sec_context(&min, &c->gctx, GSS_C_NO_BUFFER);
	free(c);
}

/* A major (and minor) status in words, after prefix. */
static void gss_why(char *why, size_t len, const char *prefix, OM_uint32 maj, OM_uint32 min)
{
	if (!why || !len)
		return;
	size_t n = (size_t)snprintf(why, len, "%s", prefix);
	for (int pass = 0; pass < 2; pass++) {
		OM_uint32 code = pass ? min : maj, m2, more = 0;
		if (pass && !min)
			break;
		do {
			gss_buffer_desc s = GSS_C_EMPTY_BUFFER;
			if (GSS_ERROR(gss_display_status(&m2, code,
							 pass ? GSS_C_MECH_CODE : GSS_C_GSS_CODE,
							 GSS_C_NO_OID, &more, &s)))
				break;
			if (n < len)
				n += (size_t)snprintf(why + n, len - n, ": %.*s", (int)s.length,
						      (const char *)s.value);
			gss_release_buffer(&m2, &s);
		} while (more);
	}
}

/* ------------------------------------------------------ the window */

static bool win_bit(const struct cctx *c, uint32_t n)
{
	return c->out[n % WIN_MAX / 64] >> (n % 64) & 1;
}

static void win_set(struct cctx *c, uint32_t n, bool on)
{
	if (on)
		c->out[n % WIN_MAX / 64] |= 1ull << (n % 64);
	else
		c->out[n % WIN_MAX / 64] &= ~(1ull << (n % 64));
}

/* Start a context creation (g->mu held). */
static void create_kick(struct nfsd_gss_clnt *g)
{
	g->attempts++;
	g->refreshing = true;
	pthread_cond_signal(&g->wake);
}

/* The current context stops taking calls (g->mu held). */
static void ctx_retire(struct nfsd_gss_clnt *g, struct cctx *c)
{
	if (g->cur != c)
		return;
	g->cur = NULL;
	pthread_cond_broadcast(&g->cond); /* window waiters look again */
	ctx_put(c);
}

/* The call's number leaves its context's window, and the call the context. */
static void call_unsign(struct gss_call *gc)
{
	struct nfsd_gss_clnt *g = gc->ga->g;
	struct cctx *c = gc->ctx;
	if (!c)
		return;
	if (gc->counted) {
		pthread_mutex_lock(&g->mu);
		win_set(c, gc->seq, false);
		bool moved = false;
		while (c->base != c->next && !win_bit(c, c->base)) {
			c->base++;
			moved = true;
		}
		if (moved)
			pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->mu);
		gc->counted = false;
	}
	gc->ctx = NULL;
	ctx_put(c);
}

/*
 * A context and a sequence number within its window for gc: 0, or
 * NFSD_CLNT_AUTH_WAIT (only when !may_wait), or the error of the context
 * creation gc waited for.
 */
static int call_sign_take(struct gss_call *gc, bool may_wait)
{
	struct nfsd_gss_clnt *g = gc->ga->g;
	int rc;
	pthread_mutex_lock(&g->mu);
	for (;;) {
		struct cctx *c = g->cur;
		if (g->closing) {
			rc = -ECANCELED;
			break;
		}
		if (c) {
			if (c->next - c->base < c->window) {
				gc->seq = c->next++;
				win_set(c, gc->seq, true);
				gc->counted = true;
				gc->ctx = c;
				atomic_fetch_add(&c->refs, 1);
				if (c->next >= MAXSEQ) /* §5.3.3.1: no number past MAXSEQ */
					ctx_retire(g, c);
				rc = 0;
				break;
			}
			if (!may_wait) {
				rc = NFSD_CLNT_AUTH_WAIT;
				break;
			}
			g->st.window_waits++;
			pthread_cond_wait(&g->cond, &g->mu);
			continue;
		}
		if (gc->ga->gss_proc == RPCSEC_GSS_DESTROY) {
			rc = -ENOTCONN; /* nothing to destroy */
			break;
		}
		if (!g->refreshing) {
			if (gc->attempt && gc->attempt == g->attempts) {
				rc = g->fail ? g->fail : -EIO; /* the one it waited for failed */
				break;
			}
			create_kick(g);
		}
		gc->attempt = g->attempts;
		if (!may_wait) {
			rc = NFSD_CLNT_AUTH_WAIT;
			break;
		}
		pthread_cond_wait(&g->cond, &g->mu);
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

/* ------------------------------------------------------ marshal */

static size_t pad4(size_t n)
{
	return (4 - (n & 3)) & 3;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	xdr_put32(p, v);
	return p + 4;
}

/* Copy niov iovecs to dst. */
static void gather(uint8_t *dst, const struct iovec *iov, unsigned niov)
{
	for (unsigned i = 0; i < niov; i++) {
		if (iov[i].iov_len)
			memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
}

size_t nfsd_gss_head_build(const uint8_t *hdr, uint32_t gss_proc, uint32_t seq, uint32_t service,
			   const uint8_t *handle, uint32_t hlen, uint8_t *hb)
{
	uint8_t *p = hb;
	memcpy(p, hdr, 24);
	p += 24;
	p = put_u32(p, NFSD_RPCSEC_GSS);
	p = put_u32(p, 20 + hlen + (uint32_t)pad4(hlen));
	p = put_u32(p, RPCSEC_GSS_VERS_1);
	p = put_u32(p, gss_proc);
	p = put_u32(p, seq);
	p = put_u32(p, service);
	p = put_u32(p, hlen);
	memcpy(p, handle, hlen);
	p += hlen;
	memset(p, 0, pad4(hlen));
	p += pad4(hlen);
	return (size_t)(p - hb);
}

int nfsd_gss_msg_build(struct k5msg *km, const uint8_t *hb, size_t hlen, uint32_t seq, uint32_t svc,
		       const struct iovec *args, unsigned niov, size_t alen, uint8_t **msg,
		       size_t *mlen, size_t *cap, bool fresh_buf, size_t *args_off)
{
	OM_uint32 maj;
	uint8_t vtok[128];
	size_t vlen = 0;
	struct iovec hv = {(void *)hb, hlen};
	maj = k5msg_mic_len(km, &vlen);
	if (!GSS_ERROR(maj) && vlen > sizeof(vtok))
		maj = GSS_S_FAILURE;
	if (!GSS_ERROR(maj))
		maj = k5msg_get_mic(km, &hv, 1, vtok, vlen);
	if (GSS_ERROR(maj))
		return GSS_ROUTINE_ERROR(maj) == GSS_S_CONTEXT_EXPIRED ? -EKEYEXPIRED : -EIO;

	/* the body's layout */
	size_t body, ml = 0, hl = 0, tl = 0;
	if (svc == NFSD_GSS_SVC_INTEGRITY) {
		maj = k5msg_mic_len(km, &ml);
		body = 4 + 4 + alen + pad4(4 + alen) + 4 + ml + pad4(ml);
	} else if (svc == NFSD_GSS_SVC_PRIVACY) {
		maj = k5msg_wrap_len(km, 4 + alen, &hl, &tl);
		size_t tok = hl + 4 + alen + tl;
		body = 4 + tok + pad4(tok);
	} else {
		maj = GSS_S_COMPLETE;
		body = alen;
	}
	if (GSS_ERROR(maj))
		return -EIO;
	size_t total = 4 + hlen + 8 + vlen + pad4(vlen) + body;
	if (total - 4 > 0x7fffffffu)
		return -EMSGSIZE;
	uint8_t *m = *msg;
	if (fresh_buf || *cap < total) {
		m = malloc(total < 256 ? 256 : total);
		if (!m)
			return -ENOMEM;
	}
	uint8_t *p = put_u32(m, NFSD_REC_LAST | (uint32_t)(total - 4));
	memcpy(p, hb, hlen);
	p += hlen;
	p = put_u32(p, NFSD_RPCSEC_GSS);
	p = put_u32(p, (uint32_t)vlen);
	memcpy(p, vtok, vlen);
	p += vlen;
	memset(p, 0, pad4(vlen));
	p += pad4(vlen);

	int rc = 0;
	*args_off = 0;
	if (svc == NFSD_GSS_SVC_NONE) {
		*args_off = (size_t)(p - m);
		gather(p, args, niov);
		p += alen;
	} else if (svc == NFSD_GSS_SVC_INTEGRITY) {
		/* §5.3.2.2: {seq, args} and its MIC, made in place */
		p = put_u32(p, (uint32_t)(4 + alen));
		struct iovec data = {p, 4 + alen};
		p = put_u32(p, seq);
		*args_off = (size_t)(p - m);
		gather(p, args, niov);
		p += alen;
		memset(p, 0, pad4(4 + alen));
		p += pad4(4 + alen);
		p = put_u32(p, (uint32_t)ml);
		maj = k5msg_get_mic(km, &data, 1, p, ml);
		p += ml;
		memset(p, 0, pad4(ml));
		p += pad4(ml);
		if (GSS_ERROR(maj))
			rc = GSS_ROUTINE_ERROR(maj) == GSS_S_CONTEXT_EXPIRED ? -EKEYEXPIRED : -EIO;
	} else {
		/* §5.3.2.3: {seq, args} sealed in place: header, data and
		 * trailer make one wrap token */
		size_t tok = hl + 4 + alen + tl;
		p = put_u32(p, (uint32_t)tok);
		uint8_t *head = p;
		p += hl;
		uint8_t *data = p;
		p = put_u32(p, seq);
		gather(p, args, niov);
		p += alen;
		uint8_t *tail = p;
		p += tl;
		memset(p, 0, pad4(tok));
		p += pad4(tok);
		maj = k5msg_wrap(km, head, data, 4 + alen, tail);
		if (GSS_ERROR(maj))
			rc = GSS_ROUTINE_ERROR(maj) == GSS_S_CONTEXT_EXPIRED ? -EKEYEXPIRED : -EIO;
	}
	if (rc) {
		if (m != *msg)
			free(m);
		return rc;
	}
	if (m != *msg) {
		free(*msg);
		*msg = m;
		*cap = total < 256 ? 256 : total;
	}
	*mlen = total;
	return 0;
}

/*
 * Sign gc's call under its context into a message: args (niov iovecs,
 * gc->plain_len bytes) in the service's form; k5msg's calls need no lock.
 * 0 or -errno (-EKEYEXPIRED: the context's own life is over).
 */
static int call_build(struct gss_call *gc, const struct iovec *args, unsigned niov, uint8_t **msg,
		      size_t *mlen, size_t *cap, bool fresh_buf)
{
	struct cctx *c = gc->ctx;
	uint32_t svc = gc->ga->service;
	uint8_t hb[24 + 8 + CRED_MAX];
	size_t hlen =
	    nfsd_gss_head_build(gc->hdr, gc->ga->gss_proc, gc->seq, svc, c->handle, c->hlen, hb);
	if (svc == NFSD_GSS_SVC_PRIVACY && !gc->plain) {
		/* kept to sign the call again (a resend, a new context): the
		 * message holds them sealed */
		gc->plain = malloc(gc->plain_len ? gc->plain_len : 1);
		if (!gc->plain)
			return -ENOMEM;
		gather(gc->plain, args, niov);
	}
	return nfsd_gss_msg_build(c->km, hb, hlen, gc->seq, svc, args, niov, gc->plain_len, msg,
				  mlen, cap, fresh_buf, &gc->args_off);
}

/* Keep the arguments of a call the engine holds (NFSD_CLNT_AUTH_WAIT). */
static int call_keep_args(struct gss_call *gc, const struct iovec *args, unsigned niov)
{
	if (gc->plain)
		return 0;
	gc->plain = malloc(gc->plain_len ? gc->plain_len : 1);
	if (!gc->plain)
		return -ENOMEM;
	gather(gc->plain, args, niov);
	return 0;
}

static int gss_marshal(const struct nfsd_clnt_auth *a, void **st, const uint8_t *hdr,
		       const struct iovec *args, unsigned niov, size_t len, bool may_wait,
		       uint8_t **msg, size_t *mlen, size_t *cap)
{
	const struct gss_auth *ga = (const struct gss_auth *)a;
	struct nfsd_gss_clnt *g = ga->g;
	struct gss_call *gc = *st;
	struct iovec one;
	bool in_msg = false; /* the arguments are in *msg: build a new one */
	if (!gc) {
		gc = calloc(1, sizeof(*gc));
		if (!gc)
			return -ENOMEM;
		*st = gc;
		gc->ga = ga;
		memcpy(gc->hdr, hdr, 24);
		gc->plain_len = len;
	} else {
		/* again (a resend, a new context, a held call): the arguments
		 * from the message as it is, or from their copy */
		call_unsign(gc);
		in_msg = gc->in_msg;
		one = in_msg ? (struct iovec){*msg + gc->args_off, gc->plain_len}
			     : (struct iovec){gc->plain, gc->plain_len};
		args = &one;
		niov = 1;
		if (in_msg) {
			pthread_mutex_lock(&g->mu);
			g->st.resigned++;
			pthread_mutex_unlock(&g->mu);
		}
	}
	for (unsigned tries = 0;; tries++) {
		int rc = call_sign_take(gc, may_wait);
		if (rc == NFSD_CLNT_AUTH_WAIT && !in_msg && call_keep_args(gc, args, niov))
			return -ENOMEM;
		if (rc)
			return rc;
		rc = call_build(gc, args, niov, msg, mlen, cap, in_msg);
		if (!rc) {
			gc->in_msg = ga->service != NFSD_GSS_SVC_PRIVACY;
			if (gc->in_msg) {
				free(gc->plain);
				gc->plain = NULL;
			}
			return 0;
		}
		if (rc != -EKEYEXPIRED || tries)
			return rc;
		/* the context's own life is over (its ticket expired): a new one */
		pthread_mutex_lock(&g->mu);
		ctx_retire(g, gc->ctx);
		pthread_mutex_unlock(&g->mu);
		call_unsign(gc);
	}
}

/* ------------------------------------------------------ reply */

int nfsd_gss_reply_check(struct k5msg *km, uint32_t seq, uint32_t svc, uint32_t vflav,
			 const xdr_opaque *verf, uint32_t astat, struct xdr_dec *res)
{
	OM_uint32 maj;
	uint8_t be[4];
	const uint8_t *body = NULL;
	size_t blen = 0;
	if (vflav != NFSD_RPCSEC_GSS)
		return -EPROTO;
	xdr_put32(be, seq);
	struct iovec in = {be, 4};
	maj = k5msg_verify_mic(km, &in, 1, verf->val, verf->len);
	if (GSS_ERROR(maj))
		return -EPROTO;
	if (astat != NFSD_SUCCESS || svc == NFSD_GSS_SVC_NONE)
		return 0;
	if (svc == NFSD_GSS_SVC_INTEGRITY) {
		xdr_opaque data, sum;
		maj = GSS_S_BAD_SIG;
		if (!xdr_dec_opaque(res, &data, (uint32_t)xdr_dec_left(res)) &&
		    !xdr_dec_opaque(res, &sum, 1024)) {
			struct iovec iov = {(void *)data.val, data.len};
			maj = k5msg_verify_mic(km, &iov, 1, sum.val, sum.len);
			body = data.val;
			blen = data.len;
		}
	} else {
		/* unsealed where it lies: the receive buffer is the caller's
		 * until the callback returns */
		xdr_opaque sealed;
		maj = GSS_S_BAD_SIG;
		if (!xdr_dec_opaque(res, &sealed, (uint32_t)xdr_dec_left(res))) {
			uint8_t *plain = NULL;
			maj = k5msg_unwrap(km, (uint8_t *)sealed.val, sealed.len, &plain, &blen);
			body = plain;
		}
	}
	if (GSS_ERROR(maj) || blen < 4 || xdr_get32(body) != seq)
		return -EPROTO;
	xdr_dec_init(res, body + 4, blen - 4, res->arena);
	return 0;
}

static int gss_reply(void *st, uint32_t vflav, const xdr_opaque *verf, uint32_t astat,
		     struct xdr_dec *res)
{
	struct gss_call *gc = st;
	struct nfsd_gss_clnt *g = gc->ga->g;
	struct cctx *c = gc->ctx;
	if (c && !nfsd_gss_reply_check(c->km, gc->seq, gc->ga->service, vflav, verf, astat, res))
		return 0;
	pthread_mutex_lock(&g->mu);
	g->st.bad_replies++;
	pthread_mutex_unlock(&g->mu);
	return -EPROTO;
}

/* §5.3.3.3: the context is gone at the server (evicted, lost in a
 * restart, expired): a new one, and the call again under it. */
static bool gss_retry(void *st, uint32_t auth_stat)
{
	struct gss_call *gc = st;
	struct nfsd_gss_clnt *g = gc->ga->g;
	if ((auth_stat != AUTH_STAT_CREDPROBLEM && auth_stat != AUTH_STAT_CTXPROBLEM) ||
	    gc->ga->gss_proc != RPCSEC_GSS_DATA || gc->retries >= RETRIES || !gc->ctx)
		return false;
	gc->retries++;
	pthread_mutex_lock(&g->mu);
	ctx_retire(g, gc->ctx);
	if (!g->cur && !g->refreshing && !g->closing)
		create_kick(g);
	gc->attempt = g->attempts;
	g->st.retried++;
	pthread_mutex_unlock(&g->mu);
	return true;
}

static bool gss_ready(void *st)
{
	struct gss_call *gc = st;
	struct nfsd_gss_clnt *g = gc->ga->g;
	pthread_mutex_lock(&g->mu);
	struct cctx *c = g->cur;
	bool r = g->closing || (c ? c->next - c->base < c->window : !g->refreshing);
	pthread_mutex_unlock(&g->mu);
	return r;
}

int nfsd_gss_clnt_context(struct nfsd_gss_clnt *g, uint8_t *handle, size_t size, uint32_t *hlen,
			  struct k5msg **km)
{
	int rc = -ENOTCONN;
	pthread_mutex_lock(&g->mu);
	struct cctx *c = g->cur;
	if (c && c->hlen > size) {
		rc = -ENOBUFS;
	} else if (c) {
		memcpy(handle, c->handle, c->hlen);
		*hlen = c->hlen;
		*km = c->km;
		rc = 0;
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

static void gss_end(void *st)
{
	struct gss_call *gc = st;
	if (!gc)
		return;
	call_unsign(gc);
	free(gc->plain);
	free(gc);
}

/* ------------------------------------------------------ context creation */

/* An INIT or CONTINUE_INIT call (§5.2.2): the credential carries the
 * handle so far, the verifier is AUTH_NONE; the reply's verifier is kept
 * (checked once the context is complete). */
struct init_call {
	struct nfsd_clnt_auth a; /* first */
	uint32_t gss_proc;
	const uint8_t *handle;
	uint32_t hlen;
	uint32_t vflav, vlen;
	uint8_t verf[400];
};

static int init_marshal(const struct nfsd_clnt_auth *a, void **st, const uint8_t *hdr,
			const struct iovec *args, unsigned niov, size_t len, bool may_wait,
			uint8_t **msg, size_t *mlen, size_t *cap)
{
	const struct init_call *ic = (const struct init_call *)a;
	(void)may_wait;
	*st = (void *)ic;
	if (!hdr)
		return 0; /* a resend: the same message (sequence number 0, no MIC) */
	size_t clen = 20 + ic->hlen + pad4(ic->hlen);
	size_t total = 4 + 24 + 8 + clen + 8 + len;
	uint8_t *m = *msg;
	if (*cap < total) {
		m = malloc(total);
		if (!m)
			return -ENOMEM;
		free(*msg);
		*msg = m;
		*cap = total;
	}
	uint8_t *p = put_u32(m, NFSD_REC_LAST | (uint32_t)(total - 4));
	memcpy(p, hdr, 24);
	p += 24;
	p = put_u32(p, NFSD_RPCSEC_GSS);
	p = put_u32(p, (uint32_t)clen);
	p = put_u32(p, RPCSEC_GSS_VERS_1);
	p = put_u32(p, ic->gss_proc);
	p = put_u32(p, 0);
	p = put_u32(p, NFSD_GSS_SVC_NONE);
	p = put_u32(p, ic->hlen);
	if (ic->hlen)
		memcpy(p, ic->handle, ic->hlen);
	p += ic->hlen;
	memset(p, 0, pad4(ic->hlen));
	p += pad4(ic->hlen);
	p = put_u32(p, NFSD_AUTH_NONE);
	p = put_u32(p, 0);
	gather(p, args, niov);
	*mlen = total;
	return 0;
}

static int init_reply(void *st, uint32_t vflav, const xdr_opaque *verf, uint32_t astat,
		      struct xdr_dec *res)
{
	struct init_call *ic = st;
	(void)astat, (void)res;
	ic->vflav = vflav;
	ic->vlen = verf->len <= sizeof(ic->verf) ? verf->len : 0;
	if (ic->vlen)
		memcpy(ic->verf, verf->val, ic->vlen);
	return 0;
}

static void init_end(void *st)
{
	(void)st;
}

static int enc_init_arg(struct xdr_enc *e, const void *v)
{
	return xdr_enc_rpc_gss_init_arg(e, v);
}

static int dec_init_res(struct xdr_dec *d, void *v)
{
	return xdr_dec_rpc_gss_init_res(d, v);
}

/* RFC 2203 §5.2: INIT, then CONTINUE_INIT while either side needs it. */
static int ctx_create(struct nfsd_gss_clnt *g, struct cctx **out, char *why, size_t wlen)
{
	OM_uint32 maj, min, smaj, smin;
	gss_ctx_id_t gctx = GSS_C_NO_CONTEXT;
	gss_buffer_desc in = GSS_C_EMPTY_BUFFER, tok = GSS_C_EMPTY_BUFFER;
	uint8_t handle[HANDLE_MAX];
	uint32_t hlen = 0, window = 0, gp = RPCSEC_GSS_INIT;
	struct xdr_arena arena;
	int rc = -EPROTO;
	xdr_arena_init(&arena, NULL, 0, 1u << 20);
	snprintf(why, wlen, "context creation did not complete in %d rounds", ROUNDS_MAX);
	for (int round = 0; round < ROUNDS_MAX; round++) {
		maj = gss_init_sec_context(&min, g->cred, &gctx, g->target, (gss_OID)gss_mech_krb5,
					   GSS_C_MUTUAL_FLAG, 0, GSS_C_NO_CHANNEL_BINDINGS, &in,
					   NULL, &tok, NULL, NULL);
		if (GSS_ERROR(maj)) {
			gss_why(why, wlen, "gss_init_sec_context", maj, min);
			rc = GSS_ROUTINE_ERROR(maj) == GSS_S_NO_CRED ? -ENOKEY : -EACCES;
			goto out;
		}
		if (!tok.length) {
			snprintf(why, wlen, "gss_init_sec_context gave no token to send");
			rc = -EPROTO;
			goto out;
		}
		struct init_call ic = {
		    .a = {.marshal = init_marshal, .reply = init_reply, .end = init_end},
		    .gss_proc = gp,
		    .handle = handle,
		    .hlen = hlen,
		};
		rpc_gss_init_arg arg = {xdr_opaque_of(tok.value, tok.length)};
		struct nfsd_call_opts o = {
		    .prog = g->prog,
		    .vers = g->vers,
		    .proc = 0,
		    .enc_args = enc_init_arg,
		    .args = &arg,
		    .timeout_ms = g->timeout_ms,
		    .auth = &ic.a,
		};
		rpc_gss_init_res res;
		memset(&res, 0, sizeof(res));
		rc = nfsd_clnt_call(g->clnt, &o, dec_init_res, &res, &arena);
		gss_release_buffer(&min, &tok);
		if (rc) {
			if (rc > 0)
				snprintf(why, wlen, "%s refused: %s %d",
					 gp == RPCSEC_GSS_INIT ? "RPCSEC_GSS_INIT"
							       : "CONTINUE_INIT",
					 rc & NFSD_CALL_ERR_DENIED ? "auth_stat" : "accept_stat",
					 rc & 0xff);
			else
				snprintf(why, wlen, "RPCSEC_GSS_INIT call: %s", strerror(-rc));
			rc = rc > 0 ? -EACCES : rc;
			goto out;
		}
		smaj = res.gss_major;
		smin = res.gss_minor;
		if (GSS_ERROR(smaj)) {
			gss_why(why, wlen, "the server's gss_accept_sec_context", smaj, smin);
			rc = -EACCES;
			goto out;
		}
		if (!res.handle.len || res.handle.len > HANDLE_MAX) {
			snprintf(why, wlen, "a context handle of %u bytes", res.handle.len);
			rc = -EPROTO;
			goto out;
		}
		memcpy(handle, res.handle.val, res.handle.len);
		hlen = res.handle.len;
		window = res.seq_window;
		in = (gss_buffer_desc){res.gss_token.len, (void *)res.gss_token.val};
		if (smaj == GSS_S_COMPLETE) {
			if (maj == GSS_S_CONTINUE_NEEDED) {
				/* the server's last token (mutual authentication) */
				maj = gss_init_sec_context(
				    &min, g->cred, &gctx, g->target, (gss_OID)gss_mech_krb5,
				    GSS_C_MUTUAL_FLAG, 0, GSS_C_NO_CHANNEL_BINDINGS, &in, NULL,
				    &tok, NULL, NULL);
				gss_release_buffer(&min, &tok);
				if (maj != GSS_S_COMPLETE) {
					gss_why(why, wlen, "gss_init_sec_context (last token)", maj,
						min);
					rc = -EACCES;
					goto out;
				}
			}
			/* §5.2.3.1: the verifier is the MIC of the window */
			uint8_t be[4];
			xdr_put32(be, window);
			gss_buffer_desc w = {4, be}, v = {ic.vlen, ic.verf};
			if (ic.vflav != NFSD_RPCSEC_GSS ||
			    GSS_ERROR(gss_verify_mic(&min, gctx, &w, &v, NULL))) {
				snprintf(why, wlen,
					 "the verifier of the server's last reply is not the MIC "
					 "of its window");
				rc = -EPROTO;
				goto out;
			}
			if (!window) {
				snprintf(why, wlen, "a sequence window of 0");
				rc = -EPROTO;
				goto out;
			}
			struct cctx *c = calloc(1, sizeof(*c));
			if (!c) {
				rc = -ENOMEM;
				goto out;
			}
			atomic_init(&c->refs, 1);
			c->km = k5msg_new(&gctx);
			c->gctx = gctx;
			gctx = GSS_C_NO_CONTEXT;
			if (!c->km) {
				ctx_put(c);
				snprintf(why, wlen, "the context's per-message keys: no memory");
				rc = -ENOMEM;
				goto out;
			}
			memcpy(c->handle, handle, hlen);
			c->hlen = hlen;
			c->window = window < WIN_MAX ? window : WIN_MAX;
			*out = c;
			rc = 0;
			why[0] = 0;
			goto out;
		}
		if (maj == GSS_S_COMPLETE) {
			snprintf(why, wlen, "the server wants another round after ours completed");
			rc = -EPROTO;
			goto out;
		}
		gp = RPCSEC_GSS_CONTINUE_INIT;
	}
out:
	if (gctx != GSS_C_NO_CONTEXT)
		gss_delete_sec_context(&min, &gctx, GSS_C_NO_BUFFER);
	xdr_arena_release(&arena);
	return rc;
}

/* The thread that creates contexts: the first, and after losses. */
static void *creator_main(void *arg)
{
	struct nfsd_gss_clnt *g = arg;
	nfsd_thread_block_signals();
	pthread_mutex_lock(&g->mu);
	for (;;) {
		while (!g->refreshing && !g->closing)
			pthread_cond_wait(&g->wake, &g->mu);
		if (g->closing)
			break;
		pthread_mutex_unlock(&g->mu);
		struct cctx *c = NULL;
		char why[sizeof(g->why)];
		int rc = ctx_create(g, &c, why, sizeof(why));
		pthread_mutex_lock(&g->mu);
		if (!rc) {
			ctx_retire(g, g->cur);
			g->cur = c;
			g->fail = 0;
			g->st.contexts++;
		} else {
			g->fail = rc;
			memcpy(g->why, why, sizeof(why));
			g->st.create_fails++;
		}
		g->refreshing = false;
		pthread_cond_broadcast(&g->cond);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* ------------------------------------------------------ lifecycle */

static void auth_init(struct nfsd_gss_clnt *g, struct gss_auth *ga, uint32_t svc, uint32_t proc)
{
	*ga = (struct gss_auth){
	    .a = {.marshal = gss_marshal,
		  .reply = gss_reply,
		  .retry = gss_retry,
		  .ready = gss_ready,
		  .end = gss_end,
		  .wraps_results = svc != NFSD_GSS_SVC_NONE},
	    .g = g,
	    .service = svc,
	    .gss_proc = proc,
	};
}

static int import_name(const char *s, gss_OID type, gss_name_t *out, char *why, size_t wlen)
{
	OM_uint32 maj, min;
	gss_buffer_desc b = {strlen(s), (void *)s};
	maj = gss_import_name(&min, &b, type, out);
	if (GSS_ERROR(maj)) {
		char pre[300];
		snprintf(pre, sizeof(pre), "gss_import_name(%s)", s);
		gss_why(why, wlen, pre, maj, min);
		return -EINVAL;
	}
	return 0;
}

static int cred_acquire(struct nfsd_gss_clnt *g, const struct nfsd_gss_clnt_opts *o, char *why,
			size_t wlen)
{
	g->cred = GSS_C_NO_CREDENTIAL;
	if (!o->principal && !o->keytab && !o->ccache)
		return 0; /* the default credentials, at the first gss_init_sec_context */
	gss_name_t name = GSS_C_NO_NAME;
	if (o->principal) {
		int rc = import_name(o->principal, (gss_OID)GSS_KRB5_NT_PRINCIPAL_NAME, &name, why,
				     wlen);
		if (rc)
			return rc;
	}
	gss_key_value_element_desc kv[2];
	unsigned n = 0;
	if (o->keytab)
		kv[n++] = (gss_key_value_element_desc){"client_keytab", o->keytab};
	if (o->ccache) {
		kv[n++] = (gss_key_value_element_desc){"ccache", o->ccache};
	} else {
		snprintf(g->ccache, sizeof(g->ccache), "MEMORY:braid-gss-%p", (void *)g);
		kv[n++] = (gss_key_value_element_desc){"ccache", g->ccache};
	}
	gss_key_value_set_desc store = {n, kv};
	gss_OID_set_desc mechs = {1, (gss_OID)gss_mech_krb5};
	OM_uint32 maj, min;
	maj = gss_acquire_cred_from(&min, name, GSS_C_INDEFINITE, &mechs, GSS_C_INITIATE, &store,
				    &g->cred, NULL, NULL);
	if (name != GSS_C_NO_NAME)
		gss_release_name(&min, &name);
	if (GSS_ERROR(maj)) {
		char pre[300];
		snprintf(pre, sizeof(pre), "gss_acquire_cred_from(%s)",
			 o->principal ? o->principal : "default principal");
		gss_why(why, wlen, pre, maj, min);
		g->cred = GSS_C_NO_CREDENTIAL;
		return -ENOKEY;
	}
	return 0;
}

struct nfsd_gss_clnt *nfsd_gss_clnt_new(struct nfsd_clnt *c, const struct nfsd_gss_clnt_opts *o,
					char *why, size_t why_len, int *err)
{
	char wbuf[256];
	if (!why || !why_len) {
		why = wbuf;
		why_len = sizeof(wbuf);
	}
	why[0] = 0;
	if (!o->service == !o->target) {
		snprintf(why, why_len, "name the acceptor by service or by target, one of them");
		*err = -EINVAL;
		return NULL;
	}
	struct nfsd_gss_clnt *g = calloc(1, sizeof(*g));
	if (!g) {
		*err = -ENOMEM;
		return NULL;
	}
	g->clnt = c;
	g->prog = o->prog;
	g->vers = o->vers;
	g->timeout_ms = o->timeout_ms ? o->timeout_ms : 30000;
	g->target = GSS_C_NO_NAME;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cond, NULL);
	pthread_cond_init(&g->wake, NULL);
	for (unsigned i = 0; i < 3; i++)
		auth_init(g, &g->auth[i], NFSD_GSS_SVC_NONE + i, RPCSEC_GSS_DATA);
	auth_init(g, &g->destroy, NFSD_GSS_SVC_NONE, RPCSEC_GSS_DESTROY);
	int rc = o->service
		     ? import_name(o->service, GSS_C_NT_HOSTBASED_SERVICE, &g->target, why, why_len)
		     : import_name(o->target, (gss_OID)GSS_KRB5_NT_PRINCIPAL_NAME, &g->target, why,
				   why_len);
	if (!rc)
		rc = cred_acquire(g, o, why, why_len);
	if (!rc) {
		rc = -pthread_create(&g->thr, NULL, creator_main, g);
		g->have_thr = !rc;
		if (rc)
			snprintf(why, why_len, "pthread_create: %s", strerror(-rc));
	}
	if (!rc) {
		pthread_mutex_lock(&g->mu);
		create_kick(g);
		while (g->refreshing)
			pthread_cond_wait(&g->cond, &g->mu);
		if (!g->cur) {
			rc = g->fail ? g->fail : -EIO;
			snprintf(why, why_len, "%s", g->why);
		}
		pthread_mutex_unlock(&g->mu);
	}
	if (rc) {
		nfsd_gss_clnt_free(g);
		*err = rc;
		return NULL;
	}
	return g;
}

const struct nfsd_clnt_auth *nfsd_gss_clnt_auth(struct nfsd_gss_clnt *g, enum nfsd_gss_service svc)
{
	if (svc < NFSD_GSS_SVC_NONE || svc > NFSD_GSS_SVC_PRIVACY)
		return NULL;
	return &g->auth[svc - NFSD_GSS_SVC_NONE].a;
}

void nfsd_gss_clnt_free(struct nfsd_gss_clnt *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	bool have = g->cur != NULL && !g->closing;
	pthread_mutex_unlock(&g->mu);
	if (have) {
		/* §5.4: DESTROY; whatever the answer, the context is dropped */
		struct nfsd_call_opts o = {
		    .prog = g->prog,
		    .vers = g->vers,
		    .proc = 0,
		    .timeout_ms = g->timeout_ms,
		    .auth = &g->destroy.a,
		};
		nfsd_clnt_call(g->clnt, &o, NULL, NULL, NULL);
	}
	pthread_mutex_lock(&g->mu);
	g->closing = true;
	pthread_cond_broadcast(&g->wake);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->mu);
	if (g->have_thr)
		pthread_join(g->thr, NULL);
	ctx_retire(g, g->cur);
	OM_uint32 min;
	if (g->cred != GSS_C_NO_CREDENTIAL)
		gss_release_cred(&min, &g->cred);
	if (g->target != GSS_C_NO_NAME)
		gss_release_name(&min, &g->target);
	pthread_cond_destroy(&g->wake);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

void nfsd_gss_clnt_stats(struct nfsd_gss_clnt *g, struct nfsd_gss_clnt_stats *st)
{
	pthread_mutex_lock(&g->mu);
	*st = g->st;
	st->window = g->cur ? g->cur->window : 0;
	st->seq = g->cur ? g->cur->next : 0;
	pthread_mutex_unlock(&g->mu);
}
