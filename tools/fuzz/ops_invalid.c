// SPDX-License-Identifier: GPL-2.0
/*
 * Calls that must fail, each with one defect and the errno the uapi
 * documents for it: unknown ioctl numbers, ioctls of the other fd kind, bad
 * pointers, non-zero flags and padding, words that are misaligned, outside
 * the region or too wide for their value, fds of the wrong kind. And plain
 * garbage (random bytes for a real command), judged against the documented
 * set, on a scratch handle whose records nobody checks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

/* Every command, with the kind of fd it belongs to and its operation. */
static const struct {
	unsigned long cmd;
	enum kind kind;
	enum op op;
	bool output;	/* the kernel writes the struct */
} cmds[] = {
	{ SYNCMEM_IOC_VERSION,		K_HANDLE, OP_VERSION, true },
	{ SYNCMEM_IOC_REGION_OPEN,	K_HANDLE, OP_REGION_OPEN, false },
	{ SYNCMEM_IOC_REGION_UNLINK,	K_HANDLE, OP_REGION_UNLINK, false },
	{ SYNCMEM_IOC_STATS,		K_HANDLE, OP_STATS, true },
	{ SYNCMEM_IOC_SET_EVENTFD,	K_HANDLE, OP_SET_EVENTFD, false },
	{ SYNCMEM_IOC_WAIT_ASYNC,	K_HANDLE, OP_WAIT_ASYNC, false },
	{ SYNCMEM_IOC_CANCEL,		K_HANDLE, OP_CANCEL, false },
	{ SYNCMEM_IOC_POST,		K_HANDLE, OP_POST, false },
	{ SYNCMEM_IOC_ARM_ON_CLOSE,	K_HANDLE, OP_ARM_ON_CLOSE, false },
	{ SYNCMEM_IOC_DISARM,		K_HANDLE, OP_DISARM, false },
	{ SYNCMEM_IOC_REGION_LIST,	K_HANDLE, OP_REGION_LIST, false },
	{ SYNCMEM_IOC_OWNER,		K_HANDLE, OP_OWNER, true },
	{ SYNCMEM_IOC_REGION_INFO,	K_REGION, OP_REGION_INFO, true },
	{ SYNCMEM_IOC_WAIT,		K_REGION, OP_WAIT, false },
	{ SYNCMEM_IOC_NOTIFY,		K_REGION, OP_NOTIFY, false },
	{ SYNCMEM_IOC_HANDOFF,		K_REGION, OP_HANDOFF, false },
	{ SYNCMEM_IOC_LOCK_WAIT,	K_REGION, OP_LOCK_WAIT, false },
	{ SYNCMEM_IOC_UNLOCK,		K_REGION, OP_UNLOCK, false },
	{ SYNCMEM_IOC_WAITERS,		K_REGION, OP_WAITERS, true },
	{ SYNCMEM_IOC_WHO,		K_REGION, OP_WHO, true },
	{ SYNCMEM_IOC_OBJECT_NAME,	K_REGION, OP_OBJECT_NAME, false },
	{ SYNCMEM_IOC_OBJECTS,		K_REGION, OP_OBJECTS, true },
	{ SYNCMEM_IOC_ARMED,		K_REGION, OP_ARMED, true },
	{ SYNCMEM_IOC_HANDLE_OPEN,	K_REGION, OP_HANDLE_OPEN, false },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static bool pick_writable_region(struct thread_ctx *t, struct obj *o, int *slot)
{
	for (int tries = 0; tries < 4; tries++)
		if (obj_pick(&t->rng, K_REGION, o, slot) && !o->rdonly)
			return true;
	return false;
}

static int scratch_handle(struct thread_ctx *t)
{
	if (t->scratch_handle < 0)
		t->scratch_handle = fd_move_above(open("/dev/syncmem", O_RDWR | O_CLOEXEC |
						       O_NONBLOCK), PRIVATE_FD_BASE);
	return t->scratch_handle;
}

/* An ioctl number the fd's kind does not have: -ENOTTY. */
static void unknown_ioctl(struct thread_ctx *t)
{
	enum kind kind = rng_chance(&t->rng, 1, 2) ? K_HANDLE : K_REGION;
	unsigned long cmd;
	char buf[512] = { 0 }, what[80];
	struct obj o;
	int slot;
	long ret;

	if (!obj_pick(&t->rng, kind, &o, &slot))
		return;
	switch (rng_below(&t->rng, 3)) {
	case 0: {	/* a real command of the other kind */
		unsigned int i;

		/* OWNER is on both kinds of fd. */
		do
			i = (unsigned int)rng_below(&t->rng, NCMDS);
		while (cmds[i].kind == kind || cmds[i].op == OP_OWNER);
		cmd = cmds[i].cmd;
		break;
	}
	case 1:	/* a real number with the wrong size or direction */
		cmd = cmds[rng_below(&t->rng, NCMDS)].cmd ^
		      ((1 + rng_below(&t->rng, 3)) << _IOC_SIZESHIFT);
		break;
	default: {	/* a number nobody uses (up to 0x1f: kept for new calls) */
		unsigned int nr = 0x20 + (unsigned int)rng_below(&t->rng, 0xe0);

		cmd = _IOC(rng_below(&t->rng, 4), SYNCMEM_IOC_MAGIC, nr,
			   rng_below(&t->rng, sizeof(buf)));
		break;
	}
	}
	ret = xioctl(o.fd, cmd, buf);
	snprintf(what, sizeof(what), "cmd %#lx on a %s fd", cmd, kind == K_HANDLE ? "handle" : "region");
	tally(OP_UNKNOWN_IOCTL, ret, if_stable(EXACTLY(-ENOTTY), obj_unchanged(slot, &o)), what);
}

/*
 * The struct pointer faults: -EFAULT (-EBADF first for NOTIFY, HANDOFF,
 * UNLOCK and OBJECT_NAME on ro fds).
 */
static void bad_struct_pointer(struct thread_ctx *t)
{
	unsigned int i = (unsigned int)rng_below(&t->rng, NCMDS);
	struct verdict v = EXACTLY(-EFAULT);
	char what[80];
	struct obj o;
	int slot;
	long ret;
	void *p;

	if (!obj_pick(&t->rng, cmds[i].kind, &o, &slot))
		return;
	if (cmds[i].op == OP_REGION_LIST && !shared->abi2_checks)
		v = DOCUMENTED;
	if ((cmds[i].op == OP_NOTIFY || cmds[i].op == OP_HANDOFF || cmds[i].op == OP_UNLOCK ||
	     cmds[i].op == OP_OBJECT_NAME) && o.rdonly)
		v = EXACTLY(-EBADF);
	/* A struct read from the read-only page is zeros: offset 0 may be no 8-byte word. */
	if (cmds[i].op == OP_WHO && o.size < 8)
		v = FAILS;
	if (cmds[i].op >= OP_WAITERS && cmds[i].op <= OP_ARMED && !shared->introspect)
		v = DOCUMENTED;	/* -ENOTTY */
	/* Refused before the struct is read. */
	if (cmds[i].op == OP_REGION_OPEN || cmds[i].op == OP_REGION_UNLINK ||
	    cmds[i].op == OP_REGION_LIST || cmds[i].op == OP_STATS)
		v = NODE_ONLY(&o, v);
	p = bad_pointer(&t->rng, cmds[i].output);
	ret = xioctl(o.fd, cmds[i].cmd, p);
	snprintf(what, sizeof(what), "struct at %p", p);
	if (ret >= 0 && (cmds[i].op == OP_REGION_OPEN || cmds[i].op == OP_HANDLE_OPEN))
		close((int)ret);
	tally(cmds[i].op, ret, if_stable(v, obj_unchanged(slot, &o)), what);
}

/* REGION_OPEN whose result cannot be written back: -EFAULT and no fd. */
static void open_into_readonly_memory(struct thread_ctx *t)
{
	long page = sysconf(_SC_PAGESIZE);
	struct syncmem_region_open *arg;
	struct obj h;
	int slot;
	long ret;

	if (!obj_pick(&t->rng, K_HANDLE, &h, &slot))
		return;
	arg = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arg == MAP_FAILED)
		return;
	*arg = (struct syncmem_region_open){ .size = 4096 };
	mprotect(arg, page, PROT_READ);
	ret = xioctl(h.fd, SYNCMEM_IOC_REGION_OPEN, arg);
	if (ret >= 0)
		close((int)ret);
	tally(OP_REGION_OPEN, ret, if_stable(NODE_ONLY(&h, EXACTLY(-EFAULT)), obj_unchanged(slot, &h)),
	      "anonymous REGION_OPEN with its struct in read-only memory");
	munmap(arg, page);
}

