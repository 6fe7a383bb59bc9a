/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * syncmem: shared memory regions and cross-process wait queues.
 *
 * Opening /dev/syncmem gives a handle. Ioctls on the handle create, open and
 * unlink regions; each region is returned as a new file descriptor (the
 * "region fd", O_CLOEXEC) that is mmap()ed with MAP_SHARED, passed over a
 * UNIX socket or inherited across fork.
 *
 * Every argument struct has a fixed size, only __u32/__u64 fields, pointers
 * carried as __u64, padding that must be zero and a flags field checked
 * against a known mask. A non-zero padding field or an unknown flag is
 * -EINVAL. An unknown ioctl is -ENOTTY. A bad user pointer is -EFAULT.
 */
#ifndef _UAPI_LINUX_SYNCMEM_H
#define _UAPI_LINUX_SYNCMEM_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Incremented on any incompatible change of this interface. */
#define SYNCMEM_ABI_VERSION		2

/* Longest region name in bytes (no terminating NUL is passed). */
#define SYNCMEM_NAME_MAX		255

/* Bits of struct syncmem_version.features. */
#define SYNCMEM_FEAT_REGIONS		(1ULL << 0)
#define SYNCMEM_FEAT_WAIT		(1ULL << 1)  /* WAIT, NOTIFY, HANDOFF */
#define SYNCMEM_FEAT_ASYNC		(1ULL << 2)  /* WAIT_ASYNC, CANCEL, completions */
#define SYNCMEM_FEAT_HANDOFF_ADD	(1ULL << 3)  /* SYNCMEM_HANDOFF_ADD */
#define SYNCMEM_FEAT_ON_CLOSE		(1ULL << 4)  /* ARM_ON_CLOSE, DISARM */
#define SYNCMEM_FEAT_LIMITS		(1ULL << 5)  /* per-user and per-namespace limits */
#define SYNCMEM_FEAT_REGION_LIST	(1ULL << 6)  /* REGION_LIST */
#define SYNCMEM_FEAT_OWNERS		(1ULL << 7)  /* OWNER, LOCK_WAIT, UNLOCK */
#define SYNCMEM_FEAT_HANDOFF_WAITERS	(1ULL << 8)  /* SYNCMEM_HANDOFF_WAITERS */
#define SYNCMEM_FEAT_OWNER_QUERY	(1ULL << 9)  /* SYNCMEM_OWNER_QUERY, _NOBODY */
#define SYNCMEM_FEAT_ON_CLOSE_ADD	(1ULL << 10) /* SYNCMEM_ON_CLOSE_ADD, _DISARM_UNDO */
#define SYNCMEM_FEAT_INTROSPECT		(1ULL << 11) /* WAITERS, WHO, OBJECT*, ARMED */
#define SYNCMEM_FEAT_ON_CLOSE_MANY	(1ULL << 12) /* no per-handle cap on armed actions */
#define SYNCMEM_FEAT_HANDLE_OPEN	(1ULL << 13) /* HANDLE_OPEN on a region fd */
#define SYNCMEM_FEAT_URING		(1ULL << 14) /* io_uring commands on a region fd */
#define SYNCMEM_FEAT_URING_LOCK		(1ULL << 15) /* SYNCMEM_URING_LOCK */
#define SYNCMEM_FEAT_URING_NOTIFY	(1ULL << 16) /* SYNCMEM_URING_NOTIFY */

/**
 * struct syncmem_version - what the loaded module offers (all output)
 * @abi_version:	SYNCMEM_ABI_VERSION of the module.
 * @name_max:		Longest name accepted, SYNCMEM_NAME_MAX.
 * @features:		SYNCMEM_FEAT_* bits.
 * @max_region_size:	Current cap on one region's size in bytes.
 * @max_regions:	Current cap on the number of regions in the system.
 * @pad:		Zero.
 * @max_total_bytes:	Current cap on the bytes of all regions together
 *			(the effective value: half of RAM when the module
 *			parameter is 0).
 *
 * The per-user and per-namespace limits are module parameters too
 * (/sys/module/syncmem/parameters/).
 */
struct syncmem_version {
	__u32 abi_version;
	__u32 name_max;
	__u64 features;
	__u64 max_region_size;
	__u32 max_regions;
	__u32 pad;
	__u64 max_total_bytes;
};

/* Bits of struct syncmem_region_open.flags. */
#define SYNCMEM_REGION_CREATE		(1U << 0)  /* create if the name is free */
#define SYNCMEM_REGION_EXCL		(1U << 1)  /* with CREATE: -EEXIST if it exists */
#define SYNCMEM_REGION_RDONLY		(1U << 2)  /* read-only region fd */
#define SYNCMEM_REGION_OPEN_FLAGS	(SYNCMEM_REGION_CREATE | \
					 SYNCMEM_REGION_EXCL | \
					 SYNCMEM_REGION_RDONLY)

/**
 * struct syncmem_region_open - create or open a region
 * @name:	In: user address of the name bytes (not NUL-terminated), or 0
 *		for a new anonymous region.
 * @name_len:	In: length of the name, 1..SYNCMEM_NAME_MAX; 0 when @name is 0.
 *		The name must not contain a NUL byte.
 * @flags:	In: SYNCMEM_REGION_* bits. EXCL needs CREATE. An anonymous
 *		region takes none of them (-EINVAL).
 * @size:	In: size in bytes; needed to create, 0 or the exact size to open
 *		an existing region. Out: the region's size.
 * @mode:	In: permission bits (0777) for a region this call creates; the
 *		caller's umask applies. Ignored otherwise.
 * @pad:	Must be zero.
 *
 * Named regions live in the caller's IPC namespace with the caller's fsuid and
 * fsgid as owner. Opening checks the mode bits like POSIX shared memory
 * (inode_permission() on the region's inode, so CAP_DAC_OVERRIDE and the
 * LSMs apply): read permission, plus write permission unless RDONLY.
 *
 * CREATE without EXCL never opens a region another user owns (-EACCES, as
 * fs.protected_regular does for O_CREAT in /dev/shm) unless the module
 * parameter protected_names is 0: a name squatter cannot hand its memory to
 * a victim that meant to create it. Open such a region without CREATE.
 *
 * Every region is charged to its creator: the real uid (and its user
 * namespace as a whole, and the owner of each user namespace above it and
 * that namespace), the IPC namespace and the system. Errors of a creation
 * beyond a limit: -EDQUOT (max_user_regions or max_user_bytes, of the user
 * or of a user namespace), -ENOSPC (max_ns_regions or max_regions), -ENOMEM
 * (max_ns_bytes or max_total_bytes, or no memory); CAP_SYS_RESOURCE skips
 * the user and namespace limits and may use the system's reserve.
 */
struct syncmem_region_open {
	__u64 name;
	__u32 name_len;
	__u32 flags;
	__u64 size;
	__u32 mode;
	__u32 pad;
};

