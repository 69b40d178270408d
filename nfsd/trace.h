/* SPDX-License-Identifier: MIT */
/*
 * USDT trace points, provider "braid" (<sys/sdt.h>, systemtap-sdt-dev).
 * docs/tracing.md lists every probe with its arguments, and
 * tests/docs/tracing-probes.sh checks that list against the built daemons.
 *
 * A probe is a nop in the code and a note in the ELF file; a tracer
 * (bpftrace, perf, systemtap) turns it into a breakpoint.  Arguments are
 * integers (or pointers), at most 12; what a probe is mostly read for
 * comes in its first six, all that bpftrace before 0.24 (Debian 12 has
 * 0.17) can read on x86_64.  Every probe has a semaphore, which
 * tracers that honour them raise while attached: BRAID_TRACE_ENABLED()
 * guards arguments that cost something to compute (a clock read, a hash),
 * so nothing but the nop is paid while nobody listens.
 *
 * Add a probe: its name to BRAID_PROBES (which defines its semaphore, in
 * nfsd/trace.c), BRAID_TRACE() where it fires, and its row in
 * docs/tracing.md.
 */
#ifndef BRAID_NFSD_TRACE_H
#define BRAID_NFSD_TRACE_H

/* must precede <sys/sdt.h>: each probe's note names its semaphore */
#define _SDT_HAS_SEMAPHORES 1
#define SDT_USE_VARIADIC 1
#include <sys/sdt.h>

#include "nfsd/clock.h"

#define BRAID_PROBES(X)          \
	X(rpc__recv)             \
	X(rpc__reply)            \
	X(nfs4__op)              \
	X(layout__grant)         \
	X(layout__return)        \
	X(layout__recall)        \
	X(layout__recall__reply) \
	X(layout__revoke)        \
	X(ds__read)              \
	X(ds__write)             \
	X(ds__commit)            \
	X(ctl__call)             \
	X(store__commit)         \
	X(store__sync)

/* braid_<name>_semaphore: the name sys/sdt.h gives a probe's semaphore */
#define BRAID_TRACE_SEMA_DECL(n) extern volatile unsigned short braid_##n##_semaphore;
BRAID_PROBES(BRAID_TRACE_SEMA_DECL)
#undef BRAID_TRACE_SEMA_DECL

/* Whether a tracer is attached to probe n (a tracer that does not raise
 * semaphores still sees the probe, with 0 for guarded arguments). */
#define BRAID_TRACE_ENABLED(n) __builtin_expect(braid_##n##_semaphore != 0, 0)

/* Fire probe n of provider braid with its arguments. */
#define BRAID_TRACE(n, ...) STAP_PROBEV(braid, n, __VA_ARGS__)

/* Microseconds from t0 (nfsd_now_ns()) to now; 0, and now not evaluated,
 * when t0 was not taken. */
#define BRAID_TRACE_US(t0, now) ((t0) ? ((now) - (t0)) / 1000 : 0)

#endif
