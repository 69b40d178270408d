/* SPDX-License-Identifier: MIT */
/*
 * MOUNT v3 of braid-mds (RFC 1813 §5.2), through our RPC client against an
 * in-process MDS: EXPORT lists every export with its client specs in file
 * order; MNT gives the export root's handle (a genuine MDS handle of that
 * export, which PUTFH takes) and the export's sec= flavors, follows the
 * export a subdirectory belongs to, and refuses unknown paths (NOENT),
 * unexported ones and excluded clients (ACCES), non-reserved ports unless
 * "insecure" (ACCES), bad paths (INVAL, NAMETOOLONG); an export EXPORT
 * cannot list exactly is left out; DUMP lists recorded
 * mounts, UMNT and UMNTALL remove them, and the list survives a restart
 * (rmtab), skipping lines of the file it cannot read; a list too long for
 * one reply is cut, not refused; mount = no serves no MOUNT program.
 */
#include "config.h"

#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "tests/mds/mds-test.h"

/* after mds-test.h, whose parameters are named like its typedefs (name, exports) */
#include "mount_prot.h"

static const char exports_text[] =
	"/pub 127.0.0.1(rw,insecure,sec=sys:krb5) 10.1.0.0/16(ro)\n"
	"/pub/a/b *(ro,insecure)\n"
	"/priv 10.9.9.9(rw,insecure)\n"
	"/strict 127.0.0.1(rw)\n";

static int mcall(struct mt *t, uint32_t proc, const void *args, void *res,
		 struct xdr_arena *ar)
{
	const struct xdr_proc_desc *d = &xdr_desc_MOUNT_PROGRAM_MOUNT_V3.procs[proc];
	struct nfsd_call_opts o = {
		.prog = MOUNT_PROGRAM,
		.vers = MOUNT_V3,
		.proc = proc,
		.enc_args = d->arg_size ? d->enc_arg : NULL,
		.args = args,
		.timeout_ms = 30000,
	};
	return nfsd_clnt_call(t->c, &o, d->res_size ? d->dec_res : xdr_dec_void, res, ar);
}

static dirpath dp(const char *s)
{
	return xdr_opaque_of(s, strlen(s));
}

static mountres3 mnt(struct mt *t, const char *path, struct xdr_arena *ar)
{
	dirpath p = dp(path);
	mountres3 r;
	memset(&r, 0, sizeof(r));
	CHECK_EQ(mcall(t, MOUNTPROC3_MNT, &p, &r, ar), 0);
	return r;
}

static bool str_is(const xdr_string *s, const char *want)
{
	return s->len == strlen(want) && !memcmp(s->val, want, s->len);
}

/* How many DUMP entries are (host, dir); and the list's length in *total. */
static unsigned dump_count(struct mt *t, const char *host, const char *dir, unsigned *total)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	mountlist ml = NULL;
	CHECK_EQ(mcall(t, MOUNTPROC3_DUMP, NULL, &ml, &ar), 0);
	unsigned n = 0, all = 0;
	for (const mountbody *b = ml; b; b = b->ml_next, all++)
		if (str_is(&b->ml_hostname, host) && str_is(&b->ml_directory, dir))
			n++;
	xdr_arena_release(&ar);
	if (total)
		*total = all;
	return n;
}

static void umnt(struct mt *t, const char *path)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	dirpath p = dp(path);
	CHECK_EQ(mcall(t, MOUNTPROC3_UMNT, &p, NULL, &ar), 0);
	xdr_arena_release(&ar);
}

/* The export's id and root inode, as the MDS resolved them. */
static void export_of(struct mt *t, const char *path, uint32_t *id, uint64_t *root)
{
	struct mds_exports *x = mds_exports_get(t->mds);
	const struct export_entry *e = exports_find(x->ex, path);
	CHECK(e);
	bool found = false;
	for (unsigned i = 0; i < x->n; i++)
		if (x->v[i].e == e) {
			*id = x->v[i].id;
			*root = x->v[i].root_ino;
			found = true;
		}
	CHECK(found);
	mds_exports_put(x);
}

static void check_export_list(struct mt *t)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	exports ex = NULL;
	CHECK_EQ(mcall(t, MOUNTPROC3_EXPORT, NULL, &ex, &ar), 0);
	static const char *const want[][3] = {
		{ "/pub", "127.0.0.1", "10.1.0.0/16" },
		{ "/pub/a/b", "*", NULL },
		{ "/priv", "10.9.9.9", NULL },
		{ "/strict", "127.0.0.1", NULL },
	};
	const exportnode *en = ex;
	for (unsigned i = 0; i < 4; i++, en = en->ex_next) {
		CHECK(en);
		CHECK(str_is(&en->ex_dir, want[i][0]));
		const groupnode *g = en->ex_groups;
		for (unsigned j = 1; j < 3 && want[i][j]; j++, g = g->gr_next) {
			CHECK(g);
			CHECK(str_is(&g->gr_name, want[i][j]));
		}
		CHECK(g == NULL);
	}
	CHECK(en == NULL);
	xdr_arena_release(&ar);
}

