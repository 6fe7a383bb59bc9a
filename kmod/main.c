// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem: the module, and the entry points of its two kinds of file: the
 * /dev/syncmem misc device, whose opens are handles, and region files. The
 * file operations and the ioctl dispatch of both live here, above the
 * parts they call (the handle's async waits and on-close actions, the
 * region's waits, wake-ups, owner words, names and introspection); those
 * name no entry point.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"
#include "syncmem_version.h"

/* A handle of the caller with the state of each of its parts. */
static struct syncmem_handle *syncmem_handle_new(void)
{
	struct syncmem_handle *h = syncmem_handle_create();

	if (!h)
		return NULL;
	syncmem_async_handle_init(h);
	syncmem_on_close_init(h);
	return h;
}

/*
 * The handle's file is closing (maybe its process died). From the moment
 * it is marked closed, notifies and hand-offs pass its waiters over; then
 * its async waits end, and only then do the on-close actions run, so that
 * what they wake cannot come back to it.
 */
static void syncmem_handle_release(struct syncmem_handle *h)
{
	syncmem_handle_close(h);
	syncmem_async_release(h);
	syncmem_on_close_run(h);
	syncmem_handle_put(h);
}

static int syncmem_dev_open(struct inode *inode, struct file *file)
{
	struct syncmem_handle *h = syncmem_handle_new();

	if (!h)
		return -ENOMEM;
	file->private_data = h;
	syncmem_file_set_nowait(file);
	return 0;
}

static int syncmem_dev_release(struct inode *inode, struct file *file)
{
	syncmem_handle_release(file->private_data);
	return 0;
}

/* Completion records; io_uring reads them without a worker thread. */
static ssize_t syncmem_dev_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;

	return syncmem_handle_read(file->private_data, to,
				   (iocb->ki_flags & IOCB_NOWAIT) ||
				   (file->f_flags & O_NONBLOCK));
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
				   SYNCMEM_FEAT_ON_CLOSE | SYNCMEM_FEAT_LIMITS |
				   SYNCMEM_FEAT_REGION_LIST | SYNCMEM_FEAT_OWNERS |
				   SYNCMEM_FEAT_HANDOFF_WAITERS | SYNCMEM_FEAT_OWNER_QUERY |
				   SYNCMEM_FEAT_ON_CLOSE_ADD | SYNCMEM_FEAT_INTROSPECT |
				   SYNCMEM_FEAT_ON_CLOSE_MANY | SYNCMEM_FEAT_HANDLE_OPEN |
				   (IS_ENABLED(CONFIG_IO_URING) ?
				    SYNCMEM_FEAT_URING | SYNCMEM_FEAT_URING_LOCK |
				    SYNCMEM_FEAT_URING_NOTIFY : 0),
		.max_region_size = READ_ONCE(syncmem_max_region_size),
		.max_regions	 = min_t(unsigned long, syncmem_max_regions_now(), U32_MAX),
		.max_total_bytes = syncmem_max_total_bytes_now(),
	};

	return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
}

static int syncmem_region_install_fd(struct syncmem_region *r, bool rdonly);

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
		struct syncmem_ns *ns;

		/* Anonymous: always new, and read-only would make it useless. */
		if (arg.name_len || arg.flags)
			return -EINVAL;
		ns = syncmem_ns_get_current();
		if (!ns)
			return -ENOMEM;
		r = syncmem_region_create(arg.size, 0, ns);
		syncmem_ns_put(ns);
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

/* The caller's IPC namespace and user: nothing of anybody else's. */
static long syncmem_ioctl_stats(void __user *uarg)
{
	struct syncmem_ns *ns = syncmem_ns_get_current();
	struct syncmem_user *u = syncmem_user_find_current();
	struct syncmem_stats s = { 0 };

	if (!ns) {
		syncmem_user_put(u);
		return -ENOMEM;
	}
	s.regions = atomic_long_read(&ns->usage.regions);
	s.region_bytes = atomic_long_read(&ns->usage.bytes);
	s.named_regions = READ_ONCE(ns->nr_names);
	s.handles = atomic_long_read(&ns->usage.handles);
	s.waiters = atomic_long_read(&ns->usage.waiters);
	s.async_waits = atomic_long_read(&ns->usage.async_waits);
	syncmem_ns_put(ns);
	if (u) {
		s.user_regions = atomic_long_read(&u->usage.regions);
		s.user_bytes = atomic_long_read(&u->usage.bytes);
		s.user_async_waits = atomic_long_read(&u->usage.async_waits);
		s.user_on_close = atomic_long_read(&u->usage.on_close);
		syncmem_user_put(u);
	}
	return copy_to_user(uarg, &s, sizeof(s)) ? -EFAULT : 0;
}

