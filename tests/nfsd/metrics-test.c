/* SPDX-License-Identifier: MIT */
/* Helpers for the metrics tests (tests/nfsd/metrics-test.h). */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>

#include "tests/nfsd/metrics-test.h"

extern char **environ;

/* Everything curl writes on out and err until it closes both (malloc'd). */
static void mx_drain(int out, int err, char **obuf, size_t *olen, char **ebuf)
{
	int fds[2] = {out, err};
	char *b[2];
	size_t n[2] = {0, 0}, cap[2] = {1 << 16, 1024};
	for (int i = 0; i < 2; i++) {
		b[i] = malloc(cap[i] + 1);
		CHECK(b[i]);
	}
	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd p[2] = {{.fd = fds[0], .events = POLLIN},
				      {.fd = fds[1], .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			CHECK(errno == EINTR);
			continue;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i] < 0 || !p[i].revents)
				continue;
			if (n[i] == cap[i]) {
				cap[i] *= 2;
				b[i] = realloc(b[i], cap[i] + 1);
				CHECK(b[i]);
			}
			ssize_t r = read(fds[i], b[i] + n[i], cap[i] - n[i]);
			if (r < 0 && errno == EINTR)
				continue;
			CHECK(r >= 0);
			if (r == 0) {
				close(fds[i]);
				fds[i] = -1;
			}
			n[i] += (size_t)r;
		}
	}
	b[0][n[0]] = 0;
	b[1][n[1]] = 0;
	*obuf = b[0];
	*olen = n[0];
	*ebuf = b[1];
}

/* After the body, on stderr: a marker, then what we check of the answer. */
#define MX_WRITE_OUT                                                                               \
	"%{stderr}\n@@mx %{http_code} %{size_download}\n%{content_type}\n"                         \
	"%header{allow}\n%header{content-length}\n"

/* One line of s into dst (truncated); the text after it. */
static const char *mx_line(const char *s, char *dst, size_t size)
{
	size_t n = strcspn(s, "\n");
	snprintf(dst, size, "%.*s", (int)n, s);
	return s[n] ? s + n + 1 : s + n;
}

void mx_curl(struct mx_reply *r, int port, const char *path, const char *const *args)
{
	mx_curl_host(r, "127.0.0.1", port, path, args);
}

