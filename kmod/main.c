// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem: the /dev/syncmem misc device, its handles and the handle ioctls.
 */
#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "syncmem_core.h"

unsigned long syncmem_max_region_size = 1UL << 30;
module_param_named(max_region_size, syncmem_max_region_size, ulong, 0644);
MODULE_PARM_DESC(max_region_size, "Largest region in bytes (default 1 GiB); larger is -E2BIG");

unsigned int syncmem_max_regions = 4096;
module_param_named(max_regions, syncmem_max_regions, uint, 0644);
MODULE_PARM_DESC(max_regions, "Most regions alive at once (default 4096); more is -ENOSPC");

unsigned long syncmem_max_total_bytes;
module_param_named(max_total_bytes, syncmem_max_total_bytes, ulong, 0644);
MODULE_PARM_DESC(max_total_bytes, "Most bytes in all regions (default: half of RAM); more is -ENOMEM");

unsigned int syncmem_max_async_waits = 1U << 17;
module_param_named(max_async_waits, syncmem_max_async_waits, uint, 0644);
MODULE_PARM_DESC(max_async_waits, "Most outstanding async waits per handle (default 131072); more is -EAGAIN");

static atomic_t syncmem_nr_handles = ATOMIC_INIT(0);

static int syncmem_dev_open(struct inode *inode, struct file *file)
{
	struct syncmem_handle *h = syncmem_handle_create();

	if (!h)
		return -ENOMEM;
	file->private_data = h;
	atomic_inc(&syncmem_nr_handles);
	return 0;
}

static int syncmem_dev_release(struct inode *inode, struct file *file)
{
	syncmem_on_close_run(file->private_data);
	syncmem_handle_close(file->private_data);
	atomic_dec(&syncmem_nr_handles);
	return 0;
}

static ssize_t syncmem_dev_read(struct file *file, char __user *buf,
				size_t count, loff_t *ppos)
{
	return syncmem_handle_read(file->private_data, buf, count,
				   file->f_flags & O_NONBLOCK);
}

static __poll_t syncmem_dev_poll(struct file *file, poll_table *pt)
{
	return syncmem_handle_poll(file->private_data, file, pt);
}

/*
 * Copy a name from user space into @buf (SYNCMEM_NAME_MAX bytes).
 * Returns 0, -EINVAL (empty or containing NUL), -ENAMETOOLONG or -EFAULT.
 */
static int syncmem_copy_name(char *buf, u64 uname, u32 len)
{
	if (!len)
		return -EINVAL;
	if (len > SYNCMEM_NAME_MAX)
		return -ENAMETOOLONG;
	if (copy_from_user(buf, u64_to_user_ptr(uname), len))
		return -EFAULT;
	if (memchr(buf, '\0', len))
		return -EINVAL;
	return 0;
}

static long syncmem_ioctl_version(void __user *uarg)
{
	struct syncmem_version v = {
		.abi_version	 = SYNCMEM_ABI_VERSION,
		.name_max	 = SYNCMEM_NAME_MAX,
		.features	 = SYNCMEM_FEAT_REGIONS | SYNCMEM_FEAT_WAIT |
				   SYNCMEM_FEAT_ASYNC | SYNCMEM_FEAT_HANDOFF_ADD |
				   SYNCMEM_FEAT_ON_CLOSE,
		.max_region_size = READ_ONCE(syncmem_max_region_size),
		.max_regions	 = READ_ONCE(syncmem_max_regions),
		.max_total_bytes = READ_ONCE(syncmem_max_total_bytes),
	};

	return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
}

