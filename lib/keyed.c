// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Keyed locks: a table of fair mutexes by key.
 *
 * An entry's payload is a SYNCMEM_LOCK_FAIR struct syncmem_lock: one holder
 * per key, the others in its kernel FIFO queue (blocking and async lockers
 * alike). Nothing counts who uses an entry, so nothing is left behind when
 * a user dies: an entry may be reclaimed while its lock word is 0 (neither
 * held nor waited on). Entries stay in their chain after an unlock, ready
 * for the key's next locker; a table out of free entries reclaims every
 * idle one at once, and, as the last resort, those of dead holders nobody
 * waits for.
 *
 * The fast paths take no table-wide lock: a lock looks its key up with no
 * lock at all, CASes the entry's word 0 -> its owner id and checks the
 * chain's sequence (keytab.h); an unlock looks up likewise and releases.
 * Different keys share no written cache line on these paths. Anything
 * else (the key absent, held, the chain changing) goes through the lock
 * of the key's chain (one of 16 stripes), held for a lookup and a trylock,
 * and the table lock only to take a free entry.
 *
 * A locker that must wait does so outside every table lock. Meanwhile the
 * entry may be reclaimed (its holder left before the locker queued) and
 * even reused for another key, so a locker that waited checks, under the
 * chain lock, that it holds the lock of its key's entry; else it lets go
 * and starts again. Reusing an entry never resets its lock word: such a
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
#include "ready.h"

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
	return k ? __atomic_load_n(&k->t.used, __ATOMIC_RELAXED) : 0;
}

/* The table (validated for this call) and the key, prepared in @kk. */
static int keyed_check(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
		       size_t len, struct keytab_view *v, struct keytab_key *kk)
{
	int err = syncmem__keytab_view(r, k ? &k->t : NULL, SYNCMEM_KEYED_MAGIC, v);

	if (!err)
		err = syncmem__key_check(key, len);
	if (!err)
		syncmem__keytab_key(kk, key, len);
	return err;
}

/*
 * A try call's wait for a table or chain lock: their honest holders take
 * them for microseconds, so this never turns a free key into -EBUSY.
 */
#define KEYED_TRY_TABLE_NS	(10 * 1000000LL)

/*
 * An entry's head count, unused by keyed locks, marks an entry not yet
 * held for its key: its word may still carry a late locker of the entry's
 * previous key (or of none) that died, and that death is not the key's.
 */
#define KEYED_FRESH	1

/*
 * @e's lock was taken for its key with @ret (0 or -EOWNERDEAD), and the
 * key is @e's (the chain lock held, or checked with no lock). The key has
 * been held from now on; a death found on a fresh entry was nobody's
 * holding of this key: made consistent, it is 0.
 */
