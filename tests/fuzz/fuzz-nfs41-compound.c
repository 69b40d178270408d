/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for nfsd/nfs41*.c: COMPOUND bodies fed to
 * nfs41_server_compound() directly, no sockets.  Each input is a short
 * conversation, records of [2-byte length][COMPOUND4args], against a fresh
 * server on which the target has already made a client ID and a session; a
 * record whose first op is SEQUENCE gets that session's ID patched in, so
 * slots, replays and the session rules are reachable.  Invariants: the
 * procedure returns SUCCESS, GARBAGE_ARGS or SYSTEM_ERR; a SUCCESS reply
 * decodes as exactly one COMPOUND4res whose status is its last result's
 * (NFS4_OK when it has none, or MINOR_VERS_MISMATCH) and holds no more
 * results than the request had operations.  Minor version 0 (opts.v40)
 * is on: SETCLIENTID, SETCLIENTID_CONFIRM and RENEW.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfsd/nfs41.h"
#include "tests/fuzz/compound.h"

#define MAX_RECORDS 8

static struct nfsd_req req;
static uint8_t rec[1u << 16];

static nfsstat4 f_putfh(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	nfs41_compound_set_fh(c, a->u.opputfh.object.val, a->u.opputfh.object.len);
	return NFS4_OK;
}

static nfsstat4 f_getattr(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	return NFS4_OK;
}

static nfsstat4 f_read(struct nfs41_compound *c, nfs_argop4 *a, nfs_resop4 *r)
{
	uint32_t n = a->u.opread.count > 4096 ? 4096 : a->u.opread.count;
	uint8_t *p = xdr_arena_alloc(c->arena, n + 1);
	if (!p)
		return NFS4ERR_SERVERFAULT;
	r->u.opread.u.resok4.data = xdr_opaque_of(p, n);
	return NFS4_OK;
}

static uint32_t f_read_bound(const nfs_argop4 *a)
{
	return (a->u.opread.count > 4096 ? 4096 : a->u.opread.count) + 32;
}

static const struct nfs41_op f_ops[OP_REMOVEXATTR + 1] = {
    [OP_PUTFH] = {f_putfh, 0, NULL},
    [OP_GETATTR] = {f_getattr, NFS41_OP_NEEDS_FH, NULL},
    [OP_READ] = {f_read, NFS41_OP_NEEDS_FH, f_read_bound},
};

/* One COMPOUND through the module; returns the procedure's status and
 * leaves the reply flattened in out[0..*outlen). */
static int run(struct nfs41_server *s, const uint8_t *body, size_t len, uint8_t *out,
	       size_t *outlen)
{
	memset(&req, 0, sizeof(req));
	fuzz_req_init(&req, body, len);
	int st = nfs41_server_compound(s, &req);
	*outlen = 0;
	if (st == NFSD_SUCCESS && req.enc.len <= (1u << 20)) {
		xdr_enc_flatten(&req.enc, out);
		*outlen = req.enc.len;
	}
	xdr_arena_release(&req.arena);
	return st;
}

static void check_reply(const uint8_t *out, size_t len, uint32_t nops)
{
	struct xdr_arena a;
	COMPOUND4res res;
	fuzz_compound_reply_check(&a, out, len, nops, &res);
	xdr_arena_release(&a);
}

/* Encode ops as a COMPOUND body into buf; returns its length. */
static size_t encode(uint8_t *buf, size_t cap, uint32_t minor, const nfs_argop4 *ops, unsigned n)
{
	COMPOUND4args args = {
	    .tag = xdr_string_of("fz"), .minorversion = minor, .argarray = {n, (nfs_argop4 *)ops}};
	return fuzz_compound_encode(buf, cap, &args);
}

static callback_sec_parms4 sec_none = {.cb_secflavor = 0};

static nfs_argop4 op_exid(void)
{
	nfs_argop4 a = {.argop = OP_EXCHANGE_ID};
	a.u.opexchange_id.eia_clientowner.co_ownerid = xdr_opaque_of("fuzz", 4);
	return a;
}

