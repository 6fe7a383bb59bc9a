// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The calling thread's ids, cached so that lock fast paths make no system
 * call: its thread id (the rwlock's writer field) and the owner ids the
 * kernel issues (lock words): one per thread, one per process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "internal.h"

__thread uint32_t syncmem__cached_tid __attribute__((tls_model("initial-exec")));
__thread uint64_t syncmem__cached_owner __attribute__((tls_model("initial-exec")));
uint64_t syncmem__process_owner_id;
static uint32_t process_gen;	/* bumped in every forked child */

/* A forked child is a new thread and a new process with the same memory: look again. */
static void forget_ids(void)
{
	__atomic_store_n(&process_gen, process_gen + 1, __ATOMIC_RELAXED);
	syncmem__cached_tid = 0;
	syncmem__cached_owner = 0;
	__atomic_store_n(&syncmem__process_owner_id, 0, __ATOMIC_RELAXED);
}

static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, forget_ids);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

uint32_t syncmem__process_gen(void)
{
	pthread_once(&once, register_fork_handler);
	return __atomic_load_n(&process_gen, __ATOMIC_RELAXED);
}

uint32_t syncmem__tid_slow(void)
{
	pthread_once(&once, register_fork_handler);
	syncmem__cached_tid = (uint32_t)gettid();
	return syncmem__cached_tid;
}

static int64_t fetch_owner(int fd, uint32_t flags)
{
	struct syncmem_owner o = { .flags = flags };
	int ret;

	pthread_once(&once, register_fork_handler);
	ret = syncmem__ioctl(fd, SYNCMEM_IOC_OWNER, &o);
	if (ret < 0)
		return ret;
	/* Bound what the kernel said before it names us in shared words. */
	if (!o.id || o.id >= SYNCMEM_OWNER_NOTRECOVERABLE)
		return -EIO;
	return (int64_t)o.id;
}

int64_t syncmem__owner_slow(int fd)
{
	int64_t id = fetch_owner(fd, 0);

	if (id > 0)
		syncmem__cached_owner = (uint64_t)id;
	return id;
}

int64_t syncmem__process_owner(int fd)
{
	uint64_t id = __atomic_load_n(&syncmem__process_owner_id, __ATOMIC_RELAXED);
	int64_t got;

	if (id)
		return (int64_t)id;
	/* Every thread that asks gets the same id: racing stores agree. */
	got = fetch_owner(fd, SYNCMEM_OWNER_PROCESS);
	if (got > 0)
		__atomic_store_n(&syncmem__process_owner_id, (uint64_t)got, __ATOMIC_RELAXED);
	return got;
}

void syncmem__process_owner_stand_in(uint64_t id)
{
	__atomic_store_n(&syncmem__process_owner_id, id, __ATOMIC_RELAXED);
}

int64_t syncmem__process_owner_any(void)
{
	uint64_t id = syncmem__process_owner_cached();
	int64_t got;
	int fd;

	if (id)
		return (int64_t)id;
	fd = syncmem__device_open();
	if (fd < 0)
		return fd;
	got = syncmem__process_owner(fd);
	close(fd);
	return got;
}

int syncmem__owner_alive(int fd, uint64_t id)
{
	struct syncmem_owner q = { .id = id, .flags = SYNCMEM_OWNER_QUERY };

	return syncmem__ioctl(fd, SYNCMEM_IOC_OWNER, &q);
}

int syncmem__owner_dead(uint64_t id)
{
	int fd = syncmem__device_open(), alive;

	if (fd < 0)
		return fd;
	alive = syncmem__owner_alive(fd, id);
	close(fd);
	return alive < 0 ? alive : !alive;
}
