/* SPDX-License-Identifier: MIT */
/*
 * Delegations (RFC 8881 §10.2, §10.4, §18.6, §20.2, §20.6), beside the
 * opens and locks they belong with (mds/state_impl.h: the structures, one
 * lock st->mu).  A delegation is a stateid (ST_SID_DELEG) of a client on a
 * file, with no owner.
 *
 * Read delegations go to OPENs for reading, write delegations (with
 * [mds] delegations = on, the default) to OPENs for writing.  A write
 * delegation lets its holder cache writes and the file's size: Linux's
 * close then starts the write-back instead of waiting for it
 * (nfs4_file_flush), which is what makes a stream of small files cheap.
 * Its space_limit (NFS_LIMIT_SIZE: small_file_threshold, 1M when that is
 * 0, at most 64M) bounds what the client keeps unwritten past a close.
 * Only with data_io = proxy and a small_file_threshold, and recalled from
 * a holder that asks for an RW layout of the file (mds_deleg_layout_rw):
 * holding one, Linux may send a write's LAYOUTCOMMIT after its own
 * truncation and keep the reported size in its cache, which the MDS
 * cannot correct; writes through the MDS have no LAYOUTCOMMIT.
 * Another client's GETATTR, READ (special stateid; NFSv3 GETATTR and READ
 * too) recalls it (mds_deleg_break_write), rather than CB_GETATTR
 * (§10.4.3), and so does every operation that recalls a read delegation,
 * and any other client's OPEN.  READDIR's attributes of such a file are
 * the MDS's (the holder's unwritten bytes not counted).
 *
 * Grant (st_deleg_answer, §18.16.3): an OPEN with no _WANT_ flag against
 * it, by a client whose back channel has a connection, when no recall of
 * the file is under way, no conflicting operation touched it in the last
 * DL_BLOCK_MS (closes the race between mds_deleg_break's answer and the
 * change it allowed), and fewer than delegations_max are out; for reading
 * only, when no other client has the file open for writing or holds an RW
 * layout of it; for writing, when no other client has it open at all or
 * holds a delegation or RW layout of it.  A client asking with _WANT_
 * flags is told why not (OPEN_DELEGATE_NONE_EXT).  A client that already
 * holds one gets the same one again (a read one for a write open: none).
 *
 * Recall (§10.4.4): another client's OPEN for write or denying read
 * (st_deleg_open_conflict, atomically with the open), and its write with a
 * special stateid, SETATTR, REMOVE, RENAME or LINK of the file, an extended
 * attribute change, or any NFSv3 change (mds_deleg_break) start a recall of
 * every other client's delegation of the file and get NFS4ERR_DELAY.  The
 * thread sends CB_RECALL (again, backing off, until the client answers),
 * and the client's DELEGRETURN ends it.  Not returned within a lease, the
 * delegation is revoked: it leaves its file (the conflicting operation's
 * retry proceeds), and its stateid answers NFS4ERR_DELEG_REVOKED, and
 * SEQUENCE says SEQ4_STATUS_RECALLABLE_STATE_REVOKED, until the client
 * frees it (FREE_STATEID).  A holder whose back channel stays down a whole
 * lease has its delegations revoked the same way: it could not be told.
 *
 * CB_RECALL_ANY (§20.6): past recall_any_above delegations and layouts
 * outstanding, the thread asks each client holding some (at most once a
 * lease) to keep only its share.
 *
 * Not kept across a restart: a client reclaims a delegation during grace
 * with CLAIM_PREVIOUS (§10.2.1); it is granted back, of the kind it names,
 * pre-recalled when that kind is off, the back channel is down or too many
 * are out (a write delegation's holder then writes back what it cached).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mds/callback.h"
#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "mds/layout.h"
#include "mds/state.h"
#include "mds/state_impl.h"
#include "nfsd/xdr/flexfiles.h" /* RCA4_TYPE_MASK_FF_LAYOUT_* */

#define DL_BACKOFF_MIN 100 /* ms between CB_RECALL retries, doubling */
#define DL_BACKOFF_MAX 2000
#define DL_CB_PAR      32   /* callbacks in flight at once */
#define DL_BLOCK_SLOTS 256  /* files a conflicting operation touched, hashed */
#define DL_BLOCK_MS    1000 /* no new delegation of such a file for this long */
#define DL_SCAN_MS     1000 /* back channels and CB_RECALL_ANY looked at this often */
#define DL_SCAN_MAX    256  /* clients looked at per scan */
#define DL_WLIMIT_DEF  (1ull << 20) /* a write delegation's space_limit ... */
#define DL_WLIMIT_MAX  (64ull << 20) /* ... when small_file_threshold says none, at most */

