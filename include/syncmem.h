/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsyncmem: shared memory and Atomics-style synchronization between
 * processes, on top of the syncmem kernel module (/dev/syncmem).
 *
 * Conventions: a function that can fail returns a negative errno value
 * (-EINVAL, -ENOMEM, ...); it never reports through errno alone and never
 * aborts on bad input. syncmem_strerror() turns any result into text.
 * Only the Atomics-style waits (syncmem_wait32/64 and wait_async) report a
 * timeout as the positive SYNCMEM_TIMED_OUT, as Atomics.wait's "timed-out";
 * every lock, gate, semaphore and keyed call reports it as -ETIMEDOUT, as
 * pthread does, so that "ret < 0" never mistakes a timeout for success.
 * See Documentation/syncmem/library.rst.
 *
 * Shared memory is untrusted: whatever another process writes into a shared
 * object, no call reads or writes outside the object's region (or pool),
 * crashes or loops forever. Values this library never writes, and words
 * that keep changing under a call, are reported as -EUCLEAN ("structure
 * needs cleaning"): such a process can break the object for everyone,
 * nothing more. A call that would write a region mapped read-only
 * (SYNCMEM_RDONLY) returns -EBADF. The void init functions cannot report
 * it: on memory this process may not write they change nothing, and the
 * object's next call through its read-only region returns -EBADF.
 *
 * Bad pointers: a NULL where an argument must point somewhere is -EINVAL
 * (so is a misaligned object); functions that return no errno give a
 * defined result instead (void ones do nothing, the others return 0 or
 * NULL, as said with each). An object that is not wholly inside the region
 * passed with it (a region too small for it, or a pointer into another
 * mapping) is -ERANGE; the words of wait, notify and hand-off are -EINVAL
 * then, as Atomics-style calls promise.
 */
#ifndef SYNCMEM_H
#define SYNCMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "syncmem_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's own build hides every other name (-fvisibility=hidden). */
#pragma GCC visibility push(default)

/* Results of waits (and of operations that succeed). */
enum {
	SYNCMEM_OK        = 0,	/* woken by a notify (or the operation succeeded) */
	SYNCMEM_NOT_EQUAL = 1,	/* the word did not hold the expected value: not queued */
	SYNCMEM_TIMED_OUT = 2,	/* the timeout passed before a notify reached this waiter */
	SYNCMEM_PENDING   = 3,	/* async only: queued; the callback reports the outcome */
};
#define SYNCMEM_FOREVER ((int64_t)-1)	/* any negative timeout: no timeout */
#define SYNCMEM_ALL     UINT32_MAX	/* notify count: every waiter */

/* ---- Regions: shared memory from /dev/syncmem ---------------------------- */

struct syncmem_region;			/* opaque: region fd + mapping */

#define SYNCMEM_CREATE	0x1		/* create the named region if it does not exist */
#define SYNCMEM_EXCL	0x2		/* with CREATE: -EEXIST if it already exists */
#define SYNCMEM_RDONLY	0x4		/* map read-only (waits allowed, no writes) */

/*
 * Create or open a region and map it (MAP_SHARED, read-write unless RDONLY).
 * name == NULL makes a new anonymous region of @size bytes whatever CREATE and
 * EXCL say (share it by fork or by passing syncmem_region_fd()); RDONLY is
 * -EINVAL for it. A name is 1..255 bytes. @size: needed to create; 0 or the
 * exact size to open. @mode: permission bits (0777) for a region this call
 * creates, after the umask.
 * Errors: -EINVAL (bad flags, mode or size; size mismatch), -ENAMETOOLONG,
 * -ENOENT (missing without CREATE), -EEXIST (CREATE|EXCL and it exists),
 * -EACCES (mode/uid/gid forbid it), -E2BIG (size above the module's cap),
 * -EDQUOT (the user's region count or bytes cap), -ENOSPC (region count
 * cap of the namespace or system), -ENOMEM (total bytes cap or no memory),
 * -ENODEV (module not loaded), -EPROTO (module of another ABI version).
 */
int syncmem_open(const char *name, size_t size, unsigned flags, mode_t mode,
		 struct syncmem_region **out);

/*
 * Adopt a region fd received from another process (or inherited). On success
 * the handle owns the fd; on failure the caller keeps it. Errors: -EBADF,
 * -EINVAL (not a syncmem region fd), -ENOMEM, or mmap's error.
 */
int syncmem_open_fd(int region_fd, struct syncmem_region **out);

/* Remove a name; the memory lives until its last fd and mapping are gone.
 * Errors: -ENOENT, -EPERM (not the owner), -EINVAL, -ENAMETOOLONG, -ENODEV. */
int syncmem_unlink(const char *name);

/* Unmap and close; NULL is ignored. */
void syncmem_close(struct syncmem_region *r);

/* The mapping, its size and the region fd; NULL, 0 and -EINVAL for a NULL @r. */
void *syncmem_base(const struct syncmem_region *r);
size_t syncmem_size(const struct syncmem_region *r);
int syncmem_region_fd(const struct syncmem_region *r);

/* ---- Atomics-style wait and notify ------------------------------------- */

/*
 * If *addr == expected, sleep until a notify on that word picks this waiter
 * (SYNCMEM_OK) or @timeout_ns passes (SYNCMEM_TIMED_OUT; negative: never);
 * otherwise return SYNCMEM_NOT_EQUAL at once without queueing. The compare and
 * the enqueue are atomic with respect to notify. Waiters of one word wake in
 * arrival order; 4- and 8-byte waiters at one offset share a queue. A signal
 * handler may run meanwhile (or the thread be stopped or frozen): the wait
 * then continues with the same deadline and keeps its place in the queue;
 * it never returns early for a signal.
 * @addr must be naturally aligned and inside the region: else -EINVAL.
 * Allowed on read-only regions.
 */
int syncmem_wait32(struct syncmem_region *r, const uint32_t *addr,
		   uint32_t expected, int64_t timeout_ns);
int syncmem_wait64(struct syncmem_region *r, const uint64_t *addr,
		   uint64_t expected, int64_t timeout_ns);
/* The same, but a signal whose handler runs ends the wait with -EINTR. */
int syncmem_wait32_interruptible(struct syncmem_region *r, const uint32_t *addr,
				 uint32_t expected, int64_t timeout_ns);
int syncmem_wait64_interruptible(struct syncmem_region *r, const uint64_t *addr,
				 uint64_t expected, int64_t timeout_ns);

/*
 * Wake up to @count waiters of the word at @addr (4-byte aligned), oldest
 * first; returns how many woke (0 when none wait; @count 0 wakes none;
 * SYNCMEM_ALL wakes every one). -EBADF on a read-only region.
 */
int syncmem_notify(struct syncmem_region *r, const void *addr, uint32_t count);

/*
 * Hand-off, the primitive of fair locks: if a waiter is queued on the word,
 * wake the oldest one (its wait returns SYNCMEM_OK) and leave the word as it
 * is: returns 1. Otherwise store @value into the word: returns 0. Both
 * happen under the queue's lock, so no waiter can slip in between.
 * -EBADF on a read-only region, -EINVAL for a bad address.
 */
int syncmem_handoff32(struct syncmem_region *r, uint32_t *addr, uint32_t value);
int syncmem_handoff64(struct syncmem_region *r, uint64_t *addr, uint64_t value);

/* ---- Async waits and the event loop (Atomics.waitAsync) ----------------- */

struct syncmem_loop;			/* one per thread; io_uring inside */
typedef void (*syncmem_wait_cb)(void *arg, int result);

/*
 * A loop owns a /dev/syncmem handle, an eventfd and an io_uring ring. It
 * belongs to the process that made it: in a forked child (which shares the
 * handle and the ring with the parent) every call taking the loop returns
 * -EBADFD, and syncmem_loop_free() there only lets go of the child's
 * copies (no callback runs, the parent's waits go on). A child makes a
 * loop of its own.
 */
int syncmem_loop_new(struct syncmem_loop **out);

/*
 * Cancel every pending wait, run the callbacks of all of them (their real
 * result if they completed first, else -ECANCELED) and free the loop. From
 * the moment it begins, a call that would queue work on the loop (every
 * call taking it but syncmem_loop_free(), syncmem_loop_fd(),
 * syncmem_loop_pending() and syncmem_wait_cancel()) returns -ECANCELED at
 * once and takes nothing. A callback may free its own loop: the run that
 * called it then returns, and the memory goes as that run returns. NULL
 * is ignored.
 */
void syncmem_loop_free(struct syncmem_loop *loop);

/*
 * Run callbacks until nothing is pending; 0 or a negative errno. A
 * callback may run its loop again: every callback is taken off its queue
 * before it is called, so each runs exactly once.
 */
int syncmem_loop_run(struct syncmem_loop *loop);

/*
 * Wait up to @timeout_ns (0: do not wait; negative: no limit) for
 * completions, run the callbacks that are ready, return how many ran. With
 * nothing pending it returns 0 at once. From a callback, as
 * syncmem_loop_run(); -ECANCELED once syncmem_loop_free() began.
 */
int syncmem_loop_run_once(struct syncmem_loop *loop, int64_t timeout_ns);

/* Pollable fd: readable exactly when syncmem_loop_run_once(loop, 0) has work. */
int syncmem_loop_fd(struct syncmem_loop *loop);

/* Queued waits whose callbacks have not run yet (0 for a NULL @loop). */
size_t syncmem_loop_pending(const struct syncmem_loop *loop);

/*
 * Queue an async wait and return at once: SYNCMEM_NOT_EQUAL if *addr differs,
 * SYNCMEM_TIMED_OUT if @timeout_ns is 0 (in both cases nothing is queued and
 * @cb never runs), or SYNCMEM_PENDING: the waiter is already in the word's
 * FIFO queue (shared with blocking waiters), and @cb runs exactly once, later,
 * from syncmem_loop_run*() or syncmem_loop_free(), with SYNCMEM_OK,
 * SYNCMEM_TIMED_OUT or -ECANCELED. *@id_out (may be NULL) names the wait for
 * syncmem_wait_cancel(). Errors: -EINVAL (bad address, NULL loop or cb),
 * -EAGAIN (the handle's max_async_waits reached), -EDQUOT (the user's
 * max_user_async_waits reached), -ENOMEM.
 */
int syncmem_wait_async32(struct syncmem_loop *loop, struct syncmem_region *r,
			 const uint32_t *addr, uint32_t expected,
			 int64_t timeout_ns, syncmem_wait_cb cb, void *arg,
			 uint64_t *id_out);
int syncmem_wait_async64(struct syncmem_loop *loop, struct syncmem_region *r,
			 const uint64_t *addr, uint64_t expected,
			 int64_t timeout_ns, syncmem_wait_cb cb, void *arg,
			 uint64_t *id_out);

/*
 * 0 if the wait was still queued (its callback will report -ECANCELED),
 * -ENOENT if it had already completed or never existed.
 */
int syncmem_wait_cancel(struct syncmem_loop *loop, uint64_t id);

/* ---- Lock-free fixed-size block allocator in shared memory --------------- */

#define SYNCMEM_POOL_MAGIC	0x4c4f4f50u	/* "POOL" */
#define SYNCMEM_POOL_VERSION	2u
#define SYNCMEM_POOL_ALIGN	64u		/* header, metadata and blocks */
#define SYNCMEM_POOL_MAX_BLOCK	(16u << 20)	/* largest block_size */
#define SYNCMEM_POOL_SHARDS	8		/* free lists, one per CPU group */

/*
 * The pool header, at the start of the pool's memory. Fixed layout (576
 * bytes, nine cache lines), the same in every process and build. Offsets
 * are from the pool start. The library reads the geometry once, when a
 * process builds or attaches the pool, and keeps it in its handle: later
 * changes to these fields by another process have no effect on it.
 */
struct syncmem_pool_header {
	/* Line 0: identity and geometry, written once by the creator. */
	uint32_t magic;		/* SYNCMEM_POOL_MAGIC once ready */
	uint32_t version;	/* SYNCMEM_POOL_VERSION */
	uint32_t state;		/* 0, then initialising, then ready */
	uint32_t block_size;	/* stride: the requested size rounded up to 64 */
	uint32_t nblocks;
	uint32_t requested_size;
	uint32_t meta_off;	/* one 64-bit word per block: holder or link */
	uint32_t blocks_off;	/* block 0 */
	uint64_t footprint;	/* bytes the pool spans */
	uint32_t block_shift;	/* log2(block_size) if a power of two, else 0 */
	uint32_t blocks_len;	/* nblocks * block_size */
	uint32_t shard_shift;	/* block i belongs to free list i >> shard_shift */
	uint32_t reserved0;
	uint64_t builder;	/* owner id of the process building it (0: unknown) */
	/*
	 * Lines 1-8: the heads of the free lists, each alone on its line:
	 * index + 1 of the first free block (0: empty) in the high 32 bits,
	 * a tag bumped by every push and pop in the low 32 bits. A block always
	 * returns to its own list; each thread allocates from one list first
	 * (spread round-robin), so threads do not fight over one line.
	 */
	struct {
		uint64_t head;
		uint8_t reserved[56];
	} shard[SYNCMEM_POOL_SHARDS];
} __attribute__((aligned(64)));

/*
 * A process's handle on a pool: private memory holding where this process
 * maps the pool and the geometry it validated when it built or attached it.
 * Every index the pool's shared memory holds is checked against that
 * geometry before use, so whatever another process writes into the pool,
 * no call reads or writes outside it. Free it with syncmem_pool_detach().
 */
struct syncmem_pool;

/* Bytes needed for @nblocks blocks of @block_size bytes; 0 if impossible. */
size_t syncmem_pool_footprint(uint32_t block_size, uint32_t nblocks);

/*
 * Build a pool in @mem (64-byte aligned, @len >= footprint), once, by its
 * creator, and return a handle on it. Errors: -EINVAL (bad alignment,
 * geometry or length), -E2BIG (the pool would exceed the 4 GiB that 32-bit
 * offsets reach), -EEXIST (@mem already holds a pool or one being built),
 * -EBADF (@mem is mapped read-only), -ENOMEM (no memory for the handle).
 * The builder is recorded (its process's owner id): memory whose builder
 * died part-way is built again from scratch by the next init.
 */
int syncmem_pool_init(void *mem, size_t len, uint32_t block_size, uint32_t nblocks,
		      struct syncmem_pool **out);

/*
 * Use a pool another process built in @mem (mapped at any address).
 * Zeroed or foreign memory: -EPROTO at once. A pool whose creator is still
 * building it: wait until it is ready, at most SYNCMEM_POOL_ATTACH_WAIT_MS,
 * then -ETIMEDOUT; -ESRCH as soon as its builder is known to have died
 * part-way (syncmem_pool_init() builds it again). -EINVAL when @len is
 * smaller than the pool or @mem is
 * misaligned; -ENOMEM. Memory mapped read-only may be attached: the handle
 * then reads (syncmem_pool_ptr(), syncmem_pool_free_count()), and alloc
 * and free report -EBADF.
 */
#define SYNCMEM_POOL_ATTACH_WAIT_MS 10000
int syncmem_pool_attach(void *mem, size_t len, struct syncmem_pool **out);

/* Free the handle (not the pool: other processes keep using it). NULL is ignored. */
void syncmem_pool_detach(struct syncmem_pool *p);

/*
 * A free block's offset from the pool start; 0 when none can be had: the
 * pool is exhausted (or @p is NULL), or syncmem_pool_alloc_checked() tells
 * why not. Lock-free.
 */
uint32_t syncmem_pool_alloc(struct syncmem_pool *p);

/*
 * The same with the reason: 0 and the block's offset in *@off, or
 * -ENOMEM (no block is free), -EUCLEAN (the pool's shared memory holds
 * values this library never writes: another process corrupted it, see
 * Documentation/syncmem/library.rst), -EBADF (mapped read-only), -EINVAL
 * (NULL handle or @off). *@off is 0 on failure.
 */
int syncmem_pool_alloc_checked(struct syncmem_pool *p, uint32_t *off);

/*
 * Give a block back. -EINVAL for an offset that is not a block of this pool
 * (or a NULL @p), -EALREADY for a block that is already free (of two racing frees of one
 * block exactly one succeeds), -EUCLEAN for a corrupted pool (the block may
 * then be lost), -EBADF when mapped read-only. Lock-free.
 */
int syncmem_pool_free(struct syncmem_pool *p, uint32_t off);

/* Offset <-> address in this process's mapping; NULL / 0 when outside. */
void *syncmem_pool_ptr(struct syncmem_pool *p, uint32_t off);
uint32_t syncmem_pool_off(struct syncmem_pool *p, const void *ptr);

/*
 * Who holds a block. Every allocation records the allocating process (its
 * owner id from the kernel) in the block's word in the pool, so that the
 * blocks of a process that died can be freed by the survivors
 * (syncmem_pool_reclaim()); a block handed to another process changes
 * holder with syncmem_pool_give() and syncmem_pool_take(). A process that
 * cannot reach /dev/syncmem records no holder (0): its blocks are never
 * reclaimed. A forked child is another process: it holds none of the
 * blocks its parent holds, unless they are given to it.
 */

/* give()'s @to for "in transit": to whichever process takes it from this giver. */
#define SYNCMEM_POOL_ANYONE	(1ULL << 62)
/* The holder of a block a shared table owns (single-flight results): never reclaimed. */
#define SYNCMEM_POOL_TABLE	((1ULL << 62) - 3)

/* This process's id as pools record it: 0, or -ENODEV when the kernel gave none. */
int syncmem_pool_self_id(uint64_t *id);

/*
 * Hand block @off, held by this process, to the process with id @to (its
 * syncmem_pool_self_id()), or put it in transit with SYNCMEM_POOL_ANYONE:
 * then the block names this process as its giver, and whoever takes it
 * must name it too. Errors: -EPERM (held by another process, or in
 * transit), -EALREADY (free), -EINVAL (not a block, or a bad @to), -EBADF
 * (read-only), -EUCLEAN (a corrupted word). Release: the taker sees what
 * the giver wrote into the block.
 *
 * Passing a message through a queue without losing it to a death: the
 * sender puts {offset, its id} in the queue, then gives the block to
 * SYNCMEM_POOL_ANYONE; the receiver takes it naming that id, then removes
 * the entry. A sender that dies before giving leaves its block to the
 * receiver (take: -EOWNERDEAD) or to a reclaim; a receiver that dies
 * before removing the entry leaves the block reclaimable, and the entry
 * stale: the next receiver gets an error that says so, unless the same
 * giver has since given the same block again (a newer message: keep a
 * sequence number in the block too, and compare it after the take). A
 * process without an id cannot take part (see pool.rst).
 */
int syncmem_pool_give(struct syncmem_pool *p, uint32_t off, uint64_t to);

/*
 * Become the holder of block @off, given to anyone by the process with id
 * @from (as the message said): 0. Of racing takers one succeeds. 1 when
 * the block is this process's already (given to it by id, or its own).
 * -EOWNERDEAD: @from still held it and died; it is this process's now
 * (what @from wrote before it posted the message is there). -EAGAIN: @from
 * holds it and lives (it has not given it yet). Stale messages: -EBUSY
 * (another process holds it: another receiver took it first, or it changed
 * hands since), -ESTALE (in transit from another giver: another message),
 * -EALREADY (free). -EINVAL, -EBADF, -EUCLEAN as syncmem_pool_give().
 */
int syncmem_pool_take(struct syncmem_pool *p, uint32_t off, uint64_t from);

/*
 * Who holds block @off: 0 and the holder's id in *@holder (0: none
 * recorded; SYNCMEM_POOL_TABLE: a shared table), or 1 when it is in
 * transit, with its giver's id. -EALREADY for a free block, -EINVAL for an
 * offset that is not a block, -EUCLEAN. Works on read-only memory. A
 * snapshot, not a synchronisation: take() is what acquires the giver's
 * writes.
 */
int syncmem_pool_holder(const struct syncmem_pool *p, uint32_t off, uint64_t *holder);

/*
 * Free every block whose holder died (or exec'd another program): the
 * number freed, or -EBADF (read-only), -ENODEV (no module to ask), an
 * error of the kernel's (-EMFILE...), -EUCLEAN. It asks the kernel about
 * each distinct holder once (one system call each, mostly) and scans the
 * pool's words once: O(nblocks). Safe to run at any time, by any number of
 * processes at once, while others allocate, free, give and take: a block
 * whose word changed after it was read is left alone.
 */
int syncmem_pool_reclaim(struct syncmem_pool *p);

/*
 * Free blocks: exact when no alloc or free is in flight (0 for a NULL @p).
 * It scans the per-block states (O(nblocks)), which keeps counters off the
 * hot path.
 */
uint32_t syncmem_pool_free_count(const struct syncmem_pool *p);

/* ---- Locks: AsyncLock, usable blocking or from an event loop ------------- */

#define SYNCMEM_LOCK_FAIR	0x1	/* strict FIFO hand-off to the oldest waiter */

/*
 * Default mode lets a newcomer take the lock before a woken waiter; a waiter
 * woken this many times without getting it makes unlocks hand off in FIFO
 * order until it has the lock (the starvation bound).
 */
#define SYNCMEM_LOCK_BARGE_LIMIT 4

/*
 * A mutex placed in shared memory: fixed layout, 64 bytes, placed at a
 * multiple of 8 bytes in the region; all-zero bytes are an unlocked lock in
 * default mode.
 *
 * Robust: the word names its holder by the owner id the kernel issued to
 * the holding thread (or, for an async acquisition, to its process), and
 * the kernel knows when that thread or process has died. The next acquirer
 * then gets the lock with -EOWNERDEAD (it holds it, as pthread's robust
 * mutexes do); waiters already queued are woken at once when a process
 * dies. syncmem_lock_consistent() says the protected state was repaired;
 * unlocking without it makes every later acquisition fail with
 * -ENOTRECOVERABLE.
 */
struct syncmem_lock {
	uint64_t word;		/* SYNCMEM_OWNER_* word: 0 free, else the holder's
				 * owner id, the waiters and died bits */
	uint32_t flags;		/* SYNCMEM_LOCK_FAIR */
	uint32_t starving;	/* waiters owed a hand-off (default mode) */
	uint32_t reserved[12];
} __attribute__((aligned(64)));

/*
 * Reset the lock (free, @flags). A NULL @l, or memory this process may not
 * write (mapped read-only), is left alone.
 */
void syncmem_lock_init(struct syncmem_lock *l, unsigned flags);

/*
 * Take the lock, blocking. 0; -EOWNERDEAD: the lock is now held by the
 * caller, its previous holder died holding it (recover the state, then
 * syncmem_lock_consistent()); -ENOTRECOVERABLE: a holder that got
 * -EOWNERDEAD unlocked without making it consistent, it can never be taken
 * again; -ETIMEDOUT (lock_timed); -EDEADLK when this thread already holds
 * it; -ERANGE when @l is not wholly inside @r, -EINVAL when it is NULL or
 * not 8-byte aligned, -EBADF when @r is mapped read-only, -EUCLEAN when its flags hold a value this library
 * never writes or its word keeps changing under the call (another process
 * wrote it). Waiters (blocking and async) queue in one FIFO. Uncontended:
 * one CAS each way, no system call (a thread's very first lock fetches its
 * owner id from the kernel).
 */
int syncmem_lock(struct syncmem_region *r, struct syncmem_lock *l);
int syncmem_lock_timed(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns);
/* 0, -EOWNERDEAD (held), -EBUSY, -ENOTRECOVERABLE, -EDEADLK, ... */
int syncmem_trylock(struct syncmem_region *r, struct syncmem_lock *l);
/*
 * As syncmem_lock_timed, but a signal whose handler runs ends the wait with
 * -EINTR (the other calls go back to waiting once the handler returns).
 */
int syncmem_lock_interruptible(struct syncmem_region *r, struct syncmem_lock *l,
			       int64_t timeout_ns);

/*
 * -EPERM when not locked, or locked by another thread (a lock taken
 * asynchronously belongs to the process: any of its threads may unlock it);
 * -EBADF, -EUCLEAN.
 */
int syncmem_unlock(struct syncmem_region *r, struct syncmem_lock *l);

/*
 * After -EOWNERDEAD: the state the lock protects is consistent again, the
 * lock goes on as normal. 0, or -EINVAL when the caller does not hold @l
 * after a takeover.
 */
int syncmem_lock_consistent(struct syncmem_region *r, struct syncmem_lock *l);

/*
 * Take the lock asynchronously: returns 0 at once, and cb(arg, 0) runs from
 * the loop with the lock held (the callee must unlock, from any thread of
 * the process), cb(arg, -EOWNERDEAD) likewise held after a dead holder,
 * or cb(arg, -ECANCELED) if the loop is freed first, or cb(arg, -errno).
 * Never inside this call. -EINVAL, -EBADF before anything is queued.
 */
int syncmem_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
		       struct syncmem_lock *l, syncmem_wait_cb cb, void *arg);

