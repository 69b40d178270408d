/* SPDX-License-Identifier: MIT */
/*
 * braid-mds as a daemon: settings through the schema (an unknown key or a
 * bad value stops startup with file:line), startup refusals that say what
 * to fix (key file, exports syntax), export paths made in the namespace,
 * exports reload keeping the old exports on error, and EXCHANGE_ID
 * answering as a pNFS MDS (RFC 8881 §13.1) with one server_owner and scope
 * on every address and across restarts (§2.10.5), so clients trunk.
 */
#include "config.h"

#include "nfs4_prot.h"

#include <netdb.h>

#include "tests/mds/mds-test.h"

static EXCHANGE_ID4resok exid(struct nfsd_clnt *c, const char *owner, struct xdr_arena *ar)
{
	nfs_argop4 a = { .argop = OP_EXCHANGE_ID };
	EXCHANGE_ID4args *ea = &a.u.opexchange_id;
	memset(ea->eia_clientowner.co_verifier, 7, 8);
	ea->eia_clientowner.co_ownerid = xdr_opaque_of(owner, (uint32_t)strlen(owner));
	ea->eia_flags = 0;
	ea->eia_state_protect.spa_how = SP4_NONE;
	COMPOUND4res res;
	CHECK_EQ(nfs41c_compound_raw(c, NULL, 1, &a, 1, &res, ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	return res.resarray.val[0].u.opexchange_id.u.eir_resok4;
}

static bool opaque_eq(const xdr_opaque *a, const xdr_opaque *b)
{
	return a->len == b->len && !memcmp(a->val, b->val, a->len);
}

static void settings_errors(void)
{
	const char *dir = test_dir_make("mds-conf");
	char path[4200];
	struct mds_settings s;
	struct conf_error err;

	snprintf(path, sizeof(path), "%s/a.conf", dir);
	mt_write_file(path, "[mds]\nstore_dir = /x\nno_such_key = 1\n", 0644);
	CHECK_EQ(mds_settings_load(path, &s, &err), -EINVAL);
	CHECK_EQ(err.line, 3);
	CHECK(strstr(err.msg, "no_such_key"));

	mt_write_file(path, "[mds]\nlease_time = 1s\n", 0644);
	CHECK_EQ(mds_settings_load(path, &s, &err), -EINVAL);
	CHECK_EQ(err.line, 2);

	mt_write_file(path, "[mds]\ndata_io = sometimes\n", 0644);
	CHECK_EQ(mds_settings_load(path, &s, &err), -EINVAL);
	CHECK_EQ(err.line, 2);

	mt_write_file(path, "[mds]\nlease_time = 30s\ndata_io = refuse\n", 0644);
	CHECK_EQ(mds_settings_load(path, &s, &err), 0);
	CHECK_EQ(s.lease_ms, 30000);
	CHECK_EQ(s.data_io, MDS_DATA_REFUSE);
	CHECK_EQ(s.grace_ms, 90000); /* default */
	test_dir_cleanup();
}

static void startup_refusals(void)
{
	struct mt t;
	char msg[512];
	struct braid_mds *m = NULL;

	/* a key file others can read */
	mt_prepare(&t, "/ *(rw)\n", NULL);
	struct conf_error cerr;
	CHECK_EQ(mds_settings_load(t.conf_path, &t.set, &cerr), 0);
	CHECK(chmod(t.key_path, 0644) == 0);
	CHECK(braid_mds_start(&t.set, &m, msg, sizeof(msg)) < 0);
	CHECK(strstr(msg, t.key_path));
	CHECK(chmod(t.key_path, 0600) == 0);

	/* an exports syntax error names file and line */
	mt_write_file(t.exports_path, "/ *(rw)\n/data *(rw,bogus_option)\n", 0644);
	CHECK(braid_mds_start(&t.set, &m, msg, sizeof(msg)) < 0);
	char where[4300];
	snprintf(where, sizeof(where), "%s:2", t.exports_path);
	CHECK(strstr(msg, where));

	/* a missing exports file */
	CHECK(unlink(t.exports_path) == 0);
	CHECK(braid_mds_start(&t.set, &m, msg, sizeof(msg)) < 0);
	CHECK(strstr(msg, t.exports_path));
	test_dir_cleanup();
}

/* PUTROOTFH + LOOKUP name + GETFH: the status of the LOOKUP. */
static nfsstat4 lookup_status(struct nfs41c_session *s, const char *name)
{
	uint8_t buf[8192];
	struct xdr_arena ar;
	xdr_arena_init(&ar, buf, sizeof(buf), 1 << 20);
	nfs_argop4 ops[3] = { mt_putrootfh(), mt_lookup(name), mt_getfh() };
	COMPOUND4res res;
	mt_compound(s, ops, 3, &res, &ar);
	nfsstat4 st = res.status;
	xdr_arena_release(&ar);
	return st;
}

/*
 * exports(5) host names and wildcards match the client's name (a reverse
 * lookup: 127.0.0.1 is "localhost" in /etc/hosts).  An export open only to
 * other names is walked through the pseudo fs but refuses this client.
 */
static void name_matching(void)
{
	char host[256];
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (getnameinfo((struct sockaddr *)&lo, sizeof(lo), host, sizeof(host), NULL, 0,
			NI_NAMEREQD) ||
	    strcmp(host, "localhost")) {
		fprintf(stderr, "name matching not checked: 127.0.0.1 is not named localhost here\n");
		return;
	}
	struct mt t;
	mt_start(&t,
		 "/byname localhost(rw,insecure)\n/bywild local*(rw,insecure)\n"
		 "/other otherhost.example(rw,insecure)\n/otherwild *.example.com(rw,insecure)\n",
		 NULL);
	struct nfs41c_session *s = mt_session(&t, "names", 0, 0);
	CHECK_EQ(lookup_status(s, "byname"), NFS4_OK);
	CHECK_EQ(lookup_status(s, "bywild"), NFS4_OK);
	CHECK_EQ(lookup_status(s, "other"), NFS4ERR_ACCESS);
	CHECK_EQ(lookup_status(s, "otherwild"), NFS4ERR_ACCESS);
	CHECK_EQ(nfs41c_session_destroy(s), 0);
	mt_finish(&t);
	test_dir_cleanup();
}

int main(void)
{
	settings_errors();
	startup_refusals();
	name_matching();

	struct mt t;
	mt_prepare(&t, "/data/sets *(rw,no_root_squash)\n/ro 127.0.0.1(ro)\n",
		   "listen = 127.0.0.1:0\n");
	mt_boot(&t);
	uint8_t abuf[8192];
	struct xdr_arena ar;
	xdr_arena_init(&ar, abuf, sizeof(abuf), 1 << 20);

	/* export paths exist in the namespace as directories */
	struct mds_store *st = braid_mds_store(t.mds);
	uint64_t data, sets, ro;
	struct mds_attr a;
	CHECK_EQ(mds_dir_lookup(st, mds_store_root(st), "data", 4, &data, &a), 0);
	CHECK_EQ(a.type, MDS_DIR);
	CHECK_EQ(a.mode, 0755);
	CHECK_EQ(mds_dir_lookup(st, data, "sets", 4, &sets, &a), 0);
	CHECK_EQ(a.type, MDS_DIR);
	CHECK_EQ(mds_dir_lookup(st, mds_store_root(st), "ro", 2, &ro, &a), 0);

	/* pNFS MDS, one owner and scope on two connections, same client ID
	 * for the confirmed client (RFC 8881 §18.35.5 case 2) */
	struct nfs41c_session_opts so = { .owner = "client-a", .verifier = 0x0707070707070707ULL };
	struct nfs41c_session *sess;
	CHECK_EQ(nfs41c_session_create_opts(t.c, &so, &sess), 0);
	EXCHANGE_ID4resok r1 = exid(t.c, "client-a", &ar);
	CHECK(r1.eir_flags & EXCHGID4_FLAG_USE_PNFS_MDS);
	CHECK(!(r1.eir_flags & EXCHGID4_FLAG_USE_PNFS_DS));
	CHECK(r1.eir_server_owner.so_major_id.len > 10);
	CHECK(!memcmp(r1.eir_server_owner.so_major_id.val, "braid-mds:", 10));
	struct nfsd_clnt *c2 = mt_connect(&t);
	EXCHANGE_ID4resok r2 = exid(c2, "client-a", &ar);
	CHECK(opaque_eq(&r1.eir_server_owner.so_major_id, &r2.eir_server_owner.so_major_id));
	CHECK_EQ(r1.eir_server_owner.so_minor_id, r2.eir_server_owner.so_minor_id);
	CHECK(opaque_eq(&r1.eir_server_scope, &r2.eir_server_scope));
	CHECK_EQ(r1.eir_clientid, r2.eir_clientid);
	nfsd_clnt_free(c2);
	CHECK_EQ(nfs41c_session_destroy(sess), 0);
	uint8_t owner1[64];
	uint32_t owner1_len = r1.eir_server_owner.so_major_id.len;
	CHECK(owner1_len <= sizeof(owner1));
	memcpy(owner1, r1.eir_server_owner.so_major_id.val, owner1_len);

	/* exports reload: a bad file keeps the old exports */
	char msg[512];
	mt_write_file(t.exports_path, "/data/sets *(rw,what)\n", 0644);
	CHECK(braid_mds_exports_reload(t.mds, msg, sizeof(msg)) < 0);
	CHECK(strstr(msg, ":1"));
	mt_write_file(t.exports_path, "/data/sets *(rw)\n/new/one *(ro)\n", 0644);
	CHECK_EQ(braid_mds_exports_reload(t.mds, msg, sizeof(msg)), 0);
	uint64_t newd;
	CHECK_EQ(mds_dir_lookup(st, mds_store_root(st), "new", 3, &newd, &a), 0);

	/* restart on the same store: the same server owner, so clients see the
	 * same server and reclaim (RFC 8881 §2.10.5.1) */
	mt_stop(&t);
	mt_boot(&t);
	xdr_arena_reset(&ar);
	EXCHANGE_ID4resok r3 = exid(t.c, "client-a", &ar);
	CHECK_EQ(r3.eir_server_owner.so_major_id.len, owner1_len);
	CHECK(!memcmp(r3.eir_server_owner.so_major_id.val, owner1, owner1_len));
	CHECK(r3.eir_clientid != r1.eir_clientid); /* a new boot: old IDs are stale */
	mt_finish(&t);
	xdr_arena_release(&ar);
	return 0;
}
