/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the metrics tests: a request to a metrics server made with
 * the curl tool, the status line of an answer to raw bytes, a check that
 * a text is well-formed Prometheus exposition (format 0.0.4) or
 * OpenMetrics, and the value of one series in it.
 */
#ifndef BRAID_TESTS_NFSD_METRICS_TEST_H
#define BRAID_TESTS_NFSD_METRICS_TEST_H

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/check.h"

/* What curl made of an answer: its status and headers as curl reports
 * them (curl --write-out), and the body. */
struct mx_reply {
	int status;	  /* 0: no answer (refused, closed, timed out) */
	char type[128];	  /* Content-Type, "" when absent */
	char allow[64];	  /* Allow */
	long long length; /* Content-Length, -1 when absent */
	long long got;	  /* body bytes received */
	char *body;	  /* malloc'd, NUL-terminated: what curl wrote */
};

/* curl [args...] http://127.0.0.1:port<path>; args NULL-terminated (or NULL). */
void mx_curl(struct mx_reply *r, int port, const char *path, const char *const *args);
/* The same at http://host:port<path> (host "[::1]" for IPv6). */
void mx_curl_host(struct mx_reply *r, const char *host, int port, const char *path,
		  const char *const *args);
void mx_reply_release(struct mx_reply *r);

/* GET /metrics: checks the status and headers, returns the body (malloc'd). */
char *mx_scrape(int port);
/* The same asking for OpenMetrics as Prometheus does (Accept). */
char *mx_scrape_openmetrics(int port);

/*
 * Send len bytes of req as is on a new connection to 127.0.0.1:port and
 * read the answer's first line: the status code of an "HTTP/1.x NNN"
 * line, or 0 when the server closed (or reset) the connection without one.
 */
int mx_raw_status(int port, const void *req, size_t len);

/*
 * Well-formed exposition: every line a "# HELP name text", a
 * "# TYPE name counter|gauge|histogram|untyped" given once per family
 * before its samples, or a sample 'name{k="v",...} value' of the family
 * last typed (histograms: name_bucket / _sum / _count), labels quoted with
 * escapes, values numbers; the text ends with a newline.
 */
void mx_check_format(const char *text);

/*
 * The same for OpenMetrics 1.0.0: types counter, gauge, histogram or
 * unknown; a counter's family named without _total and its samples with
 * it; HELP escapes '"' too; le values canonical (a '.' or an exponent);
 * the text ends with "# EOF\n".
 */
void mx_check_openmetrics(const char *text);

/* The value of the series named exactly (with its labels) 'series'; -1 when absent. */
double mx_value(const char *text, const char *series);

#endif
