/* SPDX-License-Identifier: MIT */
/*
 * /etc/exports (exports(5)): every client form and option, line syntax
 * (quotes, octal escapes, continuations, comments, '-opts' defaults),
 * errors with file:line, matching of IPv4/IPv6 hosts and networks, names
 * and wildcards in exports(5) precedence order, and knfsd's squashing.
 * Unit tier: a temporary file for exports_load() only.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mds/exports.h"
#include "tests/check.h"

#define STR(x) STR2(x)
#define STR2(x) #x
#define HERE __FILE__ ":" STR(__LINE__)

static struct conf_error err;

static struct exports *parse_at(const char *text, const char *where)
{
	struct exports *ex = NULL;
	int rc = exports_parse_string("exports", text, &ex, &err);
	if (rc) {
		fprintf(stderr, "%s: unexpected error %d for:\n%s\n", where, rc, text);
		conf_error_print(&err, stderr);
		exit(1);
	}
	CHECK(ex);
	return ex;
}
#define PARSE(text) parse_at(text, HERE)

/* Parsing fails with exactly "exports:<line>: <msg>". */
static void bad_at(unsigned line, const char *text, const char *msg, const char *where)
{
	struct exports *ex = (struct exports *)1;
	int rc = exports_parse_string("exports", text, &ex, &err);
	if (rc != -EINVAL || ex != NULL || strcmp(err.file, "exports") || err.line != line ||
	    strcmp(err.msg, msg)) {
		fprintf(stderr, "%s: for:\n%s\nwanted exports:%u: %s\ngot rc %d: ", where, text,
			line, msg, rc);
		conf_error_print(&err, stderr);
		exit(1);
	}
}
#define BAD(line, text, msg) bad_at(line, text, msg, HERE)

static const struct export_client *client(const struct exports *ex, const char *path,
					  unsigned i)
{
	const struct export_entry *e = exports_find(ex, path);
	CHECK(e);
	CHECK(i < e->nclients);
	return &e->clients[i];
}

static void check_addr(const struct export_client *c, int family, const char *ip,
		       unsigned prefix)
{
	uint8_t want[16] = { 0 };
	CHECK_EQ(c->family, family);
	CHECK_EQ(inet_pton(family, ip, want), 1);
	CHECK(!memcmp(c->addr, want, family == AF_INET ? 4 : 16));
	CHECK_EQ(c->prefix, prefix);
}

static void check_defaults(const struct export_client *c)
{
	CHECK_EQ(c->flags, EXPORT_ROOT_SQUASH); /* ro, root_squash, sync, secure, ... */
	CHECK_EQ(c->anonuid, 65534);
	CHECK_EQ(c->anongid, 65534);
	CHECK_EQ(c->nsec, 1);
	CHECK_EQ(c->sec[0], EXPORT_SEC_SYS);
	CHECK_EQ(c->fsid_kind, EXPORT_FSID_NONE);
}

