// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The lock model's gate: Lock(OPEN | CLOSED) with wait() and signal().
 *
 * The word: 1 open, 0 closed, 2 closed and maybe waited on. A waiter that
 * finds the gate closed marks it 2 before sleeping on 2, so that signal()
 * knows to go to the kernel; signal() on a gate closed with nobody waiting
 * opens it with one CAS and no system call. With waiters, signal() is the
 * kernel's hand-off: the oldest waiter passes and the gate stays closed (2),
 * or, if they all left meanwhile, the gate opens. The hand-off is decided
 * under the queue lock that waiters enqueue under, so a signal is never
 * lost and never given to two.
 *
 * Any other word value was written by something else than this library:
 * -EUCLEAN, as is a CAS loop that keeps failing (SYNCMEM__RETRY_MAX).
 */
#define _GNU_SOURCE
#include <errno.h>

#include <linux/syncmem.h>

#include "acquire.h"

#define GATE_CLOSED	0u
#define GATE_OPEN	1u
#define GATE_WAITED	2u

_Static_assert(sizeof(struct syncmem_gate) == 64, "struct syncmem_gate layout");

void syncmem_gate_init(struct syncmem_gate *g, bool open)
{
	*g = (struct syncmem_gate){ .word = open ? GATE_OPEN : GATE_CLOSED };
}

static int gate_try(struct syncmem__acq *a, uint64_t *expected)
{
	struct syncmem_gate *g = a->obj;
	uint32_t v = __atomic_load_n(&g->word, __ATOMIC_RELAXED), failed = 0;

	for (;;) {
		if (v == GATE_OPEN) {
			/* Acquire: the signaller's writes happen before our pass. */
			if (__atomic_compare_exchange_n(&g->word, &v, GATE_CLOSED, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 1;
		} else if (v == GATE_WAITED) {
			*expected = GATE_WAITED;
			return 0;
		} else if (v != GATE_CLOSED) {
			return -EUCLEAN;
		} else {
			__atomic_compare_exchange_n(&g->word, &v, GATE_WAITED, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		}
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

/* Pairs with the release exchange in syncmem_gate_signal(). */
static void gate_handed(struct syncmem__acq *a)
{
	(void)__atomic_load_n(&((struct syncmem_gate *)a->obj)->word, __ATOMIC_ACQUIRE);
}

static void gate_abandon(struct syncmem__acq *a)
{
	(void)a;
}

static void gate_give_back(struct syncmem_region *r, struct syncmem__acq *a)
{
	syncmem_gate_signal(r, a->obj);
}

static const struct syncmem__acq_ops gate_ops = {
	.try = gate_try,
	.handed = gate_handed,
	.abandon = gate_abandon,
	.give_back = gate_give_back,
};

static int gate_acq(struct syncmem_region *r, struct syncmem_gate *g, struct syncmem__acq *a)
{
	int err = syncmem__object_writable(r, g, sizeof(*g), &g->word, 4);

	if (err)
		return err;
	*a = (struct syncmem__acq){ .ops = &gate_ops, .obj = g, .word = &g->word, .width = 4 };
	return 0;
}

int syncmem_gate_wait(struct syncmem_region *r, struct syncmem_gate *g, int64_t timeout_ns)
{
	struct syncmem__acq a;
	int err = gate_acq(r, g, &a);

	return err ? err : syncmem__acquire(r, &a, timeout_ns);
}

int syncmem_gate_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			    struct syncmem_gate *g, syncmem_wait_cb cb, void *arg)
{
	struct syncmem__acq a;
	int err = gate_acq(r, g, &a);

	return err ? err : syncmem__acquire_async(loop, r, &a, cb, arg);
}

int syncmem_gate_signal(struct syncmem_region *r, struct syncmem_gate *g)
{
	uint32_t v = GATE_CLOSED;
	int ret = syncmem__object_writable(r, g, sizeof(*g), &g->word, 4);

	if (ret)
		return ret;
	/* Nobody waits: open it. Release: our writes before the next pass. */
	if (__atomic_compare_exchange_n(&g->word, &v, GATE_OPEN, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED) || v == GATE_OPEN)
		return 0;
	if (v != GATE_WAITED)
		return -EUCLEAN;
	/* Waited on: a release the waiter we hand to acquires (gate_handed). */
	__atomic_exchange_n(&g->word, GATE_WAITED, __ATOMIC_RELEASE);
	ret = syncmem_handoff32(r, &g->word, GATE_OPEN);
	return ret < 0 ? ret : ret == SYNCMEM_HANDOFF_WOKE;
}
