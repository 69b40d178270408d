/* SPDX-License-Identifier: MIT */
/*
 * Range locks of the braid-ds object store: a region's blocks and CRC
 * entries, hashed by (object, region) into st->rlocks.
 */
#include "config.h"

#include <pthread.h>
#include <string.h>

#include "dataserver/store_impl.h"

/* Lock the regions of o that [a, z) touches, in index order (no deadlock). */
void st_rl_lock(struct ds_store *st, const struct ds_obj *o, uint64_t a, uint64_t z, bool excl,
		struct rl_held *h)
{
	h->n = 0;
	for (uint64_t g = a >> st->region_shift; g <= (z - 1) >> st->region_shift; g++) {
		uint16_t x = (uint16_t)(nfsd_mix64(o->h + g) % NRLOCKS);
		unsigned i = h->n;
		while (i > 0 && h->idx[i - 1] > x)
			i--;
		if (i > 0 && h->idx[i - 1] == x)
			continue;
		memmove(&h->idx[i + 1], &h->idx[i], (h->n - i) * sizeof(h->idx[0]));
		h->idx[i] = x;
		h->n++;
	}
	for (unsigned i = 0; i < h->n; i++) {
		if (excl)
			pthread_rwlock_wrlock(&st->rlocks[h->idx[i]]);
		else
			pthread_rwlock_rdlock(&st->rlocks[h->idx[i]]);
	}
}

void st_rl_unlock(struct ds_store *st, struct rl_held *h)
{
	for (unsigned i = h->n; i-- > 0;)
		pthread_rwlock_unlock(&st->rlocks[h->idx[i]]);
}
