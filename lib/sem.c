// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A counting semaphore with FIFO hand-off.
 *
 * One 64-bit word: units in the low half, and the top bit, "waiters may be
 * queued", which a waiter sets before it sleeps on the whole word. post()
 * that finds the mark clear just adds a unit (one CAS, no system call). With
 * the mark set, post() is the kernel's HANDOFF with SYNCMEM_HANDOFF_ADD and
 * SYNCMEM_HANDOFF_WAITERS: under the queue lock, the oldest queued waiter is
 * handed the unit, or, if none is queued, the unit is added to the word; and
 * whenever that leaves nobody queued the kernel clears the mark. Every
 * change of the word makes a waiter about to sleep on its old value look
 * again, so no unit is missed. Units therefore only pile up while nobody is
 * queued (the mark is clear), and queued waiters are served in arrival
 * order: a newcomer takes a unit only when there is one.
 *
 * Nothing in the word belongs to one waiter, so nothing is left behind by a
 * waiter that times out, is cancelled or dies: at most the mark stays set
 * until the next post(), which finds nobody queued and clears it.
 *
 * Units above SYNCMEM_SEM_VALUE_MAX and any of bits 32-62 set are never
 * written by this library: -EUCLEAN, as is a CAS loop that keeps failing
 * (SYNCMEM__RETRY_MAX).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>

#include <linux/syncmem.h>

#include "acquire.h"

#define SEM_WAITED	(1ull << 63)	/* waiters may be queued */
#define SEM_UNUSED	(~SEM_WAITED & ~0xffffffffull)

_Static_assert(sizeof(struct syncmem_sem) == 64, "struct syncmem_sem layout");
/* Its word first: an 8-byte aligned sem has an aligned word. */
_Static_assert(offsetof(struct syncmem_sem, word) == 0, "struct syncmem_sem word");

static inline uint32_t sem_units(uint64_t v)
{
	return (uint32_t)v;
}

/* A word this library never writes. */
static inline bool sem_corrupt(uint64_t v)
{
	return sem_units(v) > SYNCMEM_SEM_VALUE_MAX || (v & SEM_UNUSED);
}

int syncmem_sem_init(struct syncmem_sem *s, uint32_t value)
{
	if (!s || value > SYNCMEM_SEM_VALUE_MAX)
		return -EINVAL;
	if (!syncmem__memory_writable(s, sizeof(*s)))
		return -EBADF;
	*s = (struct syncmem_sem){ .word = value };
	return 0;
}

uint32_t syncmem_sem_value(const struct syncmem_sem *s)
{
	return s ? sem_units(__atomic_load_n(&s->word, __ATOMIC_RELAXED)) : 0;
}

static int sem_try(struct syncmem__acq *a, uint64_t *expected)
{
	struct syncmem_sem *s = a->obj;
	uint64_t v = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
	uint32_t failed = 0;

	for (;;) {
		if (sem_corrupt(v))
			return -EUCLEAN;
		if (sem_units(v)) {
			/* Acquire: the poster's writes happen before ours. */
			if (__atomic_compare_exchange_n(&s->word, &v, v - 1, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 1;
		} else if (v & SEM_WAITED) {
			*expected = v;
			return 0;
		} else if (__atomic_compare_exchange_n(&s->word, &v, v | SEM_WAITED, false,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			v |= SEM_WAITED;
			continue;
		}
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

/* Handed a unit: pairs with the release in syncmem_sem_post(). */
static void sem_handed(struct syncmem__acq *a)
{
	(void)__atomic_load_n(&((struct syncmem_sem *)a->obj)->word, __ATOMIC_ACQUIRE);
}

static void sem_give_back(struct syncmem_region *r, struct syncmem__acq *a)
{
	syncmem_sem_post(r, a->obj);
}

static const struct syncmem__acq_ops sem_ops = {
	.try = sem_try,
	.handed = sem_handed,
	.give_back = sem_give_back,
};

static int sem_acq(struct syncmem_region *r, struct syncmem_sem *s, struct syncmem__acq *a)
{
	int err = syncmem__object_writable(r, s, sizeof(*s), 8);

	if (err)
		return err;
	*a = (struct syncmem__acq){ .ops = &sem_ops, .obj = s, .word = &s->word, .width = 8 };
	return 0;
}

int syncmem_sem_timedwait(struct syncmem_region *r, struct syncmem_sem *s, int64_t timeout_ns)
{
	struct syncmem__acq a;
	int err = sem_acq(r, s, &a);

	return err ? err : syncmem__acquire(r, &a, timeout_ns);
}

int syncmem_sem_wait(struct syncmem_region *r, struct syncmem_sem *s)
{
	return syncmem_sem_timedwait(r, s, SYNCMEM_FOREVER);
}

int syncmem_sem_trywait(struct syncmem_region *r, struct syncmem_sem *s)
{
	uint32_t failed = 0;
	uint64_t v;
	int err = syncmem__object_writable(r, s, sizeof(*s), 8);

	if (err)
		return err;
	v = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
	while (sem_units(v)) {
		if (sem_corrupt(v))
			return -EUCLEAN;
		/* Acquire: the poster's writes happen before ours. */
		if (__atomic_compare_exchange_n(&s->word, &v, v - 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
	return sem_corrupt(v) ? -EUCLEAN : -EAGAIN;
}

int syncmem_sem_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_sem *s, syncmem_wait_cb cb, void *arg)
{
	struct syncmem__acq a;
	int err = sem_acq(r, s, &a);

	return err ? err : syncmem__acquire_async(loop, r, &a, SYNCMEM_FOREVER, cb, arg, NULL);
}

int syncmem_sem_wait_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				 struct syncmem_sem *s, int64_t timeout_ns, syncmem_wait_cb cb,
				 void *arg, uint64_t *id_out)
{
	struct syncmem__acq a;
	uint64_t id;
	int err = sem_acq(r, s, &a);

	return err ? err : syncmem__acquire_async(loop, r, &a, timeout_ns, cb, arg,
						  id_out ? id_out : &id);
}

int syncmem_sem_post(struct syncmem_region *r, struct syncmem_sem *s)
{
	uint32_t failed = 0;
	uint64_t v;
	int ret = syncmem__object_writable(r, s, sizeof(*s), 8);

	if (ret)
		return ret;
	v = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
	for (;;) {
		if (sem_corrupt(v))
			return -EUCLEAN;
		if (sem_units(v) == SYNCMEM_SEM_VALUE_MAX)
			return -EOVERFLOW;
		if (v & SEM_WAITED)
			break;
		/* Release: our writes happen before the taker's section. */
		if (__atomic_compare_exchange_n(&s->word, &v, v + 1, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
	/*
	 * The kernel leaves the word alone when it hands the unit over: write
	 * it ourselves (an RMW of +0, release) so that the waiter's acquire
	 * load in sem_handed() synchronizes with our section.
	 */
	__atomic_fetch_add(&s->word, 0, __ATOMIC_RELEASE);
	ret = syncmem__handoff(r, &s->word, 8, 1,
			       SYNCMEM_HANDOFF_ADD | SYNCMEM_HANDOFF_WAITERS);
	return ret < 0 ? ret : 0;
}