static void test_client_forms(void)
{
	struct exports *ex = PARSE("/srv/a 192.0.2.1(rw) 2001:db8::1 host1.Example.com "
				   "10.9.8.7/8 10.1.0.0/255.255.0.0 172.16.0.0/0.0.0.0 "
				   "2001:db8:1::/48 ::/0 *.lab.example.com host? ws[0-9] *\n");
	CHECK_EQ(ex->n, 1);
	const struct export_entry *e = &ex->v[0];
	CHECK(!strcmp(e->path, "/srv/a"));
	CHECK_EQ(e->line, 1);
	CHECK_EQ(e->nclients, 12);
	static const struct {
		enum export_client_kind kind;
		const char *spec;
	} want[] = {
		{ EXPORT_CLIENT_HOST, "192.0.2.1" },
		{ EXPORT_CLIENT_HOST, "2001:db8::1" },
		{ EXPORT_CLIENT_HOST, "host1.Example.com" },
		{ EXPORT_CLIENT_NET, "10.9.8.7/8" },
		{ EXPORT_CLIENT_NET, "10.1.0.0/255.255.0.0" },
		{ EXPORT_CLIENT_NET, "172.16.0.0/0.0.0.0" },
		{ EXPORT_CLIENT_NET, "2001:db8:1::/48" },
		{ EXPORT_CLIENT_NET, "::/0" },
		{ EXPORT_CLIENT_WILDCARD, "*.lab.example.com" },
		{ EXPORT_CLIENT_WILDCARD, "host?" },
		{ EXPORT_CLIENT_WILDCARD, "ws[0-9]" },
		{ EXPORT_CLIENT_ANY, "*" },
	};
	for (unsigned i = 0; i < 12; i++) {
		CHECK_EQ(e->clients[i].kind, want[i].kind);
		CHECK(!strcmp(e->clients[i].spec, want[i].spec));
		CHECK_EQ(e->clients[i].line, 1);
	}
	CHECK_EQ(e->clients[0].flags, EXPORT_RW | EXPORT_ROOT_SQUASH);
	check_addr(&e->clients[0], AF_INET, "192.0.2.1", 32);
	check_addr(&e->clients[1], AF_INET6, "2001:db8::1", 128);
	CHECK_EQ(e->clients[2].family, 0);
	check_addr(&e->clients[3], AF_INET, "10.0.0.0", 8); /* host bits cleared */
	check_addr(&e->clients[4], AF_INET, "10.1.0.0", 16);
	check_addr(&e->clients[5], AF_INET, "0.0.0.0", 0);
	check_addr(&e->clients[6], AF_INET6, "2001:db8:1::", 48);
	check_addr(&e->clients[7], AF_INET6, "::", 0);
	for (unsigned i = 1; i < 12; i++)
		check_defaults(&e->clients[i]);
	exports_free(ex);

	/* odd prefix lengths clear the right bits */
	ex = PARSE("/x 192.0.2.255/25 2001:db8::ffff/113 10.0.0.0/255.255.255.252\n");
	check_addr(client(ex, "/x", 0), AF_INET, "192.0.2.128", 25);
	check_addr(client(ex, "/x", 1), AF_INET6, "2001:db8::8000", 113);
	check_addr(client(ex, "/x", 2), AF_INET, "10.0.0.0", 30);
	exports_free(ex);
}

