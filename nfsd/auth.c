/* SPDX-License-Identifier: MIT */
/*
 * AUTH_NONE and AUTH_SYS (RFC 5531 §10 and appendix A), and server-side
 * group resolution for AUTH_SYS users in more than 16 groups (the wire
 * carries at most 16; with manage_gids the server's own group database wins,
 * as knfsd's rpc.mountd --manage-gids does).
 */
#include "config.h"

#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "nfsd/engine.h"

static int none_accept(struct nfsd_req *r, const xdr_opaque *cred, const xdr_opaque *verf)
{
	/* RFC 5531 §10.1: the AUTH_NONE body is empty. */
	if (cred->len != 0)
		return NFSD_AUTH_BADCRED;
	r->cred.uid = r->cred.gid = 65534;
	return NFSD_AUTH_OK;
}

/* Decode authsys_parms into req->cred; groups come from the request arena. */
static int sys_accept(struct nfsd_req *r, const xdr_opaque *cred, const xdr_opaque *verf)
{
	struct xdr_dec d;
	uint32_t n;
	xdr_dec_init(&d, cred->val, cred->len, &r->arena);
	if (xdr_dec_uint32(&d, &r->cred.stamp) || xdr_dec_string(&d, &r->cred.machine, 255) ||
	    xdr_dec_uint32(&d, &r->cred.uid) || xdr_dec_uint32(&d, &r->cred.gid) ||
	    xdr_dec_uint32(&d, &n) || n > 16 || xdr_dec_left(&d) != 4u * n)
		return NFSD_AUTH_BADCRED;
	r->cred.groups = n ? xdr_arena_alloc(&r->arena, 4u * n) : NULL;
	if (n && !r->cred.groups)
		return NFSD_AUTH_BADCRED;
	for (uint32_t i = 0; i < n; i++)
		xdr_dec_uint32(&d, &r->cred.groups[i]);
	r->cred.ngroups = n;
	return NFSD_AUTH_OK;
}

const struct nfsd_auth_flavor nfsd_auth_none = {
	.flavor = NFSD_AUTH_NONE,
	.name = "none",
	.accept = none_accept,
};
const struct nfsd_auth_flavor nfsd_auth_sys = {
	.flavor = NFSD_AUTH_SYS,
	.name = "sys",
	.accept = sys_accept,
};

/* ---------------------------------------------------------- group cache */

#define GID_CACHE_SIZE 1024

struct gid_entry {
	uint32_t uid;
	bool valid;
	uint32_t ngroups;
	uint32_t *groups; /* malloc'd */
	uint64_t expires_ns;
};

/* gid_lock guards gid_cache and its entries' contents. */
static pthread_mutex_t gid_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gid_entry gid_cache[GID_CACHE_SIZE];
static bool gid_manage;
static unsigned gid_ttl_s = 300;

void nfsd_auth_set_manage_gids(bool on, unsigned ttl_s)
{
	pthread_mutex_lock(&gid_lock);
	gid_manage = gid_manage || on;
	if (ttl_s)
		gid_ttl_s = ttl_s;
	pthread_mutex_unlock(&gid_lock);
}

/* Look the user up in the server's databases; -ENOENT for unknown users. */
static int lookup_groups(uint32_t uid, uint32_t **out, uint32_t *nout)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) || !res)
		return -ENOENT;
	int n = 64;
	gid_t *g = NULL;
	for (;;) {
		gid_t *ng = realloc(g, sizeof(gid_t) * (size_t)n);
		if (!ng) {
			free(g);
			return -ENOMEM;
		}
		g = ng;
		int want = n;
		if (getgrouplist(pw.pw_name, pw.pw_gid, g, &want) >= 0) {
			n = want;
			break;
		}
		if (want <= n || want > NFSD_NGROUPS_MAX) {
			n = n < NFSD_NGROUPS_MAX ? n : NFSD_NGROUPS_MAX;
			break;
		}
		n = want;
	}
	*out = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
	if (!*out) {
		free(g);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		(*out)[i] = g[i];
	*nout = (uint32_t)n;
	free(g);
	return 0;
}

/* Replace the wire's groups with the server's view of the user (cached). */
int nfsd_auth_resolve_groups(struct nfsd_req *r)
{
	uint32_t uid = r->cred.uid;
	struct gid_entry *e = &gid_cache[uid % GID_CACHE_SIZE];
	uint64_t now = nfsd_now_ns();
	pthread_mutex_lock(&gid_lock);
	if (!e->valid || e->uid != uid || e->expires_ns < now) {
		uint32_t *g = NULL, n = 0;
		pthread_mutex_unlock(&gid_lock);
		int rc = lookup_groups(uid, &g, &n);
		if (rc == -ENOMEM)
			return rc;
		pthread_mutex_lock(&gid_lock);
		free(e->groups);
		e->groups = g;
		e->ngroups = rc ? 0 : n;
		e->uid = uid;
		e->valid = true;
		e->expires_ns = now + (uint64_t)gid_ttl_s * 1000000000ull;
		if (rc) {
			/* Unknown here: keep what the client sent. */
			pthread_mutex_unlock(&gid_lock);
			return 0;
		}
	}
	if (e->ngroups) {
		uint32_t *g = xdr_arena_alloc(&r->arena, 4u * e->ngroups);
		if (g) {
			memcpy(g, e->groups, 4u * e->ngroups);
			r->cred.groups = g;
			r->cred.ngroups = e->ngroups;
		}
	}
	pthread_mutex_unlock(&gid_lock);
	return 0;
}
