// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem and IPC namespaces: each namespace syncmem is used in has a
 * struct syncmem_ns holding its names (regions named in it, with POSIX
 * shared-memory style owner and mode) and its usage (limits.c).
 *
 * Lifetime. An attached syncmem_ns holds one reference on its namespace, so
 * that names outlive every process as on /dev/shm. A reaper, armed while any
 * namespace other than the initial one is attached, looks every
 * SYNCMEM_REAP_INTERVAL whether a namespace has become unreachable (no task
 * in it, no nsfs file: only our reference is left): then it drops its names,
 * which frees their regions, and releases the namespace at once, SysV
 * memory and all. It also detaches a namespace of which nothing is left.
 *
 * Names of all namespaces share one rhashtable keyed by (namespace, name);
 * each namespace's names are created, looked up and removed under its own
 * mutex, so namespaces never wait for each other.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/ipc_namespace.h>
#include <linux/jhash.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/proc_ns.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

#define SYNCMEM_REAP_INTERVAL	(2 * HZ)

/* Attached namespaces by inode number (unique among live namespaces). */
static DEFINE_XARRAY(syncmem_ns_by_inum);
static LIST_HEAD(syncmem_ns_list);		/* under syncmem_ns_mutex */
static DEFINE_MUTEX(syncmem_ns_mutex);		/* attach and detach */

static void syncmem_ns_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(syncmem_ns_reaper, syncmem_ns_reap);

struct syncmem_name_key {
	const struct syncmem_ns *ns;
	const char *name;
	u32 len;
};

static u32 syncmem_name_hashfn(const void *data, u32 len, u32 seed)
{
	const struct syncmem_name_key *k = data;

	return jhash(k->name, k->len, seed ^ hash_ptr(k->ns, 32));
}

static u32 syncmem_name_obj_hashfn(const void *data, u32 len, u32 seed)
{
	const struct syncmem_region *r = data;
	struct syncmem_name_key k = { r->ns, r->name, r->name_len };

	return syncmem_name_hashfn(&k, 0, seed);
}

static int syncmem_name_cmpfn(struct rhashtable_compare_arg *arg, const void *obj)
{
	const struct syncmem_name_key *k = arg->key;
	const struct syncmem_region *r = obj;

	return !(r->ns == k->ns && r->name_len == k->len &&
		 !memcmp(r->name, k->name, k->len));
}

static const struct rhashtable_params syncmem_name_params = {
	.head_offset	= offsetof(struct syncmem_region, hash_node),
	.hashfn		= syncmem_name_hashfn,
	.obj_hashfn	= syncmem_name_obj_hashfn,
	.obj_cmpfn	= syncmem_name_cmpfn,
	.automatic_shrinking = true,
};

static struct rhashtable syncmem_names;

/* ---- namespaces ------------------------------------------------------- */

void syncmem_ns_put(struct syncmem_ns *ns)
{
	if (refcount_dec_and_test(&ns->ref))
		kfree_rcu(ns, rcu);
}

/* The attached state of the caller's IPC namespace, with a reference. */
struct syncmem_ns *syncmem_ns_get_current(void)
{
	struct ipc_namespace *ipc = current->nsproxy->ipc_ns;
	struct syncmem_ns *ns;
	int err;

	rcu_read_lock();
	ns = xa_load(&syncmem_ns_by_inum, ipc->ns.inum);
	if (ns && (ns->ipc != ipc || !refcount_inc_not_zero(&ns->ref)))
		ns = NULL;
	rcu_read_unlock();
	if (ns)
		return ns;

