/* SPDX-License-Identifier: MIT */
/*
 * Erasure coding, the MDS's side (mds/ec.c; issue 19, layout/policy.h
 * "Erasure coding", braid_ctl.x EC_COMPUTE and EC_LOCATE).
 *
 * A file under an ec policy is written as plain one-copy segments.  It is
 * *hot* until sealed: then every stripe s (segments s*k .. s*k+k-1) has m
 * parity chunks on data servers holding no other chunk of the stripe,
 * which the data servers computed among themselves (EC_COMPUTE).
 *
 * Durable state, in the store's layouts table under the inode (keys at or
 * above MDS_LAYOUT_SEG_END, mds/data.h):
 *   MDS_EC_REC: flags MDS_EC_SEALED or 0 (hot); ds[0..1] the file's change
 *     attribute and ds[2..3] its size when sealed (high word first).
 *   MDS_EC_PARITY + s: the m parity holders of stripe s, chunk order.
 * and the store's ecseal set (mds_ecseal_mark): the files to seal.  A
 * file with no MDS_EC_REC was never written since created: hot.
 *
 * Sealing (one thread): a file of the set is sealed once it is unchanged
 * for [mds] ec_seal_after, open for writing by nobody and with no RW
 * layout out.  Every segment up to its last stripe's end is laid out (so
 * every data chunk has an object), the parity holders are chosen
 * (layout_ec_place) and recorded, EC_COMPUTE makes each parity chunk
 * (EC_JOBS at once), and SEALED is recorded, unless the file went dirty
 * meanwhile.  A crash leaves the file in the set: it is encoded again.
 *
 * The race rule.  mds_ec_write_begin() bumps the file's write count under
 * ec->mu, then (a sealed file) durably clears SEALED and puts the file
 * back in the set, all before the write it precedes may happen.  The
 * sealer reads the count before it looks at the file and, under ec->mu,
 * records SEALED only if the count did not move, no RW layout is out and
 * the change attribute is the one it started from.  The MDS's own writes
 * call it inside their write gate (MDS_GATE_WRITE), which the sealer
 * freezes once before it starts, so a proxied write either finished before
 * or counts; an RW LAYOUTGET calls it before the grant and
 * mds_ec_write_note() after it, so a layout granted during encoding is
 * either still out at the check or has moved the count.
 *
 * Errors: 0 or -errno.
 */
#ifndef BRAID_MDS_EC_H
#define BRAID_MDS_EC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct braid_mds;
struct layout_policy;
struct mds_attr;
struct mds_file_map;
struct nfsd_req;

#define MDS_EC_REC    (UINT64_MAX - 2)
#define MDS_EC_PARITY (1ull << 62) /* + stripe: its parity holders */
#define MDS_EC_SEALED 1u

int mds_ec_init(struct braid_mds *mds, char *msg, size_t msglen);
/* Stops the sealer (it calls data servers): before dsreg goes. */
void mds_ec_stop(struct braid_mds *mds);
void mds_ec_release(struct braid_mds *mds);

/*
 * Before any byte of ino's file may change (a proxied WRITE, ALLOCATE,
 * DEALLOCATE or truncation; an RW layout): pol is the file's policy as
 * the caller read it.  Nothing for a file not erasure coded; else the race
 * rule above.  0, or the -errno of the store (the write must not go on).
 */
int mds_ec_write_begin(struct braid_mds *mds, uint64_t ino, const struct layout_policy *pol);
/* The same for callers without the policy at hand (it is read). */
int mds_ec_write_begin_ino(struct braid_mds *mds, uint64_t ino);
/* An RW layout of ino was just granted (no I/O, never fails). */
void mds_ec_write_note(struct braid_mds *mds, uint64_t ino, const struct layout_policy *pol);

/* A file's state: -ENOENT when it has no MDS_EC_REC. */
struct mds_ec_file {
	bool sealed;
	uint64_t change, size; /* when sealed */
};
int mds_ec_file_get(struct braid_mds *mds, uint64_t ino, struct mds_ec_file *out);
/* Stripe s's parity holders (m of them) into ids: -ENOENT when none. */
int mds_ec_parity_get(struct braid_mds *mds, uint64_t ino, uint64_t s, uint32_t *ids,
		      unsigned m);

/*
 * A degraded READ of segment n of a sealed file whose own data server
 * cannot serve it: one chunk holder of its stripe that can (ok(arg, id)),
 * parity holders first, chosen round-robin, into *out, to be named with a
 * reconstructing handle (ds_fh_make_ec).  -ENOENT: the file is not sealed
 * (or not erasure coded): no parity to rebuild from; -EIO: more than m
 * chunks of the stripe cannot be served (its bytes are unreadable now:
 * logged once).
 */
int mds_ec_substitute(struct braid_mds *mds, const struct mds_attr *a,
		      const struct mds_file_map *map, uint64_t n,
		      bool (*ok)(void *arg, uint32_t id), void *arg, uint32_t *out);

/* Every parity object of a's file removed (its release): 0, or -errno
 * when some is left for a later try. */
int mds_ec_objects_remove(struct braid_mds *mds, const struct mds_attr *a);

/*
 * EC_COMPUTE (braid_ctl.x) of chunk target of stripe s of a's file
 * (policy p, fence epoch epoch, the file's size size, holders ids),
 * whole, on its holder, looped from ecc_next with a 15 s timeout per
 * call; verify: compare, write nothing.  0, or the -errno of the first
 * failure with out->chunk the chunk it is about (ecf_chunk: -EIO with a
 * source's index is a block that failed its CRC there, or a source that
 * did not answer).  mds_ec_compute() is the same without verify.
 */