/* A name pointer that faults: -EFAULT. */
static void bad_name_pointer(struct thread_ctx *t)
{
	struct syncmem_region_open open_arg = {
		.name = (uintptr_t)bad_pointer(&t->rng, false),
		.name_len = 5 + (uint32_t)rng_below(&t->rng, SYNCMEM_NAME_MAX - 4),
		.flags = SYNCMEM_REGION_CREATE, .size = 4096, .mode = 0600,
	};
	struct syncmem_region_unlink unlink_arg = {
		.name = open_arg.name, .name_len = open_arg.name_len,
	};
	bool unlink_it = rng_chance(&t->rng, 1, 2);
	struct obj h;
	int slot;
	long ret;

	if (!obj_pick(&t->rng, K_HANDLE, &h, &slot))
		return;
	if (!open_arg.name)
		return;	/* name 0 is the anonymous region, not a bad pointer */
	if (unlink_it)
		ret = xioctl(h.fd, SYNCMEM_IOC_REGION_UNLINK, &unlink_arg);
	else
		ret = xioctl(h.fd, SYNCMEM_IOC_REGION_OPEN, &open_arg);
	if (ret >= 0 && !unlink_it)
		close((int)ret);
	tally(unlink_it ? OP_REGION_UNLINK : OP_REGION_OPEN, ret,
	      if_stable(NODE_ONLY(&h, EXACTLY(-EFAULT)), obj_unchanged(slot, &h)),
	      "name pointer faults");
}

