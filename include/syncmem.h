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
 *
 * Each function's comment starts with a one-line summary and ends with
 * "Returns:" (the result on success) and "Errors:" (one line per negative
 * errno, with its cause); "Notes:" may follow. tools/man/mkman turns them
 * into the man pages (man syncmem), and fails on a function without them.
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
 * Create or open a region and map it.
 * The mapping is MAP_SHARED, read-write unless @flags has SYNCMEM_RDONLY.
 * A @name of 1 to 255 bytes names a region that unrelated processes open.
 * A NULL @name makes a new anonymous region of @size bytes whatever CREATE
 * and EXCL say: share it by fork or by passing syncmem_region_fd().
 * @size is needed to create; to open, it is 0 or the region's exact size.
 * @mode holds the permission bits (at most 0777) of a region this call
 * creates; the umask applies.
 *
 * Returns: 0, and the new handle in *@out (NULL on failure).
 * Errors:
 * -EINVAL: unknown @flags, EXCL without CREATE, RDONLY without a name,
 *	@mode above 0777, @size 0 when creating, @size not the existing
 *	region's, a NULL @out.
 * -ENAMETOOLONG: @name is longer than 255 bytes.
 * -ENOENT: no region has @name and CREATE was not given.
 * -EEXIST: CREATE|EXCL and the region exists.
 * -EACCES: its mode, uid or gid deny the access; or CREATE without EXCL
 *	of another user's region (open it without CREATE).
 * -E2BIG: @size is above the module's max_region_size.
 * -EDQUOT: the user's region count or bytes limit is reached.
 * -ENOSPC: the region count limit of the IPC namespace or the system is
 *	reached.
 * -ENOMEM: the total bytes limit is reached, or no memory.
 * -EOVERFLOW: the region is larger than this process can map.
 * -ENODEV: the module is not loaded (or /dev/syncmem is missing).
 * -EPROTO: the module speaks another ABI version than the library.
 */
int syncmem_open(const char *name, size_t size, unsigned flags, mode_t mode,
		 struct syncmem_region **out);

/*
 * Adopt a region fd received from another process or inherited.
 * On success the handle owns @region_fd, and syncmem_close() closes it.
 * On failure the caller keeps it.
 *
 * Returns: 0, and the new handle in *@out.
 * Errors:
 * -EBADF: @region_fd is not an open file descriptor.
 * -EINVAL: @region_fd is not a syncmem region fd, or @out is NULL.
 * -EOVERFLOW: the region is larger than this process can map.
 * -ENOMEM: no memory for the handle or the mapping.
 *
 * Notes: mmap's own errors are passed on as they are.
 */
int syncmem_open_fd(int region_fd, struct syncmem_region **out);

/*
 * Remove a region's name.
 * The memory lives until its last fd and its last mapping are gone.
 *
 * Returns: 0.
 * Errors:
 * -ENOENT: no region has @name.
 * -EPERM: the caller does not own the region.
 * -EINVAL: @name is NULL or empty.
 * -ENAMETOOLONG: @name is longer than 255 bytes.
 * -ENODEV: the module is not loaded.
 * -EACCES: the mode of /dev/syncmem forbids opening it.
 * -EPROTO: the module speaks another ABI version than the library.
 */
int syncmem_unlink(const char *name);

/*
 * Unmap a region and close its fd.
 * A NULL @r is ignored.
 *
 * Returns: nothing.
 * Errors: none.
 */
void syncmem_close(struct syncmem_region *r);

/*
 * A region's mapping, its size and its region fd.
 *
 * Returns: the address of the mapping, its size in bytes, and the region
 * fd (still owned by @r); NULL, 0 and -EINVAL for a NULL @r.
 * Errors:
 * -EINVAL: syncmem_region_fd() with a NULL @r.
 */
void *syncmem_base(const struct syncmem_region *r);
size_t syncmem_size(const struct syncmem_region *r);
int syncmem_region_fd(const struct syncmem_region *r);

/* ---- Atomics-style wait and notify ------------------------------------- */

/*
 * Sleep while a word holds an expected value, until notified.
 * If *@addr equals @expected, the caller sleeps until a notify on that word
 * picks it or @timeout_ns passes; else it returns at once without queueing.
 * The compare and the enqueue are atomic with respect to notify.
 * Waiters of one word wake in arrival order.
 * 4- and 8-byte waiters at one offset share a queue.
 * A signal handler may run meanwhile, or the thread be stopped or frozen:
 * the wait then goes on with the same deadline and keeps its place.
 * The _interruptible calls instead end when a signal handler runs.
 * A negative @timeout_ns (SYNCMEM_FOREVER) never times out.
 * Waits are allowed on regions mapped read-only.
 *
 * Returns: SYNCMEM_OK when a notify woke the caller, SYNCMEM_NOT_EQUAL when
 * the word did not hold @expected, SYNCMEM_TIMED_OUT when the timeout
 * passed first.
 * Errors:
 * -EINVAL: @addr is NULL, not naturally aligned or not inside @r.
 * -EINTR: a signal handler ran (the _interruptible calls only).
 */
int syncmem_wait32(struct syncmem_region *r, const uint32_t *addr,
		   uint32_t expected, int64_t timeout_ns);
int syncmem_wait64(struct syncmem_region *r, const uint64_t *addr,
		   uint64_t expected, int64_t timeout_ns);
int syncmem_wait32_interruptible(struct syncmem_region *r, const uint32_t *addr,
				 uint32_t expected, int64_t timeout_ns);
int syncmem_wait64_interruptible(struct syncmem_region *r, const uint64_t *addr,
				 uint64_t expected, int64_t timeout_ns);

/*
 * Wake up to @count waiters of a word, oldest first.
 * A @count of 0 wakes none; SYNCMEM_ALL wakes every one.
 *
 * Returns: how many woke (0 when none wait).
 * Errors:
 * -EBADF: @r is mapped read-only.
 * -EINVAL: @addr is NULL, not 4-byte aligned or not inside @r.
 */
int syncmem_notify(struct syncmem_region *r, const void *addr, uint32_t count);

/*
 * Wake the oldest waiter of a word, or else store a value: the hand-off.
 * With a waiter queued on the word, the oldest one wakes (its wait returns
 * SYNCMEM_OK) and the word stays as it is.
 * With none, @value is stored into the word.
 * Both happen under the queue's lock, so no waiter can slip in between.
 * Fair locks, gates and semaphores are built on it.
 *
 * Returns: 1 when a waiter was woken, 0 when @value was stored.
 * Errors:
 * -EBADF: @r is mapped read-only.
 * -EINVAL: @addr is NULL, not naturally aligned or not inside @r.
 * -EINVAL: the oldest waiter is a lock request (a lock passes only by its
 *   unlock); nothing changed.
 */
int syncmem_handoff32(struct syncmem_region *r, uint32_t *addr, uint32_t value);
int syncmem_handoff64(struct syncmem_region *r, uint64_t *addr, uint64_t value);

/* ---- Async waits and the event loop (Atomics.waitAsync) ----------------- */

struct syncmem_loop;			/* one per thread; io_uring inside */
typedef void (*syncmem_wait_cb)(void *arg, int result);

/*
 * Make an event loop that completes async waits and runs their callbacks.
 * A loop owns a /dev/syncmem handle, an eventfd and an io_uring ring.
 * It belongs to the process that made it: a forked child makes its own.
 *
 * Returns: 0, and the loop in *@out.
 * Errors:
 * -EINVAL: @out is NULL.
 * -ENOMEM: no memory for the loop.
 * -ENODEV: the module is not loaded, or this process cannot see
 *	/dev/syncmem (use syncmem_loop_new_region()).
 * -EACCES: the mode of /dev/syncmem forbids opening it (use
 *	syncmem_loop_new_region()).
 * -EPROTO: the module speaks another ABI version.
 * -EBADFD: (every call taking the loop) the caller is a child forked from
 *	the loop's process, which shares the loop's handle and ring.
 *
 * Notes: where io_uring is unavailable the loop takes the eventfd path
 * (syncmem_loop_path()).
 */
int syncmem_loop_new(struct syncmem_loop **out);

/*
 * Make an event loop whose handle comes from a region fd.
 * The handle is made from the region fd of @r (SYNCMEM_IOC_HANDLE_OPEN),
 * for a process that holds region fds but cannot open /dev/syncmem: a
 * chroot, a container or sandbox without the node, or a node whose mode
 * forbids it.
 * The loop serves every call that takes one, on any region the process
 * holds, as a loop from syncmem_loop_new() does.
 * @r may be closed while the loop lives.
 *
 * Returns: 0, and the loop in *@out.
 * Errors:
 * -EINVAL: @r or @out is NULL.
 * -ENOTTY: the loaded module has no SYNCMEM_IOC_HANDLE_OPEN.
 * -EPROTO: the module speaks another ABI version.
 * -EMFILE: no free file descriptor.
 * -ENOMEM: no memory for the loop.
 * -EBADFD: (every call taking the loop) as for syncmem_loop_new().
 *
 * Notes: as for syncmem_loop_new().
 */
int syncmem_loop_new_region(struct syncmem_region *r, struct syncmem_loop **out);

