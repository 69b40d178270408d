/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for braid-mds's NLM v4 and NSM handlers (mds/nlm.c): a real
 * MDS runs in-process on a scratch store, and each input is one call fed
 * to the program's handler directly, no sockets (req->conn NULL: the peer
 * is 0.0.0.0, and the callbacks it causes go to 0.0.0.0's rpcbind at port
 * 1, which refuses them at once).
 *
 * Input: [proc][flags][2 reserved][arguments].  proc 0..23 is an NLM v4
 * procedure (16..19 answer PROC_UNAVAIL), 24 NSM's SM_NOTIFY; flags bits
 * 0-1 pick the credential (AUTH_SYS root, AUTH_SYS 1000, AUTH_NONE, AUTH_SYS
 * 65534).  Arguments that decode have a 1-byte file handle replaced by an
 * entry of the handle table: a regular file (0666), the root directory, a
 * handle without a valid MAC, an empty one.  Invariants: the handler
 * returns SUCCESS, its results encode, and no crash, leak or undefined
 * behaviour (sanitizers) whatever the input.
 */
#include "config.h"

#include "nlm_prot.h"
#include "sm_inter.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "mds/nlm.h"
#include "tests/fuzz/compound.h"
#include "tests/fuzz/mds-fixture.h"

#define NPROC (NLMPROC4_FREE_ALL + 2) /* + SM_NOTIFY */

static struct braid_mds *mds;
static struct nfsd_req req;

struct fh {
	uint8_t b[MDS_FH_SIZE];
	uint32_t len;
};
enum { FH_FILE, FH_ROOT, FH_BADMAC, FH_EMPTY, FH_N };
static struct fh fh_tab[FH_N];

static void die(const char *what, int rc)
{
	fprintf(stderr, "fuzz-mds-nlm: %s: %s\n", what, rc ? strerror(rc < 0 ? -rc : rc) : "");
	abort();
}

static void set_cred(unsigned sel)
{
	memset(&req.cred, 0, sizeof(req.cred));
	req.cred.flavor = NFSD_AUTH_SYS;
	req.cred.machine = xdr_string_of("fuzz");
	switch (sel & 3) {
	case 1:
		req.cred.uid = req.cred.gid = 1000;
		break;
	case 2:
		req.cred.flavor = NFSD_AUTH_NONE;
		break;
	case 3:
		req.cred.uid = req.cred.gid = 65534;
		break;
	}
}

static void fh_patch(netobj *fh)
{
	if (fh->len == 1) {
		const struct fh *f = &fh_tab[fh->val[0] % FH_N];
		*fh = xdr_opaque_of(f->b, f->len);
	}
}

