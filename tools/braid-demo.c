/* SPDX-License-Identifier: MIT */
/*
 * braid-demo: what tools/braid-up shows a new user.  Through our userspace
 * NFSv4.1 + flexfiles client (client/ffclient.h, the same protocol path as
 * the stock Linux client: OPEN, LAYOUTGET, GETDEVICEINFO, then I/O straight
 * to the data servers), it writes a dataset of many files and one large
 * file into directories of a running cluster, reads everything back and
 * checks every byte, with a progress bar and the throughput at the end, and
 * says how many bytes each data server moved.
 *
 * Usage: braid-demo [--mds HOST:PORT] [--files N] [--file-size SIZE]
 *                   [--big-size SIZE] [--dir PATH] [--big-dir PATH] [--check]
 * --check reads back and checks what an earlier run (with the same sizes
 * and paths) wrote, writing nothing: e.g. with a data server down.
 * The large file goes under --big-dir (default /striped, which
 * tools/braid-cluster exports with segment striping).
 * Exit 0 when everything read back as written.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/ffclient.h"

#define CHUNK (16u << 20) /* one ffc_pwrite/pread: 16 RPCs of 1 MiB in flight */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	case 0: break;
	default:
		fprintf(stderr, "braid-demo: bad size %s\n", s);
		exit(2);
	}
	return (uint64_t)v;
}

/* The bytes of file 'id' at 'off': cheap to make, different everywhere. */
static void fill(uint8_t *buf, size_t len, uint64_t id, uint64_t off)
{
	uint64_t *w = (uint64_t *)buf;
	for (size_t i = 0; i < len / 8; i++) {
		uint64_t x = (id + 1) * 0x9e3779b97f4a7c15ULL ^ (off / 8 + i) * 0xbf58476d1ce4e5b9ULL;
		x ^= x >> 31;
		w[i] = x * 0x94d049bb133111ebULL;
	}
}

struct progress {
	const char *what;
	uint64_t total, done;
	double start, last;
};

static void progress_show(struct progress *p, bool final)
{
	double t = now();
	if (!final && t - p->last < 0.2)
		return;
	p->last = t;
	int width = 30, n = p->total ? (int)(width * p->done / p->total) : width;
	double mbs = p->done / 1e6 / (t - p->start > 1e-6 ? t - p->start : 1e-6);
	fprintf(stderr, "\r  %-24s [%.*s%*s] %3d%%  %7.0f MB/s", p->what, n,
		"##############################", width - n, "",
		p->total ? (int)(100 * p->done / p->total) : 100, mbs);
	if (final)
		fputc('\n', stderr);
}

/*
 * "host:port" ("[v6]:port") of a data server as GETDEVICEINFO names it,
 * "netid uaddr" with the RFC 5665 universal address ("tcp 127.0.0.1.8.5":
 * the port's two bytes after the host); anything else as it came.
 */
static const char *host_port(const char *addr, char *out, size_t len)
{
	const char *ua = strchr(addr, ' ');
	const char *lo = ua ? strrchr(ua, '.') : NULL;
	const char *hi = lo;
	while (hi && hi > ua + 1 && hi[-1] != '.')
		hi--;
	unsigned ph, pl;
	char end;
	if (!lo || hi <= ua + 2 || sscanf(hi, "%u.%u%c", &ph, &pl, &end) != 2 || ph > 255 ||
	    pl > 255) {
		snprintf(out, len, "%s", addr);
		return out;
	}
	int hlen = (int)(hi - 1 - (ua + 1));
	bool v6 = memchr(ua + 1, ':', (size_t)hlen) != NULL;
	snprintf(out, len, "%s%.*s%s:%u", v6 ? "[" : "", hlen, ua + 1, v6 ? "]" : "", ph << 8 | pl);
	return out;
}

