/* SPDX-License-Identifier: MIT */
/*
 * /etc/exports in exports(5) syntax, and the two questions a request asks
 * of it: which client entry applies to this peer, and what its credential
 * becomes after squashing.
 *
 *	/srv/data   10.0.0.0/8(rw,no_root_squash) *.lab.example.com(ro) \
 *	            2001:db8::/32(rw,sec=krb5p:krb5i)
 *	"/srv/with space"  -rw,async  host1 host2(ro)
 *	/srv/public
 *
 * A line is a path and client entries; '#' starts a comment where a token
 * could start; a backslash before the newline continues the line.  The path
 * may be quoted, and \ooo octal escapes in it (\040 for a space) are
 * decoded.  A '-opts' token right after the path sets the line's defaults
 * for its clients.  A path with no client means '*' with those defaults.
 * The same path on several lines is one export, its clients in file order.
 *
 * Refused, each with file:line and the reason: @netgroup clients (not
 * supported), options with no client ('/srv (rw)': the space makes the
 * options apply to everyone in knfsd, which is almost never what was
 * meant), unknown options, a second sec= for one client (knfsd's
 * per-flavor options are not supported), a client listed twice for one
 * path, paths that are relative or contain '.' or '..'.
 *
 * Defaults are knfsd's: ro, root_squash, no_all_squash, sync, secure,
 * no_subtree_check, no_pnfs, sec=sys, anonuid=anongid=65534, no fsid.
 */
#ifndef BRAID_MDS_EXPORTS_H
#define BRAID_MDS_EXPORTS_H

#include <stdint.h>
#include <sys/socket.h>

#include "nfsd/conf.h"

/* Client specifiers, in the precedence order of exports(5). */
enum export_client_kind {
	EXPORT_CLIENT_HOST = 1, /* one host: an IPv4/IPv6 literal or a name */
	EXPORT_CLIENT_NET,      /* a.b.c.d/len, a.b.c.d/a.b.c.d, ipv6/len */
	EXPORT_CLIENT_WILDCARD, /* a name pattern with *, ? or [...] */
	EXPORT_CLIENT_ANY,      /* '*' */
};

/* Option flags; a clear bit is the default (ro, sync, secure, ...). */
#define EXPORT_RW            0x01u
#define EXPORT_ROOT_SQUASH   0x02u /* set by default; no_root_squash clears it */
#define EXPORT_ALL_SQUASH    0x04u
#define EXPORT_ASYNC         0x08u
#define EXPORT_INSECURE      0x10u /* accept source ports >= 1024 */
#define EXPORT_SUBTREE_CHECK 0x20u /* recorded; Braid does no subtree checking */
#define EXPORT_PNFS          0x40u
#define EXPORT_DEFAULT_FLAGS EXPORT_ROOT_SQUASH

/* sec= flavors as RPC flavor numbers; krb5* are RFC 2623 §2.2 pseudo-flavors. */
#define EXPORT_SEC_NONE  0u
#define EXPORT_SEC_SYS   1u
#define EXPORT_SEC_KRB5  390003u
#define EXPORT_SEC_KRB5I 390004u
#define EXPORT_SEC_KRB5P 390005u
#define EXPORT_SEC_MAX   5

enum export_fsid_kind {
	EXPORT_FSID_NONE = 0,
	EXPORT_FSID_NUM,  /* fsid=N, N > 0 */
	EXPORT_FSID_ROOT, /* fsid=root or fsid=0: the NFSv4 pseudo-root */
	EXPORT_FSID_UUID, /* fsid=<32 hex digits, '-' or ':' anywhere> */
};

/* One client entry of an export, with its options.  Owned by struct exports. */
struct export_client {
	enum export_client_kind kind;
	char *spec;        /* as written, without the options: "10.0.0.0/8" */
	int family;        /* HOST, NET: AF_INET or AF_INET6; 0 for a HOST by name */
	uint8_t addr[16];  /* network byte order, bits past 'prefix' clear */
	unsigned prefix;   /* bits of addr that must match */
	unsigned flags;    /* EXPORT_* */
	uint32_t anonuid, anongid;
	uint32_t sec[EXPORT_SEC_MAX]; /* in the order given */
	unsigned nsec;
	enum export_fsid_kind fsid_kind;
	uint32_t fsid;     /* EXPORT_FSID_NUM */
	uint8_t uuid[16];  /* EXPORT_FSID_UUID */
	/* layout=: the export's layout policy as written, its parts ':'-separated
	 * ("segments:segment_size=64M"); braid-mds checks it.  "" when not given */
	char layout[96];
	unsigned line;
};

struct export_entry {
	char *path; /* absolute, no '//', no trailing '/' (except "/") */
	struct export_client *clients;
	unsigned nclients;
	unsigned line; /* where the path first appears */
};

/* Read-only once parsed: any number of threads may match against it. */
struct exports {
	struct export_entry *v;
	unsigned n;
};

/* 0, or -EINVAL (syntax), -ENOENT, -ENOMEM, other -errno with err filled. */
int exports_load(const char *path, struct exports **out, struct conf_error *err);
/* The same over NUL-terminated text; 'name' stands for the file in errors. */
int exports_parse_string(const char *name, const char *text, struct exports **out,
			 struct conf_error *err);
void exports_free(struct exports *ex);

/*
 * The export of 'path' (normalized as the file's paths are), or NULL.  A
 * linear scan, as is exports_match(): callers cache what they look up.
 */
const struct export_entry *exports_find(const struct exports *ex, const char *path);

/*
 * The client entry of 'path' that applies to 'peer' (AF_INET or AF_INET6;
 * IPv4-mapped IPv6 matches IPv4 entries), or NULL.  As exports(5) says:
 * the first match of the most specific class wins, classes in the order
 * single host, network, wildcard, '*'; line order only breaks ties within
 * a class (so 10.0.0.0/8 listed before 10.1.0.0/16 wins for 10.1.2.3).
 * Names (hosts by name, wildcards) match 'peer_hostname', the caller's
 * reverse lookup of the peer, case-insensitively; with NULL they match
 * nothing.  This library does no DNS.
 */
const struct export_client *exports_match(const struct exports *ex, const char *path,
					  const struct sockaddr *peer, const char *peer_hostname);

/*
 * Squash a credential as knfsd does (nfsd_setuser()): all_squash makes it
 * anonuid/anongid with no groups; root_squash maps uid 0 to anonuid, and
 * gid 0, as the primary group or in the list, to anongid (whatever the
 * uid); in every case uid or gid (uint32_t)-1 becomes anonuid or anongid.
 * 'groups' holds *ngroups entries; ngroups may be NULL for none.
 */
void export_squash(const struct export_client *c, uint32_t *uid, uint32_t *gid,
		   uint32_t *groups, uint32_t *ngroups);

#endif
