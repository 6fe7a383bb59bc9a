// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Single-flight (the seed's asyncOne) across processes.
 *
 * A flight is an entry of a key table. The first caller of a key (the
 * leader) creates it, takes a pool block for the result and arms a death
 * guard on the entry's done word; later callers of the same key (followers)
 * count themselves in and sleep on that word. The leader runs the function,
 * writes the result bytes (or its error) into the block, unlinks the entry
 * so that the next call starts a new flight (no caching), stores DONE with
 * release and wakes the followers. Each caller copies the result out and
 * drops its count; the last one frees the block and the entry.
 *
 * If the leader's process dies before DONE, the kernel runs the guard when
 * its handle goes away: DIED is stored (only if the word still says
 * RUNNING) and the followers wake to -EOWNERDEAD. The first caller to see a
 * DIED entry drops the dead leader's count and unlinks it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "keytab.h"
#include "pool.h"

#define FLIGHT_RUNNING	0u
#define FLIGHT_DONE	1u
#define FLIGHT_DIED	2u

/* The payload of a flight's entry. */
struct flight {
	uint32_t done;		/* FLIGHT_*: the word followers sleep on */
	int32_t error;		/* the function's negative errno, or 0 */
	uint32_t result_off;	/* pool block holding the result */
	uint32_t result_len;
	uint32_t leader;	/* the leader's pid (diagnostics) */
	uint32_t linked;	/* in its chain: new callers join it */
	uint32_t leader_gone;	/* a dead leader's count was dropped */
	uint32_t reserved[9];
};

_Static_assert(sizeof(struct keytab_entry) + sizeof(struct flight) <= KEYTAB_ENTRY_SIZE,
	       "flight entry");

/* One caller's part in a flight. */
struct flight_call {
	struct syncmem_region *r;
	struct syncmem_flight *f;
	struct syncmem_pool pool;	/* the result pool, attached for this call */
	struct keytab_entry *e;
	struct flight_call *outer;	/* the flight this thread led around this one */
	uint64_t guard;
	uint32_t block;			/* a leader's result block */
	bool leader;
};

/* The flights this thread is running the function of, innermost first. */
static __thread struct flight_call *leading;

/* Would joining @e wait for this very thread? */
static bool leading_it(struct keytab_entry *e)
{
	for (struct flight_call *c = leading; c; c = c->outer)
		if (c->e == e)
			return true;
	return false;
}

static struct flight *entry_flight(struct keytab_entry *e)
{
	return keytab_payload(e);
}

size_t syncmem_flight_footprint(uint32_t nentries)
{
	return syncmem__keytab_footprint(nentries);
}

int syncmem_flight_init(struct syncmem_region *r, void *mem, size_t len, uint32_t nentries,
			struct syncmem_pool *pool, struct syncmem_flight **out)
{
	__u64 pool_off, mem_off;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!pool || syncmem__object_offset(r, pool->hdr, pool->g.footprint, 1, &pool_off) ||
	    syncmem__object_offset(r, mem, len, 1, &mem_off))
		return -EINVAL;
	return syncmem__keytab_init(mem, len, nentries, SYNCMEM_FLIGHT_MAGIC, pool_off,
				    (struct syncmem_keytab **)out);
}

int syncmem_flight_attach(struct syncmem_region *r, void *mem, size_t len,
			  struct syncmem_flight **out)
{
	__u64 mem_off;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (syncmem__object_offset(r, mem, len, 1, &mem_off))
		return -EINVAL;
	return syncmem__keytab_attach(mem, len, SYNCMEM_FLIGHT_MAGIC,
				      (struct syncmem_keytab **)out);
}

uint32_t syncmem_flight_in_flight(struct syncmem_flight *f)
{
	return __atomic_load_n(&f->t.used, __ATOMIC_RELAXED);
}

/* Validate the call and find the result pool the table was built with. */
static int flight_call_init(struct flight_call *c, struct syncmem_region *r,
			    struct syncmem_flight *f, const void *key, size_t len)
{
	__u64 off;
	int err;

	*c = (struct flight_call){ .r = r, .f = f };
	if (syncmem__object_offset(r, f, sizeof(*f), 1, &off) || r->size - off < f->t.footprint ||
	    f->t.magic != SYNCMEM_FLIGHT_MAGIC || f->t.aux >= r->size)
		return -EINVAL;
	err = syncmem__key_check(key, len);
	if (err)
		return err;
	/* Attached at init: no waiting for a creator now. */
	err = syncmem__pool_attach_at(&c->pool, (char *)r->base + f->t.aux, r->size - f->t.aux,
				      0, !r->rdonly);
	return err == -ETIMEDOUT ? -EPROTO : err;
}