/*
 * Acquire asynchronously, run fn(arg) from the loop, release. 0 at once
 * (fn runs later), or an error before anything is queued, as
 * syncmem_lock_async(). After a dead holder fn runs all the same, and
 * syncmem_execute_result() tells it so (-EOWNERDEAD). A fn that asked
 * repairs the data and calls syncmem_lock_consistent(), or the lock is
 * not recoverable once fn returns (as after an unlock). A fn that did not
 * ask was not told: the lock is then left as a dead holder's, and its
 * next acquirer gets -EOWNERDEAD. When the lock cannot be taken
 * (-ENOTRECOVERABLE, the loop freed first, ...) fn does not run.
 */
int syncmem_execute_locked(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_lock *l, void (*fn)(void *arg), void *arg);

/*
 * From inside the function of an execute-style call (fn of
 * syncmem_execute_locked() and syncmem_keyed_execute(), a single-flight
 * leader's function), on the thread running it: 0, or -EOWNERDEAD when
 * what fn runs under (the lock, the key) was taken over from a holder that
 * died holding it. Asking is being told: see those calls for what fn does
 * then. A single-flight function always gets 0 (a leader takes over
 * nothing: the followers of a dead leader are told). -EINVAL outside such
 * a function.
 */
int syncmem_execute_result(void);

