/*
 * vmtool: what the Linux-client workload (tests/linux-client/posix.sh) needs
 * and the guest's busybox lacks.  Built static on the host and copied into
 * the guest (clientvm --files), so it must not depend on anything but libc.
 *
 *   vmtool lock FILE START LEN       F_SETLKW write lock; print "locked"; wait
 *                                    until FILE.release exists; unlock; exit 0
 *   vmtool trylock FILE START LEN    F_SETLK write lock: exit 0 acquired (and
 *                                    released), 1 conflict (EAGAIN/EACCES), 2 error
 *   vmtool getlk FILE START LEN      F_GETLK for a write lock: print "unlocked"
 *                                    and exit 0, or "locked pid=P type=T start=S
 *                                    len=L" and exit 1; 2 error
 *   vmtool mmapwrite FILE SIZE PAT   ftruncate to SIZE, mmap MAP_SHARED, fill
 *                                    with PAT repeated, msync, munmap
 *   vmtool readcheck FILE SIZE PAT   read(2) FILE, check it is SIZE bytes of PAT
 *                                    repeated
 *   vmtool openunlinkread FILE       create FILE, write, unlink, check the name
 *                                    is gone, read the data back through the fd
 *   vmtool utimes FILE SEC           set atime and mtime to SEC
 *   vmtool stat FILE                 print "mode uid gid size mtime nlink"
 *                                    (mode in octal, lstat)
 *
 * Exit status: 0 success, 1 check failed (or lock conflict), 2 error/usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int err(const char *what, const char *file)
{
	fprintf(stderr, "vmtool: %s %s: %s\n", what, file, strerror(errno));
	return 2;
}

static int num(const char *s, long long *v)
{
	char *end;
	errno = 0;
	*v = strtoll(s, &end, 0);
	if (errno || end == s || *end || *v < 0) {
		fprintf(stderr, "vmtool: bad number '%s'\n", s);
		return -1;
	}
	return 0;
}

static void range(struct flock *fl, short type, long long start, long long len)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = (off_t)start;
	fl->l_len = (off_t)len;
}

static int do_lock(const char *file, long long start, long long len)
{
	int fd = open(file, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return err("open", file);
	struct flock fl;
	range(&fl, F_WRLCK, start, len);
	while (fcntl(fd, F_SETLKW, &fl) < 0)
		if (errno != EINTR)
			return err("F_SETLKW", file);
	printf("locked\n");
	fflush(stdout);

	char rel[4096];
	if (snprintf(rel, sizeof(rel), "%s.release", file) >= (int)sizeof(rel)) {
		fprintf(stderr, "vmtool: name too long\n");
		return 2;
	}
	/* At most 10 minutes, so a broken workload cannot hang the guest. */
	struct stat st;
	int i;
	for (i = 0; i < 12000 && stat(rel, &st) < 0; i++)
		usleep(50000);
	if (i == 12000) {
		fprintf(stderr, "vmtool: %s never appeared\n", rel);
		return 2;
	}
	range(&fl, F_UNLCK, start, len);
	if (fcntl(fd, F_SETLK, &fl) < 0)
		return err("unlock", file);
	if (close(fd) < 0)
		return err("close", file);
	return 0;
}

static int do_trylock(const char *file, long long start, long long len)
{
	int fd = open(file, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return err("open", file);
	struct flock fl;
	range(&fl, F_WRLCK, start, len);
	if (fcntl(fd, F_SETLK, &fl) < 0) {
		int e = errno;
		close(fd);
		if (e == EAGAIN || e == EACCES)
			return 1;
		errno = e;
		return err("F_SETLK", file);
	}
	range(&fl, F_UNLCK, start, len);
	if (fcntl(fd, F_SETLK, &fl) < 0)
		return err("unlock", file);
	if (close(fd) < 0)
		return err("close", file);
	return 0;
}

static int do_getlk(const char *file, long long start, long long len)
{
	int fd = open(file, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return err("open", file);
	struct flock fl;
	range(&fl, F_WRLCK, start, len);
	if (fcntl(fd, F_GETLK, &fl) < 0)
		return err("F_GETLK", file);
	close(fd);
	if (fl.l_type == F_UNLCK) {
		printf("unlocked\n");
		return 0;
	}
	printf("locked pid=%ld type=%s start=%lld len=%lld\n", (long)fl.l_pid,
	       fl.l_type == F_WRLCK ? "W" : "R", (long long)fl.l_start, (long long)fl.l_len);
	return 1;
}

static unsigned char pat_at(const char *pat, size_t plen, long long i)
{
	return (unsigned char)pat[i % (long long)plen];
}

static int do_mmapwrite(const char *file, long long size, const char *pat)
{
	size_t plen = strlen(pat);
	if (!plen || size <= 0) {
		fprintf(stderr, "vmtool: mmapwrite needs SIZE > 0 and a pattern\n");
		return 2;
	}
	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return err("open", file);
	if (ftruncate(fd, (off_t)size) < 0)
		return err("ftruncate", file);
	unsigned char *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return err("mmap", file);
	for (long long i = 0; i < size; i++)
		p[i] = pat_at(pat, plen, i);
	if (msync(p, (size_t)size, MS_SYNC) < 0)
		return err("msync", file);
	if (munmap(p, (size_t)size) < 0)
		return err("munmap", file);
	if (close(fd) < 0)
		return err("close", file);
	return 0;
}

/* Compare what read(2) returns from fd with SIZE bytes of PAT repeated. */
static int check_fd(int fd, const char *file, long long size, const char *pat)
{
	size_t plen = strlen(pat);
	unsigned char buf[65536];
	long long off = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err("read", file);
		}
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++, off++)
			if (off >= size || buf[i] != pat_at(pat, plen, off)) {
				fprintf(stderr, "vmtool: %s: wrong data at offset %lld\n", file, off);
				return 1;
			}
	}
	if (off != size) {
		fprintf(stderr, "vmtool: %s: read %lld bytes, expected %lld\n", file, off, size);
		return 1;
	}
	return 0;
}

