// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The event loop: async waits (Atomics.waitAsync) completed through the
 * kernel handle's eventfd, waited for with io_uring, delivered as callbacks.
 *
 * The loop owns one /dev/syncmem handle and one eventfd registered on it. The
 * kernel queues a completion record on the handle and adds 1 to the eventfd
 * for each finished wait. The loop keeps one io_uring read armed on the
 * eventfd; when it completes, the loop drains the records with read() and
 * runs their callbacks. Callbacks run only from syncmem_loop_run*() and
 * syncmem_loop_free(), never from the call that queued the wait.
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
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "idmap.h"
#include "internal.h"

/* user_data of the eventfd read in the ring (wait ids never reach the ring). */
#define LOOP_EVENTFD_READ 1

#define LOOP_BATCH 64

/* A callback due with its result, queued without the kernel. */
struct loop_due {
	syncmem_wait_cb cb;
	void *arg;
	int result;
};

struct syncmem_loop {
	struct io_uring ring;
	/* Records read from the handle whose callbacks have not run: [rec_head, rec_count). */
	struct syncmem_completion recs[LOOP_BATCH];
	size_t rec_head, rec_count;
	int handle;		/* /dev/syncmem, O_NONBLOCK */
	int efd;		/* the kernel signals it; io_uring reads it */
	uint64_t efd_value;	/* target of the armed read */
	bool read_armed;
	uint64_t last_id;
	struct idmap pending;	/* wait id -> callback */
	struct idmap jobs;	/* job id -> its syncmem__job (abortable acquisitions) */
	uint32_t process;	/* syncmem__process_gen() of its maker */
	struct loop_due *due;	/* FIFO: [due_head, due_count) still to run */
	size_t due_head, due_count, due_cap;
	uint64_t due_queued;	/* callbacks ever queued in due, */
	uint64_t due_taken;	/* and ever taken off it */
	unsigned int depth;	/* syncmem_loop_run*() calls under way, nested */
	bool closing;		/* syncmem_loop_free() began: nothing new is queued */
	bool freeing;		/* syncmem_loop_free() is running the callbacks */
	bool free_deferred;	/* freed from a callback: the outermost run frees it */
	bool fd_given;		/* syncmem_loop_fd() was called: post through the kernel */
};

/* 0, -EINVAL for NULL, -EBADFD in a process forked from the loop's maker. */
static int loop_usable(const struct syncmem_loop *loop)
{
	if (!loop)
		return -EINVAL;
	return loop->process == syncmem__process_gen() ? 0 : -EBADFD;
}

int syncmem__loop_check(const struct syncmem_loop *loop)
{
	int err = loop_usable(loop);

	return err ? err : loop->closing ? -ECANCELED : 0;
}

/*
 * Must a run stop after the callback that just returned? When that
 * callback freed the loop, or forked and returned in the child (which
 * must not read the parent's records).
 */
static bool loop_stopped(const struct syncmem_loop *loop)
{
	return (loop->closing && !loop->freeing) || loop_usable(loop);
}

/* A loop on the handle @open_handle(@arg) gives: 0 and *@out, or -errno. */
static int loop_make(int (*open_handle)(const void *arg), const void *arg,
		     struct syncmem_loop **out)
{
	struct syncmem_eventfd reg = { 0 };
	struct syncmem_loop *loop;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
	loop->handle = loop->efd = -1;
	loop->process = syncmem__process_gen();
	err = io_uring_queue_init(8, &loop->ring, 0);
	if (err < 0) {
		free(loop);
		return err;
	}
	err = open_handle(arg);
	if (err < 0)
		goto fail;
	loop->handle = err;
	if (fcntl(loop->handle, F_SETFL, O_NONBLOCK)) {
		err = -errno;
		goto fail;
	}
	/* Blocking on purpose: io_uring then waits for it to become readable. */
	loop->efd = eventfd(0, EFD_CLOEXEC);
	if (loop->efd < 0) {
		err = -errno;
		goto fail;
	}
	reg.fd = loop->efd;
	err = syncmem__ioctl(loop->handle, SYNCMEM_IOC_SET_EVENTFD, &reg);
	if (err)
		goto fail;
	*out = loop;
	return 0;

fail:
	if (loop->efd >= 0)
		close(loop->efd);
	if (loop->handle >= 0)
		close(loop->handle);
	io_uring_queue_exit(&loop->ring);
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

/* Queue the eventfd read in the ring, if it is not in flight (submitted by the wait). */
static int arm_read(struct syncmem_loop *loop)
{
	struct io_uring_sqe *sqe;

	if (loop->read_armed)
		return 0;
	sqe = io_uring_get_sqe(&loop->ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, loop->efd, &loop->efd_value,
			   sizeof(loop->efd_value), 0);
	io_uring_sqe_set_data64(sqe, LOOP_EVENTFD_READ);
	loop->read_armed = true;
	return 0;
}

static void reap_cqe(struct syncmem_loop *loop, struct io_uring_cqe *cqe)
{
	if (io_uring_cqe_get_data64(cqe) == LOOP_EVENTFD_READ)
		loop->read_armed = false;
	io_uring_cqe_seen(&loop->ring, cqe);
}

/* Reap whatever the ring has, without waiting. */
static void reap_ready(struct syncmem_loop *loop)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&loop->ring, &cqe) == 0)
		reap_cqe(loop, cqe);
}

