/* SPDX-License-Identifier: MIT */
/*
 * COPY (braid_ctl.x): a data server copies an object from another one, the
 * MDS (here the test, with the cluster key) only directing.  Three data
 * servers and no MDS: the source runs as a braid-ds process (so it can be
 * stopped and killed), the destinations in this process.
 *
 * Proves: copies of 0 bytes, 1 byte, unaligned sizes, a sparse object (its
 * holes stay holes) and ~70 MiB (several calls) are byte- and size-exact,
 * into a missing object and over a stale one that is longer, differs and
 * has another owner; a repeated call is harmless; rate limits are kept; a
 * block failing its CRC at the source fails the copy and is never written
 * as good; a source that hangs (SIGSTOP), is killed (SIGKILL) or is gone
 * gives SOURCE_DOWN within a bounded time; bad arguments, an unknown
 * object, another generation, a source that is the destination (by its
 * address, or through a forwarder) and an unsigned caller get their
 * statuses, never a crash.
 */
#include "config.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/dataserver/ds-test.h"

#define MiB (1u << 20)

struct node {
	char dir[4200], conf[4300];
	struct ds_settings set;
	struct braid_ds *ds; /* in this process */
	pid_t pid;	     /* or a braid-ds process */
	int port;
	struct nfsd_clnt *c;
	char uaddr[64];
};

static const char *tmp;
static char key_path[4200], bin[4200];
static struct braid_key key;
static struct nfsd_server *eng;
static struct node A, B, C; /* A: the source (a process); B, C: destinations */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void node_conf(struct node *n, const char *name)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->dir, sizeof(n->dir), "%s/%s", tmp, name);
	CHECK(mkdir(n->dir, 0700) == 0);
	snprintf(n->conf, sizeof(n->conf), "%s/ds.conf", n->dir);
	char conf[9000];
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/store\nkey_file = %s\nlisten = 127.0.0.1:0\nnfs41 = no\n",
		 n->dir, key_path);
	dt_write_file(n->conf, conf, 0644);
}

static void node_connect(struct node *n)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)n->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	/* a COPY call may take seconds */
	struct nfsd_clnt_opts o = {.timeout_ms = DS_CTL_COPY_TIMEOUT_MS, .reconnect = true};
	int err = 0;
	n->c = nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(n->c);
	snprintf(n->uaddr, sizeof(n->uaddr), "127.0.0.1.%d.%d", n->port >> 8, n->port & 255);
}

static void node_start(struct node *n)
{
	n->ds = dt_ds_start(n->conf, &n->set);
	n->port = braid_ds_port(n->ds, 0);
	node_connect(n);
}

/* braid-ds -c conf as a process; its port from --ready-fd. */
static void node_spawn(struct node *n)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", p[1]);
		execl(bin, "braid-ds", "-c", n->conf, "--ready-fd", fd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char line[256] = {0};
	ssize_t k = 0, r;
	while (k < (ssize_t)sizeof(line) - 1 &&
	       (r = read(p[0], line + k, sizeof(line) - 1 - (size_t)k)) > 0)
		k += r;
	close(p[0]);
	CHECK(sscanf(line, "READY %d", &n->port) == 1);
	n->pid = pid;
	node_connect(n);
}

/* At exit, a failed check included: no braid-ds of ours is left running
 * (it would hold make check's pipe open). */
static void source_reap(void)
{
	if (A.pid > 0) {
		kill(A.pid, SIGKILL);
		waitpid(A.pid, NULL, 0);
		A.pid = 0;
	}
}

static void node_kill(struct node *n)
{
	nfsd_clnt_free(n->c);
	n->c = NULL;
	CHECK(kill(n->pid, SIGKILL) == 0);
	int ws;
	CHECK(waitpid(n->pid, &ws, 0) == n->pid);
	n->pid = 0;
}

/* ---------------------------------------------------------- objects */

/* Object n of the test, generation 1 unless said. */
static struct ds_objid oid(unsigned n)
{
	return dt_id(n, 1);
}