uint32_t bad_bits(struct thread_ctx *t, uint32_t known)
{
	uint32_t bits;

	do
		bits = (uint32_t)rng_next(&t->rng) & (rng_chance(&t->rng, 1, 2) ? 0xffffffffu : 0xf0);
	while (!(bits & ~known));
	return bits;
}

/* Non-zero flags or padding on an otherwise valid call: -EINVAL. */
static void bad_flags(struct thread_ctx *t)
{
	struct obj h, r;
	int hslot, rslot;
	bool pad = rng_chance(&t->rng, 1, 2);
	const char *what;
	enum op op;
	long ret;

	if (!obj_pick(&t->rng, K_HANDLE, &h, &hslot) || !pick_writable_region(t, &r, &rslot))
		return;
	switch (rng_below(&t->rng, 13)) {
	case 0: {
		struct syncmem_wait arg = { .size = 4, .deadline_ns = 0,
					    .flags = bad_bits(t, SYNCMEM_WAIT_FLAGS) };

		op = OP_WAIT;
		what = "WAIT flags";
		ret = xioctl(r.fd, SYNCMEM_IOC_WAIT, &arg);
		break;
	}
	case 1: {
		struct syncmem_notify arg = { .count = 1, .flags = bad_bits(t, 0) };

		op = OP_NOTIFY;
		what = "NOTIFY flags";
		ret = xioctl(r.fd, SYNCMEM_IOC_NOTIFY, &arg);
		break;
	}
	case 2: {
		struct syncmem_handoff arg = { .size = 4,
					       .flags = bad_bits(t, SYNCMEM_HANDOFF_FLAGS) };

		op = OP_HANDOFF;
		what = "HANDOFF flags";
		ret = xioctl(r.fd, SYNCMEM_IOC_HANDOFF, &arg);
		break;
	}
	case 3: {
		struct syncmem_wait_async arg = {
			.region_fd = r.fd, .size = 4, .deadline_ns = SYNCMEM_NO_DEADLINE,
			.expected = 0xdeadbeef,
			.flags = pad ? 0 : bad_bits(t, SYNCMEM_WAIT_ASYNC_FLAGS),
			.pad = pad ? bad_bits(t, 0) : 0,
		};

		op = OP_WAIT_ASYNC;
		what = pad ? "WAIT_ASYNC pad" : "WAIT_ASYNC flags";
		ret = xioctl(h.fd, SYNCMEM_IOC_WAIT_ASYNC, &arg);
		break;
	}
	case 4: {
		struct syncmem_cancel arg = {
			.user_data = 1,
			.flags = pad ? 0 : bad_bits(t, SYNCMEM_CANCEL_ALL),
			.pad = pad ? bad_bits(t, 0) : 0,
		};

		op = OP_CANCEL;
		what = pad ? "CANCEL pad" : "CANCEL flags";
		ret = xioctl(h.fd, SYNCMEM_IOC_CANCEL, &arg);
		break;
	}
	case 5: {
		struct syncmem_post arg = { .user_data = 1, .result = pick_post_result(&t->rng),
					    .flags = bad_bits(t, 0) };

		op = OP_POST;
		what = "POST flags";
		ret = xioctl(h.fd, SYNCMEM_IOC_POST, &arg);
		break;
	}
	case 6: {
		struct syncmem_on_close arg = {
			.region_fd = r.fd, .size = 4, .user_data = 1000 + rng_below(&t->rng, 16),
			.flags = pad ? 0 : bad_bits(t, SYNCMEM_ON_CLOSE_FLAGS),
			.pad = pad ? bad_bits(t, 0) : 0,
		};

		op = OP_ARM_ON_CLOSE;
		what = pad ? "ARM_ON_CLOSE pad" : "ARM_ON_CLOSE flags";
		ret = xioctl(h.fd, SYNCMEM_IOC_ARM_ON_CLOSE, &arg);
		break;
	}
	case 7: {
		struct syncmem_disarm arg = { .user_data = 1,
					      .flags = pad ? 0 : bad_bits(t, 0),
					      .pad = pad ? bad_bits(t, 0) : 0 };

		op = OP_DISARM;
		what = pad ? "DISARM pad" : "DISARM flags";
		ret = xioctl(h.fd, SYNCMEM_IOC_DISARM, &arg);
		break;
	}
	case 8: {
		struct syncmem_eventfd arg = { .fd = -1, .flags = bad_bits(t, 0) };

		op = OP_SET_EVENTFD;
		what = "SET_EVENTFD flags";
		ret = xioctl(h.fd, SYNCMEM_IOC_SET_EVENTFD, &arg);
		break;
	}
	case 9: {
		struct syncmem_region_unlink arg = { .name = (uintptr_t)"fuzz-0", .name_len = 6,
						     .flags = bad_bits(t, 0) };

		op = OP_REGION_UNLINK;
		what = "REGION_UNLINK flags";
		ret = xioctl(h.fd, SYNCMEM_IOC_REGION_UNLINK, &arg);
		break;
	}
	case 10: {
		struct syncmem_region_open arg = { .size = 4096 };

		switch (rng_below(&t->rng, 3)) {
		case 0:
			arg.pad = bad_bits(t, 0);
			what = "REGION_OPEN pad";
			break;
		case 1:
			arg.flags = bad_bits(t, SYNCMEM_REGION_OPEN_FLAGS);
			what = "REGION_OPEN flags";
			break;
		default:
			arg.mode = bad_bits(t, 0777);
			what = "REGION_OPEN mode above 0777";
			break;
		}
		op = OP_REGION_OPEN;
		ret = xioctl(h.fd, SYNCMEM_IOC_REGION_OPEN, &arg);
		if (ret >= 0)
			close((int)ret);
		break;
	}
	case 11: {
		struct syncmem_handle_open arg = {
			.flags = pad ? 0 : bad_bits(t, 0),
			.pad = pad ? bad_bits(t, 0) : 0,
		};

		op = OP_HANDLE_OPEN;
		what = pad ? "HANDLE_OPEN pad" : "HANDLE_OPEN flags";
		ret = xioctl(r.fd, SYNCMEM_IOC_HANDLE_OPEN, &arg);
		if (ret >= 0)
			close((int)ret);
		break;
	}
	default: {
		struct syncmem_region_entry e;
		struct syncmem_region_list arg = { .entries = (uintptr_t)&e, .count = 1,
						   .flags = bad_bits(t, 0) };

		op = OP_REGION_LIST;
		what = "REGION_LIST flags";
		ret = xioctl(h.fd, SYNCMEM_IOC_REGION_LIST, &arg);
		if (!shared->abi2_checks) {
			tally(op, ret, if_stable(DOCUMENTED, obj_unchanged(hslot, &h)), what);
			return;
		}
		break;
	}
	}
	/* A region call on a handle made by HANDLE_OPEN is refused before its arguments. */
	tally(op, ret, if_stable(op == OP_REGION_OPEN || op == OP_REGION_UNLINK ||
				 op == OP_REGION_LIST ? NODE_ONLY(&h, EXACTLY(-EINVAL)) :
				 EXACTLY(-EINVAL), obj_unchanged(hslot, &h) &&
				 obj_unchanged(rslot, &r)), what);
}

