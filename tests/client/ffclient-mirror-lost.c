/* SPDX-License-Identifier: MIT */
/*
 * A mirror's data server gone, then back (issue 15 items 1 and 2), end to
 * end through our client: braid-mds and three braid-ds in this process,
 * files under a directory with layout whole, mirrors = 2.
 *
 *  1. One data server of a file's two mirrors stops (SIGKILL-like: gone
 *     without a word).  The client appends to the file, creates a new one
 *     and reads both back: every call succeeds within BOUND_S, through
 *     layouts on the surviving mirror, and the MDS records the other copy
 *     stale (durably: it survives an MDS restart).
 *  2. The server comes back.  Its stale copy is never read; the resilver
 *     copies the file from the current mirror, data server to data server,
 *     and declares it current; its object then holds every byte, checked
 *     straight from its store.  So is a file on a grid of 1 MiB segments
 *     over all three servers, two mirrors, rewritten while it was gone:
 *     its segments pair it with one server or the other, so no single
 *     mirror holds all it holds, and its copy is made from both.
 *  3. Another server is stopped and declared lost (braidctl ds lost):
 *     every mirrored copy it held is rebuilt on the third server, from the
 *     surviving mirror, and checked there; a single-copy file it held is
 *     listed unrecoverable, with its path, and its reads fail with EIO at
 *     once instead of waiting (never zeros).
 */
#include "config.h"

#include "tests/client/ffc-test.h"
#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "mds/resilver.h"

#define MiB	(1u << 20)
#define BOUND_S 15.0
#define CONF	"heartbeat_interval = 1s\nds_timeout = 3s\n"

static struct mt M;
static struct cds D[3];

static struct cds *cds_by_id(uint32_t id)
{
	for (unsigned i = 0; i < 3; i++)
		if (D[i].id == id)
			return &D[i];
	CHECK(0);
	return NULL;
}

/* The two mirrors of a whole-file file: their data servers. */
static void mirrors_of(uint64_t ino, struct cds **a, struct cds **b)
{
	struct mds_file_map m;
	CHECK_EQ(mds_data_map(M.mds, ino, &m), 0);
	CHECK_EQ(m.nset, 2);
	*a = cds_by_id(m.set[0] & MDS_LAYOUT_ID);
	*b = cds_by_id(m.set[1] & MDS_LAYOUT_ID);
}

static bool stale_on(uint64_t ino, uint32_t id)
{
	struct mds_file_map m;
	CHECK_EQ(mds_data_map(M.mds, ino, &m), 0);
	return mds_data_map_stale(&m, id);
}

/* Whether data server d holds, in some mirror, segment n of ino's grid. */
static bool grid_holds(uint64_t ino, uint64_t n, uint32_t id)
{
	struct mds_attr a = cl_attr(&M, ino);
	struct mds_file_map fm;
	struct mds_layout_seg seg;
	CHECK_EQ(mds_data_segment(M.mds, &a, n, false, NULL, 0, &fm, &seg), 0);
	for (unsigned i = 0; i < seg.nds; i++)
		if (seg.ds[i] == id)
			return true;
	return false;
}

/* Every 1 MiB segment of ino's first len bytes that d holds, checked
 * straight from its store; how many. */
