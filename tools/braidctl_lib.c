/* SPDX-License-Identifier: MIT */
/* braidctl's library: see tools/braidctl_lib.h and braidctl(8). */
#include "config.h"

#include "braid_admin.h"
#include "braid_ctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mds/mds.h"
#include "nfsd/auth_braid.h"
#include "nfsd/mac.h"
#include "nfsd/rpc.h"
#include "tools/braidctl_lib.h"

#define DEFAULT_CONFIG "/etc/braid/mds.conf"
#define DEFAULT_PORT   2049
#define PAGE	       BRAID_ADMIN_LIST_MAX

struct braidctl {
	struct braidctl_opts o;
	FILE *out, *err;
	char where[128]; /* "127.0.0.1:2049", for messages */
	char key_path[PATH_MAX];
	struct braid_key key;
	struct nfsd_server *eng;
	struct nfsd_clnt *c;
};

static void errorf(struct braidctl *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void errorf(struct braidctl *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("braidctl: ", b->err);
	vfprintf(b->err, fmt, ap);
	fputc('\n', b->err);
	va_end(ap);
}

void braidctl_usage(FILE *f)
{
	fprintf(
	    f, "usage: braidctl [-c FILE | --mds HOST:PORT --key FILE] [--json] COMMAND\n"
	       "  -c, --config FILE   braid-mds settings: [mds] listen and key_file\n"
	       "                      (default " DEFAULT_CONFIG ")\n"
	       "  --mds HOST:PORT     where braid-mds listens (default: its first listen address)\n"
	       "  --key FILE          the cluster key (default: [mds] key_file)\n"
	       "  --json              print JSON instead of tables\n"
	       "commands:\n"
	       "  status                   the MDS and every data server\n"
	       "  ds list                  data servers: addresses, space, health\n"
	       "  ds drain ID              place no new data there, move its data off\n"
	       "  ds add ID                let placement use it again (undo drain)\n"
	       "  ds remove [--force] ID   forget a drained data server no file uses\n"
	       "  ds lost ID               a data server gone for good: rebuild its copies\n"
	       "  rebalance                move data onto the emptiest data servers\n"
	       "  rebuild                  stale copies, resilver and rebuild progress,\n"
	       "                           files that cannot be recovered\n"
	       "  exports list             the exports in force\n"
	       "  exports reload           re-read the exports file\n"
	       "  clients                  NFSv4.1 clients: sessions, leases, state, layouts\n"
	       "  layout PATH              where each segment and mirror of a file lives\n"
	       "  policy get DIR           the layout policy new files in DIR take\n"
	       "  policy set DIR POLICY    e.g. segments,segment_size=16M,width=4,mirrors=2\n"
	       "  policy unset DIR         remove DIR's own policy (inherit again)\n"
	       "  ec status                erasure coding: sealing, the last scrub, raw and\n"
	       "                           logical space\n"
	       "  ec scrub PATH            verify a file's parity now, repair what is wrong\n"
	       "  recall PATH              recall every layout of a file\n"
	       "  recall --client ID       recall every layout a client holds\n"
	       "  top [--interval S] [--count N]\n"
	       "                           operations per second and latency per operation,\n"
	       "                           client and data server, refreshed (--json: one\n"
	       "                           object per interval)\n"
	       "See braidctl(8).\n");
}

/* ------------------------------------------------------------ connecting */

/* "HOST:PORT", "[V6]:PORT", "V6" or "HOST": a socket address. */
static int addr_resolve(const char *spec, struct sockaddr_storage *ss, socklen_t *len, char *why,
			size_t whylen)
{
	char host[256], port[16];
	snprintf(port, sizeof(port), "%d", DEFAULT_PORT);
	const char *colon = strrchr(spec, ':');
	if (spec[0] == '[') {
		const char *end = strchr(spec, ']');
		if (!end || (end[1] && end[1] != ':')) {
			snprintf(why, whylen, "'%s': expected [IPV6]:PORT", spec);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(end - spec - 1), spec + 1);
		if (end[1])
			snprintf(port, sizeof(port), "%s", end + 2);
	} else if (colon && strchr(spec, ':') == colon) {
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		snprintf(port, sizeof(port), "%s", colon + 1);
	} else {
		snprintf(host, sizeof(host), "%s", spec); /* a name, or a bare IPv6 literal */
	}
	char *e;
	long p = strtol(port, &e, 10);
	if (!*port || *e || p <= 0 || p > 65535) {
		snprintf(why, whylen, "'%s': the port must be 1 to 65535", spec);
		return -EINVAL;
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		snprintf(why, whylen, "'%s': %s", host, gai_strerror(rc));
		return -EINVAL;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(buf, size, "[%s]:%u", a, ntohs(in6->sin6_port));
	} else {
		const struct sockaddr_in *in = (const void *)ss;
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(buf, size, "%s:%u", a, ntohs(in->sin_port));
	}
}

int braidctl_open(const struct braidctl_opts *o, struct braidctl **out)
{
	struct braidctl *b = calloc(1, sizeof(*b));
	if (!b)
		return BRAIDCTL_FAIL;
	b->o = *o;
	b->out = o->out ? o->out : stdout;
	b->err = o->err ? o->err : stderr;
	if (!b->o.timeout_ms)
		b->o.timeout_ms = 10000;
	const char *conf = o->config ? o->config : DEFAULT_CONFIG;
	struct mds_settings set;
	struct conf_error cerr;
	int rc = mds_settings_load(conf, &set, &cerr);
	/* the default file missing: its defaults still say where to look */
	if (rc && !(rc == -ENOENT && !o->config) && !(o->mds && o->key_file)) {
		conf_error_print(&cerr, b->err);
		errorf(b, "cannot use the settings in %s%s", conf,
		       rc == -ENOENT ? ": give -c FILE, or --mds HOST:PORT and --key FILE" : "");
		free(b);
		return BRAIDCTL_USAGE;
	}
	struct sockaddr_storage ss;
	socklen_t sslen;
	if (o->mds) {
		char why[320];
		if (addr_resolve(o->mds, &ss, &sslen, why, sizeof(why))) {
			errorf(b, "--mds %s", why);
			free(b);
			return BRAIDCTL_USAGE;
		}
	} else {
		if (!set.listen.n) {
			errorf(b, "%s: [mds] listen names no address: use --mds HOST:PORT", conf);
			free(b);
			return BRAIDCTL_USAGE;
		}
		ss = set.listen.addr[0];
		/* a wildcard address is this host's */
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;
			if (in->sin_addr.s_addr == htonl(INADDR_ANY))
				in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			sslen = sizeof(*in);
		} else {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
			if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
				in6->sin6_addr = in6addr_loopback;
			sslen = sizeof(*in6);
		}
		int port = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
						   : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		if (!port) {
			errorf(b,
			       "%s: [mds] listen has port 0 (any free port): use --mds HOST:PORT",
			       conf);
			free(b);
			return BRAIDCTL_USAGE;
		}
	}
	addr_text(&ss, b->where, sizeof(b->where));
	snprintf(b->key_path, sizeof(b->key_path), "%s", o->key_file ? o->key_file : set.key_file);
	char msg[512];
	if ((rc = braid_key_load(b->key_path, &b->key, msg, sizeof(msg)))) {
		errorf(b, "cannot use the cluster key: %s%s", msg,
		       rc == -EACCES || rc == -EPERM ? " (run braidctl as root)" : "");
		free(b);
		return BRAIDCTL_USAGE;
	}
	int err = 0;
	if (!(b->eng = nfsd_client_engine_new(1, 0, &err))) {
		errorf(b, "cannot start the RPC client: %s", strerror(-err));
		braidctl_close(b);
		return BRAIDCTL_FAIL;
	}
	struct nfsd_clnt_opts co = {.timeout_ms = b->o.timeout_ms, .reconnect = false};
	if (!(b->c = nfsd_clnt_new(b->eng, (struct sockaddr *)&ss, sslen, &co, &err))) {
		errorf(b,
		       "cannot reach braid-mds at %s: %s (is braid-mds running? see braid-mds(8))",
		       b->where, strerror(-err));
		braidctl_close(b);
		return BRAIDCTL_FAIL;
	}
	*out = b;
	return BRAIDCTL_OK;
}

void braidctl_close(struct braidctl *b)
{
	if (!b)
		return;
	if (b->c)
		nfsd_clnt_free(b->c);
	if (b->eng)
		nfsd_server_free(b->eng);
	memset(&b->key, 0, sizeof(b->key));
	free(b);
}

/*
 * One call: 0 with res decoded (its own status not looked at), or an exit
 * status with the reason printed.
 */
static int call(struct braidctl *b, uint32_t proc, const void *args, void *res,
		struct xdr_arena *ar)
{
	int rc = braid_auth_call(b->c, &b->key, &xdr_desc_BRAID_ADMIN_PROGRAM_BRAID_ADMIN_V1, proc,
				 args, res, ar);
	if (!rc)
		return BRAIDCTL_OK;
	if (rc == (NFSD_CALL_ERR_DENIED | NFSD_AUTH_BADVERF) ||
	    rc == (NFSD_CALL_ERR_DENIED | NFSD_AUTH_REJECTEDCRED))
		errorf(b,
		       "braid-mds at %s refused our signature: %s is not its cluster key ([mds] "
		       "key_file), or the clocks differ by more than %d s",
		       b->where, b->key_path, BRAID_AUTH_SKEW_S);
	else if (rc == (NFSD_CALL_ERR_DENIED | NFSD_AUTH_BADCRED) ||
		 rc == (NFSD_CALL_ERR_DENIED | NFSD_AUTH_TOOWEAK))
		errorf(b, "braid-mds at %s does not accept cluster-key signatures (AUTH_BRAID)",
		       b->where);
	else if (rc == (NFSD_CALL_ERR_ACCEPT | NFSD_PROG_UNAVAIL) ||
		 rc == (NFSD_CALL_ERR_ACCEPT | NFSD_PROG_MISMATCH) ||
		 rc == (NFSD_CALL_ERR_ACCEPT | NFSD_PROC_UNAVAIL))
		errorf(b,
		       "the server at %s does not serve Braid's administration protocol (not "
		       "braid-mds, or an older one)",
		       b->where);
	else if (rc > 0)
		errorf(b, "braid-mds at %s answered the call with an RPC error (%#x)", b->where,
		       (unsigned)rc);
	else
		errorf(b,
		       "cannot reach braid-mds at %s: %s (is braid-mds running? see braid-mds(8))",
		       b->where, strerror(-rc));
	return BRAIDCTL_FAIL;
}

/* A braid_admin_stat's error, with the server's explanation. */
static int refused(struct braidctl *b, braid_admin_stat st, xdr_string why)
{
	(void)st;
	errorf(b, "%.*s", (int)why.len, why.val ? (const char *)why.val : "");
	return BRAIDCTL_FAIL;
}