/**
 * struct syncmem_region_unlink - remove a name
 * @name:	In: user address of the name bytes.
 * @name_len:	In: length of the name, 1..SYNCMEM_NAME_MAX.
 * @flags:	In: must be zero.
 *
 * The region stays alive while fds or mappings of it exist; the name is free
 * for a new region at once. Only the owner (or CAP_FOWNER in the namespace's
 * user namespace) may unlink: -EPERM otherwise.
 */
struct syncmem_region_unlink {
	__u64 name;
	__u32 name_len;
	__u32 flags;
};

/**
 * struct syncmem_stats - counters of the caller's IPC namespace and user
 * @regions:		Regions created in the caller's IPC namespace that are
 *			alive (named or anonymous, linked or not).
 * @region_bytes:	Bytes of memory those regions hold (page granular).
 * @named_regions:	Names in the caller's IPC namespace.
 * @handles:		Open handles on /dev/syncmem opened in it.
 * @waiters:		Waiters queued on words of its regions (sync and async).
 * @async_waits:	Async waits of its handles: queued, or completed and
 *			not yet read (posted records included).
 * @user_regions:	Regions charged to the caller's real uid.
 * @user_bytes:		Bytes charged to it.
 * @user_async_waits:	Async waits charged to it.
 * @user_on_close:	Armed on-close actions charged to it.
 *
 * Nothing of other IPC namespaces or other users is visible. All output.
 */
struct syncmem_stats {
	__u64 regions;
	__u64 region_bytes;
	__u64 named_regions;
	__u64 handles;
	__u64 waiters;
	__u64 async_waits;
	__u64 user_regions;
	__u64 user_bytes;
	__u64 user_async_waits;
	__u64 user_on_close;
};

/* Bits of struct syncmem_region_info.flags. */
#define SYNCMEM_INFO_RDONLY		(1U << 0)  /* this fd is read-only */
#define SYNCMEM_INFO_NAMED		(1U << 1)  /* the region still has a name */

/**
 * struct syncmem_region_info - describe a region fd (all output)
 * @size:	The region's size in bytes.
 * @flags:	SYNCMEM_INFO_* bits.
 * @mode:	Permission bits (0600 for an anonymous region).
 * @waiters:	Waiters queued on words of this region right now.
 * @uid:	Owner (the creator's fsuid), in the caller's user namespace
 *		(the overflow uid when it has no mapping there).
 * @gid:	Group (the creator's fsgid), likewise.
 * @files:	Open region files (an fd and its dups or fork copies are one
 *		file; each REGION_OPEN makes one).
 * @mappings:	Mappings (VMAs) of the region in all processes.
 */
struct syncmem_region_info {
	__u64 size;
	__u32 flags;
	__u32 mode;
	__u64 waiters;
	__u32 uid;
	__u32 gid;
	__u64 files;
	__u64 mappings;
};

/**
 * struct syncmem_region_entry - one name of REGION_LIST (all output)
 * @size:	The region's size in bytes.
 * @uid:	Owner, in the caller's user namespace.
 * @gid:	Group, likewise.
 * @mode:	Permission bits.
 * @name_len:	Bytes of @name used.
 * @files:	As in struct syncmem_region_info, or SYNCMEM_COUNT_HIDDEN
 *		when the region's mode does not let the caller read it.
 * @mappings:	Likewise.
 * @waiters:	Likewise.
 * @id:		The name's position for the cursor (increases with creation).
 * @name:	The name, NUL-padded (the only byte array of this interface).
 */
struct syncmem_region_entry {
	__u64 size;
	__u32 uid;
	__u32 gid;
	__u32 mode;
	__u32 name_len;
	__u64 files;
	__u64 mappings;
	__u64 waiters;
	__u64 id;
	char name[SYNCMEM_NAME_MAX + 1];
};

/* struct syncmem_region_entry: a count the caller may not see. */
#define SYNCMEM_COUNT_HIDDEN		(~(__u64)0)

/* Most entries one REGION_LIST call returns. */
#define SYNCMEM_REGION_LIST_MAX		4096

/**
 * struct syncmem_region_list - list the names of the caller's IPC namespace
 * @entries:	In: user address of an array of struct syncmem_region_entry.
 * @count:	In: its length (at most SYNCMEM_REGION_LIST_MAX).
 *		Out: entries written.
 * @flags:	In: must be zero.
 * @cursor:	In: 0 to start, else the @id of the last entry a previous call
 *		returned. Out: the @id of the last entry written (unchanged
 *		when none was).
 *
 * Names are listed in creation order; names created or unlinked between two
 * calls appear or not, but none is listed twice. Any caller in the
 * namespace may list. Each entry shows what ls -l shows of a file in
 * /dev/shm: name, size, owner, group and mode. The live counts are shown
 * only of regions whose mode lets the caller read them (or with
 * CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH); the others' are
 * SYNCMEM_COUNT_HIDDEN.
 * Returns 0; -EFAULT, -EINVAL, -ENOMEM.
 */
struct syncmem_region_list {
	__u64 entries;
	__u32 count;
	__u32 flags;
	__u64 cursor;
};

/* struct syncmem_wait.deadline_ns: wait without a deadline. */
#define SYNCMEM_NO_DEADLINE		(~(__u64)0)

/* Results of SYNCMEM_IOC_WAIT (the ioctl's non-negative return value). */
#define SYNCMEM_WAIT_WOKEN		0  /* a notify picked this waiter */
#define SYNCMEM_WAIT_NOT_EQUAL		1  /* the word differed: not queued */
#define SYNCMEM_WAIT_TIMED_OUT		2  /* the deadline passed first */
#define SYNCMEM_WAIT_HANDED_OFF		3  /* a hand-off picked this waiter */
#define SYNCMEM_WAIT_QUEUED		4  /* WAIT_ASYNC: queued, a completion follows */
#define SYNCMEM_WAIT_OWNER_DIED		5  /* owner word: its owner died, the caller owns it now */

/**
 * struct syncmem_wait - wait on a word of the region (region fd ioctl)
 * @offset:	In: byte offset of the word, a multiple of @size, with the
 *		whole word inside the region.
 * @expected:	In: the value the word must hold for the caller to sleep. With
 *		@size 4 only the low 32 bits may be set.
 * @deadline_ns: In: absolute CLOCK_MONOTONIC time in ns after which the wait
 *		gives up, or SYNCMEM_NO_DEADLINE. A deadline already passed
 *		checks the word and returns at once.
 * @size:	In: 4 or 8, the width of the word.
 * @flags:	In: SYNCMEM_WAIT_* bits.
 *
 * Compares and enqueues atomically with respect to NOTIFY and HANDOFF on the
 * same offset. Waiters queue per (region, offset) in arrival order; 4- and
 * 8-byte waiters on one offset share a queue.
 *
 * A waiter whose region fd is read-only is an observer: it is never handed
 * anything (a read-only open confers no ownership), it does not use up a
 * NOTIFY's @count, and every NOTIFY of its word wakes it, as does a HANDOFF
 * that stores into the word because no writable waiter is queued.
 *
 * A signal (a handler to run, a stop, a freeze) makes the call return to
 * user space and restart by itself with the same arguments (so the same
 * deadline); the waiter keeps its place in the queue meanwhile, and what a
 * notify or hand-off gives it while it is away is returned by the restarted
 * call. It never returns early because of the signal. With
 * SYNCMEM_WAIT_INTERRUPTIBLE the waiter leaves the queue on a signal, and
 * the call returns -EINTR if a handler ran (else it restarts and queues
 * again), for programs that want a signal to end a wait.
 */
