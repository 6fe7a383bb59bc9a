// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The event loop: async waits (Atomics.waitAsync) delivered as callbacks.
 *
 * Two paths, chosen when the loop is made (syncmem_loop_path() says which):
 *
 * The ring path: a plain wait is an io_uring command in the loop's own
 * ring (syncmem_prep_wait32/64), its CQE is its completion (user_data =
 * the wait's id), a cancel is a ring command, a timeout is the module's.
 * What has no ring command (lock waits, posts), and waits that may be
 * handed something (see syncmem__wait_async_until()), go through the handle:
 * the kernel queues a completion record there and adds 1 to an eventfd,
 * and the ring keeps a read of that eventfd armed while any such wait is
 * pending; each read's count says how many records to read() (no more, so
 * that no read completes for records already taken).
 *
 * The eventfd path, where io_uring is unavailable (a seccomp filter), the
 * module has no ring commands, or SYNCMEM_LOOP=eventfd is set: every wait
 * is queued with an ioctl, and the loop poll()s the handle and read()s its
 * records.
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
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "idmap.h"
#include "internal.h"

/*
 * user_data in the ring: a wait's id (below LOOP_ID_LIMIT), the id with
 * LOOP_CANCEL_TAG for the command cancelling it, or one of the loop's own.
 */
#define LOOP_ID_LIMIT		(1ULL << 62)
#define LOOP_CANCEL_TAG		(1ULL << 62)
#define LOOP_EVENTFD_READ	(1ULL << 63)
#define LOOP_NOP		(LOOP_EVENTFD_READ | 1)

#define LOOP_BATCH 64
/* A wait_async_flags() flag of the loop's own: never a ring command. */
#define LOOP_HANDLE_ONLY (1U << 31)
#define LOOP_SQ_ENTRIES 64
#define LOOP_CQ_ENTRIES 4096

/* A callback due with its result, queued without the kernel. */
struct loop_due {
	syncmem_wait_cb cb;
	void *arg;
	int result;
};

/* A CQE taken out of a full completion queue, not yet run. */
struct loop_cqe {
	uint64_t id;
	int res;
};

struct syncmem_loop {
	struct io_uring ring;
	bool uring;		/* the ring path (else the eventfd path: no ring) */
	/* Records read from the handle whose callbacks have not run: [rec_head, rec_count). */
	struct syncmem_completion recs[LOOP_BATCH];
	size_t rec_head, rec_count;
	uint64_t rec_owed;	/* ring path: records the eventfd counted, not read yet */
	struct loop_cqe *spill;	/* ring path: CQEs moved out of a full queue, FIFO */
	size_t spill_head, spill_count, spill_cap;
	int handle;		/* /dev/syncmem, O_NONBLOCK */
	int efd;		/* ring path: the kernel signals it; the ring reads it */
	int cancel_fd;		/* ring path: a region fd for cancel commands, or -1 */
	uint64_t efd_value;	/* target of the armed read */
	bool read_armed;
	size_t handle_waits;	/* pending entries whose completion is a record */
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

/* Track the callback of wait @id (room reserved); @ring: its end is a CQE. */
static void pending_add(struct syncmem_loop *loop, uint64_t id, syncmem_wait_cb cb, void *arg,
			bool raw, bool ring)
{
	struct idmap_entry e = { .id = id, .cb = cb, .arg = arg, .raw = raw, .ring = ring };

	syncmem__idmap_insert(&loop->pending, &e);
	if (!ring)
		loop->handle_waits++;
}

/* Take wait @id's entry into *@e: false if it is not pending. */
static bool pending_take(struct syncmem_loop *loop, uint64_t id, struct idmap_entry *e)
{
	if (!syncmem__idmap_remove(&loop->pending, id, e))
		return false;
	if (!e->ring)
		loop->handle_waits--;
	return true;
}

/* Does the module take io_uring commands on region fds? */
static bool module_has_uring(int handle)
{
	struct syncmem_version v;

	return !syncmem__ioctl(handle, SYNCMEM_IOC_VERSION, &v) &&
	       (v.features & SYNCMEM_FEAT_URING);
}

/* The ring path, unless SYNCMEM_LOOP=eventfd, io_uring or the module lacks it. */
static int loop_path_init(struct syncmem_loop *loop)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE,
				     .cq_entries = LOOP_CQ_ENTRIES };
	struct syncmem_eventfd reg = { 0 };
	const char *force = getenv("SYNCMEM_LOOP");

	if ((force && !strcmp(force, "eventfd")) || !module_has_uring(loop->handle))
		return 0;
	/* EPERM or ENOSYS under a seccomp filter, ENOMEM under RLIMIT_MEMLOCK, ... */
	if (io_uring_queue_init_params(LOOP_SQ_ENTRIES, &loop->ring, &p) < 0)
		return 0;
	/* Blocking on purpose: io_uring then waits for it to become readable. */
	loop->efd = eventfd(0, EFD_CLOEXEC);
	if (loop->efd < 0)
		goto fail;
	reg.fd = loop->efd;
	if (syncmem__ioctl(loop->handle, SYNCMEM_IOC_SET_EVENTFD, &reg))
		goto fail;
	loop->uring = true;
	return 0;