static nfs_argop4 op_cs(uint64_t id, uint32_t seq)
{
	nfs_argop4 a = {.argop = OP_CREATE_SESSION};
	CREATE_SESSION4args *ca = &a.u.opcreate_session;
	ca->csa_clientid = id;
	ca->csa_sequence = seq;
	ca->csa_fore_chan_attrs = (channel_attrs4){.ca_maxrequestsize = 8192,
						   .ca_maxresponsesize = 8192,
						   .ca_maxresponsesize_cached = 2048,
						   .ca_maxoperations = 8,
						   .ca_maxrequests = 4};
	/* a back channel that can carry a callback (else TOOSMALL) */
	ca->csa_back_chan_attrs = (channel_attrs4){.ca_maxrequestsize = 4096,
						   .ca_maxresponsesize = 4096,
						   .ca_maxoperations = 2,
						   .ca_maxrequests = 1};
	ca->csa_sec_parms.len = 1;
	ca->csa_sec_parms.val = &sec_none;
	return a;
}

/* A server with a client ID and a session; *sid receives the session ID. */
static struct nfs41_server *setup(uint8_t *sid, uint64_t *clientid)
{
	struct nfs41_server_opts o = {
	    .so_major = "fuzz",
	    .so_major_len = 4,
	    .exchgid_flags = EXCHGID4_FLAG_USE_PNFS_MDS,
	    .lease_s = 60,
	    .max_slots = 4,
	    .max_ops = 8,
	    .max_req = 8192,
	    .max_resp = 8192,
	    .max_resp_cached = 2048,
	    .callbacks = true,
	    .v40 = true, /* minor version 0: SETCLIENTID, _CONFIRM, RENEW */
	    .ops = f_ops,
	    .nops = OP_REMOVEXATTR + 1,
	};
	int err;
	struct nfs41_server *s = nfs41_server_new(&o, &err);
	if (!s)
		abort();
	static uint8_t body[4096], out[1u << 16];
	size_t len, outlen;
	struct xdr_arena a;
	struct xdr_dec d;
	COMPOUND4res res;
	xdr_arena_init(&a, NULL, 0, 1u << 20);

	nfs_argop4 op = op_exid();
	len = encode(body, sizeof(body), 1, &op, 1);
	if (run(s, body, len, out, &outlen) != NFSD_SUCCESS)
		abort();
	xdr_dec_init(&d, out, outlen, &a);
	if (xdr_dec_COMPOUND4res(&d, &res) || res.status)
		abort();
	EXCHANGE_ID4resok *e = &res.resarray.val[0].u.opexchange_id.u.eir_resok4;
	*clientid = e->eir_clientid;
	op = op_cs(e->eir_clientid, e->eir_sequenceid);
	len = encode(body, sizeof(body), 1, &op, 1);
	if (run(s, body, len, out, &outlen) != NFSD_SUCCESS)
		abort();
	xdr_dec_init(&d, out, outlen, &a);
	if (xdr_dec_COMPOUND4res(&d, &res) || res.status)
		abort();
	memcpy(sid, res.resarray.val[0].u.opcreate_session.u.csr_resok4.csr_sessionid,
	       NFS4_SESSIONID_SIZE);
	xdr_arena_release(&a);
	return s;
}