/* Bits of struct syncmem_wait.flags and struct syncmem_lock_wait.flags. */
#define SYNCMEM_WAIT_INTERRUPTIBLE	(1U << 0)  /* a signal ends the wait: -EINTR */
#define SYNCMEM_WAIT_FLAGS		SYNCMEM_WAIT_INTERRUPTIBLE

struct syncmem_wait {
	__u64 offset;
	__u64 expected;
	__u64 deadline_ns;
	__u32 size;
	__u32 flags;
};

/**
 * struct syncmem_notify - wake waiters of a word (region fd ioctl)
 * @offset:	In: byte offset, a multiple of 4, word inside the region.
 * @count:	In: most waiters to wake, oldest first; 0 wakes none;
 *		U32_MAX wakes all.
 * @flags:	In: must be zero.
 *
 * @count applies to waiters of writable region fds; read-only waiters
 * (observers) queued when the call began are all woken besides, unless
 * @count is 0 (nobody is woken). Returns the number of waiters woken,
 * observers included. Needs a writable region fd.
 */
struct syncmem_notify {
	__u64 offset;
	__u32 count;
	__u32 flags;
};

/* Bits of struct syncmem_handoff.flags. */
#define SYNCMEM_HANDOFF_ADD		(1U << 0)  /* add @value instead of storing it */
#define SYNCMEM_HANDOFF_WAITERS		(1U << 1)  /* the top bit: "may be waited on" */
#define SYNCMEM_HANDOFF_FLAGS		(SYNCMEM_HANDOFF_ADD | SYNCMEM_HANDOFF_WAITERS)

/* Results of SYNCMEM_IOC_HANDOFF. */
#define SYNCMEM_HANDOFF_STORED		0  /* nobody waited: @value was stored */
#define SYNCMEM_HANDOFF_WOKE		1  /* the oldest waiter was handed off */

/**
 * struct syncmem_handoff - wake the oldest waiter, or else store a value
 * @offset:	In: byte offset of the word, a multiple of @size.
 * @value:	In: stored into the word when nobody waits on it (or added to
 *		it, with SYNCMEM_HANDOFF_ADD). With @size 4 only the low 32
 *		bits may be set.
 * @size:	In: 4 or 8.
 * @flags:	In: SYNCMEM_HANDOFF_* bits.
 *
 * Under the queue's lock: if a waiter of a writable region fd is queued on
 * @offset, wake the oldest such (its WAIT returns SYNCMEM_WAIT_HANDED_OFF)
 * and leave the word alone; otherwise store @value, or with
 * SYNCMEM_HANDOFF_ADD atomically add it (modulo 2^(8 * @size)), and wake the
 * read-only waiters of the word (the word changed): a semaphore's post hands
 * a unit to the oldest waiter or else counts it. Never fails for lack of
 * memory. Needs a writable region fd. Fails with EINVAL, changing nothing,
 * when the oldest such waiter is a lock request (an owner word passes
 * only by its holder's unlock).
 *
 * With SYNCMEM_HANDOFF_WAITERS the word's top bit (bit 31 or 63) is its
 * users' "waiters may be queued" mark, which waiters set before they sleep
 * and the kernel clears, under the same lock, whenever this call leaves no
 * waiter of a writable fd queued: after storing or adding @value, or after
 * handing off to the last one. A waiter that times out, is cancelled or dies
 * leaves the mark set only until the next such call, which finds nobody
 * queued and clears it; a waiter that set it and is about to sleep sees the
 * word change and looks again.
 */
struct syncmem_handoff {
	__u64 offset;
	__u64 value;
	__u32 size;
	__u32 flags;
};

/**
 * struct syncmem_eventfd - the eventfd a handle signals on completions
 * @fd:		In: an eventfd, or -1 to stop signalling.
 * @flags:	In: must be zero.
 *
 * The handle adds 1 to the eventfd for every completion it queues. A handle
 * has at most one eventfd; setting another replaces it.
 */
struct syncmem_eventfd {
	__s32 fd;
	__u32 flags;
};

/**
 * struct syncmem_wait_async - queue an asynchronous wait (handle ioctl)
 * @region_fd:	In: the region fd whose word to wait on.
 * @size:	In: 4 or 8.
 * @offset:	In: byte offset of the word, as for struct syncmem_wait.
 * @expected:	In: as for struct syncmem_wait.
 * @deadline_ns: In: absolute CLOCK_MONOTONIC deadline, or
 *		SYNCMEM_NO_DEADLINE.
 * @user_data:	In: returned in the completion; also the key for CANCEL. It
 *		must differ from every other pending wait of the handle.
 * @flags:	In: SYNCMEM_WAIT_ASYNC_* bits.
 * @pad:	Must be zero.
 *
 * Returns at once: SYNCMEM_WAIT_NOT_EQUAL or SYNCMEM_WAIT_TIMED_OUT (nothing
 * queued, no completion), or SYNCMEM_WAIT_QUEUED: the waiter is in the word's
 * FIFO queue, with the synchronous waiters, before the ioctl returns, and
 * exactly one struct syncmem_completion for it will be queued on the handle.
 * A read-only @region_fd makes it an observer (see struct syncmem_wait).
 *
 * Errors: -EEXIST (it would be queued while a wait of the handle that has
 * @user_data is pending, i.e. until that wait's record is queued), -EAGAIN
 * (the handle's max_async_waits), -EDQUOT (the handle opener's
 * max_user_async_waits), -ENOMEM, -EBADF, -EINVAL.
 */
/*
 * Bits of struct syncmem_wait_async.flags. OWNER: the word is an owner word
 * (@size 8) and the wait is SYNCMEM_IOC_LOCK_WAIT's, on behalf of the calling
 * process's SYNCMEM_OWNER_PROCESS id (-EINVAL if it has none): it may
 * complete with SYNCMEM_WAIT_OWNER_DIED, or return it at once.
 */
#define SYNCMEM_WAIT_ASYNC_OWNER	(1U << 0)
#define SYNCMEM_WAIT_ASYNC_FLAGS	SYNCMEM_WAIT_ASYNC_OWNER

struct syncmem_wait_async {
	__s32 region_fd;
	__u32 size;
	__u64 offset;
	__u64 expected;
	__u64 deadline_ns;
	__u64 user_data;
	__u32 flags;
	__u32 pad;
};

