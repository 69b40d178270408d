/* SPDX-License-Identifier: MIT */
/* Helpers for the braid-mds protocol tests (tests/mds/mds-test.h). */
#include "config.h"

#include "mds/callback.h"
#include "tests/mds/mds-test.h"

void mt_write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

void mt_prepare(struct mt *t, const char *exports, const char *extra_conf)
{
	memset(t, 0, sizeof(*t));
	t->dir = test_dir_make("mds");
	snprintf(t->key_path, sizeof(t->key_path), "%s/cluster.key", t->dir);
	CHECK(braid_key_create(t->key_path) == 0);
	char msg[256];
	CHECK(braid_key_load(t->key_path, &t->key, msg, sizeof(msg)) == 0);
	snprintf(t->exports_path, sizeof(t->exports_path), "%s/exports", t->dir);
	mt_write_file(t->exports_path, exports, 0644);
	snprintf(t->conf_path, sizeof(t->conf_path), "%s/mds.conf", t->dir);
	char conf[20000];
	snprintf(conf, sizeof(conf),
		 "[mds]\nstore_dir = %s/store\nkey_file = %s\nexports = %s\n"
		 "listen = 127.0.0.1:0\nrpcbind = no\n%s%s",
		 t->dir, t->key_path, t->exports_path,
		 extra_conf && strstr(extra_conf, "grace_time") ? "" : "grace_time = 0\n",
		 extra_conf ? extra_conf : "");
	mt_write_file(t->conf_path, conf, 0644);
}

struct nfsd_clnt *mt_connect(struct mt *t)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)t->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct nfsd_clnt_opts o = {.timeout_ms = 30000, .reconnect = true};
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(t->eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

void mt_boot(struct mt *t)
{
	struct conf_error cerr;
	if (mds_settings_load(t->conf_path, &t->set, &cerr)) {
		conf_error_print(&cerr, stderr);
		CHECK(0);
	}
	char msg[512];
	int rc = braid_mds_start(&t->set, &t->mds, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "braid_mds_start: %s\n", msg);
	CHECK(rc == 0);
	t->port = braid_mds_port(t->mds, 0);
	CHECK(t->port > 0);
	int err = 0;
	if (!t->eng)
		t->eng = nfsd_client_engine_new(1, 0, &err);
	CHECK(t->eng);
	t->c = mt_connect(t);
}

void mt_start(struct mt *t, const char *exports, const char *extra_conf)
{
	mt_prepare(t, exports, extra_conf);
	mt_boot(t);
}

void mt_stop(struct mt *t)
{
	if (t->c)
		nfsd_clnt_free(t->c);
	t->c = NULL;
	braid_mds_stop(t->mds);
	t->mds = NULL;
}

void mt_finish(struct mt *t)
{
	mt_stop(t);
	if (t->eng)
		nfsd_server_free(t->eng);
	t->eng = NULL;
}

struct nfs41c_session *mt_session_noreclaim(struct mt *t, const char *owner, uint32_t uid,
					    uint32_t gid)
{
	struct nfs41c_session *s = NULL;
	int rc = nfs41c_session_create(t->c, owner, 0, &s);
	if (rc)
		fprintf(stderr, "session %s: %d\n", owner, rc);
	CHECK(rc == 0);
	nfs41c_session_set_cred(s, uid, gid);
	return s;
}

nfs_cb_resop4 *mt_cb_reply(struct nfsd_req *r, const CB_COMPOUND4args *args,
			   CB_COMPOUND4res *res)
{
	memset(res, 0, sizeof(*res));
	CHECK(args->argarray.len >= 1 && args->argarray.len <= 4);
	CHECK_EQ(args->argarray.val[0].argop, OP_CB_SEQUENCE);
	nfs_cb_resop4 *ro = xdr_arena_alloc(&r->arena, args->argarray.len * sizeof(*ro));
	CHECK(ro);
	memset(ro, 0, args->argarray.len * sizeof(*ro));
	const CB_SEQUENCE4args *sa = &args->argarray.val[0].u.opcbsequence;
	ro[0].resop = OP_CB_SEQUENCE;
	CB_SEQUENCE4resok *ok = &ro[0].u.opcbsequence.u.csr_resok4;
	memcpy(ok->csr_sessionid, sa->csa_sessionid, sizeof(sessionid4));
	ok->csr_sequenceid = sa->csa_sequenceid;
	res->status = NFS4_OK;
	res->resarray.val = ro;
	res->resarray.len = 1;
	return ro;
}

void mt_reclaim_complete(struct nfs41c_session *s)
{
	nfs_argop4 op = {.argop = OP_RECLAIM_COMPLETE};
	op.u.opreclaim_complete.rca_one_fs = false;
	COMPOUND4res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	mt_compound(s, &op, 1, &res, &ar);
	CHECK_EQ(mt_status(&res, 0), NFS4_OK);
	xdr_arena_release(&ar);
}

struct nfs41c_session *mt_session(struct mt *t, const char *owner, uint32_t uid, uint32_t gid)
{
	struct nfs41c_session *s = mt_session_noreclaim(t, owner, uid, gid);
	mt_reclaim_complete(s);
	return s;
}

void mt_compound(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n, COMPOUND4res *res,
		 struct xdr_arena *arena)
{
	int rc = nfs41c_compound(s, ops, n, res, arena);
	if (rc)
		fprintf(stderr, "compound: %d\n", rc);
	CHECK(rc == 0);
}

nfsstat4 mt_status(const COMPOUND4res *res, unsigned i)
{
	CHECK(res->resarray.len > i + 1);
	return res->resarray.val[i + 1].u.opillegal.status;
}

bitmap4 mt_bitmap(struct xdr_arena *arena, ...)
{
	uint32_t *w = xdr_arena_alloc(arena, 4 * sizeof(uint32_t));
	CHECK(w);
	memset(w, 0, 4 * sizeof(uint32_t));
	unsigned len = 0;
	va_list ap;
	va_start(ap, arena);
	for (int n = va_arg(ap, int); n >= 0; n = va_arg(ap, int)) {
		w[n / 32] |= 1u << (n % 32);
		if ((unsigned)n / 32 + 1 > len)
			len = (unsigned)n / 32 + 1;
	}
	va_end(ap);
	bitmap4 b = {.len = len, .val = w};
	return b;
}

int mt_cb_seq(struct mt *t, uint64_t clientid)
{
	uint8_t buf[4096];
	struct xdr_arena ar;
	xdr_arena_init(&ar, buf, sizeof(buf), 1 << 20);
	CB_COMPOUND4res res;
	int rc = mds_cb_compound(t->mds, clientid, NULL, 0, &res, &ar);
	if (!rc) {
		CHECK_EQ(res.status, NFS4_OK);
		CHECK_EQ(res.resarray.len, 1);
		CHECK_EQ(res.resarray.val[0].u.opcbsequence.csr_status, NFS4_OK);
	}
	xdr_arena_release(&ar);
	return rc;
}

void mt_set_grace(struct mt *t, const char *value)
{
	char buf[8192], out[8400];
	FILE *f = fopen(t->conf_path, "r");
	CHECK(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strstr(buf, "grace_time = 0\n");
	CHECK(p);
	snprintf(out, sizeof(out), "%.*sgrace_time = %s\n%s", (int)(p - buf), buf, value,
		 p + strlen("grace_time = 0\n"));
	mt_write_file(t->conf_path, out, 0644);
}
