/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the hostile-peer host tests: shared memory between PROT_NONE
 * guard pages (a stray access by the library faults), a scribbler process
 * writing random values into shared objects, and victims run in child
 * processes under an alarm (a call that never returns is a failure too).
 */
#ifndef SYNCMEM_HOSTILE_H
#define SYNCMEM_HOSTILE_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "internal.h"
#include "syncmem_test.h"

/* A shared mapping whose usable part lies between two guard pages. */
struct guarded {
	char *map;		/* the whole mapping */
	size_t map_len;
	char *mem;		/* @len usable bytes, ending where the guard page starts */
	size_t len;
};

/*
 * Map @len (a multiple of 64) usable bytes, shared with children, placed
 * so that the byte after the last one is the first of a guard page (an
 * overrun faults at once) and a guard page precedes their first page.
 * Zeroed. 0, or -1 when mapping failed.
 */
static inline int guarded_map(size_t len, struct guarded *g)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t body = (len + pg - 1) / pg * pg;

	g->map_len = body + 2 * pg;
	g->map = mmap(NULL, g->map_len, PROT_NONE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		return -1;
	if (mprotect(g->map + pg, body, PROT_READ | PROT_WRITE)) {
		munmap(g->map, g->map_len);
		return -1;
	}
	g->mem = g->map + pg + body - len;
	g->len = len;
	return 0;
}

static inline void guarded_unmap(struct guarded *g)
{
	munmap(g->map, g->map_len);
}

/* The owner id stand-in regions lock as (no kernel issues one). */
#define STAND_IN_OWNER	0x5eedull
/* And the process id its read shares are counted under. */
#define STAND_IN_PROCESS	0x5eefull

/*
 * A region handle over plain shared memory, for calls that take one. Its
 * fd is /dev/null: no kernel behind it, so a call that has to wait or wake
 * gets -ENOTTY from the ioctl, and everything else runs as on a region.
 * 0, or -1.
 */
static inline int stand_in_region(struct syncmem_region *r, void *mem, size_t len, bool rdonly)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	syncmem__region_fill(r, fd, mem, len, rdonly);
	/* No kernel to issue owner ids: this thread (and its forks) takes one. */
	syncmem__cached_owner = STAND_IN_OWNER;
	syncmem__process_owner_stand_in(STAND_IN_PROCESS);
	return 0;
}

/*
 * A stand-in kernel that says "the word changed" to every wait: from the
 * call on, each ioctl of the calling thread goes to a supervisor thread
 * (seccomp user notification), which answers SYNCMEM_IOC_WAIT and
 * SYNCMEM_IOC_LOCK_WAIT with SYNCMEM_WAIT_NOT_EQUAL and everything else with
 * -ENOTTY. That is what a
 * peer changing a word between every read and every wait achieves, without
 * depending on timing. For a victim child only (there is no way back). 0,
 * or -1 when seccomp is not available.
 */
static inline void *changed_kernel(void *arg)
{
	int *listener = arg, fd;

	while ((fd = __atomic_load_n(listener, __ATOMIC_ACQUIRE)) < 0)
		usleep(100);
	for (;;) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;

		memset(&req, 0, sizeof(req));
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req))
			continue;	/* interrupted, or the waiter died: next */
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		if ((uint32_t)req.data.args[1] == (uint32_t)SYNCMEM_IOC_WAIT ||
		    (uint32_t)req.data.args[1] == (uint32_t)SYNCMEM_IOC_LOCK_WAIT)
			resp.val = SYNCMEM_WAIT_NOT_EQUAL;
		else
			resp.error = -ENOTTY;
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

static inline int every_wait_finds_the_word_changed(void)
{
	static int listener = -1;
	pthread_t t;
	int fd;

	/* The supervisor first: the filter is only this thread's. */
	if (pthread_create(&t, NULL, changed_kernel, &listener))
		return -1;
	fd = seccomp_on_ioctl(SECCOMP_RET_USER_NOTIF, SECCOMP_FILTER_FLAG_NEW_LISTENER);
	if (fd < 0)
		return -1;
	/* Release: the supervisor sees the listener ready. */
	__atomic_store_n(&listener, fd, __ATOMIC_RELEASE);
	return 0;
}

/* xorshift32: cheap, repeatable randomness (never 0 from a non-zero seed). */
static inline uint32_t hostile_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * A value a peer might write into a word: often a plausible one (small
 * numbers, near-limits, all ones, single bits), which reaches the paths
 * where a value is in range but wrong, else anything at all.
 */
static inline uint32_t hostile_value(uint32_t *s, uint32_t plausible_max)
{
	uint32_t r = hostile_rand(s);

	switch (r & 7) {
	case 0:
		return 0;
	case 1:
	case 2:
		return hostile_rand(s) % (plausible_max + 3);
	case 3:
		return UINT32_MAX - (hostile_rand(s) & 3);
	case 4:
		return 1u << (hostile_rand(s) & 31);
	default:
		return hostile_rand(s);
	}
}

/*
 * A child that writes hostile values into 4-byte words at random aligned
 * offsets of [@mem, @mem + @len) until it is killed. Its pid, or -1.
 */
static inline pid_t scribbler_start(void *mem, size_t len, uint32_t plausible_max,
				    uint32_t seed)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	for (uint32_t s = seed | 1;;) {
		uint32_t *w = (uint32_t *)mem + hostile_rand(&s) % (len / 4);

		/* Relaxed: a peer's racing store, not a synchronisation. */
		__atomic_store_n(w, hostile_value(&s, plausible_max), __ATOMIC_RELAXED);
	}
}

static inline void scribbler_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The exit status of @pid, or 128 + the signal that ended it. */
static inline int hostile_wait(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Run @fn(@arg) in a child process that SIGALRM kills after @seconds (a
 * call that never returns). Its exit status (@fn's result), or 128 + the
 * signal that ended it: 128 + SIGSEGV for an access outside the memory,
 * 128 + SIGALRM for a hang.
 */
static inline int run_victim(int (*fn)(void *arg), void *arg, unsigned int seconds)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		alarm(seconds);
		_exit(fn(arg));
	}
	return hostile_wait(pid);
}

static inline double hostile_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* SYNCMEM_HOSTILE_H */