static void put(struct node *n, const struct ds_objid *id, uint64_t off, const uint8_t *buf,
		size_t len, uint32_t uid)
{
	uint8_t fh[DS_FH_SIZE];
	ds_fh_make(&key, id, fh);
	for (size_t done = 0; done < len;) {
		uint32_t k = len - done < MiB ? (uint32_t)(len - done) : MiB;
		CHECK_EQ(
		    dt_write(n->c, fh, DS_FH_SIZE, off + done, buf + done, k, UNSTABLE, NULL, uid),
		    NFS3_OK);
		done += k;
	}
}

/* An object of size bytes, data[0..size), made on n (owner DT_UID, 0600). */
static void make(struct node *n, const struct ds_objid *id, const uint8_t *data, uint64_t size)
{
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	CHECK_EQ(ds_ctl_create(n->c, &key, id, DT_UID, DT_GID, 0600, fh, &fhlen), 0);
	put(n, id, 0, data, (size_t)size, DT_UID);
	CHECK_EQ(ds_ctl_truncate(n->c, &key, id, size), 0);
}

/* n's object id is exactly data[0..size) (read as DT_UID). */
static void expect(struct node *n, const struct ds_objid *id, const uint8_t *data, uint64_t size)
{
	struct ds_ctl_stat s;
	CHECK_EQ(ds_ctl_stat(n->c, &key, id, &s), 0);
	CHECK_EQ(s.size, size);
	uint8_t fh[DS_FH_SIZE];
	ds_fh_make(&key, id, fh);
	static uint8_t buf[MiB];
	uint64_t off = 0;
	for (;;) {
		uint32_t got = 0;
		bool eof = false;
		CHECK_EQ(dt_read(n->c, fh, DS_FH_SIZE, off, MiB, buf, &got, &eof, DT_UID), NFS3_OK);
		CHECK(off + got <= size);
		if (memcmp(buf, data + off, got)) {
			for (uint32_t i = 0; i < got; i++)
				if (buf[i] != data[off + i]) {
					fprintf(stderr, "byte %llu differs\n",
						(unsigned long long)(off + i));
					break;
				}
			CHECK(0);
		}
		off += got;
		if (eof)
			break;
		CHECK(got > 0);
	}
	CHECK_EQ(off, size);
}

static struct ds_ctl_copy_args args_of(const struct node *src, const struct ds_objid *id)
{
	struct ds_ctl_copy_args a = {.id = *id,
				     .nsrc = 1,
				     .uid = DT_UID,
				     .gid = DT_GID,
				     .mode = 0600,
				     .count = DS_CTL_COPY_MAX};
	a.src[0].netid = "tcp";
	a.src[0].uaddr = src->uaddr;
	return a;
}

/* A whole pass from src into dst; returns the number of calls. */
static unsigned copy_ok(struct node *dst, struct node *src, const struct ds_objid *id,
			uint64_t count)
{
	struct ds_ctl_copy_args a = args_of(src, id);
	if (count)
		a.count = count;
	struct ds_ctl_copy_res r;
	unsigned calls = 0;
	int rc = ds_ctl_copy_pass(dst->c, &key, &a, &r, &calls);
	if (rc)
		fprintf(stderr, "copy: %d side %d at %llu\n", rc, r.side,
			(unsigned long long)r.next);
	CHECK_EQ(rc, 0);
	CHECK(r.done);
	CHECK_EQ(r.next, r.src_size);
	return calls;
}

/* ------------------------------------------------------------ tests */

static uint8_t *big; /* 72 MiB of pattern */
#define BIG (72u * MiB + 4321)

static void t_sizes(void)
{
	static const uint64_t sizes[] = {0, 1, 4095, 4096, 4097, 65537, MiB + 123, 3 * MiB - 5};
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ds_objid id = oid(100 + i);
		make(&A, &id, big, sizes[i]);
		CHECK_EQ(copy_ok(&B, &A, &id, 0), 1);
		expect(&B, &id, big, sizes[i]);
		/* the copy is owned by the fence: a client with it may write */
		uint8_t fh[DS_FH_SIZE];
		ds_fh_make(&key, &id, fh);
		CHECK_EQ(dt_write(B.c, fh, DS_FH_SIZE, 0, "x", 1, UNSTABLE, NULL, DT_UID + 7),
			 NFS3ERR_ACCES);
	}
}

