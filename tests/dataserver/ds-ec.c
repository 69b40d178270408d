/* SPDX-License-Identifier: MIT */
/*
 * Erasure coding on the data servers (braid_ctl.x EC_COMPUTE, EC_LOCATE;
 * ctl/fh.h DS_FH_EC; dataserver/ec.c).  Eight data servers in this
 * process and a stand-in MDS (tests/dataserver/fake-mds.h) that the test
 * drives as the MDS would: it places the chunks, writes the data chunks
 * with NFSv3 WRITE and answers EC_LOCATE.
 *
 * Proves, for 4+2 and 3+1 files whose size ends mid-stripe:
 *  - EC_COMPUTE of every parity chunk equals ec_encode of the zero-padded
 *    data computed here; repeating it writes nothing; verify finds 0;
 *  - a data block rewritten behind the parity's back: verify reports a
 *    mismatch and changes nothing, a new compute fixes it;
 *  - a data chunk whose server is down rebuilt onto another server, byte-
 *    exact, and a partial last chunk (its object as long as the file);
 *    a parity chunk rebuilt from data and parity;
 *  - a source that is down, or whose block fails its CRC, fails the call
 *    with IO naming that chunk; recomputing over the bad block repairs it;
 *  - hostile arguments: INVAL (or ACCESS unsigned), never a crash;
 *  - READ through a reconstructing handle (NFSv3 and NFSv4.1), with one,
 *    then two chunks down (one of them reported up: the source fails and
 *    the READ rebuilds without it): the original bytes, a READ cut at a
 *    segment's end, eof at and past the end; a caller outside the fence:
 *    ACCES; another key's handle: BADHANDLE; WRITE, COMMIT, GETATTR:
 *    ACCES; three chunks down: IO, promptly.
 */
#include "config.h"

#include "nfs4_prot.h"

/* first: braid_ctl.h names a field st_mtime, a macro of sys/stat.h */
#include "tests/dataserver/ds-test.h"
#include "tests/dataserver/fake-mds.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <time.h>

#include "layout/ec.h"
#include "nfsd/nfs41_clnt.h"

#define MiB   (1u << 20)
#define SHIFT 20
#define SEG   (1ull << SHIFT)
#define NN    8 /* data servers: 0..5 hold the 4+2 file, 6 and 7 are spares */

struct node {
	char dir[4200], conf[4300];
	struct ds_settings set;
	struct braid_ds *ds;
	int port;
	uint32_t id;
	struct nfsd_clnt *c;
	char uaddr[64];
};

static const char *tmp;
static char key_path[4200];
static struct braid_key key;
static struct nfsd_server *eng;
static struct node N[NN];
static struct fake_mds *M;

/* An erasure-coded file: its data here, and the node of chunk i of
 * stripe s.  EC_LOCATE reports the nodes in 'down' without a server. */
struct file {
	struct ds_objid id;
	uint64_t ino;
	unsigned k, m;
	uint64_t size;
	uint8_t *data;
	int at[2][BRAID_CTL_EC_CHUNKS_MAX];
};
static struct file F1, F2;
static _Atomic uint32_t down; /* a bit per node */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------- nodes */

static void node_start(struct node *n, unsigned i, bool nfs41)
{
	snprintf(n->dir, sizeof(n->dir), "%s/ds%u", tmp, i);
	CHECK(mkdir(n->dir, 0700) == 0);
	snprintf(n->conf, sizeof(n->conf), "%s/ds.conf", n->dir);
	char conf[9000];
	snprintf(conf, sizeof(conf),
		 "[ds]\nstore_dir = %s/store\nkey_file = %s\nlisten = 127.0.0.1:0\nnfs41 = %s\n"
		 "mds = 127.0.0.1:%d\n",
		 n->dir, key_path, nfs41 ? "yes" : "no", fm_port(M));
	dt_write_file(n->conf, conf, 0644);
	n->ds = dt_ds_start(n->conf, &n->set);
	n->port = braid_ds_port(n->ds, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)n->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	/* an EC_COMPUTE call may take seconds */
	struct nfsd_clnt_opts o = {.timeout_ms = 15000, .reconnect = true};
	int err = 0;
	CHECK((n->c = nfsd_clnt_new(eng, (struct sockaddr *)&sa, sizeof(sa), &o, &err)));
	snprintf(n->uaddr, sizeof(n->uaddr), "127.0.0.1.%d.%d", n->port >> 8, n->port & 255);
	n->id = fm_wait_id(M, n->port);
}