/**
 * struct syncmem_completion - one finished async wait, read() from the handle
 * @user_data:	The wait's user_data.
 * @result:	SYNCMEM_WAIT_WOKEN, SYNCMEM_WAIT_HANDED_OFF,
 *		SYNCMEM_WAIT_OWNER_DIED, SYNCMEM_WAIT_TIMED_OUT, or
 *		-ECANCELED after a CANCEL.
 * @pad:	Zero.
 */
struct syncmem_completion {
	__u64 user_data;
	__s32 result;
	__u32 pad;
};

/* Bits of struct syncmem_cancel.flags. */
#define SYNCMEM_CANCEL_ALL		(1U << 0)  /* every pending wait of the handle */

/**
 * struct syncmem_cancel - cancel a pending async wait (handle ioctl)
 * @user_data:	In: the wait to cancel (ignored with SYNCMEM_CANCEL_ALL).
 * @flags:	In: 0 or SYNCMEM_CANCEL_ALL.
 * @pad:	Must be zero.
 *
 * Returns 0 if the wait was still queued: it leaves the queue and completes
 * with -ECANCELED. -ENOENT if it had already completed or never existed.
 * With SYNCMEM_CANCEL_ALL: cancels every wait still queued and returns how
 * many; once it returns, every pending wait of the handle has its completion
 * queued or about to be.
 */
struct syncmem_cancel {
	__u64 user_data;
	__u32 flags;
	__u32 pad;
};

/**
 * struct syncmem_post - queue a completion record directly (handle ioctl)
 * @user_data:	In: the record's user_data; -EEXIST when it is a pending
 *		wait's.
 * @result:	In: the record's result.
 * @flags:	In: must be zero.
 *
 * For event loops that complete an operation without waiting (a lock taken
 * at once) but must still report it through the handle: the record goes to
 * the completion list like any other, counts against max_async_waits until
 * read, and the eventfd is signalled.
 */
struct syncmem_post {
	__u64 user_data;
	__s32 result;
	__u32 flags;
};

/*
 * Deprecated: no longer a limit, kept so that code naming it still builds.
 * A handle holds as many armed actions as its opener's max_user_on_close
 * (module parameter, default 4096, shared by all of the user's handles)
 * lets it; beyond that ARM_ON_CLOSE fails with -EDQUOT. Module versions
 * before SYNCMEM_FEAT_ON_CLOSE_MANY capped each handle at this many
 * (-ENOSPC).
 */
#define SYNCMEM_ON_CLOSE_MAX		64

/* Bits of struct syncmem_on_close.flags. */
#define SYNCMEM_ON_CLOSE_IF_EQUAL	(1U << 0)  /* only if the word holds @expected */
#define SYNCMEM_ON_CLOSE_ADD		(1U << 1)  /* add @value now, take it back at close */
#define SYNCMEM_ON_CLOSE_FLAGS		(SYNCMEM_ON_CLOSE_IF_EQUAL | SYNCMEM_ON_CLOSE_ADD)

/**
 * struct syncmem_on_close - store and wake when the handle is released
 * @region_fd:	In: a writable region fd holding the word.
 * @size:	In: 4 or 8.
 * @offset:	In: byte offset of the word, a multiple of @size.
 * @expected:	In: with SYNCMEM_ON_CLOSE_IF_EQUAL, act only if the word
 *		still holds this value then (compared and stored atomically).
 * @value:	In: the value to store.
 * @user_data:	In: names the action for DISARM; unique among the handle's
 *		armed actions.
 * @flags:	In: SYNCMEM_ON_CLOSE_* bits.
 * @pad:	Must be zero.
 *
 * When the handle's last file reference goes away (close, or the exit of
 * every process holding it), every action still armed stores its @value
 * into its word and wakes all waiters of the word. It is how a process
 * promises an outcome to others even if it dies: a single-flight leader
 * arms "leader died if still running" on its result word and disarms once
 * it published the result. With @size 4 only the low 32 bits of @value and
 * @expected may be set. The action holds a reference on the region.
 *
 * SYNCMEM_ON_CLOSE_ADD (not with IF_EQUAL) makes a count that survives its
 * holder's death: @value is added to the word (wrapping) as the action is
 * armed, and subtracted again when the handle goes away (then all waiters
 * of the word are woken) or by DISARM with SYNCMEM_DISARM_UNDO, so the
 * process that counts itself in can die at any instruction and the count
 * stays exact. A plain DISARM leaves the value added.
 * Errors: -EBADF (not a writable region fd), -EEXIST (@user_data already
 * armed), -EDQUOT (the handle opener's max_user_on_close: all of its
 * handles together), -ENOMEM, -EINVAL. A handle has no limit of its own.
 */
struct syncmem_on_close {
	__s32 region_fd;
	__u32 size;
	__u64 offset;
	__u64 expected;
	__u64 value;
	__u64 user_data;
	__u32 flags;
	__u32 pad;
};

/**
 * struct syncmem_disarm - drop an armed on-close action (handle ioctl)
 * @user_data:	In: the action's user_data.
 * @flags:	In: SYNCMEM_DISARM_* bits.
 * @pad:	Must be zero.
 *
 * Returns 0, or -ENOENT when no such action is armed. With
 * SYNCMEM_DISARM_UNDO the action must be an SYNCMEM_ON_CLOSE_ADD one
 * (-EINVAL otherwise): its value is subtracted now, atomically with the
 * disarm, and the call returns 1 if the word is 0 afterwards, else 0.
 */
#define SYNCMEM_DISARM_UNDO		(1U << 0)
#define SYNCMEM_DISARM_FLAGS		SYNCMEM_DISARM_UNDO

struct syncmem_disarm {
	__u64 user_data;
	__u32 flags;
	__u32 pad;
};

/*
 * Owner words. A lock that the kernel can recover when its holder dies keeps
 * its state in one naturally aligned 64-bit word: the holder's owner id (0
 * when free), SYNCMEM_OWNER_WAITERS once somebody may wait, and
 * SYNCMEM_OWNER_DIED while the holder is one that took the word over from a
 * dead owner and has not said its state is consistent again. Owner ids come
 * from SYNCMEM_IOC_OWNER: unique on the machine, never reused, independent of
 * PID namespaces, and known to the kernel, which can tell whether the thread
 * or process behind one is still alive.
 */
#define SYNCMEM_OWNER_WAITERS		(1ULL << 63)
#define SYNCMEM_OWNER_DIED		(1ULL << 62)
#define SYNCMEM_OWNER_ID		(SYNCMEM_OWNER_DIED - 1)
/* An id never issued: the word's lock can no longer be taken (no recovery). */
#define SYNCMEM_OWNER_NOTRECOVERABLE	SYNCMEM_OWNER_ID
/* An id never issued, for a holder that is gone: the next taker is told. */
#define SYNCMEM_OWNER_GONE		(SYNCMEM_OWNER_ID - 1)
/*
 * An id never issued that the kernel counts as alive: a word held by
 * nobody in particular (a gate made closed), never taken over.
 */