static int do_readcheck(const char *file, long long size, const char *pat)
{
	if (!*pat) {
		fprintf(stderr, "vmtool: empty pattern\n");
		return 2;
	}
	int fd = open(file, O_RDONLY);
	if (fd < 0)
		return err("open", file);
	int rc = check_fd(fd, file, size, pat);
	close(fd);
	return rc;
}

static int do_openunlinkread(const char *file)
{
	static const char pat[] = "open-unlink-read ";
	const long long size = 200000; /* several pages, not page aligned */
	size_t plen = strlen(pat);
	int fd = open(file, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return err("create", file);
	unsigned char buf[4096];
	for (long long off = 0; off < size;) {
		size_t n = sizeof(buf);
		if ((long long)n > size - off)
			n = (size_t)(size - off);
		for (size_t i = 0; i < n; i++)
			buf[i] = pat_at(pat, plen, off + (long long)i);
		ssize_t w = write(fd, buf, n);
		if (w < 0)
			return err("write", file);
		off += w;
	}
	if (fsync(fd) < 0)
		return err("fsync", file);
	if (unlink(file) < 0)
		return err("unlink", file);
	struct stat st;
	if (stat(file, &st) == 0 || errno != ENOENT) {
		fprintf(stderr, "vmtool: %s still reachable by name after unlink\n", file);
		return 1;
	}
	if (fstat(fd, &st) < 0)
		return err("fstat", file);
	if (st.st_size != size) {
		fprintf(stderr, "vmtool: %s: fstat size %lld after unlink, expected %lld\n", file,
			(long long)st.st_size, size);
		return 1;
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		return err("lseek", file);
	int rc = check_fd(fd, file, size, pat);
	/* and once more after writing through the unlinked file */
	if (rc == 0 && pwrite(fd, "X", 1, 0) != 1)
		return err("pwrite", file);
	if (rc == 0 && (pread(fd, buf, 1, 0) != 1 || buf[0] != 'X')) {
		fprintf(stderr, "vmtool: %s: write after unlink not read back\n", file);
		rc = 1;
	}
	if (close(fd) < 0)
		return err("close", file);
	return rc;
}

static int do_utimes(const char *file, long long sec)
{
	struct timeval tv[2] = { { .tv_sec = (time_t)sec }, { .tv_sec = (time_t)sec } };
	if (utimes(file, tv) < 0)
		return err("utimes", file);
	return 0;
}

static int do_stat(const char *file)
{
	struct stat st;
	if (lstat(file, &st) < 0)
		return err("lstat", file);
	printf("%o %u %u %lld %lld %lu\n", (unsigned)st.st_mode, (unsigned)st.st_uid,
	       (unsigned)st.st_gid, (long long)st.st_size, (long long)st.st_mtime,
	       (unsigned long)st.st_nlink);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: vmtool lock|trylock|getlk FILE START LEN\n"
			"       vmtool mmapwrite|readcheck FILE SIZE PATTERN\n"
			"       vmtool openunlinkread FILE\n"
			"       vmtool utimes FILE SEC\n"
			"       vmtool stat FILE\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	const char *cmd = argv[1], *file = argv[2];
	long long a = 0, b = 0;
	if (!strcmp(cmd, "lock") || !strcmp(cmd, "trylock") || !strcmp(cmd, "getlk")) {
		if (argc != 5 || num(argv[3], &a) || num(argv[4], &b))
			return usage();
		if (!strcmp(cmd, "lock"))
			return do_lock(file, a, b);
		if (!strcmp(cmd, "trylock"))
			return do_trylock(file, a, b);
		return do_getlk(file, a, b);
	}
	if (!strcmp(cmd, "mmapwrite") || !strcmp(cmd, "readcheck")) {
		if (argc != 5 || num(argv[3], &a))
			return usage();
		if (!strcmp(cmd, "mmapwrite"))
			return do_mmapwrite(file, a, argv[4]);
		return do_readcheck(file, a, argv[4]);
	}
	if (!strcmp(cmd, "openunlinkread") && argc == 3)
		return do_openunlinkread(file);
	if (!strcmp(cmd, "utimes") && argc == 4 && !num(argv[3], &a))
		return do_utimes(file, a);
	if (!strcmp(cmd, "stat") && argc == 3)
		return do_stat(file);
	return usage();
}
