/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libsyncmem internals shared between its source files. */
#ifndef SYNCMEM_INTERNAL_H
#define SYNCMEM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/syncmem.h>
#include <linux/types.h>

#include "syncmem.h"

struct syncmem_region {
	int fd;			/* region fd, owned */
	void *base;		/* its MAP_SHARED mapping */
	size_t size;		/* region size in bytes */
	size_t lock_words;	/* offsets / 8 below this hold a whole struct syncmem_lock;
				 * 0 when read-only (no lock may be written) */
	bool rdonly;
};

/*
 * Failed attempts after which a call gives up with -EUCLEAN: a
 * compare-and-swap on a shared word that keeps losing, a wait that keeps
 * finding its word changed. Each failure means another process changed the
 * word in a window of nanoseconds (a microsecond for a wait); honest
 * contention does not do that this many times in a row, a peer
 * scribbling on the word does (and could otherwise keep the call spinning
 * forever). 2^16 failures take well under a second.
 */
#define SYNCMEM__RETRY_MAX	65536u

/* Count one more failed attempt: true once there were too many. */
static inline bool syncmem__too_many(uint32_t *failed)
{
	return ++*failed > SYNCMEM__RETRY_MAX;
}

/*
 * Count a wait's result: one that found its word changed
 * (SYNCMEM_WAIT_NOT_EQUAL) is one more failed attempt, any other starts
 * the count again (a wake-up is progress). True once the word changed
 * between the caller's read and its wait too many times in a row.
 */
static inline bool syncmem__keeps_changing(int wait_result, uint32_t *changed)
{
	if (wait_result != SYNCMEM_WAIT_NOT_EQUAL) {
		*changed = 0;
		return false;
	}
	return syncmem__too_many(changed);
}

/*
 * Whether this process may write the 4-byte word at @word, probed without a
 * write that could fault: 1 writable, 0 mapped read-only (a SIGSEGV on
 * write). 1 when the probe itself is unavailable.
 */
int syncmem__writable(uint32_t *word);

/*
 * The same for the @size bytes (at most a page) at @obj, whatever their
 * alignment: 1 writable, 0 not (mapped read-only, or not mapped at all).
 */
int syncmem__memory_writable(const void *obj, size_t size);

/*
 * Fill a region handle for the @size bytes mapped at @base from region fd
 * @fd (tests and benchmarks build one over plain shared memory with it).
 */
void syncmem__region_fill(struct syncmem_region *r, int fd, void *base, size_t size,
			  bool rdonly);

/* Device path; $SYNCMEM_DEVICE overrides it (tests, unusual setups). */
#define SYNCMEM_DEVICE_PATH "/dev/syncmem"

/* Open /dev/syncmem and check the module's ABI version: fd or -errno. */
int syncmem__device_open(void);

/*
 * A handle from a region fd (SYNCMEM_IOC_HANDLE_OPEN), for a process that
 * cannot open /dev/syncmem, its ABI version checked: fd or -errno
 * (-ENOTTY: a module without the call).
 */
int syncmem__region_handle(int region_fd);

/* ioctl() that returns its result or -errno, restarting on EINTR. */
/* One ioctl, -errno on failure, -EINTR included (interruptible waits). */
int syncmem__ioctl_once(int fd, unsigned long req, void *arg);
int syncmem__ioctl(int fd, unsigned long req, void *arg);

/*
 * Byte offset of the @size bytes at @obj, @align-aligned, wholly inside the
 * region's mapping; -ERANGE when not wholly inside it, -EINVAL when
 * misaligned or for a NULL region or object.
 */
int syncmem__object_offset(const struct syncmem_region *r, const void *obj, size_t size,
			   size_t align, __u64 *off);

/* The same for a naturally aligned @width-byte word, but -EINVAL for any fault. */
int syncmem__word_offset(const struct syncmem_region *r, const void *addr,
			 size_t width, __u64 *off);

/*
 * A shared object this call will write: wholly inside the region (else
 * -ERANGE), @align-aligned (else -EINVAL; NULL too), in a writable region
 * (else -EBADF). 0 when so.
 */
int syncmem__object_writable(const struct syncmem_region *r, const void *obj, size_t size,
			     size_t align);

/* Absolute CLOCK_MONOTONIC deadline for a relative timeout (negative: none). */
uint64_t syncmem__deadline(int64_t timeout_ns);

/* The relative timeout left until @deadline: SYNCMEM_FOREVER, or >= 0. */
int64_t syncmem__remaining(uint64_t deadline);

/* One WAIT ioctl with an absolute deadline: SYNCMEM_WAIT_* or -errno. */
int syncmem__wait_until(struct syncmem_region *r, const void *addr, uint32_t width,
			uint64_t expected, uint64_t deadline_ns);

