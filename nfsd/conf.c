/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "nfsd/conf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONF_FILE_MAX (16u << 20)
#define CONF_SHOW 64 /* value bytes quoted in a message */

/* A place to explain why a value was refused, filled by the parsers. */
struct conf_why {
	char msg[192];
};

int conf_error_set(struct conf_error *err, unsigned line, const char *fmt, ...)
{
	va_list ap;

	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int conf_why_set(struct conf_why *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int conf_why_set(struct conf_why *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why->msg, sizeof(why->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void conf_error_print(const struct conf_error *err, FILE *f)
{
	if (err->line)
		fprintf(f, "%s:%u: %s\n", err->file, err->line, err->msg);
	else
		fprintf(f, "%s: %s\n", err->file, err->msg);
}

static bool conf_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool conf_is_name(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

static bool conf_is_comment(char c)
{
	return c == '#' || c == ';';
}

/* "[section] key" or "[section \"sub\"] key", for messages. */
static const char *conf_row_label(const struct conf_schema *r, char *buf, size_t len)
{
	if (r->subsection)
		snprintf(buf, len, "[%s \"%s\"] %s", r->section, r->subsection, r->key);
	else
		snprintf(buf, len, "[%s] %s", r->section, r->key);
	return buf;
}

/* Decimal digits at *s, at least one; *s is left after them. */
static int conf_parse_digits(const char **s, uint64_t *v)
{
	const char *p = *s;
	uint64_t n = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (n > (UINT64_MAX - d) / 10)
			return -ERANGE;
		n = n * 10 + d;
	}
	*s = p;
	*v = n;
	return 0;
}

static const char *const conf_true[] = { "1", "yes", "true", "on", "y", "t", NULL };
static const char *const conf_false[] = { "0", "no", "false", "off", "n", "f", NULL };

static int conf_parse_bool(const char *s, bool *v, struct conf_why *why)
{
	for (int i = 0; conf_true[i]; i++) {
		if (!strcasecmp(s, conf_true[i])) {
			*v = true;
			return 0;
		}
	}
	for (int i = 0; conf_false[i]; i++) {
		if (!strcasecmp(s, conf_false[i])) {
			*v = false;
			return 0;
		}
	}
	return conf_why_set(why,
			    "\"%.*s\" is not a boolean (expected yes/no, true/false, on/off, 1/0)",
			    CONF_SHOW, s);
}

static int conf_parse_int(const char *s, int64_t *v, struct conf_why *why)
{
	const char *p = s;
	bool neg = false;
	uint64_t n;
	int rc;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	rc = conf_parse_digits(&p, &n);
	uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	if (rc == -ERANGE || (!rc && !*p && n > limit))
		return conf_why_set(why, "\"%.*s\" is too large for an integer", CONF_SHOW, s);
	if (rc || *p)
		return conf_why_set(why, "\"%.*s\" is not an integer (expected decimal digits)",
				    CONF_SHOW, s);
	/* -(INT64_MAX + 1) without signed overflow */
	*v = neg ? (int64_t)(0 - n) : (int64_t)n;
	return 0;
}

struct conf_unit {
	const char *suffix;
	uint64_t mult;
};

/* Longest suffix first where one is a prefix of another ("ms" before "m"). */
static const struct conf_unit conf_size_units[] = {
	{ "", 1 },           { "k", 1ull << 10 }, { "m", 1ull << 20 },
	{ "g", 1ull << 30 }, { "t", 1ull << 40 }, { NULL, 0 },
};
static const struct conf_unit conf_duration_units[] = {
	{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { NULL, 0 },
};

/* A number followed by one of 'units' (case-insensitive). */
static int conf_parse_unit(const char *s, const struct conf_unit *units, uint64_t *v)
{
	const char *p = s;
	uint64_t n;
	int rc = conf_parse_digits(&p, &n);

	if (rc)
		return rc;
	for (; units->suffix; units++) {
		if (strcasecmp(p, units->suffix))
			continue;
		if (n > UINT64_MAX / units->mult)
			return -ERANGE;
		*v = n * units->mult;
		return 0;
	}
	return -EINVAL;
}

static int conf_parse_size(const char *s, uint64_t *v, struct conf_why *why)
{
	int rc = conf_parse_unit(s, conf_size_units, v);

	if (rc == -ERANGE)
		return conf_why_set(why, "\"%.*s\" is too large", CONF_SHOW, s);
	if (rc)
		return conf_why_set(why,
				    "\"%.*s\" is not a size (expected a number with optional "
				    "k, m, g, t)",
				    CONF_SHOW, s);
	return 0;
}

static int conf_parse_duration(const char *s, uint64_t *v, struct conf_why *why)
{
	int rc = conf_parse_unit(s, conf_duration_units, v);

	if (rc == -ERANGE)
		return conf_why_set(why, "\"%.*s\" is too large", CONF_SHOW, s);
	if (rc)
		return conf_why_set(why,
				    "\"%.*s\" is not a duration (expected a number of seconds, or "
				    "with ms, s, m, h)",
				    CONF_SHOW, s);
	return 0;
}

/* n with the largest unit that divides it exactly: 65536 -> "64k", 90000 -> "90s". */
static const char *conf_size_fmt(uint64_t n, char *buf, size_t len)
{
	for (int i = 4; i >= 1; i--) {
		const struct conf_unit *u = &conf_size_units[i];
		if (n && n % u->mult == 0) {
			snprintf(buf, len, "%" PRIu64 "%s", n / u->mult, u->suffix);
			return buf;
		}
	}
	snprintf(buf, len, "%" PRIu64, n);
	return buf;
}

static const char *conf_duration_fmt(uint64_t ms, char *buf, size_t len)
{
	for (int i = 4; i >= 2; i--) {
		const struct conf_unit *u = &conf_duration_units[i];
		if ((ms || i == 2) && ms % u->mult == 0) {
			snprintf(buf, len, "%" PRIu64 "%s", ms / u->mult, u->suffix);
			return buf;
		}
	}
	snprintf(buf, len, "%" PRIu64 "ms", ms);
	return buf;
}

/*
 * One address, NUL-terminated: "1.2.3.4:2049" or "[2001:db8::1]:2049" (a
 * scope, "%eth0", may follow an IPv6 host).  Literals only: resolving names
 * here would make startup depend on DNS.
 */
static int conf_parse_addr(char *s, struct sockaddr_storage *ss, struct conf_why *why)
{
	char shown[CONF_SHOW + 1];
	const char *host = s, *port;
	char *colon;
	uint64_t pn;

	snprintf(shown, sizeof(shown), "%s", s);
	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':')
			goto bad;
		*rb = '\0';
		host = s + 1;
		port = rb + 2;
	} else {
		colon = strchr(s, ':');
		if (!colon)
			goto bad;
		if (strchr(colon + 1, ':'))
			return conf_why_set(why,
					    "\"%s\": an IPv6 host needs brackets, as in [::1]:2049",
					    shown);
		*colon = '\0';
		port = colon + 1;
	}
	if (conf_parse_digits(&port, &pn) || *port || pn > 65535)
		return conf_why_set(why, "\"%s\": the port must be a number 0..65535", shown);
	if (host == s) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			goto bad;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)pn);
	} else {
		struct addrinfo hints = { .ai_family = AF_INET6, .ai_flags = AI_NUMERICHOST };
		struct addrinfo *ai = NULL;
		if (getaddrinfo(host, NULL, &hints, &ai) || !ai ||
		    ai->ai_addrlen != sizeof(struct sockaddr_in6)) {
			if (ai)
				freeaddrinfo(ai);
			goto bad;
		}
		memcpy(ss, ai->ai_addr, sizeof(struct sockaddr_in6));
		freeaddrinfo(ai);
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)pn);
	}
	return 0;