#define SYNCMEM_OWNER_NOBODY		(SYNCMEM_OWNER_ID - 2)

/* Bits of struct syncmem_owner.flags. */
#define SYNCMEM_OWNER_PROCESS		(1U << 0)  /* the process's id, not the thread's */
#define SYNCMEM_OWNER_QUERY		(1U << 1)  /* is @id alive? 1 or 0 */
#define SYNCMEM_OWNER_FLAGS		(SYNCMEM_OWNER_PROCESS | SYNCMEM_OWNER_QUERY)

/**
 * struct syncmem_owner - get an owner id (handle or region fd ioctl)
 * @id:		Out: the id (never 0, within SYNCMEM_OWNER_ID). In, with
 *		SYNCMEM_OWNER_QUERY: the id to ask about.
 * @flags:	In: SYNCMEM_OWNER_* bits.
 * @pad:	Must be zero.
 *
 * Without flags the id is the calling thread's: it stays alive while the
 * thread runs its current program (its exit or an execve ends it). With
 * SYNCMEM_OWNER_PROCESS it is the calling process's, alive until every
 * thread of it has exited or the process execs; async owner waits
 * (SYNCMEM_WAIT_ASYNC_OWNER) name it. Asking again returns the same id while it is alive.
 *
 * The kernel learns of a process's death from the exit notification that
 * pidfds poll, and of its execve from the teardown of its old address
 * space (the close of a region mapping in it), and at once looks at every
 * owner word with waiters: a word whose owner died goes to its oldest
 * waiter with SYNCMEM_OWNER_DIED set
 * (SYNCMEM_WAIT_OWNER_DIED), and a free word with waiters goes to its
 * oldest waiter (a wake-up that died with its receiver is passed on).
 * A word nobody waits on is taken over by the next LOCK_WAIT on it.
 * Errors: -EAGAIN (SYNCMEM_OWNERS_MAX ids of live threads in the process),
 * -ENOMEM, -EINVAL.
 *
 * SYNCMEM_OWNER_QUERY (alone): returns 1 if @id names a live owner (or is
 * SYNCMEM_OWNER_NOBODY), else 0; nothing is written back. For structures
 * that record who is building them, so that others can tell a builder that
 * died from a slow one.
 */
struct syncmem_owner {
	__u64 id;
	__u32 flags;
	__u32 pad;
};

/* Most thread ids alive in one process. */
#define SYNCMEM_OWNERS_MAX		65536

/**
 * struct syncmem_lock_wait - wait for an owner word (region fd ioctl)
 * @offset:	In: byte offset of the 8-byte word, a multiple of 8.
 * @expected:	In: the word's value seen by the caller: held by an owner
 *		(id not 0), normally with SYNCMEM_OWNER_WAITERS set.
 * @deadline_ns: In: as for struct syncmem_wait.
 * @owner:	In: the caller's own id (its thread's or its process's).
 * @flags:	In: SYNCMEM_WAIT_* bits (SYNCMEM_WAIT_INTERRUPTIBLE).
 * @pad:	Must be zero.
 *
 * As SYNCMEM_IOC_WAIT, and: when the word's owner is dead the caller does
 * not sleep. If older waiters are queued the oldest takes the word over and
 * the call returns SYNCMEM_WAIT_NOT_EQUAL (look again), else the caller
 * takes it over: the word becomes @owner | SYNCMEM_OWNER_DIED and the call
 * returns SYNCMEM_WAIT_OWNER_DIED. A waiter is also ended with
 * SYNCMEM_WAIT_OWNER_DIED when the owner dies while it waits (it owns the
 * word then), or with SYNCMEM_WAIT_HANDED_OFF by UNLOCK's hand-off (the
 * word names it). Returns SYNCMEM_WAIT_NOT_EQUAL for a free word.
 * Errors: -EINVAL (@owner is not the caller's), -ENOTRECOVERABLE (the
 * word is SYNCMEM_OWNER_NOTRECOVERABLE), those of SYNCMEM_IOC_WAIT.
 */
struct syncmem_lock_wait {
	__u64 offset;
	__u64 expected;
	__u64 deadline_ns;
	__u64 owner;
	__u32 flags;
	__u32 pad;
};

/* Bits of struct syncmem_unlock.flags. */
#define SYNCMEM_UNLOCK_HANDOFF		(1U << 0)  /* give it to the oldest waiter */
#define SYNCMEM_UNLOCK_FLAGS		SYNCMEM_UNLOCK_HANDOFF

/* Results of SYNCMEM_IOC_UNLOCK. */
#define SYNCMEM_UNLOCK_FREED		0  /* nobody waited: the word is 0 */
#define SYNCMEM_UNLOCK_WOKE		1  /* free with SYNCMEM_OWNER_WAITERS, oldest woken */
#define SYNCMEM_UNLOCK_HANDED		2  /* the word names the oldest waiter */

/**
 * struct syncmem_unlock - release an owner word with waiters (region fd ioctl)
 * @offset:	In: byte offset of the 8-byte word.
 * @expected:	In: the word as the holder saw it; it may have gained
 *		SYNCMEM_OWNER_WAITERS since, nothing else.
 * @flags:	In: SYNCMEM_UNLOCK_* bits.
 * @pad:	Must be zero.
 *
 * Under the queue's lock: with SYNCMEM_UNLOCK_HANDOFF and an owner waiter
 * queued (or without it, when the oldest is a SYNCMEM_URING_LOCK command,
 * which cannot compete), the word becomes the oldest one's id (with SYNCMEM_OWNER_WAITERS
 * when others still wait) and it is woken with SYNCMEM_WAIT_HANDED_OFF: the
 * lock never becomes free, and should that waiter die before it runs, its
 * death is an owner's death like any other. Without the flag the word
 * becomes SYNCMEM_OWNER_WAITERS alone (free, waited on) and the oldest
 * waiter is woken to compete for it. An oldest waiter that is no owner
 * waiter (a plain wait on the word) will not take the word: once it is
 * woken, the next waiter gets the word as after a dead holder's.
 * With nobody waiting the word becomes 0.
 * Waiters whose owner is dead are passed over. Needs a writable region fd.
 * Errors: -EAGAIN (the word is not @expected), -EINVAL.
 */
struct syncmem_unlock {
	__u64 offset;
	__u64 expected;
	__u32 flags;
	__u32 pad;
};

