/* SPDX-License-Identifier: MIT */
/*
 * CB_LAYOUTRECALL (RFC 8881 §12.5.5, §20.3) over client/ffclient's back
 * channel: client A holds an RW layout of a file it has written, fsynced
 * and keeps open; client B truncates the file to a smaller size, so the
 * MDS recalls A's layout.  A answers the recall on its own, with no call
 * on the file (its service thread flushes and sends LAYOUTRETURN), B's
 * truncation completes, and A's next write gets a fresh layout and lands
 * on a data server as before.
 *
 * braid-mds and two braid-ds in this process.  Needs LAYOUTGET: skipped
 * (77) when the MDS's op table has none.
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"
#include "client/ffclient.h"

#define MiB (1u << 20)

static struct mt M;
static struct cds A, B;

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n",
		 "heartbeat_interval = 1s\nds_timeout = 3s\n");
	if (!M.mds->ops[OP_LAYOUTGET].fn) {
		mt_finish(&M);
		SKIP("braid-mds serves no LAYOUTGET: nothing to recall");
	}
	cds_prepare(&M, &A, "ds-a", NULL);
	cds_start(&M, &A);
	cds_prepare(&M, &B, "ds-b", NULL);
	cds_start(&M, &B);

	struct ffc_opts o = {0};
	int err = 0;
	struct ffc *ca = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(ca);
	struct ffc *cb = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(cb);
	uint8_t *buf = malloc(2 * MiB), *rb = malloc(2 * MiB);
	CHECK(buf && rb);
	dt_fill(buf, 0, 2 * MiB, 3);

	/* A: written through its layout, still open */
	struct ffc_file *fa = ffc_open(ca, "/r", FFC_RDWR | FFC_CREAT | FFC_EXCL, 0644, &err);
	CHECK(fa);
	CHECK_EQ(ffc_pwrite(fa, buf, 2 * MiB, 0), 2 * MiB);
	CHECK_EQ(ffc_fsync(fa), 0); /* LAYOUTCOMMIT: the MDS's size is 2 MiB */
	struct ffc_stats s0;
	ffc_stats_get(ca, &s0);
	CHECK(s0.layoutget_ok > 0);
	CHECK_EQ(s0.ds_write_bytes, 2 * MiB);
	CHECK_EQ(s0.layoutrecall, 0);

	/* B: truncation to a smaller size recalls A's layout */
	struct ffc_file *fb = ffc_open(cb, "/r", FFC_RDWR | FFC_TRUNC, 0, &err);
	if (!fb)
		fprintf(stderr, "B: open with TRUNC: %s\n", strerror(-err));
	CHECK(fb);
	CHECK_EQ(ffc_file_size(fb), 0);
	CHECK_EQ(ffc_close(fb), 0);
	struct ffc_stats sb;
	ffc_stats_get(cb, &sb);
	CHECK_EQ(sb.layoutget, 0); /* B moved no data */

	/* A answered on its own, without a call of its own on the file */
	struct ffc_stats s1;
	for (int i = 0; i < 500; i++) {
		ffc_stats_get(ca, &s1);
		if (s1.layoutrecall > 0 && s1.layoutreturn > s0.layoutreturn)
			break;
		usleep(10000);
	}
	fprintf(stderr, "ffclient-recall: A saw %llu recall(s), sent %llu LAYOUTRETURN(s)\n",
		(unsigned long long)s1.layoutrecall, (unsigned long long)s1.layoutreturn);
	CHECK(s1.layoutrecall > 0);
	CHECK(s1.layoutreturn > s0.layoutreturn);

	/* A writes on: a new layout, the data straight to a data server */
	CHECK_EQ(ffc_pwrite(fa, buf, MiB, 0), MiB);
	CHECK_EQ(ffc_fsync(fa), 0);
	ffc_stats_get(ca, &s1);
	CHECK(s1.layoutget_ok > s0.layoutget_ok);
	CHECK_EQ(s1.ds_write_bytes, 3 * MiB);
	CHECK_EQ(s1.mds_write_bytes, 0);
	CHECK_EQ(ffc_close(fa), 0);

	/* what B sees: the 1 MiB A wrote after the truncation */
	fb = ffc_open(cb, "/r", FFC_RDONLY, 0, &err);
	CHECK(fb);
	CHECK_EQ(ffc_pread(fb, rb, 2 * MiB, 0), MiB);
	CHECK(dt_check(rb, 0, MiB, 3));
	CHECK_EQ(ffc_close(fb), 0);

	ffc_unmount(ca);
	ffc_unmount(cb);
	free(buf);
	free(rb);
	cds_stop(&A);
	cds_stop(&B);
	mt_finish(&M);
	return 0;
}