static long syncmem_dev_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	struct syncmem_handle *h = file->private_data;
	void __user *uarg = (void __user *)arg;

	/* What only the device node allows (see syncmem_ioctl_handle_open()). */
	if (h->limited &&
	    (cmd == SYNCMEM_IOC_REGION_OPEN || cmd == SYNCMEM_IOC_REGION_UNLINK ||
	     cmd == SYNCMEM_IOC_REGION_LIST || cmd == SYNCMEM_IOC_STATS))
		return -EPERM;
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
	case SYNCMEM_IOC_REGION_LIST:
		return syncmem_ioctl_region_list(uarg);
	case SYNCMEM_IOC_OWNER:
		return syncmem_ioctl_owner(uarg);
	default:
		return -ENOIOCTLCMD;
	}
}

static const struct file_operations syncmem_dev_fops;

static long syncmem_ioctl_handle_open(void __user *uarg);

/* Closed in a process: its waiters away on @r can no longer come back. */
static int syncmem_region_file_flush(struct file *file, fl_owner_t id)
{
	syncmem_away_flush(file->private_data, id);
	return 0;
}

static long syncmem_region_ioctl_info(struct file *file, void __user *uarg)
{
	struct syncmem_region *r = file->private_data;
	struct syncmem_region_info info = {
		.size = r->size,
		.mode = r->mode,
		.waiters = atomic_read(&r->nr_waiters),
		.files = atomic_long_read(&r->nr_files),
		.mappings = atomic_long_read(&r->nr_mappings),
	};

	syncmem_region_owner(r, &info.uid, &info.gid);
	if (!(file->f_mode & FMODE_WRITE))
		info.flags |= SYNCMEM_INFO_RDONLY;
	if (syncmem_region_is_named(r))
		info.flags |= SYNCMEM_INFO_NAMED;
	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long syncmem_region_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	struct syncmem_region *r = file->private_data;
	void __user *uarg = (void __user *)arg;
	bool writable = file->f_mode & FMODE_WRITE;

	switch (cmd) {
	case SYNCMEM_IOC_REGION_INFO:
		return syncmem_region_ioctl_info(file, uarg);
	case SYNCMEM_IOC_WAIT:
		return syncmem_ioctl_wait(r, file, uarg);
	case SYNCMEM_IOC_NOTIFY:
		if (!writable)
			return -EBADF;
		return syncmem_ioctl_notify(r, uarg);
	case SYNCMEM_IOC_HANDOFF:
		if (!writable)
			return -EBADF;
		return syncmem_ioctl_handoff(r, uarg);
	case SYNCMEM_IOC_LOCK_WAIT:
		return syncmem_ioctl_lock_wait(r, file, uarg);
	case SYNCMEM_IOC_UNLOCK:
		if (!writable)
			return -EBADF;
		return syncmem_ioctl_unlock(r, uarg);
	case SYNCMEM_IOC_OWNER:
		return syncmem_ioctl_owner(uarg);
	case SYNCMEM_IOC_WAITERS:
		return syncmem_ioctl_waiters(r, uarg);
	case SYNCMEM_IOC_WHO:
		return syncmem_ioctl_who(r, uarg);
	case SYNCMEM_IOC_OBJECT_NAME:
		if (!writable)
			return -EBADF;
		return syncmem_ioctl_object_name(r, uarg);
	case SYNCMEM_IOC_OBJECTS:
		return syncmem_ioctl_objects(r, uarg);
	case SYNCMEM_IOC_ARMED:
		return syncmem_ioctl_armed(r, uarg);
	case SYNCMEM_IOC_HANDLE_OPEN:
		return syncmem_ioctl_handle_open(uarg);
	default:
		return -ENOIOCTLCMD;
	}
}

#ifdef CONFIG_IO_URING
static int syncmem_region_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct file *file = cmd->file;

	return syncmem_uring_cmd(file->private_data, !(file->f_mode & FMODE_WRITE), cmd,
				 issue_flags);
}
#endif

