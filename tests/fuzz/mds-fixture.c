/* SPDX-License-Identifier: MIT */
/* braid-mds in a fuzz target's process: see mds-fixture.h. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfsd/mac.h"
#include "mds/mds.h"
#include "nfsd/conf.h"
#include "tests/fuzz/mds-fixture.h"

static void fail(const char *name, const char *what, int rc)
{
	fprintf(stderr, "%s: %s: %s\n", name, what, rc ? strerror(rc < 0 ? -rc : rc) : "");
	abort();
}

void fuzz_mds_start(struct fuzz_mds *f, const char *name, const char *exports_text,
		    const char *extra)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	char key[4200], store[4200], conf[20000], msg[512];
	snprintf(f->scratch, sizeof(f->scratch), "%s/braid-%s.XXXXXX", base && *base ? base : "/tmp",
		 name);
	if (!mkdtemp(f->scratch))
		fail(name, "mkdtemp", -errno);
	snprintf(key, sizeof(key), "%s/cluster.key", f->scratch);
	snprintf(store, sizeof(store), "%s/store", f->scratch);
	snprintf(f->exports, sizeof(f->exports), "%s/exports", f->scratch);
	int rc = braid_key_create(key);
	if (rc)
		fail(name, "braid_key_create", rc);
	FILE *x = fopen(f->exports, "w");
	if (!x || fputs(exports_text, x) < 0 || fclose(x))
		fail(name, "write exports", -errno);
	snprintf(conf, sizeof(conf),
		 "[mds]\nstore_dir = %s\nkey_file = %s\nexports = %s\nlisten = 127.0.0.1:0\n"
		 "rpcbind = no\nmount = no\ngrace_time = 0\nloops = 1\nworkers = 1\n%s",
		 store, key, f->exports, extra);
	struct mds_settings set;
	struct conf_error cerr;
	memset(&set, 0, sizeof(set));
	if (conf_load_string(mds_conf_schema, &set, "(fuzz)", conf, &cerr)) {
		conf_error_print(&cerr, stderr);
		abort();
	}
	if (braid_mds_start(&set, &f->mds, msg, sizeof(msg))) {
		fprintf(stderr, "%s: braid_mds_start: %s\n", name, msg);
		abort();
	}
	DIR *dh = opendir(store);
	struct dirent *de;
	char path[8400];
	while (dh && (de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", store, de->d_name);
		unlink(path);
	}
	if (dh)
		closedir(dh);
	rmdir(store);
	unlink(key);
	unlink(f->exports);
	rmdir(f->scratch);
}