/* ---- Gate: Lock(OPEN | CLOSED) with wait and signal, FIFO hand-off ------- */

/*
 * A gate in shared memory (64 bytes): wait() passes an open gate and closes
 * it behind; signal() hands the gate to the oldest waiter (it stays closed)
 * or, with nobody waiting, opens it. Waiters, blocking and async, queue in
 * one FIFO. Anyone may signal. All-zero bytes are an open gate.
 *
 * SYNCMEM_GATE_HELD: whoever passes the gate holds it until somebody signals
 * (a mutex that anyone may release); if it dies first, the oldest waiter is
 * given the gate with -EOWNERDEAD (and holds it). Not for gates passed on
 * by a different party than the one that passed them (passing the baton),
 * where the passer's death says nothing about the gate.
 */
struct syncmem_gate {
	uint64_t word;		/* 0 open, else closed: an owner word */
	uint32_t flags;		/* SYNCMEM_GATE_HELD */
	uint32_t reserved[13];
} __attribute__((aligned(64)));

#define SYNCMEM_GATE_HELD	0x1

/* A NULL @g, or memory this process may not write, is left alone. */
void syncmem_gate_init(struct syncmem_gate *g, bool open);
/*
 * With SYNCMEM_GATE_* @flags: 0, -EINVAL for unknown flags (or a NULL @g),
 * -EBADF for memory this process may not write (mapped read-only).
 */