/* ------------------------------------------------------------ formatting */

/* Printable: control and non-ASCII bytes as '.' (at most size - 1). */
static void printable(char *dst, size_t size, const void *src, size_t len)
{
	const unsigned char *s = src;
	size_t j = 0;
	for (size_t i = 0; i < len && j + 1 < size; i++)
		dst[j++] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '.';
	dst[j] = 0;
}

static const char *xs(char *buf, size_t size, xdr_string s)
{
	printable(buf, size, s.val, s.len);
	return buf;
}

/* 1536 -> "1.5K" (powers of 1024, as df -h). */
static const char *hbytes(char *buf, size_t size, uint64_t v)
{
	static const char units[] = "BKMGTPE";
	double d = (double)v;
	unsigned u = 0;
	while (d >= 1024 && u < sizeof(units) - 2) {
		d /= 1024;
		u++;
	}
	if (!v)
		snprintf(buf, size, "0");
	else if (!u)
		snprintf(buf, size, "%" PRIu64 "B", v);
	else
		snprintf(buf, size, d < 10 ? "%.1f%c" : "%.0f%c", d, units[u]);
	return buf;
}

static const char *hdur(char *buf, size_t size, int64_t s)
{
	const char *neg = s < 0 ? "-" : "";
	uint64_t a = (uint64_t)(s < 0 ? -s : s);
	if (a < 120)
		snprintf(buf, size, "%s%" PRIu64 "s", neg, a);
	else if (a < 7200)
		snprintf(buf, size, "%s%" PRIu64 "m", neg, a / 60);
	else if (a < 172800)
		snprintf(buf, size, "%s%" PRIu64 "h%" PRIu64 "m", neg, a / 3600, a % 3600 / 60);
	else
		snprintf(buf, size, "%s%" PRIu64 "d%" PRIu64 "h", neg, a / 86400, a % 86400 / 3600);
	return buf;
}

/* A universal address under its netid as "host:port" ("[v6]:port"). */
static const char *uaddr_text(char *buf, size_t size, const braid_admin_netaddr *na)
{
	char ua[BRAID_ADMIN_UADDR_MAX + 1], netid[BRAID_ADMIN_NETID_MAX + 1];
	printable(ua, sizeof(ua), na->na_uaddr.val, na->na_uaddr.len);
	printable(netid, sizeof(netid), na->na_netid.val, na->na_netid.len);
	char *p2 = strrchr(ua, '.');
	char *p1 = p2;
	if (p2)
		for (p1 = p2 - 1; p1 > ua && *p1 != '.'; p1--)
			;
	if (!p2 || p1 <= ua || *p1 != '.') {
		snprintf(buf, size, "%s", ua);
		return buf;
	}
	unsigned port = (unsigned)atoi(p1 + 1) * 256 + (unsigned)atoi(p2 + 1);
	*p1 = 0;
	snprintf(buf, size, strchr(netid, '6') ? "[%s]:%u" : "%s:%u", ua, port);
	return buf;
}

static const char *health_text(char *buf, size_t size, uint32_t h)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} f[] = {{BRAID_CTL_HEALTH_READONLY, "readonly"},
		 {BRAID_CTL_HEALTH_DEGRADED, "degraded"},
		 {BRAID_CTL_HEALTH_DRAINING, "draining"},
		 {BRAID_CTL_HEALTH_LOWSPACE, "lowspace"},
		 {BRAID_CTL_HEALTH_FULL, "full"}};
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (h & f[i].bit)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", f[i].name);
	if (!n)
		snprintf(buf, size, "ok");
	return buf;
}

/* Aligned columns, two spaces apart; cells copied. */
struct table {
	unsigned ncols, nrows, cap;
	char **cells; /* nrows * ncols, the header first */
};

static void t_row(struct table *t, ...)
{
	if (t->nrows == t->cap) {
		unsigned cap = t->cap ? 2 * t->cap : 16;
		char **c = realloc(t->cells, (size_t)cap * t->ncols * sizeof(*c));
		if (!c)
			return;
		t->cells = c;
		t->cap = cap;
	}
	va_list ap;
	va_start(ap, t);
	for (unsigned k = 0; k < t->ncols; k++) {
		const char *s = va_arg(ap, const char *);
		t->cells[(size_t)t->nrows * t->ncols + k] = strdup(s ? s : "");
	}
	va_end(ap);
	t->nrows++;
}

static void t_print(struct table *t, FILE *f)
{
	size_t w[16] = {0};
	for (unsigned r = 0; r < t->nrows; r++)
		for (unsigned k = 0; k < t->ncols && k < 16; k++) {
			const char *c = t->cells[(size_t)r * t->ncols + k];
			size_t n = c ? strlen(c) : 0;
			w[k] = n > w[k] ? n : w[k];
		}
	for (unsigned r = 0; r < t->nrows; r++) {
		for (unsigned k = 0; k < t->ncols; k++) {
			const char *c = t->cells[(size_t)r * t->ncols + k];
			if (k + 1 == t->ncols)
				fprintf(f, "%s\n", c ? c : "");
			else
				fprintf(f, "%-*s  ", (int)w[k], c ? c : "");
		}
	}
}