struct mds_ec_compute_out {
	uint64_t written, mismatch; /* bytes, over every call */
	unsigned chunk;
};
int mds_ec_chunk_compute(struct braid_mds *mds, const struct mds_attr *a,
			 const struct layout_policy *p, uint32_t epoch, uint64_t s, uint64_t size,
			 const uint32_t *ids, unsigned target, bool verify,
			 struct mds_ec_compute_out *out);

/* The data servers holding some parity object of ino's file (at most
 * max, deduplicated): how many, or -errno. */
int mds_ec_parity_holders(struct braid_mds *mds, uint64_t ino, uint32_t *ids, unsigned max);

/*
 * Chunks of a sealed file rewritten in place (a scrub's repair): while
 * ino is held, mds_ec_write_begin of it answers -EAGAIN (the client is
 * told DELAY, JUKEBOX or LAYOUTTRYLATER and comes back), so no write can
 * land in a chunk being rebuilt from the others and no RPC worker waits.  mds_ec_writes() is read before
 * the file is looked at; mds_ec_hold() succeeds (0) only if no write
 * began since (w0), the file is still sealed and no RW layout is out;
 * -EAGAIN otherwise (the file is being written: not held), -EINTR at a
 * stop.  One inode held at a time (a second hold waits).  Keep a hold
 * short: that file's writers are turned away meanwhile.
 */
int mds_ec_hold(struct braid_mds *mds, uint64_t ino, uint64_t w0);
void mds_ec_unhold(struct braid_mds *mds, uint64_t ino);
/* Whether ino is held (mds_ec_hold) now. */
bool mds_ec_held(struct braid_mds *mds, uint64_t ino);

/* EC_LOCATE (braid_ctl.x), served beside REGISTER (mds/dsreg.c). */
int mds_ec_locate(struct nfsd_req *req, void *argp, void *resp);

/* braidctl and metrics. */
struct mds_ec_stats {
	uint64_t sealed, unsealed, encode_bytes, degraded, failures;
	uint64_t to_seal; /* files in the set at the last scan */
};
void mds_ec_stats(struct braid_mds *mds, struct mds_ec_stats *out);

/*
 * EC_COMPUTE of chunk 'target' of stripe s of a's file (policy p, fence
 * epoch epoch, a->size its size) on ids[target], the other chunks on
 * ids[0..k+m) (0, down or lost: not a source), looped from ecc_next until
 * done, each call bounded by 15 s.  *written grows by the bytes written.
 */
int mds_ec_compute(struct braid_mds *mds, const struct mds_attr *a, const struct layout_policy *p,
		   uint32_t epoch, uint64_t s, const uint32_t *ids, unsigned target, uint64_t *written);
/* Stripe s's holders, chunk order (0: a data chunk not laid out), into
 * ids[0..k+m): -ENOENT when it has no parity record. */
int mds_ec_stripe_ids(struct braid_mds *mds, uint64_t ino, const struct layout_policy *p,
		      uint64_t s, uint32_t *ids);
/* How many writes of ino have begun (the race rule's count). */
uint64_t mds_ec_writes(struct braid_mds *mds, uint64_t ino);
/* fn(arg) under the race rule's lock, only if ino is sealed and no write
 * began since the count was w0: its result, or -EAGAIN. */
int mds_ec_sealed_do(struct braid_mds *mds, uint64_t ino, uint64_t w0, int (*fn)(void *arg),
		     void *arg);

/*
 * Rebuild (mds/ec_rebuild.c), driven by the resilver's rebuild scan
 * (mds/resilver.h).  A sealed file with a chunk on a data server declared
 * lost, or drained, has that chunk made again (EC_COMPUTE from k others)
 * on a usable data server holding no chunk of its stripe, then the
 * segment's map (a data chunk) or the stripe's parity record names it,
 * durably, under the race rule; the file's layouts are recalled once its
 * chunks moved, and the old objects are removed where the server answers.
 * While a file has such chunks, mds_ec_write_begin() answers -EAGAIN: an
 * unseal would leave them with nothing to be rebuilt from.
 */
int mds_ec_rebuild_init(struct braid_mds *mds, char *msg, size_t msglen);
void mds_ec_rebuild_release(struct braid_mds *mds);
/* Whether writes to ino wait for its rebuild. */
bool mds_ec_rebuild_held(struct braid_mds *mds, uint64_t ino);

/* What of a sealed file lies on lost or drained data servers. */
struct mds_ec_rebuild_need {
	uint64_t chunks; /* chunks to make elsewhere */
	uint64_t bytes;	 /* their size (segment size each) */
	uint64_t bad;	 /* stripes with more than m chunks lost */
	uint32_t bad_ds; /* a lost data server of the first of them */
};
/*
 * -ENOENT: ino is not a sealed erasure-coded file (the copy rebuild
 * applies).  Else 0 and *need; a file with chunks to make is held (its
 * writes wait) until mds_ec_rebuild_file() has made them.
 */
int mds_ec_rebuild_check(struct braid_mds *mds, uint64_t ino, struct mds_ec_rebuild_need *need);
/*
 * Makes every chunk of ino that can be made now; done(arg, bytes) after
 * each one recorded, stop(arg) checked between them.  0 when none is left
 * but those of stripes beyond repair; -errno (some left: tried again at the
 * next scan).  Lets the file's writes go when it returns.
 */
int mds_ec_rebuild_file(struct braid_mds *mds, uint64_t ino, bool (*stop)(void *arg),
			void (*done)(void *arg, uint64_t bytes), void *arg);

#endif