static unsigned grid_object_check(struct cds *d, uint64_t ino, uint64_t len, unsigned seed)
{
	struct mds_attr a = cl_attr(&M, ino);
	struct ds_objid id;
	mds_data_objid(&a, &id);
	struct mds_file_map fm;
	CHECK_EQ(mds_data_map(M.mds, ino, &fm), 0);
	uint32_t uid, gid;
	mds_data_fence_epoch(M.mds, &a, fm.epoch, &uid, &gid);
	uint8_t *rb = malloc(MiB);
	CHECK(rb);
	unsigned held = 0;
	for (uint64_t n = 0; n * MiB < len; n++) {
		if (!grid_holds(ino, n, d->id))
			continue;
		bool eof;
		CHECK_EQ(ds_store_read(braid_ds_store(d->ds), &id, uid, gid, n * MiB, MiB, rb, &eof),
			 (ssize_t)MiB);
		CHECK(dt_check(rb, n * MiB, MiB, seed));
		held++;
	}
	free(rb);
	return held;
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n", CONF);
	cl_pin_port(&M, CONF);
	const char *names[3] = {"ds-a", "ds-b", "ds-c"};
	for (unsigned i = 0; i < 3; i++) {
		cds_prepare(&M, &D[i], names[i], NULL);
		cds_start(&M, &D[i]);
	}
	/* a short data-server timeout: a dead one fails the I/O in seconds */
	struct ffc_opts o = {.ds_timeout_ms = 2000};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);
	uint8_t *buf = malloc(8 * MiB);
	CHECK(buf);
	uint64_t dir = ffct_mkdir_policy(&M, c, "/m", "whole,mirrors=2");
	double secs;
	dt_fill(buf, 0, 4 * MiB, 1);
	CHECK_EQ(ffct_write_sync(c, "/m/f", buf, 0, 4 * MiB, true, &secs), 0);
	uint64_t f = ffct_ino_of(&M, "f", dir);
	struct cds *lost, *kept;
	mirrors_of(f, &lost, &kept);
	uint64_t sdir = ffct_mkdir_policy(&M, c, "/s", "segments,segment_size=1m,width=3,mirrors=2");
	dt_fill(buf, 0, 6 * MiB, 5);
	CHECK_EQ(ffct_write_sync(c, "/s/h", buf, 0, 6 * MiB, true, &secs), 0);
	uint64_t h = ffct_ino_of(&M, "h", sdir);

	/* ---- 1. one mirror's server gone */
	cds_stop(lost);
	double t0 = cl_now();
	dt_fill(buf, 4 * MiB, 4 * MiB, 1);
	CHECK_EQ(ffct_write_sync(c, "/m/f", buf, 4 * MiB, 4 * MiB, false, &secs), 0);
	printf("append with a mirror's server gone: %.2f s\n", secs);
	CHECK(secs < BOUND_S);
	dt_fill(buf, 0, 2 * MiB, 2);
	CHECK_EQ(ffct_write_sync(c, "/m/g", buf, 0, 2 * MiB, true, &secs), 0);
	printf("a new file with it gone: %.2f s\n", secs);
	CHECK(secs < BOUND_S);
	ffct_read_check(c, "/m/f", 8 * MiB, 1);
	ffct_read_check(c, "/m/g", 2 * MiB, 2);
	dt_fill(buf, 0, 6 * MiB, 6);
	CHECK_EQ(ffct_write_sync(c, "/s/h", buf, 0, 6 * MiB, false, &secs), 0);
	printf("a grid file rewritten with it gone: %.2f s\n", secs);
	CHECK(secs < BOUND_S);
	ffct_read_check(c, "/s/h", 6 * MiB, 6);
	printf("all of it in %.2f s\n", cl_now() - t0);
	CHECK(stale_on(f, lost->id) && !stale_on(f, kept->id));
	CHECK(stale_on(h, lost->id));
	uint64_t g = ffct_ino_of(&M, "g", dir);
	struct cds *g1, *g2;
	mirrors_of(g, &g1, &g2);
	CHECK(g1 != lost && g2 != lost); /* placed on the servers up */
	ffct_object_check(&M, kept, f, 8 * MiB, 1);

	/* the stale mark is durable: an MDS restart keeps it */
	ffc_unmount(c);
	mt_stop(&M);
	mt_boot(&M);
	for (unsigned i = 0; i < 3; i++)
		if (&D[i] != lost)
			cds_wait_up(&M, &D[i]);
	CHECK(stale_on(f, lost->id));
	c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);

	/* ---- 2. back: resilvered from the current mirror */
	cds_start(&M, lost);
	t0 = cl_now();
	while (stale_on(f, lost->id)) {
		CHECK(cl_now() - t0 < 30);
		usleep(50 * 1000);
	}
	printf("resilvered %.2f s after the server came back\n", cl_now() - t0);
	ffct_object_check(&M, lost, f, 8 * MiB, 1);
	/* the grid file: its segments on the server that came back pair it
	 * with both others, so it was copied from both */
	bool p1 = false, p2 = false;
	for (uint64_t n = 0; n < 6; n++)
		if (grid_holds(h, n, lost->id)) {
			p1 = p1 || grid_holds(h, n, kept->id);
			for (unsigned i = 0; i < 3; i++)
				if (&D[i] != lost && &D[i] != kept)
					p2 = p2 || grid_holds(h, n, D[i].id);
		}
	CHECK(p1 && p2);
	while (stale_on(h, lost->id)) {
		CHECK(cl_now() - t0 < 30);
		usleep(50 * 1000);
	}
	printf("the grid file resilvered %.2f s after the server came back\n", cl_now() - t0);
	CHECK_EQ(grid_object_check(lost, h, 6 * MiB, 6), 4);
	ffct_read_check(c, "/s/h", 6 * MiB, 6);
	CHECK_EQ(ffc_remove(c, "/s/h"), 0); /* three servers: no rebuild for it below */
	struct mds_resilver_stats rs;
	mds_resilver_stats(M.mds, &rs);
	CHECK(rs.files_done >= 1 && rs.bytes_copied >= 8 * MiB);
	/* and in use again: both mirrors take the next write */
	dt_fill(buf, 8 * MiB, MiB, 1);
	CHECK_EQ(ffct_write_sync(c, "/m/f", buf, 8 * MiB, MiB, false, &secs), 0);
	ffct_read_check(c, "/m/f", 9 * MiB, 1);
	ffct_object_check(&M, lost, f, 9 * MiB, 1);
	ffct_object_check(&M, kept, f, 9 * MiB, 1);

	/* ---- 3. another server lost for good: rebuilt on the third */
	struct cds *third = NULL;
	for (unsigned i = 0; i < 3; i++)
		if (&D[i] != lost && &D[i] != kept)
			third = &D[i];
	/* a single-copy file on the server about to be lost: files made
	 * until one lands there (placement is random) */
	uint64_t one = ffct_mkdir_policy(&M, c, "/one", "whole");
	uint64_t s1 = 0;
	char spath[64] = "";
	dt_fill(buf, 0, MiB, 3);
	for (unsigned i = 0; !s1; i++) {
		CHECK(i < 64);
		char name[16];
		snprintf(name, sizeof(name), "s%u", i);
		snprintf(spath, sizeof(spath), "/one/%s", name);
		CHECK_EQ(ffct_write_sync(c, spath, buf, 0, MiB, true, &secs), 0);
		uint64_t ino = ffct_ino_of(&M, name, one);
		struct mds_file_map sm;
		CHECK_EQ(mds_data_map(M.mds, ino, &sm), 0);
		if ((sm.set[0] & MDS_LAYOUT_ID) == kept->id)
			s1 = ino;
		else
			CHECK_EQ(ffc_remove(c, spath), 0);
	}
	cds_stop(kept);
	cl_wait_down(&M, kept->id);
	CHECK_EQ(mds_dsreg_lost(M.mds, kept->id, "by the test"), 0);
	mds_resilver_kick(M.mds);
	t0 = cl_now();
	for (;;) {
		struct mds_file_map m;
		CHECK_EQ(mds_data_map(M.mds, f, &m), 0);
		bool named = false, stale = false;
		for (unsigned i = 0; i < m.nset; i++) {
			named = named || (m.set[i] & MDS_LAYOUT_ID) == kept->id;
			stale = stale || (m.set[i] & MDS_LAYOUT_STALE);
		}
		if (!named && !stale)
			break;
		CHECK(cl_now() - t0 < 30);
		usleep(50 * 1000);
	}
	printf("rebuilt %.2f s after the server was declared lost\n", cl_now() - t0);
	struct cds *r1, *r2;
	mirrors_of(f, &r1, &r2);
	CHECK((r1 == lost && r2 == third) || (r1 == third && r2 == lost));
	ffct_object_check(&M, third, f, 9 * MiB, 1);
	ffct_read_check(c, "/m/f", 9 * MiB, 1);
	/* the single-copy file: unrecoverable, listed, EIO at once */
	t0 = cl_now();
	struct mds_lost_file lf[8];
	unsigned nlf;
	while (!(nlf = mds_resilver_lost_files(M.mds, lf, 8))) {
		CHECK(cl_now() - t0 < 10);
		usleep(50 * 1000);
	}
	CHECK_EQ(nlf, 1);
	CHECK_EQ(lf[0].ino, s1);
	CHECK_EQ(lf[0].ds, kept->id);
	CHECK(!strcmp(lf[0].path, spath));
	t0 = cl_now();
	struct ffc_file *sf = ffc_open(c, spath, FFC_RDONLY, 0, &err);
	CHECK(sf);
	CHECK_EQ(ffc_pread(sf, buf, MiB, 0), -EIO);
	ffc_close(sf);
	printf("reading the unrecoverable file: EIO after %.2f s\n", cl_now() - t0);
	CHECK(cl_now() - t0 < BOUND_S);
	mds_resilver_stats(M.mds, &rs);
	CHECK(rs.moved_files >= 2 && rs.unrecoverable == 1 && rs.lost_servers == 1);

	free(buf);
	ffc_unmount(c);
	for (unsigned i = 0; i < 3; i++)
		if (&D[i] != kept)
			cds_stop(&D[i]);
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
