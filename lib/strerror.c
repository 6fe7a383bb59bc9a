// SPDX-License-Identifier: LGPL-2.1-or-later
/* Text for every result a libsyncmem call can return. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "syncmem.h"

const char *syncmem_strerror(int err)
{
	const char *desc;

	switch (err) {
	case SYNCMEM_OK:
		return "ok";
	case SYNCMEM_NOT_EQUAL:
		return "not-equal: the word did not hold the expected value";
	case SYNCMEM_TIMED_OUT:
		return "timed-out: no notify arrived before the timeout";
	case SYNCMEM_PENDING:
		return "pending: the wait is queued and its callback will report";
	case -ENODEV:
		return "/dev/syncmem is missing: the syncmem kernel module is not loaded (modprobe syncmem), or this process cannot see the device (a chroot or container without it: make the loop from a region fd, syncmem_loop_new_region())";
	case -EUCLEAN:
		return "structure needs cleaning: the shared object holds values this library never writes (another process corrupted it, or keeps changing it)";
	case -EPROTO:
		return "no such object in this memory: it was never initialised (attach only after the creator's syncmem_*_init() succeeded), or a library of another version built it; or the loaded syncmem module speaks another ABI version than this library";
	case -ERANGE:
		return "the object is not wholly inside the region passed with it: the region is smaller than the object's end (see syncmem_size()), or the object lies in another region";
	case -EBADF:
		return "bad file descriptor, or a write to memory mapped read-only (a region opened with SYNCMEM_RDONLY)";
	case -EINVAL:
		return "invalid argument: a NULL or misaligned pointer or unknown flags; for syncmem_open() of an existing name, a size other than 0 or the region's own size";
	case -EACCES:
		return "permission denied: the region's mode bits forbid this open; or /dev/syncmem's forbid opening the device (make the loop from a region fd, syncmem_loop_new_region())";
	}
	if (err > 0)
		return "unknown syncmem result";
	desc = strerrordesc_np(-err);
	return desc ? desc : "unknown error";
}