static const struct file_operations syncmem_region_fops = {
	.owner		= THIS_MODULE,
	.flush		= syncmem_region_file_flush,
	.release	= syncmem_region_file_release,
	.mmap		= syncmem_region_mmap,
	.show_fdinfo	= syncmem_region_show_fdinfo,
	.unlocked_ioctl	= syncmem_region_ioctl,
#ifdef CONFIG_IO_URING
	.uring_cmd	= syncmem_region_uring_cmd,
#endif
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/**
 * syncmem_ioctl_handle_open - a handle from a region fd (HANDLE_OPEN)
 * @uarg:	struct syncmem_handle_open.
 *
 * For a process that was given region fds but cannot open /dev/syncmem. The
 * handle is an anonymous file with the device's file operations, charged to
 * the caller as an open is, and limited to what a region fd already lets
 * its holder reach: it creates, unlinks and lists no regions and reads no
 * counters. Returns the fd (O_CLOEXEC) or a negative errno.
 */
static long syncmem_ioctl_handle_open(void __user *uarg)
{
	struct syncmem_handle_open arg;
	struct syncmem_handle *h;
	struct file *file;
	int fd;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.pad)
		return -EINVAL;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	h = syncmem_handle_new();
	if (!h) {
		put_unused_fd(fd);
		return -ENOMEM;
	}
	h->limited = true;
	/* Takes a module reference for the file (fops->owner). */
	file = anon_inode_getfile("[syncmem]", &syncmem_dev_fops, h, O_RDWR);
	if (IS_ERR(file)) {
		syncmem_handle_release(h);
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	syncmem_file_set_nowait(file);
	fd_install(fd, file);
	return fd;
}

/* /proc/<pid>/fdinfo/<fd> of a handle: its async waits and on-close actions. */
static void syncmem_dev_show_fdinfo(struct seq_file *m, struct file *file)
{
	syncmem_async_show_fdinfo(m, file->private_data);
	syncmem_on_close_show(m, file->private_data);
}

static const struct file_operations syncmem_dev_fops = {
	.owner		= THIS_MODULE,
	.open		= syncmem_dev_open,
	.release	= syncmem_dev_release,
	.read_iter	= syncmem_dev_read_iter,
	.poll		= syncmem_dev_poll,
	.unlocked_ioctl	= syncmem_dev_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
	.show_fdinfo	= syncmem_dev_show_fdinfo,
};

/**
 * syncmem_region_install_fd - give the caller a region fd (O_CLOEXEC)
 * @r:		The region; the new file takes its own reference.
 * @rdonly:	Open the file read-only.
 *
 * Returns the fd or a negative errno.
 */
static int syncmem_region_install_fd(struct syncmem_region *r, bool rdonly)
{
	struct file *file;
	int fd;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	kref_get(&r->ref);
	file = syncmem_fs_file(r, rdonly, &syncmem_region_fops);
	if (IS_ERR(file)) {
		syncmem_region_put(r);
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	atomic_long_inc(&r->nr_files);
	fd_install(fd, file);
	return fd;
}

static struct miscdevice syncmem_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "syncmem",
	.fops	= &syncmem_dev_fops,
	.mode	= 0666,
};

static int __init syncmem_init(void)
{
	int err;

	err = syncmem_limits_init();
	if (err)
		return err;
	err = syncmem_ns_init();
	if (err)
		goto out_limits;
	err = syncmem_fs_init();
	if (err)
		goto out_ns;
	err = syncmem_queue_init();
	if (err)
		goto out_fs;
	err = syncmem_lockword_init();
	if (err)
		goto out_queue;
	err = syncmem_owner_init();
	if (err)
		goto out_lockword;
	err = syncmem_async_init();
	if (err)
		goto out_owner;
	err = syncmem_uring_init();
	if (err)
		goto out_async;
	err = misc_register(&syncmem_miscdev);
	if (err)
		goto out_uring;
	return 0;

out_uring:
	syncmem_uring_exit();
out_async:
	syncmem_async_exit();
out_owner:
	syncmem_owner_exit();
out_lockword:
	syncmem_lockword_exit();
out_queue:
	syncmem_queue_exit();
out_fs:
	syncmem_fs_exit();
out_ns:
	syncmem_ns_exit();
out_limits:
	syncmem_limits_exit();
	return err;
}

static void __exit syncmem_exit(void)
{
	misc_deregister(&syncmem_miscdev);
	/* Async and ring waits hold regions: let them go first. */
	syncmem_uring_exit();
	syncmem_async_exit();
	/* Before owners: ending a waiter away asks whether owners live. */
	syncmem_away_exit();
	syncmem_owner_exit();
	syncmem_ns_exit();
	syncmem_lockword_exit();
	syncmem_queue_exit();
	syncmem_fs_exit();
	/* kfree_rcu() of users and namespaces; dentries putting the module */
	rcu_barrier();
	syncmem_limits_exit();
}

module_init(syncmem_init);
module_exit(syncmem_exit);

MODULE_DESCRIPTION("Shared memory regions and cross-process wait queues");
MODULE_AUTHOR("The syncmem developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(SYNCMEM_VERSION);
