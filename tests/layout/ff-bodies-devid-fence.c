/* SPDX-License-Identifier: MIT */
/*
 * What liblayout makes of plain structs, with no server: device IDs
 * (layout/devid.h) name their data server, change with its addresses or
 * versions and keep the values earlier releases handed out (clients
 * and restarts rely on them); fencing credentials (layout/fence.h,
 * RFC 8435 §2.2) are the same for the same object and epoch, another pair
 * for another epoch, in [2^30, 2^31), and keep earlier releases' values
 * (objects on the data servers are owned by them); the flexfiles type
 * (RFC 8435 §4.1, §5.1, §9) encodes a layout and a device address that the
 * generated decoder reads back field for field, and decodes LAYOUTRETURN
 * and LAYOUTSTATS bodies, refusing malformed ones.
 */
#include "config.h"

#include "flexfiles.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl/cap.h"
#include "layout/devid.h"
#include "layout/fence.h"
#include "layout/flexfiles.h"
#include "layout/type.h"
#include "tests/check.h"

static struct xdr_arena arena;

static struct layout_device dev_example(void)
{
	struct layout_device d;
	memset(&d, 0, sizeof(d));
	d.ds_id = 7;
	for (int k = 0; k < 16; k++)
		d.uuid[k] = (uint8_t)(0xa0 + k);
	d.naddrs = 2;
	strcpy(d.addrs[0].netid, "tcp");
	strcpy(d.addrs[0].uaddr, "192.0.2.7.8.1");
	strcpy(d.addrs[1].netid, "tcp6");
	strcpy(d.addrs[1].uaddr, "2001:db8::7.8.1");
	d.nversions = 2;
	d.versions[0] = (struct layout_version){3, 0, 1u << 20, 1u << 20, false};
	d.versions[1] = (struct layout_version){4, 1, 2u << 20, 512u << 10, true};
	return d;
}

static void devid(void)
{
	struct layout_device d = dev_example();
	uint8_t id[LAYOUT_DEVID_SIZE], again[LAYOUT_DEVID_SIZE], other[LAYOUT_DEVID_SIZE];
	layout_devid_make(&d, id);
	/* the value braid-mds has always given this data server */
	static const uint8_t want[LAYOUT_DEVID_SIZE] = {0x00, 0x00, 0x00, 0x07, 0xc1, 0x36,
							0xec, 0x19, 0x08, 0x55, 0x91, 0xe8,
							0x62, 0x52, 0x64, 0x01};
	CHECK(!memcmp(id, want, sizeof(want)));
	CHECK_EQ(layout_devid_ds(id), 7);
	layout_devid_make(&d, again);
	CHECK(!memcmp(id, again, sizeof(id)));

	/* another address list, or versions: another ID, the same data server */
	strcpy(d.addrs[1].uaddr, "2001:db8::8.8.1");
	layout_devid_make(&d, other);
	CHECK(memcmp(id, other, sizeof(id)));
	CHECK_EQ(layout_devid_ds(other), 7);
	d = dev_example();
	d.naddrs = 1;
	layout_devid_make(&d, other);
	CHECK(memcmp(id, other, sizeof(id)));
	d = dev_example();
	d.versions[1].wsize = 1u << 20;
	layout_devid_make(&d, other);
	CHECK(memcmp(id, other, sizeof(id)));
	/* another data server (id, or uuid) with the same addresses: another ID */
	d = dev_example();
	d.ds_id = 8;
	layout_devid_make(&d, other);
	CHECK(memcmp(id, other, sizeof(id)));
	CHECK_EQ(layout_devid_ds(other), 8);
	d = dev_example();
	d.uuid[15] ^= 1;
	layout_devid_make(&d, other);
	CHECK(memcmp(id + 4, other + 4, 8));

	/* not ours: 0 */
	memcpy(other, id, sizeof(id));
	other[15] ^= 1;
	CHECK_EQ(layout_devid_ds(other), 0);
	memset(other, 0, sizeof(other));
	CHECK_EQ(layout_devid_ds(other), 0);
}

