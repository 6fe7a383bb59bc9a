// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The event loop: async waits (Atomics.waitAsync) delivered as callbacks.
 *
 * Two paths, chosen when the loop is made (syncmem_loop_path() says which):
 * the ring path (loop_uring.c), and the eventfd path (here), where
 * io_uring is unavailable (a seccomp filter), the module has no ring
 * commands, or SYNCMEM_LOOP=eventfd is set: every wait is queued with an
 * ioctl, and the loop poll()s the handle and read()s its records.
 *
 * Callbacks run only from syncmem_loop_run*() and syncmem_loop_free(),
 * never from the call that queued the wait.
 *
 * A callback may call the loop again. Every callback is taken off its
 * queue (the loop's own, or the records read from the handle, which the
 * loop keeps) before it runs, so a syncmem_loop_run*() from inside a
 * callback runs the next ones and never the same one twice. Once
 * syncmem_loop_free() has begun, every call that would queue work (or
 * run the loop) is -ECANCELED before it takes anything: the callbacks
 * free runs cannot leave a callback behind that would never run. A free
 * from inside a callback runs what is pending as any free does; the
 * loop's memory goes when the outermost call running callbacks returns.
 *
 * A call that completes at once (a lock taken on the spot) queues its
 * callback in the loop's own memory, with no system call: the next
 * syncmem_loop_run_once() runs it, and makes no system call either when
 * nothing else is pending. A program that polls syncmem_loop_fd() would
 * not see such a completion, so once it has asked for the fd, completions
 * go through the kernel (SYNCMEM_IOC_POST), which makes the fd readable.
 *
 * A loop belongs to the process that made it. A forked child shares its
 * handle and its ring with the parent: reading records there would steal
 * the parent's completions (a hand-off among them), cancelling would end
 * the parent's waits. In a child every call but syncmem_loop_free() is
 * -EBADFD, and free only lets go of the child's copies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "loop_core.h"
#include "loop_uring.h"

/* A wait_async_flags() flag of the loop's own: never a ring command. */
#define LOOP_HANDLE_ONLY (1U << 31)

int syncmem__loop_check(const struct syncmem_loop *loop)
{
	int err = syncmem__loop_usable(loop);

	return err ? err : loop->closing ? -ECANCELED : 0;
}

static int loop_make(int (*open_handle)(const void *arg), const void *arg,
		     struct syncmem_loop **out)
{
	struct syncmem_loop *loop;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
	loop->handle = loop->efd = loop->cancel_fd = -1;
	loop->process = syncmem__process_gen();
	err = open_handle(arg);
	if (err < 0)
		goto fail;
	loop->handle = err;
	if (fcntl(loop->handle, F_SETFL, O_NONBLOCK)) {
		err = -errno;
		goto fail;
	}
	err = syncmem__ring_init(loop);
	if (err)
		goto fail;
	*out = loop;
	return 0;

fail:
	if (loop->handle >= 0)
		close(loop->handle);
	free(loop);
	return err;
}

static int device_handle(const void *arg)
{
	(void)arg;
	return syncmem__device_open();
}

int syncmem_loop_new(struct syncmem_loop **out)
{
	return loop_make(device_handle, NULL, out);
}

static int region_handle(const void *r)
{
	return syncmem__region_handle(((const struct syncmem_region *)r)->fd);
}

int syncmem_loop_new_region(struct syncmem_region *r, struct syncmem_loop **out)
{
	if (!r) {
		if (out)
			*out = NULL;
		return -EINVAL;
	}
	return loop_make(region_handle, r, out);
}

int syncmem_loop_path(const struct syncmem_loop *loop)
{
	int err = syncmem__loop_usable(loop);

	return err ? err : loop->uring ? SYNCMEM_LOOP_URING : SYNCMEM_LOOP_EVENTFD;
}

