// SPDX-License-Identifier: GPL-2.0
/*
 * The ledger: each fuzzing thread drives a private handle, with its own
 * eventfd and its own anonymous region, that no other thread or process
 * touches (their fds live above PRIVATE_FD_BASE, out of reach of the table's
 * stale fd numbers). Its outcomes are therefore predictable, and predicted
 * exactly:
 *
 *  - pinned waits (user_data 0..23) on private words 0..7 without deadline
 *    stay queued until this thread notifies, hands off or cancels them, so
 *    -EEXIST, -ENOENT, the count a NOTIFY wakes, which waiter a HANDOFF
 *    picks, and the order of the records are all known;
 *  - timed waits (24..39) on words 8..15 that nobody notifies must complete
 *    with SYNCMEM_WAIT_TIMED_OUT, never before their deadline;
 *  - waits (40..63) on the table's shared regions complete however others
 *    make them, but exactly once each;
 *  - every record is one of these or of a POST, read exactly once; the
 *    eventfd counts exactly the records; on-close actions (words 16..23)
 *    store exactly what was armed when the handle goes away.
 *
 * A check (ledger_check) cancels what is left, reads until every expected
 * record arrived (bounded) and verifies nothing else comes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#define REGION_BYTES	4096
#define WORD_OFF(w)	((uint64_t)(w) * 8)
#define PINNED_WORDS	8	/* words 0..7 */
#define TIMED_WORD0	8	/* words 8..15 */
#define ARMED_WORD0	16	/* words 16..23 */
#define UD_PINNED_END	24
#define UD_TIMED_END	40
#define UD_END		64
#define ND_MAX		4	/* outstanding unpredictable records per user_data */
#define EXPECT_MAX	512
#define ARM_MAX		SYNCMEM_ON_CLOSE_MAX

/* How much this thread knows about whether a wait of a user_data is pending. */
enum pending {
	P_NONE,		/* surely not in the handle's pending table */
	P_SURE,		/* surely there (a pinned wait) */
	P_MAYBE,	/* queued, may have completed meanwhile */
};

struct record {
	uint64_t user_data;
	int32_t result;
};

struct armed {
	uint64_t user_data;
	uint32_t word, width;
	uint64_t value, expected;
	bool if_equal;
};

struct ledger {
	int handle, eventfd, region;
	uint64_t *words;		/* our mapping of the region */
	uint64_t val[24];		/* what words 0..23 hold */

	enum pending pending[UD_END];
	uint64_t seq[UD_END];		/* queueing order of pending pinned waits */
	uint64_t next_seq;
	/* Pinned waiters per word, oldest first. */
	uint8_t fifo[PINNED_WORDS][UD_PINNED_END];
	uint8_t fifo_len[PINNED_WORDS];

	/* Records that must come, in this order (our own calls made them). */
	struct record expect[EXPECT_MAX];
	unsigned int expect_head, expect_len;

	/* Records that must come in some order: timed and shared waits. */
	uint8_t nd_count[UD_END];
	uint64_t nd_deadline[UD_END][ND_MAX];
	bool nd_may_cancel[UD_END];	/* a CANCEL_ALL may have cancelled it */
	bool nd_observer[UD_END];	/* queued through a read-only fd */

	uint64_t records_read, eventfd_sum;

	struct armed armed[ARM_MAX];
	unsigned int narmed;
};

static bool is_wait_result(int32_t r)
{
	return r == SYNCMEM_WAIT_WOKEN || r == SYNCMEM_WAIT_TIMED_OUT ||
	       r == SYNCMEM_WAIT_HANDED_OFF || r == -ECANCELED;
}

/* Success expected, but a limit or lack of memory is always possible. */
static bool limit_hit(long ret)
{
	return ret == -EDQUOT || ret == -ENOMEM;
}

/* ---- the model ---------------------------------------------------------- */

static void expect_record(struct ledger *l, uint64_t ud, int32_t result)
{
	if (l->expect_len == EXPECT_MAX) {
		finding("ledger: more than %d records expected at once", EXPECT_MAX);
		return;
	}
	l->expect[(l->expect_head + l->expect_len++) % EXPECT_MAX] =
		(struct record){ ud, result };
}

static void nd_add(struct ledger *l, uint64_t ud, uint64_t deadline, bool observer)
{
	/* With several outstanding, keep what holds for any of them. */
	if (!l->nd_count[ud]) {
		l->nd_observer[ud] = observer;
		l->nd_may_cancel[ud] = false;
	}
	l->nd_observer[ud] &= observer;
	l->nd_deadline[ud][l->nd_count[ud]++] = deadline;
}

