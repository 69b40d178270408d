/* SPDX-License-Identifier: MIT */
/*
 * The NFSv4.1/4.2 data service of braid-ds (RFC 8881 §13.6, RFC 8435 §5.1):
 * sessions come from nfsd/nfs41.c; this file adds the operations a
 * flexfiles client sends to a data server: PUTFH, READ, WRITE, COMMIT and
 * GETATTR.  Everything else is NFS4ERR_NOTSUPP.
 *
 * EXCHANGE_ID answers with EXCHGID4_FLAG_USE_PNFS_DS and one server_owner
 * and server_scope per data server ("braid-ds:" and the store's uuid), the
 * same on every address it serves, so a client session-trunks all of them
 * (RFC 8881 §2.10.5) and never mistakes it for the MDS or another DS.
 *
 * Who may read and write (RFC 8435 §2.2, §2.3):
 *  - AUTH_SYS (loosely coupled): the caller's ids against the object's
 *    owner, group and mode, which the MDS sets (the fence), as for NFSv3;
 *    the stateid is not checked (the DS cannot know the MDS's stateids).
 *  - RPCSEC_GSS (tightly coupled, a Kerberos client): the stateid of READ
 *    and WRITE must be a capability the MDS minted for the object under
 *    its current owner and group (ctl/cap.h); a READ capability never
 *    writes and a fence voids every earlier one.  The I/O then runs as the
 *    object's owner.  COMMIT carries no stateid: any Kerberos caller may
 *    commit (it changes no byte, only makes written ones durable).
 *  - Anything else: nobody, which the objects' mode refuses.
 * A reconstructing handle (ctl/fh.h DS_FH_EC, dataserver/ec.c) serves READ
 * to AUTH_SYS callers of the file's fence only (RPCSEC_GSS: ACCESS, for
 * now: no capability names a reconstructing handle yet).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataserver/ds_impl.h"
#include "ctl/cap.h"
#include "nfsd/nfs41.h"

/* ds_nfs_status's numbers are the NFSv4 ones too (RFC 8881 §15.1). */
_Static_assert(NFS4ERR_STALE == 70 && NFS4ERR_ACCESS == 13 && NFS4ERR_PERM == 1 &&
		       NFS4ERR_FBIG == 27 && NFS4ERR_NOSPC == 28 && NFS4ERR_DQUOT == 69 &&
		       NFS4ERR_ROFS == 30 && NFS4ERR_INVAL == 22 && NFS4ERR_IO == 5 &&
		       NFS4ERR_DELAY == 10008,
	       "nfsstat4 and nfsstat3 share these values");

static nfsstat4 errno_to_nfs4(int e)
{
	return (nfsstat4)ds_nfs_status(e);
}

/*
 * The current filehandle's object; PUTFH only lets genuine handles in.  A
 * reconstructing handle (DS_FH_EC) serves READ alone: the others get
 * NFS4ERR_ACCESS here (GETATTR included, as NFSv3's).
 */
static void cur_obj_type(struct nfs41_compound *c, struct ds_objid *id, int *type,
			 uint64_t *ino)
{
	struct braid_ds *ds = c->priv;
	if (ds_fh_parse_type(&ds->key, c->fh, c->fhlen, id, type, ino)) {
		memset(id, 0, sizeof(*id));
		*type = DS_FH_OBJECT;
	}
}

static nfsstat4 cur_obj(struct nfs41_compound *c, struct ds_objid *id)
{
	int type;
	uint64_t ino;
	cur_obj_type(c, id, &type, &ino);
	return type == DS_FH_OBJECT ? NFS4_OK : NFS4ERR_ACCESS;
}

static nfsstat4 op_putfh(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	struct braid_ds *ds = c->priv;
	const nfs_fh4 *fh = &arg->u.opputfh.object;
	struct ds_objid id;
	int type;
	uint64_t ino;
	(void)res;
	if (ds_fh_parse_type(&ds->key, fh->val, fh->len, &id, &type, &ino))
		return NFS4ERR_BADHANDLE;
	nfs41_compound_set_fh(c, fh->val, fh->len);
	return NFS4_OK;
}

