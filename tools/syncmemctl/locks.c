// SPDX-License-Identifier: GPL-2.0
/*
 * syncmemctl locks REGION: who holds each named lock, gate and rwlock, a
 * semaphore's value, and who waits for them in queue order; the names a
 * Web Locks manager holds, with their holders and queues; words with lock
 * waiters that have no name; the waiter counts of the other named objects.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "json.h"
#include "syncmemctl.h"

/* Objects whose first 8-byte word is an owner word (a rwlock's turnstile). */
static bool owner_kind(int kind)
{
	return kind == SYNCMEM_OBJ_LOCK || kind == SYNCMEM_OBJ_GATE ||
	       kind == SYNCMEM_OBJ_RWLOCK;
}

/* Listed with their state and queue, not only counted. */
static bool lock_kind(int kind)
{
	return owner_kind(kind) || kind == SYNCMEM_OBJ_SEM;
}

/* Shown for what they hold: their lock waiters are theirs. */
static bool shown_kind(int kind)
{
	return lock_kind(kind) || kind == SYNCMEM_OBJ_LOCKS;
}

/* Does entry @i of @l (n entries) name a lock no earlier entry named? */
static bool first_of_name(const struct syncmem_lock_info *l, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (lock_info_same_name(&l[k], &l[i]))
			return false;
	return true;
}

/*
 * Call @fn for each name of @mg once, names held first (in grant order),
 * then names only waited for (in queue order).
 */
static void for_each_name(const struct manager *mg, void (*fn)(const struct manager *mg,
							     const struct syncmem_lock_info *name,
							     void *arg),
			  void *arg)
{
	for (size_t i = 0; i < mg->nheld; i++)
		if (first_of_name(mg->held, i))
			fn(mg, &mg->held[i], arg);
	for (size_t i = 0; i < mg->npending; i++) {
		bool held = false;

		for (size_t k = 0; k < mg->nheld && !held; k++)
			held = lock_info_same_name(&mg->held[k], &mg->pending[i]);
		if (!held && first_of_name(mg->pending, i))
			fn(mg, &mg->pending[i], arg);
	}
}

static const char *mode_text(uint32_t mode)
{
	return mode & SYNCMEM_LOCKS_SHARED ? "shared" : "exclusive";
}

static bool in_range(uint64_t off, uint64_t start, uint64_t size)
{
	return off >= start && off - start < size;
}

static int count_in(const struct snapshot *s, uint64_t start, uint64_t size)
{
	int n = 0;

	for (int i = 0; i < s->nw; i++)
		n += in_range(s->w[i].offset, start, size);
	return n;
}

/* The holder of the owner word at @offset: 0 or -errno. */
static int holder_at(const struct snapshot *s, uint64_t offset, struct syncmem_holder_info *h)
{
	const uint64_t *word = snap_word(s, offset);

	if (!word)
		return -EINVAL;
	return syncmem_holder(s->r, word, h);
}

/*
 * A semaphore's units: the low 32 bits of its word, read as they are now
 * (whatever a writer put there: only printed). -1 when it cannot be read.
 */
static long long sem_value(const struct snapshot *s, uint64_t offset)
{
	const uint64_t *word = snap_word(s, offset);

	if (!word)
		return -1;
	return (uint32_t)__atomic_load_n(word, __ATOMIC_RELAXED);
}

/*
 * Reader @i of the rwlock at @obj: its slot's holder and share count. False
 * when the slot is free, outside the named object, or cannot be read.
 */
static bool rwlock_reader(const struct snapshot *s, const struct syncmem_object_info *obj,
			  int i, struct syncmem_holder_info *h, uint32_t *shares)
{
	uint64_t off = offsetof(struct syncmem_rwlock, slot) +
		       (uint64_t)i * sizeof(struct syncmem_rwlock_slot);
	const uint64_t *word;

	if (off + sizeof(struct syncmem_rwlock_slot) > obj->size)
		return false;
	word = snap_word(s, obj->offset + off);
	if (!word || syncmem_holder(s->r, word, h) || h->state == SYNCMEM_HOLDER_FREE)
		return false;
	/* The count next to the owner word: untrusted, only printed. */
	*shares = __atomic_load_n((const uint32_t *)(word + 1), __ATOMIC_RELAXED);
	return true;
}

