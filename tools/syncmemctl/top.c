// SPDX-License-Identifier: GPL-2.0
/*
 * syncmemctl top [REGION...]: the busiest words, sampled every interval:
 * waiters queued now, arrivals since the previous sample (queued waiters
 * whose arrival time is later), the longest wait.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "syncmemctl.h"

#define TOP_ROWS	20

struct word_row {
	const struct snapshot *s;
	uint64_t offset;
	int waiters;
	int arrivals;
	int64_t longest_ns;
};

static int row_cmp(const void *a, const void *b)
{
	const struct word_row *x = a, *y = b;

	if (x->waiters != y->waiters)
		return x->waiters > y->waiters ? -1 : 1;
	if (x->arrivals != y->arrivals)
		return x->arrivals > y->arrivals ? -1 : 1;
	if (x->longest_ns != y->longest_ns)
		return x->longest_ns > y->longest_ns ? -1 : 1;
	if (x->s != y->s)
		return strcmp(x->s->name, y->s->name);
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * One row per word with waiters, of every region of @s (their waiters
 * already read): in *@rows, their number returned, or -ENOMEM.
 */
static int collect_rows(const struct snapshot *s, int n, int64_t since,
			struct word_row **rows)
{
	int total = 0, nrows = 0;

	for (int i = 0; i < n; i++)
		total += s[i].nw;
	*rows = calloc(total ? total : 1, sizeof(**rows));
	if (!*rows)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		/* Waiters come by word offset: a word's are next to each other. */
		for (int k = 0; k < s[i].nw; k++) {
			const struct syncmem_waiter_info *w = &s[i].w[k];
			struct word_row *r;
			int64_t waited = s[i].when_ns - w->since_ns;

			if (!k || w->offset != s[i].w[k - 1].offset) {
				r = &(*rows)[nrows++];
				r->s = &s[i];
				r->offset = w->offset;
			} else {
				r = &(*rows)[nrows - 1];
			}
			r->waiters++;
			r->arrivals += w->since_ns > since;
			if (waited > r->longest_ns)
				r->longest_ns = waited;
		}
	}
	qsort(*rows, nrows, sizeof(**rows), row_cmp);
	return nrows;
}

static void print_rows_text(const struct word_row *rows, int nrows, int nregions,
			    int unopened, long interval_ms, bool tty)
{
	int waiters = 0;

	for (int i = 0; i < nrows; i++)
		waiters += rows[i].waiters;
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf("%d waiter%s on %d word%s in %d region%s", waiters, waiters == 1 ? "" : "s",
	       nrows, nrows == 1 ? "" : "s", nregions, nregions == 1 ? "" : "s");
	if (unopened)
		printf(" (%d more not readable)", unopened);
	printf(", every %ld ms\n", interval_ms);
	printf("%-20s %-10s %-24s %7s %8s %8s\n", "REGION", "OFFSET", "OBJECT", "WAITERS",
	       "ARRIVALS", "LONGEST");
	for (int i = 0; i < nrows && i < TOP_ROWS; i++) {
		const struct word_row *r = &rows[i];
		char region[NAME_TEXT_MAX], off[24], obj[96], longest[16];

		snprintf(off, sizeof(off), "0x%" PRIx64, r->offset);
		printf("%-20s %-10s %-24s %7d %8d %8s\n",
		       name_text(region, sizeof(region), r->s->name, strlen(r->s->name)), off,
		       object_text(obj, sizeof(obj), snap_object_at(r->s, r->offset), r->offset),
		       r->waiters, r->arrivals, duration_text(longest, sizeof(longest),
							      r->longest_ns));
	}
	if (!tty)
		putchar('\n');
	fflush(stdout);
}

static void print_rows_json(const struct word_row *rows, int nrows, int nregions,
			    int unopened, int64_t when, long interval_ms)
{
	struct json j;

	json_start(&j, stdout);
	json_object(&j, NULL);
	json_int(&j, "time_ns", when);
	json_int(&j, "interval_ms", interval_ms);
	json_int(&j, "regions", nregions);
	json_int(&j, "unopened", unopened);
	json_int(&j, "words", nrows);
	json_array(&j, "top");
	for (int i = 0; i < nrows && i < TOP_ROWS; i++) {
		const struct word_row *r = &rows[i];
		const struct syncmem_object_info *obj = snap_object_at(r->s, r->offset);

		json_object(&j, NULL);
		json_str(&j, "region", r->s->name);
		json_uint(&j, "offset", r->offset);
		json_object_ref(&j, "object", obj);
		json_int(&j, "waiters", r->waiters);
		json_int(&j, "arrivals", r->arrivals);
		json_int(&j, "longest_ns", r->longest_ns);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int cmd_top(const struct options *o)
{
	bool tty = !o->json && isatty(STDOUT_FILENO);
	/* The first sample counts arrivals over the interval before it. */
	int64_t prev = now_ns() - o->interval_ms * 1000000LL;
	long iterations = o->iterations;

	/* Without --iterations: until interrupted, or one sample as JSON. */
	if (!iterations && o->json)
		iterations = 1;
	for (long it = 0; !iterations || it < iterations; it++) {
		struct snapshot *s;
		struct word_row *rows;
		int n, unopened, nrows, err;
		int64_t start;

		if (it)
			sleep_ms(o->interval_ms);
		start = now_ns();
		/* The regions of the namespace are listed again each time. */
		err = snap_open_many("top", o->args, o->nargs, &s, &n, &unopened);
		if (err)
			return err;
		nrows = collect_rows(s, n, prev, &rows);
		if (nrows < 0) {
			snap_close_many(s, n);
			return fail("top", nrows, "sampling");
		}
		/* The next sample counts arrivals after this one began. */
		prev = start;
		if (o->json)
			print_rows_json(rows, nrows, n, unopened, start, o->interval_ms);
		else
			print_rows_text(rows, nrows, n, unopened, o->interval_ms, tty);
		free(rows);
		snap_close_many(s, n);
	}
	return 0;
}