/* If the record's first op is SEQUENCE, put the real session ID in it. */
static void patch_session(uint8_t *b, size_t len, const uint8_t *sid)
{
	if (len < 4)
		return;
	size_t taglen = xdr_get32(b);
	if (taglen > len)
		return;
	size_t off = 4 + ((taglen + 3) & ~(size_t)3) + 8; /* tag, minor, count */
	if (off + 4 + NFS4_SESSIONID_SIZE > len || xdr_get32(b + off) != OP_SEQUENCE)
		return;
	memcpy(b + off + 4, sid, NFS4_SESSIONID_SIZE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[1u << 20];
	uint8_t sid[NFS4_SESSIONID_SIZE];
	uint64_t clientid;
	struct nfs41_server *s = setup(sid, &clientid);
	for (int i = 0; i < MAX_RECORDS && size >= 2; i++) {
		size_t n = (size_t)data[0] << 8 | data[1];
		data += 2;
		size -= 2;
		if (n > size)
			n = size;
		memcpy(rec, data, n);
		data += n;
		size -= n;
		patch_session(rec, n, sid);
		size_t outlen;
		int st = run(s, rec, n, out, &outlen);
		if (st != NFSD_SUCCESS && st != NFSD_GARBAGE_ARGS && st != NFSD_SYSTEM_ERR)
			abort();
		if (st == NFSD_SUCCESS && outlen)
			check_reply(out, outlen, fuzz_compound_nops(rec, n));
	}
	nfs41_server_free(s);
	return 0;
}

/* Valid conversations: SEQUENCE COMPOUNDs (with a zero session ID, patched
 * when run), sessionless ops, a retry, misuse of positions. */
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap)
{
	nfs_argop4 ops[8];
	size_t total = 0;
	uint8_t zero[NFS4_SESSIONID_SIZE] = {0};
	unsigned nrec = 1 + (unsigned)(seed % 4);
	for (unsigned r = 0; r < nrec; r++) {
		uint64_t k = seed / 4 + r * 7;
		unsigned n = 0;
		memset(ops, 0, sizeof(ops));
		switch (k % 6) {
		case 0:
		case 1:
		case 2:
			ops[n].argop = OP_SEQUENCE;
			memcpy(ops[n].u.opsequence.sa_sessionid, zero, sizeof(zero));
			ops[n].u.opsequence.sa_slotid = (uint32_t)(k % 5);
			ops[n].u.opsequence.sa_sequenceid = 1 + (uint32_t)(r % 2);
			ops[n++].u.opsequence.sa_cachethis = k & 1;
			ops[n].argop = OP_PUTFH;
			ops[n++].u.opputfh.object = xdr_opaque_of("fh", 2);
			ops[n++].argop = k % 3 ? OP_GETATTR : OP_SAVEFH;
			ops[n].argop = OP_READ;
			ops[n++].u.opread.count = (uint32_t)(k % 9000);
			if (k % 5 == 0)
				ops[n++].argop = OP_RESTOREFH;
			break;
		case 3:
			ops[n++] = op_exid();
			break;
		case 4:
			ops[n++] = op_cs(k, 1 + (uint32_t)(k % 3));
			break;
		case 5:
			if (k % 4 == 0) { /* NFSv4.0: no sessions */
				SETCLIENTID4args *sc = &ops[n++].u.opsetclientid;
				ops[n - 1].argop = OP_SETCLIENTID;
				sc->client.id = xdr_opaque_of("fz40", 4);
				sc->callback.cb_location.na_r_netid = xdr_string_of("tcp");
				sc->callback.cb_location.na_r_addr = xdr_string_of("127.0.0.1.2.3");
				ops[n].argop = OP_RENEW;
				ops[n++].u.oprenew.clientid = k;
				ops[n++].argop = OP_SETCLIENTID_CONFIRM;
				ops[n++].argop = OP_SEQUENCE; /* OP_ILLEGAL in 4.0 */
				break;
			}
			/* fall through */
		default:
			ops[n].argop = OP_PUTFH;
			ops[n++].u.opputfh.object = xdr_opaque_of("fh", 2);
			ops[n++].argop = OP_GETFH;
			break;
		}
		if (total + 2 > cap)
			break;
		uint32_t minor = ops[0].argop == OP_SETCLIENTID ? 0 : 1 + (uint32_t)(k % 7 == 6);
		size_t len = encode(buf + total + 2, cap - total - 2, minor, ops, n);
		if (!len || len > 0xffff)
			break;
		buf[total] = (uint8_t)(len >> 8);
		buf[total + 1] = (uint8_t)len;
		total += 2 + len;
	}
	return total;
}

/* Fill an empty $BRAID_FUZZ_SEED_DIR with seeds. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_seed_dir_fill("nfs41", 200);
	return 0;
}
