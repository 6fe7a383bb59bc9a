// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Keyed locks: a table of fair mutexes by key.
 *
 * An entry's payload is a SYNCMEM_LOCK_FAIR struct syncmem_lock: one holder
 * per key, the others in its kernel FIFO queue (blocking and async lockers
 * alike). Nothing counts who uses an entry, so nothing is left behind when
 * a user dies: an entry lives while its lock word is not 0 (held, or
 * waited on), and whoever holds the table lock and finds a word of 0 may
 * free the entry. The unlock that leaves the word at 0 does so at once,
 * and a full table first frees such entries and those of dead holders
 * nobody waits for.
 *
 * A locker looks its key up and tries the lock under the table lock; if
 * that fails, it waits for the entry's lock outside it. Meanwhile the entry
 * may be freed (its holder left before the locker queued) and even reused
 * for another key, so a locker that waited checks, under the table lock,
 * that it holds the lock of an entry still holding its key; else it lets
 * go and starts again. Reusing an entry never resets its lock word: such a
 * late locker may hold it or wait for it, and the key's new lockers queue
 * behind it until it lets go.
 *
 * Every call validates the table against its region first (keytab.h's
 * view) and works within that view: whatever another process writes into
 * the table, the calls stay inside the region, and values this library
 * never writes are -EUCLEAN.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keytab.h"

_Static_assert(sizeof(struct keytab_entry) + sizeof(struct syncmem_lock) <= KEYTAB_ENTRY_SIZE,
	       "keyed entry");

static struct syncmem_lock *entry_lock(struct keytab_entry *e)
{
	return keytab_payload(e);
}

size_t syncmem_keyed_footprint(uint32_t nentries)
{
	return syncmem__keytab_footprint(nentries);
}

int syncmem_keyed_init(void *mem, size_t len, uint32_t nentries, struct syncmem_keyed **out)
{
	return syncmem__keytab_init(mem, len, nentries, SYNCMEM_KEYED_MAGIC, 0,
				    (struct syncmem_keytab **)out);
}

int syncmem_keyed_attach(void *mem, size_t len, struct syncmem_keyed **out)
{
	return syncmem__keytab_attach(mem, len, SYNCMEM_KEYED_MAGIC,
				      (struct syncmem_keytab **)out);
}

uint32_t syncmem_keyed_in_use(struct syncmem_keyed *k)
{
	return __atomic_load_n(&k->t.used, __ATOMIC_RELAXED);
}

/* The table (validated for this call) and the key. */
static int keyed_check(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
		       size_t len, struct keytab_view *v)
{
	int err = syncmem__keytab_view(r, k ? &k->t : NULL, SYNCMEM_KEYED_MAGIC, v);

	return err ? err : syncmem__key_check(key, len);
}

/*
 * A try call's wait for the table lock: its honest holders take it for
 * microseconds, so this never turns a free key into -EBUSY.
 */
#define KEYED_TRY_TABLE_NS	(10 * 1000000LL)

/* Table lock held: free @e if its lock is neither held nor waited on. True if freed. */
static bool keyed_free_if_unused_locked(const struct keytab_view *v, struct keytab_entry *e)
{
	if (!__atomic_load_n(&e->key_len, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&entry_lock(e)->word, __ATOMIC_ACQUIRE))
		return false;
	if (syncmem__keytab_unlink(v, e))
		return false;		/* corrupted: leave the entry where it is */
	syncmem__keytab_free(v, e);
	return true;
}

/*
 * Table lock held: @l was taken over from a dead holder while nobody was
 * queued for it (the kernel hands it to the oldest waiter otherwise). Free
 * it, unless a locker queued since: then leave it to that one as a dead
 * holder's, so that it is told.
 */
static void keyed_drop_dead(struct syncmem_region *r, struct syncmem_lock *l)
{
	uint64_t v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

	/* Release: pairs with the next taker's acquire, as an unlock. */
	if ((v & SYNCMEM_OWNER_WAITERS) ||
	    !__atomic_compare_exchange_n(&l->word, &v, 0, false, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED))
		syncmem__lock_abandon(r, l);
}

/*
 * Table lock held, no entry free: free the entries nobody holds or waits
 * for. Only when there are none, as the last resort before -ENOSPC, also
 * those whose holder died while nobody waited (taken over and dropped: the
 * try never blocks; the death goes unreported, as the key is gone). The
 * number freed.
 */