static void node_stop(struct node *n)
{
	if (n->c)
		nfsd_clnt_free(n->c);
	n->c = NULL;
	if (n->ds)
		CHECK(braid_ds_stop(n->ds) == 0);
	n->ds = NULL;
}

/* -------------------------------------------------------- stripes */

/*
 * Stripe s of f as the MDS describes it; chunk 'moved' (when < k + m) is
 * on node 'to' instead.  Arrays from the caller, addresses static.
 */
static void stripe_of(const struct file *f, uint64_t s, unsigned moved, int to, uint32_t dn,
		      braid_ctl_ec_stripe *st, braid_ctl_ec_chunk *ch, braid_ctl_netaddr *na)
{
	memset(st, 0, sizeof(*st));
	memcpy(st->es_obj.oi_key, f->id.key, DS_KEY_SIZE);
	st->es_obj.oi_gen = f->id.gen;
	st->es_uid = DT_UID;
	st->es_gid = DT_GID;
	st->es_k = f->k;
	st->es_m = f->m;
	st->es_shift = SHIFT;
	st->es_stripe = s;
	st->es_size = f->size;
	for (unsigned i = 0; i < f->k + f->m; i++) {
		int n = i == moved ? to : f->at[s][i];
		ch[i].ec_ds = (dn >> n & 1) ? 0 : N[n].id;
		na[i].na_r_netid = xdr_string_of("tcp");
		na[i].na_r_addr = xdr_string_of(N[n].uaddr);
		ch[i].ec_addrs.len = 1;
		ch[i].ec_addrs.val = &na[i];
	}
	st->es_chunks.len = f->k + f->m;
	st->es_chunks.val = ch;
}

/* The stand-in MDS's EC_LOCATE: F1 and F2, as 'down' says. */
static void locate(void *arg, const braid_ctl_ec_locate_args *a, braid_ctl_ec_locate_res *r,
		   struct xdr_arena *ar)
{
	(void)arg;
	struct file *f = a->el_ino == F1.ino ? &F1 : a->el_ino == F2.ino ? &F2 : NULL;
	if (!f || memcmp(a->el_obj.oi_key, f->id.key, DS_KEY_SIZE)) {
		r->el_status = BRAID_CTL_NOENT;
		return;
	}
	if (a->el_offset >= f->size) {
		r->el_status = BRAID_CTL_INVAL;
		return;
	}
	braid_ctl_ec_chunk *ch = xdr_arena_alloc(ar, sizeof(*ch) * BRAID_CTL_EC_CHUNKS_MAX);
	braid_ctl_netaddr *na = xdr_arena_alloc(ar, sizeof(*na) * BRAID_CTL_EC_CHUNKS_MAX);
	CHECK(ch && na);
	r->el_status = BRAID_CTL_OK;
	stripe_of(f, (a->el_offset >> SHIFT) / f->k, UINT32_MAX, 0, atomic_load(&down),
		  &r->u.el_stripe, ch, na);
}

/* Chunk i of stripe s as it should be: data zero-padded, or parity. */
static void expect_chunk(const struct file *f, uint64_t s, unsigned i, uint8_t *out)
{
	uint8_t *d[EC_K_MAX], *p[EC_M_MAX];
	for (unsigned j = 0; j < f->k; j++) {
		CHECK((d[j] = calloc(1, SEG)));
		uint64_t base = (s * f->k + j) * SEG;
		if (base < f->size)
			memcpy(d[j], f->data + base, f->size - base < SEG ? f->size - base : SEG);
	}
	for (unsigned r = 0; r < f->m; r++)
		CHECK((p[r] = malloc(SEG)));
	struct ec_code *code;
	CHECK_EQ(ec_code_new(f->k, f->m, &code), 0);
	ec_encode(code, SEG, (const uint8_t *const *)d, p);
	memcpy(out, i < f->k ? d[i] : p[i - f->k], SEG);
	ec_code_free(code);
	for (unsigned j = 0; j < f->k; j++)
		free(d[j]);
	for (unsigned r = 0; r < f->m; r++)
		free(p[r]);
}