/* Guarded by st->mu, but for the fields marked constant. */
struct st_deleg {
	int policy;		   /* constant: enum mds_delegations */
	unsigned max;		   /* constant: delegations_max */
	uint64_t recall_any_above; /* constant; 0: no CB_RECALL_ANY */
	uint64_t lease_ns;	   /* constant */
	pthread_t thread;
	pthread_cond_t cond; /* work for the thread, or a callback ended */
	bool stop, kick, running;
	unsigned cb_inflight;	/* callback threads running */
	struct st_sid *recalls; /* delegations being recalled (dl.rnext) */
	unsigned n;		/* delegations outstanding */
	atomic_uint nwrite;	/* of which write delegations (read without mu) */
	uint64_t wlimit;	/* constant: a write delegation's space_limit */
	bool wok;		/* constant: writes go through braid-mds (write delegations) */
	struct mds_deleg_counters ctr;
	struct {
		uint64_t ino, until_ns, clientid; /* whose change (UINT64_MAX: several) */
	} block[DL_BLOCK_SLOTS];
	uint64_t next_scan_ns; /* the thread's own */
};

/* ------------------------------------------------------------ recalls */

static void kick(struct st_deleg *dl)
{
	dl->kick = true;
	pthread_cond_broadcast(&dl->cond);
}

/* A conflicting operation of clientid on ino was let through: no other
 * client gets a delegation of ino until it is surely done. */
static void block_note(struct st_deleg *dl, uint64_t ino, uint64_t clientid, uint64_t now)
{
	unsigned i = (unsigned)(nfsd_mix64(ino) & (DL_BLOCK_SLOTS - 1));
	/* two clients' changes in the window: nobody is spared */
	if (dl->block[i].ino == ino && now < dl->block[i].until_ns &&
	    dl->block[i].clientid != clientid)
		clientid = UINT64_MAX;
	dl->block[i].ino = ino;
	dl->block[i].until_ns = now + DL_BLOCK_MS * 1000000ull;
	dl->block[i].clientid = clientid;
}

static bool blocked(const struct st_deleg *dl, uint64_t ino, uint64_t clientid, uint64_t now)
{
	unsigned i = (unsigned)(nfsd_mix64(ino) & (DL_BLOCK_SLOTS - 1));
	return dl->block[i].ino == ino && now < dl->block[i].until_ns &&
	       dl->block[i].clientid != clientid;
}

static void recalls_unlink(struct st_deleg *dl, struct st_sid *d)
{
	for (struct st_sid **pp = &dl->recalls; *pp; pp = &(*pp)->dl.rnext)
		if (*pp == d) {
			*pp = d->dl.rnext;
			break;
		}
	d->dl.recalling = false;
}

/* Starts recalling d (CB_RECALL from the thread); revoked a lease later. */
static void recall_start(struct st_deleg *dl, struct st_sid *d, uint64_t now)
{
	if (d->dl.recalling || d->dl.revoked)
		return;
	d->dl.recalling = true;
	d->dl.cb_ok = false;
	d->dl.deadline_ns = now + dl->lease_ns;
	d->dl.start_ns = now;
	d->dl.next_ns = now;
	d->dl.backoff_ms = DL_BACKOFF_MIN;
	d->dl.rnext = dl->recalls;
	dl->recalls = d;
	dl->ctr.recalled++;
	kick(dl);
}

/* Recalls the delegations of f held by clients other than clientid;
 * whether there were any. */
static bool break_locked(struct st_deleg *dl, struct st_file *f, uint64_t clientid, uint64_t now)
{
	bool found = false;
	for (struct st_sid *d = f ? f->delegs : NULL; d; d = d->fnext)
		if (d->cl->id != clientid) {
			recall_start(dl, d, now);
			found = true;
		}
	return found;
}

static bool is_write(const struct st_sid *d)
{
	return d->access & OPEN4_SHARE_ACCESS_WRITE;
}

/* Recalls the write delegations of f held by clients other than clientid;
 * whether there were any. */
static bool break_write_locked(struct st_deleg *dl, struct st_file *f, uint64_t clientid,
			       uint64_t now)
{
	bool found = false;
	for (struct st_sid *d = f ? f->delegs : NULL; d; d = d->fnext)
		if (d->cl->id != clientid && is_write(d)) {
			recall_start(dl, d, now);
			found = true;
		}
	return found;
}

