/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "mds/exports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXPORTS_ANON_ID 65534u /* knfsd's default anonuid and anongid */
#define EXPORTS_SHOW 80        /* token bytes quoted in a message */

/* Why a token was refused, filled by the parsers below. */
struct exports_why {
	char msg[200];
};

static int exports_why_set(struct exports_why *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int exports_why_set(struct exports_why *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why->msg, sizeof(why->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}


/*
 * Lexing: a logical line (backslash-newline joins lines) split on blanks
 * into tokens; double quotes group blanks into a token and are removed;
 * '#' where a token would start comments out the rest of the line.
 */
struct exports_tok {
	char *s;
	unsigned line; /* physical line the token starts on */
};

struct exports_line {
	struct exports_tok *v;
	unsigned n, cap;
};

struct exports_lex {
	const char *s;
	unsigned line;
};

static void exports_line_clear(struct exports_line *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i].s);
	l->n = 0;
}

static bool exports_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Backslash-newline (or backslash-CRLF) at s: its length, else 0. */
static size_t exports_continuation(const char *s)
{
	if (s[0] != '\\')
		return 0;
	if (s[1] == '\n')
		return 2;
	if (s[1] == '\r' && s[2] == '\n')
		return 3;
	return 0;
}

/*
 * Walk one token from s: its text (quotes removed) goes to out when out is
 * not NULL.  Returns its length; *end is where it stops, *quoted whether a
 * quote was left open (at the end of the line).
 */
static size_t exports_tok_scan(const char *s, char *out, const char **end, bool *quoted)
{
	size_t n = 0;

	*quoted = false;
	for (; *s && *s != '\n'; s++) {
		if (*s == '"') {
			*quoted = !*quoted;
			continue;
		}
		if (!*quoted && (exports_is_blank(*s) || exports_continuation(s)))
			break;
		if (out)
			out[n] = *s;
		n++;
	}
	*end = s;
	return n;
}

static int exports_lex_token(struct exports_lex *lx, struct exports_line *l,
			     struct conf_error *err)
{
	const char *end;
	bool quoted;
	size_t n = exports_tok_scan(lx->s, NULL, &end, &quoted);
	char *buf;

	if (quoted)
		return conf_error_set(err, lx->line, "unterminated quote");
	buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	exports_tok_scan(lx->s, buf, &end, &quoted);
	buf[n] = '\0';
	if (l->n == l->cap) {
		unsigned cap = l->cap ? l->cap * 2 : 8;
		struct exports_tok *v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			free(buf);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].s = buf;
	l->v[l->n].line = lx->line;
	l->n++;
	lx->s = end;
	return 0;
}

/* The next logical line with tokens into l: 1, or 0 at the end, or -errno. */
static int exports_lex_line(struct exports_lex *lx, struct exports_line *l, struct conf_error *err)
{
	exports_line_clear(l);
	for (;;) {
		const char *s = lx->s;
		size_t cont = exports_continuation(s);
		int rc;

		if (!*s)
			return l->n > 0;
		if (*s == '\n') {
			lx->s++;
			lx->line++;
			if (l->n)
				return 1;
		} else if (cont) {
			lx->s += cont;
			lx->line++;
		} else if (exports_is_blank(*s)) {
			lx->s++;
		} else if (*s == '#') {
			while (*lx->s && *lx->s != '\n')
				lx->s++;
		} else {
			rc = exports_lex_token(lx, l, err);
			if (rc)
				return rc;
		}
	}
}

/*
 * Paths: \ooo octal escapes decoded (exports(5): "\040" for a space), then
 * normalized: absolute, '//' collapsed, no trailing '/', no '.' or '..'.
 */