/*
 * The ids I/O on the object runs as (the top comment): the caller's, or
 * for an RPCSEC_GSS caller the object's owner when sid (NULL: COMMIT) is a
 * capability for iomode on it.
 */
static nfsstat4 io_ids(struct nfs41_compound *c, const struct ds_objid *id, const stateid4 *sid,
		       enum ctl_cap_iomode iomode, uint32_t *uid, uint32_t *gid)
{
	struct braid_ds *ds = c->priv;
	if (c->req->cred.flavor != NFSD_RPCSEC_GSS) {
		ds_req_ids(c->req, uid, gid);
		return NFS4_OK;
	}
	struct ds_obj_stat os;
	int rc = ds_store_stat(ds->store, id, &os);
	if (rc)
		return errno_to_nfs4(rc);
	if (sid && !ctl_cap_check(&ds->key.cap, id, os.uid, os.gid, iomode, sid->other))
		return NFS4ERR_ACCESS;
	/* the store checks these again under the object's lock: a fence
	 * between here and the I/O still stops it */
	*uid = os.uid;
	*gid = os.gid;
	return NFS4_OK;
}

static uint32_t read_bound(const nfs_argop4 *arg)
{
	uint32_t n = arg->u.opread.count;
	return (n > (1u << 20) ? (1u << 20) : n) + 32;
}

static nfsstat4 op_read(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	struct braid_ds *ds = c->priv;
	const READ4args *a = &arg->u.opread;
	READ4resok *r = &res->u.opread.u.resok4;
	struct ds_objid id;
	int type;
	uint64_t ino;
	cur_obj_type(c, &id, &type, &ino);
	if (type == DS_FH_EC) { /* AUTH_SYS only: ds_ec_read */
		nfsstat4 st = errno_to_nfs4(
		    ds_ec_read(ds, c->req, &id, ino, a->offset, a->count, &r->data, &r->eof));
		if (!st)
			nfsd_req_payload(c->req, r->data.val, r->data.len);
		return st;
	}
	uint32_t uid, gid;
	nfsstat4 st = io_ids(c, &id, &a->stateid, CTL_CAP_READ, &uid, &gid);
	if (st)
		return st;
	st = errno_to_nfs4(
	    ds_io_read(ds, c->req, &id, uid, gid, a->offset, a->count, &r->data, &r->eof));
	if (!st) /* RFC 8267: over RDMA, into the client's write chunk */
		nfsd_req_payload(c->req, r->data.val, r->data.len);
	return st;
}

static nfsstat4 op_write(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	struct braid_ds *ds = c->priv;
	const WRITE4args *a = &arg->u.opwrite;
	WRITE4resok *r = &res->u.opwrite.u.resok4;
	struct ds_objid id;
	nfsstat4 fst = cur_obj(c, &id);
	if (fst)
		return fst;
	uint32_t uid, gid;
	nfsstat4 st = io_ids(c, &id, &a->stateid, CTL_CAP_RW, &uid, &gid);
	if (st)
		return st;
	ssize_t n = ds_io_write(ds, &id, uid, gid, a->offset, a->data, (uint32_t)a->stable);
	if (n < 0)
		return errno_to_nfs4((int)n);
	r->count = (uint32_t)n;
	r->committed = a->stable;
	ds_store_verifier(ds->store, r->writeverf);
	return NFS4_OK;
}

static nfsstat4 op_commit(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	struct braid_ds *ds = c->priv;
	const COMMIT4args *a = &arg->u.opcommit;
	struct ds_objid id;
	nfsstat4 fst = cur_obj(c, &id);
	if (fst)
		return fst;
	uint32_t uid, gid;
	nfsstat4 st = io_ids(c, &id, NULL, CTL_CAP_RW, &uid, &gid);
	if (st)
		return st;
	int rc = ds_io_commit(ds, &id, uid, gid, a->offset, a->count);
	if (rc)
		return errno_to_nfs4(rc);
	ds_store_verifier(ds->store, res->u.opcommit.u.resok4.writeverf);
	return NFS4_OK;
}

/* ---------------------------------------------------------------- GETATTR */