/* len bytes of object id on node n from off (holes and the end: zeros). */
static void get(struct node *n, const struct ds_objid *id, uint64_t off, uint64_t len, uint8_t *out)
{
	uint8_t fh[DS_FH_SIZE];
	ds_fh_make(&key, id, fh);
	memset(out, 0, len);
	for (uint64_t at = 0; at < len;) {
		uint32_t got = 0;
		bool eof = false;
		uint64_t want = len - at < MiB ? len - at : MiB;
		CHECK_EQ(dt_read(n->c, fh, DS_FH_SIZE, off + at, (uint32_t)want, out + at, &got,
				 &eof, DT_UID),
			 NFS3_OK);
		at += got;
		if (eof || !got)
			break;
	}
}

static void parity_id(const struct file *f, struct ds_objid *p)
{
	ds_objid_parity(&f->id, p);
}

/* ------------------------------------------------------ EC_COMPUTE */

struct cres {
	int status;	/* braid_ctl_stat of the last call */
	unsigned chunk; /* its ecf_chunk on error */
	unsigned calls;
	uint64_t read, written, mismatch;
};

/* Make (or verify) chunk target of stripe s on node 'to', whole. */
static struct cres compute(const struct file *f, uint64_t s, unsigned target, int to, uint32_t dn,
			   bool verify)
{
	braid_ctl_ec_chunk ch[BRAID_CTL_EC_CHUNKS_MAX];
	braid_ctl_netaddr na[BRAID_CTL_EC_CHUNKS_MAX];
	braid_ctl_ec_compute_args a = {.ecc_target = target,
				       .ecc_count = 3 * MiB / 2, /* two calls per chunk */
				       .ecc_mode = 0640,
				       .ecc_verify = verify};
	stripe_of(f, s, target, to, dn, &a.ecc_stripe, ch, na);
	struct cres c = {0};
	for (;;) {
		braid_ctl_ec_compute_res r;
		CHECK_EQ(ds_ctl_call(N[to].c, &key, BRAID_CTLPROC_EC_COMPUTE, &a, &r, NULL), 0);
		c.calls++;
		c.status = r.ecc_status;
		if (r.ecc_status) {
			c.chunk = r.u.ecf_chunk;
			return c;
		}
		c.read += r.u.ecc_resok.ecc_read;
		c.written += r.u.ecc_resok.ecc_written;
		c.mismatch += r.u.ecc_resok.ecc_mismatch;
		CHECK(r.u.ecc_resok.ecc_next > a.ecc_offset || r.u.ecc_resok.ecc_done);
		if (r.u.ecc_resok.ecc_done)
			return c;
		a.ecc_offset = r.u.ecc_resok.ecc_next;
		CHECK(c.calls < 100);
	}
}

/* Chunk i of stripe s on node n holds what it should. */
static void check_chunk(const struct file *f, uint64_t s, unsigned i, int n)
{
	uint8_t *want = malloc(SEG), *got = malloc(SEG);
	CHECK(want && got);
	expect_chunk(f, s, i, want);
	struct ds_objid id = f->id;
	uint64_t base = (s * f->k + i) * SEG;
	if (i >= f->k) {
		parity_id(f, &id);
		base = s * SEG;
	}
	get(&N[n], &id, base, SEG, got);
	if (memcmp(want, got, SEG)) {
		for (uint64_t b = 0; b < SEG; b++)
			if (want[b] != got[b]) {
				fprintf(stderr, "stripe %llu chunk %u: byte %llu differs\n",
					(unsigned long long)s, i, (unsigned long long)b);
				break;
			}
		CHECK(0);
	}
	free(want);
	free(got);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static void randomize(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		p[i] = (uint8_t)rng;
	}
}

/* Objects made and data chunks written as a client would have. */
static void file_write(struct file *f, unsigned nstripes)
{
	CHECK((f->data = malloc(f->size)));
	randomize(f->data, f->size);
	uint32_t made = 0;
	for (unsigned s = 0; s < nstripes; s++)
		for (unsigned j = 0; j < f->k; j++) {
			int n = f->at[s][j];
			if (!(made >> n & 1)) {
				uint8_t fh[DS_CTL_FH_MAX];
				uint32_t fhlen;
				CHECK_EQ(ds_ctl_create(N[n].c, &key, &f->id, DT_UID, DT_GID, 0640,
						       fh, &fhlen),
					 0);
				made |= 1u << n;
			}
			uint64_t base = (s * f->k + j) * SEG;
			uint8_t fh[DS_FH_SIZE];
			ds_fh_make(&key, &f->id, fh);
			for (uint64_t off = base; off < base + SEG && off < f->size; off += MiB) {
				uint32_t len =
				    (uint32_t)(f->size - off < MiB ? f->size - off : MiB);
				CHECK_EQ(dt_write(N[n].c, fh, DS_FH_SIZE, off, f->data + off, len,
						  FILE_SYNC, NULL, DT_UID),
					 NFS3_OK);
			}
		}
}

