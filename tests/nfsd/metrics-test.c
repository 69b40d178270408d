/* SPDX-License-Identifier: MIT */
/* Helpers for the metrics tests (tests/nfsd/metrics-test.h). */
#include "config.h"

#include "tests/nfsd/metrics-test.h"

char *mx_http(int port, const char *req)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	struct timeval tv = {.tv_sec = 30};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	size_t len = strlen(req);
	CHECK(send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len);
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	CHECK(buf);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			CHECK(buf);
		}
		ssize_t r = recv(fd, buf + n, cap - n, 0);
		if (r < 0 && errno == EINTR)
			continue; /* a signal the test sends itself (SIGHUP, SIGCHLD) */
		if (r < 0)
			fprintf(stderr, "reading the answer to %.40s...: %s (after %zu bytes)\n",
				req, strerror(errno), n);
		CHECK(r >= 0);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	close(fd);
	return buf;
}

char *mx_scrape(int port)
{
	char *r = mx_http(port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
	CHECK(!strncmp(r, "HTTP/1.0 200 OK\r\n", 17));
	CHECK(strstr(r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	char *body = strstr(r, "\r\n\r\n");
	CHECK(body);
	body += 4;
	const char *cl = strstr(r, "Content-Length: ");
	CHECK(cl && cl < body);
	CHECK_EQ(strtoull(cl + 16, NULL, 10), strlen(body));
	char *out = strdup(body);
	free(r);
	return out;
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

void mx_check_format(const char *text)
{
	CHECK(*text && text[strlen(text) - 1] == '\n');
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
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			char nm[256], t[32];
			CHECK(sscanf(line + 7, "%255s %31s", nm, t) == 2);
			CHECK(mx_name_ok(nm, strlen(nm)));
			CHECK(!strcmp(t, "counter") || !strcmp(t, "gauge") ||
			      !strcmp(t, "histogram") || !strcmp(t, "untyped"));
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
		if (!strcmp(typ, "histogram")) {
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
				CHECK(p[1] == '"');
				p += 2;
				while (*p && *p != '"') {
					if (*p == '\\') {
						CHECK(p[1] == '\\' || p[1] == '"' || p[1] == 'n');
						p++;
					}
					p++;
				}
				CHECK(*p == '"');
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
