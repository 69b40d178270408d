/* SPDX-License-Identifier: MIT */
/*
 * NLM version 4 (RFC 1813 Appendix II, XNFS chapters 10 and 14) and the
 * part of NSM (XNFS chapter 11) a lock server needs, so that fcntl() locks
 * of NFSv3 clients work and are reclaimed after a restart.
 *
 * - Locks: POSIX byte ranges, 64-bit, l_len 0 to the end of the file, owned
 *   by (caller_name, svid, oh), in the table of NFSv4's locks (mds/state.h,
 *   state_lock.c), so NLM and NFSv4 locks conflict both ways.  The file
 *   handle is an NFSv3 handle, checked as NFSv3 checks it (mds_call_fh:
 *   stale, the export admitting the client, flavor, "secure", squashing;
 *   the pseudo filesystem is NLM4_STALE_FH); a regular file only; a shared
 *   lock needs read permission, an exclusive one write permission and a
 *   read-write export (NLM4_ROFS), the owner always passing (knfsd's owner
 *   override).  No deadlock detection: NLM4_DEADLCK is never answered.
 * - Blocking: a LOCK with block = true that conflicts is queued and
 *   answered NLM4_BLOCKED.  This module's thread tries the queue when locks
 *   go (mds_nlm_kick) and twice a second; a request it can grant is granted
 *   and the client told with GRANTED (GRANTED_MSG for a request that came
 *   by LOCK_MSG).  While requests wait, the thread also expires NFSv4
 *   clients whose lease ran out (nfs41_server_sweep), whose locks may be
 *   what they wait for.  If that call fails, or the client answers anything but
 *   NLM4_GRANTED (for GRANTED_MSG: in its GRANTED_RES), the lock is
 *   released again.  CANCEL and UNLOCK take a queued request out.
 * - Calls to clients (GRANTED, the _RES answers to _MSG calls, SM_NOTIFY)
 *   go only to the address the client's request came from (SM_NOTIFY: the
 *   address recorded from its requests), to the port that host's rpcbind
 *   gives (PMAP GETPORT over TCP at that address, [mds] nlm_rpcbind_port),
 *   over TCP, every call bounded (NLM_CALL_MS).  A server that dialed the
 *   caller_name or an address from the arguments could be made to call
 *   any host.
 * - NSM: the hosts holding NLM locks are recorded durably in the store
 *   (client records with MDS_CLIENT_NSM: name, address, NSM state) before
 *   their first lock is granted; this server's own NSM state number is
 *   there too, advanced at start (odd while up) and at a clean stop (even).
 *   At start, recorded hosts hold the grace period its whole time
 *   (mds_state_grace_hold) and get SM_NOTIFY (the new state; mon_name
 *   [mds] nsm_name, else the server address the host called, recorded
 *   with it), retried NSM_TRIES times; after grace, hosts holding no
 *   lock are forgotten.  In grace only LOCKs with reclaim = true are
 *   granted; other LOCKs, TEST and SHAREs get NLM4_DENIED_GRACE_PERIOD.
 * - A host's reboot frees its locks, shares and queued requests: an
 *   SM_NOTIFY from the host's recorded address naming it, FREE_ALL (the
 *   same rule), or its lock requests carrying another NSM state than
 *   before.
 * - SHARE/UNSHARE: DOS share reservations, between NLM owners and against
 *   NFSv4 opens (NFSv4 OPEN does not see NLM shares).
 *
 * Locking: n->mu guards hosts, the queue, pending grants, shares and the
 * outgoing-call queue; it may be held while calling the lock table (which
 * takes the state lock: n->mu first, never the reverse) but never across
 * store I/O or a network call.  n->rec_mu, taken before n->mu and held
 * across store I/O, makes each check-then-write of a host's record atomic;
 * a LOCK is granted only while its host is recorded (checked under n->mu).
 * n->wake_mu guards only 'kicked' and 'stop'.
 */
#include "config.h"

#include "nlm_prot.h"
#include "rpcb_prot.h"
#include "sm_inter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "mds/fh.h"
#include "mds/mds_impl.h"
#include "mds/nlm.h"
#include "mds/state.h"

#define NLM_CALL_MS    3000 /* each outgoing call, and each rpcbind lookup */
#define NLM_POLL_MS    500  /* the queue is tried at least this often */
#define NLM_HOSTS_MAX  4096
#define NLM_BLOCKS_MAX 4096
#define NLM_SHARES_MAX 4096
#define NLM_OUT_MAX    1024 /* _RES calls waiting to be sent */
#define NSM_TRIES      4    /* SM_NOTIFY attempts per host: 0, 2, 6, 14 s */
#define NSM_KEY_STATE  "braid-nsm:state"
#define NSM_KEY_HOST   "braid-nsm:host:"

struct nlm_host {
	struct mds_nlm_holder locks; /* the lock table's list (state lock) */
	struct nlm_host *next;
	char name[LM_MAXSTRLEN + 1];
	char addr[INET6_ADDRSTRLEN];  /* where its requests came from, as text */
	char local[INET6_ADDRSTRLEN]; /* the server address they came to ("": unknown) */
	int32_t nsm_state;	      /* its NSM state in its last LOCK (0: none seen) */
	bool recorded;		      /* the store has it, with this addr */
	bool prev;		      /* recorded before the restart: to notify */
	bool notified;		      /* its statd answered our SM_NOTIFY */
	unsigned tries;
	uint64_t next_ns;
};

/* A request's owner and range, copied out of the request. */
struct nlm_lk {
	struct nlm_host *host;
	uint64_t ino;
	bool exclusive;
	int32_t svid;
	uint64_t off, len; /* as sent */
	uint64_t start, end;
	uint32_t oh_len, fh_len, name_len;
	uint8_t oh[MAXNETOBJ_SZ], fh[MAXNETOBJ_SZ];
	char name[LM_MAXSTRLEN + 1];
};

struct nlm_block {
	struct nlm_block *next;
	struct nlm_lk lk;
	bool msg;		       /* came by LOCK_MSG: GRANTED_MSG */
	struct sockaddr_storage peer;  /* the request's source */
	struct sockaddr_storage local; /* where it came to (family 0: unknown) */
	uint64_t grant_id;	       /* our cookie in GRANTED(_MSG) */
};

struct nlm_share {
	struct nlm_share *next;
	struct nlm_host *host;
	uint64_t ino;
	uint32_t access, deny; /* OPEN4_SHARE_* bits: fsh4 values are the same */
	uint32_t oh_len;
	uint8_t oh[MAXNETOBJ_SZ];
};

/* A call to a client's NLM service the thread sends: flat arguments. */
struct nlm_out {
	struct nlm_out *next;
	struct sockaddr_storage peer, local;
	uint32_t proc;
	size_t len;
	uint8_t args[];
};

struct mds_nlm {
	struct braid_mds *mds;
	struct nfsd_proc procs[NLMPROC4_FREE_ALL + 1];
	struct nfsd_version vers[1];
	struct nfsd_program prog;
	struct nfsd_proc sm_procs[SM_NOTIFY + 1];
	struct nfsd_version sm_vers[1];
	struct nfsd_program sm_prog;
	char nsm_name[256];
	int32_t nsm_state;	 /* ours: odd while up */
	struct nfsd_server *eng; /* outgoing calls */
	pthread_t thread;
	bool started;

