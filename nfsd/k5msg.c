/* SPDX-License-Identifier: MIT */
/* RFC 4121 MIC and Wrap tokens with OpenSSL: see nfsd/k5msg.h. */
#include "config.h"

#include <errno.h>
#include <gssapi/gssapi.h>
#include <gssapi/gssapi_krb5.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nfsd/k5msg.h"

#define TOK_MIC0 0x04 /* RFC 4121 §4.2.6.1: 04 04 */
#define TOK_WRAP0 0x05 /* §4.2.6.2: 05 04 */
#define TOK_1 0x04
#define FLAG_SENT_BY_ACCEPTOR 0x01
#define FLAG_SEALED 0x02
#define FLAG_ACCEPTOR_SUBKEY 0x04
#define HDR 16 /* a token's header */
#define BLK 16 /* AES's block, and the confounder */

/* RFC 4121 §2: key usages */
#define KG_USAGE_ACCEPTOR_SEAL 22
#define KG_USAGE_ACCEPTOR_SIGN 23
#define KG_USAGE_INITIATOR_SEAL 24
#define KG_USAGE_INITIATOR_SIGN 25

#define IOV_STACK 64

struct k5type {
	unsigned enctype;
	const char *name;
	size_t keylen; /* the base key and Ke */
	size_t kilen;  /* Kc and Ki */
	size_t h;      /* checksum bytes kept */
	const char *digest;
	bool rfc8009; /* KDF-HMAC-SHA2, encrypt-then-MAC over IV | C */
	const char *cbc, *ecb;
};

static const struct k5type types[] = {
    {17, "aes128-cts-hmac-sha1-96", 16, 16, 12, "SHA1", false, "AES-128-CBC", "AES-128-ECB"},
    {18, "aes256-cts-hmac-sha1-96", 32, 32, 12, "SHA1", false, "AES-256-CBC", "AES-256-ECB"},
    {19, "aes128-cts-hmac-sha256-128", 16, 16, 16, "SHA256", true, "AES-128-CBC", "AES-128-ECB"},
    {20, "aes256-cts-hmac-sha384-192", 32, 24, 24, "SHA384", true, "AES-256-CBC", "AES-256-ECB"},
};

/* The algorithms, fetched once (shared, read-only). */
static pthread_once_t algs_once = PTHREAD_ONCE_INIT;
static EVP_MAC *alg_hmac;
static EVP_CIPHER *alg_cbc[2], *alg_ecb[2]; /* [0] AES-128, [1] AES-256 */

static void algs_fetch(void)
{
	alg_hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	alg_cbc[0] = EVP_CIPHER_fetch(NULL, "AES-128-CBC", NULL);
	alg_cbc[1] = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
	alg_ecb[0] = EVP_CIPHER_fetch(NULL, "AES-128-ECB", NULL);
	alg_ecb[1] = EVP_CIPHER_fetch(NULL, "AES-256-ECB", NULL);
}

static bool algs_ready(void)
{
	pthread_once(&algs_once, algs_fetch);
	return alg_hmac && alg_cbc[0] && alg_cbc[1] && alg_ecb[0] && alg_ecb[1];
}

static const struct k5type *type_of(unsigned enctype)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].enctype == enctype)
			return &types[i];
	return NULL;
}

static EVP_CIPHER *cbc_of(const struct k5type *t)
{
	return alg_cbc[t->keylen == 32];
}

static EVP_CIPHER *ecb_of(const struct k5type *t)
{
	return alg_ecb[t->keylen == 32];
}

/* One base key's keys for one sender's usages. */
struct k5keys {
	EVP_MAC_CTX *kc, *ki; /* HMAC keyed with Kc and Ki, duplicated per use */
	uint8_t ke[32];
};

struct k5msg {
	gss_ctx_id_t gctx;  /* MIT's calls, when !fast */
	pthread_mutex_t mu; /* around MIT's calls */
	bool fast, initiator, have_asub;
	const struct k5type *t;
	char ename[32];
	/* [key][dir]: key 0 the context key, 1 the acceptor subkey; dir 0
	 * what we send, 1 what the peer sends */
	struct k5keys keys[2][2];
	uint8_t flags; /* of the tokens we send */
	atomic_uint_fast64_t seq;
	uint32_t endtime; /* seconds since the epoch; 0: none */
};

/* ----------------------------------------------------------- primitives */