static int exports_path_norm(char *p, struct exports_why *why)
{
	char *out = p;
	const char *in = p;

	if (*in != '/')
		return exports_why_set(why, "the path must be absolute");
	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		const char *comp = in;
		while (*in && *in != '/')
			in++;
		size_t n = (size_t)(in - comp);
		if ((n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.'))
			return exports_why_set(why, "the path must not contain '.' or '..'");
		*out++ = '/';
		memmove(out, comp, n);
		out += n;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
	if (strlen(p) >= PATH_MAX)
		return exports_why_set(why, "the path is longer than %d bytes", PATH_MAX - 1);
	return 0;
}

static bool exports_is_octal(char c)
{
	return c >= '0' && c <= '7';
}

static int exports_path_parse(const char *tok, char **out, struct exports_why *why)
{
	char *p = malloc(strlen(tok) + 1), *o = p;

	if (!p)
		return -ENOMEM;
	for (const char *s = tok; *s; s++) {
		if (s[0] == '\\' && exports_is_octal(s[1]) && exports_is_octal(s[2]) &&
		    exports_is_octal(s[3])) {
			unsigned v = (unsigned)(s[1] - '0') * 64 + (unsigned)(s[2] - '0') * 8 +
				     (unsigned)(s[3] - '0');
			if (v == 0 || v > 255) {
				free(p);
				return exports_why_set(why, "\\%.3s is not a byte a path can hold",
						       s + 1);
			}
			*o++ = (char)v;
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	if (exports_path_norm(p, why)) {
		free(p);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

/* Options: one declarative table; a row either sets/clears flags or parses a value. */
struct exports_opt {
	const char *name;
	unsigned set, clear;
	int (*parse)(struct export_client *c, const char *val, struct exports_why *why);
	const char *expect; /* for a value option: what the value should look like */
};

static int exports_parse_u32(const char *s, uint32_t *v)
{
	uint64_t n = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		n = n * 10 + (unsigned)(*s - '0');
		if (n > UINT32_MAX)
			return -ERANGE;
	}
	*v = (uint32_t)n;
	return 0;
}

static int exports_opt_anonuid(struct export_client *c, const char *val, struct exports_why *why)
{
	return exports_parse_u32(val, &c->anonuid) ? -EINVAL : 0;
}

static int exports_opt_anongid(struct export_client *c, const char *val, struct exports_why *why)
{
	return exports_parse_u32(val, &c->anongid) ? -EINVAL : 0;
}

static const struct {
	const char *name;
	uint32_t flavor;
} exports_flavors[] = {
	{ "none", EXPORT_SEC_NONE },   { "sys", EXPORT_SEC_SYS },     { "krb5", EXPORT_SEC_KRB5 },
	{ "krb5i", EXPORT_SEC_KRB5I }, { "krb5p", EXPORT_SEC_KRB5P },
};
#define EXPORTS_NFLAVORS (sizeof(exports_flavors) / sizeof(exports_flavors[0]))

static int exports_opt_sec(struct export_client *c, const char *val, struct exports_why *why)
{
	uint32_t sec[EXPORT_SEC_MAX];
	unsigned nsec = 0;
	const char *s = val;

	for (;;) {
		size_t n = strcspn(s, ":");
		size_t f;
		for (f = 0; f < EXPORTS_NFLAVORS; f++) {
			if (strlen(exports_flavors[f].name) == n &&
			    !strncmp(s, exports_flavors[f].name, n))
				break;
		}
		if (f == EXPORTS_NFLAVORS)
			return exports_why_set(why,
					       "unknown flavor \"%.*s\" (expected sys, krb5, "
					       "krb5i, krb5p or none)",
					       (int)(n < 32 ? n : 32), s);
		for (unsigned i = 0; i < nsec; i++) {
			if (sec[i] == exports_flavors[f].flavor)
				return exports_why_set(why, "flavor \"%s\" listed twice",
						       exports_flavors[f].name);
		}
		sec[nsec++] = exports_flavors[f].flavor; /* distinct, so nsec <= 5 */
		if (!s[n])
			break;
		s += n + 1;
	}
	memcpy(c->sec, sec, sizeof(sec));
	c->nsec = nsec;
	return 0;
}

static int exports_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int exports_opt_fsid(struct export_client *c, const char *val, struct exports_why *why)
{
	uint8_t uuid[16];
	unsigned nib = 0;
	uint32_t n;

	if (!strcmp(val, "root")) {
		c->fsid_kind = EXPORT_FSID_ROOT;
		c->fsid = 0;
		return 0;
	}
	if (exports_parse_u32(val, &n) == 0) {
		c->fsid_kind = n ? EXPORT_FSID_NUM : EXPORT_FSID_ROOT;
		c->fsid = n;
		return 0;
	}
	for (const char *s = val; *s; s++) {
		int h = exports_hex(*s);
		if (*s == '-' || *s == ':')
			continue;
		if (h < 0 || nib == 32)
			return -EINVAL;
		if (nib % 2 == 0)
			uuid[nib / 2] = (uint8_t)(h << 4);
		else
			uuid[nib / 2] |= (uint8_t)h;
		nib++;
	}
	if (nib != 32)
		return -EINVAL;
	c->fsid_kind = EXPORT_FSID_UUID;
	c->fsid = 0;
	memcpy(c->uuid, uuid, sizeof(uuid));
	return 0;
}

/* layout=: kept as written for braid-mds to judge; the characters a policy
 * text may hold (layout/policy.h, ':' for its ',') */
static int exports_opt_layout(struct export_client *c, const char *val, struct exports_why *why)
{
	size_t n = strlen(val);
	(void)why;
	if (n == 0 || n >= sizeof(c->layout))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!((val[i] >= 'a' && val[i] <= 'z') || (val[i] >= 'A' && val[i] <= 'Z') ||
		      (val[i] >= '0' && val[i] <= '9') || val[i] == '_' || val[i] == '=' ||
		      val[i] == ':'))
			return -EINVAL;
	memcpy(c->layout, val, n + 1);
	return 0;
}

static const struct exports_opt exports_opts[] = {
	{ "rw", EXPORT_RW, 0, NULL, NULL },
	{ "ro", 0, EXPORT_RW, NULL, NULL },
	{ "root_squash", EXPORT_ROOT_SQUASH, 0, NULL, NULL },
	{ "no_root_squash", 0, EXPORT_ROOT_SQUASH, NULL, NULL },
	{ "all_squash", EXPORT_ALL_SQUASH, 0, NULL, NULL },
	{ "no_all_squash", 0, EXPORT_ALL_SQUASH, NULL, NULL },
	{ "sync", 0, EXPORT_ASYNC, NULL, NULL },
	{ "async", EXPORT_ASYNC, 0, NULL, NULL },
	{ "secure", 0, EXPORT_INSECURE, NULL, NULL },
	{ "insecure", EXPORT_INSECURE, 0, NULL, NULL },
	{ "subtree_check", EXPORT_SUBTREE_CHECK, 0, NULL, NULL },
	{ "no_subtree_check", 0, EXPORT_SUBTREE_CHECK, NULL, NULL },
	{ "pnfs", EXPORT_PNFS, 0, NULL, NULL },
	{ "no_pnfs", 0, EXPORT_PNFS, NULL, NULL },
	{ "anonuid", 0, 0, exports_opt_anonuid, "a number 0..4294967295" },
	{ "anongid", 0, 0, exports_opt_anongid, "a number 0..4294967295" },
	{ "sec", 0, 0, exports_opt_sec, "flavors sys, krb5, krb5i, krb5p, none, ':'-separated" },
	{ "fsid", 0, 0, exports_opt_fsid, "a number, root, or a UUID of 32 hex digits" },
	{ "layout", 0, 0, exports_opt_layout,
	  "a layout policy, its parts ':'-separated (segments:segment_size=64M)" },
	{ NULL, 0, 0, NULL, NULL },
};

/* "rw,sec=krb5p,anonuid=99": later options override earlier ones, as in knfsd. */
static int exports_opts_parse(struct export_client *c, const char *opts, struct exports_why *why)
{
	const char *s = opts;
	bool had_sec = false;

	if (!*opts)
		return 0;
	for (;;) {
		size_t n = strcspn(s, ",");
		char item[128];
		const struct exports_opt *o;

		if (n == 0)
			return exports_why_set(why, "empty option");
		if (n >= sizeof(item))
			return exports_why_set(why, "option \"%.32s...\" is too long", s);
		memcpy(item, s, n);
		item[n] = '\0';
		char *eq = strchr(item, '=');
		if (eq)
			*eq = '\0';
		for (o = exports_opts; o->name; o++) {
			if (!strcmp(o->name, item))
				break;
		}
		if (eq)
			*eq = '=';
		if (!o->name)
			return exports_why_set(why, "unknown option \"%s\"", item);
		if (!o->parse && eq)
			return exports_why_set(why, "\"%s\": %s takes no value", item, o->name);
		if (o->parse && !eq)
			return exports_why_set(why, "\"%s\": expected %s=%s", item, o->name,
					       o->expect);
		if (o->parse == exports_opt_sec) {
			if (had_sec)
				return exports_why_set(why,
						       "\"%s\": sec= given twice (per-flavor "
						       "options are not supported)",
						       item);
			had_sec = true;
		}
		if (o->parse) {
			struct exports_why vwhy = { { 0 } };
			if (o->parse(c, eq + 1, &vwhy)) {
				if (vwhy.msg[0])
					return exports_why_set(why, "\"%s\": %s", item, vwhy.msg);
				return exports_why_set(why, "\"%s\": expected %s=%s", item, o->name,
						       o->expect);
			}
		}
		c->flags = (c->flags | o->set) & ~o->clear;
		if (!s[n])
			return 0;
		s += n + 1;
	}
}

static bool exports_is_name(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_';
}

/* a.b.c.d/len, a.b.c.d/m.a.s.k, ipv6/len */
static int exports_net_parse(struct export_client *c, const char *spec, const char *slash,
			     struct exports_why *why)
{
	char addr[INET6_ADDRSTRLEN];
	size_t alen = (size_t)(slash - spec);
	const char *mask = slash + 1;
	unsigned maxbits;
	uint32_t len;

	if (alen >= sizeof(addr))
		goto bad_addr;
	memcpy(addr, spec, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, c->addr) == 1) {
		c->family = AF_INET;
		maxbits = 32;
	} else if (inet_pton(AF_INET6, addr, c->addr) == 1) {
		c->family = AF_INET6;
		maxbits = 128;
	} else {
		goto bad_addr;
	}
	if (exports_parse_u32(mask, &len) == 0) {
		if (len > maxbits)
			return exports_why_set(why, "the prefix length must be 0..%u", maxbits);
		c->prefix = len;
	} else {
		struct in_addr m;
		if (c->family != AF_INET || inet_pton(AF_INET, mask, &m) != 1)
			return exports_why_set(why,
					       "\"%s\" is not a prefix length%s", mask,
					       c->family == AF_INET ? " or a netmask" : "");
		uint32_t h = ntohl(m.s_addr), inv = ~h;
		if (inv & (inv + 1))
			return exports_why_set(why, "netmask %s is not contiguous", mask);
		c->prefix = (unsigned)__builtin_popcount(h);
	}
	/* host bits set (10.1.2.3/8) are ignored, as knfsd does */
	for (unsigned b = c->prefix; b < maxbits; b++)
		c->addr[b / 8] &= (uint8_t) ~(0x80u >> (b % 8));
	c->kind = EXPORT_CLIENT_NET;
	return 0;
bad_addr:
	return exports_why_set(why, "\"%.*s\" is not an IPv4 or IPv6 network address",
			       (int)(alen < 64 ? alen : 64), spec);
}

static int exports_spec_parse(struct export_client *c, const char *spec, struct exports_why *why)
{
	bool wild = strpbrk(spec, "*?[") != NULL, digits_dots = true;

	c->family = 0;
	c->prefix = 0;
	memset(c->addr, 0, sizeof(c->addr));
	if (spec[0] == '@')
		return exports_why_set(why, "netgroups (@name) are not supported");
	if (!strcmp(spec, "*")) {
		c->kind = EXPORT_CLIENT_ANY;
		return 0;
	}
	const char *slash = strchr(spec, '/');
	if (slash)
		return exports_net_parse(c, spec, slash, why);
	if (inet_pton(AF_INET, spec, c->addr) == 1) {
		c->kind = EXPORT_CLIENT_HOST;
		c->family = AF_INET;
		c->prefix = 32;
		return 0;
	}
	if (inet_pton(AF_INET6, spec, c->addr) == 1) {
		c->kind = EXPORT_CLIENT_HOST;
		c->family = AF_INET6;
		c->prefix = 128;
		return 0;
	}
	for (const char *s = spec; *s; s++) {
		if (!exports_is_name(*s) && !(wild && strchr("*?[]!^", *s)))
			return exports_why_set(why,
					       "not a host name, address, network or wildcard "
					       "(unexpected '%c')",
					       *s);
		if (*s != '.' && (*s < '0' || *s > '9'))
			digits_dots = false;
	}
	if (digits_dots)
		return exports_why_set(why, "not a valid IPv4 address");
	c->kind = wild ? EXPORT_CLIENT_WILDCARD : EXPORT_CLIENT_HOST;
	return 0;
}

static void exports_client_defaults(struct export_client *c)
{
	memset(c, 0, sizeof(*c));
	c->kind = EXPORT_CLIENT_ANY;
	c->flags = EXPORT_DEFAULT_FLAGS;
	c->anonuid = EXPORTS_ANON_ID;
	c->anongid = EXPORTS_ANON_ID;
	c->sec[0] = EXPORT_SEC_SYS;
	c->nsec = 1;
}

/* "client" or "client(opts)" over the line's defaults. */
static int exports_client_parse(struct export_client *c, const char *tok,
				const struct export_client *def, struct exports_why *why)
{
	const char *lp = strchr(tok, '('), *opts = "";
	size_t slen = lp ? (size_t)(lp - tok) : strlen(tok);
	char *optbuf = NULL;
	int rc;

	*c = *def;
	c->spec = NULL;
	if (lp) {
		const char *rp = strchr(lp, ')');
		if (!rp)
			return exports_why_set(why, "'(' without ')' (no blanks are allowed inside "
						    "an option list)");
		if (rp[1])
			return exports_why_set(why, "text after ')'");
		optbuf = strndup(lp + 1, (size_t)(rp - lp) - 1);
		if (!optbuf)
			return -ENOMEM;
		opts = optbuf;
	}
	if (slen == 0) {
		free(optbuf);
		return exports_why_set(why, "options without a client (remove the blank before "
					    "'(', or write '*(...)' for everyone)");
	}
	c->spec = strndup(tok, slen);
	if (!c->spec) {
		free(optbuf);
		return -ENOMEM;
	}
	rc = exports_spec_parse(c, c->spec, why);
	if (!rc)
		rc = exports_opts_parse(c, opts, why);
	free(optbuf);
	if (rc) {
		free(c->spec);
		c->spec = NULL;
	}
	return rc;
}

/*
 * Array v of n elements with room for one more (capacity doubles at each
 * power of two), or NULL with v untouched when out of memory.
 */
static void *exports_grow(void *v, unsigned n, size_t size)
{
	if (n & (n - 1))
		return v; /* not a power of two (nor 0): there is room */
	return realloc(v, (n ? 2 * (size_t)n : 1) * size);
}

/* The export of 'path', appended if new; takes 'path' either way. */
static struct export_entry *exports_export_get(struct exports *ex, char *path, unsigned line)
{
	for (unsigned i = 0; i < ex->n; i++) {
		if (!strcmp(ex->v[i].path, path)) {
			free(path);
			return &ex->v[i];
		}
	}
	struct export_entry *v = exports_grow(ex->v, ex->n, sizeof(*v));
	if (!v) {
		free(path);
		return NULL;
	}
	ex->v = v;
	v[ex->n] = (struct export_entry){ .path = path, .line = line };
	return &v[ex->n++];
}

/* Append c (its spec now owned by e) unless its spec is already listed. */
static int exports_client_add(struct export_entry *e, struct export_client *c,
			      struct conf_error *err)
{
	for (unsigned i = 0; i < e->nclients; i++) {
		if (!strcasecmp(e->clients[i].spec, c->spec)) {
			int rc = conf_error_set(err, c->line,
					      "%.*s: client \"%.*s\" listed twice "
					      "(first on line %u)",
					      EXPORTS_SHOW, e->path, EXPORTS_SHOW, c->spec,
					      e->clients[i].line);
			free(c->spec);
			return rc;
		}
	}
	struct export_client *v = exports_grow(e->clients, e->nclients, sizeof(*v));
	if (!v) {
		free(c->spec);
		return -ENOMEM;
	}
	e->clients = v;
	v[e->nclients++] = *c;
	return 0;
}

static int exports_parse_line(struct exports *ex, const struct exports_line *l,
			      struct conf_error *err)
{
	const struct exports_tok *t = l->v;
	struct export_client def, c;
	struct exports_why why;
	struct export_entry *e;
	char *path = NULL;
	unsigned i = 1;
	int rc;

	rc = exports_path_parse(t[0].s, &path, &why);
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return conf_error_set(err, t[0].line, "\"%.*s\": %s", EXPORTS_SHOW, t[0].s, why.msg);
	exports_client_defaults(&def);
	if (i < l->n && t[i].s[0] == '-') {
		if (exports_opts_parse(&def, t[i].s + 1, &why)) {
			free(path);
			return conf_error_set(err, t[i].line, "%.*s: %s", EXPORTS_SHOW, t[i].s,
					    why.msg);
		}
		i++;
	}
	e = exports_export_get(ex, path, t[0].line);
	if (!e)
		return -ENOMEM;
	if (i == l->n) {
		/* no client list: everyone, with the defaults */
		c = def;
		c.kind = EXPORT_CLIENT_ANY;
		c.line = t[0].line;
		c.spec = strdup("*");
		if (!c.spec)
			return -ENOMEM;
		return exports_client_add(e, &c, err);
	}
	for (; i < l->n; i++) {
		rc = exports_client_parse(&c, t[i].s, &def, &why);
		if (rc == -ENOMEM)
			return rc;
		if (rc)
			return conf_error_set(err, t[i].line, "%.*s: %s", EXPORTS_SHOW, t[i].s,
					    why.msg);
		c.line = t[i].line;
		rc = exports_client_add(e, &c, err);
		if (rc)
			return rc;
	}
	return 0;
}

void exports_free(struct exports *ex)
{
	if (!ex)
		return;
	for (unsigned i = 0; i < ex->n; i++) {
		for (unsigned j = 0; j < ex->v[i].nclients; j++)
			free(ex->v[i].clients[j].spec);
		free(ex->v[i].clients);
		free(ex->v[i].path);
	}
	free(ex->v);
	free(ex);
}

int exports_parse_string(const char *name, const char *text, struct exports **out,
			 struct conf_error *err)
{
	struct exports_lex lx = { .s = text, .line = 1 };
	struct exports_line l = { 0 };
	struct exports *ex;
	int rc;

	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", name);
	*out = NULL;
	ex = calloc(1, sizeof(*ex));
	if (!ex)
		return conf_error_set(err, 0, "out of memory"), -ENOMEM;
	while ((rc = exports_lex_line(&lx, &l, err)) == 1) {
		rc = exports_parse_line(ex, &l, err);
		if (rc)
			break;
	}
	exports_line_clear(&l);
	free(l.v);
	if (rc == -ENOMEM)
		conf_error_set(err, 0, "out of memory");
	if (rc) {
		exports_free(ex);
		return rc;
	}
	*out = ex;
	return 0;
}

int exports_load(const char *path, struct exports **out, struct conf_error *err)
{
	char *text;
	int rc;

	*out = NULL;
	rc = conf_file_read(path, &text, err);
	if (rc)
		return rc;
	rc = exports_parse_string(path, text, out, err);
	free(text);
	return rc;
}

const struct export_entry *exports_find(const struct exports *ex, const char *path)
{
	struct exports_why why;
	char *p;

	if (!ex || !path)
		return NULL;
	p = strdup(path);
	if (!p)
		return NULL;
	if (exports_path_norm(p, &why)) {
		free(p);
		return NULL;
	}
	for (unsigned i = 0; i < ex->n; i++) {
		if (!strcmp(ex->v[i].path, p)) {
			free(p);
			return &ex->v[i];
		}
	}
	free(p);
	return NULL;
}

/* The peer's address as bytes; IPv4-mapped IPv6 becomes IPv4.  0 if neither. */
static int exports_peer_addr(const struct sockaddr *peer, uint8_t addr[16])
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!peer)
		return 0;
	if (peer->sa_family == AF_INET) {
		memcpy(addr, &((const struct sockaddr_in *)peer)->sin_addr, 4);
		return AF_INET;
	}
	if (peer->sa_family == AF_INET6) {
		const uint8_t *a = ((const struct sockaddr_in6 *)peer)->sin6_addr.s6_addr;
		if (!memcmp(a, v4mapped, sizeof(v4mapped))) {
			memcpy(addr, a + 12, 4);
			return AF_INET;
		}
		memcpy(addr, a, 16);
		return AF_INET6;
	}
	return 0;
}

static bool exports_prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned bytes = bits / 8, rest = bits % 8;

	if (memcmp(a, b, bytes))
		return false;
	if (!rest)
		return true;
	uint8_t mask = (uint8_t)(0xffu << (8 - rest));
	return (a[bytes] & mask) == (b[bytes] & mask);
}