static const unsigned supported[] = {
	FATTR4_SUPPORTED_ATTRS, FATTR4_TYPE,	    FATTR4_FH_EXPIRE_TYPE, FATTR4_CHANGE,
	FATTR4_SIZE,		FATTR4_LINK_SUPPORT, FATTR4_SYMLINK_SUPPORT, FATTR4_NAMED_ATTR,
	FATTR4_FSID,		FATTR4_UNIQUE_HANDLES, FATTR4_LEASE_TIME,   FATTR4_RDATTR_ERROR,
	FATTR4_FILEHANDLE,	FATTR4_FILEID,	    FATTR4_MODE,	   FATTR4_NUMLINKS,
	FATTR4_OWNER,		FATTR4_OWNER_GROUP,  FATTR4_SPACE_USED,	   FATTR4_TIME_ACCESS,
	FATTR4_TIME_METADATA,	FATTR4_TIME_MODIFY,  FATTR4_SUPPATTR_EXCLCREAT,
};
#define NSUPP (sizeof(supported) / sizeof(supported[0]))
#define MASK_WORDS 3

static bool bit_set(const uint32_t *w, unsigned n, unsigned bit)
{
	return bit / 32 < n && (w[bit / 32] >> (bit % 32)) & 1;
}

/* An output buffer for attribute values, big-endian, 4-byte units. */
struct abuf {
	uint8_t *p;
	size_t len, cap;
};

static void put32(struct abuf *b, uint32_t v)
{
	if (b->len + 4 <= b->cap)
		xdr_put32(b->p + b->len, v);
	b->len += 4;
}

static void put64(struct abuf *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b, (uint32_t)v);
}

static void put_opaque(struct abuf *b, const void *data, uint32_t len)
{
	put32(b, len);
	uint32_t padded = (len + 3) & ~3u;
	if (b->len + padded <= b->cap) {
		memcpy(b->p + b->len, data, len);
		memset(b->p + b->len + len, 0, padded - len);
	}
	b->len += padded;
}

static void put_bitmap(struct abuf *b, const uint32_t *w, unsigned n)
{
	while (n && !w[n - 1])
		n--;
	put32(b, n);
	for (unsigned i = 0; i < n; i++)
		put32(b, w[i]);
}