static uint32_t keyed_sweep_locked(struct syncmem_region *r, const struct keytab_view *v)
{
	uint32_t freed = 0;

	for (int pass = 0; pass < 2 && !freed; pass++) {
		for (uint32_t i = 0; i < v->nentries; i++) {
			struct keytab_entry *e =
				(struct keytab_entry *)(v->entries + (size_t)i * KEYTAB_ENTRY_SIZE);
			struct syncmem_lock *l = entry_lock(e);

			if (!__atomic_load_n(&e->key_len, __ATOMIC_RELAXED))
				continue;
			/* The waiters bit may be stale (kept by a holder that had waited). */
			if (pass && (__atomic_load_n(&l->word, __ATOMIC_RELAXED) & SYNCMEM_OWNER_ID)) {
				int ret = syncmem_trylock(r, l);

				if (!ret)
					syncmem_unlock(r, l);	/* let go of just now */
				else if (ret == -EOWNERDEAD)
					keyed_drop_dead(r, l);
			}
			freed += keyed_free_if_unused_locked(v, e);
		}
	}
	return freed;
}

/*
 * An entry's head count, unused by keyed locks, marks an entry not yet
 * held for its key: its word may still carry a late locker of the entry's
 * previous key (or of none) that died, and that death is not the key's.
 */
#define KEYED_FRESH	1

/*
 * Table lock held: @e's lock was taken for its key with @ret (0 or
 * -EOWNERDEAD). The key has been held from now on; a death found on a
 * fresh entry was nobody's holding of this key: made consistent, it is 0.
 */
static int keyed_got(struct syncmem_region *r, struct keytab_entry *e, int ret)
{
	bool fresh = __atomic_exchange_n(&e->refs, 0, __ATOMIC_RELAXED) == KEYED_FRESH;

	if (ret == -EOWNERDEAD && fresh && !syncmem_lock_consistent(r, entry_lock(e)))
		return 0;
	return ret;
}

/*
 * Find or create the entry of @key and, with @try, try its lock, within
 * @timeout_ns for the table (negative: no limit of the caller's). 0 with
 * the key held (*@taken the trylock's 0 or -EOWNERDEAD), 0 with *@taken
 * -EBUSY (wait for *@out's lock), or -errno.
 */
static int keyed_enter(struct syncmem_region *r, const struct keytab_view *v, const void *key,
		       size_t len, int64_t timeout_ns, bool try, struct keytab_entry **out,
		       int *taken)
{
	uint32_t hash = syncmem__key_hash(key, len);
	struct keytab_entry *e;
	int err = syncmem__keytab_lock(r, v, timeout_ns);

	if (err)
		return err;
	err = syncmem__keytab_find(v, key, len, hash, &e);
	if (!err && !e) {
		err = syncmem__keytab_insert(v, key, len, hash, &e);
		if (err == -ENOSPC && keyed_sweep_locked(r, v))
			err = syncmem__keytab_insert(v, key, len, hash, &e);
		if (!err) {
			/* Fair mode; the word is left as it is (see the top). */
			__atomic_store_n(&entry_lock(e)->flags, SYNCMEM_LOCK_FAIR, __ATOMIC_RELAXED);
			__atomic_store_n(&entry_lock(e)->starving, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&e->refs, KEYED_FRESH, __ATOMIC_RELAXED);
		}
	}
	*taken = -EBUSY;
	if (!err && try) {
		/* Never waits: a dead holder is taken over, a live one is -EBUSY. */
		*taken = syncmem_trylock(r, entry_lock(e));
		if (*taken == 0 || *taken == -EOWNERDEAD)
			*taken = keyed_got(r, e, *taken);
		else if (*taken != -EBUSY)
			err = *taken;
	}
	syncmem__keytab_unlock(r, v);
	*out = e;
	return err;
}

/* Let go of @l, taken with @ret (0 or -EOWNERDEAD) for nothing: a death stays reported. */
static void keyed_let_go(struct syncmem_region *r, struct syncmem_lock *l, int ret)
{
	if (ret == -EOWNERDEAD)
		syncmem__lock_abandon(r, l);
	else
		syncmem_unlock(r, l);
}

/* The result of a check after waiting: the entry was not the key's, look again. */
#define KEYED_AGAIN	1

/*
 * The lock of @e was taken by @me (@ret 0 or -EOWNERDEAD) after waiting
 * outside the table lock: is @e still @key's entry? If so, the key's
 * result (0, or -EOWNERDEAD with the lock made consistent: a key has no
 * consistent call of its own and goes on as an ordinary key). Else it is
 * let go of: KEYED_AGAIN (look the key up again), or -errno.
 */
