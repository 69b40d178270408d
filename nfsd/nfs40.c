/* SPDX-License-Identifier: MIT */
/*
 * NFSv4.0 client IDs (RFC 7530 §9.1.1, §16.33, §16.34, §16.29): SETCLIENTID,
 * SETCLIENTID_CONFIRM and RENEW, the callback addresses they carry, and the
 * lookups an embedder's 4.0 operations make (nfs41_compound_v40_client,
 * nfs41_client_cb40).  The records are the session layer's (struct
 * nfs41_client with v40 set, in the same tables), so client IDs are unique
 * across 4.0 and 4.1 and the client_expired hook ends both alike.  Records
 * and locks: nfsd/nfs41_impl.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/nfs41_impl.h"

/* ------------------------------------------------------------ callback addresses */

/* A universal address (RFC 5665 §5.2.3.3/4): "h1.h2.h3.h4.p1.p2" (tcp) or
 * "x:...:x.p1.p2" (tcp6).  0, or -EINVAL. */
static int uaddr_parse(const xdr_string *netid, const xdr_string *uaddr,
		       struct sockaddr_storage *out)
{
	char a[INET6_ADDRSTRLEN + 16];
	bool v6;
	if (netid->len == 3 && !memcmp(netid->val, "tcp", 3))
		v6 = false;
	else if (netid->len == 4 && !memcmp(netid->val, "tcp6", 4))
		v6 = true;
	else
		return -EINVAL;
	if (uaddr->len >= sizeof(a) || memchr(uaddr->val, 0, uaddr->len))
		return -EINVAL;
	memcpy(a, uaddr->val, uaddr->len);
	a[uaddr->len] = 0;
	char *d2 = strrchr(a, '.');
	if (!d2)
		return -EINVAL;
	*d2 = 0;
	char *d1 = strrchr(a, '.');
	if (!d1)
		return -EINVAL;
	*d1 = 0;
	char *end;
	unsigned long p1 = strtoul(d1 + 1, &end, 10);
	if (*end || end == d1 + 1 || p1 > 255)
		return -EINVAL;
	unsigned long p2 = strtoul(d2 + 1, &end, 10);
	if (*end || end == d2 + 1 || p2 > 255)
		return -EINVAL;
	uint16_t port = (uint16_t)(p1 << 8 | p2);
	memset(out, 0, sizeof(*out));
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;
		if (inet_pton(AF_INET6, a, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)out;
		if (inet_pton(AF_INET, a, &s4->sin_addr) != 1)
			return -EINVAL;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	}
	return 0;
}

/* The IPv4 address of an AF_INET or v4-mapped AF_INET6 address. */
static bool addr_v4(const struct sockaddr_storage *a, struct in_addr *out)
{
	if (a->ss_family == AF_INET) {
		*out = ((const struct sockaddr_in *)a)->sin_addr;
		return true;
	}
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
	if (a->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memcpy(&out->s_addr, &s6->sin6_addr.s6_addr[12], 4);
		return true;
	}
	return false;
}

/* The same IP address (ports aside). */
static bool addr_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	struct in_addr x, y;
	bool ax = addr_v4(a, &x), by = addr_v4(b, &y);
	if (ax || by)
		return ax && by && x.s_addr == y.s_addr;
	if (a->ss_family != AF_INET6 || b->ss_family != AF_INET6)
		return false;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

/*
 * The callback of a SETCLIENTID.  It is dialable only when its address is
 * the IP address the SETCLIENTID came from: the server never connects
 * anywhere else on a client's word (no probing of third hosts, and a
 * client behind NAT that names its inside address gets no callbacks, not
 * a connection to some other host's port).
 */
static void cb_parse(const SETCLIENTID4args *sa, const struct nfsd_req *req, struct cb40 *cb)
{
	memset(cb, 0, sizeof(*cb));
	cb->prog = sa->callback.cb_program;
	cb->ident = sa->callback_ident;
	if (uaddr_parse(&sa->callback.cb_location.na_r_netid, &sa->callback.cb_location.na_r_addr,
			&cb->addr)) {
		cb->addr.ss_family = 0;
		return;
	}
	cb->dialable = req->conn && addr_same_ip(&cb->addr, nfsd_req_peer(req));
}

