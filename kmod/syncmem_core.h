/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces of the syncmem module.
 */
#ifndef _SYNCMEM_CORE_H
#define _SYNCMEM_CORE_H

#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rhashtable-types.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <uapi/linux/syncmem.h>

struct syncmem_ns;
struct syncmem_queue;

enum syncmem_waiter_state {
	SYNCMEM_W_QUEUED,
	SYNCMEM_W_WOKEN,
	SYNCMEM_W_HANDED_OFF,
	SYNCMEM_W_TIMED_OUT,
	SYNCMEM_W_CANCELLED,
};

/*
 * A waiter in a word's queue: part of a blocked WAIT (wait.c) or of an async
 * wait (async.c), which @async tells apart.
 */
struct syncmem_waiter {
	struct list_head node;		/* in q->waiters while queued */
	struct syncmem_queue *q;	/* holds a reference once queued */
	int state;	/* enum syncmem_waiter_state; changed under q->lock */
	bool async;
};

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

/*
 * An open of /dev/syncmem. Holds the async waits it queued (async.c).
 * References: its file, and every async wait it owns.
 */
struct syncmem_handle {
	struct kref ref;
	spinlock_t lock;		/* pending*, cq, nr_outstanding, closed */
	struct rhashtable pending;	/* queued async waits by user_data */
	struct list_head pending_list;	/* the same, oldest first */
	struct list_head cq;		/* completed, unread */
	unsigned int nr_outstanding;	/* pending + unread */
	bool closed;
	wait_queue_head_t wq;		/* readers and pollers */
	struct mutex eventfd_mutex;
	struct eventfd_ctx *eventfd;	/* under eventfd_mutex */

	/* Actions run when the handle is released (on_close.c). */
	struct list_head on_close;
	unsigned int nr_on_close;
	spinlock_t on_close_lock;	/* on_close, nr_on_close */
};

/* Module parameters (main.c). */
extern unsigned long syncmem_max_region_size;
extern unsigned int syncmem_max_regions;
extern unsigned long syncmem_max_total_bytes;
extern unsigned int syncmem_max_async_waits;

/* region.c */
struct syncmem_region *syncmem_region_create(u64 size, u32 name_len);
void syncmem_region_put(struct syncmem_region *r);
int syncmem_region_install_fd(struct syncmem_region *r, bool rdonly);
struct syncmem_region *syncmem_region_get_fd(int fd, bool writable);
void syncmem_region_stats(u64 *regions, u64 *bytes);

/* wait.c */
int syncmem_wait_init(void);
void syncmem_wait_exit(void);
u64 syncmem_waiters_total(void);
int syncmem_region_queues_init(struct syncmem_region *r);
void syncmem_region_queues_destroy(struct syncmem_region *r);
int syncmem_wait_check(struct syncmem_region *r, const struct syncmem_wait *arg);
long syncmem_wait_enqueue(struct syncmem_region *r,
			  const struct syncmem_wait *arg,
			  struct syncmem_waiter *w,
			  void (*queued)(struct syncmem_waiter *w));
int syncmem_waiter_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			 int state);
void syncmem_waiter_release(struct syncmem_waiter *w);
int syncmem_word_check(struct syncmem_region *r, u64 offset, u32 size,
		       u64 value);
long syncmem_store_wake_all(struct syncmem_region *r, u64 offset, u32 size,
			    bool if_equal, u64 expected, u64 value);
long syncmem_ioctl_wait(struct syncmem_region *r, void __user *uarg);
long syncmem_ioctl_notify(struct syncmem_region *r, void __user *uarg);
long syncmem_ioctl_handoff(struct syncmem_region *r, void __user *uarg);

/* async.c */
int syncmem_async_init(void);
void syncmem_async_exit(void);
u64 syncmem_async_total(void);
struct syncmem_handle *syncmem_handle_create(void);
void syncmem_handle_close(struct syncmem_handle *h);
long syncmem_ioctl_wait_async(struct syncmem_handle *h, void __user *uarg);
long syncmem_ioctl_cancel(struct syncmem_handle *h, void __user *uarg);
long syncmem_ioctl_post(struct syncmem_handle *h, void __user *uarg);
long syncmem_ioctl_set_eventfd(struct syncmem_handle *h, void __user *uarg);
ssize_t syncmem_handle_read(struct syncmem_handle *h, char __user *buf,
			    size_t count, bool nonblock);
__poll_t syncmem_handle_poll(struct syncmem_handle *h, struct file *file,
			     poll_table *pt);
void syncmem_async_complete_waiter(struct syncmem_waiter *w, int result);

/* on_close.c */
void syncmem_on_close_init(struct syncmem_handle *h);
void syncmem_on_close_run(struct syncmem_handle *h);
long syncmem_ioctl_arm_on_close(struct syncmem_handle *h, void __user *uarg);
long syncmem_ioctl_disarm(struct syncmem_handle *h, void __user *uarg);

/* names.c */
struct syncmem_region *syncmem_names_open(const char *name, u32 name_len,
					  u32 flags, u64 size, umode_t mode);
int syncmem_names_unlink(const char *name, u32 name_len);
u64 syncmem_names_count(void);
bool syncmem_region_is_named(struct syncmem_region *r);
void syncmem_names_exit(void);

#endif /* _SYNCMEM_CORE_H */
