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
#include <linux/rbtree.h>
#include <linux/refcount.h>
#include <linux/rhashtable-types.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/uio.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <uapi/linux/syncmem.h>

struct ipc_namespace;
struct mm_struct;
struct pid_namespace;
struct seq_file;
struct user_namespace;
struct vm_area_struct;
struct syncmem_bucket;
struct syncmem_life;
struct syncmem_queue;
struct syncmem_wake;
struct syncmem_waiter;
struct syncmem_waiter_entry;

enum syncmem_waiter_state {
	SYNCMEM_W_QUEUED,
	SYNCMEM_W_WOKEN,
	SYNCMEM_W_HANDED_OFF,
	SYNCMEM_W_TIMED_OUT,
	SYNCMEM_W_CANCELLED,
	SYNCMEM_W_OWNER_DIED,	/* owner word: took it over from a dead owner */
};

/* What a waker does with a waiter that will never take up what it is given. */
enum syncmem_gone {
	SYNCMEM_LIVE,		/* not gone */
	SYNCMEM_GONE,		/* wakers take it out: ->wake with CANCELLED */
	SYNCMEM_GONE_LEAVING,	/* its own call takes it out: passed over */
};

/*
 * A kind of waiter (a blocked WAIT in wait.c, an async wait in async.c), as
 * the queue core (queue.c) sees it: the core never names a kind.
 * @wake:	Under the bucket lock, @w just claimed (out of its queue) with
 *		@state (SYNCMEM_W_CANCELLED when it was gone): note in @wk what
 *		is to be done once the lock is dropped (syncmem_wake_defer()
 *		has ->complete called then). The last access to @w if it may
 *		go away as soon as its state is seen.
 * @complete:	With no lock held, for a waiter ->wake deferred: its result
 *		(SYNCMEM_WAIT_*, or -ECANCELED when it was gone).
 * @gone:	Under the bucket lock: will @w never take up what it is given
 *		(@owner_dead: it waits as an owner id that died)?
 * @describe:	Under the bucket lock: who waits, and until when.
 * @handed_only: Its owner waiters cannot look at their word again: they
 *		are handed it (UNLOCK, a free or dead holder's word), never
 *		woken, unless the word is unrecoverable.
 */
struct syncmem_waiter_ops {
	void (*wake)(struct syncmem_waiter *w, int state, struct syncmem_wake *wk);
	void (*complete)(struct syncmem_waiter *w, int result);
	enum syncmem_gone (*gone)(const struct syncmem_waiter *w, bool owner_dead);
	void (*describe)(const struct syncmem_waiter *w, struct pid_namespace *ns,
			 struct syncmem_waiter_entry *e);
	bool handed_only;
};

/*
 * A waiter in a word's queue, of the kind @ops says. Every field but @node,
 * @q and @state is set before the waiter is queued and never changes after.
 */
struct syncmem_waiter {
	struct list_head node;		/* in its queue while queued */
	struct syncmem_queue *q;	/* valid while queued (under b->lock) */
	struct syncmem_bucket *b;	/* the bucket of its word, once queued */
	union {
		/*
		 * While queued: its arrival stamp, the CLOCK_MONOTONIC ns it
		 * was queued at, made strictly greater than the stamp of the
		 * bucket's previous arrival, so that stamps order arrivals.
		 */
		u64 seq;
		u64 handoff_value;	/* once claimed by a HANDOFF: its value */
	};
	const struct syncmem_waiter_ops *ops;
	int state;	/* enum syncmem_waiter_state; leaves QUEUED under b->lock */
	bool observer;			/* read-only region fd: never handed off */
	u8 size;			/* of its word, 4 or 8 */
	/*
	 * Once claimed by a HANDOFF: its flags and its size, which may
	 * differ from @size (SYNCMEM_W_HANDOFF_*); 0 until then.
	 */
	u8 handoff;
	u64 owner;			/* owner waits: the id it waits as, else 0 */
};

/*
 * struct syncmem_waiter.handoff: the HANDOFF's SYNCMEM_HANDOFF_* flags,
 * and the size of its word as one of these bits (never 0 once noted).
 */
#define SYNCMEM_W_HANDOFF_4	0x40
#define SYNCMEM_W_HANDOFF_8	0x80
static_assert(SYNCMEM_HANDOFF_FLAGS < SYNCMEM_W_HANDOFF_4);

