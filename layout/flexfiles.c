/* SPDX-License-Identifier: MIT */
/*
 * LAYOUT4_FLEX_FILES (layout/flexfiles.h): plain structs to and from the
 * generated RFC 8435 XDR (nfsd/xdr/flexfiles.x).  Pure functions: no
 * locks, no I/O; output in the caller's arena.
 */
#include "config.h"

/* the generated codec, not layout/flexfiles.h (this directory's) */
#include "nfsd/xdr/flexfiles.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "layout/flexfiles.h"

_Static_assert(LAYOUT_DEVID_SIZE == NFS4_DEVICEID4_SIZE, "device ID size");
_Static_assert(sizeof(((struct layout_stateid *)0)->other) == NFS4_OTHER_SIZE, "stateid size");

bool layout_ff_version_ok(const struct layout_version *v)
{
	bool ok = (v->version == 3 && v->minorversion == 0) ||
		  (v->version == 4 && (v->minorversion == 1 || v->minorversion == 2));
	return ok && v->rsize && v->wsize;
}

/* A version the device offers: for the tightly coupled device, only
 * NFSv4.x taking RPCSEC_GSS (the Linux client's NFSv3 data-server client
 * is always AUTH_SYS: a Kerberos mount must never send file data that way). */
static bool ff_dev_version(const struct layout_device *d, const struct layout_version *v)
{
	return layout_ff_version_ok(v) && (!d->tight || (v->version == 4 && v->gss));
}

static unsigned ff_device_versions(const struct layout_device *d)
{
	unsigned n = 0;
	for (unsigned k = 0; k < d->nversions && k < LAYOUT_DEV_VERS_MAX; k++)
		n += ff_dev_version(d, &d->versions[k]);
	return n;
}

/* The encoder's output as one run of arena memory. */
static int ff_flatten(struct xdr_enc *e, struct xdr_arena *arena, xdr_opaque *out)
{
	uint8_t *p = e->err ? NULL : xdr_arena_alloc(arena, e->len ? e->len : 1);
	if (!p)
		return -ENOMEM;
	xdr_enc_flatten(e, p);
	*out = xdr_opaque_of(p, e->len);
	return 0;
}

/* ff_device_addr4 of a data server (RFC 8435 §4.1). */
static int ff_encode_devaddr(const struct layout_device *d, struct xdr_arena *arena,
			     xdr_opaque *out)
{
	netaddr4 na[LAYOUT_DEV_ADDRS_MAX];
	ff_device_versions4 v[LAYOUT_DEV_VERS_MAX];
	ff_device_addr4 da = {.ffda_netaddrs = {0, na}, .ffda_versions = {0, v}};
	for (unsigned k = 0; k < d->naddrs && k < LAYOUT_DEV_ADDRS_MAX; k++)
		na[da.ffda_netaddrs.len++] =
		    (netaddr4){xdr_string_of(d->addrs[k].netid), xdr_string_of(d->addrs[k].uaddr)};
	/* in the data server's order, its preferred version first; the Linux
	 * client uses only the first */
	for (unsigned k = 0; k < d->nversions && k < LAYOUT_DEV_VERS_MAX; k++) {
		const struct layout_version *p = &d->versions[k];
		if (!ff_dev_version(d, p))
			continue;
		v[da.ffda_versions.len++] = (ff_device_versions4){
		    .ffdv_version = p->version,
		    .ffdv_minorversion = p->minorversion,
		    .ffdv_rsize = p->rsize < LAYOUT_FF_IO_MAX ? p->rsize : LAYOUT_FF_IO_MAX,
		    .ffdv_wsize = p->wsize < LAYOUT_FF_IO_MAX ? p->wsize : LAYOUT_FF_IO_MAX,
		    .ffdv_tightly_coupled = d->tight,
		};
	}
	uint8_t stack[LAYOUT_BODY_MAX];
	struct iovec iov[8];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 8, stack, sizeof(stack), arena);
	xdr_enc_ff_device_addr4(&e, &da);
	return ff_flatten(&e, arena, out);
}

/* ff_layout4 of one segment (RFC 8435 §5.1): mirrors in the order given,
 * each with its stripes' data servers. */
