/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces of the syncmem module.
 */
#ifndef _SYNCMEM_CORE_H
#define _SYNCMEM_CORE_H

#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/rhashtable-types.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <uapi/linux/syncmem.h>

struct syncmem_ns;

/*
 * A region: zeroed pages mapped contiguously into the kernel (for the value
 * checks of waits) and faulted into user mappings.
 *
 * References: one from the name table while the region has a name, one from
 * every region file. A mapping pins its file, hence the region.
 */
struct syncmem_region {
	struct kref ref;
	struct page **pages;
	void *kaddr;
	u64 size;
	unsigned long nr_pages;

	/* Wait queues by byte offset (wait.c). */
	struct rhashtable queues;
	atomic_t nr_waiters;
	atomic_t nr_idle_queues;

	/* The name and its owner; changed only under syncmem_names_mutex. */
	struct syncmem_ns *ns;		/* NULL once unlinked (or anonymous) */
	struct hlist_node hash_node;
	struct list_head ns_node;
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	u32 name_len;
	char name[];
};

/* Module parameters (main.c). */
extern unsigned long syncmem_max_region_size;
extern unsigned int syncmem_max_regions;
extern unsigned long syncmem_max_total_bytes;

/* region.c */
struct syncmem_region *syncmem_region_create(u64 size, u32 name_len);
void syncmem_region_put(struct syncmem_region *r);
int syncmem_region_install_fd(struct syncmem_region *r, bool rdonly);
void syncmem_region_stats(u64 *regions, u64 *bytes);

/* wait.c */
int syncmem_wait_init(void);
void syncmem_wait_exit(void);
u64 syncmem_waiters_total(void);
int syncmem_region_queues_init(struct syncmem_region *r);
void syncmem_region_queues_destroy(struct syncmem_region *r);
long syncmem_ioctl_wait(struct syncmem_region *r, void __user *uarg);
long syncmem_ioctl_notify(struct syncmem_region *r, void __user *uarg);
long syncmem_ioctl_handoff(struct syncmem_region *r, void __user *uarg);

/* names.c */
struct syncmem_region *syncmem_names_open(const char *name, u32 name_len,
					  u32 flags, u64 size, umode_t mode);
int syncmem_names_unlink(const char *name, u32 name_len);
u64 syncmem_names_count(void);
bool syncmem_region_is_named(struct syncmem_region *r);
void syncmem_names_exit(void);

#endif /* _SYNCMEM_CORE_H */
