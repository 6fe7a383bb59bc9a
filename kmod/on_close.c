// SPDX-License-Identifier: GPL-2.0
/*
 * On-close actions: "store this value into that word and wake its waiters
 * when my handle goes away". A process arms one before work others wait for
 * and disarms it once it published the outcome; if it dies in between, the
 * release of its handle publishes "died" for it, so nobody waits forever
 * (the single-flight leader of libsyncmem uses it for -EOWNERDEAD).
 *
 * Counting actions (SYNCMEM_ON_CLOSE_ADD) add their value as they are armed
 * and take it back at release, or at a DISARM with SYNCMEM_DISARM_UNDO: a
 * process's part in a shared count that is undone if it dies (the
 * followers of a single-flight count themselves so). The addition and
 * the listing happen under the lock, and so do the subtraction and the
 * unlisting, so a count is never added without an action to undo it.
 *
 * A handle holds as many actions as its opener's max_user_on_close lets it
 * (thousands: a server leads a single-flight per key it fills), so they
 * are kept in arming order for release and in a tree by user_data for arm
 * and disarm: O(log n) each, under the handle's spinlock. fdinfo lists the
 * first SYNCMEM_FDINFO_ON_CLOSE of them.
 */
#include <linux/err.h>
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/rbtree.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "syncmem_core.h"

/* Actions a handle's fdinfo lists at most (its count says how many there are). */
#define SYNCMEM_FDINFO_ON_CLOSE	32

struct syncmem_on_close_action {
	struct list_head node;		/* in h->on_close, arming order */
	struct rb_node tree_node;	/* in h->on_close_tree, by @user_data */
	struct list_head region_node;	/* in r->armed, under r->armed_lock */
	struct pid *tgid;		/* who armed it; referenced */
	struct syncmem_region *r;	/* holds a reference */
	u64 offset;
	u64 expected;
	u64 value;
	u64 user_data;
	u32 size;
	bool if_equal;
	bool add;		/* counting: @value was added at arm */
};

void syncmem_on_close_init(struct syncmem_handle *h)
{
	INIT_LIST_HEAD(&h->on_close);
	h->on_close_tree = RB_ROOT;
	spin_lock_init(&h->on_close_lock);
}

/* fdinfo lines of the handle's armed actions (see syncmem_handle_show_fdinfo()). */
void syncmem_on_close_show(struct seq_file *m, struct syncmem_handle *h)
{
	struct syncmem_on_close_action *a;
	unsigned int n = 0;

	spin_lock(&h->on_close_lock);
	seq_printf(m, "syncmem-armed:\t%lu\n", h->nr_on_close);
	list_for_each_entry(a, &h->on_close, node) {
		if (n++ == SYNCMEM_FDINFO_ON_CLOSE)
			break;
		seq_printf(m, "syncmem-on-close:\tregion=%lu offset=0x%llx size=%u user_data=0x%llx value=0x%llx",
			   a->r->inode->i_ino, a->offset, a->size, a->user_data,
			   a->value);
		if (a->if_equal)
			seq_printf(m, " if_equal=0x%llx", a->expected);
		seq_puts(m, a->add ? " add\n" : "\n");
	}
	spin_unlock(&h->on_close_lock);
}

static struct syncmem_on_close_action *
syncmem_on_close_find(struct syncmem_handle *h, u64 user_data)
{
	struct rb_node *n = h->on_close_tree.rb_node;

	lockdep_assert_held(&h->on_close_lock);
	while (n) {
		struct syncmem_on_close_action *a =
			rb_entry(n, struct syncmem_on_close_action, tree_node);

		if (user_data == a->user_data)
			return a;
		n = user_data < a->user_data ? n->rb_left : n->rb_right;
	}
	return NULL;
}

/* Under h->on_close_lock: list @a last and in the tree, or -EEXIST. */
static int syncmem_on_close_insert(struct syncmem_handle *h,
				   struct syncmem_on_close_action *a)
{
	struct rb_node **link = &h->on_close_tree.rb_node, *parent = NULL;

