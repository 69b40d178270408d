/* SPDX-License-Identifier: MIT */
/* Helpers for the braid-ds service tests (tests/dataserver/ds-test.h). */
#include "config.h"

#include "tests/dataserver/ds-test.h"

void dt_write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

void dt_key_make(const char *dir, char *path, size_t len, struct braid_key *key)
{
	snprintf(path, len, "%s/cluster.key", dir);
	CHECK(braid_key_create(path) == 0);
	char msg[256];
	CHECK(braid_key_load(path, key, msg, sizeof(msg)) == 0);
}

void dt_prepare(struct dt *t, const char *extra_conf)
{
	memset(t, 0, sizeof(*t));
	t->dir = st_tmp_make();
	dt_key_make(t->dir, t->key_path, sizeof(t->key_path), &t->key);
	snprintf(t->conf_path, sizeof(t->conf_path), "%s/ds.conf", t->dir);
	char conf[8192];
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/store\nkey_file = %s\nlisten = 127.0.0.1:0\n%s%s", t->dir,
		 t->key_path, extra_conf && strstr(extra_conf, "nfs41") ? "" : "nfs41 = no\n",
		 extra_conf ? extra_conf : "");
	dt_write_file(t->conf_path, conf, 0644);
}

struct nfsd_clnt *dt_connect(struct dt *t, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct nfsd_clnt_opts o = {.timeout_ms = 20000, .reconnect = true};
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(t->eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

struct braid_ds *dt_ds_start(const char *conf, struct ds_settings *set)
{
	struct conf_error cerr;
	/* the store test hook is not in the file: keep what the test set */
	void (*hook)(int, void *) = set->store_test_mapped_hook;
	void *hook_arg = set->store_test_arg;
	if (ds_settings_load(conf, set, &cerr)) {
		conf_error_print(&cerr, stderr);
		CHECK(0);
	}
	set->store_test_mapped_hook = hook;
	set->store_test_arg = hook_arg;
	char msg[512];
	struct braid_ds *ds = NULL;
	int rc = braid_ds_start(set, &ds, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "braid_ds_start: %s\n", msg);
	CHECK(rc == 0);
	return ds;
}

void dt_start(struct dt *t)
{
	t->ds = dt_ds_start(t->conf_path, &t->set);
	t->port = braid_ds_port(t->ds, 0);
	CHECK(t->port > 0);
	int err = 0;
	if (!t->eng)
		t->eng = nfsd_client_engine_new(1, 0, &err);
	CHECK(t->eng);
	t->c = dt_connect(t, t->port);
}

void dt_stop(struct dt *t)
{
	if (t->c)
		nfsd_clnt_free(t->c);
	t->c = NULL;
	if (t->ds)
		CHECK(braid_ds_stop(t->ds) == 0);
	t->ds = NULL;
}

void dt_finish(struct dt *t)
{
	dt_stop(t);
	if (t->eng)
		nfsd_server_free(t->eng);
	t->eng = NULL;
}

struct ds_objid dt_id(unsigned n, uint64_t gen)
{
	struct ds_objid id;
	memset(&id, 0, sizeof(id));
	for (int i = 0; i < DS_KEY_SIZE; i++)
		id.key[i] = (uint8_t)(n * 131 + (unsigned)i * 7 + 1);
	xdr_put32(id.key, n); /* unique per n */
	id.gen = gen;
	return id;
}

void dt_create(struct dt *t, const struct ds_objid *id, uint8_t fh[DS_CTL_FH_MAX], uint32_t *fhlen)
{
	CHECK_EQ(ds_ctl_create(t->c, &t->key, id, DT_UID, DT_GID, 0600, fh, fhlen), 0);
	CHECK_EQ(*fhlen, DS_FH_SIZE);
}

int dt_nfs3(struct nfsd_clnt *c, uint32_t proc, const void *args, void *res,
	    struct xdr_arena *arena, uint32_t uid, uint32_t gid)
{
	const struct xdr_proc_desc *d = &xdr_desc_NFS_PROGRAM_NFS_V3.procs[proc];
	struct nfsd_call_opts o = {
	    .prog = NFS_PROGRAM,
	    .vers = NFS_V3,
	    .proc = proc,
	    .enc_args = d->arg_size ? d->enc_arg : NULL,
	    .args = args,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = uid,
	    .gid = gid,
	};
	return nfsd_clnt_call(c, &o, d->res_size ? d->dec_res : NULL, res, arena);
}

void dt_fill(uint8_t *buf, uint64_t off, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = dt_pat(off + i, seed);
}

bool dt_check(const uint8_t *buf, uint64_t off, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != dt_pat(off + i, seed))
			return false;
	return true;
}

int dt_write(struct nfsd_clnt *c, const uint8_t *fh, uint32_t fhlen, uint64_t off, const void *data,
	     uint32_t len, stable_how how, uint8_t verf[8], uint32_t uid)
{
	WRITE3args a = {.file = dt_fh3(fh, fhlen),
			.offset = off,
			.count = len,
			.stable = how,
			.data = xdr_opaque_of(data, len)};
	WRITE3res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	int rc = dt_nfs3(c, NFSPROC3_WRITE, &a, &r, &ar, uid, DT_GID);
	int st = rc ? -1 : r.status;
	if (!rc && !st) {
		CHECK_EQ(r.u.resok.count, len);
		CHECK_EQ(r.u.resok.committed, how);
		if (verf)
			memcpy(verf, r.u.resok.verf, 8);
	}
	xdr_arena_release(&ar);
	return st;
}

int dt_read(struct nfsd_clnt *c, const uint8_t *fh, uint32_t fhlen, uint64_t off, uint32_t count,
	    void *buf, uint32_t *n, bool *eof, uint32_t uid)
{
	READ3args a = {.file = dt_fh3(fh, fhlen), .offset = off, .count = count};
	READ3res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 64u << 20);
	int rc = dt_nfs3(c, NFSPROC3_READ, &a, &r, &ar, uid, DT_GID);
	int st = rc ? -1 : r.status;
	if (!rc && !st) {
		CHECK_EQ(r.u.resok.count, r.u.resok.data.len);
		if (buf)
			memcpy(buf, r.u.resok.data.val, r.u.resok.data.len);
		*n = r.u.resok.count;
		*eof = r.u.resok.eof;
	}
	xdr_arena_release(&ar);
	return st;
}