int syncmem_gate_init_flags(struct syncmem_gate *g, bool open, uint32_t flags);

/*
 * 0 once through (the gate is closed again), or, for a held gate,
 * -EOWNERDEAD: through after its holder died; -ETIMEDOUT; -EUCLEAN for
 * flags other than SYNCMEM_GATE_HELD or a word naming
 * SYNCMEM_OWNER_NOTRECOVERABLE (any other word names some owner: a closed
 * gate), -EBADF on a read-only region. A thread may wait on a
 * gate it passed (the next signal lets it through again).
 */
int syncmem_gate_wait(struct syncmem_region *r, struct syncmem_gate *g, int64_t timeout_ns);

/*
 * cb(arg, 0) from the loop once through (a held gate is held by the
 * process), or cb(arg, -EOWNERDEAD) after a dead holder, cb(arg, -ECANCELED).
 */
int syncmem_gate_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			    struct syncmem_gate *g, syncmem_wait_cb cb, void *arg);

/* 1 when handed to a waiter, 0 when the gate was opened; -EUCLEAN, -EBADF. */
int syncmem_gate_signal(struct syncmem_region *r, struct syncmem_gate *g);

/* ---- Counting semaphore, FIFO -------------------------------------------- */

#define SYNCMEM_SEM_VALUE_MAX	0x7fffffffu

