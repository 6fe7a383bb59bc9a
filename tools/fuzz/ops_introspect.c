// SPDX-License-Identifier: GPL-2.0
/*
 * Introspection: WAITERS (of the whole region, of one word, from a cursor
 * anywhere, and a long list read in pages), WHO, OBJECT_NAME, OBJECTS and
 * ARMED on the table's regions, read-only ones included, while the other
 * threads and processes queue, wake, cancel, hand off and kill the waiters
 * listed and arm, disarm and run the actions listed;
 * the same calls with one defect each and the errno documented for it; and
 * /proc/self/fdinfo of the table's fds, read whole in pieces of any size.
 *
 * Others change the regions meanwhile, so an answer is checked for what
 * holds whatever they did: entries in (offset, position) order, positions
 * consecutive from the cursor in each word's queue, words inside the region
 * and aligned, flags that agree with the other fields, counts that agree
 * with totals, names printable and NUL-padded, every output field written.
 * The ledger (ledger.c) checks the same calls exactly on its own region.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

#define WAITER_FLAGS_KNOWN	(SYNCMEM_WAITER_ASYNC | SYNCMEM_WAITER_OBSERVER | \
				 SYNCMEM_WAITER_OWNER | SYNCMEM_WAITER_AWAY)

/* A word of @width bytes at @offset wholly inside a region of @size, aligned. */
static bool word_fits(uint64_t offset, uint32_t width, uint64_t size)
{
	return !(offset % width) && offset < size && width <= size - offset;
}

/* Judge @ret against a few allowed results (the first is the one expected). */
static bool one_of(enum op op, long ret, bool stable, const char *what, int n, const long *ok)
{
	if (!stable)
		return tally(op, ret, UNJUDGED, what);
	for (int i = 0; i < n; i++)
		if (ret == ok[i])
			return tally(op, ret, DOCUMENTED, what);
	return tally(op, ret, EXACTLY(ok[0]), what);
}

#define ONE_OF(op, ret, stable, what, ...) \
	one_of(op, ret, stable, what, sizeof((long[]){ __VA_ARGS__ }) / sizeof(long), \
	       (long[]){ __VA_ARGS__ })

