// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Introspection: object names, waiters and holders of a region, through the
 * module's WAITERS, WHO, OBJECT_NAME and OBJECTS ioctls. Nothing here reads
 * the region's memory: every answer comes from the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_Static_assert(SYNCMEM_OBJ_WORD == SYNCMEM_KIND_WORD && SYNCMEM_OBJ_LOCK == SYNCMEM_KIND_LOCK &&
	       SYNCMEM_OBJ_RWLOCK == SYNCMEM_KIND_RWLOCK && SYNCMEM_OBJ_SEM == SYNCMEM_KIND_SEM &&
	       SYNCMEM_OBJ_GATE == SYNCMEM_KIND_GATE && SYNCMEM_OBJ_KEYED == SYNCMEM_KIND_KEYED &&
	       SYNCMEM_OBJ_FLIGHT == SYNCMEM_KIND_FLIGHT && SYNCMEM_OBJ_POOL == SYNCMEM_KIND_POOL &&
	       SYNCMEM_OBJ_OTHER == SYNCMEM_KIND_OTHER && SYNCMEM_OBJ_LOCKS == SYNCMEM_KIND_LOCKS &&
	       SYNCMEM_OBJ_LOCKS == SYNCMEM_KIND_MAX, "object kinds match the kernel's");
_Static_assert(SYNCMEM_HOLDER_FREE == SYNCMEM_WHO_FREE && SYNCMEM_HOLDER_ALIVE == SYNCMEM_WHO_ALIVE &&
	       SYNCMEM_HOLDER_DEAD == SYNCMEM_WHO_DEAD && SYNCMEM_HOLDER_NOBODY == SYNCMEM_WHO_NOBODY &&
	       SYNCMEM_HOLDER_GONE == SYNCMEM_WHO_GONE &&
	       SYNCMEM_HOLDER_NOTRECOVERABLE == SYNCMEM_WHO_NOTRECOVERABLE,
	       "holder states match the kernel's");

int syncmem_name_object(struct syncmem_region *r, const void *obj, size_t size,
			int kind, const char *name)
{
	struct syncmem_object_name arg = { 0 };
	int err;

	if (!r || !obj)
		return -EINVAL;
	if (name) {
		size_t len = strnlen(name, SYNCMEM_OBJECT_NAME_MAX + 1);

		if (!size || kind < SYNCMEM_OBJ_WORD || kind > SYNCMEM_OBJ_LOCKS ||
		    !len || len > SYNCMEM_OBJECT_NAME_MAX)
			return -EINVAL;
		err = syncmem__object_offset(r, obj, size, 4, &arg.offset);
		if (err)
			return err;
		arg.size = size;
		arg.kind = (__u32)kind;
		arg.name = (__u64)(uintptr_t)name;
		arg.name_len = (__u32)len;
	} else {
		err = syncmem__object_offset(r, obj, 1, 4, &arg.offset);
		if (err)
			return err;
	}
	if (r->rdonly)
		return -EBADF;
	err = syncmem__ioctl(r->fd, SYNCMEM_IOC_OBJECT_NAME, &arg);
	return err < 0 ? err : 0;
}

/* The count a list call passes: at most SYNCMEM_LIST_MAX, and at least 1. */
static __u32 list_count(size_t cap)
{
	return cap > SYNCMEM_LIST_MAX ? SYNCMEM_LIST_MAX : cap ? (__u32)cap : 1;
}

static int clamp_total(__u64 total)
{
	return total > INT32_MAX ? INT32_MAX : (int)total;
}

/* ARMED's argument has OBJECTS' layout: one call serves both. */
_Static_assert(sizeof(struct syncmem_armed_list) == sizeof(struct syncmem_object_list) &&
	       offsetof(struct syncmem_armed_list, count) ==
	       offsetof(struct syncmem_object_list, count) &&
	       offsetof(struct syncmem_armed_list, total) ==
	       offsetof(struct syncmem_object_list, total), "list arguments alike");

/*
 * One OBJECTS or ARMED call for up to @cap entries of @esize bytes into a
 * new array (the caller frees it): 0 or -errno, @arg filled.
 */
static int list_call(struct syncmem_region *r, unsigned long req, size_t esize,
		     size_t cap, struct syncmem_object_list *arg, void **entries)
{
	int err;

	*arg = (struct syncmem_object_list){ .count = list_count(cap) };
	*entries = calloc(arg->count, esize);
	if (!*entries)
		return -ENOMEM;
	arg->entries = (__u64)(uintptr_t)*entries;
	err = syncmem__ioctl(r->fd, req, arg);
	return err < 0 ? err : 0;
}