/*
 * A counting semaphore in shared memory (64 bytes). post() hands its unit to
 * the oldest waiter if one is queued, else counts it, so waiters are served
 * in arrival order. Uncontended wait and post make no system call. Every
 * call that writes it returns -EBADF on a read-only region, and -EUCLEAN
 * when the word holds more than SYNCMEM_SEM_VALUE_MAX units or any of bits
 * 32 to 62 (never written: the high half holds only the waiters mark, bit
 * 63), or keeps changing under the call.
 */
struct syncmem_sem {
	uint64_t word;		/* low 32 bits: units; bit 63: waiters may be queued */
	uint32_t reserved[14];
} __attribute__((aligned(64)));

/* 0; -EINVAL above SYNCMEM_SEM_VALUE_MAX (or NULL), -EBADF on read-only memory. */
int syncmem_sem_init(struct syncmem_sem *s, uint32_t value);
int syncmem_sem_wait(struct syncmem_region *r, struct syncmem_sem *s);
/* 0 or -ETIMEDOUT. */
int syncmem_sem_timedwait(struct syncmem_region *r, struct syncmem_sem *s, int64_t timeout_ns);
int syncmem_sem_trywait(struct syncmem_region *r, struct syncmem_sem *s);	/* 0 or -EAGAIN */
/* cb(arg, 0) from the loop with a unit taken, or cb(arg, -ECANCELED). */
int syncmem_sem_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_sem *s, syncmem_wait_cb cb, void *arg);
/* 0, or -EOVERFLOW when the count would pass SYNCMEM_SEM_VALUE_MAX. */
int syncmem_sem_post(struct syncmem_region *r, struct syncmem_sem *s);
uint32_t syncmem_sem_value(const struct syncmem_sem *s);	/* units available now; NULL: 0 */

/* ---- Reader-writer lock ------------------------------------------------- */

/*
 * A reader-writer lock in shared memory (384 bytes). Readers count
 * themselves in a slot of their process: an uncontended read lock and
 * unlock make no system call and write no cache line that another reading
 * process writes. Writers pass a fair (FIFO) turnstile and keep it for
 * their section; readers that arrive while a writer holds or waits for it
 * queue there behind it. A writer waits only for the readers ahead of it,
 * and a steady stream of readers cannot starve it.
 *
 * Death: the shares of a process that dies are released (a writer waiting
 * for them is woken at once); a writer that dies inside its section is
 * reported as -EOWNERDEAD to the next locker through the turnstile, which
 * then holds the lock it asked for. Up to SYNCMEM_RWLOCK_SLOTS processes
 * read at once through slots; a reader of a further process holds the
 * turnstile while it reads (it excludes writers and other such readers, not
 * the readers in slots). Read shares belong to the process: any of its
 * threads may release one.
 *
 * Locking it again from a thread that holds it: -EDEADLK for a writer; a
 * reader doing so can deadlock behind a queued writer (as with every fair
 * rwlock), so do not. -EBADF on a read-only region; -EUCLEAN when a count
 * would overflow or a word keeps changing under the call.
 */
#define SYNCMEM_RWLOCK_SLOTS	16

struct syncmem_rwlock_slot {
	uint64_t owner;		/* SYNCMEM_OWNER_* word: the process counted here, 0 if none */
	uint32_t count;		/* its read shares */
	uint32_t reserved;
};

struct syncmem_rwlock {
	struct syncmem_lock turnstile;	/* fair: writers, and readers queued with them */
	uint32_t closed;	/* 0: readers enter through their slot; bit 31 a
				 * writer holds the turnstile, below: writers queued */
	uint32_t writer;	/* thread id of the writer inside, 0 if none */
	uint32_t reserved[14];
	struct syncmem_rwlock_slot slot[SYNCMEM_RWLOCK_SLOTS];	/* 4 per cache line */
} __attribute__((aligned(64)));

/* A NULL @rw, or memory this process may not write, is left alone. */
void syncmem_rwlock_init(struct syncmem_rwlock *rw);
/*
 * 0; -EOWNERDEAD: a writer died inside its section before the caller passed
 * the turnstile (the caller holds the lock it asked for, alone until it
 * unlocks, even as a reader: it may repair the half-written data);
 * -ETIMEDOUT (timed), -EBUSY (try), -EDEADLK.
 */
int syncmem_rwlock_rdlock(struct syncmem_region *r, struct syncmem_rwlock *rw);
int syncmem_rwlock_rdlock_timed(struct syncmem_region *r, struct syncmem_rwlock *rw,
				int64_t timeout_ns);
int syncmem_rwlock_tryrdlock(struct syncmem_region *r, struct syncmem_rwlock *rw);
int syncmem_rwlock_wrlock(struct syncmem_region *r, struct syncmem_rwlock *rw);
int syncmem_rwlock_wrlock_timed(struct syncmem_region *r, struct syncmem_rwlock *rw,
				int64_t timeout_ns);
int syncmem_rwlock_trywrlock(struct syncmem_region *r, struct syncmem_rwlock *rw);
/* cb(arg, 0) from the loop with the lock held (shared / exclusive). */
int syncmem_rwlock_rdlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
				struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg);
int syncmem_rwlock_wrlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
				struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg);
/*
 * Release: the write lock if the caller holds it (this thread, or this
 * process for one taken asynchronously), else one of this process's read
 * shares. -EPERM when neither is held.
 */
int syncmem_rwlock_unlock(struct syncmem_region *r, struct syncmem_rwlock *rw);

/* ---- Keys for keyed locks and single-flight ------------------------------ */

#define SYNCMEM_KEY_MAX		112	/* bytes of one key */

struct syncmem_key_part {
	const void *data;
	size_t len;
};

/* A part that is a C string (without its NUL). */
#define SYNCMEM_KEY_STR(s)	((struct syncmem_key_part){ (s), strlen(s) })
/* A part that is the bytes of an object (an integer, a struct). */
#define SYNCMEM_KEY_VAL(v)	((struct syncmem_key_part){ &(v), sizeof(v) })

/*
 * Build one key from several parts: each part is
 * stored with its length, so ("ab", "c") and ("a", "bc") differ. Returns the
 * key's length, or -E2BIG when it would not fit @cap or SYNCMEM_KEY_MAX.
 */
int syncmem_key_build(void *buf, size_t cap, const struct syncmem_key_part *parts,
		      unsigned int nparts);

/*
 * The header of a table of keyed entries living in shared memory (keyed
 * locks, single-flight). Fixed layout, 128 bytes, followed by the buckets
 * and the entries (Documentation/syncmem/locks.rst). Lookups, insertions
 * and removals happen under @lock; nobody waits while holding it.
 */
