// SPDX-License-Identifier: GPL-2.0
/*
 * Handle ioctls other than the async ones: VERSION, REGION_OPEN (names from
 * a small pool so creates, opens and unlinks collide), REGION_UNLINK,
 * STATS, SET_EVENTFD, ARM_ON_CLOSE, DISARM and REGION_LIST. On a handle
 * made by HANDLE_OPEN the region calls and STATS are -EPERM.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static bool pick_handle(struct thread_ctx *t, struct obj *h, int *slot)
{
	if (obj_pick(&t->rng, K_HANDLE, h, slot))
		return true;
	open_handle(t);
	return false;
}

static void version(struct thread_ctx *t, const struct obj *h, int slot)
{
	const uint64_t basic = SYNCMEM_FEAT_REGIONS | SYNCMEM_FEAT_WAIT | SYNCMEM_FEAT_ASYNC;
	struct syncmem_version v;
	long ret = xioctl(h->fd, SYNCMEM_IOC_VERSION, &v);
	bool stable = obj_unchanged(slot, h);

	if (!tally(OP_VERSION, ret, if_stable(EXACTLY(0), stable), "VERSION") || ret || !stable)
		return;
	if (v.abi_version != SYNCMEM_ABI_VERSION || v.name_max != SYNCMEM_NAME_MAX ||
	    (v.features & basic) != basic || v.pad || !v.max_region_size)
		finding("VERSION says abi %u name_max %u features %#llx pad %u max_region_size %llu",
			v.abi_version, v.name_max, (unsigned long long)v.features, v.pad,
			(unsigned long long)v.max_region_size);
	(void)t;
}

static bool has_nul(const char *name, uint32_t len)
{
	return len <= SYNCMEM_NAME_MAX && memchr(name, '\0', len);
}

/* The one errno a call with a bad name must fail with, or 0. */
static long name_error(const char *name, uint32_t len)
{
	if (!len || has_nul(name, len))
		return -EINVAL;
	if (len > SYNCMEM_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

void open_region(struct thread_ctx *t, const struct obj *hobj, int hslot)
{
	static const uint64_t sizes[] = { 1, 8, 100, 4096, 4096, 4097, 8192, 16384, 65536 };
	static const uint32_t modes[] = { 0600, 0600, 0644, 0666, 0660, 0400, 0, 0777 };
	static const uint32_t flag_sets[] = {
		SYNCMEM_REGION_CREATE, SYNCMEM_REGION_CREATE, SYNCMEM_REGION_CREATE,
		SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL, 0, 0, SYNCMEM_REGION_RDONLY,
		SYNCMEM_REGION_CREATE | SYNCMEM_REGION_RDONLY, SYNCMEM_REGION_EXCL,
	};
	struct syncmem_region_open arg = { 0 };
	bool anonymous = rng_chance(&t->rng, 1, 3), stable;
	struct verdict v = DOCUMENTED;
	const char *name = NULL;
	char what[200];
	uint32_t len = 0;
	struct obj h;
	int slot = hslot, handle;
	long ret;

	if (hobj) {
		h = *hobj;
	} else if (!pick_handle(t, &h, &slot)) {
		return;
	}
	handle = h.fd;
	arg.size = sizes[rng_below(&t->rng, sizeof(sizes) / sizeof(sizes[0]))];
	arg.mode = modes[rng_below(&t->rng, sizeof(modes) / sizeof(modes[0]))];
	if (rng_chance(&t->rng, 1, 30))
		arg.size = shared->max_region_size + 1;
	if (anonymous) {
		arg.flags = rng_chance(&t->rng, 1, 10) ? SYNCMEM_REGION_RDONLY : 0;
		if (arg.flags)
			v = EXACTLY(-EINVAL);
		else if (arg.size > shared->max_region_size)
			v = EXACTLY(-E2BIG);
	} else {
		name = pool_name(&t->rng, &len);
		arg.name = (uintptr_t)name;
		arg.name_len = len;
		arg.flags = flag_sets[rng_below(&t->rng, sizeof(flag_sets) / sizeof(flag_sets[0]))];
		if (!(arg.flags & SYNCMEM_REGION_CREATE) || rng_chance(&t->rng, 1, 2))
			arg.size = rng_chance(&t->rng, 1, 4) ? arg.size : 0;	/* open any size */
		if ((arg.flags & SYNCMEM_REGION_EXCL) && !(arg.flags & SYNCMEM_REGION_CREATE))
			v = EXACTLY(-EINVAL);
		else if (name_error(name, len))
			v = EXACTLY(name_error(name, len));
	}
	ret = xioctl(handle, SYNCMEM_IOC_REGION_OPEN, &arg);
	stable = obj_unchanged(slot, &h);
	snprintf(what, sizeof(what), "handle %d name %s (len %u) flags %#x size %llu mode %#o",
		 handle, anonymous ? "(anonymous)" : len && len < 40 ? name : "(odd)", len,
		 arg.flags, (unsigned long long)arg.size, arg.mode);
	if (!tally(OP_REGION_OPEN, ret, if_stable(NODE_ONLY(&h, v), stable), what) || ret < 0)
		return;
	if (!arg.size)
		finding("REGION_OPEN succeeded but reports size 0: %s", what);
	obj_add(&t->rng, (int)ret, K_REGION, obj_new_rid(), arg.size,
		arg.flags & SYNCMEM_REGION_RDONLY);
	if (rng_chance(&t->rng, 1, 2)) {
		struct obj o;
		int oslot;

		if (obj_pick(&t->rng, K_REGION, &o, &oslot))
			map_object(t, &o, oslot);
	}
}

static void region_unlink(struct thread_ctx *t, const struct obj *h, int slot)
{
	uint32_t len;
	const char *name = pool_name(&t->rng, &len);
	struct syncmem_region_unlink arg = { .name = (uintptr_t)name, .name_len = len };
	long want = name_error(name, len);
	char what[120];
	long ret;

	ret = xioctl(h->fd, SYNCMEM_IOC_REGION_UNLINK, &arg);
	snprintf(what, sizeof(what), "name %s (len %u)", len && len < 40 ? name : "(odd)", len);
	tally(OP_REGION_UNLINK, ret,
	      if_stable(NODE_ONLY(h, want ? EXACTLY(want) : DOCUMENTED), obj_unchanged(slot, h)),
	      what);
}

static void stats(struct thread_ctx *t, const struct obj *h, int slot)
{
	struct syncmem_stats s;
	long ret = xioctl(h->fd, SYNCMEM_IOC_STATS, &s);

	tally(OP_STATS, ret, if_stable(NODE_ONLY(h, EXACTLY(0)), obj_unchanged(slot, h)), "STATS");
	(void)t;
}

static void set_eventfd(struct thread_ctx *t, const struct obj *h, int slot)
{
	struct syncmem_eventfd arg = { .fd = -1 };
	struct verdict v = EXACTLY(0);
	struct obj e = { 0 };
	bool stable;
	int eslot = 0;

	switch (rng_below(&t->rng, 10)) {
	case 0: case 1: case 2: case 3: case 4: case 5:
		if (obj_pick(&t->rng, K_EVENTFD, &e, &eslot)) {
			arg.fd = e.fd;
			break;
		}
		__attribute__((fallthrough));	/* no eventfd: stop signalling */
	case 6:
		arg.fd = -1;
		break;
	case 7:
		if (obj_pick(&t->rng, K_REGION, &e, &eslot)) {
			arg.fd = e.fd;
			v = EXACTLY(-EINVAL);	/* not an eventfd */
			break;
		}
		__attribute__((fallthrough));
	case 8:
		arg.fd = TABLE_FD_LIMIT - 1;	/* never open */
		v = EXACTLY(-EBADF);
		break;
	default:
		arg.fd = -2 - (int)rng_below(&t->rng, 100);
		v = EXACTLY(-EINVAL);
		break;
	}
	{
		long ret = xioctl(h->fd, SYNCMEM_IOC_SET_EVENTFD, &arg);
		char what[80];

		stable = obj_unchanged(slot, h) && (arg.fd < 0 || arg.fd == TABLE_FD_LIMIT - 1 ||
						    obj_unchanged(eslot, &e));
		snprintf(what, sizeof(what), "handle %d eventfd %d", h->fd, arg.fd);
		tally(OP_SET_EVENTFD, ret, if_stable(v, stable), what);
	}
}

static void arm_on_close(struct thread_ctx *t, const struct obj *h, int slot)
{
	uint32_t width = rng_chance(&t->rng, 1, 4) ? 8 : 4;
	struct syncmem_on_close arg = {
		.size = width,
		.value = rng_below(&t->rng, 4),
		.user_data = rng_below(&t->rng, 16),
	};
	char what[160];
	struct obj r;
	int rslot;
	long ret;

	if (!obj_pick(&t->rng, K_REGION, &r, &rslot))
		return;
	arg.region_fd = r.fd;
	arg.offset = pick_offset(&t->rng, r.size, width);
	if (rng_chance(&t->rng, 1, 2)) {
		arg.flags = SYNCMEM_ON_CLOSE_IF_EQUAL;
		arg.expected = pick_expected(&t->rng, r.rid, arg.offset, width);
	} else if (rng_chance(&t->rng, 1, 3)) {
		arg.flags = SYNCMEM_ON_CLOSE_ADD;	/* a count, taken back at close */
	}
	ret = xioctl(h->fd, SYNCMEM_IOC_ARM_ON_CLOSE, &arg);
	snprintf(what, sizeof(what), "handle %d region fd %d (%s) offset %llu size %u ud %llu",
		 h->fd, r.fd, r.rdonly ? "ro" : "rw", (unsigned long long)arg.offset, width,
		 (unsigned long long)arg.user_data);
	tally(OP_ARM_ON_CLOSE, ret,
	      if_stable(r.rdonly ? EXACTLY(-EBADF) : DOCUMENTED,
			obj_unchanged(slot, h) && obj_unchanged(rslot, &r)), what);
}

static void disarm(struct thread_ctx *t, const struct obj *h, int slot)
{
	struct syncmem_disarm arg = { .user_data = rng_below(&t->rng, 16) };
	long ret = xioctl(h->fd, SYNCMEM_IOC_DISARM, &arg);

	tally(OP_DISARM, ret, if_stable(DOCUMENTED, obj_unchanged(slot, h)), "DISARM");
}

static __thread uint64_t list_cursor;

/*
 * Does @e's mode let this process read its region? Root reads every one
 * (CAP_DAC_OVERRIDE); 65534 has no supplementary groups.
 */
static bool entry_readable(const struct syncmem_region_entry *e)
{
	uint32_t mode = e->mode;

	if (!geteuid())
		return true;
	if (e->uid == geteuid())
		mode >>= 6;
	else if (e->gid == getegid())
		mode >>= 3;
	return mode & 04;
}

static void region_list(struct thread_ctx *t, const struct obj *h, int slot)
{
	struct syncmem_region_entry entries[6];
	struct syncmem_region_list arg = {
		.entries = (uintptr_t)entries,
		.count = 1 + (uint32_t)rng_below(&t->rng, 6),
		.cursor = rng_chance(&t->rng, 1, 2) ? 0 : list_cursor,
	};
	uint64_t cursor = arg.cursor, last;
	uint32_t asked = arg.count;
	char what[80];
	long ret;

	memset(entries, 0xa5, sizeof(entries));
	ret = xioctl(h->fd, SYNCMEM_IOC_REGION_LIST, &arg);
	snprintf(what, sizeof(what), "count %u cursor %llu", asked, (unsigned long long)cursor);
	if (!tally(OP_REGION_LIST, ret, if_stable(NODE_ONLY(h, DOCUMENTED), obj_unchanged(slot, h)),
		   what) || ret)
		return;
	if (arg.count > asked) {
		finding("REGION_LIST wrote %u entries into %u: %s", arg.count, asked, what);
		return;
	}
	last = cursor;
	for (uint32_t i = 0; i < arg.count; i++) {
		const struct syncmem_region_entry *e = &entries[i];

		if (!e->name_len || e->name_len > SYNCMEM_NAME_MAX || e->id <= last ||
		    e->name[e->name_len] != '\0' ||
		    memchr(e->name + e->name_len, 0xa5, sizeof(e->name) - e->name_len))
			finding("REGION_LIST entry %u: name_len %u id %llu after %llu, not NUL-padded or out of order: %s",
				i, e->name_len, (unsigned long long)e->id,
				(unsigned long long)last, what);
		/* Live counts exactly to those who may read the region. */
		if ((e->files == SYNCMEM_COUNT_HIDDEN) != !entry_readable(e) ||
		    (e->mappings == SYNCMEM_COUNT_HIDDEN) != !entry_readable(e) ||
		    (e->waiters == SYNCMEM_COUNT_HIDDEN) != !entry_readable(e))
			finding("REGION_LIST entry %u: mode %04o uid %u gid %u, files %lld mappings %lld waiters %lld as uid %u: %s",
				i, e->mode, e->uid, e->gid, (long long)e->files,
				(long long)e->mappings, (long long)e->waiters, geteuid(), what);
		last = e->id;
	}
	if (arg.cursor != last)
		finding("REGION_LIST cursor %llu, last id %llu: %s",
			(unsigned long long)arg.cursor, (unsigned long long)last, what);
	list_cursor = arg.count ? arg.cursor : 0;
}

void op_handle(struct thread_ctx *t)
{
	struct obj h;
	int slot;

	if (!pick_handle(t, &h, &slot))
		return;
	switch (rng_below(&t->rng, 16)) {
	case 0:
		version(t, &h, slot);
		break;
	case 1: case 2: case 3: case 4: case 5:
		open_region(t, &h, slot);
		break;
	case 6: case 7:
		region_unlink(t, &h, slot);
		break;
	case 8:
		stats(t, &h, slot);
		break;
	case 9: case 10:
		set_eventfd(t, &h, slot);
		break;
	case 11: case 12:
		arm_on_close(t, &h, slot);
		break;
	case 13: case 14:
		disarm(t, &h, slot);
		break;
	default:
		region_list(t, &h, slot);
		break;
	}
}