static bool insane(const char *call, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A finding about an answer that cannot be right; returns false. */
static bool insane(const char *call, const char *what, const char *fmt, ...)
{
	char msg[240];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	finding("%s answered %s: %s", call, msg, what);
	return false;
}

/* ---- checking answers --------------------------------------------------- */

static bool entry_before(uint64_t offset, uint32_t position, uint64_t off2, uint32_t pos2)
{
	return offset < off2 || (offset == off2 && position < pos2);
}

bool waiters_sane(const struct syncmem_waiter_list *in, const struct syncmem_waiter_list *out,
		  const struct syncmem_waiter_entry *e, uint64_t size, const char *what)
{
	bool word = in->flags & SYNCMEM_WAITERS_WORD, from = in->flags & SYNCMEM_WAITERS_FROM;
	uint64_t now = now_ns();

	if (out->entries != in->entries || out->flags != in->flags || out->offset != in->offset ||
	    out->position != in->position || out->pad != in->pad)
		return insane("WAITERS", what, "with its input fields changed (flags %#x offset %#llx position %u)",
			      out->flags, (unsigned long long)out->offset, out->position);
	if (out->count != (out->total < in->count ? out->total : in->count))
		return insane("WAITERS", what, "%u entries of %u asked with a total of %llu",
			      out->count, in->count, (unsigned long long)out->total);
	for (uint32_t i = 0; i < out->count; i++) {
		const struct syncmem_waiter_entry *w = &e[i], *p = i ? &e[i - 1] : NULL;
		uint32_t first = from && w->offset == in->offset ? in->position : 0;

		if ((w->size != 4 && w->size != 8) || !word_fits(w->offset, w->size, size))
			return insane("WAITERS", what, "entry %u: a %u-byte word at %#llx (region of %llu bytes)",
				      i, w->size, (unsigned long long)w->offset,
				      (unsigned long long)size);
		if (w->flags & ~WAITER_FLAGS_KNOWN || w->pad)
			return insane("WAITERS", what, "entry %u: flags %#x pad %u", i, w->flags, w->pad);
		if ((w->flags & SYNCMEM_WAITER_ASYNC) && w->tid)
			return insane("WAITERS", what, "entry %u: an async wait with tid %d", i, w->tid);
		if (!(w->flags & SYNCMEM_WAITER_OWNER) != !w->owner ||
		    (w->owner && w->size != 8))
			return insane("WAITERS", what, "entry %u: flags %#x owner %#llx size %u", i,
				      w->flags, (unsigned long long)w->owner, w->size);
		if (w->pid < 0 || w->tid < 0)
			return insane("WAITERS", what, "entry %u: pid %d tid %d", i, w->pid, w->tid);
		if (word && w->offset != in->offset)
			return insane("WAITERS", what, "entry %u at %#llx for the word at %#llx",
				      i, (unsigned long long)w->offset,
				      (unsigned long long)in->offset);
		if (from && entry_before(w->offset, w->position, in->offset, in->position))
			return insane("WAITERS", what, "entry %u at (%#llx, %u), before the cursor", i,
				      (unsigned long long)w->offset, w->position);
		if (p && p->offset > w->offset)
			return insane("WAITERS", what, "entry %u at %#llx after one at %#llx", i,
				      (unsigned long long)w->offset, (unsigned long long)p->offset);
		if (p && p->offset == w->offset) {
			if (w->position != p->position + 1)
				return insane("WAITERS", what, "entry %u of word %#llx at position %u after %u",
					      i, (unsigned long long)w->offset, w->position,
					      p->position);
			if (w->since_ns < p->since_ns)
				return insane("WAITERS", what, "entry %u (position %u) queued at %llu, before the one ahead of it (%llu)",
					      i, w->position, (unsigned long long)w->since_ns,
					      (unsigned long long)p->since_ns);
		} else if (w->position != first) {
			return insane("WAITERS", what, "the first entry of word %#llx (%u) at position %u, not %u",
				      (unsigned long long)w->offset, i, w->position, first);
		}
		/* Stamps are made strictly increasing per bucket: a little ahead at most. */
		if (w->since_ns > now + 1000000)
			return insane("WAITERS", what, "entry %u queued at %llu, %llu ns from now", i,
				      (unsigned long long)w->since_ns,
				      (unsigned long long)(w->since_ns - now));
	}
	return true;
}

bool who_sane(const struct syncmem_who *in, const struct syncmem_who *out, const char *what)
{
	uint64_t id = out->word & SYNCMEM_OWNER_ID;
	uint32_t want = id == 0 ? SYNCMEM_WHO_FREE :
			id == SYNCMEM_OWNER_NOBODY ? SYNCMEM_WHO_NOBODY :
			id == SYNCMEM_OWNER_GONE ? SYNCMEM_WHO_GONE :
			id == SYNCMEM_OWNER_NOTRECOVERABLE ? SYNCMEM_WHO_NOTRECOVERABLE :
			SYNCMEM_WHO_ALIVE;

	if (out->offset != in->offset)
		return insane("WHO", what, "with offset %#llx", (unsigned long long)out->offset);
	if (out->state != want && !(want == SYNCMEM_WHO_ALIVE && out->state == SYNCMEM_WHO_DEAD))
		return insane("WHO", what, "state %u for the word %#llx", out->state,
			      (unsigned long long)out->word);
	if (out->flags & ~SYNCMEM_WHO_PROCESS)
		return insane("WHO", what, "flags %#x", out->flags);
	if (out->state != SYNCMEM_WHO_ALIVE && (out->pid || out->tid || out->flags))
		return insane("WHO", what, "state %u with pid %d tid %d flags %#x", out->state,
			      out->pid, out->tid, out->flags);
	if (out->pid < 0 || out->tid < 0 || ((out->flags & SYNCMEM_WHO_PROCESS) && out->tid))
		return insane("WHO", what, "pid %d tid %d flags %#x", out->pid, out->tid, out->flags);
	return true;
}

static bool printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

bool objects_sane(const struct syncmem_object_list *in, const struct syncmem_object_list *out,
		  const struct syncmem_object_entry *e, uint64_t size, const char *what)
{
	if (out->entries != in->entries || out->flags != in->flags)
		return insane("OBJECTS", what, "with its input fields changed (flags %#x)", out->flags);
	if (out->count != (out->total < in->count ? out->total : in->count) ||
	    out->total > SYNCMEM_OBJECTS_MAX)
		return insane("OBJECTS", what, "%u entries of %u asked with a total of %llu",
			      out->count, in->count, (unsigned long long)out->total);
	for (uint32_t i = 0; i < out->count; i++) {
		const struct syncmem_object_entry *o = &e[i];

		if (o->offset % 4 || o->offset >= size || !o->size || o->size > size - o->offset)
			return insane("OBJECTS", what, "entry %u: %llu bytes at %#llx (region of %llu bytes)",
				      i, (unsigned long long)o->size, (unsigned long long)o->offset,
				      (unsigned long long)size);
		if (i && o->offset <= e[i - 1].offset)
			return insane("OBJECTS", what, "entry %u at %#llx after one at %#llx", i,
				      (unsigned long long)o->offset,
				      (unsigned long long)e[i - 1].offset);
		if (o->kind < SYNCMEM_KIND_WORD || o->kind > SYNCMEM_KIND_MAX)
			return insane("OBJECTS", what, "entry %u: kind %u", i, o->kind);
		if (!o->name_len || o->name_len > SYNCMEM_OBJECT_NAME_MAX ||
		    !printable(o->name, o->name_len))
			return insane("OBJECTS", what, "entry %u: a name of %u bytes, not all printable",
				      i, o->name_len);
		for (size_t k = o->name_len; k < sizeof(o->name); k++)
			if (o->name[k])
				return insane("OBJECTS", what, "entry %u: name of %u bytes, byte %zu is %#x",
					      i, o->name_len, k, (unsigned char)o->name[k]);
	}
	return true;
}

#define ARMED_FLAGS_KNOWN	(SYNCMEM_ARMED_IF_EQUAL | SYNCMEM_ARMED_ADD)

/* ARMED's argument has OBJECTS' layout: one struct serves both calls. */
_Static_assert(sizeof(struct syncmem_armed_list) == sizeof(struct syncmem_object_list) &&
	       offsetof(struct syncmem_armed_list, count) ==
	       offsetof(struct syncmem_object_list, count) &&
	       offsetof(struct syncmem_armed_list, total) ==
	       offsetof(struct syncmem_object_list, total), "list arguments alike");

bool armed_sane(const struct syncmem_object_list *in, const struct syncmem_object_list *out,
		const struct syncmem_armed_entry *e, uint64_t size, const char *what)
{
	if (out->entries != in->entries || out->flags != in->flags)
		return insane("ARMED", what, "with its input fields changed (flags %#x)", out->flags);
	if (out->count != (out->total < in->count ? out->total : in->count))
		return insane("ARMED", what, "%u entries of %u asked with a total of %llu",
			      out->count, in->count, (unsigned long long)out->total);
	for (uint32_t i = 0; i < out->count; i++) {
		const struct syncmem_armed_entry *a = &e[i];
		uint64_t max = a->size == 4 ? UINT32_MAX : UINT64_MAX;

		if ((a->size != 4 && a->size != 8) || !word_fits(a->offset, a->size, size))
			return insane("ARMED", what, "entry %u: a %u-byte word at %#llx (region of %llu bytes)",
				      i, a->size, (unsigned long long)a->offset,
				      (unsigned long long)size);
		if ((a->flags & ~ARMED_FLAGS_KNOWN) || a->flags == ARMED_FLAGS_KNOWN || a->pad)
			return insane("ARMED", what, "entry %u: flags %#x pad %u", i, a->flags, a->pad);
		if (!(a->flags & SYNCMEM_ARMED_IF_EQUAL) && a->expected)
			return insane("ARMED", what, "entry %u: expected %#llx with flags %#x", i,
				      (unsigned long long)a->expected, a->flags);
		/* Arming refuses a 4-byte word's value or expected above 32 bits. */
		if (a->value > max || a->expected > max)
			return insane("ARMED", what, "entry %u: a %u-byte word's value %#llx expected %#llx",
				      i, a->size, (unsigned long long)a->value,
				      (unsigned long long)a->expected);
		if (a->pid < 0)
			return insane("ARMED", what, "entry %u: pid %d", i, a->pid);
	}
	return true;
}

/* ---- choosing arguments ------------------------------------------------- */

/* An array length: mostly small, sometimes the largest allowed. */
static uint32_t pick_count(struct rng *r)
{
	static const uint32_t counts[] = { 0, 1, 1, 2, 3, 8, 32, 256, SYNCMEM_LIST_MAX };

	if (rng_chance(r, 1, 4))
		return 1 + (uint32_t)rng_below(r, 64);
	return counts[rng_below(r, sizeof(counts) / sizeof(counts[0]))];
}

/* A cursor offset: a hot word, anywhere (unaligned too), the end, far beyond. */
static uint64_t pick_cursor(struct rng *r, uint64_t size)
{
	switch (rng_below(r, 6)) {
	case 0: case 1:
		return pick_offset(r, size, 4);
	case 2:
		return rng_below(r, size + 8);
	case 3:
		return size;
	case 4:
		return UINT64_MAX - rng_below(r, 8);
	default:
		return 1ull << (32 + rng_below(r, 32));
	}
}

static uint32_t pick_position(struct rng *r)
{
	switch (rng_below(r, 6)) {
	case 0: case 1: case 2:
		return 0;
	case 3:
		return 1 + (uint32_t)rng_below(r, 4);
	case 4:
		return UINT32_MAX - (uint32_t)rng_below(r, 2);
	default:
		return (uint32_t)rng_next(r);
	}
}

/* A valid object name into @buf (at least 64 bytes): its length. */
static uint32_t valid_name(struct rng *r, char *buf)
{
	static const char *const names[] = { "jobs", "queue lock", "fuzz-gate", "a", "~{|}\\\"'",
					     "pool of blocks", "x" };
	uint32_t len;

	memset(buf, 0, 64);
	switch (rng_below(r, 4)) {
	case 0:
		len = SYNCMEM_OBJECT_NAME_MAX;
		break;
	case 1:
		len = 1 + (uint32_t)rng_below(r, SYNCMEM_OBJECT_NAME_MAX);
		break;
	default: {
		const char *n = names[rng_below(r, sizeof(names) / sizeof(names[0]))];

		len = (uint32_t)strlen(n);
		memcpy(buf, n, len);
		return len;
	}
	}
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (char)(0x20 + rng_below(r, 95));
	return len;
}

/* Bytes an object spans from @offset in a region of @size: all inside. */
static uint64_t pick_span(struct rng *r, uint64_t offset, uint64_t size)
{
	uint64_t room = size - offset;

	switch (rng_below(r, 5)) {
	case 0:
		return 1;
	case 1:
		return room < 8 ? room : 8;
	case 2:
		return room < 64 ? room : 64;
	case 3:
		return room;
	default:
		return 1 + rng_below(r, room);
	}
}

uint32_t name_defects(bool remove)
{
	return remove ? 7 : 12;
}

void object_name_args(struct rng *r, uint64_t size, uint64_t offset, bool remove, int defect,
		      char *buf, struct syncmem_object_name *arg, long *want, const char **why)
{
	static const char bad_bytes[] = { 0x00, 0x01, '\t', '\n', 0x1f, 0x7f, (char)0x80,
					  (char)0xc3, (char)0xff };

	*arg = (struct syncmem_object_name){ .offset = offset };
	*want = 0;
	*why = remove ? "removal" : "name";
	if (!remove) {
		arg->name_len = valid_name(r, buf);
		arg->name = (uintptr_t)buf;
		arg->kind = SYNCMEM_KIND_WORD + (uint32_t)rng_below(r, SYNCMEM_KIND_MAX);
		arg->size = pick_span(r, offset, size);
	}
	if (defect < 0)
		return;
	*want = -EINVAL;
	switch (defect) {
	case 0:
		arg->flags = 1u << rng_below(r, 32);
		*why = "flags not zero";
		break;
	case 1:
		arg->pad = 1 + (uint32_t)rng_below(r, UINT32_MAX);
		*why = "pad not zero";
		break;
	case 2:
		arg->offset = offset + 1 + rng_below(r, 3);
		*why = "offset not a multiple of 4";
		break;
	case 3:
		if (rng_chance(r, 1, 2))
			arg->offset = (size + 3) / 4 * 4;
		else if (rng_chance(r, 1, 2))
			arg->offset = UINT64_MAX - 3;
		else
			arg->offset = 1ull << (32 + rng_below(r, 32));
		*why = "offset outside the region";
		break;
	case 4:
		if (remove) {
			arg->name_len = 1 + (uint32_t)rng_below(r, SYNCMEM_OBJECT_NAME_MAX);
			*why = "removal with a name length";
		} else {
			arg->name_len = 0;
			*why = "name length 0";
		}
		break;
	case 5:
		if (remove) {
			arg->kind = SYNCMEM_KIND_WORD + (uint32_t)rng_below(r, SYNCMEM_KIND_MAX);
			*why = "removal with a kind";
		} else {
			arg->name_len = SYNCMEM_OBJECT_NAME_MAX + 1;
			if (rng_chance(r, 1, 2))
				arg->name_len += (uint32_t)rng_below(r, 1u << 20);
			*why = "name longer than SYNCMEM_OBJECT_NAME_MAX";
		}
		break;
	case 6:
		if (remove) {
			arg->size = 1 + rng_below(r, size);
			*why = "removal with a size";
		} else {
			arg->kind = rng_chance(r, 1, 2) ? 0 : rng_chance(r, 1, 2) ?
				    SYNCMEM_KIND_MAX + 1 : (uint32_t)rng_next(r) | 0x10;
			*why = "unknown kind";
		}
		break;
	case 7:
		arg->size = 0;
		*why = "size 0";
		break;
	case 8:
		arg->size = rng_chance(r, 1, 2) ? size - offset + 1 : UINT64_MAX - rng_below(r, 4);
		*why = "object past the end of the region";
		break;
	case 9:
		buf[rng_below(r, arg->name_len)] = bad_bytes[rng_below(r, sizeof(bad_bytes))];
		*why = "a byte of the name not printable ASCII";
		break;
	case 10:
		/* NULL is a removal with a name length: -EINVAL too. */
		arg->name = (uintptr_t)bad_pointer(r, false);
		if (arg->name_len < 5)
			arg->name_len = 5;
		*want = arg->name ? -EFAULT : -EINVAL;
		*why = "name pointer faults";
		break;
	default:
		/* Printable, but the name may not be read past SYNCMEM_OBJECT_NAME_MAX. */
		arg->name_len = SYNCMEM_OBJECT_NAME_MAX + 1;
		memset(buf, 'n', 64);
		*why = "48 printable bytes";
		break;
	}
}

/* ---- calls on the table's regions --------------------------------------- */

static void describe(char *what, size_t len, const char *call, const struct obj *o)
{
	snprintf(what, len, "%s on fd %d (%s, %llu bytes)", call, o->fd, o->rdonly ? "ro" : "rw",
		 (unsigned long long)o->size);
}

void introspect_waiters(struct thread_ctx *t, const struct obj *o, int slot, uint64_t offset)
{
	uint32_t count = pick_count(&t->rng);
	struct syncmem_waiter_entry *e = calloc(count ? count : 1, sizeof(*e));
	bool bad_entries = rng_chance(&t->rng, 1, 16), stable;
	struct syncmem_waiter_list in = { .count = count }, arg;
	char what[220];
	long ret;

	if (!e || !shared->introspect) {
		free(e);
		return;
	}
	if (offset != UINT64_MAX) {
		in.flags = SYNCMEM_WAITERS_WORD;
		in.offset = offset;
	} else {
		switch (rng_below(&t->rng, 4)) {
		case 0:
			break;	/* the whole region */
		case 1:
			in.flags = SYNCMEM_WAITERS_WORD;
			in.offset = pick_offset(&t->rng, o->size,
						rng_chance(&t->rng, 1, 2) ? 4 : 8);
			break;
		case 2:
			in.flags = SYNCMEM_WAITERS_FROM;
			in.offset = pick_cursor(&t->rng, o->size);
			in.position = pick_position(&t->rng);
			break;
		default:
			in.flags = SYNCMEM_WAITERS_WORD | SYNCMEM_WAITERS_FROM;
			in.offset = pick_offset(&t->rng, o->size, 4);
			in.position = pick_position(&t->rng);
			break;
		}
	}
	in.entries = bad_entries ? (uintptr_t)bad_pointer(&t->rng, true) : (uintptr_t)e;
	arg = in;
	ret = xioctl(o->fd, SYNCMEM_IOC_WAITERS, &arg);
	stable = obj_unchanged(slot, o);
	describe(what, sizeof(what), "WAITERS", o);
	snprintf(what + strlen(what), sizeof(what) - strlen(what),
		 " count %u flags %#x offset %#llx position %u entries %s", in.count, in.flags,
		 (unsigned long long)in.offset, in.position, bad_entries ? "bad" : "ok");
	if ((in.flags & SYNCMEM_WAITERS_WORD) && !word_fits(in.offset, 4, o->size))
		ONE_OF(OP_WAITERS, ret, stable, what, -EINVAL);
	else if (bad_entries && count)
		ONE_OF(OP_WAITERS, ret, stable, what, -EFAULT, 0, -ENOMEM);
	else
		ONE_OF(OP_WAITERS, ret, stable, what, 0, -ENOMEM);
	if (ret == 0 && stable && bad_entries && arg.count)
		finding("WAITERS wrote %u entries through a bad pointer and returned 0: %s", arg.count,
			what);
	else if (ret == 0 && stable && !bad_entries)
		waiters_sane(&in, &arg, e, o->size, what);
	free(e);
}

/* A long list read in short pages, each from the entry after the last one. */
static void waiters_pages(struct thread_ctx *t, const struct obj *o, int slot)
{
	uint32_t page = 1 + (uint32_t)rng_below(&t->rng, rng_chance(&t->rng, 1, 2) ? 4 : 64);
	struct syncmem_waiter_entry *e = calloc(page, sizeof(*e));
	struct syncmem_waiter_list in = { .entries = (uintptr_t)e, .count = page }, arg;
	char what[200];
	long ret;

	if (!e)
		return;
	if (rng_chance(&t->rng, 1, 4)) {
		in.flags = SYNCMEM_WAITERS_WORD;
		in.offset = pick_offset(&t->rng, o->size, 4);
		if (!word_fits(in.offset, 4, o->size))
			in.flags = in.offset = 0;
	}
	for (int n = 0; n < 64; n++) {
		bool stable;

		arg = in;
		ret = xioctl(o->fd, SYNCMEM_IOC_WAITERS, &arg);
		stable = obj_unchanged(slot, o);
		describe(what, sizeof(what), "WAITERS", o);
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 " page %d of %u from (%#llx, %u) flags %#x", n, page,
			 (unsigned long long)in.offset, in.position, in.flags);
		if (!ONE_OF(OP_WAITERS, ret, stable, what, 0, -ENOMEM) || ret || !stable ||
		    !waiters_sane(&in, &arg, e, o->size, what) || arg.count < page ||
		    e[arg.count - 1].position == UINT32_MAX)
			break;
		in.flags |= SYNCMEM_WAITERS_FROM;
		in.offset = e[arg.count - 1].offset;
		in.position = e[arg.count - 1].position + 1;
	}
	free(e);
}