static void fence(void)
{
	struct ds_objid o;
	for (int k = 0; k < 16; k++)
		o.key[k] = (uint8_t)(k * 17 + 3);
	o.gen = 0x0102030405060708ull;
	uint8_t raw[BRAID_KEY_BYTES];
	for (int k = 0; k < BRAID_KEY_BYTES; k++)
		raw[k] = (uint8_t)(k * 29 + 1);
	struct braid_key key, key2;
	braid_key_from_bytes(&key, raw);
	raw[31] ^= 1; /* another cluster */
	braid_key_from_bytes(&key2, raw);
	/* the fence key is neither half of the cluster key */
	CHECK(memcmp(&key.fence, &key.fh, sizeof(key.fh)) && memcmp(&key.fence, &key.ctl, sizeof(key.ctl)));
	struct layout_fence seen[4];
	for (uint32_t e = 0; e < 4; e++) {
		struct layout_fence f, f2;
		layout_fence_creds(&key.fence, &o, e, &f);
		layout_fence_creds(&key.fence, &o, e, &f2);
		CHECK(f.uid == f2.uid && f.gid == f2.gid && f.read_uid == f2.read_uid);
		CHECK(f.uid >= 1u << 30 && f.uid < 1u << 31);
		CHECK(f.gid >= 1u << 30 && f.gid < 1u << 31);
		CHECK(f.read_uid >= 1u << 30 && f.read_uid < 1u << 31);
		/* READ layouts' uid is never the owner's */
		CHECK(f.read_uid != f.uid);
		seen[e] = f;
		/* another cluster key: unrelated ids for the same object and
		 * epoch (nothing public gives them) */
		layout_fence_creds(&key2.fence, &o, e, &f2);
		CHECK(f2.uid != f.uid && f2.gid != f.gid && f2.read_uid != f.read_uid);
	}
	/* each epoch ids of its own, not a step from the last */
	for (int a = 0; a < 4; a++)
		for (int b = a + 1; b < 4; b++) {
			CHECK(seen[a].uid != seen[b].uid && seen[a].gid != seen[b].gid);
			CHECK(seen[b].uid - seen[a].uid != (uint32_t)(b - a));
		}
	/* another generation of the same key: other ids */
	o.gen++;
	struct layout_fence g;
	layout_fence_creds(&key.fence, &o, 0, &g);
	CHECK(g.uid != seen[0].uid && g.gid != seen[0].gid);
	/* the derivation is fixed (the same ids on every MDS, across
	 * upgrades): known answers */
	o.gen--;
	braid_key_from_bytes(&key, (const uint8_t[BRAID_KEY_BYTES]){0});
	layout_fence_creds(&key.fence, &o, 1, &g);
	CHECK_EQ(g.uid, 1585684756u);
	CHECK_EQ(g.gid, 1674710741u);
	CHECK_EQ(g.read_uid, 1158425189u);
}

