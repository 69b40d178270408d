/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for braid-mds's operation handlers (mds/op_*.c): a real MDS
 * runs in-process on a scratch store, and each input is a short
 * conversation of COMPOUND bodies fed to nfs41_server_compound(mds->v41)
 * directly, no sockets (req->conn NULL: exports match it as 0.0.0.0).
 *
 * Input: one byte of session options, then records of
 *	[2-byte length][flags][reserved][COMPOUND4args]
 * (headers of 4 bytes keep the bodies word-aligned after the first byte,
 * as the standalone driver's mutations expect).  flags bits 0-1 pick the
 * credential (AUTH_SYS root, AUTH_SYS 1000 with groups, AUTH_NONE, AUTH_SYS
 * 65534 with too many groups); bit 2 sends the body raw.  Otherwise a body
 * that decodes is patched and re-encoded so the handlers run on genuine
 * objects:
 *  - a session ID of all zeros becomes this input's session (made up front
 *    for every input), all 0x01 the last session a CREATE_SESSION in this
 *    input made; a client ID of 0 becomes the last one EXCHANGE_ID gave in
 *    this input, else the input's own;
 *  - a 1-byte PUTFH handle selects an entry of the handle table: the
 *    fixture below, hostile handles with a genuine MAC (stale generation,
 *    no such inode, unknown export, the pseudo filesystem) or without one,
 *    then the handles GETFH returned earlier in this input;
 *  - a stateid whose other begins "FZ" is replaced by entry other[2] of the
 *    stateids OPEN, LOCK, LOCKU, CLOSE, OPEN_DOWNGRADE, LAYOUTGET and
 *    LAYOUTRETURN returned earlier in this input (other[3] bit 0: keep the
 *    input's seqid);
 *  - an EXCHANGE_ID verifier of all zeros becomes a fresh one (a new
 *    incarnation of that client, which ends the old one's state);
 *  - NFSv4.0 (minor version 0, no SEQUENCE): a SETCLIENTID verifier of all
 *    zeros becomes a fresh one, a SETCLIENTID_CONFIRM verifier of all zeros
 *    the last SETCLIENTID's, and client IDs of 0 in RENEW, OPEN, LOCK,
 *    LOCKT and RELEASE_LOCKOWNER the last SETCLIENTID's (or EXCHANGE_ID's);
 *    OPEN_CONFIRM's stateid is patched like the others.  Callbacks are
 *    never dialed (req->conn NULL: no SETCLIENTID source address).
 *
 * Every input starts from the same state: a fresh client ID and session
 * (a new EXCHANGE_ID verifier for the same owner ends the previous client
 * and its opens and locks), and the namespace of the fixture: after an
 * input that changed any fixture object (its change attribute moves on
 * every change below it), the tree is wiped through the store and made
 * again, so the store does not grow across iterations.
 *
 *	/		export "/ *(rw,no_root_squash,insecure)"
 *	/d		dir 0755		/d/f	file 0644 uid 1000, 5000 bytes, xattr
 *	/d/sub		dir 0700 uid 1000	/d/sub/g file 0600 uid 1000
 *	/d/gf		file 0664 gid 100	/d/hl	a second link to /f
 *	/f		file 0666		/x	file 0755
 *	/l		symlink to d/f		/p	fifo	/b	block device
 *	/t		dir 01777 (sticky)	/t/o	file 0644 uid 1000
 *	/ro		export "/ro *(ro)"	/ro/rf	file 0644, 100 bytes	/ro/rd	dir
 *
 * No data servers register, so file data I/O answers NFS4ERR_DELAY or
 * reads zeros.  Invariants: the procedure returns SUCCESS, GARBAGE_ARGS or
 * SYSTEM_ERR; a SUCCESS reply decodes as exactly one COMPOUND4res whose
 * status is its last result's (NFS4_OK when it has none, or
 * MINOR_VERS_MISMATCH) and holds no more results than the request had
 * operations; and no crash, leak or undefined behaviour (sanitizers).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mds/data.h"
#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "nfsd/mac.h"
#include "tests/fuzz/compound.h"
#include "tests/fuzz/mds-fixture.h"

#define MAX_RECORDS 8
#define REC_HDR	    4
#define MAX_DYN_FH  16
#define MAX_SIDS    16
#define OWNER	    "braid-fuzz-mds"

/* The fixture, in creation order (parents first); index = handle number. */
enum {
	FX_ROOT,
	FX_D,
	FX_DF,
	FX_DSUB,
	FX_DSUBG,
	FX_F,
	FX_X,
	FX_L,
	FX_P,
	FX_B,
	FX_DGF,
	FX_T,
	FX_TO,
	FX_RO,
	FX_RORF,
	FX_RORD,
	FX_N, /* objects; hostile handles follow */
	FH_PSEUDO_ROOT = FX_N,
	FH_PSEUDO_RO,
	FH_STALE_GEN,
	FH_STALE_INO,
	FH_BAD_EXPORT,
	FH_RORF_VIA_ROOT,
	FH_DF_VIA_RO,
	FH_BAD_MAC,
	FH_SHORT,
	FH_LONG,
	FH_EMPTY,
	FH_FIXED /* handles in the fixed table */
};

struct fx_def {
	int parent; /* fixture index, -1 for none */
	const char *name;
	uint8_t type;
	uint32_t mode, uid, gid;
	uint64_t size;
	const char *target; /* symlink */
};
static const struct fx_def fx_defs[FX_N] = {
    [FX_ROOT] = {-1, "", MDS_DIR, 0755, 0, 0, 0, NULL},
    [FX_D] = {FX_ROOT, "d", MDS_DIR, 0755, 0, 0, 0, NULL},
    [FX_DF] = {FX_D, "f", MDS_REG, 0644, 1000, 1000, 5000, NULL},
    [FX_DSUB] = {FX_D, "sub", MDS_DIR, 0700, 1000, 1000, 0, NULL},
    [FX_DSUBG] = {FX_DSUB, "g", MDS_REG, 0600, 1000, 1000, 0, NULL},
    [FX_F] = {FX_ROOT, "f", MDS_REG, 0666, 0, 0, 0, NULL},
    [FX_X] = {FX_ROOT, "x", MDS_REG, 0755, 0, 0, 0, NULL},
    [FX_L] = {FX_ROOT, "l", MDS_LNK, 0777, 0, 0, 0, "d/f"},
    [FX_P] = {FX_ROOT, "p", MDS_FIFO, 0644, 0, 0, 0, NULL},
    [FX_B] = {FX_ROOT, "b", MDS_BLK, 0600, 0, 0, 0, NULL},
    [FX_DGF] = {FX_D, "gf", MDS_REG, 0664, 0, 100, 10, NULL},
    [FX_T] = {FX_ROOT, "t", MDS_DIR, 01777, 0, 0, 0, NULL},
    [FX_TO] = {FX_T, "o", MDS_REG, 0644, 1000, 1000, 0, NULL},
    [FX_RO] = {FX_ROOT, "ro", MDS_DIR, 0755, 0, 0, 0, NULL},
    [FX_RORF] = {FX_RO, "rf", MDS_REG, 0644, 0, 0, 100, NULL},
    [FX_RORD] = {FX_RO, "rd", MDS_DIR, 0755, 0, 0, 0, NULL},
};

static struct braid_mds *mds;
static char scratch[4096], exports_path[4200];
static const char exports_text[] = "/ *(rw,no_root_squash,insecure)\n/ro *(ro)\n";

/* The fixture as last made: inode, generation, change attribute. */
static struct mds_attr fx_attr[FX_N];
static uint32_t root_export, ro_export;
static bool fx_dirty = true;
static unsigned long long n_inputs, n_remakes;

/* Handle table: fixed part, then what GETFH returned in this input. */
struct fh {
	uint32_t len;
	uint8_t b[NFS4_FHSIZE];
};
static struct fh fh_tab[FH_FIXED + MAX_DYN_FH];
static unsigned fh_dyn;

/* This input's client and session, and what it made of its own. */
static uint64_t my_clientid, last_clientid;
static uint8_t last_confirm[NFS4_VERIFIER_SIZE]; /* the last SETCLIENTID's */
static uint8_t my_sid[NFS4_SESSIONID_SIZE], last_sid[NFS4_SESSIONID_SIZE];
static bool have_last_clientid, have_last_sid;
static stateid4 sids[MAX_SIDS];
static unsigned nsids;
static uint64_t verifier_counter;
static unsigned owner_gen;

static struct nfsd_req req;
static bool verbose; /* $BRAID_FUZZ_VERBOSE: each reply's op:status pairs on stderr */
static uint32_t groups_1000[] = {1000, 100};
static uint32_t groups_many[20];

