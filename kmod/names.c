// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem name table: named regions scoped to IPC namespaces, with POSIX
 * shared-memory style ownership and permission checks.
 *
 * Each IPC namespace that holds names has one struct syncmem_ns, which pins
 * the namespace with one reference. When that reference is the only one left
 * the namespace is unreachable (no task in it, no nsfs file), so its names
 * are dropped on the next table operation ("reaping") and the reference is
 * released.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

struct syncmem_ns {
	struct ipc_namespace *ipc;	/* one reference held */
	struct list_head node;		/* in syncmem_ns_list */
	struct list_head regions;	/* named regions of this namespace */
};

static DEFINE_MUTEX(syncmem_names_mutex);
static DEFINE_HASHTABLE(syncmem_names, 10);	/* under syncmem_names_mutex */
static LIST_HEAD(syncmem_ns_list);		/* under syncmem_names_mutex */
static u64 syncmem_nr_named;			/* under syncmem_names_mutex */

static u32 syncmem_name_hash(struct ipc_namespace *ipc, const char *name,
			     u32 len)
{
	return jhash(name, len, hash_ptr(ipc, 32));
}

static struct syncmem_ns *syncmem_ns_find(struct ipc_namespace *ipc)
{
	struct syncmem_ns *ns;

	list_for_each_entry(ns, &syncmem_ns_list, node)
		if (ns->ipc == ipc)
			return ns;
	return NULL;
}

static struct syncmem_region *syncmem_names_lookup(struct ipc_namespace *ipc,
						   const char *name, u32 len)
{
	struct syncmem_region *r;

	hash_for_each_possible(syncmem_names, r, hash_node,
			       syncmem_name_hash(ipc, name, len))
		if (r->ns->ipc == ipc && r->name_len == len &&
		    !memcmp(r->name, name, len))
			return r;
	return NULL;
}

/* Drop @r's name and the table's reference; frees an emptied syncmem_ns. */
static void syncmem_names_unlink_locked(struct syncmem_region *r)
{
	struct syncmem_ns *ns = r->ns;

	lockdep_assert_held(&syncmem_names_mutex);
	hash_del(&r->hash_node);
	list_del_init(&r->ns_node);
	WRITE_ONCE(r->ns, NULL);
	syncmem_nr_named--;
	if (list_empty(&ns->regions)) {
		list_del(&ns->node);
		syncmem_ipc_ns_put(ns->ipc);
		kfree(ns);
	}
	syncmem_region_put(r);
}

static void syncmem_ns_drop_all_locked(struct syncmem_ns *ns)
{
	struct syncmem_region *r;
	bool last;

	/* The last unlink frees @ns itself: decide before it happens. */
	do {
		r = list_first_entry(&ns->regions, struct syncmem_region, ns_node);
		last = list_is_singular(&ns->regions);
		syncmem_names_unlink_locked(r);
	} while (!last);
}

static void syncmem_names_reap_locked(void)
{
	struct syncmem_ns *ns, *tmp;

	list_for_each_entry_safe(ns, tmp, &syncmem_ns_list, node)
		if (syncmem_ipc_ns_orphaned(ns->ipc))
			syncmem_ns_drop_all_locked(ns);
}

/* Read, plus write unless @rdonly, like open(2) on a POSIX shm object. */
static int syncmem_region_permission(struct syncmem_region *r, bool rdonly)
{
	umode_t want = rdonly ? 4 : 6;
	umode_t mode = r->mode;

	if (uid_eq(current_fsuid(), r->uid))
		mode >>= 6;
	else if (in_group_p(r->gid))
		mode >>= 3;
	if (!(want & ~mode & 7))
		return 0;
	if (ns_capable(r->ns->ipc->user_ns, CAP_IPC_OWNER))
		return 0;
	return -EACCES;
}

/* Give @r its name in the caller's namespace; @ns is a spare entry or NULL. */
static void syncmem_names_link_locked(struct syncmem_region *r,
				      struct ipc_namespace *ipc,
				      struct syncmem_ns **spare,
				      const char *name, u32 len, umode_t mode)
{
	struct syncmem_ns *ns = syncmem_ns_find(ipc);

	if (!ns) {
		ns = *spare;
		*spare = NULL;
		ns->ipc = ipc;
		syncmem_ipc_ns_get(ipc);
		INIT_LIST_HEAD(&ns->regions);
		list_add(&ns->node, &syncmem_ns_list);
	}
	memcpy(r->name, name, len);
	r->name_len = len;
	r->uid = current_fsuid();
	r->gid = current_fsgid();
	r->mode = mode & 0777 & ~current_umask();
	r->ns = ns;
	list_add_tail(&r->ns_node, &ns->regions);
	hash_add(syncmem_names, &r->hash_node, syncmem_name_hash(ipc, name, len));
	syncmem_nr_named++;
	kref_get(&r->ref);	/* the table's reference */
}

