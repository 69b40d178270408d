/* SPDX-License-Identifier: MIT */
/*
 * The control protocol (braid_ctl.x) served by braid-ds, and how only the
 * MDS may call it (AUTH_BRAID, nfsd/auth_braid.h): unsigned callers get
 * BRAID_CTL_ACCESS; another key, a forged or altered signature, a stale
 * stamp and a replay are refused by the RPC layer.  Also REGISTER and
 * HEARTBEAT to a stand-in MDS, with advertised addresses that differ from
 * the bound ones (NAT).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "tests/dataserver/ds-test.h"
#include "nfsd/bytes.h"

static struct dt T;

static void t_procs(void)
{
	struct ds_objid id = dt_id(1, 1);
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	CHECK_EQ(ds_ctl_null(T.c, &T.key), 0);
	CHECK_EQ(ds_ctl_create(T.c, &T.key, &id, 1, 2, 01000, fh, &fhlen), -EINVAL);
	dt_create(&T, &id, fh, &fhlen);
	struct ds_objid other = dt_id(1, 2);
	CHECK_EQ(ds_ctl_create(T.c, &T.key, &other, 1, 2, 0600, fh, &fhlen), -EEXIST);
	struct ds_ctl_stat s0, s1;
	CHECK_EQ(ds_ctl_stat(T.c, &T.key, &id, &s0), 0);
	CHECK_EQ(s0.size, 0);
	CHECK_EQ(ds_ctl_truncate(T.c, &T.key, &id, 1 << 20), 0);
	CHECK_EQ(ds_ctl_stat(T.c, &T.key, &id, &s1), 0);
	CHECK_EQ(s1.size, 1 << 20);
	CHECK(s1.change != s0.change);
	/* a write by a client moves size and change too */
	uint8_t buf[4096];
	dt_fill(buf, 0, sizeof(buf), 3);
	CHECK_EQ(dt_write(T.c, fh, fhlen, 2 << 20, buf, 4096, UNSTABLE, NULL, DT_UID), NFS3_OK);
	struct ds_ctl_stat s2;
	CHECK_EQ(ds_ctl_stat(T.c, &T.key, &id, &s2), 0);
	CHECK_EQ(s2.size, (2 << 20) + 4096);
	CHECK(s2.change != s1.change);
	CHECK_EQ(ds_ctl_stat(T.c, &T.key, &other, &s2), -ESTALE);
	/* DEALLOCATE: the written block reads as zeros, the size stays; again OK */
	CHECK_EQ(ds_ctl_deallocate(T.c, &T.key, &id, 2 << 20, 4096), 0);
	CHECK_EQ(ds_ctl_deallocate(T.c, &T.key, &id, 2 << 20, 4096), 0);
	CHECK_EQ(ds_ctl_deallocate(T.c, &T.key, &id, 1, 4096), -EINVAL);
	CHECK_EQ(ds_ctl_deallocate(T.c, &T.key, &other, 0, 4096), -ESTALE);
	struct ds_ctl_stat s3;
	CHECK_EQ(ds_ctl_stat(T.c, &T.key, &id, &s3), 0);
	CHECK_EQ(s3.size, (2 << 20) + 4096);
	CHECK(s3.change != s2.change);
	CHECK_EQ(ds_ctl_truncate(T.c, &T.key, &other, 0), -ESTALE);
	CHECK_EQ(ds_ctl_setfence(T.c, &T.key, &other, 1, 1, 0600), -ESTALE);
	CHECK_EQ(ds_ctl_remove(T.c, &T.key, &other), -ESTALE);
	CHECK_EQ(ds_ctl_setfence(T.c, &T.key, &id, 5, 6, 0600), 0);
	CHECK_EQ(ds_ctl_setfence(T.c, &T.key, &id, 5, 6, 0600), 0); /* idempotent */
	CHECK_EQ(ds_ctl_setfence(T.c, &T.key, &id, 5, 6, 04600), -EINVAL);
	CHECK_EQ(ds_ctl_setfence(T.c, &T.key, &id, 5, 6, 0640), 0);

	/* LIST walks every object exactly as created, across several calls */
	enum { N = 2500 };
	for (unsigned i = 100; i < 100 + N; i++) {
		struct ds_objid x = dt_id(i, i);
		CHECK_EQ(ds_ctl_create(T.c, &T.key, &x, 1, 1, 0600, fh, &fhlen), 0);
	}
	static bool seen[100 + N];
	static struct ds_list_entry ents[BRAID_CTL_LIST_MAX];
	uint64_t cookie = 0;
	bool eof = false;
	unsigned total = 0, calls = 0;
	while (!eof) {
		unsigned n;
		CHECK_EQ(ds_ctl_list(T.c, &T.key, cookie, BRAID_CTL_LIST_MAX, ents, &n, &cookie, &eof),
			 0);
		CHECK(n <= BRAID_CTL_LIST_MAX);
		calls++;
		for (unsigned k = 0; k < n; k++) {
			uint64_t g = ents[k].id.gen;
			if (g >= 100 && g < 100 + N) {
				struct ds_objid x = dt_id((unsigned)g, g);
				CHECK(memcmp(x.key, ents[k].id.key, DS_KEY_SIZE) == 0);
				seen[g] = true;
			}
			total++;
		}
	}
	CHECK(calls >= 3);
	CHECK_EQ(total, N + 1);
	for (unsigned i = 100; i < 100 + N; i++)
		CHECK(seen[i]);
	unsigned n;
	CHECK_EQ(ds_ctl_list(T.c, &T.key, 0, 0, ents, &n, &cookie, &eof), -EINVAL);

	CHECK_EQ(ds_ctl_remove(T.c, &T.key, &id), 0);
	CHECK_EQ(ds_ctl_remove(T.c, &T.key, &id), -ENOENT); /* a repeat: done */
	CHECK_EQ(ds_ctl_stat(T.c, &T.key, &id, &s2), -ENOENT);
}

