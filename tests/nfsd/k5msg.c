/* SPDX-License-Identifier: MIT */
/*
 * nfsd/k5msg.c, RFC 4121 MIC and Wrap tokens over OpenSSL.
 *
 * Without arguments: known answers (RFC 3961's n-fold vectors, RFC 8009's
 * derived keys), and two contexts of known keys (initiator and acceptor,
 * every enctype, with and without an acceptor subkey) exchanging MICs and
 * sealed tokens of every length around the block size and 1 MiB, split
 * into odd iovecs; a token changed anywhere (data, checksum, header, its
 * encrypted copy), cut short, reflected back to its sender, unsealed, with
 * an EC beyond its data, or made with other keys is refused; a rotated
 * token (RRC, §4.2.5) is accepted.
 *
 * With --interop (tests/nfsd/rpcsec-gss.sh runs it in its realm, with
 * KRB5_KTNAME the acceptor's keys and KRB5_CLIENT_KTNAME the initiator's,
 * principal k5msg, service nfs@k5msg whose keys are of all four AES
 * enctypes): for each enctype, a context pair made by MIT; the tokens made
 * here are checked by MIT's gss_verify_mic and gss_unwrap, and MIT's
 * gss_get_mic and gss_wrap tokens by ours, both directions, so the keys,
 * the derivation, the cipher and the token format agree with MIT's.
 */
#include "config.h"

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_krb5.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/k5msg.h"
#include "tests/check.h"

static OM_uint32 min_;

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;
	for (; h[0] && h[1]; h += 2) {
		unsigned v;
		CHECK(sscanf(h, "%2x", &v) == 1);
		out[n++] = (uint8_t)v;
	}
	return n;
}

static void check_hex(const uint8_t *got, size_t n, const char *want, const char *what)
{
	uint8_t w[128];
	size_t wn = unhex(want, w);
	if (wn != n || memcmp(got, w, n)) {
		fprintf(stderr, "%s: got ", what);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "%02x", got[i]);
		fprintf(stderr, ", want %s\n", want);
		exit(1);
	}
}

/* ------------------------------------------------------- known answers */

static void nfold_vectors(void)
{
	static const struct {
		const char *in;
		size_t bits;
		const char *out;
	} v[] = {
	    {"012345", 64, "be072631276b1955"},
	    {"password", 56, "78a07b6caf85fa"},
	    {"Rough Consensus, and Running Code", 64, "bb6ed30870b7f0e0"},
	    {"password", 168, "59e4a8ca7c0385c3c37b3f6d2000247cb6e6bd5b3e"},
	    {"MASSACHVSETTS INSTITVTE OF TECHNOLOGY", 192,
	     "db3b0d8f0b061e603282b308a50841229ad798fab9540c1b"},
	    {"Q", 168, "518a54a215a8452a518a54a215a8452a518a54a215"},
	    {"ba", 168, "fb25d531ae8974499f52fd92ea9857c4ba24cf297e"},
	    {"kerberos", 64, "6b65726265726f73"},
	    {"kerberos", 128, "6b65726265726f737b9b5b2b93132b93"},
	    {"kerberos", 168, "8372c236344e5f1550cd0747e15d62ca7a5a3bcea4"},
	    {"kerberos", 256, "6b65726265726f737b9b5b2b93132b935c9bdcdad95c9899c4cae4dee6d6cae4"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t out[32];
		k5msg_nfold((const uint8_t *)v[i].in, strlen(v[i].in), out, v[i].bits / 8);
		check_hex(out, v[i].bits / 8, v[i].out, v[i].in);
	}
}

/* RFC 8009 appendix A: the keys derived for usage 2. */
static void kdf_vectors(void)
{
	static const struct {
		unsigned enctype;
		const char *base, *kc, *ke, *ki;
	} v[] = {
	    {19, "3705d96080c17728a0e800eab6e0d23c", "b31a018a48f54776f403e9a396325dc3",
	     "9b197dd1e8c5609d6e67c3e37c62c72e", "9fda0e56ab2d85e1569a688696c26a6c"},
	    {20, "6d404d37faf79f9df0d33568d320669800eb4836472ea8a026d16b7182460c52",
	     "ef5718be86cc84963d8bbb5031e9f5c4ba41f28faf69e73d",
	     "56ab22bee63d82d7bc5227f6773f8ea7a5eb1c825160c38312980c442e5c7e49",
	     "69b16514e3cd8e56b82010d5c73012b622c4d00ffc23ed1f"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t base[32], out[32];
		size_t bl = unhex(v[i].base, base), ol;
		CHECK_EQ(k5msg_derive(v[i].enctype, base, bl, 2, 0x99, out, &ol), 0);
		check_hex(out, ol, v[i].kc, "Kc");
		CHECK_EQ(k5msg_derive(v[i].enctype, base, bl, 2, 0xAA, out, &ol), 0);
		check_hex(out, ol, v[i].ke, "Ke");
		CHECK_EQ(k5msg_derive(v[i].enctype, base, bl, 2, 0x55, out, &ol), 0);
		check_hex(out, ol, v[i].ki, "Ki");
	}
	uint8_t k[16] = {0}, out[32];
	size_t ol;
	CHECK(k5msg_derive(23, k, 16, 2, 0x99, out, &ol) < 0); /* RC4: not ours */
	CHECK(k5msg_derive(18, k, 16, 2, 0x99, out, &ol) < 0); /* wrong key length */
}

/* ------------------------------------------------- a pair of contexts */

/* What one side of a context does; MIT's or ours. */
struct side {
	struct k5msg *k;   /* ours (NULL: MIT's, through g) */
	gss_ctx_id_t g;
};

static const size_t lens[] = {0,  1,  2,   15,	16,   17,   31,	  32,	 33,	  47,
			      48, 63, 100, 255, 4095, 4096, 4097, 65537, 1u << 20};

static uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);
	CHECK(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed + (i >> 8));
	return p;
}

