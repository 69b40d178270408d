/* SPDX-License-Identifier: MIT */
/*
 * braidctl's layout commands (nfsd/xdr/braid_admin.x LAYOUT, POLICY_GET,
 * POLICY_SET, RECALL; mds/admin.c) against braid-mds with two braid-ds:
 *  - LAYOUT shows where a file's segment lives (the data server its
 *    object is on, with host name and address), each segment of a
 *    segmented file with its offset, length and data server, a page at a
 *    time; paths that are relative, hold "..", name nothing or name a
 *    directory are refused, saying why;
 *  - POLICY_SET puts a policy on a directory (files created below take
 *    it), refuses a bad policy with the reason and a file as the target;
 *    POLICY_GET shows a directory's own policy and the nearest ancestor's
 *    that its new files take, or the default; an empty policy removes it;
 *  - RECALL of a client or a file sends CB_LAYOUTRECALL over the client's
 *    back channel (RFC 8881 §12.5.5), and answers NOENT when nothing is
 *    held; CLIENTS shows the client's layouts;
 *  - braidctl's library prints those as tables and JSON.
 */
#include "config.h"

#include "tests/mds/layout-test.h"
#include "tests/mds/admin-test.h"

#include "mds/data.h"
#include "tools/braidctl_lib.h"

static struct lt L;

/* braidctl [--json] args... through its library: its output (malloc'd). */
static char *ctl(bool json, int argc, const char **argv)
{
	char *buf = NULL, mds[32];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	CHECK(out);
	snprintf(mds, sizeof(mds), "127.0.0.1:%d", L.m.port);
	struct braidctl_opts o = {
	    .mds = mds, .key_file = L.m.key_path, .json = json, .out = out, .err = stderr};
	struct braidctl *b;
	CHECK_EQ(braidctl_open(&o, &b), BRAIDCTL_OK);
	CHECK_EQ(braidctl_run(b, argc, (char **)argv), BRAIDCTL_OK);
	braidctl_close(b);
	fclose(out);
	fprintf(stderr, "%s", buf);
	return buf;
}

/* LAYOUT of path from segment 'from', at most max: the status; the reply in *ok (ar). */
static int32_t layout_of(const char *path, uint64_t from, uint32_t max,
			 braid_admin_layout_resok *ok, char *why, size_t whylen,
			 struct xdr_arena *ar)
{
	braid_admin_layout_args a = {xdr_string_of(path), from, max};
	braid_admin_layout_res r;
	at_call(&L.m, BRAID_ADMINPROC_LAYOUT, &a, &r, ar);
	if (r.status) {
		CHECK(r.u.why.len > 0);
		snprintf(why, whylen, "%.*s", (int)r.u.why.len, (const char *)r.u.why.val);
		fprintf(stderr, "  LAYOUT %s: %d: %s\n", path, r.status, why);
	} else {
		*ok = r.u.ok;
	}
	return r.status;
}

static const braid_admin_device *device(const braid_admin_layout_resok *ok, uint32_t id)
{
	for (uint32_t i = 0; i < ok->ly_devices.len; i++)
		if (ok->ly_devices.val[i].dv_id == id)
			return &ok->ly_devices.val[i];
	return NULL;
}