static void ff_layout(const struct layout_type_ops *ops)
{
	/* two mirrors, each striped over two data servers */
	static const uint8_t fh[48] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	struct layout_dserver ds[4];
	struct layout_mirror mir[2] = {{ds, 2}, {ds + 2, 2}};
	memset(ds, 0, sizeof(ds));
	for (int i = 0; i < 4; i++) {
		memset(ds[i].devid, 0x10 + i, LAYOUT_DEVID_SIZE);
		ds[i].efficiency = 2 - (unsigned)i / 2;
		ds[i].fh = fh;
		ds[i].fhlen = sizeof(fh);
		ds[i].nversions = 1 + (unsigned)i % 2;
		ds[i].uid = 1500000000u + (unsigned)i;
		ds[i].gid = 1600000000u;
	}
	ds[3].stateid.seqid = 9;
	ds[3].stateid.other[11] = 0x5a;
	struct layout_segment seg = {.stripe_unit = 1u << 20,
				     .mirrors = mir,
				     .nmirrors = 2,
				     .flags = LAYOUT_FLAG_NO_IO_THRU_MDS};
	xdr_opaque body;
	CHECK_EQ(ops->encode_layout(&seg, &arena, &body), 0);
	CHECK(body.len > 0 && body.len <= LAYOUT_BODY_MAX);

	ff_layout4 fl;
	struct xdr_dec d;
	xdr_dec_init(&d, body.val, body.len, &arena);
	CHECK_EQ(xdr_dec_ff_layout4(&d, &fl), 0);
	CHECK_EQ(xdr_dec_left(&d), 0);
	CHECK_EQ(fl.ffl_stripe_unit, 1u << 20);
	CHECK_EQ(fl.ffl_flags, FF_FLAGS_NO_IO_THRU_MDS);
	CHECK_EQ(fl.ffl_stats_collect_hint, 0);
	CHECK_EQ(fl.ffl_mirrors.len, 2);
	for (int m = 0; m < 2; m++) {
		CHECK_EQ(fl.ffl_mirrors.val[m].ffm_data_servers.len, 2);
		for (int s = 0; s < 2; s++) {
			const ff_data_server4 *x = &fl.ffl_mirrors.val[m].ffm_data_servers.val[s];
			const struct layout_dserver *w = &ds[m * 2 + s];
			CHECK(!memcmp(x->ffds_deviceid, w->devid, LAYOUT_DEVID_SIZE));
			CHECK_EQ(x->ffds_efficiency, w->efficiency);
			CHECK_EQ(x->ffds_stateid.seqid, w->stateid.seqid);
			CHECK(!memcmp(x->ffds_stateid.other, w->stateid.other, 12));
			CHECK_EQ(x->ffds_fh_vers.len, w->nversions);
			for (uint32_t k = 0; k < x->ffds_fh_vers.len; k++)
				CHECK(xdr_opaque_eq(x->ffds_fh_vers.val[k], xdr_opaque_of(fh, 48)));
			/* RFC 8435 §5.1: numeric strings */
			char u[16], g[16];
			snprintf(u, sizeof(u), "%u", w->uid);
			snprintf(g, sizeof(g), "%u", w->gid);
			CHECK(xdr_opaque_eq(x->ffds_user, xdr_string_of(u)));
			CHECK(xdr_opaque_eq(x->ffds_group, xdr_string_of(g)));
		}
	}

	/* no flags, no stripes */
	seg.flags = 0;
	seg.stripe_unit = 0;
	seg.nmirrors = 1;
	mir[0].nds = 1;
	CHECK_EQ(ops->encode_layout(&seg, &arena, &body), 0);
	xdr_dec_init(&d, body.val, body.len, &arena);
	CHECK_EQ(xdr_dec_ff_layout4(&d, &fl), 0);
	CHECK_EQ(fl.ffl_flags, 0);
	CHECK_EQ(fl.ffl_stripe_unit, 0);
	CHECK_EQ(fl.ffl_mirrors.len, 1);
	CHECK_EQ(fl.ffl_mirrors.val[0].ffm_data_servers.len, 1);
}