void k5msg_nfold(const uint8_t *in, size_t n, uint8_t *out, size_t m)
{
	memset(out, 0, m);
	if (!n || !m)
		return;
	size_t a = n, b = m;
	while (b) {
		size_t r = a % b;
		a = b;
		b = r;
	}
	size_t l = n / a * m; /* lcm(n, m) bytes */
	uint8_t *buf = calloc(1, l);
	if (!buf)
		return;
	size_t nb = 8 * n;
	/* copy j of the input, rotated right by 13 * j bits */
	for (size_t j = 0; j < l / n; j++) {
		size_t rot = (13 * j) % nb;
		for (size_t bit = 0; bit < nb; bit++) {
			size_t src = (bit + nb - rot) % nb;
			if (in[src / 8] >> (7 - src % 8) & 1)
				buf[j * n + bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		}
	}
	/* their m-byte pieces added in ones'-complement arithmetic */
	for (size_t k = 0; k < l / m; k++) {
		unsigned carry = 0;
		for (size_t i = m; i-- > 0;) {
			unsigned s = out[i] + buf[k * m + i] + carry;
			out[i] = (uint8_t)s;
			carry = s >> 8;
		}
		while (carry) {
			for (size_t i = m; i-- > 0 && carry;) {
				unsigned s = out[i] + carry;
				out[i] = (uint8_t)s;
				carry = s >> 8;
			}
		}
	}
	free(buf);
}

/* One block through AES-ECB (enc: encrypt) under key: 0 or -1. */
static int ecb_block(const struct k5type *t, const uint8_t *key, bool enc, const uint8_t in[BLK],
		     uint8_t out[BLK])
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int ol = 0, ok = x && EVP_CipherInit_ex2(x, ecb_of(t), key, NULL, enc, NULL) &&
			 EVP_CIPHER_CTX_set_padding(x, 0) && EVP_CipherUpdate(x, out, &ol, in, BLK) &&
			 ol == BLK;
	EVP_CIPHER_CTX_free(x);
	return ok ? 0 : -1;
}

static int hmac_once(const char *digest, const uint8_t *key, size_t klen, const uint8_t *msg,
		     size_t len, uint8_t *out, size_t *olen)
{
	EVP_MAC_CTX *m = EVP_MAC_CTX_new(alg_hmac);
	OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
			  OSSL_PARAM_construct_end()};
	int ok = m && EVP_MAC_init(m, key, klen, p) && EVP_MAC_update(m, msg, len) &&
		 EVP_MAC_final(m, out, olen, 64);
	EVP_MAC_CTX_free(m);
	return ok ? 0 : -1;
}

int k5msg_derive(unsigned enctype, const uint8_t *key, size_t klen, uint32_t usage, uint8_t kind,
		 uint8_t *out, size_t *olen)
{
	const struct k5type *t = type_of(enctype);
	if (!t || klen != t->keylen || !algs_ready())
		return -EINVAL;
	uint8_t c[5] = {(uint8_t)(usage >> 24), (uint8_t)(usage >> 16), (uint8_t)(usage >> 8),
			(uint8_t)usage, kind};
	if (!t->rfc8009) {
		/* RFC 3961 §5.1: DK = random-to-key(DR), DR the blocks of E
		 * fed back from n-fold(constant) until there are enough */
		uint8_t blk[BLK];
		k5msg_nfold(c, sizeof(c), blk, BLK);
		for (size_t o = 0; o < t->keylen; o += BLK) {
			if (ecb_block(t, key, true, blk, blk) < 0)
				return -EIO;
			memcpy(out + o, blk, BLK);
		}
		*olen = t->keylen;
		return 0;
	}
	/* RFC 8009 §3: KDF-HMAC-SHA2(key, label, k) = k-truncate(HMAC(key,
	 * 00000001 | label | 00 | k)), k in bits */
	size_t bytes = kind == 0xAA ? t->keylen : t->kilen;
	uint32_t bits = (uint32_t)bytes * 8;
	uint8_t msg[4 + 5 + 1 + 4] = {0, 0, 0, 1};
	memcpy(msg + 4, c, 5);
	msg[9] = 0;
	msg[10] = (uint8_t)(bits >> 24);
	msg[11] = (uint8_t)(bits >> 16);
	msg[12] = (uint8_t)(bits >> 8);
	msg[13] = (uint8_t)bits;
	uint8_t h[64];
	size_t hl = 0;
	if (hmac_once(t->digest, key, klen, msg, sizeof(msg), h, &hl) < 0 || hl < bytes)
		return -EIO;
	memcpy(out, h, bytes);
	*olen = bytes;
	return 0;
}