/* A MIC of data by s, in up to three iovecs. */
static uint8_t *mic(struct side *s, const uint8_t *data, size_t n, size_t *tl)
{
	if (s->k) {
		size_t len;
		CHECK(!GSS_ERROR(k5msg_mic_len(s->k, &len)));
		uint8_t *tok = malloc(len);
		size_t a = n / 3, b = n / 2;
		struct iovec iov[3] = {{(void *)data, a},
				       {(void *)(data + a), b - a},
				       {(void *)(data + b), n - b}};
		CHECK(tok && k5msg_get_mic(s->k, iov, 3, tok, len) == GSS_S_COMPLETE);
		*tl = len;
		return tok;
	}
	gss_buffer_desc in = {n, (void *)data}, out;
	CHECK(!GSS_ERROR(gss_get_mic(&min_, s->g, GSS_C_QOP_DEFAULT, &in, &out)));
	uint8_t *tok = malloc(out.length);
	memcpy(tok, out.value, out.length);
	*tl = out.length;
	gss_release_buffer(&min_, &out);
	return tok;
}

static OM_uint32 verify(struct side *s, const uint8_t *data, size_t n, const uint8_t *tok,
			size_t tl)
{
	if (s->k) {
		size_t a = n > 7 ? 7 : n;
		struct iovec iov[2] = {{(void *)data, a}, {(void *)(data + a), n - a}};
		return k5msg_verify_mic(s->k, iov, 2, tok, tl);
	}
	gss_buffer_desc in = {n, (void *)data}, t = {tl, (void *)tok};
	return gss_verify_mic(&min_, s->g, &in, &t, NULL);
}

/* A sealed token of data by s. */
static uint8_t *wrap(struct side *s, const uint8_t *data, size_t n, size_t *tl)
{
	if (s->k) {
		size_t head, tail;
		CHECK(k5msg_wrap_len(s->k, n, &head, &tail) == GSS_S_COMPLETE);
		uint8_t *tok = malloc(head + n + tail);
		CHECK(tok);
		memcpy(tok + head, data, n);
		CHECK(k5msg_wrap(s->k, tok, tok + head, n, tok + head + n) == GSS_S_COMPLETE);
		*tl = head + n + tail;
		/* sealed: the data is not there in clear */
		if (n >= 16)
			CHECK(memcmp(tok + head, data, n));
		return tok;
	}
	gss_buffer_desc in = {n, (void *)data}, out;
	int conf = 0;
	CHECK(!GSS_ERROR(gss_wrap(&min_, s->g, 1, GSS_C_QOP_DEFAULT, &in, &conf, &out)) && conf);
	uint8_t *tok = malloc(out.length);
	memcpy(tok, out.value, out.length);
	*tl = out.length;
	gss_release_buffer(&min_, &out);
	return tok;
}