static void t_big(void)
{
	struct ds_objid id = oid(200);
	make(&A, &id, big, BIG);
	/* 64 MiB per call at most: two calls */
	double t = now_s();
	CHECK_EQ(copy_ok(&B, &A, &id, 0), 2);
	printf("copy of %u bytes in 2 calls: %.2f s\n", BIG, now_s() - t);
	expect(&B, &id, big, BIG);
	/* smaller calls, an unaligned size per call included */
	CHECK(copy_ok(&C, &A, &id, 7 * MiB + 3) >= 10);
	expect(&C, &id, big, BIG);
}

static void t_sparse(void)
{
	struct ds_objid id = oid(300);
	static uint8_t want[20 * MiB + 7];
	memset(want, 0, sizeof(want));
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	CHECK_EQ(ds_ctl_create(A.c, &key, &id, DT_UID, DT_GID, 0600, fh, &fhlen), 0);
	/* data at 0, in the middle of a MiB, across a MiB boundary; a hole to the end */
	const struct {
		uint64_t off, len;
	} ext[] = {{0, 4096}, {5 * MiB + 1000, 5000}, {9 * MiB - 2048, 8192}};
	for (unsigned i = 0; i < 3; i++) {
		memcpy(want + ext[i].off, big + ext[i].off, ext[i].len);
		put(&A, &id, ext[i].off, big + ext[i].off, ext[i].len, DT_UID);
	}
	CHECK_EQ(ds_ctl_truncate(A.c, &key, &id, sizeof(want)), 0);
	struct ds_ctl_copy_args a = args_of(&A, &id);
	struct ds_ctl_copy_res r;
	CHECK_EQ(ds_ctl_copy_pass(B.c, &key, &a, &r, NULL), 0);
	CHECK(r.done);
	CHECK_EQ(r.read, sizeof(want));
	CHECK(r.written <= 6 * 4096); /* the blocks holding data, no more */
	expect(&B, &id, want, sizeof(want));
	struct ds_ctl_stat s;
	CHECK_EQ(ds_ctl_stat(B.c, &key, &id, &s), 0);
	CHECK(s.used < MiB); /* the holes stayed holes */
}

static void t_stale(void)
{
	struct ds_objid id = oid(400);
	make(&A, &id, big, 3 * MiB + 17);
	/* B holds an older, longer, different copy under another owner */
	static uint8_t old[9 * MiB];
	dt_fill(old, 0, sizeof(old), 77);
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	CHECK_EQ(ds_ctl_create(B.c, &key, &id, DT_UID + 1, DT_GID + 1, 0600, fh, &fhlen), 0);
	put(&B, &id, 0, old, sizeof(old), DT_UID + 1);
	CHECK_EQ(copy_ok(&B, &A, &id, 0), 1);
	expect(&B, &id, big, 3 * MiB + 17);
	/* a stale copy with holes where the source has zeros... */
	struct ds_objid z = oid(401);
	static uint8_t zero[2 * MiB];
	memset(zero, 0, sizeof(zero));
	make(&A, &z, zero, sizeof(zero));
	CHECK_EQ(ds_ctl_create(B.c, &key, &z, DT_UID, DT_GID, 0600, fh, &fhlen), 0);
	put(&B, &z, 0, old, sizeof(zero), DT_UID);
	CHECK_EQ(copy_ok(&B, &A, &z, 0), 1);
	expect(&B, &z, zero, sizeof(zero)); /* ...is zeros, not its old bytes */
	/* a source grown since: copied again, from the start */
	put(&A, &id, 3 * MiB + 17, big + 3 * MiB + 17, MiB, DT_UID);
	CHECK_EQ(copy_ok(&B, &A, &id, 0), 1);
	expect(&B, &id, big, 4 * MiB + 17);
	/* shrunk since */
	CHECK_EQ(ds_ctl_truncate(A.c, &key, &id, 5000), 0);
	CHECK_EQ(copy_ok(&B, &A, &id, 0), 1);
	expect(&B, &id, big, 5000);
}