static int keyed_got(struct syncmem_region *r, struct keytab_entry *e, int ret)
{
	bool fresh;

	if (__builtin_expect(!__atomic_load_n(&e->refs, __ATOMIC_RELAXED), 1))
		return ret;
	fresh = __atomic_exchange_n(&e->refs, 0, __ATOMIC_RELAXED) == KEYED_FRESH;
	if (ret == -EOWNERDEAD && fresh && !syncmem_lock_consistent(r, entry_lock(e)))
		return 0;
	return ret;
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
 * Table lock held: reclaim @e if nobody holds or waits for its lock, with
 * @dead, also if its holder died while nobody waited (taken over and
 * dropped: the try never blocks). True if freed.
 */
static bool keyed_reclaim(struct syncmem_region *r, const struct keytab_view *v,
			  struct keytab_entry *e, bool dead)
{
	struct syncmem_lock *l = entry_lock(e);
	uint32_t hash = __atomic_load_n(&e->hash, __ATOMIC_RELAXED);
	bool freed;
	int ret;

	if (syncmem__keytab_chain_lock(r, v, hash, SYNCMEM_FOREVER))
		return false;
	syncmem__keytab_settle(v, hash);
	/* The waiters bit may be stale (kept by a holder that had waited). */
	if (dead && (__atomic_load_n(&l->word, __ATOMIC_RELAXED) & SYNCMEM_OWNER_ID)) {
		ret = syncmem_trylock(r, l);

		if (!ret)
			syncmem_unlock(r, l);	/* let go of just now */
		else if (ret == -EOWNERDEAD)
			keyed_drop_dead(r, l);
	}
	/*
	 * Not while the word is not 0; not at all when the chain is not one
	 * we build. An entry with a key that is not in its chain is freed
	 * too: under the table lock, only a holder of it that died between
	 * an unlink and the free leaves one so.
	 */
	ret = syncmem__keytab_unlink_if(v, e, &l->word, hash);
	freed = !ret || ret == -ENOENT;
	syncmem__keytab_chain_unlock(r, v, hash);
	if (freed)
		syncmem__keytab_free(v, e);
	return freed;
}

/*
 * Table lock held, no entry free: free the entries nobody holds or waits
 * for, and those a locker that died took and never linked. Only when
 * there are none, as the last resort before -ENOSPC, also those whose
 * holder died while nobody waited (the death goes unreported, as the key
 * is gone). The number freed.
 */
static uint32_t keyed_sweep_locked(struct syncmem_region *r, const struct keytab_view *v)
{
	uint32_t freed = 0;

	for (int pass = 0; pass < 2 && !freed; pass++) {
		for (uint32_t i = 0; i < v->nentries; i++) {
			struct keytab_entry *e =
				(struct keytab_entry *)(v->entries + (size_t)i * KEYTAB_ENTRY_SIZE);
			/* Acquire: the hash read next is at least as new as the key. */
			uint32_t len = __atomic_load_n(&e->key_len, __ATOMIC_ACQUIRE);

			if (len == KEYTAB_TAKEN) {
				/* Its taker held the table lock we hold now: it died. */
				syncmem__keytab_free(v, e);
				freed++;
			} else if (len) {
				freed += keyed_reclaim(r, v, e, pass);
			}
		}
	}
	return freed;
}

/*
 * A free entry for a new key, in *@out: 0 with the table lock held (the
 * caller links the entry or frees it, then lets go), or -errno without it
 * (-ENOSPC: the table is full).
 */
static int keyed_take(struct syncmem_region *r, const struct keytab_view *v,
		      int64_t timeout_ns, struct keytab_entry **out)
{
	int err = syncmem__keytab_lock(r, v, timeout_ns);

	if (err)
		return err;
	err = syncmem__keytab_take(v, out);
	if (err == -ENOSPC && keyed_sweep_locked(r, v))
		err = syncmem__keytab_take(v, out);
	if (err)
		syncmem__keytab_unlock(r, v);
	return err;
}

/* Chain lock held: @e (taken) becomes @k's entry. */
static void keyed_link(const struct keytab_view *v, struct keytab_entry *e,
		       const struct keytab_key *k)
{
	/* Fair mode; the word is left as it is (see the top). Set before it is seen. */
	__atomic_store_n(&entry_lock(e)->flags, SYNCMEM_LOCK_FAIR, __ATOMIC_RELAXED);
	__atomic_store_n(&entry_lock(e)->starving, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->refs, KEYED_FRESH, __ATOMIC_RELAXED);
	syncmem__keytab_link(v, e, k);
}

/*
 * Find or create the entry of @k and, with @try, try its lock, within
 * @timeout_ns for the table (negative: no limit of the caller's). 0 with
 * the key held (*@taken the trylock's 0 or -EOWNERDEAD), 0 with *@taken
 * -EBUSY (wait for *@out's lock), or -errno.
 */
static int keyed_enter(struct syncmem_region *r, const struct keytab_view *v,
		       const struct keytab_key *k, int64_t timeout_ns, bool try,
		       struct keytab_entry **out, int *taken)
{
	struct keytab_entry *e, *spare;
	int err = syncmem__keytab_chain_lock(r, v, k->hash, timeout_ns);

	if (err)
		return err;
	syncmem__keytab_settle(v, k->hash);
	err = syncmem__keytab_find(v, k, &e);
	if (!err && !e) {
		/*
		 * A free entry from the table lock, never taken under a chain
		 * lock (the order is the table's, then a chain's). That lock
		 * is held until the entry is linked or given back: one left
		 * taken is a dead locker's, which the next sweep frees.
		 */
		syncmem__keytab_chain_unlock(r, v, k->hash);
		err = keyed_take(r, v, timeout_ns, &spare);
		if (err)
			return err;
		err = syncmem__keytab_chain_lock(r, v, k->hash, timeout_ns);
		if (err) {
			syncmem__keytab_free(v, spare);
			syncmem__keytab_unlock(r, v);
			return err;
		}
		syncmem__keytab_settle(v, k->hash);
		err = syncmem__keytab_find(v, k, &e);
		if (!err && !e) {
			keyed_link(v, spare, k);
			e = spare;
		} else {
			/* Another locker linked the key first, or an error. */
			syncmem__keytab_free(v, spare);
		}
		syncmem__keytab_unlock(r, v);
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
	syncmem__keytab_chain_unlock(r, v, k->hash);
	*out = e;
	return err;
}

/*
 * Each thread remembers where it last found a few short keys: the table,
 * the region's mapping, the entry and its bucket's word at the time. While
 * that word is unchanged the chain is, so the entry is still the key's, and
 * a lock (or unlock) of a remembered key skips the table's validation, the
 * hash and the walk. The remembered view was checked to lie inside a
 * mapping of this base and size, so a hint stays inside the region even if
 * the table was replaced since; the magic and the state are checked anyway.
 * Nothing here is shared: a stale hint only costs the full path.
 */
#define KEYED_HINTS		4
#define KEYED_HINT_KEY		16	/* longest key remembered */

struct keyed_hint {
	const struct syncmem_region *r;	/* compared, never dereferenced */
	const struct syncmem_keyed *k;
	const void *base;
	size_t size;
	struct keytab_entry *e;
	uint64_t *bucket;
	uint64_t snap;
	uint64_t len;
	uint64_t key[KEYED_HINT_KEY / 8];
};

static __thread struct keyed_hint keyed_hints[KEYED_HINTS]
	__attribute__((tls_model("initial-exec")));

/*
 * The bytes of a key of 1 to 16 bytes as two zero-padded little-endian
 * words, read with a few loads that stay inside the key (overlapping
 * ones, shifted), not a call to memcpy().
 */
static inline void short_key_words(const uint8_t *p, size_t len, uint64_t *w)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t a, b;
	uint32_t c, d;

	if (len >= 8) {
		memcpy(&a, p, 8);
		memcpy(&b, p + len - 8, 8);
		w[0] = a;
		w[1] = len > 8 ? b >> (8 * (16 - len)) : 0;
	} else if (len >= 4) {
		memcpy(&c, p, 4);
		memcpy(&d, p + len - 4, 4);
		w[0] = c | ((uint64_t)d >> (8 * (8 - len))) << 32;
		w[1] = 0;
	} else {
		w[0] = p[0] | (uint64_t)p[len / 2] << (8 * (len / 2)) |
		       (uint64_t)p[len - 1] << (8 * (len - 1));
		w[1] = 0;
	}
#else
	w[0] = 0;
	w[1] = 0;
	memcpy(w, p, len);
#endif
}

/* The short key's words in @w and its hint slot, or NULL for a longer key. */
static inline struct keyed_hint *hint_slot(const void *key, size_t len, uint64_t *w)
{
	if (len - 1 >= KEYED_HINT_KEY || !key)
		return NULL;
	short_key_words(key, len, w);
	return &keyed_hints[(w[0] ^ (w[0] >> 29) ^ w[1]) & (KEYED_HINTS - 1)];
}

/* The entry @h remembers, if it is for @r, @k and the key in @w. */
static inline struct keytab_entry *hint_entry(const struct keyed_hint *h,
					      const struct syncmem_region *r,
					      const struct syncmem_keyed *k, size_t len,
					      const uint64_t *w)
{
	if (h->r != r || h->k != k || h->len != len || h->key[0] != w[0] || h->key[1] != w[1] ||
	    r->base != h->base || r->size != h->size || r->rdonly ||
	    __atomic_load_n(&k->t.magic, __ATOMIC_RELAXED) != SYNCMEM_KEYED_MAGIC ||
	    __atomic_load_n(&k->t.state, __ATOMIC_RELAXED) != SYNCMEM__READY ||
	    __atomic_load_n(h->bucket, __ATOMIC_ACQUIRE) != h->snap)
		return NULL;
	return h->e;
}

/*
 * Does @e hold @h's key? A hint whose bucket word matches by chance (a
 * table made again at the same place, a sequence come round after 2^32
 * changes) must still not hand out another key's entry.
 */
static inline bool hint_key_is(const struct keyed_hint *h, const struct keytab_entry *e)
{
	const uint64_t *w = (const uint64_t *)e->key;

	return __atomic_load_n(&e->key_len, __ATOMIC_ACQUIRE) == h->len &&
	       __atomic_load_n(&w[0], __ATOMIC_ACQUIRE) == h->key[0] &&
	       __atomic_load_n(&w[1], __ATOMIC_ACQUIRE) == h->key[1];
}

static void hint_store(struct keyed_hint *h, const struct syncmem_region *r,
		       const struct syncmem_keyed *k, const struct keytab_view *v,
		       struct keytab_entry *e, uint64_t snap, size_t len, const uint64_t *w)
{
	*h = (struct keyed_hint){ .r = r, .k = k, .base = r->base, .size = r->size, .e = e,
				  .bucket = syncmem__keytab_bucket(v, __atomic_load_n(&e->hash,
										     __ATOMIC_RELAXED)),
				  .snap = snap, .len = len, .key = { w[0], w[1] } };
}

/*
 * Take @e's word 0 -> our id, and keep it only if the chain's @bucket word
 * still reads @snap (and, with a hint @h, @e holds its key): the entry is
 * then the key's. 0, or -EAGAIN (let go: take the full path).
 */
static inline int take_unchanged(struct syncmem_region *r, struct keytab_entry *e,
				 const uint64_t *bucket, uint64_t snap,
				 const struct keyed_hint *h)
{
	uint64_t seen = 0, id = syncmem__cached_owner;

	/*
	 * Sequentially consistent, both: a reclaimer's unlink marks the
	 * chain, then reads the word (syncmem__keytab_unlink_if()), so either
	 * it sees our id or we see its mark.
	 */
	if (!id || !__atomic_compare_exchange_n(&entry_lock(e)->word, &seen, id, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return -EAGAIN;
	if (__builtin_expect(__atomic_load_n(bucket, __ATOMIC_SEQ_CST) != snap ||
			     (h && !hint_key_is(h, e)), 0)) {
		/* Maybe not the key's entry by the time we took it: let go. */
		syncmem_unlock(r, entry_lock(e));
		return -EAGAIN;
	}
	return keyed_got(r, e, 0);
}

/*
 * The fast path without a hint: find @k's entry with no lock and take it.
 * 0 with the key held (the entry and the chain's word in *@out and
 * *@snapshot), or -EAGAIN: go the way of keyed_enter().
 */
static inline int keyed_try_unlocked(struct syncmem_region *r, const struct keytab_view *v,
				     const struct keytab_key *k, struct keytab_entry **out,
				     uint64_t *snapshot)
{
	if (!syncmem__cached_owner || syncmem__keytab_find_unlocked(v, k, out, snapshot) ||
	    !*out)
		return -EAGAIN;
	return take_unchanged(r, *out, syncmem__keytab_bucket(v, k->hash), *snapshot, NULL);
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
 * outside the chain lock: is @e still @k's entry? If so, the key's result
 * (0, or -EOWNERDEAD with the lock made consistent: a key has no
 * consistent call of its own and goes on as an ordinary key). Else it is
 * let go of: KEYED_AGAIN (look the key up again), or -errno.
 */
static int keyed_after_wait(struct syncmem_region *r, const struct keytab_view *v,
			    struct keytab_entry *e, const struct keytab_key *k, uint64_t me,
			    int ret)
{
	struct syncmem_lock *l = entry_lock(e);
	struct keytab_entry *found;
	int err = syncmem__keytab_chain_lock(r, v, k->hash, SYNCMEM_FOREVER);

	if (err) {
		keyed_let_go(r, l, ret);
		return err;
	}
	syncmem__keytab_settle(v, k->hash);
	err = syncmem__keytab_find(v, k, &found);
	if (err) {
		keyed_let_go(r, l, ret);
		ret = err;
	} else if ((__atomic_load_n(&l->word, __ATOMIC_RELAXED) & SYNCMEM_OWNER_ID) != me) {
		ret = KEYED_AGAIN;	/* not ours after all: a peer wrote the word */
	} else if (found == e) {
		ret = keyed_got(r, e, ret);
		err = ret == -EOWNERDEAD ? syncmem_lock_consistent(r, l) : 0;
		if (err) {
			keyed_let_go(r, l, ret);
			ret = err;
		}
	} else if (ret == -EOWNERDEAD && keytab_keyed(e)) {
		/* Another key's holder died: its next locker is told, not us. */
		syncmem__lock_abandon(r, l);
		ret = KEYED_AGAIN;
	} else {
		/* A free entry's, or another key's: hand it on. */
		if (ret == -EOWNERDEAD)
			syncmem_lock_consistent(r, l);
		syncmem_unlock(r, l);
		ret = KEYED_AGAIN;
	}
	syncmem__keytab_chain_unlock(r, v, k->hash);
	return ret;
}

/*
 * The key's last holder died (@ret -EOWNERDEAD), found by a try under the
 * chain lock: we hold it, and tell the caller so, the lock made consistent.
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

static __attribute__((noinline)) int keyed_lock_slow(struct syncmem_region *r,
						     const struct keytab_view *v,
						     const struct keytab_key *k,
						     int64_t timeout_ns)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	struct keytab_entry *e;
	int ret, taken;

	for (uint32_t tries = 0; tries < KEYED_RETRY_MAX; tries++) {
		int64_t left = syncmem__remaining(deadline);

		/* The timeout covers the table and the key together. */
		ret = keyed_enter(r, v, k, left ? left : KEYED_TRY_TABLE_NS, true, &e, &taken);
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
		ret = keyed_after_wait(r, v, e, k, syncmem__cached_owner, ret);
		if (ret != KEYED_AGAIN)
			return ret;
	}
	return -EUCLEAN;
}

/* A lock that no hint served: validate, look up, remember. */
static __attribute__((noinline)) int keyed_lock_full(struct syncmem_region *r,
						     struct syncmem_keyed *k, const void *key,
						     size_t len, int64_t timeout_ns,
						     struct keyed_hint *h, const uint64_t *w)
{
	struct keytab_entry *e;
	struct keytab_view v;
	struct keytab_key kk;
	uint64_t snap;
	int ret = keyed_check(r, k, key, len, &v, &kk);

	if (ret)
		return ret;
	if (__builtin_expect(!keyed_try_unlocked(r, &v, &kk, &e, &snap), 1)) {
		if (h)
			hint_store(h, r, k, &v, e, snap, len, w);
		return 0;
	}
	return keyed_result(keyed_lock_slow(r, &v, &kk, timeout_ns));
}

int syncmem_keyed_lock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
		       size_t len, int64_t timeout_ns)
{
	uint64_t w[KEYED_HINT_KEY / 8] = { 0 };
	struct keyed_hint *h = hint_slot(key, len, w);
	struct keytab_entry *e;

	if (h && r && (e = hint_entry(h, r, k, len, w)) &&
	    !take_unchanged(r, e, h->bucket, h->snap, h))
		return 0;
	return keyed_lock_full(r, k, key, len, timeout_ns, h, w);
}

int syncmem_keyed_trylock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			  size_t len)
{
	int ret = syncmem_keyed_lock(r, k, key, len, 0);

	return ret == -ETIMEDOUT ? -EBUSY : ret;
}