static int ff_encode_layout(const struct layout_segment *seg, struct xdr_arena *arena,
			    xdr_opaque *out)
{
	unsigned nds = 0;
	for (unsigned p = 0; p < seg->nmirrors; p++)
		nds += seg->mirrors[p].nds;
	ff_mirror4 *mir = xdr_arena_alloc(arena, seg->nmirrors * sizeof(*mir));
	ff_data_server4 *dsv = xdr_arena_alloc(arena, nds * sizeof(*dsv));
	if (!mir || !dsv)
		return -ENOMEM;
	ff_data_server4 *x = dsv;
	for (unsigned p = 0; p < seg->nmirrors; p++) {
		const struct layout_mirror *m = &seg->mirrors[p];
		mir[p].ffm_data_servers.len = m->nds;
		mir[p].ffm_data_servers.val = x;
		for (unsigned s = 0; s < m->nds; s++, x++) {
			const struct layout_dserver *d = &m->ds[s];
			nfs_fh4 *fv = xdr_arena_alloc(arena, d->nversions * sizeof(*fv));
			char *user = xdr_arena_alloc(arena, 16),
			     *group = xdr_arena_alloc(arena, 16);
			if (!fv || !user || !group)
				return -ENOMEM;
			/* one handle per version offered: the same object */
			for (unsigned k = 0; k < d->nversions; k++)
				fv[k] = xdr_opaque_of(d->fh, d->fhlen);
			/* RFC 8435 §5.1: loosely coupled ids are numeric strings */
			snprintf(user, 16, "%u", d->uid);
			snprintf(group, 16, "%u", d->gid);
			memcpy(x->ffds_deviceid, d->devid, NFS4_DEVICEID4_SIZE);
			x->ffds_efficiency = d->efficiency;
			x->ffds_stateid.seqid = d->stateid.seqid;
			memcpy(x->ffds_stateid.other, d->stateid.other, NFS4_OTHER_SIZE);
			x->ffds_fh_vers.len = d->nversions;
			x->ffds_fh_vers.val = fv;
			x->ffds_user = xdr_string_of(user);
			x->ffds_group = xdr_string_of(group);
		}
	}
	ff_layout4 fl = {
	    .ffl_stripe_unit = seg->stripe_unit,
	    .ffl_mirrors = {seg->nmirrors, mir},
	    .ffl_flags = seg->flags & LAYOUT_FLAG_NO_IO_THRU_MDS ? FF_FLAGS_NO_IO_THRU_MDS : 0,
	    .ffl_stats_collect_hint = 0,
	};
	uint8_t stack[LAYOUT_BODY_MAX];
	struct iovec iov[8];
	struct xdr_enc e;
	xdr_enc_init(&e, iov, 8, stack, sizeof(stack), arena);
	xdr_enc_ff_layout4(&e, &fl);
	return ff_flatten(&e, arena, out);
}

/* ff_layoutreturn4 (RFC 8435 §9.3): its ff_ioerr4s' device errors, then
 * its ff_iostats4s. */
static int ff_decode_return(xdr_opaque body, struct xdr_arena *arena, struct layout_report *out)
{
	ff_layoutreturn4 r;
	struct xdr_dec d;
	xdr_dec_init(&d, body.val, body.len, arena);
	if (xdr_dec_ff_layoutreturn4(&d, &r) || xdr_dec_left(&d))
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	size_t nerr = 0;
	for (uint32_t i = 0; i < r.fflr_ioerr_report.len; i++)
		nerr += r.fflr_ioerr_report.val[i].ffie_errors.len;
	out->errors = xdr_arena_alloc(arena, nerr * sizeof(*out->errors));
	out->stats = xdr_arena_alloc(arena, r.fflr_iostats_report.len * sizeof(*out->stats));
	if (!out->errors || !out->stats)
		return -ENOMEM;
	for (uint32_t i = 0; i < r.fflr_ioerr_report.len; i++) {
		const ff_ioerr4 *e = &r.fflr_ioerr_report.val[i];
		for (uint32_t k = 0; k < e->ffie_errors.len; k++) {
			const device_error4 *de = &e->ffie_errors.val[k];
			struct layout_ioerr *o = &out->errors[out->nerrors++];
			memcpy(o->devid, de->de_deviceid, LAYOUT_DEVID_SIZE);
			o->status = (uint32_t)de->de_status;
			o->opnum = (uint32_t)de->de_opnum;
		}
	}
	for (uint32_t i = 0; i < r.fflr_iostats_report.len; i++) {
		const ff_iostats4 *s = &r.fflr_iostats_report.val[i];
		struct layout_iostat *o = &out->stats[out->nstats++];
		memcpy(o->devid, s->ffis_deviceid, LAYOUT_DEVID_SIZE);
		o->read_count = s->ffis_read.ii_count;
		o->read_bytes = s->ffis_read.ii_bytes;
		o->write_count = s->ffis_write.ii_count;
		o->write_bytes = s->ffis_write.ii_bytes;
	}
	return 0;
}

/* ff_layoutupdate4 (RFC 8435 §9.2.2), LAYOUTSTATS's body: checked only. */
static int ff_decode_update(xdr_opaque body, struct xdr_arena *arena)
{
	ff_layoutupdate4 u;
	struct xdr_dec d;
	xdr_dec_init(&d, body.val, body.len, arena);
	if (xdr_dec_ff_layoutupdate4(&d, &u) || xdr_dec_left(&d))
		return -EBADMSG;
	return 0;
}

const struct layout_type_ops layout_ff_ops = {
    .type = LAYOUT4_FLEX_FILES,
    .name = "flexfiles",
    /* the client keeps its connections across address changes */
    .notify_types = (1u << NOTIFY_DEVICEID4_CHANGE) | (1u << NOTIFY_DEVICEID4_DELETE),
    .device_versions = ff_device_versions,
    .encode_layout = ff_encode_layout,
    .encode_devaddr = ff_encode_devaddr,
    .decode_return = ff_decode_return,
    .decode_update = ff_decode_update,
};