void introspect_who(struct thread_ctx *t, const struct obj *o, int slot, uint64_t offset)
{
	struct syncmem_who in = { .offset = offset }, arg;
	char what[160];
	long ret;
	bool stable;

	if (!shared->introspect)
		return;
	if (offset == UINT64_MAX)
		in.offset = pick_offset(&t->rng, o->size, 8);
	/* What the kernel writes holds garbage before. */
	in.word = rng_next(&t->rng);
	in.pid = (int32_t)rng_next(&t->rng);
	in.tid = (int32_t)rng_next(&t->rng);
	in.state = (uint32_t)rng_next(&t->rng);
	arg = in;
	ret = xioctl(o->fd, SYNCMEM_IOC_WHO, &arg);
	stable = obj_unchanged(slot, o);
	describe(what, sizeof(what), "WHO", o);
	snprintf(what + strlen(what), sizeof(what) - strlen(what), " offset %#llx",
		 (unsigned long long)in.offset);
	if (!tally(OP_WHO, ret, if_stable(EXACTLY(word_fits(in.offset, 8, o->size) ? 0 : -EINVAL),
					  stable), what) || ret || !stable)
		return;
	who_sane(&in, &arg, what);
}

void introspect_name(struct thread_ctx *t, const struct obj *o, int slot, uint64_t offset)
{
	bool remove = rng_chance(&t->rng, 1, 4), stable;
	struct syncmem_object_name arg;
	char buf[64], what[220];
	const char *why;
	long want, ret;

	if (!shared->introspect)
		return;
	if (offset == UINT64_MAX)
		offset = rng_chance(&t->rng, 3, 4) ? pick_offset(&t->rng, o->size, 4) :
			 rng_below(&t->rng, (o->size + 3) / 4) * 4;
	if (offset >= o->size)
		offset = 0;
	object_name_args(&t->rng, o->size, offset, remove, -1, buf, &arg, &want, &why);
	ret = xioctl(o->fd, SYNCMEM_IOC_OBJECT_NAME, &arg);
	stable = obj_unchanged(slot, o);
	describe(what, sizeof(what), "OBJECT_NAME", o);
	snprintf(what + strlen(what), sizeof(what) - strlen(what),
		 " %s at %#llx size %llu kind %u name_len %u", why, (unsigned long long)arg.offset,
		 (unsigned long long)arg.size, arg.kind, arg.name_len);
	if (o->rdonly)
		ONE_OF(OP_OBJECT_NAME, ret, stable, what, -EBADF);
	else if (remove)
		ONE_OF(OP_OBJECT_NAME, ret, stable, what, 0, -ENOENT);
	else
		ONE_OF(OP_OBJECT_NAME, ret, stable, what, 0, -ENOSPC, -ENOMEM);
}

