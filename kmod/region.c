// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem regions: memory, caps, the region file and its mappings.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

/* No region is ever larger than this, whatever the module parameter says. */
#define SYNCMEM_REGION_SIZE_LIMIT	BIT_ULL(40)

/*
 * Pages are charged to the caller's memory cgroup; a failed charge or
 * allocation is -ENOMEM for the caller, never an OOM kill or a warning.
 */
#define SYNCMEM_PAGE_GFP	(GFP_KERNEL_ACCOUNT | __GFP_ZERO | \
				 __GFP_NOWARN | __GFP_RETRY_MAYFAIL)

static DEFINE_SPINLOCK(syncmem_usage_lock);
static unsigned int syncmem_nr_regions;		/* under syncmem_usage_lock */
static u64 syncmem_region_bytes;		/* under syncmem_usage_lock */

void syncmem_region_stats(u64 *regions, u64 *bytes)
{
	spin_lock(&syncmem_usage_lock);
	*regions = syncmem_nr_regions;
	*bytes = syncmem_region_bytes;
	spin_unlock(&syncmem_usage_lock);
}

/* Take a region slot and @bytes from the caps before allocating. */
static int syncmem_usage_reserve(u64 bytes)
{
	u64 max_bytes = READ_ONCE(syncmem_max_total_bytes);
	int err = 0;

	spin_lock(&syncmem_usage_lock);
	if (syncmem_nr_regions >= READ_ONCE(syncmem_max_regions))
		err = -ENOSPC;
	else if (syncmem_region_bytes > max_bytes ||
		 bytes > max_bytes - syncmem_region_bytes)
		err = -ENOMEM;
	if (!err) {
		syncmem_nr_regions++;
		syncmem_region_bytes += bytes;
	}
	spin_unlock(&syncmem_usage_lock);
	return err;
}

static void syncmem_usage_release(u64 bytes)
{
	spin_lock(&syncmem_usage_lock);
	syncmem_nr_regions--;
	syncmem_region_bytes -= bytes;
	spin_unlock(&syncmem_usage_lock);
}

static void syncmem_region_free_pages(struct syncmem_region *r, unsigned long n)
{
	while (n--)
		__free_page(r->pages[n]);
	kvfree(r->pages);
}

/**
 * syncmem_region_create - allocate a zeroed region
 * @size:	Size in bytes, at least 1.
 * @name_len:	Room to reserve for a name (0 for an anonymous region).
 *
 * Returns the region with one reference, or an ERR_PTR: -EINVAL for size 0,
 * -E2BIG above max_region_size, -ENOSPC when max_regions regions exist,
 * -ENOMEM above max_total_bytes or when memory runs out, -EINTR on a fatal
 * signal during a long allocation.
 */
struct syncmem_region *syncmem_region_create(u64 size, u32 name_len)
{
	u64 limit = min_t(u64, READ_ONCE(syncmem_max_region_size),
			  SYNCMEM_REGION_SIZE_LIMIT);
	struct syncmem_region *r;
	unsigned long i, nr_pages;
	u64 bytes;
	int err;

	if (!size)
		return ERR_PTR(-EINVAL);
	if (size > limit)
		return ERR_PTR(-E2BIG);
	nr_pages = DIV_ROUND_UP(size, PAGE_SIZE);
	bytes = (u64)nr_pages << PAGE_SHIFT;

	err = syncmem_usage_reserve(bytes);
	if (err)
		return ERR_PTR(err);

	err = -ENOMEM;
	r = kzalloc(struct_size(r, name, name_len), GFP_KERNEL_ACCOUNT);
	if (!r)
		goto out_release;
	if (syncmem_region_queues_init(r))
		goto out_free;
	r->pages = kvcalloc(nr_pages, sizeof(*r->pages), GFP_KERNEL_ACCOUNT);
	if (!r->pages)
		goto out_queues;

	for (i = 0; i < nr_pages; i++) {
		r->pages[i] = alloc_page(SYNCMEM_PAGE_GFP);
		if (!r->pages[i]) {
			err = -ENOMEM;
			goto out_pages;
		}
		if (!(i % 512)) {
			if (fatal_signal_pending(current)) {
				err = -EINTR;
				i++;
				goto out_pages;
			}
			cond_resched();
		}
	}

	r->kaddr = vmap(r->pages, nr_pages, VM_MAP, PAGE_KERNEL);
	if (!r->kaddr) {
		err = -ENOMEM;
		goto out_pages;
	}
	kref_init(&r->ref);
	r->size = size;
	r->nr_pages = nr_pages;
	INIT_LIST_HEAD(&r->ns_node);
	INIT_HLIST_NODE(&r->hash_node);
	return r;

out_pages:
	syncmem_region_free_pages(r, i);
out_queues:
	syncmem_region_queues_destroy(r);
out_free:
	kfree(r);
out_release:
	syncmem_usage_release(bytes);
	return ERR_PTR(err);
}

