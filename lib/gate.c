// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A gate: Lock(OPEN | CLOSED) with wait() and signal().
 *
 * The word is 0 when open, else closed: SYNCMEM_OWNER_NOBODY, or for a gate
 * made with SYNCMEM_GATE_HELD the owner id of whoever passed it last (the
 * thread; the process for an async pass); plus SYNCMEM_OWNER_WAITERS once
 * somebody may be waiting. Passing an open gate is one CAS 0 -> holder; a
 * waiter that finds it closed sets the waiters bit and sleeps on the word.
 * signal() on a closed gate without the waiters bit opens it with one CAS
 * (anyone may signal: no ownership is checked); with the bit it goes to the
 * kernel, which decides under the queue lock that waiters enqueue under:
 *
 * - plain gates: HANDOFF with SYNCMEM_HANDOFF_WAITERS. The oldest waiter
 *   passes (the word is left closed) or, with nobody queued, the gate opens;
 *   the kernel clears the waiters bit when nobody is left queued.
 * - SYNCMEM_GATE_HELD: waits are owner waits (LOCK_WAIT) that name the
 *   holder, and signal() is UNLOCK with SYNCMEM_UNLOCK_HANDOFF, which writes
 *   the oldest waiter's id into the word. If the holder dies, the kernel
 *   gives the gate to the oldest waiter with SYNCMEM_OWNER_DIED
 *   (-EOWNERDEAD), at once when the holder's process exits.
 *
 * So a signal is never lost and never given to two. A holder may wait on
 * its own gate (the next signal lets it through again); the died bit is
 * dropped by the next signal (a gate has no consistent call). Flags other
 * than SYNCMEM_GATE_HELD and SYNCMEM_OWNER_NOTRECOVERABLE in the word are
 * never written here: -EUCLEAN, as is a CAS loop that keeps failing
 * (SYNCMEM__RETRY_MAX).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>

#include <linux/syncmem.h>

#include "acquire.h"

#define GATE_OPEN	0ull
#define GATE_WAITERS	SYNCMEM_OWNER_WAITERS
#define GATE_DIED	SYNCMEM_OWNER_DIED
#define GATE_ID		SYNCMEM_OWNER_ID

_Static_assert(sizeof(struct syncmem_gate) == 64, "struct syncmem_gate layout");
/* Its word first: an 8-byte aligned gate has an aligned word. */
_Static_assert(offsetof(struct syncmem_gate, word) == 0, "struct syncmem_gate word");

void syncmem_gate_init(struct syncmem_gate *g, bool open)
{
	/* Nothing to report it through: NULL or read-only memory is left alone. */
	syncmem_gate_init_flags(g, open, 0);
}

int syncmem_gate_init_flags(struct syncmem_gate *g, bool open, uint32_t flags)
{
	if (!g || (flags & ~SYNCMEM_GATE_HELD))
		return -EINVAL;
	if (!syncmem__memory_writable(g, sizeof(*g)))
		return -EBADF;
	*g = (struct syncmem_gate){ .word = open ? GATE_OPEN : SYNCMEM_OWNER_NOBODY,
				    .flags = flags };
	return 0;
}

/* Is @g a held gate? -EUCLEAN for flags this library never writes. */
static int gate_held(const struct syncmem_gate *g)
{
	uint32_t flags = __atomic_load_n(&g->flags, __ATOMIC_RELAXED);

	if (flags & ~SYNCMEM_GATE_HELD)
		return -EUCLEAN;
	return !!flags;
}