bad:
	return conf_why_set(why,
			    "\"%s\" is not an address (expected host:port with an IPv4 literal "
			    "or a bracketed IPv6 literal as host)",
			    shown);
}

/* A comma-separated list, appended to *a. */
static int conf_parse_addrs(const char *val, struct conf_addrs *a, struct conf_why *why)
{
	char *copy = strdup(val), *item, *next;
	int rc = 0;

	if (!copy)
		return conf_why_set(why, "out of memory");
	for (item = copy; item && rc == 0; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		while (conf_is_space(*item))
			item++;
		size_t n = strlen(item);
		while (n && conf_is_space(item[n - 1]))
			item[--n] = '\0';
		if (!n) {
			/* "" is an empty list; an empty item inside one is a typo */
			if (next || item != copy)
				rc = conf_why_set(why, "\"%.*s\" has an empty address", CONF_SHOW,
						  val);
			continue;
		}
		if (a->n == CONF_ADDRS_MAX) {
			rc = conf_why_set(why, "more than %d addresses", CONF_ADDRS_MAX);
			break;
		}
		rc = conf_parse_addr(item, &a->addr[a->n], why);
		if (!rc)
			a->n++;
	}
	free(copy);
	return rc;
}

static int conf_check_range(const struct conf_schema *r, int64_t sv, uint64_t uv,
			    struct conf_why *why)
{
	char lo[32], hi[32], v[32];