static void verf_new(uint8_t *v)
{
	uint32_t a = nfs41_rand32(), b = nfs41_rand32();
	memcpy(v, &a, 4);
	memcpy(v + 4, &b, 4);
}

/* ------------------------------------------------------------ SETCLIENTID */

/* RFC 7530 §16.33; the cases of §16.33.5 as the comments name them. */
nfsstat4 nfs40_op_setclientid(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	struct nfs41_server *s = c->srv;
	SETCLIENTID4args *sa = &a->u.opsetclientid;
	SETCLIENTID4resok *ok = &r->u.opsetclientid.u.resok4;
	const xdr_opaque *owner = &sa->client.id;
	struct nfs41_client *dead = NULL;
	uint64_t now = nfsd_now_ns();
	nfsstat4 st = NFS4_OK;

	if (owner->len > NFS4_OPAQUE_LIMIT)
		return NFS4ERR_INVAL;
	struct cb40 cb;
	cb_parse(sa, c->req, &cb);

	/* another principal's confirmed record is in use while it holds
	 * state: asked of the embedder without our lock */
	uint64_t other = 0;
	bool other_busy = false;
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *x = nfs40_owner_find_locked(s, owner, true, now, &dead);
	if (x && !nfs41_client_princ_eq(x, c->req))
		other = x->id;
	pthread_mutex_unlock(&s->lock);
	if (other && s->o.client_has_state)
		other_busy = s->o.client_has_state(s->o.priv, other);

	pthread_mutex_lock(&s->lock);
	struct nfs41_client *conf = nfs40_owner_find_locked(s, owner, true, now, &dead);
	struct nfs41_client *unconf = nfs40_owner_find_locked(s, owner, false, now, &dead);
	if (conf && !nfs41_client_princ_eq(conf, c->req) && (conf->id != other || other_busy)) {
		/* another principal's client ID, holding state */
		st = NFS4ERR_CLID_INUSE;
		r->u.opsetclientid.u.client_using.na_r_netid = xdr_string_of("");
		r->u.opsetclientid.u.client_using.na_r_addr = xdr_string_of("");
	} else if (conf && nfs41_client_princ_eq(conf, c->req) &&
		   !memcmp(conf->verf, sa->client.verifier, sizeof(conf->verf))) {
		/* case 1 (and 2): a callback update of the confirmed ID, in
		 * effect once SETCLIENTID_CONFIRM sends the new verifier */
		if (unconf)
			nfs41_client_unlink_locked(s, unconf, &dead);
		conf->upd_pending = true;
		conf->upd_cb = cb;
		verf_new(conf->upd_confirm);
		conf->expire_ns = now + nfs41_lease_ns(s);
		ok->clientid = conf->id;
		memcpy(ok->setclientid_confirm, conf->upd_confirm, sizeof(verifier4));
	} else {
		/* case 2 (new client), 3 (a rebooted client: a new verifier),
		 * 4 (replacing an unconfirmed record), or another principal's
		 * record holding nothing: a new client ID, confirmed (and the
		 * old one ended) by SETCLIENTID_CONFIRM */
		if (unconf)
			nfs41_client_unlink_locked(s, unconf, &dead);
		struct nfs41_client *n =
		    nfs41_client_new_locked(s, owner, sa->client.verifier, c->req, now);
		if (!n) {
			st = NFS4ERR_RESOURCE;
		} else {
			n->v40 = true;
			n->cb = cb;
			if ((n->has_peer = c->req->conn != NULL))
				n->peer = *nfsd_req_peer(c->req);
			verf_new(n->confirm);
			ok->clientid = n->id;
			memcpy(ok->setclientid_confirm, n->confirm, sizeof(verifier4));
		}
	}
	pthread_mutex_unlock(&s->lock);
	nfs41_client_reap(s, dead);
	return st;
}

