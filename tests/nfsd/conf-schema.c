/* SPDX-License-Identifier: MIT */
/*
 * nfs.conf-style settings read through a schema: every type's valid and
 * invalid values, defaults, comments, quotes and whitespace, unknown
 * sections and keys, duplicates, and the exact file:line and reason of
 * each error.  Unit tier: a temporary file for conf_load() only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfsd/conf.h"
#include "tests/check.h"

struct settings {
	bool pnfs;
	int64_t threads;
	int64_t offset;
	uint64_t block;
	uint64_t cache;
	uint64_t lease;
	uint64_t poll;
	char name[8];
	int mode;
	struct conf_addrs listen;
	struct conf_addrs peers;
	char ds_path[64];
	int64_t nodef;
};

enum { MODE_FAST, MODE_SAFE, MODE_PARANOID };
static const char *const modes[] = { "fast", "safe", "paranoid", NULL };

#define S struct settings
static const struct conf_schema schema[] = {
	{ .section = "nfsd", .key = "pnfs", .type = CONF_BOOL, .def = "yes", CONF_AT(S, pnfs),
	  .desc = "Offer pNFS layouts." },
	{ .section = "nfsd", .key = "threads", .type = CONF_INT, .min = 1, .max = 1024,
	  .def = "8", CONF_AT(S, threads), .desc = "Worker threads." },
	{ .section = "nfsd", .key = "offset", .type = CONF_INT, .def = "-3", CONF_AT(S, offset),
	  .desc = "Unbounded signed integer." },
	{ .section = "store", .key = "block_size", .type = CONF_SIZE, .min = 4096,
	  .max = 1 << 20, .def = "64k", CONF_AT(S, block), .desc = "Bytes per block." },
	{ .section = "store", .key = "cache", .type = CONF_SIZE, .def = "1g", CONF_AT(S, cache),
	  .desc = "Cache bytes." },
	{ .section = "nfsd", .key = "lease-time", .type = CONF_DURATION, .min = 1000,
	  .max = 3600 * 1000, .def = "90s", CONF_AT(S, lease), .desc = "NFSv4 lease." },
	{ .section = "nfsd", .key = "poll", .type = CONF_DURATION, .def = "250ms",
	  CONF_AT(S, poll), .desc = "Poll interval." },
	{ .section = "nfsd", .key = "name", .type = CONF_STRING, .def = "braid",
	  CONF_AT(S, name), .desc = "Server name." },
	{ .section = "store", .key = "mode", .type = CONF_ENUM, .values = modes, .def = "safe",
	  CONF_AT(S, mode), .desc = "Write ordering." },
	{ .section = "nfsd", .key = "listen", .type = CONF_ADDRS, .flags = CONF_REPEAT,
	  .def = "0.0.0.0:2049, [::]:2049", CONF_AT(S, listen), .desc = "Where to listen." },
	{ .section = "nfsd", .key = "peers", .type = CONF_ADDRS, CONF_AT(S, peers),
	  .desc = "Peer addresses." },
	{ .section = "ds", .subsection = "a", .key = "path", .type = CONF_STRING,
	  .def = "/srv/a", CONF_AT(S, ds_path), .desc = "Data path of DS a." },
	{ .section = "nfsd", .key = "nodef", .type = CONF_INT, CONF_AT(S, nodef),
	  .desc = "No default: zero." },
	{ 0 },
};

static struct settings st;
static struct conf_error err;

static int load(const char *text)
{
	memset(&st, 0xa5, sizeof(st)); /* defaults must overwrite everything */
	return conf_load_string(schema, &st, "braid.conf", text, &err);
}

static void ok(const char *text)
{
	int rc = load(text);
	if (rc) {
		fprintf(stderr, "unexpected error %d for:\n%s\n", rc, text);
		conf_error_print(&err, stderr);
		exit(1);
	}
}

/* The load fails with exactly "braid.conf:<line>: <msg>". */
static void bad_at(int line, const char *text, const char *msg, const char *where)
{
	int rc = load(text);
	if (rc != -EINVAL || strcmp(err.file, "braid.conf") || err.line != (unsigned)line ||
	    strcmp(err.msg, msg)) {
		fprintf(stderr, "%s: for:\n%s\nwanted braid.conf:%d: %s\ngot rc %d: ", where, text,
			line, msg, rc);
		conf_error_print(&err, stderr);
		exit(1);
	}
}
#define BAD(line, text, msg) bad_at(line, text, msg, __FILE__ ":" CHECK_STR(__LINE__))
#define CHECK_STR(x) CHECK_STR2(x)
#define CHECK_STR2(x) #x

