/* SPDX-License-Identifier: MIT */
/*
 * Data servers registering with braid-mds (nfsd/xdr/braid_ctl.x REGISTER
 * and HEARTBEAT, mds/dsreg.c): only AUTH_BRAID callers (others get
 * BRAID_CTL_ACCESS), malformed registrations refused (INVAL, BADVERS), a
 * uuid's id stable across restarts of the data server and of the MDS (the
 * binding is durable), HEARTBEAT with an unknown id or another boot
 * verifier answered STALE, a data server that stops heartbeating marked
 * down after ds_timeout and left out of placement and space.
 */
#include "config.h"

#include "tests/mds/mds-ds-test.h"

#include "mds/dsreg.h"

#define CONF "heartbeat_interval = 1s\nds_timeout = 3s\n"

static struct mt M;

struct reg {
	braid_ctl_register_args a;
	braid_ctl_netaddr addr, ctl;
	braid_ctl_proto proto;
};

/* A well-formed registration of a data server that is not there. */
static void reg_init(struct reg *r, uint8_t uuid_byte, uint8_t verf_byte)
{
	memset(r, 0, sizeof(*r));
	memset(r->a.rr_ds_uuid, uuid_byte, 16);
	memset(r->a.rr_boot_verifier, verf_byte, 8);
	r->a.rr_hostname = xdr_string_of("fake");
	r->addr.na_r_netid = xdr_string_of("tcp");
	r->addr.na_r_addr = xdr_string_of("127.0.0.1.1.1");
	r->ctl = r->addr;
	r->proto = (braid_ctl_proto){3, 0, 1 << 20, 1 << 20, 0};
	r->a.rr_addrs.len = 1;
	r->a.rr_addrs.val = &r->addr;
	r->a.rr_ctl_addrs.len = 1;
	r->a.rr_ctl_addrs.val = &r->ctl;
	r->a.rr_protos.len = 1;
	r->a.rr_protos.val = &r->proto;
	r->a.rr_capacity = 1ull << 40;
	r->a.rr_free = 1ull << 39;
}

/* REGISTER signed with the cluster key: the status, *id when OK. */
static int32_t do_register(const struct reg *r, uint32_t *id)
{
	braid_ctl_register_res res;
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	CHECK_EQ(ds_ctl_call(M.c, &M.key, BRAID_CTLPROC_REGISTER, &r->a, &res, &ar), 0);
	if (!res.rr_status) {
		*id = res.u.rr_resok.rr_ds_id;
		CHECK_EQ(res.u.rr_resok.rr_heartbeat_interval, 1);
	}
	xdr_arena_release(&ar);
	return res.rr_status;
}

static int32_t do_heartbeat_h(uint32_t id, uint8_t verf_byte, uint32_t health)
{
	braid_ctl_heartbeat_args a = {
	    .hb_ds_id = id, .hb_capacity = 1 << 30, .hb_free = 1 << 29, .hb_health = health};
	memset(a.hb_boot_verifier, verf_byte, 8);
	braid_ctl_heartbeat_res res;
	CHECK_EQ(ds_ctl_call(M.c, &M.key, BRAID_CTLPROC_HEARTBEAT, &a, &res, NULL), 0);
	return res.hb_status;
}

static int32_t do_heartbeat(uint32_t id, uint8_t verf_byte)
{
	return do_heartbeat_h(id, verf_byte, 0);
}

/* A control call with a plain flavor (AUTH_SYS root, or AUTH_NONE). */
static int32_t unsigned_call(uint32_t proc, const void *args, uint32_t flavor)
{
	const struct xdr_proc_desc *d = &xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1.procs[proc];
	struct nfsd_call_opts o = {.prog = BRAID_CTL_PROGRAM,
				   .vers = BRAID_CTL_V1,
				   .proc = proc,
				   .enc_args = d->enc_arg,
				   .args = args,
				   .flavor = flavor};
	int32_t status = -1; /* both results start with their status */
	uint8_t res[256];
	struct xdr_arena ar;
	xdr_arena_init(&ar, NULL, 0, 1 << 16);
	CHECK_EQ(nfsd_clnt_call(M.c, &o, d->dec_res, res, &ar), 0);
	memcpy(&status, res, sizeof(status));
	xdr_arena_release(&ar);
	return status;
}