/* A blocked WAIT: on its task's stack, or away from its call (away.c). */
struct syncmem_sync_waiter {
	struct syncmem_waiter w;
	struct task_struct *task;	/* to wake when claimed; NULL while away */
	bool heir;			/* an owner wait next in line: may spin */
	u64 deadline;			/* its deadline_ns, for introspection */
};

struct syncmem_away;
struct files_struct;

/* Charged usage of a user or an IPC namespace (limits.c). */
struct syncmem_usage {
	atomic_long_t regions;
	atomic_long_t bytes;
	atomic_long_t async_waits;
	atomic_long_t on_close;
	atomic_long_t handles;		/* namespaces only */
	atomic_long_t waiters;		/* namespaces only */
};

/*
 * A user as limits see it: a uid in a user namespace, charged together with
 * that namespace as a whole, then the owner of that namespace one level up,
 * and so on to the initial one (the kernel's ucounts do much the same), so
 * that a container's uids, and the uids a user maps into its own
 * namespaces, cannot multiply their limits.
 */
struct syncmem_user {
	struct rhash_head node;		/* in the users table (limits.c) */
	struct user_namespace *user_ns;	/* holds a reference */
	kuid_t uid;			/* INVALID_UID: @user_ns as a whole */
	refcount_t ref;
	struct syncmem_user *parent;	/* holds a reference; NULL at the top */
	struct syncmem_usage usage;
	struct rcu_head rcu;
};

/*
 * syncmem's state of one IPC namespace (names.c): its names and its usage.
 * While "attached" it is found by the namespace and holds one reference on
 * it; once the namespace is orphaned (no task and no nsfs file left) or
 * nothing of it is left, it is detached: its names are dropped and its
 * reference released. Objects charged to it keep it (not the namespace)
 * alive until they go.
 */
struct syncmem_ns {
	struct ipc_namespace *ipc;	/* referenced while attached */
	unsigned int inum;		/* the namespace's inode number */
	refcount_t ref;			/* one while attached, one per object */
	bool attached;			/* under syncmem_ns_mutex */
	struct syncmem_usage usage;
	struct list_head node;		/* in syncmem_ns_list while attached */

	/* Names, all under @mutex. */
	struct mutex mutex;
	unsigned long nr_names;
	struct list_head regions;	/* named regions, oldest first */
	u64 next_id;			/* REGION_LIST cursor of the next name */
	struct rcu_head rcu;
};

/*
 * A region: zeroed pages (lowmem: the kernel reaches each through the
 * direct map for the value checks of waits) faulted into user mappings; one inode of syncmem's
 * own filesystem (fs.c) carries its identity, owner and mode.
 *
 * References: one from the name table while the region has a name, one from
 * every region file, one from every async wait and on-close action on it. A
 * mapping pins its file, hence the region.
 */
struct syncmem_region {
	struct kref ref;
	struct page **pages;
	u64 size;
	unsigned long nr_pages;
	struct inode *inode;		/* holds a reference */
	struct syncmem_user *user;	/* charged; holds a reference */
	struct syncmem_ns *ns;		/* charged; holds a reference */
	bool unlimited;			/* created with CAP_SYS_RESOURCE */

	/* Wait queues by byte offset (wait.c). */
	struct syncmem_bucket *buckets;
	unsigned int bucket_bits;	/* log2 of their number */
	u64 bucket_seed;
	atomic_t nr_waiters;
	atomic_t nr_idle_queues;
	/* Waiters away from their calls, under the away lock (away.c). */
	struct list_head away;
	u32 away_flush_pass;		/* of the flush walking it; same lock */
	struct mutex away_flush_mutex;	/* one flush walks it at a time */
	/* Its owner words with waiters (wait.c). */
	spinlock_t owner_lock;		/* owner_queues, owner_scan_pass */
	struct list_head owner_queues;
	u8 owner_scan_pass;		/* of owner_scan_work */
	struct work_struct owner_scan_work;
	struct list_head owner_node;	/* in the regions that have some */
	u32 owner_walk_pass;		/* under the lock of that list */

	atomic_long_t nr_files;
	atomic_long_t nr_mappings;
	/* The address spaces that map it, by mm (region.c). */
	spinlock_t mappers_lock;
	struct rb_root mappers;

	/* On-close actions armed on its words, oldest first (on_close.c). */
	spinlock_t armed_lock;
	struct list_head armed;
	unsigned int nr_armed;

	/* Names of objects in it (objects.c). */
	struct mutex objects_mutex;
	struct list_head objects;	/* by offset */
	unsigned int nr_objects;