/*
 * Cancel every pending wait, run every callback, and free the loop.
 * Each callback gets its real result if it completed first, else
 * -ECANCELED.
 * From the moment it begins, a call that would queue work on the loop
 * takes nothing and returns -ECANCELED.
 * syncmem_loop_fd(), syncmem_loop_pending() and syncmem_wait_cancel() still
 * work.
 * A callback may free its own loop: the run that called it then returns,
 * and the memory goes as that run returns.
 * In a forked child it only lets go of the child's copies: no callback
 * runs, and the parent's waits go on.
 * A NULL @loop is ignored.
 *
 * Returns: nothing; each pending callback runs with its real result or
 * -ECANCELED.
 * Errors: none.
 */
void syncmem_loop_free(struct syncmem_loop *loop);

/*
 * Run callbacks until nothing is pending, or wait for some and run them.
 * syncmem_loop_run() returns when no wait is pending.
 * syncmem_loop_run_once() waits up to @timeout_ns for completions (0: do not
 * wait; negative: no limit) and runs the callbacks that are ready.
 * With nothing pending, it returns 0 at once.
 * A callback may run its loop again: every callback is taken off its queue
 * before it is called, so each runs exactly once.
 *
 * Returns: 0 (syncmem_loop_run()); the number of callbacks that ran
 * (syncmem_loop_run_once()).
 * Errors:
 * -EINVAL: @loop is NULL.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 */
int syncmem_loop_run(struct syncmem_loop *loop);
int syncmem_loop_run_once(struct syncmem_loop *loop, int64_t timeout_ns);

/*
 * A file descriptor to poll for the loop's completions.
 * It is readable exactly when syncmem_loop_run_once(@loop, 0) has work:
 * put it in your own poll, epoll or io_uring loop.
 *
 * Returns: the fd, owned by the loop.
 * Errors:
 * -EINVAL: @loop is NULL.
 * -EBADFD: the caller is a child forked from the loop's process.
 */
int syncmem_loop_fd(struct syncmem_loop *loop);

/*
 * Count the queued waits whose callbacks have not run yet.
 *
 * Returns: that number; 0 for a NULL @loop.
 * Errors: none.
 */
size_t syncmem_loop_pending(const struct syncmem_loop *loop);

#define SYNCMEM_LOOP_EVENTFD	1	/* waits are ioctls; completions are read() */
#define SYNCMEM_LOOP_URING	2	/* waits are commands of the loop's io_uring */

/*
 * Say how the loop queues its async waits.
 * On SYNCMEM_LOOP_URING, each async wait on a word is an io_uring
 * command in the loop's own ring, whose CQE is its completion, and
 * syncmem_loop_fd() is the ring's fd.
 * The waits of the lock family (which may be handed the lock or a count:
 * a hand-off in a CQE would be lost with a killed process) and
 * completions queued without the kernel still go through the loop's
 * handle and its eventfd, which the ring reads.
 * The loop keeps the fd of the region of its first such wait open until
 * it is freed, for its cancel commands.
 * On SYNCMEM_LOOP_EVENTFD, each wait is an ioctl, the loop poll()s its
 * handle and read()s the completion records, and syncmem_loop_fd() is the
 * handle.
 * A loop takes the eventfd path when io_uring_queue_init() fails (a
 * seccomp filter such as Docker's default answers EPERM or ENOSYS), when
 * the module has no io_uring commands (no SYNCMEM_FEAT_URING), or when
 * the environment variable SYNCMEM_LOOP is "eventfd" as the loop is made.
 * Every call behaves the same on both paths, but for the per-handle limit
 * on queued waits (max_async_waits), which only the eventfd path has.
 *
 * Returns: SYNCMEM_LOOP_URING or SYNCMEM_LOOP_EVENTFD.
 * Errors:
 * -EINVAL: @loop is NULL.
 * -EBADFD: the caller is a child forked from the loop's process.
 */
int syncmem_loop_path(const struct syncmem_loop *loop);

/*
 * Queue a wait on a word and return at once (Atomics.waitAsync).
 * The waiter joins the word's FIFO queue, shared with blocking waiters.
 * @cb runs exactly once, later, from syncmem_loop_run*() or
 * syncmem_loop_free(), with SYNCMEM_OK, SYNCMEM_TIMED_OUT or -ECANCELED.
 * *@id_out (@id_out may be NULL) names the wait for syncmem_wait_cancel().
 *
 * Returns: SYNCMEM_PENDING when the wait was queued; SYNCMEM_NOT_EQUAL when
 * *@addr differs from @expected, SYNCMEM_TIMED_OUT when @timeout_ns is 0
 * (nothing is queued then and @cb never runs).
 * Errors:
 * -EINVAL: @addr is NULL, misaligned or not inside @r; @loop or @cb is
 *	NULL.
 * -EAGAIN: the loop's handle has max_async_waits waits queued (eventfd
 *	path).
 * -EDQUOT: the user has max_user_async_waits waits queued.
 * -ENOMEM: no memory.
 * -EMFILE: no free file descriptor for the loop's copy of @r's fd (the
 *	first wait of a loop on the io_uring path).
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
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
 * Cancel a queued async wait.
 *
 * Returns: 0 when the wait was still queued: its callback then runs from
 * the loop with -ECANCELED.
 * Errors:
 * -ENOENT: the wait had already completed, or never existed.
 * -EINVAL: @loop is NULL.
 * -EBADFD: the caller is a child forked from the loop's process.
 */
int syncmem_wait_cancel(struct syncmem_loop *loop, uint64_t id);

struct io_uring_sqe;			/* <liburing.h> */

/*
 * Fill an io_uring SQE with a wait on a word of a region.
 * syncmem_prep_wait32() waits on the 4-byte word @addr of @r,
 * syncmem_prep_wait64() on an 8-byte one, for the caller's own io_uring.
 * Once the command is issued (in io_uring_submit(), unless IOSQE_ASYNC,
 * SQPOLL or a link defers it), the wait is queued in the word's FIFO
 * queue with blocking and loop-based waiters; its end is one CQE of that
 * ring, with the user_data the caller gives @sqe (before or after this call).
 * @timeout_ns counts from the submission (negative: no limit; 0: do not
 * wait), and may end up to 1/131072 of itself late.
 * Every field of @sqe the command uses is filled (a reused SQE is fine);
 * the ring needs no flags, but 32-byte CQEs (IORING_SETUP_CQE32) to
 * receive a handed-off value.
 * A module without io_uring commands (no SYNCMEM_FEAT_URING in its
 * SYNCMEM_IOC_VERSION) ends each with -EOPNOTSUPP.
 *
 * Returns: nothing; the CQE's res is SYNCMEM_OK (a notify reached the
 * waiter), SYNCMEM_NOT_EQUAL (*@addr differed: nothing was queued),
 * SYNCMEM_TIMED_OUT, or 3 (SYNCMEM_WAIT_HANDED_OFF: a hand-off reached
 * the waiter; with 32-byte CQEs, big_cqe[0] is the value handed over),
 * else one of the errors below.
 * Errors:
 * -ECANCELED: syncmem_prep_cancel() ended it, or its ring was torn down
 *	or its submitting thread exited or exec'd while it was pending.
 * -EINVAL: @addr is NULL, misaligned or not inside @r.
 * -EBADF: @r is NULL.
 * -EDQUOT: the user has max_user_async_waits waits queued.
 * -ENOMEM: no memory.
 * -EOPNOTSUPP: the module has no io_uring commands, or the ring was set
 *	up with IORING_SETUP_IOPOLL.
 */
void syncmem_prep_wait32(struct io_uring_sqe *sqe, struct syncmem_region *r,
			 const uint32_t *addr, uint32_t expected, int64_t timeout_ns);
void syncmem_prep_wait64(struct io_uring_sqe *sqe, struct syncmem_region *r,
			 const uint64_t *addr, uint64_t expected, int64_t timeout_ns);

/*
 * Fill an io_uring SQE that wakes waiters of a word.
 * The command does what syncmem_notify() does, in the caller's own
 * io_uring: it wakes up to @count waiters of the 4-byte word @addr of @r,
 * oldest first, whether they block, wait from a loop or wait with
 * syncmem_prep_wait32/64() in any ring (0 wakes none; SYNCMEM_ALL every
 * one). It never waits: it completes when it is issued (in
 * io_uring_submit(), unless IOSQE_ASYNC, SQPOLL or a link defers it), so a
 * loop that wakes its peer and then waits queues both SQEs, the notify
 * first, and enters the kernel once (io_uring_submit_and_wait()); with
 * IOSQE_CQE_SKIP_SUCCESS on the notify, only a failed notify posts a CQE.
 * Every field of @sqe the command uses is filled (a reused SQE is fine);
 * the ring needs no flags.
 *
 * Returns: nothing; the CQE's res is the number of waiters woken (0 when
 * none wait), else one of the errors below.
 * Errors:
 * -EBADF: @r is NULL or mapped read-only.
 * -EINVAL: @addr is NULL, not 4-byte aligned or not inside @r, or the
 *	module has no NOTIFY command (no SYNCMEM_FEAT_URING_NOTIFY in its
 *	SYNCMEM_IOC_VERSION).
 * -ECANCELED: issued from an io-wq worker (IOSQE_ASYNC) as its ring was
 *	torn down or its submitting thread exited or exec'd: nobody was
 *	woken.
 * -EOPNOTSUPP: the module has no io_uring commands, or the ring was set
 *	up with IORING_SETUP_IOPOLL.
 */
void syncmem_prep_notify(struct io_uring_sqe *sqe, struct syncmem_region *r,
			 const void *addr, uint32_t count);

struct syncmem_lock;