struct syncmem_keytab {
	uint32_t magic;		/* SYNCMEM_KEYED_MAGIC or SYNCMEM_FLIGHT_MAGIC */
	uint32_t version;
	uint32_t state;		/* 0, then initialising, then ready */
	uint32_t nentries;
	uint32_t nbuckets;	/* a power of two */
	uint32_t entry_size;
	uint32_t buckets_off;	/* from the table start: nbuckets u64 words */
	uint32_t entries_off;
	uint64_t footprint;
	uint32_t free_head;	/* index + 1 of the first free entry */
	uint32_t used;		/* entries in use */
	uint64_t aux;		/* single-flight: the result pool's offset in the region */
	uint64_t builder;	/* owner id of the process building it (0: unknown) */
	struct syncmem_lock lock;
} __attribute__((aligned(64)));

/* ---- Keyed locks -------------------------------------------------------- */

#define SYNCMEM_KEYED_MAGIC	0x4459454bu	/* "KEYD" */
#define SYNCMEM_FLIGHT_MAGIC	0x54484c46u	/* "FLHT" */
#define SYNCMEM_KEYTAB_VERSION	3u	/* 3: taken entries marked, flight generations */

/*
 * A table of locks by key: one holder per key at a time, the others wait in
 * FIFO order (fair hand-off); different keys are independent. An entry
 * exists while someone holds or waits for its key and is reclaimed after.
 * Errors beyond the mutex's: -ENOSPC when all @nentries keys are in use,
 * -E2BIG for a key longer than SYNCMEM_KEY_MAX, -EINVAL for an empty key
 * (or @k not a keyed table), -ERANGE for a table not wholly inside @r,
 * -EBADF on a read-only region, -EUCLEAN
 * when the table holds values this library never writes. Every call
 * checks the table against @r before use. Init and attach follow the pool's
 * rules: -EEXIST for memory already built (or being built by a live
 * creator), attach waits for a creator still building, and a creator that
 * died part-way makes attach -ESRCH and the next init build it again.
 */
struct syncmem_keyed {
	struct syncmem_keytab t;
};

size_t syncmem_keyed_footprint(uint32_t nentries);	/* 0 if impossible */
int syncmem_keyed_init(void *mem, size_t len, uint32_t nentries, struct syncmem_keyed **out);
int syncmem_keyed_attach(void *mem, size_t len, struct syncmem_keyed **out);
/*
 * 0 or -ETIMEDOUT; trylock: 0 or -EBUSY. -EOWNERDEAD: the key is held by the
 * caller, its last holder died holding it (the key itself goes on as usual).
 */
int syncmem_keyed_lock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
		       size_t len, int64_t timeout_ns);
int syncmem_keyed_trylock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			  size_t len);
/* -EPERM when this thread does not hold the key. */
int syncmem_keyed_unlock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			 size_t len);
/*
 * cb(arg, 0) from the loop with the key held (unlock it), cb(arg,
 * -EOWNERDEAD) held likewise after a dead holder, or an error.
 */
int syncmem_keyed_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
			     struct syncmem_keyed *k, const void *key, size_t len,
			     syncmem_wait_cb cb, void *arg);
/*
 * Take the key from the loop, run fn, release. After a dead holder fn runs
 * all the same, and syncmem_execute_result() tells it so (-EOWNERDEAD);
 * the key then goes on as usual. A fn that did not ask was not told: the
 * key is left as a dead holder's, and its next locker gets -EOWNERDEAD.
 */
int syncmem_keyed_execute(struct syncmem_loop *loop, struct syncmem_region *r,
			  struct syncmem_keyed *k, const void *key, size_t len,
			  void (*fn)(void *arg), void *arg);
/*
 * Entries the table holds: keys held, waited for, or kept for their next
 * locker (0 for a NULL @k).
 */
uint32_t syncmem_keyed_in_use(struct syncmem_keyed *k);
/* Keys held or waited for (a scan of the table), or -errno. */
int syncmem_keyed_held(struct syncmem_region *r, struct syncmem_keyed *k);

/* ---- Single-flight -------------------------------------------------------- */

/*
 * Concurrent calls with the same key, from any process, run @fn once: the
 * first caller (the leader) runs it, the others wait (blocking or async)
 * and receive the same result bytes or the same negative errno. A call
 * after the flight ended runs @fn again: nothing is cached. If the leader's
 * process dies mid-flight its followers get -EOWNERDEAD (the kernel's
 * on-close action), never a hang.
 *
 * The result lives in a block of a struct syncmem_pool in the same region
 * (given at init) until the last caller of the flight has copied it, so a
 * result is at most the pool's block size.
 */
struct syncmem_flight {
	struct syncmem_keytab t;
};

/*
 * The function a leader runs: write up to @cap bytes of result into @out,
 * set *@len, return 0; or return a negative errno that every caller gets.
 */
typedef int (*syncmem_flight_fn)(void *arg, void *out, size_t cap, size_t *len);

/* Called with the flight's outcome: @result is the length or a negative errno. */
typedef void (*syncmem_flight_cb)(void *arg, int result, const void *data, size_t len);

size_t syncmem_flight_footprint(uint32_t nentries);
/* @mem and @pool inside @r (else -ERANGE); results are stored in @pool's blocks. */
int syncmem_flight_init(struct syncmem_region *r, void *mem, size_t len, uint32_t nentries,
			struct syncmem_pool *pool, struct syncmem_flight **out);
int syncmem_flight_attach(struct syncmem_region *r, void *mem, size_t len,
			  struct syncmem_flight **out);
/*
 * Run or join the flight for @key, blocking. Returns the result's length
 * (copied to @out, at most @cap bytes: -EMSGSIZE if larger), @fn's negative
 * errno, -EOWNERDEAD (the leader died), -ENOSPC (table full), -ENOMEM (no
 * free pool block for the result), -E2BIG (key too long), -EDEADLK (called
 * from inside @fn of a flight of the same key, which would wait for itself),
 * -EBADF (@r is read-only), -EUCLEAN (the table, the flight's entry or its
 * result holds values this library never writes).
 */
int syncmem_flight_do(struct syncmem_region *r, struct syncmem_flight *f, const void *key,
		      size_t len, syncmem_flight_fn fn, void *fn_arg, void *out, size_t cap);
/*
 * The same from an event loop: a leader runs @fn from the loop, a follower
 * waits asynchronously; then cb(cb_arg, result, data, len) runs from the
 * loop, @data valid during the callback only. 0, or an error before
 * anything was queued.
 */
int syncmem_flight_do_async(struct syncmem_loop *loop, struct syncmem_region *r,
			    struct syncmem_flight *f, const void *key, size_t len,
			    syncmem_flight_fn fn, void *fn_arg, syncmem_flight_cb cb,
			    void *cb_arg);
uint32_t syncmem_flight_in_flight(struct syncmem_flight *f);	/* flights alive; NULL: 0 */

/* ---- Web Locks across processes: named locks with modes ----------------- */