	mutex_lock(&syncmem_ns_mutex);
	/* Detaching happens under the mutex: what we find here is live. */
	ns = xa_load(&syncmem_ns_by_inum, ipc->ns.inum);
	if (ns) {
		refcount_inc(&ns->ref);
		goto out;
	}
	ns = kzalloc(sizeof(*ns), GFP_KERNEL_ACCOUNT);
	if (!ns)
		goto out;
	ns->ipc = ipc;
	ns->inum = ipc->ns.inum;
	refcount_set(&ns->ref, 2);	/* attached, and the caller's */
	mutex_init(&ns->mutex);
	INIT_LIST_HEAD(&ns->regions);
	err = xa_insert(&syncmem_ns_by_inum, ns->inum, ns, GFP_KERNEL_ACCOUNT);
	if (err) {
		kfree(ns);
		ns = NULL;
		goto out;
	}
	syncmem_ipc_ns_get(ipc);
	ns->attached = true;
	list_add_tail(&ns->node, &syncmem_ns_list);
	if (ipc->ns.inum != PROC_IPC_INIT_INO)
		/* Never postpones a pending pass: namespaces keep dying meanwhile. */
		queue_delayed_work(system_wq, &syncmem_ns_reaper, SYNCMEM_REAP_INTERVAL);
out:
	mutex_unlock(&syncmem_ns_mutex);
	return ns;
}

/* Take @r's name away and drop the table's reference. */
static void syncmem_name_drop_locked(struct syncmem_region *r)
{
	struct syncmem_ns *ns = r->ns;

	lockdep_assert_held(&ns->mutex);
	rhashtable_remove_fast(&syncmem_names, &r->hash_node, syncmem_name_params);
	list_del_init(&r->ns_node);
	WRITE_ONCE(r->named, false);
	ns->nr_names--;
	syncmem_region_put(r);
}

/*
 * Forget @ns: its names go, its namespace is released, lookups miss it.
 * The attached reference is dropped too (@put), or is already gone.
 */
static void syncmem_ns_detach_locked(struct syncmem_ns *ns, bool put)
{
	struct syncmem_region *r, *tmp;

	lockdep_assert_held(&syncmem_ns_mutex);
	xa_erase(&syncmem_ns_by_inum, ns->inum);
	list_del(&ns->node);
	ns->attached = false;
	mutex_lock(&ns->mutex);
	list_for_each_entry_safe(r, tmp, &ns->regions, ns_node)
		syncmem_name_drop_locked(r);
	mutex_unlock(&ns->mutex);
	syncmem_ipc_ns_put(ns->ipc);
	ns->ipc = NULL;
	if (put)
		syncmem_ns_put(ns);
	else
		kfree_rcu(ns, rcu);
}

static void syncmem_ns_reap(struct work_struct *work)
{
	struct syncmem_ns *ns, *tmp;
	bool others = false;

	mutex_lock(&syncmem_ns_mutex);
	list_for_each_entry_safe(ns, tmp, &syncmem_ns_list, node) {
		if (ns->inum == PROC_IPC_INIT_INO)
			continue;
		if (syncmem_ipc_ns_orphaned(ns->ipc)) {
			/* Objects still charged to it keep it, detached. */
			syncmem_ns_detach_locked(ns, true);
		} else if (!READ_ONCE(ns->nr_names) && refcount_dec_if_one(&ns->ref)) {
			/*
			 * Nothing of it is left (names hold a reference
			 * through their region): at zero, no lookup can take
			 * it any more.
			 */
			syncmem_ns_detach_locked(ns, false);
		} else {
			others = true;
		}
	}
	if (others)
		schedule_delayed_work(&syncmem_ns_reaper, SYNCMEM_REAP_INTERVAL);
	mutex_unlock(&syncmem_ns_mutex);
}

int syncmem_ns_init(void)
{
	return rhashtable_init(&syncmem_names, &syncmem_name_params);
}

/* Module exit: no file is open, so dropping the names frees every region. */
void syncmem_ns_exit(void)
{
	struct syncmem_ns *ns, *tmp;

	cancel_delayed_work_sync(&syncmem_ns_reaper);
	mutex_lock(&syncmem_ns_mutex);
	list_for_each_entry_safe(ns, tmp, &syncmem_ns_list, node)
		syncmem_ns_detach_locked(ns, true);
	mutex_unlock(&syncmem_ns_mutex);
	rhashtable_destroy(&syncmem_names);
}

