// SPDX-License-Identifier: GPL-2.0
/*
 * What a worker of the library fuzzer does: random calls on the arena's
 * objects, each result judged. Without the scribbler every result must be
 * one the API documents and the objects must keep their promises (one
 * owner per block, one holder per lock, key and gate, no more holders than
 * units, writers alone); with it, any error is allowed and only the safety
 * promises (no crash, nothing outside the region, an end to every call)
 * are checked, by the supervisor. The introspection calls (waiters,
 * holders, names) get random arguments and must return what the API
 * documents for them, scribbled or not: their answers come from the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libfuzz.h"

#define MAX_OWNED	32
#define TIMEOUT_NS	(int64_t)(rng_below(&w->rng, 3) * 1000000)	/* 0, 1 or 2 ms */

struct held {
	uint32_t blocks[MAX_OWNED];
	unsigned int nblocks;
	bool lock[NLOCKS], gate[NGATES], key[NKEYS];
	unsigned int sem[NSEMS];
	bool writer[NRWLOCKS];
	unsigned int reader[NRWLOCKS];
	struct syncmem_held *wl[WL_NAMES];	/* a Web Locks name held */
	bool wl_shared[WL_NAMES];
	bool wl_stealer[WL_NAMES];		/* taken by a steal: not in the books */
};

static struct held held;

static struct syncmem_lock *lock_at(struct worker *w, unsigned int i)
{
	return (struct syncmem_lock *)(w->a->base + w->a->at.locks) + i;
}

static struct syncmem_gate *gate_at(struct worker *w, unsigned int i)
{
	return (struct syncmem_gate *)(w->a->base + w->a->at.gates) + i;
}

static struct syncmem_sem *sem_at(struct worker *w, unsigned int i)
{
	return (struct syncmem_sem *)(w->a->base + w->a->at.sems) + i;
}

static struct syncmem_rwlock *rwlock_at(struct worker *w, unsigned int i)
{
	return (struct syncmem_rwlock *)(w->a->base + w->a->at.rwlocks) + i;
}

static struct syncmem_region *region(struct worker *w)
{
	return &w->a->region;
}

/* The host has no kernel: a call that must sleep fails with -EBADF there. */
static bool no_kernel(struct worker *w)
{
	return w->a->region.fd < 0;
}

/*
 * Without a kernel and without the scribbler, only calls that never sleep:
 * a sleep that fails leaves a waiter bit behind, and the next unlock would
 * fail too, so the objects' promises could not be checked.
 */
static bool try_only(struct worker *w)
{
	return no_kernel(w) && !w->scribbled;
}

static void doing(struct worker *w, const char *what)
{
	atomic_store(&books->doing[w->index], what);
	atomic_store(&books->since[w->index], now_ns());
}

static bool judge_list(struct worker *w, const char *call, long ret, bool may_sleep, bool always,
		       int n, va_list ap)
{
	atomic_fetch_add(&books->ops[w->index], 1);
	if (ret < 0)
		atomic_fetch_add(&books->errors, 1);
	if (w->scribbled && !always)
		return true;
	if (ret == -EBADF && may_sleep && no_kernel(w))
		return true;
	for (int i = 0; i < n; i++)
		if (va_arg(ap, long) == ret)
			return true;
	finding("%s returned %ld (%s)%s (worker %d seed %#llx)", call, ret,
		ret < 0 ? strerrorname_np((int)-ret) : "",
		w->scribbled ? "" : " on objects nobody scribbled", w->index,
		(unsigned long long)w->seed);
	return false;
}

/*
 * Judge @ret of @call: any error when the objects are scribbled; else one
 * of the listed results (-EBADF too on the host for calls that may sleep).
 */
static bool judge(struct worker *w, const char *call, long ret, bool may_sleep, int n, ...)
{
	va_list ap;
	bool ok;

	va_start(ap, n);
	ok = judge_list(w, call, ret, may_sleep, false, n, ap);
	va_end(ap);
	return ok;
}

/*
 * The same for calls whose results do not depend on what the region holds
 * (introspection: the kernel answers): judged with the scribbler too. On
 * the host, -EBADF where the kernel would be asked (@asks).
 */
static bool judge_always(struct worker *w, const char *call, long ret, bool asks, int n, ...)
{
	va_list ap;
	bool ok;

	va_start(ap, n);
	ok = judge_list(w, call, ret, asks, true, n, ap);
	va_end(ap);
	return ok;
}

/* A holder count that must stay within @max (when nobody scribbles). */
static void enter(struct worker *w, atomic_int *holders, int max, const char *what)
{
	int now = atomic_fetch_add(holders, 1) + 1;

	if (!w->scribbled && now > max)
		finding("%s: %d holders at once, at most %d allowed (worker %d seed %#llx)", what,
			now, max, w->index, (unsigned long long)w->seed);
}

static void leave(atomic_int *holders)
{
	atomic_fetch_sub(holders, 1);
}

/* ---- the pool ----------------------------------------------------------- */