/*
 * Fill an io_uring SQE that takes a lock for the calling process.
 * It takes @l of @r as syncmem_lock_async() does: its CQE says the lock
 * is held.
 * Once the command is issued (in io_uring_submit(), unless IOSQE_ASYNC,
 * SQPOLL or a link defers it), the request has taken a free lock, or is
 * queued in the lock's FIFO queue with blocking and loop-based lockers;
 * an unlock hands the lock over to it directly (even without
 * SYNCMEM_LOCK_FAIR: it never competes for a freed lock).
 * The lock belongs to the process: any of its threads unlocks it with
 * syncmem_unlock(). It is not recursive: a request for a lock the process
 * holds waits for the process's own unlock (no deadlock is detected).
 * The process's owner id is fetched from the kernel on the first call
 * (one system call, once per process).
 * @timeout_ns counts from the submission (negative: no limit; 0: do not
 * wait), and may end up to 1/131072 of itself late.
 * Every field of @sqe the command uses is filled (a reused SQE is fine);
 * the ring needs no flags. Cancel it with syncmem_prep_cancel().
 * From Linux 6.7 the CQE of a hand-off is posted by the submitter's task
 * work: a ring torn down before that gives the lock up again. With
 * IORING_SETUP_DEFER_TASKRUN that task work runs at the submitter's next
 * wait for CQEs, and until then the process holds the lock while its CQE
 * is not visible. A CQE posted but never read leaves the lock held by the
 * process.
 *
 * Returns: nothing; the CQE's res is 0 (the caller's process holds @l),
 * else one of the errors below.
 * Errors:
 * -EOWNERDEAD: the process holds @l; its previous holder died holding it
 *	(see syncmem_lock()).
 * -ETIMEDOUT: the timeout passed.
 * -ECANCELED: syncmem_prep_cancel() ended it, or its ring was torn down
 *	or its submitting thread exited or exec'd while it was pending.
 * -ENOTRECOVERABLE: @l can never be taken again.
 * -EINVAL: @l is NULL, misaligned or not inside @r, the process's owner
 *	id could not be fetched, or the module has no LOCK command (no
 *	SYNCMEM_FEAT_URING_LOCK in its SYNCMEM_IOC_VERSION).
 * -EBADF: @r is NULL or mapped read-only.
 * -EUCLEAN: the lock's word kept changing under the request (another
 *	process writes it).
 * -EDQUOT: the user has max_user_async_waits waits queued.
 * -ENOMEM: no memory.
 * -EOPNOTSUPP: the module has no io_uring commands, or the ring was set
 *	up with IORING_SETUP_IOPOLL.
 */
void syncmem_prep_lock(struct io_uring_sqe *sqe, struct syncmem_region *r,
		       struct syncmem_lock *l, int64_t timeout_ns);

/*
 * Fill an io_uring SQE that ends a pending wait or lock request.
 * It ends a wait queued by syncmem_prep_wait32/64() or a lock request
 * by syncmem_prep_lock(): the pending one whose SQE had @user_data,
 * submitted on the same ring (through a region fd of any region).
 *
 * Returns: nothing; the cancel's own CQE has res 0, and the wait's CQE
 * then has -ECANCELED (exactly one CQE for it, as always), else the
 * cancel's res is one of the errors below.
 * Errors:
 * -ENOENT: no such wait was pending (it had completed, or never existed).
 * -EBADF: @r is NULL.
 */
void syncmem_prep_cancel(struct io_uring_sqe *sqe, struct syncmem_region *r,
			 uint64_t user_data);

/*
 * Abort a pending async acquisition of @loop.
 * @id comes from a *_timed async call of the lock family or from
 * syncmem_locks_request_async(). Call it from the thread that runs @loop;
 * a loop aborts only its own.
 * Whatever the kernel handed the acquisition meanwhile goes on to the
 * next waiter, as if it had never queued; a lock taken over from a dead
 * holder is left dead, so that the next acquirer is told.
 *
 * Returns: 0 when it was pending: its callback then runs once, later,
 * from the loop, with -ECANCELED.
 * Errors:
 * -ENOENT: it was acquired already (its callback, due, reports it),
 *	finished or aborted, or @loop has no such acquisition.
 * -EINVAL: @loop is NULL.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: a Web Locks manager holds values this library never writes.
 */
int syncmem_loop_abort(struct syncmem_loop *loop, uint64_t id);

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

/*
 * Bytes a pool of @nblocks blocks of @block_size bytes needs.
 *
 * Returns: that number; 0 when no such pool can be built: @block_size 0
 * or above SYNCMEM_POOL_MAX_BLOCK, @nblocks 0 or above 2^31, or more than
 * 4 GiB in all.
 * Errors: none.
 */
size_t syncmem_pool_footprint(uint32_t block_size, uint32_t nblocks);

/*
 * Build a pool in shared memory, once, by its creator.
 * @mem is zeroed and 64-byte aligned, and @len at least
 * syncmem_pool_footprint().
 * The builder (its process's owner id) is recorded: memory whose builder
 * died part-way is built again from scratch by the next init.
 *
 * Returns: 0, and a handle on the pool in *@out.
 * Errors:
 * -EINVAL: @mem misaligned, a bad geometry, @len too small, or NULL
 *	arguments.
 * -E2BIG: the pool would exceed the 4 GiB that 32-bit offsets reach.
 * -EEXIST: @mem already holds a pool, or one a live builder is building.
 * -EBADF: @mem is mapped read-only.
 * -ENOMEM: no memory for the handle.
 */
int syncmem_pool_init(void *mem, size_t len, uint32_t block_size, uint32_t nblocks,
		      struct syncmem_pool **out);

/*
 * Use a pool that another process built in @mem, mapped at any address.
 * A pool still being built is waited for, at most
 * SYNCMEM_POOL_ATTACH_WAIT_MS.
 * Memory mapped read-only may be attached: syncmem_pool_ptr() and
 * syncmem_pool_free_count() then work, alloc and free fail with EBADF.
 *
 * Returns: 0, and a handle on the pool in *@out.
 * Errors:
 * -EPROTO: @mem is zeroed or holds no pool.
 * -ETIMEDOUT: its builder was still building it after the wait.
 * -ESRCH: its builder died part-way (syncmem_pool_init() builds it again).
 * -EINVAL: @len is smaller than the pool, @mem is misaligned, or NULL
 *	arguments.
 * -ENOMEM: no memory for the handle.
 */
#define SYNCMEM_POOL_ATTACH_WAIT_MS 10000
int syncmem_pool_attach(void *mem, size_t len, struct syncmem_pool **out);

/*
 * Free a pool handle, not the pool: other processes keep using it.
 * A NULL @p is ignored.
 *
 * Returns: nothing.
 * Errors: none.
 */
void syncmem_pool_detach(struct syncmem_pool *p);

/*
 * Take a free block, lock-free.
 * syncmem_pool_alloc() returns only the offset; syncmem_pool_alloc_checked()
 * also says why no block could be had.
 * The block's offset is from the pool start: pass it between processes,
 * and turn it into an address with syncmem_pool_ptr().
 *
 * Returns: syncmem_pool_alloc(): the block's offset, or 0 when none can be
 * had (the pool is exhausted, @p is NULL, or an error below).
 * syncmem_pool_alloc_checked(): 0, and the offset in *@off (0 on failure).
 * Errors:
 * -ENOMEM: no block is free.
 * -EUCLEAN: the pool's shared memory holds values this library never
 *	writes: another process corrupted it.
 * -EBADF: the pool is mapped read-only.
 * -EINVAL: @p or @off is NULL.
 */
uint32_t syncmem_pool_alloc(struct syncmem_pool *p);
int syncmem_pool_alloc_checked(struct syncmem_pool *p, uint32_t *off);

/*
 * Give a block back, lock-free.
 * Of two racing frees of one block, exactly one succeeds.
 *
 * Returns: 0.
 * Errors:
 * -EINVAL: @off is not a block of this pool, or @p is NULL.
 * -EALREADY: the block is already free.
 * -EUCLEAN: the pool is corrupted (the block may then be lost).
 * -EBADF: the pool is mapped read-only.
 */
int syncmem_pool_free(struct syncmem_pool *p, uint32_t off);

/*
 * Turn a block offset into an address in this process's mapping, and back.
 *
 * Returns: the address, or the offset; NULL or 0 when outside the pool.
 * Errors: none.
 */
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

/*
 * This process's id as pools record it.
 *
 * Returns: 0, and the id in *@id.
 * Errors:
 * -ENODEV: the kernel gave none (no module).
 * -EINVAL: @id is NULL.
 */
int syncmem_pool_self_id(uint64_t *id);

/*
 * Hand a block this process holds to another process, or put it in transit.
 * @to is the receiver's syncmem_pool_self_id(), or SYNCMEM_POOL_ANYONE:
 * then the block names this process as its giver, and whoever takes it
 * must name it too.
 * Release: the taker sees what the giver wrote into the block.
 *
 * Returns: 0.
 * Errors:
 * -EPERM: another process holds the block, or it is in transit.
 * -EALREADY: the block is free.
 * -EINVAL: @off is not a block, or @to is not a process id.
 * -EBADF: the pool is mapped read-only.
 * -EUCLEAN: the block's word holds a value this library never writes.
 *
 * Notes: to pass a message through a queue without losing it to a death,
 * the sender puts {offset, its id} in the queue, then gives the block to
 * SYNCMEM_POOL_ANYONE; the receiver takes it naming that id, then removes
 * the entry. A sender that dies before giving leaves its block to the
 * receiver (its take reports EOWNERDEAD) or to a reclaim. A receiver that dies
 * before removing the entry leaves the block reclaimable and the entry
 * stale: the next receiver gets an error that says so, unless the same
 * giver has since given the same block again (a newer message: keep a
 * sequence number in the block too, and compare it after the take). A
 * process without an id cannot take part.
 */
