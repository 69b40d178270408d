/* SPDX-License-Identifier: MIT */
/*
 * braidctl's exports and clients (nfsd/xdr/braid_admin.x EXPORTS_LIST,
 * EXPORTS_RELOAD, CLIENTS, STATUS; mds/admin.c), and who may call at all:
 * every procedure but NULL answers BRAID_ADMIN_ACCESS to AUTH_SYS root and
 * to AUTH_NONE, and a call signed with another cluster's key is refused by
 * the RPC layer.  EXPORTS_LIST shows the exports in force with each
 * client's options as exports(5) writes them; EXPORTS_RELOAD puts a new
 * file in force, and keeps the old exports on a broken one, saying
 * file:line; CLIENTS lists each client ID with its owner, sessions, lease,
 * peer address and the opens and locks it holds, a page at a time.
 */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"
#include "tests/mds/admin-test.h"

#include "layout/policy.h"
#include "mds/layout.h"
#include "mds/mds_impl.h"

static struct mt M;

/* Valid arguments for each procedure (what they name need not exist). */
static const void *args_of(uint32_t proc)
{
	static braid_admin_list_args list = {0, 10};
	static braid_admin_ds_args ds = {1};
	static braid_admin_ds_remove_args rm = {1, true};
	static braid_admin_layout_args lg = {{2, (const uint8_t *)"/f"}, 0, 10};
	static braid_admin_path_args pa = {{1, (const uint8_t *)"/"}};
	static braid_admin_policy_set_args ps = {{1, (const uint8_t *)"/"},
						 {5, (const uint8_t *)"whole"}};
	static braid_admin_recall_args ra = {.type = BRAID_ADMIN_RECALL_CLIENT, .u.ra_clientid = 1};
	switch (proc) {
	case BRAID_ADMINPROC_DS_LIST:
	case BRAID_ADMINPROC_EXPORTS_LIST:
	case BRAID_ADMINPROC_CLIENTS:
		return &list;
	case BRAID_ADMINPROC_DS_ADD:
	case BRAID_ADMINPROC_DS_DRAIN:
	case BRAID_ADMINPROC_DS_LOST:
		return &ds;
	case BRAID_ADMINPROC_DS_REMOVE:
		return &rm;
	case BRAID_ADMINPROC_LAYOUT:
		return &lg;
	case BRAID_ADMINPROC_POLICY_GET:
		return &pa;
	case BRAID_ADMINPROC_POLICY_SET:
		return &ps;
	case BRAID_ADMINPROC_RECALL:
		return &ra;
	default:
		return NULL;
	}
}

static void t_only_key_holders(void)
{
	for (uint32_t proc = BRAID_ADMINPROC_STATUS; proc <= BRAID_ADMINPROC_OPSTATS; proc++) {
		const uint32_t flavors[] = {NFSD_AUTH_SYS, NFSD_AUTH_NONE};
		for (unsigned f = 0; f < 2; f++) {
			/* every result begins with its braid_admin_stat */
			uint8_t res[1024];
			struct xdr_arena ar;
			xdr_arena_init(&ar, NULL, 0, 1u << 20);
			CHECK(at_desc(proc)->res_size <= sizeof(res));
			CHECK_EQ(at_call_flavor(&M, flavors[f], proc, args_of(proc), res, &ar), 0);
			int32_t st;
			memcpy(&st, res, sizeof(st));
			if (st != BRAID_ADMIN_ACCESS)
				fprintf(stderr, "proc %u flavor %u: status %d\n", proc, flavors[f],
					st);
			CHECK_EQ(st, BRAID_ADMIN_ACCESS);
			xdr_arena_release(&ar);
		}
	}
	/* nothing was changed by those: the policy of "/" is still none */
	struct layout_policy p;
	CHECK_EQ(mds_layout_policy_inherited(M.mds, mds_store_root(braid_mds_store(M.mds)), &p),
		 -ENOENT);
	/* NULL is a ping anyone may send */
	CHECK_EQ(at_call_flavor(&M, NFSD_AUTH_NONE, BRAID_ADMINPROC_NULL, NULL, NULL, NULL), 0);
	/* another cluster's key: refused before any procedure runs */
	struct braid_key other = M.key;
	other.ctl.k[0] ^= 1;
	const struct xdr_proc_desc *d = at_desc(BRAID_ADMINPROC_STATUS);
	struct nfsd_call_opts o = {
	    .prog = BRAID_ADMIN_PROGRAM, .vers = BRAID_ADMIN_V1, .proc = BRAID_ADMINPROC_STATUS};
	braid_auth_call_opts(&o, &other);
	braid_admin_status_res sr;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	CHECK_EQ(nfsd_clnt_call(M.c, &o, d->dec_res, &sr, &ar),
		 NFSD_CALL_ERR_DENIED | NFSD_AUTH_BADVERF);
	xdr_arena_release(&ar);
}