/* Every parity chunk computed where it belongs and checked. */
static void file_parity(const struct file *f, unsigned nstripes)
{
	for (unsigned s = 0; s < nstripes; s++)
		for (unsigned r = 0; r < f->m; r++) {
			unsigned i = f->k + r;
			struct cres c = compute(f, s, i, f->at[s][i], 0, false);
			CHECK_EQ(c.status, BRAID_CTL_OK);
			CHECK_EQ(c.calls, 1); /* 1 MiB chunks: count 1.5 MiB covers one */
			check_chunk(f, s, i, f->at[s][i]);
			/* again: nothing to write; verify: nothing differs */
			c = compute(f, s, i, f->at[s][i], 0, false);
			CHECK_EQ(c.status, BRAID_CTL_OK);
			CHECK_EQ(c.written, 0);
			c = compute(f, s, i, f->at[s][i], 0, true);
			CHECK_EQ(c.status, BRAID_CTL_OK);
			CHECK_EQ(c.mismatch, 0);
			CHECK_EQ(c.written, 0);
		}
}

/* The data file of object id on node n, opened for writing. */
static int object_file(struct node *n, const struct ds_objid *id)
{
	char hex[2 * DS_KEY_SIZE + 1], path[8400];
	for (int i = 0; i < DS_KEY_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", id->key[i]);
	for (unsigned h = 0; h < 256; h++) {
		snprintf(path, sizeof(path), "%s/store/objects/%02x/%s", n->dir, h, hex);
		int fd = open(path, O_RDWR);
		if (fd >= 0)
			return fd;
	}
	CHECK(!"object file found");
	return -1;
}

/* ------------------------------------------------------------ tests */

static void t_parity(void)
{
	file_write(&F1, 2);
	file_parity(&F1, 2);
	/* the last stripe: chunk 1 partial, 2 and 3 past the end, never read */
	struct cres c = compute(&F1, 1, 4, F1.at[1][4], 0, true);
	CHECK_EQ(c.read, SEG + (F1.size - 5 * SEG));
}

static void t_stale_parity(void)
{
	/* a client rewrites a block of stripe 0's chunk 0 after sealing */
	uint8_t blk[4096];
	randomize(blk, sizeof(blk));
	memcpy(F1.data + 8192, blk, sizeof(blk));
	uint8_t fh[DS_FH_SIZE];
	ds_fh_make(&key, &F1.id, fh);
	CHECK_EQ(
	    dt_write(N[F1.at[0][0]].c, fh, DS_FH_SIZE, 8192, blk, 4096, FILE_SYNC, NULL, DT_UID),
	    NFS3_OK);
	for (unsigned r = 0; r < 2; r++) {
		struct cres c = compute(&F1, 0, 4 + r, F1.at[0][4 + r], 0, true);
		CHECK_EQ(c.status, BRAID_CTL_OK);
		CHECK(c.mismatch > 0 && c.mismatch <= 4096);
		CHECK_EQ(c.written, 0);
		c = compute(&F1, 0, 4 + r, F1.at[0][4 + r], 0, false);
		CHECK_EQ(c.status, BRAID_CTL_OK);
		CHECK(c.written == 4096);
		c = compute(&F1, 0, 4 + r, F1.at[0][4 + r], 0, true);
		CHECK_EQ(c.mismatch, 0);
		check_chunk(&F1, 0, 4 + r, F1.at[0][4 + r]);
	}
}

static void t_three_one(void)
{
	/* 3+1 on nodes 0, 4, 5, 6; a spare at 7 */
	static const int set[4] = {0, 4, 5, 6};
	F2 = (struct file){
	    .id = dt_id(2, 3), .ino = 2002, .k = 3, .m = 1, .size = 3 * SEG + SEG + SEG / 4 + 77};
	for (unsigned s = 0; s < 2; s++)
		for (unsigned i = 0; i < 4; i++)
			F2.at[s][i] = set[(s * 3 + i) % 4];
	file_write(&F2, 2);
	file_parity(&F2, 2);
	/* data chunk 0 of each stripe rebuilt onto the spare */
	for (unsigned s = 0; s < 2; s++) {
		struct cres c = compute(&F2, s, 0, 7, 1u << F2.at[s][0], false);
		CHECK_EQ(c.status, BRAID_CTL_OK);
		check_chunk(&F2, s, 0, 7);
	}
}

static void t_rebuild(void)
{
	node_stop(&N[1]); /* stripe 0's chunk 1, stripe 1's chunk 3 (past the end) */
	/* still listed as a source: IO, naming it */
	struct cres c = compute(&F1, 0, 4, F1.at[0][4], 0, false);
	CHECK_EQ(c.status, BRAID_CTL_IO);
	CHECK_EQ(c.chunk, 1);
	/* listed down: chunk 1 rebuilt onto the spare from 0, 2, 3 and parity 4 */
	c = compute(&F1, 0, 1, 6, 1u << 1, false);
	CHECK_EQ(c.status, BRAID_CTL_OK);
	CHECK_EQ(c.read, 4 * SEG);
	check_chunk(&F1, 0, 1, 6);
	/* the last stripe's partial chunk 1 (node 5's) onto the spare: chunks
	 * 2 and 3 are past the end (3's server down does not matter) */
	c = compute(&F1, 1, 1, 6, 1u << 1, false);
	CHECK_EQ(c.status, BRAID_CTL_OK);
	check_chunk(&F1, 1, 1, 6);
	struct ds_ctl_stat st;
	CHECK_EQ(ds_ctl_stat(N[6].c, &key, &F1.id, &st), 0);
	CHECK_EQ(st.size, F1.size);
	/* a parity chunk from data and parity */
	c = compute(&F1, 0, 5, 6, 1u << 1, false);
	CHECK_EQ(c.status, BRAID_CTL_OK);
	check_chunk(&F1, 0, 5, 6);
}

static void t_corrupt(void)
{
	/* a block of stripe 0's parity 0 (node 4) goes bad on disk */
	struct ds_objid pid;
	parity_id(&F1, &pid);
	int fd = object_file(&N[4], &pid);
	uint8_t b;
	CHECK(pread(fd, &b, 1, 8192 + 5) == 1);
	b ^= 0x5a;
	st_poke_disk(fd, 8192 + 5, &b, 1);
	close(fd);
	struct cres c = compute(&F1, 0, 1, 6, 1u << 1, false);
	CHECK_EQ(c.status, BRAID_CTL_IO);
	CHECK_EQ(c.chunk, 4);
	/* recomputed from 0, 2, 3 and parity 5: the bad block is rewritten */
	c = compute(&F1, 0, 4, 4, 1u << 1, false);
	CHECK_EQ(c.status, BRAID_CTL_OK);
	c = compute(&F1, 0, 4, 4, 1u << 1, true);
	CHECK_EQ(c.status, BRAID_CTL_OK);
	CHECK_EQ(c.mismatch, 0);
	check_chunk(&F1, 0, 4, 4);
	c = compute(&F1, 0, 1, 6, 1u << 1, false);
	CHECK_EQ(c.status, BRAID_CTL_OK);
}

/* One EC_COMPUTE call with a->ecc_stripe from F1's stripe 0 as changed. */
static braid_ctl_ec_compute_res hostile_call(braid_ctl_ec_compute_args *a)
{
	braid_ctl_ec_compute_res r;
	memset(&r, 0xff, sizeof(r));
	CHECK_EQ(ds_ctl_call(N[6].c, &key, BRAID_CTLPROC_EC_COMPUTE, a, &r, NULL), 0);
	return r;
}

static void t_hostile(void)
{
	braid_ctl_ec_chunk ch[BRAID_CTL_EC_CHUNKS_MAX];
	braid_ctl_netaddr na[BRAID_CTL_EC_CHUNKS_MAX];
	braid_ctl_ec_compute_args a0 = {.ecc_target = 1, .ecc_count = SEG, .ecc_mode = 0640};
	stripe_of(&F1, 0, 1, 6, 1u << 1, &a0.ecc_stripe, ch, na);
	braid_ctl_ec_compute_args a;
#define INVAL_IF(change)                                                                           \
	do {                                                                                       \
		stripe_of(&F1, 0, 1, 6, 1u << 1, &a0.ecc_stripe, ch, na);                          \
		a = a0;                                                                            \
		change;                                                                            \
		braid_ctl_ec_compute_res r_ = hostile_call(&a);                                    \
		CHECK_EQ(r_.ecc_status, BRAID_CTL_INVAL);                                          \
	} while (0)
	INVAL_IF(a.ecc_stripe.es_chunks.len = 5);
	INVAL_IF(a.ecc_stripe.es_m = 1);
	INVAL_IF(a.ecc_stripe.es_k = 1);
	INVAL_IF((a.ecc_stripe.es_k = 16, a.ecc_stripe.es_m = 2));
	INVAL_IF(a.ecc_stripe.es_m = 0);
	INVAL_IF(a.ecc_target = 6);
	INVAL_IF(a.ecc_target = 0xffffffffu);
	INVAL_IF(a.ecc_stripe.es_shift = 5);
	INVAL_IF(a.ecc_stripe.es_shift = 63);
	INVAL_IF(a.ecc_stripe.es_shift = 0xffffffffu);
	INVAL_IF(a.ecc_stripe.es_stripe = UINT64_MAX / 2);
	INVAL_IF(a.ecc_mode = 01777);
	INVAL_IF(a.ecc_count = 0);
	INVAL_IF(a.ecc_offset = SEG + 1);
	INVAL_IF(ch[0].ec_ds = ch[2].ec_ds = 0);	       /* 1 and 2 and 0 down: three */
	INVAL_IF(na[3].na_r_addr = xdr_string_of("nonsense")); /* an address */
	INVAL_IF(na[3].na_r_netid = xdr_string_of("udp"));
#undef INVAL_IF
	/* unsigned: ACCESS */
	stripe_of(&F1, 0, 1, 6, 1u << 1, &a0.ecc_stripe, ch, na);
	struct nfsd_call_opts o = {
	    .prog = BRAID_CTL_PROGRAM,
	    .vers = BRAID_CTL_V1,
	    .proc = BRAID_CTLPROC_EC_COMPUTE,
	    .enc_args =
		xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1.procs[BRAID_CTLPROC_EC_COMPUTE].enc_arg,
	    .args = &a0,
	    .flavor = NFSD_AUTH_SYS,
	    .uid = 0,
	    .gid = 0};
	braid_ctl_ec_compute_res r;
	CHECK_EQ(
	    nfsd_clnt_call(
		N[6].c, &o,
		xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1.procs[BRAID_CTLPROC_EC_COMPUTE].dec_res, &r,
		NULL),
	    0);
	CHECK_EQ(r.ecc_status, BRAID_CTL_ACCESS);
	/* the parity object of a key at another generation here: STALE */
	stripe_of(&F1, 0, 4, 6, 1u << 1, &a0.ecc_stripe, ch, na);
	a = a0;
	a.ecc_target = 4;
	a.ecc_stripe.es_obj.oi_gen = 77;
	r = hostile_call(&a);
	CHECK(r.ecc_status == BRAID_CTL_STALE || r.ecc_status == BRAID_CTL_NOENT);
}

/* ------------------------------------------------ reconstructing READ */

/* READ through a handle on node n as uid/gid (+ gids); nfsstat3, data. */
static int ec_read3(int n, const uint8_t *fh, uint32_t fhlen, uint64_t off, uint32_t count,
		    uint32_t uid, uint32_t gid, const uint32_t *gids, uint32_t ngids, uint8_t *buf,
		    uint32_t *got, bool *eof)
{
	READ3args a = {.file = dt_fh3(fh, fhlen), .offset = off, .count = count};
	READ3res r;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 4u << 20);
	const struct xdr_proc_desc *d = &xdr_desc_NFS_PROGRAM_NFS_V3.procs[NFSPROC3_READ];
	struct nfsd_call_opts o = {.prog = NFS_PROGRAM,
				   .vers = NFS_V3,
				   .proc = NFSPROC3_READ,
				   .enc_args = d->enc_arg,
				   .args = &a,
				   .flavor = NFSD_AUTH_SYS,
				   .uid = uid,
				   .gid = gid,
				   .gids = gids,
				   .ngids = ngids};
	CHECK_EQ(nfsd_clnt_call(N[n].c, &o, d->dec_res, &r, &ar), 0);
	int st = r.status;
	if (!st) {
		CHECK_EQ(r.u.resok.count, r.u.resok.data.len);
		memcpy(buf, r.u.resok.data.val, r.u.resok.data.len);
		*got = r.u.resok.count;
		*eof = r.u.resok.eof;
	}
	xdr_arena_release(&ar);
	return st;
}