static void t_free(struct table *t)
{
	for (size_t i = 0; i < (size_t)t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
}

/* JSON, pretty-printed: objects and arrays nest; a value's key is NULL in arrays. */
struct json {
	FILE *f;
	int depth;
	bool first[32];
};

static void j_sep(struct json *j, const char *key)
{
	if (j->depth > 0) {
		fputs(j->first[j->depth] ? "\n" : ",\n", j->f);
		j->first[j->depth] = false;
		fprintf(j->f, "%*s", 2 * j->depth, "");
	}
	if (key)
		fprintf(j->f, "\"%s\": ", key);
}

static void j_strn(struct json *j, const char *key, const void *p, size_t len)
{
	j_sep(j, key);
	fputc('"', j->f);
	const unsigned char *s = p;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = s[i];
		if (ch == '"' || ch == '\\')
			fprintf(j->f, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(j->f, "\\u%04x", ch); /* bytes as Latin-1: always valid JSON */
		else
			fputc(ch, j->f);
	}
	fputc('"', j->f);
}

static void j_str(struct json *j, const char *key, const char *s)
{
	j_strn(j, key, s, strlen(s));
}

static void j_xs(struct json *j, const char *key, xdr_string s)
{
	j_strn(j, key, s.val, s.len);
}

static void j_u64(struct json *j, const char *key, uint64_t v)
{
	j_sep(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

/* A number with the given decimals. */
static void j_f(struct json *j, const char *key, double v, int decimals)
{
	j_sep(j, key);
	fprintf(j->f, "%.*f", decimals, v);
}

static void j_i64(struct json *j, const char *key, int64_t v)
{
	j_sep(j, key);
	fprintf(j->f, "%" PRId64, v);
}

static void j_bool(struct json *j, const char *key, bool v)
{
	j_sep(j, key);
	fputs(v ? "true" : "false", j->f);
}

static void j_open(struct json *j, const char *key, char c)
{
	j_sep(j, key);
	fputc(c, j->f);
	if (j->depth < 31)
		j->first[++j->depth] = true;
}

static void j_close(struct json *j, char c)
{
	bool empty = j->first[j->depth];
	j->depth--;
	if (!empty)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	fputc(c, j->f);
	if (!j->depth)
		fputc('\n', j->f);
}

static void j_policy(struct json *j, const char *key, const braid_admin_policy *p)
{
	static const char *const modes[] = {"?", "whole", "segments", "striped"};
	j_open(j, key, '{');
	j_xs(j, "text", p->lp_text);
	j_str(j, "mode", p->lp_mode < 4 ? modes[p->lp_mode] : "?");
	j_u64(j, "segment_size", p->lp_seg_shift ? 1ull << p->lp_seg_shift : 0);
	j_u64(j, "mirrors", p->lp_mirrors);
	j_u64(j, "width", p->lp_width);
	j_u64(j, "stripes", p->lp_stripes);
	j_u64(j, "stripe_unit", p->lp_unit_shift ? 1ull << p->lp_unit_shift : 0);
	if (p->lp_ec_m) {
		j_u64(j, "ec_k", p->lp_ec_k);
		j_u64(j, "ec_m", p->lp_ec_m);
	}
	j_close(j, '}');
}

static void j_netaddrs(struct json *j, const char *key, const braid_admin_netaddr *v, uint32_t n)
{
	char b[128];
	j_open(j, key, '[');
	for (uint32_t i = 0; i < n; i++) {
		j_open(j, NULL, '{');
		j_xs(j, "netid", v[i].na_netid);
		j_xs(j, "uaddr", v[i].na_uaddr);
		j_str(j, "address", uaddr_text(b, sizeof(b), &v[i]));
		j_close(j, '}');
	}
	j_close(j, ']');
}

/* ------------------------------------------------------------ data servers */

/* Every data server, page by page: into *v (malloc'd), *n of them. */
struct ds_all {
	braid_admin_ds *v;
	unsigned n;
	struct xdr_arena ar; /* the strings they point to */
};

static int ds_fetch(struct braidctl *b, struct ds_all *all)
{
	memset(all, 0, sizeof(*all));
	xdr_arena_init(&all->ar, NULL, 0, 64u << 20);
	braid_admin_list_args a = {.la_cookie = 0, .la_max = PAGE};
	for (;;) {
		braid_admin_ds_list_res res;
		int rc = call(b, BRAID_ADMINPROC_DS_LIST, &a, &res, &all->ar);
		if (rc)
			return rc;
		if (res.status)
			return refused(b, res.status, res.u.why);
		const braid_admin_ds_list_resok *ok = &res.u.ok;
		braid_admin_ds *nv =
		    realloc(all->v, (all->n + ok->dl_entries.len + 1) * sizeof(*nv));
		if (!nv)
			return BRAIDCTL_FAIL;
		all->v = nv;
		if (ok->dl_entries.len)
			memcpy(all->v + all->n, ok->dl_entries.val,
			       ok->dl_entries.len * sizeof(*nv));
		all->n += ok->dl_entries.len;
		if (ok->dl_eof || !ok->dl_entries.len)
			return BRAIDCTL_OK;
		a.la_cookie = ok->dl_cookie;
	}
}

static void ds_all_free(struct ds_all *all)
{
	free(all->v);
	xdr_arena_release(&all->ar);
}

static const char *ds_state(const braid_admin_ds *d)
{
	if (d->ds_lost)
		return d->ds_up ? "up,lost" : "lost";
	if (!d->ds_registered)
		return d->ds_drained ? "unseen,drained" : "unseen";
	if (!d->ds_up)
		return d->ds_drained ? "down,drained" : "down";
	return d->ds_drained ? "drained" : "up";
}

static void ds_table(struct braidctl *b, const struct ds_all *all)
{
	struct table t = {.ncols = 10};
	t_row(&t, "ID", "HOST", "STATE", "ADDRESS", "CAPACITY", "FREE", "USED", "OBJECTS", "HEALTH",
	      "HEARD");
	for (unsigned i = 0; i < all->n; i++) {
		const braid_admin_ds *d = &all->v[i];
		char id[16], host[256], addr[128], cap[16], fr[16], used[16], obj[24], h[64],
		    hb[32];
		snprintf(id, sizeof(id), "%u", d->ds_id);
		if (d->ds_addrs.len)
			uaddr_text(addr, sizeof(addr), &d->ds_addrs.val[0]);
		else
			snprintf(addr, sizeof(addr), "-");
		if (d->ds_registered) {
			hbytes(cap, sizeof(cap), d->ds_capacity);
			hbytes(fr, sizeof(fr), d->ds_free);
			snprintf(used, sizeof(used), "%u%%",
				 d->ds_capacity
				     ? (unsigned)((d->ds_capacity - (d->ds_free < d->ds_capacity
									 ? d->ds_free
									 : d->ds_capacity)) *
						  100 / d->ds_capacity)
				     : 0u);
			snprintf(obj, sizeof(obj), "%" PRIu64, d->ds_objects);
			health_text(h, sizeof(h), d->ds_health);
			char dd[24];
			snprintf(hb, sizeof(hb), "%s ago",
				 hdur(dd, sizeof(dd), (int64_t)(d->ds_since_heartbeat_ms / 1000)));
		} else {
			snprintf(cap, sizeof(cap), "-");
			snprintf(fr, sizeof(fr), "-");
			snprintf(used, sizeof(used), "-");
			snprintf(obj, sizeof(obj), "-");
			snprintf(h, sizeof(h), "-");
			snprintf(hb, sizeof(hb), "not since the MDS started");
		}
		t_row(&t, id, xs(host, sizeof(host), d->ds_hostname), ds_state(d), addr, cap, fr,
		      used, obj, h, hb);
	}
	t_print(&t, b->out);
	t_free(&t);
}

static void ds_json(struct json *j, const char *key, const struct ds_all *all)
{
	char h[64];
	j_open(j, key, '[');
	for (unsigned i = 0; i < all->n; i++) {
		const braid_admin_ds *d = &all->v[i];
		char uuid[40];
		for (int k = 0; k < 16; k++)
			snprintf(uuid + 2 * k, 3, "%02x", d->ds_uuid[k]);
		j_open(j, NULL, '{');
		j_u64(j, "id", d->ds_id);
		j_str(j, "uuid", uuid);
		j_xs(j, "hostname", d->ds_hostname);
		j_str(j, "state", ds_state(d));
		j_bool(j, "registered", d->ds_registered);
		j_bool(j, "up", d->ds_up);
		j_bool(j, "drained", d->ds_drained);
		j_bool(j, "lost", d->ds_lost);
		j_u64(j, "health_flags", d->ds_health);
		j_str(j, "health", health_text(h, sizeof(h), d->ds_health));
		j_u64(j, "capacity_bytes", d->ds_capacity);
		j_u64(j, "free_bytes", d->ds_free);
		j_u64(j, "objects", d->ds_objects);
		j_u64(j, "since_heartbeat_ms", d->ds_since_heartbeat_ms);
		j_netaddrs(j, "addresses", d->ds_addrs.val, d->ds_addrs.len);
		j_netaddrs(j, "control_addresses", d->ds_ctl_addrs.val, d->ds_ctl_addrs.len);
		j_open(j, "protocols", '[');
		for (uint32_t k = 0; k < d->ds_protos.len; k++) {
			const braid_admin_proto *p = &d->ds_protos.val[k];
			j_open(j, NULL, '{');
			j_u64(j, "version", p->ap_version);
			j_u64(j, "minorversion", p->ap_minorversion);
			j_u64(j, "rsize", p->ap_rsize);
			j_u64(j, "wsize", p->ap_wsize);
			j_close(j, '}');
		}
		j_close(j, ']');
		j_close(j, '}');
	}
	j_close(j, ']');
}

/* ---------------------------------------------------------------- status */

static int c_status(struct braidctl *b, int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		errorf(b, "usage: braidctl status");
		return BRAIDCTL_USAGE;
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4u << 20);
	braid_admin_status_res res;
	int rc = call(b, BRAID_ADMINPROC_STATUS, NULL, &res, &ar);
	if (!rc && res.status)
		rc = refused(b, res.status, res.u.why);
	struct ds_all all;
	if (!rc)
		rc = ds_fetch(b, &all);
	else
		memset(&all, 0, sizeof(all));
	if (rc) {
		ds_all_free(&all);
		xdr_arena_release(&ar);
		return rc;
	}
	const braid_admin_status_resok *s = &res.u.ok;
	char b1[300], b2[64], b3[64];
	if (b->o.json) {
		struct json j = {.f = b->out};
		j_open(&j, NULL, '{');
		j_open(&j, "mds", '{');
		j_xs(&j, "version", s->st_version);
		j_strn(&j, "server_owner", s->st_server_owner.val, s->st_server_owner.len);
		j_u64(&j, "uptime_s", s->st_uptime_s);
		j_netaddrs(&j, "listen", s->st_listen.val, s->st_listen.len);
		j_netaddrs(&j, "metrics", s->st_metrics.val, s->st_metrics.len);
		j_xs(&j, "store_dir", s->st_store_dir);
		j_xs(&j, "exports_file", s->st_exports_file);
		j_u64(&j, "exports", s->st_exports);
		j_u64(&j, "lease_s", s->st_lease_s);
		j_bool(&j, "in_grace", s->st_in_grace);
		j_u64(&j, "clients", s->st_clients);
		j_u64(&j, "data_servers_known", s->st_ds_known);
		j_u64(&j, "data_servers_up", s->st_ds_up);
		j_u64(&j, "data_servers_drained", s->st_ds_drained);
		j_u64(&j, "capacity_bytes", s->st_capacity);
		j_u64(&j, "free_bytes", s->st_free);
		j_bool(&j, "layouts", s->st_layouts);
		if (s->st_layouts)
			j_policy(&j, "layout_default", &s->st_layout_default);
		j_close(&j, '}');
		ds_json(&j, "data_servers", &all);
		j_close(&j, '}');
	} else {
		FILE *f = b->out;
		char owner[300];
		printable(owner, sizeof(owner), s->st_server_owner.val, s->st_server_owner.len);
		fprintf(f, "braid-mds %s at %s, up %s\n", xs(b1, sizeof(b1), s->st_version),
			b->where, hdur(b2, sizeof(b2), (int64_t)s->st_uptime_s));
		fprintf(f, "  server owner  %s\n", owner);
		fprintf(f, "  listen       ");
		for (uint32_t i = 0; i < s->st_listen.len; i++)
			fprintf(f, " %s", uaddr_text(b1, sizeof(b1), &s->st_listen.val[i]));
		fprintf(f, "\n  metrics      ");
		if (!s->st_metrics.len)
			fprintf(f, " off ([mds] metrics_listen)");
		for (uint32_t i = 0; i < s->st_metrics.len; i++)
			fprintf(f, " http://%s/metrics",
				uaddr_text(b1, sizeof(b1), &s->st_metrics.val[i]));
		fprintf(f, "\n  store         %s\n", xs(b1, sizeof(b1), s->st_store_dir));
		fprintf(f, "  exports       %u in force, from %s\n", s->st_exports,
			xs(b1, sizeof(b1), s->st_exports_file));
		fprintf(f, "  clients       %u (lease %u s)%s\n", s->st_clients, s->st_lease_s,
			s->st_in_grace ? ", in grace: reclaims only" : "");
		if (s->st_layouts)
			fprintf(f, "  layouts       pNFS flexfiles, default policy %s\n",
				xs(b1, sizeof(b1), s->st_layout_default.lp_text));
		else
			fprintf(f, "  layouts       not available in this build\n");
		fprintf(f, "  data servers  %u up of %u known, %u drained; %s free of %s\n",
			s->st_ds_up, s->st_ds_known, s->st_ds_drained,
			hbytes(b2, sizeof(b2), s->st_free), hbytes(b3, sizeof(b3), s->st_capacity));
		if (all.n) {
			fputc('\n', f);
			ds_table(b, &all);
		}
	}
	ds_all_free(&all);
	xdr_arena_release(&ar);
	return BRAIDCTL_OK;
}

/* ------------------------------------------------------------------ ds */

static bool parse_id(const char *s, uint64_t max, uint64_t *out)
{
	char *e;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 0);
	if (!*s || *e || errno || v > max || *s == '-')
		return false;
	*out = v;
	return true;
}

static int print_res(struct braidctl *b, const braid_admin_res *r)
{
	char msg[BRAID_ADMIN_MSG_MAX + 1];
	printable(msg, sizeof(msg), r->message.val, r->message.len);
	if (r->status) {
		errorf(b, "%s", msg);
		return BRAIDCTL_FAIL;
	}
	if (b->o.json) {
		struct json j = {.f = b->out};
		j_open(&j, NULL, '{');
		j_bool(&j, "ok", true);
		j_str(&j, "message", msg);
		j_close(&j, '}');
	} else {
		fprintf(b->out, "%s\n", msg);
	}
	return BRAIDCTL_OK;
}

/* A call whose result is braid_admin_res. */
static int change(struct braidctl *b, uint32_t proc, const void *args)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_res res;
	int rc = call(b, proc, args, &res, &ar);
	if (!rc)
		rc = print_res(b, &res);
	xdr_arena_release(&ar);
	return rc;
}

static int c_ds(struct braidctl *b, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	if (!strcmp(sub, "list") && argc == 2) {
		struct ds_all all;
		int rc = ds_fetch(b, &all);
		if (!rc) {
			if (b->o.json) {
				struct json j = {.f = b->out};
				ds_json(&j, NULL, &all);
			} else {
				ds_table(b, &all);
			}
		}
		ds_all_free(&all);
		return rc;
	}
	bool force = argc == 4 && !strcmp(argv[2], "--force");
	const char *ids = argc == 3 ? argv[2] : force ? argv[3] : NULL;
	uint64_t id;
	if (!ids || (force && strcmp(sub, "remove")) || !parse_id(ids, UINT32_MAX, &id) || !id) {
		if (ids && (!parse_id(ids, UINT32_MAX, &id) || !id))
			errorf(b, "'%s' is not a data server id ('braidctl ds list' shows them)",
			       ids);
		else
			errorf(b, "usage: braidctl ds list | ds add ID | ds drain ID | "
				  "ds remove [--force] ID | ds lost ID");
		return BRAIDCTL_USAGE;
	}
	if (!strcmp(sub, "add") || !strcmp(sub, "drain")) {
		braid_admin_ds_args a = {.da_id = (uint32_t)id};
		return change(
		    b, !strcmp(sub, "add") ? BRAID_ADMINPROC_DS_ADD : BRAID_ADMINPROC_DS_DRAIN, &a);
	}
	if (!strcmp(sub, "remove")) {
		braid_admin_ds_remove_args a = {.dr_id = (uint32_t)id, .dr_force = force};
		return change(b, BRAID_ADMINPROC_DS_REMOVE, &a);
	}
	if (!strcmp(sub, "lost")) {
		braid_admin_ds_args a = {.da_id = (uint32_t)id};
		return change(b, BRAID_ADMINPROC_DS_LOST, &a);
	}
	errorf(b, "unknown 'ds %s': use ds list | add | drain | remove | lost", sub);
	return BRAIDCTL_USAGE;
}