/* Unseal (in place for ours); 0 and the data matching want, else the status. */
static OM_uint32 unwrap(struct side *s, uint8_t *tok, size_t tl, const uint8_t *want, size_t n)
{
	if (s->k) {
		uint8_t *d;
		size_t dl;
		OM_uint32 maj = k5msg_unwrap(s->k, tok, tl, &d, &dl);
		if (maj == GSS_S_COMPLETE) {
			CHECK(d >= tok && d + dl <= tok + tl);
			CHECK_EQ(dl, n);
			CHECK(!n || !memcmp(d, want, n));
		}
		return maj;
	}
	gss_buffer_desc in = {tl, tok}, out;
	int conf = 0;
	OM_uint32 maj = gss_unwrap(&min_, s->g, &in, &out, &conf, NULL);
	if (!GSS_ERROR(maj)) {
		CHECK(conf);
		CHECK_EQ(out.length, n);
		CHECK(!n || !memcmp(out.value, want, n));
		gss_release_buffer(&min_, &out);
	}
	return maj;
}

/* Rotate a wrap token's body right by r and say so in RRC (§4.2.5). */
static void rotate(uint8_t *tok, size_t tl, size_t r)
{
	size_t bl = tl - 16;
	uint8_t *body = tok + 16, *tmp = malloc(bl);
	CHECK(tmp);
	r %= bl;
	CHECK(r <= 0xffff); /* RRC is 16 bits */
	memcpy(tmp, body + bl - r, r);
	memcpy(tmp + r, body, bl - r);
	memcpy(body, tmp, bl);
	free(tmp);
	tok[6] = (uint8_t)(r >> 8);
	tok[7] = (uint8_t)r;
}

/* from sends to to: MICs and sealed tokens of every length, and the
 * changed ones refused (when to is ours: MIT's own checks are MIT's). */
static void exchange(struct side *from, struct side *to, bool hostile)
{
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		size_t n = lens[li], tl;
		uint8_t *data = pattern(n, (unsigned)li);
		uint8_t *t = mic(from, data, n, &tl);
		CHECK_EQ(verify(to, data, n, t, tl), GSS_S_COMPLETE);
		if (hostile) {
			if (n) {
				data[n / 2] ^= 1;
				CHECK_EQ(verify(to, data, n, t, tl), GSS_S_BAD_SIG);
				data[n / 2] ^= 1;
			}
			t[tl - 1] ^= 0x80;
			CHECK_EQ(verify(to, data, n, t, tl), GSS_S_BAD_SIG);
			t[tl - 1] ^= 0x80;
			t[9] ^= 1; /* the sequence number is under the checksum */
			CHECK_EQ(verify(to, data, n, t, tl), GSS_S_BAD_SIG);
			t[9] ^= 1;
			t[4] = 0; /* filler */
			CHECK(GSS_ERROR(verify(to, data, n, t, tl)));
			t[4] = 0xff;
			CHECK(GSS_ERROR(verify(to, data, n, t, tl - 1)));
			CHECK(GSS_ERROR(verify(to, data, n, t, 3)));
			/* reflected: the sender's own token back to it */
			if (from->k)
				CHECK_EQ(verify(from, data, n, t, tl), GSS_S_DEFECTIVE_TOKEN);
			CHECK_EQ(verify(to, data, n, t, tl), GSS_S_COMPLETE);
		}
		free(t);

		t = wrap(from, data, n, &tl);
		uint8_t *keep = malloc(tl);
		memcpy(keep, t, tl);
		CHECK_EQ(unwrap(to, t, tl, data, n), GSS_S_COMPLETE);
		if (hostile) {
			size_t spots[] = {16, 16 + 15, 32 + n / 2, tl - 13, tl - 1, 2};
			for (size_t k = 0; k < sizeof(spots) / sizeof(spots[0]); k++) {
				memcpy(t, keep, tl);
				t[spots[k]] ^= 0x40;
				CHECK(GSS_ERROR(unwrap(to, t, tl, data, n)));
			}
			/* the outer EC disagrees with the sealed copy */
			memcpy(t, keep, tl);
			t[5] = 1;
			CHECK(GSS_ERROR(unwrap(to, t, tl, data, n)));
			memcpy(t, keep, tl);
			CHECK(GSS_ERROR(unwrap(to, t, tl - 1, data, n)));
			CHECK(GSS_ERROR(unwrap(to, t, 40, data, n)));
			CHECK(GSS_ERROR(unwrap(to, t, 16, data, n)));
			CHECK(GSS_ERROR(unwrap(to, t, 5, data, n)));
			if (from->k) {
				memcpy(t, keep, tl);
				CHECK_EQ(unwrap(from, t, tl, data, n), GSS_S_DEFECTIVE_TOKEN);
			}
			/* rotated by the sender: still the same token */
			size_t rots[] = {1, 5, 28, tl / 2 > 65535 ? 65535 : tl / 2, 60000};
			for (size_t k = 0; k < sizeof(rots) / sizeof(rots[0]); k++) {
				memcpy(t, keep, tl);
				rotate(t, tl, rots[k]);
				CHECK_EQ(unwrap(to, t, tl, data, n), GSS_S_COMPLETE);
			}
		}
		free(keep);
		free(t);
		free(data);
	}
}

