/* SPDX-License-Identifier: MIT */
/*
 * braidctl's view and control of the data servers (nfsd/xdr/braid_admin.x
 * STATUS, DS_LIST, DS_DRAIN, DS_ADD, DS_REMOVE; mds/admin.c, mds/dsreg.c):
 * STATUS and DS_LIST show both data servers with their addresses and
 * space, a page at a time; a drained data server gets no new file (every
 * new file's object lands on the other) and stays drained across an MDS
 * restart; DS_ADD admits it again; DS_REMOVE refuses a data server that
 * is not drained, that is up, or that files still use (saying how many),
 * forgets one that is drained, down and unused (its uuid registers anew
 * with a new id), and forgets a used one only with force.
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"
#include "tests/mds/admin-test.h"

#include "mds/data.h"
#include "mds/dsreg.h"

#define CONF  "heartbeat_interval = 1s\nds_timeout = 3s\n"
#define FILES 24

static struct mt M;

/* DS_LIST a page: the entries' ids, their count, eof and cookie. */
static unsigned ds_page(uint64_t cookie, uint32_t max, uint32_t *ids, bool *eof, uint64_t *next)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_list_args a = {cookie, max};
	braid_admin_ds_list_res r;
	at_call(&M, BRAID_ADMINPROC_DS_LIST, &a, &r, &ar);
	CHECK_EQ(r.status, BRAID_ADMIN_OK);
	unsigned n = r.u.ok.dl_entries.len;
	CHECK(n <= max);
	for (unsigned i = 0; i < n; i++)
		ids[i] = r.u.ok.dl_entries.val[i].ds_id;
	*eof = r.u.ok.dl_eof;
	*next = r.u.ok.dl_cookie;
	xdr_arena_release(&ar);
	return n;
}

static braid_admin_status_resok status(struct xdr_arena *ar)
{
	braid_admin_status_res r;
	at_call(&M, BRAID_ADMINPROC_STATUS, NULL, &r, ar);
	CHECK_EQ(r.status, BRAID_ADMIN_OK);
	return r.u.ok;
}

static void t_status_and_list(struct cds *a, struct cds *b)
{
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_status_resok s = status(&ar);
	CHECK_EQ(s.st_ds_known, 2);
	CHECK_EQ(s.st_ds_up, 2);
	CHECK_EQ(s.st_ds_drained, 0);
	CHECK(s.st_capacity > 0 && s.st_free > 0 && s.st_free <= s.st_capacity);
	CHECK_EQ(s.st_listen.len, 1);
	char ua[64];
	snprintf(ua, sizeof(ua), "127.0.0.1.%d.%d", M.port >> 8, M.port & 255);
	CHECK(at_eq(s.st_listen.val[0].na_uaddr, ua));
	CHECK(at_eq(s.st_version, PACKAGE_VERSION));
	CHECK(s.st_layouts);
	CHECK(at_eq(s.st_layout_default.lp_text, "whole,mirrors=1"));
	xdr_arena_release(&ar);

	/* the whole list */
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	braid_admin_list_args la = {0, BRAID_ADMIN_LIST_MAX};
	braid_admin_ds_list_res r;
	at_call(&M, BRAID_ADMINPROC_DS_LIST, &la, &r, &ar);
	CHECK_EQ(r.status, BRAID_ADMIN_OK);
	CHECK_EQ(r.u.ok.dl_entries.len, 2);
	CHECK(r.u.ok.dl_eof);
	for (unsigned i = 0; i < 2; i++) {
		const braid_admin_ds *d = &r.u.ok.dl_entries.val[i];
		struct cds *x = i ? b : a;
		CHECK_EQ(d->ds_id, x->id);
		CHECK(at_eq(d->ds_hostname, x->name));
		CHECK(d->ds_registered && d->ds_up && !d->ds_drained);
		CHECK(d->ds_capacity > 0 && d->ds_free > 0 && d->ds_free <= d->ds_capacity);
		CHECK(d->ds_since_heartbeat_ms < 3000);
		CHECK_EQ(d->ds_addrs.len, 1);
		char want[64];
		snprintf(want, sizeof(want), "127.0.0.1.%d.%d", x->port >> 8, x->port & 255);
		CHECK(at_eq(d->ds_addrs.val[0].na_uaddr, want));
		CHECK(at_eq(d->ds_addrs.val[0].na_netid, "tcp"));
		bool v3 = false;
		for (uint32_t k = 0; k < d->ds_protos.len; k++)
			v3 |=
			    d->ds_protos.val[k].ap_version == 3 && d->ds_protos.val[k].ap_rsize > 0;
		CHECK(v3);
		struct mds_ds_info info;
		CHECK_EQ(mds_dsreg_get(M.mds, x->id, &info), 0);
		CHECK(!memcmp(d->ds_uuid, info.uuid, 16));
	}
	xdr_arena_release(&ar);

	/* a page at a time */
	uint32_t ids[4];
	bool eof;
	uint64_t next;
	CHECK_EQ(ds_page(0, 1, ids, &eof, &next), 1);
	CHECK_EQ(ids[0], a->id);
	CHECK(!eof);
	CHECK_EQ(ds_page(next, 1, ids, &eof, &next), 1);
	CHECK_EQ(ids[0], b->id);
	CHECK_EQ(ds_page(next, 1, ids, &eof, &next), 0);
	CHECK(eof);
	/* a page of none is a malformed request */
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	la = (braid_admin_list_args){0, 0};
	at_call(&M, BRAID_ADMINPROC_DS_LIST, &la, &r, &ar);
	CHECK_EQ(r.status, BRAID_ADMIN_INVAL);
	CHECK(r.u.why.len > 0);
	xdr_arena_release(&ar);
}

