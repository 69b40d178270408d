/* SPDX-License-Identifier: MIT */
/* A stand-in MDS for data-server tests (tests/dataserver/fake-mds.h). */
#include "config.h"

#include "tests/dataserver/fake-mds.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfsd/auth_braid.h"
#include "tests/check.h"

#define FM_IDS 64

/* mu guards the id table; the counters are atomic. */
struct fake_mds {
	struct nfsd_server *srv;
	struct braid_auth *auth;
	struct nfsd_program prog;
	struct nfsd_version vers;
	struct nfsd_proc procs[BRAID_CTLPROC_EC_LOCATE + 1];
	fm_locate_fn locate;
	void *arg;
	int port;
	pthread_mutex_t mu;
	int ports[FM_IDS];
	uint32_t ids[FM_IDS];
	unsigned nids;
	atomic_uint registers, locates;
};

static int fm_null(struct nfsd_req *req, void *args, void *res)
{
	(void)req, (void)args, (void)res;
	return NFSD_SUCCESS;
}

/* The port of a universal address "h.h.h.h.p1.p2". */
static int uaddr_port(xdr_string s)
{
	char buf[80];
	snprintf(buf, sizeof(buf), "%.*s", (int)s.len, (const char *)s.val);
	char *p2 = strrchr(buf, '.');
	if (!p2)
		return -1;
	*p2 = 0;
	char *p1 = strrchr(buf, '.');
	return p1 ? atoi(p1 + 1) * 256 + atoi(p2 + 1) : -1;
}

static int fm_register(struct nfsd_req *req, void *argp, void *resp)
{
	struct fake_mds *m = req->priv;
	braid_ctl_register_args *a = argp;
	braid_ctl_register_res *r = resp;
	if (req->cred.flavor != NFSD_AUTH_BRAID) {
		r->rr_status = BRAID_CTL_ACCESS;
		return NFSD_SUCCESS;
	}
	int port = a->rr_ctl_addrs.len ? uaddr_port(a->rr_ctl_addrs.val[0].na_r_addr) : -1;
	pthread_mutex_lock(&m->mu);
	uint32_t id = 0;
	for (unsigned i = 0; i < m->nids && !id; i++)
		if (m->ports[i] == port)
			id = m->ids[i];
	if (!id && m->nids < FM_IDS) {
		m->ports[m->nids] = port;
		id = m->ids[m->nids] = m->nids + 1;
		m->nids++;
	}
	pthread_mutex_unlock(&m->mu);
	atomic_fetch_add(&m->registers, 1);
	r->rr_status = BRAID_CTL_OK;
	r->u.rr_resok.rr_ds_id = id;
	r->u.rr_resok.rr_heartbeat_interval = 1;
	return NFSD_SUCCESS;
}

static int fm_heartbeat(struct nfsd_req *req, void *argp, void *resp)
{
	braid_ctl_heartbeat_res *r = resp;
	(void)argp;
	r->hb_status = req->cred.flavor == NFSD_AUTH_BRAID ? BRAID_CTL_OK : BRAID_CTL_ACCESS;
	r->u.hb_heartbeat_interval = 1;
	return NFSD_SUCCESS;
}

static int fm_locate(struct nfsd_req *req, void *argp, void *resp)
{
	struct fake_mds *m = req->priv;
	braid_ctl_ec_locate_res *r = resp;
	atomic_fetch_add(&m->locates, 1);
	memset(r, 0, sizeof(*r));
	if (req->cred.flavor != NFSD_AUTH_BRAID)
		r->el_status = BRAID_CTL_ACCESS;
	else if (!m->locate)
		r->el_status = BRAID_CTL_NOENT;
	else
		m->locate(m->arg, argp, r, &req->arena);
	return NFSD_SUCCESS;
}

struct fake_mds *fm_start(const struct braid_key *key, fm_locate_fn locate, void *arg)
{
	struct fake_mds *m = calloc(1, sizeof(*m));
	CHECK(m);
	pthread_mutex_init(&m->mu, NULL);
	m->locate = locate;
	m->arg = arg;
	m->procs[BRAID_CTLPROC_NULL] =
	    (struct nfsd_proc){.name = "NULL", .fn = fm_null, .flags = NFSD_PROC_INLINE};
	m->procs[BRAID_CTLPROC_REGISTER] = (struct nfsd_proc){.name = "REGISTER", .fn = fm_register};
	m->procs[BRAID_CTLPROC_HEARTBEAT] =
	    (struct nfsd_proc){.name = "HEARTBEAT", .fn = fm_heartbeat};
	m->procs[BRAID_CTLPROC_EC_LOCATE] =
	    (struct nfsd_proc){.name = "EC_LOCATE", .fn = fm_locate};
	nfsd_procs_bind(m->procs, BRAID_CTLPROC_EC_LOCATE + 1,
			&xdr_desc_BRAID_CTL_PROGRAM_BRAID_CTL_V1);
	m->vers = (struct nfsd_version){
	    .vers = BRAID_CTL_V1, .procs = m->procs, .nprocs = BRAID_CTLPROC_EC_LOCATE + 1};
	m->prog = (struct nfsd_program){.prog = BRAID_CTL_PROGRAM,
					.name = "braid_ctl",
					.versions = &m->vers,
					.nversions = 1,
					.priv = m};
	int err = 0;
	CHECK((m->srv = nfsd_server_new(NULL, &err)));
	CHECK((m->auth = braid_auth_new(key)));
	nfsd_server_add_flavor(m->srv, braid_auth_flavor(m->auth));
	CHECK_EQ(nfsd_server_add_program(m->srv, &m->prog), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(nfsd_server_listen(m->srv, (struct sockaddr *)&sa, sizeof(sa)), 0);
	m->port = nfsd_server_listen_port(m->srv, 0);
	CHECK_EQ(nfsd_server_start(m->srv), 0);
	return m;
}

void fm_stop(struct fake_mds *m)
{
	nfsd_server_free(m->srv);
	braid_auth_free(m->auth);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

int fm_port(const struct fake_mds *m)
{
	return m->port;
}

uint32_t fm_wait_id(struct fake_mds *m, int ctl_port)
{
	for (int t = 0; t < 1000; t++) {
		uint32_t id = 0;
		pthread_mutex_lock(&m->mu);
		for (unsigned i = 0; i < m->nids && !id; i++)
			if (m->ports[i] == ctl_port)
				id = m->ids[i];
		pthread_mutex_unlock(&m->mu);
		if (id)
			return id;
		usleep(10000);
	}
	CHECK(!"the data server registered");
	return 0;
}

unsigned fm_registers(struct fake_mds *m)
{
	return atomic_load(&m->registers);
}

unsigned fm_locates(struct fake_mds *m)
{
	return atomic_load(&m->locates);
}
