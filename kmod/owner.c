// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem owners: the ids that owner words name, and how the kernel learns
 * that the thread or process behind one died.
 *
 * An id is a 62-bit number from a counter, so it is never reused and never
 * depends on a PID namespace. It records the struct pid of its thread (or,
 * for a process id, of its thread group) and the mm it ran in: a thread id
 * is alive while that thread runs, is not exiting and has not exec'd; a
 * process id while its thread group has not exited. Lookups are RCU (they
 * run under bucket spinlocks); registration and removal take
 * syncmem_owner_mutex.
 *
 * Deaths: each process that holds ids has a "life", hooked on its thread
 * group's pidfd wait queue, which the kernel wakes when the group has
 * exited. The hook (atomic context) queues the life for syncmem_reap(),
 * which drops the ids of lives that have ended and then has wait.c look at
 * every owner word with waiters (syncmem_owner_words_scan()), so that waiters
 * of a dead owner's lock are woken at once, not when a timeout expires.
 * A life also lists the handles the process queued async waits on
 * (syncmem_owner_watch_handle()): when the process has exited, async.c
 * cancels its waits there and passes on what they were given but never
 * read, even if the handle lives on in a forked child.
 *
 * The exit of one thread of a live process is not notified: its words are
 * taken over by the next LOCK_WAIT that meets them, or by the scan that the
 * next registration in that process runs when it finds dead thread ids.
 *
 * Why not a robust list walked at exit, as futexes do: the kernel walks it
 * from the exit path, which a module cannot hook, and keeping the list
 * costs the uncontended lock and unlock stores of their own. Naming the
 * owner in the word (as PI futexes do) costs nothing until there is
 * contention, and a process's exit is already notified to pidfd pollers.
 */
#include <linux/llist.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

struct syncmem_life {
	struct rhash_head node;		/* in syncmem_lives, by @tgid */
	struct pid *tgid;		/* referenced */
	struct list_head owners;	/* its ids, under syncmem_owner_mutex */
	unsigned int nr_owners;
	struct syncmem_owner_entry *process_owner;
	wait_queue_entry_t exit_wait;	/* on tgid->wait_pidfd */
	struct llist_node poke_node;	/* in syncmem_poked */
	unsigned long poked;		/* bit 0: in syncmem_poked */
	bool unhooked;			/* off the pidfd queue: free when popped */
	struct list_head all_node;	/* in syncmem_all_lives */
	struct list_head watches;	/* of handles it waited on */
	struct rcu_head rcu;
};

/* A handle that a process queued async waits on, for its death. */
struct syncmem_watch {
	struct list_head life_node;	/* in life->watches; then in a dead list */
	struct list_head handle_node;	/* in h->watches */
	struct syncmem_handle *h;	/* referenced once in a dead list */
	struct syncmem_life *life;
	struct pid *tgid;		/* once in a dead list: referenced */
};

struct syncmem_owner_entry {
	struct rhash_head node;		/* in syncmem_owners, by @id */
	u64 id;
	struct pid *pid;		/* thread, or thread group; referenced */
	struct mm_struct *mm;		/* compared only; grabbed while listed */
	u64 exec_id;			/* the program it ran (self_exec_id) */
	bool process;
	struct syncmem_life *life;
	struct list_head life_node;
	struct rcu_head rcu;
};

static const struct rhashtable_params syncmem_owner_params = {
	.key_len = sizeof(u64),
	.key_offset = offsetof(struct syncmem_owner_entry, id),
	.head_offset = offsetof(struct syncmem_owner_entry, node),
	.automatic_shrinking = true,
};

static const struct rhashtable_params syncmem_life_params = {
	.key_len = sizeof(struct pid *),
	.key_offset = offsetof(struct syncmem_life, tgid),
	.head_offset = offsetof(struct syncmem_life, node),
	.automatic_shrinking = true,
};

static DEFINE_MUTEX(syncmem_owner_mutex);
static struct rhashtable syncmem_owners;
static struct rhashtable syncmem_lives;
static LIST_HEAD(syncmem_all_lives);
static u64 syncmem_next_owner_id = 1;	/* under syncmem_owner_mutex */
static LLIST_HEAD(syncmem_poked);
static bool syncmem_scan_wanted;	/* dead thread ids found: scan */