/* The same with SYNCMEM_WAIT_* @flags (the ioctl's own). */
int syncmem__wait_flags(struct syncmem_region *r, const void *addr, uint32_t width,
			uint64_t expected, uint64_t deadline_ns, uint32_t flags);

/* One WAIT ioctl: SYNCMEM_WAIT_* (HANDED_OFF included) or -errno. */
int syncmem__wait(struct syncmem_region *r, const void *addr, uint32_t width,
		  uint64_t expected, int64_t timeout_ns);

/*
 * Queue an async wait; with @raw the callback gets the kernel's result
 * (SYNCMEM_WAIT_WOKEN / _HANDED_OFF / _TIMED_OUT, or -ECANCELED) and a
 * queued wait returns SYNCMEM_WAIT_QUEUED instead of SYNCMEM_PENDING.
 */
int syncmem__wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			const void *addr, uint32_t width, uint64_t expected,
			int64_t timeout_ns, syncmem_wait_cb cb, void *arg,
			bool raw, uint64_t *id_out);

/*
 * The same as an owner wait (SYNCMEM_WAIT_ASYNC_OWNER) on the 8-byte owner
 * word @addr, on behalf of this process's owner id; raw results, which may
 * also be SYNCMEM_WAIT_OWNER_DIED.
 */
int syncmem__lock_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			     const uint64_t *addr, uint64_t expected, syncmem_wait_cb cb,
			     void *arg);

/*
 * The same two with an absolute deadline (SYNCMEM_NO_DEADLINE: none) and
 * raw results; *@id_out (may be NULL) names the queued wait for
 * syncmem__loop_cancel(). A deadline already passed: SYNCMEM_WAIT_TIMED_OUT,
 * nothing queued. A wait that may be handed something (@handoff) goes
 * through the handle, never the ring: should its process die before its
 * loop reads the completion, the kernel passes an unread record's hand-off
 * on, but cannot take one back from a CQE.
 */
int syncmem__wait_async_until(struct syncmem_loop *loop, struct syncmem_region *r,
			      const void *addr, uint32_t width, uint64_t expected,
			      uint64_t deadline_ns, bool handoff, syncmem_wait_cb cb, void *arg,
			      uint64_t *id_out);
int syncmem__lock_wait_async_until(struct syncmem_loop *loop, struct syncmem_region *r,
				   const uint64_t *addr, uint64_t expected, uint64_t deadline_ns,
				   syncmem_wait_cb cb, void *arg, uint64_t *id_out);

/*
 * Cancel the queued wait @id of @loop: 0 (its callback gets -ECANCELED),
 * -ENOENT when it is not queued (its completion is on its way, or done).
 */
int syncmem__loop_cancel(struct syncmem_loop *loop, uint64_t id);

/*
 * One LOCK_WAIT ioctl as @owner (SYNCMEM_WAIT_* @flags): SYNCMEM_WAIT_*
 * (OWNER_DIED included) or -errno.
 */
int syncmem__lock_wait(struct syncmem_region *r, const uint64_t *addr, uint64_t expected,
		       uint64_t owner, uint64_t deadline_ns, uint32_t flags);

/* One UNLOCK ioctl: SYNCMEM_UNLOCK_* or -errno. */
int syncmem__unlock_word(struct syncmem_region *r, uint64_t *addr, uint64_t expected,
			 uint32_t flags);

/* One HANDOFF ioctl (SYNCMEM_HANDOFF_* @flags): SYNCMEM_HANDOFF_* or -errno. */
int syncmem__handoff(struct syncmem_region *r, void *addr, uint32_t width,
		     uint64_t value, uint32_t flags);

/*
 * May @loop queue work? 0; -EINVAL (NULL), -EBADFD (in a process forked
 * from its maker), -ECANCELED (syncmem_loop_free() began: a callback it
 * runs is calling). Every call that takes something before it queues its
 * callback asks first, so that it takes nothing it could not deliver.
 */
int syncmem__loop_check(const struct syncmem_loop *loop);

/*
 * An async acquisition that its loop may abort while it is pending: the
 * loop keeps it under an id of its own (ids of waits and of jobs never
 * meet), so a loop aborts only its own.
 */
struct syncmem__job {
	uint64_t id;
	unsigned int kind;	/* SYNCMEM__JOB_*: which call may abort it */
	/*
	 * Abort it (from the loop's thread): 0 if it was pending (its
	 * callback reports -ECANCELED, later, from the loop), -ENOENT if it
	 * was acquired (its callback is due) or aborted already, or -errno.
	 */
	int (*abort)(struct syncmem__job *j);
};

enum {
	SYNCMEM__JOB_LOCKS = 1,		/* syncmem_locks_request_async() */
	SYNCMEM__JOB_ACQUIRE = 2,	/* the lock family's timed async acquisitions */
};

/* Give @j a new id of @loop and keep it under that id: 0, or -ENOMEM. */
int syncmem__job_add(struct syncmem_loop *loop, struct syncmem__job *j, unsigned int kind,
		     int (*abort)(struct syncmem__job *j));