nfsstat4 st_deleg_open_conflict(struct mds_state *st, struct st_client *cl, struct st_file *f,
				uint32_t access, uint32_t deny)
{
	/* a read delegation's holder opens locally for reading only; a write
	 * delegation's holder may have anything cached */
	if (!(access & OPEN4_SHARE_ACCESS_WRITE) && !(deny & OPEN4_SHARE_DENY_READ))
		return break_write_locked(st->dlg, f, cl->id, nfsd_now_ns()) ? NFS4ERR_DELAY
									       : NFS4_OK;
	/* no block needed: the open is on f before mu is let go */
	return break_locked(st->dlg, f, cl->id, nfsd_now_ns()) ? NFS4ERR_DELAY : NFS4_OK;
}

int mds_deleg_break(struct braid_mds *mds, uint64_t ino, uint64_t clientid, enum mds_deleg_why why)
{
	(void)why;
	struct mds_state *st = mds->state;
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&st->mu);
	block_note(st->dlg, ino, clientid, now);
	bool found = break_locked(st->dlg, st_file_get(st, ino, false), clientid, now);
	pthread_mutex_unlock(&st->mu);
	return found ? -EAGAIN : 0;
}

nfsstat4 mds_deleg_break_op(struct braid_mds *mds, uint64_t ino, uint64_t clientid,
			    enum mds_deleg_why why)
{
	return mds_deleg_break(mds, ino, clientid, why) ? NFS4ERR_DELAY : NFS4_OK;
}

void mds_deleg_layout_rw(struct braid_mds *mds, uint64_t ino, uint64_t clientid)
{
	struct mds_state *st = mds->state;
	if (!st || !st->dlg || !atomic_load(&st->dlg->nwrite))
		return;
	pthread_mutex_lock(&st->mu);
	struct st_file *f = st_file_get(st, ino, false);
	for (struct st_sid *d = f ? f->delegs : NULL; d; d = d->fnext)
		if (d->cl->id == clientid && is_write(d))
			recall_start(st->dlg, d, nfsd_now_ns());
	pthread_mutex_unlock(&st->mu);
}

int mds_deleg_break_write(struct braid_mds *mds, uint64_t ino, uint64_t clientid)
{
	struct mds_state *st = mds->state;
	if (!st || !st->dlg || !atomic_load(&st->dlg->nwrite))
		return 0; /* the common case: no lock taken */
	pthread_mutex_lock(&st->mu);
	bool found =
	    break_write_locked(st->dlg, st_file_get(st, ino, false), clientid, nfsd_now_ns());
	pthread_mutex_unlock(&st->mu);
	return found ? -EAGAIN : 0;
}

/* d was not returned in time: it leaves its file, its stateid stays
 * (NFS4ERR_DELEG_REVOKED) until FREE_STATEID (§8.2.4, §18.38). */
static void revoke_locked(struct mds_state *st, struct st_sid *d, const char *why)
{
	struct st_deleg *dl = st->dlg;
	struct st_file *f = d->file;
	if (d->dl.recalling)
		recalls_unlink(dl, d);
	*d->fpprev = d->fnext;
	if (d->fnext)
		d->fnext->fpprev = d->fpprev;
	d->fpprev = NULL;
	d->fnext = NULL;
	d->file = NULL;
	st_file_put_unused(st, f);
	d->dl.revoked = true;
	dl->n--;
	if (is_write(d))
		atomic_fetch_sub(&dl->nwrite, 1);
	d->cl->ndelegs--;
	d->cl->nrevoked++;
	atomic_fetch_add(&st->nrevoked, 1);
	dl->ctr.revoked++;
	mds_log("client %016llx: delegation of inode %llu revoked (%s)",
		(unsigned long long)d->cl->id, (unsigned long long)d->ino, why);
	/* NFSv4.0 has no FREE_STATEID (nor DELEG_REVOKED): the stateid goes
	 * now, and later use of it is BAD_STATEID (RFC 7530 §10.2) */
	if (d->cl->v40)
		st_deleg_free(st, d, false);
}

void st_deleg_free(struct mds_state *st, struct st_sid *d, bool returned)
{
	struct st_deleg *dl = st->dlg;
	if (d->dl.revoked) {
		d->cl->nrevoked--;
		atomic_fetch_sub(&st->nrevoked, 1);
	} else {
		if (d->dl.recalling)
			recalls_unlink(dl, d);
		dl->n--;
		if (is_write(d))
			atomic_fetch_sub(&dl->nwrite, 1);
		d->cl->ndelegs--;
		if (returned)
			dl->ctr.returned++;
	}
	st_sid_free(st, d);
}