/* Drop one outstanding deadline of @ud: the earliest or the latest. */
static uint64_t nd_take(struct ledger *l, uint64_t ud, bool earliest)
{
	unsigned int best = 0;
	uint64_t d;

	for (unsigned int i = 1; i < l->nd_count[ud]; i++)
		if (earliest ? l->nd_deadline[ud][i] < l->nd_deadline[ud][best] :
			       l->nd_deadline[ud][i] > l->nd_deadline[ud][best])
			best = i;
	d = l->nd_deadline[ud][best];
	l->nd_deadline[ud][best] = l->nd_deadline[ud][--l->nd_count[ud]];
	return d;
}

static void fifo_remove(struct ledger *l, uint64_t ud)
{
	for (int w = 0; w < PINNED_WORDS; w++)
		for (int i = 0; i < l->fifo_len[w]; i++)
			if (l->fifo[w][i] == ud) {
				memmove(&l->fifo[w][i], &l->fifo[w][i + 1], l->fifo_len[w] - i - 1);
				l->fifo_len[w]--;
				return;
			}
}

static unsigned int count_pending(struct ledger *l, enum pending p, uint64_t lo, uint64_t hi)
{
	unsigned int n = 0;

	for (uint64_t ud = lo; ud < hi; ud++)
		n += l->pending[ud] == p;
	return n;
}

static unsigned int outstanding(struct ledger *l)
{
	unsigned int n = l->expect_len;

	for (int ud = 0; ud < UD_END; ud++)
		n += l->nd_count[ud] + (l->pending[ud] == P_SURE);
	return n;
}

/* Judge @ret against the allowed results; false (and a finding) if not among them. */
static bool allowed(struct ledger *l, enum op op, long ret, const char *what, int n,
		    const long *ok)
{
	char got[32], list[160] = "";
	size_t len = 0;

	if (limit_hit(ret) || (ret == -EAGAIN && outstanding(l) >= shared->max_async_waits)) {
		tally(op, ret, DOCUMENTED, what);
		return true;
	}
	for (int i = 0; i < n; i++)
		if (ret == ok[i]) {
			tally(op, ret, DOCUMENTED, what);
			return true;
		}
	for (int i = 0; i < n && len < sizeof(list); i++)
		len += snprintf(list + len, sizeof(list) - len, "%s%s", i ? " or " : "",
				result_text(ok[i], got, sizeof(got)));
	tally(op, ret, DOCUMENTED, what);
	finding("ledger: %s returned %s, expected %s: %s", op_name(op),
		result_text(ret, got, sizeof(got)), list, what);
	return false;
}

#define ALLOWED(l, op, ret, what, ...) \
	allowed(l, op, ret, what, sizeof((long[]){ __VA_ARGS__ }) / sizeof(long), \
		(long[]){ __VA_ARGS__ })