static void pool_alloc(struct worker *w)
{
	struct syncmem_pool *p = w->a->pool;
	uint64_t *block;
	uint32_t off;

	if (held.nblocks == MAX_OWNED)
		return;
	doing(w, "syncmem_pool_alloc");
	off = syncmem_pool_alloc(p);
	atomic_fetch_add(&books->ops[w->index], 1);
	if (!off)
		return;
	/* Whatever the pool's memory says, what it hands out must be in the region. */
	if (w->a->at.pool + (uint64_t)off + POOL_BLOCK > ARENA_BYTES) {
		finding("syncmem_pool_alloc returned offset %#x: a block %u bytes past the region's end (worker %d seed %#llx)",
			off, (unsigned int)(w->a->at.pool + off + POOL_BLOCK - ARENA_BYTES),
			w->index, (unsigned long long)w->seed);
		return;
	}
	block = (uint64_t *)(w->a->base + w->a->at.pool + off);
	if (!w->scribbled && (off - w->a->pool_blocks_off) % POOL_BLOCK)
		finding("syncmem_pool_alloc returned %#x, not on a block boundary", off);
	if (!w->scribbled && atomic_load((_Atomic uint64_t *)block))
		finding("syncmem_pool_alloc handed out block %#x, still stamped %#llx by its owner",
			off, (unsigned long long)*block);
	atomic_store((_Atomic uint64_t *)block, w->seed | 1);
	held.blocks[held.nblocks++] = off;
}

static void pool_free_own(struct worker *w, unsigned int i)
{
	uint32_t off = held.blocks[i];
	uint64_t *block = (uint64_t *)(w->a->base + w->a->at.pool + off);
	int ret;

	if (!w->scribbled && atomic_load((_Atomic uint64_t *)block) != (w->seed | 1))
		finding("block %#x of worker %d was overwritten by another owner: %#llx", off,
			w->index, (unsigned long long)*block);
	atomic_store((_Atomic uint64_t *)block, 0);
	doing(w, "syncmem_pool_free");
	ret = syncmem_pool_free(w->a->pool, off);
	judge(w, "syncmem_pool_free of an owned block", ret, false, 1, 0L);
	held.blocks[i] = held.blocks[--held.nblocks];
}

static void pool_free_foreign(struct worker *w)
{
	uint32_t off;

	/* Never another worker's block: misaligned, or past the blocks. */
	if (rng_below(&w->rng, 2))
		off = (uint32_t)(w->a->pool_blocks_off + rng_below(&w->rng, POOL_BLOCKS) * POOL_BLOCK +
				 1 + rng_below(&w->rng, POOL_BLOCK - 1));
	else
		off = (uint32_t)(w->a->at.pool_len + rng_below(&w->rng, 1u << 31));
	doing(w, "syncmem_pool_free (foreign offset)");
	judge(w, "syncmem_pool_free of a foreign offset", syncmem_pool_free(w->a->pool, off),
	      false, 1, (long)-EINVAL);
}

/*
 * Pass one of its own blocks through transit and back: give it to anyone,
 * take it, take it again. Nobody else knows its offset, so nobody else
 * takes it meanwhile.
 */
static void pool_pass(struct worker *w, unsigned int i)
{
	struct syncmem_pool *p = w->a->pool;
	uint32_t off = held.blocks[i];
	uint64_t holder = 0, me = 0;
	long ret;

	doing(w, "syncmem_pool_give");
	judge(w, "syncmem_pool_give of an owned block", syncmem_pool_give(p, off, SYNCMEM_POOL_ANYONE),
	      false, 1, 0L);
	syncmem_pool_self_id(&me);	/* 0 without the module */
	doing(w, "syncmem_pool_holder");
	ret = syncmem_pool_holder(p, off, &holder);
	if (judge(w, "syncmem_pool_holder of a block in transit", ret, false, 1, 1L) &&
	    !w->scribbled && holder != me)
		finding("block %#x given to anyone names giver %#llx, not %#llx (worker %d seed %#llx)",
			off, (unsigned long long)holder, (unsigned long long)me, w->index,
			(unsigned long long)w->seed);
	doing(w, "syncmem_pool_take");
	judge(w, "syncmem_pool_take of a block in transit", syncmem_pool_take(p, off, me), false,
	      1, 0L);
	judge(w, "syncmem_pool_take of a block held already", syncmem_pool_take(p, off, me),
	      false, 1, 1L);
}

static void pool_look(struct worker *w)
{
	struct syncmem_pool *again;
	uint32_t n;
	int ret;

	doing(w, "syncmem_pool_free_count");
	n = syncmem_pool_free_count(w->a->pool);
	if (!w->scribbled && n > POOL_BLOCKS)
		finding("syncmem_pool_free_count says %u free of %u", n, POOL_BLOCKS);
	doing(w, "syncmem_pool_attach");
	ret = syncmem_pool_attach(w->a->base + w->a->at.pool, w->a->at.pool_len, &again);
	judge(w, "syncmem_pool_attach", ret, false, 1, 0L);
	if (!ret)
		syncmem_pool_detach(again);	/* a private handle of its own */
}

/* ---- locks, gates, semaphores, rwlocks ---------------------------------- */

static void lock_op(struct worker *w)
{
	unsigned int i = (unsigned int)rng_below(&w->rng, NLOCKS);
	struct syncmem_lock *l = lock_at(w, i);
	int ret;

	if (held.lock[i]) {
		/* Whatever it returns, the lock is not ours to give back twice. */
		leave(&books->lock_holders[i]);
		held.lock[i] = false;
		doing(w, "syncmem_unlock");
		ret = syncmem_unlock(region(w), l);
		judge(w, "syncmem_unlock of a held lock", ret, true, 1, 0L);
		return;
	}
	switch (try_only(w) ? 0 : rng_below(&w->rng, 3)) {
	case 0:
		doing(w, "syncmem_trylock");
		/* A held lock: the kernel says whether its holder lives. */
		ret = syncmem_trylock(region(w), l);
		judge(w, "syncmem_trylock", ret, true, 2, 0L, (long)-EBUSY);
		break;
	case 1:
		doing(w, "syncmem_lock_timed");
		ret = syncmem_lock_timed(region(w), l, TIMEOUT_NS);
		judge(w, "syncmem_lock_timed", ret, true, 2, 0L, (long)-ETIMEDOUT);
		break;
	default:
		doing(w, "syncmem_unlock (not held)");
		ret = syncmem_unlock(region(w), l);
		judge(w, "syncmem_unlock of a lock not held", ret, true, 1, (long)-EPERM);
		return;
	}
	if (!ret) {
		held.lock[i] = true;
		enter(w, &books->lock_holders[i], 1, "a lock");
	}
}

