/* SPDX-License-Identifier: MIT */
/*
 * The per-message tokens of the Kerberos V5 GSS mechanism (RFC 4121:
 * MIC and Wrap tokens) for an established context, computed with
 * OpenSSL's libcrypto instead of MIT's libk5crypto.
 *
 * Why: Debian's MIT krb5 carries its own AES and SHA code, without the
 * CPU's AES and SHA instructions.  On the machines we measured, MIT's
 * gss_get_mic runs at ~0.7 GB/s and gss_wrap at ~0.17 GB/s per core,
 * against ~1.9 GB/s for OpenSSL's HMAC-SHA1 and ~1 GB/s (encrypt) and
 * ~8 GB/s (decrypt) for its AES-CBC: krb5i and krb5p READ and WRITE
 * throughput is the per-message crypto (bench/gss).
 *
 * How: the context's keys come from MIT through the lucid interface
 * (gss_krb5_export_lucid_sec_context), applied to a copy of the context
 * (exported and imported twice, so the caller's context stays usable).
 * The enctypes done here are those of RFC 3962 (aes128-cts-hmac-sha1-96,
 * aes256-cts-hmac-sha1-96) and RFC 8009 (aes128-cts-hmac-sha256-128,
 * aes256-cts-hmac-sha384-192): key derivation (RFC 3961 DK with n-fold,
 * and KDF-HMAC-SHA2), CBC with ciphertext stealing (the last two blocks
 * swapped), the confounder, and the checksum (over the plaintext for
 * RFC 3962, over IV | ciphertext for RFC 8009).  Any other enctype (DES3,
 * RC4, Camellia) or a context that will not export keeps using MIT's
 * calls, through the same functions: callers need not know which.
 *
 * Tokens sent carry the context's own direction flag, the acceptor-subkey
 * flag when there is one, and a sequence number counted on from MIT's;
 * tokens received are checked for the peer's direction, the filler, the
 * token ID, a Wrap token's encrypted copy of its header (EC, RRC, rotation
 * per §4.2.5) and the checksum (CRYPTO_memcmp).  A context's life ends
 * when its ticket does: calls after that answer GSS_S_CONTEXT_EXPIRED as
 * MIT's would.  RPCSEC_GSS numbers its messages itself, so no token
 * sequence is enforced on receipt (contexts are made without
 * GSS_C_REPLAY_FLAG and GSS_C_SEQUENCE_FLAG, as RFC 2203 §5.2.2 says).
 *
 * The calls are safe from any thread at once: the keys are read-only once
 * made and the sequence number is atomic (MIT's calls, where used, are
 * serialised inside).  Status values are GSS major statuses.
 */
#ifndef BRAID_NFSD_K5MSG_H
#define BRAID_NFSD_K5MSG_H

#include <gssapi/gssapi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct k5msg;

/*
 * The per-message calls for *gctx, an established context.  *gctx may be
 * replaced by an equal context (the export and import above); it stays
 * the caller's to delete, after k5msg_free.  NULL: no memory.
 */
struct k5msg *k5msg_new(gss_ctx_id_t *gctx);
void k5msg_free(struct k5msg *k);
/* For tests and fuzzing: a context of known keys (asub NULL: no acceptor
 * subkey), sending from sequence number seq; NULL for an enctype not done
 * here. */
struct k5msg *k5msg_from_keys(unsigned enctype, bool initiator, const uint8_t *ctx_key,
			      size_t klen, const uint8_t *asub, size_t alen, uint64_t seq);

/* Whether the tokens are computed here (else by MIT), and the enctype's
 * name ("aes256-cts-hmac-sha1-96"; "enctype N" for others). */
bool k5msg_fast(const struct k5msg *k);
const char *k5msg_enctype(const struct k5msg *k);

/* A MIC token's length, and the MIC of n iovecs into tok (len bytes). */
OM_uint32 k5msg_mic_len(struct k5msg *k, size_t *len);
OM_uint32 k5msg_get_mic(struct k5msg *k, const struct iovec *iov, int n, uint8_t *tok,
			size_t len);
OM_uint32 k5msg_verify_mic(struct k5msg *k, const struct iovec *iov, int n, const uint8_t *tok,
			   size_t len);

/*
 * Wrap with confidentiality, in place: a token is head | data | tail,
 * laid out contiguously by the caller, head and tail of the lengths
 * k5msg_wrap_len gives for len bytes of data.  The data is sealed where
 * it lies.
 */
OM_uint32 k5msg_wrap_len(struct k5msg *k, size_t len, size_t *head, size_t *tail);
OM_uint32 k5msg_wrap(struct k5msg *k, uint8_t *head, uint8_t *data, size_t len, uint8_t *tail);
/* Unwrap a token in place: *data and *dlen the plaintext, inside tok.  A
 * token without confidentiality is refused (GSS_S_BAD_QOP). */
OM_uint32 k5msg_unwrap(struct k5msg *k, uint8_t *tok, size_t len, uint8_t **data, size_t *dlen);

/* For tests: RFC 3961's n-fold of in (n bytes) into out (m bytes). */
void k5msg_nfold(const uint8_t *in, size_t n, uint8_t *out, size_t m);
/* For tests: the derived key (RFC 3961 DK or RFC 8009 KDF) of enctype for
 * usage and kind (0x99 checksum, 0xAA encryption, 0x55 integrity): 0 and
 * its length in *olen, or -EINVAL for an enctype not done here. */
int k5msg_derive(unsigned enctype, const uint8_t *key, size_t klen, uint32_t usage, uint8_t kind,
		 uint8_t *out, size_t *olen);

#endif