	/* The name; changed only under ns->mutex. */
	bool named;
	struct rhash_head hash_node;	/* in the names table */
	struct list_head ns_node;
	u64 id;				/* REGION_LIST cursor */
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	u32 name_len;
	char name[];
};

/*
 * An open of /dev/syncmem. Holds the async waits it queued (async.c) and the
 * on-close actions armed on it (on_close.c).
 * References: its file, and every async wait it owns.
 */
struct syncmem_handle {
	struct kref ref;
	struct syncmem_user *user;	/* the opener: charged for waits, actions */
	struct syncmem_ns *ns;		/* the opener's IPC namespace */
	bool unlimited;			/* opened with CAP_SYS_RESOURCE */
	bool limited;			/* made by HANDLE_OPEN: no region calls */

	spinlock_t lock;		/* pending*, cq, nr_outstanding, closed */
	struct rb_root pending;		/* queued async waits by user_data */
	struct list_head pending_list;	/* the same, oldest first */
	struct list_head cq;		/* completed, unread */
	unsigned int nr_outstanding;	/* pending + unread */
	u64 pending_seq;		/* arrivals in pending, for CANCEL_ALL */
	bool closed;			/* read locklessly by wakers */
	wait_queue_head_t settle_wq;	/* a claimed wait left pending; reaping hit 0 */
	wait_queue_head_t wq;		/* readers and pollers */

	/* Timed waits whose timers fired, for expire_work (async.c). */
	spinlock_t expire_lock;		/* expired; taken from timers */
	struct list_head expired;
	struct work_struct expire_work;

	/* Records dropped unread that carry something, for pass_on_work. */
	struct list_head pass_on;	/* under @lock */
	struct work_struct pass_on_work;

	struct mutex eventfd_mutex;	/* eventfd: replaced while signalled */
	struct eventfd_ctx *eventfd;	/* under eventfd_mutex */

	/* Programs that queued async waits on it (owner.c). */
	struct list_head watches;	/* under the owner mutex */
	struct syncmem_life *watched;	/* the last of them; referenced */
	atomic_t reaping;		/* ends of programs cleaning up here */

	/* Actions run when the handle is released (on_close.c). */
	struct list_head on_close;	/* in arming order */
	struct rb_root on_close_tree;	/* the same, by user_data */
	unsigned long nr_on_close;
	spinlock_t on_close_lock;	/* on_close*, nr_on_close */
};

/* limits.c: module parameters and charging. */
extern unsigned long syncmem_max_region_size;
extern unsigned int syncmem_max_async_waits;
extern unsigned int syncmem_protected_names;
unsigned long syncmem_max_regions_now(void);
unsigned long syncmem_max_total_bytes_now(void);
int syncmem_limits_init(void);
void syncmem_limits_exit(void);
struct syncmem_user *syncmem_user_get_current(void);
struct syncmem_user *syncmem_user_find_current(void);
void syncmem_user_put(struct syncmem_user *u);
int syncmem_charge_region(struct syncmem_user *u, struct syncmem_ns *ns,
			  u64 bytes, bool unlimited);
void syncmem_uncharge_region(struct syncmem_user *u, struct syncmem_ns *ns,
			     u64 bytes);
int syncmem_charge_user(struct syncmem_user *u, size_t field, bool unlimited);
void syncmem_uncharge_user(struct syncmem_user *u, size_t field);
#define SYNCMEM_USAGE(f)	offsetof(struct syncmem_usage, f)

/* fs.c: the filesystem behind region files. */
int syncmem_fs_init(void);
void syncmem_fs_exit(void);
struct inode *syncmem_fs_inode(struct syncmem_region *r);
struct file *syncmem_fs_file(struct syncmem_region *r, bool rdonly,
			     const struct file_operations *fops);
int syncmem_fs_permission(struct syncmem_region *r, bool rdonly);
bool syncmem_fs_may_read(struct syncmem_region *r);
struct syncmem_region *syncmem_fs_file_region(struct file *file);

/* region.c */
struct syncmem_region *syncmem_region_create(u64 size, u32 name_len,
					     struct syncmem_ns *ns);
void syncmem_region_put(struct syncmem_region *r);
int syncmem_region_mmap(struct file *file, struct vm_area_struct *vma);
int syncmem_region_file_release(struct inode *inode, struct file *file);
struct syncmem_region *syncmem_region_get_fd(int fd, bool writable,
					     bool *rdonly);
void syncmem_region_owner(struct syncmem_region *r, u32 *uid, u32 *gid);
bool syncmem_region_mapped_by(struct syncmem_region *r, const struct mm_struct *mm);