static void gate_op(struct worker *w)
{
	unsigned int i = (unsigned int)rng_below(&w->rng, NGATES);
	int ret;

	if (try_only(w))
		return;
	if (held.gate[i]) {
		leave(&books->gate_holders[i]);
		held.gate[i] = false;
		doing(w, "syncmem_gate_signal");
		ret = syncmem_gate_signal(region(w), gate_at(w, i));
		judge(w, "syncmem_gate_signal", ret, true, 2, 0L, 1L);
		return;
	}
	doing(w, "syncmem_gate_wait");
	ret = syncmem_gate_wait(region(w), gate_at(w, i), TIMEOUT_NS);
	judge(w, "syncmem_gate_wait", ret, true, 2, 0L, (long)-ETIMEDOUT);
	if (!ret) {
		held.gate[i] = true;
		enter(w, &books->gate_holders[i], 1, "a gate");
	}
}

static void sem_op(struct worker *w)
{
	unsigned int i = (unsigned int)rng_below(&w->rng, NSEMS);
	struct syncmem_sem *s = sem_at(w, i);
	int ret;

	if (held.sem[i] && rng_below(&w->rng, 2)) {
		leave(&books->sem_holders[i]);
		held.sem[i]--;
		doing(w, "syncmem_sem_post");
		judge(w, "syncmem_sem_post", syncmem_sem_post(region(w), s), true, 1, 0L);
		return;
	}
	if (try_only(w) || rng_below(&w->rng, 2)) {
		doing(w, "syncmem_sem_trywait");
		ret = syncmem_sem_trywait(region(w), s);
		judge(w, "syncmem_sem_trywait", ret, false, 2, 0L, (long)-EAGAIN);
	} else {
		doing(w, "syncmem_sem_timedwait");
		ret = syncmem_sem_timedwait(region(w), s, TIMEOUT_NS);
		judge(w, "syncmem_sem_timedwait", ret, true, 2, 0L, (long)-ETIMEDOUT);
	}
	if (!ret) {
		held.sem[i]++;
		enter(w, &books->sem_holders[i], SEM_UNITS, "a semaphore");
	}
}

static void rwlock_op(struct worker *w)
{
	unsigned int i = (unsigned int)rng_below(&w->rng, NRWLOCKS);
	struct syncmem_rwlock *rw = rwlock_at(w, i);
	bool write = rng_below(&w->rng, 2);
	int ret;

	if (held.writer[i] || held.reader[i]) {
		/* Reader again while holding would deadlock behind a writer: release. */
		if (held.writer[i])
			leave(&books->rw_writers[i]);
		else
			leave(&books->rw_readers[i]);
		doing(w, "syncmem_rwlock_unlock");
		ret = syncmem_rwlock_unlock(region(w), rw);
		judge(w, "syncmem_rwlock_unlock", ret, true, 1, 0L);
		if (held.writer[i])
			held.writer[i] = false;
		else
			held.reader[i]--;
		return;
	}
	if (try_only(w) || rng_below(&w->rng, 2)) {
		doing(w, write ? "syncmem_rwlock_trywrlock" : "syncmem_rwlock_tryrdlock");
		ret = write ? syncmem_rwlock_trywrlock(region(w), rw) :
			      syncmem_rwlock_tryrdlock(region(w), rw);
		judge(w, "syncmem_rwlock_try*lock", ret, true, 2, 0L, (long)-EBUSY);
	} else {
		doing(w, write ? "syncmem_rwlock_wrlock_timed" : "syncmem_rwlock_rdlock_timed");
		ret = write ? syncmem_rwlock_wrlock_timed(region(w), rw, TIMEOUT_NS) :
			      syncmem_rwlock_rdlock_timed(region(w), rw, TIMEOUT_NS);
		judge(w, "syncmem_rwlock_*lock_timed", ret, true, 2, 0L, (long)-ETIMEDOUT);
	}
	if (ret)
		return;
	if (write) {
		held.writer[i] = true;
		enter(w, &books->rw_writers[i], 1, "an rwlock's writers");
		if (!w->scribbled && atomic_load(&books->rw_readers[i]))
			finding("a writer got an rwlock while %d readers hold it",
				atomic_load(&books->rw_readers[i]));
	} else {
		held.reader[i]++;
		atomic_fetch_add(&books->rw_readers[i], 1);
		if (!w->scribbled && atomic_load(&books->rw_writers[i]))
			finding("a reader got an rwlock while its writer holds it");
	}
}

/* ---- the keyed table ---------------------------------------------------- */

