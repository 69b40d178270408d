/* SPDX-License-Identifier: MIT */
/*
 * braidctl(8) as a library: the calls of braid-mds's administration
 * program (nfsd/xdr/braid_admin.x), signed with the cluster key
 * (AUTH_BRAID), and their output as aligned tables or, with json, one
 * JSON document per command.  tools/braidctl.c is the thin main.
 *
 * Where braid-mds is: opts.mds ("HOST:PORT", "[V6]:PORT", HOST alone for
 * port 2049), else the first [mds] listen address of opts.config (a
 * wildcard address means this host: 127.0.0.1 or ::1).  The key:
 * opts.key_file, else [mds] key_file of opts.config.
 *
 * Exit statuses (braidctl(8)): 0 done; 1 the command failed (braid-mds
 * could not be reached, refused, or answered an error: the message says
 * why and what to do); 2 a usage or configuration error.
 */
#ifndef BRAID_TOOLS_BRAIDCTL_LIB_H
#define BRAID_TOOLS_BRAIDCTL_LIB_H

#include <stdbool.h>
#include <stdio.h>

#define BRAIDCTL_OK    0
#define BRAIDCTL_FAIL  1
#define BRAIDCTL_USAGE 2

struct braidctl_opts {
	const char *config;   /* default /etc/braid/mds.conf */
	const char *mds;      /* NULL: from config */
	const char *key_file; /* NULL: from config */
	bool json;
	unsigned timeout_ms; /* per call; 0: 10 s */
	FILE *out, *err;     /* NULL: stdout, stderr */
};

struct braidctl;

/* Read the settings and key and connect.  BRAIDCTL_OK, or an exit status
 * with the reason printed ("braidctl: cannot reach braid-mds at ..."). */
int braidctl_open(const struct braidctl_opts *o, struct braidctl **out);
void braidctl_close(struct braidctl *b);

/* One command, argv[0] its name ("status", "ds", ...): an exit status. */
int braidctl_run(struct braidctl *b, int argc, char **argv);

/* Is argv[0] a command braidctl knows (usage errors before connecting)? */
bool braidctl_command_known(const char *name);

/* The usage text. */
void braidctl_usage(FILE *f);

#endif