static void syncmem_reap(struct work_struct *work);
static DECLARE_WORK(syncmem_reap_work, syncmem_reap);

/**
 * syncmem_process_exec_id - the program a process runs, unless it exited
 * @tgid:	The process: its thread group's pid.
 * @exec_id:	Set to the self_exec_id of the program it runs.
 *
 * Under RCU. False once every thread of it has exited.
 */
bool syncmem_process_exec_id(struct pid *tgid, u64 *exec_id)
{
	/* The group's leader, or the thread that took its place. */
	struct task_struct *t = pid_task(tgid, PIDTYPE_PID);

	if (!t || (READ_ONCE(t->exit_state) && thread_group_empty(t)))
		return false;
	*exec_id = READ_ONCE(t->self_exec_id);
	return true;
}

/* Under RCU: is the thread or process behind @o alive? */
static bool syncmem_owner_running(const struct syncmem_owner_entry *o)
{
	struct task_struct *t;
	u64 exec_id;

	/* An execve ended the program that had a process id. */
	if (o->process)
		return syncmem_process_exec_id(o->pid, &exec_id) &&
		       exec_id == o->exec_id;
	t = pid_task(o->pid, PIDTYPE_PID);
	return t && !(READ_ONCE(t->flags) & PF_EXITING) &&
	       READ_ONCE(t->mm) == o->mm;
}

/**
 * syncmem_owner_alive - does @id name a live owner?
 * @id:	An owner id (any value: a word may hold anything).
 *
 * False for an id never issued (but SYNCMEM_OWNER_NOBODY), one whose owner
 * died, and 0. Callable in atomic context.
 */
bool syncmem_owner_alive(u64 id)
{
	struct syncmem_owner_entry *o;
	bool alive = false;

	if (id == SYNCMEM_OWNER_NOBODY)
		return true;	/* held by nobody: never taken over */
	rcu_read_lock();
	o = rhashtable_lookup(&syncmem_owners, &id, syncmem_owner_params);
	if (o)
		alive = syncmem_owner_running(o);
	rcu_read_unlock();
	return alive;
}

/* Does @task's address space map the region file @inode? */
static bool syncmem_task_maps(struct task_struct *task, struct inode *inode)
{
	struct mm_struct *mm = get_task_mm(task);
	struct vm_area_struct *vma;
	bool found = false;

	if (!mm)
		return false;
	{
		VMA_ITERATOR(vmi, mm, 0);

		mmap_read_lock(mm);
		for_each_vma(vmi, vma) {
			if (vma->vm_file && file_inode(vma->vm_file) == inode) {
				found = true;
				break;
			}
		}
		mmap_read_unlock(mm);
	}
	mmput(mm);
	return found;
}

/**
 * syncmem_owner_describe - the thread or process behind a live owner id
 * @id:		An owner id (any value).
 * @inode:	The region the id was read from.
 * @ns:		The PID namespace to give ids in.
 * @pid:	Set to its process's id in @ns (0: not visible there).
 * @tid:	Set to its thread's id in @ns, 0 for a process's id.
 * @process:	Set when @id is a process's.
 *
 * Returns whether @id names a live owner; the outputs are set only then.
 * The ids are told only when that process maps the region @inode, as
 * every holder of a lock word in it does: an id that someone wrote into a
 * region of their own tells nothing of a process that does not use it.
 */
bool syncmem_owner_describe(u64 id, struct inode *inode, struct pid_namespace *ns,
			    s32 *pid, s32 *tid, bool *process)
{
	struct task_struct *t = NULL;
	struct syncmem_owner_entry *o;
	bool alive = false;

	*pid = 0;
	*tid = 0;
	rcu_read_lock();
	o = rhashtable_lookup(&syncmem_owners, &id, syncmem_owner_params);
	if (o && syncmem_owner_running(o)) {
		alive = true;
		*process = o->process;
		t = pid_task(o->pid, o->process ? PIDTYPE_TGID : PIDTYPE_PID);
		if (t) {
			get_task_struct(t);
			*pid = task_tgid_nr_ns(t, ns);
			*tid = o->process ? 0 : task_pid_nr_ns(t, ns);
		}
	}
	rcu_read_unlock();
	if (t) {
		if (!syncmem_task_maps(t, inode)) {
			*pid = 0;
			*tid = 0;
		}
		put_task_struct(t);
	}
	return alive;
}

