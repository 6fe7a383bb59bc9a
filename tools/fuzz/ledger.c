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
 *    -EEXIST, -ENOENT, the count a NOTIFY wakes (an ioctl, or a command
 *    of the ledger's own io_uring), which waiter a HANDOFF
 *    picks, and the order of the records are all known;
 *  - timed waits (24..39) on words 8..15 that nobody notifies must complete
 *    with SYNCMEM_WAIT_TIMED_OUT, never before their deadline;
 *  - waits (40..63) on the table's shared regions complete however others
 *    make them, but exactly once each;
 *  - every record is one of these or of a POST, read exactly once; the
 *    eventfd counts exactly the records; on-close actions (words 16..23,
 *    stores, IF_EQUAL ones and counts) do exactly what was armed when the
 *    handle goes away;
 *  - WAITERS lists exactly the pinned waits, by word and in queueing order
 *    (and no more of the timed ones than may still be queued); WHO names
 *    exactly what this thread stored in words 24..31 (its own ids, the
 *    special ones, ids never issued); OBJECT_NAME keeps the names this
 *    thread gave (-ENOSPC past SYNCMEM_OBJECTS_MAX, -ENOENT removing one
 *    that is not there) and OBJECTS returns exactly them; ARMED lists
 *    exactly the armed actions, in arming order, with this process's pid,
 *    and none once they ran; the fdinfo of the handle and of the region
 *    says the same.
 *
 * A check (ledger_check) cancels what is left, reads until every expected
 * record arrived (bounded) and verifies nothing else comes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#define REGION_BYTES	4096
#define WORD_OFF(w)	((uint64_t)(w) * 8)
#define PINNED_WORDS	8	/* words 0..7 */
#define TIMED_WORD0	8	/* words 8..15 */
#define ARMED_WORD0	16	/* words 16..23 */
#define WHO_WORD0	24	/* words 24..31 */
#define NAME_SLOTS	(REGION_BYTES / 4)
#define UD_PINNED_END	24
#define UD_TIMED_END	40
#define UD_END		64
#define ND_MAX		4	/* outstanding unpredictable records per user_data */
#define EXPECT_MAX	512
#define ARM_MAX		100	/* user_data values the ledger arms: all fit a handle */

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
	bool if_equal, add;
};

/* The name of an object of the region (len 0: none). */
struct objname {
	uint64_t size;
	uint32_t kind, len;
	char name[SYNCMEM_OBJECT_NAME_MAX + 1];
};

struct ledger {
	int handle, eventfd, region;
	struct io_uring ring;		/* for NOTIFY commands, if ring_up */
	bool ring_up;
	uint64_t *words;		/* our mapping of the region */
	uint64_t val[24];		/* what words 0..23 hold */

	enum pending pending[UD_END];
	uint64_t seq[UD_END];		/* queueing order of pending pinned waits */
	uint64_t next_seq;
	/* Pinned waiters per word, oldest first, and the width of each. */
	uint8_t fifo[PINNED_WORDS][UD_PINNED_END];
	uint8_t fifo_len[PINNED_WORDS];
	uint8_t width[UD_PINNED_END];

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

	/* Names of the region's objects, by offset / 4. */
	struct objname names[NAME_SLOTS];
	unsigned int nnames;
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
		l->width[ud] = (uint8_t)width;
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

/* @arg as a SYNCMEM_URING_NOTIFY of the ledger's ring: the CQE's res. */
static long ring_notify(struct ledger *l, const struct syncmem_notify *arg)
{
	struct syncmem_uring_notify c = { .offset = arg->offset, .count = arg->count };
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
	struct io_uring_cqe *cqe;
	long ret;

	if (!sqe)
		return INT32_MIN;	/* never: each call reaps its one CQE */
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, l->region, NULL, 0, 0);
	sqe->cmd_op = SYNCMEM_URING_NOTIFY;
	memcpy(sqe->cmd, &c, sizeof(c));
	io_uring_sqe_set_data64(sqe, 0);
	ret = io_uring_submit(&l->ring);
	if (ret != 1)
		return ret < 0 ? ret : INT32_MIN;
	/* Completed as it was issued; signals may interrupt the reaping only. */
	while ((ret = io_uring_wait_cqe(&l->ring, &cqe)) == -EINTR)
		;
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&l->ring, cqe);
	return ret;
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
	bool ring = l->ring_up && rng_chance(&t->rng, 1, 2);
	char what[80];
	long ret;

	ret = ring ? ring_notify(l, &arg) : xioctl(l->region, SYNCMEM_IOC_NOTIFY, &arg);
	snprintf(what, sizeof(what), "%s word %u count %u with %u pinned waiters",
		 ring ? "ring NOTIFY" : "NOTIFY", w, arg.count, l->fifo_len[w]);
	if (!tally(ring ? OP_URING_NOTIFY : OP_NOTIFY, ret, EXACTLY(want), what) || ret != want)
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
	/* Mostly few user_data values (-EEXIST), sometimes many (no cap per handle). */
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

	/* Or a count: added now, taken back at close (a plain DISARM leaves it). */
	if (!a.if_equal && rng_chance(&t->rng, 1, 3)) {
		a.add = true;
		arg.flags = SYNCMEM_ON_CLOSE_ADD;
	}
	char what[60];
	long ret;

	/* IF_EQUAL against a value the word may hold at release, or not (ignored without). */
	a.expected = arg.expected = rng_below(&t->rng, 4);
	ret = xioctl(l->handle, SYNCMEM_IOC_ARM_ON_CLOSE, &arg);
	snprintf(what, sizeof(what), "ARM_ON_CLOSE ud %llu, %u armed", (unsigned long long)ud,
		 l->narmed);
	if (armed_find(l, ud))
		ALLOWED(l, OP_ARM_ON_CLOSE, ret, what, -EEXIST);
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

