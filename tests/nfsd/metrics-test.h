/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the metrics tests: a raw HTTP/1.0 request to a metrics
 * server, a check that a text is well-formed Prometheus exposition
 * (format 0.0.4), and the value of one series in it.
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

/* Send req as is to 127.0.0.1:port, read the whole answer (malloc'd). */
char *mx_http(int port, const char *req);

/* GET /metrics: checks the status line and headers, returns the body (malloc'd). */
char *mx_scrape(int port);

/*
 * Well-formed exposition: every line a "# HELP name text", a
 * "# TYPE name counter|gauge|histogram|untyped" given once per family
 * before its samples, or a sample 'name{k="v",...} value' of the family
 * last typed (histograms: name_bucket / _sum / _count), labels quoted with
 * escapes, values numbers; the text ends with a newline.
 */
void mx_check_format(const char *text);

/* The value of the series named exactly (with its labels) 'series'; -1 when absent. */
double mx_value(const char *text, const char *series);

#endif