/* Is @id the calling thread's, or its process's, live id? */
bool syncmem_owner_is_current(u64 id)
{
	struct syncmem_owner_entry *o;
	bool mine = false;

	rcu_read_lock();
	o = rhashtable_lookup(&syncmem_owners, &id, syncmem_owner_params);
	if (o && o->mm == current->mm)
		mine = o->pid == (o->process ? task_tgid(current) : task_pid(current));
	rcu_read_unlock();
	return mine;
}

/* The calling process's process id, or 0 if it has none. */
u64 syncmem_owner_current_process(void)
{
	struct pid *tgid = task_tgid(current);
	struct syncmem_life *life;
	u64 id = 0;

	rcu_read_lock();
	life = rhashtable_lookup(&syncmem_lives, &tgid, syncmem_life_params);
	if (life) {
		struct syncmem_owner_entry *o = READ_ONCE(life->process_owner);

		if (o && o->mm == current->mm)
			id = o->id;
	}
	rcu_read_unlock();
	return id;
}

static void syncmem_owner_free_rcu(struct rcu_head *rcu)
{
	struct syncmem_owner_entry *o = container_of(rcu, struct syncmem_owner_entry, rcu);

	put_pid(o->pid);	/* lookups may have been dereferencing it */
	kfree(o);
}

/* Under syncmem_owner_mutex: forget @o; lookups in flight may still see it. */
static void syncmem_owner_remove(struct syncmem_owner_entry *o)
{
	struct syncmem_life *life = o->life;

	rhashtable_remove_fast(&syncmem_owners, &o->node, syncmem_owner_params);
	list_del(&o->life_node);
	life->nr_owners--;
	if (life->process_owner == o)
		WRITE_ONCE(life->process_owner, NULL);
	mmdrop(o->mm);		/* lookups only compare the pointer */
	call_rcu(&o->rcu, syncmem_owner_free_rcu);
}

/* The pidfd wait queue was woken: maybe the process has exited. */
static int syncmem_life_woken(wait_queue_entry_t *wq, unsigned int mode,
			      int sync, void *key)
{
	struct syncmem_life *life = container_of(wq, struct syncmem_life,
						 exit_wait);

	if (!test_and_set_bit(0, &life->poked)) {
		llist_add(&life->poke_node, &syncmem_poked);
		queue_work(system_unbound_wq, &syncmem_reap_work);
	}
	return 0;
}

static void syncmem_life_free(struct syncmem_life *life)
{
	put_pid(life->tgid);	/* the table only compared the pointer */
	kfree_rcu(life, rcu);
}

/*
 * Under syncmem_owner_mutex: the process has exited. Drop its ids, move the
 * handles it waited on to @dead (NULL: forget them), and take it off the
 * pidfd queue; free it unless the hook queued it meanwhile (then the run
 * that pops it frees it).
 */
static void syncmem_life_end(struct syncmem_life *life, struct list_head *dead)
{
	struct syncmem_owner_entry *o, *tmp;
	struct syncmem_watch *wt, *wtmp;

	list_for_each_entry_safe(o, tmp, &life->owners, life_node)
		syncmem_owner_remove(o);
	list_for_each_entry_safe(wt, wtmp, &life->watches, life_node) {
		list_del(&wt->life_node);
		list_del(&wt->handle_node);
		if (!dead) {
			kfree(wt);
			continue;
		}
		syncmem_handle_get(wt->h);
		wt->tgid = get_pid(life->tgid);
		list_add_tail(&wt->life_node, dead);
	}
	rhashtable_remove_fast(&syncmem_lives, &life->node, syncmem_life_params);
	list_del(&life->all_node);
	remove_wait_queue(&life->tgid->wait_pidfd, &life->exit_wait);
	life->unhooked = true;
	if (!test_and_set_bit(0, &life->poked))
		syncmem_life_free(life);
}

