// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Single-flight across processes: one run of a function for the concurrent
 * callers of a key.
 *
 * A flight is an entry of a key table. The first caller of a key (the
 * leader) takes an entry, sets up its payload with a new generation in
 * the done word, takes a pool block for the result, counts itself in and
 * arms a death guard on the done word; only then does it link the entry
 * into its key's chain, where later callers (followers) find it, count
 * themselves in and sleep on the done word. A flight is joinable exactly
 * while its entry is in its chain. The leader runs the function, writes
 * the result bytes (or its error) into the block, unlinks the entry so
 * that the next call starts a new flight (no caching), stores DONE with
 * release and wakes the followers. Each caller copies the result out and
 * drops its count; the last one frees the block and the entry.
 *
 * Every caller's count is a robust count (syncmem__count_arm()): the
 * kernel adds it and takes it back when the caller's process dies, so a
 * caller may die anywhere without leaving its count in the entry. An
 * entry that is unlinked and counts nobody is garbage that whoever holds
 * the table lock may free, with its result block: the last caller does,
 * and a table that runs out of entries or blocks sweeps such entries
 * first (the last caller may have died between its count and the free).
 * So is an entry taken and never linked: the leader holds the table lock
 * from the take to the link, so one found so by a holder of that lock
 * belongs to a leader that died starting it.
 *
 * If the leader's process dies before DONE, the kernel runs the guard when
 * its handle goes away: DIED is stored (only if the word still says
 * RUNNING of that generation) and the followers wake to -EOWNERDEAD. The
 * first caller to see a DIED entry unlinks it.
 *
 * Every call validates the table against its region (keytab.h's view) and
 * attaches the result pool afresh; what it reads from the entry is
 * bounded before use: the done word and the error must be values this
 * library writes, the result must lie in a block of the pool and fit in
 * it. Anything else is -EUCLEAN.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "flight.h"
#include "pool.h"

/* Largest errno a function may report (the kernel's MAX_ERRNO). */
#define FLIGHT_MAX_ERRNO	4095

/* One caller's part in a flight. */
struct flight_call {
	struct syncmem_region *r;
	struct keytab_view v;		/* the table, validated for this call */
	struct syncmem_pool pool;	/* the result pool, attached for this call */
	struct keytab_entry *e;
	struct flight_call *outer;	/* the flight this thread led around this one */
	uint64_t guard;
	uint64_t count;			/* the robust count's id; 0: a plain count */
	uint32_t running;		/* the done word while its flight runs */
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

size_t syncmem_flight_footprint(uint32_t nentries)
{
	return syncmem__keytab_footprint(nentries);
}

int syncmem_flight_init(struct syncmem_region *r, void *mem, size_t len, uint32_t nentries,
			struct syncmem_pool *pool, struct syncmem_flight **out)
{
	__u64 pool_off, mem_off;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!pool)
		return -EINVAL;
	err = syncmem__object_offset(r, pool->hdr, pool->g.footprint, 1, &pool_off);
	if (!err)
		err = syncmem__object_offset(r, mem, len, 1, &mem_off);
	if (err)
		return err;
	if (r->rdonly)
		return -EBADF;
	return syncmem__keytab_init(mem, len, nentries, SYNCMEM_FLIGHT_MAGIC, pool_off,
				    (struct syncmem_keytab **)out);
}

int syncmem_flight_attach(struct syncmem_region *r, void *mem, size_t len,
			  struct syncmem_flight **out)
{
	__u64 mem_off;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	err = syncmem__object_offset(r, mem, len, 1, &mem_off);
	if (err)
		return err;
	return syncmem__keytab_attach(mem, len, SYNCMEM_FLIGHT_MAGIC,
				      (struct syncmem_keytab **)out);
}

uint32_t syncmem_flight_in_flight(struct syncmem_flight *f)
{
	return f ? __atomic_load_n(&f->t.used, __ATOMIC_RELAXED) : 0;
}

/* Validate the call and attach the result pool the table was built with. */
static int flight_call_init(struct flight_call *c, struct syncmem_region *r,
			    struct syncmem_flight *f, const void *key, size_t len)
{
	uint64_t aux;
	int err;

	*c = (struct flight_call){ .r = r };
	err = syncmem__keytab_view(r, f ? &f->t : NULL, SYNCMEM_FLIGHT_MAGIC, &c->v);
	if (err)
		return err;
	err = syncmem__key_check(key, len);
	if (err)
		return err;
	/* One read of where the pool is; attach_at validates what is there. */
	aux = __atomic_load_n(&f->t.aux, __ATOMIC_RELAXED);
	if (aux >= r->size)
		return -EUCLEAN;
	/* Attached at init: no waiting for a creator now. */
	err = syncmem__pool_attach_at(&c->pool, (char *)r->base + aux, r->size - aux, 0, true);
	return err ? -EUCLEAN : 0;
}

/*
 * Table lock held: give @e and its result block back. A free entry names
 * no block, so an entry taken again names none until its taker stores its
 * own: the block is forgotten before it is freed (a death between the two
 * loses it rather than free it twice, maybe under another flight).
 */
static void flight_free_locked(struct flight_call *c, struct keytab_entry *e)
{
	struct flight *fl = entry_flight(e);
	uint32_t off = __atomic_load_n(&fl->result_off, __ATOMIC_RELAXED);

	__atomic_store_n(&fl->result_off, 0, __ATOMIC_RELAXED);
	if (off)
		syncmem_pool_free(&c->pool, off);
	syncmem__keytab_free(&c->v, e);
}

/*
 * Table lock held: is @e garbage? It counts nobody, and it is either not
 * in its chain (a flight that ended, whose last caller died before
 * freeing it) or taken and never linked (its leader died starting it:
 * only a holder of the table lock has an entry taken, and we hold it).
 * Such a leader armed its count first, so a count of 0 says the kernel
 * took its count back, or it was never armed; its guard, should it run
 * after that, does not match the next flight's generation. Never @mine,
 * the entry this call is starting a flight in.
 */
static bool flight_garbage_locked(struct flight_call *c, struct keytab_entry *e,
				  const struct keytab_entry *mine)
{
	uint32_t len = __atomic_load_n(&e->key_len, __ATOMIC_ACQUIRE);

	if (!len || e == mine || __atomic_load_n(&e->refs, __ATOMIC_RELAXED))
		return false;
	return len == KEYTAB_TAKEN || !syncmem__keytab_linked(&c->v, e);
}

/* The state of a flight's done word. */
static uint32_t flight_state(const struct flight *fl)
{
	return FLIGHT_STATE(__atomic_load_n(&fl->done, __ATOMIC_ACQUIRE));
}

/*
 * Table lock held: a flight whose leader died leaves its chain (new callers
 * start a new one) and is freed if nobody counts on it. True when it is
 * out of its chain now.
 */
static bool flight_reap_dead_locked(struct flight_call *c, struct keytab_entry *e)
{
	int err;

	if (flight_state(entry_flight(e)) != FLIGHT_DIED)
		return false;
	err = syncmem__keytab_unlink(&c->v, e);
	if (err && err != -ENOENT)
		return false;	/* corrupted: leave the entry where it is */
	if (flight_garbage_locked(c, e, NULL))
		flight_free_locked(c, e);
	return true;
}

/*
 * Table lock held: reap @e if its leader died, free it if it is garbage.
 * True if freed.
 */
static bool flight_collect_locked(struct flight_call *c, struct keytab_entry *e,
				  const struct keytab_entry *mine)
{
	uint32_t len = __atomic_load_n(&e->key_len, __ATOMIC_ACQUIRE);

	/* A dead leader's flight leaves its chain (if it is still in it). */
	if (len && len != KEYTAB_TAKEN && flight_state(entry_flight(e)) == FLIGHT_DIED)
		syncmem__keytab_unlink(&c->v, e);
	if (!flight_garbage_locked(c, e, mine))
		return false;
	flight_free_locked(c, e);
	return true;
}

/*
 * Table lock held, out of entries or blocks: free every entry that is
 * garbage or a dead leader's, but @mine. The number freed.
 */
static uint32_t flight_sweep_locked(struct flight_call *c, const struct keytab_entry *mine)
{
	uint32_t freed = 0;

	for (uint32_t i = 0; i < c->v.nentries; i++)
		freed += flight_collect_locked(c, (struct keytab_entry *)(c->v.entries +
								  (size_t)i * KEYTAB_ENTRY_SIZE),
					       mine);
	return freed;
}

/* Count this caller in @e (table lock held): robust when the kernel can. */
static int flight_count_in(struct flight_call *c, struct keytab_entry *e)
{
	if (__atomic_load_n(&e->refs, __ATOMIC_RELAXED) == UINT32_MAX)
		return -EUCLEAN;
	if (!syncmem__count_arm(c->r, &e->refs, &c->count))
		return 0;
	/* The user has max_user_on_close armed: a plain count (lost if it dies). */
	c->count = 0;
	return syncmem__keytab_get(e);
}

/* Drop this caller's count; the last one frees the entry. */
static void flight_put(struct flight_call *c)
{
	if (c->count) {
		/* 1: we were the last. A dead leader's flight is unlinked by whoever sees it. */
		if (syncmem__count_undo(c->count) != 1 &&
		    flight_state(entry_flight(c->e)) != FLIGHT_DIED)
			return;
	}
	if (syncmem__keytab_lock(c->r, &c->v, SYNCMEM_FOREVER))
		return;
	if (!c->count)
		syncmem__keytab_put(c->e);
	flight_collect_locked(c, c->e, NULL);
	syncmem__keytab_unlock(c->r, &c->v);
}

/*
 * Become the leader of a new flight of @k; table lock held. Everything is
 * set up on an entry nobody can see yet: its payload, its result block,
 * the leader's count and the death guard. Only then is it linked. A leader
 * that dies on the way leaves an entry taken and never linked, which the
 * next sweep frees with its block (flight_garbage_locked()); the key's next
 * caller finds no flight and leads a new one.
 */
static int flight_start_locked(struct flight_call *c, const struct keytab_key *k)
{
	struct keytab_entry *e;
	struct flight *fl;
	uint32_t block = 0, running;
	int err = syncmem__keytab_take(&c->v, &e);

	/* Out of entries: take back what dead callers left, once. */
	if (err == -ENOSPC && flight_sweep_locked(c, NULL))
		err = syncmem__keytab_take(&c->v, &e);
	if (err)
		return err;
	fl = entry_flight(e);
	/*
	 * A new generation: a guard of a flight this entry held before,
	 * whose process is still going away, never matches it.
	 */
	running = FLIGHT_GEN(__atomic_load_n(&fl->done, __ATOMIC_RELAXED)) + FLIGHT_GEN_ONE;
	__atomic_store_n(&fl->done, running | FLIGHT_RUNNING, __ATOMIC_RELAXED);
	__atomic_store_n(&fl->error, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&fl->result_len, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&fl->leader, (uint32_t)getpid(), __ATOMIC_RELAXED);
	/* The table's block, not this process's: no reclaim frees it under the entry. */
	err = syncmem__pool_alloc_unheld(&c->pool, &block);
	/* Out of blocks: take back what dead callers left, once. */
	if (err == -ENOMEM && flight_sweep_locked(c, e))
		err = syncmem__pool_alloc_unheld(&c->pool, &block);
	if (!err) {
		__atomic_store_n(&fl->result_off, block, __ATOMIC_RELAXED);
		/* The count first: see flight_garbage_locked(). */
		err = syncmem__count_arm(c->r, &e->refs, &c->count);
	}
	if (!err) {
		err = syncmem__guard_arm(c->r, &fl->done, running | FLIGHT_RUNNING,
					 running | FLIGHT_DIED, &c->guard);
		if (err)
			syncmem__count_undo(c->count);
	}
	if (err) {
		flight_free_locked(c, e);
		return err;
	}
	/* Counted and guarded before anyone can see us as the leader. */
	syncmem__keytab_link(&c->v, e, k);
	c->e = e;
	c->block = block;
	c->running = running | FLIGHT_RUNNING;
	c->leader = true;
	return 0;
}

/* Join the running flight of @key, or start one as its leader. */
static int flight_join(struct flight_call *c, const void *key, size_t len)
{
	struct keytab_key k;
	struct keytab_entry *e;
	int err = syncmem__keytab_lock(c->r, &c->v, SYNCMEM_FOREVER);

	if (err)
		return err;
	syncmem__keytab_key(&k, key, len);
	err = syncmem__keytab_find(&c->v, &k, &e);
	if (!err && e && flight_reap_dead_locked(c, e))
		e = NULL;
	if (!err && e) {
		if (leading_it(e))
			err = -EDEADLK;	/* fn asked for its own key */
		else
			err = flight_count_in(c, e);
		if (!err) {
			c->e = e;
			/* The flight we count in: its generation stays while we do. */
			c->running = __atomic_load_n(&entry_flight(e)->done, __ATOMIC_RELAXED);
		}
	} else if (!err) {
		err = flight_start_locked(c, &k);
	}
	syncmem__keytab_unlock(c->r, &c->v);
	return err;
}

/* A leader's function, run as an execute-style call's. */
struct lead_fn {
	syncmem_flight_fn fn;
	void *arg;
	void *out;
	size_t cap;
	size_t len;
	int ret;
};

static void lead_fn_run(void *arg)
{
	struct lead_fn *l = arg;

	l->ret = l->fn(l->arg, l->out, l->cap, &l->len);
}

/* The leader: run @fn, publish its outcome, wake the followers. */
static void flight_lead(struct flight_call *c, syncmem_flight_fn fn, void *fn_arg)
{
	struct flight *fl = entry_flight(c->e);
	size_t cap = c->pool.g.requested_size, n;
	struct lead_fn l = { fn, fn_arg, syncmem_pool_ptr(&c->pool, c->block), cap, 0, 0 };
	uint32_t followers = 0;
	int ret;

	c->outer = leading;
	leading = c;
	/*
	 * A leader takes over nothing: a dead leader's flight is over, its
	 * followers told. syncmem_execute_result() is 0 inside fn.
	 */
	syncmem__execute(lead_fn_run, &l, 0);
	leading = c->outer;
	ret = l.ret;
	n = l.len;
	if (!ret && n > cap)
		ret = -EMSGSIZE;
	if (ret > 0 || ret < -FLIGHT_MAX_ERRNO)
		ret = -EINVAL;		/* not a negative errno: refuse it */
	fl->error = ret;
	fl->result_len = ret ? 0 : (uint32_t)n;
	if (!syncmem__keytab_lock(c->r, &c->v, SYNCMEM_FOREVER)) {
		/* From now on a call with this key starts a new flight. */
		syncmem__keytab_unlink(&c->v, c->e);
		followers = __atomic_load_n(&c->e->refs, __ATOMIC_RELAXED) - 1;
		syncmem__keytab_unlock(c->r, &c->v);
	}
	/* Release: the result bytes happen before a follower reads them. */
	__atomic_store_n(&fl->done, FLIGHT_GEN(c->running) | FLIGHT_DONE, __ATOMIC_RELEASE);
	if (followers)
		syncmem_notify(c->r, &fl->done, UINT32_MAX);
	syncmem__guard_disarm(c->guard);
}

/* The outcome: the result length (data in *@data) or a negative errno. */
static int flight_outcome(struct flight_call *c, const void **data)
{
	struct flight *fl = entry_flight(c->e);
	/* Acquire: pairs with the leader's release of DONE (the result bytes). */
	uint32_t done = __atomic_load_n(&fl->done, __ATOMIC_ACQUIRE), len;
	int32_t error = __atomic_load_n(&fl->error, __ATOMIC_RELAXED);

	*data = NULL;
	/* Another flight's word: only a peer writes one while we count in ours. */
	if (FLIGHT_GEN(done) != FLIGHT_GEN(c->running))
		return -EUCLEAN;
	if (FLIGHT_STATE(done) == FLIGHT_DIED)
		return -EOWNERDEAD;
	if (FLIGHT_STATE(done) != FLIGHT_DONE || error > 0 || error < -FLIGHT_MAX_ERRNO)
		return -EUCLEAN;
	if (error)
		return error;
	len = __atomic_load_n(&fl->result_len, __ATOMIC_RELAXED);
	*data = syncmem__pool_block(&c->pool, __atomic_load_n(&fl->result_off, __ATOMIC_RELAXED),
				    len);
	return *data ? (int)len : -EUCLEAN;
}

/* A follower: sleep until the flight is over. 0 or a negative errno. */
static int flight_follow(struct flight_call *c)
{
	struct flight *fl = entry_flight(c->e);
	uint32_t changed = 0, done;
	int ret;

	/* Acquire: as in flight_outcome(). Another generation: see there. */
	while (FLIGHT_STATE(done = __atomic_load_n(&fl->done, __ATOMIC_ACQUIRE)) ==
	       FLIGHT_RUNNING && FLIGHT_GEN(done) == FLIGHT_GEN(c->running)) {
		ret = syncmem__wait(c->r, &fl->done, 4, done, SYNCMEM_FOREVER);
		if (ret < 0)
			return ret;
		/* The word keeps changing under us: give up at last. */
		if (syncmem__keeps_changing(ret, &changed))
			return -EUCLEAN;
	}
	return 0;
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
	if (c.leader)
		flight_lead(&c, fn, fn_arg);
	else
		ret = flight_follow(&c);
	if (!ret)
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
	struct syncmem__job job;	/* a follower's, abortable while it waits (id 0: none) */
	struct syncmem_loop *loop;
	struct flight_call c;
	syncmem_flight_fn fn;
	void *fn_arg;
	syncmem_flight_cb cb;
	void *cb_arg;
	uint64_t kid;		/* a follower's queued wait */
};

/* From the loop: lead, or deliver what the wait brought. */
static void flight_op_step(void *arg, int result)
{
	struct flight_op *op = arg;
	const void *data = NULL;
	int ret;

	if (op->job.id)
		syncmem__job_del(op->loop, &op->job);
	if (result == SYNCMEM_WAIT_TIMED_OUT)
		result = -ETIMEDOUT;
	ret = result;
	if (op->c.leader)
		flight_lead(&op->c, op->fn, op->fn_arg);
	if (op->c.leader || result >= 0)
		ret = flight_outcome(&op->c, &data);
	op->cb(op->cb_arg, ret, data, ret > 0 ? (size_t)ret : 0);
	flight_put(&op->c);
	free(op);
}

/*
 * Abort a follower's wait: 0 (its callback reports -ECANCELED), or -ENOENT
 * when the wait ended already (the flight's outcome is on its way).
 */
static int flight_op_abort(struct syncmem__job *j)
{
	struct flight_op *op = (struct flight_op *)j;

	return syncmem__loop_cancel(op->loop, op->kid) ? -ENOENT : 0;
}

static int flight_do_async(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_flight *f, const void *key, size_t len,
			   syncmem_flight_fn fn, void *fn_arg, int64_t timeout_ns,
			   syncmem_flight_cb cb, void *cb_arg, uint64_t *id_out)
{
	struct flight_op *op;
	int ret;

	if (!loop || !fn || !cb)
		return -EINVAL;
	/* Before a flight is joined or led: a loop being freed could not deliver it. */
	ret = syncmem__loop_check(loop);
	if (ret)
		return ret;
	op = malloc(sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->job.id = 0;
	op->loop = loop;
	if (id_out) {
		/* An id first: a wait is never queued that could not be aborted. */
		*id_out = 0;
		ret = syncmem__job_add(loop, &op->job, SYNCMEM__JOB_ACQUIRE, flight_op_abort);
		if (ret) {
			free(op);
			return ret;
		}
	}
	ret = flight_call_init(&op->c, r, f, key, len);
	if (!ret)
		ret = flight_join(&op->c, key, len);
	if (ret) {
		if (op->job.id)
			syncmem__job_del(loop, &op->job);
		free(op);
		return ret;
	}
	op->fn = fn;
	op->fn_arg = fn_arg;
	op->cb = cb;
	op->cb_arg = cb_arg;
	if (!op->c.leader) {
		ret = syncmem__wait_async_until(loop, r, &entry_flight(op->c.e)->done, 4,
						FLIGHT_GEN(op->c.running) | FLIGHT_RUNNING,
						syncmem__deadline(timeout_ns), false,
						flight_op_step, op, &op->kid);
		if (ret == SYNCMEM_WAIT_QUEUED) {
			if (id_out)
				*id_out = op->job.id;
			return 0;
		}
		if (ret == SYNCMEM_WAIT_TIMED_OUT)
			ret = -ETIMEDOUT;
		if (ret != SYNCMEM_WAIT_NOT_EQUAL)
			goto fail;
	}
	/* A leader runs from the loop; so does a follower whose flight ended. */
	if (op->job.id) {
		*id_out = op->job.id;	/* nothing to abort */
		syncmem__job_del(loop, &op->job);
		op->job.id = 0;
	}
	ret = syncmem__loop_post(loop, flight_op_step, op, 0);
	if (!ret)
		return 0;
fail:
	if (op->job.id)
		syncmem__job_del(loop, &op->job);
	if (op->c.leader)
		flight_lead(&op->c, fn, fn_arg);	/* followers must not hang */
	flight_put(&op->c);
	free(op);
	return ret < 0 ? ret : -EIO;
}

int syncmem_flight_do_async(struct syncmem_loop *loop, struct syncmem_region *r,
			    struct syncmem_flight *f, const void *key, size_t len,
			    syncmem_flight_fn fn, void *fn_arg, syncmem_flight_cb cb,
			    void *cb_arg)
{
	return flight_do_async(loop, r, f, key, len, fn, fn_arg, SYNCMEM_FOREVER, cb, cb_arg,
			       NULL);
}

int syncmem_flight_do_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				  struct syncmem_flight *f, const void *key, size_t len,
				  syncmem_flight_fn fn, void *fn_arg, int64_t timeout_ns,
				  syncmem_flight_cb cb, void *cb_arg, uint64_t *id_out)
{
	uint64_t id;

	return flight_do_async(loop, r, f, key, len, fn, fn_arg, timeout_ns, cb, cb_arg,
			       id_out ? id_out : &id);
}
