/* SPDX-License-Identifier: MIT */
/*
 * The one hash table (nfsd/htab.h): exact lookups of integer keys through
 * nfsd_mix64, entries that share a hash found one after another, deletion
 * from the middle of a chain, and growth that keeps every entry.
 */
#include "config.h"

#include <stdint.h>

#include "nfsd/bytes.h"
#include "nfsd/htab.h"
#include "tests/check.h"

struct ent {
	struct htab_node h;
	uint64_t key;
	int tag;
};

#define N 5000

static struct ent e[N], twins[3];

static struct ent *find(const struct htab *t, uint64_t key)
{
	return (struct ent *)htab_find(t, nfsd_mix64(key));
}

int main(void)
{
	struct htab t;
	CHECK_EQ(htab_init(&t, 4), 0);
	CHECK(!find(&t, 1));
	for (int i = 0; i < N; i++) {
		e[i].key = (uint64_t)i * 7919;
		htab_add(&t, &e[i].h, nfsd_mix64(e[i].key));
	}
	CHECK_EQ(t.n, N);
	CHECK(t.mask + 1 >= N / 2); /* grown from 4 buckets */
	for (int i = 0; i < N; i++)
		CHECK(find(&t, e[i].key) == &e[i]);
	CHECK(!find(&t, 3)); /* not a multiple of 7919 */

	/* three entries with one hash (a name hash that collides): all found */
	for (int i = 0; i < 3; i++) {
		twins[i].tag = i + 1;
		htab_add(&t, &twins[i].h, 42);
	}
	int seen = 0;
	for (struct htab_node *n = htab_find(&t, 42); n; n = htab_next(n, 42))
		seen |= 1 << ((struct ent *)n)->tag;
	CHECK_EQ(seen, 0xe);
	htab_del(&t, &twins[1].h); /* the middle one */
	seen = 0;
	for (struct htab_node *n = htab_find(&t, 42); n; n = htab_next(n, 42))
		seen |= 1 << ((struct ent *)n)->tag;
	CHECK_EQ(seen, 0xa);

	/* every other entry removed: the rest still found, the removed not */
	for (int i = 0; i < N; i += 2)
		htab_del(&t, &e[i].h);
	for (int i = 0; i < N; i++)
		CHECK(find(&t, e[i].key) == (i % 2 ? &e[i] : NULL));
	CHECK_EQ(t.n, N / 2 + 2);

	/* a walk over the buckets sees each remaining entry once */
	size_t walked = 0;
	for (size_t b = 0; b <= t.mask; b++)
		for (struct htab_node *n = t.b[b]; n; n = n->next)
			walked++;
	CHECK_EQ(walked, t.n);
	htab_release(&t);
	return 0;
}