/* Whatever completed: the callbacks run, or -errno. */
static int reap(struct syncmem_loop *loop)
{
	return loop->uring ? syncmem__ring_reap(loop) : syncmem__loop_dispatch(loop);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The time from now to @deadline_ns: -1 for no deadline, 0 once it passed. */
static int64_t timeout_of(uint64_t deadline_ns)
{
	uint64_t now;

	if (deadline_ns == SYNCMEM_NO_DEADLINE)
		return -1;
	now = now_ns();
	return deadline_ns > now ? (int64_t)(deadline_ns - now) : 0;
}

/* Take the oldest due callback off the queue into *@d: false when none. */
static bool due_pop(struct syncmem_loop *loop, struct loop_due *d)
{
	if (loop->due_head == loop->due_count)
		return false;
	*d = loop->due[loop->due_head++];
	loop->due_taken++;
	if (loop->due_head == loop->due_count)
		loop->due_head = loop->due_count = 0;
	return true;
}

/*
 * Run the callbacks queued without the kernel before this call; those
 * their callbacks queue run next time. Each is taken off the queue before
 * it runs (a callback may run the loop itself). The number run.
 */
static int run_due(struct syncmem_loop *loop)
{
	uint64_t end = loop->due_queued;
	struct loop_due d;
	int ran = 0;

	while (loop->due_taken < end && due_pop(loop, &d)) {
		d.cb(d.arg, d.result);
		ran++;
		if (syncmem__loop_stopped(loop))
			break;
	}
	return ran;
}

static void loop_release(struct syncmem_loop *loop);

/* A call that ran callbacks returns: the last one out frees a loop freed from a callback. */
static int loop_leave(struct syncmem_loop *loop, int ret)
{
	if (!--loop->depth && loop->free_deferred)
		loop_release(loop);
	return ret;
}

/*
 * Wait until a completion may be in, for at most @left_ns (negative: no
 * limit): 0, -ETIME when the time ran out, or -errno.
 */
static int wait_some(struct syncmem_loop *loop, int64_t left_ns)
{
	struct pollfd p = { .fd = loop->handle, .events = POLLIN };
	int ms = left_ns < 0 ? -1 : (int)((left_ns + 999999) / 1000000);

	if (loop->uring)
		return syncmem__ring_wait_some(loop, left_ns);
	if (left_ns > (int64_t)INT32_MAX * 1000000)
		ms = INT32_MAX;
	if (poll(&p, 1, ms) < 0)
		return errno == EINTR ? 0 : -errno;
	return 0;
}

static int run_once(struct syncmem_loop *loop, int64_t timeout_ns)
{
	uint64_t deadline = 0;
	int ran, due, err;

	due = run_due(loop);
	/* Only completions of our own: nothing to ask the kernel. */
	if (!loop->pending.count || syncmem__loop_stopped(loop))
		return due;
	ran = reap(loop);
	if (ran >= 0)
		ran += due;
	if (ran || !timeout_ns || !loop->pending.count || syncmem__loop_stopped(loop))
		return ran;
	if (timeout_ns > 0)
		deadline = now_ns() + (uint64_t)timeout_ns;

	for (;;) {
		int64_t left = -1;

		if (timeout_ns > 0) {
			uint64_t now = now_ns();

			left = now < deadline ? (int64_t)(deadline - now) : 0;
		}
		err = wait_some(loop, left);
		if (err && err != -ETIME)
			return err;
		ran = reap(loop);
		if (ran || err == -ETIME)
			return ran;
		if (timeout_ns > 0 && now_ns() >= deadline)
			return 0;
	}
}

int syncmem_loop_run_once(struct syncmem_loop *loop, int64_t timeout_ns)
{
	int err = syncmem__loop_check(loop);

	if (err)
		return err;
	loop->depth++;
	return loop_leave(loop, run_once(loop, timeout_ns));
}

int syncmem_loop_run(struct syncmem_loop *loop)
{
	int ret = syncmem__loop_check(loop);

	if (ret)
		return ret;
	loop->depth++;
	while (!syncmem__loop_stopped(loop) && (loop->pending.count || loop->due_count > loop->due_head)) {
		ret = run_once(loop, SYNCMEM_FOREVER);
		if (ret < 0)
			break;
		ret = 0;
	}
	return loop_leave(loop, ret);
}

static int post_to_kernel(struct syncmem_loop *loop, syncmem_wait_cb cb, void *arg,
			  int result);

int syncmem_loop_fd(struct syncmem_loop *loop)
{
	if (!loop)
		return -EINVAL;
	/*
	 * The fd (the ring's, or on the eventfd path the handle) is readable
	 * exactly when completions wait: from now on every completion goes
	 * through the kernel, those queued so far included (one that cannot
	 * be posted still runs at the next run_once).
	 */
	if (!loop->fd_given && !syncmem__loop_check(loop)) {
		loop->fd_given = true;
		while (loop->due_head < loop->due_count) {
			struct loop_due *d = &loop->due[loop->due_head];

			if (post_to_kernel(loop, d->cb, d->arg, d->result))
				break;
			loop->due_head++;
			loop->due_taken++;
		}
		if (loop->due_head == loop->due_count)
			loop->due_head = loop->due_count = 0;
		if (loop->uring)
			syncmem__ring_fd_given(loop);
	}
	return loop->uring ? loop->ring.ring_fd : loop->handle;
}

size_t syncmem_loop_pending(const struct syncmem_loop *loop)
{
	return loop ? loop->pending.count + loop->due_count - loop->due_head : 0;
}
static int wait_async_flags(struct syncmem_loop *loop, struct syncmem_region *r,
			    const void *addr, uint32_t width, uint64_t expected,
			    uint64_t deadline_ns, syncmem_wait_cb cb, void *arg,
			    bool raw, uint64_t *id_out, uint32_t flags)
{
	struct syncmem_wait_async w = {
		.size = width,
		.expected = expected,
		.deadline_ns = deadline_ns,
		.flags = flags & ~LOOP_HANDLE_ONLY,
	};
	bool ring = loop && loop->uring && !flags;
	int ret;

	if (!cb)
		return -EINVAL;
	ret = syncmem__loop_check(loop);
	if (ret)
		return ret;
	ret = syncmem__word_offset(r, addr, width, &w.offset);
	if (ret)
		return ret;
	/* Room first: once the kernel has queued the wait it must be tracked. */
	ret = syncmem__idmap_reserve(&loop->pending);
	if (ret)
		return ret;
	w.region_fd = r->fd;
	w.user_data = ++loop->last_id;
	if (ring)
		ret = syncmem__ring_wait(loop, r, addr, width, expected, timeout_of(deadline_ns),
					 w.user_data);
	else
		ret = syncmem__ioctl(loop->handle, SYNCMEM_IOC_WAIT_ASYNC, &w);
	if (ret != SYNCMEM_WAIT_QUEUED)
		return ret;	/* NOT_EQUAL, TIMED_OUT, OWNER_DIED or -errno: no callback */
	syncmem__loop_pending_add(loop, w.user_data, cb, arg, raw, ring);
	if (!ring && loop->uring && loop->fd_given)
		syncmem__ring_arm(loop);	/* its record must make the ring's fd readable */
	if (id_out)
		*id_out = w.user_data;
	return raw ? SYNCMEM_WAIT_QUEUED : SYNCMEM_PENDING;
}

int syncmem__wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			const void *addr, uint32_t width, uint64_t expected,
			int64_t timeout_ns, syncmem_wait_cb cb, void *arg,
			bool raw, uint64_t *id_out)
{
	return wait_async_flags(loop, r, addr, width, expected, syncmem__deadline(timeout_ns),
				cb, arg, raw, id_out, 0);
}