static void t_layout_whole(struct nfs41c_session *s, struct ts_openres *f, struct lt_layout *lay)
{
	lt_create(s, NULL, "f", f);
	CHECK_EQ(lt_get_page(s, &f->fh, LAYOUTIOMODE4_RW, 0, &f->sid, lay), NFS4_OK);
	uint64_t ino = lt_ino(&L, &f->fh);
	struct mds_attr at;
	CHECK_EQ(mds_inode_getattr(braid_mds_store(L.m.mds), ino, &at), 0);
	struct mds_layout_seg seg;
	CHECK_EQ(mds_data_object(L.m.mds, &at, false, &seg), 0);

	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_layout_resok ok;
	char why[1100];
	CHECK_EQ(layout_of("/f", 0, 10, &ok, why, sizeof(why), &ar), BRAID_ADMIN_OK);
	CHECK_EQ(ok.ly_ino, ino);
	CHECK(ok.ly_laid_out);
	CHECK(at_eq(ok.ly_policy.lp_text, "whole,mirrors=1"));
	CHECK_EQ(ok.ly_segments.len, 1);
	CHECK(ok.ly_eof);
	const braid_admin_segment *g = &ok.ly_segments.val[0];
	CHECK_EQ(g->sg_index, 0);
	CHECK_EQ(g->sg_offset, 0);
	CHECK_EQ(g->sg_length, UINT64_MAX);
	CHECK_EQ(g->sg_ds.len, 1);
	CHECK_EQ(g->sg_ds.val[0], seg.ds[0]);
	const braid_admin_device *d = device(&ok, seg.ds[0]);
	CHECK(d && d->dv_up && !d->dv_drained);
	struct cds *x = lt_ds_by_id(&L, seg.ds[0]);
	CHECK(x && at_eq(d->dv_hostname, x->name));
	char ua[64];
	snprintf(ua, sizeof(ua), "127.0.0.1.%d.%d", x->port >> 8, x->port & 255);
	CHECK(at_eq(d->dv_addr.na_uaddr, ua));
	xdr_arena_release(&ar);

	/* what LAYOUT refuses, and why */
	static const struct {
		const char *path;
		int32_t st;
		const char *why;
	} bad[] = {
	    {"/", BRAID_ADMIN_ISDIR, "is a directory"},
	    {"/nope", BRAID_ADMIN_NOENT, "/nope: no such file or directory"},
	    {"f", BRAID_ADMIN_INVAL, "not an absolute path"},
	    {"/../f", BRAID_ADMIN_INVAL, "'..' are not allowed"},
	    {"/f/x", BRAID_ADMIN_NOTDIR, "/f: not a directory"},
	    {"", BRAID_ADMIN_INVAL, "not an absolute path"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		xdr_arena_init(&ar, NULL, 0, 1u << 20);
		CHECK_EQ(layout_of(bad[i].path, 0, 10, &ok, why, sizeof(why), &ar), bad[i].st);
		CHECK(strstr(why, bad[i].why));
		xdr_arena_release(&ar);
	}
}

/* POLICY_GET: own (or ""), effective, from. */
static int32_t policy_get(const char *path, char *own, char *eff, char *from)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_path_args a = {xdr_string_of(path)};
	braid_admin_policy_res r;
	at_call(&L.m, BRAID_ADMINPROC_POLICY_GET, &a, &r, &ar);
	if (!r.status) {
		const braid_admin_policy_resok *ok = &r.u.ok;
		snprintf(own, 200, "%.*s", ok->pg_has_own ? (int)ok->pg_own.lp_text.len : 0,
			 (const char *)ok->pg_own.lp_text.val);
		snprintf(eff, 200, "%.*s", (int)ok->pg_effective.lp_text.len,
			 (const char *)ok->pg_effective.lp_text.val);
		snprintf(from, 200, "%.*s", (int)ok->pg_from.len, (const char *)ok->pg_from.val);
		CHECK(ok->pg_effective.lp_mode >= 1 && ok->pg_effective.lp_mode <= 3);
	} else {
		CHECK(r.u.why.len > 0);
	}
	xdr_arena_release(&ar);
	return r.status;
}

static uint64_t mkdir_at(uint64_t dir, const char *name)
{
	struct mds_store *st = braid_mds_store(L.m.mds);
	struct mds_create_args ca = {.dir = dir,
				     .name = name,
				     .name_len = strlen(name),
				     .type = MDS_DIR,
				     .how = MDS_CREATE_GUARDED,
				     .mode = 0777};
	struct mds_create_res cr;
	CHECK_EQ(mds_dir_create(st, &ca, &cr), 0);
	return cr.attr.ino;
}

