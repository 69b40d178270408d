/* SPDX-License-Identifier: MIT */
/*
 * NFS-Ganesha as the benchmarks run it (ganesha.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/ganesha.h"
#include "nfsd/xdr/mount_prot.h"
#include "nfsd/xdr/nfs4_prot.h"

const char *const bench_ganesha_err_marks[] = {":CRIT :", ":MAJ :", ":FATAL :", "exec failed",
					       NULL};

int bench_ganesha_find(char *exe, size_t exe_len, char *why, size_t len)
{
	if (!bench_exe_find("ganesha.nfsd", exe, exe_len)) {
		bench_strfmt(
		    why, len,
		    "ganesha.nfsd not installed (nfs-ganesha nfs-ganesha-vfs: tools/install-deps)");
		return -ENOENT;
	}
	if (geteuid() != 0) {
		/* FSAL_VFS opens files by handle: CAP_DAC_READ_SEARCH */
		bench_strfmt(why, len, "ganesha.nfsd (FSAL VFS) must run as root");
		return -EPERM;
	}
	return 0;
}

/*
 * Ganesha 4.3 registers NFSv3 and MOUNT with rpcbind and exits when it
 * cannot ("Cannot register NFS V3 on TCP"); it has no switch to skip that.
 * Use the rpcbind that runs, or start Debian's in the foreground.
 */
int bench_rpcbind_ensure(struct bench_child *rpcb, const char *dir, char *why, size_t len)
{
	if (bench_port_accepts(111))
		return 0;
	char exe[PATH_MAX];
	if (!bench_exe_find("rpcbind", exe, sizeof(exe))) {
		bench_strfmt(
		    why, len,
		    "ganesha needs rpcbind, none runs and none is installed (tools/install-deps)");
		return -ENOENT;
	}
	char log[PATH_MAX + 16];
	bench_strfmt(log, sizeof(log), "%s/rpcbind.log", dir);
	char *argv[] = {exe, "-f", NULL};
	int rc = bench_child_spawn(rpcb, "rpcbind", argv, log, -1);
	if (rc) {
		bench_strfmt(why, len, "cannot start rpcbind: %s", strerror(-rc));
		return rc;
	}
	for (double end = bench_now_s() + 10; bench_now_s() < end; bench_sleep_s(0.05)) {
		int st;
		if (bench_child_exited(rpcb, &st)) {
			char sb[64];
			bench_status_str(st, sb, sizeof(sb));
			bench_strfmt(why, len, "rpcbind exited (%s)", sb);
			bench_log_dump("rpcbind", log);
			return -ECHILD;
		}
		if (bench_port_accepts(111))
			return 0;
	}
	bench_strfmt(why, len, "rpcbind did not come up");
	bench_child_stop(rpcb, 5);
	bench_log_dump("rpcbind", log);
	return -ETIMEDOUT;
}

int bench_ganesha_init(struct bench_ganesha *g, const char *dir, const char *export_dir, char *why,
		       size_t len)
{
	memset(g, 0, sizeof(*g));
	bench_strfmt(g->dir, sizeof(g->dir), "%s", dir);
	bench_strfmt(g->export_dir, sizeof(g->export_dir), "%s", export_dir);
	bench_strfmt(g->recov, sizeof(g->recov), "%s/recov", g->dir);
	bench_strfmt(g->conf, sizeof(g->conf), "%s/ganesha.conf", g->dir);
	bench_strfmt(g->log, sizeof(g->log), "%s/ganesha.log", g->dir);
	bench_strfmt(g->pidf, sizeof(g->pidf), "%s/ganesha.pid", g->dir);
	const char *mk[] = {g->dir, g->export_dir, g->recov};
	for (int i = 0; i < 3; i++)
		if (mkdir(mk[i], 0755) && errno != EEXIST) {
			bench_strfmt(why, len, "mkdir %s: %s", mk[i], strerror(errno));
			return -errno;
		}
	g->port = bench_port_pick();
	g->mnt_port = bench_port_pick();
	while (g->mnt_port == g->port)
		g->mnt_port = bench_port_pick();
	if (g->port <= 0 || g->mnt_port <= 0) {
		bench_strfmt(why, len, "no free TCP port on 127.0.0.1");
		return -EADDRINUSE;
	}
	return 0;
}