/* A word no call may use: -EINVAL. */
static void bad_word(struct thread_ctx *t, uint64_t size, uint64_t *offset, uint32_t *width,
		     uint64_t *value, const char **why)
{
	static const uint32_t odd_widths[] = { 0, 1, 2, 3, 5, 6, 16, 0xffffffff };

	*width = rng_chance(&t->rng, 1, 2) ? 8 : 4;
	*offset = pick_offset(&t->rng, size, *width);
	*value = 0;
	switch (rng_below(&t->rng, 5)) {
	case 0:
		*width = odd_widths[rng_below(&t->rng, sizeof(odd_widths) / sizeof(odd_widths[0]))];
		*why = "word size not 4 or 8";
		break;
	case 1:
		*offset += 1 + rng_below(&t->rng, *width - 1);
		*why = "misaligned offset";
		break;
	case 2:
		*offset = size / *width * *width;
		*why = "word past the end of the region";
		break;
	case 3:
		*offset = rng_chance(&t->rng, 1, 2) ? 1ull << 63 : ~(uint64_t)(*width - 1);
		*why = "huge offset";
		break;
	default:
		*width = 4;
		*value = (1ull << 32) | rng_below(&t->rng, 4);
		*why = "a 4-byte word with a value above 32 bits";
		break;
	}
}