static void t_policy(struct nfs41c_session *s)
{
	char own[200], eff[200], from[200], msg[1200];
	CHECK_EQ(policy_get("/", own, eff, from), BRAID_ADMIN_OK);
	CHECK(!strcmp(own, "") && !strcmp(eff, "whole,mirrors=1") && !strcmp(from, ""));

	struct mds_store *st = braid_mds_store(L.m.mds);
	uint64_t d = mkdir_at(mds_store_root(st), "d");
	mkdir_at(d, "sub");
	const char *text = "segments,segment_size=1M,width=2";
	struct layout_policy p;
	char want[200], why[200];
	CHECK_EQ(layout_policy_parse(text, &p, why, sizeof(why)), 0);
	layout_policy_format(&p, want, sizeof(want));

	braid_admin_policy_set_args sa = {xdr_string_of("/d"), xdr_string_of(text)};
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_POLICY_SET, &sa, msg, sizeof(msg)),
		 BRAID_ADMIN_OK);
	CHECK(strstr(msg, want));
	CHECK_EQ(policy_get("/d", own, eff, from), BRAID_ADMIN_OK);
	CHECK(!strcmp(own, want) && !strcmp(eff, want) && !strcmp(from, "/d"));
	CHECK_EQ(policy_get("/d/sub", own, eff, from), BRAID_ADMIN_OK);
	CHECK(!strcmp(own, "") && !strcmp(eff, want) && !strcmp(from, "/d"));
	CHECK_EQ(policy_get("/f", own, eff, from), BRAID_ADMIN_NOTDIR);
	CHECK_EQ(policy_get("/d/none", own, eff, from), BRAID_ADMIN_NOENT);

	/* refusals: a bad policy (the reason given), a file, no such directory */
	sa.ps_policy = xdr_string_of("segments,segment_size=3M");
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_POLICY_SET, &sa, msg, sizeof(msg)),
		 BRAID_ADMIN_INVAL);
	CHECK(strstr(msg, "policy 'segments,segment_size=3M': "));
	sa.ps_policy = xdr_string_of("nosuchmode");
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_POLICY_SET, &sa, NULL, 0), BRAID_ADMIN_INVAL);
	sa = (braid_admin_policy_set_args){xdr_string_of("/f"), xdr_string_of(text)};
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_POLICY_SET, &sa, msg, sizeof(msg)),
		 BRAID_ADMIN_NOTDIR);
	sa.ps_path = xdr_string_of("/nodir");
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_POLICY_SET, &sa, NULL, 0), BRAID_ADMIN_NOENT);
	CHECK_EQ(policy_get("/d", own, eff, from), BRAID_ADMIN_OK);
	CHECK(!strcmp(own, want)); /* unchanged */

	/* a file created in /d takes its policy; three segments laid out */
	struct ts_fh dfh;
	{
		nfs_argop4 ops[3] = {mt_putrootfh(), mt_lookup("d"), mt_getfh()};
		COMPOUND4res res;
		struct xdr_arena ar;
		ts_run(s, ops, 3, &res, &ar);
		CHECK_EQ(ts_st(&res, 2), NFS4_OK);
		const nfs_fh4 *f = &res.resarray.val[3].u.opgetfh.u.resok4.object;
		memcpy(dfh.b, f->val, f->len);
		dfh.len = f->len;
		xdr_arena_release(&ar);
	}
	struct ts_openres g;
	lt_create(s, &dfh, "g", &g);
	struct mds_attr at;
	CHECK_EQ(mds_inode_getattr(st, lt_ino(&L, &g.fh), &at), 0);
	uint32_t on[3];
	for (uint64_t n = 0; n < 3; n++) {
		struct mds_file_map m;
		struct mds_layout_seg seg;
		CHECK_EQ(mds_data_segment(L.m.mds, &at, n, true, NULL, 0, &m, &seg), 0);
		CHECK_EQ(seg.nds, 1);
		on[n] = seg.ds[0];
	}
	CHECK(on[0] != on[1] && on[0] == on[2]); /* round the set of two */
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_layout_resok ok;
	CHECK_EQ(layout_of("/d/g", 0, 2, &ok, why, sizeof(why), &ar), BRAID_ADMIN_OK);
	CHECK(at_eq(ok.ly_policy.lp_text, want));
	CHECK(ok.ly_recorded && ok.ly_laid_out);
	CHECK_EQ(ok.ly_policy.lp_seg_shift, 20);
	CHECK_EQ(ok.ly_set.len, 2);
	CHECK_EQ(ok.ly_segments.len, 2);
	CHECK(!ok.ly_eof);
	for (unsigned n = 0; n < 2; n++) {
		CHECK_EQ(ok.ly_segments.val[n].sg_index, n);
		CHECK_EQ(ok.ly_segments.val[n].sg_offset, (uint64_t)n << 20);
		CHECK_EQ(ok.ly_segments.val[n].sg_length, 1u << 20);
		CHECK_EQ(ok.ly_segments.val[n].sg_ds.val[0], on[n]);
		CHECK(device(&ok, on[n]));
	}
	uint64_t next = ok.ly_cookie;
	CHECK_EQ(next, 2);
	xdr_arena_release(&ar);
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	CHECK_EQ(layout_of("/d/g", next, 2, &ok, why, sizeof(why), &ar), BRAID_ADMIN_OK);
	CHECK_EQ(ok.ly_segments.len, 1);
	CHECK(ok.ly_eof);
	CHECK_EQ(ok.ly_segments.val[0].sg_index, 2);
	CHECK_EQ(ok.ly_segments.val[0].sg_offset, 2u << 20);
	CHECK_EQ(ok.ly_segments.val[0].sg_ds.val[0], on[2]);
	xdr_arena_release(&ar);

	/* braidctl layout: one row per segment (one mirror each), then the
	 * data servers; JSON with the same */
	const char *argv[] = {"layout", "/d/g"};
	char *out = ctl(false, 2, argv);
	char row[300];
	for (unsigned k = 0; k < 3; k++) {
		struct cds *x = lt_ds_by_id(&L, on[k]);
		CHECK(x);
		snprintf(row, sizeof(row), "\n%u ", k);
		char *r = strstr(out, row);
		CHECK(r);
		snprintf(row, sizeof(row), "%u (%s)\n", on[k], x->name);
		CHECK(strstr(r, row) && strstr(r, row) < strchr(r + 1, '\n') + 1);
	}
	CHECK(strstr(out, "1.0M"));
	CHECK(strstr(out, "policy segments,segment_size=1M"));
	CHECK(strstr(out, "ID  HOST"));
	free(out);
	out = ctl(true, 2, argv);
	CHECK(strstr(out, "\"segments\": ["));
	CHECK(strstr(out, "\"index\": 2,"));
	snprintf(row, sizeof(row), "\"offset\": %u,", 2u << 20);
	CHECK(strstr(out, row));
	CHECK(strstr(out, "\"length\": 1048576,"));
	CHECK(strstr(out, "\"mode\": \"segments\""));
	free(out);
	const char *pget[] = {"policy", "get", "/d/sub"};
	out = ctl(false, 3, pget);
	snprintf(row, sizeof(row), "new files take: %s (from /d)", want);
	CHECK(strstr(out, row));
	free(out);
	CHECK_EQ(ts_close(s, &g.fh, &g.sid, NULL), NFS4_OK);

	/* removed: files below inherit again (here, the default) */
	sa = (braid_admin_policy_set_args){xdr_string_of("/d"), xdr_string_of("")};
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_POLICY_SET, &sa, msg, sizeof(msg)),
		 BRAID_ADMIN_OK);
	CHECK_EQ(policy_get("/d/sub", own, eff, from), BRAID_ADMIN_OK);
	CHECK(!strcmp(own, "") && !strcmp(eff, "whole,mirrors=1") && !strcmp(from, ""));
}

