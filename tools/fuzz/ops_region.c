// SPDX-License-Identifier: GPL-2.0
/*
 * Region fd ioctls with meaningful arguments: REGION_INFO, WAIT, NOTIFY and
 * HANDOFF (storing and adding) on the words other threads and processes use,
 * and the owner-word calls (OWNER, LOCK_WAIT, UNLOCK) on the same words,
 * through writable and read-only fds; HANDLE_OPEN, whose handles join the
 * table; and the introspection calls that list who waits on and holds
 * those words (ops_introspect.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz.h"

static void region_info(struct thread_ctx *t, const struct obj *o, int slot)
{
	/* Held across the call: the region has at least this mapping. */
	struct mapping *m = map_enter(&t->rng, o->rid, false);
	struct syncmem_region_info info;
	char what[160];
	long ret;
	bool stable;

	ret = xioctl(o->fd, SYNCMEM_IOC_REGION_INFO, &info);
	stable = obj_unchanged(slot, o);
	if (m)
		map_leave(m);
	snprintf(what, sizeof(what), "fd %d of a %s region of %llu bytes", o->fd,
		 o->rdonly ? "read-only" : "writable", (unsigned long long)o->size);
	if (!tally(OP_REGION_INFO, ret, if_stable(EXACTLY(0), stable), what) || ret || !stable)
		return;
	if (info.size != o->size)
		finding("REGION_INFO size %llu, but REGION_OPEN said %llu: %s",
			(unsigned long long)info.size, (unsigned long long)o->size, what);
	if (!!(info.flags & SYNCMEM_INFO_RDONLY) != o->rdonly)
		finding("REGION_INFO flags %#x disagree with how the fd was opened: %s",
			info.flags, what);
	if (info.flags & ~(SYNCMEM_INFO_RDONLY | SYNCMEM_INFO_NAMED))
		finding("REGION_INFO flags %#x has unknown bits: %s", info.flags, what);
	/* ABI 2: this fd is an open file of it, the mapping held above one of its VMAs. */
	if (shared->abi2_checks && (!info.files || (m && !info.mappings) || info.mode & ~0777u))
		finding("REGION_INFO files %llu mappings %llu mode %#o (with an fd%s of it held): %s",
			(unsigned long long)info.files, (unsigned long long)info.mappings,
			info.mode, m ? " and a mapping" : "", what);
}

static void region_wait(struct thread_ctx *t, const struct obj *o, int slot)
{
	uint32_t width = rng_chance(&t->rng, 1, 4) ? 8 : 4;
	struct syncmem_wait w = {
		.offset = pick_offset(&t->rng, o->size, width),
		.size = width,
		.deadline_ns = pick_deadline(&t->rng, rng_chance(&t->rng, 1, 3)),
	};
	char what[200];
	long ret;
	bool stable;

	w.expected = pick_expected(&t->rng, o->rid, w.offset, width);
	if (w.deadline_ns == SYNCMEM_NO_DEADLINE && FOREVER_BEGIN())
		return;	/* released by the stop */
	ret = xioctl(o->fd, SYNCMEM_IOC_WAIT, &w);
	forever_end();
	stable = obj_unchanged(slot, o);
	snprintf(what, sizeof(what), "fd %d (%s, %llu bytes) offset %llu size %u expected %#llx deadline %llu",
		 o->fd, o->rdonly ? "ro" : "rw", (unsigned long long)o->size,
		 (unsigned long long)w.offset, width, (unsigned long long)w.expected,
		 (unsigned long long)w.deadline_ns);
	if (!tally(OP_WAIT, ret, if_stable(DOCUMENTED, stable), what) || !stable)
		return;
	if (ret == SYNCMEM_WAIT_TIMED_OUT && w.deadline_ns != SYNCMEM_NO_DEADLINE &&
	    now_ns() < w.deadline_ns)
		finding("WAIT timed out before its deadline: %s", what);
	if (ret == SYNCMEM_WAIT_HANDED_OFF && o->rdonly && shared->abi2_checks)
		finding("WAIT through a read-only fd was handed off (observers are never): %s", what);
}