fail:
	if (loop->efd >= 0)
		close(loop->efd);
	loop->efd = -1;
	io_uring_queue_exit(&loop->ring);
	return -ENOMEM;
}

/* A loop on the handle @open_handle(@arg) gives: 0 and *@out, or -errno. */
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
	err = loop_path_init(loop);
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
	int err = loop_usable(loop);

	return err ? err : loop->uring ? SYNCMEM_LOOP_URING : SYNCMEM_LOOP_EVENTFD;
}

/* A free SQE of the ring, submitting what is queued if there is none. */
static struct io_uring_sqe *loop_sqe(struct syncmem_loop *loop)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&loop->ring);

	if (!sqe && io_uring_submit(&loop->ring) >= 0)
		sqe = io_uring_get_sqe(&loop->ring);
	return sqe;
}

/* Queue the eventfd read in the ring, if it is not in flight. */
static int arm_read(struct syncmem_loop *loop)
{
	struct io_uring_sqe *sqe;

	if (loop->read_armed)
		return 0;
	sqe = loop_sqe(loop);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, loop->efd, &loop->efd_value,
			   sizeof(loop->efd_value), 0);
	io_uring_sqe_set_data64(sqe, LOOP_EVENTFD_READ);
	loop->read_armed = true;
	return 0;
}

/*
 * Ring path: make completion records show in the ring while waits on the
 * handle are pending. Submits the read if it is new: a counter already
 * above 0 completes it before the submit returns.
 */
static int arm_read_now(struct syncmem_loop *loop)
{
	int err;

	if (!loop->handle_waits || loop->read_armed)
		return 0;
	err = arm_read(loop);
	if (!err)
		err = io_uring_submit(&loop->ring);
	return err < 0 ? err : 0;
}

/*
 * Move the ring's CQEs into the loop's own queue (the ring's is full, or
 * the CQE sought may be in the kernel's overflow list). A program polling
 * the ring's fd is told by a NOP's CQE.
 */
