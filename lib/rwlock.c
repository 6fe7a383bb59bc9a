// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A reader-writer lock whose readers count themselves per process, so that
 * readers of different processes share no written cache line and the shares
 * of a process that dies can be released.
 *
 * Readers. A process that reads the lock claims one of its
 * SYNCMEM_RWLOCK_SLOTS slots: the slot's owner word names the process (its
 * kernel-issued process owner id), its count is the read shares the process
 * holds. A read lock adds one to the count, then looks at @closed: while it
 * is 0 the reader is in, with no system call. A read unlock takes one away.
 *
 * Writers and order. A writer announces itself in @closed (its low bits
 * count writers queued), then passes the turnstile, a SYNCMEM_LOCK_FAIR
 * mutex, and keeps it for its whole section, with RW_HELD set in @closed.
 * Readers that find @closed set take their share back and queue at the
 * turnstile, behind the writers that came first (one kernel FIFO for
 * blocking and async lockers); once through, they count themselves in and
 * pass the turnstile on. Holding it, the writer waits for every slot's count
 * to drain to 0. Whoever passes the turnstile on with nobody queued at it
 * reopens @closed (which also forgets writers that gave up or died queued).
 *
 * The handshake. A reader adds to its count and then reads @closed; a
 * writer sets RW_HELD and then reads the counts. All four accesses are
 * sequentially consistent, so one side sees the other: the writer sees the
 * share and waits for it, or the reader sees RW_HELD and queues.
 *
 * Waiting and death. A slot's owner word is an owner word
 * (<linux/syncmem.h>). A writer waiting for a count to drain sets
 * SYNCMEM_OWNER_WAITERS in it and sleeps with LOCK_WAIT, which names the
 * process; the share that leaves the count at 0 clears the bit and wakes it.
 * When the process dies the kernel hands the word to the waiting writer at
 * once (SYNCMEM_WAIT_OWNER_DIED): the writer forgets the dead process's
 * shares and frees the slot. A process that finds no free slot takes one
 * over from a dead process the same way (LOCK_WAIT with a past deadline
 * takes a dead owner's word over and never sleeps). The turnstile recovers
 * like any syncmem_lock: a writer that died inside its section is reported
 * as -EOWNERDEAD to the next locker through it.
 *
 * More processes than slots: a process that finds every slot counting a
 * live process reads while holding the turnstile, excluding writers and
 * other such readers but never the readers counted in slots. It holds it
 * as the process (a blocking reader passes as its thread, then names its
 * process in the word), as it would a share in a slot: any of its threads
 * may release it.
 *
 * Hostile peers: counts that would pass RW_COUNT_MAX and loops that keep
 * failing are -EUCLEAN; an owner word holds an owner id, so a scribbled one
 * names a dead process (its slot is freed) or a live one that holds its
 * shares, as a reader that never unlocks would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include <linux/syncmem.h>

#include "internal.h"

#define RW_HELD		0x80000000u	/* @closed: a writer holds the turnstile */
#define RW_QUEUED	0x7fffffffu	/* @closed: writers announced, not in yet */
#define RW_COUNT_MAX	0x7fffffffu	/* shares one slot may count */
#define SLOT_WAITERS	SYNCMEM_OWNER_WAITERS
#define SLOT_DIED	SYNCMEM_OWNER_DIED
#define SLOT_ID		SYNCMEM_OWNER_ID
#define NO_SLOT		UINT32_MAX
#define RW_HINTS	8
#define RW_RECLAIM_EVERY 64	/* slotless read locks between looks for a dead process's slot */

_Static_assert(sizeof(struct syncmem_rwlock) == 384, "struct syncmem_rwlock layout");
_Static_assert(SYNCMEM_RWLOCK_SLOTS == 16, "claim_order() spreads 16 slots over 4 lines");

/*
 * Per thread and lock: the slot this process was last found in. Only a
 * hint: the slot's owner word says whether it still is.
 */
struct rw_hint {
	const struct syncmem_rwlock *rw;
	uint32_t slot;		/* NO_SLOT: every slot counted a live process */
	uint32_t retry;		/* with NO_SLOT: slotless read locks until looking again */
};

static __thread struct rw_hint rw_hints[RW_HINTS] __attribute__((tls_model("initial-exec")));

static inline struct rw_hint *hint_of(const struct syncmem_rwlock *rw)
{
	return &rw_hints[((uintptr_t)rw >> 7) % RW_HINTS];
}

/* The i-th slot a claim tries: a new cache line first, so the first four processes share none. */
static inline uint32_t claim_order(uint32_t i)
{
	return (i % 4) * 4 + i / 4;
}

/* The process an owner word counts (its waiters bit aside; claimed ones still carry the died bit). */
static inline uint64_t slot_process(uint64_t owner)
{
	return owner & ~SLOT_WAITERS;
}

void syncmem_rwlock_init(struct syncmem_rwlock *rw)
{
	/* Nothing to report it through: NULL or read-only memory is left alone. */
	if (!rw || !syncmem__memory_writable(rw, sizeof(*rw)))
		return;
	*rw = (struct syncmem_rwlock){ .turnstile.flags = SYNCMEM_LOCK_FAIR };
}

/*
 * 0, -EINVAL (NULL, misaligned), -ERANGE (not wholly inside the region) or
 * -EBADF (read-only region).
 */
static inline int rw_check(const struct syncmem_region *r, const struct syncmem_rwlock *rw)
{
	__u64 off;
	int err = syncmem__object_offset(r, rw, sizeof(*rw), 8, &off);

	if (__builtin_expect(err, 0))
		return err;
	return r->rdonly ? -EBADF : 0;
}

/*
 * The fast paths' check, one compare as in lock.c: wholly inside a writable
 * region and 8-byte aligned. Rotating the offset's three low bits to the
 * top makes a misaligned offset (or one below the base) larger than any
 * limit; lock_words (0 for a read-only region) bounds whole locks, and an
 * rwlock is RW_LOCK_WORDS words longer than a lock.
 */
#define RW_LOCK_WORDS	((sizeof(struct syncmem_rwlock) - sizeof(struct syncmem_lock)) / 8)

static inline bool rw_fast_ok(const struct syncmem_region *r, const struct syncmem_rwlock *rw)
{
	uintptr_t off = (uintptr_t)rw - (uintptr_t)r->base;

	off = (off >> 3) | (off << (sizeof(off) * 8 - 3));
	return r->lock_words > RW_LOCK_WORDS && off < r->lock_words - RW_LOCK_WORDS;
}

/* ---- Slots -------------------------------------------------------------- */

/* Wake the writer draining @s, whose waiters bit was seen in @o. 0 or -errno. */
static int slot_wake(struct syncmem_region *r, struct syncmem_rwlock_slot *s, uint64_t o)
{
	uint32_t failed = 0;
	int ret;

	do {
		if (!(o & SLOT_WAITERS))
			return 0;
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	} while (!__atomic_compare_exchange_n(&s->owner, &o, o & ~SLOT_WAITERS, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	ret = syncmem_notify(r, &s->owner, INT_MAX);
	return ret < 0 ? ret : 0;
}

/*
 * Take one share out of @s. The share that leaves the count at 0 wakes a
 * writer waiting for it. 0, -EPERM (no share counted), or -errno.
 */
static int slot_leave(struct syncmem_region *r, struct syncmem_rwlock_slot *s)
{
	uint32_t c = __atomic_load_n(&s->count, __ATOMIC_RELAXED), failed = 0;
	uint64_t o;

	do {
		if (!c)
			return -EPERM;
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
		/*
		 * Release: our reads happen before the next writer's section.
		 * Sequentially consistent with the writer setting the waiters
		 * bit and then reading the count: one of us sees the other.
		 */
	} while (!__atomic_compare_exchange_n(&s->count, &c, c - 1, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	if (c != 1)
		return 0;
	o = __atomic_load_n(&s->owner, __ATOMIC_SEQ_CST);
	return o & SLOT_WAITERS ? slot_wake(r, s, o) : 0;
}

/*
 * Count one share in @s, then look at @closed: 1 in; 0 a writer holds or
 * waits for the lock (the share is taken back); -errno.
 */
static inline int slot_enter(struct syncmem_region *r, struct syncmem_rwlock *rw,
			     struct syncmem_rwlock_slot *s)
{
	/* Sequentially consistent, both: the handshake at the top. */
	uint32_t before = __atomic_fetch_add(&s->count, 1, __ATOMIC_SEQ_CST);
	int ret;

	if (__builtin_expect(before < RW_COUNT_MAX, 1) &&
	    __builtin_expect(!__atomic_load_n(&rw->closed, __ATOMIC_SEQ_CST), 1))
		return 1;
	ret = slot_leave(r, s);
	return before >= RW_COUNT_MAX ? -EUCLEAN : ret;
}

/* The slot this thread last found its process @me in, if it still counts it there. */
static inline struct syncmem_rwlock_slot *slot_hinted(struct syncmem_rwlock *rw, uint64_t me)
{
	const struct rw_hint *h = hint_of(rw);
	struct syncmem_rwlock_slot *s;

	/* Any index names some slot: its owner word decides (NO_SLOT too). */
	if (h->rw != rw || !me)
		return NULL;
	s = &rw->slot[h->slot % SYNCMEM_RWLOCK_SLOTS];
	/* Acquire: the count as its claimer left it, before ours is added. */
	return slot_process(__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE)) == me ? s : NULL;
}

static void hint_set(struct syncmem_rwlock *rw, uint32_t slot)
{
	struct rw_hint *h = hint_of(rw);

	*h = (struct rw_hint){ .rw = rw, .slot = slot, .retry = RW_RECLAIM_EVERY };
}

/*
 * @s's word names the caller with the died bit: claimed free, or taken over
 * from a dead process. Forget what it counted and make it @me's slot.
 */
static bool slot_adopt(struct syncmem_region *r, struct syncmem_rwlock_slot *s, uint64_t me)
{
	uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	uint32_t failed = 0;

	__atomic_store_n(&s->count, 0, __ATOMIC_RELAXED);
	/* Release: the count is 0 before this process's threads find the slot. */
	while (!__atomic_compare_exchange_n(&s->owner, &o, me, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		if (syncmem__too_many(&failed))
			return false;	/* a peer keeps writing it: not a slot to count in */
	if (o & SLOT_WAITERS)
		syncmem_notify(r, &s->owner, INT_MAX);
	return true;
}

/*
 * @s's word names the caller (a writer handed a dead process's word by the
 * kernel): forget the dead process's shares and free the slot. 0 or -errno.
 */
static int slot_free(struct syncmem_region *r, struct syncmem_rwlock_slot *s)
{
	uint64_t o;
	int ret = 0;

	__atomic_store_n(&s->count, 0, __ATOMIC_RELAXED);
	/* Release: the count is 0 before anyone can claim the slot. */
	o = __atomic_exchange_n(&s->owner, 0, __ATOMIC_RELEASE);
	if (o & SLOT_WAITERS)
		ret = syncmem_notify(r, &s->owner, INT_MAX);
	return ret < 0 ? ret : 0;
}

/* A free slot, claimed for @me; or NULL. */
static struct syncmem_rwlock_slot *slot_claim_free(struct syncmem_region *r,
						   struct syncmem_rwlock *rw, uint64_t me)
{
	for (uint32_t i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++) {
		struct syncmem_rwlock_slot *s = &rw->slot[claim_order(i)];
		uint64_t o = 0;

		/* Claimed with the died bit: no thread of ours counts in it before adopt(). */
		if (!__atomic_load_n(&s->owner, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&s->owner, &o, me | SLOT_DIED, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			if (!slot_adopt(r, s, me))
				return NULL;
			hint_set(rw, claim_order(i));
			return s;
		}
	}
	return NULL;
}

/* A slot of a dead process, taken over for @me; or NULL. */
static struct syncmem_rwlock_slot *slot_claim_dead(struct syncmem_region *r,
						   struct syncmem_rwlock *rw, uint64_t me)
{
	for (uint32_t i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++) {
		struct syncmem_rwlock_slot *s = &rw->slot[claim_order(i)];
		uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);

		if (!(o & SLOT_ID) || slot_process(o) == me)
			continue;
		/* Never sleeps: a live owner times out, a dead one is taken over. */
		if (syncmem__lock_wait(r, &s->owner, o, me, 0, 0) == SYNCMEM_WAIT_OWNER_DIED) {
			if (!slot_adopt(r, s, me))
				return NULL;
			hint_set(rw, claim_order(i));
			return s;
		}
	}
	return NULL;
}

/*
 * This process's slot: the one whose word names it (any of its threads may
 * have claimed it), else a free one, else one of a dead process. NULL when
 * every slot counts a live process.
 */
static struct syncmem_rwlock_slot *slot_find(struct syncmem_region *r, struct syncmem_rwlock *rw,
					     uint64_t me)
{
	struct rw_hint *h = hint_of(rw);
	struct syncmem_rwlock_slot *s;

	for (uint32_t i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++) {
		s = &rw->slot[i];
		if (slot_process(__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE)) == me) {
			hint_set(rw, i);
			return s;
		}
	}
	s = slot_claim_free(r, rw, me);
	if (s)
		return s;
	/* Asking the kernel about every slot is for every RW_RECLAIM_EVERY-th call. */
	if (h->rw == rw && h->slot == NO_SLOT && --h->retry)
		return NULL;
	s = slot_claim_dead(r, rw, me);
	if (!s)
		*h = (struct rw_hint){ .rw = rw, .slot = NO_SLOT, .retry = RW_RECLAIM_EVERY };
	return s;
}

/*
 * Does @s count shares? 0 no; 1 yes, the waiters bit set in its owner word
 * and *@expected the word to wait on; -EUCLEAN.
 */
static int slot_check(struct syncmem_rwlock_slot *s, uint64_t *expected)
{
	uint32_t failed = 0;

	for (;;) {
		uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_SEQ_CST);
		/* Acquire: the leaving readers' reads happen before our section. */
		uint32_t c = __atomic_load_n(&s->count, __ATOMIC_SEQ_CST);

		if (!c)
			return 0;
		if (!(o & SLOT_ID)) {
			/* Shares of no process: not this library's (slots are freed at 0). */
			__atomic_compare_exchange_n(&s->count, &c, 0, false, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
		} else if (o & SLOT_WAITERS) {
			*expected = o;
			return 1;
		} else {
			/* Success or not, look again (the count after the bit): counted either way. */
			__atomic_compare_exchange_n(&s->owner, &o, o | SLOT_WAITERS, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
		}
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

/*
 * What a drain's wait on @s ended with: 0 look again (after a dead
 * process's shares were forgotten), SYNCMEM_WAIT_TIMED_OUT, or -errno.
 */
static int slot_waited(struct syncmem_region *r, struct syncmem_rwlock_slot *s, int ret)
{
	switch (ret) {
	case SYNCMEM_WAIT_OWNER_DIED:
	case SYNCMEM_WAIT_HANDED_OFF:
		return slot_free(r, s);		/* the word names us now */
	case SYNCMEM_WAIT_WOKEN:
	case SYNCMEM_WAIT_NOT_EQUAL:
		return 0;
	case -ENOTRECOVERABLE:
		return -EUCLEAN;		/* no library writes that id in a slot */
	default:
		return ret;
	}
}

/* Drained: the waiters bits left in slots would only cost their readers a wake-up. */
static void slots_quiet(struct syncmem_rwlock *rw)
{
	for (uint32_t i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++) {
		uint64_t o = __atomic_load_n(&rw->slot[i].owner, __ATOMIC_RELAXED);

		if (o & SLOT_WAITERS)
			__atomic_compare_exchange_n(&rw->slot[i].owner, &o, o & ~SLOT_WAITERS,
						    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

/* ---- The turnstile ------------------------------------------------------ */

/* A writer queues: readers arriving from now on queue behind it. */
static void writer_announce(struct syncmem_rwlock *rw)
{
	uint32_t v = __atomic_load_n(&rw->closed, __ATOMIC_RELAXED), failed = 0;

	do {
		if ((v & RW_QUEUED) == RW_QUEUED || syncmem__too_many(&failed))
			return;		/* as closed as it gets */
	} while (!__atomic_compare_exchange_n(&rw->closed, &v, v + 1, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
}

/* A writer stops queueing (it got the turnstile or gave up): never below 0. */
static void writer_unannounce(struct syncmem_rwlock *rw)
{
	uint32_t v = __atomic_load_n(&rw->closed, __ATOMIC_RELAXED), failed = 0;

	do {
		if (!(v & RW_QUEUED) || syncmem__too_many(&failed))
			return;
	} while (!__atomic_compare_exchange_n(&rw->closed, &v, v - 1, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

/*
 * Pass the turnstile on, its holder leaving. With nobody queued at it no
 * writer waits: reopen the lock to readers (forgetting announcements of
 * writers that gave up or died), unless a writer's death inside its
 * section is still to be reported. 0 or -errno.
 */
static int turnstile_pass(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	if (!(__atomic_load_n(&rw->turnstile.word, __ATOMIC_RELAXED) & SYNCMEM_OWNER_WAITERS) &&
	    !__atomic_load_n(&rw->writer, __ATOMIC_RELAXED))
		/* Release: a writer's section happens before the readers it lets in. */
		__atomic_store_n(&rw->closed, 0, __ATOMIC_RELEASE);
	return syncmem_unlock(r, &rw->turnstile);
}

/*
 * The turnstile's holder died (we hold it now): a writer, maybe inside its
 * section; a reader passing through or reading without a slot. Its waiters
 * bits go; @writer and RW_HELD stay as they were: a writer that died inside
 * its section (@writer still set) keeps readers out until a locker is told.
 */
static int turnstile_recover(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	slots_quiet(rw);
	return syncmem_lock_consistent(r, &rw->turnstile);
}

/*
 * Holding the turnstile (@result of taking it): 1 if a writer died inside
 * its section and nobody has been told yet (@writer is set only by the
 * writer inside, which would hold the turnstile), 0 if not, or -errno.
 */
static int turnstile_taken(struct syncmem_region *r, struct syncmem_rwlock *rw, int result)
{
	if (result == -EOWNERDEAD)
		result = turnstile_recover(r, rw);
	if (result)
		return result;
	return __atomic_load_n(&rw->writer, __ATOMIC_RELAXED) != 0;
}

/* Pass the turnstile: 0, 1 after a writer that died inside, or -errno. */
static int turnstile_lock(struct syncmem_region *r, struct syncmem_rwlock *rw,
			  int64_t timeout_ns, bool try)
{
	int ret = try ? syncmem_trylock(r, &rw->turnstile) :
			syncmem_lock_timed(r, &rw->turnstile, timeout_ns);

	return turnstile_taken(r, rw, ret);
}

/* The result of a lock taken after turnstile_lock() said @died. */
static int taken(int died)
{
	return died ? -EOWNERDEAD : 0;
}

/*
 * Holding the turnstile (no writer is inside or draining), @died as
 * turnstile_taken() said: count this process in and pass the turnstile on.
 * A reader told that a writer died inside keeps the turnstile, and readers
 * out, for its read section (it may repair the data alone), and so does a
 * process without a slot. 0 counted in, 1 reading holding the turnstile,
 * or -errno (nothing held).
 */
static int reader_through(struct syncmem_region *r, struct syncmem_rwlock *rw, int died)
{
	int64_t me;
	struct syncmem_rwlock_slot *s;
	int ret;

	if (died) {
		/*
		 * Told now. Readers stay out until it leaves, and @writer stays
		 * set for its section: should it die repairing, the next
		 * locker is told in its turn. Its unlock clears both.
		 */
		__atomic_fetch_or(&rw->closed, RW_HELD, __ATOMIC_SEQ_CST);
		__atomic_store_n(&rw->writer, syncmem__tid(), __ATOMIC_RELAXED);
		return 1;
	}
	me = syncmem__process_owner(r->fd);
	s = me < 0 ? NULL : slot_find(r, rw, (uint64_t)me);
	if (me >= 0 && !s)
		return 1;		/* reads holding the turnstile */
	if (s && __atomic_fetch_add(&s->count, 1, __ATOMIC_SEQ_CST) >= RW_COUNT_MAX) {
		slot_leave(r, s);
		me = -EUCLEAN;
	}
	ret = turnstile_pass(r, rw);
	if (me < 0)
		return (int)me;
	if (ret)
		slot_leave(r, s);
	return ret;
}

/*
 * A writer giving up while holding the turnstile. A death inside a write
 * section not reported yet (@writer set) stays so: readers stay out, and
 * the next locker through the turnstile is told.
 */
static void writer_abandon(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	slots_quiet(rw);
	if (!__atomic_load_n(&rw->writer, __ATOMIC_RELAXED))
		__atomic_fetch_and(&rw->closed, ~RW_HELD, __ATOMIC_RELEASE);
	turnstile_pass(r, rw);
}

/*
 * The locks whose turnstile this process holds for an async write lock or
 * an async read without a slot. The turnstile word names the process then,
 * but it does so too while an async lock of the process is on its way
 * (handed the turnstile, its callback not run yet, or a writer draining):
 * an unlock in that time releases a read share, not the turnstile.
 */
struct async_hold {
	const struct syncmem_rwlock *rw;
	struct async_hold *next;
};

static pthread_mutex_t async_hold_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct async_hold *async_holds;		/* under async_hold_mutex */

static void async_hold_prepare(void)
{
	pthread_mutex_lock(&async_hold_mutex);
}

static void async_hold_parent(void)
{
	pthread_mutex_unlock(&async_hold_mutex);
}

/* A forked child holds none of its parent's locks (the words name the parent). */
static void async_hold_child(void)
{
	while (async_holds) {
		struct async_hold *h = async_holds;

		async_holds = h->next;
		free(h);
	}
	pthread_mutex_unlock(&async_hold_mutex);
}

static void async_hold_register(void)
{
	pthread_atfork(async_hold_prepare, async_hold_parent, async_hold_child);
}

/* A record for an async lock about to start, or NULL (-ENOMEM). */
static struct async_hold *async_hold_new(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, async_hold_register);
	return malloc(sizeof(struct async_hold));
}

/* Record that the process holds the turnstile of @rw, with @h from async_hold_new(). */
static void async_hold_add(struct async_hold *h, const struct syncmem_rwlock *rw)
{
	pthread_mutex_lock(&async_hold_mutex);
	*h = (struct async_hold){ .rw = rw, .next = async_holds };
	async_holds = h;
	pthread_mutex_unlock(&async_hold_mutex);
}

/* Was the turnstile of @rw held for an async lock? Forgotten once asked. */
static bool async_hold_take(const struct syncmem_rwlock *rw)
{
	struct async_hold **p, *h = NULL;

	pthread_mutex_lock(&async_hold_mutex);
	for (p = &async_holds; *p; p = &(*p)->next) {
		if ((*p)->rw == rw) {
			h = *p;
			*p = h->next;
			break;
		}
	}
	pthread_mutex_unlock(&async_hold_mutex);
	free(h);
	return h != NULL;
}

/* Does the caller hold the turnstile: its thread, or its process for an async lock? */
static bool turnstile_mine(struct syncmem_rwlock *rw)
{
	uint64_t h = __atomic_load_n(&rw->turnstile.word, __ATOMIC_RELAXED) & SYNCMEM_OWNER_ID;

	if (!h)
		return false;
	if (h == syncmem__cached_owner)
		return true;
	return h == syncmem__process_owner_cached() && async_hold_take(rw);
}

/*
 * A blocking reader that keeps the turnstile for its read section (every
 * slot counts another live process, or it was told that a writer died
 * inside) passed it as its thread. Read shares belong to the process: make
 * the turnstile the process's, as an async reader's is, and record the
 * hold (@h, from async_hold_new()), so that any thread of the process
 * releases it, and the process's death, not the thread's, recovers it.
 * Only the waiters bit can change meanwhile (we hold the word). 0, or
 * -errno with the turnstile passed on: -EUCLEAN when its word keeps
 * changing or names someone else (written by a peer).
 */
static int turnstile_leave(struct syncmem_region *r, struct syncmem_rwlock *rw);

static int turnstile_to_process(struct syncmem_region *r, struct syncmem_rwlock *rw,
				struct async_hold *h)
{
	int64_t me = syncmem__process_owner(r->fd);
	uint64_t v = __atomic_load_n(&rw->turnstile.word, __ATOMIC_RELAXED);
	uint32_t failed = 0;

	for (;;) {
		if (me < 0 || (v & SYNCMEM_OWNER_ID) != syncmem__cached_owner ||
		    syncmem__too_many(&failed)) {
			free(h);
			turnstile_leave(r, rw);
			return me < 0 ? (int)me : -EUCLEAN;
		}
		if (__atomic_compare_exchange_n(&rw->turnstile.word, &v,
						(v & ~SYNCMEM_OWNER_ID) | (uint64_t)me, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	async_hold_add(h, rw);
	return 0;
}

/* ---- Blocking calls ----------------------------------------------------- */

static __attribute__((noinline)) int reader_try_slow(struct syncmem_region *r,
						     struct syncmem_rwlock *rw)
{
	int64_t me = syncmem__process_owner(r->fd);
	struct syncmem_rwlock_slot *s;

	if (me < 0)
		return (int)me;
	s = slot_find(r, rw, (uint64_t)me);
	return s ? slot_enter(r, rw, s) : 0;
}

/* Enter through this process's slot: 1 in, 0 queue at the turnstile, or -errno. */
static inline int reader_try(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	struct syncmem_rwlock_slot *s = slot_hinted(rw, syncmem__process_owner_cached());

	if (__builtin_expect(s != NULL, 1))
		return slot_enter(r, rw, s);
	return reader_try_slow(r, rw);
}

/* A read lock that did not get in through its slot at once. */
static __attribute__((noinline)) int rdlock_slow(struct syncmem_region *r,
						 struct syncmem_rwlock *rw, int64_t timeout_ns,
						 bool try)
{
	int ret = rw_check(r, rw), died;
	struct async_hold *h;

	if (ret)
		return ret;
	ret = reader_try(r, rw);
	if (ret)
		return ret > 0 ? 0 : ret;
	/* Ready before the turnstile is ours: recording a hold cannot fail. */
	h = async_hold_new();
	if (!h)
		return -ENOMEM;
	died = turnstile_lock(r, rw, timeout_ns, try);
	if (died < 0) {
		free(h);
		return died;
	}
	ret = reader_through(r, rw, died);
	if (ret == 1)
		ret = turnstile_to_process(r, rw, h);	/* reading holding the turnstile */
	else
		free(h);
	return ret < 0 ? ret : taken(died);
}

/* The share counted at once found the lock closed (or the count impossible). */
static __attribute__((noinline)) int rdlock_closed(struct syncmem_region *r,
						   struct syncmem_rwlock *rw,
						   struct syncmem_rwlock_slot *s, uint32_t before,
						   int64_t timeout_ns, bool try)
{
	int ret = slot_leave(r, s);

	if (before >= RW_COUNT_MAX)
		return -EUCLEAN;
	return ret ? ret : rdlock_slow(r, rw, timeout_ns, try);
}

/* The fast path: this process's slot is known, the lock open. */
static inline int rdlock(struct syncmem_region *r, struct syncmem_rwlock *rw, int64_t timeout_ns,
			 bool try)
{
	struct syncmem_rwlock_slot *s;
	uint32_t before;

	/* A NULL @rw fails the offset check (a NULL @r does not: its own test). */
	if (__builtin_expect(!r || !rw_fast_ok(r, rw), 0))
		return rdlock_slow(r, rw, timeout_ns, try);
	s = slot_hinted(rw, syncmem__process_owner_cached());
	if (__builtin_expect(!s, 0))
		return rdlock_slow(r, rw, timeout_ns, try);
	/* Sequentially consistent, both: the handshake at the top. */
	before = __atomic_fetch_add(&s->count, 1, __ATOMIC_SEQ_CST);
	if (__builtin_expect(before < RW_COUNT_MAX, 1) &&
	    __builtin_expect(!__atomic_load_n(&rw->closed, __ATOMIC_SEQ_CST), 1))
		return 0;
	return rdlock_closed(r, rw, s, before, timeout_ns, try);
}

int syncmem_rwlock_rdlock_timed(struct syncmem_region *r, struct syncmem_rwlock *rw,
				int64_t timeout_ns)
{
	return rdlock(r, rw, timeout_ns, false);
}

int syncmem_rwlock_rdlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	return rdlock(r, rw, SYNCMEM_FOREVER, false);
}

int syncmem_rwlock_tryrdlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	return rdlock(r, rw, 0, true);
}

/*
 * Holding the turnstile with RW_HELD set: wait, as owner @me, until no slot
 * counts a share. 0 drained, SYNCMEM_WAIT_TIMED_OUT, or -errno.
 */
static int writer_drain(struct syncmem_region *r, struct syncmem_rwlock *rw, uint64_t me,
			uint64_t deadline)
{
	uint32_t i = 0, changed = 0;

	while (i < SYNCMEM_RWLOCK_SLOTS) {
		struct syncmem_rwlock_slot *s = &rw->slot[i];
		uint64_t expected;
		int ret = slot_check(s, &expected);

		if (ret < 0)
			return ret;
		if (!ret) {
			i++;
			changed = 0;
			continue;
		}
		ret = syncmem__lock_wait(r, &s->owner, expected, me, deadline, 0);
		if (syncmem__keeps_changing(ret, &changed))
			return -EUCLEAN;	/* the word keeps changing under us */
		ret = slot_waited(r, s, ret);
		if (ret)
			return ret;
	}
	slots_quiet(rw);
	return 0;
}

/* Holding the turnstile: the lock is the writer's once the readers drained. */
static int writer_enter(struct syncmem_region *r, struct syncmem_rwlock *rw, uint64_t me,
			uint64_t deadline, int died)
{
	int ret;

	/* Sequentially consistent: the handshake at the top. */
	__atomic_fetch_or(&rw->closed, RW_HELD, __ATOMIC_SEQ_CST);
	ret = writer_drain(r, rw, me, deadline);
	if (!ret) {
		/* Nonzero while a writer is inside (its thread id, for the curious). */
		__atomic_store_n(&rw->writer, syncmem__tid(), __ATOMIC_RELAXED);
		return taken(died);
	}
	writer_abandon(r, rw);
	return ret == SYNCMEM_WAIT_TIMED_OUT ? -ETIMEDOUT : ret;
}

int syncmem_rwlock_wrlock_timed(struct syncmem_region *r, struct syncmem_rwlock *rw,
				int64_t timeout_ns)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	int ret = rw_check(r, rw), died;
	int64_t me;

	if (ret)
		return ret;
	me = syncmem__cached_owner ? (int64_t)syncmem__cached_owner : syncmem__owner_slow(r->fd);
	if (me < 0)
		return (int)me;
	/* A try does not close the lock to readers for the moment it looks. */
	if (timeout_ns)
		writer_announce(rw);
	died = turnstile_lock(r, rw, timeout_ns, false);
	/* Held before unannounced: @closed never reads 0 while a writer holds the turnstile. */
	if (died >= 0)
		__atomic_fetch_or(&rw->closed, RW_HELD, __ATOMIC_SEQ_CST);
	if (timeout_ns)
		writer_unannounce(rw);
	if (died < 0)
		return died;
	return writer_enter(r, rw, (uint64_t)me, deadline, died);
}

int syncmem_rwlock_wrlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	return syncmem_rwlock_wrlock_timed(r, rw, SYNCMEM_FOREVER);
}

int syncmem_rwlock_trywrlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	int ret = syncmem_rwlock_wrlock_timed(r, rw, 0);

	return ret == -ETIMEDOUT ? -EBUSY : ret;
}

/* One of this process's read shares, in whichever of its slots holds one. */
static int reader_leave(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	uint64_t me = syncmem__process_owner_cached();
	struct syncmem_rwlock_slot *s = slot_hinted(rw, me);
	int ret = s ? slot_leave(r, s) : -EPERM;

	if (__builtin_expect(ret != -EPERM, 1) || !me)
		return ret;
	/* Another thread of this process may have counted it in another slot. */
	for (uint32_t i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++) {
		s = &rw->slot[i];
		if (slot_process(__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE)) != me)
			continue;
		ret = slot_leave(r, s);
		if (ret != -EPERM)
			return ret;
	}
	return -EPERM;
}

/* The caller holds the turnstile: as the writer, or as a reader without a slot. */
static int turnstile_leave(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	if (__atomic_load_n(&rw->closed, __ATOMIC_RELAXED) & RW_HELD) {
		__atomic_store_n(&rw->writer, 0, __ATOMIC_RELAXED);
		__atomic_fetch_and(&rw->closed, ~RW_HELD, __ATOMIC_RELEASE);
	}
	return turnstile_pass(r, rw);
}

static __attribute__((noinline)) int unlock_slow(struct syncmem_region *r,
						 struct syncmem_rwlock *rw)
{
	int ret = rw_check(r, rw);

	if (ret)
		return ret;
	if (turnstile_mine(rw))
		return turnstile_leave(r, rw);
	return reader_leave(r, rw);
}

int syncmem_rwlock_unlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	struct syncmem_rwlock_slot *s;
	uint64_t o;
	uint32_t c;

	/* The fast path: nobody holds the turnstile, this process's slot is known. */
	if (__builtin_expect(!r || !rw_fast_ok(r, rw) ||
			     __atomic_load_n(&rw->turnstile.word, __ATOMIC_RELAXED), 0))
		return unlock_slow(r, rw);
	s = slot_hinted(rw, syncmem__process_owner_cached());
	if (__builtin_expect(!s, 0))
		return unlock_slow(r, rw);
	c = __atomic_load_n(&s->count, __ATOMIC_RELAXED);
	/* As slot_leave(): release, and sequentially consistent with a draining writer. */
	if (__builtin_expect(!c || !__atomic_compare_exchange_n(&s->count, &c, c - 1, false,
								__ATOMIC_SEQ_CST,
								__ATOMIC_RELAXED), 0))
		return unlock_slow(r, rw);
	if (__builtin_expect(c != 1, 0))
		return 0;
	o = __atomic_load_n(&s->owner, __ATOMIC_SEQ_CST);
	return __builtin_expect(o & SLOT_WAITERS, 0) ? slot_wake(r, s, o) : 0;
}

/* ---- Asynchronous calls ------------------------------------------------- */

/* An asynchronous rdlock or wrlock in progress. */
struct rw_op {
	struct syncmem__job job;	/* abortable while pending (id 0: never) */
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct syncmem_rwlock *rw;
	syncmem_wait_cb cb;
	void *arg;
	struct async_hold *hold;	/* kept ready: recording a hold cannot fail */
	int died;		/* the turnstile's last holder died writing */
	uint32_t slot;		/* a writer: the slot it drains */
	uint32_t changed;	/* its waits that found the word changed, in a row */
	int64_t timeout_ns;	/* of its turnstile lock */
	uint64_t deadline;	/* of its drain waits, or SYNCMEM_NO_DEADLINE */
	uint64_t inner;		/* its turnstile lock's job id (0: none pending) */
	uint64_t kid;		/* its queued drain wait */
	bool writer;
	bool draining;		/* a writer past the turnstile */
	bool aborted;		/* its callback reports -ECANCELED */
};

static void rw_op_free(struct rw_op *op)
{
	if (op->job.id)
		syncmem__job_del(op->loop, &op->job);
	free(op->hold);
	free(op);
}

static void rw_op_finish(struct rw_op *op, int result)
{
	syncmem_wait_cb cb = op->cb;
	void *arg = op->arg;

	/* Aborted: what it took meanwhile is let go (a death told to nobody). */
	if (op->aborted) {
		if (result == 0 || result == -EOWNERDEAD)
			syncmem_rwlock_unlock(op->r, op->rw);
		result = -ECANCELED;
	}
	rw_op_free(op);
	cb(arg, result);
}

/* Abort: its turnstile lock (which calls back -ECANCELED) or its drain wait. */
static int rw_op_abort(struct syncmem__job *j)
{
	struct rw_op *op = (struct rw_op *)j;
	struct syncmem__job *in;

	if (op->aborted)
		return -ENOENT;
	if (op->draining) {
		op->aborted = true;
		/* -ENOENT: its completion is on its way, and sees the mark. */
		syncmem__loop_cancel(op->loop, op->kid);
		return 0;
	}
	in = syncmem__job_find(op->loop, op->inner, SYNCMEM__JOB_ACQUIRE);
	if (in) {
		op->aborted = true;
		return in->abort(in);
	}
	/* Through the turnstile, its callback due: a reader is in, a writer is not yet. */
	if (!op->writer)
		return -ENOENT;
	op->aborted = true;
	return 0;
}

/* The process holds the turnstile for @op's lock: unlock must know. */
static void rw_op_hold(struct rw_op *op)
{
	async_hold_add(op->hold, op->rw);
	op->hold = NULL;
}

static void rd_turnstile_passed(void *arg, int result)
{
	struct rw_op *op = arg;
	int died;

	op->inner = 0;
	died = turnstile_taken(op->r, op->rw, result);

	if (died >= 0) {
		result = reader_through(op->r, op->rw, died);
		/* Reading holding the turnstile, as the process. */
		if (result == 1)
			rw_op_hold(op);
		if (result >= 0)
			result = taken(died);
	} else {
		result = died;
	}
	rw_op_finish(op, result);
}

static void wr_drain_step(void *arg, int result);

/* Holding the turnstile with RW_HELD set: drain the slots (async). */
static void wr_drain(struct rw_op *op)
{
	int ret = 0;

	while (op->slot < SYNCMEM_RWLOCK_SLOTS) {
		struct syncmem_rwlock_slot *s = &op->rw->slot[op->slot];
		uint64_t expected;

		ret = slot_check(s, &expected);
		if (ret < 0)
			break;
		if (!ret) {
			op->slot++;
			op->changed = 0;
			continue;
		}
		ret = syncmem__lock_wait_async_until(op->loop, op->r, &s->owner, expected,
						     op->deadline, wr_drain_step, op, &op->kid);
		if (ret == SYNCMEM_WAIT_QUEUED)
			return;
		if (ret == SYNCMEM_WAIT_TIMED_OUT) {
			ret = -ETIMEDOUT;
			break;
		}
		if (syncmem__keeps_changing(ret, &op->changed)) {
			ret = -EUCLEAN;		/* the word keeps changing under us */
			break;
		}
		ret = slot_waited(op->r, s, ret);
		if (ret)
			break;
	}
	if (op->slot < SYNCMEM_RWLOCK_SLOTS) {
		writer_abandon(op->r, op->rw);
		rw_op_finish(op, ret < 0 ? ret : -EIO);
		return;
	}
	slots_quiet(op->rw);
	__atomic_store_n(&op->rw->writer, syncmem__tid(), __ATOMIC_RELAXED);
	rw_op_hold(op);
	rw_op_finish(op, taken(op->died));
}

static void wr_drain_step(void *arg, int result)
{
	struct rw_op *op = arg;
	int ret = result == SYNCMEM_WAIT_TIMED_OUT ? -ETIMEDOUT :
		  slot_waited(op->r, &op->rw->slot[op->slot], result);

	if (!ret && op->aborted)
		ret = -ECANCELED;
	if (ret) {
		writer_abandon(op->r, op->rw);
		rw_op_finish(op, ret < 0 ? ret : -EIO);
		return;
	}
	wr_drain(op);
}

static void wr_turnstile_passed(void *arg, int result)
{
	struct rw_op *op = arg;

	op->inner = 0;
	result = op->died = turnstile_taken(op->r, op->rw, result);
	if (result < 0) {
		writer_unannounce(op->rw);
		rw_op_finish(op, result);
		return;
	}
	/* Sequentially consistent: the handshake at the top. Held, then unannounced. */
	__atomic_fetch_or(&op->rw->closed, RW_HELD, __ATOMIC_SEQ_CST);
	writer_unannounce(op->rw);
	op->draining = true;
	if (op->aborted) {
		writer_abandon(op->r, op->rw);
		rw_op_finish(op, -ECANCELED);
		return;
	}
	wr_drain(op);
}

static struct rw_op *rw_op_new(struct syncmem_loop *loop, struct syncmem_region *r,
			       struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg,
			       int64_t timeout_ns, bool abortable)
{
	struct rw_op *op = malloc(sizeof(*op));

	if (!op)
		return NULL;
	*op = (struct rw_op){ .loop = loop, .r = r, .rw = rw, .cb = cb, .arg = arg,
			      .hold = async_hold_new(), .timeout_ns = timeout_ns,
			      .deadline = syncmem__deadline(timeout_ns) };
	if (!op->hold || (abortable && syncmem__job_add(loop, &op->job, SYNCMEM__JOB_ACQUIRE,
							rw_op_abort))) {
		rw_op_free(op);
		return NULL;
	}
	return op;
}

/* Queue @op for the turnstile: 0, or -errno (@op is the caller's still). */
static int rw_op_turnstile(struct rw_op *op, syncmem_wait_cb passed)
{
	if (!op->job.id)
		return syncmem_lock_async(op->loop, op->r, &op->rw->turnstile, passed, op);
	return syncmem_lock_async_timed(op->loop, op->r, &op->rw->turnstile, op->timeout_ns,
					passed, op, &op->inner);
}

static int rdlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
			struct syncmem_rwlock *rw, int64_t timeout_ns, syncmem_wait_cb cb,
			void *arg, uint64_t *id_out)
{
	struct rw_op *op;
	int ret;

	if (!loop || !cb)
		return -EINVAL;
	ret = rw_check(r, rw);
	if (!ret)
		ret = syncmem__loop_check(loop);	/* before a share is taken */
	if (ret)
		return ret;
	ret = reader_try(r, rw);
	if (ret < 0)
		return ret;
	if (ret) {
		/* In at once: the callback still runs from the loop. */
		ret = syncmem__loop_post(loop, cb, arg, 0);
		if (ret)
			reader_leave(r, rw);
		else if (id_out)
			*id_out = 0;	/* acquired: nothing to abort */
		return ret;
	}
	op = rw_op_new(loop, r, rw, cb, arg, timeout_ns, id_out);
	if (!op)
		return -ENOMEM;
	ret = rw_op_turnstile(op, rd_turnstile_passed);
	if (ret)
		rw_op_free(op);
	else if (id_out)
		*id_out = op->job.id;
	return ret;
}

int syncmem_rwlock_rdlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
				struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg)
{
	return rdlock_async(loop, r, rw, SYNCMEM_FOREVER, cb, arg, NULL);
}

int syncmem_rwlock_rdlock_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				      struct syncmem_rwlock *rw, int64_t timeout_ns,
				      syncmem_wait_cb cb, void *arg, uint64_t *id_out)
{
	uint64_t id;

	return rdlock_async(loop, r, rw, timeout_ns, cb, arg, id_out ? id_out : &id);
}

static int wrlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
			struct syncmem_rwlock *rw, int64_t timeout_ns, syncmem_wait_cb cb,
			void *arg, uint64_t *id_out)
{
	struct rw_op *op;
	int ret;

	if (!loop || !cb)
		return -EINVAL;
	ret = rw_check(r, rw);
	if (!ret)
		ret = syncmem__loop_check(loop);	/* before the writer is announced */
	if (ret)
		return ret;
	op = rw_op_new(loop, r, rw, cb, arg, timeout_ns, id_out);
	if (!op)
		return -ENOMEM;
	op->writer = true;
	writer_announce(rw);
	ret = rw_op_turnstile(op, wr_turnstile_passed);
	if (ret) {
		writer_unannounce(rw);
		rw_op_free(op);
	} else if (id_out) {
		*id_out = op->job.id;
	}
	return ret;
}

int syncmem_rwlock_wrlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
				struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg)
{
	return wrlock_async(loop, r, rw, SYNCMEM_FOREVER, cb, arg, NULL);
}

int syncmem_rwlock_wrlock_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				      struct syncmem_rwlock *rw, int64_t timeout_ns,
				      syncmem_wait_cb cb, void *arg, uint64_t *id_out)
{
	uint64_t id;

	return wrlock_async(loop, r, rw, timeout_ns, cb, arg, id_out ? id_out : &id);
}