/* A call repeated (a retransmission), and calls past the end. */
static void t_repeat(void)
{
	struct ds_objid id = oid(500);
	make(&A, &id, big, 10 * MiB + 1);
	struct ds_ctl_copy_args a = args_of(&A, &id);
	a.count = 4 * MiB;
	struct ds_ctl_copy_res r, r2;
	CHECK_EQ(ds_ctl_copy(B.c, &key, &a, &r), 0);
	CHECK(!r.done);
	CHECK_EQ(r.next, 4 * MiB);
	CHECK_EQ(r.src_size, 10 * MiB + 1);
	CHECK_EQ(ds_ctl_copy(B.c, &key, &a, &r2), 0); /* the same call again */
	CHECK_EQ(r2.next, 4 * MiB);
	a.offset = r.next;
	a.count = DS_CTL_COPY_MAX;
	CHECK_EQ(ds_ctl_copy(B.c, &key, &a, &r), 0);
	CHECK(r.done);
	CHECK_EQ(r.next, 10 * MiB + 1);
	CHECK_EQ(ds_ctl_copy(B.c, &key, &a, &r2), 0); /* the last call again */
	CHECK(r2.done);
	expect(&B, &id, big, 10 * MiB + 1);
	/* from past the source's end: done, and the size is the source's */
	a.offset = 20 * MiB;
	CHECK_EQ(ds_ctl_copy(B.c, &key, &a, &r), 0);
	CHECK(r.done);
	CHECK_EQ(r.next, 10 * MiB + 1);
	CHECK_EQ(r.read, 0);
	expect(&B, &id, big, 10 * MiB + 1);
}

static void t_rate(void)
{
	struct ds_objid id = oid(600);
	make(&A, &id, big, 12 * MiB);
	struct ds_ctl_copy_args a = args_of(&A, &id);
	a.rate = 4 * MiB; /* bytes/s: 3 s at least, past one call's 2 s */
	struct ds_ctl_copy_res r;
	unsigned calls;
	double t = now_s();
	CHECK_EQ(ds_ctl_copy_pass(B.c, &key, &a, &r, &calls), 0);
	double dt = now_s() - t;
	printf("12 MiB at 4 MiB/s: %.2f s in %u calls\n", dt, calls);
	CHECK(dt >= 2.9 && dt < 6.0);
	CHECK(calls >= 2);
	expect(&B, &id, big, 12 * MiB);
	/* a rate too low to move anything counts as 64 KiB/s: progress */
	a.rate = 1;
	a.offset = 0;
	t = now_s();
	CHECK_EQ(ds_ctl_copy(C.c, &key, &a, &r), 0);
	CHECK(!r.done);
	CHECK(r.next >= 64 * 1024 && r.next <= 3 * 64 * 1024);
	CHECK(now_s() - t < 3.0);
}

/* n's bytes [off, off + len) of id are zeros (or past its end). */
static void expect_zeros(struct node *n, const struct ds_objid *id, uint64_t off, uint32_t len)
{
	uint8_t fh[DS_FH_SIZE];
	ds_fh_make(&key, id, fh);
	static uint8_t buf[MiB];
	uint32_t got = 0;
	bool eof = false;
	CHECK(len <= MiB);
	CHECK_EQ(dt_read(n->c, fh, DS_FH_SIZE, off, len, buf, &got, &eof, DT_UID), NFS3_OK);
	for (uint32_t i = 0; i < got; i++)
		CHECK_EQ(buf[i], 0);
}