/* The value is refused for '[nfsd] <key>' on line 2 with 'why'. */
static void bad_value_at(const char *sec, const char *key, const char *val, const char *why,
			 const char *where)
{
	char text[512], msg[512];
	snprintf(text, sizeof(text), "[%s]\n%s = %s\n", sec, key, val);
	snprintf(msg, sizeof(msg), "[%s] %s: %s", sec, key, why);
	bad_at(2, text, msg, where);
}
#define BADV(sec, key, val, why) bad_value_at(sec, key, val, why, __FILE__ ":" CHECK_STR(__LINE__))

static void set1(const char *sec, const char *key, const char *val)
{
	char text[512];
	snprintf(text, sizeof(text), "[%s]\n%s = %s\n", sec, key, val);
	ok(text);
}

static void check_v4(const struct sockaddr_storage *ss, const char *ip, unsigned port)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	char buf[INET_ADDRSTRLEN];
	CHECK_EQ(sin->sin_family, AF_INET);
	CHECK(inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)));
	CHECK(!strcmp(buf, ip));
	CHECK_EQ(ntohs(sin->sin_port), port);
}

static void check_v6(const struct sockaddr_storage *ss, const char *ip, unsigned port,
		     unsigned scope)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	char buf[INET6_ADDRSTRLEN];
	CHECK_EQ(sin6->sin6_family, AF_INET6);
	CHECK(inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf)));
	CHECK(!strcmp(buf, ip));
	CHECK_EQ(ntohs(sin6->sin6_port), port);
	CHECK_EQ(sin6->sin6_scope_id, scope);
}

static void test_defaults(void)
{
	ok("");
	CHECK_EQ(st.pnfs, 1);
	CHECK_EQ(st.threads, 8);
	CHECK_EQ(st.offset, -3);
	CHECK_EQ(st.block, 65536);
	CHECK_EQ(st.cache, 1ull << 30);
	CHECK_EQ(st.lease, 90000);
	CHECK_EQ(st.poll, 250);
	CHECK(!strcmp(st.name, "braid"));
	CHECK_EQ(st.mode, MODE_SAFE);
	CHECK_EQ(st.listen.n, 2);
	check_v4(&st.listen.addr[0], "0.0.0.0", 2049);
	check_v6(&st.listen.addr[1], "::", 2049, 0);
	CHECK_EQ(st.peers.n, 0);
	CHECK(!strcmp(st.ds_path, "/srv/a"));
	CHECK_EQ(st.nodef, 0);

	/* only comments and blank lines: still the defaults */
	ok("# comment\n; another\n\n   \t\n  # indented comment\n");
	CHECK_EQ(st.threads, 8);
}