/* ---- introspection ------------------------------------------------------ */

/* A pinned waiter as WAITERS lists it. */
struct pinned {
	uint64_t offset;
	uint32_t position, size;
};

/* The pinned waiters in the order of WAITERS (by word, then by arrival). */
static unsigned int pinned_list(struct ledger *l, struct pinned *out)
{
	unsigned int n = 0;

	for (unsigned int w = 0; w < PINNED_WORDS; w++)
		for (unsigned int i = 0; i < l->fifo_len[w]; i++)
			out[n++] = (struct pinned){ WORD_OFF(w), i, l->width[l->fifo[w][i]] };
	return n;
}

static unsigned int timed_outstanding(struct ledger *l)
{
	unsigned int n = 0;

	for (int ud = UD_PINNED_END; ud < UD_TIMED_END; ud++)
		n += l->nd_count[ud];
	return n;
}

/* A pinned wait of ours as WAITERS shows it; false after a finding. */
static bool pinned_entry_is(const struct syncmem_waiter_entry *e, const struct pinned *p,
			    const char *what)
{
	if (e->offset == p->offset && e->position == p->position && e->size == p->size &&
	    e->flags == SYNCMEM_WAITER_ASYNC && e->pid == getpid() && !e->tid && !e->owner &&
	    e->deadline_ns == SYNCMEM_NO_DEADLINE)
		return true;
	finding("ledger: WAITERS lists (%#llx, %u) size %u flags %#x pid %d tid %d owner %#llx deadline %#llx where our pinned wait (%#llx, %u) of size %u waits: %s",
		(unsigned long long)e->offset, e->position, e->size, e->flags, e->pid, e->tid,
		(unsigned long long)e->owner, (unsigned long long)e->deadline_ns,
		(unsigned long long)p->offset, p->position, p->size, what);
	return false;
}

static uint32_t pick_list_count(struct thread_ctx *t)
{
	static const uint32_t counts[] = { 0, 1, 2, 3, 8, 24, 255, 256, 257, SYNCMEM_LIST_MAX };

	return counts[rng_below(&t->rng, sizeof(counts) / sizeof(counts[0]))];
}

/* WAITERS of one pinned word, from a cursor in it or not: exactly its fifo. */
static void waiters_word(struct thread_ctx *t, struct ledger *l)
{
	unsigned int w = (unsigned int)rng_below(&t->rng, PINNED_WORDS), len = l->fifo_len[w];
	bool from = rng_chance(&t->rng, 1, 3);
	uint32_t count = pick_list_count(t), pos = from ? (uint32_t)rng_below(&t->rng, len + 2) : 0;
	struct syncmem_waiter_entry *e = calloc(count ? count : 1, sizeof(*e));
	struct syncmem_waiter_list in = {
		.entries = (uintptr_t)e, .count = count, .offset = WORD_OFF(w), .position = pos,
		.flags = SYNCMEM_WAITERS_WORD | (from ? SYNCMEM_WAITERS_FROM : 0),
	}, arg = in;
	uint64_t want = len > pos ? len - pos : 0;
	char what[120];
	long ret;

	if (!e)
		return;
	ret = xioctl(l->region, SYNCMEM_IOC_WAITERS, &arg);
	snprintf(what, sizeof(what), "WAITERS of pinned word %u (%u waiting) from position %u, count %u",
		 w, len, pos, count);
	if (!ALLOWED(l, OP_WAITERS, ret, what, 0) || ret ||
	    !waiters_sane(&in, &arg, e, REGION_BYTES, what)) {
		free(e);
		return;
	}
	if (arg.total != want)
		finding("ledger: WAITERS counted %llu, %llu of our pinned waits are there: %s",
			(unsigned long long)arg.total, (unsigned long long)want, what);
	for (uint32_t i = 0; i < arg.count && pos + i < len; i++) {
		struct pinned p = { WORD_OFF(w), pos + i, l->width[l->fifo[w][pos + i]] };

		if (!pinned_entry_is(&e[i], &p, what))
			break;
	}
	free(e);
}

