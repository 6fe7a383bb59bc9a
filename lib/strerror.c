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
		return "/dev/syncmem is missing: the syncmem kernel module is not loaded (modprobe syncmem)";
	case -EUCLEAN:
		return "structure needs cleaning: the shared object holds values this library never writes (another process corrupted it, or keeps changing it)";
	case -EPROTO:
		return "the loaded syncmem module speaks another ABI version than this library (or the memory is not what it should be)";
	}
	if (err > 0)
		return "unknown syncmem result";
	desc = strerrordesc_np(-err);
	return desc ? desc : "unknown error";
}
