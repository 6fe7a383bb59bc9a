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
#include <linux/sort.h>
#include <linux/uaccess.h>

#include "syncmem_core.h"
#include "syncmem_queue.h"

/*
 * The first waiters of a region in (offset, position) order from a cursor
 * on, picked while its queues are walked (introspect.c).
 */
struct syncmem_waiter_pick {
	bool one;			/* only the word at @offset */
	u64 offset;
	u64 from_offset;		/* none before (@from_offset, @from_position) */
	u32 from_position;
	struct syncmem_waiter_entry *out; /* a max-heap of @n until finished */
	u32 cap;
	u32 n;
	u64 total;			/* waiters at or after the cursor */
	bool replaced;			/* the slot given was the heap's top */
};

/* (offset, position) order of waiter entries. */
static bool syncmem_entry_before(u64 offset, u32 position,
				 const struct syncmem_waiter_entry *e)
{
	return offset < e->offset || (offset == e->offset && position < e->position);
}

static void syncmem_entry_swap(struct syncmem_waiter_entry *a,
			       struct syncmem_waiter_entry *b)
{
	swap(*a, *b);
}

/* Would the waiter at (@offset, @position) be kept (it is not before the cursor)? */
static bool syncmem_pick_wanted(const struct syncmem_waiter_pick *p, u64 offset, u32 position)
{
	return p->n < p->cap ||
	       (p->cap && syncmem_entry_before(offset, position, &p->out[0]));
}

/*
 * Where to describe the waiter at (@offset, @position), at or after the
 * cursor, or NULL when it comes after every one kept. While the array is
 * not full it goes at the end; once full it replaces the latest kept (the
 * top of the max-heap). syncmem_pick_placed() restores the heap afterwards.
 */
static struct syncmem_waiter_entry *syncmem_pick_slot(struct syncmem_waiter_pick *p,
						      u64 offset, u32 position)
{
	if (!syncmem_pick_wanted(p, offset, position))
		return NULL;
	p->replaced = p->n == p->cap;
	return p->replaced ? &p->out[0] : &p->out[p->n++];
}

static bool syncmem_heap_less(const struct syncmem_waiter_entry *a,
			      const struct syncmem_waiter_entry *b)
{
	return syncmem_entry_before(a->offset, a->position, b);
}

static void syncmem_pick_placed(struct syncmem_waiter_pick *p)
{
	struct syncmem_waiter_entry *h = p->out;
	u32 i, child;

	if (!p->replaced) {		/* appended: up while above its parent */
		for (i = p->n - 1; i && syncmem_heap_less(&h[(i - 1) / 2], &h[i]);
		     i = (i - 1) / 2)
			syncmem_entry_swap(&h[(i - 1) / 2], &h[i]);
		return;
	}
	for (i = 0; 2 * i + 1 < p->n; i = child) {	/* the top: down */
		child = 2 * i + 1;
		if (child + 1 < p->n && syncmem_heap_less(&h[child], &h[child + 1]))
			child++;
		if (!syncmem_heap_less(&h[i], &h[child]))
			break;
		syncmem_entry_swap(&h[i], &h[child]);
	}
}

static int syncmem_waiter_entry_cmp(const void *a, const void *b)
{
	const struct syncmem_waiter_entry *y = b;
	const struct syncmem_waiter_entry *x = a;

	if (syncmem_heap_less(x, y))
		return -1;
	return syncmem_heap_less(y, x);
}

/*
 * Under b->lock: what a caller in @ns may know of queued waiter @w; its
 * kind adds who waits, and until when.
 */
static void syncmem_waiter_describe(const struct syncmem_waiter *w,
				    struct pid_namespace *ns,
				    struct syncmem_waiter_entry *e)
{
	lockdep_assert_held(&w->b->lock);
	*e = (struct syncmem_waiter_entry){
		.offset = w->q->offset,
		.since_ns = w->seq,
		.owner = w->owner,
		.size = w->size,
	};
	if (w->observer)
		e->flags |= SYNCMEM_WAITER_OBSERVER;
	if (w->owner)
		e->flags |= SYNCMEM_WAITER_OWNER;
	w->ops->describe(w, ns, e);
}

/*
 * A place in a queue's arrival order, which merges its two lists (both in
 * arrival order): the next writable waiter and the next observer from
 * there, NULL at the end of either.
 */
struct syncmem_queue_cursor {
	struct syncmem_bucket *b;	/* its lock is held */
	struct syncmem_queue *q;
	struct syncmem_waiter *wa;
	struct syncmem_waiter *ob;
};