int syncmem__wait_async_until(struct syncmem_loop *loop, struct syncmem_region *r,
			      const void *addr, uint32_t width, uint64_t expected,
			      uint64_t deadline_ns, bool handoff, syncmem_wait_cb cb, void *arg,
			      uint64_t *id_out)
{
	return wait_async_flags(loop, r, addr, width, expected, deadline_ns, cb, arg, true,
				id_out, handoff ? LOOP_HANDLE_ONLY : 0);
}

int syncmem__lock_wait_async_until(struct syncmem_loop *loop, struct syncmem_region *r,
				   const uint64_t *addr, uint64_t expected, uint64_t deadline_ns,
				   syncmem_wait_cb cb, void *arg, uint64_t *id_out)
{
	int64_t id;
	int err = syncmem__loop_check(loop);

	if (err)
		return err;
	/* The kernel waits as the process's id: make sure it has one. */
	id = syncmem__process_owner(loop->handle);
	if (id < 0)
		return (int)id;
	return wait_async_flags(loop, r, addr, 8, expected, deadline_ns, cb, arg, true,
				id_out, SYNCMEM_WAIT_ASYNC_OWNER);
}

int syncmem__lock_wait_async(struct syncmem_loop *loop, struct syncmem_region *r,
			     const uint64_t *addr, uint64_t expected, syncmem_wait_cb cb,
			     void *arg)
{
	return syncmem__lock_wait_async_until(loop, r, addr, expected, SYNCMEM_NO_DEADLINE, cb,
					      arg, NULL);
}