/* The handle inside the arguments of proc, if any. */
static netobj *args_fh(unsigned proc, void *args)
{
	switch (proc) {
	case NLMPROC4_TEST:
	case NLMPROC4_GRANTED:
	case NLMPROC4_TEST_MSG:
	case NLMPROC4_GRANTED_MSG:
		return &((nlm4_testargs *)args)->alock.fh;
	case NLMPROC4_LOCK:
	case NLMPROC4_LOCK_MSG:
	case NLMPROC4_NM_LOCK:
		return &((nlm4_lockargs *)args)->alock.fh;
	case NLMPROC4_CANCEL:
	case NLMPROC4_CANCEL_MSG:
		return &((nlm4_cancargs *)args)->alock.fh;
	case NLMPROC4_UNLOCK:
	case NLMPROC4_UNLOCK_MSG:
		return &((nlm4_unlockargs *)args)->alock.fh;
	case NLMPROC4_SHARE:
	case NLMPROC4_UNSHARE:
		return &((nlm4_shareargs *)args)->share.fh;
	default:
		return NULL;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	unsigned proc = data[0] % NPROC;
	const struct nfsd_version *v;
	if (proc == NPROC - 1) {
		v = &mds_nsm_program(mds)->versions[0];
		proc = SM_NOTIFY;
	} else {
		v = &mds_nlm_program(mds)->versions[0];
	}
	const struct nfsd_proc *p = &v->procs[proc];
	if (!p->fn)
		return 0; /* PROC_UNAVAIL */
	fuzz_req_init(&req, data + 4, size - 4);
	req.priv = mds;
	req.prog = v == &mds_nlm_program(mds)->versions[0] ? NLM_PROG : SM_PROG;
	req.vers = v->vers;
	req.proc = proc;
	req.p = p;
	set_cred(data[1]);
	void *args = p->args_size ? xdr_arena_alloc(&req.arena, p->args_size) : NULL;
	void *res = p->res_size ? xdr_arena_alloc(&req.arena, p->res_size) : NULL;
	if ((p->args_size && !args) || (p->res_size && !res))
		die("arena", -ENOMEM);
	if (args) {
		memset(args, 0, p->args_size);
		if (p->dec_args(&req.dec, args) < 0)
			goto out; /* GARBAGE_ARGS */
		netobj *fh = req.prog == NLM_PROG ? args_fh(proc, args) : NULL;
		if (fh)
			fh_patch(fh);
	}
	if (res)
		memset(res, 0, p->res_size);
	if (p->fn(&req, args, res) != NFSD_SUCCESS)
		die("handler did not return SUCCESS", 0);
	if (p->enc_res && p->enc_res(&req.enc, res) < 0)
		die("results do not encode", 0);
out:
	xdr_arena_release(&req.arena);
	return 0;
}

/* Seeds: each procedure with plausible arguments on the table's handles. */
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap)
{
	unsigned proc = (unsigned)(seed % NPROC);
	uint8_t sel = (uint8_t)(seed / NPROC);
	if (cap < 4)
		return 0;
	buf[0] = (uint8_t)proc;
	buf[1] = sel & 3;
	buf[2] = buf[3] = 0;
	uint8_t fhsel[1] = {(uint8_t)((sel >> 2) % FH_N)};
	char host[16];
	snprintf(host, sizeof(host), "host-%u", sel % 3);
	nlm4_lock l = {.caller_name = xdr_string_of(host),
		       .fh = xdr_opaque_of(fhsel, 1),
		       .oh = xdr_string_of("oh"),
		       .svid = (int32_t)(sel % 5),
		       .l_offset = (uint64_t)(sel % 7) * 10,
		       .l_len = (sel % 4) * 10};
	netobj cookie = xdr_string_of("ck");
	union {
		nlm4_testargs t;
		nlm4_lockargs l;
		nlm4_cancargs c;
		nlm4_unlockargs u;
		nlm4_res r;
		nlm4_testres tr;
		nlm4_shareargs s;
		nlm4_notify n;
		sm_stat_chge sm;
	} a;
	memset(&a, 0, sizeof(a));
	const struct xdr_proc_desc *d = proc == NPROC - 1
					    ? &xdr_desc_SM_PROG_SM_VERS.procs[SM_NOTIFY]
					    : &xdr_desc_NLM_PROG_NLM4_VERS.procs[proc];
	if (proc == NPROC - 1) {
		a.sm = (sm_stat_chge){.mon_name = xdr_string_of(host), .state = (int32_t)sel};
	} else {
		switch (proc) {
		case NLMPROC4_TEST:
		case NLMPROC4_GRANTED:
		case NLMPROC4_TEST_MSG:
		case NLMPROC4_GRANTED_MSG:
			a.t = (nlm4_testargs){.cookie = cookie, .exclusive = sel & 1, .alock = l};
			break;
		case NLMPROC4_LOCK:
		case NLMPROC4_LOCK_MSG:
		case NLMPROC4_NM_LOCK:
			a.l = (nlm4_lockargs){.cookie = cookie,
					      .block = sel & 2,
					      .exclusive = sel & 1,
					      .alock = l,
					      .state = (int32_t)(sel % 3)};
			break;
		case NLMPROC4_CANCEL:
		case NLMPROC4_CANCEL_MSG:
			a.c = (nlm4_cancargs){
			    .cookie = cookie, .block = true, .exclusive = sel & 1, .alock = l};
			break;
		case NLMPROC4_UNLOCK:
		case NLMPROC4_UNLOCK_MSG:
			a.u = (nlm4_unlockargs){.cookie = cookie, .alock = l};
			break;
		case NLMPROC4_TEST_RES:
			a.tr = (nlm4_testres){.cookie = cookie};
			break;
		case NLMPROC4_SHARE:
		case NLMPROC4_UNSHARE:
			a.s = (nlm4_shareargs){.cookie = cookie,
					       .share = {.caller_name = l.caller_name,
							 .fh = l.fh,
							 .oh = l.oh,
							 .mode = (int32_t)(sel % 4),
							 .access = (int32_t)((sel >> 2) % 4)}};
			break;
		case NLMPROC4_FREE_ALL:
			a.n = (nlm4_notify){.name = xdr_string_of(host), .state = 1};
			break;
		default: /* the other _RES: nlm4_res; NULL and the gap: none */
			a.r = (nlm4_res){.cookie = cookie, .stat.stat = (int32_t)(sel % 10)};
			break;
		}
	}
	if (!d->enc_arg || !d->arg_size)
		return 4;
	struct iovec iov[16];
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 16, NULL, 0, &ar);
	size_t n = 0;
	if (d->enc_arg(&e, &a) == 0 && e.len <= cap - 4) {
		xdr_enc_flatten(&e, buf + 4);
		n = 4 + e.len;
	}
	xdr_arena_release(&ar);
	return n;
}

