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

int cmd_waiters(const struct options *o)
{
	struct snapshot s;
	struct json j;
	int err = snap_load("waiters", o->args[0], &s);

	if (err)
		return err;
	if (!o->json) {
		print_waiters_text(&s);
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
	json_object_end(&j);
	json_finish(&j);
	snap_close(&s);
	return 0;
}