static void t_auth_and_validation(uint32_t *fake_id)
{
	struct reg r;
	reg_init(&r, 0xf1, 1);
	/* only the cluster key's holders: root over AUTH_SYS is not one */
	CHECK_EQ(unsigned_call(BRAID_CTLPROC_REGISTER, &r.a, NFSD_AUTH_SYS), BRAID_CTL_ACCESS);
	CHECK_EQ(unsigned_call(BRAID_CTLPROC_REGISTER, &r.a, NFSD_AUTH_NONE), BRAID_CTL_ACCESS);
	braid_ctl_heartbeat_args hb = {.hb_ds_id = 1};
	CHECK_EQ(unsigned_call(BRAID_CTLPROC_HEARTBEAT, &hb, NFSD_AUTH_SYS), BRAID_CTL_ACCESS);
	/* NULL is a ping anyone may send; the data servers' procedures are not ours */
	struct nfsd_call_opts o = {
	    .prog = BRAID_CTL_PROGRAM, .vers = BRAID_CTL_V1, .proc = BRAID_CTLPROC_NULL};
	CHECK_EQ(nfsd_clnt_call(M.c, &o, NULL, NULL, NULL), 0);
	struct ds_objid oid = {.gen = 1};
	CHECK_EQ(ds_ctl_remove(M.c, &M.key, &oid), -EPROTO); /* PROC_UNAVAIL */
	CHECK_EQ(ds_ctl_null(M.c, &M.key), 0);
	struct mds_ds_info none;
	CHECK_EQ(mds_dsreg_list(M.mds, &none, 1), 0); /* nothing registered by those */

	uint32_t id;
	struct reg b = r;
	b.a.rr_hostname = xdr_string_of("");
	CHECK_EQ(do_register(&b, &id), BRAID_CTL_INVAL);
	b = r;
	b.a.rr_addrs.len = 0;
	CHECK_EQ(do_register(&b, &id), BRAID_CTL_INVAL);
	b = r;
	b.a.rr_ctl_addrs.len = 0;
	CHECK_EQ(do_register(&b, &id), BRAID_CTL_INVAL);
	const char *bad[] = {"127.0.0.1",     "127.0.0.1.8", "127.0.0.1.256.1", "127.0.0.1.8.x",
			     "300.0.0.1.8.1", ".8.1",	     "127.0.0.1.8.1.",	""};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = r;
		b.addr.na_r_addr = xdr_string_of(bad[i]);
		b.a.rr_addrs.val = &b.addr;
		b.a.rr_ctl_addrs.val = &b.ctl;
		b.a.rr_protos.val = &b.proto;
		CHECK_EQ(do_register(&b, &id), BRAID_CTL_INVAL);
	}
	b = r;
	b.addr.na_r_netid = xdr_string_of("udp");
	b.a.rr_addrs.val = &b.addr;
	b.a.rr_ctl_addrs.val = &b.ctl;
	b.a.rr_protos.val = &b.proto;
	CHECK_EQ(do_register(&b, &id), BRAID_CTL_INVAL);
	/* an IPv6 control address is fine, an RDMA-only one is not (we call over TCP) */
	b = r;
	b.ctl.na_r_netid = xdr_string_of("rdma");
	b.a.rr_addrs.val = &b.addr;
	b.a.rr_ctl_addrs.val = &b.ctl;
	b.a.rr_protos.val = &b.proto;
	CHECK_EQ(do_register(&b, &id), BRAID_CTL_INVAL);
	/* versions no layout can name: BADVERS */
	braid_ctl_proto vers[] = {{2, 0, 8192, 8192, 0}, {4, 0, 1 << 20, 1 << 20, 0}, {3, 0, 0, 1 << 20, 0}};
	for (unsigned i = 0; i < 3; i++) {
		b = r;
		b.proto = vers[i];
		b.a.rr_addrs.val = &b.addr;
		b.a.rr_ctl_addrs.val = &b.ctl;
		b.a.rr_protos.val = &b.proto;
		CHECK_EQ(do_register(&b, &id), BRAID_CTL_BADVERS);
	}
	CHECK_EQ(mds_dsreg_list(M.mds, &none, 1), 0);

	/* well formed: an id, the same one when repeated (IPv6 ctl address) */
	b = r;
	b.ctl.na_r_netid = xdr_string_of("tcp6");
	b.ctl.na_r_addr = xdr_string_of("::1.1.1");
	b.a.rr_addrs.val = &b.addr;
	b.a.rr_ctl_addrs.val = &b.ctl;
	b.a.rr_protos.val = &b.proto;
	CHECK_EQ(do_register(&b, fake_id), BRAID_CTL_OK);
	CHECK(*fake_id != 0);
	CHECK_EQ(do_register(&r, &id), BRAID_CTL_OK);
	CHECK_EQ(id, *fake_id);
	struct mds_ds_info info;
	CHECK_EQ(mds_dsreg_get(M.mds, id, &info), 0);
	CHECK(info.registered && info.up);
	CHECK(strcmp(info.hostname, "fake") == 0);
	CHECK_EQ(info.naddrs, 1);
	CHECK(strcmp(info.addrs[0].uaddr, "127.0.0.1.1.1") == 0);
	CHECK(strcmp(info.ctl_addrs[0].netid, "tcp") == 0);
	CHECK_EQ(info.capacity, 1ull << 40);

	/* HEARTBEAT: the registered verifier only */
	CHECK_EQ(do_heartbeat(id, 1), BRAID_CTL_OK);
	CHECK_EQ(mds_dsreg_get(M.mds, id, &info), 0);
	CHECK_EQ(info.capacity, 1 << 30);
	CHECK_EQ(do_heartbeat(id, 2), BRAID_CTL_STALE); /* it restarted: REGISTER again */
	CHECK_EQ(do_heartbeat(id + 1000, 1), BRAID_CTL_STALE);
	CHECK_EQ(do_heartbeat(0, 1), BRAID_CTL_STALE);
}