/* ---- text ---- */

static void print_queue(const struct snapshot *s, uint64_t start, uint64_t size)
{
	bool header = false;

	for (int i = 0; i < s->nw; i++) {
		const struct syncmem_waiter_info *w = &s->w[i];
		char kind[32], waited[16];

		if (!in_range(w->offset, start, size))
			continue;
		if (!header)
			printf("    %4s %7s %7s %-18s %8s  %s\n", "POS", "PID", "TID", "KIND",
			       "WAITED", "WORD");
		header = true;
		printf("    %4u %7d %7d %-18s %8s  0x%" PRIx64 "\n", w->position, (int)w->pid,
		       (int)w->tid, wait_kind_text(kind, sizeof(kind), w->flags),
		       duration_text(waited, sizeof(waited), s->when_ns - w->since_ns), w->offset);
	}
}

/* ", 2 waiters" and the queue below. */
static void print_waiters(const struct snapshot *s, uint64_t start, uint64_t size)
{
	int n = count_in(s, start, size);

	if (!n)
		printf(", no waiters\n");
	else
		printf(", %d waiter%s\n", n, n == 1 ? "" : "s");
	print_queue(s, start, size);
}

static void print_state(const struct snapshot *s, int kind, uint64_t offset)
{
	struct syncmem_holder_info h;
	char buf[96];
	int err;

	if (kind == SYNCMEM_OBJ_SEM) {
		long long v = sem_value(s, offset);

		if (v < 0)
			printf("value unreadable (not an aligned 8-byte word)");
		else
			printf("value %lld", v);
		return;
	}
	err = holder_at(s, offset, &h);
	if (err)
		printf("holder unknown (%s)", syncmem_strerror(err));
	else
		printf("%s%s", kind == SYNCMEM_OBJ_RWLOCK ? "turnstile " : "",
		       holder_text(buf, sizeof(buf), &h, kind));
}

/* ", readers pid 12 (2 shares), ..." of a rwlock. */
static void print_readers(const struct snapshot *s, const struct syncmem_object_info *obj)
{
	struct syncmem_holder_info h;
	const char *sep = ", readers ";
	uint32_t shares;

	for (int i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++) {
		if (!rwlock_reader(s, obj, i, &h, &shares))
			continue;
		if (h.state == SYNCMEM_HOLDER_ALIVE)
			printf("%spid %d (%u share%s)", sep, (int)h.pid, shares,
			       shares == 1 ? "" : "s");
		else
			printf("%s%s (%u share%s)", sep, holder_state_name(h.state), shares,
			       shares == 1 ? "" : "s");
		sep = ", ";
	}
}

/* Distinct words with lock waiters that no lock, gate, rwlock or sem names. */
static bool unnamed_lock_word(const struct snapshot *s, int i)
{
	const struct syncmem_waiter_info *w = &s->w[i];
	const struct syncmem_object_info *obj;

	if (!(w->flags & SYNCMEM_WAITER_OWNER))
		return false;
	for (int k = 0; k < i; k++)
		if (s->w[k].offset == w->offset && (s->w[k].flags & SYNCMEM_WAITER_OWNER))
			return false;	/* listed at its first lock waiter */
	obj = snap_object_at(s, w->offset);
	return !obj || !shown_kind(obj->kind);
}

/* The rows of one name of a manager: its holders, then its queue. */
static void print_name_rows(const struct manager *mg, const struct syncmem_lock_info *name,
			    void *arg)
{
	const struct snapshot *s = arg;
	char text[LOCK_NAME_TEXT_MAX], since[16], state[24];
	int pos = 0;

	lock_name_text(text, sizeof(text), name);
	for (int pass = 0; pass < 2; pass++) {
		const struct syncmem_lock_info *l = pass ? mg->pending : mg->held;
		size_t n = pass ? mg->npending : mg->nheld;

		for (size_t i = 0; i < n; i++) {
			if (!lock_info_same_name(&l[i], name))
				continue;
			if (pass)
				snprintf(state, sizeof(state), "queued %d", pos++);
			else
				snprintf(state, sizeof(state), "held");
			printf("    %-10s %-9s %7d %10" PRIu64 " %8s  \"%s\"\n", state,
			       mode_text(l[i].mode), (int)l[i].pid, l[i].client,
			       duration_text(since, sizeof(since), s->when_ns - l[i].since_ns), text);
		}
	}
}

