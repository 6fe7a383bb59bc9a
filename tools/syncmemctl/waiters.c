// SPDX-License-Identifier: GPL-2.0
/* syncmemctl waiters REGION: every waiter of a region, by word and arrival. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <string.h>

#include "json.h"
#include "syncmemctl.h"

static void print_waiters_text(const struct snapshot *s)
{
	char shown[NAME_TEXT_MAX];

	printf("region %s: %d waiter%s%s\n", name_text(shown, sizeof(shown), s->name,
						       strlen(s->name)),
	       s->total, s->total == 1 ? "" : "s",
	       s->total > s->nw ? " (more than one call returns: some are not listed)" : "");
	if (!s->nw)
		return;
	printf("%-10s %-24s %4s %7s %7s %-18s %8s %8s\n", "OFFSET", "OBJECT", "POS", "PID",
	       "TID", "KIND", "WAITED", "LEFT");
	for (int i = 0; i < s->nw; i++) {
		const struct syncmem_waiter_info *w = &s->w[i];
		char off[24], obj[96], kind[32], waited[16], left[16];

		snprintf(off, sizeof(off), "0x%" PRIx64, w->offset);
		if (w->deadline_ns < 0)
			strcpy(left, "none");
		else
			duration_text(left, sizeof(left), w->deadline_ns - s->when_ns);
		printf("%-10s %-24s %4u %7d %7d %-18s %8s %8s\n", off,
		       object_text(obj, sizeof(obj), snap_object_at(s, w->offset), w->offset),
		       w->position, (int)w->pid, (int)w->tid,
		       wait_kind_text(kind, sizeof(kind), w->flags),
		       duration_text(waited, sizeof(waited), s->when_ns - w->since_ns), left);
	}
}

/* What processes promised to do to the region's words if they die. */
static void print_armed_text(const struct snapshot *s, const struct syncmem_armed_info *a, int n)
{
	if (!n)
		return;
	printf("%d on-close action%s armed:\n", n, n == 1 ? "" : "s");
	printf("%-10s %-24s %7s %s\n", "OFFSET", "OBJECT", "PID", "WHEN ITS HANDLE GOES");
	for (int i = 0; i < n; i++) {
		char off[24], obj[96], what[96];

		snprintf(off, sizeof(off), "0x%" PRIx64, a[i].offset);
		if (a[i].add)
			snprintf(what, sizeof(what), "subtract %" PRIu64, a[i].value);
		else if (a[i].if_equal)
			snprintf(what, sizeof(what), "store 0x%" PRIx64 " if it holds 0x%" PRIx64,
				 a[i].value, a[i].expected);
		else
			snprintf(what, sizeof(what), "store 0x%" PRIx64, a[i].value);
		printf("%-10s %-24s %7d %s\n", off,
		       object_text(obj, sizeof(obj), snap_object_at(s, a[i].offset), a[i].offset),
		       (int)a[i].pid, what);
	}
}

static void json_armed(struct json *j, const struct syncmem_armed_info *a, int n)
{
	json_array(j, "armed");
	for (int i = 0; i < n; i++) {
		json_object(j, NULL);
		json_uint(j, "offset", a[i].offset);
		json_uint(j, "size", a[i].size);
		json_uint(j, "value", a[i].value);
		json_bool(j, "add", a[i].add);
		json_bool(j, "if_equal", a[i].if_equal);
		json_uint(j, "expected", a[i].expected);
		json_int(j, "pid", a[i].pid);
		json_object_end(j);
	}
	json_array_end(j);
}

/* The armed actions, up to @cap (a region has few; the rest are counted). */
#define ARMED_SHOWN 256

int cmd_waiters(const struct options *o)
{
	struct syncmem_armed_info armed[ARMED_SHOWN];
	struct snapshot s;
	struct json j;
	int err = snap_load("waiters", o->args[0], &s);
	int narmed;

	if (err)
		return err;
	narmed = syncmem_armed(s.r, armed, ARMED_SHOWN);
	if (narmed < 0) {
		snap_close(&s);
		return fail("waiters", narmed, "cannot list the region's on-close actions");
	}
	if (narmed > ARMED_SHOWN)
		narmed = ARMED_SHOWN;
	if (!o->json) {
		print_waiters_text(&s);
		print_armed_text(&s, armed, narmed);
		snap_close(&s);
		return 0;
	}
	json_start(&j, stdout);
	json_object(&j, NULL);
	json_str(&j, "region", s.name);
	json_int(&j, "now_ns", s.when_ns);
	json_int(&j, "total", s.total);
	json_bool(&j, "truncated", s.total > s.nw);
	json_array(&j, "waiters");
	for (int i = 0; i < s.nw; i++)
		json_waiter(&j, &s, &s.w[i]);
	json_array_end(&j);
	json_armed(&j, armed, narmed);
	json_object_end(&j);
	json_finish(&j);
	snap_close(&s);
	return 0;
}
