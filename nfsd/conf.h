/* SPDX-License-Identifier: MIT */
/*
 * Daemon settings in nfs.conf(5)-style INI, read through a declarative
 * schema: one static const row per key says its section, type, bounds,
 * default and where the value lands in the caller's settings struct.
 *
 *	static const char *const modes[] = { "fast", "safe", NULL };
 *	static const struct conf_schema ds_schema[] = {
 *		{ "store", NULL, "block_size", CONF_SIZE, .min = 4096, .max = 1 << 20,
 *		  .def = "64k", CONF_AT(struct ds_settings, block_size),
 *		  .desc = "Bytes per stored block." },
 *		{ "store", NULL, "mode", CONF_ENUM, .values = modes, .def = "safe",
 *		  CONF_AT(struct ds_settings, mode), .desc = "Write ordering." },
 *		{ 0 }
 *	};
 *
 * Syntax: '[section]' or '[section "name"]' headers; 'key = value' lines;
 * blank lines and lines starting with '#' or ';' are ignored, as is '#' or
 * ';' after whitespace at the end of a line; whitespace around names and
 * values is trimmed; a value may be wrapped in double or single quotes
 * (inside double quotes, \" and \\ are escapes).  Section and key names
 * compare case-insensitively (as in nfs-utils); subsection names exactly.
 *
 * Unlike nfs.conf(5), an empty value is an error rather than ignored, and
 * there is no 'include' or '$variable': every setting a daemon uses is in
 * one file, visible at its line.
 */
#ifndef BRAID_NFSD_CONF_H
#define BRAID_NFSD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/* Where loading stopped and why; print with conf_error_print(). */
struct conf_error {
	char file[256];
	unsigned line; /* 1-based; 0 when the error is not about one line */
	char msg[256]; /* e.g. [store] block_size: "9x" is not a size (...) */
};

/* Value types, each with one storage type in the settings struct. */
enum conf_type {
	CONF_BOOL = 1, /* bool: yes/no, true/false, on/off, 1/0, y/n, t/f */
	CONF_INT,      /* int64_t, decimal */
	CONF_SIZE,     /* uint64_t bytes: number with optional k, m, g, t (1024^n) */
	CONF_DURATION, /* uint64_t milliseconds: number with ms, s, m, h (bare: s) */
	CONF_STRING,   /* char[N]: the value must fit with its NUL */
	CONF_ENUM,     /* int: index of the value in 'values' */
	CONF_ADDRS,    /* struct conf_addrs: host:port[,host:port...] */
};

/* Addresses: IPv4 literals or bracketed IPv6 literals, with a port. */
#define CONF_ADDRS_MAX 16
struct conf_addrs {
	unsigned n;
	struct sockaddr_storage addr[CONF_ADDRS_MAX];
};

/*
 * The key may appear more than once: a CONF_ADDRS key appends (the first
 * occurrence in the file replaces the default), any other type keeps the
 * last value.  Without it a second occurrence is an error.
 */
#define CONF_REPEAT 0x1u

/* Fills .off and .size of a row from the settings struct's member. */
#define CONF_AT(type, member) .off = offsetof(type, member), .size = sizeof(((type *)0)->member)

/* One row of a schema; a schema is an array ended by a row with no section. */
struct conf_schema {
	const char *section;
	const char *subsection; /* [section "subsection"]; NULL: plain [section] */
	const char *key;
	enum conf_type type;
	unsigned flags;             /* CONF_REPEAT */
	int64_t min, max;           /* INT, SIZE, DURATION (ms): checked when max > min */
	const char *const *values;  /* ENUM: allowed values, NULL-terminated */
	const char *def;            /* parsed like a file value; NULL: zero or empty */
	size_t off, size;           /* CONF_AT(): where the value is stored */
	const char *desc;           /* one line, for the man page */
};

/*
 * Fill every schema field of 'settings' with its default, then apply the
 * file.  0, or -EINVAL (bad schema, syntax or value), -ENOENT (no file) or
 * another -errno from reading it, with 'err' filled in.  When the file
 * cannot be read the defaults are still in place, so a daemon may treat
 * -ENOENT as "run on defaults".  No global state: loads may run in parallel.
 */
int conf_load(const struct conf_schema *schema, void *settings, const char *path,
	      struct conf_error *err);
/* The same over NUL-terminated text; 'name' stands for the file in errors. */
int conf_load_string(const struct conf_schema *schema, void *settings, const char *name,
		     const char *text, struct conf_error *err);

/*
 * Every key, one per line, tab-separated, after a '#' header line:
 * section (with ' "subsection"' when it has one), key, type (with bounds,
 * enum values, ' repeat'), default (empty when none), description.
 */
void conf_schema_dump(const struct conf_schema *schema, FILE *f);

/* "file:line: msg\n" ("file: msg\n" when line is 0). */
void conf_error_print(const struct conf_error *err, FILE *f);
/* Record line and reason (printf-style) in err; returns -EINVAL. */
int conf_error_set(struct conf_error *err, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Read a whole text file (shared with the exports parser): *text is
 * NUL-terminated, caller frees.  A NUL byte in the file, or a file over
 * 16 MiB (-EFBIG), is refused.  Errors fill 'err' with line 0 (or the NUL's line).
 */
int conf_file_read(const char *path, char **text, struct conf_error *err);

#endif