/* Queue a due callback in the loop's memory: 0 or -ENOMEM. */
static int queue_due(struct syncmem_loop *loop, syncmem_wait_cb cb, void *arg, int result)
{
	struct loop_due *due = syncmem__loop_room(loop->due, loop->due_count, &loop->due_cap,
						  sizeof(*due), 16);

	if (!due)
		return -ENOMEM;
	loop->due = due;
	loop->due[loop->due_count++] = (struct loop_due){ .cb = cb, .arg = arg, .result = result };
	loop->due_queued++;
	return 0;
}

int syncmem__loop_post(struct syncmem_loop *loop, syncmem_wait_cb cb, void *arg,
		       int result)
{
	int ret = syncmem__loop_check(loop);

	if (ret)
		return ret;
	if (!loop->fd_given)
		return queue_due(loop, cb, arg, result);
	return post_to_kernel(loop, cb, arg, result);
}

static int post_to_kernel(struct syncmem_loop *loop, syncmem_wait_cb cb, void *arg,
			  int result)
{
	struct syncmem_post post = { .result = result };
	int ret;

	ret = syncmem__idmap_reserve(&loop->pending);
	if (ret)
		return ret;
	post.user_data = ++loop->last_id;
	ret = syncmem__ioctl(loop->handle, SYNCMEM_IOC_POST, &post);
	if (ret)
		return ret;
	syncmem__loop_pending_add(loop, post.user_data, cb, arg, true, false);
	/* Its record must make the ring's fd readable. */
	return loop->uring ? syncmem__ring_arm(loop) : 0;
}

int syncmem_wait_async32(struct syncmem_loop *loop, struct syncmem_region *r,
			 const uint32_t *addr, uint32_t expected,
			 int64_t timeout_ns, syncmem_wait_cb cb, void *arg,
			 uint64_t *id_out)
{
	return syncmem__wait_async(loop, r, addr, 4, expected, timeout_ns, cb, arg, false,
				   id_out);
}

int syncmem_wait_async64(struct syncmem_loop *loop, struct syncmem_region *r,
			 const uint64_t *addr, uint64_t expected,
			 int64_t timeout_ns, syncmem_wait_cb cb, void *arg,
			 uint64_t *id_out)
{
	return syncmem__wait_async(loop, r, addr, 8, expected, timeout_ns, cb, arg, false,
				   id_out);
}

int syncmem__loop_cancel(struct syncmem_loop *loop, uint64_t id)
{
	const struct idmap_entry *e = syncmem__idmap_get(&loop->pending, id);
	struct syncmem_cancel c = { .user_data = id };

	if (!e)
		return -ENOENT;
	if (e->ring)
		return syncmem__ring_cancel(loop, id);
	/* On success the -ECANCELED record arrives like any other. */
	return syncmem__ioctl(loop->handle, SYNCMEM_IOC_CANCEL, &c);
}