static EVP_MAC_CTX *mac_keyed(const struct k5type *t, const uint8_t *key, size_t klen)
{
	EVP_MAC_CTX *m = EVP_MAC_CTX_new(alg_hmac);
	OSSL_PARAM p[] = {
	    OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)t->digest, 0),
	    OSSL_PARAM_construct_end()};
	if (m && EVP_MAC_init(m, key, klen, p))
		return m;
	EVP_MAC_CTX_free(m);
	return NULL;
}

static int keys_make(const struct k5type *t, const uint8_t *base, uint32_t sign, uint32_t seal,
		     struct k5keys *k)
{
	uint8_t kc[32], ki[32];
	size_t n;
	if (k5msg_derive(t->enctype, base, t->keylen, sign, 0x99, kc, &n) < 0 ||
	    !(k->kc = mac_keyed(t, kc, n)) ||
	    k5msg_derive(t->enctype, base, t->keylen, seal, 0x55, ki, &n) < 0 ||
	    !(k->ki = mac_keyed(t, ki, n)) ||
	    k5msg_derive(t->enctype, base, t->keylen, seal, 0xAA, k->ke, &n) < 0) {
		OPENSSL_cleanse(kc, sizeof(kc));
		OPENSSL_cleanse(ki, sizeof(ki));
		return -1;
	}
	OPENSSL_cleanse(kc, sizeof(kc));
	OPENSSL_cleanse(ki, sizeof(ki));
	return 0;
}

static void keys_free(struct k5keys *k)
{
	EVP_MAC_CTX_free(k->kc);
	EVP_MAC_CTX_free(k->ki);
	OPENSSL_cleanse(k->ke, sizeof(k->ke));
	k->kc = k->ki = NULL;
}

/* Segments of a message, in order. */
struct seg {
	uint8_t *p;
	size_t n;
};

static void seg_copy(struct seg *s, int ns, size_t off, uint8_t *buf, size_t len, bool out)
{
	for (int i = 0; i < ns && len; i++) {
		if (off >= s[i].n) {
			off -= s[i].n;
			continue;
		}
		size_t k = s[i].n - off < len ? s[i].n - off : len;
		if (out)
			memcpy(buf, s[i].p + off, k);
		else
			memcpy(s[i].p + off, buf, k);
		buf += k;
		len -= k;
		off = 0;
	}
}

/* The HMAC template m over (optional 16 zero bytes and) the segments,
 * truncated to h bytes into out. */
static int mac_segs(EVP_MAC_CTX *tmpl, bool zero_iv, const struct seg *s, int ns,
		    const struct iovec *iov, int niov, const uint8_t *tail, size_t tlen, uint8_t *out,
		    size_t h)
{
	static const uint8_t zero[BLK];
	EVP_MAC_CTX *m = EVP_MAC_CTX_dup(tmpl);
	int ok = m != NULL;
	if (ok && zero_iv)
		ok = EVP_MAC_update(m, zero, BLK);
	for (int i = 0; ok && i < ns; i++)
		ok = EVP_MAC_update(m, s[i].p, s[i].n);
	for (int i = 0; ok && i < niov; i++)
		ok = EVP_MAC_update(m, iov[i].iov_base, iov[i].iov_len);
	if (ok && tlen)
		ok = EVP_MAC_update(m, tail, tlen);
	uint8_t full[64];
	size_t fl = 0;
	ok = ok && EVP_MAC_final(m, full, &fl, sizeof(full)) && fl >= h;
	EVP_MAC_CTX_free(m);
	if (ok)
		memcpy(out, full, h);
	return ok ? 0 : -1;
}

/*
 * CBC with ciphertext stealing, IV zero (RFC 3962 §5: the last two blocks
 * swapped, the last one possibly partial), in place over the segments'
 * total bytes (at least one block).
 */