static bool pollin(struct ledger *l)
{
	struct pollfd p = { .fd = l->handle, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* A record we caused is on the list before our call returned: poll says so. */
static void check_pollin(struct ledger *l, const char *after)
{
	long ret = pollin(l) ? 1 : 0;

	tally(OP_POLL, ret, EXACTLY(1), after);
}

/* ---- reading records ---------------------------------------------------- */

static void take_record(struct ledger *l, const struct syncmem_completion *c)
{
	uint64_t ud = c->user_data;
	int32_t res = c->result;
	struct record *head = l->expect_len ? &l->expect[l->expect_head] : NULL;

	l->records_read++;
	if (c->pad)
		finding("ledger: record ud %llu result %d has pad %u", (unsigned long long)ud, res,
			c->pad);
	if (head && head->user_data == ud && head->result == res) {
		l->expect_head = (l->expect_head + 1) % EXPECT_MAX;
		l->expect_len--;
		return;
	}
	if (ud >= UD_PINNED_END && ud < UD_END && l->nd_count[ud] && is_wait_result(res)) {
		bool timed = ud < UD_TIMED_END;
		bool ok = res == SYNCMEM_WAIT_TIMED_OUT ||
			  (res == -ECANCELED && l->nd_may_cancel[ud]) ||
			  (!timed && res == SYNCMEM_WAIT_WOKEN) ||
			  (!timed && res == SYNCMEM_WAIT_HANDED_OFF &&
			   !(l->nd_observer[ud] && shared->abi2_checks));

		if (ok) {
			uint64_t deadline = nd_take(l, ud, res == SYNCMEM_WAIT_TIMED_OUT);

			if (res == SYNCMEM_WAIT_TIMED_OUT && now_ns() < deadline)
				finding("ledger: ud %llu reported TIMED_OUT %llu ns before its deadline",
					(unsigned long long)ud,
					(unsigned long long)(deadline - now_ns()));
			/* Every wait of it completed: none is pending. */
			if (!l->nd_count[ud] && l->pending[ud] == P_MAYBE)
				l->pending[ud] = P_NONE;
			return;
		}
	}
	/* Expected later: records came out of order. */
	for (unsigned int i = 1; i < l->expect_len; i++) {
		struct record *r = &l->expect[(l->expect_head + i) % EXPECT_MAX];

		if (r->user_data == ud && r->result == res) {
			finding("ledger: record ud %llu result %d came before %u older ones (first: ud %llu result %d)",
				(unsigned long long)ud, res, i,
				(unsigned long long)head->user_data, head->result);
			/* Resynchronise: drop everything up to it. */
			l->expect_head = (l->expect_head + i + 1) % EXPECT_MAX;
			l->expect_len -= i + 1;
			return;
		}
	}
	finding("ledger: unexpected record ud %llu result %d (%s)", (unsigned long long)ud, res,
		ud < UD_PINNED_END ? "a pinned wait" : ud < UD_TIMED_END ? "a timed wait" :
		ud < UD_END ? "a shared wait" : "no wait of this handle");
}

/* Read what is there; returns the number of records. */
static long read_records(struct thread_ctx *t, struct ledger *l)
{
	struct syncmem_completion recs[8];
	size_t count = sizeof(recs[0]) * (1 + rng_below(&t->rng, 8));
	long ret, total = 0;

	for (;;) {
		ret = read(l->handle, recs, count);
		if (ret < 0)
			ret = -errno;
		if (ret == -EAGAIN) {
			tally(OP_READ, ret, EXACTLY(-EAGAIN), "ledger read");
			return total;
		}
		if (!tally(OP_READ, ret, DOCUMENTED, "ledger read") || ret <= 0)
			return total;
		if (ret % sizeof(recs[0]) || (size_t)ret > count) {
			finding("ledger: read() of %zu bytes returned %ld", count, ret);
			return total;
		}
		for (long i = 0; i < ret / (long)sizeof(recs[0]); i++)
			take_record(l, &recs[i]);
		total += ret / (long)sizeof(recs[0]);
	}
}

/* ---- operations --------------------------------------------------------- */

static long wait_async(struct ledger *l, int region, uint64_t ud, uint64_t off, uint32_t width,
		       uint64_t expected, uint64_t deadline)
{
	struct syncmem_wait_async arg = {
		.region_fd = region, .size = width, .offset = off, .expected = expected,
		.deadline_ns = deadline, .user_data = ud,
	};

	return xioctl(l->handle, SYNCMEM_IOC_WAIT_ASYNC, &arg);
}

static uint64_t word_value(struct ledger *l, unsigned int w, uint32_t width)
{
	return width == 4 ? (uint32_t)l->val[w] : l->val[w];
}

static void pinned_wait(struct thread_ctx *t, struct ledger *l)
{
	uint64_t ud = rng_below(&t->rng, UD_PINNED_END);
	unsigned int w = (unsigned int)rng_below(&t->rng, PINNED_WORDS);
	uint32_t width = rng_chance(&t->rng, 1, 3) ? 8 : 4;
	bool equal = rng_chance(&t->rng, 6, 7), passed = rng_chance(&t->rng, 1, 8);
	uint64_t expected = word_value(l, w, width) ^ (equal ? 0 : 1 + rng_below(&t->rng, 3));
	uint64_t deadline = passed ? now_ns() - 1 : SYNCMEM_NO_DEADLINE;
	long natural = !equal ? SYNCMEM_WAIT_NOT_EQUAL : passed ? SYNCMEM_WAIT_TIMED_OUT :
			SYNCMEM_WAIT_QUEUED;
	char what[120];
	long ret;

	ret = wait_async(l, l->region, ud, WORD_OFF(w), width, expected, deadline);
	snprintf(what, sizeof(what), "pinned ud %llu word %u size %u %s%s, ud %s",
		 (unsigned long long)ud, w, width, equal ? "equal" : "not equal",
		 passed ? " deadline passed" : "", l->pending[ud] == P_SURE ? "pending" : "free");
	if (l->pending[ud] == P_SURE) {
		if (natural == SYNCMEM_WAIT_QUEUED)
			ALLOWED(l, OP_WAIT_ASYNC, ret, what, -EEXIST);
		else	/* whether the compare or the duplicate comes first */
			ALLOWED(l, OP_WAIT_ASYNC, ret, what, -EEXIST, natural);
		return;
	}
	ALLOWED(l, OP_WAIT_ASYNC, ret, what, natural);
	if (ret == SYNCMEM_WAIT_QUEUED) {
		l->pending[ud] = P_SURE;
		l->seq[ud] = l->next_seq++;
		l->fifo[w][l->fifo_len[w]++] = (uint8_t)ud;
	}
}

static void timed_wait(struct thread_ctx *t, struct ledger *l)
{
	uint64_t ud = UD_PINNED_END + rng_below(&t->rng, UD_TIMED_END - UD_PINNED_END);
	unsigned int w = TIMED_WORD0 + (unsigned int)rng_below(&t->rng, 8);
	bool passed = rng_chance(&t->rng, 1, 8);
	uint64_t deadline = passed ? now_ns() - 1 : now_ns() + rng_below(&t->rng, 30000000);
	char what[100];
	long ret;

	if (l->nd_count[ud] == ND_MAX)
		return;
	ret = wait_async(l, l->region, ud, WORD_OFF(w), 4, word_value(l, w, 4), deadline);
	snprintf(what, sizeof(what), "timed ud %llu word %u%s, ud %s", (unsigned long long)ud, w,
		 passed ? " deadline passed" : "", l->pending[ud] == P_MAYBE ? "maybe pending" : "free");
	/* A deadline close ahead may pass before the kernel looks. */
	if (passed && l->pending[ud] == P_MAYBE)
		ALLOWED(l, OP_WAIT_ASYNC, ret, what, SYNCMEM_WAIT_TIMED_OUT, -EEXIST);
	else if (passed)
		ALLOWED(l, OP_WAIT_ASYNC, ret, what, SYNCMEM_WAIT_TIMED_OUT);
	else if (l->pending[ud] == P_MAYBE)
		ALLOWED(l, OP_WAIT_ASYNC, ret, what, SYNCMEM_WAIT_QUEUED, SYNCMEM_WAIT_TIMED_OUT,
			-EEXIST);
	else
		ALLOWED(l, OP_WAIT_ASYNC, ret, what, SYNCMEM_WAIT_QUEUED, SYNCMEM_WAIT_TIMED_OUT);
	if (ret == SYNCMEM_WAIT_TIMED_OUT && now_ns() < deadline)
		finding("ledger: WAIT_ASYNC timed out before its deadline: %s", what);
	if (ret == SYNCMEM_WAIT_QUEUED) {
		l->pending[ud] = P_MAYBE;
		nd_add(l, ud, deadline, false);
	}
}

static void shared_wait(struct thread_ctx *t, struct ledger *l)
{
	uint64_t ud = UD_TIMED_END + rng_below(&t->rng, UD_END - UD_TIMED_END);
	uint32_t width = rng_chance(&t->rng, 1, 4) ? 8 : 4;
	uint64_t off, deadline = pick_deadline(&t->rng, false);
	char what[140];
	struct obj r;
	int slot;
	long ret;

	if (l->nd_count[ud] == ND_MAX || !obj_pick(&t->rng, K_REGION, &r, &slot))
		return;
	off = pick_offset(&t->rng, r.size, width);
	ret = wait_async(l, r.fd, ud, off, width, pick_expected(&t->rng, r.rid, off, width),
			 deadline);
	snprintf(what, sizeof(what), "shared ud %llu region fd %d (%s) offset %llu, ud %s",
		 (unsigned long long)ud, r.fd, r.rdonly ? "ro" : "rw", (unsigned long long)off,
		 l->pending[ud] == P_MAYBE ? "maybe pending" : "free");
	/* The region fd may have changed; the user_data cannot. */
	tally(OP_WAIT_ASYNC, ret, if_stable(DOCUMENTED, obj_unchanged(slot, &r)), what);
	if (ret == -EEXIST && l->pending[ud] == P_NONE)
		finding("ledger: WAIT_ASYNC -EEXIST with no wait of that user_data pending: %s", what);
	if (ret == SYNCMEM_WAIT_QUEUED) {
		l->pending[ud] = P_MAYBE;
		nd_add(l, ud, deadline, r.rdonly);
	}
}

static void cancel_one(struct thread_ctx *t, struct ledger *l)
{
	uint64_t ud = rng_below(&t->rng, UD_END);
	struct syncmem_cancel arg = { .user_data = ud };
	char what[60];
	long ret;

	ret = xioctl(l->handle, SYNCMEM_IOC_CANCEL, &arg);
	snprintf(what, sizeof(what), "ud %llu (%s)", (unsigned long long)ud,
		 l->pending[ud] == P_SURE ? "pending" :
		 l->pending[ud] == P_MAYBE ? "maybe pending" : "not pending");
	switch (l->pending[ud]) {
	case P_SURE:
		if (ALLOWED(l, OP_CANCEL, ret, what, 0) && ret == 0) {
			fifo_remove(l, ud);
			expect_record(l, ud, -ECANCELED);
			l->pending[ud] = P_NONE;
			check_pollin(l, "poll after a CANCEL");
		}
		break;
	case P_MAYBE:
		if (!ALLOWED(l, OP_CANCEL, ret, what, 0, -ENOENT))
			break;
		if (ret == 0) {
			/* That wait's record is now ours to expect, in order. */
			nd_take(l, ud, false);
			expect_record(l, ud, -ECANCELED);
		}
		l->pending[ud] = P_NONE;
		break;
	default:
		ALLOWED(l, OP_CANCEL, ret, what, -ENOENT);
		break;
	}
}

static void cancel_all(struct ledger *l)
{
	struct syncmem_cancel arg = { .flags = SYNCMEM_CANCEL_ALL };
	unsigned int sure = count_pending(l, P_SURE, 0, UD_END);
	unsigned int maybe = count_pending(l, P_MAYBE, 0, UD_END);
	char what[80];
	long ret;

	ret = xioctl(l->handle, SYNCMEM_IOC_CANCEL, &arg);
	snprintf(what, sizeof(what), "CANCEL_ALL with %u waits pending and %u maybe", sure, maybe);
	if (!tally(OP_CANCEL_ALL, ret, DOCUMENTED, what) || ret < 0)
		return;
	if (ret < (long)sure || ret > (long)(sure + maybe))
		finding("ledger: CANCEL_ALL cancelled %ld: %s", ret, what);
	/* The pinned ones complete in the order they were queued. */
	for (;;) {
		uint64_t best = UD_END;

		for (uint64_t ud = 0; ud < UD_END; ud++)
			if (l->pending[ud] == P_SURE &&
			    (best == UD_END || l->seq[ud] < l->seq[best]))
				best = ud;
		if (best == UD_END)
			break;
		expect_record(l, best, -ECANCELED);
		l->pending[best] = P_NONE;
	}
	memset(l->fifo_len, 0, sizeof(l->fifo_len));
	for (uint64_t ud = 0; ud < UD_END; ud++) {
		if (l->pending[ud] == P_MAYBE)
			l->nd_may_cancel[ud] = true;
		l->pending[ud] = P_NONE;
	}
	if (sure)
		check_pollin(l, "poll after a CANCEL_ALL");
}

static void post(struct thread_ctx *t, struct ledger *l)
{
	uint64_t ud = rng_below(&t->rng, UD_END);
	struct syncmem_post arg = { .user_data = ud, .result = pick_post_result(&t->rng) };
	char what[60];
	long ret;

	ret = xioctl(l->handle, SYNCMEM_IOC_POST, &arg);
	snprintf(what, sizeof(what), "POST ud %llu (%s)", (unsigned long long)ud,
		 l->pending[ud] == P_SURE ? "pending" :
		 l->pending[ud] == P_MAYBE ? "maybe pending" : "not pending");
	if (l->pending[ud] == P_SURE && shared->abi2_checks)
		ALLOWED(l, OP_POST, ret, what, -EEXIST);
	else if (l->pending[ud] == P_MAYBE && shared->abi2_checks)
		ALLOWED(l, OP_POST, ret, what, 0, -EEXIST);
	else
		ALLOWED(l, OP_POST, ret, what, 0);
	if (ret == 0) {
		expect_record(l, ud, arg.result);
		check_pollin(l, "poll after a POST");
	}
}

static void notify(struct thread_ctx *t, struct ledger *l)
{
	static const uint32_t counts[] = { 0, 1, 1, 2, 3, UINT32_MAX };
	unsigned int w = (unsigned int)rng_below(&t->rng, PINNED_WORDS);
	struct syncmem_notify arg = {
		.offset = WORD_OFF(w),
		.count = counts[rng_below(&t->rng, sizeof(counts) / sizeof(counts[0]))],
	};
	long want = arg.count < l->fifo_len[w] ? arg.count : l->fifo_len[w];
	char what[80];
	long ret;

	ret = xioctl(l->region, SYNCMEM_IOC_NOTIFY, &arg);
	snprintf(what, sizeof(what), "NOTIFY word %u count %u with %u pinned waiters", w, arg.count,
		 l->fifo_len[w]);
	if (!tally(OP_NOTIFY, ret, EXACTLY(want), what) || ret != want)
		return;
	for (long i = 0; i < want; i++) {
		expect_record(l, l->fifo[w][i], SYNCMEM_WAIT_WOKEN);
		l->pending[l->fifo[w][i]] = P_NONE;
	}
	memmove(l->fifo[w], l->fifo[w] + want, l->fifo_len[w] - want);
	l->fifo_len[w] -= want;
	if (want)
		check_pollin(l, "poll after a NOTIFY");
}

static void handoff(struct thread_ctx *t, struct ledger *l)
{
	unsigned int w = (unsigned int)rng_below(&t->rng, PINNED_WORDS);
	uint32_t width = rng_chance(&t->rng, 1, 3) ? 8 : 4;
	bool add = rng_chance(&t->rng, 1, 2);
	struct syncmem_handoff arg = {
		.offset = WORD_OFF(w), .size = width, .value = rng_below(&t->rng, 3),
		.flags = add ? SYNCMEM_HANDOFF_ADD : 0,
	};
	bool waiters = l->fifo_len[w] > 0;
	uint64_t mask = width == 4 ? 0xffffffffull : ~0ull, now;
	char what[80];
	long ret;

	ret = xioctl(l->region, SYNCMEM_IOC_HANDOFF, &arg);
	snprintf(what, sizeof(what), "HANDOFF%s word %u size %u with %u pinned waiters",
		 add ? "_ADD" : "", w, width, l->fifo_len[w]);
	if (!tally(add ? OP_HANDOFF_ADD : OP_HANDOFF, ret,
		   EXACTLY(waiters ? SYNCMEM_HANDOFF_WOKE : SYNCMEM_HANDOFF_STORED), what))
		return;
	if (waiters) {
		uint64_t ud = l->fifo[w][0];

		expect_record(l, ud, SYNCMEM_WAIT_HANDED_OFF);
		l->pending[ud] = P_NONE;
		memmove(l->fifo[w], l->fifo[w] + 1, --l->fifo_len[w]);
		check_pollin(l, "poll after a HANDOFF");
		return;
	}
	now = add ? (l->val[w] & mask) + arg.value : arg.value;
	l->val[w] = (l->val[w] & ~mask) | (now & mask);
	if (atomic_load((_Atomic uint64_t *)&l->words[w]) != l->val[w])
		finding("ledger: %s left the word %#llx, expected %#llx", what,
			(unsigned long long)l->words[w], (unsigned long long)l->val[w]);
}

static void store_word(struct thread_ctx *t, struct ledger *l)
{
	unsigned int w = (unsigned int)rng_below(&t->rng, PINNED_WORDS);

	l->val[w] = rng_below(&t->rng, 4);
	atomic_store((_Atomic uint64_t *)&l->words[w], l->val[w]);
}

static void sync_wait(struct thread_ctx *t, struct ledger *l)
{
	unsigned int w = (unsigned int)rng_below(&t->rng, 16);
	bool equal = rng_chance(&t->rng, 3, 4);
	struct syncmem_wait arg = {
		.offset = WORD_OFF(w), .size = 4,
		.expected = word_value(l, w, 4) ^ (equal ? 0 : 1),
		.deadline_ns = rng_chance(&t->rng, 1, 2) ? now_ns() - 1 :
			       now_ns() + rng_below(&t->rng, 2000000),
	};
	char what[80];
	long ret;

	ret = xioctl(l->region, SYNCMEM_IOC_WAIT, &arg);
	snprintf(what, sizeof(what), "WAIT on private word %u, %s", w, equal ? "equal" : "not equal");
	tally(OP_WAIT, ret, EXACTLY(equal ? SYNCMEM_WAIT_TIMED_OUT : SYNCMEM_WAIT_NOT_EQUAL), what);
	if (ret == SYNCMEM_WAIT_TIMED_OUT && now_ns() < arg.deadline_ns)
		finding("ledger: WAIT timed out before its deadline: %s", what);
}

static void region_info(struct ledger *l)
{
	struct syncmem_region_info info;
	unsigned int sure = count_pending(l, P_SURE, 0, UD_PINNED_END);
	unsigned int timed = 0;
	long ret;

	for (int ud = UD_PINNED_END; ud < UD_TIMED_END; ud++)
		timed += l->nd_count[ud];
	ret = xioctl(l->region, SYNCMEM_IOC_REGION_INFO, &info);
	if (!tally(OP_REGION_INFO, ret, EXACTLY(0), "REGION_INFO of the private region") || ret)
		return;
	if (info.size != REGION_BYTES || info.flags)
		finding("ledger: REGION_INFO of an anonymous writable region of %d bytes: size %llu flags %#x",
			REGION_BYTES, (unsigned long long)info.size, info.flags);
	if (info.waiters < sure || info.waiters > sure + timed)
		finding("ledger: REGION_INFO counts %llu waiters, %u pinned ones and %u timed ones may be queued",
			(unsigned long long)info.waiters, sure, timed);
}

static struct armed *armed_find(struct ledger *l, uint64_t ud)
{
	for (unsigned int i = 0; i < l->narmed; i++)
		if (l->armed[i].user_data == ud)
			return &l->armed[i];
	return NULL;
}

static void arm(struct thread_ctx *t, struct ledger *l)
{
	/* Mostly few user_data values (-EEXIST), sometimes many (-ENOSPC). */
	uint64_t ud = rng_chance(&t->rng, 3, 4) ? rng_below(&t->rng, 24) : rng_below(&t->rng, 100);
	struct armed a = {
		.user_data = ud, .word = ARMED_WORD0 + (uint32_t)rng_below(&t->rng, 8),
		.width = rng_chance(&t->rng, 1, 3) ? 8 : 4, .value = 1 + rng_below(&t->rng, 1000),
		.if_equal = rng_chance(&t->rng, 1, 2),
	};
	struct syncmem_on_close arg = {
		.region_fd = l->region, .size = a.width, .offset = WORD_OFF(a.word),
		.value = a.value, .user_data = ud,
		.flags = a.if_equal ? SYNCMEM_ON_CLOSE_IF_EQUAL : 0,
	};
	char what[60];
	long ret;

	/* IF_EQUAL against a value the word may hold at release, or not. */
	a.expected = arg.expected = rng_below(&t->rng, 4);
	ret = xioctl(l->handle, SYNCMEM_IOC_ARM_ON_CLOSE, &arg);
	snprintf(what, sizeof(what), "ARM_ON_CLOSE ud %llu, %u armed", (unsigned long long)ud,
		 l->narmed);
	if (armed_find(l, ud))
		ALLOWED(l, OP_ARM_ON_CLOSE, ret, what, -EEXIST);
	else if (l->narmed == ARM_MAX)
		ALLOWED(l, OP_ARM_ON_CLOSE, ret, what, -ENOSPC);
	else if (ALLOWED(l, OP_ARM_ON_CLOSE, ret, what, 0) && ret == 0)
		l->armed[l->narmed++] = a;
}

static void disarm(struct thread_ctx *t, struct ledger *l)
{
	uint64_t ud = rng_below(&t->rng, 100);
	struct syncmem_disarm arg = { .user_data = ud };
	struct armed *a = armed_find(l, ud);
	long ret = xioctl(l->handle, SYNCMEM_IOC_DISARM, &arg);

	if (!tally(OP_DISARM, ret, EXACTLY(a ? 0 : -ENOENT), "DISARM of the private handle") ||
	    !a)
		return;
	/* Keep the arming order of the others. */
	memmove(a, a + 1, (char *)&l->armed[--l->narmed] - (char *)a);
}

void ledger_step(struct thread_ctx *t, struct ledger *l)
{
	unsigned int k = (unsigned int)rng_below(&t->rng, 100);

	if (l->expect_len > EXPECT_MAX / 2)
		k = 99;	/* read before the expectations pile up */
	if (k < 26)
		pinned_wait(t, l);
	else if (k < 34)
		timed_wait(t, l);
	else if (k < 42)
		shared_wait(t, l);
	else if (k < 52)
		cancel_one(t, l);
	else if (k < 54)
		cancel_all(l);
	else if (k < 61)
		post(t, l);
	else if (k < 70)
		notify(t, l);
	else if (k < 77)
		handoff(t, l);
	else if (k < 80)
		store_word(t, l);
	else if (k < 84)
		sync_wait(t, l);
	else if (k < 86)
		region_info(l);
	else if (k < 89)
		arm(t, l);
	else if (k < 91)
		disarm(t, l);
	else
		read_records(t, l);
}

/* ---- checks ------------------------------------------------------------- */

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Every record of a timed or shared wait came. */
static bool nd_all_in(struct ledger *l)
{
	for (int ud = 0; ud < UD_END; ud++)
		if (l->nd_count[ud])
			return false;
	return true;
}

static bool all_in(struct ledger *l)
{
	return nd_all_in(l) && !l->expect_len;
}

static void report_missing(struct ledger *l, const char *when)
{
	char list[200];
	size_t len = 0;

	for (int ud = 0; ud < UD_END && len < sizeof(list); ud++)
		if (l->nd_count[ud])
			len += snprintf(list + len, sizeof(list) - len, " ud %d (x%u)", ud,
					l->nd_count[ud]);
	for (unsigned int i = 0; i < l->expect_len && len < sizeof(list); i++) {
		struct record *r = &l->expect[(l->expect_head + i) % EXPECT_MAX];

		len += snprintf(list + len, sizeof(list) - len, " ud %llu=%d",
				(unsigned long long)r->user_data, r->result);
	}
	finding("ledger: records never came %s:%s", when, list);
	/* Start over: later checks judge later calls. */
	memset(l->nd_count, 0, sizeof(l->nd_count));
	l->expect_len = 0;
}

static void read_until_all_in(struct thread_ctx *t, struct ledger *l, uint64_t until,
			      const char *when)
{
	while (!all_in(l)) {
		read_records(t, l);
		if (all_in(l))
			break;
		if (now_ns() > until) {
			report_missing(l, when);
			return;
		}
		sleep_ms(2);
	}
}

void ledger_check(struct thread_ctx *t, struct ledger *l)
{
	uint64_t latest = now_ns(), value;
	char got[32];
	long ret;

	atomic_fetch_add(&shared->ledger_checks, 1);
	proc_doing("ledger check");
	/* Sometimes let the timed and shared waits end by themselves first. */
	if (rng_chance(&t->rng, 1, 2)) {
		for (int ud = UD_PINNED_END; ud < UD_END; ud++)
			for (unsigned int i = 0; i < l->nd_count[ud]; i++)
				if (l->nd_deadline[ud][i] > latest)
					latest = l->nd_deadline[ud][i];
		while (!nd_all_in(l) && now_ns() < latest + 10000000000ull) {
			read_records(t, l);
			sleep_ms(2);
		}
		for (int ud = UD_PINNED_END; ud < UD_TIMED_END; ud++)
			if (l->nd_count[ud]) {
				finding("ledger: timed wait ud %d never completed, 10 s after its deadline",
					ud);
				break;
			}
	}
	cancel_all(l);
	read_until_all_in(t, l, now_ns() + 10000000000ull, "after CANCEL_ALL");
	ret = read(l->handle, got, sizeof(struct syncmem_completion));
	tally(OP_READ, ret < 0 ? -errno : ret, EXACTLY(-EAGAIN), "ledger read after everything came");
	tally(OP_POLL, pollin(l), EXACTLY(0), "ledger poll after everything came");
	region_info(l);
	/* One eventfd signal per record, each after its record is queued. */
	for (uint64_t until = now_ns() + 2000000000ull;;) {
		if (read(l->eventfd, &value, sizeof(value)) == sizeof(value))
			l->eventfd_sum += value;
		if (l->eventfd_sum >= l->records_read || now_ns() > until)
			break;
		sleep_ms(2);
	}
	if (l->eventfd_sum != l->records_read) {
		finding("ledger: the eventfd counted %llu completions, %llu records were read",
			(unsigned long long)l->eventfd_sum, (unsigned long long)l->records_read);
		l->eventfd_sum = l->records_read;
	}
}

/* ---- life --------------------------------------------------------------- */

struct ledger *ledger_new(struct thread_ctx *t)
{
	struct syncmem_region_open ro = { .size = REGION_BYTES };
	struct ledger *l = calloc(1, sizeof(*l));
	struct syncmem_eventfd ev;
	void *p;

	(void)t;
	if (!l)
		return NULL;
	l->region = -1;
	l->handle = fd_move_above(open("/dev/syncmem", O_RDWR | O_CLOEXEC | O_NONBLOCK),
				  PRIVATE_FD_BASE);
	l->eventfd = fd_move_above(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), PRIVATE_FD_BASE);
	if (l->handle < 0 || l->eventfd < 0)
		goto fail;
	l->region = fd_move_above((int)xioctl(l->handle, SYNCMEM_IOC_REGION_OPEN, &ro),
				  PRIVATE_FD_BASE);
	if (l->region < 0)
		goto fail;
	ev = (struct syncmem_eventfd){ .fd = l->eventfd };
	if (xioctl(l->handle, SYNCMEM_IOC_SET_EVENTFD, &ev))
		goto fail;
	p = mmap(NULL, REGION_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, l->region, 0);
	if (p == MAP_FAILED)
		goto fail;
	l->words = p;
	return l;

fail:
	/* Limits (memory, regions) can refuse; this thread goes without. */
	if (l->handle >= 0)
		close(l->handle);
	if (l->eventfd >= 0)
		close(l->eventfd);
	if (l->region >= 0)
		close(l->region);
	free(l);
	return NULL;
}

void ledger_close(struct thread_ctx *t, struct ledger *l)
{
	uint64_t want[8], until;
	bool done = false;

	(void)t;
	for (int i = 0; i < 8; i++)
		want[i] = atomic_load((_Atomic uint64_t *)&l->words[ARMED_WORD0 + i]);
	for (unsigned int i = 0; i < l->narmed; i++) {
		const struct armed *a = &l->armed[i];
		uint64_t mask = a->width == 4 ? 0xffffffffull : ~0ull;
		uint64_t *w = &want[a->word - ARMED_WORD0];

		if (!a->if_equal || (*w & mask) == a->expected)
			*w = (*w & ~mask) | a->value;
	}
	proc_doing("ledger close");
	close(l->handle);
	close(l->eventfd);
	/* A child forked meanwhile may hold the handle until it closes its copy. */
	for (until = now_ns() + 5000000000ull; !done && now_ns() < until; sleep_ms(2)) {
		done = true;
		for (int i = 0; i < 8; i++)
			done &= atomic_load((_Atomic uint64_t *)&l->words[ARMED_WORD0 + i]) == want[i];
	}
	if (!done)
		for (int i = 0; i < 8; i++)
			if (l->words[ARMED_WORD0 + i] != want[i])
				finding("ledger: after the handle closed with %u actions armed, word %d holds %#llx, expected %#llx",
					l->narmed, ARMED_WORD0 + i,
					(unsigned long long)l->words[ARMED_WORD0 + i],
					(unsigned long long)want[i]);
	munmap(l->words, REGION_BYTES);
	close(l->region);
	free(l);
}
