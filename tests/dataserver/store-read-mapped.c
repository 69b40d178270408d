/* SPDX-License-Identifier: MIT */
/*
 * ds_store_read_mapped: a READ served from a verified mapping of the
 * object, no copy (what braid-ds's READ replies send on a page-cache
 * store).  It must give exactly what ds_store_read gives:
 *  - the bytes at any offset and length, short at the end with eof, zeros
 *    in holes, nothing past the end;
 *  - the same permission check (EACCES) and -ENOENT for no object;
 *  - a block whose CRC does not match is -EIO, never data, even when the
 *    bad byte sits in a block the range only partly covers;
 *  - blocks verified (or written by the store) are served without being
 *    verified again while nothing has been read from the store's disk,
 *    and verified again once something has: a block gone bad on the disk
 *    never reaches a reply;
 *  - -EOPNOTSUPP where a mapping cannot serve (an O_DIRECT store, or a
 *    range not wholly in the page cache, whose faults would read it page
 *    by page with read-around), so the caller copies instead, and the
 *    copy leaves the range cached for the next mapped READ;
 *  - a page the kernel cannot fill while the blocks are verified (here the
 *    data file cut short behind the store's back, in the window between
 *    the length check and the verify pass; a disk I/O error faults the same
 *    way) is -EIO and counted, not a SIGBUS that kills braid-ds; and a
 *    SIGBUS that is not the store's still kills as it would have.
 */
#include "config.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tests/dataserver/store-test.h"

#define U  7
#define BS 4096u

/* The mapped read of [off, off + len) against ds_store_read's. */
static void same(struct ds_store *st, const struct ds_objid *id, uint64_t off, size_t len)
{
	uint8_t *want = malloc(len ? len : 1);
	CHECK(want);
	bool eof1 = false, eof2 = false;
	ssize_t n1 = ds_store_read(st, id, U, U, off, len, want, &eof1);
	struct ds_store_map m;
	const void *p;
	ssize_t n2 = ds_store_read_mapped(st, id, U, U, off, len, &m, &p, &eof2);
	CHECK_EQ(n2, n1);
	CHECK_EQ(eof2, eof1);
	if (n1 > 0)
		CHECK(!memcmp(p, want, (size_t)n1));
	ds_store_unmap(&m);
	CHECK(!m.base);
	free(want);
}

/* test_disk_reads: the store's disk-read count, as the test moves it */
static uint64_t fake_reads = 1;
static uint64_t fake_count(void *arg)
{
	(void)arg;
	return fake_reads;
}

static struct ds_store *open_counted(const char *dir)
{
	struct ds_store_opts o = {.create = true, .io = DS_STORE_IO_URING,
				  .test_disk_reads = fake_count};
	struct ds_store *st = NULL;
	CHECK_EQ(ds_store_open(dir, &o, &st), 0);
	return st;
}

/*
 * Known-good blocks against the real disk: written blocks are served
 * without verifying while nothing is read from the store's device; a
 * block changed on the disk itself is read from the disk and fails; and
 * once the disk has been read, every block is verified again.
 */