static int cts_encrypt(const struct k5type *t, const uint8_t *ke, struct seg *s, int ns,
		       size_t total)
{
	static const uint8_t iv[BLK];
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int ol, ok = x && EVP_EncryptInit_ex2(x, cbc_of(t), ke, iv, NULL) &&
		     EVP_CIPHER_CTX_set_padding(x, 0);
	if (ok && total == BLK) {
		uint8_t b[BLK];
		seg_copy(s, ns, 0, b, BLK, true);
		ok = EVP_EncryptUpdate(x, b, &ol, b, BLK);
		seg_copy(s, ns, 0, b, BLK, false);
	} else if (ok) {
		size_t d = total % BLK ? total % BLK : BLK;
		size_t bulk = total - BLK - d, off = 0;
		/* whole blocks in place where they lie, a block that spans
		 * two segments through a copy */
		while (ok && off < bulk) {
			int i = 0;
			size_t in = off;
			while (i < ns && in >= s[i].n)
				in -= s[i++].n;
			size_t run = s[i].n - in;
			if (run > bulk - off)
				run = bulk - off;
			run &= ~(size_t)(BLK - 1);
			if (run > (1u << 30))
				run = 1u << 30;
			if (run) {
				ok = EVP_EncryptUpdate(x, s[i].p + in, &ol, s[i].p + in, (int)run);
				off += run;
				continue;
			}
			uint8_t b[BLK];
			seg_copy(s, ns, off, b, BLK, true);
			ok = EVP_EncryptUpdate(x, b, &ol, b, BLK);
			seg_copy(s, ns, off, b, BLK, false);
			off += BLK;
		}
		/* the last two: X = E(P[n-1] ^ C[n-2]), Y = E(pad(P[n]) ^ X),
		 * sent as Y | X truncated to P[n]'s length */
		uint8_t tl[2 * BLK] = {0}, ct[2 * BLK];
		seg_copy(s, ns, bulk, tl, BLK + d, true);
		ok = ok && EVP_EncryptUpdate(x, ct, &ol, tl, 2 * BLK);
		memcpy(tl, ct + BLK, BLK);
		memcpy(tl + BLK, ct, d);
		seg_copy(s, ns, bulk, tl, BLK + d, false);
	}
	EVP_CIPHER_CTX_free(x);
	return ok ? 0 : -1;
}

/* The inverse of cts_encrypt, in place over len bytes (at least a block). */
static int cts_decrypt(const struct k5type *t, const uint8_t *ke, uint8_t *buf, size_t len)
{
	static const uint8_t iv[BLK];
	int ol, ok = 1;
	if (len == BLK)
		return ecb_block(t, ke, false, buf, buf);
	size_t d = len % BLK ? len % BLK : BLK;
	size_t bulk = len - BLK - d;
	uint8_t prev[BLK] = {0}, dy[BLK], x[BLK], px[BLK];
	if (bulk)
		memcpy(prev, buf + bulk - BLK, BLK);
	uint8_t *y = buf + bulk, *cb = buf + bulk + BLK;
	/* D(Y) = pad(P[n]) ^ X: X is cb | the rest of D(Y) */
	if (ecb_block(t, ke, false, y, dy) < 0)
		return -1;
	memcpy(x, cb, d);
	memcpy(x + d, dy + d, BLK - d);
	if (ecb_block(t, ke, false, x, px) < 0)
		return -1;
	for (size_t i = 0; i < d; i++)
		cb[i] = dy[i] ^ x[i];
	for (size_t i = 0; i < BLK; i++)
		y[i] = px[i] ^ prev[i];
	if (bulk) {
		EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
		ok = c && EVP_DecryptInit_ex2(c, cbc_of(t), ke, iv, NULL) &&
		     EVP_CIPHER_CTX_set_padding(c, 0);
		for (size_t off = 0; ok && off < bulk;) {
			size_t run = bulk - off > (1u << 30) ? (1u << 30) : bulk - off;
			ok = EVP_DecryptUpdate(c, buf + off, &ol, buf + off, (int)run);
			off += run;
		}
		EVP_CIPHER_CTX_free(c);
	}
	return ok ? 0 : -1;
}

/* -------------------------------------------------------------- context */

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static bool expired(const struct k5msg *k)
{
	return k->endtime && (uint64_t)time(NULL) > k->endtime;
}

/* The keys of a context: its enctype, role, key and acceptor subkey
 * (NULL: none); false for an enctype not done here. */
