// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem regions: memory, charging, mappings, and the region behind a
 * region file (whose file operations and ioctls main.c dispatches).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/rbtree.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

/*
 * No region is ever larger than this, whatever the module parameter says
 * (its page array must stay below kvmalloc's 2 GiB).
 */
#define SYNCMEM_REGION_SIZE_LIMIT	BIT_ULL(38)

/*
 * Pages are charged to the caller's memory cgroup; a failed charge or
 * allocation is -ENOMEM for the caller, never an OOM kill or a warning.
 */
#define SYNCMEM_PAGE_GFP	(GFP_KERNEL_ACCOUNT | __GFP_ZERO | \
				 __GFP_NOWARN | __GFP_RETRY_MAYFAIL)

static void syncmem_region_free_pages(struct syncmem_region *r, unsigned long n)
{
	while (n--)
		__free_page(r->pages[n]);
	kvfree(r->pages);
}

/*
 * Allocate the pages of @r; 0, -ENOMEM or -EINTR. They stay unmapped in the
 * kernel: a word is read through the direct map of its own page
 * (syncmem_region_word()), so a region costs no vmalloc space and no
 * uncharged vmap bookkeeping.
 */
static int syncmem_region_alloc_pages(struct syncmem_region *r)
{
	unsigned long i;

	r->pages = kvcalloc(r->nr_pages, sizeof(*r->pages),
			    GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!r->pages)
		return -ENOMEM;
	for (i = 0; i < r->nr_pages; i++) {
		r->pages[i] = alloc_page(SYNCMEM_PAGE_GFP);
		if (!r->pages[i])
			goto fail;
		if (!(i % 512)) {
			if (fatal_signal_pending(current)) {
				__free_page(r->pages[i]);
				syncmem_region_free_pages(r, i);
				return -EINTR;
			}
			cond_resched();
		}
	}
	return 0;
fail:
	syncmem_region_free_pages(r, i);
	return -ENOMEM;
}

/**
 * syncmem_region_create - allocate a zeroed region, charged to the caller
 * @size:	Size in bytes, at least 1.
 * @name_len:	Room to reserve for a name (0 for an anonymous region).
 * @ns:		The caller's IPC namespace (the region takes a reference).
 *
 * Returns the region with one reference, or an ERR_PTR: -EINVAL for size 0,
 * -E2BIG above max_region_size, a limit's -ENOSPC, -ENOMEM or -EDQUOT
 * (limits.c), -ENOMEM when memory runs out, -EINTR on a fatal signal during
 * a long allocation.
 */
struct syncmem_region *syncmem_region_create(u64 size, u32 name_len,
					     struct syncmem_ns *ns)
{
	u64 limit = min_t(u64, READ_ONCE(syncmem_max_region_size),
			  SYNCMEM_REGION_SIZE_LIMIT);
	struct syncmem_region *r;
	int err;

	if (!size)
		return ERR_PTR(-EINVAL);
	if (size > limit)
		return ERR_PTR(-E2BIG);

	r = kzalloc(struct_size(r, name, name_len), GFP_KERNEL_ACCOUNT);
	if (!r)
		return ERR_PTR(-ENOMEM);
	r->size = size;
	r->nr_pages = DIV_ROUND_UP(size, PAGE_SIZE);
	r->uid = current_fsuid();
	r->gid = current_fsgid();
	r->mode = 0600;
	INIT_LIST_HEAD(&r->ns_node);
	/* No audit record: most callers do not have it and need not. */
	r->unlimited = ns_capable_noaudit(&init_user_ns, CAP_SYS_RESOURCE);
	r->user = syncmem_user_get_current();
	if (!r->user) {
		kfree(r);
		return ERR_PTR(-ENOMEM);
	}
	/* Charge before allocating: a refused region costs nothing. */
	err = syncmem_charge_region(r->user, ns, (u64)r->nr_pages << PAGE_SHIFT,
				    r->unlimited);
	if (err)
		goto out_user;
	refcount_inc(&ns->ref);
	r->ns = ns;