	if (r->max <= r->min)
		return 0;
	switch (r->type) {
	case CONF_INT:
		if (sv >= r->min && sv <= r->max)
			return 0;
		return conf_why_set(why,
				    "%" PRId64 " is out of range (expected %" PRId64 "..%" PRId64
				    ")",
				    sv, r->min, r->max);
	case CONF_SIZE:
		if (uv >= (uint64_t)r->min && uv <= (uint64_t)r->max)
			return 0;
		return conf_why_set(why, "%s is out of range (expected %s..%s)",
				    conf_size_fmt(uv, v, sizeof(v)),
				    conf_size_fmt((uint64_t)r->min, lo, sizeof(lo)),
				    conf_size_fmt((uint64_t)r->max, hi, sizeof(hi)));
	case CONF_DURATION:
		if (uv >= (uint64_t)r->min && uv <= (uint64_t)r->max)
			return 0;
		return conf_why_set(why, "%s is out of range (expected %s..%s)",
				    conf_duration_fmt(uv, v, sizeof(v)),
				    conf_duration_fmt((uint64_t)r->min, lo, sizeof(lo)),
				    conf_duration_fmt((uint64_t)r->max, hi, sizeof(hi)));
	default:
		return 0;
	}
}

static int conf_parse_enum(const struct conf_schema *r, const char *val, int *idx,
			   struct conf_why *why)
{
	char list[128];
	size_t o = 0;

	for (int i = 0; r->values[i]; i++) {
		if (!strcmp(val, r->values[i])) {
			*idx = i;
			return 0;
		}
	}
	list[0] = '\0';
	for (int i = 0; r->values[i] && o < sizeof(list); i++) {
		int n = snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", r->values[i]);
		if (n < 0)
			break;
		o += (size_t)n;
	}
	return conf_why_set(why, "\"%.*s\" is not one of: %s", CONF_SHOW, val, list);
}

/*
 * Parse 'val' for row 'r' and store it in 'settings'.  'append' adds to an
 * address list instead of replacing it.
 */