static void keyed_op(struct worker *w)
{
	unsigned int k = (unsigned int)rng_below(&w->rng, NKEYS);
	char key[16];
	int len = snprintf(key, sizeof(key), "key-%u", k), ret;
	struct syncmem_keyed *again;

	/* The table's own mutex sleeps when contended. */
	switch (try_only(w) ? 0 : rng_below(&w->rng, 6)) {
	case 0:
		doing(w, "syncmem_keyed_attach");
		ret = syncmem_keyed_attach(w->a->base + w->a->at.keyed, w->a->at.keyed_len, &again);
		judge(w, "syncmem_keyed_attach", ret, false, 1, 0L);
		doing(w, "syncmem_keyed_in_use");
		if (!w->scribbled && syncmem_keyed_in_use(w->a->keyed) > KEYED_ENTRIES)
			finding("syncmem_keyed_in_use above the table's %d entries", KEYED_ENTRIES);
		return;
	case 1: case 2:
		if (held.key[k]) {
			leave(&books->key_holders[k]);
			held.key[k] = false;
			doing(w, "syncmem_keyed_unlock");
			ret = syncmem_keyed_unlock(region(w), w->a->keyed, key, len);
			judge(w, "syncmem_keyed_unlock", ret, true, 1, 0L);
			return;
		}
		doing(w, "syncmem_keyed_unlock (not held)");
		ret = syncmem_keyed_unlock(region(w), w->a->keyed, key, len);
		judge(w, "syncmem_keyed_unlock of a key not held", ret, true, 1, (long)-EPERM);
		return;
	case 3:
		if (held.key[k])
			return;
		doing(w, "syncmem_keyed_lock");
		ret = syncmem_keyed_lock(region(w), w->a->keyed, key, len, TIMEOUT_NS);
		judge(w, "syncmem_keyed_lock", ret, true, 3, 0L, (long)-ETIMEDOUT,
		      (long)-ENOSPC);
		break;
	default:
		if (held.key[k])
			return;
		doing(w, "syncmem_keyed_trylock");
		ret = syncmem_keyed_trylock(region(w), w->a->keyed, key, len);
		judge(w, "syncmem_keyed_trylock", ret, true, 3, 0L, (long)-EBUSY, (long)-ENOSPC);
		break;
	}
	if (!ret) {
		held.key[k] = true;
		enter(w, &books->key_holders[k], 1, "a key");
	}
}

/* ---- the Web Locks manager ----------------------------------------------- */

static void wl_release(struct worker *w, unsigned int n)
{
	int ret;

	if (!held.wl_stealer[n])
		leave(held.wl_shared[n] ? &books->wl_shared[n] : &books->wl_excl[n]);
	doing(w, "syncmem_locks_release");
	ret = syncmem_locks_release(held.wl[n]);
	/* Steals happen only with the scribbler: nothing is stolen otherwise. */
	judge(w, "syncmem_locks_release", ret, true, 1, 0L);
	held.wl[n] = NULL;
	held.wl_stealer[n] = false;
}

static void wl_granted(struct worker *w, unsigned int n, struct syncmem_held *h,
		       unsigned int flags);

/* The worker's event loop for async requests (kernel runs only), made on first use. */
static struct syncmem_loop *wl_loop;

/*
 * What the worker's one async request's callback reported, and how many
 * times it ran (static: a request the scribbler left pending may still
 * complete later).
 */
static struct wl_outcome {
	int calls;
	int result;
	struct syncmem_held *h;
} wl_out;
static bool wl_stuck;	/* a scribbled manager left a request pending */

static void wl_async_cb(void *arg, int result, struct syncmem_held *h)
{
	struct wl_outcome *o = arg;

	o->calls++;
	o->result = result;
	o->h = h;
}

/* Run the loop until the request's callback ran, or until @until (if not 0). */
static void wl_run(uint64_t until)
{
	while (!wl_out.calls && (!until || now_ns() < until))
		if (syncmem_loop_run_once(wl_loop, until ? 1000000 : -1) < 0)
			break;
}

/*
 * An async request of name @n: the loop runs for up to 2 ms, then the
 * request is aborted if it is still pending (so that no two workers wait
 * for each other's names for ever) and the loop runs until its callback
 * has run, exactly once. An abort that succeeds must end it with
 * -ECANCELED; one after the grant (-ENOENT) changes nothing.
 */
static void wl_async(struct worker *w, struct syncmem_locks *m, unsigned int n,
		     const char *name, size_t len, unsigned int flags)
{
	uint64_t id = 0;
	int ret, aborted = 1;

	if (wl_stuck || (!wl_loop && syncmem_loop_new(&wl_loop)))
		return;
	memset(&wl_out, 0, sizeof(wl_out));
	doing(w, "syncmem_locks_request_async");
	ret = syncmem_locks_request_async(wl_loop, m, name, len, flags, wl_async_cb, &wl_out,
					  &id);
	judge(w, "syncmem_locks_request_async", ret, true, 1, 0L);
	if (ret)
		return;
	doing(w, "syncmem_loop_run_once (a Web Locks request)");
	wl_run(now_ns() + 2000000);
	if (!wl_out.calls) {
		doing(w, "syncmem_locks_abort");
		aborted = syncmem_locks_abort(wl_loop, id);
		judge(w, "syncmem_locks_abort", aborted, false, 2, 0L, (long)-ENOENT);
	}
	/* Unscribbled, it must end; scribbled, it may never: give it a second. */
	doing(w, "syncmem_loop_run_once (a Web Locks request ending)");
	wl_run(w->scribbled ? now_ns() + 1000000000 : 0);
	if (!wl_out.calls) {
		if (!w->scribbled)
			finding("syncmem_locks_request_async: no callback after the abort (worker %d seed %#llx)",
				w->index, (unsigned long long)w->seed);
		wl_stuck = true;
		return;
	}
	if (wl_out.calls != 1 && !w->scribbled)
		finding("syncmem_locks_request_async: its callback ran %d times (worker %d seed %#llx)",
			wl_out.calls, w->index, (unsigned long long)w->seed);
	if (!aborted && wl_out.result != -ECANCELED && !w->scribbled)
		finding("syncmem_locks_abort returned 0 and the callback got %d (worker %d seed %#llx)",
			wl_out.result, w->index, (unsigned long long)w->seed);
	judge(w, "syncmem_locks_request_async's callback", wl_out.result, false, 5, 0L,
	      (long)-EOWNERDEAD, (long)-EBUSY, (long)-ENOSPC, (long)-ECANCELED);
	if ((wl_out.result == 0 || wl_out.result == -EOWNERDEAD) && wl_out.h)
		wl_granted(w, n, wl_out.h, flags);
}

