/* SPDX-License-Identifier: MIT */
/* braidctl: administer a Braid cluster through braid-mds; see braidctl(8)
 * and tools/braidctl_lib.h. */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tools/braidctl_lib.h"

int main(int argc, char **argv)
{
	struct braidctl_opts o = {0};
	static const struct option lo[] = {
	    {"config", required_argument, NULL, 'c'}, {"mds", required_argument, NULL, 'm'},
	    {"key", required_argument, NULL, 'k'},    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},	      {0},
	};
	int ch;
	/* '+': options end at the command, whose own options follow it */
	while ((ch = getopt_long(argc, argv, "+c:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.config = optarg;
			break;
		case 'm':
			o.mds = optarg;
			break;
		case 'k':
			o.key_file = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			braidctl_usage(stdout);
			return BRAIDCTL_OK;
		default:
			braidctl_usage(stderr);
			return BRAIDCTL_USAGE;
		}
	}
	if (optind == argc) {
		braidctl_usage(stderr);
		return BRAIDCTL_USAGE;
	}
	if (!braidctl_command_known(argv[optind])) {
		fprintf(stderr, "braidctl: unknown command '%s' (braidctl --help lists them)\n",
			argv[optind]);
		return BRAIDCTL_USAGE;
	}
	/* a scrub answers when the whole file is verified */
	if (!strcmp(argv[optind], "ec") && !o.timeout_ms)
		o.timeout_ms = 3600 * 1000;
	signal(SIGPIPE, SIG_IGN);
	struct braidctl *b;
	int rc = braidctl_open(&o, &b);
	if (rc)
		return rc;
	rc = braidctl_run(b, argc - optind, argv + optind);
	braidctl_close(b);
	return rc;
}