	pthread_mutex_t wake_mu;
	pthread_cond_t wake;
	bool kicked, stop;

	struct nlm_host nohost; /* constant: any host not known yet (holds nothing) */
	pthread_mutex_t rec_mu; /* each check-then-write of a host's record; before mu */
	pthread_mutex_t mu;
	struct nlm_host *hosts;
	unsigned nhosts;
	struct nlm_block *blocks, *granting; /* waiting; granted, GRANTED_MSG sent */
	unsigned nblocks, ngranting;
	uint64_t next_grant;
	struct nlm_share *shares;
	unsigned nshares;
	struct nlm_out *out, **out_tail;
	unsigned nout;
	bool forgot; /* the hosts that did not come back are forgotten */
};

/* ------------------------------------------------------------ records */

/* The record's data: "ADDR" or "ADDR LOCAL" (the server address it called). */
static int record_host(struct braid_mds *mds, const char *name, const char *addr, const char *local,
		       int32_t state)
{
	char key[sizeof(NSM_KEY_HOST) + LM_MAXSTRLEN];
	int kl = snprintf(key, sizeof(key), NSM_KEY_HOST "%s", name);
	struct mds_client_rec *rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->clientid = (uint32_t)state;
	rec->flags = MDS_CLIENT_NSM;
	rec->data_len = (uint32_t)snprintf((char *)rec->data, sizeof(rec->data), "%s%s%s", addr,
					   local[0] ? " " : "", local);
	struct mds_client_args a = {.owner = key, .owner_len = (size_t)kl, .rec = rec};
	int rc = mds_client_put(mds->store, &a);
	free(rec);
	return rc;
}

static void forget_host(struct braid_mds *mds, const char *name)
{
	char key[sizeof(NSM_KEY_HOST) + LM_MAXSTRLEN];
	int kl = snprintf(key, sizeof(key), NSM_KEY_HOST "%s", name);
	struct mds_client_args a = {.owner = key, .owner_len = (size_t)kl};
	int rc = mds_client_remove(mds->store, &a);
	if (rc && rc != -ENOENT)
		mds_log("nlm: forgetting host %s: %s", name, strerror(-rc));
}

static int record_state(struct braid_mds *mds, int32_t state)
{
	struct mds_client_rec *rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->clientid = (uint32_t)state;
	rec->flags = MDS_CLIENT_NSM;
	struct mds_client_args a = {
	    .owner = NSM_KEY_STATE, .owner_len = strlen(NSM_KEY_STATE), .rec = rec};
	int rc = mds_client_put(mds->store, &a);
	free(rec);
	return rc;
}

/* ------------------------------------------------------------ hosts */

/* n->mu held.  NULL when there are too many. */
static struct nlm_host *host_get(struct mds_nlm *n, const char *name, bool create)
{
	for (struct nlm_host *h = n->hosts; h; h = h->next)
		if (!strcasecmp(h->name, name))
			return h;
	if (!create || n->nhosts >= NLM_HOSTS_MAX)
		return NULL;
	struct nlm_host *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->next = n->hosts;
	n->hosts = h;
	n->nhosts++;
	return h;
}

static int host_load(void *arg, const void *owner, size_t len, const struct mds_client_rec *rec)
{
	struct mds_nlm *n = arg;
	size_t pl = strlen(NSM_KEY_HOST);
	if (!(rec->flags & MDS_CLIENT_NSM))
		return 0;
	if (len == strlen(NSM_KEY_STATE) && !memcmp(owner, NSM_KEY_STATE, len)) {
		n->nsm_state = (int32_t)rec->clientid;
		return 0;
	}
	char data[2 * INET6_ADDRSTRLEN];
	if (len <= pl || len - pl > LM_MAXSTRLEN || memcmp(owner, NSM_KEY_HOST, pl) ||
	    rec->data_len >= sizeof(data))
		return 0;
	memcpy(data, rec->data, rec->data_len);
	data[rec->data_len] = '\0';
	char *local = strchr(data, ' ');
	if (local)
		*local++ = '\0';
	if (strlen(data) >= INET6_ADDRSTRLEN || (local && strlen(local) >= INET6_ADDRSTRLEN))
		return 0;
	char name[LM_MAXSTRLEN + 1];
	memcpy(name, (const char *)owner + pl, len - pl);
	name[len - pl] = '\0';
	struct nlm_host *h = host_get(n, name, true);
	if (!h)
		return 0;
	snprintf(h->addr, sizeof(h->addr), "%s", data);
	snprintf(h->local, sizeof(h->local), "%s", local ? local : "");
	h->nsm_state = (int32_t)rec->clientid;
	h->recorded = h->prev = true;
	return 0;
}

/* Blocked requests and shares of h go (n->mu held); its locks go after. */
static void host_reboot_locked(struct mds_nlm *n, struct nlm_host *h)
{
	for (struct nlm_block **pp = &n->blocks; *pp;) {
		struct nlm_block *b = *pp;
		if (b->lk.host == h) {
			*pp = b->next;
			n->nblocks--;
			free(b);
		} else {
			pp = &b->next;
		}
	}
	for (struct nlm_block **pp = &n->granting; *pp;) {
		struct nlm_block *b = *pp;
		if (b->lk.host == h) {
			*pp = b->next;
			n->ngranting--;
			free(b);
		} else {
			pp = &b->next;
		}
	}
	for (struct nlm_share **pp = &n->shares; *pp;) {
		struct nlm_share *s = *pp;
		if (s->host == h) {
			*pp = s->next;
			n->nshares--;
			free(s);
		} else {
			pp = &s->next;
		}
	}
	mds_lock_nlm_drop_host(n->mds, &h->locks);
}

/* ------------------------------------------------------------ arguments */

/* The request's peer; one with no connection (a fuzz target's) is 0.0.0.0. */
static const struct sockaddr_storage *req_peer(const struct nfsd_req *req)
{
	static const struct sockaddr_storage none = {.ss_family = AF_INET};
	return req->conn ? nfsd_req_peer(req) : &none;
}

static bool peer_same(const struct sockaddr_storage *ss, const char *addr)
{
	char host[INET6_ADDRSTRLEN];
	mds_peer_text(ss, host);
	return !strcmp(host, addr);
}

/* RFC 1813 §6.1: l_len 0 is "to the end of the file"; a range past 2^64 is FBIG. */
static nlm4_stats range_of(uint64_t off, uint64_t len, uint64_t *start, uint64_t *end)
{
	*start = off;
	if (len == 0) {
		*end = UINT64_MAX;
		return NLM4_GRANTED;
	}
	if (len - 1 > UINT64_MAX - off)
		return NLM4_FBIG;
	*end = off + (len - 1);
	return NLM4_GRANTED;
}

static bool name_ok(const xdr_string *s)
{
	return s->len > 0 && s->len <= LM_MAXSTRLEN && !memchr(s->val, '\0', s->len);
}