static uint8_t ecfh[DS_FH_EC_SIZE];

/* READ(off, count) through node 0 returns want bytes of F1, eof as said. */
static void read_ok(uint64_t off, uint32_t count, uint32_t want, bool want_eof)
{
	static uint8_t buf[MiB];
	uint32_t got = 0;
	bool eof = false;
	CHECK_EQ(
	    ec_read3(0, ecfh, sizeof(ecfh), off, count, DT_UID, DT_GID, NULL, 0, buf, &got, &eof),
	    NFS3_OK);
	CHECK_EQ(got, want);
	CHECK_EQ(eof, want_eof);
	CHECK(memcmp(buf, F1.data + off, got) == 0);
}

static void t_read_nfs41(void)
{
	struct nfs41c_session *s;
	struct nfs41c_session_opts so = {.owner = "ec-client",
					 .verifier = 0x0101010101010101ull,
					 .exchgid_flags = EXCHGID4_FLAG_USE_PNFS_DS};
	CHECK_EQ(nfs41c_session_create_opts(N[0].c, &so, &s), 0);
	nfs41c_session_set_cred(s, DT_UID, DT_GID);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 8u << 20);
	nfs_argop4 ops[2] = {{.argop = OP_PUTFH}, {.argop = OP_READ}};
	ops[0].u.opputfh.object = xdr_opaque_of(ecfh, sizeof(ecfh));
	ops[1].u.opread.offset = SEG + 4096;
	ops[1].u.opread.count = 65536;
	COMPOUND4res res;
	CHECK_EQ(nfs41c_compound(s, ops, 2, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4_OK);
	READ4resok *rr = &res.resarray.val[2].u.opread.u.resok4; /* after SEQUENCE, PUTFH */
	CHECK_EQ(rr->data.len, 65536);
	CHECK(!rr->eof);
	CHECK(memcmp(rr->data.val, F1.data + SEG + 4096, 65536) == 0);
	xdr_arena_reset(&ar);
	/* WRITE and GETATTR through it: ACCESS */
	uint8_t blk[16] = {0};
	ops[1] = (nfs_argop4){.argop = OP_WRITE};
	ops[1].u.opwrite.data = xdr_opaque_of(blk, sizeof(blk));
	CHECK_EQ(nfs41c_compound(s, ops, 2, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4ERR_ACCESS);
	xdr_arena_reset(&ar);
	static uint32_t mask[1] = {1u << FATTR4_SIZE};
	ops[1] = (nfs_argop4){.argop = OP_GETATTR};
	ops[1].u.opgetattr.attr_request.len = 1;
	ops[1].u.opgetattr.attr_request.val = mask;
	CHECK_EQ(nfs41c_compound(s, ops, 2, &res, &ar), 0);
	CHECK_EQ(res.status, NFS4ERR_ACCESS);
	xdr_arena_release(&ar);
	nfs41c_session_destroy(s);
}

static void t_read(void)
{
	ds_fh_make_ec(&key, &F1.id, F1.ino, ecfh);
	atomic_store(&down, 1u << 1);
	/* in chunk 1 (down), a whole 1 MiB, one cut at the segment's end */
	read_ok(SEG + 1000, 65536, 65536, false);
	read_ok(SEG, MiB, MiB, false);
	read_ok(2 * SEG - 100, 4096, 100, false);
	/* chunk 0 and the last stripe's chunks: served straight */
	read_ok(12345, 4096, 4096, false);
	read_ok(4 * SEG + 7, 8192, 8192, false);
	/* the end: short with eof; at and past it nothing, eof */
	read_ok(F1.size - 10, 100, 10, true);
	read_ok(F1.size - 4096, 4096, 4096, true);
	read_ok(F1.size, 100, 0, true);
	read_ok(F1.size + 3 * SEG, 100, 0, true);
	t_read_nfs41();

	/* the fence: another uid in the group reads, one outside does not */
	uint8_t buf[4096];
	uint32_t got;
	bool eof;
	CHECK_EQ(ec_read3(0, ecfh, sizeof(ecfh), SEG, 4096, 4242, DT_GID, NULL, 0, buf, &got, &eof),
		 NFS3_OK);
	uint32_t gids[2] = {7, DT_GID};
	CHECK_EQ(ec_read3(0, ecfh, sizeof(ecfh), SEG, 4096, 4242, 4242, gids, 2, buf, &got, &eof),
		 NFS3_OK);
	CHECK_EQ(ec_read3(0, ecfh, sizeof(ecfh), SEG, 4096, 4242, 4242, NULL, 0, buf, &got, &eof),
		 NFS3ERR_ACCES);
	CHECK_EQ(ec_read3(0, ecfh, sizeof(ecfh), F1.size + 1, 4096, 4242, 4242, NULL, 0, buf, &got,
			  &eof),
		 NFS3ERR_ACCES);
	/* a handle of another key; a file the MDS does not know */
	struct braid_key other = key;
	other.fh.k[0] ^= 1;
	uint8_t bad[DS_FH_EC_SIZE];
	ds_fh_make_ec(&other, &F1.id, F1.ino, bad);
	CHECK_EQ(ec_read3(0, bad, sizeof(bad), SEG, 4096, DT_UID, DT_GID, NULL, 0, buf, &got, &eof),
		 NFS3ERR_BADHANDLE);
	ds_fh_make_ec(&key, &F1.id, 999, bad);
	CHECK_EQ(ec_read3(0, bad, sizeof(bad), SEG, 4096, DT_UID, DT_GID, NULL, 0, buf, &got, &eof),
		 NFS3ERR_STALE);
	/* nothing but READ through it */
	uint8_t verf[8];
	CHECK_EQ(dt_write(N[0].c, ecfh, sizeof(ecfh), 0, buf, 16, FILE_SYNC, verf, DT_UID),
		 NFS3ERR_ACCES);
	GETATTR3args ga = {.object = dt_fh3(ecfh, sizeof(ecfh))};
	GETATTR3res gr;
	CHECK_EQ(dt_nfs3(N[0].c, NFSPROC3_GETATTR, &ga, &gr, NULL, DT_UID, DT_GID), 0);
	CHECK_EQ(gr.status, NFS3ERR_ACCES);
	COMMIT3args ca = {.file = dt_fh3(ecfh, sizeof(ecfh))};
	COMMIT3res cr;
	CHECK_EQ(dt_nfs3(N[0].c, NFSPROC3_COMMIT, &ca, &cr, NULL, DT_UID, DT_GID), 0);
	CHECK_EQ(cr.status, NFS3ERR_ACCES);

	/* two down (m = 2), node 2 still reported up by the cached answer:
	 * its READ fails, the stripe is asked again, chunk 2 is rebuilt */
	node_stop(&N[2]);
	unsigned before = fm_locates(M);
	read_ok(2 * SEG + 5000, 65536, 65536, false);
	atomic_store(&down, 1u << 1 | 1u << 2);
	read_ok(SEG + 77, 65536, 65536, false);
	read_ok(2 * SEG, MiB, MiB, false);
	CHECK(fm_locates(M) > before);
	/* three down: more than m lost, IO promptly (not zeros, no hang) */
	node_stop(&N[3]);
	atomic_store(&down, 1u << 1 | 1u << 2 | 1u << 3);
	read_ok(12345, 4096, 4096, false); /* chunk 0 itself is there */
	double t0 = now_s();
	CHECK_EQ(ec_read3(0, ecfh, sizeof(ecfh), 3 * SEG + 1, 4096, DT_UID, DT_GID, NULL, 0, buf,
			  &got, &eof),
		 NFS3ERR_IO);
	CHECK(now_s() - t0 < 10);
}

int main(void)
{
	tmp = st_tmp_make();
	dt_key_make(tmp, key_path, sizeof(key_path), &key);
	int err = 0;
	CHECK((eng = nfsd_client_engine_new(1, 0, &err)));
	M = fm_start(&key, locate, NULL);
	for (unsigned i = 0; i < NN; i++)
		node_start(&N[i], i, i == 0);

	/* 4+2, 1 MiB segments, two stripes, the file ending in the second
	 * stripe's chunk 1; chunk i of stripe s on node (4 s + i) % 6 */
	F1 = (struct file){
	    .id = dt_id(1, 5), .ino = 1001, .k = 4, .m = 2, .size = 5 * SEG + SEG / 2 + 1234};
	for (unsigned s = 0; s < 2; s++)
		for (unsigned i = 0; i < 6; i++)
			F1.at[s][i] = (int)((4 * s + i) % 6);
	t_parity();
	t_stale_parity();
	t_three_one();
	t_rebuild();
	t_corrupt();
	t_hostile();
	t_read();

	for (unsigned i = 0; i < NN; i++)
		node_stop(&N[i]);
	fm_stop(M);
	nfsd_server_free(eng);
	free(F1.data);
	free(F2.data);
	return 0;
}