static void ff_devaddr(const struct layout_type_ops *ops)
{
	struct layout_device dv = dev_example();
	/* NFSv4.0 and a version without sizes cannot be named: left out */
	dv.nversions = 4;
	dv.versions[2] = dv.versions[1];
	dv.versions[1] = (struct layout_version){4, 0, 1u << 20, 1u << 20, false};
	dv.versions[3] = (struct layout_version){4, 2, 0, 1u << 20, false};
	CHECK_EQ(ops->device_versions(&dv), 2);
	CHECK(layout_ff_version_ok(&dv.versions[0]) && !layout_ff_version_ok(&dv.versions[1]));
	xdr_opaque body;
	CHECK_EQ(ops->encode_devaddr(&dv, &arena, &body), 0);
	CHECK(body.len > 0 && body.len <= LAYOUT_BODY_MAX);
	ff_device_addr4 da;
	struct xdr_dec d;
	xdr_dec_init(&d, body.val, body.len, &arena);
	CHECK_EQ(xdr_dec_ff_device_addr4(&d, &da), 0);
	CHECK_EQ(xdr_dec_left(&d), 0);
	CHECK_EQ(da.ffda_netaddrs.len, 2);
	for (int k = 0; k < 2; k++) {
		CHECK(xdr_opaque_eq(da.ffda_netaddrs.val[k].na_r_netid,
				    xdr_string_of(dv.addrs[k].netid)));
		CHECK(xdr_opaque_eq(da.ffda_netaddrs.val[k].na_r_addr,
				    xdr_string_of(dv.addrs[k].uaddr)));
	}
	/* the data server's order; sizes at most 1 MiB (the Linux client's) */
	CHECK_EQ(da.ffda_versions.len, 2);
	const ff_device_versions4 *v = da.ffda_versions.val;
	CHECK_EQ(v[0].ffdv_version, 3);
	CHECK_EQ(v[0].ffdv_minorversion, 0);
	CHECK_EQ(v[1].ffdv_version, 4);
	CHECK_EQ(v[1].ffdv_minorversion, 1);
	CHECK_EQ(v[1].ffdv_rsize, LAYOUT_FF_IO_MAX);
	CHECK_EQ(v[1].ffdv_wsize, 512u << 10);
	CHECK(!v[0].ffdv_tightly_coupled && !v[1].ffdv_tightly_coupled);

	dv.nversions = 1;
	dv.versions[0].rsize = 0;
	CHECK_EQ(ops->device_versions(&dv), 0);
}

/*
 * The tightly coupled device (RPCSEC_GSS clients): its own ID for the same
 * data server, only NFSv4.x versions that take RPCSEC_GSS (never NFSv3,
 * which the Linux client always speaks AUTH_SYS), ffdv_tightly_coupled set.
 */
static void ff_tight(const struct layout_type_ops *ops)
{
	struct layout_device dv = dev_example(); /* v3 without gss, v4.1 with */
	uint8_t loose[LAYOUT_DEVID_SIZE], tight[LAYOUT_DEVID_SIZE], again[LAYOUT_DEVID_SIZE];
	layout_devid_make(&dv, loose);
	dv.tight = true;
	layout_devid_make(&dv, tight);
	CHECK(memcmp(loose, tight, sizeof(loose)));
	CHECK_EQ(layout_devid_ds(tight), 7);
	CHECK(layout_devid_tight(tight) && !layout_devid_tight(loose));
	/* the loose device's ID does not depend on gss; the tight one's does */
	struct layout_device d2 = dev_example();
	d2.versions[1].gss = false;
	layout_devid_make(&d2, again);
	CHECK(!memcmp(again, loose, sizeof(loose)));
	d2.tight = true;
	layout_devid_make(&d2, again);
	CHECK(memcmp(again, tight, sizeof(tight)));
	CHECK_EQ(ops->device_versions(&d2), 0); /* nothing a Kerberos client may use */

	CHECK_EQ(ops->device_versions(&dv), 1);
	xdr_opaque body;
	CHECK_EQ(ops->encode_devaddr(&dv, &arena, &body), 0);
	ff_device_addr4 da;
	struct xdr_dec d;
	xdr_dec_init(&d, body.val, body.len, &arena);
	CHECK_EQ(xdr_dec_ff_device_addr4(&d, &da), 0);
	CHECK_EQ(da.ffda_netaddrs.len, 2);
	CHECK_EQ(da.ffda_versions.len, 1);
	CHECK_EQ(da.ffda_versions.val[0].ffdv_version, 4);
	CHECK_EQ(da.ffda_versions.val[0].ffdv_minorversion, 1);
	CHECK(da.ffda_versions.val[0].ffdv_tightly_coupled);
}