int syncmem_pool_give(struct syncmem_pool *p, uint32_t off, uint64_t to);

/*
 * Become the holder of a block given to anyone by process @from.
 * @from is the giver's id, as the message said.
 * Of racing takers, one succeeds.
 *
 * Returns: 0 when the block is now this process's; 1 when it was this
 * process's already (given to it by id, or its own).
 * Errors:
 * -EOWNERDEAD: @from still held it and died; the block is this process's
 *	now, with what @from wrote before it posted the message.
 * -EAGAIN: @from holds it and lives: it has not given it yet.
 * -EBUSY: (a stale message) another process holds it: another receiver
 *	took it first, or it changed hands since.
 * -ESTALE: (a stale message) it is in transit from another giver.
 * -EALREADY: (a stale message) the block is free.
 * -EINVAL: @off is not a block, or @from is not a process id.
 * -EBADF: the pool is mapped read-only.
 * -EUCLEAN: the block's word holds a value this library never writes.
 */
int syncmem_pool_take(struct syncmem_pool *p, uint32_t off, uint64_t from);

/*
 * Read who holds a block.
 * A snapshot, not a synchronisation: syncmem_pool_take() is what acquires
 * the giver's writes. Works on read-only memory.
 *
 * Returns: 0 and the holder's id in *@holder (0: none recorded;
 * SYNCMEM_POOL_TABLE: a shared table); 1 when the block is in transit,
 * with its giver's id.
 * Errors:
 * -EALREADY: the block is free.
 * -EINVAL: @off is not a block.
 * -EUCLEAN: the block's word holds a value this library never writes.
 */
int syncmem_pool_holder(const struct syncmem_pool *p, uint32_t off, uint64_t *holder);

/*
 * Free every block whose holder died or exec'd another program.
 * It asks the kernel about each distinct holder once (one system call
 * each, mostly) and scans the pool's words once: O(nblocks).
 * It is safe at any time, by any number of processes at once, while others
 * allocate, free, give and take: a block whose word changed after it was
 * read is left alone.
 *
 * Returns: the number of blocks freed.
 * Errors:
 * -EBADF: the pool is mapped read-only.
 * -ENODEV: no module to ask.
 * -EMFILE: no free fd to ask the kernel with (and other kernel errors).
 * -EUCLEAN: a word holds a value this library never writes.
 * -EINVAL: @p is NULL.
 */
int syncmem_pool_reclaim(struct syncmem_pool *p);

/*
 * Count the free blocks by scanning the per-block states, O(nblocks).
 * The count is exact when no alloc or free is in flight.
 * The scan keeps counters off the hot path.
 *
 * Returns: the number of free blocks; 0 for a NULL @p.
 * Errors: none.
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
 * Reset a lock: free, with @flags (SYNCMEM_LOCK_FAIR or 0).
 * All-zero bytes are already an unlocked lock in default mode.
 * A NULL @l, or memory this process may not write (mapped read-only), is
 * left alone.
 *
 * Returns: nothing.
 * Errors: none.
 */
void syncmem_lock_init(struct syncmem_lock *l, unsigned flags);

/*
 * Take a lock, blocking.
 * syncmem_lock() waits as long as it takes; syncmem_lock_timed() at most
 * @timeout_ns (negative: no limit); syncmem_trylock() does not wait.
 * syncmem_lock_interruptible() is syncmem_lock_timed() that a signal
 * handler ends; the other calls go back to waiting once a handler returns.
 * Waiters, blocking and async, queue in one FIFO.
 * Uncontended, it is one CAS and no system call; a thread's very first
 * lock fetches its owner id from the kernel.
 *
 * Returns: 0: the caller holds the lock.
 * Errors:
 * -EOWNERDEAD: the caller holds the lock; its previous holder died
 *	holding it. Repair the state it guards, then call
 *	syncmem_lock_consistent().
 * -ENOTRECOVERABLE: a holder that got -EOWNERDEAD unlocked without
 *	syncmem_lock_consistent(): the lock can never be taken again.
 * -ETIMEDOUT: the timeout passed (syncmem_lock_timed(),
 *	syncmem_lock_interruptible()).
 * -EBUSY: another holder has it (syncmem_trylock()).
 * -EINTR: a signal handler ran (syncmem_lock_interruptible()).
 * -EDEADLK: this thread already holds the lock.
 * -ERANGE: @l is not wholly inside @r.
 * -EINVAL: @l is NULL or not 8-byte aligned.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: its flags hold a value this library never writes, or its word
 *	keeps changing under the call (another process wrote it).
 */
int syncmem_lock(struct syncmem_region *r, struct syncmem_lock *l);
int syncmem_lock_timed(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns);
int syncmem_trylock(struct syncmem_region *r, struct syncmem_lock *l);
int syncmem_lock_interruptible(struct syncmem_region *r, struct syncmem_lock *l,
			       int64_t timeout_ns);

/*
 * Release a lock.
 * A lock taken asynchronously belongs to the process: any of its threads
 * may unlock it.
 *
 * Returns: 0.
 * Errors:
 * -EPERM: the lock is not locked, or another thread holds it.
 * -ERANGE: @l is not wholly inside @r.
 * -EINVAL: @l is NULL or not 8-byte aligned.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: its word or flags hold a value this library never writes.
 */
int syncmem_unlock(struct syncmem_region *r, struct syncmem_lock *l);

/*
 * Mark a lock's state repaired after a takeover from a dead holder.
 * Call it after a lock call reported EOWNERDEAD; the lock then goes on as
 * normal.
 *
 * Returns: 0.
 * Errors:
 * -EINVAL: the caller does not hold @l after a takeover from a dead holder.
 * -ERANGE: @l is not wholly inside @r.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: its word keeps changing under the call (another process
 *	wrote it).
 */
int syncmem_lock_consistent(struct syncmem_region *r, struct syncmem_lock *l);

/*
 * Take a lock from an event loop, without blocking.
 * The call returns at once; @cb runs later from the loop, never inside
 * this call.
 * Unlock the lock from any thread of the process.
 *
 * Returns: 0: queued. cb(arg, 0) then runs with the lock held;
 * cb(arg, -EOWNERDEAD) likewise, after a dead holder; cb(arg, -ECANCELED)
 * when the loop was freed first; cb(arg, -errno) on any other error of
 * syncmem_lock().
 * Errors:
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -ERANGE: @l is not wholly inside @r; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 * -ENOTRECOVERABLE: the lock is not recoverable; nothing was queued.
 * -EUCLEAN: the lock word holds a value this library never writes.
 */
int syncmem_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
		       struct syncmem_lock *l, syncmem_wait_cb cb, void *arg);

/*
 * Take a lock from an event loop, bounded by a timeout and abortable.
 * As syncmem_lock_async(); @timeout_ns negative waits as long as it takes.
 * *@id_out (may be NULL) names the acquisition for syncmem_loop_abort().
 *
 * Returns: 0: queued. cb(arg, 0) or cb(arg, -EOWNERDEAD) then runs with
 * the lock held; cb(arg, -ETIMEDOUT) when the timeout passed first;
 * cb(arg, -ECANCELED) after syncmem_loop_abort() of a pending acquisition,
 * or when the loop was freed first; cb(arg, -errno) on any other error of
 * syncmem_lock().
 * Errors:
 * -ETIMEDOUT: @timeout_ns is 0 and it cannot be taken now; nothing was
 *	queued and @cb never runs.
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -ENOTRECOVERABLE: the lock is not recoverable; nothing was queued.
 * -EUCLEAN: the lock word holds a value this library never writes.
 * -ERANGE: @l is not wholly inside @r; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 */
int syncmem_lock_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
			     struct syncmem_lock *l, int64_t timeout_ns, syncmem_wait_cb cb,
			     void *arg, uint64_t *id_out);

/*
 * Take a lock from an event loop, run fn(arg), release it.
 * The call returns at once; @fn runs later from the loop.
 * After a dead holder @fn runs all the same, and syncmem_execute_result()
 * tells it so (-EOWNERDEAD).
 * A @fn that asked repairs the data and calls syncmem_lock_consistent(),
 * or the lock is not recoverable once @fn returns (as after an unlock).
 * A @fn that did not ask was not told: the lock is then left as a dead
 * holder's, and its next acquirer gets -EOWNERDEAD.
 * When the lock cannot be taken, @fn does not run.
 *
 * Returns: 0: queued. @fn then runs with the lock held, also after a dead
 * holder (-EOWNERDEAD from syncmem_execute_result()); it does not run
 * after -ENOTRECOVERABLE or when the loop was freed first.
 * Errors:
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -ERANGE: @l is not wholly inside @r; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 * -ENOTRECOVERABLE: the lock is not recoverable; nothing was queued.
 * -EUCLEAN: the lock word holds a value this library never writes.
 */
int syncmem_execute_locked(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_lock *l, void (*fn)(void *arg), void *arg);

