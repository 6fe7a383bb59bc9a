/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every function of <syncmem.h> with each of its pointer arguments NULL
 * (the others valid): the result it documents, never a crash. One table,
 * run by tests/host/bad_args_test.c (no kernel: the rows that need a real
 * event loop are left to the VM) and by selftests/bad_args_test.c (every
 * row, on a real region and loop). Each row runs in a child of its own, so
 * that a crash fails that row and the others still run.
 */
#ifndef SYNCMEM_BAD_ARGS_H
#define SYNCMEM_BAD_ARGS_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "syncmem.h"

#define BAD_ARGS_POOL_BLOCKS	4
#define BAD_ARGS_ENTRIES	4

/* The objects the valid arguments point at, at the start of a region. */
struct bad_args_objects {
	struct syncmem_lock lock;
	struct syncmem_gate gate;
	struct syncmem_sem sem;
	struct syncmem_rwlock rw;
	uint64_t word;
	uint8_t tables[] __attribute__((aligned(64)));	/* pool, keyed, flight */
};

/* Bytes of the region the objects need. */
static inline size_t bad_args_size(void)
{
	return sizeof(struct bad_args_objects) +
	       syncmem_pool_footprint(64, BAD_ARGS_POOL_BLOCKS) +
	       2 * syncmem_keyed_footprint(BAD_ARGS_ENTRIES) +
	       syncmem_locks_footprint(1, 4);
}

struct bad_args_ctx {
	struct syncmem_region *r;
	struct syncmem_loop *loop;	/* made in each row's child that needs one */
	struct bad_args_objects *o;	/* in @r */
	struct syncmem_pool *pool;
	struct syncmem_keyed *k;
	struct syncmem_flight *f;
	struct syncmem_locks *locks;
	uint8_t *pool_mem, *keyed_mem, *flight_mem, *locks_mem;
	size_t pool_len, table_len;
};

/* Build the objects in @c->r: 0, or the step that failed. */
static inline int bad_args_build(struct bad_args_ctx *c)
{
	c->o = syncmem_base(c->r);
	c->pool_len = syncmem_pool_footprint(64, BAD_ARGS_POOL_BLOCKS);
	c->table_len = syncmem_keyed_footprint(BAD_ARGS_ENTRIES);
	c->pool_mem = c->o->tables;
	c->keyed_mem = c->pool_mem + c->pool_len;
	c->flight_mem = c->keyed_mem + c->table_len;
	c->locks_mem = c->flight_mem + c->table_len;
	syncmem_lock_init(&c->o->lock, 0);
	syncmem_gate_init(&c->o->gate, true);
	if (syncmem_sem_init(&c->o->sem, 1))
		return 1;
	syncmem_rwlock_init(&c->o->rw);
	if (syncmem_pool_init(c->pool_mem, c->pool_len, 64, BAD_ARGS_POOL_BLOCKS, &c->pool))
		return 2;
	if (syncmem_keyed_init(c->keyed_mem, c->table_len, BAD_ARGS_ENTRIES, &c->k))
		return 3;
	if (syncmem_flight_init(c->r, c->flight_mem, c->table_len, BAD_ARGS_ENTRIES, c->pool,
				&c->f))
		return 4;
	if (syncmem_locks_init(c->r, c->locks_mem, syncmem_locks_footprint(1, 4), &c->locks))
		return 5;
	return 0;
}

static void bad_args_cb(void *arg, int result)
{
	(void)arg;
	(void)result;
}

static void bad_args_held_cb(void *arg, int result, struct syncmem_held *h)
{
	(void)arg;
	(void)result;
	(void)h;
}

static void bad_args_fn(void *arg)
{
	(void)arg;
}

static int bad_args_flight_fn(void *arg, void *out, size_t cap, size_t *len)
{
	(void)arg;
	(void)out;
	(void)cap;
	*len = 0;
	return 0;
}

static void bad_args_flight_cb(void *arg, int result, const void *data, size_t len)
{
	(void)arg;
	(void)result;
	(void)data;
	(void)len;
}

/*
 * The rows: a label, whether the call needs a real loop (a valid loop
 * argument), the documented result, and the call with @c in scope. Void
 * functions give 0, pointer results their value as a number.
 */
#define BA_R		(c->r)
#define BA_L		(c->loop)
#define BA_O		(c->o)
#define BA_W32		((uint32_t *)&c->o->word)
#define BA_W64		(&c->o->word)
#define BA_PART_NULL	((struct syncmem_key_part[]){ { NULL, 1 } })
#define BA_PART		((struct syncmem_key_part[]){ { "k", 1 } })
#define BA_OUT		((char[16]){ 0 })
#define BA_VOID(call)	((call), 0L)
#define BA_LONG(call)	((long)(call))
#define BA_PTR(call)	((long)(intptr_t)(call))