static bool exports_client_matches(const struct export_client *c, int family,
				   const uint8_t *addr, const char *name)
{
	switch (c->kind) {
	case EXPORT_CLIENT_ANY:
		return true;
	case EXPORT_CLIENT_HOST:
	case EXPORT_CLIENT_NET:
		if (c->family)
			return family == c->family && exports_prefix_eq(addr, c->addr, c->prefix);
		return name && !strcasecmp(c->spec, name);
	case EXPORT_CLIENT_WILDCARD:
		return name && fnmatch(c->spec, name, FNM_CASEFOLD) == 0;
	}
	return false;
}

const struct export_client *exports_match(const struct exports *ex, const char *path,
					  const struct sockaddr *peer, const char *peer_hostname)
{
	const struct export_entry *e = exports_find(ex, path);
	char name[NI_MAXHOST];
	const char *n = NULL;
	uint8_t addr[16];
	int family;

	if (!e)
		return NULL;
	family = exports_peer_addr(peer, addr);
	if (peer_hostname) {
		/* "host.example.com." names the same host as "host.example.com" */
		size_t len = strlen(peer_hostname);
		if (len && peer_hostname[len - 1] == '.')
			len--;
		if (len && len < sizeof(name)) {
			memcpy(name, peer_hostname, len);
			name[len] = '\0';
			n = name;
		}
	}
	for (int kind = EXPORT_CLIENT_HOST; kind <= EXPORT_CLIENT_ANY; kind++) {
		for (unsigned i = 0; i < e->nclients; i++) {
			const struct export_client *c = &e->clients[i];
			if ((int)c->kind == kind && exports_client_matches(c, family, addr, n))
				return c;
		}
	}
	return NULL;
}

void export_squash(const struct export_client *c, uint32_t *uid, uint32_t *gid,
		   uint32_t *groups, uint32_t *ngroups)
{
	if (c->flags & EXPORT_ALL_SQUASH) {
		*uid = c->anonuid;
		*gid = c->anongid;
		if (ngroups)
			*ngroups = 0;
	} else if (c->flags & EXPORT_ROOT_SQUASH) {
		if (*uid == 0)
			*uid = c->anonuid;
		if (*gid == 0)
			*gid = c->anongid;
		for (uint32_t i = 0; ngroups && i < *ngroups; i++) {
			if (groups[i] == 0)
				groups[i] = c->anongid;
		}
	}
	/* knfsd: an unmappable id ((uid_t)-1) is never used as is */
	if (*uid == UINT32_MAX)
		*uid = c->anonuid;
	if (*gid == UINT32_MAX)
		*gid = c->anongid;
}