static bool keys_setup(struct k5msg *k, unsigned enctype, bool initiator, const uint8_t *ctx_key,
		       size_t klen, const uint8_t *asub, size_t alen)
{
	const struct k5type *t = type_of(enctype);
	if (t)
		snprintf(k->ename, sizeof(k->ename), "%s", t->name);
	else
		snprintf(k->ename, sizeof(k->ename), "enctype %u", enctype);
	if (!t || klen != t->keylen || (asub && alen != t->keylen) || !algs_ready())
		return false;
	k->t = t;
	k->initiator = initiator;
	k->have_asub = asub != NULL;
	uint32_t my_sign = initiator ? KG_USAGE_INITIATOR_SIGN : KG_USAGE_ACCEPTOR_SIGN;
	uint32_t my_seal = initiator ? KG_USAGE_INITIATOR_SEAL : KG_USAGE_ACCEPTOR_SEAL;
	uint32_t pr_sign = initiator ? KG_USAGE_ACCEPTOR_SIGN : KG_USAGE_INITIATOR_SIGN;
	uint32_t pr_seal = initiator ? KG_USAGE_ACCEPTOR_SEAL : KG_USAGE_INITIATOR_SEAL;
	bool ok = keys_make(t, ctx_key, my_sign, my_seal, &k->keys[0][0]) == 0 &&
		  keys_make(t, ctx_key, pr_sign, pr_seal, &k->keys[0][1]) == 0;
	if (ok && asub)
		ok = keys_make(t, asub, my_sign, my_seal, &k->keys[1][0]) == 0 &&
		     keys_make(t, asub, pr_sign, pr_seal, &k->keys[1][1]) == 0;
	k->flags = (uint8_t)((initiator ? 0 : FLAG_SENT_BY_ACCEPTOR) |
			     (asub ? FLAG_ACCEPTOR_SUBKEY : 0));
	if (!ok)
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++)
				keys_free(&k->keys[i][j]);
	return ok;
}

/* The keys from a copy of *gctx (MIT's lucid context); false: MIT keeps
 * the calls. */
static bool fast_setup(struct k5msg *k, gss_ctx_id_t *gctx)
{
	OM_uint32 maj, min;
	gss_buffer_desc tok = GSS_C_EMPTY_BUFFER;
	if (!algs_ready())
		return false;
	maj = gss_export_sec_context(&min, gctx, &tok);
	if (GSS_ERROR(maj))
		return false;
	/* the export ended *gctx: two imports, one back to the caller */
	gss_ctx_id_t a = GSS_C_NO_CONTEXT, b = GSS_C_NO_CONTEXT;
	maj = gss_import_sec_context(&min, &tok, &a);
	*gctx = GSS_ERROR(maj) ? GSS_C_NO_CONTEXT : a;
	k->gctx = *gctx;
	if (GSS_ERROR(maj) || GSS_ERROR(gss_import_sec_context(&min, &tok, &b))) {
		gss_release_buffer(&min, &tok);
		return false;
	}
	gss_release_buffer(&min, &tok);
	void *lp = NULL;
	if (GSS_ERROR(gss_krb5_export_lucid_sec_context(&min, &b, 1, &lp))) {
		if (b != GSS_C_NO_CONTEXT)
			gss_delete_sec_context(&min, &b, GSS_C_NO_BUFFER);
		return false;
	}
	gss_krb5_lucid_context_v1_t *l = lp;
	bool ok = false;
	if (l->version == 1 && l->protocol == 1) {
		gss_krb5_lucid_key_t *ck = &l->cfx_kd.ctx_key, *ak = &l->cfx_kd.acceptor_subkey;
		bool asub = l->cfx_kd.have_acceptor_subkey != 0;
		if (!asub || ak->type == ck->type)
			ok = keys_setup(k, ck->type, l->initiate != 0, ck->data, ck->length,
					asub ? ak->data : NULL, ak->length);
		else
			snprintf(k->ename, sizeof(k->ename), "enctype %u", (unsigned)ak->type);
		atomic_init(&k->seq, l->send_seq);
		k->endtime = l->endtime;
	}
	gss_krb5_free_lucid_sec_context(&min, lp);
	return ok;
}

struct k5msg *k5msg_new(gss_ctx_id_t *gctx)
{
	struct k5msg *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	pthread_mutex_init(&k->mu, NULL);
	k->gctx = *gctx;
	snprintf(k->ename, sizeof(k->ename), "unknown");
	k->fast = fast_setup(k, gctx);
	if (k->gctx == GSS_C_NO_CONTEXT && !k->fast) {
		/* the copy failed half-way and took the context with it */
		k5msg_free(k);
		return NULL;
	}
	return k;
}

struct k5msg *k5msg_from_keys(unsigned enctype, bool initiator, const uint8_t *ctx_key,
			      size_t klen, const uint8_t *asub, size_t alen, uint64_t seq)
{
	struct k5msg *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	pthread_mutex_init(&k->mu, NULL);
	k->gctx = GSS_C_NO_CONTEXT;
	atomic_init(&k->seq, seq);
	if (!keys_setup(k, enctype, initiator, ctx_key, klen, asub, alen)) {
		k5msg_free(k);
		return NULL;
	}
	k->fast = true;
	return k;
}