/**
 * syncmem_names_open - create or open a named region
 * @name:	Name bytes (validated by the caller).
 * @name_len:	Their count.
 * @flags:	SYNCMEM_REGION_* (validated by the caller).
 * @size:	Size to create, or 0 / the exact size when opening.
 * @mode:	Permission bits for a region this call creates.
 *
 * Returns the region with a reference for the caller, or an ERR_PTR:
 * -ENOENT, -EEXIST, -EINVAL (size mismatch), -EACCES, or an error of
 * syncmem_region_create().
 */
struct syncmem_region *syncmem_names_open(const char *name, u32 name_len,
					  u32 flags, u64 size, umode_t mode)
{
	struct ipc_namespace *ipc = current->nsproxy->ipc_ns;
	struct syncmem_region *r, *fresh = NULL;
	struct syncmem_ns *spare = NULL;
	int err = 0;

	mutex_lock(&syncmem_names_mutex);
	syncmem_names_reap_locked();
	r = syncmem_names_lookup(ipc, name, name_len);
	if (!r) {
		mutex_unlock(&syncmem_names_mutex);
		if (!(flags & SYNCMEM_REGION_CREATE))
			return ERR_PTR(-ENOENT);

		/* Allocate unlocked: a large region takes a while. */
		fresh = syncmem_region_create(size, name_len);
		if (IS_ERR(fresh))
			return fresh;
		spare = kzalloc(sizeof(*spare), GFP_KERNEL_ACCOUNT);
		if (!spare) {
			syncmem_region_put(fresh);
			return ERR_PTR(-ENOMEM);
		}

		mutex_lock(&syncmem_names_mutex);
		r = syncmem_names_lookup(ipc, name, name_len);
		if (!r) {
			syncmem_names_link_locked(fresh, ipc, &spare, name,
						  name_len, mode);
			mutex_unlock(&syncmem_names_mutex);
			kfree(spare);
			return fresh;
		}
		/* Another caller created it meanwhile: open theirs. */
	}

	if ((flags & SYNCMEM_REGION_CREATE) && (flags & SYNCMEM_REGION_EXCL))
		err = -EEXIST;
	else if (size && size != r->size)
		err = -EINVAL;
	else
		err = syncmem_region_permission(r, flags & SYNCMEM_REGION_RDONLY);
	if (!err)
		kref_get(&r->ref);
	mutex_unlock(&syncmem_names_mutex);

	kfree(spare);
	if (fresh)
		syncmem_region_put(fresh);
	return err ? ERR_PTR(err) : r;
}

/**
 * syncmem_names_unlink - remove a name from the caller's namespace
 * @name:	Name bytes (validated by the caller).
 * @name_len:	Their count.
 *
 * Returns 0, -ENOENT, or -EPERM when the caller neither owns the region nor
 * has CAP_IPC_OWNER.
 */
int syncmem_names_unlink(const char *name, u32 name_len)
{
	struct ipc_namespace *ipc = current->nsproxy->ipc_ns;
	struct syncmem_region *r;
	int err = 0;

	mutex_lock(&syncmem_names_mutex);
	syncmem_names_reap_locked();
	r = syncmem_names_lookup(ipc, name, name_len);
	if (!r)
		err = -ENOENT;
	else if (!uid_eq(current_fsuid(), r->uid) &&
		 !ns_capable(ipc->user_ns, CAP_IPC_OWNER))
		err = -EPERM;
	else
		syncmem_names_unlink_locked(r);
	mutex_unlock(&syncmem_names_mutex);
	return err;
}

u64 syncmem_names_count(void)
{
	u64 n;

	mutex_lock(&syncmem_names_mutex);
	syncmem_names_reap_locked();
	n = syncmem_nr_named;
	mutex_unlock(&syncmem_names_mutex);
	return n;
}

bool syncmem_region_is_named(struct syncmem_region *r)
{
	return READ_ONCE(r->ns);
}

/* Module exit: no file is open, so dropping the names frees every region. */
void syncmem_names_exit(void)
{
	struct syncmem_ns *ns, *tmp;

	mutex_lock(&syncmem_names_mutex);
	list_for_each_entry_safe(ns, tmp, &syncmem_ns_list, node)
		syncmem_ns_drop_all_locked(ns);
	mutex_unlock(&syncmem_names_mutex);
}