	err = syncmem_region_queues_init(r);
	if (err)
		goto out_charge;
	syncmem_region_owner_init(r);
	INIT_LIST_HEAD(&r->away);
	mutex_init(&r->away_flush_mutex);
	err = syncmem_region_alloc_pages(r);
	if (err)
		goto out_queues;
	r->inode = syncmem_fs_inode(r);
	if (IS_ERR(r->inode)) {
		err = PTR_ERR(r->inode);
		goto out_pages;
	}
	r->inode->i_uid = r->uid;
	r->inode->i_gid = r->gid;
	syncmem_objects_init(r);
	syncmem_armed_init(r);
	spin_lock_init(&r->mappers_lock);
	r->mappers = RB_ROOT;
	kref_init(&r->ref);
	return r;

out_pages:
	syncmem_region_free_pages(r, r->nr_pages);
out_queues:
	syncmem_region_queues_destroy(r);
out_charge:
	syncmem_uncharge_region(r->user, ns, (u64)r->nr_pages << PAGE_SHIFT);
	syncmem_ns_put(ns);
out_user:
	syncmem_user_put(r->user);
	kfree(r);
	return ERR_PTR(err);
}

static void syncmem_region_release(struct kref *ref)
{
	struct syncmem_region *r = container_of(ref, struct syncmem_region, ref);

	WARN_ON_ONCE(!RB_EMPTY_ROOT(&r->mappers));	/* a mapping pins its file */
	iput(r->inode);
	syncmem_objects_destroy(r);
	syncmem_region_queues_destroy(r);
	syncmem_region_free_pages(r, r->nr_pages);
	syncmem_uncharge_region(r->user, r->ns, (u64)r->nr_pages << PAGE_SHIFT);
	syncmem_ns_put(r->ns);
	syncmem_user_put(r->user);
	kfree(r);
}

void syncmem_region_put(struct syncmem_region *r)
{
	kref_put(&r->ref, syncmem_region_release);
}