/*
 * Ask, from inside an execute-style function, whether its holder died.
 * Call it from fn of syncmem_execute_locked() or syncmem_keyed_execute(),
 * or from a single-flight leader's function, on the thread running it.
 * Asking is being told: see those calls for what fn does then.
 * A single-flight function always gets 0: a leader takes over nothing,
 * the followers of a dead leader are told.
 *
 * Returns: 0.
 * Errors:
 * -EOWNERDEAD: what fn runs under (the lock, the key) was taken over from
 *	a holder that died holding it.
 * -EINVAL: called outside such a function.
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

/*
 * Reset a gate: open or closed, with SYNCMEM_GATE_* @flags.
 * All-zero bytes are already an open gate without flags.
 * syncmem_gate_init() leaves a NULL @g, or memory this process may not
 * write, alone.
 *
 * Returns: nothing (syncmem_gate_init()); 0 (syncmem_gate_init_flags()).
 * Errors:
 * -EINVAL: unknown @flags, or a NULL @g (syncmem_gate_init_flags()).
 * -EBADF: the memory is mapped read-only (syncmem_gate_init_flags()).
 */
void syncmem_gate_init(struct syncmem_gate *g, bool open);
int syncmem_gate_init_flags(struct syncmem_gate *g, bool open, uint32_t flags);

/*
 * Pass a gate, blocking: wait until it is open, and close it behind.
 * A thread may wait on a gate it passed: the next signal lets it through
 * again.
 * A negative @timeout_ns waits as long as it takes.
 *
 * Returns: 0: through; the gate is closed again.
 * Errors:
 * -EOWNERDEAD: (a SYNCMEM_GATE_HELD gate) through, after its holder died;
 *	the caller holds it.
 * -ETIMEDOUT: the timeout passed.
 * -EUCLEAN: flags other than SYNCMEM_GATE_HELD, or a word naming
 *	SYNCMEM_OWNER_NOTRECOVERABLE (any other word names some owner: a
 *	closed gate).
 * -EBADF: @r is mapped read-only.
 * -ERANGE: @g is not wholly inside @r.
 * -EINVAL: @g is NULL or misaligned.
 */
int syncmem_gate_wait(struct syncmem_region *r, struct syncmem_gate *g, int64_t timeout_ns);

/*
 * Pass a gate from an event loop, without blocking.
 * A held gate is then held by the process.
 *
 * Returns: 0: queued. cb(arg, 0) then runs from the loop once through;
 * cb(arg, -EOWNERDEAD) through after a dead holder; cb(arg, -ECANCELED)
 * when the loop was freed first.
 * Errors:
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -ERANGE: @g is not wholly inside @r; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: the gate holds a value this library never writes.
 */
int syncmem_gate_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			    struct syncmem_gate *g, syncmem_wait_cb cb, void *arg);

/*
 * Pass a gate from an event loop, bounded by a timeout and abortable.
 * As syncmem_gate_wait_async(); @timeout_ns negative waits as long as it
 * takes. *@id_out (may be NULL) names it for syncmem_loop_abort().
 *
 * Returns: 0: queued. cb(arg, 0) or cb(arg, -EOWNERDEAD) then runs once
 * through; cb(arg, -ETIMEDOUT) when the timeout passed first;
 * cb(arg, -ECANCELED) after syncmem_loop_abort() of a pending wait, or
 * when the loop was freed first.
 * Errors:
 * -ETIMEDOUT: @timeout_ns is 0 and it cannot be taken now; nothing was
 *	queued and @cb never runs.
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: the gate holds a value this library never writes.
 * -ERANGE: @g is not wholly inside @r; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 */
int syncmem_gate_wait_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				  struct syncmem_gate *g, int64_t timeout_ns, syncmem_wait_cb cb,
				  void *arg, uint64_t *id_out);

/*
 * Hand a gate to its oldest waiter, or open it when nobody waits.
 * Anyone may signal.
 *
 * Returns: 1 when the gate was handed to a waiter (it stays closed), 0 when
 * it was opened.
 * Errors:
 * -EUCLEAN: its word or flags hold a value this library never writes.
 * -EBADF: @r is mapped read-only.
 * -ERANGE: @g is not wholly inside @r.
 * -EINVAL: @g is NULL or misaligned.
 */
int syncmem_gate_signal(struct syncmem_region *r, struct syncmem_gate *g);

/* ---- Counting semaphore, FIFO -------------------------------------------- */

#define SYNCMEM_SEM_VALUE_MAX	0x7fffffffu

/*
 * A counting semaphore in shared memory (64 bytes). post() hands its unit to
 * the oldest waiter if one is queued, else counts it, so waiters are served
 * in arrival order. Uncontended wait and post make no system call.
 */
struct syncmem_sem {
	uint64_t word;		/* low 32 bits: units; bit 63: waiters may be queued */
	uint32_t reserved[14];
} __attribute__((aligned(64)));

/*
 * Set a semaphore's count.
 * All-zero bytes are already a semaphore with no units.
 *
 * Returns: 0.
 * Errors:
 * -EINVAL: @value is above SYNCMEM_SEM_VALUE_MAX, or @s is NULL.
 * -EBADF: the memory is mapped read-only.
 */
int syncmem_sem_init(struct syncmem_sem *s, uint32_t value);

/*
 * Take a unit of a semaphore, blocking.
 * syncmem_sem_wait() waits as long as it takes, syncmem_sem_timedwait() at
 * most @timeout_ns, syncmem_sem_trywait() not at all.
 * Waiters are served in arrival order.
 *
 * Returns: 0: a unit was taken.
 * Errors:
 * -ETIMEDOUT: the timeout passed (syncmem_sem_timedwait()).
 * -EAGAIN: no unit is available (syncmem_sem_trywait()).
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: the word holds more than SYNCMEM_SEM_VALUE_MAX units or any of
 *	bits 32 to 62 (never written: the high half holds only the waiters
 *	mark, bit 63), or keeps changing under the call.
 * -ERANGE: @s is not wholly inside @r.
 * -EINVAL: @s is NULL or misaligned.
 */
int syncmem_sem_wait(struct syncmem_region *r, struct syncmem_sem *s);
int syncmem_sem_timedwait(struct syncmem_region *r, struct syncmem_sem *s, int64_t timeout_ns);
int syncmem_sem_trywait(struct syncmem_region *r, struct syncmem_sem *s);

/*
 * Take a unit of a semaphore from an event loop, without blocking.
 *
 * Returns: 0: queued. cb(arg, 0) then runs from the loop with a unit taken,
 * or cb(arg, -ECANCELED) when the loop was freed first.
 * Errors:
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -ERANGE: @s is not wholly inside @r; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: the semaphore holds a value this library never writes.
 */
int syncmem_sem_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_sem *s, syncmem_wait_cb cb, void *arg);

/*
 * Take a unit from an event loop, bounded by a timeout and abortable.
 * As syncmem_sem_wait_async(); @timeout_ns negative waits as long as it
 * takes. *@id_out (may be NULL) names it for syncmem_loop_abort(); a unit
 * handed to an aborted wait is posted again.
 *
 * Returns: 0: queued. cb(arg, 0) then runs with a unit taken;
 * cb(arg, -ETIMEDOUT) when the timeout passed first; cb(arg, -ECANCELED)
 * after syncmem_loop_abort() of a pending wait, or when the loop was
 * freed first.
 * Errors:
 * -ETIMEDOUT: @timeout_ns is 0 and it cannot be taken now; nothing was
 *	queued and @cb never runs.
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: the semaphore holds a value this library never writes.
 * -ERANGE: @s is not wholly inside @r; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 */
int syncmem_sem_wait_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				 struct syncmem_sem *s, int64_t timeout_ns, syncmem_wait_cb cb,
				 void *arg, uint64_t *id_out);

/*
 * Give a unit back: to the oldest waiter if one is queued, else counted.
 *
 * Returns: 0.
 * Errors:
 * -EOVERFLOW: the count would pass SYNCMEM_SEM_VALUE_MAX.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: the word holds a value this library never writes.
 * -ERANGE: @s is not wholly inside @r.
 * -EINVAL: @s is NULL or misaligned.
 */
int syncmem_sem_post(struct syncmem_region *r, struct syncmem_sem *s);

/*
 * Read how many units a semaphore has available now.
 *
 * Returns: that number; 0 for a NULL @s.
 * Errors: none.
 */
uint32_t syncmem_sem_value(const struct syncmem_sem *s);

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

/*
 * Reset a reader-writer lock: unlocked, no reader.
 * All-zero bytes are already an unlocked rwlock.
 * A NULL @rw, or memory this process may not write, is left alone.
 *
 * Returns: nothing.
 * Errors: none.
 */
void syncmem_rwlock_init(struct syncmem_rwlock *rw);

/*
 * Take a reader-writer lock shared (rdlock) or exclusive (wrlock), blocking.
 * The _timed calls wait at most @timeout_ns; the try calls do not wait.
 * A reader that locks again while it holds the lock can deadlock behind a
 * queued writer (as with every fair rwlock): do not.
 *
 * Returns: 0: the caller holds the lock in the mode it asked for.
 * Errors:
 * -EOWNERDEAD: a writer died inside its section before the caller passed
 *	the turnstile. The caller holds the lock it asked for, alone until it
 *	unlocks, even as a reader: it may repair the half-written data.
 * -ETIMEDOUT: the timeout passed (the _timed calls).
 * -EBUSY: the lock cannot be had at once (the try calls).
 * -EDEADLK: this thread holds the write lock already.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: a slot counts 2^31 - 1 shares (one more would overflow) or
 *	counts shares while naming no process, or a word keeps changing
 *	under the call.
 * -ERANGE: @rw is not wholly inside @r.
 * -EINVAL: @rw is NULL or misaligned.
 */
