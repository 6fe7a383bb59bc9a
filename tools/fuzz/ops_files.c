// SPDX-License-Identifier: GPL-2.0
/*
 * Files come and go: handles (blocking or not), eventfds, files that are
 * not syncmem's (pipes, /dev/null, sockets), dups of any of them, closes
 * of whatever another thread may be using, and reads of their fdinfo.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"

void open_handle(struct thread_ctx *t)
{
	int flags = O_RDWR | O_CLOEXEC | (rng_chance(&t->rng, 3, 4) ? O_NONBLOCK : 0);
	int fd = open("/dev/syncmem", flags);

	if (fd < 0) {
		if (errno != EMFILE && errno != ENFILE)
			finding("open(/dev/syncmem) failed: %s", strerrorname_np(errno));
		return;
	}
	obj_add(&t->rng, fd, K_HANDLE, 0, 0, false);
}

static void open_eventfd(struct thread_ctx *t)
{
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	obj_add(&t->rng, fd, K_EVENTFD, 0, 0, false);
}

static void open_other(struct thread_ctx *t)
{
	int fds[2];

	switch (rng_below(&t->rng, 3)) {
	case 0:
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
			obj_add(&t->rng, fds[0], K_OTHER, 0, 0, false);
			obj_add(&t->rng, fds[1], K_OTHER, 0, 0, false);
		}
		break;
	case 1:
		obj_add(&t->rng, open("/dev/null", O_RDWR | O_CLOEXEC), K_OTHER, 0, 0, false);
		break;
	default:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0) {
			obj_add(&t->rng, fds[0], K_OTHER, 0, 0, false);
			obj_add(&t->rng, fds[1], K_OTHER, 0, 0, false);
		}
		break;
	}
}

static void dup_object(struct thread_ctx *t)
{
	struct obj o;
	int slot, fd;

	if (!obj_pick(&t->rng, K_FREE, &o, &slot))
		return;
	fd = fcntl(o.fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* The original may have been closed (and its number reused) meanwhile. */
	if (!obj_unchanged(slot, &o)) {
		close(fd);
		return;
	}
	obj_add(&t->rng, fd, o.kind, o.rid, o.size, o.rdonly);
}

void op_files(struct thread_ctx *t)
{
	switch (rng_below(&t->rng, 14)) {
	case 0: case 1:
		open_handle(t);
		break;
	case 2: case 3: case 4:
		open_region(t, NULL, 0);
		break;
	case 5:
		open_eventfd(t);
		break;
	case 6:
		open_other(t);
		break;
	case 7: case 8:
		dup_object(t);
		break;
	case 9: case 10:
		op_fdinfo(t);
		break;
	default:
		obj_close_random(&t->rng);
		break;
	}
}