/* A bad block at the source: IO on the source's side, never written here. */
static void t_crc(void)
{
	struct ds_objid id = oid(700);
	make(&A, &id, big, 8 * MiB);
	char path[4400];
	snprintf(path, sizeof(path), "%s/store", A.dir);
	char data[4600];
	st_obj_path(path, &id, "", data, sizeof(data));
	uint64_t bad = 5 * MiB + 100;
	uint8_t b = (uint8_t)(big[bad] ^ 0x5a);
	int fd = open(data, O_RDWR);
	CHECK(fd >= 0);
	st_poke_disk(fd, bad, &b, 1);
	close(fd);
	struct ds_ctl_copy_args a = args_of(&A, &id);
	struct ds_ctl_copy_res r;
	CHECK_EQ(ds_ctl_copy(B.c, &key, &a, &r), -EIO);
	CHECK_EQ(r.side, DS_CTL_COPY_SOURCE);
	CHECK(!r.done);
	CHECK(r.next <= 5 * MiB); /* no further than the bad MiB */
	expect_zeros(&B, &id, 5 * MiB, MiB);
	/* mended at the source (a whole block, no read-back): resume where it stopped */
	put(&A, &id, 5 * MiB, big + 5 * MiB, 4096, DT_UID);
	a.offset = r.next;
	unsigned calls;
	CHECK_EQ(ds_ctl_copy_pass(B.c, &key, &a, &r, &calls), 0);
	CHECK(r.done);
	expect(&B, &id, big, 8 * MiB);
}

/* --------------------------------------------------- bad arguments */

static int copy_err(struct node *dst, const struct ds_ctl_copy_args *a, enum ds_ctl_copy_side side)
{
	struct ds_ctl_copy_res r;
	int rc = ds_ctl_copy(dst->c, &key, a, &r);
	CHECK(rc != 0);
	CHECK_EQ(r.side, side);
	CHECK(!r.done);
	return rc;
}

/* A TCP forwarder to a port: the data server behind it under another address. */
static int fwd_lfd, fwd_to;
static atomic_bool fwd_stop;

static void *fwd_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&fwd_stop)) {
		struct pollfd lp = {.fd = fwd_lfd, .events = POLLIN};
		if (poll(&lp, 1, 100) <= 0)
			continue;
		int a = accept(fwd_lfd, NULL, NULL);
		if (a < 0)
			continue;
		int b = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons((uint16_t)fwd_to),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		if (b >= 0 && connect(b, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			struct pollfd p[2] = {{.fd = a, .events = POLLIN},
					      {.fd = b, .events = POLLIN}};
			static char buf[1 << 16];
			bool open_ = true;
			while (open_ && !atomic_load(&fwd_stop)) {
				if (poll(p, 2, 100) <= 0)
					continue;
				for (int k = 0; k < 2 && open_; k++) {
					if (!p[k].revents)
						continue;
					ssize_t n = read(p[k].fd, buf, sizeof(buf));
					open_ = n > 0 && write(p[1 - k].fd, buf, (size_t)n) == n;
				}
			}
		}
		if (b >= 0)
			close(b);
		close(a);
	}
	return NULL;
}

