// SPDX-License-Identifier: LGPL-2.1-or-later
/* Opening /dev/syncmem and checking that the loaded module speaks our ABI. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "internal.h"

int syncmem__ioctl_once(int fd, unsigned long req, void *arg)
{
	int ret = ioctl(fd, req, arg);

	return ret < 0 ? -errno : ret;
}

int syncmem__ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do
		ret = ioctl(fd, req, arg);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

/* What this library uses of the module (an older module lacks some). */
#define SYNCMEM__FEATURES_NEEDED	(SYNCMEM_FEAT_REGIONS | SYNCMEM_FEAT_WAIT |	\
					 SYNCMEM_FEAT_ASYNC | SYNCMEM_FEAT_HANDOFF_ADD |	\
					 SYNCMEM_FEAT_ON_CLOSE | SYNCMEM_FEAT_OWNERS |	\
					 SYNCMEM_FEAT_HANDOFF_WAITERS | SYNCMEM_FEAT_OWNER_QUERY)

/* Check that handle @fd speaks our ABI: @fd, or -errno with @fd closed. */
static int handle_check(int fd)
{
	struct syncmem_version v;
	int err = syncmem__ioctl(fd, SYNCMEM_IOC_VERSION, &v);

	if (err == -ENOTTY) {
		err = -ENODEV;
	} else if (!err && (v.abi_version != SYNCMEM_ABI_VERSION ||
			    (v.features & SYNCMEM__FEATURES_NEEDED) != SYNCMEM__FEATURES_NEEDED)) {
		err = -EPROTO;	/* a module older than this library */
	}
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int syncmem__device_open(void)
{
	const char *path = getenv("SYNCMEM_DEVICE");
	int fd, err;

	if (!path || !*path)
		path = SYNCMEM_DEVICE_PATH;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		/*
		 * No device node (or not our device): the module is not loaded,
		 * or this process cannot see its node (syncmem_strerror() says
		 * both). EACCES and EPERM stay what they are.
		 */
		return (err == ENOENT || err == ENXIO || err == ENODEV) ? -ENODEV : -err;
	}
	return handle_check(fd);
}

int syncmem__region_handle(int region_fd)
{
	struct syncmem_handle_open arg = { 0 };
	int fd = syncmem__ioctl(region_fd, SYNCMEM_IOC_HANDLE_OPEN, &arg);

	/* -ENOTTY: a module without HANDLE_OPEN (or not a region fd). */
	return fd < 0 ? fd : handle_check(fd);
}