/* ------------------------------------------------------------- exports */

static int c_exports(struct braidctl *b, int argc, char **argv)
{
	const char *sub = argc == 2 ? argv[1] : "";
	if (!strcmp(sub, "reload"))
		return change(b, BRAID_ADMINPROC_EXPORTS_RELOAD, NULL);
	if (strcmp(sub, "list")) {
		errorf(b, "usage: braidctl exports list | exports reload");
		return BRAIDCTL_USAGE;
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 64u << 20);
	braid_admin_list_args a = {.la_cookie = 0, .la_max = PAGE};
	struct table t = {.ncols = 4};
	struct json j = {.f = b->out};
	t_row(&t, "PATH", "EXPORT ID", "CLIENT", "OPTIONS");
	int rc;
	bool first = true;
	for (;;) {
		braid_admin_exports_res res;
		if ((rc = call(b, BRAID_ADMINPROC_EXPORTS_LIST, &a, &res, &ar)))
			break;
		if (res.status) {
			rc = refused(b, res.status, res.u.why);
			break;
		}
		const braid_admin_exports_resok *ok = &res.u.ok;
		if (first && b->o.json) {
			j_open(&j, NULL, '{');
			j_xs(&j, "file", ok->el_file);
			j_open(&j, "exports", '[');
		}
		first = false;
		for (uint32_t i = 0; i < ok->el_entries.len; i++) {
			const braid_admin_export *e = &ok->el_entries.val[i];
			char path[BRAID_ADMIN_PATH_MAX + 1], id[16], spec[600], opts[600];
			xs(path, sizeof(path), e->ex_path);
			snprintf(id, sizeof(id), "0x%08x", e->ex_id);
			if (b->o.json) {
				j_open(&j, NULL, '{');
				j_xs(&j, "path", e->ex_path);
				j_u64(&j, "id", e->ex_id);
				j_u64(&j, "root_inode", e->ex_root);
				j_u64(&j, "line", e->ex_line);
				j_open(&j, "clients", '[');
				for (uint32_t k = 0; k < e->ex_clients.len; k++) {
					j_open(&j, NULL, '{');
					j_xs(&j, "client", e->ex_clients.val[k].ec_spec);
					j_xs(&j, "options", e->ex_clients.val[k].ec_options);
					j_close(&j, '}');
				}
				j_close(&j, ']');
				j_close(&j, '}');
				continue;
			}
			for (uint32_t k = 0; k < e->ex_clients.len; k++)
				t_row(&t, k ? "" : path, k ? "" : id,
				      xs(spec, sizeof(spec), e->ex_clients.val[k].ec_spec),
				      xs(opts, sizeof(opts), e->ex_clients.val[k].ec_options));
			if (!e->ex_clients.len)
				t_row(&t, path, id, "-", "-");
		}
		if (ok->el_eof || !ok->el_entries.len)
			break;
		a.la_cookie = ok->el_cookie;
	}
	if (!rc) {
		if (b->o.json) {
			j_close(&j, ']');
			j_close(&j, '}');
		} else {
			t_print(&t, b->out);
		}
	}
	t_free(&t);
	xdr_arena_release(&ar);
	return rc;
}

/* ------------------------------------------------------------- clients */

/* Who created a client ID: "uid N" (AUTH_SYS), the Kerberos name with a
 * '+' when it protects its state (SP4_MACH_CRED), or the flavor. */
static void client_principal(char *buf, size_t size, const braid_admin_client *c)
{
	if (c->cl_flavor == 1)
		snprintf(buf, size, "uid %u", c->cl_uid);
	else if (c->cl_flavor == 6)
		printable(buf, size > 64 ? 64 : size, (const uint8_t *)c->cl_principal.val,
			  c->cl_principal.len);
	else if (c->cl_flavor == 0)
		snprintf(buf, size, "none");
	else
		snprintf(buf, size, "flavor %u", c->cl_flavor);
	if (c->cl_mach_cred && strlen(buf) + 2 <= size)
		strcat(buf, "+");
}

static int c_clients(struct braidctl *b, int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		errorf(b, "usage: braidctl clients");
		return BRAIDCTL_USAGE;
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 64u << 20);
	braid_admin_list_args a = {.la_cookie = 0, .la_max = PAGE};
	struct table t = {.ncols = 11};
	struct json j = {.f = b->out};
	t_row(&t, "CLIENT ID", "OWNER", "PRINCIPAL", "PEER", "LEASE", "SESSIONS", "OPENS", "LOCKS",
	      "LAYOUTS", "LAYOUTGETS", "RECALLS");
	if (b->o.json)
		j_open(&j, NULL, '[');
	int rc;
	for (;;) {
		braid_admin_clients_res res;
		if ((rc = call(b, BRAID_ADMINPROC_CLIENTS, &a, &res, &ar)))
			break;
		if (res.status) {
			rc = refused(b, res.status, res.u.why);
			break;
		}
		const braid_admin_clients_resok *ok = &res.u.ok;
		for (uint32_t i = 0; i < ok->cs_entries.len; i++) {
			const braid_admin_client *c = &ok->cs_entries.val[i];
			char id[24], owner[40], peer[80] = "-", lease[24], ns[12], no[12], nl[12],
						ng[24], nr[24];
			snprintf(id, sizeof(id), "0x%016" PRIx64, c->cl_clientid);
			if (c->cl_peer.len) {
				braid_admin_netaddr na = {xdr_string_of(""), c->cl_peer};
				uaddr_text(peer, sizeof(peer), &na);
			}
			if (b->o.json) {
				j_open(&j, NULL, '{');
				j_str(&j, "clientid", id);
				j_strn(&j, "owner", c->cl_owner.val, c->cl_owner.len);
				j_u64(&j, "owner_length", c->cl_owner_len);
				j_bool(&j, "confirmed", c->cl_confirmed);
				j_u64(&j, "flavor", c->cl_flavor);
				j_u64(&j, "uid", c->cl_uid);
				j_strn(&j, "principal", (const uint8_t *)c->cl_principal.val,
				       c->cl_principal.len);
				j_str(&j, "state_protection", c->cl_mach_cred ? "mach_cred" : "none");
				j_i64(&j, "lease_remaining_ms", c->cl_lease_left_ms);
				j_u64(&j, "sessions", c->cl_sessions);
				j_str(&j, "peer", c->cl_peer.len ? peer : "");
				j_strn(&j, "transport", (const uint8_t *)c->cl_transport.val,
				       c->cl_transport.len);
				j_u64(&j, "opens", c->cl_opens);
				j_u64(&j, "locks", c->cl_locks);
				j_u64(&j, "delegations", c->cl_delegations);
				j_bool(&j, "holds_layouts", c->cl_layouts);
				j_u64(&j, "layoutgets", c->cl_layoutgets);
				j_u64(&j, "layoutreturns", c->cl_layoutreturns);
				j_u64(&j, "recalls", c->cl_recalls);
				j_u64(&j, "revoked", c->cl_revoked);
				j_u64(&j, "io_errors", c->cl_ioerrors);
				j_u64(&j, "read_bytes", c->cl_read_bytes);
				j_u64(&j, "write_bytes", c->cl_write_bytes);
				j_close(&j, '}');
				continue;
			}
			printable(owner, 33, c->cl_owner.val, c->cl_owner.len);
			if (c->cl_owner_len > 32)
				strcat(owner, "...");
			hdur(lease, sizeof(lease), c->cl_lease_left_ms / 1000);
			snprintf(ns, sizeof(ns), "%u", c->cl_sessions);
			snprintf(no, sizeof(no), "%u", c->cl_opens);
			snprintf(nl, sizeof(nl), "%u", c->cl_locks);
			snprintf(ng, sizeof(ng), "%" PRIu64, c->cl_layoutgets);
			snprintf(nr, sizeof(nr), "%" PRIu64, c->cl_recalls);
			char princ[160];
			client_principal(princ, sizeof(princ), c);
			if (c->cl_transport.len == 4 && !memcmp(c->cl_transport.val, "rdma", 4) &&
			    strlen(peer) + 8 < sizeof(peer))
				strcat(peer, " (rdma)");
			t_row(&t, id, owner, princ, peer, lease, ns, no, nl,
			      c->cl_layouts ? "yes" : "no", ng, nr);
		}
		if (ok->cs_eof || !ok->cs_entries.len)
			break;
		a.la_cookie = ok->cs_cookie;
	}
	if (!rc) {
		if (b->o.json)
			j_close(&j, ']');
		else if (t.nrows == 1)
			fprintf(b->out, "no clients\n");
		else
			t_print(&t, b->out);
	}
	t_free(&t);
	xdr_arena_release(&ar);
	return rc;
}

/* -------------------------------------------------------------- layout */

static const char *dev_name(const braid_admin_layout_resok *ok, uint32_t id, char *buf, size_t size)
{
	for (uint32_t i = 0; i < ok->ly_devices.len; i++)
		if (ok->ly_devices.val[i].dv_id == id) {
			char h[256];
			snprintf(buf, size, "%u (%s)", id,
				 xs(h, sizeof(h), ok->ly_devices.val[i].dv_hostname));
			return buf;
		}
	snprintf(buf, size, "%u", id);
	return buf;
}

/* A data server's state as the layout reply's devices say. */
static const char *dev_state(const braid_admin_device *devs, unsigned n, uint32_t id)
{
	if (!id)
		return "none";
	for (unsigned k = 0; k < n; k++)
		if (devs[k].dv_id == id)
			return devs[k].dv_lost	  ? "lost"
			       : !devs[k].dv_up	  ? "down"
			       : devs[k].dv_drained ? "drained"
						    : "up";
	return "?";
}

/* An erasure-coded file's state and stripes (braid_admin.x LAYOUT). */
struct ec_view {
	unsigned k, m, state;
	uint64_t change;
	braid_admin_ec_stripe *v;
	unsigned n, cap;
};