static int user_result(int result)
{
	switch (result) {
	case SYNCMEM_WAIT_WOKEN:
	case SYNCMEM_WAIT_HANDED_OFF:
		return SYNCMEM_OK;
	case SYNCMEM_WAIT_TIMED_OUT:
		return SYNCMEM_TIMED_OUT;
	default:
		return result;	/* -ECANCELED */
	}
}

/*
 * Run the callbacks of the handle's completion records: first those read
 * already (by a call this one runs inside), then as many as the handle
 * gives. Each record is taken off before its callback runs. The number
 * run, or -errno when the read failed before any ran.
 */
static int dispatch(struct syncmem_loop *loop)
{
	bool more = true;	/* the last read filled the buffer */
	int ran = 0;

	for (;;) {
		ssize_t n;

		while (loop->rec_head < loop->rec_count) {
			struct syncmem_completion rec = loop->recs[loop->rec_head++];
			struct idmap_entry e;

			if (!syncmem__idmap_remove(&loop->pending, rec.user_data, &e))
				continue;	/* not ours, or already run with -ECANCELED by a free */
			e.cb(e.arg, e.raw ? rec.result : user_result(rec.result));
			ran++;
			if (loop_stopped(loop))
				return ran;
		}
		if (!more)
			return ran;
		n = read(loop->handle, loop->recs, sizeof(loop->recs));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return (errno == EAGAIN || ran) ? ran : -errno;
		}
		loop->rec_head = 0;
		loop->rec_count = (size_t)n / sizeof(loop->recs[0]);
		more = (size_t)n == sizeof(loop->recs);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
		if (loop_stopped(loop))
			break;
	}
	return ran;
}

/*
 * Could completion records wait on the handle? Not while the eventfd read
 * is in flight without a completion: the kernel adds to the eventfd after
 * queueing each record, so a record queued since the last dispatch either
 * completed that read or, before it was armed, made it complete at once.
 * This saves a read() that would find nothing before every wait.
 */
static bool records_may_wait(struct syncmem_loop *loop)
{
	/* Read by a call that runs a callback that runs the loop again. */
	if (loop->rec_head < loop->rec_count)
		return true;
	reap_ready(loop);
	return !loop->read_armed;
}

static void loop_release(struct syncmem_loop *loop);

/* A call that ran callbacks returns: the last one out frees a loop freed from a callback. */
static int loop_leave(struct syncmem_loop *loop, int ret)
{
	if (!--loop->depth && loop->free_deferred)
		loop_release(loop);
	return ret;
}

