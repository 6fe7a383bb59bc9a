// SPDX-License-Identifier: GPL-2.0
/*
 * Mappings of regions: made and unmapped while other threads read and
 * scribble through them, and the mmap rules of the region fd (MAP_SHARED
 * only, never executable, never writable through a read-only fd, within the
 * region, never grown) checked with calls that must fail.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t pages_of(uint64_t size)
{
	return (size + page_size() - 1) / page_size() * page_size();
}

void map_object(struct thread_ctx *t, const struct obj *o, int slot)
{
	int prot = PROT_READ | (o->rdonly ? 0 : PROT_WRITE);
	size_t len = pages_of(o->size);
	char what[120];
	void *p;
	long ret;

	(void)t;
	p = mmap(NULL, len, prot, MAP_SHARED, o->fd, 0);
	ret = p == MAP_FAILED ? -errno : 0;
	snprintf(what, sizeof(what), "mmap of fd %d (%s, %llu bytes) for %zu bytes", o->fd,
		 o->rdonly ? "ro" : "rw", (unsigned long long)o->size, len);
	if (!obj_unchanged(slot, o)) {
		/* Whatever the fd became: do not keep a mapping of unknown size. */
		tally(OP_MMAP, ret, UNJUDGED, what);
		if (p != MAP_FAILED)
			munmap(p, len);
		return;
	}
	tally(OP_MMAP, ret, EXACTLY(0), what);
	if (p != MAP_FAILED && !map_add(p, len, o->rid, !o->rdonly))
		munmap(p, len);
}

/* An mmap that breaks one rule: it must fail with that rule's errno. */
static void map_wrongly(struct thread_ctx *t, const struct obj *o, int slot)
{
	size_t len = pages_of(o->size);
	int prot = PROT_READ, flags = MAP_SHARED;
	off_t off = 0;
	const char *rule;
	long want, ret;
	char what[160];
	void *p;

	switch (rng_below(&t->rng, o->rdonly ? 5 : 4)) {
	case 0:
		flags = MAP_PRIVATE;
		rule = "MAP_PRIVATE";
		want = -EINVAL;
		break;
	case 1:
		prot |= PROT_EXEC;
		rule = "PROT_EXEC";
		want = -EPERM;
		break;
	case 2:
		len += page_size();
		rule = "longer than the region";
		want = -EINVAL;
		break;
	case 3:
		off = (off_t)len;
		len = page_size();
		rule = "offset past the region";
		want = -EINVAL;
		break;
	default:
		prot |= PROT_WRITE;
		rule = "PROT_WRITE through a read-only fd";
		want = -EACCES;
		break;
	}
	p = mmap(NULL, len, prot, flags, o->fd, off);
	ret = p == MAP_FAILED ? -errno : 0;
	snprintf(what, sizeof(what), "mmap %s of fd %d (%s, %llu bytes)", rule, o->fd,
		 o->rdonly ? "ro" : "rw", (unsigned long long)o->size);
	tally(OP_MMAP, ret, if_stable(EXACTLY(want), obj_unchanged(slot, o)), what);
	if (p != MAP_FAILED)
		munmap(p, len);
}

/* mprotect that would add a permission the fd does not give: must fail. */
static void protect_wrongly(struct thread_ctx *t)
{
	struct mapping *m = map_enter(&t->rng, 0, false);
	int prot;
	long ret;

	if (!m)
		return;
	/* Never removes a permission: other threads keep using the mapping. */
	prot = PROT_READ | (m->writable ? PROT_WRITE : 0);
	if (m->writable || rng_chance(&t->rng, 1, 2))
		prot |= PROT_EXEC;
	else
		prot |= PROT_WRITE;
	ret = mprotect(m->addr, m->len, prot) ? -errno : 0;
	tally(OP_MPROTECT, ret, EXACTLY(-EACCES),
	      prot & PROT_EXEC ? "mprotect PROT_EXEC of a region mapping"
			       : "mprotect PROT_WRITE of a read-only region mapping");
	map_leave(m);
}

/* Growing a mapping in place must fail (VM_DONTEXPAND). */
static void grow_wrongly(struct thread_ctx *t)
{
	struct mapping *m = map_enter(&t->rng, 0, false);
	void *p;
	long ret;

	if (!m)
		return;
	p = mremap(m->addr, m->len, m->len + page_size(), 0);
	ret = p == MAP_FAILED ? -errno : 0;
	tally(OP_MREMAP, ret, FAILS, "mremap growing a region mapping");
	if (p != MAP_FAILED)	/* it grew: give the extra page back */
		munmap((char *)p + m->len, page_size());
	map_leave(m);
}

void op_memory(struct thread_ctx *t)
{
	struct obj o;
	int slot;

	switch (rng_below(&t->rng, 10)) {
	case 0: case 1: case 2: case 3:
		if (obj_pick(&t->rng, K_REGION, &o, &slot))
			map_object(t, &o, slot);
		break;
	case 4: case 5: case 6:
		map_remove_random(&t->rng);
		break;
	case 7:
		if (obj_pick(&t->rng, K_REGION, &o, &slot))
			map_wrongly(t, &o, slot);
		break;
	case 8:
		protect_wrongly(t);
		break;
	default:
		grow_wrongly(t);
		break;
	}
}
