/* SPDX-License-Identifier: MIT */
/* The clocks every module reads, in nanoseconds. */
#ifndef BRAID_NFSD_CLOCK_H
#define BRAID_NFSD_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC: timeouts, leases, intervals, latencies. */
static inline uint64_t nfsd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME: stamps another host compares with its own clock. */
static inline uint64_t nfsd_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