/*
 * A lock manager living in a region, with the model of the Web Locks API
 * (navigator.locks): a manager scopes a set of names, as an origin does.
 * Each name has one FIFO queue of requests. A request is granted when it is
 * at the head of its name's queue and compatible with what is held (any
 * number of shared holders, or one exclusive holder); consecutive shared
 * requests at the head are granted together, and an exclusive request
 * between shared ones keeps its place. A lock belongs to its process (a
 * Web Locks client is a process): any thread of it may release it.
 * Documentation/syncmem/locks.rst, "Web Locks", maps each Web Locks concept
 * to its call.
 *
 * Names are byte strings of 1 to SYNCMEM_LOCKS_NAME_MAX bytes; any byte may
 * appear (NUL included); a name that begins with '-' is reserved.
 * An uncontended request and release of a name used recently make no
 * system call. Shared holders of one name in different processes write no
 * common cache line. Distinct names share no lock.
 *
 * Death: a process that dies releases what it holds, and its pending
 * requests vanish. The first request, waiter or query that meets them
 * learns of the death from the kernel at once; nobody polls. Only an
 * exclusive holder's death is reported: the next request granted that name
 * gets -EOWNERDEAD once, whatever its mode. A shared holder's death is a
 * silent release.
 *
 * Hostile peers: whatever another process writes into the manager, no call
 * reads or writes outside it, crashes or waits forever; values this library
 * never writes are reported as -EUCLEAN.
 */
#define SYNCMEM_LOCKS_NAME_MAX		1024	/* bytes of one name */

#define SYNCMEM_LOCKS_SHARED		0x1	/* default: exclusive */
#define SYNCMEM_LOCKS_IF_AVAILABLE	0x2	/* not grantable now: -EBUSY, nothing queued */
#define SYNCMEM_LOCKS_STEAL		0x4	/* release every holder of the name, grant now */

struct syncmem_locks;			/* a manager in a region (private handle) */
struct syncmem_held;			/* one granted lock, private to its holder */
typedef void (*syncmem_held_cb)(void *arg, int result, struct syncmem_held *h);

/*
 * Bytes a manager needs to hold @max_names names and @max_requests requests
 * (held and pending together) at once; 0 when impossible (a count of 0,
 * more than 2^20 names or more than 2^24 requests). A name takes 1472
 * bytes (its 1024 name bytes, its queue and 16 per-process share
 * counters), a request 64. Init divides the room as one name per 4
 * requests: footprint(n, q) is the footprint of max(n, ceil(q / 4)) names
 * and 4 requests each.
 */
size_t syncmem_locks_footprint(uint32_t max_names, uint32_t max_requests);

/*
 * Build a manager in the @size bytes at @at (64-byte aligned, inside @r),
 * once, by its creator, and return a handle on it. It holds at least n
 * names and q requests at once for every (n, q) whose footprint is at most
 * @size. Errors: -EINVAL (NULL arguments, @at misaligned, the @size bytes
 * not inside @r, @size below syncmem_locks_footprint(1, 1)), -EBADF (@r is
 * mapped read-only), -EEXIST (@at holds a manager, or one that a live
 * creator is building), -ENOMEM. The builder is recorded: a manager whose
 * builder died part-way is built again by the next init.
 */
int syncmem_locks_init(struct syncmem_region *r, void *at, size_t size,
		       struct syncmem_locks **out);

/*
 * Use the manager another process built at @at in @r. @r may be mapped
 * read-only: then syncmem_locks_query() works and every request -EBADF.
 * Waits while its creator is still building it, at most
 * SYNCMEM_POOL_ATTACH_WAIT_MS. Errors: -EINVAL (NULL arguments, @at
 * misaligned or outside @r, or the manager does not fit in @r), -EPROTO
 * (no manager at @at), -ESRCH (its builder died part-way: init it again),
 * -ETIMEDOUT, -ENOMEM.
 */
int syncmem_locks_attach(struct syncmem_region *r, void *at, struct syncmem_locks **out);

/*
 * Free the handle, not the manager: other processes go on using it. NULL is
 * ignored. Release the locks granted through the handle first: their
 * handles use it.
 */
void syncmem_locks_detach(struct syncmem_locks *m);

/*
 * Request the lock @name (@len bytes) in the mode @flags says, waiting at
 * most @timeout_ns for it (negative: no limit).
 * 0: granted; *@out is its handle, for syncmem_locks_release().
 * -EOWNERDEAD: granted likewise; an exclusive holder of the name died
 * holding it (the state it guards may be half-written).
 * -EBUSY: IF_AVAILABLE, and the name is held in a conflicting mode or other
 * requests of it are queued; nothing was queued.
 * -ETIMEDOUT: the timeout passed first; the request left the queue. With a
 * timeout of 0: not grantable at once, and nothing was queued.
 * -ENOSPC: the manager has no room for the name or for the request.
 * Bad arguments: -EINVAL (NULL @m, @name or @out, an empty name, a name
 * that begins with '-', unknown flags, STEAL with IF_AVAILABLE or SHARED),
 * -ENAMETOOLONG (more than SYNCMEM_LOCKS_NAME_MAX bytes), -EBADF (the
 * region is mapped read-only). Also -EUCLEAN, -ENOMEM, or an error of the
 * kernel's (-ENODEV: no module).
 *
 * STEAL (exclusive only): every holder of the name loses it at once (its
 * syncmem_locks_stolen() becomes 1, its release returns -ECONNABORTED) and
 * the caller is granted it ahead of the queue; the queue keeps its order.
 * A holder that asks again for a name it holds queues like anyone: an
 * exclusive request waits for the hold of its own process.
 */
int syncmem_locks_request(struct syncmem_locks *m, const void *name, size_t len,
			  unsigned flags, int64_t timeout_ns, struct syncmem_held **out);

/*
 * Release the lock of @h and free @h, whatever the result. 0;
 * -ECONNABORTED: it was stolen, and nothing changed; -EPERM: @h is another
 * process's (the copy a forked child inherited): nothing changed; -EINVAL
 * (NULL); -EUCLEAN.
 */
int syncmem_locks_release(struct syncmem_held *h);

/* 1 once the lock of @h was stolen (its release will return -ECONNABORTED), else 0. */
int syncmem_locks_stolen(const struct syncmem_held *h);

/* A held lock or a pending request, as syncmem_locks_query() reports it. */
struct syncmem_lock_info {
	uint32_t mode;		/* SYNCMEM_LOCKS_SHARED or 0 (exclusive) */
	int32_t pid;		/* the client's process in the caller's PID namespace, or 0 */
	uint64_t client;	/* the client's owner id (its process's) */
	uint32_t len;		/* bytes of @name used */
	char name[SYNCMEM_LOCKS_NAME_MAX];
	int64_t since_ns;	/* CLOCK_MONOTONIC time it was granted (held) or queued */
};

/*
 * What the manager holds: the held locks in grant order into @held, the
 * pending requests in queue order into @pending (each name's queue in its
 * order; requests of different names by the time they were queued).
 * *@nheld and *@npending carry in the capacity of each array (an array may
 * be NULL when its capacity is 0) and come back with how many there are;
 * entries past the capacity are not written. A snapshot taken without
 * stopping anyone: each entry was true at some moment of the call.
 * Holds and requests of processes that died are not reported; on a
 * writable region they are freed as the call finds them. One question to
 * the kernel per process reported (its pid), one scan of the requests.
 * 0; -EINVAL (NULL @m, @nheld or @npending, or an array NULL with a
 * capacity), -ENOMEM.
 */
int syncmem_locks_query(struct syncmem_locks *m, struct syncmem_lock_info *held,
			size_t *nheld, struct syncmem_lock_info *pending, size_t *npending);

/* ---- Introspection: object names, waiters and holders -------------------- */

