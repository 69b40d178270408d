/* SPDX-License-Identifier: MIT */
/*
 * The NFSv4.1 data-server path (RFC 8881 §13.6, RFC 8435 §5.1): with the
 * device's 4.x version chosen (ffc_opts.ds_version = 4; the data servers
 * serve NFSv3 and NFSv4.1/4.2), client/ffclient opens a data-server session
 * (EXCHANGE_ID with EXCHGID4_FLAG_USE_PNFS_DS, which the reply must carry
 * too) as the layout's ffds_user/ffds_group, and sends PUTFH + WRITE,
 * READ and COMMIT there with the layout's ffds_stateid.  Every byte goes
 * to the data servers over NFSv4, none through the MDS.
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

/* cds_prepare's configuration, serving NFSv4.1 as well. */
static void ds41_prepare(struct cds *d, const char *name)
{
	cds_prepare(&M, d, name, NULL);
	char conf[16384];
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/%s-store\nkey_file = %s\nlisten = 127.0.0.1:0\n"
		 "nfs3 = yes\nnfs41 = yes\nmds = 127.0.0.1:%d\nhostname = %s\nio = psync\n",
		 M.dir, name, M.key_path, M.port, name);
	mt_write_file(d->conf_path, conf, 0644);
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n",
		 "heartbeat_interval = 1s\nds_timeout = 3s\n");
	if (!M.mds->ops[OP_LAYOUTGET].fn) {
		mt_finish(&M);
		SKIP("braid-mds serves no LAYOUTGET: no data-server path to test");
	}
	ds41_prepare(&A, "ds-a");
	cds_start(&M, &A);
	ds41_prepare(&B, "ds-b");
	cds_start(&M, &B);

	struct ffc_opts o = {.uid = 0, .gid = 0, .ds_version = 4};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);
	static const uint64_t sizes[] = {1, 70000, 3 * MiB + 5};
	uint64_t total = 0;
	uint8_t *buf = malloc(3 * MiB + 5), *rb = malloc(3 * MiB + 5);
	CHECK(buf && rb);
	for (unsigned i = 0; i < 3; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/v41-%u", i);
		dt_fill(buf, 0, sizes[i], 40 + i);
		struct ffc_file *f = ffc_open(c, path, FFC_RDWR | FFC_CREAT | FFC_EXCL, 0600, &err);
		if (!f)
			fprintf(stderr, "open %s: %s\n", path, strerror(-err));
		CHECK(f);
		ssize_t wr = ffc_pwrite(f, buf, sizes[i], 0);
		if (wr != (ssize_t)sizes[i]) {
			struct ffc_stats s1;
			ffc_stats_get(c, &s1);
			fprintf(stderr,
				"pwrite %s: %zd: LAYOUTGET %llu ok %llu last error %d, %s\n", path,
				wr, (unsigned long long)s1.layoutget,
				(unsigned long long)s1.layoutget_ok, s1.layoutget_last_err,
				s1.pnfs_why);
		}
		CHECK_EQ(wr, (ssize_t)sizes[i]);
		CHECK_EQ(ffc_fsync(f), 0);
		CHECK_EQ(ffc_close(f), 0);
		f = ffc_open(c, path, FFC_RDONLY, 0, &err);
		CHECK(f);
		CHECK_EQ(ffc_file_size(f), sizes[i]);
		CHECK_EQ(ffc_pread(f, rb, sizes[i], 0), (ssize_t)sizes[i]);
		CHECK(dt_check(rb, 0, sizes[i], 40 + i));
		CHECK_EQ(ffc_close(f), 0);
		total += sizes[i];
	}
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	fprintf(stderr, "ffclient-nfs41-ds: LAYOUTGET %llu ok %llu, DS %llu/%llu, MDS %llu/%llu\n",
		(unsigned long long)st.layoutget, (unsigned long long)st.layoutget_ok,
		(unsigned long long)st.ds_write_bytes, (unsigned long long)st.ds_read_bytes,
		(unsigned long long)st.mds_write_bytes, (unsigned long long)st.mds_read_bytes);
	CHECK(st.layoutget_ok > 0);
	CHECK_EQ(st.fallbacks, 0);
	CHECK_EQ(st.mds_write_bytes, 0);
	CHECK_EQ(st.ds_write_bytes, total);
	CHECK_EQ(st.ds_read_bytes, total);
	unsigned used = 0;
	for (unsigned i = 0; i < st.ndev && i < FFC_STATS_DEV_MAX; i++) {
		if (!st.dev[i].write_bytes)
			continue;
		used++;
		CHECK_EQ(st.dev[i].version, 4);
		CHECK(st.dev[i].minorversion == 1 || st.dev[i].minorversion == 2);
		CHECK(st.dev[i].commits > 0);
	}
	CHECK(used > 0);
	ffc_unmount(c);
	free(buf);
	free(rb);
	cds_stop(&A);
	cds_stop(&B);
	mt_finish(&M);
	return 0;
}
