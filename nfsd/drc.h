/* SPDX-License-Identifier: MIT */
/*
 * A duplicate request cache for programs without sessions (NFSv3): the
 * results of non-idempotent procedures (NFSD_PROC_DRC), kept so that a
 * retransmission (same client address, xid, program, version, procedure
 * and arguments) gets the first reply instead of running again: a
 * retransmitted REMOVE answers OK, not NOENT.
 *
 * The engine uses it by itself once a version names one
 * (nfsd_version.drc): before a DRC procedure runs it looks the call up;
 *   - a call still running is dropped (the client retransmits again later),
 *   - a call answered is answered with the cached results, re-wrapped by
 *     the flavor (an RPCSEC_GSS retransmission has a new sequence number,
 *     so only the results are kept, never the verifier),
 *   - else the call runs and its encoded results are kept.
 * The key holds the client's address without its port (a TCP reconnect
 * may change it) and a checksum of the first NFSD_DRC_CSUM_LEN bytes of
 * the arguments with their length, as knfsd's cache does.
 *
 * Memory: at most max_entries entries and max_bytes of results; the least
 * recently answered entry goes first.  Results larger than NFSD_DRC_RES_MAX
 * are not kept (the call is forgotten, as if never seen).  Calls running
 * are never evicted.  One mutex guards everything; any thread.
 */
#ifndef BRAID_NFSD_DRC_H
#define BRAID_NFSD_DRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NFSD_DRC_CSUM_LEN 256
#define NFSD_DRC_RES_MAX  4096

struct nfsd_drc;
struct nfsd_req;

/* The identity of a call (engine-filled). */
struct nfsd_drc_key {
	uint8_t addr[16]; /* IPv4 mapped into IPv6 */
	uint32_t xid, prog, vers, proc;
	uint32_t args_len;
	uint64_t csum;
};

struct nfsd_drc *nfsd_drc_new(size_t max_entries, size_t max_bytes);
void nfsd_drc_free(struct nfsd_drc *d);

enum nfsd_drc_found {
	NFSD_DRC_NEW = 0, /* not seen: now recorded as running */
	NFSD_DRC_RUNNING, /* a retransmission of a call still running: drop it */
	NFSD_DRC_REPLIED, /* answered: *res (malloc'd copy) and *len hold the results */
	NFSD_DRC_NOMEM,	  /* could not record it: run it uncached */
};
/* Look key up, recording it as running when new. */
enum nfsd_drc_found nfsd_drc_begin(struct nfsd_drc *d, const struct nfsd_drc_key *key,
				   uint8_t **res, size_t *len);
/* The call of key got these encoded results (NULL: no reply, or one not to
 * keep: the call is forgotten). */
void nfsd_drc_end(struct nfsd_drc *d, const struct nfsd_drc_key *key, const void *res, size_t len);

struct nfsd_drc_stats {
	uint64_t hits, in_progress, misses, evicted;
	size_t entries, bytes;
};
void nfsd_drc_stats(struct nfsd_drc *d, struct nfsd_drc_stats *st);

/* Engine side (nfsd/svc.c): the key of r, whose arguments are args (n bytes). */
void nfsd_drc_key_of(const struct nfsd_req *r, const uint8_t *args, size_t n,
		     struct nfsd_drc_key *key);

#endif