static void test_syntax(void)
{
	ok("\n"
	   "# Braid settings\n"
	   "  [nfsd]   \n"
	   "threads=16\n"
	   "\tpnfs   =   no  # trailing comment\n"
	   "; a semicolon comment\n"
	   "name = \"a b\"\n"
	   "[ store ]\r\n"
	   "block_size = 128k\r\n"
	   "Mode = 'fast' ; single quotes, comment after\n"
	   "[ds \"a\"]\n"
	   "path = \"/srv/with # hash\"\n"
	   "[NFSD] # section names compare case-insensitively\n"
	   "LEASE-TIME = 2m\n");
	CHECK_EQ(st.threads, 16);
	CHECK_EQ(st.pnfs, 0);
	CHECK(!strcmp(st.name, "a b"));
	CHECK_EQ(st.block, 128 << 10);
	CHECK_EQ(st.mode, MODE_FAST);
	CHECK(!strcmp(st.ds_path, "/srv/with # hash"));
	CHECK_EQ(st.lease, 120000);

	/* a '#' not after whitespace is part of a bare value; escapes in "" */
	set1("nfsd", "name", "a#b");
	CHECK(!strcmp(st.name, "a#b"));
	set1("nfsd", "name", "\"q\\\"\\\\\"");
	CHECK(!strcmp(st.name, "q\"\\"));
	set1("nfsd", "name", "'it\\s'");
	CHECK(!strcmp(st.name, "it\\s"));
	/* an explicitly empty string */
	set1("nfsd", "name", "\"\"");
	CHECK(!strcmp(st.name, ""));
	/* no newline at the end of the file */
	ok("[nfsd]\nthreads = 3");
	CHECK_EQ(st.threads, 3);
	/* sections may be reopened */
	ok("[nfsd]\nthreads = 3\n[store]\nmode = fast\n[nfsd]\npnfs = off\n");
	CHECK_EQ(st.threads, 3);
	CHECK_EQ(st.pnfs, 0);

	BAD(3, "[nfsd]\n\nthreads 4\n",
	    "expected 'key = value', '[section]' or a comment, not \"threads 4\"");
	BAD(1, "= 4\n", "expected 'key = value', '[section]' or a comment, not \"= 4\"");
	BAD(2, "# x\nthreads = 4\n", "threads: outside any [section]");
	BAD(1, "[nfsd\n", "malformed section header (expected [name] or [name \"subsection\"])");
	BAD(1, "[]\n", "malformed section header (expected [name] or [name \"subsection\"])");
	BAD(1, "[nfsd] x\n", "malformed section header (expected [name] or [name \"subsection\"])");
	BAD(1, "[ds \"a]\n", "malformed section header (expected [name] or [name \"subsection\"])");
	BAD(1, "[ds \"\"]\n",
	    "malformed section header (expected [name] or [name \"subsection\"])");
	BAD(2, "[nfsd]\nname = \"abc\n", "[nfsd] name: unterminated quote");
	BAD(2, "[nfsd]\nname = \"abc\" x\n", "[nfsd] name: text after the closing quote");
	BAD(2, "[nfsd]\nthreads =\n",
	    "[nfsd] threads: empty value (remove the line to use the default)");
	BAD(2, "[nfsd]\nthreads = # nothing\n",
	    "[nfsd] threads: empty value (remove the line to use the default)");
}

static void test_unknown(void)
{
	BAD(3, "[nfsd]\nthreads = 2\n[stor]\n", "unknown section [stor]");
	BAD(1, "[ds \"b\"]\n", "unknown section [ds \"b\"]");
	BAD(1, "[ds]\n", "unknown section [ds]"); /* only [ds "a"] exists */
	BAD(1, "[nfsd \"a\"]\n", "unknown section [nfsd \"a\"]");
	BAD(4, "[nfsd]\nthreads = 2\n\nthread = 4\n", "[nfsd] thread: unknown key");
	BAD(2, "[store]\nthreads = 4\n", "[store] threads: unknown key");
	BAD(2, "[ds \"a\"]\nthreads = 4\n", "[ds \"a\"] threads: unknown key");
	/* an unknown key is an error even with an empty value */
	BAD(2, "[nfsd]\nbogus =\n", "[nfsd] bogus: unknown key");
}

static void test_duplicates(void)
{
	BAD(5, "[nfsd]\nthreads = 2\n[store]\n[nfsd]\nthreads = 4\n",
	    "[nfsd] threads: set twice (first on line 2)");
	BAD(3, "[nfsd]\nTHREADS = 2\nthreads = 2\n", "[nfsd] threads: set twice (first on line 2)");
	BAD(3, "[nfsd]\npeers = 1.2.3.4:1\npeers = 1.2.3.4:2\n",
	    "[nfsd] peers: set twice (first on line 2)");
	/* a repeatable list: the first line replaces the default, later ones append */
	ok("[nfsd]\nlisten = 10.0.0.1:2049\nlisten = [2001:db8::1]:20490, 10.0.0.2:1\n");
	CHECK_EQ(st.listen.n, 3);
	check_v4(&st.listen.addr[0], "10.0.0.1", 2049);
	check_v6(&st.listen.addr[1], "2001:db8::1", 20490, 0);
	check_v4(&st.listen.addr[2], "10.0.0.2", 1);
}