static void mds_stop_at_exit(void)
{
	braid_mds_stop(mds);
	mds = NULL;
}

static void fixture(void)
{
	struct mds_store *st = mds->store;
	uint64_t root = mds_store_root(st);
	struct mds_create_args ca = {.dir = root,
				     .name = "f",
				     .name_len = 1,
				     .type = MDS_REG,
				     .how = MDS_CREATE_GUARDED,
				     .mode = 0666};
	struct mds_create_res cr;
	int rc = mds_dir_create(st, &ca, &cr);
	if (rc)
		die("fixture: create", rc);
	struct mds_attr ra;
	if ((rc = mds_inode_getattr(st, root, &ra)))
		die("fixture: root", rc);
	struct mds_exports *x = mds_exports_get(mds);
	uint32_t eid = x->n ? x->v[0].id : 0;
	mds_exports_put(x);
	struct mds_fh f = {.ino = cr.attr.ino, .gen = cr.attr.generation, .export_id = eid};
	mds_fh_make(mds, &f, fh_tab[FH_FILE].b);
	fh_tab[FH_FILE].len = MDS_FH_SIZE;
	f = (struct mds_fh){.ino = root, .gen = ra.generation, .export_id = eid};
	mds_fh_make(mds, &f, fh_tab[FH_ROOT].b);
	fh_tab[FH_ROOT].len = MDS_FH_SIZE;
	fh_tab[FH_BADMAC] = fh_tab[FH_FILE];
	fh_tab[FH_BADMAC].b[MDS_FH_SIZE - 1] ^= 0x5a;
	fh_tab[FH_EMPTY].len = 0;
}

/* The MDS on a scratch store, whose files go at once (the store stays open). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	struct fuzz_mds fm;
	fuzz_mds_start(&fm, "fuzz-mds-nlm", "/ *(rw,no_root_squash,insecure)\n",
		       "nlm_rpcbind_port = 1\n");
	mds = fm.mds;
	atexit(mds_stop_at_exit);
	fixture();
	fuzz_seed_dir_fill("nlm", 4 * NPROC * 4);
	return 0;
}
