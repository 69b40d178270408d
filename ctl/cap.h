/* SPDX-License-Identifier: MIT */
/*
 * Capabilities: what tightly coupled layouts (RFC 8435 §2.3) carry in
 * ffds_stateid, for clients whose MDS mount uses RPCSEC_GSS.
 *
 * Such a client sends its data with its own (Kerberos) credential, as the
 * Linux client does for ffdv_tightly_coupled devices, so the synthetic
 * fence ids of loosely coupled layouts (layout/fence.h) cannot name it.
 * The stateid's 12 "other" bytes are instead a MAC, under the cluster
 * key's capability key (braid_key.cap, nfsd/mac.h), of the object, the
 * iomode and the object's current owner and group (the RW fence ids).
 * braid-mds makes it in LAYOUTGET; braid-ds recomputes it from the
 * object's owner and group: a READ capability never passes for WRITE, and
 * a fence (new ids) voids every capability made before it.  It says
 * nothing of who may use it: the data server also requires an RPCSEC_GSS
 * caller, and on krb5p mounts the stateid never crosses the network in
 * clear (docs/architecture.md, "Kerberos and layouts").
 */
#ifndef BRAID_CTL_CAP_H
#define BRAID_CTL_CAP_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl/objid.h"
#include "nfsd/mac.h"

#define CTL_CAP_SEQID 1u /* the stateid's seqid: fixed, never checked */
enum ctl_cap_iomode { CTL_CAP_READ = 1, CTL_CAP_RW = 2 };

/* The capability for iomode on obj owned by uid:gid. */
void ctl_cap_make(const struct siphash_key *k, const struct ds_objid *obj, uint32_t uid,
		  uint32_t gid, enum ctl_cap_iomode iomode, uint8_t other[12]);
/* Does 'other' grant iomode (READ: a READ or an RW capability) on obj
 * owned by uid:gid?  Constant time. */
bool ctl_cap_check(const struct siphash_key *k, const struct ds_objid *obj, uint32_t uid,
		   uint32_t gid, enum ctl_cap_iomode iomode, const uint8_t other[12]);

#endif
