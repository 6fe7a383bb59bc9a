/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libsyncmem internals shared between its source files. */
#ifndef SYNCMEM_INTERNAL_H
#define SYNCMEM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "syncmem.h"

struct syncmem_region {
	int fd;			/* region fd, owned */
	void *base;		/* its MAP_SHARED mapping */
	size_t size;		/* region size in bytes */
	bool rdonly;
};

/* Device path; $SYNCMEM_DEVICE overrides it (tests, unusual setups). */
#define SYNCMEM_DEVICE_PATH "/dev/syncmem"

/* Open /dev/syncmem and check the module's ABI version: fd or -errno. */
int syncmem__device_open(void);

/* ioctl() that returns its result or -errno, restarting on EINTR. */
int syncmem__ioctl(int fd, unsigned long req, void *arg);

#endif /* SYNCMEM_INTERNAL_H */