/* Capabilities (ctl/cap.h): the stateid of tightly coupled layouts. */
static void caps(void)
{
	struct ds_objid o, o2;
	for (int k = 0; k < 16; k++)
		o.key[k] = (uint8_t)(k * 7 + 1);
	o.gen = 42;
	o2 = o;
	o2.gen++;
	uint8_t raw[BRAID_KEY_BYTES];
	for (int k = 0; k < BRAID_KEY_BYTES; k++)
		raw[k] = (uint8_t)(k * 13 + 5);
	struct braid_key key, key2;
	braid_key_from_bytes(&key, raw);
	raw[31] ^= 0x80; /* another cluster */
	braid_key_from_bytes(&key2, raw);
	/* a key of its own, neither the fence key nor a half of the cluster key */
	CHECK(memcmp(&key.cap, &key.fence, sizeof(key.cap)) &&
	      memcmp(&key.cap, &key.fh, sizeof(key.cap)) &&
	      memcmp(&key.cap, &key.ctl, sizeof(key.cap)));
	struct layout_fence f, f1;
	layout_fence_creds(&key.fence, &o, 0, &f);
	layout_fence_creds(&key.fence, &o, 1, &f1); /* after a fence */
	uint8_t rw[12], rd[12], zero[12] = {0};
	ctl_cap_make(&key.cap, &o, f.uid, f.gid, CTL_CAP_RW, rw);
	ctl_cap_make(&key.cap, &o, f.uid, f.gid, CTL_CAP_READ, rd);
	CHECK(memcmp(rw, rd, 12));
	/* RW reads and writes; READ only reads */
	CHECK(ctl_cap_check(&key.cap, &o, f.uid, f.gid, CTL_CAP_RW, rw));
	CHECK(ctl_cap_check(&key.cap, &o, f.uid, f.gid, CTL_CAP_READ, rw));
	CHECK(ctl_cap_check(&key.cap, &o, f.uid, f.gid, CTL_CAP_READ, rd));
	CHECK(!ctl_cap_check(&key.cap, &o, f.uid, f.gid, CTL_CAP_RW, rd));
	/* a fence (new owner and group) voids both */
	CHECK(!ctl_cap_check(&key.cap, &o, f1.uid, f1.gid, CTL_CAP_READ, rw));
	CHECK(!ctl_cap_check(&key.cap, &o, f1.uid, f1.gid, CTL_CAP_READ, rd));
	CHECK(!ctl_cap_check(&key.cap, &o, f.uid, f1.gid, CTL_CAP_READ, rw));
	/* another object, generation or cluster; the anonymous stateid */
	CHECK(!ctl_cap_check(&key.cap, &o2, f.uid, f.gid, CTL_CAP_READ, rw));
	CHECK(!ctl_cap_check(&key2.cap, &o, f.uid, f.gid, CTL_CAP_READ, rw));
	CHECK(!ctl_cap_check(&key.cap, &o, f.uid, f.gid, CTL_CAP_READ, zero));
	/* each bit counts */
	for (int b = 0; b < 96; b++) {
		uint8_t x[12];
		memcpy(x, rw, 12);
		x[b / 8] ^= (uint8_t)(1u << (b % 8));
		CHECK(!ctl_cap_check(&key.cap, &o, f.uid, f.gid, CTL_CAP_READ, x));
	}
}