/*
 * One OBJECTS or ARMED call (their arguments share one layout) for @count
 * entries of @esize bytes, sometimes through a bad pointer, its result
 * judged. Returns the entries (the caller frees them) when the answer is
 * one to check: 0 through a good pointer on an fd that stayed the same.
 */
static void *list_call(struct thread_ctx *t, const struct obj *o, int slot, unsigned long req,
		       int op, const char *call, uint32_t count, size_t esize,
		       struct syncmem_object_list *in, struct syncmem_object_list *arg,
		       char *what, size_t cap)
{
	void *e = malloc((count ? count : 1) * esize);
	bool bad_entries = rng_chance(&t->rng, 1, 16), stable;
	long ret;

	if (!e || !shared->introspect) {
		free(e);
		return NULL;
	}
	/* Garbage where the kernel writes: it must write every byte, padding too. */
	memset(e, 0xa5, (count ? count : 1) * esize);
	*in = (struct syncmem_object_list){ .count = count };
	in->entries = bad_entries ? (uintptr_t)bad_pointer(&t->rng, true) : (uintptr_t)e;
	in->total = rng_next(&t->rng);
	*arg = *in;
	ret = xioctl(o->fd, req, arg);
	stable = obj_unchanged(slot, o);
	describe(what, cap, call, o);
	snprintf(what + strlen(what), cap - strlen(what), " count %u entries %s", count,
		 bad_entries ? "bad" : "ok");
	if (bad_entries && count)
		ONE_OF(op, ret, stable, what, -EFAULT, 0, -ENOMEM);
	else
		ONE_OF(op, ret, stable, what, 0, -ENOMEM);
	if (ret == 0 && stable && bad_entries && arg->count)
		finding("%s wrote %u entries through a bad pointer and returned 0: %s", call,
			arg->count, what);
	if (ret == 0 && stable && !bad_entries)
		return e;
	free(e);
	return NULL;
}