/* A Web Locks manager: every name it holds or queues for. */
static void print_manager(const struct snapshot *s, const struct syncmem_object_info *o)
{
	struct manager mg;
	char obj[96];

	printf("%s at 0x%" PRIx64 ": ", object_text(obj, sizeof(obj), o, o->offset), o->offset);
	if (manager_read(s, o, &mg)) {
		printf("unreadable (%s)\n", syncmem_strerror(mg.err));
		return;
	}
	printf("%zu held, %zu pending\n", mg.nheld, mg.npending);
	if (mg.nheld || mg.npending)
		printf("    %-10s %-9s %7s %10s %8s  %s\n", "STATE", "MODE", "PID", "OWNER", "FOR",
		       "NAME");
	for_each_name(&mg, print_name_rows, (void *)s);
	manager_free(&mg);
}

static void print_locks_text(const struct snapshot *s)
{
	char shown[NAME_TEXT_MAX], obj[96];
	bool others = false;

	printf("region %s\n", name_text(shown, sizeof(shown), s->name, strlen(s->name)));
	for (int i = 0; i < s->nobjs; i++) {
		const struct syncmem_object_info *o = &s->objs[i];

		if (!lock_kind(o->kind))
			continue;
		printf("%s at 0x%" PRIx64 ": ", object_text(obj, sizeof(obj), o, o->offset),
		       o->offset);
		print_state(s, o->kind, o->offset);
		if (o->kind == SYNCMEM_OBJ_RWLOCK)
			print_readers(s, o);
		print_waiters(s, o->offset, o->size);
	}
	for (int i = 0; i < s->nobjs; i++)
		if (s->objs[i].kind == SYNCMEM_OBJ_LOCKS)
			print_manager(s, &s->objs[i]);
	for (int i = 0; i < s->nw; i++) {
		const struct syncmem_waiter_info *w = &s->w[i];
		const struct syncmem_object_info *in;

		if (!unnamed_lock_word(s, i))
			continue;
		in = snap_object_at(s, w->offset);
		printf("lock at 0x%" PRIx64, w->offset);
		if (in)
			printf(" (in %s)", object_text(obj, sizeof(obj), in, in->offset));
		printf(": ");
		print_state(s, SYNCMEM_OBJ_LOCK, w->offset);
		print_waiters(s, w->offset, 1);
	}
	for (int i = 0; i < s->nobjs; i++) {
		const struct syncmem_object_info *o = &s->objs[i];
		int n;

		if (shown_kind(o->kind))
			continue;
		if (!others)
			printf("other objects:\n");
		others = true;
		n = count_in(s, o->offset, o->size);
		printf("  %s at 0x%" PRIx64 ", %" PRIu64 " bytes, %d waiter%s\n",
		       object_text(obj, sizeof(obj), o, o->offset), o->offset, o->size, n,
		       n == 1 ? "" : "s");
	}
	if (s->total > s->nw)
		printf("(only %d of %d waiters were read)\n", s->nw, s->total);
}

/* ---- JSON ---- */

static void json_queue(struct json *j, const struct snapshot *s, uint64_t start,
		       uint64_t size)
{
	json_array(j, "waiters");
	for (int i = 0; i < s->nw; i++)
		if (in_range(s->w[i].offset, start, size))
			json_waiter(j, s, &s->w[i]);
	json_array_end(j);
}

static void json_state(struct json *j, const struct snapshot *s, int kind, uint64_t offset)
{
	struct syncmem_holder_info h;
	int err;

	if (kind == SYNCMEM_OBJ_SEM) {
		long long v = sem_value(s, offset);

		if (v < 0)
			json_null(j, "value");
		else
			json_int(j, "value", v);
		return;
	}
	err = holder_at(s, offset, &h);
	if (!err) {
		json_holder(j, &h);
		return;
	}
	json_str(j, "state", "unknown");
	json_str(j, "error", syncmem_strerror(err));
	json_null(j, "word");
	json_null(j, "holder");
}