/* WAITERS of the whole region in pages from a cursor: the pinned ones exactly. */
static void waiters_all(struct thread_ctx *t, struct ledger *l)
{
	struct pinned want[UD_PINNED_END];
	unsigned int npinned = pinned_list(l, want), timed = timed_outstanding(l);
	unsigned int first = 0, k, ntimed = 0, pages = 0;
	uint32_t page = rng_chance(&t->rng, 1, 2) ? 1 + (uint32_t)rng_below(&t->rng, 8) :
			SYNCMEM_LIST_MAX;
	struct syncmem_waiter_entry *e = calloc(page, sizeof(*e));
	struct syncmem_waiter_list in = { .entries = (uintptr_t)e, .count = page }, arg;
	uint64_t total = 0;
	bool done = false;
	char what[160];

	if (!e)
		return;
	if (rng_chance(&t->rng, 1, 2)) {	/* from a cursor, aligned or not */
		in.flags = SYNCMEM_WAITERS_FROM;
		in.offset = rng_below(&t->rng, 140);
		in.position = (uint32_t)rng_below(&t->rng, 3);
		while (first < npinned && (want[first].offset < in.offset ||
		       (want[first].offset == in.offset && want[first].position < in.position)))
			first++;
	}
	snprintf(what, sizeof(what), "WAITERS of the private region from (%#llx, %u) in pages of %u, %u pinned and %u timed waits",
		 (unsigned long long)in.offset, in.position, page, npinned, timed);
	k = first;
	for (; pages < 64 && !done; pages++) {
		long ret;

		arg = in;
		ret = xioctl(l->region, SYNCMEM_IOC_WAITERS, &arg);
		if (!ALLOWED(l, OP_WAITERS, ret, what, 0) || ret ||
		    !waiters_sane(&in, &arg, e, REGION_BYTES, what))
			goto out;
		if (!pages)
			total = arg.total;
		for (uint32_t i = 0; i < arg.count; i++) {
			const struct syncmem_waiter_entry *x = &e[i];

			if (x->offset < WORD_OFF(PINNED_WORDS)) {
				if (k == npinned) {
					finding("ledger: WAITERS lists (%#llx, %u) past our %u pinned waits: %s",
						(unsigned long long)x->offset, x->position, npinned, what);
					goto out;
				}
				if (!pinned_entry_is(x, &want[k++], what))
					goto out;
			} else if (x->offset < WORD_OFF(TIMED_WORD0 + 8) && x->size == 4 &&
				   x->flags == SYNCMEM_WAITER_ASYNC && x->pid == getpid() &&
				   x->deadline_ns != SYNCMEM_NO_DEADLINE) {
				ntimed++;
			} else {
				finding("ledger: WAITERS lists (%#llx, %u) size %u flags %#x pid %d, not one of our waits: %s",
					(unsigned long long)x->offset, x->position, x->size, x->flags,
					x->pid, what);
				goto out;
			}
		}
		done = arg.count < page || e[arg.count - 1].position == UINT32_MAX;
		in.flags = SYNCMEM_WAITERS_FROM;
		if (arg.count) {
			in.offset = e[arg.count - 1].offset;
			in.position = e[arg.count - 1].position + 1;
		}
	}
	if (total < npinned - first || total > npinned - first + timed || ntimed > timed ||
	    (done && k != npinned))
		finding("ledger: WAITERS counted %llu and listed %u pinned and %u timed waits in %u pages: %s",
			(unsigned long long)total, k - first, ntimed, pages, what);
out:
	free(e);
}

