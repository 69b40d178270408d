/* SPDX-License-Identifier: MIT */
/*
 * The size of a file written through layouts when the MDS stops before
 * the client's LAYOUTCOMMIT (RFC 8881 §12.7.4, §18.42; RFC 8435 §4: the
 * data servers hold bytes the MDS never counted).  braid-mds marks a file
 * durably before its first RW layout goes out and clears the mark once no
 * layout of it is left; at start it moves each marked file's size up to
 * the end of its objects on the data servers.  Against braid-mds with two
 * real braid-ds and 1 MiB segments:
 *  - a file written at 0 and at 1 MiB + 100 (two segments, two objects)
 *    straight to the data servers, never LAYOUTCOMMITted: size 0 while the
 *    MDS runs, 1 MiB + 1100 after its restart, with a new change value;
 *  - a file written, LAYOUTCOMMITted and returned: its mark goes while the
 *    MDS runs, and its size is the committed one after the restart;
 *  - a file with an RW layout but its data short of its size (set in the
 *    store alone): the restart leaves the size alone (never shrinks);
 *  - after the restart an RW layout of the first file is granted only
 *    with its size reconciled (LAYOUTGET does it if the MDS's thread has
 *    not); no mark is left once the layouts are returned.
 */
#include "config.h"

#include "tests/mds/layout-test.h"

#define CONF "heartbeat_interval = 1s\nlayout = segments\nlayout_segment_size = 1M\n"

static struct lt L;
static uint8_t buf[4096];

static int mark_find(void *arg, uint64_t ino)
{
	uint64_t *want = arg;
	if (*want == ino)
		*want = 0;
	return 0;
}

static bool marked(uint64_t ino)
{
	uint64_t want = ino;
	CHECK_EQ(mds_wlayout_list(braid_mds_store(L.m.mds), mark_find, &want), 0);
	return want == 0;
}

static int mark_count(void *arg, uint64_t ino)
{
	(void)ino;
	(*(unsigned *)arg)++;
	return 0;
}

/* Up to 10 s for ino's mark to be (or not be) there. */
static void wait_marked(uint64_t ino, bool want)
{
	double t0 = ts_now();
	while (marked(ino) != want && ts_now() - t0 < 10)
		usleep(20000);
	CHECK_EQ(marked(ino), want);
}

/* The data server of a layout's first mirror, written as the layout says. */
static void ds_put(struct nfs41c_session *s, const struct lt_layout *l, uint64_t off, uint32_t len)
{
	struct cds *d = lt_ds_of_dev(&L, s, l->ds[0].dev);
	CHECK(d);
	CHECK_EQ(lt_ds_write(d, &l->ds[0], off, buf, len, FILE_SYNC, l->ds[0].uid, l->ds[0].gid),
		 NFS3_OK);
}

int main(void)
{
	memset(buf, 0x5a, sizeof(buf));
	lt_start(&L, "/ *(rw,no_root_squash,insecure)\n", CONF, 2);
	/* on a connection of its own, which outlives the MDS's restart */
	struct nfsd_clnt *c1 = mt_connect(&L.m);
	struct nfs41c_session *s = NULL;
	CHECK_EQ(nfs41c_session_create(c1, "rs-client", 0, &s), 0);
	nfs41c_session_set_cred(s, 0, 0);
	mt_reclaim_complete(s);

	/* written through two segments, never committed */
	struct ts_openres a;
	lt_create(s, NULL, "crashed", &a);
	uint64_t ia = lt_ino(&L, &a.fh);
	CHECK(!marked(ia)); /* nothing laid out for writing yet */
	struct lt_layout l0, l1;
	CHECK_EQ(lt_get_page(s, &a.fh, LAYOUTIOMODE4_RW, 0, &a.sid, &l0), NFS4_OK);
	CHECK(marked(ia)); /* durable before the layout went out */
	CHECK_EQ(lt_get_page(s, &a.fh, LAYOUTIOMODE4_RW, MiB, &a.sid, &l1), NFS4_OK);
	CHECK(memcmp(l0.ds[0].dev, l1.ds[0].dev, sizeof(deviceid4)) != 0); /* two objects */
	ds_put(s, &l0, 0, 4096);
	ds_put(s, &l1, MiB + 100, 1000);
	struct mds_attr before = cl_attr(&L.m, ia);
	CHECK_EQ(before.size, 0);

	/* written, committed and returned: the mark goes */
	struct ts_openres b;
	lt_create(s, NULL, "committed", &b);
	uint64_t ib = lt_ino(&L, &b.fh);
	struct lt_layout lb;
	CHECK_EQ(lt_get_page(s, &b.fh, LAYOUTIOMODE4_RW, 0, &b.sid, &lb), NFS4_OK);
	ds_put(s, &lb, 0, 3000);
	uint64_t size = 0;
	bool changed = false;
	CHECK_EQ(lt_layoutcommit(s, &b.fh, 0, MiB, &lb.sid, 2999, &changed, &size), NFS4_OK);
	CHECK(changed && size == 3000);
	CHECK(marked(ib));
	CHECK_EQ(lt_return_all(s, &b.fh, &lb.sid), NFS4_OK);
	wait_marked(ib, false);

	/* an RW layout out, the size past the data: left as it is */
	struct ts_openres c;
	lt_create(s, NULL, "extended", &c);
	uint64_t ic = lt_ino(&L, &c.fh);
	struct lt_layout lc;
	CHECK_EQ(lt_get_page(s, &c.fh, LAYOUTIOMODE4_RW, 0, &c.sid, &lc), NFS4_OK);
	ds_put(s, &lc, 0, 100);
	struct mds_setattr_args sa = {.ino = ic, .mask = MDS_SET_SIZE, .size = 5 * MiB};
	struct mds_setattr_res sr;
	CHECK_EQ(mds_inode_setattr(braid_mds_store(L.m.mds), &sa, &sr), 0);
	CHECK(marked(ic));

	/* the MDS stops with the layouts of a and c out, their client gone */
	mt_stop(&L.m);
	mt_boot(&L.m);
	for (unsigned i = 0; i < L.nds; i++)
		cds_wait_up(&L.m, &L.ds[i]);
	/* an RW layout of it is granted only with its size reconciled */
	struct nfs41c_session *s2 = mt_session(&L.m, "rs-after", 0, 0);
	struct ts_openres a2;
	CHECK_EQ(ts_open_name(s2, NULL, "rs-owner", "crashed", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, false, &a2),
		 NFS4_OK);
	struct lt_layout l3;
	CHECK_EQ(lt_get_page(s2, &a2.fh, LAYOUTIOMODE4_RW, 0, &a2.sid, &l3), NFS4_OK);
	struct mds_attr after = cl_attr(&L.m, ia);
	CHECK_EQ(after.size, MiB + 1100);
	CHECK(after.change != before.change);
	CHECK_EQ(cl_attr(&L.m, ib).size, 3000);
	/* the others by the MDS's own thread */
	wait_marked(ic, false);
	CHECK_EQ(cl_attr(&L.m, ic).size, 5 * MiB);
	CHECK(marked(ia)); /* its new layout is out */
	CHECK_EQ(lt_return_all(s2, &a2.fh, &l3.sid), NFS4_OK);
	wait_marked(ia, false);
	unsigned n = 0;
	CHECK_EQ(mds_wlayout_list(braid_mds_store(L.m.mds), mark_count, &n), 0);
	CHECK_EQ(n, 0);

	nfs41c_session_destroy(s2);
	nfs41c_session_destroy(s); /* unknown to the new MDS: frees ours */
	nfsd_clnt_free(c1);
	lt_finish(&L);
	return 0;
}