void introspect_objects(struct thread_ctx *t, const struct obj *o, int slot)
{
	struct syncmem_object_list in, arg;
	struct syncmem_object_entry *e;
	char what[200];

	e = list_call(t, o, slot, SYNCMEM_IOC_OBJECTS, OP_OBJECTS, "OBJECTS", pick_count(&t->rng),
		      sizeof(*e), &in, &arg, what, sizeof(what));
	if (e)
		objects_sane(&in, &arg, e, o->size, what);
	free(e);
}

void introspect_armed(struct thread_ctx *t, const struct obj *o, int slot)
{
	uint32_t count = rng_chance(&t->rng, 1, 8) ? SYNCMEM_LIST_MAX : pick_count(&t->rng);
	struct syncmem_object_list in, arg;
	struct syncmem_armed_entry *e;
	char what[200];

	e = list_call(t, o, slot, SYNCMEM_IOC_ARMED, OP_ARMED, "ARMED", count, sizeof(*e), &in,
		      &arg, what, sizeof(what));
	if (e)
		armed_sane(&in, &arg, e, o->size, what);
	free(e);
}

/* Names at many offsets of one region, past SYNCMEM_OBJECTS_MAX if it has room. */
static void name_many(struct thread_ctx *t, const struct obj *o, int slot)
{
	uint64_t words = o->size / 4, start = rng_below(&t->rng, words ? words : 1);
	unsigned int n = 1 + (unsigned int)rng_below(&t->rng, rng_chance(&t->rng, 1, 4) ?
						      SYNCMEM_OBJECTS_MAX + 16 : 32);
	bool remove = rng_chance(&t->rng, 1, 3);

	for (unsigned int i = 0; i < n && i < words && !should_stop(); i++) {
		struct syncmem_object_name arg = { .offset = (start + i) % words * 4 };
		char name[24], what[160];
		long ret;
		bool stable;

		if (!remove) {
			arg.name_len = (uint32_t)snprintf(name, sizeof(name), "many %u", i);
			arg.name = (uintptr_t)name;
			arg.kind = SYNCMEM_KIND_OTHER;
			arg.size = 4;
		}
		ret = xioctl(o->fd, SYNCMEM_IOC_OBJECT_NAME, &arg);
		stable = obj_unchanged(slot, o);
		describe(what, sizeof(what), "OBJECT_NAME", o);
		snprintf(what + strlen(what), sizeof(what) - strlen(what), " %s %u of %u at %#llx",
			 remove ? "removal" : "name", i, n, (unsigned long long)arg.offset);
		if (o->rdonly)
			ONE_OF(OP_OBJECT_NAME, ret, stable, what, -EBADF);
		else if (remove)
			ONE_OF(OP_OBJECT_NAME, ret, stable, what, 0, -ENOENT);
		else
			ONE_OF(OP_OBJECT_NAME, ret, stable, what, 0, -ENOSPC, -ENOMEM);
		if (!stable || o->rdonly)
			break;
	}
}

void op_introspect(struct thread_ctx *t, const struct obj *o, int slot)
{
	if (!shared->introspect)
		return;
	switch (rng_below(&t->rng, 18)) {
	case 0: case 1: case 2: case 3:
		introspect_waiters(t, o, slot, UINT64_MAX);
		break;
	case 4: case 5:
		waiters_pages(t, o, slot);
		break;
	case 6: case 7: case 8:
		introspect_who(t, o, slot, UINT64_MAX);
		break;
	case 9: case 10: case 11:
		introspect_name(t, o, slot, UINT64_MAX);
		break;
	case 12:
		if (rng_chance(&t->rng, 1, 2))
			name_many(t, o, slot);
		else
			introspect_name(t, o, slot, UINT64_MAX);
		break;
	case 13: case 14: case 15:
		introspect_objects(t, o, slot);
		break;
	default:
		introspect_armed(t, o, slot);
		break;
	}
}

/* ---- one defect each ---------------------------------------------------- */