static void test_bool(void)
{
	const char *yes[] = { "yes", "YES", "true", "True", "on", "1", "y", "t" };
	const char *no[] = { "no", "No", "false", "FALSE", "off", "0", "n", "f" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		set1("nfsd", "pnfs", no[i]);
		CHECK_EQ(st.pnfs, 0);
		set1("nfsd", "pnfs", yes[i]);
		CHECK_EQ(st.pnfs, 1);
	}
	BADV("nfsd", "pnfs", "maybe",
	     "\"maybe\" is not a boolean (expected yes/no, true/false, on/off, 1/0)");
	BADV("nfsd", "pnfs", "2",
	     "\"2\" is not a boolean (expected yes/no, true/false, on/off, 1/0)");
	BADV("nfsd", "pnfs", "yes please",
	     "\"yes please\" is not a boolean (expected yes/no, true/false, on/off, 1/0)");
}

static void test_int(void)
{
	set1("nfsd", "threads", "1");
	CHECK_EQ(st.threads, 1);
	set1("nfsd", "threads", "1024");
	CHECK_EQ(st.threads, 1024);
	set1("nfsd", "threads", "+7");
	CHECK_EQ(st.threads, 7);
	set1("nfsd", "offset", "-9223372036854775808");
	CHECK(st.offset == INT64_MIN);
	set1("nfsd", "offset", "9223372036854775807");
	CHECK(st.offset == INT64_MAX);
	set1("nfsd", "offset", "-0");
	CHECK_EQ(st.offset, 0);
	BADV("nfsd", "threads", "0", "0 is out of range (expected 1..1024)");
	BADV("nfsd", "threads", "1025", "1025 is out of range (expected 1..1024)");
	BADV("nfsd", "threads", "-1", "-1 is out of range (expected 1..1024)");
	BADV("nfsd", "threads", "12a", "\"12a\" is not an integer (expected decimal digits)");
	BADV("nfsd", "threads", "0x10", "\"0x10\" is not an integer (expected decimal digits)");
	BADV("nfsd", "threads", "1 2", "\"1 2\" is not an integer (expected decimal digits)");
	BADV("nfsd", "threads", "-", "\"-\" is not an integer (expected decimal digits)");
	BADV("nfsd", "offset", "9223372036854775808",
	     "\"9223372036854775808\" is too large for an integer");
	BADV("nfsd", "offset", "-9223372036854775809",
	     "\"-9223372036854775809\" is too large for an integer");
	BADV("nfsd", "offset", "99999999999999999999999",
	     "\"99999999999999999999999\" is too large for an integer");
}

static void test_size(void)
{
	static const struct {
		const char *s;
		uint64_t v;
	} cases[] = {
		{ "0", 0 },
		{ "4096", 4096 },
		{ "1k", 1024 },
		{ "3K", 3072 },
		{ "2m", 2ull << 20 },
		{ "5G", 5ull << 30 },
		{ "7t", 7ull << 40 },
		{ "16777215t", 16777215ull << 40 },
		{ "18446744073709551615", UINT64_MAX },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set1("store", "cache", cases[i].s);
		CHECK(st.cache == cases[i].v);
	}
	set1("store", "block_size", "4k");
	CHECK_EQ(st.block, 4096);
	set1("store", "block_size", "1m");
	CHECK_EQ(st.block, 1 << 20);
	BADV("store", "block_size", "9x",
	     "\"9x\" is not a size (expected a number with optional k, m, g, t)");
	BADV("store", "block_size", "k",
	     "\"k\" is not a size (expected a number with optional k, m, g, t)");
	BADV("store", "block_size", "1.5m",
	     "\"1.5m\" is not a size (expected a number with optional k, m, g, t)");
	BADV("store", "block_size", "64kb",
	     "\"64kb\" is not a size (expected a number with optional k, m, g, t)");
	BADV("store", "block_size", "-4k",
	     "\"-4k\" is not a size (expected a number with optional k, m, g, t)");
	BADV("store", "block_size", "64 k",
	     "\"64 k\" is not a size (expected a number with optional k, m, g, t)");
	BADV("store", "block_size", "2k", "2k is out of range (expected 4k..1m)");
	BADV("store", "block_size", "1025k", "1025k is out of range (expected 4k..1m)");
	BADV("store", "block_size", "4095", "4095 is out of range (expected 4k..1m)");
	BADV("store", "cache", "16777216t", "\"16777216t\" is too large");
	BADV("store", "cache", "18446744073709551616", "\"18446744073709551616\" is too large");
}

