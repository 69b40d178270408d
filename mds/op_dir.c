/* SPDX-License-Identifier: MIT */
/*
 * The namespace operations of braid-mds (RFC 8881 chapter 18): PUTROOTFH,
 * PUTPUBFH, PUTFH, LOOKUP, LOOKUPP, CREATE, REMOVE, RENAME, LINK, READLINK,
 * READDIR, SECINFO and SECINFO_NO_NAME.
 *
 * Exports (mds_impl.h): a filehandle carries the export it was reached
 * through.  LOOKUP inherits the parent's export unless the child is an
 * export root; LOOKUPP out of an export root recomputes it.  Where an
 * export does not admit the client but the directory lies on the way to
 * one that may, the client sees it as the pseudo filesystem (export 0),
 * which is read-only and shows only the directories leading to exports
 * (RFC 8881 §7.3).
 *
 * Security negotiation (RFC 8881 §2.6.3.1.1): the put-filehandle ops
 * report NFS4ERR_WRONGSEC only when the next op does not judge security
 * itself; LOOKUP, LOOKUPP and OPEN judge their target's export, SECINFO and
 * SECINFO_NO_NAME never fail with it and consume the current filehandle.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "mds/attr.h"
#include "mds/data.h"
#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "mds/ns.h"
#include "mds/state.h"

/* The krb5 mechanism, 1.2.840.113554.1.2.2, as the OID's DER contents
 * (what sec_oid4 carries, RFC 8881 §18.29.2). */
static const uint8_t krb5_oid[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02};

#define ANON_ID 65534u

/*
 * Names (RFC 8881 §14.2, §18.13.3): empty or not UTF-8 is NFS4ERR_INVAL,
 * a '/' or NUL NFS4ERR_BADCHAR, "." and ".." NFS4ERR_BADNAME.
 */