/*
 * NFSv4 alone needs no rpcbind (without one Ganesha logs that it cannot
 * register and serves); NFSv3 does (bench_rpcbind_ensure).
 */
static int conf_write(const struct bench_ganesha *g, const struct bench_ganesha_cfg *cfg)
{
	const char *protos = cfg->v3 && cfg->v4 ? "3, 4" : cfg->v3 ? "3" : "4";
	FILE *f = fopen(g->conf, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"# Written by %s: NFS-Ganesha on 127.0.0.1 only, TCP, one VFS export.\n"
		"NFS_CORE_PARAM {\n"
		"\tProtocols = %s;\n"
		"\tNFS_Port = %d;\n"
		"\tMNT_Port = %d;\n"
		"\tBind_addr = 127.0.0.1;\n"
		"\tEnable_NLM = false;\n"
		"\tEnable_RQUOTA = false;\n"
		"\tEnable_UDP = false;\n"
		"}\n"
		"# A fresh export: nothing to reclaim, no grace period.\n"
		"NFSv4 {\n"
		"\tGraceless = true;\n"
		"\tOnly_Numeric_Owners = true;\n"
		"\tMinor_Versions = 1, 2;\n"
		"\tRecoveryBackend = fs;\n"
		"\tRecoveryRoot = \"%s\";\n"
		"}\n"
		"NFS_KRB5 {\n"
		"\tActive_krb5 = false;\n"
		"}\n"
		"EXPORT {\n"
		"\tExport_Id = 1;\n"
		"\tPath = \"%s\";\n"
		"\tPseudo = \"/\";\n"
		"\tProtocols = %s;\n"
		"\tTransports = TCP;\n"
		"\tAccess_Type = RW;\n"
		"\tSquash = No_Root_Squash;\n"
		"\tSecType = sys;\n",
		bench_prog, protos, g->port, g->mnt_port, g->recov, g->export_dir, protos);
	if (cfg->max_io)
		fprintf(f, "\tMaxRead = %u;\n\tMaxWrite = %u;\n", cfg->max_io, cfg->max_io);
	fprintf(f, "\tFSAL {\n"
		   "\t\tName = VFS;\n"
		   "\t}\n"
		   "}\n");
	return fclose(f) ? -errno : 0;
}

int bench_ganesha_start(struct nfsd_server *eng, struct bench_ganesha *g, const char *exe,
			const struct bench_ganesha_cfg *cfg, char *why, size_t len)
{
	int rc = conf_write(g, cfg);
	if (rc) {
		bench_strfmt(why, len, "write %s: %s", g->conf, strerror(-rc));
		return rc;
	}
	/* (dbus is optional: without it Ganesha logs CRIT lines and serves) */
	char *argv[] = {(char *)exe, "-F",    "-L", g->log,	 "-f", g->conf,
			"-p",	     g->pidf, "-N", "NIV_EVENT", NULL};
	rc = bench_child_spawn(&g->ch, "ganesha.nfsd", argv, g->log, -1);
	if (rc) {
		bench_strfmt(why, len, "cannot start ganesha.nfsd: %s", strerror(-rc));
		return rc;
	}
	/* NFS_PROGRAM and NFS4_PROGRAM are one program number */
	struct {
		bool on;
		int port;
		uint32_t prog, vers;
	} waits[] = {
	    {cfg->v4, g->port, NFS4_PROGRAM, 4},
	    {cfg->v3, g->port, NFS4_PROGRAM, 3},
	    {cfg->v3, g->mnt_port, MOUNT_PROGRAM, MOUNT_V3},
	};
	double timeout = 30;
	int st = 0;
	for (unsigned i = 0; !rc && i < sizeof(waits) / sizeof(waits[0]); i++) {
		if (!waits[i].on)
			continue;
		rc = bench_wait_null(eng, &g->ch, waits[i].port, waits[i].prog, waits[i].vers,
				     timeout, &st);
		timeout = 10;
	}
	if (rc)
		bench_child_not_ready(&g->ch, rc, st, bench_ganesha_err_marks, "ganesha.nfsd",
				      "no error logged", why, len);
	return rc;
}

bool bench_ganesha_stop(struct bench_ganesha *g)
{
	bool ok = g->ch.pid <= 0 || bench_child_stop(&g->ch, 20);
	if (g->rpcb.pid > 0)
		bench_child_stop(&g->rpcb, 5);
	return ok;
}