/* The client's entry in CLIENTS: holds layouts, layoutgets, recalls. */
static void client_layouts(uint64_t id, bool *held, uint64_t *gets, uint64_t *recalls)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_list_args a = {0, 10};
	braid_admin_clients_res r;
	at_call(&L.m, BRAID_ADMINPROC_CLIENTS, &a, &r, &ar);
	CHECK_EQ(r.status, BRAID_ADMIN_OK);
	bool found = false;
	for (uint32_t i = 0; i < r.u.ok.cs_entries.len; i++) {
		const braid_admin_client *c = &r.u.ok.cs_entries.val[i];
		if (c->cl_clientid != id)
			continue;
		found = true;
		*held = c->cl_layouts;
		*gets = c->cl_layoutgets;
		*recalls = c->cl_recalls;
	}
	CHECK(found);
	xdr_arena_release(&ar);
}

/* LAYOUTRETURN of everything, with the stateid the last recall named. */
static void return_recalled(struct nfs41c_session *s, const struct ts_openres *f)
{
	pthread_mutex_lock(&lt_cbs.mu);
	stateid4 sid = lt_cbs.last.clora_recall.u.lor_layout.lor_stateid;
	pthread_mutex_unlock(&lt_cbs.mu);
	CHECK_EQ(lt_return_all(s, &f->fh, &sid), NFS4_OK);
}