static void weblocks_op(struct worker *w)
{
	static const unsigned int modes[] = {
		0, SYNCMEM_LOCKS_SHARED, SYNCMEM_LOCKS_IF_AVAILABLE,
		SYNCMEM_LOCKS_IF_AVAILABLE | SYNCMEM_LOCKS_SHARED,
	};
	struct syncmem_locks *m = w->a->weblocks, *again;
	unsigned int n = (unsigned int)rng_below(&w->rng, WL_NAMES), flags;
	struct syncmem_lock_info info[4];
	struct syncmem_held *h = NULL;
	char name[SYNCMEM_LOCKS_NAME_MAX + 1];
	size_t len, nh, np;
	int ret;

	if (!m)
		return;
	/* Short names, and one of the longest. */
	memset(name, 'w', sizeof(name));
	len = n == WL_NAMES - 1 ? SYNCMEM_LOCKS_NAME_MAX : (size_t)snprintf(name, 16, "wl-%u", n);
	switch (rng_below(&w->rng, 8)) {
	case 0:
		doing(w, "syncmem_locks_attach");
		ret = syncmem_locks_attach(region(w), w->a->base + w->a->at.weblocks, &again);
		judge(w, "syncmem_locks_attach", ret, false, 1, 0L);
		if (!ret)
			syncmem_locks_detach(again);
		return;
	case 1:
		nh = rng_below(&w->rng, 5);
		np = rng_below(&w->rng, 5);
		doing(w, "syncmem_locks_query");
		ret = syncmem_locks_query(m, info, &nh, info, &np);
		judge(w, "syncmem_locks_query", ret, true, 1, 0L);
		if (!ret && !w->scribbled && (nh > WL_ROOM_REQS * 2 || np > WL_ROOM_REQS * 2))
			finding("syncmem_locks_query: %zu held, %zu pending in a manager of %d requests",
				nh, np, WL_ROOM_REQS * 2);
		return;
	case 2: case 3:
		if (held.wl[n])
			wl_release(w, n);
		return;
	case 4:
		/* Refused before the manager is read, scribbled or not. */
		doing(w, "syncmem_locks_request (bad arguments)");
		ret = syncmem_locks_request(m, name, SYNCMEM_LOCKS_NAME_MAX + 1, 0, 0, &h);
		judge_always(w, "syncmem_locks_request of a name too long", ret, false, 1,
			     (long)-ENAMETOOLONG);
		ret = syncmem_locks_request(m, "-r", 2, 0, 0, &h);
		judge_always(w, "syncmem_locks_request of a reserved name", ret, false, 1,
			     (long)-EINVAL);
		ret = syncmem_locks_request(m, name, len, SYNCMEM_LOCKS_STEAL |
					    SYNCMEM_LOCKS_SHARED, 0, &h);
		judge_always(w, "syncmem_locks_request STEAL|SHARED", ret, false, 1,
			     (long)-EINVAL);
		return;
	default:
		break;
	}
	if (held.wl[n])
		return;
	flags = modes[rng_below(&w->rng, 4)];
	/* Steals break the holder counts: only where just safety is judged. */
	if (w->scribbled && !rng_below(&w->rng, 4))
		flags = SYNCMEM_LOCKS_STEAL;
	/* On a kernel, one request in four goes through an event loop. */
	if (!no_kernel(w) && !rng_below(&w->rng, 4)) {
		wl_async(w, m, n, name, len, flags);
		return;
	}
	doing(w, "syncmem_locks_request");
	ret = syncmem_locks_request(m, name, len, flags, TIMEOUT_NS, &h);
	judge(w, "syncmem_locks_request", ret, true, 4, 0L, (long)-ETIMEDOUT, (long)-EBUSY,
	      (long)-ENOSPC);
	if (ret && ret != -EOWNERDEAD)
		return;
	wl_granted(w, n, h, flags);
}

/* Note name @n granted to this worker as @flags asked, through @h. */
static void wl_granted(struct worker *w, unsigned int n, struct syncmem_held *h,
		       unsigned int flags)
{
	held.wl[n] = h;
	held.wl_shared[n] = flags & SYNCMEM_LOCKS_SHARED;
	held.wl_stealer[n] = flags & SYNCMEM_LOCKS_STEAL;
	if (held.wl_stealer[n])
		return;
	if (held.wl_shared[n]) {
		enter(w, &books->wl_shared[n], MAX_WORKERS, "a Web Locks name shared");
		if (!w->scribbled && atomic_load(&books->wl_excl[n]))
			finding("a Web Locks name held shared and exclusive at once (worker %d seed %#llx)",
				w->index, (unsigned long long)w->seed);
	} else {
		enter(w, &books->wl_excl[n], 1, "a Web Locks name exclusive");
		if (!w->scribbled && atomic_load(&books->wl_shared[n]))
			finding("a Web Locks name held exclusive and shared at once (worker %d seed %#llx)",
				w->index, (unsigned long long)w->seed);
	}
}

