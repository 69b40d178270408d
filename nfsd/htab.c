/* SPDX-License-Identifier: MIT */
#include "nfsd/htab.h"

#include <errno.h>
#include <stdlib.h>

int htab_init(struct htab *t, size_t nbuckets)
{
	t->b = calloc(nbuckets, sizeof(*t->b));
	t->mask = nbuckets - 1;
	t->n = 0;
	return t->b ? 0 : -ENOMEM;
}

void htab_release(struct htab *t)
{
	free(t->b);
	t->b = NULL;
	t->mask = t->n = 0;
}

static void htab_grow(struct htab *t)
{
	size_t nb = (t->mask + 1) * 2;
	struct htab_node **b = calloc(nb, sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i <= t->mask; i++)
		while (t->b[i]) {
			struct htab_node *e = t->b[i];
			t->b[i] = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	free(t->b);
	t->b = b;
	t->mask = nb - 1;
}

void htab_add(struct htab *t, struct htab_node *e, uint64_t hash)
{
	if (t->n >= 2 * (t->mask + 1))
		htab_grow(t);
	e->hash = hash;
	e->next = t->b[hash & t->mask];
	t->b[hash & t->mask] = e;
	t->n++;
}

void htab_del(struct htab *t, struct htab_node *e)
{
	struct htab_node **pp = &t->b[e->hash & t->mask];
	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	t->n--;
}

struct htab_node *htab_next(const struct htab_node *e, uint64_t hash)
{
	for (e = e->next; e; e = e->next)
		if (e->hash == hash)
			return (struct htab_node *)e;
	return NULL;
}

struct htab_node *htab_find(const struct htab *t, uint64_t hash)
{
	struct htab_node *e = t->b[hash & t->mask];
	return e && e->hash == hash ? e : e ? htab_next(e, hash) : NULL;
}
