// SPDX-License-Identifier: LGPL-2.1-or-later
/* Regions: create, open, adopt, unlink and map shared memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "internal.h"

#define SYNCMEM_OPEN_FLAGS (SYNCMEM_CREATE | SYNCMEM_EXCL | SYNCMEM_RDONLY)

void syncmem__region_fill(struct syncmem_region *r, int fd, void *base, size_t size,
			  bool rdonly)
{
	r->fd = fd;
	r->base = base;
	r->size = size;
	/* 0 for a read-only region: its locks take the fast path's cold exit. */
	r->lock_words = !rdonly && size >= sizeof(struct syncmem_lock) ?
			(size - sizeof(struct syncmem_lock)) / 8 + 1 : 0;
	r->rdonly = rdonly;
}

/* Map @fd and wrap it; the fd is not closed on failure. */
static int region_adopt(int fd, size_t size, bool rdonly,
			struct syncmem_region **out)
{
	struct syncmem_region *r;
	void *base;

	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	base = mmap(NULL, size, PROT_READ | (rdonly ? 0 : PROT_WRITE),
		    MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		int err = -errno;

		free(r);
		return err;
	}
	syncmem__region_fill(r, fd, base, size, rdonly);
	*out = r;
	return 0;
}

static int check_name(const char *name, size_t *len)
{
	*len = strlen(name);
	if (!*len)
		return -EINVAL;
	if (*len > SYNCMEM_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int syncmem_open(const char *name, size_t size, unsigned flags, mode_t mode,
		 struct syncmem_region **out)
{
	struct syncmem_region_open arg = { 0 };
	size_t len = 0;
	int dev, fd, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if ((flags & ~SYNCMEM_OPEN_FLAGS) || (mode & ~(mode_t)0777))
		return -EINVAL;
	if (name) {
		err = check_name(name, &len);
		if (err)
			return err;
		if ((flags & SYNCMEM_EXCL) && !(flags & SYNCMEM_CREATE))
			return -EINVAL;
		arg.name = (uintptr_t)name;
		arg.name_len = (uint32_t)len;
		arg.flags = flags;
	} else if (!size || (flags & SYNCMEM_RDONLY)) {
		return -EINVAL;
	}
	arg.size = size;
	arg.mode = mode;

	dev = syncmem__device_open();
	if (dev < 0)
		return dev;
	fd = syncmem__ioctl(dev, SYNCMEM_IOC_REGION_OPEN, &arg);
	close(dev);
	if (fd < 0)
		return fd;
	if (arg.size > SIZE_MAX) {
		close(fd);
		return -EOVERFLOW;
	}
	err = region_adopt(fd, (size_t)arg.size, flags & SYNCMEM_RDONLY, out);
	if (err)
		close(fd);
	return err;
}

int syncmem_open_fd(int region_fd, struct syncmem_region **out)
{
	struct syncmem_region_info info;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (region_fd < 0)
		return -EBADF;
	err = syncmem__ioctl(region_fd, SYNCMEM_IOC_REGION_INFO, &info);
	if (err == -ENOTTY || err == -EINVAL || err == -EFAULT)
		return -EINVAL;	/* some other kind of file */
	if (err)
		return err;
	if (info.size > SIZE_MAX)
		return -EOVERFLOW;
	return region_adopt(region_fd, (size_t)info.size,
			    info.flags & SYNCMEM_INFO_RDONLY, out);
}

int syncmem_unlink(const char *name)
{
	struct syncmem_region_unlink arg = { 0 };
	size_t len;
	int dev, err;

	if (!name)
		return -EINVAL;
	err = check_name(name, &len);
	if (err)
		return err;
	arg.name = (uintptr_t)name;
	arg.name_len = (uint32_t)len;
	dev = syncmem__device_open();
	if (dev < 0)
		return dev;
	err = syncmem__ioctl(dev, SYNCMEM_IOC_REGION_UNLINK, &arg);
	close(dev);
	return err;
}

void syncmem_close(struct syncmem_region *r)
{
	if (!r)
		return;
	munmap(r->base, r->size);
	close(r->fd);
	free(r);
}

void *syncmem_base(const struct syncmem_region *r)
{
	return r ? r->base : NULL;
}

size_t syncmem_size(const struct syncmem_region *r)
{
	return r ? r->size : 0;
}

int syncmem_region_fd(const struct syncmem_region *r)
{
	return r ? r->fd : -EINVAL;
}