static void test_options(void)
{
	static const struct {
		const char *opts;
		unsigned flags;
	} cases[] = {
		{ "", EXPORT_ROOT_SQUASH },
		{ "rw", EXPORT_RW | EXPORT_ROOT_SQUASH },
		{ "rw,ro", EXPORT_ROOT_SQUASH },
		{ "ro,rw", EXPORT_RW | EXPORT_ROOT_SQUASH },
		{ "no_root_squash", 0 },
		{ "no_root_squash,root_squash", EXPORT_ROOT_SQUASH },
		{ "all_squash", EXPORT_ALL_SQUASH | EXPORT_ROOT_SQUASH },
		{ "all_squash,no_all_squash", EXPORT_ROOT_SQUASH },
		{ "async", EXPORT_ASYNC | EXPORT_ROOT_SQUASH },
		{ "async,sync", EXPORT_ROOT_SQUASH },
		{ "insecure", EXPORT_INSECURE | EXPORT_ROOT_SQUASH },
		{ "insecure,secure", EXPORT_ROOT_SQUASH },
		{ "subtree_check", EXPORT_SUBTREE_CHECK | EXPORT_ROOT_SQUASH },
		{ "subtree_check,no_subtree_check", EXPORT_ROOT_SQUASH },
		{ "pnfs", EXPORT_PNFS | EXPORT_ROOT_SQUASH },
		{ "pnfs,no_pnfs", EXPORT_ROOT_SQUASH },
		{ "rw,no_root_squash,async,insecure,pnfs,subtree_check,all_squash",
		  EXPORT_RW | EXPORT_ASYNC | EXPORT_INSECURE | EXPORT_PNFS | EXPORT_SUBTREE_CHECK |
			  EXPORT_ALL_SQUASH },
	};
	char text[256];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "/x h(%s)\n", cases[i].opts);
		struct exports *ex = PARSE(text);
		if (client(ex, "/x", 0)->flags != cases[i].flags) {
			fprintf(stderr, "(%s): flags %#x, wanted %#x\n", cases[i].opts,
				client(ex, "/x", 0)->flags, cases[i].flags);
			exit(1);
		}
		exports_free(ex);
	}

	struct exports *ex = PARSE("/x a(anonuid=1000,anongid=0) b(anonuid=4294967295) "
				   "c(sec=krb5p:krb5i:krb5:sys:none) d(sec=none) e(fsid=42) "
				   "f(fsid=root) g(fsid=0) "
				   "h(fsid=8c3b6e9e-1f2a-4b5c-9d8e-0123456789AB) "
				   "i(fsid=00112233:44556677:8899aabb:ccddeeff) "
				   "j(fsid=1,fsid=2)\n");
	CHECK_EQ(client(ex, "/x", 0)->anonuid, 1000);
	CHECK_EQ(client(ex, "/x", 0)->anongid, 0);
	CHECK_EQ(client(ex, "/x", 1)->anonuid, 4294967295u);
	CHECK_EQ(client(ex, "/x", 1)->anongid, 65534);
	const struct export_client *c = client(ex, "/x", 2);
	CHECK_EQ(c->nsec, 5);
	CHECK_EQ(c->sec[0], EXPORT_SEC_KRB5P);
	CHECK_EQ(c->sec[1], EXPORT_SEC_KRB5I);
	CHECK_EQ(c->sec[2], EXPORT_SEC_KRB5);
	CHECK_EQ(c->sec[3], EXPORT_SEC_SYS);
	CHECK_EQ(c->sec[4], EXPORT_SEC_NONE);
	CHECK_EQ(client(ex, "/x", 3)->nsec, 1);
	CHECK_EQ(client(ex, "/x", 3)->sec[0], EXPORT_SEC_NONE);
	CHECK_EQ(client(ex, "/x", 4)->fsid_kind, EXPORT_FSID_NUM);
	CHECK_EQ(client(ex, "/x", 4)->fsid, 42);
	CHECK_EQ(client(ex, "/x", 5)->fsid_kind, EXPORT_FSID_ROOT);
	CHECK_EQ(client(ex, "/x", 6)->fsid_kind, EXPORT_FSID_ROOT);
	static const uint8_t uuid1[16] = { 0x8c, 0x3b, 0x6e, 0x9e, 0x1f, 0x2a, 0x4b, 0x5c,
					   0x9d, 0x8e, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab };
	static const uint8_t uuid2[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
					   0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };
	CHECK_EQ(client(ex, "/x", 7)->fsid_kind, EXPORT_FSID_UUID);
	CHECK(!memcmp(client(ex, "/x", 7)->uuid, uuid1, 16));
	CHECK_EQ(client(ex, "/x", 8)->fsid_kind, EXPORT_FSID_UUID);
	CHECK(!memcmp(client(ex, "/x", 8)->uuid, uuid2, 16));
	CHECK_EQ(client(ex, "/x", 9)->fsid, 2); /* the last one wins */
	exports_free(ex);
}