static void waiters_defect(struct thread_ctx *t, const struct obj *o, int slot)
{
	struct syncmem_waiter_entry e[4];
	struct syncmem_waiter_list arg = { .entries = (uintptr_t)e, .count = 4 };
	const char *why;
	char what[200];
	long ret;

	switch (rng_below(&t->rng, 7)) {
	case 0:
		arg.flags = bad_bits(t, SYNCMEM_WAITERS_FLAGS);
		why = "unknown flags";
		break;
	case 1:
		arg.pad = 1 + (uint32_t)rng_below(&t->rng, UINT32_MAX);
		why = "pad not zero";
		break;
	case 2:
		arg.count = SYNCMEM_LIST_MAX + 1 + (rng_chance(&t->rng, 1, 2) ? 0 :
			    (uint32_t)rng_below(&t->rng, UINT32_MAX - SYNCMEM_LIST_MAX - 1));
		why = "count above SYNCMEM_LIST_MAX";
		break;
	case 3:
		arg.offset = 1 + rng_below(&t->rng, UINT64_MAX);
		why = "an offset without WORD or FROM";
		break;
	case 4:
		arg.position = 1 + (uint32_t)rng_below(&t->rng, UINT32_MAX);
		if (rng_chance(&t->rng, 1, 2)) {
			arg.flags = SYNCMEM_WAITERS_WORD;
			arg.offset = pick_offset(&t->rng, o->size, 4);
		}
		why = "a position without FROM";
		break;
	default:
		arg.flags = SYNCMEM_WAITERS_WORD |
			    (rng_chance(&t->rng, 1, 3) ? SYNCMEM_WAITERS_FROM : 0);
		switch (rng_below(&t->rng, 4)) {
		case 0:
			arg.offset = pick_offset(&t->rng, o->size, 4) + 1 + rng_below(&t->rng, 3);
			why = "WORD at an offset not a multiple of 4";
			break;
		case 1:
			arg.offset = o->size / 4 * 4;
			why = "WORD past the end of the region";
			break;
		case 2:
			arg.offset = UINT64_MAX - 3;
			why = "WORD at a huge offset (wrapping)";
			break;
		default:
			arg.offset = 1ull << (32 + rng_below(&t->rng, 32));
			why = "WORD at a huge offset";
			break;
		}
		break;
	}
	ret = xioctl(o->fd, SYNCMEM_IOC_WAITERS, &arg);
	describe(what, sizeof(what), "WAITERS", o);
	snprintf(what + strlen(what), sizeof(what) - strlen(what),
		 ", %s: count %u flags %#x offset %#llx position %u pad %u", why, arg.count,
		 arg.flags, (unsigned long long)arg.offset, arg.position, arg.pad);
	tally(OP_WAITERS, ret, if_stable(EXACTLY(-EINVAL), obj_unchanged(slot, o)), what);
}

static void who_defect(struct thread_ctx *t, const struct obj *o, int slot)
{
	struct syncmem_who arg = { .offset = pick_offset(&t->rng, o->size, 8) };
	const char *why;
	char what[200];
	long ret;

	switch (rng_below(&t->rng, 5)) {
	case 0:
		arg.flags = bad_bits(t, 0);
		why = "flags not zero";
		break;
	case 1:
		arg.offset += 1 + rng_below(&t->rng, 7);
		why = "offset not a multiple of 8";
		break;
	case 2:
		arg.offset = o->size / 8 * 8;
		why = "word past the end of the region";
		break;
	case 3:
		arg.offset = UINT64_MAX - 7;
		why = "a huge offset (wrapping)";
		break;
	default:
		arg.offset = 1ull << (32 + rng_below(&t->rng, 32));
		why = "a huge offset";
		break;
	}
	ret = xioctl(o->fd, SYNCMEM_IOC_WHO, &arg);
	describe(what, sizeof(what), "WHO", o);
	snprintf(what + strlen(what), sizeof(what) - strlen(what), ", %s: offset %#llx flags %#x",
		 why, (unsigned long long)arg.offset, arg.flags);
	tally(OP_WHO, ret, if_stable(EXACTLY(-EINVAL), obj_unchanged(slot, o)), what);
}

static void name_defect(struct thread_ctx *t, const struct obj *o, int slot)
{
	bool remove = rng_chance(&t->rng, 1, 4);
	uint64_t offset = pick_offset(&t->rng, o->size, 4);
	struct syncmem_object_name arg;
	char buf[64], what[240];
	const char *why;
	long want, ret;
	int defect = (int)rng_below(&t->rng, name_defects(remove));

	if (offset >= o->size)
		offset = 0;
	object_name_args(&t->rng, o->size, offset, remove, defect, buf, &arg, &want, &why);
	ret = xioctl(o->fd, SYNCMEM_IOC_OBJECT_NAME, &arg);
	describe(what, sizeof(what), "OBJECT_NAME", o);
	snprintf(what + strlen(what), sizeof(what) - strlen(what),
		 ", %s: offset %#llx size %llu kind %u name_len %u flags %#x pad %#x", why,
		 (unsigned long long)arg.offset, (unsigned long long)arg.size, arg.kind,
		 arg.name_len, arg.flags, arg.pad);
	/* A read-only fd is refused whatever else is wrong. */
	tally(OP_OBJECT_NAME, ret, if_stable(EXACTLY(o->rdonly ? -EBADF : want),
					     obj_unchanged(slot, o)), what);
}

/* OBJECTS or ARMED (one argument layout) with one defect: exactly -EINVAL. */
static void list_defect(struct thread_ctx *t, const struct obj *o, int slot, unsigned long req,
			int op, const char *call)
{
	/* Room for two entries of either call. */
	union {
		struct syncmem_object_entry objects[2];
		struct syncmem_armed_entry armed[2];
	} e;
	struct syncmem_object_list arg = { .entries = (uintptr_t)&e, .count = 2 };
	const char *why;
	char what[160];
	long ret;

	if (rng_chance(&t->rng, 1, 2)) {
		arg.flags = bad_bits(t, 0);
		why = "flags not zero";
	} else {
		arg.count = SYNCMEM_LIST_MAX + 1 + (rng_chance(&t->rng, 1, 2) ? 0 :
			    (uint32_t)rng_below(&t->rng, UINT32_MAX - SYNCMEM_LIST_MAX - 1));
		why = "count above SYNCMEM_LIST_MAX";
	}
	ret = xioctl(o->fd, req, &arg);
	describe(what, sizeof(what), call, o);
	snprintf(what + strlen(what), sizeof(what) - strlen(what), ", %s: count %u flags %#x",
		 why, arg.count, arg.flags);
	tally(op, ret, if_stable(EXACTLY(-EINVAL), obj_unchanged(slot, o)), what);
}

void op_introspect_invalid(struct thread_ctx *t)
{
	struct obj o;
	int slot;

	if (!shared->introspect || !obj_pick(&t->rng, K_REGION, &o, &slot))
		return;
	switch (rng_below(&t->rng, 9)) {
	case 0: case 1: case 2:
		waiters_defect(t, &o, slot);
		break;
	case 3: case 4:
		who_defect(t, &o, slot);
		break;
	case 5: case 6:
		name_defect(t, &o, slot);
		break;
	case 7:
		list_defect(t, &o, slot, SYNCMEM_IOC_OBJECTS, OP_OBJECTS, "OBJECTS");
		break;
	default:
		list_defect(t, &o, slot, SYNCMEM_IOC_ARMED, OP_ARMED, "ARMED");
		break;
	}
}

/* ---- fdinfo ------------------------------------------------------------- */

