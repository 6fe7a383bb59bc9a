// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring commands on the region fds of the table (SYNCMEM_URING_*): each
 * thread has its own ring and submits waits of both sizes (mostly with
 * short timeouts, some without), LOCKs of any 8-byte word (as the process,
 * now and then as an id not its own), NOTIFYs (some with bad flags or a
 * timeout, some issued from io-wq), cancels of recent and unknown
 * user_data, and garbage commands, reaps whatever completed, and now and
 * then tears its ring down with commands still parked. A LOCK that took its
 * word keeps it (any word may hold any owner id). Every CQE's res is judged
 * against the documented set; what the fd table's churn changes under a
 * command (a closed or reused fd) is not judged.
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

static __thread struct io_uring ring;
static __thread bool ring_up;
static __thread uint64_t next_ud;

_Static_assert(sizeof(struct syncmem_uring_notify) == sizeof(struct syncmem_uring_wait),
	       "both fill sqe->cmd");

/* The user_data bit of a NOTIFY, whose res is judged as a count. */
#define NOTIFY_UD	(1ULL << 63)
static uint64_t process_owner;	/* 0 until fetched; again after a fork */

static struct io_uring *thread_ring(void)
{
	if (!ring_up && !io_uring_queue_init(64, &ring, IORING_SETUP_CQE32))
		ring_up = true;
	return ring_up ? &ring : NULL;
}

void uring_after_fork(void)
{
	ring_up = false;
	process_owner = 0;
}

/* The process's owner id, as a LOCK names it (0: none could be fetched). */
static uint64_t lock_owner(int fd)
{
	struct syncmem_owner own = { .flags = SYNCMEM_OWNER_PROCESS };
	uint64_t id = __atomic_load_n(&process_owner, __ATOMIC_RELAXED);

	if (!id && !xioctl(fd, SYNCMEM_IOC_OWNER, &own)) {
		id = own.id;
		__atomic_store_n(&process_owner, id, __ATOMIC_RELAXED);
	}
	return id;
}

/* A timeout code: mostly up to ~0.3 s, sometimes none, sometimes anything. */
static uint32_t pick_timeout(struct rng *r)
{
	if (rng_chance(r, 1, 10))
		return SYNCMEM_URING_NO_TIMEOUT;
	if (rng_chance(r, 1, 10))
		return (uint32_t)rng_below(r, 1u << 24);
	return (uint32_t)rng_below(r, 11) << SYNCMEM_URING_TIMEOUT_MANT_BITS |
	       (uint32_t)rng_below(r, 1u << SYNCMEM_URING_TIMEOUT_MANT_BITS);
}

static void reap(void)
{
	struct io_uring_cqe *cqe;
	char what[120];

	while (io_uring_peek_cqe(&ring, &cqe) == 0) {
		snprintf(what, sizeof(what), "uring command ud %llu",
			 (unsigned long long)cqe->user_data);
		/* The fd may have been closed or reused meanwhile: EBADF, EOPNOTSUPP. */
		tally(cqe->user_data & NOTIFY_UD ? OP_URING_NOTIFY : OP_URING_CMD, cqe->res,
		      DOCUMENTED, what);
		io_uring_cqe_seen(&ring, cqe);
	}
}

void op_uring(struct thread_ctx *t)
{
	struct io_uring *rg = thread_ring();
	struct syncmem_uring_wait w;
	struct syncmem_uring_notify n;
	struct io_uring_sqe *sqe;
	uint32_t op, width;
	uint8_t flags = 0;
	struct obj r;
	int slot;

	if (!rg)
		return;
	reap();
	if (rng_chance(&t->rng, 1, 50)) {
		/* Parked commands and all: the module must end them. */
		io_uring_queue_exit(rg);
		ring_up = false;
		return;
	}
	if (!obj_pick(&t->rng, K_REGION, &r, &slot))
		return;
	sqe = io_uring_get_sqe(rg);
	if (!sqe)
		return;
	width = rng_chance(&t->rng, 1, 3) ? 8 : 4;
	w.offset = pick_offset(&t->rng, r.size, width);
	w.expected = pick_expected(&t->rng, r.rid, w.offset, width);
	switch (rng_below(&t->rng, 14)) {
	case 12: case 13:
		/* struct syncmem_uring_notify: {offset, count, flags}. */
		op = rng_chance(&t->rng, 1, 16) ?
		     SYNCMEM_URING_CMD_OP(SYNCMEM_URING_NOTIFY, pick_timeout(&t->rng)) :
		     SYNCMEM_URING_NOTIFY;
		n.offset = pick_offset(&t->rng, r.size, 4);
		n.count = rng_chance(&t->rng, 1, 4) ? UINT32_MAX : (uint32_t)rng_below(&t->rng, 4);
		n.flags = rng_chance(&t->rng, 1, 16) ? (uint32_t)rng_next(&t->rng) : 0;
		memcpy(&w, &n, sizeof(w));
		if (rng_chance(&t->rng, 1, 8))
			flags = IOSQE_ASYNC;
		break;
	case 0: case 1: case 2: case 3: case 4: case 5:
		op = SYNCMEM_URING_CMD_OP(width == 8 ? SYNCMEM_URING_WAIT64 : SYNCMEM_URING_WAIT32,
					  pick_timeout(&t->rng));
		break;
	case 10: case 11:
		/* struct syncmem_uring_lock: {offset, owner}. */
		op = SYNCMEM_URING_CMD_OP(SYNCMEM_URING_LOCK, pick_timeout(&t->rng));
		w.offset = pick_offset(&t->rng, r.size, 8);
		w.expected = rng_chance(&t->rng, 1, 8) ? rng_next(&t->rng) : lock_owner(r.fd);
		break;
	case 6: case 7:
		op = SYNCMEM_URING_CANCEL;
		w.offset = next_ud - rng_below(&t->rng, 4);	/* its user_data */
		w.expected = 0;					/* its pad */
		break;
	default:
		op = (uint32_t)rng_next(&t->rng);
		w.offset = rng_next(&t->rng);
		w.expected = rng_chance(&t->rng, 1, 2) ? 0 : rng_next(&t->rng);
		break;
	}
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, r.fd, NULL, 0, 0);
	sqe->cmd_op = op;
	sqe->flags = flags;
	memcpy(sqe->cmd, &w, sizeof(w));
	/* A garbage op may be a NOTIFY too. */
	io_uring_sqe_set_data64(sqe, ++next_ud |
				((op & SYNCMEM_URING_OP_MASK) == SYNCMEM_URING_NOTIFY ? NOTIFY_UD : 0));
	io_uring_submit(rg);
	reap();
}
