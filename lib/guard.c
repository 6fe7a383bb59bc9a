// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Death guards: "if this process dies before I say otherwise, store V into
 * word W and wake its waiters", and robust counts: "add one to word W now
 * and take it back if this process dies", through the kernel's on-close
 * actions on a /dev/syncmem handle private to this process.
 *
 * The handle is opened on first use and closed in a forked child (its copy
 * would otherwise keep the parent's guards from firing when the parent
 * dies); the child opens its own when it needs one. A process that cannot
 * open /dev/syncmem makes it from the region fd it arms on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "internal.h"

static pthread_mutex_t guard_mutex = PTHREAD_MUTEX_INITIALIZER;
static int guard_fd = -1;		/* under guard_mutex */
static uint64_t guard_next_id = 1;	/* under guard_mutex */

static void guard_forget_in_child(void)
{
	if (guard_fd >= 0)
		close(guard_fd);
	guard_fd = -1;
	pthread_mutex_init(&guard_mutex, NULL);
}

static void guard_register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, guard_forget_in_child);
}

/* Arm @arg on this process's private handle: 0 and *@id, or -errno. */
static int guard_arm_action(struct syncmem_on_close *arg, uint64_t *id)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int ret = 0;

	pthread_once(&once, guard_register_fork_handler);
	pthread_mutex_lock(&guard_mutex);
	if (guard_fd < 0) {
		ret = syncmem__device_open();
		/* No device to open here (a sandbox): a handle from the region fd. */
		if (ret == -ENODEV || ret == -EACCES || ret == -EPERM) {
			int fd = syncmem__region_handle(arg->region_fd);

			ret = fd >= 0 || fd != -ENOTTY ? fd : ret;
		}
		if (ret >= 0) {
			guard_fd = ret;
			ret = 0;
		}
	}
	if (!ret) {
		arg->user_data = guard_next_id++;
		ret = syncmem__ioctl(guard_fd, SYNCMEM_IOC_ARM_ON_CLOSE, arg);
		if (!ret)
			*id = arg->user_data;
	}
	pthread_mutex_unlock(&guard_mutex);
	return ret;
}

int syncmem__guard_arm(struct syncmem_region *r, uint32_t *word, uint32_t expected,
		       uint32_t value, uint64_t *id)
{
	struct syncmem_on_close arg = {
		.region_fd = r->fd,
		.size = 4,
		.expected = expected,
		.value = value,
		.flags = SYNCMEM_ON_CLOSE_IF_EQUAL,
	};
	int ret = syncmem__word_offset(r, word, 4, &arg.offset);

	return ret ? ret : guard_arm_action(&arg, id);
}

int syncmem__count_arm(struct syncmem_region *r, uint32_t *word, uint64_t *id)
{
	struct syncmem_on_close arg = {
		.region_fd = r->fd,
		.size = 4,
		.value = 1,
		.flags = SYNCMEM_ON_CLOSE_ADD,
	};
	int ret = syncmem__word_offset(r, word, 4, &arg.offset);

	return ret ? ret : guard_arm_action(&arg, id);
}

/* Disarm action @id with SYNCMEM_DISARM_* @flags: the ioctl's result, or -ENOENT. */
static int guard_disarm_flags(uint64_t id, uint32_t flags)
{
	struct syncmem_disarm arg = { .user_data = id, .flags = flags };
	int ret = -ENOENT;

	pthread_mutex_lock(&guard_mutex);
	if (guard_fd >= 0)
		ret = syncmem__ioctl(guard_fd, SYNCMEM_IOC_DISARM, &arg);
	pthread_mutex_unlock(&guard_mutex);
	return ret;
}

int syncmem__count_undo(uint64_t id)
{
	return guard_disarm_flags(id, SYNCMEM_DISARM_UNDO);
}

int syncmem__guard_disarm(uint64_t id)
{
	return guard_disarm_flags(id, 0);
}