static void die(const char *what, int rc)
{
	fprintf(stderr, "fuzz-mds-compound: %s: %s\n", what, rc ? strerror(rc < 0 ? -rc : rc) : "");
	abort();
}

static void set_cred(unsigned sel)
{
	struct nfsd_cred *c = &req.cred;
	memset(c, 0, sizeof(*c));
	switch (sel & 3) {
	case 0:
		c->flavor = NFSD_AUTH_SYS;
		break;
	case 1:
		c->flavor = NFSD_AUTH_SYS;
		c->uid = c->gid = 1000;
		c->ngroups = 2;
		c->groups = groups_1000;
		break;
	case 2:
		c->flavor = NFSD_AUTH_NONE;
		break;
	default:
		c->flavor = NFSD_AUTH_SYS;
		c->uid = c->gid = 65534;
		c->ngroups = sizeof(groups_many) / sizeof(groups_many[0]);
		c->groups = groups_many;
		break;
	}
}

/* One COMPOUND through the MDS; the procedure's status, the reply in
 * out[0..*outlen) (0 when there is none). */
static int run(const uint8_t *body, size_t len, unsigned cred, uint8_t *out, size_t cap,
	       size_t *outlen)
{
	memset(&req, 0, sizeof(req));
	set_cred(cred);
	fuzz_req_init(&req, body, len);
	int st = nfs41_server_compound(mds->v41, &req);
	*outlen = 0;
	if (st == NFSD_SUCCESS && !req.enc.err && req.enc.len <= cap) {
		xdr_enc_flatten(&req.enc, out);
		*outlen = req.enc.len;
	} else if (st == NFSD_SUCCESS) {
		abort(); /* a reply the engine could not send */
	}
	xdr_arena_release(&req.arena);
	return st;
}

/*
 * Setup: the MDS, its client ID and session for each input.
 */
static callback_sec_parms4 sec_none = {.cb_secflavor = 0};

static const uint8_t *setup_call(nfs_argop4 *op, struct xdr_arena *a, COMPOUND4res *res)
{
	static uint8_t body[4096], out[1u << 16];
	COMPOUND4args args = {
	    .tag = xdr_string_of("setup"), .minorversion = 1, .argarray = {1, op}};
	size_t len = fuzz_compound_encode(body, sizeof(body), &args), outlen = 0;
	if (!len || run(body, len, 0, out, sizeof(out), &outlen) != NFSD_SUCCESS)
		die("setup COMPOUND", 0);
	struct xdr_dec d;
	xdr_dec_init(&d, out, outlen, a);
	if (xdr_dec_COMPOUND4res(&d, res) || res->resarray.len != 1)
		die("setup reply", 0);
	return out;
}

/* A new client ID for OWNER (replacing the last input's and its state)
 * and a session; false if the server refused. */
static bool session_try(const char *owner, uint8_t opts)
{
	static const uint32_t resp[4] = {(1u << 20) + 4096, 8192, 2048, 600};
	struct xdr_arena a;
	COMPOUND4res res;
	uint8_t verf[NFS4_VERIFIER_SIZE];
	uint64_t v = ++verifier_counter;
	memcpy(verf, &v, sizeof(verf));
	xdr_arena_init(&a, NULL, 0, 1u << 20);

	nfs_argop4 op = {.argop = OP_EXCHANGE_ID};
	memcpy(op.u.opexchange_id.eia_clientowner.co_verifier, verf, sizeof(verf));
	op.u.opexchange_id.eia_clientowner.co_ownerid = xdr_opaque_of(owner, strlen(owner));
	setup_call(&op, &a, &res);
	if (res.status) {
		xdr_arena_release(&a);
		return false;
	}
	EXCHANGE_ID4resok *e = &res.resarray.val[0].u.opexchange_id.u.eir_resok4;
	uint64_t clientid = e->eir_clientid;
	uint32_t seq = e->eir_sequenceid;

	memset(&op, 0, sizeof(op));
	op.argop = OP_CREATE_SESSION;
	CREATE_SESSION4args *ca = &op.u.opcreate_session;
	ca->csa_clientid = clientid;
	ca->csa_sequence = seq;
	ca->csa_fore_chan_attrs =
	    (channel_attrs4){.ca_maxrequestsize = (1u << 20) + 65536,
			     .ca_maxresponsesize = resp[opts & 3],
			     .ca_maxresponsesize_cached = opts & 4 ? 65536 : 1024,
			     .ca_maxoperations = 32,
			     .ca_maxrequests = 8};
	ca->csa_back_chan_attrs = (channel_attrs4){.ca_maxrequestsize = 4096,
						   .ca_maxresponsesize = 4096,
						   .ca_maxoperations = 2,
						   .ca_maxrequests = 1};
	ca->csa_cb_program = 0x40000000;
	ca->csa_sec_parms.len = 1;
	ca->csa_sec_parms.val = &sec_none;
	setup_call(&op, &a, &res);
	bool ok = res.status == NFS4_OK;
	if (ok) {
		memcpy(my_sid, res.resarray.val[0].u.opcreate_session.u.csr_resok4.csr_sessionid,
		       NFS4_SESSIONID_SIZE);
		my_clientid = clientid;
	}
	xdr_arena_release(&a);
	return ok;
}

static void session_new(uint8_t opts)
{
	for (unsigned tries = 0; tries < 8; tries++) {
		char owner[64];
		snprintf(owner, sizeof(owner), OWNER "-%u", owner_gen);
		if (session_try(owner, opts))
			return;
		owner_gen++; /* the input took our owner over: use another */
	}
	die("no session", 0);
}

/*
 * The fixture, through the store.
 */
struct names {
	struct {
		uint64_t ino;
		uint8_t type;
		size_t len;
		char name[MDS_NAME_MAX];
	} * v;
	size_t n, cap;
};