/* ---- names ------------------------------------------------------------ */

static struct syncmem_region *syncmem_name_lookup(struct syncmem_ns *ns,
						  const char *name, u32 len)
{
	struct syncmem_name_key k = { ns, name, len };

	lockdep_assert_held(&ns->mutex);
	return rhashtable_lookup_fast(&syncmem_names, &k, syncmem_name_params);
}

/* Give @r (fresh, owned by the caller) its name in @ns; 0 or -ENOMEM. */
static int syncmem_name_link_locked(struct syncmem_ns *ns, struct syncmem_region *r,
				    const char *name, u32 len, umode_t mode)
{
	lockdep_assert_held(&ns->mutex);
	memcpy(r->name, name, len);
	r->name_len = len;
	r->mode = mode & 0777 & ~current_umask();
	r->inode->i_mode = (r->inode->i_mode & ~0777) | r->mode;
	if (rhashtable_insert_fast(&syncmem_names, &r->hash_node, syncmem_name_params))
		return -ENOMEM;
	r->id = ++ns->next_id;
	r->named = true;
	list_add_tail(&r->ns_node, &ns->regions);
	ns->nr_names++;
	kref_get(&r->ref);	/* the table's reference */
	return 0;
}

/* The checks of opening an existing region @r with @flags. */
static int syncmem_name_may_open(struct syncmem_region *r, u32 flags, u64 size)
{
	if ((flags & SYNCMEM_REGION_CREATE) && (flags & SYNCMEM_REGION_EXCL))
		return -EEXIST;
	/*
	 * A caller that meant to create the region must not silently get
	 * somebody else's (as fs.protected_regular refuses O_CREAT of another
	 * user's file in a sticky directory such as /dev/shm).
	 */
	if ((flags & SYNCMEM_REGION_CREATE) && READ_ONCE(syncmem_protected_names) &&
	    !uid_eq(r->uid, current_fsuid()))
		return -EACCES;
	if (size && size != r->size)
		return -EINVAL;
	return syncmem_fs_permission(r, flags & SYNCMEM_REGION_RDONLY);
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
	struct syncmem_region *r, *fresh = NULL;
	struct syncmem_ns *ns = syncmem_ns_get_current();
	int err;

	if (!ns)
		return ERR_PTR(-ENOMEM);
	mutex_lock(&ns->mutex);
	r = syncmem_name_lookup(ns, name, name_len);
	if (!r) {
		mutex_unlock(&ns->mutex);
		if (!(flags & SYNCMEM_REGION_CREATE)) {
			r = ERR_PTR(-ENOENT);
			goto out;
		}
		/* Allocate unlocked: a large region takes a while. */
		fresh = syncmem_region_create(size, name_len, ns);
		if (IS_ERR(fresh)) {
			r = fresh;
			goto out;
		}
		mutex_lock(&ns->mutex);
		r = syncmem_name_lookup(ns, name, name_len);
		if (!r) {
			err = syncmem_name_link_locked(ns, fresh, name, name_len, mode);
			mutex_unlock(&ns->mutex);
			if (err) {
				syncmem_region_put(fresh);
				fresh = ERR_PTR(err);
			}
			r = fresh;
			goto out;
		}
		/* Another caller created it meanwhile: open theirs. */
	}
	err = syncmem_name_may_open(r, flags, size);
	if (!err)
		kref_get(&r->ref);
	mutex_unlock(&ns->mutex);
	if (fresh)
		syncmem_region_put(fresh);
	r = err ? ERR_PTR(err) : r;
out:
	syncmem_ns_put(ns);
	return r;
}

/**
 * syncmem_names_unlink - remove a name from the caller's namespace
 * @name:	Name bytes (validated by the caller).
 * @name_len:	Their count.
 *
 * Returns 0, -ENOENT, or -EPERM when the caller neither owns the region nor
 * has CAP_FOWNER in the namespace's user namespace.
 */