static bool utf8_valid(const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len;) {
		uint8_t b = p[i];
		uint32_t n, cp;
		if (b < 0x80) {
			i++;
			continue;
		} else if (b >= 0xc2 && b <= 0xdf) {
			n = 1, cp = b & 0x1f;
		} else if (b >= 0xe0 && b <= 0xef) {
			n = 2, cp = b & 0x0f;
		} else if (b >= 0xf0 && b <= 0xf4) {
			n = 3, cp = b & 0x07;
		} else {
			return false;
		}
		if (len - i <= n)
			return false;
		for (uint32_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		/* overlong forms, surrogates, beyond U+10FFFF */
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

static nfsstat4 name_check(const component4 *n)
{
	if (n->len == 0)
		return NFS4ERR_INVAL;
	if (n->len > MDS_NAME_MAX)
		return NFS4ERR_NAMETOOLONG;
	if (!utf8_valid(n->val, n->len))
		return NFS4ERR_INVAL;
	if (memchr(n->val, '/', n->len) || memchr(n->val, 0, n->len))
		return NFS4ERR_BADCHAR;
	if ((n->len == 1 && n->val[0] == '.') ||
	    (n->len == 2 && n->val[0] == '.' && n->val[1] == '.'))
		return NFS4ERR_BADNAME;
	return NFS4_OK;
}

static change_info4 cinfo4(const struct mds_cinfo *ci)
{
	/* every change is one store transaction: before/after are atomic */
	change_info4 r = {.atomic = true, .before = ci->before, .after = ci->after};
	return r;
}

/*
 * Filehandles and exports.
 */

/* The current filehandle as mds_cfh() checks it, except that a flavor its
 * export refuses is let through, with *wrongsec (if given) set and the anonymous,
 * read-only credential: LOOKUP, LOOKUPP and SECINFO judge the security of
 * their target, not of the directory they start from. */
static nfsstat4 cfh_anysec(struct nfs41_compound *c, struct mds_fh *fh, struct mds_attr *a,
			   struct mds_cred *cr, bool *wrongsec)
{
	struct braid_mds *mds = mds_of(c);
	if (wrongsec)
		*wrongsec = false;
	nfsstat4 st = mds_cfh(c, fh, a, cr);
	if (st != NFS4ERR_WRONGSEC)
		return st;
	if (wrongsec)
		*wrongsec = true;
	if (mds_fh_parse(mds, c->fh, c->fhlen, fh))
		return NFS4ERR_BADHANDLE;
	int rc = mds_inode_getattr(mds->store, fh->ino, a);
	if (rc)
		return mds_nfs4_status(rc);
	if (a->generation != fh->gen)
		return NFS4ERR_STALE;
	memset(cr, 0, sizeof(*cr));
	cr->uid = cr->gid = ANON_ID;
	cr->flavor = nfsd_cred_pseudoflavor(&c->req->cred);
	cr->export_id = fh->export_id;
	return NFS4_OK;
}

/* The export a child of a directory reached through parent_id belongs to. */
static uint32_t child_export(const struct mds_exports *x, uint32_t parent_id, uint64_t child)
{
	const struct mds_export *e = mds_export_by_root(x, child);
	return e ? e->id : parent_id;
}

static const struct sockaddr *req_peer(const struct nfs41_compound *c, struct sockaddr_in *any)
{
	memset(any, 0, sizeof(*any));
	any->sin_family = AF_INET;
	return c->req->conn ? (const struct sockaddr *)nfsd_req_peer(c->req)
			    : (const struct sockaddr *)any;
}

/*
 * Is directory 'dir' the root of, or on the way to, an export that admits
 * this client?  The pseudo fs shows a client only those (RFC 8881 §7.3,
 * as nfs-utils builds knfsd's pseudo root per client).
 */
static bool on_path(struct nfs41_compound *c, const struct mds_exports *x, uint64_t dir)
{
	struct braid_mds *mds = mds_of(c);
	uint64_t root = mds_store_root(mds->store);
	struct sockaddr_in any;
	const struct sockaddr *peer = req_peer(c, &any);
	for (unsigned i = 0; i < x->n; i++) {
		if (!mds_exports_match(x, x->v[i].e->path, peer))
			continue;
		uint64_t ino = x->v[i].root_ino;
		for (unsigned depth = 0; depth < 4096; depth++) {
			if (ino == dir)
				return true;
			struct mds_attr a;
			if (ino == root || mds_inode_getattr(mds->store, ino, &a))
				break;
			ino = a.parent;
		}
	}
	return false;
}

/*
 * The export id a client reaches directory ino through: id, or the pseudo
 * filesystem when that export does not admit the client but ino leads to
 * one that does (the client sees the pseudo fs there).
 */
static uint32_t export_reach(struct nfs41_compound *c, const struct mds_exports *x, uint32_t id,
			     uint64_t ino)
{
	struct mds_cred cr;
	if (id == 0 || mds_req_cred(c, id, &cr) != NFS4ERR_ACCESS)
		return id;
	return on_path(c, x, ino) ? 0 : id;
}

/* Is the next op one that judges security itself (RFC 8881 §2.6.3.1.1.1-6)? */
static bool wrongsec_deferred(const struct nfs41_compound *c)
{
	switch (nfs41_compound_next_op(c)) {
	case -1: /* §2.6.3.1.1.6: nothing uses the filehandle */
	case OP_ILLEGAL:
	case OP_PUTFH: /* §2.6.3.1.1.2 */
	case OP_PUTPUBFH:
	case OP_PUTROOTFH:
	case OP_RESTOREFH:
	case OP_SAVEFH: /* §2.6.3.1.1.1 */
	case OP_LOOKUP: /* §2.6.3.1.1.3 */
	case OP_OPEN:
	case OP_LOOKUPP: /* §2.6.3.1.1.4 */
	case OP_SECINFO: /* §2.6.3.1.1.5 */
	case OP_SECINFO_NO_NAME:
		return true;
	default:
		return false;
	}
}

/* After a put-filehandle op set the current filehandle. */
static nfsstat4 putfh_check(struct nfs41_compound *c)
{
	nfsstat4 st = mds_cfh(c, NULL, NULL, NULL);
	if (st == NFS4ERR_WRONGSEC && wrongsec_deferred(c))
		return NFS4_OK;
	return st;
}

/* RFC 8881 §18.19 */
static nfsstat4 op_putfh(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	const nfs_fh4 *fh = &a->u.opputfh.object;
	struct mds_fh f;
	if (mds_fh_parse(mds_of(c), fh->val, fh->len, &f))
		return NFS4ERR_BADHANDLE;
	nfs41_compound_set_fh(c, fh->val, fh->len);
	return putfh_check(c);
}

/* RFC 8881 §18.21; PUTPUBFH (§18.20) is the same: the public fh is the root. */
static nfsstat4 op_putrootfh(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	uint64_t root = mds_store_root(mds->store);
	struct mds_attr attr;
	int rc = mds_inode_getattr(mds->store, root, &attr);
	if (rc)
		return rc == -ESTALE ? NFS4ERR_SERVERFAULT : mds_nfs4_status(rc);
	struct mds_exports *x = mds_exports_get(mds);
	uint32_t id = export_reach(c, x, mds_export_of_dir(mds, x, root), root);
	mds_exports_put(x);
	mds_set_cfh(c, root, attr.generation, id);
	return putfh_check(c);
}

/*
 * Directories.
 */

static nfsstat4 dir_type(const struct mds_attr *a)
{
	return a->type == MDS_DIR ? NFS4_OK : NFS4ERR_NOTDIR;
}

nfsstat4 mds_dir_may_change(const struct mds_cred *cr, const struct mds_attr *dir)
{
	if (cr->pseudo || !cr->rw)
		return NFS4ERR_ROFS;
	uint32_t want = ACCESS4_MODIFY | ACCESS4_LOOKUP;
	return mds_access(cr, dir, want) == want ? NFS4_OK : NFS4ERR_ACCESS;
}

nfsstat4 mds_dir_may_search(const struct mds_cred *cr, const struct mds_attr *dir)
{
	if (cr->pseudo || mds_access(cr, dir, ACCESS4_LOOKUP))
		return NFS4_OK;
	return NFS4ERR_ACCESS;
}

/* The sticky bit: only root, the directory's owner or the entry's owner may unlink it. */
static bool sticky_denies(const struct mds_cred *cr, const struct mds_attr *dir,
			  const struct mds_attr *victim)
{
	return (dir->mode & 01000) && cr->uid != 0 && cr->uid != dir->uid && cr->uid != victim->uid;
}

/* RFC 8881 §18.13 */
static nfsstat4 op_lookup(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	const component4 *name = &a->u.oplookup.objname;
	struct mds_fh fh;
	struct mds_attr dir, attr;
	struct mds_cred cr;
	bool wrongsec;
	uint64_t ino;
	nfsstat4 st = cfh_anysec(c, &fh, &dir, &cr, &wrongsec);
	if (st)
		return st;
	if (dir.type == MDS_LNK)
		return NFS4ERR_SYMLINK;
	if ((st = dir_type(&dir)) || (st = name_check(name)))
		return st;
	if ((st = mds_dir_may_search(&cr, &dir)))
		return wrongsec ? NFS4ERR_WRONGSEC : st; /* the right flavor may pass */
	int rc =
	    mds_dir_lookup(mds->store, fh.ino, (const char *)name->val, name->len, &ino, &attr);
	if (rc)
		return mds_nfs4_status(rc);
	struct mds_exports *x = mds_exports_get(mds);
	uint32_t id = child_export(x, fh.export_id, ino);
	if (fh.export_id == 0 && id == 0 && (attr.type != MDS_DIR || !on_path(c, x, ino)))
		st = NFS4ERR_NOENT; /* the pseudo fs only leads to exports */
	else if (id != fh.export_id && attr.type == MDS_DIR)
		id = export_reach(c, x, id, ino);
	mds_exports_put(x);
	if (st)
		return st;
	if (id && (st = mds_req_cred(c, id, &cr)))
		return st; /* the target's security: §2.6.3.1.1.3 */
	mds_set_cfh(c, ino, attr.generation, id);
	return NFS4_OK;
}

/* RFC 8881 §18.14 */
static nfsstat4 op_lookupp(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	struct mds_fh fh;
	struct mds_attr dir, pattr;
	struct mds_cred cr;
	bool wrongsec;
	nfsstat4 st = cfh_anysec(c, &fh, &dir, &cr, &wrongsec);
	if (st || (st = dir_type(&dir)))
		return st;
	if (fh.ino == mds_store_root(mds->store))
		return NFS4ERR_NOENT;
	if ((st = mds_dir_may_search(&cr, &dir)))
		return wrongsec ? NFS4ERR_WRONGSEC : st;
	int rc = mds_inode_getattr(mds->store, dir.parent, &pattr);
	if (rc)
		return mds_nfs4_status(rc);
	struct mds_exports *x = mds_exports_get(mds);
	uint32_t id = fh.export_id;
	const struct mds_export *e = mds_export_by_root(x, fh.ino);
	if (e && e->id == id) /* leaving an export through its root */
		id = export_reach(c, x, mds_export_of_dir(mds, x, dir.parent), dir.parent);
	mds_exports_put(x);
	if (id && (st = mds_req_cred(c, id, &cr)))
		return st; /* the parent's security: §2.6.3.1.1.4 */
	mds_set_cfh(c, dir.parent, pattr.generation, id);
	return NFS4_OK;
}

/*
 * CREATE (RFC 8881 §18.4): every type but regular files, which OPEN makes.
 */
bool mds_cred_in_group(const struct mds_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return true;
	for (uint32_t i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == gid)
			return true;
	return false;
}

/* What createattrs may set beyond mode and owner: the times, after creation. */
#define CREATE_LATER_MASK (MDS_SET_ATIME | MDS_SET_ATIME_NOW | MDS_SET_MTIME | MDS_SET_MTIME_NOW)

static nfsstat4 op_create(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	const CREATE4args *ca = &a->u.opcreate;
	CREATE4resok *res = &r->u.opcreate.u.resok4;
	struct mds_fh fh;
	struct mds_attr dir;
	struct mds_cred cr;
	nfsstat4 st = mds_cfh(c, &fh, &dir, &cr);
	if (st || (st = dir_type(&dir)))
		return st;
	struct mds_create_args ar = {
	    .dir = fh.ino,
	    .name = (const char *)ca->objname.val,
	    .name_len = ca->objname.len,
	    .how = MDS_CREATE_GUARDED,
	};
	switch (ca->objtype.type) {
	case NF4DIR:
		ar.type = MDS_DIR;
		ar.mode = 0755;
		break;
	case NF4LNK:
		ar.type = MDS_LNK;
		ar.mode = 0777;
		ar.symlink = (const char *)ca->objtype.u.linkdata.val;
		ar.symlink_len = ca->objtype.u.linkdata.len;
		break;
	case NF4BLK:
	case NF4CHR:
		ar.type = ca->objtype.type == NF4BLK ? MDS_BLK : MDS_CHR;
		ar.mode = 0644;
		ar.rdev_major = ca->objtype.u.devdata.specdata1;
		ar.rdev_minor = ca->objtype.u.devdata.specdata2;
		break;
	case NF4SOCK:
		ar.type = MDS_SOCK;
		ar.mode = 0644;
		break;
	case NF4FIFO:
		ar.type = MDS_FIFO;
		ar.mode = 0644;
		break;
	default: /* NF4REG is OPEN's; named attributes are not supported */
		return NFS4ERR_BADTYPE;
	}
	if ((st = name_check(&ca->objname)))
		return st;
	struct mds_setattr_args sa = {0};
	bitmap4 set = {0};
	if ((st = mds_attr_decode_set(c, &ca->createattrs, &sa, &set)))
		return st;
	struct mds_create_res cres;
	if ((st = mds_ns_make(mds, &cr, &dir, &ar, &sa, &cres)))
		return st;
	res->cinfo = cinfo4(&cres.cinfo);
	res->attrset = set;
	mds_set_cfh(c, cres.attr.ino, cres.attr.generation, fh.export_id);
	return NFS4_OK;
}

nfsstat4 mds_ns_make(struct braid_mds *mds, const struct mds_cred *cr, const struct mds_attr *dir,
		     struct mds_create_args *ar, const struct mds_setattr_args *sa,
		     struct mds_create_res *res)
{
	nfsstat4 st;
	if ((st = mds_dir_may_change(cr, dir)))
		return st;
	if (ar->type == MDS_LNK) {
		if (ar->symlink_len == 0)
			return NFS4ERR_INVAL;
		if (ar->symlink_len > MDS_SYMLINK_MAX)
			return NFS4ERR_NAMETOOLONG;
	}
	if (sa->mask & ~(MDS_SET_MODE | MDS_SET_UID | MDS_SET_GID | CREATE_LATER_MASK))
		return NFS4ERR_INVAL; /* size and the like mean nothing here */
	ar->dir = dir->ino;
	ar->how = MDS_CREATE_GUARDED;
	ar->uid = cr->uid;
	ar->gid = (dir->mode & 02000) ? dir->gid : cr->gid; /* setgid directories pass on their group */
	if (sa->mask & MDS_SET_UID) {
		if (cr->uid != 0 && sa->uid != cr->uid)
			return NFS4ERR_PERM;
		ar->uid = sa->uid;
	}
	if (sa->mask & MDS_SET_GID) {
		if (cr->uid != 0 && !mds_cred_in_group(cr, sa->gid))
			return NFS4ERR_PERM;
		ar->gid = sa->gid;
	}
	if (sa->mask & MDS_SET_MODE)
		ar->mode = sa->mode & 07777;
	if (ar->type == MDS_DIR && (dir->mode & 02000))
		ar->mode |= 02000;
	else if ((ar->mode & 02000) && cr->uid != 0 && !mds_cred_in_group(cr, ar->gid))
		ar->mode &= ~02000u; /* as chmod(2) */

	int rc = mds_dir_create(mds->store, ar, res);
	if (rc)
		return mds_nfs4_status(rc);
	if (sa->mask & CREATE_LATER_MASK) {
		struct mds_setattr_args ta = *sa;
		struct mds_setattr_res tr;
		ta.ino = res->attr.ino;
		ta.mask &= CREATE_LATER_MASK;
		if ((rc = mds_inode_setattr(mds->store, &ta, &tr)))
			return mds_nfs4_status(rc);
		res->attr = tr.attr;
	}
	return NFS4_OK;
}

/* RFC 8881 §18.25 */
static nfsstat4 op_remove(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	const component4 *name = &a->u.opremove.target;
	struct mds_fh fh;
	struct mds_attr dir;
	struct mds_cred cr;
	nfsstat4 st = mds_cfh(c, &fh, &dir, &cr);
	if (st || (st = dir_type(&dir)) || (st = name_check(name)) ||
	    (st = mds_dir_may_change(&cr, &dir)))
		return st;
	if (mds_state_in_grace(mds))
		return NFS4ERR_GRACE; /* as knfsd: a reclaim may still need the name */
	struct mds_remove_res rr;
	if ((st = mds_ns_remove(mds, &cr, &dir, (const char *)name->val, name->len, 0, &rr)))
		return st;
	r->u.opremove.u.resok4.cinfo = cinfo4(&rr.cinfo);
	return NFS4_OK;
}

nfsstat4 mds_ns_remove(struct braid_mds *mds, const struct mds_cred *cr, const struct mds_attr *dir,
		       const char *name, size_t len, unsigned flags, struct mds_remove_res *rr)
{
	uint64_t ino;
	struct mds_attr victim;
	int rc = mds_dir_lookup(mds->store, dir->ino, name, len, &ino, &victim);
	if (rc)
		return mds_nfs4_status(rc);
	if (sticky_denies(cr, dir, &victim))
		return NFS4ERR_ACCESS;
	struct mds_exports *x = mds_exports_get(mds);
	bool export_root = mds_export_by_root(x, ino) != NULL;
	mds_exports_put(x);
	if (export_root)
		return NFS4ERR_FILE_OPEN; /* mounted on: knfsd's answer for EBUSY */
	/* §10.4.4: other clients' delegations of the file are recalled first */
	nfsstat4 st;
	if (victim.type == MDS_REG &&
	    (st = mds_deleg_break_op(mds, ino, cr->clientid, MDS_DELEG_REMOVE)))
		return st;

	struct mds_remove_args ra = {
	    .dir = dir->ino,
	    .name = name,
	    .name_len = len,
	    .flags = flags,
	};
	if ((rc = mds_dir_remove(mds->store, &ra, rr)))
		return mds_nfs4_status(rc);
	if (rr->victim.orphaned)
		mds_data_release_later(mds, rr->victim.ino);
	return NFS4_OK;
}

/* RFC 8881 §18.26: saved fh = source directory, current fh = target directory. */
static nfsstat4 op_rename(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	const RENAME4args *ra = &a->u.oprename;
	struct mds_fh sfh, tfh;
	struct mds_attr sdir, tdir;
	struct mds_cred scr, tcr;
	nfsstat4 st = mds_sfh(c, &sfh, &sdir, &scr);
	if (st || (st = mds_cfh(c, &tfh, &tdir, &tcr)) || (st = dir_type(&sdir)) ||
	    (st = dir_type(&tdir)) || (st = name_check(&ra->oldname)) ||
	    (st = name_check(&ra->newname)))
		return st;
	if (sfh.export_id != tfh.export_id)
		return NFS4ERR_XDEV;
	if ((st = mds_dir_may_change(&scr, &sdir)) || (st = mds_dir_may_change(&tcr, &tdir)))
		return st;
	if (mds_state_in_grace(mds))
		return NFS4ERR_GRACE;
	struct mds_rename_res rr;
	st = mds_ns_rename(mds, &scr, &sdir, (const char *)ra->oldname.val, ra->oldname.len, &tcr,
			   &tdir, (const char *)ra->newname.val, ra->newname.len, &rr);
	if (st == NFS4ERR_ISDIR || st == NFS4ERR_NOTDIR)
		return NFS4ERR_EXIST; /* file over directory or back: §18.26.3 */
	if (st)
		return st;
	r->u.oprename.u.resok4.source_cinfo = cinfo4(&rr.src_cinfo);
	r->u.oprename.u.resok4.target_cinfo = cinfo4(&rr.dst_cinfo);
	return NFS4_OK;
}

nfsstat4 mds_ns_rename(struct braid_mds *mds, const struct mds_cred *scr,
		       const struct mds_attr *sdir, const char *sname, size_t slen,
		       const struct mds_cred *tcr, const struct mds_attr *tdir, const char *tname,
		       size_t tlen, struct mds_rename_res *rr)
{
	uint64_t sino, tino;
	struct mds_attr src, dst;
	int rc = mds_dir_lookup(mds->store, sdir->ino, sname, slen, &sino, &src);
	if (rc)
		return mds_nfs4_status(rc);
	rc = mds_dir_lookup(mds->store, tdir->ino, tname, tlen, &tino, &dst);
	bool target = rc == 0;
	if (rc && rc != -ENOENT)
		return mds_nfs4_status(rc);
	if (sticky_denies(scr, sdir, &src) ||
	    (target && tino != sino && sticky_denies(tcr, tdir, &dst)))
		return NFS4ERR_ACCESS;
	/* a directory moving to another parent has its ".." rewritten (rename(2)) */
	if (src.type == MDS_DIR && sdir->ino != tdir->ino && !mds_access(scr, &src, ACCESS4_MODIFY))
		return NFS4ERR_ACCESS;
	struct mds_exports *x = mds_exports_get(mds);
	bool mounted = mds_export_by_root(x, sino) || (target && mds_export_by_root(x, tino));
	mds_exports_put(x);
	if (mounted && !(target && tino == sino))
		return NFS4ERR_XDEV; /* an export root is another file system's */
	/* §10.4.4: the file renamed and the one it replaces; both recalls start */
	nfsstat4 st = NFS4_OK;
	if (src.type == MDS_REG)
		st = mds_deleg_break_op(mds, sino, scr->clientid, MDS_DELEG_RENAME);
	if (target && tino != sino && dst.type == MDS_REG &&
	    mds_deleg_break_op(mds, tino, scr->clientid, MDS_DELEG_RENAME))
		st = NFS4ERR_DELAY;
	if (st)
		return st;

	struct mds_rename_args ar = {
	    .src_dir = sdir->ino,
	    .src_name = sname,
	    .src_len = slen,
	    .dst_dir = tdir->ino,
	    .dst_name = tname,
	    .dst_len = tlen,
	};
	if ((rc = mds_dir_rename(mds->store, &ar, rr)))
		return mds_nfs4_status(rc);
	if (rr->replaced && rr->victim.orphaned)
		mds_data_release_later(mds, rr->victim.ino);
	return NFS4_OK;
}

/* RFC 8881 §18.9: saved fh = the object, current fh = the directory. */
static nfsstat4 op_link(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	const component4 *name = &a->u.oplink.newname;
	struct mds_fh sfh, dfh;
	struct mds_attr obj, dir;
	struct mds_cred cr;
	nfsstat4 st = mds_sfh(c, &sfh, &obj, NULL);
	if (st || (st = mds_cfh(c, &dfh, &dir, &cr)) || (st = dir_type(&dir)) ||
	    (st = name_check(name)))
		return st;
	struct mds_link_res lr;
	if ((st = mds_ns_link(mds, &cr, &sfh, &obj, &dfh, &dir, (const char *)name->val, name->len,
			      &lr)))
		return st;
	r->u.oplink.u.resok4.cinfo = cinfo4(&lr.cinfo);
	return NFS4_OK;
}

nfsstat4 mds_ns_link(struct braid_mds *mds, const struct mds_cred *cr, const struct mds_fh *ofh,
		     const struct mds_attr *obj, const struct mds_fh *dfh, const struct mds_attr *dir,
		     const char *name, size_t len, struct mds_link_res *lr)
{
	nfsstat4 st;
	if (ofh->export_id != dfh->export_id)
		return NFS4ERR_XDEV;
	if ((st = mds_dir_may_change(cr, dir)))
		return st;
	if (obj->type == MDS_DIR)
		return NFS4ERR_ISDIR;
	/* its link count, which delegations cache, changes (as knfsd) */
	if (obj->type == MDS_REG &&
	    (st = mds_deleg_break_op(mds, ofh->ino, cr->clientid, MDS_DELEG_LINK)))
		return st;
	struct mds_link_args la = {
	    .ino = ofh->ino,
	    .dir = dfh->ino,
	    .name = name,
	    .name_len = len,
	};
	int rc = mds_dir_link(mds->store, &la, lr);
	return rc ? mds_nfs4_status(rc) : NFS4_OK;
}

/* RFC 8881 §18.24 */
static nfsstat4 op_readlink(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	struct mds_fh fh;
	struct mds_attr attr;
	nfsstat4 st = mds_cfh(c, &fh, &attr, NULL);
	if (st)
		return st;
	if (attr.type != MDS_LNK)
		return NFS4ERR_WRONG_TYPE; /* NFSv4.0 said NFS4ERR_INVAL */
	char *buf = xdr_arena_alloc(c->arena, MDS_SYMLINK_MAX);
	if (!buf)
		return NFS4ERR_SERVERFAULT;
	size_t len;
	int rc = mds_inode_readlink(mds->store, fh.ino, buf, MDS_SYMLINK_MAX, &len);
	if (rc)
		return rc == -EINVAL ? NFS4ERR_WRONG_TYPE : mds_nfs4_status(rc);
	if (len > MDS_SYMLINK_MAX)
		return NFS4ERR_SERVERFAULT;
	r->u.opreadlink.u.resok4.link = xdr_opaque_of(buf, len);
	return NFS4_OK;
}

static uint32_t readlink_bound(const nfs_argop4 *a)
{
	return 4 + 4 + 4 + MDS_SYMLINK_MAX;
}

/*
 * READDIR (RFC 8881 §18.23).  maxcount bounds the encoded READDIR4resok
 * (verifier, entries, list end and eof); entries are added while the next
 * one fits.  dircount, the XDR size of cookies and names, is a hint: it
 * ends a reply once at least one entry is in it (0: no hint).  The store
 * is read in batches, each on its own snapshot; cookies are stable, so a
 * batch resumes exactly after the previous one.
 */
#define RD_BATCH 64
/* Replies are capped here (the RFC lets a server return less): encoding
 * takes the request's arena and iovecs, and entries cost about twice
 * their wire size in memory before they are encoded. */
#define RD_MAX_REPLY (256u << 10)
/* Encoded opaques this long are referenced, each taking an iovec: allow few. */
#define RD_MAX_BIG  8
#define RD_OVERHEAD (NFS4_VERIFIER_SIZE + 4 + 4) /* verifier, list end, eof */

struct rd_batch {
	struct mds_rd_ent *v;
	unsigned n, max;
};

/* Runs inside the store's read transaction: copies, nothing more. */
static int rd_collect(void *arg, const struct mds_dirent *e)
{
	struct rd_batch *b = arg;
	if (b->n == b->max)
		return MDS_READDIR_FULL;
	if (!e->attr || e->name_len == 0 || e->name_len > MDS_NAME_MAX)
		return -EIO;
	struct mds_rd_ent *d = &b->v[b->n++];
	d->cookie = e->cookie;
	d->attr = *e->attr;
	d->name_len = (uint32_t)e->name_len;
	memcpy(d->name, e->name, e->name_len);
	return 0;
}

static uint32_t xdr_padded(uint32_t n)
{
	return (n + 3) & ~3u;
}

static uint32_t readdir_cap(uint32_t maxcount)
{
	return maxcount < RD_MAX_REPLY ? maxcount : RD_MAX_REPLY;
}

static uint32_t readdir_bound(const nfs_argop4 *a)
{
	return 4 + 4 + readdir_cap(a->u.opreaddir.maxcount);
}

struct rd_state {
	struct nfs41_compound *c;
	const READDIR4args *args;
	const struct mds_exports *x;
	uint32_t dir_export;
	bool pseudo;
	uint32_t budget;   /* bytes left for entries */
	uint32_t dirbytes; /* cookies and names so far, against dircount */
	unsigned n, big;   /* entries taken; those with attributes >= XDR_REF_MIN bytes */
	entry4 *head, **tail;
};

/* Adds one entry to the reply, or skips it (the pseudo fs), or sets *full
 * when it does not fit; an error only when not even the first one can be. */
static nfsstat4 rd_add(void *arg, const struct mds_rd_ent *d, bool *full)
{
	struct rd_state *s = arg;
	struct nfs41_compound *c = s->c;
	struct braid_mds *mds = mds_of(c);
	*full = false;
	uint32_t id = child_export(s->x, s->dir_export, d->attr.ino);
	if (s->pseudo && (d->attr.type != MDS_DIR || !on_path(c, s->x, d->attr.ino)))
		return NFS4_OK; /* the pseudo fs lists only the way to exports */
	if (id != s->dir_export && d->attr.type == MDS_DIR)
		id = export_reach(c, s->x, id, d->attr.ino);

	/* keep room for encoding the reply itself */
	struct xdr_arena *ar = c->arena;
	if (s->n && ar->limit - ar->total < 2 * (size_t)RD_MAX_REPLY) {
		*full = true;
		return NFS4_OK;
	}
	uint8_t *fhb = xdr_arena_alloc(ar, MDS_FH_SIZE);
	entry4 *e = xdr_arena_alloc(ar, sizeof(*e));
	uint8_t *name = xdr_arena_alloc(ar, d->name_len);
	if (!fhb || !e || !name)
		goto nomem;
	struct mds_fh f = {.ino = d->attr.ino, .gen = d->attr.generation, .export_id = id};
	mds_fh_make(mds, &f, fhb);
	nfsstat4 st =
	    mds_attr_encode_fh(c, &d->attr, fhb, MDS_FH_SIZE, &s->args->attr_request, &e->attrs);
	if (st == NFS4ERR_RESOURCE || st == NFS4ERR_SERVERFAULT)
		goto nomem;
	if (st && (st = mds_attr_encode_error(c, st, &s->args->attr_request, &e->attrs)))
		return st;
	uint32_t dsize = 8 + 4 + xdr_padded(d->name_len);
	uint64_t size = 4 + (uint64_t)dsize + 4 + 4 * (uint64_t)e->attrs.attrmask.len + 4 +
			xdr_padded(e->attrs.attr_vals.len);
	bool big = e->attrs.attr_vals.len >= XDR_REF_MIN;
	if (size > s->budget ||
	    (s->n && s->args->dircount && s->dirbytes + dsize > s->args->dircount) ||
	    (big && s->big == RD_MAX_BIG)) {
		*full = true;
		return NFS4_OK;
	}
	memcpy(name, d->name, d->name_len);
	e->cookie = d->cookie;
	e->name = xdr_opaque_of(name, d->name_len);
	e->nextentry = NULL;
	*s->tail = e;
	s->tail = &e->nextentry;
	s->budget -= (uint32_t)size;
	s->dirbytes += dsize;
	s->big += big;
	s->n++;
	return NFS4_OK;
nomem:
	if (!s->n)
		return NFS4ERR_SERVERFAULT;
	*full = true; /* send what we have */
	return NFS4_OK;
}

/* each entry takes at least 28 bytes: don't read many more than can fit */
static unsigned rd_batch_size(void *arg)
{
	const struct rd_state *s = arg;
	return s->budget / 28 + 1;
}

nfsstat4 mds_readdir_walk(struct braid_mds *mds, uint64_t dir, uint64_t cookie,
			  const struct mds_rd_walk *w, bool *eof)
{
	struct rd_batch b = {.v = malloc(RD_BATCH * sizeof(*b.v))};
	if (!b.v)
		return NFS4ERR_SERVERFAULT;
	nfsstat4 st = NFS4_OK;
	bool full = false;
	*eof = false;
	while (!full && !*eof) {
		unsigned want = w->batch(w->arg);
		b.n = 0;
		b.max = want && want < RD_BATCH ? want : RD_BATCH;
		int rc = mds_dir_readdir(mds->store, dir, cookie, MDS_READDIR_ATTRS, rd_collect, &b,
					 eof);
		if (rc < 0) {
			st = mds_nfs4_status(rc);
			break;
		}
		for (unsigned i = 0; i < b.n && !full; i++) {
			if ((st = w->add(w->arg, &b.v[i], &full)))
				break;
			if (!full)
				cookie = b.v[i].cookie;
		}
		if (st)
			break;
		if (full)
			*eof = false;
	}
	free(b.v);
	return st;
}

static nfsstat4 op_readdir(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	const READDIR4args *args = &a->u.opreaddir;
	READDIR4resok *res = &r->u.opreaddir.u.resok4;
	struct mds_fh fh;
	struct mds_attr dir;
	struct mds_cred cr;
	nfsstat4 st = mds_cfh(c, &fh, &dir, &cr);
	if (st || (st = dir_type(&dir)))
		return st;
	if (!cr.pseudo && !mds_access(&cr, &dir, ACCESS4_READ))
		return NFS4ERR_ACCESS;
	switch (mds_dir_cookie_check(mds->store, args->cookie, args->cookieverf)) {
	case MDS_COOKIE_OK:
		break;
	case MDS_COOKIE_BAD:
		return NFS4ERR_BAD_COOKIE;
	case MDS_COOKIE_NOT_SAME:
		return NFS4ERR_NOT_SAME;
	}
	uint32_t maxcount = readdir_cap(args->maxcount);
	if (maxcount < RD_OVERHEAD)
		return NFS4ERR_TOOSMALL;
	/* a request the attribute encoder refuses (write-only attributes) fails
	 * as a whole; rdattr_error is for entries, not for the request */
	fattr4 probe;
	if ((st = mds_attr_encode_fh(c, &dir, c->fh, c->fhlen, &args->attr_request, &probe)))
		return st;

	struct mds_exports *x = mds_exports_get(mds);
	struct rd_state s = {
	    .c = c,
	    .args = args,
	    .x = x,
	    .dir_export = fh.export_id,
	    .pseudo = fh.export_id == 0,
	    .budget = maxcount - RD_OVERHEAD,
	    .tail = &s.head,
	};
	struct mds_rd_walk w = {.add = rd_add, .batch = rd_batch_size, .arg = &s};
	bool eof;
	st = mds_readdir_walk(mds, fh.ino, args->cookie, &w, &eof);
	mds_exports_put(x);
	if (st)
		return st;
	if (s.n == 0 && !eof)
		return NFS4ERR_TOOSMALL;
	mds_store_cookieverf(mds->store, res->cookieverf);
	res->reply.entries = s.head;
	res->reply.eof = eof;
	return NFS4_OK;
}

/*
 * SECINFO (RFC 8881 §18.29) and SECINFO_NO_NAME (§18.45).
 */

/* Appends flavor f unless present. */
static void flavor_add(uint32_t *fl, unsigned *n, uint32_t f)
{
	for (unsigned i = 0; i < *n; i++)
		if (fl[i] == f)
			return;
	if (*n < EXPORT_SEC_MAX)
		fl[(*n)++] = f;
}

/*
 * The flavors the client may use under export id, in the export's order
 * of preference.  The pseudo fs takes any flavor; it advertises those of
 * the exports the client may reach (as nfs-utils builds its pseudo root).
 */
static nfsstat4 secinfo_list(struct nfs41_compound *c, const struct mds_exports *x, uint32_t id,
			     SECINFO4resok *out)
{
	struct sockaddr_in any;
	const struct sockaddr *peer = req_peer(c, &any);
	uint32_t fl[EXPORT_SEC_MAX];
	unsigned n = 0;
	if (id) {
		const struct mds_export *e = mds_export_by_id(x, id);
		if (!e)
			return NFS4ERR_STALE;
		const struct export_client *cl = mds_exports_match(x, e->e->path, peer);
		if (!cl)
			return NFS4ERR_ACCESS;
		for (unsigned i = 0; i < cl->nsec; i++)
			flavor_add(fl, &n, cl->sec[i]);
	} else {
		for (unsigned k = 0; k < x->n; k++) {
			const struct export_client *cl =
			    mds_exports_match(x, x->v[k].e->path, peer);
			for (unsigned i = 0; cl && i < cl->nsec; i++)
				flavor_add(fl, &n, cl->sec[i]);
		}
	}
	if (n == 0)
		flavor_add(fl, &n, EXPORT_SEC_SYS);
	secinfo4 *v = xdr_arena_alloc(c->arena, n * sizeof(*v));
	if (!v)
		return NFS4ERR_SERVERFAULT;
	for (unsigned i = 0; i < n; i++) {
		switch (fl[i]) {
		case EXPORT_SEC_KRB5:
		case EXPORT_SEC_KRB5I:
		case EXPORT_SEC_KRB5P:
			v[i].flavor = RPCSEC_GSS;
			v[i].u.flavor_info.oid = xdr_opaque_of(krb5_oid, sizeof(krb5_oid));
			v[i].u.flavor_info.qop = 0;
			v[i].u.flavor_info.service = fl[i] == EXPORT_SEC_KRB5 ? RPC_GSS_SVC_NONE
						     : fl[i] == EXPORT_SEC_KRB5I
							 ? RPC_GSS_SVC_INTEGRITY
							 : RPC_GSS_SVC_PRIVACY;
			break;
		default: /* AUTH_NONE, AUTH_SYS */
			v[i].flavor = fl[i];
			break;
		}
	}
	out->len = n;
	out->val = v;
	return NFS4_OK;
}

/* §2.6.3.1.1.8: SECINFO and SECINFO_NO_NAME consume the current filehandle. */
static void cfh_consume(struct nfs41_compound *c)
{
	c->have_fh = false;
	c->have_cur_stateid = false;
}

static nfsstat4 op_secinfo(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	const component4 *name = &a->u.opsecinfo.name;
	struct mds_fh fh;
	struct mds_attr dir, attr;
	struct mds_cred cr;
	bool wrongsec;
	uint64_t ino;
	nfsstat4 st = cfh_anysec(c, &fh, &dir, &cr, &wrongsec);
	if (st || (st = dir_type(&dir)) || (st = name_check(name)))
		return st;
	/* never NFS4ERR_WRONGSEC (§2.6.3.1.1.5): searching is checked only
	 * where the client's flavor is one the directory's export takes */
	if (!wrongsec && (st = mds_dir_may_search(&cr, &dir)))
		return st;
	int rc =
	    mds_dir_lookup(mds->store, fh.ino, (const char *)name->val, name->len, &ino, &attr);
	if (rc)
		return mds_nfs4_status(rc);
	struct mds_exports *x = mds_exports_get(mds);
	uint32_t id = child_export(x, fh.export_id, ino);
	if (fh.export_id == 0 && id == 0 && (attr.type != MDS_DIR || !on_path(c, x, ino)))
		st = NFS4ERR_NOENT;
	else if (id != fh.export_id && attr.type == MDS_DIR)
		id = export_reach(c, x, id, ino);
	if (!st)
		st = secinfo_list(c, x, id, &r->u.opsecinfo.u.resok4);
	mds_exports_put(x);
	if (!st)
		cfh_consume(c);
	return st;
}

static nfsstat4 op_secinfo_no_name(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct braid_mds *mds = mds_of(c);
	secinfo_style4 style = a->u.opsecinfo_no_name;
	struct mds_fh fh;
	struct mds_attr cur;
	struct mds_cred cr;
	nfsstat4 st = cfh_anysec(c, &fh, &cur, &cr, NULL); /* never WRONGSEC: §2.6.3.1.1.5 */
	if (st)
		return st;
	if (style != SECINFO_STYLE4_CURRENT_FH && style != SECINFO_STYLE4_PARENT)
		return NFS4ERR_INVAL;
	if (style == SECINFO_STYLE4_PARENT) { /* of a directory (RFC 5661 erratum 2299) */
		if ((st = dir_type(&cur)))
			return st;
		if (fh.ino == mds_store_root(mds->store))
			return NFS4ERR_NOENT;
	}
	uint32_t id = fh.export_id;
	struct mds_exports *x = mds_exports_get(mds);
	if (style == SECINFO_STYLE4_PARENT) {
		const struct mds_export *e = mds_export_by_root(x, fh.ino);
		if (e && e->id == id) /* the parent is outside this export */
			id = export_reach(c, x, mds_export_of_dir(mds, x, cur.parent), cur.parent);
	}
	if (!st)
		st = secinfo_list(c, x, id, &r->u.opsecinfo_no_name.u.resok4);
	mds_exports_put(x);
	if (!st)
		cfh_consume(c);
	return st;
}

const struct mds_opdef mds_ops_dir[] = {
    {OP_PUTFH, {.fn = op_putfh, .flags = NFS41_OP_INLINE}},
    {OP_PUTROOTFH, {.fn = op_putrootfh, .flags = NFS41_OP_INLINE}},
    {OP_PUTPUBFH, {.fn = op_putrootfh}},
    {OP_LOOKUP, {.fn = op_lookup, .flags = NFS41_OP_NEEDS_FH | NFS41_OP_INLINE}},
    {OP_LOOKUPP, {.fn = op_lookupp, .flags = NFS41_OP_NEEDS_FH}},
    {OP_CREATE, {.fn = op_create, .flags = NFS41_OP_NEEDS_FH}},
    {OP_REMOVE, {.fn = op_remove, .flags = NFS41_OP_NEEDS_FH}},
    {OP_RENAME, {.fn = op_rename, .flags = NFS41_OP_NEEDS_FH}},
    {OP_LINK, {.fn = op_link, .flags = NFS41_OP_NEEDS_FH}},
    {OP_READLINK, {.fn = op_readlink, .flags = NFS41_OP_NEEDS_FH, .res_bound = readlink_bound}},
    {OP_READDIR, {.fn = op_readdir, .flags = NFS41_OP_NEEDS_FH, .res_bound = readdir_bound}},
    {OP_SECINFO, {.fn = op_secinfo, .flags = NFS41_OP_NEEDS_FH}},
    {OP_SECINFO_NO_NAME, {.fn = op_secinfo_no_name, .flags = NFS41_OP_NEEDS_FH}},
    {0},
};