	lockdep_assert_held(&h->on_close_lock);
	while (*link) {
		struct syncmem_on_close_action *b =
			rb_entry(*link, struct syncmem_on_close_action, tree_node);

		if (a->user_data == b->user_data)
			return -EEXIST;
		parent = *link;
		link = a->user_data < b->user_data ? &parent->rb_left : &parent->rb_right;
	}
	rb_link_node(&a->tree_node, parent, link);
	rb_insert_color(&a->tree_node, &h->on_close_tree);
	list_add_tail(&a->node, &h->on_close);
	h->nr_on_close++;
	return 0;
}

/* Under h->on_close_lock: @a is no longer the handle's. */
static void syncmem_on_close_unlink(struct syncmem_handle *h,
				    struct syncmem_on_close_action *a)
{
	lockdep_assert_held(&h->on_close_lock);
	rb_erase(&a->tree_node, &h->on_close_tree);
	list_del(&a->node);
	h->nr_on_close--;
}

void syncmem_armed_init(struct syncmem_region *r)
{
	spin_lock_init(&r->armed_lock);
	INIT_LIST_HEAD(&r->armed);
	r->nr_armed = 0;
}

/* Under h->on_close_lock, once armed: listed in its region too. */
static void syncmem_armed_add(struct syncmem_on_close_action *a)
{
	spin_lock(&a->r->armed_lock);
	list_add_tail(&a->region_node, &a->r->armed);
	a->r->nr_armed++;
	spin_unlock(&a->r->armed_lock);
}

static void syncmem_on_close_free(struct syncmem_handle *h,
				  struct syncmem_on_close_action *a)
{
	spin_lock(&a->r->armed_lock);
	list_del(&a->region_node);
	a->r->nr_armed--;
	spin_unlock(&a->r->armed_lock);
	put_pid(a->tgid);
	syncmem_region_put(a->r);
	syncmem_uncharge_user(h->user, SYNCMEM_USAGE(on_close));
	kfree(a);
}

long syncmem_ioctl_arm_on_close(struct syncmem_handle *h, void __user *uarg)
{
	struct syncmem_on_close_action *a;
	struct syncmem_on_close arg;
	struct syncmem_region *r;
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SYNCMEM_ON_CLOSE_FLAGS) || arg.pad)
		return -EINVAL;
	if ((arg.flags & SYNCMEM_ON_CLOSE_ADD) && (arg.flags & SYNCMEM_ON_CLOSE_IF_EQUAL))
		return -EINVAL;
	if (arg.size == 4 && arg.expected > U32_MAX)
		return -EINVAL;
	r = syncmem_region_get_fd(arg.region_fd, true, NULL);
	if (IS_ERR(r))
		return PTR_ERR(r);
	ret = syncmem_word_check(r, arg.offset, arg.size, arg.value);
	if (ret)
		goto out_region;
	ret = syncmem_charge_user(h->user, SYNCMEM_USAGE(on_close), h->unlimited);
	if (ret)
		goto out_region;
	a = kmalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);
	if (!a) {
		ret = -ENOMEM;
		goto out_charge;
	}
	*a = (struct syncmem_on_close_action){
		.r = r,
		.offset = arg.offset,
		.expected = arg.expected,
		.value = arg.value,
		.user_data = arg.user_data,
		.size = arg.size,
		.if_equal = arg.flags & SYNCMEM_ON_CLOSE_IF_EQUAL,
		.add = arg.flags & SYNCMEM_ON_CLOSE_ADD,
	};

	spin_lock(&h->on_close_lock);
	ret = syncmem_on_close_insert(h, a);
	if (!ret) {
		a->tgid = get_pid(task_tgid(current));
		syncmem_armed_add(a);
		if (a->add)
			syncmem_word_add_return(r, a->offset, a->size, a->value);
	}
	spin_unlock(&h->on_close_lock);
	if (!ret)
		return 0;
	kfree(a);
out_charge:
	syncmem_uncharge_user(h->user, SYNCMEM_USAGE(on_close));
out_region:
	syncmem_region_put(r);
	return ret;
}