static void known_keys(void)
{
	static const unsigned enctypes[] = {17, 18, 19, 20};
	for (size_t e = 0; e < 4; e++) {
		size_t kl = enctypes[e] == 17 || enctypes[e] == 19 ? 16 : 32;
		uint8_t key[32], sub[32], other[32];
		for (size_t i = 0; i < 32; i++) {
			key[i] = (uint8_t)(i * 7 + e);
			sub[i] = (uint8_t)(i * 13 + 1 + e);
			other[i] = (uint8_t)(i * 5 + 3);
		}
		for (int asub = 0; asub < 2; asub++) {
			struct side ini = {k5msg_from_keys(enctypes[e], true, key, kl,
							   asub ? sub : NULL, kl, 1000),
					   GSS_C_NO_CONTEXT};
			struct side acc = {k5msg_from_keys(enctypes[e], false, key, kl,
							   asub ? sub : NULL, kl, 5),
					   GSS_C_NO_CONTEXT};
			CHECK(ini.k && acc.k && k5msg_fast(ini.k));
			CHECK(strstr(k5msg_enctype(ini.k), "aes"));
			exchange(&ini, &acc, true);
			exchange(&acc, &ini, true);
			/* another key: nothing verifies */
			struct side bad = {k5msg_from_keys(enctypes[e], false, other, kl,
							   asub ? other : NULL, kl, 5),
					   GSS_C_NO_CONTEXT};
			CHECK(bad.k);
			size_t tl;
			uint8_t d[100];
			memset(d, 7, sizeof(d));
			uint8_t *t = mic(&ini, d, sizeof(d), &tl);
			CHECK_EQ(verify(&bad, d, sizeof(d), t, tl), GSS_S_BAD_SIG);
			free(t);
			t = wrap(&ini, d, sizeof(d), &tl);
			CHECK(GSS_ERROR(unwrap(&bad, t, tl, d, sizeof(d))));
			free(t);
			/* a token claiming an acceptor subkey the context lacks */
			if (!asub) {
				t = mic(&ini, d, sizeof(d), &tl);
				t[2] |= 0x04;
				CHECK_EQ(verify(&acc, d, sizeof(d), t, tl), GSS_S_DEFECTIVE_TOKEN);
				free(t);
			}
			k5msg_free(bad.k);
			k5msg_free(ini.k);
			k5msg_free(acc.k);
		}
	}
	uint8_t key[16] = {0};
	CHECK(!k5msg_from_keys(23, true, key, 16, NULL, 0, 0)); /* RC4 */
	CHECK(!k5msg_from_keys(18, true, key, 16, NULL, 0, 0)); /* short key */
}

/* ----------------------------------------------------- against MIT */

static gss_cred_id_t cred(gss_cred_usage_t use, const char *who)
{
	gss_name_t name = GSS_C_NO_NAME;
	if (who) {
		gss_buffer_desc b = {strlen(who), (void *)who};
		CHECK(!GSS_ERROR(gss_import_name(&min_, &b, GSS_KRB5_NT_PRINCIPAL_NAME, &name)));
	}
	gss_cred_id_t c;
	OM_uint32 maj = gss_acquire_cred(&min_, name, GSS_C_INDEFINITE, GSS_C_NO_OID_SET, use, &c,
					 NULL, NULL);
	if (GSS_ERROR(maj)) {
		fprintf(stderr, "gss_acquire_cred(%s): major %#x minor %u\n", who ? who : "acceptor",
			maj, min_);
		exit(1);
	}
	if (name != GSS_C_NO_NAME)
		gss_release_name(&min_, &name);
	return c;
}