/* Drop one count of @e; the last one frees the result block and the entry. */
static void flight_put_locked(struct flight_call *c, struct keytab_entry *e)
{
	struct flight *fl = entry_flight(e);

	if (--e->refs)
		return;
	if (fl->linked)
		syncmem__keytab_unlink(&c->f->t, e);
	syncmem_pool_free(&c->pool, fl->result_off);
	syncmem__keytab_free(&c->f->t, e);
}

/*
 * A flight whose leader died: unlink it and drop the leader's count, once.
 * Returns true when @e was freed.
 */
static bool flight_reap_dead_locked(struct flight_call *c, struct keytab_entry *e)
{
	struct flight *fl = entry_flight(e);
	bool last = e->refs == 1;

	if (__atomic_load_n(&fl->done, __ATOMIC_ACQUIRE) != FLIGHT_DIED || fl->leader_gone)
		return false;
	fl->leader_gone = 1;
	if (fl->linked) {
		syncmem__keytab_unlink(&c->f->t, e);
		fl->linked = 0;
	}
	flight_put_locked(c, e);
	return last;
}

static void flight_put(struct flight_call *c)
{
	if (syncmem__keytab_lock(c->r, &c->f->t))
		return;
	if (!flight_reap_dead_locked(c, c->e))
		flight_put_locked(c, c->e);
	syncmem__keytab_unlock(c->r, &c->f->t);
}

/* Join the running flight of @key, or start one as its leader. */
static int flight_join(struct flight_call *c, const void *key, size_t len)
{
	uint32_t hash = syncmem__key_hash(key, len), block;
	struct keytab_entry *e;
	struct flight *fl;
	int err = syncmem__keytab_lock(c->r, &c->f->t);

	if (err)
		return err;
	e = syncmem__keytab_find(&c->f->t, key, len, hash);
	if (e && flight_reap_dead_locked(c, e))
		e = NULL;
	if (e && entry_flight(e)->linked) {
		if (leading_it(e)) {
			err = -EDEADLK;	/* fn asked for its own key */
			goto out;
		}
		e->refs++;
		c->e = e;
		goto out;
	}
	block = syncmem_pool_alloc(&c->pool);
	if (!block) {
		err = -ENOMEM;
		goto out;
	}
	e = syncmem__keytab_insert(&c->f->t, key, len, hash);
	if (!e) {
		syncmem_pool_free(&c->pool, block);
		err = -ENOSPC;
		goto out;
	}
	fl = entry_flight(e);
	*fl = (struct flight){ .result_off = block, .leader = (uint32_t)getpid(), .linked = 1 };
	c->block = block;
	e->refs = 1;
	/* Armed before anyone can see us as the leader. */
	err = syncmem__guard_arm(c->r, &fl->done, FLIGHT_RUNNING, FLIGHT_DIED, &c->guard);
	if (err) {
		fl->linked = 0;
		syncmem__keytab_unlink(&c->f->t, e);
		flight_put_locked(c, e);
		goto out;
	}
	c->e = e;
	c->leader = true;
out:
	syncmem__keytab_unlock(c->r, &c->f->t);
	return err;
}

/* The leader: run @fn, publish its outcome, wake the followers. */
static void flight_lead(struct flight_call *c, syncmem_flight_fn fn, void *fn_arg)
{
	struct flight *fl = entry_flight(c->e);
	size_t cap = c->pool.g.requested_size, n = 0;
	uint32_t followers = 0;
	int ret;

	c->outer = leading;
	leading = c;
	ret = fn(fn_arg, syncmem_pool_ptr(&c->pool, c->block), cap, &n);
	leading = c->outer;
	if (!ret && n > cap)
		ret = -EMSGSIZE;
	if (ret > 0)
		ret = -EINVAL;		/* not a negative errno: refuse it */
	fl->error = ret;
	fl->result_len = ret ? 0 : (uint32_t)n;
	if (!syncmem__keytab_lock(c->r, &c->f->t)) {
		/* From now on a call with this key starts a new flight. */
		if (fl->linked) {
			syncmem__keytab_unlink(&c->f->t, c->e);
			fl->linked = 0;
		}
		followers = c->e->refs - 1;
		syncmem__keytab_unlock(c->r, &c->f->t);
	}
	/* Release: the result bytes happen before a follower reads them. */
	__atomic_store_n(&fl->done, FLIGHT_DONE, __ATOMIC_RELEASE);
	if (followers)
		syncmem_notify(c->r, &fl->done, UINT32_MAX);
	syncmem__guard_disarm(c->guard);
}

