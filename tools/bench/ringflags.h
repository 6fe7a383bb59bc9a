/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The io_uring setup flags a bench's own rings use, picked with the
 * environment variable SYNCMEM_RING_FLAGS: a comma-separated list of
 *   none   0 (the default)
 *   coop   IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG
 *   defer  IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN
 * Given several, the bench runs each in turn within every round and prints
 * a line per variant, each against the same baseline rounds. Where the
 * variable is set, the spread (lowest and highest round) of every series
 * goes to stderr. A variant
 * the kernel refuses (EINVAL) is reported and left out.
 */
#ifndef SYNCMEM_BENCH_RINGFLAGS_H
#define SYNCMEM_BENCH_RINGFLAGS_H

#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define RING_VARIANTS_MAX 3

struct ring_variant {
	const char *name;
	unsigned int flags;
};

static const struct ring_variant ring_variant_table[] = {
	{ "none", 0 },
	{ "coop", IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG },
	{ "defer", IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN },
};

/* Can this kernel make a ring with @flags? */
static inline int ring_flags_work(unsigned int flags)
{
	struct io_uring r;

	if (io_uring_queue_init(4, &r, flags))
		return 0;
	io_uring_queue_exit(&r);
	return 1;
}

/*
 * The variants SYNCMEM_RING_FLAGS asks for, into @v (at most
 * RING_VARIANTS_MAX); their number, or -1 on a name it does not know.
 */
static inline int ring_variants(const char *bench, struct ring_variant *v)
{
	const char *env = getenv("SYNCMEM_RING_FLAGS");
	char buf[64], *save = NULL, *tok;
	int n = 0;

	if (!env || !*env)
		env = "none";
	snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(ring_variant_table) / sizeof(ring_variant_table[0]); i++)
			if (!strcmp(tok, ring_variant_table[i].name))
				break;
		if (i == sizeof(ring_variant_table) / sizeof(ring_variant_table[0])) {
			fprintf(stderr, "%s: SYNCMEM_RING_FLAGS: '%s' is none, coop or defer\n",
				bench, tok);
			return -1;
		}
		if (!ring_flags_work(ring_variant_table[i].flags)) {
			fprintf(stderr, "%s: the kernel refuses ring flags '%s'\n", bench, tok);
			continue;
		}
		if (n < RING_VARIANTS_MAX)
			v[n++] = ring_variant_table[i];
	}
	return n;
}

/* The line's label for variant @v of @what: @what itself for "none" alone. */
static inline const char *ring_label(char *buf, size_t len, const char *what,
				     const struct ring_variant *v, int variants)
{
	if (variants == 1 && !v->flags)
		return what;
	snprintf(buf, len, "%s [%s]", what, v->name);
	return buf;
}

/*
 * The lowest and highest of @n samples, on stderr, where SYNCMEM_RING_FLAGS
 * is set (before a median sorts them).
 */
static inline void ring_spread(const char *what, const char *unit, const double *s, int n)
{
	double lo = s[0], hi = s[0];

	if (!getenv("SYNCMEM_RING_FLAGS"))
		return;

	for (int i = 1; i < n; i++) {
		lo = s[i] < lo ? s[i] : lo;
		hi = s[i] > hi ? s[i] : hi;
	}
	fprintf(stderr, "  spread %-40s %12.1f .. %12.1f %s\n", what, lo, hi, unit);
}

#endif /* SYNCMEM_BENCH_RINGFLAGS_H */