static void ec_view_add(struct ec_view *e, const braid_admin_layout_resok *ok)
{
	for (uint32_t i = 0; i < ok->ly_ec_stripes.len; i++) {
		const braid_admin_ec_stripe *s = &ok->ly_ec_stripes.val[i];
		if (e->n && s->es_index <= e->v[e->n - 1].es_index)
			continue; /* a stripe two pages share */
		if (e->n == e->cap) {
			unsigned cap = e->cap ? 2 * e->cap : 64;
			braid_admin_ec_stripe *nv = realloc(e->v, cap * sizeof(*nv));
			if (!nv)
				return;
			e->v = nv;
			e->cap = cap;
		}
		e->v[e->n++] = *s;
	}
}

static const char *const ec_states[] = {"hot", "to seal", "sealed"};

static void ec_view_json(struct json *j, const struct ec_view *e, const braid_admin_device *devs,
			 unsigned ndevs)
{
	static const char *const keys[] = {"hot", "to_seal", "sealed"};
	j_open(j, "ec", '{');
	j_u64(j, "k", e->k);
	j_u64(j, "m", e->m);
	j_str(j, "state", e->state < 3 ? keys[e->state] : "?");
	if (e->state == 2)
		j_u64(j, "sealed_change", e->change);
	j_open(j, "stripes", '[');
	for (unsigned i = 0; i < e->n; i++) {
		const braid_admin_ec_stripe *s = &e->v[i];
		j_open(j, NULL, '{');
		j_u64(j, "index", s->es_index);
		for (unsigned part = 0; part < 2; part++) {
			j_open(j, part ? "parity" : "data", '[');
			for (uint32_t c = part ? e->k : 0; c < (part ? s->es_ds.len : e->k); c++) {
				j_open(j, NULL, '{');
				j_u64(j, "ds", s->es_ds.val[c]);
				j_str(j, "state", dev_state(devs, ndevs, s->es_ds.val[c]));
				j_close(j, '}');
			}
			j_close(j, ']');
		}
		j_close(j, '}');
	}
	j_close(j, ']');
	j_close(j, '}');
}

static void ec_view_text(FILE *f, const struct ec_view *e, const braid_admin_device *devs,
			 unsigned ndevs)
{
	fprintf(f, "\nerasure coded %u+%u: %s", e->k, e->m, e->state < 3 ? ec_states[e->state] : "?");
	if (e->state == 2)
		fprintf(f, " (at change %" PRIu64 ")", e->change);
	else
		fprintf(f, " (no parity to trust: one copy until sealed)");
	fputc('\n', f);
	if (!e->n)
		return;
	struct table t = {.ncols = 3};
	t_row(&t, "STRIPE", "DATA SERVERS", "PARITY HOLDERS");
	for (unsigned i = 0; i < e->n; i++) {
		const braid_admin_ec_stripe *s = &e->v[i];
		char idx[24], part[2][512];
		snprintf(idx, sizeof(idx), "%" PRIu64, s->es_index);
		for (unsigned p = 0; p < 2; p++) {
			size_t n = 0;
			part[p][0] = 0;
			for (uint32_t c = p ? e->k : 0; c < (p ? s->es_ds.len : e->k); c++) {
				if (s->es_ds.val[c])
					n += (size_t)snprintf(part[p] + n, sizeof(part[p]) - n,
							      "%s%u (%s)", n ? ", " : "",
							      s->es_ds.val[c],
							      dev_state(devs, ndevs, s->es_ds.val[c]));
				else
					n += (size_t)snprintf(part[p] + n, sizeof(part[p]) - n,
							      "%s-", n ? ", " : "");
				if (n >= sizeof(part[p]))
					n = sizeof(part[p]) - 1;
			}
		}
		t_row(&t, idx, part[0], part[1]);
	}
	t_print(&t, f);
	t_free(&t);
}

static int c_layout(struct braidctl *b, int argc, char **argv)
{
	if (argc != 2) {
		errorf(b, "usage: braidctl layout PATH");
		return BRAIDCTL_USAGE;
	}
	const char *path = argv[1];
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 64u << 20);
	braid_admin_layout_args a = {.lg_path = xdr_string_of(path), .lg_max = PAGE};
	struct table t = {.ncols = 5};
	struct json j = {.f = b->out};
	t_row(&t, "SEGMENT", "OFFSET", "LENGTH", "MIRROR", "DATA SERVERS");
	int rc;
	bool first = true;
	/* devices of every page, for the table at the end */
	braid_admin_device devs[BRAID_ADMIN_DEVICES_MAX * 4];
	unsigned ndevs = 0;
	struct ec_view ec = {0};
	for (;;) {
		braid_admin_layout_res res;
		if ((rc = call(b, BRAID_ADMINPROC_LAYOUT, &a, &res, &ar)))
			break;
		if (res.status) {
			rc = refused(b, res.status, res.u.why);
			break;
		}
		const braid_admin_layout_resok *ok = &res.u.ok;
		for (uint32_t i = 0; i < ok->ly_devices.len; i++) {
			bool seen = false;
			for (unsigned k = 0; k < ndevs && !seen; k++)
				seen = devs[k].dv_id == ok->ly_devices.val[i].dv_id;
			if (!seen && ndevs < sizeof(devs) / sizeof(devs[0]))
				devs[ndevs++] = ok->ly_devices.val[i];
		}
		const braid_admin_policy *p = &ok->ly_policy;
		unsigned stripes = p->lp_stripes ? p->lp_stripes : 1;
		char b1[64], b2[300], pol[200];
		if (first && p->lp_ec_m)
			ec = (struct ec_view){.k = p->lp_ec_k,
					      .m = p->lp_ec_m,
					      .state = ok->ly_ec_state,
					      .change = ok->ly_ec_change};
		if (p->lp_ec_m)
			ec_view_add(&ec, ok);
		if (first) {
			xs(pol, sizeof(pol), p->lp_text);
			if (b->o.json) {
				j_open(&j, NULL, '{');
				j_str(&j, "path", path);
				j_u64(&j, "inode", ok->ly_ino);
				j_u64(&j, "size", ok->ly_size);
				j_policy(&j, "policy", p);
				j_bool(&j, "recorded", ok->ly_recorded);
				j_bool(&j, "laid_out", ok->ly_laid_out);
				j_u64(&j, "fence_epoch", ok->ly_fence_epoch);
				j_open(&j, "set", '[');
				for (uint32_t k = 0; k < ok->ly_set.len; k++) {
					j_open(&j, NULL, '{');
					j_u64(&j, "ds", ok->ly_set.val[k].sm_id);
					j_bool(&j, "created", ok->ly_set.val[k].sm_created);
					j_bool(&j, "stale", ok->ly_set.val[k].sm_stale);
					j_close(&j, '}');
				}
				j_close(&j, ']');
				j_open(&j, "segments", '[');
			} else {
				fprintf(b->out,
					"%s: inode %" PRIu64 ", %s, policy %s%s, fence epoch %u\n",
					path, ok->ly_ino, hbytes(b1, sizeof(b1), ok->ly_size), pol,
					ok->ly_recorded ? "" : " (the default: nothing recorded)",
					ok->ly_fence_epoch);
				if (!ok->ly_laid_out)
					fprintf(
					    b->out,
					    "not laid out yet: no data server holds any of it\n");
				if (ok->ly_set.len) {
					fprintf(b->out, "data server set:");
					for (uint32_t k = 0; k < ok->ly_set.len; k++)
						fprintf(b->out, " %s%s%s",
							dev_name(ok, ok->ly_set.val[k].sm_id, b2,
								 sizeof(b2)),
							ok->ly_set.val[k].sm_created ? "*" : "",
							ok->ly_set.val[k].sm_stale ? " (stale)" : "");
					fprintf(b->out, "\n");
				}
			}
		}
		first = false;
		for (uint32_t s = 0; s < ok->ly_segments.len; s++) {
			const braid_admin_segment *g = &ok->ly_segments.val[s];
			if (b->o.json) {
				j_open(&j, NULL, '{');
				j_u64(&j, "index", g->sg_index);
				j_u64(&j, "offset", g->sg_offset);
				if (g->sg_length == UINT64_MAX)
					j_str(&j, "length", "all");
				else
					j_u64(&j, "length", g->sg_length);
				j_open(&j, "mirrors", '[');
				for (uint32_t m = 0; m * stripes < g->sg_ds.len; m++) {
					j_open(&j, NULL, '[');
					for (uint32_t k = m * stripes;
					     k < (m + 1) * stripes && k < g->sg_ds.len; k++)
						j_u64(&j, NULL, g->sg_ds.val[k]);
					j_close(&j, ']');
				}
				j_close(&j, ']');
				j_close(&j, '}');
				continue;
			}
			char idx[24], off[24], len[24], mir[12], dsl[512];
			snprintf(idx, sizeof(idx), "%" PRIu64, g->sg_index);
			hbytes(off, sizeof(off), g->sg_offset);
			if (g->sg_length == UINT64_MAX)
				snprintf(len, sizeof(len), "to the end");
			else
				hbytes(len, sizeof(len), g->sg_length);
			for (uint32_t m = 0; m * stripes < g->sg_ds.len; m++) {
				size_t n = 0;
				dsl[0] = 0;
				for (uint32_t k = m * stripes;
				     k < (m + 1) * stripes && k < g->sg_ds.len; k++)
					n += (size_t)snprintf(
					    dsl + n, sizeof(dsl) - n, "%s%s", n ? ", " : "",
					    dev_name(ok, g->sg_ds.val[k], b2, sizeof(b2)));
				snprintf(mir, sizeof(mir), "%u", m);
				t_row(&t, m ? "" : idx, m ? "" : off, m ? "" : len, mir, dsl);
			}
		}
		if (ok->ly_eof || !ok->ly_segments.len)
			break;
		a.lg_cookie = ok->ly_cookie;
	}
	if (!rc) {
		if (b->o.json) {
			j_close(&j, ']');
			j_open(&j, "data_servers", '[');
			for (unsigned k = 0; k < ndevs; k++) {
				char ad[128];
				j_open(&j, NULL, '{');
				j_u64(&j, "id", devs[k].dv_id);
				j_xs(&j, "hostname", devs[k].dv_hostname);
				j_str(&j, "address",
				      devs[k].dv_addr.na_uaddr.len
					  ? uaddr_text(ad, sizeof(ad), &devs[k].dv_addr)
					  : "");
				j_bool(&j, "up", devs[k].dv_up);
				j_bool(&j, "drained", devs[k].dv_drained);
				j_bool(&j, "lost", devs[k].dv_lost);
				j_close(&j, '}');
			}
			j_close(&j, ']');
			if (ec.m)
				ec_view_json(&j, &ec, devs, ndevs);
			j_close(&j, '}');
		} else {
			if (t.nrows > 1)
				t_print(&t, b->out);
			if (ec.m)
				ec_view_text(b->out, &ec, devs, ndevs);
			if (ndevs) {
				struct table d = {.ncols = 4};
				t_row(&d, "ID", "HOST", "ADDRESS", "STATE");
				for (unsigned k = 0; k < ndevs; k++) {
					char id[16], h[256], ad[128];
					snprintf(id, sizeof(id), "%u", devs[k].dv_id);
					t_row(&d, id, xs(h, sizeof(h), devs[k].dv_hostname),
					      devs[k].dv_addr.na_uaddr.len
						  ? uaddr_text(ad, sizeof(ad), &devs[k].dv_addr)
						  : "-",
					      dev_state(devs, ndevs, devs[k].dv_id));
				}
				fputc('\n', b->out);
				t_print(&d, b->out);
				t_free(&d);
			}
		}
	}
	t_free(&t);
	free(ec.v);
	xdr_arena_release(&ar);
	return rc;
}

