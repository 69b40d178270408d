/* SPDX-License-Identifier: MIT */
/*
 * [mds] data_io = refuse, the [mds] layout settings and the exports'
 * layout= option (RFC 8435 §5.1, braid-mds(8), braid-exports(5)): READ and
 * WRITE through the MDS answer NFS4ERR_PNFS_NO_LAYOUT while layouts, flagged
 * FF_FLAGS_NO_IO_THRU_MDS, carry the data straight to the data servers; a
 * file no directory speaks for takes [mds] layout = segments with its
 * segment size; a file in an export with layout= takes that; settings or
 * options that make no policy stop the start with the reason.
 */
#include "config.h"

#include "tests/mds/layout-test.h"

#define CONF                                                                                       \
	"heartbeat_interval = 1s\nds_timeout = 3s\ndata_io = refuse\nlayout = segments\n"          \
	"layout_segment_size = 2M\nlayout_width = 2\n"

static struct lt L;

static void bad_start(const char *exports, const char *extra, const char *why)
{
	struct mt t;
	mt_prepare(&t, exports, extra);
	struct conf_error cerr;
	CHECK_EQ(mds_settings_load(t.conf_path, &t.set, &cerr), 0);
	char msg[512] = "";
	struct braid_mds *mds = NULL;
	CHECK(braid_mds_start(&t.set, &mds, msg, sizeof(msg)) < 0);
	CHECK(!mds);
	if (!strstr(msg, why))
		fprintf(stderr, "\"%s\" lacks \"%s\"\n", msg, why);
	CHECK(strstr(msg, why));
}

int main(void)
{
	bad_start("/ *(rw)\n", "layout = segments\nlayout_segment_size = 3M\n",
		  "layout_segment_size");
	bad_start("/ *(rw)\n", "layout = segments\nlayout_width = 1\nlayout_mirrors = 2\n",
		  "width 1");
	bad_start("/ *(rw)\n", "layout = striped\nlayout_stripe_unit = 12k\n",
		  "layout_stripe_unit");
	bad_start("/ *(rw)\n/x *(rw,layout=raid5)\n", NULL, "exports:2: layout=raid5");
	bad_start("/ *(rw,layout=segments:segment_size=3M)\n", NULL, "segment_size");
	bad_start("/x 10.0.0.1(rw,layout=whole) *(rw,layout=segments)\n", NULL,
		  "one policy per export");
	bad_start("/x *(rw,layout=seg ments)\n", NULL, "layout");

	uint8_t *buf = malloc(4 * MiB), *rbuf = malloc(4 * MiB);
	CHECK(buf && rbuf);
	lt_start(&L,
		 "/ *(rw,no_root_squash,insecure)\n"
		 "/ml *(rw,no_root_squash,insecure,layout=striped:stripes=2:stripe_unit=256k)\n",
		 CONF, 2);
	struct nfs41c_session *s = mt_session(&L.m, "lt-refuse", 0, 0);
	struct ts_openres o;
	lt_create(s, NULL, "pnfs-only", &o);
	dt_fill(buf, 0, 4 * MiB, 91);
	/* the MDS moves no file data */
	uint32_t n;
	CHECK_EQ(lt_mds_write(s, &o.fh, 0, buf, 4096), NFS4ERR_PNFS_NO_LAYOUT);
	CHECK_EQ(lt_mds_read(s, &o.fh, 0, 4096, rbuf, &n), NFS4ERR_PNFS_NO_LAYOUT);

	/* layouts do: [mds] layout = segments, 2 MiB, two data servers */
	stateid4 sid = o.sid;
	struct lt_layout l[2];
	struct cds *d[2];
	for (unsigned k = 0; k < 2; k++) {
		CHECK_EQ(
		    lt_get_page(s, &o.fh, LAYOUTIOMODE4_RW, (uint64_t)k * 2 * MiB, &sid, &l[k]),
		    NFS4_OK);
		CHECK(l[k].offset == (uint64_t)k * 2 * MiB && l[k].length == 2 * MiB);
		CHECK(l[k].flags & FF_FLAGS_NO_IO_THRU_MDS);
		d[k] = lt_ds_of_dev(&L, s, l[k].ds[0].dev);
		for (unsigned h = 0; h < 2; h++) /* 1 MiB a WRITE, as ffdv_wsize says */
			CHECK_EQ(lt_ds_write(d[k], &l[k].ds[0], (uint64_t)(2 * k + h) * MiB,
					     buf + (2 * k + h) * MiB, MiB, UNSTABLE, l[k].ds[0].uid,
					     l[k].ds[0].gid),
				 NFS3_OK);
		CHECK_EQ(lt_ds_commit(d[k], &l[k].ds[0], l[k].ds[0].uid, l[k].ds[0].gid), NFS3_OK);
		sid = l[k].sid;
	}
	CHECK(d[0] != d[1]);
	uint64_t size;
	bool changed;
	CHECK_EQ(lt_layoutcommit(s, &o.fh, 0, 4 * MiB, &sid, 4 * MiB - 1, &changed, &size),
		 NFS4_OK);
	CHECK(changed && size == 4 * MiB);
	CHECK_EQ(cl_attr(&L.m, lt_ino(&L, &o.fh)).size, 4 * MiB);
	/* read back through READ layouts */
	for (unsigned k = 0; k < 2; k++) {
		struct lt_layout r;
		CHECK_EQ(lt_get_page(s, &o.fh, LAYOUTIOMODE4_READ, (uint64_t)k * 2 * MiB + 4096,
				     &sid, &r),
			 NFS4_OK);
		sid = r.sid;
		CHECK(lt_ds_of_dev(&L, s, r.ds[0].dev) == d[k]);
		CHECK_EQ(lt_ds_read(d[k], &r.ds[0], (uint64_t)k * 2 * MiB, rbuf, MiB, r.ds[0].uid,
				    r.ds[0].gid, &n),
			 NFS3_OK);
		CHECK(n == MiB && !memcmp(rbuf, buf + k * 2 * MiB, MiB));
	}
	/* the export with layout=: its files are striped, in any directory below */
	nfs_argop4 ops[4] = {mt_putrootfh(), mt_lookup("ml"), mt_getfh()};
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, 3, &res, &ar);
	CHECK_EQ(ts_st(&res, 2), NFS4_OK);
	struct ts_fh ml;
	const nfs_fh4 *mf = &res.resarray.val[3].u.opgetfh.u.resok4.object;
	memcpy(ml.b, mf->val, mf->len);
	ml.len = mf->len;
	xdr_arena_release(&ar);
	struct ts_fh sub;
	lt_mkdir_in(&L, &ml, "sub", NULL, &sub);
	struct ts_openres so;
	lt_create(s, &sub, "shard", &so);
	struct lt_layout sl;
	CHECK_EQ(lt_get_page(s, &so.fh, LAYOUTIOMODE4_RW, 0, &so.sid, &sl), NFS4_OK);
	CHECK(sl.nmirrors == 1 && sl.nstripes == 2 && sl.stripe_unit == 256 * 1024);
	CHECK(sl.flags & FF_FLAGS_NO_IO_THRU_MDS);
	CHECK_EQ(lt_return_all(s, &so.fh, &sl.sid), NFS4_OK);
	/* still nothing through the MDS */
	CHECK_EQ(lt_mds_read(s, &o.fh, 0, 4096, rbuf, &n), NFS4ERR_PNFS_NO_LAYOUT);
	CHECK_EQ(lt_return_all(s, &o.fh, &sid), NFS4_OK);
	nfs41c_session_destroy(s);
	lt_finish(&L);
	free(buf);
	free(rbuf);
	return 0;
}