void k5msg_free(struct k5msg *k)
{
	if (!k)
		return;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			keys_free(&k->keys[i][j]);
	pthread_mutex_destroy(&k->mu);
	free(k);
}

bool k5msg_fast(const struct k5msg *k)
{
	return k->fast;
}

const char *k5msg_enctype(const struct k5msg *k)
{
	return k->ename;
}

/* The peer's key set for a token's flags; NULL: a token not from the peer. */
static const struct k5keys *peer_keys(const struct k5msg *k, uint8_t flags)
{
	bool from_acceptor = flags & FLAG_SENT_BY_ACCEPTOR;
	if (from_acceptor != k->initiator) /* the peer is the other role */
		return NULL;
	if (flags & FLAG_ACCEPTOR_SUBKEY)
		return k->have_asub ? &k->keys[1][1] : NULL;
	return &k->keys[0][1];
}

static const struct k5keys *my_keys(const struct k5msg *k)
{
	return &k->keys[k->have_asub][0];
}

/* ------------------------------------------------------------------ MIC */

static gss_iov_buffer_desc *mit_iov(const struct iovec *iov, int n, gss_iov_buffer_desc *stack)
{
	gss_iov_buffer_desc *g = n + 1 <= IOV_STACK ? stack : calloc((size_t)n + 1, sizeof(*g));
	if (!g)
		return NULL;
	for (int i = 0; i < n; i++) {
		g[i].type = GSS_IOV_BUFFER_TYPE_DATA;
		g[i].buffer = (gss_buffer_desc){iov[i].iov_len, iov[i].iov_base};
	}
	g[n].type = GSS_IOV_BUFFER_TYPE_MIC_TOKEN;
	g[n].buffer = (gss_buffer_desc)GSS_C_EMPTY_BUFFER;
	return g;
}

OM_uint32 k5msg_mic_len(struct k5msg *k, size_t *len)
{
	if (k->fast) {
		*len = HDR + k->t->h;
		return GSS_S_COMPLETE;
	}
	OM_uint32 maj, min;
	gss_iov_buffer_desc g[2] = {{GSS_IOV_BUFFER_TYPE_DATA, {0, NULL}},
				    {GSS_IOV_BUFFER_TYPE_MIC_TOKEN, {0, NULL}}};
	pthread_mutex_lock(&k->mu);
	maj = gss_get_mic_iov_length(&min, k->gctx, GSS_C_QOP_DEFAULT, g, 2);
	pthread_mutex_unlock(&k->mu);
	*len = g[1].buffer.length;
	return maj;
}

OM_uint32 k5msg_get_mic(struct k5msg *k, const struct iovec *iov, int n, uint8_t *tok, size_t len)
{
	if (!k->fast) {
		gss_iov_buffer_desc stack[IOV_STACK], *g = mit_iov(iov, n, stack);
		if (!g)
			return GSS_S_FAILURE;
		OM_uint32 maj, min;
		pthread_mutex_lock(&k->mu);
		maj = gss_get_mic_iov_length(&min, k->gctx, GSS_C_QOP_DEFAULT, g, n + 1);
		if (!GSS_ERROR(maj) && g[n].buffer.length != len)
			maj = GSS_S_FAILURE;
		if (!GSS_ERROR(maj)) {
			g[n].buffer.value = tok;
			maj = gss_get_mic_iov(&min, k->gctx, GSS_C_QOP_DEFAULT, g, n + 1);
		}
		pthread_mutex_unlock(&k->mu);
		if (g != stack)
			free(g);
		return maj;
	}
	if (expired(k))
		return GSS_S_CONTEXT_EXPIRED;
	if (len != HDR + k->t->h)
		return GSS_S_FAILURE;
	tok[0] = TOK_MIC0;
	tok[1] = TOK_1;
	tok[2] = k->flags;
	memset(tok + 3, 0xff, 5);
	put64(tok + 8, atomic_fetch_add(&k->seq, 1));
	/* §4.2.4: the checksum of the message, then the header */
	if (mac_segs(my_keys(k)->kc, false, NULL, 0, iov, n, tok, HDR, tok + HDR, k->t->h) < 0)
		return GSS_S_FAILURE;
	return GSS_S_COMPLETE;
}