/* EXPORTS_LIST from cookie: paths and first client options into the arrays. */
static unsigned exports_page(uint64_t cookie, uint32_t max, char paths[][64], char opts[][256],
			     bool *eof, uint64_t *next)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_list_args a = {cookie, max};
	braid_admin_exports_res r;
	at_call(&M, BRAID_ADMINPROC_EXPORTS_LIST, &a, &r, &ar);
	CHECK_EQ(r.status, BRAID_ADMIN_OK);
	CHECK(at_eq(r.u.ok.el_file, M.exports_path));
	unsigned n = r.u.ok.el_entries.len;
	for (unsigned i = 0; i < n; i++) {
		const braid_admin_export *e = &r.u.ok.el_entries.val[i];
		snprintf(paths[i], 64, "%.*s", (int)e->ex_path.len, (const char *)e->ex_path.val);
		CHECK(e->ex_id != 0 && e->ex_root != 0 && e->ex_line >= 1);
		CHECK(e->ex_clients.len >= 1);
		const braid_admin_export_client *c = &e->ex_clients.val[0];
		snprintf(opts[i], 256, "%.*s %.*s", (int)c->ec_spec.len,
			 (const char *)c->ec_spec.val, (int)c->ec_options.len,
			 (const char *)c->ec_options.val);
	}
	*eof = r.u.ok.el_eof;
	*next = r.u.ok.el_cookie;
	xdr_arena_release(&ar);
	return n;
}

static void t_exports(void)
{
	char paths[4][64], opts[4][256];
	bool eof;
	uint64_t next;
	CHECK_EQ(exports_page(0, 10, paths, opts, &eof, &next), 1);
	CHECK(eof);
	CHECK(!strcmp(paths[0], "/pub"));
	CHECK(strstr(opts[0], "* rw,no_root_squash,") && strstr(opts[0], "insecure"));

	mt_write_file(M.exports_path,
		      "/pub *(rw,no_root_squash,insecure)\n/ro 10.0.0.0/8(ro,all_squash)\n", 0644);
	char msg[1200];
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_EXPORTS_RELOAD, NULL, msg, sizeof(msg)),
		 BRAID_ADMIN_OK);
	CHECK(strstr(msg, "2 export(s) in force"));
	/* a page at a time */
	CHECK_EQ(exports_page(0, 1, paths, opts, &eof, &next), 1);
	CHECK(!eof);
	CHECK(!strcmp(paths[0], "/pub"));
	CHECK_EQ(exports_page(next, 1, paths, opts, &eof, &next), 1);
	CHECK(eof);
	CHECK(!strcmp(paths[0], "/ro"));
	CHECK(strstr(opts[0], "10.0.0.0/8 ro,root_squash,all_squash,"));
	/* the export is there for NFS too */
	struct mds_exports *x = mds_exports_get(M.mds);
	CHECK_EQ(x->n, 2);
	mds_exports_put(x);

	/* a broken file: refused with its line, the old exports stay */
	mt_write_file(M.exports_path, "/pub *(rw)\n/bad *(nosuchoption)\n", 0644);
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_EXPORTS_RELOAD, NULL, msg, sizeof(msg)),
		 BRAID_ADMIN_INVAL);
	char want[4300];
	snprintf(want, sizeof(want), "%s:2:", M.exports_path);
	CHECK(strstr(msg, want) && strstr(msg, "old ones stay in force"));
	CHECK_EQ(exports_page(0, 10, paths, opts, &eof, &next), 2);
	/* and a missing one */
	CHECK_EQ(unlink(M.exports_path), 0);
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_EXPORTS_RELOAD, NULL, msg, sizeof(msg)),
		 BRAID_ADMIN_NOENT);
	mt_write_file(M.exports_path, "/pub *(rw,no_root_squash,insecure)\n", 0644);
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_EXPORTS_RELOAD, NULL, NULL, 0), BRAID_ADMIN_OK);
}

struct seen {
	uint64_t id;
	char owner[64];
	uint32_t sessions, opens, locks;
	int64_t lease_ms;
	char peer[64];
};