static int run_once(struct syncmem_loop *loop, int64_t timeout_ns)
{
	uint64_t deadline = 0;
	int ran = 0, due, err;

	due = run_due(loop);
	/* Only completions of our own: nothing to ask the kernel. */
	if ((due && !loop->pending.count) || loop_stopped(loop))
		return due;
	if (records_may_wait(loop))
		ran = dispatch(loop);
	if (ran >= 0)
		ran += due;
	if (ran || !timeout_ns || !loop->pending.count)
		return ran;
	if (timeout_ns > 0)
		deadline = now_ns() + (uint64_t)timeout_ns;

	for (;;) {
		struct __kernel_timespec ts, *tsp = NULL;
		struct io_uring_cqe *cqe = NULL;

		err = arm_read(loop);
		if (err)
			return err;
		if (timeout_ns > 0) {
			uint64_t now = now_ns();
			uint64_t left = now < deadline ? deadline - now : 0;

			ts.tv_sec = (long long)(left / 1000000000u);
			ts.tv_nsec = (long long)(left % 1000000000u);
			tsp = &ts;
		}
		/* One system call: submit the read if it is new, and wait. */
		err = io_uring_submit_and_wait_timeout(&loop->ring, &cqe, 1, tsp, NULL);
		if (err >= 0 && cqe)
			reap_cqe(loop, cqe);
		else if (err != -ETIME && err != -EINTR)
			return err;
		ran = records_may_wait(loop) ? dispatch(loop) : 0;
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
	while (!loop_stopped(loop) && (loop->pending.count || loop->due_count > loop->due_head)) {
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
	 * The handle is readable exactly when completion records wait: from
	 * now on every completion is one, those queued so far included
	 * (one that cannot be posted still runs at the next run_once).
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
	}
	return loop->handle;
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
		.flags = flags,
	};
	struct idmap_entry e;
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
	ret = syncmem__ioctl(loop->handle, SYNCMEM_IOC_WAIT_ASYNC, &w);
	if (ret != SYNCMEM_WAIT_QUEUED)
		return ret;	/* NOT_EQUAL, TIMED_OUT, OWNER_DIED or -errno: no callback */
	e = (struct idmap_entry){ .id = w.user_data, .cb = cb, .arg = arg, .raw = raw };
	syncmem__idmap_insert(&loop->pending, &e);
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
			      uint64_t deadline_ns, syncmem_wait_cb cb, void *arg, uint64_t *id_out)
{
	return wait_async_flags(loop, r, addr, width, expected, deadline_ns, cb, arg, true,
				id_out, 0);
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
	if (loop->due_count == loop->due_cap) {
		size_t cap = loop->due_cap ? loop->due_cap * 2 : 16;
		struct loop_due *due = reallocarray(loop->due, cap, sizeof(*due));

		if (!due)
			return -ENOMEM;
		loop->due = due;
		loop->due_cap = cap;
	}
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
	struct idmap_entry e;
	int ret;

	ret = syncmem__idmap_reserve(&loop->pending);
	if (ret)
		return ret;
	post.user_data = ++loop->last_id;
	ret = syncmem__ioctl(loop->handle, SYNCMEM_IOC_POST, &post);
	if (ret)
		return ret;
	e = (struct idmap_entry){ .id = post.user_data, .cb = cb, .arg = arg, .raw = true };
	syncmem__idmap_insert(&loop->pending, &e);
	return 0;
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
	struct syncmem_cancel c = { .user_data = id };

	if (!syncmem__idmap_contains(&loop->pending, id))
		return -ENOENT;
	return syncmem__ioctl(loop->handle, SYNCMEM_IOC_CANCEL, &c);
}

int syncmem_wait_cancel(struct syncmem_loop *loop, uint64_t id)
{
	struct syncmem_cancel c = { .user_data = id };
	int err = loop_usable(loop);

	if (err)
		return err;
	if (!syncmem__idmap_contains(&loop->pending, id))
		return -ENOENT;
	/* On success the -ECANCELED record arrives like any other. */
	return syncmem__ioctl(loop->handle, SYNCMEM_IOC_CANCEL, &c);
}

/* ---- Jobs: async acquisitions a loop may abort while they are pending ---- */

int syncmem__loop_usable(const struct syncmem_loop *loop)
{
	return loop_usable(loop);
}

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
	int err = loop_usable(loop);

	if (err)
		return err;
	j = syncmem__job_find(loop, id, 0);
	return j ? j->abort(j) : -ENOENT;
}

static void loop_release(struct syncmem_loop *loop)
{
	close(loop->handle);
	close(loop->efd);
	io_uring_queue_exit(&loop->ring);
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
	 * Cancel what is still queued, then collect every record: waits that
	 * completed first report their real result (a hand-off must not be
	 * lost), the rest -ECANCELED. In a forked child they are the
	 * parent's: only the child's copies go (no callback runs).
	 */
	if (loop_usable(loop)) {
		syncmem__idmap_free(&loop->pending);
	} else {
		loop->freeing = true;
		/* Completed already: their real results, as the kernel's records below. */
		while (run_due(loop))
			;
		syncmem__ioctl(loop->handle, SYNCMEM_IOC_CANCEL, &all);
	}
	while (loop->pending.count && idle < 10) {
		struct pollfd p = { .fd = loop->handle, .events = POLLIN };

		/* Records read by a run this free was called from go first. */
		if (dispatch(loop) > 0)
			continue;
		/* A completion in flight on another CPU lands within moments. */
		if (poll(&p, 1, 1000) == 0)
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