/* MNT of /pub: the root's handle under /pub's export id, flavors sys, krb5. */
static void check_mnt_root(struct mt *t, nfs_fh4 *out, struct xdr_arena *keep)
{
	mountres3 r = mnt(t, "/pub", keep);
	CHECK_EQ(r.fhs_status, MNT3_OK);
	const mountres3_ok *ok = &r.u.mountinfo;
	CHECK_EQ(ok->fhandle.len, MDS_FH_SIZE);
	struct mds_fh fh;
	CHECK_EQ(mds_fh_parse(t->mds, ok->fhandle.val, ok->fhandle.len, &fh), 0);
	uint32_t id;
	uint64_t root;
	export_of(t, "/pub", &id, &root);
	CHECK_EQ(fh.export_id, id);
	CHECK_EQ(fh.ino, root);
	struct mds_attr a;
	CHECK_EQ(mds_inode_getattr(braid_mds_store(t->mds), root, &a), 0);
	CHECK_EQ(fh.gen, a.generation);
	CHECK_EQ(ok->auth_flavors.len, 2);
	CHECK_EQ(ok->auth_flavors.val[0], EXPORT_SEC_SYS);
	CHECK_EQ(ok->auth_flavors.val[1], EXPORT_SEC_KRB5);
	out->len = ok->fhandle.len;
	out->val = ok->fhandle.val;
}

/* PUTFH takes the handle MNT gave, and GETFH gives it back. */
static void check_putfh(struct mt *t, const nfs_fh4 *fh)
{
	struct nfs41c_session *s = mt_session(t, "mount-v3", 0, 0);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	nfs_argop4 ops[2] = { mt_putfh(fh), mt_getfh() };
	COMPOUND4res res;
	mt_compound(s, ops, 2, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	const nfs_fh4 *got = &res.resarray.val[2].u.opgetfh.u.resok4.object;
	CHECK_EQ(got->len, fh->len);
	CHECK(!memcmp(got->val, fh->val, fh->len));
	xdr_arena_release(&ar);
	nfs41c_session_destroy(s);
}

static void check_mnt_paths(struct mt *t)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	struct mds_fh fh;
	uint32_t pub_id, ab_id;
	uint64_t pub_root, ab_root;
	export_of(t, "/pub", &pub_id, &pub_root);
	export_of(t, "/pub/a/b", &ab_id, &ab_root);

	/* a subdirectory of /pub (made when /pub/a/b was resolved) is /pub's */
	mountres3 r = mnt(t, "/pub/a", &ar);
	CHECK_EQ(r.fhs_status, MNT3_OK);
	CHECK_EQ(mds_fh_parse(t->mds, r.u.mountinfo.fhandle.val, r.u.mountinfo.fhandle.len, &fh),
		 0);
	CHECK_EQ(fh.export_id, pub_id);
	CHECK(fh.ino != pub_root && fh.ino != ab_root);

	/* a nested export is its own; the path is normalized first */
	r = mnt(t, "//pub/a/../a/./b/", &ar);
	CHECK_EQ(r.fhs_status, MNT3_OK);
	CHECK_EQ(mds_fh_parse(t->mds, r.u.mountinfo.fhandle.val, r.u.mountinfo.fhandle.len, &fh),
		 0);
	CHECK_EQ(fh.export_id, ab_id);
	CHECK_EQ(fh.ino, ab_root);
	CHECK_EQ(r.u.mountinfo.auth_flavors.len, 1);
	CHECK_EQ(r.u.mountinfo.auth_flavors.val[0], EXPORT_SEC_SYS);

	CHECK_EQ(mnt(t, "/nowhere", &ar).fhs_status, MNT3ERR_NOENT);
	CHECK_EQ(mnt(t, "/pub/missing", &ar).fhs_status, MNT3ERR_NOENT);
	/* exists, but not exported (the pseudo filesystem's root) */
	CHECK_EQ(mnt(t, "/", &ar).fhs_status, MNT3ERR_ACCES);
	CHECK_EQ(mnt(t, "/pub/../..", &ar).fhs_status, MNT3ERR_ACCES);
	/* the client list excludes 127.0.0.1 */
	CHECK_EQ(mnt(t, "/priv", &ar).fhs_status, MNT3ERR_ACCES);
	/* "secure" (the default): our client's port is not reserved */
	CHECK_EQ(mnt(t, "/strict", &ar).fhs_status, MNT3ERR_ACCES);
	CHECK_EQ(mnt(t, "pub", &ar).fhs_status, MNT3ERR_INVAL);
	CHECK_EQ(mnt(t, "", &ar).fhs_status, MNT3ERR_INVAL);
	static const char nul[] = "/pub\0/a";
	dirpath p = xdr_opaque_of(nul, sizeof(nul) - 1);
	mountres3 rr;
	CHECK_EQ(mcall(t, MOUNTPROC3_MNT, &p, &rr, &ar), 0);
	CHECK_EQ(rr.fhs_status, MNT3ERR_INVAL);
	char longname[300] = "/pub/";
	memset(longname + 5, 'x', 256);
	longname[261] = '\0';
	CHECK_EQ(mnt(t, longname, &ar).fhs_status, MNT3ERR_NAMETOOLONG);
	/* the longest path, all slashes, is "/" */
	char huge[MNTPATHLEN + 1];
	memset(huge, '/', MNTPATHLEN);
	huge[MNTPATHLEN] = '\0';
	CHECK_EQ(mnt(t, huge, &ar).fhs_status, MNT3ERR_ACCES);
	xdr_arena_release(&ar);
}