static unsigned clients_page(uint64_t cookie, uint32_t max, struct seen *v, bool *eof,
			     uint64_t *next)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_list_args a = {cookie, max};
	braid_admin_clients_res r;
	at_call(&M, BRAID_ADMINPROC_CLIENTS, &a, &r, &ar);
	CHECK_EQ(r.status, BRAID_ADMIN_OK);
	unsigned n = r.u.ok.cs_entries.len;
	for (unsigned i = 0; i < n; i++) {
		const braid_admin_client *c = &r.u.ok.cs_entries.val[i];
		CHECK(i == 0 || c->cl_clientid > v[i - 1].id);
		v[i].id = c->cl_clientid;
		CHECK_EQ(c->cl_owner.len, c->cl_owner_len);
		snprintf(v[i].owner, sizeof(v[i].owner), "%.*s", (int)c->cl_owner.len,
			 (const char *)c->cl_owner.val);
		v[i].sessions = c->cl_sessions;
		v[i].opens = c->cl_opens;
		v[i].locks = c->cl_locks;
		v[i].lease_ms = c->cl_lease_left_ms;
		snprintf(v[i].peer, sizeof(v[i].peer), "%.*s", (int)c->cl_peer.len,
			 (const char *)c->cl_peer.val);
		CHECK(c->cl_confirmed);
		CHECK(!c->cl_layouts && !c->cl_layoutgets);
		/* the test client's EXCHANGE_ID goes out as AUTH_NONE: no
		 * Kerberos name, no state protection */
		CHECK_EQ(c->cl_flavor, 0);
		CHECK_EQ(c->cl_principal.len, 0);
		CHECK(!c->cl_mach_cred);
	}
	*eof = r.u.ok.cs_eof;
	*next = r.u.ok.cs_cookie;
	xdr_arena_release(&ar);
	return n;
}

static void t_clients(void)
{
	struct seen v[4];
	bool eof;
	uint64_t next;
	CHECK_EQ(clients_page(0, 10, v, &eof, &next), 0);
	CHECK(eof);

	struct nfs41c_session *a = ts_session(&M, "admin-client-a", 0, 0);
	struct ts_fh pub;
	struct ts_openres o;
	{
		nfs_argop4 ops[3] = {mt_putrootfh(), mt_lookup("pub"), mt_getfh()};
		COMPOUND4res res;
		struct xdr_arena ar;
		ts_run(a, ops, 3, &res, &ar);
		CHECK_EQ(ts_st(&res, 2), NFS4_OK);
		const nfs_fh4 *f = &res.resarray.val[3].u.opgetfh.u.resok4.object;
		memcpy(pub.b, f->val, f->len);
		pub.len = f->len;
		xdr_arena_release(&ar);
	}
	CHECK_EQ(ts_open_name(a, &pub, "owner-1", "file", OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, &o),
		 NFS4_OK);
	stateid4 lsid;
	struct ts_denied den;
	CHECK_EQ(ts_lock(a, &o.fh, WRITE_LT, false, 0, 10, &o.sid, "lock-owner", &lsid, &den),
		 NFS4_OK);

	CHECK_EQ(clients_page(0, 10, v, &eof, &next), 1);
	CHECK(eof);
	CHECK_EQ(v[0].id, ts_clientid(a));
	CHECK(!strcmp(v[0].owner, "admin-client-a"));
	CHECK_EQ(v[0].sessions, 1);
	CHECK_EQ(v[0].opens, 1);
	CHECK_EQ(v[0].locks, 1);
	CHECK(v[0].lease_ms > 80000 && v[0].lease_ms <= 90000);
	CHECK(!strncmp(v[0].peer, "127.0.0.1.", 10));

	/* a second client: two entries, in id order, a page at a time */
	struct nfs41c_session *b = ts_session(&M, "admin-client-b", 0, 0);
	CHECK_EQ(clients_page(0, 10, v, &eof, &next), 2);
	CHECK_EQ(clients_page(0, 1, v, &eof, &next), 1);
	CHECK(!eof);
	uint64_t first = v[0].id;
	CHECK_EQ(clients_page(next, 1, v + 1, &eof, &next), 1);
	CHECK(v[1].id > first);
	CHECK_EQ(clients_page(next, 1, v + 2, &eof, &next), 0);
	CHECK(eof);

	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_status_res sr;
	at_call(&M, BRAID_ADMINPROC_STATUS, NULL, &sr, &ar);
	CHECK_EQ(sr.status, BRAID_ADMIN_OK);
	CHECK_EQ(sr.u.ok.st_clients, 2);
	CHECK_EQ(sr.u.ok.st_exports, 1);
	CHECK(!sr.u.ok.st_in_grace);
	xdr_arena_release(&ar);

	/* the lock released and freed, then CLOSE (with locks held it would be
	 * NFS4ERR_LOCKS_HELD, RFC 8881 §18.2.3): nothing is held any more */
	stateid4 out;
	CHECK_EQ(ts_locku(a, &o.fh, &lsid, 0, 10, &out), NFS4_OK);
	CHECK_EQ(ts_free_stateid(a, &out), NFS4_OK);
	CHECK_EQ(ts_close(a, &o.fh, &o.sid, &out), NFS4_OK);
	CHECK_EQ(clients_page(0, 10, v, &eof, &next), 2);
	for (unsigned i = 0; i < 2; i++)
		CHECK(v[i].opens == 0 && v[i].locks == 0);
	nfs41c_session_destroy(a);
	nfs41c_session_destroy(b);
}

int main(void)
{
	mt_start(&M, "/pub *(rw,no_root_squash,insecure)\n", NULL);
	t_only_key_holders();
	t_exports();
	t_clients();
	mt_finish(&M);
	return 0;
}
