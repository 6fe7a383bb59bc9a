/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsyncmem: shared memory and Atomics-style synchronization between
 * processes, on top of the syncmem kernel module (/dev/syncmem).
 *
 * Conventions: a function that can fail returns a negative errno value
 * (-EINVAL, -ENOMEM, ...); it never reports through errno alone and never
 * aborts on bad input. syncmem_strerror() turns any result into text.
 * See Documentation/syncmem/library.rst.
 */
#ifndef SYNCMEM_H
#define SYNCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

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
 * -ENOSPC (region count cap), -ENOMEM (total bytes cap or no memory),
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

void *syncmem_base(const struct syncmem_region *r);
size_t syncmem_size(const struct syncmem_region *r);
int syncmem_region_fd(const struct syncmem_region *r);

/* Text for a negative errno or a SYNCMEM_ result; never NULL. */
const char *syncmem_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* SYNCMEM_H */