/* ------------------------------------------------------------ grants */

/* The client has a callback path (§10.2.2: a delegation needs one): a 4.1
 * back channel connection, or a 4.0 callback address that answered
 * (mds/callback.c).  Without mu (the session layer's lock). */
static bool cb_up(struct mds_state *st, uint64_t clientid)
{
	return mds_cb_up(st->mds, clientid);
}

/* d, as OPEN's answer (§18.16.2): the read or write delegation. */
static void out_deleg(const struct st_deleg *dl, const struct st_sid *d, bool recall,
		      open_delegation4 *out)
{
	stateid4 sid = {.seqid = d->seqid};
	memcpy(sid.other, d->other, NFS4_OTHER_SIZE);
	/* §18.16.3: nobody is spared the ACCESS check (an empty who) */
	nfsace4 ace = {.type = ACE4_ACCESS_ALLOWED_ACE_TYPE};
	if (is_write(d)) {
		out->delegation_type = OPEN_DELEGATE_WRITE;
		open_write_delegation4 *w = &out->u.write;
		w->stateid = sid;
		w->recall = recall;
		/* §10.4.1: Linux flushes on close past this many bytes dirty */
		w->space_limit.limitby = NFS_LIMIT_SIZE;
		w->space_limit.u.filesize = dl->wlimit;
		w->permissions = ace;
	} else {
		out->delegation_type = OPEN_DELEGATE_READ;
		open_read_delegation4 *r = &out->u.read;
		r->stateid = sid;
		r->recall = recall;
		r->permissions = ace;
	}
}

/* §18.16.3: a client that used _WANT_ flags is told why (NONE_EXT). */
static void out_none(bool ext, why_no_delegation4 why, open_delegation4 *out)
{
	if (!ext) {
		out->delegation_type = OPEN_DELEGATE_NONE;
		return;
	}
	out->delegation_type = OPEN_DELEGATE_NONE_EXT;
	out->u.od_whynone.ond_why = why; /* we neither push nor signal (false) */
}

static struct st_sid *grant(struct mds_state *st, struct st_client *cl, struct st_file *f,
			    const struct st_deleg_req *q, bool write)
{
	struct st_deleg *dl = st->dlg;
	struct st_sid *d = st_sid_new(st, ST_SID_DELEG, cl, NULL, f);
	if (!d)
		return NULL;
	d->access = write ? OPEN4_SHARE_ACCESS_BOTH : OPEN4_SHARE_ACCESS_READ;
	d->dl.export_id = q->export_id;
	d->dl.igen = q->igen;
	dl->n++;
	if (write) {
		atomic_fetch_add(&dl->nwrite, 1);
		dl->ctr.granted_write++;
	}
	cl->ndelegs++;
	dl->ctr.granted++;
	return d;
}

static struct st_sid *deleg_of(struct st_file *f, const struct st_client *cl)
{
	for (struct st_sid *d = f->delegs; d; d = d->fnext)
		if (d->cl == cl)
			return d;
	return NULL;
}

/* Why f may not be delegated to cl now (mu held), or -1. */
static int refusal(struct mds_state *st, struct st_client *cl, struct st_file *f, bool write,
		   uint64_t now)
{
	struct st_deleg *dl = st->dlg;
	for (struct st_sid *d = f->delegs; d; d = d->fnext)
		if (d->dl.recalling || (d->cl != cl && (write || is_write(d))))
			return WND4_CONTENTION; /* a writer is waiting for it */
	/* for reading: nobody else writing; for writing: nobody else at all */
	for (struct st_sid *o = f->opens; o; o = o->fnext)
		if (o->cl != cl && (write || (o->access & OPEN4_SHARE_ACCESS_WRITE)))
			return WND4_CONTENTION;
	if (blocked(dl, f->ino, cl->id, now) ||
	    mds_layout_rw_held(st->mds, f->ino, cl->id))
		return WND4_CONTENTION;
	if (dl->n >= dl->max)
		return WND4_RESOURCE;
	return -1;
}

