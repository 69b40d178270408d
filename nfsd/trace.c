/* SPDX-License-Identifier: MIT */
/*
 * The semaphores of the braid USDT probes (nfsd/trace.h).  A tracer adds
 * one to a probe's semaphore while it listens and takes it back after;
 * the ".probes" section is where sys/sdt.h's dtrace(1) puts them.
 */
#include "config.h"

#include "nfsd/trace.h"

#define BRAID_TRACE_SEMA_DEF(n) \
	volatile unsigned short braid_##n##_semaphore __attribute__((section(".probes")));
BRAID_PROBES(BRAID_TRACE_SEMA_DEF)
