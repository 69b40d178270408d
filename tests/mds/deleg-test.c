/* SPDX-License-Identifier: MIT */
/* Helpers for the delegation tests (tests/mds/deleg-test.h). */
#include "config.h"

#include "tests/mds/mds-test.h"
#include "tests/mds/state-test.h"

#include "tests/mds/deleg-test.h"

struct dt_cb dt_cbs[DT_CLIENTS];

static int cb_null(struct nfsd_req *r, void *a, void *res)
{
	(void)a, (void)res;
	struct dt_cb *cb = r->priv;
	atomic_fetch_add(&cb->nulls, 1);
	return NFSD_SUCCESS;
}

static int cb_compound(struct nfsd_req *r, void *a, void *resv)
{
	struct dt_cb *cb = r->priv;
	CB_COMPOUND4args *args = a;
	CB_COMPOUND4res *res = resv;
	nfs_cb_resop4 *ro = mt_cb_reply(r, args, res);
	for (uint32_t i = 1; i < args->argarray.len; i++) {
		const nfs_cb_argop4 *op = &args->argarray.val[i];
		ro[i].resop = op->argop;
		res->resarray.len = i + 1;
		if (op->argop == OP_CB_RECALL) {
			const CB_RECALL4args *ra = &op->u.opcbrecall;
			pthread_mutex_lock(&cb->mu);
			cb->last_sid = ra->stateid;
			cb->last_truncate = ra->truncate;
			CHECK(ra->fh.len <= NFS4_FHSIZE);
			memcpy(cb->last_fh, ra->fh.val, ra->fh.len);
			cb->last_fh_len = ra->fh.len;
			pthread_mutex_unlock(&cb->mu);
			nfsstat4 st =
			    atomic_load(&cb->mode) == DT_CB_DELAY ? NFS4ERR_DELAY : NFS4_OK;
			ro[i].u.opcbrecall.status = st;
			res->status = st;
			atomic_fetch_add(&cb->recalls, 1);
			if (st)
				break;
		} else if (op->argop == OP_CB_RECALL_ANY) {
			const CB_RECALL_ANY4args *ra = &op->u.opcbrecall_any;
			pthread_mutex_lock(&cb->mu);
			cb->any_keep = ra->craa_objects_to_keep;
			cb->any_mask = ra->craa_type_mask.len ? ra->craa_type_mask.val[0] : 0;
			pthread_mutex_unlock(&cb->mu);
			ro[i].u.opcbrecall_any.crar_status = NFS4_OK;
			atomic_fetch_add(&cb->recall_anys, 1);
		} else {
			ro[i].u.opcbillegal.status = NFS4ERR_OP_ILLEGAL;
			res->status = NFS4ERR_OP_ILLEGAL;
			break;
		}
	}
	return NFSD_SUCCESS;
}

static struct nfsd_proc cb_procs[2] = {
    {.name = "CB_NULL", .fn = cb_null, .flags = NFSD_PROC_INLINE},
    {.name = "CB_COMPOUND", .fn = cb_compound, .flags = NFSD_PROC_INLINE},
};
static struct nfsd_version cb_vers = {.vers = 1, .procs = cb_procs, .nprocs = 2};
static struct nfsd_program cb_prog[DT_CLIENTS];

struct nfsd_clnt *dt_conn(struct mt *t, unsigned i)
{
	static bool bound;
	if (!bound) {
		nfsd_procs_bind(cb_procs, 2, &xdr_desc_NFS4_CALLBACK_NFS_CB);
		for (unsigned k = 0; k < DT_CLIENTS; k++)
			pthread_mutex_init(&dt_cbs[k].mu, NULL);
		bound = true;
	}
	CHECK(i < DT_CLIENTS);
	cb_prog[i] = (struct nfsd_program){.prog = DT_CBPROG,
					   .name = "cb",
					   .versions = &cb_vers,
					   .nversions = 1,
					   .priv = &dt_cbs[i]};
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)t->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct nfsd_clnt_opts o = {
	    .timeout_ms = 20000, .backchannel = &cb_prog[i], .backchannel_priv = &dt_cbs[i]};
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(t->eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err);
	CHECK(c);
	return c;
}

struct nfs41c_session *dt_session(struct mt *t, const char *owner, unsigned i,
				  struct nfsd_clnt **conn, bool noreclaim)
{
	*conn = dt_conn(t, i);
	struct nfs41c_session_opts so = {.owner = owner,
					 .create_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
					 .cb_program = DT_CBPROG};
	struct nfs41c_session *s;
	CHECK_EQ(nfs41c_session_create_opts(*conn, &so, &s), 0);
	nfs41c_session_set_cred(s, 0, 0);
	if (!noreclaim)
		mt_reclaim_complete(s);
	return s;
}