/*
 * The lock of a request: its file checked (as NFSv3 does), its host found
 * or made, its owner and range copied.  NLM4_GRANTED or the status to answer.
 */
static nlm4_stats lk_of(struct nfsd_req *req, const nlm4_lock *l, bool exclusive, bool write,
			struct nlm_lk *lk)
{
	struct braid_mds *mds = req->priv;
	struct mds_nlm *n = mds->nlm;
	memset(lk, 0, offsetof(struct nlm_lk, oh));
	if (!name_ok(&l->caller_name))
		return NLM4_FAILED;
	nlm4_stats r = range_of(l->l_offset, l->l_len, &lk->start, &lk->end);
	if (r)
		return r;
	struct mds_fh fh;
	struct mds_attr a;
	struct mds_cred cr;
	nfsstat4 st = mds_call_fh(mds, req, l->fh.val, l->fh.len, &fh, &a, &cr);
	if (st == NFS4ERR_BADHANDLE || st == NFS4ERR_STALE || (!st && fh.export_id == 0))
		return NLM4_STALE_FH;
	if (st || a.type != MDS_REG)
		return NLM4_FAILED;
	if (write) {
		uint32_t want = exclusive ? ACCESS4_MODIFY : ACCESS4_READ;
		if (exclusive && !cr.rw)
			return NLM4_ROFS;
		if (cr.uid != a.uid && !(mds_access(&cr, &a, want) & want))
			return NLM4_FAILED;
	}
	lk->ino = fh.ino;
	lk->exclusive = exclusive;
	lk->svid = l->svid;
	lk->off = l->l_offset;
	lk->len = l->l_len;
	lk->oh_len = l->oh.len;
	memcpy(lk->oh, l->oh.val, l->oh.len);
	lk->fh_len = l->fh.len;
	memcpy(lk->fh, l->fh.val, l->fh.len);
	lk->name_len = l->caller_name.len;
	memcpy(lk->name, l->caller_name.val, l->caller_name.len);
	lk->name[l->caller_name.len] = '\0';
	/* only LOCK and SHARE make a host; a host unknown to TEST, CANCEL or
	 * UNLOCK holds nothing, which the stand-in says as well */
	pthread_mutex_lock(&n->mu);
	lk->host = host_get(n, lk->name, write);
	if (lk->host && write && !lk->host->recorded) /* for FREE_ALL's address check */
		mds_peer_text(req_peer(req), lk->host->addr);
	pthread_mutex_unlock(&n->mu);
	if (!lk->host && !write)
		lk->host = &n->nohost;
	return lk->host ? NLM4_GRANTED : NLM4_DENIED_NOLOCKS;
}

static struct mds_nlm_owner owner_of(const struct nlm_lk *lk)
{
	struct mds_nlm_owner o = {
	    .host = &lk->host->locks, .svid = lk->svid, .oh = lk->oh, .oh_len = lk->oh_len};
	return o;
}

static bool block_match(const struct nlm_block *b, const struct nlm_lk *lk)
{
	return b->lk.host == lk->host && b->lk.ino == lk->ino && b->lk.svid == lk->svid &&
	       b->lk.oh_len == lk->oh_len && !memcmp(b->lk.oh, lk->oh, lk->oh_len) &&
	       b->lk.start == lk->start && b->lk.end == lk->end && b->lk.exclusive == lk->exclusive;
}

/* A queued request of lk's owner and range goes (n->mu held). */
static bool block_cancel_locked(struct mds_nlm *n, const struct nlm_lk *lk)
{
	for (struct nlm_block **pp = &n->blocks; *pp; pp = &(*pp)->next) {
		struct nlm_block *b = *pp;
		if (block_match(b, lk)) {
			*pp = b->next;
			n->nblocks--;
			free(b);
			return true;
		}
	}
	return false;
}

/* The holder TEST reports: NLM's l_len 0 for "to EOF". */
static void holder_of(struct nfsd_req *req, const struct mds_lock_conflict *x, nlm4_holder *h)
{
	h->exclusive = x->exclusive;
	h->svid = x->svid;
	h->l_offset = x->start;
	h->l_len = x->end == UINT64_MAX ? 0 : x->end - x->start + 1;
	uint8_t *oh = xdr_arena_alloc(&req->arena, x->oh_len ? x->oh_len : 1);
	if (oh)
		memcpy(oh, x->oh, x->oh_len);
	h->oh = xdr_opaque_of(oh, oh ? x->oh_len : 0);
}

/* ------------------------------------------------------------ the procedures */

static nlm4_stats do_test(struct nfsd_req *req, const nlm4_testargs *a, nlm4_testrply *out)
{
	struct braid_mds *mds = req->priv;
	struct nlm_lk *lk = malloc(sizeof(*lk));
	if (!lk)
		return NLM4_DENIED_NOLOCKS;
	nlm4_stats r = lk_of(req, &a->alock, a->exclusive, false, lk);
	if (!r && mds_state_in_grace(mds))
		r = NLM4_DENIED_GRACE_PERIOD; /* locks not yet reclaimed */
	if (!r) {
		struct mds_nlm_owner o = owner_of(lk);
		struct mds_lock_conflict *x = malloc(sizeof(*x));
		if (!x) {
			r = NLM4_DENIED_NOLOCKS;
		} else if (mds_lock_nlm_test(mds, lk->ino, &o, lk->exclusive, lk->start, lk->end,
					     x)) {
			r = NLM4_DENIED;
			holder_of(req, x, &out->u.holder);
		}
		free(x);
	}
	free(lk);
	out->stat = r;
	return r;
}

/* Record the host (durably, before its first lock is granted) at addr. */
static nlm4_stats host_record(struct mds_nlm *n, struct nlm_host *h, const char *addr,
			      const char *local, int32_t state)
{
	pthread_mutex_lock(&n->rec_mu);
	pthread_mutex_lock(&n->mu);
	bool need = !h->recorded || strcmp(h->addr, addr) || strcmp(h->local, local) ||
		    h->nsm_state != state;
	char name[sizeof(h->name)];
	memcpy(name, h->name, sizeof(name));
	pthread_mutex_unlock(&n->mu);
	int rc = need ? record_host(n->mds, name, addr, local, state) : 0;
	if (need && !rc) {
		pthread_mutex_lock(&n->mu);
		h->recorded = true;
		snprintf(h->addr, sizeof(h->addr), "%s", addr);
		snprintf(h->local, sizeof(h->local), "%s", local);
		h->nsm_state = state;
		pthread_mutex_unlock(&n->mu);
	}
	pthread_mutex_unlock(&n->rec_mu);
	if (rc) {
		mds_log("nlm: recording host %s: %s", name, strerror(-rc));
		return NLM4_DENIED_NOLOCKS;
	}
	return NLM4_GRANTED;
}

