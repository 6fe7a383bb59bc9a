// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem list ioctls (WAITERS, WHO, OBJECTS, ARMED): each checks its
 * count against SYNCMEM_LIST_MAX, fills a kernel array, and copies the
 * entries out before its updated argument.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "syncmem_core.h"

/**
 * syncmem_list_alloc - check a list ioctl's flags and count, get its array
 * @flags:	Its flags (none are known: must be zero).
 * @count:	Entries asked for, at most SYNCMEM_LIST_MAX.
 * @esize:	Size of one entry.
 * @out:	Set to the zeroed array (NULL for @count 0).
 *
 * Returns 0, -EINVAL or -ENOMEM.
 */
long syncmem_list_alloc(u32 flags, u32 count, size_t esize, void **out)
{
	*out = NULL;
	if (flags || count > SYNCMEM_LIST_MAX)
		return -EINVAL;
	if (!count)
		return 0;
	*out = kvcalloc(count, esize, GFP_KERNEL_ACCOUNT);
	return *out ? 0 : -ENOMEM;
}

/**
 * syncmem_list_reply - end a list ioctl: entries out, then its argument
 * @uarg:	The ioctl's argument in user memory.
 * @arg:	Its updated kernel copy, @arg_size bytes.
 * @arg_size:	See @arg.
 * @entries:	User address of the caller's array.
 * @out:	The entries (kvmalloc'ed or NULL), freed here.
 * @bytes:	Their size.
 *
 * Returns 0 or -EFAULT.
 */
long syncmem_list_reply(void __user *uarg, const void *arg, size_t arg_size,
			u64 entries, void *out, size_t bytes)
{
	long ret = 0;

	if (copy_to_user(u64_to_user_ptr(entries), out, bytes) ||
	    copy_to_user(uarg, arg, arg_size))
		ret = -EFAULT;
	kvfree(out);
	return ret;
}