int syncmem_rwlock_rdlock(struct syncmem_region *r, struct syncmem_rwlock *rw);
int syncmem_rwlock_rdlock_timed(struct syncmem_region *r, struct syncmem_rwlock *rw,
				int64_t timeout_ns);
int syncmem_rwlock_tryrdlock(struct syncmem_region *r, struct syncmem_rwlock *rw);
int syncmem_rwlock_wrlock(struct syncmem_region *r, struct syncmem_rwlock *rw);
int syncmem_rwlock_wrlock_timed(struct syncmem_region *r, struct syncmem_rwlock *rw,
				int64_t timeout_ns);
int syncmem_rwlock_trywrlock(struct syncmem_region *r, struct syncmem_rwlock *rw);

/*
 * Take a reader-writer lock from an event loop, without blocking.
 *
 * Returns: 0: queued. cb(arg, 0) then runs from the loop with the lock
 * held, shared (rdlock_async) or exclusive (wrlock_async);
 * cb(arg, -EOWNERDEAD) likewise after a dead writer; cb(arg, -ECANCELED)
 * when the loop was freed first.
 * Errors:
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -ERANGE: @rw is not wholly inside @r; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: the rwlock holds values this library never writes.
 */
int syncmem_rwlock_rdlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
				struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg);
int syncmem_rwlock_wrlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
				struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg);

/*
 * Read-lock or write-lock from an event loop, bounded by a timeout and
 * abortable. As syncmem_rwlock_rdlock_async() and _wrlock_async(); the
 * timeout covers the turnstile and, for a writer, the wait for the
 * readers ahead of it. *@id_out (may be NULL; 0 when a read lock was
 * taken at once) names it for syncmem_loop_abort(). A writer that times
 * out or is aborted while it waits for readers lets the turnstile go.
 *
 * Returns: 0: queued. cb(arg, 0) or cb(arg, -EOWNERDEAD) then runs with
 * the lock held; cb(arg, -ETIMEDOUT) when the timeout passed first;
 * cb(arg, -ECANCELED) after syncmem_loop_abort() of a pending lock, or
 * when the loop was freed first.
 * Errors:
 * -ETIMEDOUT: @timeout_ns is 0 and it cannot be taken now; nothing was
 *	queued and @cb never runs.
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: the rwlock holds values this library never writes.
 * -ERANGE: @rw is not wholly inside @r; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 */
int syncmem_rwlock_rdlock_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				      struct syncmem_rwlock *rw, int64_t timeout_ns,
				      syncmem_wait_cb cb, void *arg, uint64_t *id_out);
int syncmem_rwlock_wrlock_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				      struct syncmem_rwlock *rw, int64_t timeout_ns,
				      syncmem_wait_cb cb, void *arg, uint64_t *id_out);

/*
 * Release a reader-writer lock.
 * It releases the write lock if the caller holds it (this thread, or this
 * process for one taken asynchronously), else one of this process's read
 * shares.
 *
 * Returns: 0.
 * Errors:
 * -EPERM: the caller holds neither.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: a word holds a value this library never writes.
 * -ERANGE: @rw is not wholly inside @r.
 * -EINVAL: @rw is NULL or misaligned.
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
 * Build one key from several parts.
 * Each part is stored with its length, so ("ab", "c") and ("a", "bc")
 * differ.
 *
 * Returns: the key's length.
 * Errors:
 * -E2BIG: the key would not fit @cap bytes or SYNCMEM_KEY_MAX.
 * -EINVAL: @buf is NULL, or @parts or a part's data is NULL with bytes
 *	to read.
 */
int syncmem_key_build(void *buf, size_t cap, const struct syncmem_key_part *parts,
		      unsigned int nparts);

/*
 * The header of a table of keyed entries living in shared memory (keyed
 * locks, single-flight). Fixed layout, 128 bytes, followed by a
 * power-of-two array of bucket words (chain head index + 1, sequence), the
 * stripe locks, then 192-byte entries (a 128-byte head with the key, then
 * the key's struct syncmem_lock). The geometry, recomputed from one read of
 * the entry count, must match the stored fields and fit the region.
 * Insertions and removals happen under @lock; nobody waits while holding it.
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
 * Every call checks the table against @r before use.
 */
struct syncmem_keyed {
	struct syncmem_keytab t;
};

/*
 * Bytes a keyed lock table of @nentries keys needs.
 *
 * Returns: that number; 0 when no such table can be built.
 * Errors: none.
 */
size_t syncmem_keyed_footprint(uint32_t nentries);

/*
 * Build a keyed lock table, or attach to one.
 * syncmem_keyed_init() builds it in @mem, once, by its creator;
 * syncmem_keyed_attach() uses one that another process built.
 * They follow the pool's rules: a builder that died part-way makes attach
 * fail and the next init build the table again.
 *
 * Returns: 0, and a handle in *@out.
 * Errors:
 * -EINVAL: a bad length or alignment, NULL arguments, or (attach) the
 *	memory is not a keyed table.
 * -EEXIST: (init) @mem holds a table, or one a live creator is building.
 * -ETIMEDOUT: (attach) its creator was still building it after
 *	SYNCMEM_POOL_ATTACH_WAIT_MS.
 * -ESRCH: (attach) its creator died part-way.
 * -EPROTO: (attach) @mem holds no table.
 * -EBADF: (init) @mem is mapped read-only.
 * -ENOMEM: no memory for the handle.
 */
int syncmem_keyed_init(void *mem, size_t len, uint32_t nentries, struct syncmem_keyed **out);
int syncmem_keyed_attach(void *mem, size_t len, struct syncmem_keyed **out);

/*
 * Take the lock of a key, blocking: a fair mutex per key.
 * syncmem_keyed_lock() waits at most @timeout_ns (negative: no limit);
 * syncmem_keyed_trylock() does not wait.
 *
 * Returns: 0: the caller holds the key.
 * Errors:
 * -EOWNERDEAD: the caller holds the key; its last holder died holding it
 *	(the key itself goes on as usual).
 * -ETIMEDOUT: the timeout passed (syncmem_keyed_lock()).
 * -EBUSY: another holder has the key (syncmem_keyed_trylock()).
 * -EDEADLK: this thread holds the key already.
 * -ENOSPC: all the table's keys are in use.
 * -E2BIG: the key is longer than SYNCMEM_KEY_MAX.
 * -EINVAL: an empty key, or @k is not a keyed table.
 * -ERANGE: the table is not wholly inside @r.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: the table holds values this library never writes.
 */
int syncmem_keyed_lock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
		       size_t len, int64_t timeout_ns);
int syncmem_keyed_trylock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			  size_t len);

/*
 * Release the lock of a key.
 *
 * Returns: 0.
 * Errors:
 * -EPERM: this thread does not hold the key.
 * -E2BIG: the key is longer than SYNCMEM_KEY_MAX.
 * -EINVAL: an empty key, or @k is not a keyed table.
 * -ERANGE: the table is not wholly inside @r.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: the table holds values this library never writes.
 */
int syncmem_keyed_unlock(struct syncmem_region *r, struct syncmem_keyed *k, const void *key,
			 size_t len);

/*
 * Take the lock of a key from an event loop, without blocking.
 * syncmem_keyed_lock_async() calls @cb with the key held (unlock it).
 * syncmem_keyed_execute() instead runs fn(arg) with the key held, then
 * releases it.
 * After a dead holder fn runs all the same, and syncmem_execute_result()
 * tells it so; the key then goes on as usual.
 * A fn that did not ask was not told: the key is left as a dead holder's,
 * and its next locker is told.
 *
 * Returns: 0: queued. cb(arg, 0) then runs from the loop with the key
 * held; cb(arg, -EOWNERDEAD) held likewise after a dead holder;
 * cb(arg, -errno) on an error of syncmem_keyed_lock().
 * Errors:
 * -ENOSPC: all the table's keys are in use.
 * -E2BIG: the key is longer than SYNCMEM_KEY_MAX.
 * -EINVAL: an empty key, a NULL argument, or @k is not a keyed table.
 * -ERANGE: the table is not wholly inside @r.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: the table holds values this library never writes.
 * -ECANCELED: syncmem_loop_free() began.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 * -EBADFD: the caller is a child forked from the loop's process.
 */
int syncmem_keyed_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
			     struct syncmem_keyed *k, const void *key, size_t len,
			     syncmem_wait_cb cb, void *arg);
int syncmem_keyed_execute(struct syncmem_loop *loop, struct syncmem_region *r,
			  struct syncmem_keyed *k, const void *key, size_t len,
			  void (*fn)(void *arg), void *arg);

/*
 * Lock a key from an event loop, bounded by a timeout and abortable.
 * As syncmem_keyed_lock_async(); @timeout_ns negative waits as long as it
 * takes. *@id_out (may be NULL) names it for syncmem_loop_abort().
 *
 * Returns: 0: queued. cb(arg, 0) or cb(arg, -EOWNERDEAD) then runs with
 * the key held; cb(arg, -ETIMEDOUT) when the timeout passed first;
 * cb(arg, -ECANCELED) after syncmem_loop_abort() of a pending lock, or
 * when the loop was freed first.
 * Errors:
 * -ETIMEDOUT: @timeout_ns is 0 and it cannot be taken now; nothing was
 *	queued and @cb never runs.
 * -EINVAL: a NULL or misaligned argument; nothing was queued.
 * -EBADF: @r is mapped read-only; nothing was queued.
 * -ENOMEM: no memory for the acquisition; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -ENOSPC: every entry of the table is in use; nothing was queued.
 * -E2BIG: the key is too long; nothing was queued.
 * -EUCLEAN: the table holds values this library never writes.
 * -ERANGE: the table is not wholly inside @r; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_async_waits waits queued; nothing was
 *	queued.
 */