/* WHO of a word holding what this thread stored there. */
static void who(struct thread_ctx *t, struct ledger *l)
{
	unsigned int w = WHO_WORD0 + (unsigned int)rng_below(&t->rng, 8);
	uint64_t bits = rng_below(&t->rng, 4) << 62, value = 0;
	struct syncmem_who in = { .offset = WORD_OFF(w) }, arg;
	uint32_t state = SYNCMEM_WHO_FREE, flags = 0;
	int32_t pid = 0, tid = 0;
	const char *kind = "free";
	char what[160];
	long want = 0, ret;

	switch (rng_below(&t->rng, 9)) {
	case 0:
		break;
	case 1: case 2: {
		bool process = rng_chance(&t->rng, 1, 2);
		struct syncmem_owner own = { .flags = process ? SYNCMEM_OWNER_PROCESS : 0 };

		ret = xioctl(l->region, SYNCMEM_IOC_OWNER, &own);
		if (!tally(OP_OWNER, ret, DOCUMENTED, "ledger: OWNER for WHO") || ret)
			return;
		value = own.id;
		state = SYNCMEM_WHO_ALIVE;
		pid = getpid();
		if (process) {
			flags = SYNCMEM_WHO_PROCESS;
			kind = "our process's id";
		} else {
			tid = t->tid;
			kind = "our thread's id";
		}
		break;
	}
	case 3:
		value = SYNCMEM_OWNER_NOBODY;
		state = SYNCMEM_WHO_NOBODY;
		kind = "NOBODY";
		break;
	case 4:
		value = SYNCMEM_OWNER_GONE;
		state = SYNCMEM_WHO_GONE;
		kind = "GONE";
		break;
	case 5:
		value = SYNCMEM_OWNER_NOTRECOVERABLE;
		state = SYNCMEM_WHO_NOTRECOVERABLE;
		kind = "NOTRECOVERABLE";
		break;
	case 6:
		value = SYNCMEM_OWNER_NOBODY - 1 - rng_below(&t->rng, 1u << 30);
		state = SYNCMEM_WHO_DEAD;
		kind = "an id never issued";
		break;
	case 7:
		switch (rng_below(&t->rng, 3)) {
		case 0:
			in.offset += 1 + rng_below(&t->rng, 7);
			break;
		case 1:
			in.offset = rng_chance(&t->rng, 1, 2) ? REGION_BYTES : REGION_BYTES - 4;
			break;
		default:
			in.offset = UINT64_MAX - 7;
			break;
		}
		want = -EINVAL;
		kind = "a bad offset";
		break;
	default:
		in.flags = bad_bits(t, 0);
		want = -EINVAL;
		kind = "flags";
		break;
	}
	value |= bits;
	atomic_store((_Atomic uint64_t *)&l->words[w], value);
	in.word = rng_next(&t->rng);	/* garbage the kernel must overwrite */
	in.pid = in.tid = -1;
	in.state = 77;
	arg = in;
	ret = xioctl(l->region, SYNCMEM_IOC_WHO, &arg);
	snprintf(what, sizeof(what), "WHO of private word at %#llx holding %#llx (%s) flags %#x",
		 (unsigned long long)in.offset, (unsigned long long)value, kind, in.flags);
	if (!ALLOWED(l, OP_WHO, ret, what, want) || ret || !who_sane(&in, &arg, what))
		return;
	if (arg.word != value || arg.state != state || arg.pid != pid || arg.tid != tid ||
	    arg.flags != flags)
		finding("ledger: WHO said word %#llx state %u pid %d tid %d flags %#x, expected state %u pid %d tid %d flags %#x: %s",
			(unsigned long long)arg.word, arg.state, arg.pid, arg.tid, arg.flags, state,
			pid, tid, flags, what);
}

/* What OBJECT_NAME must return, by the names this thread gave. */
static long name_want(struct ledger *l, const struct syncmem_object_name *arg, long defect)
{
	const struct objname *n;

	if (defect)
		return defect;
	n = &l->names[arg->offset / 4];
	if (!arg->name)
		return n->len ? 0 : -ENOENT;
	return n->len || l->nnames < SYNCMEM_OBJECTS_MAX ? 0 : -ENOSPC;
}

/* OBJECT_NAME on the private region, judged exactly; the model follows. */
static long name_call(struct ledger *l, const struct syncmem_object_name *arg, long want,
		      const char *why)
{
	struct syncmem_object_name copy = *arg;
	struct objname *n;
	char what[200];
	long ret;

	ret = xioctl(l->region, SYNCMEM_IOC_OBJECT_NAME, &copy);
	snprintf(what, sizeof(what), "ledger OBJECT_NAME (%s) at %#llx size %llu kind %u name_len %u, %u names",
		 why, (unsigned long long)arg->offset, (unsigned long long)arg->size, arg->kind,
		 arg->name_len, l->nnames);
	if (!ALLOWED(l, OP_OBJECT_NAME, ret, what, want) || ret || want)
		return ret;
	n = &l->names[arg->offset / 4];
	if (!arg->name) {
		*n = (struct objname){ 0 };
		l->nnames--;
		return ret;
	}
	if (!n->len)
		l->nnames++;
	*n = (struct objname){ .size = arg->size, .kind = arg->kind, .len = arg->name_len };
	memcpy(n->name, (const char *)(uintptr_t)arg->name, arg->name_len);
	return ret;
}

static void name(struct thread_ctx *t, struct ledger *l)
{
	bool remove = rng_chance(&t->rng, 1, 4);
	uint64_t slot = rng_chance(&t->rng, 3, 4) ? rng_below(&t->rng, 32) :
			rng_below(&t->rng, NAME_SLOTS);
	int defect = rng_chance(&t->rng, 1, 3) ? (int)rng_below(&t->rng, name_defects(remove)) : -1;
	struct syncmem_object_name arg;
	const char *why;
	char buf[64];
	long err;

	object_name_args(&t->rng, REGION_BYTES, slot * 4, remove, defect, buf, &arg, &err, &why);
	name_call(l, &arg, name_want(l, &arg, err), why);
}