static void test_lines(void)
{
	struct exports *ex = PARSE("# exports for the lab\n"
				   "\n"
				   "/srv/public\n"
				   "   \"/srv/with space\"  -rw,async  host1 host2(ro,sync)"
				   "  # trailing\n"
				   "/srv/oct\\040al//dir/ 10.0.0.0/8(rw) \\\n"
				   "\t\t*.lab(ro) \\\n"
				   "\n"
				   "/srv/public2 -sec=krb5p\n"
				   "/srv/oct\\040al/dir 192.0.2.9\r\n"
				   "/ *(ro,fsid=0)\n"
				   "/srv/a#b h\n");
	CHECK_EQ(ex->n, 6);

	const struct export_entry *e = exports_find(ex, "/srv/public");
	CHECK(e);
	CHECK_EQ(e->line, 3);
	CHECK_EQ(e->nclients, 1);
	CHECK_EQ(e->clients[0].kind, EXPORT_CLIENT_ANY);
	CHECK(!strcmp(e->clients[0].spec, "*"));
	CHECK_EQ(e->clients[0].line, 3);
	check_defaults(&e->clients[0]);

	e = exports_find(ex, "/srv/with space");
	CHECK(e);
	CHECK_EQ(e->nclients, 2);
	CHECK(!strcmp(e->clients[0].spec, "host1"));
	CHECK_EQ(e->clients[0].flags, EXPORT_RW | EXPORT_ASYNC | EXPORT_ROOT_SQUASH);
	CHECK(!strcmp(e->clients[1].spec, "host2"));
	CHECK_EQ(e->clients[1].flags, EXPORT_ROOT_SQUASH); /* its own options override */

	/* escapes decoded, path normalized, continuation lines, merged with line 9 */
	e = exports_find(ex, "/srv/oct al/dir");
	CHECK(e);
	CHECK(!strcmp(e->path, "/srv/oct al/dir"));
	CHECK_EQ(e->line, 5);
	CHECK_EQ(e->nclients, 3);
	CHECK(!strcmp(e->clients[0].spec, "10.0.0.0/8"));
	CHECK_EQ(e->clients[0].line, 5);
	CHECK(!strcmp(e->clients[1].spec, "*.lab"));
	CHECK_EQ(e->clients[1].line, 6);
	CHECK_EQ(e->clients[1].flags, EXPORT_ROOT_SQUASH);
	CHECK(!strcmp(e->clients[2].spec, "192.0.2.9"));
	CHECK_EQ(e->clients[2].line, 9);

	e = exports_find(ex, "/srv/public2");
	CHECK(e);
	CHECK_EQ(e->nclients, 1);
	CHECK_EQ(e->clients[0].kind, EXPORT_CLIENT_ANY);
	CHECK_EQ(e->clients[0].nsec, 1);
	CHECK_EQ(e->clients[0].sec[0], EXPORT_SEC_KRB5P);

	e = exports_find(ex, "/");
	CHECK(e);
	CHECK_EQ(e->clients[0].fsid_kind, EXPORT_FSID_ROOT);
	CHECK(exports_find(ex, "//"));

	/* '#' inside a token is not a comment */
	CHECK(exports_find(ex, "/srv/a#b"));

	/* lookups normalize too */
	CHECK(exports_find(ex, "/srv//public/") == exports_find(ex, "/srv/public"));
	CHECK(!exports_find(ex, "/srv"));
	CHECK(!exports_find(ex, "srv/public"));
	CHECK(!exports_find(ex, "/srv/public/../public"));
	exports_free(ex);

	/* empty and comment-only files */
	ex = PARSE("");
	CHECK_EQ(ex->n, 0);
	exports_free(ex);
	ex = PARSE("# nothing\n   \n\t# here\n");
	CHECK_EQ(ex->n, 0);
	exports_free(ex);
}