/* Raw control calls: the documented signature built here, independently. */
struct raw_sign {
	const struct braid_key *key;
	uint64_t stamp, nonce; /* 0: now / fresh */
	bool corrupt;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t raw_cred(void *ctx, uint8_t *b)
{
	struct raw_sign *s = ctx;
	static uint64_t fresh = 0x1234567;
	xdr_put32(b, 1);
	xdr_put32(b + 4, s->key->id);
	put_be64(b + 8, s->stamp ? s->stamp : now_ns());
	put_be64(b + 16, s->nonce ? s->nonce : ++fresh);
	return 24;
}

static void raw_signfn(void *ctx, uint8_t *msg, size_t len, size_t voff, size_t vlen)
{
	struct raw_sign *s = ctx;
	uint8_t *buf = malloc(len);
	CHECK(buf);
	memcpy(buf, msg, voff - 8);
	memcpy(buf + voff - 8, msg + voff + vlen, len - voff - vlen);
	siphash24_128(&s->key->ctl, buf, len - vlen - 8, msg + voff);
	if (s->corrupt)
		msg[voff] ^= 1;
	free(buf);
}

static int raw_create(struct raw_sign *s, uint32_t flavor, int32_t *status)
{
	braid_ctl_create_args a = { .cr_uid = 1, .cr_gid = 1, .cr_mode = 0600 };
	memcpy(a.cr_obj.oi_key, dt_id(5000, 1).key, DS_KEY_SIZE);
	a.cr_obj.oi_gen = 1;
	const struct xdr_proc_desc *d =
	    &xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1.procs[BRAID_CTLPROC_CREATE];
	struct nfsd_call_opts o = { .prog = BRAID_CTL_PROGRAM, .vers = BRAID_CTL_V1,
				    .proc = BRAID_CTLPROC_CREATE, .enc_args = d->enc_arg,
				    .args = &a, .flavor = flavor, .uid = 0, .gid = 0 };
	if (s) {
		o.flavor = NFSD_AUTH_BRAID;
		o.cred = raw_cred;
		o.sign = raw_signfn;
		o.verf_len = 16;
		o.sign_ctx = s;
	}
	braid_ctl_create_res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	int rc = nfsd_clnt_call(T.c, &o, d->dec_res, &r, &ar);
	if (!rc)
		*status = r.cr_status;
	xdr_arena_release(&ar);
	return rc;
}

static void t_auth(void)
{
	int32_t st = -1;
	/* root over AUTH_SYS is not the MDS */
	CHECK_EQ(raw_create(NULL, NFSD_AUTH_SYS, &st), 0);
	CHECK_EQ(st, BRAID_CTL_ACCESS);
	CHECK_EQ(raw_create(NULL, NFSD_AUTH_NONE, &st), 0);
	CHECK_EQ(st, BRAID_CTL_ACCESS);
	/* our own signature, built from the documented format, is accepted */
	struct raw_sign s = { .key = &T.key };
	CHECK_EQ(raw_create(&s, 0, &st), 0);
	CHECK_EQ(st, BRAID_CTL_OK);
	/* altered in transit */
	s.corrupt = true;
	CHECK_EQ(raw_create(&s, 0, &st), NFSD_CALL_ERR_DENIED | NFSD_AUTH_BADVERF);
	s.corrupt = false;
	/* the same nonce again: a replay */
	s.nonce = 0xabcdef;
	CHECK_EQ(raw_create(&s, 0, &st), 0);
	CHECK_EQ(raw_create(&s, 0, &st), NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDVERF);
	/* a stamp from long ago, or far ahead */
	s.nonce = 0;
	s.stamp = now_ns() - 600ull * 1000000000ull;
	CHECK_EQ(raw_create(&s, 0, &st), NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDCRED);
	s.stamp = now_ns() + 600ull * 1000000000ull;
	CHECK_EQ(raw_create(&s, 0, &st), NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDCRED);
	/* older than the window behind the newest accepted call */
	s.stamp = now_ns() - (BRAID_AUTH_WINDOW_S + 5) * 1000000000ull;
	CHECK_EQ(raw_create(&s, 0, &st), NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDCRED);
	s.stamp = 0;
	/* another cluster's key, whether its id matches or not */
	struct braid_key other;
	uint8_t raw[BRAID_KEY_BYTES];
	memset(raw, 0x33, sizeof(raw));
	braid_key_from_bytes(&other, raw);
	struct raw_sign so = { .key = &other };
	CHECK_EQ(raw_create(&so, 0, &st), NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDCRED);
	other.id = T.key.id;
	CHECK_EQ(raw_create(&so, 0, &st), NFSD_CALL_ERR_DENIED | NFSD_AUTH_BADVERF);
	CHECK_EQ(ds_ctl_null(T.c, &other), -EKEYREJECTED); /* even a ping */
	struct ds_objid id = dt_id(5001, 1);
	uint8_t fh[DS_CTL_FH_MAX];
	uint32_t fhlen;
	CHECK_EQ(ds_ctl_create(T.c, &other, &id, 1, 1, 0600, fh, &fhlen), -EKEYREJECTED);
	/* REGISTER and HEARTBEAT are the MDS's procedures */
	struct nfsd_call_opts o = { .prog = BRAID_CTL_PROGRAM, .vers = BRAID_CTL_V1,
				    .proc = BRAID_CTLPROC_HEARTBEAT };
	braid_auth_call_opts(&o, &T.key);
	CHECK_EQ(nfsd_clnt_call(T.c, &o, NULL, NULL, NULL), NFSD_CALL_ERR_ACCEPT | NFSD_PROC_UNAVAIL);
	struct braid_auth_stats as;
	(void)as;
}

/* ------------------------------------------------- a stand-in MDS */

struct fake_mds {
	atomic_int registers, heartbeats, stale_next;
	pthread_mutex_t mu;
	uint8_t uuid[16], verf[8];
	char addrs[4][80], ctl_addrs[4][80];
	unsigned naddrs, nctl;
	uint32_t proto_vers[4], proto_rsize[4];
	unsigned nprotos;
	uint64_t capacity;
	bool verf_mismatch;
};
static struct fake_mds M;

static void copy_str(char *dst, size_t n, xdr_string s)
{
	snprintf(dst, n, "%.*s", (int)s.len, (const char *)s.val);
}

static int m_register(struct nfsd_req *req, void *argp, void *resp)
{
	braid_ctl_register_args *a = argp;
	braid_ctl_register_res *r = resp;
	if (req->cred.flavor != NFSD_AUTH_BRAID) {
		r->rr_status = BRAID_CTL_ACCESS;
		return NFSD_SUCCESS;
	}
	pthread_mutex_lock(&M.mu);
	memcpy(M.uuid, a->rr_ds_uuid, 16);
	memcpy(M.verf, a->rr_boot_verifier, 8);
	M.naddrs = a->rr_addrs.len < 4 ? a->rr_addrs.len : 4;
	for (unsigned i = 0; i < M.naddrs; i++)
		copy_str(M.addrs[i], 80, a->rr_addrs.val[i].na_r_addr);
	M.nctl = a->rr_ctl_addrs.len < 4 ? a->rr_ctl_addrs.len : 4;
	for (unsigned i = 0; i < M.nctl; i++)
		copy_str(M.ctl_addrs[i], 80, a->rr_ctl_addrs.val[i].na_r_addr);
	M.nprotos = a->rr_protos.len < 4 ? a->rr_protos.len : 4;
	for (unsigned i = 0; i < M.nprotos; i++) {
		M.proto_vers[i] = a->rr_protos.val[i].bp_version;
		M.proto_rsize[i] = a->rr_protos.val[i].bp_rsize;
	}
	M.capacity = a->rr_capacity;
	pthread_mutex_unlock(&M.mu);
	atomic_fetch_add(&M.registers, 1);
	r->rr_status = BRAID_CTL_OK;
	r->u.rr_resok.rr_ds_id = 7;
	r->u.rr_resok.rr_heartbeat_interval = 1;
	return NFSD_SUCCESS;
}

static int m_heartbeat(struct nfsd_req *req, void *argp, void *resp)
{
	braid_ctl_heartbeat_args *a = argp;
	braid_ctl_heartbeat_res *r = resp;
	(void)req;
	pthread_mutex_lock(&M.mu);
	if (a->hb_ds_id != 7 || memcmp(a->hb_boot_verifier, M.verf, 8))
		M.verf_mismatch = true;
	pthread_mutex_unlock(&M.mu);
	atomic_fetch_add(&M.heartbeats, 1);
	if (atomic_exchange(&M.stale_next, 0)) {
		r->hb_status = BRAID_CTL_STALE;
		return NFSD_SUCCESS;
	}
	r->hb_status = BRAID_CTL_OK;
	r->u.hb_heartbeat_interval = 1;
	return NFSD_SUCCESS;
}

static struct nfsd_proc mds_procs[9] = {
	[BRAID_CTLPROC_REGISTER] = { .name = "REGISTER", .fn = m_register },
	[BRAID_CTLPROC_HEARTBEAT] = { .name = "HEARTBEAT", .fn = m_heartbeat },
};
static const struct nfsd_version mds_vers[] = { { .vers = BRAID_CTL_V1, .procs = mds_procs, .nprocs = 9 } };
static const struct nfsd_program mds_prog = { BRAID_CTL_PROGRAM, "braid_ctl", mds_vers, 1,
					      NULL };

static void wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < 1000 && atomic_load(v) < want; i++)
		usleep(10000);
	CHECK(atomic_load(v) >= want);
}