long syncmem_ioctl_disarm(struct syncmem_handle *h, void __user *uarg)
{
	struct syncmem_on_close_action *a;
	struct syncmem_disarm arg;
	bool undo;
	long ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SYNCMEM_DISARM_FLAGS) || arg.pad)
		return -EINVAL;
	undo = arg.flags & SYNCMEM_DISARM_UNDO;
	spin_lock(&h->on_close_lock);
	a = syncmem_on_close_find(h, arg.user_data);
	if (a && undo && !a->add) {
		ret = -EINVAL;
	} else if (a) {
		syncmem_on_close_unlink(h, a);
		if (undo)
			ret = !syncmem_word_add_return(a->r, a->offset, a->size, -a->value);
	}
	spin_unlock(&h->on_close_lock);
	if (!a)
		return -ENOENT;
	if (ret >= 0)
		syncmem_on_close_free(h, a);
	return ret;
}

/* The handle is being released: run what is still armed, oldest first. */
void syncmem_on_close_run(struct syncmem_handle *h)
{
	struct syncmem_on_close_action *a, *tmp;
	LIST_HEAD(armed);

	spin_lock(&h->on_close_lock);
	list_splice_init(&h->on_close, &armed);
	h->on_close_tree = RB_ROOT;	/* its nodes are all freed below */
	h->nr_on_close = 0;
	spin_unlock(&h->on_close_lock);

	list_for_each_entry_safe(a, tmp, &armed, node) {
		if (a->add)
			syncmem_add_wake_all(a->r, a->offset, a->size, -a->value);
		else
			syncmem_store_wake_all(a->r, a->offset, a->size, a->if_equal,
					       a->expected, a->value);
		list_del(&a->node);
		syncmem_on_close_free(h, a);
		cond_resched();		/* thousands, each waking a word */
	}
}

/* Under r->armed_lock: @a as a caller in @ns may see it. */
static void syncmem_armed_describe(const struct syncmem_on_close_action *a,
				   struct pid_namespace *ns,
				   struct syncmem_armed_entry *e)
{
	lockdep_assert_held(&a->r->armed_lock);
	*e = (struct syncmem_armed_entry){
		.offset = a->offset,
		.value = a->value,
		.expected = a->if_equal ? a->expected : 0,
		.pid = pid_nr_ns(a->tgid, ns),
		.size = a->size,
		.flags = (a->if_equal ? SYNCMEM_ARMED_IF_EQUAL : 0) |
			 (a->add ? SYNCMEM_ARMED_ADD : 0),
	};
}

long syncmem_ioctl_armed(struct syncmem_region *r, void __user *uarg)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	struct syncmem_on_close_action *a;
	struct syncmem_armed_entry *out = NULL;
	struct syncmem_armed_list arg;
	u32 n = 0;

	long err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	err = syncmem_list_alloc(arg.flags, arg.count, sizeof(*out), (void **)&out);
	if (err)
		return err;
	spin_lock(&r->armed_lock);
	list_for_each_entry(a, &r->armed, region_node) {
		if (n == arg.count)
			break;
		syncmem_armed_describe(a, ns, &out[n++]);
	}
	arg.total = r->nr_armed;
	spin_unlock(&r->armed_lock);
	arg.count = n;
	return syncmem_list_reply(uarg, &arg, sizeof(arg), arg.entries, out,
				  n * sizeof(*out));
}

/* fdinfo lines of a region's armed actions (the first 32). */
void syncmem_armed_show(struct seq_file *m, struct syncmem_region *r)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	struct syncmem_on_close_action *a;
	struct syncmem_armed_entry e;
	unsigned int n = 0;

	spin_lock(&r->armed_lock);
	seq_printf(m, "syncmem-armed:\t%u\n", r->nr_armed);
	list_for_each_entry(a, &r->armed, region_node) {
		if (n++ == 32)
			break;
		syncmem_armed_describe(a, ns, &e);
		seq_printf(m, "syncmem-on-close:\toffset=0x%llx size=%u value=0x%llx pid=%d",
			   e.offset, e.size, e.value, e.pid);
		if (a->if_equal)
			seq_printf(m, " if_equal=0x%llx", e.expected);
		seq_puts(m, a->add ? " add\n" : "\n");
	}
	spin_unlock(&r->armed_lock);
}