void st_deleg_answer(struct mds_state *st, struct nfs41_compound *c, uint64_t ino,
		     const struct st_deleg_req *q, open_delegation4 *out)
{
	struct st_deleg *dl = st->dlg;
	uint32_t want = q->share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
	bool ext = want || (q->share_access & ST_WANT_SIGNAL_FLAGS);
	bool reclaim = q->prev == OPEN_DELEGATE_READ || q->prev == OPEN_DELEGATE_WRITE;
	/* the kind that fits the open: a write delegation for writing */
	bool write = reclaim ? q->prev == OPEN_DELEGATE_WRITE
			     : (q->share_access & OPEN4_SHARE_ACCESS_WRITE) != 0;
	/* write delegations only where small files are written through
	 * braid-mds: see the top (a LAYOUTCOMMIT racing the holder's own
	 * truncation) */
	bool kind_off = dl->policy == MDS_DELEGATIONS_OFF ||
			(write && (dl->policy != MDS_DELEGATIONS_ON || !dl->wok));
	memset(out, 0, sizeof(*out));
	int why = -1;
	if (reclaim)
		; /* §10.2.1: granted back, whatever it asks now */
	else if (q->prev >= 0)
		why = WND4_RESOURCE; /* no new delegation in a reclaim */
	else if (want == OPEN4_SHARE_ACCESS_WANT_NO_DELEG)
		why = WND4_NOT_WANTED;
	else if (want == OPEN4_SHARE_ACCESS_WANT_CANCEL)
		why = WND4_CANCELLED;
	else if (dl->policy == MDS_DELEGATIONS_OFF)
		why = WND4_NOT_SUPP_FTYPE; /* none on any file type */
	else if (q->deleg_cur)
		why = WND4_CONTENTION; /* it holds one, likely being recalled */
	else if (kind_off || (want == OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG && !write))
		/* write delegations off, or one asked for a read-only open
		 * (its holder could then write without an open for it) */
		why = WND4_WRITE_DELEG_NOT_SUPP_FTYPE;
	else if (want == OPEN4_SHARE_ACCESS_WANT_READ_DELEG && write)
		why = WND4_CONTENTION; /* a read delegation would not cover the open */
	if (why >= 0) {
		out_none(ext, (why_no_delegation4)why, out);
		return;
	}
	bool up = cb_up(st, c->clientid);
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&st->mu);
	struct st_client *cl = st_client_get(st, c);
	struct st_file *f = cl ? st_file_get(st, ino, false) : NULL;
	struct st_sid *d = f ? deleg_of(f, cl) : NULL;
	if (!f) {
		why = WND4_RESOURCE; /* its open went meanwhile */
	} else if (reclaim) {
		bool recall = kind_off || !up || (!d && dl->n >= dl->max);
		if (d && write && !is_write(d))
			recall = true; /* it names more than it holds: give it back */
		if (!d && !(d = grant(st, cl, f, q, write)))
			why = WND4_RESOURCE;
		else if (recall && !d->dl.recalling) {
			/* pre-recalled: the flag tells it, no CB_RECALL needed */
			recall_start(dl, d, now);
			d->dl.cb_ok = true;
		}
		if (d)
			out_deleg(dl, d, d->dl.recalling, out);
	} else if (d) {
		/* it holds one already: the same again, unless being recalled
		 * or a read one for writing */
		if (d->dl.recalling || (write && !is_write(d)))
			why = WND4_CONTENTION;
		else
			out_deleg(dl, d, false, out);
	} else if (!up) {
		why = WND4_RESOURCE; /* no callback path: it could not be recalled */
	} else if ((why = refusal(st, cl, f, write, now)) < 0) {
		if ((d = grant(st, cl, f, q, write)))
			out_deleg(dl, d, false, out);
		else
			why = WND4_RESOURCE;
	}
	pthread_mutex_unlock(&st->mu);
	if (why >= 0)
		out_none(ext, (why_no_delegation4)why, out);
}

/* ------------------------------------------------------------ callbacks */

enum { DL_JOB_RECALL = 1, DL_JOB_RECALL_ANY = 2, DL_JOB_PROBE = 3 };

struct dl_job {
	struct mds_state *st;
	int kind;
	uint64_t clientid;
	/* DL_JOB_RECALL */
	uint8_t other[NFS4_OTHER_SIZE];
	stateid4 sid;
	uint8_t fh[MDS_FH_SIZE];
	/* DL_JOB_RECALL_ANY */
	uint32_t keep, mask;
};

/* CB_RECALL (§20.2) or CB_RECALL_ANY (§20.6): 0 and the client's status, or
 * mds_cb_compound's -errno. */