static void syncmem_reap(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&syncmem_poked);
	struct syncmem_watch *wt, *wtmp;
	struct syncmem_life *life, *tmp;
	LIST_HEAD(dead);
	bool scan;

	mutex_lock(&syncmem_owner_mutex);
	llist_for_each_entry_safe(life, tmp, list, poke_node) {
		if (life->unhooked) {
			syncmem_life_free(life);
			continue;
		}
		clear_bit(0, &life->poked);
		/*
		 * Re-arm before looking: an exit notified from now on queues
		 * it again. Pairs with the waker's test_and_set_bit().
		 */
		smp_mb__after_atomic();
		if (syncmem_thread_group_exited(life->tgid)) {
			syncmem_life_end(life, &dead);
			syncmem_scan_wanted = true;
		}
	}
	scan = syncmem_scan_wanted;
	syncmem_scan_wanted = false;
	mutex_unlock(&syncmem_owner_mutex);
	list_for_each_entry_safe(wt, wtmp, &dead, life_node) {
		syncmem_async_reap(wt->h, wt->tgid);
		syncmem_handle_put(wt->h);
		put_pid(wt->tgid);
		kfree(wt);
	}
	if (scan) {
		syncmem_away_poke();	/* its threads may have had waits away */
		syncmem_owner_words_scan();
	}
}

/* Under syncmem_owner_mutex: the calling process's life, made if needed. */
static struct syncmem_life *syncmem_life_current(void)
{
	struct pid *tgid = task_tgid(current);
	struct syncmem_life *life;
	int err;

	life = rhashtable_lookup_fast(&syncmem_lives, &tgid, syncmem_life_params);
	if (life)
		return life;
	life = kzalloc(sizeof(*life), GFP_KERNEL_ACCOUNT);
	if (!life)
		return ERR_PTR(-ENOMEM);
	life->tgid = get_pid(tgid);
	INIT_LIST_HEAD(&life->owners);
	INIT_LIST_HEAD(&life->watches);
	init_waitqueue_func_entry(&life->exit_wait, syncmem_life_woken);
	err = rhashtable_insert_fast(&syncmem_lives, &life->node,
				     syncmem_life_params);
	if (err) {
		put_pid(life->tgid);
		kfree(life);
		return ERR_PTR(err);
	}
	/* The caller runs, so the group cannot have been notified yet. */
	add_wait_queue(&tgid->wait_pidfd, &life->exit_wait);
	list_add(&life->all_node, &syncmem_all_lives);
	return life;
}

/*
 * Under syncmem_owner_mutex: drop the ids of the process's dead threads, and
 * its process id from before an execve.
 */
static void syncmem_life_prune(struct syncmem_life *life)
{
	struct syncmem_owner_entry *o, *tmp;
	bool alive;

	list_for_each_entry_safe(o, tmp, &life->owners, life_node) {
		rcu_read_lock();
		alive = syncmem_owner_running(o);
		rcu_read_unlock();
		if (!alive) {
			syncmem_owner_remove(o);
			syncmem_scan_wanted = true;
		}
	}
}

/* Under syncmem_owner_mutex: the caller's live id of this kind, if any. */
static struct syncmem_owner_entry *
syncmem_life_find(struct syncmem_life *life, bool process)
{
	struct pid *pid = process ? task_tgid(current) : task_pid(current);
	struct syncmem_owner_entry *o;

	list_for_each_entry(o, &life->owners, life_node)
		if (o->process == process && o->pid == pid &&
		    o->mm == current->mm)
			return o;
	return NULL;
}

static s64 syncmem_owner_get(bool process)
{
	struct syncmem_life *life;
	struct syncmem_owner_entry *o;
	bool scan;
	s64 id;
	int err;

	mutex_lock(&syncmem_owner_mutex);
	life = syncmem_life_current();
	if (IS_ERR(life)) {
		mutex_unlock(&syncmem_owner_mutex);
		return PTR_ERR(life);
	}
	syncmem_life_prune(life);
	o = syncmem_life_find(life, process);
	if (o) {
		id = o->id;
		goto out;
	}
	id = -EAGAIN;
	if (life->nr_owners >= SYNCMEM_OWNERS_MAX)
		goto out;
	id = -ENOMEM;
	o = kzalloc(sizeof(*o), GFP_KERNEL_ACCOUNT);
	if (!o)
		goto out;
	o->id = syncmem_next_owner_id;
	o->process = process;
	o->pid = get_pid(process ? task_tgid(current) : task_pid(current));
	o->mm = current->mm;
	mmgrab(o->mm);
	o->exec_id = current->self_exec_id;
	o->life = life;
	err = rhashtable_insert_fast(&syncmem_owners, &o->node,
				     syncmem_owner_params);
	if (err) {
		put_pid(o->pid);
		mmdrop(o->mm);
		kfree(o);
		id = err;
		goto out;
	}
	syncmem_next_owner_id++;
	list_add(&o->life_node, &life->owners);
	life->nr_owners++;
	if (process)
		WRITE_ONCE(life->process_owner, o);
	id = o->id;
out:
	scan = syncmem_scan_wanted;
	mutex_unlock(&syncmem_owner_mutex);
	/* Dead thread ids were dropped: the reaper looks at their words. */
	if (scan)
		queue_work(system_unbound_wq, &syncmem_reap_work);
	return id;
}