/* word.c: region words as the kernel reads and changes them */
int syncmem_word_check(struct syncmem_region *r, u64 offset, u32 size,
		       u64 value);
u64 syncmem_word_read(struct syncmem_region *r, u64 offset, u32 size);
void syncmem_word_write(struct syncmem_region *r, u64 offset, u32 size, u64 value);
void syncmem_word_add(struct syncmem_region *r, u64 offset, u32 size, u64 value);
u64 syncmem_word_add_return(struct syncmem_region *r, u64 offset, u32 size, u64 value);
void syncmem_word_clear_top(struct syncmem_region *r, u64 offset, u32 size);
bool syncmem_word_cmpxchg(struct syncmem_region *r, u64 offset, u32 size,
			  u64 expected, u64 value);

/* queue.c: the wait queue core (see also syncmem_queue.h) */
int syncmem_queue_init(void);
void syncmem_queue_exit(void);
int syncmem_region_queues_init(struct syncmem_region *r);
void syncmem_region_queues_destroy(struct syncmem_region *r);
int syncmem_wait_result(int state);
int syncmem_wait_check(struct syncmem_region *r, const struct syncmem_wait *arg);
long syncmem_wait_enqueue(struct syncmem_region *r,
			  const struct syncmem_wait *arg,
			  struct syncmem_waiter *w,
			  int (*admit)(struct syncmem_waiter *w));
bool syncmem_waiter_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			  int state, int *final);

/* lockword.c: owner words */
int syncmem_lockword_init(void);
void syncmem_lockword_exit(void);
void syncmem_region_owner_init(struct syncmem_region *r);
void syncmem_owner_words_scan(void);
void syncmem_owner_word_settle(struct syncmem_region *r, u64 offset);
void syncmem_owner_word_pass_on(struct syncmem_region *r, u64 offset, const u64 *owner,
				int result);
long syncmem_ioctl_unlock(struct syncmem_region *r, void __user *uarg);

/* wake.c: NOTIFY, HANDOFF, and claims passed on */
long syncmem_store_wake_all(struct syncmem_region *r, u64 offset, u32 size,
			    bool if_equal, u64 expected, u64 value);
long syncmem_add_wake_all(struct syncmem_region *r, u64 offset, u32 size, u64 value);
long syncmem_notify_checked(struct syncmem_region *r, const struct syncmem_notify *arg);
long syncmem_ioctl_notify(struct syncmem_region *r, void __user *uarg);
long syncmem_ioctl_handoff(struct syncmem_region *r, void __user *uarg);
void syncmem_waiter_abandon(struct syncmem_region *r, u64 offset,
			    struct syncmem_waiter *w);
void syncmem_wait_pass_on(struct syncmem_region *r, u64 offset,
			  const struct syncmem_waiter *w, int result);

/* wait.c: blocked waits; away.c: waiters away from their calls */
long syncmem_ioctl_wait(struct syncmem_region *r, struct file *file,
			void __user *uarg);
long syncmem_ioctl_lock_wait(struct syncmem_region *r, struct file *file,
			     void __user *uarg);

/* away.c */
bool syncmem_waiter_move(struct syncmem_waiter *from,
			 struct syncmem_sync_waiter *to);
int syncmem_waiter_set_task(struct syncmem_sync_waiter *sw,
			    struct task_struct *task);
void syncmem_away_exit(void);
void syncmem_away_poke(void);
struct syncmem_away *syncmem_away_take(void);
struct syncmem_away *syncmem_away_keep(struct syncmem_away *a,
				       struct syncmem_region *r,
				       const struct syncmem_wait *arg,
				       bool observer, u64 owner);
void syncmem_away_end(struct syncmem_away *a);
void syncmem_away_flush(struct syncmem_region *r, struct files_struct *files);
bool syncmem_away_park(struct syncmem_region *r, struct file *file,
		       const struct syncmem_wait *arg, struct syncmem_sync_waiter **swp,
		       struct syncmem_away **ap);
struct syncmem_sync_waiter *syncmem_away_waiter(struct syncmem_away *a);
void syncmem_away_free(struct syncmem_away *a);
bool syncmem_away_gone(const struct syncmem_waiter *w);
struct task_struct *syncmem_away_task(const struct syncmem_sync_waiter *sw);