/* Release the held entry @e of @k. */
static int keyed_release(struct syncmem_region *r, const struct keytab_view *v,
			 const struct keytab_key *k)
{
	struct keytab_entry *e;
	uint64_t snap;
	int ret;

	/* No lock: while we hold @e it stays in its chain; check the walk itself. */
	if (!syncmem__keytab_find_unlocked(v, k, &e, &snap) &&
	    syncmem__keytab_unchanged(v, k->hash, snap))
		return e ? syncmem_unlock(r, entry_lock(e)) : -EPERM;
	ret = syncmem__keytab_chain_lock(r, v, k->hash, SYNCMEM_FOREVER);
	if (ret)
		return ret;
	syncmem__keytab_settle(v, k->hash);
	ret = syncmem__keytab_find(v, k, &e);
	if (!ret)
		ret = e ? syncmem_unlock(r, entry_lock(e)) : -EPERM;
	syncmem__keytab_chain_unlock(r, v, k->hash);
	return ret;
}

/* An unlock that no hint served. */
static __attribute__((noinline)) int keyed_unlock_full(struct syncmem_region *r,
						       struct syncmem_keyed *k, const void *key,
						       size_t len)
{
	struct keytab_view v;
	struct keytab_key kk;
	int ret = keyed_check(r, k, key, len, &v, &kk);

	return ret ? ret : keyed_result(keyed_release(r, &v, &kk));
}