static int conf_value_set(const struct conf_schema *r, void *settings, const char *val,
			  bool append, struct conf_why *why)
{
	char *dst = (char *)settings + r->off;
	int64_t sv = 0;
	uint64_t uv = 0;
	bool b = false;
	int rc, idx = 0;

	switch (r->type) {
	case CONF_BOOL:
		rc = conf_parse_bool(val, &b, why);
		if (!rc)
			*(bool *)dst = b;
		return rc;
	case CONF_INT:
		rc = conf_parse_int(val, &sv, why);
		if (!rc)
			rc = conf_check_range(r, sv, 0, why);
		if (!rc)
			*(int64_t *)dst = sv;
		return rc;
	case CONF_SIZE:
	case CONF_DURATION:
		if (r->type == CONF_SIZE)
			rc = conf_parse_size(val, &uv, why);
		else
			rc = conf_parse_duration(val, &uv, why);
		if (!rc)
			rc = conf_check_range(r, 0, uv, why);
		if (!rc)
			*(uint64_t *)dst = uv;
		return rc;
	case CONF_STRING:
		if (strlen(val) >= r->size)
			return conf_why_set(why, "\"%.*s...\" is too long (at most %zu bytes)",
					    CONF_SHOW / 2, val, r->size - 1);
		memcpy(dst, val, strlen(val) + 1);
		return 0;
	case CONF_ENUM:
		rc = conf_parse_enum(r, val, &idx, why);
		if (!rc)
			*(int *)dst = idx;
		return rc;
	case CONF_ADDRS: {
		struct conf_addrs *a = (struct conf_addrs *)dst;
		struct conf_addrs tmp = *a;
		if (!append)
			tmp.n = 0;
		rc = conf_parse_addrs(val, &tmp, why);
		if (!rc)
			*a = tmp;
		return rc;
	}
	}
	return conf_why_set(why, "unknown type %d", (int)r->type);
}

static size_t conf_type_size(enum conf_type t)
{
	switch (t) {
	case CONF_BOOL:
		return sizeof(bool);
	case CONF_INT:
		return sizeof(int64_t);
	case CONF_SIZE:
	case CONF_DURATION:
		return sizeof(uint64_t);
	case CONF_ENUM:
		return sizeof(int);
	case CONF_ADDRS:
		return sizeof(struct conf_addrs);
	case CONF_STRING:
		return 0; /* any char[N], N >= 1 */
	}
	return 0;
}

static bool conf_name_ok(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (!conf_is_name(*s))
			return false;
	}
	return true;
}

static bool conf_same_section(const struct conf_schema *r, const char *sec, const char *sub)
{
	if (strcasecmp(r->section, sec))
		return false;
	if (!r->subsection || !sub)
		return !r->subsection && !sub;
	return !strcmp(r->subsection, sub);
}

/* Programming errors in a schema: caught on every load, so a test finds them. */
static int conf_schema_check(const struct conf_schema *schema, struct conf_error *err)
{
	char label[160];

	for (const struct conf_schema *r = schema; r->section; r++) {
		conf_row_label(r, label, sizeof(label));
		if (!conf_name_ok(r->section) || !conf_name_ok(r->key) ||
		    (r->subsection && (!*r->subsection || strchr(r->subsection, '"'))))
			return conf_error_set(err, 0, "schema: %s: bad section, subsection or key name",
					 label);
		if (r->type < CONF_BOOL || r->type > CONF_ADDRS)
			return conf_error_set(err, 0, "schema: %s: unknown type", label);
		size_t want = conf_type_size(r->type);
		if ((want && r->size != want) || r->size == 0)
			return conf_error_set(err, 0,
					 "schema: %s: field is %zu bytes, its type needs %zu "
					 "(use CONF_AT)",
					 label, r->size, want);
		if (r->type == CONF_ENUM && (!r->values || !r->values[0]))
			return conf_error_set(err, 0, "schema: %s: enum without values", label);
		if ((r->type == CONF_SIZE || r->type == CONF_DURATION) && r->max > r->min &&
		    r->min < 0)
			return conf_error_set(err, 0, "schema: %s: negative minimum", label);
		if (!r->desc || !*r->desc)
			return conf_error_set(err, 0, "schema: %s: no description", label);
		for (const struct conf_schema *q = schema; q < r; q++) {
			if (conf_same_section(q, r->section, r->subsection) &&
			    !strcasecmp(q->key, r->key))
				return conf_error_set(err, 0, "schema: %s: listed twice", label);
		}
	}
	return 0;
}