static void syncmem_region_release(struct kref *ref)
{
	struct syncmem_region *r = container_of(ref, struct syncmem_region, ref);

	syncmem_region_queues_destroy(r);
	vunmap(r->kaddr);
	syncmem_region_free_pages(r, r->nr_pages);
	syncmem_usage_release((u64)r->nr_pages << PAGE_SHIFT);
	kfree(r);
}

void syncmem_region_put(struct syncmem_region *r)
{
	kref_put(&r->ref, syncmem_region_release);
}

static vm_fault_t syncmem_region_fault(struct vm_fault *vmf)
{
	struct syncmem_region *r = vmf->vma->vm_file->private_data;
	struct page *page;

	if (vmf->pgoff >= r->nr_pages)
		return VM_FAULT_SIGBUS;
	page = r->pages[vmf->pgoff];
	get_page(page);
	vmf->page = page;
	return 0;
}

static const struct vm_operations_struct syncmem_region_vm_ops = {
	.fault = syncmem_region_fault,
};

/*
 * MAP_SHARED only (a read-only fd loses VM_SHARED in do_mmap() but keeps
 * VM_MAYSHARE), never executable, never writable through a read-only fd,
 * never larger than the region and never grown by mremap().
 */
static int syncmem_region_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct syncmem_region *r = file->private_data;
	unsigned long pages = vma_pages(vma);
	vm_flags_t clear = VM_MAYEXEC;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	if (vma->vm_pgoff >= r->nr_pages || pages > r->nr_pages - vma->vm_pgoff)
		return -EINVAL;
	if (!(file->f_mode & FMODE_WRITE)) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		clear |= VM_MAYWRITE;
	}
	syncmem_vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTDUMP, clear);
	vma->vm_ops = &syncmem_region_vm_ops;
	return 0;
}

static int syncmem_region_file_release(struct inode *inode, struct file *file)
{
	syncmem_region_put(file->private_data);
	return 0;
}

static long syncmem_region_ioctl_info(struct file *file, void __user *uarg)
{
	struct syncmem_region *r = file->private_data;
	struct syncmem_region_info info = {
		.size = r->size,
		.waiters = atomic_read(&r->nr_waiters),
	};

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

	switch (cmd) {
	case SYNCMEM_IOC_REGION_INFO:
		return syncmem_region_ioctl_info(file, uarg);
	case SYNCMEM_IOC_WAIT:
		return syncmem_ioctl_wait(r, uarg);
	case SYNCMEM_IOC_NOTIFY:
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
		return syncmem_ioctl_notify(r, uarg);
	case SYNCMEM_IOC_HANDOFF:
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
		return syncmem_ioctl_handoff(r, uarg);
	default:
		return -ENOIOCTLCMD;
	}
}

static const struct file_operations syncmem_region_fops = {
	.owner		= THIS_MODULE,
	.release	= syncmem_region_file_release,
	.mmap		= syncmem_region_mmap,
	.unlocked_ioctl	= syncmem_region_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/**
 * syncmem_region_get_fd - the region behind a region fd, with a reference
 * @fd:		A file descriptor of the caller.
 * @writable:	Refuse a read-only fd.
 *
 * Returns the region or ERR_PTR(-EBADF) for a bad fd (or a read-only one
 * when @writable), ERR_PTR(-EINVAL) for a file that is not a syncmem region.
 */
struct syncmem_region *syncmem_region_get_fd(int fd, bool writable)
{
	struct syncmem_region *r = ERR_PTR(-EINVAL);
	struct fd f = fdget(fd);

	if (!f.file)
		return ERR_PTR(-EBADF);
	if (f.file->f_op == &syncmem_region_fops) {
		if (writable && !(f.file->f_mode & FMODE_WRITE)) {
			fdput(f);
			return ERR_PTR(-EBADF);
		}
		r = f.file->private_data;
		kref_get(&r->ref);
	}
	fdput(f);
	return r;
}

/**
 * syncmem_region_install_fd - give the caller a region fd (O_CLOEXEC)
 * @r:		The region; the new file takes its own reference.
 * @rdonly:	Open the file read-only.
 *
 * Returns the fd or a negative errno.
 */
int syncmem_region_install_fd(struct syncmem_region *r, bool rdonly)
{
	struct file *file;
	int fd;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	kref_get(&r->ref);
	file = anon_inode_getfile("[syncmem-region]", &syncmem_region_fops, r,
				  (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (IS_ERR(file)) {
		syncmem_region_put(r);
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	fd_install(fd, file);
	return fd;
}