static void interop(void)
{
	static const struct {
		int32_t enctype;
		const char *name;
	} e[] = {{18, "aes256-cts-hmac-sha1-96"},
		 {17, "aes128-cts-hmac-sha1-96"},
		 {19, "aes128-cts-hmac-sha256-128"},
		 {20, "aes256-cts-hmac-sha384-192"}};
	gss_cred_id_t acred = cred(GSS_C_ACCEPT, NULL);
	gss_buffer_desc sn = {strlen("nfs@k5msg"), "nfs@k5msg"};
	gss_name_t target;
	CHECK(!GSS_ERROR(gss_import_name(&min_, &sn, GSS_C_NT_HOSTBASED_SERVICE, &target)));
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		gss_cred_id_t icred = cred(GSS_C_INITIATE, "k5msg");
		krb5_enctype want = e[i].enctype;
		CHECK(!GSS_ERROR(gss_krb5_set_allowable_enctypes(&min_, icred, 1, &want)));
		gss_ctx_id_t ictx = GSS_C_NO_CONTEXT, actx = GSS_C_NO_CONTEXT;
		gss_buffer_desc in = GSS_C_EMPTY_BUFFER, out = GSS_C_EMPTY_BUFFER, back = in;
		OM_uint32 maj;
		for (;;) {
			maj = gss_init_sec_context(&min_, icred, &ictx, target, (gss_OID)gss_mech_krb5,
						   GSS_C_MUTUAL_FLAG, 0, GSS_C_NO_CHANNEL_BINDINGS,
						   &back, NULL, &out, NULL, NULL);
			gss_release_buffer(&min_, &back);
			if (GSS_ERROR(maj))
				fprintf(stderr, "%s: gss_init_sec_context: major %#x minor %u\n",
					e[i].name, maj, min_);
			CHECK(!GSS_ERROR(maj));
			if (!out.length)
				break;
			in = out;
			maj = gss_accept_sec_context(&min_, &actx, acred, &in,
						     GSS_C_NO_CHANNEL_BINDINGS, NULL, NULL, &back,
						     NULL, NULL, NULL);
			gss_release_buffer(&min_, &out);
			CHECK(!GSS_ERROR(maj));
			if (maj == GSS_S_COMPLETE && !back.length)
				break;
		}
		/* ours and MIT's on each side, on the same context */
		struct side mi = {NULL, GSS_C_NO_CONTEXT}, ma = mi;
		struct side oi = {k5msg_new(&ictx), GSS_C_NO_CONTEXT};
		struct side oa = {k5msg_new(&actx), GSS_C_NO_CONTEXT};
		CHECK(oi.k && oa.k && ictx != GSS_C_NO_CONTEXT && actx != GSS_C_NO_CONTEXT);
		mi.g = ictx;
		ma.g = actx;
		fprintf(stderr, "k5msg: %s: initiator %s, acceptor %s\n", e[i].name,
			k5msg_enctype(oi.k), k5msg_enctype(oa.k));
		CHECK(k5msg_fast(oi.k) && k5msg_fast(oa.k));
		CHECK(!strcmp(k5msg_enctype(oi.k), e[i].name));
		CHECK(!strcmp(k5msg_enctype(oa.k), e[i].name));
		exchange(&oi, &ma, false); /* ours to MIT */
		exchange(&mi, &oa, true);  /* MIT to ours */
		exchange(&oa, &mi, false);
		exchange(&ma, &oi, true);
		exchange(&oi, &oa, true); /* ours both ends */
		/* MIT's token without confidentiality: not what krb5p takes */
		gss_buffer_desc pl = {5, "hello"}, w;
		int conf = 1;
		CHECK(!GSS_ERROR(gss_wrap(&min_, ictx, 0, GSS_C_QOP_DEFAULT, &pl, &conf, &w)));
		CHECK(!conf);
		uint8_t *d;
		size_t dl;
		CHECK_EQ(k5msg_unwrap(oa.k, w.value, w.length, &d, &dl), GSS_S_BAD_QOP);
		gss_release_buffer(&min_, &w);
		k5msg_free(oi.k);
		k5msg_free(oa.k);
		gss_delete_sec_context(&min_, &ictx, GSS_C_NO_BUFFER);
		gss_delete_sec_context(&min_, &actx, GSS_C_NO_BUFFER);
		gss_release_cred(&min_, &icred);
	}
	gss_release_name(&min_, &target);
	gss_release_cred(&min_, &acred);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--interop")) {
		interop();
		printf("k5msg: tokens agree with MIT's for 4 enctypes, both directions\n");
		return 0;
	}
	nfold_vectors();
	kdf_vectors();
	known_keys();
	printf("k5msg: known answers and known-key exchanges pass\n");
	return 0;
}
