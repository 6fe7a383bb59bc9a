/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An acquisition that waits on one word in FIFO order and may be handed the
 * object directly by the kernel (gate, semaphore): the blocking and the
 * event-loop driver of the same small state machine.
 */
#ifndef SYNCMEM_ACQUIRE_H
#define SYNCMEM_ACQUIRE_H

#include "internal.h"

struct syncmem__acq;

struct syncmem__acq_ops {
	/*
	 * Try to take the object: 1 taken, 0 not now (set *@expected, the
	 * word's value to sleep on), or a negative errno.
	 */
	int (*try)(struct syncmem__acq *a, uint64_t *expected);
	/*
	 * A hand-off gave the object to this waiter. (A waiter that gives up
	 * has nothing to undo: what try() announced in the word, a waiters
	 * mark, costs the next release one system call and no more.)
	 */
	void (*handed)(struct syncmem__acq *a);
	/* Return an object taken but not delivered (an async call that failed). */
	void (*give_back)(struct syncmem_region *r, struct syncmem__acq *a);
};

struct syncmem__acq {
	const struct syncmem__acq_ops *ops;
	void *obj;		/* the gate or semaphore */
	void *word;		/* the word its waiters sleep on */
	uint32_t width;		/* 4 or 8 */
	/*
	 * Non-zero: @word is an owner word and waits are owner waits as this
	 * id (the thread's; an async acquisition waits as the process). Such
	 * a wait may be given the object after a dead holder: -EOWNERDEAD.
	 */
	uint64_t owner;
};

/* Blocking: 0, -EOWNERDEAD (taken after a dead holder), -ETIMEDOUT or -errno. */
int syncmem__acquire(struct syncmem_region *r, struct syncmem__acq *a, int64_t timeout_ns);

/*
 * From the loop: cb(arg, 0) or cb(arg, -EOWNERDEAD) with the object taken,
 * or cb(arg, -errno) (-ETIMEDOUT once @timeout_ns passed). With @id_out
 * it can be aborted (syncmem_loop_abort()) while its wait is queued: *@id_out
 * names it. -ETIMEDOUT at once (nothing queued, @cb never runs) when
 * @timeout_ns is 0 and the object cannot be taken now.
 */
int syncmem__acquire_async(struct syncmem_loop *loop, struct syncmem_region *r,
			   const struct syncmem__acq *a, int64_t timeout_ns, syncmem_wait_cb cb,
			   void *arg, uint64_t *id_out);

#endif /* SYNCMEM_ACQUIRE_H */