int main(void)
{
	mt_start(&M, "/ *(rw,no_root_squash,insecure)\n", CONF);
	cl_pin_port(&M, CONF);
	uint32_t fake;
	t_auth_and_validation(&fake);

	/* a real data server gets the next id and is up while it heartbeats */
	struct cds a, b;
	cds_prepare(&M, &a, "ds-a", NULL);
	cds_start(&M, &a);
	CHECK_EQ(a.id, fake + 1);
	struct mds_ds_info info;
	CHECK_EQ(mds_dsreg_get(M.mds, a.id, &info), 0);
	CHECK(strcmp(info.hostname, "ds-a") == 0);
	char ua[64];
	snprintf(ua, sizeof(ua), "127.0.0.1.%d.%d", a.port >> 8, a.port & 255);
	CHECK(strcmp(info.addrs[0].uaddr, ua) == 0);
	CHECK(strcmp(info.ctl_addrs[0].uaddr, ua) == 0);
	CHECK_EQ(info.nprotos, 1);
	CHECK_EQ(info.protos[0].version, 3);
	CHECK_EQ(info.protos[0].rsize, 1 << 20);
	uint8_t verf0[8];
	memcpy(verf0, info.boot_verifier, 8);

	/* the fake one stops heartbeating: down after ds_timeout; the real one stays up */
	info = cl_wait_down(&M, fake);
	CHECK(info.registered && info.since_heartbeat_ms >= 3000);
	CHECK_EQ(mds_dsreg_get(M.mds, a.id, &info), 0);
	CHECK(info.up);
	CHECK(info.since_heartbeat_ms < 3000);
	uint64_t total, avail;
	mds_dsreg_space(M.mds, &total, &avail);
	CHECK_EQ(total, info.capacity);
	CHECK(total > 0 && avail > 0 && avail <= total);
	for (int i = 0; i < 20; i++) {
		uint32_t id;
		CHECK_EQ(mds_dsreg_place(M.mds, true, &id), 0);
		CHECK_EQ(id, a.id);
	}

	/* the data server restarts: same id, new boot verifier */
	uint32_t ida = a.id;
	cds_stop(&a);
	cds_start(&M, &a);
	CHECK_EQ(a.id, ida);
	CHECK_EQ(mds_dsreg_get(M.mds, a.id, &info), 0);
	CHECK(memcmp(info.boot_verifier, verf0, 8) != 0);

	/* the MDS restarts: the data server's HEARTBEAT is STALE, it registers
	 * again and keeps its id; the bindings survived */
	mt_stop(&M);
	mt_boot(&M);
	CHECK_EQ(mds_dsreg_list(M.mds, NULL, 0), 2);
	CHECK_EQ(mds_dsreg_get(M.mds, fake, &info), 0);
	CHECK(!info.registered && !info.up);
	cds_wait_up(&M, &a);
	CHECK_EQ(a.id, ida);
	struct reg r;
	reg_init(&r, 0xf1, 3);
	uint32_t id;
	CHECK_EQ(do_register(&r, &id), BRAID_CTL_OK);
	CHECK_EQ(id, fake);

	/* a second data server: a new id; placement spreads over the two */
	cds_prepare(&M, &b, "ds-b", NULL);
	cds_start(&M, &b);
	CHECK_EQ(b.id, ida + 1);
	unsigned seen_a = 0, seen_b = 0;
	for (int i = 0; i < 200; i++) {
		CHECK_EQ(mds_dsreg_place(M.mds, true, &id), 0);
		CHECK(id == a.id || id == b.id || id == fake);
		seen_a += id == a.id;
		seen_b += id == b.id;
	}
	CHECK(seen_a > 0 && seen_b > 0);

	/* b dies: down after ds_timeout, out of placement and space */
	cds_stop(&b);
	info = cl_wait_down(&M, b.id);
	CHECK(info.since_heartbeat_ms >= 3000);
	CHECK_EQ(mds_dsreg_get(M.mds, a.id, &info), 0);
	CHECK(info.up);
	mds_dsreg_space(M.mds, &total, &avail);
	CHECK_EQ(total, info.capacity);
	for (int i = 0; i < 50; i++) {
		CHECK_EQ(mds_dsreg_place(M.mds, true, &id), 0);
		CHECK_EQ(id, a.id);
	}
	struct mds_ds_info all[8];
	CHECK_EQ(mds_dsreg_list(M.mds, all, 8), 3);
	CHECK_EQ(all[0].id, fake);
	CHECK_EQ(all[1].id, a.id);
	CHECK_EQ(all[2].id, b.id);
	/* a alone is up; the fake one comes back short of space: lowspace (below
	 * its reserve) or full (refusing writes) takes no new objects, and
	 * with no other up placement says ENOSPC, not "try later" */
	CHECK_EQ(do_register(&r, &id), BRAID_CTL_OK);
	CHECK_EQ(id, fake);
	CHECK_EQ(do_heartbeat_h(fake, 3, BRAID_CTL_HEALTH_LOWSPACE), BRAID_CTL_OK);
	for (int i = 0; i < 50; i++) {
		CHECK_EQ(mds_dsreg_place(M.mds, true, &id), 0);
		CHECK_EQ(id, a.id);
	}
	cds_stop(&a);
	cl_wait_down(&M, a.id);
	uint32_t shorts[] = {BRAID_CTL_HEALTH_LOWSPACE, BRAID_CTL_HEALTH_FULL,
			     BRAID_CTL_HEALTH_LOWSPACE | BRAID_CTL_HEALTH_FULL};
	for (unsigned k = 0; k < 3; k++) {
		CHECK_EQ(do_heartbeat_h(fake, 3, shorts[k]), BRAID_CTL_OK);
		CHECK_EQ(mds_dsreg_place(M.mds, true, &id), -ENOSPC);
		mds_dsreg_space(M.mds, &total, &avail);
		CHECK_EQ(total, 1u << 30);
		CHECK_EQ(avail, 0); /* what new files can take: nothing */
	}
	/* room again: back in placement */
	CHECK_EQ(do_heartbeat_h(fake, 3, BRAID_CTL_HEALTH_DEGRADED), BRAID_CTL_OK);
	CHECK_EQ(mds_dsreg_place(M.mds, true, &id), 0);
	CHECK_EQ(id, fake);
	mds_dsreg_space(M.mds, &total, &avail);
	CHECK_EQ(avail, 1u << 29);

	/* none up: placement has nowhere to go */
	cl_wait_down(&M, fake);
	CHECK_EQ(mds_dsreg_place(M.mds, true, &id), -EAGAIN);
	mds_dsreg_space(M.mds, &total, &avail);
	CHECK_EQ(total, 0);
	mt_finish(&M);
	printf("ok\n");
	return 0;
}
