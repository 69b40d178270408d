/* SPDX-License-Identifier: MIT */
/*
 * A stand-in MDS for data-server tests: an in-process server of the
 * control program (braid_ctl.x), AUTH_BRAID under the test's cluster key,
 * answering the MDS's procedures: NULL, REGISTER (data server ids 1, 2, ...
 * in the order they come, remembered by control port),
 * HEARTBEAT (OK, every second) and EC_LOCATE (the test's callback).  A
 * data server finds it with "mds = 127.0.0.1:<fm_port()>".
 */
#ifndef BRAID_TESTS_DATASERVER_FAKE_MDS_H
#define BRAID_TESTS_DATASERVER_FAKE_MDS_H

#include "braid_ctl.h"

#include "nfsd/mac.h"
#include "nfsd/rpc.h"

/* Fill *r (arrays in arena memory, the request's, freed with the reply). */
typedef void (*fm_locate_fn)(void *arg, const braid_ctl_ec_locate_args *a,
			     braid_ctl_ec_locate_res *r, struct xdr_arena *arena);

struct fake_mds;
struct fake_mds *fm_start(const struct braid_key *key, fm_locate_fn locate, void *arg);
void fm_stop(struct fake_mds *m);
int fm_port(const struct fake_mds *m);
/* The id of the data server whose control address has port ctl_port,
 * once it has registered (waits up to 10 s; fails the test after). */
uint32_t fm_wait_id(struct fake_mds *m, int ctl_port);
/* Calls served so far. */
unsigned fm_registers(struct fake_mds *m);
unsigned fm_locates(struct fake_mds *m);

#endif
