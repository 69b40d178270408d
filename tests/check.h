/* SPDX-License-Identifier: MIT */
/* Minimal assertions for test programs: exit 1 with file:line on failure. */
#ifndef BRAID_TESTS_CHECK_H
#define BRAID_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,     \
				__LINE__, #cond);                                  \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                             \
	do {                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                \
		if (a_ != b_) {                                                    \
			fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", \
				__FILE__, __LINE__, #a, #b, a_, b_);               \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

#define SKIP(...)                                                                  \
	do {                                                                       \
		fprintf(stderr, "SKIP: " __VA_ARGS__);                             \
		fprintf(stderr, "\n");                                             \
		exit(77);                                                          \
	} while (0)

#endif