/* LOCK, LOCK_MSG and NM_LOCK (monitored false: no NSM record). */
static nlm4_stats do_lock(struct nfsd_req *req, const nlm4_lockargs *a, bool msg, bool monitored)
{
	struct braid_mds *mds = req->priv;
	struct mds_nlm *n = mds->nlm;
	struct nlm_block *b = calloc(1, sizeof(*b));
	if (!b)
		return NLM4_DENIED_NOLOCKS;
	struct nlm_lk *lk = &b->lk;
	nlm4_stats r = lk_of(req, &a->alock, a->exclusive, true, lk);
	if (r)
		goto out;
	/* §8.4.2.1's rule for NLM: in grace, reclaims only; after it, a
	 * reclaim is an ordinary request */
	if (mds_state_in_grace(mds) && !a->reclaim) {
		r = NLM4_DENIED_GRACE_PERIOD;
		goto out;
	}
	/* an NFSv4 client's delegation lets it lock locally (a write one any
	 * lock, a read one shared ones): recalled first (RFC 8881 §10.4), and
	 * lockd waits and asks again, as in grace */
	if ((a->exclusive ? mds_deleg_break(mds, lk->ino, 0, MDS_DELEG_LOCK)
			  : mds_deleg_break_write(mds, lk->ino, 0)) == -EAGAIN) {
		r = NLM4_DENIED_GRACE_PERIOD;
		goto out;
	}
	char addr[INET6_ADDRSTRLEN], local[INET6_ADDRSTRLEN] = "";
	mds_peer_text(req_peer(req), addr);
	struct sockaddr_storage ls;
	if (!nfsd_req_local(req, &ls))
		mds_peer_text(&ls, local);
	/* another NSM state than before: the host rebooted, its locks are stale */
	pthread_mutex_lock(&n->mu);
	bool rebooted =
	    monitored && a->state && lk->host->nsm_state && lk->host->nsm_state != a->state;
	if (rebooted) {
		mds_log("nlm: host %s has NSM state %d, was %d: its old locks are freed",
			lk->host->name, a->state, lk->host->nsm_state);
		host_reboot_locked(n, lk->host);
	}
	pthread_mutex_unlock(&n->mu);
	/* recorded before granted; forget_pass may drop the record meanwhile */
	for (;;) {
		if (monitored && (r = host_record(n, lk->host, addr, local, a->state)))
			goto out;
		pthread_mutex_lock(&n->mu);
		if (!monitored || lk->host->recorded)
			break;
		pthread_mutex_unlock(&n->mu);
	}
	struct mds_nlm_owner o = owner_of(lk);
	int rc = mds_lock_nlm(mds, lk->ino, &o, lk->exclusive, lk->start, lk->end, NULL);
	if (rc == 0) {
		block_cancel_locked(n, lk); /* a retry of a queued request */
		r = NLM4_GRANTED;
	} else if (rc != -EAGAIN) {
		r = NLM4_DENIED_NOLOCKS;
	} else if (!a->block || !monitored || a->reclaim) {
		r = NLM4_DENIED;
	} else {
		r = NLM4_BLOCKED;
		bool queued = false;
		for (struct nlm_block *q = n->blocks; q && !queued; q = q->next)
			queued = block_match(q, lk);
		if (!queued && n->nblocks >= NLM_BLOCKS_MAX) {
			r = NLM4_DENIED_NOLOCKS;
		} else if (!queued) {
			b->msg = msg;
			b->peer = *req_peer(req);
			if (nfsd_req_local(req, &b->local))
				b->local.ss_family = 0;
			b->grant_id = ++n->next_grant;
			b->next = n->blocks;
			n->blocks = b;
			n->nblocks++;
			b = NULL;
		}
	}
	pthread_mutex_unlock(&n->mu);
out:
	free(b);
	return r;
}

static nlm4_stats do_cancel(struct nfsd_req *req, const nlm4_cancargs *a)
{
	struct braid_mds *mds = req->priv;
	struct mds_nlm *n = mds->nlm;
	struct nlm_lk *lk = malloc(sizeof(*lk));
	if (!lk)
		return NLM4_DENIED_NOLOCKS;
	nlm4_stats r = lk_of(req, &a->alock, a->exclusive, false, lk);
	if (!r) {
		pthread_mutex_lock(&n->mu);
		block_cancel_locked(n, lk);
		pthread_mutex_unlock(&n->mu);
	}
	free(lk);
	return r;
}

static nlm4_stats do_unlock(struct nfsd_req *req, const nlm4_unlockargs *a)
{
	struct braid_mds *mds = req->priv;
	struct mds_nlm *n = mds->nlm;
	struct nlm_lk *lk = malloc(sizeof(*lk));
	if (!lk)
		return NLM4_DENIED_NOLOCKS;
	nlm4_stats r = lk_of(req, &a->alock, false, false, lk);
	if (!r) {
		struct mds_nlm_owner o = owner_of(lk);
		pthread_mutex_lock(&n->mu);
		/* its queued requests for the range too (knfsd's rule) */
		for (struct nlm_block **pp = &n->blocks; *pp;) {
			struct nlm_block *b = *pp;
			if (b->lk.host == lk->host && b->lk.ino == lk->ino &&
			    b->lk.svid == lk->svid && b->lk.oh_len == lk->oh_len &&
			    !memcmp(b->lk.oh, lk->oh, lk->oh_len) && b->lk.start <= lk->end &&
			    b->lk.end >= lk->start) {
				*pp = b->next;
				n->nblocks--;
				free(b);
			} else {
				pp = &b->next;
			}
		}
		if (mds_lock_nlm_unlock(mds, lk->ino, &o, lk->start, lk->end))
			r = NLM4_DENIED_NOLOCKS;
		pthread_mutex_unlock(&n->mu);
	}
	free(lk);
	return r;
}

/* GRANTED_RES for one of our GRANTED_MSG calls: a refusal gives the lock back. */
static void granted_res(struct mds_nlm *n, const nlm4_res *a)
{
	uint64_t id;
	if (a->cookie.len != sizeof(id))
		return;
	memcpy(&id, a->cookie.val, sizeof(id));
	pthread_mutex_lock(&n->mu);
	struct nlm_block *b = NULL;
	for (struct nlm_block **pp = &n->granting; *pp; pp = &(*pp)->next)
		if ((*pp)->grant_id == id) {
			b = *pp;
			*pp = b->next;
			n->ngranting--;
			break;
		}
	if (b && a->stat.stat != NLM4_GRANTED) {
		struct mds_nlm_owner o = owner_of(&b->lk);
		mds_log("nlm: host %s refused a granted lock (%d): released", b->lk.host->name,
			a->stat.stat);
		(void)mds_lock_nlm_unlock(n->mds, b->lk.ino, &o, b->lk.start, b->lk.end);
	}
	pthread_mutex_unlock(&n->mu);
	free(b);
}

/* Queue a _RES call to the caller's NLM service with res (enc: its encoder). */
static void res_queue(struct nfsd_req *req, uint32_t proc, xdr_enc_fn enc, const void *res)
{
	struct mds_nlm *n = ((struct braid_mds *)req->priv)->nlm;
	struct iovec iov[16];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 16, NULL, 0, &req->arena);
	if (enc(&e, res) < 0)
		return;
	struct nlm_out *o = malloc(sizeof(*o) + e.len);
	if (!o)
		return;
	o->next = NULL;
	o->peer = *req_peer(req);
	if (nfsd_req_local(req, &o->local))
		o->local.ss_family = 0;
	o->proc = proc;
	o->len = e.len;
	xdr_enc_flatten(&e, o->args);
	pthread_mutex_lock(&n->mu);
	if (n->nout >= NLM_OUT_MAX) {
		free(o);
		o = NULL;
	} else {
		*n->out_tail = o;
		n->out_tail = &o->next;
		n->nout++;
	}
	pthread_mutex_unlock(&n->mu);
	if (!o)
		mds_log("nlm: too many replies waiting; a _RES call is dropped");
	mds_nlm_kick(req->priv);
}

