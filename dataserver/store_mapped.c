/* SPDX-License-Identifier: MIT */
/*
 * Mapped READ in the braid-ds object store: the blocks verified in the
 * object's mapping of its data file and sent from it, and the SIGBUS
 * handler that turns a page the kernel cannot fill into -EIO.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dataserver/store_impl.h"

/*
 * A data file mapped once for the READs of the object, not per READ: a
 * mapping and unmapping per READ cost page-table work and TLB shootdowns
 * across the daemon's threads.  One reference is the object's (while dfd
 * is open and the file fits); each READ's reply holds one until sent.
 */
struct obj_vmap {
	atomic_uint refs;
	void *base;
	size_t len;
};

static void vmap_put(struct obj_vmap *v)
{
	if (v && atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1) {
		munmap(v->base, v->len);
		free(v);
	}
}

/* The object's files close (or it shrinks): later READs map afresh. */
void st_obj_vmap_drop(struct ds_obj *o)
{
	pthread_mutex_lock(&o->mu);
	struct obj_vmap *v = o->vmap;
	o->vmap = NULL;
	pthread_mutex_unlock(&o->mu);
	vmap_put(v);
}

/* ----------------------------------------------------- verified blocks */

/*
 * Why a cached block verified once need not be verified on every READ.
 * The CRCs guard against the disk: a block that rots, a write that never
 * landed, a read that returns another block.  Such bytes enter memory only
 * when the kernel reads the disk into the page cache, and every such read
 * moves the store's block device's sectors-read count.  So a block whose
 * cached pages were verified (or written by the store itself, which
 * computed the CRC from those very bytes) when the count stood at mark,
 * and are all still cached now that the count still stands at mark, holds
 * the bytes that were verified: none of its pages can have been dropped
 * and read back from the disk in between.  The count is read after the
 * range was found cached, so a page dropped and read back before that
 * moves it; one dropped after it is the window every mapped READ already
 * has (pages dropped between the verify pass and the send).
 *
 * What this does not cover, and the verify pass did: bytes changed in the
 * page cache by another process writing the object's files behind the
 * store's back (they are the daemon's, mode 0600).  Any disk read on the
 * device (another object's cold READ, scrub, another program) forgets
 * every object's verified blocks at their next READ, so a store that is
 * read from the disk all the time simply verifies as before.  A store on
 * a file system without one block device of its own (tmpfs, NFS, btrfs
 * over several devices) always verifies.
 */

/* The device of the file system that holds dirfd, if it has a statistics
 * file of its own; else mapped READs always verify. */
void st_disk_reads_open(struct ds_store *st, int dirfd)
{
	struct stat sb;
	char path[64];
	st->dreads_fd = -1;
	if (fstat(dirfd, &sb) || !major(sb.st_dev))
		return; /* an anonymous device: tmpfs, overlay, NFS, btrfs */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", major(sb.st_dev),
		 minor(sb.st_dev));
	st->dreads_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (st->dreads_fd >= 0 && st_disk_reads(st) == DREADS_NONE) {
		close(st->dreads_fd);
		st->dreads_fd = -1;
	}
}