static int send_job(struct braid_mds *mds, const struct dl_job *j, nfsstat4 *status)
{
	uint8_t buf[2048];
	struct xdr_arena ar;
	xdr_arena_init(&ar, buf, sizeof(buf), 1u << 16);
	nfs_cb_argop4 op;
	memset(&op, 0, sizeof(op));
	uint32_t mask = j->mask;
	if (j->kind == DL_JOB_RECALL) {
		op.argop = OP_CB_RECALL;
		op.u.opcbrecall.stateid = j->sid;
		op.u.opcbrecall.truncate = false;
		op.u.opcbrecall.fh = xdr_opaque_of(j->fh, MDS_FH_SIZE);
	} else {
		op.argop = OP_CB_RECALL_ANY;
		op.u.opcbrecall_any.craa_objects_to_keep = j->keep;
		op.u.opcbrecall_any.craa_type_mask.len = 1;
		op.u.opcbrecall_any.craa_type_mask.val = &mask;
	}
	CB_COMPOUND4res res;
	int rc = mds_cb_compound(mds, j->clientid, &op, 1, &res, &ar);
	if (!rc) {
		/* after CB_SEQUENCE (4.1), or alone (4.0) */
		uint32_t i = res.resarray.len >= 2 ? 1 : 0;
		if (res.resarray.len && res.resarray.val[i].resop == op.argop)
			/* both results are one nfsstat4 */
			*status = j->kind == DL_JOB_RECALL
				      ? res.resarray.val[i].u.opcbrecall.status
				      : res.resarray.val[i].u.opcbrecall_any.crar_status;
		else
			*status = res.status ? res.status : NFS4ERR_SERVERFAULT;
	}
	xdr_arena_release(&ar);
	return rc;
}

/* The client's answer to a CB_RECALL (the delegation looked up again: it
 * may have been returned meanwhile). */
static void recall_answered(struct mds_state *st, const struct dl_job *j, int rc, nfsstat4 status)
{
	struct st_sid *d = st_sid_lookup(st, j->other);
	if (!d || d->type != ST_SID_DELEG || !d->dl.recalling)
		return;
	d->dl.cb_busy = false;
	if (!rc && status == NFS4_OK) {
		d->dl.cb_ok = true; /* its DELEGRETURN follows */
		return;
	}
	/* no back channel, no answer, or an error (it may not have seen the
	 * OPEN reply yet: BAD_STATEID): again, until the lease runs out */
	uint64_t t = nfsd_now_ns();
	d->dl.next_ns = t + d->dl.backoff_ms * 1000000ull;
	d->dl.backoff_ms =
	    d->dl.backoff_ms * 2 > DL_BACKOFF_MAX ? DL_BACKOFF_MAX : d->dl.backoff_ms * 2;
}

/* One callback in its own thread: a client slow to answer (a callback may
 * wait CB_TIMEOUT_MS) holds up no other. */
static void *job_thread(void *arg)
{
	struct dl_job *j = arg;
	struct mds_state *st = j->st;
	nfsstat4 status = NFS4ERR_SERVERFAULT;
	/* a probe's failure makes the session layer forget the connection */
	int rc = j->kind == DL_JOB_PROBE ? mds_cb_null(st->mds, j->clientid)
					 : send_job(st->mds, j, &status);
	pthread_mutex_lock(&st->mu);
	if (j->kind == DL_JOB_RECALL)
		recall_answered(st, j, rc, status);
	st->dlg->cb_inflight--;
	kick(st->dlg); /* wakes st_deleg_stop too */
	pthread_mutex_unlock(&st->mu);
	free(j);
	return NULL;
}

static void jobs_start(struct dl_job **v, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		pthread_t th;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &at, job_thread, v[i]))
			job_thread(v[i]); /* no thread: here, then */
		pthread_attr_destroy(&at);
	}
}