static int p_null(struct nfsd_req *req, void *args, void *res)
{
	(void)req, (void)args, (void)res;
	return NFSD_SUCCESS;
}

static int p_test(struct nfsd_req *req, void *argp, void *resp)
{
	const nlm4_testargs *a = argp;
	nlm4_testres *r = resp;
	memset(r, 0, sizeof(*r));
	r->cookie = a->cookie;
	do_test(req, a, &r->stat);
	return NFSD_SUCCESS;
}

static int p_lock(struct nfsd_req *req, void *argp, void *resp)
{
	const nlm4_lockargs *a = argp;
	nlm4_res *r = resp;
	r->cookie = a->cookie;
	r->stat.stat = do_lock(req, a, false, true);
	return NFSD_SUCCESS;
}

static int p_cancel(struct nfsd_req *req, void *argp, void *resp)
{
	const nlm4_cancargs *a = argp;
	nlm4_res *r = resp;
	r->cookie = a->cookie;
	r->stat.stat = do_cancel(req, a);
	return NFSD_SUCCESS;
}

static int p_unlock(struct nfsd_req *req, void *argp, void *resp)
{
	const nlm4_unlockargs *a = argp;
	nlm4_res *r = resp;
	r->cookie = a->cookie;
	r->stat.stat = do_unlock(req, a);
	return NFSD_SUCCESS;
}

/* A server holds no client's locks: no blocked request of ours to grant. */
static int p_granted(struct nfsd_req *req, void *argp, void *resp)
{
	(void)req;
	const nlm4_testargs *a = argp;
	nlm4_res *r = resp;
	r->cookie = a->cookie;
	r->stat.stat = NLM4_DENIED;
	return NFSD_SUCCESS;
}

static int p_test_msg(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const nlm4_testargs *a = argp;
	nlm4_testres r;
	memset(&r, 0, sizeof(r));
	r.cookie = a->cookie;
	do_test(req, a, &r.stat);
	res_queue(req, NLMPROC4_TEST_RES, (xdr_enc_fn)xdr_enc_nlm4_testres, &r);
	return NFSD_SUCCESS;
}

static int p_lock_msg(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const nlm4_lockargs *a = argp;
	nlm4_res r = {.cookie = a->cookie, .stat.stat = do_lock(req, a, true, true)};
	res_queue(req, NLMPROC4_LOCK_RES, (xdr_enc_fn)xdr_enc_nlm4_res, &r);
	return NFSD_SUCCESS;
}

static int p_cancel_msg(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const nlm4_cancargs *a = argp;
	nlm4_res r = {.cookie = a->cookie, .stat.stat = do_cancel(req, a)};
	res_queue(req, NLMPROC4_CANCEL_RES, (xdr_enc_fn)xdr_enc_nlm4_res, &r);
	return NFSD_SUCCESS;
}

static int p_unlock_msg(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const nlm4_unlockargs *a = argp;
	nlm4_res r = {.cookie = a->cookie, .stat.stat = do_unlock(req, a)};
	res_queue(req, NLMPROC4_UNLOCK_RES, (xdr_enc_fn)xdr_enc_nlm4_res, &r);
	return NFSD_SUCCESS;
}

static int p_granted_msg(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const nlm4_testargs *a = argp;
	nlm4_res r = {.cookie = a->cookie, .stat.stat = NLM4_DENIED};
	res_queue(req, NLMPROC4_GRANTED_RES, (xdr_enc_fn)xdr_enc_nlm4_res, &r);
	return NFSD_SUCCESS;
}

/* TEST_RES ... UNLOCK_RES: answers to calls this server never makes. */
static int p_res_ignored(struct nfsd_req *req, void *argp, void *resp)
{
	(void)req, (void)argp, (void)resp;
	return NFSD_SUCCESS;
}

static int p_granted_res(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	granted_res(((struct braid_mds *)req->priv)->nlm, argp);
	return NFSD_SUCCESS;
}

/* SHARE and UNSHARE (XNFS 10.14, 10.15). */
static nlm4_stats do_share(struct nfsd_req *req, const nlm4_shareargs *a, bool share)
{
	struct braid_mds *mds = req->priv;
	struct mds_nlm *n = mds->nlm;
	const nlm4_share *s = &a->share;
	if ((uint32_t)s->mode > fsm_DRW || (uint32_t)s->access > fsa_RW)
		return NLM4_FAILED;
	nlm4_lock l = {.caller_name = s->caller_name, .fh = s->fh, .oh = s->oh};
	struct nlm_lk *lk = malloc(sizeof(*lk));
	if (!lk)
		return NLM4_DENIED_NOLOCKS;
	nlm4_stats r = lk_of(req, &l, (s->access & fsa_W) != 0, share, lk);
	if (!r && share && mds_state_in_grace(mds) && !a->reclaim)
		r = NLM4_DENIED_GRACE_PERIOD;
	if (r)
		goto out;
	uint32_t access = (uint32_t)s->access, deny = (uint32_t)s->mode;
	pthread_mutex_lock(&n->mu);
	struct nlm_share **mine = NULL;
	for (struct nlm_share **pp = &n->shares; *pp; pp = &(*pp)->next) {
		struct nlm_share *x = *pp;
		if (x->ino != lk->ino)
			continue;
		if (x->host == lk->host && x->oh_len == lk->oh_len &&
		    !memcmp(x->oh, lk->oh, lk->oh_len))
			mine = pp;
		else if (share && ((x->access & deny) || (x->deny & access)))
			r = NLM4_DENIED;
	}
	if (!share) {
		if (mine) {
			struct nlm_share *x = *mine;
			*mine = x->next;
			n->nshares--;
			free(x);
		}
	} else if (!r && mds_state_share_conflict(mds, lk->ino, access, deny)) {
		r = NLM4_DENIED;
	} else if (!r && mine) {
		(*mine)->access = access;
		(*mine)->deny = deny;
	} else if (!r) {
		struct nlm_share *x = n->nshares < NLM_SHARES_MAX ? calloc(1, sizeof(*x)) : NULL;
		if (!x) {
			r = NLM4_DENIED_NOLOCKS;
		} else {
			*x = (struct nlm_share){.next = n->shares,
						.host = lk->host,
						.ino = lk->ino,
						.access = access,
						.deny = deny,
						.oh_len = lk->oh_len};
			memcpy(x->oh, lk->oh, lk->oh_len);
			n->shares = x;
			n->nshares++;
		}
	}
	pthread_mutex_unlock(&n->mu);
out:
	free(lk);
	return r;
}