void mx_curl_host(struct mx_reply *r, const char *host, int port, const char *path,
		  const char *const *args)
{
	char url[256];
	snprintf(url, sizeof(url), "http://%s:%d%s", host, port, path);
	/* -q first: no ~/.curlrc; no proxy from the environment */
	const char *argv[32] = {"curl",	      "-q", "-sS",	   "--noproxy", "*",
				"--max-time", "30", "--write-out", MX_WRITE_OUT};
	size_t argc = 9;
	for (size_t i = 0; args && args[i]; i++) {
		CHECK(argc < sizeof(argv) / sizeof(argv[0]) - 2);
		argv[argc++] = args[i];
	}
	argv[argc++] = url;
	argv[argc] = NULL;

	int out[2], err[2];
	CHECK(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0);
	posix_spawn_file_actions_t fa;
	CHECK_EQ(posix_spawn_file_actions_init(&fa), 0);
	CHECK_EQ(posix_spawn_file_actions_adddup2(&fa, out[1], 1), 0);
	CHECK_EQ(posix_spawn_file_actions_adddup2(&fa, err[1], 2), 0);
	pid_t pid;
	int rc = posix_spawnp(&pid, "curl", &fa, NULL, (char *const *)argv, environ);
	if (rc)
		fprintf(stderr, "running curl: %s (apt-get install curl)\n", strerror(rc));
	CHECK_EQ(rc, 0);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	close(err[1]);
	size_t len;
	char *e;
	mx_drain(out[0], err[0], &r->body, &len, &e);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		CHECK(errno == EINTR);

	memset(r->type, 0, sizeof(r->type));
	memset(r->allow, 0, sizeof(r->allow));
	r->status = 0;
	r->length = -1;
	r->got = -1;
	const char *m = NULL;
	for (const char *p = e; (p = strstr(p, "\n@@mx ")); p++)
		m = p;
	if (!m) {
		fprintf(stderr, "curl %s: no --write-out: %s\n", url, e);
		CHECK(0);
	}
	char line[160];
	const char *p = mx_line(m + 6, line, sizeof(line));
	CHECK(sscanf(line, "%d %lld", &r->status, &r->got) == 2);
	p = mx_line(p, r->type, sizeof(r->type));
	p = mx_line(p, r->allow, sizeof(r->allow));
	mx_line(p, line, sizeof(line));
	if (*line)
		r->length = strtoll(line, NULL, 10);
	/* curl's complaint (-S), for the log, when it got an answer */
	if (r->status && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		fprintf(stderr, "curl %s: exit %d: %.*s\n", url, st, (int)(m - e), e);
	CHECK(strlen(r->body) == len);
	free(e);
}

void mx_reply_release(struct mx_reply *r)
{
	free(r->body);
	r->body = NULL;
}

/* GET /metrics with the given extra curl arguments: a 200 of want_type
 * whose whole body came; the body (malloc'd). */
static char *scrape_as(int port, const char *const *args, const char *want_type)
{
	struct mx_reply r;
	mx_curl(&r, port, "/metrics", args);
	CHECK_EQ(r.status, 200);
	if (strcmp(r.type, want_type))
		fprintf(stderr, "Content-Type: %s\n", r.type);
	CHECK(!strcmp(r.type, want_type));
	CHECK_EQ(r.length, r.got);
	CHECK_EQ(strlen(r.body), r.got);
	return r.body;
}

char *mx_scrape(int port)
{
	return scrape_as(port, NULL, "text/plain; version=0.0.4; charset=utf-8");
}

char *mx_scrape_openmetrics(int port)
{
	/* what Prometheus asks for */
	static const char *const accept[] = {
	    "-H",
	    "Accept: application/openmetrics-text;version=1.0.0,application/"
	    "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
	    NULL};
	return scrape_as(port, accept, "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

int mx_raw_status(int port, const void *req, size_t len)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	struct timeval tv = {.tv_sec = 30};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* the server may refuse before it has read everything: stop sending then */
	for (const char *p = req; len;) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		len -= (size_t)n;
	}
	char line[64];
	size_t n = 0;
	while (n < sizeof(line) - 1 && !memchr(line, '\n', n)) {
		ssize_t r = recv(fd, line + n, sizeof(line) - 1 - n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != ECONNRESET)
			fprintf(stderr, "raw request to port %d: %s\n", port, strerror(errno));
		CHECK(r >= 0 || errno == ECONNRESET);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	line[n] = 0;
	close(fd);
	if (!n)
		return 0;
	/* Status-Line = HTTP-Version SP Status-Code SP Reason-Phrase (RFC 9112 §4) */
	if (n < 12 || strncmp(line, "HTTP/1.", 7) || line[8] != ' ' ||
	    !isdigit((unsigned char)line[9])) {
		fprintf(stderr, "not a status line: %s\n", line);
		return -1;
	}
	return atoi(line + 9);
}

static bool mx_name_ok(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

/* OpenMetrics: the samples of a family of type typ named name */
static bool mx_om_sample_ok(const char *family, const char *typ, const char *name)
{
	size_t fl = strlen(family);
	if (strncmp(name, family, fl))
		return false;
	const char *sfx = name + fl;
	if (!strcmp(typ, "counter"))
		return !strcmp(sfx, "_total") || !strcmp(sfx, "_created");
	if (!strcmp(typ, "histogram"))
		return !strcmp(sfx, "_bucket") || !strcmp(sfx, "_sum") || !strcmp(sfx, "_count") ||
		       !strcmp(sfx, "_created");
	return !*sfx;
}

static void mx_check(const char *text, bool om)
{
	size_t tl = strlen(text);
	CHECK(tl && text[tl - 1] == '\n');
	char *copy = NULL;
	if (om) {
		/* ends with "# EOF", which appears nowhere else */
		CHECK(tl >= 6 && !strcmp(text + tl - 6, "# EOF\n"));
		CHECK(tl == 6 || text[tl - 7] == '\n');
		copy = strndup(text, tl - 6);
		CHECK(copy);
		text = copy;
		CHECK(!strstr(text, "# EOF"));
	}
	char family[256] = "", typ[32] = "";
	char *seen = calloc(1, 1);
	size_t seen_len = 0;
	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		CHECK(e);
		size_t n = (size_t)(e - l);
		char line[4096];
		CHECK(n < sizeof(line));
		memcpy(line, l, n);
		line[n] = 0;
		l = e + 1;
		if (!strncmp(line, "# HELP ", 7)) {
			const char *nm = line + 7, *sp = strchr(nm, ' ');
			CHECK(sp && mx_name_ok(nm, (size_t)(sp - nm)));
			/* OpenMetrics escaped-string: \\, \n, \" and no bare '"' */
			for (const char *p = sp + 1; om && *p; p++) {
				CHECK(*p != '"');
				if (*p == '\\') {
					CHECK(p[1] == '\\' || p[1] == 'n' || p[1] == '"');
					p++;
				}
			}
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			char nm[256], t[32];
			CHECK(sscanf(line + 7, "%255s %31s", nm, t) == 2);
			CHECK(mx_name_ok(nm, strlen(nm)));
			CHECK(!strcmp(t, "counter") || !strcmp(t, "gauge") ||
			      !strcmp(t, "histogram") || !strcmp(t, om ? "unknown" : "untyped"));
			/* OpenMetrics: a counter's family is named without _total */
			size_t nl = strlen(nm);
			if (om && !strcmp(t, "counter") && nl > 6 &&
			    !strcmp(nm + nl - 6, "_total")) {
				fprintf(stderr, "counter family %s named with _total\n", nm);
				CHECK(0);
			}
			/* a family is typed once */
			char key[260];
			snprintf(key, sizeof(key), "\n%s\n", nm);
			if (seen_len && strstr(seen, key)) {
				fprintf(stderr, "family %s typed twice\n", nm);
				CHECK(0);
			}
			seen = realloc(seen, seen_len + strlen(key) + 1);
			memcpy(seen + seen_len, key, strlen(key) + 1);
			seen_len += strlen(key) - 1; /* the newlines overlap */
			snprintf(family, sizeof(family), "%s", nm);
			snprintf(typ, sizeof(typ), "%s", t);
			continue;
		}
		CHECK(line[0] != '#');
		/* a sample */
		size_t nl = 0;
		while (line[nl] && line[nl] != '{' && line[nl] != ' ')
			nl++;
		CHECK(mx_name_ok(line, nl));
		char nm[256];
		memcpy(nm, line, nl);
		nm[nl] = 0;
		bool ours = !strcmp(nm, family);
		if (om) {
			ours = mx_om_sample_ok(family, typ, nm);
		} else if (!strcmp(typ, "histogram")) {
			size_t fl = strlen(family);
			ours = !strncmp(nm, family, fl) &&
			       (!strcmp(nm + fl, "_bucket") || !strcmp(nm + fl, "_sum") ||
				!strcmp(nm + fl, "_count"));
		}
		if (!ours) {
			fprintf(stderr, "sample '%s' outside its family (%s)\n", line, family);
			CHECK(0);
		}
		const char *p = line + nl;
		if (*p == '{') {
			p++;
			while (*p != '}') {
				const char *k = p;
				while (*p && *p != '=')
					p++;
				CHECK(*p == '=' && mx_name_ok(k, (size_t)(p - k)));
				bool le = p - k == 2 && !strncmp(k, "le", 2);
				CHECK(p[1] == '"');
				p += 2;
				const char *v = p;
				while (*p && *p != '"') {
					if (*p == '\\') {
						CHECK(p[1] == '\\' || p[1] == '"' || p[1] == 'n');
						p++;
					}
					p++;
				}
				CHECK(*p == '"');
				/* OpenMetrics' canonical numbers: 1.0, not 1 */
				if (om && le && strncmp(v, "+Inf\"", 5)) {
					char *end;
					strtod(v, &end);
					CHECK(end == p && strpbrk(v, ".e") && strpbrk(v, ".e") < p);
				}
				p++;
				if (*p == ',')
					p++;
				else
					CHECK(*p == '}');
			}
			p++;
		}
		CHECK(*p == ' ');
		p++;
		char *end;
		if (strcmp(p, "+Inf") && strcmp(p, "-Inf") && strcmp(p, "NaN")) {
			strtod(p, &end);
			CHECK(end != p && *end == 0);
		}
	}
	free(seen);
	free(copy);
}

void mx_check_format(const char *text)
{
	mx_check(text, false);
}

void mx_check_openmetrics(const char *text)
{
	mx_check(text, true);
}

double mx_value(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		if (!e)
			break;
		if ((size_t)(e - l) > n && !strncmp(l, series, n) && l[n] == ' ')
			return strtod(l + n + 1, NULL);
		l = e + 1;
	}
	return -1;
}