static int spill_cqes(struct syncmem_loop *loop)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;

	while (io_uring_peek_cqe(&loop->ring, &cqe) == 0) {
		uint64_t id = io_uring_cqe_get_data64(cqe);

		if (id == LOOP_EVENTFD_READ) {
			loop->read_armed = false;
			if (cqe->res == (int)sizeof(loop->efd_value))
				loop->rec_owed += loop->efd_value;
		} else if (id < LOOP_ID_LIMIT) {
			if (loop->spill_count == loop->spill_cap) {
				size_t cap = loop->spill_cap ? loop->spill_cap * 2 : 64;
				struct loop_cqe *n = reallocarray(loop->spill, cap, sizeof(*n));

				if (!n)
					return -ENOMEM;
				loop->spill = n;
				loop->spill_cap = cap;
			}
			loop->spill[loop->spill_count++] = (struct loop_cqe){ id, cqe->res };
		}
		io_uring_cqe_seen(&loop->ring, cqe);
	}
	if (loop->fd_given && loop->spill_count > loop->spill_head) {
		sqe = loop_sqe(loop);
		if (sqe) {
			io_uring_prep_nop(sqe);
			io_uring_sqe_set_data64(sqe, LOOP_NOP);
		}
		io_uring_submit(&loop->ring);
	}
	return 0;
}

/*
 * Drop the CQEs at the head of the ring that no callback waits for (waits
 * that ended before their queuing call returned, cancels' own CQEs), so
 * that the ring's fd is readable only when a callback waits to run.
 */
static void drop_stale_cqes(struct syncmem_loop *loop)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&loop->ring, &cqe) == 0) {
		uint64_t id = io_uring_cqe_get_data64(cqe);

		if (id == LOOP_EVENTFD_READ ||
		    (id < LOOP_ID_LIMIT && syncmem__idmap_contains(&loop->pending, id)))
			return;
		io_uring_cqe_seen(&loop->ring, cqe);
	}
}

/*
 * After a submit: the res of the CQE with @user_data, looked for in the
 * ring (where it stays) and in the loop's spilled CQEs (where it is
 * taken). False if it has none yet. The last of several is the newest.
 */
static bool find_cqe(struct syncmem_loop *loop, uint64_t user_data, int *res)
{
	struct io_uring_cqe *cqe;
	unsigned int head;
	bool found = false;
	size_t i;

	for (;;) {
		io_uring_for_each_cqe(&loop->ring, head, cqe) {
			if (io_uring_cqe_get_data64(cqe) == user_data) {
				*res = cqe->res;
				found = true;
			}
		}
		if (found || !io_uring_cq_has_overflow(&loop->ring) || spill_cqes(loop))
			break;
		io_uring_get_events(&loop->ring);
	}
	for (i = loop->spill_head; !found && i < loop->spill_count; i++) {
		if (loop->spill[i].id == user_data) {
			*res = loop->spill[i].res;
			loop->spill[i].id = 0;	/* taken: never pending */
			found = true;
		}
	}
	return found;
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

/* Run the callback of wait @id, ended with @result; false if it is not pending. */
static bool run_one(struct syncmem_loop *loop, uint64_t id, int result)
{
	struct idmap_entry e;

	if (!pending_take(loop, id, &e))
		return false;	/* not ours, or already run with -ECANCELED by a free */
	e.cb(e.arg, e.raw ? result : user_result(result));
	return true;
}

/*
 * Run the callbacks of the handle's completion records: first those read
 * already (by a call this one runs inside), then as many as the handle
 * gives (on the ring path: as many as the eventfd counted). Each record is
 * taken off before its callback runs. The number run, or -errno when the
 * read failed before any ran.
 */
static int dispatch(struct syncmem_loop *loop)
{
	bool more = true;	/* the last read filled the buffer */
	int ran = 0;

	for (;;) {
		size_t want = LOOP_BATCH;
		ssize_t n;

		while (loop->rec_head < loop->rec_count) {
			struct syncmem_completion rec = loop->recs[loop->rec_head++];

			if (!run_one(loop, rec.user_data, rec.result))
				continue;
			ran++;
			if (loop_stopped(loop))
				return ran;
		}
		if (loop->uring && !loop->closing) {
			if (!loop->rec_owed)
				return ran;
			if (loop->rec_owed < want)
				want = (size_t)loop->rec_owed;
		} else if (!more) {
			return ran;
		}
		n = read(loop->handle, loop->recs, want * sizeof(loop->recs[0]));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			loop->rec_owed = 0;
			return (errno == EAGAIN || ran) ? ran : -errno;
		}
		loop->rec_head = 0;
		loop->rec_count = (size_t)n / sizeof(loop->recs[0]);
		loop->rec_owed -= loop->rec_owed < loop->rec_count ? loop->rec_owed :
				  loop->rec_count;
		more = loop->rec_count == want;
	}
}