/**
 * struct syncmem_handle_open - a handle from a region fd (region fd ioctl)
 * @flags:	In: must be zero.
 * @pad:	Must be zero.
 *
 * Returns a new handle fd (O_RDWR, O_CLOEXEC), for a process that holds a
 * region fd but cannot open /dev/syncmem: a chroot or a mount namespace
 * without the node, a node whose mode or an LSM forbids the caller. The
 * handle is charged to the caller as an open of /dev/syncmem is, and does
 * what such a handle does (async waits, records, its eventfd, POST,
 * on-close actions, OWNER, VERSION), except what the device node would
 * have to allow: REGION_OPEN, REGION_UNLINK, REGION_LIST and STATS on it
 * are -EPERM, before their arguments are read. Each of its calls that
 * reaches a region names a region fd of the caller, which grants what it
 * grants: ARM_ON_CLOSE needs a writable one, and a WAIT_ASYNC through a
 * read-only one observes. A read-only region fd gives a handle too.
 * Errors: -EINVAL (flags, pad), -EFAULT, -EMFILE, -ENFILE, -ENOMEM;
 * -ENOTTY on a handle (this is a region fd ioctl).
 */
struct syncmem_handle_open {
	__u32 flags;
	__u32 pad;
};

/*
 * Introspection: who waits on a region's words, who holds its owner words,
 * and the names its users gave to the objects in it. Any region fd may ask,
 * read-only ones included: what a user may open, it may inspect. Process
 * and thread ids are as seen from the caller's PID namespace, 0 where the
 * process is not visible there.
 */

/* Bits of struct syncmem_waiter_entry.flags. */
#define SYNCMEM_WAITER_ASYNC		(1U << 0)  /* an async wait: @tid is 0 */
#define SYNCMEM_WAITER_OBSERVER		(1U << 1)  /* through a read-only region fd */
#define SYNCMEM_WAITER_OWNER		(1U << 2)  /* a LOCK_WAIT: @owner is set */
#define SYNCMEM_WAITER_AWAY		(1U << 3)  /* in a signal handler, stopped, frozen */

/**
 * struct syncmem_waiter_entry - one queued waiter (all output)
 * @offset:	Byte offset of the word it waits on.
 * @since_ns:	CLOCK_MONOTONIC time at which it was queued.
 * @deadline_ns: Its absolute CLOCK_MONOTONIC deadline, or SYNCMEM_NO_DEADLINE.
 * @owner:	The owner id it waits as (SYNCMEM_WAITER_OWNER), else 0.
 * @pid:	Its process.
 * @tid:	Its thread; 0 for an async wait (it belongs to the process).
 * @flags:	SYNCMEM_WAITER_* bits.
 * @size:	4 or 8, the width of its word.
 * @position:	Its place in the word's queue: 0 is the oldest, the next to
 *		be woken or handed the word (observers are counted in arrival
 *		order too, though they are never handed anything).
 * @pad:	Zero.
 */
struct syncmem_waiter_entry {
	__u64 offset;
	__u64 since_ns;
	__u64 deadline_ns;
	__u64 owner;
	__s32 pid;
	__s32 tid;
	__u32 flags;
	__u32 size;
	__u32 position;
	__u32 pad;
};

/* Most entries one WAITERS or OBJECTS call returns. */
#define SYNCMEM_LIST_MAX		4096

/* Bits of struct syncmem_waiter_list.flags. */
#define SYNCMEM_WAITERS_WORD		(1U << 0)  /* only the word at @offset */
#define SYNCMEM_WAITERS_FROM		(1U << 1)  /* from (@offset, @position) on */
#define SYNCMEM_WAITERS_FLAGS		(SYNCMEM_WAITERS_WORD | SYNCMEM_WAITERS_FROM)

/**
 * struct syncmem_waiter_list - list the waiters of a region (region fd ioctl)
 * @entries:	In: user address of an array of struct syncmem_waiter_entry.
 * @count:	In: its length, at most SYNCMEM_LIST_MAX. Out: entries written.
 * @flags:	In: SYNCMEM_WAITERS_* bits.
 * @offset:	In: with SYNCMEM_WAITERS_WORD, the word's byte offset (a
 *		multiple of 4 inside the region); with SYNCMEM_WAITERS_FROM,
 *		the offset of the cursor; else must be zero.
 * @total:	Out: the waiters found (at or after the cursor).
 * @position:	In: with SYNCMEM_WAITERS_FROM, the cursor's position; else
 *		must be zero.
 * @pad:	Must be zero.
 *
 * Waiters are taken in order of word offset, and each word's by arrival
 * (@position); the first @count of them are written. With
 * SYNCMEM_WAITERS_FROM only those at or after (@offset, @position) count,
 * so a long list is read in pages: call again from the last entry's
 * offset and position + 1. Each word's queue is read at one instant under
 * its lock; different words (and pages) are read one after another.
 * Returns 0; -EFAULT, -EINVAL, -ENOMEM.
 */
struct syncmem_waiter_list {
	__u64 entries;
	__u32 count;
	__u32 flags;
	__u64 offset;
	__u64 total;
	__u32 position;
	__u32 pad;
};

/* Values of struct syncmem_who.state. */
#define SYNCMEM_WHO_FREE		0  /* the word holds no owner id */
#define SYNCMEM_WHO_ALIVE		1  /* held by a live thread or process */
#define SYNCMEM_WHO_DEAD		2  /* held by one that died or exec'd */
#define SYNCMEM_WHO_NOBODY		3  /* SYNCMEM_OWNER_NOBODY (a closed gate) */
#define SYNCMEM_WHO_GONE		4  /* SYNCMEM_OWNER_GONE */
#define SYNCMEM_WHO_NOTRECOVERABLE	5  /* SYNCMEM_OWNER_NOTRECOVERABLE */

/* Bits of struct syncmem_who.flags (output). */
#define SYNCMEM_WHO_PROCESS		(1U << 0)  /* @id is a process's (tid 0) */

/**
 * struct syncmem_who - who holds an owner word (region fd ioctl)
 * @offset:	In: byte offset of the 8-byte word, a multiple of 8.
 * @word:	Out: the word's value when it was read.
 * @pid:	Out: the process behind the word's owner id, 0 when not
 *		alive, not visible in the caller's PID namespace, or not
 *		mapping this region (every holder of a lock in it does: an
 *		id written into a region tells nothing of processes that do
 *		not use it).
 * @tid:	Out: its thread, 0 for a process's id.
 * @state:	Out: SYNCMEM_WHO_*.
 * @flags:	In: must be zero. Out: SYNCMEM_WHO_* bits.
 *
 * The word is read once; the answer may be stale by the time it returns.
 * The region tracks the address spaces that map it, so the call takes no
 * lock of the holder's process and costs it nothing. A mapping that a
 * fork() copied while the kernel had no memory to track it does not count.
 * Returns 0; -EFAULT, -EINVAL.
 */
struct syncmem_who {
	__u64 offset;
	__u64 word;
	__s32 pid;
	__s32 tid;
	__u32 state;
	__u32 flags;
};