static int conf_defaults_set(const struct conf_schema *schema, void *settings,
			     struct conf_error *err)
{
	struct conf_why why;
	char label[160];

	for (const struct conf_schema *r = schema; r->section; r++) {
		memset((char *)settings + r->off, 0, r->size);
		if (r->def && conf_value_set(r, settings, r->def, false, &why))
			return conf_error_set(err, 0, "schema: %s: default: %s",
					 conf_row_label(r, label, sizeof(label)), why.msg);
	}
	return 0;
}

/* State while reading one file. */
struct conf_parse {
	const struct conf_schema *schema;
	void *settings;
	struct conf_error *err;
	unsigned *first; /* per row: the line that first set it, 0 if none yet */
	const struct conf_schema *cur; /* first row of the current section, NULL before one */
};

static const char *conf_cur_label(const struct conf_parse *p, char *buf, size_t len)
{
	if (p->cur->subsection)
		snprintf(buf, len, "[%s \"%s\"]", p->cur->section, p->cur->subsection);
	else
		snprintf(buf, len, "[%s]", p->cur->section);
	return buf;
}

/* After a header or a closing quote: nothing, or a comment. */
static bool conf_rest_empty(const char *s)
{
	while (conf_is_space(*s))
		s++;
	return !*s || conf_is_comment(*s);
}

/* '[name]' or '[name "sub"]'; s is trimmed and starts with '['. */
static int conf_parse_header(struct conf_parse *p, char *s, unsigned line)
{
	char *name, *sub = NULL, *q = s + 1;
	size_t nlen;
	char label[220];

	while (conf_is_space(*q))
		q++;
	name = q;
	while (conf_is_name(*q))
		q++;
	nlen = (size_t)(q - name);
	while (conf_is_space(*q))
		q++;
	if (*q == '"') {
		sub = ++q;
		q = strchr(q, '"');
		if (!q)
			goto bad;
		*q++ = '\0';
		while (conf_is_space(*q))
			q++;
	}
	if (*q != ']' || !nlen || (sub && !*sub) || !conf_rest_empty(q + 1))
		goto bad;
	name[nlen] = '\0';

	p->cur = NULL;
	for (const struct conf_schema *r = p->schema; r->section; r++) {
		if (conf_same_section(r, name, sub)) {
			p->cur = r;
			return 0;
		}
	}
	if (sub)
		snprintf(label, sizeof(label), "[%.64s \"%.64s\"]", name, sub);
	else
		snprintf(label, sizeof(label), "[%.64s]", name);
	return conf_error_set(p->err, line, "unknown section %s", label);
bad:
	return conf_error_set(p->err, line,
			 "malformed section header (expected [name] or [name \"subsection\"])");
}

/*
 * The value after '=': quoted (the quotes removed; in double quotes \" and
 * \\ are escapes) or bare up to a comment ('#' or ';' after whitespace;
 * 'after_space' says whether whitespace came before v).  Set *quoted when it
 * was quoted.
 */
static int conf_parse_value(char *v, bool after_space, bool *quoted, struct conf_why *why)
{
	*quoted = false;
	if (*v == '"' || *v == '\'') {
		char q = *v, *in = v + 1, *out = v;
		for (; *in && *in != q; in++) {
			if (q == '"' && *in == '\\' && (in[1] == '"' || in[1] == '\\'))
				in++;
			*out++ = *in;
		}
		if (!*in)
			return conf_why_set(why, "unterminated quote");
		if (!conf_rest_empty(in + 1))
			return conf_why_set(why, "text after the closing quote");
		*out = '\0';
		*quoted = true;
		return 0;
	}
	for (char *c = v; *c; c++) {
		if (conf_is_comment(*c) && (c > v ? conf_is_space(c[-1]) : after_space)) {
			*c = '\0';
			break;
		}
	}
	size_t n = strlen(v);
	while (n && conf_is_space(v[n - 1]))
		v[--n] = '\0';
	return 0;
}

