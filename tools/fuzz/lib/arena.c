// SPDX-License-Identifier: GPL-2.0
/*
 * The arena: one region holding every object the library fuzzer drives,
 * mapped between no-access guard areas so that any access outside it
 * faults (a 32-bit index of 4-byte words reaches at most 16 GiB above it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "libfuzz.h"

/* A 32-bit index of 4-byte links reaches 16 GiB past the pool. */
#define GUARD_BELOW	(1ull << 30)
#define GUARD_ABOVE	(17ull << 30)

static char *reservation;

bool arena_guard(const struct arena *a, uintptr_t addr)
{
	uintptr_t lo = (uintptr_t)reservation, base = (uintptr_t)a->base;

	return reservation && addr >= lo && addr < base + ARENA_BYTES + GUARD_ABOVE &&
	       (addr < base || addr >= base + ARENA_BYTES);
}

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static void lay_out(struct layout *at)
{
	size_t off = 4096;

	at->locks = off;
	off += NLOCKS * sizeof(struct syncmem_lock);
	at->gates = off;
	off += NGATES * sizeof(struct syncmem_gate);
	at->sems = off;
	off += NSEMS * sizeof(struct syncmem_sem);
	at->rwlocks = off;
	off += NRWLOCKS * sizeof(struct syncmem_rwlock);
	at->keyed = off = align_up(off, 128);
	at->keyed_len = syncmem_keyed_footprint(KEYED_ENTRIES);
	off += at->keyed_len;
	at->pool = off = align_up(off, 4096);
	at->pool_len = syncmem_pool_footprint(POOL_BLOCK, POOL_BLOCKS);
	off += at->pool_len;
	at->weblocks = off = align_up(off, 64);
	at->weblocks_len = syncmem_locks_footprint(WL_ROOM_NAMES, WL_ROOM_REQS);
	at->end = off + at->weblocks_len;
}

/* The arena's memory: a region fd (or -1) and its mapping at @where. */
static int map_memory(bool kernel, char *where, int *fd)
{
	void *p;

	*fd = -1;
	if (kernel) {
		struct syncmem_region_open ro = { .size = ARENA_BYTES };
		int dev = open("/dev/syncmem", O_RDWR | O_CLOEXEC);

		if (dev < 0)
			return -errno;
		*fd = ioctl(dev, SYNCMEM_IOC_REGION_OPEN, &ro);
		close(dev);
		if (*fd < 0)
			return -errno;
		p = mmap(where, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, *fd, 0);
	} else {
		p = mmap(where, ARENA_BYTES, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	return p == MAP_FAILED ? -errno : 0;
}

int arena_create(struct arena *a, bool kernel)
{
	char *mem;
	int fd, err;

	memset(a, 0, sizeof(*a));
	reservation = mmap(NULL, GUARD_BELOW + ARENA_BYTES + GUARD_ABOVE, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (reservation == MAP_FAILED)
		return -errno;
	mem = reservation + GUARD_BELOW;
	err = map_memory(kernel, mem, &fd);
	if (err)
		return err;
	a->base = mem;
	/* What syncmem_open() would have built, around our own mapping. */
	a->region = (struct syncmem_region){
		.fd = fd, .base = mem, .size = ARENA_BYTES,
		.lock_words = (ARENA_BYTES - sizeof(struct syncmem_lock)) / 8 + 1,
	};
	lay_out(&a->at);
	for (int i = 0; i < NLOCKS; i++)
		syncmem_lock_init((struct syncmem_lock *)(mem + a->at.locks) + i,
				  i % 2 ? SYNCMEM_LOCK_FAIR : 0);
	for (int i = 0; i < NGATES; i++)
		syncmem_gate_init((struct syncmem_gate *)(mem + a->at.gates) + i, true);
	for (int i = 0; i < NSEMS; i++)
		syncmem_sem_init((struct syncmem_sem *)(mem + a->at.sems) + i, SEM_UNITS);
	for (int i = 0; i < NRWLOCKS; i++)
		syncmem_rwlock_init((struct syncmem_rwlock *)(mem + a->at.rwlocks) + i);
	err = syncmem_keyed_init(mem + a->at.keyed, a->at.keyed_len, KEYED_ENTRIES, &a->keyed);
	if (!err)
		err = syncmem_pool_init(mem + a->at.pool, a->at.pool_len, POOL_BLOCK, POOL_BLOCKS,
					&a->pool);
	if (!err)
		a->pool_blocks_off = ((struct syncmem_pool_header *)(mem + a->at.pool))->blocks_off;
	/* The manager names its clients by the kernel's process ids. */
	if (!err && kernel)
		err = syncmem_locks_init(&a->region, mem + a->at.weblocks, a->at.weblocks_len,
					 &a->weblocks);
	if (!err && a->at.end > ARENA_BYTES)
		err = -ENOSPC;
	return err;
}
