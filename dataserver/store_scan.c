/* SPDX-License-Identifier: MIT */
/*
 * The braid-ds object store's walks of its object directories: the count
 * of objects at open, LIST (braid_ctl) and scrub.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataserver/store_impl.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool key_parse(const char *s, uint8_t key[DS_KEY_SIZE])
{
	for (int i = 0; i < DS_KEY_SIZE; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* ---------------------------------------------------------------- count */

/* The .meta files (the objects: a .meta is an object's commit point) whose
 * names are keys of the directory they are in.  At open, before any other
 * call: nothing creates or removes meanwhile. */
int st_scan_count(struct ds_store *st, uint64_t *n)
{
	uint64_t count = 0;
	for (unsigned sub = 0; sub < NSUB; sub++) {
		int fd = openat(st->subfd[sub], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		DIR *d = fdopendir(fd);
		if (!d) {
			int rc = -errno;
			close(fd);
			return rc;
		}
		struct dirent *de;
		uint8_t key[DS_KEY_SIZE];
		while ((de = readdir(d)))
			if (strlen(de->d_name) == 2 * DS_KEY_SIZE + 5 &&
			    !strcmp(de->d_name + 2 * DS_KEY_SIZE, ".meta") &&
			    key_parse(de->d_name, key) && objhash(key) >> 56 == sub)
				count++;
		closedir(d);
	}
	*n = count;
	return 0;
}

/* ------------------------------------------------------- list and scrub */

enum { SCAN_META = 1, SCAN_DATA = 2, SCAN_TMP = 4 };

struct scan_ent {
	uint64_t h;
	uint8_t key[DS_KEY_SIZE];
	unsigned flags;
};

static int scan_cmp(const void *x, const void *y)
{
	const struct scan_ent *a = x, *b = y;
	if (a->h != b->h)
		return a->h < b->h ? -1 : 1;
	return memcmp(a->key, b->key, DS_KEY_SIZE);
}

/* The keys in one object directory, sorted by (hash, key), one entry per key. */
static int scan_sub(struct ds_store *st, unsigned sub, struct scan_ent **out, size_t *count)
{
	int fd = openat(st->subfd[sub], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	struct scan_ent *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		struct scan_ent e = {0};
		size_t l = strlen(s);
		if (l < 2 * DS_KEY_SIZE || !key_parse(s, e.key))
			continue;
		s += 2 * DS_KEY_SIZE;
		if (!*s)
			e.flags = SCAN_DATA;
		else if (!strcmp(s, ".meta"))
			e.flags = SCAN_META;
		else if (!strcmp(s, ".meta.tmp"))
			e.flags = SCAN_TMP;
		else
			continue;
		e.h = objhash(e.key);
		if (e.h >> 56 != sub)
			continue; /* not ours to judge */
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct scan_ent *nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = e;
	}
	closedir(d);
	if (rc) {
		free(v);
		return rc;
	}
	if (n)
		qsort(v, n, sizeof(*v), scan_cmp);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && !scan_cmp(&v[m - 1], &v[i]))
			v[m - 1].flags |= v[i].flags;
		else
			v[m++] = v[i];
	}
	*out = v;
	*count = m;
	return 0;
}

int ds_store_list(struct ds_store *st, uint64_t cookie, struct ds_list_entry *ents, unsigned max,
		  unsigned *n, uint64_t *next, bool *eof)
{
	if (!max || !ents || !n || !next || !eof)
		return -EINVAL;
	struct ds_ring *r = st_ring_get(st);
	if (!r)
		return -ENOMEM;
	int rc = 0;
	*n = 0;
	*eof = true;
	*next = cookie;
	for (unsigned sub = (unsigned)(cookie >> 56); sub < NSUB && *eof && !rc; sub++) {
		struct scan_ent *v;
		size_t cnt;
		rc = scan_sub(st, sub, &v, &cnt);
		for (size_t i = 0; !rc && i < cnt; i++) {
			if (!(v[i].flags & SCAN_META) || v[i].h < cookie)
				continue;
			if (*n == max) {
				/* cookies are hashes: stable across restarts */
				*next = v[i].h;
				*eof = false;
				break;
			}
			struct ds_obj *o = st_obj_get(st, v[i].key);
			if (!o) {
				rc = -ENOMEM;
				break;
			}
			int lrc = st_obj_lock(st, r, o, false);
			if (!lrc) {
				if (o->state == OBJ_PRESENT) {
					memcpy(ents[*n].id.key, o->key, DS_KEY_SIZE);
					ents[*n].id.gen = o->gen;
					pthread_mutex_lock(&o->mu);
					ents[*n].size = o->size;
					pthread_mutex_unlock(&o->mu);
					(*n)++;
				}
				pthread_rwlock_unlock(&o->lock);
			}
			st_obj_put(st, r, o);
		}
		free(v);
	}
	st_ring_put(st, r);
	return rc;
}

/* Remove the files of an interrupted create (no .meta); 1 if any were removed. */
static int scrub_orphan(struct ds_store *st, struct ds_ring *r, const struct scan_ent *e)
{
	struct ds_obj *o = st_obj_get(st, e->key);
	if (!o)
		return -ENOMEM;
	int rc = st_obj_lock(st, r, o, true);
	if (rc) {
		st_obj_put(st, r, o);
		return rc == -EIO ? 0 : rc; /* a .meta appeared: scrub_obj's business */
	}
	if (o->state == OBJ_ABSENT) {
		/* lock exclusive: no create of this key is in progress */
		char tname[sizeof(o->name) + 9];
		snprintf(tname, sizeof(tname), "%s.meta.tmp", o->name);
		int sub = sub_of(st, o);
		bool data = !unlinkat(sub, o->name, 0);
		bool tmp = !unlinkat(sub, tname, 0);
		rc = data || tmp;
		if (rc)
			st_log("object %s: removed the files of an interrupted create", o->name);
	}
	pthread_rwlock_unlock(&o->lock);
	st_obj_put(st, r, o);
	return rc;
}