/* Name free slots up to SYNCMEM_OBJECTS_MAX, then one more; rename, remove. */
static void fill_names(struct thread_ctx *t, struct ledger *l)
{
	struct syncmem_object_name arg = { .kind = SYNCMEM_KIND_OTHER, .size = 4 };
	char buf[24];
	unsigned int slot, removals = (unsigned int)rng_below(&t->rng, SYNCMEM_OBJECTS_MAX + 1);

	arg.name = (uintptr_t)buf;
	for (slot = 0; slot < NAME_SLOTS && l->nnames < SYNCMEM_OBJECTS_MAX; slot++) {
		if (l->names[slot].len)
			continue;
		arg.offset = slot * 4;
		arg.name_len = (uint32_t)snprintf(buf, sizeof(buf), "slot %u", slot);
		if (name_call(l, &arg, 0, "filling"))
			return;	/* a finding, or a limit */
	}
	/* One more at a free offset: -ENOSPC. */
	while (slot < NAME_SLOTS && l->names[slot].len)
		slot++;
	if (slot < NAME_SLOTS) {
		arg.offset = slot * 4;
		arg.name_len = (uint32_t)snprintf(buf, sizeof(buf), "one too many");
		name_call(l, &arg, name_want(l, &arg, 0), "one past SYNCMEM_OBJECTS_MAX");
	}
	/* Renaming an object needs no room. */
	arg.offset = rng_below(&t->rng, 32) * 4;
	arg.name_len = (uint32_t)snprintf(buf, sizeof(buf), "renamed");
	name_call(l, &arg, name_want(l, &arg, 0), "renaming");
	arg = (struct syncmem_object_name){ 0 };
	for (slot = (unsigned int)rng_below(&t->rng, NAME_SLOTS); removals; removals--) {
		slot = (slot + 1) % NAME_SLOTS;
		arg.offset = slot * 4;
		name_call(l, &arg, name_want(l, &arg, 0), "removing");
	}
}

/*
 * One OBJECTS or ARMED call (one argument layout) of the private region,
 * @have @things there, sometimes with one defect and its errno expected.
 * Returns the entries (the caller frees them) when the call succeeded
 * through a good pointer and the answer is one to compare with ours.
 */
static void *ledger_list(struct thread_ctx *t, struct ledger *l, unsigned long req, int op,
			 const char *call, size_t esize, unsigned int have, const char *things,
			 struct syncmem_object_list *in, struct syncmem_object_list *arg,
			 char *what, size_t cap)
{
	uint32_t count = pick_list_count(t);
	void *e = malloc((count ? count : 1) * esize);
	bool bad = false;
	const char *why = "";
	long want = 0, ret;

	if (!e)
		return NULL;
	memset(e, 0x5a, (count ? count : 1) * esize);
	*in = (struct syncmem_object_list){ .entries = (uintptr_t)e, .count = count };
	switch (rng_below(&t->rng, 12)) {
	case 0:
		in->flags = bad_bits(t, 0);
		want = -EINVAL;
		why = ", flags";
		break;
	case 1:
		in->count = SYNCMEM_LIST_MAX + 1;
		want = -EINVAL;
		why = ", count above SYNCMEM_LIST_MAX";
		break;
	case 2:
		in->entries = (uintptr_t)bad_pointer(&t->rng, true);
		want = count && have ? -EFAULT : 0;
		bad = true;
		why = ", entries pointer faults";
		break;
	}
	*arg = *in;
	ret = xioctl(l->region, req, arg);
	snprintf(what, cap, "ledger %s count %u with %u %s%s", call, in->count, have, things, why);
	if (!ALLOWED(l, op, ret, what, want) || ret || bad) {
		free(e);
		return NULL;
	}
	return e;
}

/* OBJECTS of the private region: exactly our names, by offset. */
static void objects(struct thread_ctx *t, struct ledger *l)
{
	struct syncmem_object_list in, arg;
	struct syncmem_object_entry *e;
	char what[160];
	uint32_t i = 0;

	e = ledger_list(t, l, SYNCMEM_IOC_OBJECTS, OP_OBJECTS, "OBJECTS", sizeof(*e), l->nnames,
			"names", &in, &arg, what, sizeof(what));
	if (!e || !objects_sane(&in, &arg, e, REGION_BYTES, what))
		goto out;
	if (arg.total != l->nnames)
		finding("ledger: OBJECTS counted %llu names, we gave %u: %s",
			(unsigned long long)arg.total, l->nnames, what);
	for (uint32_t slot = 0; slot < NAME_SLOTS && i < arg.count; slot++) {
		const struct objname *n = &l->names[slot];

		if (!n->len)
			continue;
		if (e[i].offset != slot * 4 || e[i].size != n->size || e[i].kind != n->kind ||
		    e[i].name_len != n->len || memcmp(e[i].name, n->name, sizeof(n->name))) {
			finding("ledger: OBJECTS entry %u is \"%.47s\" at %#llx size %llu kind %u, we named \"%s\" at %#x size %llu kind %u: %s",
				i, e[i].name, (unsigned long long)e[i].offset,
				(unsigned long long)e[i].size, e[i].kind, n->name, slot * 4,
				(unsigned long long)n->size, n->kind, what);
			break;
		}
		i++;
	}
out:
	free(e);
}