static void known_good(void)
{
	const char *dir = st_subdir("known");
	struct ds_store *st = st_open(dir, false, DS_STORE_IO_URING);
	struct ds_objid a = st_id(5, 1);
	uint8_t *data = malloc(8 * BS);
	CHECK(data);
	CHECK_EQ(ds_store_create(st, &a, U, U, 0600), 0);
	st_fill(data, 0, 8 * BS, 5);
	CHECK_EQ(st_write(st, &a, U, U, 0, data, 8 * BS, DS_FILE_SYNC), 8 * BS);
	struct ds_store_counters c0, c1;
	struct ds_store_map m;
	const void *p;
	bool eof;
	ds_store_counters(st, &c0);
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 0, 8 * BS, &m, &p, &eof), (ssize_t)(8 * BS));
	ds_store_unmap(&m);
	ds_store_counters(st, &c1);
	if (c1.verify_skipped == c0.verify_skipped) {
		/* the scratch file system has no block device of its own (tmpfs),
		 * where a store always verifies, or something read the disk
		 * meanwhile: either way the rest would test nothing */
		printf("known-good blocks: not served unverified in %s (no block device "
		       "statistics, or the disk was read meanwhile)\n", dir);
		CHECK_EQ(ds_store_close(st), 0);
		free(data);
		return;
	}
	CHECK_EQ(c1.verify_skipped, c0.verify_skipped + 8);
	/* block 2 goes bad on the disk: its pages are dropped, the mapped READ
	 * declines, the copy reads the disk and fails */
	char path[4400];
	st_obj_path(dir, &a, "", path, sizeof(path));
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	uint8_t bad = (uint8_t)~st_pat(2 * BS + 7, 5);
	st_poke_disk(fd, 2 * BS + 7, &bad, 1);
	close(fd);
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 2 * BS, BS, &m, &p, &eof), -EOPNOTSUPP);
	uint8_t *buf = malloc(BS);
	CHECK(buf);
	CHECK_EQ(ds_store_read(st, &a, U, U, 2 * BS, BS, buf, &eof), -EIO);
	/* the disk was read: cached blocks are verified again, not skipped
	 * (the copy caches blocks 4 and 5 if the poke dropped them) */
	CHECK_EQ(ds_store_read(st, &a, U, U, 4 * BS, BS, buf, &eof), (ssize_t)BS);
	CHECK_EQ(ds_store_read(st, &a, U, U, 5 * BS, BS, buf, &eof), (ssize_t)BS);
	ds_store_counters(st, &c0);
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 4 * BS, 2 * BS, &m, &p, &eof),
		 (ssize_t)(2 * BS));
	for (uint64_t i = 0; i < 2 * BS; i++)
		CHECK(((const uint8_t *)p)[i] == st_pat(4 * BS + i, 5));
	ds_store_unmap(&m);
	ds_store_counters(st, &c1);
	CHECK_EQ(c1.verify_skipped, c0.verify_skipped);
	free(buf);
	CHECK_EQ(ds_store_close(st), 0);
	free(data);
}

/* test_mapped_hook: the data file cut to nothing under the READ */
static unsigned cuts;
static void cut_short(int dfd, void *arg)
{
	(void)arg;
	CHECK_EQ(ftruncate(dfd, 0), 0);
	cuts++;
}

static void prior_handler(int sig)
{
	(void)sig;
	_exit(42);
}

/*
 * In a child with a store open, a SIGBUS of its own (a page past the end of
 * a file it mapped, or kill(2)) must reach what was there before the store:
 * the default (killed by SIGBUS) or the handler it had (here: exit 42).
 */
static void foreign_sigbus(const char *dir, bool by_fault, bool had_handler)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		/* SIG_DFL explicitly: a sanitizer runtime has its own handler */
		signal(SIGBUS, had_handler ? prior_handler : SIG_DFL);
		struct ds_store *st = st_open(dir, false, DS_STORE_IO_URING);
		(void)st;
		if (!by_fault)
			raise(SIGBUS);
		char path[4200];
		snprintf(path, sizeof(path), "%s/foreign", dir);
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, 8192))
			_exit(3);
		volatile uint8_t *q = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
		if (q == MAP_FAILED || ftruncate(fd, 0))
			_exit(4);
		(void)q[4096];
		_exit(0);
	}
	int ws;
	CHECK_EQ(waitpid(pid, &ws, 0), pid);
	if (had_handler) {
		CHECK(WIFEXITED(ws));
		CHECK_EQ(WEXITSTATUS(ws), 42);
	} else {
		CHECK(WIFSIGNALED(ws));
		CHECK_EQ(WTERMSIG(ws), SIGBUS);
	}
}