int syncmem_keyed_lock_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				   struct syncmem_keyed *k, const void *key, size_t len,
				   int64_t timeout_ns, syncmem_wait_cb cb, void *arg,
				   uint64_t *id_out);

/*
 * Count a keyed table's entries, or its keys held or waited for.
 * syncmem_keyed_in_use() counts the entries the table holds: keys held,
 * waited for, or kept for their next locker.
 * syncmem_keyed_held() scans the table for keys held or waited for.
 *
 * Returns: that count; syncmem_keyed_in_use() returns 0 for a NULL @k.
 * Errors:
 * -EINVAL: (syncmem_keyed_held()) @k is NULL or not a keyed table.
 * -ERANGE: (syncmem_keyed_held()) the table is not wholly inside @r.
 * -EUCLEAN: (syncmem_keyed_held()) the table holds values this library
 *	never writes.
 */
uint32_t syncmem_keyed_in_use(struct syncmem_keyed *k);
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

/*
 * Bytes a single-flight table of @nentries keys needs.
 *
 * Returns: that number; 0 when no such table can be built.
 * Errors: none.
 */
size_t syncmem_flight_footprint(uint32_t nentries);

/*
 * Build a single-flight table, or attach to one.
 * syncmem_flight_init() builds it in @mem, once, by its creator;
 * syncmem_flight_attach() uses one that another process built.
 * Results are stored in @pool's blocks: @mem and @pool are inside @r.
 * Init and attach follow the pool's rules.
 *
 * Returns: 0, and a handle in *@out.
 * Errors:
 * -ERANGE: @mem or @pool is not inside @r.
 * -EINVAL: a bad length or alignment, NULL arguments, or (attach) the
 *	memory is not a single-flight table.
 * -EEXIST: (init) @mem holds a table, or one a live creator is building.
 * -ETIMEDOUT: (attach) its creator was still building it after
 *	SYNCMEM_POOL_ATTACH_WAIT_MS.
 * -ESRCH: (attach) its creator died part-way.
 * -EPROTO: (attach) @mem holds no table.
 * -EBADF: (init) @r is mapped read-only.
 * -ENOMEM: no memory for the handle.
 */
int syncmem_flight_init(struct syncmem_region *r, void *mem, size_t len, uint32_t nentries,
			struct syncmem_pool *pool, struct syncmem_flight **out);
int syncmem_flight_attach(struct syncmem_region *r, void *mem, size_t len,
			  struct syncmem_flight **out);

/*
 * Run or join the flight of a key, blocking.
 * The first caller (the leader) runs @fn; callers of the same key that come
 * while it runs wait and receive the same result.
 * The result is copied to @out, at most @cap bytes.
 * syncmem_flight_do_async() does the same from an event loop: a leader runs
 * @fn from the loop, a follower waits asynchronously; then
 * cb(cb_arg, result, data, len) runs from the loop, @data valid during the
 * callback only.
 *
 * Returns: the result's length (syncmem_flight_do()), or @fn's negative
 * errno; 0 (syncmem_flight_do_async()): queued.
 * Errors:
 * -EOWNERDEAD: the leader's process died mid-flight.
 * -EMSGSIZE: the result is larger than @cap.
 * -ENOSPC: the table is full.
 * -EDQUOT: the user has max_user_on_close kernel on-close actions armed
 *	(a leader arms two); (async) or max_user_async_waits async waits
 *	queued.
 * -EAGAIN: (async) the loop's handle has max_async_waits waits queued.
 * -ENOMEM: no free pool block for the result.
 * -E2BIG: the key is longer than SYNCMEM_KEY_MAX.
 * -EDEADLK: called from inside @fn of a flight of the same key, which would
 *	wait for itself.
 * -EBADF: @r is mapped read-only.
 * -EUCLEAN: the table, the flight's entry or its result holds values this
 *	library never writes.
 * -EINVAL: an empty key or a NULL argument.
 * -ERANGE: the table is not wholly inside @r.
 * -ECANCELED: (async) syncmem_loop_free() began.
 * -EBADFD: (async) the caller is a child forked from the loop's process.
 */
int syncmem_flight_do(struct syncmem_region *r, struct syncmem_flight *f, const void *key,
		      size_t len, syncmem_flight_fn fn, void *fn_arg, void *out, size_t cap);
int syncmem_flight_do_async(struct syncmem_loop *loop, struct syncmem_region *r,
			    struct syncmem_flight *f, const void *key, size_t len,
			    syncmem_flight_fn fn, void *fn_arg, syncmem_flight_cb cb,
			    void *cb_arg);

/*
 * Run or join a flight from an event loop, a follower bounded and abortable.
 * As syncmem_flight_do_async(); a follower whose flight has not ended
 * after @timeout_ns (negative: no limit) stops waiting, and so does one
 * aborted with syncmem_loop_abort() of *@id_out (may be NULL); the flight
 * goes on for the others. A leader is not bounded (its @fn runs from the
 * loop), and syncmem_loop_abort() of it fails.
 *
 * Returns: 0: queued. cb(cb_arg, result, data, len) then runs once with
 * the flight's outcome; cb(cb_arg, -ETIMEDOUT, NULL, 0) when a follower's
 * timeout passed first; cb(cb_arg, -ECANCELED, NULL, 0) after an abort,
 * or when the loop was freed first.
 * Errors:
 * -ETIMEDOUT: @timeout_ns is 0 and the call would follow a flight;
 *	nothing was queued and @cb never runs.
 * -EINVAL: a NULL argument; nothing was queued.
 * -ENOSPC: the table is full; nothing was queued.
 * -ENOMEM: no memory, or no free pool block for the result.
 * -E2BIG: the key is too long.
 * -EBADF: @r is mapped read-only.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: the table or the flight's entry holds values this library
 *	never writes.
 * -ERANGE: the table is not wholly inside @r; nothing was queued.
 * -EAGAIN: the loop's handle has max_async_waits waits queued; nothing
 *	was queued.
 * -EDQUOT: the user has max_user_on_close on-close actions armed, or
 *	max_user_async_waits async waits queued; nothing was queued.
 */
int syncmem_flight_do_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
				  struct syncmem_flight *f, const void *key, size_t len,
				  syncmem_flight_fn fn, void *fn_arg, int64_t timeout_ns,
				  syncmem_flight_cb cb, void *cb_arg, uint64_t *id_out);

/*
 * Count the flights alive in a table.
 *
 * Returns: that number; 0 for a NULL @f.
 * Errors: none.
 */
uint32_t syncmem_flight_in_flight(struct syncmem_flight *f);

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
 * Bytes a lock manager needs.
 * It holds @max_names names and @max_requests requests (held and pending
 * together) at once.
 * A name takes 1472 bytes (its 1024 name bytes, its queue and 16
 * per-process share counters), a request 64.
 * Init divides the room as one name per 4 requests: footprint(n, q) is the
 * footprint of max(n, ceil(q / 4)) names and 4 requests each.
 *
 * Returns: that number; 0 when impossible (a count of 0, more than 2^20
 * names or more than 2^24 requests).
 * Errors: none.
 */
size_t syncmem_locks_footprint(uint32_t max_names, uint32_t max_requests);

/*
 * Build a lock manager in the @size bytes at @at, once, by its creator.
 * It holds at least n names and q requests at once for every (n, q) whose
 * footprint is at most @size.
 * The builder is recorded: a manager whose builder died part-way is built
 * again by the next init.
 *
 * Returns: 0, and a handle on the manager in *@out.
 * Errors:
 * -EINVAL: NULL arguments, @at not 64-byte aligned, the @size bytes not
 *	inside @r, or @size below syncmem_locks_footprint(1, 1).
 * -EBADF: @r is mapped read-only.
 * -EEXIST: @at holds a manager, or one that a live creator is building.
 * -ENOMEM: no memory for the handle.
 */
int syncmem_locks_init(struct syncmem_region *r, void *at, size_t size,
		       struct syncmem_locks **out);

/*
 * Use the lock manager another process built at @at in @r.
 * @r may be mapped read-only: syncmem_locks_query() then works, and every
 * request fails with EBADF.
 * A manager still being built is waited for, at most
 * SYNCMEM_POOL_ATTACH_WAIT_MS.
 *
 * Returns: 0, and a handle on the manager in *@out.
 * Errors:
 * -EINVAL: NULL arguments, @at misaligned or outside @r, or the manager
 *	does not fit in @r.
 * -EPROTO: there is no manager at @at.
 * -ESRCH: its builder died part-way: init it again.
 * -ETIMEDOUT: its builder was still building it after the wait.
 * -ENOMEM: no memory for the handle.
 */
int syncmem_locks_attach(struct syncmem_region *r, void *at, struct syncmem_locks **out);

/*
 * Free a manager handle, not the manager: other processes go on using it.
 * Release the locks granted through the handle first: their handles use
 * it. A NULL @m is ignored.
 *
 * Returns: nothing.
 * Errors: none.
 */
void syncmem_locks_detach(struct syncmem_locks *m);