static int p_share(struct nfsd_req *req, void *argp, void *resp)
{
	const nlm4_shareargs *a = argp;
	nlm4_shareres *r = resp;
	r->cookie = a->cookie;
	r->sequence = 0;
	r->stat = do_share(req, a, req->proc == NLMPROC4_SHARE);
	return NFSD_SUCCESS;
}

static int p_nm_lock(struct nfsd_req *req, void *argp, void *resp)
{
	const nlm4_lockargs *a = argp;
	nlm4_res *r = resp;
	r->cookie = a->cookie;
	r->stat.stat = do_lock(req, a, false, false);
	return NFSD_SUCCESS;
}

/* A host rebooted: named name, told from peer (only its recorded address counts). */
static void host_rebooted(struct mds_nlm *n, const xdr_string *name, int32_t state,
			  const struct sockaddr_storage *peer, const char *why)
{
	if (!name_ok(name))
		return;
	char nm[LM_MAXSTRLEN + 1];
	memcpy(nm, name->val, name->len);
	nm[name->len] = '\0';
	pthread_mutex_lock(&n->mu);
	struct nlm_host *h = host_get(n, nm, false);
	if (h && !peer_same(peer, h->addr)) {
		char from[INET6_ADDRSTRLEN];
		mds_peer_text(peer, from);
		mds_log("nlm: %s for %s from %s, not from its address %s: ignored", why, nm, from,
			h->addr);
		h = NULL;
	}
	if (h) {
		host_reboot_locked(n, h);
		h->nsm_state = state;
	}
	pthread_mutex_unlock(&n->mu);
}

static int p_free_all(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const nlm4_notify *a = argp;
	host_rebooted(((struct braid_mds *)req->priv)->nlm, &a->name, a->state, req_peer(req),
		      "FREE_ALL");
	return NFSD_SUCCESS;
}

/* NSM SM_NOTIFY (XNFS 11.6): a monitored host restarted. */
static int p_sm_notify(struct nfsd_req *req, void *argp, void *resp)
{
	(void)resp;
	const sm_stat_chge *a = argp;
	host_rebooted(((struct braid_mds *)req->priv)->nlm, &a->mon_name, a->state, req_peer(req),
		      "SM_NOTIFY");
	return NFSD_SUCCESS;
}

/* ------------------------------------------------------------ outgoing calls */

struct flat {
	const uint8_t *p;
	size_t len;
};

static int enc_flat(struct xdr_enc *e, const void *arg)
{
	const struct flat *f = arg;
	return xdr_enc_bytes(e, f->p, f->len);
}

static socklen_t with_port(const struct sockaddr_storage *in, int port,
			   struct sockaddr_storage *out)
{
	*out = *in;
	if (out->ss_family == AF_INET) {
		((struct sockaddr_in *)out)->sin_port = htons((uint16_t)port);
		return sizeof(struct sockaddr_in);
	}
	((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)port);
	return sizeof(struct sockaddr_in6);
}

/* One call to peer:port (from src when not NULL), bounded.  0 or the client's error. */
static int call_at(struct mds_nlm *n, const struct sockaddr_storage *peer,
		   const struct sockaddr_storage *src, int port, uint32_t prog, uint32_t vers,
		   uint32_t proc, xdr_enc_fn enc, const void *args, xdr_dec_fn dec, void *res,
		   struct xdr_arena *ar)
{
	struct sockaddr_storage sa;
	socklen_t len = with_port(peer, port, &sa);
	struct nfsd_clnt_opts co = {.timeout_ms = NLM_CALL_MS, .max_inflight = 4};
	if (src)
		co.src = *src; /* Linux's lockd takes GRANTED only from the address it called */
	int err = 0;
	struct nfsd_clnt *c = nfsd_clnt_new(n->eng, (struct sockaddr *)&sa, len, &co, &err);
	if (!c)
		return err ? err : -EIO;
	struct nfsd_call_opts o = {
	    .prog = prog,
	    .vers = vers,
	    .proc = proc,
	    .enc_args = enc,
	    .args = args,
	    .timeout_ms = NLM_CALL_MS,
	    .flavor = NFSD_AUTH_SYS,
	    .machine = n->nsm_name,
	};
	int rc = nfsd_clnt_call(c, &o, dec ? dec : (xdr_dec_fn)xdr_dec_void, res, ar);
	nfsd_clnt_free(c);
	return rc;
}

/* prog v vers over TCP at peer, from the rpcbind at peer (never elsewhere). */
static int getport(struct mds_nlm *n, const struct sockaddr_storage *peer,
		   const struct sockaddr_storage *src, uint32_t prog, uint32_t vers)
{
	mapping m = {.prog = prog, .vers = vers, .prot = PMAP_IPPROTO_TCP, .port = 0};
	uint32_t port = 0;
	const struct xdr_proc_desc *d = &xdr_desc_RPCBPROG_PMAPVERS.procs[PMAPPROC_GETPORT];
	int rc = call_at(n, peer, src, (int)n->mds->set.nlm_rpcbind_port, RPCBPROG, PMAPVERS,
			 PMAPPROC_GETPORT, d->enc_arg, &m, d->dec_res, &port, NULL);
	if (rc)
		return rc > 0 ? -EPROTO : rc;
	return port && port < 65536 ? (int)port : -ENOENT;
}

static int nlm_call(struct mds_nlm *n, const struct sockaddr_storage *peer,
		    const struct sockaddr_storage *src, uint32_t proc, xdr_enc_fn enc,
		    const void *args, xdr_dec_fn dec, void *res, struct xdr_arena *ar)
{
	int port = getport(n, peer, src, NLM_PROG, NLM4_VERS);
	if (port < 0)
		return port;
	return call_at(n, peer, src, port, NLM_PROG, NLM4_VERS, proc, enc, args, dec, res, ar);
}

/* Tell the client its queued lock is granted; false: it is not (released). */
static bool grant_call(struct mds_nlm *n, struct nlm_block *b)
{
	const struct nlm_lk *lk = &b->lk;
	nlm4_testargs a = {
	    .cookie = xdr_opaque_of(&b->grant_id, sizeof(b->grant_id)),
	    .exclusive = lk->exclusive,
	    .alock = {.caller_name = xdr_opaque_of(lk->name, lk->name_len),
		      .fh = xdr_opaque_of(lk->fh, lk->fh_len),
		      .oh = xdr_opaque_of(lk->oh, lk->oh_len),
		      .svid = lk->svid,
		      .l_offset = lk->off,
		      .l_len = lk->len},
	};
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	nlm4_res r;
	memset(&r, 0, sizeof(r));
	int rc;
	if (b->msg)
		rc = nlm_call(n, &b->peer, &b->local, NLMPROC4_GRANTED_MSG,
			      (xdr_enc_fn)xdr_enc_nlm4_testargs, &a, NULL, NULL, NULL);
	else
		rc = nlm_call(n, &b->peer, &b->local, NLMPROC4_GRANTED,
			      (xdr_enc_fn)xdr_enc_nlm4_testargs, &a, (xdr_dec_fn)xdr_dec_nlm4_res,
			      &r, &ar);
	xdr_arena_release(&ar);
	if (rc)
		mds_log("nlm: GRANTED to host %s: %s; the lock is released", lk->name,
			rc < 0 ? strerror(-rc) : "refused");
	else if (!b->msg && r.stat.stat != NLM4_GRANTED)
		mds_log("nlm: host %s answered GRANTED with %d; the lock is released", lk->name,
			r.stat.stat);
	return !rc && (b->msg || r.stat.stat == NLM4_GRANTED);
}