/* Revokes what ran out of time, sends the CB_RECALLs due. */
static void recalls_run(struct mds_state *st, uint64_t now)
{
	struct st_deleg *dl = st->dlg;
	struct dl_job *todo[DL_CB_PAR];
	unsigned n = 0;
	pthread_mutex_lock(&st->mu);
	for (struct st_sid *d = dl->recalls, *next; d; d = next) {
		next = d->dl.rnext;
		if (now >= d->dl.deadline_ns) {
			revoke_locked(st, d, "not returned within a lease of its recall");
			continue;
		}
		if (d->dl.cb_ok || d->dl.cb_busy || d->dl.next_ns > now ||
		    dl->cb_inflight >= DL_CB_PAR || n == DL_CB_PAR)
			continue;
		struct dl_job *j = calloc(1, sizeof(*j));
		if (!j)
			break;
		j->st = st;
		j->kind = DL_JOB_RECALL;
		j->clientid = d->cl->id;
		memcpy(j->other, d->other, NFS4_OTHER_SIZE);
		j->sid.seqid = d->seqid;
		memcpy(j->sid.other, d->other, NFS4_OTHER_SIZE);
		struct mds_fh h = {.ino = d->ino, .gen = d->dl.igen, .export_id = d->dl.export_id};
		mds_fh_make(st->mds, &h, j->fh);
		d->dl.cb_busy = true;
		dl->cb_inflight++;
		todo[n++] = j;
	}
	pthread_mutex_unlock(&st->mu);
	jobs_start(todo, n);
}

/*
 * Once a second, over the clients: one holding delegations whose back
 * channel has been down a whole lease loses them (it could not be
 * recalled), and its back channel is probed with CB_NULL twice a lease (a
 * connection is known dead only once a call on it fails); past
 * recall_any_above delegations and layouts outstanding, CB_RECALL_ANY to
 * the clients holding some, each at most once a lease.
 */
static void scan_run(struct mds_state *st, uint64_t now)
{
	struct st_deleg *dl = st->dlg;
	struct braid_mds *mds = st->mds;
	uint64_t ids[DL_SCAN_MAX];
	unsigned nids = 0, nholders = 0;
	pthread_mutex_lock(&st->mu);
	uint64_t total = dl->n;
	for (size_t b = 0; b <= st->clients.mask && nids < DL_SCAN_MAX; b++)
		for (struct htab_node *e = st->clients.b[b]; e && nids < DL_SCAN_MAX; e = e->next)
			ids[nids++] = ((struct st_client *)e)->id;
	pthread_mutex_unlock(&st->mu);
	if (dl->recall_any_above)
		total += mds_layout_outstanding(mds);
	bool over = dl->recall_any_above && total > dl->recall_any_above;
	struct dl_job *todo[DL_SCAN_MAX];
	unsigned n = 0;
	for (unsigned i = 0; i < nids; i++) {
		bool up = cb_up(st, ids[i]);
		bool layouts = over && mds_layout_client_has_state(mds, ids[i]);
		pthread_mutex_lock(&st->mu);
		struct st_client *cl = NULL;
		uint64_t h = nfsd_mix64(ids[i]);
		for (struct htab_node *e = htab_find(&st->clients, h); e && !cl;
		     e = htab_next(e, h))
			if (((struct st_client *)e)->id == ids[i])
				cl = (struct st_client *)e;
		int kind = 0;
		if (cl && !up && cl->ndelegs) {
			if (!cl->cbdown_ns)
				cl->cbdown_ns = now;
			else if (now - cl->cbdown_ns >= dl->lease_ns)
				for (struct st_sid *s = cl->sids, *next; s; s = next) {
					next = s->cnext;
					if (s->type == ST_SID_DELEG && !s->dl.revoked)
						revoke_locked(st, s,
							      "its back channel was down a lease");
				}
		} else if (cl && up) {
			cl->cbdown_ns = 0;
			/* CB_RECALL_ANY is 4.1's (RFC 8881 §20.6) */
			if (over && !cl->v40 && (cl->ndelegs || layouts) &&
			    now >= cl->recall_any_ns) {
				cl->recall_any_ns = now + dl->lease_ns;
				kind = DL_JOB_RECALL_ANY;
			} else if (cl->ndelegs && now >= cl->probe_ns) {
				cl->probe_ns = now + dl->lease_ns / 2;
				kind = DL_JOB_PROBE;
			}
		}
		struct dl_job *j =
		    kind && dl->cb_inflight < DL_CB_PAR ? calloc(1, sizeof(*j)) : NULL;
		if (j) {
			j->st = st;
			j->kind = kind;
			j->clientid = cl->id;
			j->mask = (cl->ndelegs ? 1u << RCA4_TYPE_MASK_RDATA_DLG |
							 1u << RCA4_TYPE_MASK_WDATA_DLG
					       : 0) |
				  (layouts ? 1u << RCA4_TYPE_MASK_FF_LAYOUT_MIN |
						 1u << RCA4_TYPE_MASK_FF_LAYOUT_MAX
					   : 0);
			nholders += kind == DL_JOB_RECALL_ANY;
			dl->cb_inflight++;
			todo[n++] = j;
		}
		pthread_mutex_unlock(&st->mu);
	}
	/* each holder asked may keep its share of half the limit */
	pthread_mutex_lock(&st->mu);
	for (unsigned i = 0; i < n; i++)
		if (todo[i]->kind == DL_JOB_RECALL_ANY) {
			todo[i]->keep = (uint32_t)(dl->recall_any_above / 2 / nholders);
			dl->ctr.recall_any++;
		}
	pthread_mutex_unlock(&st->mu);
	jobs_start(todo, n);
}

