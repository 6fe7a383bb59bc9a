// SPDX-License-Identifier: GPL-2.0
/*
 * Turning what the kernel said into words: names, durations, kinds of
 * objects and of waits, holders; and the JSON forms the commands share.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "syncmemctl.h"

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static bool plain_byte(unsigned char c)
{
	return c > ' ' && c < 0x7f && c != '\\';
}

void print_name(FILE *f, const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (plain_byte(c))
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
}

/* @name escaped into @buf; spaces kept as they are with @space. */
static const char *escape_text(char *buf, size_t cap, const char *name, size_t len, bool space)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		bool plain = plain_byte(c) || (space && c == ' ');

		if (plain && n + 1 < cap)
			buf[n++] = (char)c;
		else if (!plain && n + 4 < cap)
			n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", c);
		else
			break;
	}
	if (cap)
		buf[n] = '\0';
	return buf;
}

const char *name_text(char *buf, size_t cap, const char *name, size_t len)
{
	return escape_text(buf, cap, name, len, false);
}

const char *duration_text(char *buf, size_t cap, int64_t ns)
{
	long long us = ns > 0 ? ns / 1000 : 0, s = us / 1000000;

	if (us < 1000)
		snprintf(buf, cap, "%lldus", us);
	else if (us < 1000000)
		snprintf(buf, cap, "%lldms", us / 1000);
	else if (s < 60)
		snprintf(buf, cap, "%lld.%llds", s, us / 100000 % 10);
	else if (s < 3600)
		snprintf(buf, cap, "%lldm%02llds", s / 60, s % 60);
	else
		snprintf(buf, cap, "%lldh%02lldm", s / 3600, s / 60 % 60);
	return buf;
}

const char *kind_name(int kind, char *buf, size_t cap)
{
	static const char *const names[] = {
		[SYNCMEM_OBJ_WORD] = "word",
		[SYNCMEM_OBJ_LOCK] = "lock",
		[SYNCMEM_OBJ_RWLOCK] = "rwlock",
		[SYNCMEM_OBJ_SEM] = "sem",
		[SYNCMEM_OBJ_GATE] = "gate",
		[SYNCMEM_OBJ_KEYED] = "keyed",
		[SYNCMEM_OBJ_FLIGHT] = "flight",
		[SYNCMEM_OBJ_POOL] = "pool",
		[SYNCMEM_OBJ_OTHER] = "other",
		[SYNCMEM_OBJ_LOCKS] = "locks",
	};

	if (kind > 0 && (size_t)kind < sizeof(names) / sizeof(names[0]))
		return names[kind];
	snprintf(buf, cap, "kind %d", kind);
	return buf;
}

const char *wait_kind_text(char *buf, size_t cap, unsigned flags)
{
	snprintf(buf, cap, "%s%s%s%s", flags & SYNCMEM_WAITER_ASYNC ? "async" : "sync",
		 flags & SYNCMEM_WAITER_OWNER ? ",lock" : "",
		 flags & SYNCMEM_WAITER_OBSERVER ? ",observer" : "",
		 flags & SYNCMEM_WAITER_AWAY ? ",away" : "");
	return buf;
}

const char *holder_state_name(int state)
{
	switch (state) {
	case SYNCMEM_HOLDER_FREE:
		return "free";
	case SYNCMEM_HOLDER_ALIVE:
		return "held";
	case SYNCMEM_HOLDER_DEAD:
		return "dead";
	case SYNCMEM_HOLDER_NOBODY:
		return "closed";
	case SYNCMEM_HOLDER_GONE:
		return "gone";
	case SYNCMEM_HOLDER_NOTRECOVERABLE:
		return "notrecoverable";
	}
	return "unknown";
}