/* One line's "key=value" fields and words ("async"); false if it does not parse. */
static bool fdinfo_fields(char *text, struct fdinfo_entry *e)
{
	char *save, *tok;

	*e = (struct fdinfo_entry){ .pid = -1, .tid = -1 };
	for (tok = strtok_r(text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '='), *end;
		unsigned long long v;

		if (!eq) {
			if (!strcmp(tok, "async"))
				e->async = true;
			else if (!strcmp(tok, "observer"))
				e->observer = true;
			else if (strcmp(tok, "away") && strcmp(tok, "add"))
				return false;
			continue;
		}
		*eq = 0;
		v = strtoull(eq + 1, &end, 0);
		if (end == eq + 1 || *end)
			return false;
		if (!strcmp(tok, "region"))
			e->region = v;
		else if (!strcmp(tok, "offset"))
			e->offset = v;
		else if (!strcmp(tok, "position"))
			e->position = (uint32_t)v;
		else if (!strcmp(tok, "pid"))
			e->pid = (int32_t)v;
		else if (!strcmp(tok, "tid"))
			e->tid = (int32_t)v;
		else if (!strcmp(tok, "size"))
			e->size = (uint32_t)v;
		else if (!strcmp(tok, "user_data"))
			e->user_data = v;
		else if (!strcmp(tok, "value"))
			e->value = v;
		else if (!strcmp(tok, "owner"))
			e->owner = v;
		else if (!strcmp(tok, "since"))
			e->since = v;
	}
	return true;
}

static bool malformed(struct fdinfo *fi, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Note why the text is malformed in @fi->bad; returns false. */
static bool malformed(struct fdinfo *fi, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fi->bad, sizeof(fi->bad), fmt, ap);
	va_end(ap);
	return false;
}

/* Parse the text of an fdinfo file into @fi; false (@fi->bad says why) if it is malformed. */
static bool fdinfo_parse(char *text, size_t len, struct fdinfo *fi)
{
	*fi = (struct fdinfo){ .ino = -1, .named = -1, .size = -1, .mode = -1, .rdonly = -1,
			       .objects = -1, .armed = -1, .waiters = -1, .eventfd = -1,
			       .outstanding = -1 };
	if (len && text[len - 1] != '\n')
		return malformed(fi, "text of %zu bytes that does not end a line", len);
	/*
	 * Lines stay lines, in ASCII: no control bytes but tabs and newlines,
	 * nothing above 0x7e (a region's name comes with \xHH escapes).
	 */
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)text[i] < 0x20 || (unsigned char)text[i] >= 0x7f) &&
		    text[i] != '\t' && text[i] != '\n')
			return malformed(fi, "byte %#x at %zu of %zu", (unsigned char)text[i], i, len);
	for (char *line = text, *next; line < text + len; line = next) {
		char *nl = strchr(line, '\n'), *value, *end;
		int64_t *field = NULL;
		int base = 10;

		*nl = 0;
		next = nl + 1;
		if (strncmp(line, "syncmem-", 8)) {
			if (!strchr(line, ':'))
				return malformed(fi, "a line without a key: \"%.60s\"", line);
			continue;
		}
		value = strstr(line, ":\t");
		if (!value)
			return malformed(fi, "a line without \":\\t\": \"%.60s\"", line);
		*value = 0;
		value += 2;
		line += 8;
		if (!strcmp(line, "region")) {
			fi->region = true;
			field = &fi->ino;
		} else if (!strcmp(line, "name")) {
			fi->name = true;
		} else if (!strcmp(line, "named")) {
			field = &fi->named;
		} else if (!strcmp(line, "size")) {
			field = &fi->size;
		} else if (!strcmp(line, "mode")) {
			field = &fi->mode;
			base = 8;
		} else if (!strcmp(line, "rdonly")) {
			field = &fi->rdonly;
		} else if (!strcmp(line, "objects")) {
			field = &fi->objects;
		} else if (!strcmp(line, "armed")) {
			field = &fi->armed;
		} else if (!strcmp(line, "waiters")) {
			field = &fi->waiters;
		} else if (!strcmp(line, "eventfd")) {
			fi->handle = true;
			field = &fi->eventfd;
		} else if (!strcmp(line, "outstanding")) {
			field = &fi->outstanding;
		} else if (!strcmp(line, "wait") || !strcmp(line, "on-close")) {
			bool wait = line[0] == 'w';
			struct fdinfo_entry e;
			unsigned int *n = wait ? &fi->nwaits : &fi->non_close;

			if (!fdinfo_fields(value, &e))
				return malformed(fi, "a syncmem-%s line that does not parse", line);
			if (wait && *n < FDINFO_MAX)
				fi->waits[*n] = e;
			else if (!wait && *n < FDINFO_WAITS)
				fi->on_close[*n] = e;
			(*n)++;
		}	/* other keys: newer than this fuzzer */
		if (field) {
			long long v = strtoll(value, &end, base);

			if (end == value || *end || v < 0)
				return malformed(fi, "syncmem-%s \"%.30s\"", line, value);
			*field = v;
		}
	}
	return true;
}

long fdinfo_read(struct rng *r, int fd, struct fdinfo *fi)
{
	static const size_t chunks[] = { 1, 7, 64, 1000, 4096, 65536 };
	size_t chunk = chunks[rng_below(r, sizeof(chunks) / sizeof(chunks[0]))];
	size_t cap = 8192, len = 0;
	char path[48], *buf = malloc(cap);
	long ret = 0;
	int f;

	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0) {
		free(buf);
		return -errno;
	}
	for (;;) {
		ssize_t n;

		/* Small pieces for the first 512 bytes only: the rest would take too long. */
		if (len >= 512 && chunk < 4096)
			chunk = 4096;
		if (len + chunk + 1 > cap) {
			char *bigger = realloc(buf, 2 * cap + chunk);

			if (!bigger) {
				ret = -ENOMEM;
				break;
			}
			buf = bigger;
			cap = 2 * cap + chunk;
		}
		n = read(f, buf + len, chunk);
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	close(f);
	buf[len] = 0;
	if (!ret) {
		ret = (long)len;
		fdinfo_parse(buf, len, fi);
	}
	free(buf);
	return ret;
}