/* Owner and group of @r as the caller's user namespace sees them. */
void syncmem_region_owner(struct syncmem_region *r, u32 *uid, u32 *gid)
{
	struct user_namespace *user_ns = current_user_ns();

	*uid = from_kuid_munged(user_ns, r->uid);
	*gid = from_kgid_munged(user_ns, r->gid);
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

/*
 * An address space that maps a region, and how many of its VMAs do. Each
 * VMA of a region points at its own address space's mapper through
 * vm_private_data (NULL if it could not be counted), so that only what was
 * counted is taken back. The VMAs of a region never merge (VM_DONTEXPAND
 * is one of VM_SPECIAL), and each one is counted once, by the mmap handler
 * or by vm_ops->open when a fork, a split or an mremap() copies one, and
 * taken back once, by vm_ops->close. A listed mm therefore maps the region,
 * hence is alive; only the region's own users can add one.
 */
struct syncmem_mapper {
	struct rb_node node;		/* in r->mappers, by @mm */
	struct mm_struct *mm;		/* compared only */
	unsigned long nr_vmas;
};

/* Count @vma (of @r) in its mm's mapper: 0, or -ENOMEM if not counted. */
static int syncmem_mapper_add(struct syncmem_region *r, struct vm_area_struct *vma)
{
	unsigned long key = (unsigned long)vma->vm_mm;
	struct syncmem_mapper *m, *new = NULL;
	struct rb_node **link, *parent;

	vma->vm_private_data = NULL;
	for (;;) {
		spin_lock(&r->mappers_lock);
		link = &r->mappers.rb_node;
		parent = NULL;
		while (*link) {
			parent = *link;
			m = rb_entry(parent, struct syncmem_mapper, node);
			if (key == (unsigned long)m->mm)
				goto found;
			link = key < (unsigned long)m->mm ? &parent->rb_left :
							    &parent->rb_right;
		}
		if (new)
			break;
		/* The mm's first VMA of @r; no other can come meanwhile. */
		spin_unlock(&r->mappers_lock);
		new = kmalloc(sizeof(*new), GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (!new)
			return -ENOMEM;
	}
	m = new;
	new = NULL;
	m->mm = vma->vm_mm;
	m->nr_vmas = 0;
	rb_link_node(&m->node, parent, link);
	rb_insert_color(&m->node, &r->mappers);
found:
	m->nr_vmas++;
	spin_unlock(&r->mappers_lock);
	kfree(new);
	vma->vm_private_data = m;
	return 0;
}

static void syncmem_mapper_drop(struct syncmem_region *r, struct vm_area_struct *vma)
{
	struct syncmem_mapper *m = vma->vm_private_data;

	if (!m)
		return;
	vma->vm_private_data = NULL;
	spin_lock(&r->mappers_lock);
	if (--m->nr_vmas)
		m = NULL;
	else
		rb_erase(&m->node, &r->mappers);
	spin_unlock(&r->mappers_lock);
	kfree(m);
}

/**
 * syncmem_region_mapped_by - does @mm map @r?
 * @r:	A region.
 * @mm:	Any address space, alive or not: only compared.
 *
 * O(log n) in the address spaces that map @r; takes only @r's lock, never
 * one of @mm's. May say no for an mm whose VMA could not be counted when a
 * fork copied it (no memory): the answer errs towards telling less.
 */
bool syncmem_region_mapped_by(struct syncmem_region *r, const struct mm_struct *mm)
{
	unsigned long key = (unsigned long)mm;
	struct rb_node *n;
	bool found = false;

	spin_lock(&r->mappers_lock);
	for (n = r->mappers.rb_node; n && !found;) {
		struct syncmem_mapper *m = rb_entry(n, struct syncmem_mapper, node);

		found = key == (unsigned long)m->mm;
		n = key < (unsigned long)m->mm ? n->rb_left : n->rb_right;
	}
	spin_unlock(&r->mappers_lock);
	return found;
}

/* A mapping copied by fork() or mremap(), or split in two. */
static void syncmem_region_vm_open(struct vm_area_struct *vma)
{
	struct syncmem_region *r = vma->vm_file->private_data;

	atomic_long_inc(&r->nr_mappings);
	/* No memory: the copy is not counted (see syncmem_region_mapped_by()). */
	syncmem_mapper_add(r, vma);
}

/*
 * A mapping goes. With no user left of its address space, exit_mmap() is
 * tearing that down (at exit, or the old one of an execve): the programs
 * that ran in it have ended.
 */
static void syncmem_region_vm_close(struct vm_area_struct *vma)
{
	struct syncmem_region *r = vma->vm_file->private_data;

	syncmem_mapper_drop(r, vma);
	atomic_long_dec(&r->nr_mappings);
	if (!atomic_read(&vma->vm_mm->mm_users))
		syncmem_owner_mm_gone(vma->vm_mm);
}

static const struct vm_operations_struct syncmem_region_vm_ops = {
	.open	= syncmem_region_vm_open,
	.close	= syncmem_region_vm_close,
	.fault	= syncmem_region_fault,
};

/*
 * MAP_SHARED only (a read-only fd loses VM_SHARED in do_mmap() but keeps
 * VM_MAYSHARE), never executable, never writable through a read-only fd,
 * never larger than the region and never grown by mremap().
 */
int syncmem_region_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct syncmem_region *r = file->private_data;
	unsigned long pages = vma_pages(vma);
	vm_flags_t clear = VM_MAYEXEC;
	int err;

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
	/* Last: nothing fails after it, and a failed mmap is never closed. */
	err = syncmem_mapper_add(r, vma);
	if (err)
		return err;
	syncmem_vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTDUMP, clear);
	vma->vm_ops = &syncmem_region_vm_ops;
	atomic_long_inc(&r->nr_mappings);
	return 0;
}

int syncmem_region_file_release(struct inode *inode, struct file *file)
{
	struct syncmem_region *r = file->private_data;

	atomic_long_dec(&r->nr_files);
	syncmem_region_put(r);
	return 0;
}

/**
 * syncmem_region_get_fd - the region behind a region fd, with a reference
 * @fd:		A file descriptor of the caller.
 * @writable:	Refuse a read-only fd.
 * @rdonly:	Set to whether the fd is read-only (may be NULL).
 *
 * Returns the region or ERR_PTR(-EBADF) for a bad fd (or a read-only one
 * when @writable), ERR_PTR(-EINVAL) for a file that is not a syncmem region.
 */
struct syncmem_region *syncmem_region_get_fd(int fd, bool writable,
					     bool *rdonly)
{
	struct syncmem_region *r;
	struct fd f = fdget(fd);
	struct file *file = fd_file(f);

	if (!file)
		return ERR_PTR(-EBADF);
	r = syncmem_fs_file_region(file);
	if (!r) {
		r = ERR_PTR(-EINVAL);
	} else if (writable && !(file->f_mode & FMODE_WRITE)) {
		r = ERR_PTR(-EBADF);
	} else {
		if (rdonly)
			*rdonly = !(file->f_mode & FMODE_WRITE);
		kref_get(&r->ref);
	}
	fdput(f);
	return r;
}