const char *holder_text(char *buf, size_t cap, const struct syncmem_holder_info *h,
			int kind)
{
	switch (h->state) {
	case SYNCMEM_HOLDER_FREE:
		return kind == SYNCMEM_OBJ_GATE ? "open" : "free";
	case SYNCMEM_HOLDER_ALIVE:
		if (!h->pid)
			return "held by an owner outside this PID namespace";
		if (!h->tid)
			snprintf(buf, cap, "held by pid %d (the process)", (int)h->pid);
		else
			snprintf(buf, cap, "held by pid %d tid %d", (int)h->pid, (int)h->tid);
		return buf;
	case SYNCMEM_HOLDER_DEAD:
		return "holder died (the next taker recovers it)";
	case SYNCMEM_HOLDER_NOBODY:
		return "closed";
	case SYNCMEM_HOLDER_GONE:
		return "holder gone (the next taker is told)";
	case SYNCMEM_HOLDER_NOTRECOVERABLE:
		return "not recoverable";
	}
	snprintf(buf, cap, "unknown state %d", h->state);
	return buf;
}

const char *object_text(char *buf, size_t cap, const struct syncmem_object_info *obj,
			uint64_t offset)
{
	char k[16], name[4 * SYNCMEM_OBJECT_NAME_MAX + 1];

	if (!obj)
		return "-";
	/*
	 * The kernel keeps names printable; escaped all the same, but for
	 * spaces, which the quotes keep apart.
	 */
	escape_text(name, sizeof(name), obj->name, strnlen(obj->name, sizeof(obj->name)), true);
	if (offset == obj->offset)
		snprintf(buf, cap, "%s '%s'", kind_name(obj->kind, k, sizeof(k)), name);
	else
		snprintf(buf, cap, "%s '%s'+0x%" PRIx64, kind_name(obj->kind, k, sizeof(k)),
			 name, offset - obj->offset);
	return buf;
}

void json_mode(struct json *j, const char *key, unsigned int mode)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%04o", mode);
	json_str(j, key, buf);
}

void json_object_members(struct json *j, const struct syncmem_object_info *obj)
{
	char k[16];

	json_bytes(j, "name", obj->name, strnlen(obj->name, sizeof(obj->name)));
	json_str(j, "kind", kind_name(obj->kind, k, sizeof(k)));
	json_uint(j, "offset", obj->offset);
	json_uint(j, "size", obj->size);
}

void json_object_ref(struct json *j, const char *key, const struct syncmem_object_info *obj)
{
	if (!obj) {
		json_null(j, key);
		return;
	}
	json_object(j, key);
	json_object_members(j, obj);
	json_object_end(j);
}

void json_waiter(struct json *j, const struct snapshot *s, const struct syncmem_waiter_info *w)
{
	int64_t now = s->when_ns;

	json_object(j, NULL);
	json_uint(j, "offset", w->offset);
	json_object_ref(j, "object", snap_object_at(s, w->offset));
	json_uint(j, "position", w->position);
	json_int(j, "pid", w->pid);
	json_int(j, "tid", w->tid);
	json_str(j, "kind", w->flags & SYNCMEM_WAITER_ASYNC ? "async" : "sync");
	json_bool(j, "lock", w->flags & SYNCMEM_WAITER_OWNER);
	json_bool(j, "observer", w->flags & SYNCMEM_WAITER_OBSERVER);
	json_bool(j, "away", w->flags & SYNCMEM_WAITER_AWAY);
	json_uint(j, "owner", w->owner);
	json_uint(j, "size", w->size);
	json_int(j, "waited_ns", now > w->since_ns ? now - w->since_ns : 0);
	if (w->deadline_ns < 0)
		json_null(j, "left_ns");
	else
		json_int(j, "left_ns", w->deadline_ns > now ? w->deadline_ns - now : 0);
	json_object_end(j);
}

void json_holder(struct json *j, const struct syncmem_holder_info *h)
{
	json_str(j, "state", holder_state_name(h->state));
	json_uint(j, "word", h->word);
	if (h->state == SYNCMEM_HOLDER_ALIVE && h->pid) {
		json_object(j, "holder");
		json_int(j, "pid", h->pid);
		json_int(j, "tid", h->tid);
		json_object_end(j);
	} else {
		json_null(j, "holder");
	}
}