int syncmem_wait_cancel(struct syncmem_loop *loop, uint64_t id)
{
	int err = syncmem__loop_usable(loop);

	return err ? err : syncmem__loop_cancel(loop, id);
}

/* ---- Jobs: async acquisitions a loop may abort while they are pending ---- */

int syncmem__job_add(struct syncmem_loop *loop, struct syncmem__job *j, unsigned int kind,
		     int (*abort)(struct syncmem__job *j))
{
	struct idmap_entry e;
	int ret = syncmem__idmap_reserve(&loop->jobs);

	if (ret)
		return ret;
	j->id = ++loop->last_id;
	j->kind = kind;
	j->abort = abort;
	e = (struct idmap_entry){ .id = j->id, .arg = j };
	syncmem__idmap_insert(&loop->jobs, &e);
	return 0;
}

void syncmem__job_del(struct syncmem_loop *loop, struct syncmem__job *j)
{
	struct idmap_entry e;

	syncmem__idmap_remove(&loop->jobs, j->id, &e);
}

struct syncmem__job *syncmem__job_find(struct syncmem_loop *loop, uint64_t id,
				       unsigned int kind)
{
	struct syncmem__job *j = syncmem__idmap_arg(&loop->jobs, id);

	return j && (!kind || j->kind == kind) ? j : NULL;
}

int syncmem_loop_abort(struct syncmem_loop *loop, uint64_t id)
{
	struct syncmem__job *j;
	int err = syncmem__loop_usable(loop);

	if (err)
		return err;
	j = syncmem__job_find(loop, id, 0);
	return j ? j->abort(j) : -ENOENT;
}

static void loop_release(struct syncmem_loop *loop)
{
	close(loop->handle);
	if (loop->uring)
		syncmem__ring_exit(loop);
	syncmem__idmap_free(&loop->pending);
	syncmem__idmap_free(&loop->jobs);
	free(loop->due);
	free(loop);
}

void syncmem_loop_free(struct syncmem_loop *loop)
{
	struct syncmem_cancel all = { .flags = SYNCMEM_CANCEL_ALL };
	struct idmap_entry e;
	int idle = 0;

	/* A callback of this very free: it is being freed already. */
	if (!loop || loop->closing)
		return;
	/* From here on, calls from the callbacks below queue nothing (-ECANCELED). */
	loop->closing = true;
	/*
	 * Cancel what is still queued, then collect every completion: waits
	 * that completed first report their real result (a hand-off must not
	 * be lost), the rest -ECANCELED. In a forked child they are the
	 * parent's: only the child's copies go (no callback runs).
	 */
	if (syncmem__loop_usable(loop)) {
		syncmem__idmap_free(&loop->pending);
	} else {
		loop->freeing = true;
		/* Completed already: their real results, as the kernel's below. */
		while (run_due(loop))
			;
		syncmem__ioctl(loop->handle, SYNCMEM_IOC_CANCEL, &all);
		if (loop->uring)
			syncmem__ring_cancel_all(loop);
	}
	while (loop->pending.count && idle < 10) {
		struct pollfd p[2] = {
			{ .fd = loop->handle, .events = POLLIN },
			{ .fd = loop->uring ? loop->ring.ring_fd : -1, .events = POLLIN },
		};
		int ran = loop->uring ? syncmem__ring_reap(loop) : 0;

		/* Records read by a run this free was called from go first. */
		if (syncmem__loop_dispatch(loop) > 0 || ran > 0)
			continue;
		/* A completion in flight on another CPU lands within moments. */
		if (poll(p, 2, 1000) == 0)
			idle++;
	}
	while (syncmem__idmap_pop(&loop->pending, &e))
		e.cb(e.arg, -ECANCELED);
	loop->freeing = false;
	/* From a callback: the run it came from still uses the loop, and frees it. */
	if (loop->depth) {
		loop->free_deferred = true;
		return;
	}
	loop_release(loop);
}
