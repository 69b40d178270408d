/* SPDX-License-Identifier: MIT */
/*
 * Fuzz driver for compilers without libFuzzer.  Accepts libFuzzer-style
 * arguments: -max_total_time=N (seconds, default 10; 0: no limit),
 * -runs=N, -seed=N, -artifact_prefix=P; other -flag=value arguments are
 * ignored.  File arguments are run once each and the driver exits;
 * directory arguments are a corpus, run once and then mutated.  Inputs come from the target's
 * braid_fuzz_seed() (valid encodings) when it has one, from the corpus, and
 * from pure random bytes, mutated with bit flips, byte sets, truncations,
 * huge length words, insertions and deletions.  Every input is an
 * exact-size allocation so that ASan sees any overread.  On a crash the
 * current input is written to <artifact_prefix>crash-<pid>.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional in the target. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap) __attribute__((weak));
/* Present when built with a sanitizer. */
void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

#define FUZZ_MAX_INPUT (1u << 16)
#define FUZZ_MAX_CORPUS 4096u

struct input {
	uint8_t *data;
	size_t len;
};

static struct input corpus[FUZZ_MAX_CORPUS];
static unsigned ncorpus;
static const uint8_t *volatile cur_data;
static volatile size_t cur_len;
static char crash_path[4096];
static volatile int saving; /* while fuzzing, not when replaying files */
static uint64_t rng = 0x62726169642d667aull;

static uint64_t rnd64(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd64() % n) : 0;
}

/* Save the input being run (async-signal-safe: open/write/close only). */
static void save_crash(void)
{
	const uint8_t *p = cur_data;
	size_t n = cur_len;
	int fd;

	if (!saving || (!p && n))
		return;
	fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k <= 0)
			break;
		p += k;
		n -= (size_t)k;
	}
	close(fd);
	if (write(2, "standalone: input saved to ", 27) > 0 &&
	    write(2, crash_path, strlen(crash_path)) > 0)
		(void)!write(2, "\n", 1);
}

static void on_signal(int sig)
{
	save_crash();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void run_one(const uint8_t *src, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		abort();
	if (len)
		memcpy(buf, src, len);
	cur_data = buf;
	cur_len = len;
	LLVMFuzzerTestOneInput(buf, len);
	cur_data = NULL;
	cur_len = 0;
	free(buf);
}

static int read_file(const char *path, struct input *in)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;

	if (!f)
		return -1;
	buf = malloc(FUZZ_MAX_INPUT);
	if (!buf)
		abort();
	n = fread(buf, 1, FUZZ_MAX_INPUT, f);
	fclose(f);
	in->data = buf;
	in->len = n;
	return 0;
}

static void load_dir(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *de;
	char path[4096];

	if (!dh)
		return;
	while ((de = readdir(dh)) && ncorpus < FUZZ_MAX_CORPUS) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (!read_file(path, &corpus[ncorpus]))
			ncorpus++;
	}
	closedir(dh);
}

