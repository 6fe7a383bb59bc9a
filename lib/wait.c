// SPDX-License-Identifier: LGPL-2.1-or-later
/* Atomics-style wait, notify and hand-off on region words: one ioctl each. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include <linux/syncmem.h>

#include "internal.h"

int syncmem__object_offset(const struct syncmem_region *r, const void *obj, size_t size,
			   size_t align, __u64 *off)
{
	uintptr_t a = (uintptr_t)obj, base;

	if (!r || !obj)
		return -EINVAL;
	base = (uintptr_t)r->base;
	/* Past the end of a region too small for it, or not in it at all. */
	if (a < base || a - base > r->size || r->size - (a - base) < size)
		return -ERANGE;
	if (a & (align - 1))
		return -EINVAL;
	*off = a - base;
	return 0;
}

int syncmem__word_offset(const struct syncmem_region *r, const void *addr,
			 size_t width, __u64 *off)
{
	/* A word outside the region is -EINVAL, as Atomics-style calls promise. */
	return syncmem__object_offset(r, addr, width, width, off) ? -EINVAL : 0;
}

int syncmem__object_writable(const struct syncmem_region *r, const void *obj, size_t size,
			     size_t align)
{
	__u64 off;
	int err = syncmem__object_offset(r, obj, size, align, &off);

	if (err)
		return err;
	return r->rdonly ? -EBADF : 0;
}

uint64_t syncmem__deadline(int64_t timeout_ns)
{
	struct timespec ts;
	uint64_t now;

	if (timeout_ns < 0)
		return SYNCMEM_NO_DEADLINE;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	/* Saturate just below "no deadline" rather than wrap. */
	if ((uint64_t)timeout_ns >= SYNCMEM_NO_DEADLINE - now)
		return SYNCMEM_NO_DEADLINE - 1;
	return now + (uint64_t)timeout_ns;
}

int64_t syncmem__remaining(uint64_t deadline)
{
	struct timespec ts;
	uint64_t now;

	if (deadline == SYNCMEM_NO_DEADLINE)
		return SYNCMEM_FOREVER;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return now < deadline ? (int64_t)(deadline - now) : 0;
}

/*
 * A WAIT or LOCK_WAIT ioctl with SYNCMEM_WAIT_* @flags. The kernel restarts a
 * wait interrupted by a handler itself; an interruptible one returns -EINTR,
 * which must reach the caller rather than be retried.
 */
static int wait_ioctl(int fd, unsigned long req, void *arg, uint32_t flags)
{
	if (flags & SYNCMEM_WAIT_INTERRUPTIBLE)
		return syncmem__ioctl_once(fd, req, arg);
	return syncmem__ioctl(fd, req, arg);
}

int syncmem__wait_until(struct syncmem_region *r, const void *addr, uint32_t width,
			uint64_t expected, uint64_t deadline_ns)
{
	return syncmem__wait_flags(r, addr, width, expected, deadline_ns, 0);
}

int syncmem__wait_flags(struct syncmem_region *r, const void *addr, uint32_t width,
			uint64_t expected, uint64_t deadline_ns, uint32_t flags)
{
	struct syncmem_wait arg = {
		.expected = expected,
		.deadline_ns = deadline_ns,
		.size = width,
		.flags = flags,
	};
	int err = syncmem__word_offset(r, addr, width, &arg.offset);

	if (err)
		return err;
	return wait_ioctl(r->fd, SYNCMEM_IOC_WAIT, &arg, flags);
}

int syncmem__lock_wait(struct syncmem_region *r, const uint64_t *addr, uint64_t expected,
		       uint64_t owner, uint64_t deadline_ns, uint32_t flags)
{
	struct syncmem_lock_wait arg = {
		.expected = expected,
		.deadline_ns = deadline_ns,
		.owner = owner,
		.flags = flags,
	};
	int err = syncmem__word_offset(r, addr, 8, &arg.offset);

	if (err)
		return err;
	return wait_ioctl(r->fd, SYNCMEM_IOC_LOCK_WAIT, &arg, flags);
}

int syncmem__unlock_word(struct syncmem_region *r, uint64_t *addr, uint64_t expected,
			 uint32_t flags)
{
	struct syncmem_unlock arg = { .expected = expected, .flags = flags };
	int err = syncmem__word_offset(r, addr, 8, &arg.offset);

	if (err)
		return err;
	return syncmem__ioctl(r->fd, SYNCMEM_IOC_UNLOCK, &arg);
}

int syncmem__wait(struct syncmem_region *r, const void *addr, uint32_t width,
		  uint64_t expected, int64_t timeout_ns)
{
	return syncmem__wait_until(r, addr, width, expected, syncmem__deadline(timeout_ns));
}

/* A hand-off is a wake-up too, as far as a plain waiter is concerned. */
static int plain_result(int ret)
{
	return ret == SYNCMEM_WAIT_HANDED_OFF ? SYNCMEM_OK : ret;
}

int syncmem_wait32(struct syncmem_region *r, const uint32_t *addr,
		   uint32_t expected, int64_t timeout_ns)
{
	return plain_result(syncmem__wait(r, addr, 4, expected, timeout_ns));
}

int syncmem_wait64(struct syncmem_region *r, const uint64_t *addr,
		   uint64_t expected, int64_t timeout_ns)
{
	return plain_result(syncmem__wait(r, addr, 8, expected, timeout_ns));
}

int syncmem_wait32_interruptible(struct syncmem_region *r, const uint32_t *addr,
				 uint32_t expected, int64_t timeout_ns)
{
	/* The kernel does not restart it: -EINTR reaches the caller. */
	return plain_result(syncmem__wait_flags(r, addr, 4, expected,
						syncmem__deadline(timeout_ns),
						SYNCMEM_WAIT_INTERRUPTIBLE));
}

int syncmem_wait64_interruptible(struct syncmem_region *r, const uint64_t *addr,
				 uint64_t expected, int64_t timeout_ns)
{
	return plain_result(syncmem__wait_flags(r, addr, 8, expected,
						syncmem__deadline(timeout_ns),
						SYNCMEM_WAIT_INTERRUPTIBLE));
}

int syncmem_notify(struct syncmem_region *r, const void *addr, uint32_t count)
{
	struct syncmem_notify arg = { .count = count };
	int err = syncmem__word_offset(r, addr, 4, &arg.offset);

	if (err)
		return err;
	return syncmem__ioctl(r->fd, SYNCMEM_IOC_NOTIFY, &arg);
}

int syncmem__handoff(struct syncmem_region *r, void *addr, uint32_t width,
		     uint64_t value, uint32_t flags)
{
	struct syncmem_handoff arg = { .value = value, .size = width, .flags = flags };
	int err = syncmem__word_offset(r, addr, width, &arg.offset);

	if (err)
		return err;
	return syncmem__ioctl(r->fd, SYNCMEM_IOC_HANDOFF, &arg);
}

int syncmem_handoff32(struct syncmem_region *r, uint32_t *addr, uint32_t value)
{
	return syncmem__handoff(r, addr, 4, value, 0);
}

int syncmem_handoff64(struct syncmem_region *r, uint64_t *addr, uint64_t value)
{
	return syncmem__handoff(r, addr, 8, value, 0);
}
