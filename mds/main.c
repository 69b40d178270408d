/* SPDX-License-Identifier: MIT */
/* braid-mds: the metadata server daemon; see braid-mds(8) and mds/mds.h. */
#include "config.h"

#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mds/mds.h"
#include "nfsd/notify.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: braid-mds [-c FILE] [--ready-fd N]\n"
		   "       braid-mds --config-keys\n"
		   "  -c, --config FILE  settings (default /etc/braid/mds.conf)\n"
		   "  --ready-fd N       when serving, write \"READY port...\\n\" to fd N and close it\n"
		   "  --config-keys      list every setting with its default and meaning\n"
		   "SIGHUP re-reads the exports file; SIGTERM or SIGINT stop.\n"
		   "Under systemd (Type=notify, $NOTIFY_SOCKET) it reports READY=1 once serving.\n");
}

int main(int argc, char **argv)
{
	const char *conf = "/etc/braid/mds.conf";
	int ready_fd = -1;
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "ready-fd", required_argument, NULL, 'r' },
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
		case 'k':
			conf_schema_dump(mds_conf_schema, stdout);
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
	struct mds_settings set;
	struct conf_error cerr;
	int rc = mds_settings_load(conf, &set, &cerr);
	if (rc) {
		conf_error_print(&cerr, stderr);
		return 2;
	}

	sigset_t sigs;
	nfsd_daemon_signals(&sigs);

	struct braid_mds *mds;
	char msg[512];
	if ((rc = braid_mds_start(&set, &mds, msg, sizeof(msg)))) {
		fprintf(stderr, "braid-mds: %s\n", msg);
		return 1;
	}
	fprintf(stderr, "braid-mds: serving %s on %u address(es), port %d\n", set.store_dir,
		braid_mds_nports(mds), braid_mds_port(mds, 0));
	int ports[64];
	unsigned np = 0;
	while (np < braid_mds_nports(mds) && np < 64)
		ports[np] = braid_mds_port(mds, np), np++;
	char status[PATH_MAX + 64];
	snprintf(status, sizeof(status), "serving %s on port %d", set.store_dir, ports[0]);
	nfsd_daemon_ready("braid-mds", ready_fd, ports, np, status);
	int sig = 0;
	while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP) {
		nfsd_notify("RELOADING=1");
		if (braid_mds_exports_reload(mds, msg, sizeof(msg)))
			fprintf(stderr, "braid-mds: exports not reloaded: %s\n", msg);
		else
			fprintf(stderr, "braid-mds: exports reloaded\n");
		nfsd_notify("READY=1");
	}
	nfsd_notify("STOPPING=1");
	fprintf(stderr, "braid-mds: signal %d, stopping\n", sig);
	braid_mds_stop(mds);
	return 0;
}