int main(void)
{
	const char *tmp = st_tmp_make();
	const char *dir = st_subdir("page");
	struct ds_store *st = st_open(dir, false, DS_STORE_IO_URING);
	struct ds_objid a = st_id(1, 1);
	CHECK_EQ(ds_store_create(st, &a, U, U, 0600), 0);
	/* 3 blocks and a part, then a hole, then a block and a part */
	uint64_t size = 3 * BS + 700;
	uint8_t *data = malloc(8 * BS);
	CHECK(data);
	st_fill(data, 0, size, 1);
	CHECK_EQ(st_write(st, &a, U, U, 0, data, size, DS_UNSTABLE), (ssize_t)size);
	st_fill(data, 6 * BS + 5, BS + 300, 1);
	CHECK_EQ(st_write(st, &a, U, U, 6 * BS + 5, data, BS + 300, DS_UNSTABLE), BS + 300);
	uint64_t end = 6 * BS + 5 + BS + 300;

	const uint64_t offs[] = { 0, 1, BS - 1, BS, 2 * BS + 17, 3 * BS + 699, 4 * BS + 3,
				  6 * BS, end - 1, end, end + 5 };
	const size_t lens[] = { 0, 1, 100, BS, BS + 1, 3 * BS, 8 * BS };
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		for (unsigned j = 0; j < sizeof(lens) / sizeof(lens[0]); j++)
			same(st, &a, offs[i], lens[j]);

	/* whole file, and the data is really there */
	struct ds_store_map m;
	const void *p;
	bool eof = false;
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 0, 8 * BS, &m, &p, &eof), (ssize_t)end);
	CHECK(eof);
	const uint8_t *q = p;
	for (uint64_t i = 0; i < end; i++)
		CHECK(q[i] == ((i < size || i >= 6 * BS + 5) ? st_pat(i, 1) : 0));
	ds_store_unmap(&m);

	/* permission and existence, as ds_store_read */
	CHECK_EQ(ds_store_read_mapped(st, &a, U + 1, U + 1, 0, BS, &m, &p, &eof), -EACCES);
	struct ds_objid none = st_id(99, 1);
	CHECK_EQ(ds_store_read_mapped(st, &none, U, U, 0, BS, &m, &p, &eof), -ENOENT);
	CHECK(!m.base);

	/* one mapping of the object serves its READs, not one per READ */
	struct ds_store_map m1, m2;
	const void *p1, *p2;
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 100, BS, &m1, &p1, &eof), (ssize_t)BS);
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 2 * BS + 5, 10, &m2, &p2, &eof), 10);
	CHECK((const uint8_t *)p2 - (const uint8_t *)p1 == 2 * BS + 5 - 100);
	ds_store_unmap(&m2);
	/* growth past the mapping: mapped anew, the held reply's bytes intact */
	st_fill(data, 40 * BS + 9, 2 * BS, 1);
	CHECK_EQ(st_write(st, &a, U, U, 40 * BS + 9, data, 2 * BS, DS_UNSTABLE), 2 * BS);
	same(st, &a, 40 * BS, 3 * BS);
	same(st, &a, 39 * BS, BS);
	for (uint64_t i = 0; i < BS; i++)
		CHECK(((const uint8_t *)p1)[i] == st_pat(100 + i, 1));
	/* truncation, then growth again: what the store holds now, never more */
	CHECK_EQ(ds_store_truncate(st, &a, 2 * BS + 100), 0);
	same(st, &a, 0, 8 * BS);
	same(st, &a, 2 * BS, BS);
	same(st, &a, 3 * BS, BS);
	st_fill(data, 2 * BS + 100, 3 * BS, 1);
	CHECK_EQ(st_write(st, &a, U, U, 2 * BS + 100, data, 3 * BS, DS_UNSTABLE), 3 * BS);
	same(st, &a, 0, 8 * BS);
	same(st, &a, 4 * BS + 1, BS);
	ds_store_unmap(&m1);
	/* a reply held across the object's removal keeps its bytes */
	struct ds_objid b = st_id(2, 1);
	CHECK_EQ(ds_store_create(st, &b, U, U, 0600), 0);
	st_fill(data, 0, 2 * BS, 1);
	CHECK_EQ(st_write(st, &b, U, U, 0, data, 2 * BS, DS_UNSTABLE), 2 * BS);
	CHECK_EQ(ds_store_read_mapped(st, &b, U, U, 0, 2 * BS, &m1, &p1, &eof), 2 * BS);
	CHECK_EQ(ds_store_remove(st, &b), 0);
	for (uint64_t i = 0; i < 2 * BS; i++)
		CHECK(((const uint8_t *)p1)[i] == st_pat(i, 1));
	ds_store_unmap(&m1);
	CHECK_EQ(ds_store_read_mapped(st, &b, U, U, 0, BS, &m1, &p1, &eof), -ENOENT);
	/* back to the file the corruption checks below expect */
	CHECK_EQ(ds_store_truncate(st, &a, 0), 0);
	st_fill(data, 0, size, 1);
	CHECK_EQ(st_write(st, &a, U, U, 0, data, size, DS_UNSTABLE), (ssize_t)size);

	/* pages not in the page cache: not mapped, counted; a copying read
	 * caches them, and the mapping serves again */
	{
		struct ds_objid u = st_id(3, 1);
		CHECK_EQ(ds_store_create(st, &u, U, U, 0600), 0);
		st_fill(data, 0, 8 * BS, 3);
		CHECK_EQ(st_write(st, &u, U, U, 0, data, 8 * BS, DS_FILE_SYNC), 8 * BS);
		char upath[4400];
		st_obj_path(dir, &u, "", upath, sizeof(upath));
		int fd = open(upath, O_RDONLY);
		CHECK(fd >= 0);
		CHECK_EQ(fdatasync(fd), 0);
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		struct ds_store_counters c0, c1;
		ds_store_counters(st, &c0);
		CHECK_EQ(ds_store_read_mapped(st, &u, U, U, 2 * BS, 4 * BS, &m, &p, &eof),
			 -EOPNOTSUPP);
		CHECK(!m.base);
		ds_store_counters(st, &c1);
		CHECK_EQ(c1.reads_uncached, c0.reads_uncached + 1);
		same(st, &u, 2 * BS, 4 * BS); /* the copy; it caches the pages */
		CHECK_EQ(ds_store_read_mapped(st, &u, U, U, 2 * BS, 4 * BS, &m, &p, &eof),
			 (ssize_t)(4 * BS));
		for (uint64_t i = 0; i < 4 * BS; i++)
			CHECK(((const uint8_t *)p)[i] == st_pat(2 * BS + i, 3));
		ds_store_unmap(&m);
		/* one page of the range missing is enough to copy */
		uint8_t *tmpb = malloc(BS);
		CHECK(tmpb);
		CHECK_EQ(ds_store_read(st, &u, U, U, 6 * BS, BS, tmpb, &eof), (ssize_t)BS);
		free(tmpb);
		CHECK_EQ(posix_fadvise(fd, 7 * BS, BS, POSIX_FADV_DONTNEED), 0);
		CHECK_EQ(ds_store_read_mapped(st, &u, U, U, 6 * BS, 2 * BS, &m, &p, &eof),
			 -EOPNOTSUPP);
		CHECK_EQ(ds_store_read_mapped(st, &u, U, U, 6 * BS, BS, &m, &p, &eof),
			 (ssize_t)BS); /* the page before it is cached */
		ds_store_unmap(&m);
		close(fd);
		CHECK_EQ(ds_store_remove(st, &u), 0);
	}

	/* the same store with a disk-read count of the test's own */
	CHECK_EQ(ds_store_close(st), 0);
	st = open_counted(dir);
	struct ds_store_counters k0, k1;
	ds_store_counters(st, &k0);
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 0, 3 * BS, &m, &p, &eof), (ssize_t)(3 * BS));
	ds_store_unmap(&m);
	ds_store_counters(st, &k1);
	CHECK_EQ(k1.verify_skipped, k0.verify_skipped); /* a new store knows nothing good */
	/* verified, and the disk not read since: served without verifying */
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, BS, BS, &m, &p, &eof), (ssize_t)BS);
	for (uint64_t i = 0; i < BS; i++)
		CHECK(((const uint8_t *)p)[i] == st_pat(BS + i, 1));
	ds_store_unmap(&m);
	ds_store_counters(st, &k0);
	CHECK_EQ(k0.verify_skipped, k1.verify_skipped + 1);
	/* far out in a sparse object (past 2^22 blocks) no block is taken as
	 * known good, so no write there costs a bitmap of gigabytes */
	{
		struct ds_objid far = st_id(6, 1);
		uint64_t bsz = ds_store_block_size(st), near = 3 * bsz;
		uint64_t fo = ((1ull << 22) + 3) * bsz;
		CHECK_EQ(ds_store_create(st, &far, U, U, 0600), 0);
		st_fill(data, near, bsz, 6);
		CHECK_EQ(st_write(st, &far, U, U, near, data, bsz, DS_UNSTABLE), (ssize_t)bsz);
		st_fill(data, fo, bsz, 6);
		CHECK_EQ(st_write(st, &far, U, U, fo, data, bsz, DS_UNSTABLE), (ssize_t)bsz);
		for (int i = 0; i < 2; i++) {
			struct ds_store_counters f0, f1, f2;
			ds_store_counters(st, &f0);
			CHECK_EQ(ds_store_read_mapped(st, &far, U, U, near, bsz, &m, &p, &eof),
				 (ssize_t)bsz);
			ds_store_unmap(&m);
			ds_store_counters(st, &f1);
			CHECK_EQ(f1.verify_skipped, f0.verify_skipped + 1);
			CHECK_EQ(ds_store_read_mapped(st, &far, U, U, fo, bsz, &m, &p, &eof),
				 (ssize_t)bsz);
			CHECK(((const uint8_t *)p)[7] == st_pat(fo + 7, 6));
			ds_store_unmap(&m);
			ds_store_counters(st, &f2);
			CHECK_EQ(f2.verify_skipped, f1.verify_skipped);
		}
		CHECK_EQ(ds_store_remove(st, &far), 0);
	}

	/* a bad byte in block 1, and the disk read since (which is how a bad
	 * byte reaches the page cache): any range touching block 1 is -EIO */
	char path[4400];
	st_obj_path(dir, &a, "", path, sizeof(path));
	uint8_t one = (uint8_t)~st_pat(BS + 10, 1);
	st_poke(path, BS + 10, &one, 1);
	fake_reads++;
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, BS + 4000, 10, &m, &p, &eof), -EIO);
	CHECK(!m.base);
	CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 0, 3 * BS, &m, &p, &eof), -EIO);
	/* the blocks around it still read */
	same(st, &a, 0, BS);
	same(st, &a, 2 * BS, BS);
	CHECK_EQ(ds_store_close(st), 0);

	/* the data file cut short between the length check and the verify */
	{
		const char *cdir = st_subdir("cut");
		struct ds_store_opts o = { .create = true, .io = DS_STORE_IO_URING,
					   .test_mapped_hook = cut_short };
		CHECK_EQ(ds_store_open(cdir, &o, &st), 0);
		CHECK_EQ(ds_store_create(st, &a, U, U, 0600), 0);
		st_fill(data, 0, 8 * BS, 2);
		CHECK_EQ(st_write(st, &a, U, U, 0, data, 8 * BS, DS_FILE_SYNC), 8 * BS);
		struct ds_store_counters c0, c1;
		ds_store_counters(st, &c0);
		CHECK_EQ(ds_store_read_mapped(st, &a, U, U, BS, 4 * BS, &m, &p, &eof), -EIO);
		CHECK(!m.base);
		CHECK_EQ(cuts, 1u);
		ds_store_counters(st, &c1);
		CHECK_EQ(c1.read_faults, c0.read_faults + 1);
		/* and again: the store's thread is not left with SIGBUS blocked */
		CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 0, BS, &m, &p, &eof), -EOPNOTSUPP);
		CHECK_EQ(cuts, 1u); /* the length check now sees the short file */
		CHECK_EQ(ds_store_close(st), 0);
		/* a second store in the process and a second fault */
		CHECK_EQ(ds_store_open(cdir, &o, &st), 0);
		CHECK_EQ(st_write(st, &a, U, U, 0, data, 8 * BS, DS_FILE_SYNC), 8 * BS);
		CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 0, 8 * BS, &m, &p, &eof), -EIO);
		CHECK_EQ(cuts, 2u);
		CHECK_EQ(ds_store_close(st), 0);
		for (int h = 0; h < 2; h++) {
			foreign_sigbus(cdir, true, h);
			foreign_sigbus(cdir, false, h);
		}
	}

	known_good();

	/* an O_DIRECT store: the caller copies */
	if (st_direct_possible(tmp)) {
		const char *ddir = st_subdir("direct");
		st = st_open(ddir, true, DS_STORE_IO_URING);
		CHECK_EQ(ds_store_create(st, &a, U, U, 0600), 0);
		CHECK_EQ(st_write(st, &a, U, U, 0, data, BS, DS_FILE_SYNC), BS);
		CHECK_EQ(ds_store_read_mapped(st, &a, U, U, 0, BS, &m, &p, &eof), -EOPNOTSUPP);
		CHECK(!m.base);
		CHECK_EQ(ds_store_close(st), 0);
	}
	free(data);
	return 0;
}