static void bad_words(struct thread_ctx *t)
{
	struct obj h, r;
	int hslot, rslot;
	uint64_t offset, value;
	uint32_t width;
	const char *why;
	char what[200];
	enum op op;
	long ret;

	if (!obj_pick(&t->rng, K_HANDLE, &h, &hslot) || !pick_writable_region(t, &r, &rslot))
		return;
	bad_word(t, r.size, &offset, &width, &value, &why);
	switch (rng_below(&t->rng, 5)) {
	case 0: {
		struct syncmem_wait arg = { .offset = offset, .size = width, .expected = value,
					    .deadline_ns = now_ns() + 1000000 };

		op = OP_WAIT;
		ret = xioctl(r.fd, SYNCMEM_IOC_WAIT, &arg);
		break;
	}
	case 1: {
		struct syncmem_wait_async arg = {
			.region_fd = r.fd, .size = width, .offset = offset, .expected = value,
			.deadline_ns = now_ns() + 1000000, .user_data = rng_below(&t->rng, 16),
		};

		op = OP_WAIT_ASYNC;
		ret = xioctl(h.fd, SYNCMEM_IOC_WAIT_ASYNC, &arg);
		break;
	}
	case 2: {
		struct syncmem_handoff arg = { .offset = offset, .size = width, .value = value };

		op = OP_HANDOFF;
		ret = xioctl(r.fd, SYNCMEM_IOC_HANDOFF, &arg);
		break;
	}
	case 3: {
		struct syncmem_on_close arg = {
			.region_fd = r.fd, .size = width, .offset = offset, .value = value,
			.user_data = 2000 + rng_below(&t->rng, 16),
		};

		op = OP_ARM_ON_CLOSE;
		ret = xioctl(h.fd, SYNCMEM_IOC_ARM_ON_CLOSE, &arg);
		break;
	}
	default: {
		/* NOTIFY has no size: only offsets can be wrong. */
		struct syncmem_notify arg = { .count = 1 };

		if (width == 4 && (value || !(offset % 4)) && offset + 4 <= r.size)
			return;
		arg.offset = offset % 4 ? offset : r.size / 4 * 4 + (offset & 3);
		if (rng_chance(&t->rng, 1, 3))
			arg.offset = offset;
		if (!(arg.offset % 4) && arg.offset + 4 <= r.size)
			return;
		op = OP_NOTIFY;
		ret = xioctl(r.fd, SYNCMEM_IOC_NOTIFY, &arg);
		offset = arg.offset;
		break;
	}
	}
	snprintf(what, sizeof(what), "%s: offset %#llx size %u value %#llx in a region of %llu bytes",
		 why, (unsigned long long)offset, width, (unsigned long long)value,
		 (unsigned long long)r.size);
	tally(op, ret, if_stable(EXACTLY(-EINVAL), obj_unchanged(hslot, &h) &&
				 obj_unchanged(rslot, &r)), what);
}

