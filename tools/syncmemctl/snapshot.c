// SPDX-License-Identifier: GPL-2.0
/*
 * What the kernel says about regions: the names of the IPC namespace, and
 * of one region opened read-only its named objects and its waiters. Only
 * the kernel's answers are used here; the region's memory, which any
 * writer may fill with anything, is read elsewhere and only as a number to
 * print (snap_word()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "syncmemctl.h"

/* Entries one REGION_LIST call asks for. */
#define LIST_CHUNK	256

size_t entry_name_len(const struct syncmem_region_entry *e)
{
	return e->name_len < SYNCMEM_NAME_MAX ? e->name_len : SYNCMEM_NAME_MAX;
}

int region_list_read(struct region_list *l)
{
	struct syncmem_region_list arg = { 0 };
	size_t cap = 0;
	int fd = dev_open(), err = 0;

	l->e = NULL;
	l->n = 0;
	if (fd < 0)
		return fd;
	do {
		if (cap - l->n < LIST_CHUNK) {
			struct syncmem_region_entry *e;

			e = realloc(l->e, (cap + LIST_CHUNK) * sizeof(*e));
			if (!e) {
				err = -ENOMEM;
				break;
			}
			l->e = e;
			cap += LIST_CHUNK;
		}
		arg.entries = (uintptr_t)(l->e + l->n);
		arg.count = LIST_CHUNK;
		if (ioctl(fd, SYNCMEM_IOC_REGION_LIST, &arg)) {
			err = -errno;
			break;
		}
		if (arg.count > LIST_CHUNK) {
			err = -EPROTO;
			break;
		}
		l->n += arg.count;
	} while (arg.count == LIST_CHUNK);
	close(fd);
	if (err)
		region_list_free(l);
	return err;
}

void region_list_free(struct region_list *l)
{
	free(l->e);
	l->e = NULL;
	l->n = 0;
}

