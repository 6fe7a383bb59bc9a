// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem introspection: who waits on a region's words (in queue order),
 * who holds its owner words, and /proc/<pid>/fdinfo of region fds.
 *
 * Permissions: any region fd may ask, read-only ones included, because
 * opening the region already needed read permission on it: what a user may
 * open, it may inspect, and nothing more (there is no call that lists the
 * waiters of a region by name). Process and thread ids are those of the
 * caller's PID namespace, 0 for a task it cannot see, as getpid() in that
 * namespace would give them.
 */
#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "syncmem_core.h"

/**
 * syncmem_list_reply - end a list ioctl: entries out, then its argument
 * @uarg:	The ioctl's argument in user memory.
 * @arg:	Its updated kernel copy, @arg_size bytes.
 * @arg_size:	See @arg.
 * @entries:	User address of the caller's array.
 * @out:	The entries (kvmalloc'ed or NULL), freed here.
 * @bytes:	Their size.
 *
 * Returns 0 or -EFAULT.
 */
long syncmem_list_reply(void __user *uarg, const void *arg, size_t arg_size,
			u64 entries, void *out, size_t bytes)
{
	long ret = 0;

	if (copy_to_user(u64_to_user_ptr(entries), out, bytes) ||
	    copy_to_user(uarg, arg, arg_size))
		ret = -EFAULT;
	kvfree(out);
	return ret;
}

long syncmem_ioctl_waiters(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_waiter_list arg;
	struct syncmem_waiter_entry *out = NULL;
	bool one;
	long n;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~SYNCMEM_WAITERS_FLAGS || arg.count > SYNCMEM_LIST_MAX)
		return -EINVAL;
	one = arg.flags & SYNCMEM_WAITERS_WORD;
	if (one ? syncmem_word_check(r, arg.offset, 4, 0) : arg.offset)
		return -EINVAL;
	if (arg.count) {
		out = kvcalloc(arg.count, sizeof(*out), GFP_KERNEL_ACCOUNT);
		if (!out)
			return -ENOMEM;
	}
	n = syncmem_waiters_snapshot(r, one, arg.offset, out, arg.count,
				     &arg.total);
	arg.count = n;
	return syncmem_list_reply(uarg, &arg, sizeof(arg), arg.entries, out,
				  n * sizeof(*out));
}

/* What the owner id in @word says, for a caller in @ns. */
static void syncmem_who_describe(struct syncmem_who *who, struct pid_namespace *ns)
{
	u64 id = who->word & SYNCMEM_OWNER_ID;
	bool process;

	switch (id) {
	case 0:
		who->state = SYNCMEM_WHO_FREE;
		return;
	case SYNCMEM_OWNER_NOBODY:
		who->state = SYNCMEM_WHO_NOBODY;
		return;
	case SYNCMEM_OWNER_GONE:
		who->state = SYNCMEM_WHO_GONE;
		return;
	case SYNCMEM_OWNER_NOTRECOVERABLE:
		who->state = SYNCMEM_WHO_NOTRECOVERABLE;
		return;
	}
	if (!syncmem_owner_describe(id, ns, &who->pid, &who->tid, &process)) {
		who->state = SYNCMEM_WHO_DEAD;
		return;
	}
	who->state = SYNCMEM_WHO_ALIVE;
	if (process)
		who->flags |= SYNCMEM_WHO_PROCESS;
}

long syncmem_ioctl_who(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_who who;

	if (copy_from_user(&who, uarg, sizeof(who)))
		return -EFAULT;
	if (who.flags || syncmem_word_check(r, who.offset, 8, 0))
		return -EINVAL;
	who.word = syncmem_word_read(r, who.offset, 8);
	who.pid = 0;
	who.tid = 0;
	syncmem_who_describe(&who, task_active_pid_ns(current));
	return copy_to_user(uarg, &who, sizeof(who)) ? -EFAULT : 0;
}

/* Waiters one fdinfo read lists at most (the count says how many there are). */
#define SYNCMEM_FDINFO_WAITERS	32

/*
 * /proc/<pid>/fdinfo of a region fd: what the region is and who waits on
 * it, as the reader's PID namespace sees them. The same as the ioctls
 * give, for people and scripts that have only a pid and an fd.
 */
void syncmem_region_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct syncmem_region *r = file->private_data;
	struct syncmem_waiter_entry *e;
	u64 total;
	long i, n;

	seq_printf(m, "syncmem-region:\t%lu\n", r->inode->i_ino);
	/* The name never changes; named says whether it is still linked. */
	if (r->name_len)
		seq_printf(m, "syncmem-name:\t%*pE\n", (int)r->name_len, r->name);
	seq_printf(m, "syncmem-named:\t%d\n", syncmem_region_is_named(r));
	seq_printf(m, "syncmem-size:\t%llu\n", r->size);
	seq_printf(m, "syncmem-mode:\t0%o\n", r->mode);
	seq_printf(m, "syncmem-rdonly:\t%d\n", !(file->f_mode & FMODE_WRITE));
	seq_printf(m, "syncmem-objects:\t%u\n", READ_ONCE(r->nr_objects));
	e = kcalloc(SYNCMEM_FDINFO_WAITERS, sizeof(*e), GFP_KERNEL);
	if (!e) {
		seq_printf(m, "syncmem-waiters:\t%d\n", atomic_read(&r->nr_waiters));
		return;
	}
	n = syncmem_waiters_snapshot(r, false, 0, e, SYNCMEM_FDINFO_WAITERS, &total);
	seq_printf(m, "syncmem-waiters:\t%llu\n", total);
	for (i = 0; i < n; i++) {
		seq_printf(m, "syncmem-wait:\toffset=0x%llx position=%u pid=%d tid=%d size=%u since=%llu",
			   e[i].offset, e[i].position, e[i].pid, e[i].tid,
			   e[i].size, e[i].since_ns);
		if (e[i].deadline_ns != SYNCMEM_NO_DEADLINE)
			seq_printf(m, " deadline=%llu", e[i].deadline_ns);
		if (e[i].owner)
			seq_printf(m, " owner=0x%llx", e[i].owner);
		if (e[i].flags & SYNCMEM_WAITER_ASYNC)
			seq_puts(m, " async");
		if (e[i].flags & SYNCMEM_WAITER_OBSERVER)
			seq_puts(m, " observer");
		if (e[i].flags & SYNCMEM_WAITER_AWAY)
			seq_puts(m, " away");
		seq_putc(m, '\n');
	}
	kfree(e);
}
