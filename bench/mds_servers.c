/* SPDX-License-Identifier: MIT */
/*
 * bench/mds's servers: braid-mds and NFS-Ganesha, each configured in the
 * work directory, started as our child (so that /proc gives its CPU time
 * alone), run through its stage (the NFSv4.1 series of mds_load.c, then
 * the NFSv3 series of mds_load3.c, on the same server) and stopped.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/ganesha.h"
#include "bench/mds.h"

/* ------------------------------------------------------------- braid-mds */

struct braid {
	struct bench_child ch;
	int port;
	char dir[PATH_MAX];
	char store[PATH_MAX + 16], exports[PATH_MAX + 16], key_file[PATH_MAX + 16];
	char conf[PATH_MAX + 16], log[PATH_MAX + 16];
};

static int braid_conf_write(struct braid *d)
{
	FILE *f = fopen(d->exports, "w");
	if (!f)
		return -errno;
	fprintf(f, "/ *(rw,no_root_squash,insecure)\n");
	if (fclose(f))
		return -errno;
	f = fopen(d->conf, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"# Written by bench/mds.\n"
		"[mds]\n"
		"store_dir = %s\n"
		"listen = 127.0.0.1:0\n"
		"exports = %s\n"
		"key_file = %s\n"
		"# a fresh store: nothing to reclaim (Ganesha runs Graceless too)\n"
		"grace_time = 0s\n"
		"# a bench server: leave the system's rpcbind alone\n"
		"rpcbind = no\n",
		d->store, d->exports, d->key_file);
	return fclose(f) ? -errno : 0;
}

/*
 * Start braid-mds -c conf --ready-fd N; it writes "READY <port>" there
 * once serving.  Gives up when it exits or after timeout seconds.
 */
static int braid_start(const struct mds_opts *o, const char *work, struct braid *d, char *why,
		       size_t len)
{
	if (access(o->mds_path, X_OK)) {
		bench_strfmt(why, len, "%s not built (%s)", o->mds_path, strerror(errno));
		return -ENOENT;
	}
	bench_strfmt(d->dir, sizeof(d->dir), "%s/braid-mds", work);
	bench_strfmt(d->store, sizeof(d->store), "%s/store", d->dir);
	bench_strfmt(d->exports, sizeof(d->exports), "%s/exports", d->dir);
	bench_strfmt(d->key_file, sizeof(d->key_file), "%s/key", d->dir);
	bench_strfmt(d->conf, sizeof(d->conf), "%s/mds.conf", d->dir);
	bench_strfmt(d->log, sizeof(d->log), "%s/braid-mds.log", d->dir);
	if ((mkdir(d->dir, 0755) && errno != EEXIST) ||
	    (mkdir(d->store, 0700) && errno != EEXIST)) {
		bench_strfmt(why, len, "mkdir %s: %s", d->store, strerror(errno));
		return -errno;
	}
	int rc = bench_key_write(d->key_file);
	if (!rc)
		rc = braid_conf_write(d);
	if (rc) {
		bench_strfmt(why, len, "write %s: %s", d->dir, strerror(-rc));
		return rc;
	}
	int ready_fd;
	rc = bench_daemon_spawn(&d->ch, "braid-mds", o->mds_path, d->conf, d->log, &ready_fd, why,
				len);
	if (rc)
		return rc;
	char line[128];
	rc = bench_daemon_ready(ready_fd, 60, &d->port, line, sizeof(line));
	if (!rc)
		return 0;
	char last[400], sb[64] = "";
	int st = 0;
	bool exited;
	if (rc == -ECHILD) {
		/* the pipe closed: it exits, or has */
		st = bench_child_wait(&d->ch, 5);
		exited = st != -ETIMEDOUT;
	} else {
		exited = bench_child_exited(&d->ch, &st);
	}
	if (exited) {
		bench_status_str(st, sb, sizeof(sb));
	} else if (rc == -ECHILD) {
		bench_strfmt(sb, sizeof(sb), "closed --ready-fd without READY");
	} else if (rc == -EPROTO) {
		line[strcspn(line, "\n")] = 0;
		bench_strfmt(sb, sizeof(sb), "ready line \"%.40s\"", line);
	} else {
		bench_strfmt(sb, sizeof(sb), "no READY in 60 s");
	}
	bench_log_tail_errors(d->log, NULL, last, sizeof(last));
	bench_strfmt(why, len, "braid-mds failed (%s): %s", sb, last[0] ? last : "nothing logged");
	bench_child_stop(&d->ch, 10);
	bench_log_dump("braid-mds", d->log);
	return rc;
}

/* ---------------------------------------------------------------- Ganesha */

struct ganesha {
	struct bench_ganesha srv;
	bool v3;	/* serving NFSv3 and MOUNT too */
	char why3[512]; /* why not */
};