/* Kinds of named objects (struct syncmem_object_name.kind). */
#define SYNCMEM_KIND_WORD		1  /* a plain 4- or 8-byte word */
#define SYNCMEM_KIND_LOCK		2  /* struct syncmem_lock */
#define SYNCMEM_KIND_RWLOCK		3  /* struct syncmem_rwlock */
#define SYNCMEM_KIND_SEM		4  /* struct syncmem_sem */
#define SYNCMEM_KIND_GATE		5  /* struct syncmem_gate */
#define SYNCMEM_KIND_KEYED		6  /* a keyed lock table */
#define SYNCMEM_KIND_FLIGHT		7  /* a single-flight table */
#define SYNCMEM_KIND_POOL		8  /* a block pool */
#define SYNCMEM_KIND_OTHER		9  /* anything else */
#define SYNCMEM_KIND_LOCKS		10 /* a Web Locks manager (struct syncmem_locks) */
#define SYNCMEM_KIND_MAX		SYNCMEM_KIND_LOCKS

/* Longest object name in bytes; most names one region keeps. */
#define SYNCMEM_OBJECT_NAME_MAX		47
#define SYNCMEM_OBJECTS_MAX		256

/**
 * struct syncmem_object_name - name an object of the region (region fd ioctl)
 * @offset:	In: byte offset of the object, a multiple of 4.
 * @size:	In: bytes it spans, 1 or more, all inside the region; 0
 *		when removing.
 * @name:	In: user address of the name bytes (no NUL), or 0 to remove
 *		the name at @offset.
 * @name_len:	In: 1..SYNCMEM_OBJECT_NAME_MAX printable ASCII bytes; 0
 *		when @name is 0.
 * @kind:	In: SYNCMEM_KIND_*; 0 when removing.
 * @flags:	In: must be zero.
 * @pad:	Must be zero.
 *
 * The kernel keeps the names with the region (not in its memory, which
 * every writer of the region may overwrite) until the region is freed, so
 * tools can say "lock 'jobs' at 0x40". Naming an offset again replaces its
 * name. Needs a writable region fd. Errors: -EBADF (read-only fd), -ENOSPC
 * (SYNCMEM_OBJECTS_MAX names), -ENOENT (removing an offset with no name),
 * -EINVAL, -EFAULT, -ENOMEM.
 */
struct syncmem_object_name {
	__u64 offset;
	__u64 size;
	__u64 name;
	__u32 name_len;
	__u32 kind;
	__u32 flags;
	__u32 pad;
};

/**
 * struct syncmem_object_entry - one named object (all output)
 * @offset:	Its byte offset.
 * @size:	Bytes it spans.
 * @kind:	SYNCMEM_KIND_*.
 * @name_len:	Bytes of @name used.
 * @name:	The name, NUL-padded.
 */
struct syncmem_object_entry {
	__u64 offset;
	__u64 size;
	__u32 kind;
	__u32 name_len;
	char name[SYNCMEM_OBJECT_NAME_MAX + 1];
};

/**
 * struct syncmem_object_list - list the named objects (region fd ioctl)
 * @entries:	In: user address of an array of struct syncmem_object_entry.
 * @count:	In: its length, at most SYNCMEM_LIST_MAX. Out: entries written.
 * @flags:	In: must be zero.
 * @total:	Out: names the region has, sorted by offset.
 *
 * Returns 0; -EFAULT, -EINVAL, -ENOMEM.
 */
struct syncmem_object_list {
	__u64 entries;
	__u32 count;
	__u32 flags;
	__u64 total;
};

/* Bits of struct syncmem_armed_entry.flags: those of the action. */
#define SYNCMEM_ARMED_IF_EQUAL		SYNCMEM_ON_CLOSE_IF_EQUAL
#define SYNCMEM_ARMED_ADD		SYNCMEM_ON_CLOSE_ADD

/**
 * struct syncmem_armed_entry - an on-close action armed on a word (output)
 * @offset:	Byte offset of its word.
 * @value:	What it stores into the word (or, with SYNCMEM_ARMED_ADD,
 *		subtracts from it) when its handle goes away.
 * @expected:	With SYNCMEM_ARMED_IF_EQUAL: only if the word holds this.
 * @pid:	The process that armed it (0: not visible in the caller's
 *		PID namespace, or gone while its handle lives on).
 * @size:	4 or 8.
 * @flags:	SYNCMEM_ARMED_* bits.
 * @pad:	Zero.
 */
struct syncmem_armed_entry {
	__u64 offset;
	__u64 value;
	__u64 expected;
	__s32 pid;
	__u32 size;
	__u32 flags;
	__u32 pad;
};

/*
 * io_uring commands (IORING_OP_URING_CMD) on a region fd: waits whose
 * completion is a CQE in the submitter's ring. sqe->fd is the region fd
 * (a read-only one waits as an observer), sqe->cmd_op is
 * SYNCMEM_URING_CMD_OP(op, timeout), and the 16 bytes of sqe->cmd hold the
 * command's struct below (all a 64-byte SQE passes on to a driver, hence
 * the packed timeout). A wait's res is a SYNCMEM_WAIT_* result (WOKEN,
 * NOT_EQUAL, TIMED_OUT, HANDED_OFF), -ECANCELED or -errno; with 32-byte
 * CQEs, big_cqe[0] (res2) is the value a HANDOFF handed over. A LOCK's res
 * is 0 or -EOWNERDEAD (the owner word is the caller's), -ETIMEDOUT,
 * -ECANCELED or -errno. A NOTIFY completes when it is issued, never
 * parked: its res >= 0 is a count, the waiters it woke, else -errno.
 */
#define SYNCMEM_URING_WAIT32		0x01	/* struct syncmem_uring_wait, 4-byte word */
#define SYNCMEM_URING_WAIT64		0x02	/* struct syncmem_uring_wait, 8-byte word */
#define SYNCMEM_URING_CANCEL		0x04	/* struct syncmem_uring_cancel */
#define SYNCMEM_URING_LOCK		0x08	/* struct syncmem_uring_lock */
#define SYNCMEM_URING_NOTIFY		0x10	/* struct syncmem_uring_notify */
#define SYNCMEM_URING_OP_MASK		0xffU
#define SYNCMEM_URING_TIMEOUT_SHIFT	8
/*
 * A wait's timeout, relative to when the command is issued, as 24 bits:
 * mantissa (low 18) << exponent (high 6) nanoseconds; all ones: none.
 * Encoders round up, so a timeout ends at most 1/2^17 of its length late.
 */
#define SYNCMEM_URING_NO_TIMEOUT	0xffffffU
#define SYNCMEM_URING_TIMEOUT_MANT_BITS	18
#define SYNCMEM_URING_CMD_OP(op, timeout) \
	((__u32)(op) | ((__u32)(timeout) << SYNCMEM_URING_TIMEOUT_SHIFT))

/**
 * struct syncmem_uring_wait - the sqe->cmd of SYNCMEM_URING_WAIT32/64
 * @offset:	Byte offset of the word in the region, naturally aligned.
 * @expected:	Queue only if the word holds this (at most U32_MAX for WAIT32).
 */
