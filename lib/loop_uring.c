// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The event loop's ring path: a plain wait is an io_uring command in the
 * loop's own ring (syncmem_prep_wait32/64), its CQE is its completion
 * (user_data = the wait's id), a cancel is a ring command, a timeout is
 * the module's. What has no ring command (lock waits, posts), and waits
 * that may be handed something (see syncmem__wait_async_until()), go
 * through the handle: the kernel queues a completion record there and adds
 * 1 to an eventfd, and the ring keeps a read of that eventfd armed while
 * any such wait is pending; each read's count says how many records to
 * read() (no more, so that no read completes for records already taken).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "loop_uring.h"

/*
 * user_data in the ring: a wait's id (below LOOP_ID_LIMIT), the id with
 * LOOP_CANCEL_TAG for the command cancelling it, or one of the loop's own.
 */
#define LOOP_ID_LIMIT		(1ULL << 62)
#define LOOP_CANCEL_TAG		(1ULL << 62)
#define LOOP_EVENTFD_READ	(1ULL << 63)
#define LOOP_NOP		(LOOP_EVENTFD_READ | 1)

#define LOOP_SQ_ENTRIES 64
#define LOOP_CQ_ENTRIES 4096

/* Does the module take io_uring commands on region fds? */
static bool module_has_uring(int handle)
{
	struct syncmem_version v;

	return !syncmem__ioctl(handle, SYNCMEM_IOC_VERSION, &v) &&
	       (v.features & SYNCMEM_FEAT_URING);
}

int syncmem__ring_init(struct syncmem_loop *loop)
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
	syncmem__ring_exit(loop);
	loop->efd = -1;
	return -ENOMEM;
}

void syncmem__ring_exit(struct syncmem_loop *loop)
{
	if (loop->efd >= 0)
		close(loop->efd);
	if (loop->cancel_fd >= 0)
		close(loop->cancel_fd);
	io_uring_queue_exit(&loop->ring);
	free(loop->spill);
}

/* A loop on the handle @open_handle(@arg) gives: 0 and *@out, or -errno. */
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
 * Submits the read if it is new: a counter already above 0 completes it
 * before the submit returns.
 */
int syncmem__ring_arm(struct syncmem_loop *loop)
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
			struct loop_cqe *n = syncmem__loop_room(loop->spill, loop->spill_count,
								&loop->spill_cap, sizeof(*n), 64);

			if (!n)
				return -ENOMEM;
			loop->spill = n;
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

/* Room in the completion queue for a command's CQE (the kernel's overflow list would hide it). */
static int cq_room(struct syncmem_loop *loop)
{
	if (io_uring_cq_ready(&loop->ring) + 2 > *loop->ring.cq.kring_entries)
		return spill_cqes(loop);
	return 0;
}

void syncmem__ring_fd_given(struct syncmem_loop *loop)
{
	if (loop->spill_count > loop->spill_head)
		spill_cqes(loop);	/* and a NOP makes the fd readable */
	/* Records of waits queued before now must show in the ring. */
	syncmem__ring_arm(loop);
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

int syncmem__ring_reap(struct syncmem_loop *loop)
{
	struct io_uring_cqe *cqe;
	int ran = 0, err;

	err = syncmem__ring_arm(loop);
	if (err)
		return err;
	while (loop->spill_head < loop->spill_count) {
		struct loop_cqe c = loop->spill[loop->spill_head++];

		if (loop->spill_head == loop->spill_count)
			loop->spill_head = loop->spill_count = 0;
		if (c.id && syncmem__loop_run_one(loop, c.id, c.res)) {
			ran++;
			if (syncmem__loop_stopped(loop))
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
		} else if (id < LOOP_ID_LIMIT && syncmem__loop_run_one(loop, id, res)) {
			ran++;
			if (syncmem__loop_stopped(loop))
				return ran;
		}
	}
	if (loop->rec_owed || loop->rec_head < loop->rec_count) {
		err = syncmem__loop_dispatch(loop);
		if (err < 0)
			return ran ? ran : err;
		ran += err;
		if (syncmem__loop_stopped(loop))
			return ran;
	}
	/* The next completion on the handle must show in the ring (and its fd). */
	err = syncmem__ring_arm(loop);
	return err && !ran ? err : ran;
}

int syncmem__ring_wait_some(struct syncmem_loop *loop, int64_t left_ns)
{
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
}

int syncmem__ring_wait(struct syncmem_loop *loop, struct syncmem_region *r, const void *addr,
		       uint32_t width, uint64_t expected, int64_t timeout_ns, uint64_t id)
{
	struct io_uring_sqe *sqe;
	int ret, res;

	ret = cq_room(loop);
	if (ret)
		return ret;
	/* Cancels go through a region fd: any region's, kept open from the first wait. */
	if (loop->cancel_fd < 0) {
		loop->cancel_fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
		if (loop->cancel_fd < 0)
			return -errno;
	}
	sqe = loop_sqe(loop);
	if (!sqe)
		return -EBUSY;
	if (width == 8)
		syncmem_prep_wait64(sqe, r, addr, expected, timeout_ns);
	else
		syncmem_prep_wait32(sqe, r, addr, (uint32_t)expected, timeout_ns);
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

int syncmem__ring_cancel(struct syncmem_loop *loop, uint64_t id)
{
	struct io_uring_sqe *sqe;
	int ret, res;

	ret = cq_room(loop);
	if (ret)
		return ret;
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

void syncmem__ring_cancel_all(struct syncmem_loop *loop)
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
			syncmem__ring_reap(loop);
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