/* Action @i of ours as ARMED lists it; false after a finding. */
static bool armed_entry_is(struct ledger *l, const struct syncmem_armed_entry *e, unsigned int i,
			   const char *what)
{
	const struct armed *a = &l->armed[i];
	uint32_t flags = (a->if_equal ? SYNCMEM_ARMED_IF_EQUAL : 0) |
			 (a->add ? SYNCMEM_ARMED_ADD : 0);

	if (e->offset == WORD_OFF(a->word) && e->size == a->width && e->value == a->value &&
	    e->expected == (a->if_equal ? a->expected : 0) && e->flags == flags &&
	    e->pid == getpid() && !e->pad)
		return true;
	finding("ledger: ARMED lists action %u at %#llx size %u value %#llx expected %#llx flags %#x pid %d pad %u, we (pid %d) armed ud %llu at %#llx size %u value %#llx expected %#llx flags %#x: %s",
		i, (unsigned long long)e->offset, e->size, (unsigned long long)e->value,
		(unsigned long long)e->expected, e->flags, e->pid, e->pad, (int)getpid(),
		(unsigned long long)a->user_data, (unsigned long long)WORD_OFF(a->word), a->width,
		(unsigned long long)a->value, (unsigned long long)(a->if_equal ? a->expected : 0),
		flags, what);
	return false;
}

/* ARMED of the private region: exactly our actions, in arming order, with our pid. */
static void armed(struct thread_ctx *t, struct ledger *l)
{
	struct syncmem_object_list in, arg;
	struct syncmem_armed_entry *e;
	char what[160];

	e = ledger_list(t, l, SYNCMEM_IOC_ARMED, OP_ARMED, "ARMED", sizeof(*e), l->narmed,
			"armed", &in, &arg, what, sizeof(what));
	if (!e || !armed_sane(&in, &arg, e, REGION_BYTES, what))
		goto out;
	if (arg.total != l->narmed) {
		finding("ledger: ARMED counted %llu actions, we armed %u: %s",
			(unsigned long long)arg.total, l->narmed, what);
		goto out;
	}
	for (uint32_t i = 0; i < arg.count; i++)
		if (!armed_entry_is(l, &e[i], i, what))
			break;
out:
	free(e);
}

/* The word a pending pinned wait waits on; -1 if none. */
static int pinned_word(struct ledger *l, uint64_t ud)
{
	for (int w = 0; w < PINNED_WORDS; w++)
		for (int i = 0; i < l->fifo_len[w]; i++)
			if (l->fifo[w][i] == ud)
				return w;
	return -1;
}

/* The private region's fdinfo: our names, our pinned waiters first. */
static void fdinfo_region(struct thread_ctx *t, struct ledger *l, struct fdinfo *fi)
{
	struct pinned want[UD_PINNED_END];
	unsigned int npinned = pinned_list(l, want), timed = timed_outstanding(l), k = 0, listed;
	const char *what = "fdinfo of the ledger's region";
	struct stat st;
	long ret;

	ret = fdinfo_read(&t->rng, l->region, fi);
	if (ret == -ENOMEM || !tally(OP_FDINFO, ret, DOCUMENTED, what) || ret < 0)
		return;
	if (fi->bad[0]) {
		finding("ledger: %s is malformed: %s", what, fi->bad);
		return;
	}
	listed = fi->nwaits < FDINFO_MAX ? fi->nwaits : FDINFO_MAX;
	if (!fi->region || fi->handle || fi->name || fi->named || fi->size != REGION_BYTES ||
	    fi->rdonly || fi->mode < 0 || fi->mode > 0777 || fi->objects != l->nnames ||
	    fi->waiters < npinned || fi->waiters > npinned + timed ||
	    fi->nwaits != (fi->waiters < FDINFO_WAITS ? fi->waiters : FDINFO_WAITS) ||
	    fstat(l->region, &st) || fi->ino != (int64_t)st.st_ino) {
		finding("ledger: %s says size %lld rdonly %lld named %lld objects %lld (we gave %u) waiters %lld (%u pinned, %u timed may be) in %u lines",
			what, (long long)fi->size, (long long)fi->rdonly, (long long)fi->named,
			(long long)fi->objects, l->nnames, (long long)fi->waiters, npinned, timed,
			fi->nwaits);
		return;
	}
	for (unsigned int i = 0; i < listed; i++) {
		const struct fdinfo_entry *x = &fi->waits[i];
		bool ours = x->async && x->pid == getpid() && x->tid == 0 && !x->owner;

		if (x->offset < WORD_OFF(PINNED_WORDS) && k < npinned && ours &&
		    x->offset == want[k].offset && x->position == want[k].position &&
		    x->size == want[k].size) {
			k++;
		} else if (x->offset < WORD_OFF(PINNED_WORDS) || !ours || x->size != 4 ||
			   x->offset >= WORD_OFF(TIMED_WORD0 + 8)) {
			finding("ledger: %s lists waiter %u at (%#llx, %u) size %u pid %d tid %d, after %u of our %u pinned ones",
				what, i, (unsigned long long)x->offset, x->position, x->size, x->pid,
				x->tid, k, npinned);
			return;
		}
	}
	if (k != (npinned < FDINFO_WAITS ? npinned : FDINFO_WAITS)) {
		finding("ledger: %s lists %u of our %u pinned waits", what, k, npinned);
		return;
	}
	/* Our actions on its words, oldest first (a module without ARMED lists none). */
	if (fi->armed < 0)
		return;
	if (fi->armed != l->narmed ||
	    fi->non_close != (l->narmed < FDINFO_WAITS ? l->narmed : FDINFO_WAITS)) {
		finding("ledger: %s counts %lld actions in %u lines, we armed %u", what,
			(long long)fi->armed, fi->non_close, l->narmed);
		return;
	}
	for (unsigned int i = 0; i < fi->non_close; i++) {
		const struct fdinfo_entry *x = &fi->on_close[i];
		const struct armed *a = &l->armed[i];

		if (x->offset != WORD_OFF(a->word) || x->size != a->width || x->value != a->value ||
		    x->pid != getpid()) {
			finding("ledger: %s lists action %u at %#llx size %u value %#llx pid %d, we armed one at %#llx size %u value %#llx",
				what, i, (unsigned long long)x->offset, x->size,
				(unsigned long long)x->value, x->pid,
				(unsigned long long)WORD_OFF(a->word), a->width,
				(unsigned long long)a->value);
			return;
		}
	}
}