/* Each file gets one byte through the MDS, which places its object. */
static void write_files(struct nfs41c_session *s, const char *prefix, uint32_t *ds_of)
{
	for (unsigned i = 0; i < FILES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%s-%u", prefix, i);
		struct cfile f;
		cl_mkfile(&M, name, 0644, &f);
		uint32_t n;
		CHECK_EQ(cl_do_write(s, &f, 0, FILE_SYNC4, "x", 1, &n, NULL, NULL), NFS4_OK);
		struct mds_layout_seg seg;
		CHECK_EQ(mds_data_object(M.mds, &f.attr, false, &seg), 0);
		CHECK_EQ(seg.nds, 1);
		ds_of[i] = seg.ds[0];
	}
}

static void t_drain(struct cds *a, struct cds *b, struct nfs41c_session *s)
{
	char msg[1200];
	braid_admin_ds_args da = {.da_id = b->id};
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_DRAIN, &da, msg, sizeof(msg)), BRAID_ADMIN_OK);
	CHECK(strstr(msg, "drained"));
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_DRAIN, &da, NULL, 0), BRAID_ADMIN_OK); /* again */
	struct mds_ds_info info;
	CHECK_EQ(mds_dsreg_get(M.mds, b->id, &info), 0);
	CHECK(info.drained && info.up);
	/* placement avoids it: every new file's object is on a */
	uint32_t ds_of[FILES];
	write_files(s, "drained", ds_of);
	for (unsigned i = 0; i < FILES; i++)
		CHECK_EQ(ds_of[i], a->id);
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1u << 20);
	CHECK_EQ(status(&ar).st_ds_drained, 1);
	xdr_arena_release(&ar);

	/* no such data server */
	da.da_id = 999;
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_DRAIN, &da, msg, sizeof(msg)), BRAID_ADMIN_NOENT);
	CHECK(strstr(msg, "no data server 999"));
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_ADD, &da, NULL, 0), BRAID_ADMIN_NOENT);
}

