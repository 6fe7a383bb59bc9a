// SPDX-License-Identifier: GPL-2.0
/*
 * Async waits on the handles of the table, which several threads (and,
 * after fork or fd passing, processes) use at once: WAIT_ASYNC with
 * user_data from a small set (so -EEXIST and cancels of the wrong wait
 * happen), CANCEL of one and of all, POST, read() of the records and poll(),
 * while notifies, hand-offs, deadlines and closes complete them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz.h"

int32_t pick_post_result(struct rng *r)
{
	return POST_RESULT_BASE + (int32_t)rng_below(r, POST_RESULT_SPAN);
}

bool record_plausible(const struct syncmem_completion *c)
{
	switch (c->result) {
	case SYNCMEM_WAIT_WOKEN:
	case SYNCMEM_WAIT_TIMED_OUT:
	case SYNCMEM_WAIT_HANDED_OFF:
	case -ECANCELED:
		return !c->pad;
	default:
		return !c->pad && c->result >= POST_RESULT_BASE &&
		       c->result < POST_RESULT_BASE + POST_RESULT_SPAN;
	}
}

static uint64_t pick_user_data(struct rng *r)
{
	return rng_chance(r, 9, 10) ? rng_below(r, 16) : rng_next(r);
}

static void wait_async(struct thread_ctx *t, const struct obj *h, int slot)
{
	uint32_t width = rng_chance(&t->rng, 1, 4) ? 8 : 4;
	struct syncmem_wait_async arg = {
		.size = width,
		.deadline_ns = pick_deadline(&t->rng, rng_chance(&t->rng, 1, 2)),
		.user_data = pick_user_data(&t->rng),
	};
	char what[200];
	struct obj r;
	int rslot;
	long ret;

	if (!obj_pick(&t->rng, K_REGION, &r, &rslot))
		return;
	arg.region_fd = r.fd;
	arg.offset = pick_offset(&t->rng, r.size, width);
	arg.expected = pick_expected(&t->rng, r.rid, arg.offset, width);
	ret = xioctl(h->fd, SYNCMEM_IOC_WAIT_ASYNC, &arg);
	snprintf(what, sizeof(what), "handle %d region fd %d (%llu bytes) offset %llu size %u expected %#llx ud %llu",
		 h->fd, r.fd, (unsigned long long)r.size, (unsigned long long)arg.offset, width,
		 (unsigned long long)arg.expected, (unsigned long long)arg.user_data);
	tally(OP_WAIT_ASYNC, ret,
	      if_stable(DOCUMENTED, obj_unchanged(slot, h) && obj_unchanged(rslot, &r)), what);
}

static void cancel(struct thread_ctx *t, const struct obj *h, int slot, bool all)
{
	struct syncmem_cancel arg = {
		.user_data = pick_user_data(&t->rng),
		.flags = all ? SYNCMEM_CANCEL_ALL : 0,
	};
	long ret = xioctl(h->fd, SYNCMEM_IOC_CANCEL, &arg);

	tally(all ? OP_CANCEL_ALL : OP_CANCEL, ret,
	      if_stable(DOCUMENTED, obj_unchanged(slot, h)), all ? "CANCEL_ALL" : "CANCEL");
}

static void post(struct thread_ctx *t, const struct obj *h, int slot)
{
	struct syncmem_post arg = {
		.user_data = pick_user_data(&t->rng),
		.result = pick_post_result(&t->rng),
	};
	long ret = xioctl(h->fd, SYNCMEM_IOC_POST, &arg);

	tally(OP_POST, ret, if_stable(DOCUMENTED, obj_unchanged(slot, h)), "POST");
}

static void read_records(struct thread_ctx *t, const struct obj *h, int slot)
{
	struct syncmem_completion recs[9];
	struct pollfd pfd = { .fd = h->fd, .events = POLLIN };
	size_t count;
	long ret;
	char what[80];
	bool stable;

	switch (rng_below(&t->rng, 8)) {
	case 0:
		count = rng_below(&t->rng, sizeof(recs[0]));	/* too small */
		break;
	case 1:
		count = sizeof(recs[0]) * (1 + rng_below(&t->rng, 8)) +
			rng_below(&t->rng, sizeof(recs[0]));	/* a partial record */
		break;
	default:
		count = sizeof(recs[0]) * (1 + rng_below(&t->rng, 8));
		break;
	}
	/*
	 * A blocking handle only when records are there (another thread may
	 * still take them first, then this read waits for the next one).
	 */
	if (poll(&pfd, 1, 0) != 1 && !(fcntl(h->fd, F_GETFL) & O_NONBLOCK))
		return;
	if (FOREVER_BEGIN())
		return;	/* a blocking read released by the stop */
	ret = read(h->fd, recs, count);
	if (ret < 0)
		ret = -errno;
	forever_end();
	stable = obj_unchanged(slot, h);
	snprintf(what, sizeof(what), "handle %d count %zu", h->fd, count);
	if (count < sizeof(recs[0]) && stable) {
		tally(OP_READ, ret, EXACTLY(-EINVAL), what);
		return;
	}
	if (!tally(OP_READ, ret, if_stable(DOCUMENTED, stable), what) || ret < 0 || !stable)
		return;
	if (ret == 0 || ret % sizeof(recs[0]) || (size_t)ret > count) {
		finding("read() of %zu bytes returned %ld: %s", count, ret, what);
		return;
	}
	for (long i = 0; i < ret / (long)sizeof(recs[0]); i++)
		if (!record_plausible(&recs[i]))
			finding("a record no wait or post of this run produces: ud %llu result %d pad %u: %s",
				(unsigned long long)recs[i].user_data, recs[i].result,
				recs[i].pad, what);
}

static void poll_handle(struct thread_ctx *t, const struct obj *h, int slot)
{
	struct pollfd pfd = { .fd = h->fd, .events = POLLIN };
	long ret = poll(&pfd, 1, 0);

	if (ret < 0)
		ret = -errno;
	tally(OP_POLL, ret, if_stable(DOCUMENTED, obj_unchanged(slot, h)), "poll");
	(void)t;
}

static void drain_eventfd(struct thread_ctx *t)
{
	struct obj e;
	uint64_t v;
	int slot;

	if (obj_pick(&t->rng, K_EVENTFD, &e, &slot))
		(void)!read(e.fd, &v, sizeof(v));
}

void op_async(struct thread_ctx *t)
{
	struct obj h;
	int slot;

	if (!obj_pick(&t->rng, K_HANDLE, &h, &slot)) {
		open_handle(t);
		return;
	}
	switch (rng_below(&t->rng, 20)) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7:
		wait_async(t, &h, slot);
		break;
	case 8: case 9: case 10:
		cancel(t, &h, slot, false);
		break;
	case 11: case 12:
		cancel(t, &h, slot, true);
		break;
	case 13: case 14:
		post(t, &h, slot);
		break;
	case 15: case 16: case 17:
		read_records(t, &h, slot);
		break;
	case 18:
		poll_handle(t, &h, slot);
		break;
	default:
		drain_eventfd(t);
		break;
	}
}