/*
 * Start Ganesha (NFSv4.1 and 4.2) with NFSv3 and MOUNT v3 when it can serve
 * them (an rpcbind runs or we start one); when it cannot, or it fails with
 * NFSv3 on, NFSv4 alone, and g->why3 says why.
 */
static int ganesha_start(struct nfsd_server *eng, const char *work, struct ganesha *g, char *why,
			 size_t len)
{
	char exe[PATH_MAX], dir[PATH_MAX], export_dir[PATH_MAX + 16];
	int rc = bench_ganesha_find(exe, sizeof(exe), why, len);
	if (rc)
		return rc;
	bench_strfmt(dir, sizeof(dir), "%s/ganesha", work);
	bench_strfmt(export_dir, sizeof(export_dir), "%s/export", dir);
	if ((rc = bench_ganesha_init(&g->srv, dir, export_dir, why, len)))
		return rc;
	char w[512];
	g->v3 = !bench_rpcbind_ensure(&g->srv.rpcb, g->srv.dir, w, sizeof(w));
	if (!g->v3)
		bench_strfmt(g->why3, sizeof(g->why3), "no NFSv3: %s", w);
	struct bench_ganesha_cfg cfg = {.v3 = g->v3, .v4 = true};
	rc = bench_ganesha_start(eng, &g->srv, exe, &cfg, why, len);
	if (rc && g->v3) {
		bench_strfmt(g->why3, sizeof(g->why3), "with NFSv3 on, %s", why);
		fprintf(stderr, "%s: ganesha.nfsd with NFSv3 failed; again with NFSv4 alone\n",
			bench_prog);
		g->v3 = cfg.v3 = false;
		rc = bench_ganesha_start(eng, &g->srv, exe, &cfg, why, len);
	}
	return rc;
}

/* ----------------------------------------------------------------- stages */

static void server_stop(struct bench_child *ch, const char *log)
{
	if (ch->pid <= 0)
		return;
	pid_t pid = ch->pid;
	int st = 0;
	/* still running, as it should be: stop it */
	if (bench_child_exited(ch, &st)) {
		char sb[64];
		bench_status_str(st, sb, sizeof(sb));
		fprintf(stderr, "%s: %s (pid %d) had exited during the run (%s)\n", bench_prog,
			ch->name, (int)pid, sb);
		bench_log_dump(ch->name, log);
		return;
	}
	if (!bench_child_stop(ch, 20))
		fprintf(stderr, "%s: %s needed SIGKILL\n", bench_prog, ch->name);
}

void bench_mds_braid_stage(const struct mds_opts *o, struct nfsd_server *eng, const char *work)
{
	struct braid d = {0};
	char why[512];
	if (braid_start(o, work, &d, why, sizeof(why))) {
		bench_mds_series_missing(&braid_res, why);
		bench_mds_series40_missing(&braid_res, why);
		return;
	}
	fprintf(stderr, "%s: braid-mds serving on port %d\n", bench_prog, d.port);
	bench_mds_stage_run(o, eng, &braid_res, d.port, d.ch.pid);
	bench_mds_stage40_run(o, eng, &braid_res, d.port, d.ch.pid);
	/* MOUNT v3 is served on the NFS port; the export is "/" */
	bench_mds_stage3_run(o, eng, &braid_res, d.port, d.port, "/", d.ch.pid);
	server_stop(&d.ch, d.log);
	if (!o->keep)
		bench_tree_remove(d.dir);
}

void bench_mds_ganesha_stage(const struct mds_opts *o, struct nfsd_server *eng, const char *work)
{
	struct ganesha g = {0};
	struct bench_ganesha *s = &g.srv;
	char why[512];
	if (ganesha_start(eng, work, &g, why, sizeof(why))) {
		bench_mds_series_missing(&ganesha_res, why);
		bench_mds_series3_missing(&ganesha_res, why);
		bench_ganesha_stop(s);
		return;
	}
	if (g.v3)
		fprintf(stderr, "%s: ganesha.nfsd serving %s on port %d, MOUNT on %d\n", bench_prog,
			s->export_dir, s->port, s->mnt_port);
	else
		fprintf(stderr, "%s: ganesha.nfsd serving %s on port %d, NFSv4 alone (%s)\n",
			bench_prog, s->export_dir, s->port, g.why3);
	bench_mds_stage_run(o, eng, &ganesha_res, s->port, s->ch.pid);
	/* MNT takes the export's path */
	if (g.v3)
		bench_mds_stage3_run(o, eng, &ganesha_res, s->port, s->mnt_port, s->export_dir,
				     s->ch.pid);
	else
		bench_mds_series3_missing(&ganesha_res, g.why3);
	server_stop(&s->ch, s->log);
	bench_ganesha_stop(s);
	if (!o->keep) {
		fprintf(stderr, "%s: removing %s\n", bench_prog, s->dir);
		bench_tree_remove(s->dir);
	}
}