/* RFC 7530 §16.34 */
nfsstat4 nfs40_op_setclientid_confirm(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	(void)r;
	struct nfs41_server *s = c->srv;
	SETCLIENTID_CONFIRM4args *ca = &a->u.opsetclientid_confirm;
	struct nfs41_client *dead = NULL;
	uint64_t now = nfsd_now_ns();
	nfsstat4 st = NFS4_OK;
	bool changed = false;

	pthread_mutex_lock(&s->lock);
	struct nfs41_client *clp = nfs41_client_find_locked(s, ca->clientid, now, &dead);
	if (!clp || !clp->v40) {
		st = NFS4ERR_STALE_CLIENTID;
	} else if (!nfs41_client_princ_eq(clp, c->req)) {
		st = NFS4ERR_CLID_INUSE;
	} else if (!clp->confirmed) {
		if (memcmp(clp->confirm, ca->setclientid_confirm, sizeof(verifier4))) {
			st = NFS4ERR_STALE_CLIENTID;
		} else {
			/* the old confirmed ID of this owner (a rebooted
			 * client's, or another principal's without state) ends */
			xdr_opaque o = xdr_opaque_of(clp->owner, clp->owner_len);
			struct nfs41_client *old = nfs40_owner_find_locked(s, &o, true, now, &dead);
			if (old)
				nfs41_client_unlink_locked(s, old, &dead);
			clp->confirmed = true;
			clp->cb_gen++;
			changed = true;
		}
	} else if (clp->upd_pending &&
		   !memcmp(clp->upd_confirm, ca->setclientid_confirm, sizeof(verifier4))) {
		clp->cb = clp->upd_cb; /* case 1: the new callback */
		memcpy(clp->confirm, clp->upd_confirm, sizeof(verifier4));
		clp->upd_pending = false;
		clp->cb_gen++;
		changed = true;
	} else if (memcmp(clp->confirm, ca->setclientid_confirm, sizeof(verifier4))) {
		st = NFS4ERR_STALE_CLIENTID;
	} /* else a retransmission: nothing more to do */
	if (!st)
		clp->expire_ns = now + nfs41_lease_ns(s);
	pthread_mutex_unlock(&s->lock);
	nfs41_client_reap(s, dead);
	if (changed && s->o.cb40_changed)
		s->o.cb40_changed(s->o.priv, ca->clientid);
	return st;
}

/* ------------------------------------------------------------ leases */

nfsstat4 nfs41_compound_v40_client(struct nfs41_compound *c, uint64_t clientid)
{
	struct nfs41_server *s = c->srv;
	struct nfs41_client *dead = NULL;
	uint64_t now = nfsd_now_ns();
	nfsstat4 st = NFS4_OK;
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *clp = nfs41_client_find_locked(s, clientid, now, &dead);
	if (!clp || !clp->v40 || !clp->confirmed)
		st = NFS4ERR_STALE_CLIENTID;
	else
		clp->expire_ns = now + nfs41_lease_ns(s); /* §9.5: implicit renewal */
	pthread_mutex_unlock(&s->lock);
	nfs41_client_reap(s, dead);
	if (!st)
		c->clientid = clientid;
	return st;
}

/* RFC 7530 §16.29 */
nfsstat4 nfs40_op_renew(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	(void)r;
	struct nfs41_server *s = c->srv;
	uint64_t id = a->u.oprenew.clientid;
	nfsstat4 st = nfs41_compound_v40_client(c, id);
	if (st)
		return st;
	/* §16.29.4: the client learns that its callbacks cannot reach it
	 * while it holds delegations */
	if (s->o.cb_path_down && s->o.cb_path_down(s->o.priv, id))
		return NFS4ERR_CB_PATH_DOWN;
	return NFS4_OK;
}

int nfs41_client_cb40(struct nfs41_server *s, uint64_t clientid, struct nfs41_cb40 *out)
{
	int rc = -ENOENT;
	struct nfs41_client *dead = NULL;
	pthread_mutex_lock(&s->lock);
	struct nfs41_client *clp = nfs41_client_find_locked(s, clientid, nfsd_now_ns(), &dead);
	if (clp && clp->v40 && clp->confirmed) {
		memset(out, 0, sizeof(*out));
		out->prog = clp->cb.prog;
		out->ident = clp->cb.ident;
		out->gen = clp->cb_gen;
		out->addr = clp->cb.addr;
		out->dialable = clp->cb.dialable;
		rc = 0;
	}
	pthread_mutex_unlock(&s->lock);
	nfs41_client_reap(s, dead);
	return rc;
}