/* "readers": the processes counted in a rwlock's slots. */
static void json_readers(struct json *j, const struct snapshot *s,
			 const struct syncmem_object_info *obj)
{
	struct syncmem_holder_info h;
	uint32_t shares;

	json_array(j, "readers");
	for (int i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++) {
		if (!rwlock_reader(s, obj, i, &h, &shares))
			continue;
		json_object(j, NULL);
		json_holder(j, &h);
		json_uint(j, "shares", shares);
		json_object_end(j);
	}
	json_array_end(j);
}

/* One name of a manager: {"name", "held": [...], "pending": [...]}. */
static void json_name(const struct manager *mg, const struct syncmem_lock_info *name, void *arg)
{
	struct json *j = ((void **)arg)[0];
	const struct snapshot *s = ((void **)arg)[1];

	json_object(j, NULL);
	json_bytes(j, "name", name->name, name->len);
	for (int pass = 0; pass < 2; pass++) {
		const struct syncmem_lock_info *l = pass ? mg->pending : mg->held;
		size_t n = pass ? mg->npending : mg->nheld;
		int pos = 0;

		json_array(j, pass ? "pending" : "held");
		for (size_t i = 0; i < n; i++) {
			if (!lock_info_same_name(&l[i], name))
				continue;
			json_object(j, NULL);
			if (pass)
				json_int(j, "position", pos++);
			json_str(j, "mode", mode_text(l[i].mode));
			json_int(j, "pid", l[i].pid);
			json_uint(j, "owner", l[i].client);
			json_int(j, pass ? "waited_ns" : "held_ns", s->when_ns - l[i].since_ns);
			json_object_end(j);
		}
		json_array_end(j);
	}
	json_object_end(j);
}

static void json_managers(struct json *j, const struct snapshot *s)
{
	json_array(j, "managers");
	for (int i = 0; i < s->nobjs; i++) {
		const struct syncmem_object_info *o = &s->objs[i];
		struct manager mg;
		void *arg[2] = { j, (void *)s };

		if (o->kind != SYNCMEM_OBJ_LOCKS)
			continue;
		json_object(j, NULL);
		json_object_members(j, o);
		if (manager_read(s, o, &mg)) {
			json_str(j, "error", syncmem_strerror(mg.err));
			json_null(j, "names");
		} else {
			json_null(j, "error");
			json_array(j, "names");
			for_each_name(&mg, json_name, arg);
			json_array_end(j);
			manager_free(&mg);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

static void print_locks_json(const struct snapshot *s)
{
	struct json j;

	json_start(&j, stdout);
	json_object(&j, NULL);
	json_str(&j, "region", s->name);
	json_int(&j, "now_ns", s->when_ns);
	json_bool(&j, "truncated", s->total > s->nw);
	json_array(&j, "locks");
	for (int i = 0; i < s->nobjs; i++) {
		const struct syncmem_object_info *o = &s->objs[i];

		if (!lock_kind(o->kind))
			continue;
		json_object(&j, NULL);
		json_object_members(&j, o);
		json_state(&j, s, o->kind, o->offset);
		if (o->kind == SYNCMEM_OBJ_RWLOCK)
			json_readers(&j, s, o);
		json_queue(&j, s, o->offset, o->size);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_managers(&j, s);
	json_array(&j, "unnamed");
	for (int i = 0; i < s->nw; i++) {
		uint64_t off = s->w[i].offset;

		if (!unnamed_lock_word(s, i))
			continue;
		json_object(&j, NULL);
		json_uint(&j, "offset", off);
		json_object_ref(&j, "object", snap_object_at(s, off));
		json_state(&j, s, SYNCMEM_OBJ_LOCK, off);
		json_queue(&j, s, off, 1);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array(&j, "objects");
	for (int i = 0; i < s->nobjs; i++) {
		const struct syncmem_object_info *o = &s->objs[i];

		if (shown_kind(o->kind))
			continue;
		json_object(&j, NULL);
		json_object_members(&j, o);
		json_int(&j, "waiters", count_in(s, o->offset, o->size));
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

int cmd_locks(const struct options *o)
{
	struct snapshot s;
	int err = snap_load("locks", o->args[0], &s);

	if (err)
		return err;
	if (o->json)
		print_locks_json(&s);
	else
		print_locks_text(&s);
	snap_close(&s);
	return 0;
}