static long syncmem_ioctl_region_open(void __user *uarg)
{
	struct syncmem_region_open arg;
	struct syncmem_region *r;
	char name[SYNCMEM_NAME_MAX];
	bool rdonly;
	int fd, err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad || (arg.flags & ~SYNCMEM_REGION_OPEN_FLAGS) ||
	    (arg.mode & ~0777U))
		return -EINVAL;
	if ((arg.flags & SYNCMEM_REGION_EXCL) &&
	    !(arg.flags & SYNCMEM_REGION_CREATE))
		return -EINVAL;
	rdonly = arg.flags & SYNCMEM_REGION_RDONLY;

	if (!arg.name) {
		/* Anonymous: nobody else could ever write a read-only one. */
		if (arg.name_len || rdonly)
			return -EINVAL;
		r = syncmem_region_create(arg.size, 0);
	} else {
		err = syncmem_copy_name(name, arg.name, arg.name_len);
		if (err)
			return err;
		r = syncmem_names_open(name, arg.name_len, arg.flags, arg.size,
				       arg.mode);
	}
	if (IS_ERR(r))
		return PTR_ERR(r);

	/* Report the size before the fd exists, so no fd can leak on -EFAULT. */
	arg.size = r->size;
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		syncmem_region_put(r);
		return -EFAULT;
	}
	fd = syncmem_region_install_fd(r, rdonly);
	syncmem_region_put(r);
	return fd;
}

static long syncmem_ioctl_region_unlink(void __user *uarg)
{
	struct syncmem_region_unlink arg;
	char name[SYNCMEM_NAME_MAX];
	int err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags)
		return -EINVAL;
	err = syncmem_copy_name(name, arg.name, arg.name_len);
	if (err)
		return err;
	return syncmem_names_unlink(name, arg.name_len);
}

static long syncmem_ioctl_stats(void __user *uarg)
{
	struct syncmem_stats s = {
		.named_regions	= syncmem_names_count(),
		.handles	= atomic_read(&syncmem_nr_handles),
		.waiters	= syncmem_waiters_total(),
		.async_waits	= syncmem_async_total(),
	};

	syncmem_region_stats(&s.regions, &s.region_bytes);
	return copy_to_user(uarg, &s, sizeof(s)) ? -EFAULT : 0;
}

static long syncmem_dev_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	struct syncmem_handle *h = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case SYNCMEM_IOC_SET_EVENTFD:
		return syncmem_ioctl_set_eventfd(h, uarg);
	case SYNCMEM_IOC_WAIT_ASYNC:
		return syncmem_ioctl_wait_async(h, uarg);
	case SYNCMEM_IOC_CANCEL:
		return syncmem_ioctl_cancel(h, uarg);
	case SYNCMEM_IOC_POST:
		return syncmem_ioctl_post(h, uarg);
	case SYNCMEM_IOC_ARM_ON_CLOSE:
		return syncmem_ioctl_arm_on_close(h, uarg);
	case SYNCMEM_IOC_DISARM:
		return syncmem_ioctl_disarm(h, uarg);
	case SYNCMEM_IOC_VERSION:
		return syncmem_ioctl_version(uarg);
	case SYNCMEM_IOC_REGION_OPEN:
		return syncmem_ioctl_region_open(uarg);
	case SYNCMEM_IOC_REGION_UNLINK:
		return syncmem_ioctl_region_unlink(uarg);
	case SYNCMEM_IOC_STATS:
		return syncmem_ioctl_stats(uarg);
	default:
		return -ENOIOCTLCMD;
	}
}

static const struct file_operations syncmem_dev_fops = {
	.owner		= THIS_MODULE,
	.open		= syncmem_dev_open,
	.release	= syncmem_dev_release,
	.read		= syncmem_dev_read,
	.poll		= syncmem_dev_poll,
	.unlocked_ioctl	= syncmem_dev_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice syncmem_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "syncmem",
	.fops	= &syncmem_dev_fops,
	.mode	= 0666,
};

static int __init syncmem_init(void)
{
	int err;

	if (!syncmem_max_total_bytes)
		syncmem_max_total_bytes = (totalram_pages() / 2) << PAGE_SHIFT;
	err = syncmem_wait_init();
	if (err)
		return err;
	err = syncmem_async_init();
	if (err)
		goto out_wait;
	err = misc_register(&syncmem_miscdev);
	if (err)
		goto out_async;
	return 0;

out_async:
	syncmem_async_exit();
out_wait:
	syncmem_wait_exit();
	return err;
}

static void __exit syncmem_exit(void)
{
	misc_deregister(&syncmem_miscdev);
	syncmem_names_exit();
	syncmem_async_exit();
	syncmem_wait_exit();
}

module_init(syncmem_init);
module_exit(syncmem_exit);

MODULE_DESCRIPTION("Shared memory regions and cross-process wait queues");
MODULE_AUTHOR("The syncmem developers");
MODULE_LICENSE("GPL");