static int keyed_after_wait(struct syncmem_region *r, const struct keytab_view *v,
			    struct keytab_entry *e, const void *key, size_t len, uint64_t me,
			    int ret)
{
	struct syncmem_lock *l = entry_lock(e);
	int err = syncmem__keytab_lock(r, v, SYNCMEM_FOREVER);
	uint32_t key_len;

	if (err) {
		keyed_let_go(r, l, ret);
		return err;
	}
	key_len = __atomic_load_n(&e->key_len, __ATOMIC_RELAXED);
	if ((__atomic_load_n(&l->word, __ATOMIC_RELAXED) & SYNCMEM_OWNER_ID) != me) {
		ret = KEYED_AGAIN;	/* not ours after all: a peer wrote the word */
	} else if (key_len == len && !memcmp(e->key, key, len)) {
		ret = keyed_got(r, e, ret);
		err = ret == -EOWNERDEAD ? syncmem_lock_consistent(r, l) : 0;
		if (err) {
			keyed_let_go(r, l, ret);
			ret = err;
		}
	} else if (ret == -EOWNERDEAD && key_len) {
		/* Another key's holder died: its next locker is told, not us. */
		syncmem__lock_abandon(r, l);
		ret = KEYED_AGAIN;
	} else {
		/* A free entry's, or another key's: hand it on, free it if unused. */
		if (ret == -EOWNERDEAD)
			syncmem_lock_consistent(r, l);
		if (!syncmem_unlock(r, l))
			keyed_free_if_unused_locked(v, e);
		ret = KEYED_AGAIN;
	}
	syncmem__keytab_unlock(r, v);
	return ret;
}

/*
 * The key's last holder died (@ret -EOWNERDEAD), found by a try under the
 * table lock: we hold it, and tell the caller so, the lock made consistent.
 */
static int taken_over(struct syncmem_region *r, struct keytab_entry *e, int ret)
{
	if (ret == -EOWNERDEAD) {
		int err = syncmem_lock_consistent(r, entry_lock(e));

		if (err) {
			keyed_let_go(r, entry_lock(e), ret);
			return err;
		}
	}
	return ret;
}

/* Looks again after a wait found the entry reused: a key keeps moving, give up. */
#define KEYED_RETRY_MAX	1000

/*
 * Keys are made consistent as they are taken over, so a key's word never
 * reads "not recoverable" unless a peer wrote it: a value this library
 * never leaves there.
 */
static int keyed_result(int ret)
{
	return ret == -ENOTRECOVERABLE ? -EUCLEAN : ret;
}

static int keyed_lock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
		      size_t len, int64_t timeout_ns)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	struct keytab_view v;
	struct keytab_entry *e;
	int ret = keyed_check(r, k, key, len, &v), taken;

	if (ret)
		return ret;
	for (uint32_t tries = 0; tries < KEYED_RETRY_MAX; tries++) {
		int64_t left = syncmem__remaining(deadline);

		/* The timeout covers the table and the key together. */
		ret = keyed_enter(r, &v, key, len, left ? left : KEYED_TRY_TABLE_NS, true, &e,
				  &taken);
		if (ret)
			return ret;
		if (taken != -EBUSY)
			return taken_over(r, e, taken);
		if (!timeout_ns)
			return -ETIMEDOUT;
		ret = syncmem_lock_timed(r, entry_lock(e), syncmem__remaining(deadline));
		if (ret && ret != -EOWNERDEAD)
			return ret;
		/* Taken as this thread: its id is known by now. */
		ret = keyed_after_wait(r, &v, e, key, len, syncmem__cached_owner, ret);
		if (ret != KEYED_AGAIN)
			return ret;
	}
	return -EUCLEAN;
}

int syncmem_keyed_lock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
		       size_t len, int64_t timeout_ns)
{
	return keyed_result(keyed_lock(r, k, key, len, timeout_ns));
}

int syncmem_keyed_trylock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			  size_t len)
{
	int ret = syncmem_keyed_lock(r, k, key, len, 0);

	return ret == -ETIMEDOUT ? -EBUSY : ret;
}

/* Release the held entry @e; the last use frees it. Table lock held. */
static int keyed_release_locked(struct syncmem_region *r, const struct keytab_view *v,
				struct keytab_entry *e)
{
	int ret = syncmem_unlock(r, entry_lock(e));

	if (!ret)
		keyed_free_if_unused_locked(v, e);
	return ret;
}