/* ---- introspection ------------------------------------------------------ */

/*
 * An address for an introspection call: a word of an object of the arena,
 * any aligned word, any byte, across the end, below the start, or not in
 * the region at all. *@ok: a @width-byte object aligned to @align there is
 * inside the region (what the library checks before asking the kernel).
 */
static void *pick_address(struct worker *w, size_t width, size_t align, bool *ok)
{
	char *base = w->a->base;
	static char elsewhere[16];
	uintptr_t a;

	switch (rng_below(&w->rng, 11)) {
	case 0:
		a = (uintptr_t)&lock_at(w, (unsigned int)rng_below(&w->rng, NLOCKS))->word;
		break;
	case 1:
		a = (uintptr_t)&gate_at(w, (unsigned int)rng_below(&w->rng, NGATES))->word;
		break;
	case 2:
		a = (uintptr_t)&rwlock_at(w, (unsigned int)rng_below(&w->rng,
								       NRWLOCKS))->turnstile.word;
		break;
	case 3:
		a = (uintptr_t)&sem_at(w, (unsigned int)rng_below(&w->rng, NSEMS))->word;
		break;
	case 4:
		a = (uintptr_t)base + w->a->at.pool + rng_below(&w->rng, w->a->at.pool_len / 8) * 8;
		break;
	case 5:
		a = (uintptr_t)base + rng_below(&w->rng, ARENA_BYTES / align) * align;
		break;
	case 6:
		a = (uintptr_t)base + rng_below(&w->rng, ARENA_BYTES);
		break;
	case 7:
		a = (uintptr_t)base + ARENA_BYTES - width + rng_below(&w->rng, 2 * width + 1);
		break;
	case 8:
		a = (uintptr_t)base - align * (1 + rng_below(&w->rng, 4));
		break;
	case 9:
		a = (uintptr_t)elsewhere;
		break;
	default:
		a = 0;
		break;
	}
	*ok = a && a >= (uintptr_t)base && a - (uintptr_t)base <= ARENA_BYTES &&
	      ARENA_BYTES - (a - (uintptr_t)base) >= width && !(a % align);
	return (void *)a;
}

/* The arena's region, or a read-only view of it (the library refuses names there). */
static struct syncmem_region *pick_region(struct worker *w, struct syncmem_region *ro)
{
	if (!rng_below(&w->rng, 32))
		return NULL;
	if (rng_below(&w->rng, 6))
		return region(w);
	*ro = *region(w);
	ro->rdonly = true;
	return ro;
}