static int names_add(void *arg, const struct mds_dirent *e)
{
	struct names *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		void *v = realloc(l->v, cap * sizeof(*l->v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].ino = e->ino;
	l->v[l->n].type = e->type;
	l->v[l->n].len = e->name_len < MDS_NAME_MAX ? e->name_len : MDS_NAME_MAX;
	memcpy(l->v[l->n].name, e->name, l->v[l->n].len);
	l->n++;
	return 0;
}

static void unlink_name(uint64_t dir, const char *name, size_t len)
{
	struct mds_remove_args ra = {.dir = dir, .name = name, .name_len = len};
	struct mds_remove_res rr;
	int rc = mds_dir_remove(mds->store, &ra, &rr);
	if (rc && rc != -ENOENT)
		die("wipe: remove", rc);
	if (!rc && rr.victim.orphaned)
		mds_data_release(mds, rr.victim.ino);
}

/* Remove everything below dir (depth-first); in the root, keep the entry
 * "ro" when it is keep_ino (the /ro export's root), emptied. */
static void wipe(uint64_t dir, uint64_t keep_ino, unsigned depth)
{
	struct names l = {0};
	bool eof = false;
	if (depth > 4096)
		die("wipe: too deep", 0);
	int rc = mds_dir_readdir(mds->store, dir, 0, 0, names_add, &l, &eof);
	if (rc < 0 || !eof)
		die("wipe: readdir", rc);
	for (size_t i = 0; i < l.n; i++) {
		bool keep = keep_ino && l.v[i].ino == keep_ino && l.v[i].len == 2 &&
			    !memcmp(l.v[i].name, "ro", 2);
		if (l.v[i].type == MDS_DIR)
			wipe(l.v[i].ino, 0, depth + 1);
		if (!keep)
			unlink_name(dir, l.v[i].name, l.v[i].len);
	}
	free(l.v);
}

static int xattr_collect(void *arg, const char *name, size_t len)
{
	struct mds_dirent e = {.name = name, .name_len = len};
	return names_add(arg, &e);
}

/* Back to the fixture's mode, owner and no xattrs. */
static void restore_attrs(uint64_t ino, const struct fx_def *d)
{
	struct mds_setattr_args sa = {.ino = ino,
				      .mask = MDS_SET_MODE | MDS_SET_UID | MDS_SET_GID,
				      .mode = d->mode,
				      .uid = d->uid,
				      .gid = d->gid};
	int rc = mds_inode_setattr(mds->store, &sa, NULL);
	if (rc)
		die("fixture: setattr", rc);
	struct names l = {0};
	if ((rc = mds_xattr_list(mds->store, ino, xattr_collect, &l)))
		die("fixture: listxattr", rc);
	for (size_t i = 0; i < l.n; i++) {
		struct mds_xattr_args xa = {
		    .ino = ino, .name = l.v[i].name, .name_len = l.v[i].len};
		if ((rc = mds_xattr_remove(mds->store, &xa)) && rc != -ENODATA)
			die("fixture: removexattr", rc);
	}
	free(l.v);
}

static int orphan_collect(void *arg, const struct mds_attr *a)
{
	struct mds_dirent e = {.ino = a->ino, .name = "", .name_len = 0};
	return names_add(arg, &e);
}

static void exports_reload(void)
{
	char msg[512];
	FILE *f;
	if (mkdir(scratch, 0700) && errno != EEXIST)
		die("mkdir scratch", -errno);
	if (!(f = fopen(exports_path, "w")) || fputs(exports_text, f) < 0 || fclose(f))
		die("write exports", -errno);
	if (braid_mds_exports_reload(mds, msg, sizeof(msg))) {
		fprintf(stderr, "fuzz-mds-compound: %s\n", msg);
		abort();
	}
	unlink(exports_path);
	rmdir(scratch);
}

static void fh_put(unsigned i, uint64_t ino, uint64_t gen, uint32_t export_id)
{
	struct mds_fh fh = {.ino = ino, .gen = gen, .export_id = export_id};
	mds_fh_make(mds, &fh, fh_tab[i].b);
	fh_tab[i].len = MDS_FH_SIZE;
}

/* Wipe the namespace and make the fixture again; refill the handle table. */
static void fixture_make(void)
{
	struct mds_store *st = mds->store;
	uint64_t root = mds_store_root(st);
	struct mds_exports *x = mds_exports_get(mds);
	const struct mds_export *e = mds_export_by_id(x, ro_export);
	uint64_t ro = e ? e->root_ino : 0;
	mds_exports_put(x);
	uint64_t ino;
	struct mds_attr a;
	bool ro_ok = ro && !mds_dir_lookup(st, root, "ro", 2, &ino, &a) && ino == ro;

	wipe(root, ro_ok ? ro : 0, 0);
	struct names orphans = {0};
	mds_orphan_list(st, orphan_collect, &orphans);
	for (size_t i = 0; i < orphans.n; i++)
		mds_data_release(mds, orphans.v[i].ino);
	free(orphans.v);
	if (!ro_ok)
		exports_reload(); /* makes /ro again */

	for (unsigned i = 0; i < FX_N; i++) {
		const struct fx_def *d = &fx_defs[i];
		int rc;
		if (i == FX_ROOT || i == FX_RO) {
			ino = i == FX_ROOT ? root : 0;
			if (i == FX_RO && (rc = mds_dir_lookup(st, root, "ro", 2, &ino, NULL)))
				die("fixture: /ro", rc);
			restore_attrs(ino, d);
		} else {
			struct mds_create_args ca = {
			    .dir = fx_attr[d->parent].ino,
			    .name = d->name,
			    .name_len = strlen(d->name),
			    .type = d->type,
			    .how = MDS_CREATE_GUARDED,
			    .mode = d->mode,
			    .uid = d->uid,
			    .gid = d->gid,
			    .rdev_major = 8,
			    .rdev_minor = 1,
			    .symlink = d->target,
			    .symlink_len = d->target ? strlen(d->target) : 0,
			};
			struct mds_create_res cr;
			if ((rc = mds_dir_create(st, &ca, &cr)))
				die("fixture: create", rc);
			ino = cr.attr.ino;
			if (d->size) {
				struct mds_setattr_args sa = {
				    .ino = ino, .mask = MDS_SET_SIZE, .size = d->size};
				if ((rc = mds_inode_setattr(st, &sa, NULL)))
					die("fixture: size", rc);
			}
		}
		if ((rc = mds_inode_getattr(st, ino, &fx_attr[i])))
			die("fixture: getattr", rc);
	}
	/* /d/f carries an xattr; /d/hl is a second link to /f */
	struct mds_xattr_args xa = {.ino = fx_attr[FX_DF].ino,
				    .name = "user.k",
				    .name_len = 6,
				    .value = "value",
				    .value_len = 5};
	struct mds_link_args la = {
	    .ino = fx_attr[FX_F].ino, .dir = fx_attr[FX_D].ino, .name = "hl", .name_len = 2};
	int rc;
	if ((rc = mds_xattr_set(st, &xa)) || (rc = mds_dir_link(st, &la, NULL)))
		die("fixture: xattr/link", rc);
	for (unsigned i = 0; i < FX_N; i++)
		if ((rc = mds_inode_getattr(st, fx_attr[i].ino, &fx_attr[i])))
			die("fixture: getattr", rc);

	x = mds_exports_get(mds);
	if (!(e = mds_export_by_root(x, root)))
		die("no / export", 0);
	root_export = e->id;
	if (!(e = mds_export_by_root(x, fx_attr[FX_RO].ino)))
		die("no /ro export", 0);
	ro_export = e->id;
	mds_exports_put(x);

	for (unsigned i = 0; i < FX_N; i++) {
		bool in_ro = i == FX_RO || i == FX_RORF || i == FX_RORD;
		fh_put(i, fx_attr[i].ino, fx_attr[i].generation, in_ro ? ro_export : root_export);
	}
	fh_put(FH_PSEUDO_ROOT, root, fx_attr[FX_ROOT].generation, 0);
	fh_put(FH_PSEUDO_RO, fx_attr[FX_RO].ino, fx_attr[FX_RO].generation, 0);
	fh_put(FH_STALE_GEN, fx_attr[FX_DF].ino, fx_attr[FX_DF].generation + 1, root_export);
	fh_put(FH_STALE_INO, fx_attr[FX_RORD].ino + 1000000, fx_attr[FX_DF].generation,
	       root_export);
	fh_put(FH_BAD_EXPORT, fx_attr[FX_D].ino, fx_attr[FX_D].generation, 0x5eed5eed);
	fh_put(FH_RORF_VIA_ROOT, fx_attr[FX_RORF].ino, fx_attr[FX_RORF].generation, root_export);
	fh_put(FH_DF_VIA_RO, fx_attr[FX_DF].ino, fx_attr[FX_DF].generation, ro_export);
	fh_put(FH_BAD_MAC, fx_attr[FX_F].ino, fx_attr[FX_F].generation, root_export);
	fh_tab[FH_BAD_MAC].b[MDS_FH_SIZE - 1] ^= 1;
	fh_tab[FH_SHORT] = fh_tab[FX_F];
	fh_tab[FH_SHORT].len = MDS_FH_SIZE - 1;
	fh_tab[FH_LONG] = fh_tab[FX_F];
	fh_tab[FH_LONG].len = NFS4_FHSIZE;
	fh_tab[FH_EMPTY].len = 0;
	fx_dirty = false;
	n_remakes++;
}

/* Did the last input change a fixture object (or remove one)? */
static bool fixture_changed(void)
{
	for (unsigned i = 0; i < FX_N; i++) {
		struct mds_attr a;
		if (mds_inode_getattr(mds->store, fx_attr[i].ino, &a) ||
		    a.generation != fx_attr[i].generation || a.change != fx_attr[i].change)
			return true;
	}
	return false;
}

/*
 * Patching a decoded COMPOUND (see the top of the file).
 */
static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void patch_sessionid(uint8_t *sid)
{
	if (all_bytes(sid, NFS4_SESSIONID_SIZE, 0))
		memcpy(sid, my_sid, NFS4_SESSIONID_SIZE);
	else if (have_last_sid && all_bytes(sid, NFS4_SESSIONID_SIZE, 1))
		memcpy(sid, last_sid, NFS4_SESSIONID_SIZE);
}

static void patch_clientid(uint64_t *id)
{
	if (*id == 0)
		*id = have_last_clientid ? last_clientid : my_clientid;
}

static void patch_stateid(stateid4 *s)
{
	if (s->other[0] != 'F' || s->other[1] != 'Z' || !nsids)
		return;
	uint32_t seqid = s->seqid;
	bool keep = s->other[3] & 1;
	*s = sids[s->other[2] % nsids];
	if (keep)
		s->seqid = seqid;
}

static void patch_op(nfs_argop4 *a)
{
	switch (a->argop) {
	case OP_SEQUENCE:
		patch_sessionid(a->u.opsequence.sa_sessionid);
		break;
	case OP_DESTROY_SESSION:
		patch_sessionid(a->u.opdestroy_session.dsa_sessionid);
		break;
	case OP_BIND_CONN_TO_SESSION:
		patch_sessionid(a->u.opbind_conn_to_session.bctsa_sessid);
		break;
	case OP_EXCHANGE_ID: {
		/* a zero verifier: a new incarnation of that client every time */
		uint8_t *v = a->u.opexchange_id.eia_clientowner.co_verifier;
		if (all_bytes(v, NFS4_VERIFIER_SIZE, 0)) {
			uint64_t n = ++verifier_counter;
			memcpy(v, &n, sizeof(n));
		}
		break;
	}
	case OP_CREATE_SESSION:
		patch_clientid(&a->u.opcreate_session.csa_clientid);
		break;
	case OP_SETCLIENTID: {
		uint8_t *v = a->u.opsetclientid.client.verifier;
		if (all_bytes(v, NFS4_VERIFIER_SIZE, 0)) {
			uint64_t n = ++verifier_counter;
			memcpy(v, &n, sizeof(n));
		}
		break;
	}
	case OP_SETCLIENTID_CONFIRM:
		patch_clientid(&a->u.opsetclientid_confirm.clientid);
		if (all_bytes(a->u.opsetclientid_confirm.setclientid_confirm, NFS4_VERIFIER_SIZE,
			      0))
			memcpy(a->u.opsetclientid_confirm.setclientid_confirm, last_confirm,
			       NFS4_VERIFIER_SIZE);
		break;
	case OP_RENEW:
		patch_clientid(&a->u.oprenew.clientid);
		break;
	case OP_OPEN_CONFIRM:
		patch_stateid(&a->u.opopen_confirm.open_stateid);
		break;
	case OP_LOCKT:
		patch_clientid(&a->u.oplockt.owner.clientid);
		break;
	case OP_RELEASE_LOCKOWNER:
		patch_clientid(&a->u.oprelease_lockowner.lock_owner.clientid);
		break;
	case OP_DESTROY_CLIENTID:
		patch_clientid(&a->u.opdestroy_clientid.dca_clientid);
		break;
	case OP_PUTFH:
		if (a->u.opputfh.object.len == 1) {
			const struct fh *f =
			    &fh_tab[a->u.opputfh.object.val[0] % (FH_FIXED + fh_dyn)];
			a->u.opputfh.object = xdr_opaque_of(f->b, f->len);
		}
		break;
	case OP_OPEN:
		patch_clientid(&a->u.opopen.owner.clientid);
		if (a->u.opopen.claim.claim == CLAIM_DELEGATE_CUR)
			patch_stateid(&a->u.opopen.claim.u.delegate_cur_info.delegate_stateid);
		else if (a->u.opopen.claim.claim == CLAIM_DELEG_CUR_FH)
			patch_stateid(&a->u.opopen.claim.u.oc_delegate_stateid);
		break;
	case OP_CLOSE:
		patch_stateid(&a->u.opclose.open_stateid);
		break;
	case OP_LOCK:
		if (a->u.oplock.locker.new_lock_owner) {
			patch_stateid(&a->u.oplock.locker.u.open_owner.open_stateid);
			patch_clientid(&a->u.oplock.locker.u.open_owner.lock_owner.clientid);
		} else {
			patch_stateid(&a->u.oplock.locker.u.lock_owner.lock_stateid);
		}
		break;
	case OP_LOCKU:
		patch_stateid(&a->u.oplocku.lock_stateid);
		break;
	case OP_OPEN_DOWNGRADE:
		patch_stateid(&a->u.opopen_downgrade.open_stateid);
		break;
	case OP_SETATTR:
		patch_stateid(&a->u.opsetattr.stateid);
		break;
	case OP_READ:
		patch_stateid(&a->u.opread.stateid);
		break;
	case OP_WRITE:
		patch_stateid(&a->u.opwrite.stateid);
		break;
	case OP_SEEK:
		patch_stateid(&a->u.opseek.sa_stateid);
		break;
	case OP_ALLOCATE:
		patch_stateid(&a->u.opallocate.aa_stateid);
		break;
	case OP_DEALLOCATE:
		patch_stateid(&a->u.opdeallocate.da_stateid);
		break;
	case OP_READ_PLUS:
		patch_stateid(&a->u.opread_plus.rpa_stateid);
		break;
	case OP_FREE_STATEID:
		patch_stateid(&a->u.opfree_stateid.fsa_stateid);
		break;
	case OP_DELEGRETURN:
		patch_stateid(&a->u.opdelegreturn.deleg_stateid);
		break;
	case OP_LAYOUTGET:
		patch_stateid(&a->u.oplayoutget.loga_stateid);
		break;
	case OP_LAYOUTCOMMIT:
		patch_stateid(&a->u.oplayoutcommit.loca_stateid);
		break;
	case OP_LAYOUTRETURN:
		if (a->u.oplayoutreturn.lora_layoutreturn.lr_returntype == LAYOUTRETURN4_FILE)
			patch_stateid(
			    &a->u.oplayoutreturn.lora_layoutreturn.u.lr_layout.lrf_stateid);
		break;
	case OP_LAYOUTERROR:
		patch_stateid(&a->u.oplayouterror.lea_stateid);
		break;
	case OP_LAYOUTSTATS:
		patch_stateid(&a->u.oplayoutstats.lsa_stateid);
		break;
	case OP_TEST_STATEID:
		for (uint32_t i = 0; i < a->u.optest_stateid.ts_stateids.len; i++)
			patch_stateid(&a->u.optest_stateid.ts_stateids.val[i]);
		break;
	default:
		break;
	}
}

/* Decode, patch and re-encode body into out; the new length, or 0 to send
 * the body as it is (it does not decode whole, or no longer fits). */
static size_t patch(const uint8_t *body, size_t len, uint8_t *out, size_t cap)
{
	struct xdr_arena a;
	struct xdr_dec d;
	COMPOUND4args args;
	size_t n = 0;
	xdr_arena_init(&a, NULL, 0, 8u << 20);
	xdr_dec_init(&d, body, len, &a);
	if (!xdr_dec_COMPOUND4args(&d, &args) && !xdr_dec_left(&d)) {
		for (uint32_t i = 0; i < args.argarray.len; i++)
			patch_op(&args.argarray.val[i]);
		n = fuzz_compound_encode(out, cap, &args);
	}
	xdr_arena_release(&a);
	return n;
}

/* Check the reply's invariants; note the handles, stateids, client and
 * session IDs it gave for later records. */
static void reply_check(const uint8_t *out, size_t len, uint32_t nops)
{
	struct xdr_arena a;
	COMPOUND4res res;
	fuzz_compound_reply_check(&a, out, len, nops, &res);
	for (uint32_t i = 0; i < res.resarray.len; i++) {
		nfs_resop4 *r = &res.resarray.val[i];
		nfsstat4 st;
		const stateid4 *sid = NULL;
		memcpy(&st, &r->u, sizeof(st));
		if (verbose)
			fprintf(stderr, " %u:%u", (unsigned)r->resop, (unsigned)st);
		if (st != NFS4_OK)
			continue;
		switch (r->resop) {
		case OP_GETFH:
			if (fh_dyn < MAX_DYN_FH &&
			    r->u.opgetfh.u.resok4.object.len <= NFS4_FHSIZE) {
				struct fh *f = &fh_tab[FH_FIXED + fh_dyn++];
				f->len = r->u.opgetfh.u.resok4.object.len;
				memcpy(f->b, r->u.opgetfh.u.resok4.object.val, f->len);
			}
			break;
		case OP_OPEN:
			sid = &r->u.opopen.u.resok4.stateid;
			break;
		case OP_LOCK:
			sid = &r->u.oplock.u.resok4.lock_stateid;
			break;
		case OP_LOCKU:
			sid = &r->u.oplocku.u.lock_stateid;
			break;
		case OP_CLOSE:
			sid = &r->u.opclose.u.open_stateid;
			break;
		case OP_OPEN_DOWNGRADE:
			sid = &r->u.opopen_downgrade.u.resok4.open_stateid;
			break;
		case OP_LAYOUTGET:
			sid = &r->u.oplayoutget.u.logr_resok4.logr_stateid;
			break;
		case OP_LAYOUTRETURN:
			if (r->u.oplayoutreturn.u.lorr_stateid.lrs_present)
				sid = &r->u.oplayoutreturn.u.lorr_stateid.u.lrs_stateid;
			break;
		case OP_EXCHANGE_ID:
			last_clientid = r->u.opexchange_id.u.eir_resok4.eir_clientid;
			have_last_clientid = true;
			break;
		case OP_SETCLIENTID:
			last_clientid = r->u.opsetclientid.u.resok4.clientid;
			memcpy(last_confirm, r->u.opsetclientid.u.resok4.setclientid_confirm,
			       NFS4_VERIFIER_SIZE);
			have_last_clientid = true;
			break;
		case OP_OPEN_CONFIRM:
			sid = &r->u.opopen_confirm.u.resok4.open_stateid;
			break;
		case OP_CREATE_SESSION:
			memcpy(last_sid, r->u.opcreate_session.u.csr_resok4.csr_sessionid,
			       NFS4_SESSIONID_SIZE);
			have_last_sid = true;
			break;
		default:
			break;
		}
		if (sid && nsids < MAX_SIDS)
			sids[nsids++] = *sid;
	}
	if (verbose)
		fprintf(stderr, "\n");
	xdr_arena_release(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t rec[1u << 16], patched[1u << 17], out[2u << 20];
	if (!size)
		return 0;
	uint8_t opts = data[0];
	data++;
	size--;

	n_inputs++;
	if (fx_dirty || fixture_changed())
		fixture_make();
	session_new(opts);
	fh_dyn = 0;
	nsids = 0;
	have_last_clientid = have_last_sid = false;

	for (int i = 0; i < MAX_RECORDS && size >= REC_HDR; i++) {
		size_t n = (size_t)data[0] << 8 | data[1];
		uint8_t flags = data[2];
		data += REC_HDR;
		size -= REC_HDR;
		if (n > size)
			n = size;
		memcpy(rec, data, n);
		data += n;
		size -= n;
		const uint8_t *body = rec;
		size_t len = n, outlen;
		if (!(flags & 4)) {
			size_t pn = patch(rec, n, patched, sizeof(patched));
			if (pn) {
				body = patched;
				len = pn;
			}
		}
		int st = run(body, len, flags & 3, out, sizeof(out), &outlen);
		if (st != NFSD_SUCCESS && st != NFSD_GARBAGE_ARGS && st != NFSD_SYSTEM_ERR)
			abort();
		if (verbose)
			fprintf(stderr, "record %d: %s%s", i,
				st == NFSD_SUCCESS ? "" : "rpc error\n",
				body == rec ? "(raw)" : "");
		if (st == NFSD_SUCCESS)
			reply_check(out, outlen, fuzz_compound_nops(body, len));
	}
	return 0;
}

/*
 * Seeds: valid conversations that use every implemented operation.
 */
struct sb {
	struct xdr_arena *a;
	nfs_argop4 ops[24];
	unsigned n;
	uint64_t k; /* variations */
};

static nfs_argop4 *op(struct sb *b, nfs_opnum4 num)
{
	nfs_argop4 *o = &b->ops[b->n < 23 ? b->n++ : 23];
	memset(o, 0, sizeof(*o));
	o->argop = num;
	return o;
}

static unsigned pick(struct sb *b, unsigned n)
{
	unsigned v = (unsigned)(b->k % n);
	b->k = b->k / n ^ (b->k << 61);
	return v;
}

static xdr_string str(const char *s)
{
	return xdr_string_of(s);
}

static void putfh(struct sb *b, unsigned idx)
{
	uint8_t *p = xdr_arena_alloc(b->a, 1);
	*p = (uint8_t)idx;
	op(b, OP_PUTFH)->u.opputfh.object = xdr_opaque_of(p, 1);
}

static bitmap4 bits(struct sb *b, uint32_t w0, uint32_t w1, uint32_t w2)
{
	uint32_t *w = xdr_arena_alloc(b->a, 3 * sizeof(uint32_t));
	w[0] = w0;
	w[1] = w1;
	w[2] = w2;
	return (bitmap4){.len = w2 ? 3 : w1 ? 2 : 1, .val = w};
}

/* Every readable attribute (now and then the write-only ones too: INVAL). */
static bitmap4 all_bits(struct sb *b)
{
	if (pick(b, 8) == 0)
		return bits(b, ~0u, ~0u, ~0u);
	return bits(b, ~0u,
		    ~(1u << (FATTR4_TIME_ACCESS_SET - 32) | 1u << (FATTR4_TIME_MODIFY_SET - 32)),
		    ~(1u << (FATTR4_MODE_SET_MASKED - 64) | 1u << (FATTR4_MODE_UMASK - 64)));
}

/* A fattr4 from (attribute number, value bytes) pairs in ascending order. */
struct fa {
	uint32_t w[3];
	uint8_t v[256];
	size_t len;
};
static void fa_u32(struct fa *f, uint32_t v)
{
	xdr_put32(f->v + f->len, v);
	f->len += 4;
}
static void fa_u64(struct fa *f, uint64_t v)
{
	fa_u32(f, (uint32_t)(v >> 32));
	fa_u32(f, (uint32_t)v);
}
static void fa_str(struct fa *f, const char *s)
{
	size_t n = strlen(s);
	fa_u32(f, (uint32_t)n);
	memset(f->v + f->len, 0, (n + 3) & ~(size_t)3);
	memcpy(f->v + f->len, s, n);
	f->len += (n + 3) & ~(size_t)3;
}
static void fa_bit(struct fa *f, unsigned n)
{
	f->w[n / 32] |= 1u << (n % 32);
}
static fattr4 fa_done(struct sb *b, const struct fa *f)
{
	uint8_t *v = xdr_arena_alloc(b->a, f->len + 1);
	memcpy(v, f->v, f->len);
	return (fattr4){.attrmask = bits(b, f->w[0], f->w[1], f->w[2]),
			.attr_vals = xdr_opaque_of(v, f->len)};
}

/* Settable attributes: a mix chosen by the variation bits. */
static fattr4 set_attrs(struct sb *b)
{
	struct fa f = {.len = 0};
	unsigned m = pick(b, 64);
	if (m & 1) {
		fa_bit(&f, FATTR4_SIZE);
		fa_u64(&f, pick(b, 3) == 0 ? 0 : 4096 * pick(b, 4) + 17);
	}
	if (m & 2) {
		fa_bit(&f, FATTR4_MODE);
		fa_u32(&f, pick(b, 2) ? 0640 : 06755);
	}
	if (m & 4) {
		fa_bit(&f, FATTR4_OWNER);
		fa_str(&f, pick(b, 3) ? "1000" : "nobody");
	}
	if (m & 8) {
		fa_bit(&f, FATTR4_OWNER_GROUP);
		fa_str(&f, pick(b, 2) ? "100" : "0");
	}
	if (m & 16) {
		fa_bit(&f, FATTR4_TIME_ACCESS_SET);
		fa_u32(&f, SET_TO_CLIENT_TIME4);
		fa_u64(&f, 1700000000);
		fa_u32(&f, 5);
	}
	if (m & 32) {
		fa_bit(&f, FATTR4_TIME_MODIFY_SET);
		fa_u32(&f, 0); /* SET_TO_SERVER_TIME4 */
	}
	return fa_done(b, &f);
}

/* Attributes to create with: mode, or mode_umask (RFC 8275). */
static fattr4 create_attrs(struct sb *b)
{
	struct fa f = {.len = 0};
	if (pick(b, 2)) {
		fa_bit(&f, FATTR4_MODE);
		fa_u32(&f, 0644);
	} else {
		fa_bit(&f, FATTR4_MODE_UMASK);
		fa_u32(&f, 0777);
		fa_u32(&f, 022);
	}
	return fa_done(b, &f);
}

static stateid4 sid_cur(void)
{
	return (stateid4){.seqid = 1}; /* the current stateid, RFC 8881 §16.2.3.1.2 */
}

/* Entry i of this input's stateid table. */
static stateid4 sid_fz(unsigned i)
{
	stateid4 s = {0};
	s.other[0] = 'F';
	s.other[1] = 'Z';
	s.other[2] = (uint8_t)i;
	return s;
}

static stateid4 sid_anon(struct sb *b)
{
	stateid4 s = {0};
	if (pick(b, 4) == 0) {
		s.seqid = ~0u;
		memset(s.other, 0xff, sizeof(s.other)); /* READ bypass */
	}
	return s;
}

/* One of the fixture's directories. */
static unsigned dir_pick(struct sb *b)
{
	static const unsigned dirs[] = {FX_ROOT, FX_D, FX_D, FX_DSUB, FX_T, FX_RORD};
	return dirs[pick(b, sizeof(dirs) / sizeof(dirs[0]))];
}

static const char *const names[] = {"f",  "new", "sub", "g",  "x", "hl",
				    "ro", "nd",	 "l",	"gf", "o", "t"};

static const char *name(struct sb *b)
{
	return names[pick(b, sizeof(names) / sizeof(names[0]))];
}

static void open_op(struct sb *b, bool create, const char *nm)
{
	OPEN4args *o = &op(b, OP_OPEN)->u.opopen;
	static const uint32_t acc[] = {OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_ACCESS_WRITE,
				       OPEN4_SHARE_ACCESS_BOTH,
				       OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG};
	o->share_access = acc[pick(b, 4)];
	o->share_deny = pick(b, 4) == 0 ? OPEN4_SHARE_DENY_WRITE : OPEN4_SHARE_DENY_NONE;
	o->owner.owner = xdr_opaque_of(pick(b, 2) ? "oo-1" : "oo-2", 4);
	if (create) {
		o->openhow.opentype = OPEN4_CREATE;
		createhow4 *h = &o->openhow.u.how;
		switch (pick(b, 8)) {
		case 0:
		case 1:
		case 2:
			h->mode = UNCHECKED4;
			h->u.createattrs = create_attrs(b);
			break;
		case 3:
		case 4:
		case 5:
			h->mode = GUARDED4;
			h->u.createattrs = create_attrs(b);
			break;
		case 6: /* NFS4ERR_INVAL on a pNFS server (RFC 8881 §18.16.3) */
			h->mode = EXCLUSIVE4;
			memcpy(h->u.createverf, "verifier", 8);
			break;
		default:
			h->mode = EXCLUSIVE4_1;
			memcpy(h->u.ch_createboth.cva_verf, "verf4__1", 8);
			h->u.ch_createboth.cva_attrs = create_attrs(b);
			break;
		}
	}
	if (nm) {
		o->claim.claim = CLAIM_NULL;
		o->claim.u.file = str(nm);
	} else {
		o->claim.claim = pick(b, 8) ? CLAIM_FH : CLAIM_PREVIOUS;
	}
}

static void lock_op(struct sb *b, stateid4 sid, bool new_owner)
{
	LOCK4args *l = &op(b, OP_LOCK)->u.oplock;
	l->locktype = pick(b, 2) ? WRITE_LT : READ_LT;
	l->offset = pick(b, 3) * 100;
	l->length = pick(b, 3) ? 50 : ~0ull;
	l->locker.new_lock_owner = new_owner;
	if (new_owner) {
		l->locker.u.open_owner.open_stateid = sid;
		l->locker.u.open_owner.lock_owner.owner = xdr_opaque_of("lo-1", 4);
	} else {
		l->locker.u.lock_owner.lock_stateid = sid;
	}
}

/* One COMPOUND after SEQUENCE, of template t. */
static void compound_ops(struct sb *b, unsigned t)
{
	switch (t) {
	case 0: /* walk and look */
		op(b, OP_PUTROOTFH);
		op(b, OP_GETFH);
		op(b, OP_LOOKUP)->u.oplookup.objname = str("d");
		op(b, OP_GETATTR)->u.opgetattr.attr_request = all_bits(b);
		op(b, OP_LOOKUP)->u.oplookup.objname = str(name(b));
		op(b, OP_GETFH);
		op(b, OP_LOOKUPP);
		op(b, OP_GETATTR)->u.opgetattr.attr_request = bits(b, 0x1f, 0, 0);
		break;
	case 1: { /* READDIR with every attribute */
		putfh(b, pick(b, 2) ? FX_D : FX_ROOT);
		READDIR4args *r = &op(b, OP_READDIR)->u.opreaddir;
		r->dircount = pick(b, 2) ? 0 : 64;
		r->maxcount = pick(b, 3) ? 8192 : 200;
		r->attr_request = all_bits(b);
		break;
	}
	case 2: { /* GETATTR, ACCESS, VERIFY, NVERIFY */
		putfh(b, pick(b, FX_N));
		op(b, OP_GETATTR)->u.opgetattr.attr_request = all_bits(b);
		op(b, OP_ACCESS)->u.opaccess.access = pick(b, 2) ? 0x3f : 0x1ff;
		struct fa f = {.len = 0};
		fa_bit(&f, FATTR4_TYPE);
		fa_u32(&f, NF4REG);
		fa_bit(&f, FATTR4_SIZE);
		fa_u64(&f, 5000);
		fa_bit(&f, FATTR4_MODE);
		fa_u32(&f, 0644);
		op(b, pick(b, 2) ? OP_VERIFY : OP_NVERIFY)->u.opverify.obj_attributes =
		    fa_done(b, &f);
		break;
	}
	case 3: /* OPEN create, GETFH, WRITE, READ, CLOSE */
		putfh(b, pick(b, 3) ? FX_D : FX_RO);
		open_op(b, true, pick(b, 2) ? "new" : name(b));
		op(b, OP_GETFH);
		if (pick(b, 2)) {
			WRITE4args *w = &op(b, OP_WRITE)->u.opwrite;
			w->stateid = sid_cur();
			w->offset = pick(b, 2) * 8192;
			w->stable = pick(b, 2) ? FILE_SYNC4 : UNSTABLE4;
			w->data = xdr_opaque_of("hello, braid", 12);
		}
		op(b, OP_READ)->u.opread = (READ4args){.stateid = sid_cur(), .count = 4096};
		op(b, OP_CLOSE)->u.opclose.open_stateid = sid_cur();
		break;
	case 4: /* OPEN, LOCK, LOCKT, LOCKU, CLOSE */
		putfh(b, FX_D);
		open_op(b, false, pick(b, 2) ? "f" : "hl");
		op(b, OP_SAVEFH);
		lock_op(b, sid_cur(), true);
		{
			/* past the lock: no conflict, unless the variation says */
			LOCKT4args *t4 = &op(b, OP_LOCKT)->u.oplockt;
			t4->locktype = pick(b, 2) ? WRITE_LT : READ_LT;
			t4->offset = pick(b, 4) ? 1u << 20 : 0;
			t4->length = ~0ull;
			t4->owner.owner = xdr_opaque_of(pick(b, 2) ? "lo-2" : "lo-1", 4);
		}
		if (pick(b, 2))
			lock_op(b, sid_cur(), false);
		op(b, OP_LOCKU)->u.oplocku = (LOCKU4args){.locktype = READ_LT,
							  .seqid = pick(b, 2),
							  .lock_stateid = sid_cur(),
							  .offset = pick(b, 2) * 100,
							  .length = ~0ull};
		op(b, OP_RESTOREFH);
		op(b, OP_CLOSE)->u.opclose.open_stateid = sid_cur();
		break;
	case 5: /* SETATTR */
		putfh(b, pick(b, 2) ? FX_F : pick(b, FX_N));
		op(b, OP_SETATTR)->u.opsetattr =
		    (SETATTR4args){.stateid = sid_anon(b), .obj_attributes = set_attrs(b)};
		op(b, OP_GETATTR)->u.opgetattr.attr_request = bits(b, 0x18, 0x300012, 0);
		break;
	case 6: { /* CREATE of every type */
		static const nfs_ftype4 types[] = {NF4DIR, NF4LNK,  NF4FIFO, NF4BLK,
						   NF4CHR, NF4SOCK, NF4REG};
		putfh(b, pick(b, 4) ? dir_pick(b) : pick(b, FX_N));
		CREATE4args *c = &op(b, OP_CREATE)->u.opcreate;
		c->objtype.type = types[pick(b, 7)];
		if (c->objtype.type == NF4LNK)
			c->objtype.u.linkdata = str("../target");
		if (c->objtype.type == NF4BLK || c->objtype.type == NF4CHR)
			c->objtype.u.devdata = (specdata4){1, 3};
		c->objname = str(pick(b, 2) ? "nd" : name(b));
		c->createattrs = create_attrs(b);
		op(b, OP_GETFH);
		op(b, OP_GETATTR)->u.opgetattr.attr_request = all_bits(b);
		break;
	}
	case 7: /* RENAME: saved = source dir, current = target dir */
		putfh(b, dir_pick(b));
		op(b, OP_SAVEFH);
		putfh(b, dir_pick(b));
		op(b, OP_RENAME)->u.oprename =
		    (RENAME4args){.oldname = str(name(b)), .newname = str(name(b))};
		break;
	case 8: /* LINK: saved = object, current = dir */
		putfh(b, pick(b, FX_N));
		op(b, OP_SAVEFH);
		putfh(b, dir_pick(b));
		op(b, OP_LINK)->u.oplink.newname = str(pick(b, 2) ? "link" : name(b));
		break;
	case 9: /* REMOVE */
		putfh(b, dir_pick(b));
		op(b, OP_REMOVE)->u.opremove.target = str(name(b));
		break;
	case 10: /* READLINK, SECINFO, SECINFO_NO_NAME */
		putfh(b, pick(b, 2) ? FX_L : pick(b, FX_N));
		op(b, OP_READLINK);
		putfh(b, pick(b, 2) ? FX_ROOT : FH_PSEUDO_ROOT);
		op(b, OP_SECINFO)->u.opsecinfo.name = str(pick(b, 2) ? "d" : "ro");
		putfh(b, FX_D);
		op(b, OP_SECINFO_NO_NAME)->u.opsecinfo_no_name = pick(b, 2);
		break;
	case 11: { /* extended attributes (RFC 8276) */
		putfh(b, pick(b, 2) ? FX_DF : pick(b, FX_N));
		SETXATTR4args *s = &op(b, OP_SETXATTR)->u.opsetxattr;
		s->sxa_option = pick(b, 3);
		s->sxa_key = str(pick(b, 2) ? "user.k" : "user.new");
		s->sxa_value = xdr_opaque_of("some value", 10);
		op(b, OP_GETXATTR)->u.opgetxattr.gxa_name = str("user.k");
		op(b, OP_LISTXATTRS)->u.oplistxattrs.lxa_maxcount = pick(b, 2) ? 4096 : 12;
		if (pick(b, 2))
			op(b, OP_REMOVEXATTR)->u.opremovexattr.rxa_name = str("user.k");
		break;
	}
	case 12: /* file data: two of READ, SEEK, READ_PLUS, ALLOCATE, DEALLOCATE, COMMIT */
		putfh(b, pick(b, 2) ? FX_DF : pick(b, FX_N));
		for (unsigned i = 0; i < 2; i++)
			switch (pick(b, 6)) {
			case 0:
				op(b, OP_READ)->u.opread =
				    (READ4args){.stateid = sid_anon(b),
						.offset = pick(b, 3) * 4000,
						.count = pick(b, 2) ? 4096 : 1u << 20};
				break;
			case 1:
				op(b, OP_SEEK)->u.opseek = (SEEK4args){
				    .sa_stateid = sid_anon(b),
				    .sa_offset = pick(b, 3) * 3000,
				    .sa_what = pick(b, 2) ? NFS4_CONTENT_DATA : NFS4_CONTENT_HOLE};
				break;
			case 2:
				op(b, OP_READ_PLUS)->u.opread_plus =
				    (READ_PLUS4args){.rpa_stateid = sid_anon(b),
						     .rpa_offset = pick(b, 3) * 2500,
						     .rpa_count = 8192};
				break;
			case 3:
				op(b, OP_ALLOCATE)->u.opallocate =
				    (ALLOCATE4args){.aa_stateid = sid_anon(b),
						    .aa_offset = pick(b, 2) * 6000,
						    .aa_length = 8192};
				break;
			case 4:
				op(b, OP_DEALLOCATE)->u.opdeallocate =
				    (DEALLOCATE4args){.da_stateid = sid_anon(b),
						      .da_offset = pick(b, 2) * 4096,
						      .da_length = 100};
				break;
			default:
				op(b, OP_COMMIT)->u.opcommit.count = pick(b, 2) * 4096;
				break;
			}
		break;
	case 13: /* the read-only export and the pseudo filesystem */
		putfh(b, FX_RO + pick(b, 3));
		op(b, OP_GETATTR)->u.opgetattr.attr_request = all_bits(b);
		op(b, OP_CREATE)->u.opcreate = (CREATE4args){.objtype = {.type = NF4DIR},
							     .objname = str("nope"),
							     .createattrs = create_attrs(b)};
		putfh(b, FH_PSEUDO_ROOT + pick(b, 2));
		op(b, OP_LOOKUP)->u.oplookup.objname = str(pick(b, 2) ? "ro" : "d");
		op(b, OP_LOOKUPP);
		break;
	case 14: /* hostile handles */
		putfh(b, FH_PSEUDO_ROOT + pick(b, FH_FIXED - FH_PSEUDO_ROOT));
		op(b, OP_GETATTR)->u.opgetattr.attr_request = all_bits(b);
		op(b, OP_SAVEFH);
		putfh(b, pick(b, FH_FIXED));
		op(b, OP_RENAME)->u.oprename =
		    (RENAME4args){.oldname = str("f"), .newname = str("g")};
		break;
	case 15:		    /* stateids and the handle from earlier records */
		putfh(b, FH_FIXED); /* the first GETFH's */
		switch (pick(b, 5)) {
		case 0:
			lock_op(b, sid_fz(0), true);
			break;
		case 1:
			lock_op(b, sid_fz(1), false);
			break;
		case 2:
			op(b, OP_OPEN_DOWNGRADE)->u.opopen_downgrade = (OPEN_DOWNGRADE4args){
			    .open_stateid = sid_fz(0),
			    .share_access = OPEN4_SHARE_ACCESS_READ,
			};
			break;
		case 3: {
			stateid4 *v = xdr_arena_alloc(b->a, 3 * sizeof(*v));
			v[0] = sid_fz(0);
			v[1] = sid_fz(1);
			v[2] = sid_anon(b);
			TEST_STATEID4args *ts = &op(b, OP_TEST_STATEID)->u.optest_stateid;
			ts->ts_stateids.len = 3;
			ts->ts_stateids.val = v;
			break;
		}
		default:
			op(b, OP_FREE_STATEID)->u.opfree_stateid.fsa_stateid = sid_fz(pick(b, 2));
			break;
		}
		op(b, OP_WRITE)->u.opwrite =
		    (WRITE4args){.stateid = sid_fz(0), .data = xdr_opaque_of("xy", 2)};
		op(b, OP_CLOSE)->u.opclose.open_stateid = sid_fz(0);
		break;
	case 16: /* OPEN without CLOSE, then state ops on the current fh */
		putfh(b, FX_D);
		open_op(b, pick(b, 2), pick(b, 2) ? "f" : "new");
		op(b, OP_GETFH);
		if (pick(b, 4) == 0) /* BAD_STATEID: no delegation was granted */
			op(b, OP_DELEGRETURN)->u.opdelegreturn.deleg_stateid = sid_cur();
		op(b, OP_RECLAIM_COMPLETE)->u.opreclaim_complete.rca_one_fs = pick(b, 2);
		break;
	case 17: /* pNFS (RFC 8881 §18.40-18.44, RFC 7862 §15.6-15.7): no data server is up */
		putfh(b, pick(b, 2) ? FX_DF : FX_F);
		open_op(b, false, NULL);
		switch (pick(b, 4)) {
		case 0: {
			LAYOUTGET4args *g = &op(b, OP_LAYOUTGET)->u.oplayoutget;
			g->loga_layout_type =
			    pick(b, 4) ? LAYOUT4_FLEX_FILES : LAYOUT4_NFSV4_1_FILES;
			g->loga_iomode = pick(b, 2) ? LAYOUTIOMODE4_RW : LAYOUTIOMODE4_READ;
			g->loga_offset = pick(b, 2) * 4096;
			g->loga_length = ~0ull;
			g->loga_minlength = pick(b, 2) * 4096;
			g->loga_stateid = sid_cur();
			g->loga_maxcount = pick(b, 2) ? 4096 : 64;
			break;
		}
		case 1: {
			GETDEVICELIST4args *l = &op(b, OP_GETDEVICELIST)->u.opgetdevicelist;
			l->gdla_layout_type = LAYOUT4_FLEX_FILES;
			l->gdla_maxdevices = 16;
			GETDEVICEINFO4args *d = &op(b, OP_GETDEVICEINFO)->u.opgetdeviceinfo;
			memcpy(d->gdia_device_id, "\0\0\0\1abcdefghbRd\1", NFS4_DEVICEID4_SIZE);
			d->gdia_layout_type = LAYOUT4_FLEX_FILES;
			d->gdia_maxcount = 4096;
			d->gdia_notify_types = bits(b, 6, 0, 0);
			break;
		}
		case 2: {
			LAYOUTCOMMIT4args *lc = &op(b, OP_LAYOUTCOMMIT)->u.oplayoutcommit;
			lc->loca_length = ~0ull;
			lc->loca_stateid = sid_fz(pick(b, 4));
			lc->loca_last_write_offset.no_newoffset = true;
			lc->loca_last_write_offset.u.no_offset = 8191;
			lc->loca_layoutupdate.lou_type = LAYOUT4_FLEX_FILES;
			LAYOUTSTATS4args *ls = &op(b, OP_LAYOUTSTATS)->u.oplayoutstats;
			ls->lsa_length = ~0ull;
			ls->lsa_stateid = sid_fz(pick(b, 4));
			ls->lsa_layoutupdate.lou_type = LAYOUT4_FLEX_FILES;
			device_error4 *de = xdr_arena_alloc(b->a, sizeof(*de));
			memset(de, 0, sizeof(*de));
			de->de_status = NFS4ERR_NXIO;
			de->de_opnum = OP_WRITE;
			LAYOUTERROR4args *le = &op(b, OP_LAYOUTERROR)->u.oplayouterror;
			le->lea_length = ~0ull;
			le->lea_stateid = sid_fz(pick(b, 4));
			le->lea_errors.len = 1;
			le->lea_errors.val = de;
			break;
		}
		default: {
			LAYOUTRETURN4args *r = &op(b, OP_LAYOUTRETURN)->u.oplayoutreturn;
			r->lora_layout_type = LAYOUT4_FLEX_FILES;
			r->lora_iomode = LAYOUTIOMODE4_ANY;
			r->lora_layoutreturn.lr_returntype = 1 + pick(b, 3); /* FILE, FSID, ALL */
			r->lora_layoutreturn.u.lr_layout.lrf_length = ~0ull;
			r->lora_layoutreturn.u.lr_layout.lrf_stateid = sid_fz(pick(b, 4));
			break;
		}
		}
		break;
	default: /* OPEN by handle (CLAIM_FH) */
		putfh(b, pick(b, FX_N));
		open_op(b, false, NULL);
		op(b, OP_GETATTR)->u.opgetattr.attr_request = all_bits(b);
		break;
	}
}

#define NTEMPLATES 19

/* NFSv4.0's client ID and seqid ops leading record r of a 4.0 input. */
static void v40_ops(struct sb *b, unsigned r)
{
	switch (r) {
	case 0: {
		SETCLIENTID4args *sc = &op(b, OP_SETCLIENTID)->u.opsetclientid;
		sc->client.id = xdr_opaque_of("fz-v40", 6);
		sc->callback.cb_program = 0x40000000;
		sc->callback.cb_location.na_r_netid = xdr_string_of(pick(b, 2) ? "tcp" : "tcp6");
		sc->callback.cb_location.na_r_addr =
		    xdr_string_of(pick(b, 2) ? "127.0.0.1.8.1" : "::1.8.1");
		sc->callback_ident = 7;
		break;
	}
	case 1:
		op(b, OP_SETCLIENTID_CONFIRM);
		break;
	case 2: {
		OPEN_CONFIRM4args *oc = &op(b, OP_OPEN_CONFIRM)->u.opopen_confirm;
		oc->open_stateid.other[0] = 'F';
		oc->open_stateid.other[1] = 'Z';
		oc->seqid = 1;
		break;
	}
	default:
		op(b, pick(b, 2) ? OP_RENEW : OP_RELEASE_LOCKOWNER);
		break;
	}
}

/* The session ops, sometimes (nfsd/nfs41*.c's own fuzz target covers them). */
static void session_ops(struct sb *b, unsigned t)
{
	if (t == 0) {
		EXCHANGE_ID4args *e = &op(b, OP_EXCHANGE_ID)->u.opexchange_id;
		e->eia_clientowner.co_ownerid = xdr_opaque_of("fz-other", 8);
		if (pick(b, 4) == 0)
			memcpy(e->eia_clientowner.co_verifier, "12345678", 8);
		return;
	}
	CREATE_SESSION4args *c = &op(b, OP_CREATE_SESSION)->u.opcreate_session;
	c->csa_sequence = 1;
	c->csa_fore_chan_attrs = (channel_attrs4){.ca_maxrequestsize = 65536,
						  .ca_maxresponsesize = 65536,
						  .ca_maxresponsesize_cached = 1024,
						  .ca_maxoperations = 16,
						  .ca_maxrequests = 2};
	c->csa_back_chan_attrs = (channel_attrs4){.ca_maxrequestsize = 4096,
						  .ca_maxresponsesize = 4096,
						  .ca_maxoperations = 2,
						  .ca_maxrequests = 1};
	c->csa_sec_parms.len = 1;
	c->csa_sec_parms.val = &sec_none;
}

size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap)
{
	struct xdr_arena a;
	struct sb b = {.a = &a};
	size_t total = 0;
	uint64_t h = seed * 0x9e3779b97f4a7c15ull + 1;
	if (!cap)
		return 0;
	buf[total++] = (uint8_t)(seed % 3 == 0 ? h >> 56 : 0); /* session options */
	unsigned nrec = 1 + (unsigned)(h % 4);
	bool foreign = (h >> 8) % 16 == 0;  /* another client's session */
	bool stateful = (h >> 12) % 4 == 0; /* OPEN, then its stateid in later records */
	bool v40 = (h >> 24) % 4 == 0;	    /* NFSv4.0: SETCLIENTID first, no SEQUENCE */
	static const unsigned conversation[2][4] = {{16, 15, 15, 4}, {17, 17, 17, 15}};
	const unsigned *conv = conversation[(h >> 14) & 1];
	if (foreign && nrec < 3)
		nrec = 3;
	for (unsigned r = 0; r < nrec; r++) {
		xdr_arena_init(&a, NULL, 0, 1u << 20);
		b.n = 0;
		b.k = h ^ (r * 0x2545f4914f6cdd1dull);
		b.k ^= b.k >> 29;
		unsigned t = stateful ? conv[r] : (unsigned)((seed + r * 7) % NTEMPLATES);
		/* a third of the records as another user (1000, AUTH_NONE, 65534) */
		uint8_t flags =
		    (h >> (16 + 2 * r)) % 3 == 0 ? (uint8_t)(1 + (h >> (40 + r)) % 3) : 0;
		if (v40) {
			/* the client ID first; OPEN_CONFIRM and the rest after
			 * the template's filehandle and OPEN */
			if (r <= 1)
				v40_ops(&b, r);
			if (r)
				compound_ops(&b, t);
			if (r > 1)
				v40_ops(&b, r);
		} else if (foreign && r < 2) {
			session_ops(&b, r);
			flags = 0;
		} else {
			SEQUENCE4args *s = &op(&b, OP_SEQUENCE)->u.opsequence;
			memset(s->sa_sessionid, foreign ? 1 : 0, NFS4_SESSIONID_SIZE);
			s->sa_sequenceid = foreign ? r - 1 : r + 1;
			s->sa_slotid = 0;
			s->sa_highest_slotid = 1;
			s->sa_cachethis = r & 1;
			compound_ops(&b, t);
		}
		/* now and then NFSv4.1: no 4.2 operations or attributes */
		COMPOUND4args args = {.tag = xdr_string_of("seed"),
				      .minorversion = v40		   ? 0
						      : (h >> 20) % 5 == 0 ? 1
									   : 2,
				      .argarray = {b.n, b.ops}};
		if (total + REC_HDR > cap) {
			xdr_arena_release(&a);
			break;
		}
		size_t len =
		    fuzz_compound_encode(buf + total + REC_HDR, cap - total - REC_HDR, &args);
		xdr_arena_release(&a);
		if (!len || len > 0xffff)
			break;
		buf[total] = (uint8_t)(len >> 8);
		buf[total + 1] = (uint8_t)len;
		buf[total + 2] = flags;
		buf[total + 3] = 0;
		total += REC_HDR + len;
	}
	return total;
}

/*
 * Start: a scratch directory, a key, exports; the MDS; then the scratch
 * directory goes (the store is open; exports_reload() writes the file back
 * when it needs it), so nothing is left behind however the process ends.
 */
static void mds_stop_at_exit(void)
{
	if (verbose)
		fprintf(stderr, "fuzz-mds-compound: %llu inputs, fixture made %llu times\n",
			n_inputs, n_remakes);
	braid_mds_stop(mds);
	mds = NULL;
}

static void mds_start(void)
{
	struct fuzz_mds fm;
	fuzz_mds_start(&fm, "fuzz-mds-compound", exports_text, "lease_time = 10s\n");
	mds = fm.mds;
	memcpy(scratch, fm.scratch, sizeof(scratch));
	memcpy(exports_path, fm.exports, sizeof(exports_path));
	atexit(mds_stop_at_exit);
	for (unsigned i = 0; i < sizeof(groups_many) / sizeof(groups_many[0]); i++)
		groups_many[i] = 2000 + i;

	struct mds_exports *x = mds_exports_get(mds);
	for (unsigned i = 0; i < x->n; i++)
		if (!strcmp(x->v[i].e->path, "/ro"))
			ro_export = x->v[i].id;
	mds_exports_put(x);
	fixture_make();
}

/* Start the MDS; fill an empty $BRAID_FUZZ_SEED_DIR with seeds. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("BRAID_FUZZ_VERBOSE") != NULL;
	mds_start();
	fuzz_seed_dir_fill("mds", 4 * NTEMPLATES * 4);
	return 0;
}