static void test_errors(void)
{
	BAD(3, "/a h\n\n/b h(rw,bogus)\n", "h(rw,bogus): unknown option \"bogus\"");
	BAD(1, "/a h(crossmnt)\n", "h(crossmnt): unknown option \"crossmnt\"");
	BAD(1, "/a h(rw=1)\n", "h(rw=1): \"rw=1\": rw takes no value");
	BAD(1, "/a h(anonuid)\n",
	    "h(anonuid): \"anonuid\": expected anonuid=a number 0..4294967295");
	BAD(1, "/a h(anonuid=x)\n",
	    "h(anonuid=x): \"anonuid=x\": expected anonuid=a number 0..4294967295");
	BAD(1, "/a h(anongid=-2)\n",
	    "h(anongid=-2): \"anongid=-2\": expected anongid=a number 0..4294967295");
	BAD(1, "/a h(anonuid=4294967296)\n",
	    "h(anonuid=4294967296): \"anonuid=4294967296\": expected anonuid=a number "
	    "0..4294967295");
	BAD(1, "/a h(sec=krb6)\n",
	    "h(sec=krb6): \"sec=krb6\": unknown flavor \"krb6\" (expected sys, krb5, krb5i, krb5p "
	    "or none)");
	BAD(1, "/a h(sec=sys:)\n",
	    "h(sec=sys:): \"sec=sys:\": unknown flavor \"\" (expected sys, krb5, krb5i, krb5p or "
	    "none)");
	BAD(1, "/a h(sec=sys:krb5:sys)\n",
	    "h(sec=sys:krb5:sys): \"sec=sys:krb5:sys\": flavor \"sys\" listed twice");
	BAD(1, "/a h(sec=krb5,rw,sec=sys)\n",
	    "h(sec=krb5,rw,sec=sys): \"sec=sys\": sec= given twice (per-flavor options are not "
	    "supported)");
	BAD(1, "/a h(fsid=abc)\n",
	    "h(fsid=abc): \"fsid=abc\": expected fsid=a number, root, or a UUID of 32 hex digits");
	BAD(1, "/a h(fsid=00112233445566778899aabbccddeef)\n",
	    "h(fsid=00112233445566778899aabbccddeef): \"fsid=00112233445566778899aabbccddeef\": "
	    "expected fsid=a number, root, or a UUID of 32 hex digits");
	BAD(1, "/a h(rw,,sync)\n", "h(rw,,sync): empty option");
	BAD(1, "/a h(rw,)\n", "h(rw,): empty option");
	BAD(2, "/a\n/b h(rw, sync)\n",
	    "h(rw,: '(' without ')' (no blanks are allowed inside an option list)");
	BAD(1, "/a h(rw)x\n", "h(rw)x: text after ')'");
	BAD(1, "/a h (rw)\n",
	    "(rw): options without a client (remove the blank before '(', or write '*(...)' for "
	    "everyone)");
	BAD(1, "/a @trusted(rw)\n", "@trusted(rw): netgroups (@name) are not supported");
	BAD(1, "/a 10.0.0.0/33\n", "10.0.0.0/33: the prefix length must be 0..32");
	BAD(1, "/a 2001:db8::/129\n", "2001:db8::/129: the prefix length must be 0..128");
	BAD(1, "/a 10.0.0.0/255.0.255.0\n", "10.0.0.0/255.0.255.0: netmask 255.0.255.0 is not "
					    "contiguous");
	BAD(1, "/a 10.0.0.0/x\n", "10.0.0.0/x: \"x\" is not a prefix length or a netmask");
	BAD(1, "/a 2001:db8::/ffff::\n", "2001:db8::/ffff::: \"ffff::\" is not a prefix length");
	BAD(1, "/a 10.0.0/8\n", "10.0.0/8: \"10.0.0\" is not an IPv4 or IPv6 network address");
	BAD(1, "/a gss/krb5\n", "gss/krb5: \"gss\" is not an IPv4 or IPv6 network address");
	BAD(1, "/a 10.0.0.256\n", "10.0.0.256: not a valid IPv4 address");
	BAD(1, "/a host,name\n",
	    "host,name: not a host name, address, network or wildcard (unexpected ',')");
	BAD(1, "/a -rw,bogus h\n", "-rw,bogus: unknown option \"bogus\"");
	BAD(1, "relative h\n", "\"relative\": the path must be absolute");
	BAD(1, "\"\" h\n", "\"\": the path must be absolute");
	BAD(1, "/a/../etc h\n", "\"/a/../etc\": the path must not contain '.' or '..'");
	BAD(1, "/a/./b h\n", "\"/a/./b\": the path must not contain '.' or '..'");
	BAD(1, "/a\\000b h\n", "\"/a\\000b\": \\000 is not a byte a path can hold");
	BAD(2, "# x\n\"/a b h(rw)\n", "unterminated quote");
	BAD(3, "/a h(rw)\n/b\n/a/ x H(ro)\n", "/a: client \"H\" listed twice (first on line 1)");
	BAD(2, "/a\n/a\n", "/a: client \"*\" listed twice (first on line 1)");
	BAD(4, "/a \\\n  h1 \\\n  h2 \\\n  h3( \n", "h3(: '(' without ')' (no blanks are allowed "
						   "inside an option list)");
}

