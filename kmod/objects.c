// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem object names: what the users of a region call the objects in it
 * ("lock 'jobs' at 0x40"), for tools that show who holds and who waits.
 *
 * The names live with the region in the kernel, not in its memory: any
 * process that may write the region may scribble over its memory, and a
 * tool must be able to trust what it prints. A region keeps at most
 * SYNCMEM_OBJECTS_MAX names, each charged to the memory cgroup of the
 * process that set it; they go with the region.
 */
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "syncmem_core.h"

struct syncmem_object {
	struct list_head node;		/* in r->objects, by offset */
	struct syncmem_object_entry e;
};

void syncmem_objects_init(struct syncmem_region *r)
{
	mutex_init(&r->objects_mutex);
	INIT_LIST_HEAD(&r->objects);
	r->nr_objects = 0;
}

/* The region's last reference is gone. */
void syncmem_objects_destroy(struct syncmem_region *r)
{
	struct syncmem_object *o, *tmp;

	list_for_each_entry_safe(o, tmp, &r->objects, node)
		kfree(o);
	mutex_destroy(&r->objects_mutex);
}

/* Printable ASCII only, so a tool can print a name as it is. */
static bool syncmem_object_name_ok(const char *name, u32 len)
{
	u32 i;

	for (i = 0; i < len; i++)
		if (name[i] < 0x20 || name[i] > 0x7e)
			return false;
	return true;
}

static int syncmem_object_check(struct syncmem_region *r,
				const struct syncmem_object_name *arg)
{
	if (arg->flags || arg->pad)
		return -EINVAL;
	if (arg->offset & 3 || arg->offset >= r->size)
		return -EINVAL;
	if (!arg->name)		/* removal: nothing else may be set */
		return arg->name_len || arg->kind || arg->size ? -EINVAL : 0;
	if (!arg->name_len || arg->name_len > SYNCMEM_OBJECT_NAME_MAX)
		return -EINVAL;
	if (!arg->kind || arg->kind > SYNCMEM_KIND_MAX)
		return -EINVAL;
	if (!arg->size || arg->size > r->size - arg->offset)
		return -EINVAL;
	return 0;
}

/* Under r->objects_mutex: the name at @offset, or the one it goes before. */
static struct syncmem_object *syncmem_object_at(struct syncmem_region *r,
						u64 offset, bool *exact)
{
	struct syncmem_object *o;

	lockdep_assert_held(&r->objects_mutex);
	list_for_each_entry(o, &r->objects, node) {
		if (o->e.offset >= offset) {
			*exact = o->e.offset == offset;
			return o;
		}
	}
	*exact = false;
	return NULL;
}

long syncmem_ioctl_object_name(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_object_name arg;
	struct syncmem_object *o, *new = NULL;
	bool exact;
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	ret = syncmem_object_check(r, &arg);
	if (ret)
		return ret;
	if (arg.name) {
		new = kzalloc(sizeof(*new), GFP_KERNEL_ACCOUNT);
		if (!new)
			return -ENOMEM;
		if (copy_from_user(new->e.name, u64_to_user_ptr(arg.name),
				   arg.name_len)) {
			kfree(new);
			return -EFAULT;
		}
		if (!syncmem_object_name_ok(new->e.name, arg.name_len)) {
			kfree(new);
			return -EINVAL;
		}
		new->e.offset = arg.offset;
		new->e.size = arg.size;
		new->e.kind = arg.kind;
		new->e.name_len = arg.name_len;
	}

	mutex_lock(&r->objects_mutex);
	o = syncmem_object_at(r, arg.offset, &exact);
	if (!new) {
		ret = -ENOENT;
		if (exact) {
			list_del(&o->node);
			r->nr_objects--;
			kfree(o);
			ret = 0;
		}
	} else if (exact) {
		list_replace(&o->node, &new->node);	/* renamed */
		kfree(o);
	} else if (r->nr_objects >= SYNCMEM_OBJECTS_MAX) {
		kfree(new);
		ret = -ENOSPC;
	} else {
		/* Before the first name at a higher offset, else last. */
		list_add_tail(&new->node, o ? &o->node : &r->objects);
		r->nr_objects++;
	}
	mutex_unlock(&r->objects_mutex);
	return ret;
}

long syncmem_ioctl_objects(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_object_list arg;
	struct syncmem_object_entry *out = NULL;
	struct syncmem_object *o;
	u32 n = 0;

	long err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	err = syncmem_list_alloc(arg.flags, arg.count, sizeof(*out), (void **)&out);
	if (err)
		return err;
	mutex_lock(&r->objects_mutex);
	list_for_each_entry(o, &r->objects, node) {
		if (n == arg.count)
			break;
		out[n++] = o->e;
	}
	arg.total = r->nr_objects;
	mutex_unlock(&r->objects_mutex);
	arg.count = n;
	return syncmem_list_reply(uarg, &arg, sizeof(arg), arg.entries, out,
				  n * sizeof(*out));
}