/*
 * Ring path: run the callbacks whose completions are in: spilled CQEs,
 * the ring's, and the records the eventfd counted. Each is taken off
 * before its callback runs. The number run, or -errno.
 */
static int reap_ring(struct syncmem_loop *loop)
{
	struct io_uring_cqe *cqe;
	int ran = 0, err;

	err = arm_read_now(loop);
	if (err)
		return err;
	while (loop->spill_head < loop->spill_count) {
		struct loop_cqe c = loop->spill[loop->spill_head++];

		if (loop->spill_head == loop->spill_count)
			loop->spill_head = loop->spill_count = 0;
		if (c.id && run_one(loop, c.id, c.res)) {
			ran++;
			if (loop_stopped(loop))
				return ran;
		}
	}
	while (io_uring_peek_cqe(&loop->ring, &cqe) == 0) {
		uint64_t id = io_uring_cqe_get_data64(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&loop->ring, cqe);
		if (id == LOOP_EVENTFD_READ) {
			loop->read_armed = false;
			if (res == (int)sizeof(loop->efd_value))
				loop->rec_owed += loop->efd_value;
		} else if (id < LOOP_ID_LIMIT && run_one(loop, id, res)) {
			ran++;
			if (loop_stopped(loop))
				return ran;
		}
	}
	if (loop->rec_owed || loop->rec_head < loop->rec_count) {
		err = dispatch(loop);
		if (err < 0)
			return ran ? ran : err;
		ran += err;
		if (loop_stopped(loop))
			return ran;
	}
	/* The next completion on the handle must show in the ring (and its fd). */
	err = arm_read_now(loop);
	return err && !ran ? err : ran;
}

/* Whatever completed: the callbacks run, or -errno. */
static int reap(struct syncmem_loop *loop)
{
	return loop->uring ? reap_ring(loop) : dispatch(loop);
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
	if (loop->uring) {
		struct __kernel_timespec ts, *tsp = NULL;
		struct io_uring_cqe *cqe = NULL;
		int err = loop->handle_waits ? arm_read(loop) : 0;

		if (err)
			return err;
		if (left_ns >= 0) {
			ts.tv_sec = left_ns / 1000000000;
			ts.tv_nsec = left_ns % 1000000000;
			tsp = &ts;
		}
		/* One system call: submit the read if it is new, and wait. */
		err = io_uring_submit_and_wait_timeout(&loop->ring, &cqe, 1, tsp, NULL);
		return err == -EINTR ? 0 : err < 0 ? err : 0;
	} else {
		struct pollfd p = { .fd = loop->handle, .events = POLLIN };
		int ms = left_ns < 0 ? -1 : (int)((left_ns + 999999) / 1000000);

		if (left_ns > (int64_t)INT32_MAX * 1000000)
			ms = INT32_MAX;
		if (poll(&p, 1, ms) < 0)
			return errno == EINTR ? 0 : -errno;
		return 0;
	}
}

static int run_once(struct syncmem_loop *loop, int64_t timeout_ns)
{
	uint64_t deadline = 0;
	int ran, due, err;

	due = run_due(loop);
	/* Only completions of our own: nothing to ask the kernel. */
	if (!loop->pending.count || loop_stopped(loop))
		return due;
	ran = reap(loop);
	if (ran >= 0)
		ran += due;
	if (ran || !timeout_ns || !loop->pending.count || loop_stopped(loop))
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
		if (loop->uring && loop->spill_count > loop->spill_head)
			spill_cqes(loop);	/* and a NOP makes the fd readable */
		/* Records of waits queued before now must show in the ring. */
		if (loop->uring)
			arm_read_now(loop);
	}
	return loop->uring ? loop->ring.ring_fd : loop->handle;
}