static void region_notify(struct thread_ctx *t, const struct obj *o, int slot)
{
	static const uint32_t counts[] = { 1, 1, 1, 2, 3, UINT32_MAX, 0 };
	struct syncmem_notify n = {
		.offset = pick_offset(&t->rng, o->size, 4),
		.count = counts[rng_below(&t->rng, sizeof(counts) / sizeof(counts[0]))],
	};
	struct verdict v = o->rdonly ? EXACTLY(-EBADF) : DOCUMENTED;
	char what[160];
	long ret;
	bool stable;

	if (!o->rdonly && n.count == 0 && n.offset + 4 <= o->size)
		v = EXACTLY(0);
	ret = xioctl(o->fd, SYNCMEM_IOC_NOTIFY, &n);
	stable = obj_unchanged(slot, o);
	snprintf(what, sizeof(what), "fd %d (%s, %llu bytes) offset %llu count %u", o->fd,
		 o->rdonly ? "ro" : "rw", (unsigned long long)o->size,
		 (unsigned long long)n.offset, n.count);
	if (!tally(OP_NOTIFY, ret, if_stable(v, stable), what) || !stable)
		return;
	/* Observers are woken beyond @count in ABI 2. */
	if (ret > (long)n.count && !shared->abi2_checks)
		finding("NOTIFY woke %ld waiters, more than its count: %s", ret, what);
}

static void region_handoff(struct thread_ctx *t, const struct obj *o, int slot)
{
	uint32_t width = rng_chance(&t->rng, 1, 4) ? 8 : 4;
	bool add = rng_chance(&t->rng, 1, 3);
	struct syncmem_handoff h = {
		.offset = pick_offset(&t->rng, o->size, width),
		.value = rng_below(&t->rng, 4),
		.size = width,
		.flags = (add ? SYNCMEM_HANDOFF_ADD : 0) |
			 (rng_chance(&t->rng, 1, 3) ? SYNCMEM_HANDOFF_WAITERS : 0),
	};
	enum op op = add ? OP_HANDOFF_ADD : OP_HANDOFF;
	char what[160];
	long ret;

	ret = xioctl(o->fd, SYNCMEM_IOC_HANDOFF, &h);
	snprintf(what, sizeof(what), "fd %d (%s, %llu bytes) offset %llu size %u value %llu", o->fd,
		 o->rdonly ? "ro" : "rw", (unsigned long long)o->size,
		 (unsigned long long)h.offset, width, (unsigned long long)h.value);
	tally(op, ret, if_stable(o->rdonly ? EXACTLY(-EBADF) : DOCUMENTED,
				 obj_unchanged(slot, o)), what);
}

/*
 * The calling thread's (or process's) owner id, from OWNER on @o's fd (which
 * another thread may close or replace meanwhile); 0 if none.
 */
static uint64_t owner_id(const struct obj *o, int slot, bool process)
{
	struct syncmem_owner own = { .flags = process ? SYNCMEM_OWNER_PROCESS : 0 };
	long ret = xioctl(o->fd, SYNCMEM_IOC_OWNER, &own);
	char what[80];

	snprintf(what, sizeof(what), "fd %d %s id", o->fd, process ? "process" : "thread");
	if (!tally(OP_OWNER, ret, if_stable(DOCUMENTED, obj_unchanged(slot, o)), what) || ret)
		return 0;
	if (!own.id || own.id >= SYNCMEM_OWNER_NOBODY)
		finding("OWNER issued id %#llx, outside 1..2^62-4: %s",
			(unsigned long long)own.id, what);
	/* An id just issued to the caller is alive, whoever else asks. */
	own.flags = SYNCMEM_OWNER_QUERY;
	ret = xioctl(o->fd, SYNCMEM_IOC_OWNER, &own);
	if (ret != 1 && ret != -EBADF && obj_unchanged(slot, o))
		finding("OWNER_QUERY of the caller's own id %#llx returned %ld: %s",
			(unsigned long long)own.id, ret, what);
	return own.id;
}