/* Forget @j (its id stays spent). */
void syncmem__job_del(struct syncmem_loop *loop, struct syncmem__job *j);
/* The job of @loop with @id and @kind (0: any kind), or NULL. */
struct syncmem__job *syncmem__job_find(struct syncmem_loop *loop, uint64_t id,
				       unsigned int kind);
/* 0, -EINVAL (NULL), -EBADFD (in a process forked from its maker). */
int syncmem__loop_usable(const struct syncmem_loop *loop);

/*
 * Run cb(arg, @result) later from the loop: queued in the loop, or through
 * the kernel handle once the program asked for syncmem_loop_fd().
 */
int syncmem__loop_post(struct syncmem_loop *loop, syncmem_wait_cb cb, void *arg,
		       int result);

/*
 * Death guard (guard.c): if this process dies (its private handle is
 * released) while *@word still holds @expected, the kernel stores @value
 * and wakes all waiters of the word. 0 and *@id, or -errno.
 */
int syncmem__guard_arm(struct syncmem_region *r, uint32_t *word, uint32_t expected,
		       uint32_t value, uint64_t *id);
int syncmem__guard_disarm(uint64_t id);

/*
 * Robust count (guard.c): add 1 to *@word now; the kernel subtracts it
 * again if this process dies before syncmem__count_undo(), which
 * subtracts it and returns 1 if the word is 0 then, else 0. 0 and *@id,
 * or -errno (-ENOSPC, -EDQUOT: too many armed).
 */
int syncmem__count_arm(struct syncmem_region *r, uint32_t *word, uint64_t *id);
int syncmem__count_undo(uint64_t id);

/* This thread's id, cached (no system call after the first). */
extern __thread uint32_t syncmem__cached_tid __attribute__((tls_model("initial-exec")));
uint32_t syncmem__tid_slow(void);

static inline uint32_t syncmem__tid(void)
{
	uint32_t tid = syncmem__cached_tid;

	return __builtin_expect(tid != 0, 1) ? tid : syncmem__tid_slow();
}

/*
 * This thread's owner id (SYNCMEM_IOC_OWNER), cached: 0 until the first
 * lock call fetches it through @fd (a region fd); reset in a forked child.
 */
extern __thread uint64_t syncmem__cached_owner __attribute__((tls_model("initial-exec")));
/* The id, or -errno. */
int64_t syncmem__owner_slow(int fd);
/*
 * Which process this is, as a number that changes in every forked child
 * (cheaper than getpid(), which is a system call): private state made in
 * one process can tell it is being used in a child.
 */
uint32_t syncmem__process_gen(void);
/* This process's owner id (async acquisitions), or -errno. */
int64_t syncmem__process_owner(int fd);
/* This process's owner id if it has fetched one, else 0. */
extern uint64_t syncmem__process_owner_id;

static inline uint64_t syncmem__process_owner_cached(void)
{
	return __atomic_load_n(&syncmem__process_owner_id, __ATOMIC_RELAXED);
}
/* Tests over plain shared memory (no kernel to issue ids): use @id as the process's. */
void syncmem__process_owner_stand_in(uint64_t id);
/*
 * This process's owner id, through a handle of its own when none is at
 * hand; -errno when the kernel cannot give one (-ENODEV: no module).
 */
int64_t syncmem__process_owner_any(void);
/* Is owner id @id alive (SYNCMEM_OWNER_QUERY through @fd): 1, 0, or -errno. */
int syncmem__owner_alive(int fd, uint64_t id);
/* The same through a handle of its own: 1 dead, 0 alive, or -errno. */
int syncmem__owner_dead(uint64_t id);

/* Does the caller (this thread, or this process for an async acquisition) hold @l? */
bool syncmem__lock_held(const struct syncmem_lock *l);
/*
 * Let go of @l, taken over from a dead holder (-EOWNERDEAD), without making
 * it consistent or unrecoverable: it is left as a dead holder's, so that
 * its next acquirer is told.
 */
void syncmem__lock_abandon(struct syncmem_region *r, struct syncmem_lock *l);

/*
 * Run the function @fn(@arg) of an execute-style call that took what fn
 * runs under with @result (0 or -EOWNERDEAD), which syncmem_execute_result()
 * reports from inside fn. True when fn asked, and so was told.
 */
bool syncmem__execute(void (*fn)(void *arg), void *arg, int result);

/*
 * After it: release @l, which the caller holds (taken with @result, fn
 * told or not as syncmem__execute() said). A death fn was not told of is
 * left to the next acquirer (syncmem__lock_abandon() while @l still says
 * its holder died); else an ordinary unlock.
 */
void syncmem__execute_release(struct syncmem_region *r, struct syncmem_lock *l, int result,
			      bool told);

#endif /* SYNCMEM_INTERNAL_H */
