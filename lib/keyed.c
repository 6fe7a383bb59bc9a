// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Keyed locks: a table of fair mutexes by key.
 *
 * An entry's payload is a SYNCMEM_LOCK_FAIR struct syncmem_lock: one holder
 * per key, the others in its kernel FIFO queue (blocking and async lockers
 * alike). The entry counts its holder and waiters (refs, under the table
 * lock); whoever drops the count to zero returns the entry to the free list,
 * so keys nobody holds or waits for take no room.
 *
 * Every call validates the table against its region first (keytab.h's
 * view) and works within that view: whatever another process writes into
 * the table, the calls stay inside the region, and values this library
 * never writes are -EUCLEAN.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

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

/*
 * Find or create the entry of @key and count ourselves in it, waiting at
 * most @timeout_ns for the table (negative: no limit of the caller's).
 */
static int keyed_get(struct syncmem_region *r, const struct keytab_view *v, const void *key,
		     size_t len, int64_t timeout_ns, struct keytab_entry **out)
{
	uint32_t hash = syncmem__key_hash(key, len);
	struct keytab_entry *e;
	int err = syncmem__keytab_lock(r, v, timeout_ns);

	if (err)
		return err;
	err = syncmem__keytab_find(v, key, len, hash, &e);
	if (!err && !e) {
		err = syncmem__keytab_insert(v, key, len, hash, &e);
		if (!err)
			syncmem_lock_init(entry_lock(e), SYNCMEM_LOCK_FAIR);
	}
	if (!err)
		err = syncmem__keytab_get(e);
	syncmem__keytab_unlock(r, v);
	*out = e;
	return err;
}

/* Drop our count; table lock held. The last one out reclaims the entry. */
static int keyed_put_locked(const struct keytab_view *v, struct keytab_entry *e)
{
	int last = syncmem__keytab_put(e);

	if (last <= 0)
		return last;
	last = syncmem__keytab_unlink(v, e);
	if (!last)
		syncmem__keytab_free(v, e);
	return last;
}

static void keyed_put(struct syncmem_region *r, const struct keytab_view *v,
		      struct keytab_entry *e)
{
	if (syncmem__keytab_lock(r, v, SYNCMEM_FOREVER))
		return;
	keyed_put_locked(v, e);
	syncmem__keytab_unlock(r, v);
}

/*
 * The key's last holder died (@ret -EOWNERDEAD): we hold it, and tell the
 * caller so. The key has no consistent call of its own: it goes on as an
 * ordinary key, so its lock is made consistent here.
 */
static int taken_over(struct syncmem_region *r, struct keytab_entry *e, int ret)
{
	if (ret == -EOWNERDEAD) {
		int err = syncmem_lock_consistent(r, entry_lock(e));

		if (err)
			return err;
	}
	return ret;
}

int syncmem_keyed_lock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
		       size_t len, int64_t timeout_ns)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	struct keytab_view v;
	struct keytab_entry *e;
	int ret = keyed_check(r, k, key, len, &v);

	/* The timeout covers the table and the key together. */
	if (!ret)
		ret = keyed_get(r, &v, key, len, timeout_ns ? timeout_ns : KEYED_TRY_TABLE_NS,
				&e);
	if (ret)
		return ret;
	ret = taken_over(r, e, syncmem_lock_timed(r, entry_lock(e),
						  syncmem__remaining(deadline)));
	if (ret && ret != -EOWNERDEAD)
		keyed_put(r, &v, e);
	return ret;
}

int syncmem_keyed_trylock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			  size_t len)
{
	int ret = syncmem_keyed_lock(r, k, key, len, 0);

	return ret == -ETIMEDOUT ? -EBUSY : ret;
}

/* Release the held entry @e and drop our count; table lock held. */
static int keyed_release_locked(struct syncmem_region *r, const struct keytab_view *v,
				struct keytab_entry *e)
{
	int ret = syncmem_unlock(r, entry_lock(e));

	return ret ? ret : keyed_put_locked(v, e);
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
	struct syncmem_region *r;
	struct keytab_view v;	/* validated when the call was made */
	struct keytab_entry *e;
	syncmem_wait_cb cb;
	void (*fn)(void *arg);
	void *arg;
};

static void keyed_op_locked(void *arg, int result)
{
	struct keyed_op op = *(struct keyed_op *)arg;

	free(arg);
	result = taken_over(op.r, op.e, result);
	if (result && result != -EOWNERDEAD) {
		keyed_put(op.r, &op.v, op.e);
		if (op.cb)
			op.cb(op.arg, result);
		return;
	}
	if (op.cb) {
		op.cb(op.arg, result);
		return;
	}
	op.fn(op.arg);
	keyed_release(op.r, &op.v, op.e);
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
	*op = (struct keyed_op){ .r = r, .v = v, .cb = cb, .fn = fn, .arg = arg };
	ret = keyed_get(r, &op->v, key, len, SYNCMEM_FOREVER, &op->e);
	if (ret) {
		free(op);
		return ret;
	}
	ret = syncmem_lock_async(loop, r, entry_lock(op->e), keyed_op_locked, op);
	if (ret) {
		keyed_put(r, &op->v, op->e);
		free(op);
	}
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