int snap_open(struct snapshot *s, const char *name)
{
	size_t len = strlen(name);

	memset(s, 0, sizeof(*s));
	if (!len)
		return -EINVAL;
	if (len > SYNCMEM_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(s->name, name, len + 1);
	return syncmem_open(name, 0, SYNCMEM_RDONLY, 0, &s->r);
}

/*
 * Call @list (syncmem_objects or syncmem_waiters) into a growing array
 * until what the kernel found fits or SYNCMEM_LIST_MAX entries are asked
 * for: the array in *@buf, entries written in *@n; returns the total found
 * or -errno.
 */
static int list_all(struct syncmem_region *r, void **buf, size_t elem, int *n,
		    int (*list)(struct syncmem_region *r, void *out, size_t cap))
{
	size_t cap = 64;
	int total;

	for (int tries = 0; ; tries++) {
		void *p = realloc(*buf, cap * elem);

		if (!p)
			return -ENOMEM;
		*buf = p;
		total = list(r, p, cap);
		if (total < 0)
			return total;
		*n = (size_t)total < cap ? total : (int)cap;
		if ((size_t)total <= cap || cap >= SYNCMEM_LIST_MAX || tries == 8)
			return total;
		/* More arrived: room for them and some to spare. */
		cap = (size_t)total + (size_t)total / 4 + 16;
		if (cap > SYNCMEM_LIST_MAX)
			cap = SYNCMEM_LIST_MAX;
	}
}

static int list_objects(struct syncmem_region *r, void *out, size_t cap)
{
	return syncmem_objects(r, out, cap);
}

static int list_waiters(struct syncmem_region *r, void *out, size_t cap)
{
	return syncmem_waiters(r, NULL, out, cap);
}

int snap_objects(struct snapshot *s)
{
	int ret = list_all(s->r, (void **)&s->objs, sizeof(*s->objs), &s->nobjs, list_objects);

	return ret < 0 ? ret : 0;
}

int snap_waiters(struct snapshot *s)
{
	int ret = list_all(s->r, (void **)&s->w, sizeof(*s->w), &s->nw, list_waiters);

	s->when_ns = now_ns();
	if (ret < 0) {
		s->nw = 0;
		s->total = 0;
		return ret;
	}
	s->total = ret;
	return 0;
}

void snap_close(struct snapshot *s)
{
	syncmem_close(s->r);
	free(s->objs);
	free(s->w);
	memset(s, 0, sizeof(*s));
}

const struct syncmem_object_info *snap_object_at(const struct snapshot *s, uint64_t offset)
{
	const struct syncmem_object_info *best = NULL;

	/* Named objects may nest (a lock inside a table): the innermost wins. */
	for (int i = 0; i < s->nobjs; i++) {
		const struct syncmem_object_info *o = &s->objs[i];

		if (offset < o->offset || offset - o->offset >= o->size)
			continue;
		if (!best || o->size < best->size)
			best = o;
	}
	return best;
}

const uint64_t *snap_word(const struct snapshot *s, uint64_t offset)
{
	size_t size = syncmem_size(s->r);

	if (offset % 8 || offset > size || size - offset < 8)
		return NULL;
	return (const uint64_t *)((const char *)syncmem_base(s->r) + offset);
}

/* snap_objects and snap_waiters: 0, or EXIT_ERROR after saying why. */
static int snap_read(const char *cmd, struct snapshot *s)
{
	char shown[NAME_TEXT_MAX];
	int err = snap_objects(s);

	if (!err)
		err = snap_waiters(s);
	if (err)
		return fail(cmd, err, "cannot inspect region '%s'",
			    name_text(shown, sizeof(shown), s->name, strlen(s->name)));
	return 0;
}

int snap_load(const char *cmd, const char *name, struct snapshot *s)
{
	char shown[NAME_TEXT_MAX];
	int err = snap_open(s, name);

	if (err) {
		snap_close(s);
		return fail(cmd, err, "cannot open region '%s'",
			    name_text(shown, sizeof(shown), name, strlen(name)));
	}
	err = snap_read(cmd, s);
	if (err)
		snap_close(s);
	return err;
}

int snap_open_many(const char *cmd, char **names, int nnames,
		   struct snapshot **out, int *n, int *unopened)
{
	struct region_list l = { 0 };
	struct snapshot *s;
	size_t want = nnames;
	int err;

	*out = NULL;
	*n = 0;
	*unopened = 0;
	if (!nnames) {
		err = region_list_read(&l);
		if (err)
			return fail(cmd, err, "cannot list the regions");
		want = l.n;
	}
	s = calloc(want ? want : 1, sizeof(*s));
	if (!s) {
		region_list_free(&l);
		return fail(cmd, -ENOMEM, "cannot list the regions");
	}
	for (size_t i = 0; i < want; i++) {
		char name[SYNCMEM_NAME_MAX + 1];
		size_t len;

		if (nnames) {
			err = snap_load(cmd, names[i], &s[*n]);
			if (err) {
				snap_close_many(s, *n);
				return err;
			}
			(*n)++;
			continue;
		}
		len = entry_name_len(&l.e[i]);
		memcpy(name, l.e[i].name, len);
		name[len] = '\0';
		err = snap_open(&s[*n], name);
		if (err == -EMFILE || err == -ENFILE) {
			/* Not "unreadable": it would be skipped without a word. */
			snap_close(&s[*n]);
			snap_close_many(s, *n);
			region_list_free(&l);
			return fail(cmd, err, "too many regions to hold open at once (raise ulimit -n)");
		}
		if (err) {
			snap_close(&s[*n]);
			/* Unlinked since it was listed: not there to look at. */
			if (err != -ENOENT)
				(*unopened)++;
			continue;
		}
		err = snap_read(cmd, &s[*n]);
		if (err) {
			snap_close_many(s, *n + 1);
			region_list_free(&l);
			return err;
		}
		(*n)++;
	}
	region_list_free(&l);
	*out = s;
	return 0;
}

void snap_close_many(struct snapshot *s, int n)
{
	for (int i = 0; i < n; i++)
		snap_close(&s[i]);
	free(s);
}