/* owner.c */
int syncmem_owner_init(void);
void syncmem_owner_exit(void);
bool syncmem_owner_alive(u64 id);
bool syncmem_owner_is_current(u64 id);
u64 syncmem_owner_current_process(void);
long syncmem_ioctl_owner(void __user *uarg);
struct syncmem_life *syncmem_owner_watch_handle(struct syncmem_handle *h);
struct syncmem_life *syncmem_life_get_current(void);
void syncmem_life_put(struct syncmem_life *life);
bool syncmem_life_over(const struct syncmem_life *life);
struct pid *syncmem_life_tgid(const struct syncmem_life *life);
void syncmem_owner_mm_gone(struct mm_struct *mm);
bool syncmem_owner_describe(u64 id, struct syncmem_region *r, struct pid_namespace *ns,
			    s32 *pid, s32 *tid, bool *process);
void syncmem_owner_unwatch_handle(struct syncmem_handle *h);

/* handle.c */
struct syncmem_handle *syncmem_handle_create(void);
void syncmem_handle_close(struct syncmem_handle *h);
void syncmem_handle_get(struct syncmem_handle *h);
void syncmem_handle_put(struct syncmem_handle *h);

/* async.c */
int syncmem_async_init(void);
void syncmem_async_exit(void);
void syncmem_async_handle_init(struct syncmem_handle *h);
void syncmem_async_release(struct syncmem_handle *h);
long syncmem_ioctl_wait_async(struct syncmem_handle *h, void __user *uarg);
long syncmem_ioctl_cancel(struct syncmem_handle *h, void __user *uarg);
long syncmem_ioctl_post(struct syncmem_handle *h, void __user *uarg);
long syncmem_ioctl_set_eventfd(struct syncmem_handle *h, void __user *uarg);
ssize_t syncmem_handle_read(struct syncmem_handle *h, struct iov_iter *to,
			    bool nonblock);
__poll_t syncmem_handle_poll(struct syncmem_handle *h, struct file *file,
			     poll_table *pt);
void syncmem_async_show_fdinfo(struct seq_file *m, struct syncmem_handle *h);
void syncmem_async_reap(struct syncmem_handle *h, struct syncmem_life *life);

/* uring.c: io_uring commands on region files */
struct io_uring_cmd;
#ifdef CONFIG_IO_URING
int syncmem_uring_init(void);
void syncmem_uring_exit(void);
int syncmem_uring_cmd(struct syncmem_region *r, bool rdonly, struct io_uring_cmd *cmd,
		      unsigned int issue_flags);
#else
static inline int syncmem_uring_init(void)
{
	return 0;
}

static inline void syncmem_uring_exit(void)
{
}
#endif

/* on_close.c */
void syncmem_on_close_init(struct syncmem_handle *h);
void syncmem_on_close_run(struct syncmem_handle *h);
long syncmem_ioctl_arm_on_close(struct syncmem_handle *h, void __user *uarg);
long syncmem_ioctl_disarm(struct syncmem_handle *h, void __user *uarg);
void syncmem_on_close_show(struct seq_file *m, struct syncmem_handle *h);
void syncmem_armed_init(struct syncmem_region *r);
long syncmem_ioctl_armed(struct syncmem_region *r, void __user *uarg);
void syncmem_armed_show(struct seq_file *m, struct syncmem_region *r);

/* objects.c: names of objects in a region */
void syncmem_objects_init(struct syncmem_region *r);
void syncmem_objects_destroy(struct syncmem_region *r);
long syncmem_ioctl_object_name(struct syncmem_region *r, void __user *uarg);
long syncmem_ioctl_objects(struct syncmem_region *r, void __user *uarg);

/* listing.c: the replies of list ioctls */
long syncmem_list_alloc(u32 flags, u32 count, size_t esize, void **out);
long syncmem_list_reply(void __user *uarg, const void *arg, size_t arg_size,
			u64 entries, void *out, size_t bytes);

/* introspect.c: who waits and who holds */
long syncmem_ioctl_waiters(struct syncmem_region *r, void __user *uarg);
long syncmem_ioctl_who(struct syncmem_region *r, void __user *uarg);
void syncmem_region_show_fdinfo(struct seq_file *m, struct file *file);

/* names.c */
int syncmem_ns_init(void);
void syncmem_ns_exit(void);
struct syncmem_ns *syncmem_ns_get_current(void);
void syncmem_ns_put(struct syncmem_ns *ns);
struct syncmem_region *syncmem_names_open(const char *name, u32 name_len,
					  u32 flags, u64 size, umode_t mode);
int syncmem_names_unlink(const char *name, u32 name_len);
long syncmem_ioctl_region_list(void __user *uarg);
bool syncmem_region_is_named(struct syncmem_region *r);

#endif /* _SYNCMEM_CORE_H */
