// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem handles: an open of /dev/syncmem (or a HANDLE_OPEN), charged to
 * its opener's user and IPC namespace. What a handle holds belongs to the
 * parts that use it: its async waits (async.c) and on-close actions
 * (on_close.c) set up their own state in it and end it when its file is
 * released (main.c); this file only makes it and keeps it alive.
 *
 * References: its file, every async wait it owns, and short-lived ones of
 * its work items and of code that must outlive a completion.
 */
#include <linux/capability.h>
#include <linux/eventfd.h>
#include <linux/slab.h>

#include "syncmem_core.h"

static void syncmem_handle_release_kref(struct kref *ref)
{
	struct syncmem_handle *h = container_of(ref, struct syncmem_handle, ref);

	if (h->eventfd)
		eventfd_ctx_put(h->eventfd);
	atomic_long_dec(&h->ns->usage.handles);
	syncmem_ns_put(h->ns);
	syncmem_user_put(h->user);
	kfree(h);
}

void syncmem_handle_get(struct syncmem_handle *h)
{
	kref_get(&h->ref);
}

void syncmem_handle_put(struct syncmem_handle *h)
{
	kref_put(&h->ref, syncmem_handle_release_kref);
}

/*
 * A handle of the caller, charged to its user and IPC namespace, with one
 * reference (its file's); its parts set up their state next.
 */
struct syncmem_handle *syncmem_handle_create(void)
{
	struct syncmem_handle *h;

	h = kzalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h)
		return NULL;
	h->user = syncmem_user_get_current();
	h->ns = syncmem_ns_get_current();
	if (!h->user || !h->ns) {
		if (h->ns)
			syncmem_ns_put(h->ns);
		syncmem_user_put(h->user);
		kfree(h);
		return NULL;
	}
	/* No audit record: most callers do not have it and need not. */
	h->unlimited = ns_capable_noaudit(&init_user_ns, CAP_SYS_RESOURCE);
	atomic_long_inc(&h->ns->usage.handles);
	kref_init(&h->ref);
	spin_lock_init(&h->lock);
	INIT_LIST_HEAD(&h->watches);
	init_waitqueue_head(&h->wq);
	init_waitqueue_head(&h->settle_wq);
	return h;
}

/*
 * Its file is closing: from now on, wakers pass its waiters over (a
 * hand-off must reach a live waiter) and their completions are dropped.
 */
void syncmem_handle_close(struct syncmem_handle *h)
{
	spin_lock(&h->lock);
	WRITE_ONCE(h->closed, true);
	spin_unlock(&h->lock);
}