static void region_lock_wait(struct thread_ctx *t, const struct obj *o, int slot)
{
	struct syncmem_lock_wait w = {
		.offset = pick_offset(&t->rng, o->size, 8),
		.deadline_ns = pick_deadline(&t->rng, rng_chance(&t->rng, 1, 3)),
	};
	char what[200];
	long ret;
	bool stable;

	w.owner = owner_id(o, slot, rng_chance(&t->rng, 1, 4));
	if (rng_chance(&t->rng, 1, 8))
		w.owner += 1 + rng_below(&t->rng, 1000);	/* most likely not ours */
	w.expected = pick_expected(&t->rng, o->rid, w.offset, 8);
	if (rng_chance(&t->rng, 1, 2))
		w.expected |= SYNCMEM_OWNER_WAITERS;
	if (w.deadline_ns == SYNCMEM_NO_DEADLINE && FOREVER_BEGIN())
		return;	/* released by the stop */
	ret = xioctl(o->fd, SYNCMEM_IOC_LOCK_WAIT, &w);
	forever_end();
	stable = obj_unchanged(slot, o);
	snprintf(what, sizeof(what), "fd %d (%s, %llu bytes) offset %llu expected %#llx owner %#llx",
		 o->fd, o->rdonly ? "ro" : "rw", (unsigned long long)o->size,
		 (unsigned long long)w.offset, (unsigned long long)w.expected,
		 (unsigned long long)w.owner);
	if (!tally(OP_LOCK_WAIT, ret, if_stable(DOCUMENTED, stable), what) || !stable)
		return;
	if (ret == SYNCMEM_WAIT_QUEUED)
		finding("LOCK_WAIT returned QUEUED: %s", what);
	if (o->rdonly && (ret == SYNCMEM_WAIT_HANDED_OFF || ret == SYNCMEM_WAIT_OWNER_DIED))
		finding("LOCK_WAIT through a read-only fd got the word (%ld): %s", ret, what);
}

static void region_unlock(struct thread_ctx *t, const struct obj *o, int slot)
{
	struct syncmem_unlock u = {
		.offset = pick_offset(&t->rng, o->size, 8),
		.flags = rng_chance(&t->rng, 1, 2) ? SYNCMEM_UNLOCK_HANDOFF : 0,
	};
	char what[160];
	long ret;

	u.expected = pick_expected(&t->rng, o->rid, u.offset, 8);
	ret = xioctl(o->fd, SYNCMEM_IOC_UNLOCK, &u);
	snprintf(what, sizeof(what), "fd %d (%s, %llu bytes) offset %llu expected %#llx flags %u",
		 o->fd, o->rdonly ? "ro" : "rw", (unsigned long long)o->size,
		 (unsigned long long)u.offset, (unsigned long long)u.expected, u.flags);
	tally(OP_UNLOCK, ret, if_stable(o->rdonly ? EXACTLY(-EBADF) : DOCUMENTED,
				       obj_unchanged(slot, o)), what);
}

/*
 * A handle from a region fd (rw or ro): O_CLOEXEC, then used by every
 * handle operation of the table, the calls only the device node allows
 * judged as -EPERM.
 */
static void handle_open(struct thread_ctx *t, const struct obj *o, int slot)
{
	struct syncmem_handle_open arg = { 0 };
	char what[80];
	long ret;

	ret = xioctl(o->fd, SYNCMEM_IOC_HANDLE_OPEN, &arg);
	snprintf(what, sizeof(what), "fd %d (%s)", o->fd, o->rdonly ? "ro" : "rw");
	tally(OP_HANDLE_OPEN, ret, if_stable(DOCUMENTED, obj_unchanged(slot, o)), what);
	if (ret < 0)
		return;
	if (!(fcntl((int)ret, F_GETFD) & FD_CLOEXEC) || (fcntl((int)ret, F_GETFL) & O_ACCMODE) != O_RDWR)
		finding("HANDLE_OPEN gave fd flags %#x, status %#x (want O_CLOEXEC, O_RDWR): %s",
			fcntl((int)ret, F_GETFD), fcntl((int)ret, F_GETFL), what);
	if (rng_chance(&t->rng, 3, 4))
		fcntl((int)ret, F_SETFL, O_NONBLOCK);
	obj_add(&t->rng, (int)ret, K_HANDLE, 0, 0, true);
}

void op_region(struct thread_ctx *t)
{
	struct obj o;
	int slot;

	if (!obj_pick(&t->rng, K_REGION, &o, &slot)) {
		open_region(t, NULL, 0);
		return;
	}
	switch (rng_below(&t->rng, 16)) {
	case 0:
		region_info(t, &o, slot);
		break;
	case 1: case 2: case 3: case 4:
		region_wait(t, &o, slot);
		break;
	case 5: case 6: case 7:
		region_notify(t, &o, slot);
		break;
	case 8: case 9:
		region_handoff(t, &o, slot);
		break;
	case 10: case 11:
		region_lock_wait(t, &o, slot);
		break;
	case 12:
		region_unlock(t, &o, slot);
		break;
	case 13:
		if (rng_chance(&t->rng, 1, 4)) {
			handle_open(t, &o, slot);
			break;
		}
		__attribute__((fallthrough));
	default:
		op_introspect(t, &o, slot);
		break;
	}
}