/* -------------------------------------------------------------- policy */

static int c_policy(struct braidctl *b, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	if (!strcmp(sub, "set") && argc == 4) {
		if (!argv[3][0]) {
			errorf(b, "an empty policy: use 'braidctl policy unset DIR' to remove one");
			return BRAIDCTL_USAGE;
		}
		braid_admin_policy_set_args a = {xdr_string_of(argv[2]), xdr_string_of(argv[3])};
		if (a.ps_policy.len > BRAID_ADMIN_POLICY_MAX) {
			errorf(b, "the policy is longer than %d bytes", BRAID_ADMIN_POLICY_MAX);
			return BRAIDCTL_USAGE;
		}
		return change(b, BRAID_ADMINPROC_POLICY_SET, &a);
	}
	if (!strcmp(sub, "unset") && argc == 3) {
		braid_admin_policy_set_args a = {xdr_string_of(argv[2]), xdr_string_of("")};
		return change(b, BRAID_ADMINPROC_POLICY_SET, &a);
	}
	if (strcmp(sub, "get") || argc != 3) {
		errorf(b,
		       "usage: braidctl policy get DIR | policy set DIR POLICY | policy unset DIR");
		return BRAIDCTL_USAGE;
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_path_args a = {xdr_string_of(argv[2])};
	braid_admin_policy_res res;
	int rc = call(b, BRAID_ADMINPROC_POLICY_GET, &a, &res, &ar);
	if (!rc && res.status)
		rc = refused(b, res.status, res.u.why);
	if (!rc) {
		const braid_admin_policy_resok *ok = &res.u.ok;
		char own[200], eff[200], from[BRAID_ADMIN_PATH_MAX + 1];
		xs(own, sizeof(own), ok->pg_own.lp_text);
		xs(eff, sizeof(eff), ok->pg_effective.lp_text);
		xs(from, sizeof(from), ok->pg_from);
		if (b->o.json) {
			struct json j = {.f = b->out};
			j_open(&j, NULL, '{');
			j_str(&j, "path", argv[2]);
			if (ok->pg_has_own)
				j_policy(&j, "own", &ok->pg_own);
			j_policy(&j, "effective", &ok->pg_effective);
			j_str(&j, "from", from);
			j_close(&j, '}');
		} else {
			fprintf(b->out, "%s: %s%s\n", argv[2], ok->pg_has_own ? "own policy " : "",
				ok->pg_has_own ? own : "no policy of its own");
			fprintf(b->out, "new files take: %s (%s%s)\n", eff,
				from[0] ? "from " : "the [mds] default", from);
		}
	}
	xdr_arena_release(&ar);
	return rc;
}

/* -------------------------------------------------------------- recall */

static int c_recall(struct braidctl *b, int argc, char **argv)
{
	braid_admin_recall_args a;
	if (argc == 3 && !strcmp(argv[1], "--client")) {
		uint64_t id;
		if (!parse_id(argv[2], UINT64_MAX, &id)) {
			errorf(b,
			       "'%s' is not a client ID ('braidctl clients' lists them, e.g. "
			       "0x6123abcd00000001)",
			       argv[2]);
			return BRAIDCTL_USAGE;
		}
		a.type = BRAID_ADMIN_RECALL_CLIENT;
		a.u.ra_clientid = id;
	} else if (argc == 2) {
		a.type = BRAID_ADMIN_RECALL_FILE;
		a.u.ra_path = xdr_string_of(argv[1]);
	} else {
		errorf(b, "usage: braidctl recall PATH | recall --client ID");
		return BRAIDCTL_USAGE;
	}
	return change(b, BRAID_ADMINPROC_RECALL, &a);
}

/* ------------------------------------------------------------- rebuild */

static int c_rebuild(struct braidctl *b, int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		errorf(b, "usage: braidctl rebuild");
		return BRAIDCTL_USAGE;
	}
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4u << 20);
	braid_admin_protection_res res;
	int rc = call(b, BRAID_ADMINPROC_PROTECTION, NULL, &res, &ar);
	if (!rc && res.status)
		rc = refused(b, res.status, res.u.why);
	if (rc) {
		xdr_arena_release(&ar);
		return rc;
	}
	const braid_admin_protection_resok *p = &res.u.ok;
	/* time left: the stale bytes at the recent rate */
	int64_t left = p->pr_rate ? (int64_t)(p->pr_stale_bytes / p->pr_rate) : -1;
	if (b->o.json) {
		struct json j = {.f = b->out};
		j_open(&j, NULL, '{');
		j_u64(&j, "lost_servers", p->pr_lost_servers);
		j_u64(&j, "rebuild_files", p->pr_rebuild_files);
		j_u64(&j, "moved_files", p->pr_moved_files);
		j_u64(&j, "stale_files", p->pr_stale_files);
		j_u64(&j, "stale_bytes", p->pr_stale_bytes);
		j_u64(&j, "resilvered_files", p->pr_resilvered_files);
		j_u64(&j, "resilvered_bytes", p->pr_resilvered_bytes);
		j_u64(&j, "failures", p->pr_failures);
		j_u64(&j, "rate_bytes_per_s", p->pr_rate);
		if (left >= 0)
			j_u64(&j, "time_left_s", (uint64_t)left);
		j_u64(&j, "copies_now", p->pr_copies);
		j_u64(&j, "copying_inode", p->pr_inflight_ino);
		j_u64(&j, "copying_to", p->pr_inflight_to);
		j_u64(&j, "copying_bytes", p->pr_inflight_bytes);
		j_open(&j, "ec", '{');
		j_u64(&j, "files", p->pr_ec_files);
		j_u64(&j, "chunks", p->pr_ec_chunks);
		j_u64(&j, "bytes", p->pr_ec_bytes_todo);
		j_u64(&j, "files_done", p->pr_ec_files_done);
		j_u64(&j, "chunks_done", p->pr_ec_chunks_done);
		j_u64(&j, "bytes_done", p->pr_ec_bytes);
		j_close(&j, '}');
		j_u64(&j, "unrecoverable", p->pr_unrecoverable);
		j_open(&j, "unrecoverable_files", '[');
		for (uint32_t i = 0; i < p->pr_lost.len; i++) {
			j_open(&j, NULL, '{');
			j_u64(&j, "inode", p->pr_lost.val[i].lf_ino);
			j_u64(&j, "data_server", p->pr_lost.val[i].lf_ds);
			j_xs(&j, "path", p->pr_lost.val[i].lf_path);
			j_close(&j, '}');
		}
		j_close(&j, ']');
		j_close(&j, '}');
	} else {
		FILE *f = b->out;
		char b1[64], b2[64], b3[64];
		fprintf(f, "lost data servers   %" PRIu64 "; files still naming one: %" PRIu64
			   "; copies moved off them: %" PRIu64 "\n",
			p->pr_lost_servers, p->pr_rebuild_files, p->pr_moved_files);
		fprintf(f, "stale copies        %" PRIu64 " files, %s to copy", p->pr_stale_files,
			hbytes(b1, sizeof(b1), p->pr_stale_bytes));
		if (left >= 0)
			fprintf(f, " at %s/s: about %s left", hbytes(b2, sizeof(b2), p->pr_rate),
				hdur(b3, sizeof(b3), left));
		fputc('\n', f);
		fprintf(f, "resilvered          %" PRIu64 " copies, %s; %" PRIu64
			   " passes failed (retried)\n",
			p->pr_resilvered_files, hbytes(b1, sizeof(b1), p->pr_resilvered_bytes),
			p->pr_failures);
		if (p->pr_inflight_ino)
			fprintf(f, "copying now         %" PRIu64 " file%s; inode %" PRIu64
				   " to data server %u, %s so far\n",
				p->pr_copies, p->pr_copies == 1 ? "" : "s", p->pr_inflight_ino,
				p->pr_inflight_to, hbytes(b1, sizeof(b1), p->pr_inflight_bytes));
		fprintf(f, "erasure-coded       %" PRIu64 " files, %" PRIu64 " chunks (%s) to rebuild; "
			   "%" PRIu64 " chunks rebuilt (%s written), %" PRIu64 " files done\n",
			p->pr_ec_files, p->pr_ec_chunks, hbytes(b1, sizeof(b1), p->pr_ec_bytes_todo),
			p->pr_ec_chunks_done, hbytes(b2, sizeof(b2), p->pr_ec_bytes),
			p->pr_ec_files_done);
		fprintf(f, "unrecoverable       %" PRIu64 " files%s\n", p->pr_unrecoverable,
			p->pr_unrecoverable ? " (no surviving copy of some bytes: reads fail with EIO)"
					    : "");
		for (uint32_t i = 0; i < p->pr_lost.len; i++) {
			char path[600];
			fprintf(f, "  inode %-10" PRIu64 " (was on data server %u)  %s\n",
				p->pr_lost.val[i].lf_ino, p->pr_lost.val[i].lf_ds,
				xs(path, sizeof(path), p->pr_lost.val[i].lf_path));
		}
	}
	xdr_arena_release(&ar);
	return BRAIDCTL_OK;
}

static int c_rebalance(struct braidctl *b, int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		errorf(b, "usage: braidctl rebalance");
		return BRAIDCTL_USAGE;
	}
	return change(b, BRAID_ADMINPROC_REBALANCE, NULL);
}

/* ----------------------------------------------------------------- ec */

static double ratio(uint64_t raw, uint64_t logical)
{
	return logical ? (double)raw / (double)logical : 0;
}

