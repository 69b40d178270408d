/* SPDX-License-Identifier: MIT */
/*
 * The one hash table: intrusive and chained, keyed by a 64-bit hash the
 * caller computes and the node keeps.  Entries embed struct htab_node (the
 * caller names where) and are the caller's memory; the table only links
 * them.  It doubles its buckets at two entries per bucket (a failed grow
 * keeps longer chains, still correct).  No lock of its own: the lock that
 * guards the entries guards the table.
 *
 * For integer keys use nfsd_mix64(key) (nfsd/bytes.h) as the hash: it is a
 * bijection, so equal hashes mean equal keys and htab_find() is an exact
 * lookup.  Other hashes (a keyed hash of a name) may collide: walk the
 * matches with htab_next() and compare the key.
 */
#ifndef BRAID_NFSD_HTAB_H
#define BRAID_NFSD_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab_node {
	struct htab_node *next;
	uint64_t hash;
};

/* Walking every entry: the chains t->b[0..t->mask], each ending in NULL. */
struct htab {
	struct htab_node **b; /* malloc'd; a power-of-two count */
	size_t mask, n;
};

/* nbuckets: a power of two.  0 or -ENOMEM. */
int htab_init(struct htab *t, size_t nbuckets);
/* Frees the buckets; the entries are the caller's to free first. */
void htab_release(struct htab *t);
void htab_add(struct htab *t, struct htab_node *e, uint64_t hash);
/* e must be in t. */
void htab_del(struct htab *t, struct htab_node *e);
/* The first entry added with hash, or NULL; htab_next: the one after e. */
struct htab_node *htab_find(const struct htab *t, uint64_t hash);
struct htab_node *htab_next(const struct htab_node *e, uint64_t hash);

#endif