OM_uint32 k5msg_verify_mic(struct k5msg *k, const struct iovec *iov, int n, const uint8_t *tok,
			   size_t len)
{
	if (!k->fast) {
		gss_iov_buffer_desc stack[IOV_STACK], *g = mit_iov(iov, n, stack);
		if (!g)
			return GSS_S_FAILURE;
		g[n].buffer = (gss_buffer_desc){len, (void *)tok};
		OM_uint32 maj, min;
		pthread_mutex_lock(&k->mu);
		maj = gss_verify_mic_iov(&min, k->gctx, NULL, g, n + 1);
		pthread_mutex_unlock(&k->mu);
		if (g != stack)
			free(g);
		return maj;
	}
	if (expired(k))
		return GSS_S_CONTEXT_EXPIRED;
	if (len != HDR + k->t->h || tok[0] != TOK_MIC0 || tok[1] != TOK_1)
		return GSS_S_DEFECTIVE_TOKEN;
	for (int i = 3; i < 8; i++)
		if (tok[i] != 0xff)
			return GSS_S_DEFECTIVE_TOKEN;
	const struct k5keys *pk = peer_keys(k, tok[2]);
	if (!pk || (tok[2] & FLAG_SEALED))
		return GSS_S_DEFECTIVE_TOKEN;
	uint8_t sum[32];
	if (mac_segs(pk->kc, false, NULL, 0, iov, n, tok, HDR, sum, k->t->h) < 0)
		return GSS_S_FAILURE;
	return CRYPTO_memcmp(sum, tok + HDR, k->t->h) ? GSS_S_BAD_SIG : GSS_S_COMPLETE;
}

/* ----------------------------------------------------------------- Wrap */

static OM_uint32 mit_wrap_len(struct k5msg *k, size_t len, gss_iov_buffer_desc g[4])
{
	OM_uint32 min;
	int conf = 0;
	memset(g, 0, 4 * sizeof(*g));
	g[0].type = GSS_IOV_BUFFER_TYPE_HEADER;
	g[1].type = GSS_IOV_BUFFER_TYPE_DATA;
	g[1].buffer.length = len;
	g[2].type = GSS_IOV_BUFFER_TYPE_PADDING;
	g[3].type = GSS_IOV_BUFFER_TYPE_TRAILER;
	return gss_wrap_iov_length(&min, k->gctx, 1, GSS_C_QOP_DEFAULT, &conf, g, 4);
}

OM_uint32 k5msg_wrap_len(struct k5msg *k, size_t len, size_t *head, size_t *tail)
{
	if (k->fast) {
		*head = HDR + BLK;
		*tail = HDR + k->t->h;
		return GSS_S_COMPLETE;
	}
	gss_iov_buffer_desc g[4];
	pthread_mutex_lock(&k->mu);
	OM_uint32 maj = mit_wrap_len(k, len, g);
	pthread_mutex_unlock(&k->mu);
	*head = g[0].buffer.length;
	*tail = g[2].buffer.length + g[3].buffer.length;
	return maj;
}

OM_uint32 k5msg_wrap(struct k5msg *k, uint8_t *head, uint8_t *data, size_t len, uint8_t *tail)
{
	if (!k->fast) {
		gss_iov_buffer_desc g[4];
		OM_uint32 maj, min;
		int conf = 0;
		pthread_mutex_lock(&k->mu);
		maj = mit_wrap_len(k, len, g);
		if (!GSS_ERROR(maj)) {
			g[0].buffer.value = head;
			g[1].buffer.value = data;
			g[2].buffer.value = tail;
			g[3].buffer.value = tail + g[2].buffer.length;
			maj = gss_wrap_iov(&min, k->gctx, 1, GSS_C_QOP_DEFAULT, &conf, g, 4);
		}
		pthread_mutex_unlock(&k->mu);
		return !GSS_ERROR(maj) && !conf ? GSS_S_FAILURE : maj;
	}
	if (expired(k))
		return GSS_S_CONTEXT_EXPIRED;
	const struct k5keys *mk = my_keys(k);
	/* §4.2.6.2: the header (EC 0: CTS needs no padding; RRC 0), the
	 * confounder, the data and the header again make the plaintext */
	head[0] = TOK_WRAP0;
	head[1] = TOK_1;
	head[2] = k->flags | FLAG_SEALED;
	head[3] = 0xff;
	memset(head + 4, 0, 4);
	put64(head + 8, atomic_fetch_add(&k->seq, 1));
	if (RAND_bytes(head + HDR, BLK) != 1)
		return GSS_S_FAILURE;
	memcpy(tail, head, HDR);
	struct seg s[3] = {{head + HDR, BLK}, {data, len}, {tail, HDR}};
	size_t total = BLK + len + HDR;
	uint8_t *sum = tail + HDR;
	if (!k->t->rfc8009 && mac_segs(mk->ki, false, s, 3, NULL, 0, NULL, 0, sum, k->t->h) < 0)
		return GSS_S_FAILURE;
	if (cts_encrypt(k->t, mk->ke, s, 3, total) < 0)
		return GSS_S_FAILURE;
	if (k->t->rfc8009 && mac_segs(mk->ki, true, s, 3, NULL, 0, NULL, 0, sum, k->t->h) < 0)
		return GSS_S_FAILURE;
	return GSS_S_COMPLETE;
}