/* A loopback port nothing listens on (the kernel's pick, given back). */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static void t_args(void)
{
	struct ds_objid id = oid(800);
	make(&A, &id, big, MiB);
	struct ds_ctl_copy_args a = args_of(&A, &id), x;
	x = a, x.mode = 01600;
	CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -EINVAL);
	x = a, x.count = 0;
	CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -EINVAL);
	x = a, x.offset = (1ull << 48) + 1;
	CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -EINVAL);
	x = a, x.offset = ~0ull;
	CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -EINVAL);
	x = a, x.nsrc = 0;
	CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -EINVAL);
	const char *bad[][2] = {{"udp", A.uaddr},
				{"tcp", "garbage"},
				{"tcp", "127.0.0.1.300.1"},
				{"tcp", "127.0.0.1"},
				{"tcp", ".1.2"},
				{"tcp6", A.uaddr},
				{"tcp", ""},
				{"", ""}};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		x = a;
		x.src[0].netid = bad[i][0];
		x.src[0].uaddr = bad[i][1];
		CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -EINVAL);
	}
	struct ds_ctl_stat s;
	CHECK_EQ(ds_ctl_stat(B.c, &key, &id, &s), -ENOENT); /* nothing was made */

	/* the source is the destination, by its address... */
	make(&B, &id, big + 1, 1000);
	x = a, x.src[0].uaddr = B.uaddr;
	CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -EINVAL);
	/* ...or under another one (the fsid in its GETATTR tells) */
	fwd_lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	CHECK(bind(fwd_lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fwd_lfd, 8) == 0);
	CHECK(getsockname(fwd_lfd, (struct sockaddr *)&sa, &sl) == 0);
	fwd_to = B.port;
	pthread_t ft;
	CHECK(pthread_create(&ft, NULL, fwd_main, NULL) == 0);
	int fp = ntohs(sa.sin_port);
	char fu[64];
	snprintf(fu, sizeof(fu), "127.0.0.1.%d.%d", fp >> 8, fp & 255);
	x = a, x.src[0].uaddr = fu;
	CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -EINVAL);
	atomic_store(&fwd_stop, true);
	pthread_join(ft, NULL);
	close(fwd_lfd);
	expect(&B, &id, big + 1, 1000); /* untouched */

	/* B holds the key at another generation: STALE, untouched */
	struct ds_objid g2 = dt_id(800, 2);
	x = a, x.id = g2;
	CHECK_EQ(copy_err(&B, &x, DS_CTL_COPY_DEST), -ESTALE);
	expect(&B, &id, big + 1, 1000);
	/* the source does not hold it, at all or at that generation */
	struct ds_objid none = oid(801);
	x = a, x.id = none;
	CHECK_EQ(copy_err(&C, &x, DS_CTL_COPY_SOURCE), -ENOENT);
	CHECK_EQ(ds_ctl_stat(C.c, &key, &none, &s), -ENOENT);
	x = a, x.id = g2;
	CHECK_EQ(copy_err(&C, &x, DS_CTL_COPY_SOURCE), -ENOENT);
	/* not the fence: the source refuses to be read */
	x = a, x.uid = DT_UID + 5, x.gid = DT_GID + 5;
	CHECK_EQ(copy_err(&C, &x, DS_CTL_COPY_SOURCE), -EACCES);
	/* a dead address first, then the source: the second one is used */
	int dead = free_port();
	char du[64];
	snprintf(du, sizeof(du), "127.0.0.1.%d.%d", dead >> 8, dead & 255);
	x = a, x.nsrc = 2, x.src[0].uaddr = du, x.src[1].netid = "tcp", x.src[1].uaddr = A.uaddr;
	struct ds_ctl_copy_res r;
	CHECK_EQ(ds_ctl_copy(C.c, &key, &x, &r), 0);
	CHECK(r.done);
	expect(&C, &id, big, MiB);
	/* only the MDS may call: AUTH_SYS is refused */
	braid_ctl_copy_args ca = {.cp_uid = 1, .cp_gid = 1, .cp_mode = 0600, .cp_count = 1};
	const struct xdr_proc_desc *d =
	    &xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1.procs[BRAID_CTLPROC_COPY];
	struct nfsd_call_opts o = {.prog = BRAID_CTL_PROGRAM,
				   .vers = BRAID_CTL_V1,
				   .proc = BRAID_CTLPROC_COPY,
				   .enc_args = d->enc_arg,
				   .args = &ca,
				   .flavor = NFSD_AUTH_SYS};
	braid_ctl_copy_res cr;
	CHECK_EQ(nfsd_clnt_call(B.c, &o, d->dec_res, &cr, NULL), 0);
	CHECK_EQ(cr.cp_status, BRAID_CTL_ACCESS);
}

/* ------------------------------------------------- the source fails */

struct bg {
	pthread_t t;
	struct node *dst;
	struct ds_ctl_copy_args a;
	struct ds_ctl_copy_res r;
	int rc;
	double end;
};

static void *bg_main(void *arg)
{
	struct bg *g = arg;
	g->rc = ds_ctl_copy_pass(g->dst->c, &key, &g->a, &g->r, NULL);
	g->end = now_s();
	return NULL;
}