/* Queued requests that can be granted now are, and their clients told. */
static void grant_pass(struct mds_nlm *n)
{
	struct nlm_block *ready = NULL;
	pthread_mutex_lock(&n->mu);
	for (struct nlm_block **pp = &n->blocks; *pp;) {
		struct nlm_block *b = *pp;
		struct mds_nlm_owner o = owner_of(&b->lk);
		if (mds_lock_nlm(n->mds, b->lk.ino, &o, b->lk.exclusive, b->lk.start, b->lk.end,
				 NULL)) {
			pp = &b->next;
			continue;
		}
		*pp = b->next;
		n->nblocks--;
		b->next = ready;
		ready = b;
	}
	pthread_mutex_unlock(&n->mu);
	while (ready) {
		struct nlm_block *b = ready;
		ready = b->next;
		bool ok = grant_call(n, b);
		pthread_mutex_lock(&n->mu);
		if (!ok) {
			struct mds_nlm_owner o = owner_of(&b->lk);
			(void)mds_lock_nlm_unlock(n->mds, b->lk.ino, &o, b->lk.start, b->lk.end);
		} else if (b->msg && n->ngranting < NLM_BLOCKS_MAX) {
			b->next = n->granting; /* until its GRANTED_RES */
			n->granting = b;
			n->ngranting++;
			b = NULL;
		}
		pthread_mutex_unlock(&n->mu);
		free(b);
	}
}

static void out_pass(struct mds_nlm *n)
{
	pthread_mutex_lock(&n->mu);
	struct nlm_out *o = n->out;
	n->out = NULL;
	n->out_tail = &n->out;
	n->nout = 0;
	pthread_mutex_unlock(&n->mu);
	while (o) {
		struct nlm_out *next = o->next;
		struct flat f = {o->args, o->len};
		int rc = nlm_call(n, &o->peer, &o->local, o->proc, enc_flat, &f, NULL, NULL, NULL);
		if (rc) {
			char host[INET6_ADDRSTRLEN];
			mds_peer_text(&o->peer, host);
			mds_log("nlm: reply call %u to %s: %s", o->proc, host,
				rc < 0 ? strerror(-rc) : "refused");
		}
		free(o);
		o = next;
	}
}

/* Text address -> sockaddr (port 0); false when it is none. */
static bool addr_parse(const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, text, &s4->sin_addr) == 1)
		s4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1)
		s6->sin6_family = AF_INET6;
	return ss->ss_family != 0;
}

/*
 * SM_NOTIFY to the hosts recorded before the restart, at their recorded
 * address, from the server address they called.  mon_name: [mds] nsm_name,
 * else that server address (what a Linux client's statd monitors: its
 * kernel names servers by address), else the host name.
 */
static bool notify_pass(struct mds_nlm *n)
{
	bool pending = false;
	uint64_t now = nfsd_now_ns();
	for (;;) {
		char name[LM_MAXSTRLEN + 1], addr[INET6_ADDRSTRLEN], local[INET6_ADDRSTRLEN];
		struct nlm_host *h;
		pthread_mutex_lock(&n->mu);
		for (h = n->hosts; h; h = h->next) {
			if (!h->prev || h->notified || h->tries >= NSM_TRIES)
				continue;
			pending = true;
			if (h->next_ns <= now)
				break;
		}
		if (h) {
			h->tries++;
			h->next_ns = now + (2000000000ull << (h->tries - 1));
			memcpy(name, h->name, sizeof(name));
			memcpy(addr, h->addr, sizeof(addr));
			memcpy(local, h->local, sizeof(local));
		}
		pthread_mutex_unlock(&n->mu);
		if (!h)
			return pending;
		struct sockaddr_storage ss, src;
		bool have_src = local[0] && addr_parse(local, &src);
		const char *mon = n->mds->set.nsm_name[0] || !have_src ? n->nsm_name : local;
		int rc = -EINVAL;
		if (!addr_parse(addr, &ss))
			goto done;
		const struct sockaddr_storage *from = have_src ? &src : NULL;
		int port = getport(n, &ss, from, SM_PROG, SM_VERS);
		rc = port;
		if (port > 0) {
			sm_stat_chge a = {.mon_name = xdr_string_of(mon), .state = n->nsm_state};
			rc = call_at(n, &ss, from, port, SM_PROG, SM_VERS, SM_NOTIFY,
				     (xdr_enc_fn)xdr_enc_sm_stat_chge, &a, NULL, NULL, NULL);
		}
	done:
		pthread_mutex_lock(&n->mu);
		if ((h = host_get(n, name, false)) && !rc)
			h->notified = true;
		pthread_mutex_unlock(&n->mu);
		if (rc)
			mds_log("nsm: SM_NOTIFY to %s at %s: %s", name, addr,
				rc < 0 ? strerror(-rc) : "refused");
	}
}

/* After grace and the notifications: hosts from before the restart that
 * hold no lock now (did not come back, or reclaimed nothing) are forgotten. */
static void forget_pass(struct mds_nlm *n)
{
	for (;;) {
		char name[LM_MAXSTRLEN + 1];
		struct nlm_host *h;
		pthread_mutex_lock(&n->rec_mu);
		pthread_mutex_lock(&n->mu);
		for (h = n->hosts; h; h = h->next)
			if (h->prev && h->recorded && !mds_lock_nlm_host_busy(n->mds, &h->locks))
				break;
		if (h) {
			h->recorded = h->prev = false;
			memcpy(name, h->name, sizeof(name));
		}
		pthread_mutex_unlock(&n->mu);
		if (h)
			forget_host(n->mds, name);
		pthread_mutex_unlock(&n->rec_mu);
		if (!h)
			return;
	}
}

