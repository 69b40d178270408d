/* SPDX-License-Identifier: MIT */
/*
 * Mapped READ in the braid-ds object store: the blocks verified in the
 * object's mapping of its data file and sent from it, and the SIGBUS
 * handler that turns a page the kernel cannot fill into -EIO.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