void dt_wait(atomic_int *counter, int n, double secs)
{
	double t0 = ts_now();
	while (atomic_load(counter) < n) {
		if (ts_now() - t0 > secs) {
			fprintf(stderr, "waited %.1f s for %d, have %d\n", secs, n,
				atomic_load(counter));
			CHECK(0);
		}
		usleep(10000);
	}
}

nfsstat4 dt_open_read(struct nfs41c_session *s, const char *owner, const char *name, uint32_t want,
		      struct ts_openres *out)
{
	struct ts_open o = {.owner = owner,
			    .name = name,
			    .access = OPEN4_SHARE_ACCESS_READ | want,
			    .deny = OPEN4_SHARE_DENY_NONE,
			    .mode = -1,
			    .size = -1};
	return ts_open(s, NULL, &o, out);
}

void dt_create(struct nfs41c_session *s, const char *name, struct ts_fh *fh)
{
	struct ts_openres r;
	CHECK_EQ(ts_open_name(s, NULL, "dt-creator", name, OPEN4_SHARE_ACCESS_BOTH,
			      OPEN4_SHARE_DENY_NONE, true, &r),
		 NFS4_OK);
	/* an open for writing: a write delegation with a back channel */
	CHECK(r.dtype == OPEN_DELEGATE_NONE || r.dtype == OPEN_DELEGATE_WRITE);
	CHECK_EQ(ts_close(s, &r.fh, &r.sid, NULL), NFS4_OK);
	if (r.dtype == OPEN_DELEGATE_WRITE)
		CHECK_EQ(dt_delegreturn(s, &r.fh, &r.dsid), NFS4_OK);
	*fh = r.fh;
}

nfsstat4 dt_run(struct nfs41c_session *s, const nfs_argop4 *ops, unsigned n)
{
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, ops, n, &res, &ar);
	nfsstat4 st = ts_st(&res, n - 1);
	xdr_arena_release(&ar);
	return st;
}

nfsstat4 dt_delegreturn(struct nfs41c_session *s, const struct ts_fh *f, const stateid4 *sid)
{
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_DELEGRETURN)};
	ops[1].u.opdelegreturn.deleg_stateid = *sid;
	return dt_run(s, ops, 2);
}

nfsstat4 dt_chmod(struct nfs41c_session *s, const struct ts_fh *f, int mode)
{
	struct ts_attrs ab;
	nfs_argop4 ops[2] = {ts_put(f), ts_op(OP_SETATTR)};
	ops[1].u.opsetattr.stateid = ts_sid_special(0, 0);
	ops[1].u.opsetattr.obj_attributes = ts_fattr(&ab, mode, -1);
	return dt_run(s, ops, 2);
}

nfsstat4 dt_remove(struct nfs41c_session *s, const char *name)
{
	nfs_argop4 ops[2] = {ts_put(NULL), ts_op(OP_REMOVE)};
	ops[1].u.opremove.target = xdr_opaque_of(name, strlen(name));
	return dt_run(s, ops, 2);
}

nfsstat4 dt_rename(struct nfs41c_session *s, const char *from, const char *to)
{
	nfs_argop4 ops[4] = {ts_put(NULL), ts_op(OP_SAVEFH), ts_put(NULL), ts_op(OP_RENAME)};
	ops[3].u.oprename.oldname = xdr_opaque_of(from, strlen(from));
	ops[3].u.oprename.newname = xdr_opaque_of(to, strlen(to));
	return dt_run(s, ops, 4);
}

nfsstat4 dt_link(struct nfs41c_session *s, const struct ts_fh *f, const char *name)
{
	nfs_argop4 ops[4] = {ts_put(f), ts_op(OP_SAVEFH), ts_put(NULL), ts_op(OP_LINK)};
	ops[3].u.oplink.newname = xdr_opaque_of(name, strlen(name));
	return dt_run(s, ops, 4);
}

uint32_t dt_seq_flags(struct nfs41c_session *s)
{
	COMPOUND4res res;
	struct xdr_arena ar;
	ts_run(s, NULL, 0, &res, &ar);
	CHECK_EQ(res.status, NFS4_OK);
	uint32_t f = res.resarray.val[0].u.opsequence.u.sr_resok4.sr_status_flags;
	xdr_arena_release(&ar);
	return f;
}

void dt_check_recall(unsigned i, const stateid4 *sid, const struct ts_fh *f)
{
	struct dt_cb *cb = &dt_cbs[i];
	pthread_mutex_lock(&cb->mu);
	CHECK(!memcmp(cb->last_sid.other, sid->other, NFS4_OTHER_SIZE));
	CHECK_EQ(cb->last_sid.seqid, sid->seqid);
	CHECK(!cb->last_truncate);
	CHECK(cb->last_fh_len == f->len && !memcmp(cb->last_fh, f->b, f->len));
	pthread_mutex_unlock(&cb->mu);
}
