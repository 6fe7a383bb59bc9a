// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Waits, lock requests and notifies as io_uring commands in the caller's
 * own ring: each prep call fills one SQE with an IORING_OP_URING_CMD on the
 * region fd (the kernel's SYNCMEM_URING_* commands), and the wait's end is
 * a CQE of that ring. Nothing here makes a system call (io_uring_submit() does) but
 * a process's first syncmem_prep_lock(), which fetches its owner id.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include <liburing.h>
#include <linux/syncmem.h>

#include "internal.h"

_Static_assert(sizeof(struct syncmem_uring_wait) == 16, "sqe->cmd holds 16 bytes");
_Static_assert(sizeof(struct syncmem_uring_cancel) == 16, "sqe->cmd holds 16 bytes");
_Static_assert(sizeof(struct syncmem_uring_lock) == 16, "sqe->cmd holds 16 bytes");
_Static_assert(sizeof(struct syncmem_uring_notify) == 16, "sqe->cmd holds 16 bytes");

/*
 * A relative timeout as the command's 24 bits: the smallest mantissa <<
 * exponent at or above @timeout_ns (negative: none).
 */
static uint32_t uring_timeout(int64_t timeout_ns)
{
	const uint64_t mant_max = (1u << SYNCMEM_URING_TIMEOUT_MANT_BITS) - 1;
	uint64_t t = (uint64_t)timeout_ns;
	uint32_t shift = 0;

	if (timeout_ns < 0)
		return SYNCMEM_URING_NO_TIMEOUT;
	/* Halving rounded up, again and again, is dividing by 2^shift rounded up. */
	while (t > mant_max) {
		t = (t >> 1) + (t & 1);
		shift++;
	}
	return shift << SYNCMEM_URING_TIMEOUT_MANT_BITS | (uint32_t)t;
}

/* Every field of @sqe a command uses, all but user_data (the caller's). */
static void uring_prep(struct io_uring_sqe *sqe, const struct syncmem_region *r,
		       uint32_t cmd_op, const void *cmd)
{
	__u64 user_data = sqe->user_data;

	memset(sqe, 0, sizeof(*sqe));
	sqe->user_data = user_data;
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = r ? r->fd : -1;
	sqe->cmd_op = cmd_op;
	memcpy(sqe->cmd, cmd, 16);
}

static void uring_prep_wait(struct io_uring_sqe *sqe, struct syncmem_region *r,
			    const void *addr, size_t width, uint64_t expected,
			    int64_t timeout_ns)
{
	uint32_t op = width == 8 ? SYNCMEM_URING_WAIT64 : SYNCMEM_URING_WAIT32;
	struct syncmem_uring_wait w = { .offset = UINT64_MAX, .expected = expected };

	if (!sqe)
		return;
	/* A word outside @r: an offset no region has, which the kernel refuses. */
	if (syncmem__word_offset(r, addr, width, &w.offset))
		w.offset = UINT64_MAX;
	uring_prep(sqe, r, SYNCMEM_URING_CMD_OP(op, uring_timeout(timeout_ns)), &w);
}

void syncmem_prep_wait32(struct io_uring_sqe *sqe, struct syncmem_region *r,
			 const uint32_t *addr, uint32_t expected, int64_t timeout_ns)
{
	uring_prep_wait(sqe, r, addr, 4, expected, timeout_ns);
}

void syncmem_prep_wait64(struct io_uring_sqe *sqe, struct syncmem_region *r,
			 const uint64_t *addr, uint64_t expected, int64_t timeout_ns)
{
	uring_prep_wait(sqe, r, addr, 8, expected, timeout_ns);
}

void syncmem_prep_notify(struct io_uring_sqe *sqe, struct syncmem_region *r,
			 const void *addr, uint32_t count)
{
	struct syncmem_uring_notify c = { .offset = UINT64_MAX, .count = count };

	if (!sqe)
		return;
	/* A word outside @r: an offset no region has, which the kernel refuses. */
	if (syncmem__word_offset(r, addr, 4, &c.offset))
		c.offset = UINT64_MAX;
	uring_prep(sqe, r, SYNCMEM_URING_NOTIFY, &c);
}

/*
 * The lock is the process's, as an async acquisition's is (lock.c): any of
 * its threads may unlock it. The kernel checks the id; one that could not
 * be fetched goes as 0, which it refuses (-EINVAL).
 */
void syncmem_prep_lock(struct io_uring_sqe *sqe, struct syncmem_region *r,
		       struct syncmem_lock *l, int64_t timeout_ns)
{
	struct syncmem_uring_lock c = { .offset = UINT64_MAX };
	int64_t id;

	if (!sqe)
		return;
	/* A lock not wholly inside @r: an offset no region has, which the kernel refuses. */
	if (!syncmem__object_offset(r, l, sizeof(*l), 8, &c.offset)) {
		id = syncmem__process_owner(r->fd);
		c.owner = id > 0 ? (uint64_t)id : 0;
	}
	uring_prep(sqe, r, SYNCMEM_URING_CMD_OP(SYNCMEM_URING_LOCK, uring_timeout(timeout_ns)),
		   &c);
}

void syncmem_prep_cancel(struct io_uring_sqe *sqe, struct syncmem_region *r,
			 uint64_t user_data)
{
	struct syncmem_uring_cancel c = { .user_data = user_data };

	if (sqe)
		uring_prep(sqe, r, SYNCMEM_URING_CMD_OP(SYNCMEM_URING_CANCEL, 0), &c);
}