/* Write (or read and check) one file of 'size' bytes. */
static int do_file(struct ffc *c, const char *path, uint64_t id, uint64_t size, bool write,
		   uint8_t *buf, uint8_t *want, struct progress *p)
{
	int err = 0;
	struct ffc_file *f = ffc_open(c, path, write ? FFC_WRONLY | FFC_CREAT | FFC_TRUNC : FFC_RDONLY,
				      0644, &err);
	if (!f) {
		fprintf(stderr, "\nbraid-demo: open %s: %s\n", path, strerror(-err));
		return -1;
	}
	for (uint64_t off = 0; off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		ssize_t r;
		if (write) {
			fill(buf, n, id, off);
			r = ffc_pwrite(f, buf, n, off);
		} else {
			r = ffc_pread(f, buf, n, off);
			fill(want, n, id, off);
		}
		if (r != (ssize_t)n) {
			fprintf(stderr, "\nbraid-demo: %s %s at %llu: %s\n", write ? "write" : "read",
				path, (unsigned long long)off, r < 0 ? strerror((int)-r) : "short");
			ffc_close(f);
			return -1;
		}
		if (!write && memcmp(buf, want, n)) {
			fprintf(stderr, "\nbraid-demo: %s: data differs in [%llu, %llu)\n", path,
				(unsigned long long)off, (unsigned long long)(off + n));
			ffc_close(f);
			return -1;
		}
		p->done += n;
		progress_show(p, false);
	}
	if (write && (err = ffc_fsync(f))) {
		fprintf(stderr, "\nbraid-demo: fsync %s: %s\n", path, strerror(-err));
		ffc_close(f);
		return -1;
	}
	if ((err = ffc_close(f))) {
		fprintf(stderr, "\nbraid-demo: close %s: %s\n", path, strerror(-err));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mds = "127.0.0.1:2049", *dir = "/demo", *bigdir_arg = "/striped";
	unsigned nfiles = 64;
	uint64_t file_size = 16ull << 20, big_size = 1ull << 30;
	bool check_only = false;
	static const struct option lo[] = {
		{ "mds", required_argument, NULL, 'm' },   { "files", required_argument, NULL, 'n' },
		{ "file-size", required_argument, NULL, 's' },
		{ "big-size", required_argument, NULL, 'b' },
		{ "dir", required_argument, NULL, 'd' },   { "big-dir", required_argument, NULL, 'B' },
		{ "check", no_argument, NULL, 'c' },	   { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'm': mds = optarg; break;
		case 'n': nfiles = (unsigned)atoi(optarg); break;
		case 's': file_size = parse_size(optarg); break;
		case 'b': big_size = parse_size(optarg); break;
		case 'd': dir = optarg; break;
		case 'B': bigdir_arg = optarg; break;
		case 'c': check_only = true; break;
		default:
			fprintf(ch == 'h' ? stdout : stderr,
				"usage: braid-demo [--mds HOST:PORT] [--files N] [--file-size SIZE] "
				"[--big-size SIZE] [--dir PATH] [--big-dir PATH] [--check]\n");
			return ch == 'h' ? 0 : 2;
		}
	}
	char host[256];
	snprintf(host, sizeof(host), "%s", mds);
	char *colon = strrchr(host, ':');
	int port = colon ? atoi(colon + 1) : 2049;
	if (colon)
		*colon = 0;

	int err = 0;
	struct ffc_opts o = { .owner = NULL };
	struct ffc *c = ffc_mount(host, port, &o, &err);
	if (!c) {
		fprintf(stderr, "braid-demo: cannot mount %s: %s (is the cluster running? "
				"tools/braid-cluster status)\n",
			mds, strerror(-err));
		return 1;
	}
	char path[4096], dset[2048], bigdir[2048];
	snprintf(dset, sizeof(dset), "%s/dataset", dir);
	snprintf(bigdir, sizeof(bigdir), "%s/demo", bigdir_arg);
	ffc_mkdir(c, dir, 0755);
	ffc_mkdir(c, dset, 0755);
	ffc_mkdir(c, bigdir_arg, 0755);
	ffc_mkdir(c, bigdir, 0755);

	uint8_t *buf = malloc(CHUNK), *want = malloc(CHUNK);
	if (!buf || !want)
		return 1;
	uint64_t dataset = (uint64_t)nfiles * file_size;
	printf("braid-demo: %u files of %.0f MiB in %s, and one %.0f MiB file in %s\n", nfiles,
	       file_size / 1048576.0, dset, big_size / 1048576.0, bigdir);
	fflush(stdout);
	double t_write = 0, t_read = 0;
	int rc = 0;
	for (int pass = check_only; pass < 2 && !rc; pass++) {
		bool write = pass == 0;
		struct progress p = { .what = write ? "write dataset" : "read + check dataset",
				      .total = dataset, .start = now() };
		double t0 = now();
		for (unsigned i = 0; i < nfiles && !rc; i++) {
			snprintf(path, sizeof(path), "%s/shard-%05u", dset, i);
			rc = do_file(c, path, i, file_size, write, buf, want, &p);
		}
		progress_show(&p, true);
		struct progress q = { .what = write ? "write large file" : "read + check large file",
				      .total = big_size, .start = now() };
		snprintf(path, sizeof(path), "%s/large", bigdir);
		if (!rc)
			rc = do_file(c, path, 1u << 30, big_size, write, buf, want, &q);
		progress_show(&q, true);
		*(write ? &t_write : &t_read) = now() - t0;
	}
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	uint64_t total = dataset + big_size;
	if (!rc) {
		if (check_only)
			printf("braid-demo: read and checked %.2f GB at %.0f MB/s\n", total / 1e9,
			       total / 1e6 / t_read);
		else
			printf("braid-demo: wrote %.2f GB at %.0f MB/s, read and checked it at "
			       "%.0f MB/s\n",
			       total / 1e9, total / 1e6 / t_write, total / 1e6 / t_read);
		if (st.pnfs && st.layoutget_ok)
			printf("braid-demo: pNFS flexfiles: %llu layouts; %.0f%% of the bytes went "
			       "straight to the data servers:\n",
			       (unsigned long long)st.layoutget_ok,
			       100.0 * (st.ds_read_bytes + st.ds_write_bytes) /
				       (double)(st.ds_read_bytes + st.ds_write_bytes +
						st.mds_read_bytes + st.mds_write_bytes + 1));
		else
			printf("braid-demo: no layouts (%s): all data went through the MDS\n",
			       st.pnfs_why[0] ? st.pnfs_why : "the MDS gave none");
		for (unsigned i = 0; i < st.ndev && i < FFC_STATS_DEV_MAX; i++) {
			char hp[sizeof(st.dev[i].addr) + 4];
			printf("  data server %-28s wrote %8.1f MB  read %8.1f MB\n",
			       host_port(st.dev[i].addr, hp, sizeof(hp)),
			       st.dev[i].write_bytes / 1e6, st.dev[i].read_bytes / 1e6);
		}
	}
	free(buf);
	free(want);
	ffc_unmount(c);
	return rc ? 1 : 0;
}
