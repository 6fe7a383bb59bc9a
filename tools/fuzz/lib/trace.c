// SPDX-License-Identifier: GPL-2.0
/*
 * The last syncmem ioctl of each worker, for the watchdog to tell a stuck
 * library loop from a stuck kernel call: the library's ioctl() calls come
 * here (the link wraps ioctl) before going to the kernel.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/syncmem.h>

#include "libfuzz.h"

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);

__thread int trace_worker = -1;

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (trace_worker >= 0 && req == SYNCMEM_IOC_WAIT) {
		struct syncmem_wait *w = arg;

		books->last_wait[trace_worker] = *w;
		atomic_store(&books->in_wait_since[trace_worker], now_ns());
	}
	ret = __real_ioctl(fd, req, arg);
	if (trace_worker >= 0 && req == SYNCMEM_IOC_WAIT)
		atomic_store(&books->in_wait_since[trace_worker], 0);
	return ret;
}