static void reverse(uint8_t *p, size_t n)
{
	for (size_t i = 0, j = n; i + 1 < j--; i++) {
		uint8_t c = p[i];
		p[i] = p[j];
		p[j] = c;
	}
}

OM_uint32 k5msg_unwrap(struct k5msg *k, uint8_t *tok, size_t len, uint8_t **data, size_t *dlen)
{
	if (!k->fast) {
		OM_uint32 maj, min;
		int conf = 0;
		gss_iov_buffer_desc g[2] = {{GSS_IOV_BUFFER_TYPE_STREAM, {len, tok}},
					    {GSS_IOV_BUFFER_TYPE_DATA, {0, NULL}}};
		pthread_mutex_lock(&k->mu);
		maj = gss_unwrap_iov(&min, k->gctx, &conf, NULL, g, 2);
		pthread_mutex_unlock(&k->mu);
		if (GSS_ERROR(maj))
			return maj;
		if (!conf)
			return GSS_S_BAD_QOP;
		*data = g[1].buffer.value;
		*dlen = g[1].buffer.length;
		return maj;
	}
	if (expired(k))
		return GSS_S_CONTEXT_EXPIRED;
	size_t h = k->t->h;
	if (len < HDR || tok[0] != TOK_WRAP0 || tok[1] != TOK_1 || tok[3] != 0xff)
		return GSS_S_DEFECTIVE_TOKEN;
	const struct k5keys *pk = peer_keys(k, tok[2]);
	if (!pk)
		return GSS_S_DEFECTIVE_TOKEN;
	if (!(tok[2] & FLAG_SEALED))
		return GSS_S_BAD_QOP;
	size_t ec = (size_t)tok[4] << 8 | tok[5], rrc = (size_t)tok[6] << 8 | tok[7];
	uint8_t *body = tok + HDR;
	size_t blen = len - HDR;
	if (blen < BLK + HDR + h)
		return GSS_S_DEFECTIVE_TOKEN;
	/* §4.2.5: the sender rotated the body right by RRC bytes */
	rrc %= blen;
	if (rrc) {
		reverse(body, rrc);
		reverse(body + rrc, blen - rrc);
		reverse(body, blen);
	}
	size_t clen = blen - h;
	uint8_t sum[32];
	struct seg s = {body, clen};
	if (k->t->rfc8009) {
		if (mac_segs(pk->ki, true, &s, 1, NULL, 0, NULL, 0, sum, h) < 0)
			return GSS_S_FAILURE;
		if (CRYPTO_memcmp(sum, body + clen, h))
			return GSS_S_BAD_SIG;
	}
	if (cts_decrypt(k->t, pk->ke, body, clen) < 0)
		return GSS_S_FAILURE;
	if (!k->t->rfc8009) {
		if (mac_segs(pk->ki, false, &s, 1, NULL, 0, NULL, 0, sum, h) < 0)
			return GSS_S_FAILURE;
		if (CRYPTO_memcmp(sum, body + clen, h))
			return GSS_S_BAD_SIG;
	}
	/* confounder | data | EC filler | the header again (its RRC aside) */
	if (clen < BLK + HDR + ec)
		return GSS_S_DEFECTIVE_TOKEN;
	const uint8_t *copy = body + clen - HDR;
	if (memcmp(copy, tok, 6) || memcmp(copy + 8, tok + 8, 8))
		return GSS_S_BAD_SIG;
	*data = body + BLK;
	*dlen = clen - BLK - HDR - ec;
	return GSS_S_COMPLETE;
}