static void t_register(void)
{
	pthread_mutex_init(&M.mu, NULL);
	int err = 0;
	struct nfsd_server *mds = nfsd_server_new(NULL, &err);
	CHECK(mds);
	struct braid_auth *auth = braid_auth_new(&T.key);
	CHECK(auth);
	nfsd_server_add_flavor(mds, braid_auth_flavor(auth));
	nfsd_procs_bind(mds_procs, 9, &xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1);
	CHECK_EQ(nfsd_server_add_program(mds, &mds_prog), 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK_EQ(nfsd_server_listen(mds, (struct sockaddr *)&sa, sizeof(sa)), 0);
	int mport = nfsd_server_listen_port(mds, 0);
	CHECK_EQ(nfsd_server_start(mds), 0);

	/* a DS behind NAT: clients reach it at 10.0.2.2 and 10.0.3.2 */
	char extra[512];
	snprintf(extra, sizeof(extra),
		 "mds = 127.0.0.1:%d\nadvertise = 10.0.2.2:2049\nadvertise = 10.0.3.2:2049\n"
		 "ctl_advertise = 192.168.50.1:20490\n",
		 mport);
	dt_stop(&T);
	char conf[8192];
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/store\nkey_file = %s\nlisten = 127.0.0.1:0\nnfs41 = no\n%s",
		 T.dir, T.key_path, extra);
	dt_write_file(T.conf_path, conf, 0644);
	dt_start(&T);
	wait_for(&M.registers, 1);
	wait_for(&M.heartbeats, 2);
	CHECK_EQ(braid_ds_id(T.ds), 7);
	pthread_mutex_lock(&M.mu);
	uint8_t uuid[16], verf[8];
	ds_store_uuid(braid_ds_store(T.ds), uuid);
	ds_store_verifier(braid_ds_store(T.ds), verf);
	CHECK(memcmp(M.uuid, uuid, 16) == 0);
	CHECK(memcmp(M.verf, verf, 8) == 0);
	CHECK_EQ(M.naddrs, 2);
	CHECK(strcmp(M.addrs[0], "10.0.2.2.8.1") == 0);
	CHECK(strcmp(M.addrs[1], "10.0.3.2.8.1") == 0);
	CHECK_EQ(M.nctl, 1);
	CHECK(strcmp(M.ctl_addrs[0], "192.168.50.1.80.10") == 0);
	CHECK_EQ(M.nprotos, 1);
	CHECK_EQ(M.proto_vers[0], 3);
	CHECK_EQ(M.proto_rsize[0], 1 << 20);
	CHECK(M.capacity > 0);
	CHECK(!M.verf_mismatch);
	pthread_mutex_unlock(&M.mu);
	/* the MDS forgets the DS: the next HEARTBEAT is STALE, the DS registers again */
	atomic_store(&M.stale_next, 1);
	wait_for(&M.registers, 2);
	int hb = atomic_load(&M.heartbeats);
	wait_for(&M.heartbeats, hb + 1);
	dt_stop(&T);
	nfsd_server_free(mds);
	braid_auth_free(auth);
}

int main(void)
{
	dt_prepare(&T, NULL);
	dt_start(&T);
	t_procs();
	t_auth();
	t_register();
	dt_finish(&T);
	printf("ok\n");
	return 0;
}