static int gate_try(struct syncmem__acq *a, uint64_t *expected)
{
	struct syncmem_gate *g = a->obj;
	uint64_t v = __atomic_load_n(&g->word, __ATOMIC_RELAXED);
	uint32_t failed = 0;

	for (;;) {
		if (!(v & GATE_ID)) {
			/* Acquire: the signaller's writes happen before our pass. */
			if (__atomic_compare_exchange_n(&g->word, &v,
							(a->owner ? a->owner : SYNCMEM_OWNER_NOBODY) |
							(v & GATE_WAITERS),
							false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 1;
		} else if ((v & GATE_ID) == SYNCMEM_OWNER_NOTRECOVERABLE) {
			return -EUCLEAN;
		} else if (v & GATE_WAITERS) {
			*expected = v;
			return 0;
		} else {
			__atomic_compare_exchange_n(&g->word, &v, v | GATE_WAITERS, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
			continue;
		}
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

/*
 * Handed the gate: pairs with the release RMW in syncmem_gate_signal()
 * (which the kernel's update of the word, if any, continues), so the
 * signaller's writes happen before our pass.
 */
static void gate_handed(struct syncmem__acq *a)
{
	(void)__atomic_load_n(&((struct syncmem_gate *)a->obj)->word, __ATOMIC_ACQUIRE);
}

static void gate_give_back(struct syncmem_region *r, struct syncmem__acq *a)
{
	syncmem_gate_signal(r, a->obj);
}

static const struct syncmem__acq_ops gate_ops = {
	.try = gate_try,
	.handed = gate_handed,
	.give_back = gate_give_back,
};

/* @async: a held gate is held by the process (any of its threads may signal). */
static int gate_acq(struct syncmem_region *r, struct syncmem_gate *g, bool async,
		    struct syncmem__acq *a)
{
	int err = syncmem__object_writable(r, g, sizeof(*g), 8);
	int64_t id = 0;

	if (err)
		return err;
	err = gate_held(g);
	if (err < 0)
		return err;
	if (err)
		id = async ? syncmem__process_owner(r->fd) :
		     syncmem__cached_owner ? (int64_t)syncmem__cached_owner :
					     syncmem__owner_slow(r->fd);
	if (id < 0)
		return (int)id;
	*a = (struct syncmem__acq){ .ops = &gate_ops, .obj = g, .word = &g->word, .width = 8,
				    .owner = (uint64_t)id };
	return 0;
}

int syncmem_gate_wait(struct syncmem_region *r, struct syncmem_gate *g, int64_t timeout_ns)
{
	struct syncmem__acq a;
	int err = gate_acq(r, g, false, &a);

	return err ? err : syncmem__acquire(r, &a, timeout_ns);
}

static int gate_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_gate *g, int64_t timeout_ns, syncmem_wait_cb cb,
			   void *arg, uint64_t *id_out)
{
	struct syncmem__acq a;
	int err;

	if (!loop || !cb)
		return -EINVAL;
	err = gate_acq(r, g, true, &a);
	return err ? err : syncmem__acquire_async(loop, r, &a, timeout_ns, cb, arg, id_out);
}

int syncmem_gate_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			    struct syncmem_gate *g, syncmem_wait_cb cb, void *arg)
{
	return gate_wait_async(loop, r, g, SYNCMEM_FOREVER, cb, arg, NULL);
}

int syncmem_gate_wait_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				  struct syncmem_gate *g, int64_t timeout_ns, syncmem_wait_cb cb,
				  void *arg, uint64_t *id_out)
{
	uint64_t id;

	return gate_wait_async(loop, r, g, timeout_ns, cb, arg, id_out ? id_out : &id);
}

int syncmem_gate_signal(struct syncmem_region *r, struct syncmem_gate *g)
{
	int ret = syncmem__object_writable(r, g, sizeof(*g), 8), held;
	uint32_t failed = 0;
	uint64_t v;

	if (ret)
		return ret;
	held = gate_held(g);
	if (held < 0)
		return held;
	v = __atomic_load_n(&g->word, __ATOMIC_RELAXED);
	for (;;) {
		if (!(v & GATE_ID))
			return 0;	/* open already */
		if ((v & GATE_ID) == SYNCMEM_OWNER_NOTRECOVERABLE)
			return -EUCLEAN;
		if (!(v & GATE_WAITERS)) {
			/* Nobody waits: open it. Release: our writes before the next pass. */
			if (__atomic_compare_exchange_n(&g->word, &v, GATE_OPEN, false,
							__ATOMIC_RELEASE, __ATOMIC_RELAXED))
				return 0;
		} else {
			/* Release RMW first: the waiter we hand to acquires (gate_handed). */
			__atomic_fetch_or(&g->word, 0, __ATOMIC_RELEASE);
			if (!held) {
				ret = syncmem__handoff(r, &g->word, 8, GATE_OPEN,
						       SYNCMEM_HANDOFF_WAITERS);
				return ret < 0 ? ret : ret == SYNCMEM_HANDOFF_WOKE;
			}
			ret = syncmem__unlock_word(r, &g->word, v, SYNCMEM_UNLOCK_HANDOFF);
			if (ret != -EAGAIN)
				return ret < 0 ? ret : ret == SYNCMEM_UNLOCK_HANDED;
			v = __atomic_load_n(&g->word, __ATOMIC_RELAXED);
		}
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}