int syncmem_keyed_unlock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			 size_t len)
{
	uint64_t w[KEYED_HINT_KEY / 8] = { 0 };
	struct keyed_hint *h = hint_slot(key, len, w);
	struct keytab_entry *e;

	/* A remembered key: its chain unchanged, the entry is the key's. */
	if (h && r && (e = hint_entry(h, r, k, len, w)) && hint_key_is(h, e)) {
		uint64_t seen = syncmem__cached_owner;

		/* Release, as syncmem_unlock()'s, which does everything else. */
		if (seen && __atomic_compare_exchange_n(&entry_lock(e)->word, &seen, 0, false,
							__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return 0;
		return keyed_result(syncmem_unlock(r, entry_lock(e)));
	}
	return keyed_unlock_full(r, k, key, len);
}

int syncmem_keyed_held(struct syncmem_region *r, struct syncmem_keyed *k)
{
	struct keytab_view v;
	int n = 0, err = syncmem__keytab_view(r, k ? &k->t : NULL, SYNCMEM_KEYED_MAGIC, &v);

	if (err)
		return err;
	for (uint32_t i = 0; i < v.nentries; i++) {
		struct keytab_entry *e =
			(struct keytab_entry *)(v.entries + (size_t)i * KEYTAB_ENTRY_SIZE);

		n += keytab_keyed(e) &&
		     __atomic_load_n(&entry_lock(e)->word, __ATOMIC_RELAXED);
	}
	return n;
}

/* An asynchronous keyed lock (or execute) in progress. */
struct keyed_op {
	struct syncmem__job job;	/* abortable while pending (id 0: never) */
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct keytab_view v;	/* validated when the call was made */
	struct keytab_entry *e;
	syncmem_wait_cb cb;
	void (*fn)(void *arg);
	void *arg;
	uint32_t tries;
	uint64_t deadline;	/* of its waits for the key, or SYNCMEM_NO_DEADLINE */
	uint64_t inner;		/* the job id of its pending lock of the entry (0: none) */
	struct keytab_key k;
};

static int keyed_op_start(struct keyed_op *op);

/* The key is held (@result 0 or -EOWNERDEAD), or the call failed. */
static void keyed_op_done(struct keyed_op *op, int result)
{
	struct keyed_op o = *op;

	if (op->job.id)
		syncmem__job_del(op->loop, &op->job);
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
	/*
	 * A key has no consistent call: a death fn was told of (it asked)
	 * is over; one it was not told of goes on to the key's next locker,
	 * the key left as a dead holder's.
	 */
	if (!syncmem__execute(o.fn, o.arg, result) && result == -EOWNERDEAD &&
	    syncmem__lock_held(entry_lock(o.e)))
		syncmem__lock_abandon(o.r, entry_lock(o.e));
	else
		keyed_release(o.r, &o.v, &o.k);
}

/* From the loop: the entry's lock, after waiting for it. */
static void keyed_op_locked(void *arg, int result)
{
	struct keyed_op *op = arg;
	int ours;

	op->inner = 0;
	if (result && result != -EOWNERDEAD) {
		keyed_op_done(op, result);
		return;
	}
	/* Taken as this process: its id is known by now. */
	result = keyed_after_wait(op->r, &op->v, op->e, &op->k, syncmem__process_owner_cached(),
				  result);
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
	int taken, ret = keyed_enter(op->r, &op->v, &op->k, SYNCMEM_FOREVER, false, &op->e,
				     &taken);

	if (ret)
		return ret;
	if (!op->job.id)
		return syncmem_lock_async(op->loop, op->r, entry_lock(op->e), keyed_op_locked, op);
	return syncmem_lock_async_timed(op->loop, op->r, entry_lock(op->e),
					syncmem__remaining(op->deadline), keyed_op_locked, op,
					&op->inner);
}

/* Abort: its pending lock of the entry, which calls back -ECANCELED. */
static int keyed_op_abort(struct syncmem__job *j)
{
	struct keyed_op *op = (struct keyed_op *)j;
	struct syncmem__job *in = syncmem__job_find(op->loop, op->inner, SYNCMEM__JOB_ACQUIRE);

	/* None: the key's lock was taken, its callback is due. */
	return in ? in->abort(in) : -ENOENT;
}

static int keyed_async(struct syncmem_loop *loop, struct syncmem_region *r,
		       struct syncmem_keyed *k, const void *key, size_t len,
		       syncmem_wait_cb cb, void (*fn)(void *), void *arg, int64_t timeout_ns,
		       uint64_t *id_out)
{
	struct keyed_op *op;
	struct keytab_view v;
	struct keytab_key kk;
	int ret = keyed_check(r, k, key, len, &v, &kk);

	if (ret)
		return ret;
	if (!loop || (!cb && !fn))
		return -EINVAL;
	/* Before an entry is taken: a loop being freed could not deliver it. */
	ret = syncmem__loop_check(loop);
	if (ret)
		return ret;
	op = malloc(sizeof(*op));
	if (!op)
		return -ENOMEM;
	*op = (struct keyed_op){ .loop = loop, .r = r, .v = v, .cb = cb, .fn = fn, .arg = arg,
				 .k = kk, .deadline = syncmem__deadline(timeout_ns) };
	if (id_out) {
		ret = syncmem__job_add(loop, &op->job, SYNCMEM__JOB_ACQUIRE, keyed_op_abort);
		if (ret) {
			free(op);
			return ret;
		}
	}
	ret = keyed_result(keyed_op_start(op));
	if (ret) {
		if (op->job.id)
			syncmem__job_del(loop, &op->job);
		free(op);
	} else if (id_out) {
		*id_out = op->job.id;
	}
	return ret;
}

int syncmem_keyed_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
			     struct syncmem_keyed *k, const void *key, size_t len,
			     syncmem_wait_cb cb, void *arg)
{
	return keyed_async(loop, r, k, key, len, cb, NULL, arg, SYNCMEM_FOREVER, NULL);
}

int syncmem_keyed_lock_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				   struct syncmem_keyed *k, const void *key, size_t len,
				   int64_t timeout_ns, syncmem_wait_cb cb, void *arg,
				   uint64_t *id_out)
{
	uint64_t id;

	if (!cb)
		return -EINVAL;
	return keyed_async(loop, r, k, key, len, cb, NULL, arg, timeout_ns,
			   id_out ? id_out : &id);
}

int syncmem_keyed_execute(struct syncmem_loop *loop, struct syncmem_region *r,
			  struct syncmem_keyed *k, const void *key, size_t len,
			  void (*fn)(void *arg), void *arg)
{
	if (!fn)
		return -EINVAL;
	return keyed_async(loop, r, k, key, len, NULL, fn, arg, SYNCMEM_FOREVER, NULL);
}
