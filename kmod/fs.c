// SPDX-License-Identifier: GPL-2.0
/*
 * The filesystem behind region files: an internal (never mounted by users)
 * pseudo filesystem in which every region has an inode of its own, as
 * memfd, secretmem and dma-buf objects do. The inode gives the region its
 * identity (its own st_ino and i_mmap tree, not the single inode the kernel
 * shares among anonymous files), carries its owner and mode for
 * inode_permission(), and, where the kernel lets modules have it labelled,
 * is labelled by the LSMs when it is made (they then also see every open of
 * a name; an unlabelled inode is private to them).
 *
 * A dentry can outlive every file of its region (an O_PATH reopen of
 * /proc/PID/fd/N holds it, and its name is printed by this module's
 * syncmem_dname()), so each dentry of a region file holds a module
 * reference, given back an RCU grace period after the dentry is released
 * (module exit waits for the callback with rcu_barrier()). An inode does
 * not: the name of a region nobody uses holds only the inode, and must not
 * keep the module loaded (unloading drops it, and frees the inode).
 *
 * The mount is noexec: a region is never executable, and a process with the
 * READ_IMPLIES_EXEC personality still maps it (the kernel adds PROT_EXEC to
 * its PROT_READ mappings only on executable mounts).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

#define SYNCMEM_FS_MAGIC	0x53594e43	/* "SYNC" */

static struct vfsmount *syncmem_mnt;

/* "syncmem:NAME" in /proc/PID/maps and fd links. */
static char *syncmem_dname(struct dentry *dentry, char *buffer, int buflen)
{
	static const char prefix[] = "syncmem:";
	size_t len = dentry->d_name.len;
	char *p;

	if (sizeof(prefix) + len > (size_t)buflen)
		return ERR_PTR(-ENAMETOOLONG);
	p = buffer + buflen - (sizeof(prefix) + len);
	memcpy(p, prefix, sizeof(prefix) - 1);
	memcpy(p + sizeof(prefix) - 1, dentry->d_name.name, len);
	p[sizeof(prefix) - 1 + len] = '\0';
	return p;
}

/* A region file's dentry's module reference (in its d_fsdata). */
struct syncmem_dentry_ref {
	struct rcu_head rcu;
};

static void syncmem_dentry_ref_free(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct syncmem_dentry_ref, rcu));
	module_put(THIS_MODULE);
}

/*
 * The dentry is dead; its name is never printed again. The module is put
 * from an RCU callback, not here: returning from this function still runs
 * this module's code.
 */
static void syncmem_d_release(struct dentry *dentry)
{
	struct syncmem_dentry_ref *ref = dentry->d_fsdata;

	if (ref)
		call_rcu(&ref->rcu, syncmem_dentry_ref_free);
}

static const struct dentry_operations syncmem_dops = {
	.d_dname	= syncmem_dname,
	.d_release	= syncmem_d_release,
};

static const struct super_operations syncmem_super_ops = {
	.statfs		= simple_statfs,
	.drop_inode	= generic_delete_inode,
};

static int syncmem_init_fs_context(struct fs_context *fc)
{
	struct pseudo_fs_context *ctx = init_pseudo(fc, SYNCMEM_FS_MAGIC);

	if (!ctx)
		return -ENOMEM;
	ctx->ops = &syncmem_super_ops;
	ctx->dops = &syncmem_dops;
	fc->s_iflags |= SB_I_NOEXEC | SB_I_NODEV;
	return 0;
}

static struct file_system_type syncmem_fs_type = {
	.name		 = "syncmem",
	.init_fs_context = syncmem_init_fs_context,
	.kill_sb	 = kill_anon_super,
};

int syncmem_fs_init(void)
{
	syncmem_mnt = kern_mount(&syncmem_fs_type);
	if (IS_ERR(syncmem_mnt))
		return PTR_ERR(syncmem_mnt);
	syncmem_mnt->mnt_flags |= MNT_NOEXEC;
	return 0;
}

void syncmem_fs_exit(void)
{
	kern_unmount(syncmem_mnt);
}