/* When the thread has something to do next (mu held). */
static uint64_t next_event(struct st_deleg *dl, uint64_t now)
{
	uint64_t t = dl->next_scan_ns;
	for (struct st_sid *d = dl->recalls; d; d = d->dl.rnext) {
		if (d->dl.deadline_ns < t)
			t = d->dl.deadline_ns;
		if (!d->dl.cb_ok && !d->dl.cb_busy && d->dl.next_ns < t)
			t = d->dl.next_ns;
	}
	return t > now ? t : now;
}

static void *deleg_main(void *arg)
{
	struct mds_state *st = arg;
	struct st_deleg *dl = st->dlg;
	for (;;) {
		pthread_mutex_lock(&st->mu);
		uint64_t now = nfsd_now_ns(), until = next_event(dl, now);
		while (!dl->stop && !dl->kick && until > now) {
			struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
					      .tv_nsec = (long)(until % 1000000000ull)};
			pthread_cond_timedwait(&dl->cond, &st->mu, &ts);
			now = nfsd_now_ns();
		}
		bool stop = dl->stop;
		dl->kick = false;
		pthread_mutex_unlock(&st->mu);
		if (stop)
			break;
		now = nfsd_now_ns();
		recalls_run(st, now);
		if (now >= dl->next_scan_ns) {
			dl->next_scan_ns = now + DL_SCAN_MS * 1000000ull;
			scan_run(st, now);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ start, stop */

int st_deleg_init(struct mds_state *st, char *msg, size_t msglen)
{
	const struct mds_settings *set = &st->mds->set;
	struct st_deleg *dl = calloc(1, sizeof(*dl));
	if (!dl) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	dl->policy = set->delegations;
	dl->max = (unsigned)set->delegations_max;
	dl->recall_any_above = (uint64_t)set->recall_any_above;
	dl->lease_ns = set->lease_ms * 1000000ull;
	dl->wok = set->data_io == MDS_DATA_PROXY && set->small_file_threshold > 0;
	dl->wlimit = set->small_file_threshold ? set->small_file_threshold : DL_WLIMIT_DEF;
	if (dl->wlimit > DL_WLIMIT_MAX)
		dl->wlimit = DL_WLIMIT_MAX;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dl->cond, &ca);
	pthread_condattr_destroy(&ca);
	st->dlg = dl;
	int rc = -pthread_create(&dl->thread, NULL, deleg_main, st);
	if (rc) {
		snprintf(msg, msglen, "delegation thread: %s", strerror(-rc));
		return rc;
	}
	dl->running = true;
	return 0;
}

void st_deleg_stop(struct mds_state *st)
{
	struct st_deleg *dl = st->dlg;
	if (!dl || !dl->running)
		return;
	pthread_mutex_lock(&st->mu);
	dl->stop = true;
	pthread_cond_broadcast(&dl->cond);
	pthread_mutex_unlock(&st->mu);
	pthread_join(dl->thread, NULL);
	dl->running = false;
	/* callbacks in flight end within CB_TIMEOUT_MS */
	pthread_mutex_lock(&st->mu);
	while (dl->cb_inflight)
		pthread_cond_wait(&dl->cond, &st->mu);
	pthread_mutex_unlock(&st->mu);
}

void st_deleg_release(struct mds_state *st)
{
	struct st_deleg *dl = st->dlg;
	if (!dl)
		return;
	st_deleg_stop(st);
	pthread_cond_destroy(&dl->cond);
	free(dl);
	st->dlg = NULL;
}

void mds_deleg_counters(struct braid_mds *mds, struct mds_deleg_counters *out)
{
	struct mds_state *st = mds->state;
	memset(out, 0, sizeof(*out));
	if (!st || !st->dlg)
		return;
	pthread_mutex_lock(&st->mu);
	*out = st->dlg->ctr;
	out->outstanding = st->dlg->n;
	out->outstanding_write = atomic_load(&st->dlg->nwrite);
	pthread_mutex_unlock(&st->mu);
}
