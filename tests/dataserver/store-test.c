/* SPDX-License-Identifier: MIT */
/* Helpers for the object store tests (tests/dataserver/store-test.h). */
#include "config.h"

#include <sched.h>
#include <sys/mount.h>

#include "tests/dataserver/store-test.h"

/* The scratch directory st_tmp_make() made (one per test program). */
static char st_tmpdir[4096];

static int st_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void st_tmp_cleanup(void)
{
	if (st_tmpdir[0])
		nftw(st_tmpdir, st_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *st_tmp_make(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(st_tmpdir, sizeof(st_tmpdir), "%s/braid-ds-test-XXXXXX",
		 base && *base ? base : "/tmp");
	CHECK(mkdtemp(st_tmpdir));
	atexit(st_tmp_cleanup);
	return st_tmpdir;
}

const char *st_subdir(const char *name)
{
	static char path[8][4200];
	static unsigned next;
	char *p = path[next++ % 8];
	snprintf(p, sizeof(path[0]), "%s/%s", st_tmpdir, name);
	CHECK(mkdir(p, 0700) == 0 || errno == EEXIST);
	return p;
}

struct ds_objid st_id(uint32_t n, uint64_t gen)
{
	struct ds_objid id = {.gen = gen};
	for (int i = 0; i < DS_KEY_SIZE; i++)
		id.key[i] = (uint8_t)(n >> (8 * (i % 4)) ^ (i * 37));
	return id;
}

void st_fill(uint8_t *p, uint64_t off, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = st_pat(off + i, seed);
}

struct ds_store *st_open(const char *dir, bool direct, enum ds_store_io io)
{
	struct ds_store_opts o = {.create = true, .direct = direct, .io = io};
	struct ds_store *st = NULL;
	int rc = ds_store_open(dir, &o, &st);
	if (rc)
		fprintf(stderr, "ds_store_open(%s): %s\n", dir, strerror(-rc));
	CHECK(rc == 0);
	return st;
}

ssize_t st_write(struct ds_store *st, const struct ds_objid *id, uint32_t uid, uint32_t gid,
		 uint64_t off, const void *buf, size_t len, enum ds_stable how)
{
	struct iovec v = {(void *)buf, len};
	return ds_store_write(st, id, uid, gid, off, &v, 1, how);
}

void st_obj_path(const char *dir, const struct ds_objid *id, const char *suffix, char *out,
		 size_t outlen)
{
	char pat[4300];
	glob_t g;
	int n = snprintf(pat, sizeof(pat), "%s/objects/*/", dir);
	for (int i = 0; i < DS_KEY_SIZE; i++)
		n += snprintf(pat + n, sizeof(pat) - (size_t)n, "%02x", id->key[i]);
	snprintf(pat + n, sizeof(pat) - (size_t)n, "%s", suffix);
	CHECK(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1);
	snprintf(out, outlen, "%s", g.gl_pathv[0]);
	globfree(&g);
}

void st_poke(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, buf, len, (off_t)off) == (ssize_t)len);
	close(fd);
}

void st_poke_disk(int fd, uint64_t off, const void *buf, size_t len)
{
	const uint64_t al = 4096;
	uint64_t a = off & ~(al - 1), z = (off + len + al - 1) & ~(al - 1);
	char path[64];
	CHECK_EQ(fdatasync(fd), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int dfd = open(path, O_RDWR | O_DIRECT);
	if (dfd < 0 && errno == EINVAL)
		SKIP("st_poke_disk: the file system refuses O_DIRECT");
	CHECK(dfd >= 0);
	uint8_t *b = NULL;
	CHECK_EQ(posix_memalign((void **)&b, al, z - a), 0);
	memset(b, 0, z - a);
	CHECK(pread(dfd, b, z - a, (off_t)a) >= (ssize_t)(off + len - a));
	memcpy(b + (off - a), buf, len);
	CHECK_EQ(pwrite(dfd, b, z - a, (off_t)a), (ssize_t)(z - a));
	free(b);
	close(dfd);
}

bool st_direct_possible(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/direct-probe", dir);
	int fd = open(p, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0 && errno == EINVAL) {
		printf("O_DIRECT half skipped: open(O_DIRECT) in %s fails with EINVAL\n", dir);
		return false;
	}
	CHECK(fd >= 0);
	close(fd);
	unlink(p);
	return true;
}

void st_private_mounts(void)
{
	if (unshare(CLONE_NEWNS)) {
		uid_t uid = getuid();
		gid_t gid = getgid();
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
			SKIP("no mount namespace (not root, no user namespaces): %s\n",
			     strerror(errno));
		/* map ourselves, so that files we make have an owner */
		char m[64];
		FILE *f = fopen("/proc/self/setgroups", "w");
		if (f) {
			fputs("deny", f);
			fclose(f);
		}
		snprintf(m, sizeof(m), "0 %u 1", (unsigned)uid);
		f = fopen("/proc/self/uid_map", "w");
		CHECK(f && fputs(m, f) >= 0 && fclose(f) == 0);
		snprintf(m, sizeof(m), "0 %u 1", (unsigned)gid);
		f = fopen("/proc/self/gid_map", "w");
		CHECK(f && fputs(m, f) >= 0 && fclose(f) == 0);
	}
	CHECK_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
}