static void t_remove_refusals(struct cds *a, struct cds *b)
{
	char msg[1200];
	/* not drained */
	braid_admin_ds_remove_args r = {.dr_id = a->id};
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_REMOVE, &r, msg, sizeof(msg)), BRAID_ADMIN_BUSY);
	CHECK(strstr(msg, "not drained") && strstr(msg, "braidctl ds drain"));
	/* drained but up: it would register again */
	r.dr_id = b->id;
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_REMOVE, &r, msg, sizeof(msg)), BRAID_ADMIN_BUSY);
	CHECK(strstr(msg, "is up"));
	r.dr_id = 999;
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_REMOVE, &r, NULL, 0), BRAID_ADMIN_NOENT);
}

/* The drain flag is in the bindings file: an MDS restart keeps it. */
static void t_drain_durable(struct cds *a, struct cds *b)
{
	mt_stop(&M);
	mt_boot(&M);
	cds_wait_up(&M, a);
	cds_wait_up(&M, b);
	struct mds_ds_info info;
	CHECK_EQ(mds_dsreg_get(M.mds, b->id, &info), 0);
	CHECK(info.drained);
	CHECK_EQ(mds_dsreg_get(M.mds, a->id, &info), 0);
	CHECK(!info.drained);
	char path[4300], text[4096];
	snprintf(path, sizeof(path), "%s/store/data-servers", M.dir);
	FILE *f = fopen(path, "r");
	CHECK(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = 0;
	fclose(f);
	CHECK(strstr(text, " drained\n"));
}

static void t_add(struct cds *a, struct cds *b, struct nfs41c_session *s)
{
	char msg[1200];
	braid_admin_ds_args da = {.da_id = b->id};
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_ADD, &da, msg, sizeof(msg)), BRAID_ADMIN_OK);
	CHECK(strstr(msg, "admitted"));
	struct mds_ds_info info;
	CHECK_EQ(mds_dsreg_get(M.mds, b->id, &info), 0);
	CHECK(!info.drained);
	/* now drain a: new files go to b */
	da.da_id = a->id;
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_DRAIN, &da, NULL, 0), BRAID_ADMIN_OK);
	uint32_t ds_of[FILES];
	write_files(s, "admitted", ds_of);
	for (unsigned i = 0; i < FILES; i++)
		CHECK_EQ(ds_of[i], b->id);
}

/* The files whose maps name data server id (collected in a scan: the
 * store's calls cannot nest in it). */
struct on_ds {
	uint32_t id;
	uint64_t ino[4 * FILES];
	unsigned n;
};

