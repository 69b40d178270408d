/* SPDX-License-Identifier: MIT */
/*
 * Keyed hashes and the cluster key.
 *
 * SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012) is a pseudorandom function of a 128-bit key, designed as a MAC for
 * short messages.  Braid uses its 64-bit form to hash directory entry names
 * (mds/store.c) and its 128-bit form as the MAC of data-server file handles
 * (ctl/fh.c) and of control-protocol calls (nfsd/auth_braid.c).
 *
 * The cluster key is a 256-bit secret that braid-mds and every braid-ds
 * share, kept in a file of 64 hex digits (whitespace and '#' comment lines
 * around them are allowed).  Its two halves are independent SipHash keys:
 * one signs file handles, the other signs control calls, so knowing one
 * use's tags tells nothing about the other's.  A third key, for the
 * synthetic owners of file objects (layout/fence.h), is derived from the
 * second as its SipHash-128 of a fixed label, and so is a fourth, for the
 * stateids of tightly coupled layouts (ctl/cap.h).  The file must not be
 * readable by anyone but the daemons (mode 0600 or 0400): braid_key_load
 * refuses a file that group or others may read.
 */
#ifndef BRAID_NFSD_MAC_H
#define BRAID_NFSD_MAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct siphash_key {
	uint64_t k[2];
};

uint64_t siphash24(const struct siphash_key *key, const void *data, size_t len);
/* SipHash-2-4 with 128-bit output, written as 16 little-endian bytes. */
void siphash24_128(const struct siphash_key *key, const void *data, size_t len, uint8_t out[16]);
/* The key from 16 bytes, little-endian words as the reference code. */
void siphash_key_from_bytes(struct siphash_key *key, const uint8_t b[16]);

/* Compare n bytes in time independent of where they differ. */
bool mac_equal(const void *a, const void *b, size_t n);

#define BRAID_KEY_BYTES 32

struct braid_key {
	struct siphash_key fh;    /* data-server file handles */
	struct siphash_key ctl;   /* control protocol calls */
	struct siphash_key fence; /* fencing credentials (layout/fence.h): derived */
	struct siphash_key cap;   /* tightly coupled layouts' stateids (ctl/cap.h): derived */
	uint32_t id;              /* names the key in handles and calls (not secret) */
};

/*
 * Load the key file.  0, or -ENOENT, -EACCES, -EPERM (group or others may
 * read it), -EINVAL (not 64 hex digits), with a reason in msg.
 */
int braid_key_load(const char *path, struct braid_key *key, char *msg, size_t msglen);
/* The key from its 32 raw bytes (tests, and braid_key_load). */
void braid_key_from_bytes(struct braid_key *key, const uint8_t raw[BRAID_KEY_BYTES]);
/*
 * Make a new key file with random bytes (O_EXCL, mode 0600).  -EEXIST if it
 * is there already.
 */
int braid_key_create(const char *path);

#endif