static void test_duration(void)
{
	static const struct {
		const char *s;
		uint64_t ms;
	} cases[] = {
		{ "0", 0 },   { "5", 5000 },    { "1ms", 1 },    { "1500ms", 1500 },
		{ "2s", 2000 }, { "3m", 180000 }, { "1h", 3600000 }, { "2H", 7200000 },
		{ "10MS", 10 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set1("nfsd", "poll", cases[i].s);
		CHECK(st.poll == cases[i].ms);
	}
	set1("nfsd", "lease-time", "1s");
	CHECK_EQ(st.lease, 1000);
	set1("nfsd", "lease-time", "60m");
	CHECK_EQ(st.lease, 3600000);
	BADV("nfsd", "lease-time", "5d",
	     "\"5d\" is not a duration (expected a number of seconds, or with ms, s, m, h)");
	BADV("nfsd", "lease-time", "s",
	     "\"s\" is not a duration (expected a number of seconds, or with ms, s, m, h)");
	BADV("nfsd", "lease-time", "1.5s",
	     "\"1.5s\" is not a duration (expected a number of seconds, or with ms, s, m, h)");
	BADV("nfsd", "lease-time", "999ms", "999ms is out of range (expected 1s..1h)");
	BADV("nfsd", "lease-time", "61m", "61m is out of range (expected 1s..1h)");
	BADV("nfsd", "lease-time", "3601", "3601s is out of range (expected 1s..1h)");
	BADV("nfsd", "lease-time", "3600001ms", "3600001ms is out of range (expected 1s..1h)");
	BADV("nfsd", "poll", "5124095576030432h", "\"5124095576030432h\" is too large");
}

static void test_string_enum(void)
{
	set1("nfsd", "name", "1234567"); /* fits char[8] with its NUL */
	CHECK(!strcmp(st.name, "1234567"));
	BADV("nfsd", "name", "12345678", "\"12345678...\" is too long (at most 7 bytes)");
	set1("store", "mode", "paranoid");
	CHECK_EQ(st.mode, MODE_PARANOID);
	set1("store", "mode", "\"fast\"");
	CHECK_EQ(st.mode, MODE_FAST);
	BADV("store", "mode", "Fast", "\"Fast\" is not one of: fast, safe, paranoid");
	BADV("store", "mode", "quick", "\"quick\" is not one of: fast, safe, paranoid");
}

static void test_addrs(void)
{
	set1("nfsd", "peers", "192.0.2.1:2049");
	CHECK_EQ(st.peers.n, 1);
	check_v4(&st.peers.addr[0], "192.0.2.1", 2049);
	set1("nfsd", "peers", "192.0.2.1:0,[::1]:65535 ,  [fe80::1%1]:20049");
	CHECK_EQ(st.peers.n, 3);
	check_v4(&st.peers.addr[0], "192.0.2.1", 0);
	check_v6(&st.peers.addr[1], "::1", 65535, 0);
	check_v6(&st.peers.addr[2], "fe80::1", 20049, 1);
	set1("nfsd", "peers", "[::ffff:192.0.2.7]:1");
	check_v6(&st.peers.addr[0], "::ffff:192.0.2.7", 1, 0);
	set1("nfsd", "peers", "\"\""); /* an explicitly empty list */
	CHECK_EQ(st.peers.n, 0);
	set1("nfsd", "listen", "\"\"");
	CHECK_EQ(st.listen.n, 0);

	const char *expect = "(expected host:port with an IPv4 literal or a bracketed IPv6 literal "
			     "as host)";
	char why[256];
#define BADADDR(val, shown)                                                        \
	do {                                                                       \
		snprintf(why, sizeof(why), "\"%s\" is not an address %s", shown, expect); \
		BADV("nfsd", "peers", val, why);                                   \
	} while (0)
	BADADDR("192.0.2.1", "192.0.2.1");
	BADADDR("host.example.com:2049", "host.example.com:2049");
	BADADDR("192.0.2.256:1", "192.0.2.256:1");
	BADADDR("127.1:1", "127.1:1");
	BADADDR(":2049", ":2049");
	BADADDR("[::1]", "[::1]");
	BADADDR("[::1]2049", "[::1]2049");
	BADADDR("[192.0.2.1]:1", "[192.0.2.1]:1");
	BADADDR("[::g]:1", "[::g]:1");
	BADADDR("1.2.3.4:1, 5.6.7.8", "5.6.7.8");
	BADV("nfsd", "peers", "::1:2049",
	     "\"::1:2049\": an IPv6 host needs brackets, as in [::1]:2049");
	BADV("nfsd", "peers", "192.0.2.1:65536",
	     "\"192.0.2.1:65536\": the port must be a number 0..65535");
	BADV("nfsd", "peers", "[::1]:http", "\"[::1]:http\": the port must be a number 0..65535");
	BADV("nfsd", "peers", "192.0.2.1:", "\"192.0.2.1:\": the port must be a number 0..65535");
	BADV("nfsd", "peers", "1.2.3.4:1,,5.6.7.8:1",
	     "\"1.2.3.4:1,,5.6.7.8:1\" has an empty address");
	BADV("nfsd", "peers", "1.2.3.4:1,", "\"1.2.3.4:1,\" has an empty address");

	char list[1024] = "";
	for (int i = 0; i <= CONF_ADDRS_MAX; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s10.0.0.%d:1",
			 i ? "," : "", i);
	BADV("nfsd", "peers", list, "more than 16 addresses");
	/* and across repeated lines */
	char text[2048];
	snprintf(text, sizeof(text), "[nfsd]\nlisten = 10.0.0.1:1\nlisten = %s\n",
		 strchr(list, ',') + 1);
	BAD(3, text, "[nfsd] listen: more than 16 addresses");
	/* an error leaves the list as it was */
	CHECK_EQ(st.listen.n, 1);
}

/* A real file: the path is the name in errors; a missing file is -ENOENT. */
static void test_files(void)
{
	char path[] = "/tmp/braid-conf-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const char text[] = "[nfsd]\nthreads = 12\n\n[store]\nblock_size = 9x\n";
	CHECK_EQ(write(fd, text, sizeof(text) - 1), (long long)sizeof(text) - 1);
	memset(&st, 0, sizeof(st));
	CHECK_EQ(conf_load(schema, &st, path, &err), -EINVAL);
	CHECK(!strcmp(err.file, path));
	CHECK_EQ(err.line, 5);
	CHECK(!strcmp(err.msg, "[store] block_size: \"9x\" is not a size (expected a number with "
			       "optional k, m, g, t)"));

	/* conf_error_print() */
	char out[512];
	FILE *f = fmemopen(out, sizeof(out), "w");
	CHECK(f);
	conf_error_print(&err, f);
	fclose(f);
	char want[512];
	snprintf(want, sizeof(want), "%s:5: %s\n", path, err.msg);
	CHECK(!strcmp(out, want));

	/* a NUL byte: refused at its line */
	CHECK_EQ(ftruncate(fd, 0), 0);
	CHECK_EQ(pwrite(fd, "[nfsd]\n\nx\0y\n", 12, 0), 12);
	CHECK_EQ(conf_load(schema, &st, path, &err), -EINVAL);
	CHECK_EQ(err.line, 3);
	CHECK(!strcmp(err.msg, "contains a NUL byte"));

	CHECK_EQ(ftruncate(fd, 0), 0);
	CHECK_EQ(pwrite(fd, "[nfsd]\nthreads = 12\n", 20, 0), 20);
	CHECK_EQ(conf_load(schema, &st, path, &err), 0);
	CHECK_EQ(st.threads, 12);
	CHECK_EQ(st.block, 65536);
	close(fd);
	unlink(path);

	/* missing: -ENOENT, the defaults are still filled in */
	memset(&st, 0, sizeof(st));
	CHECK_EQ(conf_load(schema, &st, path, &err), -ENOENT);
	CHECK(!strcmp(err.file, path));
	CHECK_EQ(err.line, 0);
	CHECK(!strcmp(err.msg, "cannot open: No such file or directory"));
	CHECK_EQ(st.threads, 8);
	CHECK(!strcmp(st.name, "braid"));

	CHECK_EQ(conf_load(schema, &st, "/tmp", &err), -EINVAL);
	CHECK(!strcmp(err.msg, "not a regular file"));
}

/* Schema mistakes are caught on load, with line 0. */
static void test_bad_schema(void)
{
	struct bad {
		int64_t i;
		int small;
		char s[4];
	} b;
	static const char *const none[] = { NULL };
	const struct conf_schema wrong_size[] = {
		{ .section = "x", .key = "i", .type = CONF_INT, CONF_AT(struct bad, small),
		  .desc = "d" },
		{ 0 },
	};
	const struct conf_schema twice[] = {
		{ .section = "x", .key = "i", .type = CONF_INT, CONF_AT(struct bad, i),
		  .desc = "d" },
		{ .section = "X", .key = "I", .type = CONF_INT, CONF_AT(struct bad, i),
		  .desc = "d" },
		{ 0 },
	};
	const struct conf_schema nodesc[] = {
		{ .section = "x", .key = "i", .type = CONF_INT, CONF_AT(struct bad, i) },
		{ 0 },
	};
	const struct conf_schema baddef[] = {
		{ .section = "x", .key = "s", .type = CONF_STRING, .def = "long",
		  CONF_AT(struct bad, s), .desc = "d" },
		{ 0 },
	};
	const struct conf_schema noenum[] = {
		{ .section = "x", .key = "e", .type = CONF_ENUM, .values = none,
		  CONF_AT(struct bad, small), .desc = "d" },
		{ 0 },
	};
	const struct conf_schema badname[] = {
		{ .section = "x y", .key = "i", .type = CONF_INT, CONF_AT(struct bad, i),
		  .desc = "d" },
		{ 0 },
	};
	CHECK_EQ(conf_load_string(wrong_size, &b, "t", "", &err), -EINVAL);
	CHECK_EQ(err.line, 0);
	CHECK(!strcmp(err.msg, "schema: [x] i: field is 4 bytes, its type needs 8 (use CONF_AT)"));
	CHECK_EQ(conf_load_string(twice, &b, "t", "", &err), -EINVAL);
	CHECK(!strcmp(err.msg, "schema: [X] I: listed twice"));
	CHECK_EQ(conf_load_string(nodesc, &b, "t", "", &err), -EINVAL);
	CHECK(!strcmp(err.msg, "schema: [x] i: no description"));
	CHECK_EQ(conf_load_string(baddef, &b, "t", "", &err), -EINVAL);
	CHECK(!strcmp(err.msg,
		      "schema: [x] s: default: \"long...\" is too long (at most 3 bytes)"));
	CHECK_EQ(conf_load_string(noenum, &b, "t", "", &err), -EINVAL);
	CHECK(!strcmp(err.msg, "schema: [x] e: enum without values"));
	CHECK_EQ(conf_load_string(badname, &b, "t", "", &err), -EINVAL);
	CHECK(!strcmp(err.msg, "schema: [x y] i: bad section, subsection or key name"));
}

static void test_dump(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f);
	conf_schema_dump(schema, f);
	fclose(f);
	static const char *const lines[] = {
		"# section\tkey\ttype\tdefault\tdescription\n",
		"nfsd\tpnfs\tbool\tyes\tOffer pNFS layouts.\n",
		"nfsd\tthreads\tint 1..1024\t8\tWorker threads.\n",
		"nfsd\toffset\tint\t-3\tUnbounded signed integer.\n",
		"store\tblock_size\tsize 4k..1m\t64k\tBytes per block.\n",
		"store\tcache\tsize\t1g\tCache bytes.\n",
		"nfsd\tlease-time\tduration 1s..1h\t90s\tNFSv4 lease.\n",
		"nfsd\tpoll\tduration\t250ms\tPoll interval.\n",
		"nfsd\tname\tstring\tbraid\tServer name.\n",
		"store\tmode\tenum fast|safe|paranoid\tsafe\tWrite ordering.\n",
		"nfsd\tlisten\taddrs repeat\t0.0.0.0:2049, [::]:2049\tWhere to listen.\n",
		"nfsd\tpeers\taddrs\t\tPeer addresses.\n",
		"ds \"a\"\tpath\tstring\t/srv/a\tData path of DS a.\n",
		"nfsd\tnodef\tint\t\tNo default: zero.\n",
	};
	size_t o = 0;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		size_t n = strlen(lines[i]);
		if (strncmp(buf + o, lines[i], n)) {
			fprintf(stderr, "dump line %zu: wanted %sgot %s", i, lines[i], buf + o);
			exit(1);
		}
		o += n;
	}
	CHECK_EQ(o, len);
	free(buf);
}

int main(void)
{
	test_defaults();
	test_syntax();
	test_unknown();
	test_duplicates();
	test_bool();
	test_int();
	test_size();
	test_duration();
	test_string_enum();
	test_addrs();
	test_files();
	test_bad_schema();
	test_dump();
	printf("conf-schema: ok\n");
	return 0;
}