static struct syncmem_waiter *syncmem_list_next(struct syncmem_waiter *w,
						struct list_head *head)
{
	return list_is_last(&w->node, head) ? NULL : list_next_entry(w, node);
}

static struct syncmem_waiter *syncmem_list_prev(struct syncmem_waiter *w,
						struct list_head *head)
{
	return list_is_first(&w->node, head) ? NULL : list_prev_entry(w, node);
}

static struct syncmem_waiter *syncmem_list_last(struct list_head *head)
{
	return list_empty(head) ? NULL : list_last_entry(head, struct syncmem_waiter, node);
}

/* Under b->lock: the waiter at the cursor, which then moves past it. */
static struct syncmem_waiter *syncmem_cursor_next(struct syncmem_queue_cursor *c)
{
	struct syncmem_waiter *w;

	lockdep_assert_held(&c->b->lock);
	if (!c->wa || (c->ob && c->ob->seq < c->wa->seq)) {
		w = c->ob;
		if (w)
			c->ob = syncmem_list_next(w, &c->q->observers);
		return w;
	}
	w = c->wa;
	c->wa = syncmem_list_next(w, &c->q->waiters);
	return w;
}

/*
 * Under b->lock: put the cursor at @position of @q, a queue of @b (below
 * q->nr), walking from whichever end of the queue is nearer.
 */
static void syncmem_cursor_seek(struct syncmem_queue_cursor *c, struct syncmem_bucket *b,
				struct syncmem_queue *q, u32 position)
{
	struct syncmem_waiter *pw, *po;
	u32 i;

	lockdep_assert_held(&b->lock);
	c->b = b;
	c->q = q;
	if (position <= q->nr / 2) {
		c->wa = list_first_entry_or_null(&q->waiters, struct syncmem_waiter, node);
		c->ob = list_first_entry_or_null(&q->observers, struct syncmem_waiter, node);
		for (i = 0; i < position; i++)
			syncmem_cursor_next(c);
		return;
	}
	/* Back from the newest: each step takes the newer list's last one. */
	pw = syncmem_list_last(&q->waiters);
	po = syncmem_list_last(&q->observers);
	c->wa = NULL;
	c->ob = NULL;
	for (i = q->nr; i > position; i--) {
		if (!po || (pw && pw->seq > po->seq)) {
			c->wa = pw;
			pw = syncmem_list_prev(pw, &q->waiters);
		} else {
			c->ob = po;
			po = syncmem_list_prev(po, &q->observers);
		}
	}
}

/*
 * Under b->lock: offer the waiters of @q, a queue of @b, from @p's cursor on, in arrival
 * order, until @p keeps no more of them. The count comes from q->nr, so a
 * reader walks at most the entries it keeps plus the way to the cursor
 * (from the nearer end), not the whole queue.
 */
static void syncmem_queue_describe(struct syncmem_bucket *b, struct syncmem_queue *q,
				   struct pid_namespace *ns, struct syncmem_waiter_pick *p)
{
	struct syncmem_queue_cursor c;
	struct syncmem_waiter_entry *e;
	struct syncmem_waiter *w;
	u32 position = 0;

	lockdep_assert_held(&b->lock);
	if (q->offset < p->from_offset)
		return;
	if (q->offset == p->from_offset)
		position = p->from_position;
	if (position >= q->nr)
		return;
	p->total += q->nr - position;
	if (!syncmem_pick_wanted(p, q->offset, position))
		return;
	syncmem_cursor_seek(&c, b, q, position);
	for (; position < q->nr; position++) {
		w = syncmem_cursor_next(&c);
		e = syncmem_pick_slot(p, q->offset, position);
		if (!e)
			break;		/* and none after it in this queue */
		syncmem_waiter_describe(w, ns, e);
		e->position = position;
		syncmem_pick_placed(p);
	}
}

/**
 * syncmem_waiters_walk - offer every waiter of a region to a selection
 * @r:	The region (a reference is held by the caller).
 * @p:	The selection; with @p->one only the word at @p->offset is looked at.
 *
 * Each queue is read whole under its bucket lock, one bucket after another.
 */
static void syncmem_waiters_walk(struct syncmem_region *r, struct syncmem_waiter_pick *p)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	unsigned long i, first = 0, last = (1UL << r->bucket_bits) - 1;
	struct syncmem_queue *q;

	if (p->one) {
		first = syncmem_bucket_of(r, p->offset) - r->buckets;
		last = first;
	}
	for (i = first; i <= last; i++) {
		struct syncmem_bucket *b = &r->buckets[i];

		spin_lock(&b->lock);
		hlist_for_each_entry(q, &b->queues, node)
			if (!p->one || q->offset == p->offset)
				syncmem_queue_describe(b, q, ns, p);
		spin_unlock(&b->lock);
		cond_resched();
	}
}