static bool printable_name(const char *s, size_t cap)
{
	size_t len = strnlen(s, cap);

	if (!len || len == cap)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static void waiters_op(struct worker *w)
{
	static const size_t caps[] = { 0, 1, 2, 16, SYNCMEM_LIST_MAX, SYNCMEM_LIST_MAX + 1 };
	size_t cap = caps[rng_below(&w->rng, sizeof(caps) / sizeof(caps[0]))];
	struct syncmem_waiter_info *out = calloc(cap ? cap : 1, sizeof(*out));
	struct syncmem_region ro, *r = pick_region(w, &ro);
	bool word_ok = true, null_out = !rng_below(&w->rng, 16);
	void *word = rng_below(&w->rng, 2) ? pick_address(w, 4, 4, &word_ok) : NULL;
	bool valid = r && !(null_out && cap) && (word_ok || !word);	/* NULL: every word */
	int ret;

	if (!out)
		return;
	doing(w, "syncmem_waiters");
	ret = syncmem_waiters(r, word, null_out ? NULL : out, cap);
	if (!valid) {
		judge_always(w, "syncmem_waiters with a bad argument", ret, false, 1, (long)-EINVAL);
	} else if (ret < 0) {
		judge_always(w, "syncmem_waiters", ret, true, 1, (long)-ENOMEM);
	} else if (!null_out) {
		size_t n = (size_t)ret < cap ? (size_t)ret : cap;

		atomic_fetch_add(&books->ops[w->index], 1);
		for (size_t i = 0; i < n; i++) {
			const struct syncmem_waiter_info *x = &out[i], *p = i ? &out[i - 1] : NULL;

			if ((x->size != 4 && x->size != 8) || x->offset % x->size ||
			    x->offset + x->size > ARENA_BYTES ||
			    (word && x->offset != (uint64_t)((char *)word - w->a->base)) ||
			    (p && (p->offset > x->offset ||
				   (p->offset == x->offset && p->position >= x->position)))) {
				finding("syncmem_waiters entry %zu of %d: a %u-byte word at %#llx position %u (the word asked: %p) (worker %d seed %#llx)",
					i, ret, x->size, (unsigned long long)x->offset, x->position,
					word, w->index, (unsigned long long)w->seed);
				break;
			}
		}
	}
	free(out);
}

static void holder_op(struct worker *w)
{
	struct syncmem_region ro, *r = pick_region(w, &ro);
	struct syncmem_holder_info info = { .pid = -1, .tid = -1, .state = -1 };
	unsigned int i = (unsigned int)rng_below(&w->rng, NLOCKS);
	bool word_ok = true, null_out = !rng_below(&w->rng, 16), mine;
	void *word;
	int ret;

	/* Mostly a lock this worker may hold: WHO must name us then. */
	if (rng_below(&w->rng, 2))
		word = &lock_at(w, i)->word;
	else
		word = pick_address(w, 8, 8, &word_ok);
	mine = word == &lock_at(w, i)->word && held.lock[i];
	doing(w, "syncmem_holder");
	ret = syncmem_holder(r, word, null_out ? NULL : &info);
	if (!r || null_out || !word_ok) {
		judge_always(w, "syncmem_holder with a bad argument", ret, false, 1, (long)-EINVAL);
		return;
	}
	if (!judge_always(w, "syncmem_holder", ret, true, 1, 0L) || ret)
		return;
	if (info.state < SYNCMEM_HOLDER_FREE || info.state > SYNCMEM_HOLDER_NOTRECOVERABLE ||
	    (info.state != SYNCMEM_HOLDER_ALIVE && (info.pid || info.tid)) ||
	    (!w->scribbled && mine && (info.state != SYNCMEM_HOLDER_ALIVE || info.pid != getpid())))
		finding("syncmem_holder of %s: word %#llx state %d pid %d tid %d (we are %d) (worker %d seed %#llx)",
			mine ? "a lock we hold" : "a word", (unsigned long long)info.word, info.state,
			info.pid, info.tid, getpid(), w->index, (unsigned long long)w->seed);
}

static void name_op(struct worker *w)
{
	static const char *const names[] = {
		"lock", "the pool", "gate 3", "", "tab\there", "\x7f", "caf\xc3\xa9", "\x01",
		"~!@#$%^&*()_+{}|:<>?",
		"12345678901234567890123456789012345678901234567",	/* 47 */
		"123456789012345678901234567890123456789012345678",	/* 48 */
	};
	static const size_t sizes[] = { 0, 1, 4, 8, 64, sizeof(struct syncmem_lock), ARENA_BYTES,
					ARENA_BYTES + 1, SIZE_MAX };
	struct syncmem_region ro, *r = pick_region(w, &ro);
	size_t size = sizes[rng_below(&w->rng, sizeof(sizes) / sizeof(sizes[0]))];
	int kind = (int)rng_below(&w->rng, 11) - (rng_below(&w->rng, 16) ? 0 : 1);
	const char *name = rng_below(&w->rng, 4) ?
			   names[rng_below(&w->rng, sizeof(names) / sizeof(names[0]))] : NULL;
	bool ok = true, reaches;
	void *obj = pick_address(w, 1, 4, &ok);
	long bad = -EINVAL;	/* a NULL, misaligned or unknown argument */
	int ret;

	/* What the library checks before the kernel is asked. */
	if (!r || !obj) {
		ok = false;
	} else {
		size_t len = name ? strnlen(name, SYNCMEM_OBJECT_NAME_MAX + 1) : 0;
		size_t span = name ? size : 1;
		uintptr_t a = (uintptr_t)obj, base = (uintptr_t)w->a->base;
		bool fields = !name || (size && kind >= SYNCMEM_OBJ_WORD &&
					kind <= SYNCMEM_OBJ_LOCKS && len &&
					len <= SYNCMEM_OBJECT_NAME_MAX);
		bool inside = a >= base && a - base <= ARENA_BYTES &&
			      ARENA_BYTES - (a - base) >= span;

		ok = fields && inside && !(a % 4);
		/* An object not wholly in the region: -ERANGE. */
		if (fields && !inside)
			bad = -ERANGE;
	}
	reaches = ok && !r->rdonly;
	doing(w, "syncmem_name_object");
	ret = syncmem_name_object(r, obj, size, kind, name);
	if (!ok)
		judge_always(w, "syncmem_name_object with a bad argument", ret, false, 1, bad);
	else if (r->rdonly)
		judge_always(w, "syncmem_name_object on a read-only region", ret, false, 1, (long)-EBADF);
	else if (!name)
		judge_always(w, "syncmem_name_object removing a name", ret, reaches, 2, 0L, (long)-ENOENT);
	else if (!printable_name(name, SYNCMEM_OBJECT_NAME_MAX + 1))
		judge_always(w, "syncmem_name_object with a name not printable ASCII", ret, reaches, 1,
		      (long)-EINVAL);
	else
		judge_always(w, "syncmem_name_object", ret, reaches, 3, 0L, (long)-ENOSPC, (long)-ENOMEM);
}

static void objects_op(struct worker *w)
{
	static const size_t caps[] = { 0, 1, 3, SYNCMEM_OBJECTS_MAX, SYNCMEM_LIST_MAX + 1 };
	size_t cap = caps[rng_below(&w->rng, sizeof(caps) / sizeof(caps[0]))];
	struct syncmem_object_info *out = malloc((cap ? cap : 1) * sizeof(*out));
	struct syncmem_region ro, *r = pick_region(w, &ro);
	bool null_out = !rng_below(&w->rng, 16);
	int ret;

	if (!out)
		return;
	memset(out, 0x7f, (cap ? cap : 1) * sizeof(*out));
	doing(w, "syncmem_objects");
	ret = syncmem_objects(r, null_out ? NULL : out, cap);
	if (!r || (null_out && cap)) {
		judge_always(w, "syncmem_objects with a bad argument", ret, false, 1, (long)-EINVAL);
	} else if (ret < 0) {
		judge_always(w, "syncmem_objects", ret, true, 1, (long)-ENOMEM);
	} else {
		size_t n = (size_t)ret < cap ? (size_t)ret : cap;

		atomic_fetch_add(&books->ops[w->index], 1);
		if (ret > SYNCMEM_OBJECTS_MAX)
			finding("syncmem_objects says %d names, more than %d (worker %d seed %#llx)",
				ret, SYNCMEM_OBJECTS_MAX, w->index, (unsigned long long)w->seed);
		for (size_t i = 0; i < n && !null_out; i++) {
			const struct syncmem_object_info *o = &out[i];

			if (o->offset % 4 || !o->size || o->offset >= ARENA_BYTES ||
			    o->size > ARENA_BYTES - o->offset || o->kind < SYNCMEM_OBJ_WORD ||
			    o->kind > SYNCMEM_OBJ_LOCKS ||
			    !printable_name(o->name, sizeof(o->name)) ||
			    (i && o->offset <= out[i - 1].offset)) {
				finding("syncmem_objects entry %zu of %d: \"%.47s\" at %#llx size %llu kind %d (worker %d seed %#llx)",
					i, ret, o->name, (unsigned long long)o->offset,
					(unsigned long long)o->size, o->kind, w->index,
					(unsigned long long)w->seed);
				break;
			}
		}
	}
	free(out);
}

/* Introspection calls with random arguments: documented errors, never a crash. */
static void introspect_op(struct worker *w)
{
	switch (rng_below(&w->rng, 4)) {
	case 0:
		waiters_op(w);
		break;
	case 1:
		holder_op(w);
		break;
	case 2:
		name_op(w);
		break;
	default:
		objects_op(w);
		break;
	}
}

/* ---- the loop ----------------------------------------------------------- */

/* Give back everything held, so the clean run can check the objects are idle. */
static void release_all(struct worker *w)
{
	for (unsigned int i = 0; i < NLOCKS; i++)
		if (held.lock[i]) {
			leave(&books->lock_holders[i]);
			held.lock[i] = false;
			doing(w, "syncmem_unlock");
			judge(w, "syncmem_unlock of a held lock", syncmem_unlock(region(w),
										 lock_at(w, i)),
			      true, 1, 0L);
		}
	while (held.nblocks)
		pool_free_own(w, 0);
	for (unsigned int i = 0; i < NGATES; i++)
		if (held.gate[i]) {
			leave(&books->gate_holders[i]);
			held.gate[i] = false;
			doing(w, "syncmem_gate_signal");
			judge(w, "syncmem_gate_signal", syncmem_gate_signal(region(w), gate_at(w, i)),
			      true, 2, 0L, 1L);
		}
	for (unsigned int i = 0; i < NSEMS; i++)
		for (; held.sem[i]; held.sem[i]--) {
			leave(&books->sem_holders[i]);
			doing(w, "syncmem_sem_post");
			judge(w, "syncmem_sem_post", syncmem_sem_post(region(w), sem_at(w, i)), true,
			      1, 0L);
		}
	for (unsigned int i = 0; i < NRWLOCKS; i++)
		while (held.writer[i] || held.reader[i]) {
			if (held.writer[i]) {
				leave(&books->rw_writers[i]);
				held.writer[i] = false;
			} else {
				leave(&books->rw_readers[i]);
				held.reader[i]--;
			}
			doing(w, "syncmem_rwlock_unlock");
			judge(w, "syncmem_rwlock_unlock", syncmem_rwlock_unlock(region(w),
										  rwlock_at(w, i)),
			      true, 1, 0L);
		}
	for (unsigned int n = 0; n < WL_NAMES; n++)
		if (held.wl[n])
			wl_release(w, n);
	for (unsigned int k = 0; k < NKEYS; k++)
		if (held.key[k]) {
			char key[16];
			int len = snprintf(key, sizeof(key), "key-%u", k);

			leave(&books->key_holders[k]);
			held.key[k] = false;
			doing(w, "syncmem_keyed_unlock");
			judge(w, "syncmem_keyed_unlock", syncmem_keyed_unlock(region(w), w->a->keyed,
									      key, len),
			      true, 1, 0L);
		}
}

void worker_run(struct worker *w, uint64_t until)
{
	trace_worker = w->index;
	/* No kernel to issue owner ids (plain memory): one per worker, as it would. */
	if (w->a->region.fd < 0)
		syncmem__cached_owner = 1 + (uint64_t)w->index;
	while (now_ns() < until) {
		unsigned int k = (unsigned int)rng_below(&w->rng, 15);

		/* Only the kinds of objects this run uses (introspection is of all). */
		if (k < 14 && !(w->objects & (k < 4 ? OBJ_POOL : k < 10 ? OBJ_LOCKS :
					      k < 12 ? OBJ_KEYED : OBJ_WEBLOCKS)))
			continue;
		switch (k) {
		case 0: case 1:
			pool_alloc(w);
			break;
		case 2:
			if (held.nblocks && rng_below(&w->rng, 4))
				pool_free_own(w, (unsigned int)rng_below(&w->rng, held.nblocks));
			else if (held.nblocks)
				pool_pass(w, (unsigned int)rng_below(&w->rng, held.nblocks));
			break;
		case 3:
			if (rng_below(&w->rng, 8))
				pool_free_foreign(w);
			else
				pool_look(w);
			break;
		case 4: case 5:
			lock_op(w);
			break;
		case 6:
			gate_op(w);
			break;
		case 7:
			sem_op(w);
			break;
		case 8: case 9:
			rwlock_op(w);
			break;
		case 10: case 11:
			keyed_op(w);
			break;
		case 12: case 13:
			weblocks_op(w);
			break;
		default:
			introspect_op(w);
			break;
		}
	}
	release_all(w);
	doing(w, "exiting");
	_exit(0);
}
