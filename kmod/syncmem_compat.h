/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Everything that differs between the kernel versions syncmem builds on
 * (6.1 and newer) lives here, so the rest of the module reads as one kernel.
 * Kbuild detects the interfaces (SYNCMEM_HAVE_*) by looking at the headers
 * of the tree it builds against, which also covers stable backports.
 */
#ifndef _SYNCMEM_COMPAT_H
#define _SYNCMEM_COMPAT_H

#include <linux/anon_inodes.h>
#include <linux/eventfd.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/ipc_namespace.h>
#include <linux/mm.h>
#include <linux/proc_ns.h>
#include <linux/sched/signal.h>

/* vm_flags became read-only with setters in 6.3. */
static inline void syncmem_vm_flags_mod(struct vm_area_struct *vma,
					vm_flags_t set, vm_flags_t clear)
{
#ifdef SYNCMEM_HAVE_VM_FLAGS_MOD
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/* The on-stack hrtimer sleeper's initialiser was renamed in 6.13. */
static inline void syncmem_hrtimer_sleeper_init(struct hrtimer_sleeper *sl,
						clockid_t clock,
						enum hrtimer_mode mode)
{
#ifdef SYNCMEM_HAVE_HRTIMER_SETUP_SLEEPER
	hrtimer_setup_sleeper_on_stack(sl, clock, mode);
#else
	hrtimer_init_sleeper_on_stack(sl, clock, mode);
#endif
}

/* hrtimer_setup() replaced hrtimer_init() + .function in 6.13. */
static inline void syncmem_hrtimer_setup(struct hrtimer *timer,
					 enum hrtimer_restart (*fn)(struct hrtimer *),
					 clockid_t clock, enum hrtimer_mode mode)
{
#ifdef SYNCMEM_HAVE_HRTIMER_SETUP
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
#endif
}

/* eventfd_signal() lost its count argument in 6.8. */
static inline void syncmem_eventfd_signal(struct eventfd_ctx *ctx)
{
#ifdef SYNCMEM_HAVE_EVENTFD_SIGNAL_1
	eventfd_signal(ctx);
#else
	eventfd_signal(ctx, 1);
#endif
}

/*
 * IPC namespace references. get_ipc_ns() is inline; put_ipc_ns() is not
 * exported, so the reference is dropped through the namespace's own
 * proc_ns_operations, as nsfs does.
 */
static inline void syncmem_ipc_ns_get(struct ipc_namespace *ns)
{
	get_ipc_ns(ns);
}

static inline void syncmem_ipc_ns_put(struct ipc_namespace *ns)
{
#ifdef CONFIG_IPC_NS
	ns->ns.ops->put(&ns->ns);
#endif
}

/*
 * True when the caller's single reference is the only one left: no task
 * lives in the namespace and no nsfs file pins it, so nobody can ever look a
 * name up in it again. The initial namespace never gets here (its static
 * reference is never dropped). The count is read through ns_ref_read()
 * where the kernel has it (it made the field itself private); before that
 * the field was the interface.
 */
static inline bool syncmem_ipc_ns_orphaned(struct ipc_namespace *ns)
{
#if !defined(CONFIG_IPC_NS)
	return false;
#elif defined(SYNCMEM_HAVE_NS_REF_READ)
	return ns_ref_read(ns) == 1;
#else
	return refcount_read(&ns->ns.count) == 1;
#endif
}

/* Inode operations take a struct mnt_idmap from 6.3, a user namespace before. */
#ifdef SYNCMEM_HAVE_MNT_IDMAP
#define syncmem_idmap mnt_idmap
#define SYNCMEM_NO_IDMAP (&nop_mnt_idmap)
#else
#define syncmem_idmap user_namespace
#define SYNCMEM_NO_IDMAP (&init_user_ns)
#endif

static inline int syncmem_inode_permission(struct inode *inode, int mask)
{
	return inode_permission(SYNCMEM_NO_IDMAP, inode, mask);
}

/*
 * An inode of @sb that the LSMs have labelled, where the kernel exports the
 * helper to every module (6.1.y stable, mainline 6.16); elsewhere, as on
 * 6.12.y which exports it to kvm alone, an unlabelled private inode.
 */
static inline struct inode *syncmem_secure_inode(struct super_block *sb,
						 const char *name)
{
#ifdef SYNCMEM_HAVE_SECURE_INODE_SB
	return anon_inode_make_secure_inode(sb, name, NULL);
#else
	return alloc_anon_inode(sb);
#endif
}

/* struct fd became one word with an accessor in 6.12. */
#ifndef fd_file
#define fd_file(f) ((f).file)
#endif

/* io_uring may read the handle without blocking (FMODE_NOWAIT). */
static inline void syncmem_file_set_nowait(struct file *file)
{
#ifdef FMODE_NOWAIT
	file->f_mode |= FMODE_NOWAIT;
#endif
}

/*
 * Has every thread of the process of @pid exited? thread_group_exited()
 * went away in 6.9 (pidfd polling moved to pidfs); the same test otherwise.
 */
static inline bool syncmem_thread_group_exited(struct pid *pid)
{
#ifdef SYNCMEM_HAVE_THREAD_GROUP_EXITED
	return thread_group_exited(pid);
#else
	struct task_struct *task;
	bool exited;

	rcu_read_lock();
	task = pid_task(pid, PIDTYPE_PID);
	exited = !task || (READ_ONCE(task->exit_state) && thread_group_empty(task));
	rcu_read_unlock();
	return exited;
#endif
}

/*
 * io_uring commands (uring.c). The driver interface moved to its own
 * header, <linux/io_uring/cmd.h>, in 6.6; commands can be marked
 * cancelable, and are then ended by IO_URING_F_CANCEL, from 6.7. Debian's
 * 6.1 has the later io_uring_cmd_done() and task-work signatures.
 *
 * Before cancelable commands, io_uring_cmd_done() posts the CQE itself,
 * from any task (ublk ends commands so), and wakes the ring's waiters:
 * SYNCMEM_URING_DONE_ANYWHERE. From 6.7 the waker must leave that to the
 * submitter's task work, which takes a marked command off io_uring's
 * cancelable list under the ring's lock.
 */
#ifdef CONFIG_IO_URING
#ifdef SYNCMEM_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
#include <linux/io_uring_types.h>

#ifdef SYNCMEM_HAVE_URING_CANCELABLE
#define SYNCMEM_URING_F_CANCEL	IO_URING_F_CANCEL
#define SYNCMEM_URING_DONE_ANYWHERE	false
static inline void syncmem_uring_mark_cancelable(struct io_uring_cmd *cmd,
						 unsigned int issue_flags)
{
	io_uring_cmd_mark_cancelable(cmd, issue_flags);
}
#else
#define SYNCMEM_URING_F_CANCEL	0
#define SYNCMEM_URING_DONE_ANYWHERE	true
static inline void syncmem_uring_mark_cancelable(struct io_uring_cmd *cmd,
						 unsigned int issue_flags)
{
}
#endif

/* The 16 bytes of sqe->cmd, which 6.6 made the driver find through the SQE. */
static inline const void *syncmem_uring_payload(struct io_uring_cmd *cmd)
{
#ifdef SYNCMEM_HAVE_URING_SQE_CMD
	return io_uring_sqe_cmd(cmd->sqe);
#else
	return cmd->cmd;
#endif
}

/*
 * Complete @cmd with @res where it is being issued: a success if @res >= 0.
 * 6.1's io_uring (and 6.6's) takes a positive return of ->uring_cmd for a
 * failure: it posts the CQE despite IOSQE_CQE_SKIP_SUCCESS and cuts the
 * command's link. io_uring_cmd_done() then -EIOCBQUEUED, as ublk ends its
 * commands at issue, completes it by @res's sign on every kernel.
 */
static inline int syncmem_uring_done_at_issue(struct io_uring_cmd *cmd, int res,
					      unsigned int issue_flags)
{
	io_uring_cmd_done(cmd, res, 0, issue_flags);
	return -EIOCBQUEUED;
}

/* The ring a command came in on: its user_data's namespace, for CANCEL. */
static inline const void *syncmem_uring_ring(struct io_uring_cmd *cmd)
{
	return cmd_to_io_kiocb(cmd)->ctx;
}

static inline u64 syncmem_uring_user_data(struct io_uring_cmd *cmd)
{
	return cmd_to_io_kiocb(cmd)->cqe.user_data;
}

/* Is the command's ring being torn down: nobody will ever read its CQE? */
static inline bool syncmem_uring_ring_dying(struct io_uring_cmd *cmd)
{
	return percpu_ref_is_dying(&cmd_to_io_kiocb(cmd)->ctx->refs);
}

/*
 * Is the command's ring being torn down, or its submitter exiting or
 * exec'ing? Then nobody takes its completion up, and io_uring waits for it.
 */
static inline bool syncmem_uring_abandoned(struct io_uring_cmd *cmd)
{
	struct io_kiocb *req = cmd_to_io_kiocb(cmd);
	struct task_struct *task = req->task;

	return percpu_ref_is_dying(&req->ctx->refs) ||
	       (READ_ONCE(task->flags) & PF_EXITING) || task->in_execve;
}
#endif /* CONFIG_IO_URING */

#endif /* _SYNCMEM_COMPAT_H */