static int on_ds_add(void *arg, uint64_t ino, uint64_t seg, const struct mds_layout_seg *l)
{
	struct on_ds *o = arg;
	if (seg >= MDS_LAYOUT_REC || (o->n && o->ino[o->n - 1] == ino))
		return 0;
	for (uint32_t k = 0; k < l->nds; k++)
		if (l->ds[k] == o->id && o->n < 4 * FILES) {
			o->ino[o->n++] = ino;
			break;
		}
	return 0;
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n", CONF);
	cl_pin_port(&M, CONF);
	struct cds a, b;
	cds_prepare(&M, &a, "ds-a", NULL);
	cds_prepare(&M, &b, "ds-b", NULL);
	cds_start(&M, &a);
	cds_start(&M, &b);
	CHECK(a.id < b.id);

	t_status_and_list(&a, &b);
	struct nfs41c_session *s = mt_session(&M, "admin-ds", 0, 0);
	t_drain(&a, &b, s);
	t_remove_refusals(&a, &b);
	nfs41c_session_destroy(s);
	t_drain_durable(&a, &b);
	s = mt_session(&M, "admin-ds-2", 0, 0);
	t_add(&a, &b, s);
	nfs41c_session_destroy(s);

	/* files on a that no drain can move: a is let in again and takes
	 * some new files (placement is random), then stops and is drained
	 * while down (one copy each: nothing to copy them from).  Its drain
	 * above may have moved all it held before. */
	char msg[1200];
	braid_admin_ds_args ad = {.da_id = a.id};
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_ADD, &ad, NULL, 0), BRAID_ADMIN_OK);
	s = mt_session(&M, "admin-ds-3", 0, 0);
	uint32_t held_on[FILES];
	write_files(s, "held", held_on);
	nfs41c_session_destroy(s);
	unsigned on_a = 0;
	for (unsigned i = 0; i < FILES; i++)
		on_a += held_on[i] == a.id;
	CHECK(on_a >= 1);
	cds_stop(&a);
	cl_wait_down(&M, a.id);
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_DRAIN, &ad, NULL, 0), BRAID_ADMIN_OK);
	struct on_ds still = {.id = a.id};
	CHECK(mds_layout_scan(braid_mds_store(M.mds), on_ds_add, &still) >= 0);
	CHECK(still.n >= on_a);
	braid_admin_ds_remove_args r = {.dr_id = a.id};
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_REMOVE, &r, msg, sizeof(msg)), BRAID_ADMIN_BUSY);
	const char *held = strstr(msg, "still holds data of ");
	int nheld = 0;
	CHECK(held && sscanf(held, "still holds data of %d file(s)", &nheld) == 1);
	CHECK((unsigned)nheld == still.n && strstr(msg, "--force"));
	CHECK_EQ(mds_dsreg_get(M.mds, a.id, &(struct mds_ds_info){0}), 0);
	/* with force it goes, and says what was lost */
	r.dr_force = true;
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_REMOVE, &r, msg, sizeof(msg)), BRAID_ADMIN_OK);
	char want[64];
	snprintf(want, sizeof(want), "%d file(s) lost", nheld);
	CHECK(strstr(msg, want));
	CHECK_EQ(mds_dsreg_get(M.mds, a.id, &(struct mds_ds_info){0}), -ENOENT);
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_REMOVE, &r, NULL, 0), BRAID_ADMIN_NOENT);

	/* b: drained, stopped, and no file names it any more once the files
	 * on it (those made there, and those a's drain moved there) are gone:
	 * removed without force */
	braid_admin_ds_args da = {.da_id = b.id};
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_DRAIN, &da, NULL, 0), BRAID_ADMIN_OK);
	struct mds_store *st = braid_mds_store(M.mds);
	struct on_ds on = {.id = b.id};
	CHECK(mds_layout_scan(st, on_ds_add, &on) >= 0);
	CHECK(on.n >= FILES);
	for (unsigned i = 0; i < on.n; i++) {
		struct mds_layout_args la = {.ino = on.ino[i], .seg = MDS_LAYOUT_ALL};
		CHECK_EQ(mds_layout_remove(st, &la), 0);
	}
	uint32_t old_b = b.id;
	cds_stop(&b);
	cl_wait_down(&M, old_b);
	r = (braid_admin_ds_remove_args){.dr_id = old_b};
	CHECK_EQ(at_change(&M, BRAID_ADMINPROC_DS_REMOVE, &r, msg, sizeof(msg)), BRAID_ADMIN_OK);
	uint32_t ids[4];
	bool eof;
	uint64_t next;
	CHECK_EQ(ds_page(0, 4, ids, &eof, &next), 0);

	/* its uuid registering again is a new data server, never an old id */
	cds_start(&M, &b);
	CHECK(b.id > old_b);
	CHECK_EQ(ds_page(0, 4, ids, &eof, &next), 1);
	CHECK_EQ(ids[0], b.id);
	/* and the tombstones survive a restart: ids stay unused */
	mt_stop(&M);
	mt_boot(&M);
	cds_wait_up(&M, &b);
	CHECK_EQ(ds_page(0, 4, ids, &eof, &next), 1);
	CHECK_EQ(ids[0], b.id);
	struct mds_ds_info info;
	CHECK_EQ(mds_dsreg_get(M.mds, old_b, &info), -ENOENT);

	cds_stop(&b);
	mt_finish(&M);
	return 0;
}