/* The outcome: the result length (data in *@data) or a negative errno. */
static int flight_outcome(struct flight_call *c, const void **data)
{
	struct flight *fl = entry_flight(c->e);
	uint32_t done = __atomic_load_n(&fl->done, __ATOMIC_ACQUIRE), len;

	*data = NULL;
	if (done == FLIGHT_DIED)
		return -EOWNERDEAD;
	if (done != FLIGHT_DONE)
		return -EIO;
	if (fl->error)
		return fl->error;
	len = __atomic_load_n(&fl->result_len, __ATOMIC_RELAXED);
	*data = syncmem__pool_block(&c->pool, __atomic_load_n(&fl->result_off, __ATOMIC_RELAXED),
				    len);
	return *data ? (int)len : -EUCLEAN;
}

int syncmem_flight_do(struct syncmem_region *r, struct syncmem_flight *f, const void *key,
		      size_t len, syncmem_flight_fn fn, void *fn_arg, void *out, size_t cap)
{
	struct flight_call c;
	const void *data;
	int ret = flight_call_init(&c, r, f, key, len);

	if (ret)
		return ret;
	if (!fn || (!out && cap))
		return -EINVAL;
	ret = flight_join(&c, key, len);
	if (ret)
		return ret;
	if (c.leader) {
		flight_lead(&c, fn, fn_arg);
	} else {
		struct flight *fl = entry_flight(c.e);

		while (__atomic_load_n(&fl->done, __ATOMIC_ACQUIRE) == FLIGHT_RUNNING) {
			ret = syncmem__wait(r, &fl->done, 4, FLIGHT_RUNNING, SYNCMEM_FOREVER);
			if (ret < 0) {
				flight_put(&c);
				return ret;
			}
		}
	}
	ret = flight_outcome(&c, &data);
	if (ret > 0 && (size_t)ret > cap)
		ret = -EMSGSIZE;
	else if (ret > 0)
		memcpy(out, data, ret);
	flight_put(&c);
	return ret;
}

/* An asynchronous call in progress. */
struct flight_op {
	struct flight_call c;
	syncmem_flight_fn fn;
	void *fn_arg;
	syncmem_flight_cb cb;
	void *cb_arg;
};

/* From the loop: lead, or deliver what the wait brought. */
static void flight_op_step(void *arg, int result)
{
	struct flight_op *op = arg;
	const void *data = NULL;
	int ret = result;

	if (op->c.leader)
		flight_lead(&op->c, op->fn, op->fn_arg);
	if (op->c.leader || result >= 0)
		ret = flight_outcome(&op->c, &data);
	op->cb(op->cb_arg, ret, data, ret > 0 ? (size_t)ret : 0);
	flight_put(&op->c);
	free(op);
}

int syncmem_flight_do_async(struct syncmem_loop *loop, struct syncmem_region *r,
			    struct syncmem_flight *f, const void *key, size_t len,
			    syncmem_flight_fn fn, void *fn_arg, syncmem_flight_cb cb,
			    void *cb_arg)
{
	struct flight_op *op;
	int ret;

	if (!loop || !fn || !cb)
		return -EINVAL;
	op = malloc(sizeof(*op));
	if (!op)
		return -ENOMEM;
	ret = flight_call_init(&op->c, r, f, key, len);
	if (!ret)
		ret = flight_join(&op->c, key, len);
	if (ret) {
		free(op);
		return ret;
	}
	op->fn = fn;
	op->fn_arg = fn_arg;
	op->cb = cb;
	op->cb_arg = cb_arg;
	if (!op->c.leader) {
		ret = syncmem__wait_async(loop, r, &entry_flight(op->c.e)->done, 4,
					  FLIGHT_RUNNING, SYNCMEM_FOREVER, flight_op_step, op,
					  true, NULL);
		if (ret == SYNCMEM_WAIT_QUEUED)
			return 0;
		if (ret != SYNCMEM_WAIT_NOT_EQUAL)
			goto fail;
	}
	/* A leader runs from the loop; so does a follower whose flight ended. */
	ret = syncmem__loop_post(loop, flight_op_step, op, 0);
	if (!ret)
		return 0;
fail:
	if (op->c.leader)
		flight_lead(&op->c, fn, fn_arg);	/* followers must not hang */
	flight_put(&op->c);
	free(op);
	return ret < 0 ? ret : -EIO;
}