static int ec_status(struct braidctl *b)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_ec_status_res res;
	int rc = call(b, BRAID_ADMINPROC_EC_STATUS, NULL, &res, &ar);
	if (!rc && res.status)
		rc = refused(b, res.status, res.u.why);
	if (rc) {
		xdr_arena_release(&ar);
		return rc;
	}
	const braid_admin_ec_status_resok *o = &res.u.ok;
	FILE *f = b->out;
	if (b->o.json) {
		struct json j = {.f = f};
		j_open(&j, NULL, '{');
		j_u64(&j, "sealed_total", o->es_sealed_total);
		j_u64(&j, "unsealed_total", o->es_unsealed_total);
		j_u64(&j, "encode_bytes", o->es_encode_bytes);
		j_u64(&j, "encode_failures", o->es_encode_failures);
		j_u64(&j, "to_seal", o->es_to_seal);
		j_open(&j, "scrub", '{');
		j_u64(&j, "interval_s", o->es_scrub_interval_s);
		j_u64(&j, "passes", o->es_passes);
		j_bool(&j, "running", o->es_pass_running);
		j_u64(&j, "started", o->es_pass_started);
		j_u64(&j, "ended", o->es_pass_ended);
		j_u64(&j, "files", o->es_pass_files);
		j_u64(&j, "stripes", o->es_pass_stripes);
		j_u64(&j, "mismatches", o->es_pass_mismatches);
		j_u64(&j, "repairs", o->es_pass_repairs);
		j_u64(&j, "errors", o->es_pass_errors);
		j_close(&j, '}');
		j_open(&j, "space", '{');
		j_u64(&j, "files", o->es_files);
		j_u64(&j, "raw_bytes", o->es_raw);
		j_u64(&j, "logical_bytes", o->es_logical);
		j_f(&j, "ratio", ratio(o->es_raw, o->es_logical), 3);
		j_u64(&j, "ec_files", o->es_ec_files);
		j_u64(&j, "ec_sealed", o->es_ec_sealed);
		j_u64(&j, "ec_raw_bytes", o->es_ec_raw);
		j_u64(&j, "ec_logical_bytes", o->es_ec_logical);
		j_f(&j, "ec_ratio", ratio(o->es_ec_raw, o->es_ec_logical), 3);
		j_close(&j, '}');
		j_close(&j, '}');
		fputc('\n', f);
	} else {
		fprintf(f, "sealing       %llu sealed, %llu unsealed by writes, %llu to seal, "
			   "%llu parity bytes written, %llu failed tries\n",
			(unsigned long long)o->es_sealed_total, (unsigned long long)o->es_unsealed_total,
			(unsigned long long)o->es_to_seal, (unsigned long long)o->es_encode_bytes,
			(unsigned long long)o->es_encode_failures);
		if (!o->es_scrub_interval_s)
			fprintf(f, "scrub         off ([mds] ec_scrub_interval = 0)\n");
		else
			fprintf(f, "scrub         every %llu s, %llu passes\n",
				(unsigned long long)o->es_scrub_interval_s,
				(unsigned long long)o->es_passes);
		if (o->es_pass_started) {
			time_t t = (time_t)o->es_pass_started;
			char when[64];
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
			fprintf(f,
				"last pass     %s (%s): %llu files, %llu stripes, %llu mismatches, "
				"%llu repairs, %llu errors\n",
				when, o->es_pass_running ? "running" : "done",
				(unsigned long long)o->es_pass_files,
				(unsigned long long)o->es_pass_stripes,
				(unsigned long long)o->es_pass_mismatches,
				(unsigned long long)o->es_pass_repairs,
				(unsigned long long)o->es_pass_errors);
		}
		fprintf(f, "space, all    %llu files: %llu raw bytes, %llu logical (%.3f)\n",
			(unsigned long long)o->es_files, (unsigned long long)o->es_raw,
			(unsigned long long)o->es_logical, ratio(o->es_raw, o->es_logical));
		fprintf(f, "space, ec     %llu files (%llu sealed): %llu raw bytes, %llu logical (%.3f)\n",
			(unsigned long long)o->es_ec_files, (unsigned long long)o->es_ec_sealed,
			(unsigned long long)o->es_ec_raw, (unsigned long long)o->es_ec_logical,
			ratio(o->es_ec_raw, o->es_ec_logical));
	}
	xdr_arena_release(&ar);
	return BRAIDCTL_OK;
}

static int ec_scrub(struct braidctl *b, const char *path)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_path_args a = {xdr_string_of(path)};
	braid_admin_ec_scrub_res res;
	int rc = call(b, BRAID_ADMINPROC_EC_SCRUB, &a, &res, &ar);
	if (!rc && res.status)
		rc = refused(b, res.status, res.u.why);
	if (!rc) {
		const braid_admin_ec_scrub_resok *o = &res.u.ok;
		if (b->o.json) {
			struct json j = {.f = b->out};
			j_open(&j, NULL, '{');
			j_str(&j, "path", path);
			j_bool(&j, "sealed", o->sc_sealed);
			j_u64(&j, "stripes", o->sc_stripes);
			j_u64(&j, "mismatches", o->sc_mismatches);
			j_u64(&j, "repairs", o->sc_repairs);
			j_u64(&j, "errors", o->sc_errors);
			j_close(&j, '}');
			fputc('\n', b->out);
		} else if (!o->sc_sealed) {
			fprintf(b->out, "%s: not sealed (being written, or not yet quiet): its parity "
					"is not in use, nothing to scrub\n",
				path);
		} else {
			fprintf(b->out, "%s: %llu stripes verified, %llu parity mismatches, %llu "
					"chunks repaired, %llu stripes in error\n",
				path, (unsigned long long)o->sc_stripes,
				(unsigned long long)o->sc_mismatches, (unsigned long long)o->sc_repairs,
				(unsigned long long)o->sc_errors);
		}
		if (o->sc_errors)
			rc = BRAIDCTL_FAIL;
	}
	xdr_arena_release(&ar);
	return rc;
}

static int c_ec(struct braidctl *b, int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "status"))
		return ec_status(b);
	if (argc == 3 && !strcmp(argv[1], "scrub"))
		return ec_scrub(b, argv[2]);
	errorf(b, "usage: braidctl ec status | ec scrub PATH");
	return BRAIDCTL_USAGE;
}

/* ----------------------------------------------------------------- top */

#define TOP_ROWS 15 /* rows per table (the busiest) */

/* One sample: OPSTATS's reply, kept in its own arena. */
struct top_sample {
	struct xdr_arena ar;
	braid_admin_opstats_resok s;
	bool have;
};

static int top_fetch(struct braidctl *b, struct top_sample *t)
{
	xdr_arena_init(&t->ar, NULL, 0, 8u << 20);
	braid_admin_opstats_res res;
	int rc = call(b, BRAID_ADMINPROC_OPSTATS, NULL, &res, &t->ar);
	if (!rc && res.status)
		rc = refused(b, res.status, res.u.why);
	if (rc) {
		xdr_arena_release(&t->ar);
		return rc;
	}
	t->s = res.u.ok;
	t->have = true;
	return 0;
}

static void top_free(struct top_sample *t)
{
	if (t->have)
		xdr_arena_release(&t->ar);
	t->have = false;
}

static uint64_t dsub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0; /* a counter that went back (a session gone): 0 */
}

/* A row of a table: what it is, its rate and mean latency. */
struct top_row {
	char name[192];
	uint64_t id;
	double ops, ms, err, rmbps, wmbps, rms, wms, wops;
};

static int row_cmp(const void *x, const void *y)
{
	const struct top_row *a = x, *b = y;
	double ka = a->ops + a->wops, kb = b->ops + b->wops;
	return ka < kb ? 1 : ka > kb ? -1 : strcmp(a->name, b->name);
}

static const struct braid_admin_opstat *op_prev(const braid_admin_opstats_resok *p,
						const braid_admin_opstat *o)
{
	for (uint32_t i = 0; p && i < p->ot_ops.len; i++) {
		const braid_admin_opstat *x = &p->ot_ops.val[i];
		if (x->os_kind == o->os_kind && x->os_prog == o->os_prog &&
		    x->os_vers == o->os_vers && x->os_proc == o->os_proc)
			return x;
	}
	return NULL;
}

/* The rates between two samples (p may be NULL: since start), printed as
 * tables or one JSON object. */