size_t syncmem_loop_pending(const struct syncmem_loop *loop)
{
	return loop ? loop->pending.count + loop->due_count - loop->due_head : 0;
}

/*
 * Ring path: queue the wait as a command of the loop's ring, under
 * @id. SYNCMEM_WAIT_QUEUED, or the result of a wait that ended before
 * the submit returned without being queued (no callback).
 */
static int ring_wait(struct syncmem_loop *loop, struct syncmem_region *r, const void *addr,
		     uint32_t width, uint64_t expected, uint64_t deadline_ns, uint64_t id)
{
	struct io_uring_sqe *sqe;
	int64_t timeout = -1;
	int ret, res;

	/* Room for its CQE: the kernel's overflow list would hide it. */
	if (io_uring_cq_ready(&loop->ring) + 2 > *loop->ring.cq.kring_entries) {
		ret = spill_cqes(loop);
		if (ret)
			return ret;
	}
	/* Cancels go through a region fd: any region's, kept open from the first wait. */
	if (loop->cancel_fd < 0) {
		loop->cancel_fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
		if (loop->cancel_fd < 0)
			return -errno;
	}
	sqe = loop_sqe(loop);
	if (!sqe)
		return -EBUSY;
	if (deadline_ns != SYNCMEM_NO_DEADLINE) {
		uint64_t now = now_ns();

		timeout = deadline_ns > now ? (int64_t)(deadline_ns - now) : 0;
	}
	if (width == 8)
		syncmem_prep_wait64(sqe, r, addr, expected, timeout);
	else
		syncmem_prep_wait32(sqe, r, addr, (uint32_t)expected, timeout);
	io_uring_sqe_set_data64(sqe, id);
	ret = io_uring_submit(&loop->ring);
	if (ret < 0)
		return ret;
	if (!find_cqe(loop, id, &res))
		return SYNCMEM_WAIT_QUEUED;
	switch (res) {
	case SYNCMEM_WAIT_WOKEN:
	case SYNCMEM_WAIT_HANDED_OFF:
	case -ECANCELED:
		return SYNCMEM_WAIT_QUEUED;	/* queued and ended already: it runs */
	default:
		/* NOT_EQUAL, TIMED_OUT or -errno: never queued, nobody waits for its CQE. */
		drop_stale_cqes(loop);
		return res;
	}
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
		ret = ring_wait(loop, r, addr, width, expected, deadline_ns, w.user_data);
	else
		ret = syncmem__ioctl(loop->handle, SYNCMEM_IOC_WAIT_ASYNC, &w);
	if (ret != SYNCMEM_WAIT_QUEUED)
		return ret;	/* NOT_EQUAL, TIMED_OUT, OWNER_DIED or -errno: no callback */
	pending_add(loop, w.user_data, cb, arg, raw, ring);
	if (!ring && loop->uring && loop->fd_given)
		arm_read_now(loop);	/* its record must make the ring's fd readable */
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
	int ret;

	ret = syncmem__idmap_reserve(&loop->pending);
	if (ret)
		return ret;
	post.user_data = ++loop->last_id;
	ret = syncmem__ioctl(loop->handle, SYNCMEM_IOC_POST, &post);
	if (ret)
		return ret;
	pending_add(loop, post.user_data, cb, arg, true, false);
	/* Its record must make the ring's fd readable. */
	return loop->uring ? arm_read_now(loop) : 0;
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

/* Ring path: cancel the ring wait @id: 0 (it ends with -ECANCELED), -ENOENT, or -errno. */
static int ring_cancel(struct syncmem_loop *loop, uint64_t id)
{
	struct io_uring_sqe *sqe;
	int ret, res;

	if (io_uring_cq_ready(&loop->ring) + 2 > *loop->ring.cq.kring_entries) {
		ret = spill_cqes(loop);
		if (ret)
			return ret;
	}
	sqe = loop_sqe(loop);
	if (!sqe)
		return -EBUSY;
	syncmem_prep_cancel(sqe, NULL, id);
	sqe->fd = loop->cancel_fd;
	io_uring_sqe_set_data64(sqe, id | LOOP_CANCEL_TAG);
	ret = io_uring_submit(&loop->ring);
	if (ret < 0)
		return ret;
	/* The module answers a cancel before the submit returns. */
	if (!find_cqe(loop, id | LOOP_CANCEL_TAG, &res))
		return -EIO;
	drop_stale_cqes(loop);
	return res;
}

int syncmem__loop_cancel(struct syncmem_loop *loop, uint64_t id)
{
	const struct idmap_entry *e = syncmem__idmap_get(&loop->pending, id);
	struct syncmem_cancel c = { .user_data = id };

	if (!e)
		return -ENOENT;
	if (e->ring)
		return ring_cancel(loop, id);
	/* On success the -ECANCELED record arrives like any other. */
	return syncmem__ioctl(loop->handle, SYNCMEM_IOC_CANCEL, &c);
}

int syncmem_wait_cancel(struct syncmem_loop *loop, uint64_t id)
{
	int err = loop_usable(loop);

	return err ? err : syncmem__loop_cancel(loop, id);
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
	if (loop->uring) {
		close(loop->efd);
		io_uring_queue_exit(&loop->ring);
	}
	if (loop->cancel_fd >= 0)
		close(loop->cancel_fd);
	syncmem__idmap_free(&loop->pending);
	syncmem__idmap_free(&loop->jobs);
	free(loop->spill);
	free(loop->due);
	free(loop);
}

/*
 * Free, ring path: cancel every ring wait still pending. Successful
 * cancels post no CQE of their own; the waits' CQEs are run as they come.
 */
static void cancel_ring_waits(struct syncmem_loop *loop)
{
	uint64_t *ids = malloc((loop->pending.count + 1) * sizeof(*ids));
	size_t n = 0, i;

	if (!ids)
		return;	/* they end as the ring is torn down; their callbacks get -ECANCELED */
	for (i = 0; i < loop->pending.cap; i++)
		if (loop->pending.slots[i].id && loop->pending.slots[i].ring)
			ids[n++] = loop->pending.slots[i].id;
	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe;

		/* Keep the completion queue from overflowing: run what came in. */
		if (io_uring_sq_space_left(&loop->ring) == 0)
			reap_ring(loop);
		if (!syncmem__idmap_contains(&loop->pending, ids[i]))
			continue;
		sqe = loop_sqe(loop);
		if (!sqe)
			break;
		syncmem_prep_cancel(sqe, NULL, ids[i]);
		sqe->fd = loop->cancel_fd;
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
		io_uring_sqe_set_data64(sqe, ids[i] | LOOP_CANCEL_TAG);
	}
	io_uring_submit(&loop->ring);
	free(ids);
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
	if (loop_usable(loop)) {
		syncmem__idmap_free(&loop->pending);
	} else {
		loop->freeing = true;
		/* Completed already: their real results, as the kernel's below. */
		while (run_due(loop))
			;
		syncmem__ioctl(loop->handle, SYNCMEM_IOC_CANCEL, &all);
		if (loop->uring)
			cancel_ring_waits(loop);
	}
	while (loop->pending.count && idle < 10) {
		struct pollfd p[2] = {
			{ .fd = loop->handle, .events = POLLIN },
			{ .fd = loop->uring ? loop->ring.ring_fd : -1, .events = POLLIN },
		};
		int ran = loop->uring ? reap_ring(loop) : 0;

		/* Records read by a run this free was called from go first. */
		if (dispatch(loop) > 0 || ran > 0)
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