static nfsstat4 op_getattr(struct nfs41_compound *c, nfs_argop4 *arg, nfs_resop4 *res)
{
	struct braid_ds *ds = c->priv;
	const bitmap4 *req = &arg->u.opgetattr.attr_request;
	fattr4 *out = &res->u.opgetattr.u.resok4.obj_attributes;
	struct ds_objid id;
	struct ds_obj_stat os;
	nfsstat4 fst = cur_obj(c, &id);
	if (fst)
		return fst;
	int rc = ds_store_stat(ds->store, &id, &os);
	if (rc)
		return errno_to_nfs4(rc);
	uint32_t supp[MASK_WORDS] = { 0 }, got[MASK_WORDS] = { 0 };
	for (unsigned i = 0; i < NSUPP; i++)
		supp[supported[i] / 32] |= 1u << (supported[i] % 32);
	struct abuf b = { .cap = 512 };
	if (!(b.p = xdr_arena_alloc(c->arena, b.cap)))
		return NFS4ERR_SERVERFAULT;
	char owner[16], group[16];
	snprintf(owner, sizeof(owner), "%u", os.uid);
	snprintf(group, sizeof(group), "%u", os.gid);
	for (unsigned bit = 0; bit < 32 * MASK_WORDS; bit++) {
		if (!bit_set(req->val, req->len, bit) || !bit_set(supp, MASK_WORDS, bit))
			continue;
		got[bit / 32] |= 1u << (bit % 32);
		switch (bit) {
		case FATTR4_SUPPORTED_ATTRS:
			put_bitmap(&b, supp, MASK_WORDS);
			break;
		case FATTR4_TYPE:
			put32(&b, NF4REG);
			break;
		case FATTR4_FH_EXPIRE_TYPE:
			put32(&b, FH4_PERSISTENT);
			break;
		case FATTR4_CHANGE:
			put64(&b, os.change);
			break;
		case FATTR4_SIZE:
			put64(&b, os.size);
			break;
		case FATTR4_LINK_SUPPORT:
		case FATTR4_SYMLINK_SUPPORT:
		case FATTR4_NAMED_ATTR:
			put32(&b, 0);
			break;
		case FATTR4_FSID:
			put64(&b, ds->fsid);
			put64(&b, 0);
			break;
		case FATTR4_UNIQUE_HANDLES:
			put32(&b, 1);
			break;
		case FATTR4_LEASE_TIME:
			put32(&b, 90);
			break;
		case FATTR4_RDATTR_ERROR:
			put32(&b, NFS4_OK);
			break;
		case FATTR4_FILEHANDLE:
			put_opaque(&b, c->fh, c->fhlen);
			break;
		case FATTR4_FILEID:
			put64(&b, ds_obj_fileid(&id));
			break;
		case FATTR4_MODE:
			put32(&b, os.mode);
			break;
		case FATTR4_NUMLINKS:
			put32(&b, 1);
			break;
		case FATTR4_OWNER:
			put_opaque(&b, owner, (uint32_t)strlen(owner));
			break;
		case FATTR4_OWNER_GROUP:
			put_opaque(&b, group, (uint32_t)strlen(group));
			break;
		case FATTR4_SPACE_USED:
			put64(&b, os.used);
			break;
		case FATTR4_TIME_ACCESS:
		case FATTR4_TIME_METADATA:
		case FATTR4_TIME_MODIFY:
			put64(&b, (uint64_t)os.mtime.tv_sec);
			put32(&b, (uint32_t)os.mtime.tv_nsec);
			break;
		case FATTR4_SUPPATTR_EXCLCREAT:
			put32(&b, 0); /* a DS creates nothing for clients */
			break;
		}
	}
	if (b.len > b.cap)
		return NFS4ERR_SERVERFAULT;
	unsigned n = MASK_WORDS;
	while (n && !got[n - 1])
		n--;
	uint32_t *mask = xdr_arena_alloc(c->arena, MASK_WORDS * sizeof(uint32_t));
	if (!mask)
		return NFS4ERR_SERVERFAULT;
	memcpy(mask, got, sizeof(got));
	out->attrmask.len = n;
	out->attrmask.val = mask;
	out->attr_vals = xdr_opaque_of(b.p, b.len);
	return NFS4_OK;
}

static const struct nfs41_op ds_ops[OP_WRITE + 1] = {
	[OP_PUTFH] = { .fn = op_putfh },
	[OP_READ] = { .fn = op_read, .flags = NFS41_OP_NEEDS_FH, .res_bound = read_bound },
	[OP_WRITE] = { .fn = op_write, .flags = NFS41_OP_NEEDS_FH },
	[OP_COMMIT] = { .fn = op_commit, .flags = NFS41_OP_NEEDS_FH },
	[OP_GETATTR] = { .fn = op_getattr, .flags = NFS41_OP_NEEDS_FH },
};

int ds_nfs41_start(struct braid_ds *ds, char *msg, size_t msglen)
{
	static const char hex[] = "0123456789abcdef";
	char *owner = ds->so_owner;
	int n = snprintf(owner, sizeof(ds->so_owner), "braid-ds:");
	for (int i = 0; i < DS_UUID_SIZE; i++) {
		owner[n++] = hex[ds->uuid[i] >> 4];
		owner[n++] = hex[ds->uuid[i] & 15];
	}
	owner[n] = 0;
	struct nfs41_server_opts o = {
		.so_major = owner,
		.so_major_len = (size_t)n,
		.scope = owner,
		.scope_len = (size_t)n,
		.exchgid_flags = EXCHGID4_FLAG_USE_PNFS_DS,
		.lease_s = 90,
		.max_slots = 128,
		.max_req = (uint32_t)ds->set.max_io + 64 * 1024,
		.max_resp = (uint32_t)ds->set.max_io + 64 * 1024,
		.ops = ds_ops,
		.nops = OP_WRITE + 1,
		.priv = ds,
		.metrics = ds->metrics,
	};
	int rc = 0;
	ds->v41 = nfs41_server_new(&o, &rc);
	if (!ds->v41) {
		snprintf(msg, msglen, "NFSv4.1 service: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

void ds_nfs41_stop(struct braid_ds *ds)
{
	if (ds->v41)
		nfs41_server_free(ds->v41);
	ds->v41 = NULL;
}