static void top_show(struct braidctl *b, const braid_admin_opstats_resok *p,
		     const braid_admin_opstats_resok *c, bool clear)
{
	double dt = p ? (double)dsub(c->ot_now_ms, p->ot_now_ms) / 1e3 : 0;
	if (dt <= 0)
		dt = 1e-3;
	unsigned nops = c->ot_ops.len, ncl = c->ot_clients.len, nds = c->ot_ds.len;
	struct top_row *ops = calloc(nops + 1, sizeof(*ops)), *cl = calloc(ncl + 1, sizeof(*cl)),
		       *ds = calloc(nds + 1, sizeof(*ds));
	if (!ops || !cl || !ds) {
		free(ops), free(cl), free(ds);
		errorf(b, "out of memory");
		return;
	}
	unsigned no = 0;
	double total = 0;
	for (uint32_t i = 0; i < nops; i++) {
		const braid_admin_opstat *o = &c->ot_ops.val[i], *q = op_prev(p, o);
		/* NFSv4 operations, and the procedures of the other programs
		 * (COMPOUND itself is the sum of its operations) */
		char name[64];
		printable(name, sizeof(name), o->os_name.val, o->os_name.len);
		if (o->os_kind == 1 && o->os_prog == 100003 && !strcmp(name, "COMPOUND"))
			continue;
		uint64_t n = dsub(o->os_count, q ? q->os_count : 0);
		uint64_t ns = dsub(o->os_ns, q ? q->os_ns : 0);
		uint64_t e = dsub(o->os_errors, q ? q->os_errors : 0);
		struct top_row *r = &ops[no++];
		char prog[32];
		printable(prog, sizeof(prog), o->os_prog_name.val, o->os_prog_name.len);
		if (o->os_kind == 2)
			snprintf(r->name, sizeof(r->name), "NFSv4.%u %s", o->os_vers, name);
		else
			snprintf(r->name, sizeof(r->name), "%s v%u %s", prog, o->os_vers, name);
		r->ops = (double)n / dt;
		r->ms = n ? (double)ns / (double)n / 1e6 : 0;
		r->err = (double)e / dt;
		r->rmbps = (double)dsub(o->os_bytes, q ? q->os_bytes : 0) / dt / 1e6;
		total += r->ops;
	}
	for (uint32_t i = 0; i < ncl; i++) {
		const braid_admin_client_ops *o = &c->ot_clients.val[i], *q = NULL;
		for (uint32_t k = 0; p && k < p->ot_clients.len && !q; k++)
			if (p->ot_clients.val[k].co_clientid == o->co_clientid)
				q = &p->ot_clients.val[k];
		struct top_row *r = &cl[i];
		r->id = o->co_clientid;
		char nm[80], ad[80];
		printable(nm, sizeof(nm), o->co_name.val, o->co_name.len);
		printable(ad, sizeof(ad), o->co_addr.val, o->co_addr.len);
		/* a universal address (h1.h2.h3.h4.p1.p2) as host:port */
		char *p2 = strrchr(ad, '.'), *p1 = NULL;
		if (p2) {
			*p2 = 0;
			p1 = strrchr(ad, '.');
			*p2 = '.';
		}
		if (p1 && p2) {
			unsigned port = (unsigned)atoi(p1 + 1) * 256 + (unsigned)atoi(p2 + 1);
			*p1 = 0;
			char hp[96];
			snprintf(hp, sizeof(hp), "%s:%u", ad, port & 0xffff);
			memcpy(ad, hp, sizeof(ad) - 1);
			ad[sizeof(ad) - 1] = 0;
		}
		snprintf(r->name, sizeof(r->name), "%s%s%s", nm, ad[0] ? " @" : "", ad);
		uint64_t n = dsub(o->co_ops, q ? q->co_ops : 0);
		r->ops = (double)n / dt;
		r->ms = n ? (double)dsub(o->co_ns, q ? q->co_ns : 0) / (double)n / 1e6 : 0;
		r->err = (double)dsub(o->co_errors, q ? q->co_errors : 0) / dt;
		r->rmbps = (double)dsub(o->co_read_bytes, q ? q->co_read_bytes : 0) / dt / 1e6;
		r->wmbps = (double)dsub(o->co_write_bytes, q ? q->co_write_bytes : 0) / dt / 1e6;
	}
	for (uint32_t i = 0; i < nds; i++) {
		const braid_admin_ds_ops *o = &c->ot_ds.val[i], *q = NULL;
		for (uint32_t k = 0; p && k < p->ot_ds.len && !q; k++)
			if (p->ot_ds.val[k].do_id == o->do_id)
				q = &p->ot_ds.val[k];
		struct top_row *r = &ds[i];
		r->id = o->do_id;
		char h[64];
		printable(h, sizeof(h), o->do_host.val, o->do_host.len);
		snprintf(r->name, sizeof(r->name), "%s%s", h, o->do_up ? "" : " (down)");
		/* over the time between the heartbeats that carried them */
		double hdt = q && o->do_at_ms > q->do_at_ms
				 ? (double)(o->do_at_ms - q->do_at_ms) / 1e3
				 : (q ? 0 : (double)o->do_at_ms / 1e3);
		if (hdt <= 0)
			continue; /* no new heartbeat since: the last rates stand unknown */
		uint64_t rn = dsub(o->do_reads, q ? q->do_reads : 0);
		uint64_t wn = dsub(o->do_writes, q ? q->do_writes : 0);
		r->ops = (double)rn / hdt;
		r->wops = (double)wn / hdt;
		r->rms = rn ? (double)dsub(o->do_read_ns, q ? q->do_read_ns : 0) / (double)rn / 1e6 : 0;
		r->wms = wn ? (double)dsub(o->do_write_ns, q ? q->do_write_ns : 0) / (double)wn / 1e6 : 0;
		r->rmbps = (double)dsub(o->do_read_bytes, q ? q->do_read_bytes : 0) / hdt / 1e6;
		r->wmbps = (double)dsub(o->do_write_bytes, q ? q->do_write_bytes : 0) / hdt / 1e6;
	}
	qsort(ops, no, sizeof(*ops), row_cmp);
	qsort(cl, ncl, sizeof(*cl), row_cmp);
	if (b->o.json) {
		struct json j = {.f = b->out};
		j_open(&j, NULL, '{');
		j_u64(&j, "interval_ms", (uint64_t)(dt * 1e3));
		j_f(&j, "ops_per_s", total, 1);
		j_open(&j, "operations", '[');
		for (unsigned i = 0; i < no; i++) {
			j_open(&j, NULL, '{');
			j_str(&j, "name", ops[i].name);
			j_f(&j, "ops_per_s", ops[i].ops, 1);
			j_f(&j, "mean_ms", ops[i].ms, 3);
			j_f(&j, "errors_per_s", ops[i].err, 1);
			j_f(&j, "MBps", ops[i].rmbps, 2);
			j_close(&j, '}');
		}
		j_close(&j, ']');
		j_open(&j, "clients", '[');
		for (unsigned i = 0; i < ncl; i++) {
			j_open(&j, NULL, '{');
			j_u64(&j, "clientid", cl[i].id);
			j_str(&j, "name", cl[i].name);
			j_f(&j, "ops_per_s", cl[i].ops, 1);
			j_f(&j, "mean_ms", cl[i].ms, 3);
			j_f(&j, "errors_per_s", cl[i].err, 1);
			j_f(&j, "read_MBps", cl[i].rmbps, 2);
			j_f(&j, "write_MBps", cl[i].wmbps, 2);
			j_close(&j, '}');
		}
		j_close(&j, ']');
		j_open(&j, "data_servers", '[');
		for (unsigned i = 0; i < nds; i++) {
			j_open(&j, NULL, '{');
			j_u64(&j, "id", ds[i].id);
			j_str(&j, "name", ds[i].name);
			j_f(&j, "reads_per_s", ds[i].ops, 1);
			j_f(&j, "read_mean_ms", ds[i].rms, 3);
			j_f(&j, "read_MBps", ds[i].rmbps, 2);
			j_f(&j, "writes_per_s", ds[i].wops, 1);
			j_f(&j, "write_mean_ms", ds[i].wms, 3);
			j_f(&j, "write_MBps", ds[i].wmbps, 2);
			j_close(&j, '}');
		}
		j_close(&j, ']');
		j_close(&j, '}');
	} else {
		FILE *f = b->out;
		if (clear)
			fputs("\033[H\033[2J", f);
		fprintf(f, "braid-mds %s: %.0f operations/s over %.1f s\n\n", b->where, total, dt);
		char c1[32], c2[32], c3[32], c4[32], c5[32], c6[32];
		struct table t = {.ncols = 5};
		t_row(&t, "OPERATION", "OPS/S", "MEAN MS", "ERR/S", "MB/S");
		for (unsigned i = 0; i < no && i < TOP_ROWS; i++) {
			if (!ops[i].ops && i)
				break;
			snprintf(c1, sizeof(c1), "%.1f", ops[i].ops);
			snprintf(c2, sizeof(c2), "%.3f", ops[i].ms);
			snprintf(c3, sizeof(c3), "%.1f", ops[i].err);
			snprintf(c4, sizeof(c4), "%.2f", ops[i].rmbps);
			t_row(&t, ops[i].name, c1, c2, c3, c4);
		}
		t_print(&t, f);
		t_free(&t);
		fputc('\n', f);
		struct table u = {.ncols = 7};
		t_row(&u, "CLIENT", "NAME", "OPS/S", "MEAN MS", "ERR/S", "READ MB/S", "WRITE MB/S");
		for (unsigned i = 0; i < ncl && i < TOP_ROWS; i++) {
			char id[32];
			snprintf(id, sizeof(id), "%016" PRIx64, cl[i].id);
			snprintf(c1, sizeof(c1), "%.1f", cl[i].ops);
			snprintf(c2, sizeof(c2), "%.3f", cl[i].ms);
			snprintf(c3, sizeof(c3), "%.1f", cl[i].err);
			snprintf(c4, sizeof(c4), "%.2f", cl[i].rmbps);
			snprintf(c5, sizeof(c5), "%.2f", cl[i].wmbps);
			t_row(&u, id, cl[i].name, c1, c2, c3, c4, c5);
		}
		t_print(&u, f);
		t_free(&u);
		fputc('\n', f);
		struct table v = {.ncols = 8};
		t_row(&v, "DS", "HOST", "READS/S", "READ MS", "READ MB/S", "WRITES/S", "WRITE MS",
		      "WRITE MB/S");
		for (unsigned i = 0; i < nds; i++) {
			char id[16];
			snprintf(id, sizeof(id), "%" PRIu64, ds[i].id);
			snprintf(c1, sizeof(c1), "%.1f", ds[i].ops);
			snprintf(c2, sizeof(c2), "%.3f", ds[i].rms);
			snprintf(c3, sizeof(c3), "%.2f", ds[i].rmbps);
			snprintf(c4, sizeof(c4), "%.1f", ds[i].wops);
			snprintf(c5, sizeof(c5), "%.3f", ds[i].wms);
			snprintf(c6, sizeof(c6), "%.2f", ds[i].wmbps);
			t_row(&v, id, ds[i].name, c1, c2, c3, c4, c5, c6);
		}
		t_print(&v, f);
		t_free(&v);
		fprintf(f, "(data servers: their own counters, as their heartbeats carry them)\n");
	}
	fflush(b->out);
	free(ops);
	free(cl);
	free(ds);
}

static int c_top(struct braidctl *b, int argc, char **argv)
{
	double interval = 2;
	long count = -1;
	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
			interval = strtod(argv[++i], &end);
			if (!end || *end || interval < 0.1 || interval > 3600)
				goto usage;
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			count = strtol(argv[++i], &end, 10);
			if (!end || *end || count < 1)
				goto usage;
		} else {
			goto usage;
		}
	}
	bool clear = !b->o.json && isatty(fileno(b->out));
	struct top_sample prev = {0}, cur = {0};
	int rc = top_fetch(b, &prev);
	if (rc)
		return rc;
	for (long k = 0; count < 0 || k < count; k++) {
		struct timespec ts = {.tv_sec = (time_t)interval,
				      .tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9)};
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		if ((rc = top_fetch(b, &cur))) {
			top_free(&prev);
			return rc;
		}
		top_show(b, &prev.s, &cur.s, clear);
		top_free(&prev);
		prev = cur;
		cur.have = false;
	}
	top_free(&prev);
	return BRAIDCTL_OK;
usage:
	errorf(b, "usage: braidctl top [--interval SECONDS] [--count N]");
	return BRAIDCTL_USAGE;
}

/* ------------------------------------------------------------ dispatch */

static const struct {
	const char *name;
	int (*fn)(struct braidctl *b, int argc, char **argv);
} commands[] = {
    {"status", c_status}, {"ds", c_ds},		{"exports", c_exports}, {"clients", c_clients},
    {"layout", c_layout}, {"policy", c_policy}, {"recall", c_recall},
    {"rebuild", c_rebuild}, {"rebalance", c_rebalance}, {"top", c_top},
    {"ec", c_ec},
};

bool braidctl_command_known(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return true;
	return false;
}

int braidctl_run(struct braidctl *b, int argc, char **argv)
{
	for (size_t i = 0; argc > 0 && i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, argv[0])) {
			int rc = commands[i].fn(b, argc, argv);
			fflush(b->out);
			return rc;
		}
	errorf(b, "unknown command '%s' (braidctl --help lists them)", argc > 0 ? argv[0] : "");
	return BRAIDCTL_USAGE;
}