int main(void)
{
	struct mt t;
	char longspec[MNTNAMLEN + 2], text[sizeof(exports_text) + sizeof(longspec) + 64];
	memset(longspec, 'h', sizeof(longspec) - 2);
	longspec[sizeof(longspec) - 2] = '*';
	longspec[sizeof(longspec) - 1] = '\0';
	/* an export with a spec too long for EXPORT */
	snprintf(text, sizeof(text), "%s/unlistable 127.0.0.1(ro) %s(ro)\n", exports_text,
		 longspec);
	mt_start(&t, text, NULL);
	struct xdr_arena keep;
	xdr_arena_init(&keep, NULL, 0, 1 << 20);

	CHECK_EQ(mcall(&t, MOUNTPROC3_NULL, NULL, NULL, &keep), 0);
	check_export_list(&t);
	unsigned total;
	CHECK_EQ(dump_count(&t, "127.0.0.1", "/pub", &total), 0);
	CHECK_EQ(total, 0);

	nfs_fh4 fh;
	check_mnt_root(&t, &fh, &keep);
	check_putfh(&t, &fh);
	check_mnt_paths(&t);

	/* DUMP: what was mounted, once each however often; refusals are not recorded */
	mnt(&t, "/pub", &keep);
	CHECK_EQ(dump_count(&t, "127.0.0.1", "/pub", &total), 1);
	CHECK_EQ(dump_count(&t, "127.0.0.1", "/pub/a", NULL), 1);
	CHECK_EQ(dump_count(&t, "127.0.0.1", "/pub/a/b", NULL), 1);
	CHECK_EQ(total, 3);

	umnt(&t, "/pub/");
	umnt(&t, "/not-mounted");
	CHECK_EQ(dump_count(&t, "127.0.0.1", "/pub", &total), 0);
	CHECK_EQ(total, 2);

	/* a restart keeps the list (rmtab); lines it cannot read are skipped */
	mt_stop(&t);
	char rmtab[4300];
	snprintf(rmtab, sizeof(rmtab), "%s/store/rmtab", t.dir);
	FILE *f = fopen(rmtab, "a");
	CHECK(f);
	fprintf(f, "garbage\n10.0.0.7 /bad\\777\n10.0.0.8 relative\n"
		   "10.0.0.9 /with\\040space\n");
	fclose(f);
	mt_boot(&t);
	CHECK_EQ(dump_count(&t, "127.0.0.1", "/pub/a", &total), 1);
	CHECK_EQ(dump_count(&t, "127.0.0.1", "/pub/a/b", NULL), 1);
	CHECK_EQ(dump_count(&t, "10.0.0.9", "/with space", NULL), 1);
	CHECK_EQ(total, 3);

	/* UMNTALL forgets this client's mounts only, and that too survives */
	CHECK_EQ(mcall(&t, MOUNTPROC3_UMNTALL, NULL, NULL, &keep), 0);
	CHECK_EQ(dump_count(&t, "10.0.0.9", "/with space", &total), 1);
	CHECK_EQ(total, 1);
	mt_stop(&t);
	mt_boot(&t);
	CHECK_EQ(dump_count(&t, "10.0.0.9", "/with space", &total), 1);
	CHECK_EQ(total, 1);
	mt_stop(&t);

	/*
	 * A long list: more records than are kept, many of them paths of
	 * MNTPATHLEN bytes.  DUMP still answers, with as many as fit its
	 * budget, oldest first.
	 */
	f = fopen(rmtab, "w");
	CHECK(f);
	char longdir[MNTPATHLEN + 1];
	longdir[0] = '/';
	memset(longdir + 1, 'd', MNTPATHLEN - 1);
	longdir[MNTPATHLEN] = '\0';
	for (unsigned i = 0; i < 5000; i++)
		fprintf(f, "10.2.%u.%u %s\n", i / 256, i % 256, i % 2 ? "/short" : longdir);
	fclose(f);
	mt_boot(&t);
	CHECK_EQ(dump_count(&t, "10.2.0.0", longdir, &total), 1);
	CHECK_EQ(dump_count(&t, "10.2.0.1", "/short", NULL), 1);
	CHECK(total >= 900 && total < 4096);
	mt_stop(&t);

	/* mount = no: no MOUNT program */
	FILE *c = fopen(t.conf_path, "a");
	CHECK(c);
	fprintf(c, "mount = no\n");
	fclose(c);
	mt_boot(&t);
	CHECK_EQ(mcall(&t, MOUNTPROC3_NULL, NULL, NULL, &keep),
		 NFSD_CALL_ERR_ACCEPT | NFSD_PROG_UNAVAIL);

	xdr_arena_release(&keep);
	mt_finish(&t);
	return 0;
}