/* Verify one object, a chunk at a time so fences and truncates get in between. */
static int scrub_obj(struct ds_store *st, struct ds_ring *r, const struct scan_ent *e, uint8_t *buf,
		     struct crc_ent *ents, ds_scrub_bad_fn bad, void *arg,
		     struct ds_scrub_stats *ss)
{
	struct ds_obj *o = st_obj_get(st, e->key);
	struct ds_objid id = {.gen = 0};
	memcpy(id.key, e->key, DS_KEY_SIZE);
	if (!o)
		return -ENOMEM;
	int rc = st_obj_lock(st, r, o, false);
	if (rc == -EIO) {
		ss->objects++;
		ss->bad_objects++;
		if (bad)
			bad(arg, &id, UINT64_MAX, 0);
		st_obj_put(st, r, o);
		return 0;
	}
	if (rc || o->state != OBJ_PRESENT) {
		if (!rc)
			pthread_rwlock_unlock(&o->lock);
		st_obj_put(st, r, o);
		return rc;
	}
	id.gen = o->gen;
	unsigned closes = o->closes;
	/* read the media, not the page cache, where the filesystem allows it */
	int fd = o->dfd;
	bool own_fd = false, gone = false;
	if (!st->direct && st->direct_ok) {
		int dfd = openat(sub_of(st, o), o->name, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (dfd >= 0) {
			fd = dfd;
			own_fd = true;
		}
	}
	uint64_t nbad = 0, first_bad = 0, b = 0, chunk = SCRUB_CHUNK >> st->bs_shift;
	if (!chunk)
		chunk = 1;
	/* o->lock is held shared at the top of each pass and at every break */
	for (;;) {
		pthread_mutex_lock(&o->mu);
		uint64_t nblocks = (o->size + st->bs - 1) >> st->bs_shift;
		pthread_mutex_unlock(&o->mu);
		if (b >= nblocks)
			break;
		uint64_t nb = nblocks - b < chunk ? nblocks - b : chunk, fb = 0;
		struct iovec v[2] = {{buf, nb << st->bs_shift}, {ents, nb * sizeof(*ents)}};
		struct iovec full = v[0];
		struct iop ops[2];
		struct rl_held held;
		st_iop_rw(&ops[0], IOP_READ, fd, &v[0], 1, b << st->bs_shift);
		ops[0].direct = st->direct || own_fd;
		st_iop_rw(&ops[1], IOP_READ, o->mfd, &v[1], 1, OBJ_TABLE_OFF + b * 8);
		st_rl_lock(st, o, b << st->bs_shift, (b + nb) << st->bs_shift, false, &held);
		rc = st_io_run(st, r, ops, 2);
		if (!rc) {
			memset(buf + ops[0].done, 0, full.iov_len - ops[0].done);
			memset((uint8_t *)ents + ops[1].done, 0, nb * sizeof(*ents) - ops[1].done);
			uint64_t k = st_verify_blocks(st, o, &full, ents, b, nb, false, &fb);
			if (k && !nbad)
				first_bad = fb;
			nbad += k;
		}
		st_rl_unlock(st, &held);
		if (rc)
			break;
		ss->blocks += nb;
		b += nb;
		/* let fences and truncates in between chunks */
		pthread_rwlock_unlock(&o->lock);
		pthread_rwlock_rdlock(&o->lock);
		if (o->state != OBJ_PRESENT || o->closes != closes) {
			gone = true; /* removed (maybe recreated) meanwhile; fd is stale */
			break;
		}
	}
	pthread_rwlock_unlock(&o->lock);
	if (own_fd)
		close(fd);
	st_obj_put(st, r, o);
	if (rc || gone)
		return rc;
	ss->objects++;
	if (nbad) {
		ss->bad_objects++;
		ss->bad_blocks += nbad;
		if (bad)
			bad(arg, &id, first_bad << st->bs_shift, nbad);
	}
	return 0;
}

int ds_store_scrub(struct ds_store *st, ds_scrub_bad_fn bad, void *arg,
		   struct ds_scrub_stats *stats)
{
	struct ds_scrub_stats ss = {0};
	uint64_t chunk = SCRUB_CHUNK > st->bs ? SCRUB_CHUNK : st->bs;
	uint8_t *buf = abuf(chunk);
	struct crc_ent *ents = malloc((chunk >> st->bs_shift) * sizeof(*ents));
	struct ds_ring *r = st_ring_get(st);
	int rc = 0;
	if (!buf || !ents || !r) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned sub = 0; sub < NSUB && !rc; sub++) {
		struct scan_ent *v;
		size_t cnt;
		rc = scan_sub(st, sub, &v, &cnt);
		for (size_t i = 0; !rc && i < cnt; i++) {
			if (v[i].flags & SCAN_META) {
				rc = scrub_obj(st, r, &v[i], buf, ents, bad, arg, &ss);
			} else {
				rc = scrub_orphan(st, r, &v[i]);
				if (rc > 0)
					ss.orphans++;
				rc = rc > 0 ? 0 : rc;
			}
		}
		free(v);
	}
out:
	if (r)
		st_ring_put(st, r);
	free(buf);
	free(ents);
	if (stats)
		*stats = ss;
	return rc;
}