/*
 * Request the lock of a name, in the mode @flags says, and wait for it.
 * @name is @len bytes; @timeout_ns negative waits as long as it takes.
 * STEAL (exclusive only): every holder of the name loses it at once (see
 * syncmem_locks_stolen() and syncmem_locks_release()) and
 * the caller is granted it ahead of the queue; the queue keeps its order.
 * A holder that asks again for a name it holds queues like anyone: an
 * exclusive request waits for the hold of its own process.
 *
 * Returns: 0: granted; *@out is its handle, for syncmem_locks_release().
 * Errors:
 * -EOWNERDEAD: granted likewise; an exclusive holder of the name died
 *	holding it (the state it guards may be half-written).
 * -EBUSY: IF_AVAILABLE, and the name is held in a conflicting mode or
 *	other requests of it are queued; nothing was queued.
 * -ETIMEDOUT: the timeout passed first; the request left the queue. With a
 *	timeout of 0: not grantable at once, and nothing was queued.
 * -ENOSPC: the manager has no room for the name or for the request.
 * -EINVAL: NULL @m, @name or @out, an empty name, a name that begins with
 *	'-', unknown flags, or STEAL with IF_AVAILABLE or SHARED.
 * -ENAMETOOLONG: the name is longer than SYNCMEM_LOCKS_NAME_MAX bytes.
 * -EBADF: the region is mapped read-only.
 * -EUCLEAN: the manager holds values this library never writes.
 * -ENOMEM: no memory for the lock's handle.
 * -ENODEV: the module is not loaded (and other kernel errors).
 */
int syncmem_locks_request(struct syncmem_locks *m, const void *name, size_t len,
			  unsigned flags, int64_t timeout_ns, struct syncmem_held **out);

/*
 * Request the lock of a name from an event loop, without blocking.
 * The request joins the name's one FIFO queue with blocking requests; @cb
 * runs exactly once, later, from the loop, never inside this call.
 * Release a granted lock from any thread of the process. *@id_out (may be
 * NULL) names the request for syncmem_locks_abort(); it waits as long as
 * it takes unless aborted.
 *
 * Returns: 0. cb(arg, 0, h) then runs with @h the handle of the lock
 * granted; cb(arg, -EOWNERDEAD, h) likewise, an exclusive holder having
 * died holding it; cb(arg, -EBUSY, NULL) for IF_AVAILABLE when the name
 * is not available; cb(arg, -ENOSPC, NULL) when the manager has no room;
 * cb(arg, -ECANCELED, NULL) after syncmem_locks_abort(), or when the loop
 * was freed first; cb(arg, -EDQUOT, NULL) when the user has
 * max_user_async_waits waits queued; cb(arg, -EUCLEAN or -ENOMEM, NULL)
 * likewise.
 * Errors:
 * -EINVAL: NULL @loop, @m, @name or @cb, or what syncmem_locks_request()
 *	refuses; @cb never runs.
 * -ENAMETOOLONG: the name is longer than SYNCMEM_LOCKS_NAME_MAX bytes.
 * -EBADF: the region is mapped read-only.
 * -ENOMEM: no memory for the request; nothing was queued.
 * -ECANCELED: syncmem_loop_free() began.
 * -EBADFD: the caller is a child forked from the loop's process.
 */
int syncmem_locks_request_async(struct syncmem_loop *loop, struct syncmem_locks *m,
				const void *name, size_t len, unsigned flags,
				syncmem_held_cb cb, void *arg, uint64_t *id_out);

/*
 * Abort a pending async request of @loop, from the thread that runs it.
 * The request leaves its queue before this call returns, and the next
 * request of the name is considered at once.
 *
 * Returns: 0 when it was pending: its callback then runs once, later,
 * from the loop, with -ECANCELED.
 * Errors:
 * -ENOENT: it was granted already (the grant stands, its callback reports
 *	it), or finished, or @loop has no such request.
 * -EINVAL: @loop is NULL.
 * -EBADFD: the caller is a child forked from the loop's process.
 * -EUCLEAN: the manager holds values this library never writes.
 */
int syncmem_locks_abort(struct syncmem_loop *loop, uint64_t id);

/*
 * Release a granted lock and free its handle @h, whatever the result.
 *
 * Returns: 0.
 * Errors:
 * -ECONNABORTED: the lock was stolen; nothing changed.
 * -EPERM: @h is another process's (the copy a forked child inherited);
 *	nothing changed.
 * -EINVAL: @h is NULL.
 * -EUCLEAN: the manager holds values this library never writes.
 */
int syncmem_locks_release(struct syncmem_held *h);

/*
 * Ask whether a granted lock was stolen.
 *
 * Returns: 1 once the lock of @h was stolen (syncmem_locks_release() then
 * reports it), else 0.
 * Errors: none.
 */
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
 * Report what a lock manager holds and who waits.
 * The held locks come in grant order into @held, the pending requests in
 * queue order into @pending (each name's queue in its order; requests of
 * different names by the time they were queued).
 * *@nheld and *@npending carry in the capacity of each array (an array may
 * be NULL when its capacity is 0) and come back with how many there are;
 * entries past the capacity are not written.
 * It is a snapshot taken without stopping anyone: each entry was true at
 * some moment of the call.
 * Holds and requests of processes that died are not reported; on a
 * writable region they are freed as the call finds them.
 * It asks the kernel once per process reported (its pid) and scans the
 * requests once.
 *
 * Returns: 0.
 * Errors:
 * -EINVAL: @m, @nheld or @npending is NULL, or an array is NULL with a
 *	capacity.
 * -ENOMEM: no memory.
 */
int syncmem_locks_query(struct syncmem_locks *m, struct syncmem_lock_info *held,
			size_t *nheld, struct syncmem_lock_info *pending, size_t *npending);

/* ---- Introspection: object names, waiters and holders -------------------- */

/*
 * What a region holds, for tools and for programs that report on their own
 * state (syncmemctl uses these). Every call works on a region opened
 * read-only as well: what a user may open, it may inspect. Answers come
 * from the kernel, never from the region's memory.
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
 * Name an object of a region, for tools: "lock 'jobs' at 0x40".
 * @obj is @size bytes inside @r, 4-byte aligned; @kind is a SYNCMEM_OBJ_*.
 * The kernel keeps the name with the region until the region is freed,
 * out of reach of whatever a process writes into the region's memory.
 * Naming the same address again replaces the name.
 * A NULL @name removes it (@kind and @size are then ignored).
 * A Web Locks manager (SYNCMEM_OBJ_LOCKS) is named with its address and the
 * size given to syncmem_locks_init(); syncmemctl locks then lists its
 * names.
 *
 * Returns: 0.
 * Errors:
 * -ERANGE: @obj and @size are not wholly inside @r.
 * -EINVAL: a NULL argument, @obj unaligned, an unknown @kind, or a name
 *	empty, longer than SYNCMEM_OBJECT_NAME_MAX or not printable ASCII.
 * -EBADF: @r is mapped read-only.
 * -ENOSPC: the region has SYNCMEM_OBJECTS_MAX names.
 * -ENOENT: removing a name that is not there.
 * -ENOMEM: no memory.
 * -ENOTTY: the module has no introspection.
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
 * List the named objects of a region, by offset.
 * It fills up to @cap entries of @out.
 *
 * Returns: how many names there are (more than @cap: the list was cut).
 * Errors:
 * -EINVAL: @out is NULL with a non-zero @cap.
 * -ENOMEM: no memory.
 * -ENOTTY: the module has no introspection.
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
 * List the waiters queued on a region, or on one word of it.
 * They come by word offset, then in arrival order.
 * With @word (inside @r, 4-byte aligned) only that word's are listed.
 * It fills up to @cap entries, the first ones in that order.
 * Each word's queue is read at one instant; more than 4096 waiters are
 * read in pages, one after another.
 *
 * Returns: how many waiters there are (more than @cap: the list was cut).
 * Errors:
 * -EINVAL: @r is NULL, @out is NULL with a non-zero @cap, or @word is
 *	misaligned or outside @r.
 * -ENOMEM: no memory.
 * -ENOTTY: the module has no introspection.
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
 * Read who holds an owner word: a lock's, a gate's or a rwlock's turnstile.
 * @word is 8-byte aligned and inside @r: the word of a struct syncmem_lock
 * or syncmem_gate, or a rwlock's turnstile.word.
 * The answer is a snapshot.
 *
 * Returns: 0, and the answer in *@out.
 * Errors:
 * -EINVAL: a NULL argument, or @word misaligned or outside @r.
 * -ENOTTY: the module has no introspection.
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
 * List the on-close actions armed on words of a region, oldest first.
 * They are what each process promised to do to the region if it dies: a
 * single-flight leader's "leader died", the count of a gate's holders.
 * It fills up to @cap entries of @out.
 *
 * Returns: how many actions there are (more than @cap: the list was cut).
 * Errors:
 * -EINVAL: @r is NULL, or @out is NULL with a non-zero @cap.
 * -ENOMEM: no memory.
 * -ENOTTY: the module has no introspection.
 */
int syncmem_armed(struct syncmem_region *r, struct syncmem_armed_info *out, size_t cap);

/* ---- Errors and version ------------------------------------------------- */

/*
 * Describe a result: a negative errno or a SYNCMEM_* result.
 * For the errnos of common mistakes (ENODEV, EPROTO, ERANGE, EBADF, EINVAL,
 * EACCES) it names the likely cause and what to check.
 *
 * Returns: the text; never NULL.
 * Errors: none.
 */
const char *syncmem_strerror(int err);

/*
 * The version of the library the program runs with, "MAJOR.MINOR.PATCH".
 * SYNCMEM_VERSION is that of the headers it was built with; the shared
 * library may be newer.
 *
 * Returns: the version string.
 * Errors: none.
 */
const char *syncmem_version(void);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* SYNCMEM_H */