#define BAD_ARGS(X) \
	/* Regions */ \
	X("syncmem_open(out)", 0, -EINVAL, syncmem_open(NULL, 4096, 0, 0, NULL)) \
	X("syncmem_open_fd(out)", 0, -EINVAL, syncmem_open_fd(0, NULL)) \
	X("syncmem_unlink(name)", 0, -EINVAL, syncmem_unlink(NULL)) \
	X("syncmem_close(r)", 0, 0, BA_VOID(syncmem_close(NULL))) \
	X("syncmem_base(r)", 0, 0, BA_PTR(syncmem_base(NULL))) \
	X("syncmem_size(r)", 0, 0, BA_LONG(syncmem_size(NULL))) \
	X("syncmem_region_fd(r)", 0, -EINVAL, syncmem_region_fd(NULL)) \
	/* Wait and notify */ \
	X("syncmem_wait32(r)", 0, -EINVAL, syncmem_wait32(NULL, BA_W32, 1, 0)) \
	X("syncmem_wait32(addr)", 0, -EINVAL, syncmem_wait32(BA_R, NULL, 1, 0)) \
	X("syncmem_wait64(r)", 0, -EINVAL, syncmem_wait64(NULL, BA_W64, 1, 0)) \
	X("syncmem_wait64(addr)", 0, -EINVAL, syncmem_wait64(BA_R, NULL, 1, 0)) \
	X("syncmem_wait32_interruptible(r)", 0, -EINVAL, \
	  syncmem_wait32_interruptible(NULL, BA_W32, 1, 0)) \
	X("syncmem_wait32_interruptible(addr)", 0, -EINVAL, \
	  syncmem_wait32_interruptible(BA_R, NULL, 1, 0)) \
	X("syncmem_wait64_interruptible(r)", 0, -EINVAL, \
	  syncmem_wait64_interruptible(NULL, BA_W64, 1, 0)) \
	X("syncmem_wait64_interruptible(addr)", 0, -EINVAL, \
	  syncmem_wait64_interruptible(BA_R, NULL, 1, 0)) \
	X("syncmem_notify(r)", 0, -EINVAL, syncmem_notify(NULL, BA_W32, 1)) \
	X("syncmem_notify(addr)", 0, -EINVAL, syncmem_notify(BA_R, NULL, 1)) \
	X("syncmem_handoff32(r)", 0, -EINVAL, syncmem_handoff32(NULL, BA_W32, 1)) \
	X("syncmem_handoff32(addr)", 0, -EINVAL, syncmem_handoff32(BA_R, NULL, 1)) \
	X("syncmem_handoff64(r)", 0, -EINVAL, syncmem_handoff64(NULL, BA_W64, 1)) \
	X("syncmem_handoff64(addr)", 0, -EINVAL, syncmem_handoff64(BA_R, NULL, 1)) \
	/* The event loop */ \
	X("syncmem_loop_new(out)", 0, -EINVAL, syncmem_loop_new(NULL)) \
	X("syncmem_loop_new_region(r)", 0, -EINVAL, \
	  syncmem_loop_new_region(NULL, &(struct syncmem_loop *){ NULL })) \
	X("syncmem_loop_new_region(out)", 0, -EINVAL, syncmem_loop_new_region(BA_R, NULL)) \
	X("syncmem_loop_free(loop)", 0, 0, BA_VOID(syncmem_loop_free(NULL))) \
	X("syncmem_loop_run(loop)", 0, -EINVAL, syncmem_loop_run(NULL)) \
	X("syncmem_loop_run_once(loop)", 0, -EINVAL, syncmem_loop_run_once(NULL, 0)) \
	X("syncmem_loop_fd(loop)", 0, -EINVAL, syncmem_loop_fd(NULL)) \
	X("syncmem_loop_pending(loop)", 0, 0, BA_LONG(syncmem_loop_pending(NULL))) \
	X("syncmem_wait_async32(loop)", 0, -EINVAL, \
	  syncmem_wait_async32(NULL, BA_R, BA_W32, 1, -1, bad_args_cb, NULL, NULL)) \
	X("syncmem_wait_async32(r)", 1, -EINVAL, \
	  syncmem_wait_async32(BA_L, NULL, BA_W32, 1, -1, bad_args_cb, NULL, NULL)) \
	X("syncmem_wait_async32(addr)", 1, -EINVAL, \
	  syncmem_wait_async32(BA_L, BA_R, NULL, 1, -1, bad_args_cb, NULL, NULL)) \
	X("syncmem_wait_async32(cb)", 1, -EINVAL, \
	  syncmem_wait_async32(BA_L, BA_R, BA_W32, 1, -1, NULL, NULL, NULL)) \
	X("syncmem_wait_async32(id_out) may be NULL", 1, SYNCMEM_NOT_EQUAL, \
	  syncmem_wait_async32(BA_L, BA_R, BA_W32, 1, -1, bad_args_cb, NULL, NULL)) \
	X("syncmem_wait_async64(loop)", 0, -EINVAL, \
	  syncmem_wait_async64(NULL, BA_R, BA_W64, 1, -1, bad_args_cb, NULL, NULL)) \
	X("syncmem_wait_async64(r)", 1, -EINVAL, \
	  syncmem_wait_async64(BA_L, NULL, BA_W64, 1, -1, bad_args_cb, NULL, NULL)) \
	X("syncmem_wait_async64(addr)", 1, -EINVAL, \
	  syncmem_wait_async64(BA_L, BA_R, NULL, 1, -1, bad_args_cb, NULL, NULL)) \
	X("syncmem_wait_async64(cb)", 1, -EINVAL, \
	  syncmem_wait_async64(BA_L, BA_R, BA_W64, 1, -1, NULL, NULL, NULL)) \
	X("syncmem_wait_cancel(loop)", 0, -EINVAL, syncmem_wait_cancel(NULL, 1)) \
	X("syncmem_loop_abort(loop)", 0, -EINVAL, syncmem_loop_abort(NULL, 1)) \
	X("syncmem_loop_abort(id)", 1, -ENOENT, syncmem_loop_abort(BA_L, 0)) \
	/* The pool */ \
	X("syncmem_pool_init(mem)", 0, -EINVAL, \
	  syncmem_pool_init(NULL, c->pool_len, 64, 4, &(struct syncmem_pool *){ NULL })) \
	X("syncmem_pool_init(out)", 0, -EINVAL, \
	  syncmem_pool_init(c->pool_mem, c->pool_len, 64, 4, NULL)) \
	X("syncmem_pool_attach(mem)", 0, -EINVAL, \
	  syncmem_pool_attach(NULL, c->pool_len, &(struct syncmem_pool *){ NULL })) \
	X("syncmem_pool_attach(out)", 0, -EINVAL, \
	  syncmem_pool_attach(c->pool_mem, c->pool_len, NULL)) \
	X("syncmem_pool_detach(p)", 0, 0, BA_VOID(syncmem_pool_detach(NULL))) \
	X("syncmem_pool_alloc(p)", 0, 0, BA_LONG(syncmem_pool_alloc(NULL))) \
	X("syncmem_pool_alloc(p), after an allocation", 0, 0, \
	  BA_LONG((syncmem_pool_free(c->pool, syncmem_pool_alloc(c->pool)), \
		   syncmem_pool_alloc(NULL)))) \
	X("syncmem_pool_alloc_checked(p)", 0, -EINVAL, \
	  syncmem_pool_alloc_checked(NULL, &(uint32_t){ 0 })) \
	X("syncmem_pool_alloc_checked(off)", 0, -EINVAL, syncmem_pool_alloc_checked(c->pool, NULL)) \
	X("syncmem_pool_free(p)", 0, -EINVAL, syncmem_pool_free(NULL, 640)) \
	X("syncmem_pool_ptr(p)", 0, 0, BA_PTR(syncmem_pool_ptr(NULL, 640))) \
	X("syncmem_pool_off(p)", 0, 0, BA_LONG(syncmem_pool_off(NULL, c->pool_mem + 640))) \
	X("syncmem_pool_off(ptr)", 0, 0, BA_LONG(syncmem_pool_off(c->pool, NULL))) \
	X("syncmem_pool_self_id(id)", 0, -EINVAL, syncmem_pool_self_id(NULL)) \
	X("syncmem_pool_give(p)", 0, -EINVAL, syncmem_pool_give(NULL, 640, 1)) \
	X("syncmem_pool_take(p)", 0, -EINVAL, syncmem_pool_take(NULL, 640, 1)) \
	X("syncmem_pool_holder(p)", 0, -EINVAL, syncmem_pool_holder(NULL, 640, &(uint64_t){ 0 })) \
	X("syncmem_pool_holder(holder)", 0, -EINVAL, syncmem_pool_holder(c->pool, 640, NULL)) \
	X("syncmem_pool_reclaim(p)", 0, -EINVAL, syncmem_pool_reclaim(NULL)) \
	X("syncmem_pool_free_count(p)", 0, 0, BA_LONG(syncmem_pool_free_count(NULL))) \
	/* Locks */ \
	X("syncmem_lock_init(l)", 0, 0, BA_VOID(syncmem_lock_init(NULL, 0))) \
	X("syncmem_lock(r)", 0, -EINVAL, syncmem_lock(NULL, &BA_O->lock)) \
	X("syncmem_lock(l)", 0, -EINVAL, syncmem_lock(BA_R, NULL)) \
	X("syncmem_lock_timed(r)", 0, -EINVAL, syncmem_lock_timed(NULL, &BA_O->lock, 0)) \
	X("syncmem_lock_timed(l)", 0, -EINVAL, syncmem_lock_timed(BA_R, NULL, 0)) \
	X("syncmem_trylock(r)", 0, -EINVAL, syncmem_trylock(NULL, &BA_O->lock)) \
	X("syncmem_trylock(l)", 0, -EINVAL, syncmem_trylock(BA_R, NULL)) \
	X("syncmem_lock_interruptible(r)", 0, -EINVAL, \
	  syncmem_lock_interruptible(NULL, &BA_O->lock, 0)) \
	X("syncmem_lock_interruptible(l)", 0, -EINVAL, syncmem_lock_interruptible(BA_R, NULL, 0)) \
	X("syncmem_unlock(r)", 0, -EINVAL, syncmem_unlock(NULL, &BA_O->lock)) \
	X("syncmem_unlock(l)", 0, -EINVAL, syncmem_unlock(BA_R, NULL)) \
	X("syncmem_lock_consistent(r)", 0, -EINVAL, syncmem_lock_consistent(NULL, &BA_O->lock)) \
	X("syncmem_lock_consistent(l)", 0, -EINVAL, syncmem_lock_consistent(BA_R, NULL)) \
	X("syncmem_lock_async(loop)", 0, -EINVAL, \
	  syncmem_lock_async(NULL, BA_R, &BA_O->lock, bad_args_cb, NULL)) \
	X("syncmem_lock_async(r)", 1, -EINVAL, \
	  syncmem_lock_async(BA_L, NULL, &BA_O->lock, bad_args_cb, NULL)) \
	X("syncmem_lock_async(l)", 1, -EINVAL, syncmem_lock_async(BA_L, BA_R, NULL, bad_args_cb, NULL)) \
	X("syncmem_lock_async(cb)", 1, -EINVAL, \
	  syncmem_lock_async(BA_L, BA_R, &BA_O->lock, NULL, NULL)) \
	X("syncmem_lock_async_timed(loop)", 0, -EINVAL, syncmem_lock_async_timed(NULL, BA_R, \
	  &BA_O->lock, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_lock_async_timed(r)", 1, -EINVAL, syncmem_lock_async_timed(BA_L, NULL, \
	  &BA_O->lock, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_lock_async_timed(l)", 1, -EINVAL, syncmem_lock_async_timed(BA_L, BA_R, NULL, \
	  0, bad_args_cb, NULL, NULL)) \
	X("syncmem_lock_async_timed(cb)", 1, -EINVAL, syncmem_lock_async_timed(BA_L, BA_R, \
	  &BA_O->lock, 0, NULL, NULL, NULL)) \
	X("syncmem_execute_locked(loop)", 0, -EINVAL, \
	  syncmem_execute_locked(NULL, BA_R, &BA_O->lock, bad_args_fn, NULL)) \
	X("syncmem_execute_locked(r)", 1, -EINVAL, \
	  syncmem_execute_locked(BA_L, NULL, &BA_O->lock, bad_args_fn, NULL)) \
	X("syncmem_execute_locked(l)", 1, -EINVAL, \
	  syncmem_execute_locked(BA_L, BA_R, NULL, bad_args_fn, NULL)) \
	X("syncmem_execute_locked(fn)", 1, -EINVAL, \
	  syncmem_execute_locked(BA_L, BA_R, &BA_O->lock, NULL, NULL)) \
	/* Gates */ \
	X("syncmem_gate_init(g)", 0, 0, BA_VOID(syncmem_gate_init(NULL, true))) \
	X("syncmem_gate_init_flags(g)", 0, -EINVAL, syncmem_gate_init_flags(NULL, true, 0)) \
	X("syncmem_gate_wait(r)", 0, -EINVAL, syncmem_gate_wait(NULL, &BA_O->gate, 0)) \
	X("syncmem_gate_wait(g)", 0, -EINVAL, syncmem_gate_wait(BA_R, NULL, 0)) \
	X("syncmem_gate_wait_async(loop)", 0, -EINVAL, \
	  syncmem_gate_wait_async(NULL, BA_R, &BA_O->gate, bad_args_cb, NULL)) \
	X("syncmem_gate_wait_async(r)", 1, -EINVAL, \
	  syncmem_gate_wait_async(BA_L, NULL, &BA_O->gate, bad_args_cb, NULL)) \
	X("syncmem_gate_wait_async(g)", 1, -EINVAL, \
	  syncmem_gate_wait_async(BA_L, BA_R, NULL, bad_args_cb, NULL)) \
	X("syncmem_gate_wait_async(cb)", 1, -EINVAL, \
	  syncmem_gate_wait_async(BA_L, BA_R, &BA_O->gate, NULL, NULL)) \
	X("syncmem_gate_wait_async_timed(loop)", 0, -EINVAL, syncmem_gate_wait_async_timed(NULL, \
	  BA_R, &BA_O->gate, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_gate_wait_async_timed(g)", 1, -EINVAL, syncmem_gate_wait_async_timed(BA_L, \
	  BA_R, NULL, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_gate_wait_async_timed(cb)", 1, -EINVAL, syncmem_gate_wait_async_timed(BA_L, \
	  BA_R, &BA_O->gate, 0, NULL, NULL, NULL)) \
	X("syncmem_gate_signal(r)", 0, -EINVAL, syncmem_gate_signal(NULL, &BA_O->gate)) \
	X("syncmem_gate_signal(g)", 0, -EINVAL, syncmem_gate_signal(BA_R, NULL)) \
	/* Semaphores */ \
	X("syncmem_sem_init(s)", 0, -EINVAL, syncmem_sem_init(NULL, 1)) \
	X("syncmem_sem_wait(r)", 0, -EINVAL, syncmem_sem_wait(NULL, &BA_O->sem)) \
	X("syncmem_sem_wait(s)", 0, -EINVAL, syncmem_sem_wait(BA_R, NULL)) \
	X("syncmem_sem_timedwait(r)", 0, -EINVAL, syncmem_sem_timedwait(NULL, &BA_O->sem, 0)) \
	X("syncmem_sem_timedwait(s)", 0, -EINVAL, syncmem_sem_timedwait(BA_R, NULL, 0)) \
	X("syncmem_sem_trywait(r)", 0, -EINVAL, syncmem_sem_trywait(NULL, &BA_O->sem)) \
	X("syncmem_sem_trywait(s)", 0, -EINVAL, syncmem_sem_trywait(BA_R, NULL)) \
	X("syncmem_sem_wait_async(loop)", 0, -EINVAL, \
	  syncmem_sem_wait_async(NULL, BA_R, &BA_O->sem, bad_args_cb, NULL)) \
	X("syncmem_sem_wait_async(r)", 1, -EINVAL, \
	  syncmem_sem_wait_async(BA_L, NULL, &BA_O->sem, bad_args_cb, NULL)) \
	X("syncmem_sem_wait_async(s)", 1, -EINVAL, \
	  syncmem_sem_wait_async(BA_L, BA_R, NULL, bad_args_cb, NULL)) \
	X("syncmem_sem_wait_async(cb)", 1, -EINVAL, \
	  syncmem_sem_wait_async(BA_L, BA_R, &BA_O->sem, NULL, NULL)) \
	X("syncmem_sem_wait_async_timed(loop)", 0, -EINVAL, syncmem_sem_wait_async_timed(NULL, \
	  BA_R, &BA_O->sem, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_sem_wait_async_timed(s)", 1, -EINVAL, syncmem_sem_wait_async_timed(BA_L, \
	  BA_R, NULL, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_sem_wait_async_timed(cb)", 1, -EINVAL, syncmem_sem_wait_async_timed(BA_L, \
	  BA_R, &BA_O->sem, 0, NULL, NULL, NULL)) \
	X("syncmem_sem_post(r)", 0, -EINVAL, syncmem_sem_post(NULL, &BA_O->sem)) \
	X("syncmem_sem_post(s)", 0, -EINVAL, syncmem_sem_post(BA_R, NULL)) \
	X("syncmem_sem_value(s)", 0, 0, BA_LONG(syncmem_sem_value(NULL))) \
	/* Reader-writer locks */ \
	X("syncmem_rwlock_init(rw)", 0, 0, BA_VOID(syncmem_rwlock_init(NULL))) \
	X("syncmem_rwlock_rdlock(r)", 0, -EINVAL, syncmem_rwlock_rdlock(NULL, &BA_O->rw)) \
	X("syncmem_rwlock_rdlock(rw)", 0, -EINVAL, syncmem_rwlock_rdlock(BA_R, NULL)) \
	X("syncmem_rwlock_rdlock_timed(r)", 0, -EINVAL, \
	  syncmem_rwlock_rdlock_timed(NULL, &BA_O->rw, 0)) \
	X("syncmem_rwlock_rdlock_timed(rw)", 0, -EINVAL, syncmem_rwlock_rdlock_timed(BA_R, NULL, 0)) \
	X("syncmem_rwlock_tryrdlock(r)", 0, -EINVAL, syncmem_rwlock_tryrdlock(NULL, &BA_O->rw)) \
	X("syncmem_rwlock_tryrdlock(rw)", 0, -EINVAL, syncmem_rwlock_tryrdlock(BA_R, NULL)) \
	X("syncmem_rwlock_wrlock(r)", 0, -EINVAL, syncmem_rwlock_wrlock(NULL, &BA_O->rw)) \
	X("syncmem_rwlock_wrlock(rw)", 0, -EINVAL, syncmem_rwlock_wrlock(BA_R, NULL)) \
	X("syncmem_rwlock_wrlock_timed(r)", 0, -EINVAL, \
	  syncmem_rwlock_wrlock_timed(NULL, &BA_O->rw, 0)) \
	X("syncmem_rwlock_wrlock_timed(rw)", 0, -EINVAL, syncmem_rwlock_wrlock_timed(BA_R, NULL, 0)) \
	X("syncmem_rwlock_trywrlock(r)", 0, -EINVAL, syncmem_rwlock_trywrlock(NULL, &BA_O->rw)) \
	X("syncmem_rwlock_trywrlock(rw)", 0, -EINVAL, syncmem_rwlock_trywrlock(BA_R, NULL)) \
	X("syncmem_rwlock_rdlock_async(loop)", 0, -EINVAL, \
	  syncmem_rwlock_rdlock_async(NULL, BA_R, &BA_O->rw, bad_args_cb, NULL)) \
	X("syncmem_rwlock_rdlock_async(r)", 1, -EINVAL, \
	  syncmem_rwlock_rdlock_async(BA_L, NULL, &BA_O->rw, bad_args_cb, NULL)) \
	X("syncmem_rwlock_rdlock_async(rw)", 1, -EINVAL, \
	  syncmem_rwlock_rdlock_async(BA_L, BA_R, NULL, bad_args_cb, NULL)) \
	X("syncmem_rwlock_rdlock_async(cb)", 1, -EINVAL, \
	  syncmem_rwlock_rdlock_async(BA_L, BA_R, &BA_O->rw, NULL, NULL)) \
	X("syncmem_rwlock_wrlock_async(loop)", 0, -EINVAL, \
	  syncmem_rwlock_wrlock_async(NULL, BA_R, &BA_O->rw, bad_args_cb, NULL)) \
	X("syncmem_rwlock_wrlock_async_timed(loop)", 0, -EINVAL, \
	  syncmem_rwlock_wrlock_async_timed(NULL, BA_R, &BA_O->rw, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_rwlock_wrlock_async_timed(cb)", 1, -EINVAL, \
	  syncmem_rwlock_wrlock_async_timed(BA_L, BA_R, &BA_O->rw, 0, NULL, NULL, NULL)) \
	X("syncmem_rwlock_rdlock_async_timed(loop)", 0, -EINVAL, \
	  syncmem_rwlock_rdlock_async_timed(NULL, BA_R, &BA_O->rw, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_rwlock_rdlock_async_timed(rw)", 1, -EINVAL, \
	  syncmem_rwlock_rdlock_async_timed(BA_L, BA_R, NULL, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_rwlock_wrlock_async(r)", 1, -EINVAL, \
	  syncmem_rwlock_wrlock_async(BA_L, NULL, &BA_O->rw, bad_args_cb, NULL)) \
	X("syncmem_rwlock_wrlock_async(rw)", 1, -EINVAL, \
	  syncmem_rwlock_wrlock_async(BA_L, BA_R, NULL, bad_args_cb, NULL)) \
	X("syncmem_rwlock_wrlock_async(cb)", 1, -EINVAL, \
	  syncmem_rwlock_wrlock_async(BA_L, BA_R, &BA_O->rw, NULL, NULL)) \
	X("syncmem_rwlock_unlock(r)", 0, -EINVAL, syncmem_rwlock_unlock(NULL, &BA_O->rw)) \
	X("syncmem_rwlock_unlock(rw)", 0, -EINVAL, syncmem_rwlock_unlock(BA_R, NULL)) \
	/* Keys */ \
	X("syncmem_key_build(buf)", 0, -EINVAL, syncmem_key_build(NULL, 16, BA_PART, 1)) \
	X("syncmem_key_build(parts)", 0, -EINVAL, syncmem_key_build(BA_OUT, 16, NULL, 1)) \
	X("syncmem_key_build(parts[0].data)", 0, -EINVAL, \
	  syncmem_key_build(BA_OUT, 16, BA_PART_NULL, 1)) \
	/* Keyed locks */ \
	X("syncmem_keyed_init(mem)", 0, -EINVAL, \
	  syncmem_keyed_init(NULL, c->table_len, 4, &(struct syncmem_keyed *){ NULL })) \
	X("syncmem_keyed_init(out)", 0, -EINVAL, syncmem_keyed_init(c->keyed_mem, c->table_len, 4, NULL)) \
	X("syncmem_keyed_attach(mem)", 0, -EINVAL, \
	  syncmem_keyed_attach(NULL, c->table_len, &(struct syncmem_keyed *){ NULL })) \
	X("syncmem_keyed_attach(out)", 0, -EINVAL, \
	  syncmem_keyed_attach(c->keyed_mem, c->table_len, NULL)) \
	X("syncmem_keyed_lock(r)", 0, -EINVAL, syncmem_keyed_lock(NULL, c->k, "k", 1, 0)) \
	X("syncmem_keyed_lock(k)", 0, -EINVAL, syncmem_keyed_lock(BA_R, NULL, "k", 1, 0)) \
	X("syncmem_keyed_lock(key)", 0, -EINVAL, syncmem_keyed_lock(BA_R, c->k, NULL, 1, 0)) \
	X("syncmem_keyed_trylock(r)", 0, -EINVAL, syncmem_keyed_trylock(NULL, c->k, "k", 1)) \
	X("syncmem_keyed_trylock(k)", 0, -EINVAL, syncmem_keyed_trylock(BA_R, NULL, "k", 1)) \
	X("syncmem_keyed_trylock(key)", 0, -EINVAL, syncmem_keyed_trylock(BA_R, c->k, NULL, 1)) \
	X("syncmem_keyed_unlock(r)", 0, -EINVAL, syncmem_keyed_unlock(NULL, c->k, "k", 1)) \
	X("syncmem_keyed_unlock(k)", 0, -EINVAL, syncmem_keyed_unlock(BA_R, NULL, "k", 1)) \
	X("syncmem_keyed_unlock(key)", 0, -EINVAL, syncmem_keyed_unlock(BA_R, c->k, NULL, 1)) \
	X("syncmem_keyed_lock_async(loop)", 0, -EINVAL, \
	  syncmem_keyed_lock_async(NULL, BA_R, c->k, "k", 1, bad_args_cb, NULL)) \
	X("syncmem_keyed_lock_async_timed(loop)", 0, -EINVAL, syncmem_keyed_lock_async_timed( \
	  NULL, BA_R, c->k, "k", 1, 0, bad_args_cb, NULL, NULL)) \
	X("syncmem_keyed_lock_async_timed(cb)", 1, -EINVAL, syncmem_keyed_lock_async_timed( \
	  BA_L, BA_R, c->k, "k", 1, 0, NULL, NULL, NULL)) \
	X("syncmem_keyed_lock_async(r)", 1, -EINVAL, \
	  syncmem_keyed_lock_async(BA_L, NULL, c->k, "k", 1, bad_args_cb, NULL)) \
	X("syncmem_keyed_lock_async(k)", 1, -EINVAL, \
	  syncmem_keyed_lock_async(BA_L, BA_R, NULL, "k", 1, bad_args_cb, NULL)) \
	X("syncmem_keyed_lock_async(key)", 1, -EINVAL, \
	  syncmem_keyed_lock_async(BA_L, BA_R, c->k, NULL, 1, bad_args_cb, NULL)) \
	X("syncmem_keyed_lock_async(cb)", 1, -EINVAL, \
	  syncmem_keyed_lock_async(BA_L, BA_R, c->k, "k", 1, NULL, NULL)) \
	X("syncmem_keyed_execute(loop)", 0, -EINVAL, \
	  syncmem_keyed_execute(NULL, BA_R, c->k, "k", 1, bad_args_fn, NULL)) \
	X("syncmem_keyed_execute(r)", 1, -EINVAL, \
	  syncmem_keyed_execute(BA_L, NULL, c->k, "k", 1, bad_args_fn, NULL)) \
	X("syncmem_keyed_execute(k)", 1, -EINVAL, \
	  syncmem_keyed_execute(BA_L, BA_R, NULL, "k", 1, bad_args_fn, NULL)) \
	X("syncmem_keyed_execute(key)", 1, -EINVAL, \
	  syncmem_keyed_execute(BA_L, BA_R, c->k, NULL, 1, bad_args_fn, NULL)) \
	X("syncmem_keyed_execute(fn)", 1, -EINVAL, \
	  syncmem_keyed_execute(BA_L, BA_R, c->k, "k", 1, NULL, NULL)) \
	X("syncmem_keyed_in_use(k)", 0, 0, BA_LONG(syncmem_keyed_in_use(NULL))) \
	X("syncmem_keyed_held(r)", 0, -EINVAL, syncmem_keyed_held(NULL, c->k)) \
	X("syncmem_keyed_held(k)", 0, -EINVAL, syncmem_keyed_held(BA_R, NULL)) \
	/* Single-flight */ \
	X("syncmem_flight_init(r)", 0, -EINVAL, syncmem_flight_init(NULL, c->flight_mem, \
	  c->table_len, 4, c->pool, &(struct syncmem_flight *){ NULL })) \
	X("syncmem_flight_init(mem)", 0, -EINVAL, syncmem_flight_init(BA_R, NULL, \
	  c->table_len, 4, c->pool, &(struct syncmem_flight *){ NULL })) \
	X("syncmem_flight_init(pool)", 0, -EINVAL, syncmem_flight_init(BA_R, c->flight_mem, \
	  c->table_len, 4, NULL, &(struct syncmem_flight *){ NULL })) \
	X("syncmem_flight_init(out)", 0, -EINVAL, syncmem_flight_init(BA_R, c->flight_mem, \
	  c->table_len, 4, c->pool, NULL)) \
	X("syncmem_flight_attach(r)", 0, -EINVAL, syncmem_flight_attach(NULL, c->flight_mem, \
	  c->table_len, &(struct syncmem_flight *){ NULL })) \
	X("syncmem_flight_attach(mem)", 0, -EINVAL, syncmem_flight_attach(BA_R, NULL, \
	  c->table_len, &(struct syncmem_flight *){ NULL })) \
	X("syncmem_flight_attach(out)", 0, -EINVAL, syncmem_flight_attach(BA_R, c->flight_mem, \
	  c->table_len, NULL)) \
	X("syncmem_flight_do(r)", 0, -EINVAL, \
	  syncmem_flight_do(NULL, c->f, "k", 1, bad_args_flight_fn, NULL, BA_OUT, 16)) \
	X("syncmem_flight_do(f)", 0, -EINVAL, \
	  syncmem_flight_do(BA_R, NULL, "k", 1, bad_args_flight_fn, NULL, BA_OUT, 16)) \
	X("syncmem_flight_do(key)", 0, -EINVAL, \
	  syncmem_flight_do(BA_R, c->f, NULL, 1, bad_args_flight_fn, NULL, BA_OUT, 16)) \
	X("syncmem_flight_do(fn)", 0, -EINVAL, \
	  syncmem_flight_do(BA_R, c->f, "k", 1, NULL, NULL, BA_OUT, 16)) \
	X("syncmem_flight_do(out)", 0, -EINVAL, \
	  syncmem_flight_do(BA_R, c->f, "k", 1, bad_args_flight_fn, NULL, NULL, 16)) \
	X("syncmem_flight_do_async(loop)", 0, -EINVAL, syncmem_flight_do_async(NULL, BA_R, c->f, \
	  "k", 1, bad_args_flight_fn, NULL, bad_args_flight_cb, NULL)) \
	X("syncmem_flight_do_async_timed(loop)", 0, -EINVAL, syncmem_flight_do_async_timed(NULL, \
	  BA_R, c->f, "k", 1, bad_args_flight_fn, NULL, 0, bad_args_flight_cb, NULL, NULL)) \
	X("syncmem_flight_do_async_timed(cb)", 1, -EINVAL, syncmem_flight_do_async_timed(BA_L, \
	  BA_R, c->f, "k", 1, bad_args_flight_fn, NULL, 0, NULL, NULL, NULL)) \
	X("syncmem_flight_do_async(r)", 1, -EINVAL, syncmem_flight_do_async(BA_L, NULL, c->f, \
	  "k", 1, bad_args_flight_fn, NULL, bad_args_flight_cb, NULL)) \
	X("syncmem_flight_do_async(f)", 1, -EINVAL, syncmem_flight_do_async(BA_L, BA_R, NULL, \
	  "k", 1, bad_args_flight_fn, NULL, bad_args_flight_cb, NULL)) \
	X("syncmem_flight_do_async(key)", 1, -EINVAL, syncmem_flight_do_async(BA_L, BA_R, c->f, \
	  NULL, 1, bad_args_flight_fn, NULL, bad_args_flight_cb, NULL)) \
	X("syncmem_flight_do_async(fn)", 1, -EINVAL, syncmem_flight_do_async(BA_L, BA_R, c->f, \
	  "k", 1, NULL, NULL, bad_args_flight_cb, NULL)) \
	X("syncmem_flight_do_async(cb)", 1, -EINVAL, syncmem_flight_do_async(BA_L, BA_R, c->f, \
	  "k", 1, bad_args_flight_fn, NULL, NULL, NULL)) \
	X("syncmem_flight_in_flight(f)", 0, 0, BA_LONG(syncmem_flight_in_flight(NULL))) \
	/* Web Locks */ \
	X("syncmem_locks_init(r)", 0, -EINVAL, syncmem_locks_init(NULL, c->locks_mem, \
	  syncmem_locks_footprint(1, 4), &(struct syncmem_locks *){ NULL })) \
	X("syncmem_locks_init(at)", 0, -EINVAL, syncmem_locks_init(BA_R, NULL, \
	  syncmem_locks_footprint(1, 4), &(struct syncmem_locks *){ NULL })) \
	X("syncmem_locks_init(out)", 0, -EINVAL, syncmem_locks_init(BA_R, c->locks_mem, \
	  syncmem_locks_footprint(1, 4), NULL)) \
	X("syncmem_locks_attach(r)", 0, -EINVAL, \
	  syncmem_locks_attach(NULL, c->locks_mem, &(struct syncmem_locks *){ NULL })) \
	X("syncmem_locks_attach(at)", 0, -EINVAL, \
	  syncmem_locks_attach(BA_R, NULL, &(struct syncmem_locks *){ NULL })) \
	X("syncmem_locks_attach(out)", 0, -EINVAL, syncmem_locks_attach(BA_R, c->locks_mem, NULL)) \
	X("syncmem_locks_detach(m)", 0, 0, BA_VOID(syncmem_locks_detach(NULL))) \
	X("syncmem_locks_request(m)", 0, -EINVAL, \
	  syncmem_locks_request(NULL, "n", 1, 0, 0, &(struct syncmem_held *){ NULL })) \
	X("syncmem_locks_request(name)", 0, -EINVAL, \
	  syncmem_locks_request(c->locks, NULL, 1, 0, 0, &(struct syncmem_held *){ NULL })) \
	X("syncmem_locks_request(out)", 0, -EINVAL, \
	  syncmem_locks_request(c->locks, "n", 1, 0, 0, NULL)) \
	X("syncmem_locks_request_async(loop)", 0, -EINVAL, syncmem_locks_request_async(NULL, \
	  c->locks, "n", 1, 0, bad_args_held_cb, NULL, NULL)) \
	X("syncmem_locks_request_async(m)", 1, -EINVAL, syncmem_locks_request_async(BA_L, \
	  NULL, "n", 1, 0, bad_args_held_cb, NULL, NULL)) \
	X("syncmem_locks_request_async(name)", 1, -EINVAL, syncmem_locks_request_async(BA_L, \
	  c->locks, NULL, 1, 0, bad_args_held_cb, NULL, NULL)) \
	X("syncmem_locks_request_async(cb)", 1, -EINVAL, syncmem_locks_request_async(BA_L, \
	  c->locks, "n", 1, 0, NULL, NULL, NULL)) \
	X("syncmem_locks_request_async(id_out) may be NULL", 1, 0, syncmem_locks_request_async( \
	  BA_L, c->locks, "n", 1, 0, bad_args_held_cb, NULL, NULL)) \
	X("syncmem_locks_abort(loop)", 0, -EINVAL, syncmem_locks_abort(NULL, 1)) \
	X("syncmem_locks_release(h)", 0, -EINVAL, syncmem_locks_release(NULL)) \
	X("syncmem_locks_stolen(h)", 0, 0, syncmem_locks_stolen(NULL)) \
	/* Introspection */ \
	X("syncmem_name_object(r)", 0, -EINVAL, \
	  syncmem_name_object(NULL, &BA_O->lock, 64, SYNCMEM_OBJ_LOCK, "l")) \
	X("syncmem_name_object(obj)", 0, -EINVAL, \
	  syncmem_name_object(BA_R, NULL, 64, SYNCMEM_OBJ_LOCK, "l")) \
	X("syncmem_objects(r)", 0, -EINVAL, syncmem_objects(NULL, NULL, 0)) \
	X("syncmem_objects(out)", 0, -EINVAL, syncmem_objects(BA_R, NULL, 1)) \
	X("syncmem_waiters(r)", 0, -EINVAL, syncmem_waiters(NULL, NULL, NULL, 0)) \
	X("syncmem_waiters(out)", 0, -EINVAL, syncmem_waiters(BA_R, NULL, NULL, 1)) \
	X("syncmem_holder(r)", 0, -EINVAL, \
	  syncmem_holder(NULL, &BA_O->lock.word, &(struct syncmem_holder_info){ 0 })) \
	X("syncmem_holder(word)", 0, -EINVAL, \
	  syncmem_holder(BA_R, NULL, &(struct syncmem_holder_info){ 0 })) \
	X("syncmem_holder(out)", 0, -EINVAL, syncmem_holder(BA_R, &BA_O->lock.word, NULL)) \
	X("syncmem_armed(r)", 0, -EINVAL, syncmem_armed(NULL, NULL, 0)) \
	X("syncmem_armed(out)", 0, -EINVAL, syncmem_armed(BA_R, NULL, 1)) \
	/* Errors and version */ \
	X("syncmem_strerror() is never NULL", 0, 1, BA_LONG(syncmem_strerror(-12345) != NULL)) \
	X("syncmem_version() is never NULL", 0, 1, BA_LONG(syncmem_version() != NULL))

/* Row @i's call: its result as a number. */
static inline long bad_args_call(struct bad_args_ctx *c, unsigned int i)
{
	unsigned int n = 0;

#define BA_CALL(label, loop, expected, call)	if (i == n++) return (long)(call);
	BAD_ARGS(BA_CALL)
#undef BA_CALL
	return LONG_MIN;
}

static const struct {
	const char *label;
	bool needs_loop;
	long expected;
} bad_args_rows[] = {
#define BA_ROW(label, loop, expected, call)	{ label, loop, expected },
	BAD_ARGS(BA_ROW)
#undef BA_ROW
};

#define BAD_ARGS_N	(sizeof(bad_args_rows) / sizeof(bad_args_rows[0]))

/*
 * Run every row (each in a child, under an alarm; with @loops false, not
 * those that need an event loop, which a child makes for itself since a
 * loop belongs to the process that made it): the number of rows whose
 * result was not the documented one, each reported on stderr; *@ran gets
 * the number run.
 */
static inline unsigned int bad_args_run(struct bad_args_ctx *c, bool loops, unsigned int *ran)
{
	unsigned int failed = 0;

	*ran = 0;
	for (unsigned int i = 0; i < BAD_ARGS_N; i++) {
		int status;
		pid_t pid;

		if (bad_args_rows[i].needs_loop && !loops)
			continue;
		++*ran;
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			failed++;
			continue;
		}
		if (!pid) {
			long got;

			alarm(10);
			if (bad_args_rows[i].needs_loop && syncmem_loop_new(&c->loop)) {
				fprintf(stderr, "# %s: no loop\n", bad_args_rows[i].label);
				_exit(2);
			}
			got = bad_args_call(c, i);
			if (got != bad_args_rows[i].expected) {
				fprintf(stderr, "# %s: %ld, documented %ld\n", bad_args_rows[i].label,
					got, bad_args_rows[i].expected);
				_exit(1);
			}
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid) {
			failed++;
			continue;
		}
		if (WIFSIGNALED(status))
			fprintf(stderr, "# %s: killed by signal %d\n", bad_args_rows[i].label,
				WTERMSIG(status));
		failed += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	return failed;
}

#endif /* SYNCMEM_BAD_ARGS_H */
