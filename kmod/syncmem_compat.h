/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Everything that differs between the kernel versions syncmem builds on
 * (6.1 and newer) lives here, so the rest of the module reads as one kernel.
 * Kbuild detects the interfaces (SYNCMEM_HAVE_*) by looking at the headers
 * of the tree it builds against, which also covers stable backports.
 */
#ifndef _SYNCMEM_COMPAT_H
#define _SYNCMEM_COMPAT_H

#include <linux/eventfd.h>
#include <linux/hrtimer.h>
#include <linux/ipc_namespace.h>
#include <linux/mm.h>
#include <linux/proc_ns.h>

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
 * reference is never dropped).
 */
static inline bool syncmem_ipc_ns_orphaned(struct ipc_namespace *ns)
{
#ifdef CONFIG_IPC_NS
	return refcount_read(&ns->ns.count) == 1;
#else
	return false;
#endif
}

#endif /* _SYNCMEM_COMPAT_H */