/* Apply 1-4 random mutations to buf[0..len); returns the new length. */
static size_t mutate(uint8_t *buf, size_t len, size_t cap)
{
	static const uint32_t huge[] = { 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x10000u,
					 0x1000u, 0x401u, 0xfffffffcu, 0 };
	unsigned n = 1 + (unsigned)below(4);

	while (n--) {
		size_t at = below(len), k;

		switch (below(9)) {
		case 0: /* flip a bit */
			if (len)
				buf[at] ^= (uint8_t)(1u << below(8));
			break;
		case 1: /* set a byte */
			if (len)
				buf[at] = below(2) ? (uint8_t)rnd64() : (uint8_t)(below(2) ? 0xff : 0);
			break;
		case 2: /* truncate */
			len = below(len + 1);
			break;
		case 3: /* an XDR word (after the selector byte) to a huge or edge value */
		case 4:
			if (len >= 5) {
				size_t w = 1 + 4 * below((len - 1) / 4);
				uint32_t v = huge[below(sizeof(huge) / sizeof(huge[0]))];

				if (w + 4 <= len) {
					buf[w] = (uint8_t)(v >> 24);
					buf[w + 1] = (uint8_t)(v >> 16);
					buf[w + 2] = (uint8_t)(v >> 8);
					buf[w + 3] = (uint8_t)v;
				}
			}
			break;
		case 5: /* insert random bytes */
			k = 1 + below(8);
			if (len + k <= cap) {
				memmove(buf + at + k, buf + at, len - at);
				for (size_t i = 0; i < k; i++)
					buf[at + i] = (uint8_t)rnd64();
				len += k;
			}
			break;
		case 6: /* delete a range */
			k = below(len - at + 1);
			memmove(buf + at, buf + at + k, len - at - k);
			len -= k;
			break;
		case 7: /* copy a range to another place */
			if (len) {
				static uint8_t tmp[FUZZ_MAX_INPUT];
				size_t from = below(len);

				k = below(len - from) + 1;
				if (len + k <= cap && k <= sizeof(tmp)) {
					memcpy(tmp, buf + from, k);
					memmove(buf + at + k, buf + at, len - at);
					memcpy(buf + at, tmp, k);
					len += k;
				}
			}
			break;
		default: /* another selector */
			if (len)
				buf[0] = (uint8_t)rnd64();
			break;
		}
	}
	return len;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double max_time = 10, start;
	unsigned long long runs = 0, max_runs = 0, seeds = 0;
	const char *prefix = "";
	int nfiles = 0;
	uint8_t *buf;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-')
			continue;
		if (!strncmp(a, "-max_total_time=", 16))
			max_time = atof(a + 16);
		else if (!strncmp(a, "-runs=", 6))
			max_runs = strtoull(a + 6, NULL, 10);
		else if (!strncmp(a, "-seed=", 6))
			rng = strtoull(a + 6, NULL, 10);
		else if (!strncmp(a, "-artifact_prefix=", 17))
			prefix = a + 17;
		else if (!strcmp(a, "-help=1") || !strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: %s [-max_total_time=S] [-runs=N] [-seed=N] [-artifact_prefix=P] "
			       "[dir|file]...\n(standalone driver, not libFuzzer)\n", argv[0]);
			return 0;
		}
	}
	snprintf(crash_path, sizeof(crash_path), "%scrash-%ld", prefix, (long)getpid());
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(save_crash);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGABRT, on_signal);
	signal(SIGFPE, on_signal);
	signal(SIGILL, on_signal);
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);

	/* Files: run once each, then stop (as libFuzzer does). */
	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct input in;

		if (argv[i][0] == '-' || stat(argv[i], &st) || !S_ISREG(st.st_mode))
			continue;
		if (read_file(argv[i], &in)) {
			fprintf(stderr, "standalone: cannot read %s\n", argv[i]);
			return 1;
		}
		printf("Running: %s\n", argv[i]);
		run_one(in.data, in.len);
		free(in.data);
		nfiles++;
	}
	if (nfiles) {
		printf("standalone: executed %d inputs\n", nfiles);
		return 0;
	}
	saving = 1;
	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '-')
			load_dir(argv[i]);
	for (unsigned i = 0; i < ncorpus; i++, runs++)
		run_one(corpus[i].data, corpus[i].len);

	buf = malloc(FUZZ_MAX_INPUT);
	if (!buf)
		abort();
	start = now();
	/* -max_total_time=0 means no limit, as for libFuzzer. */
	while ((max_runs == 0 || runs < max_runs) &&
	       ((runs & 63) || max_time <= 0 || now() - start < max_time)) {
		size_t len = 0;
		unsigned kind = (unsigned)below(10);

		if (kind < 6 && braid_fuzz_seed) {
			len = braid_fuzz_seed(rnd64(), buf, FUZZ_MAX_INPUT);
			seeds++;
		} else if (kind < 8 && ncorpus) {
			const struct input *in = &corpus[below(ncorpus)];

			len = in->len;
			memcpy(buf, in->data, len);
		} else {
			len = below(below(2) ? 64 : 1024);
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rnd64();
		}
		/* A few valid inputs go in unchanged; the rest are mutated. */
		if (below(8))
			len = mutate(buf, len, FUZZ_MAX_INPUT);
		run_one(buf, len);
		runs++;
	}
	printf("standalone: %llu runs in %.0f s (%llu generated seeds, %u corpus inputs)\n",
	       runs, now() - start, seeds, ncorpus);
	printf("stat::number_of_executed_units: %llu\n", runs);
	free(buf);
	for (unsigned i = 0; i < ncorpus; i++)
		free(corpus[i].data);
	return 0;
}
