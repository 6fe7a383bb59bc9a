// SPDX-License-Identifier: GPL-2.0
/*
 * Counting results per call and per errno in the memory all processes of a
 * run share, judging each one, and keeping findings for the supervisor.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "same_finding.h"

__thread char fz_who[96] = "supervisor";

static unsigned int result_slot(long ret)
{
	if (ret >= 0)
		return ret < 5 ? (unsigned int)ret : 5;
	if (-ret < MAX_ERRNO)
		return 6 + (unsigned int)-ret - 1;
	return RESULT_SLOTS - 1;
}

const char *result_text(long ret, char *buf, size_t len)
{
	const char *name;

	if (ret >= 0) {
		snprintf(buf, len, "%ld", ret);
		return buf;
	}
	name = -ret < 4096 ? strerrorname_np((int)-ret) : NULL;
	if (name)
		snprintf(buf, len, "-%s", name);
	else
		snprintf(buf, len, "-%ld", -ret);
	return buf;
}

void finding(const char *fmt, ...)
{
	char msg[FINDING_LEN];
	va_list ap;
	int len;

	atomic_fetch_add(&shared->nfindings, 1);
	len = snprintf(msg, sizeof(msg), "[pid %d %s] ", getpid(), fz_who);
	va_start(ap, fmt);
	vsnprintf(msg + len, sizeof(msg) - len, fmt, ap);
	va_end(ap);
	/* On stderr at once (the guest may not live to the report), once per kind. */
	if (finding_record(&shared->findings[0][0], FINDING_LEN, MAX_FINDINGS, &shared->nkinds,
			   shared->finding_count, shared->finding_ready, msg))
		fprintf(stderr, "FINDING: %s\n", msg);
}

bool tally(enum op op, long ret, struct verdict v, const char *what)
{
	char got[32], want[32], doc[200];
	bool ok;

	atomic_fetch_add_explicit(&shared->results[op][result_slot(ret)], 1,
				  memory_order_relaxed);
	if (op < OP_FIRST_NON_IOCTL)
		atomic_fetch_add_explicit(&shared->ioctls, 1, memory_order_relaxed);

	switch (v.judge) {
	case JUDGE_NONE:
		atomic_fetch_add_explicit(&shared->raced[op], 1, memory_order_relaxed);
		return true;
	case JUDGE_EXACT:
		ok = ret == v.want;
		break;
	case JUDGE_FAILS:
		ok = ret < 0 && expect_documented(op, ret);
		break;
	default:
		ok = expect_documented(op, ret);
		break;
	}
	if (ok)
		return true;
	result_text(ret, got, sizeof(got));
	if (v.judge == JUDGE_EXACT) {
		finding("%s returned %s, expected %s: %s", op_name(op), got,
			result_text(v.want, want, sizeof(want)), what);
	} else {
		expect_describe(op, doc, sizeof(doc));
		finding("%s returned %s, documented: %s%s: %s", op_name(op), got, doc,
			v.judge == JUDGE_FAILS ? " (and it must fail)" : "", what);
	}
	return false;
}