/*
 * The private handle's fdinfo: our pending waits (the first 32, oldest
 * first), our waits outstanding (pending, or completed and not read; one
 * may be freed a little after its record was read) and our actions (their
 * count, and the first 32 in arming order).
 */
static void fdinfo_handle(struct thread_ctx *t, struct ledger *l, struct fdinfo *fi)
{
	unsigned int sure = count_pending(l, P_SURE, 0, UD_PINNED_END), nd = 0, k = 0;
	const char *what = "fdinfo of the ledger's handle";
	uint8_t shown[UD_END] = { 0 };
	uint64_t done[UD_PINNED_END];
	struct stat st;
	long ret;

	for (int ud = 0; ud < UD_END; ud++)
		nd += l->nd_count[ud];
	ret = fdinfo_read(&t->rng, l->handle, fi);
	if (ret == -ENOMEM || !tally(OP_FDINFO, ret, DOCUMENTED, what) || ret < 0)
		return;
	if (fi->bad[0]) {
		finding("ledger: %s is malformed: %s", what, fi->bad);
		return;
	}
	if (!fi->handle || fi->region || fi->eventfd != 1 ||
	    fi->outstanding < sure + l->expect_len + nd ||
	    fi->nwaits < (sure < FDINFO_WAITS ? sure : FDINFO_WAITS) ||
	    fi->nwaits > (sure + nd < FDINFO_WAITS ? sure + nd : FDINFO_WAITS) ||
	    fi->armed != l->narmed ||
	    fi->non_close != (l->narmed < FDINFO_WAITS ? l->narmed : FDINFO_WAITS) ||
	    fstat(l->region, &st)) {
		finding("ledger: %s says eventfd %lld outstanding %lld (%u pinned pending, %u records due, %u others), %u waits pending listed, %lld actions armed in %u lines (%u)",
			what, (long long)fi->eventfd, (long long)fi->outstanding, sure, l->expect_len,
			nd, fi->nwaits, (long long)fi->armed, fi->non_close, l->narmed);
		return;
	}
	/* The pinned waits, oldest first, each on its word. */
	for (int n = 0; n < (int)sure; n++) {
		uint64_t best = UD_END;

		for (uint64_t ud = 0; ud < UD_PINNED_END; ud++)
			if (l->pending[ud] == P_SURE && (!n || l->seq[ud] > l->seq[done[n - 1]]) &&
			    (best == UD_END || l->seq[ud] < l->seq[best]))
				best = ud;
		done[n] = best;
	}
	for (unsigned int i = 0; i < fi->nwaits && i < FDINFO_MAX; i++) {
		const struct fdinfo_entry *x = &fi->waits[i];
		uint64_t ud = x->user_data;
		int w = ud < UD_PINNED_END ? pinned_word(l, ud) : -1;

		if (ud < UD_PINNED_END && k < sure && ud == done[k] && w >= 0 &&
		    x->region == (uint64_t)st.st_ino && x->offset == WORD_OFF(w) &&
		    x->size == l->width[ud]) {
			k++;
			continue;
		}
		if (ud >= UD_PINNED_END && ud < UD_END && ++shown[ud] <= l->nd_count[ud])
			continue;
		finding("ledger: %s lists a wait of user_data %llu at %#llx size %u (%u of our %u pinned ones listed before)",
			what, (unsigned long long)ud, (unsigned long long)x->offset, x->size, k, sure);
		return;
	}
	/* All of them, unless the list was cut (then the oldest ones). */
	if (k != sure && fi->nwaits < FDINFO_WAITS) {
		finding("ledger: %s lists %u of our %u pinned waits", what, k, sure);
		return;
	}
	/* The oldest ones, in arming order. */
	for (unsigned int i = 0; i < fi->non_close; i++) {
		const struct fdinfo_entry *x = &fi->on_close[i];
		const struct armed *a = &l->armed[i];

		if (x->user_data != a->user_data || x->offset != WORD_OFF(a->word) ||
		    x->size != a->width || x->value != a->value ||
		    x->region != (uint64_t)st.st_ino) {
			finding("ledger: %s lists action %u as user_data %llu at %#llx size %u value %#llx, we armed %llu at %#llx size %u value %#llx",
				what, i, (unsigned long long)x->user_data,
				(unsigned long long)x->offset, x->size, (unsigned long long)x->value,
				(unsigned long long)a->user_data,
				(unsigned long long)WORD_OFF(a->word), a->width,
				(unsigned long long)a->value);
			return;
		}
	}
}

