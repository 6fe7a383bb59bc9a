// SPDX-License-Identifier: GPL-2.0
/*
 * The objects of one process: a table of fds (handles, region fds,
 * eventfds, foreign files) and a table of region mappings, shared by its
 * threads. Any thread may close or unmap what another is using: that is
 * the point. A slot's generation tells a caller afterwards whether its fd
 * changed under it, so that result is counted but not judged.
 *
 * Locks are plain atomics so that a forked child can reset them: the
 * parent's other threads do not exist in the child.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

static struct obj objs[NOBJ];
static struct mapping maps[NMAP];
static atomic_flag table_lock = ATOMIC_FLAG_INIT;
static atomic_uint_least64_t next_rid = 1;

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&table_lock, memory_order_acquire))
		sched_yield();
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&table_lock, memory_order_release);
}

uint64_t obj_new_rid(void)
{
	/* Unique across the processes of a run: the pid in the high bits. */
	return ((uint64_t)getpid() << 32) | atomic_fetch_add(&next_rid, 1);
}

bool obj_pick(struct rng *r, enum kind kind, struct obj *out, int *slot)
{
	int match[NOBJ], n = 0;

	lock();
	for (int i = 0; i < NOBJ; i++)
		if (objs[i].kind != K_FREE && (kind == K_FREE || objs[i].kind == kind))
			match[n++] = i;
	if (n) {
		*slot = match[rng_below(r, n)];
		*out = objs[*slot];
	}
	unlock();
	return n > 0;
}

bool obj_unchanged(int slot, const struct obj *o)
{
	bool same;

	lock();
	same = objs[slot].gen == o->gen && objs[slot].kind == o->kind;
	unlock();
	return same;
}

int obj_count(enum kind kind)
{
	int n = 0;

	lock();
	for (int i = 0; i < NOBJ; i++)
		n += objs[i].kind == kind;
	unlock();
	return n;
}

static void slot_close(int i)
{
	close(objs[i].fd);
	objs[i].kind = K_FREE;
	objs[i].gen++;
}

void obj_add(struct rng *r, int fd, enum kind kind, uint64_t rid, uint64_t size, bool rdonly)
{
	int i, free_slot = -1;

	if (fd < 0)
		return;
	if (fd >= TABLE_FD_LIMIT) {
		close(fd);
		return;
	}
	lock();
	for (i = 0; i < NOBJ && free_slot < 0; i++)
		if (objs[i].kind == K_FREE)
			free_slot = i;
	if (free_slot < 0) {
		free_slot = (int)rng_below(r, NOBJ);
		slot_close(free_slot);
	}
	objs[free_slot] = (struct obj){
		.fd = fd, .kind = kind, .gen = objs[free_slot].gen + 1,
		.rid = rid, .size = size, .rdonly = rdonly,
	};
	unlock();
}

bool obj_close_slot(int slot, const struct obj *o)
{
	bool same;

	lock();
	same = objs[slot].gen == o->gen && objs[slot].kind == o->kind;
	if (same)
		slot_close(slot);
	unlock();
	return same;
}

bool obj_close_random(struct rng *r)
{
	int match[NOBJ], n = 0;

	lock();
	for (int i = 0; i < NOBJ; i++)
		if (objs[i].kind != K_FREE)
			match[n++] = i;
	if (n)
		slot_close(match[rng_below(r, n)]);
	unlock();
	return n > 0;
}

void obj_close_all(void)
{
	lock();
	for (int i = 0; i < NOBJ; i++)
		if (objs[i].kind != K_FREE)
			slot_close(i);
	unlock();
	for (int i = 0; i < NMAP; i++) {
		int idle = 0;

		if (maps[i].addr &&
		    atomic_compare_exchange_strong(&maps[i].users, &idle, -1)) {
			munmap(maps[i].addr, maps[i].len);
			maps[i].addr = NULL;
			atomic_store(&maps[i].users, 0);
		}
	}
}

pid_t obj_fork(void)
{
	pid_t pid;

	lock();
	pid = fork();
	if (pid != 0)
		unlock();
	return pid;
}

/* Close every low fd the table does not know: fds other threads were creating. */
static void close_strays(void)
{
	bool known[TABLE_FD_LIMIT] = { false };
	unsigned int from = 3;

	for (int i = 0; i < NOBJ; i++)
		if (objs[i].kind != K_FREE && objs[i].fd < TABLE_FD_LIMIT)
			known[objs[i].fd] = true;
	for (unsigned int fd = 3; fd <= TABLE_FD_LIMIT; fd++) {
		if (fd < TABLE_FD_LIMIT && !known[fd])
			continue;
		if (fd > from)
			close_range(from, fd - 1, 0);
		from = fd + 1;
	}
}

void obj_after_fork(void)
{
	atomic_flag_clear(&table_lock);
	close_strays();
	for (int i = 0; i < NMAP; i++) {
		/* Being unmapped by a thread the child does not have: forget it. */
		if (atomic_load(&maps[i].users) < 0)
			maps[i].addr = NULL;
		atomic_store(&maps[i].users, 0);
	}
}

bool map_add(void *addr, size_t len, uint64_t rid, bool writable)
{
	bool added = false;

	lock();
	for (int i = 0; i < NMAP && !added; i++) {
		if (maps[i].addr || atomic_load(&maps[i].users))
			continue;
		maps[i].len = len;
		maps[i].rid = rid;
		maps[i].writable = writable;
		maps[i].addr = addr;	/* last: published with the fields above */
		added = true;
	}
	unlock();
	return added;
}

bool map_remove_random(struct rng *r)
{
	int i = (int)rng_below(r, NMAP), idle = 0;

	if (!maps[i].addr || !atomic_compare_exchange_strong(&maps[i].users, &idle, -1))
		return false;
	if (maps[i].addr)
		munmap(maps[i].addr, maps[i].len);
	maps[i].addr = NULL;
	atomic_store(&maps[i].users, 0);
	return true;
}

struct mapping *map_enter(struct rng *r, uint64_t rid, bool writable)
{
	int start = (int)rng_below(r, NMAP);

	for (int k = 0; k < NMAP; k++) {
		struct mapping *m = &maps[(start + k) % NMAP];
		int users = atomic_load(&m->users);

		if (users < 0 || !m->addr)
			continue;
		if (!atomic_compare_exchange_strong(&m->users, &users, users + 1))
			continue;
		/* Ours now: it cannot be unmapped until map_leave(). */
		if (m->addr && (!rid || m->rid == rid) && (!writable || m->writable))
			return m;
		atomic_fetch_sub(&m->users, 1);
	}
	return NULL;
}

void map_leave(struct mapping *m)
{
	atomic_fetch_sub(&m->users, 1);
}
