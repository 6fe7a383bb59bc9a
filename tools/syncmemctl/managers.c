// SPDX-License-Identifier: GPL-2.0
/*
 * The Web Locks managers named in a region (SYNCMEM_OBJ_LOCKS), read with
 * syncmem_locks_query() through the read-only view: their held locks and
 * pending requests, for `locks` and `deadlocks`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "syncmemctl.h"

int manager_read(const struct snapshot *s, const struct syncmem_object_info *obj,
		 struct manager *mg)
{
	struct syncmem_locks *m;
	size_t cap_held = 16, cap_pending = 16;
	int err;

	memset(mg, 0, sizeof(*mg));
	mg->obj = obj;
	if (obj->offset % 64 || obj->offset >= syncmem_size(s->r)) {
		mg->err = -EINVAL;
		return mg->err;
	}
	err = syncmem_locks_attach(s->r, (char *)syncmem_base(s->r) + obj->offset, &m);
	if (err) {
		mg->err = err;
		return err;
	}
	/* Until the arrays hold everything (what is held may grow meanwhile). */
	for (int tries = 0; tries < 8; tries++) {
		mg->held = calloc(cap_held, sizeof(*mg->held));
		mg->pending = calloc(cap_pending, sizeof(*mg->pending));
		mg->nheld = cap_held;
		mg->npending = cap_pending;
		err = !mg->held || !mg->pending ? -ENOMEM :
		      syncmem_locks_query(m, mg->held, &mg->nheld, mg->pending, &mg->npending);
		if (err || (mg->nheld <= cap_held && mg->npending <= cap_pending))
			break;
		cap_held = mg->nheld + 16;
		cap_pending = mg->npending + 16;
		free(mg->held);
		free(mg->pending);
		mg->held = mg->pending = NULL;
		err = -EAGAIN;
	}
	syncmem_locks_detach(m);
	if (!err && (mg->nheld > cap_held || mg->npending > cap_pending))
		err = -EAGAIN;
	if (err) {
		manager_free(mg);
		mg->err = err;
	}
	return err;
}

void manager_free(struct manager *mg)
{
	free(mg->held);
	free(mg->pending);
	mg->held = mg->pending = NULL;
	mg->nheld = mg->npending = 0;
}

bool lock_info_same_name(const struct syncmem_lock_info *a, const struct syncmem_lock_info *b)
{
	return a->len == b->len && !memcmp(a->name, b->name, a->len);
}

const char *lock_name_text(char *buf, size_t cap, const struct syncmem_lock_info *l)
{
	return name_text(buf, cap, l->name, l->len);
}
