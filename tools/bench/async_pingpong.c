// SPDX-License-Identifier: GPL-2.0
/*
 * async-pingpong: two processes bounce a value; the parent waits with async
 * waits through the event loop (io_uring), the child with blocking waits.
 * Compared in the same run with the sync futex ping-pong, with an
 * eventfd + epoll ping-pong, and with the loop's eventfd path (waits
 * queued by ioctl, completions read from the handle). Prints round trips
 * per second.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "pingpong.h"
#include "syncmem.h"

#define ROUNDS 5

static struct syncmem_region *region;
static struct syncmem_loop *loop, *ring_loop, *evfd_loop;

static void sm_wait(_Atomic uint32_t *w, uint32_t cur)
{
	syncmem_wait32(region, (uint32_t *)w, cur, SYNCMEM_FOREVER);
}

static void sm_wake(_Atomic uint32_t *w)
{
	syncmem_notify(region, (uint32_t *)w, 1);
}

static void set_flag(void *arg, int result)
{
	(void)result;
	*(int *)arg = 1;
}

/* Wait the way an event-loop program does: queue, then run the loop. */
static void async_wait(_Atomic uint32_t *w, uint32_t cur)
{
	int done = 0;

	if (syncmem_wait_async32(loop, region, (uint32_t *)w, cur, SYNCMEM_FOREVER,
				 set_flag, &done, NULL) != SYNCMEM_PENDING)
		return;
	while (!done)
		syncmem_loop_run_once(loop, SYNCMEM_FOREVER);
}

/* Run @ops's ping-pong @n times with the parent's waits on @l. */
static double loop_pingpong(struct syncmem_loop *l, const struct pp_ops *ops,
			    const struct pp_ops *child, uint32_t n)
{
	loop = l;
	return pingpong(ops, child, syncmem_base(region), n);
}

/* Two eventfds, one per direction, each side in its own epoll loop. */
static double eventfd_pingpong(uint32_t n)
{
	int to_child = eventfd(0, EFD_CLOEXEC), to_parent = eventfd(0, EFD_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	uint64_t one = 1, v;
	double t0, t1;
	pid_t pid;
	int ep;

	pid = fork();
	if (pid == 0) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		epoll_ctl(ep, EPOLL_CTL_ADD, to_child, &ev);
		for (uint32_t i = 1; i <= n; i++) {
			epoll_wait(ep, &out, 1, -1);
			if (read(to_child, &v, sizeof(v)) != sizeof(v) ||
			    write(to_parent, &one, sizeof(one)) != sizeof(one))
				_exit(1);
		}
		_exit(0);
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	epoll_ctl(ep, EPOLL_CTL_ADD, to_parent, &ev);
	t0 = bench_now();
	for (uint32_t i = 1; i <= n; i++) {
		if (write(to_child, &one, sizeof(one)) != sizeof(one))
			break;
		epoll_wait(ep, &out, 1, -1);
		if (read(to_parent, &v, sizeof(v)) != sizeof(v))
			break;
	}
	t1 = bench_now();
	waitpid(pid, NULL, 0);
	close(ep);
	close(to_child);
	close(to_parent);
	return n / (t1 - t0);
}

int main(int argc, char **argv)
{
	static const struct pp_ops sm = { .wait = sm_wait, .wake = sm_wake },
		as = { .wait = async_wait, .wake = sm_wake };
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 10000;
	double a[ROUNDS], f[ROUNDS], e[ROUNDS], p[ROUNDS];
	struct pp_words *fw;
	int err;

	err = syncmem_open(NULL, 4096, 0, 0, &region);
	if (!err)
		err = syncmem_loop_new(&ring_loop);
	if (!err && !setenv("SYNCMEM_LOOP", "eventfd", 1))
		err = syncmem_loop_new(&evfd_loop);
	unsetenv("SYNCMEM_LOOP");
	if (err) {
		fprintf(stderr, "async-pingpong: %s\n", syncmem_strerror(err));
		return 1;
	}
	if (syncmem_loop_path(ring_loop) != SYNCMEM_LOOP_URING)
		fprintf(stderr, "async-pingpong: no io_uring: both loops take the eventfd path\n");
	fw = memfd_shared(4096);
	if (!fw)
		return 1;
	loop_pingpong(ring_loop, &as, &sm, n / 10);
	loop_pingpong(evfd_loop, &as, &sm, n / 10);
	pingpong(&pp_futex, &pp_futex, fw, n / 10);
	eventfd_pingpong(n / 10);
	for (int i = 0; i < ROUNDS; i++) {
		a[i] = loop_pingpong(ring_loop, &as, &sm, n);
		p[i] = loop_pingpong(evfd_loop, &as, &sm, n);
		f[i] = pingpong(&pp_futex, &pp_futex, fw, n);
		e[i] = eventfd_pingpong(n);
	}
	double am = bench_median(a, ROUNDS);

	bench_report("async-pingpong vs sync futex", "per s", am, "futex",
		     bench_median(f, ROUNDS), 1);
	bench_report("async-pingpong vs eventfd+epoll", "per s", am, "evfd",
		     bench_median(e, ROUNDS), 1);
	bench_report("async-pingpong ring vs evfd path", "per s", am, "evpath",
		     bench_median(p, ROUNDS), 1);
	syncmem_loop_free(ring_loop);
	syncmem_loop_free(evfd_loop);
	syncmem_close(region);
	return 0;
}
