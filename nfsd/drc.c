/* SPDX-License-Identifier: MIT */
/* The duplicate request cache (nfsd/drc.h). */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/drc.h"
#include "nfsd/htab.h"
#include "nfsd/mac.h"
#include "nfsd/rpc.h"

/* One call.  Owned by the cache; lru links only answered entries. */
struct drc_ent {
	struct htab_node node;
	struct drc_ent *prev, *next; /* LRU, most recent at head; NULL while running */
	struct nfsd_drc_key key;
	bool running;
	size_t len;
	uint8_t *res; /* malloc'd, len bytes */
};

struct nfsd_drc {
	pthread_mutex_t mu; /* guards everything below */
	struct htab tab;
	struct drc_ent *head, *tail;
	size_t max_entries, max_bytes, entries, bytes;
	struct nfsd_drc_stats st;
};

static const struct siphash_key drc_hash_key = {{0x6272616964647263ULL, 0x2d6b65792d763031ULL}};

static uint64_t key_hash(const struct nfsd_drc_key *k)
{
	return siphash24(&drc_hash_key, k, sizeof(*k));
}

struct nfsd_drc *nfsd_drc_new(size_t max_entries, size_t max_bytes)
{
	struct nfsd_drc *d = calloc(1, sizeof(*d));
	if (!d || htab_init(&d->tab, 256)) {
		free(d);
		return NULL;
	}
	pthread_mutex_init(&d->mu, NULL);
	d->max_entries = max_entries ? max_entries : 1;
	d->max_bytes = max_bytes;
	return d;
}

static void lru_unlink(struct nfsd_drc *d, struct drc_ent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else if (d->head == e)
		d->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else if (d->tail == e)
		d->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct nfsd_drc *d, struct drc_ent *e)
{
	e->prev = NULL;
	e->next = d->head;
	if (d->head)
		d->head->prev = e;
	d->head = e;
	if (!d->tail)
		d->tail = e;
}

static void ent_free(struct nfsd_drc *d, struct drc_ent *e)
{
	htab_del(&d->tab, &e->node);
	if (!e->running)
		lru_unlink(d, e);
	d->entries--;
	d->bytes -= e->len;
	free(e->res);
	free(e);
}

void nfsd_drc_free(struct nfsd_drc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i <= d->tab.mask; i++)
		while (d->tab.b[i])
			ent_free(d, (struct drc_ent *)d->tab.b[i]);
	htab_release(&d->tab);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static struct drc_ent *find(struct nfsd_drc *d, const struct nfsd_drc_key *k, uint64_t h)
{
	for (struct htab_node *n = htab_find(&d->tab, h); n; n = htab_next(n, h)) {
		struct drc_ent *e = (struct drc_ent *)n;
		if (!memcmp(&e->key, k, sizeof(*k)))
			return e;
	}
	return NULL;
}

/* Evict answered entries, oldest first, until there is room. */
static void make_room(struct nfsd_drc *d, size_t more)
{
	while (d->tail && (d->entries >= d->max_entries || d->bytes + more > d->max_bytes)) {
		ent_free(d, d->tail);
		d->st.evicted++;
	}
}

enum nfsd_drc_found nfsd_drc_begin(struct nfsd_drc *d, const struct nfsd_drc_key *key,
				   uint8_t **res, size_t *len)
{
	uint64_t h = key_hash(key);
	pthread_mutex_lock(&d->mu);
	struct drc_ent *e = find(d, key, h);
	enum nfsd_drc_found r;
	if (e && e->running) {
		d->st.in_progress++;
		r = NFSD_DRC_RUNNING;
	} else if (e) {
		*res = malloc(e->len ? e->len : 1);
		if (*res) {
			memcpy(*res, e->res, e->len);
			*len = e->len;
			lru_unlink(d, e);
			lru_push(d, e);
			d->st.hits++;
			r = NFSD_DRC_REPLIED;
		} else {
			r = NFSD_DRC_RUNNING; /* no memory to answer: the client retries */
		}
	} else {
		make_room(d, 0);
		e = calloc(1, sizeof(*e));
		if (e) {
			e->key = *key;
			e->running = true;
			htab_add(&d->tab, &e->node, h);
			d->entries++;
			d->st.misses++;
			r = NFSD_DRC_NEW;
		} else {
			r = NFSD_DRC_NOMEM;
		}
	}
	pthread_mutex_unlock(&d->mu);
	return r;
}

void nfsd_drc_end(struct nfsd_drc *d, const struct nfsd_drc_key *key, const void *res, size_t len)
{
	uint64_t h = key_hash(key);
	uint8_t *copy = NULL;
	if (res && len <= NFSD_DRC_RES_MAX && len <= d->max_bytes && (copy = malloc(len ? len : 1)))
		memcpy(copy, res, len);
	pthread_mutex_lock(&d->mu);
	struct drc_ent *e = find(d, key, h);
	if (e && e->running) {
		if (!copy) {
			ent_free(d, e);
		} else {
			e->running = false;
			make_room(d, len);
			e->res = copy;
			e->len = len;
			d->bytes += len;
			lru_push(d, e);
			copy = NULL;
		}
	}
	pthread_mutex_unlock(&d->mu);
	free(copy);
}

void nfsd_drc_stats(struct nfsd_drc *d, struct nfsd_drc_stats *st)
{
	pthread_mutex_lock(&d->mu);
	*st = d->st;
	st->entries = d->entries;
	st->bytes = d->bytes;
	pthread_mutex_unlock(&d->mu);
}

void nfsd_drc_key_of(const struct nfsd_req *r, const uint8_t *args, size_t n,
		     struct nfsd_drc_key *key)
{
	memset(key, 0, sizeof(*key));
	const struct sockaddr_storage *ss = r->conn ? nfsd_req_peer(r) : NULL;
	if (ss && ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		key->addr[10] = key->addr[11] = 0xff;
		memcpy(key->addr + 12, &in->sin_addr, 4);
	} else if (ss && ss->ss_family == AF_INET6) {
		memcpy(key->addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
	key->xid = r->xid;
	key->prog = r->prog;
	key->vers = r->vers;
	key->proc = r->proc;
	key->args_len = (uint32_t)n;
	key->csum = siphash24(&drc_hash_key, args, n < NFSD_DRC_CSUM_LEN ? n : NFSD_DRC_CSUM_LEN);
}