/* 'key = value'; s is trimmed. */
static int conf_parse_assign(struct conf_parse *p, char *s, unsigned line)
{
	char *key = s, *q = s, label[220], cur[200];
	const struct conf_schema *r;
	struct conf_why why;
	bool quoted;

	while (conf_is_name(*q))
		q++;
	size_t klen = (size_t)(q - key);
	while (conf_is_space(*q))
		q++;
	if (!klen || *q != '=')
		return conf_error_set(p->err, line,
				 "expected 'key = value', '[section]' or a comment, not \"%.*s\"",
				 CONF_SHOW, s);
	key[klen] = '\0';
	q++;
	bool after_space = conf_is_space(*q);
	while (conf_is_space(*q))
		q++;
	if (!p->cur)
		return conf_error_set(p->err, line, "%.64s: outside any [section]", key);
	conf_cur_label(p, cur, sizeof(cur));
	for (r = p->schema; r->section; r++) {
		if (conf_same_section(r, p->cur->section, p->cur->subsection) &&
		    !strcasecmp(r->key, key))
			break;
	}
	if (!r->section)
		return conf_error_set(p->err, line, "%s %.64s: unknown key", cur, key);
	conf_row_label(r, label, sizeof(label));
	if (conf_parse_value(q, after_space, &quoted, &why))
		return conf_error_set(p->err, line, "%s: %s", label, why.msg);
	if (!*q && !quoted)
		return conf_error_set(p->err, line,
				 "%s: empty value (remove the line to use the default)", label);

	unsigned *first = &p->first[r - p->schema];
	if (*first && !(r->flags & CONF_REPEAT))
		return conf_error_set(p->err, line, "%s: set twice (first on line %u)", label, *first);
	if (conf_value_set(r, p->settings, q, *first != 0, &why))
		return conf_error_set(p->err, line, "%s: %s", label, why.msg);
	if (!*first)
		*first = line;
	return 0;
}

static int conf_parse_text(struct conf_parse *p, const char *text)
{
	size_t len = strlen(text);
	char *buf = malloc(len + 1);
	unsigned line = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (const char *s = text; *s && !rc;) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		char *b = buf;

		line++;
		memcpy(buf, s, n);
		buf[n] = '\0';
		s += n + (nl != NULL);
		while (conf_is_space(*b))
			b++;
		while (n && conf_is_space(buf[n - 1]))
			buf[--n] = '\0';
		if (!*b || conf_is_comment(*b))
			continue;
		if (*b == '[')
			rc = conf_parse_header(p, b, line);
		else
			rc = conf_parse_assign(p, b, line);
	}
	free(buf);
	return rc;
}

int conf_load_string(const struct conf_schema *schema, void *settings, const char *name,
		     const char *text, struct conf_error *err)
{
	struct conf_parse p = { .schema = schema, .settings = settings, .err = err };
	size_t nrows = 0;
	int rc;

	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", name);
	rc = conf_schema_check(schema, err);
	if (rc)
		return rc;
	rc = conf_defaults_set(schema, settings, err);
	if (rc)
		return rc;
	while (schema[nrows].section)
		nrows++;
	p.first = calloc(nrows + 1, sizeof(*p.first));
	if (!p.first)
		return conf_error_set(err, 0, "out of memory"), -ENOMEM;
	rc = conf_parse_text(&p, text);
	if (rc == -ENOMEM)
		conf_error_set(err, 0, "out of memory");
	free(p.first);
	return rc;
}