/* Region fd arguments that are not writable region fds. */
static void wrong_fd_kinds(struct thread_ctx *t)
{
	enum kind kinds[] = { K_HANDLE, K_EVENTFD, K_OTHER, K_REGION };
	struct obj h, o = { .fd = TABLE_FD_LIMIT - 1, .kind = K_FREE };
	int hslot, oslot = -1;
	bool arm = rng_chance(&t->rng, 1, 2), stable;
	long want, ret;
	char what[120];

	if (!obj_pick(&t->rng, K_HANDLE, &h, &hslot))
		return;
	if (rng_chance(&t->rng, 4, 5) &&
	    !obj_pick(&t->rng, kinds[rng_below(&t->rng, 4)], &o, &oslot))
		return;
	if (o.kind == K_REGION && !o.rdonly)
		return;
	/* Not an fd: -EBADF; not a region: -EINVAL; read-only for ARM: -EBADF. */
	want = o.kind == K_FREE ? -EBADF : o.kind == K_REGION ? -EBADF : -EINVAL;
	if (arm) {
		struct syncmem_on_close arg = { .region_fd = o.fd, .size = 4,
						.user_data = 3000 + rng_below(&t->rng, 16) };

		ret = xioctl(h.fd, SYNCMEM_IOC_ARM_ON_CLOSE, &arg);
	} else {
		struct syncmem_wait_async arg = { .region_fd = o.fd, .size = 4,
						  .expected = 0xdeadbeef,
						  .deadline_ns = SYNCMEM_NO_DEADLINE };

		if (o.kind == K_REGION)
			return;	/* a read-only region fd is fine for waits */
		ret = xioctl(h.fd, SYNCMEM_IOC_WAIT_ASYNC, &arg);
	}
	stable = obj_unchanged(hslot, &h) && (oslot < 0 || obj_unchanged(oslot, &o));
	snprintf(what, sizeof(what), "region_fd %d is %s", o.fd,
		 o.kind == K_FREE ? "not open" : o.kind == K_REGION ? "a read-only region fd" :
		 o.kind == K_HANDLE ? "a handle" : "not syncmem's");
	tally(arm ? OP_ARM_ON_CLOSE : OP_WAIT_ASYNC, ret, if_stable(EXACTLY(want), stable), what);
}

/* Random bytes for a real command: any documented result. */
static void garbage(struct thread_ctx *t)
{
	unsigned int i = (unsigned int)rng_below(&t->rng, NCMDS);
	union {
		uint64_t words[64];
		struct syncmem_wait wait;
		struct syncmem_region_open open;
	} buf;
	struct obj o;
	int slot = -1, fd;
	long ret;

	for (size_t k = 0; k < sizeof(buf.words) / sizeof(buf.words[0]); k++)
		buf.words[k] = rng_chance(&t->rng, 1, 2) ? rng_next(&t->rng) : rng_below(&t->rng, 16);
	if (cmds[i].kind == K_HANDLE) {
		fd = scratch_handle(t);
		if (fd < 0)
			return;
	} else {
		if (!obj_pick(&t->rng, K_REGION, &o, &slot))
			return;
		fd = o.fd;
		if (cmds[i].op == OP_WAIT) {
			/* Keep the sleep short even if the garbage matches the word. */
			buf.wait.deadline_ns = now_ns() + rng_below(&t->rng, 1000000);
		}
	}
	ret = xioctl(fd, cmds[i].cmd, &buf);
	if (cmds[i].op == OP_REGION_OPEN && ret >= 0)
		obj_add(&t->rng, (int)ret, K_REGION, obj_new_rid(), buf.open.size,
			buf.open.flags & SYNCMEM_REGION_RDONLY);
	if (cmds[i].op == OP_HANDLE_OPEN && ret >= 0)
		obj_add(&t->rng, (int)ret, K_HANDLE, 0, 0, true);
	tally(cmds[i].op, ret, if_stable(DOCUMENTED, slot < 0 || obj_unchanged(slot, &o)),
	      "random bytes");
	if (cmds[i].kind == K_HANDLE && rng_chance(&t->rng, 1, 8)) {
		struct syncmem_completion recs[16];

		while (read(fd, recs, sizeof(recs)) > 0)
			;
	}
}

void op_invalid(struct thread_ctx *t)
{
	switch (rng_below(&t->rng, 18)) {
	case 0: case 1:
		unknown_ioctl(t);
		break;
	case 2: case 3:
		bad_struct_pointer(t);
		break;
	case 4:
		open_into_readonly_memory(t);
		break;
	case 5:
		bad_name_pointer(t);
		break;
	case 6: case 7: case 8:
		bad_flags(t);
		break;
	case 9: case 10: case 11:
		bad_words(t);
		break;
	case 12:
		wrong_fd_kinds(t);
		break;
	case 13: case 14:
		op_introspect_invalid(t);
		break;
	default:
		garbage(t);
		break;
	}
}