/* The first @p->cap waiters from the cursor on, in order: their count. */
static u32 syncmem_pick_waiters(struct syncmem_region *r, struct syncmem_waiter_pick *p)
{
	syncmem_waiters_walk(r, p);
	sort(p->out, p->n, sizeof(*p->out), syncmem_waiter_entry_cmp, NULL);
	return p->n;
}

long syncmem_ioctl_waiters(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_waiter_pick p = { 0 };
	struct syncmem_waiter_list arg;
	bool from;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~SYNCMEM_WAITERS_FLAGS || arg.count > SYNCMEM_LIST_MAX || arg.pad)
		return -EINVAL;
	p.one = arg.flags & SYNCMEM_WAITERS_WORD;
	from = arg.flags & SYNCMEM_WAITERS_FROM;
	if (p.one && syncmem_word_check(r, arg.offset, 4, 0))
		return -EINVAL;
	if ((!p.one && !from && arg.offset) || (!from && arg.position))
		return -EINVAL;
	p.offset = arg.offset;
	if (from) {
		p.from_offset = arg.offset;
		p.from_position = arg.position;
	}
	if (arg.count) {
		p.out = kvcalloc(arg.count, sizeof(*p.out), GFP_KERNEL_ACCOUNT);
		if (!p.out)
			return -ENOMEM;
	}
	p.cap = arg.count;
	arg.count = syncmem_pick_waiters(r, &p);
	arg.total = p.total;
	return syncmem_list_reply(uarg, &arg, sizeof(arg), arg.entries, p.out,
				  arg.count * sizeof(*p.out));
}

/* What the owner id in @word of @r says, for a caller in @ns. */
static void syncmem_who_describe(struct syncmem_region *r, struct syncmem_who *who,
				 struct pid_namespace *ns)
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
	if (!syncmem_owner_describe(id, r, ns, &who->pid, &who->tid, &process)) {
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
	syncmem_who_describe(r, &who, task_active_pid_ns(current));
	return copy_to_user(uarg, &who, sizeof(who)) ? -EFAULT : 0;
}

/* Waiters one fdinfo read lists at most (the count says how many there are). */
#define SYNCMEM_FDINFO_WAITERS	32

/* A region name as fdinfo prints it: \xHH for bytes outside ASCII's printable ones and '\'. */
static void syncmem_seq_name(struct seq_file *m, const char *name, u32 len)
{
	u32 i;

	for (i = 0; i < len; i++) {
		u8 c = name[i];

		if (c > ' ' && c < 0x7f && c != '\\')
			seq_putc(m, c);
		else
			seq_printf(m, "\\x%02x", c);
	}
}

/*
 * /proc/<pid>/fdinfo of a region fd: what the region is and who waits on
 * it, as the reader's PID namespace sees them. The same as the ioctls
 * give, for people and scripts that have only a pid and an fd.
 */
void syncmem_region_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct syncmem_region *r = file->private_data;
	struct syncmem_waiter_pick p = { .cap = SYNCMEM_FDINFO_WAITERS };
	struct syncmem_waiter_entry *e;
	u32 i, n;

	seq_printf(m, "syncmem-region:\t%lu\n", r->inode->i_ino);
	/* The name never changes; named says whether it is still linked. */
	if (r->name_len) {
		seq_puts(m, "syncmem-name:\t");
		syncmem_seq_name(m, r->name, r->name_len);
		seq_putc(m, '\n');
	}
	seq_printf(m, "syncmem-named:\t%d\n", syncmem_region_is_named(r));
	seq_printf(m, "syncmem-size:\t%llu\n", r->size);
	seq_printf(m, "syncmem-mode:\t0%o\n", r->mode);
	seq_printf(m, "syncmem-rdonly:\t%d\n", !(file->f_mode & FMODE_WRITE));
	seq_printf(m, "syncmem-objects:\t%u\n", READ_ONCE(r->nr_objects));
	syncmem_armed_show(m, r);
	e = kcalloc(SYNCMEM_FDINFO_WAITERS, sizeof(*e), GFP_KERNEL);
	if (!e) {
		seq_printf(m, "syncmem-waiters:\t%d\n", atomic_read(&r->nr_waiters));
		return;
	}
	p.out = e;
	n = syncmem_pick_waiters(r, &p);
	seq_printf(m, "syncmem-waiters:\t%llu\n", p.total);
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