int syncmem_objects(struct syncmem_region *r, struct syncmem_object_info *out,
		    size_t cap)
{
	struct syncmem_object_list arg;
	struct syncmem_object_entry *e;
	int err;

	if (!r || (!out && cap))
		return -EINVAL;
	err = list_call(r, SYNCMEM_IOC_OBJECTS, sizeof(*e), cap, &arg, (void **)&e);
	if (!err) {
		for (__u32 i = 0; i < arg.count && i < cap; i++) {
			__u32 len = e[i].name_len;

			if (len > SYNCMEM_OBJECT_NAME_MAX)
				len = SYNCMEM_OBJECT_NAME_MAX;
			out[i].offset = e[i].offset;
			out[i].size = e[i].size;
			out[i].kind = (int)e[i].kind;
			memcpy(out[i].name, e[i].name, len);
			out[i].name[len] = '\0';
		}
		err = clamp_total(arg.total);
	}
	free(e);
	return err;
}

/* One page of waiters into @out from entry @e of the kernel's answer. */
static void waiters_copy(struct syncmem_waiter_info *out, const struct syncmem_waiter_entry *e,
			 __u32 n)
{
	for (__u32 i = 0; i < n; i++) {
		out[i] = (struct syncmem_waiter_info){
			.offset = e[i].offset,
			.since_ns = (int64_t)e[i].since_ns,
			.deadline_ns = e[i].deadline_ns == SYNCMEM_NO_DEADLINE ?
				       -1 : (int64_t)e[i].deadline_ns,
			.owner = e[i].owner,
			.pid = e[i].pid,
			.tid = e[i].tid,
			.flags = e[i].flags,
			.size = e[i].size,
			.position = e[i].position,
		};
	}
}

/*
 * The kernel returns SYNCMEM_LIST_MAX waiters at a time: longer lists are
 * read in pages, each from the entry after the last one read (a page is
 * its own snapshot; none is listed twice). The total is those read before
 * the last page plus what that page found from its cursor on, so it is
 * never below the entries written even when waiters leave between pages.
 */
int syncmem_waiters(struct syncmem_region *r, const void *word,
		    struct syncmem_waiter_info *out, size_t cap)
{
	struct syncmem_waiter_list arg = { 0 };
	struct syncmem_waiter_entry *e = NULL;
	__u32 page = cap > SYNCMEM_LIST_MAX ? SYNCMEM_LIST_MAX : (__u32)cap;
	size_t got = 0;
	int total = 0, err;

	if (!r || (!out && cap))
		return -EINVAL;
	if (word) {
		err = syncmem__word_offset(r, word, 4, &arg.offset);
		if (err)
			return err;
		arg.flags = SYNCMEM_WAITERS_WORD;
	}
	if (page) {
		e = calloc(page, sizeof(*e));
		if (!e)
			return -ENOMEM;
	}
	for (;;) {
		__u32 want = cap - got > page ? page : (__u32)(cap - got);
		const struct syncmem_waiter_entry *last;

		arg.entries = (__u64)(uintptr_t)e;
		arg.count = want;
		err = syncmem__ioctl(r->fd, SYNCMEM_IOC_WAITERS, &arg);
		if (err < 0)
			break;
		total = clamp_total(got + arg.total);
		waiters_copy(out + got, e, arg.count);
		got += arg.count;
		err = total;
		if (arg.count < want || got == cap)
			break;
		last = &e[arg.count - 1];
		if (last->position == UINT32_MAX)
			break;
		arg.flags |= SYNCMEM_WAITERS_FROM;
		arg.offset = last->offset;
		arg.position = last->position + 1;
	}
	free(e);
	return err;
}

int syncmem_holder(struct syncmem_region *r, const void *word,
		   struct syncmem_holder_info *out)
{
	struct syncmem_who arg = { 0 };
	int err;

	if (!r || !out)
		return -EINVAL;
	err = syncmem__word_offset(r, word, 8, &arg.offset);
	if (err)
		return err;
	err = syncmem__ioctl(r->fd, SYNCMEM_IOC_WHO, &arg);
	if (err < 0)
		return err;
	*out = (struct syncmem_holder_info){
		.word = arg.word,
		.pid = arg.pid,
		.tid = arg.tid,
		.state = (int)arg.state,
	};
	return 0;
}

int syncmem_armed(struct syncmem_region *r, struct syncmem_armed_info *out, size_t cap)
{
	struct syncmem_object_list arg;
	struct syncmem_armed_entry *e;
	int err;

	if (!r || (!out && cap))
		return -EINVAL;
	err = list_call(r, SYNCMEM_IOC_ARMED, sizeof(*e), cap, &arg, (void **)&e);
	if (!err) {
		for (__u32 i = 0; i < arg.count && i < cap; i++) {
			out[i] = (struct syncmem_armed_info){
				.offset = e[i].offset,
				.value = e[i].value,
				.expected = e[i].expected,
				.pid = e[i].pid,
				.size = e[i].size,
				.if_equal = e[i].flags & SYNCMEM_ARMED_IF_EQUAL,
				.add = e[i].flags & SYNCMEM_ARMED_ADD,
			};
		}
		err = clamp_total(arg.total);
	}
	free(e);
	return err;
}