static void *nlm_thread(void *arg)
{
	struct mds_nlm *n = arg;
	nfsd_thread_block_signals();
	for (;;) {
		pthread_mutex_lock(&n->wake_mu);
		if (!n->kicked && !n->stop) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += NLM_POLL_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&n->wake, &n->wake_mu, &ts);
		}
		bool stop = n->stop;
		n->kicked = false;
		pthread_mutex_unlock(&n->wake_mu);
		if (stop)
			break;
		out_pass(n);
		pthread_mutex_lock(&n->mu);
		bool waiting = n->blocks != NULL;
		pthread_mutex_unlock(&n->mu);
		if (waiting) /* an NFSv4 holder's lease may have run out */
			nfs41_server_sweep(n->mds->v41);
		grant_pass(n);
		bool pending = notify_pass(n);
		if (!n->forgot && !pending && !mds_state_in_grace(n->mds)) {
			forget_pass(n);
			n->forgot = true;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ start and stop */

#define P4(num, fname) [NLMPROC4_##num] = {.name = #num, .fn = fname}

int mds_nlm_init(struct braid_mds *mds, char *msg, size_t msglen)
{
	if (!mds->set.nlm || !mds->set.nfs3)
		return 0;
	struct mds_nlm *n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	n->mds = mds;
	pthread_mutex_init(&n->rec_mu, NULL);
	pthread_mutex_init(&n->mu, NULL);
	pthread_mutex_init(&n->wake_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->wake, &ca);
	pthread_condattr_destroy(&ca);
	n->out_tail = &n->out;
	mds->nlm = n;
	if (mds->set.nsm_name[0])
		snprintf(n->nsm_name, sizeof(n->nsm_name), "%s", mds->set.nsm_name);
	else if (gethostname(n->nsm_name, sizeof(n->nsm_name) - 1))
		snprintf(n->nsm_name, sizeof(n->nsm_name), "localhost");

	static const struct nfsd_proc procs[NLMPROC4_FREE_ALL + 1] = {
	    [NLMPROC4_NULL] = {.name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE},
	    P4(TEST, p_test),
	    P4(LOCK, p_lock),
	    P4(CANCEL, p_cancel),
	    P4(UNLOCK, p_unlock),
	    P4(GRANTED, p_granted),
	    P4(TEST_MSG, p_test_msg),
	    P4(LOCK_MSG, p_lock_msg),
	    P4(CANCEL_MSG, p_cancel_msg),
	    P4(UNLOCK_MSG, p_unlock_msg),
	    P4(GRANTED_MSG, p_granted_msg),
	    P4(TEST_RES, p_res_ignored),
	    P4(LOCK_RES, p_res_ignored),
	    P4(CANCEL_RES, p_res_ignored),
	    P4(UNLOCK_RES, p_res_ignored),
	    P4(GRANTED_RES, p_granted_res),
	    P4(SHARE, p_share),
	    P4(UNSHARE, p_share),
	    P4(NM_LOCK, p_nm_lock),
	    P4(FREE_ALL, p_free_all),
	};
	memcpy(n->procs, procs, sizeof(procs));
	nfsd_procs_bind(n->procs, NLMPROC4_FREE_ALL + 1, &xdr_desc_NLM_PROG_NLM4_VERS);
	n->vers[0] = (struct nfsd_version){
	    .vers = NLM4_VERS, .procs = n->procs, .nprocs = NLMPROC4_FREE_ALL + 1};
	n->prog = (struct nfsd_program){
	    .prog = NLM_PROG, .name = "nlockmgr", .versions = n->vers, .nversions = 1, .priv = mds};
	n->sm_procs[SM_NULL] =
	    (struct nfsd_proc){.name = "NULL", .fn = p_null, .flags = NFSD_PROC_INLINE};
	n->sm_procs[SM_NOTIFY] = (struct nfsd_proc){.name = "NOTIFY", .fn = p_sm_notify};
	nfsd_procs_bind(n->sm_procs, SM_NOTIFY + 1, &xdr_desc_SM_PROG_SM_VERS);
	n->sm_vers[0] =
	    (struct nfsd_version){.vers = SM_VERS, .procs = n->sm_procs, .nprocs = SM_NOTIFY + 1};
	n->sm_prog = (struct nfsd_program){
	    .prog = SM_PROG, .name = "status", .versions = n->sm_vers, .nversions = 1, .priv = mds};

	int rc = mds_client_list(mds->store, host_load, n);
	if (rc) {
		snprintf(msg, msglen, "NSM records: %s", strerror(-rc));
		return rc;
	}
	/* XNFS 11: odd while up; an odd number found means we did not stop cleanly */
	n->nsm_state = (n->nsm_state & 1) ? n->nsm_state + 2 : n->nsm_state + 1;
	if ((rc = record_state(mds, n->nsm_state))) {
		snprintf(msg, msglen, "NSM state: %s", strerror(-rc));
		return rc;
	}
	unsigned nprev = 0;
	for (struct nlm_host *h = n->hosts; h; h = h->next)
		nprev++;
	if (nprev) {
		mds_log("nsm: state %d; %u host(s) held NLM locks before the restart", n->nsm_state,
			nprev);
		mds_state_grace_hold(mds);
	}
	return 0;
}

const struct nfsd_program *mds_nlm_program(struct braid_mds *mds)
{
	return mds->nlm ? &mds->nlm->prog : NULL;
}

const struct nfsd_program *mds_nsm_program(struct braid_mds *mds)
{
	return mds->nlm ? &mds->nlm->sm_prog : NULL;
}

int mds_nlm_start(struct braid_mds *mds, char *msg, size_t msglen)
{
	struct mds_nlm *n = mds->nlm;
	if (!n)
		return 0;
	int rc = 0;
	if (!(n->eng = nfsd_client_engine_new(1, 0, &rc))) {
		snprintf(msg, msglen, "NLM client engine: %s", strerror(-rc));
		return rc;
	}
	if ((rc = -pthread_create(&n->thread, NULL, nlm_thread, n))) {
		snprintf(msg, msglen, "NLM thread: %s", strerror(-rc));
		return rc;
	}
	n->started = true;
	return 0;
}

void mds_nlm_kick(struct braid_mds *mds)
{
	struct mds_nlm *n = mds->nlm;
	if (!n)
		return;
	pthread_mutex_lock(&n->wake_mu);
	n->kicked = true;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->wake_mu);
}

void mds_nlm_stop(struct braid_mds *mds)
{
	struct mds_nlm *n = mds->nlm;
	if (!n)
		return;
	if (n->started) {
		pthread_mutex_lock(&n->wake_mu);
		n->stop = true;
		pthread_cond_signal(&n->wake);
		pthread_mutex_unlock(&n->wake_mu);
		pthread_join(n->thread, NULL);
		n->started = false;
		/* a clean stop: even (down) until the next start */
		int rc = record_state(mds, n->nsm_state + 1);
		if (rc)
			mds_log("nsm: recording state: %s", strerror(-rc));
	}
	if (n->eng) {
		nfsd_server_free(n->eng);
		n->eng = NULL;
	}
}

static void block_list_free(struct nlm_block *b)
{
	while (b) {
		struct nlm_block *next = b->next;
		free(b);
		b = next;
	}
}

void mds_nlm_release(struct braid_mds *mds)
{
	struct mds_nlm *n = mds->nlm;
	if (!n)
		return;
	mds_nlm_stop(mds);
	while (n->hosts) {
		struct nlm_host *h = n->hosts;
		n->hosts = h->next;
		if (mds->state)
			mds_lock_nlm_drop_host(mds, &h->locks);
		free(h);
	}
	block_list_free(n->blocks);
	block_list_free(n->granting);
	while (n->shares) {
		struct nlm_share *s = n->shares;
		n->shares = s->next;
		free(s);
	}
	while (n->out) {
		struct nlm_out *o = n->out;
		n->out = o->next;
		free(o);
	}
	pthread_mutex_destroy(&n->rec_mu);
	pthread_mutex_destroy(&n->mu);
	pthread_mutex_destroy(&n->wake_mu);
	pthread_cond_destroy(&n->wake);
	free(n);
	mds->nlm = NULL;
}