/* A slow copy of id from A into dst, in the background. */
static void bg_start(struct bg *g, struct node *dst, const struct ds_objid *id)
{
	memset(g, 0, sizeof(*g));
	g->dst = dst;
	g->a = args_of(&A, id);
	g->a.rate = 8 * MiB;
	CHECK(pthread_create(&g->t, NULL, bg_main, g) == 0);
}

static void t_busy_and_hang(void)
{
	struct ds_objid id = oid(900);
	make(&A, &id, big, 32 * MiB);
	struct bg g;
	bg_start(&g, &B, &id);
	usleep(300 * 1000);
	/* one copy of an object at a time */
	struct ds_ctl_copy_args a = args_of(&A, &id);
	CHECK_EQ(copy_err(&B, &a, DS_CTL_COPY_DEST), -EAGAIN);
	/* the source stops answering in the middle */
	CHECK(kill(A.pid, SIGSTOP) == 0);
	double t = now_s();
	pthread_join(g.t, NULL);
	printf("source stopped mid-copy: error after %.2f s\n", g.end - t);
	CHECK_EQ(g.rc, -EIO);
	CHECK_EQ(g.r.side, DS_CTL_COPY_SOURCE_DOWN);
	CHECK(g.end - t < 5.0);
	/* and at the start (its kernel still accepts connections) */
	t = now_s();
	CHECK_EQ(copy_err(&C, &a, DS_CTL_COPY_SOURCE_DOWN), -EIO);
	printf("source stopped: error after %.2f s\n", now_s() - t);
	CHECK(now_s() - t < 5.0);
	CHECK(kill(A.pid, SIGCONT) == 0);
	copy_ok(&B, &A, &id, 0);
	expect(&B, &id, big, 32 * MiB);
}

static void t_kill(void)
{
	struct ds_objid id = oid(901);
	make(&A, &id, big, 32 * MiB);
	struct bg g;
	bg_start(&g, &C, &id);
	usleep(500 * 1000);
	double t = now_s();
	node_kill(&A);
	pthread_join(g.t, NULL);
	printf("source killed mid-copy: error after %.2f s\n", g.end - t);
	CHECK_EQ(g.rc, -EIO);
	CHECK_EQ(g.r.side, DS_CTL_COPY_SOURCE_DOWN);
	CHECK(g.end - t < 5.0);
	/* gone: refused at once */
	struct ds_ctl_copy_args a = args_of(&A, &id);
	t = now_s();
	CHECK_EQ(copy_err(&C, &a, DS_CTL_COPY_SOURCE_DOWN), -EIO);
	CHECK(now_s() - t < 1.0);
	/* what C holds is not a whole copy: the MDS was told, by the errors */
	struct ds_ctl_stat s;
	CHECK_EQ(ds_ctl_stat(C.c, &key, &id, &s), 0);
	CHECK(s.size < 32 * MiB);
}

int main(void)
{
	const char *b = getenv("top_builddir");
	snprintf(bin, sizeof(bin), "%s/braid-ds", b && *b ? b : ".");
	if (access(bin, X_OK))
		SKIP("%s not built", bin);
	signal(SIGPIPE, SIG_IGN);
	tmp = st_tmp_make();
	dt_key_make(tmp, key_path, sizeof(key_path), &key);
	int err = 0;
	eng = nfsd_client_engine_new(1, 0, &err);
	CHECK(eng);
	node_conf(&A, "a");
	node_conf(&B, "b");
	node_conf(&C, "c");
	node_spawn(&A);
	atexit(source_reap);
	node_start(&B);
	node_start(&C);
	CHECK(big = malloc(BIG));
	dt_fill(big, 0, BIG, 5);

	t_sizes();
	t_sparse();
	t_stale();
	t_repeat();
	t_big();
	t_rate();
	t_crc();
	t_args();
	t_busy_and_hang();
	t_kill();

	nfsd_clnt_free(B.c);
	nfsd_clnt_free(C.c);
	CHECK_EQ(braid_ds_stop(B.ds), 0);
	CHECK_EQ(braid_ds_stop(C.ds), 0);
	nfsd_server_free(eng);
	free(big);
	printf("ok\n");
	return 0;
}