static void ledger_fdinfo(struct thread_ctx *t, struct ledger *l)
{
	struct fdinfo *fi = malloc(sizeof(*fi));

	if (!fi)
		return;
	if (rng_chance(&t->rng, 1, 2))
		fdinfo_region(t, l, fi);
	else
		fdinfo_handle(t, l, fi);
	free(fi);
}

static void introspect(struct thread_ctx *t, struct ledger *l)
{
	if (!shared->introspect)
		return;
	switch (rng_below(&t->rng, 35)) {
	case 0: case 1: case 2: case 3: case 4: case 5:
		waiters_word(t, l);
		break;
	case 6: case 7: case 8: case 9:
		waiters_all(t, l);
		break;
	case 10: case 11: case 12: case 13:
		who(t, l);
		break;
	case 14: case 15: case 16: case 17: case 18: case 19:
		name(t, l);
		break;
	case 20:
		fill_names(t, l);
		break;
	case 21: case 22: case 23: case 24:
		objects(t, l);
		break;
	case 25: case 26: case 27:
		armed(t, l);
		break;
	default:
		if (shared->fdinfo)
			ledger_fdinfo(t, l);
		break;
	}
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
	else if (k < 94)
		introspect(t, l);
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
	/* Nothing pending, nothing to read: the fdinfo of both says so. */
	if (shared->introspect && shared->fdinfo)
		ledger_fdinfo(t, l);
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
	/* Its fd out of the table's reach too; without a ring, NOTIFY stays an ioctl. */
	if (!io_uring_queue_init(4, &l->ring, 0)) {
		l->ring.ring_fd = fd_move_above(l->ring.ring_fd, PRIVATE_FD_BASE);
		l->ring.enter_ring_fd = l->ring.ring_fd;
		if (l->ring.ring_fd >= 0)
			l->ring_up = true;
		else
			io_uring_queue_exit(&l->ring);
	}
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

/*
 * After the handle was closed: how many of our actions ARMED still lists
 * (they run oldest first, so the newest ones; a child forked meanwhile
 * may hold the handle a little longer); -1 after a finding.
 */
static int armed_left(struct ledger *l)
{
	struct syncmem_armed_entry e[ARM_MAX];
	struct syncmem_armed_list arg = { .entries = (uintptr_t)e, .count = ARM_MAX };
	const char *what = "ledger ARMED after the handle closed";
	long ret = xioctl(l->region, SYNCMEM_IOC_ARMED, &arg);
	uint32_t n = (uint32_t)arg.total;

	if (!tally(OP_ARMED, ret, limit_hit(ret) ? DOCUMENTED : EXACTLY(0), what))
		return -1;
	if (ret)
		return l->narmed;	/* try again */
	if (arg.total > l->narmed || arg.count != n) {
		finding("ledger: ARMED lists %u of %llu actions, %u were armed when the handle closed",
			arg.count, (unsigned long long)arg.total, l->narmed);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!armed_entry_is(l, &e[i], l->narmed - n + i, what))
			return -1;
	return (int)n;
}

void ledger_close(struct thread_ctx *t, struct ledger *l)
{
	uint64_t want[8], until;
	bool done = false, armed_check = shared->introspect;
	int left = 0;

	(void)t;
	for (int i = 0; i < 8; i++)
		want[i] = atomic_load((_Atomic uint64_t *)&l->words[ARMED_WORD0 + i]);
	for (unsigned int i = 0; i < l->narmed; i++) {
		const struct armed *a = &l->armed[i];
		uint64_t mask = a->width == 4 ? 0xffffffffull : ~0ull;
		uint64_t *w = &want[a->word - ARMED_WORD0];

		if (a->add)
			*w = (*w & ~mask) | ((*w - a->value) & mask);
		else if (!a->if_equal || (*w & mask) == a->expected)
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
		/* Nothing is listed once they ran (a finding stops the checks). */
		if (armed_check) {
			left = armed_left(l);
			armed_check = left > 0;
			done &= left <= 0;
		}
	}
	if (armed_check && left > 0)
		finding("ledger: ARMED still lists %d of the %u actions 5 s after their handle closed",
			left, l->narmed);
	if (!done)
		for (int i = 0; i < 8; i++)
			if (l->words[ARMED_WORD0 + i] != want[i])
				finding("ledger: after the handle closed with %u actions armed, word %d holds %#llx, expected %#llx",
					l->narmed, ARMED_WORD0 + i,
					(unsigned long long)l->words[ARMED_WORD0 + i],
					(unsigned long long)want[i]);
	munmap(l->words, REGION_BYTES);
	close(l->region);
	if (l->ring_up)
		io_uring_queue_exit(&l->ring);
	free(l);
}
