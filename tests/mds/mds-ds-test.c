/* SPDX-License-Identifier: MIT */
/* Helpers for the cluster tests (tests/mds/mds-ds-test.h). */
#include "config.h"

#include "tests/mds/mds-ds-test.h"

void cl_pin_port(struct mt *m, const char *extra_conf)
{
	char conf[16384];
	snprintf(conf, sizeof(conf),
		 "[mds]\nstore_dir = %s/store\nkey_file = %s\nexports = %s\n"
		 "listen = 127.0.0.1:%d\nrpcbind = no\ngrace_time = 0\n%s",
		 m->dir, m->key_path, m->exports_path, m->port, extra_conf ? extra_conf : "");
	mt_write_file(m->conf_path, conf, 0644);
}

void cds_prepare(struct mt *m, struct cds *d, const char *name, const char *extra)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->conf_path, sizeof(d->conf_path), "%s/%s.conf", m->dir, name);
	char conf[16384];
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/%s-store\nkey_file = %s\nlisten = 127.0.0.1:0\n"
		 "nfs41 = no\nmds = 127.0.0.1:%d\nhostname = %s\nio = psync\n%s",
		 m->dir, name, m->key_path, m->port, name, extra ? extra : "");
	mt_write_file(d->conf_path, conf, 0644);
}

double cl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cds_wait_up(struct mt *m, struct cds *d)
{
	double t0 = cl_now();
	for (;;) {
		struct mds_ds_info info;
		d->id = braid_ds_id(d->ds);
		if (d->id && !mds_dsreg_get(m->mds, d->id, &info) && info.registered && info.up)
			return;
		CHECK(cl_now() - t0 < 10);
		usleep(20000);
	}
}

struct mds_ds_info cl_wait_down(struct mt *m, uint32_t id)
{
	double t0 = cl_now();
	struct mds_ds_info info;
	for (;;) {
		CHECK_EQ(mds_dsreg_get(m->mds, id, &info), 0);
		if (!info.up)
			return info;
		CHECK(cl_now() - t0 < 10);
		usleep(20000);
	}
}

void cds_start(struct mt *m, struct cds *d)
{
	struct conf_error cerr;
	if (ds_settings_load(d->conf_path, &d->set, &cerr)) {
		conf_error_print(&cerr, stderr);
		CHECK(0);
	}
	char msg[512];
	int rc = braid_ds_start(&d->set, &d->ds, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "braid_ds_start: %s\n", msg);
	CHECK(rc == 0);
	d->port = braid_ds_port(d->ds, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)d->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct nfsd_clnt_opts o = {.timeout_ms = 20000, .reconnect = true};
	int err = 0;
	d->c = nfsd_clnt_new(m->eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(d->c);
	cds_wait_up(m, d);
}

void cds_stop(struct cds *d)
{
	if (d->c)
		nfsd_clnt_free(d->c);
	d->c = NULL;
	if (d->ds)
		CHECK(braid_ds_stop(d->ds) == 0);
	d->ds = NULL;
}

void cl_fh_of(struct mt *m, uint64_t ino, uint64_t gen, struct cfile *f)
{
	struct mds_exports *x = mds_exports_get(m->mds);
	const struct mds_export *e = mds_export_by_root(x, mds_store_root(braid_mds_store(m->mds)));
	CHECK(e);
	struct mds_fh h = {.ino = ino, .gen = gen, .export_id = e->id};
	mds_exports_put(x);
	mds_fh_make(m->mds, &h, f->fhb);
	f->fh.len = MDS_FH_SIZE;
	f->fh.val = f->fhb;
}

void cl_mkfile(struct mt *m, const char *name, uint32_t mode, struct cfile *f)
{
	struct mds_store *s = braid_mds_store(m->mds);
	struct mds_create_args ca = {.dir = mds_store_root(s),
				     .name = name,
				     .name_len = strlen(name),
				     .type = MDS_REG,
				     .how = MDS_CREATE_GUARDED,
				     .mode = mode};
	struct mds_create_res cr;
	CHECK_EQ(mds_dir_create(s, &ca, &cr), 0);
	f->ino = cr.attr.ino;
	f->attr = cr.attr;
	cl_fh_of(m, f->ino, cr.attr.generation, f);
}

struct mds_attr cl_attr(struct mt *m, uint64_t ino)
{
	struct mds_attr a;
	CHECK_EQ(mds_inode_getattr(braid_mds_store(m->mds), ino, &a), 0);
	return a;
}

void cl_truncate(struct mt *m, uint64_t ino, uint64_t size)
{
	struct mds_setattr_args sa = {.ino = ino, .mask = MDS_SET_SIZE, .size = size};
	struct mds_setattr_res sr;
	CHECK_EQ(mds_inode_setattr(braid_mds_store(m->mds), &sa, &sr), 0);
	CHECK_EQ(mds_data_truncate(m->mds, &sr.attr, sr.old_size), 0);
}

int cl_obj_stat(struct mt *m, struct cds *d, const struct cfile *f, uint64_t *size)
{
	struct ds_objid id;
	mds_data_objid(&f->attr, &id);
	struct ds_ctl_stat st;
	int rc = ds_ctl_stat(d->c, &m->key, &id, &st);
	if (!rc && size)
		*size = st.size;
	return rc;
}

nfsstat4 cl_op(struct nfs41c_session *s, unsigned flags, const struct cfile *f, nfs_argop4 op,
	       nfs_resop4 *out, struct xdr_arena *arena)
{
	nfs_argop4 ops[2] = {mt_putfh(&f->fh), op};
	COMPOUND4res res;
	int rc = nfs41c_compound_ex(s, NULL, flags, ops, 2, &res, arena);
	if (rc)
		fprintf(stderr, "compound: %d\n", rc);
	CHECK_EQ(rc, 0);
	CHECK_EQ(mt_status(&res, 0), NFS4_OK);
	nfsstat4 st = mt_status(&res, 1);
	if (out)
		*out = res.resarray.val[2];
	return st;
}

nfsstat4 cl_do_write(struct nfs41c_session *s, const struct cfile *f, uint64_t off, stable_how4 how,
		     const void *data, uint32_t len, uint32_t *count, stable_how4 *committed,
		     uint8_t verf[8])
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	nfs_resop4 r;
	nfsstat4 st = cl_op(s, 0, f, cl_write(off, how, data, len), &r, &ar);
	if (!st) {
		if (count)
			*count = r.u.opwrite.u.resok4.count;
		if (committed)
			*committed = r.u.opwrite.u.resok4.committed;
		if (verf)
			memcpy(verf, r.u.opwrite.u.resok4.writeverf, 8);
	}
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 cl_do_read(struct nfs41c_session *s, const struct cfile *f, uint64_t off, uint32_t count,
		    void *buf, uint32_t *n, bool *eof)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4u << 20);
	nfs_resop4 r;
	nfsstat4 st = cl_op(s, 0, f, cl_read(off, count), &r, &ar);
	if (!st) {
		*n = r.u.opread.u.resok4.data.len;
		*eof = r.u.opread.u.resok4.eof;
		CHECK(*n <= count);
		if (buf)
			memcpy(buf, r.u.opread.u.resok4.data.val, *n);
	}
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 cl_do_commit(struct nfs41c_session *s, const struct cfile *f, uint64_t off, uint32_t count,
		      uint8_t verf[8])
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	nfs_resop4 r;
	nfsstat4 st = cl_op(s, 0, f, cl_commit(off, count), &r, &ar);
	if (!st && verf)
		memcpy(verf, r.u.opcommit.u.resok4.writeverf, 8);
	xdr_arena_release(&ar);
	return st;
}

bool cl_is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}