static int keyed_release(struct syncmem_region *r, const struct keytab_view *v,
			 struct keytab_entry *e)
{
	int ret = syncmem__keytab_lock(r, v, SYNCMEM_FOREVER);

	if (ret)
		return ret;
	ret = keyed_release_locked(r, v, e);
	syncmem__keytab_unlock(r, v);
	return ret;
}

int syncmem_keyed_unlock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			 size_t len)
{
	struct keytab_view v;
	struct keytab_entry *e;
	int ret = keyed_check(r, k, key, len, &v);

	if (ret)
		return ret;
	ret = syncmem__keytab_lock(r, &v, SYNCMEM_FOREVER);
	if (ret)
		return ret;
	ret = syncmem__keytab_find(&v, key, len, syncmem__key_hash(key, len), &e);
	if (!ret)
		ret = e ? keyed_release_locked(r, &v, e) : -EPERM;
	syncmem__keytab_unlock(r, &v);
	return ret;
}

/* An asynchronous keyed lock (or execute) in progress. */
struct keyed_op {
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct keytab_view v;	/* validated when the call was made */
	struct keytab_entry *e;
	syncmem_wait_cb cb;
	void (*fn)(void *arg);
	void *arg;
	uint32_t tries;
	size_t len;
	uint8_t key[SYNCMEM_KEY_MAX];
};

static int keyed_op_start(struct keyed_op *op);

/* The key is held (@result 0 or -EOWNERDEAD), or the call failed. */
static void keyed_op_done(struct keyed_op *op, int result)
{
	struct keyed_op o = *op;

	free(op);
	result = keyed_result(result);
	if (result && result != -EOWNERDEAD) {
		if (o.cb)
			o.cb(o.arg, result);
		return;
	}
	if (o.cb) {
		o.cb(o.arg, result);
		return;
	}
	o.fn(o.arg);
	keyed_release(o.r, &o.v, o.e);
}

/* From the loop: the entry's lock, after waiting for it. */
static void keyed_op_locked(void *arg, int result)
{
	struct keyed_op *op = arg;
	int ours;

	if (result && result != -EOWNERDEAD) {
		keyed_op_done(op, result);
		return;
	}
	/* Taken as this process: its id is known by now. */
	result = keyed_after_wait(op->r, &op->v, op->e, op->key, op->len,
				  syncmem__process_owner_cached(), result);
	if (result != KEYED_AGAIN) {
		keyed_op_done(op, result);
		return;
	}
	/* The entry was reused meanwhile: look the key up again. */
	ours = ++op->tries < KEYED_RETRY_MAX ? keyed_op_start(op) : -EUCLEAN;
	if (ours)
		keyed_op_done(op, ours);
}

/*
 * Look the key up and queue for its lock as the process (async holders are
 * the process, so any of its threads may unlock): 0 (the loop calls back)
 * or -errno.
 */
static int keyed_op_start(struct keyed_op *op)
{
	int taken, ret = keyed_enter(op->r, &op->v, op->key, op->len, SYNCMEM_FOREVER, false,
				     &op->e, &taken);

	return ret ? ret : syncmem_lock_async(op->loop, op->r, entry_lock(op->e),
					      keyed_op_locked, op);
}

static int keyed_async(struct syncmem_loop *loop, struct syncmem_region *r,
		       struct syncmem_keyed *k, const void *key, size_t len,
		       syncmem_wait_cb cb, void (*fn)(void *), void *arg)
{
	struct keyed_op *op;
	struct keytab_view v;
	int ret = keyed_check(r, k, key, len, &v);

	if (ret)
		return ret;
	if (!loop || (!cb && !fn))
		return -EINVAL;
	op = malloc(sizeof(*op));
	if (!op)
		return -ENOMEM;
	*op = (struct keyed_op){ .loop = loop, .r = r, .v = v, .cb = cb, .fn = fn, .arg = arg,
				 .len = len };
	memcpy(op->key, key, len);
	ret = keyed_result(keyed_op_start(op));
	if (ret)
		free(op);
	return ret;
}

int syncmem_keyed_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
			     struct syncmem_keyed *k, const void *key, size_t len,
			     syncmem_wait_cb cb, void *arg)
{
	return keyed_async(loop, r, k, key, len, cb, NULL, arg);
}

int syncmem_keyed_execute(struct syncmem_loop *loop, struct syncmem_region *r,
			  struct syncmem_keyed *k, const void *key, size_t len,
			  void (*fn)(void *arg), void *arg)
{
	if (!fn)
		return -EINVAL;
	return keyed_async(loop, r, k, key, len, NULL, fn, arg);
}