/* Owner and mode change only through syncmem; size never. */
static int syncmem_inode_setattr(struct syncmem_idmap *idmap,
				 struct dentry *dentry, struct iattr *attr)
{
	return -EPERM;
}

static const struct inode_operations syncmem_inode_ops = {
	.setattr	= syncmem_inode_setattr,
};

/* The inode of a new region: owner and group of the caller, mode 0600. */
struct inode *syncmem_fs_inode(struct syncmem_region *r)
{
	struct inode *inode = syncmem_secure_inode(syncmem_mnt->mnt_sb,
						   "[syncmem-region]");

	if (IS_ERR(inode))
		return inode;
	inode->i_op = &syncmem_inode_ops;
	inode->i_mode = 0600;
	inode->i_size = r->size;
	inode->i_private = r;
	return inode;
}

/**
 * syncmem_fs_file - a new file of @r's inode
 * @r:		The region; the caller gives the file its reference.
 * @rdonly:	Open it read-only.
 * @fops:	The region file operations.
 *
 * Returns the file (O_RDWR or O_RDONLY, O_CLOEXEC is the fd's business) or
 * an ERR_PTR.
 */
struct file *syncmem_fs_file(struct syncmem_region *r, bool rdonly,
			     const struct file_operations *fops)
{
	char buf[SYNCMEM_NAME_MAX + 1] = "[anonymous]";
	struct syncmem_dentry_ref *ref;
	struct file *file;

	/* The dentry's name: the region's name (set once, never changed). */
	if (r->name_len) {
		memcpy(buf, r->name, r->name_len);
		buf[r->name_len] = '\0';
	}
	ref = kmalloc(sizeof(*ref), GFP_KERNEL_ACCOUNT);
	if (!ref)
		return ERR_PTR(-ENOMEM);
	/* alloc_file_pseudo() takes neither the module nor the inode. */
	if (!try_module_get(fops->owner)) {
		kfree(ref);
		return ERR_PTR(-ENOENT);
	}
	ihold(r->inode);
	file = alloc_file_pseudo(r->inode, syncmem_mnt, buf,
				 rdonly ? O_RDONLY : O_RDWR, fops);
	if (IS_ERR(file)) {
		iput(r->inode);
		module_put(fops->owner);
		kfree(ref);
		return file;
	}
	/* The file's new dentry: put by syncmem_d_release(). */
	__module_get(THIS_MODULE);
	file->f_path.dentry->d_fsdata = ref;
	file->private_data = r;
	return file;
}

/*
 * The region of @file if it is a region file (the only files of this
 * filesystem: its inodes cannot be opened again by path), else NULL.
 */
struct syncmem_region *syncmem_fs_file_region(struct file *file)
{
	return file->f_path.mnt == syncmem_mnt ? file->private_data : NULL;
}

/* May the caller open @r read-only, or read-write? 0 or -EACCES. */
int syncmem_fs_permission(struct syncmem_region *r, bool rdonly)
{
	return syncmem_inode_permission(r->inode,
					MAY_READ | (rdonly ? 0 : MAY_WRITE));
}

/**
 * syncmem_fs_may_read - does @r's mode let the caller read it?
 * @r:	A region.
 *
 * What generic_permission() decides for MAY_READ on its inode (which has no
 * ACL): the owner's, group's or others' read bit, whichever class the
 * caller is in, else CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH over its owner
 * and group. Without the LSMs and without auditing: for what a listing
 * shows, which must not log a denial for each region it lists.
 */
bool syncmem_fs_may_read(struct syncmem_region *r)
{
	struct user_namespace *ns = current_user_ns();
	const struct inode *inode = r->inode;
	umode_t mode = inode->i_mode;

	if (uid_eq(current_fsuid(), inode->i_uid))
		mode >>= 6;
	else if (in_group_p(inode->i_gid))
		mode >>= 3;
	if (mode & 0004)
		return true;
	if (!kuid_has_mapping(ns, inode->i_uid) || !kgid_has_mapping(ns, inode->i_gid))
		return false;
	return ns_capable_noaudit(ns, CAP_DAC_OVERRIDE) ||
	       ns_capable_noaudit(ns, CAP_DAC_READ_SEARCH);
}