/**
 * syncmem_owner_watch_handle - the calling process queues async waits on @h
 * @h:	A handle (not closed).
 *
 * When the process exits, its waits on @h are cancelled and what they were
 * given but never read is passed on (syncmem_async_reap()), even if @h
 * stays open in another process. 0 or -ENOMEM. One mutex hold the first
 * time a process waits on a handle; none after, while it is the last.
 */
int syncmem_owner_watch_handle(struct syncmem_handle *h)
{
	struct pid *tgid = task_tgid(current), *old;
	struct syncmem_life *life;
	struct syncmem_watch *wt;
	int err = 0;

	if (READ_ONCE(h->watched) == tgid)
		return 0;
	mutex_lock(&syncmem_owner_mutex);
	life = syncmem_life_current();
	if (IS_ERR(life)) {
		err = PTR_ERR(life);
		goto out;
	}
	list_for_each_entry(wt, &h->watches, handle_node)
		if (wt->life == life)
			goto found;
	wt = kzalloc(sizeof(*wt), GFP_KERNEL_ACCOUNT);
	if (!wt) {
		err = -ENOMEM;
		goto out;
	}
	wt->h = h;
	wt->life = life;
	list_add(&wt->life_node, &life->watches);
	list_add(&wt->handle_node, &h->watches);
found:
	/*
	 * Always a referenced pid, so no other process's can come to its
	 * address while the lockless check above compares with it.
	 */
	old = h->watched;
	WRITE_ONCE(h->watched, get_pid(tgid));
	put_pid(old);
out:
	mutex_unlock(&syncmem_owner_mutex);
	return err;
}

/* @h is being released: no process needs it watched any more. */
void syncmem_owner_unwatch_handle(struct syncmem_handle *h)
{
	struct syncmem_watch *wt, *tmp;

	put_pid(h->watched);
	h->watched = NULL;
	/* Always under the mutex: a reaper may be taking a watch of it now. */
	mutex_lock(&syncmem_owner_mutex);
	list_for_each_entry_safe(wt, tmp, &h->watches, handle_node) {
		list_del(&wt->life_node);
		list_del(&wt->handle_node);
		kfree(wt);
	}
	mutex_unlock(&syncmem_owner_mutex);
}

long syncmem_ioctl_owner(void __user *uarg)
{
	struct syncmem_owner arg;
	s64 id;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags == SYNCMEM_OWNER_QUERY)
		return arg.pad ? -EINVAL : syncmem_owner_alive(arg.id);
	if ((arg.flags & ~SYNCMEM_OWNER_PROCESS) || arg.pad || arg.id)
		return -EINVAL;
	if (!current->mm)
		return -EINVAL;
	id = syncmem_owner_get(arg.flags & SYNCMEM_OWNER_PROCESS);
	if (id < 0)
		return id;
	arg.id = id;
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

int syncmem_owner_init(void)
{
	int err = rhashtable_init(&syncmem_owners, &syncmem_owner_params);

	if (err)
		return err;
	err = rhashtable_init(&syncmem_lives, &syncmem_life_params);
	if (err)
		rhashtable_destroy(&syncmem_owners);
	return err;
}

/* Module exit: no file is open, so nothing looks ids up any more. */
void syncmem_owner_exit(void)
{
	struct syncmem_life *life, *tmp;

	mutex_lock(&syncmem_owner_mutex);
	list_for_each_entry_safe(life, tmp, &syncmem_all_lives, all_node)
		syncmem_life_end(life, NULL);
	mutex_unlock(&syncmem_owner_mutex);
	/* No hook can run now; free what a last run would have. */
	flush_work(&syncmem_reap_work);
	syncmem_reap(NULL);
	rcu_barrier();
	rhashtable_destroy(&syncmem_lives);
	rhashtable_destroy(&syncmem_owners);
}