static void t_recall(struct nfs41c_session *s, const struct ts_openres *f)
{
	uint64_t id = ts_clientid(s);
	bool held;
	uint64_t gets, recalls;
	client_layouts(id, &held, &gets, &recalls);
	CHECK(held && gets >= 1);
	uint64_t recalls0 = recalls;
	/* braidctl clients: the client, with layouts held */
	const char *argv[] = {"clients"};
	char *out = ctl(false, 1, argv), idtext[32];
	snprintf(idtext, sizeof(idtext), "0x%016llx", (unsigned long long)id);
	char *r = strstr(out, idtext);
	CHECK(r && strstr(r, "admin-layouts") && strstr(r, "yes"));
	free(out);

	char msg[1200];
	int n0 = atomic_load(&lt_cbs.recalls);
	braid_admin_recall_args ra = {.type = BRAID_ADMIN_RECALL_CLIENT, .u.ra_clientid = id};
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_RECALL, &ra, msg, sizeof(msg)), BRAID_ADMIN_OK);
	CHECK(strstr(msg, "recall") && strstr(msg, "revoked"));
	lt_wait_count(&lt_cbs.recalls, n0 + 1, 10);
	return_recalled(s, f);
	client_layouts(id, &held, &gets, &recalls);
	CHECK(!held && recalls == recalls0 + 1);

	/* nothing held: nothing to recall */
	ra = (braid_admin_recall_args){.type = BRAID_ADMIN_RECALL_FILE,
				       .u.ra_path = xdr_string_of("/f")};
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_RECALL, &ra, msg, sizeof(msg)), BRAID_ADMIN_NOENT);
	CHECK(strstr(msg, "no client holds a layout of /f"));

	/* a layout again, then the file's recall */
	struct lt_layout lay;
	CHECK_EQ(lt_get_page(s, &f->fh, LAYOUTIOMODE4_READ, 0, &f->sid, &lay), NFS4_OK);
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_RECALL, &ra, msg, sizeof(msg)), BRAID_ADMIN_OK);
	lt_wait_count(&lt_cbs.recalls, n0 + 2, 10);
	pthread_mutex_lock(&lt_cbs.mu);
	CHECK_EQ(lt_cbs.last.clora_recall.lor_recalltype, LAYOUTRECALL4_FILE);
	nfs_fh4 rfh = lt_cbs.last.clora_recall.u.lor_layout.lor_fh;
	CHECK(rfh.len == f->fh.len && !memcmp(rfh.val, f->fh.b, rfh.len));
	pthread_mutex_unlock(&lt_cbs.mu);
	return_recalled(s, f);

	/* refusals */
	ra.u.ra_path = xdr_string_of("/");
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_RECALL, &ra, NULL, 0), BRAID_ADMIN_ISDIR);
	ra.u.ra_path = xdr_string_of("/missing");
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_RECALL, &ra, NULL, 0), BRAID_ADMIN_NOENT);
	ra = (braid_admin_recall_args){.type = BRAID_ADMIN_RECALL_CLIENT, .u.ra_clientid = 0x1234};
	CHECK_EQ(at_change(&L.m, BRAID_ADMINPROC_RECALL, &ra, msg, sizeof(msg)), BRAID_ADMIN_NOENT);
	CHECK(strstr(msg, "0x0000000000001234"));
}

int main(void)
{
	lt_start(&L, "/ *(rw,no_root_squash,insecure)\n", "heartbeat_interval = 1s\n", 2);
	struct nfsd_clnt *conn;
	struct nfs41c_session *s = lt_session_cb(&L, "admin-layouts", &conn);
	struct ts_openres f;
	struct lt_layout lay;
	t_layout_whole(s, &f, &lay);
	t_recall(s, &f);
	t_policy(s);
	CHECK_EQ(ts_close(s, &f.fh, &f.sid, NULL), NFS4_OK);
	nfs41c_session_destroy(s);
	nfsd_clnt_free(conn);
	lt_finish(&L);
	return 0;
}