int syncmem_names_unlink(const char *name, u32 name_len)
{
	struct syncmem_ns *ns = syncmem_ns_get_current();
	struct syncmem_region *r;
	int err = 0;

	if (!ns)
		return -ENOMEM;
	mutex_lock(&ns->mutex);
	r = syncmem_name_lookup(ns, name, name_len);
	if (!r)
		err = -ENOENT;
	else if (!uid_eq(current_fsuid(), r->uid) &&
		 !ns_capable(ns->ipc->user_ns, CAP_FOWNER))
		err = -EPERM;
	else
		syncmem_name_drop_locked(r);
	mutex_unlock(&ns->mutex);
	syncmem_ns_put(ns);
	return err;
}

bool syncmem_region_is_named(struct syncmem_region *r)
{
	return READ_ONCE(r->named);
}

/* Entries gathered under the mutex at a time, copied out after. */
#define SYNCMEM_LIST_BATCH	16

/*
 * What anybody in the namespace sees of @r: what ls -l shows of a file in
 * /dev/shm. Its live counts only if its mode lets the caller read it (as
 * for a read-only open, the LSMs aside): they tell when its users come and
 * go, wait and wake.
 */
static void syncmem_entry_fill(struct syncmem_region_entry *e,
			       struct syncmem_region *r)
{
	memset(e, 0, sizeof(*e));
	e->size = r->size;
	syncmem_region_owner(r, &e->uid, &e->gid);
	e->mode = r->mode;
	e->name_len = r->name_len;
	e->id = r->id;
	memcpy(e->name, r->name, r->name_len);
	if (!syncmem_fs_may_read(r)) {
		e->files = SYNCMEM_COUNT_HIDDEN;
		e->mappings = SYNCMEM_COUNT_HIDDEN;
		e->waiters = SYNCMEM_COUNT_HIDDEN;
		return;
	}
	e->files = atomic_long_read(&r->nr_files);
	e->mappings = atomic_long_read(&r->nr_mappings);
	e->waiters = atomic_read(&r->nr_waiters);
}

/* Up to @max entries of @ns after @cursor, in creation order. */
static unsigned int syncmem_list_batch(struct syncmem_ns *ns, u64 cursor,
				       struct syncmem_region_entry *e,
				       unsigned int max)
{
	struct syncmem_region *r;
	unsigned int n = 0;

	mutex_lock(&ns->mutex);
	list_for_each_entry(r, &ns->regions, ns_node) {
		if (r->id <= cursor)
			continue;
		syncmem_entry_fill(&e[n], r);
		if (++n == max)
			break;
	}
	mutex_unlock(&ns->mutex);
	return n;
}

long syncmem_ioctl_region_list(void __user *uarg)
{
	struct syncmem_region_entry *batch;
	struct syncmem_region_list arg;
	struct syncmem_region_entry __user *out;
	struct syncmem_ns *ns;
	unsigned int done = 0, n;
	long ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.count > SYNCMEM_REGION_LIST_MAX)
		return -EINVAL;
	out = u64_to_user_ptr(arg.entries);
	batch = kmalloc_array(SYNCMEM_LIST_BATCH, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return -ENOMEM;
	ns = syncmem_ns_get_current();
	if (!ns) {
		kfree(batch);
		return -ENOMEM;
	}
	while (done < arg.count) {
		n = syncmem_list_batch(ns, arg.cursor, batch,
				       min(arg.count - done, SYNCMEM_LIST_BATCH));
		if (!n)
			break;
		if (copy_to_user(out + done, batch, n * sizeof(*batch))) {
			ret = -EFAULT;
			break;
		}
		done += n;
		arg.cursor = batch[n - 1].id;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
	}
	syncmem_ns_put(ns);
	kfree(batch);
	if (ret)
		return ret;
	arg.count = done;
	return copy_to_user(uarg, &arg, sizeof(arg)) ? -EFAULT : 0;
}
