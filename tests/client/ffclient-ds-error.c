/* SPDX-License-Identifier: MIT */
/*
 * A data server that fails under a layout (RFC 8435 §9.1, as the Linux
 * client handles it): the READ the client sent to it fails, the client
 * returns its READ layout with the error in ff_layoutreturn4's ff_ioerr4
 * (NFS4ERR_NXIO against that device), redoes the READ through the MDS, and
 * from then on reads the other mirror straight from its data server.
 *
 * braid-mds with two mirrors per file ([mds] layout_mirrors = 2) and two
 * braid-ds in this process.  Needs LAYOUTGET: skipped (77) when the MDS's
 * op table has none (tests/client/ffclient-basic then proves the MDS
 * fallback instead).
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"
#include "client/ffclient.h"

#define MiB  (1u << 20)
#define SIZE (4 * MiB + 4321)

static struct mt M;
static struct cds A, B;

/* The cds whose port the device's universal address ends with. */
static struct cds *cds_of(const struct ffc_dev_stats *d)
{
	const char *p = strrchr(d->addr, '.');
	CHECK(p);
	const char *q = p - 1;
	while (q > d->addr && *q != '.')
		q--;
	int port = atoi(q + 1) * 256 + atoi(p + 1);
	return port == A.port ? &A : port == B.port ? &B : NULL;
}

static unsigned dev_index(const struct ffc_stats *st, const struct cds *d)
{
	for (unsigned i = 0; i < st->ndev && i < FFC_STATS_DEV_MAX; i++)
		if (st->dev[i].addr[0] && cds_of(&st->dev[i]) == d)
			return i;
	CHECK(0);
	return 0;
}

static void read_all(struct ffc *c, uint8_t *rb)
{
	int err = 0;
	struct ffc_file *f = ffc_open(c, "/m", FFC_RDONLY, 0, &err);
	CHECK(f);
	memset(rb, 0, SIZE);
	CHECK_EQ(ffc_pread(f, rb, SIZE, 0), SIZE);
	CHECK(dt_check(rb, 0, SIZE, 5));
	CHECK_EQ(ffc_close(f), 0);
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n",
		 "heartbeat_interval = 1s\nds_timeout = 3s\nlayout_mirrors = 2\n");
	if (!M.mds->ops[OP_LAYOUTGET].fn) {
		mt_finish(&M);
		SKIP("braid-mds serves no LAYOUTGET: no data-server path to fail");
	}
	cds_prepare(&M, &A, "ds-a", NULL);
	cds_start(&M, &A);
	cds_prepare(&M, &B, "ds-b", NULL);
	cds_start(&M, &B);

	/* a short data-server timeout: a dead one fails the I/O in seconds */
	struct ffc_opts o = {.ds_timeout_ms = 2000};
	int err = 0;
	struct ffc *c = ffc_mount("127.0.0.1", M.port, &o, &err);
	CHECK(c);
	uint8_t *buf = malloc(SIZE), *rb = malloc(SIZE);
	CHECK(buf && rb);
	dt_fill(buf, 0, SIZE, 5);
	struct ffc_file *f = ffc_open(c, "/m", FFC_RDWR | FFC_CREAT | FFC_EXCL, 0644, &err);
	CHECK(f);
	CHECK_EQ(ffc_pwrite(f, buf, SIZE, 0), SIZE);
	CHECK_EQ(ffc_close(f), 0);
	struct ffc_stats st;
	ffc_stats_get(c, &st);
	/* both mirrors written, straight to their data servers */
	CHECK_EQ(st.ds_write_bytes, 2ull * SIZE);
	CHECK_EQ(st.mds_write_bytes, 0);

	/* the mirror the client reads from, then that data server dies */
	read_all(c, rb);
	ffc_stats_get(c, &st);
	CHECK_EQ(st.ds_read_bytes, SIZE);
	struct cds *dead = NULL;
	for (unsigned i = 0; i < st.ndev && i < FFC_STATS_DEV_MAX; i++)
		if (st.dev[i].read_bytes)
			dead = cds_of(&st.dev[i]);
	CHECK(dead);
	struct cds *live = dead == &A ? &B : &A;
	fprintf(stderr, "ffclient-ds-error: stopping %s, which served the READs\n", dead->name);
	cds_stop(dead);

	struct ffc_stats s0;
	ffc_stats_get(c, &s0);
	read_all(c, rb); /* the dead server fails; the data comes all the same */
	ffc_stats_get(c, &st);
	unsigned di = dev_index(&st, dead), li = dev_index(&st, live);
	fprintf(
	    stderr,
	    "ffclient-ds-error: ds_errors %llu fallbacks %llu LAYOUTRETURN %llu, MDS read %llu, "
	    "live DS read %llu\n",
	    (unsigned long long)st.ds_errors, (unsigned long long)st.fallbacks,
	    (unsigned long long)st.layoutreturn, (unsigned long long)st.mds_read_bytes,
	    (unsigned long long)(st.dev[li].read_bytes - s0.dev[li].read_bytes));
	CHECK(st.ds_errors > s0.ds_errors);
	CHECK(st.dev[di].errors > 0);
	CHECK(st.dev[di].read_bytes == s0.dev[di].read_bytes); /* nothing from the dead one */
	CHECK(st.layoutreturn > s0.layoutreturn);
	/* what failed went through the MDS (and the rest, of that read, too) */
	CHECK(st.fallbacks > s0.fallbacks);
	CHECK(st.mds_read_bytes > 0);
	CHECK_EQ(st.mds_read_bytes + (st.dev[li].read_bytes - s0.dev[li].read_bytes), SIZE);

	/* the next reads: the other mirror, straight, no more MDS I/O */
	ffc_stats_get(c, &s0);
	read_all(c, rb);
	ffc_stats_get(c, &st);
	CHECK_EQ(st.mds_read_bytes, s0.mds_read_bytes);
	CHECK_EQ(st.fallbacks, s0.fallbacks);
	CHECK_EQ(st.dev[li].read_bytes - s0.dev[li].read_bytes, SIZE);

	ffc_unmount(c);
	free(buf);
	free(rb);
	cds_stop(live);
	mt_finish(&M);
	return 0;
}