int conf_file_read(const char *path, char **text, struct conf_error *err)
{
	struct stat st;
	size_t len = 0;
	char *buf;
	int fd, rc;

	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", path);
	*text = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		conf_error_set(err, 0, "cannot open: %s", strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		conf_error_set(err, 0, "cannot stat: %s", strerror(-rc));
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > CONF_FILE_MAX) {
		rc = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		conf_error_set(err, 0, "%s",
			  S_ISREG(st.st_mode) ? "larger than 16 MiB" : "not a regular file");
		close(fd);
		return rc;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return conf_error_set(err, 0, "out of memory"), -ENOMEM;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			conf_error_set(err, 0, "cannot read: %s", strerror(-rc));
			free(buf);
			close(fd);
			return rc;
		}
		if (n == 0)
			break; /* shrank under us: parse what is there */
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	const char *nul = memchr(buf, '\0', len);
	if (nul) {
		unsigned line = 1;
		for (const char *c = buf; c < nul; c++)
			line += *c == '\n';
		free(buf);
		return conf_error_set(err, line, "contains a NUL byte");
	}
	*text = buf;
	return 0;
}

int conf_load(const struct conf_schema *schema, void *settings, const char *path,
	      struct conf_error *err)
{
	char *text;
	int rc = conf_file_read(path, &text, err);

	if (rc) {
		/* a missing file still gets the defaults, so a caller may go on */
		struct conf_error derr;
		if (conf_schema_check(schema, &derr) == 0)
			conf_defaults_set(schema, settings, &derr);
		return rc;
	}
	rc = conf_load_string(schema, settings, path, text, err);
	free(text);
	return rc;
}

static void conf_type_describe(const struct conf_schema *r, char *buf, size_t len)
{
	char lo[32], hi[32];
	size_t o = 0;

	switch (r->type) {
	case CONF_BOOL:
		o = (size_t)snprintf(buf, len, "bool");
		break;
	case CONF_INT:
		if (r->max > r->min)
			o = (size_t)snprintf(buf, len, "int %" PRId64 "..%" PRId64, r->min, r->max);
		else
			o = (size_t)snprintf(buf, len, "int");
		break;
	case CONF_SIZE:
		if (r->max > r->min)
			o = (size_t)snprintf(buf, len, "size %s..%s",
					     conf_size_fmt((uint64_t)r->min, lo, sizeof(lo)),
					     conf_size_fmt((uint64_t)r->max, hi, sizeof(hi)));
		else
			o = (size_t)snprintf(buf, len, "size");
		break;
	case CONF_DURATION:
		if (r->max > r->min)
			o = (size_t)snprintf(buf, len, "duration %s..%s",
					     conf_duration_fmt((uint64_t)r->min, lo, sizeof(lo)),
					     conf_duration_fmt((uint64_t)r->max, hi, sizeof(hi)));
		else
			o = (size_t)snprintf(buf, len, "duration");
		break;
	case CONF_STRING:
		o = (size_t)snprintf(buf, len, "string");
		break;
	case CONF_ENUM:
		o = (size_t)snprintf(buf, len, "enum ");
		for (int i = 0; r->values && r->values[i] && o < len; i++)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "|" : "", r->values[i]);
		break;
	case CONF_ADDRS:
		o = (size_t)snprintf(buf, len, "addrs");
		break;
	}
	if ((r->flags & CONF_REPEAT) && o < len)
		snprintf(buf + o, len - o, " repeat");
}

void conf_schema_dump(const struct conf_schema *schema, FILE *f)
{
	char type[256];

	fprintf(f, "# section\tkey\ttype\tdefault\tdescription\n");
	for (const struct conf_schema *r = schema; r->section; r++) {
		conf_type_describe(r, type, sizeof(type));
		if (r->subsection)
			fprintf(f, "%s \"%s\"", r->section, r->subsection);
		else
			fprintf(f, "%s", r->section);
		fprintf(f, "\t%s\t%s\t%s\t%s\n", r->key, type, r->def ? r->def : "",
			r->desc ? r->desc : "");
	}
}
