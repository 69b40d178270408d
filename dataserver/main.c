/* SPDX-License-Identifier: MIT */
/* braid-ds: the data server daemon; see braid-ds(8) and dataserver/ds.h. */
#include "config.h"

#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataserver/ds.h"
#include "dataserver/store.h"
#include "nfsd/notify.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: braid-ds [-c FILE] [--ready-fd N]\n"
		   "       braid-ds [-c FILE] --scrub\n"
		   "       braid-ds --config-keys\n"
		   "  -c, --config FILE  settings (default /etc/braid/ds.conf)\n"
		   "  --ready-fd N       when serving, write \"READY port...\\n\" to fd N and close it\n"
		   "  --scrub            verify every block of the store (daemon stopped), then exit:\n"
		   "                     0 clean, 1 bad objects found, 2 error\n"
		   "  --config-keys      list every setting with its default and meaning\n"
		   "Under systemd (Type=notify, $NOTIFY_SOCKET) it reports READY=1 once serving.\n");
}

int main(int argc, char **argv)
{
	const char *conf = "/etc/braid/ds.conf";
	int ready_fd = -1;
	bool scrub = false;
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "scrub", no_argument, NULL, 's' },
		{ "config-keys", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "c:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'r':
			ready_fd = atoi(optarg);
			break;
		case 's':
			scrub = true;
			break;
		case 'k':
			conf_schema_dump(ds_conf_schema, stdout);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	struct ds_settings set;
	struct conf_error cerr;
	int rc = ds_settings_load(conf, &set, &cerr);
	if (rc) {
		conf_error_print(&cerr, stderr);
		return 2;
	}
	if (scrub) {
		struct ds_store_opts so = { .direct = set.direct_io };
		struct ds_store *st;
		if ((rc = ds_store_open(set.store_dir, &so, &st))) {
			fprintf(stderr, "braid-ds: store %s: %s\n", set.store_dir, strerror(-rc));
			return 2;
		}
		struct ds_scrub_stats ss;
		rc = ds_store_scrub(st, NULL, NULL, &ss);
		printf("objects %llu blocks %llu bad_objects %llu bad_blocks %llu orphans %llu\n",
		       (unsigned long long)ss.objects, (unsigned long long)ss.blocks,
		       (unsigned long long)ss.bad_objects, (unsigned long long)ss.bad_blocks,
		       (unsigned long long)ss.orphans);
		ds_store_close(st);
		return rc ? 2 : ss.bad_objects ? 1 : 0;
	}

	sigset_t sigs;
	nfsd_daemon_signals(&sigs);

	struct braid_ds *ds;
	char msg[512];
	if ((rc = braid_ds_start(&set, &ds, msg, sizeof(msg)))) {
		fprintf(stderr, "braid-ds: %s\n", msg);
		return 1;
	}
	fprintf(stderr, "braid-ds: serving store %s on %u address(es), port %d\n", set.store_dir,
		braid_ds_nports(ds), braid_ds_port(ds, 0));
	int ports[64];
	unsigned np = 0;
	while (np < braid_ds_nports(ds) && np < 64)
		ports[np] = braid_ds_port(ds, np), np++;
	char status[PATH_MAX + 64];
	snprintf(status, sizeof(status), "serving store %s on port %d", set.store_dir, ports[0]);
	nfsd_daemon_ready("braid-ds", ready_fd, ports, np, status);
	int sig = 0;
	while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP)
		; /* nothing to reload yet: settings need a restart */
	nfsd_notify("STOPPING=1");
	fprintf(stderr, "braid-ds: signal %d, stopping\n", sig);
	rc = braid_ds_stop(ds);
	if (rc)
		fprintf(stderr, "braid-ds: closing the store: %s\n", strerror(-rc));
	return rc ? 1 : 0;
}