/*
 * What a region holds, for tools and for programs that report on their own
 * state (syncmemctl uses these). Every call works on a region opened
 * read-only as well: what a user may open, it may inspect.
 */

/* Kinds of named objects. */
enum {
	SYNCMEM_OBJ_WORD   = 1,	/* a plain 4- or 8-byte word */
	SYNCMEM_OBJ_LOCK   = 2,	/* struct syncmem_lock */
	SYNCMEM_OBJ_RWLOCK = 3,	/* struct syncmem_rwlock */
	SYNCMEM_OBJ_SEM    = 4,	/* struct syncmem_sem */
	SYNCMEM_OBJ_GATE   = 5,	/* struct syncmem_gate */
	SYNCMEM_OBJ_KEYED  = 6,	/* a keyed lock table */
	SYNCMEM_OBJ_FLIGHT = 7,	/* a single-flight table */
	SYNCMEM_OBJ_POOL   = 8,	/* a block pool */
	SYNCMEM_OBJ_OTHER  = 9,	/* anything else */
	SYNCMEM_OBJ_LOCKS  = 10,	/* a Web Locks manager: name it with the size given to init */
};

#define SYNCMEM_OBJECT_NAME_MAX		47	/* bytes, printable ASCII */
#define SYNCMEM_OBJECTS_MAX		256	/* names one region keeps */

/*
 * Give the object at @obj (@size bytes inside @r, 4-byte aligned) a name
 * that tools show: "lock 'jobs' at 0x40". The kernel keeps the name with
 * the region until the region is freed, out of reach of whatever a process
 * writes into the region's memory. Naming the same address again replaces
 * the name; @name NULL removes it (@kind and @size are then ignored).
 * 0; -ERANGE (@obj and @size not wholly inside @r); -EINVAL (NULL,
 * unaligned, an unknown @kind, a name empty, longer than SYNCMEM_OBJECT_NAME_MAX or not printable ASCII),
 * -EBADF (@r read-only), -ENOSPC (SYNCMEM_OBJECTS_MAX names), -ENOENT
 * (removing a name that is not there), -ENOMEM, -ENOTTY (a module without
 * introspection).
 */
int syncmem_name_object(struct syncmem_region *r, const void *obj, size_t size,
			int kind, const char *name);

struct syncmem_object_info {
	uint64_t offset;	/* in the region */
	uint64_t size;
	int kind;		/* SYNCMEM_OBJ_* */
	char name[SYNCMEM_OBJECT_NAME_MAX + 1];	/* NUL-terminated */
};

/*
 * The named objects of @r by offset: fills up to @cap entries of @out and
 * returns how many names there are (more than @cap: the list was cut).
 * -EINVAL (@out NULL with @cap), -ENOMEM, -ENOTTY.
 */
int syncmem_objects(struct syncmem_region *r, struct syncmem_object_info *out,
		    size_t cap);

/* Bits of struct syncmem_waiter_info.flags. */
/* (the same values as the kernel's, so defined identically when both are seen) */
#define SYNCMEM_WAITER_ASYNC	(1U << 0)	/* an async wait: tid is 0 */
#define SYNCMEM_WAITER_OBSERVER	(1U << 1)	/* through a read-only mapping */
#define SYNCMEM_WAITER_OWNER	(1U << 2)	/* a lock waiter: owner is the id it waits as */
#define SYNCMEM_WAITER_AWAY	(1U << 3)	/* in a signal handler, stopped, frozen */

struct syncmem_waiter_info {
	uint64_t offset;	/* of the word it waits on */
	int64_t since_ns;	/* CLOCK_MONOTONIC time it was queued */
	int64_t deadline_ns;	/* CLOCK_MONOTONIC deadline, or -1: none */
	uint64_t owner;		/* the owner id it waits as, else 0 */
	pid_t pid;		/* its process (0: not in this PID namespace) */
	pid_t tid;		/* its thread (0 for an async wait) */
	unsigned flags;		/* SYNCMEM_WAITER_* */
	unsigned size;		/* 4 or 8 */
	unsigned position;	/* in its word's queue: 0 is woken next */
};

/*
 * The waiters queued on @r, by word offset and then in arrival order; with
 * @word (inside @r, 4-byte aligned) only that word's. Fills up to @cap
 * entries, the first ones in that order, and returns how many there are
 * (more than @cap: cut). Each word's queue is read at one instant; more
 * than 4096 are read in pages, one after another. -EINVAL, -ENOMEM,
 * -ENOTTY.
 */
int syncmem_waiters(struct syncmem_region *r, const void *word,
		    struct syncmem_waiter_info *out, size_t cap);

/* Values of struct syncmem_holder_info.state. */
enum {
	SYNCMEM_HOLDER_FREE = 0,		/* nobody holds it */
	SYNCMEM_HOLDER_ALIVE = 1,		/* held by a live thread or process */
	SYNCMEM_HOLDER_DEAD = 2,		/* its holder died: the next taker recovers it */
	SYNCMEM_HOLDER_NOBODY = 3,		/* closed by nobody in particular (a gate) */
	SYNCMEM_HOLDER_GONE = 4,		/* its holder left it to be recovered */
	SYNCMEM_HOLDER_NOTRECOVERABLE = 5,	/* can never be taken again */
};

struct syncmem_holder_info {
	uint64_t word;		/* the owner word as read */
	pid_t pid;		/* the holder's process (0: none or not visible) */
	pid_t tid;		/* its thread (0: the process holds it) */
	int state;		/* SYNCMEM_HOLDER_* */
};

/*
 * Who holds the owner word at @word (8-byte aligned, inside @r): the word
 * of a struct syncmem_lock or syncmem_gate, or a rwlock's turnstile.word.
 * The answer is a snapshot. 0; -EINVAL, -ENOTTY.
 */
int syncmem_holder(struct syncmem_region *r, const void *word,
		   struct syncmem_holder_info *out);

struct syncmem_armed_info {
	uint64_t offset;	/* of the word the action changes */
	uint64_t value;		/* stored (or, when add, taken back) at its handle's end */
	uint64_t expected;	/* when if_equal: only if the word holds this */
	pid_t pid;		/* the process that armed it (0: not visible or gone) */
	unsigned size;		/* 4 or 8 */
	bool if_equal;
	bool add;		/* a count its process keeps itself in */
};

/*
 * The on-close actions armed on words of @r by any process, oldest first:
 * what each promised to do to the region if it dies (a single-flight
 * leader's "leader died", the count of a gate's holders). Fills up to @cap
 * and returns how many there are. -EINVAL, -ENOMEM, -ENOTTY.
 */
int syncmem_armed(struct syncmem_region *r, struct syncmem_armed_info *out, size_t cap);

/* ---- Errors and version ------------------------------------------------- */

/*
 * Text for a negative errno or a SYNCMEM_ result; never NULL. For the
 * errnos of common mistakes (-ENODEV, -EPROTO, -ERANGE, -EBADF, -EINVAL,
 * -EACCES) it names the likely cause and what to check.
 */
const char *syncmem_strerror(int err);

/*
 * The version of the library the program runs with, "MAJOR.MINOR.PATCH"
 * (SYNCMEM_VERSION is that of the headers it was built with; the shared
 * library may be newer).
 */
const char *syncmem_version(void);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* SYNCMEM_H */