/* The device's sectors read so far (the stat file's third field). */
uint64_t st_disk_reads(struct ds_store *st)
{
	if (st->test_disk_reads)
		return st->test_disk_reads(st->test_arg);
	if (st->dreads_fd < 0)
		return DREADS_NONE;
	char b[256];
	ssize_t n = pread(st->dreads_fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return DREADS_NONE;
	b[n] = 0;
	unsigned long long ios, merges, sectors;
	if (sscanf(b, "%llu %llu %llu", &ios, &merges, &sectors) != 3 || sectors == DREADS_NONE)
		return DREADS_NONE;
	return sectors;
}

#define VB_WORD(b) ((b) >> 6)
#define VB_BIT(b)  (1ull << ((b) & 63))
/* Blocks past this are never known good (always verified): a write far
 * out in a sparse object must not cost its bitmap gigabytes of memory. */
#define VB_MAX_BLOCKS (1ull << 22) /* 512 KiB of bitmap per object at most */

static void vbits_drop_locked(struct ds_obj *o)
{
	free(o->vbits);
	o->vbits = NULL;
	o->vbits_nb = 0;
}

void st_vbits_clear(struct ds_obj *o)
{
	pthread_mutex_lock(&o->mu);
	vbits_drop_locked(o);
	pthread_mutex_unlock(&o->mu);
}

void st_vbits_forget(struct ds_obj *o, uint64_t b0, uint64_t nb)
{
	pthread_mutex_lock(&o->mu);
	for (uint64_t b = b0; b < b0 + nb && b < o->vbits_nb; b++)
		__atomic_fetch_and(&o->vbits[VB_WORD(b)], ~VB_BIT(b), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&o->mu);
}

void st_vbits_set(struct ds_obj *o, uint64_t b0, uint64_t nb, uint64_t mark)
{
	if (mark == DREADS_NONE || !nb || b0 >= VB_MAX_BLOCKS)
		return;
	if (nb > VB_MAX_BLOCKS - b0)
		nb = VB_MAX_BLOCKS - b0;
	pthread_mutex_lock(&o->mu);
	if (o->vmark != mark) {
		/* known good as of another count: as of this one, nothing is
		 * (dropped, not zeroed: only what this call covers is remade) */
		vbits_drop_locked(o);
		o->vmark = mark;
	}
	if (b0 + nb > o->vbits_nb) {
		uint64_t want = (b0 + nb + 63) & ~63ull, have = (o->vbits_nb + 63) / 64;
		uint64_t *nv = realloc(o->vbits, (size_t)(want / 64) * 8);
		if (!nv) {
			pthread_mutex_unlock(&o->mu);
			return; /* they are verified again, that is all */
		}
		memset(nv + have, 0, (size_t)(want / 64 - have) * 8);
		o->vbits = nv;
		o->vbits_nb = want;
	}
	for (uint64_t b = b0; b < b0 + nb; b++)
		__atomic_fetch_or(&o->vbits[VB_WORD(b)], VB_BIT(b), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&o->mu);
}

/* Whether blocks [b0, b0 + nb) are all known good as of mark. */
static bool vbits_all(struct ds_obj *o, uint64_t b0, uint64_t nb, uint64_t mark)
{
	bool all = mark != DREADS_NONE;
	pthread_mutex_lock(&o->mu);
	if (o->vmark != mark || b0 + nb > o->vbits_nb)
		all = false;
	for (uint64_t b = b0; all && b < b0 + nb; b++)
		all = __atomic_load_n(&o->vbits[VB_WORD(b)], __ATOMIC_RELAXED) & VB_BIT(b);
	pthread_mutex_unlock(&o->mu);
	return all;
}

/*
 * A page of a mapping that the kernel cannot fill raises SIGBUS on the
 * thread that touches it: a disk I/O error, or a data file cut short
 * outside the store (the store's own truncations hold o->lock exclusive, so
 * none runs under a verify pass).  st_obj_map arms map_recover around its
 * verify pass, the only place this process reads a mapping, and that READ
 * gets -EIO.  Any other SIGBUS goes to the handler there was before, or
 * kills the process as it would have.  SA_NODEFER, so leaving by
 * siglongjmp leaves the signal mask as it was without saving it per READ.
 */
static __thread sigjmp_buf *map_recover;
static struct sigaction map_prev_bus;
static pthread_once_t map_bus_once = PTHREAD_ONCE_INIT;

static void map_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *j = map_recover;
	if (j) {
		map_recover = NULL;
		siglongjmp(*j, 1);
	}
	if (map_prev_bus.sa_flags & SA_SIGINFO) {
		map_prev_bus.sa_sigaction(sig, si, uc);
		return;
	}
	if (map_prev_bus.sa_handler != SIG_DFL && map_prev_bus.sa_handler != SIG_IGN) {
		map_prev_bus.sa_handler(sig);
		return;
	}
	/* as if never caught: a fault repeats on return, a kill(2) is raised */
	signal(SIGBUS, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

static void map_bus_install(void)
{
	struct sigaction sa = {.sa_sigaction = map_on_sigbus,
			       .sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &map_prev_bus);
}

/* The first ds_store_open installs map_on_sigbus for the process. */
void st_map_sigbus_install(void)
{
	pthread_once(&map_bus_once, map_bus_install);
}

/*
 * Whether every page of [a, z) of a mapping at base is in the page cache.
 * Only such a range is served from the mapping: a missing page would be
 * read by the verify pass's fault, one at a time and with the mapping's
 * read-around (read_ahead_kb on either side: 8 MiB on our VMs, for a
 * 1 MiB READ), so data larger than memory read at random came at a
 * fraction of the disk's rate.  The caller reads the rest with io_uring
 * into a buffer instead: exactly the range, with many READs in flight.
 * mincore reads the PTEs the mapping already has, and the page cache only
 * for pages it has not yet touched.
 */
static bool range_resident(const uint8_t *base, uint64_t a, uint64_t z, uint64_t pg)
{
	unsigned char vec[256];
	uint64_t off = a & ~(pg - 1), end = (z + pg - 1) & ~(pg - 1);
	while (off < end) {
		uint64_t n = (end - off) / pg;
		if (n > sizeof(vec))
			n = sizeof(vec);
		if (mincore((void *)(base + off), n * pg, vec))
			return false;
		for (uint64_t i = 0; i < n; i++)
			if (!(vec[i] & 1))
				return false;
		off += n * pg;
	}
	return true;
}

/*
 * obj_read's blocks mapped instead of read: [a, z) of the data file, the
 * whole blocks under [off, off + n), verified in place.  Caller holds
 * o->lock shared (no truncation meanwhile); n > 0, the range below size.
 */
int st_obj_map(struct ds_store *st, struct ds_ring *r, struct ds_obj *o, uint64_t off, size_t n,
	       struct ds_store_map *m, const void **data)
{
	uint64_t end = off + n, b0 = off >> st->bs_shift, b1 = (end - 1) >> st->bs_shift;
	uint64_t nb = b1 - b0 + 1, a = b0 << st->bs_shift, z = (b1 + 1) << st->bs_shift;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	struct stat sb;
	if (fstat(o->dfd, &sb))
		return -errno;
	/* a page wholly past the data file's end would fault: copy instead */
	uint64_t flen = ((uint64_t)sb.st_size + pg - 1) & ~(pg - 1);
	if (z > flen)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&o->mu);
	struct obj_vmap *vm = o->vmap;
	if (vm && vm->len >= z)
		atomic_fetch_add_explicit(&vm->refs, 1, memory_order_relaxed);
	else
		vm = NULL;
	pthread_mutex_unlock(&o->mu);
	if (!vm) {
		/* the whole file as it is now; a larger one is mapped anew */
		struct obj_vmap *nv = malloc(sizeof(*nv));
		void *p = nv ? mmap(NULL, flen, PROT_READ, MAP_SHARED, o->dfd, 0) : MAP_FAILED;
		if (p == MAP_FAILED) {
			free(nv);
			return -EOPNOTSUPP;
		}
		nv->base = p;
		nv->len = flen;
		atomic_init(&nv->refs, 2); /* the object's and ours */
		pthread_mutex_lock(&o->mu);
		struct obj_vmap *old = o->vmap;
		o->vmap = nv;
		pthread_mutex_unlock(&o->mu);
		vmap_put(old);
		vm = nv;
	}
	/* No MADV_POPULATE_READ: the mapping outlives the READ, so its pages
	 * stay mapped and a walk of all 256 of a MiB's PTEs on every READ was
	 * 7% of braid-ds's CPU.  The range is all in the page cache (else the
	 * caller copies), so the verify pass at most maps cached pages. */
	uint8_t *p = (uint8_t *)vm->base + a;
	if (!range_resident(vm->base, a, z, pg)) {
		vmap_put(vm);
		ctr_add(&st->ctr.reads_uncached, 1);
		return -EOPNOTSUPP;
	}
	/* after the range was found cached: see "verified blocks" above */
	uint64_t mark = st_disk_reads(st);
	if (!st->test_mapped_hook && vbits_all(o, b0, nb, mark)) {
		ctr_add(&st->ctr.verify_skipped, nb);
		m->vmap = vm;
		m->base = p;
		m->len = z - a;
		*data = p + (off - a);
		return 0;
	}
	struct crc_ent *ents = malloc(nb * sizeof(*ents));
	if (!ents) {
		vmap_put(vm);
		return -ENOMEM;
	}
	struct iovec v = {p, z - a}, ev = {ents, nb * sizeof(*ents)};
	struct iop op;
	st_iop_rw(&op, IOP_READ, o->mfd, &ev, 1, OBJ_TABLE_OFF + b0 * 8);
	struct rl_held held;
	st_rl_lock(st, o, a, z, false, &held);
	int rc = st_io_run(st, r, &op, 1);
	if (!rc) {
		memset((uint8_t *)ents + op.done, 0, nb * sizeof(*ents) - op.done);
		if (st->test_mapped_hook)
			st->test_mapped_hook(o->dfd, st->test_arg);
		sigjmp_buf jb;
		if (sigsetjmp(jb, 0)) {
			/* map_on_sigbus came back here; nothing above changed */
			st_log("object %s gen %llu: bytes %llu..%llu unreadable in the page cache "
			       "(disk I/O error, or the data file cut short outside braid-ds)",
			       o->name, (unsigned long long)o->gen, (unsigned long long)a,
			       (unsigned long long)z - 1);
			ctr_add(&st->ctr.read_faults, 1);
			rc = -EIO;
		} else {
			map_recover = &jb;
			uint64_t bad = st_verify_blocks(st, o, &v, ents, b0, nb, true, NULL);
			map_recover = NULL;
			if (bad)
				rc = -EIO;
		}
	}
	st_rl_unlock(st, &held);
	free(ents);
	if (rc) {
		vmap_put(vm);
		return rc;
	}
	st_vbits_set(o, b0, nb, mark);
	m->vmap = vm;
	m->base = p;
	m->len = z - a;
	*data = p + (off - a);
	return 0;
}

ssize_t ds_store_read_mapped(struct ds_store *st, const struct ds_objid *id, uint32_t uid,
			     uint32_t gid, uint64_t off, size_t len, struct ds_store_map *m,
			     const void **data, bool *eof)
{
	m->vmap = NULL;
	m->base = NULL;
	m->len = 0;
	*data = NULL;
	if (!id || len > DS_STORE_MAX_IO)
		return -EINVAL;
	if (st->direct || st->bs < (unsigned)sysconf(_SC_PAGESIZE))
		return -EOPNOTSUPP;
	return st_read(st, id, uid, gid, off, len, NULL, m, data, eof);
}

void ds_store_unmap(struct ds_store_map *m)
{
	vmap_put(m->vmap);
	m->vmap = NULL;
	m->base = NULL;
	m->len = 0;
}
