/* SPDX-License-Identifier: MIT */
/*
 * A test RPC program served by the engine, and raw-socket helpers that
 * build calls and read replies byte by byte, for the engine tests.
 */
#ifndef BRAID_TESTS_RPC_ENGINE_H
#define BRAID_TESTS_RPC_ENGINE_H

#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nfsd/rpc.h"

#define TPROG 0x20000099u
#define TPROG_BC 0x20000098u /* served by the client, called by the server */

enum tproc {
	TP_NULL = 0,
	TP_ECHO = 1,     /* worker: opaque<> echoed back (referenced, not copied) */
	TP_WHOAMI = 2,   /* inline: uid, gid, groups<> */
	TP_DROP = 3,     /* never answers */
	TP_ASYNC = 4,    /* answered 10 ms later from another thread */
	TP_CALLBACK = 5, /* asks the client's backchannel for x+1 */
	TP_UNIMPL = 6,   /* listed without a handler: PROC_UNAVAIL */
	TP_SLEEP = 7,    /* worker: 20 ms */
	TP_KILLONCE = 8, /* first call: drops the connection unanswered */
	TP_WHOAMI_W = 9, /* WHOAMI on a worker (groups resolved with manage_gids) */
	TP_BULK = 10,    /* worker, NFSD_PROC_BULK: 5 ms, then u32 n -> n bytes, held */
	TP_BULK_DISK = 11, /* the same, but leaves the window first (nfsd_req_unbulk) */
	TP_NPROCS
};

/* TP_BULK and TP_BULK_DISK calls running now, and the most at once. */
extern atomic_int tp_bulk_now, tp_bulk_max;

/* Start a server with the test program on 127.0.0.1:0; returns the port. */
struct nfsd_server *tsrv_start(int backend, const struct nfsd_server_opts *opts, int *port);
/* The backchannel program a test client serves (ADD1: x -> x + 1). */
extern const struct nfsd_program tprog_bc;

int raw_connect(int port);
/* Encode a call; flavor 0/1, or anything for hostile tests.  Returns length
 * including the record mark. */
size_t raw_call(uint8_t *buf, uint32_t xid, uint32_t rpcvers, uint32_t prog, uint32_t vers,
		uint32_t proc, uint32_t flavor, const void *cred, uint32_t credlen,
		const void *args, uint32_t argslen);
/* Read one whole record (all fragments); returns its length or -1 on EOF. */
ssize_t raw_read_record(int fd, uint8_t *buf, size_t cap);
void raw_write_all(int fd, const void *p, size_t n);
/* A listening socket on a free loopback port, *sa its address. */
int raw_listen(struct sockaddr_in *sa);

/* Reply parsed: stat is accept_stat, or 0x200 | auth_stat / 0x2ff mismatch. */
struct raw_reply {
	uint32_t xid;
	int stat;
	uint32_t lo, hi;
	const uint8_t *res;
	size_t reslen;
};
int raw_parse_reply(const uint8_t *rec, size_t len, struct raw_reply *r);

#endif