struct syncmem_uring_wait {
	__u64 offset;
	__u64 expected;
};

/**
 * struct syncmem_uring_lock - the sqe->cmd of SYNCMEM_URING_LOCK
 * @offset:	Byte offset of an owner word in the region, 8-byte aligned.
 * @owner:	The submitting process's owner id (SYNCMEM_OWNER_PROCESS).
 *
 * Takes the owner word for @owner: at once if it is free, else in its
 * FIFO queue, where UNLOCK always hands it over (never a wake-up to look
 * again: the command cannot look). A dead holder's word is taken over,
 * with SYNCMEM_OWNER_DIED (-EOWNERDEAD). -ENOTRECOVERABLE once the word
 * is unrecoverable; -EBADF on a read-only region fd.
 */
struct syncmem_uring_lock {
	__u64 offset;
	__u64 owner;
};

/**
 * struct syncmem_uring_notify - the sqe->cmd of SYNCMEM_URING_NOTIFY
 * @offset:	Byte offset of the word in the region, a multiple of 4.
 * @count:	Most waiters to wake, oldest first; 0 wakes none; U32_MAX
 *		wakes all.
 * @flags:	Must be 0.
 *
 * SYNCMEM_IOC_NOTIFY as a command, with the ioctl's checks, errors and
 * result (struct syncmem_notify): res is the number of waiters woken,
 * -EINVAL for a bad @offset or @flags or a timeout in its cmd_op, or
 * -EBADF on a read-only region fd. It completes as it is issued, so a
 * NOTIFY and a wait submitted together (IOSQE_CQE_SKIP_SUCCESS on the
 * NOTIFY drops its CQE unless it fails) wake a peer and park in one
 * io_uring_enter().
 */
struct syncmem_uring_notify {
	__u64 offset;
	__u32 count;
	__u32 flags;
};

/**
 * struct syncmem_uring_cancel - the sqe->cmd of SYNCMEM_URING_CANCEL
 * @user_data:	The user_data of a pending wait of the same ring.
 * @pad:	Must be 0.
 *
 * The wait ends with -ECANCELED (one CQE, exactly once); the cancel's own
 * res is 0, or -ENOENT when no such wait was pending.
 */
struct syncmem_uring_cancel {
	__u64 user_data;
	__u64 pad;
};

/**
 * struct syncmem_armed_list - the on-close actions armed on a region's
 *	words, by any handle (region fd ioctl)
 * @entries:	In: user address of an array of struct syncmem_armed_entry.
 * @count:	In: its length, at most SYNCMEM_LIST_MAX. Out: entries written.
 * @flags:	In: must be zero.
 * @total:	Out: actions armed on the region, oldest first.
 *
 * What a process promised to do to the region's words if it dies: a
 * single-flight leader's "leader died", a count it keeps itself in.
 * Returns 0; -EFAULT, -EINVAL, -ENOMEM.
 */
struct syncmem_armed_list {
	__u64 entries;
	__u32 count;
	__u32 flags;
	__u64 total;
};

#define SYNCMEM_IOC_MAGIC		0xD5

/* On the /dev/syncmem handle. */
#define SYNCMEM_IOC_VERSION		_IOR(SYNCMEM_IOC_MAGIC, 0x00, struct syncmem_version)
#define SYNCMEM_IOC_REGION_OPEN		_IOWR(SYNCMEM_IOC_MAGIC, 0x01, struct syncmem_region_open)
#define SYNCMEM_IOC_REGION_UNLINK	_IOW(SYNCMEM_IOC_MAGIC, 0x02, struct syncmem_region_unlink)
#define SYNCMEM_IOC_STATS		_IOR(SYNCMEM_IOC_MAGIC, 0x03, struct syncmem_stats)
#define SYNCMEM_IOC_SET_EVENTFD		_IOW(SYNCMEM_IOC_MAGIC, 0x04, struct syncmem_eventfd)
#define SYNCMEM_IOC_WAIT_ASYNC		_IOW(SYNCMEM_IOC_MAGIC, 0x05, struct syncmem_wait_async)
#define SYNCMEM_IOC_CANCEL		_IOW(SYNCMEM_IOC_MAGIC, 0x06, struct syncmem_cancel)
#define SYNCMEM_IOC_POST		_IOW(SYNCMEM_IOC_MAGIC, 0x07, struct syncmem_post)
#define SYNCMEM_IOC_ARM_ON_CLOSE	_IOW(SYNCMEM_IOC_MAGIC, 0x08, struct syncmem_on_close)
#define SYNCMEM_IOC_DISARM		_IOW(SYNCMEM_IOC_MAGIC, 0x09, struct syncmem_disarm)
#define SYNCMEM_IOC_REGION_LIST		_IOWR(SYNCMEM_IOC_MAGIC, 0x0a, struct syncmem_region_list)
#define SYNCMEM_IOC_OWNER		_IOWR(SYNCMEM_IOC_MAGIC, 0x0b, struct syncmem_owner)

/* On a region fd. */
#define SYNCMEM_IOC_REGION_INFO		_IOR(SYNCMEM_IOC_MAGIC, 0x10, struct syncmem_region_info)
#define SYNCMEM_IOC_WAIT		_IOW(SYNCMEM_IOC_MAGIC, 0x11, struct syncmem_wait)
#define SYNCMEM_IOC_NOTIFY		_IOW(SYNCMEM_IOC_MAGIC, 0x12, struct syncmem_notify)
#define SYNCMEM_IOC_HANDOFF		_IOW(SYNCMEM_IOC_MAGIC, 0x13, struct syncmem_handoff)
#define SYNCMEM_IOC_LOCK_WAIT		_IOW(SYNCMEM_IOC_MAGIC, 0x14, struct syncmem_lock_wait)
#define SYNCMEM_IOC_UNLOCK		_IOW(SYNCMEM_IOC_MAGIC, 0x15, struct syncmem_unlock)
#define SYNCMEM_IOC_WAITERS		_IOWR(SYNCMEM_IOC_MAGIC, 0x16, struct syncmem_waiter_list)
#define SYNCMEM_IOC_WHO			_IOWR(SYNCMEM_IOC_MAGIC, 0x17, struct syncmem_who)
#define SYNCMEM_IOC_OBJECT_NAME		_IOW(SYNCMEM_IOC_MAGIC, 0x18, struct syncmem_object_name)
#define SYNCMEM_IOC_OBJECTS		_IOWR(SYNCMEM_IOC_MAGIC, 0x19, struct syncmem_object_list)
#define SYNCMEM_IOC_ARMED		_IOWR(SYNCMEM_IOC_MAGIC, 0x1a, struct syncmem_armed_list)
#define SYNCMEM_IOC_HANDLE_OPEN		_IOW(SYNCMEM_IOC_MAGIC, 0x1b, struct syncmem_handle_open)

#endif /* _UAPI_LINUX_SYNCMEM_H */