static struct sockaddr_storage v4(const char *ip)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	sin->sin_family = AF_INET;
	CHECK_EQ(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	sin6->sin6_family = AF_INET6;
	CHECK_EQ(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
	return ss;
}

/* The spec of the entry that matches, or "-" for none. */
static const char *match(const struct exports *ex, const char *path,
			 struct sockaddr_storage peer, const char *host)
{
	const struct export_client *c = exports_match(ex, path, (struct sockaddr *)&peer, host);
	return c ? c->spec : "-";
}

#define MATCH(ex, path, peer, host, want)                                          \
	do {                                                                       \
		const char *got_ = match(ex, path, peer, host);                    \
		if (strcmp(got_, want)) {                                          \
			fprintf(stderr, "%s: matched %s, wanted %s\n", HERE, got_, want); \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

static void test_match(void)
{
	/* each class listed before the more specific one, so order alone cannot win */
	struct exports *ex = PARSE("/srv * *.example.com 10.0.0.0/8 10.1.0.0/16 10.1.2.3 "
				   "2001:db8::/32 2001:db8::7 web1.example.com *.lab.example.com\n"
				   "/v6 2001:db8:1::/48(rw) ::/0\n"
				   "/names host?.example.com(rw) *(ro)\n"
				   "/none 192.0.2.0/24\n");
	MATCH(ex, "/srv", v4("10.1.2.3"), NULL, "10.1.2.3");
	/* line order within a class: /8 before /16, not the longest prefix */
	MATCH(ex, "/srv", v4("10.1.2.4"), NULL, "10.0.0.0/8");
	MATCH(ex, "/srv", v4("10.200.0.1"), NULL, "10.0.0.0/8");
	/* networks beat wildcards and names only the caller can supply */
	MATCH(ex, "/srv", v4("10.1.2.4"), "web1.example.com", "web1.example.com");
	MATCH(ex, "/srv", v4("10.9.9.9"), "x.example.com", "10.0.0.0/8");
	MATCH(ex, "/srv", v4("192.0.2.1"), "x.example.com", "*.example.com");
	MATCH(ex, "/srv", v4("192.0.2.1"), "X.Lab.Example.COM.", "*.example.com");
	MATCH(ex, "/srv", v4("192.0.2.1"), "WEB1.example.com.", "web1.example.com");
	MATCH(ex, "/srv", v4("192.0.2.1"), "example.com", "*");
	MATCH(ex, "/srv", v4("192.0.2.1"), NULL, "*");
	MATCH(ex, "/srv", v6("2001:db8::7"), NULL, "2001:db8::7");
	MATCH(ex, "/srv", v6("2001:db8::8"), NULL, "2001:db8::/32");
	MATCH(ex, "/srv", v6("2001:db9::8"), NULL, "*");
	/* IPv4-mapped IPv6 peers (dual-stack sockets) match IPv4 entries */
	MATCH(ex, "/srv", v6("::ffff:10.1.2.3"), NULL, "10.1.2.3");
	MATCH(ex, "/srv", v6("::ffff:10.3.0.1"), NULL, "10.0.0.0/8");
	MATCH(ex, "/srv/", v4("10.1.2.3"), NULL, "10.1.2.3");

	MATCH(ex, "/v6", v6("2001:db8:1:ffff::1"), NULL, "2001:db8:1::/48");
	MATCH(ex, "/v6", v6("2001:db8:2::1"), NULL, "::/0");
	MATCH(ex, "/v6", v4("10.1.2.3"), NULL, "-");
	MATCH(ex, "/v6", v6("::ffff:10.1.2.3"), NULL, "-");

	MATCH(ex, "/names", v4("192.0.2.1"), "host1.example.com", "host?.example.com");
	MATCH(ex, "/names", v4("192.0.2.1"), "host12.example.com", "*");
	MATCH(ex, "/names", v4("192.0.2.1"), NULL, "*");

	MATCH(ex, "/none", v4("192.0.2.77"), NULL, "192.0.2.0/24");
	MATCH(ex, "/none", v4("192.0.3.1"), NULL, "-");
	MATCH(ex, "/nonexistent", v4("192.0.2.77"), NULL, "-");
	CHECK(!exports_match(ex, "/srv/sub", (struct sockaddr *)&(struct sockaddr_storage){ 0 },
			     NULL));
	/* an unknown address family matches only '*' */
	struct sockaddr_storage unix_peer = { .ss_family = AF_UNIX };
	MATCH(ex, "/srv", unix_peer, NULL, "*");
	MATCH(ex, "/none", unix_peer, NULL, "-");
	exports_free(ex);
}

static void test_squash(void)
{
	struct exports *ex = PARSE("/x root(anonuid=99,anongid=98) none(no_root_squash) "
				   "all(all_squash,anonuid=7,anongid=8) "
				   "allnr(all_squash,no_root_squash)\n");
	const struct export_client *root = client(ex, "/x", 0), *none = client(ex, "/x", 1),
				   *all = client(ex, "/x", 2), *allnr = client(ex, "/x", 3);
	uint32_t uid, gid, groups[4], ng;

	/* root_squash: uid 0 and gid 0 to anon, other ids untouched */
	uid = 0, gid = 0, ng = 4;
	memcpy(groups, (uint32_t[]){ 0, 10, 0, 20 }, sizeof(groups));
	export_squash(root, &uid, &gid, groups, &ng);
	CHECK_EQ(uid, 99);
	CHECK_EQ(gid, 98);
	CHECK_EQ(ng, 4);
	CHECK_EQ(groups[0], 98);
	CHECK_EQ(groups[1], 10);
	CHECK_EQ(groups[2], 98);
	CHECK_EQ(groups[3], 20);
	/* knfsd squashes gid 0 even for a non-root uid */
	uid = 1000, gid = 0, ng = 2;
	memcpy(groups, (uint32_t[]){ 5, 0 }, 2 * sizeof(uint32_t));
	export_squash(root, &uid, &gid, groups, &ng);
	CHECK_EQ(uid, 1000);
	CHECK_EQ(gid, 98);
	CHECK_EQ(groups[0], 5);
	CHECK_EQ(groups[1], 98);
	uid = 1000, gid = 100, ng = 0;
	export_squash(root, &uid, &gid, NULL, &ng);
	CHECK_EQ(uid, 1000);
	CHECK_EQ(gid, 100);
	export_squash(root, &uid, &gid, NULL, NULL);
	CHECK_EQ(uid, 1000);

	/* no_root_squash: root stays root */
	uid = 0, gid = 0, ng = 1, groups[0] = 0;
	export_squash(none, &uid, &gid, groups, &ng);
	CHECK_EQ(uid, 0);
	CHECK_EQ(gid, 0);
	CHECK_EQ(groups[0], 0);
	CHECK_EQ(ng, 1);

	/* all_squash: everyone is anonymous, with no groups, root_squash or not */
	uid = 1000, gid = 100, ng = 2;
	export_squash(all, &uid, &gid, groups, &ng);
	CHECK_EQ(uid, 7);
	CHECK_EQ(gid, 8);
	CHECK_EQ(ng, 0);
	uid = 0, gid = 0, ng = 3;
	export_squash(allnr, &uid, &gid, groups, &ng);
	CHECK_EQ(uid, 65534);
	CHECK_EQ(gid, 65534);
	CHECK_EQ(ng, 0);

	/* (uid_t)-1 is never used as is */
	uid = UINT32_MAX, gid = UINT32_MAX, ng = 0;
	export_squash(none, &uid, &gid, NULL, &ng);
	CHECK_EQ(uid, 65534);
	CHECK_EQ(gid, 65534);
	exports_free(ex);
}

/* Many exports, one with many clients: arrays grow, order is kept. */
static void test_many(void)
{
	size_t cap = 1 << 16, o = 0;
	char *text = malloc(cap);
	CHECK(text);
	for (int i = 0; i < 300; i++)
		o += (size_t)snprintf(text + o, cap - o, "/srv/e%d h%d(rw)\n", i, i);
	o += (size_t)snprintf(text + o, cap - o, "/srv/big");
	for (int i = 0; i < 100; i++)
		o += (size_t)snprintf(text + o, cap - o, " \\\n 10.0.%d.0/24(anonuid=%d)", i, i);
	o += (size_t)snprintf(text + o, cap - o, "\n");
	CHECK(o < cap);
	struct exports *ex = PARSE(text);
	CHECK_EQ(ex->n, 301);
	for (int i = 0; i < 300; i++) {
		char path[32], spec[32];
		snprintf(path, sizeof(path), "/srv/e%d", i);
		snprintf(spec, sizeof(spec), "h%d", i);
		CHECK(!strcmp(client(ex, path, 0)->spec, spec));
		CHECK_EQ(exports_find(ex, path)->line, i + 1);
	}
	const struct export_entry *e = exports_find(ex, "/srv/big");
	CHECK(e);
	CHECK_EQ(e->nclients, 100);
	for (int i = 0; i < 100; i++) {
		CHECK_EQ(e->clients[i].anonuid, i);
		CHECK_EQ(e->clients[i].line, 302 + i);
	}
	MATCH(ex, "/srv/big", v4("10.0.77.5"), NULL, "10.0.77.0/24");
	exports_free(ex);
	free(text);
}

static void test_files(void)
{
	char path[] = "/tmp/braid-exports-XXXXXX";
	int fd = mkstemp(path);
	struct exports *ex = NULL;
	CHECK(fd >= 0);
	const char text[] = "/srv h(rw)\n\n/srv2 h(rw,nope)\n";
	CHECK_EQ(write(fd, text, sizeof(text) - 1), (long long)sizeof(text) - 1);
	CHECK_EQ(exports_load(path, &ex, &err), -EINVAL);
	CHECK(!ex);
	CHECK(!strcmp(err.file, path));
	CHECK_EQ(err.line, 3);
	CHECK(!strcmp(err.msg, "h(rw,nope): unknown option \"nope\""));

	CHECK_EQ(ftruncate(fd, 0), 0);
	CHECK_EQ(pwrite(fd, "/srv h(rw)\n", 11, 0), 11);
	CHECK_EQ(exports_load(path, &ex, &err), 0);
	CHECK(ex);
	CHECK_EQ(ex->n, 1);
	exports_free(ex);
	close(fd);
	unlink(path);

	CHECK_EQ(exports_load(path, &ex, &err), -ENOENT);
	CHECK(!ex);
	CHECK(!strcmp(err.file, path));
	CHECK_EQ(err.line, 0);
	exports_free(NULL);
}

int main(void)
{
	test_client_forms();
	test_options();
	test_lines();
	test_errors();
	test_match();
	test_squash();
	test_many();
	test_files();
	printf("exports-parse: ok\n");
	return 0;
}
