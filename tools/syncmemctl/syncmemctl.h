/* SPDX-License-Identifier: GPL-2.0 */
/*
 * syncmemctl: what the commands share. Each command lives in a file of its
 * own; snapshot.c reads regions (names, objects, waiters), format.c turns
 * what it read into text, json.c writes JSON.
 */
#ifndef SYNCMEMCTL_H
#define SYNCMEMCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/syncmem.h>

#include "syncmem.h"

/* Exit statuses (Documentation/syncmem/syncmemctl.rst). */
#define EXIT_FOUND	1	/* deadlocks: at least one cycle */
#define EXIT_ERROR	2	/* an error or a usage error */

struct options {
	bool json;
	long interval_ms;	/* top */
	long iterations;	/* top; 0: until interrupted */
	int nargs;		/* positional arguments after the command */
	char **args;
};

/* ---- main.c ---- */

/*
 * Print "syncmemctl: CMD: WHAT: <error text>" on stderr; returns EXIT_ERROR.
 * @what is a printf format.
 */
int fail(const char *cmd, int err, const char *what, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- device.c: the commands on /dev/syncmem itself ---- */

int cmd_version(const struct options *o);
int cmd_stats(const struct options *o);
int cmd_create(const struct options *o);
int cmd_unlink(const struct options *o);
/* An ioctl on a fresh /dev/syncmem handle: 0 or -errno. */
int dev_ioctl(unsigned long req, void *arg);
/* A /dev/syncmem handle (or $SYNCMEM_DEVICE's, as the library opens): fd or -errno. */
int dev_open(void);

/* ---- regions.c, waiters.c, locks.c, top.c, deadlocks.c ---- */

int cmd_regions(const struct options *o);
int cmd_waiters(const struct options *o);
int cmd_locks(const struct options *o);
int cmd_top(const struct options *o);
int cmd_deadlocks(const struct options *o);

/* ---- snapshot.c: what the kernel says about regions ---- */

/* The names of the IPC namespace, as REGION_LIST gives them. */
struct region_list {
	struct syncmem_region_entry *e;
	size_t n;
};

int region_list_read(struct region_list *l);
void region_list_free(struct region_list *l);
/* The bytes of an entry's name (never more than the array holds). */
size_t entry_name_len(const struct syncmem_region_entry *e);

/* One region opened read-only, its named objects and its waiters. */
struct snapshot {
	char name[SYNCMEM_NAME_MAX + 1];	/* NUL-terminated */
	struct syncmem_region *r;
	struct syncmem_object_info *objs;	/* by offset */
	int nobjs;
	struct syncmem_waiter_info *w;		/* by offset, then arrival */
	int nw;
	int total;		/* waiters the kernel found: more than nw when cut */
	int64_t when_ns;	/* CLOCK_MONOTONIC just after the waiters were read */
};

/* Open @name read-only (nothing loaded yet): 0 or -errno. */
int snap_open(struct snapshot *s, const char *name);
/* Load the named objects: 0 or -errno. */
int snap_objects(struct snapshot *s);
/* Load the waiters (again), growing the array while the list is cut. */
int snap_waiters(struct snapshot *s);
void snap_close(struct snapshot *s);
/* The named object whose bytes hold @offset, or NULL. */
const struct syncmem_object_info *snap_object_at(const struct snapshot *s,
						 uint64_t offset);
/* Pointer to the word at @offset when 8 bytes fit there, 8-byte aligned. */
const uint64_t *snap_word(const struct snapshot *s, uint64_t offset);

/*
 * snap_open, snap_objects and snap_waiters for @cmd: 0, or EXIT_ERROR after
 * saying why (@s is then closed).
 */
int snap_load(const char *cmd, const char *name, struct snapshot *s);

/*
 * The regions to look at, loaded as by snap_load: those named in @names
 * (every one must open), or with none every region of the namespace that
 * opens read-only. Fills *@out with *@n snapshots and counts in *@unopened
 * those that did not open (only without names). 0, or EXIT_ERROR after
 * saying why.
 */
int snap_open_many(const char *cmd, char **names, int nnames,
		   struct snapshot **out, int *n, int *unopened);
void snap_close_many(struct snapshot *s, int n);

/* ---- managers.c ---- */

/* A Web Locks manager named in a region (SYNCMEM_OBJ_LOCKS), as query tells it. */
struct manager {
	const struct syncmem_object_info *obj;
	struct syncmem_lock_info *held;		/* in grant order */
	size_t nheld;
	struct syncmem_lock_info *pending;	/* in queue order */
	size_t npending;
	int err;		/* 0, or why it could not be read */
};

/* Read the manager named @obj in @s: 0 or -errno (also in mg->err). */
int manager_read(const struct snapshot *s, const struct syncmem_object_info *obj,
		 struct manager *mg);
void manager_free(struct manager *mg);
bool lock_info_same_name(const struct syncmem_lock_info *a, const struct syncmem_lock_info *b);
/* Room for any lock name as lock_name_text() writes it. */
#define LOCK_NAME_TEXT_MAX	(4 * SYNCMEM_LOCKS_NAME_MAX + 1)
/* A lock's name as text, as name_text() writes it. */
const char *lock_name_text(char *buf, size_t cap, const struct syncmem_lock_info *l);

/* ---- format.c ---- */

int64_t now_ns(void);
/* Room for any name as name_text() writes it. */
#define NAME_TEXT_MAX	(4 * SYNCMEM_NAME_MAX + 1)

/* A name as text: bytes other than printable ASCII, space and '\' as \xNN. */
void print_name(FILE *f, const char *name, size_t len);
/* The same into @buf (cut to fit @cap, always NUL-terminated). */
const char *name_text(char *buf, size_t cap, const char *name, size_t len);
/* "1.5s", "120ms", "3m04s"...: a duration in nanoseconds (0 for negatives). */
const char *duration_text(char *buf, size_t cap, int64_t ns);
/* "lock", "gate"... for a SYNCMEM_OBJ_* kind, "kind N" for others. */
const char *kind_name(int kind, char *buf, size_t cap);
/* "sync", "async,lock,away"...: what kind of wait, from its flags. */
const char *wait_kind_text(char *buf, size_t cap, unsigned flags);
/* "free", "held", "dead"...: a SYNCMEM_HOLDER_* state for JSON. */
const char *holder_state_name(int state);
/* "held by pid 1 tid 2", "holder died"...: a holder for people. */
const char *holder_text(char *buf, size_t cap, const struct syncmem_holder_info *h,
			int kind);
/*
 * What a word is, for people: "lock 'a'" for a named object starting there,
 * "rwlock 'x'+0x8" inside one, else "-" (@obj NULL).
 */
const char *object_text(char *buf, size_t cap, const struct syncmem_object_info *obj,
			uint64_t offset);

/* JSON forms the commands share (Documentation/syncmem/syncmemctl.rst). */
struct json;
/* Permission bits as a string of octal digits, "0640". */
void json_mode(struct json *j, const char *key, unsigned int mode);
/* The members "name", "kind", "offset" and "size" of a named object. */
void json_object_members(struct json *j, const struct syncmem_object_info *obj);
/* {"name", "kind", "offset", "size"} of a named object, or null. */
void json_object_ref(struct json *j, const char *key,
		     const struct syncmem_object_info *obj);
/* A waiter of @s as an element of an array (times as of s->when_ns). */
void json_waiter(struct json *j, const struct snapshot *s,
		 const struct syncmem_waiter_info *w);
/* The members "state", "word" and "holder" of an owner word. */
void json_holder(struct json *j, const struct syncmem_holder_info *h);

#endif /* SYNCMEMCTL_H */