/* What a region fd's fdinfo must say, @st its fstat() taken after. */
static void fdinfo_region_check(const struct obj *o, const struct fdinfo *fi,
				const struct stat *st, const char *what)
{
	unsigned int listed = fi->nwaits < FDINFO_MAX ? fi->nwaits : FDINFO_MAX;

	if (!fi->region || fi->handle || fi->named < 0 || fi->size < 0 || fi->mode < 0 ||
	    fi->rdonly < 0 || fi->objects < 0 || fi->waiters < 0 ||
	    fi->non_close != (fi->armed < FDINFO_WAITS ? (fi->armed < 0 ? 0 : fi->armed) :
			      FDINFO_WAITS)) {
		insane("fdinfo", what, "region %d handle %d, fields missing or out of place (%u actions listed of %lld)",
		       fi->region, fi->handle, fi->non_close, (long long)fi->armed);
		return;
	}
	for (unsigned int i = 0; i < fi->non_close && i < FDINFO_WAITS; i++) {
		const struct fdinfo_entry *a = &fi->on_close[i];

		if ((a->size != 4 && a->size != 8) || !word_fits(a->offset, a->size, o->size) ||
		    a->pid < 0) {
			insane("fdinfo", what, "action %u: size %u offset %#llx pid %d", i, a->size,
			       (unsigned long long)a->offset, a->pid);
			return;
		}
	}
	if ((uint64_t)fi->size != o->size || fi->rdonly != o->rdonly || fi->named > 1 ||
	    fi->mode > 0777 || fi->objects > SYNCMEM_OBJECTS_MAX ||
	    (st && (uint64_t)fi->ino != (uint64_t)st->st_ino)) {
		insane("fdinfo", what, "size %lld rdonly %lld named %lld mode %llo objects %lld region %lld (st_ino %llu)",
		       (long long)fi->size, (long long)fi->rdonly, (long long)fi->named,
		       (unsigned long long)fi->mode, (long long)fi->objects, (long long)fi->ino,
		       st ? (unsigned long long)st->st_ino : 0ull);
		return;
	}
	if (fi->nwaits != (fi->waiters < FDINFO_WAITS ? (unsigned int)fi->waiters : FDINFO_WAITS)) {
		insane("fdinfo", what, "%u syncmem-wait lines for %lld waiters (at most %d listed)",
		       fi->nwaits, (long long)fi->waiters, FDINFO_WAITS);
		return;
	}
	for (unsigned int i = 0; i < listed; i++) {
		const struct fdinfo_entry *w = &fi->waits[i], *p = i ? &fi->waits[i - 1] : NULL;

		if ((w->size != 4 && w->size != 8) || !word_fits(w->offset, w->size, o->size) ||
		    w->pid < 0 || w->tid < 0 || (w->async && w->tid)) {
			insane("fdinfo", what, "waiter %u: size %u offset %#llx pid %d tid %d%s", i,
			       w->size, (unsigned long long)w->offset, w->pid, w->tid,
			       w->async ? " async" : "");
			return;
		}
		bool next = p && p->offset == w->offset;

		if ((p && p->offset > w->offset) ||
		    w->position != (next ? p->position + 1 : 0)) {
			insane("fdinfo", what, "waiter %u at (%#llx, %u) after (%#llx, %u)", i,
			       (unsigned long long)w->offset, w->position,
			       p ? (unsigned long long)p->offset : 0ull, p ? p->position : 0);
			return;
		}
	}
}

static void fdinfo_handle_check(const struct fdinfo *fi, const char *what)
{
	unsigned int listed = fi->nwaits < FDINFO_MAX ? fi->nwaits : FDINFO_MAX;

	/* The first pending waits, counted with the unread records under one lock. */
	if (!fi->handle || fi->region || fi->eventfd > 1 || fi->outstanding < 0 ||
	    fi->nwaits > FDINFO_WAITS || fi->nwaits > fi->outstanding) {
		insane("fdinfo", what, "region %d handle %d eventfd %lld outstanding %lld with %u pending listed",
		       fi->region, fi->handle, (long long)fi->eventfd, (long long)fi->outstanding,
		       fi->nwaits);
		return;
	}
	/* The first of its armed actions, counted under the same lock. */
	if (fi->armed < 0 ||
	    fi->non_close != (fi->armed < FDINFO_WAITS ? fi->armed : FDINFO_WAITS)) {
		insane("fdinfo", what, "%u syncmem-on-close lines for %lld actions (at most %d listed)",
		       fi->non_close, (long long)fi->armed, FDINFO_WAITS);
		return;
	}
	for (unsigned int i = 0; i < listed; i++)
		if (fi->waits[i].size != 4 && fi->waits[i].size != 8) {
			insane("fdinfo", what, "async wait %u of size %u", i, fi->waits[i].size);
			return;
		}
	for (unsigned int i = 0; i < fi->non_close && i < FDINFO_WAITS; i++)
		if (fi->on_close[i].size != 4 && fi->on_close[i].size != 8) {
			insane("fdinfo", what, "on-close action %u of size %u", i, fi->on_close[i].size);
			return;
		}
}

void introspect_fdinfo(struct thread_ctx *t, const struct obj *o, int slot)
{
	struct fdinfo *fi = malloc(sizeof(*fi));
	struct stat st;
	char what[120];
	bool stable, have_st;
	long ret;

	if (!fi || !shared->fdinfo) {
		free(fi);
		return;
	}
	snprintf(what, sizeof(what), "/proc/self/fdinfo/%d (%s%s)", o->fd,
		 o->kind == K_HANDLE ? "a handle" : o->kind == K_REGION ? "a region fd" :
		 o->kind == K_EVENTFD ? "an eventfd" : "not syncmem's",
		 o->kind == K_REGION ? o->rdonly ? ", ro" : ", rw" : "");
	ret = fdinfo_read(&t->rng, o->fd, fi);
	have_st = fstat(o->fd, &st) == 0;
	stable = obj_unchanged(slot, o);
	if (ret == -ENOMEM) {	/* ours, not the kernel's */
		free(fi);
		return;
	}
	if (!tally(OP_FDINFO, ret, if_stable(DOCUMENTED, stable), what) || ret < 0 || !stable) {
		free(fi);
		return;
	}
	if (fi->bad[0]) {
		insane("fdinfo", what, "%s", fi->bad);
		free(fi);
		return;
	}
	if (o->kind == K_REGION && shared->introspect)
		fdinfo_region_check(o, fi, have_st ? &st : NULL, what);
	else if (o->kind == K_HANDLE && shared->introspect)
		fdinfo_handle_check(fi, what);
	else if (o->kind != K_REGION && o->kind != K_HANDLE && (fi->region || fi->handle))
		insane("fdinfo", what, "syncmem lines for a file that is not syncmem's");
	free(fi);
}

void op_fdinfo(struct thread_ctx *t)
{
	static const enum kind kinds[] = { K_REGION, K_REGION, K_HANDLE, K_HANDLE, K_FREE };
	struct obj o;
	int slot;

	if (obj_pick(&t->rng, kinds[rng_below(&t->rng, sizeof(kinds) / sizeof(kinds[0]))], &o,
		     &slot))
		introspect_fdinfo(t, &o, slot);
}