/* body of XDR type T from x, into arena memory */
#define ENCODE(T, x, out)                                                                          \
	do {                                                                                       \
		uint8_t st_[2048];                                                                 \
		struct iovec iov_[8];                                                              \
		struct xdr_enc e_;                                                                 \
		xdr_enc_init(&e_, iov_, 8, st_, sizeof(st_), &arena);                              \
		CHECK_EQ(xdr_enc_##T(&e_, (x)), 0);                                                \
		uint8_t *p_ = xdr_arena_alloc(&arena, e_.len);                                     \
		CHECK(p_);                                                                         \
		xdr_enc_flatten(&e_, p_);                                                          \
		(out) = xdr_opaque_of(p_, e_.len);                                                 \
	} while (0)

static void ff_reports(const struct layout_type_ops *ops)
{
	device_error4 de[3] = {
	    {.de_status = NFS4ERR_NXIO, .de_opnum = OP_READ},
	    {.de_status = NFS4ERR_ACCESS, .de_opnum = OP_WRITE},
	    {.de_status = NFS4ERR_IO, .de_opnum = OP_COMMIT},
	};
	for (int i = 0; i < 3; i++)
		memset(de[i].de_deviceid, 0x30 + i, NFS4_DEVICEID4_SIZE);
	ff_ioerr4 ie[2] = {{.ffie_errors = {2, de}}, {.ffie_errors = {1, de + 2}}};
	ff_iostats4 is[1];
	memset(is, 0, sizeof(is));
	memset(is[0].ffis_deviceid, 0x40, NFS4_DEVICEID4_SIZE);
	is[0].ffis_read = (io_info4){3, 3u << 20};
	is[0].ffis_write = (io_info4){5, 5u << 20};
	is[0].ffis_layoutupdate.ffl_addr =
	    (netaddr4){xdr_string_of("tcp"), xdr_string_of("192.0.2.7.8.1")};
	ff_layoutreturn4 r = {.fflr_ioerr_report = {2, ie}, .fflr_iostats_report = {1, is}};
	xdr_opaque body;
	ENCODE(ff_layoutreturn4, &r, body);

	struct layout_report rep;
	CHECK_EQ(ops->decode_return(body, &arena, &rep), 0);
	CHECK_EQ(rep.nerrors, 3);
	for (int i = 0; i < 3; i++) {
		CHECK(!memcmp(rep.errors[i].devid, de[i].de_deviceid, LAYOUT_DEVID_SIZE));
		CHECK_EQ(rep.errors[i].status, de[i].de_status);
		CHECK_EQ(rep.errors[i].opnum, de[i].de_opnum);
	}
	CHECK_EQ(rep.nstats, 1);
	CHECK(!memcmp(rep.stats[0].devid, is[0].ffis_deviceid, LAYOUT_DEVID_SIZE));
	CHECK_EQ(rep.stats[0].read_count, 3);
	CHECK_EQ(rep.stats[0].read_bytes, 3u << 20);
	CHECK_EQ(rep.stats[0].write_count, 5);
	CHECK_EQ(rep.stats[0].write_bytes, 5u << 20);

	/* cut short, or with bytes after it: malformed */
	CHECK_EQ(ops->decode_return(xdr_opaque_of(body.val, body.len - 4), &arena, &rep), -EBADMSG);
	uint8_t *longer = xdr_arena_alloc(&arena, body.len + 4);
	memcpy(longer, body.val, body.len);
	CHECK_EQ(ops->decode_return(xdr_opaque_of(longer, body.len + 4), &arena, &rep), -EBADMSG);

	/* LAYOUTSTATS's ff_layoutupdate4 */
	ENCODE(ff_layoutupdate4, &is[0].ffis_layoutupdate, body);
	CHECK_EQ(ops->decode_update(body, &arena), 0);
	CHECK_EQ(ops->decode_update(xdr_opaque_of(body.val, body.len - 4), &arena), -EBADMSG);
}

int main(void)
{
	xdr_arena_init(&arena, NULL, 0, 16u << 20);
	devid();
	fence();

	const struct layout_type_ops *ops = layout_type_find(LAYOUT4_FLEX_FILES);
	CHECK(ops == &layout_ff_ops);
	CHECK_EQ(ops->type, LAYOUT4_FLEX_FILES);
	CHECK_EQ(ops->notify_types,
		 (1u << NOTIFY_DEVICEID4_CHANGE) | (1u << NOTIFY_DEVICEID4_DELETE));
	CHECK(!layout_type_find(LAYOUT4_NFSV4_1_FILES));
	CHECK(!layout_type_find(0));
	ff_layout(ops);
	ff_devaddr(ops);
	ff_tight(ops);
	caps();
	ff_reports(ops);
	xdr_arena_release(&arena);
	printf("ok\n");
	return 0;
}
